/*
 * Fault traces read back (fault-proxy/tracecmp.c).  proxy_schedule_show:
 * a fault trace comes sorted by turn, and the interleaving must come out in
 * step order, a line a step, with the markers the trace holds and the long
 * ones cut in the middle.  proxy_schedule_diff: two traces compared per
 * proxy by name, over every field of a step, shorter and longer, cut ones
 * by their marker's digests, doctored ones refused.  proxy_cov_*: what a
 * seed's proxies did, counted from its trace.
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


/* ---- proxy_schedule_diff ---- */

/* A scheduled line: proxy, turn, conn, exchange, step, cand, sql, extra. */
static char *
sl(const char *proxy, int turn, int conn, int exchange, int step,
    const char *cand, const char *sql, const char *extra)
{
	return xasprintf("{\"proxy\":\"%s\",\"turn\":%d,\"conn\":%d,\"exchange\":%d,"
	    "\"fault\":\"none\",\"latency_ms\":0,\"bytes_up\":10,\"bytes_down\":"
	    "20,\"upstream_saw\":true,\"client_got_reply\":true,\"step\":%d,"
	    "\"cand\":\"%s\",\"pg\":\"simple\",\"sql\":\"%s\",\"tx\":\"I\"%s}\n",
	    proxy, turn, conn, exchange, step, cand, sql, extra);
}

static int
diff(const char *run, const char *again, char *out, size_t len)
{
	return proxy_schedule_diff(run, strlen(run), again, strlen(again),
	    "this replay", out, len);
}

/* The lost update of two turns, as a trace file holds it (by turn). */
static char *
lost_update(const char *extra3)
{
	char	*t = NULL;

	t = cat(t, xstrdup("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":0,"
	    "\"fault\":\"none\",\"pg\":\"startup\"}\n"));
	t = cat(t, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	t = cat(t, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
	t = cat(t, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	t = cat(t, sl("db", 1, 0, 2, 3, "3", "UPDATE", extra3));
	return t;
}

/* The same steps in any line order; nothing scheduled on either side. */
static void
test_diff_same(void **state)
{
	char	*a = lost_update(""), *b = NULL, out[2048];

	(void)state;
	/* the replay's lines in another order: still the same schedule */
	b = cat(b, sl("db", 1, 0, 2, 3, "3", "UPDATE", ""));
	b = cat(b, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 0);
	assert_string_equal(out, "the same as the run's, all 4 steps");
	assert_int_equal(diff("{\"proxy\":\"db\",\"turn\":0}\n", "", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(diff("", "", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	free(a);
	free(b);
}

/*
 * A replay that took fewer steps (a turn did less), or more; and the
 * passing replay compared with nothing (what an empty trace said before:
 * never "the same").
 */
static void
test_diff_shorter_longer(void **state)
{
	char	*a = lost_update(""), *b = NULL, out[2048];

	(void)state;
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_string_equal(out, "the same for 2 steps, then the run took 2 more "
	    "(the first, step 3 of proxy db: it admitted turn 1 (conn 0, exchange "
	    "2: UPDATE) with turns {0,1} waiting)");
	assert_int_equal(diff(b, a, out, sizeof(out)), 1);
	assert_string_equal(out, "the same for 2 steps, then this replay took 2 "
	    "more (the first, step 3 of proxy db: it admitted turn 1 (conn 0, "
	    "exchange 2: UPDATE) with turns {0,1} waiting)");
	assert_int_equal(diff(a, "", out, sizeof(out)), 1);
	assert_non_null(strstr(out, "the same for 0 steps, then the run took 4 more"));
	free(a);
	free(b);
}

/*
 * A failing run and a passing replay whose schedules part at step 3: the
 * sentence names the step, the proxy and both sides; the faults (the
 * seed's own) are not part of a step.
 */
static void
test_diff_pass_fail(void **state)
{
	char	*a = lost_update(""), *b = NULL, out[2048];

	(void)state;
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 2, 3, "1", "UPDATE", ",\"forced\":\"arrival\""));
	b = cat(b, sl("db", 1, 0, 2, 4, "2", "UPDATE", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_string_equal(out, "left the run's at step 3 of proxy db: the run "
	    "admitted turn 1 (conn 0, exchange 2: UPDATE) with turns {0,1} waiting; "
	    "this replay admitted turn 0 (conn 0, exchange 2: UPDATE) with turns "
	    "{0} waiting (forced by arrival) (they differ in the exchange, the "
	    "turns waiting and the timeout that decided)");
	free(b);
	/* a fault on a step (the run's lost reply) is no difference */
	b = lost_update(",\"fault\":\"lost_reply\"");
	assert_int_equal(diff(a, b, out, sizeof(out)), 0);
	free(a);
	free(b);
}

/* Each field of a step on its own: the sentence says which differs. */
static void
test_diff_fields(void **state)
{
	static const struct {
		const char	*extra, *words;
	} cases[] = {
		{ ",\"forced\":\"blocked\"", "the timeout that decided" },
		{ ",\"waits_on\":\"1\"", "the lock wait" },
		{ ",\"deadlock\":\"soak\"", "the deadlock" },
		{ ",\"deadlock\":\"postgres\"", "the deadlock" },
	};
	char	*a = lost_update(""), *b, out[2048], want[128];
	size_t	 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b = lost_update(cases[i].extra);
		assert_int_equal(diff(a, b, out, sizeof(out)), 1);
		snprintf(want, sizeof(want), "(they differ in %s)", cases[i].words);
		assert_non_null(strstr(out, want));
		assert_non_null(strstr(out, "left the run's at step 3 of proxy db: "));
		free(b);
	}
	/* the lock wait and the deadlock said on the side that had them */
	b = lost_update(",\"waits_on\":\"1\",\"deadlock\":\"soak\"");
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "this replay admitted turn 1 (conn 0, exchange "
	    "2: UPDATE) with turns {0,1} waiting, then waited on a lock held by "
	    "turns {0}, and soak cancelled it to break a deadlock (they differ in "
	    "the lock wait and the deadlock)"));
	free(b);
	/* waits_on "0": a lock held by no turn of this proxy */
	b = lost_update(",\"waits_on\":\"0\"");
	assert_int_equal(diff(b, a, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "then waited on a lock held by no turn of this "
	    "proxy; this replay"));
	free(b);
	/* the statement: sql, and the exchange kind when there is none */
	b = NULL;
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 1, 0, 2, 3, "3", "UPDATE orders", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "exchange 2: UPDATE orders) with turns {0,1} "
	    "waiting (they differ in the statement)"));
	free(b);
	b = NULL;
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, xstrdup("{\"proxy\":\"db\",\"turn\":1,\"conn\":0,\"exchange\":2,"
	    "\"fault\":\"none\",\"step\":3,\"cand\":\"3\",\"pg\":\"sync\"}\n"));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "this replay admitted turn 1 (conn 0, exchange "
	    "2: (sync)) with turns {0,1} waiting (they differ in the statement)"));
	free(b);
	free(a);
}

/*
 * What the schedule does not decide, named as the cause: a transaction's
 * end that woke several lock waiters just before the steps parted
 * (PostgreSQL's order), or a deadlock's victim.
 */
static void
test_diff_cause(void **state)
{
	char	*a = NULL, *b = NULL, out[2048];

	(void)state;
	a = cat(a, sl("db", 0, 0, 1, 1, "7", "UPDATE", ""));
	a = cat(a, sl("db", 0, 0, 2, 2, "7", "COMMIT", ",\"wakes\":\"6\""));
	a = cat(a, sl("db", 1, 0, 1, 3, "6", "UPDATE", ""));
	b = cat(b, sl("db", 0, 0, 1, 1, "7", "UPDATE", ""));
	b = cat(b, sl("db", 0, 0, 2, 2, "7", "COMMIT", ",\"wakes\":\"6\""));
	b = cat(b, sl("db", 2, 0, 1, 3, "6", "UPDATE", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "left the run's at step 3 of proxy db"));
	assert_non_null(strstr(out, " — after step 2 (turn 0), whose end woke "
	    "turns {1,2} at once: which took the lock first was PostgreSQL's "
	    "order, not the schedule's"));
	free(a);
	free(b);
	a = b = NULL;
	a = cat(a, sl("db", 0, 0, 1, 1, "3", "UPDATE", ",\"waits_on\":\"2\",\"deadlock\":\"soak\""));
	a = cat(a, sl("db", 1, 0, 1, 2, "2", "UPDATE", ""));
	a = cat(a, sl("db", 1, 0, 2, 3, "3", "COMMIT", ""));
	b = cat(b, sl("db", 0, 0, 1, 1, "3", "UPDATE", ",\"waits_on\":\"2\",\"deadlock\":\"soak\""));
	b = cat(b, sl("db", 1, 0, 1, 2, "2", "UPDATE", ""));
	b = cat(b, sl("db", 0, 0, 2, 3, "3", "ROLLBACK", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_non_null(strstr(out, " — after a deadlock whose victim was turn 0 "
	    "at step 1 (cancelled by soak)"));
	/* no cause: nothing said */
	free(a);
	a = lost_update("");
	free(b);
	b = lost_update(",\"forced\":\"arrival\"");
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_null(strstr(out, " — after"));
	free(a);
	free(b);
}

/*
 * Two scheduled proxies, their lines interleaved: each compared with its
 * namesake, never by position.  The old walk by index over both lists
 * compared api's step 1 with db's when one side had no api steps.
 */
static void
test_diff_two_proxies(void **state)
{
	char	*a = NULL, *b = NULL, *c = NULL, out[4096];

	(void)state;
	a = cat(a, sl("api", 0, 0, 0, 2, "3", "POST /pay", ""));
	a = cat(a, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	a = cat(a, sl("api", 1, 0, 0, 1, "3", "POST /pay", ""));
	a = cat(a, sl("db", 1, 0, 1, 2, "2", "SELECT", ""));
	b = cat(b, sl("db", 1, 0, 1, 2, "2", "SELECT", ""));
	b = cat(b, sl("api", 1, 0, 0, 1, "3", "POST /pay", ""));
	b = cat(b, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("api", 0, 0, 0, 2, "3", "POST /pay", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 0);
	assert_string_equal(out, "the same as the run's, all 2 steps of proxy api "
	    "and all 2 steps of proxy db");
	/* api parts at its step 2; db is the same, and says so */
	free(b);
	b = NULL;
	b = cat(b, sl("api", 0, 0, 0, 2, "1", "POST /pay", ""));
	b = cat(b, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("api", 1, 0, 0, 1, "3", "POST /pay", ""));
	b = cat(b, sl("db", 1, 0, 1, 2, "2", "SELECT", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), 1);
	assert_string_equal(out, "left the run's at step 2 of proxy api: the run "
	    "admitted turn 0 (conn 0, exchange 0: POST /pay) with turns {0,1} "
	    "waiting; this replay admitted turn 0 (conn 0, exchange 0: POST /pay) "
	    "with turns {0} waiting (they differ in the turns waiting); the same: "
	    "all 2 steps of proxy db");
	/* a replay whose api took no step: db still compared with db */
	c = cat(c, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	c = cat(c, sl("db", 1, 0, 1, 2, "2", "SELECT", ""));
	assert_int_equal(diff(a, c, out, sizeof(out)), 1);
	assert_string_equal(out, "the same for 0 steps, then the run took 2 more "
	    "(the first, step 1 of proxy api: it admitted turn 1 (conn 0, exchange "
	    "0: POST /pay) with turns {0,1} waiting); the same: all 2 steps of "
	    "proxy db");
	free(a);
	free(b);
	free(c);
}

/* Edited or damaged traces: said, with the line, never compared. */
static void
test_diff_doctored(void **state)
{
	char	*a = lost_update(""), *b, out[2048];

	(void)state;
	assert_int_equal(diff(a, "{\"proxy\":\"db\"}\n{\"proxy\":\n", out,
	    sizeof(out)), -1);
	assert_string_equal(out, "this replay's trace: line 2 is not a JSON object");
	assert_int_equal(diff("[1]\n", a, out, sizeof(out)), -1);
	assert_string_equal(out, "the run's trace: line 1 is not a JSON object");
	/* a step missing: 1, 2, 4 */
	b = NULL;
	b = cat(b, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 1, 0, 1, 2, "3", "SELECT", ""));
	b = cat(b, sl("db", 1, 0, 2, 4, "3", "UPDATE", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), -1);
	assert_string_equal(out, "this replay's trace is not a schedule soak wrote: "
	    "step 3 of proxy db is missing (the next is step 4, on line 3)");
	/* a step twice */
	free(b);
	b = NULL;
	b = cat(b, sl("db", 0, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	assert_int_equal(diff(b, a, out, sizeof(out)), -1);
	assert_string_equal(out, "the run's trace is not a schedule soak wrote: "
	    "step 1 of proxy db is on lines 1 and 2");
	/* steps out of order: a connection's exchange 2 before its exchange 1 */
	free(b);
	b = NULL;
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 2, 1, "3", "UPDATE", ""));
	assert_int_equal(diff(a, b, out, sizeof(out)), -1);
	assert_string_equal(out, "this replay's trace is not a schedule soak wrote: "
	    "on proxy db, turn 0 conn 0, exchange 1 is step 2 (line 1) and "
	    "exchange 2 step 1 (line 2): steps out of order");
	/* a step without its exchange's numbers */
	assert_int_equal(diff(a, "{\"proxy\":\"db\",\"step\":1,\"turn\":0}\n", out,
	    sizeof(out)), -1);
	assert_string_equal(out, "this replay's trace: line 1: no conn");
	/* a field soak never writes so: read by the trace's decoder, never as 0 */
	free(b);
	b = lost_update("");
	memcpy(strstr(strstr(b, "\"step\":1,"), "\"cand\":\"3\""), "\"cand\":\"z\"", 10);
	assert_int_equal(diff(a, b, out, sizeof(out)), -1);
	assert_non_null(strstr(out, ": cand: \"z\" is not a set of turns (1 to 16 hex "
	    "digits)"));
	free(a);
	free(b);
}

/* The marker line a cut trace ends with (worker/detail.c), with the
 * digests of the whole trace's schedules, or without. */
static char *
cut(const char *whole, size_t keep_lines, bool digests)
{
	struct proxy_cov	*pc = proxy_cov_new();
	json_t			*m = json_object(), *sched;
	const char		*p = whole;
	char			 err[ERR_LEN], *line, *t;
	size_t			 i;

	for (i = 0; i < keep_lines; i++)
		p = strchr(p, '\n') + 1;
	assert_int_equal(proxy_cov_line(pc, "", 0, err), 0);
	for (const char *q = whole; *q; q = strchr(q, '\n') + 1)
		assert_int_equal(proxy_cov_line(pc, q, (size_t)(strchr(q, '\n') - q),
		    err), 0);
	sched = proxy_cov_schedule(pc);
	json_object_set_new(m, "truncated", json_string("truncated: 2 more trace "
	    "lines"));
	json_object_set_new(m, "full_trace", json_null());
	if (digests)
		json_object_set(m, "schedule", sched);
	line = json_dumps(m, JSON_COMPACT);
	t = xasprintf("%.*s%s\n", (int)(p - whole), whole, line);
	free(line);
	json_decref(m);
	json_decref(sched);
	proxy_cov_free(pc);
	return t;
}

/*
 * A trace cut to fit a result keeps its first lines (by turn), so whole
 * turns' steps are missing: compared as far as kept, and past that by the
 * marker's digests of the whole schedules; without them, the comparison
 * says it stopped, never "the same".
 */
static void
test_diff_cut(void **state)
{
	char	*a = lost_update(""), *ca, *b, *cb, out[2048];

	(void)state;
	/* the run's first 3 lines: the start-up and turn 0's steps 2 and 4 */
	ca = cut(a, 3, true);
	assert_int_equal(diff(ca, a, out, sizeof(out)), 0);
	assert_string_equal(out, "the same as the run's, all 4 steps of proxy db "
	    "(the run's trace was cut (truncated: 2 more trace lines); the steps "
	    "past the cut were compared by the digest of the whole schedule)");
	/* a replay that differs only in a step the cut left out (3) */
	b = lost_update(",\"waits_on\":\"1\"");
	assert_int_equal(diff(ca, b, out, sizeof(out)), 1);
	assert_string_equal(out, "different on proxy db past where the traces were "
	    "kept (the run's trace was cut (truncated: 2 more trace lines); the run "
	    "took 4 steps, this replay 4, and the digests of their whole schedules "
	    "differ)");
	/* ... only in the turns waiting at a step the cut left out: the
	 * digests hold a step's candidates too */
	{
		char	*c = NULL;

		c = cat(c, xstrdup("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,"
		    "\"exchange\":0,\"fault\":\"none\",\"pg\":\"startup\"}\n"));
		c = cat(c, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
		c = cat(c, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
		c = cat(c, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
		c = cat(c, sl("db", 1, 0, 2, 3, "2", "UPDATE", ""));
		assert_int_equal(diff(ca, c, out, sizeof(out)), 1);
		assert_string_equal(out, "different on proxy db past where the traces "
		    "were kept (the run's trace was cut (truncated: 2 more trace "
		    "lines); the run took 4 steps, this replay 4, and the digests of "
		    "their whole schedules differ)");
		free(c);
	}
	/* both cut, the difference past what both kept: the digests tell */
	free(ca);
	ca = cut(a, 4, true);		/* steps 2, 4, 1 */
	cb = cut(b, 4, true);
	assert_int_equal(diff(ca, cb, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "the same for the first 2 steps of proxy db, "
	    "which both traces kept, and different after them (both traces were "
	    "cut"));
	/* a difference inside what both kept: said exactly, by step */
	free(cb);
	cb = xstrdup(ca);
	memcpy(strstr(strstr(cb, "\"step\":1,"), "\"cand\":\"3\""), "\"cand\":\"2\"", 10);
	assert_int_equal(diff(ca, cb, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "left the run's at step 1 of proxy db: the run "
	    "admitted turn 1 (conn 0, exchange 1: SELECT) with turns {0,1} "
	    "waiting; this replay admitted turn 1 (conn 0, exchange 1: SELECT) "
	    "with turns {1} waiting (they differ in the turns waiting)"));
	free(cb);
	/* without digests: it stopped at the cut, and says so */
	cb = cut(a, 1, false);		/* the start-up alone */
	assert_int_equal(diff(cb, a, out, sizeof(out)), 2);
	assert_string_equal(out, "not compared on proxy db: the run's trace was "
	    "cut (truncated: 2 more trace lines) before its first step, without "
	    "the digest of its whole schedule");
	free(cb);
	free(ca);
	ca = cut(a, 4, false);
	assert_int_equal(diff(ca, b, out, sizeof(out)), 2);
	assert_string_equal(out, "the same for the first 2 steps of proxy db, as "
	    "far as the traces were kept (the run's trace was cut (truncated: 2 "
	    "more trace lines), without the digest of its whole schedule): the "
	    "rest was not compared");
	/* a cut replay of a run that took fewer steps: it took more */
	cb = cut(a, 4, false);
	b[0] = '\0';
	free(b);
	b = NULL;
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	assert_int_equal(diff(b, cb, out, sizeof(out)), 1);
	assert_string_equal(out, "the same for 1 step, then this replay took at "
	    "least 2 more (the first, step 2 of proxy db: it admitted turn 0 (conn "
	    "0, exchange 1: SELECT) with turns {0,1} waiting)");
	free(cb);
	free(ca);
	free(a);
	free(b);
}

/* ---- proxy_cov ---- */

static json_t *
cov_of(const char *trace)
{
	struct proxy_cov	*pc = proxy_cov_new();
	const char		*q;
	char			 err[ERR_LEN];
	json_t			*j;

	for (q = trace; *q; q = strchr(q, '\n') + 1)
		if (proxy_cov_line(pc, q, (size_t)(strchr(q, '\n') - q + 1), err) == -1)
			fail_msg("proxy_cov_line: %s", err);
	j = proxy_cov_json(pc);
	proxy_cov_free(pc);
	return j;
}

/*
 * Two proxies: exchanges, connections per turn, each fault kind, latency,
 * steps, forced by kind, lock waits, both kinds of deadlock (a field the
 * scheduler writes on the exchange soak cancelled, or PostgreSQL killed);
 * a cut's marker is no exchange; zeros are left out.
 */
static void
test_cov_counts(void **state)
{
	char	*t = NULL, *s, err[ERR_LEN];
	json_t	*j;
	struct proxy_cov *pc;

	(void)state;
	t = cat(t, xstrdup("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":0,"
	    "\"fault\":\"none\",\"latency_ms\":0,\"pg\":\"startup\"}\n"));
	t = cat(t, sl("db", 0, 0, 1, 1, "3", "SELECT", ",\"forced\":\"arrival\""));
	t = cat(t, sl("db", 0, 1, 0, 3, "3", "UPDATE", ",\"waits_on\":\"2\","
	    "\"deadlock\":\"soak\""));
	t = cat(t, sl("db", 1, 0, 1, 2, "3", "UPDATE", ",\"forced\":\"blocked\","
	    "\"waits_on\":\"1\",\"deadlock\":\"postgres\""));
	t = cat(t, sl("db", 1, 0, 2, 4, "2", "COMMIT", ",\"forced\":\"arrival\""));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":2,\"conn\":3,\"exchange\":0,"
	    "\"fault\":\"lost_reply\",\"latency_ms\":12}\n"));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":2,\"conn\":4,\"exchange\":0,"
	    "\"fault\":\"blackhole\",\"latency_ms\":0}\n"));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":0,\"conn\":0,\"exchange\":0,"
	    "\"fault\":\"duplicate\",\"latency_ms\":3}\n"));
	t = cat(t, xstrdup("{\"truncated\":\"truncated: 9 more trace lines\","
	    "\"full_trace\":null}\n"));
	j = cov_of(t);
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s,
	    "{\"api\":{\"connections\":6,\"exchanges\":3,\"faults\":{\"blackhole\":1,"
	    "\"duplicate\":1,\"lost_reply\":1},\"latency\":2},"
	    "\"db\":{\"connections\":3,\"deadlocks\":{\"postgres\":1,\"soak\":1},"
	    "\"exchanges\":5,\"forced\":{\"arrival\":2,\"blocked\":1},"
	    "\"lock_waits\":2,\"steps\":4}}");
	free(s);
	json_decref(j);
	/* only scheduled proxies have a whole schedule */
	pc = proxy_cov_new();
	assert_int_equal(proxy_cov_line(pc, t, (size_t)(strchr(t, '\n') - t), err), 0);
	j = proxy_cov_schedule(pc);
	assert_int_equal(json_object_size(j), 0);
	json_decref(j);
	assert_int_equal(proxy_cov_line(pc, "{\"proxy\":", 9, err), -1);
	assert_string_equal(err, "the trace: line 2 is not a JSON object");
	proxy_cov_free(pc);
	free(t);
}

/* The digest: the same for the same steps in any order, else not. */
static void
test_cov_digest(void **state)
{
	char	*a = lost_update(""), *b = NULL, *c = lost_update(",\"forced\":\"blocked\"");
	char	*ca, *cb, *cc;

	(void)state;
	b = cat(b, sl("db", 1, 0, 2, 3, "3", "UPDATE", ""));
	b = cat(b, sl("db", 0, 0, 2, 4, "3", "UPDATE", ""));
	b = cat(b, sl("db", 1, 0, 1, 1, "3", "SELECT", ""));
	b = cat(b, sl("db", 0, 0, 1, 2, "3", "SELECT", ""));
	ca = cut(a, 0, true);
	cb = cut(b, 0, true);
	cc = cut(c, 0, true);
	assert_string_equal(ca, cb);
	assert_string_not_equal(ca, cc);
	assert_non_null(strstr(ca, "\"schedule\":{\"db\":{\"steps\":4,\"digest\":\""));
	free(a);
	free(b);
	free(c);
	free(ca);
	free(cb);
	free(cc);
}

/*
 * A service's lines: its connections counted apart from the turns' own
 * (its conn 0, held as turn 0's step, is not turn 0's conn 0); a request a
 * turnstile front let go by the clock ("served":"arrival", no step) is a
 * forced decision; one let go at the service's quiet is not.
 */
static void
test_cov_services(void **state)
{
	char	*t = NULL;
	json_t	*j, *db, *api;

	(void)state;
	t = cat(t, sl("db", 0, 0, 1, 1, "1", "SELECT", ""));
	t = cat(t, sl("db", 0, 0, 1, 2, "1", "SELECT", ",\"service\":\"tools\""));
	t = cat(t, sl("db", 1, 1, 1, 3, "2", "SELECT", ",\"service\":\"tools\""));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":0,\"conn\":0,"
	    "\"exchange\":0,\"fault\":\"none\",\"latency_ms\":0,"
	    "\"served\":\"quiet\"}\n"));
	t = cat(t, xstrdup("{\"proxy\":\"api\",\"turn\":1,\"conn\":0,"
	    "\"exchange\":0,\"fault\":\"none\",\"latency_ms\":0,"
	    "\"served\":\"arrival\"}\n"));
	j = cov_of(t);
	db = json_object_get(j, "db");
	api = json_object_get(j, "api");
	/* turn 0's conn 0, and the service's conns 0 and 1 */
	assert_int_equal(json_integer_value(json_object_get(db, "connections")), 3);
	assert_int_equal(json_integer_value(json_object_get(db, "steps")), 3);
	assert_null(json_object_get(db, "forced"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(api,
	    "forced"), "arrival")), 1);
	assert_null(json_object_get(api, "steps"));
	json_decref(j);
	free(t);
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
		cmocka_unit_test(test_diff_same),
		cmocka_unit_test(test_diff_shorter_longer),
		cmocka_unit_test(test_diff_pass_fail),
		cmocka_unit_test(test_diff_fields),
		cmocka_unit_test(test_diff_two_proxies),
		cmocka_unit_test(test_diff_cause),
		cmocka_unit_test(test_diff_doctored),
		cmocka_unit_test(test_diff_cut),
		cmocka_unit_test(test_cov_counts),
		cmocka_unit_test(test_cov_services),
		cmocka_unit_test(test_cov_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
