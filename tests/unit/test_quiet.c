/*
 * Quiescence from /proc (fault-proxy/quiet.c) on real processes and real
 * sockets: Python threads blocked reading sockets to "soak's" listener are
 * quiet, and their ports are the ones the listener accepted; a byte sent
 * to one wakes it (running, then its sleep: timed); a busy loop runs; a
 * socket to a listener that is not soak's is unseen; select with a timeout
 * is timed; bash waiting on its child that waits on soak's socket is
 * quiet; Node's Promise.all over sockets, with no timer, is quiet; a group
 * whose processes are gone is gone; a child that left the group after a
 * look read it is not the group's, and a thread made after one is no
 * process of its own.  All of it twice: sockets asked of a
 * copy of their descriptor (pidfd_getfd), then read from /proc/net/tcp
 * (where the copy is refused).  Each look that must reach a state is
 * retried until it does, under an alarm(2) watchdog that names it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "fault-proxy/quiet.h"

#define WATCHDOG_S	30
#define PY		"/usr/bin/python3"

struct lsock {
	int		fd;
	uint16_t	port;
};

/* ours: the listener the test calls soak's, and the port of a connection
 * it calls soak's own to the group (a front's upstream socket) */
static uint16_t	ours_port, up_port;

static enum quiet_peer
ours(void *arg, uint32_t addr, uint16_t port)
{
	(void)arg;
	if (addr != INADDR_LOOPBACK)
		return QUIET_PEER_NONE;
	if (port == ours_port)
		return QUIET_PEER_LISTENER;
	return up_port != 0 && port == up_port ? QUIET_PEER_UPSTREAM :
	    QUIET_PEER_NONE;
}

/* the second pass: sockets from /proc/net/tcp, as where pidfd_getfd is
 * refused */
static bool	table_only;

static struct quiet *
qnew(void)
{
	struct quiet	*q = quiet_new(ours, NULL);

	if (table_only)
		quiet_table_only(q);
	return q;
}

static struct lsock
listen_any(void)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sa);
	struct lsock		l;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l.fd >= 0);
	assert_int_equal(bind(l.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l.fd, 16), 0);
	assert_int_equal(getsockname(l.fd, (struct sockaddr *)&sa, &len), 0);
	l.port = ntohs(sa.sin_port);
	return l;
}

/* Accepts one connection; its peer port into *peer. */
static int
accept_one(struct lsock *l, uint16_t *peer)
{
	struct sockaddr_in	sa;
	socklen_t		len = sizeof(sa);
	int			fd;

	fd = accept(l->fd, (struct sockaddr *)&sa, &len);
	assert_true(fd >= 0);
	if (peer != NULL)
		*peer = ntohs(sa.sin_port);
	return fd;
}

/* Starts argv in a process group of its own; its pid (= the group). */
static pid_t
start(char *const argv[])
{
	pid_t	pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	return pid;
}

static void
stop(pid_t pid)
{
	kill(-pid, SIGKILL);
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
}

static const char	*waiting_for = "nothing";

static void
on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "watchdog: still waiting for %s after %d s\n",
	    waiting_for, WATCHDOG_S);
	_exit(1);
}

/*
 * Looks until the group is in state want with at least min_threads
 * threads (other states are passed over while the processes get there):
 * the state is the processes' to reach, the watchdog the bound.  Between
 * two looks the thread yields its core to them, no clock.
 */
static void
look_until_n(struct quiet *q, pid_t pg, enum quiet_st want, int min_threads,
    struct quiet_res *r, const char *what)
{
	waiting_for = what;
	for (;;) {
		quiet_begin(q);
		quiet_look(q, pg, r);
		if (r->st == want && r->nthreads >= min_threads)
			break;
		sched_yield();
	}
	waiting_for = "nothing";
}

static void
look_until(struct quiet *q, pid_t pg, enum quiet_st want, struct quiet_res *r,
    const char *what)
{
	look_until_n(q, pg, want, 0, r, what);
}

static bool
has_port(const struct quiet_res *r, uint16_t port)
{
	size_t	i;

	for (i = 0; i < r->nports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

static int
setup(void **state)
{
	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(WATCHDOG_S);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

/*
 * A process that takes its own group after a scan saw it in another, with
 * no pid made since (so last_pid does not move): the group is found, not
 * gone.  The scan a look keeps is older than the group; a look that finds
 * the group empty while it has a process scans afresh.
 */
static void
test_group_after_scan(void **state)
{
	struct quiet	*q = qnew();
	struct quiet_res r;
	int		 go[2], done[2];
	char		 b = 0;
	pid_t		 pid;

	(void)state;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	if ((pid = fork()) == 0) {
		/* gone with the test, even one that failed before its kill */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		setpgid(0, 0);
		if (write(done[1], &b, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	quiet_begin(q);
	quiet_look(q, pid, &r);		/* in the test's group yet */
	assert_int_equal(r.st, QUIET_GONE);
	assert_int_equal(r.nprocs, 0);
	assert_int_equal(write(go[1], &b, 1), 1);
	assert_int_equal(read(done[0], &b, 1), 1);
	quiet_begin(q);
	quiet_look(q, pid, &r);
	assert_int_equal(r.nprocs, 1);
	assert_int_not_equal(r.st, QUIET_GONE);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	close(go[0]), close(go[1]), close(done[0]), close(done[1]);
	quiet_free(q);
}

/* A connection to 127.0.0.1:port, or _exit in a child. */
static int
dial(uint16_t port)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	int			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		_exit(1);
	return fd;
}

/*
 * A process that leaves the group after a look read it there, with no pid
 * made since (so no scan reads it again): a child in recv, then in a
 * session of its own, busy.  The group is its leader alone, quiet in
 * recv; the child that left is no part of it (quiet.c proc_in_group).
 */
static void
test_left_group(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	int		 dialed[2], left[2], fc, fl;
	char		 b = 0;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	assert_int_equal(pipe(dialed), 0);
	assert_int_equal(pipe(left), 0);
	if ((pg = fork()) == 0) {
		int	s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			s = dial(l.port);
			if (write(dialed[1], &b, 1) != 1 || recv(s, &b, 1, 0) != 1)
				_exit(1);
			setsid();
			if (write(left[1], &b, 1) != 1)
				_exit(1);
			for (;;)
				;	/* running, in a group not the turn's */
		}
		if (read(dialed[0], &b, 1) != 1)	/* the child's first */
			_exit(1);
		s = dial(l.port);
		(void)recv(s, &b, 1, 0);
		_exit(0);
	}
	assert_true(pg > 0);
	setpgid(pg, pg);
	fc = accept_one(&l, NULL);	/* the child's, dialled first */
	fl = accept_one(&l, NULL);
	look_until(q, pg, QUIET_QUIET, &r, "the leader and its child in recv");
	assert_int_equal(r.nprocs, 2);
	assert_int_equal(write(fc, "x", 1), 1);
	assert_int_equal(read(left[0], &b, 1), 1);
	quiet_begin(q);
	quiet_look(q, pg, &r);
	assert_int_equal(r.nprocs, 1);
	assert_int_equal(r.st, QUIET_QUIET);
	stop(pg);		/* and the child with it (its death signal) */
	close(fc), close(fl), close(l.fd);
	close(dialed[0]), close(dialed[1]), close(left[0]), close(left[1]);
	quiet_free(q);
}

static void *
dial_and_recv(void *arg)
{
	char	b;
	int	s = dial(*(uint16_t *)arg);

	(void)recv(s, &b, 1, 0);
	return NULL;
}

/*
 * A thread made after a look read the process: its tid is a pid the
 * system made since, and the next scan reads it (quiet.c proc_new) as a
 * thread of the process, not a process of its own.
 */
static void
test_thread_after_scan(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	int		 fm, ft;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	if ((pg = fork()) == 0) {
		pthread_t	th;
		char		b;
		int		s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		s = dial(l.port);
		if (recv(s, &b, 1, 0) != 1 ||
		    pthread_create(&th, NULL, dial_and_recv, &l.port) != 0)
			_exit(1);
		(void)recv(s, &b, 1, 0);
		_exit(0);
	}
	assert_true(pg > 0);
	setpgid(pg, pg);
	fm = accept_one(&l, NULL);
	look_until(q, pg, QUIET_QUIET, &r, "one thread in recv");
	assert_int_equal(r.nthreads, 1);
	assert_int_equal(write(fm, "x", 1), 1);
	ft = accept_one(&l, NULL);
	look_until_n(q, pg, QUIET_QUIET, 2, &r, "two threads in recv");
	assert_int_equal(r.nprocs, 1);
	assert_int_equal(r.nthreads, 2);
	stop(pg);
	close(fm), close(ft), close(l.fd);
	quiet_free(q);
}

/*
 * Three threads, each blocked in recv on a connection to soak's listener:
 * quiet, with exactly those three ports; one woken by a byte then sleeps
 * (timed: "sleeping"); a busy thread is running.
 */
static void
test_python_threads(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 port[16], prog[1024];
	uint16_t	 peer[3];
	int		 fd[3], i;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(port, sizeof(port), "%u", l.port);
	snprintf(prog, sizeof(prog),
	    "import socket, threading, time, sys\n"
	    "def one():\n"
	    "    s = socket.create_connection(('127.0.0.1', %s))\n"
	    "    s.recv(1)\n"
	    "    time.sleep(60)\n"
	    "ts = [threading.Thread(target=one) for _ in range(3)]\n"
	    "[t.start() for t in ts]\n"
	    "[t.join() for t in ts]\n", port);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	for (i = 0; i < 3; i++)
		fd[i] = accept_one(&l, &peer[i]);
	look_until(q, pg, QUIET_QUIET, &r, "three Python threads blocked in recv");
	assert_int_equal(r.nports, 3);
	for (i = 0; i < 3; i++)
		assert_true(has_port(&r, peer[i]));
	assert_int_equal(r.nprocs, 1);
	assert_int_equal(r.nthreads, 4);	/* the main thread joins */
	/* one thread woken: it sleeps, which ends by itself */
	assert_int_equal(write(fd[1], "x", 1), 1);
	look_until(q, pg, QUIET_TIMED, &r, "a woken thread's sleep");
	assert_string_equal(r.what, "sleeping");
	stop(pg);
	look_until(q, pg, QUIET_GONE, &r, "the group to be gone");
	for (i = 0; i < 3; i++)
		close(fd[i]);
	close(l.fd);
	quiet_free(q);
}

/* A thread that computes runs; one on a socket not soak's is unseen. */
static void
test_running_and_foreign(void **state)
{
	struct lsock	 l = listen_any(), other = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 prog[1024];
	int		 fd;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(prog, sizeof(prog),
	    "import socket\n"
	    "s = socket.create_connection(('127.0.0.1', %u))\n"
	    "s.recv(1)\n"
	    "while True: pass\n", other.port);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	fd = accept_one(&other, NULL);
	look_until(q, pg, QUIET_UNSEEN, &r, "a recv on a listener not soak's");
	assert_non_null(strstr(r.what, "a socket to 127.0.0.1:"));
	assert_int_equal(r.nports, 0);
	assert_int_equal(write(fd, "x", 1), 1);
	look_until(q, pg, QUIET_RUNNING, &r, "a busy loop");
	assert_int_equal(r.tid, pg);	/* the main thread, the one that runs */
	stop(pg);
	close(fd);
	close(l.fd);
	close(other.fd);
	quiet_free(q);
}

/* Whether pid's main thread is asleep in an epoll wait (/proc/PID/syscall
 * and its state). */
static bool
in_epoll_wait(pid_t pid)
{
	char	 path[64], buf[256], st = 0, *p;
	long	 nr = -1;
	FILE	*f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL)
		st = p[2];
	fclose(f);
	return st == 'S' && (nr == SYS_epoll_wait || nr == SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
	    || nr == SYS_epoll_pwait2
#endif
	    );
}

/*
 * A byte unread in a socket a thread waits on is running, whatever the
 * thread's state: an edge-triggered epoll that has told of the byte once
 * blocks again with the byte still unread (the state a reply is in between
 * its arrival and the reader's wake-up, held still).  The program says it
 * is past its first wait by connecting again; once it sleeps in the second,
 * one look must say running.
 */
static void
test_unread_in_epoll(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 prog[1024];
	int		 fd, fd2;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(prog, sizeof(prog),
	    "import socket, select\n"
	    "s = socket.create_connection(('127.0.0.1', %u))\n"
	    "ep = select.epoll()\n"
	    "ep.register(s.fileno(), select.EPOLLIN | select.EPOLLET)\n"
	    "ep.poll()\n"
	    "t = socket.create_connection(('127.0.0.1', %u))\n"
	    "ep.poll()\n", l.port, l.port);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	fd = accept_one(&l, NULL);
	look_until(q, pg, QUIET_QUIET, &r, "an epoll_wait on soak's socket");
	assert_int_equal(r.nports, 1);
	assert_int_equal(write(fd, "x", 1), 1);
	fd2 = accept_one(&l, NULL);	/* past its first wait */
	waiting_for = "the program asleep in its second epoll_wait";
	while (!in_epoll_wait(pg))
		sched_yield();	/* its state, looked at again; no clock */
	waiting_for = "nothing";
	quiet_begin(q);
	quiet_look(q, pg, &r);
	assert_string_equal(quiet_st_name(r.st), "running");
	stop(pg);
	close(fd);
	close(fd2);
	close(l.fd);
	quiet_free(q);
}

/* select with a timeout ends by itself; a byte pending in the socket a
 * poll watches is running, whatever the thread's state. */
static void
test_timed_select(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 prog[1024];
	int		 fd;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(prog, sizeof(prog),
	    "import socket, select\n"
	    "s = socket.create_connection(('127.0.0.1', %u))\n"
	    "while True: select.select([s], [], [], 0.5)\n", l.port);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	fd = accept_one(&l, NULL);
	look_until(q, pg, QUIET_TIMED, &r, "select with a 0.5 s timeout");
	assert_non_null(strstr(r.what, "timeout"));
	assert_true(r.timed_socks);
	assert_false(r.timed_listen);	/* a connection's, not an accept loop */
	stop(pg);
	close(fd);
	close(l.fd);
	quiet_free(q);
}

/* bash waits on its child (wait4), which waits on soak's socket: the
 * group of both is quiet; after the child, bash reads a pipe no one
 * writes — still the group's own — and is quiet too. */
static void
test_bash_and_child(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 script[1024];
	uint16_t	 peer;
	int		 fd;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(script, sizeof(script),
	    PY " -c \"import socket; socket.create_connection(('127.0.0.1', %u))"
	    ".recv(1)\"; echo done", l.port);
	pg = start((char *[]){ "/bin/bash", "-c", script, NULL });
	fd = accept_one(&l, &peer);
	look_until(q, pg, QUIET_QUIET, &r, "bash in wait4 and its child in recv");
	assert_int_equal(r.nprocs, 2);
	assert_int_equal(r.nports, 1);
	assert_int_equal(r.ports[0], peer);
	close(fd);		/* the child's recv returns, it exits, bash too */
	look_until(q, pg, QUIET_GONE, &r, "bash and its child to exit");
	waitpid(pg, NULL, 0);
	close(l.fd);
	quiet_free(q);
}

/* Node: three sockets read at once (Promise.all), no timer pending: its
 * epoll wait has no timeout, and every fd in it is soak's or its own
 * wake-up: quiet.  A pending setTimeout makes it timed. */
static void
test_node_promise_all(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 prog[1024];
	uint16_t	 peer[3];
	int		 fd[3], i;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(prog, sizeof(prog),
	    "const net = require('net');\n"
	    "const one = () => new Promise(ok => {\n"
	    "  const s = net.connect(%u, '127.0.0.1');\n"
	    "  s.once('data', () => { setTimeout(() => {}, 60000); ok(); });\n"
	    "});\n"
	    "Promise.all([one(), one(), one()]);\n", l.port);
	pg = start((char *[]){ "/usr/bin/node", "-e", prog, NULL });
	for (i = 0; i < 3; i++)
		fd[i] = accept_one(&l, &peer[i]);
	look_until(q, pg, QUIET_QUIET, &r, "node waiting on three sockets");
	assert_int_equal(r.nports, 3);
	for (i = 0; i < 3; i++)
		assert_true(has_port(&r, peer[i]));
	assert_int_equal(write(fd[0], "x", 1), 1);
	look_until(q, pg, QUIET_TIMED, &r, "node with a timer pending");
	stop(pg);
	for (i = 0; i < 3; i++)
		close(fd[i]);
	close(l.fd);
	quiet_free(q);
}

/*
 * A tool server as Python's http.server writes one: serve_forever polls
 * its listening socket every 0.5 s, a handler thread reads a request on a
 * connection soak made to it (a front's upstream socket).  Waiting so, it
 * is timed only by an accept loop's timeout (timed_listen: a service
 * counts as quiet with it), and the connection soak made is soak's (not a
 * foreign socket), kept out of ports[]; a connection from anyone else
 * makes it unseen.
 */
static void
test_accept_loop(void **state)
{
	struct quiet	*q = qnew();
	struct quiet_res r;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t	 len = sizeof(sa);
	char		 prog[1024], port_s[16];
	int		 p[2], fd;
	ssize_t		 n;
	pid_t		 pg;

	(void)state;
	assert_int_equal(pipe(p), 0);
	snprintf(prog, sizeof(prog),
	    "import os, sys, http.server\n"
	    "class H(http.server.BaseHTTPRequestHandler):\n"
	    "    protocol_version = 'HTTP/1.1'\n"
	    "    def do_GET(self):\n"
	    "        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()\n"
	    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
	    "os.write(%d, b'%%d\\n' %% s.server_address[1])\n"
	    "s.serve_forever()\n", p[1]);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	close(p[1]);
	n = read(p[0], port_s, sizeof(port_s) - 1);
	assert_true(n > 0);
	port_s[n] = '\0';
	close(p[0]);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)atoi(port_s));
	look_until(q, pg, QUIET_TIMED, &r, "serve_forever's poll with no connection");
	assert_true(r.timed_listen);
	/* a keep-alive connection of soak's: its handler thread reads it */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	up_port = ntohs(sa.sin_port);
	look_until_n(q, pg, QUIET_TIMED, 2, &r,
	    "a handler thread reading soak's connection");
	assert_int_equal(r.st, QUIET_TIMED);
	assert_true(r.timed_listen);
	assert_int_equal(r.nports, 0);
	/* the same connection, not soak's: a wait soak cannot see the end of */
	up_port = 0;
	look_until(q, pg, QUIET_UNSEEN, &r, "a handler thread reading a foreign connection");
	assert_false(r.timed_listen);
	stop(pg);
	close(fd);
	quiet_free(q);
}

/*
 * curl's way: a poll on its connection to soak and on a socketpair of its
 * own (its multi handle's wake-up).  The pair's peer is the group's (its
 * SO_PEERCRED): as a pipe, quiet.  Where descriptors cannot be copied,
 * no unix socket is looked into: a wait soak cannot see the end of.
 */
static void
test_own_socketpair(void **state)
{
	struct lsock	 l = listen_any();
	struct quiet	*q = qnew();
	struct quiet_res r;
	char		 prog[1024];
	int		 fd;
	pid_t		 pg;

	(void)state;
	ours_port = l.port;
	snprintf(prog, sizeof(prog),
	    "import os, socket, select\n"
	    "s = socket.create_connection(('127.0.0.1', %u))\n"
	    "a, b = socket.socketpair()\n"
	    "p = select.poll(); p.register(s, select.POLLIN); p.register(a, select.POLLIN)\n"
	    "p.poll()\n"
	    "a.recv(1)\n"
	    "p.poll()\n", l.port);
	pg = start((char *[]){ PY, "-c", prog, NULL });
	fd = accept_one(&l, NULL);
	look_until(q, pg, table_only ? QUIET_UNSEEN : QUIET_QUIET, &r,
	    "a poll on soak's socket and its own socketpair");
	if (!table_only)
		assert_int_equal(r.nports, 1);
	else
		assert_non_null(strstr(r.what, "not TCP"));
	stop(pg);
	close(fd);
	close(l.fd);
	quiet_free(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_after_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_after_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_python_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_running_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timed_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unread_in_epoll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bash_and_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_promise_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_socketpair, setup, teardown),
	};

	int	failed;

	failed = cmocka_run_group_tests_name("sockets asked of their descriptor",
	    tests, NULL, NULL);
	table_only = true;
	return failed + cmocka_run_group_tests_name("sockets read from "
	    "/proc/net/tcp", tests, NULL, NULL);
}
