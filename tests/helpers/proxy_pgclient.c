/*
 * proxy_pgclient CONNINFO SQL...
 * One libpq session; runs each statement in order and prints "ok" or
 * "error: ..." per statement (stopping at the first error).  Exit 0 when
 * every statement succeeded, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

int
main(int argc, char **argv)
{
	PGconn		*pg;
	PGresult	*res;
	int		 i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: proxy_pgclient CONNINFO SQL...\n");
		return 64;
	}
	pg = PQconnectdb(argv[1]);
	if (PQstatus(pg) != CONNECTION_OK) {
		printf("connect error: %s", PQerrorMessage(pg));
		PQfinish(pg);
		return 1;
	}
	printf("connected\n");
	for (i = 2; i < argc; i++) {
		res = PQexec(pg, argv[i]);
		if (PQresultStatus(res) == PGRES_COMMAND_OK ||
		    PQresultStatus(res) == PGRES_TUPLES_OK) {
			printf("ok %s\n", PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
		} else {
			printf("error: %s", PQerrorMessage(pg));
			rc = 1;
			PQclear(res);
			break;
		}
		PQclear(res);
	}
	fflush(stdout);
	PQfinish(pg);
	return rc;
}
