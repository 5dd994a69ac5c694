/*
 * The explorer (worker/explore.h) on hand-made records, no database: the
 * independence rule; the tree a simulated system of two turns makes
 * (every interleaving, the bounds, the sleep sets: the figures
 * integration/explore measures on reservations); a step at which several
 * turns wait; records that do not fit their branch (a forged root among
 * them) refused and run again; a journal whose verdicts were rewritten;
 * what a long record costs; the root of one round (--rounds R) and the
 * journal's header (--resume of another exploration).
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/msg.h"
#include "common/util.h"
#include "common/verdict.h"
#include "worker/explore.h"
#include "worker/xexec.h"

static struct cfg_proxy	 db_proxy = { .name = "db", .upstream_kind = CFG_UP_DATABASE,
			    .protocol = CFG_PROTO_POSTGRES };
static struct cfg	 cfg = { .name = "t", .turns = 8, .rounds = 1,
			    .proxies = &db_proxy, .nproxies = 1 };

static struct xstep
st(int turn, int cls)
{
	struct xstep	s = { .turn = turn, .cls = cls, .key = 0x100 + (uint64_t)turn,
			    .occ = 1 };

	return s;
}

/* ---- the rule ---- */

static void
test_indep(void **state)
{
	struct xstep	b0 = st(0, XC_BEGIN), s1 = st(1, XC_SESSION), r0 = st(0, XC_READ);
	struct xstep	r1 = st(1, XC_READ), w0 = st(0, XC_OTHER), w1 = st(1, XC_OTHER);

	(void)state;
	/* BEGIN takes no snapshot and no lock: it commutes with a write */
	assert_true(explore_indep(&b0, &w1));
	assert_true(explore_indep(&w1, &b0));
	/* a session's own setting commutes with anything of another */
	assert_true(explore_indep(&s1, &w0));
	assert_true(explore_indep(&w0, &s1));
	/* two plain reads commute; a read and a write do not, either way */
	assert_true(explore_indep(&r0, &r1));
	assert_false(explore_indep(&r0, &w1));
	assert_false(explore_indep(&w1, &r0));
	assert_false(explore_indep(&w0, &w1));
	/* one turn's steps never commute with each other, nor an unknown one */
	assert_false(explore_indep(&r0, &w0));
	assert_false(explore_indep(&b0, &r0));
	assert_false(explore_indep(NULL, &r1));
	assert_false(explore_indep(&r1, NULL));
}

/* ---- a simulated system ---- */

/*
 * Turns of `len` steps each, classes cls[t][i], run as the gate runs a
 * prefix: its steps strictly, then the turn that went last while it has
 * a step, else the lowest turn that has one; every turn with a step left
 * waits at every step (cand).  Fails when the turns in `bad` all ran
 * their first step (a read) before any of them ran its second (a write):
 * a lost update's shape; else passes.  The steps' first is a turn's
 * first step of m's own program (m->cls[t][0]), whatever its class.
 */
struct sim {
	int		 nturns, len;
	int		 cls[8][8];
	uint64_t	 bad;
};

static void
sim_run(const struct sim *m, const struct xstep *pre, size_t npre, struct xrec *r)
{
	int	 next[8] = { 0 }, t, last = -1, firsts = 0;
	size_t	 i, n = 0, total = (size_t)(m->nturns * m->len);
	bool	 lost = false, wrote = false;

	memset(r, 0, sizeof(*r));
	r->steps = xcalloc(total + 1, sizeof(*r->steps));
	r->has_steps = true;
	for (i = 0; i < total; i++) {
		uint64_t	cand = 0;

		for (t = 0; t < m->nturns; t++)
			if (next[t] < m->len)
				cand |= (uint64_t)1 << t;
		if (i < npre)
			t = pre[i].turn;
		else if (last >= 0 && next[last] < m->len)
			t = last;
		else
			for (t = 0; next[t] >= m->len; t++)
				;
		assert_true(next[t] < m->len);
		r->steps[n] = st(t, m->cls[t][next[t]]);
		r->steps[n].key = 0x100 * (uint64_t)(t + 1) + (uint64_t)next[t];
		r->steps[n].cand = cand;
		n++;
		if (next[t] == 0 && (m->bad >> t & 1))
			firsts++;
		if (next[t] == 1 && (m->bad >> t & 1) && !wrote) {
			/* the first write: every read came before it */
			wrote = true;
			lost = firsts == __builtin_popcountll(m->bad);
		}
		next[t]++;
		last = t;
	}
	r->n = n;
	r->verdict = lost ? VERDICT_FAIL : VERDICT_PASS;
	r->reason = lost ? REASON_INVARIANT : REASON_NONE;
	if (lost)
		r->invariants = json_pack("[{s:s}]", "name", "one bump each");
}

static struct explore *
new_explore(int bound, bool reduce, uint64_t turns)
{
	struct explore_opts	o = { .cfg = &cfg, .proxy = "db", .seed = 1,
				    .turns = turns, .bound = bound, .only_round = -1,
				    .reduce = reduce, .seed_steps = true, .failing_dfd = -1 };

	return explore_new(&o, NULL, 0);
}

/* The whole tree of m; its executions and failing ones. */
static void
explore_all(const struct sim *m, int bound, bool reduce, uint64_t *execs,
    uint64_t *failing, uint64_t *classes)
{
	struct explore	*x = new_explore(bound, reduce, ((uint64_t)1 << m->nturns) - 1);
	struct xnode	*b;
	struct xstep	*pre;
	struct xrec	 r;
	char		 err[ERR_LEN];
	size_t		 n;

	while ((b = explore_next(x)) != NULL) {
		n = explore_prefix(b, &pre);
		sim_run(m, pre, n, &r);
		free(pre);
		assert_int_equal(explore_take(x, b, &r, err), 0);
		xp_rec_clear(&r);
	}
	assert_true(explore_complete(x, NULL));
	*execs = explore_stats(x)->executions;
	*failing = explore_stats(x)->failing;
	*classes = explore_stats(x)->nclasses;
	explore_free(x);
}

/*
 * reservations' two turns (read, write, event; the lost update when both
 * read before either writes): every interleaving is C(6,3) = 20, in 14
 * classes (the two reads commute); 14, 6 and 2 within 2, 1 and 0
 * preemptions; sleep sets run one a class.
 */
static void
test_tree_reservations(void **state)
{
	struct sim	m = { .nturns = 2, .len = 3, .bad = 3,
			    .cls = { { XC_READ, XC_OTHER, XC_OTHER },
				     { XC_READ, XC_OTHER, XC_OTHER } } };
	uint64_t	e, f, c;

	(void)state;
	explore_all(&m, -1, false, &e, &f, &c);
	assert_int_equal(e, 20);
	assert_int_equal(c, 14);
	assert_int_equal(f, 12);
	explore_all(&m, 2, false, &e, &f, &c);
	assert_int_equal(e, 14);
	explore_all(&m, 1, false, &e, &f, &c);
	assert_int_equal(e, 6);
	explore_all(&m, 0, false, &e, &f, &c);
	assert_int_equal(e, 2);
	assert_int_equal(f, 0);
	explore_all(&m, -1, true, &e, &f, &c);
	assert_int_equal(e, 14);
	assert_int_equal(c, 14);
	/*
	 * Passing over a turn that has exited is no preemption: three turns
	 * of one statement each, at most 0 preemptions, run all 3! orders.
	 */
	{
		struct sim	one = { .nturns = 3, .len = 1 };

		explore_all(&one, 0, false, &e, &f, &c);
		assert_int_equal(e, 6);
	}
	/*
	 * A BEGIN first: it commutes with everything, so it adds no class:
	 * C(8,4) = 70 interleavings, still 14 classes (computed apart, by the
	 * same normal form over every interleaving); sleep sets alone are not
	 * optimal, so reduced they take a few more than one a class, and far
	 * fewer than 70.  A rule that made BEGIN dependent would make more.
	 */
	m.len = 4;
	memmove(&m.cls[0][1], &m.cls[0][0], 3 * sizeof(int));
	memmove(&m.cls[1][1], &m.cls[1][0], 3 * sizeof(int));
	m.cls[0][0] = m.cls[1][0] = XC_BEGIN;
	explore_all(&m, -1, false, &e, &f, &c);
	assert_int_equal(e, 70);
	assert_int_equal(c, 14);
	explore_all(&m, -1, true, &e, &f, &c);
	assert_int_equal(c, 14);
	assert_in_range(e, 14, 16);
	/* SET first instead: the same */
	m.cls[0][0] = m.cls[1][0] = XC_SESSION;
	explore_all(&m, -1, true, &e, &f, &c);
	assert_int_equal(c, 14);
	assert_in_range(e, 14, 16);
}

/*
 * A step at which four turns wait: three branches there, one a turn,
 * numbered in turn order and run shallowest first, each prefix the
 * record's steps up to it and then that turn's waiting step, with the
 * turns that waited at that step.
 */
static void
test_several_waiters(void **state)
{
	struct explore	*x = new_explore(-1, false, 0xf);
	struct xnode	*b;
	struct xstep	*pre;
	struct xrec	 r = { .verdict = VERDICT_PASS, .has_steps = true }, c;
	char		 err[ERR_LEN];
	size_t		 n, i;
	int		 t;

	(void)state;
	r.n = 4;
	r.steps = xcalloc(4, sizeof(*r.steps));
	for (i = 0; i < 4; i++) {
		r.steps[i] = st((int)i, XC_OTHER);
		r.steps[i].cand = 0xf & ~(((uint64_t)1 << i) - 1);	/* those left */
	}
	b = explore_next(x);
	assert_int_equal(explore_node_no(b), 1);
	assert_int_equal(explore_take(x, b, &r, err), 0);
	/* step 0: turns 1, 2, 3; step 1: 2, 3; step 2: 3 */
	assert_int_equal(explore_left(x), 6);
	assert_int_equal(explore_stats(x)->nodes, 7);
	/* the last made, found by its number (a journal's line) */
	b = explore_find(x, 7);
	assert_non_null(b);
	assert_int_equal(explore_prefix(b, &pre), 3);
	assert_int_equal(pre[2].turn, 3);
	assert_int_equal(pre[2].cand, 0xc);
	free(pre);
	memset(&c, 0, sizeof(c));
	c.verdict = VERDICT_PASS;
	c.has_steps = true;
	c.n = 4;
	c.steps = xcalloc(4, sizeof(*c.steps));
	c.steps[0] = r.steps[0];
	c.steps[1] = r.steps[1];
	c.steps[2] = r.steps[3];
	c.steps[2].cand = 0xc;
	c.steps[3] = r.steps[2];
	c.steps[3].cand = 0x4;
	assert_int_equal(explore_take(x, b, &c, err), 0);
	xp_rec_clear(&c);
	for (t = 1; t <= 3; t++) {
		b = explore_next(x);
		assert_int_equal(explore_node_no(b), 1 + (uint64_t)t);
		n = explore_prefix(b, &pre);
		assert_int_equal(n, 1);
		assert_int_equal(pre[0].turn, t);
		assert_int_equal(pre[0].key, r.steps[t].key);
		assert_int_equal(pre[0].cand, 0xf);	/* the step's own waiters */
		free(pre);
		/* its execution: that step, then the others, nobody else waiting */
		memset(&c, 0, sizeof(c));
		c.verdict = VERDICT_PASS;
		c.has_steps = true;
		c.n = 4;
		c.steps = xcalloc(4, sizeof(*c.steps));
		c.steps[0] = r.steps[t];
		c.steps[0].cand = 0xf;
		for (i = 1; i < 4; i++) {
			c.steps[i] = r.steps[i == (size_t)t ? 0 : i];
			c.steps[i].cand = (uint64_t)1 << c.steps[i].turn;
		}
		assert_int_equal(explore_take(x, b, &c, err), 0);
		xp_rec_clear(&c);
	}
	assert_int_equal(explore_left(x), 2);	/* from step 1: turns 2 and 3 */
	xp_rec_clear(&r);
	explore_free(x);
}

/* ---- records checked ---- */

static struct xrec
rec_of(const int *turns, size_t n, uint64_t cand)
{
	struct xrec	r = { .verdict = VERDICT_PASS, .has_steps = true };
	size_t		i;

	r.n = n;
	r.steps = xcalloc(n + 1, sizeof(*r.steps));
	for (i = 0; i < n; i++) {
		r.steps[i] = st(turns[i], XC_OTHER);
		r.steps[i].key = 0x100 * (uint64_t)(turns[i] + 1) + i;
		r.steps[i].cand = cand;
	}
	return r;
}

/*
 * A forged root: `steps: []` with a pass, where the seed's own run took
 * steps, would close the tree at once ("complete, 1 explored").  It is
 * refused and its execution runs again; refused twice, it is broken and
 * the result is not complete.  So are records that do not extend their
 * prefix, name a turn that does not run or was not waiting, or a verdict
 * its failure fields contradict.
 */
static void
test_forged_root(void **state)
{
	struct explore	*x = new_explore(-1, false, 0x3);
	struct xnode	*b;
	struct xrec	 r = { .verdict = VERDICT_PASS, .has_steps = true };
	char		 err[ERR_LEN];

	(void)state;
	b = explore_next(x);
	assert_int_equal(explore_take(x, b, &r, err), -1);
	assert_non_null(strstr(err, "no step"));
	assert_int_equal(explore_left(x), 1);		/* back, to run again */
	b = explore_next(x);
	assert_int_equal(explore_take(x, b, &r, err), -1);
	assert_int_equal(explore_left(x), 0);
	assert_int_equal(explore_stats(x)->refused, 2);
	assert_int_equal(explore_stats(x)->infra, 1);	/* broken */
	assert_false(explore_complete(x, NULL));
	explore_free(x);
	/* a tree stopped by its budget is not complete, whatever was run */
	x = new_explore(-1, false, 0x3);
	assert_false(explore_complete(x, "the budget"));
	explore_free(x);
}

/* r, as the root's record of an explorer of turns, is refused for why. */
static void
refused(uint64_t turns, struct xrec *r, const char *why)
{
	struct explore	*x = new_explore(-1, false, turns);
	char		 err[ERR_LEN];

	assert_int_equal(explore_take(x, explore_next(x), r, err), -1);
	if (strstr(err, why) == NULL)
		fail_msg("refused for \"%s\", not for \"%s\"", err, why);
	assert_int_equal(explore_left(x), 1);	/* to run again */
	xp_rec_clear(r);
	explore_free(x);
}

static void
test_records_checked(void **state)
{
	struct explore	*x = new_explore(-1, false, 0x3);
	struct xnode	*kid;
	int		 t01[] = { 0, 1 }, t10[] = { 1, 0 }, t02[] = { 0, 2 };
	struct xrec	 r;
	char		 err[ERR_LEN];

	(void)state;
	/* the root: turn 0 then turn 1, both waiting at the first step */
	r = rec_of(t01, 2, 0x3);
	r.steps[1].cand = 0x2;
	assert_int_equal(explore_take(x, explore_next(x), &r, err), 0);
	xp_rec_clear(&r);
	/* its branch: turn 1's step first; a record that starts otherwise */
	kid = explore_next(x);
	r = rec_of(t01, 2, 0x3);
	assert_int_equal(explore_take(x, kid, &r, err), -1);
	assert_non_null(strstr(err, "not its prefix's"));
	xp_rec_clear(&r);
	/* run again: the right one is taken, and the tree is complete */
	kid = explore_next(x);
	r = rec_of(t10, 2, 0x3);
	r.steps[0].key = 0x200 + 1;	/* the root's step 1: turn 1's */
	r.steps[1].cand = 0x1;
	assert_int_equal(explore_take(x, kid, &r, err), 0);
	xp_rec_clear(&r);
	assert_int_equal(explore_left(x), 0);
	assert_true(explore_complete(x, NULL));
	assert_int_equal(explore_stats(x)->refused, 1);
	explore_free(x);

	r = rec_of(t02, 2, 0x1);
	r.steps[1].cand = 0x4;
	refused(0x3, &r, "does not run");
	r = rec_of(t01, 2, 0x1);
	refused(0x3, &r, "was not waiting");
	r = rec_of(t01, 2, 0x7);
	refused(0x3, &r, "do not run");
	r = rec_of(t01, 2, 0x3);
	r.verdict = VERDICT_FAIL;
	r.reason = REASON_INVARIANT;
	refused(0x3, &r, "names none");
	r = rec_of(t01, 2, 0x3);
	r.plan = json_object();
	refused(0x3, &r, "a pass that carries");
	r = rec_of(t01, 2, 0x3);
	r.verdict = VERDICT_FAIL;
	r.reason = REASON_INVARIANT;
	r.invariants = json_pack("[{s:s}]", "name", "x");
	r.plan = json_pack("{s:i,s:s}", "soak_plan", 1, "seed", "2");
	refused(0x3, &r, "its plan");
}

/*
 * A tree exhausted is not complete when an execution was not exact: a
 * decision a watchdog forced, or a proxy in front of a service that held
 * one turn's request while another's ran (serialized).
 */
static void
test_inexact_incomplete(void **state)
{
	static struct cfg_proxy	 api = { .name = "api", .upstream_kind = CFG_UP_SERVICE,
				    .protocol = CFG_PROTO_HTTP };
	static struct cfg	 scfg = { .name = "s", .turns = 2, .rounds = 1,
				    .proxies = &api, .nproxies = 1 };
	struct explore_opts	 o = { .cfg = &scfg, .proxy = "api", .seed = 1,
				    .turns = 0x3, .bound = -1, .only_round = -1,
				    .seed_steps = true, .failing_dfd = -1 };
	struct explore		*x = new_explore(-1, false, 0x3);
	int			 t01[] = { 0, 1 };
	struct xrec		 r = rec_of(t01, 2, 0x1);
	char			 err[ERR_LEN];

	(void)state;
	r.steps[1].cand = 0x2;
	r.steps[1].flags = XS_FORCED;
	xp_rec_count(&r);
	assert_int_equal(explore_take(x, explore_next(x), &r, err), 0);
	assert_int_equal(explore_left(x), 0);
	assert_int_equal(explore_stats(x)->inexact, 1);
	assert_int_equal(explore_stats(x)->forced, 1);
	assert_false(explore_complete(x, NULL));
	explore_free(x);
	/* the same order, exact, PostgreSQL statements: complete */
	r.steps[1].flags = 0;
	xp_rec_count(&r);
	x = new_explore(-1, false, 0x3);
	assert_int_equal(explore_take(x, explore_next(x), &r, err), 0);
	assert_true(explore_complete(x, NULL));
	explore_free(x);
	/* turn 1 held while turn 0's request ran, at a service: serialized */
	r.steps[0].cand = 0x3;
	r.steps[1].cand = 0x2;
	r.steps[0].flags = r.steps[1].flags = XS_SERVICE;
	x = explore_new(&o, NULL, 0);
	assert_int_equal(explore_take(x, explore_next(x), &r, err), 0);
	assert_int_equal(explore_stats(x)->serialized, 1);
	assert_false(explore_complete(x, NULL));
	while (explore_left(x) > 0) {
		struct xnode	*b = explore_next(x);
		int		 t10[] = { 1, 0 };
		struct xrec	 c = rec_of(t10, 2, 0x3);

		c.steps[0].key = r.steps[1].key;
		c.steps[1].cand = 0x1;
		c.steps[0].flags = c.steps[1].flags = XS_SERVICE;
		assert_int_equal(explore_take(x, b, &c, err), 0);
		xp_rec_clear(&c);
	}
	assert_false(explore_complete(x, NULL));
	explore_free(x);
	xp_rec_clear(&r);
}

/* A journal line whose verdict was rewritten: refused, run again. */
static void
test_journal_rewritten(void **state)
{
	struct explore	*x = new_explore(-1, false, 0x3);
	int		 t01[] = { 0, 1 };
	struct xrec	 r = rec_of(t01, 2, 0x3);
	json_t		*lines = json_array(), *j;
	size_t		 taken;

	(void)state;
	r.verdict = VERDICT_FAIL;
	r.reason = REASON_INVARIANT;
	r.invariants = json_pack("[{s:s}]", "name", "one bump each");
	j = xp_rec_json(&r);
	json_object_set_new(j, "verdict", json_integer(VERDICT_PASS));	/* the lie */
	json_array_append_new(lines, json_pack("{s:i,s:o}", "no", 1, "rec", j));
	taken = explore_journal_replay(x, lines);
	assert_int_equal(taken, 0);
	assert_int_equal(explore_left(x), 1);		/* the root runs again */
	assert_int_equal(explore_stats(x)->refused, 1);
	assert_int_equal(explore_stats(x)->executions, 0);
	/* the same line made consistent, but with a pass's reason and a
	 * failure's invariants: still refused */
	json_object_set_new(j, "reason", json_string(""));
	json_object_set_new(json_array_get(lines, 0), "no", json_integer(1));
	taken = explore_journal_replay(x, lines);
	assert_int_equal(taken, 0);
	assert_int_equal(explore_left(x), 1);
	json_decref(lines);
	xp_rec_clear(&r);
	explore_free(x);
}

/* ---- what a long record costs ---- */

static size_t
heap_used(void)
{
	struct mallinfo2	m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

/*
 * A record of 20,000 steps (about a 1 MiB RESULT) is refused before it is
 * read further; one at the limit, with every turn of 64 waiting at every
 * step (the most branches a record can make: 63 a step), branches in far
 * less than 100 MB, its branches sharing its steps.
 */
static void
test_long_record(void **state)
{
	struct explore	*x = new_explore(-1, false, UINT64_MAX);
	struct xnode	*b;
	struct xrec	 r = { .verdict = VERDICT_PASS, .has_steps = true };
	json_t		*a = json_array();
	struct xstep	*s = NULL;
	size_t		 n = 0, i, before, after;
	char		 err[ERR_LEN];

	(void)state;
	for (i = 0; i < 20000; i++)
		json_array_append_new(a, json_pack("[i,i,s,i,s,s,i,i]", 0, (int)(i % 64),
		    "0000000000000100", (int)i, "UPDATE", "ffffffffffffffff", 0, 0));
	assert_int_equal(xp_steps_parse(a, &s, &n, err), -1);
	assert_non_null(strstr(err, "more than"));
	json_decref(a);
	r.n = 20000;
	r.steps = xcalloc(r.n, sizeof(*r.steps));
	for (i = 0; i < r.n; i++) {
		r.steps[i] = st((int)(i % 64), XC_OTHER);
		r.steps[i].occ = (uint32_t)i;
		r.steps[i].cand = UINT64_MAX;
	}
	b = explore_next(x);
	assert_int_equal(explore_take(x, b, &r, err), -1);
	assert_non_null(strstr(err, "more than"));
	r.n = XP_MAX_STEPS;
	before = heap_used();
	b = explore_next(x);
	assert_int_equal(explore_take(x, b, &r, err), 0);
	after = heap_used();
	/* 63 a step, but near the end turns with no step left to take */
	assert_true(explore_left(x) > (size_t)62 * XP_MAX_STEPS);
	/* glibc's count: under ASan, whose allocator is its own, it reads 0 */
	print_message("a record of %d steps, 64 turns waiting at each: %zu branches "
	    "in %.1f MB\n", XP_MAX_STEPS, explore_left(x),
	    (double)(after - before) / 1e6);
	assert_true(after - before < (size_t)100 << 20);
	/* a branch deep in the record rebuilds its prefix from the path */
	b = explore_next(x);
	free(s);
	n = explore_prefix(b, &s);
	assert_int_equal(n, 1);
	explore_put_back(x, b);
	free(s);
	r.n = 20000;
	xp_rec_clear(&r);
	explore_free(x);
}

/* ---- --rounds R ---- */

/*
 * The root of an exploration of one round: the steps of the rounds before
 * it that run, as the seed ran them; never a step of the round itself,
 * which would then be followed, not branched ("complete, 1 explored").
 */
static void
test_root_prefix(void **state)
{
	static const int	 rounds[] = { 0, 0, 0, 1, 1, 2 };
	static const int	 turns[] = { 0, 1, 0, 1, 0, 0 };
	struct plan_step	 steps[6];
	struct plan_proxy	 pp = { .name = (char *)"db", .steps = steps,
				    .nsteps = 6 };
	bool			 runs[3 * 2] = { true, false, true, true, true, true };
	struct plan		 p = { .seed = 1, .turns = 2, .rounds = 3, .runs = runs,
				    .proxies = &pp, .nproxies = 1 };
	struct xstep		*s;
	size_t			 i;

	(void)state;
	for (i = 0; i < 6; i++)
		steps[i] = (struct plan_step){ .round = rounds[i], .turn = turns[i],
		    .key = 0x10 + i, .occ = (uint32_t)i, .cand = 3,
		    .has_cand = i != 2, .what = i == 0 ? (char *)"SELECT a" : NULL };
	/* every round, or round 0: nothing before it */
	assert_int_equal(explore_root_prefix(&p, &pp, -1, &s), 0);
	free(s);
	assert_int_equal(explore_root_prefix(&p, &pp, 0, &s), 0);
	free(s);
	/* round 1: round 0's steps of the turns that run (turn 1 does not) */
	assert_int_equal(explore_root_prefix(&p, &pp, 1, &s), 2);
	assert_int_equal(s[0].round, 0);
	assert_int_equal(s[0].turn, 0);
	assert_int_equal(s[0].key, 0x10);
	assert_int_equal(s[0].cand, 3);
	assert_string_equal(s[0].what, "SELECT a");
	assert_int_equal(s[1].key, 0x12);
	assert_int_equal(s[1].occ, 2);
	assert_int_equal(s[1].cand, 1);		/* no cand: its own turn alone */
	assert_string_equal(s[1].what, "exchange");
	free(s);
	/* round 2: rounds 0 and 1, not round 2's own step */
	assert_int_equal(explore_root_prefix(&p, &pp, 2, &s), 4);
	for (i = 0; i < 4; i++)
		assert_true(s[i].round < 2);
	assert_int_equal(s[3].key, 0x14);
	free(s);
}

/* A journal's header names the exploration: a --resume with another
 * round, bound, seed, turns or reduction is another's journal. */
static void
test_journal_header(void **state)
{
	struct explore_opts	o = { .cfg = &cfg, .proxy = "db", .seed = 1,
				    .bound = 2, .only_round = 1 }, q;
	json_t			*h = explore_journal_header(&o, "0,1"), *g;

	(void)state;
	g = explore_journal_header(&o, "0,1");
	assert_true(json_equal(h, g));
	json_decref(g);
	q = o, q.only_round = 2;
	g = explore_journal_header(&q, "0,1");
	assert_false(json_equal(h, g));
	json_decref(g);
	q = o, q.only_round = -1;
	g = explore_journal_header(&q, "0,1");
	assert_false(json_equal(h, g));
	json_decref(g);
	q = o, q.bound = 1;
	g = explore_journal_header(&q, "0,1");
	assert_false(json_equal(h, g));
	json_decref(g);
	q = o, q.seed = 2;
	g = explore_journal_header(&q, "0,1");
	assert_false(json_equal(h, g));
	json_decref(g);
	q = o, q.reduce = true;
	g = explore_journal_header(&q, "0,1");
	assert_false(json_equal(h, g));
	json_decref(g);
	g = explore_journal_header(&o, NULL);
	assert_false(json_equal(h, g));
	json_decref(g);
	json_decref(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_indep),
		cmocka_unit_test(test_tree_reservations),
		cmocka_unit_test(test_several_waiters),
		cmocka_unit_test(test_forged_root),
		cmocka_unit_test(test_records_checked),
		cmocka_unit_test(test_inexact_incomplete),
		cmocka_unit_test(test_journal_rewritten),
		cmocka_unit_test(test_long_record),
		cmocka_unit_test(test_root_prefix),
		cmocka_unit_test(test_journal_header),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
