/*
 * A tiny payment provider (the far side of seeds/000's network boundary).
 *
 *   POST /refunds  {"dispute_id": "dsp_1", "amount_eur": 15}
 *   Idempotency-Key: refund-dsp_1     (optional)
 *   X-World: <epoch>                  (which reset of the schema the caller saw)
 *   X-Sender: t3/a2                   (who asks: turn 3, attempt 2)
 *
 * One statement settles a refund row and credits the dispute's account
 * (balance += amount, plus a credit_log row).  A key it has answered before
 * gets the stored response and nothing happens again.  The key store is a
 * response cache written after the refund commits, so two requests with one
 * key that arrive together both miss it; the refund then meets the unique
 * index (schema.sql) and the loser answers with the winner's refund.  A
 * request without a key that meets the index is refused: 409, because
 * without a key the provider cannot tell a retry from a second refund.
 *
 *   provider                   the fixed provider
 *   provider --racy-credit     mutant: the balance is read, then written
 *                              back as read + amount (a lost update)
 *
 * HTTP/1.1, Content-Length framing, one request per connection
 * (Connection: close).  NTHREADS threads each accept and serve one
 * connection at a time on their own PostgreSQL connection, so requests
 * really overlap.  Listens on 127.0.0.1:$SOAK_PORT; PG* from soak land in
 * the worker's schema.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>

#define NTHREADS	8
#define REQ_CAP		8192		/* headers + body; a refund is small */
#define IO_TIMEOUT_S	5
/*
 * "Talking to the bank" before settling: a real provider's bank call takes
 * this long, and it is the window in which two asks with one key both miss
 * the key cache.  Wide enough that turns started tens of ms apart overlap.
 */
#define BANK_MS		150

static int	 listen_fd;
static bool	 racy_credit;

struct req {
	char	 key[128];		/* Idempotency-Key, "" if none */
	char	 world[32];
	char	 sender[32];
	char	 dispute[32];
	char	 amount[32];
};

struct reply {
	int	 status;
	char	 body[512];
};

static void
pause_ms(int ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
set_reply(struct reply *rp, int status, const char *fmt, ...)
{
	va_list	ap;

	rp->status = status;
	va_start(ap, fmt);
	vsnprintf(rp->body, sizeof(rp->body), fmt, ap);
	va_end(ap);
}

/* Copies header NAME's value (trimmed) into out, or leaves out empty. */
static void
header(const char *head, const char *name, char *out, size_t outlen)
{
	size_t		 n = strlen(name);
	const char	*p, *e;

	*out = '\0';
	for (p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, name, n) != 0 || p[2 + n] != ':')
			continue;
		p += 3 + n;
		while (*p == ' ' || *p == '\t')
			p++;
		if ((e = strstr(p, "\r\n")) == NULL)
			return;
		if ((size_t)(e - p) >= outlen)
			return;
		memcpy(out, p, (size_t)(e - p));
		out[e - p] = '\0';
		return;
	}
}

/*
 * Reads one request: head up to the blank line, then Content-Length bytes.
 * Returns 0 and fills r, or -1 with rp set to the error reply (status 0:
 * the peer went away, say nothing).
 */
static int
read_request(int fd, struct req *r, struct reply *rp)
{
	char		 buf[REQ_CAP + 1], clen[16];
	size_t		 have = 0, need;
	ssize_t		 n;
	char		*end = NULL;
	json_t		*j = NULL, *v;
	json_error_t	 jerr;
	int		 rc = -1;

	memset(r, 0, sizeof(*r));
	rp->status = 0;
	while (end == NULL) {
		if (have == REQ_CAP) {
			set_reply(rp, 431, "{\"error\":\"request head too large\"}");
			return -1;
		}
		if ((n = read(fd, buf + have, REQ_CAP - have)) <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	end[2] = '\0';			/* head ends with its last \r\n */
	header(buf, "Content-Length", clen, sizeof(clen));
	need = (size_t)(end + 4 - buf) + strtoul(clen, NULL, 10);
	if (*clen == '\0' || need > REQ_CAP) {
		set_reply(rp, 411, "{\"error\":\"need a Content-Length under %d\"}", REQ_CAP);
		return -1;
	}
	if (strncmp(buf, "POST /refunds ", 14) != 0) {
		set_reply(rp, 404, "{\"error\":\"only POST /refunds\"}");
		return -1;
	}
	header(buf, "Idempotency-Key", r->key, sizeof(r->key));
	header(buf, "X-World", r->world, sizeof(r->world));
	header(buf, "X-Sender", r->sender, sizeof(r->sender));
	if (*r->world == '\0' || r->world[strspn(r->world, "0123456789")] != '\0') {
		set_reply(rp, 400, "{\"error\":\"X-World must be a number\"}");
		return -1;
	}
	while (have < need) {
		if ((n = read(fd, buf + have, need - have)) <= 0)
			return -1;
		have += (size_t)n;
	}
	if ((j = json_loadb(end + 4, need - (size_t)(end + 4 - buf), 0, &jerr)) == NULL) {
		set_reply(rp, 400, "{\"error\":\"bad JSON\"}");
		goto out;
	}
	v = json_object_get(j, "dispute_id");
	if (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof(r->dispute)) {
		set_reply(rp, 400, "{\"error\":\"dispute_id must be a short string\"}");
		goto out;
	}
	strcpy(r->dispute, json_string_value(v));
	v = json_object_get(j, "amount_eur");
	if (!json_is_number(v) || json_number_value(v) <= 0) {
		set_reply(rp, 400, "{\"error\":\"amount_eur must be a positive number\"}");
		goto out;
	}
	snprintf(r->amount, sizeof(r->amount), "%.2f", json_number_value(v));
	rc = 0;
out:
	json_decref(j);
	return rc;
}

static PGresult *
q(PGconn *c, const char *sql, int n, const char *const *p)
{
	return PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
}

static bool
q_ok(PGresult *r)
{
	ExecStatusType	s = PQresultStatus(r);

	return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

static bool
is_unique_violation(PGresult *r)
{
	const char	*st = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	return st != NULL && strcmp(st, "23505") == 0;
}

/* Runs a statement whose result we only need to succeed. */
static int
exec_ok(PGconn *c, const char *sql, int n, const char *const *p)
{
	PGresult	*r = q(c, sql, n, p);
	int		 rc = q_ok(r) ? 0 : -1;

	if (rc == -1)
		fprintf(stderr, "provider: %s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return rc;
}

/*
 * The response for a settled refund, as the provider stores and sends it.
 * Fixed width, so a seed's fault trace (which counts bytes) is the same
 * whatever order the refund ids were handed out in.
 */
static void
refund_reply(struct reply *rp, const char *id, const struct req *r)
{
	set_reply(rp, 200, "{\"refund_id\":\"re_%08lld\",\"dispute_id\":\"%s\","
	    "\"amount_eur\":%s,\"state\":\"settled\"}", atoll(id), r->dispute, r->amount);
}

/*
 * The refund and its credit, one statement and so one transaction: the
 * refund row, the balance, the credit log land together or not at all.
 * %s is how the new balance is computed: the fixed provider increments in
 * place; the mutant writes back a balance it read earlier ($5).
 */
static const char	settle_sql[] =
    "WITH r AS (INSERT INTO refunds (dispute_id, amount_eur, state, idempotency_key, sender) "
    "    VALUES ($1, $2, 'settled', $3, $4) RETURNING id), "
    "a AS (UPDATE accounts SET credit_balance_eur = %s "
    "    WHERE id = (SELECT account_id FROM disputes WHERE id = $1) RETURNING id) "
    "INSERT INTO credit_log (account_id, amount_eur, refund_id) "
    "SELECT a.id, $2, r.id FROM r, a RETURNING refund_id";

/*
 * Settles one refund.  Any database failure is a 500: the caller may retry,
 * and a retry with a key is safe.
 */
static void
refund(PGconn *c, const struct req *r, struct reply *rp)
{
	const char	*key = *r->key ? r->key : NULL;
	const char	*bal = NULL;
	PGresult	*res = NULL, *read = NULL;
	char		 sql[sizeof(settle_sql) + 64];

	/*
	 * One look: is this request from this seed's world (a late duplicate
	 * from an earlier seed must not land here), and was its key answered?
	 */
	res = q(c, "SELECT (SELECT epoch = $1::bigint FROM world), "
	    "(SELECT response FROM idempotency_keys WHERE key = $2)", 2,
	    (const char *[]){ r->world, key });
	if (!q_ok(res))
		goto dberr;
	if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
		set_reply(rp, 410, "{\"error\":\"stale world %s\"}", r->world);
		goto out;
	}
	if (!PQgetisnull(res, 0, 1)) {		/* answered before: say it again */
		set_reply(rp, 200, "%s", PQgetvalue(res, 0, 1));
		goto out;
	}
	PQclear(res);
	res = NULL;

	if (racy_credit) {
		read = q(c, "SELECT a.credit_balance_eur FROM accounts a "
		    "JOIN disputes d ON d.account_id = a.id WHERE d.id = $1", 1,
		    (const char *[]){ r->dispute });
		if (!q_ok(read) || PQntuples(read) != 1)
			goto dberr;
		bal = PQgetvalue(read, 0, 0);
	}
	pause_ms(BANK_MS);		/* the provider talks to the bank */
	snprintf(sql, sizeof(sql), settle_sql, racy_credit ?
	    "$5::numeric + $2" : "credit_balance_eur + $2");
	res = q(c, sql, racy_credit ? 5 : 4,
	    (const char *[]){ r->dispute, r->amount, key, r->sender, bal });
	if (q_ok(res) && PQntuples(res) == 1) {
		refund_reply(rp, PQgetvalue(res, 0, 0), r);
		if (key != NULL)
			(void)exec_ok(c, "INSERT INTO idempotency_keys (key, response) "
			    "VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", 2,
			    (const char *[]){ key, rp->body });
		goto out;
	}
	if (!is_unique_violation(res))
		goto dberr;
	/*
	 * This dispute is already settled.  With a key, this is the same refund
	 * asked twice at once: answer with the one that won.  Without one it
	 * may be a second refund: refuse it.
	 */
	if (key == NULL) {
		set_reply(rp, 409, "{\"error\":\"dispute %s already refunded\"}", r->dispute);
		goto out;
	}
	PQclear(res);
	res = q(c, "SELECT id FROM refunds WHERE dispute_id = $1 AND state = 'settled'", 1,
	    (const char *[]){ r->dispute });
	if (!q_ok(res) || PQntuples(res) != 1)
		goto dberr;
	refund_reply(rp, PQgetvalue(res, 0, 0), r);
	goto out;
dberr:
	fprintf(stderr, "provider: refund %s: %s", r->dispute, PQerrorMessage(c));
	set_reply(rp, 500, "{\"error\":\"database\"}");
out:
	PQclear(read);
	PQclear(res);
}

static void
send_reply(int fd, const struct reply *rp)
{
	char	 buf[1024];
	int	 n;
	size_t	 off = 0;
	ssize_t	 w;

	n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", rp->status,
	    rp->status == 200 ? "OK" : "Error", strlen(rp->body), rp->body);
	while (off < (size_t)n && (w = write(fd, buf + off, (size_t)n - off)) > 0)
		off += (size_t)w;
}

static void *
serve(void *arg)
{
	PGconn		*c = NULL;
	struct req	 r;
	struct reply	 rp;
	struct timeval	 tv = { IO_TIMEOUT_S, 0 };
	int		 fd;

	for (;;) {
		if ((fd = accept(listen_fd, NULL, NULL)) == -1) {
			if (errno == EMFILE || errno == ENFILE)
				pause_ms(100);	/* back off, the fds come back */
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (read_request(fd, &r, &rp) == 0) {
			if (c != NULL && PQstatus(c) != CONNECTION_OK) {
				PQfinish(c);
				c = NULL;
			}
			if (c == NULL && PQstatus(c = PQconnectdb("")) != CONNECTION_OK)
				set_reply(&rp, 503, "{\"error\":\"no database\"}");
			else
				refund(c, &r, &rp);
		}
		if (rp.status != 0)
			send_reply(fd, &rp);
		close(fd);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sin = { .sin_family = AF_INET };
	const char		*port = getenv("SOAK_PORT");
	pthread_t		 t[NTHREADS];
	int			 i, one = 1;

	racy_credit = argc > 1 && strcmp(argv[1], "--racy-credit") == 0;
	if (port == NULL) {
		fprintf(stderr, "provider: run me under soak (SOAK_PORT is not set)\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(port));
	if ((listen_fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(listen_fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(listen_fd, 64) == -1) {
		fprintf(stderr, "provider: listen on 127.0.0.1:%s: %s\n", port, strerror(errno));
		return 1;
	}
	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, serve, NULL) != 0) {
			fprintf(stderr, "provider: cannot start thread %d\n", i);
			return 1;
		}
	pthread_join(t[0], NULL);
	return 0;
}
