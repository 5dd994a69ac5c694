/*
 * worker/detail.c: a result's detail cut to fit one message.  Costs equal
 * jansson's own output; invariants keep every name and the first rows of
 * each before later ones; turns keep the abnormal, then the failed, then
 * the ok ones; a trace keeps whole first lines and says how many it left
 * out; every cut says so; the same input gives the same output; a detail
 * that still does not fit becomes a summary that names where the full data
 * is; and a UTF-8 cut never splits a character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/msg.h"
#include "common/util.h"
#include "worker/detail.h"
#include "worker/wrk.h"

static char *
repeat(const char *unit, size_t n)
{
	size_t	 u = strlen(unit), i;
	char	*s = xcalloc(u * n + 1, 1);

	for (i = 0; i < n; i++)
		memcpy(s + i * u, unit, u);
	return s;
}

static size_t
dump_len(const json_t *v)
{
	return json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void
test_str_cost(void **state)
{
	static const struct { const char *s; size_t len; } cases[] = {
		{ "", 0 }, { "plain ascii / slash", 19 }, { "\"quoted\" \\ back", 16 },
		{ "\b\f\n\r\t", 5 }, { "\x01\x1f\x7f", 3 }, { "a\0b", 3 },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t	*j = json_stringn(cases[i].s, cases[i].len);

		assert_non_null(j);
		assert_int_equal(detail_str_cost(cases[i].s, cases[i].len), dump_len(j));
		json_decref(j);
	}
}

static void
test_utf8_prefix(void **state)
{
	/* a, é (2), € (3), 😀 (4), b */
	const char	*s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "b";
	static const size_t want[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11 };
	size_t		 max, len = strlen(s);
	char		 bad[8] = { 'x', (char)0x80, (char)0x80, (char)0x80, (char)0x80,
	    (char)0x80, 'y', 0 };

	(void)state;
	for (max = 0; max <= len; max++)
		assert_int_equal(utf8_prefix(s, len, max), want[max]);
	assert_int_equal(utf8_prefix(s, len, 100), len);
	/* Not UTF-8: backs up three bytes at most, never to a negative length. */
	assert_int_equal(utf8_prefix(bad, 7, 5), 2);
	assert_int_equal(utf8_prefix(bad + 1, 5, 0), 0);
}

/* An invariant with nrows rows of one value of w bytes each. */
static json_t *
inv(const char *name, int nrows, size_t w)
{
	json_t	*rows = json_array();
	char	*v = repeat("v", w);
	int	 r;

	for (r = 0; r < nrows; r++) {
		char	n[16];

		snprintf(n, sizeof(n), "%d", r);
		json_array_append_new(rows, json_pack("[s, s]", n, v));
	}
	free(v);
	return json_pack("{s:s, s:s, s:[s, s], s:o, s:I}", "name", name,
	    "sql", "SELECT n, v FROM t", "columns", "n", "v", "rows", rows,
	    "row_count", (json_int_t)nrows * 3);
}

static void
test_trim_invariants(void **state)
{
	json_t	*invs = json_pack("[o, o]", inv("a", 20, 1000), inv("b", 3, 1000));
	json_t	*markers = json_array(), *out, *a, *b;
	size_t	 heads;

	(void)state;
	/* Everything fits: nothing changes, nothing is said. */
	out = detail_trim_invariants(invs, 1 << 20, markers);
	assert_true(json_equal(out, invs));
	assert_int_equal(json_array_size(markers), 0);
	json_decref(out);

	/* Heads, then room for five rows of about 1 KB: a0 b0 a1 b1 a2. */
	out = detail_trim_invariants(invs, 0, markers);
	heads = dump_len(out);
	json_decref(out);
	json_array_clear(markers);
	out = detail_trim_invariants(invs, heads + 5 * 1020, markers);
	a = json_array_get(out, 0);
	b = json_array_get(out, 1);
	assert_string_equal(json_string_value(json_object_get(a, "name")), "a");
	assert_string_equal(json_string_value(json_object_get(a, "sql")), "SELECT n, v FROM t");
	assert_int_equal(json_integer_value(json_object_get(a, "row_count")), 60);
	assert_int_equal(json_array_size(json_object_get(a, "rows")), 3);
	assert_int_equal(json_array_size(json_object_get(b, "rows")), 2);
	assert_string_equal(json_string_value(json_array_get(json_array_get(
	    json_object_get(a, "rows"), 2), 0)), "2");
	assert_string_equal(json_string_value(json_object_get(a, "truncated")),
	    "truncated: 17 more rows");
	assert_string_equal(json_string_value(json_object_get(b, "truncated")),
	    "truncated: 1 more rows");
	assert_int_equal(json_array_size(markers), 2);
	assert_string_equal(json_string_value(json_array_get(markers, 0)),
	    "truncated: 17 more rows of \"a\"");
	assert_true(dump_len(out) <= heads + 5 * 1020 + 100);
	/* The input is left whole: it is the full data. */
	assert_int_equal(json_array_size(json_object_get(json_array_get(invs, 0), "rows")), 20);
	json_decref(out);

	/* No room for any row: every name is still there. */
	json_array_clear(markers);
	out = detail_trim_invariants(invs, 10, markers);
	assert_int_equal(json_array_size(out), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(out, 1), "name")), "b");
	assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0),
	    "truncated")), "truncated: 20 more rows");
	json_decref(out);
	json_decref(markers);
	json_decref(invs);
}

static json_t *
turn(int round, int t, const char *status, size_t tail)
{
	char	*s = repeat("\"", tail);
	json_t	*j = json_pack("{s:i, s:i, s:s, s:i, s:I, s:s}", "round", round,
	    "turn", t, "status", status, "code", 1, "duration_ms", (json_int_t)5,
	    "stderr_tail", s);

	free(s);
	return j;
}

static void
test_trim_turns(void **state)
{
	static const char *const st[10] = { "ok", "error", "ok", "signal", "error",
	    "ok", "error", "timeout", "ok", "error" };
	json_t	*turns = json_array(), *markers = json_array(), *out;
	size_t	 one, i;
	char	 got[64] = "";

	(void)state;
	for (i = 0; i < 10; i++)
		json_array_append_new(turns, turn(0, (int)i, st[i], 500));
	one = dump_len(json_array_get(turns, 0)) + 1;

	out = detail_trim_turns(turns, 1 << 20, markers);
	assert_true(json_equal(out, turns));
	assert_int_equal(json_array_size(markers), 0);
	json_decref(out);

	/* Room for five: the signal and the timeout, then the first three
	 * errors; none of the ok ones.  Kept in run order. */
	out = detail_trim_turns(turns, 2 + 5 * one + one / 2, markers);
	for (i = 0; i < json_array_size(out); i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%lld ",
		    (long long)json_integer_value(json_object_get(json_array_get(out, i), "turn")));
	assert_string_equal(got, "1 3 4 6 7 ");
	assert_int_equal(json_array_size(markers), 1);
	assert_string_equal(json_string_value(json_array_get(markers, 0)),
	    "truncated: 5 more turns");
	json_decref(out);
	json_decref(markers);
	json_decref(turns);
}

static char *
trace_file(int nlines, int last_newline, const char *extra)
{
	char	 path[] = "/tmp/soak-test-trace.XXXXXX";
	int	 fd = mkstemp(path), i;
	FILE	*f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	for (i = 0; i < nlines; i++)
		fprintf(f, "{\"proxy\":\"api\",\"turn\":%d,\"fault\":\"none\"%s}%s", i,
		    i == 1 && extra ? extra : "", i + 1 < nlines || last_newline ? "\n" : "");
	fclose(f);
	return xstrdup(path);
}

static void
test_trace(void **state)
{
	struct detail_trace	 t;
	char			*path = trace_file(100, 1, ",\"note\":\"caf\xc3\xa9 \xff\""), *full;
	char			 err[ERR_LEN], *line0;
	json_t			*markers = json_array(), *s, *last;
	size_t			 len, cost1;
	const char		*txt, *nl;

	(void)state;
	full = read_file(path, 1 << 20, &len, err);
	assert_non_null(full);
	utf8_scrub(full, len);
	/* Everything fits: the text is the file (the bad byte as '?'). */
	assert_int_equal(detail_trace_read(path, DETAIL_TRACE_MAX, &t, err), 0);
	assert_int_equal(t.lines, 100);
	assert_int_equal(t.more, 0);
	assert_int_equal(t.len, len);
	assert_non_null(strstr(t.text, "caf\xc3\xa9 ?\""));
	s = detail_trace_json(&t, "/kept/trace.jsonl", markers);
	assert_non_null(s);
	assert_int_equal(json_array_size(markers), 0);
	json_decref(s);
	detail_trace_free(&t);

	/* Room for about ten lines: whole first lines, the rest counted. */
	nl = strchr(full, '\n');
	line0 = strndup(full, (size_t)(nl - full + 1));
	cost1 = detail_str_cost(line0, strlen(line0)) - 2;
	assert_int_equal(detail_trace_read(path, 2 + 10 * cost1 + 20, &t, err), 0);
	assert_true(t.lines >= 8 && t.lines <= 10);
	assert_int_equal(t.lines + t.more, 100);
	assert_memory_equal(t.text, full, t.len);
	assert_int_equal(t.text[t.len - 1], '\n');
	s = detail_trace_json(&t, "/kept/trace.jsonl", markers);
	txt = json_string_value(s);
	assert_memory_equal(txt, full, t.len);
	last = json_loads(txt + t.len, 0, NULL);
	assert_non_null(last);
	assert_string_equal(json_string_value(json_object_get(last, "full_trace")),
	    "/kept/trace.jsonl");
	assert_string_equal(json_string_value(json_object_get(last, "truncated")),
	    json_string_value(json_array_get(markers, 0)));
	assert_int_equal(strncmp(json_string_value(json_array_get(markers, 0)),
	    "truncated: ", 11), 0);
	assert_int_equal(strtoull(json_string_value(json_array_get(markers, 0)) + 11,
	    NULL, 10), t.more);
	json_decref(last);
	json_decref(s);
	detail_trace_free(&t);
	unlink(path);
	free(path);
	free(full);
	free(line0);

	/* A last line without its newline is a line; the marker starts a new one. */
	path = trace_file(3, 0, NULL);
	json_array_clear(markers);
	assert_int_equal(detail_trace_read(path, 2, &t, err), 0);
	assert_int_equal(t.lines, 0);
	assert_int_equal(t.more, 3);
	s = detail_trace_json(&t, NULL, markers);
	assert_string_equal(json_string_value(s),
	    "{\"truncated\":\"truncated: 3 more trace lines\",\"full_trace\":null}\n");
	json_decref(s);
	/* The whole schedules ride on the marker, for a comparison past it. */
	t.schedule = json_pack("{s:{s:i, s:s}}", "db", "steps", 40, "digest",
	    "00000000000000ff");
	s = detail_trace_json(&t, NULL, markers);
	assert_string_equal(json_string_value(s),
	    "{\"truncated\":\"truncated: 3 more trace lines\",\"full_trace\":null,"
	    "\"schedule\":{\"db\":{\"steps\":40,\"digest\":\"00000000000000ff\"}}}\n");
	json_decref(s);
	detail_trace_free(&t);
	unlink(path);
	free(path);
	assert_int_equal(detail_trace_read("/nonexistent/trace.jsonl", 100, &t, err), -1);
	assert_non_null(strstr(err, "/nonexistent/trace.jsonl"));
	detail_trace_free(&t);
	json_decref(markers);
}

/* A failing seed's detail, as wrk_run_seed builds it, with nturns turns. */
static json_t *
big_detail(int nturns, size_t width)
{
	json_t	*turns = json_array();
	int	 i;

	for (i = 0; i < nturns; i++)
		json_array_append_new(turns, turn(i / 64, i % 64, i % 7 ? "error" : "ok", 2048));
	return json_pack("{s:s, s:i, s:i, s:i, s:[o], s:o, s:s}",
	    "message", "1 invariant(s) broken after round 3", "round", 3,
	    "ok_turns", 10, "total_turns", nturns,
	    "invariants", inv("wide", 20, width), "turns", turns,
	    "workspace", "/kept/failures/0/workspace");
}

static void
test_trim_detail(void **state)
{
	json_t		*d = big_detail(2560, 30000), *a, *b, *tr, *m;
	struct detail_trace t = { .text = xstrdup("{\"a\":1}\n"), .len = 8, .lines = 1, .more = 7 };
	char		*sa, *sb;

	(void)state;
	assert_true(dump_len(d) > MSG_STR_LONG);
	a = detail_trim(d, &t, "/kept/failures/0");
	b = detail_trim(d, &t, "/kept/failures/0");
	sa = json_dumps(a, JSON_COMPACT);
	sb = json_dumps(b, JSON_COMPACT);
	/* The same seed, the same detail. */
	assert_string_equal(sa, sb);
	assert_true(strlen(sa) <= MSG_DETAIL_MAX);
	/* The verdict's fields are whole. */
	assert_string_equal(json_string_value(json_object_get(a, "message")),
	    "1 invariant(s) broken after round 3");
	assert_int_equal(json_integer_value(json_object_get(a, "round")), 3);
	assert_int_equal(json_integer_value(json_object_get(a, "total_turns")), 2560);
	assert_string_equal(json_string_value(json_object_get(a, "workspace")),
	    "/kept/failures/0/workspace");
	tr = json_object_get(a, "truncated");
	assert_string_equal(json_string_value(json_object_get(tr, "full_data")),
	    "/kept/failures/0");
	m = json_object_get(tr, "markers");
	assert_int_equal(json_array_size(m), 3);
	assert_string_equal(json_string_value(json_array_get(m, 0)),
	    "truncated: 12 more rows of \"wide\"");
	assert_int_equal(strncmp(json_string_value(json_array_get(m, 1)),
	    "truncated: ", 11), 0);
	assert_non_null(strstr(json_string_value(json_array_get(m, 1)), " more turns"));
	assert_string_equal(json_string_value(json_array_get(m, 2)),
	    "truncated: 7 more trace lines");
	assert_string_equal(json_string_value(json_object_get(a, "trace")),
	    "{\"a\":1}\n{\"truncated\":\"truncated: 7 more trace lines\","
	    "\"full_trace\":\"/kept/failures/0/workspace/trace.jsonl\"}\n");
	/* No ok turn is shown while a failed one is not. */
	assert_true(json_array_size(json_object_get(a, "turns")) < 2560 / 7 * 6);
	for (size_t i = 0; i < json_array_size(json_object_get(a, "turns")); i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(
		    json_object_get(a, "turns"), i), "status")), "error");
	/* The full detail is untouched. */
	assert_int_equal(json_array_size(json_object_get(d, "turns")), 2560);
	assert_null(json_object_get(d, "truncated"));
	free(sa);
	free(sb);
	json_decref(a);
	json_decref(b);

	/* A small failure passes as it is. */
	json_decref(d);
	d = big_detail(3, 100);
	a = detail_trim(d, NULL, "/kept/failures/0");
	assert_true(json_equal(a, d));
	json_decref(a);
	json_decref(d);
	free(t.text);
}

static void
test_result_text(void **state)
{
	struct seed_result	 res = { 0 };
	json_t			*d = big_detail(600, 30000), *j, *tr;
	char			*s, *want;
	size_t			 full;

	(void)state;
	res.detail = NULL;
	s = wrk_result_text(&res);
	assert_string_equal(s, "{}");
	free(s);

	/* Within the limit: the detail itself. */
	res.detail = detail_trim(d, NULL, "/kept/failures/0");
	s = wrk_result_text(&res);
	want = json_dumps(res.detail, JSON_COMPACT);
	assert_string_equal(s, want);
	free(s);
	free(want);
	json_decref(res.detail);

	/* Over it (here: never cut): a summary that says where the data is. */
	res.detail = d;
	json_object_set_new(d, "coverage", json_pack("{s:{s:{s:i}}}", "proxies",
	    "db", "exchanges", 7));
	full = strlen(want = json_dumps(d, JSON_COMPACT));
	free(want);
	assert_true(full > MSG_DETAIL_MAX);
	s = wrk_result_text(&res);
	assert_true(strlen(s) <= MSG_DETAIL_MAX);
	j = json_loads(s, 0, NULL);
	assert_non_null(j);
	want = xasprintf("1 invariant(s) broken after round 3 (detail dropped: %zu "
	    "bytes, over the limit of %u; the full data is in "
	    "/kept/failures/0/workspace)", full, MSG_DETAIL_MAX);
	assert_string_equal(json_string_value(json_object_get(j, "message")), want);
	assert_int_equal(json_integer_value(json_object_get(j, "round")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "invariants"), 0), "name")), "wide");
	assert_null(json_object_get(j, "turns"));
	/* the coverage stays: the run's sums would miss the seed */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(json_object_get(j, "coverage"), "proxies"), "db"),
	    "exchanges")), 7);
	tr = json_object_get(j, "truncated");
	assert_string_equal(json_string_value(json_object_get(tr, "full_data")),
	    "/kept/failures/0/workspace");
	assert_int_equal(strncmp(json_string_value(json_array_get(json_object_get(tr,
	    "markers"), 0)), "detail dropped: ", 16), 0);
	free(want);
	free(s);
	json_decref(j);
	json_decref(d);
}

/*
 * The cap at its boundary: a detail of exactly MSG_DETAIL_MAX bytes is sent
 * as it is; one byte more and the worker sends something else (a summary,
 * or the dropped note), never the whole detail.
 */
static void
test_result_text_at_cap(void **state)
{
	struct seed_result	 res = { 0 };
	const size_t		 frame = strlen("{\"message\":\"\"}");
	char			*msg, *s, *want;
	size_t			 n;

	(void)state;
	for (n = MSG_DETAIL_MAX - frame; n <= MSG_DETAIL_MAX - frame + 1; n++) {
		msg = malloc(n + 1);
		assert_non_null(msg);
		memset(msg, 'm', n);
		msg[n] = '\0';
		res.detail = json_pack("{s:s}", "message", msg);
		want = json_dumps(res.detail, JSON_COMPACT);
		assert_int_equal(strlen(want), n + frame);
		s = wrk_result_text(&res);
		assert_true(strlen(s) <= MSG_DETAIL_MAX);
		if (n + frame == MSG_DETAIL_MAX)
			assert_true(strcmp(s, want) == 0);	/* at the cap: whole */
		else
			assert_true(strcmp(s, want) != 0);	/* past it: not */
		free(s);
		free(want);
		free(msg);
		json_decref(res.detail);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_str_cost),
		cmocka_unit_test(test_utf8_prefix),
		cmocka_unit_test(test_trim_invariants),
		cmocka_unit_test(test_trim_turns),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_trim_detail),
		cmocka_unit_test(test_result_text),
		cmocka_unit_test(test_result_text_at_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
