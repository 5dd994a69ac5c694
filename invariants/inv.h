/*
 * Invariants: named SQL queries that return the rows breaking a rule.
 *
 * inv_check runs every invariant of cfg, in config order, inside ONE
 * read-only transaction (BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
 * SET LOCAL statement_timeout = cfg->invariant_timeout_ms) on conn, whose
 * search_path is already the seed's schema, then ROLLBACK.  Every call
 * gives up at deadline (a now_ms() instant, CLOCK_MONOTONIC; isolation's
 * iso_pq_*), whatever the server does: then it returns -1 with conn still
 * mid-query, for the caller to drop (iso_probe, iso_pq_abandon), and err
 * saying there was no answer.  Rows returned means violated.  For each invariant it keeps the column names, the total
 * row count, and at most INV_MAX_ROWS rows as text (SQL NULL kept as NULL;
 * each value capped at INV_MAX_VALUE bytes).
 *
 * Returns 0 when every query ran (whatever they found), -1 with err set
 * when one could not run (connection lost, SQL error, timeout): the message
 * names the invariant, e.g. "invariant \"balance\": relation \"x\" does not
 * exist".  That is infrastructure (verdict infra/db), not a domain failure;
 * res is then empty but for failed, sqlstate and position: which invariant
 * and why (a config error when the SQL itself is wrong: common/cfgerr.h).
 *
 * inv_prepare parses and plans every invariant of cfg on conn, never
 * running one (PQprepare of the unnamed statement), inside one READ ONLY
 * transaction with a savepoint around each, then rolls back: nothing is
 * written, and every invariant that does not prepare is told, not only
 * the first (`soak check`).  For each, bad() gets its index, SQLSTATE,
 * the server's message and the statement position (1-based character,
 * 0 when none).  Returns how many did not prepare, or -1 with err when
 * the database could not be asked (connection, deadline).
 */
#ifndef SOAK_INV_H
#define SOAK_INV_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "common/config.h"

#define INV_MAX_ROWS	20
#define INV_MAX_VALUE	1024

struct inv_outcome {
	const struct cfg_invariant	 *inv;		/* borrowed from cfg */
	int				  ncols;
	char				**cols;
	int64_t				  nrows;	/* total rows returned */
	int				  nkept;	/* <= INV_MAX_ROWS */
	char				**cells;	/* nkept * ncols, row-major; NULL = SQL NULL */
	int64_t				  duration_us;
};

struct inv_result {
	struct inv_outcome	*out;		/* one per invariant, config order */
	size_t			 n;
	size_t			 nviolated;
	size_t			 failed;	/* after -1: the invariant that could not run */
	char			 sqlstate[6];	/* after -1: its SQLSTATE, "" if none */
	long			 position;	/* after -1: where in its SQL the
						   server pointed (1-based), or 0 */
};

int	inv_check(PGconn *conn, const struct cfg *cfg, int64_t deadline,
	    struct inv_result *res, char *err);
void	inv_result_free(struct inv_result *res);
typedef void	(*inv_bad_fn)(void *arg, size_t i, const char *sqlstate,
		    const char *message, long position);
int	inv_prepare(PGconn *conn, const struct cfg *cfg, int64_t deadline,
	    inv_bad_fn bad, void *arg, char *err);
/*
 * The violated invariants as JSON: [{"name", "sql", "columns": [..],
 * "rows": [[..], ..], "row_count": N}, ..]  (new reference).
 */
json_t	*inv_result_json(const struct inv_result *res);
/*
 * Every invariant's outcome, in config order, holding ones too (soak check
 * --json): the fields above, and "holds" (no row came back) and
 * "duration_ms" (new reference).
 */
json_t	*inv_outcomes_json(const struct inv_result *res);

#endif
