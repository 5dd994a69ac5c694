/*
 * `soak replay CONFIG --seed N [--keep] [--shell]`: one seed alone, in this
 * process, through the same wrk_run_seed a run uses, with a readable
 * timeline.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "common/config.h"
#include "common/conninfo.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/plan.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/trace.h"
#include "common/util.h"
#include "isolation/iso.h"
#include "fault-proxy/proxy.h"
#include "worker/wrk.h"

/* Steps of a schedule shown without -v: the start and end of a race. */
#define REPLAY_SCHEDULE_LINES	40

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak replay CONFIG (--seed N | --plan FILE [--then seed])\n"
	    "                   [--save-plan FILE] [--keep [--shell]] [--out DIR]\n"
	    "                   [--trace FILE] [-v]\n"
	    "\n"
	    "Runs one seed alone and prints its timeline: the schema reset, the setup,\n"
	    "every turn's exit, every invariant's result with the rows that broke it,\n"
	    "and the verdict; then, when the seed did not pass, the fault trace, and\n"
	    "for a scheduled proxy (also of a passing seed with --keep) the\n"
	    "interleaving: its statements in the order they ran, one line a step.  The\n"
	    "faults, turn seeds and schedule inputs are the same as in the run that\n"
	    "reported the seed.\n"
	    "\n"
	    "  --seed N     the seed to replay\n"
	    "  --plan FILE  make a plan's decisions instead (docs/plan.md: a\n"
	    "               failing seed's failures/N/plan.json, a pinned\n"
	    "               regression): its faults, its turns, each scheduled\n"
	    "               proxy's steps in its order; statements it has no step\n"
	    "               for go first, and a step whose turn waits on a lock\n"
	    "               waits for its holder's; one that cannot come is a\n"
	    "               divergence, infra (exit 125)\n"
	    "  --then seed  with --plan: after a divergence go on under the seed's\n"
	    "               own scheduler, and let the invariants judge\n"
	    "  --save-plan FILE  write this replay's decisions as a plan\n"
	    "  --keep       keep the schema and the workspace, and say where they are\n"
	    "               (the embedded database, if any, is stopped on exit: add\n"
	    "               --shell, or set database.url or SOAK_DATABASE_URL)\n"
	    "  --shell      with --keep (implied): print a psql command that opens\n"
	    "               the kept schema and, with the embedded database, keep it\n"
	    "               up until Enter, end of input, Ctrl-C or SIGTERM, then\n"
	    "               stop it and remove it\n"
	    "  --out DIR    where replay writes: a failing seed's workspace goes to\n"
	    "               DIR/failures/N/workspace (default ./soak-replay)\n"
	    "  --trace FILE the run's fault trace of this seed (RUN/failures/N/\n"
	    "               trace.jsonl): say whether the replay's schedule was the\n"
	    "               run's, or the first step where it left it\n"
	    "  -v, --verbose\n"
	    "               log every state change, print every line of the fault\n"
	    "               trace (else only the exchanges with a fault) and every\n"
	    "               step of a schedule (else a long one shows its first and\n"
	    "               last %d)\n"
	    "\n"
	    "Exit status: 0 pass, 1 fail, 125 infra (the environment broke: what\n"
	    "`git bisect run` skips), 64 usage, 78 config error.\n" SOAK_MANUAL,
	    REPLAY_SCHEDULE_LINES / 2);
}

/*
 * The interleaving the seed ran, in step order (the trace above is sorted
 * by turn): the race as it happened, e.g. two reads before two writes.
 */
static void
replay_schedule(const struct cfg *cfg, const char *trace, size_t len,
    bool verbose)
{
	char	*text, err[ERR_LEN];

	text = proxy_schedule_show(trace, len, cfg,
	    verbose ? 0 : REPLAY_SCHEDULE_LINES, err);
	/* the steps' statements and request lines are the system's: escaped
	 * (log.h), each line still a line */
	if (text == NULL)
		printf("\nschedule: not shown: %s\n", err);
	else if (text[0] != '\0') {
		putchar('\n');
		(void)log_escape_put(stdout, text, strlen(text), LOG_ESC_LINES);
	}
	free(text);
}

/*
 * What following a plan took: the steps it made as planned, the exchanges
 * it had no step for, its lock deferrals, and a divergence (docs/plan.md).
 */
static void
replay_plan_said(const struct seed_result *res, bool then_seed)
{
	const char	*p = res->trace, *end, *nl, *div;
	size_t		 unplanned = 0, deferred = 0, after = 0;
	char		 first[64] = "";

	div = json_string_value(json_object_get(res->detail, "diverged"));
	for (end = p ? p + res->trace_len : p; p != NULL && p < end; p = nl + 1) {
		struct trace_line	 l;
		json_t			*j;
		char			 why[ERR_LEN];

		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		/* the trace's own decoder (common/trace.h); the proxy's words
		 * for what a plan did (proxy.h proxy_trace_rec.plan) */
		j = nl > p ? json_loadb(p, (size_t)(nl - p), 0, NULL) : NULL;
		if (j == NULL || trace_line_parse(j, &l, why) == -1 || l.plan == NULL) {
			json_decref(j);
			continue;
		}
		if (strcmp(l.plan, "unplanned") == 0)
			unplanned++;
		else if (strcmp(l.plan, "lock-deferred") == 0) {
			if (deferred++ == 0 && l.deferred != 0)
				snprintf(first, sizeof(first), " (the first at step %"
				    PRIu32 ")", l.deferred);
		} else if (strcmp(l.plan, "after divergence") == 0)
			after++;
		json_decref(j);
	}
	printf("\nplan: %s; %zu unplanned exchange%s, %zu lock deferral%s%s",
	    div != NULL ? "diverged" : "followed", unplanned, unplanned == 1 ?
	    "" : "s", deferred, deferred == 1 ? "" : "s", first);
	if (after > 0 && then_seed)
		printf(", %zu step%s after the divergence under the seed's "
		    "scheduler", after, after == 1 ? "" : "s");
	else if (after > 0)
		printf(", %zu step%s after the divergence (the turns ran to their "
		    "end, the oldest exchange first)", after, after == 1 ? "" : "s");
	printf("\n");
	/* the proxy's account, in the plan's terms, said here only; it
	 * quotes the plan's statement: a plan file is anyone's */
	if (div != NULL) {
		(void)log_escape_put(stdout, div, strlen(div), 0);
		putchar('\n');
	}
}

/* --save-plan: the replay's decisions as a plan. */
static void
replay_save_plan(const struct seed_result *res, const char *path)
{
	json_t	*plan = json_object_get(res->detail, "plan");

	if (!json_is_object(plan)) {
		printf("\nplan not saved: the seed's trace made none (see the log)\n");
		return;
	}
	if (json_dump_file(plan, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == -1)
		printf("\nplan not saved: cannot write %s: %s\n", path,
		    strerror(errno));
	else
		printf("\nplan saved: %s (replay it: soak replay CONFIG --plan %s)\n",
		    path, path);
}

/*
 * The fault trace: without -v only the exchanges something happened to
 * (a fault, or a note from the proxy), then how many others there were;
 * a failure is read from those lines, and a seed of 200 clean exchanges
 * would bury them.  Lines that are not JSON (the cut's own) are shown.
 */
static void
replay_trace(const char *trace, size_t len, bool verbose)
{
	const char	*p = trace, *end = trace + len, *nl;
	size_t		 quiet = 0;

	printf("\nfault trace%s:\n", verbose ? "" : " (exchanges with a fault)");
	for (; p < end; p = nl + 1) {
		struct trace_line	 l;
		json_t			*j;
		char			 why[ERR_LEN];
		bool			 show;

		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl == p)
			continue;
		/* a line that is not an exchange soak wrote (the cut's marker,
		 * a damaged one) is shown as it is */
		j = json_loadb(p, (size_t)(nl - p), 0, NULL);
		show = verbose || j == NULL || trace_line_parse(j, &l, why) == -1 ||
		    l.fault != FAULT_NONE || l.note != NULL;
		json_decref(j);
		/* JSON lines keep their backslashes; what they carry that a
		 * terminal would act on (a damaged line's bytes, C1) escaped */
		if (show) {
			(void)log_escape_put(stdout, p, (size_t)(nl - p),
			    LOG_ESC_BACKSLASH);
			putchar('\n');
		} else
			quiet++;
		if (nl == end)
			break;
	}
	if (quiet > 0)
		printf("(and %zu exchange%s without a fault, not shown: -v shows "
		    "every line; the workspace's trace.jsonl has them all)\n", quiet,
		    quiet == 1 ? "" : "s");
}

static volatile sig_atomic_t	hold_stop;

static void
hold_on_signal(int sig)
{
	hold_stop = sig;
}

/*
 * --shell: returns at Enter (a newline on stdin), the end of stdin, or
 * SIGINT/SIGTERM, and says which.  Both signals stay blocked but inside
 * ppoll, so one that lands between the test and the wait is not missed.
 */
static const char *
replay_hold(void)
{
	struct sigaction	 sa = { .sa_handler = hold_on_signal }, oint, oterm;
	sigset_t		 stop, old, wait;
	const char		*why = NULL;
	char			 buf[256];
	ssize_t			 n;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	wait = old;
	sigdelset(&wait, SIGINT);
	sigdelset(&wait, SIGTERM);
	sigaction(SIGINT, &sa, &oint);
	sigaction(SIGTERM, &sa, &oterm);
	while (why == NULL) {
		struct pollfd	p = { .fd = STDIN_FILENO, .events = POLLIN };

		if (hold_stop) {
			why = hold_stop == SIGINT ? "SIGINT" : "SIGTERM";
			break;
		}
		if (ppoll(&p, 1, NULL, &wait) == -1) {
			if (errno == EINTR)
				continue;
			why = "an error waiting on stdin";
			break;
		}
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			why = n == 0 ? "end of input" : "an error reading stdin";
		else if (memchr(buf, '\n', (size_t)n) != NULL)
			why = "Enter";
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return why;
}

/*
 * What the psql command left out (iso_psql_command's withheld), and how
 * psql gets it instead: the password from the environment or a password
 * file; any other secret (a client key's passphrase) it asks for.
 */
static void
say_withheld(const char *withheld)
{
	char	copy[ISO_WITHHELD_LEN], rest[2 * ISO_WITHHELD_LEN], *w, *save = NULL;
	size_t	rl = 0;
	bool	pw = false;

	snprintf(copy, sizeof(copy), "%s", withheld);
	rest[0] = '\0';
	for (w = strtok_r(copy, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
		if (strcmp(w, "password") == 0)
			pw = true;
		else
			rl += (size_t)snprintf(rest + rl, sizeof(rest) - rl, "%s%s",
			    rl ? ", " : "", w);
	if (pw)
		printf("(the connection's password is not shown: give it to psql "
		    "with PGPASSWORD, PGPASSFILE or ~/.pgpass)\n");
	if (rest[0] != '\0')
		printf("(nor is its %s: psql asks for it when it needs it)\n", rest);
}

/*
 * The kept schema: where it is and how to open it.  --shell prints a
 * ready psql command (iso_psql_command: no secret in it, ever) and holds
 * an embedded database up for it, then stops it (iso_db_close waits for
 * its supervisor to remove every file); plain --keep gives the old hint.
 */
static void
replay_kept(struct iso_db *db, const char *schema, bool shell)
{
	char	*cmd, err[ERR_LEN], withheld[ISO_WITHHELD_LEN];

	/*
	 * One command for both: psql on the kept schema, every setting of the
	 * connection but its secrets, the schema first on the search_path
	 * through the string's own options (PGOPTIONS would lose to options
	 * the URL already has, and psql -c 'SET ...' runs it and exits).
	 */
	if ((cmd = iso_psql_command(db->conninfo, schema, withheld, err)) == NULL) {
		printf("schema kept: %s (no psql command: %s)\n", schema, err);
		return;
	}
	if (!shell) {
		printf("\nschema kept: %s; open it with:\n\n    %s\n\n", schema, cmd);
		say_withheld(withheld);
		if (db->pg)
			printf("note: the embedded database is removed when replay exits; "
			    "add --shell to keep it up while you look, or set "
			    "SOAK_DATABASE_URL\n");
		free(cmd);
		return;
	}
	printf("\nschema kept: %s; open it with:\n\n    %s\n\n", schema, cmd);
	say_withheld(withheld);
	free(cmd);
	if (db->pg == NULL) {
		fflush(stdout);
		return;
	}
	printf("The embedded database stays up until Enter, end of input, Ctrl-C "
	    "or SIGTERM; then it is stopped and removed.\n");
	fflush(stdout);
	printf("%s: stopping the embedded database\n", replay_hold());
	fflush(stdout);
	iso_db_close(db);
	printf("stopped; its files are removed\n");
}

static const char	 default_out[] = "soak-replay";

/* The command line, checked. */
struct replay_opts {
	const char	*config, *out, *seedarg, *against, *planarg, *saveplan;
	uint64_t	 seed;		/* --seed's */
	bool		 then_seed, keep, shell, verbose;
};

/*
 * argv into *o: 1 to go on, else 0 with *status what the command exits
 * with (0 after --help; a usage error, said).
 */
static int
replay_options(int argc, char **argv, struct replay_opts *o, int *status)
{
	static const struct option longopts[] = {
		{ "seed",	required_argument, NULL, 's' },
		{ "keep",	no_argument,	   NULL, 'k' },
		{ "shell",	no_argument,	   NULL, 'S' },
		{ "out",	required_argument, NULL, 'o' },
		{ "trace",	required_argument, NULL, 't' },
		{ "plan",	required_argument, NULL, 'p' },
		{ "then",	required_argument, NULL, 'T' },
		{ "save-plan",	required_argument, NULL, 'P' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	err[ERR_LEN];
	int	ch;

	*status = SOAK_EXIT_USAGE;
	o->out = default_out;
	while ((ch = getopt_long(argc, argv, "s:ko:t:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->seedarg = optarg; break;
		case 'k': o->keep = true; break;
		case 'S': o->shell = o->keep = true; break;
		case 'o': o->out = optarg; break;
		case 't': o->against = optarg; break;
		case 'p': o->planarg = optarg; break;
		case 'P': o->saveplan = optarg; break;
		case 'T':
			if (strcmp(optarg, "seed") != 0) {
				fprintf(stderr, "soak replay: --then takes \"seed\", "
				    "not \"%s\"\n", optarg);
				return 0;
			}
			o->then_seed = true;
			break;
		case 'v': log_init("replay", 1); o->verbose = true; break;
		case 'h': usage(stdout); *status = 0; return 0;
		default: usage(stderr); return 0;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "soak replay: %s\n", optind >= argc ? "which config? "
		    "give its file: soak replay CONFIG --seed N" : "one config only");
		usage(stderr);
		return 0;
	}
	if (o->seedarg == NULL && o->planarg == NULL) {
		fprintf(stderr, "soak replay: which seed? --seed N or --plan FILE is "
		    "required (a failing seed: the summary's, report.json's or a "
		    "ticket's replay command names it)\n");
		return 0;
	}
	if (o->seedarg != NULL && o->planarg != NULL) {
		fprintf(stderr, "soak replay: --seed or --plan, not both (a plan "
		    "names its seed)\n");
		return 0;
	}
	if (o->then_seed && o->planarg == NULL) {
		fprintf(stderr, "soak replay: --then seed continues a plan: give "
		    "--plan FILE\n");
		return 0;
	}
	if (o->seedarg != NULL && seed_parse(o->seedarg, &o->seed, err) == -1) {
		fprintf(stderr, "soak replay: --seed: %s\n", err);
		return 0;
	}
	o->config = argv[optind];
	return 1;
}

/*
 * What the seed left, told after its timeline: the fault trace, each
 * scheduled proxy's interleaving, where its schedule parted from the
 * run's (--trace: runtrace), what the plan said, the plan saved
 * (--save-plan), and where the workspace is.  Whether a failing seed's
 * workspace was moved under outabs/failures/ (false: it stays where it
 * ran, and is not to be removed).
 */
static bool
replay_tell(const struct cfg *cfg, const struct seed_result *res,
    const struct replay_opts *o, const char *runtrace, size_t runtrace_len,
    const char *outabs)
{
	json_t		*ws = json_object_get(res->detail, "workspace");
	json_t		*wserr = json_object_get(res->detail, "workspace_error");
	json_t		*tr = json_object_get(res->detail, "trace");
	bool		 verbose = o->verbose, planned = o->planarg != NULL;
	bool		 moved = true;

	if (json_is_string(tr) && json_string_length(tr) > 0)
		replay_trace(json_string_value(tr), json_string_length(tr),
		    verbose);
	/*
	 * The detail's trace is cut to its first lines, which are in
	 * turn order: a long schedule would lose whole turns' steps.
	 * The interleaving and the comparison read the whole trace.
	 */
	if (res->trace != NULL && (json_is_string(tr) || json_is_string(ws)))
		replay_schedule(cfg, res->trace, res->trace_len, verbose);
	else if (json_is_string(tr))
		replay_schedule(cfg, json_string_value(tr),
		    json_string_length(tr), verbose);
	/*
	 * The run's trace may be cut (RUN/failures/N/trace.jsonl is the
	 * detail's): its marker line holds the digests of its whole
	 * schedules, so the comparison is whole, or says where it
	 * stopped.  Nothing scheduled on either side: no line.
	 */
	if (runtrace != NULL) {
		char	why[4096];

		proxy_schedule_diff(runtrace, runtrace_len,
		    res->trace ? res->trace : "", res->trace_len,
		    "this replay", why, sizeof(why));
		if (why[0] != '\0') {
			printf("\nschedule: ");
			(void)log_escape_put(stdout, why, strlen(why), 0);
			putchar('\n');
		}
	}
	if (planned)
		replay_plan_said(res, o->then_seed);
	if (o->saveplan != NULL)
		replay_save_plan(res, o->saveplan);
	if (json_is_string(wserr)) {
		/* Left where it ran, and said so: not removed below. */
		printf("\nworkspace NOT kept under %s/failures/: %s; it stays "
		    "at %s\n", outabs, json_string_value(wserr),
		    json_string_value(ws));
		moved = false;
	} else if (json_is_string(ws))
		printf("\nworkspace kept: %s\n", json_string_value(ws));
	return moved;
}

int
cmd_replay(int argc, char **argv)
{
	struct replay_opts	 o = { 0 };
	struct cfg		 cfg = { 0 };
	struct wrk		 w = { 0 };
	struct seed_result	 res = { 0 };
	struct iso_db		 db = { 0 };
	const char		*out, *planarg;
	struct plan		 plan = { 0 };
	bool			 planned = false;
	char			*runtrace = NULL;
	size_t			 runtrace_len = 0;
	struct cfg_errors	 cerrs = { 0 };
	char			 err[ERR_LEN], outabs[PATH_MAX], *schema = NULL;
	uint64_t		 seed;
	bool			 keep;
	bool			 moved = true;	/* a failing seed's workspace */
	int			 rc;

	if (!replay_options(argc, argv, &o, &rc))
		return rc;
	/* Anything that stops the seed before its verdict is the environment's. */
	rc = SOAK_EXIT_REPLAY_INFRA;
	out = o.out;
	planarg = o.planarg;
	seed = o.seed;
	keep = o.keep;
	if (planarg != NULL) {
		if (plan_load(planarg, &plan, err) == -1) {
			fprintf(stderr, "soak replay: --plan: %s\n", err);
			return SOAK_EXIT_USAGE;
		}
		planned = true;
		seed = plan.seed;
	}
	/* Read before the seed runs: a wrong path is told before the wait. */
	if (o.against != NULL && (runtrace = read_file(o.against, 64 << 20,
	    &runtrace_len, err)) == NULL) {
		fprintf(stderr, "soak replay: --trace: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	if (cfg_load_file_all(o.config, &cfg, err, &cerrs) == -1) {
		cfg_errors_print(&cerrs, stderr, "soak");
		cfg_errors_free(&cerrs);
		plan_free(&plan);
		return SOAK_EXIT_CONFIG;
	}
	if (planned && plan_fits(&plan, &cfg, err) == -1) {
		fprintf(stderr, "soak replay: %s: %s\n", planarg, err);
		plan_free(&plan);
		cfg_free(&cfg);
		return SOAK_EXIT_CONFIG;
	}
	signal(SIGPIPE, SIG_IGN);
	if (mkdir_p(out, 0755, err) == -1 || realpath(out, outabs) == NULL) {
		fprintf(stderr, "soak replay: %s\n", err);
		goto out;
	}
	if (iso_db_open(&db, &cfg, 1, NULL, err) == -1) {
		fprintf(stderr, "soak replay: %s\n", err);
		goto out;
	}
	w.cfg = &cfg;
	w.run_id = xasprintf("replay%d", (int)getpid());
	w.id = 1;
	w.conninfo = xstrdup(db.conninfo);
	w.workspace = xasprintf("%s/soak-replay-%d", scratch_root(), (int)getpid());
	w.keep_dir = xasprintf("%s/failures", outabs);
	w.timeline = stdout;
	w.keep_all = keep;
	w.whole_trace = true;
	w.plan = planned ? &plan : NULL;
	w.then_seed = o.then_seed;
	w.save_plan = o.saveplan != NULL;
	if (planned)
		printf("replay of %s's plan %s (seed %" PRIu64 ", %d of %d turns x %d "
		    "rounds)\n", cfg.name, planarg, seed, plan_turns_in(&plan, 0),
		    cfg.turns, plan.rounds);
	else
		printf("replay of seed %" PRIu64 " of %s (%d turns x %d rounds)\n",
		    seed, cfg.name, cfg.turns, cfg.rounds);
	/* Where its files go, before they do (--out changes it). */
	if (keep)
		printf("  --keep: the workspace and the schema stay where they are, "
		    "said at the end\n");
	else
		printf("  writes into %s%s/ (a failing seed's workspace: failures/%"
		    PRIu64 "/workspace%s)\n", out[0] == '/' || strncmp(out, "./", 2) == 0 ||
		    strncmp(out, "../", 3) == 0 ? "" : "./", out, seed,
		    out == default_out ? "; --out DIR for another folder" : "");
	if (wrk_open(&w, err) == -1) {
		printf("verdict: infra — %s\n", err);
		wrk_close(&w, !keep);
		goto out;
	}
	wrk_run_seed(&w, seed, 1, &res);
	rc = res.verdict == VERDICT_PASS ? SOAK_EXIT_PASS :
	    res.verdict == VERDICT_FAIL ? SOAK_EXIT_FAIL : SOAK_EXIT_REPLAY_INFRA;
	moved = replay_tell(&cfg, &res, &o, runtrace, runtrace_len, outabs);
	seed_result_clear(&res);
	/* The schema's name outlives the worker's handle on it. */
	schema = keep ? xstrdup(iso_schema(w.iso)) : NULL;
	/* Services and the control connection go; the schema stays. */
	wrk_close(&w, !keep);
	cassettes_merge(&cfg, stdout);
	if (keep)
		replay_kept(&db, schema, o.shell);
out:
	if (!keep && moved && w.workspace)
		rm_rf(w.workspace);
	iso_db_close(&db);
	free(schema);
	free(runtrace);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
	plan_free(&plan);
	cfg_free(&cfg);
	return rc;
}
