/*
 * The coordinator <-> worker wire format.  One codec, no transport: the
 * roles move the bytes over nng (req0 on the worker, rep0 on the
 * coordinator), one request and one reply at a time per context.
 *
 * A message is a 12-byte header followed by the body:
 *
 *	"SOAK"  u16 version  u16 type  u32 body_len
 *
 * all integers big-endian.  A body is a fixed sequence of fields per type:
 * u8, u32, u64, b32 (32 raw bytes: a nonce or a MAC), a string (u32
 * length, then bytes; no NUL inside), or bytes (u32 length, then raw
 * bytes, NULs and all: BUNDLE's data).
 * msg_decode checks the magic, the version (exactly MSG_VERSION), the
 * type, that body_len equals what follows, that every field fits, that
 * every string and bytes field is within its cap and every string
 * NUL-free, and that no byte is
 * left over.  Anything else is rejected with err saying which check failed
 * — a message off the network is never trusted for a length.
 *
 * Who sends what (request -> reply):
 *	worker HELLO      -> CHALLENGE (a shared secret is configured)
 *	                   | WELCOME (none: TLS client certificates, --insecure,
 *	                     ipc://) | NACK
 *	worker AUTH       -> WELCOME | NACK (then the connection closes)
 *	worker LEASE_REQ  -> LEASE | DONE         (held until work exists)
 *	worker RESULT     -> ACK (ok=0: refused, e.g. the lease expired)
 *	worker HEARTBEAT  -> ACK (ok=0: the lease is gone; drop it)
 *	worker BYE        -> ACK
 *	worker BUNDLE_REQ -> BUNDLE (the config folder, common/bundle.h: sent
 *	                     when WELCOME's bundle_hash is set and the worker
 *	                     has no copy of that hash) | NACK (--bundle off,
 *	                     or another hash)
 *	any malformed     -> NACK
 *
 * After a shared-secret handshake every message of the connection, both
 * ways, is sealed: the encoded message is followed by a sequence number
 * and a MAC (common/auth.h), checked before the message is decoded.
 * Which messages are sealed follows from the connection's state, never
 * from a flag in the message.
 */
#ifndef SOAK_MSG_H
#define SOAK_MSG_H

#include <stddef.h>
#include <stdint.h>

#define MSG_VERSION	6	/* 2: nonce HELLO, CHALLENGE, AUTH, sealed sessions;
				   3: HELLO rejoin, ACK keep, BYE drain;
				   4: LEASE and RESULT plan, plan_hash;
				   5: LEASE minimize_ms;
				   6: LEASE explore */
#define MSG_HDR_LEN	12
#define MSG_MAX		(16u << 20)	/* whole message */
#define MSG_STR_SHORT	4096		/* names, reasons, URLs */
#define MSG_STR_LONG	(8u << 20)	/* config text (WELCOME) */
#define MSG_BYTES_MAX	(8u << 20)	/* BUNDLE's data: common/bundle.h's BUNDLE_MAX */
/*
 * What a worker puts in a RESULT's detail, at most: worker/detail.c cuts
 * the detail to it, with markers, and sends a minimal one if even that does
 * not fit, so a big failure is never an encode error (a dead worker).  Far
 * under MSG_STR_LONG so that the coordinator's receive cap can come down to
 * it: the full data stays in the worker's kept failure directory.  Both
 * msg_encode and msg_decode hold a detail to it.
 */
#define MSG_DETAIL_MAX	(1u << 20)
/*
 * The largest message a worker sends: a RESULT with a reason and a detail
 * at their caps (HELLO, the next largest, is three MSG_STR_SHORT strings).
 */
#define MSG_RESULT_MAX	(MSG_HDR_LEN + 4 + 8 + 8 + 4 + 1 + 4 + MSG_STR_SHORT + \
			    4 + 4 + MSG_DETAIL_MAX + 4 + MSG_PLAN_MAX + 4 + \
			    MSG_PLAN_HASH_MAX)
/*
 * The coordinator's receive cap (NNG_OPT_RECVMAXSZ), about 1.01 MiB:
 * MSG_RESULT_MAX, a session trailer (common/auth.h's AUTH_TRAILER_LEN, 40
 * bytes) and the SP request id nng counts in (4), in 4 KiB of headroom.
 * nng allocates a message's declared size as its header arrives and keeps
 * one cap per socket, so this is what an unauthenticated connection can
 * make the coordinator hold; a declared size past it closes the
 * connection at the header.  Workers keep MSG_MAX: their WELCOME carries
 * the config text, a BUNDLE the config folder.
 */
#define MSG_COORD_RECV_MAX	(MSG_RESULT_MAX + 4096)
#define MSG_MAX_SEEDS	4096		/* per lease */
#define MSG_PLAN_MAX	200		/* a regression's name (common/regress.h) */
#define MSG_PLAN_HASH_MAX	64	/* its SHA-256, hex */
#define MSG_B32		32		/* a b32 field */

enum msg_type {
	MSG_HELLO = 1,
	MSG_WELCOME,
	MSG_LEASE_REQ,
	MSG_LEASE,
	MSG_DONE,
	MSG_RESULT,
	MSG_HEARTBEAT,
	MSG_ACK,
	MSG_NACK,
	MSG_BYE,
	MSG_CHALLENGE,
	MSG_AUTH,
	MSG_BUNDLE_REQ,
	MSG_BUNDLE,
	MSG_TYPE_MAX
};

enum msg_verdict { VERDICT_PASS = 0, VERDICT_FAIL = 1, VERDICT_INFRA = 2 };

struct msg_seed {
	uint64_t	seed;
	uint32_t	attempt;	/* 1-based */
};

struct msg {
	enum msg_type	type;
	union {
		struct {
			char		*name;		/* "host:pid" */
			char		*host;
			uint32_t	 pid;
			uint32_t	 slots;
			uint8_t		 nonce[MSG_B32];	/* Nw */
			/*
			 * A worker that lost its coordinator and dials again
			 * rejoins as the worker it was: its id and the run it
			 * was in (0 and "" for a new worker).  Honoured only for
			 * the same run, so its leases stay its own.
			 */
			uint32_t	 rejoin_id;
			char		*rejoin_run;
		} hello;
		struct {
			uint8_t		 nonce[MSG_B32];	/* Nc */
			uint8_t		 proof[MSG_B32];	/* proof_c */
		} challenge;
		struct {
			uint8_t		 proof[MSG_B32];	/* proof_w */
		} auth;
		struct {
			uint32_t	 worker_id;
			char		*run_id;
			char		*cfg_path;
			char		*cfg_text;
			char		*db_conninfo;	/* "" = the worker's own */
			char		*keep_dir;	/* "" = under the workspace */
			char		*workspace;	/* "" = the worker's default */
			uint32_t	 heartbeat_ms;
			/*
			 * The config folder's bundle (common/bundle.h), 64 hex
			 * digits; "" = none (--bundle off, `soak run`): the
			 * worker reads the folder at cfg_path's.
			 */
			char		*bundle_hash;
		} welcome;
		struct {
			uint32_t	 worker_id;
		} lease_req;
		struct {
			uint64_t	 lease_id;
			uint32_t	 ttl_ms;
			/*
			 * A regression's lease (common/regress.h): the plan's
			 * name and the SHA-256 of its file, and exactly one
			 * seed, the plan's; both "" for a lease of seeds.  The
			 * decoder holds them to that.
			 */
			char		*plan;
			char		*plan_hash;
			/*
			 * A minimize lease (tickets.minimize): its budget, and
			 * exactly one seed, the failing seed to minimize (never
			 * a regression's); 0 for any other lease.
			 */
			uint32_t	 minimize_ms;
			/*
			 * An explore lease (soak explore --listen): one
			 * execution, as JSON text (worker/xexec.h wrk_explore),
			 * and exactly one seed, the one explored, with the
			 * execution's number as its attempt; "" for any other
			 * lease.
			 */
			char		*explore;
			uint32_t	 nseeds;
			struct msg_seed	*seeds;
		} lease;
		struct {
			uint32_t	 worker_id;
			uint64_t	 lease_id;
			uint64_t	 seed;
			uint32_t	 attempt;
			char		*plan;		/* the lease's; "" for a seed */
			char		*plan_hash;
			uint8_t		 verdict;	/* enum msg_verdict */
			char		*reason;	/* "" for pass */
			uint32_t	 duration_ms;
			char		*detail;	/* JSON object text */
		} result;
		struct {
			uint32_t	 worker_id;
			uint64_t	 lease_id;
			uint64_t	 seed;		/* the seed running now */
		} heartbeat;
		struct {
			uint8_t		 ok;
			char		*text;
			/*
			 * An ACK of a RESULT: how many seeds of the lease, from
			 * its start, are still the worker's.  Another worker may
			 * take the unstarted tail (coordinator/coord.h); the
			 * worker starts no seed at or past keep.
			 */
			uint32_t	 keep;
		} ack;			/* also NACK and DONE (text only) */
		struct {
			uint32_t	 worker_id;
			/* 1: between seeds, handing the lease's unstarted seeds
			 * back (a draining worker); 0: the run is done for it. */
			uint8_t		 drain;
		} bye;
		struct {
			uint32_t	 worker_id;
			char		*hash;		/* WELCOME's bundle_hash */
		} bundle_req;
		struct {
			char		*hash;
			uint8_t		*data;		/* at most MSG_BYTES_MAX */
			uint32_t	 len;
		} bundle;
	} u;
};

const char	*msg_type_name(int type);
const char	*msg_verdict_name(int verdict);

/* Encodes m into a fresh heap buffer; 0 or -1 with err (a field too long). */
int		 msg_encode(const struct msg *m, uint8_t **buf, size_t *len, char *err);
/* Decodes; on success m owns heap strings and must be msg_clear()ed. */
int		 msg_decode(const void *buf, size_t len, struct msg *m, char *err);
void		 msg_clear(struct msg *m);

#endif
