/*
 * One agent turn of the refunds system (seeds/000): the agent is handed a
 * dispute, takes a job for it, and calls the provider's issue_refund tool
 * through the fault proxy.  A call that errors (timeout, reset, 5xx) is
 * reissued, as the model reissued it in production: up to MAX_ATTEMPTS.
 *
 *   refund_turn                 as shipped: no idempotency key, so a call
 *                               whose reply was lost is refunded twice
 *   refund_turn --key           fixed: one key per dispute ("refund-dsp_1"),
 *                               so every retry and every agent handed the
 *                               same dispute asks for the same refund
 *   ... --no-reaper             mutant: skip the abandoned transition
 *
 * The job's life: accepted -> in_progress (lease) -> done | failed; and
 * in_progress -> abandoned when its lease ran out, which every turn does
 * first for whatever it finds (the reaper).  Without that transition a
 * stalled job and a slow one are the same rows (seeds/000).
 *
 * Everything random comes from SOAK_TURN_SEED.  Exit 0: refunded; 1: the
 * provider refused or every attempt failed (expected under faults); 75: our
 * environment broke.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <libpq-fe.h>

#define NDISPUTES	4
#define MAX_ATTEMPTS	8		/* with a key, retrying is safe */
#define CALL_TIMEOUT_MS	2000		/* the tool timeout */

static uint64_t	rng;

static uint64_t
next(void)
{
	uint64_t	z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* One statement; NULL on failure, with the reason on stderr. */
static PGresult *
q(PGconn *c, const char *what, const char *sql, int n, const char *const *p)
{
	PGresult	*r = PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
	ExecStatusType	 s = PQresultStatus(r);

	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
		return r;
	fprintf(stderr, "%s: %s", what, PQerrorMessage(c));
	PQclear(r);
	return NULL;
}

static size_t
sink(char *p, size_t size, size_t n, void *arg)
{
	FILE	*f = arg;

	return fwrite(p, size, n, f);
}

/*
 * One call of the tool.  Returns the HTTP status, or 0 when the call itself
 * failed (the model sees "tool timed out" / "connection reset").
 */
static long
call_provider(CURL *h, const char *url, const char *key, const char *world,
    const char *sender, const char *dispute, const char *amount)
{
	struct curl_slist	*hd = NULL;
	char			 body[128], line[192];
	long			 status = 0;
	CURLcode		 rc;

	snprintf(body, sizeof(body), "{\"dispute_id\":\"%s\",\"amount_eur\":%s}",
	    dispute, amount);
	hd = curl_slist_append(hd, "Content-Type: application/json");
	if (key != NULL) {
		snprintf(line, sizeof(line), "Idempotency-Key: %s", key);
		hd = curl_slist_append(hd, line);
	}
	snprintf(line, sizeof(line), "X-World: %s", world);
	hd = curl_slist_append(hd, line);
	snprintf(line, sizeof(line), "X-Sender: %s", sender);
	hd = curl_slist_append(hd, line);

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)CALL_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, stderr);
	if ((rc = curl_easy_perform(h)) != CURLE_OK)
		fprintf(stderr, "%s: issue_refund %s: %s\n", sender, dispute,
		    curl_easy_strerror(rc));
	else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		fprintf(stderr, "\n%s: issue_refund %s: HTTP %ld\n", sender, dispute, status);
	}
	curl_slist_free_all(hd);
	return status;
}

int
main(int argc, char **argv)
{
	const char	*seed = getenv("SOAK_TURN_SEED"), *turn = getenv("SOAK_TURN");
	const char	*proxy = getenv("SOAK_PROXY_PROVIDER");
	const char	*key = NULL, *state;
	char		 dispute[16], keybuf[32], url[256], sender[32], job[32];
	char		 amount[32], world[32];
	bool		 use_key = false, reaper = true;
	PGconn		*c;
	PGresult	*r;
	CURL		*h = NULL;
	long		 status = 0;
	int		 i, attempt, rc = 75;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--key") == 0)
			use_key = true;
		else if (strcmp(argv[i], "--no-reaper") == 0)
			reaper = false;
		else {
			fprintf(stderr, "usage: refund_turn [--key] [--no-reaper]\n");
			return 75;
		}
	}
	if (seed == NULL || turn == NULL || proxy == NULL) {
		fprintf(stderr, "run me under soak (SOAK_TURN_SEED, SOAK_PROXY_PROVIDER)\n");
		return 75;
	}
	rng = strtoull(seed, NULL, 10);
	snprintf(dispute, sizeof(dispute), "dsp_%d", (int)(next() % NDISPUTES));
	snprintf(url, sizeof(url), "http://%s/refunds", proxy);
	if (use_key) {
		snprintf(keybuf, sizeof(keybuf), "refund-%s", dispute);
		key = keybuf;
	}

	c = PQconnectdb("");		/* PG* from soak: lands in our schema */
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(c));
		goto out;		/* 75: our environment broke */
	}
	rc = 1;				/* from here on, a failure is the system's */
	if (reaper && (r = q(c, "reaper", "UPDATE jobs SET state = 'abandoned' "
	    "WHERE state = 'in_progress' AND lease_until < now()", 0, NULL)) != NULL)
		PQclear(r);
	snprintf(sender, sizeof(sender), "agent-%s", turn);
	if ((r = q(c, "accept job", "INSERT INTO jobs (dispute_id, owner, state) "
	    "VALUES ($1, $2, 'accepted') RETURNING id", 2,
	    (const char *[]){ dispute, sender })) == NULL)
		goto out;
	snprintf(job, sizeof(job), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if ((r = q(c, "start job", "UPDATE jobs SET state = 'in_progress', "
	    "lease_until = now() + interval '30 seconds' WHERE id = $1 AND state = 'accepted'",
	    1, (const char *[]){ job })) == NULL)
		goto out;
	PQclear(r);
	if ((r = q(c, "read dispute", "SELECT amount_eur, (SELECT lpad(epoch::text, 20, '0') FROM world) "
	    "FROM disputes WHERE id = $1", 1, (const char *[]){ dispute })) == NULL)
		goto out;
	snprintf(amount, sizeof(amount), "%s", PQgetvalue(r, 0, 0));
	snprintf(world, sizeof(world), "%s", PQgetvalue(r, 0, 1));
	PQclear(r);

	if ((h = curl_easy_init()) == NULL)
		goto out;
	for (attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
		snprintf(sender, sizeof(sender), "t%s/a%d", turn, attempt);
		status = call_provider(h, url, key, world, sender, dispute, amount);
		if (status != 0 && status < 500)
			break;		/* an answer: success, or a refusal to believe */
	}

	/* The agent's books, then the job's terminal state. */
	if (status == 200 && (r = q(c, "mark refunded", "UPDATE disputes SET refunded = true "
	    "WHERE id = $1", 1, (const char *[]){ dispute })) == NULL)
		goto out;
	if (status == 200)
		PQclear(r);
	state = status == 200 ? "done" : "failed";
	if ((r = q(c, "finish job", "UPDATE jobs SET state = $2, lease_until = NULL "
	    "WHERE id = $1", 2, (const char *[]){ job, state })) == NULL)
		goto out;
	PQclear(r);
	rc = status == 200 ? 0 : 1;
out:
	curl_easy_cleanup(h);
	PQfinish(c);
	return rc;
}
