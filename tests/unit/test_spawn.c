/*
 * Turn spawning (worker/spawn.c): exit statuses, signals, timeouts that
 * take the whole process group, the seed deadline, exec failures, and the
 * child's environment (cwd, stdin, stdout, stderr, env, signal state,
 * process group).  Waits are on events (pipe EOF, the batch returning)
 * with an alarm(2) watchdog per test; turn programs may sleep, the test
 * never does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/exec.h"
#include "common/util.h"
#include "worker/wrk.h"

#define WATCHDOG_S	30

static char	*envp_default[] = { "PATH=/usr/bin:/bin", "FOO=bar baz", NULL };

struct fixture {
	char	dir[4096];
	char	out[4200], err[4200];
};

static int
setup(void **state)
{
	struct fixture	*f = xcalloc(1, sizeof(*f));
	char		 real[4096];

	strcpy(f->dir, "/tmp/soak-test-spawn.XXXXXX");
	if (mkdtemp(f->dir) == NULL || realpath(f->dir, real) == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", real);
	snprintf(f->out, sizeof(f->out), "%s/stdout.log", f->dir);
	snprintf(f->err, sizeof(f->err), "%s/stderr.log", f->dir);
	*state = f;
	alarm(WATCHDOG_S);	/* SIGALRM's default action fails the binary */
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	alarm(0);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static struct spawn_req
sh(struct fixture *f, char **argv)
{
	return (struct spawn_req){ .argv = argv, .envp = envp_default, .dir = f->dir,
	    .stdout_path = f->out, .stderr_path = f->err };
}

static char *
slurp(const char *path)
{
	char	err[ERR_LEN], *s;
	size_t	len;

	s = read_file(path, 1 << 20, &len, err);
	assert_non_null(s);
	return s;
}

static void
test_exit_codes(void **state)
{
	struct fixture		*f = *state;
	char			*ok[] = { "sh", "-c", "exit 0", NULL };
	char			*three[] = { "sh", "-c", "exit 3", NULL };
	char			*temp[] = { "sh", "-c", "exit 75", NULL };
	char			*segv[] = { "sh", "-c", "kill -SEGV $$", NULL };
	struct spawn_req	 reqs[4] = { sh(f, ok), sh(f, three), sh(f, temp), sh(f, segv) };
	struct turn_outcome	 out[4] = { 0 };
	bool			 hung = true;
	int			 i;

	for (i = 0; i < 4; i++)
		reqs[i].stdout_path = reqs[i].stderr_path = NULL;
	wrk_run_batch(reqs, 4, 10000, now_ms() + 20000, out, &hung);
	assert_false(hung);
	assert_int_equal(out[0].status, TURN_OK);
	assert_int_equal(out[0].code, 0);
	assert_int_equal(out[1].status, TURN_ERROR);
	assert_int_equal(out[1].code, 3);
	assert_int_equal(out[2].status, TURN_TEMPFAIL);
	assert_int_equal(out[2].code, 75);
	assert_int_equal(out[3].status, TURN_SIGNAL);
	assert_int_equal(out[3].code, SIGSEGV);
	for (i = 0; i < 4; i++)
		turn_outcome_clear(&out[i]);
}

/*
 * The turn starts a background grandchild that holds the write end of a
 * pipe, says so on the pipe, and then outlives turn.timeout.  After the
 * batch the grandchild must be gone: the pipe reads "r" then EOF.  Were
 * only the turn killed, the read would block until the watchdog.
 */
static void
test_timeout_kills_group(void **state)
{
	struct fixture		*f = *state;
	struct turn_outcome	 out = { 0 };
	struct spawn_req	 req;
	struct pollfd		 pfd;
	char			 script[128], buf[8];
	char			*argv[] = { "sh", "-c", script, NULL };
	bool			 hung;
	ssize_t			 n;
	int			 p[2];

	assert_int_equal(pipe(p), 0);
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	snprintf(script, sizeof(script), "sleep 60 & echo r >&%d; exec sleep 60", p[1]);	/* the turn under test hangs on purpose */
	req = sh(f, argv);
	wrk_run_batch(&req, 1, 1500, now_ms() + 20000, &out, &hung);
	close(p[1]);
	assert_false(hung);
	assert_int_equal(out.status, TURN_TIMEOUT);
	assert_int_equal(out.code, SIGKILL);
	assert_true(out.duration_ms >= 1500);
	/* "r": the grandchild existed before the kill. */
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(read(p[0], buf, 2), 2);
	assert_memory_equal(buf, "r\n", 2);
	/* EOF: nobody holds the write end any more. */
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	n = read(p[0], buf, sizeof(buf));
	assert_int_equal(n, 0);
	close(p[0]);
	turn_outcome_clear(&out);
}

static void
test_seed_deadline(void **state)
{
	struct fixture		*f = *state;
	struct turn_outcome	 out[2] = { 0 };
	char			*slow[] = { "sleep", "60", NULL };
	char			*quick[] = { "true", NULL };
	struct spawn_req	 reqs[2] = { sh(f, slow), sh(f, quick) };
	bool			 hung = false;
	int64_t			 t0 = now_ms();

	wrk_run_batch(reqs, 2, 60000, t0 + 300, out, &hung);
	assert_true(hung);
	assert_int_equal(out[0].status, TURN_KILLED);
	assert_int_equal(out[0].code, SIGKILL);
	assert_true(now_ms() - t0 < 20000);
	assert_int_equal(out[1].status, TURN_OK);
	turn_outcome_clear(&out[0]);
	turn_outcome_clear(&out[1]);
}

static void
test_exec_failure(void **state)
{
	struct fixture		*f = *state;
	char			*abs[] = { "/nonexistent/soak-prog", NULL };
	char			*bare[] = { "soak-no-such-program", NULL };
	char			*ok[] = { "true", NULL };
	struct spawn_req	 reqs[3] = { sh(f, abs), sh(f, ok), sh(f, bare) };
	struct turn_outcome	 out[3] = { 0 };
	char			 err[ERR_LEN];
	bool			 hung;
	pid_t			 pid;
	int			 pidfd, i, e;

	wrk_run_batch(reqs, 3, 10000, now_ms() + 20000, out, &hung);
	assert_false(hung);
	assert_int_equal(out[0].status, TURN_EXEC);
	assert_int_equal(out[0].exec_errno, ENOENT);
	assert_non_null(strstr(out[0].stderr_tail, "cannot run \"/nonexistent/soak-prog\""));
	assert_non_null(strstr(out[0].stderr_tail, "No such file or directory"));
	assert_int_equal(out[1].status, TURN_OK);	/* the others still run */
	assert_int_equal(out[1].exec_errno, 0);
	assert_int_equal(out[2].status, TURN_EXEC);
	assert_int_equal(out[2].exec_errno, ENOENT);
	assert_non_null(strstr(out[2].stderr_tail, "soak-no-such-program"));
	for (i = 0; i < 3; i++)
		turn_outcome_clear(&out[i]);

	/* wrk_spawn knows before it returns. */
	assert_int_equal(wrk_spawn(&reqs[0], &pid, &pidfd, &e, err), -1);
	assert_non_null(strstr(err, "No such file or directory"));
	assert_int_equal(e, ENOENT);
	/* A missing working directory is named, and is no exec error. */
	reqs[1].dir = "/nonexistent/dir";
	assert_int_equal(wrk_spawn(&reqs[1], &pid, &pidfd, &e, err), -1);
	assert_non_null(strstr(err, "chdir /nonexistent/dir"));
	assert_int_equal(e, 0);
	/* So is an output file that cannot be opened. */
	reqs[1].dir = f->dir;
	reqs[1].stdout_path = "/nonexistent/dir/out";
	assert_int_equal(wrk_spawn(&reqs[1], &pid, &pidfd, NULL, err), -1);
	assert_non_null(strstr(err, "stdout file /nonexistent/dir/out"));
	/* No child is left behind by the failures. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void
on_usr1(int sig)
{
	(void)sig;
}

/* Writes path with text and mode. */
static void
put(const char *path, const char *text, mode_t mode)
{
	FILE	*f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/*
 * What exec would find, said before anything runs: as execve and
 * execvpe would fail, in words that name the fix; and the real exec
 * agrees on the errno.
 */
static void
test_command_check(void **state)
{
	struct fixture	*f = *state;
	static const struct {
		const char	*name, *text;
		mode_t		 mode;
		int		 errnum;
		const char	*says;
	} cases[] = {
		{ "ok.sh", "#!/bin/sh\nexit 0\n", 0755, 0, NULL },
		{ "noshebang", "exit 0\n", 0755, 0, NULL },
		{ "plain.sh", "#!/bin/sh\nexit 0\n", 0644, EACCES, "not executable (chmod +x)" },
		{ "crlf.sh", "#!/bin/sh\r\nexit 0\r\n", 0755, ENOENT,
		  "its #! line ends in a carriage return" },
		{ "py.sh", "#!/usr/bin/soak-no-python4 -u\nx\n", 0755, ENOENT,
		  "its #! interpreter /usr/bin/soak-no-python4 is not there" },
		{ "missing", NULL, 0, ENOENT, "No such file or directory" },
	};
	char		 path[4200], err[ERR_LEN], *argv[2] = { path, NULL };
	char		*envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct spawn_req req = { .argv = argv, .envp = envp, .dir = f->dir };
	size_t		 i;
	pid_t		 pid;
	int		 e, pidfd, st;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, cases[i].name);
		if (cases[i].text != NULL)
			put(path, cases[i].text, cases[i].mode);
		err[0] = '\0';
		assert_int_equal(exec_check(path, &e, err),
		    cases[i].errnum ? -1 : 0);
		assert_int_equal(e, cases[i].errnum);
		if (cases[i].says != NULL && strstr(err, cases[i].says) == NULL)
			fail_msg("%s: \"%s\" does not say \"%s\"", cases[i].name, err,
			    cases[i].says);
		/* The real exec fails (or not) with the same errno. */
		if (wrk_spawn(&req, &pid, &pidfd, &e, err) == 0) {
			assert_int_equal(cases[i].errnum, 0);
			waitpid(pid, &st, 0);
			close(pidfd);
		} else
			assert_int_equal(e, cases[i].errnum);
	}
	/* A directory is no program. */
	assert_int_equal(exec_check(f->dir, &e, err), -1);
	assert_int_equal(e, EACCES);
	assert_non_null(strstr(err, "is a directory"));
	/* Bare names go by PATH. */
	assert_int_equal(exec_check("sh", &e, err), 0);
	assert_int_equal(exec_check("soak-no-such-program", &e, err), -1);
	assert_int_equal(e, ENOENT);
	assert_non_null(strstr(err, "soak-no-such-program: not found on PATH ("));
	/* One string is one program name: "bash x.sh" is no program. */
	assert_int_equal(exec_check("bash redeem.sh", &e, err), -1);
	assert_int_equal(e, ENOENT);
}

static void
test_child_environment(void **state)
{
	struct fixture		*f = *state;
	char			*prog[] = { "sh", "-c",
				    "pwd; echo \"$FOO\"; echo \"${HOME-unset}\"; "
				    /* the worker's own environment stays out */
				    "echo \"leak:${SOAK_TEST_LEAK-unset}\"; "
				    "read x; echo \"stdin:$x:$?\"; "
				    "echo \"$$ $(cut -d' ' -f5 /proc/$$/stat)\"; "
				    /* builtins only: while dash waits for a child
				     * it blocks every signal for a moment, so an
				     * outside grep could catch its mask mid-wait */
				    "while read -r k v; do case $k in Sig[BIC]*) "
				    "printf '%s\\t%s\\n' \"$k\" \"$v\";; esac; "
				    "done </proc/$$/status; "
				    "echo oops >&2; exit 0", NULL };
	struct spawn_req	 req = sh(f, prog);
	struct turn_outcome	 out = { 0 };
	struct sigaction	 sa = { .sa_handler = on_usr1 }, old_usr1, old_pipe;
	sigset_t		 usr2, oldmask;
	char			*o, *e, want[4400];
	bool			 hung;
	int			 pid, pgrp;

	/* The worker's own signal state must not reach the turn. */
	sigaction(SIGUSR1, &sa, &old_usr1);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr2, &oldmask);
	setenv("SOAK_TEST_LEAK", "1", 1);

	wrk_run_batch(&req, 1, 10000, now_ms() + 20000, &out, &hung);

	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	unsetenv("SOAK_TEST_LEAK");
	assert_int_equal(out.status, TURN_OK);
	o = slurp(f->out);
	e = slurp(f->err);
	snprintf(want, sizeof(want), "%s\nbar baz\nunset\nleak:unset\nstdin::1\n", f->dir);
	assert_memory_equal(o, want, strlen(want));
	print_message("%s", o);
	/* Its own process group. */
	assert_int_equal(sscanf(o + strlen(want), "%d %d", &pid, &pgrp), 2);
	assert_int_equal(pid, pgrp);
	assert_non_null(strstr(o, "SigBlk:\t0000000000000000\n"));
	assert_non_null(strstr(o, "SigIgn:\t0000000000000000\n"));
	assert_string_equal(e, "oops\n");
	assert_string_equal(out.stderr_tail, "oops\n");
	free(o);
	free(e);
	turn_outcome_clear(&out);
}

/*
 * Both streams' tails, the last TURN_TAIL_MAX bytes of each file, and the
 * stamps: each turn's start and end are its own (one ends at once, one
 * 300 ms later), start <= end, and duration is their difference.
 */
static void
test_tails_and_stamps(void **state)
{
	struct fixture		*f = *state;
	char			*slow[] = { "sh", "-c", "i=0; while [ $i -lt 300 ]; do "
				    "printf '%09d\\n' $i; i=$((i + 1)); done; "
				    "echo slow-err >&2; sleep 0.3", NULL };
	char			*fast[] = { "sh", "-c", "echo fast-out; echo fast-err >&2",
				    NULL };
	char			 o2[4200], e2[4200], *o;
	struct spawn_req	 reqs[2] = { sh(f, slow), sh(f, fast) };
	struct turn_outcome	 out[2] = { 0 };
	int64_t			 t0 = now_ms();
	bool			 hung;
	size_t			 len;
	int			 i;

	snprintf(o2, sizeof(o2), "%s/stdout2.log", f->dir);
	snprintf(e2, sizeof(e2), "%s/stderr2.log", f->dir);
	reqs[1].stdout_path = o2;
	reqs[1].stderr_path = e2;
	wrk_run_batch(reqs, 2, 10000, now_ms() + 20000, out, &hung);
	assert_int_equal(out[0].status, TURN_OK);
	assert_int_equal(out[1].status, TURN_OK);
	o = slurp(f->out);
	len = strlen(o);
	assert_int_equal(len, 3000);
	assert_int_equal(strlen(out[0].stdout_tail), TURN_TAIL_MAX);
	assert_string_equal(out[0].stdout_tail, o + len - TURN_TAIL_MAX);
	assert_string_equal(out[0].stderr_tail, "slow-err\n");
	assert_string_equal(out[1].stdout_tail, "fast-out\n");
	assert_string_equal(out[1].stderr_tail, "fast-err\n");
	for (i = 0; i < 2; i++) {
		assert_true(out[i].start_ms >= t0);
		assert_true(out[i].start_ms <= out[i].end_ms);
		assert_true(out[i].end_ms <= now_ms());
		assert_int_equal(out[i].duration_ms, out[i].end_ms - out[i].start_ms);
	}
	assert_true(out[0].end_ms >= out[1].end_ms + 200);
	free(o);
	for (i = 0; i < 2; i++)
		turn_outcome_clear(&out[i]);
}

/*
 * Socket activation (services' listen: socket): the socket is the child's
 * fd 3 and its only socket (another close-on-exec one of ours stays out),
 * and LISTEN_PID is the child's own pid, not the worker's.  Twice: from a
 * high descriptor (dup2), and from fd 3 itself (FD_CLOEXEC cleared).
 */
static void
run_listen(struct fixture *f, int fd, int other)
{
	char			*prog[] = { "sh", "-c",
				    "echo \"$LISTEN_PID $$\"; "
				    "for d in /proc/$$/fd/*; do l=$(readlink \"$d\"); "
				    "case $l in socket:*) echo \"${d##*/} $l\";; esac; "
				    "done", NULL };
	char			 lp[] = "LISTEN_PID=00000000000000000000";
	char			*envp[] = { "PATH=/usr/bin:/bin", lp, NULL };
	struct spawn_req	 req = sh(f, prog);
	struct turn_outcome	 out = { 0 };
	struct stat		 st;
	char			*o, want[64];
	long			 a, b;
	int			 n;
	bool			 hung;

	req.envp = envp;
	req.listen_fd = fd;
	req.listen_pid = lp;
	assert_int_equal(fstat(fd, &st), 0);
	wrk_run_batch(&req, 1, 10000, now_ms() + 20000, &out, &hung);
	assert_int_equal(out.status, TURN_OK);
	o = slurp(f->out);
	print_message("%s", o);
	assert_int_equal(sscanf(o, "%ld %ld\n%n", &a, &b, &n), 2);
	assert_true(a > 0);
	assert_int_equal(a, b);
	assert_true(a != (long)getpid());
	snprintf(want, sizeof(want), "3 socket:[%lu]\n", (unsigned long)st.st_ino);
	assert_string_equal(o + n, want);
	/* Still close-on-exec on our side: dup2 changed only the child's. */
	assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC);
	assert_int_equal(fcntl(other, F_GETFD), FD_CLOEXEC);
	free(o);
	turn_outcome_clear(&out);
}

static void
test_listen_fd(void **state)
{
	struct fixture	*f = *state;
	int		 sv[2], high, other, saved;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_true((high = fcntl(sv[0], F_DUPFD_CLOEXEC, 20)) >= 20);
	assert_true((other = fcntl(sv[1], F_DUPFD_CLOEXEC, 20)) >= 20);
	close(sv[0]);
	close(sv[1]);
	run_listen(f, high, other);
	/* The same from fd 3, whatever was there kept aside. */
	saved = fcntl(3, F_DUPFD_CLOEXEC, 30);
	assert_int_equal(dup3(high, 3, O_CLOEXEC), 3);
	run_listen(f, 3, other);
	if (saved != -1) {
		assert_int_equal(dup3(saved, 3, O_CLOEXEC), 3);
		close(saved);
	} else
		close(3);
	close(high);
	close(other);
}

/* Many small batches: no pidfd or descriptor leaks, no zombies. */
static void
test_no_leaks(void **state)
{
	struct fixture		*f = *state;
	char			*ok[] = { "true", NULL };
	struct spawn_req	 reqs[8];
	struct turn_outcome	 out[8];
	bool			 hung;
	int			 i, k, fd;

	for (i = 0; i < 8; i++)
		reqs[i] = sh(f, ok);
	for (k = 0; k < 20; k++) {
		memset(out, 0, sizeof(out));
		wrk_run_batch(reqs, 8, 10000, now_ms() + 20000, out, &hung);
		for (i = 0; i < 8; i++) {
			assert_int_equal(out[i].status, TURN_OK);
			turn_outcome_clear(&out[i]);
		}
	}
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd < 16);
	close(fd);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_kills_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seed_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_child_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tails_and_stamps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_leaks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
