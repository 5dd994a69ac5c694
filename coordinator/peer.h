/*
 * The coordinator's connections.  One struct peer per nng pipe holds all
 * that is known about it — its remote address, how far it got in proving
 * itself, its challenge, its session key and sequence window — so every
 * "may this connection ..." is answered in one place.  No I/O, like
 * coord.c: server.c hands it raw messages and pipe events and does what
 * it answers.  Protocol: common/auth.h.
 *
 * A peer's life (each change through one setter, logged with -v):
 *
 *	NEW --HELLO--> CHALLENGED --AUTH, right proof--> OPEN   (a secret)
 *	NEW --HELLO--> OPEN      (no secret: TLS client certificates, --insecure,
 *	                          or ipc://, as auth_policy allowed)
 *	any --failed authentication or session MAC--> CLOSING   (pipe closed)
 *
 * Only an OPEN peer's messages reach coord_handle, and its HELLO reaches
 * it only as the peer opens: WELCOME (the config, the database URL, the
 * paths), leases and results are for authenticated workers alone.
 * coord.c binds each worker id to the pipe that said HELLO.
 *
 * Failed authentications (a wrong proof, an AUTH without a challenge, a
 * bad session MAC or sequence) count against the peer's host (its IP for
 * TCP; ipc:// peers are local and not counted): PEER_MAX_FAILS within
 * PEER_FAIL_WINDOW_MS and that host's connections are closed as they
 * arrive for PEER_BAN_MS, logged once.  Malformed messages are refused
 * but not counted: they try nothing.
 */
#ifndef SOAK_PEER_H
#define SOAK_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/auth.h"
#include "common/msg.h"

#define PEER_MAX_FAILS		5
#define PEER_FAIL_WINDOW_MS	60000
#define PEER_BAN_MS		60000
#define PEER_MAX_HOSTS		4096	/* hosts the limiter remembers */

enum peer_state { PEER_NEW, PEER_CHALLENGED, PEER_OPEN, PEER_CLOSING };

struct peer {
	uint32_t		 pipe;
	char			 addr[64];	/* "10.0.0.7:50122", "ipc": for logs */
	char			 host[48];	/* the limiter's key; "" = not limited */
	enum peer_state		 state;
	int64_t			 since;		/* first message */
	struct msg		 hello;		/* CHALLENGED: the HELLO coord will get */
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	bool			 sealed;	/* OPEN with a session: sess is on */
	struct auth_session	 sess;
};

enum peer_action {
	PEER_ANSWER,	/* send *rep; if the peer is now CLOSING, close the pipe after */
	PEER_PASS,	/* hand *req to coord_handle; seal its reply with *seq */
	PEER_DROP,	/* close the pipe without a reply */
};

struct peers;

/* secret NULL or empty: peers open on HELLO (no handshake). */
struct peers	*peers_new(const struct auth_secret *secret);
void		 peers_free(struct peers *ps);
/* The peer of pipe, created on first sight.  O(peers), tens to hundreds. */
struct peer	*peers_get(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int64_t now);
struct peer	*peers_find(struct peers *ps, uint32_t pipe);
void		 peers_gone(struct peers *ps, uint32_t pipe);

/*
 * One raw message from p.  PEER_PASS: *req is decoded (msg_clear it after
 * coord_handle) and *seq is what the reply must carry.  PEER_ANSWER: *rep
 * is filled (NACK, CHALLENGE).  PEER_DROP: nothing to send.
 */
enum peer_action peer_recv(struct peers *ps, struct peer *p, const uint8_t *buf,
		    size_t len, int64_t now, struct msg *req, struct msg *rep,
		    uint64_t *seq);
/* Encodes rep for p, sealed with seq when p has a session; 0 or -1 with err. */
int		 peer_encode(const struct peer *p, const struct msg *rep, uint64_t seq,
		    uint8_t **buf, size_t *len, char *err);
/* Whether host's connections are refused now.  Thread-safe: nng's pipe
 * callback asks before a connection is admitted. */
bool		 peers_banned(struct peers *ps, const char *host, int64_t now);

#endif
