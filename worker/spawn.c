/*
 * Starting and reaping the processes of the system under test: turns, the
 * setup command, services.  Children are waited on through pidfds in one
 * poll(2), so a batch of turns costs one syscall per event and the only
 * clock read is for deadlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/wrk.h"

#define STDERR_TAIL	2048

static const char *const turn_status_names[] = {
	[TURN_OK] = "ok", [TURN_ERROR] = "error", [TURN_TEMPFAIL] = "tempfail",
	[TURN_SIGNAL] = "signal", [TURN_TIMEOUT] = "timeout",
	[TURN_EXEC] = "exec", [TURN_KILLED] = "killed",
};

const char *
turn_status_name(enum turn_status s)
{
	if ((size_t)s >= nitems(turn_status_names))
		return "unknown";
	return turn_status_names[s];
}

static int
pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* In the child: only async-signal-safe calls until execve. */
static void __attribute__((noreturn))
child_exec(const struct spawn_req *req, int errfd, pid_t parent)
{
	int	fd, e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)	/* the worker died before prctl */
		_exit(127);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if ((fd = open("/dev/null", O_RDONLY)) != -1) {
		dup2(fd, 0);
		if (fd > 2)
			close(fd);
	}
	if (req->stdout_path &&
	    (fd = open(req->stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) != -1) {
		dup2(fd, 1);
		if (fd > 2)
			close(fd);
	}
	if (req->stderr_path &&
	    (fd = open(req->stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) != -1) {
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (req->dir && chdir(req->dir) == -1)
		goto fail;
	execvpe(req->argv[0], req->argv, req->envp);
fail:
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(127);
}

/*
 * Forks the child and returns at once with the read end of its exec-error
 * pipe, so a batch can fork every turn before waiting for any exec: the
 * children's execs then overlap with the parent's forks.
 */
static int
spawn_start(const struct spawn_req *req, pid_t *pidp, int *errfdp, char *err)
{
	sigset_t	all, old;
	pid_t		pid, parent = getpid();
	int		p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return errf(err, "cannot start %s: pipe: %s", req->argv[0], strerror(errno));
	/* Block signals across fork so the child never runs our handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		child_exec(req, p[1], parent);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (pid == -1) {
		close(p[0]);
		return errf(err, "cannot start %s: fork: %s", req->argv[0], strerror(errno));
	}
	setpgid(pid, pid);	/* both sides, so kill(-pid) works at once */
	*pidp = pid;
	*errfdp = p[0];
	return 0;
}

/* Waits for the exec (EOF on the pipe) or its errno; opens the pidfd. */
static int
spawn_finish(const struct spawn_req *req, pid_t pid, int errfd, int *pidfdp, char *err)
{
	ssize_t	n;
	int	e = 0, pidfd;

	do
		n = read(errfd, &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	close(errfd);
	if (n == sizeof(e)) {
		waitpid(pid, NULL, 0);
		return errf(err, "cannot run \"%s\"%s%s: %s", req->argv[0],
		    req->dir ? " in " : "", req->dir ? req->dir : "", strerror(e));
	}
	if ((pidfd = pidfd_open_(pid)) == -1) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return errf(err, "pidfd_open: %s (Linux 5.3 or later is required)",
		    strerror(errno));
	}
	*pidfdp = pidfd;
	return 0;
}

int
wrk_spawn(const struct spawn_req *req, pid_t *pidp, int *pidfdp, char *err)
{
	int	errfd;

	if (spawn_start(req, pidp, &errfd, err) == -1)
		return -1;
	return spawn_finish(req, *pidp, errfd, pidfdp, err);
}

static char *
tail_of(const char *path)
{
	char	 buf[STDERR_TAIL + 1];
	ssize_t	 n;
	off_t	 size;
	int	 fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return xstrdup("");
	size = lseek(fd, 0, SEEK_END);
	if (size > STDERR_TAIL)
		lseek(fd, size - STDERR_TAIL, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, STDERR_TAIL);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	/* Stderr may hold anything; the report wants valid UTF-8 text.  A
	 * multi-byte character cut at the start of the tail becomes '?'. */
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t')
			buf[i] = '?';
	utf8_scrub(buf, (size_t)n);
	return xstrdup(buf);
}

struct running {
	pid_t	pid;
	int	pidfd, errfd;
	int64_t	start, deadline;
	bool	timed_out, killed, done;
};

void
wrk_run_batch(const struct spawn_req *reqs, size_t n, int64_t timeout_ms,
    int64_t seed_deadline, struct turn_outcome *out, bool *hung)
{
	struct running	*run = xcalloc(n, sizeof(*run));
	struct pollfd	*pfd = xcalloc(n, sizeof(*pfd));
	char		 err[ERR_LEN];
	size_t		 i, left = 0;
	int		 st;

	*hung = false;
	for (i = 0; i < n; i++) {
		out[i].status = TURN_OK;
		out[i].code = 0;
		run[i].start = now_ms();
		run[i].deadline = run[i].start + timeout_ms;
		run[i].pidfd = -1;
		if (spawn_start(&reqs[i], &run[i].pid, &run[i].errfd, err) == -1) {
			out[i].status = TURN_EXEC;
			out[i].stderr_tail = xstrdup(err);
			run[i].done = true;
			run[i].errfd = -1;
		}
	}
	for (i = 0; i < n; i++) {
		if (run[i].done)
			continue;
		if (spawn_finish(&reqs[i], run[i].pid, run[i].errfd, &run[i].pidfd,
		    err) == -1) {
			out[i].status = TURN_EXEC;
			out[i].stderr_tail = xstrdup(err);
			run[i].done = true;
			continue;
		}
		left++;
	}
	while (left > 0) {
		int64_t	now = now_ms(), wait = seed_deadline - now;
		size_t	np = 0;
		int	r;

		for (i = 0; i < n; i++) {
			if (run[i].done)
				continue;
			if (!run[i].timed_out && !run[i].killed) {
				if (now >= seed_deadline) {
					run[i].killed = true;
					*hung = true;
					kill(-run[i].pid, SIGKILL);
				} else if (now >= run[i].deadline) {
					run[i].timed_out = true;
					kill(-run[i].pid, SIGKILL);
				} else if (run[i].deadline - now < wait)
					wait = run[i].deadline - now;
			}
			pfd[np].fd = run[i].pidfd;
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
			np++;
		}
		if (wait < 0)
			wait = 0;
		if (*hung || wait > 60000)
			wait = *hung ? 1000 : 60000;
		r = poll(pfd, np, (int)wait);
		if (r == -1 && errno != EINTR) {
			log_warn("%s: poll", __func__);
			break;
		}
		for (i = 0; i < n; i++) {
			if (run[i].done)
				continue;
			if (waitpid(run[i].pid, &st, WNOHANG) != run[i].pid)
				continue;
			run[i].done = true;
			left--;
			out[i].duration_ms = now_ms() - run[i].start;
			/* Whatever it left behind in its group goes with it. */
			kill(-run[i].pid, SIGKILL);
			close(run[i].pidfd);
			if (run[i].killed) {
				out[i].status = TURN_KILLED;
				out[i].code = SIGKILL;
			} else if (run[i].timed_out) {
				out[i].status = TURN_TIMEOUT;
				out[i].code = SIGKILL;
			} else if (WIFSIGNALED(st)) {
				out[i].status = TURN_SIGNAL;
				out[i].code = WTERMSIG(st);
			} else {
				out[i].code = WEXITSTATUS(st);
				out[i].status = out[i].code == 0 ? TURN_OK :
				    out[i].code == 75 ? TURN_TEMPFAIL : TURN_ERROR;
			}
			out[i].stderr_tail = tail_of(reqs[i].stderr_path);
		}
	}
	free(run);
	free(pfd);
}

void
turn_outcome_clear(struct turn_outcome *t)
{
	if (t == NULL)
		return;
	free(t->stderr_tail);
	t->stderr_tail = NULL;
}
