/*
 * A schedule read back for people (fault-proxy/tracecmp.c,
 * proxy_schedule_show): a fault trace comes sorted by turn, and the
 * interleaving must come out in step order, a line a step, with the
 * markers the trace holds and the long ones cut in the middle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "fault-proxy/proxy.h"

#define SEL	"SELECT items_reserved, version FROM orders WHERE id = \xe2\x80\xa6"
#define UPD	"UPDATE orders SET items_reserved = $1, version = \xe2\x80\xa6"

/* One trace line as proxy_trace_format writes it; extra is ",..." or "". */
static char *
line(const char *proxy, int turn, int exchange, int step, const char *sql,
    const char *extra)
{
	return xasprintf("{\"proxy\":\"%s\",\"turn\":%d,\"conn\":0,\"exchange\":%d,"
	    "\"fault\":\"none\",\"latency_ms\":0,\"bytes_up\":107,\"bytes_down\":"
	    "113,\"upstream_saw\":true,\"client_got_reply\":true,\"step\":%d,"
	    "\"cand\":\"3\",\"pg\":\"extended\",\"sql\":\"%s\",\"tx\":\"I\"%s}\n",
	    proxy, turn, exchange, step, sql, extra);
}

static char *
cat(char *a, char *b)
{
	char	*s = xasprintf("%s%s", a ? a : "", b);

	free(a);
	free(b);
	return s;
}

static char *
show(const char *trace, const struct cfg *cfg, size_t limit)
{
	char	 err[ERR_LEN] = "", *out;

	out = proxy_schedule_show(trace, strlen(trace), cfg, limit, err);
	if (out == NULL)
		fail_msg("proxy_schedule_show: %s", err);
	return out;
}

/*
 * The lost update as the trace file holds it (turn 0's lines, then turn
 * 1's): shown in step order, the two reads before the two writes.  The
 * startup exchange and an unscheduled proxy's lines have no step and are
 * not shown.
 */
static void
test_step_order(void **state)
{
	char	*t = NULL, *out;

	(void)state;
	t = cat(t, xstrdup("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":0,"
	    "\"fault\":\"none\",\"pg\":\"startup\"}\n"));
	t = cat(t, line("db", 0, 1, 2, SEL, ""));
	t = cat(t, line("db", 0, 2, 4, UPD, ""));
	t = cat(t, line("db", 1, 1, 1, SEL, ""));
	t = cat(t, line("db", 1, 2, 3, UPD, ""));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":1,\"conn\":0,\"exchange\":0,"
	    "\"fault\":\"none\"}\n"));
	out = show(t, NULL, 40);
	assert_string_equal(out,
	    "schedule of proxy db (4 steps):\n"
	    "    1  turn 1  " SEL "\n"
	    "    2  turn 0  " SEL "\n"
	    "    3  turn 1  " UPD "\n"
	    "    4  turn 0  " UPD "\n");
	free(out);
	free(t);
}

/* The mode comes from the config's proxy of that name, when scheduled. */
static void
test_mode_from_config(void **state)
{
	struct cfg_proxy	 px[2] = {
		{ .name = "other", .schedule = { .enabled = true,
		    .mode = CFG_SCHED_PCT } },
		{ .name = "db", .schedule = { .enabled = true,
		    .mode = CFG_SCHED_RANDOM } },
	};
	struct cfg		 cfg = { .proxies = px, .nproxies = 2 };
	char			*t, *out;

	(void)state;
	t = line("db", 0, 1, 1, SEL, "");
	out = show(t, &cfg, 40);
	assert_string_equal(out, "schedule of proxy db (1 step, random):\n"
	    "    1  turn 0  " SEL "\n");
	free(out);
	px[1].schedule.mode = CFG_SCHED_PCT;
	out = show(t, &cfg, 40);
	assert_non_null(strstr(out, "(1 step, pct):\n"));
	free(out);
	/* Not scheduled in this config: no mode claimed. */
	px[1].schedule.enabled = false;
	out = show(t, &cfg, 40);
	assert_non_null(strstr(out, "(1 step):\n"));
	free(out);
	free(t);
}

/*
 * A timeout's decision, a lock wait PostgreSQL reported (one turn, then
 * two), a fault, and an exchange with no statement, each said on its line;
 * a plain step says none of them.
 */
static void
test_markers(void **state)
{
	char	*t = NULL, *out;

	(void)state;
	t = cat(t, line("db", 3, 1, 1, "BEGIN", ""));
	t = cat(t, line("db", 3, 2, 2, SEL, ",\"forced\":\"arrival\""));
	t = cat(t, line("db", 12, 1, 3, SEL, ",\"forced\":\"blocked\","
	    "\"waits_on\":\"8\""));
	t = cat(t, line("db", 0, 1, 4, SEL, ",\"waits_on\":\"1008\""));
	t = cat(t, xstrdup("{\"proxy\":\"db\",\"turn\":3,\"conn\":0,\"exchange\":3,"
	    "\"fault\":\"lost_reply\",\"step\":5,\"cand\":\"1009\",\"pg\":\"simple\","
	    "\"sql\":\"COMMIT\",\"tx\":\"I\"}\n"));
	t = cat(t, xstrdup("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":2,"
	    "\"fault\":\"none\",\"step\":6,\"cand\":\"1\",\"pg\":\"sync\"}\n"));
	out = show(t, NULL, 0);
	assert_string_equal(out,
	    "schedule of proxy db (6 steps):\n"
	    "    1  turn 3   BEGIN\n"
	    "    2  turn 3   " SEL "  [forced: arrival]\n"
	    "    3  turn 12  " SEL "  [forced: blocked]  [waits on turn {3}]\n"
	    "    4  turn 0   " SEL "  [waits on turns {3,12}]\n"
	    "    5  turn 3   COMMIT  [fault: lost_reply]\n"
	    "    6  turn 0   (sync)\n");
	free(out);
	free(t);
}

/* Two scheduled proxies: a block each, in name order, each in step order. */
static void
test_two_proxies(void **state)
{
	char	*t = NULL, *out;

	(void)state;
	t = cat(t, line("ledger", 0, 1, 2, "B", ""));
	t = cat(t, line("db", 0, 1, 2, "Y", ""));
	t = cat(t, line("ledger", 1, 1, 1, "A", ""));
	t = cat(t, line("db", 1, 1, 1, "X", ""));
	out = show(t, NULL, 40);
	assert_string_equal(out,
	    "schedule of proxy db (2 steps):\n"
	    "    1  turn 1  X\n"
	    "    2  turn 0  Y\n"
	    "\n"
	    "schedule of proxy ledger (2 steps):\n"
	    "    1  turn 1  A\n"
	    "    2  turn 0  B\n");
	free(out);
	free(t);
}

static int
count_lines(const char *s, const char *prefix)
{
	int	n = 0;

	for (; *s; s = strchr(s, '\n') + 1)
		n += strncmp(s, prefix, strlen(prefix)) == 0;
	return n;
}

/*
 * 45 steps with a limit of 40: steps 1..20, "… 5 more steps", 26..45.  At
 * the limit exactly, and with no limit, every step; an odd limit of 5:
 * steps 1..3, then 44 and 45.
 */
static void
test_long_schedule(void **state)
{
	char	*t = NULL, *out, sql[16], *p;
	int	 s;

	(void)state;
	for (s = 45; s >= 1; s--) {
		snprintf(sql, sizeof(sql), "Q%d", s);
		t = cat(t, line("db", s % 4, s, s, sql, ""));
	}
	out = show(t, NULL, 40);
	assert_int_equal(count_lines(out, "  "), 41);
	assert_non_null(strstr(out, "   20  turn 0  Q20\n"
	    "       \xe2\x80\xa6 5 more steps\n"
	    "   26  turn 2  Q26\n"));
	assert_non_null(strstr(out, "   45  turn 1  Q45\n"));
	assert_null(strstr(out, "Q21\n"));
	assert_null(strstr(out, "Q25\n"));
	/* The header, then step 1. */
	p = strchr(out, '\n') + 1;
	assert_true(strncmp(p, "    1  turn 1  Q1\n", 18) == 0);
	free(out);
	out = show(t, NULL, 45);
	assert_int_equal(count_lines(out, "  "), 45);
	assert_null(strstr(out, "more step"));
	free(out);
	out = show(t, NULL, 0);
	assert_int_equal(count_lines(out, "  "), 45);
	assert_non_null(strstr(out, "   23  turn 3  Q23\n"));
	free(out);
	out = show(t, NULL, 44);
	assert_non_null(strstr(out, "\xe2\x80\xa6 1 more step\n"));
	free(out);
	/* An odd limit: the extra line goes to the start. */
	out = show(t, NULL, 5);
	assert_non_null(strstr(out, "Q3\n       \xe2\x80\xa6 40 more steps\n"
	    "   44  turn 0  Q44\n   45"));
	assert_int_equal(count_lines(out, "  "), 6);
	free(out);
	free(t);
}

/* No scheduled step: nothing to show.  A broken line: said, by number. */
static void
test_empty_and_broken(void **state)
{
	const char	*plain = "{\"proxy\":\"db\",\"turn\":0,\"fault\":\"none\"}\n\n";
	const char	*broken = "{\"proxy\":\"db\",\"turn\":0}\n{\"proxy\":\n";
	char		 err[ERR_LEN] = "", *out;

	(void)state;
	out = show(plain, NULL, 40);
	assert_string_equal(out, "");
	free(out);
	out = show("", NULL, 40);
	assert_string_equal(out, "");
	free(out);
	out = proxy_schedule_show(broken, strlen(broken), NULL, 40, err);
	assert_null(out);
	assert_string_equal(err, "the trace: line 2 is not a JSON object");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_order),
		cmocka_unit_test(test_mode_from_config),
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_two_proxies),
		cmocka_unit_test(test_long_schedule),
		cmocka_unit_test(test_empty_and_broken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
