/*
 * Who may talk to whom (docs/design.md, "Across machines"): the auth
 * matrix, the shared-secret challenge-response, and the session MACs that
 * follow it.  HMAC-SHA256 and the constant-time compare are OpenSSL's
 * libcrypto; nothing here is crypto of our own.
 *
 * The matrix.  On any URL but ipc:// the coordinator must authenticate its
 * workers (a shared secret, or TLS client certificates: --tls-client-ca)
 * and every worker must authenticate its coordinator (a shared secret, or
 * the coordinator's TLS certificate: --tls-ca), before the coordinator
 * sends anything of the config and before a worker runs, creates or
 * deletes anything.  --insecure waives what is missing, with a warning.
 *
 * The handshake, when a secret K is configured (SOAK_SECRET or
 * --secret-file; Nw, Nc fresh 32-byte nonces from getrandom()):
 *
 *	worker       HELLO {Nw, name, host, pid, slots}  (no secret)
 *	coordinator  CHALLENGE {Nc, proof_c}
 *		     proof_c = HMAC(K, "soak coordinator" || Nw || Nc)
 *	worker       checks proof_c in constant time: only now is the
 *		     coordinator proven
 *	worker       AUTH {proof_w}
 *		     proof_w = HMAC(K, "soak worker" || Nw || Nc)
 *	coordinator  checks proof_w: the worker is proven; WELCOME (sealed)
 *
 * The challenge belongs to the connection that said HELLO and is used
 * once.  Both sides then hold S = HMAC(K, "soak session" || Nw || Nc), and
 * every later message is sealed: its encoded bytes (common/msg.h) are
 * followed by a trailer
 *
 *	u64 seq  ||  HMAC(S, dir || seq || message)	(AUTH_TRAILER_LEN bytes)
 *
 * dir is 'w' from worker to coordinator and 'c' back.  A worker numbers
 * its requests from 1 per connection; a reply carries the seq of the
 * request it answers (the WELCOME, answering AUTH, carries 0), so a reply
 * cannot be moved onto another request.  The coordinator accepts each seq
 * once, up to AUTH_WINDOW below the highest it has seen (a worker's two
 * contexts may overtake each other on the way).  A message that fails its
 * MAC or its seq closes the connection.
 *
 * Nothing that crosses the wire replays: both sides contribute a nonce.
 * The MACs protect integrity, not confidentiality: without TLS the config
 * and the database URL travel readable.  Every CHALLENGE is a MAC under K
 * of data its asker chose, so a short secret could be guessed offline:
 * AUTH_SECRET_MIN bytes at least.
 */
#ifndef SOAK_AUTH_H
#define SOAK_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE_LEN		32
#define AUTH_MAC_LEN		32
#define AUTH_TRAILER_LEN	(8 + AUTH_MAC_LEN)
#define AUTH_SECRET_MIN		16
#define AUTH_SECRET_MAX		1024
#define AUTH_WINDOW		64	/* seqs a request may lag the highest */

struct auth_secret {
	uint8_t	*key;
	size_t	 len;		/* 0: none configured */
};

/* Command-line options of both roles; NULL/false when not given. */
struct auth_opts {
	struct auth_secret	 secret;
	const char		*secret_file;
	const char		*tls_cert;	/* own certificate and key, one PEM */
	const char		*tls_ca;	/* worker: CA(s) of the coordinator's cert */
	const char		*tls_client_ca;	/* coordinator: CA(s) of workers' certs */
	const char		*tls_server_name; /* worker: default the URL's host */
	bool			 insecure;
};

enum auth_role { AUTH_COORDINATOR, AUTH_WORKER };

enum auth_dir { AUTH_TO_COORDINATOR = 'w', AUTH_TO_WORKER = 'c' };

/* The receiving side of a session also keeps its replay window. */
struct auth_session {
	uint8_t		key[AUTH_MAC_LEN];
	uint64_t	hi;		/* highest seq accepted */
	uint64_t	seen;		/* bit i: seq hi - i accepted */
};

/*
 * Reads the secret from file (when not NULL) or else from the environment
 * variable SOAK_SECRET, which is then removed from the environment so no
 * child (turns, services, PostgreSQL, ticket commands) inherits it.  A
 * file must be a regular file that neither group nor others can read or
 * write; one trailing newline is dropped.  Neither set: s->len == 0 and 0.
 */
int	 auth_secret_load(const char *file, struct auth_secret *s, char *err);
void	 auth_secret_free(struct auth_secret *s);

/*
 * The matrix above, for url and o, before anything listens or dials.  0:
 * every direction is authenticated (or the URL is ipc://); 1: only
 * --insecure lets it go, and warn (ERR_LEN) says what is left open; -1:
 * refused, err says how to fix it (exit 64).  Also refuses TLS options on
 * a URL that is not tls+tcp://.
 */
int	 auth_policy(enum auth_role role, const char *url, const struct auth_opts *o,
	    char *warn, char *err);
bool	 auth_url_is_tls(const char *url);
bool	 auth_url_is_ipc(const char *url);

int	 auth_nonce(uint8_t nonce[AUTH_NONCE_LEN], char *err);
/* proof_c (role AUTH_COORDINATOR) or proof_w (AUTH_WORKER). */
void	 auth_proof(const struct auth_secret *k, enum auth_role role,
	    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
	    uint8_t out[AUTH_MAC_LEN]);
/* Whether proof is role's proof for (nw, nc); compared in constant time. */
bool	 auth_proof_ok(const struct auth_secret *k, enum auth_role role,
	    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
	    const uint8_t proof[AUTH_MAC_LEN]);

/* S for (nw, nc), with an empty replay window (seq 0 counts as used). */
void	 auth_session_init(struct auth_session *s, const struct auth_secret *k,
	    const uint8_t nw[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN]);
void	 auth_session_clear(struct auth_session *s);
/* Appends the trailer for (dir, seq) to the message in *buf (reallocated). */
void	 auth_seal(const struct auth_session *s, enum auth_dir dir, uint64_t seq,
	    uint8_t **buf, size_t *len);
/*
 * Checks the trailer of buf as sent in direction dir: 0 with *seq and
 * *msglen (the message before the trailer), or -1 with err.  The MAC is
 * compared in constant time; the seq is not judged here.
 */
int	 auth_open(const struct auth_session *s, enum auth_dir dir,
	    const uint8_t *buf, size_t len, uint64_t *seq, size_t *msglen, char *err);
/* The receiving side's replay window: 0 the first time seq is seen, else -1. */
int	 auth_seq_accept(struct auth_session *s, uint64_t seq, char *err);

#endif
