/*
 * A run's coverage (coordinator/coverage.c): the seeds' counts summed, the
 * steps' median and most, the warnings a user acts on (a proxy nobody
 * reached, a fault that never fired, a schedule that took no step in some
 * or every seed, a PCT k far from the steps taken, an invariant never
 * checked, a service's statements that bypassed a schedule, a schedule
 * that serialized a service), PCT's bound, and the summary's lines.
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
#include "common/util.h"
#include "coordinator/coverage.h"

static struct cfg_proxy		px[3];
static struct cfg_invariant	invs[2];
static struct cfg		cfg;

/*
 * db: in front of the database, scheduled by pct (k = 40, d = 3), a
 * latency and a lost_reply; api: a service, unscheduled, duplicate under a
 * match; cache: nobody's, with a blackhole.
 */
static void
mk(int steps)
{
	memset(&cfg, 0, sizeof(cfg));
	memset(px, 0, sizeof(px));
	px[0] = (struct cfg_proxy){ .name = "db", .upstream_kind = CFG_UP_DATABASE,
	    .faults = { .rate = 0.2, .lost_reply = 0.5, .latency_min_ms = 1,
	    .latency_max_ms = 5 },
	    .schedule = { .enabled = true, .mode = CFG_SCHED_PCT, .depth = 3,
	    .steps = steps } };
	px[1] = (struct cfg_proxy){ .name = "api", .upstream_kind = CFG_UP_SERVICE,
	    .faults = { .rate = 0.1, .duplicate = 1, .match = "^POST /never" } };
	px[2] = (struct cfg_proxy){ .name = "cache", .upstream_kind = CFG_UP_HOSTPORT,
	    .faults = { .blackhole = 0.1 } };
	invs[0] = (struct cfg_invariant){ .name = "balances add up" };
	invs[1] = (struct cfg_invariant){ .name = "no job lost" };
	cfg.name = "t";
	cfg.turns = 4;
	cfg.proxies = px;
	cfg.nproxies = 3;
	cfg.invariants = invs;
	cfg.ninvariants = 2;
}

static void
add(struct cov *c, const char *text)
{
	json_error_t	 je;
	json_t		*j = json_loads(text, 0, &je);

	if (j == NULL)
		fail_msg("%s: %s", text, je.text);
	cov_add(c, j);
	json_decref(j);
}

static char *
summary(const struct cov *c)
{
	char	*text = NULL;
	size_t	 len;
	FILE	*f = open_memstream(&text, &len);

	cov_summary(f, c);
	fclose(f);
	return text;
}

static const char *
jget_str(const json_t *a, size_t i)
{
	return json_string_value(json_array_get(a, i));
}

/* Does one of the warnings contain s? */
static bool
warned(const json_t *cov, const char *s)
{
	const json_t	*w = json_object_get(cov, "warnings");
	size_t		 i;

	for (i = 0; i < json_array_size(w); i++)
		if (strstr(jget_str(w, i), s) != NULL)
			return true;
	return false;
}

#define SEED(db_steps, forced) \
	"{\"proxies\":{\"db\":{\"exchanges\":" #db_steps ",\"connections\":4," \
	"\"faults\":{\"lost_reply\":1},\"latency\":3,\"steps\":" #db_steps \
	",\"forced\":" forced ",\"lock_waits\":2,\"deadlocks\":{\"soak\":1}}," \
	"\"api\":{\"exchanges\":5,\"connections\":5}}," \
	"\"invariants\":[[1,0],[0,0]]}"

/*
 * Three seeds of 20, 24 and 30 steps (median 24, most 30) against k = 40:
 * every sum, the kinds with their zeros, each warning once.
 */
static void
test_sums_and_warnings(void **state)
{
	struct cov	*c;
	json_t		*j, *db;
	char		*s;

	(void)state;
	mk(40);
	c = cov_new(&cfg);
	add(c, SEED(20, "{\"arrival\":2}"));
	add(c, SEED(24, "{}"));
	add(c, SEED(30, "{\"arrival\":1,\"watchdog\":1}"));
	add(c, "{\"invariants\":[[2,1],[0,0]]}");	/* no proxy opened */
	cov_add(c, NULL);				/* none reported: not a seed */
	j = json_pack("{s:{s:{s:{s:i,s:i}}}}", "proxies", "db", "forced", "arrival",
	    2, "blocked", 3);
	assert_int_equal(cov_seed_forced(j), 5);
	json_decref(j);
	j = cov_json(c);
	assert_int_equal(json_integer_value(json_object_get(j, "seeds")), 4);
	db = json_object_get(json_object_get(j, "proxies"), "db");
	s = json_dumps(db, JSON_COMPACT);
	assert_string_equal(s, "{\"schedule\":\"pct\",\"exchanges\":74,"
	    "\"seeds_with_exchanges\":3,\"connections\":12,\"faults\":{\"lost_reply\":3,"
	    "\"reset\":0,\"duplicate\":0,\"blackhole\":0,\"status\":0,"
	    "\"stream_cut\":0,\"stream_stall\":0,\"close_after\":0,"
	    "\"latency\":9},\"steps\":74,\"steps_per_seed\":{\"median\":24,"
	    "\"max\":30},\"forced\":{\"arrival\":3,\"blocked\":0,\"watchdog\":1},"
	    "\"lock_waits\":6,\"deadlocks\":{\"soak\":3,\"postgres\":0},"
	    "\"idle\":[],\"bypassed\":{},\"serialized\":{\"steps\":0,"
	    "\"seeds\":0},\"seeds_without_steps\":0}");
	free(s);
	s = json_dumps(json_object_get(j, "forced"), JSON_COMPACT);
	assert_string_equal(s, "{\"decisions\":4,\"seeds\":2}");
	free(s);
	s = json_dumps(json_object_get(j, "invariants"), JSON_COMPACT);
	assert_string_equal(s, "[{\"name\":\"balances add up\",\"seeds_checked\":4,"
	    "\"seeds_broken\":1},{\"name\":\"no job lost\",\"seeds_checked\":0,"
	    "\"seeds_broken\":0}]");
	free(s);
	/* cache: nobody reached it, and how one would */
	assert_true(warned(j, "proxy cache saw no exchange in any of the 4 seeds: "
	    "no turn's traffic went through it. A turn reaches it at "
	    "$SOAK_PROXY_CACHE (host:port of its own listener)"));
	/* api's duplicate never fired: its match is the suspect */
	assert_true(warned(j, "proxy api: duplicate never fired in 15 exchanges of 4 "
	    "seeds, though its share is 10 % of them; its match: /^POST /never/"));
	/* db's faults all fired; its k is fine (30 <= 40 <= 60) */
	assert_false(warned(j, "proxy db"));
	assert_true(warned(j, "invariant \"no job lost\" was checked in none of the 4 seeds"));
	assert_int_equal(json_array_size(json_object_get(j, "warnings")), 3);
	/* PCT's bound: 1/(4 * 40^2) a seed, over 4 seeds */
	s = json_dumps(json_array_get(json_object_get(j, "pct"), 0), JSON_COMPACT |
	    JSON_REAL_PRECISION(6));
	assert_string_equal(s, "{\"proxy\":\"db\",\"turns\":4,\"steps\":40,\"depth\":3,"
	    "\"per_seed\":0.00015625,\"seeds\":4,\"over_run\":0.000624854,\"forced\":4,"
	    "\"assumes\":\"no forced decisions and no exchanges outside the schedule\"}");
	free(s);
	json_decref(j);
	s = summary(c);
	assert_non_null(strstr(s, "\n  coverage of 4 seeds:\n"
	    "    proxy db (pct): 74 exchanges in 3 seeds, 12 connections; 74 scheduled "
	    "steps (median 24, at most 30 a seed), 4 forced (arrival 3, watchdog 1); "
	    "6 lock waits, 3 deadlocks: 3 broken by soak, 0 by PostgreSQL; faults: "
	    "lost_reply 3, latency 9\n"
	    "    proxy api: 15 exchanges in 3 seeds, 15 connections; faults: "
	    "duplicate 0\n"
	    "    proxy cache: no exchange in any seed\n"
	    "    invariant \"balances add up\": checked in 4 seeds, broken in 1\n"
	    "    invariant \"no job lost\": checked in 0 seeds, broken in 0\n"
	    "    4 forced decisions in 2 of 4 seeds\n"
	    "    pct bound, proxy db (n = 4 turns, k = 40 steps, d = 3): a bug of "
	    "depth 3 or less is found in a seed with probability p \u2265 "
	    "1/(4\u00b740^2) = 0.0156 %, and in the run's 4 seeds with 1 \u2212 "
	    "(1 \u2212 p)^4 = 0.0625 %, assuming no forced decisions and no "
	    "exchanges outside the schedule (this run: 4 forced decisions)\n"
	    "    warning: proxy api: duplicate never fired"));
	assert_non_null(strstr(s, "\n    warning: proxy cache saw no exchange"));
	free(s);
	cov_free(c);
}

/*
 * The turns arrival went without (issue 35): counted per turn over the
 * seeds, named in the summary with what to do; a forced decision of
 * another kind names none.  And what the schedules waited for their
 * actors: summed, its share of the seeds' time, the slowest step (the
 * lowest seed on a tie), a seed without a schedule left out.
 */
static void
test_idle_and_waits(void **state)
{
	struct cov	*c;
	struct cov_waits w;
	json_t		*j, *t;
	char		*s;

	(void)state;
	mk(40);
	c = cov_new(&cfg);
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":9,\"steps\":9,\"forced\":"
	    "{\"arrival\":3},\"idle\":{\"3\":3,\"1\":1}}}}");
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":9,\"steps\":9,\"forced\":"
	    "{\"arrival\":1,\"blocked\":1},\"idle\":{\"3\":1,\"x\":5}}}}");
	j = cov_json(c);
	s = json_dumps(json_object_get(json_object_get(json_object_get(j,
	    "proxies"), "db"), "idle"), JSON_COMPACT);
	assert_string_equal(s, "[{\"turn\":1,\"decisions\":1,\"seeds\":1},"
	    "{\"turn\":3,\"decisions\":4,\"seeds\":2}]");
	free(s);
	json_decref(j);

	/* waits: seeds 7 (the slowest, 120 ms at step 4) and 2 (120 ms too:
	 * the lower seed wins the tie), 5 without a schedule */
	t = json_pack("{s:{s:i, s:i, s:i, s:i, s:s}}", "waits", "ms", 300,
	    "steps", 10, "max_ms", 120, "max_step", 4, "max_proxy", "db");
	cov_seed_waits(c, t, &w);
	assert_true(w.scheduled);
	assert_int_equal(w.max_proxy, 0);
	cov_add_waits(c, 7, &w, 1000);
	json_object_set_new(json_object_get(t, "waits"), "max_step",
	    json_integer(9));
	json_object_set_new(json_object_get(t, "waits"), "ms", json_integer(200));
	cov_seed_waits(c, t, &w);
	cov_add_waits(c, 2, &w, 600);
	json_decref(t);
	cov_seed_waits(c, NULL, &w);
	assert_false(w.scheduled);
	cov_add_waits(c, 5, &w, 99999);
	j = cov_waits_json(&cfg, &w);
	assert_true(json_is_null(j));
	json_decref(j);
	t = json_pack("{s:{s:i, s:s}}", "waits", "ms", 1, "max_proxy", "gone");
	cov_seed_waits(c, t, &w);		/* a proxy the config lacks */
	assert_false(w.scheduled);
	json_decref(t);
	j = cov_json(c);
	s = json_dumps(json_object_get(j, "waits"), JSON_COMPACT);
	assert_string_equal(s, "{\"ms\":500,\"steps\":20,\"seeds\":2,"
	    "\"seeds_ms\":1600,\"slowest\":{\"seed\":2,\"proxy\":\"db\","
	    "\"step\":9,\"ms\":120}}");
	free(s);
	json_decref(j);
	s = summary(c);
	assert_non_null(strstr(s, "    proxy db: 4 decisions forced by arrival "
	    "(0ms) went without turn 1 (1 time in 1 seed), turn 3 (4 times in 2 "
	    "seeds): each was outside every proxy of its seed"));
	assert_non_null(strstr(s, "Raise proxies: db: schedule: arrival: above"));
	assert_non_null(strstr(s, "    the schedules waited 500ms for their actors "
	    "in 2 seeds, 31 % of those seeds' 1.6s (25ms a step over 20 steps); "
	    "the slowest step: 120ms, step 9 of proxy db in seed 2\n"));
	assert_null(strstr(s, "a step waits until every live turn"));	/* < 50 % */
	free(s);
	cov_free(c);
}

/* k far above the steps taken, and below: each warned with the figures. */
static void
test_pct_steps(void **state)
{
	struct cov	*c;
	json_t		*j;

	(void)state;
	mk(200);
	c = cov_new(&cfg);
	add(c, SEED(20, "{}"));
	add(c, SEED(24, "{}"));
	j = cov_json(c);
	assert_true(warned(j, "proxy db: its pct steps (k = 200) is far above the "
	    "steps seeds took (median 20, at most 24): a change point falls past a "
	    "seed's last step, wasted, 88 % of the time or more; set steps: to "
	    "about 24 (drivers send BEGIN and COMMIT of their own"));
	json_decref(j);
	cov_free(c);
	mk(12);
	c = cov_new(&cfg);
	add(c, SEED(20, "{}"));
	j = cov_json(c);
	assert_true(warned(j, "proxy db: seeds took up to 20 scheduled steps (median "
	    "20), more than its pct steps (k = 12): PCT's change points fall only in "
	    "steps 1..12"));
	json_decref(j);
	cov_free(c);
}

/*
 * A scheduled proxy that saw only start-ups took no step; one nobody
 * reached in front of the database names the libpq variables; a fault of
 * a share that fired nowhere says how many were expected.
 */
static void
test_no_step_and_database(void **state)
{
	struct cov	*c;
	json_t		*j;
	char		*s;

	(void)state;
	mk(40);
	c = cov_new(&cfg);
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":8,\"connections\":8}}}");
	j = cov_json(c);
	assert_true(warned(j, "proxy db has a schedule (pct) but took no step in any "
	    "of the 1 seeds: its 8 exchanges were all outside it"));
	assert_true(warned(j, "proxy db: lost_reply never fired in 8 exchanges of 1 "
	    "seeds, though its share is 10 % of them, about 0.8 expected"));
	assert_true(warned(j, "proxy db: latency (1..5 ms) delayed none of its 8 "
	    "exchanges in 1 seeds"));
	assert_true(json_is_null(json_object_get(json_object_get(json_object_get(j,
	    "proxies"), "db"), "steps_per_seed")));
	json_decref(j);
	cov_free(c);
	mk(40);
	c = cov_new(&cfg);
	add(c, "{\"proxies\":{\"api\":{\"exchanges\":1}}}");
	j = cov_json(c);
	assert_true(warned(j, "proxy db saw no exchange in any of the 1 seeds: no "
	    "turn's traffic went through it, so its schedule took no step. A turn "
	    "reaches it at $SOAK_PROXY_DB (host:port of its own listener); in front "
	    "of the database, also through PGHOST, PGPORT and DATABASE_URL when "
	    "they point at it"));
	json_decref(j);
	cov_free(c);
	/* no seed reported: no line, no warning */
	c = cov_new(&cfg);
	j = cov_json(c);
	assert_int_equal(json_array_size(json_object_get(j, "warnings")), 0);
	json_decref(j);
	s = summary(c);
	assert_string_equal(s, "");
	free(s);
	cov_free(c);
}

/*
 * Issue 34 items 5 and 6: a service's exchanges that passed a schedule
 * unheld, counted per service and seed; a schedule in front of a service
 * that held requests to their replies (serialized), named; a schedule that
 * took no step in some seeds of a run in which it took some.
 */
static void
test_seam_warnings(void **state)
{
	static struct cfg_service	svcs[1];
	struct cov			*c;
	json_t				*j, *db, *api;
	char				*s;

	(void)state;
	mk(40);
	svcs[0] = (struct cfg_service){ .name = "tools" };
	cfg.services = svcs;
	cfg.nservices = 1;
	px[1].upstream = "tools";
	px[1].schedule = (struct cfg_schedule){ .enabled = true,
	    .mode = CFG_SCHED_RANDOM };
	c = cov_new(&cfg);
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":9,\"steps\":4,"
	    "\"bypassed\":{\"tools\":5,\"ghost\":7}},\"api\":{\"exchanges\":4,"
	    "\"steps\":4,\"serialized\":2}}}");
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":6,\"bypassed\":"
	    "{\"tools\":6}},\"api\":{\"exchanges\":2,\"steps\":2,"
	    "\"serialized\":1}}}");
	add(c, "{\"proxies\":{\"db\":{\"exchanges\":3,\"steps\":3},"
	    "\"api\":{\"exchanges\":1,\"steps\":1}}}");
	j = cov_json(c);
	db = json_object_get(json_object_get(j, "proxies"), "db");
	api = json_object_get(json_object_get(j, "proxies"), "api");
	/* a service the config does not have is left out */
	s = json_dumps(json_object_get(db, "bypassed"), JSON_COMPACT);
	assert_string_equal(s, "{\"tools\":{\"exchanges\":11,\"seeds\":2}}");
	free(s);
	s = json_dumps(json_object_get(api, "serialized"), JSON_COMPACT);
	assert_string_equal(s, "{\"steps\":3,\"seeds\":2}");
	free(s);
	assert_int_equal(json_integer_value(json_object_get(db,
	    "seeds_without_steps")), 1);
	assert_true(warned(j, "proxy db: 11 statements of service tools bypassed "
	    "the schedule (pct), in 2 of the 3 seeds: which turn's request they "
	    "served could not be told (the service was called on its own port, "
	    "not through a proxy of the config"));
	assert_false(warned(j, "ghost"));
	assert_true(warned(j, "proxy api: its schedule (random) serialized service "
	    "tools in 2 of the 3 seeds: 3 steps admitted a request while another "
	    "turn's waited, and each is held until its reply, so the service "
	    "never ran two requests at once"));
	assert_true(warned(j, "proxy db has a schedule (pct) but took no step in 1 "
	    "of the 3 seeds"));
	assert_false(warned(j, "proxy api has a schedule"));
	s = summary(c);
	assert_non_null(strstr(s, "    warning: proxy db: 11 statements of service "
	    "tools bypassed the schedule"));
	assert_non_null(strstr(s, "    warning: proxy api: its schedule (random) "
	    "serialized service tools"));
	free(s);
	json_decref(j);
	cov_free(c);
}

/*
 * Seeds whose trace the worker could not read (issue 38: a byte that was
 * not UTF-8 made a whole run "no exchange in any seed"): counted as seeds
 * and in their invariants, said as soak's error, never as proxies nobody
 * reached.
 */
static void
test_unread_traces(void **state)
{
	struct cov	*c;
	json_t		*j;
	char		*s;

	(void)state;
	mk(40);
	c = cov_new(&cfg);
	add(c, "{\"unread\":\"the trace: line 1 is not a JSON object\","
	    "\"invariants\":[[1,0],[1,0]]}");
	add(c, "{\"unread\":\"the trace: line 3 is not a JSON object\","
	    "\"invariants\":[[1,0],[1,0]]}");
	j = cov_json(c);
	assert_int_equal(json_integer_value(json_object_get(j, "seeds")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "unread_traces")), 2);
	assert_true(warned(j, "soak could not read its own fault trace of 2 of the "
	    "2 seeds (soak's error, not the system's: each is infra, reason trace, "
	    "unless it failed; the worker's log says why): their exchanges are in "
	    "no count here"));
	assert_false(warned(j, "saw no exchange"));
	assert_false(warned(j, "never fired"));
	assert_int_equal(json_array_size(json_object_get(j, "warnings")), 1);
	json_decref(j);
	s = summary(c);
	assert_non_null(strstr(s, "\n  coverage of 2 seeds (2 whose fault trace "
	    "soak could not read: infra, reason trace; their exchanges are not "
	    "counted):\n    proxy db (pct): no fault trace read\n"));
	assert_null(strstr(s, "no exchange in any seed"));
	assert_non_null(strstr(s, "invariant \"no job lost\": checked in 2 seeds"));
	free(s);
	/* one traced seed beside: the proxies' warnings are of it alone */
	add(c, "{\"proxies\":{\"api\":{\"exchanges\":1}},"
	    "\"invariants\":[[1,0],[1,0]]}");
	j = cov_json(c);
	assert_true(warned(j, "proxy db saw no exchange in any of the 1 seeds"));
	assert_true(warned(j, "of 1 of the 3 seeds") == false);
	assert_true(warned(j, "fault trace of 2 of the 3 seeds"));
	json_decref(j);
	cov_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sums_and_warnings),
		cmocka_unit_test(test_pct_steps),
		cmocka_unit_test(test_idle_and_waits),
		cmocka_unit_test(test_no_step_and_database),
		cmocka_unit_test(test_seam_warnings),
		cmocka_unit_test(test_unread_traces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
