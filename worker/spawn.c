/*
 * Starting and reaping the processes of the system under test: turns, the
 * setup command, services.  Children are waited on through pidfds in one
 * poll(2), so a batch of turns costs one syscall per event and the only
 * clock read is for deadlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/wrk.h"

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

/*
 * Turns are started with clone(CLONE_VM | CLONE_VFORK): the child borrows
 * our address space on a private stack, so there is no page-table copy
 * (fork of the worker, with libpq, nng and jansson mapped, costs more than
 * the exec that follows it on a small VM), and we are suspended until the
 * child has exec'd or _exit'ed.  glibc's posix_spawn works the same way
 * (sysdeps/unix/sysv/linux/spawni.c) but cannot set PR_SET_PDEATHSIG, so
 * this is the same recipe by hand.  Because the child shares our memory:
 *  - all signals are blocked around clone, so none of our handlers can run
 *    on the child's stack; the child resets every disposition to SIG_DFL
 *    and unblocks everything just before execve;
 *  - the child only makes plain system calls (their errno writes land in
 *    the suspended thread's errno, which we save and restore), never
 *    malloc or stdio;
 *  - an exec failure is reported by writing the errno and the failing
 *    step into struct child_args, which we read once clone returns: with
 *    CLONE_VFORK that write happens-before our return, so no pipe is
 *    needed.
 * CLONE_PIDFD hands us the pidfd atomically with the pid.
 *
 * Under AddressSanitizer the child would run instrumented code on a stack
 * ASan knows nothing about while sharing its thread state; there we use
 * fork instead, with the same child code.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_FORK	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_FORK	1
#endif
#endif

#define CHILD_STACK	(64 * 1024)	/* execvpe builds PATH candidates on it */

enum child_step { STEP_NONE, STEP_PDEATHSIG, STEP_LISTEN, STEP_STDIN, STEP_STDOUT,
	STEP_STDERR, STEP_CHDIR, STEP_EXEC };

static const char *const child_step_names[] = {
	[STEP_NONE] = "", [STEP_PDEATHSIG] = "the worker exited",
	[STEP_LISTEN] = "hand over its listening socket as fd 3",
	[STEP_STDIN] = "open /dev/null", [STEP_STDOUT] = "open its stdout file",
	[STEP_STDERR] = "open its stderr file", [STEP_CHDIR] = "chdir",
	[STEP_EXEC] = "exec",
};

struct child_args {
	const struct spawn_req	*req;
	pid_t			 parent;
	volatile int		 err;		/* written by the child */
	volatile int		 step;		/* enum child_step */
	int			 errfd;		/* fork only: err, step go here */
};

/* The kernel's struct sigaction, which rt_sigaction(2) takes. */
struct kernel_sigaction {
	void		(*handler)(int);
	unsigned long	  flags;
	void		(*restorer)(void);
	uint64_t	  mask;
};

/* Opens path onto fd; the opened descriptor has no O_CLOEXEC so that a
 * dup2 onto itself (fd 0..2 was closed) still leaves it open for exec. */
static int
child_redirect(const char *path, int flags, int target)
{
	int	fd;

	if ((fd = open(path, flags, 0644)) == -1)
		return -1;
	if (fd != target) {
		if (dup2(fd, target) == -1)
			return -1;
		close(fd);
	}
	return 0;
}

/*
 * Socket activation, in the child: the socket onto fd 3 without
 * FD_CLOEXEC, and our pid into the LISTEN_PID=... string (no stdio here).
 * First of the descriptor steps, so that a socket on 0..2 (the worker
 * started with one closed) is moved before the redirections take it.
 */
static int
child_listen(const struct spawn_req *req)
{
	char	digits[24], *p;
	size_t	n = 0;
	long	pid;

	if (req->listen_fd == 3) {
		if (fcntl(3, F_SETFD, 0) == -1)
			return -1;
	} else if (dup2(req->listen_fd, 3) == -1)	/* dup2 clears FD_CLOEXEC */
		return -1;
	pid = syscall(SYS_getpid);	/* ours, not the worker's (no cache) */
	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0 && n < sizeof(digits));
	/* With CLONE_VM this writes the worker's copy of the string, which
	 * is this spawn's alone. */
	for (p = req->listen_pid + sizeof("LISTEN_PID=") - 1; n > 0; )
		*p++ = digits[--n];
	*p = '\0';
	return 0;
}

/* In the child: only plain system calls until execve. */
static int
child_main(void *arg)
{
	struct child_args	*a = arg;
	const struct spawn_req	*req = a->req;
	struct kernel_sigaction	 dfl = { .handler = SIG_DFL };
	int			 sig;

	setpgid(0, 0);
	a->step = STEP_PDEATHSIG;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != a->parent) {	/* the worker died before prctl */
		errno = ESRCH;
		goto fail;
	}
	/* Our handlers live in memory the child shares: none may run here
	 * or after exec.  SIG_IGN (SIGPIPE in the worker, or whatever the
	 * worker inherited) would survive exec.  The raw system call, because
	 * libc refuses the signals it reserves (32, 33). */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(uint64_t));
	a->step = STEP_LISTEN;
	if (req->listen_pid != NULL && child_listen(req) == -1)
		goto fail;
	a->step = STEP_STDIN;
	if (child_redirect("/dev/null", O_RDONLY, 0) == -1)
		goto fail;
	a->step = STEP_STDOUT;
	if (req->stdout_path &&
	    child_redirect(req->stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 1) == -1)
		goto fail;
	a->step = STEP_STDERR;
	if (req->stderr_path &&
	    child_redirect(req->stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 2) == -1)
		goto fail;
	a->step = STEP_CHDIR;
	if (req->dir && chdir(req->dir) == -1)
		goto fail;
	a->step = STEP_EXEC;
	/* The raw call again: libc's (and ASan's interceptor) may keep some
	 * signals blocked, and a blocked mask survives exec. */
	{
		uint64_t	none = 0;

		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	}
	execvpe(req->argv[0], req->argv, req->envp);
fail:
	a->err = errno;
	if (a->errfd != -1) {
		int	v[2] = { a->err, a->step };

		(void)!write(a->errfd, v, sizeof(v));
	}
	_exit(127);
}

static void
spawn_error(const struct spawn_req *req, const struct child_args *a, char *err)
{
	if (a->step == STEP_EXEC)
		errf(err, "cannot run \"%s\"%s%s: %s", req->argv[0],
		    req->dir ? " in " : "", req->dir ? req->dir : "", strerror(a->err));
	else if (a->step == STEP_CHDIR)
		errf(err, "cannot run \"%s\": chdir %s: %s", req->argv[0],
		    req->dir, strerror(a->err));
	else if (a->step == STEP_STDOUT || a->step == STEP_STDERR)
		errf(err, "cannot run \"%s\": %s %s: %s", req->argv[0],
		    child_step_names[a->step],
		    a->step == STEP_STDOUT ? req->stdout_path : req->stderr_path,
		    strerror(a->err));
	else
		errf(err, "cannot run \"%s\": %s: %s", req->argv[0],
		    child_step_names[a->step], strerror(a->err));
}

#ifdef SPAWN_FORK
static pid_t
start_child(struct child_args *a, int *pidfdp)
{
	pid_t	pid;
	int	p[2], v[2];
	ssize_t	n;

	/* fork does not share memory: the child's err and step come back
	 * through a close-on-exec pipe (EOF: it exec'd). */
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	a->errfd = p[1];
	if ((pid = fork()) == 0) {
		close(p[0]);
		child_main(a);
	}
	close(p[1]);
	a->errfd = -1;
	if (pid == -1) {
		close(p[0]);
		return -1;
	}
	do
		n = read(p[0], v, sizeof(v));
	while (n == -1 && errno == EINTR);
	close(p[0]);
	if (n == sizeof(v)) {
		a->err = v[0];
		a->step = v[1];
	}
	*pidfdp = (int)syscall(SYS_pidfd_open, pid, 0);
	return pid;
}
#else
/*
 * The child's stack is kept per thread and reused: CLONE_VFORK suspends
 * this thread until the child has left it, and a munmap per turn would
 * cost a TLB shootdown across the worker's threads.  It grows (never
 * shrinks) to fit the largest argv seen.
 */
static __thread void	*child_stack;
static __thread size_t	 child_stack_size;

static pid_t
start_child(struct child_args *a, int *pidfdp)
{
	size_t	page = (size_t)sysconf(_SC_PAGESIZE), need;
	void	*stack;

	/* Room for execvpe's script fallback, which copies argv on the stack. */
	need = CHILD_STACK + (strv_len(a->req->argv) + 2) * sizeof(char *);
	need = (need + page - 1) / page * page;
	if (need > child_stack_size) {
		stack = mmap(NULL, need, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			return -1;
		if (child_stack)
			munmap(child_stack, child_stack_size);
		child_stack = stack;
		child_stack_size = need;
	}
	*pidfdp = -1;
	/* The stack grows down on every architecture we build for. */
	return clone(child_main, (char *)child_stack + child_stack_size,
	    CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, a, (pid_t *)pidfdp);
}
#endif

/*
 * Starts one child; when this returns it has exec'd (or failed to), and
 * *exec_errno (may be NULL) says execve's errno, 0 if it got that far.
 */
static int
spawn_one(const struct spawn_req *req, pid_t *pidp, int *pidfdp, int *exec_errno,
    char *err)
{
	struct child_args	a = { .req = req, .parent = getpid(), .errfd = -1 };
	uint64_t		all = ~(uint64_t)0, old;
	pid_t			pid;
	int			pidfd = -1, e, saved = errno;

	/* The raw call, as glibc's posix_spawn does: pthread_sigmask leaves
	 * libc's own signals (32, 33) unblocked. */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all));
	pid = start_child(&a, &pidfd);
	e = errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	if (pid == -1)
		return errf(err, "cannot start %s: clone: %s", req->argv[0], strerror(e));
	errno = saved;	/* the child's calls wrote into our errno */
	if (exec_errno != NULL)
		*exec_errno = a.err != 0 && a.step == STEP_EXEC ? a.err : 0;
	if (a.err != 0) {
		spawn_error(req, &a, err);
		goto fail;
	}
	if (pidfd == -1) {
		errf(err, "pidfd_open: %s (Linux 5.3 or later is required)", strerror(e));
		kill(-pid, SIGKILL);
		goto fail;
	}
	*pidp = pid;
	*pidfdp = pidfd;
	return 0;
fail:
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	if (pidfd != -1)
		close(pidfd);
	return -1;
}

int
wrk_spawn(const struct spawn_req *req, pid_t *pidp, int *pidfdp, int *exec_errno,
    char *err)
{
	return spawn_one(req, pidp, pidfdp, exec_errno, err);
}

static char *
tail_of(const char *path, const struct scrub *sc)
{
	size_t		 margin = scrub_reach(sc), want = TURN_TAIL_MAX + margin, len;
	char		*buf = xcalloc(1, want + 1), *tail;
	struct stat	 sb;
	ssize_t		 n;
	off_t		 size;
	int		 fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		free(buf);
		return xstrdup("");
	}
	size = fstat(fd, &sb) == 0 ? sb.st_size : 0;
	n = size == 0 ? 0 : pread(fd, buf, want,
	    size > (off_t)want ? size - (off_t)want : 0);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	/* Output may hold anything; the report wants valid UTF-8 text.  A
	 * multi-byte character cut at the start of the tail becomes '?'. */
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t')
			buf[i] = '?';
	scrub_text(sc, buf);
	len = strlen(buf);
	tail = len > TURN_TAIL_MAX ? buf + len - TURN_TAIL_MAX : buf;
	utf8_scrub(tail, strlen(tail));
	tail = xstrdup(tail);
	free(buf);
	return tail;
}

struct running {
	pid_t	pid;
	int	pidfd;
	int64_t	start, deadline;
	bool	timed_out, killed, done;
};

/* Reaps run[i], which has exited, and fills out[i]. */
static void
reap(const struct spawn_req *req, struct running *r, int st, struct turn_outcome *out)
{
	r->done = true;
	out->start_ms = r->start;
	out->end_ms = now_ms();
	out->duration_ms = out->end_ms - r->start;
	/* Whatever it left behind in its group goes with it. */
	kill(-r->pid, SIGKILL);
	close(r->pidfd);
	if (r->killed) {
		out->status = TURN_KILLED;
		out->code = SIGKILL;
	} else if (r->timed_out) {
		out->status = TURN_TIMEOUT;
		out->code = SIGKILL;
	} else if (WIFSIGNALED(st)) {
		out->status = TURN_SIGNAL;
		out->code = WTERMSIG(st);
	} else {
		out->code = WEXITSTATUS(st);
		out->status = out->code == 0 ? TURN_OK :
		    out->code == 75 ? TURN_TEMPFAIL : TURN_ERROR;
	}
	out->stdout_tail = tail_of(req->stdout_path, req->scrub);
	out->stderr_tail = tail_of(req->stderr_path, req->scrub);
}

void
wrk_run_batch(const struct spawn_req *reqs, size_t n, int64_t timeout_ms,
    int64_t seed_deadline, struct turn_outcome *out, bool *hung)
{
	struct running	*run = xcalloc(n, sizeof(*run));
	struct pollfd	*pfd = xcalloc(n, sizeof(*pfd));
	size_t		*idx = xcalloc(n, sizeof(*idx));
	char		 err[ERR_LEN];
	size_t		 i, k, left = 0;
	int		 st;

	*hung = false;
	for (i = 0; i < n; i++) {
		out[i].status = TURN_OK;
		out[i].code = 0;
		out[i].exec_errno = 0;
		run[i].start = now_ms();
		run[i].deadline = run[i].start + timeout_ms;
		run[i].pidfd = -1;
		if (spawn_one(&reqs[i], &run[i].pid, &run[i].pidfd,
		    &out[i].exec_errno, err) == -1) {
			out[i].status = TURN_EXEC;
			out[i].start_ms = out[i].end_ms = run[i].start;
			out[i].stdout_tail = xstrdup("");
			out[i].stderr_tail = xstrdup(err);
			run[i].done = true;
			if (reqs[i].ended != NULL)
				reqs[i].ended(reqs[i].ended_arg);
			continue;
		}
		if (reqs[i].started != NULL)
			reqs[i].started(reqs[i].ended_arg, run[i].pid);
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
			idx[np++] = i;
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
		/* Only a readable pidfd has a zombie behind it. */
		for (k = 0; r > 0 && k < np; k++) {
			i = idx[k];
			if (pfd[k].revents == 0 ||
			    waitpid(run[i].pid, &st, WNOHANG) != run[i].pid)
				continue;
			reap(&reqs[i], &run[i], st, &out[i]);
			if (reqs[i].ended != NULL)
				reqs[i].ended(reqs[i].ended_arg);
			left--;
		}
	}
	free(run);
	free(pfd);
	free(idx);
}

void
turn_outcome_clear(struct turn_outcome *t)
{
	if (t == NULL)
		return;
	free(t->stdout_tail);
	free(t->stderr_tail);
	t->stdout_tail = t->stderr_tail = NULL;
}
