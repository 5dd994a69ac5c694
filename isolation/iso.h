/*
 * Isolation: a worker's own PostgreSQL schema and workspace directory, and
 * the embedded throwaway PostgreSQL used when no database is configured.
 *
 * Every function returns 0 / a pointer on success, -1 / NULL with err
 * (ERR_LEN bytes) holding a sentence a user can act on.  Free/close
 * functions accept NULL.
 */
#ifndef SOAK_ISO_H
#define SOAK_ISO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "common/config.h"

/*
 * Embedded PostgreSQL.  pg_embedded_start() finds the installed server
 * (pg_config --bindir, else the newest /usr/lib/postgresql/<v>/bin), runs
 * initdb into a fresh directory on tmpfs (/dev/shm when present, else
 * TMPDIR), and starts postgres with a unix socket in a private directory,
 * listen_addresses='', fsync=off, synchronous_commit=off,
 * full_page_writes=off, trust auth, max_connections as given (the caller
 * sizes it: iso_db_max_connections).
 * When running as root, initdb and postgres run as the "postgres" system
 * user (initdb refuses root).
 *
 * Cleanup is owned by a small supervisor process forked at start: it holds
 * the read end of a pipe whose write end only the caller holds, so when
 * the caller exits for any reason (normal exit, Ctrl-C, SIGKILL, crash) the
 * supervisor sees EOF, stops postgres (immediate shutdown), waits for it and
 * removes every directory it created.  The supervisor runs in its own
 * process group so a terminal's Ctrl-C reaches it only through that pipe.
 * pg_embedded_stop() closes the pipe and waits for the supervisor.
 * Readiness is waited on (PQping until PQPING_OK), never slept for, with a
 * watchdog that says what it waited for.
 */
struct pg_embedded;

struct pg_embedded	*pg_embedded_start(int max_connections, char *err);
/* "host=/dev/shm/soak-pg-XXXX port=5432 user=postgres dbname=postgres" */
const char		*pg_embedded_conninfo(const struct pg_embedded *pg);
void			 pg_embedded_stop(struct pg_embedded *pg);
/*
 * The data directory is marked soak's (common/soak.h SOAK_PG_MARK): the
 * fault proxy may stop its backends at a lock wait.  pg_embedded_continue()
 * sends SIGCONT to every backend, for when the process that stopped some
 * died (a worker killed): its backends must see their connections close.
 */
void			 pg_embedded_continue(struct pg_embedded *pg);

/*
 * The database of a run, chosen in one place.  iso_db_open takes the first
 * non-empty of: `chosen` (the conninfo a local run's coordinator already
 * picked for its workers; NULL elsewhere), SOAK_DATABASE_URL,
 * cfg->db_url; with none, it starts an embedded PostgreSQL with
 * iso_db_max_connections(cfg, slots).  db->conninfo is then what every
 * worker connects to (heap), db->pg the embedded cluster or NULL.
 * iso_db_close stops the cluster, if any, and frees; NULL is a no-op.
 *
 * slots: how many workers use the database at once, each with its own
 * schema running one seed (soak run: --workers; a worker slot or a
 * replay: 1, as each starts its own cluster).
 */
struct iso_db {
	char			*conninfo;
	struct pg_embedded	*pg;
};

int	iso_db_open(struct iso_db *db, const struct cfg *cfg, int slots,
	    const char *chosen, char *err);
void	iso_db_close(struct iso_db *db);
/*
 * max_connections for `slots` workers of cfg:
 *   slots x (turns x (1 + proxies to the database) + services + 8) + 20
 * (the reasons for each term are in isolation/db.c).
 */
int	iso_db_max_connections(const struct cfg *cfg, int slots);

/*
 * The first line of the server's message for res, else of libpq's for
 * conn, in buf (without its newline): "unknown error" when neither has one.
 */
const char	*iso_pq_msg(PGconn *conn, const PGresult *res, char *buf,
		    size_t len);

/*
 * libpq with a deadline: an instant of now_ms()'s clock (CLOCK_MONOTONIC).
 * Each call drives libpq's asynchronous API with poll(2) on its socket and
 * gives up when the deadline passes, whatever the server does: a paused,
 * partitioned or wedged database costs the caller its deadline, never
 * more.  Connections get TCP keepalives unless the string says otherwise,
 * and are non-blocking (iso_pq_exec makes a caller's connection so).
 *
 * iso_pq_connect: the connection, or NULL with err (libpq's reason, or "no
 *     answer ... within the time left"); err may quote the connection
 *     string's parts: callers scrub it (conninfo_scrub).
 * iso_pq_exec / iso_pq_query (one statement, text parameters): what
 *     PQexec / PQexecParams would return -- the last result, stopping at
 *     COPY -- or NULL: *expired says whether the deadline passed (the
 *     query is then still in flight and the connection unusable: drop it
 *     with iso_pq_abandon), else libpq could not send it (PQerrorMessage).
 * iso_pq_wait: the results of what was already sent, as above (after
 *     PQputCopyEnd, say).
 * iso_pq_abandon: closes conn without waiting on the server; NULL is a
 *     no-op.  The server's backend lives on until it next reads or writes.
 */
PGconn		*iso_pq_connect(const char *conninfo, int64_t deadline, char *err);
PGresult	*iso_pq_exec(PGconn *conn, const char *sql, int64_t deadline,
		    bool *expired);
PGresult	*iso_pq_query(PGconn *conn, const char *sql, int nparams,
		    const char *const *params, int64_t deadline, bool *expired);
PGresult	*iso_pq_wait(PGconn *conn, int64_t deadline, bool *expired);
/* PQprepare's Parse of one statement, as iso_pq_exec (name "" replaces the unnamed one). */
PGresult	*iso_pq_prepare(PGconn *conn, const char *name, const char *sql,
		    int64_t deadline, bool *expired);
void		 iso_pq_abandon(PGconn *conn);

/* The parts of a connection string that a turn's PG* environment needs. */
struct iso_dbparams {
	char	*host;		/* a host name, address, or unix socket directory */
	char	*port;
	char	*user;
	char	*dbname;
	char	*password;	/* may be NULL */
};
int	iso_dbparams_parse(const char *conninfo, struct iso_dbparams *p, char *err);
void	iso_dbparams_free(struct iso_dbparams *p);

/*
 * Whether the database of conninfo lets in a plain connection made the way
 * a fault proxy with upstream: database makes one (isolation/plain.c): a
 * StartupMessage for conninfo's user and database sent in clear, over TCP
 * to its host and port or to its unix socket, as the proxy forwards a
 * client's after answering its SSLRequest with N.  No password is sent.
 * 0 with *out filled, or -1 with err when the server could not be asked
 * (no answer by the deadline, a refused connection, not PostgreSQL).
 * refused: the server answered with an ErrorResponse (sqlstate, message,
 * routine its fields C, M and R); hba: that was pg_hba.conf saying no
 * (SQLSTATE 28000 from ClientAuthentication, whatever the server's
 * language); after such a refusal over TCP, tls_offered: the server
 * answers an SSLRequest with S, and tls_wanted: pg_hba.conf lets in a TLS
 * connection (libpq with sslmode=require and conninfo's password: it
 * connected, or failed past pg_hba.conf), so it is TLS that it wants.
 */
struct iso_plain {
	char	where[300];	/* "host:port" or the socket's path */
	char	user[64], dbname[64];
	bool	refused, hba, tls_offered, tls_wanted;
	char	sqlstate[6];
	char	routine[64];
	char	message[256];
};
int	iso_plain_probe(const char *conninfo, int64_t deadline,
	    struct iso_plain *out, char *err);

/*
 * A command to paste into a shell that opens psql on `schema` in the
 * database of conninfo: psql and one single-quoted connection string with
 * every setting libpq reads from conninfo (URI or keyword form) except
 * its secrets, and options that put schema on the search_path (after any
 * options conninfo had).  A secret is every setting libpq marks as one
 * (dispchar '*': password, sslpassword), never in it: withheld (of
 * ISO_WITHHELD_LEN bytes) gets their keywords, blank-separated in libpq's
 * order ("password sslpassword"; "" when none), which psql must then get
 * some other way (PGPASSWORD, ~/.pgpass, PGPASSFILE; it asks for a
 * client key's passphrase).  NULL with err (scrubbed of the passwords) if
 * conninfo does not parse.  For the embedded cluster:
 *   psql 'host=/dev/shm/soak-pg-XXXX port=5432 user=postgres
 *         dbname=postgres options=-csearch_path=SCHEMA'
 */
#define ISO_WITHHELD_LEN	128
char	*iso_psql_command(const char *conninfo, const char *schema,
	    char *withheld, char *err);

/*
 * One worker's isolation.  iso_open connects (libpq, within ISO_CONNECT_MS)
 * to conninfo, names the schema iso_schema_prefix(run_id) followed by
 * worker_id (always quoted in SQL all the same), reads cfg->db_schema's DDL
 * once, and makes workspace_root/ with private_dir (common/util.h).
 * Nothing is created in the database until iso_reset.
 */
#define ISO_CONNECT_MS	30000
/*
 * How long a database that went away for a moment (restarting, its socket
 * gone, starting up) is waited for: by a reset (iso_reset), and by a worker
 * whose first connection finds it away (worker.c worker_open), rather than
 * burn through seeds that each fail at once.
 */
#define ISO_RECONNECT_MS	5000
/*
 * Whether err, iso_open's, is a connection that failed in a way waiting
 * may mend: a refused connection, a socket not there, "the database system
 * is starting up", an unknown or translated message.  Not authentication,
 * pg_hba.conf, a role or database that does not exist, TLS, a bad
 * connection string, nor anything but the connection (the workspace, the
 * schema file).
 */
bool	iso_err_passing(const char *err);
/*
 * What a teardown gives the database, at most: a worker dropping its
 * schema, `soak run` dropping the schemas of its lost workers.  A database
 * that stopped answering (paused, cut off) must not keep a finished run
 * from ending; what it leaves behind is said, with how to remove it.
 */
#define ISO_TEARDOWN_MS	5000
struct iso;

/*
 * What every schema of a run starts with, the one home of the rule:
 * "soak_<run_id>_w" lower-cased with anything outside [a-z0-9_] turned
 * into '_'; a run id too long for PostgreSQL's 63-byte names keeps its
 * first 33 bytes and a hash of the whole (the same for every worker).  A
 * worker's schema is the prefix and its number, its template that and
 * "_tpl".  Heap string.
 */
char		*iso_schema_prefix(const char *run_id);
/*
 * Drops every schema (and template) of the run, for the workers that were
 * lost before they dropped their own; by deadline.  0, or -1 with err.
 */
int		 iso_drop_run(const char *conninfo, const char *run_id,
		    int64_t deadline, char *err);

struct iso	*iso_open(const struct cfg *cfg, const char *conninfo,
		    const char *run_id, int worker_id, const char *workspace_root,
		    char *err);
const char	*iso_schema(const struct iso *iso);	/* unquoted name */
const char	*iso_conninfo(const struct iso *iso);
/*
 * The control connection; its search_path is the worker's schema.  NULL
 * after iso_probe dropped it, until the next iso_reset connects again.
 */
PGconn		*iso_conn(struct iso *iso);

/*
 * Before each seed.  recreate: DROP SCHEMA IF EXISTS .. CASCADE, CREATE
 * SCHEMA, apply the DDL with search_path set to the schema.  truncate: the
 * first call creates as recreate does and, in the same transaction, saves
 * the state the DDL left (every table's rows, every sequence's value) in a
 * template schema "<schema>_tpl"; later calls, in one transaction, TRUNCATE
 * every table RESTART IDENTITY CASCADE, put the saved rows back and set
 * every sequence to its saved value, so each seed starts where a recreate
 * would (details at restore_sql in iso.c).  iso_drop drops the template too.
 * A DDL error names the file and line: "schema.sql:12: syntax error at or
 * near \"TABL\"" (from PG_DIAG_STATEMENT_POSITION).  If the connection was
 * lost (or dropped by iso_probe) it is re-established before giving up;
 * a server that does not take it (restarting, its socket gone) is tried
 * again with backoff for up to 5 s within the deadline -- once per reset
 * after such a wait failed, until a reset gets through again.
 * Every call, connecting included, gives up at deadline (a now_ms()
 * instant), leaving the connection mid-query for iso_probe to drop.
 */
int		iso_reset(struct iso *iso, int64_t deadline, char *err);
/*
 * After iso_reset's -1: the SQLSTATE of the schema file's error ("42601"),
 * "" when the DDL was not what failed (the connection, a lock, the time).
 */
const char	*iso_ddl_sqlstate(const struct iso *iso);
/*
 * Drops the schema (end of the worker, unless kept), within ISO_TEARDOWN_MS;
 * -1 with err naming what was left and the statement that removes it.
 */
int		iso_drop(struct iso *iso, char *err);

/*
 * A deadline passed: is it the database?  Drops the control connection if
 * a query is still in flight on it (its backend is remembered), then
 * connects afresh and asks the server one question within timeout_ms --
 * ending that dropped backend, so the locks it holds cannot stall the
 * next reset.  0: the database answered.  -1 with err ("did not answer
 * within N s: why"): it did not, and the control connection is dropped
 * too, so the next iso_reset connects afresh (and ends the old backend
 * then, if the server has come back).
 */
int		iso_probe(struct iso *iso, int timeout_ms, char *err);

/*
 * Did the database restart?  iso_epoch: pg_postmaster_start_time() (as
 * text) of the server the control connection is on -- read at connect, the
 * same for the connection's life, since no connection outlives its server
 * -- or "" without one.  iso_probe_epoch asks it again on a fresh
 * connection within timeout_ms: 0 with epoch, or -1 with err ("the
 * database at ... did not answer within N s: why").  A different answer
 * is a server restarted in between (worker/seedrun.c's outage check).
 */
#define ISO_EPOCH_LEN	48
const char	*iso_epoch(const struct iso *iso);
int		iso_probe_epoch(struct iso *iso, int timeout_ms, char *epoch,
		    size_t len, char *err);
/* host:port/dbname of a conninfo, for messages (from its redacted text). */
void		iso_conn_desc(const char *conninfo, char *buf, size_t len);

/*
 * The database watch: a thread with a connection of its own asks the
 * server pg_postmaster_start_time() every ISO_WATCH_EVERY_MS, each time
 * within ISO_WATCH_ANSWER_MS -- the 2 s the probe at a seed's deadline
 * allows too, so a server slow under load is not an outage.  No answer in
 * time (paused, cut off) or a connection that fails (stopped, restarting)
 * begins an outage, logged as a warning; the next answer ends it, logged
 * too; an answer naming another server start is a restart.  So an outage shorter than a turn --
 * over before the seed's end, the control connection intact -- is still
 * seen (worker/seedrun.c's outage check).  One connection per worker
 * (isolation/db.c counts it).
 *
 * iso_watch_outage: 1 with why filled when the latest outage overlapped
 * [since, now] (since a now_ms() instant: the seed's start), in a
 * sentence ("soak's watch of the database at H:P/D had no answer for
 * 3.1 s, from 0.4 s after the seed began: no answer within 2.0 s"); 0
 * when none did, or w is NULL.
 */
#define ISO_WATCH_EVERY_MS	500
#define ISO_WATCH_ANSWER_MS	2000
struct iso_watch;
struct iso_watch *iso_watch_start(const char *conninfo, int worker_id, char *err);
void		iso_watch_stop(struct iso_watch *w);	/* NULL is fine */
int		iso_watch_outage(struct iso_watch *w, int64_t since, char *why,
		    size_t len);

/*
 * Workspaces.  iso_seed_dir creates (after removing any leftover)
 * workspace_root/seed-<N>/ and returns its path (heap).  iso_turn_dir
 * creates <seed dir>/r<round>-t<turn>/ with home/, tmp/, and
 * home/.config, home/.cache, home/.local/share, home/.local/state, and
 * returns its path (heap).  Both 0700.
 */
char		*iso_seed_dir(struct iso *iso, uint64_t seed, char *err);
char		*iso_turn_dir(struct iso *iso, uint64_t seed, int round, int turn,
		    char *err);
void		 iso_close(struct iso *iso);

#endif
