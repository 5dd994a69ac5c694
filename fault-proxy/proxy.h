/*
 * fault-proxy: a TCP proxy that lies to its client on purpose, reproducibly
 * (DESIGN.md §7).  Every decision is a pure function of (seed, proxy name,
 * turn, connection number within the turn, exchange number within the
 * connection), drawn from seed_derive()/seed_rng (common/seed.h).
 *
 * The worker's view: one proxy_set per seed, with one loopback listener per
 * (proxy, turn), all driven by one event-loop thread owned by the set.
 */
#ifndef SOAK_PROXY_H
#define SOAK_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

struct proxy_set;

/*
 * Starts listeners on 127.0.0.1 ephemeral ports for each of cfg->proxies x
 * turns.  upstreams[i] is proxy i's resolved upstream: "host:port" or
 * "unix:/abs/path" (the worker has already turned service:NAME and
 * database into one of those).  Each decision is appended as one JSON line
 * to trace_path (created/truncated; NULL = no trace).
 */
struct proxy_set	*proxy_set_start(const struct cfg *cfg,
			    char *const *upstreams, int turns, uint64_t seed,
			    const char *trace_path, char *err);
/* "127.0.0.1:PORT" of proxy i's listener for turn t. */
const char		*proxy_set_addr(const struct proxy_set *ps, size_t proxy,
			    int turn);
/*
 * Closes every listener and connection, joins the thread, flushes and
 * closes the trace.  NULL is a no-op.
 */
void			 proxy_set_stop(struct proxy_set *ps);

#endif
