/*
 * soak minimize's engine (worker/minimize.c) without a database: ddmin
 * ends at exactly what a failure needs (every target set of a monotone
 * test), tries the empty set first, stops with the best so far; a
 * plan's preemptions are the switches away from a turn still waiting;
 * a candidate without one lets that turn go on, and keeping everything
 * gives the plan's own order; a removed pair takes its faults and steps;
 * min_minimize, on a stand-in for the replays, goes on while any kind of a
 * pass removed something and ends 1-minimal; explain says "any value" of
 * a latency only when every one tried still fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/plan.h"
#include "common/util.h"
#include "worker/minimize.h"
#include "worker/regexplore.h"

/* A monotone test: fails when every element of need is kept. */
struct target {
	const bool	*need;
	size_t		 n, calls, stop_after;
};

static int
needs(const bool *keep, void *arg)
{
	struct target	*t = arg;
	size_t		 i;

	if (t->stop_after > 0 && t->calls >= t->stop_after)
		return -1;
	t->calls++;
	for (i = 0; i < t->n; i++)
		if (t->need[i] && !keep[i])
			return 0;
	return 1;
}

static void
test_ddmin_exact(void **state)
{
	bool		 need[24], keep[24];
	uint64_t	 x = 0x9e3779b97f4a7c15ull;
	size_t		 n, i, trial;

	(void)state;
	/* every size, random targets of 0..4 elements (the generator is
	 * fixed: the same cases every run) */
	for (trial = 0; trial < 400; trial++) {
		struct target	t;
		size_t		 k, want = 0;
		int		 rc;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		n = 1 + x % 24;
		memset(need, 0, sizeof(need));
		for (k = 0; k < (x >> 8) % 5; k++)
			need[(x >> (16 + 5 * k)) % n] = true;
		for (i = 0; i < n; i++) {
			keep[i] = true;
			want += need[i];
		}
		t = (struct target){ need, n, 0, 0 };
		rc = min_ddmin(n, keep, needs, &t);
		for (i = 0; i < n; i++)
			if (keep[i] != need[i])
				fail_msg("n %zu, trial %zu: element %zu kept %d, needed %d",
				    n, trial, i, keep[i], need[i]);
		assert_int_equal(rc, want < n ? 1 : 0);
	}
}

static void
test_ddmin_edges(void **state)
{
	bool		need[10] = { 0 }, keep[10];
	struct target	t = { need, 10, 0, 0 };
	size_t		i;

	(void)state;
	/* needing none: the empty set, on the first try */
	for (i = 0; i < 10; i++)
		keep[i] = true;
	assert_int_equal(min_ddmin(10, keep, needs, &t), 1);
	assert_int_equal(t.calls, 1);
	for (i = 0; i < 10; i++)
		assert_false(keep[i]);
	/* only what it is given: elements not kept stay out */
	need[3] = need[7] = true;
	for (i = 0; i < 10; i++)
		keep[i] = i != 5;
	t.calls = 0;
	assert_int_equal(min_ddmin(10, keep, needs, &t), 1);
	for (i = 0; i < 10; i++)
		assert_int_equal(keep[i], need[i]);
	/* stopped: the smallest failing set so far, a superset of need */
	for (i = 0; i < 10; i++)
		keep[i] = true;
	t = (struct target){ need, 10, 0, 3 };
	assert_int_equal(min_ddmin(10, keep, needs, &t), -1);
	assert_true(keep[3] && keep[7]);
	/* one element that is needed: one try, nothing removed */
	{
		bool	one = true, k1 = true;
		struct target	t1 = { &one, 1, 0, 0 };

		assert_int_equal(min_ddmin(1, &k1, needs, &t1), 0);
		assert_true(k1);
		assert_int_equal(t1.calls, 1);
	}
}

/* A plan of two turns on proxy db: A A B B A B, cand as given. */
static void
two_turns(struct plan *p, bool with_cand)
{
	static const int	turns[] = { 0, 0, 1, 1, 0, 1 };
	struct plan_proxy	*x;
	size_t			 i;

	memset(p, 0, sizeof(*p));
	p->seed = 7;
	p->turns = 3;
	p->rounds = 1;
	p->proxies = xcalloc(1, sizeof(*p->proxies));
	p->nproxies = 1;
	x = &p->proxies[0];
	x->name = xstrdup("db");
	x->nsteps = 6;
	x->steps = xcalloc(6, sizeof(*x->steps));
	for (i = 0; i < 6; i++) {
		x->steps[i].turn = turns[i];
		x->steps[i].key = 100 + i;
		x->steps[i].has_cand = with_cand;
		x->steps[i].cand = 3;	/* both waiting */
	}
	/* turn 2 runs but is not scheduled: it has a fault */
	x->nfaults = 2;
	x->faults = xcalloc(2, sizeof(*x->faults));
	x->faults[0] = (struct plan_fault_rec){ .turn = 2, .key = 9, .fault = PLAN_RESET };
	x->faults[1] = (struct plan_fault_rec){ .turn = 1, .key = 103,
	    .fault = PLAN_LOST_REPLY };
}

static void
expect_order(const struct plan *p, const char *want)
{
	char	got[64] = "";
	size_t	i;

	for (i = 0; i < p->proxies[0].nsteps; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
		    i ? " " : "", (int)(p->proxies[0].steps[i].key - 100));
	assert_string_equal(got, want);
}

static void
test_preemptions(void **state)
{
	struct plan	 p, c;
	struct min_elem	*e;
	bool		 keep[2];
	size_t		 n, counts[MIN_KINDS];
	int		 a = -1;

	(void)state;
	two_turns(&p, true);
	/* step 2: turn 0 (step 4 to come) passed over; step 4: turn 1 (step
	 * 5 to come); step 5 is no switch of a waiting turn: 0 is done */
	n = min_elems(&p, MIN_PREEMPTIONS, &e);
	assert_int_equal(n, 2);
	assert_int_equal(e[0].index, 2);
	assert_int_equal(e[0].preempted, 0);
	assert_int_equal(e[1].index, 4);
	assert_int_equal(e[1].preempted, 1);
	assert_false(min_is_preemption(&p.proxies[0], 5, &a));
	assert_false(min_is_preemption(&p.proxies[0], 1, &a));
	/* everything kept: the plan's own order, cand kept */
	keep[0] = keep[1] = true;
	min_candidate(&p, MIN_PREEMPTIONS, e, n, keep, &c);
	expect_order(&c, "0 1 2 3 4 5");
	assert_true(c.proxies[0].steps[0].has_cand);
	plan_free(&c);
	/* without the first: turn 0 goes on through its step 4 */
	keep[0] = false;
	min_candidate(&p, MIN_PREEMPTIONS, e, n, keep, &c);
	expect_order(&c, "0 1 4 2 3 5");
	assert_false(c.proxies[0].steps[0].has_cand);
	plan_free(&c);
	/* without the second: turn 1 goes on through its step 5 */
	keep[0] = true, keep[1] = false;
	min_candidate(&p, MIN_PREEMPTIONS, e, n, keep, &c);
	expect_order(&c, "0 1 2 3 5 4");
	plan_free(&c);
	/* without both: no switch but at a turn's end */
	keep[0] = false;
	min_candidate(&p, MIN_PREEMPTIONS, e, n, keep, &c);
	expect_order(&c, "0 1 4 2 3 5");
	min_counts(&c, counts);
	assert_int_equal(counts[MIN_PREEMPTIONS], 0);
	plan_free(&c);
	free(e);
	/* turn 0 was not waiting at step 2 (cand 2: turn 1 only): no
	 * preemption there, and that switch stays */
	p.proxies[0].steps[2].cand = 2;
	assert_false(min_is_preemption(&p.proxies[0], 2, &a));
	n = min_elems(&p, MIN_PREEMPTIONS, &e);
	assert_int_equal(n, 1);
	keep[0] = false;
	min_candidate(&p, MIN_PREEMPTIONS, e, n, keep, &c);
	expect_order(&c, "0 1 2 3 5 4");
	plan_free(&c);
	free(e);
	plan_free(&p);
	/* without cand: inferred, and a turn blocked on a lock is no
	 * preemption */
	two_turns(&p, false);
	assert_true(min_is_preemption(&p.proxies[0], 2, &a));
	p.proxies[0].steps[1].lock_wait = true;
	assert_false(min_is_preemption(&p.proxies[0], 2, &a));
	plan_free(&p);
}

/*
 * A regression whose plan diverged is explored within the plan's own
 * preemptions (worker/regexplore.h): min_is_preemption's count, read from
 * cand where the plan has it and from the order where it has not (then
 * said: "preemptions_from": "order"); and the divergence is named by the
 * first of the plan's steps whose turn sent something else, or nothing.
 */
static void
test_regression_bound_and_divergence(void **state)
{
	struct plan		 p;
	struct xstep		 run[6];
	struct rx_divergence	 d;
	char			 words[256];
	size_t			 i;
	bool			 from_cand;

	(void)state;
	two_turns(&p, true);
	assert_int_equal(rx_preemptions(&p.proxies[0], &from_cand), 2);
	assert_true(from_cand);
	p.proxies[0].steps[2].cand = 2;	/* turn 0 not waiting: no preemption */
	assert_int_equal(rx_preemptions(&p.proxies[0], &from_cand), 1);
	assert_int_equal(rx_preemptions(NULL, &from_cand), 0);
	assert_int_equal(rx_turns(&p), 7);
	plan_free(&p);
	/* without cand: every switch away from a turn with steps left, but
	 * one whose step before waited on a lock */
	two_turns(&p, false);
	assert_int_equal(rx_preemptions(&p.proxies[0], &from_cand), 2);
	assert_false(from_cand);
	p.proxies[0].steps[1].lock_wait = true;
	assert_int_equal(rx_preemptions(&p.proxies[0], &from_cand), 1);

	/* the run sent what the plan names, each turn in its order, the
	 * turns in another: turn 1's three first */
	memset(run, 0, sizeof(run));
	for (i = 0; i < 6; i++) {
		static const size_t	order[6] = { 2, 3, 5, 0, 1, 4 };

		run[i].turn = p.proxies[0].steps[order[i]].turn;
		run[i].key = p.proxies[0].steps[order[i]].key;
	}
	rx_divergence(&p.proxies[0], run, 6, &d);
	assert_int_equal(d.kind, RX_NONE);
	/* turn 1's second statement changed: the plan's step 4 */
	for (i = 0; i < 6; i++) {
		run[i].turn = p.proxies[0].steps[i].turn;
		run[i].key = p.proxies[0].steps[i].key;
	}
	run[3].key = 203;
	snprintf(run[3].what, sizeof(run[3].what), "UPDATE x");
	rx_divergence(&p.proxies[0], run, 6, &d);
	assert_int_equal(d.kind, RX_CHANGED);
	assert_int_equal(d.step, 4);
	assert_int_equal(d.turn, 1);
	assert_string_equal(d.came, "UPDATE x");
	assert_int_equal(d.others, 0);
	assert_string_equal(rx_divergence_words(&d, words, sizeof(words)),
	    "turn 1's statements changed at step 4");
	/* turn 0's first changed too: it is named, turn 1 as well */
	run[0].key = 200;
	rx_divergence(&p.proxies[0], run, 6, &d);
	assert_int_equal(d.step, 1);
	assert_int_equal(d.turn, 0);
	assert_string_equal(rx_divergence_words(&d, words, sizeof(words)),
	    "turn 0's statements changed at step 1 (turn 1's too)");
	/* turn 0 sent nothing after its second: the plan's step 5 never came */
	run[0].key = 100;
	run[3].key = 103;
	rx_divergence(&p.proxies[0], run, 4, &d);
	assert_int_equal(d.kind, RX_ENDED);
	assert_string_equal(rx_divergence_words(&d, words, sizeof(words)),
	    "turn 0 ended before step 5 (turn 1's too)");
	plan_free(&p);
}

static void
test_runs(void **state)
{
	struct plan	 p, c;
	struct min_elem	*e;
	bool		 keep[3] = { true, false, true };
	size_t		 n, counts[MIN_KINDS];

	(void)state;
	two_turns(&p, true);
	min_counts(&p, counts);
	assert_int_equal(counts[MIN_ROUNDS], 1);
	assert_int_equal(counts[MIN_RUNS], 3);
	assert_int_equal(counts[MIN_FAULTS], 2);
	assert_int_equal(counts[MIN_PREEMPTIONS], 2);
	n = min_elems(&p, MIN_RUNS, &e);
	assert_int_equal(n, 3);
	/* turn 1 removed: its steps and its fault go, turn 2's fault stays */
	min_candidate(&p, MIN_RUNS, e, n, keep, &c);
	assert_false(plan_runs(&c, 0, 1));
	assert_true(plan_runs(&c, 0, 0) && plan_runs(&c, 0, 2));
	expect_order(&c, "0 1 4");
	assert_int_equal(c.proxies[0].nfaults, 1);
	assert_int_equal(c.proxies[0].faults[0].turn, 2);
	plan_free(&c);
	free(e);
	/* a fault removed: the other stays */
	n = min_elems(&p, MIN_FAULTS, &e);
	keep[0] = false, keep[1] = true;
	min_candidate(&p, MIN_FAULTS, e, n, keep, &c);
	assert_int_equal(c.proxies[0].nfaults, 1);
	assert_int_equal(c.proxies[0].faults[0].fault, PLAN_LOST_REPLY);
	assert_int_equal(c.proxies[0].nsteps, 6);
	plan_free(&c);
	free(e);
	/* a removed lost reply takes its retry: turn 1's later fault of the
	 * same key comes one occurrence earlier; a duplicate's does not */
	plan_free(&p);
	two_turns(&p, true);
	p.proxies[0].faults[0] = (struct plan_fault_rec){ .turn = 1, .key = 103,
	    .occ = 2, .fault = PLAN_DUPLICATE };
	p.proxies[0].faults[1].occ = 1;
	n = min_elems(&p, MIN_FAULTS, &e);
	keep[0] = true, keep[1] = false;
	min_candidate(&p, MIN_FAULTS, e, n, keep, &c);
	assert_int_equal(c.proxies[0].nfaults, 1);
	assert_int_equal(c.proxies[0].faults[0].occ, 1);
	plan_free(&c);
	p.proxies[0].faults[1].fault = PLAN_DUPLICATE;
	min_candidate(&p, MIN_FAULTS, e, n, keep, &c);
	assert_int_equal(c.proxies[0].faults[0].occ, 2);
	plan_free(&c);
	free(e);
	/* the round removed: nothing runs */
	n = min_elems(&p, MIN_ROUNDS, &e);
	keep[0] = false;
	min_candidate(&p, MIN_ROUNDS, e, n, keep, &c);
	assert_int_equal(plan_turns_in(&c, 0), 0);
	assert_int_equal(c.proxies[0].nsteps, 0);
	assert_int_equal(c.proxies[0].nfaults, 0);
	/* which tests nothing: never replayed, never the failure (no worker
	 * here: a replay would crash) */
	assert_false(plan_runs_any(&c));
	assert_true(plan_runs_any(&p));
	{
		struct min_run	m = { .tries = 1 };

		assert_int_equal(min_test(&m, &c), 0);
		assert_int_equal(m.candidates, 0);
		assert_int_equal(m.replays, 0);
	}
	plan_free(&c);
	free(e);
	plan_free(&p);
}

/*
 * A failure that needs two passes: turns 0 and 2 run, turn 2's step
 * preempts turn 0 (A B C, not A C B), and turn 1 runs or turn 0's fault is
 * gone.  The first pass can take neither turn 1 (the fault is still there)
 * nor the preemption; it takes the fault; only the second takes turn 1.
 */
static bool
two_pass_fails(const struct plan *c)
{
	const struct plan_proxy	*x = &c->proxies[0];
	bool			 fault = false;
	size_t			 i;

	if (!plan_runs(c, 0, 0) || !plan_runs(c, 0, 2))
		return false;
	if (x->nsteps != 3 || x->steps[1].key != 2)
		return false;
	for (i = 0; i < x->nfaults; i++)
		fault |= x->faults[i].turn == 0;
	return plan_runs(c, 0, 1) || !fault;
}

/* The stand-in for a replay: no processes, two_pass_fails decides. */
static void
stand_in(struct min_run *m, const struct plan *cand, struct seed_result *res)
{
	(void)m;
	res->verdict = two_pass_fails(cand);
}

static char *
stand_in_fingerprint(const struct cfg *cfg, const struct seed_result *res)
{
	(void)cfg;
	return res->verdict ? xstrdup("F") : NULL;
}

static void
test_minimize_passes(void **state)
{
	static const uint64_t	 keys[] = { 1, 2, 3 };
	static const int	 turns[] = { 0, 2, 0 };
	struct cfg		 cfg = { 0 };
	struct wrk		 w = { .cfg = &cfg };
	struct min_run		 m = { .w = &w, .replay = stand_in,
				    .fingerprint = stand_in_fingerprint, .tries = 1,
				    .deadline_ms = INT64_MAX };
	struct plan		 p = { 0 }, c;
	struct plan_proxy	*x;
	struct min_elem		*e;
	bool			 keep[8];
	size_t			 k, i, n;

	(void)state;
	m.want = xstrdup("F");
	p.seed = 11;
	p.turns = 3;
	p.rounds = 1;
	p.proxies = xcalloc(1, sizeof(*p.proxies));
	p.nproxies = 1;
	x = &p.proxies[0];
	x->name = xstrdup("db");
	x->nsteps = 3;
	x->steps = xcalloc(3, sizeof(*x->steps));
	for (i = 0; i < 3; i++)
		x->steps[i] = (struct plan_step){ .turn = turns[i], .key = keys[i],
		    .has_cand = true, .cand = 1u << turns[i] };
	x->steps[1].cand |= 1;	/* turn 0 waiting: a preemption */
	x->nfaults = 1;
	x->faults = xcalloc(1, sizeof(*x->faults));
	x->faults[0] = (struct plan_fault_rec){ .turn = 0, .key = 1,
	    .fault = PLAN_LOST_REPLY };
	min_normalize(&p);
	assert_true(two_pass_fails(&p));
	assert_int_equal(min_elems(&p, MIN_PREEMPTIONS, &e), 1);
	free(e);

	assert_int_equal(min_minimize(&m, &p), 0);
	/* the fault went in the first pass, turn 1 in the second; the third
	 * removed nothing */
	assert_false(plan_runs(&p, 0, 1));
	assert_int_equal(p.proxies[0].nfaults, 0);
	assert_int_equal(m.passes, 3);
	/* 1-minimal, by replay: without any one element left, it passes */
	for (k = 0; k < MIN_KINDS; k++) {
		n = min_elems(&p, (enum min_kind)k, &e);
		assert_true(n <= 8);
		for (i = 0; i < n; i++) {
			memset(keep, 1, sizeof(keep));
			keep[i] = false;
			min_candidate(&p, (enum min_kind)k, e, n, keep, &c);
			if (two_pass_fails(&c))
				fail_msg("not 1-minimal: fails without %s %zu",
				    min_kind_name((enum min_kind)k), i);
			plan_free(&c);
		}
		free(e);
	}
	min_run_free(&m);
	free(m.want);
	plan_free(&p);
}

/* What explain says of a fault's latencies: "any value" only when every
 * latency tried still fails; else each one that does not. */
static void
test_explain_latency(void **state)
{
	struct plan		 p = { 0 };
	struct plan_proxy	 x = { .name = (char *)"db" };
	struct plan_fault_rec	 f = { .turn = 1, .key = 5,
				    .fault = PLAN_LOST_REPLY, .latency_ms = 30,
				    .what = (char *)"UPDATE a" };
	struct min_note		 v[3] = {
		{ .kind = MIN_FAULTS, .variant = "as reset", .latency_ms = -1,
		  .said = MIN_PASSES },
		{ .kind = MIN_FAULTS, .variant = "latency 0 ms", .latency_ms = 0,
		  .said = MIN_STILL_FAILS },
		{ .kind = MIN_FAULTS, .variant = "latency 44 ms", .latency_ms = 44,
		  .said = MIN_STILL_FAILS },
	};
	char			*out = NULL;
	size_t			 len = 0;
	FILE			*fp;

	(void)state;
	p.turns = p.rounds = 2;
	p.proxies = &x;
	p.nproxies = 1;
	x.faults = &f;
	x.nfaults = 1;
	/* every latency still fails: it does not matter */
	assert_non_null(fp = open_memstream(&out, &len));
	min_explain_print(fp, &p, v, 3, 2);
	fclose(fp);
	assert_non_null(strstr(out, "  db round 0 turn 1 UPDATE a (lost_reply, late): "
	    "as reset — passes; latency: any value (2 tried, 0..44 ms) — still "
	    "fails\n"));
	free(out);
	/* one passes: said, and never "any value" */
	v[1].said = MIN_PASSES;
	assert_non_null(fp = open_memstream(&out, &len));
	min_explain_print(fp, &p, v, 3, 2);
	fclose(fp);
	assert_null(strstr(out, "any value"));
	assert_non_null(strstr(out, "  db round 0 turn 1 UPDATE a (lost_reply, late): "
	    "as reset — passes; latency 0 ms — passes\n"));
	free(out);
	/* one diverges: said, and never "any value" either */
	v[1].said = MIN_STILL_FAILS;
	v[2].said = MIN_DIVERGES;
	assert_non_null(fp = open_memstream(&out, &len));
	min_explain_print(fp, &p, v, 3, 2);
	fclose(fp);
	assert_null(strstr(out, "any value"));
	assert_non_null(strstr(out, "latency 44 ms — cannot come (diverged)\n"));
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ddmin_exact),
		cmocka_unit_test(test_ddmin_edges),
		cmocka_unit_test(test_preemptions),
		cmocka_unit_test(test_regression_bound_and_divergence),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_minimize_passes),
		cmocka_unit_test(test_explain_latency),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
