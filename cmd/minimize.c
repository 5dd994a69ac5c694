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
#include "isolation/iso.h"
#include "worker/minimize.h"
#include "worker/wrk.h"

/* Exit statuses of its own (docs/minimize.md): 1 means "a failure"
 * everywhere in soak, and a seed that does not fail is none. */
#define MIN_EXIT_DONE		0	/* the plan written is 1-minimal */
#define MIN_EXIT_STOPPED	2	/* --budget or a signal: the smallest so far */
#define MIN_EXIT_NO_FAILURE	3	/* it does not fail: nothing written */
#define MIN_EXIT_CANNOT		SOAK_EXIT_REPLAY_INFRA	/* diverged, or infra */

/* A candidate's time: twice the original's, and never under this. */
#define MIN_TIMEOUT_FLOOR_MS	3000
/* Lines of a turn's own output in the story, and exchanges per turn. */
#define MIN_STORY_TAIL		4
#define MIN_STORY_EXCHANGES	24

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

static char *
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
	size_t	n[MIN_KINDS], o = 0;
	int	k;

	min_counts(p, n);
	buf[0] = '\0';
	for (k = z->rounds ? 0 : 1; k < MIN_KINDS; k++)
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s %zu → %zu, ",
		    min_kind_name((enum min_kind)k), z->n0[k], n[k]);
	snprintf(buf + (o < len ? o : len - 1), o < len ? len - o : 1,
	    "%zu replays, %lld s", m->replays,
	    (long long)((now_ms() - m->started_ms + 500) / 1000));
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

/* The trace's lines (JSON), one at a time: fn(o, arg) for each object. */
static void
trace_each(const char *trace, size_t len, void (*fn)(json_t *o, void *arg),
    void *arg)
{
	const char	*p = trace, *end = trace + len, *nl;

	for (; p != NULL && p < end; p = nl + 1) {
		json_t	*o;

		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl > p && (o = json_loadb(p, (size_t)(nl - p), 0, NULL)) != NULL) {
			if (json_is_object(o))
				fn(o, arg);
			json_decref(o);
		}
	}
}

/* A fault in words. */
static void
fault_words(json_t *o, char *buf, size_t len)
{
	const char	*f = json_string_value(json_object_get(o, "fault"));
	json_int_t	 lat = json_integer_value(json_object_get(o, "latency_ms"));
	bool		 saw = json_is_true(json_object_get(o, "upstream_saw"));
	size_t		 n = 0;

	buf[0] = '\0';
	if (f == NULL || strcmp(f, "none") == 0)
		n = (size_t)snprintf(buf, len, "ok");
	else if (strcmp(f, "lost_reply") == 0)
		n = (size_t)snprintf(buf, len, "reply lost%s", saw ?
		    " (the upstream had done it)" : "");
	else if (strcmp(f, "reset") == 0)
		n = (size_t)snprintf(buf, len, "connection reset%s", saw ?
		    " (after the upstream had it)" : "");
	else if (strcmp(f, "duplicate") == 0)
		n = (size_t)snprintf(buf, len, "sent twice to the upstream");
	else if (strcmp(f, "blackhole") == 0)
		n = (size_t)snprintf(buf, len, "connection black-holed");
	else
		n = (size_t)snprintf(buf, len, "%s", f);
	if (lat > 0 && n < len)
		snprintf(buf + n, len - n, ", %lld ms late", (long long)lat);
}

static const char *
exchange_what(json_t *o)
{
	const char	*w = json_string_value(json_object_get(o, "req"));

	if (w == NULL)
		w = json_string_value(json_object_get(o, "sql"));
	if (w == NULL || w[0] == '\0')
		w = json_string_value(json_object_get(o, "pg"));
	return w != NULL ? w : "(an exchange)";
}

/* One turn's exchanges through the proxies that are not scheduled. */
struct turn_story {
	const struct cfg	*cfg;
	int			 round, turn;
	size_t			 shown, more;
	uint64_t		 seen[64];	/* key hashes, to say "again" */
	size_t			 nseen;
};

static bool
scheduled(const struct cfg *cfg, const char *proxy)
{
	size_t	i;

	for (i = 0; proxy != NULL && i < cfg->nproxies; i++)
		if (strcmp(cfg->proxies[i].name, proxy) == 0)
			return cfg->proxies[i].schedule.enabled;
	return false;
}

static void
turn_exchange(json_t *o, void *arg)
{
	struct turn_story	*ts = arg;
	const char		*proxy = json_string_value(json_object_get(o, "proxy"));
	const char		*what = exchange_what(o);
	char			 words[128];
	uint64_t		 h = fnv1a64(what, strlen(what));
	bool			 again = false;
	size_t			 i;

	const char		*fault = json_string_value(json_object_get(o, "fault"));
	bool			 stmt = json_object_get(o, "req") != NULL ||
				    json_object_get(o, "sql") != NULL;

	if (json_integer_value(json_object_get(o, "round")) != ts->round ||
	    json_integer_value(json_object_get(o, "turn")) != ts->turn ||
	    scheduled(ts->cfg, proxy) || json_object_get(o, "key") == NULL)
		return;
	/* a start-up, a Sync, a Terminate: told only when a fault hit it */
	if (!stmt && (fault == NULL || strcmp(fault, "none") == 0) &&
	    json_integer_value(json_object_get(o, "latency_ms")) == 0)
		return;
	for (i = 0; stmt && i < ts->nseen; i++)
		again |= ts->seen[i] == h;
	if (stmt && !again && ts->nseen < 64)
		ts->seen[ts->nseen++] = h;
	if (ts->shown >= MIN_STORY_EXCHANGES) {
		ts->more++;
		return;
	}
	fault_words(o, words, sizeof(words));
	printf("    %s %s%s — %s\n", proxy ? proxy : "?", what, again ? " again" : "",
	    words);
	ts->shown++;
}

/* The last lines of a turn's output, indented. */
static void
tail_lines(const char *label, const char *s)
{
	const char	*end, *p;
	int		 n = 0;

	if (s == NULL || s[0] == '\0')
		return;
	end = s + strlen(s);
	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (p = end; p > s; p--)
		if (p[-1] == '\n' && ++n == MIN_STORY_TAIL)
			break;
	printf("    its %s (last lines):\n", label);
	while (p < end) {
		const char	*nl = memchr(p, '\n', (size_t)(end - p));

		if (nl == NULL)
			nl = end;
		printf("      | %.*s\n", (int)(nl - p), p);
		p = nl + 1;
	}
}

static json_t *
outcome_of(json_t *turns, int round, int turn)
{
	json_t	*t;
	size_t	 i;

	json_array_foreach(turns, i, t)
		if (json_integer_value(json_object_get(t, "round")) == round &&
		    json_integer_value(json_object_get(t, "turn")) == turn)
			return t;
	return NULL;
}

static void
story_schedule(const struct plan *p)
{
	size_t	i, j;

	for (i = 0; i < p->nproxies; i++) {
		const struct plan_proxy	*x = &p->proxies[i];

		if (x->nsteps == 0)
			continue;
		printf("  the schedule of proxy %s, its steps in order (* a "
		    "preemption):\n", x->name);
		for (j = 0; j < x->nsteps; j++) {
			const struct plan_step	*s = &x->steps[j];
			int			 a = -1;
			bool			 pre = min_is_preemption(x, j, &a);

			printf("  %c %3zu. round %d turn %d  %s", pre ? '*' : ' ', j + 1,
			    s->round, s->turn, s->what ? s->what : "(a statement)");
			if (pre)
				printf("   — preempts turn %d", a);
			if (s->lock_wait)
				printf("   — waited on a lock");
			printf("\n");
		}
	}
}

static void
story_invariants(json_t *invs)
{
	json_t	*inv, *row, *cell;
	size_t	 i, r, c;

	json_array_foreach(invs, i, inv) {
		json_t	*cols = json_object_get(inv, "columns");

		printf("  broken: \"%s\" (%lld row%s)\n",
		    json_string_value(json_object_get(inv, "name")),
		    (long long)json_integer_value(json_object_get(inv, "row_count")),
		    json_integer_value(json_object_get(inv, "row_count")) == 1 ? "" : "s");
		printf("    ");
		json_array_foreach(cols, c, cell)
			printf("%s%s", c ? " | " : "", json_string_value(cell));
		printf("\n");
		json_array_foreach(json_object_get(inv, "rows"), r, row) {
			if (r == 5) {
				printf("    …\n");
				break;
			}
			printf("    ");
			json_array_foreach(row, c, cell)
				printf("%s%s", c ? " | " : "", json_is_string(cell) ?
				    json_string_value(cell) : "NULL");
			printf("\n");
		}
	}
}

/*
 * The story of the minimal plan, from the failing replay of it: the turns
 * that run, each with its exchanges through the proxies that are not
 * scheduled (their faults in words) and its own last output; the
 * schedule's steps in order, preemptions marked; the broken invariants
 * and their rows.
 */
static void
story(const struct cfg *cfg, const struct plan *p, const struct seed_result *res)
{
	json_t	*turns = json_object_get(res->detail, "turns");
	int	 r, t;

	printf("\nthe story (the last failing replay of this plan):\n");
	for (r = 0; r < p->rounds; r++)
		for (t = 0; t < p->turns; t++) {
			struct turn_story	 ts = { .cfg = cfg, .round = r, .turn = t };
			json_t			*o;

			if (!plan_runs(p, r, t))
				continue;
			o = outcome_of(turns, r, t);
			printf("  round %d turn %d: %s", r, t, o ? json_string_value(
			    json_object_get(o, "status")) : "ran");
			if (o != NULL && strcmp(json_string_value(json_object_get(o,
			    "status")), "ok") != 0)
				printf(" (%lld)", (long long)json_integer_value(
				    json_object_get(o, "code")));
			printf("\n");
			trace_each(res->trace, res->trace_len, turn_exchange, &ts);
			if (ts.more > 0)
				printf("    (and %zu more exchanges)\n", ts.more);
			if (o != NULL) {
				tail_lines("stdout", json_string_value(json_object_get(o,
				    "stdout_tail")));
				tail_lines("stderr", json_string_value(json_object_get(o,
				    "stderr_tail")));
			}
		}
	story_schedule(p);
	story_invariants(json_object_get(res->detail, "invariants"));
	if (json_array_size(json_object_get(res->detail, "invariants")) == 0)
		printf("  the failure: %s\n", res->message);
}

static const char *
said_words(enum min_said s)
{
	return s == MIN_STILL_FAILS ? "still fails" : s == MIN_PASSES ? "passes" :
	    "cannot come (diverged)";
}

/*
 * What the explain phase found: each kept fault as the other kinds and
 * with other latencies, each step later and later; "does not
 * matter" where it still fails.
 */
static void
explain_print(const struct plan *p, const struct min_note *v, size_t n,
    int variants)
{
	size_t	i, j;

	printf("\nwhat matters (explain: each fault as the other kinds and with up "
	    "to %d latencies, each step up to %d places later):\n", variants,
	    variants);
	for (i = 0; i < n; i = j) {
		const struct min_note	*a = &v[i];
		size_t			 lats = 0, lfail = 0;
		int64_t			 lo = INT64_MAX, hi = 0;

		for (j = i; j < n && v[j].kind == a->kind && v[j].proxy == a->proxy &&
		    v[j].index == a->index; j++)
			;
		if (a->kind == MIN_FAULTS) {
			const struct plan_fault_rec	*f = &p->proxies[a->proxy].faults[a->index];
			const char			*sep = "";
			size_t				 q;

			printf("  %s round %d turn %d %s (%s%s): ", p->proxies[a->proxy].name,
			    f->round, f->turn, f->what ? f->what : "(an exchange)",
			    plan_fault_name(f->fault), f->latency_ms > 0 ? ", late" : "");
			for (q = i; q < j; q++) {
				if (v[q].latency_ms >= 0) {
					lats++;
					lfail += v[q].said == MIN_STILL_FAILS;
					lo = v[q].latency_ms < lo ? v[q].latency_ms : lo;
					hi = v[q].latency_ms > hi ? v[q].latency_ms : hi;
					continue;
				}
				printf("%s%s — %s", sep, v[q].variant, said_words(v[q].said));
				sep = "; ";
			}
			if (lats > 0 && lfail == lats)
				printf("%slatency: any value (%zu tried, %lld..%lld ms) — still "
				    "fails", sep, lats, (long long)lo, (long long)hi);
			else if (lats > 0)
				for (q = i; q < j; q++)
					if (v[q].latency_ms >= 0 && v[q].said != MIN_STILL_FAILS)
						printf("%s%s — %s", sep, v[q].variant,
						    said_words(v[q].said)), sep = "; ";
			printf("\n");
		} else {
			const struct plan_proxy	*x = &p->proxies[a->proxy];
			const struct plan_step	*s = &x->steps[a->index];
			const struct min_note	*z = &v[j - 1];
			const struct plan_step	*t = &x->steps[a->index + (size_t)z->latency_ms];

			printf("  step %zu of %s, turn %d's %s: ", a->index + 1, x->name,
			    s->turn, s->what ? s->what : "statement");
			if (z->said == MIN_STILL_FAILS)
				printf("%lld later (after turn %d's %s) — still fails (its place "
				    "does not matter that far)\n", (long long)z->latency_ms,
				    t->turn, t->what ? t->what : "statement");
			else
				printf("%s%lld later (after turn %d's %s) — %s (its place "
				    "matters)\n", z->latency_ms > 1 ? "up to 1 less still "
				    "fails; " : "", (long long)z->latency_ms, t->turn, t->what ?
				    t->what : "statement", said_words(z->said));
		}
	}
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

/*
 * The original, up to tries times: its first failing try's result (0), or
 * none failed (-1: *why says how it ended).
 */
static int
original(struct wrk *w, uint64_t seed, int tries, struct seed_result *res,
    char *why, size_t len)
{
	int	i;

	for (i = 0; i < tries; i++) {
		memset(res, 0, sizeof(*res));
		wrk_run_seed(w, seed, 1, res);
		if (res->verdict == VERDICT_FAIL)
			return 0;
		snprintf(why, len, "%s%s%s: %s", msg_verdict_name(res->verdict),
		    res->reason != REASON_NONE ? " " : "", reason_name(res->reason),
		    res->message);
		if (min_stop || i + 1 == tries)
			break;
		seed_result_clear(res);
	}
	return -1;
}

int
cmd_minimize(int argc, char **argv)
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
	struct cfg		 cfg = { 0 };
	struct cfg_errors	 cerrs = { 0 };
	struct wrk		 w = { 0 };
	struct iso_db		 db = { 0 };
	struct plan		 in = { 0 }, best = { 0 };
	struct seed_result	 res = { 0 };
	struct min_run		 m = { 0 };
	struct minimize		 z = { 0 };
	struct sigaction	 sa = { .sa_handler = min_on_signal };
	const char		*seedarg = NULL, *planarg = NULL, *outarg = NULL;
	char			*out = NULL, *keep = NULL, err[ERR_LEN], why[600] = "";
	char			 line[256];
	uint64_t		 seed = 0;
	int64_t			 budget = 0;
	long			 tries = 3, explain = 5;
	struct seed_result	 told = { 0 };
	struct min_note		*notes = NULL;
	size_t			 nnotes = 0;
	bool			 have_story = false;
	int			 ch, rc = MIN_EXIT_CANNOT, stopped = 0;

	while ((ch = getopt_long(argc, argv, "s:p:k:b:o:e:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': seedarg = optarg; break;
		case 'p': planarg = optarg; break;
		case 'o': outarg = optarg; break;
		case 'k': {
			char	*end;

			errno = 0;
			tries = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || tries < 1 || tries > 100) {
				fprintf(stderr, "soak minimize: --tries: \"%s\" is not a "
				    "count of 1..100\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		}
		case 'e': {
			char	*end;

			errno = 0;
			explain = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || explain < 0 || explain > 100) {
				fprintf(stderr, "soak minimize: --explain: \"%s\" is not a "
				    "count of 0..100\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		}
		case 'b':
			if (parse_duration_ms(optarg, &budget, err) == -1 || budget <= 0) {
				fprintf(stderr, "soak minimize: --budget: %s\n", budget <= 0 &&
				    err[0] == '\0' ? "must be more than 0" : err);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'v': log_init("minimize", 1); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "soak minimize: %s\n", optind >= argc ? "which config? "
		    "give its file: soak minimize CONFIG --seed N" : "one config only");
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	if ((seedarg == NULL) == (planarg == NULL)) {
		fprintf(stderr, "soak minimize: %s\n", seedarg == NULL ? "which failure? "
		    "--seed N or --plan FILE is required" : "--seed or --plan, not both "
		    "(a plan names its seed)");
		return SOAK_EXIT_USAGE;
	}
	if (seedarg != NULL && seed_parse(seedarg, &seed, err) == -1) {
		fprintf(stderr, "soak minimize: --seed: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	if (planarg != NULL) {
		if (plan_load(planarg, &in, err) == -1) {
			fprintf(stderr, "soak minimize: --plan: %s\n", err);
			return SOAK_EXIT_USAGE;
		}
		seed = in.seed;
	}
	if (cfg_load_file_all(argv[optind], &cfg, err, &cerrs) == -1) {
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
	if ((out = outarg != NULL ? xstrdup(outarg) : default_out(planarg, seed,
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
	printf(" (%d turns x %d rounds), %ld tr%s a candidate\n", cfg.turns,
	    cfg.rounds, tries, tries == 1 ? "y" : "ies");
	fflush(stdout);
	if (wrk_open(&w, err) == -1) {
		printf("cannot test: %s\n", err);
		goto close;
	}
	/* The original, as given: it must fail, and its fingerprint is the
	 * one every candidate must fail with. */
	if (original(&w, seed, (int)tries, &res, why, sizeof(why)) == -1) {
		if (min_stop) {
			printf("stopped (%s) before the original's verdict: no plan "
			    "written\n", min_stop == SIGINT ? "SIGINT" : "SIGTERM");
			rc = MIN_EXIT_STOPPED;
		} else if (res.verdict == VERDICT_PASS) {
			printf("seed %" PRIu64 " does not fail (%ld tr%s): %s\nnothing to "
			    "minimize; no plan written\n", seed, tries, tries == 1 ? "y" :
			    "ies", why);
			rc = MIN_EXIT_NO_FAILURE;
		} else
			printf("cannot test: seed %" PRIu64 " ended %s\nno plan written\n",
			    seed, why);
		goto close;
	}
	m.want = min_fingerprint(&cfg, &res);
	z.t0 = res.duration_ms;
	if (planarg != NULL) {
		plan_copy(&in, &best);
		if (in.fingerprint != NULL && strcmp(in.fingerprint, m.want) != 0)
			printf("note: the plan was made of a failure \"%s\"; it fails "
			    "\"%s\" now, and that is kept\n", in.fingerprint, m.want);
	} else {
		json_t	*o = json_object_get(res.detail, "plan");
		char	*text = json_is_object(o) ? json_dumps(o, 0) : NULL;

		if (text == NULL || plan_parse(text, strlen(text), "the seed's plan",
		    &best, err) == -1) {
			printf("cannot test: seed %" PRIu64 " failed, but made no plan%s%s\n",
			    seed, text ? ": " : "", text ? err : "");
			free(text);
			goto close;
		}
		free(text);
	}
	free(best.fingerprint);
	best.fingerprint = xstrdup(m.want);
	free(best.message);
	best.message = xstrdup(res.message);
	seed_result_clear(&res);
	/* Explicit runs, no decision of a pair that does not run: the plan
	 * every candidate is made from. */
	{
		struct min_elem	*e;
		size_t		 n = min_elems(&best, MIN_RUNS, &e), i;
		bool		*all = xcalloc(n + 1, sizeof(*all));
		struct plan	 norm;

		for (i = 0; i < n; i++)
			all[i] = true;
		min_candidate(&best, MIN_RUNS, e, n, all, &norm);
		plan_free(&best);
		best = norm;
		free(all);
		free(e);
	}
	min_counts(&best, z.n0);
	z.rounds = cfg.rounds > 1;
	z.config = argv[optind];
	z.out = out;
	if (plan_save(&best, out, err) == -1) {
		printf("cannot write the plan: %s\n", err);
		goto close;
	}
	counts_line(&m, &z, &best, line, sizeof(line));
	printf("fails: %s (%lld ms)\nfailing plan written: %s (rewritten after each "
	    "reduction)\n", m.want, (long long)z.t0, out);
	/* a candidate that waits on a removed turn hangs: twice the time */
	w.seed_timeout_ms = z.t0 * 2 > MIN_TIMEOUT_FLOOR_MS ? z.t0 * 2 :
	    MIN_TIMEOUT_FLOOR_MS;
	w.save_plan = false;
	m.w = &w;
	m.fingerprint = min_fingerprint;
	m.tries = (int)tries;
	m.started_ms = now_ms();
	m.deadline_ms = budget > 0 ? m.started_ms + budget : INT64_MAX;
	m.stop = &min_stop;
	m.accepted = accepted;
	m.arg = &z;
	fflush(stdout);
	/* the plan replays its failure, or there is nothing to reduce */
	switch (min_test(&m, &best)) {
	case 0:
		printf("seed %" PRIu64 " fails, but its plan does not replay the "
		    "failure in %ld tr%s (%zu diverged, %zu failed otherwise); no "
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
	counts_line(&m, &z, &best, line, sizeof(line));
	if (stopped == -1) {
		/* the best so far first: it is what a stopped user came for */
		printf("\nstopped (%s): the smallest failing plan so far, not shown "
		    "1-minimal: %s\n    soak replay %s --plan %s\n%s\n", min_stop ?
		    (min_stop == SIGINT ? "SIGINT" : "SIGTERM") : "--budget", out,
		    z.config, out, line);
		rc = MIN_EXIT_STOPPED;
	} else {
		size_t	n[MIN_KINDS];

		min_counts(&best, n);
		printf("\n1-minimal%s: %s\n    soak replay %s --plan %s\n%s\n",
		    memcmp(n, z.n0, sizeof(n)) == 0 ? " already (nothing could go)" :
		    "", out, z.config, out, line);
		rc = MIN_EXIT_DONE;
	}
	if (plan_save(&best, out, err) == -1)
		printf("(not written: %s)\n", err);
	printf("replays: %zu, of %zu candidate plans (up to %ld tr%s each; %zu more "
	    "were the same as one tried before); %zu diverged, %zu failed "
	    "otherwise\n", m.replays, m.candidates, tries, tries == 1 ? "y" : "ies",
	    m.cached, m.diverged, m.other);
	if (m.disagreed > 0)
		printf("tries that disagreed: %zu (a try passed, a later try of the same "
		    "plan failed): delta debugging is not monotonic for concurrency, "
		    "raise --tries to trust a removal more\n", m.disagreed);
	else
		printf("tries that disagreed: 0 (no candidate passed a try and then "
		    "failed one)\n");
	/* The story of the plan as written: from its own failing replay (one
	 * more when the last was another plan's: the cache forgotten, the
	 * budget no longer in the way). */
	if (m.last_hash != min_plan_hash(&best) && !min_stop) {
		m.nseen = 0;
		m.deadline_ms = INT64_MAX;
		(void)min_test(&m, &best);
	}
	if (m.last_hash == min_plan_hash(&best)) {
		told = m.last;
		memset(&m.last, 0, sizeof(m.last));
		have_story = true;
	}
	/* Explain: what of it does not matter (not of a stopped one). */
	if (stopped == 0 && explain > 0) {
		log_set_warnings(log_verbose());
		if (min_explain(&m, &best, (int)explain, &notes, &nnotes) == -1)
			printf("(explain stopped: %s)\n", min_stop ? "a signal" : "the budget");
		log_set_warnings(1);
	}
	if (have_story)
		story(&cfg, &best, &told);
	else
		printf("\n(no story: the plan's last failing replay is not this plan's)\n");
	if (nnotes > 0)
		explain_print(&best, notes, nnotes, (int)explain);
close:
	wrk_close(&w, true);
out:
	if (keep != NULL)
		rm_rf(keep);
	iso_db_close(&db);
	seed_result_clear(&res);
	seed_result_clear(&told);
	free(notes);
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
