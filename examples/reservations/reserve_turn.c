/*
 * One agent turn of the reservation system (seeds/001): read the order,
 * "ask the model" which substitutions to reserve (a seeded latency of tens
 * of milliseconds — the read-write window production has), write back
 * items_reserved + n, append a reservation event.
 *
 *   reserve_turn            the bug: read, think, write — a lost update
 *   reserve_turn --lock     fixed: SELECT ... FOR UPDATE holds the row
 *   reserve_turn --cas      fixed: compare-and-set on a version, retry
 *
 * Everything random comes from SOAK_TURN_SEED, so a seed replays exactly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#define NORDERS	3

static uint64_t	rng;

static uint64_t
next(void)
{
	uint64_t	z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
think(int ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1)
		;
}

/*
 * The database, through the proxy in front of it when the config has one
 * (SOAK_PROXY_DB: the configs' scheduled proxy), else as soak's PG*
 * variables say.
 */
static PGconn *
dial(void)
{
	const char	*db = getenv("SOAK_PROXY_DB"), *colon;
	char		 host[256];

	if (db == NULL || (colon = strrchr(db, ':')) == NULL ||
	    colon - db >= (int)sizeof(host))
		return PQconnectdb("");		/* PG* from soak: our schema */
	snprintf(host, sizeof(host), "%.*s", (int)(colon - db), db);
	return PQconnectdbParams((const char *[]){ "host", "port", NULL },
	    (const char *[]){ host, colon + 1, NULL }, 0);
}

static PGresult *
q(PGconn *c, const char *sql, int n, const char *const *p)
{
	return PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
}

static int
ok(PGresult *r, PGconn *c, const char *what)
{
	ExecStatusType	s = PQresultStatus(r);

	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
		return 1;
	fprintf(stderr, "%s: %s", what, PQerrorMessage(c));
	return 0;
}

int
main(int argc, char **argv)
{
	const char	*mode = argc > 1 ? argv[1] : "";
	const char	*seed = getenv("SOAK_TURN_SEED"), *turn = getenv("SOAK_TURN");
	char		 order[16], newval[16], nstr[16], ver[16];
	const char	*p[4];
	PGconn		*c;
	PGresult	*r;
	int		 n, latency, cur, v, tries;

	if (seed == NULL || turn == NULL) {
		fprintf(stderr, "run me under soak (SOAK_TURN_SEED is not set)\n");
		return 75;
	}
	rng = strtoull(seed, NULL, 10);
	snprintf(order, sizeof(order), "%d", (int)(next() % NORDERS) + 1);
	n = (int)(next() % 3) + 1;
	latency = 10 + (int)(next() % 40);
	snprintf(nstr, sizeof(nstr), "%d", n);

	c = dial();
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return 75;		/* our environment broke, not the system */
	}
	for (tries = 0; tries < 20; tries++) {
		int	locking = strcmp(mode, "--lock") == 0;

		if (locking && !ok(r = q(c, "BEGIN", 0, NULL), c, "begin"))
			goto fail;
		if (locking)
			PQclear(r);
		p[0] = order;
		r = q(c, locking ?
		    "SELECT items_reserved, version FROM orders WHERE id = $1 FOR UPDATE" :
		    "SELECT items_reserved, version FROM orders WHERE id = $1", 1, p);
		if (!ok(r, c, "read") || PQntuples(r) != 1)
			goto fail;
		cur = atoi(PQgetvalue(r, 0, 0));
		v = atoi(PQgetvalue(r, 0, 1));
		PQclear(r);

		think(latency);		/* the model decides; the window is open */

		snprintf(newval, sizeof(newval), "%d", cur + n);
		snprintf(ver, sizeof(ver), "%d", v);
		p[0] = newval; p[1] = order; p[2] = ver;
		if (strcmp(mode, "--cas") == 0) {
			/* One statement: the write and the event land together. */
			r = q(c, "WITH u AS (UPDATE orders SET items_reserved = $1, "
			    "version = version + 1 WHERE id = $2 AND version = $3 RETURNING id) "
			    "INSERT INTO reservation_events (order_id, n, turn) "
			    "SELECT id, $4, $5 FROM u", 5,
			    (const char *[]){ newval, order, ver, nstr, turn });
			if (!ok(r, c, "compare-and-set"))
				goto fail;
			if (strcmp(PQcmdTuples(r), "1") == 0) {
				PQclear(r);
				break;
			}
			PQclear(r);	/* somebody moved it: read again */
			continue;
		}
		r = q(c, "UPDATE orders SET items_reserved = $1, version = version + 1 "
		    "WHERE id = $2", 2, p);
		if (!ok(r, c, "write"))
			goto fail;
		PQclear(r);
		p[0] = order; p[1] = nstr; p[2] = turn;
		r = q(c, "INSERT INTO reservation_events (order_id, n, turn) "
		    "VALUES ($1, $2, $3)", 3, p);
		if (!ok(r, c, "event"))
			goto fail;
		PQclear(r);
		if (locking) {
			if (!ok(r = q(c, "COMMIT", 0, NULL), c, "commit"))
				goto fail;
			PQclear(r);
		}
		break;
	}
	PQfinish(c);
	return tries < 20 ? 0 : 1;
fail:
	PQclear(r);
	PQfinish(c);
	return 1;
}
