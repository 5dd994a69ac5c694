/*
 * The coordinator's connections (coordinator/peer.h) without a socket:
 * the handshake both ways, nothing reaching coord before it, a captured
 * HELLO+AUTH replayed on another connection, sealed messages replayed or
 * altered, no ban by address, and the pre-auth pool's fair admission.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/auth.h"
#include "common/msg.h"
#include "common/util.h"
#include "coordinator/peer.h"

static struct auth_secret	K = { UNCONST("the right secret, 32 bytes long!"), 32 };
static struct auth_secret	WRONG = { UNCONST("the wrong secret, also 32 bytes!"), 32 };
static int64_t			feed_now;	/* the clock feed() gives peer_recv */

static uint8_t *
enc(const struct msg *m, size_t *len)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;

	assert_int_equal(msg_encode(m, &buf, len, err), 0);
	return buf;
}

/* Feeds m (optionally sealed as the worker would) to p. */
static enum peer_action
feed(struct peers *ps, struct peer *p, const struct msg *m,
    const struct auth_session *seal, uint64_t seq, struct msg *req, struct msg *rep,
    uint64_t *rseq)
{
	enum peer_action	 a;
	uint8_t			*buf;
	size_t			 len;

	buf = enc(m, &len);
	if (seal)
		auth_seal(seal, AUTH_TO_COORDINATOR, seq, &buf, &len);
	a = peer_recv(ps, p, buf, len, feed_now, req, rep, rseq);
	free(buf);
	return a;
}

static struct msg
hello(const uint8_t nw[AUTH_NONCE_LEN])
{
	struct msg	m = { .type = MSG_HELLO };

	m.u.hello.name = "w:1";
	m.u.hello.host = "w";
	memcpy(m.u.hello.nonce, nw, AUTH_NONCE_LEN);
	return m;
}

static void
test_no_secret_opens_on_hello(void **state)
{
	struct peers	*ps = peers_new(NULL);
	struct peer	*p = peers_get(ps, 7, "127.0.0.1:1", "127.0.0.1", 0);
	struct msg	 m = { .type = MSG_LEASE_REQ }, req, rep;
	uint8_t		 nw[AUTH_NONCE_LEN] = { 0 };
	uint64_t	 seq;

	(void)state;
	/* Nothing before HELLO reaches coord. */
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_ANSWER);
	assert_int_equal(rep.type, MSG_NACK);
	assert_non_null(strstr(rep.u.ack.text, "say hello first"));
	msg_clear(&rep);
	m = hello(nw);
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_PASS);
	assert_int_equal(req.type, MSG_HELLO);
	assert_int_equal(p->state, PEER_OPEN);
	assert_false(p->sealed);
	msg_clear(&req);
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_ANSWER);
	assert_int_equal(rep.type, MSG_NACK);
	msg_clear(&rep);
	assert_ptr_equal(peers_find(ps, 7), p);
	peers_gone(ps, 7);
	assert_null(peers_find(ps, 7));
	peers_free(ps);
}

/*
 * The worker's side of a handshake against p: returns the worker's
 * session; *wire_hello and *wire_auth are the bytes it sent.
 */
static void
handshake(struct peers *ps, struct peer *p, const struct auth_secret *wk,
    struct auth_session *ws, enum peer_action *auth_act, struct msg *auth_rep,
    struct msg *passed)
{
	struct msg	m, req, rep;
	uint8_t		nw[AUTH_NONCE_LEN];
	char		err[ERR_LEN];
	uint64_t	seq;

	assert_int_equal(auth_nonce(nw, err), 0);
	m = hello(nw);
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_ANSWER);
	assert_int_equal(rep.type, MSG_CHALLENGE);
	assert_int_equal(p->state, PEER_CHALLENGED);
	/* The coordinator proves itself first, and only to the right key. */
	assert_true(auth_proof_ok(&K, AUTH_COORDINATOR, nw, rep.u.challenge.nonce,
	    rep.u.challenge.proof));
	assert_false(auth_proof_ok(&WRONG, AUTH_COORDINATOR, nw,
	    rep.u.challenge.nonce, rep.u.challenge.proof));
	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	auth_proof(wk, AUTH_WORKER, nw, rep.u.challenge.nonce, m.u.auth.proof);
	auth_session_init(ws, wk, nw, rep.u.challenge.nonce);
	msg_clear(&rep);
	*auth_act = feed(ps, p, &m, NULL, 0, passed, auth_rep, &seq);
	if (*auth_act == PEER_PASS)
		assert_true(seq == 0);
}

static void
test_secret_handshake(void **state)
{
	struct peers		*ps = peers_new(&K);
	struct peer		*p = peers_get(ps, 1, "10.0.0.1:5", "10.0.0.1", 0);
	struct auth_session	 ws;
	struct msg		 rep, req, welcome = { .type = MSG_WELCOME }, m;
	enum peer_action	 a;
	char			 err[ERR_LEN];
	uint8_t			*buf;
	size_t			 len, mlen;
	uint64_t		 seq;

	(void)state;
	handshake(ps, p, &K, &ws, &a, &rep, &req);
	assert_int_equal(a, PEER_PASS);
	/* coord gets the HELLO as the worker sent it, only now. */
	assert_int_equal(req.type, MSG_HELLO);
	assert_string_equal(req.u.hello.name, "w:1");
	assert_int_equal(p->state, PEER_OPEN);
	assert_true(p->sealed);
	msg_clear(&req);
	/* The WELCOME is sealed with seq 0 for the worker's session. */
	welcome.u.welcome.cfg_text = "commands";
	assert_int_equal(peer_encode(p, &welcome, 0, &buf, &len, err), 0);
	assert_int_equal(auth_open(&ws, AUTH_TO_WORKER, buf, len, &seq, &mlen, err), 0);
	assert_true(seq == 0);
	free(buf);
	/* Sealed requests pass once each; their seq is the reply's. */
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE_REQ;
	m.u.lease_req.worker_id = 1;
	assert_int_equal(feed(ps, p, &m, &ws, 1, &req, &rep, &seq), PEER_PASS);
	assert_true(seq == 1);
	msg_clear(&req);
	assert_int_equal(feed(ps, p, &m, &ws, 3, &req, &rep, &seq), PEER_PASS);
	msg_clear(&req);
	assert_int_equal(feed(ps, p, &m, &ws, 2, &req, &rep, &seq), PEER_PASS);
	msg_clear(&req);
	/* A second AUTH on an open connection is a failure. */
	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	assert_int_equal(feed(ps, p, &m, &ws, 4, &req, &rep, &seq), PEER_ANSWER);
	assert_int_equal(p->state, PEER_CLOSING);
	msg_clear(&rep);
	auth_session_clear(&ws);
	peers_free(ps);
}

static void
test_sealed_replay_and_tamper(void **state)
{
	struct peers		*ps = peers_new(&K);
	struct peer		*p;
	struct auth_session	 ws;
	struct msg		 rep, req, m = { .type = MSG_HEARTBEAT };
	enum peer_action	 a;
	uint8_t			*buf;
	size_t			 len;
	uint64_t		 seq;
	int			 round;

	(void)state;
	for (round = 0; round < 3; round++) {
		p = peers_get(ps, 10 + round, "127.0.0.1:9", "", 0);
		handshake(ps, p, &K, &ws, &a, &rep, &req);
		assert_int_equal(a, PEER_PASS);
		msg_clear(&req);
		buf = enc(&m, &len);
		if (round == 0) {
			/* The same sealed bytes twice: the second closes the pipe. */
			auth_seal(&ws, AUTH_TO_COORDINATOR, 1, &buf, &len);
			assert_int_equal(peer_recv(ps, p, buf, len, 0, &req, &rep, &seq),
			    PEER_PASS);
			msg_clear(&req);
			assert_int_equal(peer_recv(ps, p, buf, len, 0, &req, &rep, &seq),
			    PEER_DROP);
		} else if (round == 1) {
			/* Unsealed after the handshake: dropped, never decoded. */
			assert_int_equal(peer_recv(ps, p, buf, len, 0, &req, &rep, &seq),
			    PEER_DROP);
		} else {
			auth_seal(&ws, AUTH_TO_COORDINATOR, 1, &buf, &len);
			buf[MSG_HDR_LEN + 2] ^= 0x80;
			assert_int_equal(peer_recv(ps, p, buf, len, 0, &req, &rep, &seq),
			    PEER_DROP);
		}
		assert_int_equal(p->state, PEER_CLOSING);
		free(buf);
		auth_session_clear(&ws);
	}
	peers_free(ps);
}

static void
test_wrong_secret_and_replay(void **state)
{
	struct peers		*ps = peers_new(&K);
	struct peer		*p, *q;
	struct auth_session	 ws;
	struct msg		 rep, req, m;
	enum peer_action	 a;
	uint8_t			*hello_bytes, *auth_bytes, nw[AUTH_NONCE_LEN] = { 1 };
	size_t			 hlen, alen;
	uint64_t		 seq;

	(void)state;
	/* A worker with another secret is refused, and the pipe closes. */
	p = peers_get(ps, 1, "10.0.0.2:1", "10.0.0.2", 0);
	handshake(ps, p, &WRONG, &ws, &a, &rep, &req);
	assert_int_equal(a, PEER_ANSWER);
	assert_int_equal(rep.type, MSG_NACK);
	assert_string_equal(rep.u.ack.text, "authentication failed");
	assert_int_equal(p->state, PEER_CLOSING);
	msg_clear(&rep);
	m = hello(nw);
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_DROP);
	/* A good exchange, captured, and replayed on another connection. */
	p = peers_get(ps, 2, "10.0.0.3:1", "10.0.0.3", 0);
	m = hello(nw);
	hello_bytes = enc(&m, &hlen);
	assert_int_equal(peer_recv(ps, p, hello_bytes, hlen, 0, &req, &rep, &seq),
	    PEER_ANSWER);
	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	auth_proof(&K, AUTH_WORKER, nw, rep.u.challenge.nonce, m.u.auth.proof);
	msg_clear(&rep);
	auth_bytes = enc(&m, &alen);
	assert_int_equal(peer_recv(ps, p, auth_bytes, alen, 0, &req, &rep, &seq),
	    PEER_PASS);
	msg_clear(&req);
	q = peers_get(ps, 3, "10.0.0.4:1", "10.0.0.4", 0);
	assert_int_equal(peer_recv(ps, q, hello_bytes, hlen, 0, &req, &rep, &seq),
	    PEER_ANSWER);
	assert_int_equal(rep.type, MSG_CHALLENGE);	/* a fresh Nc */
	msg_clear(&rep);
	assert_int_equal(peer_recv(ps, q, auth_bytes, alen, 0, &req, &rep, &seq),
	    PEER_ANSWER);
	assert_int_equal(rep.type, MSG_NACK);
	assert_int_equal(q->state, PEER_CLOSING);
	msg_clear(&rep);
	/* An AUTH out of the blue, and the AUTH again on the open pipe. */
	q = peers_get(ps, 4, "10.0.0.4:2", "10.0.0.4", 0);
	assert_int_equal(peer_recv(ps, q, auth_bytes, alen, 0, &req, &rep, &seq),
	    PEER_ANSWER);
	assert_int_equal(q->state, PEER_CLOSING);
	msg_clear(&rep);
	free(hello_bytes);
	free(auth_bytes);
	auth_session_clear(&ws);
	peers_free(ps);
}

/* A connection from host admitted and made a peer; *ev what it displaced. */
static struct peer *
join(struct peers *ps, uint32_t pipe, const char *host, int64_t now,
    struct peer_evicted *ev)
{
	struct peer_evicted	dummy;
	char			addr[64];

	snprintf(addr, sizeof(addr), "%s:%u", host, pipe);
	if (peers_admit(ps, pipe, addr, host, -1, now, ev ? ev : &dummy) != PEER_ADMITTED)
		return NULL;
	return peers_add(ps, pipe, addr, host, -1, now);
}

static char *
host_n(char *buf, size_t sz, int i)
{
	snprintf(buf, sz, "10.0.%d.%d", i / 250, 1 + i % 250);
	return buf;
}

/*
 * No ban: wrong proofs, AUTHs without a challenge and sealed messages
 * altered cost the failing connection only; the address they came from
 * is admitted again at once, and a worker there that proves the secret
 * opens (peer.h).
 */
static void
test_no_ban(void **state)
{
	struct peers		*ps = peers_new(&K);
	struct peer		*p;
	struct auth_session	 ws;
	struct msg		 m = { .type = MSG_AUTH }, req, rep;
	enum peer_action	 a;
	uint64_t		 seq;
	uint32_t		 pipe = 100;
	int			 i;

	(void)state;
	for (i = 0; i < 50; i++) {
		/* An AUTH out of the blue. */
		assert_non_null(p = join(ps, pipe, "192.0.2.1", 0, NULL));
		assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_ANSWER);
		assert_int_equal(p->state, PEER_CLOSING);
		msg_clear(&rep);
		peers_gone(ps, pipe++);
		/* A wrong proof. */
		assert_non_null(p = join(ps, pipe, "192.0.2.1", 0, NULL));
		handshake(ps, p, &WRONG, &ws, &a, &rep, &req);
		assert_int_equal(p->state, PEER_CLOSING);
		msg_clear(&rep);
		auth_session_clear(&ws);
		peers_gone(ps, pipe++);
	}
	/* A worker there with the right secret: admitted and open. */
	assert_non_null(p = join(ps, pipe, "192.0.2.1", 0, NULL));
	handshake(ps, p, &K, &ws, &a, &rep, &req);
	assert_int_equal(a, PEER_PASS);
	assert_int_equal(p->state, PEER_OPEN);
	msg_clear(&req);
	/* Its session's MAC broken five times over: each costs a connection. */
	for (i = 0; i < 5; i++) {
		struct auth_session	ws2;

		assert_non_null(p = join(ps, ++pipe, "192.0.2.1", 0, NULL));
		handshake(ps, p, &K, &ws2, &a, &rep, &req);
		msg_clear(&req);
		m = (struct msg){ .type = MSG_HEARTBEAT };
		assert_int_equal(feed(ps, p, &m, &ws, 1, &req, &rep, &seq), PEER_DROP);
		assert_int_equal(p->state, PEER_CLOSING);
		auth_session_clear(&ws2);
	}
	assert_non_null(p = join(ps, ++pipe, "192.0.2.1", 0, NULL));
	assert_int_equal(p->state, PEER_NEW);
	auth_session_clear(&ws);
	peers_free(ps);
}

/* The pre-auth pool's rules (peer.h), each at its edge. */
static void
test_pool(void **state)
{
	struct peers		*ps = peers_new(&K);
	struct peer_evicted	 ev;
	struct peer		*w, *p;
	char			 h[32];
	uint32_t		 pipe;
	int			 i;

	(void)state;
	/* Silent connections from PEER_MAX_UNAUTH addresses fill it ... */
	for (i = 0; i < PEER_MAX_UNAUTH; i++) {
		assert_non_null(join(ps, 1000 + i, host_n(h, sizeof(h), i), i, &ev));
		assert_int_equal(ev.pipe, 0);
	}
	assert_int_equal(peers_pooled(ps), PEER_MAX_UNAUTH);
	/* ... and a worker displaces the oldest of them. */
	assert_non_null(w = join(ps, 1, "192.0.2.7", 100, &ev));
	assert_int_equal(ev.pipe, 1000);
	assert_int_equal(peers_pooled(ps), PEER_MAX_UNAUTH);
	peers_evicted(ps, 1000, 100);
	p = peers_find(ps, 1000);
	assert_int_equal(p->state, PEER_CLOSING);
	assert_true(p->shut);
	/* Once its HELLO is in, the silent ones go before it, however many come. */
	peers_heard(ps, 1, 101);
	for (pipe = 2000; pipe < 2000 + 10 * PEER_MAX_UNAUTH; pipe++) {
		assert_non_null(join(ps, pipe, host_n(h, sizeof(h), (int)pipe), 102, &ev));
		assert_int_not_equal(ev.pipe, 1);
		assert_int_not_equal(ev.pipe, 0);
		peers_gone(ps, ev.pipe);
	}
	assert_int_equal(peers_find(ps, 1)->state, PEER_NEW);
	peers_free(ps);

	/* Per-address shares: one address holds every place, all moving. */
	ps = peers_new(&K);
	for (i = 0; i < PEER_MAX_UNAUTH; i++) {
		assert_non_null(join(ps, 1000 + i, "198.51.100.1", i, NULL));
		peers_heard(ps, 1000 + i, i);
	}
	/* More from it are refused; it cannot displace its own moving ones ... */
	assert_int_equal(peers_admit(ps, 9, "198.51.100.1:9", "198.51.100.1", -1, 100,
	    &ev), PEER_FULL);
	/* ... but another address gets in, taking the crowded one's oldest. */
	assert_non_null(w = join(ps, 1, "192.0.2.7", 100, &ev));
	assert_int_equal(ev.pipe, 1000);
	peers_gone(ps, 1000);
	/* A second from elsewhere too; the crowded address cannot take theirs,
	 * silent as they are. */
	assert_non_null(join(ps, 2, "192.0.2.8", 100, &ev));
	assert_int_equal(ev.pipe, 1001);
	peers_gone(ps, 1001);
	assert_int_equal(peers_admit(ps, 10, "198.51.100.1:10", "198.51.100.1", -1, 200,
	    &ev), PEER_FULL);
	/* Quiet for PEER_QUIET_MS or not, the crowded address's own newcomers
	 * wait: it holds its share and more. */
	assert_int_equal(peers_admit(ps, 11, "198.51.100.1:11", "198.51.100.1", -1,
	    PEER_QUIET_MS + 2, &ev), PEER_FULL);
	assert_non_null(join(ps, 12, "203.0.113.5", PEER_QUIET_MS + 2, &ev));
	assert_int_equal(ev.pipe, 1002);
	peers_free(ps);

	/* An honest join storm from four addresses: queued, never churned. */
	ps = peers_new(&K);
	for (i = 0; i < PEER_MAX_UNAUTH; i++) {
		snprintf(h, sizeof(h), "10.1.0.%d", i % 4);
		assert_non_null(join(ps, 1000 + i, h, 0, NULL));
		peers_heard(ps, 1000 + i, 0);
	}
	for (i = 0; i < 4; i++) {
		snprintf(h, sizeof(h), "10.1.0.%d", i);
		assert_int_equal(peers_admit(ps, 5000 + i, h, h, -1, 10, &ev), PEER_FULL);
	}
	/* A place being worked on is pinned: never displaced, even quiet. */
	p = peers_find(ps, 1000);
	assert_true(peer_request(ps, p, 0));
	for (i = 0; i < PEER_MAX_UNAUTH - 1; i++) {
		assert_non_null(join(ps, 6000 + i, host_n(h, sizeof(h), i),
		    PEER_QUIET_MS + 10, &ev));
		assert_int_not_equal(ev.pipe, 1000);
		assert_int_not_equal(ev.pipe, 0);
	}
	assert_int_equal(peers_admit(ps, 7000, "10.9.9.9", "10.9.9.9", -1,
	    PEER_QUIET_MS + 10, &ev), PEER_ADMITTED);	/* one of ours, silent, goes */
	assert_int_not_equal(ev.pipe, 1000);
	peer_replied(ps, p, PEER_QUIET_MS + 10);
	peers_free(ps);

	/* Pinned, even the oldest silent place of a lone address stays. */
	ps = peers_new(&K);
	for (i = 0; i < PEER_MAX_UNAUTH; i++)
		assert_non_null(join(ps, 1000 + i, host_n(h, sizeof(h), i), i, NULL));
	p = peers_find(ps, 1000);
	assert_true(peer_request(ps, p, 100));
	assert_non_null(join(ps, 1, "192.0.2.7", 100, &ev));
	assert_int_equal(ev.pipe, 1001);
	peer_replied(ps, p, 101);
	assert_non_null(join(ps, 2, "192.0.2.8", 102, &ev));
	assert_int_equal(ev.pipe, 1000);	/* unpinned, the oldest silent again */
	/* Local connections are admitted outside the pool. */
	assert_int_equal(peers_admit(ps, 8000, "local", "", -1, 0, &ev), PEER_ADMITTED);
	assert_int_equal(ev.pipe, 0);
	peers_free(ps);
}

/* The costs of a connection before it authenticates (peer.h). */
static void
test_unauth_limits(void **state)
{
	struct peers	*ps = peers_new(&K);
	struct peer	*p, *q;
	struct msg	 m, req, rep;
	uint8_t		 nw[AUTH_NONCE_LEN] = { 0 };
	uint32_t	 out[8];
	uint64_t	 seq;
	int64_t		 next;
	int		 i;

	(void)state;
	for (i = 0; i < 20; i++)
		assert_non_null(join(ps, 1000 + i, "192.0.2.9", 0, NULL));
	/* Ten of them speak (their HELLO seen by nng's thread). */
	for (i = 0; i < 10; i++)
		peers_heard(ps, 1000 + i, 5);
	/* A silent one has PEER_HELLO_MS to send its first message. */
	assert_int_equal(peers_overdue(ps, PEER_HELLO_MS - 1, out, 8, &next), 0);
	assert_int_equal(next, PEER_HELLO_MS);
	assert_int_equal(peers_overdue(ps, PEER_HELLO_MS, out, 8, &next), 8);
	for (i = 0; i < 8; i++) {
		assert_true(out[i] >= 1010);
		assert_int_equal(peers_find(ps, out[i])->state, PEER_CLOSING);
	}
	assert_int_equal(peers_overdue(ps, PEER_HELLO_MS, out, 8, &next), 2);
	assert_int_equal(next, PEER_AUTH_MS);
	/* One that spoke has PEER_AUTH_MS in all. */
	assert_int_equal(peers_overdue(ps, PEER_AUTH_MS - 1, out, 8, &next), 0);
	assert_int_equal(peers_overdue(ps, PEER_AUTH_MS, out, 8, &next), 8);
	assert_int_equal(peers_overdue(ps, PEER_AUTH_MS, out, 8, &next), 2);
	assert_int_equal(next, -1);
	/* Requests in flight before authenticating: PEER_MAX_INFLIGHT_NEW. */
	assert_non_null(p = join(ps, 3000, "192.0.2.9", 0, NULL));
	for (i = 0; i < PEER_MAX_INFLIGHT_NEW; i++)
		assert_true(peer_request(ps, p, 0));
	assert_false(peer_request(ps, p, 0));
	assert_int_equal(p->state, PEER_CLOSING);
	/* One that opens (no secret here: HELLO opens) frees its place. */
	{
		struct peers	*open = peers_new(NULL);

		for (i = 0; i < PEER_MAX_UNAUTH; i++) {
			assert_non_null(q = join(open, 1 + i, "192.0.2.8", 0, NULL));
			peers_heard(open, 1 + i, 0);
		}
		assert_int_equal(peers_pooled(open), PEER_MAX_UNAUTH);
		q = peers_find(open, 1);
		m = hello(nw);
		assert_true(peer_request(open, q, 0));
		assert_int_equal(feed(open, q, &m, NULL, 0, &req, &rep, &seq), PEER_PASS);
		msg_clear(&req);
		peer_replied(open, q, 0);
		assert_int_equal(peers_pooled(open), PEER_MAX_UNAUTH - 1);
		peers_free(open);
	}
	peers_free(ps);
}

/* Once open, PEER_MAX_INFLIGHT: a worker's two contexts fit with room. */
static void
test_open_inflight(void **state)
{
	struct peers	*ps = peers_new(NULL);
	struct peer	*p = peers_get(ps, 7, "192.0.2.1:1", "192.0.2.1", 0);
	struct msg	 m, req, rep;
	uint8_t		 nw[AUTH_NONCE_LEN] = { 0 };
	uint64_t	 seq;
	int		 i;

	(void)state;
	m = hello(nw);
	assert_true(peer_request(ps, p, 0));
	assert_int_equal(feed(ps, p, &m, NULL, 0, &req, &rep, &seq), PEER_PASS);
	msg_clear(&req);
	assert_int_equal(p->state, PEER_OPEN);
	for (i = 1; i < PEER_MAX_INFLIGHT; i++)
		assert_true(peer_request(ps, p, 0));
	peer_replied(ps, p, 0);
	assert_true(peer_request(ps, p, 0));
	assert_false(peer_request(ps, p, 0));
	assert_int_equal(p->state, PEER_CLOSING);
	peers_free(ps);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_secret_opens_on_hello),
		cmocka_unit_test(test_secret_handshake),
		cmocka_unit_test(test_sealed_replay_and_tamper),
		cmocka_unit_test(test_wrong_secret_and_replay),
		cmocka_unit_test(test_no_ban),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_unauth_limits),
		cmocka_unit_test(test_open_inflight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
