/*
 * Invariant checks (contract in inv.h).
 */
#include "invariants/inv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "isolation/iso.h"

/* A copy capped at INV_MAX_VALUE bytes, never splitting a UTF-8 character. */
static char *
cap_value(const char *v, size_t len)
{
	char	*c;

	if (len > INV_MAX_VALUE) {
		len = INV_MAX_VALUE;
		while (len > 0 && ((unsigned char)v[len] & 0xc0) == 0x80)
			len--;
	}
	c = xcalloc(len + 1, 1);
	memcpy(c, v, len);
	return c;
}

static void
outcome_fill(struct inv_outcome *o, const PGresult *res)
{
	int	r, c;

	o->ncols = PQnfields(res);
	o->nrows = PQntuples(res);
	o->nkept = o->nrows < INV_MAX_ROWS ? (int)o->nrows : INV_MAX_ROWS;
	o->cols = xcalloc((size_t)o->ncols + 1, sizeof(char *));
	for (c = 0; c < o->ncols; c++)
		o->cols[c] = xstrdup(PQfname(res, c));
	o->cells = xcalloc((size_t)o->nkept * o->ncols + 1, sizeof(char *));
	for (r = 0; r < o->nkept; r++)
		for (c = 0; c < o->ncols; c++)
			if (!PQgetisnull(res, r, c))
				o->cells[r * o->ncols + c] = cap_value(
				    PQgetvalue(res, r, c),
				    (size_t)PQgetlength(res, r, c));
}

static void
outcome_free(struct inv_outcome *o)
{
	int	i;

	for (i = 0; o->cols && i < o->ncols; i++)
		free(o->cols[i]);
	for (i = 0; o->cells && i < o->nkept * o->ncols; i++)
		free(o->cells[i]);
	free(o->cols);
	free(o->cells);
}

#define INV_NO_ANSWER	"no answer from the database before the deadline"

/* Runs one statement that must succeed without rows. */
static int
run_cmd(PGconn *conn, const char *sql, int64_t deadline, char *err)
{
	PGresult	*res;
	char		 m[200];
	bool		 expired;
	int		 rc = 0;

	res = iso_pq_exec(conn, sql, deadline, &expired);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = errf(err, "invariants: \"%s\" failed: %s", sql, expired ?
		    INV_NO_ANSWER : iso_pq_msg(conn, res, m, sizeof(m)));
	PQclear(res);
	return rc;
}

int
inv_check(PGconn *conn, const struct cfg *cfg, int64_t deadline,
    struct inv_result *res, char *err)
{
	const struct cfg_invariant	*inv;
	struct inv_outcome		*o;
	PGresult			*r = NULL;
	char				 sql[128], m[200], sqlstate[6];
	const char			*code;
	int64_t				 t0;
	size_t				 i = 0, failed;
	long				 position;
	bool				 expired = false;

	memset(res, 0, sizeof(*res));
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		return errf(err, "invariants: no database connection: %s",
		    iso_pq_msg(conn, NULL, m, sizeof(m)));
	if (cfg->ninvariants == 0)
		return 0;
	res->out = xcalloc(cfg->ninvariants, sizeof(*res->out));

	/*
	 * One snapshot for every query, so invariants that relate tables see
	 * the same moment; read-only so a careless query cannot change what
	 * it is judging.
	 */
	if (run_cmd(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
	    deadline, err) == -1)
		goto fail;
	snprintf(sql, sizeof(sql), "SET LOCAL statement_timeout = %" PRId64,
	    cfg->invariant_timeout_ms > 0 ? cfg->invariant_timeout_ms : 0);
	if (run_cmd(conn, sql, deadline, err) == -1)
		goto fail;

	for (i = 0; i < cfg->ninvariants; i++) {
		inv = &cfg->invariants[i];
		o = &res->out[i];
		o->inv = inv;
		t0 = now_us();
		/* Extended protocol: exactly one statement per invariant. */
		r = iso_pq_query(conn, inv->sql, 0, NULL, deadline, &expired);
		o->duration_us = now_us() - t0;
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			if (expired)
				errf(err, "invariant \"%s\": %s", inv->name,
				    INV_NO_ANSWER);
			else if (PQresultStatus(r) == PGRES_COMMAND_OK)
				errf(err, "invariant \"%s\": returned no result "
				    "set; an invariant must be a query that "
				    "returns the violating rows", inv->name);
			else if (code && strcmp(code, "57014") == 0)
				errf(err, "invariant \"%s\": %s (invariant "
				    "timeout %" PRId64 " ms)", inv->name,
				    iso_pq_msg(conn, r, m, sizeof(m)),
				    cfg->invariant_timeout_ms);
			else if (PQstatus(conn) != CONNECTION_OK)
				errf(err, "invariant \"%s\": connection to the "
				    "database lost: %s", inv->name,
				    iso_pq_msg(conn, r, m, sizeof(m)));
			else
				errf(err, "invariant \"%s\": %s", inv->name,
				    iso_pq_msg(conn, r, m, sizeof(m)));
			goto fail;
		}
		outcome_fill(o, r);
		PQclear(r);
		r = NULL;
		res->n++;
		if (o->nrows > 0)
			res->nviolated++;
	}
	if (run_cmd(conn, "ROLLBACK", deadline, err) == -1)
		goto fail;
	return 0;
fail:
	/* What the caller needs to tell a config error from the rest. */
	failed = i;
	snprintf(sqlstate, sizeof(sqlstate), "%s", !expired && r != NULL &&
	    PQresultStatus(r) == PGRES_FATAL_ERROR && PQresultErrorField(r,
	    PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "");
	code = !expired && r != NULL ? PQresultErrorField(r,
	    PG_DIAG_STATEMENT_POSITION) : NULL;
	position = code != NULL ? strtol(code, NULL, 10) : 0;
	PQclear(r);
	/* Not while a query is still in flight: that one is the caller's to
	 * drop (the deadline passed). */
	if (PQstatus(conn) == CONNECTION_OK &&
	    PQtransactionStatus(conn) != PQTRANS_ACTIVE)
		PQclear(iso_pq_exec(conn, "ROLLBACK", deadline, &expired));
	/* Partly filled outcomes are freed here; res is left empty. */
	if (res->out != NULL)
		for (i = 0; i < cfg->ninvariants; i++)
			outcome_free(&res->out[i]);
	free(res->out);
	memset(res, 0, sizeof(*res));
	res->failed = failed;
	memcpy(res->sqlstate, sqlstate, sizeof(res->sqlstate));
	res->position = position;
	return -1;
}

void
inv_result_free(struct inv_result *res)
{
	size_t	i;

	if (res == NULL)
		return;
	for (i = 0; i < res->n; i++)
		outcome_free(&res->out[i]);
	free(res->out);
	memset(res, 0, sizeof(*res));
}

int
inv_prepare(PGconn *conn, const struct cfg *cfg, int64_t deadline, inv_bad_fn bad,
    void *arg, char *err)
{
	PGresult	*r = NULL;
	const char	*pos;
	char		 m[ERR_LEN];
	size_t		 i;
	bool		 expired = false;
	int		 nbad = 0;

	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		return errf(err, "invariants: no database connection: %s",
		    iso_pq_msg(conn, NULL, m, sizeof(m)));
	if (run_cmd(conn, "BEGIN READ ONLY", deadline, err) == -1)
		goto fail;
	for (i = 0; i < cfg->ninvariants; i++) {
		/* A config kept past its errors (soak check): told already. */
		if (cfg->invariants[i].sql == NULL)
			continue;
		if (run_cmd(conn, "SAVEPOINT soak_check", deadline, err) == -1)
			goto fail;
		r = iso_pq_prepare(conn, "", cfg->invariants[i].sql, deadline,
		    &expired);
		if (expired || r == NULL || PQstatus(conn) != CONNECTION_OK) {
			errf(err, "invariant \"%s\": %s", cfg->invariants[i].name,
			    expired ? INV_NO_ANSWER : iso_pq_msg(conn, r, m, sizeof(m)));
			goto fail;
		}
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			pos = PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
			bad(arg, i, PQresultErrorField(r, PG_DIAG_SQLSTATE) ?
			    PQresultErrorField(r, PG_DIAG_SQLSTATE) : "",
			    iso_pq_msg(conn, r, m, sizeof(m)),
			    pos ? strtol(pos, NULL, 10) : 0);
			nbad++;
			PQclear(r);
			r = NULL;
			if (run_cmd(conn, "ROLLBACK TO SAVEPOINT soak_check", deadline,
			    err) == -1)
				goto fail;
			continue;
		}
		PQclear(r);
		r = NULL;
	}
	if (run_cmd(conn, "ROLLBACK", deadline, err) == -1)
		goto fail;
	return nbad;
fail:
	PQclear(r);
	if (!expired && PQstatus(conn) == CONNECTION_OK &&
	    PQtransactionStatus(conn) != PQTRANS_ACTIVE)
		PQclear(iso_pq_exec(conn, "ROLLBACK", deadline, &expired));
	return -1;
}

/*
 * jansson refuses invalid UTF-8 (a database in SQL_ASCII can hand us any
 * bytes); such a value is kept with its non-ASCII bytes as '?'.
 */
static json_t *
json_text(const char *s)
{
	json_t	*j;
	char	*c;

	if (s == NULL)
		return json_null();
	if ((j = json_string(s)) != NULL)
		return j;
	c = xstrdup(s);
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

/* One outcome as JSON; with every, also "holds" and "duration_ms". */
static json_t *
outcome_json(const struct inv_outcome *o, bool every)
{
	json_t	*v, *cols = json_array(), *rows = json_array(), *row;
	int	 r, c;

	for (c = 0; c < o->ncols; c++)
		json_array_append_new(cols, json_text(o->cols[c]));
	for (r = 0; r < o->nkept; r++) {
		row = json_array();
		for (c = 0; c < o->ncols; c++)
			json_array_append_new(row, json_text(o->cells[r * o->ncols + c]));
		json_array_append_new(rows, row);
	}
	v = json_pack("{s:o, s:o, s:o, s:o, s:I}", "name", json_text(o->inv->name),
	    "sql", json_text(o->inv->sql), "columns", cols, "rows", rows,
	    "row_count", (json_int_t)o->nrows);
	if (every) {
		json_object_set_new(v, "holds", json_boolean(o->nrows == 0));
		json_object_set_new(v, "duration_ms", json_real((double)o->duration_us /
		    1000.0));
	}
	return v;
}

json_t *
inv_result_json(const struct inv_result *res)
{
	json_t	*arr = json_array();
	size_t	 i;

	for (i = 0; res != NULL && i < res->n; i++)
		if (res->out[i].nrows > 0)
			json_array_append_new(arr, outcome_json(&res->out[i], false));
	return arr;
}

json_t *
inv_outcomes_json(const struct inv_result *res)
{
	json_t	*arr = json_array();
	size_t	 i;

	for (i = 0; res != NULL && i < res->n; i++)
		json_array_append_new(arr, outcome_json(&res->out[i], true));
	return arr;
}
