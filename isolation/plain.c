/*
 * Does the database let in a plain connection made the way the fault proxy
 * makes one (contract in iso.h)?  The proxy answers a client's SSLRequest
 * with N so that it can read the protocol, then forwards the client's
 * StartupMessage as it came, in clear; a database whose pg_hba.conf has
 * only hostssl lines for it refuses that, and every turn through the proxy
 * fails.  So this speaks the first two messages of the protocol itself
 * rather than through libpq, which would try TLS first and hide the very
 * thing asked: a StartupMessage in clear, and the first message back.
 *
 * The refusal is recognised by what does not depend on the server's
 * language: SQLSTATE 28000 (invalid_authorization_specification) from the
 * routine ClientAuthentication (the R field, the server's own function
 * name) is pg_hba.conf saying no.  Whether TLS is why: the server answers
 * an SSLRequest on a second connection with S, and pg_hba.conf lets in a
 * third, libpq's with sslmode=require.  The plain StartupMessage carries
 * no password: an authentication request back means pg_hba.conf let the
 * connection in, which is all the proxy needs of it.
 */
#include "isolation/iso.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

#define PLAIN_MSG_MAX	(64 * 1024)	/* an ErrorResponse is far smaller */
#define PG_PROTO_3	196608		/* 3.0 */
#define PG_SSL_REQUEST	80877103

/* Waits for events on fd until deadline: 0 ready, -1 with err. */
static int
plain_wait(int fd, short events, int64_t deadline, const char *where, char *err)
{
	struct pollfd	pfd = { .fd = fd, .events = events };
	int		n;

	for (;;) {
		if ((n = poll(&pfd, 1, ms_until(deadline))) > 0)
			return 0;
		if (n == 0 && now_ms() >= deadline)
			return errf(err, "no answer from %s within the time left", where);
		if (n == -1 && errno != EINTR)
			return errf(err, "%s: poll: %s", where, strerror(errno));
	}
}

/* A connected socket to where the proxy would dial, or -1 with err. */
static int
plain_dial(const struct iso_dbparams *p, int64_t deadline, const char *where,
    char *err)
{
	struct addrinfo		 hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	struct sockaddr		*sa;
	socklen_t		 salen;
	int			 fd = -1, rc, soerr = 0;
	socklen_t		 len = sizeof(soerr);

	if (p->host[0] == '/') {
		if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path),
		    "%s/.s.PGSQL.%s", p->host, p->port) >= sizeof(sun.sun_path))
			return errf(err, "%s: the socket path is too long", where);
		sa = (struct sockaddr *)&sun;
		salen = sizeof(sun);
	} else {
		if ((rc = getaddrinfo(p->host, p->port, &hints, &res)) != 0)
			return errf(err, "%s: %s", where, gai_strerror(rc));
		sa = res->ai_addr;
		salen = res->ai_addrlen;
	}
	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		errf(err, "%s: socket: %s", where, strerror(errno));
		goto fail;
	}
	if (connect(fd, sa, salen) == -1) {
		if (errno != EINPROGRESS) {
			errf(err, "%s: %s", where, strerror(errno));
			goto fail;
		}
		if (plain_wait(fd, POLLOUT, deadline, where, err) == -1)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
		    soerr != 0) {
			errf(err, "%s: %s", where, strerror(soerr ? soerr : errno));
			goto fail;
		}
	}
	if (res)
		freeaddrinfo(res);
	return fd;
fail:
	if (fd != -1)
		close(fd);
	if (res)
		freeaddrinfo(res);
	return -1;
}

static int
plain_send(int fd, const char *buf, size_t len, int64_t deadline,
    const char *where, char *err)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = send(fd, buf, len, MSG_NOSIGNAL)) > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			return errf(err, "%s: %s", where, strerror(errno));
		if (plain_wait(fd, POLLOUT, deadline, where, err) == -1)
			return -1;
	}
	return 0;
}

static int
plain_recv(int fd, char *buf, size_t len, int64_t deadline, const char *where,
    char *err)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = recv(fd, buf, len, 0)) > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return errf(err, "%s closed the connection", where);
		if (errno != EAGAIN && errno != EINTR)
			return errf(err, "%s: %s", where, strerror(errno));
		if (plain_wait(fd, POLLIN, deadline, where, err) == -1)
			return -1;
	}
	return 0;
}

/* An ErrorResponse's fields: C, M and R into out. */
static void
plain_fields(const char *body, size_t len, struct iso_plain *out)
{
	size_t	i = 0, l;
	char	field;

	while (i < len && body[i] != '\0') {
		field = body[i++];
		l = strnlen(body + i, len - i);
		if (field == 'C')
			snprintf(out->sqlstate, sizeof(out->sqlstate), "%.*s", (int)l,
			    body + i);
		else if (field == 'M')
			snprintf(out->message, sizeof(out->message), "%.*s", (int)l,
			    body + i);
		else if (field == 'R')
			snprintf(out->routine, sizeof(out->routine), "%.*s", (int)l,
			    body + i);
		i += l + 1;
	}
}

/* A StartupMessage in clear, and the first answer that tells. */
static int
plain_startup(const struct iso_dbparams *p, int64_t deadline, const char *where,
    struct iso_plain *out, char *err)
{
	char	*msg = NULL, hdr[5], *body = NULL;
	size_t	 ulen = strlen(p->user), dlen = strlen(p->dbname), len;
	uint32_t blen;
	int	 fd, rc = -1;

	if ((fd = plain_dial(p, deadline, where, err)) == -1)
		return -1;
	len = 4 + 4 + 5 + ulen + 1 + 9 + dlen + 1 + 1;
	msg = xcalloc(1, len);
	put_be32((uint8_t *)msg, (uint32_t)len);
	put_be32((uint8_t *)msg + 4, PG_PROTO_3);
	memcpy(msg + 8, "user", 5);
	memcpy(msg + 13, p->user, ulen + 1);
	memcpy(msg + 14 + ulen, "database", 9);
	memcpy(msg + 23 + ulen, p->dbname, dlen + 1);
	if (plain_send(fd, msg, len, deadline, where, err) == -1)
		goto out;
	for (;;) {
		if (plain_recv(fd, hdr, sizeof(hdr), deadline, where, err) == -1)
			goto out;
		blen = get_be32((const uint8_t *)hdr + 1);
		if (blen < 4 || blen - 4 > PLAIN_MSG_MAX) {
			errf(err, "%s does not speak PostgreSQL (a message of %u "
			    "bytes)", where, blen);
			goto out;
		}
		free(body);
		body = xcalloc(1, blen - 4 + 1);
		if (plain_recv(fd, body, blen - 4, deadline, where, err) == -1)
			goto out;
		if (hdr[0] == 'R') {		/* pg_hba.conf let it in */
			out->refused = false;
			rc = 0;
			goto out;
		}
		if (hdr[0] == 'E') {
			plain_fields(body, blen - 4, out);
			out->refused = true;
			out->hba = strcmp(out->sqlstate, "28000") == 0 &&
			    strcmp(out->routine, "ClientAuthentication") == 0;
			rc = 0;
			goto out;
		}
		if (hdr[0] != 'v' && hdr[0] != 'N') {
			errf(err, "%s answered a StartupMessage with a message of "
			    "type 0x%02x", where, (unsigned char)hdr[0]);
			goto out;
		}
		/* NegotiateProtocolVersion, a notice: the answer is still to come */
	}
out:
	/* A Terminate would be polite, but nothing was started: just close. */
	close(fd);
	free(msg);
	free(body);
	return rc;
}

/* Whether the server answers an SSLRequest with S. */
static int
plain_offers_tls(const struct iso_dbparams *p, int64_t deadline, const char *where,
    bool *offers, char *err)
{
	char	req[8], ans;
	int	fd, rc = -1;

	if ((fd = plain_dial(p, deadline, where, err)) == -1)
		return -1;
	put_be32((uint8_t *)req, 8);
	put_be32((uint8_t *)req + 4, PG_SSL_REQUEST);
	if (plain_send(fd, req, sizeof(req), deadline, where, err) == 0 &&
	    plain_recv(fd, &ans, 1, deadline, where, err) == 0) {
		*offers = ans == 'S';
		rc = 0;
	}
	close(fd);
	return rc;
}

/*
 * Whether pg_hba.conf lets in a TLS connection (libpq, sslmode=require, the
 * conninfo's own password if any): connected, or refused for anything but
 * pg_hba.conf (a wrong password is past it).  libpq's verbose message
 * carries the SQLSTATE and the routine, which do not depend on the
 * server's language.
 */
static int
plain_tls_lets_in(const char *conninfo, int64_t deadline, const char *where,
    bool *lets_in, char *err)
{
	static const char *const keys[] = { "dbname", "sslmode", "gssencmode",
	    NULL };
	const char		*vals[] = { conninfo, "require", "disable", NULL };
	PGconn			*conn;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	const char		*m;
	int			 rc = -1;

	if ((conn = PQconnectStartParams(keys, vals, 1)) == NULL)
		return errf(err, "%s: out of memory", where);
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
	while (PQstatus(conn) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
	    st != PGRES_POLLING_FAILED) {
		if (PQsocket(conn) >= 0 && plain_wait(PQsocket(conn),
		    st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, where,
		    err) == -1)
			goto out;
		st = PQconnectPoll(conn);
	}
	m = PQerrorMessage(conn);
	*lets_in = PQstatus(conn) == CONNECTION_OK || !(strstr(m, "28000") &&
	    strstr(m, "ClientAuthentication"));
	rc = 0;
out:
	PQfinish(conn);
	return rc;
}

int
iso_plain_probe(const char *conninfo, int64_t deadline, struct iso_plain *out,
    char *err)
{
	struct iso_dbparams	p;
	int			rc = -1;

	memset(out, 0, sizeof(*out));
	if (iso_dbparams_parse(conninfo, &p, err) == -1)
		return -1;
	if (p.host[0] == '/')
		snprintf(out->where, sizeof(out->where), "%s/.s.PGSQL.%s", p.host,
		    p.port);
	else
		snprintf(out->where, sizeof(out->where), "%s%s%s:%s",
		    strchr(p.host, ':') ? "[" : "", p.host,
		    strchr(p.host, ':') ? "]" : "", p.port);
	snprintf(out->user, sizeof(out->user), "%s", p.user);
	snprintf(out->dbname, sizeof(out->dbname), "%s", p.dbname);
	if (plain_startup(&p, deadline, out->where, out, err) == -1)
		goto out;
	/* Over a unix socket there is no TLS to want. */
	if (out->hba && p.host[0] != '/') {
		if (plain_offers_tls(&p, deadline, out->where, &out->tls_offered,
		    err) == -1)
			goto out;
		if (out->tls_offered && plain_tls_lets_in(conninfo, deadline,
		    out->where, &out->tls_wanted, err) == -1)
			goto out;
	}
	rc = 0;
out:
	iso_dbparams_free(&p);
	return rc;
}
