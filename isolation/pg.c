/*
 * Embedded throwaway PostgreSQL (contract in iso.h).
 *
 * Process shape:
 *
 *   caller ──ctl pipe (caller holds the only write end)──> supervisor
 *                                                           └─ postgres
 *
 * The supervisor is a fork of the caller placed in its own session.  It
 * does all the work (initdb, start, readiness), reports one status message
 * on a second pipe, then blocks reading the control pipe.  EOF there means
 * the caller is gone or called pg_embedded_stop(): postgres gets SIGQUIT
 * (immediate shutdown), is reaped, and the directory tree is removed.
 * Because the supervisor owns postgres from the very first step, a caller
 * killed in the middle of initdb leaves nothing behind either.
 */
#include "isolation/iso.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "common/soak.h"

#define PG_PORT			"5432"	/* names the socket file only; no TCP */
#define PG_INITDB_TIMEOUT_MS	60000
#define PG_READY_TIMEOUT_MS	30000
#define PG_STOP_TIMEOUT_MS	10000
/* The caller's watchdog covers the supervisor's own, plus slack. */
#define PG_START_TIMEOUT_MS	(PG_INITDB_TIMEOUT_MS + PG_READY_TIMEOUT_MS + 5000)
#define PG_STATUS_MAX		1024

struct pg_embedded {
	pid_t	 supervisor;
	int	 ctl_wr;		/* closing it tells the supervisor to stop */
	char	*root;			/* socket directory; data/ lives inside */
	char	*conninfo;
};

/* Everything the supervisor needs, computed before the fork. */
struct pg_plan {
	char	 bindir[PATH_MAX];
	char	*root;
	char	*datadir;
	char	*conninfo;
	char	*cache;			/* initdb's templates; NULL: none */
	char	*tmpl;			/* this server's template in cache */
	int	 max_connections;
	bool	 drop_root;		/* running as root: become "postgres" */
	uid_t	 uid;
	gid_t	 gid;
};

static volatile sig_atomic_t	sup_stop;

static bool
has_initdb(const char *dir)
{
	char	path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/initdb", dir);
	return access(path, X_OK) == 0;
}

/* Compares "15" and "9.6" style version directory names numerically. */
static int
version_cmp(const char *a, const char *b)
{
	double	va = strtod(a, NULL), vb = strtod(b, NULL);

	return (va > vb) - (va < vb);
}

static int
pg_find_bindir(char *out, size_t outlen, char *err)
{
	FILE		*fp;
	DIR		*d;
	struct dirent	*de;
	char		 line[PATH_MAX], best[NAME_MAX + 1] = "", cand[PATH_MAX];
	size_t		 n;

	/* pg_config is the packager's answer; trust it when it has initdb. */
	if ((fp = popen("pg_config --bindir 2>/dev/null", "re")) != NULL) {
		if (fgets(line, sizeof(line), fp) != NULL) {
			n = strcspn(line, "\r\n");
			line[n] = '\0';
			if (n > 0 && has_initdb(line)) {
				pclose(fp);
				snprintf(out, outlen, "%s", line);
				return 0;
			}
		}
		pclose(fp);
	}
	if ((d = opendir("/usr/lib/postgresql")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(cand, sizeof(cand), "/usr/lib/postgresql/%s/bin",
			    de->d_name);
			if (!has_initdb(cand))
				continue;
			if (best[0] == '\0' || version_cmp(de->d_name, best) > 0)
				snprintf(best, sizeof(best), "%s", de->d_name);
		}
		closedir(d);
	}
	if (best[0] == '\0')
		return errf(err, "no PostgreSQL server found (pg_config --bindir "
		    "has no initdb and /usr/lib/postgresql/*/bin is empty); "
		    "install postgresql or set database.url");
	snprintf(out, outlen, "/usr/lib/postgresql/%s/bin", best);
	return 0;
}

/* Quotes a conninfo value when it needs it: 'a b', with \ and ' escaped. */
static char *
conninfo_quote(const char *s)
{
	size_t	 i, j = 0, len = strlen(s);
	char	*q;

	if (len > 0 && strcspn(s, " \t\n'\\") == len)
		return xstrdup(s);
	q = xcalloc(2 * len + 3, 1);

	q[j++] = '\'';
	for (i = 0; i < len; i++) {
		if (s[i] == '\'' || s[i] == '\\')
			q[j++] = '\\';
		q[j++] = s[i];
	}
	q[j++] = '\'';
	return q;
}

/* The last few lines of a log file, joined with " | ", for an err. */
static void
log_tail(const char *path, char *out, size_t outlen)
{
	char	*buf, *p, *end;
	size_t	 len;
	int	 lines = 0;

	out[0] = '\0';
	if ((buf = read_file(path, 1 << 20, &len, NULL)) == NULL)
		return;
	end = buf + len;
	while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	*end = '\0';
	for (p = end; p > buf; p--) {
		if (p[-1] == '\n' && ++lines == 3)
			break;
	}
	for (char *c = p; *c; c++)
		if (*c == '\n')
			*c = '|';
	snprintf(out, outlen, "%s", p);
	free(buf);
}

/*
 * Child side of spawn: drop privileges, tie our life to the supervisor,
 * point stdio at the log, close every other descriptor, exec.
 */
static void __attribute__((noreturn))
child_exec(const struct pg_plan *pl, const char *logpath, char *const argv[])
{
	char *const	envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC",
			    "LANG=C", NULL };
	pid_t		parent = getppid();
	sigset_t	none;
	int		fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	if (pl->drop_root) {
		if (setgroups(0, NULL) == -1 || setgid(pl->gid) == -1 ||
		    setuid(pl->uid) == -1)
			_exit(126);
	}
	/* After setuid: credential changes clear the death signal. */
	prctl(PR_SET_PDEATHSIG, SIGQUIT);
	if (getppid() != parent)
		_exit(126);
	if (chdir(pl->root) == -1)
		_exit(126);
	if ((fd = open("/dev/null", O_RDONLY)) != -1) {
		dup2(fd, 0);
		close(fd);
	}
	if ((fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600)) != -1) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	close_range(3, ~0U, 0);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	execve(argv[0], argv, envp);
	_exit(127);
}

static pid_t
spawn(const struct pg_plan *pl, const char *logpath, char *const argv[])
{
	pid_t	pid;

	if ((pid = fork()) == 0)
		child_exec(pl, logpath, argv);
	return pid;
}

/* Waits for pid with a deadline; -1 on timeout (pid still running). */
static int
wait_deadline(pid_t pid, int64_t timeout_ms, int *status)
{
	int64_t	deadline = now_ms() + timeout_ms;
	pid_t	r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r == -1 && errno != EINTR)
			return 0;	/* already reaped elsewhere: gone */
		if (now_ms() >= deadline)
			return -1;
		poll(NULL, 0, 5);
	}
}

/*
 * SIGCONT to pid and its children: a cluster paused with SIGSTOP (the
 * chaos test does it, so can an operator) would not act on SIGQUIT, and
 * its stopped backends would hold the postmaster's immediate shutdown
 * for its 5 s before it kills them.  O(processes), once, at the end.
 */
static void
continue_tree(pid_t pid)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[300], buf[512], *p;
	long		 ppid;
	FILE		*f;

	kill(pid, SIGCONT);
	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		/* "pid (comm) state ppid ...": comm may hold blanks and ')' */
		if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL &&
		    sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == (long)pid)
			kill((pid_t)atol(de->d_name), SIGCONT);
		fclose(f);
	}
	closedir(d);
}

static void
stop_postgres(pid_t pm)
{
	int	status;

	if (pm <= 0)
		return;
	kill(pm, SIGQUIT);
	continue_tree(pm);
	if (wait_deadline(pm, PG_STOP_TIMEOUT_MS, &status) == -1) {
		kill(pm, SIGKILL);
		waitpid(pm, &status, 0);
	}
}

/*
 * The postmaster postmaster.pid in datadir names, if it is running there
 * (its working directory is datadir: a postmaster chdirs to it), so that a
 * stale pid taken by another process is left alone; else 0.
 */
static pid_t
postmaster_of(const char *datadir)
{
	char	*path = xasprintf("%s/postmaster.pid", datadir), *text;
	char	 proc[64], cwd[PATH_MAX];
	ssize_t	 n;
	long	 pid;

	text = read_file(path, 4096, NULL, NULL);
	free(path);
	if (text == NULL)
		return 0;
	pid = strtol(text, NULL, 10);
	free(text);
	if (pid <= 1 || pid > INT_MAX)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%ld/cwd", pid);
	if ((n = readlink(proc, cwd, sizeof(cwd) - 1)) <= 0)
		return 0;
	cwd[n] = '\0';
	return strcmp(cwd, datadir) == 0 ? (pid_t)pid : 0;
}

/*
 * Somebody restarted the cluster behind our back (pg_ctl restart, as the
 * chaos test does): the postmaster now running is not our child, and
 * would outlive the directory we remove (postmaster_of names it).
 */
static void
stop_restarted(const struct pg_plan *pl, pid_t pm)
{
	struct pollfd	 pfd;
	pid_t		 pid = postmaster_of(pl->datadir);
	int		 fd;

	if (pid <= 0 || pid == pm)
		return;
	/* Not our child: its pidfd says when it is gone. */
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	kill(pid, SIGQUIT);
	continue_tree(pid);
	if (fd != -1) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, PG_STOP_TIMEOUT_MS) == 0)
			kill(pid, SIGKILL);
		close(fd);
	}
}

static int
run_initdb(const struct pg_plan *pl, char *err)
{
	char	 tail[200], initdb[PATH_MAX + 16];
	char	*logpath = xasprintf("%s/initdb.log", pl->root);
	char	*argv[] = { initdb, "-D", pl->datadir, "-A", "trust",
		    "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync",
		    "--no-instructions", NULL };
	pid_t	 pid;
	int	 status, rc = -1;

	snprintf(initdb, sizeof(initdb), "%s/initdb", pl->bindir);
	if ((pid = spawn(pl, logpath, argv)) == -1) {
		errf(err, "cannot start initdb: %s", strerror(errno));
		goto out;
	}
	if (wait_deadline(pid, PG_INITDB_TIMEOUT_MS, &status) == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		errf(err, "initdb did not finish within %d s (%s)",
		    PG_INITDB_TIMEOUT_MS / 1000, initdb);
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_tail(logpath, tail, sizeof(tail));
		errf(err, "initdb failed (%s %d)%s%s",
		    WIFEXITED(status) ? "exit" : "signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		    tail[0] ? ": " : "", tail);
		goto out;
	}
	/* soak's own server: the fault proxy stops its backends at lock
	 * waits to decide their wake-ups (iso.h, SOAK_PG_MARK) */
	free(logpath);
	logpath = xasprintf("%s/" SOAK_PG_MARK, pl->datadir);
	if ((status = open(logpath, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != -1)
		close(status);
	rc = 0;
out:
	free(logpath);
	return rc;
}

static pid_t
start_postgres(const struct pg_plan *pl, char *err)
{
	char	 tail[200], postgres[PATH_MAX + 16], maxconn[64];
	char	*logpath = xasprintf("%s/postgres.log", pl->datadir), *ping = NULL;
	char	*argv[] = { postgres, "-D", pl->datadir, "-k", pl->root,
		    "-p", PG_PORT,
		    "-c", "listen_addresses=",
		    "-c", "fsync=off",
		    "-c", "synchronous_commit=off",
		    "-c", "full_page_writes=off",
		    "-c", "wal_level=minimal",
		    "-c", "max_wal_senders=0",
		    "-c", maxconn,
		    "-c", "unix_socket_permissions=0700",
		    "-c", "shared_buffers=16MB",
		    "-c", "huge_pages=off",
		    "-c", "jit=off",
		    /* A deadlock among a scheduled proxy's turns is found and
		     * broken by soak within milliseconds (fault-proxy/gate.h):
		     * PostgreSQL's own detector, a clock, must not run first.
		     * It stays the backstop for a cycle soak cannot see
		     * (through a connection that is not the proxy's). */
		    "-c", "deadlock_timeout=5s",
		    NULL };
	int64_t	 deadline = now_ms() + PG_READY_TIMEOUT_MS;
	pid_t	 pid;
	int	 status;

	snprintf(postgres, sizeof(postgres), "%s/postgres", pl->bindir);
	snprintf(maxconn, sizeof(maxconn), "max_connections=%d",
	    pl->max_connections);
	if ((pid = spawn(pl, logpath, argv)) == -1) {
		errf(err, "cannot start postgres: %s", strerror(errno));
		goto fail;
	}
	/* connect_timeout: a ping that hangs would outlive the watchdog. */
	ping = xasprintf("%s connect_timeout=2", pl->conninfo);
	for (;;) {
		if (PQping(ping) == PQPING_OK)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			log_tail(logpath, tail, sizeof(tail));
			errf(err, "postgres exited during startup%s%s",
			    tail[0] ? ": " : "", tail);
			pid = -1;
			goto fail;
		}
		if (now_ms() >= deadline) {
			log_tail(logpath, tail, sizeof(tail));
			errf(err, "postgres did not accept connections "
			    "on %s within %d s%s%s", pl->root,
			    PG_READY_TIMEOUT_MS / 1000, tail[0] ? ": " : "", tail);
			goto fail;
		}
		poll(NULL, 0, 5);
	}
	free(logpath);
	free(ping);
	return pid;
fail:
	stop_postgres(pid);
	free(logpath);
	free(ping);
	return -1;
}

/*
 * initdb once.  A cluster initdb made is kept as a template in a cache
 * folder of soak's own (SOAK_PG_TEMPLATES, by default
 * <scratch>/soak-pg-cache-<uid>; "off": none; private_dir: ours, and
 * nobody else can write in it) and copied for every later start (cp -a
 * of the 39 MB cluster: 0.09 s here) against initdb's 0.9 s of CPU, paid
 * by every run, replay and minimize try (PostgreSQL's own tests do the same since 16).  A template's name
 * says which server made it and how (the postgres binary's device, inode,
 * size and modification time; PG_TEMPLATE_V, bumped with initdb's
 * arguments; the owner), so an upgraded server makes a new one, and one
 * appears whole or not at all (copied aside, then renamed in).  Any
 * failure falls back to initdb.
 */
#define PG_TEMPLATE_V	1

static void
template_plan(struct pg_plan *pl, const char *tmp)
{
	struct stat	 st;
	char		 path[PATH_MAX + 16], err[ERR_LEN];
	const char	*env = getenv("SOAK_PG_TEMPLATES");

	snprintf(path, sizeof(path), "%s/postgres", pl->bindir);
	if ((env != NULL && strcmp(env, "off") == 0) || stat(path, &st) == -1)
		return;
	pl->cache = env != NULL && env[0] != '\0' ? xstrdup(env) :
	    xasprintf("%s/soak-pg-cache-%u", tmp, (unsigned)geteuid());
	if (private_dir(pl->cache, err) == -1) {
		log_warnx("the embedded PostgreSQL runs initdb every time: %s", err);
		free(pl->cache);
		pl->cache = NULL;
		return;
	}
	pl->tmpl = xasprintf("%s/t%d-%llx-%llx-%llx-%llx.%09ld-%u", pl->cache,
	    PG_TEMPLATE_V, (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
	    (unsigned long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
	    (unsigned)(pl->drop_root ? pl->uid : geteuid()));
}

/* The data directory from the template; -1 (and nothing left): none. */
static int
template_take(const struct pg_plan *pl)
{
	char	path[PATH_MAX + 16], err[ERR_LEN];

	if (pl->tmpl == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/PG_VERSION", pl->tmpl);
	if (access(path, F_OK) == -1)
		return -1;
	if (copy_tree(pl->tmpl, pl->datadir, err) == -1) {
		rm_rf(pl->datadir);
		return -1;
	}
	return 0;
}

/*
 * initdb's fresh cluster (not yet started) kept as the template: copied
 * aside, renamed in (another start may have put its own there first:
 * then ours goes); templates of other servers and copies whose maker died
 * are removed.
 */
static void
template_keep(const struct pg_plan *pl)
{
	DIR		*d;
	struct dirent	*de;
	char		*aside, *other, err[ERR_LEN];
	const char	*base;

	if (pl->tmpl == NULL)
		return;
	aside = xasprintf("%s/.new-%ld", pl->cache, (long)getpid());
	rm_rf(aside);
	if (copy_tree(pl->datadir, aside, err) == -1 ||
	    rename(aside, pl->tmpl) == -1)
		rm_rf(aside);
	free(aside);
	base = strrchr(pl->tmpl, '/') + 1;
	if ((d = opendir(pl->cache)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, base) == 0 || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (strncmp(de->d_name, ".new-", 5) == 0 &&
		    (kill((pid_t)atol(de->d_name + 5), 0) == 0 || errno != ESRCH))
			continue;
		other = xasprintf("%s/%s", pl->cache, de->d_name);
		rm_rf(other);
		free(other);
	}
	closedir(d);
}

static void
sup_on_signal(int sig)
{
	(void)sig;
	sup_stop = 1;
}

/*
 * The supervisor.  fd 3 is the control pipe (read end), fd 4 the status
 * pipe (write end); nothing else is open past stderr.
 */
static void __attribute__((noreturn))
supervise(const struct pg_plan *pl)
{
	struct sigaction	 sa;
	sigset_t		 stopsigs, none;
	char			 err[ERR_LEN], msg[PG_STATUS_MAX], buf[64];
	pid_t			 pm = -1;
	ssize_t			 n;
	int			 len;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sup_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	/*
	 * SIGTERM/SIGHUP stay blocked except inside ppoll(), so one that
	 * lands between the flag test and the wait cannot be missed.
	 */
	sigemptyset(&none);
	sigemptyset(&stopsigs);
	sigaddset(&stopsigs, SIGTERM);
	sigaddset(&stopsigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &stopsigs, NULL);

	if (pl->drop_root && chown(pl->root, pl->uid, pl->gid) == -1) {
		errf(err, "cannot hand \"%s\" to the postgres user: %s",
		    pl->root, strerror(errno));
		goto report;
	}
	if (template_take(pl) == -1) {
		if (run_initdb(pl, err) == -1)
			goto report;
		template_keep(pl);
	}
	if ((pm = start_postgres(pl, err)) == -1)
		goto report;
	snprintf(err, sizeof(err), "%ld", (long)pm);
report:
	len = snprintf(msg, sizeof(msg), "%c%s", pm > 0 ? 'O' : 'E', err);
	if (write(4, msg, (size_t)len) != len)
		sup_stop = 1;
	close(4);

	while (pm > 0 && !sup_stop) {
		struct pollfd	pfd = { .fd = 3, .events = POLLIN };

		if (ppoll(&pfd, 1, NULL, &none) == -1)
			continue;	/* EINTR: a signal; loop re-checks */
		n = read(3, buf, sizeof(buf));
		if (n == 0 || (n == -1 && errno != EINTR && errno != EAGAIN))
			break;
	}
	stop_postgres(pm);
	if (pm > 0)
		stop_restarted(pl, pm);
	rm_rf(pl->root);
	_exit(0);
}

/*
 * pg_embedded_start in phases, as the supervisor sees them: plan (find the
 * server, pick the user, make the directory), launch (fork the supervisor,
 * which runs initdb and postgres), wait ready (its one status message).
 */

static void
pg_plan_free(struct pg_plan *pl)
{
	free(pl->root);
	free(pl->datadir);
	free(pl->conninfo);
	free(pl->cache);
	free(pl->tmpl);
	memset(pl, 0, sizeof(*pl));
}

/* As root, initdb and postgres run as "postgres": initdb refuses root. */
static int
pg_plan_user(struct pg_plan *pl, char *err)
{
	struct passwd	*pw;

	if (geteuid() != 0)
		return 0;
	if ((pw = getpwnam("postgres")) == NULL)
		return errf(err, "running as root, but there is no \"postgres\" "
		    "user to run the embedded PostgreSQL as; create one "
		    "or set database.url");
	pl->drop_root = true;
	pl->uid = pw->pw_uid;
	pl->gid = pw->pw_gid;
	return 0;
}

/* Everything decided before the fork; on failure nothing is left behind. */
static int
pg_plan_init(struct pg_plan *pl, int max_connections, char *err)
{
	const char	*tmp;
	char		 tmpl[PATH_MAX], *q;

	memset(pl, 0, sizeof(*pl));
	pl->max_connections = max_connections;
	if (pg_find_bindir(pl->bindir, sizeof(pl->bindir), err) == -1 ||
	    pg_plan_user(pl, err) == -1)
		return -1;
	/* tmpfs: the cluster is throwaway, so let it live in memory. */
	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if ((tmp = getenv("TMPDIR")) == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/soak-pg-XXXXXX", tmp);
	if (mkdtemp(tmpl) == NULL)
		return errf(err, "cannot create a directory for the embedded "
		    "PostgreSQL in %s: %s", tmp, strerror(errno));
	pl->root = xstrdup(tmpl);
	pl->datadir = xasprintf("%s/data", pl->root);
	template_plan(pl, tmp);
	q = conninfo_quote(pl->root);
	pl->conninfo = xasprintf("host=%s port=%s user=postgres dbname=postgres",
	    q, PG_PORT);
	free(q);
	return 0;
}

/*
 * The supervisor's side of the fork: its own session, the control pipe
 * at fd 3 and the status pipe at fd 4, nothing else open past stderr.
 */
static void __attribute__((noreturn))
pg_supervisor_child(const struct pg_plan *pl, int ctl_rd, int st_wr)
{
	int	c, s;

	setsid();
	/* Park the two fds high, then put them at 3 and 4. */
	c = fcntl(ctl_rd, F_DUPFD_CLOEXEC, 100);
	s = fcntl(st_wr, F_DUPFD_CLOEXEC, 100);
	if (c == -1 || s == -1 || dup3(c, 3, O_CLOEXEC) == -1 ||
	    dup3(s, 4, O_CLOEXEC) == -1)
		_exit(1);
	close_range(5, ~0U, 0);
	/* Keep nobody's stdout pipe open; stderr stays for warnings. */
	if ((c = open("/dev/null", O_RDWR)) != -1) {
		dup2(c, 0);
		dup2(c, 1);
		if (c > 4)
			close(c);
	}
	supervise(pl);
}

/*
 * Forks the supervisor.  From here it owns the directory: pl->root and
 * pl->conninfo move into the returned handle, and *st_rd is the read end
 * of the status pipe.
 */
static struct pg_embedded *
pg_supervisor_launch(struct pg_plan *pl, int *st_rd, char *err)
{
	struct pg_embedded	*pg;
	int			 ctl[2] = { -1, -1 }, st[2] = { -1, -1 };
	pid_t			 sup;

	if (pipe2(ctl, O_CLOEXEC) == -1 || pipe2(st, O_CLOEXEC) == -1) {
		errf(err, "cannot create a pipe for the PostgreSQL supervisor: %s",
		    strerror(errno));
		goto fail;
	}
	/* Buffered stdio would otherwise be flushed twice. */
	fflush(NULL);
	if ((sup = fork()) == -1) {
		errf(err, "cannot fork the PostgreSQL supervisor: %s",
		    strerror(errno));
		goto fail;
	}
	if (sup == 0)
		pg_supervisor_child(pl, ctl[0], st[1]);
	close(ctl[0]);
	close(st[1]);
	*st_rd = st[0];
	pg = xcalloc(1, sizeof(*pg));
	pg->supervisor = sup;
	pg->ctl_wr = ctl[1];
	pg->root = pl->root;
	pl->root = NULL;
	pg->conninfo = pl->conninfo;
	pl->conninfo = NULL;
	return pg;
fail:
	if (ctl[0] != -1)
		close(ctl[0]);
	if (ctl[1] != -1)
		close(ctl[1]);
	if (st[0] != -1)
		close(st[0]);
	if (st[1] != -1)
		close(st[1]);
	return NULL;
}

/*
 * Reads the supervisor's one status message: "O<postmaster pid>" once
 * postgres accepts connections, "E<why>" otherwise.  The supervisor closes
 * the pipe after it, so EOF ends the read.
 */
static int
pg_wait_ready(int st_rd, char *pm, size_t pmlen, char *err)
{
	char		msg[PG_STATUS_MAX + 1];
	int64_t		deadline = now_ms() + PG_START_TIMEOUT_MS, left;
	size_t		len = 0;
	ssize_t		n;

	for (;;) {
		struct pollfd	pfd = { .fd = st_rd, .events = POLLIN };

		if ((left = deadline - now_ms()) <= 0)
			return errf(err, "the embedded PostgreSQL supervisor did "
			    "not report initdb and startup within %d s",
			    PG_START_TIMEOUT_MS / 1000);
		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			return errf(err, "waiting for the embedded PostgreSQL: %s",
			    strerror(errno));
		n = read(st_rd, msg + len, sizeof(msg) - 1 - len);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(msg) - 1)
			break;
	}
	msg[len] = '\0';
	if (len == 0)
		return errf(err, "the embedded PostgreSQL supervisor died before "
		    "reporting");
	if (msg[0] != 'O')
		return errf(err, "embedded PostgreSQL: %s", msg + 1);
	if (snprintf(pm, pmlen, "%s", msg + 1) >= (int)pmlen)
		log_debug("postmaster status cut to %zu bytes", pmlen - 1);
	return 0;
}

struct pg_embedded *
pg_embedded_start(int max_connections, char *err)
{
	struct pg_embedded	*pg = NULL;
	struct pg_plan		 pl;
	char			 pm[32];
	int64_t			 t0 = now_ms();
	int			 st = -1;

	if (pg_plan_init(&pl, max_connections, err) == -1)
		goto fail;
	if ((pg = pg_supervisor_launch(&pl, &st, err)) == NULL)
		goto fail;
	if (pg_wait_ready(st, pm, sizeof(pm), err) == -1)
		goto fail;
	close(st);
	log_debug("embedded PostgreSQL %s up in %lld ms (postmaster %s)",
	    pg->root, (long long)(now_ms() - t0), pm);
	pg_plan_free(&pl);
	return pg;
fail:
	if (st != -1)
		close(st);
	/* Before the launch the directory is ours; after, the supervisor's. */
	if (pg == NULL && pl.root != NULL)
		rm_rf(pl.root);
	pg_embedded_stop(pg);
	pg_plan_free(&pl);
	return NULL;
}

const char *
pg_embedded_conninfo(const struct pg_embedded *pg)
{
	return pg ? pg->conninfo : NULL;
}

void
pg_embedded_continue(struct pg_embedded *pg)
{
	char	data[PATH_MAX];
	pid_t	pm;

	if (pg == NULL || pg->root == NULL)
		return;
	snprintf(data, sizeof(data), "%s/data", pg->root);
	if ((pm = postmaster_of(data)) > 0)
		continue_tree(pm);
}

void
pg_embedded_stop(struct pg_embedded *pg)
{
	int	status;

	if (pg == NULL)
		return;
	if (pg->ctl_wr != -1)
		close(pg->ctl_wr);
	/*
	 * EOF alone is not enough when a fork of ours that never exec'd
	 * still holds the pipe; SIGTERM says the same thing.  The
	 * supervisor bounds its own shutdown (SIGQUIT, then SIGKILL).
	 */
	kill(pg->supervisor, SIGTERM);
	while (waitpid(pg->supervisor, &status, 0) == -1 && errno == EINTR)
		;
	free(pg->root);
	free(pg->conninfo);
	free(pg);
}
