/*
 * libpq with a deadline (contract in iso.h).  Everything goes through
 * libpq's asynchronous API and poll(2) on its socket, so no call waits
 * past the deadline whatever the server or the network do: a database
 * that is paused (SIGSTOP, a VM frozen), partitioned away or wedged on a
 * lock costs the caller its deadline, never its life.
 */
#include "isolation/iso.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/*
 * Defaults a connection string may override: TCP keepalives, so a peer
 * that vanished without a word (a host down, a partition) is found by the
 * kernel even between calls.  They do not bound a call -- a paused server
 * still acknowledges probes -- the deadlines do.
 */
static const char *const conn_keys[] = {
	"keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "dbname", NULL
};

const char *
iso_pq_msg(PGconn *conn, const PGresult *res, char *buf, size_t len)
{
	const char	*m = NULL;

	if (res != NULL)
		m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	if (m == NULL && res != NULL)
		m = PQresultErrorMessage(res);
	if ((m == NULL || *m == '\0') && conn != NULL)
		m = PQerrorMessage(conn);
	if (m == NULL || *m == '\0')
		m = "unknown error";
	snprintf(buf, len, "%.*s", (int)strcspn(m, "\n"), m);
	return buf;
}

/* 1 when conn's socket is ready for events, 0 once the deadline passed. */
static int
pq_ready(PGconn *conn, short events, int64_t deadline)
{
	struct pollfd	pfd = { .fd = PQsocket(conn), .events = events };
	int		n;

	if (pfd.fd < 0)
		return 1;	/* no socket: libpq will say what broke */
	for (;;) {
		if ((n = poll(&pfd, 1, ms_until(deadline))) > 0)
			return 1;
		if (n == 0 && now_ms() >= deadline)
			return 0;
		if (n == -1 && errno != EINTR)
			return 1;
	}
}

PGconn *
iso_pq_connect(const char *conninfo, int64_t deadline, char *err)
{
	const char		*vals[] = { "1", "10", "5", "3", conninfo, NULL };
	PGconn			*conn;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	char			 m[200];

	/* dbname last and expanded: the connection string overrides us. */
	if ((conn = PQconnectStartParams(conn_keys, vals, 1)) == NULL) {
		errf(err, "cannot connect to PostgreSQL: out of memory");
		return NULL;
	}
	while (PQstatus(conn) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
	    st != PGRES_POLLING_FAILED) {
		if (!pq_ready(conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
		    deadline)) {
			errf(err, "no answer from PostgreSQL within the time left "
			    "(%s)", PQstatus(conn) == CONNECTION_STARTED ?
			    "connecting" : "in the startup handshake");
			goto fail;
		}
		st = PQconnectPoll(conn);
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		errf(err, "%s", iso_pq_msg(conn, NULL, m, sizeof(m)));
		goto fail;
	}
	/* Sends never block either: the query waits in libpq's buffer and
	 * iso_pq_wait flushes it within the deadline. */
	if (PQsetnonblocking(conn, 1) == -1) {
		errf(err, "cannot make the connection non-blocking: %s",
		    iso_pq_msg(conn, NULL, m, sizeof(m)));
		goto fail;
	}
	return conn;
fail:
	iso_pq_abandon(conn);
	return NULL;
}

/* Pushes out what libpq buffered; 0, or -1 once the deadline passed. */
static int
pq_flush(PGconn *conn, int64_t deadline)
{
	int	f;

	while ((f = PQflush(conn)) == 1) {
		if (!pq_ready(conn, POLLIN | POLLOUT, deadline))
			return -1;
		/* The server may talk while we write (a NOTICE): read it, or
		 * both ends wait on full buffers. */
		if (!PQconsumeInput(conn))
			break;
	}
	return 0;
}

PGresult *
iso_pq_wait(PGconn *conn, int64_t deadline, bool *expired)
{
	PGresult	*last = NULL, *r;
	ExecStatusType	 st;

	*expired = false;
	if (pq_flush(conn, deadline) == -1)
		goto expired;
	for (;;) {
		while (PQisBusy(conn)) {
			if (!pq_ready(conn, POLLIN, deadline))
				goto expired;
			if (!PQconsumeInput(conn))
				break;
		}
		/* Busy on a connection that is still up would block in
		 * PQgetResult: give up instead. */
		if (PQisBusy(conn) && PQstatus(conn) == CONNECTION_OK)
			goto expired;
		if ((r = PQgetResult(conn)) == NULL)
			break;
		/* PQexec's rule: the last result, stopping at COPY or a lost
		 * connection. */
		PQclear(last);
		last = r;
		st = PQresultStatus(r);
		if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT ||
		    st == PGRES_COPY_BOTH || PQstatus(conn) == CONNECTION_BAD)
			break;
	}
	return last;
expired:
	PQclear(last);
	*expired = true;
	return NULL;
}

static void
pq_nonblocking(PGconn *conn)
{
	if (conn != NULL && !PQisnonblocking(conn))
		PQsetnonblocking(conn, 1);
}

PGresult *
iso_pq_exec(PGconn *conn, const char *sql, int64_t deadline, bool *expired)
{
	*expired = false;
	pq_nonblocking(conn);
	if (!PQsendQuery(conn, sql))
		return NULL;
	return iso_pq_wait(conn, deadline, expired);
}

PGresult *
iso_pq_query(PGconn *conn, const char *sql, int nparams,
    const char *const *params, int64_t deadline, bool *expired)
{
	*expired = false;
	pq_nonblocking(conn);
	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0))
		return NULL;
	return iso_pq_wait(conn, deadline, expired);
}

PGresult *
iso_pq_prepare(PGconn *conn, const char *name, const char *sql, int64_t deadline,
    bool *expired)
{
	*expired = false;
	pq_nonblocking(conn);
	if (!PQsendPrepare(conn, name, sql, 0, NULL))
		return NULL;
	return iso_pq_wait(conn, deadline, expired);
}

void
iso_pq_abandon(PGconn *conn)
{
	if (conn == NULL)
		return;
	/* PQfinish says goodbye (a Terminate message); non-blocking, that
	 * cannot wait on a server that does not read. */
	pq_nonblocking(conn);
	PQfinish(conn);
}
