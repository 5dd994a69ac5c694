/*
 * Fixtures for one seed of the ledger example (seeds/002): four students,
 * the last on a billing freeze, and ten lessons whose prices are drawn from
 * SOAK_SEED.  Lesson 10 is always free and about a quarter of the others are.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "ledger_plan.h"

int
main(void)
{
	const char	*seed = getenv("SOAK_SEED");
	char		 sql[1024];
	int		 n, i, price[NLESSONS + 1];
	PGconn		*c;
	PGresult	*r;
	int		 rc = 1;

	if (seed == NULL) {
		fprintf(stderr, "run me under soak (SOAK_SEED is not set)\n");
		return 1;
	}
	ledger_prices(strtoull(seed, NULL, 10), price);
	n = snprintf(sql, sizeof(sql),
	    "INSERT INTO student (id, billing_frozen) VALUES (1,false),(2,false),(3,false),(%d,true);"
	    "INSERT INTO class_session (id, price) VALUES ", NSTUDENTS);
	for (i = 1; i <= NLESSONS; i++) {
		n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s(%d,%d)",
		    i > 1 ? "," : "", i, price[i]);
	}
	c = PQconnectdb("");
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(c));
		goto out;
	}
	r = PQexec(c, sql);
	if (PQresultStatus(r) == PGRES_COMMAND_OK)
		rc = 0;
	else
		fprintf(stderr, "fixtures: %s", PQerrorMessage(c));
	PQclear(r);
out:
	PQfinish(c);
	return rc;
}
