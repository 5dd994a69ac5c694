/*
 * The clean environment a turn, setup command or service is execve'd with
 * (docs/design.md, "What a turn sees").  Nothing of the worker's own
 * environment leaks in but PATH (so bare command names resolve) and
 * LANG/TZ.
 */
#ifndef SOAK_ENV_H
#define SOAK_ENV_H

#include <stddef.h>

struct wrk;

struct env {
	char	**v;		/* NULL-terminated "NAME=value" */
	size_t	  n, cap;
};

void	env_init(struct env *e);
void	env_addf(struct env *e, const char *name, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
void	env_free(struct env *e);
/* A service's name and the port it listens on: SOAK_SERVICE_<NAME>. */
struct env_port {
	const char	*name;
	int		 port;
};

/*
 * The worker-wide part: SOAK_RUN, SOAK_WORKER, SOAK_SCHEMA, SOAK_CONFIG_DIR,
 * SOAK_SERVICE_<NAME> for each of ports[0..nports), the private
 * directories under dir (SOAK_WORKSPACE, HOME, TMPDIR, XDG_*_HOME), and
 * the database: PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
 * PGOPTIONS, DATABASE_URL and JDBC_DATABASE_URL, each landing in the
 * worker's schema, and the database itself again under SOAK_DIRECT_PGHOST,
 * SOAK_DIRECT_PGPORT, SOAK_DIRECT_DATABASE_URL and
 * SOAK_DIRECT_JDBC_DATABASE_URL.  A turn's directories come from
 * iso_turn_dir; others call env_make_dirs first.
 *
 * env_base: the database itself, for setup and services (setup runs
 * before any proxy exists; a service is no turn's).
 * env_turn: a turn's, whose defaults (PGHOST, PGPORT, DATABASE_URL,
 * JDBC_DATABASE_URL) point at via, "127.0.0.1:PORT", its own listener of
 * the proxy in front of the database (cfg->db_proxy), so psql, libpq,
 * psycopg, node-pg and JDBC go through the seam unless the turn asks for
 * SOAK_DIRECT_*; via NULL: as env_base.  SOAK_DATABASE_URL is never set.
 */
void	env_base(struct env *e, const struct wrk *w, const struct env_port *ports,
	    size_t nports, const char *dir);
void	env_turn(struct env *e, const struct wrk *w, const struct env_port *ports,
	    size_t nports, const char *dir, const char *via);
void	env_make_dirs(const char *dir);
/*
 * A turn's model SDKs pointed at addr ("127.0.0.1:PORT"), its own listener
 * of the model proxy (cfg->model_proxy, docs/models.md), as the OpenAI and
 * Anthropic client libraries read their environment: OPENAI_BASE_URL
 * (http://ADDR/v1: the OpenAI SDKs append /chat/completions to it),
 * ANTHROPIC_BASE_URL (http://ADDR: /v1/messages is appended), and both
 * API keys as ENV_MODEL_KEY: the SDKs refuse to start without one, and a
 * real key never reaches a turn (a recording proxy puts it in itself).
 */
#define ENV_MODEL_KEY	"soak-dummy-key"
void	env_model(struct env *e, const char *addr);
/* "SOAK_PROXY_" + NAME upper-cased, non-alphanumerics as '_'. */
void	env_name(char *buf, size_t size, const char *prefix, const char *name);

#endif
