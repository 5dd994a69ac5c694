/*
 * Seeds: range parsing, and golden values for every derivation.  The
 * constants below are literal on purpose: replay depends on the same seed
 * giving the same sub-seeds on every platform and in every release, so a
 * change of algorithm must fail here, loudly.  (seed_rng's first outputs for
 * seed 0 are the published splitmix64 reference values.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/seed.h"
#include "common/util.h"

static void
test_range_good(void **state)
{
	static const struct { const char *s; uint64_t first, last, count; } good[] = {
		{ "0..199", 0, 199, 200 },
		{ "200", 0, 199, 200 },
		{ "1", 0, 0, 1 },
		{ "7..7", 7, 7, 1 },
		{ "1000..2999", 1000, 2999, 2000 },
		{ "18446744073709551615", 0, UINT64_MAX - 1, UINT64_MAX },
		{ "18446744073709551615..18446744073709551615", UINT64_MAX,
		  UINT64_MAX, 1 },
		{ "0..18446744073709551615", 0, UINT64_MAX, 0 },	/* 2^64 wraps */
	};
	struct seed_range	r;
	char			err[ERR_LEN];
	size_t			i;

	(void)state;
	for (i = 0; i < nitems(good); i++) {
		memset(&r, 0xa5, sizeof(r));
		if (seed_range_parse(good[i].s, &r, err) == -1)
			fail_msg("\"%s\": %s", good[i].s, err);
		assert_int_equal(r.first, good[i].first);
		assert_int_equal(r.last, good[i].last);
		assert_int_equal(seed_range_count(&r), good[i].count);
	}
}

static void
test_range_bad(void **state)
{
	static const struct { const char *s, *why; } bad[] = {
		{ "", "empty seed range (want A..B or N)" },
		{ "5..3", "bad seed range \"5..3\": 5 is after 3" },
		{ "abc", "bad seed range \"abc\" (want A..B or a count N)" },
		{ "0", "bad seed range \"0\": a count must be at least 1" },
		{ "18446744073709551616",
		  "bad seed range \"18446744073709551616\" (want A..B or a count N)" },
		{ "0..18446744073709551616",
		  "bad seed range \"0..18446744073709551616\" (want A..B, e.g. 0..199)" },
		{ "99999999999999999999999..1",
		  "bad seed range \"99999999999999999999999..1\" (want A..B, e.g. 0..199)" },
		{ "1..", "bad seed range \"1..\" (want A..B, e.g. 0..199)" },
		{ "..5", "bad seed range \"..5\" (want A..B, e.g. 0..199)" },
		{ "1...5", "bad seed range \"1...5\" (want A..B, e.g. 0..199)" },
		{ "-1..5", "bad seed range \"-1..5\" (want A..B, e.g. 0..199)" },
		{ " 1..2", "bad seed range \" 1..2\" (want A..B, e.g. 0..199)" },
		{ "1..2 ", "bad seed range \"1..2 \" (want A..B, e.g. 0..199)" },
		{ "0x10", "bad seed range \"0x10\" (want A..B or a count N)" },
		{ "+5", "bad seed range \"+5\" (want A..B or a count N)" },
	};
	struct seed_range	r = { 11, 22 };
	char			err[ERR_LEN];
	size_t			i;

	(void)state;
	for (i = 0; i < nitems(bad); i++) {
		memset(err, 0, sizeof(err));
		assert_int_equal(seed_range_parse(bad[i].s, &r, err), -1);
		assert_string_equal(err, bad[i].why);
		/* A failed parse leaves the caller's range alone. */
		assert_int_equal(r.first, 11);
		assert_int_equal(r.last, 22);
	}
	assert_int_equal(seed_range_parse(NULL, &r, err), -1);
	assert_string_equal(err, "empty seed range (want A..B or N)");
}

/* One seed: decimal, 0..2^64-1; past it, signs, hex and blanks are refused. */
static void
test_one_seed(void **state)
{
	static const char *const bad[] = { "", "-1", "+1", "0x10", " 1", "1 ",
	    "18446744073709551616", "99999999999999999999999", "1e3" };
	char		err[ERR_LEN];
	uint64_t	v;
	size_t		i;

	(void)state;
	assert_int_equal(seed_parse("0", &v, err), 0);
	assert_true(v == 0);
	assert_int_equal(seed_parse("1477", &v, err), 0);
	assert_true(v == 1477);
	assert_int_equal(seed_parse("18446744073709551615", &v, err), 0);
	assert_true(v == UINT64_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_int_equal(seed_parse(bad[i], &v, err), -1);
		assert_true(v == 42);
	}
	assert_int_equal(seed_parse("18446744073709551616", &v, err), -1);
	assert_string_equal(err, "18446744073709551616 is larger than the largest "
	    "seed, 18446744073709551615 (seeds are 64-bit)");
	assert_int_equal(seed_parse(NULL, &v, err), -1);
}

static void
test_golden(void **state)
{
	(void)state;
	assert_int_equal(seed_mix(0), 0xe220a8397b1dcdafULL);
	assert_int_equal(seed_mix(1), 0x910a2dec89025cc1ULL);
	assert_int_equal(seed_derive(0, 0, 0), 0x238275bc38fcbe91ULL);
	assert_int_equal(seed_derive(1477, 2, 3), 0xa3e08773ac8884caULL);
	/* Order of the inputs matters. */
	assert_int_not_equal(seed_derive(1477, 3, 2), seed_derive(1477, 2, 3));
	assert_int_equal(seed_turn(1477, 0, 0), 0xa3e93b190295f2e3ULL);
	assert_int_equal(seed_turn(1477, 2, 7), 0xe4d314e240549775ULL);
	assert_int_equal(seed_turn(UINT64_MAX, -1, -1), 0x443875d503f7f374ULL);
	assert_int_not_equal(seed_turn(1477, 7, 2), seed_turn(1477, 2, 7));
	assert_int_equal(seed_str("provider"), 0x354b1f371c3c089cULL);
	assert_int_equal(seed_str(""), 0xc3817c016ba4ff30ULL);
}

static void
test_rng_golden(void **state)
{
	static const uint64_t	below42[] = { 13, 91, 58, 64, 50, 62, 25, 8 };
	static const uint64_t	dice1477[] = { 3, 1, 1, 1, 3, 3, 5, 1 };
	struct seed_rng		r;
	size_t			i;

	(void)state;
	seed_rng_init(&r, 0);
	assert_int_equal(seed_rng_next(&r), 0xe220a8397b1dcdafULL);
	assert_int_equal(seed_rng_next(&r), 0x6e789e6aa1b965f4ULL);
	assert_int_equal(seed_rng_next(&r), 0x06c45d188009454fULL);

	seed_rng_init(&r, 0);
	/* (0xe220a8397b1dcdaf >> 11) / 2^53, exactly representable */
	assert_true(seed_rng_unit(&r) == 7956156453446585.0 / 9007199254740992.0);

	seed_rng_init(&r, 42);
	for (i = 0; i < nitems(below42); i++)
		assert_int_equal(seed_rng_below(&r, 100), below42[i]);
	seed_rng_init(&r, 1477);
	for (i = 0; i < nitems(dice1477); i++)
		assert_int_equal(seed_rng_below(&r, 6), dice1477[i]);
}

static void
test_rng_bounds(void **state)
{
	struct seed_rng	r, a, b;
	unsigned	seen[10];
	uint64_t	x;
	double		u;
	size_t		i;

	(void)state;
	seed_rng_init(&r, 0);
	assert_int_equal(seed_rng_below(&r, 0), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(seed_rng_below(&r, 1), 0);

	memset(seen, 0, sizeof(seen));
	seed_rng_init(&r, 7);
	for (i = 0; i < 10000; i++) {
		x = seed_rng_below(&r, 10);
		assert_true(x < 10);
		seen[x]++;
	}
	/* Every value comes up, none wildly over-represented. */
	for (i = 0; i < 10; i++) {
		assert_true(seen[i] > 800);
		assert_true(seen[i] < 1200);
	}

	/* Worst case for rejection: nearly half of the draws are rejected. */
	seed_rng_init(&r, 9);
	for (i = 0; i < 1000; i++)
		assert_true(seed_rng_below(&r, (UINT64_C(1) << 63) + 1) <=
		    (UINT64_C(1) << 63));
	seed_rng_init(&r, 9);
	for (i = 0; i < 1000; i++)
		assert_true(seed_rng_below(&r, UINT64_MAX) < UINT64_MAX);

	seed_rng_init(&r, 3);
	for (i = 0; i < 10000; i++) {
		u = seed_rng_unit(&r);
		assert_true(u >= 0.0 && u < 1.0);
	}

	/* Two generators from one seed walk the same stream. */
	seed_rng_init(&a, 1477);
	seed_rng_init(&b, 1477);
	for (i = 0; i < 100; i++)
		assert_int_equal(seed_rng_next(&a), seed_rng_next(&b));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_good),
		cmocka_unit_test(test_range_bad),
		cmocka_unit_test(test_one_seed),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_rng_golden),
		cmocka_unit_test(test_rng_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
