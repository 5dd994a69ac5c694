/*
 * Plans (common/plan.c): the file's form read and written back the same,
 * its errors named by where they are, a trace made into a plan (faults by
 * key and occurrence, blackholes by connection, steps in admission order),
 * which (round, turn) pairs run, and which configs can run a plan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/plan.h"
#include "common/util.h"

static const char good[] =
    "{\"soak_plan\": 1, \"config\": \"res\", \"seed\": 16, \"turns\": 3, \"rounds\": 2,\n"
    " \"runs\": [[0, 0], [0, 2], [1, 1]],\n"
    " \"proxies\": {\"db\": {\n"
    "   \"faults\": [{\"round\": 0, \"turn\": 2, \"key\": \"9f1c2a7b44d0e1f3\", \"occ\": 1,\n"
    "                 \"what\": \"COMMIT\", \"fault\": \"lost_reply\"},\n"
    "                {\"round\": 1, \"turn\": 1, \"conn\": 2, \"fault\": \"blackhole\"},\n"
    "                {\"round\": 0, \"turn\": 0, \"key\": \"0000000000000001\", \"occ\": 0,\n"
    "                 \"latency_ms\": 12}],\n"
    "   \"steps\": [{\"round\": 0, \"turn\": 2, \"key\": \"0c7d9e11a2b3c4d5\", \"occ\": 0,\n"
    "                \"what\": \"SELECT\"},\n"
    "               {\"round\": 0, \"turn\": 0, \"key\": \"0c7d9e11a2b3c4d5\", \"occ\": 0,\n"
    "                \"waits_on\": [2], \"deadlock\": \"soak\"}]}},\n"
    " \"failure\": {\"fingerprint\": \"res|invariant|x\", \"message\": \"1 broken\"}}\n";

static void
test_roundtrip(void **state)
{
	struct plan	 p, q;
	char		 err[256], *a, *b;

	(void)state;
	assert_int_equal(plan_parse(good, strlen(good), "p.json", &p, err), 0);
	assert_int_equal(p.seed, 16);
	assert_int_equal(p.turns, 3);
	assert_int_equal(p.nproxies, 1);
	assert_int_equal(p.proxies[0].nfaults, 3);
	assert_int_equal(p.proxies[0].faults[0].fault, PLAN_LOST_REPLY);
	assert_true(p.proxies[0].faults[0].key == 0x9f1c2a7b44d0e1f3ULL);
	assert_int_equal(p.proxies[0].faults[1].fault, PLAN_BLACKHOLE);
	assert_int_equal(p.proxies[0].faults[1].occ, 2);
	assert_int_equal(p.proxies[0].faults[2].latency_ms, 12);
	assert_int_equal(p.proxies[0].nsteps, 2);
	assert_true(p.proxies[0].steps[1].lock_wait);
	assert_int_equal(p.proxies[0].steps[1].waits_on, 4);
	assert_string_equal(p.proxies[0].steps[1].deadlock, "soak");
	assert_true(plan_runs(&p, 0, 2));
	assert_false(plan_runs(&p, 0, 1));
	assert_true(plan_runs(&p, 1, 1));
	assert_false(plan_runs(&p, 2, 0));	/* past its rounds */
	assert_int_equal(plan_turns_in(&p, 0), 2);
	a = plan_dump(&p);
	assert_int_equal(plan_parse(a, strlen(a), "a", &q, err), 0);
	b = plan_dump(&q);
	assert_string_equal(a, b);
	assert_string_equal(q.fingerprint, "res|invariant|x");
	free(a);
	free(b);
	plan_free(&p);
	plan_free(&q);
	/* no runs: every turn of the plan's, none past them */
	a = "{\"soak_plan\":1,\"seed\":1,\"turns\":2,\"rounds\":1}";
	assert_int_equal(plan_parse(a, strlen(a), "x", &p, err), 0);
	assert_true(plan_runs(&p, 0, 1));
	assert_false(plan_runs(&p, 0, 2));
	assert_true(plan_runs(NULL, 5, 7));
	plan_free(&p);
}

static void
test_errors(void **state)
{
	static const struct {
		const char	*text, *want;
	} cases[] = {
		{ "[]", "p.json: (top): not an object" },
		{ "{\"soak_plan\": 3, \"seed\": 1, \"turns\": 1, \"rounds\": 1}",
		  "p.json: a plan of version 3; this soak reads versions 1 to 2" },
		{ "{\"soak_plan\": 1, \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: missing, or not an integer" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"steps\": [{\"round\": 0, \"turn\": 2, \"key\": "
		  "\"0000000000000001\", \"occ\": 0}]}}}",
		  "p.json: proxies.db.steps[0].turn: 2 is out of range (0..1)" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"faults\": [{\"round\": 0, \"turn\": 1, \"key\": \"xyz\", "
		  "\"occ\": 0, \"fault\": \"reset\"}]}}}",
		  "p.json: proxies.db.faults[0].key: missing, or not 16 hex digits" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"faults\": [{\"round\": 0, \"turn\": 1, \"key\": "
		  "\"0000000000000001\", \"occ\": 0, \"fault\": \"explode\"}]}}}",
		  "p.json: proxies.db.faults[0].fault: not one of lost_reply, reset, "
		  "duplicate, blackhole, status, stream_cut, stream_stall" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 1, \"rounds\": 1, \"runs\": [[0, 1]]}",
		  "p.json: runs[0]: round or turn out of range" },
		/* strict (docs/plan.md): what was once read some way is refused */
		{ "{\"soak_plan\": 1, \"seed\": \"\", \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: an empty seed (want a decimal integer, e.g. 1477)" },
		{ "{\"soak_plan\": 1, \"seed\": \"-1\", \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: \"-1\" is not a seed (want a decimal integer from 0 to "
		  "18446744073709551615)" },
		{ "{\"soak_plan\": 1, \"seed\": \" 5\", \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: \" 5\" is not a seed (want a decimal integer from 0 to "
		  "18446744073709551615)" },
		{ "{\"soak_plan\": 1, \"seed\": \"+5\", \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: \"+5\" is not a seed (want a decimal integer from 0 to "
		  "18446744073709551615)" },
		{ "{\"soak_plan\": 1, \"seed\": \"18446744073709551616\", \"turns\": 1, "
		  "\"rounds\": 1}", "p.json: seed: 18446744073709551616 is larger than "
		  "the largest seed, 18446744073709551615 (seeds are 64-bit)" },
		{ "{\"soak_plan\": 1, \"seed\": -1, \"turns\": 1, \"rounds\": 1}",
		  "p.json: seed: -1 is negative (a seed is 0 to 18446744073709551615)" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"faults\": [{\"round\": 0, \"turn\": 1, \"key\": "
		  "\"0x00000000000001\", \"occ\": 0, \"fault\": \"reset\"}]}}}",
		  "p.json: proxies.db.faults[0].key: missing, or not 16 hex digits" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"steps\": [{\"round\": 0, \"turn\": 1, \"key\": "
		  "\"+000000000000001\", \"occ\": 0}]}}}",
		  "p.json: proxies.db.steps[0].key: missing, or not 16 hex digits" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"steps\": [{\"round\": 0, \"turn\": 1, \"key\": "
		  "\"-000000000000001\", \"occ\": 0}]}}}",
		  "p.json: proxies.db.steps[0].key: missing, or not 16 hex digits" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"proxies\": "
		  "{\"db\": {\"steps\": [{\"round\": 0, \"turn\": 1, \"key\": "
		  "\"0000000000000001\", \"occ\": 0, \"deadlock\": \"me\"}]}}}",
		  "p.json: proxies.db.steps[0].deadlock: not soak or postgres" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, "
		  "\"runs\": [[4294967296, 4294967297]]}",
		  "p.json: runs[0]: round or turn out of range" },
		{ "{\"soak_plan\": 1, \"seed\": 1, \"turns\": 2, \"rounds\": 1, \"runs\": []}",
		  "p.json: runs: an empty list runs no turn, and a plan that runs none "
		  "tests nothing (leave runs out for every turn)" },
	};
	struct plan	p;
	char		err[256];
	size_t		i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(plan_parse(cases[i].text, strlen(cases[i].text),
		    "p.json", &p, err), -1);
		assert_string_equal(err, cases[i].want);
	}
	/* the seeds a plan writes: past 2^63 as text, read back */
	assert_int_equal(plan_parse("{\"soak_plan\": 1, \"seed\": \"18446744073709551615\","
	    " \"turns\": 1, \"rounds\": 1}", 73, "p.json", &p, err), 0);
	assert_true(p.seed == UINT64_MAX);
	plan_free(&p);
	assert_int_equal(plan_parse("{", 1, "p.json", &p, err), -1);
	assert_non_null(strstr(err, "p.json:1:"));
}

static void
test_from_trace(void **state)
{
	static const char trace[] =
	    "{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":\"none\","
	    "\"latency_ms\":0,\"round\":0,\"key\":\"00000000000000aa\",\"occ\":0}\n"
	    "{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":1,\"fault\":\"lost_reply\","
	    "\"latency_ms\":3,\"round\":0,\"key\":\"00000000000000bb\",\"occ\":0,"
	    "\"step\":2,\"cand\":\"3\",\"pg\":\"simple\",\"sql\":\"COMMIT\"}\n"
	    "{\"proxy\":\"db\",\"turn\":1,\"conn\":0,\"exchange\":1,\"fault\":\"none\","
	    "\"latency_ms\":0,\"round\":0,\"key\":\"00000000000000bb\",\"occ\":0,"
	    "\"step\":1,\"cand\":\"3\",\"waits_on\":\"1\",\"pg\":\"simple\",\"sql\":\"COMMIT\"}\n"
	    "{\"proxy\":\"db\",\"turn\":1,\"conn\":1,\"exchange\":0,\"fault\":\"blackhole\","
	    "\"latency_ms\":0,\"round\":0,\"key\":\"0000000000000000\",\"occ\":1}\n"
	    "{\"proxy\":\"api\",\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":\"close_after\","
	    "\"latency_ms\":0,\"round\":0,\"key\":\"00000000000000cc\",\"occ\":0,"
	    "\"req\":\"GET /x\"}\n";
	struct plan			 p;
	const struct plan_proxy		*db, *api;
	char				 err[256];

	(void)state;
	assert_int_equal(plan_from_trace(trace, strlen(trace), 9, "res", 2, 1, &p,
	    err), 0);
	assert_int_equal(p.seed, 9);
	db = plan_proxy(&p, "db");
	api = plan_proxy(&p, "api");
	assert_non_null(db);
	assert_non_null(api);
	/* the lost reply with its latency, the blackhole by its connection */
	assert_int_equal(db->nfaults, 2);
	assert_int_equal(db->faults[0].fault, PLAN_LOST_REPLY);
	assert_int_equal(db->faults[0].latency_ms, 3);
	assert_string_equal(db->faults[0].what, "COMMIT");
	assert_int_equal(db->faults[1].fault, PLAN_BLACKHOLE);
	assert_int_equal(db->faults[1].occ, 1);
	/* close_after is a stream fault, not a decision */
	assert_int_equal(api->nfaults, 0);
	/* steps in admission order, not the trace's */
	assert_int_equal(db->nsteps, 2);
	assert_int_equal(db->steps[0].turn, 1);
	assert_true(db->steps[0].lock_wait);
	assert_int_equal(db->steps[1].turn, 0);
	plan_free(&p);
	/* a trace with no keys (an older soak's) makes no plan */
	assert_int_equal(plan_from_trace("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,"
	    "\"exchange\":0}\n", 46, 1, NULL, 1, 1, &p, err), -1);
	assert_non_null(strstr(err, "no keys"));
	/* a field the proxy never writes so is the trace's fault, said, never
	 * read as 0: a turn set of "zz", a key with 0x */
	assert_int_equal(plan_from_trace("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,"
	    "\"exchange\":0,\"key\":\"00000000000000aa\",\"occ\":0,\"step\":1,"
	    "\"cand\":\"zz\"}\n", 100, 1, NULL, 1, 1, &p, err), -1);
	assert_string_equal(err, "line 1: cand: \"zz\" is not a set of turns (1 to 16 "
	    "hex digits)");
	assert_int_equal(plan_from_trace("{\"proxy\":\"db\",\"turn\":0,\"conn\":0,"
	    "\"exchange\":0,\"key\":\"0x000000000000aa\",\"occ\":0}\n", 79, 1, NULL,
	    1, 1, &p, err), -1);
	assert_string_equal(err, "line 1: key: \"0x000000000000aa\" is not 16 hex "
	    "digits");
}

/*
 * The HTTP API faults in a plan: each with its parameters, round trip,
 * from a trace, and every parameter where its kind has none, or missing
 * where it has one, refused by name.
 */
static void
test_api_faults(void **state)
{
	static const char api[] =
	    "{\"soak_plan\": 1, \"seed\": 3, \"turns\": 2, \"rounds\": 1,\n"
	    " \"proxies\": {\"llm\": {\"faults\": [\n"
	    "  {\"round\": 0, \"turn\": 0, \"key\": \"049677d8bac702c6\", \"occ\": 0,\n"
	    "   \"fault\": \"status\", \"status\": 429},\n"
	    "  {\"round\": 0, \"turn\": 0, \"key\": \"049677d8bac702c6\", \"occ\": 1,\n"
	    "   \"fault\": \"stream_cut\", \"after\": 3, \"reply\": 1},\n"
	    "  {\"round\": 0, \"turn\": 1, \"key\": \"049677d8bac702c6\", \"occ\": 0,\n"
	    "   \"fault\": \"stream_stall\", \"after\": 2, \"stall_ms\": 1500,\n"
	    "   \"latency_ms\": 4}],\n"
	    "  \"steps\": []}}}\n";
	static const struct {
		const char	*fault;		/* the fault's members */
		const char	*want;
	} bad[] = {
		{ "\"fault\": \"status\"",
		  "p.json: proxies.llm.faults[0].status: missing: a status fault has "
		  "one (an HTTP error status of 400..599)" },
		{ "\"fault\": \"status\", \"status\": 200",
		  "p.json: proxies.llm.faults[0].status: not an HTTP error status of "
		  "400..599" },
		{ "\"fault\": \"status\", \"status\": \"429\"",
		  "p.json: proxies.llm.faults[0].status: not an HTTP error status of "
		  "400..599" },
		{ "\"fault\": \"status\", \"status\": 429, \"after\": 2",
		  "p.json: proxies.llm.faults[0].after: not a parameter of a status "
		  "fault" },
		{ "\"fault\": \"stream_cut\"",
		  "p.json: proxies.llm.faults[0].after: missing: a stream_cut fault "
		  "has one (a count of events of 1..100000)" },
		{ "\"fault\": \"stream_cut\", \"after\": 0",
		  "p.json: proxies.llm.faults[0].after: not a count of events of "
		  "1..100000" },
		{ "\"fault\": \"stream_cut\", \"after\": 2, \"stall_ms\": 5",
		  "p.json: proxies.llm.faults[0].stall_ms: not a parameter of a "
		  "stream_cut fault" },
		{ "\"fault\": \"stream_stall\", \"after\": 2",
		  "p.json: proxies.llm.faults[0].stall_ms: missing: a stream_stall "
		  "fault has one (an integer of 0..3600000 (ms))" },
		{ "\"fault\": \"stream_stall\", \"after\": 2, \"stall_ms\": -1",
		  "p.json: proxies.llm.faults[0].stall_ms: not an integer of "
		  "0..3600000 (ms)" },
		{ "\"fault\": \"lost_reply\", \"status\": 500",
		  "p.json: proxies.llm.faults[0].status: not a parameter of a "
		  "lost_reply fault" },
		{ "\"latency_ms\": 5, \"after\": 1",
		  "p.json: proxies.llm.faults[0].after: not a parameter of a latency "
		  "or reply, nor of no fault" },
	};
	static const char trace[] =
	    "{\"proxy\":\"llm\",\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":"
	    "\"status\",\"latency_ms\":0,\"status\":529,\"round\":0,\"key\":"
	    "\"049677d8bac702c6\",\"occ\":0,\"req\":\"POST /v1/messages\"}\n"
	    "{\"proxy\":\"llm\",\"turn\":0,\"conn\":0,\"exchange\":1,\"fault\":"
	    "\"stream_stall\",\"latency_ms\":0,\"after\":2,\"stall_ms\":900,"
	    "\"round\":0,\"key\":\"049677d8bac702c6\",\"occ\":1}\n"
	    "{\"proxy\":\"llm\",\"turn\":1,\"conn\":0,\"exchange\":0,\"fault\":"
	    "\"stream_cut\",\"latency_ms\":0,\"after\":5,\"round\":0,\"key\":"
	    "\"049677d8bac702c6\",\"occ\":0}\n";
	struct plan		 p, q;
	const struct plan_proxy	*x;
	char			 err[256], words[64], *a, *b, *text;
	size_t			 i;

	(void)state;
	assert_int_equal(plan_parse(api, strlen(api), "p.json", &p, err), 0);
	x = &p.proxies[0];
	assert_int_equal(x->nfaults, 3);
	assert_int_equal(x->faults[0].fault, PLAN_STATUS);
	assert_int_equal(x->faults[0].status, 429);
	assert_int_equal(x->faults[1].fault, PLAN_STREAM_CUT);
	assert_int_equal(x->faults[1].after, 3);
	assert_int_equal(x->faults[1].reply, 1);
	assert_int_equal(x->faults[2].fault, PLAN_STREAM_STALL);
	assert_int_equal(x->faults[2].after, 2);
	assert_int_equal(x->faults[2].stall_ms, 1500);
	assert_int_equal(x->faults[2].latency_ms, 4);
	assert_string_equal(plan_fault_words(&x->faults[0], words, sizeof(words)),
	    "status 429");
	assert_string_equal(plan_fault_words(&x->faults[1], words, sizeof(words)),
	    "stream_cut after 3");
	assert_string_equal(plan_fault_words(&x->faults[2], words, sizeof(words)),
	    "stream_stall after 2 for 1500 ms");
	a = plan_dump(&p);
	assert_non_null(strstr(a, "\"fault\": \"status\",\n          \"status\": 429"));
	assert_int_equal(plan_parse(a, strlen(a), "a", &q, err), 0);
	b = plan_dump(&q);
	assert_string_equal(a, b);
	free(a);
	free(b);
	plan_free(&p);
	plan_free(&q);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		text = xasprintf("{\"soak_plan\": 1, \"seed\": 3, \"turns\": 2, "
		    "\"rounds\": 1, \"proxies\": {\"llm\": {\"faults\": [{\"round\": "
		    "0, \"turn\": 0, \"key\": \"049677d8bac702c6\", \"occ\": 0, %s}]}}}",
		    bad[i].fault);
		if (plan_parse(text, strlen(text), "p.json", &p, err) != -1)
			fail_msg("accepted: %s", text);
		assert_string_equal(err, bad[i].want);
		free(text);
	}
	/* a trace's: each with what it did */
	assert_int_equal(plan_from_trace(trace, strlen(trace), 3, NULL, 2, 1, &p,
	    err), 0);
	x = plan_proxy(&p, "llm");
	assert_int_equal(x->nfaults, 3);
	assert_int_equal(x->faults[0].fault, PLAN_STATUS);
	assert_int_equal(x->faults[0].status, 529);
	assert_int_equal(x->faults[1].fault, PLAN_STREAM_STALL);
	assert_int_equal(x->faults[1].after, 2);
	assert_int_equal(x->faults[1].stall_ms, 900);
	assert_int_equal(x->faults[2].fault, PLAN_STREAM_CUT);
	assert_int_equal(x->faults[2].after, 5);
	assert_int_equal(x->faults[2].turn, 1);
	plan_free(&p);
	/* a status fault whose status the trace lost is the trace's fault */
	a = "{\"proxy\":\"llm\",\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":"
	    "\"status\",\"key\":\"00000000000000aa\",\"occ\":0}\n";
	assert_int_equal(plan_from_trace(a, strlen(a), 1, NULL, 1, 1, &p, err), -1);
	assert_string_equal(err, "line 1: a status fault without its error status");
}

static void
test_fits(void **state)
{
	struct cfg	cfg = { 0 };
	struct cfg_proxy px[2] = { { .name = "db" }, { .name = "api" } };
	struct plan	p;
	char		err[256];

	(void)state;
	assert_int_equal(plan_parse(good, strlen(good), "p.json", &p, err), 0);
	cfg.name = "res";
	cfg.turns = 3;
	cfg.rounds = 2;
	cfg.proxies = px;
	cfg.nproxies = 2;
	px[0].schedule.enabled = true;
	assert_int_equal(plan_fits(&p, &cfg, err), 0);
	cfg.turns = 2;
	assert_int_equal(plan_fits(&p, &cfg, err), -1);
	assert_string_equal(err, "the plan is of 3 turns x 2 rounds; res has 2 x 2");
	cfg.turns = 8;		/* more turns: the plan runs its own */
	assert_int_equal(plan_fits(&p, &cfg, err), 0);
	cfg.rounds = 1;		/* fewer rounds: the plan's second never runs */
	assert_int_equal(plan_fits(&p, &cfg, err), -1);
	assert_string_equal(err, "the plan is of 3 turns x 2 rounds; res has 8 x 1");
	cfg.rounds = 5;		/* more rounds: the plan runs its own */
	assert_int_equal(plan_fits(&p, &cfg, err), 0);
	cfg.rounds = 2;
	px[0].name = "db2";
	assert_int_equal(plan_fits(&p, &cfg, err), -1);
	assert_string_equal(err, "the plan has decisions for proxy db, which res "
	    "does not have");
	px[0].name = "db";
	px[0].schedule.enabled = false;
	assert_int_equal(plan_fits(&p, &cfg, err), -1);
	assert_non_null(strstr(err, "which has no schedule"));
	plan_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_from_trace),
		cmocka_unit_test(test_api_faults),
		cmocka_unit_test(test_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
