/*
 * isolation/: the embedded PostgreSQL's life and death, schemas, resets,
 * workspaces.  Everything runs against a real PostgreSQL started here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/soak.h"
#include "common/util.h"
#include "isolation/iso.h"

static struct pg_embedded	*pg;
static char			 tmpdir[] = "/tmp/soak-test-iso-XXXXXX";
static int			 ddl_seq;

/* A deadline no test here should meet: each call's bound, not its limit. */
static int64_t
later(void)
{
	return now_ms() + 60000;
}

static int
group_setup(void **state)
{
	char	err[ERR_LEN] = "";
	int64_t	t0 = now_ms();

	(void)state;
	if ((pg = pg_embedded_start(30, err)) == NULL) {
		fprintf(stderr, "pg_embedded_start: %s\n", err);
		return -1;
	}
	fprintf(stderr, "# embedded PostgreSQL start (initdb + start + ready): "
	    "%" PRId64 " ms\n", now_ms() - t0);
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	pg_embedded_stop(pg);
	rm_rf(tmpdir);
	return 0;
}

static PGconn *
connect_ok(const char *conninfo)
{
	PGconn	*c = PQconnectdb(conninfo);

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", conninfo, PQerrorMessage(c));
	return c;
}

/* One value of a one-row query, as a heap string (NULL for SQL NULL). */
static char *
query1(PGconn *c, const char *sql)
{
	PGresult	*r = PQexec(c, sql);
	char		*v = NULL;

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	if (!PQgetisnull(r, 0, 0))
		v = xstrdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static long
query_long(PGconn *c, const char *sql)
{
	char	*v = query1(c, sql);
	long	 n = v ? strtol(v, NULL, 10) : -1;

	free(v);
	return n;
}

static void
exec_ok(PGconn *c, const char *sql)
{
	PGresult	*r = PQexec(c, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
}

/* The postmaster's pid and data directory, learned over SQL. */
static pid_t
pg_facts(const char *conninfo, char *datadir, size_t len)
{
	PGconn	*c = connect_ok(conninfo);
	char	*dd = query1(c, "SHOW data_directory"), *path, *pidfile;
	pid_t	 pid;

	snprintf(datadir, len, "%s", dd);
	path = xasprintf("%s/postmaster.pid", dd);
	pidfile = read_file(path, 4096, NULL, NULL);
	assert_non_null(pidfile);
	pid = (pid_t)strtol(pidfile, NULL, 10);
	assert_true(pid > 1);
	free(pidfile);
	free(path);
	free(dd);
	PQfinish(c);
	return pid;
}

static bool
pid_alive(pid_t pid)
{
	char		 path[64], *stat;
	bool		 alive;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((stat = read_file(path, 4096, NULL, NULL)) == NULL)
		return false;
	/* A zombie is dead for our purpose; its parent just has not reaped. */
	alive = strstr(stat, ") Z ") == NULL;
	free(stat);
	return alive;
}

static bool
path_exists(const char *p)
{
	struct stat	st;

	return lstat(p, &st) == 0;
}

static char *
write_ddl(const char *text)
{
	char	*dir = xasprintf("%s/ddl%d", tmpdir, ddl_seq++), *path, err[ERR_LEN];

	assert_int_equal(mkdir_p(dir, 0700, err), 0);
	path = xasprintf("%s/schema.sql", dir);
	assert_int_equal(write_file(path, text, strlen(text), err), 0);
	free(dir);
	return path;
}

static struct iso *
open_iso(struct cfg *cfg, const char *run_id, int worker)
{
	char		 err[ERR_LEN] = "", *ws;
	struct iso	*iso;

	ws = xasprintf("%s/ws-%s-%d", tmpdir, run_id, worker);
	iso = iso_open(cfg, pg_embedded_conninfo(pg), run_id, worker, ws, err);
	if (iso == NULL)
		fail_msg("iso_open: %s", err);
	free(ws);
	return iso;
}

static void
test_embedded_connects(void **state)
{
	PGconn	*c;
	char	*v;

	(void)state;
	assert_non_null(pg);
	assert_true(strncmp(pg_embedded_conninfo(pg), "host=", 5) == 0);
	c = connect_ok(pg_embedded_conninfo(pg));
	assert_int_equal(query_long(c, "SELECT 6 * 7"), 42);
	v = query1(c, "SHOW listen_addresses");
	assert_string_equal(v, "");
	free(v);
	v = query1(c, "SHOW fsync");
	assert_string_equal(v, "off");
	free(v);
	assert_int_equal(query_long(c, "SHOW max_connections"), 30);
	PQfinish(c);
}

/* A process's state letter from /proc/PID/stat ('T' stopped), or 0, and
 * its parent. */
static char
proc_state(pid_t pid, long *ppid)
{
	char	 path[64], line[512], st = 0;
	char	*p;
	FILE	*f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(line, sizeof(line), f) != NULL && (p = strrchr(line, ')')) != NULL &&
	    sscanf(p + 1, " %c %ld", &st, ppid) != 2)
		st = 0;
	fclose(f);
	return st;
}

/* The root folder of a running embedded server (its conninfo's host). */
static char *
pg_root(const struct pg_embedded *p)
{
	const char	*ci = pg_embedded_conninfo(p);

	assert_true(strncmp(ci, "host=", 5) == 0);
	return xasprintf("%.*s", (int)strcspn(ci + 5, " "), ci + 5);
}

/* Whether a start ran initdb (it leaves initdb.log in its root). */
static bool
ran_initdb(const struct pg_embedded *p)
{
	char	*root = pg_root(p), *log = xasprintf("%s/initdb.log", root);
	bool	 yes = access(log, F_OK) == 0;

	free(log);
	free(root);
	return yes;
}

/* The number of whole templates in dir (a t... folder with PG_VERSION). */
static int
templates_in(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*de;
	char		 path[PATH_MAX];
	int		 n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s/PG_VERSION", dir, de->d_name);
		if (de->d_name[0] == 't' && access(path, F_OK) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * initdb once (pg.c, SOAK_PG_TEMPLATES): the first start in an empty cache
 * runs initdb and keeps its cluster as a template; the next start copies it
 * (no initdb) and is a cluster of its own (a table made in the first is not
 * in the second, nor in the template); a cache folder others can write in
 * is not trusted (initdb again, the template left alone); "off": initdb.
 */
static void
test_embedded_template(void **state)
{
	struct pg_embedded	*a, *b;
	char			 dir[] = "/tmp/soak-tmpl-test-XXXXXX", err[ERR_LEN] = "";
	char			*cache;
	PGresult		*r;
	PGconn			*c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	cache = xasprintf("%s/cache", dir);
	setenv("SOAK_PG_TEMPLATES", cache, 1);
	if ((a = pg_embedded_start(12, err)) == NULL)
		fail_msg("pg_embedded_start: %s", err);
	assert_true(ran_initdb(a));
	assert_int_equal(templates_in(cache), 1);
	c = connect_ok(pg_embedded_conninfo(a));
	r = PQexec(c, "CREATE TABLE made_in_a (x int)");
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	PQfinish(c);

	if ((b = pg_embedded_start(12, err)) == NULL)
		fail_msg("pg_embedded_start from the template: %s", err);
	assert_false(ran_initdb(b));
	c = connect_ok(pg_embedded_conninfo(b));
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_class "
	    "WHERE relname = 'made_in_a'"), 0);
	assert_int_equal(query_long(c, "SHOW max_connections"), 12);
	PQfinish(c);
	pg_embedded_stop(b);
	pg_embedded_stop(a);
	assert_int_equal(templates_in(cache), 1);

	/* others may write in it: not ours to trust */
	assert_int_equal(chmod(cache, 0777), 0);
	if ((a = pg_embedded_start(12, err)) == NULL)
		fail_msg("pg_embedded_start, cache untrusted: %s", err);
	assert_true(ran_initdb(a));
	pg_embedded_stop(a);
	assert_int_equal(chmod(cache, 0700), 0);

	setenv("SOAK_PG_TEMPLATES", "off", 1);
	if ((a = pg_embedded_start(12, err)) == NULL)
		fail_msg("pg_embedded_start, templates off: %s", err);
	assert_true(ran_initdb(a));
	pg_embedded_stop(a);
	unsetenv("SOAK_PG_TEMPLATES");
	free(cache);
	rm_rf(dir);
}

/*
 * The server is marked soak's (common/soak.h SOAK_PG_MARK, found through
 * its postmaster's cwd as the fault proxy finds it), and
 * pg_embedded_continue() continues a backend a dead worker left stopped:
 * it answers again.
 */
static void
test_embedded_mark_and_continue(void **state)
{
	PGconn	*c;
	char	 mark[128];
	pid_t	 be;
	long	 pm = 0;
	int64_t	 until = now_ms() + 10000;

	(void)state;
	c = connect_ok(pg_embedded_conninfo(pg));
	be = (pid_t)query_long(c, "SELECT pg_backend_pid()");
	assert_true(proc_state(be, &pm) != 0 && pm > 1);
	snprintf(mark, sizeof(mark), "/proc/%ld/cwd/" SOAK_PG_MARK, pm);
	assert_int_equal(access(mark, F_OK), 0);
	assert_int_equal(kill(be, SIGSTOP), 0);
	while (proc_state(be, &pm) != 'T')	/* the stop is delivered */
		if (now_ms() > until)
			fail_msg("watchdog: backend %d not stopped after 10 s", (int)be);
	pg_embedded_continue(pg);
	assert_true(proc_state(be, &pm) != 'T');
	assert_int_equal(query_long(c, "SELECT 6 * 7"), 42);
	PQfinish(c);
}

static void
test_dbparams(void **state)
{
	struct iso_dbparams	p;
	char			err[ERR_LEN];

	(void)state;
	assert_int_equal(iso_dbparams_parse(pg_embedded_conninfo(pg), &p, err), 0);
	assert_true(strncmp(p.host, "/", 1) == 0);
	assert_string_equal(p.port, "5432");
	assert_string_equal(p.user, "postgres");
	assert_string_equal(p.dbname, "postgres");
	assert_null(p.password);
	iso_dbparams_free(&p);

	assert_int_equal(iso_dbparams_parse(
	    "postgresql://alice:s3cret@db.example:6543/shop", &p, err), 0);
	assert_string_equal(p.host, "db.example");
	assert_string_equal(p.port, "6543");
	assert_string_equal(p.user, "alice");
	assert_string_equal(p.dbname, "shop");
	assert_string_equal(p.password, "s3cret");
	iso_dbparams_free(&p);
	iso_dbparams_free(&p);		/* twice is harmless */

	assert_int_equal(iso_dbparams_parse("host=h nonsense", &p, err), -1);
	assert_non_null(strstr(err, "connection string"));
	iso_dbparams_free(NULL);
}

/*
 * replay --shell's command: every setting but the secrets (libpq's
 * dispchar '*': password, sslpassword), the schema on the search_path,
 * one shell word; a secret only says it was there, by its keyword.
 */
static void
test_psql_command(void **state)
{
	struct iso_dbparams	 p;
	char			 err[ERR_LEN], *cmd, want[512], pw[ISO_WITHHELD_LEN];

	(void)state;
	assert_int_equal(iso_dbparams_parse(pg_embedded_conninfo(pg), &p, err), 0);
	cmd = iso_psql_command(pg_embedded_conninfo(pg), "soak_r1_w1", pw, err);
	snprintf(want, sizeof(want), "psql 'user=postgres dbname=postgres host=%s "
	    "port=5432 options=-csearch_path=soak_r1_w1'", p.host);
	assert_string_equal(cmd, want);
	assert_string_equal(pw, "");
	free(cmd);
	iso_dbparams_free(&p);

	cmd = iso_psql_command("postgresql://alice:s3cret@db.example:6543/shop"
	    "?sslmode=require", "s", pw, err);
	assert_string_equal(cmd, "psql 'user=alice dbname=shop host=db.example "
	    "port=6543 sslmode=require options=-csearch_path=s'");
	assert_string_equal(pw, "password");
	assert_null(strstr(cmd, "s3cret"));
	free(cmd);

	/* Quotes inside a value, and options the string already had:
	 * user='o\'neil' and options='-c work_mem=8MB -csearch_path=s' in
	 * conninfo, each ' then written '\'' for the shell. */
	cmd = iso_psql_command("host=/tmp user='o\\'neil' password='a b' "
	    "options='-c work_mem=8MB'", "s", pw, err);
	assert_string_equal(cmd, "psql 'user='\\''o\\'\\''neil'\\'' host=/tmp "
	    "options='\\''-c work_mem=8MB -csearch_path=s'\\'''");
	assert_string_equal(pw, "password");
	free(cmd);

	/* a client key's passphrase is a secret too, in either form */
	cmd = iso_psql_command("host=h sslkey=/k.pem sslpassword='kp 9' "
	    "sslmode=require password=pw9", "s", pw, err);
	assert_string_equal(cmd, "psql 'host=h sslmode=require sslkey=/k.pem "
	    "options=-csearch_path=s'");
	assert_string_equal(pw, "password sslpassword");
	free(cmd);
	cmd = iso_psql_command("postgresql://u@h/d?sslpassword=kp9&sslkey=%2Fk.pem",
	    "s", pw, err);
	assert_null(strstr(cmd, "kp9"));
	assert_null(strstr(cmd, "sslpassword"));
	assert_string_equal(pw, "sslpassword");
	free(cmd);

	assert_null(iso_psql_command("host=h password=hunter2x nonsense", "s", pw, err));
	assert_non_null(strstr(err, "connection string"));
	assert_null(strstr(err, "hunter2x"));
}

static void
test_embedded_stop_cleans_up(void **state)
{
	struct pg_embedded	*pg2;
	struct iso_dbparams	 p;
	char			 err[ERR_LEN] = "", datadir[4096];
	pid_t			 pm, holder;
	int			 hold[2];
	int64_t			 t0;

	(void)state;
	pg2 = pg_embedded_start(12, err);
	if (pg2 == NULL)
		fail_msg("pg_embedded_start: %s", err);
	assert_string_not_equal(pg_embedded_conninfo(pg2),
	    pg_embedded_conninfo(pg));
	pm = pg_facts(pg_embedded_conninfo(pg2), datadir, sizeof(datadir));
	assert_int_equal(iso_dbparams_parse(pg_embedded_conninfo(pg2), &p, err), 0);
	assert_true(path_exists(datadir));
	assert_true(path_exists(p.host));
	assert_true(pid_alive(pm));

	/*
	 * A fork that never exec'd holds a copy of the control pipe, so EOF
	 * alone cannot reach the supervisor; stop must still finish.
	 */
	assert_int_equal(pipe(hold), 0);
	if ((holder = fork()) == 0) {
		char	c;

		close(hold[1]);
		(void)read(hold[0], &c, 1);
		_exit(0);
	}
	close(hold[0]);
	t0 = now_ms();
	pg_embedded_stop(pg2);
	fprintf(stderr, "# embedded PostgreSQL stop: %" PRId64 " ms\n",
	    now_ms() - t0);
	close(hold[1]);
	assert_int_equal(waitpid(holder, NULL, 0), holder);
	/* stop waits for the supervisor, which reaped postgres first. */
	assert_false(pid_alive(pm));
	assert_false(path_exists(datadir));
	assert_false(path_exists(p.host));
	iso_dbparams_free(&p);
	pg_embedded_stop(NULL);
}

/*
 * A caller that dies by SIGKILL cannot clean up; the supervisor must.
 * With ctrl_c the signal is SIGINT to the caller's whole process group,
 * as a terminal sends it: postgres must not be in that group.
 */
static void
caller_dies(bool ctrl_c)
{
	char	 buf[4200], datadir[4096], host[4096];
	int	 fds[2], status;
	ssize_t	 n;
	size_t	 len = 0;
	pid_t	 child, pm = 0;
	int64_t	 deadline;

	assert_int_equal(pipe(fds), 0);
	if ((child = fork()) == 0) {
		struct pg_embedded	*p;
		struct iso_dbparams	 dp;
		char			 err[ERR_LEN];
		pid_t			 cpm;

		close(fds[0]);
		if ((p = pg_embedded_start(12, err)) == NULL) {
			dprintf(fds[1], "ERR %s", err);
			_exit(1);
		}
		cpm = pg_facts(pg_embedded_conninfo(p), datadir, sizeof(datadir));
		iso_dbparams_parse(pg_embedded_conninfo(p), &dp, err);
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		dprintf(fds[1], "%d\n%s\n%s\n", (int)cpm, datadir, dp.host);
		close(fds[1]);
		if (ctrl_c) {
			pause();	/* until the parent's Ctrl-C */
			_exit(3);
		}
		raise(SIGKILL);
		_exit(2);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	if (sscanf(buf, "%d\n%4095[^\n]\n%4095[^\n]", (int *)&pm, datadir,
	    host) != 3)
		fail_msg("child did not report its cluster: %s", buf);
	assert_true(pm > 1);
	if (ctrl_c) {
		assert_int_not_equal(getpgid(pm), getpgid(child));
		assert_int_equal(kill(-child, SIGINT), 0);
	}
	close(fds[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status) &&
	    WTERMSIG(status) == (ctrl_c ? SIGINT : SIGKILL));

	/* Watchdog: the supervisor's stop is bounded well under this. */
	deadline = now_ms() + 15000;
	while (pid_alive(pm) || path_exists(datadir) || path_exists(host)) {
		if (now_ms() > deadline)
			fail_msg("15 s after the caller's SIGKILL: postmaster %d "
			    "%s, %s %s", (int)pm,
			    pid_alive(pm) ? "still running" : "gone", host,
			    path_exists(host) ? "still there" : "gone");
		poll(NULL, 0, 20);
	}
}

static void
test_embedded_caller_sigkilled(void **state)
{
	(void)state;
	caller_dies(false);
}

static void
test_embedded_caller_ctrl_c(void **state)
{
	(void)state;
	caller_dies(true);
}

static void
test_embedded_start_failure(void **state)
{
	char	err[ERR_LEN] = "";

	(void)state;
	/* Beyond PostgreSQL's limit: postgres itself refuses, in its log. */
	assert_null(pg_embedded_start(1000000, err));
	if (strncmp(err, "embedded PostgreSQL: postgres exited during "
	    "startup: ", 52) != 0 || strstr(err, "max_connections") == NULL)
		fail_msg("unexpected error: %s", err);
}

static void
test_reset_recreate(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	PGconn		*c;
	char		 err[ERR_LEN] = "", *sql;
	int64_t		 t0;
	int		 i, n = 20;

	(void)state;
	cfg.db_schema = write_ddl(
	    "-- a comment\n"
	    "CREATE TABLE accounts (id serial PRIMARY KEY, balance int NOT NULL);\n"
	    "CREATE TABLE moves (id bigint GENERATED ALWAYS AS IDENTITY,\n"
	    "    account int REFERENCES accounts(id), amount int);\n"
	    "INSERT INTO accounts (balance) VALUES (100);\n");
	cfg.db_reset = CFG_RESET_RECREATE;
	iso = open_iso(&cfg, "rec", 1);
	assert_string_equal(iso_schema(iso), "soak_rec_w1");
	assert_string_equal(iso_conninfo(iso), pg_embedded_conninfo(pg));
	c = iso_conn(iso);

	/* Nothing exists before the first reset. */
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname = 'soak_rec_w1'"), 0);
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("iso_reset: %s", err);
	assert_int_equal(query_long(c, "SELECT count(*) FROM accounts"), 1);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_tables WHERE "
	    "schemaname = 'soak_rec_w1'"), 2);
	exec_ok(c, "INSERT INTO accounts (balance) VALUES (5), (6)");
	exec_ok(c, "INSERT INTO moves (account, amount) VALUES (1, 1)");
	exec_ok(c, "CREATE TABLE stray (x int)");

	t0 = now_us();
	for (i = 0; i < n; i++)
		if (iso_reset(iso, later(), err) == -1)
			fail_msg("iso_reset: %s", err);
	fprintf(stderr, "# reset recreate (2 tables): %.2f ms per seed\n",
	    (double)(now_us() - t0) / n / 1000.0);

	assert_int_equal(query_long(c, "SELECT count(*) FROM accounts"), 1);
	assert_int_equal(query_long(c, "SELECT count(*) FROM moves"), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_tables WHERE "
	    "schemaname = 'soak_rec_w1' AND tablename = 'stray'"), 0);
	assert_int_equal(query_long(c, "INSERT INTO accounts (balance) "
	    "VALUES (1) RETURNING id"), 2);
	sql = query1(c, "SHOW search_path");
	assert_string_equal(sql, "soak_rec_w1");
	free(sql);

	assert_int_equal(iso_drop(iso, err), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname = 'soak_rec_w1'"), 0);
	iso_close(iso);
	free(cfg.db_schema);
}

static void
test_reset_truncate(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	PGconn		*c;
	char		 err[ERR_LEN] = "";
	int64_t		 t0;
	int		 i, n = 20;

	(void)state;
	cfg.db_schema = write_ddl(
	    "CREATE TABLE accounts (id serial PRIMARY KEY, balance int);\n"
	    "CREATE TABLE moves (id bigint GENERATED ALWAYS AS IDENTITY,\n"
	    "    account int REFERENCES accounts(id), amount int);\n"
	    "CREATE SEQUENCE tickets;\n");
	cfg.db_reset = CFG_RESET_TRUNCATE;
	iso = open_iso(&cfg, "trunc", 1);
	c = iso_conn(iso);
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("first iso_reset: %s", err);
	exec_ok(c, "INSERT INTO accounts (balance) VALUES (1), (2), (3)");
	exec_ok(c, "INSERT INTO moves (account, amount) VALUES (3, 1), (2, 2)");
	assert_int_equal(query_long(c, "SELECT nextval('tickets')"), 1);
	assert_int_equal(query_long(c, "SELECT nextval('tickets')"), 2);
	/* A table made after the first reset: truncate must keep it, empty. */
	exec_ok(c, "CREATE TABLE later (x int); INSERT INTO later VALUES (1)");

	t0 = now_us();
	for (i = 0; i < n; i++)
		if (iso_reset(iso, later(), err) == -1)
			fail_msg("iso_reset: %s", err);
	fprintf(stderr, "# reset truncate (3 tables): %.2f ms per seed\n",
	    (double)(now_us() - t0) / n / 1000.0);

	assert_int_equal(query_long(c, "SELECT count(*) FROM accounts"), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM moves"), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM later"), 0);
	assert_int_equal(query_long(c, "INSERT INTO accounts (balance) "
	    "VALUES (9) RETURNING id"), 1);
	assert_int_equal(query_long(c, "INSERT INTO moves (account, amount) "
	    "VALUES (1, 1) RETURNING id"), 1);
	assert_int_equal(query_long(c, "SELECT nextval('tickets')"), 1);
	iso_drop(iso, err);
	iso_close(iso);
	free(cfg.db_schema);
}

/*
 * truncate gives every seed the state right after the DDL: the fixture
 * rows the schema file inserted, sequences where the DDL left them (a
 * setval, a serial advanced by a fixture INSERT), identity and generated
 * columns, foreign keys in any order (a self-reference, a cycle of
 * non-deferrable keys), and user triggers not fired again.
 */
static void
test_reset_truncate_fixtures(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	PGconn		*c;
	char		 err[ERR_LEN] = "", *v;
	int64_t		 t0;
	int		 i, n = 20;

	(void)state;
	cfg.db_schema = write_ddl(
	    "CREATE TABLE coupons (id serial PRIMARY KEY, code text UNIQUE,\n"
	    "    parent int REFERENCES coupons(id));\n"
	    "CREATE TABLE audit (n serial, what text);\n"
	    "CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS\n"
	    "    $$BEGIN INSERT INTO audit (what) VALUES (NEW.code);\n"
	    "    RETURN NEW; END$$;\n"
	    "CREATE TRIGGER noted AFTER INSERT ON coupons\n"
	    "    FOR EACH ROW EXECUTE FUNCTION note();\n"
	    "INSERT INTO coupons (code, parent) VALUES ('A', NULL), ('B', 1),\n"
	    "    ('C', 2);\n"
	    "CREATE TABLE redeemed (coupon int NOT NULL REFERENCES coupons(id),\n"
	    "    at int);\n"
	    "INSERT INTO redeemed VALUES (3, 7);\n"
	    "CREATE TABLE moves (id bigint GENERATED ALWAYS AS IDENTITY,\n"
	    "    amount int, twice int GENERATED ALWAYS AS (amount * 2) STORED);\n"
	    "INSERT INTO moves (amount) VALUES (10), (20);\n"
	    "CREATE TABLE ping (id int PRIMARY KEY, pong int);\n"
	    "CREATE TABLE pong (id int PRIMARY KEY, ping int);\n"
	    "INSERT INTO ping VALUES (1, 1); INSERT INTO pong VALUES (1, 1);\n"
	    "ALTER TABLE ping ADD FOREIGN KEY (pong) REFERENCES pong(id);\n"
	    "ALTER TABLE pong ADD FOREIGN KEY (ping) REFERENCES ping(id);\n"
	    "CREATE SEQUENCE tickets; SELECT setval('tickets', 41);\n"
	    "CREATE SEQUENCE fresh;\n");
	cfg.db_reset = CFG_RESET_TRUNCATE;
	iso = open_iso(&cfg, "fix", 1);
	c = iso_conn(iso);
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("first iso_reset: %s", err);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname = 'soak_fix_w1_tpl'"), 1);

	/* What a seed does: use up fixtures, advance every sequence. */
	exec_ok(c, "DELETE FROM redeemed; DELETE FROM coupons WHERE id = 3; "
	    "INSERT INTO coupons (code) VALUES ('D'), ('E'); "
	    "INSERT INTO moves (amount) VALUES (30); DELETE FROM moves "
	    "WHERE id = 1; UPDATE ping SET pong = NULL; DELETE FROM pong; "
	    "SELECT nextval('tickets'), nextval('fresh'), nextval('fresh')");

	t0 = now_us();
	for (i = 0; i < n; i++)
		if (iso_reset(iso, later(), err) == -1)
			fail_msg("iso_reset: %s", err);
	fprintf(stderr, "# reset truncate (6 tables with fixtures): "
	    "%.2f ms per seed\n", (double)(now_us() - t0) / n / 1000.0);

	v = query1(c, "SELECT string_agg(id || code || coalesce(parent, 0), "
	    "' ' ORDER BY id) FROM coupons");
	assert_string_equal(v, "1A0 2B1 3C2");
	free(v);
	v = query1(c, "SELECT string_agg(coupon || ':' || at, ' ') "
	    "FROM redeemed");
	assert_string_equal(v, "3:7");
	free(v);
	v = query1(c, "SELECT string_agg(id || ':' || amount || ':' || twice, "
	    "' ' ORDER BY id) FROM moves");
	assert_string_equal(v, "1:10:20 2:20:40");
	free(v);
	assert_int_equal(query_long(c, "SELECT count(*) FROM ping JOIN pong "
	    "ON ping.pong = pong.id AND pong.ping = ping.id"), 1);
	/* The trigger ran for the fixtures once, in the DDL; not again. */
	assert_int_equal(query_long(c, "SELECT count(*) FROM audit"), 3);
	assert_int_equal(query_long(c, "SELECT max(n) FROM audit"), 3);

	/* Sequences: where the DDL left them, not restarted. */
	assert_int_equal(query_long(c, "SELECT nextval('coupons_id_seq')"), 4);
	assert_int_equal(query_long(c, "INSERT INTO moves (amount) VALUES (1) "
	    "RETURNING id"), 3);
	assert_int_equal(query_long(c, "SELECT nextval('tickets')"), 42);
	assert_int_equal(query_long(c, "SELECT nextval('fresh')"), 1);
	assert_int_equal(query_long(c, "SELECT nextval('audit_n_seq')"), 4);
	/* The trigger is on again for the seed. */
	exec_ok(c, "INSERT INTO coupons (id, code) VALUES (9, 'Z')");
	assert_int_equal(query_long(c, "SELECT count(*) FROM audit "
	    "WHERE what = 'Z'"), 1);

	/* A second round: the same state again. */
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("iso_reset: %s", err);
	assert_int_equal(query_long(c, "SELECT count(*) FROM coupons"), 3);
	assert_int_equal(query_long(c, "SELECT count(*) FROM audit"), 3);
	assert_int_equal(query_long(c, "SELECT nextval('tickets')"), 42);

	/* The template goes with the schema. */
	assert_int_equal(iso_drop(iso, err), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname IN ('soak_fix_w1', 'soak_fix_w1_tpl')"), 0);
	iso_close(iso);
	free(cfg.db_schema);
}

/* recreate keeps no template; a long run id still names a distinct one. */
static void
test_reset_template_names(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*a, *b;
	PGconn		*c;
	char		 err[ERR_LEN] = "";
	const char	*longid = "a-very-long-run-id-that-will-not-fit-in-"
			    "sixty-three-bytes-0123456789";

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (x int);\n"
	    "INSERT INTO t VALUES (1);\n");
	cfg.db_reset = CFG_RESET_RECREATE;
	a = open_iso(&cfg, "notpl", 1);
	c = iso_conn(a);
	if (iso_reset(a, later(), err) == -1 || iso_reset(a, later(), err) == -1)
		fail_msg("iso_reset: %s", err);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname LIKE 'soak_notpl_w1%'"), 1);
	assert_int_equal(query_long(c, "SELECT count(*) FROM t"), 1);
	iso_drop(a, err);
	iso_close(a);

	cfg.db_reset = CFG_RESET_TRUNCATE;
	a = open_iso(&cfg, longid, 1);
	b = open_iso(&cfg, longid, 2);
	if (iso_reset(a, later(), err) == -1 || iso_reset(b, later(), err) == -1 ||
	    iso_reset(a, later(), err) == -1 || iso_reset(b, later(), err) == -1)
		fail_msg("iso_reset: %s", err);
	c = iso_conn(a);
	/* Two schemas and two templates, none longer than 63 bytes. */
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname LIKE 'soak_a_very_long%'"), 4);
	assert_int_equal(query_long(c, "SELECT count(*) FROM t"), 1);
	iso_drop(a, err);
	iso_drop(b, err);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace "
	    "WHERE nspname LIKE 'soak_a_very_long%'"), 0);
	iso_close(a);
	iso_close(b);
	free(cfg.db_schema);
}

static void
test_ddl_error_names_line(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	char		 err[ERR_LEN] = "";

	(void)state;
	/* Multi-byte characters before the error: position counts chars. */
	cfg.db_schema = write_ddl(
	    "-- Kontostände für Prüfungen ✓✓✓\n"
	    "CREATE TABLE a (id int, note text DEFAULT 'ünïcödé');\n"
	    "\n"
	    "CREATE TABLE b (id int);\n"
	    "CREATE TABL c (id int);\n"
	    "CREATE TABLE d (id int);\n");
	iso = open_iso(&cfg, "ddl", 1);
	assert_int_equal(iso_reset(iso, later(), err), -1);
	assert_string_equal(err, "schema.sql:5: syntax error at or near \"TABL\"");

	/* An execution error: still names the file and what went wrong. */
	free(cfg.db_schema);
	iso_close(iso);
	cfg.db_schema = write_ddl(
	    "CREATE TABLE a (id int);\n"
	    "INSERT INTO a VALUES (1);\n"
	    "\n"
	    "INSERT INTO nope VALUES (1);\n");
	iso = open_iso(&cfg, "ddl", 1);
	assert_int_equal(iso_reset(iso, later(), err), -1);
	assert_string_equal(err, "schema.sql:4: relation \"nope\" does not exist");
	/* The failed reset rolled back: no half-made schema, usable conn. */
	assert_int_equal(query_long(iso_conn(iso), "SELECT count(*) FROM "
	    "pg_namespace WHERE nspname = 'soak_ddl_w1'"), 0);
	iso_close(iso);
	free(cfg.db_schema);

	/* COPY FROM STDIN is refused without wedging the connection. */
	cfg.db_schema = write_ddl(
	    "CREATE TABLE a (id int);\n"
	    "COPY a FROM STDIN;\n");
	iso = open_iso(&cfg, "ddl", 1);
	assert_int_equal(iso_reset(iso, later(), err), -1);
	assert_non_null(strstr(err, "schema.sql: COPY"));
	assert_int_equal(query_long(iso_conn(iso), "SELECT 1"), 1);
	assert_int_equal(PQtransactionStatus(iso_conn(iso)), PQTRANS_IDLE);
	iso_close(iso);
	free(cfg.db_schema);

	/* An empty schema file is fine. */
	cfg.db_schema = write_ddl("-- nothing yet\n");
	iso = open_iso(&cfg, "ddl", 1);
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("empty DDL: %s", err);
	assert_int_equal(iso_drop(iso, err), 0);
	iso_close(iso);
	free(cfg.db_schema);

	/* A missing DDL file is reported at open. */
	cfg.db_schema = xasprintf("%s/no-such.sql", tmpdir);
	assert_null(iso_open(&cfg, pg_embedded_conninfo(pg), "ddl", 1, tmpdir,
	    err));
	assert_non_null(strstr(err, "no-such.sql"));
	free(cfg.db_schema);
}

static void
test_workers_are_isolated(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*w1, *w2;
	char		 err[ERR_LEN] = "";

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (v int);\n");
	w1 = open_iso(&cfg, "iso", 1);
	w2 = open_iso(&cfg, "iso", 2);
	assert_string_not_equal(iso_schema(w1), iso_schema(w2));
	assert_int_equal(iso_reset(w1, later(), err), 0);
	assert_int_equal(iso_reset(w2, later(), err), 0);
	exec_ok(iso_conn(w1), "INSERT INTO t VALUES (1), (2), (3)");
	exec_ok(iso_conn(w2), "INSERT INTO t VALUES (10)");
	assert_int_equal(query_long(iso_conn(w1), "SELECT sum(v) FROM t"), 6);
	assert_int_equal(query_long(iso_conn(w2), "SELECT sum(v) FROM t"), 10);
	/* Resetting one leaves the other's rows alone. */
	assert_int_equal(iso_reset(w1, later(), err), 0);
	assert_int_equal(query_long(iso_conn(w1), "SELECT count(*) FROM t"), 0);
	assert_int_equal(query_long(iso_conn(w2), "SELECT count(*) FROM t"), 1);
	iso_drop(w1, err);
	iso_drop(w2, err);
	iso_close(w1);
	iso_close(w2);
	free(cfg.db_schema);
}

static void
test_weird_run_id(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso, *a, *b;
	char		 err[ERR_LEN] = "", longid[120];
	const char	*s;

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (v int);\n");
	iso = open_iso(&cfg, "Nightly Run/7;DROP \"x\"-\xc3\xbc", 3);
	s = iso_schema(iso);
	assert_string_equal(s, "soak_nightly_run_7_drop__x_____w3");
	assert_int_equal(iso_reset(iso, later(), err), 0);
	exec_ok(iso_conn(iso), "INSERT INTO t VALUES (1)");
	assert_int_equal(query_long(iso_conn(iso), "SELECT count(*) FROM "
	    "soak_nightly_run_7_drop__x_____w3.t"), 1);
	iso_drop(iso, err);
	iso_close(iso);

	/* Too long for a PostgreSQL name: shortened, still unique. */
	memset(longid, 'r', 100);
	longid[100] = '\0';
	a = open_iso(&cfg, longid, 1);
	longid[99] = 's';
	b = open_iso(&cfg, longid, 1);
	assert_true(strlen(iso_schema(a)) <= 63);
	/*
	 * soak_<33 bytes of the id>_<8 hex of fnv1a64>_w1: room is kept for
	 * the longest worker number and "_tpl", so every worker of the run
	 * shares the prefix.
	 */
	assert_int_equal(strlen(iso_schema(a)), 50);
	assert_int_equal(iso_schema(a)[38], '_');
	assert_int_equal(strspn(iso_schema(a) + 39, "0123456789abcdef"), 8);
	assert_string_equal(iso_schema(a) + 47, "_w1");
	/* longid is b's run id now: its prefix is b's, not a's. */
	s = iso_schema_prefix(longid);
	assert_int_equal(strlen(s) + strlen("2147483647_tpl"), 63);
	assert_int_equal(strncmp(iso_schema(b), s, strlen(s)), 0);
	assert_int_not_equal(strncmp(iso_schema(a), s, strlen(s)), 0);
	free(UNCONST(s));
	assert_string_not_equal(iso_schema(a), iso_schema(b));
	assert_true(strstr(iso_schema(a), "_w1") != NULL);
	assert_int_equal(iso_reset(a, later(), err), 0);
	assert_int_equal(query_long(iso_conn(a), "SELECT count(*) FROM "
	    "pg_namespace WHERE nspname = current_schema()"), 1);
	s = query1(iso_conn(a), "SELECT current_schema()");
	assert_string_equal(s, iso_schema(a));
	free(UNCONST(s));
	iso_drop(a, err);
	iso_close(a);
	iso_close(b);
	free(cfg.db_schema);
}

/*
 * The run's clean-up of lost workers finds their schemas by the same rule
 * that named them: with a run id too long for PostgreSQL's names, workers
 * 1 and 12 (and their templates) are dropped, and nothing of another run
 * whose id only differs after the cut.
 */
static void
test_drop_run_long_id(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*w1, *w12, *other;
	PGconn		*c;
	char		 err[ERR_LEN] = "", id[80], id2[80];
	char		*prefix;

	(void)state;
	snprintf(id, sizeof(id), "Nightly-%s-0123456789abcdef", "20261201T213616"
	    "-run-of-the-ledger-with-a-long-name");
	snprintf(id2, sizeof(id2), "%.*sX", (int)strlen(id) - 1, id);
	cfg.db_schema = write_ddl("CREATE TABLE t (x int);\n"
	    "INSERT INTO t VALUES (1);\n");
	cfg.db_reset = CFG_RESET_TRUNCATE;
	w1 = open_iso(&cfg, id, 1);
	w12 = open_iso(&cfg, id, 12);
	other = open_iso(&cfg, id2, 1);
	if (iso_reset(w1, later(), err) == -1 || iso_reset(w12, later(), err) == -1 ||
	    iso_reset(other, later(), err) == -1)
		fail_msg("iso_reset: %s", err);
	c = connect_ok(pg_embedded_conninfo(pg));
	prefix = iso_schema_prefix(id);
	assert_true(strlen(prefix) > 40);	/* the cut and hash form */
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace WHERE "
	    "nspname LIKE 'soak\\_nightly%'"), 6);
	/* Lost: closed without iso_drop, as a killed worker leaves them. */
	iso_close(w1);
	iso_close(w12);
	assert_int_equal(iso_drop_run(pg_embedded_conninfo(pg), id, later(), err), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace WHERE "
	    "nspname LIKE 'soak\\_nightly%'"), 2);
	/* What is left is the other run's, whole. */
	assert_int_equal(query_long(iso_conn(other), "SELECT count(*) FROM "
	    "pg_namespace WHERE nspname IN (current_schema(), current_schema() "
	    "|| '_tpl')"), 2);
	assert_int_equal(query_long(iso_conn(other), "SELECT count(*) FROM t"), 1);
	assert_int_equal(iso_drop(other, err), 0);
	assert_int_equal(query_long(c, "SELECT count(*) FROM pg_namespace WHERE "
	    "nspname LIKE 'soak\\_nightly%'"), 0);
	/* A run with nothing left to drop is no error. */
	assert_int_equal(iso_drop_run(pg_embedded_conninfo(pg), id, later(), err), 0);
	iso_close(other);
	free(prefix);
	PQfinish(c);
	free(cfg.db_schema);
}

static void
test_reconnects_once(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	PGconn		*admin;
	char		 err[ERR_LEN] = "", *sql;

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (v int);\n");
	iso = open_iso(&cfg, "recon", 1);
	assert_int_equal(iso_reset(iso, later(), err), 0);
	admin = connect_ok(pg_embedded_conninfo(pg));
	sql = xasprintf("SELECT pg_terminate_backend(%d)",
	    PQbackendPID(iso_conn(iso)));
	free(query1(admin, sql));
	free(sql);
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("iso_reset after the backend was killed: %s", err);
	exec_ok(iso_conn(iso), "INSERT INTO t VALUES (1)");
	assert_int_equal(query_long(admin, "SELECT count(*) FROM soak_recon_w1.t"),
	    1);
	iso_drop(iso, err);
	iso_close(iso);
	PQfinish(admin);
	free(cfg.db_schema);
}

/* sig to the postmaster pm and every process it forked (its backends). */
static void
signal_cluster(pid_t pm, int sig)
{
	DIR		*d = opendir("/proc");
	struct dirent	*e;
	char		 path[300], buf[512], *p;
	pid_t		 ppid;

	assert_non_null(d);
	if (sig == SIGSTOP)
		kill(pm, sig);	/* first, so it forks nobody meanwhile */
	while ((e = readdir(d)) != NULL) {
		FILE	*f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		buf[0] = '\0';
		if (fgets(buf, sizeof(buf), f) != NULL &&
		    (p = strrchr(buf, ')')) != NULL &&
		    sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == pm)
			kill((pid_t)strtol(e->d_name, NULL, 10), sig);
		fclose(f);
	}
	closedir(d);
	if (sig != SIGSTOP)
		kill(pm, sig);
}

/*
 * A reset that waits on a lock stops at the deadline; the probe finds the
 * database answering, ends the stuck backend (so its locks go), and the
 * next reset connects afresh and works.
 */
static void
test_reset_deadline_probe(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	PGconn		*admin;
	char		 err[ERR_LEN] = "", *sql;
	int64_t		 t0, took;
	int		 stuck;
	long		 left = 1;

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (v int);\n");
	iso = open_iso(&cfg, "dl", 1);
	assert_int_equal(iso_reset(iso, later(), err), 0);
	stuck = PQbackendPID(iso_conn(iso));
	admin = connect_ok(pg_embedded_conninfo(pg));
	exec_ok(admin, "BEGIN; LOCK TABLE soak_dl_w1.t IN ACCESS SHARE MODE");
	t0 = now_ms();
	assert_int_equal(iso_reset(iso, t0 + 400, err), -1);
	took = now_ms() - t0;
	assert_true(took >= 400 && took < 2000);
	assert_non_null(strstr(err, "no answer from the database in the time left"));

	if (iso_probe(iso, 2000, err) != 0)
		fail_msg("the probe found no database: %s", err);
	assert_null(iso_conn(iso));
	/* The stuck backend was ended, and the probe waited for it to go
	 * (pg_terminate_backend with a timeout): gone, with its lock wait. */
	sql = xasprintf("SELECT count(*) FROM pg_stat_activity WHERE pid = %d", stuck);
	left = query_long(admin, sql);
	free(sql);
	assert_int_equal(left, 0);
	exec_ok(admin, "ROLLBACK");
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("iso_reset after the probe: %s", err);
	assert_int_not_equal(PQbackendPID(iso_conn(iso)), stuck);
	iso_drop(iso, err);
	iso_close(iso);
	PQfinish(admin);
	free(cfg.db_schema);
}

/*
 * A database that stops answering (SIGSTOP): the reset gives up at its
 * deadline, the probe gets no answer within its own and says so, and once
 * the database is back the next reset reconnects and works.
 */
static void
test_paused_database(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	char		 err[ERR_LEN] = "", perr[ERR_LEN] = "", dd[PATH_MAX];
	int64_t		 t0, took_reset, took_probe;
	pid_t		 pm;
	int		 rc_reset, rc_probe;

	(void)state;
	cfg.db_schema = write_ddl("CREATE TABLE t (v int);\n");
	iso = open_iso(&cfg, "pause", 1);
	assert_int_equal(iso_reset(iso, later(), err), 0);
	pm = pg_facts(pg_embedded_conninfo(pg), dd, sizeof(dd));
	signal_cluster(pm, SIGSTOP);
	t0 = now_ms();
	rc_reset = iso_reset(iso, t0 + 500, err);
	took_reset = now_ms() - t0;
	t0 = now_ms();
	rc_probe = iso_probe(iso, 1000, perr);
	took_probe = now_ms() - t0;
	signal_cluster(pm, SIGCONT);	/* before any assertion can jump away */

	assert_int_equal(rc_reset, -1);
	assert_true(took_reset >= 500 && took_reset < 2500);
	assert_int_equal(rc_probe, -1);
	assert_true(took_probe >= 1000 && took_probe < 3000);
	if (strstr(perr, "did not answer within 1.0 s") == NULL)
		fail_msg("probe: %s", perr);
	assert_null(iso_conn(iso));
	if (iso_reset(iso, later(), err) == -1)
		fail_msg("iso_reset once the database is back: %s", err);
	exec_ok(iso_conn(iso), "INSERT INTO t VALUES (1)");
	iso_drop(iso, err);
	iso_close(iso);
	free(cfg.db_schema);
}

static void
test_workspaces(void **state)
{
	struct cfg	 cfg = { 0 };
	struct iso	*iso;
	struct stat	 st;
	char		 err[ERR_LEN] = "", *seed, *turn, *p, *leftover;
	const char	*subs[] = { "home", "tmp", "home/.config", "home/.cache",
			    "home/.local/share", "home/.local/state" };
	size_t		 i;

	(void)state;
	iso = open_iso(&cfg, "ws", 4);
	seed = iso_seed_dir(iso, 1477, err);
	assert_non_null(seed);
	leftover = xasprintf("%s/leftover", seed);
	assert_int_equal(write_file(leftover, "x", 1, err), 0);
	free(seed);
	seed = iso_seed_dir(iso, 1477, err);
	assert_non_null(seed);
	assert_false(path_exists(leftover));
	assert_non_null(strstr(seed, "/seed-1477"));
	assert_int_equal(stat(seed, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	turn = iso_turn_dir(iso, 1477, 2, 5, err);
	assert_non_null(turn);
	p = xasprintf("%s/r2-t5", seed);
	assert_string_equal(turn, p);
	free(p);
	for (i = 0; i < nitems(subs); i++) {
		p = xasprintf("%s/%s", turn, subs[i]);
		assert_int_equal(stat(p, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(st.st_mode & 0777, 0700);
		free(p);
	}
	free(turn);
	free(seed);
	free(leftover);
	iso_close(iso);
	iso_close(NULL);
}

static void
test_open_bad_conninfo(void **state)
{
	char	err[ERR_LEN] = "";

	(void)state;
	assert_null(iso_open(NULL, "host=/nonexistent-soak-dir port=1 "
	    "user=u password=hunter2", "r", 1, tmpdir, err));
	assert_non_null(strstr(err, "cannot connect to PostgreSQL at "
	    "/nonexistent-soak-dir:1/u"));
	assert_null(strstr(err, "hunter2"));
}

/* One formula: each term moves the total by what iso.h says it should. */
static void
test_db_max_connections(void **state)
{
	struct cfg_proxy	px[3];
	struct cfg		cfg = { 0 };

	(void)state;
	memset(px, 0, sizeof(px));
	cfg.turns = 8;
	assert_int_equal(iso_db_max_connections(&cfg, 1), 8 + 8 + 20);
	assert_int_equal(iso_db_max_connections(&cfg, 0), 8 + 8 + 20);
	assert_int_equal(iso_db_max_connections(&cfg, 4), 4 * (8 + 8) + 20);
	cfg.nservices = 2;
	assert_int_equal(iso_db_max_connections(&cfg, 4), 4 * (8 + 2 + 8) + 20);
	/* Only proxies in front of the database add per-turn connections. */
	px[0].upstream_kind = CFG_UP_SERVICE;
	px[1].upstream_kind = CFG_UP_DATABASE;
	px[2].upstream_kind = CFG_UP_DATABASE;
	cfg.proxies = px;
	cfg.nproxies = 3;
	assert_int_equal(iso_db_max_connections(&cfg, 4),
	    4 * (8 * 3 + 2 + 8) + 20);
	/* Never below what soak run and soak worker asked for before. */
	cfg.nproxies = 0;
	cfg.nservices = 0;
	assert_true(iso_db_max_connections(&cfg, 4) >= 4 * (8 + 6) + 20);
	assert_true(iso_db_max_connections(&cfg, 1) >= 8 + 26);
	cfg.turns = 1024;
	cfg.nproxies = 3;
	cfg.proxies = px;
	assert_int_equal(iso_db_max_connections(&cfg, 1024),
	    1024 * (1024 * 3 + 8) + 20);
}

/* chosen, else SOAK_DATABASE_URL, else database.url; nothing started. */
static void
test_db_choice(void **state)
{
	struct iso_db	db;
	struct cfg	cfg = { 0 };
	char		err[ERR_LEN] = "";

	(void)state;
	cfg.turns = 2;
	cfg.db_url = "host=cfg";
	setenv("SOAK_DATABASE_URL", "host=env", 1);
	assert_int_equal(iso_db_open(&db, &cfg, 1, "host=coord", err), 0);
	assert_string_equal(db.conninfo, "host=coord");
	assert_null(db.pg);
	iso_db_close(&db);
	assert_null(db.conninfo);
	assert_int_equal(iso_db_open(&db, &cfg, 1, "", err), 0);
	assert_string_equal(db.conninfo, "host=env");
	iso_db_close(&db);
	setenv("SOAK_DATABASE_URL", "", 1);
	assert_int_equal(iso_db_open(&db, &cfg, 1, NULL, err), 0);
	assert_string_equal(db.conninfo, "host=cfg");
	assert_null(db.pg);
	iso_db_close(&db);
	unsetenv("SOAK_DATABASE_URL");
	assert_int_equal(iso_db_open(&db, &cfg, 1, NULL, err), 0);
	assert_string_equal(db.conninfo, "host=cfg");
	iso_db_close(&db);
	iso_db_close(NULL);
}

/* With no URL anywhere: an embedded cluster sized by the formula. */
static void
test_db_embedded(void **state)
{
	struct iso_db	db;
	struct cfg	cfg = { 0 };
	char		err[ERR_LEN] = "", datadir[4096];
	PGconn		*c;
	pid_t		 pm;

	(void)state;
	cfg.turns = 3;
	cfg.nservices = 1;
	unsetenv("SOAK_DATABASE_URL");
	if (iso_db_open(&db, &cfg, 2, NULL, err) == -1)
		fail_msg("iso_db_open: %s", err);
	assert_non_null(db.pg);
	assert_string_equal(db.conninfo, pg_embedded_conninfo(db.pg));
	c = connect_ok(db.conninfo);
	assert_int_equal(query_long(c, "SHOW max_connections"),
	    iso_db_max_connections(&cfg, 2));
	assert_int_equal(query_long(c, "SHOW max_connections"),
	    2 * (3 + 1 + 8) + 20);
	PQfinish(c);
	pm = pg_facts(db.conninfo, datadir, sizeof(datadir));
	iso_db_close(&db);
	assert_false(pid_alive(pm));
	assert_false(path_exists(datadir));
	assert_null(db.pg);
}

static void
test_pq_msg(void **state)
{
	PGconn		*c;
	PGresult	*r;
	char		 m[200];

	(void)state;
	assert_string_equal(iso_pq_msg(NULL, NULL, m, sizeof(m)),
	    "unknown error");
	c = connect_ok(pg_embedded_conninfo(pg));
	r = PQexec(c, "SELECT 1/0");
	assert_string_equal(iso_pq_msg(c, r, m, sizeof(m)), "division by zero");
	PQclear(r);
	r = PQexec(c, "SELEC 1");
	assert_string_equal(iso_pq_msg(c, r, m, sizeof(m)),
	    "syntax error at or near \"SELEC\"");
	PQclear(r);
	/* Cut to the buffer, one line. */
	r = PQexec(c, "SELECT 1/0");
	assert_string_equal(iso_pq_msg(c, r, m, 9), "division");
	PQclear(r);
	PQfinish(c);
}

/* Which failed connections a worker waits out (worker.c worker_open). */
static void
test_err_passing(void **state)
{
	(void)state;
	assert_true(iso_err_passing("cannot connect to PostgreSQL at /dev/shm/x:5432/"
	    "postgres: connection to server on socket \"/dev/shm/x/.s.PGSQL.5432\" "
	    "failed: No such file or directory"));
	assert_true(iso_err_passing("cannot connect to PostgreSQL at 127.0.0.1:5/p: "
	    "connection to server at \"127.0.0.1\", port 5 failed: Connection refused"));
	assert_true(iso_err_passing("cannot connect to PostgreSQL at h:1/p: FATAL:  "
	    "the database system is starting up"));
	assert_true(iso_err_passing("cannot connect to PostgreSQL at h:1/p: server "
	    "closed the connection unexpectedly"));
	assert_false(iso_err_passing("cannot connect to PostgreSQL at h:1/p: FATAL:  "
	    "password authentication failed for user \"soak\""));
	assert_false(iso_err_passing("cannot connect to PostgreSQL at h:1/p: FATAL:  "
	    "database \"nope\" does not exist"));
	assert_false(iso_err_passing("cannot connect to PostgreSQL at h:1/p: FATAL:  "
	    "no pg_hba.conf entry for host \"10.0.0.2\""));
	assert_false(iso_err_passing("cannot connect to PostgreSQL at h:1/p: invalid "
	    "connection option \"bogus\""));
	/* not the connection: the workspace, the schema file */
	assert_false(iso_err_passing("cannot read schema.sql: No such file or directory"));
	assert_false(iso_err_passing(""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_connects),
		cmocka_unit_test(test_embedded_mark_and_continue),
		cmocka_unit_test(test_embedded_template),
		cmocka_unit_test(test_dbparams),
		cmocka_unit_test(test_err_passing),
		cmocka_unit_test(test_psql_command),
		cmocka_unit_test(test_embedded_stop_cleans_up),
		cmocka_unit_test(test_embedded_caller_sigkilled),
		cmocka_unit_test(test_embedded_caller_ctrl_c),
		cmocka_unit_test(test_embedded_start_failure),
		cmocka_unit_test(test_reset_recreate),
		cmocka_unit_test(test_reset_truncate),
		cmocka_unit_test(test_reset_truncate_fixtures),
		cmocka_unit_test(test_reset_template_names),
		cmocka_unit_test(test_ddl_error_names_line),
		cmocka_unit_test(test_workers_are_isolated),
		cmocka_unit_test(test_weird_run_id),
		cmocka_unit_test(test_reconnects_once),
		cmocka_unit_test(test_reset_deadline_probe),
		cmocka_unit_test(test_paused_database),
		cmocka_unit_test(test_workspaces),
		cmocka_unit_test(test_open_bad_conninfo),
		cmocka_unit_test(test_db_max_connections),
		cmocka_unit_test(test_db_choice),
		cmocka_unit_test(test_db_embedded),
		cmocka_unit_test(test_pq_msg),
		cmocka_unit_test(test_drop_run_long_id),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
