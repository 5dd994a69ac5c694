/*
 * `soak minimize CONFIG (--seed N | --plan FILE)`: a failing seed's plan
 * reduced by delta debugging to a 1-minimal one (worker/minimize.h), in
 * this process against one database, and told as a story.
 * docs/minimize.md is the user's account.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/plan.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/units.h"
#include "common/util.h"
#include "coordinator/fingerprint.h"
#include "coordinator/report.h"
#include "isolation/iso.h"
#include "worker/minimize.h"
#include "worker/wrk.h"

/* Exit statuses of its own (docs/minimize.md): 1 means "a failure"
 * everywhere in soak, and a seed that does not fail is none. */
#define MIN_EXIT_DONE		0	/* the plan written is 1-minimal */
#define MIN_EXIT_STOPPED	2	/* --budget or a signal: the smallest so far */
#define MIN_EXIT_NO_FAILURE	3	/* it does not fail: nothing written */
#define MIN_EXIT_CANNOT		SOAK_EXIT_REPLAY_INFRA	/* diverged, or infra */


static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak minimize CONFIG (--seed N | --plan FILE) [--tries K]\n"
	    "                     [--budget DUR] [--out FILE] [--explain N] [-v]\n"
	    "\n"
	    "Reduces a failing seed's plan (docs/plan.md) by delta debugging until it\n"
	    "is 1-minimal: removing any one element left makes the failure go away.\n"
	    "The elements, in this order, again until a pass removes nothing: rounds;\n"
	    "(round, turn) pairs; faults; a scheduled proxy's preemptions (a step\n"
	    "that passed over the previous step's turn while it was still waiting).\n"
	    "Every candidate is replayed in this process against one database, as\n"
	    "`soak replay --plan` would, and fails only with the original's\n"
	    "fingerprint.  One line per accepted reduction; at the end the plan, the\n"
	    "command that replays it, and its story.\n"
	    "\n"
	    "  --seed N     the failing seed (its plan is made from its own run)\n"
	    "  --plan FILE  a failing plan: a run's failures/N/plan.json, a pinned\n"
	    "               regression\n"
	    "  --tries K    replays of each candidate, which fails if any does\n"
	    "               (default 3): delta debugging assumes a candidate\n"
	    "               always does the same, and concurrency need not\n"
	    "  --budget DUR stop after DUR (30s, 5m) with the smallest failing\n"
	    "               plan so far; Ctrl-C and SIGTERM stop it the same way\n"
	    "  --out FILE   where the plan goes (default: beside --plan FILE as\n"
	    "               NAME.min.json, e.g. failures/N/plan.min.json; for --seed\n"
	    "               N, ./soak-minimize/seed-N.plan.json); written at once\n"
	    "               and after each reduction\n"
	    "  --explain N  after minimizing, try each kept fault as the other kinds\n"
	    "               and with N latencies drawn from the seed, each kept step\n"
	    "               up to N places later, and say what does not matter\n"
	    "               (default 5; 0: none)\n"
	    "  -v, --verbose\n"
	    "               log every replay's state changes and warnings (else a\n"
	    "               candidate's divergence is counted, not told)\n"
	    "\n"
	    "A candidate gets about twice the original's time (at least %d s), so a\n"
	    "turn that waits on a removed peer ends it instead of turn.timeout.\n"
	    "\n"
	    "Exit status: 0 the plan written is 1-minimal (smaller, or the input\n"
	    "already was); 2 stopped by --budget or a signal: the plan written is the\n"
	    "smallest failing one so far, not shown 1-minimal; 3 the seed or plan does\n"
	    "not fail in K tries (or its plan does not replay its failure): nothing\n"
	    "written; 125 cannot test: the original diverged or ended infra; 64 usage;\n"
	    "78 config error.  Never 1: that is \"a failure\" everywhere in soak.\n"
	    SOAK_MANUAL, MIN_TIMEOUT_FLOOR_MS / 1000);
}

static volatile sig_atomic_t	min_stop;

static void
min_on_signal(int sig)
{
	min_stop = sig;
}

char *
min_fingerprint(const struct cfg *cfg, const struct seed_result *res)
{
	if (res->verdict != VERDICT_FAIL)
		return NULL;
	return fp_string(cfg->name, reason_name(res->reason),
	    json_object_get(res->detail, "invariants"));
}

/* What the command keeps between reductions. */
struct minimize {
	const char	*config, *out;
	size_t		 n0[MIN_KINDS];
	bool		 rounds;	/* say rounds: the config has more than one */
	int64_t		 t0;
};

static void
counts_line(const struct min_run *m, const struct minimize *z,
    const struct plan *p, char *buf, size_t len)
{
	min_counts_line(m, z->n0, z->rounds, p, buf, len);
}

static void
accepted(struct min_run *m, const struct plan *best, void *arg)
{
	struct minimize	*z = arg;
	char		 line[256], err[ERR_LEN];

	counts_line(m, z, best, line, sizeof(line));
	printf("%s\n", line);
	if (plan_save(best, z->out, err) == -1)
		printf("  (not written: %s)\n", err);
	fflush(stdout);
}

/* The default --out: beside the plan, or under ./soak-minimize/. */
static char *
default_out(const char *planarg, uint64_t seed, char *err)
{
	if (planarg != NULL) {
		size_t	n = strlen(planarg);

		if (n > 5 && strcmp(planarg + n - 5, ".json") == 0)
			return xasprintf("%.*s.min.json", (int)(n - 5), planarg);
		return xasprintf("%s.min.json", planarg);
	}
	if (mkdir_p("soak-minimize", 0755, err) == -1)
		return NULL;
	return xasprintf("soak-minimize/seed-%" PRIu64 ".plan.json", seed);
}

/* The command line, checked. */
struct min_opts {
	const char	*config, *seedarg, *planarg, *outarg;
	uint64_t	 seed;		/* --seed's */
	int64_t		 budget;	/* --budget's ms; 0: none */
	int64_t		 tries, explain;
};

/*
 * argv into *o: 1 to go on, else 0 with *status what the command exits
 * with (0 after --help; a usage error, said).
 */
static int
min_options(int argc, char **argv, struct min_opts *o, int *status)
{
	static const struct option longopts[] = {
		{ "seed",	required_argument, NULL, 's' },
		{ "plan",	required_argument, NULL, 'p' },
		{ "tries",	required_argument, NULL, 'k' },
		{ "budget",	required_argument, NULL, 'b' },
		{ "out",	required_argument, NULL, 'o' },
		{ "explain",	required_argument, NULL, 'e' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	err[ERR_LEN];
	int	ch;

	*status = SOAK_EXIT_USAGE;
	o->tries = 3;
	o->explain = 5;
	while ((ch = getopt_long(argc, argv, "s:p:k:b:o:e:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->seedarg = optarg; break;
		case 'p': o->planarg = optarg; break;
		case 'o': o->outarg = optarg; break;
		case 'k':
			if (parse_count(optarg, 1, 100, &o->tries, err) == -1) {
				fprintf(stderr, "soak minimize: --tries: %s\n", err);
				return 0;
			}
			break;
		case 'e':
			if (parse_count(optarg, 0, 100, &o->explain, err) == -1) {
				fprintf(stderr, "soak minimize: --explain: %s\n", err);
				return 0;
			}
			break;
		case 'b':
			if (parse_duration_ms(optarg, &o->budget, err) == -1 ||
			    o->budget <= 0) {
				fprintf(stderr, "soak minimize: --budget: %s\n",
				    o->budget <= 0 && err[0] == '\0' ?
				    "must be more than 0" : err);
				return 0;
			}
			break;
		case 'v': log_init("minimize", 1); break;
		case 'h': usage(stdout); *status = 0; return 0;
		default: usage(stderr); return 0;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "soak minimize: %s\n", optind >= argc ? "which config? "
		    "give its file: soak minimize CONFIG --seed N" : "one config only");
		usage(stderr);
		return 0;
	}
	if ((o->seedarg == NULL) == (o->planarg == NULL)) {
		fprintf(stderr, "soak minimize: %s\n", o->seedarg == NULL ?
		    "which failure? --seed N or --plan FILE is required" :
		    "--seed or --plan, not both (a plan names its seed)");
		return 0;
	}
	if (o->seedarg != NULL && seed_parse(o->seedarg, &o->seed, err) == -1) {
		fprintf(stderr, "soak minimize: --seed: %s\n", err);
		return 0;
	}
	o->config = argv[optind];
	return 1;
}

/*
 * The original, as given: it must fail, and its fingerprint (m->want) is
 * the one every candidate must fail with; *best its plan, z->n0 and z->t0
 * what it holds and how long it ran.  -1, said, when there is nothing to
 * minimize (*rc set unless it is "cannot test").
 */
static int
min_start(struct wrk *w, const struct min_opts *o, uint64_t seed,
    const struct plan *in, struct min_run *m, struct minimize *z,
    struct plan *best, int *rc)
{
	struct seed_result	 res = { 0 };
	char			 err[ERR_LEN], why[600] = "";
	int64_t			 tries = o->tries;
	int			 ret = -1;

	if (min_original(w, seed, (int)tries, &min_stop, &res, why, sizeof(why)) == -1) {
		if (min_stop) {
			printf("stopped (%s) before the original's verdict: no plan "
			    "written\n", min_stop == SIGINT ? "SIGINT" : "SIGTERM");
			*rc = MIN_EXIT_STOPPED;
		} else if (res.verdict == VERDICT_PASS) {
			printf("seed %" PRIu64 " does not fail (%" PRId64 " tr%s): %s\nnothing to "
			    "minimize; no plan written\n", seed, tries, tries == 1 ? "y" :
			    "ies", why);
			*rc = MIN_EXIT_NO_FAILURE;
		} else
			printf("cannot test: seed %" PRIu64 " ended %s\nno plan written\n",
			    seed, why);
		goto out;
	}
	m->want = min_fingerprint(w->cfg, &res);
	z->t0 = res.duration_ms;
	if (o->planarg != NULL) {
		plan_copy(in, best);
		if (in->fingerprint != NULL && strcmp(in->fingerprint, m->want) != 0)
			printf("note: the plan was made of a failure \"%s\"; it fails "
			    "\"%s\" now, and that is kept\n", in->fingerprint, m->want);
	} else if (min_plan_of(&res, best, err) == -1) {
		printf("cannot test: seed %" PRIu64 " failed, but made no plan: %s\n",
		    seed, err);
		goto out;
	}
	min_prepare(best, m->want, res.message, z->n0);
	ret = 0;
out:
	seed_result_clear(&res);
	return ret;
}

/*
 * How it ended (stopped: -1 when --budget or a signal stopped it), the
 * plan written once more, the replays' counts, then the plan's story and
 * what of it does not matter.  The exit status.
 */
static int
min_report(struct min_run *m, const struct minimize *z, const struct cfg *cfg,
    const struct min_opts *o, struct plan *best, int stopped)
{
	struct seed_result	 told = { 0 };
	struct min_note		*notes = NULL;
	size_t			 nnotes = 0;
	bool			 have_story = false;
	char			 line[256], err[ERR_LEN], *replay;
	const char		*out = z->out;
	int64_t			 tries = o->tries, explain = o->explain;
	int			 rc;

	counts_line(m, z, best, line, sizeof(line));
	/* the command as soak was invoked, so that it runs as printed */
	replay = report_replay_plan_here(z->config, out);
	if (stopped == -1) {
		/* the best so far first: it is what a stopped user came for */
		printf("\nstopped (%s): the smallest failing plan so far, not shown "
		    "1-minimal: %s\n    %s\n%s\n", min_stop ? (min_stop == SIGINT ?
		    "SIGINT" : "SIGTERM") : "--budget", out, replay, line);
		rc = MIN_EXIT_STOPPED;
	} else {
		size_t	n[MIN_KINDS];

		min_counts(best, n);
		printf("\n1-minimal%s: %s\n    %s\n%s\n", memcmp(n, z->n0, sizeof(n)) ==
		    0 ? " already (nothing could go)" : "", out, replay, line);
		rc = MIN_EXIT_DONE;
	}
	free(replay);
	if (plan_save(best, out, err) == -1)
		printf("(not written: %s)\n", err);
	printf("replays: %zu, of %zu candidate plans (up to %" PRId64 " tr%s each; %zu more "
	    "were the same as one tried before); %zu diverged, %zu failed "
	    "otherwise\n", m->replays, m->candidates, tries, tries == 1 ? "y" : "ies",
	    m->cached, m->diverged, m->other);
	if (m->disagreed > 0)
		printf("tries that disagreed: %zu (a try passed, a later try of the same "
		    "plan failed): delta debugging is not monotonic for concurrency, "
		    "raise --tries to trust a removal more\n", m->disagreed);
	else
		printf("tries that disagreed: 0 (no candidate passed a try and then "
		    "failed one)\n");
	/* The story of the plan as written: from its own failing replay. */
	if (min_replayed(m, best)) {
		told = m->last;
		memset(&m->last, 0, sizeof(m->last));
		have_story = true;
	}
	/* Explain: what of it does not matter (not of a stopped one). */
	if (stopped == 0 && explain > 0) {
		log_set_warnings(log_verbose());
		if (min_explain(m, best, (int)explain, &notes, &nnotes) == -1)
			printf("(explain stopped: %s)\n", min_stop ? "a signal" : "the budget");
		log_set_warnings(1);
	}
	if (have_story) {
		printf("\nthe story (the last failing replay of this plan):\n");
		min_story(stdout, cfg, best, &told);
	}
	else
		printf("\n(no story: the plan's last failing replay is not this plan's)\n");
	if (nnotes > 0)
		min_explain_print(stdout, best, notes, nnotes, (int)explain);
	seed_result_clear(&told);
	free(notes);
	return rc;
}

int
cmd_minimize(int argc, char **argv)
{
	struct cfg		 cfg = { 0 };
	struct cfg_errors	 cerrs = { 0 };
	struct wrk		 w = { 0 };
	struct iso_db		 db = { 0 };
	struct plan		 in = { 0 }, best = { 0 };
	struct min_run		 m = { 0 };
	struct minimize		 z = { 0 };
	struct min_opts		 o = { 0 };
	struct sigaction	 sa = { .sa_handler = min_on_signal };
	const char		*planarg;
	char			*out = NULL, *keep = NULL, err[ERR_LEN];
	char			 line[256];
	uint64_t		 seed;
	long			 tries;
	int			 rc, stopped = 0;

	if (!min_options(argc, argv, &o, &rc))
		return rc;
	rc = MIN_EXIT_CANNOT;
	planarg = o.planarg;
	seed = o.seed;
	tries = o.tries;
	if (planarg != NULL) {
		if (plan_load(planarg, &in, err) == -1) {
			fprintf(stderr, "soak minimize: --plan: %s\n", err);
			return SOAK_EXIT_USAGE;
		}
		seed = in.seed;
	}
	if (cfg_load_file_all(o.config, &cfg, err, &cerrs) == -1) {
		cfg_errors_print(&cerrs, stderr, "soak");
		cfg_errors_free(&cerrs);
		plan_free(&in);
		return SOAK_EXIT_CONFIG;
	}
	if (planarg != NULL && plan_fits(&in, &cfg, err) == -1) {
		fprintf(stderr, "soak minimize: %s: %s\n", planarg, err);
		rc = SOAK_EXIT_CONFIG;
		goto out;
	}
	if ((out = o.outarg != NULL ? xstrdup(o.outarg) : default_out(planarg, seed,
	    err)) == NULL) {
		fprintf(stderr, "soak minimize: %s\n", err);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (iso_db_open(&db, &cfg, 1, NULL, err) == -1) {
		fprintf(stderr, "soak minimize: %s\n", err);
		goto out;
	}
	keep = xasprintf("%s/soak-minimize-%d", scratch_root(), (int)getpid());
	w.cfg = &cfg;
	w.run_id = xasprintf("minimize%d", (int)getpid());
	w.id = 1;
	w.conninfo = xstrdup(db.conninfo);
	w.workspace = xasprintf("%s/work", keep);
	w.keep_dir = xasprintf("%s/failures", keep);
	w.whole_trace = true;
	w.save_plan = planarg == NULL;
	w.plan = planarg != NULL ? &in : NULL;
	if (planarg != NULL)
		printf("minimize %s of %s", planarg, cfg.name);
	else
		printf("minimize seed %" PRIu64 " of %s", seed, cfg.name);
	printf(" (%d turns x %d rounds), %" PRId64 " tr%s a candidate\n", cfg.turns,
	    cfg.rounds, tries, tries == 1 ? "y" : "ies");
	fflush(stdout);
	if (wrk_open(&w, err) == -1) {
		printf("cannot test: %s\n", err);
		goto close;
	}
	if (min_start(&w, &o, seed, &in, &m, &z, &best, &rc) == -1)
		goto close;
	z.rounds = cfg.rounds > 1;
	z.config = o.config;
	z.out = out;
	if (plan_save(&best, out, err) == -1) {
		printf("cannot write the plan: %s\n", err);
		goto close;
	}
	counts_line(&m, &z, &best, line, sizeof(line));
	printf("fails: %s (%lld ms)\nfailing plan written: %s (rewritten after each "
	    "reduction)\n", m.want, (long long)z.t0, out);
	w.seed_timeout_ms = min_candidate_ms(&cfg, z.t0);
	w.save_plan = false;
	m.w = &w;
	m.fingerprint = min_fingerprint;
	m.tries = (int)tries;
	m.started_ms = now_ms();
	m.deadline_ms = o.budget > 0 ? m.started_ms + o.budget : INT64_MAX;
	m.stop = &min_stop;
	m.accepted = accepted;
	m.arg = &z;
	fflush(stdout);
	/* the plan replays its failure, or there is nothing to reduce */
	switch (min_test(&m, &best)) {
	case 0:
		printf("seed %" PRIu64 " fails, but its plan does not replay the "
		    "failure in %" PRId64 " tr%s (%zu diverged, %zu failed otherwise); no "
		    "plan written\n", seed, tries, tries == 1 ? "y" : "ies",
		    m.diverged, m.other);
		unlink(out);
		rc = MIN_EXIT_NO_FAILURE;
		goto close;
	case -1:
		stopped = -1;
		goto report;
	default:
		break;
	}
	/* a candidate's divergence is counted, not told, unless -v */
	log_set_warnings(log_verbose());
	stopped = min_minimize(&m, &best);
	log_set_warnings(1);
report:
	rc = min_report(&m, &z, &cfg, &o, &best, stopped);
close:
	wrk_close(&w, true);
out:
	if (keep != NULL)
		rm_rf(keep);
	iso_db_close(&db);
	min_run_free(&m);
	free(m.want);
	free(keep);
	free(out);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
	plan_free(&best);
	plan_free(&in);
	cfg_free(&cfg);
	return rc;
}
