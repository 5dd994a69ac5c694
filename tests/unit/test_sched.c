/*
 * The seeded exchange scheduler (fault-proxy/sched.c): the same seed makes
 * the same choices, pct runs the ready turn of highest priority and lowers
 * it at its change points, random is uniform, and pct's guarantee holds on
 * a simulated lost update: a bug of depth 2 among n turns within k steps is
 * found in at least 1/(n*k) of the seeds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/seed.h"
#include "common/util.h"
#include "fault-proxy/sched.h"

/* Ready sets from a stream of their own; the picks must not depend on it. */
static void
ready_from(struct seed_rng *r, bool *ready, int n)
{
	int	t;

	for (t = 0; t < n; t++)
		ready[t] = seed_rng_below(r, 3) != 0;
}

static void
test_same_seed_same_choices(void **state)
{
	static const enum sched_mode modes[] = { SCHED_PCT, SCHED_RANDOM };
	bool		 ready[8];
	size_t		 m;
	int		 i, a, b, differ = 0;

	(void)state;
	for (m = 0; m < nitems(modes); m++) {
		struct sched	*s1 = sched_new(modes[m], 42, "db", 8, 3, 100);
		struct sched	*s2 = sched_new(modes[m], 42, "db", 8, 3, 100);
		struct sched	*s3 = sched_new(modes[m], 43, "db", 8, 3, 100);
		struct seed_rng	 r;

		assert_non_null(s1);
		seed_rng_init(&r, 7);
		for (i = 0; i < 200; i++) {
			ready_from(&r, ready, 8);
			a = sched_pick(s1, ready);
			b = sched_pick(s2, ready);
			assert_int_equal(a, b);
			if (a != -1)
				assert_true(ready[a]);
			differ += sched_pick(s3, ready) != a;
		}
		assert_int_equal(sched_steps(s1), sched_steps(s2));
		/* Another seed is another schedule. */
		assert_true(differ > 0);
		sched_free(s1);
		sched_free(s2);
		sched_free(s3);
	}
}

static void
test_pct_priorities(void **state)
{
	struct sched	*s;
	bool		 seen[16] = { false }, ready[5];
	int		 t, p, best, go, d = 3, n = 5;
	uint32_t	 step, cp0, cp1;

	(void)state;
	assert_null(sched_new(SCHED_PCT, 1, "db", 0, 3, 10));
	assert_null(sched_new(SCHED_PCT, 1, "db", 4, 0, 10));
	assert_null(sched_new(SCHED_PCT, 1, "db", 4, 3, 0));
	assert_non_null(s = sched_new(SCHED_PCT, 99, "db", n, d, 6));
	/* Initial priorities: a permutation of d .. d+n-1. */
	for (t = 0; t < n; t++) {
		p = sched_priority(s, t);
		assert_true(p >= d && p < d + n);
		assert_false(seen[p]);
		seen[p] = true;
	}
	cp0 = sched_change_point(s, 0);
	cp1 = sched_change_point(s, 1);
	assert_true(cp0 >= 1 && cp0 <= 6 && cp1 >= 1 && cp1 <= 6);
	assert_int_equal(sched_change_point(s, 2), 0);
	/* Each step: the ready turn of highest priority; lowered at a change. */
	for (step = 1; step <= 8; step++) {
		for (t = 0; t < n; t++)
			ready[t] = (t + step) % 3 != 0;
		best = -1;
		for (t = 0; t < n; t++)
			if (ready[t] && (best == -1 ||
			    sched_priority(s, t) > sched_priority(s, best)))
				best = t;
		go = sched_pick(s, ready);
		assert_int_equal(go, best);
		if (step == cp1)
			assert_int_equal(sched_priority(s, go), 2);
		else if (step == cp0)
			assert_int_equal(sched_priority(s, go), 1);
	}
	/* Nothing ready: no pick, no step. */
	memset(ready, 0, sizeof(ready));
	assert_int_equal(sched_pick(s, ready), -1);
	assert_int_equal(sched_steps(s), 8);
	sched_free(s);
}

/* The bounds on turns and depth at their boundary: the cap itself is made. */
static void
test_bounds(void **state)
{
	struct sched	*s;

	(void)state;
	assert_non_null(s = sched_new(SCHED_PCT, 1, "db", SCHED_MAX_TURNS,
	    SCHED_MAX_DEPTH, 10));
	assert_true(sched_change_point(s, SCHED_MAX_DEPTH - 2) >= 1);
	sched_free(s);
	assert_null(sched_new(SCHED_PCT, 1, "db", SCHED_MAX_TURNS + 1, 3, 10));
	assert_null(sched_new(SCHED_PCT, 1, "db", 4, SCHED_MAX_DEPTH + 1, 10));
	assert_null(sched_new(SCHED_RANDOM, 1, "db", 4, SCHED_MAX_DEPTH + 1, 10));
}

/*
 * A seed's schedule does not change under a user: docs/faults.md walks
 * through seed 16 of examples/reservations/scheduled.yaml (proxy db, 8
 * turns, depth 3, 24 steps), where turn 2 starts highest and PCT's first
 * change point, at step 1, lowers it.  Another derivation of the stream
 * would make that a different schedule (and the docs' story false).
 */
static void
test_documented_seed(void **state)
{
	static const int	 prio[8] = { 7, 9, 10, 6, 8, 4, 5, 3 };
	struct sched		*s;
	int			 t;

	(void)state;
	assert_non_null(s = sched_new(SCHED_PCT, 16, "db", 8, 3, 24));
	for (t = 0; t < 8; t++)
		assert_int_equal(sched_priority(s, t), prio[t]);
	assert_int_equal(sched_change_point(s, 0), 1);
	assert_int_equal(sched_change_point(s, 1), 18);
	sched_free(s);
}

/*
 * PCT's initial priorities are a uniform permutation (each of the n! orders
 * about as often over seeds), not merely a permutation: with 2 turns each
 * starts highest about half the time.  Pearson's chi-square over 4800
 * seeds against the uniform, at p = 0.001 (10.83 for 1 degree of freedom,
 * 49.73 for 23); the seeds are fixed, so the verdict is too.
 */
static double
chi_square(const int *count, int cells, int total)
{
	double	e = (double)total / cells, x = 0;
	int	i;

	for (i = 0; i < cells; i++)
		x += (count[i] - e) * (count[i] - e) / e;
	return x;
}

static void
test_pct_initial_uniform(void **state)
{
	static const struct { int n; double crit; } cases[] = { { 2, 10.83 }, { 4, 49.73 } };
	int		 count[24], high[4], total = 4800, c, seed, t, idx, cells;
	struct sched	*s;

	(void)state;
	for (c = 0; c < 2; c++) {
		int	n = cases[c].n;

		memset(count, 0, sizeof(count));
		memset(high, 0, sizeof(high));
		cells = n == 2 ? 2 : 24;
		for (seed = 0; seed < total; seed++) {
			assert_non_null(s = sched_new(SCHED_PCT, (uint64_t)seed, "db", n, 3, 24));
			/* The order as a number, its Lehmer code: how many later
			 * turns rank below each. */
			idx = 0;
			for (t = 0; t < n; t++) {
				int	below = 0, u;

				for (u = t + 1; u < n; u++)
					below += sched_priority(s, u) < sched_priority(s, t);
				idx = idx * (n - t) + below;
			}
			count[idx]++;
			for (t = 0; t < n; t++)
				if (sched_priority(s, t) == 3 + n - 1)
					high[t]++;
			sched_free(s);
		}
		if (chi_square(count, cells, total) >= cases[c].crit)
			fail_msg("%d turns: the initial orders over %d seeds are not uniform: "
			    "chi-square %.1f >= %.2f", n, total, chi_square(count, cells, total),
			    cases[c].crit);
		/* Each turn starts highest 1/n of the time: within 5 sigma. */
		for (t = 0; t < n; t++) {
			double	e = (double)total / n, sd = 0;

			sd = e * (1.0 - 1.0 / n);
			sd = sd > 0 ? __builtin_sqrt(sd) : 0;
			if (high[t] < e - 5 * sd || high[t] > e + 5 * sd)
				fail_msg("%d turns: turn %d starts highest %d times of %d", n, t,
				    high[t], total);
		}
	}
}

static void
test_random_uniform(void **state)
{
	struct sched	*s = sched_new(SCHED_RANDOM, 5, "db", 6, 1, 1);
	bool		 ready[6] = { true, false, true, true, false, true };
	int		 count[6] = { 0 }, i;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < 40000; i++)
		count[sched_pick(s, ready)]++;
	assert_int_equal(count[1] + count[4], 0);
	/* 10000 each; 5 standard deviations is 433. */
	for (i = 0; i < 6; i++)
		if (ready[i])
			assert_true(count[i] > 9500 && count[i] < 10500);
	sched_free(s);
}

/*
 * n turns each read a counter, then write it plus one (2 steps each).  The
 * update is lost when some turn reads between another's read and write: a
 * bug of depth 2.  Counted over seeds, pct finds it in at least 1/(n*k)
 * of them (k = 2n steps); the rate is printed with random's beside it.
 */
static double
lost_update_rate(enum sched_mode mode, int n, int seeds)
{
	int	found = 0, s, t;

	for (s = 0; s < seeds; s++) {
		struct sched	*sc = sched_new(mode, (uint64_t)s, "db", n, 2,
				    (uint32_t)(2 * n));
		bool		 ready[16];
		int		 pc[16] = { 0 }, counter = 0, local[16];

		for (t = 0; t < n; t++)
			ready[t] = true;
		for (;;) {
			t = sched_pick(sc, ready);
			if (t == -1)
				break;
			if (pc[t] == 0)
				local[t] = counter;
			else {
				counter = local[t] + 1;
				ready[t] = false;
			}
			pc[t]++;
		}
		found += counter != n;
		sched_free(sc);
	}
	return (double)found / seeds;
}

static void
test_pct_finds_depth_two(void **state)
{
	int	n = 4, k = 2 * n, seeds = 4000;
	double	pct, rnd;

	(void)state;
	pct = lost_update_rate(SCHED_PCT, n, seeds);
	rnd = lost_update_rate(SCHED_RANDOM, n, seeds);
	print_message("lost update, %d turns, k=%d, %d seeds: pct %.3f, random "
	    "%.3f, pct's floor 1/(n*k) = %.3f\n", n, k, seeds, pct, rnd,
	    1.0 / (n * k));
	assert_true(pct >= 1.0 / (n * k));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_choices),
		cmocka_unit_test(test_pct_priorities),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_documented_seed),
		cmocka_unit_test(test_pct_initial_uniform),
		cmocka_unit_test(test_random_uniform),
		cmocka_unit_test(test_pct_finds_depth_two),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
