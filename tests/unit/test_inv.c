/*
 * invariants/: inv_check against a real (embedded) PostgreSQL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/inv.h"
#include "isolation/iso.h"

static struct pg_embedded	*pg;
static PGconn			*conn;

static void
exec_ok(const char *sql)
{
	PGresult	*r = PQexec(conn, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
}

/* A deadline no test here should meet: each call's bound, not its limit. */
static int64_t
later(void)
{
	return now_ms() + 60000;
}

static int
group_setup(void **state)
{
	char	err[ERR_LEN] = "";

	(void)state;
	if ((pg = pg_embedded_start(15, err)) == NULL) {
		fprintf(stderr, "pg_embedded_start: %s\n", err);
		return -1;
	}
	conn = PQconnectdb(pg_embedded_conninfo(pg));
	if (PQstatus(conn) != CONNECTION_OK)
		return -1;
	exec_ok("SET client_min_messages = warning; "
	    "CREATE SCHEMA s; SET search_path TO s; "
	    "CREATE TABLE accounts (id int PRIMARY KEY, balance int, owner text); "
	    "INSERT INTO accounts SELECT g, CASE WHEN g <= 25 THEN -g ELSE g END, "
	    "  CASE WHEN g % 2 = 0 THEN NULL ELSE 'o' || g END "
	    "  FROM generate_series(1, 1000) g");
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	PQfinish(conn);
	pg_embedded_stop(pg);
	return 0;
}

/* A cfg holding the given (name, sql) pairs; NULL-terminated varargs. */
static struct cfg
cfg_of(int64_t timeout_ms, struct cfg_invariant *invs, size_t n)
{
	struct cfg	c;

	memset(&c, 0, sizeof(c));
	c.invariants = invs;
	c.ninvariants = n;
	c.invariant_timeout_ms = timeout_ms;
	return c;
}

/* After inv_check, conn must be out of its transaction and usable. */
static void
assert_idle(void)
{
	assert_int_equal(PQtransactionStatus(conn), PQTRANS_IDLE);
	exec_ok("SELECT 1");
}

static void
test_pass_and_violate(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "no negative balance",
		  .sql = "SELECT id, balance, owner FROM accounts "
		      "WHERE balance < 0 ORDER BY id" },
		{ .name = "ids positive",
		  .sql = "SELECT id FROM accounts WHERE id <= 0;" },
		/* violated, and takes at least 50 ms: its duration is measured */
		{ .name = "account 1 is gone",
		  .sql = "SELECT id FROM accounts, pg_sleep(0.05) WHERE id = 1" },
	};
	struct cfg		c = cfg_of(5000, invs, nitems(invs));
	struct inv_result	res;
	struct inv_outcome	*o;
	char			err[ERR_LEN] = "";
	int			r;

	(void)state;
	if (inv_check(conn, &c, later(), &res, err) == -1)
		fail_msg("inv_check: %s", err);
	/* 2 of 3 violated: a count of the invariants that held would say 1 */
	assert_int_equal(res.n, 3);
	assert_int_equal(res.nviolated, 2);

	o = &res.out[0];
	assert_ptr_equal(o->inv, &invs[0]);
	assert_int_equal(o->nrows, 25);
	assert_int_equal(o->nkept, INV_MAX_ROWS);
	assert_int_equal(o->ncols, 3);
	assert_string_equal(o->cols[0], "id");
	assert_string_equal(o->cols[1], "balance");
	assert_string_equal(o->cols[2], "owner");
	for (r = 0; r < o->nkept; r++) {
		char	want[16];

		snprintf(want, sizeof(want), "%d", r + 1);
		assert_string_equal(o->cells[r * 3 + 0], want);
		snprintf(want, sizeof(want), "-%d", r + 1);
		assert_string_equal(o->cells[r * 3 + 1], want);
		/* even ids have a NULL owner, kept as NULL, not "" */
		if ((r + 1) % 2 == 0)
			assert_null(o->cells[r * 3 + 2]);
		else
			assert_non_null(o->cells[r * 3 + 2]);
	}

	o = &res.out[1];
	assert_ptr_equal(o->inv, &invs[1]);
	assert_int_equal(o->nrows, 0);
	assert_int_equal(o->nkept, 0);
	assert_int_equal(o->ncols, 1);
	assert_string_equal(o->cols[0], "id");

	o = &res.out[2];
	assert_ptr_equal(o->inv, &invs[2]);
	assert_int_equal(o->nrows, 1);
	assert_int_equal(o->nkept, 1);
	assert_string_equal(o->cells[0], "1");
	/* the pg_sleep is inside the measured interval */
	if (o->duration_us < 50000)
		fail_msg("duration of a 50 ms invariant: %" PRId64 " us", o->duration_us);
	assert_idle();
	inv_result_free(&res);
	inv_result_free(&res);
	inv_result_free(NULL);
}

static void
test_json_shape(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "holds", .sql = "SELECT 1 WHERE false" },
		{ .name = "broken", .sql = "SELECT id, owner FROM accounts "
		      "WHERE id IN (1, 2, 3) ORDER BY id" },
		{ .name = "lots", .sql = "SELECT g FROM generate_series(1, 50) g" },
	};
	struct cfg		c = cfg_of(5000, invs, nitems(invs));
	struct inv_result	res;
	json_t			*j, *v, *rows;
	char			err[ERR_LEN] = "", *dump;

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
	j = inv_result_json(&res);
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(json_is_array(j));
	assert_int_equal(json_array_size(j), 2);	/* only violated ones */
	v = json_array_get(j, 0);
	assert_string_equal(json_string_value(json_object_get(v, "name")),
	    "broken");
	assert_string_equal(json_string_value(json_object_get(v, "sql")),
	    invs[1].sql);
	assert_int_equal(json_integer_value(json_object_get(v, "row_count")), 3);
	assert_int_equal(json_object_size(v), 5);
	assert_string_equal(dump, "[{\"name\":\"broken\",\"sql\":\""
	    "SELECT id, owner FROM accounts WHERE id IN (1, 2, 3) ORDER BY id\","
	    "\"columns\":[\"id\",\"owner\"],"
	    "\"rows\":[[\"1\",\"o1\"],[\"2\",null],[\"3\",\"o3\"]],"
	    "\"row_count\":3},"
	    "{\"name\":\"lots\",\"sql\":\"SELECT g FROM generate_series(1, 50) g\","
	    "\"columns\":[\"g\"],"
	    "\"rows\":[[\"1\"],[\"2\"],[\"3\"],[\"4\"],[\"5\"],[\"6\"],[\"7\"],"
	    "[\"8\"],[\"9\"],[\"10\"],[\"11\"],[\"12\"],[\"13\"],[\"14\"],[\"15\"],"
	    "[\"16\"],[\"17\"],[\"18\"],[\"19\"],[\"20\"]],\"row_count\":50}]");
	rows = json_object_get(json_array_get(j, 1), "rows");
	assert_int_equal(json_array_size(rows), INV_MAX_ROWS);
	free(dump);
	json_decref(j);
	inv_result_free(&res);

	/* Nothing violated: an empty array, not NULL. */
	c.ninvariants = 1;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
	j = inv_result_json(&res);
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	inv_result_free(&res);
}

static void
test_long_values_capped(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "long", .sql = "SELECT repeat('x', 5000) AS a, "
		      "repeat('é', 1000) AS b" },
	};
	struct cfg		c = cfg_of(5000, invs, nitems(invs));
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	json_t			*j;

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
	assert_int_equal(strlen(res.out[0].cells[0]), INV_MAX_VALUE);
	/* 2-byte characters: cut at a character boundary, not mid-way. */
	assert_int_equal(strlen(res.out[0].cells[1]), INV_MAX_VALUE);
	j = inv_result_json(&res);
	assert_non_null(json_array_get(json_object_get(json_array_get(j, 0),
	    "rows"), 0));
	assert_true(json_is_string(json_array_get(json_array_get(
	    json_object_get(json_array_get(j, 0), "rows"), 0), 1)));
	json_decref(j);
	inv_result_free(&res);
}

static void
test_timeout_names_invariant(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "fast", .sql = "SELECT 1 WHERE false" },
		{ .name = "slow one", .sql = "SELECT pg_sleep(5)" },
		{ .name = "never reached", .sql = "SELECT 1" },
	};
	struct cfg		c = cfg_of(100, invs, nitems(invs));
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	int64_t			t0 = now_ms();

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), -1);
	assert_true(now_ms() - t0 < 3000);
	assert_string_equal(err, "invariant \"slow one\": canceling statement "
	    "due to statement timeout (invariant timeout 100 ms)");
	assert_int_equal(res.n, 0);
	assert_null(res.out);
	inv_result_free(&res);
	assert_idle();
	/* SET LOCAL: the timeout did not leak into the session. */
	{
		PGresult	*r = PQexec(conn, "SHOW statement_timeout");

		assert_string_equal(PQgetvalue(r, 0, 0), "0");
		PQclear(r);
	}
}

static void
test_read_only(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "sneaky", .sql = "DELETE FROM accounts RETURNING id" },
	};
	struct cfg		c = cfg_of(5000, invs, nitems(invs));
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	PGresult		*r;

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), -1);
	assert_string_equal(err, "invariant \"sneaky\": cannot execute DELETE "
	    "in a read-only transaction");
	assert_idle();
	r = PQexec(conn, "SELECT count(*) FROM accounts");
	assert_string_equal(PQgetvalue(r, 0, 0), "1000");
	PQclear(r);
}

static void
test_sql_errors(void **state)
{
	struct cfg_invariant	missing[] = {
		{ .name = "balance", .sql = "SELECT * FROM x" },
	};
	struct cfg_invariant	multi[] = {
		{ .name = "two", .sql = "SELECT 1; SELECT 2" },
	};
	struct cfg		c = cfg_of(5000, missing, 1);
	struct inv_result	res;
	char			err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), -1);
	assert_string_equal(err, "invariant \"balance\": relation \"x\" does "
	    "not exist");
	assert_idle();

	c = cfg_of(5000, multi, 1);
	assert_int_equal(inv_check(conn, &c, later(), &res, err), -1);
	assert_non_null(strstr(err, "invariant \"two\": "));
	assert_idle();

	/* No invariants: nothing to run, nothing violated. */
	c = cfg_of(5000, NULL, 0);
	assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
	assert_int_equal(res.n, 0);
	assert_int_equal(res.nviolated, 0);
	inv_result_free(&res);
}

/*
 * An invariant that waits (here on a lock another session holds) stops at
 * the deadline, whatever invariant_timeout says, with the connection left
 * mid-query for the caller to drop.
 */
static void
test_deadline(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "fast", .sql = "SELECT 1 WHERE false" },
		{ .name = "waits", .sql = "SELECT id FROM accounts WHERE false" },
	};
	struct cfg		c = cfg_of(60000, invs, nitems(invs));
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	PGconn			*holder, *checker;
	int64_t			t0, took;

	(void)state;
	holder = PQconnectdb(pg_embedded_conninfo(pg));
	checker = PQconnectdb(pg_embedded_conninfo(pg));
	assert_int_equal(PQstatus(holder), CONNECTION_OK);
	assert_int_equal(PQstatus(checker), CONNECTION_OK);
	/* lock_timeout: a check that ignored its deadline fails in 5 s,
	 * not never. */
	PQclear(PQexec(checker, "SET search_path TO s; SET lock_timeout = '5s'"));
	PQclear(PQexec(holder, "BEGIN; LOCK TABLE s.accounts IN ACCESS EXCLUSIVE MODE"));
	t0 = now_ms();
	assert_int_equal(inv_check(checker, &c, t0 + 400, &res, err), -1);
	took = now_ms() - t0;
	PQclear(PQexec(holder, "ROLLBACK"));
	assert_true(took >= 400);
	assert_true(took < 2000);
	assert_string_equal(err, "invariant \"waits\": no answer from the "
	    "database before the deadline");
	assert_int_equal(res.n, 0);
	assert_int_equal(PQtransactionStatus(checker), PQTRANS_ACTIVE);
	iso_pq_abandon(checker);
	PQfinish(holder);
}

static void
test_lost_connection(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "any", .sql = "SELECT 1" },
	};
	struct cfg		c = cfg_of(5000, invs, 1);
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	PGconn			*victim;
	PGresult		*r;
	char			*sql;

	(void)state;
	victim = PQconnectdb(pg_embedded_conninfo(pg));
	assert_int_equal(PQstatus(victim), CONNECTION_OK);
	sql = xasprintf("SELECT pg_terminate_backend(%d)", PQbackendPID(victim));
	r = PQexec(conn, sql);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	free(sql);
	assert_int_equal(inv_check(victim, &c, later(), &res, err), -1);
	assert_non_null(strstr(err, "invariant"));
	assert_int_equal(res.n, 0);
	PQfinish(victim);

	assert_int_equal(inv_check(NULL, &c, later(), &res, err), -1);
	assert_non_null(strstr(err, "no database connection"));
}

/*
 * One read-only REPEATABLE READ transaction: every invariant sees the
 * same snapshot and cannot change what it judges.
 */
static void
test_transaction_mode(void **state)
{
	struct cfg_invariant	invs[] = {
		{ .name = "mode", .sql = "SELECT current_setting("
		      "'transaction_isolation') AS iso, current_setting("
		      "'transaction_read_only') AS ro, current_setting("
		      "'statement_timeout') AS st" },
		{ .name = "same tx", .sql = "SELECT txid_current_if_assigned() "
		      "IS NULL AS unassigned, now() = statement_timestamp() AS x" },
	};
	struct cfg		c = cfg_of(1234, invs, nitems(invs));
	struct inv_result	res;
	char			err[ERR_LEN] = "";
	int64_t			t0;
	int			i, n = 50;

	(void)state;
	assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
	assert_string_equal(res.out[0].cells[0], "repeatable read");
	assert_string_equal(res.out[0].cells[1], "on");
	assert_string_equal(res.out[0].cells[2], "1234ms");
	/* now() is the transaction's start: later statements differ. */
	assert_string_equal(res.out[1].cells[1], "f");
	inv_result_free(&res);

	t0 = now_us();
	for (i = 0; i < n; i++) {
		assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
		inv_result_free(&res);
	}
	fprintf(stderr, "# inv_check, 2 trivial invariants: %.2f ms per check\n",
	    (double)(now_us() - t0) / n / 1000.0);

	/* Closer to life: a GROUP BY and a scan over 1000 rows. */
	{
		struct cfg_invariant	real[] = {
			{ .name = "one owner per id", .sql = "SELECT id, "
			      "count(*) FROM accounts GROUP BY id HAVING "
			      "count(*) > 1" },
			{ .name = "no negative balance", .sql = "SELECT id, "
			      "balance FROM accounts WHERE balance < 0" },
			{ .name = "owners", .sql = "SELECT owner FROM accounts "
			      "WHERE owner LIKE 'x%'" },
		};

		c = cfg_of(1234, real, nitems(real));
		t0 = now_us();
		for (i = 0; i < n; i++) {
			assert_int_equal(inv_check(conn, &c, later(), &res, err), 0);
			assert_int_equal(res.nviolated, 1);
			inv_result_free(&res);
		}
		fprintf(stderr, "# inv_check, 3 invariants over 1000 rows "
		    "(25 violating): %.2f ms per check\n",
		    (double)(now_us() - t0) / n / 1000.0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_and_violate),
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_long_values_capped),
		cmocka_unit_test(test_timeout_names_invariant),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_sql_errors),
		cmocka_unit_test(test_lost_connection),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_transaction_mode),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
