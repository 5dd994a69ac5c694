#include "worker/env.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "isolation/iso.h"
#include "worker/wrk.h"

void
env_init(struct env *e)
{
	e->n = 0;
	e->cap = 48;
	e->v = xcalloc(e->cap, sizeof(char *));
}

void
env_addf(struct env *e, const char *name, const char *fmt, ...)
{
	va_list	 ap;
	char	*val, *kv;

	va_start(ap, fmt);
	if (vasprintf(&val, fmt, ap) == -1)
		abort();
	va_end(ap);
	kv = xasprintf("%s=%s", name, val);
	free(val);
	if (e->n + 2 > e->cap) {
		e->cap *= 2;
		e->v = xreallocarray(e->v, e->cap, sizeof(char *));
	}
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
}

void
env_free(struct env *e)
{
	strv_free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

void
env_name(char *buf, size_t size, const char *prefix, const char *name)
{
	size_t	i = 0, j;

	for (j = 0; prefix[j] && i + 1 < size; j++)
		buf[i++] = prefix[j];
	for (j = 0; name[j] && i + 1 < size; j++)
		buf[i++] = isalnum((unsigned char)name[j]) ?
		    toupper((unsigned char)name[j]) : '_';
	buf[i] = '\0';
}

/*
 * postgresql:// and jdbc:postgresql:// URLs of the database at host:port
 * that land in the worker's schema.  A unix socket directory cannot stand
 * in a URL's authority: libpq's URL takes it as the host parameter, and
 * pgjdbc, which has no unix sockets of its own, through junixsocket's
 * socket factory (the one pgjdbc documents).  No password in either:
 * libpq and node-pg read PGPASSWORD, a JDBC program passes it itself.
 */
static void
db_urls(const struct wrk *w, const char *host, const char *port, char **url,
    char **jdbc)
{
	const struct iso_dbparams	*db = &w->db;
	char				*opts, *u, *h, *o, *d, *sock, *s;
	bool				 unix_dir = host[0] == '/';
	bool				 v6 = strchr(host, ':') != NULL;

	opts = xasprintf("-c search_path=%s", iso_schema(w->iso));
	u = pct_encode(db->user ? db->user : "postgres");
	h = pct_encode(host);
	o = pct_encode(opts);
	d = pct_encode(db->dbname ? db->dbname : "postgres");
	if (unix_dir || strchr(host, ',') != NULL) {
		*url = xasprintf("postgresql://%s@/%s?host=%s&port=%s&options=%s",
		    u, d, h, port, o);
	} else {
		*url = xasprintf("postgresql://%s@%s%s%s:%s/%s?options=%s", u,
		    v6 ? "[" : "", host, v6 ? "]" : "", port, d, o);
	}
	if (unix_dir) {
		sock = xasprintf("%s/.s.PGSQL.%s", host, port);
		s = pct_encode(sock);
		*jdbc = xasprintf("jdbc:postgresql://localhost/%s?user=%s&options=%s"
		    "&socketFactory=org.newsclub.net.unix.AFUNIXSocketFactory$FactoryArg"
		    "&socketFactoryArg=%s", d, u, o, s);
		free(sock);
		free(s);
	} else {
		*jdbc = xasprintf("jdbc:postgresql://%s%s%s:%s/%s?user=%s&options=%s",
		    v6 ? "[" : "", host, v6 ? "]" : "", port, d, u, o);
	}
	free(u); free(h); free(o); free(d); free(opts);
}

/*
 * The connection a process gets by default, at host:port: libpq's PG*
 * (psql, psycopg2 and 3, node-pg read them too), DATABASE_URL and
 * JDBC_DATABASE_URL; and the database itself under SOAK_DIRECT_*, which
 * is the same thing unless host:port is a proxy's listener.
 */
static void
env_db(struct env *e, const struct wrk *w, const char *host, const char *port)
{
	const struct iso_dbparams	*db = &w->db;
	const char			*dhost = db->host ? db->host : "localhost";
	const char			*dport = db->port ? db->port : "5432";
	char				*url, *jdbc;

	env_addf(e, "PGHOST", "%s", host);
	env_addf(e, "PGPORT", "%s", port);
	if (db->user)
		env_addf(e, "PGUSER", "%s", db->user);
	if (db->dbname)
		env_addf(e, "PGDATABASE", "%s", db->dbname);
	if (db->password)
		env_addf(e, "PGPASSWORD", "%s", db->password);
	env_addf(e, "PGOPTIONS", "-c search_path=%s", iso_schema(w->iso));
	db_urls(w, host, port, &url, &jdbc);
	env_addf(e, "DATABASE_URL", "%s", url);
	env_addf(e, "JDBC_DATABASE_URL", "%s", jdbc);
	free(url);
	free(jdbc);

	env_addf(e, "SOAK_DIRECT_PGHOST", "%s", dhost);
	env_addf(e, "SOAK_DIRECT_PGPORT", "%s", dport);
	db_urls(w, dhost, dport, &url, &jdbc);
	env_addf(e, "SOAK_DIRECT_DATABASE_URL", "%s", url);
	env_addf(e, "SOAK_DIRECT_JDBC_DATABASE_URL", "%s", jdbc);
	free(url);
	free(jdbc);
}

/* Everything but the database's connection. */
static void
env_common(struct env *e, const struct wrk *w, const struct env_port *ports,
    size_t nports, const char *dir)
{
	char		 name[128];
	const char	*lang = getenv("LANG"), *tz = getenv("TZ");
	size_t		 i;

	env_addf(e, "PATH", "%s", w->path_env ? w->path_env : "/usr/local/bin:/usr/bin:/bin");
	if (lang)
		env_addf(e, "LANG", "%s", lang);
	if (tz)
		env_addf(e, "TZ", "%s", tz);
	env_addf(e, "SOAK_RUN", "%s", w->run_id);
	env_addf(e, "SOAK_WORKER", "%d", w->id);
	env_addf(e, "SOAK_SCHEMA", "%s", iso_schema(w->iso));
	env_addf(e, "SOAK_CONFIG_DIR", "%s", w->cfg->dir);

	for (i = 0; i < nports; i++) {
		env_name(name, sizeof(name), "SOAK_SERVICE_", ports[i].name);
		env_addf(e, name, "127.0.0.1:%d", ports[i].port);
	}

	env_addf(e, "SOAK_WORKSPACE", "%s", dir);
	env_addf(e, "HOME", "%s/home", dir);
	env_addf(e, "TMPDIR", "%s/tmp", dir);
	env_addf(e, "XDG_CONFIG_HOME", "%s/home/.config", dir);
	env_addf(e, "XDG_CACHE_HOME", "%s/home/.cache", dir);
	env_addf(e, "XDG_DATA_HOME", "%s/home/.local/share", dir);
	env_addf(e, "XDG_STATE_HOME", "%s/home/.local/state", dir);
}

void
env_base(struct env *e, const struct wrk *w, const struct env_port *ports,
    size_t nports, const char *dir)
{
	env_common(e, w, ports, nports, dir);
	env_db(e, w, w->db.host ? w->db.host : "localhost",
	    w->db.port ? w->db.port : "5432");
}

void
env_turn(struct env *e, const struct wrk *w, const struct env_port *ports,
    size_t nports, const char *dir, const char *via)
{
	const char	*colon;
	char		*host;

	if (via == NULL || (colon = strrchr(via, ':')) == NULL) {
		env_base(e, w, ports, nports, dir);
		return;
	}
	env_common(e, w, ports, nports, dir);
	host = xasprintf("%.*s", (int)(colon - via), via);
	env_db(e, w, host, colon + 1);
	free(host);
}

void
env_model(struct env *e, const char *addr)
{
	env_addf(e, "OPENAI_BASE_URL", "http://%s/v1", addr);
	env_addf(e, "ANTHROPIC_BASE_URL", "http://%s", addr);
	env_addf(e, "OPENAI_API_KEY", "%s", ENV_MODEL_KEY);
	env_addf(e, "ANTHROPIC_API_KEY", "%s", ENV_MODEL_KEY);
}

void
env_make_dirs(const char *dir)
{
	static const char *const sub[] = { "home/.config", "home/.cache",
	    "home/.local/share", "home/.local/state", "tmp" };
	char	path[4096];
	size_t	i;

	for (i = 0; i < nitems(sub); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, sub[i]);
		mkdir_p(path, 0700, NULL);
	}
}
