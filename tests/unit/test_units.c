/*
 * common/units.c: every form each grammar accepts, every form it rejects
 * with the exact sentence, overflow at each boundary, and a failed parse
 * leaving the result alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/fault.h"
#include "common/units.h"
#include "common/util.h"

/* cmocka 1.1.5 (Debian 12) has no assert_double_equal. */
#define assert_near(a, b, eps) \
	assert_true((a) - (b) <= (eps) && (b) - (a) <= (eps))

#define UNTOUCHED	(-7)

struct bad {
	const char	*s;
	const char	*why;
};

static void
test_duration(void **state)
{
	static const struct { const char *s; int64_t ms; } good[] = {
		{ "0ms", 0 }, { "0s", 0 }, { "0m", 0 }, { "250ms", 250 },
		{ "5s", 5000 }, { "2m", 120000 }, { "007s", 7000 },
		{ "9223372036854775807ms", INT64_MAX },
		{ "9223372036854775s", INT64_C(9223372036854775000) },
		{ "153722867280912m", INT64_C(9223372036854720000) },
	};
	static const struct bad bad[] = {
		{ "", "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ NULL, "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "5", "\"5\" has no unit (use ms, s or m)" },
		{ "0", "\"0\" has no unit (use ms, s or m)" },
		{ "s", "\"s\" is not a duration (use e.g. 250ms, 5s, 2m)" },
		{ " 5s", "\" 5s\" is not a duration (use e.g. 250ms, 5s, 2m)" },
		{ "+5s", "\"+5s\" is not a duration (use e.g. 250ms, 5s, 2m)" },
		{ ".5s", "\".5s\" is not a duration (use e.g. 250ms, 5s, 2m)" },
		{ "5s ", "\"5s \" has an unknown unit (use ms, s or m)" },
		{ "5 s", "\"5 s\" has an unknown unit (use ms, s or m)" },
		{ "5S", "\"5S\" has an unknown unit (use ms, s or m)" },
		{ "5MS", "\"5MS\" has an unknown unit (use ms, s or m)" },
		{ "5sec", "\"5sec\" has an unknown unit (use ms, s or m)" },
		{ "1h", "\"1h\" has an unknown unit (use ms, s or m)" },
		{ "5ms5", "\"5ms5\" has an unknown unit (use ms, s or m)" },
		{ "1.5s", "\"1.5s\" has an unknown unit (use ms, s or m)" },
		{ "1e3ms", "\"1e3ms\" has an unknown unit (use ms, s or m)" },
		{ "0x10s", "\"0x10s\" has an unknown unit (use ms, s or m)" },
		{ "-1ms", "\"-1ms\" is negative (a duration is at least 0ms)" },
		{ "-0ms", "\"-0ms\" is negative (a duration is at least 0ms)" },
		{ "9223372036854775808ms", "\"9223372036854775808ms\" is too large" },
		{ "99999999999999999999ms", "\"99999999999999999999ms\" is too large" },
		{ "9223372036854776s", "\"9223372036854776s\" is too large" },
		{ "153722867280913m", "\"153722867280913m\" is too large" },
		{ "153722867280912931m", "\"153722867280912931m\" is too large" },
	};
	char	err[ERR_LEN];
	int64_t	ms;
	size_t	i;

	(void)state;
	for (i = 0; i < nitems(good); i++) {
		if (parse_duration_ms(good[i].s, &ms, err) == -1)
			fail_msg("%s: %s", good[i].s, err);
		assert_int_equal(ms, good[i].ms);
	}
	for (i = 0; i < nitems(bad); i++) {
		ms = UNTOUCHED;
		assert_int_equal(parse_duration_ms(bad[i].s, &ms, err), -1);
		assert_string_equal(err, bad[i].why);
		assert_int_equal(ms, UNTOUCHED);
	}
}

static void
test_duration_range(void **state)
{
	static const struct { const char *s; int64_t lo, hi; } good[] = {
		{ "0ms..40ms", 0, 40 }, { "7ms", 7, 7 }, { "5s..5s", 5000, 5000 },
		{ "1s..2m", 1000, 120000 }, { "0ms..0ms", 0, 0 },
		{ "0ms..9223372036854775807ms", 0, INT64_MAX },
	};
	/* a latency's limit: what a plan can hold (common/fault.h) */
	static const struct { const char *s; int64_t lo, hi; } good_latency[] = {
		{ "60m", 3600000, 3600000 }, { "0ms..3600000ms", 0, 3600000 },
	};
	static const struct bad bad_latency[] = {
		{ "3600001ms", "\"3600001ms\" is more than 60m" },
		{ "0ms..61m", "\"0ms..61m\": the maximum is more than 60m" },
		{ "2m..9223372036854775807ms",
		    "\"2m..9223372036854775807ms\": the maximum is more than 60m" },
	};
	static const struct bad bad[] = {
		{ NULL, "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "", "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "..", "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "..5ms", "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "5ms..", "empty duration (use e.g. 250ms, 5s, 2m)" },
		{ "40ms..5ms", "\"40ms..5ms\": the minimum is above the maximum" },
		{ "1m..59s", "\"1m..59s\": the minimum is above the maximum" },
		{ "0..40ms", "\"0\" has no unit (use ms, s or m)" },
		{ "0ms..40", "\"40\" has no unit (use ms, s or m)" },
		{ "0ms...40ms",
		    "\".40ms\" is not a duration (use e.g. 250ms, 5s, 2m)" },
		{ "1ms..2ms..3ms",
		    "\"2ms..3ms\" has an unknown unit (use ms, s or m)" },
		{ "0ms ..40ms", "\"0ms \" has an unknown unit (use ms, s or m)" },
		{ "-5ms..5ms", "\"-5ms\" is negative (a duration is at least 0ms)" },
		{ "0ms..9223372036854775808ms",
		    "\"9223372036854775808ms\" is too large" },
		{ "5", "\"5\" has no unit (use ms, s or m)" },
	};
	char	err[ERR_LEN];
	int64_t	lo, hi;
	size_t	i;

	(void)state;
	for (i = 0; i < nitems(good); i++) {
		if (parse_duration_range(good[i].s, INT64_MAX, &lo, &hi, err) == -1)
			fail_msg("%s: %s", good[i].s, err);
		assert_int_equal(lo, good[i].lo);
		assert_int_equal(hi, good[i].hi);
	}
	for (i = 0; i < nitems(bad); i++) {
		lo = hi = UNTOUCHED;
		assert_int_equal(parse_duration_range(bad[i].s, INT64_MAX, &lo, &hi,
		    err), -1);
		assert_string_equal(err, bad[i].why);
		assert_int_equal(lo, UNTOUCHED);
		assert_int_equal(hi, UNTOUCHED);
	}
	for (i = 0; i < nitems(good_latency); i++) {
		if (parse_duration_range(good_latency[i].s, FAULT_LATENCY_MAX_MS, &lo,
		    &hi, err) == -1)
			fail_msg("%s: %s", good_latency[i].s, err);
		assert_int_equal(lo, good_latency[i].lo);
		assert_int_equal(hi, good_latency[i].hi);
	}
	for (i = 0; i < nitems(bad_latency); i++) {
		lo = hi = UNTOUCHED;
		assert_int_equal(parse_duration_range(bad_latency[i].s,
		    FAULT_LATENCY_MAX_MS, &lo, &hi, err), -1);
		assert_string_equal(err, bad_latency[i].why);
		assert_int_equal(lo, UNTOUCHED);
		assert_int_equal(hi, UNTOUCHED);
	}
}

static void
test_share(void **state)
{
	static const struct { const char *s; double v; } good[] = {
		{ "0", 0 }, { "1", 1 }, { "0.15", 0.15 }, { ".5", 0.5 },
		{ "1.", 1 }, { "1.0", 1 }, { "00.5", 0.5 },
		{ "0.000001", 1e-6 }, { "15%", 0.15 }, { "100%", 1 },
		{ "100.0%", 1 }, { "2.5%", 0.025 }, { "0%", 0 }, { ".5%", 0.005 },
	};
	static const struct bad bad[] = {
		{ "", "empty share (use e.g. 0.15 or 15%)" },
		{ NULL, "empty share (use e.g. 0.15 or 15%)" },
		{ "%", "\"%\" is not a share (use e.g. 0.15 or 15%)" },
		{ ".", "\".\" is not a share (use e.g. 0.15 or 15%)" },
		{ ".%", "\".%\" is not a share (use e.g. 0.15 or 15%)" },
		{ "abc", "\"abc\" is not a share (use e.g. 0.15 or 15%)" },
		{ "1e-3", "\"1e-3\" is not a share (use e.g. 0.15 or 15%)" },
		{ "1e-1", "\"1e-1\" is not a share (use e.g. 0.15 or 15%)" },
		{ "0x1p-3", "\"0x1p-3\" is not a share (use e.g. 0.15 or 15%)" },
		{ "-0.1", "\"-0.1\" is not a share (use e.g. 0.15 or 15%)" },
		{ "-0", "\"-0\" is not a share (use e.g. 0.15 or 15%)" },
		{ "+0.5", "\"+0.5\" is not a share (use e.g. 0.15 or 15%)" },
		{ " 0.5", "\" 0.5\" is not a share (use e.g. 0.15 or 15%)" },
		{ "0.5 ", "\"0.5 \" is not a share (use e.g. 0.15 or 15%)" },
		{ "15 %", "\"15 %\" is not a share (use e.g. 0.15 or 15%)" },
		{ "15%%", "\"15%%\" is not a share (use e.g. 0.15 or 15%)" },
		{ "1.2.3", "\"1.2.3\" is not a share (use e.g. 0.15 or 15%)" },
		{ "0,5", "\"0,5\" is not a share (use e.g. 0.15 or 15%)" },
		{ "nan", "\"nan\" is not a share (use e.g. 0.15 or 15%)" },
		{ "inf", "\"inf\" is not a share (use e.g. 0.15 or 15%)" },
		{ "1.01", "\"1.01\" is more than 1 (a share is 0..1 or 0%..100%)" },
		{ "2", "\"2\" is more than 1 (a share is 0..1 or 0%..100%)" },
		{ "100.5%", "\"100.5%\" is more than 100%" },
		{ "1000%", "\"1000%\" is more than 100%" },
		/* 64 characters: longer than any share needs. */
		{ "0.00000000000000000000000000000000000000000000000000000000000001",
		    "\"0.0000000000000000000000000000000000000000000000...\" "
		    "is not a share (use e.g. 0.15 or 15%)" },
	};
	char	err[ERR_LEN];
	double	v;
	size_t	i;

	(void)state;
	for (i = 0; i < nitems(good); i++) {
		if (parse_share(good[i].s, &v, err) == -1)
			fail_msg("%s: %s", good[i].s, err);
		assert_near(v, good[i].v, 1e-12);
	}
	for (i = 0; i < nitems(bad); i++) {
		v = UNTOUCHED;
		assert_int_equal(parse_share(bad[i].s, &v, err), -1);
		assert_string_equal(err, bad[i].why);
		assert_near(v, UNTOUCHED, 0);
	}
}

static void
test_bytes(void **state)
{
	static const struct { const char *s; int64_t v; } good[] = {
		{ "0", 0 }, { "16", 16 }, { "65536", 65536 },
		{ "512K", 512 * 1024 }, { "512k", 512 * 1024 },
		{ "1M", 1024 * 1024 }, { "1m", 1024 * 1024 },
		{ "2G", INT64_C(2) << 30 }, { "2g", INT64_C(2) << 30 },
		{ "0K", 0 }, { "9223372036854775807", INT64_MAX },
		{ "8589934591G", INT64_C(8589934591) << 30 },
		{ "9007199254740991K", INT64_C(9007199254740991) << 10 },
	};
	static const struct bad bad[] = {
		{ "", "\"\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ NULL, "\"\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "K", "\"K\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "64KB", "\"64KB\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "100B", "\"100B\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1KK", "\"1KK\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1T", "\"1T\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1.5M", "\"1.5M\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "-1", "\"-1\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "-0", "\"-0\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "+1", "\"+1\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ " 1", "\" 1\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1 ", "\"1 \" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1 K", "\"1 K\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "0x10", "\"0x10\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "1e3", "\"1e3\" is not a byte count (use e.g. 65536, 512K, 1M)" },
		{ "9223372036854775808", "\"9223372036854775808\" is too large" },
		{ "99999999999999999999K", "\"99999999999999999999K\" is too large" },
		{ "9007199254740992K", "\"9007199254740992K\" is too large" },
		{ "8796093022208M", "\"8796093022208M\" is too large" },
		{ "8589934592G", "\"8589934592G\" is too large" },
	};
	char	err[ERR_LEN];
	int64_t	v;
	size_t	i;

	(void)state;
	for (i = 0; i < nitems(good); i++) {
		if (parse_bytes(good[i].s, &v, err) == -1)
			fail_msg("%s: %s", good[i].s, err);
		assert_int_equal(v, good[i].v);
	}
	for (i = 0; i < nitems(bad); i++) {
		v = UNTOUCHED;
		assert_int_equal(parse_bytes(bad[i].s, &v, err), -1);
		assert_string_equal(err, bad[i].why);
		assert_int_equal(v, UNTOUCHED);
	}
}

/* The commands' number options: a whole number in the range, nothing else. */
static void
test_count(void **state)
{
	static const char *const bad[] = { "", "0", "257", "-1", "+1", " 1", "1 ",
	    "0x10", "1e2", "1.0", "99999999999999999999", NULL };
	char	err[ERR_LEN];
	int64_t	v;
	size_t	i;

	(void)state;
	assert_int_equal(parse_count("1", 1, 256, &v, err), 0);
	assert_int_equal(v, 1);
	assert_int_equal(parse_count("256", 1, 256, &v, err), 0);
	assert_int_equal(v, 256);
	assert_int_equal(parse_count("0", 0, 100, &v, err), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_count("0100", 0, 100, &v, err), 0);
	assert_int_equal(v, 100);
	for (i = 0; bad[i] != NULL; i++) {
		v = UNTOUCHED;
		if (parse_count(bad[i], 1, 256, &v, err) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(v, UNTOUCHED);
	}
	assert_int_equal(parse_count("-1", 1, 256, &v, err), -1);
	assert_string_equal(err, "\"-1\" is not a whole number of 1..256");
	assert_int_equal(parse_count(NULL, 0, 9, &v, err), -1);
	assert_string_equal(err, "\"\" is not a whole number of 0..9");
}

static void
test_quote(void **state)
{
	char	b[QUOTE_LEN], long_s[100];

	(void)state;
	assert_string_equal(quote_value("", b, sizeof(b)), "\"\"");
	assert_string_equal(quote_value("5s", b, sizeof(b)), "\"5s\"");
	assert_string_equal(quote_value("a\tb\x7f\n", b, sizeof(b)),
	    "\"a?b??\"");
	memset(long_s, 'x', sizeof(long_s) - 1);
	long_s[sizeof(long_s) - 1] = '\0';
	quote_value(long_s, b, sizeof(b));
	assert_int_equal(strlen(b), 1 + 48 + 3 + 1);
	assert_memory_equal(b + 49, "...\"", 5);
	/* Exactly 48 bytes: whole, no "...". */
	long_s[48] = '\0';
	quote_value(long_s, b, sizeof(b));
	assert_int_equal(strlen(b), 50);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_duration_range),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_quote),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
