/*
 * One worker's isolation: its schema and its workspace (contract in iso.h).
 */
#include "isolation/iso.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/conninfo.h"
#include "common/log.h"
#include "common/seed.h"
#include "common/util.h"

#define ISO_DDL_MAX		(64u << 20)
#define ISO_NAME_MAX		63	/* NAMEDATALEN - 1: longer names get cut */
/* A reset waiting this long on a lock names the likely culprit. */
#define ISO_LOCK_TIMEOUT	"30s"

/*
 * A server process, told apart from a later one that got its pid by the
 * instant it started (in microseconds since the epoch, as text).
 */
struct backend {
	int		 pid;		/* 0: none */
	char		 start[24];
};

struct iso {
	char		*conninfo;
	char		*schema;	/* unquoted */
	char		*qschema;	/* quoted identifier */
	char		*tpl;		/* truncate's template schema, unquoted */
	char		*qtpl;
	char		*ddl;		/* NULL: no DDL file */
	char		*ddl_name;	/* basename, for messages */
	char		*workspace;
	int		 worker_id;
	enum cfg_reset	 mode;
	bool		 created;	/* truncate mode: schema exists */
	PGconn		*conn;
	int64_t		 deadline;	/* the running call's: every query gives up then */
	struct backend	 self;		/* conn's backend */
	struct backend	 stale;		/* a dropped connection's, still to end */
	char		 ddl_sqlstate[6];	/* the last iso_reset's DDL error */
	char		 epoch[ISO_EPOCH_LEN];	/* conn's server: pg_postmaster_start_time */
	bool		 db_down;	/* a reset waited for the server in vain */
};

/* libpq prints NOTICEs on stderr by default; they are noise to a run. */
static void
iso_notice(void *arg, const char *message)
{
	(void)arg;
	log_debug("postgres: %.*s", (int)strcspn(message, "\n"), message);
}

/*
 * host:port/dbname of a conninfo, for messages.  Read from the redacted
 * string: a password that libpq would misread as host, port or database
 * (an unencoded '/' or '@') must not come back through them.
 */
void
iso_conn_desc(const char *conninfo, char *buf, size_t len)
{
	struct iso_dbparams	 p;
	char			*red = conninfo_redact(conninfo);

	if (iso_dbparams_parse(red, &p, NULL) == -1)
		snprintf(buf, len, "(unparsable connection string)");
	else
		snprintf(buf, len, "%s:%s/%s", p.host, p.port, p.dbname);
	iso_dbparams_free(&p);
	free(red);
}

int
iso_dbparams_parse(const char *conninfo, struct iso_dbparams *p, char *err)
{
	PQconninfoOption	*opts = NULL, *defs = NULL, *o;
	char			*perr = NULL;
	const char		*host = NULL, *port = NULL, *user = NULL;
	const char		*dbname = NULL, *password = NULL;

	memset(p, 0, sizeof(*p));
	if ((opts = PQconninfoParse(conninfo ? conninfo : "", &perr)) == NULL) {
		/* libpq quotes the token it choked on: it may be the password. */
		errf(err, "bad database connection string: %.*s",
		    perr ? (int)strcspn(perr, "\n") : 13,
		    perr ? perr : "out of memory");
		conninfo_scrub(err, ERR_LEN, conninfo);
		PQfreemem(perr);
		return -1;
	}
	defs = PQconndefaults();	/* the environment's PG* and built-ins */
	for (o = opts; o->keyword != NULL; o++) {
		const char	*v = o->val;

		if (v == NULL || *v == '\0') {
			for (PQconninfoOption *d = defs; d && d->keyword; d++)
				if (strcmp(d->keyword, o->keyword) == 0)
					v = d->val;
		}
		if (v == NULL || *v == '\0')
			continue;
		if (strcmp(o->keyword, "host") == 0)
			host = v;
		else if (strcmp(o->keyword, "port") == 0)
			port = v;
		else if (strcmp(o->keyword, "user") == 0)
			user = v;
		else if (strcmp(o->keyword, "dbname") == 0)
			dbname = v;
		else if (strcmp(o->keyword, "password") == 0)
			password = v;
	}
	/* libpq's own fallbacks when nothing says otherwise. */
	p->host = xstrdup(host ? host : "/var/run/postgresql");
	p->port = xstrdup(port ? port : "5432");
	p->user = xstrdup(user ? user : "postgres");
	p->dbname = xstrdup(dbname ? dbname : p->user);
	p->password = xstrdup(password);
	PQconninfoFree(opts);
	PQconninfoFree(defs);
	return 0;
}

void
iso_dbparams_free(struct iso_dbparams *p)
{
	if (p == NULL)
		return;
	free(p->host);
	free(p->port);
	free(p->user);
	free(p->dbname);
	free(p->password);
	memset(p, 0, sizeof(*p));
}

/* One conninfo value, single-quoted (with \ and ' escaped) when it must be. */
static void
put_conninfo_value(FILE *f, const char *v)
{
	if (*v != '\0' && strcspn(v, " \t\n\r\v\f'\\") == strlen(v)) {
		fputs(v, f);
		return;
	}
	fputc('\'', f);
	for (; *v; v++) {
		if (*v == '\'' || *v == '\\')
			fputc('\\', f);
		fputc(*v, f);
	}
	fputc('\'', f);
}

char *
iso_psql_command(const char *conninfo, const char *schema, char *withheld,
    char *err)
{
	PQconninfoOption	*opts, *o;
	const char		*options = NULL;
	char			*perr = NULL, *ci = NULL, *cmd = NULL, *sp;
	size_t			 len = 0;
	FILE			*f;
	bool			 first = true;
	size_t			 wl = 0;

	withheld[0] = '\0';
	if ((opts = PQconninfoParse(conninfo ? conninfo : "", &perr)) == NULL) {
		errf(err, "bad database connection string: %.*s",
		    perr ? (int)strcspn(perr, "\n") : 13, perr ? perr : "out of memory");
		conninfo_scrub(err, ERR_LEN, conninfo);
		PQfreemem(perr);
		return NULL;
	}
	if ((f = open_memstream(&ci, &len)) == NULL)
		fatalx("%s: open_memstream: out of memory", __func__);
	/* libpq's reading of the string, URI or keywords, in libpq's order. */
	for (o = opts; o->keyword != NULL; o++) {
		if (o->val == NULL || *o->val == '\0')
			continue;
		/* libpq's own mark of a secret: password, sslpassword, and
		 * whatever a later libpq adds */
		if (strchr(o->dispchar, '*') != NULL) {
			if (wl + strlen(o->keyword) + 2 <= ISO_WITHHELD_LEN)
				wl += (size_t)snprintf(withheld + wl,
				    ISO_WITHHELD_LEN - wl, "%s%s", wl ? " " : "",
				    o->keyword);
			continue;
		}
		if (strcmp(o->keyword, "options") == 0) {
			options = o->val;
			continue;
		}
		fprintf(f, "%s%s=", first ? "" : " ", o->keyword);
		put_conninfo_value(f, o->val);
		first = false;
	}
	/* No blank in -c's argument, so the usual case needs no quotes; a
	 * later -c wins over one the string already had. */
	sp = xasprintf("%s%s-csearch_path=%s", options ? options : "",
	    options ? " " : "", schema);
	fprintf(f, "%soptions=", first ? "" : " ");
	put_conninfo_value(f, sp);
	free(sp);
	fclose(f);
	/* One shell word: single quotes, each ' as '\''. */
	if ((f = open_memstream(&cmd, &len)) == NULL)
		fatalx("%s: open_memstream: out of memory", __func__);
	fputs("psql '", f);
	for (const char *c = ci; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", f);
		else
			fputc(*c, f);
	}
	fputc('\'', f);
	fclose(f);
	free(ci);
	PQconninfoFree(opts);
	return cmd;
}

/*
 * The one rule for a run's schema names (iso.h): "soak_<run>_w" is every
 * worker's prefix, over [a-z0-9_].  PostgreSQL silently cuts names at 63
 * bytes, which could cut the worker suffix and make two workers share a
 * schema; so a run id too long for the longest suffix ("_w" INT_MAX
 * "_tpl") is shortened here, the same for every worker, and a hash of the
 * whole id keeps different runs apart.
 */
#define ISO_SUFFIX_MAX	(sizeof("_w2147483647_tpl") - 1)

char *
iso_schema_prefix(const char *run_id)
{
	char		 hash[16], *name, *p;
	uint64_t	 h = fnv1a64(run_id, strlen(run_id));
	size_t		 room;

	name = xasprintf("soak_%s_w", run_id);
	if (strlen(name) - 2 + ISO_SUFFIX_MAX > ISO_NAME_MAX) {
		/* 8 hex digits: the 64-bit hash folded in half. */
		snprintf(hash, sizeof(hash), "_%08" PRIx32,
		    (uint32_t)(h ^ (h >> 32)));
		room = ISO_NAME_MAX - strlen("soak_") - strlen(hash) -
		    ISO_SUFFIX_MAX;
		free(name);
		name = xasprintf("soak_%.*s%s_w", (int)room, run_id, hash);
	}
	for (p = name; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_'))
			*p = '_';
	}
	return name;
}

/* The prefix, the worker's number and tail ("" for the worker's schema,
 * "_tpl" for truncate's template). */
static char *
iso_schema_name(const char *run_id, int worker_id, const char *tail)
{
	char	*prefix = iso_schema_prefix(run_id);
	char	*name = xasprintf("%s%d%s", prefix, worker_id, tail);

	free(prefix);
	return name;
}

int
iso_drop_run(const char *conninfo, const char *run_id, int64_t deadline,
    char *err)
{
	PGconn		*conn;
	PGresult	*res;
	char		*prefix = iso_schema_prefix(run_id), *pattern, *q, m[ERR_LEN];
	const char	*params[1];
	bool		 expired = false;
	int		 k, rc = -1;

	/* The prefix is [a-z0-9_] only: nothing in it is a regex operator. */
	pattern = xasprintf("^%s[0-9]+(_tpl)?$", prefix);
	params[0] = pattern;
	if ((conn = iso_pq_connect(conninfo, deadline, err)) == NULL)
		goto out;
	PQsetNoticeProcessor(conn, iso_notice, NULL);	/* "drop cascades to" */
	res = iso_pq_query(conn, "SELECT nspname FROM pg_namespace "
	    "WHERE nspname ~ $1", 1, params, deadline, &expired);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		errf(err, "listing the schemas of run %s: %s", run_id, expired ?
		    "no answer from the database in the time left" :
		    iso_pq_msg(conn, res, m, sizeof(m)));
		PQclear(res);
		goto out;
	}
	for (k = 0; k < PQntuples(res); k++) {
		char	*id = PQescapeIdentifier(conn, PQgetvalue(res, k, 0),
		    strlen(PQgetvalue(res, k, 0)));
		PGresult *d;

		q = xasprintf("DROP SCHEMA IF EXISTS %s CASCADE", id);
		d = iso_pq_exec(conn, q, deadline, &expired);
		free(q);
		if (PQresultStatus(d) != PGRES_COMMAND_OK) {
			errf(err, "dropping schema %s: %s", id, expired ?
			    "no answer from the database in the time left" :
			    iso_pq_msg(conn, d, m, sizeof(m)));
			PQclear(d);
			PQfreemem(id);
			PQclear(res);
			goto out;
		}
		PQclear(d);
		PQfreemem(id);
	}
	PQclear(res);
	rc = 0;
out:
	if (rc == -1)	/* libpq may quote the connection string back */
		conninfo_scrub(err, ERR_LEN, conninfo);
	iso_pq_abandon(conn);
	free(pattern);
	free(prefix);
	return rc;
}

/* What a connection got from the server for a query that did not work. */
static const char *
query_msg(PGconn *conn, const PGresult *res, bool expired, char *buf, size_t len)
{
	if (expired)
		return "no answer from the database in the time left";
	return iso_pq_msg(conn, res, buf, len);
}

/* Per-session settings; run after every (re)connect. */
static int
iso_session(struct iso *iso, char *err)
{
	PGresult	*res;
	char		*sql, m[200];
	bool		 expired;
	int		 rc = 0;

	PQsetNoticeProcessor(iso->conn, iso_notice, NULL);
	sql = xasprintf("SET client_min_messages = warning; "
	    "SET application_name = 'soak worker %d'; SET search_path TO %s; "
	    "SELECT pid, (extract(epoch FROM backend_start) * 1000000)::bigint, "
	    "pg_postmaster_start_time()::text "
	    "FROM pg_stat_activity WHERE pid = pg_backend_pid()",
	    iso->worker_id, iso->qschema);
	res = iso_pq_exec(iso->conn, sql, iso->deadline, &expired);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = errf(err, "setting up the session for schema %s: %s",
		    iso->schema, query_msg(iso->conn, res, expired, m, sizeof(m)));
	else {
		iso->self.pid = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
		snprintf(iso->self.start, sizeof(iso->self.start), "%s",
		    PQgetvalue(res, 0, 1));
		snprintf(iso->epoch, sizeof(iso->epoch), "%s", PQgetvalue(res, 0, 2));
	}
	PQclear(res);
	free(sql);
	return rc;
}

/*
 * Drops the control connection without waiting on the server (a query may
 * be in flight on it, to a server that does not answer).  Its backend is
 * remembered, to be ended once a connection gets through.
 */
static void
iso_forget(struct iso *iso)
{
	if (iso->conn == NULL)
		return;
	if (iso->self.pid > 0)
		iso->stale = iso->self;
	memset(&iso->self, 0, sizeof(iso->self));
	iso->epoch[0] = '\0';
	iso_pq_abandon(iso->conn);
	iso->conn = NULL;
}

/*
 * Ends the backend of a dropped connection, over conn, if it still runs:
 * it may hold locks (an invariant's snapshot, half a reset) that would
 * stall the next reset.  Without one to end, just asks the server the time
 * of day.  -1 when the server did not answer by the deadline; an answer
 * that is an error (no right to signal it) is still an answer.
 */
static int
end_stale(struct iso *iso, PGconn *conn, int64_t deadline, char *err)
{
	const char	*params[3];
	char		 pid[16], wait[24], m[200];
	PGresult	*res;
	bool		 expired;
	int		 rc = 0;

	if (iso->stale.pid > 0) {
		/* PostgreSQL 14+ waits, up to the time given, for the backend
		 * to be gone, and its locks with it: the next reset meets none. */
		snprintf(pid, sizeof(pid), "%d", iso->stale.pid);
		snprintf(wait, sizeof(wait), "%lld", (long long)(deadline - now_ms() > 1 ?
		    deadline - now_ms() - 1 : 1));
		params[0] = pid;
		params[1] = iso->stale.start;
		params[2] = wait;
		res = iso_pq_query(conn, "SELECT pg_terminate_backend(pid, $3::bigint) "
		    "FROM pg_stat_activity WHERE pid = $1::int AND "
		    "(extract(epoch FROM backend_start) * 1000000)::bigint = $2::bigint",
		    3, params, deadline, &expired);
	} else
		res = iso_pq_exec(conn, "SELECT 1", deadline, &expired);
	if (expired || res == NULL || PQstatus(conn) != CONNECTION_OK) {
		rc = errf(err, "%s", query_msg(conn, res, expired, m, sizeof(m)));
		goto out;
	}
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		log_warnx("worker %d: cannot end the backend (pid %d) of a dropped "
		    "connection: %s", iso->worker_id, iso->stale.pid,
		    iso_pq_msg(conn, res, m, sizeof(m)));
	else if (iso->stale.pid > 0)
		log_debug("worker %d: %s the backend (pid %d) of a dropped connection",
		    iso->worker_id, PQntuples(res) > 0 ? "ended" : "no need to end",
		    iso->stale.pid);
	memset(&iso->stale, 0, sizeof(iso->stale));
out:
	PQclear(res);
	return rc;
}

/* iso_connect's words, read back by iso_err_passing. */
static const char connect_failed[] = "cannot connect to PostgreSQL at ";

static int
iso_connect(struct iso *iso, char *err)
{
	char	desc[128], why[ERR_LEN];

	/* A connection with a query still in flight (its call gave up) is no
	 * use either: dropped like a lost one. */
	if (iso->conn != NULL && PQstatus(iso->conn) == CONNECTION_OK &&
	    PQtransactionStatus(iso->conn) != PQTRANS_ACTIVE)
		return 0;
	iso_forget(iso);
	if ((iso->conn = iso_pq_connect(iso->conninfo, iso->deadline, why)) == NULL) {
		iso_conn_desc(iso->conninfo, desc, sizeof(desc));
		errf(err, "%s%s: %s", connect_failed, desc, why);
		conninfo_scrub(err, ERR_LEN, iso->conninfo);
		return -1;
	}
	if (iso_session(iso, err) == -1)
		return -1;
	if (iso->stale.pid > 0 && end_stale(iso, iso->conn, iso->deadline, why) == -1)
		log_debug("worker %d: %s", iso->worker_id, why);
	return 0;
}

bool
iso_err_passing(const char *err)
{
	static const char *const lasting[] = {
		"authentication", "pg_hba.conf", "does not exist",
		"SSL", "certificate", "invalid", "permission denied",
		"not permitted", "no password supplied",
	};
	size_t	i;

	if (strncmp(err, connect_failed, sizeof(connect_failed) - 1) != 0)
		return false;
	for (i = 0; i < sizeof(lasting) / sizeof(lasting[0]); i++)
		if (strstr(err, lasting[i]) != NULL)
			return false;
	return true;
}

static bool
iso_lost(const struct iso *iso)
{
	return iso->conn == NULL || PQstatus(iso->conn) != CONNECTION_OK;
}

int
iso_probe(struct iso *iso, int timeout_ms, char *err)
{
	int64_t	 deadline = now_ms() + timeout_ms;
	PGconn	*c;
	char	 desc[128], why[ERR_LEN];
	int	 rc = -1;

	/* Mid-query, the control connection is lost to us whatever comes. */
	if (iso->conn != NULL && PQtransactionStatus(iso->conn) == PQTRANS_ACTIVE)
		iso_forget(iso);
	if ((c = iso_pq_connect(iso->conninfo, deadline, why)) != NULL &&
	    end_stale(iso, c, deadline, why) == 0)
		rc = 0;
	iso_pq_abandon(c);
	if (rc == -1) {
		iso_forget(iso);
		iso_conn_desc(iso->conninfo, desc, sizeof(desc));
		errf(err, "the database at %s did not answer within %d.%d s: %s", desc,
		    timeout_ms / 1000, timeout_ms % 1000 / 100, why);
		conninfo_scrub(err, ERR_LEN, iso->conninfo);
	}
	return rc;
}

const char *
iso_epoch(const struct iso *iso)
{
	return iso->conn != NULL && PQstatus(iso->conn) == CONNECTION_OK ? iso->epoch : "";
}

int
iso_probe_epoch(struct iso *iso, int timeout_ms, char *epoch, size_t len, char *err)
{
	int64_t		 deadline = now_ms() + timeout_ms;
	PGconn		*c;
	PGresult	*res = NULL;
	char		 desc[128], why[ERR_LEN];
	bool		 expired = false;
	int		 rc = -1;

	if ((c = iso_pq_connect(iso->conninfo, deadline, why)) != NULL) {
		res = iso_pq_exec(c, "SELECT pg_postmaster_start_time()::text", deadline,
		    &expired);
		if (!expired && PQresultStatus(res) == PGRES_TUPLES_OK &&
		    PQntuples(res) == 1) {
			snprintf(epoch, len, "%s", PQgetvalue(res, 0, 0));
			rc = 0;
		} else
			snprintf(why, sizeof(why), "%s", query_msg(c, res, expired,
			    desc, sizeof(desc)));
	}
	PQclear(res);
	iso_pq_abandon(c);
	if (rc == -1) {
		iso_conn_desc(iso->conninfo, desc, sizeof(desc));
		errf(err, "the database at %s did not answer within %d.%d s: %s", desc,
		    timeout_ms / 1000, timeout_ms % 1000 / 100, why);
		conninfo_scrub(err, ERR_LEN, iso->conninfo);
	}
	return rc;
}

struct iso *
iso_open(const struct cfg *cfg, const char *conninfo, const char *run_id,
    int worker_id, const char *workspace_root, char *err)
{
	struct iso	*iso;
	char		*base;

	iso = xcalloc(1, sizeof(*iso));
	iso->conninfo = xstrdup(conninfo ? conninfo : "");
	iso->worker_id = worker_id;
	iso->schema = iso_schema_name(run_id ? run_id : "", worker_id, "");
	iso->tpl = iso_schema_name(run_id ? run_id : "", worker_id, "_tpl");
	/* The names are [a-z0-9_] only, so quoting cannot need escapes. */
	iso->qschema = xasprintf("\"%s\"", iso->schema);
	iso->qtpl = xasprintf("\"%s\"", iso->tpl);
	iso->mode = cfg ? cfg->db_reset : CFG_RESET_RECREATE;
	iso->workspace = xstrdup(workspace_root);
	if (cfg != NULL && cfg->db_schema != NULL && cfg->db_schema[0]) {
		if ((iso->ddl = read_file(cfg->db_schema, ISO_DDL_MAX, NULL,
		    err)) == NULL)
			goto fail;
		base = xstrdup(cfg->db_schema);
		iso->ddl_name = xstrdup(basename(base));
		free(base);
	}
	if (workspace_root == NULL || workspace_root[0] == '\0') {
		errf(err, "worker %d has no workspace directory", worker_id);
		goto fail;
	}
	/* A predictable name (soak-<run>-w<N> on a shared tmpfs): refused if
	 * someone else got there first. */
	if (private_dir(workspace_root, err) == -1)
		goto fail;
	iso->deadline = now_ms() + ISO_CONNECT_MS;
	if (iso_connect(iso, err) == -1)
		goto fail;
	return iso;
fail:
	iso_close(iso);
	return NULL;
}

const char *
iso_schema(const struct iso *iso)
{
	return iso->schema;
}

const char *
iso_conninfo(const struct iso *iso)
{
	return iso->conninfo;
}

const char *
iso_ddl_sqlstate(const struct iso *iso)
{
	return iso->ddl_sqlstate;
}

PGconn *
iso_conn(struct iso *iso)
{
	return iso->conn;
}

/* 1-based line of a 1-based character position into text (UTF-8). */
static int
text_line(const char *text, long pos)
{
	const unsigned char	*p = (const unsigned char *)text;
	long			 chars = 0;
	int			 line = 1;

	for (; *p && chars < pos - 1; p++) {
		if ((*p & 0xc0) == 0x80)
			continue;	/* continuation byte: same character */
		if (*p == '\n')
			line++;
		chars++;
	}
	return line;
}

static int
exec_ok(struct iso *iso, const char *sql, const char *what, char *err)
{
	PGresult	*res;
	char		 m[200];
	bool		 expired;
	int		 rc = 0;

	res = iso_pq_exec(iso->conn, sql, iso->deadline, &expired);
	if (PQresultStatus(res) != PGRES_COMMAND_OK &&
	    PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char	*code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (expired)
			rc = errf(err, "%s schema %s: %s", what, iso->schema,
			    query_msg(iso->conn, res, expired, m, sizeof(m)));
		else if (code && strcmp(code, "55P03") == 0)
			rc = errf(err, "%s schema %s: waited %s for a lock; "
			    "a session from an earlier seed may still hold it",
			    what, iso->schema, ISO_LOCK_TIMEOUT);
		else
			rc = errf(err, "%s schema %s: %s", what, iso->schema,
			    iso_pq_msg(iso->conn, res, m, sizeof(m)));
	}
	PQclear(res);
	return rc;
}

/* Ends a failed transaction; not one whose query is still in flight. */
static void
rollback(struct iso *iso)
{
	bool	expired;

	switch (PQtransactionStatus(iso->conn)) {
	case PQTRANS_INTRANS:
	case PQTRANS_INERROR:
		PQclear(iso_pq_exec(iso->conn, "ROLLBACK", iso->deadline, &expired));
		break;
	default:
		break;
	}
}

static int
apply_ddl(struct iso *iso, char *err)
{
	PGresult	*res;
	const char	*pos;
	char		 m[200];
	bool		 expired;
	int		 rc = 0;

	if (iso->ddl == NULL)
		return 0;
	res = iso_pq_exec(iso->conn, iso->ddl, iso->deadline, &expired);
	if (expired)
		return errf(err, "%s: %s", iso->ddl_name,
		    query_msg(iso->conn, res, expired, m, sizeof(m)));
	switch (PQresultStatus(res)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
	case PGRES_EMPTY_QUERY:
		break;
	case PGRES_COPY_IN:
		/* Abort the COPY so the connection stays usable. */
		PQputCopyEnd(iso->conn, "not supported in a schema file");
		PQclear(res);
		res = iso_pq_wait(iso->conn, iso->deadline, &expired);
		rc = errf(err, "%s: COPY ... FROM STDIN cannot run from a schema "
		    "file; use INSERT, or load the data in setup", iso->ddl_name);
		break;
	default:
		iso_pq_msg(iso->conn, res, m, sizeof(m));
		pos = PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION);
		if (!iso_lost(iso) && PQresultErrorField(res, PG_DIAG_SQLSTATE))
			snprintf(iso->ddl_sqlstate, sizeof(iso->ddl_sqlstate), "%s",
			    PQresultErrorField(res, PG_DIAG_SQLSTATE));
		if (iso_lost(iso))
			rc = errf(err, "%s: connection lost: %s", iso->ddl_name, m);
		else if (pos != NULL)
			rc = errf(err, "%s:%d: %s", iso->ddl_name,
			    text_line(iso->ddl, strtol(pos, NULL, 10)), m);
		else
			rc = errf(err, "%s: %s", iso->ddl_name, m);
		break;
	}
	PQclear(res);
	return rc;
}

/*
 * truncate's template.  Right after the DDL, in its transaction, a sibling
 * schema <schema>_tpl gets, for every table of the schema that has rows, a
 * table of the same name holding those rows (generated columns left out:
 * PostgreSQL computes them again), and for every sequence a one-row table
 * of the same name holding its last_value and is_called.  Tables and
 * sequences share one namespace, so the names cannot clash.  ONLY: an
 * inheritance parent's copy must not take its children's rows too.
 * Both names are [a-z0-9_], so they are spliced into literals as they are.
 */
static const char snapshot_sql[] =
    "DO $soak$ DECLARE s text := '%s'; t text := '%s'; r record; "
    "cols text; has bool; BEGIN "
    "EXECUTE format('CREATE SCHEMA %%I', t); "
    "FOR r IN SELECT c.oid, c.relname, c.relkind FROM pg_class c "
    "  WHERE c.relnamespace = s::regnamespace AND c.relkind IN ('r', 'S') "
    "LOOP "
    "  IF r.relkind = 'S' THEN "
    "    EXECUTE format('CREATE TABLE %%I.%%I AS SELECT last_value, "
    "      is_called FROM %%I.%%I', t, r.relname, s, r.relname); "
    "    CONTINUE; "
    "  END IF; "
    "  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) "
    "    INTO cols FROM pg_attribute WHERE attrelid = r.oid AND attnum > 0 "
    "    AND NOT attisdropped AND attgenerated = ''; "
    "  EXECUTE format('SELECT EXISTS (SELECT FROM ONLY %%I.%%I)', s, "
    "    r.relname) INTO has; "
    "  IF has AND cols IS NOT NULL THEN "
    "    EXECUTE format('CREATE TABLE %%I.%%I AS SELECT %%s FROM ONLY "
    "      %%I.%%I', t, r.relname, cols, s, r.relname); "
    "  END IF; "
    "END LOOP; END $soak$";

/*
 * Back to the state right after the DDL, in one transaction:
 *  - every table in one TRUNCATE .. RESTART IDENTITY CASCADE, so foreign
 *    keys between them never get in the way;
 *  - the template's rows back in, all tables in ONE statement (an INSERT
 *    per table, each a data-modifying WITH): foreign-key checks are
 *    queued to the end of the statement, so any order of tables, a
 *    self-reference or a cycle of non-deferrable keys all pass, and no
 *    superuser (session_replication_role) is needed.  OVERRIDING SYSTEM
 *    VALUE lets GENERATED ALWAYS identity columns take the saved values;
 *  - user triggers of those tables are disabled around that INSERT (a
 *    fixture's trigger already did its work in the DDL and its result is
 *    in the template) and enabled again as they were (ALWAYS / REPLICA);
 *    only the owner is needed for that;
 *  - every sequence set to its saved value with setval(); a sequence the
 *    template does not know (made by a turn) is restarted, as before.
 * A table the template does not know, or that had no rows, stays empty.
 */
static const char restore_sql[] =
    "DO $soak$ DECLARE s text := '%s'; t text := '%s'; r record; "
    "tl text; ins text := ''; cols text; k int := 0; q text; "
    "dis text[]; ena text[]; BEGIN "
    "SELECT string_agg(format('%%I.%%I', schemaname, tablename), ', ') "
    "  INTO tl FROM pg_tables WHERE schemaname = s; "
    "IF tl IS NOT NULL THEN "
    "  EXECUTE 'TRUNCATE TABLE ' || tl || ' RESTART IDENTITY CASCADE'; "
    "END IF; "
    "FOR r IN SELECT c.relname, tc.oid AS toid FROM pg_class c "
    "  JOIN pg_class tc ON tc.relname = c.relname "
    "  AND tc.relnamespace = t::regnamespace "
    "  WHERE c.relnamespace = s::regnamespace AND c.relkind = 'r' LOOP "
    "  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) "
    "    INTO cols FROM pg_attribute WHERE attrelid = r.toid "
    "    AND attnum > 0 AND NOT attisdropped; "
    "  k := k + 1; "
    "  ins := ins || CASE WHEN k > 1 THEN ', ' ELSE '' END || "
    "    format('i%%s AS (INSERT INTO %%I.%%I (%%s) OVERRIDING SYSTEM VALUE "
    "    SELECT %%s FROM %%I.%%I)', k, s, r.relname, cols, cols, t, "
    "    r.relname); "
    "END LOOP; "
    "IF k > 0 THEN "
    "  SELECT array_agg(format('ALTER TABLE %%I.%%I DISABLE TRIGGER %%I', "
    "    s, c.relname, g.tgname)), array_agg(format('ALTER TABLE %%I.%%I "
    "    ENABLE %%s TRIGGER %%I', s, c.relname, CASE g.tgenabled "
    "    WHEN 'A' THEN 'ALWAYS' WHEN 'R' THEN 'REPLICA' ELSE '' END, "
    "    g.tgname)) INTO dis, ena "
    "    FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid "
    "    JOIN pg_class tc ON tc.relname = c.relname "
    "    AND tc.relnamespace = t::regnamespace "
    "    WHERE c.relnamespace = s::regnamespace AND NOT g.tgisinternal "
    "    AND g.tgenabled <> 'D'; "
    "  FOREACH q IN ARRAY coalesce(dis, '{}') LOOP EXECUTE q; END LOOP; "
    "  EXECUTE 'WITH ' || ins || ' SELECT'; "
    "  FOREACH q IN ARRAY coalesce(ena, '{}') LOOP EXECUTE q; END LOOP; "
    "END IF; "
    "FOR r IN SELECT c.relname, tc.oid IS NOT NULL AS saved FROM pg_class c "
    "  LEFT JOIN pg_class tc ON tc.relname = c.relname "
    "  AND tc.relnamespace = t::regnamespace "
    "  WHERE c.relnamespace = s::regnamespace AND c.relkind = 'S' LOOP "
    "  IF r.saved THEN "
    "    EXECUTE format('SELECT setval(%%L, last_value, is_called) "
    "      FROM %%I.%%I', format('%%I.%%I', s, r.relname), t, r.relname); "
    "  ELSE "
    "    EXECUTE format('ALTER SEQUENCE %%I.%%I RESTART', s, r.relname); "
    "  END IF; "
    "END LOOP; END $soak$";

static int
reset_recreate(struct iso *iso, char *err)
{
	char	*sql, *tpl = NULL;
	int	 rc;

	/*
	 * One transaction: a broken DDL file leaves the old schema alone.
	 * truncate mode makes its template in it too.
	 */
	if (iso->mode == CFG_RESET_TRUNCATE)
		tpl = xasprintf("DROP SCHEMA IF EXISTS %s CASCADE; ", iso->qtpl);
	sql = xasprintf("BEGIN; SET LOCAL lock_timeout = '%s'; %s"
	    "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s; "
	    "SET LOCAL search_path TO %s",
	    ISO_LOCK_TIMEOUT, tpl ? tpl : "", iso->qschema, iso->qschema,
	    iso->qschema);
	free(tpl);
	rc = exec_ok(iso, sql, "recreating", err);
	free(sql);
	if (rc == -1)
		goto fail;
	if (apply_ddl(iso, err) == -1)
		goto fail;
	if (iso->mode == CFG_RESET_TRUNCATE) {
		sql = xasprintf(snapshot_sql, iso->schema, iso->tpl);
		rc = exec_ok(iso, sql, "saving the rows of", err);
		free(sql);
		if (rc == -1)
			goto fail;
	}
	/* A COMMIT inside the DDL file ends ours early; that is harmless. */
	if (exec_ok(iso, "COMMIT", "committing", err) == -1)
		goto fail;
	iso->created = true;
	return 0;
fail:
	if (!iso_lost(iso))
		rollback(iso);
	return -1;
}

static int
reset_truncate(struct iso *iso, char *err)
{
	char	*sql, *body;
	int	 rc;

	body = xasprintf(restore_sql, iso->schema, iso->tpl);
	sql = xasprintf("BEGIN; SET LOCAL lock_timeout = '%s'; "
	    "SET LOCAL search_path TO %s; %s; COMMIT",
	    ISO_LOCK_TIMEOUT, iso->qschema, body);
	rc = exec_ok(iso, sql, "truncating", err);
	free(body);
	free(sql);
	if (rc == -1 && !iso_lost(iso))
		rollback(iso);
	return rc;
}

static int
reset_once(struct iso *iso, enum cfg_reset mode, char *err)
{
	if (iso_connect(iso, err) == -1)
		return -1;
	if (mode == CFG_RESET_TRUNCATE && iso->created)
		return reset_truncate(iso, err);
	return reset_recreate(iso, err);
}

int
iso_reset(struct iso *iso, int64_t deadline, char *err)
{
	enum cfg_reset	mode = iso->mode;
	int64_t		until, delay = 50;
	char		first[ERR_LEN];

	iso->deadline = deadline;
	iso->ddl_sqlstate[0] = '\0';
	if (reset_once(iso, mode, err) == 0)
		goto ok;
	if (!iso_lost(iso) || now_ms() >= deadline)
		return -1;
	/*
	 * The server went away (restarted, crashed, its socket gone for a
	 * moment): wait for it, within ISO_RECONNECT_MS and the seed's
	 * deadline, instead of burning through seeds that each fail at once.
	 * Once such a wait has failed, the server is down for longer: later
	 * resets try once each until one gets through.
	 */
	snprintf(first, sizeof(first), "%s", err);
	until = iso->db_down ? now_ms() : deadline_within(deadline, ISO_RECONNECT_MS);
	log_warnx("worker %d: lost the database connection during reset (%s); "
	    "reconnecting%s", iso->worker_id, first, iso->db_down ? " once" :
	    ", for up to 5 s");
	for (;;) {
		if (reset_once(iso, mode, err) == 0)
			goto ok;
		if (!iso_lost(iso))
			return -1;
		if (now_ms() + delay >= until)
			break;
		poll(NULL, 0, (int)delay);	/* backoff: nothing to wait on */
		delay = delay * 2 > 1000 ? 1000 : delay * 2;
	}
	iso->db_down = true;
	return -1;
ok:
	iso->db_down = false;
	return 0;
}

int
iso_drop(struct iso *iso, char *err)
{
	char	*sql;
	int	 rc, tries;

	iso->deadline = now_ms() + ISO_TEARDOWN_MS;
	/* truncate's template goes with the schema (IF EXISTS: any mode). */
	sql = xasprintf("BEGIN; SET LOCAL lock_timeout = '%s'; "
	    "DROP SCHEMA IF EXISTS %s CASCADE; "
	    "DROP SCHEMA IF EXISTS %s CASCADE; COMMIT", ISO_LOCK_TIMEOUT,
	    iso->qschema, iso->qtpl);
	for (tries = 0; tries < 2; tries++) {
		if ((rc = iso_connect(iso, err)) == -1)
			continue;
		if ((rc = exec_ok(iso, sql, "dropping", err)) == 0)
			break;
		if (!iso_lost(iso) || now_ms() >= iso->deadline) {
			rollback(iso);
			break;
		}
	}
	free(sql);
	if (rc == 0)
		iso->created = false;
	else {
		char	desc[256], why[ERR_LEN];

		snprintf(why, sizeof(why), "%s", err);
		iso_conn_desc(iso->conninfo, desc, sizeof(desc));
		if (now_ms() >= iso->deadline)
			snprintf(why, sizeof(why), "it did not answer within %d s",
			    ISO_TEARDOWN_MS / 1000);
		errf(err, "the schemas %s and %s are left in the database at %s (%s); "
		    "remove them with DROP SCHEMA IF EXISTS %s, %s CASCADE", iso->schema,
		    iso->tpl, desc, why, iso->qschema, iso->qtpl);
	}
	return rc;
}

static char *
fresh_dir(char *path, char *err)
{
	if (rm_rf(path) == -1) {
		errf(err, "cannot remove the leftover workspace \"%s\"", path);
		goto fail;
	}
	if (mkdir_p(path, 0700, err) == -1)
		goto fail;
	if (chmod(path, 0700) == -1) {
		errf(err, "cannot chmod \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	return path;
fail:
	free(path);
	return NULL;
}

char *
iso_seed_dir(struct iso *iso, uint64_t seed, char *err)
{
	return fresh_dir(xasprintf("%s/seed-%" PRIu64, iso->workspace, seed),
	    err);
}

char *
iso_turn_dir(struct iso *iso, uint64_t seed, int round, int turn, char *err)
{
	static const char	*sub[] = { "tmp", "home/.config", "home/.cache",
				    "home/.local/share", "home/.local/state" };
	char			*dir, *p;
	size_t			 i;

	dir = fresh_dir(xasprintf("%s/seed-%" PRIu64 "/r%d-t%d", iso->workspace,
	    seed, round, turn), err);
	if (dir == NULL)
		return NULL;
	for (i = 0; i < nitems(sub); i++) {
		p = xasprintf("%s/%s", dir, sub[i]);
		if (mkdir_p(p, 0700, err) == -1) {
			free(p);
			free(dir);
			return NULL;
		}
		free(p);
	}
	return dir;
}

void
iso_close(struct iso *iso)
{
	if (iso == NULL)
		return;
	iso_pq_abandon(iso->conn);
	free(iso->conninfo);
	free(iso->schema);
	free(iso->qschema);
	free(iso->tpl);
	free(iso->qtpl);
	free(iso->ddl);
	free(iso->ddl_name);
	free(iso->workspace);
	free(iso);
}
