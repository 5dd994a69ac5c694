/* The coordinator's rules, without a socket: leases, expiry, refusal of
 * late results, retries on another worker, exactly one final verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/queue.h"
#include "common/regress.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/coord.h"
#include "coordinator/coverage.h"
#include "coordinator/report.h"

static struct cfg	cfg;
/* a proxy, for the coverage the results carry (coordinator/coverage.h) */
static struct cfg_proxy	cfg_px[1] = { { .name = "db" } };
/* the regressions the next mk() gets (NULL: none) */
static const struct regress_set	*mk_regs;

static struct coord *
mk(uint64_t first, uint64_t last)
{
	struct coord_opts	o = { 0 };
	char			err[ERR_LEN];
	struct coord		*c;

	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	cfg.text = "name: t\n";
	cfg.retries = 2;
	cfg.proxies = cfg_px;
	cfg.nproxies = 1;
	o.cfg = &cfg;
	o.seeds.first = first;
	o.seeds.last = last;
	o.run_id = "r";
	o.cfg_path = "/x.yaml";
	o.heartbeat_ms = 100;
	o.lease_ttl_ms = 1000;
	o.regress = mk_regs;
	c = coord_new(&o, err);
	assert_non_null(c);
	return c;
}

static uint32_t
hello(struct coord *c, uint32_t pipe)
{
	struct msg	req = { .type = MSG_HELLO }, rep;
	uint32_t	id;

	req.u.hello.name = "w";
	req.u.hello.host = "h";
	assert_int_equal(coord_handle(c, &req, pipe, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_WELCOME);
	id = rep.u.welcome.worker_id;
	msg_clear(&rep);
	return id;
}

/* Returns 1 with *lease filled (caller frees seeds), 0 if parked. */
static int
lease(struct coord *c, uint32_t w, uint32_t pipe, int64_t now, struct msg *rep)
{
	struct msg	req = { .type = MSG_LEASE_REQ };

	req.u.lease_req.worker_id = w;
	return coord_handle(c, &req, pipe, now, rep);
}

/* Sends a result at time now; returns the ACK's ok. */
static int
result_dt(struct coord *c, uint32_t w, uint32_t pipe, int64_t now, uint64_t lease_id,
    uint64_t seed, uint32_t attempt, int verdict, const char *reason,
    const char *detail)
{
	struct msg	req = { .type = MSG_RESULT }, rep;
	int		ok;

	req.u.result.worker_id = w;
	req.u.result.lease_id = lease_id;
	req.u.result.seed = seed;
	req.u.result.attempt = attempt;
	req.u.result.verdict = (uint8_t)verdict;
	req.u.result.reason = UNCONST(reason);
	req.u.result.detail = UNCONST(detail);
	assert_int_equal(coord_handle(c, &req, pipe, now, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	msg_clear(&rep);
	return ok;
}

static int
result_d(struct coord *c, uint32_t w, uint32_t pipe, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason, const char *detail)
{
	return result_dt(c, w, pipe, 0, lease_id, seed, attempt, verdict, reason,
	    detail);
}

static int
result(struct coord *c, uint32_t w, uint32_t pipe, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason)
{
	return result_d(c, w, pipe, lease_id, seed, attempt, verdict, reason,
	    "{\"message\":\"m\"}");
}

static int
result_at(struct coord *c, uint32_t w, uint32_t pipe, int64_t now, uint64_t lease_id,
    uint64_t seed, uint32_t attempt, int verdict, const char *reason)
{
	return result_dt(c, w, pipe, now, lease_id, seed, attempt, verdict, reason,
	    "{\"message\":\"m\"}");
}

/* Sends a heartbeat at time now; returns the ACK's ok. */
static int
beat(struct coord *c, uint32_t w, uint32_t pipe, int64_t now, uint64_t lease_id,
    uint64_t seed)
{
	struct msg	req = { .type = MSG_HEARTBEAT }, rep;
	int		ok;

	req.u.heartbeat.worker_id = w;
	req.u.heartbeat.lease_id = lease_id;
	req.u.heartbeat.seed = seed;
	assert_int_equal(coord_handle(c, &req, pipe, now, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	msg_clear(&rep);
	return ok;
}

/* How many attempts s has had, the final one included. */
static size_t
nattempts(const struct coord_seed *s)
{
	json_t	*a = coord_seed_attempts(s);
	size_t	 n = json_array_size(a);

	json_decref(a);
	return n;
}

/* Field key of attempt k in s's history (kept alive by a static). */
static const char *
hist(const struct coord_seed *s, size_t k, const char *key)
{
	static json_t	*a;
	json_t		*v;

	json_decref(a);
	a = coord_seed_attempts(s);
	v = json_object_get(json_array_get(a, k), key);
	assert_non_null(v);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_int_t
hist_worker(const struct coord_seed *s, size_t k)
{
	json_t		*a = coord_seed_attempts(s);
	json_t		*v = json_object_get(json_array_get(a, k), "worker");
	json_int_t	 w;

	assert_true(json_is_integer(v));
	w = json_integer_value(v);
	json_decref(a);
	return w;
}

/* Sends a result; returns the ACK's ok, and its keep in *keep. */
static int
result_keep(struct coord *c, uint32_t w, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason, uint32_t *keep)
{
	struct msg	req = { .type = MSG_RESULT }, rep;
	int		ok;

	req.u.result.worker_id = w;
	req.u.result.lease_id = lease_id;
	req.u.result.seed = seed;
	req.u.result.attempt = attempt;
	req.u.result.verdict = (uint8_t)verdict;
	req.u.result.reason = UNCONST(reason);
	req.u.result.detail = UNCONST("{\"message\":\"m\"}");
	assert_int_equal(coord_handle(c, &req, w, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	*keep = rep.u.ack.keep;
	msg_clear(&rep);
	return ok;
}

/*
 * Once nothing is left to lease, an idle worker takes the unstarted half
 * of the busiest lease's tail; the victim hears it in its next ACK, and its
 * result for a taken seed is refused.  The seed running is never taken.
 */
static void
test_idle_worker_takes_unstarted_tail(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 r1, r, r6, r7;
	uint32_t		 w[8], i, keep;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w[1] = hello(c, 1);
	assert_int_equal(lease(c, w[1], 1, 0, &r1), 1);
	assert_int_equal(r1.u.lease.nseeds, 5);		/* ceil(10 / 2): 0..4 */
	for (i = 2; i <= 5; i++) {			/* 5..9 go to w2..w5 */
		w[i] = hello(c, i);
		assert_int_equal(lease(c, w[i], i, 0, &r), 1);
		msg_clear(&r);
	}
	/* Nothing left: w6 takes the last 2 of w1's 4 unstarted seeds. */
	w[6] = hello(c, 6);
	assert_int_equal(lease(c, w[6], 6, 0, &r6), 1);
	assert_int_equal(r6.type, MSG_LEASE);
	assert_int_equal(r6.u.lease.nseeds, 2);
	assert_true(r6.u.lease.seeds[0].seed == 3 && r6.u.lease.seeds[1].seed == 4);
	assert_int_equal(r6.u.lease.seeds[0].attempt, 1);	/* they never ran */
	/* w1 hears it in the ACK of the seed it was running. */
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 0, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 3);
	/* Had it run seed 3 anyway, that result would be refused. */
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 3, 1, VERDICT_FAIL,
	    "invariant", &keep), 0);
	/* w1 runs seed 1 now and w6 seed 3: each has one seed to spare, and
	 * w7 takes the first found (w1's seed 2), never a running one. */
	w[7] = hello(c, 7);
	assert_int_equal(lease(c, w[7], 7, 0, &r7), 1);
	assert_int_equal(r7.u.lease.nseeds, 1);
	assert_true(r7.u.lease.seeds[0].seed == 2);
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 1, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 2);
	assert_int_equal(result_keep(c, w[7], r7.u.lease.lease_id, 2, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(result_keep(c, w[6], r6.u.lease.lease_id, 3, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 2);
	assert_int_equal(result_keep(c, w[6], r6.u.lease.lease_id, 4, 1, VERDICT_PASS,
	    "", &keep), 1);
	s = coord_seeds(c, &n);
	for (i = 0; i < 5; i++) {
		assert_int_equal(s[i].state, CSEED_FINAL);
		assert_int_equal(s[i].attempts, 1);
		assert_int_equal(s[i].verdict, VERDICT_PASS);
		assert_int_equal(nattempts(&s[i]), 1);
	}
	assert_int_equal(s[2].worker, w[7]);
	assert_int_equal(s[3].worker, w[6]);
	assert_int_equal(s[4].worker, w[6]);
	msg_clear(&r1);
	msg_clear(&r6);
	msg_clear(&r7);
	coord_free(c);
}

/*
 * A lease taken by an idle worker is fenced like any other: when the thief
 * dies, the seed it was running is its worker-lost attempt and the rest
 * goes back; the victim cannot report the taken seeds.
 */
static void
test_stolen_seeds_fenced_when_thief_dies(void **state)
{
	struct coord		*c = mk(0, 5);
	struct msg		 r1, r;
	uint32_t		 w[6], i, keep;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w[1] = hello(c, 1);
	assert_int_equal(lease(c, w[1], 1, 0, &r1), 1);	/* 0..2 */
	assert_int_equal(r1.u.lease.nseeds, 3);
	for (i = 2; i <= 4; i++) {				/* 3, 4, 5 */
		w[i] = hello(c, i);
		assert_int_equal(lease(c, w[i], i, 0, &r), 1);
		assert_int_equal(r.u.lease.nseeds, 1);
		msg_clear(&r);
	}
	w[5] = hello(c, 5);
	assert_int_equal(lease(c, w[5], 5, 0, &r), 1);		/* w1's seed 2 */
	assert_int_equal(r.u.lease.nseeds, 1);
	assert_true(r.u.lease.seeds[0].seed == 2);
	msg_clear(&r);
	/* The thief dies running it (w1 beats, the thief does not): its
	 * attempt is lost, retried later. */
	coord_pipe_closed(c, 5, 0);
	assert_int_equal(beat(c, w[1], 1, 500, r1.u.lease.lease_id, 0), 1);
	coord_tick(c, 1200);
	s = coord_seeds(c, &n);
	assert_int_equal(s[2].state, CSEED_PENDING);
	assert_int_equal(nattempts(&s[2]), 1);
	assert_string_equal(hist(&s[2], 0, "reason"), "worker-lost");
	/* The victim cannot report it: the seed is no longer its own. */
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 2, 1, VERDICT_PASS,
	    "", &keep), 0);
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 0, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 2);
	assert_int_equal(nattempts(&s[2]), 1);
	msg_clear(&r1);
	coord_free(c);
}

/*
 * 80 seeds of equal cost, 8 workers joining one every 0.1 seed-time, each
 * running its lease in order and asking again when done: the coordinator
 * as the server drives it (parked requests served after every event).  No
 * worker idles while another holds unstarted seeds, so none runs more
 * than ceil(80/8) + 2.
 */
static void
test_balance_with_staggered_joins(void **state)
{
	enum { NW = 8, NS = 80, COST = 100 };
	struct coord		*c = mk(0, NS - 1);
	struct msg		 rep;
	struct {
		uint32_t	 id;
		int64_t		 joins, busy_until;
		bool		 joined, parked, has;
		struct msg	 lease;
		uint32_t	 next, keep;
		uint32_t	 ran;
	} wk[NW];
	int64_t			 now = 0;
	uint32_t		 i, max = 0;

	(void)state;
	memset(wk, 0, sizeof(wk));
	for (i = 0; i < NW; i++)
		wk[i].joins = (int64_t)i * COST / 10;
	while (!coord_finished(c)) {
		for (i = 0; i < NW; i++) {
			if (!wk[i].joined && now >= wk[i].joins) {
				wk[i].id = hello(c, i + 1);
				wk[i].joined = wk[i].parked = true;
			}
			/* A seed ends: report it, start the next one it keeps. */
			if (wk[i].has && now >= wk[i].busy_until) {
				const struct msg_seed	*sd =
				    &wk[i].lease.u.lease.seeds[wk[i].next];

				assert_int_equal(result_keep(c, wk[i].id,
				    wk[i].lease.u.lease.lease_id, sd->seed, sd->attempt,
				    VERDICT_PASS, "", &wk[i].keep), 1);
				wk[i].ran++;
				if (++wk[i].next < wk[i].keep)
					wk[i].busy_until = now + COST;
				else {
					wk[i].has = false;
					wk[i].parked = true;
					msg_clear(&wk[i].lease);
				}
			}
		}
		for (i = 0; i < NW; i++) {
			if (!wk[i].parked || !coord_serve(c, wk[i].id, now, &rep))
				continue;
			wk[i].parked = false;
			if (rep.type != MSG_LEASE) {
				msg_clear(&rep);
				continue;
			}
			wk[i].lease = rep;
			wk[i].has = true;
			wk[i].next = 0;
			wk[i].keep = rep.u.lease.nseeds;
			wk[i].busy_until = now + COST;
		}
		now++;
		assert_true(now < 100 * COST);
	}
	for (i = 0; i < NW; i++) {
		print_message("worker %u: %u seeds\n", i + 1, wk[i].ran);
		if (wk[i].ran > max)
			max = wk[i].ran;
		if (wk[i].has)
			msg_clear(&wk[i].lease);
	}
	assert_true(max <= NS / NW + 2);
	coord_free(c);
}

/*
 * Quarantine: three infra outcomes of its own in a row and a worker gets no
 * more seeds; its unstarted seeds go back.  The database and the config's
 * infra (exec, setup) do not count.  With no other worker the run halts.
 */
static void
test_quarantine(void **state)
{
	struct coord		*c = mk(0, 19);
	struct msg		 r1, r2, r;
	uint32_t		 w1, w2, keep, i;
	json_t			*wj;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w1 = hello(c, 1);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_true(r1.u.lease.nseeds >= 8);
	/* db, exec and setup are not the worker's fault. */
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 0, 1, VERDICT_INFRA,
	    "db", &keep), 1);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 1, 1, VERDICT_INFRA,
	    "exec", &keep), 1);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 2, 1, VERDICT_INFRA,
	    "setup", &keep), 1);
	/* Two of its own, then a pass: the count starts again. */
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 3, 1, VERDICT_INFRA,
	    "service", &keep), 1);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 4, 1, VERDICT_INFRA,
	    "proxy", &keep), 1);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 5, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_false(coord_halted(c));
	for (i = 6; i < 9; i++)
		assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, i, 1,
		    VERDICT_INFRA, "service", &keep), 1);
	/* Quarantined at seed 8: the ACK cuts its lease there. */
	assert_int_equal(keep, 9);
	/* and what it had not started is no longer leased */
	s = coord_seeds(c, &n);
	for (i = 9; i < r1.u.lease.nseeds; i++)
		assert_int_not_equal(s[r1.u.lease.seeds[i].seed].state, CSEED_LEASED);
	assert_true(coord_halted(c));		/* nobody else to run the rest */
	assert_int_equal(lease(c, w1, 1, 0, &r), 1);
	assert_int_equal(r.type, MSG_DONE);
	assert_non_null(strstr(r.u.ack.text, "quarantined"));
	msg_clear(&r);
	wj = coord_workers_json(c);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(wj, 0),
	    "quarantined")), "service"));
	json_decref(wj);
	/* Another worker takes the rest: the run goes on. */
	w2 = hello(c, 2);
	assert_false(coord_halted(c));
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_int_equal(r2.type, MSG_LEASE);
	s = coord_seeds(c, &n);
	for (i = 0; i < r2.u.lease.nseeds; i++)
		assert_int_equal(s[r2.u.lease.seeds[i].seed].state, CSEED_LEASED);
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
}

/* --- the early stop: a config error on the first seeds --- */

#define CE_EXEC	"{\"message\":\"m\",\"config_error\":{\"kind\":\"exec\"," \
		"\"what\":\"turn.command\",\"code\":\"ENOENT\",\"detail\":" \
		"\"/x/redeem.sh: No such file or directory\"}}"
#define CE_SQL	"{\"message\":\"m\",\"config_error\":{\"kind\":\"sql\"," \
		"\"what\":\"invariants[0].sql\",\"code\":\"42703\",\"detail\":" \
		"\"column r.idd does not exist\"}}"
#define CE_ACCES "{\"message\":\"m\",\"config_error\":{\"kind\":\"exec\"," \
		"\"what\":\"setup\",\"code\":\"EACCES\",\"detail\":" \
		"\"/x/setup: not executable (chmod +x)\"}}"
#define CE_LOAD	"{\"message\":\"m\",\"config_error\":{\"kind\":\"config\"," \
		"\"what\":\"config\",\"code\":\"\",\"detail\":\"no folder\"}}"

/* A result with its detail; returns the ACK's ok, its keep in *keep. */
static int
result_ce(struct coord *c, uint32_t w, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason, const char *detail,
    uint32_t *keep)
{
	struct msg	req = { .type = MSG_RESULT }, rep;
	int		ok;

	req.u.result.worker_id = w;
	req.u.result.lease_id = lease_id;
	req.u.result.seed = seed;
	req.u.result.attempt = attempt;
	req.u.result.verdict = (uint8_t)verdict;
	req.u.result.reason = UNCONST(reason);
	req.u.result.detail = UNCONST(detail);
	assert_int_equal(coord_handle(c, &req, w, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	*keep = rep.u.ack.keep;
	msg_clear(&rep);
	return ok;
}

static void	record_event(struct coord *, enum jev, json_t *, void *);
static struct coord *replayed(json_t *, size_t, uint64_t, uint64_t);

/* The journal's event names: one table, read back as written. */
static void
test_journal_event_names(void **state)
{
	int	i;

	(void)state;
	for (i = JEV_RUN; i < JEV_OTHER; i++)
		assert_int_equal(jev_parse(jev_name((enum jev)i)), i);
	assert_string_equal(jev_name(JEV_LEASE_END), "lease_end");
	assert_string_equal(jev_name(JEV_RUN), "run");
	assert_int_equal(jev_parse("lease_ends"), JEV_OTHER);
	assert_int_equal(jev_parse(""), JEV_OTHER);
}

/*
 * The first three seeds to report all fail on their first attempt with
 * the same config error: the run stops there.  Nothing more is leased or
 * retried, each lease keeps only the seed that may be running, the seeds
 * that ran keep their attempt as their verdict, the rest have none; exit
 * 78.  The journal replays to the same stop.
 */
static void
test_early_stop(void **state)
{
	struct coord		*c = mk(0, 19), *r;
	json_t			*log = json_array(), *a, *b;
	struct msg		 r1, r2, rep;
	uint32_t		 w1, w2, keep;
	const struct coord_seed	*s;
	uint64_t		 n, i, done = 0;

	(void)state;
	cfg.path = "soak.yaml";
	coord_on_event(c, record_event, log);
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);	/* 0..4 */
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);	/* 5..9 */
	assert_int_equal(r1.u.lease.nseeds, 5);
	assert_int_equal(r2.u.lease.seeds[0].seed, 5);
	assert_int_equal(result_ce(c, w1, r1.u.lease.lease_id, 0, 1, VERDICT_INFRA,
	    "exec", CE_EXEC, &keep), 1);
	assert_int_equal(result_ce(c, w2, r2.u.lease.lease_id, 5, 1, VERDICT_INFRA,
	    "exec", CE_EXEC, &keep), 1);
	assert_false(coord_halted(c));
	assert_null(coord_halt_reason(c));
	assert_int_equal(result_ce(c, w1, r1.u.lease.lease_id, 1, 1, VERDICT_INFRA,
	    "exec", CE_EXEC, &keep), 1);
	/* Stopped: w1 hears it in this ACK, before it would start seed 2. */
	assert_true(coord_halted(c));
	assert_int_equal(coord_halt_status(c), 78);
	assert_string_equal(coord_halt_reason(c), "a config error on the first 3 "
	    "seed(s), which no retry mends: turn.command: /x/redeem.sh: No such "
	    "file or directory");
	assert_int_equal(keep, 2);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	assert_non_null(strstr(rep.u.ack.text, "the run stopped"));
	msg_clear(&rep);
	/* w2 was running seed 6: its result counts, and is not retried. */
	assert_int_equal(result_ce(c, w2, r2.u.lease.lease_id, 6, 1, VERDICT_INFRA,
	    "exec", CE_EXEC, &keep), 1);
	assert_int_equal(keep, 2);
	s = coord_seeds(c, &n);
	for (i = 0; i < n; i++) {
		if (i == 0 || i == 1 || i == 5 || i == 6) {
			assert_int_equal(s[i].state, CSEED_FINAL);
			assert_int_equal(s[i].verdict, VERDICT_INFRA);
			assert_int_equal(s[i].why, REASON_EXEC);
			assert_int_equal(nattempts(&s[i]), 1);
			assert_non_null(json_object_get(s[i].detail, "config_error"));
			done++;
		} else
			assert_int_not_equal(s[i].state, CSEED_FINAL);
	}
	assert_int_equal(done, 4);
	assert_false(coord_finished(c));
	/* The journal so far stops a fresh coordinator in the same place. */
	r = replayed(log, json_array_size(log), 0, 19);
	a = coord_dump(c);
	b = coord_dump(r);
	assert_true(json_equal(a, b));
	assert_true(coord_halted(r));
	assert_int_equal(coord_halt_status(r), 78);
	json_decref(a);
	json_decref(b);
	coord_free(r);
	json_decref(log);
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
	cfg.path = NULL;
}

/* Runs seeds first..first+k-1 of one lease with the details given. */
static void
early_run(struct coord *c, uint32_t w, const char *const *details, size_t k)
{
	struct msg	l;
	uint32_t	keep;
	size_t		i;

	assert_int_equal(lease(c, w, w, 0, &l), 1);
	assert_int_equal(l.type, MSG_LEASE);
	for (i = 0; i < k && i < l.u.lease.nseeds; i++) {
		bool	pass = details[i] == NULL;

		assert_int_equal(result_ce(c, w, l.u.lease.lease_id,
		    l.u.lease.seeds[i].seed, l.u.lease.seeds[i].attempt,
		    pass ? VERDICT_PASS : VERDICT_INFRA, pass ? "" : "exec",
		    pass ? "{\"message\":\"m\"}" : details[i], &keep), 1);
	}
	msg_clear(&l);
}

/*
 * What does not stop a run: a pass first, then the same config error;
 * two different config errors; an infra without one (a turn's exit 75).
 * What stops it with exit 2: a cause that may be the machines' (EACCES,
 * a config that does not load on the worker).  A run of one seed stops
 * at its first attempt.
 */
static void
test_early_stop_rules(void **state)
{
	static const char *const pass_first[] = { NULL, CE_EXEC, CE_EXEC, CE_EXEC };
	static const char *const two_kinds[] = { CE_EXEC, CE_SQL, CE_EXEC, CE_EXEC };
	static const char *const tempfail[] = { "{\"message\":\"exit 75\"}",
	    CE_EXEC, CE_EXEC, CE_EXEC };
	static const char *const acces[] = { CE_ACCES, CE_ACCES, CE_ACCES };
	static const char *const load[] = { CE_LOAD, CE_LOAD, CE_LOAD };
	static const char *const sql[] = { CE_SQL, CE_SQL, CE_SQL };
	struct coord	*c;

	(void)state;
	c = mk(0, 19);
	early_run(c, hello(c, 1), pass_first, 4);
	assert_false(coord_halted(c));
	coord_free(c);
	c = mk(0, 19);
	early_run(c, hello(c, 1), two_kinds, 4);
	assert_false(coord_halted(c));
	coord_free(c);
	c = mk(0, 19);
	early_run(c, hello(c, 1), tempfail, 4);
	assert_false(coord_halted(c));
	assert_int_equal(coord_halt_status(c), 0);
	coord_free(c);
	c = mk(0, 19);
	early_run(c, hello(c, 1), acces, 3);
	assert_true(coord_halted(c));
	assert_int_equal(coord_halt_status(c), 2);
	assert_int_equal(report_exit_status(c), 2);
	coord_free(c);
	c = mk(0, 19);
	early_run(c, hello(c, 1), load, 3);
	assert_int_equal(coord_halt_status(c), 2);
	coord_free(c);
	c = mk(0, 19);
	early_run(c, hello(c, 1), sql, 3);
	assert_int_equal(coord_halt_status(c), 78);
	assert_int_equal(report_exit_status(c), 78);
	coord_free(c);
	/* One seed: its first attempt is all there is to look at. */
	c = mk(7, 7);
	early_run(c, hello(c, 1), sql, 1);
	assert_true(coord_halted(c));
	assert_true(coord_finished(c));
	assert_int_equal(coord_halt_status(c), 78);
	coord_free(c);
}

/* A draining worker says bye between seeds: nothing is lost, all goes back. */
static void
test_bye_hands_back_unstarted(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 r1, r2, req = { .type = MSG_BYE }, rep;
	uint32_t		 w1, w2, keep, i;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, r1.u.lease.seeds[0].seed,
	    1, VERDICT_PASS, "", &keep), 1);
	req.u.bye.worker_id = w1;
	req.u.bye.drain = 1;
	assert_int_equal(coord_handle(c, &req, 1, 0, &rep), 1);
	assert_int_equal(rep.u.ack.ok, 1);
	msg_clear(&rep);
	s = coord_seeds(c, &n);
	for (i = 1; i < r1.u.lease.nseeds; i++) {
		const struct coord_seed	*t = &s[r1.u.lease.seeds[i].seed];

		assert_int_equal(t->state, CSEED_PENDING);
		assert_int_equal(t->attempts, 0);
		assert_int_equal(nattempts(t), 0);
	}
	/* w2 gets them, as first attempts. */
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_true(r2.u.lease.seeds[0].seed == r1.u.lease.seeds[1].seed);
	assert_int_equal(r2.u.lease.seeds[0].attempt, 1);
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
}

/*
 * A worker that says hello once every seed has its verdict is told the run
 * is over (DONE, "run finished"), not welcomed: it joins nothing, and its
 * worker process exits 0 (worker/worker.c).
 */
static void
test_hello_after_the_run_finished(void **state)
{
	struct coord	*c = mk(0, 1);
	struct msg	 r1, req = { .type = MSG_HELLO }, rep;
	uint32_t	 w1, i;

	(void)state;
	w1 = hello(c, 1);
	while (!coord_finished(c)) {
		assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
		assert_int_equal(r1.type, MSG_LEASE);
		for (i = 0; i < r1.u.lease.nseeds; i++)
			assert_int_equal(result(c, w1, 1, r1.u.lease.lease_id,
			    r1.u.lease.seeds[i].seed, 1, VERDICT_PASS, ""), 1);
		msg_clear(&r1);
	}
	req.u.hello.name = "late";
	req.u.hello.host = "h";
	assert_int_equal(coord_handle(c, &req, 2, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	assert_string_equal(rep.u.ack.text, "run finished");
	msg_clear(&rep);
	/* Not a worker of the run: it is not awaited, and speaks for nobody. */
	assert_int_equal(coord_live_workers(c), 1);
	/* A worker of the run that rejoins after the end hears the same. */
	req.u.hello.rejoin_id = w1;
	req.u.hello.rejoin_run = "r";
	assert_int_equal(coord_handle(c, &req, 3, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	msg_clear(&rep);
	coord_free(c);
}

/*
 * soak run's view of its local workers (cmd/run.c): a worker whose
 * process died ends its lease at once, not at its ttl (the seed it ran
 * gets infra/worker-lost, the rest go back); whether a pid ever had a
 * result accepted tells a failed start.  coord_halt (the output directory
 * cannot be written) leases nothing more, lets the running seed report,
 * ends the seed waiting for a retry with its last attempt, and leaves the
 * rest without a verdict.
 */
/* A coord_final_cb: appends each seed made final to the array arg. */
static void
note_final(struct coord *c, const struct coord_seed *s, void *arg)
{
	(void)c;
	json_array_append_new(arg, json_integer((json_int_t)s->seed));
}

static void
test_worker_died_and_halt(void **state)
{
	struct coord		*c = mk(0, 99);
	struct msg		 req = { .type = MSG_HELLO }, rep, r1, r2, r3;
	const struct coord_seed	*s;
	struct coord_counts	 n;
	json_t			*finals = json_array();
	uint32_t		 w1, w2, i;
	uint64_t		 ns, run2;

	(void)state;
	coord_on_final(c, note_final, finals);
	req.u.hello.name = "w";
	req.u.hello.host = "h";
	req.u.hello.pid = 101;
	assert_int_equal(coord_handle(c, &req, 1, 0, &rep), 1);
	w1 = rep.u.welcome.worker_id;
	msg_clear(&rep);
	req.u.hello.pid = 102;
	assert_int_equal(coord_handle(c, &req, 2, 0, &rep), 1);
	w2 = rep.u.welcome.worker_id;
	msg_clear(&rep);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_true(r2.u.lease.nseeds >= 2);
	assert_false(coord_pid_reported(c, 101));
	assert_int_equal(result(c, w1, 1, r1.u.lease.lease_id, r1.u.lease.seeds[0].seed,
	    1, VERDICT_PASS, ""), 1);
	assert_true(coord_pid_reported(c, 101));
	assert_false(coord_pid_reported(c, 102));
	assert_false(coord_pid_reported(c, 999));

	/* w2's process died: its lease ends now (time 0), far before its ttl. */
	coord_worker_died(c, 102, "its process died (signal 9)");
	coord_worker_died(c, 999, "nobody");	/* unknown pid: nothing */
	assert_int_equal(coord_live_workers(c), 1);
	s = coord_seeds(c, &ns);
	run2 = r2.u.lease.seeds[0].seed;
	assert_int_equal(s[run2].state, CSEED_PENDING);
	assert_int_equal(nattempts(&s[run2]), 1);
	assert_string_equal(hist(&s[run2], 0, "reason"), "worker-lost");
	assert_string_equal(hist(&s[run2], 0, "message"), "its process died (signal 9)");
	for (i = 1; i < r2.u.lease.nseeds; i++) {
		assert_int_equal(s[r2.u.lease.seeds[i].seed].state, CSEED_PENDING);
		assert_int_equal(nattempts(&s[r2.u.lease.seeds[i].seed]), 0);
	}

	/* The disk is full: nothing more is leased, w1's running seed reports. */
	assert_int_equal(json_array_size(finals), 1);	/* w1's first seed */
	coord_halt(c, 2, "the output directory cannot be written (disk full)");
	assert_true(coord_halted(c));
	/* the retry that will never run is final, and said so (failures/) */
	assert_int_equal(json_array_size(finals), 2);
	assert_int_equal(json_integer_value(json_array_get(finals, 1)), run2);
	assert_string_equal(coord_halt_reason(c),
	    "the output directory cannot be written (disk full)");
	assert_int_equal(coord_halt_status(c), 2);
	assert_int_equal(result(c, w1, 1, r1.u.lease.lease_id, r1.u.lease.seeds[1].seed,
	    1, VERDICT_PASS, ""), 1);
	assert_int_equal(lease(c, w1, 1, 0, &r3), 1);
	assert_int_equal(r3.type, MSG_DONE);
	msg_clear(&r3);
	s = coord_seeds(c, &ns);
	assert_int_equal(s[run2].state, CSEED_FINAL);
	assert_int_equal(s[run2].verdict, VERDICT_INFRA);
	assert_int_equal(s[run2].why, REASON_WORKER_LOST);
	coord_counts(c, &n);
	assert_int_equal(n.pass, 2);
	assert_int_equal(n.infra, 1);
	assert_int_equal(n.done, 3);
	assert_false(coord_finished(c));
	/* A second stop changes nothing. */
	coord_halt(c, 78, "again");
	assert_int_equal(coord_halt_status(c), 2);
	assert_int_equal(json_array_size(finals), 3);
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
	json_decref(finals);
}

/* --- the journal's replay rebuilds the state exactly --- */

static void
record_event(struct coord *c, enum jev type, json_t *e, void *arg)
{
	(void)c;
	json_array_append_new(arg, json_pack("{s:s, s:o}", "t", jev_name(type),
	    "e", e));
}

/* A fresh coordinator with the first n events of log replayed into it. */
static struct coord *
replayed(json_t *log, size_t n, uint64_t first, uint64_t last)
{
	struct coord	*r;
	char		 err[ERR_LEN];
	size_t		 i;

	r = mk(first, last);
	for (i = 0; i < n; i++) {
		json_t	*ev = json_array_get(log, i);

		if (coord_replay(r, jev_parse(json_string_value(json_object_get(ev, "t"))),
		    json_object_get(ev, "e"), err) == -1)
			fail_msg("event %zu: %s", i, err);
	}
	return r;
}

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Random runs — workers joining, leaving, rejoining, draining, taking
 * seeds from each other, results of every kind, leases expiring, the
 * confirming re-runs — and at random moments the journal so far is
 * replayed into a fresh coordinator: its state must equal the live one's,
 * but for the clock and the connections.
 */
static void
test_replay_rebuilds_the_state(void **state)
{
	enum { NW = 5, NS = 40 };
	static const char *const outcomes[][2] = {
		{ "", "" }, { "", "" }, { "", "" }, { "", "" },
		{ "", "{\"message\":\"m\",\"coverage\":{\"proxies\":{\"db\":"
		    "{\"exchanges\":3,\"steps\":2,\"forced\":{\"arrival\":1}}}}}" },
		{ "invariant", "{\"message\":\"m\",\"invariants\":[{\"name\":\"a\"}],"
		    "\"coverage\":{\"proxies\":{\"db\":{\"exchanges\":5,\"steps\":4}}}}" },
		{ "crash", "{\"message\":\"m\"}" }, { "db", "{\"message\":\"m\"}" },
		{ "service", "{\"message\":\"m\"}" }, { "worker-lost", "{\"message\":\"m\"}" },
	};
	uint64_t	 x = 88172645463325252ULL;
	int		 run, checks = 0;

	(void)state;
	for (run = 0; run < 30; run++) {
		struct coord	*c = mk(0, NS - 1);
		json_t		*log = json_array();
		struct {
			uint32_t	id, pipe;
			bool		has, alive;
			struct msg	l;
			uint32_t	next, keep;
		} wk[NW];
		uint32_t	 nw = 0, pipes = 0, i;
		int64_t		 now = 0;
		int		 steps = 0;

		memset(wk, 0, sizeof(wk));
		cfg.confirm = run & 1;
		coord_on_event(c, record_event, log);
		while (!coord_finished(c) && steps++ < 4000) {
			uint32_t	op = (uint32_t)(rnd(&x) % 100), k;
			struct msg	rep;

			k = nw ? (uint32_t)(rnd(&x) % nw) : 0;
			now += (int64_t)(rnd(&x) % 120);
			if (nw < NW && (nw == 0 || op < 4)) {
				wk[nw].pipe = ++pipes;
				wk[nw].id = hello(c, wk[nw].pipe);
				wk[nw].alive = true;
				nw++;
			} else if (!wk[k].alive) {
				/* It comes back, rejoining as itself. */
				struct msg	req = { .type = MSG_HELLO };

				req.u.hello.name = "w";
				req.u.hello.host = "h";
				req.u.hello.rejoin_id = wk[k].id;
				req.u.hello.rejoin_run = "r";
				wk[k].pipe = ++pipes;
				assert_int_equal(coord_handle(c, &req, wk[k].pipe, now, &rep), 1);
				if (rep.u.welcome.worker_id != wk[k].id)
					wk[k].id = rep.u.welcome.worker_id;
				msg_clear(&rep);
				wk[k].alive = true;
			} else if (!wk[k].has) {
				if (lease(c, wk[k].id, wk[k].pipe, now, &rep) == 1) {
					if (rep.type == MSG_LEASE) {
						wk[k].l = rep;
						wk[k].has = true;
						wk[k].next = 0;
						wk[k].keep = rep.u.lease.nseeds;
					} else
						msg_clear(&rep);
				}
			} else if (op < 75) {
				const struct msg_seed	*sd = &wk[k].l.u.lease.seeds[wk[k].next];
				uint32_t		 o = (uint32_t)(rnd(&x) % 10);
				int			 v = *outcomes[o][0] == '\0' ? VERDICT_PASS :
							    reason_verdict(reason_parse(outcomes[o][0]));
				uint32_t		 keep = wk[k].keep;
				struct msg		 req = { .type = MSG_RESULT };

				req.u.result.worker_id = wk[k].id;
				req.u.result.lease_id = wk[k].l.u.lease.lease_id;
				req.u.result.seed = sd->seed;
				req.u.result.attempt = sd->attempt;
				req.u.result.verdict = (uint8_t)v;
				req.u.result.reason = UNCONST(outcomes[o][0]);
				req.u.result.detail = UNCONST(*outcomes[o][1] ? outcomes[o][1] :
				    "{\"message\":\"m\"}");
				assert_int_equal(coord_handle(c, &req, wk[k].pipe, now, &rep), 1);
				if (rep.u.ack.ok && rep.u.ack.keep < keep)
					keep = rep.u.ack.keep;
				if (!rep.u.ack.ok || ++wk[k].next >= keep) {
					wk[k].has = false;
					msg_clear(&wk[k].l);
				} else
					wk[k].keep = keep;
				msg_clear(&rep);
			} else if (op < 85) {
				(void)beat(c, wk[k].id, wk[k].pipe, now, wk[k].l.u.lease.lease_id, 0);
			} else if (op < 92) {
				coord_pipe_closed(c, wk[k].pipe, now);
				wk[k].alive = false;
				wk[k].has = false;
				msg_clear(&wk[k].l);
			} else {
				now += 600;
				coord_tick(c, now);
			}
			for (i = 0; i < nw; i++)
				if (wk[i].alive && !wk[i].has &&
				    coord_serve(c, wk[i].id, now, &rep) == 1)
					msg_clear(&rep);
			/* Now and then: does the journal so far rebuild it? */
			if (rnd(&x) % 97 == 0 || coord_finished(c)) {
				struct coord	*r = replayed(log, json_array_size(log), 0, NS - 1);
				json_t		*a = coord_dump(c), *b = coord_dump(r);

				if (!json_equal(a, b)) {
					char	*sa = json_dumps(a, JSON_COMPACT);
					char	*sb = json_dumps(b, JSON_COMPACT);

					print_message("live:     %s\nreplayed: %s\n", sa, sb);
					free(sa);
					free(sb);
					fail_msg("run %d step %d: the replay differs", run, steps);
				}
				checks++;
				json_decref(a);
				json_decref(b);
				coord_free(r);
			}
		}
		for (i = 0; i < nw; i++)
			if (wk[i].has)
				msg_clear(&wk[i].l);
		json_decref(log);
		coord_free(c);
	}
	cfg.confirm = false;
	print_message("%d replays compared\n", checks);
	assert_true(checks >= 30);
}

static void
test_chunks_shrink_and_cover(void **state)
{
	struct coord		*c = mk(100, 199);
	struct msg		 rep;
	uint32_t		 w1, w2, i, got = 0, last = 1000;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	while (!coord_finished(c)) {
		uint32_t	w = (got & 1) ? w2 : w1;

		assert_int_equal(lease(c, w, w, 0, &rep), 1);
		assert_int_equal(rep.type, MSG_LEASE);
		assert_true(rep.u.lease.nseeds <= last);	/* never grows */
		last = rep.u.lease.nseeds;
		for (i = 0; i < rep.u.lease.nseeds; i++)
			assert_int_equal(result(c, w, w, rep.u.lease.lease_id,
			    rep.u.lease.seeds[i].seed, 1, VERDICT_PASS, ""), 1);
		got++;
		msg_clear(&rep);
	}
	assert_int_equal(last, 1);		/* the tail is handed out one by one */
	s = coord_seeds(c, &n);
	assert_int_equal(n, 100);
	for (i = 0; i < n; i++) {
		assert_int_equal(s[i].state, CSEED_FINAL);
		assert_int_equal(s[i].attempts, 1);
	}
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	msg_clear(&rep);
	coord_free(c);
}

static void
test_expiry_refuses_late_result_and_retries_elsewhere(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 rep, rep2;
	uint64_t		 l1, n, first, second;
	const struct coord_seed	*s;
	uint32_t		 w1, w2;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_true(rep.u.lease.nseeds >= 3);
	l1 = rep.u.lease.lease_id;
	first = rep.u.lease.seeds[0].seed;
	second = rep.u.lease.seeds[1].seed;
	assert_int_equal(result(c, w1, 1, l1, first, 1, VERDICT_PASS, ""), 1);
	/* A result twice (its ACK lost) is acknowledged and counts once. */
	assert_int_equal(result(c, w1, 1, l1, first, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(nattempts(&coord_seeds(c, &n)[first]), 1);
	/* No heartbeat past the ttl: the lease expires. */
	coord_tick(c, 5000);
	assert_int_equal(result(c, w1, 1, l1, second, 1, VERDICT_PASS, ""), 0);
	s = coord_seeds(c, &n);
	assert_int_equal(s[second].state, CSEED_PENDING);
	assert_int_equal(nattempts(&s[second]), 1);
	assert_string_equal(hist(&s[second], 0, "reason"), "worker-lost");
	/* The lost seed goes to the other worker, as a second attempt. */
	assert_int_equal(lease(c, w2, 2, 5000, &rep2), 1);
	assert_int_equal(rep2.u.lease.nseeds, 1);
	assert_true(rep2.u.lease.seeds[0].seed == second);
	assert_int_equal(rep2.u.lease.seeds[0].attempt, 2);
	assert_int_equal(result(c, w2, 2, rep2.u.lease.lease_id, second, 2,
	    VERDICT_PASS, ""), 1);
	assert_int_equal(s[second].state, CSEED_FINAL);
	msg_clear(&rep);
	msg_clear(&rep2);
	coord_free(c);
}

/*
 * The real hazard of a late result: it arrives after its seed went to
 * another worker.  The stale worker's result changes nothing; the new
 * worker's is the verdict.  The same for a seed of the lost lease that
 * never started: it is leased again under the same attempt number, so only
 * the lease tells the two results apart.
 */
static void
test_late_result_after_release_refused(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 rep;
	struct coord_counts	 cnt;
	const struct coord_seed	*s;
	uint64_t		 l1, l2, l3, n;
	uint32_t		 w1, w2;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	s = coord_seeds(c, &n);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 3);	/* ceil(10 / (2 * 2)) */
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	assert_int_equal(rep.u.lease.seeds[1].seed, 1);
	assert_int_equal(rep.u.lease.seeds[2].seed, 2);
	l1 = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_PASS, ""), 1);
	/* w1 falls silent: seed 1 was running, seed 2 never started. */
	coord_tick(c, 5000);
	assert_int_equal(s[1].state, CSEED_PENDING);
	assert_int_equal(s[2].state, CSEED_PENDING);

	/* Seed 1 goes to w2, as attempt 2. */
	assert_int_equal(lease(c, w2, 2, 5000, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 1);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* Then w1's late result for it arrives: refused, and nothing changes. */
	assert_int_equal(result_at(c, w1, 1, 5100, l1, 1, 1, VERDICT_FAIL,
	    "invariant"), 0);
	assert_int_equal(s[1].state, CSEED_LEASED);
	assert_int_equal(s[1].attempts, 2);
	assert_int_equal(nattempts(&s[1]), 1);
	assert_string_equal(hist(&s[1], 0, "reason"), "worker-lost");
	coord_counts(c, &cnt);
	assert_int_equal(cnt.done, 1);
	assert_int_equal(cnt.fail, 0);
	/* w2's result for the attempt it holds is the final verdict... */
	assert_int_equal(result_at(c, w2, 2, 5200, l2, 1, 2, VERDICT_PASS, ""), 1);
	assert_int_equal(s[1].state, CSEED_FINAL);
	assert_int_equal(s[1].verdict, VERDICT_PASS);
	assert_int_equal(s[1].worker, w2);
	assert_int_equal(nattempts(&s[1]), 2);
	assert_int_equal(hist_worker(&s[1], 1), w2);
	assert_string_equal(hist(&s[1], 1, "verdict"), "pass");
	/* ...and stays it. */
	assert_int_equal(result_at(c, w1, 1, 5300, l1, 1, 1, VERDICT_FAIL,
	    "invariant"), 0);
	assert_int_equal(s[1].verdict, VERDICT_PASS);
	assert_int_equal(nattempts(&s[1]), 2);

	/* Seed 2 is leased again to w2, as attempt 1 again. */
	assert_int_equal(lease(c, w2, 2, 5300, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.seeds[0].seed, 2);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 1);
	l3 = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result_at(c, w1, 1, 5400, l1, 2, 1, VERDICT_FAIL,
	    "invariant"), 0);
	assert_int_equal(s[2].state, CSEED_LEASED);
	assert_int_equal(nattempts(&s[2]), 0);
	assert_int_equal(result_at(c, w2, 2, 5500, l3, 2, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(s[2].state, CSEED_FINAL);
	assert_int_equal(s[2].verdict, VERDICT_PASS);
	assert_int_equal(s[2].worker, w2);
	assert_int_equal(nattempts(&s[2]), 1);
	coord_counts(c, &cnt);
	assert_int_equal(cnt.done, 3);
	assert_int_equal(cnt.pass, 3);
	coord_free(c);
}

/*
 * A seed reported once under a lease that is still active may not be
 * reported again under it, not even once its infra retry is leased
 * elsewhere.
 */
static void
test_second_result_in_active_lease_refused(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 rep;
	struct coord_counts	 cnt;
	const struct coord_seed	*s;
	uint64_t		 l1, l2, n;
	uint32_t		 w1, w2;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	s = coord_seeds(c, &n);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 3);
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	l1 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* Seed 0 is infra: not final, back for a retry; l1 stays active. */
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_INFRA, "db"), 1);
	assert_int_equal(s[0].state, CSEED_PENDING);
	coord_counts(c, &cnt);
	assert_int_equal(cnt.retries, 1);
	/* The same result again under the same lease (its ACK was lost):
	 * acknowledged, and nothing changes. */
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_INFRA, "db"), 1);
	assert_int_equal(nattempts(&s[0]), 1);
	/* The retry goes to w2 as attempt 2... */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* ...and w1's report, if it comes again, changes nothing, whatever
	 * it says: attempt 1 was recorded once. */
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_INFRA, "db"), 1);
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_FAIL, "invariant"), 1);
	assert_int_equal(s[0].state, CSEED_LEASED);
	assert_int_equal(s[0].infra, 1);
	assert_int_equal(nattempts(&s[0]), 1);
	assert_string_equal(hist(&s[0], 0, "reason"), "db");
	coord_counts(c, &cnt);
	assert_int_equal(cnt.retries, 1);
	assert_int_equal(cnt.done, 0);
	/* l1 is whole: w1 finishes its other seeds. */
	assert_int_equal(result(c, w1, 1, l1, 1, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(result(c, w1, 1, l1, 2, 1, VERDICT_PASS, ""), 1);
	/* w2's attempt is the verdict. */
	assert_int_equal(result(c, w2, 2, l2, 0, 2, VERDICT_PASS, ""), 1);
	assert_int_equal(s[0].state, CSEED_FINAL);
	assert_int_equal(s[0].verdict, VERDICT_PASS);
	assert_int_equal(s[0].worker, w2);
	assert_int_equal(nattempts(&s[0]), 2);
	coord_free(c);
}

/*
 * A worker that heartbeats within the ttl keeps its lease however long its
 * seeds run; one that stops loses it a ttl after its last beat.
 */
static void
test_heartbeats_keep_the_lease(void **state)
{
	struct coord		*c = mk(0, 5);
	struct msg		 rep;
	struct coord_counts	 cnt;
	const struct coord_seed	*s;
	uint64_t		 lid, n, i;
	int64_t			 t;
	uint32_t		 w;

	(void)state;
	w = hello(c, 1);
	s = coord_seeds(c, &n);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 3);	/* ceil(6 / 2) */
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* A beat every 500 ms against a 1000 ms ttl, for ten ttls. */
	for (t = 500; t <= 10000; t += 500) {
		coord_tick(c, t);
		assert_int_equal(beat(c, w, 1, t, lid, 0), 1);
	}
	coord_tick(c, 10000);
	for (i = 0; i < 3; i++) {
		assert_int_equal(result_at(c, w, 1, 10000, lid, i, 1, VERDICT_PASS,
		    ""), 1);
		assert_int_equal(s[i].state, CSEED_FINAL);
		assert_int_equal(s[i].verdict, VERDICT_PASS);
		assert_int_equal(s[i].attempts, 1);
		assert_int_equal(nattempts(&s[i]), 1);
		assert_string_equal(hist(&s[i], 0, "verdict"), "pass");
	}
	coord_counts(c, &cnt);
	assert_int_equal(cnt.retries, 0);

	/* The next lease gets one beat, then silence. */
	assert_int_equal(lease(c, w, 1, 10000, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 2);	/* ceil(3 / 2) */
	assert_int_equal(rep.u.lease.seeds[0].seed, 3);
	assert_int_equal(rep.u.lease.seeds[1].seed, 4);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(beat(c, w, 1, 10500, lid, 3), 1);
	coord_tick(c, 11499);
	assert_int_equal(s[3].state, CSEED_LEASED);
	coord_tick(c, 11500);
	assert_int_equal(s[3].state, CSEED_PENDING);
	assert_int_equal(nattempts(&s[3]), 1);
	assert_string_equal(hist(&s[3], 0, "reason"), "worker-lost");
	assert_int_equal(s[4].state, CSEED_PENDING);
	assert_int_equal(nattempts(&s[4]), 0);
	/* Its beats and results under that lease are refused now. */
	assert_int_equal(beat(c, w, 1, 11600, lid, 3), 0);
	assert_int_equal(result_at(c, w, 1, 11600, lid, 3, 1, VERDICT_PASS, ""), 0);
	assert_int_equal(nattempts(&s[3]), 1);
	coord_free(c);
}

/*
 * When a lease of five seeds is lost after its first result, the second
 * was running (worker-lost, retried) and the other three never started:
 * each of them is leased again, once, and the run ends with every seed
 * final.
 */
static void
test_lost_lease_requeues_unstarted_seeds(void **state)
{
	struct coord		*c = mk(0, 19);
	struct msg		 rep;
	struct coord_counts	 cnt;
	const struct coord_seed	*s;
	uint64_t		 l1, n, seed;
	uint32_t		 w1, w2, i, leased[20] = { 0 }, attempt[20] = { 0 };

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	s = coord_seeds(c, &n);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 5);	/* ceil(20 / (2 * 2)) */
	for (i = 0; i < 5; i++) {
		assert_int_equal(rep.u.lease.seeds[i].seed, i);
		assert_int_equal(rep.u.lease.seeds[i].attempt, 1);
	}
	l1 = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result(c, w1, 1, l1, 0, 1, VERDICT_PASS, ""), 1);
	coord_tick(c, 5000);
	/* w2 runs whatever it is given until the run ends. */
	while (!coord_finished(c) && lease(c, w2, 2, 5000, &rep) == 1) {
		assert_int_equal(rep.type, MSG_LEASE);
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			seed = rep.u.lease.seeds[i].seed;
			assert_in_range(seed, 1, 19);
			leased[seed]++;
			attempt[seed] = rep.u.lease.seeds[i].attempt;
			assert_int_equal(result_at(c, w2, 2, 5000, rep.u.lease.lease_id,
			    seed, attempt[seed], VERDICT_PASS, ""), 1);
		}
		msg_clear(&rep);
	}
	/* Seed 1 was running: a second attempt, after its worker-lost one. */
	assert_int_equal(leased[1], 1);
	assert_int_equal(attempt[1], 2);
	assert_int_equal(nattempts(&s[1]), 2);
	assert_string_equal(hist(&s[1], 0, "reason"), "worker-lost");
	/* Seeds 2, 3 and 4 never ran: leased again once, as attempt 1. */
	for (seed = 2; seed <= 4; seed++) {
		assert_int_equal(leased[seed], 1);
		assert_int_equal(attempt[seed], 1);
		assert_int_equal(s[seed].attempts, 1);
		assert_int_equal(nattempts(&s[seed]), 1);
	}
	for (seed = 5; seed < 20; seed++)
		assert_int_equal(leased[seed], 1);
	assert_true(coord_finished(c));
	for (seed = 1; seed < 20; seed++) {
		assert_int_equal(s[seed].state, CSEED_FINAL);
		assert_int_equal(s[seed].verdict, VERDICT_PASS);
		assert_int_equal(s[seed].worker, w2);
	}
	assert_int_equal(s[0].state, CSEED_FINAL);
	assert_int_equal(s[0].worker, w1);
	coord_counts(c, &cnt);
	assert_int_equal(cnt.done, 20);
	assert_int_equal(cnt.pass, 20);
	assert_int_equal(cnt.retries, 1);
	coord_free(c);
}

/*
 * Only an accepted result is a sign of life: refused results — under
 * another worker's lease, or for a seed the lease does not hold open —
 * do not keep a silent lease alive, and a worker that said bye gets no
 * new lease.
 */
static void
test_refused_results_are_no_sign_of_life(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 rep, bye = { .type = MSG_BYE }, brep;
	uint64_t		 l1, s0;
	uint32_t		 w1, w2;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	l1 = rep.u.lease.lease_id;
	s0 = rep.u.lease.seeds[0].seed;
	msg_clear(&rep);
	/* w2 posts under w1's lease, w1 posts a seed it does not hold: both
	 * refused, and neither moves w1's deadline (ttl 1000). */
	assert_int_equal(result_at(c, w2, 2, 900, l1, s0, 1, VERDICT_PASS, ""), 0);
	assert_int_equal(result_at(c, w1, 1, 900, l1, 9999, 1, VERDICT_PASS, ""), 0);
	coord_tick(c, 1000);
	assert_int_equal(beat(c, w1, 1, 1000, l1, s0), 0);
	assert_int_equal(result_at(c, w1, 1, 1000, l1, s0, 1, VERDICT_PASS, ""), 0);

	/* A worker that said bye is not leased to again. */
	bye.u.bye.worker_id = w2;
	assert_int_equal(coord_handle(c, &bye, 2, 1000, &brep), 1);
	assert_int_equal(brep.u.ack.ok, 1);
	msg_clear(&brep);
	assert_int_equal(lease(c, w2, 2, 1000, &rep), 1);
	assert_int_equal(rep.type, MSG_NACK);
	msg_clear(&rep);
	coord_free(c);
}

static void
test_pipe_close_and_infra_retries(void **state)
{
	struct coord		*c = mk(7, 7);
	struct msg		 rep;
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w1, w2, w, a;

	(void)state;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	/* Infra three times (retries: 2), alternating workers, then final. */
	for (a = 1; a <= 3; a++) {
		w = (a & 1) ? w1 : w2;
		assert_int_equal(lease(c, w, w, 0, &rep), 1);
		assert_int_equal(rep.type, MSG_LEASE);
		assert_int_equal(rep.u.lease.seeds[0].attempt, a);
		/* The same worker may not take it back while another is alive. */
		if (a > 1) {
			struct msg	r2;

			assert_int_equal(lease(c, w == w1 ? w2 : w1, w == w1 ? w2 : w1, 0, &r2), 0);
		}
		assert_int_equal(result(c, w, w, rep.u.lease.lease_id, 7, a,
		    VERDICT_INFRA, "tempfail"), 1);
		msg_clear(&rep);
	}
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_FINAL);
	assert_int_equal(s[0].verdict, VERDICT_INFRA);
	assert_int_equal(nattempts(&s[0]), 3);
	assert_true(coord_finished(c));
	coord_free(c);

	/* A closed pipe leaves the lease to its ttl: the worker may rejoin. */
	c = mk(0, 3);
	w1 = hello(c, 11);
	assert_int_equal(lease(c, w1, 11, 0, &rep), 1);
	coord_pipe_closed(c, 11, 1);
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_LEASED);
	assert_int_equal(coord_live_workers(c), 0);
	/* A worker may speak only from its own pipe... */
	{
		struct msg	r2;

		assert_int_equal(lease(c, w1, 12, 0, &r2), 1);
		assert_int_equal(r2.type, MSG_NACK);
		msg_clear(&r2);
	}
	/* ...until it rejoins from another, as itself, in the same run. */
	{
		struct msg	req = { .type = MSG_HELLO }, r2;

		req.u.hello.name = "w";
		req.u.hello.host = "h";
		req.u.hello.rejoin_id = w1;
		req.u.hello.rejoin_run = "r";
		assert_int_equal(coord_handle(c, &req, 12, 500, &r2), 1);
		assert_int_equal(r2.type, MSG_WELCOME);
		assert_int_equal(r2.u.welcome.worker_id, w1);
		msg_clear(&r2);
		/* Another run's worker id is not honoured: a new worker. */
		req.u.hello.rejoin_run = "another";
		assert_int_equal(coord_handle(c, &req, 13, 500, &r2), 1);
		assert_int_equal(r2.u.welcome.worker_id, w1 + 1);
		msg_clear(&r2);
	}
	assert_int_equal(result_at(c, w1, 12, 600, rep.u.lease.lease_id, 0, 1,
	    VERDICT_PASS, ""), 1);
	assert_int_equal(s[0].state, CSEED_FINAL);
	/* Gone for good: the rest of the lease is lost at its ttl. */
	coord_pipe_closed(c, 12, 700);
	coord_tick(c, 1599);
	assert_int_equal(s[1].state, CSEED_LEASED);
	coord_tick(c, 1600);
	assert_int_equal(s[1].state, CSEED_PENDING);
	msg_clear(&rep);
	coord_free(c);
}

/*
 * soak run starts its local workers at once, but a loaded machine may let
 * one of them say HELLO only after the other has failed a seed: the retry
 * waits for the worker that is starting (the first takes fresh seeds
 * meanwhile), and goes back to the same worker only once the other died
 * before joining or COORD_JOIN_WAIT_MS passed.
 */
static void
test_retry_waits_for_a_starting_worker(void **state)
{
	struct coord		*c = mk(0, 1);
	struct msg		 rep;
	struct msg		 req = { .type = MSG_HELLO };
	uint32_t		 w1, w2;
	uint64_t		 lid;

	(void)state;
	coord_worker_starting(c, 101, 0);
	coord_worker_starting(c, 102, 0);
	req.u.hello.name = "w";
	req.u.hello.host = "h";
	req.u.hello.pid = 101;
	assert_int_equal(coord_handle(c, &req, 1, 0, &rep), 1);
	w1 = rep.u.welcome.worker_id;
	msg_clear(&rep);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	lid = rep.u.lease.lease_id;
	assert_int_equal(rep.u.lease.nseeds, 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	msg_clear(&rep);
	assert_int_equal(result(c, w1, 1, lid, 0, 1, VERDICT_INFRA, "tempfail"), 1);
	/* Seed 0's retry is not worker 1's while worker 2 is starting: it
	 * takes the fresh seed 1 instead, then waits. */
	assert_int_equal(lease(c, w1, 1, 10, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 1);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result(c, w1, 1, lid, 1, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(lease(c, w1, 1, 10, &rep), 0);
	/* ...and worker 2, once it joins, takes it. */
	req.u.hello.pid = 102;
	assert_int_equal(coord_handle(c, &req, 2, 20, &rep), 1);
	w2 = rep.u.welcome.worker_id;
	msg_clear(&rep);
	assert_int_equal(lease(c, w2, 2, 20, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result(c, w2, 2, lid, 0, 2, VERDICT_INFRA, "tempfail"), 1);
	assert_int_equal(hist_worker(&coord_seeds(c, &(uint64_t){ 0 })[0], 1), w2);
	/* Worker 2 gone for good: the last retry is worker 1's. */
	coord_worker_died(c, 102, "its process died (signal 9)");
	assert_int_equal(lease(c, w1, 1, 30, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 3);
	msg_clear(&rep);
	coord_free(c);

	/* A start that never joins holds a retry COORD_JOIN_WAIT_MS at most. */
	c = mk(0, 0);
	coord_worker_starting(c, 201, 0);
	coord_worker_starting(c, 202, 0);
	req.u.hello.pid = 201;
	assert_int_equal(coord_handle(c, &req, 1, 0, &rep), 1);
	w1 = rep.u.welcome.worker_id;
	msg_clear(&rep);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result(c, w1, 1, lid, 0, 1, VERDICT_INFRA, "tempfail"), 1);
	assert_int_equal(lease(c, w1, 1, COORD_JOIN_WAIT_MS - 1, &rep), 0);
	assert_int_equal(lease(c, w1, 1, COORD_JOIN_WAIT_MS, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	msg_clear(&rep);
	coord_free(c);
}

/* What the coordinator logs (stderr) between capture_begin and capture_end. */
static int	cap_saved = -1;
static FILE	*cap_file;

static void
capture_begin(void)
{
	fflush(stderr);
	cap_file = tmpfile();
	assert_non_null(cap_file);
	cap_saved = dup(STDERR_FILENO);
	assert_true(cap_saved >= 0);
	assert_true(dup2(fileno(cap_file), STDERR_FILENO) >= 0);
}

static char *
capture_end(void)
{
	char	*text;
	long	 len;

	fflush(stderr);
	assert_true(dup2(cap_saved, STDERR_FILENO) >= 0);
	close(cap_saved);
	len = ftell(cap_file);
	assert_true(len >= 0);
	text = xcalloc((size_t)len + 1, 1);
	rewind(cap_file);
	assert_int_equal(fread(text, 1, (size_t)len, cap_file), (size_t)len);
	fclose(cap_file);
	return text;
}

static void
test_incoherent_result_is_infra(void **state)
{
	struct coord		*c = mk(0, 0);
	struct msg		 rep;
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w;
	char			*logged;

	(void)state;
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	/* "pass" with a failure reason is not believed, and the log says so. */
	capture_begin();
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_PASS,
	    "invariant"), 1);
	logged = capture_end();
	assert_non_null(strstr(logged, "seed 0: worker 1 sent an unreadable result "
	    "(verdict 0, reason \"invariant\")"));
	free(logged);
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_PENDING);
	assert_int_equal(s[0].infra, 1);
	assert_true(reason_valid(VERDICT_FAIL, reason_parse("hang")));
	assert_false(reason_valid(VERDICT_FAIL, reason_parse("db")));
	assert_false(reason_valid(VERDICT_INFRA, reason_parse("invariant")));
	assert_false(reason_valid(VERDICT_INFRA, reason_parse("nonsense")));
	assert_true(reason_valid(VERDICT_PASS, reason_parse("")));
	assert_false(reason_valid(VERDICT_PASS, reason_parse("worker-lost")));
	msg_clear(&rep);
	coord_free(c);
}

/* The one name table: every reason round-trips and says its verdict. */
static void
test_reason_names(void **state)
{
	int	r;

	(void)state;
	for (r = 0; r < REASON_MAX; r++) {
		assert_int_equal(reason_parse(reason_name(r)), r);
		assert_true(reason_valid(reason_verdict(r), r));
	}
	assert_string_equal(reason_name(REASON_WORKER_LOST), "worker-lost");
	assert_string_equal(reason_name(REASON_NONE), "");
	assert_int_equal(reason_verdict(REASON_TEMPFAIL), VERDICT_INFRA);
	assert_int_equal(reason_verdict(REASON_CRASH), VERDICT_FAIL);
	assert_int_equal(reason_parse("Invariant"), -1);
	assert_int_equal(reason_parse(NULL), -1);
	assert_string_equal(reason_name(REASON_MAX), "?");
	assert_false(reason_valid(VERDICT_FAIL, -1));
}

/* The ring the coordinator and the server queue into. */
static void
test_queue_ring(void **state)
{
	struct queue	q;
	uint64_t	v, i;
	struct { uint32_t a; uint8_t b; } e = { 7, 9 }, out;

	(void)state;
	queue_init(&q, sizeof(uint64_t));
	assert_false(queue_pop(&q, &v));
	/* Wrap the head round before the ring grows, then grow it. */
	for (i = 0; i < 40; i++)
		queue_push(&q, &i);
	for (i = 0; i < 30; i++) {
		assert_true(queue_pop(&q, &v));
		assert_int_equal(v, i);
	}
	for (i = 40; i < 200; i++)
		queue_push(&q, &i);
	assert_int_equal(q.len, 170);
	assert_int_equal(*(uint64_t *)queue_at(&q, 0), 30);
	assert_int_equal(*(uint64_t *)queue_at(&q, 169), 199);
	queue_remove(&q, 1);			/* 31 */
	queue_remove(&q, q.len - 1);		/* 199 */
	assert_int_equal(q.len, 168);
	assert_int_equal(*(uint64_t *)queue_at(&q, 1), 32);
	for (i = 0; i < 168; i++) {
		assert_true(queue_pop(&q, &v));
		assert_int_equal(v, i == 0 ? 30 : i + 31);
	}
	assert_false(queue_pop(&q, &v));
	queue_free(&q);
	queue_free(NULL);

	queue_init(&q, sizeof(e));
	queue_push(&q, &e);
	e.a = 8;
	queue_push(&q, &e);
	assert_true(queue_pop(&q, &out));
	assert_int_equal(out.a, 7);
	assert_int_equal(out.b, 9);
	assert_true(queue_pop(&q, &out));
	assert_int_equal(out.a, 8);
	queue_free(&q);
}


#define INV_A	"{\"message\":\"m\",\"invariants\":[{\"name\":\"A\"}]}"
#define INV_B	"{\"message\":\"m\",\"invariants\":[{\"name\":\"B\"}]}"

/* Seeds 0..5 all run on w1: 1 and 3 break A, 4 breaks B, 5 crashes. */
static void
run_all_on(struct coord *c, uint32_t w1)
{
	struct msg	rep;
	uint32_t	i;

	while (lease(c, w1, w1, 0, &rep) == 1 && rep.type == MSG_LEASE) {
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			uint64_t	seed = rep.u.lease.seeds[i].seed;

			bool		fails = seed == 1 || seed >= 3;

			assert_int_equal(result_d(c, w1, w1, rep.u.lease.lease_id, seed, 1,
			    fails ? VERDICT_FAIL : VERDICT_PASS,
			    seed == 5 ? "crash" : fails ? "invariant" : "",
			    seed == 4 ? INV_B : INV_A), 1);
		}
		msg_clear(&rep);
		if (coord_seeds(c, &(uint64_t){ 0 })[5].state == CSEED_FINAL)
			break;
	}
}

static void
test_confirm_smallest_per_bug_elsewhere(void **state)
{
	struct coord		*c = mk(0, 5);
	struct msg		 rep;
	uint32_t		 w1, w2;
	const struct coord_seed	*s;
	uint64_t		 n, lid;

	(void)state;
	cfg.confirm = true;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	run_all_on(c, w1);
	s = coord_seeds(c, &n);
	/* Every seed is final, but the run waits for three re-runs. */
	assert_false(coord_finished(c));
	/* Not on the worker that failed them while another is alive. */
	assert_int_equal(lease(c, w1, 1, 0, &rep), 0);
	/* The smallest seed of bug A (1, not 3), once, with a new attempt. */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.nseeds, 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 1);
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* A result under the old attempt number is refused. */
	assert_int_equal(result_d(c, w2, 2, lid, 1, 1, VERDICT_FAIL, "invariant", INV_A), 0);
	assert_int_equal(result_d(c, w2, 2, lid, 1, 2, VERDICT_FAIL, "invariant", INV_A), 1);
	assert_true(json_is_true(json_object_get(s[1].detail, "reproduced")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s[1].detail,
	    "confirm"), "worker")), w2);
	/* Once only: a second result for it is acknowledged, and ignored. */
	assert_int_equal(result_d(c, w2, 2, lid, 1, 2, VERDICT_PASS, "",
	    "{\"message\":\"m\"}"), 1);
	assert_true(json_is_true(json_object_get(s[1].detail, "reproduced")));
	/* Bug B's re-run passes: it did not reproduce; the verdict stands. */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 4);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result_d(c, w2, 2, lid, 4, 2, VERDICT_PASS, "", "{\"message\":\"m\"}"), 1);
	assert_true(json_is_false(json_object_get(s[4].detail, "reproduced")));
	assert_int_equal(s[4].verdict, VERDICT_FAIL);
	/* The crash's re-run loses its worker: reproduction unknown. */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 5);
	msg_clear(&rep);
	assert_false(coord_finished(c));
	coord_pipe_closed(c, 2, 0);
	coord_tick(c, 1000);		/* gone, and its lease with it */
	assert_null(json_object_get(s[5].detail, "reproduced"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    s[5].detail, "confirm"), "reason")), "worker-lost");
	/* Seed 3 shares bug A: never re-run. */
	assert_int_equal(s[3].confirm, CONFIRM_NONE);
	assert_null(json_object_get(s[3].detail, "reproduced"));
	assert_true(coord_finished(c));
	assert_int_equal(coord_serve(c, w1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	msg_clear(&rep);
	coord_free(c);
}

/* A minimize lease's result (worker/min_lease.c's record). */
#define MIN_PLAN(seed)	"{\"soak_plan\":1,\"config\":\"t\",\"seed\":" #seed ",\"turns\":4," \
	"\"rounds\":1,\"runs\":[[0,0],[0,1]],\"proxies\":{}}"
#define MIN_OK(seed, inv)	"{\"message\":\"1-minimal: turns 4 → 2\",\"minimize\":{" \
	"\"outcome\":\"minimal\",\"plan\":" MIN_PLAN(seed) ",\"story\":\"the story\"}," \
	"\"invariants\":[{\"name\":\"" inv "\"}]}"

/*
 * tickets.minimize: once every seed is final, the smallest failing seed of
 * each fingerprint is minimized on a worker, a lease of its own kind (one
 * seed, the budget, an attempt past the confirming re-run's), beside the
 * confirming re-runs; the run is not finished until each has an outcome.
 * A plan that fails as the seed did is kept ("minimized", same_failure);
 * one that fails otherwise, or is not a plan of this config, is dropped;
 * a lease lost with its worker is given again once, then the seed is
 * filed unminimized; a result under the wrong attempt is refused.  And the
 * journal rebuilds it all.
 */
static void
test_minimize_leases(void **state)
{
	struct coord		*c = mk(0, 5), *r;
	json_t			*log = json_array(), *a, *b;
	struct msg		 rep;
	uint32_t		 w1, w3;
	const struct coord_seed	*s;
	uint64_t		 n, lid, rep_lid, seen[3] = { 0 };
	size_t			 k;

	(void)state;
	cfg.confirm = true;
	cfg.turns = 4;
	cfg.rounds = 1;
	cfg.tickets.minimize = true;
	cfg.tickets.minimize_budget_ms = 90000;
	coord_on_event(c, record_event, log);
	w1 = hello(c, 1);
	(void)hello(c, 2);	/* alive: the confirming re-runs wait for it */
	run_all_on(c, w1);
	s = coord_seeds(c, &n);
	assert_false(coord_finished(c));
	/* w1 may not confirm its own failures, but minimizes them: seeds 1
	 * (bug A, not 3), 4 (bug B) and 5 (the crash), in that order */
	for (k = 0; k < 3; k++) {
		assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
		assert_int_equal(rep.type, MSG_LEASE);
		assert_int_equal(rep.u.lease.minimize_ms, 90000);
		assert_int_equal(rep.u.lease.nseeds, 1);
		assert_string_equal(rep.u.lease.plan, "");
		seen[k] = rep.u.lease.seeds[0].seed;
		assert_int_equal(rep.u.lease.seeds[0].attempt, 3);
		lid = rep.u.lease.lease_id;
		msg_clear(&rep);
		if (seen[k] == 1) {
			/* the seed's attempt, or the confirming re-run's: refused */
			assert_int_equal(result_d(c, w1, 1, lid, 1, 1, VERDICT_FAIL,
			    "invariant", MIN_OK(1, "A")), 0);
			assert_int_equal(result_d(c, w1, 1, lid, 1, 2, VERDICT_FAIL,
			    "invariant", MIN_OK(1, "A")), 0);
			assert_int_equal(result_d(c, w1, 1, lid, 1, 3, VERDICT_FAIL,
			    "invariant", MIN_OK(1, "A")), 1);
		} else if (seen[k] == 4) {
			/* a plan of another seed is no plan of this one's */
			assert_int_equal(result_d(c, w1, 1, lid, 4, 3, VERDICT_FAIL,
			    "invariant", MIN_OK(9, "B")), 1);
		} else {
			/* the worker is lost: given again (to w1 itself, below) */
			coord_pipe_closed(c, 1, 0);
			coord_tick(c, 1000);
			assert_int_equal(s[5].minimize, CONFIRM_PENDING);
			assert_null(json_object_get(s[5].detail, "minimized"));
		}
	}
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 4);
	assert_int_equal(seen[2], 5);
	assert_true(json_is_true(json_object_get(json_object_get(s[1].detail,
	    "minimized"), "same_failure")));
	assert_true(json_is_object(json_object_get(json_object_get(s[1].detail,
	    "minimized"), "plan")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    s[1].detail, "minimized"), "story")), "the story");
	assert_true(json_is_false(json_object_get(json_object_get(s[4].detail,
	    "minimized"), "same_failure")));
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(
	    s[4].detail, "minimized"), "plan_error")), "seed 9"));
	assert_null(json_object_get(json_object_get(s[4].detail, "minimized"), "plan"));
	assert_null(json_object_get(json_object_get(s[4].detail, "minimized"), "story"));
	assert_int_equal(s[4].verdict, VERDICT_FAIL);	/* the verdict stands */
	assert_null(json_object_get(s[3].detail, "minimized"));
	/* the crash's second minimize lease */
	w3 = hello(c, 3);
	/* (the confirming re-runs come first: w1 that failed them is gone) */
	while (lease(c, w3, 3, 2000, &rep) == 1 && rep.type == MSG_LEASE &&
	    rep.u.lease.minimize_ms == 0) {
		assert_int_equal(result_d(c, w3, 3, rep.u.lease.lease_id,
		    rep.u.lease.seeds[0].seed, rep.u.lease.seeds[0].attempt,
		    VERDICT_PASS, "", "{\"message\":\"m\"}"), 1);
		msg_clear(&rep);
	}
	assert_int_equal(rep.type, MSG_LEASE);
	assert_int_equal(rep.u.lease.minimize_ms, 90000);
	assert_int_equal(rep.u.lease.seeds[0].seed, 5);
	rep_lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* every confirming re-run is done: the minimize lease holds it open */
	assert_false(coord_finished(c));
	/* its minimal plan fails as bug A, not as the crash: not used */
	assert_int_equal(result_d(c, w3, 3, rep_lid, 5, 3, VERDICT_FAIL,
	    "invariant", MIN_OK(5, "A")), 1);
	assert_int_equal(s[5].minimize, CONFIRM_DONE);
	assert_true(json_is_false(json_object_get(json_object_get(s[5].detail,
	    "minimized"), "same_failure")));
	assert_null(json_object_get(json_object_get(s[5].detail, "minimized"), "plan"));
	assert_int_equal(s[5].verdict, VERDICT_FAIL);	/* the verdict stands */
	assert_true(coord_finished(c));
	/* the journal rebuilds the same state (mk resets the shared cfg) */
	r = mk(0, 5);
	cfg.confirm = true;
	cfg.turns = 4;
	cfg.rounds = 1;
	cfg.tickets.minimize = true;
	cfg.tickets.minimize_budget_ms = 90000;
	for (k = 0; k < json_array_size(log); k++) {
		json_t	*ev = json_array_get(log, k);
		char	 err[ERR_LEN];

		if (coord_replay(r, jev_parse(json_string_value(json_object_get(ev, "t"))),
		    json_object_get(ev, "e"), err) == -1)
			fail_msg("event %zu: %s", k, err);
	}
	a = coord_dump(c);
	b = coord_dump(r);
	json_object_del(a, "workers");
	json_object_del(b, "workers");
	if (!json_equal(a, b)) {
		char	*x = json_dumps(a, JSON_SORT_KEYS), *y = json_dumps(b, JSON_SORT_KEYS);

		fail_msg("the journal rebuilt another state:\n%s\n%s", x, y);
	}
	json_decref(a);
	json_decref(b);
	coord_free(r);
	coord_free(c);
	json_decref(log);
	memset(&cfg.tickets, 0, sizeof(cfg.tickets));
}

/*
 * A minimize lease lost with its worker twice: filed unminimized.  Each
 * loss is a warning in the live run, and none in the replay of its journal
 * (a resumed coordinator tells no loss twice).
 */
static void
test_minimize_lost_twice(void **state)
{
	struct coord		*c = mk(0, 0), *r;
	const struct coord_seed	*s;
	struct msg		 rep;
	json_t			*log = json_array();
	uint64_t		 n;
	uint32_t		 w;
	size_t			 i;
	char			*text, err[ERR_LEN];
	int			 k;

	(void)state;
	cfg.turns = 4;
	cfg.tickets.minimize = true;
	cfg.tickets.minimize_budget_ms = 1000;
	coord_on_event(c, record_event, log);
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_int_equal(result_d(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_FAIL,
	    "invariant", INV_A), 1);
	msg_clear(&rep);
	s = coord_seeds(c, &n);
	for (k = 0; k < 2; k++) {
		assert_false(coord_finished(c));
		w = hello(c, (uint32_t)(2 + k));
		assert_int_equal(lease(c, w, (uint32_t)(2 + k), 10000 * k, &rep), 1);
		assert_int_equal(rep.u.lease.minimize_ms, 1000);
		assert_int_equal(rep.u.lease.seeds[0].seed, 0);
		msg_clear(&rep);
		coord_pipe_closed(c, (uint32_t)(2 + k), 10000 * k);
		capture_begin();
		coord_tick(c, 10000 * k + 5000);
		text = capture_end();
		assert_non_null(strstr(text, k == 0 ? "seed 0: worker 2 lost while "
		    "minimizing it (no heartbeat before its lease expired): minimized "
		    "again" : "seed 0: worker 3 lost while minimizing it (no heartbeat "
		    "before its lease expired), 2 times: its ticket is filed "
		    "unminimized"));
		free(text);
		assert_int_equal(s[0].minimize, k == 0 ? CONFIRM_PENDING : CONFIRM_DONE);
	}
	assert_true(coord_finished(c));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    s[0].detail, "minimized"), "reason")), "worker-lost");
	assert_null(json_object_get(json_object_get(s[0].detail, "minimized"), "plan"));
	/* the replay rebuilds both losses, silently (mk resets the shared cfg) */
	r = mk(0, 0);
	cfg.turns = 4;
	cfg.tickets.minimize = true;
	cfg.tickets.minimize_budget_ms = 1000;
	capture_begin();
	for (i = 0; i < json_array_size(log); i++) {
		json_t	*ev = json_array_get(log, i);

		if (coord_replay(r, jev_parse(json_string_value(json_object_get(ev, "t"))),
		    json_object_get(ev, "e"), err) == -1)
			fail_msg("event %zu: %s", i, err);
	}
	text = capture_end();
	assert_null(strstr(text, "while minimizing"));
	free(text);
	assert_true(coord_finished(r));
	assert_int_equal(coord_seeds(r, &n)[0].minimize, CONFIRM_DONE);
	coord_free(r);
	coord_free(c);
	json_decref(log);
	memset(&cfg.tickets, 0, sizeof(cfg.tickets));
}

/*
 * The confirming re-runs' cap at its boundary: 25 distinct failures (each
 * its own invariant) get CONFIRM_MAX (20) re-runs, those of the smallest
 * 20 seeds in seed order, and the run ends after them.
 */
static void
test_confirm_cap(void **state)
{
	struct coord		*c = mk(0, 29);
	struct msg		 rep;
	uint32_t		 w1, w2, i;
	const struct coord_seed	*s;
	uint64_t		 n, want = 0;
	char			 inv[128];

	(void)state;
	cfg.confirm = true;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	while (lease(c, w1, 1, 0, &rep) == 1 && rep.type == MSG_LEASE) {
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			uint64_t	seed = rep.u.lease.seeds[i].seed;

			snprintf(inv, sizeof(inv), "{\"message\":\"m\",\"invariants\":"
			    "[{\"name\":\"I%" PRIu64 "\"}]}", seed);
			assert_int_equal(result_d(c, w1, 1, rep.u.lease.lease_id, seed, 1,
			    seed < 25 ? VERDICT_FAIL : VERDICT_PASS,
			    seed < 25 ? "invariant" : "", inv), 1);
		}
		msg_clear(&rep);
	}
	msg_clear(&rep);
	s = coord_seeds(c, &n);
	for (i = 0; i < 30; i++)
		assert_int_equal(s[i].state, CSEED_FINAL);
	while (lease(c, w2, 2, 0, &rep) == 1 && rep.type == MSG_LEASE) {
		assert_int_equal(rep.u.lease.nseeds, 1);
		if (rep.u.lease.seeds[0].seed != want)
			fail_msg("confirming re-run %" PRIu64 " is of seed %" PRIu64,
			    want, rep.u.lease.seeds[0].seed);
		snprintf(inv, sizeof(inv), "{\"message\":\"m\",\"invariants\":"
		    "[{\"name\":\"I%" PRIu64 "\"}]}", want);
		assert_int_equal(result_d(c, w2, 2, rep.u.lease.lease_id, want, 2,
		    VERDICT_FAIL, "invariant", inv), 1);
		msg_clear(&rep);
		want++;
		assert_true(want <= 25);
	}
	assert_int_equal(rep.type, MSG_DONE);
	msg_clear(&rep);
	assert_int_equal(want, 20);
	for (i = 0; i < 25; i++) {
		if (i < 20)
			assert_true(json_is_true(json_object_get(s[i].detail, "reproduced")));
		else {
			assert_int_equal(s[i].confirm, CONFIRM_NONE);
			assert_null(json_object_get(s[i].detail, "reproduced"));
		}
	}
	assert_true(coord_finished(c));
	coord_free(c);
}

static void
test_confirm_off_and_single_worker(void **state)
{
	struct coord		*c = mk(0, 5);
	struct msg		 rep;
	uint32_t		 w1;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w1 = hello(c, 1);
	run_all_on(c, w1);			/* cfg.confirm is false */
	assert_true(coord_finished(c));
	coord_free(c);

	c = mk(0, 5);
	cfg.confirm = true;
	w1 = hello(c, 1);
	run_all_on(c, w1);
	s = coord_seeds(c, &n);
	/* The only worker alive re-runs its own failures. */
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 1);
	assert_int_equal(result_d(c, w1, 1, rep.u.lease.lease_id, 1, 2, VERDICT_FAIL,
	    "invariant", INV_B), 1);		/* another bug: not reproduced */
	msg_clear(&rep);
	assert_true(json_is_false(json_object_get(s[1].detail, "reproduced")));
	/* failed, as another bug: not "did not reproduce", and both named */
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    s[1].detail, "confirm"), "outcome")), "failed_differently");
	{
		char	buf[1024];

		assert_string_equal(report_reproduced(&cfg, &s[1], buf, sizeof(buf)),
		    "failed differently: t|invariant|B, where the run failed with "
		    "t|invariant|A (another bug, or this one showing another way: it "
		    "depends on more than the seed)");
	}
	coord_free(c);
}

/*
 * Coverage counts each seed once, as it ended: not an infra attempt that
 * was retried, not a confirming re-run.  A pass's coverage goes into the
 * sums and out of its detail (which then compacts to its turn counts); a
 * failure keeps its own.  The forced decisions of each seed are kept.
 */
#define COV(n, f)	"\"coverage\":{\"proxies\":{\"db\":{\"exchanges\":" #n \
			",\"forced\":{\"arrival\":" #f "}}}}"
static void
test_coverage_counts_final_attempts(void **state)
{
	struct coord		*c = mk(0, 2);
	struct msg		 rep = { 0 };
	const struct coord_seed	*s;
	uint32_t		 w1, i;
	uint64_t		 n, lid;
	json_t			*cov, *d;

	(void)state;
	cfg.confirm = true;
	w1 = hello(c, 1);
	while (lease(c, w1, 1, 0, &rep) == 1 && rep.type == MSG_LEASE) {
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			const struct msg_seed	*sd = &rep.u.lease.seeds[i];
			uint64_t		 k = sd->seed * 10 + sd->attempt;

			lid = rep.u.lease.lease_id;
			/* 0: a pass; 1: infra, then a pass; 2: a failure, then
			 * its confirming re-run, which fails as another bug */
			assert_int_equal(result_d(c, w1, 1, lid, sd->seed, sd->attempt,
			    k == 11 ? VERDICT_INFRA : k % 10 == 1 && sd->seed == 2 ?
			    VERDICT_FAIL : k == 22 ? VERDICT_FAIL : VERDICT_PASS,
			    k == 11 ? "db" : sd->seed == 2 ? "invariant" : "",
			    k == 1 ? "{\"message\":\"4 of 4 turns ok\",\"round\":null,"
			    "\"ok_turns\":4,\"total_turns\":4," COV(2, 1) "}" :
			    k == 11 ? "{\"message\":\"m\"," COV(100, 50) "}" :
			    k == 12 ? "{\"message\":\"m\"," COV(3, 2) "}" :
			    k == 21 ? "{\"message\":\"m\",\"invariants\":[{\"name\":"
			    "\"A\"}]," COV(5, 0) "}" :
			    "{\"message\":\"m\",\"invariants\":[{\"name\":\"B\"}],"
			    COV(1000, 9) "}"), 1);
		}
		msg_clear(&rep);
	}
	msg_clear(&rep);		/* DONE */
	assert_true(coord_finished(c));
	cov = cov_json(coord_coverage(c));
	assert_int_equal(json_integer_value(json_object_get(cov, "seeds")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(cov, "proxies"), "db"), "exchanges")), 10);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(cov,
	    "forced"), "decisions")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(cov,
	    "forced"), "seeds")), 2);
	json_decref(cov);
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].forced, 1);
	assert_int_equal(s[1].forced, 2);
	assert_int_equal(s[2].forced, 0);
	assert_null(s[0].detail);		/* compacted: 4 of 4 turns ok */
	assert_null(json_object_get(s[1].detail, "coverage"));
	d = json_object_get(json_object_get(json_object_get(s[2].detail, "coverage"),
	    "proxies"), "db");
	assert_int_equal(json_integer_value(json_object_get(d, "exchanges")), 5);
	cfg.confirm = false;
	coord_free(c);
}

/*
 * BUNDLE_REQ: the WELCOME announces the hash; the bundle goes to the
 * worker that asks from its own connection with that hash, a NACK to
 * anyone else, and a NACK saying so when there is none (--bundle off).
 */
static void
test_bundle_request(void **state)
{
	struct coord_opts	 o = { 0 };
	struct coord		*c;
	struct msg		 req = { .type = MSG_BUNDLE_REQ }, rep, hi = { .type = MSG_HELLO };
	const uint8_t		 data[4] = { 'S', 0, 1, 2 };
	char			 err[ERR_LEN], hash[] = "00aa", line[128], *text;
	uint32_t		 w;

	(void)state;
	c = mk(0, 3);
	w = hello(c, 10);
	req.u.bundle_req.worker_id = w;
	req.u.bundle_req.hash = hash;
	assert_int_equal(coord_handle(c, &req, 10, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_NACK);
	assert_non_null(strstr(rep.u.ack.text, "--bundle off"));
	msg_clear(&rep);
	coord_free(c);

	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	cfg.text = "name: t\n";
	o.cfg = &cfg;
	o.seeds.first = 0;
	o.seeds.last = 3;
	o.run_id = "r";
	o.cfg_path = "/x.yaml";
	o.lease_ttl_ms = 1000;
	o.bundle_hash = hash;
	o.bundle = data;
	o.bundle_len = sizeof(data);
	c = coord_new(&o, err);
	assert_non_null(c);
	hi.u.hello.name = "w";
	hi.u.hello.host = "h";
	assert_int_equal(coord_handle(c, &hi, 10, 0, &rep), 1);
	assert_string_equal(rep.u.welcome.bundle_hash, "00aa");
	w = rep.u.welcome.worker_id;
	msg_clear(&rep);
	req.u.bundle_req.worker_id = w;
	assert_int_equal(coord_handle(c, &req, 11, 0, &rep), 1);	/* another pipe */
	assert_int_equal(rep.type, MSG_NACK);
	msg_clear(&rep);
	req.u.bundle_req.worker_id = w + 1;				/* nobody */
	assert_int_equal(coord_handle(c, &req, 10, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_NACK);
	msg_clear(&rep);
	req.u.bundle_req.worker_id = w;
	req.u.bundle_req.hash = "00ab";
	assert_int_equal(coord_handle(c, &req, 10, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_NACK);
	msg_clear(&rep);
	req.u.bundle_req.hash = hash;
	/* with -v the log says what went to whom */
	log_init("coord", 1);
	capture_begin();
	assert_int_equal(coord_handle(c, &req, 10, 0, &rep), 1);
	text = capture_end();
	log_init("soak", 0);
	snprintf(line, sizeof(line), "sending the config folder's bundle (4 bytes) "
	    "to worker %u", w);
	assert_non_null(strstr(text, line));
	free(text);
	assert_int_equal(rep.type, MSG_BUNDLE);
	assert_string_equal(rep.u.bundle.hash, "00aa");
	assert_int_equal(rep.u.bundle.len, sizeof(data));
	assert_memory_equal(rep.u.bundle.data, data, sizeof(data));
	msg_clear(&rep);
	coord_free(c);
}

/* --- regressions: leases of their own kind, before the seeds --- */

static struct regress	regs_v[2] = {
	{ .name = "r1", .seed = 3, .hash =
	    "1111111111111111111111111111111111111111111111111111111111111111" },
	{ .name = "r2", .seed = 100, .hash =
	    "2222222222222222222222222222222222222222222222222222222222222222" },
};
static const struct regress_set	regs = { .v = regs_v, .n = 2 };

/* A regression's result with its detail; returns the ACK's ok. */
static int
result_plan_d(struct coord *c, uint32_t w, int64_t now, uint64_t lease_id,
    uint64_t seed, uint32_t attempt, const char *plan, const char *hash,
    int verdict, const char *reason, const char *detail)
{
	struct msg	req = { .type = MSG_RESULT }, rep;
	int		ok;

	req.u.result.worker_id = w;
	req.u.result.lease_id = lease_id;
	req.u.result.seed = seed;
	req.u.result.attempt = attempt;
	req.u.result.plan = UNCONST(plan);
	req.u.result.plan_hash = UNCONST(hash);
	req.u.result.verdict = (uint8_t)verdict;
	req.u.result.reason = UNCONST(reason);
	req.u.result.detail = UNCONST(detail);
	assert_int_equal(coord_handle(c, &req, w, now, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	msg_clear(&rep);
	return ok;
}

/* A regression's result; returns the ACK's ok. */
static int
result_plan(struct coord *c, uint32_t w, int64_t now, uint64_t lease_id,
    uint64_t seed, uint32_t attempt, const char *plan, const char *hash,
    int verdict, const char *reason)
{
	return result_plan_d(c, w, now, lease_id, seed, attempt, plan, hash, verdict,
	    reason, "{\"message\":\"m\"}");
}

static void
assert_same_state(struct coord *c, json_t *log)
{
	struct coord	*r = replayed(log, json_array_size(log), 0, 9);
	json_t		*a = coord_dump(c), *b = coord_dump(r);
	char		*ta = json_dumps(a, JSON_SORT_KEYS), *tb = json_dumps(b,
			    JSON_SORT_KEYS);

	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	json_decref(a);
	json_decref(b);
	coord_free(r);
}

static void
test_regressions_first_and_apart(void **state)
{
	struct coord			*c, *r;
	struct msg			 rep;
	struct coord_reg_counts		 rn;
	struct coord_counts		 n;
	const struct coord_seed		*rs;
	json_t				*log = json_array();
	uint64_t			 l1, l2, seeds_lease;
	size_t				 nr;
	uint32_t			 w1, w2, i;

	(void)state;
	mk_regs = &regs;
	c = mk(0, 9);
	coord_on_event(c, record_event, log);
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	/* The first lease is a regression of its own, by name and hash. */
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	assert_string_equal(rep.u.lease.plan, "r1");
	assert_string_equal(rep.u.lease.plan_hash, regs_v[0].hash);
	assert_int_equal(rep.u.lease.nseeds, 1);
	assert_int_equal(rep.u.lease.seeds[0].seed, 3);
	l1 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* The next worker gets the other one, not seeds. */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "r2");
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* A result that does not name the lease's plan and hash is refused. */
	assert_int_equal(result(c, w1, 1, l1, 3, 1, VERDICT_PASS, ""), 0);
	assert_int_equal(result_plan(c, w1, 0, l1, 3, 1, "r1", regs_v[1].hash,
	    VERDICT_PASS, ""), 0);
	assert_int_equal(result_plan(c, w1, 0, l1, 3, 1, "r2", regs_v[1].hash,
	    VERDICT_PASS, ""), 0);
	assert_int_equal(result_plan(c, w1, 0, l1, 3, 1, "r1", regs_v[0].hash,
	    VERDICT_FAIL, "invariant"), 1);
	assert_same_state(c, log);
	/* r2 diverged: infra, retried like a seed, never a pass. */
	assert_int_equal(result_plan(c, w2, 0, l2, 100, 1, "r2", regs_v[1].hash,
	    VERDICT_INFRA, "diverged"), 1);
	/* Its retry goes before any seed, and elsewhere. */
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "r2");
	assert_int_equal(rep.u.lease.seeds[0].attempt, 2);
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* Now seeds: seed 3 of the range runs too, apart from r1. */
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "");
	assert_int_equal(rep.u.lease.seeds[0].seed, 0);
	seeds_lease = rep.u.lease.lease_id;
	nr = rep.u.lease.nseeds;
	msg_clear(&rep);
	/* A seed's result naming a plan is not the lease's. */
	assert_int_equal(result_plan(c, w2, 0, seeds_lease, 0, 1, "r1",
	    regs_v[0].hash, VERDICT_PASS, ""), 0);
	for (i = 0; i < nr; i++)
		assert_int_equal(result(c, w2, 2, seeds_lease, i, 1, VERDICT_PASS, ""), 1);
	/* The retry's worker is lost: retried once more (retries 2). */
	coord_pipe_closed(c, 1, 0);
	coord_tick(c, 5000);
	assert_same_state(c, log);
	/* --resume: the replayed coordinator runs r1 never again. */
	r = replayed(log, json_array_size(log), 0, 9);
	w1 = hello(r, 7);
	assert_int_equal(lease(r, w1, 7, 6000, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "r2");
	assert_int_equal(rep.u.lease.seeds[0].attempt, 3);
	msg_clear(&rep);
	coord_free(r);
	assert_int_equal(lease(c, w2, 2, 6000, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "r2");
	assert_int_equal(rep.u.lease.seeds[0].attempt, 3);
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result_plan(c, w2, 6000, l2, 100, 3, "r2", regs_v[1].hash,
	    VERDICT_INFRA, "diverged"), 1);
	coord_reg_counts(c, &rn);
	assert_int_equal(rn.total, 2);
	assert_int_equal(rn.done, 2);
	assert_int_equal(rn.fail, 1);
	assert_int_equal(rn.diverged, 1);
	assert_int_equal(rn.pass, 0);
	/* Apart: the range's counts hold no regression. */
	coord_counts(c, &n);
	assert_int_equal(n.total, 10);
	rs = coord_regressions(c, &nr);
	assert_int_equal(nr, 2);
	assert_string_equal(rs[0].regress->name, "r1");
	assert_int_equal(rs[1].attempts, 3);
	assert_same_state(c, log);
	json_decref(log);
	coord_free(c);
	mk_regs = NULL;
}

/*
 * A regression whose plan diverged passes only on a complete exploration
 * that ran and found no failing schedule (worker/regexplore.h): a worker's
 * pass that does not say so tested nothing and is infra/diverged; an
 * exploration the worker calls final (another worker would find the same)
 * is not retried.
 */
static void
test_regression_pass_by_exploring(void **state)
{
	static const char *const earned[] = {
		"{\"message\":\"m\"}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"complete\":true,"
		    "\"executions\":6,\"failing\":0}}",
	};
	static const char *const not_earned[] = {
		"{\"message\":\"m\",\"diverged\":\"d\"}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"complete\":false,"
		    "\"executions\":1,\"failing\":0}}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"executions\":6,"
		    "\"failing\":0}}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"complete\":true,"
		    "\"executions\":0,\"failing\":0}}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"complete\":true,"
		    "\"executions\":6,\"failing\":1}}",
		"{\"message\":\"m\",\"diverged\":\"d\",\"explored\":{\"complete\":true,"
		    "\"executions\":6}}",
	};
	struct coord			*c;
	struct msg			 rep;
	struct coord_reg_counts		 rn;
	const struct coord_seed		*rs;
	json_t				*d;
	uint64_t			 l1, l2;
	size_t				 i, nr;
	uint32_t			 w1, w2;

	(void)state;
	for (i = 0; i < sizeof(earned) / sizeof(earned[0]); i++) {
		d = json_loads(earned[i], 0, NULL);
		assert_true(coord_reg_pass_earned(d));
		json_decref(d);
	}
	for (i = 0; i < sizeof(not_earned) / sizeof(not_earned[0]); i++) {
		d = json_loads(not_earned[i], 0, NULL);
		assert_false(coord_reg_pass_earned(d));
		json_decref(d);
	}
	mk_regs = &regs;
	c = mk(0, 9);
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	l1 = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	l2 = rep.u.lease.lease_id;
	msg_clear(&rep);
	/* r1: a pass whose exploration ran out of budget is none, and final */
	assert_int_equal(result_plan_d(c, w1, 0, l1, 3, 1, "r1", regs_v[0].hash,
	    VERDICT_PASS, "", "{\"message\":\"m\",\"diverged\":\"d\",\"explored\":"
	    "{\"complete\":false,\"executions\":1,\"failing\":0,\"final\":true}}"), 1);
	/* r2: a complete, clean exploration is a pass */
	assert_int_equal(result_plan_d(c, w2, 0, l2, 100, 1, "r2", regs_v[1].hash,
	    VERDICT_PASS, "", "{\"message\":\"m\",\"diverged\":\"d\",\"explored\":"
	    "{\"complete\":true,\"executions\":6,\"failing\":0,\"final\":true}}"), 1);
	rs = coord_regressions(c, &nr);
	assert_int_equal(nr, 2);
	assert_int_equal(rs[0].state, CSEED_FINAL);
	assert_int_equal(rs[0].verdict, VERDICT_INFRA);
	assert_int_equal(rs[0].why, REASON_DIVERGED);
	assert_int_equal(rs[0].attempts, 1);
	assert_non_null(strstr(json_string_value(json_object_get(rs[0].detail,
	    "message")), "no complete exploration"));
	assert_int_equal(rs[1].state, CSEED_FINAL);
	assert_int_equal(rs[1].verdict, VERDICT_PASS);
	coord_reg_counts(c, &rn);
	assert_int_equal(rn.done, 2);
	assert_int_equal(rn.pass, 1);
	assert_int_equal(rn.diverged, 1);
	assert_int_equal(rn.explored, 2);
	coord_free(c);
	mk_regs = NULL;
}

/* --- tests for the mutation sweep's survivors (tests/mutants/sweep) --- */

/*
 * A halt keeps, of every active lease, only the seed that may be running:
 * the ACK's keep cuts the lease after it, and the unstarted seeds behind it
 * are no longer leased (they end the run without a verdict).
 */
static void
test_halt_cuts_active_leases(void **state)
{
	struct coord		*c = mk(0, 19);
	struct msg		 r1, r2;
	const struct coord_seed	*s;
	uint32_t		 w1, w2, keep = 0, i, n;
	uint64_t		 ns;

	(void)state;
	w1 = hello(c, 1);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_int_equal(r1.type, MSG_LEASE);
	n = r1.u.lease.nseeds;
	assert_true(n >= 4);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id,
	    r1.u.lease.seeds[0].seed, 1, VERDICT_PASS, "", &keep), 1);
	assert_int_equal(keep, n);
	coord_halt(c, 1, "asked to stop");
	/* the halt applies at the next request, here another worker's */
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_int_equal(r2.type, MSG_DONE);
	msg_clear(&r2);
	/* seed 1 may be running: it is kept, and nothing after it */
	s = coord_seeds(c, &ns);
	assert_int_equal(s[r1.u.lease.seeds[1].seed].state, CSEED_LEASED);
	for (i = 2; i < n; i++)
		assert_int_not_equal(s[r1.u.lease.seeds[i].seed].state, CSEED_LEASED);
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id,
	    r1.u.lease.seeds[1].seed, 1, VERDICT_PASS, "", &keep), 1);
	assert_int_equal(keep, 2);
	msg_clear(&r1);
	coord_free(c);
}

/*
 * A halt cuts the victim of a steal at its keep, not one further: the
 * seed after it is the thief's, which may be running it and still reports.
 */
static void
test_halt_spares_the_stolen_tail(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 r1, r, r6;
	uint32_t		 w[7], i, keep;
	const struct coord_seed	*s;
	uint64_t		 n;

	(void)state;
	w[1] = hello(c, 1);
	assert_int_equal(lease(c, w[1], 1, 0, &r1), 1);
	assert_int_equal(r1.u.lease.nseeds, 5);		/* 0..4 */
	for (i = 2; i <= 5; i++) {			/* 5..9 */
		w[i] = hello(c, i);
		assert_int_equal(lease(c, w[i], i, 0, &r), 1);
		msg_clear(&r);
	}
	w[6] = hello(c, 6);
	assert_int_equal(lease(c, w[6], 6, 0, &r6), 1);
	assert_true(r6.u.lease.nseeds == 2 && r6.u.lease.seeds[0].seed == 3);
	/* w1 keeps 0..2, w6 runs 3 */
	coord_halt(c, 2, "asked to stop");
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_LEASED);	/* w1 may be running it */
	assert_int_not_equal(s[1].state, CSEED_LEASED);
	assert_int_not_equal(s[2].state, CSEED_LEASED);
	assert_int_equal(s[3].state, CSEED_LEASED);	/* w6's, maybe running */
	assert_int_not_equal(s[4].state, CSEED_LEASED);
	assert_int_equal(result_keep(c, w[6], r6.u.lease.lease_id, 3, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 1);
	assert_int_equal(result_keep(c, w[1], r1.u.lease.lease_id, 0, 1, VERDICT_PASS,
	    "", &keep), 1);
	assert_int_equal(keep, 1);
	assert_int_equal(s[3].state, CSEED_FINAL);
	assert_int_equal(s[3].worker, w[6]);
	msg_clear(&r1);
	msg_clear(&r6);
	coord_free(c);
}

/* What halt_in_callback saw from inside the final callback. */
struct halt_seen {
	int		 calls;
	const char	*reason;	/* coord_halt_reason right after coord_halt */
};

static void
halt_in_callback(struct coord *c, const struct coord_seed *s, void *arg)
{
	struct halt_seen	*h = arg;

	(void)s;
	if (h->calls++ == 0) {
		coord_halt(c, 2, "the output directory cannot be written");
		h->reason = coord_halt_reason(c);
	}
}

/*
 * A halt asked from a callback waits for the coordinator's next entry:
 * the bookkeeping that called it back finishes first.
 */
static void
test_halt_from_a_callback_waits(void **state)
{
	struct coord		*c = mk(0, 9);
	struct halt_seen	 h = { 0, "unset" };
	struct msg		 r1, r;
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w1, i;

	(void)state;
	coord_on_final(c, halt_in_callback, &h);
	w1 = hello(c, 1);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_true(r1.u.lease.nseeds >= 3);
	assert_int_equal(result(c, w1, 1, r1.u.lease.lease_id,
	    r1.u.lease.seeds[0].seed, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(h.calls, 1);
	assert_null(h.reason);			/* not yet, inside the callback */
	coord_tick(c, 0);			/* the next entry: now */
	assert_true(coord_halted(c));
	assert_string_equal(coord_halt_reason(c),
	    "the output directory cannot be written");
	assert_int_equal(coord_halt_status(c), 2);
	/* seed 1 may be running: kept; the rest went back */
	s = coord_seeds(c, &n);
	assert_int_equal(s[r1.u.lease.seeds[1].seed].state, CSEED_LEASED);
	for (i = 2; i < r1.u.lease.nseeds; i++)
		assert_int_not_equal(s[r1.u.lease.seeds[i].seed].state, CSEED_LEASED);
	assert_int_equal(lease(c, hello(c, 2), 2, 0, &r), 1);
	assert_int_equal(r.type, MSG_DONE);
	msg_clear(&r);
	msg_clear(&r1);
	coord_free(c);
}

/*
 * A worker quarantined and the only other one gone, its lease expired:
 * nobody can run the rest, the run is halted.  While the other's lease is
 * still open it may come back, and the run is not.
 */
static void
test_quarantined_and_the_other_lost(void **state)
{
	struct coord		*c = mk(0, 19);
	struct msg		 r1, r2;
	uint32_t		 w1, w2, i;
	json_t			*d;

	(void)state;
	w1 = hello(c, 1);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_true(r1.u.lease.nseeds >= 3);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_int_equal(r2.type, MSG_LEASE);
	for (i = 0; i < 3; i++)
		assert_int_equal(result(c, w1, 1, r1.u.lease.lease_id,
		    r1.u.lease.seeds[i].seed, 1, VERDICT_INFRA, "service"), 1);
	assert_false(coord_halted(c));		/* w2 runs */
	coord_pipe_closed(c, 2, 0);
	assert_false(coord_halted(c));		/* w2 may rejoin, its lease open */
	assert_int_equal(coord_tick(c, 1000), -1);	/* w2's lease expires */
	d = coord_dump(c);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(d, "workers"), 1), "lease")), 0);
	json_decref(d);
	assert_true(coord_halted(c));
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
}

/* coord_tick: the time to the nearest deadline of the active leases. */
static void
test_tick_says_the_nearest_deadline(void **state)
{
	struct coord	*c = mk(0, 99);
	struct msg	 r;
	uint32_t	 w;
	int64_t		 at[3] = { 200, 0, 100 };	/* ttl 1000 each */
	int		 i;

	(void)state;
	assert_int_equal(coord_tick(c, 0), -1);		/* nothing leased */
	for (i = 0; i < 3; i++) {
		w = hello(c, (uint32_t)(i + 1));
		assert_int_equal(lease(c, w, (uint32_t)(i + 1), at[i], &r), 1);
		assert_int_equal(r.type, MSG_LEASE);
		msg_clear(&r);
	}
	assert_int_equal(coord_tick(c, 500), 500);	/* the second's, at 1000 */
	assert_int_equal(coord_tick(c, 1050), 50);	/* it expired: the third's */
	assert_int_equal(coord_tick(c, 1200), -1);	/* all expired */
	coord_free(c);
}

/*
 * A result ahead of its turn (seed 3 of 0..4 before 0..2) and then the
 * quarantine at seed 2: what had not run goes back (seed 4), what did is
 * kept (seed 3's verdict).
 */
static void
test_quarantine_keeps_a_result_ahead(void **state)
{
	struct coord		*c = mk(0, 9);
	struct msg		 r1;
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w1, keep, i;

	(void)state;
	w1 = hello(c, 1);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_int_equal(r1.u.lease.nseeds, 5);		/* 0..4 */
	assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, 3, 1, VERDICT_PASS,
	    "", &keep), 1);
	for (i = 0; i < 3; i++)
		assert_int_equal(result_keep(c, w1, r1.u.lease.lease_id, i, 1,
		    VERDICT_INFRA, "service", &keep), 1);
	assert_int_equal(keep, 3);
	s = coord_seeds(c, &n);
	assert_int_equal(s[3].state, CSEED_FINAL);
	assert_int_equal(s[3].verdict, VERDICT_PASS);
	assert_int_equal(s[4].state, CSEED_PENDING);
	assert_int_equal(s[4].attempts, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(s[i].state, CSEED_PENDING);	/* retries */
	msg_clear(&r1);
	coord_free(c);
}

/* A parked request of a worker the coordinator does not know stays parked. */
static void
test_serve_unknown_worker_parks(void **state)
{
	struct coord	*c = mk(0, 9);
	struct msg	 rep;

	(void)state;
	(void)hello(c, 1);
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(coord_serve(c, 4242, 0, &rep), 0);
	assert_int_equal(rep.type, 0);
	coord_free(c);
}

/*
 * The workers a run still waits for: every live one, however long it has
 * lived, and one whose connection closed, for a lease's time to rejoin.
 */
static void
test_awaited_workers(void **state)
{
	struct coord	*c = mk(0, 9);

	(void)state;
	assert_int_equal(coord_awaited_workers(c, 0), 0);
	(void)hello(c, 1);
	(void)hello(c, 2);
	assert_int_equal(coord_awaited_workers(c, 0), 2);
	assert_int_equal(coord_awaited_workers(c, 50000), 2);	/* alive: always */
	coord_pipe_closed(c, 1, 10000);
	assert_int_equal(coord_awaited_workers(c, 10000 + 999), 2);	/* within the TTL */
	assert_int_equal(coord_awaited_workers(c, 10000 + 1000), 1);	/* past it */
	coord_free(c);
}

/* A run holds at most 10,000,000 seeds: one more is refused, and said so. */
static void
test_seed_cap(void **state)
{
	struct coord_opts	o = { 0 };
	char			err[ERR_LEN] = "";

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	o.cfg = &cfg;
	o.seeds.first = 5;
	o.seeds.last = 5 + 10u * 1000 * 1000;		/* 10,000,001 seeds */
	o.run_id = "r";
	assert_null(coord_new(&o, err));
	assert_string_equal(err, "a run holds at most 10000000 seeds; split the range");
}

/* The early stop names where in the file, even on its first line. */
static void
test_early_stop_line_one(void **state)
{
	struct coord		*c = mk(0, 19);
	static char		 key[] = "turn.command";
	static struct cfg_mark	 mark = { key, 1, 7 };
	struct msg		 r1, r2;
	uint32_t		 w1, w2, keep;

	(void)state;
	cfg.path = "soak.yaml";
	cfg.marks = &mark;
	cfg.nmarks = 1;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &r1), 1);
	assert_int_equal(lease(c, w2, 2, 0, &r2), 1);
	assert_int_equal(result_ce(c, w1, r1.u.lease.lease_id, r1.u.lease.seeds[0].seed,
	    1, VERDICT_INFRA, "exec", CE_EXEC, &keep), 1);
	assert_int_equal(result_ce(c, w2, r2.u.lease.lease_id, r2.u.lease.seeds[0].seed,
	    1, VERDICT_INFRA, "exec", CE_EXEC, &keep), 1);
	assert_int_equal(result_ce(c, w1, r1.u.lease.lease_id, r1.u.lease.seeds[1].seed,
	    1, VERDICT_INFRA, "exec", CE_EXEC, &keep), 1);
	assert_true(coord_halted(c));
	assert_string_equal(coord_halt_reason(c), "a config error on the first 3 "
	    "seed(s), which no retry mends: soak.yaml:1:7: turn.command: "
	    "/x/redeem.sh: No such file or directory");
	msg_clear(&r1);
	msg_clear(&r2);
	coord_free(c);
}

/*
 * A confirming re-run that does not reproduce, under a schedule: its record
 * says where the re-run's schedule left the run's (confirm.schedule).
 */
static void
test_confirm_schedule_said(void **state)
{
	struct coord		*c = mk(0, 0);
	struct msg		 rep;
	uint32_t		 w1, w2;
	const struct coord_seed	*s;
	uint64_t		 n, lid;
	json_t			*d;
	char			*detail;
	const char		*sched;

	(void)state;
	cfg.confirm = true;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(lease(c, w1, 1, 0, &rep), 1);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	d = json_pack("{s:s, s:[{s:s}], s:s}", "message", "m", "invariants", "name",
	    "A", "trace", "{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":1,"
	    "\"fault\":\"none\",\"step\":1,\"cand\":\"1\",\"pg\":\"simple\","
	    "\"sql\":\"UPDATE\",\"tx\":\"I\"}\n");
	detail = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	assert_int_equal(result_d(c, w1, 1, lid, 0, 1, VERDICT_FAIL, "invariant",
	    detail), 1);
	free(detail);
	assert_int_equal(lease(c, w2, 2, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_LEASE);
	lid = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result_d(c, w2, 2, lid, 0, 2, VERDICT_PASS, "",
	    "{\"message\":\"m\"}"), 1);
	s = coord_seeds(c, &n);
	assert_true(json_is_false(json_object_get(s[0].detail, "reproduced")));
	sched = json_string_value(json_object_get(json_object_get(s[0].detail,
	    "confirm"), "schedule"));
	assert_non_null(sched);
	assert_non_null(strstr(sched, "step"));
	coord_free(c);
}

/* The counts are the run's whole, whatever the caller's struct held. */
static void
test_counts_from_nothing(void **state)
{
	struct coord		*c = mk(0, 2);
	struct coord_counts	 n;
	struct coord_reg_counts	 rn;
	struct msg		 rep;
	uint32_t		 w;

	(void)state;
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_PASS, ""), 1);
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 1, 1, VERDICT_FAIL,
	    "invariant"), 1);
	msg_clear(&rep);
	memset(&n, 0xa5, sizeof(n));
	coord_counts(c, &n);
	assert_int_equal(n.total, 3);
	assert_int_equal(n.done, 2);
	assert_int_equal(n.pass, 1);
	assert_int_equal(n.fail, 1);
	assert_int_equal(n.infra, 0);
	assert_int_equal(n.retries, 0);
	memset(&rn, 0xa5, sizeof(rn));
	coord_reg_counts(c, &rn);
	assert_int_equal(rn.total, 0);
	assert_int_equal(rn.done, 0);
	assert_int_equal(rn.pass, 0);
	assert_int_equal(rn.fail, 0);
	assert_int_equal(rn.diverged, 0);
	assert_int_equal(rn.infra, 0);
	coord_free(c);
}

/* A journal's result that is not one the run could have written: refused. */
static void
test_replay_refuses_bad_results(void **state)
{
	struct coord	*c = mk(0, 9), *r;
	json_t		*log = json_array(), *res = NULL, *bad;
	struct msg	 rep;
	char		 err[ERR_LEN];
	uint32_t	 w;
	size_t		 i, n;
	static const struct {
		const char	*key;
		const char	*json;		/* the value put there */
		const char	*said;
	} cases[] = {
		{ "lease", "999", "a result that does not parse" },
		{ "reason", "\"nonsense\"", "a result that does not parse" },
		{ "detail", "\"m\"", "a result that does not parse" },
		{ "plan", "\"p\"", "which is not its" },
		{ "seed", "9", "was not open under lease" },
		{ "attempt", "2", "was not open under lease" },
	};

	(void)state;
	coord_on_event(c, record_event, log);
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_true(rep.u.lease.nseeds < 10);		/* seed 9 is not in it */
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_PASS, ""), 1);
	msg_clear(&rep);
	n = json_array_size(log);
	for (i = 0; i < n; i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(log, i),
		    "t")), jev_name(JEV_RESULT)) == 0)
			res = json_object_get(json_array_get(log, i), "e");
	assert_non_null(res);
	assert_string_equal(json_string_value(json_object_get(json_array_get(log, n - 1),
	    "t")), jev_name(JEV_RESULT));
	r = replayed(log, n - 1, 0, 9);
	for (i = 0; i < nitems(cases); i++) {
		bad = json_deep_copy(res);
		json_object_set_new(bad, cases[i].key, json_loads(cases[i].json,
		    JSON_DECODE_ANY, NULL));
		err[0] = '\0';
		if (coord_replay(r, JEV_RESULT, bad, err) != -1)
			fail_msg("a result with %s %s was replayed", cases[i].key,
			    cases[i].json);
		if (strstr(err, cases[i].said) == NULL)
			fail_msg("%s %s: \"%s\", not \"%s\"", cases[i].key, cases[i].json,
			    err, cases[i].said);
		json_decref(bad);
	}
	/* the real one replays, once */
	assert_int_equal(coord_replay(r, JEV_RESULT, res, err), 0);
	assert_int_equal(coord_replay(r, JEV_RESULT, res, err), -1);
	assert_non_null(strstr(err, "was not open under lease"));
	coord_free(r);
	coord_free(c);
	json_decref(log);
}

/*
 * After --resume: a lease whose worker died with the coordinator
 * (orphaned) expires at once, its running seed lost (an infra attempt) and
 * the rest back; otherwise its worker has a lease's time to come back.
 */
static void
test_resumed_leases(void **state)
{
	struct coord		*c = mk(0, 9), *r;
	json_t			*log = json_array();
	struct msg		 rep;
	const struct coord_seed	*s;
	uint64_t		 ns;
	uint32_t		 w;
	size_t			 n;
	int			 orphaned;

	(void)state;
	coord_on_event(c, record_event, log);
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_true(rep.u.lease.nseeds >= 3);
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_PASS, ""), 1);
	msg_clear(&rep);
	n = json_array_size(log);
	for (orphaned = 0; orphaned <= 1; orphaned++) {
		r = replayed(log, n, 0, 9);
		coord_resumed(r, 10000, orphaned);
		s = coord_seeds(r, &ns);
		if (orphaned) {
			assert_int_not_equal(s[1].state, CSEED_LEASED);
			assert_int_equal(s[1].infra, 1);	/* it may have run */
			assert_int_not_equal(s[2].state, CSEED_LEASED);
			assert_int_equal(s[2].infra, 0);	/* it never ran */
		} else {
			assert_int_equal(s[1].state, CSEED_LEASED);
			assert_int_equal(s[2].state, CSEED_LEASED);
			coord_tick(r, 10000 + 500);
			assert_int_equal(s[1].state, CSEED_LEASED);
			coord_tick(r, 10000 + 5000);		/* never came back */
			assert_int_not_equal(s[1].state, CSEED_LEASED);
			assert_int_equal(s[1].infra, 1);
		}
		coord_free(r);
	}
	coord_free(c);
	json_decref(log);
}

/* The replay command a report prints: each word quoted only when needed. */
static void
test_replay_line_quoting(void **state)
{
	char	*r;

	(void)state;
	/* outside any git checkout: the path as given */
	r = report_replay("/nonexistent/soak.yaml", 7);
	assert_non_null(strstr(r, " replay /nonexistent/soak.yaml --seed 7"));
	assert_null(strchr(r, '\''));
	free(r);
	r = report_replay("/nonexistent/my dir/it's.yaml", 7);
	assert_non_null(strstr(r, " replay '/nonexistent/my dir/it'\\''s.yaml' --seed 7"));
	free(r);
	r = report_replay("/nonexistent/a$b.yaml", 3);
	assert_non_null(strstr(r, " replay '/nonexistent/a$b.yaml' --seed 3"));
	free(r);
}

/* The seeds' counts leave the regressions (after them in one array) out. */
static void
test_counts_apart_from_regressions(void **state)
{
	struct coord		*c;
	struct coord_counts	 n;
	struct coord_reg_counts	 rn;
	struct msg		 rep;
	uint32_t		 w;
	uint64_t		 l;

	(void)state;
	mk_regs = &regs;
	c = mk(0, 9);
	mk_regs = NULL;
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	assert_string_equal(rep.u.lease.plan, "r1");
	l = rep.u.lease.lease_id;
	msg_clear(&rep);
	assert_int_equal(result_plan(c, w, 0, l, 3, 1, "r1", regs_v[0].hash,
	    VERDICT_PASS, ""), 1);
	coord_counts(c, &n);
	assert_int_equal(n.total, 10);
	assert_int_equal(n.done, 0);		/* r1 is not one of the seeds */
	assert_int_equal(n.pass, 0);
	coord_reg_counts(c, &rn);
	assert_int_equal(rn.total, 2);
	assert_int_equal(rn.done, 1);
	assert_int_equal(rn.pass, 1);
	coord_free(c);
}

/* What the report says of a confirming re-run: each outcome its own words. */
static void
test_reproduced_words(void **state)
{
	struct coord_seed	s;
	char			buf[1024];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	memset(&s, 0, sizeof(s));
	s.confirm = CONFIRM_DONE;
	s.detail = json_pack("{s:b, s:{}}", "reproduced", 1, "confirm");
	assert_string_equal(report_reproduced(&cfg, &s, buf, sizeof(buf)), "reproduced it");
	json_decref(s.detail);
	s.detail = json_pack("{s:b, s:{}}", "reproduced", 0, "confirm");
	assert_string_equal(report_reproduced(&cfg, &s, buf, sizeof(buf)),
	    "did NOT reproduce it (it depends on more than the seed, timing most "
	    "often: a replay may need tries)");
	json_decref(s.detail);
	s.detail = json_pack("{s:{}}", "confirm");		/* infra: unknown */
	assert_string_equal(report_reproduced(&cfg, &s, buf, sizeof(buf)),
	    "ended infra; reproduction unknown");
	json_decref(s.detail);
	s.confirm = CONFIRM_NONE;				/* never re-run */
	s.detail = json_pack("{s:b}", "reproduced", 1);
	assert_string_equal(report_reproduced(&cfg, &s, buf, sizeof(buf)), "");
	json_decref(s.detail);
}

/* ---- an exploration's leases (coord_explore) ---- */

/* A driver: executions 1..3 to hand out, lost ones back first. */
struct xdrv {
	uint64_t	 todo[8];
	size_t		 ntodo;
	uint64_t	 got[8];	/* results, in order */
	int		 verdicts[8];
	size_t		 ngot;
	uint64_t	 lost[8];
	size_t		 nlost;
	size_t		 total;
};

static int
xd_next(void *arg, uint32_t worker, uint64_t *no, char **payload)
{
	struct xdrv	*d = arg;

	(void)worker;
	if (d->ntodo == 0)
		return 0;
	*no = d->todo[--d->ntodo];
	*payload = xasprintf("{\"no\":%" PRIu64 "}", *no);
	return 1;
}

static void
xd_result(void *arg, uint64_t no, uint32_t worker, int verdict, enum reason why,
    const json_t *detail)
{
	struct xdrv	*d = arg;

	(void)worker, (void)why;
	assert_true(json_is_object(detail));
	d->verdicts[d->ngot] = verdict;
	d->got[d->ngot++] = no;
}

static void
xd_lost(void *arg, uint64_t no, const char *why)
{
	struct xdrv	*d = arg;

	(void)why;
	d->lost[d->nlost++] = no;
	d->todo[d->ntodo++] = no;
}

static bool
xd_done(void *arg)
{
	struct xdrv	*d = arg;

	return d->ngot == d->total;
}

/*
 * One execution a lease, of the explored seed, the execution's number as
 * its attempt; a result counts once and only its own; a lost worker's
 * execution goes back to the driver and out again; the run is finished
 * only when the driver is done and nothing is out.
 */
static void
test_explore_leases(void **state)
{
	struct xdrv		 d = { .todo = { 3, 2, 1 }, .ntodo = 3, .total = 3 };
	struct coord_explore	 xe = { .seed = 7, .next = xd_next, .result = xd_result,
				    .lost = xd_lost, .done = xd_done, .arg = &d };
	struct coord_opts	 o = { 0 };
	struct coord		*c;
	struct msg		 la, lb, rep;
	char			 err[ERR_LEN];
	uint32_t		 a, b;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	cfg.text = "name: t\n";
	o.cfg = &cfg;
	o.explore = &xe;
	o.run_id = "r";
	o.cfg_path = "/x.yaml";
	o.heartbeat_ms = 100;
	o.lease_ttl_ms = 1000;
	c = coord_new(&o, err);		/* no seed range */
	assert_non_null(c);
	assert_false(coord_finished(c));
	a = hello(c, 1);
	b = hello(c, 2);
	assert_int_equal(lease(c, a, 1, 0, &la), 1);
	assert_int_equal(la.type, MSG_LEASE);
	assert_string_equal(la.u.lease.explore, "{\"no\":1}");
	assert_int_equal(la.u.lease.nseeds, 1);
	assert_int_equal(la.u.lease.seeds[0].seed, 7);
	assert_int_equal(la.u.lease.seeds[0].attempt, 1);
	assert_int_equal(lease(c, b, 2, 0, &lb), 1);
	assert_int_equal(lb.u.lease.seeds[0].attempt, 2);
	/* another execution's, another seed's: refused, nothing taken */
	assert_int_equal(result(c, a, 1, la.u.lease.lease_id, 7, 2, VERDICT_PASS, ""), 0);
	assert_int_equal(result(c, a, 1, la.u.lease.lease_id, 8, 1, VERDICT_PASS, ""), 0);
	assert_int_equal(result(c, b, 2, la.u.lease.lease_id, 7, 1, VERDICT_PASS, ""), 0);
	assert_int_equal(d.ngot, 0);
	/* its own: taken; the same again: acknowledged, not taken twice */
	assert_int_equal(result_d(c, a, 1, la.u.lease.lease_id, 7, 1, VERDICT_FAIL,
	    "invariant", "{\"explore\":{}}"), 1);
	assert_int_equal(result(c, a, 1, la.u.lease.lease_id, 7, 1, VERDICT_FAIL,
	    "invariant"), 1);
	assert_int_equal(d.ngot, 1);
	assert_int_equal(d.got[0], 1);
	assert_int_equal(d.verdicts[0], VERDICT_FAIL);
	/* b's connection closes and its lease expires: execution 2 goes back */
	coord_pipe_closed(c, 2, 0);
	coord_tick(c, 1200);
	assert_int_equal(d.nlost, 1);
	assert_int_equal(d.lost[0], 2);
	assert_int_equal(result_at(c, b, 2, 1300, lb.u.lease.lease_id, 7, 2,
	    VERDICT_PASS, ""), 0);		/* its late result: refused */
	assert_int_equal(d.ngot, 1);
	/* a takes it again, then 3; an unreadable detail is infra */
	msg_clear(&la);
	assert_int_equal(lease(c, a, 1, 1300, &la), 1);
	assert_int_equal(la.u.lease.seeds[0].attempt, 2);
	assert_int_equal(result_dt(c, a, 1, 1300, la.u.lease.lease_id, 7, 2,
	    VERDICT_PASS, "", "[1]"), 1);
	assert_int_equal(d.verdicts[1], VERDICT_INFRA);
	msg_clear(&la);
	assert_int_equal(lease(c, a, 1, 1300, &la), 1);
	assert_int_equal(la.u.lease.seeds[0].attempt, 3);
	assert_false(coord_finished(c));	/* 3 is out */
	/* nothing left to hand out: a request waits */
	assert_int_equal(coord_serve(c, b, 1300, &rep), 0);
	assert_int_equal(result_at(c, a, 1, 1300, la.u.lease.lease_id, 7, 3,
	    VERDICT_PASS, ""), 1);
	assert_true(coord_finished(c));
	assert_int_equal(d.ngot, 3);
	assert_int_equal(lease(c, a, 1, 1300, &rep), 1);
	assert_int_equal(rep.type, MSG_DONE);
	msg_clear(&rep);
	msg_clear(&la);
	msg_clear(&lb);
	coord_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks_shrink_and_cover),
		cmocka_unit_test(test_idle_worker_takes_unstarted_tail),
		cmocka_unit_test(test_stolen_seeds_fenced_when_thief_dies),
		cmocka_unit_test(test_balance_with_staggered_joins),
		cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_journal_event_names),
		cmocka_unit_test(test_early_stop),
		cmocka_unit_test(test_early_stop_rules),
		cmocka_unit_test(test_bye_hands_back_unstarted),
		cmocka_unit_test(test_hello_after_the_run_finished),
		cmocka_unit_test(test_worker_died_and_halt),
		cmocka_unit_test(test_replay_rebuilds_the_state),
		cmocka_unit_test(test_expiry_refuses_late_result_and_retries_elsewhere),
		cmocka_unit_test(test_late_result_after_release_refused),
		cmocka_unit_test(test_second_result_in_active_lease_refused),
		cmocka_unit_test(test_heartbeats_keep_the_lease),
		cmocka_unit_test(test_lost_lease_requeues_unstarted_seeds),
		cmocka_unit_test(test_refused_results_are_no_sign_of_life),
		cmocka_unit_test(test_pipe_close_and_infra_retries),
		cmocka_unit_test(test_retry_waits_for_a_starting_worker),
		cmocka_unit_test(test_incoherent_result_is_infra),
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_queue_ring),
		cmocka_unit_test(test_confirm_smallest_per_bug_elsewhere),
		cmocka_unit_test(test_minimize_leases),
		cmocka_unit_test(test_minimize_lost_twice),
		cmocka_unit_test(test_explore_leases),
		cmocka_unit_test(test_confirm_off_and_single_worker),
		cmocka_unit_test(test_coverage_counts_final_attempts),
		cmocka_unit_test(test_confirm_cap),
		cmocka_unit_test(test_bundle_request),
		cmocka_unit_test(test_regressions_first_and_apart),
		cmocka_unit_test(test_regression_pass_by_exploring),
		cmocka_unit_test(test_halt_cuts_active_leases),
		cmocka_unit_test(test_halt_spares_the_stolen_tail),
		cmocka_unit_test(test_halt_from_a_callback_waits),
		cmocka_unit_test(test_quarantined_and_the_other_lost),
		cmocka_unit_test(test_tick_says_the_nearest_deadline),
		cmocka_unit_test(test_quarantine_keeps_a_result_ahead),
		cmocka_unit_test(test_serve_unknown_worker_parks),
		cmocka_unit_test(test_awaited_workers),
		cmocka_unit_test(test_seed_cap),
		cmocka_unit_test(test_early_stop_line_one),
		cmocka_unit_test(test_confirm_schedule_said),
		cmocka_unit_test(test_counts_from_nothing),
		cmocka_unit_test(test_replay_refuses_bad_results),
		cmocka_unit_test(test_resumed_leases),
		cmocka_unit_test(test_replay_line_quoting),
		cmocka_unit_test(test_counts_apart_from_regressions),
		cmocka_unit_test(test_reproduced_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
