/*
 * One seed's life: reset -> setup -> (round k -> check)* -> verdict.
 * Every way it can end is a verdict (docs/design.md, "Verdicts"); nothing
 * here returns an error to the caller: a seed without one is a lost seed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conninfo.h"
#include "common/exec.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/seed.h"
#include "common/util.h"
#include "common/verdict.h"
#include "fault-proxy/proxy.h"
#include "invariants/inv.h"
#include "worker/detail.h"
#include "worker/env.h"
#include "worker/wrk.h"

static const char *const run_state_names[] = {
	[RUN_RESET] = "reset", [RUN_SETUP] = "setup", [RUN_ROUND] = "round",
	[RUN_CHECK] = "check", [RUN_VERDICT] = "verdict",
};

struct seed_ctx {
	struct wrk		*w;
	uint64_t		 seed;
	enum run_state		 state;
	int64_t			 start, deadline;
	int64_t			 start_wall;	/* the seed's start, wall clock */
	json_t			*checks;	/* [[round, start_ms, end_ms, broken]] */
	char			*dir;		/* the seed's workspace */
	struct proxy_set	*proxies;
	char			**ups;		/* the proxies' upstreams, resolved */
	char			*trace_path;
	/* the services through the seam run for this seed (services.c), and
	 * what their start and stop cost */
	bool			 svc_up;
	int64_t			 svc_start_ms, svc_stop_ms;
	json_t			*turns;		/* outcomes, for the report */
	int			 ok_turns, total_turns, crashed;
	int			 round;		/* the round that failed, or -1 */
	int			 idle_round;	/* the first round in which no turn
						   succeeded, or -1 */
	char			 idle_why[300];	/* how its first turn ended */
	char			 diverged[2048];	/* a plan's divergence, or "" */
	/* what the seed's schedules waited for their actors, read as the
	 * proxies close (proxy_set_waits); scheduled: the set had a schedule */
	struct proxy_waits	 waits;
	bool			 scheduled;
	/* per invariant (config order): rounds checked, rounds it broke */
	uint32_t		*inv_checks, *inv_broken;
	struct cfgerr		 cfgerr;	/* what failed, when no retry mends it */
	char			 epoch[ISO_EPOCH_LEN];	/* the server's start, at reset */
};

static void
set_state(struct seed_ctx *c, enum run_state s, int round)
{
	if (round >= 0)
		log_debug("seed %" PRIu64 ": %s -> %s %d", c->seed,
		    run_state_names[c->state], run_state_names[s], round);
	else
		log_debug("seed %" PRIu64 ": %s -> %s", c->seed,
		    run_state_names[c->state], run_state_names[s]);
	c->state = s;
}

/*
 * Replay's timeline: one line stamped with at (a now_ms() instant) as
 * seconds since the seed started.  timeline() stamps it now.
 */
static void
timeline_at(struct seed_ctx *c, int64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
timeline(struct seed_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A line of the seed's timeline (soak replay, check and minimize print it
 * on the terminal): what it quotes — rows, a turn's stderr, a plan's
 * statements — is the system's, so the line goes out escaped (log.h).
 */
static void
timeline_v(struct seed_ctx *c, int64_t at, const char *fmt, va_list ap)
{
	char	*line;
	int	 n;

	if ((n = vasprintf(&line, fmt, ap)) == -1)
		abort();
	fprintf(c->w->timeline, "%7.3fs  ", (double)(at - c->start) / 1000.0);
	(void)log_escape_put(c->w->timeline, line, (size_t)n, 0);
	fputc('\n', c->w->timeline);
	fflush(c->w->timeline);
	free(line);
}

static void
timeline_at(struct seed_ctx *c, int64_t at, const char *fmt, ...)
{
	va_list	ap;

	if (c->w->timeline == NULL)
		return;
	va_start(ap, fmt);
	timeline_v(c, at, fmt, ap);
	va_end(ap);
}

static void
timeline(struct seed_ctx *c, const char *fmt, ...)
{
	va_list	ap;

	if (c->w->timeline == NULL)
		return;
	va_start(ap, fmt);
	timeline_v(c, now_ms(), fmt, ap);
	va_end(ap);
}

/* The reason says the verdict (common/verdict.h). */
static void
verdict(struct seed_result *res, enum reason why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
verdict(struct seed_result *res, enum reason why, const char *fmt, ...)
{
	va_list	ap;
	size_t	len;
	int	n;

	res->verdict = reason_verdict(why);
	res->reason = why;
	va_start(ap, fmt);
	n = vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	/* Cut short (a long stderr tail), it may end inside a character,
	 * which JSON cannot carry: the message would vanish from the report.
	 * Whether the last byte kept ends one is unknown, so it goes too; and
	 * a byte that is not UTF-8 (a path a turn printed) becomes '?'. */
	len = n >= (int)sizeof(res->message) ? utf8_prefix(res->message,
	    sizeof(res->message) - 1, sizeof(res->message) - 2) :
	    strlen(res->message);
	(void)utf8_cut(res->message, sizeof(res->message), res->message, len);
}

/* The seed's time: the config's seed_timeout, or the caller's shorter one
 * (wrk.h seed_timeout_ms). */
static int64_t
seed_timeout(const struct wrk *w)
{
	if (w->seed_timeout_ms > 0 && w->seed_timeout_ms < w->cfg->seed_timeout_ms)
		return w->seed_timeout_ms;
	return w->cfg->seed_timeout_ms;
}

/*
 * The seed's deadline passed while it was `where` (seed_timeout bounds the
 * whole seed: reset, setup, rounds, settling, checks; every libpq call
 * gives up then too): fail/hang (docs/design.md, "Verdicts").  Refined here
 * (docs/results.md "One deadline per seed"): when the database itself
 * stopped answering -- paused, cut off, wedged -- the system under test did
 * not hang, its environment did, so the worker asks the database on a fresh
 * connection within WRK_PROBE_MS: no answer is infra/db (retried on another
 * worker; the stuck connection is dropped and the next seed connects and
 * resets afresh), an answer is fail/hang as before.
 */
static void
deadline_passed(struct seed_ctx *c, struct seed_result *res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
deadline_passed(struct seed_ctx *c, struct seed_result *res, const char *fmt, ...)
{
	va_list		 ap;
	char		 where[128], err[ERR_LEN];
	long long	 timeout = (long long)seed_timeout(c->w);

	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	if (iso_probe(c->w->iso, WRK_PROBE_MS, err) == 0) {
		verdict(res, REASON_HANG, "still running at seed_timeout (%lld ms) %s",
		    timeout, where);
		return;
	}
	verdict(res, REASON_DB, "seed_timeout (%lld ms) passed %s, and %s", timeout,
	    where, err);
	log_warnx("seed %" PRIu64 ": %s", c->seed, res->message);
	timeline(c, "probe: %s", err);
}

/*
 * Turns failed (the guard), or the seed hung with the database answering:
 * the system under test's failure -- unless soak itself sees that the
 * database went away under the seed.  Asked on a fresh connection within
 * WRK_PROBE_MS: no answer, or a server started after the seed's reset
 * (pg_postmaster_start_time changed: it restarted, and every session of
 * the turns with it), makes the seed infra/db, retried like any infra; so
 * does an outage the database watch saw during the seed (iso.h: a pause or
 * a cut shorter than the seed, over by now).
 * Only soak's own observation counts, never a turn's words: a turn that
 * fails on a database that stayed up is still the system's failure, and
 * rows an invariant returned are data, whatever happened to the server.
 */
static void
outage_check(struct seed_ctx *c, struct seed_result *res)
{
	char	epoch[ISO_EPOCH_LEN], err[ERR_LEN], was[sizeof(res->message)];

	if (c->epoch[0] == '\0')
		return;
	snprintf(was, sizeof(was), "%s", res->message);
	if (iso_probe_epoch(c->w->iso, WRK_PROBE_MS, epoch, sizeof(epoch), err) == -1)
		verdict(res, REASON_DB, "%s, and then %s", was, err);
	else if (strcmp(epoch, c->epoch) != 0)
		verdict(res, REASON_DB, "%s, and the database restarted during the "
		    "seed (its server started at %s; at the seed's reset it had "
		    "started at %s)", was, epoch, c->epoch);
	else if (iso_watch_outage(c->w->watch, c->start, err, sizeof(err)) == 1)
		verdict(res, REASON_DB, "%s, and %s", was, err);
	else
		return;
	log_warnx("seed %" PRIu64 ": %s", c->seed, res->message);
	timeline(c, "outage: %s", res->message);
}

/*
 * A turn's outcome for the report: start_ms and end_ms are milliseconds
 * since the seed started (monotonic), so turns of a round can be laid
 * side by side.  Both tails are at most TURN_TAIL_MAX bytes; the detail's
 * cut (worker/detail.c) keeps or leaves out whole outcomes.
 */
static json_t *
outcome_json(const struct seed_ctx *c, const struct turn_outcome *t)
{
	return json_pack("{s:i, s:i, s:s, s:i, s:I, s:I, s:I, s:s, s:s}",
	    "round", t->round, "turn", t->turn, "status", turn_status_name(t->status),
	    "code", t->code, "start_ms", (json_int_t)(t->start_ms - c->start),
	    "end_ms", (json_int_t)(t->end_ms - c->start),
	    "duration_ms", (json_int_t)t->duration_ms,
	    "stdout_tail", t->stdout_tail ? t->stdout_tail : "",
	    "stderr_tail", t->stderr_tail ? t->stderr_tail : "");
}

/* Turns in the order they ended, for the timeline; ties in turn order. */
static int
by_end(const void *a, const void *b)
{
	const struct turn_outcome	*x = *(const struct turn_outcome *const *)a;
	const struct turn_outcome	*y = *(const struct turn_outcome *const *)b;

	if (x->end_ms != y->end_ms)
		return x->end_ms < y->end_ms ? -1 : 1;
	return (x->turn > y->turn) - (x->turn < y->turn);
}

/*
 * How a turn that did not succeed ended, for the guard's message: "turn 0
 * exited 1: ModuleNotFoundError: No module named 'psycopg2'", its stderr's
 * last line that is not empty, cut to a line's length.
 */
static void
turn_ended(const struct turn_outcome *t, char *buf, size_t len)
{
	const char	*tail = t->stderr_tail ? t->stderr_tail : "";
	const char	*end = tail + strlen(tail), *start;
	char		 how[64];
	size_t		 n;

	while (end > tail && (end[-1] == '\n' || end[-1] == '\r' ||
	    end[-1] == ' ' || end[-1] == '\t'))
		end--;
	for (start = end; start > tail && start[-1] != '\n'; start--)
		;
	n = utf8_prefix(start, (size_t)(end - start), 200);
	if (t->status == TURN_TIMEOUT)
		snprintf(how, sizeof(how), "was killed at turn.timeout");
	else if (t->status == TURN_ERROR)
		snprintf(how, sizeof(how), "exited %d", t->code);
	else
		snprintf(how, sizeof(how), "ended %s %d", turn_status_name(t->status),
		    t->code);
	if (n == 0)
		snprintf(buf, len, "turn %d %s, with nothing on stderr", t->turn, how);
	else
		snprintf(buf, len, "turn %d %s: %.*s%s", t->turn, how, (int)n, start,
		    n < (size_t)(end - start) ? "…" : "");
}

/*
 * A command that exec could not start: a config error when the errno says
 * it cannot be transient (common/cfgerr.h), in exec_check's words.
 */
static void
exec_error(struct seed_ctx *c, const char *what, char *const *argv, int errnum)
{
	char	why[ERR_LEN];
	int	e;

	if (errnum == 0)
		return;
	if (exec_check(argv[0], &e, why) == 0 || e != errnum)
		snprintf(why, sizeof(why), "%s: %s", argv[0], strerror(errnum));
	cfgerr_exec(&c->cfgerr, what, errnum, why);
}

/* The setup command: once per seed, before the first round. */
static int
run_setup(struct seed_ctx *c, struct seed_result *res)
{
	const struct cfg	*cfg = c->w->cfg;
	struct spawn_req	 req;
	struct turn_outcome	 out = { .round = -1, .turn = -1 };
	struct env		 env;
	const struct env_port	*ports;
	size_t			 nports;
	char			*dir, *so, *se;
	bool			 hung;
	int			 rc = 0;

	dir = xasprintf("%s/setup", c->dir);
	so = xasprintf("%s/stdout.log", dir);
	se = xasprintf("%s/stderr.log", dir);
	env_make_dirs(dir);
	env_init(&env);
	ports = wrk_service_ports(c->w, &nports);
	env_base(&env, c->w, ports, nports, dir);
	env_addf(&env, "SOAK_SEED", "%" PRIu64, c->seed);
	req = (struct spawn_req){ .argv = cfg->setup, .envp = env.v, .dir = dir,
	    .stdout_path = so, .stderr_path = se, .scrub = c->w->scrub };
	wrk_run_batch(&req, 1, cfg->setup_timeout_ms, c->deadline, &out, &hung);
	json_array_append_new(c->turns, outcome_json(c, &out));
	timeline_at(c, out.end_ms, "setup: %s %d (started at %.3fs, %lld ms)",
	    turn_status_name(out.status), out.code,
	    (double)(out.start_ms - c->start) / 1000.0, (long long)out.duration_ms);
	if (hung) {
		deadline_passed(c, res, "during setup");
		rc = -1;
	} else if (out.status == TURN_EXEC) {
		verdict(res, REASON_SETUP, "setup: %s", out.stderr_tail);
		exec_error(c, "setup", cfg->setup, out.exec_errno);
		rc = -1;
	} else if (out.status != TURN_OK) {
		verdict(res, REASON_SETUP, "setup command %s (%s %d) after %lld ms; see its stderr",
		    cfg->setup[0], turn_status_name(out.status), out.code,
		    (long long)out.duration_ms);
		rc = -1;
	}
	turn_outcome_clear(&out);
	env_free(&env);
	free(dir);
	free(so);
	free(se);
	return rc;
}

/* Proxy upstreams resolved for this worker: host:port, unix:PATH or
 * model:PATH. */
static char **
proxy_upstreams(struct wrk *w)
{
	const struct cfg	 *cfg = w->cfg;
	char			**up = xcalloc(cfg->nproxies + 1, sizeof(char *));
	size_t			  i;

	for (i = 0; i < cfg->nproxies; i++) {
		const struct cfg_proxy	*p = &cfg->proxies[i];

		switch (p->upstream_kind) {
		case CFG_UP_HOSTPORT:
			up[i] = xstrdup(p->upstream);
			break;
		case CFG_UP_UNIX:
			up[i] = xasprintf("unix:%s", p->upstream);
			break;
		case CFG_UP_SERVICE:
			up[i] = xasprintf("127.0.0.1:%d", wrk_service_port(w, p->upstream));
			break;
		case CFG_UP_MODEL:
			/* nothing is dialled: the proxy answers (docs/models.md) */
			up[i] = xasprintf("model:%s", p->upstream);
			break;
		case CFG_UP_DATABASE:
			if (w->db.host == NULL || w->db.host[0] == '/')
				up[i] = xasprintf("unix:%s/.s.PGSQL.%s",
				    w->db.host ? w->db.host : "/var/run/postgresql",
				    w->db.port ? w->db.port : "5432");
			else
				up[i] = xasprintf("%s:%s", w->db.host,
				    w->db.port ? w->db.port : "5432");
			break;
		}
	}
	return up;
}

/* A turn's process ended: the proxies' schedules stop waiting for it. */
struct turn_end {
	struct proxy_set	*ps;
	int			 turn;
};

static void
turn_exited(void *arg)
{
	const struct turn_end	*te = arg;

	proxy_set_turn_exited(te->ps, te->turn);
}

/* ... and started: the schedules look at its processes from now on. */
static void
turn_started(void *arg, pid_t pid)
{
	const struct turn_end	*te = arg;

	proxy_set_turn_started(te->ps, te->turn, pid);
}

/*
 * How a turn ended, in words for the timeline ("ok", "exited 3", "died of
 * SIGSEGV"), where the report keeps the status name and code.
 */
static const char *
turn_words(const struct turn_outcome *t, char *buf, size_t len)
{
	const char	*sig = sigabbrev_np(t->code);

	switch (t->status) {
	case TURN_OK:
		return "ok";
	case TURN_ERROR:
		snprintf(buf, len, "exited %d", t->code);
		break;
	case TURN_TEMPFAIL:
		snprintf(buf, len, "exited %d (tempfail: its environment broke)", t->code);
		break;
	case TURN_SIGNAL:
		snprintf(buf, len, "died of SIG%s", sig ? sig : "?");
		break;
	case TURN_TIMEOUT:
		return "timed out (killed at turn.timeout)";
	case TURN_EXEC:
		return "could not be executed";
	case TURN_KILLED:
		return "killed (the seed passed seed_timeout)";
	default:
		snprintf(buf, len, "%s %d", turn_status_name(t->status), t->code);
		break;
	}
	return buf;
}

static int
run_round(struct seed_ctx *c, int round, struct seed_result *res)
{
	const struct cfg	 *cfg = c->w->cfg;
	const struct plan	 *plan = c->w->plan;
	int			  n = 0, i, t, tempfail = 0, execfail = 0, ok = 0;
	struct spawn_req	 *reqs = xcalloc(cfg->turns, sizeof(*reqs));
	struct turn_outcome	 *out = xcalloc(cfg->turns, sizeof(*out));
	struct turn_outcome	**ended = xcalloc(cfg->turns, sizeof(*ended));
	struct env		 *envs = xcalloc(cfg->turns, sizeof(*envs));
	struct turn_end		 *ends = xcalloc(cfg->turns, sizeof(*ends));
	bool			 *runs = xcalloc(cfg->turns, sizeof(*runs));
	char			**dirs = xcalloc(cfg->turns, sizeof(char *));
	char			**so = xcalloc(cfg->turns, sizeof(char *));
	char			**se = xcalloc(cfg->turns, sizeof(char *));
	char			  err[ERR_LEN], name[128];
	bool			  hung;
	int			  rc = 0;
	size_t			  p, nports;
	const struct env_port	 *ports = wrk_service_ports(c->w, &nports);

	/* Under a plan only its (round, turn) pairs run (docs/plan.md); the
	 * others are never started and never waited for, and the ones that
	 * run keep their numbers and turn seeds.  out[i] is the i-th that runs. */
	for (t = 0; t < cfg->turns; t++) {
		if (!(runs[t] = plan_runs(plan, round, t)))
			continue;
		i = n++;
		if ((dirs[i] = iso_turn_dir(c->w->iso, c->seed, round, t, err)) == NULL) {
			verdict(res, REASON_EXEC, "%s", err);
			rc = -1;
			goto out;
		}
		so[i] = xasprintf("%s/stdout.log", dirs[i]);
		se[i] = xasprintf("%s/stderr.log", dirs[i]);
		env_init(&envs[i]);
		/* Through the seam by default: the turn's own listener of the
		 * proxy in front of the database, when there is one. */
		env_turn(&envs[i], c->w, ports, nports, dirs[i], c->proxies &&
		    cfg->db_proxy >= 0 ? proxy_set_addr(c->proxies,
		    (size_t)cfg->db_proxy, t) : NULL);
		env_addf(&envs[i], "SOAK_SEED", "%" PRIu64, c->seed);
		env_addf(&envs[i], "SOAK_ROUND", "%d", round);
		env_addf(&envs[i], "SOAK_TURN", "%d", t);
		env_addf(&envs[i], "SOAK_TURNS", "%d", cfg->turns);
		env_addf(&envs[i], "SOAK_TURN_SEED", "%" PRIu64, seed_turn(c->seed, round, t));
		for (p = 0; c->proxies && p < cfg->nproxies; p++) {
			env_name(name, sizeof(name), "SOAK_PROXY_", cfg->proxies[p].name);
			env_addf(&envs[i], name, "%s", proxy_set_addr(c->proxies, p, t));
		}
		if (c->proxies && cfg->model_proxy >= 0)
			env_model(&envs[i], proxy_set_addr(c->proxies,
			    (size_t)cfg->model_proxy, t));
		ends[i] = (struct turn_end){ c->proxies, t };
		reqs[i] = (struct spawn_req){ .argv = cfg->turn_command, .envp = envs[i].v,
		    .dir = dirs[i], .stdout_path = so[i], .stderr_path = se[i],
		    .ended = turn_exited, .ended_arg = &ends[i],
		    .started = turn_started, .scrub = c->w->scrub };
		out[i].round = round;
		out[i].turn = t;
	}
	/* the round's turns are new: a schedule waits for each of them until
	 * it exits, whatever its connections */
	proxy_set_round(c->proxies, round, runs);
	wrk_run_batch(reqs, (size_t)n, cfg->turn_timeout_ms, c->deadline, out, &hung);
	for (i = 0; i < n; i++) {
		out[i].round = round;
		out[i].turn = ends[i].turn;
		c->total_turns++;
		switch (out[i].status) {
		case TURN_OK:		c->ok_turns++; ok++; break;
		case TURN_TEMPFAIL:	tempfail++; break;
		case TURN_EXEC:		execfail++; break;
		case TURN_SIGNAL:	c->crashed++; break;
		default:		break;
		}
		json_array_append_new(c->turns, outcome_json(c, &out[i]));
		ended[i] = &out[i];
	}
	/* A round in which no turn succeeded tested nothing (the guard). */
	if (ok == 0 && c->idle_round < 0) {
		c->idle_round = round;
		turn_ended(&out[0], c->idle_why, sizeof(c->idle_why));
	}
	/* The timeline in the order turns ended, each stamped when it did. */
	qsort(ended, (size_t)n, sizeof(*ended), by_end);
	for (i = 0; i < n; i++) {
		const struct turn_outcome	*to = ended[i];
		char				 words[64];
		const char			*tail = to->status != TURN_OK &&
						    to->stderr_tail ? to->stderr_tail : "";
		int				 len = (int)strlen(tail);

		/* Its last newline would end the line early. */
		while (len > 0 && tail[len - 1] == '\n')
			len--;
		timeline_at(c, to->end_ms, "round %d turn %d: %s (started at %.3fs, "
		    "%lld ms)%s%.*s", round, to->turn, turn_words(to, words, sizeof(words)),
		    (double)(to->start_ms - c->start) / 1000.0, (long long)to->duration_ms,
		    len > 0 ? " stderr: " : "", len, tail);
	}
	if (hung) {
		deadline_passed(c, res, "in round %d", round);
		rc = -1;
	} else if (execfail) {
		for (i = 0; i < n && out[i].status != TURN_EXEC; i++)
			;
		verdict(res, REASON_EXEC, "%s", out[i].stderr_tail);
		exec_error(c, "turn.command", cfg->turn_command, out[i].exec_errno);
		rc = -1;
	} else if (tempfail) {
		for (i = 0; i < n && out[i].status != TURN_TEMPFAIL; i++)
			;
		verdict(res, REASON_TEMPFAIL,
		    "%d turn(s) exited 75 (environment broke) in round %d, first turn %d",
		    tempfail, round, out[i].turn);
		rc = -1;
	}
out:
	for (i = 0; i < n; i++) {
		turn_outcome_clear(&out[i]);
		if (envs[i].v)
			env_free(&envs[i]);
		free(dirs[i]);
		free(so[i]);
		free(se[i]);
	}
	free(reqs); free(out); free(ended); free(envs); free(ends); free(dirs);
	free(so); free(se); free(runs);
	return rc;
}

/* An invariant whose SQL is wrong: a config error (common/cfgerr.h). */
static void
inv_error(struct seed_ctx *c, const struct inv_result *ir, const char *err)
{
	const struct cfg	*cfg = c->w->cfg;
	char			 key[64], *prefix;
	const char		*why = err;

	if (ir->failed >= cfg->ninvariants)
		return;
	snprintf(key, sizeof(key), "invariants[%zu].sql", ir->failed);
	/* The key names it: the server's words are enough. */
	prefix = xasprintf("invariant \"%s\": ", cfg->invariants[ir->failed].name);
	if (strncmp(err, prefix, strlen(prefix)) == 0)
		why = err + strlen(prefix);
	if (cfgerr_sql(&c->cfgerr, key, ir->sqlstate, why))
		c->cfgerr.position = ir->position;
	free(prefix);
}

void
wrk_scrub(const struct wrk *w, char *text, size_t size)
{
	conninfo_scrub(text, size, w->conninfo);
}

/*
 * The broken invariants' rows as they leave the worker (report.json, the
 * summary, junit, tickets): each value through wrk_scrub.  A value whose
 * scrubbed text would not fit the buffer is cut there.
 */
static json_t *
rows_scrubbed(const struct wrk *w, json_t *invariants)
{
	json_t	*inv, *row, *v;
	size_t	 i, r, k;
	char	 buf[INV_MAX_VALUE + 64];

	json_array_foreach(invariants, i, inv)
		json_array_foreach(json_object_get(inv, "rows"), r, row)
			json_array_foreach(row, k, v) {
				if (!json_is_string(v))
					continue;
				snprintf(buf, sizeof(buf), "%s", json_string_value(v));
				wrk_scrub(w, buf, sizeof(buf));
				if (strcmp(buf, json_string_value(v)) != 0) {
					json_t	*n;

					buf[utf8_prefix(buf, strlen(buf), sizeof(buf) - 1)] = '\0';
					/* Never the old value: it held a secret. */
					n = json_string(buf);
					json_array_set_new(row, k, n ? n : json_string(CONNINFO_MARK));
				}
			}
	return invariants;
}

/*
 * "col=val, col=val" of row r, one line (a control character is a
 * space), cut to at most max bytes on a character boundary with "…".
 */
static void
row_quote(const struct inv_outcome *o, int r, char *buf, size_t max)
{
	size_t	len = 0, k;
	char	*p;

	buf[0] = '\0';
	for (int col = 0; col < o->ncols && len < max; col++) {
		const char	*v = o->cells[r * o->ncols + col];

		len += (size_t)snprintf(buf + len, max + 1 - len, "%s%s=%s",
		    col ? ", " : "", o->cols[col], v ? v : "NULL");
		if (len > max)
			len = max;
	}
	for (p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	if (len >= max) {
		k = utf8_prefix(buf, max, max - strlen("…"));
		snprintf(buf + k, max + 1 - k, "…");
	}
}

/*
 * The one line every place that shows one line of a failure shows
 * (junit's message, report.json's message, the summary, the CI lines,
 * replay's verdict): the broken invariants, their row counts, and the
 * first row of the first, cut to WRK_ROW_QUOTE bytes and scrubbed of the
 * database's password.  Rows are the system's own data, so they go
 * through wrk_scrub like any text soak quotes from it.
 */
static void
broken_message(const struct wrk *w, const struct inv_result *ir, const char *where,
    struct seed_result *res)
{
	const struct inv_outcome	*first = NULL;
	char				 names[256], row[WRK_ROW_QUOTE + 1];
	size_t				 len = 0, i;

	names[0] = '\0';
	for (i = 0; i < ir->n; i++) {
		const struct inv_outcome	*o = &ir->out[i];

		if (o->nrows == 0)
			continue;
		if (first == NULL)
			first = o;
		if (len < sizeof(names) - 1)
			len += (size_t)snprintf(names + len, sizeof(names) - len,
			    "%s\"%s\" (%lld row%s)", len ? ", " : "", o->inv->name,
			    (long long)o->nrows, o->nrows == 1 ? "" : "s");
	}
	if (len >= sizeof(names) - 1)
		names[utf8_prefix(names, sizeof(names) - 1, sizeof(names) - 2)] = '\0';
	row[0] = '\0';
	if (first != NULL && first->nkept > 0)
		row_quote(first, 0, row, WRK_ROW_QUOTE);
	wrk_scrub(w, row, sizeof(row));
	if (ir->nviolated == 1)
		verdict(res, REASON_INVARIANT, "%s broken %s%s%s", names,
		    where, *row ? "; the first row: " : "", row);
	else if (*row)
		verdict(res, REASON_INVARIANT, "%zu invariants broken %s: "
		    "%s; the first row of \"%s\": %s", ir->nviolated, where, names,
		    first->inv->name, row);
	else
		verdict(res, REASON_INVARIANT, "%zu invariants broken %s: "
		    "%s", ir->nviolated, where, names);
}

static int
check(struct seed_ctx *c, int round, struct seed_result *res, json_t *detail)
{
	struct inv_result	ir = { 0 };
	char			err[ERR_LEN];
	size_t			i;
	int			rc = 0;
	int64_t			t0 = now_ms(), t1;

	rc = inv_check(iso_conn(c->w->iso), c->w->cfg, c->deadline, &ir, err);
	t1 = now_ms();
	/* When the check ran, for report.html's swimlane. */
	json_array_append_new(c->checks, json_pack("[i, I, I, I]", round,
	    (json_int_t)(t0 - c->start), (json_int_t)(t1 - c->start),
	    (json_int_t)(rc == -1 ? -1 : (json_int_t)ir.nviolated)));
	if (rc == -1) {
		timeline(c, "check after round %d: %s", round, err);
		if (now_ms() >= c->deadline)
			deadline_passed(c, res, "in the check after round %d", round);
		else {
			verdict(res, REASON_DB, "after round %d: %s", round, err);
			inv_error(c, &ir, err);
		}
		return -1;
	}
	for (i = 0; i < ir.n; i++) {
		const struct inv_outcome	*o = &ir.out[i];
		size_t				 x = (size_t)(o->inv - c->w->cfg->invariants);

		if (x < c->w->cfg->ninvariants) {
			c->inv_checks[x]++;
			c->inv_broken[x] += o->nrows > 0;
		}
		timeline(c, "check after round %d: \"%s\": %s", round, o->inv->name,
		    o->nrows == 0 ? "holds" : "BROKEN");
		if (o->nrows > 0 && c->w->timeline) {
			/* the rows are the database's: escaped (log.h) */
			for (int k = 0; k < o->ncols; k++) {
				fputs(k ? " | " : "           ", c->w->timeline);
				(void)log_escape_put(c->w->timeline, o->cols[k],
				    strlen(o->cols[k]), 0);
			}
			fputc('\n', c->w->timeline);
			for (int r = 0; r < o->nkept; r++) {
				for (int k = 0; k < o->ncols; k++) {
					const char	*v = o->cells[r * o->ncols + k];
					char		*cell = xstrdup(v ? v : "NULL");

					scrub_text(c->w->scrub, cell);
					fputs(k ? " | " : "           ", c->w->timeline);
					(void)log_escape_put(c->w->timeline, cell,
					    strlen(cell), 0);
					free(cell);
				}
				fputc('\n', c->w->timeline);
			}
			if (o->nrows > o->nkept)
				fprintf(c->w->timeline, "           (%lld rows in all)\n",
				    (long long)o->nrows);	/* more than nkept: plural */
		}
	}
	if (ir.nviolated > 0) {
		char	where[64];

		snprintf(where, sizeof(where), "after round %d", round);
		broken_message(c->w, &ir, where, res);
		json_object_set_new(detail, "invariants", rows_scrubbed(c->w,
		    inv_result_json(&ir)));
		c->round = round;
		rc = -1;
	}
	inv_result_free(&ir);
	return rc;
}

/*
 * The failing seed's workspace is kept (moved under keep_dir/<seed>/);
 * a passing one is removed.  Workspaces live on tmpfs, so keeping one is
 * a copy to the output folder; if even that fails it is left in place and
 * its path reported.  Returns the folder for the full detail (the one
 * holding the kept workspace, or the workspace itself), NULL if not kept.
 */
static char *
dispose_workspace(struct seed_ctx *c, const struct seed_result *res, json_t *detail)
{
	char	*dst = NULL, *parent = NULL, *full, err[ERR_LEN];

	if (c->dir == NULL)
		return NULL;
	if (c->w->keep_all) {
		json_object_set_new(detail, "workspace", json_string(c->dir));
		return xstrdup(c->dir);
	}
	if (res->verdict != VERDICT_FAIL) {
		rm_rf(c->dir);
		return NULL;
	}
	/* The keep root may have a predictable name ($TMPDIR/soak-<run>-failures):
	 * checked before anything under it is removed or made. */
	if (private_dir(c->w->keep_dir, err) == -1) {
		log_warnx("seed %" PRIu64 ": not keeping the workspace: %s", c->seed, err);
		json_object_set_new(detail, "workspace", json_string(c->dir));
		json_object_set_new(detail, "workspace_error", json_string(err));
		return xstrdup(c->dir);
	}
	/* regress hook: a regression's own folder (wrk.h keep_name) */
	parent = c->w->keep_name != NULL ? xasprintf("%s/%s", c->w->keep_dir,
	    c->w->keep_name) : xasprintf("%s/%" PRIu64, c->w->keep_dir, c->seed);
	dst = xasprintf("%s/workspace", parent);
	full = xasprintf("%s/detail.json", parent);
	/* A re-run of the seed replaces what an earlier run kept. */
	rm_rf(dst);
	unlink(full);
	free(full);
	if (mkdir_p(parent, 0755, err) == 0 && move_tree(c->dir, dst, err) == 0) {
		json_object_set_new(detail, "workspace", json_string(dst));
		full = parent;
		parent = NULL;
	} else {
		/* Said as what it is: where it stays, and why it is not there. */
		log_warnx("seed %" PRIu64 ": the workspace stays at %s: %s", c->seed,
		    c->dir, err);
		json_object_set_new(detail, "workspace", json_string(c->dir));
		json_object_set_new(detail, "workspace_error", json_string(err));
		full = xstrdup(c->dir);
	}
	free(dst);
	free(parent);
	return full;
}

/*
 * What the seed exercised (wrk.h's "coverage"), whatever its verdict: its
 * proxies' whole trace counted before the workspace holding it goes, and
 * its invariants' checks.  The scheduled proxies' whole schedules go to
 * *sched, for the marker of a cut trace (NULL: none).  A trace soak cannot
 * read back is soak's own error, never a seed without exchanges: unread
 * (ERR_LEN) says why, and the coverage says "unread" instead of counts
 * (coordinator/coverage.h); "" when the trace read, or there was none.
 */
static json_t *
seed_coverage(const struct seed_ctx *c, json_t **sched, char *unread)
{
	const struct cfg	*cfg = c->w->cfg;
	struct proxy_cov	*pc = proxy_cov_new();
	json_t			*cov = json_object(), *invs;
	size_t			 i;

	*sched = NULL;
	unread[0] = '\0';
	if (c->trace_path != NULL && access(c->trace_path, F_OK) == 0) {
		if (proxy_cov_file(pc, c->trace_path, unread) == 0) {
			json_object_set_new(cov, "proxies", proxy_cov_json(pc));
			*sched = proxy_cov_schedule(pc);
		} else {
			log_warnx("seed %" PRIu64 ": soak cannot read its own "
			    "fault trace: %s", c->seed, unread);
			json_object_set_new(cov, "unread", json_string(unread));
		}
	}
	proxy_cov_free(pc);
	if (cfg->ninvariants > 0) {
		invs = json_array();
		for (i = 0; i < cfg->ninvariants; i++)
			json_array_append_new(invs, json_pack("[i, i]",
			    (int)c->inv_checks[i], (int)c->inv_broken[i]));
		json_object_set_new(cov, "invariants", invs);
	}
	return cov;
}

/*
 * What the seed's schedules did not control, for replay's timeline
 * (docs/turns.md "What a service gets"): a service's exchanges that
 * passed a schedule unheld, and a schedule that held a service's requests
 * one at a time (the coordinator warns of both over the run).
 */
static void
seam_said(struct seed_ctx *c, const json_t *cov)
{
	const char	*name, *svc;
	json_t		*p, *v;

	json_object_foreach(json_object_get(cov, "proxies"), name, p) {
		json_object_foreach(json_object_get(p, "bypassed"), svc, v)
			timeline(c, "proxy %s: %lld exchange%s of service %s bypassed "
			    "the schedule", name, (long long)json_integer_value(v),
			    json_integer_value(v) == 1 ? "" : "s", svc);
		if (json_integer_value(json_object_get(p, "serialized")) > 0)
			timeline(c, "proxy %s: its schedule held %lld request%s until "
			    "another's reply: the service behind it ran one at a time",
			    name, (long long)json_integer_value(json_object_get(p,
			    "serialized")), json_integer_value(json_object_get(p,
			    "serialized")) == 1 ? "" : "s");
	}
}

/*
 * The seed's plan (docs/plan.md), made of its whole fault trace, into the
 * detail ("plan", an object: the coordinator writes failures/<seed>/
 * plan.json of it).  A plan the trace cannot make (a trace cut at
 * PROXY_TRACE_CAP records, a soak too old) is said in the log, not fatal.
 */
static void
seed_plan(struct seed_ctx *c, const struct seed_result *res, json_t *detail)
{
	const struct cfg	*cfg = c->w->cfg;
	struct plan		 p;
	json_error_t		 je;
	json_t			*o;
	char			*trace, *text, err[ERR_LEN];
	size_t			 len;

	if (access(c->trace_path, F_OK) != 0)
		return;
	if ((trace = read_file(c->trace_path, WRK_TRACE_WHOLE_MAX, &len, err)) == NULL) {
		log_warnx("seed %" PRIu64 ": no plan: %s", c->seed, err);
		return;
	}
	if (plan_from_trace(trace, len, c->seed, cfg->name, cfg->turns, cfg->rounds,
	    &p, err) == -1) {
		log_warnx("seed %" PRIu64 ": no plan of its trace: %s", c->seed, err);
		free(trace);
		return;
	}
	free(trace);
	/* a plan's own runs stay the runs of its replay */
	if (c->w->plan != NULL && c->w->plan->runs != NULL) {
		int	r, t;

		/* pair by pair: the plan may have fewer turns or rounds than
		 * the config (plan_fits), and so its runs fewer cells */
		p.runs = xcalloc((size_t)p.rounds * (size_t)p.turns, sizeof(*p.runs));
		for (r = 0; r < p.rounds; r++)
			for (t = 0; t < p.turns; t++)
				p.runs[(size_t)r * (size_t)p.turns + (size_t)t] =
				    plan_runs(c->w->plan, r, t);
	}
	if (res->verdict == VERDICT_FAIL)
		p.message = xstrdup(res->message);
	text = plan_dump(&p);
	plan_free(&p);
	if ((o = json_loads(text, 0, &je)) != NULL)
		json_object_set_new(detail, "plan", o);
	free(text);
}

/*
 * The detail cut to fit a message (worker/detail.h), with the full one
 * written to full_dir/detail.json when anything was left out.
 */
static json_t *
bound_detail(uint64_t seed, json_t *detail, const struct detail_trace *trace,
    const char *full_dir)
{
	json_t	*sent = detail_trim(detail, trace, full_dir);
	char	*path;

	if (full_dir != NULL && json_object_get(sent, "truncated") != NULL) {
		path = xasprintf("%s/detail.json", full_dir);
		if (json_dump_file(detail, path, JSON_INDENT(2)) == -1)
			log_warnx("seed %" PRIu64 ": cannot write %s", seed, path);
		free(path);
	}
	json_decref(detail);
	return sent;
}

/*
 * The seed's proxy set, and the services that go through the seam started
 * with their listeners of it (docs/turns.md "What a service gets"), before
 * the setup command, which may call them.  dry (soak check's dry seed):
 * only when there is such a service, to see it start.  -1 with the verdict
 * in res.
 */
static int
seam_open(struct seed_ctx *c, bool dry, struct seed_result *res)
{
	struct wrk		 *w = c->w;
	const struct cfg	 *cfg = w->cfg;
	const char *const	 *svcs;
	struct wrk_seam		  seam;
	char			  err[ERR_LEN];
	size_t			  nsvc;

	svcs = wrk_seam_services(w, &nsvc);
	if (cfg->nproxies == 0 || (dry && nsvc == 0))
		return 0;
	c->trace_path = xasprintf("%s/trace.jsonl", c->dir);
	c->ups = proxy_upstreams(w);
	if ((c->proxies = proxy_set_open_cfg(cfg, c->ups, w->conninfo, cfg->turns,
	    svcs, nsvc, c->seed, w->plan, w->then_seed, c->trace_path,
	    err)) == NULL) {
		verdict(res, REASON_PROXY, "%s", err);
		return -1;
	}
	/* every turn's process is told (turn_started): until it is, a
	 * schedule waits for it */
	proxy_set_actors(c->proxies);
	if (nsvc == 0)
		return 0;
	seam = (struct wrk_seam){ .ps = c->proxies, .turns = cfg->turns,
	    .seed = c->seed, .dir = c->dir };
	/* up from here: stopped at the seed's end whatever started */
	c->svc_up = true;
	if (wrk_services_seed_start(w, &seam, c->deadline, &c->svc_start_ms,
	    err) == -1) {
		timeline(c, "services through the seam: %s", err);
		if (now_ms() >= c->deadline)
			deadline_passed(c, res, "while its services started");
		else
			verdict(res, REASON_SERVICE, "%s", err);
		/* a program that cannot start here: no retry mends it */
		if (w->open_cfgerr.kind != CFGERR_NONE) {
			c->cfgerr = w->open_cfgerr;
			w->open_cfgerr.kind = CFGERR_NONE;
		}
		return -1;
	}
	timeline(c, "services through the seam: %zu started in %lld ms", nsvc,
	    (long long)c->svc_start_ms);
	return 0;
}

/*
 * The seam services' seed is over (after its last round's settle, before
 * that round's check, or wherever the seed ended): stopped, their whole
 * process groups, so the check judges a database they no longer write and
 * no pool's connection crosses into the next seed.  One that had died
 * under the seed makes it infra/service, as a direct one does; -1 then.
 */
static int
seam_stop(struct seed_ctx *c, struct seed_result *res)
{
	char	why[ERR_LEN];
	bool	died;

	if (!c->svc_up)
		return 0;
	c->svc_up = false;
	why[0] = '\0';
	wrk_services_seed_stop(c->w, &died, why, sizeof(why), &c->svc_stop_ms);
	timeline(c, "services through the seam: stopped in %lld ms%s%s",
	    (long long)c->svc_stop_ms, died ? "; " : "", why);
	if (!died || res->verdict == VERDICT_INFRA)
		return 0;
	verdict(res, REASON_SERVICE, "%s", why);
	return -1;
}

/* Both halves of the seed's seam closed: its services, then its proxies. */
static void
seam_close(struct seed_ctx *c, struct seed_result *res)
{
	(void)seam_stop(c, res);
	if (c->proxies) {
		c->scheduled = proxy_set_scheduled(c->proxies);
		proxy_set_waits(c->proxies, &c->waits);
		proxy_set_close(c->proxies);
		c->proxies = NULL;
	}
}

/*
 * What comes before the first round: the services checked, the schema
 * reset, the seed's workspace, its proxies and the services through them,
 * the setup command.  -1 with the verdict in res when one of them failed.
 */
static int
seed_begin(struct seed_ctx *c, bool dry, struct seed_result *res)
{
	struct wrk		*w = c->w;
	const struct cfg	*cfg = w->cfg;
	char			 err[ERR_LEN];
	bool			 died;

	set_state(c, RUN_RESET, -1);
	if (wrk_services_check(w, c->deadline, &died, err) == -1) {
		verdict(res, REASON_SERVICE, "%s", err);
		return -1;
	}
	if (iso_reset(w->iso, c->deadline, err) == -1) {
		timeline(c, "reset schema %s: %s", iso_schema(w->iso), err);
		if (now_ms() >= c->deadline)
			deadline_passed(c, res, "in the schema reset");
		else {
			verdict(res, REASON_DB, "%s", err);
			cfgerr_sql(&c->cfgerr, "database.schema",
			    iso_ddl_sqlstate(w->iso), err);
		}
		return -1;
	}
	timeline(c, "reset schema %s (%s)", iso_schema(w->iso),
	    cfg->db_reset == CFG_RESET_TRUNCATE ? "truncate" : "recreate");
	if ((c->dir = iso_seed_dir(w->iso, c->seed, err)) == NULL) {
		verdict(res, REASON_EXEC, "%s", err);
		return -1;
	}
	if (seam_open(c, dry, res) == -1)
		return -1;
	if (cfg->setup != NULL) {
		set_state(c, RUN_SETUP, -1);
		if (run_setup(c, res) == -1)
			return -1;
	}
	return 0;
}

/*
 * When the seed's parts ran, for report.html (docs/report.md "What report.html reads"):
 * the seed's start by the worker's wall clock, each invariant check, and
 * for a pass (whose detail has no "turns") each turn's start, end and
 * status as [round, turn, start_ms, end_ms, status], within
 * DETAIL_TURNS_MAX bytes, what did not fit counted in "more_turns".
 * Under a schedule, "waits": what its schedules waited for their actors
 * (docs/report.md; the coordinator keeps it per seed and sums it,
 * coordinator/coverage.h).
 */
static json_t *
timing_json(struct seed_ctx *c, bool pass)
{
	json_t	*t = json_pack("{s:I, s:O}", "started_at_ms", (json_int_t)c->start_wall,
	    "checks", c->checks), *turns, *o, *row;
	size_t	 i, cost = 0, more = 0;

	/* a schedule that took no step names its first proxy */
	for (i = 0; c->scheduled && c->waits.max_proxy[0] == '\0' &&
	    i < c->w->cfg->nproxies; i++)
		if (c->w->cfg->proxies[i].schedule.enabled)
			snprintf(c->waits.max_proxy, sizeof(c->waits.max_proxy), "%s",
			    c->w->cfg->proxies[i].name);
	if (c->scheduled)
		json_object_set_new(t, "waits", json_pack("{s:I, s:I, s:I, s:I, s:s}",
		    "ms", (json_int_t)c->waits.wait_ms,
		    "steps", (json_int_t)c->waits.steps,
		    "max_ms", (json_int_t)c->waits.max_ms,
		    "max_step", (json_int_t)c->waits.max_step,
		    "max_proxy", c->waits.max_proxy));
	if (!pass)
		return t;
	turns = json_array();
	json_array_foreach(c->turns, i, o) {
		row = json_pack("[O, O, O, O, O]", json_object_get(o, "round"),
		    json_object_get(o, "turn"), json_object_get(o, "start_ms"),
		    json_object_get(o, "end_ms"), json_object_get(o, "status"));
		if (row == NULL || more > 0 ||
		    (cost += detail_cost(row) + 1) > DETAIL_TURNS_MAX) {
			more++;
			json_decref(row);
			continue;
		}
		json_array_append_new(turns, row);
	}
	json_object_set_new(t, "turns", turns);
	if (more > 0)
		json_object_set_new(t, "more_turns", json_integer((json_int_t)more));
	return t;
}

int
wrk_dry_seed(struct wrk *w, uint64_t seed, struct seed_result *res,
    struct cfgerr *cfgerr)
{
	struct seed_ctx	c = { .w = w, .seed = seed, .round = -1 };
	int		rc;

	memset(res, 0, sizeof(*res));
	c.start = now_ms();
	c.deadline = c.start + w->cfg->seed_timeout_ms;
	atomic_store(&w->seed_deadline_ms, c.deadline);
	c.turns = json_array();
	c.state = RUN_VERDICT;
	rc = seed_begin(&c, true, res);
	seam_close(&c, res);
	set_state(&c, RUN_VERDICT, -1);
	atomic_store(&w->seed_deadline_ms, 0);
	*cfgerr = c.cfgerr;
	if (c.dir != NULL)
		rm_rf(c.dir);
	free(c.dir);
	free(c.trace_path);
	strv_free(c.ups);
	/* The setup's outcome, with its stderr tail: what failed, in its words. */
	scrub_text(w->scrub, res->message);
	res->detail = json_pack("{s:s, s:o}", "message", res->message,
	    "turns", c.turns);
	scrub_json(w->scrub, res->detail);
	return rc;
}

/*
 * when: steps (docs/config.md): the invariants that say so, checked on the
 * proxy's thread between steps at which no transaction of its turns is
 * open (fault-proxy/gate.h), on a connection of their own to the seed's
 * schema.  What the first check that broke found is kept for the seed's
 * thread, which reads it once the round's turns are over.
 */
struct step_check {
	struct seed_ctx		*c;
	struct cfg		 cfg;	/* a shallow copy: those invariants alone */
	PGconn			*conn;
	pthread_mutex_t		 mu;
	int			 state;	/* 0 held, 1 broke, -1 could not run */
	int			 round;
	uint32_t		 step;
	struct inv_result	 ir;	/* state 1: what broke */
	uint32_t		 told;	/* checks said in the timeline so far */
	char			 err[ERR_LEN];
};

static int
step_check_fn(void *arg, int round, uint32_t step)
{
	struct step_check	*sc = arg;
	struct inv_result	 ir = { 0 };
	PGresult		*r;
	char			 err[ERR_LEN], *q, *sql;
	bool			 expired = false;
	int			 rc;

	if (sc->conn == NULL) {
		if ((sc->conn = iso_pq_connect(iso_conninfo(sc->c->w->iso),
		    sc->c->deadline, err)) == NULL)
			goto bad;
		q = PQescapeIdentifier(sc->conn, iso_schema(sc->c->w->iso),
		    strlen(iso_schema(sc->c->w->iso)));
		sql = xasprintf("SET search_path TO %s", q ? q : "public");
		PQfreemem(q);
		r = iso_pq_exec(sc->conn, sql, sc->c->deadline, &expired);
		free(sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			snprintf(err, sizeof(err), "the steps' check connection: %s",
			    expired ? "no answer before the seed's deadline" :
			    PQerrorMessage(sc->conn));
			PQclear(r);
			goto bad;
		}
		PQclear(r);
	}
	rc = inv_check(sc->conn, &sc->cfg, sc->c->deadline, &ir, err);
	if (rc == -1) {
		inv_result_free(&ir);
		goto bad;
	}
	pthread_mutex_lock(&sc->mu);
	if (ir.nviolated > 0 && sc->state == 0) {
		sc->state = 1;
		sc->round = round;
		sc->step = step;
		sc->ir = ir;
		memset(&ir, 0, sizeof(ir));
	}
	rc = sc->state;
	pthread_mutex_unlock(&sc->mu);
	inv_result_free(&ir);
	return rc;
bad:
	pthread_mutex_lock(&sc->mu);
	if (sc->state == 0) {
		sc->state = -1;
		sc->round = round;
		sc->step = step;
		snprintf(sc->err, sizeof(sc->err), "%s", err);
	}
	pthread_mutex_unlock(&sc->mu);
	return -1;
}

/* The steps invariants of cfg, or 0 (then sc is not set up). */
static size_t
step_check_open(struct step_check *sc, struct seed_ctx *c)
{
	const struct cfg	*cfg = c->w->cfg;
	size_t			 i, n = 0;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < cfg->ninvariants; i++)
		n += cfg->invariants[i].steps;
	if (n == 0)
		return 0;
	sc->c = c;
	sc->cfg = *cfg;
	sc->cfg.invariants = xcalloc(n, sizeof(*sc->cfg.invariants));
	sc->cfg.ninvariants = 0;
	for (i = 0; i < cfg->ninvariants; i++)
		if (cfg->invariants[i].steps)
			sc->cfg.invariants[sc->cfg.ninvariants++] = cfg->invariants[i];
	pthread_mutex_init(&sc->mu, NULL);
	return n;
}

static void
step_check_close(struct step_check *sc)
{
	if (sc->c == NULL)
		return;
	if (sc->conn != NULL)
		PQfinish(sc->conn);
	inv_result_free(&sc->ir);
	free(sc->cfg.invariants);
	pthread_mutex_destroy(&sc->mu);
	memset(sc, 0, sizeof(*sc));
}

/*
 * After round's turns: a step check that broke is the seed's verdict (the
 * invariant, "between steps, after step N of round R"), one that could not
 * run is infra/db; -1 then, else 0.
 */
static int
step_check_verdict(struct step_check *sc, struct seed_ctx *c, int round,
    struct seed_result *res, json_t *detail)
{
	char	where[96];
	size_t	i, x;
	int	st;

	if (sc->c == NULL)
		return 0;
	pthread_mutex_lock(&sc->mu);
	st = sc->state;
	pthread_mutex_unlock(&sc->mu);
	{
		/* the cost, said: one invariant transaction per check */
		uint32_t	n = proxy_set_step_checks(c->proxies);

		timeline(c, "checks between steps in round %d: %" PRIu32 "%s", round,
		    n - sc->told, st == 0 ? ", every invariant held" : "");
		json_object_set_new(detail, "step_checks", json_integer(n));
		sc->told = n;
	}
	if (st == 0)
		return 0;
	if (st == -1) {
		verdict(res, REASON_DB, "the check between steps of round %d (after "
		    "step %" PRIu32 "): %s", sc->round, sc->step, sc->err);
		c->round = sc->round;
		return -1;
	}
	snprintf(where, sizeof(where), "between steps, after step %" PRIu32
	    " of round %d", sc->step, sc->round);
	for (i = 0; i < sc->ir.n; i++) {
		const struct inv_outcome	*o = &sc->ir.out[i];

		for (x = 0; x < c->w->cfg->ninvariants; x++)
			if (strcmp(c->w->cfg->invariants[x].name, o->inv->name) == 0) {
				c->inv_checks[x]++;	/* checked, if not after a round */
				c->inv_broken[x] += o->nrows > 0;
			}
		timeline(c, "check %s: \"%s\": %s", where, o->inv->name,
		    o->nrows == 0 ? "holds" : "BROKEN");
	}
	broken_message(c->w, &sc->ir, where, res);
	json_object_set_new(detail, "invariants", rows_scrubbed(c->w,
	    inv_result_json(&sc->ir)));
	json_object_set_new(detail, "broken_at_step", json_pack("{s:i,s:I}", "round",
	    sc->round, "step", (json_int_t)sc->step));
	(void)round;
	c->round = sc->round;
	return -1;
}

void
wrk_run_seed(struct wrk *w, uint64_t seed, uint32_t attempt, struct seed_result *res)
{
	const struct cfg	 *cfg = w->cfg;
	struct seed_ctx		  c = { .w = w, .seed = seed, .round = -1,
				    .idle_round = -1 };
	json_t			 *detail = json_object();
	struct detail_trace	  trace = { 0 };
	char			  err[ERR_LEN], *full_dir, pass[64];
	json_t			 *sched = NULL, *cov;
	struct step_check	  sc;
	bool			  died, traced = false;
	int			  round, last;

	memset(res, 0, sizeof(*res));
	res->reason = REASON_NONE;
	/* One deadline for the whole seed; every phase gets what is left. */
	c.start = now_ms();
	c.start_wall = wall_ms();
	c.deadline = c.start + seed_timeout(w);
	atomic_store(&w->seed_deadline_ms, c.deadline);
	c.turns = json_array();
	c.checks = json_array();
	c.state = RUN_VERDICT;
	c.inv_checks = xcalloc(cfg->ninvariants + 1, sizeof(*c.inv_checks));
	c.inv_broken = xcalloc(cfg->ninvariants + 1, sizeof(*c.inv_broken));
	memset(&sc, 0, sizeof(sc));

	if (seed_begin(&c, false, res) == -1)
		goto done;
	snprintf(c.epoch, sizeof(c.epoch), "%s", iso_epoch(w->iso));
	if (proxy_set_scheduled(c.proxies) && step_check_open(&sc, &c) > 0)
		proxy_set_step_check(c.proxies, step_check_fn, &sc);
	/* the last round that runs: its check comes after the seam services
	 * stop */
	for (last = cfg->rounds - 1; last > 0 && w->plan != NULL &&
	    plan_turns_in(w->plan, last) == 0; last--)
		;
	for (round = 0; round < cfg->rounds; round++) {
		/* a round a plan left no turn of is not run, nor checked */
		if (w->plan != NULL && plan_turns_in(w->plan, round) == 0)
			continue;
		set_state(&c, RUN_ROUND, round);
		if (run_round(&c, round, res) == -1) {
			c.round = round;
			goto done;
		}
		/* A duplicate delivery may still be on its way to the upstream
		 * after the turn that caused it has exited: let it land first,
		 * within WRK_SETTLE_MS and the seed's deadline. */
		if (c.proxies && proxy_set_settle(c.proxies, ms_until(
		    deadline_within(c.deadline, WRK_SETTLE_MS))) == -1) {
			if (now_ms() >= c.deadline) {
				deadline_passed(&c, res, "while the proxies settled "
				    "after round %d", round);
				c.round = round;
				goto done;
			}
			log_warnx("seed %" PRIu64 ": proxy connections still open %d s "
			    "after round %d; checking anyway", seed,
			    WRK_SETTLE_MS / 1000, round);
		}
		/* A replayed model request its cassette had no answer for got
		 * an error, not the real API (docs/models.md): what the turns
		 * did after it is not the recording's. */
		if (proxy_set_missed(c.proxies, c.diverged, sizeof(c.diverged))) {
			verdict(res, REASON_CASSETTE, "%s", c.diverged);
			timeline(&c, "%s", c.diverged);
			c.diverged[0] = '\0';
			c.round = round;
			goto done;
		}
		/* A plan whose next step could not come tested nothing
		 * (docs/plan.md); with --then seed the seed's scheduler went
		 * on, and the invariants judge. */
		if (proxy_set_diverged(c.proxies, c.diverged, sizeof(c.diverged)) &&
		    !w->then_seed) {
			verdict(res, REASON_DIVERGED, "%s", c.diverged);
			/* said once: replay prints it with the plan's account */
			timeline(&c, "the plan diverged (below)");
			c.round = round;
			goto done;
		}
		if (step_check_verdict(&sc, &c, round, res, detail) == -1)
			goto done;
		/* the seam services' seed is over: the last check judges what
		 * they left, not what they might still write */
		if (round == last && seam_stop(&c, res) == -1) {
			c.round = round;
			goto done;
		}
		set_state(&c, RUN_CHECK, round);
		if (check(&c, round, res, detail) == -1)
			goto done;
	}
	if (c.crashed > 0)
		verdict(res, REASON_CRASH, "%d turn(s) died of a signal", c.crashed);
	else if (c.idle_round >= 0 && !cfg_guard_allows_idle_round(cfg)) {
		verdict(res, REASON_GUARD, "no turn of round %d succeeded (%d of %d "
		    "turns ok in the seed); %s. A round in which no turn succeeded "
		    "tested nothing; guard: min_ok_turns: 0 lets such a seed pass",
		    c.idle_round, c.ok_turns, c.total_turns, c.idle_why);
		c.round = c.idle_round;
	} else if (c.ok_turns < cfg_guard_floor_of(cfg, c.total_turns))
		verdict(res, REASON_GUARD,
		    "only %d of %d turns succeeded; the guard wants at least %lld",
		    c.ok_turns, c.total_turns,
		    (long long)cfg_guard_floor_of(cfg, c.total_turns));
	else if (c.idle_round >= 0) {
		verdict(res, REASON_NONE, "%d of %d turns ok; no turn of round %d "
		    "succeeded, which guard: min_ok_turns: 0 allows (%s)", c.ok_turns,
		    c.total_turns, c.idle_round, c.idle_why);
		json_object_set_new(detail, "idle_round", json_integer(c.idle_round));
	} else
		verdict(res, REASON_NONE, "%s", verdict_pass_words(pass, sizeof(pass),
		    c.ok_turns, c.total_turns));
done:
	set_state(&c, RUN_VERDICT, -1);
	if (res->reason == REASON_GUARD || res->reason == REASON_HANG)
		outage_check(&c, res);
	seam_close(&c, res);
	step_check_close(&sc);	/* after the proxies' thread is gone */
	/* A service that died under the seed makes the seed unreliable,
	 * and one that then would not come back says why. */
	if (res->verdict != VERDICT_INFRA && cfg->nservices > 0) {
		if (wrk_services_check(w, INT64_MAX, &died, err) == -1)
			verdict(res, REASON_SERVICE, "a service died during the "
			    "seed and did not come back: %s", err);
		else if (died)
			verdict(res, REASON_SERVICE, "a service died during the seed");
	}
	/* What the trace says, before the verdict is written: a trace soak
	 * cannot read is soak's error (docs/design.md "Verdicts"), not a
	 * pass with no exchange.  A failure keeps its verdict: the invariant
	 * broke whatever soak can read; its detail says the trace is lost. */
	cov = seed_coverage(&c, &sched, err);
	if (err[0] != '\0') {
		if (res->verdict == VERDICT_PASS)
			verdict(res, REASON_TRACE, "soak could not read its own fault "
			    "trace of the seed (%s): its exchanges, coverage and plan "
			    "are lost; this is soak's error, not the system's", err);
		json_object_set_new(detail, "trace_error", json_string(err));
	}
	res->duration_ms = now_ms() - c.start;
	atomic_store(&w->seed_deadline_ms, 0);
	/* Before anything of the seed is written or sent (common/scrub.h). */
	scrub_text(w->scrub, res->message);
	json_object_set_new(detail, "message", json_string(res->message));
	json_object_set_new(detail, "round", c.round >= 0 ? json_integer(c.round) : json_null());
	json_object_set_new(detail, "ok_turns", json_integer(c.ok_turns));
	json_object_set_new(detail, "total_turns", json_integer(c.total_turns));
	if (res->verdict == VERDICT_INFRA && c.cfgerr.kind != CFGERR_NONE)
		json_object_set_new(detail, "config_error", cfgerr_json(&c.cfgerr));
	json_object_set_new(detail, "timing", timing_json(&c, res->verdict == VERDICT_PASS));
	if (res->verdict != VERDICT_PASS) {
		json_object_set_new(detail, "turns", c.turns);
		c.turns = NULL;
	}
	json_object_set_new(detail, "coverage", cov);
	seam_said(&c, cov);
	if (c.diverged[0] != '\0')
		json_object_set_new(detail, "diverged", json_string(c.diverged));
	/* Every failing seed's decisions as a plan (docs/plan.md), from the
	 * whole trace before its workspace goes; any seed's for --save-plan. */
	if ((res->verdict == VERDICT_FAIL || w->save_plan) && c.trace_path != NULL)
		seed_plan(&c, res, detail);
	/* No trace file (the proxies never opened) is no trace.  A later
	 * attempt (a confirming re-run) ships its trace even when it passed:
	 * the coordinator says where its schedule left the first one's. */
	if ((res->verdict != VERDICT_PASS || attempt > 1) && c.trace_path &&
	    detail_trace_read(c.trace_path, DETAIL_TRACE_MAX, &trace, err) == 0) {
		trace.schedule = json_incref(sched);
		traced = true;
	}
	/* replay compares its whole trace, never the detail's first lines */
	if (w->whole_trace && c.trace_path && access(c.trace_path, F_OK) == 0 &&
	    (res->trace = read_file(c.trace_path, WRK_TRACE_WHOLE_MAX,
	    &res->trace_len, err)) == NULL)
		log_warnx("seed %" PRIu64 ": its whole fault trace: %s", seed, err);
	json_decref(sched);
	timeline(&c, "verdict: %s%s%s — %s", msg_verdict_name(res->verdict),
	    res->reason != REASON_NONE ? " " : "", reason_name(res->reason),
	    res->reason == REASON_DIVERGED ? reason_what(res->reason) : res->message);
	full_dir = dispose_workspace(&c, res, detail);
	/* Rows, tails, messages: the full detail (detail.json) and what is sent,
	 * with the trace's lines. */
	scrub_json(w->scrub, detail);
	res->detail = bound_detail(seed, detail, traced ? &trace : NULL, full_dir);
	scrub_json(w->scrub, res->detail);
	detail_trace_free(&trace);
	free(full_dir);
	json_decref(c.turns);
	json_decref(c.checks);
	strv_free(c.ups);
	free(c.trace_path);
	free(c.dir);
	free(c.inv_checks);
	free(c.inv_broken);
}

void
seed_result_clear(struct seed_result *res)
{
	if (res == NULL)
		return;
	json_decref(res->detail);
	res->detail = NULL;
	free(res->trace);
	res->trace = NULL;
	res->trace_len = 0;
}
