/*
 * Whether a process group can still send anything by itself, judged from
 * what /proc shows, never from a clock: private
 * to fault-proxy, used by the gate to know when every actor of a schedule
 * is accounted for.
 *
 * A group is QUIET when every thread of every one of its processes sleeps
 * in a wait only soak, or the group itself, can end:
 *  - reading, writing, polling (poll, ppoll, select, pselect6, epoll_wait,
 *    epoll_pwait, epoll_pwait2 — with no timeout) or accepting on sockets
 *    whose receive queue is empty and whose peer is one of soak's
 *    listeners (the `ours` callback says which), or listening sockets
 *    with no connection queued, or pipes (their writers are the group's
 *    own processes);
 *  - a futex wait without a timeout (another thread of the group holds
 *    what it waits for), wait4/waitid (a child of the group), pause and
 *    sigsuspend.
 * Any thread that runs, is in uninterruptible sleep, is between system
 * calls, or has a byte waiting in a socket it blocks on makes the group
 * RUNNING: it is about to do something, look again soon.  A wait that
 * ends by itself (a sleep, any timed wait: a 0.5 s select, a condition
 * variable with a deadline, Node's timers, the GIL's 5 ms) makes it TIMED,
 * and a wait on something soak does not see (a socket to another peer, a
 * terminal, an unknown system call) UNSEEN: both are left to the
 * schedule's `arrival` watchdog, whose decisions are marked forced.  When
 * /proc refuses to show a thread's system call (another user's process, a
 * ptrace scope), the group is UNSEEN and `denied` says so.
 *
 * The sockets a QUIET group's threads wait on are listed by their local
 * port (the peer port of the connection soak's listener accepted), so
 * that the caller can tell a thread waiting on an exchange held at a gate
 * from one waiting on a reply in flight.
 *
 * Cost: a look reads, per thread of the group, its stat and syscall, and
 * per socket it waits on a line of /proc/net/tcp (read once per look, and
 * only when some thread waits on a socket).  Which processes belong to the
 * group is learnt by a scan of /proc, redone only when the system has
 * made a process or thread since the last (the last pid of
 * /proc/loadavg).  Linux only; x86-64 and aarch64 system call numbers
 * come from <sys/syscall.h>.
 */
#ifndef SOAK_PROXY_QUIET_H
#define SOAK_PROXY_QUIET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum quiet_st {
	QUIET_GONE,	/* no process left in the group */
	QUIET_QUIET,	/* nothing can happen until soak answers or admits */
	QUIET_RUNNING,	/* a thread runs, or is about to: look again */
	QUIET_TIMED,	/* a wait that ends by itself: the arrival watchdog */
	QUIET_UNSEEN,	/* a wait soak cannot see the end of: the watchdog */
	QUIET_MAX
};
const char	*quiet_st_name(enum quiet_st st);

#define QUIET_SOCKS	64	/* sockets kept per look */

/* What one look found. */
struct quiet_res {
	enum quiet_st	 st;
	/* the thread that decided st (not QUIET, not GONE), and what it was
	 * doing, for people: "nanosleep", "poll with a 500 ms timeout",
	 * "read on a socket to 10.1.2.3:443" */
	pid_t		 pid, tid;
	char		 what[96];
	bool		 denied;	/* /proc refused a thread's syscall */
	/* TIMED, and only by waits with a timeout of their own (poll,
	 * select, epoll) on fds that are otherwise quiet: ports and origin
	 * are kept, so that a wait on a reply in flight at a proxy (an HTTP
	 * client's 30 s timeout on a model's answer) is told from one that
	 * ends by itself */
	bool		 timed_socks;
	/* TIMED, and only by waits with a timeout of their own on listening
	 * sockets with nothing queued and nothing else: an accept loop's
	 * timeout (Python's serve_forever polls its socket every 0.5 s).  A
	 * service's group counts as quiet with it (docs/faults.md "Services
	 * under a schedule"): what the loop does when its timeout ends is
	 * not seen, and is assumed to reach nothing of soak's */
	bool		 timed_listen;
	/* TIMED with timed_socks, and one of the timed waits an epoll's: an
	 * event loop's next timer, whatever it is for (Node's), not a
	 * client's own timeout on the sockets it polls (urllib's, curl's) */
	bool		 timed_epoll;
	/* QUIET (or timed_socks): the local ports of soak's sockets its
	 * threads wait on */
	uint16_t	 ports[QUIET_SOCKS];
	/* and who waits on each: the rank of its process in the group (pid
	 * order) << 40 | its thread's rank in the process (tid order) << 20 |
	 * the descriptor; the order processes, threads and (in one thread)
	 * descriptors are made in, which a program repeats from run to run
	 * where its connections' order of arrival races */
	uint64_t	 origin[QUIET_SOCKS];
	size_t		 nports;
	bool		 ports_cut;	/* more than QUIET_SOCKS */
	int		 nprocs, nthreads;
	/* how long the group has run, in all (ns): its threads' run time
	 * (schedstat) and what its processes' children that have been waited
	 * for ran (cutime + cstime); 0 when /proc shows neither.  The first
	 * look's, whatever st is: a turn that runs is late by the time it ran,
	 * not by the time it waited for a core (gate.h, GA_RUNNING) */
	uint64_t	 cpu_ns;
};

/*
 * ours(arg, addr, port): whether a socket whose peer is addr:port (IPv4,
 * host order; an IPv6 socket's v4-mapped peer too) is soak's:
 * QUIET_PEER_LISTENER, one of its listeners (the socket's local port is
 * kept in ports[]); QUIET_PEER_UPSTREAM, a connection soak made to this
 * group (a proxy in front of a service: what comes on it comes when a gate
 * admits it; not kept in ports[]); QUIET_PEER_NONE, anyone else's.
 */
enum quiet_peer {
	QUIET_PEER_NONE,
	QUIET_PEER_LISTENER,
	QUIET_PEER_UPSTREAM
};
typedef enum quiet_peer	(*quiet_ours_fn)(void *arg, uint32_t addr, uint16_t port);

struct quiet;
struct quiet	*quiet_new(quiet_ours_fn ours, void *arg);
void		 quiet_free(struct quiet *q);
/* Sockets looked up in /proc/net/tcp only, as where pidfd_getfd is refused
 * (another user's process, a kernel before 5.6): for tests. */
void		 quiet_table_only(struct quiet *q);
/*
 * Looks at process group pgid (its processes found through /proc) and
 * fills *out.  A look of several groups in a row shares one reading of
 * /proc/net/tcp: quiet_begin() before them starts a new one.
 */
void		 quiet_begin(struct quiet *q);
void		 quiet_look(struct quiet *q, pid_t pgid, struct quiet_res *out);

#endif
