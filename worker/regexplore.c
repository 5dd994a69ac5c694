/*
 * A regression whose plan diverged, judged by exploring its turns within
 * its plan's preemptions (worker/regexplore.h).
 */
#include "worker/regexplore.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"
#include "common/verdict.h"
#include "worker/explore.h"
#include "worker/minimize.h"

/* ---- what the plan was about ---- */

int
rx_preemptions(const struct plan_proxy *pp, bool *from_cand)
{
	size_t	i;
	int	n = 0;

	*from_cand = true;
	for (i = 1; pp != NULL && i < pp->nsteps; i++) {
		const struct plan_step	*a = &pp->steps[i - 1], *b = &pp->steps[i];

		/* a switch away from a turn with steps left (minimize.c's) */
		if (a->round == b->round && a->turn != b->turn && !b->has_cand) {
			size_t	j;

			for (j = i; j < pp->nsteps && !(pp->steps[j].round == a->round &&
			    pp->steps[j].turn == a->turn); j++)
				;
			if (j < pp->nsteps)
				*from_cand = false;
		}
		n += min_is_preemption(pp, i, NULL);
	}
	return n;
}

uint64_t
rx_turns(const struct plan *p)
{
	uint64_t	m = 0;
	int		r, t;

	for (r = 0; r < p->rounds; r++)
		for (t = 0; t < p->turns && t < XP_MAX_TURNS; t++)
			if (plan_runs(p, r, t))
				m |= (uint64_t)1 << t;
	return m;
}

/* The first index where (round, turn)'s exchanges in the plan and in the
 * run differ by key; *plan_i the plan's step there, *run_i the run's. */
static bool
turn_differs(const struct plan_proxy *pp, const struct xstep *run, size_t n,
    int round, int turn, size_t *plan_i, size_t *run_i)
{
	size_t	i = 0, j = 0;

	for (;;) {
		while (i < pp->nsteps && (pp->steps[i].round != round ||
		    pp->steps[i].turn != turn))
			i++;
		while (j < n && (run[j].round != round || run[j].turn != turn))
			j++;
		if (i == pp->nsteps)
			return false;	/* every planned one came (more may have) */
		if (j == n || run[j].key != pp->steps[i].key) {
			*plan_i = i;
			*run_i = j;
			return true;
		}
		i++;
		j++;
	}
}

void
rx_divergence(const struct plan_proxy *pp, const struct xstep *run, size_t n,
    struct rx_divergence *d)
{
	uint64_t	seen[XP_MAX_TURNS] = { 0 };	/* rounds looked at, per turn */
	uint64_t	changed = 0;
	size_t		i, pi, ri, best = SIZE_MAX, best_run = 0;

	memset(d, 0, sizeof(*d));
	for (i = 0; pp != NULL && i < pp->nsteps; i++) {
		const struct plan_step	*s = &pp->steps[i];

		if (s->turn < 0 || s->turn >= XP_MAX_TURNS || s->round < 0 ||
		    (s->round < 64 && (seen[s->turn] >> s->round & 1)))
			continue;
		if (s->round < 64)
			seen[s->turn] |= (uint64_t)1 << s->round;
		if (!turn_differs(pp, run, n, s->round, s->turn, &pi, &ri))
			continue;
		changed |= (uint64_t)1 << s->turn;
		if (pi < best) {
			best = pi;
			best_run = ri;
		}
	}
	if (best == SIZE_MAX)
		return;		/* RX_NONE: the order, not the statements */
	d->step = best + 1;
	d->turn = pp->steps[best].turn;
	d->round = pp->steps[best].round;
	d->others = changed & ~((uint64_t)1 << d->turn);
	snprintf(d->wanted, sizeof(d->wanted), "%s", pp->steps[best].what ?
	    pp->steps[best].what : "exchange");
	if (best_run < n) {
		d->kind = RX_CHANGED;
		snprintf(d->came, sizeof(d->came), "%s", run[best_run].what);
	} else
		d->kind = RX_ENDED;
}

const char *
rx_divergence_words(const struct rx_divergence *d, char *buf, size_t len)
{
	char	more[160] = "";
	size_t	o;
	int	t, left = __builtin_popcountll(d->others);

	if (left > 0) {
		o = (size_t)snprintf(more, sizeof(more), " (%s", left > 1 ?
		    "those of turns" : "turn");
		for (t = 0; t < XP_MAX_TURNS && o < sizeof(more); t++)
			if (d->others >> t & 1)
				o += (size_t)snprintf(more + o, sizeof(more) - o, " %d%s", t,
				    --left > 1 ? "," : left == 1 ? " and" : "");
		if (o < sizeof(more))
			snprintf(more + o, sizeof(more) - o, "%s too)",
			    __builtin_popcountll(d->others) > 1 ? "" : "'s");
	}
	switch (d->kind) {
	case RX_CHANGED:
		snprintf(buf, len, "turn %d's statements changed at step %zu%s", d->turn,
		    d->step, more);
		break;
	case RX_ENDED:
		snprintf(buf, len, "turn %d ended before step %zu%s", d->turn, d->step,
		    more);
		break;
	case RX_NONE:
		snprintf(buf, len, "its order could not be followed, though every turn "
		    "sent the statements it names");
		break;
	}
	return buf;
}

/* ---- the exploration ---- */

struct rx {
	const struct plan_proxy	*pp;		/* the plan's steps at the proxy */
	/* the first failing execution */
	bool			 failed;
	struct xrec		 fail;		/* its verdict, message, invariants, plan */
	char			*fail_turns;
	uint64_t		 fail_no;
	/* the passing schedule closest to the plan's order (refresh) */
	struct xstep		*best;
	size_t			 nbest, best_score;
};

/*
 * How much of the plan's order (a turn per step) a schedule keeps: the
 * longest common subsequence of the two, or, past a million cells, the
 * common prefix.
 */
static size_t
order_kept(const struct plan_proxy *pp, const struct xstep *s, size_t n)
{
	size_t	m = pp->nsteps, i, j, *row, diag, up, best;

	if (m == 0 || n == 0)
		return 0;
	if (m > 1000000 / n) {
		for (i = 0; i < m && i < n && pp->steps[i].turn == s[i].turn; i++)
			;
		return i;
	}
	row = xcalloc(n + 1, sizeof(*row));
	for (i = 0; i < m; i++) {
		diag = 0;
		for (j = 0; j < n; j++) {
			up = row[j + 1];
			row[j + 1] = pp->steps[i].turn == s[j].turn ? diag + 1 :
			    up > row[j] ? up : row[j];
			diag = up;
		}
	}
	best = row[n];
	free(row);
	return best;
}

static void
rx_event(void *arg, const struct xp_event_info *ev)
{
	struct rx		*r = arg;
	const struct xrec	*rec = ev->rec;
	size_t			 score;

	if (ev->kind != XE_EXECUTION || rec == NULL || !rec->has_steps)
		return;
	if (rec->verdict == VERDICT_FAIL && !r->failed) {
		r->failed = true;
		r->fail.verdict = rec->verdict;
		r->fail.reason = rec->reason;
		snprintf(r->fail.message, sizeof(r->fail.message), "%s", rec->message);
		r->fail.invariants = json_incref(rec->invariants);
		r->fail.plan = json_incref(rec->plan);
		r->fail_turns = xstrdup(ev->turns ? ev->turns : "");
		r->fail_no = ev->node;
	} else if (rec->verdict == VERDICT_PASS) {
		score = order_kept(r->pp, rec->steps, rec->n);
		if (r->best == NULL || score > r->best_score) {
			free(r->best);
			r->best = xcalloc(rec->n + 1, sizeof(*r->best));
			memcpy(r->best, rec->steps, rec->n * sizeof(*r->best));
			r->nbest = rec->n;
			r->best_score = score;
		}
	}
}

/* "1,2": the turns of a mask. */
static void
turns_text(uint64_t m, char *buf, size_t len)
{
	size_t	o = 0;
	int	t;

	buf[0] = '\0';
	for (t = 0; t < XP_MAX_TURNS && o < len; t++)
		if (m >> t & 1)
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", t);
}

/* The one proxy of cfg with a schedule, or NULL (*n: how many there are). */
static const char *
scheduled_proxy(const struct cfg *cfg, size_t *n)
{
	const char	*name = NULL;
	size_t		 i;

	*n = 0;
	for (i = 0; i < cfg->nproxies; i++)
		if (cfg->proxies[i].schedule.enabled) {
			name = cfg->proxies[i].name;
			(*n)++;
		}
	return *n == 1 ? name : NULL;
}

/* The plan p with the scheduled proxy's steps those of s (the refresh). */
static json_t *
refresh_plan(const struct plan *p, const char *proxy, const struct xstep *s, size_t n)
{
	struct plan		 np;
	struct plan_proxy	*pp;
	json_t			*j;
	char			*text;
	size_t			 i;

	plan_copy(p, &np);
	pp = xp_proxy_entry(&np, proxy);
	xp_prefix_start(pp);
	pp->prefix = false;
	pp->steps = xcalloc(n + 1, sizeof(*pp->steps));
	for (i = 0; i < n; i++) {
		pp->steps[i].round = s[i].round;
		pp->steps[i].turn = s[i].turn;
		pp->steps[i].key = s[i].key;
		pp->steps[i].occ = s[i].occ;
		pp->steps[i].what = xstrdup(s[i].what);
		pp->steps[i].cand = s[i].cand;
		pp->steps[i].has_cand = true;
	}
	pp->nsteps = n;
	text = plan_dump(&np);
	j = json_loads(text, 0, NULL);
	free(text);
	plan_free(&np);
	return j;
}

/* Why an exploration that found no failure is not complete, in words. */
static void
why_incomplete(const struct explore *x, const char *stopped, int budget, char *buf,
    size_t len)
{
	const struct xstats	*s = explore_stats(x);
	size_t			 left = explore_left(x);

	if (stopped != NULL && strcmp(stopped, "the budget") == 0)
		snprintf(buf, len, "the budget of %d execution%s "
		    "(regressions_explore_budget) ran out with %zu branch%s left",
		    budget, budget == 1 ? "" : "s", left, left == 1 ? "" : "es");
	else if (stopped != NULL)
		snprintf(buf, len, "stopped by %s with %zu branch%s left", stopped, left,
		    left == 1 ? "" : "es");
	else if (s->diverged > 0 || s->infra > 0)
		snprintf(buf, len, "%" PRIu64 " execution%s diverged and %" PRIu64
		    " broke, their subtrees unexplored", s->diverged,
		    s->diverged == 1 ? "" : "s", s->infra);
	else if (s->inexact > 0)
		snprintf(buf, len, "%" PRIu64 " of %" PRIu64 " executions were not exact "
		    "(%" PRIu64 " decisions forced by a timeout, %" PRIu64 " commits that "
		    "woke several lock waiters, %" PRIu64 " deadlocks broken by "
		    "PostgreSQL, %" PRIu64 " with a turn's connections open at once, %"
		    PRIu64 " serialized, %" PRIu64 " LISTEN/NOTIFY)", s->inexact,
		    s->executions, s->forced, s->wakes, s->pg_deadlocks, s->overlap,
		    s->serialized, s->notify);
	else
		snprintf(buf, len, "%" PRIu64 " waiting turn%s a branch named never "
		    "went", s->no_alternative, s->no_alternative == 1 ? "" : "s");
}

/* The judgement's own fields, whatever the verdict. */
static json_t *
explored_json(const char *words, const struct rx_divergence *d, const char *turns,
    int bound, bool from_cand, int budget)
{
	static const char *const kinds[] = { [RX_NONE] = "order",
	    [RX_CHANGED] = "changed", [RX_ENDED] = "ended" };

	return json_pack("{s:s, s:s, s:o, s:o, s:s, s:i, s:s, s:i}",
	    "divergence", words, "kind", kinds[d->kind],
	    "step", d->step ? json_integer((json_int_t)d->step) : json_null(),
	    "turn", d->step ? json_integer(d->turn) : json_null(),
	    "turns", turns, "preemptions", bound,
	    "preemptions_from", from_cand ? "cand" : "order", "budget", budget);
}

/* res made the verdict: its message, its reason, the detail's explored. */
static void
set_verdict(struct seed_result *res, enum reason why, json_t *explored,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
set_verdict(struct seed_result *res, enum reason why, json_t *explored,
    const char *fmt, ...)
{
	va_list	ap;
	int	n;

	res->verdict = reason_verdict(why);
	res->reason = why;
	va_start(ap, fmt);
	n = vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(res->message))
		res->message[utf8_prefix(res->message, sizeof(res->message) - 1,
		    sizeof(res->message) - 2)] = '\0';
	if (!json_is_object(res->detail)) {
		json_decref(res->detail);
		res->detail = json_object();
	}
	json_object_set_new(res->detail, "message", json_string(res->message));
	json_object_set_new(res->detail, "explored", explored);
}

/* The keys of a diverged run's detail that are not a pass's. */
static void
detail_as_pass(json_t *d)
{
	static const char *const gone[] = { "turns", "trace", "invariants", "plan",
	    "workspace", "workspace_error", "truncated", "config_error" };
	size_t	i;

	for (i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		json_object_del(d, gone[i]);
}

void
wrk_regress_explore(struct wrk *w, const struct plan *p, const char *name,
    volatile sig_atomic_t *stop, struct seed_result *res)
{
	struct rx		 r = { 0 };
	struct rx_divergence	 d;
	struct xrec		 run;
	struct plan		 base = { 0 };
	struct explore		*x = NULL;
	struct explore_opts	 o = { 0 };
	struct explore_budget	 bg = { 0 };
	const struct xstats	*s;
	const char		*proxy, *stopped;
	json_t			*ex;
	char			 words[256], turns[256], why[512], bnd[64];
	char			*keep_was = w->keep_dir, *keep = NULL;
	const struct plan	*plan_was = w->plan;
	int			 bound, budget = w->cfg->regress_explore_budget;
	size_t			 nprox, nsteps;
	uint64_t		 overlap;
	bool			 from_cand, serialized;

	memset(&run, 0, sizeof(run));
	proxy = scheduled_proxy(w->cfg, &nprox);
	r.pp = proxy != NULL ? plan_proxy(p, proxy) : NULL;
	bound = rx_preemptions(r.pp, &from_cand);
	o.turns = rx_turns(p);
	turns_text(o.turns, turns, sizeof(turns));
	if (proxy != NULL)
		xp_rec_of_result(res, proxy, 0, &run);
	rx_divergence(r.pp, run.steps, run.n, &d);
	rx_divergence_words(&d, words, sizeof(words));
	snprintf(bnd, sizeof(bnd), "≤ %d preemption%s", bound, bound == 1 ? "" : "s");
	ex = explored_json(words, &d, turns, bound, from_cand, budget);
	log_debug("regression %s: its plan diverged (%s): exploring turns %s with %s, "
	    "at most %d executions", name, words, turns, bnd, budget);
	/* What no exploration can settle: said, not retried (final). */
	why[0] = '\0';
	if (proxy == NULL)
		snprintf(why, sizeof(why), "the config has %zu scheduled proxies; "
		    "exploring takes one", nprox);
	else if (budget == 0)
		snprintf(why, sizeof(why), "regressions_explore_budget is 0");
	else if (!run.has_steps)
		snprintf(why, sizeof(why), "its run's schedule could not be read (%s)",
		    run.why_no_steps);
	if (why[0] == '\0') {
		o.cfg = w->cfg;
		o.proxy = proxy;
		explore_seed_facts(&o, &run, &nsteps, &overlap, &serialized);
		if (nsteps == 0)
			snprintf(why, sizeof(why), "nothing to explore: its run took no "
			    "step at proxy %s of turns %s", proxy, turns);
		else if (overlap != 0 || serialized)
			snprintf(why, sizeof(why), "no execution can be exact: %s",
			    overlap != 0 ? "a turn had connections open at once (threads, "
			    "a pool)" : "the schedule serialized a service's requests");
	}
	if (why[0] != '\0') {
		json_object_set_new(ex, "complete", json_false());
		json_object_set_new(ex, "executions", json_integer(0));
		json_object_set_new(ex, "failing", json_integer(0));
		json_object_set_new(ex, "why", json_string(why));
		json_object_set_new(ex, "final", json_true());
		set_verdict(res, REASON_DIVERGED, ex, "its plan diverged: %s; it cannot "
		    "be judged by exploring: %s", words, why);
		goto out;
	}

	/* The plan's faults and runs; its schedule the explorer's to make. */
	plan_copy(p, &base);
	xp_prefix_start(xp_proxy_entry(&base, proxy));
	o.seed = p->seed;
	o.bound = bound;
	o.only_round = -1;
	o.reduce = false;		/* a bound turns the reduction off */
	o.seed_steps = true;
	o.failing_dfd = -1;
	o.event = rx_event;
	o.arg = &r;
	x = explore_new(&o, NULL, 0);
	bg.executions = (uint64_t)budget;
	bg.t0 = now_ms();
	bg.stop = stop;
	bg.first_failure = true;
	/* its failing executions kept apart from any seed's */
	if (keep_was != NULL && *keep_was != '\0')
		w->keep_dir = keep = xasprintf("%s/regression-%s", keep_was, name);
	stopped = explore_run(x, w, &base, 1, &bg, true);
	res->duration_ms += now_ms() - bg.t0;
	w->keep_dir = keep_was;
	w->plan = plan_was;
	s = explore_stats(x);
	json_object_set_new(ex, "complete", json_boolean(explore_complete(x, stopped)));
	json_object_set_new(ex, "executions", json_integer((json_int_t)s->executions));
	json_object_set_new(ex, "distinct_schedules", json_integer((json_int_t)s->distinct));
	json_object_set_new(ex, "failing", json_integer((json_int_t)s->failing));
	json_object_set_new(ex, "beyond_bound", json_integer((json_int_t)s->beyond_bound));
	json_object_set_new(ex, "unexplored", json_integer((json_int_t)explore_left(x)));
	json_object_set_new(ex, "inexact_executions", json_integer((json_int_t)s->inexact));
	json_object_set_new(ex, "stopped_by", stopped ? json_string(stopped) : json_null());
	log_debug("regression %s: %" PRIu64 " executions, %" PRIu64 " failing, %s",
	    name, s->executions, s->failing, explore_complete(x, stopped) ?
	    "complete" : "incomplete");
	if (r.failed) {
		json_t	*d0 = res->detail;

		/* the failing schedule is the regression's failure now */
		res->detail = json_object();
		json_object_set(res->detail, "diverged", json_object_get(d0, "diverged"));
		json_object_set(res->detail, "coverage", json_object_get(d0, "coverage"));
		json_object_set_new(res->detail, "round", json_null());
		json_object_set(res->detail, "ok_turns", json_object_get(d0, "ok_turns"));
		json_object_set(res->detail, "total_turns", json_object_get(d0,
		    "total_turns"));
		json_decref(d0);
		if (r.fail.invariants != NULL)
			json_object_set(res->detail, "invariants", r.fail.invariants);
		if (r.fail.plan != NULL)
			json_object_set(res->detail, "plan", r.fail.plan);
		/* where its execution kept its workspace (xp_run_one's name) */
		if (keep != NULL) {
			char	*ws = xasprintf("%s/schedule-%" PRIu64 "/workspace", keep,
				    r.fail_no);

			if (access(ws, F_OK) == 0)
				json_object_set_new(res->detail, "workspace", json_string(ws));
			free(ws);
		}
		json_object_set_new(ex, "failing_schedule", json_string(r.fail_turns));
		json_object_set_new(ex, "final", json_true());
		set_verdict(res, r.fail.reason, ex, "its plan diverged: %s; exploring "
		    "turns %s with %s, schedule %" PRIu64 " (%s) fails: %s", words, turns,
		    bnd, r.fail_no, r.fail_turns, r.fail.message);
	} else if (explore_complete(x, stopped)) {
		detail_as_pass(res->detail);
		json_object_set_new(ex, "final", json_true());
		if (r.best != NULL)
			json_object_set_new(res->detail, "refresh", refresh_plan(p, proxy,
			    r.best, r.nbest));
		set_verdict(res, REASON_NONE, ex, "its plan diverged: %s; %" PRIu64
		    " schedule%s of turns %s with %s explored, none fails", words,
		    s->executions, s->executions == 1 ? "" : "s", turns, bnd);
	} else if (stop != NULL && *stop) {
		json_object_set_new(ex, "final", json_false());
		json_object_set_new(ex, "why", json_string("the worker was stopped"));
		set_verdict(res, REASON_WORKER_LOST, ex, "the worker was being stopped "
		    "(SIGTERM) while it explored regression %s, whose plan diverged (%s): "
		    "retried elsewhere", name, words);
	} else {
		why_incomplete(x, stopped, budget, why, sizeof(why));
		json_object_set_new(ex, "why", json_string(why));
		json_object_set_new(ex, "final", json_boolean(stopped != NULL &&
		    strcmp(stopped, "the budget") == 0));
		set_verdict(res, REASON_DIVERGED, ex, "its plan diverged: %s; the "
		    "exploration of turns %s with %s is incomplete, none of %" PRIu64
		    " schedules failing: %s. A diverged regression passes only on a "
		    "complete exploration", words, turns, bnd, s->executions, why);
	}
out:
	explore_free(x);
	plan_free(&base);
	xp_rec_clear(&run);
	xp_rec_clear(&r.fail);
	free(r.fail_turns);
	free(r.best);
	free(keep);
}
