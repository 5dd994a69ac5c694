/*
 * The gate (fault-proxy/gate.c) driven without sockets: what it waits for
 * before it admits, and what it marks.  A live turn with nothing held is
 * waited for whatever its connections, up to `arrival` (then the decision
 * is marked "arrival"); a turn that exited, or is not in the round, is not
 * waited for; a turn held at another gate of the set, or whose exchange
 * waits on a lock, is accounted for; one exchange runs at a time; the same
 * seed shown the same events admits the same exchanges; a deadlock's
 * victim is its cycle's exchange admitted first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "fault-proxy/gate.h"
#include "fault-proxy/gate_int.h"

#define NT	4

struct fix {
	struct cfg_schedule	 sc;
	uint32_t		 held[NT];
	struct gate		*g, *g2;	/* g2: a second gate of the set */
	struct gate_ent		 e[NT], e2[NT];
	struct proxy_trace_rec	 rec[NT], rec2[NT];
	int			 epfd;
};

static void
fix_open(struct fix *f, enum cfg_sched_mode mode, uint64_t seed)
{
	struct gate_conf	gc;
	char			err[256];
	int			t;

	memset(f, 0, sizeof(*f));
	f->sc = (struct cfg_schedule){ .enabled = true, .mode = mode, .depth = 3,
	    .steps = 20, .arrival_ms = 100, .blocked_ms = 500 };
	f->epfd = epoll_create1(0);
	gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = seed,
	    .sched = &f->sc, .epfd = f->epfd, .held = f->held };
	f->g = gate_new(&gc, err);
	assert_non_null(f->g);
	gc.name = "api";
	f->g2 = gate_new(&gc, err);
	assert_non_null(f->g2);
	for (t = 0; t < NT; t++) {
		f->e[t] = (struct gate_ent){ .turn = t, .rec = &f->rec[t] };
		f->e2[t] = (struct gate_ent){ .turn = t, .rec = &f->rec2[t] };
	}
}

static void
fix_close(struct fix *f)
{
	gate_free(f->g);
	gate_free(f->g2);
	close(f->epfd);
}

/* Turn t's next exchange at gate g arrives at now. */
static void
arrive(struct fix *f, int t, int64_t now)
{
	memset(&f->rec[t], 0, sizeof(f->rec[t]));
	gate_wait(f->g, &f->e[t], now);
}

static void
test_waits_for_live_turns(void **state)
{
	struct fix	 f;
	struct gate_ent	*e;
	int		 t;

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 1);
	/* turns 0 and 1 wait; 2 and 3 are live and idle (between two
	 * `psql -c`, with no connection open): nothing is admitted */
	arrive(&f, 0, 1000);
	arrive(&f, 1, 1000);
	assert_null(gate_decide(f.g, 1000));
	assert_int_equal(gate_next_at(f.g), 1100);	/* the watchdog */
	/* turn 2 exits, turn 3 arrives: every live turn is accounted for */
	gate_live(f.g, 2, false);
	arrive(&f, 3, 1010);
	e = gate_decide(f.g, 1010);
	assert_non_null(e);
	assert_int_equal(e->rec->step, 1);
	assert_null(e->rec->forced);
	assert_int_equal(e->rec->cand, 0xb);	/* turns 0, 1, 3 */
	/* one at a time: nothing more until it ends */
	assert_null(gate_decide(f.g, 1011));
	t = e->turn;
	gate_end(f.g, e, 1012);
	/* turn t is live again and has sent nothing: waited for */
	assert_null(gate_decide(f.g, 1012));
	arrive(&f, t, 1013);
	e = gate_decide(f.g, 1013);
	assert_non_null(e);
	assert_int_equal(e->rec->step, 2);
	assert_null(e->rec->forced);
	fix_close(&f);
}

static void
test_arrival_watchdog(void **state)
{
	struct fix	 f;
	struct gate_ent	*e;
	struct gate_stats st;

	(void)state;
	fix_open(&f, CFG_SCHED_PCT, 2);
	arrive(&f, 0, 1000);
	/* turns 1..3 live and silent: a decision only at the watchdog */
	assert_null(gate_decide(f.g, 1099));
	e = gate_decide(f.g, 1100);
	assert_non_null(e);
	assert_ptr_equal(e, &f.e[0]);
	assert_string_equal(e->rec->forced, "arrival");
	assert_int_equal(e->rec->cand, 0x1);
	gate_stats(f.g, &st);
	assert_int_equal(st.forced, 1);
	assert_int_equal(st.steps, 1);
	fix_close(&f);
}

/* An engine's view for the run-time test: turn 1 runs and has run
 * stub_ran ms (-1: not known); the others have exited. */
static int64_t	stub_ran;

static enum gate_act
stub_actor(void *arg, const struct gate *g, int turn, int64_t *ran_ms)
{
	(void)arg;
	(void)g;
	if (turn != 1)
		return GA_GONE;
	*ran_ms = stub_ran;
	return GA_RUNNING;
}

/*
 * `arrival` bounds the time a running turn ran, not the time it waited
 * for a core: turn 1 runs for 300 ms of wall time but gets 40 ms of CPU
 * (a loaded machine), and no decision is forced; once it has run 100 ms
 * since it was first seen, the watchdog decides.  Without a run
 * time (-1) the wall clock counts, as before.
 */
static void
test_arrival_counts_run_time(void **state)
{
	struct fix		 f;
	struct gate_conf	 gc;
	struct gate_ent		*e;
	char			 err[256];

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 3);
	gate_free(f.g);
	gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = 3,
	    .sched = &f.sc, .epfd = f.epfd, .held = f.held,
	    .actor = stub_actor };
	f.g = gate_new(&gc, err);
	assert_non_null(f.g);
	stub_ran = 5000;
	arrive(&f, 0, 1000);
	assert_null(gate_decide(f.g, 1000));
	for (int64_t now = 1010; now <= 1300; now += 10) {
		stub_ran += (now % 70 == 0) ? 10 : 0;	/* a core now and then */
		assert_null(gate_decide(f.g, now));
	}
	/* it runs flat out from here: 100 ms of CPU is late */
	for (int64_t now = 1310; ; now += 10) {
		stub_ran += 10;
		if ((e = gate_decide(f.g, now)) != NULL) {
			assert_string_equal(e->rec->forced, "arrival");
			/* 40 ms while starved, 60 more flat out */
			assert_int_equal(now, 1360);
			break;
		}
		assert_true(now < 1500);
	}
	fix_close(&f);

	/* its run time not known: the wall clock */
	fix_open(&f, CFG_SCHED_RANDOM, 3);
	gate_free(f.g);
	gc.epfd = f.epfd;
	f.g = gate_new(&gc, err);
	assert_non_null(f.g);
	stub_ran = -1;
	arrive(&f, 0, 1000);
	assert_null(gate_decide(f.g, 1000));
	assert_null(gate_decide(f.g, 1050));
	e = gate_decide(f.g, 1100);
	assert_non_null(e);
	assert_string_equal(e->rec->forced, "arrival");
	fix_close(&f);
}

/* gate_conf.starved for the test: what the stub says. */
static int64_t	stub_starved;

static int64_t
stub_starved_fn(const struct gate *g, const struct gate_ent *e)
{
	(void)g;
	(void)e;
	return stub_starved;
}

/*
 * `blocked` counts an admitted exchange's own time: what its backend and
 * the gate's thread waited for a core is taken off.  Admitted at 1000
 * (blocked 500 ms), starved 300 ms of it: not stuck at 1500, looked at
 * again at 1800, stuck then; one not starved is stuck at 1500.
 */
static void
test_blocked_not_starved(void **state)
{
	struct fix		 f;
	struct gate_conf	 gc;
	struct gate_ent		*e;
	char			 err[256];
	int			 t;

	(void)state;
	for (int starve = 1; starve >= 0; starve--) {
		fix_open(&f, CFG_SCHED_RANDOM, 4);
		gate_free(f.g);
		gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = 4,
		    .sched = &f.sc, .epfd = f.epfd, .held = f.held,
		    .starved = stub_starved_fn };
		f.g = gate_new(&gc, err);
		assert_non_null(f.g);
		stub_starved = 7000;
		for (t = 0; t < NT; t++)
			arrive(&f, t, 1000);
		e = gate_decide(f.g, 1000);
		assert_non_null(e);
		assert_null(e->rec->forced);
		stub_starved += starve ? 300 : 0;
		if (starve) {
			assert_null(gate_decide(f.g, 1500));
			assert_null(e->rec->forced);
			assert_int_equal(gate_next_at(f.g), 1800);
			assert_null(gate_decide(f.g, 1799));
			assert_null(e->rec->forced);
			(void)gate_decide(f.g, 1800);
		} else
			(void)gate_decide(f.g, 1500);
		assert_non_null(e->rec->forced);
		assert_string_equal(e->rec->forced, "blocked");
		fix_close(&f);
	}
}

/* gate_conf.replied for the test: what the stub says. */
static bool	stub_replied;

static bool
stub_replied_fn(const struct gate *g, const struct gate_ent *e)
{
	(void)g;
	(void)e;
	return stub_replied;
}

/*
 * An admitted exchange whose reply is in, unread by the proxy's busy
 * thread, is not `blocked`: admitted at 1000 (blocked 500 ms), its reply
 * waiting at 1500: not stuck, looked at again at 1516; there the reply is
 * gone (read, say, but the exchange not ended: a test can do that), and
 * 500 ms are past: stuck.
 */
static void
test_blocked_not_replied(void **state)
{
	struct fix		 f;
	struct gate_conf	 gc;
	struct gate_ent		*e;
	char			 err[256];
	int			 t;

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 4);
	gate_free(f.g);
	gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = 4,
	    .sched = &f.sc, .epfd = f.epfd, .held = f.held,
	    .starved = stub_starved_fn, .replied = stub_replied_fn };
	f.g = gate_new(&gc, err);
	assert_non_null(f.g);
	stub_starved = 0;
	for (t = 0; t < NT; t++)
		arrive(&f, t, 1000);
	e = gate_decide(f.g, 1000);
	assert_non_null(e);
	stub_replied = true;
	assert_null(gate_decide(f.g, 1500));
	assert_null(e->rec->forced);
	assert_int_equal(gate_next_at(f.g), 1516);
	stub_replied = false;
	(void)gate_decide(f.g, 1516);
	assert_non_null(e->rec->forced);
	assert_string_equal(e->rec->forced, "blocked");
	fix_close(&f);
}

/*
 * What a step waited for its actors (gate_stats wait_ms, wait_max_ms,
 * wait_max_step): from when the gate was free with an exchange waiting to
 * the decision; never the time an admitted exchange runs, never a step
 * whose turns were all there.  arrival is 100 ms.
 */
static void
test_waits_counted(void **state)
{
	struct fix	 f;
	struct gate_ent	*e;
	struct gate_stats st;
	int		 t1;

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 5);
	/* step 1: turn 0 waits from 1000, 1 and 2 come, 3 exits at 1030:
	 * 30 ms waited for it */
	arrive(&f, 0, 1000);
	arrive(&f, 1, 1010);
	arrive(&f, 2, 1020);
	assert_null(gate_decide(f.g, 1029));
	gate_live(f.g, 3, false);
	e = gate_decide(f.g, 1030);
	assert_non_null(e);
	assert_null(e->rec->forced);
	assert_int_equal(e->rec->idle, 0);
	gate_stats(f.g, &st);
	assert_int_equal(st.wait_ms, 30);
	assert_int_equal(st.wait_max_ms, 30);
	assert_int_equal(st.wait_max_step, 1);
	/* it runs 1030..1040 (not a wait); its turn stays live and sends
	 * nothing: step 2 is the watchdog's at 1140, 100 ms from the gate's
	 * being free, the slowest now, without that turn */
	t1 = e->turn;
	gate_end(f.g, e, 1040);
	assert_null(gate_decide(f.g, 1139));
	e = gate_decide(f.g, 1140);
	assert_non_null(e);
	assert_string_equal(e->rec->forced, "arrival");
	assert_int_equal(e->rec->idle, 1 << t1);
	gate_stats(f.g, &st);
	assert_int_equal(st.wait_ms, 130);
	assert_int_equal(st.wait_max_ms, 100);
	assert_int_equal(st.wait_max_step, 2);
	/* step 3: as the gate frees, every live turn is waiting: no wait,
	 * and the slowest stays step 2's */
	gate_end(f.g, e, 1150);
	gate_live(f.g, e->turn, false);
	gate_live(f.g, t1, false);
	e = gate_decide(f.g, 1150);
	assert_non_null(e);
	assert_int_equal(e->rec->step, 3);
	gate_stats(f.g, &st);
	assert_int_equal(st.steps, 3);
	assert_int_equal(st.wait_ms, 130);
	assert_int_equal(st.wait_max_ms, 100);
	assert_int_equal(st.wait_max_step, 2);
	fix_close(&f);
}

static void
test_round_and_exits(void **state)
{
	struct fix	 f;
	struct gate_ent	*e;
	bool		 runs[NT] = { true, false, true, false };

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 3);
	/* a round of turns 0 and 2 only: 1 and 3 are never waited for */
	gate_round(f.g, 0, runs);
	arrive(&f, 2, 500);
	assert_null(gate_decide(f.g, 500));	/* turn 0 is live */
	gate_live(f.g, 0, false);		/* it could not be started */
	e = gate_decide(f.g, 501);
	assert_ptr_equal(e, &f.e[2]);
	assert_null(e->rec->forced);
	gate_end(f.g, e, 502);
	/* the next round: every turn again */
	gate_round(f.g, 1, NULL);
	arrive(&f, 1, 600);
	assert_null(gate_decide(f.g, 600));
	fix_close(&f);
}

static void
test_held_at_another_gate(void **state)
{
	struct fix	 f;
	struct gate_ent	*e;

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 4);
	/* turns 1..3 wait at the other gate (an HTTP proxy's): accounted
	 * for at this one, which admits turn 0 without waiting */
	gate_wait(f.g2, &f.e2[1], 100);
	gate_wait(f.g2, &f.e2[2], 100);
	gate_wait(f.g2, &f.e2[3], 100);
	assert_int_equal(f.held[1], 1);
	arrive(&f, 0, 100);
	e = gate_decide(f.g, 100);
	assert_ptr_equal(e, &f.e[0]);
	assert_null(e->rec->forced);
	/* ... and the other gate waits for turn 0, whose exchange runs here
	 * (GS_RUN is not held: the turn may send more) */
	assert_null(gate_decide(f.g2, 100));
	gate_end(f.g, e, 101);
	arrive(&f, 0, 102);
	/* now turn 0 waits here: the other gate admits one of 1..3 */
	e = gate_decide(f.g2, 102);
	assert_non_null(e);
	assert_true(e->turn >= 1 && e->turn <= 3);
	fix_close(&f);
}

/* The same seed, shown the same events, admits the same turns. */
static void
test_deterministic(void **state)
{
	int	order[2][12], run, i, t;

	(void)state;
	for (run = 0; run < 2; run++) {
		struct fix	 f;
		struct gate_ent	*e;
		int64_t		 now = 1000;
		int		 sent[NT] = { 0 };

		fix_open(&f, CFG_SCHED_PCT, 99);
		for (t = 0; t < NT; t++)
			arrive(&f, t, now);
		/* every turn sends three exchanges, then exits */
		for (i = 0; i < 12; i++) {
			e = gate_decide(f.g, now);
			assert_non_null(e);
			assert_null(e->rec->forced);
			order[run][i] = t = e->turn;
			gate_end(f.g, e, ++now);
			if (++sent[t] < 3)
				arrive(&f, t, ++now);
			else
				gate_live(f.g, t, false);
		}
		assert_null(gate_decide(f.g, now));
		fix_close(&f);
	}
	assert_memory_equal(order[0], order[1], sizeof(order[0]));
}

/*
 * An explorer's prefix (plan.h's plan_proxy.prefix): its steps alone and in
 * order, whatever turn is lower; then the turn that went last goes on while
 * it has an exchange waiting, else the lowest; a step that cannot come is
 * a divergence.
 */
static void
prefix_gate(struct fix *f, struct plan_proxy *pp)
{
	struct gate_conf	gc;
	char			err[256];

	gate_free(f->g);
	gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = 1,
	    .sched = &f->sc, .epfd = f->epfd, .held = f->held, .planned = true,
	    .plan = pp };
	f->g = gate_new(&gc, err);
	assert_non_null(f->g);
}

static struct gate_ent *
step_of(struct fix *f, int64_t now)
{
	struct gate_ent	*e = gate_decide(f->g, now);

	assert_non_null(e);
	return e;
}

static void
test_prefix(void **state)
{
	struct fix		 f;
	struct plan_step	 steps[2] = {
		{ .round = 0, .turn = 2, .key = 0x22, .occ = 0 },
		{ .round = 0, .turn = 1, .key = 0x11, .occ = 0 },
	};
	struct plan_proxy	 pp = { .name = UNCONST("db"), .steps = steps,
				    .nsteps = 2, .prefix = true };
	struct gate_ent		*e;
	char			 why[512];
	int			 t;

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 1);
	prefix_gate(&f, &pp);
	f.e[0].key = 0x5, f.e[1].key = 0x11, f.e[2].key = 0x22, f.e[3].key = 0x33;
	for (t = 0; t < NT; t++)
		arrive(&f, t, 1000);
	/* the prefix: turn 2, then turn 1, though turn 0 is lowest */
	e = step_of(&f, 1000);
	assert_int_equal(e->turn, 2);
	assert_null(e->rec->plan);
	gate_end(f.g, e, 1001);
	arrive(&f, 2, 1001);
	e = step_of(&f, 1001);
	assert_int_equal(e->turn, 1);
	gate_end(f.g, e, 1002);
	/* past it: turn 1 went last and has another exchange: it goes on */
	arrive(&f, 1, 1002);
	e = step_of(&f, 1002);
	assert_int_equal(e->turn, 1);
	assert_string_equal(e->rec->plan, "explore");
	gate_end(f.g, e, 1003);
	/* turn 1 exits: the lowest waiting turn, 0 */
	gate_live(f.g, 1, false);
	e = step_of(&f, 1003);
	assert_int_equal(e->turn, 0);
	assert_int_equal(gate_diverged(f.g, why, sizeof(why)), 0);
	fix_close(&f);

	/* a prefix step whose turn sends another exchange: a divergence */
	fix_open(&f, CFG_SCHED_RANDOM, 1);
	prefix_gate(&f, &pp);
	for (t = 0; t < NT; t++) {
		f.e[t].key = 0x99;
		arrive(&f, t, 1000);
	}
	(void)gate_decide(f.g, 1000);
	assert_int_equal(gate_diverged(f.g, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "its turn has another exchange waiting"));
	fix_close(&f);
}

/*
 * A plan that diverges says so once, in the plan's terms: the step it
 * wanted and why it cannot come, what that turn did instead (what it was
 * admitted as unplanned, that it exited), and every other turn held, each
 * exchange with its step of the plan.
 */
static void
test_divergence_says_what_differs(void **state)
{
	struct fix		 f;
	struct plan_step	 steps[3] = {
		{ .round = 0, .turn = 0, .key = 0xa, .what = UNCONST("SELECT n") },
		{ .round = 0, .turn = 1, .key = 0xb, .what = UNCONST("SELECT m") },
		{ .round = 0, .turn = 0, .key = 0xc, .what = UNCONST("UPDATE n") },
	};
	struct plan_proxy	 pp = { .name = UNCONST("db"), .steps = steps,
				    .nsteps = 3 };
	struct gate_conf	 gc;
	struct gate_ent		*e;
	char			 why[2048], err[256];

	(void)state;
	fix_open(&f, CFG_SCHED_RANDOM, 1);
	gate_free(f.g);
	gc = (struct gate_conf){ .name = "db", .nturns = NT, .seed = 1,
	    .sched = &f.sc, .epfd = f.epfd, .held = f.held, .planned = true,
	    .plan = &pp };
	f.g = gate_new(&gc, err);
	assert_non_null(f.g);
	gate_live(f.g, 2, false);
	gate_live(f.g, 3, false);
	f.e[0].key = 0xa, f.e[1].key = 0xb;
	arrive(&f, 0, 1000);
	snprintf(f.rec[0].sql, sizeof(f.rec[0].sql), "SELECT n");
	arrive(&f, 1, 1000);
	snprintf(f.rec[1].sql, sizeof(f.rec[1].sql), "SELECT m");
	e = step_of(&f, 1000);
	assert_int_equal(e->turn, 0);
	gate_end(f.g, e, 1001);
	/* the fix: turn 0 writes another statement, then exits */
	f.e[0].key = 0xd;
	arrive(&f, 0, 1001);
	snprintf(f.rec[0].sql, sizeof(f.rec[0].sql), "UPDATE n IF");
	e = step_of(&f, 1001);
	assert_int_equal(e->turn, 0);
	assert_string_equal(e->rec->plan, "unplanned");
	gate_end(f.g, e, 1002);
	assert_int_equal(gate_diverged(f.g, why, sizeof(why)), 0);
	gate_live(f.g, 0, false);
	assert_int_equal(gate_diverged(f.g, why, sizeof(why)), 1);
	assert_string_equal(why, "the plan diverged at step 3 of proxy db: it wanted "
	    "turn 0's UPDATE n (key 000000000000000c, occurrence 0, round 0), which "
	    "cannot come: turn 0 exited without it; instead turn 0 sent its UPDATE n "
	    "IF (occurrence 0, no step of the plan), and exited; waiting: turn 1 at "
	    "its SELECT m (occurrence 0, the plan's step 2)");
	fix_close(&f);
}

/*
 * A deadlock's victim (docs/faults.md): the cycle's exchange admitted
 * first, whichever row the search starts from, and never one that only
 * waits on the cycle.
 */
static void
test_deadlock_victim(void **state)
{
	/* rows: pid, step, what its backend waits on (pids, 0 ends) */
	static const struct { int32_t pid; uint32_t step; int32_t on[3]; } r[] = {
		{ 100, 1, { 102 } },		/* waits on the cycle, not in it */
		{ 101, 7, { 103 } },
		{ 102, 5, { 101 } },		/* 102 -> 101 -> 103 -> 102 */
		{ 103, 3, { 104, 102 } },
		{ 104, 2, { 0 } },		/* runs: not waiting */
	};
	struct gate_ent		 e[5];
	struct proxy_trace_rec	 rec[5];
	struct row		 rows[5];
	size_t			 i, j;

	(void)state;
	memset(rows, 0, sizeof(rows));
	for (i = 0; i < 5; i++) {
		memset(&rec[i], 0, sizeof(rec[i]));
		rec[i].step = r[i].step;
		e[i] = (struct gate_ent){ .turn = (int)i, .pid = r[i].pid, .rec = &rec[i],
		    .st = i == 4 ? GS_RUN : GS_LOCK };
		rows[i].e = &e[i];
		for (j = 0; j < 3 && r[i].on[j] != 0; j++)
			rows[i].b[rows[i].nb++] = r[i].on[j];
	}
	/* the cycle's lowest step is 3 (pid 103); 1 waits on it, 7 is in it */
	assert_ptr_equal(gate_cycle_victim(rows, 5), &e[3]);
	/* from another row first: the same victim */
	assert_ptr_equal(gate_cycle_victim(rows + 1, 4), &e[3]);
	{
		static const size_t	 order[5] = { 2, 4, 0, 3, 1 };
		struct row		 o[5];

		for (i = 0; i < 5; i++)
			o[i] = rows[order[i]];
		assert_ptr_equal(gate_cycle_victim(o, 5), &e[3]);
	}
	/* the one admitted first is the victim wherever it is in the cycle */
	rec[1].step = 2;
	assert_ptr_equal(gate_cycle_victim(rows, 5), &e[1]);
	rec[1].step = 7;
	/* one of them no longer waits (its lock was granted): no cycle */
	e[2].st = GS_WOKE;
	assert_null(gate_cycle_victim(rows, 5));
	e[2].st = GS_LOCK;
	/* the edge that closed it gone: a chain, no cycle */
	rows[3].nb = 1;
	assert_null(gate_cycle_victim(rows, 5));
	/* one row: never a cycle */
	assert_null(gate_cycle_victim(rows, 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_for_live_turns),
		cmocka_unit_test(test_arrival_watchdog),
		cmocka_unit_test(test_arrival_counts_run_time),
		cmocka_unit_test(test_blocked_not_starved),
		cmocka_unit_test(test_blocked_not_replied),
		cmocka_unit_test(test_waits_counted),
		cmocka_unit_test(test_round_and_exits),
		cmocka_unit_test(test_held_at_another_gate),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_divergence_says_what_differs),
		cmocka_unit_test(test_deadlock_victim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
