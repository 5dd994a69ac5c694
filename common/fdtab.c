#include "common/fdtab.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define FDTAB_MAX	(1 << 20)	/* descriptors noted at most */
#define FDTAB_BUCKETS	8192		/* a power of two */
#define FDTAB_LOG_MS	10000

enum fdent_state { FD_FREE, FD_NEGO, FD_CLAIMED };

/* One accepted connection, at the index of its descriptor. */
struct fdent {
	uint8_t		 state;
	uint8_t		 v6;
	uint16_t	 port;		/* network order */
	uint8_t		 ip[16];
	int64_t		 at;		/* accepted */
	int32_t		 hnext;		/* the next of its bucket, or -1 */
	int32_t		 prev, next;	/* FD_NEGO: the queue, oldest first */
};

static struct {
	pthread_mutex_t	 mu;
	bool		 on;
	struct fdent	*ent;
	int32_t		 cap;
	int32_t		 bucket[FDTAB_BUCKETS];
	int32_t		 head, tail;	/* FD_NEGO, oldest first */
	int32_t		 nnego;		/* in that queue */
	int32_t		 nego_cap;	/* FDTAB_NEGO_SHARE of the limit */
	uint64_t	 soft_was, limit;
	struct fdtab_stats st;
	int64_t		 logged;	/* when the limit was last told */
	uint64_t	 untold;	/* evictions since */
} tab = { .mu = PTHREAD_MUTEX_INITIALIZER, .head = -1, .tail = -1 };

/* --- the C library's accept, and ours --- */

typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

static accept_fn	real_accept;
static accept4_fn	real_accept4;
static pthread_once_t	real_once = PTHREAD_ONCE_INIT;

static void
real_init(void)
{
	real_accept = (accept_fn)dlsym(RTLD_NEXT, "accept");
	real_accept4 = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
}

static int
call_real(int fd, struct sockaddr *sa, socklen_t *len, int flags, bool four)
{
	pthread_once(&real_once, real_init);
	if (four && real_accept4)
		return real_accept4(fd, sa, len, flags);
	if (!four && real_accept)
		return real_accept(fd, sa, len);
	return (int)syscall(SYS_accept4, fd, sa, len, four ? flags : 0);
}

static uint32_t
addr_hash(bool v6, const uint8_t *ip, uint16_t port)
{
	uint32_t	h = 2166136261u;
	int		i;

	for (i = 0; i < (v6 ? 16 : 4); i++)
		h = (h ^ ip[i]) * 16777619u;
	h = (h ^ (port & 0xff)) * 16777619u;
	h = (h ^ (port >> 8)) * 16777619u;
	return h & (FDTAB_BUCKETS - 1);
}

/* Unlocked helpers: under tab.mu. */
static void
queue_unlink(int32_t i)
{
	struct fdent	*e = &tab.ent[i];

	if (e->prev != -1)
		tab.ent[e->prev].next = e->next;
	else
		tab.head = e->next;
	if (e->next != -1)
		tab.ent[e->next].prev = e->prev;
	else
		tab.tail = e->prev;
	e->prev = e->next = -1;
	tab.nnego--;
}

static void
ent_drop(int32_t i)
{
	struct fdent	*e = &tab.ent[i];
	int32_t		*pp = &tab.bucket[addr_hash(e->v6, e->ip, e->port)];

	if (e->state == FD_FREE)
		return;
	if (e->state == FD_NEGO)
		queue_unlink(i);
	while (*pp != -1 && *pp != i)
		pp = &tab.ent[*pp].hnext;
	if (*pp == i)
		*pp = e->hnext;
	e->state = FD_FREE;
}

static void
ent_note(int fd, const struct sockaddr *sa)
{
	struct fdent	*e;
	uint32_t	 b;

	if (fd < 0 || fd >= tab.cap)
		return;
	ent_drop(fd);		/* a descriptor noted before, closed since */
	e = &tab.ent[fd];
	memset(e, 0, sizeof(*e));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in	*in = (const struct sockaddr_in *)sa;

		memcpy(e->ip, &in->sin_addr, 4);
		e->port = in->sin_port;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6	*in6 = (const struct sockaddr_in6 *)sa;

		e->v6 = 1;
		memcpy(e->ip, &in6->sin6_addr, 16);
		e->port = in6->sin6_port;
	} else
		return;		/* not TCP over IP: nothing to find it by */
	e->state = FD_NEGO;
	e->at = now_ms();
	b = addr_hash(e->v6, e->ip, e->port);
	e->hnext = tab.bucket[b];
	tab.bucket[b] = fd;
	e->prev = tab.tail;
	e->next = -1;
	if (tab.tail != -1)
		tab.ent[tab.tail].next = fd;
	else
		tab.head = fd;
	tab.tail = fd;
	tab.nnego++;
	tab.st.accepted++;
}

static bool
sockaddr_matches(const struct sockaddr_storage *ss, bool v6, const uint8_t *ip,
    uint16_t port)
{
	const struct sockaddr_in	*in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6	*in6 = (const struct sockaddr_in6 *)ss;

	if (!v6 && ss->ss_family == AF_INET)
		return in->sin_port == port && memcmp(&in->sin_addr, ip, 4) == 0;
	if (v6 && ss->ss_family == AF_INET6)
		return in6->sin6_port == port && memcmp(&in6->sin6_addr, ip, 16) == 0;
	return false;
}

/*
 * Whether the connection on fd is waiting on nng rather than on its peer:
 * FDTAB_READY_BYTES or more of it lie unread in the kernel (a whole SP
 * header, or the start of a TLS ClientHello).  nng reads them at its next
 * turn and the handshake goes on or ends, so such a connection holds its
 * descriptor only as long as nng's own queue is; a slowloris, whose byte
 * nng has read (or whose few bytes are not a header), is not spared.
 */
static bool
waits_on_nng(int fd)
{
	int	n = 0;

	return ioctl(fd, FIONREAD, &n) == 0 && n >= FDTAB_READY_BYTES;
}

/*
 * Shuts the oldest n connections still in nng's transport handshake (at
 * the descriptor limit, or past the share of it they may hold), so the
 * next accept finds a descriptor and the kernel's queue keeps moving.
 * Each is checked to be the connection noted (getpeername): a descriptor
 * nng closed meanwhile (its 10 s negotiation timeout) is only forgotten.
 * One that waits on nng (waits_on_nng: a worker whose header nng has not
 * read yet, behind a flood that nng reads one byte at a time) is passed
 * over, not shut: under a fast enough flood the oldest would otherwise
 * always be the worker.  At most FDTAB_SCAN are looked at: O(n + scan).
 */
static void
evict_oldest(int n, bool at_limit)
{
	struct sockaddr_storage	ss;
	socklen_t		sl;
	int64_t			now = now_ms();
	int			shut = 0, looked = 0, fd, next;

	if (at_limit)
		tab.st.limit_hits++;
	for (fd = tab.head; fd != -1 && n > 0 && looked < FDTAB_SCAN; fd = next) {
		struct fdent	*e = &tab.ent[fd];
		bool		 same;

		next = e->next;
		looked++;
		sl = sizeof(ss);
		same = getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
		    sockaddr_matches(&ss, e->v6, e->ip, e->port);
		if (same && waits_on_nng(fd)) {
			tab.st.spared++;
			continue;
		}
		ent_drop(fd);
		if (!same)
			continue;
		shutdown(fd, SHUT_RDWR);
		shut++;
		n--;
	}
	tab.st.evicted += (uint64_t)shut;
	tab.untold += (uint64_t)shut;
	if (tab.untold > 0 && (tab.logged == 0 || now - tab.logged >= FDTAB_LOG_MS)) {
		log_warnx("closed %llu connection(s) that had not finished their transport "
		    "handshake, oldest first: %s (descriptors: %llu)",
		    (unsigned long long)tab.untold, at_limit ? "at the descriptor limit" :
		    "more than a quarter of the descriptors were in one",
		    (unsigned long long)tab.limit);
		tab.logged = now;
		tab.untold = 0;
	}
}

static int
wrapped(int fd, struct sockaddr *sa, socklen_t *len, int flags, bool four)
{
	struct sockaddr_storage	ss;
	socklen_t		sl = sizeof(ss);
	int			nfd, saved;

	if (!__atomic_load_n(&tab.on, __ATOMIC_ACQUIRE))
		return call_real(fd, sa, len, flags, four);
	nfd = call_real(fd, (struct sockaddr *)&ss, &sl, flags, four);
	saved = errno;
	pthread_mutex_lock(&tab.mu);
	if (nfd >= 0) {
		ent_note(nfd, (struct sockaddr *)&ss);
		if (tab.nnego > tab.nego_cap)
			evict_oldest(tab.nnego - tab.nego_cap, false);
	} else if (saved == EMFILE || saved == ENFILE)
		evict_oldest(FDTAB_EVICT_BATCH, true);
	pthread_mutex_unlock(&tab.mu);
	if (nfd >= 0 && sa != NULL && len != NULL) {
		memcpy(sa, &ss, *len < sl ? *len : sl);
		*len = sl;
	}
	errno = saved;
	return nfd;
}

int
accept(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len)
{
	return wrapped(fd, addr.__sockaddr__, len, 0, false);
}

int
accept4(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags)
{
	return wrapped(fd, addr.__sockaddr__, len, flags, true);
}

/* --- the coordinator's side --- */

void
fdtab_start(uint64_t *soft_was, uint64_t *limit)
{
	struct rlimit	rl;
	int		i;

	pthread_mutex_lock(&tab.mu);
	if (!tab.on) {
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			tab.soft_was = rl.rlim_cur;
			if (rl.rlim_cur < rl.rlim_max) {
				rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? FDTAB_MAX :
				    rl.rlim_max;
				if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
					getrlimit(RLIMIT_NOFILE, &rl);
			}
			tab.limit = rl.rlim_cur;
		}
		tab.cap = tab.limit > 0 && tab.limit < FDTAB_MAX ? (int32_t)tab.limit :
		    FDTAB_MAX;
		tab.ent = xcalloc((size_t)tab.cap, sizeof(*tab.ent));
		tab.nego_cap = tab.cap / FDTAB_NEGO_SHARE > FDTAB_NEGO_MIN ?
		    tab.cap / FDTAB_NEGO_SHARE : FDTAB_NEGO_MIN;
		for (i = 0; i < FDTAB_BUCKETS; i++)
			tab.bucket[i] = -1;
		__atomic_store_n(&tab.on, true, __ATOMIC_RELEASE);
	}
	*soft_was = tab.soft_was;
	*limit = tab.limit;
	pthread_mutex_unlock(&tab.mu);
}

int
fdtab_claim(const nng_sockaddr *peer)
{
	uint8_t		ip[16];
	uint16_t	port;
	bool		v6;
	int32_t		i;

	if (peer->s_family == NNG_AF_INET) {
		v6 = false;
		memcpy(ip, &peer->s_in.sa_addr, 4);
		port = peer->s_in.sa_port;
	} else if (peer->s_family == NNG_AF_INET6) {
		v6 = true;
		memcpy(ip, peer->s_in6.sa_addr, 16);
		port = peer->s_in6.sa_port;
	} else
		return -1;
	pthread_mutex_lock(&tab.mu);
	if (!tab.on) {
		pthread_mutex_unlock(&tab.mu);
		return -1;
	}
	/* The newest first: a stale twin (an address reused) is older. */
	for (i = tab.bucket[addr_hash(v6, ip, port)]; i != -1; i = tab.ent[i].hnext) {
		struct fdent	*e = &tab.ent[i];

		if (e->state == FD_NEGO && e->v6 == v6 && e->port == port &&
		    memcmp(e->ip, ip, v6 ? 16 : 4) == 0) {
			queue_unlink(i);
			e->state = FD_CLAIMED;
			break;
		}
	}
	pthread_mutex_unlock(&tab.mu);
	return i;
}

static bool
nng_addr_is(const struct sockaddr_storage *ss, const nng_sockaddr *sa)
{
	if (sa->s_family == NNG_AF_INET)
		return sockaddr_matches(ss, false, (const uint8_t *)&sa->s_in.sa_addr,
		    sa->s_in.sa_port);
	if (sa->s_family == NNG_AF_INET6)
		return sockaddr_matches(ss, true, sa->s_in6.sa_addr, sa->s_in6.sa_port);
	return false;
}

bool
fdtab_is(int fd, const nng_sockaddr *rem, const nng_sockaddr *loc)
{
	struct sockaddr_storage	ss;
	socklen_t		sl = sizeof(ss);

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    !nng_addr_is(&ss, rem))
		return false;
	sl = sizeof(ss);
	return getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && nng_addr_is(&ss, loc);
}

void
fdtab_stats(struct fdtab_stats *st)
{
	pthread_mutex_lock(&tab.mu);
	*st = tab.st;
	pthread_mutex_unlock(&tab.mu);
}
