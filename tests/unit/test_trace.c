/*
 * common/fault.c and common/trace.c: the trace's vocabulary and its one
 * decoder.  What the writer (fault-proxy/roll.c proxy_trace_format)
 * writes decodes to what it was given, field by field; a field it never
 * writes so is refused with a sentence naming it, never read as 0 ("zz"
 * as a turn set, "-1" as a turn, "0x…" as a key).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/fault.h"
#include "common/trace.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"

static void
test_fault_names(void **state)
{
	enum fault	f;
	unsigned	k;

	(void)state;
	for (k = 0; k < FAULT_MAX; k++) {
		assert_int_equal(fault_parse(fault_name((enum fault)k), &f), 0);
		assert_int_equal(f, k);
	}
	assert_string_equal(fault_name(FAULT_LOST_REPLY), "lost_reply");
	assert_string_equal(fault_name(FAULT_CLOSE_AFTER), "close_after");
	assert_string_equal(fault_name(FAULT_STATUS), "status");
	assert_string_equal(fault_name(FAULT_STREAM_CUT), "stream_cut");
	assert_string_equal(fault_name(FAULT_STREAM_STALL), "stream_stall");
	assert_string_equal(fault_name(FAULT_MAX), "?");
	assert_int_equal(fault_parse("Reset", &f), -1);
	assert_int_equal(fault_parse(" reset", &f), -1);
	assert_int_equal(fault_parse("", &f), -1);
	assert_int_equal(fault_parse(NULL, &f), -1);
	/* the proxy's faults are these, by value */
	assert_int_equal(PROXY_FAULT_CLOSE_AFTER, FAULT_CLOSE_AFTER);
	assert_int_equal(PROXY_FAULT_MAX, FAULT_MAX);
}

static void
test_keys_and_turns(void **state)
{
	static const char *const bad_keys[] = { "zz00000000000000", "0x00000000000000",
	    "+00000000000000a", "-00000000000000a", " 00000000000000a",
	    "00000000000000a", "00000000000000aab", "", NULL };
	static const char *const bad_sets[] = { "", "zz", "0x3", "+3", "-3", " 3",
	    "3 ", "11111111111111111", NULL };
	enum trace_deadlock	 d;
	uint64_t		 v;
	char			 hex[24];
	size_t			 i;

	(void)state;
	assert_int_equal(trace_key_parse("9f1c2a7b44d0e1f3", &v), 0);
	assert_true(v == 0x9f1c2a7b44d0e1f3ull);
	assert_int_equal(trace_key_parse("9F1C2A7B44D0E1F3", &v), 0);
	assert_true(v == 0x9f1c2a7b44d0e1f3ull);
	assert_string_equal(trace_key_hex(0xab, hex, sizeof(hex)), "00000000000000ab");
	for (i = 0; bad_keys[i] != NULL; i++) {
		v = 7;
		assert_int_equal(trace_key_parse(bad_keys[i], &v), -1);
	}
	assert_int_equal(trace_key_parse(NULL, &v), -1);
	assert_int_equal(trace_turns_parse("a9", &v), 0);
	assert_true(v == 0xa9);
	assert_int_equal(trace_turns_parse("ffffffffffffffff", &v), 0);
	assert_true(v == UINT64_MAX);
	for (i = 0; bad_sets[i] != NULL; i++)
		assert_int_equal(trace_turns_parse(bad_sets[i], &v), -1);
	assert_int_equal(trace_deadlock_parse("soak", &d), 0);
	assert_int_equal(d, TRACE_DEADLOCK_SOAK);
	assert_int_equal(trace_deadlock_parse("postgres", &d), 0);
	assert_int_equal(d, TRACE_DEADLOCK_POSTGRES);
	assert_int_equal(trace_deadlock_parse("", &d), -1);
	assert_int_equal(trace_deadlock_parse("Soak", &d), -1);
	assert_string_equal(trace_deadlock_name(TRACE_DEADLOCK_NONE), "");
}

/* The writer's line decodes to the record it wrote. */
static void
test_round_trip(void **state)
{
	struct proxy_trace_rec	 r = {
		.proxy = 0, .name = "db", .turn = 3, .conn = 2, .exchange = 7,
		.fault = PROXY_FAULT_LOST_REPLY, .latency_ms = 12, .bytes_up = 9,
		.bytes_down = 4, .upstream_saw = true, .client_got_reply = false,
		.round = 2, .keyed = true, .key = 0x9f1c2a7b44d0e1f3ull, .occ = 1,
		.plan = "lock-deferred", .deferred = 4, .pg = "simple",
		.sql = "UPDATE t SET \"n\" = 1", .tx = 'T', .step = 5, .cand = 0xa9,
		.cls = "other", .forced = "arrival", .lock_wait = true, .waits_on = 0,
		.deadlock = TRACE_DEADLOCK_POSTGRES, .wakes = 0x11,
		.closed = "upstream gone",
	};
	struct trace_line	 l;
	char			 line[1024], err[ERR_LEN];
	json_t			*o;
	int			 n;

	(void)state;
	n = proxy_trace_format(&r, line, sizeof(line));
	assert_true(n > 0);
	o = json_loadb(line, (size_t)n, 0, NULL);
	assert_non_null(o);
	assert_int_equal(trace_line_parse(o, &l, err), 0);
	assert_string_equal(l.proxy, "db");
	assert_int_equal(l.turn, 3);
	assert_int_equal(l.conn, 2);
	assert_int_equal(l.exchange, 7);
	assert_int_equal(l.fault, FAULT_LOST_REPLY);
	assert_int_equal(l.latency_ms, 12);
	assert_true(l.upstream_saw);
	assert_false(l.client_got_reply);
	assert_int_equal(l.round, 2);
	assert_true(l.keyed);
	assert_true(l.key == 0x9f1c2a7b44d0e1f3ull);
	assert_int_equal(l.occ, 1);
	assert_string_equal(l.plan, "lock-deferred");
	assert_int_equal(l.deferred, 4);
	assert_string_equal(l.pg, "simple");
	assert_string_equal(l.sql, "UPDATE t SET \"n\" = 1");
	assert_string_equal(l.tx, "T");
	assert_int_equal(l.step, 5);
	assert_true(l.has_cand);
	assert_true(l.cand == 0xa9);
	assert_string_equal(l.cls, "other");
	assert_string_equal(l.forced, "arrival");
	assert_true(l.lock_wait);
	assert_true(l.waits_on == 0);
	assert_int_equal(l.deadlock, TRACE_DEADLOCK_POSTGRES);
	assert_true(l.wakes == 0x11);
	assert_string_equal(l.closed, "upstream gone");
	json_decref(o);
	/* the smallest line: no key, no step, no schedule */
	memset(&r, 0, sizeof(r));
	r.name = "api";
	n = proxy_trace_format(&r, line, sizeof(line));
	o = json_loadb(line, (size_t)n, 0, NULL);
	assert_int_equal(trace_line_parse(o, &l, err), 0);
	assert_false(l.keyed);
	assert_int_equal(l.step, 0);
	assert_false(l.has_cand);
	assert_false(l.lock_wait);
	assert_int_equal(l.deadlock, TRACE_DEADLOCK_NONE);
	assert_int_equal(l.fault, FAULT_NONE);
	assert_int_equal(l.status, 0);
	assert_int_equal(l.after, 0);
	json_decref(o);
	/* an HTTP API fault's parameters */
	r.fault = PROXY_FAULT_STATUS;
	r.status = 529;
	n = proxy_trace_format(&r, line, sizeof(line));
	o = json_loadb(line, (size_t)n, 0, NULL);
	assert_int_equal(trace_line_parse(o, &l, err), 0);
	assert_int_equal(l.fault, FAULT_STATUS);
	assert_int_equal(l.status, 529);
	json_decref(o);
	r.fault = PROXY_FAULT_STREAM_STALL;
	r.status = 0;
	r.after = 4;
	r.stall_ms = 2500;
	n = proxy_trace_format(&r, line, sizeof(line));
	o = json_loadb(line, (size_t)n, 0, NULL);
	assert_int_equal(trace_line_parse(o, &l, err), 0);
	assert_int_equal(l.fault, FAULT_STREAM_STALL);
	assert_int_equal(l.after, 4);
	assert_int_equal(l.stall_ms, 2500);
	json_decref(o);
	/* bytes that are not UTF-8 in what a client sent (issue 38): the line
	 * still reads, each such byte as U+FFFD, controls escaped */
	memset(&r, 0, sizeof(r));
	r.name = "api";
	r.keyed = true;
	r.key = 1;
	snprintf(r.req, sizeof(r.req), "GET /caf\xe9\x1b[2J\xe2\x82");
	r.pg = "simple";
	snprintf(r.sql, sizeof(r.sql), "SELECT \xff");
	n = proxy_trace_format(&r, line, sizeof(line));
	assert_true(n > 0);
	o = json_loadb(line, (size_t)n, 0, NULL);
	assert_non_null(o);
	assert_int_equal(trace_line_parse(o, &l, err), 0);
	assert_string_equal(l.req, "GET /caf\xef\xbf\xbd\x1b[2J\xef\xbf\xbd"
	    "\xef\xbf\xbd");
	assert_string_equal(l.sql, "SELECT \xef\xbf\xbd");
	assert_null(strchr(line, 0x1b));	/* as \u001b */
	json_decref(o);
}

/* Every field soak never writes so, refused by name. */
static void
test_refused(void **state)
{
	static const struct {
		const char	*fields;	/* after "proxy" */
		const char	*want;
	} cases[] = {
		{ "\"turn\":0,\"conn\":0", "no exchange" },
		{ "\"conn\":0,\"exchange\":0", "no turn" },
		{ "\"turn\":-1,\"conn\":0,\"exchange\":0",
		  "turn: -1 is out of range (0..2147483647)" },
		{ "\"turn\":2147483648,\"conn\":0,\"exchange\":0",
		  "turn: 2147483648 is out of range (0..2147483647)" },
		{ "\"turn\":\"1\",\"conn\":0,\"exchange\":0", "turn: not a whole number" },
		{ "\"turn\":1.5,\"conn\":0,\"exchange\":0", "turn: not a whole number" },
		{ "\"turn\":0,\"conn\":4294967296,\"exchange\":0",
		  "conn: 4294967296 is out of range (0..4294967295)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":\"explode\"",
		  "fault: \"explode\" is not a fault kind" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"latency_ms\":-1",
		  "latency_ms: -1 is out of range (0..3600000)" },
		/* no proxy records more than a plan can hold (common/fault.h) */
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"latency_ms\":3600001",
		  "latency_ms: 3600001 is out of range (0..3600000)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"round\":-1",
		  "round: -1 is out of range (0..2147483647)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"key\":\"zz00000000000000\"",
		  "key: \"zz00000000000000\" is not 16 hex digits" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"key\":\"0x00000000000001\"",
		  "key: \"0x00000000000001\" is not 16 hex digits" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"key\":171",
		  "key: not a string" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"step\":0",
		  "step: 0 is out of range (1..4294967295)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"step\":1,\"cand\":\"zz\"",
		  "cand: \"zz\" is not a set of turns (1 to 16 hex digits)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"step\":1,\"cand\":3",
		  "cand: not a string" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"waits_on\":\"\"",
		  "waits_on: \"\" is not a set of turns (1 to 16 hex digits)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"wakes\":\"-1\"",
		  "wakes: \"-1\" is not a set of turns (1 to 16 hex digits)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"deadlock\":\"me\"",
		  "deadlock: \"me\" is not soak or postgres" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"upstream_saw\":1",
		  "upstream_saw: not true or false" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"sql\":[]", "sql: not a string" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"status\":99",
		  "status: 99 is out of range (100..599)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"status\":\"429\"",
		  "status: not a whole number" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"after\":0",
		  "after: 0 is out of range (1..4294967295)" },
		{ "\"turn\":0,\"conn\":0,\"exchange\":0,\"stall_ms\":-5",
		  "stall_ms: -5 is out of range (0..9223372036854775807)" },
	};
	struct trace_line	 l;
	char			 err[ERR_LEN], *text;
	json_t			*o;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		text = xasprintf("{\"proxy\":\"db\",%s}", cases[i].fields);
		o = json_loads(text, 0, NULL);
		assert_non_null(o);
		err[0] = '\0';
		if (trace_line_parse(o, &l, err) != -1)
			fail_msg("accepted: %s", text);
		assert_string_equal(err, cases[i].want);
		json_decref(o);
		free(text);
	}
	o = json_loads("{\"turn\":0,\"conn\":0,\"exchange\":0}", 0, NULL);
	assert_int_equal(trace_line_parse(o, &l, err), -1);
	assert_string_equal(err, "no proxy");
	json_decref(o);
	o = json_loads("[1]", 0, NULL);
	assert_int_equal(trace_line_parse(o, &l, err), -1);
	assert_string_equal(err, "not a JSON object");
	json_decref(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_names),
		cmocka_unit_test(test_keys_and_turns),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
