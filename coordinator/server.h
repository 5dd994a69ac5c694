/*
 * The coordinator's socket: an nng rep0 listener with a pool of contexts,
 * so a lease request can be held (parked) until there is work for it while
 * other workers keep talking.  nng's callbacks only queue events; all
 * decisions happen on the caller's thread in server_run's loop, so the
 * coordinator's state needs no lock.
 */
#ifndef SOAK_SERVER_H
#define SOAK_SERVER_H

#include <stdint.h>

#include "common/auth.h"
#include "coordinator/coord.h"

struct server;

/*
 * Listens on url; with a tls+tcp:// URL, TLS as auth says (common/tlsconf.h),
 * and with auth->secret the handshake of common/auth.h for every
 * connection (coordinator/peer.h).  auth must outlive the server.  The
 * caller has checked auth_policy.
 */
struct server	*server_open(const char *url, int nslots, const struct auth_opts *auth,
		    char *err);
/*
 * Closes the listener and every connection, and frees s.  nng's close is
 * bounded by SERVER_CLOSE_MS (nng 1.5.2 can hang in it): past that, s is
 * left to nng and the process is expected to exit.
 */
#define SERVER_CLOSE_MS	5000
void		 server_close(struct server *s);
/* The URL as bound (a tcp port 0 resolved to the real one). */
const char	*server_url(const struct server *s);

/*
 * Runs the protocol until coord_finished() and every parked request has
 * had its DONE, or until *stop becomes non-zero (checked at least every
 * tick_ms).  tick(arg) is called after every event and every tick_ms, for
 * progress output and process supervision; if it returns non-zero the
 * loop ends too.
 */
int		 server_run(struct server *s, struct coord *c, volatile int *stop,
		    int tick_ms, int (*tick)(void *), void *arg);
/*
 * After the run: answers DONE to lease requests for up to grace_ms, until
 * every worker it awaits (coord_awaited_workers: connected, or able to come
 * back) has gone, so workers exit cleanly.
 */
void		 server_drain(struct server *s, struct coord *c, int grace_ms,
		    volatile int *stop);
/*
 * After a finished run and its drain: serves for ms more, so a worker that
 * dials late is told the run is over (coord's HELLO answer) and exits 0.
 */
void		 server_linger(struct server *s, struct coord *c, int ms,
		    volatile int *stop);

#endif
