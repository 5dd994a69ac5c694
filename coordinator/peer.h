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
 * coord_handle (requests.c) binds each worker id to the pipe that said
 * HELLO.
 *
 * A failed authentication (a wrong proof, an AUTH without a challenge, a
 * bad session MAC or sequence number) costs the connection that failed:
 * it is closed, logged (rate-limited, PEER_NOTE_AUTH), and nothing is
 * counted against its address.  There is no ban: an address is shared
 * (NAT, a Kubernetes node, the coordinator's own host), so a ban on it
 * can be aimed at the workers behind it by anyone who sends five wrong
 * proofs, or corrupts five packets of a worker's session, while the
 * attacker changes its source at will.  Guessing online buys nothing a
 * captured challenge does not already give offline (the secret is at
 * least 16 bytes), and each guess costs the guesser a connection, a
 * transport handshake and a round trip, and the coordinator two HMACs.
 * A worker that proves the secret always gets in.  Malformed messages
 * are refused, not failed: they try nothing.
 *
 * What a connection may cost before it has proved anything (common/msg.h
 * MSG_COORD_RECV_MAX bounds one message):
 *  - at most PEER_MAX_UNAUTH connections are not authenticated at a time,
 *    from all addresses together (the pre-auth pool, below);
 *  - each has PEER_HELLO_MS from being admitted to its first message, and
 *    PEER_AUTH_MS to being OPEN, or it is closed (peers_overdue): a
 *    connection that says nothing, or stalls in the middle of a message,
 *    gives back what it holds;
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
 *
 * The pre-auth pool: fair admission.  A cap alone is a lockout: whoever
 * fills its places with connections that never authenticate, and refills
 * each as soon as it is closed, keeps every new or rejoining worker out.
 * So when the pool is full a newcomer is not simply refused; it takes the
 * place of one that has given least (peers_admit), chosen in this order:
 *  1. per-address shares: when one address holds more than one place more
 *     than the newcomer's does, that address's oldest place (the least
 *     advanced first) goes: a flood from few addresses cannot crowd out
 *     another address;
 *  2. the oldest connection that has not sent a whole message yet (nng's
 *     SP header done, nothing since): a worker sends its HELLO at once, so
 *     silence is what a flood looks like;
 *  3. the oldest that has owed us its next message for PEER_QUIET_MS (a
 *     HELLO and then silence: a worker answers a CHALLENGE in a round trip);
 * in 2 and 3 only from an address that holds at least as many places as
 * the newcomer's will, so a crowded address never displaces a lone one.
 * Only when none qualifies — every place is a connection that is moving —
 * is the newcomer refused (PEER_NOTE_FULL), and its worker dials again:
 * an honest join storm is queued, and churned only where its addresses'
 * shares differ by two or a HELLO is not in yet (1,000 workers from 4
 * addresses: about 800 refusals, 150 displaced, all in in 1.5 s here).  A place that the loop
 * is working on, or whose reply is on its way, is pinned (peers_hold):
 * never taken, so the coordinator never closes a pipe under a send of its
 * own.  A worker's HELLO is in the coordinator's hands within a
 * millisecond of admission (peers_heard, on nng's thread, marks it), so a
 * silent flood from any number of addresses must bring PEER_MAX_UNAUTH
 * new connections within that millisecond to displace it.  The pool's
 * work is O(PEER_MAX_UNAUTH), a constant, under one mutex, on nng's pipe
 * callback.  What it does not solve: an attacker who completes HELLO from
 * more addresses than the pool has places, and answers nothing, makes
 * newcomers wait for PEER_QUIET_MS-old places.
 *
 * ipc:// connections are local and skip the pool and the deadlines.  Each
 * drop is logged once per reason per PEER_LOG_MS, the rest counted into
 * one line (peers_note): a flood makes a few lines.
 */
#ifndef SOAK_PEER_H
#define SOAK_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/auth.h"
#include "common/msg.h"

#define PEER_MAX_UNAUTH		64
#define PEER_HELLO_MS		1000
#define PEER_AUTH_MS		5000
#define PEER_QUIET_MS		1000
#define PEER_MAX_INFLIGHT_NEW	2
#define PEER_MAX_INFLIGHT	4
#define PEER_SEND_MS		10000
#define PEER_LOG_MS		10000

enum peer_state { PEER_NEW, PEER_CHALLENGED, PEER_OPEN, PEER_CLOSING };

struct peer {
	uint32_t		 pipe;
	char			 addr[64];	/* "10.0.0.7:50122", "ipc": for logs */
	char			 host[48];	/* its address, the pool's key; "" = local */
	int			 fd;		/* its socket (common/fdtab.h), or -1 */
	enum peer_state		 state;
	int64_t			 since;		/* connected (first seen) */
	int64_t			 deadline;	/* the next time it may be overdue; host "": none */
	bool			 pooled;	/* holds a place of the pre-auth pool */
	int			 inflight;	/* requests not yet answered */
	bool			 shut;		/* CLOSING, its socket shut (server.c) */
	struct msg		 hello;		/* CHALLENGED: the HELLO coord will get */
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	bool			 sealed;	/* OPEN with a session: sess is on */
	struct auth_session	 sess;
	struct peer		*hnext;		/* peers' hash of pipe ids */
	size_t			 vidx;		/* its index in peers' array */
};

enum peer_action {
	PEER_ANSWER,	/* send *rep; if the peer is now CLOSING, close the pipe after */
	PEER_PASS,	/* hand *req to coord_handle; seal its reply with *seq */
	PEER_DROP,	/* close the pipe without a reply */
};

/* What peers_note logs, rate-limited: the drops, and refusals a flood repeats. */
enum peer_note {
	PEER_NOTE_FULL,		/* closed: every place of the pool is moving */
	PEER_NOTE_EVICTED,	/* closed: its place given to a newcomer */
	PEER_NOTE_SILENT,	/* closed: no message within PEER_HELLO_MS */
	PEER_NOTE_SLOW,		/* closed: not OPEN within PEER_AUTH_MS */
	PEER_NOTE_FLOOD,	/* closed: too many requests in flight */
	PEER_NOTE_DEAF,		/* closed: a reply not taken within PEER_SEND_MS */
	PEER_NOTE_AUTH,		/* closed: a failed authentication */
	PEER_NOTE_MALFORMED,	/* a malformed message refused */
	PEER_NOTE_EARLY,	/* a request before HELLO refused */
	PEER_NNOTES
};

enum peer_admit { PEER_ADMITTED, PEER_FULL };

/* What peers_admit displaced to make room: pipe 0 when nothing. */
struct peer_evicted {
	uint32_t	pipe;
	int		fd;		/* as peers_admit was given it */
	char		addr[64];
};

struct peers;

/* secret NULL or empty: peers open on HELLO (no handshake). */
struct peers	*peers_new(const struct auth_secret *secret);
void		 peers_free(struct peers *ps);
/* The peer of pipe, created on first sight.  O(1) (a hash of pipe ids). */
struct peer	*peers_get(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int64_t now);
struct peer	*peers_find(struct peers *ps, uint32_t pipe);
/*
 * Whether pipe, a connection from host (its socket fd, or -1), may be
 * added, asked by nng's pipe callback before it is (thread-safe): the
 * pre-auth pool's rules above.  PEER_ADMITTED gives it a place until it
 * opens or is gone, and *ev is the connection it displaced (pipe 0: none),
 * whose place is gone already: the caller shuts it at once (no place it
 * displaces is pinned, so nothing of ours is on the way to it) and tells
 * the loop (peers_evicted).  The peer must then be made with peers_add,
 * once, before any message of it.  PEER_FULL: logged, nothing changed.
 * Connections with host "" (ipc://) are admitted, not pooled.
 */
enum peer_admit	 peers_admit(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int fd, int64_t now, struct peer_evicted *ev);
/* nng's thread: a whole message of pipe arrived (O(PEER_MAX_UNAUTH)). */
void		 peers_heard(struct peers *ps, uint32_t pipe, int64_t now);
/* The peer of an admitted pipe; it has PEER_HELLO_MS from now to speak. */
struct peer	*peers_add(struct peers *ps, uint32_t pipe, const char *addr,
		    const char *host, int fd, int64_t now);
/* The loop: pipe lost its place to a newcomer (PEER_CLOSING, shut, logged). */
void		 peers_evicted(struct peers *ps, uint32_t pipe, int64_t now);
/*
 * Closes (PEER_CLOSING, logged PEER_NOTE_SILENT or PEER_NOTE_SLOW) the
 * peers whose time is up at now and puts their pipes in out, at most n;
 * the caller closes them and asks again while n come back.  *next: the
 * next deadline, or -1.  O(peers).
 */
size_t		 peers_overdue(struct peers *ps, int64_t now, uint32_t *out, size_t n,
		    int64_t *next);
/*
 * A request from p arrived: false when it is one too many in flight (p is
 * now CLOSING, logged PEER_NOTE_FLOOD), or p lost its place meanwhile
 * (CLOSING and shut); either way close the pipe, send nothing.  For a
 * pooled peer a true pins its place until the matching peer_replied.
 * Every true is matched by one peer_replied once its reply is handed over
 * or it is dropped unanswered.
 */
bool		 peer_request(struct peers *ps, struct peer *p, int64_t now);
void		 peer_replied(struct peers *ps, struct peer *p, int64_t now);
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
/* Places of the pre-auth pool taken now (for tests and logs). */
int		 peers_pooled(struct peers *ps);

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

#endif
