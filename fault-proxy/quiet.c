/*
 * Whether a process group can still send by itself (quiet.h): its threads'
 * states and system calls read from /proc, the sockets they wait on asked
 * of a copy of the descriptor (pidfd_getfd), or where that is refused
 * looked up in /proc/net/tcp.
 */
#include <sys/types.h>
#include <sys/syscall.h>

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "fault-proxy/quiet.h"

#define POLL_FDS_MAX	256	/* a poll array read from the process */
#define SELECT_FDS_MAX	1024	/* FD_SETSIZE */
#define EPOLL_FDS_MAX	256
#define SNAP_MAX	512	/* threads of a group compared between looks */

/* A thread as one look saw it: who, and how long it had run. */
struct tsnap {
	pid_t		tid;
	uint64_t	run_ns;
};

static const char *const quiet_st_names[QUIET_MAX] = {
	[QUIET_GONE] = "gone", [QUIET_QUIET] = "quiet",
	[QUIET_RUNNING] = "running", [QUIET_TIMED] = "timed",
	[QUIET_UNSEEN] = "unseen",
};

const char *
quiet_st_name(enum quiet_st st)
{
	return st < QUIET_MAX ? quiet_st_names[st] : "?";
}

/* One socket of /proc/net/tcp{,6}. */
struct tsock {
	unsigned long	 inode;
	uint32_t	 raddr;		/* host order; 0 for a v6 peer */
	uint16_t	 lport, rport;
	uint32_t	 rxq;
	bool		 listen;
};

/* A process of the system and its group, from the last scan. */
struct proc {
	pid_t	pid, pgrp;
};

/* scan_procs: pids made since the last scan read one by one, up to this
 * many at a time and this many times between two whole scans */
#define SCAN_STEP_MAX	256
#define SCAN_STEPS_MAX	64
/* ... and a pid of theirs not in /proc yet (forked, not yet shown) read
 * again at the next looks, this many of them, this many looks each */
#define SCAN_LATE_MAX	32
#define SCAN_LATE_TRIES	4

struct quiet {
	quiet_ours_fn	 ours;
	void		*arg;
	/* the processes, sorted by pid: a whole scan of /proc, then the pids
	 * made since, when last_pid moves (scan_procs) */
	struct proc	*procs;
	size_t		 nprocs, capprocs;
	long		 last_pid;
	bool		 scanned;
	int		 steps;		/* since the last whole scan */
	pid_t		 late[SCAN_LATE_MAX];
	int		 late_tries[SCAN_LATE_MAX];
	size_t		 nlate;
	/* this look's sockets, sorted by inode; read at the first need */
	struct tsock	*socks;
	size_t		 nsocks, capsocks;
	bool		 socks_read;
	struct tsock	 one;		/* a socket asked of its descriptor */
	bool		 no_getfd;	/* pidfd_getfd refused: the table */
	/* the two looks' threads (quiet_look) */
	struct tsnap	 snap[2][SNAP_MAX];
	size_t		 nsnap[2];
	bool		 snap_cut;
	uint64_t	 origin;	/* the thread being looked at's, for add_port */
	bool		 tsock;		/* its wait is timed only by its own
					   timeout, on fds that are quiet */
	bool		 nonlisten;	/* the thread's wait has an fd that is
					   not a listening socket */
	pid_t		 pgid;		/* the group being looked at */
	bool		 tepoll;	/* the thread's timed wait is an epoll's */
};

/* One thread's verdict as it is folded into the group's. */
struct tlook {
	enum quiet_st	 st;
	char		 what[96];
};

struct quiet *
quiet_new(quiet_ours_fn ours, void *arg)
{
	struct quiet	*q = xcalloc(1, sizeof(*q));

	q->ours = ours;
	q->arg = arg;
	q->last_pid = -1;
	return q;
}

void
quiet_free(struct quiet *q)
{
	if (q == NULL)
		return;
	free(q->procs);
	free(q->socks);
	free(q);
}

void
quiet_table_only(struct quiet *q)
{
	q->no_getfd = true;
}

void
quiet_begin(struct quiet *q)
{
	q->socks_read = false;
}

/* The fields of a stat line after "pid (comm) ": state, ppid, pgrp. */
static int
stat_fields(const char *line, char *state, pid_t *pgrp)
{
	const char	*p = strrchr(line, ')');
	long		 ppid, pg;

	if (p == NULL || sscanf(p + 1, " %c %ld %ld", state, &ppid, &pg) != 3)
		return -1;
	if (pgrp != NULL)
		*pgrp = (pid_t)pg;
	return 0;
}

static int
by_pid(const void *a, const void *b)
{
	const struct proc	*x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The system's last pid (/proc/loadavg's last field), or -1. */
static long
last_pid(void)
{
	char	 buf[128];
	char	*sp;

	if (read_small("/proc/loadavg", buf, sizeof(buf)) <= 0 ||
	    (sp = strrchr(buf, ' ')) == NULL)
		return -1;
	return strtol(sp + 1, NULL, 10);
}

static void
proc_push(struct quiet *q, pid_t pid, pid_t pgrp)
{
	if (q->nprocs == q->capprocs) {
		q->capprocs = q->capprocs ? q->capprocs * 2 : 256;
		q->procs = xreallocarray(q->procs, q->capprocs, sizeof(*q->procs));
	}
	q->procs[q->nprocs++] = (struct proc){ pid, pgrp };
}

/*
 * Pid n, made since the last scan: a process (not another's thread: its
 * Tgid is itself) with its group, 1 (or already among the first nsorted,
 * which are sorted); not in /proc, 0 (gone, or not shown yet); a thread,
 * -1.
 */
static int
proc_new(struct quiet *q, size_t nsorted, pid_t n)
{
	char		 path[64], buf[1024], st;
	const char	*t;
	pid_t		 pg;
	struct proc	 key = { n, 0 };

	/* a whole scan reads processes made while it ran, past its last_pid */
	if (bsearch(&key, q->procs, nsorted, sizeof(*q->procs), by_pid) != NULL)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)n);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	if ((t = strstr(buf, "\nTgid:")) == NULL || atol(t + 6) != (long)n)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)n);
	if (read_small(path, buf, sizeof(buf)) <= 0 ||
	    stat_fields(buf, &st, &pg) == -1)
		return 0;
	proc_push(q, n, pg);
	return 1;
}

/* A pid made since the last scan that /proc did not show yet. */
static void
late_add(struct quiet *q, pid_t n)
{
	if (q->nlate == SCAN_LATE_MAX)
		return;		/* the next whole scan finds it */
	q->late[q->nlate] = n;
	q->late_tries[q->nlate++] = 0;
}

/*
 * Every process and its group: a whole scan of /proc at first, after
 * SCAN_STEPS_MAX steps, or when pids wrapped or leapt; otherwise only the
 * pids the system made since the last (a whole scan per look read a
 * hundred files each time a turn forked anywhere: a tenth of a scheduled
 * ledger seed's time, bench/examples.sh).  A process that changed its
 * group since it was read is told by look_once (proc_in_group).
 */
static void
scan_procs(struct quiet *q)
{
	char		 path[300], line[512];
	struct dirent	*d;
	DIR		*dir;
	long		 lp = last_pid(), n;
	pid_t		 pg;
	size_t		 i, k, nsorted = q->nprocs;
	char		 st;
	bool		 moved = false;

	if (q->scanned && lp != -1 && lp >= q->last_pid &&
	    lp - q->last_pid <= SCAN_STEP_MAX && q->steps < SCAN_STEPS_MAX) {
		/* the late ones first: they are below the new pids */
		for (i = k = 0; i < q->nlate; i++) {
			if (proc_new(q, nsorted, q->late[i]) == 0 &&
			    ++q->late_tries[i] < SCAN_LATE_TRIES) {
				q->late[k] = q->late[i];
				q->late_tries[k++] = q->late_tries[i];
			} else
				moved = true;
		}
		q->nlate = k;
		if (lp == q->last_pid && !moved)
			return;
		for (n = q->last_pid + 1; n <= lp; n++)
			if (proc_new(q, nsorted, (pid_t)n) == 0)
				late_add(q, (pid_t)n);
		if (lp != q->last_pid)
			q->steps++;
		q->last_pid = lp;
		qsort(q->procs, q->nprocs, sizeof(*q->procs), by_pid);
		return;
	}
	q->last_pid = lp;
	q->nprocs = 0;
	q->nlate = 0;
	q->steps = 0;
	if ((dir = opendir("/proc")) == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		if (read_small(path, line, sizeof(line)) <= 0 ||
		    stat_fields(line, &st, &pg) == -1)
			continue;
		proc_push(q, (pid_t)atol(d->d_name), pg);
	}
	closedir(dir);
	qsort(q->procs, q->nprocs, sizeof(*q->procs), by_pid);
	q->scanned = true;
}

/* ---- sockets ---- */

static int
by_inode(const void *a, const void *b)
{
	const struct tsock	*x = a, *y = b;

	return (x->inode > y->inode) - (x->inode < y->inode);
}

static void
read_table(struct quiet *q, const char *path, bool v6)
{
	char	 line[512], laddr[40], raddr[40];
	FILE	*f;
	unsigned	lport, rport, st;
	unsigned long	txq, rxq, inode;

	if ((f = fopen(path, "re")) == NULL)
		return;
	if (fgets(line, sizeof(line), f) == NULL) {	/* the header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		struct tsock	s = { 0 };

		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x "
		    "%lx:%lx %*x:%*x %*x %*u %*u %lu", laddr, &lport, raddr,
		    &rport, &st, &txq, &rxq, &inode) != 8)
			continue;
		s.inode = inode;
		s.lport = (uint16_t)lport;
		s.rport = (uint16_t)rport;
		s.rxq = (uint32_t)rxq;
		s.listen = st == 0x0A;
		if (!v6 && strlen(raddr) == 8)
			s.raddr = ntohl((uint32_t)strtoul(raddr, NULL, 16));
		else if (v6 && strlen(raddr) == 32) {
			/* four words, each printed as the host reads it */
			char		w[9];
			uint32_t	a[4];
			int		i;

			for (i = 0; i < 4; i++) {
				memcpy(w, raddr + 8 * i, 8);
				w[8] = '\0';
				a[i] = (uint32_t)strtoul(w, NULL, 16);
			}
			if (a[0] == 0 && a[1] == 0 && a[2] == htonl(0xffff))
				s.raddr = ntohl(a[3]);
		}
		if (q->nsocks == q->capsocks) {
			q->capsocks = q->capsocks ? q->capsocks * 2 : 128;
			q->socks = xreallocarray(q->socks, q->capsocks,
			    sizeof(*q->socks));
		}
		q->socks[q->nsocks++] = s;
	}
	fclose(f);
}

/*
 * A TCP socket asked of a copy of the thread's descriptor: its peer, its
 * local port, whether it listens and what waits unread in it (the table's
 * rx_queue: bytes unread, or a listener's connections not yet accepted).
 * Some microseconds, where reading /proc/net/tcp walks the kernel's whole
 * connection table (11 ms of system time a read here, 450 sockets, most in
 * TIME_WAIT; once a pass: the worker's share of a scheduled ledger run's
 * CPU went from 37 % to 14 % without it).  1: s filled; 0: not a TCP socket (or
 * no longer that inode); -1: refused (not ours to copy, an old kernel).
 */
/* A copy of process pid's descriptor fd (pidfd_getfd), or -1 with errno. */
static int
fd_copy(pid_t pid, long fd)
{
	int	pfd, sfd;

	if ((pfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1)
		return -1;
	sfd = (int)syscall(SYS_pidfd_getfd, pfd, (int)fd, 0);
	close(pfd);
	return sfd;
}

static int
sock_of_fd(pid_t pid, long fd, unsigned long inode, struct tsock *s)
{
	struct sockaddr_storage	 peer, self;
	struct tcp_info		 ti;
	struct stat		 st;
	socklen_t		 len;
	int			 sfd, v, rc = 0;

	if ((sfd = fd_copy(pid, fd)) == -1)
		return errno == EBADF || errno == ESRCH ? 0 : -1;
	memset(s, 0, sizeof(*s));
	len = sizeof(v);
	if (fstat(sfd, &st) == -1 || (unsigned long)st.st_ino != inode ||
	    getsockopt(sfd, SOL_SOCKET, SO_PROTOCOL, &v, &len) == -1 ||
	    v != IPPROTO_TCP)
		goto out;
	len = sizeof(v);
	if (getsockopt(sfd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == -1)
		goto out;
	s->inode = inode;
	s->listen = v != 0;
	len = sizeof(self);
	if (getsockname(sfd, (struct sockaddr *)&self, &len) == 0)
		s->lport = ntohs(self.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&self)->sin6_port :
		    ((struct sockaddr_in *)&self)->sin_port);
	if (s->listen) {
		/* a listener's tcpi_unacked is its accept queue */
		len = sizeof(ti);
		if (getsockopt(sfd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
			goto out;
		s->rxq = ti.tcpi_unacked;
		rc = 1;
		goto out;
	}
	if (ioctl(sfd, SIOCINQ, &v) == -1)
		goto out;
	s->rxq = (uint32_t)v;
	len = sizeof(peer);
	if (getpeername(sfd, (struct sockaddr *)&peer, &len) == 0) {
		if (peer.ss_family == AF_INET) {
			struct sockaddr_in	*in = (struct sockaddr_in *)&peer;

			s->raddr = ntohl(in->sin_addr.s_addr);
			s->rport = ntohs(in->sin_port);
		} else if (peer.ss_family == AF_INET6) {
			struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)&peer;
			uint32_t		 w[4];

			memcpy(w, &in6->sin6_addr, sizeof(w));
			if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
				s->raddr = ntohl(w[3]);
			s->rport = ntohs(in6->sin6_port);
		}
	}
	rc = 1;
out:
	close(sfd);
	return rc;
}

/*
 * A unix socket asked of a copy of the thread's descriptor: whether its
 * peer is a process of group pgid (SO_PEERCRED: for a socketpair, the
 * process that made it), a wake-up of the group's own like a pipe — curl's
 * multi handle polls one beside its connection.  1: the group's, nothing
 * unread; 2: the group's, a byte unread; 0: anyone else's, or not a unix
 * socket; -1: not known (refused).
 */
static int
unix_own(pid_t pid, long fd, unsigned long inode, pid_t pgid)
{
	struct ucred	cred;
	struct stat	st;
	socklen_t	len;
	int		sfd, v, rc = 0;

	if ((sfd = fd_copy(pid, fd)) == -1)
		return -1;
	len = sizeof(v);
	if (fstat(sfd, &st) == -1 || (unsigned long)st.st_ino != inode ||
	    getsockopt(sfd, SOL_SOCKET, SO_DOMAIN, &v, &len) == -1 ||
	    v != AF_UNIX)
		goto out;
	len = sizeof(cred);
	if (getsockopt(sfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    cred.pid <= 0 || getpgid(cred.pid) != pgid)
		goto out;
	rc = ioctl(sfd, SIOCINQ, &v) == 0 && v > 0 ? 2 : 1;
out:
	close(sfd);
	return rc;
}

static const struct tsock *
find_sock(struct quiet *q, pid_t pid, long fd, unsigned long inode)
{
	struct tsock	key = { .inode = inode };

	if (!q->no_getfd) {
		switch (sock_of_fd(pid, fd, inode, &q->one)) {
		case 1:
			return &q->one;
		case 0:
			return NULL;
		default:
			q->no_getfd = true;	/* the table from now on */
		}
	}
	if (!q->socks_read) {
		q->nsocks = 0;
		read_table(q, "/proc/net/tcp", false);
		read_table(q, "/proc/net/tcp6", true);
		qsort(q->socks, q->nsocks, sizeof(*q->socks), by_inode);
		q->socks_read = true;
	}
	return bsearch(&key, q->socks, q->nsocks, sizeof(*q->socks), by_inode);
}

/* ---- one file descriptor a thread waits on ---- */

enum fdk {
	FDK_OURS,	/* a socket to soak's listener, nothing unread */
	FDK_READY,	/* a byte waits unread, or a connection to accept */
	FDK_LISTEN,	/* a listening socket, nothing queued */
	FDK_PIPE,	/* a pipe: its writers are the group's */
	FDK_WAKE,	/* an eventfd or signalfd: a wake-up of the group's own
			   (libuv's uv_async, a thread pool's) */
	FDK_TIMER,	/* a timerfd: ends by itself */
	FDK_EPOLL,	/* an epoll set inside a poll: looked into */
	FDK_FOREIGN,	/* a socket to a peer soak does not see */
	FDK_OTHER	/* a terminal, a file, a unix socket, gone */
};

/* A socket of soak's a thread waits on: its port, and who waits (quiet.h,
 * origin: the first thread to be found waiting on it). */
static void
add_port(struct quiet *q, struct quiet_res *out, uint16_t port, long fd)
{
	size_t	i;

	for (i = 0; i < out->nports; i++)
		if (out->ports[i] == port)
			return;
	if (out->nports == QUIET_SOCKS) {
		out->ports_cut = true;
		return;
	}
	out->origin[out->nports] = q->origin | ((uint64_t)fd & 0xfffff);
	out->ports[out->nports++] = port;
}

static enum fdk	fd_kind1(struct quiet *, pid_t, long, struct quiet_res *,
		    char *, size_t);

/* What fd is, and whether the thread's wait is on listening sockets only
 * so far (q->nonlisten; quiet.h, timed_listen). */
static enum fdk
fd_kind(struct quiet *q, pid_t pid, long fd, struct quiet_res *out,
    char *what, size_t len)
{
	enum fdk	k = fd_kind1(q, pid, fd, out, what, len);

	if (k != FDK_LISTEN && k != FDK_EPOLL)
		q->nonlisten = true;
	return k;
}

static enum fdk
fd_kind1(struct quiet *q, pid_t pid, long fd, struct quiet_res *out,
    char *what, size_t len)
{
	char			 path[64], link[128];
	const struct tsock	*s;
	unsigned long		 inode;
	ssize_t			 n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int)pid, fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) < 0) {
		snprintf(what, len, "fd %ld (%s)", fd, strerror(errno));
		return FDK_OTHER;
	}
	link[n] = '\0';
	if (strncmp(link, "pipe:", 5) == 0)
		return FDK_PIPE;
	if (strcmp(link, "anon_inode:[eventpoll]") == 0)
		return FDK_EPOLL;
	if (strcmp(link, "anon_inode:[eventfd]") == 0 ||
	    strcmp(link, "anon_inode:[signalfd]") == 0)
		return FDK_WAKE;
	if (strcmp(link, "anon_inode:[timerfd]") == 0) {
		snprintf(what, len, "a timer");
		return FDK_TIMER;
	}
	if (sscanf(link, "socket:[%lu]", &inode) != 1) {
		snprintf(what, len, "%.80s", link);
		return FDK_OTHER;
	}
	if ((s = find_sock(q, pid, fd, inode)) == NULL) {
		/* a unix socket whose peer is the group's own (a socketpair
		 * of its wake-ups) is as a pipe; anyone else's (a database's
		 * socket, a journal) is not looked into */
		switch (q->no_getfd ? -1 : unix_own(pid, fd, inode, q->pgid)) {
		case 1:
			return FDK_PIPE;
		case 2:
			return FDK_READY;
		default:
			break;
		}
		snprintf(what, len, "a socket that is not TCP");
		return FDK_OTHER;
	}
	if (s->listen)
		return s->rxq > 0 ? FDK_READY : FDK_LISTEN;
	if (s->rxq > 0)
		return FDK_READY;
	switch (s->raddr != 0 ? q->ours(q->arg, s->raddr, s->rport) :
	    QUIET_PEER_NONE) {
	case QUIET_PEER_LISTENER:
		add_port(q, out, s->lport, fd);
		return FDK_OURS;
	case QUIET_PEER_UPSTREAM:
		return FDK_OURS;
	default:
		break;
	}
	snprintf(what, len, "a socket to %u.%u.%u.%u:%u", s->raddr >> 24,
	    s->raddr >> 16 & 0xff, s->raddr >> 8 & 0xff, s->raddr & 0xff, s->rport);
	return FDK_FOREIGN;
}

/* Folds one fd into a thread's verdict: QUIET stays only while every fd is
 * one soak or the group ends. */
static enum quiet_st
fd_st(enum fdk k)
{
	switch (k) {
	case FDK_OURS: case FDK_LISTEN: case FDK_PIPE: case FDK_WAKE:
		return QUIET_QUIET;
	case FDK_READY:
		return QUIET_RUNNING;
	case FDK_TIMER:
		return QUIET_TIMED;
	default:
		return QUIET_UNSEEN;
	}
}

static enum quiet_st
worse(enum quiet_st a, enum quiet_st b)
{
	/* RUNNING over UNSEEN over TIMED over QUIET */
	static const int rank[QUIET_MAX] = {
		[QUIET_GONE] = 0, [QUIET_QUIET] = 1, [QUIET_TIMED] = 2,
		[QUIET_UNSEEN] = 3, [QUIET_RUNNING] = 4,
	};
	return rank[b] > rank[a] ? b : a;
}

static ssize_t
read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char	path[64];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n;
}

static enum quiet_st	epoll_st(struct quiet *, pid_t, long, struct quiet_res *,
			    char *, size_t, int);

/* The fds of a poll array in the process's memory. */
static enum quiet_st
poll_st(struct quiet *q, pid_t pid, uint64_t addr, uint64_t nfds,
    struct quiet_res *out, char *what, size_t len)
{
	struct pollfd	fds[POLL_FDS_MAX];
	enum quiet_st	st = QUIET_QUIET;
	size_t		i, n = (size_t)nfds;

	if (n == 0)
		return QUIET_QUIET;	/* a poll of nothing: only its timeout */
	if (n > POLL_FDS_MAX ||
	    read_mem(pid, addr, fds, n * sizeof(*fds)) != (ssize_t)(n * sizeof(*fds))) {
		snprintf(what, len, "poll on %zu fds it could not read", n);
		return QUIET_UNSEEN;
	}
	for (i = 0; i < n; i++) {
		enum fdk	k;

		if (fds[i].fd < 0)
			continue;
		k = fd_kind(q, pid, fds[i].fd, out, what, len);
		st = worse(st, k == FDK_EPOLL ? epoll_st(q, pid, fds[i].fd, out,
		    what, len, 1) : fd_st(k));
	}
	return st;
}

/* The fds of select's read, write and except sets. */
static enum quiet_st
select_st(struct quiet *q, pid_t pid, uint64_t nfds, const uint64_t *sets,
    struct quiet_res *out, char *what, size_t len)
{
	unsigned long	bits[SELECT_FDS_MAX / (8 * sizeof(unsigned long))];
	const size_t	w = 8 * sizeof(unsigned long);
	enum quiet_st	st = QUIET_QUIET;
	size_t		n = (size_t)nfds, bytes, s, fd;

	if (n > SELECT_FDS_MAX) {
		snprintf(what, len, "select on %zu fds", n);
		return QUIET_UNSEEN;
	}
	bytes = (n + w - 1) / w * sizeof(unsigned long);
	for (s = 0; s < 3; s++) {
		if (sets[s] == 0 || bytes == 0)
			continue;
		if (read_mem(pid, sets[s], bits, bytes) != (ssize_t)bytes) {
			snprintf(what, len, "select on fds it could not read");
			return QUIET_UNSEEN;
		}
		for (fd = 0; fd < n; fd++)
			if (bits[fd / w] >> (fd % w) & 1)
				st = worse(st, fd_st(fd_kind(q, pid, (long)fd, out,
				    what, len)));
	}
	return st;
}

/* The fds an epoll set watches (its fdinfo's "tfd:" lines). */
static enum quiet_st
epoll_st(struct quiet *q, pid_t pid, long epfd, struct quiet_res *out,
    char *what, size_t len, int depth)
{
	char		 path[64], line[256];
	enum quiet_st	 st = QUIET_QUIET;
	FILE		*f;
	long		 tfd;
	int		 n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%ld", (int)pid, epfd);
	if ((f = fopen(path, "re")) == NULL) {
		snprintf(what, len, "epoll set %ld it could not read", epfd);
		return QUIET_UNSEEN;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		enum fdk	k;

		if (sscanf(line, "tfd: %ld", &tfd) != 1)
			continue;
		if (++n > EPOLL_FDS_MAX) {
			snprintf(what, len, "an epoll set of over %d fds",
			    EPOLL_FDS_MAX);
			st = worse(st, QUIET_UNSEEN);
			break;
		}
		k = fd_kind(q, pid, tfd, out, what, len);
		if (k == FDK_EPOLL)
			st = worse(st, depth < 2 ? epoll_st(q, pid, tfd, out, what,
			    len, depth + 1) : QUIET_UNSEEN);
		else
			st = worse(st, fd_st(k));
	}
	fclose(f);
	return st;
}

/* Whether a timeout argument (a pointer) is absent, or an int ms negative. */
static bool
no_timeout_ptr(uint64_t p)
{
	return p == 0;
}

static bool
no_timeout_ms(uint64_t v)
{
	return (int)(uint32_t)v < 0;
}

/*
 * One sleeping thread's system call (its /proc syscall line: "NR a0 .. a5
 * sp pc"), judged.
 */
static enum quiet_st
syscall_st(struct quiet *q, pid_t pid, const char *line, struct quiet_res *out,
    char *what, size_t len)
{
	uint64_t	a[6];
	long		nr;
	enum quiet_st	st;
	int		op;

	if (strncmp(line, "running", 7) == 0) {
		snprintf(what, len, "running");
		return QUIET_RUNNING;
	}
	if (sscanf(line, "%ld %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
	    " %" SCNx64 " %" SCNx64, &nr, &a[0], &a[1], &a[2], &a[3], &a[4],
	    &a[5]) != 7) {
		snprintf(what, len, "between system calls");
		return QUIET_RUNNING;
	}
	switch (nr) {
	case SYS_read: case SYS_readv: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_write: case SYS_writev: case SYS_sendto: case SYS_sendmsg:
	case SYS_accept: case SYS_accept4:
		return fd_st(fd_kind(q, pid, (long)a[0], out, what, len));
#ifdef SYS_poll
	case SYS_poll:
		st = poll_st(q, pid, a[0], a[1], out, what, len);
		if (st == QUIET_QUIET && !no_timeout_ms(a[2])) {
			snprintf(what, len, "poll with a %d ms timeout", (int)a[2]);
			q->tsock = true;	/* its own timeout, on quiet fds */
			return QUIET_TIMED;
		}
		return st;
#endif
	case SYS_ppoll:
		st = poll_st(q, pid, a[0], a[1], out, what, len);
		if (st == QUIET_QUIET && !no_timeout_ptr(a[2])) {
			snprintf(what, len, "ppoll with a timeout");
			q->tsock = true;	/* its own timeout, on quiet fds */
			return QUIET_TIMED;
		}
		return st;
#ifdef SYS_select
	case SYS_select:
#endif
	case SYS_pselect6:
		st = select_st(q, pid, a[0], &a[1], out, what, len);
		if (st == QUIET_QUIET && !no_timeout_ptr(a[4])) {
			snprintf(what, len, "select with a timeout");
			q->tsock = true;	/* its own timeout, on quiet fds */
			return QUIET_TIMED;
		}
		return st;
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
#endif
	case SYS_epoll_pwait:
		st = epoll_st(q, pid, (long)a[0], out, what, len, 1);
		if (st == QUIET_QUIET && !no_timeout_ms(a[3])) {
			snprintf(what, len, "epoll_wait with a %d ms timeout",
			    (int)a[3]);
			q->tsock = true;	/* its own timeout, on quiet fds */
			q->tepoll = true;	/* an event loop's next timer */
			return QUIET_TIMED;
		}
		return st;
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
		st = epoll_st(q, pid, (long)a[0], out, what, len, 1);
		if (st == QUIET_QUIET && !no_timeout_ptr(a[3])) {
			snprintf(what, len, "epoll_pwait2 with a timeout");
			q->tsock = true;	/* its own timeout, on quiet fds */
			q->tepoll = true;
			return QUIET_TIMED;
		}
		return st;
#endif
	case SYS_futex:
		op = (int)a[1] & FUTEX_CMD_MASK;
		if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET &&
		    op != FUTEX_LOCK_PI && op != FUTEX_WAIT_REQUEUE_PI) {
			snprintf(what, len, "futex op %d", op);
			return QUIET_UNSEEN;
		}
		/* FUTEX_LOCK_PI's timeout is argument 3 as well */
		if (!no_timeout_ptr(a[3])) {
			snprintf(what, len, "a timed futex wait");
			return QUIET_TIMED;
		}
		return QUIET_QUIET;
#ifdef SYS_futex_waitv
	case SYS_futex_waitv:
		if (!no_timeout_ptr(a[3])) {
			snprintf(what, len, "a timed futex wait");
			return QUIET_TIMED;
		}
		return QUIET_QUIET;
#endif
	case SYS_wait4: case SYS_waitid:
#ifdef SYS_pause
	case SYS_pause:
#endif
	case SYS_rt_sigsuspend:
		return QUIET_QUIET;
	case SYS_nanosleep: case SYS_clock_nanosleep:
		snprintf(what, len, "sleeping");
		return QUIET_TIMED;
	case SYS_rt_sigtimedwait:
		snprintf(what, len, no_timeout_ptr(a[2]) ? "waiting for a signal" :
		    "waiting for a signal with a timeout");
		return no_timeout_ptr(a[2]) ? QUIET_UNSEEN : QUIET_TIMED;
	case SYS_connect:
		snprintf(what, len, "connecting");
		return QUIET_RUNNING;
	case SYS_restart_syscall:
		snprintf(what, len, "a restarted wait (its timeout unknown)");
		return QUIET_TIMED;
	default:
		snprintf(what, len, "system call %ld", nr);
		return QUIET_UNSEEN;
	}
}

/*
 * Whether process p is still in group pgid (its stat, read afresh: a
 * process read by a step of scan_procs may have left it since, or be
 * gone), and what its children that it waited for ran (ns): cutime and
 * cstime; 0 unknown.
 */
static bool
proc_in_group(struct proc *p, pid_t pgid, uint64_t *reaped)
{
	char		 path[64], line[1024];
	const char	*t;
	unsigned long long cut = 0, cst = 0;
	long		 pg, hz = sysconf(_SC_CLK_TCK);

	*reaped = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
	if (read_small(path, line, sizeof(line)) <= 0 ||
	    (t = strrchr(line, ')')) == NULL ||
	    /* state ppid pgrp session tty tpgid flags minflt cminflt
	     * majflt cmajflt utime stime, then cutime cstime */
	    sscanf(t + 1, " %*s %*s %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s"
	    " %*s %llu %llu", &pg, &cut, &cst) != 3)
		return false;		/* gone since the scan */
	p->pgrp = (pid_t)pg;
	if (pg != (long)pgid)
		return false;		/* left the group since it was read */
	if (hz > 0)
		*reaped = (uint64_t)(cut + cst) * (1000000000ull / (uint64_t)hz);
	return true;
}

/* How long a thread has run (ns), from its schedstat; 0 unknown. */
static uint64_t
run_ns(pid_t pid, const char *tid)
{
	char	path[320], line[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, tid);
	if (read_small(path, line, sizeof(line)) <= 0)
		return 0;
	return strtoull(line, NULL, 10);
}

/* One thread: its state, then its system call when it sleeps. */
static enum quiet_st
thread_st(struct quiet *q, pid_t pid, const char *tid, struct quiet_res *out,
    char *what, size_t len)
{
	char	path[320], line[512], st;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	if (read_small(path, line, sizeof(line)) <= 0 ||
	    stat_fields(line, &st, NULL) == -1)
		return QUIET_GONE;
	switch (st) {
	case 'Z': case 'X': case 'x':
		return QUIET_GONE;
	case 'S': case 'I':
		break;
	case 'T': case 't':
		snprintf(what, len, "stopped");
		return QUIET_UNSEEN;
	default:	/* R, D, W, P */
		snprintf(what, len, st == 'D' ? "in an uninterruptible wait" :
		    "running");
		return QUIET_RUNNING;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)pid, tid);
	if (read_small(path, line, sizeof(line)) <= 0) {
		if (errno == ENOENT || errno == ESRCH)
			return QUIET_GONE;
		out->denied = true;
		snprintf(what, len, "a wait /proc would not show (%s)",
		    strerror(errno));
		return QUIET_UNSEEN;
	}
	return syscall_st(q, pid, line, out, what, len);
}

static int
by_tid(const void *a, const void *b)
{
	pid_t	x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static void
look_once(struct quiet *q, pid_t pgid, struct quiet_res *out, int k)
{
	char		 path[64], what[96];
	struct dirent	*d;
	DIR		*dir;
	pid_t		 tids[SNAP_MAX];
	size_t		 i, j, ntids;
	uint64_t	 reaped;
	enum quiet_st	 st;
	bool		 timed_other = false, timed_nonlisten = false,
			 timed_epoll = false, rescanned = false;

again:
	memset(out, 0, sizeof(*out));
	out->st = QUIET_GONE;
	q->pgid = pgid;
	scan_procs(q);
	/* the group's processes; the scan is sorted by pid, not by group */
	for (i = 0; i < q->nprocs; i++) {
		pid_t	pid = q->procs[i].pid;

		/* the leader is read afresh whatever the scan said: a step
		 * may have read it between its fork and its setpgid, and it
		 * would be missed while a child of its is seen (the group
		 * then not empty, so not scanned again) */
		if ((q->procs[i].pgrp != pgid && pid != pgid) ||
		    !proc_in_group(&q->procs[i], pgid, &reaped))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		if ((dir = opendir(path)) == NULL)
			continue;	/* gone since the scan */
		/* its threads in the order they were made (tid order): a
		 * thread's rank names it from run to run (quiet.h, origin) */
		ntids = 0;
		while ((d = readdir(dir)) != NULL)
			if (isdigit((unsigned char)d->d_name[0]) && ntids < SNAP_MAX)
				tids[ntids++] = (pid_t)atol(d->d_name);
		closedir(dir);
		qsort(tids, ntids, sizeof(*tids), by_tid);
		out->cpu_ns += reaped;
		for (j = 0; j < ntids; j++) {
			char	tid[16];
			uint64_t ran;

			snprintf(tid, sizeof(tid), "%d", (int)tids[j]);
			what[0] = '\0';
			q->origin = (uint64_t)out->nprocs << 40 | (uint64_t)j << 20;
			/* its run time before its state: a thread that ran
			 * between the two looks shows a new run time */
			ran = run_ns(pid, tid);
			out->cpu_ns += ran;
			if (q->nsnap[k] < SNAP_MAX)
				q->snap[k][q->nsnap[k]++] = (struct tsnap){
				    tids[j], ran };
			else
				q->snap_cut = true;
			q->tsock = false;
			q->nonlisten = false;
			q->tepoll = false;
			st = thread_st(q, pid, tid, out, what, sizeof(what));
			if (st == QUIET_GONE)
				continue;
			if (st == QUIET_TIMED && !q->tsock)
				timed_other = true;
			if (st == QUIET_TIMED && q->nonlisten)
				timed_nonlisten = true;
			if (st == QUIET_TIMED && q->tepoll)
				timed_epoll = true;
			out->nthreads++;
			if (worse(out->st, st) == out->st)
				continue;
			out->st = st;
			if (st != QUIET_QUIET) {
				out->pid = pid;
				out->tid = tids[j];
				snprintf(out->what, sizeof(out->what), "%s", what);
			}
		}
		out->nprocs++;
	}
	/*
	 * None of the group in the scan, yet the group has a process: the
	 * scan is older than it (taken while it was forked, before its
	 * setpgid, with no pid made since to move last_pid).  Once more,
	 * afresh.
	 */
	if (out->nprocs == 0 && !rescanned && kill(-pgid, 0) == 0) {
		rescanned = true;
		q->scanned = false;
		goto again;
	}
	/* timed only by waits on quiet fds (an HTTP client's timeout on
	 * a socket of soak's): the sockets are kept, for the caller to
	 * tell a reply on its way from an idle wait */
	out->timed_socks = out->st == QUIET_TIMED && !timed_other;
	out->timed_listen = out->timed_socks && !timed_nonlisten;
	out->timed_epoll = out->timed_socks && timed_epoll;
	if (out->st != QUIET_QUIET && !out->timed_socks) {
		out->nports = 0;
		out->ports_cut = false;
	}
}

/*
 * A look is a series of reads, not a snapshot: a thread read asleep may
 * have been woken by one read after it (bash read waiting on a pipe, then
 * its child read as a zombie that closed the pipe on its way out), and a
 * process forked, or a thread made, while the look ran may be missing
 * from it.  So a group is quiet only when two looks in a row find it quiet
 * with the same threads, each with the same run time (schedstat): no
 * thread ran between its two reads, so at the instant between the looks
 * every one was where both looks found it (a double collect).  Anything
 * else is running: look again soon.
 */
void
quiet_look(struct quiet *q, pid_t pgid, struct quiet_res *out)
{
	struct quiet_res	again;
	size_t			i;
	uint64_t		cpu;

	q->nsnap[0] = q->nsnap[1] = 0;
	q->snap_cut = false;
	look_once(q, pgid, out, 0);
	cpu = out->cpu_ns;
	/* an accept loop's timeout (timed_listen) is looked at twice too: a
	 * service's group counts as quiet with it */
	if (out->st != QUIET_QUIET && !out->timed_listen)
		return;
	look_once(q, pgid, &again, 1);
	if (again.st != out->st || again.timed_listen != out->timed_listen)
		goto moved;
	if (q->snap_cut || q->nsnap[0] != q->nsnap[1])
		goto moved;
	for (i = 0; i < q->nsnap[0]; i++)
		if (q->snap[0][i].tid != q->snap[1][i].tid ||
		    q->snap[0][i].run_ns != q->snap[1][i].run_ns)
			goto moved;
	*out = again;
	out->cpu_ns = cpu;
	return;
moved:
	memset(out, 0, sizeof(*out));
	out->st = QUIET_RUNNING;
	out->cpu_ns = cpu;
	out->nprocs = again.nprocs;
	out->nthreads = again.nthreads;
	snprintf(out->what, sizeof(out->what), "%s", again.st != QUIET_QUIET &&
	    !again.timed_listen && again.what[0] ? again.what :
	    "moving between two looks");
}
