/*
 * libFuzzer target for the coordinator's side of a connection before and
 * around authentication (coordinator/peer.c: peer_recv and the HELLO and
 * AUTH decoders behind it, the pre-auth pool, the deadlines), with a
 * shared secret, no sockets.  The input is a program of records:
 *
 *	op byte (op % 8), then, for ops 0 and 1, a 2-byte length and that
 *	many bytes
 *	0  the bytes, as a message, to the current connection
 *	1  the bytes sealed with the session the harness holds for it (a
 *	   worker that proved itself), or as they are when it holds none
 *	2  the right AUTH for the current connection's CHALLENGE, if it got
 *	   one: the only way in, and the harness knows when it used it
 *	3  a new connection (the next byte picks one of 8 addresses, or a
 *	   local one), admitted by the pool or refused; it becomes current
 *	4  the next byte picks the current connection
 *	5  nng's thread hears a whole message of it (peers_heard)
 *	6  the clock moves on by the next byte x 40 ms; the overdue are closed
 *	7  the connection goes (its pipe closes)
 *
 * Checks: a connection is OPEN only after the harness's right AUTH (no
 * bytes the fuzzer makes get one in); PEER_PASS hands over a decoded
 * request, never an AUTH or a second HELLO, only from an OPEN peer; every
 * answer is a NACK or a CHALLENGE that encodes and decodes again; a
 * CLOSING connection never gets anything more; the pool never holds more
 * than PEER_MAX_UNAUTH places; and nothing leaks (LeakSanitizer).
 */
#include <string.h>

#include "common/auth.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"
#include "coordinator/peer.h"
#include "tests/fuzz/fuzz.h"

#define MAX_CONNS	16

static struct auth_secret	K = { UNCONST("the fuzzer's secret, 32 bytes!!!"), 32 };

struct conn {
	uint32_t		 pipe;
	bool			 alive;		/* admitted, not gone */
	bool			 proved;	/* the harness sent the right AUTH */
	bool			 challenged;
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	bool			 sealed;
	struct auth_session	 sess;
	uint64_t		 seq;
};

struct run {
	struct peers	*ps;
	struct conn	 c[MAX_CONNS];
	int		 n, cur;
	int64_t		 now;
	uint32_t	 next_pipe;
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz", 0);
	return 0;
}

/* One message to the current connection, and what the peer makes of it. */
static void
feed(struct run *r, const uint8_t *bytes, size_t len, bool seal)
{
	struct conn		*c = &r->c[r->cur];
	struct peer		*p = peers_find(r->ps, c->pipe);
	struct msg		 req, rep, hello;
	enum peer_action	 a;
	enum peer_state		 was;
	uint8_t			*buf, *enc = NULL;
	size_t			 blen = len, elen;
	uint64_t		 seq;
	char			 err[ERR_LEN];

	if (!c->alive || p == NULL)
		return;
	buf = xcalloc(1, len + AUTH_TRAILER_LEN + 1);
	memcpy(buf, bytes, len);
	if (seal && c->sealed) {
		uint8_t	*sb = xcalloc(1, len + 1);

		memcpy(sb, bytes, len);
		free(buf);
		buf = sb;
		auth_seal(&c->sess, AUTH_TO_COORDINATOR, ++c->seq, &buf, &blen);
	}
	/* What the harness needs to answer a CHALLENGE: the HELLO's nonce. */
	if (msg_decode(bytes, len, &hello, err) == 0) {
		if (hello.type == MSG_HELLO)
			memcpy(c->nw, hello.u.hello.nonce, AUTH_NONCE_LEN);
		msg_clear(&hello);
	}
	was = p->state;
	if (!peer_request(r->ps, p, r->now)) {
		free(buf);
		return;
	}
	a = peer_recv(r->ps, p, buf, blen, r->now, &req, &rep, &seq);
	free(buf);
	if (was == PEER_CLOSING)
		FUZZ_CHECK(a == PEER_DROP, "a closing connection got action %d", a);
	if (p->state == PEER_OPEN)
		FUZZ_CHECK(c->proved, "OPEN without the right proof");
	switch (a) {
	case PEER_PASS:
		FUZZ_CHECK(p->state == PEER_OPEN, "PASS from a peer in state %d", p->state);
		FUZZ_CHECK(req.type != MSG_AUTH && (req.type != MSG_HELLO || was ==
		    PEER_CHALLENGED), "PASS of a %s", msg_type_name(req.type));
		if (req.type == MSG_HELLO) {
			/* The session the right AUTH opened: the harness's too. */
			auth_session_init(&c->sess, &K, c->nw, c->nc);
			c->sealed = true;
			c->seq = 0;
		}
		msg_clear(&req);
		break;
	case PEER_ANSWER:
		FUZZ_CHECK(rep.type == MSG_NACK || rep.type == MSG_CHALLENGE,
		    "an answer of type %s", msg_type_name(rep.type));
		FUZZ_CHECK(peer_encode(p, &rep, seq, &enc, &elen, err) == 0,
		    "an answer that does not encode: %s", err);
		if (!p->sealed) {
			struct msg	back;

			FUZZ_CHECK(msg_decode(enc, elen, &back, err) == 0,
			    "an answer that does not decode: %s", err);
			msg_clear(&back);
		}
		free(enc);
		if (rep.type == MSG_CHALLENGE) {
			memcpy(c->nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
			c->challenged = true;
		}
		msg_clear(&rep);
		break;
	case PEER_DROP:
		break;
	}
	peer_replied(r->ps, p, r->now);
}

/* The AUTH a worker with the secret sends to answer the CHALLENGE. */
static void
right_auth(struct run *r)
{
	struct conn	*c = &r->c[r->cur];
	struct peer	*p = peers_find(r->ps, c->pipe);
	struct msg	 m = { .type = MSG_AUTH };
	uint8_t		*buf;
	size_t		 len;
	char		 err[ERR_LEN];

	if (!c->alive || !c->challenged || p == NULL || p->state != PEER_CHALLENGED)
		return;
	auth_proof(&K, AUTH_WORKER, c->nw, c->nc, m.u.auth.proof);
	FUZZ_CHECK(msg_encode(&m, &buf, &len, err) == 0, "AUTH: %s", err);
	c->proved = true;
	feed(r, buf, len, false);
	free(buf);
}

static void
connect_one(struct run *r, uint8_t which)
{
	static const char *const hosts[] = { "192.0.2.1", "192.0.2.2", "198.51.100.7",
	    "203.0.113.9", "10.0.0.1", "10.0.0.2", "2001:db8::1", "127.0.0.1", "" };
	struct peer_evicted	 ev;
	const char		*host = hosts[which % 9];
	char			 addr[64];
	struct conn		*c;

	if (r->n == MAX_CONNS)
		return;
	snprintf(addr, sizeof(addr), "%s:%u", *host ? host : "local", r->next_pipe);
	if (peers_admit(r->ps, r->next_pipe, addr, host, -1, r->now, &ev) != PEER_ADMITTED) {
		r->next_pipe++;
		return;
	}
	peers_add(r->ps, r->next_pipe, addr, host, -1, r->now);
	if (ev.pipe != 0)
		peers_evicted(r->ps, ev.pipe, r->now);
	FUZZ_CHECK(peers_pooled(r->ps) <= PEER_MAX_UNAUTH, "%d places taken",
	    peers_pooled(r->ps));
	c = &r->c[r->n];
	memset(c, 0, sizeof(*c));
	c->pipe = r->next_pipe++;
	c->alive = true;
	r->cur = r->n++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run	r = { .ps = peers_new(&K), .now = 1000, .next_pipe = 1 };
	size_t		i = 0, len;
	uint32_t	out[8];
	int64_t		next;
	int		k;

	connect_one(&r, 0);
	while (i < size) {
		uint8_t	op = data[i++] % 8;

		switch (op) {
		case 0:
		case 1:
			if (i + 2 > size)
				goto done;
			len = (size_t)data[i] << 8 | data[i + 1];
			i += 2;
			if (len > size - i)
				len = size - i;
			if (r.n > 0)
				feed(&r, data + i, len, op == 1);
			i += len;
			break;
		case 2:
			if (r.n > 0)
				right_auth(&r);
			break;
		case 3:
			connect_one(&r, i < size ? data[i++] : 0);
			break;
		case 4:
			if (i < size && r.n > 0)
				r.cur = data[i++] % r.n;
			break;
		case 5:
			if (r.n > 0)
				peers_heard(r.ps, r.c[r.cur].pipe, r.now);
			break;
		case 6:
			r.now += 40 * (int64_t)(i < size ? data[i++] : 1);
			while (peers_overdue(r.ps, r.now, out, 8, &next) == 8)
				;
			break;
		case 7:
			if (r.n > 0 && r.c[r.cur].alive) {
				peers_gone(r.ps, r.c[r.cur].pipe);
				r.c[r.cur].alive = false;
			}
			break;
		}
	}
done:
	for (k = 0; k < r.n; k++)
		if (r.c[k].sealed)
			auth_session_clear(&r.c[k].sess);
	peers_free(r.ps);
	return 0;
}
