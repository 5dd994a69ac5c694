/*
 * `soak run` and `soak coordinator`: one code path.  `run` is the cluster
 * on one machine — the coordinator in this process, N `soak worker`
 * processes dialling it over ipc:// in a private directory, and an
 * embedded PostgreSQL when none is configured.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "cmd/cmd.h"
#include "common/auth.h"
#include "common/bundle.h"
#include "common/config.h"
#include "common/conninfo.h"
#include "common/exec.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/regress.h"
#include "common/self.h"
#include "common/soak.h"
#include "common/tlsconf.h"
#include "common/units.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"
#include "common/verdict.h"
#include "coordinator/coord.h"
#include "coordinator/fingerprint.h"
#include "coordinator/journal.h"
#include "coordinator/report.h"
#include "coordinator/report_html.h"
#include "coordinator/server.h"
#include "coordinator/tickets.h"
#include "isolation/iso.h"

#define COORD_SLOTS	2048	/* requests `soak coordinator` can hold at once */
/*
 * Replacing dead local workers (supervise): a token bucket, as systemd's
 * StartLimitBurst/StartLimitIntervalSec and runit's pause between restarts.
 * RESPAWN_BURST(workers) replacements at once, then one per
 * RESPAWN_REFILL_MS: a run whose workers keep being killed (the OOM
 * killer, a chaos monkey) goes on at that pace instead of ending after a
 * fixed number of deaths.  A worker that dies before a result of it was
 * accepted is a failed start: RESPAWN_FAILED_STARTS of them in a row (no
 * worker with a result dying in between) is a worker that cannot work
 * here -- a broken binary, a machine that kills it at once -- and ends the
 * run (exit 2), saying so.
 */
#define RESPAWN_BURST(n)	((n) * 2 > 4 ? (n) * 2 : 4)
#define RESPAWN_REFILL_MS	1000
#define RESPAWN_FAILED_STARTS(n)	((n) + 3)
#define CI_SEEDS_LISTED	3	/* failing seeds named in a CI log per fingerprint */

static volatile int	stop_requested;

static void
on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct runopts {
	bool		 local;
	const char	*config;
	const char	*seeds;
	const char	*listen;
	const char	*out;
	const char	*resume;	/* the --out of a killed run */
	int		 workers;
	int		 verbose;
	int		 heartbeat_ms;
	int		 lease_ttl_ms;
	int		 linger_ms;	/* coordinator: answer late workers this long */
	bool		 bundle;	/* coordinator: ship the config folder */
	bool		 dry_run;	/* --dry-run: check, say, run nothing */
	struct auth_opts auth;		/* coordinator: who may connect */
};

struct local_worker {
	pid_t	pid;		/* 0: dead, waiting for a token to be replaced */
};

struct runctx {
	struct runopts		*o;
	struct coord		*coord;
	struct report_meta	*meta;
	char			*url;
	struct local_worker	*kids;
	int			 nkids;
	int			 tokens;		/* replacements allowed now */
	int64_t			 refill_at;		/* when the next token comes */
	int			 failed_starts;		/* in a row */
	int			 died, replaced;	/* totals, for the summary */
	int			 waiting;		/* dead, to be replaced */
	bool			 gave_up;		/* crash loop: no more replacing */
	char			*io_why;		/* the output cannot be written */
	bool			 tty;
	int64_t			 start_ms, last_line_ms;
	uint64_t		 last_done;
	struct journal		*journal;
	struct fp_groups	 ci_seen;	/* not a tty: failing seeds so far */
	/* What run_main's phases share, and run_free lets go of. */
	struct cfg		 cfg;
	struct coord_opts	 co;
	struct server		*srv;
	struct iso_db		 db;		/* soak run's database */
	struct bundle		 bundle;	/* coordinator: the config folder */
	char			*run_id, *out;
	char			*ipcdir, *keep, *work;	/* soak run's private folders */
	char			 cfgpath[PATH_MAX];
	int64_t			 t0, started;	/* monotonic, wall */
	struct regress_set	 regress;	/* the config's, run first */
};

static pid_t
spawn_worker(struct runctx *r)
{
	char	*argv[8];
	int	 i = 0;
	pid_t	 pid;

	argv[i++] = "soak";
	argv[i++] = "worker";
	argv[i++] = "--connect";
	argv[i++] = r->url;
	/* Its connected and done lines would only interleave with ours. */
	argv[i++] = r->o->verbose ? "-v" : "--quiet";
	argv[i] = NULL;
	if ((pid = fork()) == 0) {
		/* The worker dies with us, whatever kills us, at once: SIGTERM
		 * would drain it, and a local worker has no coordinator to go
		 * back to (`soak run --resume` runs its seed again). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);	/* Ctrl-C is ours to handle */
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid == -1)
		log_warn("cannot start a worker");
	else
		coord_worker_starting(r->coord, (uint32_t)pid, now_ms());
	return pid;
}

static void
progress(struct runctx *r, bool final)
{
	struct coord_counts	n;
	int64_t			now = now_ms();
	double			el = (double)(now - r->start_ms) / 1000.0, rate;

	coord_counts(r->coord, &n);
	rate = el > 0 ? (double)n.done / el : 0;
	if (r->tty) {
		char	eta[32] = "—";

		if (rate > 0 && n.done < n.total)
			snprintf(eta, sizeof(eta), "%.0fs", (double)(n.total - n.done) / rate);
		fprintf(stderr, "\r\033[K%s: %" PRIu64 "/%" PRIu64 " seeds  %" PRIu64
		    " fail  %" PRIu64 " infra  %.1f seeds/s  ETA %s%s",
		    r->meta->cfg->name, n.done, n.total, n.fail, n.infra, rate, eta,
		    final ? "\n" : "");
		return;
	}
	/* Not a terminal: a plain line every 5 s and at the end, for CI logs. */
	if (!final && (now - r->last_line_ms < 5000 || n.done == r->last_done))
		return;
	r->last_line_ms = now;
	r->last_done = n.done;
	fprintf(stderr, "%s: %" PRIu64 "/%" PRIu64 " seeds, %" PRIu64 " fail, %" PRIu64
	    " infra, %.1f seeds/s\n", r->meta->cfg->name, n.done, n.total, n.fail,
	    n.infra, rate);
}

static void
refill(struct runctx *r, int64_t now)
{
	int	burst = RESPAWN_BURST(r->nkids);

	while (r->tokens < burst && now >= r->refill_at) {
		r->tokens++;
		r->refill_at += RESPAWN_REFILL_MS;
	}
	if (r->tokens >= burst)
		r->refill_at = now + RESPAWN_REFILL_MS;
}

static void
death_words(int st, char *buf, size_t len)
{
	snprintf(buf, len, "%s %d", WIFSIGNALED(st) ? "signal" : "exit status",
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/*
 * Reaps local workers; one that died while work remains is replaced when
 * the bucket has a token (RESPAWN_BURST), else when the next one comes.
 */
static void
supervise(struct runctx *r)
{
	int64_t	now = now_ms();
	int	i, st;
	bool	reported;
	char	how[64], why[96];

	refill(r, now);
	for (i = 0; i < r->nkids; i++) {
		if (r->kids[i].pid <= 0 || waitpid(r->kids[i].pid, &st, WNOHANG) != r->kids[i].pid)
			continue;
		reported = coord_pid_reported(r->coord, (uint32_t)r->kids[i].pid);
		death_words(st, how, sizeof(how));
		snprintf(why, sizeof(why), "its process died (%s)", how);
		/* A local worker never comes back: its lease need not wait for its ttl. */
		coord_worker_died(r->coord, (uint32_t)r->kids[i].pid, why);
		/* backends it stopped at a lock wait (its wake-ups) must see
		 * their connections close */
		pg_embedded_continue(r->db.pg);
		r->kids[i].pid = 0;
		r->died++;
		if (coord_finished(r->coord) || coord_halted(r->coord) || stop_requested)
			continue;
		r->failed_starts = reported ? 0 : r->failed_starts + 1;
		if (r->failed_starts >= RESPAWN_FAILED_STARTS(r->nkids) && !r->gave_up) {
			r->gave_up = true;
			log_warnx("%d worker processes in a row died before reporting "
			    "anything (the last: %s): not starting more; `soak worker` "
			    "cannot work here (run it by hand with -v to see why)",
			    r->failed_starts, how);
		} else if (!r->gave_up)
			log_warnx("worker process died (%s)%s", how, r->tokens > 0 ?
			    "; starting another" : "; another starts when the "
			    "restart limit allows (one a second)");
		r->waiting++;
	}
	for (i = 0; i < r->nkids && !r->gave_up && !stop_requested &&
	    !coord_finished(r->coord) && !coord_halted(r->coord); i++) {
		pid_t	pid;

		if (r->kids[i].pid != 0 || r->tokens == 0)
			continue;
		r->tokens--;
		/* A failed fork said why; the next token tries again. */
		if ((pid = spawn_worker(r)) > 0) {
			r->kids[i].pid = pid;
			r->waiting--;
			r->replaced++;
		}
	}
}

/*
 * The output directory (the journal, failures/) cannot be written: a full
 * disk, an I/O error.  Nothing more is leased; what was recorded stays
 * (the journal ends with its last whole line), report.json says why when
 * it can be written, and --resume runs the rest once that is mended.
 */
static void
io_stop(struct runctx *r, const char *why)
{
	char	*msg;

	if (r->io_why != NULL || coord_finished(r->coord))
		return;
	r->io_why = xstrdup(why);
	msg = xasprintf("the output directory cannot be written (%s): seeds not "
	    "run are missing; free space, then `soak %s --resume %s` runs them",
	    why, r->o->local ? "run CONFIG" : "coordinator CONFIG --listen URL",
	    r->meta->out_dir);
	coord_halt(r->coord, SOAK_EXIT_INCOMPLETE, msg);
	fprintf(stderr, "%ssoak: %s: no more seeds are leased; every verdict "
	    "recorded so far stays in %s/%s\n", r->tty ? "\r\033[K" : "", why,
	    r->meta->out_dir, JOURNAL_NAME);
	free(msg);
}

/*
 * Workers that were told "done" drop their schemas and exit on their own;
 * give them grace_ms (waiting on pidfds, not the clock), then SIGTERM the
 * rest and reap everyone.
 */
static void
reap_workers(struct runctx *r, int grace_ms)
{
	int64_t	deadline = now_ms() + grace_ms;
	int	i, fd;

	for (i = 0; i < r->nkids; i++) {
		struct pollfd	pfd;
		int64_t		left;

		if (r->kids[i].pid <= 0)
			continue;
		left = deadline - now_ms();
		if (left > 0 && (fd = (int)syscall(SYS_pidfd_open, r->kids[i].pid, 0)) != -1) {
			pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
			poll(&pfd, 1, (int)left);
			close(fd);
		}
		if (waitpid(r->kids[i].pid, NULL, WNOHANG) == 0) {
			if (grace_ms > 0)
				log_warnx("worker process %d did not exit; stopping it",
				    (int)r->kids[i].pid);
			/* Not SIGTERM: that drains, finishing the seed running. */
			kill(r->kids[i].pid, SIGKILL);
			waitpid(r->kids[i].pid, NULL, 0);
		}
		r->kids[i].pid = 0;
	}
}

static int
tick(void *arg)
{
	struct runctx	*r = arg;
	int		 i, alive = 0;

	journal_tick(r->journal);
	if (journal_failed(r->journal) != NULL)
		io_stop(r, journal_failed(r->journal));
	if (r->o->local) {
		supervise(r);
		for (i = 0; i < r->nkids; i++)
			alive += r->kids[i].pid > 0;
		/* Dead workers waiting for a token are still to come. */
		if (alive == 0 && r->gave_up && !coord_finished(r->coord)) {
			coord_halt(r->coord, SOAK_EXIT_INCOMPLETE, "worker processes kept "
			    "dying before reporting anything (see the log above)");
			return 1;
		}
		if (alive == 0 && !coord_finished(r->coord) &&
		    (coord_halted(r->coord) || r->waiting == 0)) {
			log_warnx("every worker process is gone; ending the run incomplete");
			return 1;
		}
	}
	progress(r, false);
	return 0;
}

static void
on_event(struct coord *c, enum jev type, json_t *e, void *arg)
{
	struct runctx	*r = arg;

	(void)c;
	journal_append(r->journal, type, e);
	/* At once: the coordinator stops before its next request. */
	if (journal_failed(r->journal) != NULL)
		io_stop(r, journal_failed(r->journal));
}

static int
replay_event(enum jev type, json_t *e, void *arg, char *err)
{
	return coord_replay(arg, type, e, err);
}

/* The regressions a run began with, for --resume: [[name, hash], ...]. */
static json_t *
regress_json(const struct regress_set *rs)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; i < rs->n; i++)
		json_array_append_new(a, json_pack("[s, s]", rs->v[i].name,
		    rs->v[i].hash));
	return a;
}

/*
 * --resume DIR: the run whose journal is there, if it is this config's.
 * Sets the run id, the seeds and the start time from the journal's head.
 */
static int
resume_check(const struct runopts *o, const struct cfg *cfg, struct coord_opts *co,
    const struct regress_set *rs, char **run_id, int64_t *started)
{
	json_t		*regs, *now;
	json_t		*head;
	char		 err[ERR_LEN], hash[CFG_HASH_LEN];
	const char	*id, *was;
	json_t		*seeds;
	int		 rc = -1;

	if ((head = journal_head(o->resume, err)) == NULL) {
		fprintf(stderr, "soak: --resume: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	now = regress_json(rs);
	cfg_hash_hex(cfg, hash);
	id = json_string_value(json_object_get(head, "run_id"));
	was = json_string_value(json_object_get(head, "config_hash"));
	seeds = json_object_get(head, "seeds");
	if (id == NULL || was == NULL || !json_is_integer(json_array_get(seeds, 0)) ||
	    !json_is_integer(json_array_get(seeds, 1)))
		fprintf(stderr, "soak: --resume: %s/%s: its head lacks the run id, the "
		    "config hash or the seeds\n", o->resume, JOURNAL_NAME);
	else if (strcmp(was, hash) != 0) {
		fprintf(stderr, "soak: --resume: %s is not the config run %s in %s: its "
		    "hash is %.12s, the run's was %.12s (resume with the same config, "
		    "or start a new run)\n", o->config, id, o->resume, hash, was);
		rc = SOAK_EXIT_CONFIG;
	} else if ((regs = json_object_get(head, "regressions")) != NULL &&
	    !json_equal(regs, now)) {
		fprintf(stderr, "soak: --resume: the regressions folder %s is not the "
		    "one run %s began with (a plan added, removed or changed since): "
		    "put it back as it was to resume, or start a new run\n",
		    cfg->regressions, id);
		rc = SOAK_EXIT_CONFIG;
	} else if (o->seeds && (co->seeds.first != (uint64_t)json_integer_value(
	    json_array_get(seeds, 0)) || co->seeds.last != (uint64_t)json_integer_value(
	    json_array_get(seeds, 1))))
		fprintf(stderr, "soak: --resume: run %s has seeds %lld..%lld, not --seeds "
		    "%s\n", id, (long long)json_integer_value(json_array_get(seeds, 0)),
		    (long long)json_integer_value(json_array_get(seeds, 1)), o->seeds);
	else {
		co->seeds.first = (uint64_t)json_integer_value(json_array_get(seeds, 0));
		co->seeds.last = (uint64_t)json_integer_value(json_array_get(seeds, 1));
		*run_id = xstrdup(id);
		*started = json_integer_value(json_object_get(head, "started_at_ms"));
		rc = 0;
	}
	json_decref(head);
	json_decref(now);
	return rc == -1 ? SOAK_EXIT_USAGE : rc;
}

/* The journal: a new one, or the resumed run's replayed into r->coord. */
static int
journal_start(struct runctx *r, const struct cfg *cfg, const char *run_id,
    const char *out, const struct report_meta *meta, char *err)
{
	char	hash[CFG_HASH_LEN];
	json_t	*head;

	if (r->o->resume) {
		if ((r->journal = journal_resume(out, &head, replay_event, r->coord,
		    err)) == NULL)
			return -1;
		json_decref(head);
		coord_on_event(r->coord, on_event, r);
		/* Local workers died with the coordinator; remote ones rejoin. */
		coord_resumed(r->coord, now_ms(), r->o->local);
		return 0;
	}
	cfg_hash_hex(cfg, hash);
	head = json_pack("{s:i, s:s, s:s, s:[I, I], s:I, s:o}", "format", 1,
	    "run_id", run_id, "config_hash", hash,
	    "seeds", (json_int_t)meta->seeds.first, (json_int_t)meta->seeds.last,
	    "started_at_ms", (json_int_t)meta->started_wall_ms,
	    "regressions", regress_json(&r->regress));
	if ((r->journal = journal_create(out, head, err)) == NULL)
		return -1;
	coord_on_event(r->coord, on_event, r);
	return 0;
}

/*
 * Not on a terminal (CI), a failing seed is a log line as its verdict
 * comes in, but only the first CI_SEEDS_LISTED of each fingerprint and a
 * line saying the rest are left to the summary: a bug that fails 200
 * seeds is 4 lines, not 200.  The confirming re-run's outcome, once per
 * fingerprint, is a line of its own.
 */
static void
on_final(struct coord *c, const struct coord_seed *s, void *arg)
{
	struct runctx		*r = arg;
	struct fp_group		*g;
	json_t			*invs = json_object_get(s->detail, "invariants");
	json_t			*msgj = json_object_get(s->detail, "message");
	char			*fp, *words, *line, msg[LOG_ESC_LEN], err[ERR_LEN];
	char			 rep[1024];

	(void)c;
	if (report_failure(r->meta, s, err) == -1)
		io_stop(r, err);
	if (r->tty || s->verdict == VERDICT_PASS)
		return;
	words = fp_words(reason_name(s->why), invs);
	if (s->regress != NULL) {	/* said apart, each by its name */
		line = xstrdup(json_is_string(msgj) ? json_string_value(msgj) : "");
		line[strcspn(line, "\r\n")] = '\0';
		log_escape(msg, sizeof(msg), line);
		fprintf(stderr, "regression %s: %s %s%s%s\n", s->regress->name,
		    msg_verdict_name(s->verdict), words, *msg ? " — " : "", msg);
		free(line);
		free(words);
		return;
	}
	if (s->final_why == FINAL_MINIMIZE) {
		json_t	*mz = json_object_get(s->detail, "minimized");
		char	*m = xstrdup(json_is_string(json_object_get(mz, "message")) ?
			    json_string_value(json_object_get(mz, "message")) : "");

		m[strcspn(m, "\r\n")] = '\0';
		fprintf(stderr, "seed %" PRIu64 ": %s: minimized: %s\n", s->seed, words,
		    log_escape(msg, sizeof(msg), m));
		free(m);
		free(words);
		return;
	}
	if (s->final_why == FINAL_CONFIRM) {
		fprintf(stderr, "seed %" PRIu64 ": %s: confirming re-run %s\n", s->seed,
		    words, report_reproduced(r->meta->cfg, s, rep, sizeof(rep)));
		free(words);
		return;
	}
	fp = fp_string(r->meta->cfg->name, reason_name(s->why), invs);
	g = fp_groups_add(&r->ci_seen, fp, s->seed, 0);
	if (g->count <= CI_SEEDS_LISTED) {
		line = xstrdup(json_is_string(msgj) ? json_string_value(msgj) : "");
		line[strcspn(line, "\r\n")] = '\0';
		log_escape(msg, sizeof(msg), line);
		fprintf(stderr, "seed %" PRIu64 ": %s %s%s%s\n", s->seed,
		    msg_verdict_name(s->verdict), words, *msg ? " — " : "", msg);
		free(line);
	} else if (g->count == CI_SEEDS_LISTED + 1)
		fprintf(stderr, "seed %" PRIu64 ": %s %s, and further seeds of it: "
		    "counted in the summary, not listed\n", s->seed,
		    msg_verdict_name(s->verdict), words);
	free(fp);
	free(words);
}

static char *
make_run_id(void)
{
	time_t		t = time(NULL);
	struct tm	tm;
	char		buf[32];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y%m%dT%H%M%S", &tm);
	/* The pid keeps two runs started in the same second apart. */
	return xasprintf("%s-%04x", buf, (unsigned)getpid() & 0xffff);
}

/* What a teardown that did not finish may have left (ISO_TEARDOWN_MS). */
static void
left_schemas(const char *conninfo, const char *prefix, char *why)
{
	char	desc[256];

	if (why)
		conninfo_scrub(why, ERR_LEN, conninfo);
	iso_conn_desc(conninfo, desc, sizeof(desc));
	log_warnx("the schemas %s* of this run's workers may be left in the database "
	    "at %s (%s); list them with SELECT nspname FROM pg_namespace WHERE nspname "
	    "LIKE '%s%%'", prefix, desc, why ? why : "it did not answer within "
	    "the teardown's time", prefix);
}

static void
usage(FILE *f, bool local)
{
	if (local)
		fprintf(f,
		    "usage: soak run CONFIG [--seeds A..B] [--workers N] [--out DIR | --resume DIR]\n"
		    "                [--dry-run] [-v]\n"
		    "\n"
		    "Runs every seed of the range on this machine: a coordinator in this\n"
		    "process and N worker processes, each with its own schema and workspace.\n"
		    "With no database configured, a throwaway PostgreSQL is started.\n"
		    "\n"
		    "  --seeds A..B    inclusive range, or N for 0..N-1 (default: the config's)\n"
		    "  --workers N     worker processes (default: the number of CPUs)\n"
		    "  --out DIR       where report.json, junit.xml and failures/ go\n"
		    "                  (default soak-out/<run-id>)\n"
		    "  --resume DIR    go on with the killed run whose --out was DIR (its\n"
		    "                  journal.jsonl), with the same config: seeds with a\n"
		    "                  verdict are not run again\n"
		    "  --dry-run       load the config and check the options, say what\n"
		    "                  would run, and exit 0 without running it\n"
		    "  --lease-ttl DUR, --heartbeat DUR\n"
		    "                  as for soak coordinator (defaults 5s, 500ms): how\n"
		    "                  soon a worker that stopped beating loses its seeds\n"
		    "  -v, --verbose   log every step\n"
		    "\n"
		    "A worker process that dies is replaced: 2 x N (at least 4) at once,\n"
		    "then one a second; N + 3 in a row that die before reporting anything\n"
		    "end the run.\n"
		    "An output directory that cannot be written (a full disk) stops the run;\n"
		    "--resume DIR runs the rest.\n"
		    "\n"
		    "Exit status: 0 all passed; 1 a domain failure; 2 incomplete (infra or\n"
		    "missing verdicts); 64 usage; 78 config error.\n" SOAK_MANUAL);
	else
		fprintf(f,
		    "usage: soak coordinator CONFIG --listen URL [--seeds A..B]\n"
		    "                        [--out DIR | --resume DIR] [--lease-ttl DUR]\n"
		    "                        [--heartbeat DUR] [--linger DUR]\n"
		    "                        [--bundle on|off] [--secret-file FILE]\n"
		    "                        [--tls-cert PEM [--tls-client-ca PEM]]\n"
		    "                        [--insecure] [--dry-run] [-v]\n"
		    "\n"
		    "Hands out the seeds of CONFIG to workers that dial URL\n"
		    "(tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH) with\n"
		    "`soak worker --connect URL`.\n"
		    "\n"
		    "  --bundle on|off       on (default): workers get the config's folder\n"
		    "                        from the coordinator, content-hashed (at most\n"
		    "                        8 MiB; .git and the output folder left out) and\n"
		    "                        cached; everything in the folder travels, so keep\n"
		    "                        secrets out of it.  off: workers read the folder\n"
		    "                        at the coordinator's path (shared filesystems,\n"
		    "                        images)\n"
		    "  --secret-file FILE    the shared secret (else SOAK_SECRET; at least 16\n"
		    "                        bytes; the file mode 600): workers and coordinator\n"
		    "                        prove they know it, HMAC challenge-response\n"
		    "  --tls-cert PEM        this coordinator's certificate and key, one file\n"
		    "                        (tls+tcp:// needs it)\n"
		    "  --tls-client-ca PEM   require workers' client certificates, from this CA\n"
		    "  --insecure            allow what the rules below refuse (a trusted lab\n"
		    "                        network only; warned at every start)\n"
		    "  --resume DIR          go on with the run whose --out was DIR, same\n"
		    "                        config: its workers rejoin by themselves\n"
		    "  --lease-ttl DUR       a lease without a heartbeat or a result for DUR\n"
		    "                        is lost, its seeds run elsewhere (default 5s)\n"
		    "  --heartbeat DUR       how often workers beat while they hold a lease\n"
		    "                        (default 500ms; keep it well under --lease-ttl)\n"
		    "  --linger DUR          after a finished run, stay up DUR more (at most\n"
		    "                        1h) telling workers that dial late that the run\n"
		    "                        is over, so they exit 0 (default 0: only the\n"
		    "                        run's own workers are waited for, up to 10s)\n"
		    "  --dry-run             check the config, the options and the secret or\n"
		    "                        TLS files, say what would run, and exit 0\n"
		    "                        without listening\n"
		    "  -v, --verbose         log every step\n"
		    "\n"
		    "Who proves what, on any URL but ipc://: workers prove themselves to the\n"
		    "coordinator (the secret, or --tls-client-ca) and the coordinator to its\n"
		    "workers (the secret, or --tls-cert checked by their --tls-ca).  Both\n"
		    "must hold, or the coordinator refuses to start (exit 64) unless\n"
		    "--insecure: tls+tcp:// with --tls-cert alone is refused too.  The\n"
		    "secret protects every message from being altered, not from being read:\n"
		    "a database.url with a password is refused on tcp:// (exit 64, even\n"
		    "with --insecure); use tls+tcp://, or give workers SOAK_DATABASE_URL.\n"
		    "\n"
		    "Exit status as for `soak run`.\n" SOAK_MANUAL);
}

/*
 * The WELCOME carries the config text as it is, database.url included (and
 * nothing of this process's SOAK_DATABASE_URL, which never leaves it).  The
 * shared secret keeps it from being altered, not from being read: over
 * plain tcp:// a password in it would cross the network readable, to
 * every worker and anyone listening.  So that is refused, --insecure or
 * not (it waives authentication, and an --insecure coordinator gives the
 * config to anyone who connects).  ipc:// stays on this machine.
 */
static int
coordinator_ships_password(const struct runopts *o, const struct cfg *cfg)
{
	if (o->local || auth_url_is_tls(o->listen) || auth_url_is_ipc(o->listen) ||
	    !conninfo_has_password(cfg->db_url))
		return 0;
	fprintf(stderr, "soak coordinator: %s: database.url holds a password, and "
	    "every worker gets the config: on %s it would cross the network "
	    "readable (the shared secret keeps messages from being altered, not "
	    "from being read).  Listen on tls+tcp:// (--tls-cert), or take the "
	    "password out of database.url and give each worker its own "
	    "SOAK_DATABASE_URL (or a ~/.pgpass)\n", o->config, o->listen);
	return -1;
}

/*
 * The first base64 line of the private key in the PEM file path (a
 * --tls-cert), into line: 64 characters, 16 of them the key's own past the
 * fixed prefix of its encoding, so any file that holds a copy of the key
 * (a coordinator.key beside coordinator.pem) holds this line.  0 when
 * found; -1 (nothing to match) otherwise.
 */
static int
tls_key_line(const char *path, char *line, size_t cap)
{
	char	 buf[16384], *p, *e;
	size_t	 n;
	FILE	*f;

	if ((f = fopen(path, "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strstr(buf, "PRIVATE KEY-----")) == NULL ||
	    (p = strchr(p, '\n')) == NULL)
		return -1;
	p++;
	if ((e = strchr(p, '\n')) == NULL || e - p < 16 || (size_t)(e - p) >= cap ||
	    strncmp(p, "-----", 5) == 0)
		return -1;
	if (e > p && e[-1] == '\r')
		e--;
	snprintf(line, cap, "%.*s", (int)(e - p), p);
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

/*
 * The config folder as workers without it get it (common/bundle.h): built
 * once, before anything listens, without .git, the run's output directory
 * (nor, with the default --out, the soak-out folder every run writes
 * into), and never with this coordinator's credentials: its secret file,
 * its TLS certificate's key, any file holding the shared secret (an
 * example of docs/fleet.md keeps soak.secret beside soak.yaml) or a copy of
 * that key.  -1 when
 * it cannot travel (too big: the biggest files named).
 */
int
coordinator_bundle(const char *config, const struct cfg *cfg, const char *out,
    bool default_out, const struct auth_opts *auth, struct bundle *b)
{
	const char		*exclude[5] = { NULL };
	struct bundle_rules	 rules = { .exclude = exclude };
	char			 err[ERR_LEN], size[32], path[4][PATH_MAX], key[128];
	int			 n = 0, i, rc;

	if (realpath(out, path[n]) != NULL)
		n++;
	if (default_out && realpath("soak-out", path[n]) != NULL)
		n++;
	if (auth->secret_file && realpath(auth->secret_file, path[n]) != NULL)
		n++;
	if (auth->tls_cert && realpath(auth->tls_cert, path[n]) != NULL)
		n++;
	for (i = 0; i < n; i++)
		exclude[i] = path[i];
	rules.secret = auth->secret.key;
	rules.secret_len = auth->secret.len;
	if (auth->tls_cert && tls_key_line(auth->tls_cert, key, sizeof(key)) == 0) {
		rules.key = (const uint8_t *)key;
		rules.key_len = strlen(key);
	}
	rc = bundle_pack(cfg->dir, &rules, b, err);
	explicit_bzero(key, sizeof(key));
	if (rc == -1) {
		fprintf(stderr, "soak coordinator: %s: %s\n", config, err);
		return -1;
	}
	if (b->len >= (1u << 20))
		snprintf(size, sizeof(size), "%.1f MiB", (double)b->len / (1u << 20));
	else
		snprintf(size, sizeof(size), "%.1f KiB", (double)b->len / 1024);
	fprintf(stderr, "soak: config folder %s bundled for workers: %zu entries, "
	    "%s, sha256 %.12s%s\n", cfg->dir, b->nentries, size, b->hash,
	    b->nskipped ? " (some left out: see above)" : "");
	return 0;
}

/*
 * A run stopped for a command the workers could not exec (coord.c's early
 * stop): plainly the config's only if this machine, whose folder the
 * config is, cannot start it either.  Otherwise the workers' copy of the
 * folder lacks it (--bundle off on a machine without the folder, a file
 * left out of the bundle): their machines', exit 2.
 */
static void
halt_here(struct coord *c, const struct cfg *cfg)
{
	const struct cfgerr	*e = coord_halt_cfgerr(c);
	char			 why[ERR_LEN];
	size_t			 i;
	int			 errnum;

	if (e == NULL || e->kind != CFGERR_EXEC || coord_halt_status(c) != SOAK_EXIT_CONFIG)
		return;
	for (i = 0; i < cfg->ncommands; i++)
		if (strcmp(cfg->commands[i].key, e->what) == 0 &&
		    exec_check(cfg->commands[i].argv[0], &errnum, why) == 0) {
			coord_halt_not_plain(c, "but the coordinator's machine has it: "
			    "the workers' copy of the config folder does not");
			return;
		}
}

/*
 * A config that did not load: the commands that did load and cannot be
 * started here are told with the file's other mistakes, so one attempt
 * shows them all (soak check tells the SQL's too).
 */
static void
commands_problems(const struct cfg *cfg, struct cfg_errors *errs)
{
	const struct cfg_mark	*m;
	char			 why[ERR_LEN], *msg;
	size_t			 i;
	int			 errnum;

	for (i = 0; i < cfg->ncommands; i++) {
		if (exec_check(cfg->commands[i].argv[0], &errnum, why) == 0)
			continue;
		if ((m = cfg_mark_find(cfg, cfg->commands[i].key)) != NULL)
			msg = xasprintf("%s:%d:%d: %s: %s", cfg->path, m->line, m->col,
			    cfg->commands[i].key, why);
		else
			msg = xasprintf("%s: %s: %s", cfg->path, cfg->commands[i].key, why);
		cfg_errors_add(errs, msg);
		free(msg);
	}
}

/*
 * The config's regressions (common/regress.h), each a config error when
 * it cannot run; said once when there is no folder.  With --bundle, a
 * folder outside the config's would not reach the workers: refused.
 */
static int
regressions_load(const struct runopts *o, const struct cfg *cfg,
    struct regress_set *rs)
{
	struct cfg_errors	 errs = { 0 };
	char			 err[ERR_LEN], *rel = NULL;

	if (regress_load(cfg, rs, &errs, err) == -1) {
		cfg_errors_print(&errs, stderr, "soak");
		cfg_errors_free(&errs);
		regress_set_free(rs);
		return -1;
	}
	cfg_errors_free(&errs);
	if (rs->absent) {
		log_info("no regressions: %s is not there (soak pin RUN_DIR --seed N "
		    "adds one)", cfg->regressions);
		return 0;
	}
	if (!o->local && o->bundle && rs->n > 0 &&
	    (rel = path_under(cfg->regressions, cfg->dir)) == NULL) {
		const struct cfg_mark	*m = cfg_mark_find(cfg, "regressions");

		fprintf(stderr, "soak: %s:%d:%d: regressions: %s is outside the config's "
		    "folder %s, so the bundle would not take it to the workers: move "
		    "it into that folder, or run with --bundle off and the same "
		    "folder on every worker\n", cfg->path, m ? m->line : 0,
		    m ? m->col : 0, cfg->regressions, cfg->dir);
		regress_set_free(rs);
		return -1;
	} else if (!o->local && o->bundle && rs->n > 0)
		free(rel);
	if (rs->n > 0)
		log_info("%zu regression(s) in %s run before the seeds", rs->n,
		    cfg->regressions);
	return 0;
}

/*
 * report.html beside report.json.  The page is for people: one that
 * cannot be written is a warning (soak report RUN_DIR writes it again),
 * never a change of the run's exit status.
 */
static int
html_page(const char *out, const struct cfg *cfg)
{
	struct report_html_opts	o = { .run_dir = out, .cfg = cfg };
	char			err[ERR_LEN];

	if (report_html_write(&o, NULL, err) == -1) {
		log_warnx("%s (soak report %s writes it again)", err, out);
		return -1;
	}
	return 0;
}

/*
 * The config, the options, the run's id and output folder (a new run's,
 * or the killed one's with --resume): 0 to go on, else -1 and *rc the exit
 * status (0 for --dry-run, which says what would run).
 */
static int
run_prepare(struct runctx *r, int *rc)
{
	struct runopts		*o = r->o;
	struct cfg_errors	 cerrs = { 0 };
	char			 err[ERR_LEN];

	if (cfg_load_file_keep(o->config, &r->cfg, err, &cerrs, true) == -1) {
		if (r->cfg.broken & CFG_BROKEN_SOME)
			commands_problems(&r->cfg, &cerrs);
		cfg_errors_sort(&cerrs, o->config);
		cfg_errors_print(&cerrs, stderr, "soak");
		cfg_errors_free(&cerrs);
		*rc = SOAK_EXIT_CONFIG;
		return -1;
	}
	if (coordinator_ships_password(o, &r->cfg) == -1) {
		*rc = SOAK_EXIT_USAGE;
		return -1;
	}
	if (regressions_load(o, &r->cfg, &r->regress) == -1) {
		*rc = SOAK_EXIT_CONFIG;
		return -1;
	}
	r->co.seeds = r->cfg.seeds;
	if (o->seeds && seed_range_parse(o->seeds, &r->co.seeds, err) == -1) {
		fprintf(stderr, "soak: --seeds: %s\n", err);
		*rc = SOAK_EXIT_USAGE;
		return -1;
	}
	if (realpath(o->config, r->cfgpath) == NULL)
		snprintf(r->cfgpath, sizeof(r->cfgpath), "%s", o->config);
	if (o->resume) {
		if ((*rc = resume_check(o, &r->cfg, &r->co, &r->regress, &r->run_id,
		    &r->started)) != 0)
			return -1;
		r->out = xstrdup(o->resume);
	} else {
		r->run_id = make_run_id();
		r->out = o->out ? xstrdup(o->out) : xasprintf("soak-out/%s",
		    r->run_id);
	}
	/* Everything a command line can get wrong is checked by now: a CI
	 * recipe's command lines are tested this way (tests/deploy/ci.sh). */
	if (o->dry_run) {
		printf("soak: dry run: %s would run %zu regression(s), then %" PRIu64
		    " seed(s), %" PRIu64 "..%" PRIu64 ", of %s %s, into %s; nothing "
		    "run\n", o->local ? "run" : "coordinator", r->regress.n,
		    seed_range_count(&r->co.seeds), r->co.seeds.first,
		    r->co.seeds.last, r->cfg.name, o->local ? "on this machine" :
		    "for workers", r->out);
		*rc = 0;
		return -1;
	}
	return 0;
}

/*
 * soak run's own: the database (embedded when none is configured), the
 * coordinator's ipc:// folder, failures/ for the workers' kept failures
 * and the turns' scratch folder.  0, or -1 said on stderr.
 */
static int
run_local_setup(struct runctx *r)
{
	char	err[ERR_LEN], outabs[PATH_MAX];

	if (iso_db_open(&r->db, &r->cfg, r->o->workers, NULL, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		return -1;
	}
	if ((r->ipcdir = strdup("/tmp/soak-ipc-XXXXXX")) == NULL ||
	    mkdtemp(r->ipcdir) == NULL) {
		fprintf(stderr, "soak: cannot create a private directory: %s\n",
		    strerror(errno));
		return -1;
	}
	r->url = xasprintf("ipc://%s/coord", r->ipcdir);
	r->keep = xasprintf("%s/failures", r->out);
	/* Turn directories are created and removed for every seed: on
	 * tmpfs that costs a few ms a seed, on a disk 150 ms or more.
	 * A fresh name there, so nobody can have put anything in it. */
	r->work = xasprintf("%s/soak-work-%s-XXXXXX", scratch_root(), r->run_id);
	if (mkdtemp(r->work) == NULL) {
		fprintf(stderr, "soak: cannot create a private directory %s: %s\n",
		    r->work, strerror(errno));
		free(r->work);
		r->work = NULL;
		return -1;
	}
	if (realpath(r->out, outabs) != NULL) {
		/* absolute, so workers agree with us whatever their cwd */
		free(r->keep);
		r->keep = xasprintf("%s/failures", outabs);
	}
	if (private_dir(r->keep, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * The coordinator, its journal and its server, then soak run's worker
 * processes (or the line a coordinator's workers are waiting for).  0, or
 * -1 said on stderr.
 */
static int
run_start(struct runctx *r)
{
	struct runopts		*o = r->o;
	struct coord_opts	*co = &r->co;
	char			 err[ERR_LEN];
	int			 i;

	co->cfg = &r->cfg;
	co->run_id = r->run_id;
	co->cfg_path = r->cfgpath;
	co->db_conninfo = o->local ? r->db.conninfo : "";
	co->keep_dir = r->keep ? r->keep : "";
	co->workspace = r->work ? r->work : "";
	co->heartbeat_ms = o->heartbeat_ms;
	co->lease_ttl_ms = o->lease_ttl_ms;
	co->bundle_hash = r->bundle.data ? r->bundle.hash : "";
	co->bundle = r->bundle.data;
	co->bundle_len = r->bundle.len;
	co->regress = &r->regress;
	if ((r->coord = coord_new(co, err)) == NULL) {
		fprintf(stderr, "soak: %s\n", err);
		return -1;
	}
	*r->meta = (struct report_meta){ .cfg = &r->cfg, .cfg_path = r->cfgpath,
	    .run_id = r->run_id, .out_dir = r->out, .seeds = co->seeds,
	    .started_wall_ms = r->started };
	coord_on_final(r->coord, on_final, r);
	if (journal_start(r, &r->cfg, r->run_id, r->out, r->meta, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		return -1;
	}
	if (o->resume) {
		struct coord_counts	n;

		coord_counts(r->coord, &n);
		fprintf(stderr, "soak: resuming run %s: %" PRIu64 " of %" PRIu64 " seeds "
		    "have their verdict\n", r->run_id, n.done, n.total);
	}
	/* A worker has at most 2 requests waiting (its lease request parked,
	 * a heartbeat): COORD_SLOTS serves about 950 of them, with 128 slots
	 * left to connections not authenticated yet (coordinator/peer.h). */
	if ((r->srv = server_open(r->url, o->local ? 2 * o->workers + 8 : COORD_SLOTS,
	    &o->auth, err)) == NULL) {
		fprintf(stderr, "soak: %s\n", err);
		return -1;
	}
	r->tty = isatty(STDERR_FILENO) && !o->verbose;
	r->start_ms = now_ms();
	if (o->local) {
		r->nkids = o->workers;
		r->kids = xcalloc(r->nkids, sizeof(*r->kids));
		r->tokens = RESPAWN_BURST(r->nkids);
		r->refill_at = now_ms() + RESPAWN_REFILL_MS;
		for (i = 0; i < r->nkids; i++)
			r->kids[i].pid = spawn_worker(r);
	} else
		fprintf(stderr, "soak: coordinator for %s listening on %s (run %s)\n",
		    r->cfg.name, server_url(r->srv), r->run_id);
	return 0;
}

void
cassettes_merge(const struct cfg *cfg, FILE *out)
{
	char	err[ERR_LEN];
	size_t	i, keys, replies;

	for (i = 0; i < cfg->nproxies; i++) {
		if (cfg->proxies[i].record == NULL)
			continue;
		if (proxy_cassette_merge(cfg->proxies[i].record, &keys, &replies,
		    err) == -1)
			fprintf(stderr, "soak: proxy %s: the recording was not "
			    "merged: %s (its parts are still there)\n",
			    cfg->proxies[i].name, err);
		else
			fprintf(out, "  cassette: %s holds %zu request key(s), %zu "
			    "repl%s (proxy %s records; replay: it answers from it)\n",
			    cfg->proxies[i].record, keys, replies, replies == 1 ?
			    "y" : "ies", cfg->proxies[i].name);
	}
}

/*
 * After the server's loop: the workers told and reaped, the journal
 * closed, report.json and junit.xml written, the summary printed, the
 * tickets filed, lost workers' schemas dropped, late workers told.  The
 * exit status.
 */
static int
run_finish(struct runctx *r)
{
	struct runopts		*o = r->o;
	struct report_meta	*meta = r->meta;
	char			 err[ERR_LEN];
	int			 rc;
	bool			 reported = true;

	meta->interrupted = stop_requested != 0;
	halt_here(r->coord, &r->cfg);
	if ((meta->halted = coord_halt_reason(r->coord)) != NULL)
		fprintf(stderr, "soak: the run stopped early: %s\n", meta->halted);
	/* Tell the workers; give them a moment to say bye and drop their schemas. */
	server_drain(r->srv, r->coord, stop_requested ? 0 : 10000, &stop_requested);
	progress(r, true);
	reap_workers(r, meta->interrupted ? 0 : 10000);
	if (r->died > 0)
		fprintf(stderr, "soak: %d worker process(es) died during the run, %d "
		    "replaced (the restart limit: %d at once, then one a second)\n",
		    r->died, r->replaced, RESPAWN_BURST(r->nkids));
	meta->wall_ms = now_ms() - r->t0;
	/* the workers are gone: their recordings' parts are whole */
	cassettes_merge(&r->cfg, stdout);
	if (journal_close(r->journal, err) == -1 && r->io_why == NULL)
		log_warnx("%s", err);
	r->journal = NULL;
	if ((rc = report_write(meta, r->coord, err)) == -1) {
		reported = false;
		fprintf(stderr, "soak: %s; %s/%s keeps the verdicts recorded: `soak %s "
		    "--resume %s` writes the report once there is room\n", err, r->out,
		    JOURNAL_NAME, o->local ? "run CONFIG" : "coordinator CONFIG --listen URL",
		    r->out);
		rc = SOAK_EXIT_INCOMPLETE;
	}
	report_summary(stdout, meta, r->coord);
	if (reported && html_page(r->out, &r->cfg) == 0)	/* report_html.h */
		printf("  page:   %s/%s\n", r->out, RH_NAME);
	fflush(stdout);
	if (r->cfg.tickets.enabled)	/* else no need to read report.json back */
		tickets_after_run(r->out, stdout);
	/*
	 * With an external database, schemas of lost workers must not pile
	 * up.  Best effort, and within ISO_TEARDOWN_MS: a database that
	 * stopped answering must not keep the run from ending; then what may
	 * be left is said.
	 */
	if (o->local && r->db.pg == NULL && r->db.conninfo && iso_drop_run(
	    r->db.conninfo, r->run_id, now_ms() + ISO_TEARDOWN_MS, err) == -1) {
		char	*prefix = iso_schema_prefix(r->run_id);

		left_schemas(r->db.conninfo, prefix, err);
		free(prefix);
	}
	/*
	 * Late workers (a pod scheduled after the run, a slow node) hear "run
	 * finished" and exit 0 instead of waiting out --reconnect and exiting
	 * 1, which an engine counts as a failed job.  The report is written
	 * and the summary printed first: only the exit waits.
	 */
	if (o->linger_ms > 0 && coord_finished(r->coord) && !stop_requested) {
		fprintf(stderr, "soak: run over; telling late workers so for %d s "
		    "(--linger)\n", o->linger_ms / 1000);
		server_linger(r->srv, r->coord, o->linger_ms, &stop_requested);
	}
	return rc;
}

static void
run_free(struct runctx *r)
{
	char	err[ERR_LEN];

	/* Made at start, 0700, for the workers' kept failures: a run
	 * without one leaves no empty failures/ behind. */
	if (r->keep)
		(void)rmdir(r->keep);
	journal_close(r->journal, err);
	server_close(r->srv);
	coord_free(r->coord);
	iso_db_close(&r->db);
	if (r->work)
		rm_rf(r->work);
	if (r->ipcdir) {
		rm_rf(r->ipcdir);
		free(r->ipcdir);
	}
	free(r->kids);
	free(r->io_why);
	free(r->url);
	free(r->keep);
	free(r->work);
	free(r->out);
	free(r->run_id);
	bundle_free(&r->bundle);
	fp_groups_free(&r->ci_seen);
	regress_set_free(&r->regress);
	cfg_free(&r->cfg);
}

/* A run, from its config to its exit status, in the phases above. */
static int
run_main(struct runopts *o)
{
	struct report_meta	 meta = { 0 };
	struct runctx		 r = { .o = o, .meta = &meta, .t0 = now_ms(),
				    .started = wall_ms() };
	struct sigaction	 sa = { .sa_handler = on_signal };
	char			 err[ERR_LEN];
	int			 rc = SOAK_EXIT_INCOMPLETE;

	if (run_prepare(&r, &rc) == -1)
		goto out;
	rc = SOAK_EXIT_INCOMPLETE;
	if (mkdir_p(r.out, 0755, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		goto out;
	}
	if (!o->local && o->bundle && coordinator_bundle(o->config, &r.cfg, r.out,
	    o->out == NULL, &o->auth, &r.bundle) == -1) {
		rmdir(r.out);	/* made just now, empty: nothing ran */
		rc = SOAK_EXIT_CONFIG;
		goto out;
	}
	if (report_config_copy(&r.cfg, r.out, err) == -1)
		log_warnx("%s", err);	/* the run goes on without its copy */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!o->local)
		r.url = xstrdup(o->listen);
	else if (run_local_setup(&r) == -1)
		goto out;
	if (run_start(&r) == -1)
		goto out;
	server_run(r.srv, r.coord, &stop_requested, r.tty ? 200 : 1000, tick, &r);
	rc = run_finish(&r);
out:
	run_free(&r);
	return rc;
}

static int
parse(int argc, char **argv, struct runopts *o)
{
	static const struct option longopts[] = {
		{ "seeds",	required_argument, NULL, 's' },
		{ "workers",	required_argument, NULL, 'w' },
		{ "out",	required_argument, NULL, 'o' },
		{ "listen",	required_argument, NULL, 'l' },
		{ "heartbeat",	required_argument, NULL, 'H' },
		{ "lease-ttl",	required_argument, NULL, 'T' },
		{ "linger",	required_argument, NULL, 'L' },
		{ "resume",	required_argument, NULL, 'R' },
		{ "secret-file",	required_argument, NULL, 'F' },
		{ "tls-cert",	required_argument, NULL, 'C' },
		{ "tls-client-ca",	required_argument, NULL, 'A' },
		{ "insecure",	no_argument,	   NULL, 'I' },
		{ "bundle",	required_argument, NULL, 'B' },
		{ "dry-run",	no_argument,	   NULL, 'D' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	 err[ERR_LEN];
	int64_t	 ms, n;
	int	 ch;
	bool	 workers_given = false;

	o->workers = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (o->workers < 1)
		o->workers = 1;
	o->heartbeat_ms = 500;
	o->lease_ttl_ms = 5000;
	while ((ch = getopt_long(argc, argv, "s:w:o:l:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->seeds = optarg; break;
		case 'o': o->out = optarg; break;
		case 'R': o->resume = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'F': o->auth.secret_file = optarg; break;
		case 'C': o->auth.tls_cert = optarg; break;
		case 'A': o->auth.tls_client_ca = optarg; break;
		case 'I': o->auth.insecure = true; break;
		case 'D': o->dry_run = true; break;
		case 'B':
			if (o->local) {
				fprintf(stderr, "soak run: --bundle is for `soak coordinator` "
				    "(local workers read the folder itself)\n");
				return -1;
			}
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
				fprintf(stderr, "soak coordinator: --bundle wants on or off, "
				    "got \"%s\"\n", optarg);
				return -1;
			}
			o->bundle = strcmp(optarg, "on") == 0;
			break;
		case 'v': o->verbose = 1; log_init(o->local ? "run" : "coordinator", 1); break;
		case 'w':
			workers_given = true;
			if (parse_count(optarg, 1, 1024, &n, err) == -1) {
				fprintf(stderr, "soak: --workers: %s\n", err);
				return -1;
			}
			o->workers = (int)n;
			break;
		case 'L':
			if (o->local) {
				fprintf(stderr, "soak run: --linger is for `soak "
				    "coordinator` (local workers are never late)\n");
				return -1;
			}
			if (parse_duration_ms(optarg, &ms, err) == -1 ||
			    ms > 3600 * 1000) {
				fprintf(stderr, "soak coordinator: --linger: %s\n",
				    ms > 3600 * 1000 ? "at most 1h (60m)" : err);
				return -1;
			}
			o->linger_ms = (int)ms;
			break;
		case 'H':
		case 'T':
			if (parse_duration_ms(optarg, &ms, err) == -1 || ms > 600000) {
				fprintf(stderr, "soak: --%s: %s\n",
				    ch == 'H' ? "heartbeat" : "lease-ttl", err);
				return -1;
			}
			*(ch == 'H' ? &o->heartbeat_ms : &o->lease_ttl_ms) = (int)ms;
			break;
		case 'h':
			usage(stdout, o->local);
			exit(0);
		default:
			usage(stderr, o->local);
			return -1;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr, o->local);
		return -1;
	}
	o->config = argv[optind];
	if (o->resume && o->out) {
		fprintf(stderr, "soak: --resume DIR writes to DIR; --out is for a new run\n");
		return -1;
	}
	if (!o->local && workers_given) {
		fprintf(stderr, "soak coordinator: --workers is for `soak run` (a "
		    "coordinator's workers dial in: soak worker --connect URL --slots N)\n");
		return -1;
	}
	if (!o->local && o->listen == NULL) {
		fprintf(stderr, "soak coordinator: --listen URL is required\n");
		return -1;
	}
	if (o->local && o->listen) {
		fprintf(stderr, "soak run: --listen is for `soak coordinator`\n");
		return -1;
	}
	if (o->local && (o->auth.secret_file || o->auth.tls_cert ||
	    o->auth.tls_client_ca || o->auth.insecure)) {
		fprintf(stderr, "soak run: --secret-file, --tls-* and --insecure are for "
		    "`soak coordinator`\n");
		return -1;
	}
	return 0;
}

/*
 * Who may connect (common/auth.h): the secret, and the rules checked
 * before anything listens.  -1: refused, the fix said.
 */
static int
coordinator_auth(struct runopts *o)
{
	char	err[ERR_LEN], warn[ERR_LEN];
	int	rc;

	if (auth_secret_load(o->auth.secret_file, &o->auth.secret, err) == -1 ||
	    (rc = auth_policy(AUTH_COORDINATOR, o->listen, &o->auth, warn, err)) == -1 ||
	    tlsconf_check(AUTH_COORDINATOR, o->listen, &o->auth, err) == -1) {
		fprintf(stderr, "soak coordinator: %s\n", err);
		return -1;
	}
	if (rc == 1)
		fprintf(stderr, "soak coordinator: warning: %s\n", warn);
	return 0;
}

int
cmd_run(int argc, char **argv)
{
	struct runopts	o = { .local = true };

	if (parse(argc, argv, &o) == -1)
		return SOAK_EXIT_USAGE;
	/* Local workers, ipc:// in a private directory: no secret, none expected. */
	unsetenv("SOAK_SECRET");
	return run_main(&o);
}

int
cmd_coordinator(int argc, char **argv)
{
	struct runopts	o = { .local = false, .bundle = true };
	int		rc;

	if (parse(argc, argv, &o) == -1 || coordinator_auth(&o) == -1) {
		auth_secret_free(&o.auth.secret);
		return SOAK_EXIT_USAGE;
	}
	rc = run_main(&o);
	auth_secret_free(&o.auth.secret);
	return rc;
}
