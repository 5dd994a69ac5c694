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
 *   slots x (turns x (1 + proxies to the database) + services + 6) + 20
 * (the reasons for each term are in isolation/db.c).
 */
int	iso_db_max_connections(const struct cfg *cfg, int slots);

/*
 * The first line of the server's message for res, else of libpq's for
 * conn, in buf (without its newline): "unknown error" when neither has one.
 */
const char	*iso_pq_msg(PGconn *conn, const PGresult *res, char *buf,
		    size_t len);

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
 * One worker's isolation.  iso_open connects (libpq) to conninfo, names the
 * schema "soak_<run_id>_w<worker_id>" lower-cased with anything outside
 * [a-z0-9_] turned into '_' (always quoted in SQL all the same), reads
 * cfg->db_schema's DDL once, and makes workspace_root/ (mkdir -p).
 * Nothing is created in the database until iso_reset.
 */
struct iso;

struct iso	*iso_open(const struct cfg *cfg, const char *conninfo,
		    const char *run_id, int worker_id, const char *workspace_root,
		    char *err);
const char	*iso_schema(const struct iso *iso);	/* unquoted name */
const char	*iso_conninfo(const struct iso *iso);
/* The control connection; its search_path is the worker's schema. */
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
 * lost it is re-established once before giving up.
 */
int		iso_reset(struct iso *iso, char *err);
/* Drops the schema (end of the worker, unless kept). */
int		iso_drop(struct iso *iso, char *err);

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
