/*
 * The coordinator's accepted TCP connections, by descriptor.
 *
 * Why: ending a live nng pipe safely means shutting its socket for reading
 * (server.c pipe_shut: nng 1.5.2's nng_pipe_close can hang its reaper), and
 * nng 1.5.2 neither tells a pipe's descriptor nor adopts one accepted by
 * us.  Scanning /proc/self/fd for the socket whose addresses match costs
 * O(open files) per call, which a reconnect flood turns quadratic.  So
 * soak defines accept(2) and accept4(2) itself: libnng.so's calls bind to
 * the executable's definitions (ELF symbol interposition, the way a malloc
 * replacement works), which call the C library's through dlsym(RTLD_NEXT)
 * and, once fdtab_start has been called, note each new descriptor with its
 * peer's address.  Until then, and in every process that never listens
 * on tcp:// (workers, soak run, the tests' helpers), the wrappers only
 * pass the call on.
 *
 * What the table gives:
 *  - fdtab_claim: the descriptor of the connection from an address, in
 *    O(1) (a hash of the peer address), at the moment nng admits its pipe;
 *    the caller keeps it and checks it with fdtab_is (getpeername and
 *    getsockname, O(1)) before it acts on it, since the descriptor may
 *    have been closed and reused meanwhile;
 *  - a share of the descriptors for connections in nng's transport
 *    handshake (the SP header, or TLS): nng holds each for up to its own
 *    10 s negotiation timeout, with no limit, so a slowloris that opens
 *    connections and sends a byte would take every descriptor, and the
 *    kernel's accept queue, refilled by its reconnects as fast as places
 *    free, would starve a worker's connection behind it.  So once more
 *    than 1/FDTAB_NEGO_SHARE of the descriptors (at least FDTAB_NEGO_MIN)
 *    are in that handshake, each new one shuts the oldest (as an
 *    eviction: the pipe does not exist yet, nothing of nng's is racing).
 *    A connection whose header lies unread in the kernel (FDTAB_READY_BYTES
 *    or more: a worker's whole SP header, a TLS ClientHello) waits on nng,
 *    not on its peer, and is passed over: under a flood that reconnects
 *    faster than nng reads, the oldest would otherwise always be the
 *    worker, shut before nng read its header (seen under ASan: a worker
 *    kept out for a minute).  Once nng has read it the handshake ends or
 *    waits on the peer again, so nobody holds a place by being spared;
 *  - at the descriptor limit itself (accept failing with EMFILE or ENFILE,
 *    the descriptors held by something else), the oldest FDTAB_EVICT_BATCH
 *    in that handshake are shut, so the next accept, in nng's 10 ms
 *    retry, finds one.
 *
 * Thread-safe: accept runs on nng's poller thread, fdtab_claim on nng's
 * pipe callback, fdtab_is on the coordinator's loop.  Descriptors at or
 * above the soft RLIMIT_NOFILE fdtab_start saw are not noted (fdtab_claim
 * answers -1, and the caller falls back to the scan).
 */
#ifndef SOAK_FDTAB_H
#define SOAK_FDTAB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <nng/nng.h>

#define FDTAB_NEGO_SHARE	4
#define FDTAB_NEGO_MIN		64
#define FDTAB_EVICT_BATCH	16
#define FDTAB_READY_BYTES	8	/* unread: waiting on nng, not on the peer */
#define FDTAB_SCAN		64	/* looked at, at most, to evict */

struct fdtab_stats {
	uint64_t	accepted;	/* connections noted */
	uint64_t	evicted;	/* shut in their handshake: past the share, or at the limit */
	uint64_t	limit_hits;	/* accepts that met EMFILE or ENFILE */
	uint64_t	spared;		/* passed over: their header unread by nng */
};

/*
 * Raises RLIMIT_NOFILE's soft limit to its hard limit and starts noting
 * accepted connections (once per process; later calls only return the
 * figures).  *soft_was, *limit: the soft limit before and after.
 */
void	fdtab_start(uint64_t *soft_was, uint64_t *limit);
/*
 * The descriptor of the connection accepted from peer that nng is handing
 * over now, taken out of the limit's eviction queue; -1 when none is noted.
 */
int	fdtab_claim(const nng_sockaddr *peer);
/* Whether fd is still the connection from rem to loc. */
bool	fdtab_is(int fd, const nng_sockaddr *rem, const nng_sockaddr *loc);
void	fdtab_stats(struct fdtab_stats *st);

#endif
