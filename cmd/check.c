/*
 * `soak check CONFIG [--db URL]`: validate the config; with --db, run the
 * invariants once against a live database — the production monitor of
 * seeds/000, from the same queries the soak runs.
 *
 * Validating is more than loading (docs/config.md "soak check"): a config
 * that loads may still not run — a turn command that is not there, one
 * string "bash x.sh" taken as one program name, an invariant that does not
 * parse.  Without --db, check asks what a run would meet, through the run's
 * own code: exec_check (common/exec.c) for every command, and on a
 * throwaway embedded PostgreSQL a worker's dry seed (wrk_open,
 * wrk_dry_seed: the schema file applied, setup run) and inv_prepare of
 * every invariant.  It never writes to the config's database.  With --db (a
 * production database) it writes nothing: the invariants are only prepared,
 * in a READ ONLY transaction, before they run.  Every problem is told, each
 * as FILE:LINE:COL: KEY: what.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "cmd/cmd.h"
#include "common/cfgerr.h"
#include "common/config.h"
#include "common/conninfo.h"
#include "common/exec.h"
#include "common/log.h"
#include "common/regress.h"
#include "common/soak.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"
#include "invariants/inv.h"
#include "isolation/iso.h"
#include "worker/env.h"
#include "worker/wrk.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak check CONFIG [--db URL] [--schema NAME] [--json]\n"
	    "\n"
	    "Validates CONFIG and tells every problem, each as file:line:column:\n"
	    "key: what.  Beyond the file itself: every command (turn, setup,\n"
	    "services) must be a program this machine can start, and on a\n"
	    "throwaway embedded PostgreSQL the schema file must apply, setup must\n"
	    "run and every invariant must prepare (parse and plan).\n"
	    "With --db, runs every invariant once, read-only, against that database\n"
	    "and prints the rows that break each one; the commands are not looked\n"
	    "at, and every invariant is prepared first, in a READ ONLY transaction.\n"
	    "\n"
	    "  --db URL        a libpq connection string or postgresql:// URL\n"
	    "  --schema NAME   set search_path to NAME first\n"
	    "  --json          print the broken invariants as JSON\n"
	    "\n"
	    "Exit status: 0 valid (and, with --db, every invariant holds); 1 an\n"
	    "invariant is broken; 2 the database could not be checked, or an\n"
	    "invariant may not read what it names (permission); 64 usage;\n"
	    "78 config error.\n" SOAK_MANUAL);
}

/*
 * One thing check says: a problem at a place in the file (the loader's,
 * the commands', the SQL's) or a note about what could not be checked.
 * They are told together at the end, problems in file order (a person
 * reads top down; the checks run in dependency order), notes after.
 */
struct said {
	int	 line, col;		/* 0: no place; INT_MAX: a note */
	size_t	 seq;			/* the order it was found in */
	char	*text;
};

/* What one check found. */
struct check {
	const struct cfg	*cfg;
	struct said		*said;
	size_t			 nsaid;
	int			 nerr, nwarn;
	int			 nplain;	/* of the --db errors: the SQL's own */
	bool			 bad_setup;	/* its command cannot run here */
	bool			 bad_service;
	bool			 setup_failed;	/* in the dry seed: invariants
						   may miss what it makes */
};

static void
problem(struct check *k, bool warning, const char *key, int line, int col,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void
note(struct check *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(struct check *k, int line, int col, char *text)
{
	k->said = xreallocarray(k->said, k->nsaid + 1, sizeof(*k->said));
	k->said[k->nsaid] = (struct said){ .line = line, .col = col,
	    .seq = k->nsaid, .text = text };
	k->nsaid++;
}

/* "FILE:LINE:COL: KEY: [warning: ]what", counted, told at the end. */
static void
problem(struct check *k, bool warning, const char *key, int line, int col,
    const char *fmt, ...)
{
	const struct cfg_mark	*m;
	va_list			 ap;
	char			*what;

	if (line == 0 && (m = cfg_mark_find(k->cfg, key)) != NULL) {
		line = m->line;
		col = m->col;
	}
	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) == -1)
		fatalx("check: out of memory");
	va_end(ap);
	if (line > 0)
		say(k, line, col, xasprintf("%s:%d:%d: %s: %s%s", k->cfg->path, line,
		    col, key, warning ? "warning: " : "", what));
	else
		say(k, 0, 0, xasprintf("%s: %s: %s%s", k->cfg->path, key,
		    warning ? "warning: " : "", what));
	free(what);
	if (warning)
		k->nwarn++;
	else
		k->nerr++;
}

/* What could not be checked: not the config's fault, not counted. */
static void
note(struct check *k, const char *fmt, ...)
{
	va_list	ap;
	char	what[2 * ERR_LEN];

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	say(k, INT_MAX, 0, xasprintf("soak check: %s", what));
}

/* The loader's messages, each at the place it names. */
static void
loader_said(struct check *k, const char *path, const struct cfg_errors *e)
{
	size_t	i;
	int	line, col;

	for (i = 0; i < e->n; i++) {
		cfg_msg_where(e->msg[i], path, &line, &col);
		say(k, line, col, xstrdup(e->msg[i]));
	}
	if (e->total > e->n)
		say(k, INT_MAX - 1, 0, xasprintf("... and %zu more error(s) of the "
		    "file not shown", e->total - e->n));
	k->nerr += (int)e->total;
}

static int
said_cmp(const void *a, const void *b)
{
	const struct said	*x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Everything said, in file order, on stderr; then forgets it. */
static void
tell(struct check *k)
{
	size_t	i;

	if (k->nsaid == 0)
		return;		/* qsort of NULL is undefined, even of nothing */
	qsort(k->said, k->nsaid, sizeof(*k->said), said_cmp);
	/* a problem may quote the database's words or a setup's stderr:
	 * escaped (log.h), one line each */
	for (i = 0; i < k->nsaid; i++) {
		(void)log_escape_put(stderr, k->said[i].text,
		    strlen(k->said[i].text), 0);
		fputc('\n', stderr);
		free(k->said[i].text);
	}
	free(k->said);
	k->said = NULL;
	k->nsaid = 0;
}

static void
chose(struct check *k, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "FILE:LINE:COL: KEY: note: what" on stdout: what check chose, not a problem. */
static void
chose(struct check *k, const char *key, const char *fmt, ...)
{
	const struct cfg_mark	*m = cfg_mark_find(k->cfg, key);
	va_list			 ap;

	if (m != NULL)
		printf("%s:%d:%d: %s: note: ", k->cfg->path, m->line, m->col, key);
	else
		printf("%s: %s: note: ", k->cfg->path, key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/*
 * Which proxy a turn's database defaults go through (cfg->db_proxy), and
 * that every other proxy in front of the database is reached only by its
 * own SOAK_PROXY_<NAME>: a proxy no turn dials tests nothing.
 */
static void
say_db_proxy(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	char			 others[ERR_LEN], key[64], env[128];
	size_t			 i, j, o = 0, ndb = 0, nother;

	others[0] = '\0';
	for (i = 0; i < cfg->nproxies; i++)
		if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
			ndb++;
	if (ndb == 0)
		return;
	nother = ndb - (cfg->db_proxy >= 0);
	for (i = 0, j = 0; i < cfg->nproxies && o < sizeof(others); i++) {
		if (cfg->proxies[i].upstream_kind != CFG_UP_DATABASE ||
		    (int)i == cfg->db_proxy)
			continue;
		env_name(env, sizeof(env), "SOAK_PROXY_", cfg->proxies[i].name);
		o += (size_t)snprintf(others + o, sizeof(others) - o, "%s%s (%s)",
		    j == 0 ? (nother == 1 ? "; proxy " : "; proxies ") :
		    j + 1 == nother ? " and " : ", ", cfg->proxies[i].name, env);
		j++;
	}
	if (o > 0 && o < sizeof(others))
		snprintf(others + o, sizeof(others) - o, " %s reached only at %s",
		    nother == 1 ? "is" : "are", nother == 1 ? "that variable" :
		    "their own variables");
	if (cfg->db_proxy < 0) {
		chose(k, "database.proxy", "a turn's PGHOST, PGPORT, DATABASE_URL and "
		    "JDBC_DATABASE_URL name the database itself (none)%s", others);
		return;
	}
	snprintf(key, sizeof(key), "proxies[%d]", cfg->db_proxy);
	chose(k, cfg->db_proxy_named ? "database.proxy" : key, "a turn's PGHOST, "
	    "PGPORT, DATABASE_URL and JDBC_DATABASE_URL name its own listener of "
	    "proxy %s%s (SOAK_DIRECT_* the database itself)%s%s",
	    cfg->proxies[cfg->db_proxy].name, cfg->db_proxy_named ? "" : ndb > 1 ?
	    ", the first in front of the database" : "", others, !cfg->db_proxy_named &&
	    ndb > 1 ? "; database.proxy chooses another, or none" : "");
}

/*
 * A database that wants TLS cannot be proxied: the proxy keeps PostgreSQL
 * traffic plain so it can read it.  Asked of the run's own database (the
 * one a run would use: SOAK_DATABASE_URL, else database.url; the embedded
 * one lets everything in) the way the proxy would connect, before every
 * turn of every seed fails on it.  A database that cannot be asked from
 * here is said, not counted: the workers may reach it where check cannot.
 */
static void
check_db_plain(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	const char		*url = getenv("SOAK_DATABASE_URL"), *from;
	struct iso_plain	 pl;
	char			 err[ERR_LEN], key[64];
	size_t			 i;

	from = url && *url ? "SOAK_DATABASE_URL" : "database.url";
	if (url == NULL || *url == '\0')
		url = cfg->db_url;
	if (url == NULL || *url == '\0')
		return;
	for (i = 0; i < cfg->nproxies; i++)
		if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
			break;
	if (i == cfg->nproxies)
		return;
	snprintf(key, sizeof(key), "proxies[%zu].upstream", i);
	if (iso_plain_probe(url, now_ms() + ISO_CONNECT_MS / 3, &pl, err) == -1) {
		conninfo_scrub(err, sizeof(err), url);
		note(k, "did not ask the database (%s) whether the proxy can "
		    "reach it: %s", from, err);
		return;
	}
	if (!pl.refused)
		return;
	if (!pl.hba) {
		note(k, "the database (%s) refused a plain connection as the "
		    "proxy makes: %s %s", from, pl.sqlstate, pl.message);
		return;
	}
	if (pl.tls_wanted)
		problem(k, false, key, 0, 0, "the database at %s (%s) requires TLS: "
		    "it refused a plain connection such as the proxy makes (SQLSTATE "
		    "%s from pg_hba.conf: %s) and lets a TLS one in; the proxy keeps "
		    "PostgreSQL traffic plain so it can read it (it answers "
		    "SSLRequest with N), so every turn through it would fail. Let "
		    "plain connections in for user %s and database %s from this "
		    "machine (a host line in pg_hba.conf, before the hostssl one), "
		    "or use a database that does (leave database.url empty for "
		    "soak's own)", pl.where, from, pl.sqlstate, pl.message, pl.user,
		    pl.dbname);
	else
		problem(k, false, key, 0, 0, "the database at %s (%s) refuses a "
		    "plain connection such as the proxy makes (SQLSTATE %s from "
		    "pg_hba.conf: %s), so every turn through the proxy would fail. "
		    "Let connections in for user %s and database %s from this "
		    "machine (pg_hba.conf)", pl.where, from, pl.sqlstate,
		    pl.message, pl.user, pl.dbname);
}

/* A duration as the config writes one: "2s", "1500ms". */
static const char *
dur(int64_t ms, char *buf, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(buf, len, "%llds", (long long)(ms / 1000));
	else
		snprintf(buf, len, "%lldms", (long long)ms);
	return buf;
}

/*
 * A latency the clock spends (no schedule, or latency_real) whose longest
 * draw reaches what passes a waiting turn: turn.timeout (the turn is
 * killed), a schedule's arrival (the decision is the clock's, forced), and
 * on a scheduled proxy its own blocked (the admitted exchange is passed).
 * Under a schedule a latency without latency_real is not slept: nothing
 * to warn of (docs/faults.md "Latency under a schedule").
 */
static void
check_latency(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	const struct cfg_proxy	*p, *s;
	char			 key[64], a[32], b[32];
	size_t			 i, j;
	bool			 sched = false;

	for (i = 0; i < cfg->nproxies; i++)
		sched |= cfg->proxies[i].schedule.enabled;
	for (i = 0; i < cfg->nproxies; i++) {
		p = &cfg->proxies[i];
		if (p->faults.latency_max_ms <= 0 || (sched && !p->faults.latency_real))
			continue;
		snprintf(key, sizeof(key), "proxies[%zu].faults.latency", i);
		dur(p->faults.latency_max_ms, a, sizeof(a));
		if (p->faults.latency_max_ms >= cfg->turn_timeout_ms)
			problem(k, true, key, 0, 0, "proxy %s's latency reaches %s, "
			    "turn.timeout is %s: a turn whose exchange draws it is "
			    "killed before the reply comes; raise turn.timeout or "
			    "lower the latency", p->name, a,
			    dur(cfg->turn_timeout_ms, b, sizeof(b)));
		for (j = 0; j < cfg->nproxies; j++) {
			s = &cfg->proxies[j];
			if (!s->schedule.enabled)
				continue;
			if (p->faults.latency_max_ms >= s->schedule.arrival_ms)
				problem(k, true, key, 0, 0, "proxy %s's latency is slept "
				    "(latency_real) and reaches %s, proxy %s's "
				    "schedule.arrival is %s: a step may be decided by "
				    "the clock while a turn waits at proxy %s (forced: "
				    "arrival), and a replay may part there; raise arrival "
				    "above %s, or drop latency_real if no timeout of the "
				    "client must fire", p->name, a, s->name,
				    dur(s->schedule.arrival_ms, b, sizeof(b)), p->name, a);
			if (j == i && p->faults.latency_max_ms >= s->schedule.blocked_ms)
				problem(k, true, key, 0, 0, "proxy %s is scheduled and its "
				    "latency is slept (latency_real) after admission: "
				    "%s reaches its schedule.blocked (%s), which passes "
				    "an admitted exchange that has not answered (forced: "
				    "blocked); put the latency on a proxy beside it, or "
				    "raise blocked above %s", p->name, a,
				    dur(s->schedule.blocked_ms, b, sizeof(b)), a);
		}
	}
}

/*
 * "./bash redeem.sh" as the user wrote it (the loader made a relative
 * program absolute) and the list it most likely meant.
 */
static void
one_string_hint(const struct cfg *cfg, const char *prog, char *as, size_t aslen,
    char *list, size_t listlen)
{
	size_t		 dl = strlen(cfg->dir), o;
	const char	*p, *w;

	if (strncmp(prog, cfg->dir, dl) == 0 && prog[dl] == '/')
		snprintf(as, aslen, "./%s", prog + dl + 1);
	else
		snprintf(as, aslen, "%s", prog);
	o = (size_t)snprintf(list, listlen, "[");
	for (p = as; *p && o < listlen; p = w) {
		for (; *p == ' '; p++)
			;
		for (w = p; *w && *w != ' '; w++)
			;
		if (w > p)
			o += (size_t)snprintf(list + o, listlen - o, "%s%.*s",
			    o > 1 ? ", " : "", (int)(w - p), p);
	}
	if (o < listlen)
		snprintf(list + o, listlen - o, "]");
}

/*
 * Every command: a program exec can start here (exec_check, as a
 * worker on this machine would run it: a relative path against the
 * config's folder, a bare name on PATH), and a warning for one string
 * with a space, which is one program name, never split.
 */
static void
check_commands(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	char			 why[ERR_LEN], as[ERR_LEN], list[ERR_LEN];
	size_t			 i;
	int			 e;

	for (i = 0; i < cfg->ncommands; i++) {
		const struct cfg_command	*c = &cfg->commands[i];

		if (c->one_string && strchr(c->argv[0], ' ') != NULL) {
			one_string_hint(cfg, c->argv[0], as, sizeof(as), list,
			    sizeof(list));
			problem(k, true, c->key, 0, 0, "\"%s\" is one program name, "
			    "spaces and all: a command written as one string is never "
			    "split; for a program and its arguments write a list: %s",
			    as, list);
		}
		if (exec_check(c->argv[0], &e, why) == -1) {
			problem(k, false, c->key, 0, 0, "%s", why);
			if (strcmp(c->key, "setup") == 0)
				k->bad_setup = true;
			else if (strncmp(c->key, "services[", 9) == 0)
				k->bad_service = true;
		}
	}
}

/* An invariant that does not prepare, at the place in the file it names. */
static void
bad_invariant(void *arg, size_t i, const char *sqlstate, const char *message,
    long position)
{
	struct check	*k = arg;
	struct cfgerr	 e = { 0 };
	char		 key[64];
	int		 line, col;

	snprintf(key, sizeof(key), "invariants[%zu].sql", i);
	cfg_sql_where(k->cfg, i, position, &line, &col);
	problem(k, false, key, line, col, "%s%s", message, k->setup_failed &&
	    strcmp(sqlstate, "42P01") == 0 ? " (setup failed: if it makes "
	    "that table, mend setup first)" : "");
	if (cfgerr_sql(&e, key, sqlstate, message) && cfgerr_plain(&e))
		k->nplain++;
}

/* The last line of a stderr tail, for one line of message. */
static const char *
last_line(const char *tail, char *buf, size_t len)
{
	const char	*end, *start;

	if (tail == NULL)
		return "";
	for (end = tail + strlen(tail); end > tail && end[-1] == '\n'; end--)
		;
	for (start = end; start > tail && start[-1] != '\n'; start--)
		;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
	return buf;
}

/* What the dry seed's failure says, at the key it comes from. */
static void
dry_seed_failed(struct check *k, const struct seed_result *res,
    const struct cfgerr *ce)
{
	json_t		*t = json_array_get(json_object_get(res->detail, "turns"), 0);
	const char	*status = json_string_value(json_object_get(t, "status"));
	char		 buf[ERR_LEN];

	switch (res->reason) {
	case REASON_SETUP:
		if (k->bad_setup)
			return;		/* told already: not there */
		if (status != NULL && strcmp(status, "exec") != 0) {
			problem(k, false, "setup", 0, 0, "%s %lld in a dry run of seed "
			    "%llu (the schema applied%s)%s%s",
			    strcmp(status, "error") == 0 ? "exited" : status,
			    (long long)json_integer_value(json_object_get(t, "code")),
			    (unsigned long long)k->cfg->seeds.first, k->bad_service ?
			    ", the services left out" : k->cfg->nservices ?
			    ", the services started" : "",
			    *last_line(json_string_value(json_object_get(t,
			    "stderr_tail")), buf, sizeof(buf)) ? "; its stderr ends: " :
			    "", buf);
			return;
		}
		problem(k, false, "setup", 0, 0, "%s", res->message);
		return;
	case REASON_SERVICE:
		/* a service through the seam, started in the dry seed */
		problem(k, false, ce->kind != CFGERR_NONE ? ce->what : "services",
		    0, 0, "%s", ce->kind != CFGERR_NONE ? ce->detail : res->message);
		return;
	case REASON_PROXY:
		/* opened for the services through the seam: the machine's,
		 * maybe (a key not set here), said apart from the file's */
		note(k, "the services through the seam were not started: %s",
		    res->message);
		return;
	case REASON_DB:
		/* A fresh database: what fails in the reset is the schema file. */
		problem(k, false, "database.schema", 0, 0, "%s", ce->kind ==
		    CFGERR_SQL ? ce->detail : res->message);
		return;
	default:
		problem(k, false, "config", 0, 0, "a dry run of seed %llu: %s",
		    (unsigned long long)k->cfg->seeds.first, res->message);
		return;
	}
}

/*
 * The SQL, on a throwaway embedded PostgreSQL, through a worker of its
 * own: the schema file applied, setup run (invariants may name what it
 * makes), then every invariant prepared.  A service whose program is not
 * there is left out of the worker (told already); setup then runs
 * without it.  When PostgreSQL cannot be had here, or fails on its own,
 * that is said, not counted: the config is not at fault.
 */
static void
check_sql(struct check *k)
{
	struct cfg		 dry = *k->cfg;
	struct pg_embedded	*pg = NULL;
	struct wrk		 w = { 0 };
	struct seed_result	 res = { 0 };
	struct cfgerr		 ce;
	char			 err[ERR_LEN];

	if (k->bad_service)
		dry.nservices = 0;
	/* What did not load is left out; what rests on it is not checked. */
	if (dry.broken & CFG_BROKEN_SERVICES)
		dry.nservices = 0;
	if (dry.broken & CFG_BROKEN_PROXIES)
		dry.nproxies = 0;
	if (dry.broken & CFG_BROKEN_SETUP) {
		dry.setup = NULL;
		k->setup_failed = true;
	}
	if (dry.name == NULL)
		dry.name = "check";
	/* A schema file named but not there: nothing to prepare against. */
	if ((dry.broken & CFG_BROKEN_DATABASE) && cfg_mark_find(&dry,
	    "database.schema") != NULL && (dry.db_schema == NULL ||
	    access(dry.db_schema, R_OK) == -1)) {
		note(k, "the SQL was not checked: database.schema did not load");
		return;
	}
	if (dry.ninvariants == 0 && (dry.broken & CFG_BROKEN_INVARIANTS))
		note(k, "no invariant loaded: only the schema and setup are checked");
	if ((pg = pg_embedded_start(iso_db_max_connections(&dry, 1), err)) == NULL) {
		note(k, "the SQL was not checked: %s", err);
		return;
	}
	w.cfg = &dry;
	w.run_id = xasprintf("check%d", (int)getpid());
	w.id = 1;
	w.conninfo = xstrdup(pg_embedded_conninfo(pg));
	w.workspace = xasprintf("%s/soak-check-XXXXXX", scratch_root());
	if (mkdtemp(w.workspace) == NULL) {
		note(k, "the SQL was not checked: %s: %s", w.workspace, strerror(errno));
		goto out;
	}
	w.keep_dir = xasprintf("%s/failures", w.workspace);
	if (wrk_open(&w, err) == -1) {
		if (w.open_failed == REASON_SERVICE)
			problem(k, false, w.open_cfgerr.kind ? w.open_cfgerr.what :
			    "services", 0, 0, "%s", err);
		else
			note(k, "the SQL was not checked: %s", err);
		goto close;
	}
	if (wrk_dry_seed(&w, k->cfg->seeds.first, &res, &ce) == -1) {
		dry_seed_failed(k, &res, &ce);
		/* Without the schema there is nothing to prepare against;
		 * without setup (or the seam's services, started before it),
		 * the schema is still worth it. */
		if (res.reason != REASON_SETUP && res.reason != REASON_SERVICE &&
		    res.reason != REASON_PROXY) {
			note(k, "the invariants were not prepared: the schema did "
			    "not apply");
			goto close;
		}
		k->setup_failed = true;
	}
	if (inv_prepare(iso_conn(w.iso), &dry, now_ms() + ISO_CONNECT_MS +
	    (int64_t)dry.ninvariants * dry.invariant_timeout_ms, bad_invariant, k,
	    err) == -1) {
		note(k, "the invariants were not prepared: %s", err);
	}
close:
	seed_result_clear(&res);
	wrk_close(&w, true);
out:
	if (w.workspace)
		rm_rf(w.workspace);
	pg_embedded_stop(pg);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
}

/*
 * A proxy in front of a real model API (docs/models.md): the cassette a
 * replaying one answers from, read as it reads it (how many keys); where
 * a recording one writes; whether the key it puts in is here.
 */
static void
check_model_api(struct check *k, size_t i)
{
	const struct cfg_proxy	*p = &k->cfg->proxies[i];
	const struct cfg_mark	*m;
	const char		*key;
	char			 path[64], err[ERR_LEN];
	size_t			 keys, replies;

	if (p->replay != NULL) {
		snprintf(path, sizeof(path), "proxies[%zu].replay", i);
		if (proxy_cassette_check(p->replay, &keys, &replies, err) == -1) {
			m = cfg_mark_find(k->cfg, path);
			problem(k, false, path, m ? m->line : 0, m ? m->col : 0,
			    "%s", err);
			return;
		}
		chose(k, path, "cassette %s: %zu request key(s), %zu repl%s; a "
		    "request it has no answer for makes the seed infra/cassette",
		    p->replay, keys, replies, replies == 1 ? "y" : "ies");
	}
	if (p->record != NULL) {
		snprintf(path, sizeof(path), "proxies[%zu].record", i);
		chose(k, path, "each worker records the exchanges with %s into a "
		    "part beside %s, merged into it after the run", p->upstream,
		    p->record);
	}
	if (p->api_key_env != NULL && p->replay == NULL) {
		snprintf(path, sizeof(path), "proxies[%zu].api_key_env", i);
		key = getenv(p->api_key_env);
		if (key == NULL || *key == '\0')
			problem(k, true, path, 0, 0, "%s is not set here: a worker "
			    "without it cannot start this proxy", p->api_key_env);
	}
}

/*
 * The model stand-ins' scripts (upstream: model:FILE): each read as the
 * proxy reads it, a mistake told at its own FILE:LINE:COL (placed among
 * the config's by the upstream's line), and what it holds.
 */
static void
check_models(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	const struct cfg_mark	*m;
	char			 key[64], err[ERR_LEN], env[160];
	size_t			 i, np, na;

	for (i = 0; i < cfg->nproxies; i++) {
		check_model_api(k, i);
		if (cfg->proxies[i].upstream_kind != CFG_UP_MODEL)
			continue;
		snprintf(key, sizeof(key), "proxies[%zu].upstream", i);
		m = cfg_mark_find(cfg, key);
		if (proxy_model_check(cfg->proxies[i].upstream, &np, &na,
		    err) == -1) {
			say(k, m ? m->line : 0, m ? m->col : 0, xstrdup(err));
			k->nerr++;
			continue;
		}
		env[0] = '\0';
		if ((int)i == cfg->model_proxy)
			snprintf(env, sizeof(env), "; a turn's OPENAI_BASE_URL and "
			    "ANTHROPIC_BASE_URL name its own listener of proxy %s",
			    cfg->proxies[i].name);
		chose(k, key, "model script %s: %zu pattern(s), %zu "
		    "alternative(s)%s", cfg->proxies[i].upstream, np, na, env);
	}
}

/* Without --db: everything a run needs, every problem told. */
/* The pinned plans (common/regress.h): each must be one the config runs. */
static void
check_regressions(struct check *k)
{
	const struct cfg_mark	*m = cfg_mark_find(k->cfg, "regressions");
	struct regress_set	 rs = { 0 };
	struct cfg_errors	 errs = { 0 };
	char			 err[ERR_LEN];
	size_t			 i;

	if (regress_load(k->cfg, &rs, &errs, err) == -1) {
		if (errs.n == 0)
			cfg_errors_add(&errs, err);
		for (i = 0; i < errs.n; i++) {
			say(k, m ? m->line : 0, m ? m->col : 0, xstrdup(errs.msg[i]));
			k->nerr++;
		}
		k->nerr += (int)(errs.total - errs.n);
	}
	cfg_errors_free(&errs);
	regress_set_free(&rs);
}

/* Whether p fronts a service through the seam while the database's proxy
 * is scheduled: its requests are let go at the service's quiet, not held
 * to their replies (fault-proxy/engine.c, proxy_set_open_cfg). */
static bool
front_ordered(const struct cfg *cfg, const struct cfg_proxy *p)
{
	size_t	k;

	if (p->upstream_kind != CFG_UP_SERVICE || cfg->db_proxy < 0 ||
	    !cfg->proxies[cfg->db_proxy].schedule.enabled)
		return false;
	for (k = 0; k < cfg->nservices; k++)
		if (strcmp(cfg->services[k].name, p->upstream) == 0)
			return cfg_service_seam(cfg, &cfg->services[k]);
	return false;
}

/*
 * What the services get (docs/turns.md "What a service gets"), as notes,
 * and a schedule that would serialize a service (docs/faults.md): one in
 * front of anything but the database or a model admits one request at a
 * time and holds it until its reply, so the service behind it never runs
 * two at once.
 */
static void
check_seam(struct check *k)
{
	const struct cfg	*cfg = k->cfg;
	const struct cfg_proxy	*p;
	char			 key[64], via[512];
	size_t			 i;

	for (i = 0; i < cfg->nservices; i++) {
		snprintf(key, sizeof(key), "services[%zu]", i);
		if (!cfg_service_seam(cfg, &cfg->services[i])) {
			if (cfg->nproxies > 0)
				chose(k, key, "service %s stays out of the seam "
				    "(seam: false): its database variables name the "
				    "database itself, it gets no SOAK_PROXY_*, and it "
				    "runs once per worker", cfg->services[i].name);
			continue;
		}
		via[0] = '\0';
		if (cfg->db_proxy >= 0)
			snprintf(via, sizeof(via), "its PGHOST, PGPORT, DATABASE_URL "
			    "and JDBC_DATABASE_URL name its own listener of proxy %s%s; ",
			    cfg->proxies[cfg->db_proxy].name,
			    cfg->proxies[cfg->db_proxy].schedule.enabled ? " (whose "
			    "schedule holds its statements as the turns' whose requests "
			    "they serve, when the turns call it through a proxy of the "
			    "config; called on its own port, they pass unheld, counted "
			    "in the run's warnings)" : "");
		chose(k, key, "service %s goes through the seam: %sit gets its own "
		    "SOAK_PROXY_* listener of every proxy, and starts with each seed "
		    "(seam: false keeps it direct, once per worker)",
		    cfg->services[i].name, via);
	}
	for (i = 0; i < cfg->nproxies; i++) {
		p = &cfg->proxies[i];
		if (front_ordered(cfg, p)) {
			snprintf(key, sizeof(key), "proxies[%zu]", i);
			chose(k, key, "proxy %s fronts service %s, which goes through "
			    "the seam to scheduled proxy %s: it lets the service's "
			    "requests go one at a time, each once the service is "
			    "quiet, not held to its reply, so that the service's "
			    "statements are held as the turns' whose requests they "
			    "serve (docs/faults.md, \"Services under a schedule\")%s",
			    p->name, p->upstream, cfg->proxies[cfg->db_proxy].name,
			    p->schedule.enabled ? "; its own schedule orders them" : "");
			continue;
		}
		if (!p->schedule.enabled || p->upstream_kind == CFG_UP_DATABASE ||
		    p->upstream_kind == CFG_UP_MODEL || p->tls ||
		    p->protocol == CFG_PROTO_POSTGRES || front_ordered(cfg, p))
			continue;
		snprintf(key, sizeof(key), "proxies[%zu].schedule", i);
		if (p->upstream_kind == CFG_UP_SERVICE)
			snprintf(via, sizeof(via), "service %s", p->upstream);
		else
			snprintf(via, sizeof(via), "its upstream %s", p->upstream);
		problem(k, true, key, 0, 0, "a schedule on proxy %s serializes %s: it "
		    "admits one request at a time and holds it until its reply, so "
		    "%s never runs two requests at once and a race inside it cannot "
		    "happen; schedule the proxy in front of the database instead, "
		    "with the service through the seam (docs/faults.md, \"Services "
		    "under a schedule\")", p->name, via,
		    p->upstream_kind == CFG_UP_SERVICE ? "the service" : "it");
	}
}

static int
check_config(struct check *k)
{
	const struct cfg	*cfg = k->cfg;

	check_regressions(k);
	check_commands(k);
	check_sql(k);
	check_db_plain(k);
	check_latency(k);
	tell(k);
	say_db_proxy(k);
	check_models(k);
	check_seam(k);
	tell(k);
	if (k->nerr > 0) {
		fprintf(stderr, "soak check: %s: %d error(s)%s\n", cfg->path, k->nerr,
		    k->nwarn ? ", and warnings" : "");
		return SOAK_EXIT_CONFIG;
	}
	printf("%s: ok (%s: %d turns x %d rounds, %zu invariant(s), seeds %llu..%llu)%s\n",
	    cfg->path, cfg->name, cfg->turns, cfg->rounds, cfg->ninvariants,
	    (unsigned long long)cfg->seeds.first, (unsigned long long)cfg->seeds.last,
	    k->nwarn ? ", with warnings" : "");
	return 0;
}

static void
print_outcomes(const struct inv_result *ir, int json)
{
	size_t	i;

	if (json) {
		json_t	*j = inv_outcomes_json(ir);

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		return;
	}
	for (i = 0; i < ir->n; i++) {
		const struct inv_outcome	*o = &ir->out[i];

		printf("%-6s %s", o->nrows ? "BROKEN" : "holds", o->inv->name);
		if (o->nrows)
			printf(" (%lld row%s)", (long long)o->nrows, o->nrows == 1 ? "" : "s");
		putchar('\n');
		/* production rows: whatever a user stored, escaped (log.h), so
		 * no row can retitle or clear the terminal that reads them */
		for (int r = 0; r < o->nkept; r++) {
			printf("        ");
			for (int c = 0; c < o->ncols; c++) {
				const char	*v = o->cells[r * o->ncols + c];

				fputs(c ? ", " : "", stdout);
				(void)log_escape_put(stdout, o->cols[c],
				    strlen(o->cols[c]), 0);
				putchar('=');
				(void)log_escape_put(stdout, v ? v : "NULL",
				    strlen(v ? v : "NULL"), 0);
			}
			putchar('\n');
		}
	}
}

/*
 * --schema NAME names no schema of the database: said, with the schemas
 * it has that the role may use (the nearest first would need a distance;
 * the list is short on a real database), and true.  An error asking is
 * said too (and true): the monitor cannot vouch for the schema.
 */
static bool
schema_missing(PGconn *conn, const char *schema, int64_t deadline)
{
	static const char q[] =
	    "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = $1), "
	    "(SELECT string_agg(nspname, ', ' ORDER BY nspname) FROM pg_namespace "
	    "WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' AND "
	    "has_schema_privilege(oid, 'USAGE'))";
	const char	*params[1] = { schema };
	PGresult	*res;
	bool		 expired, missing = true;
	char		 err[ERR_LEN], esc[LOG_ESC_LEN];

	res = iso_pq_query(conn, q, 1, params, deadline, &expired);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		fprintf(stderr, "soak check: --schema %s: cannot ask the database "
		    "whether it exists: %s\n", schema, expired ? "no answer" :
		    log_escape(esc, sizeof(esc), iso_pq_msg(conn, res, err,
		    sizeof(err))));
	else if (strcmp(PQgetvalue(res, 0, 0), "0") == 0)
		/* the schemas' names are the database's: escaped */
		fprintf(stderr, "soak check: --schema %s: the database has no such "
		    "schema (its schemas: %s)\n", schema, PQgetisnull(res, 0, 1) ?
		    "none this role may use" : log_escape(esc, sizeof(esc),
		    PQgetvalue(res, 0, 1)));
	else
		missing = false;
	PQclear(res);
	return missing;
}

/*
 * --db: the production monitor.  Every invariant prepared first (each that
 * does not is told, and none runs), then run once, read-only, within its
 * own timeout; the rows that break each one printed.  The exit status.
 */
static int
monitor(struct check *k, struct cfg *cfg, const char *db, const char *schema,
    int json)
{
	struct inv_result	 ir = { 0 };
	PGconn			*conn = NULL;
	char			 err[ERR_LEN], esc[LOG_ESC_LEN];
	int64_t			 deadline;
	bool			 expired;
	int			 n, rc = SOAK_EXIT_INCOMPLETE;

	/* A monitor that hangs is no monitor: a connection within
	 * ISO_CONNECT_MS, every invariant within its own timeout. */
	if ((conn = iso_pq_connect(db, now_ms() + ISO_CONNECT_MS, err)) == NULL) {
		/* libpq quotes a token it cannot parse: it may be the password. */
		conninfo_scrub(err, sizeof(err), db);
		fprintf(stderr, "soak check: cannot connect: %s\n",
		    log_escape(esc, sizeof(esc), err));
		goto out;
	}
	deadline = now_ms() + ISO_CONNECT_MS +
	    2 * (int64_t)cfg->ninvariants * cfg->invariant_timeout_ms;
	/* search_path takes a name no schema has, silently: every invariant
	 * would then fail on its tables, or worse, find others of the path. */
	if (schema && schema_missing(conn, schema, deadline))
		goto out;
	if (schema) {
		char		*id = PQescapeIdentifier(conn, schema, strlen(schema));
		char		*q = xasprintf("SET search_path = %s", id);
		PGresult	*res = iso_pq_exec(conn, q, deadline, &expired);

		PQfreemem(id);
		free(q);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			fprintf(stderr, "soak check: %s\n", expired ? "no answer from "
			    "the database" : log_escape(esc, sizeof(esc),
			    iso_pq_msg(conn, res, err, sizeof(err))));
			PQclear(res);
			goto out;
		}
		PQclear(res);
	}
	/* Every invariant that does not parse here is told, none run. */
	n = inv_prepare(conn, cfg, deadline, bad_invariant, k, err);
	tell(k);
	if (n == -1) {
		fprintf(stderr, "soak check: %s\n", err);
		goto out;
	}
	if (n > 0) {
		fprintf(stderr, "soak check: %s: %d invariant(s) do not prepare on "
		    "this database; none was run\n", cfg->path, n);
		/* A permission the monitor lacks is the database's, not the SQL's. */
		rc = k->nplain == n ? SOAK_EXIT_CONFIG : SOAK_EXIT_INCOMPLETE;
		goto out;
	}
	if (inv_check(conn, cfg, deadline, &ir, err) == -1) {
		/* PostgreSQL's words may quote a row's value */
		fprintf(stderr, "soak check: %s\n", log_escape(esc, sizeof(esc), err));
		goto out;
	}
	print_outcomes(&ir, json);
	rc = ir.nviolated > 0 ? 1 : 0;
out:
	inv_result_free(&ir);
	iso_pq_abandon(conn);
	return rc;
}

int
cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db",		required_argument, NULL, 'd' },
		{ "schema",	required_argument, NULL, 's' },
		{ "json",	no_argument,	   NULL, 'j' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg		 cfg = { 0 };
	struct check		 k = { .cfg = &cfg };
	const char		*db = NULL, *schema = NULL;
	char			 err[ERR_LEN];
	struct cfg_errors	 cerrs = { 0 };
	int			 ch, json = 0, rc;

	while ((ch = getopt_long(argc, argv, "d:s:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': db = optarg; break;
		case 's': schema = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	/*
	 * A file that is YAML but did not load is kept as far as it did:
	 * without --db, its commands and SQL are checked too, and every
	 * problem is told in one pass (a mistake of the file must not hide
	 * the others).  --db runs nothing on a config that did not load.
	 */
	if (cfg_load_file_keep(argv[optind], &cfg, err, &cerrs, db == NULL) == -1) {
		loader_said(&k, argv[optind], &cerrs);
		cfg_errors_free(&cerrs);
		if (!(cfg.broken & CFG_BROKEN_SOME)) {
			tell(&k);
			fprintf(stderr, "soak check: %s: %d error(s)%s\n", argv[optind],
			    k.nerr, db != NULL ? "; no invariant was run" : "");
			cfg_free(&cfg);
			return SOAK_EXIT_CONFIG;
		}
	}
	if (db == NULL)
		rc = check_config(&k);
	else {
		rc = monitor(&k, &cfg, db, schema, json);
		tell(&k);
	}
	cfg_free(&cfg);
	return rc;
}
