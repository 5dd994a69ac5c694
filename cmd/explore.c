/*
 * `soak explore CONFIG --seed N`: every interleaving of one seed's scenario
 * at its scheduled proxy, up to a bound on preemptions (docs/explore.md).
 *
 * The search, its bound, its reduction and what "exact" and "complete"
 * mean are the explorer's (worker/explore.h); this file is the command:
 * its options, its output folder and journal, the seed's own run, the
 * fleet driver of --listen (leases through coordinator/coord.h), and the
 * result said as what it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "common/auth.h"
#include "common/bundle.h"
#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/plan.h"
#include "common/seed.h"
#include "common/self.h"
#include "common/soak.h"
#include "common/tlsconf.h"
#include "common/units.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/coord.h"
#include "coordinator/fingerprint.h"
#include "coordinator/report.h"
#include "coordinator/server.h"
#include "isolation/iso.h"
#include "worker/explore.h"
#include "worker/wrk.h"
#include "worker/xexec.h"

#define XP_DEFAULT_P		2

/* The command line. */
struct xargs {
	const char		*config, *seedarg, *turnsarg, *out, *resume, *listen;
	bool			 outarg, verbose, no_reduce, inexact;
	struct auth_opts	 auth;
	uint64_t		 seed, budget_n;
	int64_t			 budget_ms;
	long			 bound, only_round, nworkers;
};

/* One exploration's state, as the command holds it. */
struct xcmd {
	struct xargs		*a;
	struct cfg		 cfg;
	const char		*proxy;
	bool			*runs;		/* --turns: rounds x turns, or NULL */
	uint64_t		 turns;		/* bit t: turn t runs */
	bool			 reduce;
	char			 outabs[PATH_MAX];
	int			 dfd, failing_dfd;
	FILE			*journal;
	json_t			*replay;	/* --resume: the journal's lines */
	struct plan		 base;
	struct explore		*x;
	const char		*stopped;
	int64_t			 t0;
	uint32_t		 from;		/* the worker whose record is taken */
};

static volatile sig_atomic_t	xp_stop;

static void
xp_on_signal(int sig)
{
	xp_stop = sig;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak explore CONFIG --seed N [--turns LIST] [--rounds R]\n"
	    "                    [--preemptions P] [--budget DUR|COUNT] [--workers N]\n"
	    "                    [--out DIR | --resume DIR] [--no-reduce] [--inexact] [-v]\n"
	    "                    [--listen URL [--secret-file FILE] [--insecure]\n"
	    "                     [--tls-cert PEM --tls-client-ca PEM]]\n"
	    "\n"
	    "Runs one seed's scenario again and again, each time in another order at\n"
	    "its scheduled proxy, until every order with at most P preemptions has run\n"
	    "(depth first; a preemption passes over a turn whose next statement is\n"
	    "waiting).  Every execution starts from the seed's start: the schema reset,\n"
	    "fresh turns with the seed's turn seeds, the seed's faults.  Says complete\n"
	    "only when the tree was exhausted for the bound and every execution was\n"
	    "exact (the order it ran was the one it was given); otherwise incomplete,\n"
	    "with what made it so counted.  Every failing schedule is written as a\n"
	    "plan (soak replay --plan runs it).\n"
	    "\n"
	    "  --seed N         the seed whose turns, turn seeds and faults are explored\n"
	    "  --turns LIST     only these turns run (\"0,1\"; the others are never\n"
	    "                   started); default every turn of the config\n"
	    "  --preemptions P  the bound (default %d; -1: none, every interleaving)\n"
	    "  --rounds R       explore round R only: the rounds before it run once as\n"
	    "                   the seed ran them, the ones after as they come\n"
	    "  --budget B       stop after B executions (a number) or after B of\n"
	    "                   wall time (30s, 5m); the result is then incomplete\n"
	    "  --workers N      N executions at a time, each in a process of its own\n"
	    "                   with its own schema (default 1)\n"
	    "  --out DIR        explore.json and failing/K.plan.json go here (default\n"
	    "                   ./soak-explore)\n"
	    "  --resume DIR     go on with the exploration DIR/explore.jsonl journals\n"
	    "                   (the same config, seed and options): what it took is\n"
	    "                   taken again, not run; the rest runs\n"
	    "  --listen URL     run no execution here: lease them one at a time to the\n"
	    "                   workers that connect (soak worker --connect URL), as\n"
	    "                   soak coordinator does; a lost worker's goes to another\n"
	    "  --secret-file F  with --listen: the shared secret (else SOAK_SECRET)\n"
	    "  --insecure       with --listen: what soak coordinator --insecure allows\n"
	    "  --tls-cert PEM, --tls-client-ca PEM\n"
	    "                   with --listen tls+tcp://: as for soak coordinator\n"
	    "  --no-reduce      run every schedule, equivalent or not (without a\n"
	    "                   bound, schedules that differ only in the order of\n"
	    "                   steps that commute -- BEGIN, SET, two plain reads --\n"
	    "                   are otherwise pruned by sleep sets; with a bound\n"
	    "                   nothing is)\n"
	    "  --inexact        explore even when the seed's own run shows that no\n"
	    "                   execution can be exact (a turn's connections in\n"
	    "                   flight at once, a service the schedule serializes):\n"
	    "                   the failures found are real, the result incomplete\n"
	    "  -v, --verbose    one line per execution, and the log\n"
	    "\n"
	    "The config must have exactly one proxy with a schedule.\n"
	    "\n"
	    "Exit status: 1 a failing schedule was found; 0 complete and none failed;\n"
	    "2 incomplete (budget, Ctrl-C, executions that were not exact, diverged\n"
	    "or broke, or nothing to explore) and none failed: never a pass; 64\n"
	    "usage; 78 config error; 125 the seed itself could not run (infra).\n"
	    SOAK_MANUAL, XP_DEFAULT_P);
}

/* A whole number from lo to hi of an option; -1 with a message. */
static int
opt_long(const char *opt, const char *arg, long lo, long hi, const char *what,
    long *v)
{
	char	*end;

	errno = 0;
	*v = strtol(arg, &end, 10);
	if (errno != 0 || *end != '\0' || end == arg || *v < lo || *v > hi) {
		fprintf(stderr, "soak explore: %s takes %s, not \"%s\"\n", opt, what, arg);
		return -1;
	}
	return 0;
}

/* The options into a; 0, or the exit status to leave with (-1: help). */
static int
parse_args(int argc, char **argv, struct xargs *a)
{
	static const struct option longopts[] = {
		{ "seed",	 required_argument, NULL, 's' },
		{ "turns",	 required_argument, NULL, 't' },
		{ "preemptions", required_argument, NULL, 'p' },
		{ "rounds",	 required_argument, NULL, 'r' },
		{ "budget",	 required_argument, NULL, 'b' },
		{ "workers",	 required_argument, NULL, 'w' },
		{ "out",	 required_argument, NULL, 'o' },
		{ "resume",	 required_argument, NULL, 'S' },
		{ "listen",	 required_argument, NULL, 'L' },
		{ "secret-file", required_argument, NULL, 'F' },
		{ "insecure",	 no_argument,	    NULL, 'I' },
		{ "tls-cert",	 required_argument, NULL, 'C' },
		{ "tls-client-ca", required_argument, NULL, 'A' },
		{ "no-reduce",	 no_argument,	    NULL, 'R' },
		{ "inexact",	 no_argument,	    NULL, 'X' },
		{ "verbose",	 no_argument,	    NULL, 'v' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	err[ERR_LEN];
	int	ch;

	a->out = "soak-explore";
	a->bound = XP_DEFAULT_P;
	a->only_round = -1;
	a->nworkers = 1;
	while ((ch = getopt_long(argc, argv, "s:t:p:r:b:w:o:S:L:F:IC:A:RXvh", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 's': a->seedarg = optarg; break;
		case 't': a->turnsarg = optarg; break;
		case 'p':
			if (opt_long("--preemptions", optarg, -1, 1000, "a number from "
			    "-1 (no bound) to 1000", &a->bound) == -1)
				return SOAK_EXIT_USAGE;
			break;
		case 'r':
			if (opt_long("--rounds", optarg, 0, 100000, "a round number (0, "
			    "1, ...)", &a->only_round) == -1)
				return SOAK_EXIT_USAGE;
			break;
		case 'b':
			if (optarg[0] != '\0' && strspn(optarg, "0123456789") ==
			    strlen(optarg)) {
				a->budget_n = strtoull(optarg, NULL, 10);
				if (a->budget_n == 0) {
					fprintf(stderr, "soak explore: --budget 0 runs "
					    "nothing\n");
					return SOAK_EXIT_USAGE;
				}
			} else if (parse_duration_ms(optarg, &a->budget_ms, err) == -1 ||
			    a->budget_ms <= 0) {
				fprintf(stderr, "soak explore: --budget takes a count of "
				    "executions or a duration (30s, 5m), not \"%s\"\n",
				    optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'w':
			if (opt_long("--workers", optarg, 1, 64, "1 to 64", &a->nworkers) == -1)
				return SOAK_EXIT_USAGE;
			break;
		case 'o': a->out = optarg; a->outarg = true; break;
		case 'S': a->resume = optarg; break;
		case 'L': a->listen = optarg; break;
		case 'F': a->auth.secret_file = optarg; break;
		case 'I': a->auth.insecure = true; break;
		case 'C': a->auth.tls_cert = optarg; break;
		case 'A': a->auth.tls_client_ca = optarg; break;
		case 'R': a->no_reduce = true; break;
		case 'X': a->inexact = true; break;
		case 'v': log_init("explore", 1); a->verbose = true; break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "soak explore: %s\n", optind >= argc ? "which config? "
		    "soak explore CONFIG --seed N" : "one config only");
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	a->config = argv[optind];
	if (a->seedarg == NULL) {
		fprintf(stderr, "soak explore: which seed? --seed N (its turns, turn "
		    "seeds and faults are the scenario explored)\n");
		return SOAK_EXIT_USAGE;
	}
	if (seed_parse(a->seedarg, &a->seed, err) == -1) {
		fprintf(stderr, "soak explore: --seed: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	if (a->resume != NULL && a->outarg) {
		fprintf(stderr, "soak explore: --resume DIR goes on in DIR: no --out\n");
		return SOAK_EXIT_USAGE;
	}
	if (a->resume != NULL)
		a->out = a->resume;
	return 0;
}

/* --listen's rules: those of soak coordinator.  0, or the exit status. */
static int
check_listen(struct xargs *a)
{
	char	err[ERR_LEN], warn[ERR_LEN];
	int	arc;

	if (a->listen == NULL && (a->auth.secret_file != NULL || a->auth.insecure ||
	    a->auth.tls_cert != NULL || a->auth.tls_client_ca != NULL)) {
		fprintf(stderr, "soak explore: --secret-file, --tls-* and --insecure "
		    "go with --listen URL\n");
		return SOAK_EXIT_USAGE;
	}
	if (a->listen == NULL)
		return 0;
	if (a->nworkers != 1) {
		fprintf(stderr, "soak explore: --workers N runs executors here; with "
		    "--listen the workers are those that connect\n");
		return SOAK_EXIT_USAGE;
	}
	if (auth_secret_load(a->auth.secret_file, &a->auth.secret, err) == -1 ||
	    (arc = auth_policy(AUTH_COORDINATOR, a->listen, &a->auth, warn, err)) == -1 ||
	    tlsconf_check(AUTH_COORDINATOR, a->listen, &a->auth, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	if (arc == 1)
		fprintf(stderr, "soak explore: warning: %s\n", warn);
	return 0;
}

/* "0,1" into c->runs (rounds x turns) and c->turns; -1 with err. */
static int
parse_turns(struct xcmd *c, const char *s, char *err)
{
	const struct cfg	*cfg = &c->cfg;
	char			*copy = xstrdup(s), *tok, *save = NULL, *end;
	long			 t;
	int			 r, rc = 0;

	c->turns = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		t = strtol(tok, &end, 10);
		if (errno != 0 || *end != '\0' || end == tok || t < 0 || t >= cfg->turns)
			rc = errf(err, "--turns: \"%s\" is not a turn of %s (0..%d)", tok,
			    cfg->name, cfg->turns - 1);
		else
			c->turns |= (uint64_t)1 << t;
	}
	free(copy);
	if (rc == 0 && c->turns == 0)
		rc = errf(err, "--turns: no turn given");
	if (rc == -1)
		return -1;
	c->runs = xcalloc((size_t)cfg->turns * (size_t)cfg->rounds, sizeof(*c->runs));
	for (r = 0; r < cfg->rounds; r++)
		for (t = 0; t < cfg->turns; t++)
			c->runs[(size_t)r * (size_t)cfg->turns + (size_t)t] =
			    c->turns >> t & 1;
	return 0;
}

/* The config, its one scheduled proxy, --rounds and --turns.  0 or the status. */
static int
load_config(struct xcmd *c)
{
	struct cfg_errors	cerrs = { 0 };
	char			err[ERR_LEN];
	size_t			i, nsched = 0;

	if (cfg_load_file_all(c->a->config, &c->cfg, err, &cerrs) == -1) {
		cfg_errors_print(&cerrs, stderr, "soak");
		cfg_errors_free(&cerrs);
		return SOAK_EXIT_CONFIG;
	}
	for (i = 0; i < c->cfg.nproxies; i++)
		if (c->cfg.proxies[i].schedule.enabled) {
			c->proxy = c->cfg.proxies[i].name;
			nsched++;
		}
	if (nsched != 1) {
		fprintf(stderr, "soak explore: %s: %s\n", c->a->config, nsched == 0 ?
		    "no proxy has a schedule: nothing to explore (give the proxy "
		    "in front of the database a `schedule:`)" : "more than one proxy "
		    "has a schedule; explore drives one at a time");
		return SOAK_EXIT_CONFIG;
	}
	if (c->a->only_round >= c->cfg.rounds) {
		fprintf(stderr, "soak explore: --rounds %ld: %s has rounds 0..%d\n",
		    c->a->only_round, c->a->config, c->cfg.rounds - 1);
		return SOAK_EXIT_USAGE;
	}
	if (c->cfg.turns > XP_MAX_TURNS) {
		fprintf(stderr, "soak explore: %s has %d turns; explore takes at most "
		    "%d (give --turns)\n", c->a->config, c->cfg.turns, XP_MAX_TURNS);
		return SOAK_EXIT_CONFIG;
	}
	c->turns = c->cfg.turns == 64 ? UINT64_MAX : ((uint64_t)1 << c->cfg.turns) - 1;
	if (c->a->turnsarg != NULL && parse_turns(c, c->a->turnsarg, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	c->reduce = !c->a->no_reduce && c->a->bound < 0;
	return 0;
}

/*
 * What --resume may read: a folder and a journal of this user's that
 * nobody else can write (what someone else wrote there would be taken as
 * this exploration's).  A check of consistency, not of tampering.
 */
static int
resume_trusted(int fd, const char *what, char *err)
{
	struct stat	st;

	if (fstat(fd, &st) == -1)
		return errf(err, "%s: %s", what, strerror(errno));
	if (st.st_uid != geteuid())
		return errf(err, "%s is owned by uid %u, not by this user: --resume "
		    "refuses it", what, (unsigned)st.st_uid);
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return errf(err, "%s is writable by %s (mode %04o): --resume refuses "
		    "it (chmod go-w)", what, (st.st_mode & S_IWOTH) ? "others" :
		    "its group", (unsigned)(st.st_mode & 07777));
	return 0;
}

/*
 * The journal's lines kept in *replay (the header checked against this
 * exploration's), the file cut back to its last whole line and opened
 * for appending.  A last line cut short (the process killed while writing
 * it) is dropped; the other lines are judged by the explorer.
 */
static int
resume_journal(struct xcmd *c, const json_t *head, char *err)
{
	struct stat	 st;
	char		*text = NULL, *line, *nl, *h;
	size_t		 len = 0, lineno = 0, good = 0;
	json_t		*j;
	int		 fd, rc = -1;

	if ((fd = openat(c->dfd, "explore.jsonl", O_RDWR | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errf(err, "%s/explore.jsonl: %s", c->outabs, strerror(errno));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		errf(err, "%s/explore.jsonl is not a file", c->outabs);
		goto done;
	}
	if (resume_trusted(fd, "its journal", err) == -1 ||
	    (text = read_fd(dup(fd), "explore.jsonl", (size_t)1 << 30, &len, err)) == NULL)
		goto done;
	c->replay = json_array();
	for (line = text; *line != '\0'; line = nl + 1) {
		lineno++;
		if ((nl = strchr(line, '\n')) == NULL)
			nl = line + strlen(line);
		j = json_loadb(line, (size_t)(nl - line), 0, NULL);
		if (lineno == 1 && (j == NULL || !json_equal(j, head))) {
			h = json_dumps(head, JSON_COMPACT | JSON_SORT_KEYS);
			errf(err, "%s/explore.jsonl is another exploration's (or an "
			    "older soak's): this one is %.160s", c->outabs, h);
			free(h);
			json_decref(j);
			goto done;
		}
		if (j == NULL && *nl == '\0')
			break;	/* cut short: that execution runs again */
		if (lineno > 1)
			json_array_append_new(c->replay, j ? j : json_null());
		else
			json_decref(j);
		good = (size_t)(nl - text) + (*nl == '\n');
		if (*nl == '\0')
			break;
	}
	if (lineno == 0) {
		errf(err, "%s/explore.jsonl is empty", c->outabs);
		goto done;
	}
	/* what follows the last whole line goes: the next line starts clean */
	if (ftruncate(fd, (off_t)good) == -1 || lseek(fd, 0, SEEK_END) == -1 ||
	    (c->journal = fdopen(fd, "a")) == NULL ||
	    (good > 0 && text[good - 1] != '\n' && fputc('\n', c->journal) == EOF)) {
		errf(err, "%s/explore.jsonl: %s", c->outabs, strerror(errno));
		goto done;
	}
	fd = -1;
	rc = 0;
done:
	if (fd != -1)
		close(fd);
	free(text);
	return rc;
}

/*
 * The output folder, opened once: everything in it is made relative to
 * its descriptor and never through a symlink planted there (explore.json,
 * explore.jsonl, failing/, failures/).  With --resume, the folder and its
 * journal must be this user's and nobody else's to write.
 */
static int
open_out(struct xcmd *c, json_t *head, char *err)
{
	struct stat	 st;
	const bool	 resume = c->a->resume != NULL;
	char		*h;
	int		 fd;

	if ((!resume && mkdir_p(c->a->out, 0755, err) == -1) ||
	    realpath(c->a->out, c->outabs) == NULL)
		return errf(err, "%s: %s", c->a->out, errno ? strerror(errno) : err);
	if ((c->dfd = open(c->outabs, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errf(err, "%s: %s", c->outabs, strerror(errno));
	if (resume && resume_trusted(c->dfd, c->outabs, err) == -1)
		return -1;
	/* failures/ takes failing workspaces: a real folder, or none yet */
	if (fstatat(c->dfd, "failures", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode))
		return errf(err, "%s/failures is not a folder (a symlink?): refusing "
		    "it", c->outabs);
	if (!resume) {
		h = xasprintf("%s/failing", c->outabs);
		rm_rf(h);	/* nftw without following: a symlink itself goes */
		free(h);
	}
	if (mkdirat(c->dfd, "failing", 0755) == -1 && errno != EEXIST)
		return errf(err, "%s/failing: %s", c->outabs, strerror(errno));
	if ((c->failing_dfd = openat(c->dfd, "failing", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errf(err, "%s/failing is not a folder of its own (%s): "
		    "refusing it", c->outabs, strerror(errno));
	if (resume)
		return resume_journal(c, head, err);
	if ((fd = file_create_at(c->dfd, "explore.jsonl", 0644, err)) == -1 ||
	    (c->journal = fdopen(fd, "w")) == NULL)
		return errf(err, "%s/explore.jsonl: %s", c->outabs, fd == -1 ? err :
		    strerror(errno));
	h = json_dumps(head, JSON_COMPACT);
	if (fprintf(c->journal, "%s\n", h) < 0 || fflush(c->journal) != 0)
		errf(err, "%s/explore.jsonl: %s", c->outabs, strerror(errno));
	free(h);
	return 0;
}

/* ---- what the explorer says ---- */

static void
on_event(void *arg, const struct xp_event_info *ev)
{
	struct xcmd	*c = arg;
	char		 esc[LOG_ESC_LEN], who[32], *replay;

	switch (ev->kind) {
	case XE_EXECUTION:
		if (c->a->verbose && !ev->replaying)
			printf("  execution %" PRIu64 " (prefix %zu, %d preemption%s): %s "
			    "— %s\n", ev->execution, ev->prefix, ev->preemptions,
			    ev->preemptions == 1 ? "" : "s", ev->turns,
			    msg_verdict_name(ev->rec->verdict));
		break;
	case XE_FAILING:
		if (ev->replaying || (ev->failing > 3 && !c->a->verbose))
			break;
		replay = report_replay_plan_here(c->a->config, ev->plan);
		printf("  failing schedule %" PRIu64 ": %s\n    %s\n", ev->failing,
		    ev->turns, replay);
		free(replay);
		break;
	case XE_DIVERGED:
		if (!ev->replaying)
			printf("  execution %" PRIu64 " diverged: %s\n", ev->execution,
			    log_escape(esc, sizeof(esc), ev->rec->message));
		break;
	case XE_BROKEN:
		if (!ev->replaying)
			printf("  execution %" PRIu64 ": %s: its branches are not "
			    "explored\n", ev->execution, log_escape(esc, sizeof(esc),
			    ev->why));
		break;
	case XE_REFUSED:
		if (c->from != 0)
			snprintf(who, sizeof(who), " (worker %u)", c->from);
		else
			snprintf(who, sizeof(who), "%s", ev->replaying ? " (journal)" : "");
		printf("  a record refused%s: %s%s\n", who, log_escape(esc, sizeof(esc),
		    ev->why), ev->again ? "; refused twice, its branch counts as "
		    "broken" : "; its execution runs again");
		break;
	}
	fflush(stdout);
}

/* ---- --listen URL: executions leased to `soak worker`s ---- */

struct xfleet {
	struct xcmd	*c;
	char		*plan_text;	/* the base plan, as every lease carries it */
	struct xnode	**out;		/* executions leased, not answered */
	size_t		 nout, capout;
	uint64_t	*distrust;	/* workers whose records were refused */
	size_t		 ndistrust;
	json_t		*workers;	/* the workers that sent a result */
};

static bool
fleet_stop_now(struct xfleet *f)
{
	struct xcmd	*c = f->c;
	const struct xargs *a = c->a;

	/* a count budget counts executions taken or out, as a local one does */
	if (c->stopped == NULL && (xp_stop || (explore_left(c->x) > 0 &&
	    ((a->budget_n > 0 && explore_stats(c->x)->executions + f->nout >=
	    a->budget_n) || (a->budget_ms > 0 && now_ms() - c->t0 >= a->budget_ms)))))
		c->stopped = xp_stop == SIGINT ? "Ctrl-C" : xp_stop ? "SIGTERM" :
		    "the budget";
	return c->stopped != NULL;
}

static bool
distrusted(const struct xfleet *f, uint32_t worker)
{
	size_t	i;

	for (i = 0; i < f->ndistrust; i++)
		if (f->distrust[i] == worker)
			return true;
	return false;
}

static int
fleet_next(void *arg, uint32_t worker, uint64_t *no, char **payload)
{
	struct xfleet	*f = arg;
	struct xnode	*b;

	/* a worker whose record was refused runs nothing more of this tree */
	if (distrusted(f, worker) || fleet_stop_now(f) ||
	    (b = explore_next(f->c->x)) == NULL)
		return 0;
	*payload = explore_lease(f->c->proxy, f->plan_text, b);
	*no = explore_node_no(b);
	if (f->nout == f->capout) {
		f->capout = f->capout ? f->capout * 2 : 16;
		f->out = xreallocarray(f->out, f->capout, sizeof(*f->out));
	}
	f->out[f->nout++] = b;
	return 1;
}

/* The leased execution no, taken out of f->out (NULL: none). */
static struct xnode *
fleet_take(struct xfleet *f, uint64_t no)
{
	struct xnode	*b;
	size_t		 k;

	for (k = 0; k < f->nout; k++)
		if (explore_node_no(f->out[k]) == no) {
			b = f->out[k];
			f->out[k] = f->out[--f->nout];
			return b;
		}
	return NULL;
}

static void
fleet_distrust(struct xfleet *f, uint32_t worker)
{
	if (distrusted(f, worker))
		return;
	f->distrust = xreallocarray(f->distrust, f->ndistrust + 1, sizeof(*f->distrust));
	f->distrust[f->ndistrust++] = worker;
	printf("  worker %u sent a record that does not check: it runs nothing "
	    "more of this exploration\n", worker);
}

static void
fleet_result(void *arg, uint64_t no, uint32_t worker, int verdict, enum reason why,
    const json_t *detail)
{
	struct xfleet	*f = arg;
	struct xnode	*b;
	struct xrec	 rec;
	const json_t	*rj = json_object_get(detail, "explore");
	char		 err[ERR_LEN], name[16];

	if ((b = fleet_take(f, no)) == NULL)
		return;
	snprintf(name, sizeof(name), "%u", worker);
	json_object_set_new(f->workers, name, json_integer(json_integer_value(
	    json_object_get(f->workers, name)) + 1));
	f->c->from = worker;
	if (rj == NULL) {
		/* a worker that could not run it (its database, its services):
		 * said as what it is, its branches not explored */
		const char	*m = json_string_value(json_object_get(detail, "message"));

		memset(&rec, 0, sizeof(rec));
		rec.verdict = VERDICT_INFRA;
		rec.reason = verdict == VERDICT_INFRA ? why : REASON_WORKER_LOST;
		snprintf(rec.message, sizeof(rec.message), "worker %u: %s", worker,
		    m ? m : "no record");
		snprintf(rec.why_no_steps, sizeof(rec.why_no_steps), "worker %u sent "
		    "no record: %.200s", worker, m ? m : "no record");
		(void)explore_take(f->c->x, b, &rec, err);
	} else if (xp_rec_parse(rj, &rec, err) == -1) {
		explore_refuse(f->c->x, b, NULL, err);
		fleet_distrust(f, worker);
	} else {
		if (explore_take(f->c->x, b, &rec, err) == -1)
			fleet_distrust(f, worker);
		xp_rec_clear(&rec);
	}
	f->c->from = 0;
}

static void
fleet_lost(void *arg, uint64_t no, const char *why)
{
	struct xfleet	*f = arg;
	struct xnode	*b;

	(void)why;
	if ((b = fleet_take(f, no)) != NULL)
		explore_put_back(f->c->x, b);	/* next out, to another worker */
}

static bool
fleet_done(void *arg)
{
	struct xfleet	*f = arg;

	return (explore_left(f->c->x) == 0 && f->nout == 0) || fleet_stop_now(f);
}

static int
fleet_tick(void *arg)
{
	struct xfleet	*f = arg;

	return xp_stop != 0 || (f->c->stopped != NULL && f->nout == 0);
}

static void
fleet_workers(const struct xfleet *f)
{
	const char	*k;
	json_t		*v;
	size_t		 nw = json_object_size(f->workers);

	printf("  %zu worker%s took part:", nw, nw == 1 ? "" : "s");
	json_object_foreach(f->workers, k, v)
		printf(" worker %s ran %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
	printf("\n");
}

/*
 * --listen: the tree's executions leased one at a time to the workers
 * that connect (the same secret or TLS rules as soak coordinator's), the
 * config folder shipped to them as soak coordinator ships it.  A lease lost
 * with its worker goes to another; a record refused goes to another, and
 * its worker gets nothing more.  0, or -1 when it could not listen.
 */
static int
explore_fleet(struct xcmd *c)
{
	struct xfleet		 f = { .c = c };
	struct coord_explore	 xe = { .seed = c->a->seed, .next = fleet_next,
				    .result = fleet_result, .lost = fleet_lost,
				    .done = fleet_done, .arg = &f };
	struct coord_opts	 co = { 0 };
	struct bundle		 b = { 0 };
	struct coord		*coord = NULL;
	struct server		*srv = NULL;
	char			 err[ERR_LEN], cfgabs[PATH_MAX], *run_id = NULL, *bin;
	volatile int		 stop = 0;
	int			 rc = -1;

	if (realpath(c->a->config, cfgabs) == NULL) {
		printf("explore: %s: %s\n", c->a->config, strerror(errno));
		return -1;
	}
	fflush(stdout);
	if (coordinator_bundle(c->a->config, &c->cfg, c->outabs, false, &c->a->auth,
	    &b) == -1)
		goto done;
	f.plan_text = plan_dump(&c->base);
	f.workers = json_object();
	run_id = xasprintf("explore-%d-%" PRId64, (int)getpid(), c->t0);
	co.cfg = &c->cfg;
	co.explore = &xe;
	co.run_id = run_id;
	co.cfg_path = cfgabs;
	co.db_conninfo = "";
	co.keep_dir = "";
	co.workspace = "";
	co.heartbeat_ms = 500;
	co.lease_ttl_ms = 5000;
	co.bundle_hash = b.hash;
	co.bundle = b.data;
	co.bundle_len = b.len;
	if ((coord = coord_new(&co, err)) == NULL ||
	    (srv = server_open(c->a->listen, 1024, &c->a->auth, err)) == NULL) {
		printf("explore: %s\n", err);
		goto done;
	}
	bin = self_command(NULL);
	printf("  listening on %s for workers (%s worker --connect %s); the config "
	    "folder is bundled for them (sha256 %.12s)\n", server_url(srv), bin,
	    server_url(srv), b.hash);
	free(bin);
	fflush(stdout);
	rc = 0;
	server_run(srv, coord, &stop, 500, fleet_tick, &f);
	if (xp_stop && c->stopped == NULL)
		c->stopped = xp_stop == SIGINT ? "Ctrl-C" : "SIGTERM";
	server_drain(srv, coord, xp_stop ? 0 : 10000, &stop);
	fleet_workers(&f);
done:
	/* executions out and never answered are still unexplored */
	while (f.nout > 0)
		explore_put_back(c->x, f.out[--f.nout]);
	free(f.out);
	free(f.distrust);
	if (srv != NULL)
		server_close(srv);
	coord_free(coord);
	bundle_free(&b);
	free(f.plan_text);
	json_decref(f.workers);
	free(run_id);
	return rc;
}

/* ---- the seed's own run ---- */

/* "0", "0, 2 and 5": the turns of a mask, for a sentence. */
static const char *
turn_words(uint64_t mask, char *buf, size_t len)
{
	size_t	o = 0;
	int	t, left = __builtin_popcountll(mask);

	buf[0] = '\0';
	for (t = 0; t < 64 && o < len; t++)
		if (mask >> t & 1) {
			left--;
			o += (size_t)snprintf(buf + o, len - o, "%d%s", t, left > 1 ?
			    ", " : left == 1 ? " and " : "");
		}
	return buf;
}

/*
 * The seed's own run, every turn, as a run would make it: its faults
 * become every execution's (a plan keys them by what they hit, so they
 * follow their exchanges into any order), and its record says whether
 * there is anything to explore exactly.  0; or the exit status, said.
 */
static int
seed_run(struct xcmd *c, struct wrk *w, const struct explore_opts *o, bool *steps)
{
	struct seed_result	 res = { 0 };
	struct xrec		 rec;
	json_t			*p;
	char			*text, err[ERR_LEN], set[256], esc[LOG_ESC_LEN];
	size_t			 n;
	uint64_t		 overlap;
	bool			 serialized;
	int			 rc = SOAK_EXIT_REPLAY_INFRA;

	w->keep_name = "seed";
	w->plan = NULL;
	wrk_run_seed(w, c->a->seed, 1, &res);
	w->keep_name = NULL;
	p = json_object_get(res.detail, "plan");
	/*
	 * An infra seed may have a plan (its proxies open before the setup,
	 * which may call them) and no step: what broke it is what to say,
	 * not that it took no step.
	 */
	if (res.verdict == VERDICT_INFRA || !json_is_object(p)) {
		printf("explore: the seed %s (%s: %s): nothing to explore\n",
		    res.verdict == VERDICT_INFRA ? "broke" : "made no plan",
		    msg_verdict_name(res.verdict), log_escape(esc, sizeof(esc),
		    res.message));
		goto out;
	}
	text = json_dumps(p, JSON_COMPACT);
	if (plan_parse(text, strlen(text), "the seed's plan", &c->base, err) == -1) {
		printf("explore: the seed's plan: %s\n", err);
		free(text);
		goto out;
	}
	free(text);
	xp_rec_of_result(&res, c->proxy, 0, &rec);
	explore_seed_facts(o, &rec, &n, &overlap, &serialized);
	xp_rec_clear(&rec);
	*steps = n > 0;
	rc = SOAK_EXIT_INCOMPLETE;
	if (n == 0) {
		printf("\nincomplete: nothing to explore — the seed's own run took no "
		    "step at proxy %s%s%s (no traffic of the turns that run passed it: "
		    "a service's statements pass it unscheduled, or go to the "
		    "database directly with seam: false, docs/turns.md)\n", c->proxy, c->a->turnsarg ? " of turns " : "",
		    c->a->turnsarg ? c->a->turnsarg : "");
		goto out;
	}
	if ((overlap != 0 || serialized) && !c->a->inexact) {
		printf("\nincomplete: no execution of this seed can be exact —");
		if (overlap != 0)
			printf(" in its own run, turn%s %s had connections open at once "
			    "at proxy %s (threads, or a pool: the turn orders what it "
			    "sends on them itself, not the schedule)%s",
			    __builtin_popcountll(overlap) == 1 ? "" : "s",
			    turn_words(overlap, set, sizeof(set)), c->proxy,
			    serialized ? ";" : "");
		if (serialized)
			printf(" proxy %s fronts a service, and the schedule held a "
			    "request until another's reply (the service never ran two "
			    "at once, so its races cannot happen)", c->proxy);
		printf("; --inexact explores it anyway (its failures are real, its "
		    "result incomplete)\n");
		goto out;
	}
	if (c->runs != NULL) {
		free(c->base.runs);
		c->base.runs = c->runs;
		c->runs = NULL;
		printf("  the seed's faults are those of its own run of all turns, "
		    "applied to the turns that run\n");
	}
	rc = 0;
out:
	seed_result_clear(&res);
	return rc;
}

/* --rounds R: the rounds before R run once, as the seed ran them. */
static size_t
root_prefix(const struct xcmd *c, const struct plan_proxy *pp, struct xstep **out)
{
	size_t	n = explore_root_prefix(&c->base, pp, (int)c->a->only_round, out);

	if (c->a->only_round > 0)
		printf("  rounds before %ld run once, as the seed ran them (%zu steps)\n",
		    c->a->only_round, n);
	return n;
}

/* ---- the result ---- */

/* "incomplete: <why> after N executions ..." and what was not exact. */
static void
say_incomplete(const struct xcmd *c, const struct xstats *s)
{
	size_t	left = explore_left(c->x);

	printf("incomplete: %s after %" PRIu64 " execution%s (%" PRIu64 " fail); %zu "
	    "branch%s unexplored", c->stopped ? c->stopped : s->diverged ?
	    "executions diverged" : s->infra ? "executions broke" : s->inexact ?
	    "executions were not exact" : "waiting turns never went", s->executions,
	    s->executions == 1 ? "" : "s", s->failing, left, left == 1 ? "" : "es");
	if (left > 0)
		printf(", the deepest at step %zu", explore_deepest(c->x));
	if (s->diverged > 0 || s->infra > 0)
		printf("; %" PRIu64 " diverged and %" PRIu64 " broken execution%s left "
		    "their subtrees unexplored", s->diverged, s->infra,
		    s->diverged + s->infra == 1 ? "" : "s");
	if (s->inexact > 0)
		printf("; %" PRIu64 " of %" PRIu64 " executions not exact (below)",
		    s->inexact, s->executions);
	printf("\n");
}

static void
say_result(const struct xcmd *c)
{
	const struct xstats	*s = explore_stats(c->x);
	const struct xargs	*a = c->a;
	double			 secs = (double)(now_ms() - c->t0) / 1000.0;
	char			 bnd[96], rnd[48] = "";

	if (a->only_round >= 0)
		snprintf(rnd, sizeof(rnd), " in round %ld", a->only_round);
	if (a->bound < 0)
		snprintf(bnd, sizeof(bnd), "%s", c->reduce ? "all schedules up to "
		    "equivalence" : "all schedules");
	else
		snprintf(bnd, sizeof(bnd), "all schedules with ≤ %ld preemption%s",
		    a->bound, a->bound == 1 ? "" : "s");
	printf("\n");
	if (explore_complete(c->x, c->stopped))
		printf("complete: %s of turns %s%s — %" PRIu64 " explored, %" PRIu64
		    " fail\n", bnd, a->turnsarg ? a->turnsarg : "all", rnd,
		    s->executions, s->failing);
	else
		say_incomplete(c, s);
	printf("  %" PRIu64 " distinct schedule%s in %" PRIu64 " equivalence class%s%s, %"
	    PRIu64 "..%" PRIu64 " steps, %.1f s (%.2f s an execution)\n", s->distinct,
	    s->distinct == 1 ? "" : "s", s->nclasses, s->nclasses == 1 ? "" : "es",
	    s->classes_cut ? " (longer ones not classed)" : "", s->steps_min,
	    s->steps_max, secs, s->executions ? (double)s->exec_ms / 1000.0 /
	    (double)s->executions : 0.0);
	if (c->reduce)
		printf("  reduction (sleep sets): %" PRIu64 " branch%s pruned as "
		    "equivalent, %" PRIu64 " execution%s covered from a step on\n",
		    s->slept, s->slept == 1 ? "" : "es", s->redundant,
		    s->redundant == 1 ? "" : "s");
	if (s->mixed > 0)
		printf("  warning: %" PRIu64 " equivalence class%s held both a passing "
		    "and a failing schedule: steps the rule says commute did not (a "
		    "read that writes through a view or a trigger?), or the system is "
		    "not deterministic; trust --no-reduce here\n", s->mixed,
		    s->mixed == 1 ? "" : "es");
	if (s->exec_ms > 0)
		printf("  of each execution, the turns ran %.0f %% (first start to last "
		    "end) and soak's own work (reset, setup, spawn, checks) took the "
		    "rest\n", 100.0 * (double)s->turns_ms / (double)s->exec_ms);
	if (a->bound >= 0)
		printf("  %" PRIu64 " branch%s beyond the bound, not run\n",
		    s->beyond_bound, s->beyond_bound == 1 ? "" : "es");
	if (s->refused > 0)
		printf("  %" PRIu64 " record%s refused (each execution run again, or "
		    "broken when refused twice)\n", s->refused, s->refused == 1 ? "" : "s");
	printf("  not exact: %" PRIu64 " decision%s forced by a timeout, %" PRIu64
	    " commit%s that woke several lock waiters (PostgreSQL's "
	    "order), %" PRIu64 " deadlock%s resolved by PostgreSQL, %" PRIu64
	    " diverged, %" PRIu64 " with a turn's connections open at once, %"
	    PRIu64 " with a service's requests serialized by the schedule, %" PRIu64
	    " with a service's statements or requests the schedule did not order, %"
	    PRIu64 " LISTEN/NOTIFY; %s; turns' own clocks and timeouts are not "
	    "observed\n",
	    s->forced, s->forced == 1 ? "" : "s", s->wakes, s->wakes == 1 ? "" : "s",
	    s->pg_deadlocks, s->pg_deadlocks == 1 ? "" : "s", s->diverged, s->overlap,
	    s->serialized, s->unordered, s->notify, cfg_services_direct(&c->cfg) > 0 ?
	    "services outside the seam persisted across executions (started "
	    "once)" : c->cfg.nservices > 0 ? "services through the seam "
	    "restarted with each execution" : "no services");
}

/* explore.json, in the output folder, never through a symlink there. */
static void
write_result(const struct xcmd *c)
{
	const struct xargs	*a = c->a;
	json_t			*j = explore_json(c->x, c->stopped);
	char			*text, err[ERR_LEN];

	json_object_set_new(j, "soak_explore", json_integer(2));
	json_object_set_new(j, "config", json_string(c->cfg.name));
	json_object_set_new(j, "seed", json_integer((json_int_t)a->seed));
	json_object_set_new(j, "proxy", json_string(c->proxy));
	json_object_set_new(j, "turns", a->turnsarg ? json_string(a->turnsarg) :
	    json_null());
	json_object_set_new(j, "preemptions", json_integer(a->bound));
	json_object_set_new(j, "round", a->only_round >= 0 ?
	    json_integer((json_int_t)a->only_round) : json_null());
	json_object_set_new(j, "seconds", json_real((double)(now_ms() - c->t0) / 1000.0));
	text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(j);
	if (text == NULL || file_put_at(c->dfd, "explore.json", text, strlen(text), 0644,
	    err) == -1)
		printf("  cannot write %s/explore.json: %s\n", c->outabs, text ? err :
		    "out of memory");
	else
		printf("  result: %s/explore.json\n", c->outabs);
	free(text);
}

/* The failing fingerprints, counted, and the plans not written. */
static void
say_failing(const struct xcmd *c)
{
	const struct xstats	*s = explore_stats(c->x);
	json_t			*j = explore_json(c->x, c->stopped), *v;
	size_t			 i;

	/* a fingerprint names the invariants a record says broke, and a
	 * record may be a remote worker's: escaped (log.h) */
	json_array_foreach(json_object_get(j, "failing_fingerprints"), i, v) {
		json_int_t	n = json_integer_value(json_object_get(v, "schedules"));
		const char	*fp = json_string_value(json_object_get(v,
				    "fingerprint"));

		printf("  failing: %" JSON_INTEGER_FORMAT " schedule%s with ", n,
		    n == 1 ? "" : "s");
		(void)log_escape_put(stdout, fp, fp ? strlen(fp) : 0, 0);
		putchar('\n');
	}
	json_decref(j);
	if (s->failing > s->saved)
		printf("  (%" PRIu64 " failing schedules not written: the first %d are)\n",
		    s->failing - s->saved, XP_SAVED_PLANS);
}

/* ---- the command ---- */

/* The worker explore runs in, and its database. */
static int
open_worker(struct xcmd *c, struct wrk *w, struct iso_db *db)
{
	char	err[ERR_LEN];

	if (iso_db_open(db, &c->cfg, (int)c->a->nworkers, NULL, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		return -1;
	}
	w->cfg = &c->cfg;
	w->run_id = xasprintf("explore%d", (int)getpid());
	w->id = 1;
	w->conninfo = xstrdup(db->conninfo);
	w->workspace = xasprintf("%s/soak-explore-%d", scratch_root(), (int)getpid());
	w->keep_dir = xasprintf("%s/failures", c->outabs);
	w->whole_trace = true;
	w->save_plan = true;
	if (wrk_open(w, err) == -1) {
		printf("explore: cannot start: %s\n", err);
		return -1;
	}
	return 0;
}

static void
say_start(const struct xcmd *c)
{
	const struct xargs	*a = c->a;

	printf("explore: %s, seed %" PRIu64 ", proxy %s, turns %s%s; bound: ",
	    c->cfg.name, a->seed, c->proxy, a->turnsarg ? a->turnsarg : "all",
	    a->only_round >= 0 ? ", one round" : "");
	if (a->bound < 0)
		printf("none (every interleaving)");
	else
		printf("at most %ld preemption%s", a->bound, a->bound == 1 ? "" : "s");
	/*
	 * Sleep sets and a preemption bound together can leave a class
	 * unexplored within the bound: the reduction runs only without one.
	 */
	printf("; reduction: %s\n", c->reduce ? "sleep sets" : a->no_reduce ? "none "
	    "(--no-reduce)" : "none (a preemption bound: sleep sets run only "
	    "without one)");
	fflush(stdout);
}

static char *
fingerprint(const char *config, const char *reason, const json_t *invariants)
{
	return fp_string(config, reason, invariants);
}

/* The search, run as the options say; 0, or the exit status. */
static int
search(struct xcmd *c, struct wrk *w, struct explore_opts *o)
{
	struct sigaction	 sa = { .sa_handler = xp_on_signal }, oint, oterm;
	struct explore_budget	 bg = { .executions = c->a->budget_n, .ms = c->a->budget_ms,
				    .stop = &xp_stop };
	struct plan_proxy	*pp = xp_proxy_entry(&c->base, c->proxy);
	struct xstep		*root;
	size_t			 nroot, taken;
	int			 rc = 0;

	nroot = root_prefix(c, pp, &root);
	xp_prefix_start(pp);
	w->plan = &c->base;
	c->x = explore_new(o, root, nroot);
	free(root);
	if (c->replay != NULL) {
		taken = explore_journal_replay(c->x, c->replay);
		printf("  resumed: %zu execution%s from the journal; %zu branch%s left\n",
		    taken, taken == 1 ? "" : "s", explore_left(c->x),
		    explore_left(c->x) == 1 ? "" : "es");
	}
	explore_journal_set(c->x, c->journal);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &oint);
	sigaction(SIGTERM, &sa, &oterm);
	c->t0 = bg.t0 = now_ms();
	if (c->a->listen != NULL) {
		/* the workers that connect run every execution */
		wrk_close(w, true);
		if (explore_fleet(c) == -1)
			rc = SOAK_EXIT_USAGE;
	} else {
		if (c->a->nworkers > 1)
			wrk_close(w, true);	/* each executor opens its own */
		c->stopped = explore_run(c->x, w, &c->base, (int)c->a->nworkers, &bg, true);
		if (c->a->nworkers == 1)
			wrk_close(w, true);
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	explore_journal_set(c->x, NULL);
	return rc;
}

int
cmd_explore(int argc, char **argv)
{
	struct xargs		 a = { 0 };
	struct xcmd		 c = { .a = &a, .dfd = -1, .failing_dfd = -1 };
	struct explore_opts	 o = { 0 };
	struct wrk		 w = { 0 };
	struct iso_db		 db = { 0 };
	json_t			*head = NULL;
	char			 err[ERR_LEN];
	bool			 opened = false, steps = false;
	int			 rc;

	if ((rc = parse_args(argc, argv, &a)) != 0 || (rc = check_listen(&a)) != 0)
		goto out;
	if ((rc = load_config(&c)) != 0)
		goto out;
	rc = SOAK_EXIT_REPLAY_INFRA;
	signal(SIGPIPE, SIG_IGN);
	o = (struct explore_opts){ .cfg = &c.cfg, .proxy = c.proxy, .seed = a.seed,
	    .turns = c.turns, .bound = (int)a.bound, .only_round = (int)a.only_round,
	    .reduce = c.reduce, .fingerprint = fingerprint, .event = on_event,
	    .arg = &c };
	head = explore_journal_header(&o, a.turnsarg);
	if (open_out(&c, head, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		rc = a.resume != NULL ? SOAK_EXIT_USAGE : SOAK_EXIT_REPLAY_INFRA;
		goto out;
	}
	o.failing_dfd = c.failing_dfd;
	o.failing_path = xasprintf("%s/failing", c.outabs);
	if (open_worker(&c, &w, &db) == -1)
		goto out;
	opened = true;
	say_start(&c);
	if ((rc = seed_run(&c, &w, &o, &steps)) != 0)
		goto out;
	o.seed_steps = steps;
	if ((rc = search(&c, &w, &o)) != 0) {
		opened = false;
		goto out;
	}
	opened = false;
	say_result(&c);
	say_failing(&c);
	write_result(&c);
	rc = explore_stats(c.x)->failing > 0 ? SOAK_EXIT_FAIL :
	    explore_complete(c.x, c.stopped) ? SOAK_EXIT_PASS : SOAK_EXIT_INCOMPLETE;
out:
	if (opened)
		wrk_close(&w, true);
	if (w.workspace)
		rm_rf(w.workspace);
	iso_db_close(&db);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
	explore_free(c.x);
	free(UNCONST(o.failing_path));
	json_decref(head);
	json_decref(c.replay);
	auth_secret_free(&a.auth.secret);
	if (c.journal != NULL)
		fclose(c.journal);
	if (c.failing_dfd != -1)
		close(c.failing_dfd);
	if (c.dfd != -1)
		close(c.dfd);
	free(c.runs);
	plan_free(&c.base);
	cfg_free(&c.cfg);
	return rc == -1 ? 0 : rc;
}
