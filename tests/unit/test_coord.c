/* The coordinator's rules, without a socket: leases, expiry, refusal of
 * late results, retries on another worker, exactly one final verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/config.h"
#include "common/msg.h"
#include "common/util.h"
#include "coordinator/coord.h"

static struct cfg	cfg;

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
	o.cfg = &cfg;
	o.seeds.first = first;
	o.seeds.last = last;
	o.run_id = "r";
	o.cfg_path = "/x.yaml";
	o.heartbeat_ms = 100;
	o.lease_ttl_ms = 1000;
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
	req.u.hello.secret = "";
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

static int
result_d(struct coord *c, uint32_t w, uint32_t pipe, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason, const char *detail)
{
	struct msg	req = { .type = MSG_RESULT }, rep;
	int		ok;

	req.u.result.worker_id = w;
	req.u.result.lease_id = lease_id;
	req.u.result.seed = seed;
	req.u.result.attempt = attempt;
	req.u.result.verdict = (uint8_t)verdict;
	req.u.result.reason = (char *)reason;
	req.u.result.detail = (char *)detail;
	assert_int_equal(coord_handle(c, &req, pipe, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_ACK);
	ok = rep.u.ack.ok;
	msg_clear(&rep);
	return ok;
}

static int
result(struct coord *c, uint32_t w, uint32_t pipe, uint64_t lease_id, uint64_t seed,
    uint32_t attempt, int verdict, const char *reason)
{
	return result_d(c, w, pipe, lease_id, seed, attempt, verdict, reason,
	    "{\"message\":\"m\"}");
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
	/* A result twice is refused. */
	assert_int_equal(result(c, w1, 1, l1, first, 1, VERDICT_PASS, ""), 0);
	/* No heartbeat past the ttl: the lease expires. */
	coord_tick(c, 5000);
	assert_int_equal(result(c, w1, 1, l1, second, 1, VERDICT_PASS, ""), 0);
	s = coord_seeds(c, &n);
	assert_int_equal(s[second].state, CSEED_PENDING);
	assert_int_equal(json_array_size(s[second].history), 1);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(s[second].history, 0), "reason")), "worker-lost");
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
	assert_int_equal(json_array_size(s[0].history), 3);
	assert_true(coord_finished(c));
	coord_free(c);

	/* A closed pipe expires its worker's lease at once. */
	c = mk(0, 0);
	w1 = hello(c, 11);
	assert_int_equal(lease(c, w1, 11, 0, &rep), 1);
	coord_pipe_closed(c, 11, 1);
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_PENDING);
	assert_int_equal(coord_live_workers(c), 0);
	/* A worker may speak only from its own pipe. */
	{
		struct msg	r2;

		assert_int_equal(lease(c, w1, 12, 0, &r2), 1);
		assert_int_equal(r2.type, MSG_NACK);
		msg_clear(&r2);
	}
	msg_clear(&rep);
	coord_free(c);
}

static void
test_incoherent_result_is_infra(void **state)
{
	struct coord		*c = mk(0, 0);
	struct msg		 rep;
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w;

	(void)state;
	w = hello(c, 1);
	assert_int_equal(lease(c, w, 1, 0, &rep), 1);
	/* "pass" with a failure reason is not believed. */
	assert_int_equal(result(c, w, 1, rep.u.lease.lease_id, 0, 1, VERDICT_PASS,
	    "invariant"), 1);
	s = coord_seeds(c, &n);
	assert_int_equal(s[0].state, CSEED_PENDING);
	assert_int_equal(s[0].infra, 1);
	assert_true(coord_reason_valid(VERDICT_FAIL, "hang"));
	assert_false(coord_reason_valid(VERDICT_FAIL, "db"));
	assert_false(coord_reason_valid(VERDICT_INFRA, "invariant"));
	msg_clear(&rep);
	coord_free(c);
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
	/* Once only: a second result for it is refused. */
	assert_int_equal(result_d(c, w2, 2, lid, 1, 2, VERDICT_FAIL, "invariant", INV_A), 0);
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
	coord_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks_shrink_and_cover),
		cmocka_unit_test(test_expiry_refuses_late_result_and_retries_elsewhere),
		cmocka_unit_test(test_pipe_close_and_infra_retries),
		cmocka_unit_test(test_incoherent_result_is_infra),
		cmocka_unit_test(test_confirm_smallest_per_bug_elsewhere),
		cmocka_unit_test(test_confirm_off_and_single_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
