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
 *
 * What a connection may cost before it has proved anything (common/msg.h
 * MSG_COORD_RECV_MAX bounds one message):
 *  - at most PEER_MAX_UNAUTH connections are not authenticated at a time,
 *    from all addresses together: more are closed as they arrive
 *    (peers_admit);
 *  - each has PEER_AUTH_MS from connecting to being OPEN, or it is closed
 *    (peers_overdue): a connection that says nothing, or stalls in the
 *    middle of a message, gives back what it holds;
 *  - requests in flight (received, their reply not yet taken by nng): at
 *    most PEER_MAX_INFLIGHT_NEW before OPEN (HELLO, and AUTH while the
 *    CHALLENGE is still being handed over) and PEER_MAX_INFLIGHT once OPEN
 *    (a worker's main and heartbeat contexts, each with a request and the
 *    reply to its previous one perhaps still in hand); one more closes the
 *    connection (peer_request);
 *  - a reply that nng cannot hand to the connection within PEER_SEND_MS
 *    (the peer does not read) frees its slot and closes the connection.
 * So unauthenticated connections hold at most PEER_MAX_UNAUTH *
 * PEER_MAX_INFLIGHT_NEW of the coordinator's slots, for PEER_AUTH_MS.
 * ipc:// connections are local and skip the first two, as they skip the
 * limiter.  Each drop is logged once per reason per PEER_LOG_MS, the
 * rest counted into one line (peers_note): a flood makes a few lines.
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
#define PEER_MAX_UNAUTH		64
#define PEER_AUTH_MS		5000
#define PEER_MAX_INFLIGHT_NEW	2
#define PEER_MAX_INFLIGHT	4
#define PEER_SEND_MS		10000
#define PEER_LOG_MS		10000

enum peer_state { PEER_NEW, PEER_CHALLENGED, PEER_OPEN, PEER_CLOSING };

struct peer {
	uint32_t		 pipe;
	char			 addr[64];	/* "10.0.0.7:50122", "ipc": for logs */
	char			 host[48];	/* the limiter's key; "" = not limited */
	enum peer_state		 state;
	int64_t			 since;		/* connected (first seen) */
	int64_t			 deadline;	/* to be OPEN by; host "": none */
	bool			 counted;	/* in peers' unauthenticated count */
	int			 inflight;	/* requests not yet answered */
	bool			 shut;		/* CLOSING, its socket shut (server.c) */
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

/* What peers_note logs, rate-limited: the drops, and refusals a flood repeats. */
enum peer_note {
	PEER_NOTE_FULL,		/* closed: PEER_MAX_UNAUTH unauthenticated already */
	PEER_NOTE_SLOW,		/* closed: not OPEN within PEER_AUTH_MS */
	PEER_NOTE_FLOOD,	/* closed: too many requests in flight */
	PEER_NOTE_DEAF,		/* closed: a reply not taken within PEER_SEND_MS */
	PEER_NOTE_MALFORMED,	/* a malformed message refused */
	PEER_NOTE_EARLY,	/* a request before HELLO refused */
	PEER_NNOTES
};

enum peer_admit { PEER_ADMITTED, PEER_BANNED, PEER_FULL };

struct peers;

/* secret NULL or empty: peers open on HELLO (no handshake). */
struct peers	*peers_new(const struct auth_secret *secret);
void		 peers_free(struct peers *ps);
/* The peer of pipe, created on first sight.  O(peers), tens to hundreds. */
struct peer	*peers_get(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int64_t now);
struct peer	*peers_find(struct peers *ps, uint32_t pipe);
/*
 * Whether a connection from host may be added, asked by nng's pipe
 * callback before it is (thread-safe): not while host is banned, nor past
 * PEER_MAX_UNAUTH (logged, PEER_NOTE_FULL).  PEER_ADMITTED counts it as
 * unauthenticated until it opens or is gone: its peer must then be made
 * with peers_add, once, before any message of it.
 */
enum peer_admit	 peers_admit(struct peers *ps, const char *addr, const char *host,
		    int64_t now);
/* The peer of an admitted pipe; it has PEER_AUTH_MS from now to open. */
struct peer	*peers_add(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int64_t now);
/*
 * Closes (PEER_CLOSING, logged PEER_NOTE_SLOW) the peers whose time to
 * authenticate is up at now and puts their pipes in out, at most n; the
 * caller closes them and asks again while n come back.  *next: the next
 * deadline, or -1.  O(peers).
 */
size_t		 peers_overdue(struct peers *ps, int64_t now, uint32_t *out, size_t n,
		    int64_t *next);
/*
 * A request from p arrived: false when it is one too many in flight (p is
 * now CLOSING, logged PEER_NOTE_FLOOD; close the pipe, send nothing).
 * Every true is matched by one peer_replied once its reply is handed over
 * or it is dropped unanswered.
 */
bool		 peer_request(struct peers *ps, struct peer *p, int64_t now);
void		 peer_replied(struct peer *p);
/* p is dropped for why (its pipe to be closed by the caller): CLOSING, logged. */
void		 peer_drop(struct peers *ps, struct peer *p, enum peer_note why,
		    int64_t now);
/*
 * Logs what, about the connection at addr (detail: escaped already, or
 * NULL): the first time in PEER_LOG_MS in full, the rest counted into the
 * line peers_note_flush writes.  Thread-safe.
 */
void		 peers_note(struct peers *ps, enum peer_note what, const char *addr,
		    const char *detail, int64_t now);
/* Writes the counts of notes whose PEER_LOG_MS is over (all: every count). */
void		 peers_note_flush(struct peers *ps, int64_t now, bool all);
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
