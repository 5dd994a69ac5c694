#include "worker/env.h"

#include <ctype.h>
#include <stdarg.h>
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

void
env_base(struct env *e, const struct wrk *w, const struct env_port *ports,
    size_t nports, const char *dir)
{
	const struct iso_dbparams	*db = &w->db;
	const char			*schema = iso_schema(w->iso);
	char				 name[128], *opts, *u, *h, *o, *d;
	const char			*lang = getenv("LANG"), *tz = getenv("TZ");
	size_t				 i;

	env_addf(e, "PATH", "%s", w->path_env ? w->path_env : "/usr/local/bin:/usr/bin:/bin");
	if (lang)
		env_addf(e, "LANG", "%s", lang);
	if (tz)
		env_addf(e, "TZ", "%s", tz);
	env_addf(e, "SOAK_RUN", "%s", w->run_id);
	env_addf(e, "SOAK_WORKER", "%d", w->id);
	env_addf(e, "SOAK_SCHEMA", "%s", schema);
	env_addf(e, "SOAK_CONFIG_DIR", "%s", w->cfg->dir);

	opts = xasprintf("-c search_path=%s", schema);
	if (db->host)
		env_addf(e, "PGHOST", "%s", db->host);
	if (db->port)
		env_addf(e, "PGPORT", "%s", db->port);
	if (db->user)
		env_addf(e, "PGUSER", "%s", db->user);
	if (db->dbname)
		env_addf(e, "PGDATABASE", "%s", db->dbname);
	if (db->password)
		env_addf(e, "PGPASSWORD", "%s", db->password);
	env_addf(e, "PGOPTIONS", "%s", opts);
	u = pct_encode(db->user ? db->user : "postgres");
	h = pct_encode(db->host ? db->host : "localhost");
	o = pct_encode(opts);
	d = pct_encode(db->dbname ? db->dbname : "postgres");
	env_addf(e, "DATABASE_URL", "postgresql://%s@/%s?host=%s&port=%s&options=%s",
	    u, d, h, db->port ? db->port : "5432", o);
	free(u); free(h); free(o); free(d); free(opts);

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
