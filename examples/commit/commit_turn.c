/*
 * One turn of the ambiguous-commit example: pay once, in a transaction
 * (BEGIN; INSERT; COMMIT), through the fault proxy in front of the
 * database (SOAK_PROXY_DB).  The proxy loses the reply to some COMMITs
 * (`match: '^COMMIT'`, lost_reply): the server committed, the client saw
 * its connection reset.  On any error the turn retries the whole
 * transaction on a new connection.
 *
 *   commit_turn          the bug: each attempt is a new payment (a fresh
 *                        key per attempt), so a retry after a lost COMMIT
 *                        reply pays twice
 *   commit_turn --key    fixed: one idempotency key per turn, and
 *                        INSERT ... ON CONFLICT (idem_key) DO NOTHING, so
 *                        the retry finds the payment already made
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#define ATTEMPTS	5

static PGconn *
dial(void)
{
	const char	*db = getenv("SOAK_PROXY_DB"), *colon;
	char		 host[256];

	if (db == NULL || (colon = strrchr(db, ':')) == NULL ||
	    colon - db >= (int)sizeof(host))
		return PQconnectdb("");
	snprintf(host, sizeof(host), "%.*s", (int)(colon - db), db);
	return PQconnectdbParams((const char *[]){ "host", "port", NULL },
	    (const char *[]){ host, colon + 1, NULL }, 0);
}

static int
run(PGconn *c, const char *sql, int n, const char *const *p)
{
	PGresult	*r;
	int		 ok;

	r = n ? PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0) :
	    PQexec(c, sql);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return ok;
}

/* One attempt at the whole transaction; 1 when COMMIT said yes. */
static int
pay(const char *key, const char *turn, int keyed)
{
	const char	*p[3] = { key, turn, "100" };
	PGconn		*c = dial();
	int		 ok;

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return 0;
	}
	ok = run(c, "BEGIN", 0, NULL) &&
	    run(c, keyed ?
	    "INSERT INTO payments (idem_key, turn, amount) VALUES ($1, $2, $3) "
	    "ON CONFLICT (idem_key) DO NOTHING" :
	    "INSERT INTO payments (idem_key, turn, amount) VALUES ($1, $2, $3)",
	    3, p) &&
	    run(c, "COMMIT", 0, NULL);
	PQfinish(c);
	return ok;
}

int
main(int argc, char **argv)
{
	const char	*turn = getenv("SOAK_TURN"), *round = getenv("SOAK_ROUND");
	int		 keyed = argc > 1 && strcmp(argv[1], "--key") == 0;
	char		 key[64];
	int		 a;

	if (turn == NULL) {
		fprintf(stderr, "run me under soak (SOAK_TURN is not set)\n");
		return 75;
	}
	for (a = 0; a < ATTEMPTS; a++) {
		if (keyed)
			snprintf(key, sizeof(key), "r%s-t%s", round ? round : "0",
			    turn);
		else
			snprintf(key, sizeof(key), "r%s-t%s-a%d",
			    round ? round : "0", turn, a);
		if (pay(key, turn, keyed)) {
			printf("paid with key %s after %d attempt(s)\n", key, a + 1);
			return 0;
		}
	}
	fprintf(stderr, "gave up after %d attempts\n", ATTEMPTS);
	return 1;
}
