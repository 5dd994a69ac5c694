/*
 * Misbehaving peers for the coordinator and worker tests.
 *
 * Against a coordinator (dials URL with a req0 socket, prints each reply as
 * "TYPE ok=N text", "challenge", "welcome worker=N" or "no reply: ..."):
 *
 *   soak_peer URL garbage      bytes that are not a soak message
 *   soak_peer URL version      a hello with the wrong protocol version
 *   soak_peer URL stranger     a lease request before any hello
 *   soak_peer URL forged       hello, then a result for a lease it does not
 *                              hold, then bye (no secret: an --insecure
 *                              coordinator answers; one with a secret
 *                              challenges, and the rest is refused)
 *   soak_peer URL badauth      hello, then an auth with a made-up proof
 *   soak_peer URL hold         hello (and auth, with SOAK_SECRET), prints
 *                              "welcome worker=N" (or the reply that came
 *                              instead), then holds the connection open,
 *                              asking for nothing, until its stdin ends: a
 *                              worker the coordinator still awaits after
 *                              the run finished
 *   soak_peer URL explore-forge
 *                              with SOAK_SECRET: hello and auth, one lease of
 *                              an exploration (soak explore --listen), and a
 *                              RESULT of it that passes with a record of no
 *                              steps (a forged root, worker/explore.h);
 *                              prints "lease execution N" and the ACK, then
 *                              asks for another lease for 3 s: "second:
 *                              lease execution N", "second: TYPE" or
 *                              "second: none"
 *   soak_peer URL inflight N   with SOAK_SECRET: hello and auth, then N lease
 *                              requests at once (N contexts); prints
 *                              "dropped, K of N answered" when the
 *                              coordinator closes the connection, or "not
 *                              dropped, K of N answered" after 30 s
 *
 * A HELLO's name is SOAK_PEER_NAME when set.
 *
 * Floods, raw SP over TCP (tcp://HOST:PORT only; what an nng socket would
 * never send):
 *
 *   soak_peer URL junk         requests that are not soak messages, as fast
 *                              as the connection takes them, never reading a
 *                              reply; when the coordinator closes it, prints
 *                              "closed after N requests (T ms)" and connects
 *                              again, until killed or refused
 *   soak_peer URL stall COUNT SIZE PART
 *                              COUNT connections, each declaring a message
 *                              of SIZE bytes and sending PART of them, then
 *                              nothing; prints "stalling COUNT", then
 *                              "closed I after T ms" as each is closed, and
 *                              exits when all are
 *   soak_peer URL silent COUNT COUNT connections that say nothing at all
 *                              (stall with SIZE 0)
 *
 * Floods from many source addresses (SRC: the first, e.g. 127.1.0.1; the
 * i-th connection binds 127.X.(i / 250).(1 + i % 250) with X from SRC),
 * each connection reopened from its address as soon as the coordinator
 * closes it, until SIGTERM (then "reconnected N" and exit 0):
 *
 *   soak_peer URL hush COUNT SRC      the SP handshake, then silence;
 *                                     prints "holding COUNT" once all are
 *                                     past the handshake
 *   soak_peer URL slowloris COUNT SRC one byte of the SP header, then
 *                                     nothing; prints "slowloris COUNT" once
 *                                     all are connected
 *   soak_peer URL guess COUNT SRC PAR COUNT wrong proofs, PAR at a time:
 *                                     each a connection of its own (HELLO,
 *                                     then AUTH with a made-up proof);
 *                                     prints "guesses N in T ms: refused R,
 *                                     otherwise O" and exits
 *
 * In the middle (listens on LISTEN for one worker, dials the coordinator
 * at URL, passes every message both ways and appends each one's bytes to
 * DUMP; prints "listening on URL" when ready):
 *
 *   soak_peer URL relay LISTEN DUMP          only records
 *   soak_peer URL relay LISTEN DUMP replay   when the WELCOME passes, sends
 *                                            the worker's HELLO and AUTH
 *                                            again on a new connection and
 *                                            prints the replies
 *   soak_peer URL relay LISTEN DUMP tamper   flips one bit of the WELCOME
 *   soak_peer URL relay LISTEN DUMP stale    answers the worker's second
 *                                            lease request with the
 *                                            coordinator's sealed reply to
 *                                            its first (the same session's
 *                                            own message, an older seq), once
 *
 * A fake coordinator (listens on URL, optionally with TLS, and prints
 * "got TYPE" for each request):
 *
 *   soak_peer [--tls-cert PEM] URL fake-welcome CONFIG
 *        answers HELLO with a WELCOME carrying CONFIG, leases seed 0 once
 *   soak_peer [--tls-cert PEM] URL fake-challenge
 *        answers HELLO with a CHALLENGE whose proof is made up
 *   soak_peer URL fake-nack
 *        answers HELLO with a NACK whose text is SOAK_PEER_TEXT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "common/auth.h"
#include "common/msg.h"
#include "common/util.h"

static int
print_reply(const void *rbuf, size_t rlen)
{
	struct msg	 rep;
	char		 err[ERR_LEN];
	int		 rv;

	if (msg_decode(rbuf, rlen, &rep, err) == -1) {
		printf("bad reply: %s\n", err);
		fflush(stdout);
		return -1;
	}
	if (rep.type == MSG_WELCOME)
		printf("welcome worker=%u\n", rep.u.welcome.worker_id);
	else if (rep.type == MSG_ACK || rep.type == MSG_NACK || rep.type == MSG_DONE)
		printf("%s ok=%u %s\n", msg_type_name(rep.type), rep.u.ack.ok, rep.u.ack.text);
	else
		printf("%s\n", msg_type_name(rep.type));
	fflush(stdout);
	rv = rep.type == MSG_WELCOME ? (int)rep.u.welcome.worker_id : 0;
	msg_clear(&rep);
	return rv;
}

/* Sends buf, prints the reply; *rtype gets its type. */
static int
call_raw(nng_socket s, const void *buf, size_t len, int *rtype)
{
	void	*rbuf;
	size_t	 rlen;
	int	 rv;

	if ((rv = nng_send(s, UNCONST(buf), len, 0)) != 0 ||
	    (rv = nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC)) != 0) {
		printf("no reply: %s\n", nng_strerror(rv));
		fflush(stdout);
		return -1;
	}
	if (rtype)
		*rtype = rlen >= MSG_HDR_LEN ? ((uint8_t *)rbuf)[6] << 8 |
		    ((uint8_t *)rbuf)[7] : 0;
	rv = print_reply(rbuf, rlen);
	nng_free(rbuf, rlen);
	return rv;
}

static int
call(nng_socket s, const struct msg *m, int *rtype)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;
	int	 rv;

	if (msg_encode(m, &buf, &len, err) == -1) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	rv = call_raw(s, buf, len, rtype);
	free(buf);
	return rv;
}

/* Replies are awaited 10 s, or SOAK_PEER_TIMEOUT_MS (a peer expected to get none). */
static nng_socket
dial(const char *url)
{
	const char	*t = getenv("SOAK_PEER_TIMEOUT_MS");
	nng_socket	 s;

	if (nng_req0_open(&s) != 0 || nng_dial(s, url, NULL, 0) != 0) {
		printf("cannot dial %s\n", url);
		exit(1);
	}
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, t ? atoi(t) : 10000);
	return s;
}

static struct msg
hello(void)
{
	struct msg	m;
	char		err[ERR_LEN];

	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	m.u.hello.name = getenv("SOAK_PEER_NAME") ? getenv("SOAK_PEER_NAME") : "peer";
	m.u.hello.host = "peer";
	if (auth_nonce(m.u.hello.nonce, err) == -1)
		exit(2);
	return m;
}

/* --- against a coordinator --- */

static pthread_mutex_t	gone_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	gone_cv;	/* monotonic: cond_init_monotonic in main */
static bool		gone;

static void
on_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void)p;
	(void)ev;
	(void)arg;
	pthread_mutex_lock(&gone_mu);
	gone = true;
	pthread_cond_broadcast(&gone_cv);
	pthread_mutex_unlock(&gone_mu);
}

/* Sends m sealed with seq on ctx through aio, without waiting for the reply. */
static int
send_sealed(nng_ctx ctx, nng_aio *aio, const struct auth_session *sess,
    const struct msg *m, uint64_t seq)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;
	nng_msg	*nm;

	if (msg_encode(m, &buf, &len, err) == -1)
		exit(2);
	auth_seal(sess, AUTH_TO_COORDINATOR, seq, &buf, &len);
	if (nng_msg_alloc(&nm, 0) != 0 || nng_msg_append(nm, buf, len) != 0)
		exit(2);
	free(buf);
	nng_aio_set_msg(aio, nm);
	/* A send waits for a connection: once the coordinator dropped ours
	 * (the peer never dials again), it would wait for ever. */
	nng_aio_set_timeout(aio, 5000);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	if (nng_aio_result(aio) != 0) {
		nng_msg_free(nng_aio_get_msg(aio));
		return -1;
	}
	nng_aio_set_timeout(aio, NNG_DURATION_DEFAULT);
	nng_ctx_recv(ctx, aio);
	return 0;
}

/* One request on the socket and its reply, decoded (opened when sess). */
static void
exchange(nng_socket s, const struct msg *m, const struct auth_session *sess,
    struct msg *rep)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	void	*rbuf;
	size_t	 len, rlen, mlen;
	uint64_t rseq;
	int	 rv;

	if (msg_encode(m, &buf, &len, err) == -1)
		exit(2);
	if ((rv = nng_send(s, buf, len, 0)) != 0 ||
	    (rv = nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC)) != 0) {
		printf("no reply: %s\n", nng_strerror(rv));
		exit(1);
	}
	free(buf);
	mlen = rlen;
	if (sess && auth_open(sess, AUTH_TO_WORKER, rbuf, rlen, &rseq, &mlen, err) == -1) {
		printf("bad reply: %s\n", err);
		exit(1);
	}
	if (msg_decode(rbuf, mlen, rep, err) == -1) {
		printf("bad reply: %s\n", err);
		exit(1);
	}
	nng_free(rbuf, rlen);
}

/* One sealed request (seq) and its reply, opened and decoded. */
static void
sealed_call(nng_socket s, const struct auth_session *sess, const struct msg *m,
    uint64_t seq, struct msg *rep)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	void	*rbuf;
	size_t	 len, rlen, mlen;
	uint64_t rseq;
	int	 rv;

	if (msg_encode(m, &buf, &len, err) == -1)
		exit(2);
	auth_seal(sess, AUTH_TO_COORDINATOR, seq, &buf, &len);
	if ((rv = nng_send(s, buf, len, 0)) != 0 ||
	    (rv = nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC)) != 0) {
		printf("no reply: %s\n", nng_strerror(rv));
		exit(1);
	}
	free(buf);
	if (auth_open(sess, AUTH_TO_WORKER, rbuf, rlen, &rseq, &mlen, err) == -1 ||
	    msg_decode(rbuf, mlen, rep, err) == -1) {
		printf("bad reply: %s\n", err);
		exit(1);
	}
	nng_free(rbuf, rlen);
}

/* sealed_call that returns -1 on a timeout instead of exiting. */
static int
sealed_try(nng_socket s, const struct auth_session *sess, const struct msg *m,
    uint64_t seq, struct msg *rep)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	void	*rbuf;
	size_t	 len, rlen, mlen;
	uint64_t rseq;

	memset(rep, 0, sizeof(*rep));
	if (msg_encode(m, &buf, &len, err) == -1)
		exit(2);
	auth_seal(sess, AUTH_TO_COORDINATOR, seq, &buf, &len);
	if (nng_send(s, buf, len, 0) != 0 || nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC) != 0) {
		free(buf);
		return -1;
	}
	free(buf);
	if (auth_open(sess, AUTH_TO_WORKER, rbuf, rlen, &rseq, &mlen, err) == -1 ||
	    msg_decode(rbuf, mlen, rep, err) == -1) {
		nng_free(rbuf, rlen);
		return -1;
	}
	nng_free(rbuf, rlen);
	return 0;
}

/*
 * A worker holding the secret that answers its explore lease with a pass
 * and a record of no steps: were it taken, the root would close the tree.
 */
static int
explore_forge(const char *url)
{
	static const char	 forged[] = "{\"explore\":{\"v\":2,\"verdict\":0,"
				    "\"reason\":\"\",\"message\":\"\",\"ms\":1,\"turns_ms\":1,"
				    "\"inexact\":{\"overlap\":\"0\"},\"steps\":[]}}";
	struct auth_secret	 k;
	struct auth_session	 sess;
	struct msg		 m = hello(), rep, lease;
	nng_socket		 s = dial(url);
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	char			 err[ERR_LEN];
	uint32_t		 wid;

	if (auth_secret_load(NULL, &k, err) == -1 || k.len == 0) {
		fprintf(stderr, "explore-forge wants SOAK_SECRET: %s\n", err);
		return 64;
	}
	memcpy(nw, m.u.hello.nonce, AUTH_NONCE_LEN);
	exchange(s, &m, NULL, &rep);
	if (rep.type != MSG_CHALLENGE) {
		printf("no challenge: %s\n", msg_type_name(rep.type));
		return 1;
	}
	memcpy(nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
	msg_clear(&rep);
	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	auth_proof(&k, AUTH_WORKER, nw, nc, m.u.auth.proof);
	auth_session_init(&sess, &k, nw, nc);
	exchange(s, &m, &sess, &rep);
	if (rep.type != MSG_WELCOME) {
		printf("no welcome: %s\n", msg_type_name(rep.type));
		return 1;
	}
	wid = rep.u.welcome.worker_id;
	msg_clear(&rep);
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE_REQ;
	m.u.lease_req.worker_id = wid;
	sealed_call(s, &sess, &m, 1, &lease);
	if (lease.type != MSG_LEASE || lease.u.lease.nseeds != 1 ||
	    lease.u.lease.explore == NULL || *lease.u.lease.explore == '\0') {
		printf("no explore lease: %s\n", msg_type_name(lease.type));
		return 1;
	}
	printf("lease execution %u\n", lease.u.lease.seeds[0].attempt);
	memset(&m, 0, sizeof(m));
	m.type = MSG_RESULT;
	m.u.result.worker_id = wid;
	m.u.result.lease_id = lease.u.lease.lease_id;
	m.u.result.seed = lease.u.lease.seeds[0].seed;
	m.u.result.attempt = lease.u.lease.seeds[0].attempt;
	m.u.result.plan = "";
	m.u.result.plan_hash = "";
	m.u.result.verdict = 0;
	m.u.result.reason = "";
	m.u.result.duration_ms = 1;
	m.u.result.detail = UNCONST(forged);
	sealed_call(s, &sess, &m, 2, &rep);
	printf("%s ok=%d %s\n", msg_type_name(rep.type), rep.u.ack.ok, rep.u.ack.text ?
	    rep.u.ack.text : "");
	fflush(stdout);
	msg_clear(&rep);
	msg_clear(&lease);
	/* a worker whose record was refused should be handed nothing more */
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE_REQ;
	m.u.lease_req.worker_id = wid;
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 3000);
	if (sealed_try(s, &sess, &m, 3, &rep) == -1)
		printf("second: none\n");
	else if (rep.type == MSG_LEASE && rep.u.lease.nseeds == 1)
		printf("second: lease execution %u\n", rep.u.lease.seeds[0].attempt);
	else
		printf("second: %s\n", msg_type_name(rep.type));
	fflush(stdout);
	msg_clear(&rep);
	auth_session_clear(&sess);
	auth_secret_free(&k);
	return 0;
}

/* A worker that joins and then sits on its connection until stdin ends. */
static int
hold(const char *url)
{
	struct auth_secret	 k;
	struct auth_session	 sess;
	struct msg		 m = hello(), rep;
	nng_socket		 s = dial(url);
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	char			 err[ERR_LEN], c;
	bool			 sealed = false;

	if (auth_secret_load(NULL, &k, err) == -1) {
		fprintf(stderr, "hold: %s\n", err);
		return 64;
	}
	memcpy(nw, m.u.hello.nonce, AUTH_NONCE_LEN);
	exchange(s, &m, NULL, &rep);
	if (rep.type == MSG_CHALLENGE && k.len > 0) {
		memcpy(nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
		msg_clear(&rep);
		memset(&m, 0, sizeof(m));
		m.type = MSG_AUTH;
		auth_proof(&k, AUTH_WORKER, nw, nc, m.u.auth.proof);
		auth_session_init(&sess, &k, nw, nc);
		sealed = true;
		exchange(s, &m, &sess, &rep);
	}
	if (rep.type == MSG_WELCOME)
		printf("welcome worker=%u\n", rep.u.welcome.worker_id);
	else
		printf("%s\n", msg_type_name(rep.type));
	fflush(stdout);
	msg_clear(&rep);
	while (read(0, &c, 1) > 0)
		;
	if (sealed)
		auth_session_clear(&sess);
	auth_secret_free(&k);
	nng_close(s);
	return 0;
}

/*
 * An authenticated worker (SOAK_SECRET) with n requests in flight at once:
 * lease requests, which the coordinator holds while it has no work.
 */
static int
inflight(const char *url, int n)
{
	struct auth_secret	 k;
	struct auth_session	 sess;
	struct msg		 m = hello(), rep;
	nng_socket		 s;
	nng_ctx			*ctx;
	nng_aio			**aio;
	uint8_t			 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	char			 err[ERR_LEN];
	struct timespec		 ts;
	uint32_t		 wid;
	int			 i, sent, answered = 0;

	if (auth_secret_load(NULL, &k, err) == -1 || k.len == 0) {
		fprintf(stderr, "inflight wants SOAK_SECRET: %s\n", err);
		return 64;
	}
	if (nng_req0_open(&s) != 0)
		return 2;
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 10000);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	/* No second connection to muddle the count with its refusals. */
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 600000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 600000);
	nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, on_pipe_gone, NULL);
	if (nng_dial(s, url, NULL, 0) != 0) {
		printf("cannot dial %s\n", url);
		return 1;
	}
	memcpy(nw, m.u.hello.nonce, AUTH_NONCE_LEN);
	exchange(s, &m, NULL, &rep);
	if (rep.type != MSG_CHALLENGE) {
		printf("no challenge: %s\n", msg_type_name(rep.type));
		return 1;
	}
	memcpy(nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
	msg_clear(&rep);
	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	auth_proof(&k, AUTH_WORKER, nw, nc, m.u.auth.proof);
	auth_session_init(&sess, &k, nw, nc);
	exchange(s, &m, &sess, &rep);
	if (rep.type != MSG_WELCOME) {
		printf("no welcome: %s\n", msg_type_name(rep.type));
		return 1;
	}
	wid = rep.u.welcome.worker_id;
	msg_clear(&rep);
	printf("welcome worker=%u\n", wid);
	fflush(stdout);

	ctx = calloc(n, sizeof(*ctx));
	aio = calloc(n, sizeof(*aio));
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE_REQ;
	m.u.lease_req.worker_id = wid;
	/* Sent stops early when the coordinator drops the connection while
	 * they go out: those not sent are not answered either. */
	for (sent = 0; sent < n; sent++) {
		if (nng_ctx_open(&ctx[sent], s) != 0 ||
		    nng_aio_alloc(&aio[sent], NULL, NULL) != 0)
			return 2;
		if (send_sealed(ctx[sent], aio[sent], &sess, &m, (uint64_t)sent + 1) == -1) {
			nng_aio_free(aio[sent]);
			break;
		}
	}
	/* Dropped: the pipe goes.  Not: nothing happens for 20 s. */
	abstime_mono_in(&ts, 20000);
	pthread_mutex_lock(&gone_mu);
	while (!gone && pthread_cond_timedwait(&gone_cv, &gone_mu, &ts) == 0)
		;
	pthread_mutex_unlock(&gone_mu);
	/* What is still waiting ends ECANCELED.  No nng_close: after the
	 * coordinator dropped the pipe, nng 1.5.2's close can wait forever on
	 * its pipe reaper (nanomsg/nng#1236); the socket goes with the process. */
	for (i = 0; i < sent; i++)
		nng_aio_cancel(aio[i]);
	/*
	 * An answer is a reply in our session.  nng dials again once the
	 * coordinator dropped the connection and sends what was waiting on
	 * the new one, where the coordinator refuses it, unsealed (a sealed
	 * message from a connection that never said hello): no answer.
	 */
	for (i = 0; i < sent; i++) {
		nng_aio_wait(aio[i]);
		if (nng_aio_result(aio[i]) == 0) {
			nng_msg		*nm = nng_aio_get_msg(aio[i]);
			uint64_t	 rseq;
			size_t		 mlen;

			if (auth_open(&sess, AUTH_TO_WORKER, nng_msg_body(nm),
			    nng_msg_len(nm), &rseq, &mlen, err) == 0) {
				struct msg	r;

				answered++;
				if (msg_decode(nng_msg_body(nm), mlen, &r, err) == -1)
					fprintf(stderr, "answered request %d: %zu bytes, seq %llu, "
					    "undecodable: %s\n", i, nng_msg_len(nm),
					    (unsigned long long)rseq, err);
				else {
					fprintf(stderr, "answered request %d: %s %s\n", i,
					    msg_type_name(r.type), r.type == MSG_NACK ||
					    r.type == MSG_ACK || r.type == MSG_DONE ?
					    r.u.ack.text : "");
					msg_clear(&r);
				}
			}
			nng_msg_free(nm);
		}
		nng_aio_free(aio[i]);
	}
	printf("%s, %d of %d answered\n", gone ? "dropped" : "not dropped", answered, n);
	fflush(stdout);
	free(aio);
	free(ctx);
	auth_session_clear(&sess);
	auth_secret_free(&k);
	return 0;
}

/* --- floods: SP over TCP by hand --- */

/*
 * A TCP connection to url (tcp://HOST:PORT) that has done the SP handshake
 * as a req0 socket, or -1 (errno set).
 */
static int
sp_connect(const char *url)
{
	static const uint8_t	 hs[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 };
	struct addrinfo		 hints = { .ai_socktype = SOCK_STREAM }, *ai;
	const char		*h = strstr(url, "://"), *colon = strrchr(url, ':');
	char			 host[256], peerhs[8];
	struct pollfd		 pfd;
	size_t			 got = 0;
	ssize_t			 r;
	int			 fd;

	if (h == NULL || colon == NULL || colon < h + 3 ||
	    (size_t)(colon - h - 3) >= sizeof(host)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - h - 3), h + 3);
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
		errno = EHOSTUNREACH;
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
	    write(fd, hs, sizeof(hs)) != (ssize_t)sizeof(hs)) {
		freeaddrinfo(ai);
		if (fd != -1)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	/* nng's own 8 bytes: the connection is a pipe once they came. */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (got < sizeof(peerhs) && poll(&pfd, 1, 10000) == 1 &&
	    (r = read(fd, peerhs + got, sizeof(peerhs) - got)) > 0)
		got += (size_t)r;
	if (got < sizeof(peerhs)) {
		close(fd);
		errno = ECONNRESET;
		return -1;
	}
	return fd;
}

/* Junk requests, never a reply read, a new connection whenever one is closed. */
static int
junk(const char *url)
{
	static const char	body[] = "GET / HTTP/1.1\r\n\r\n";
	enum { FRAME = 8 + 4 + sizeof(body) - 1, BATCH = 64 };
	uint8_t			buf[FRAME * BATCH];
	uint64_t		n, id = 0;
	int64_t			t0;
	int			fd, i;

	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		if ((fd = sp_connect(url)) == -1) {
			printf("cannot connect: %s\n", strerror(errno));
			fflush(stdout);
			if (errno == ECONNREFUSED)
				return 0;	/* the coordinator is gone */
			poll(NULL, 0, 50);
			continue;
		}
		t0 = now_ms();
		for (n = 0;; n += BATCH) {
			for (i = 0; i < BATCH; i++) {
				uint8_t	*f = buf + i * FRAME;

				put_be64(f, 4 + sizeof(body) - 1);
				id = (id + 1) & 0x7fffffff;
				f[8] = 0x80 | (uint8_t)(id >> 24);
				f[9] = (id >> 16) & 0xff;
				f[10] = (id >> 8) & 0xff;
				f[11] = id & 0xff;
				memcpy(f + 12, body, sizeof(body) - 1);
			}
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				break;
		}
		printf("closed after %llu requests (%lld ms)\n", (unsigned long long)n,
		    (long long)(now_ms() - t0));
		fflush(stdout);
		close(fd);
	}
}

/*
 * count connections, each declaring size bytes (0: no message at all) and
 * sending part of them; then waits for the coordinator to close each.
 */
static int
stall(const char *url, int count, uint64_t size, size_t part)
{
	struct pollfd	*pfd = calloc(count, sizeof(*pfd));
	uint8_t		*buf = calloc(1, 12 + part);
	int64_t		 t0;
	int		 i, open = 0;
	char		 c;

	signal(SIGPIPE, SIG_IGN);
	put_be64(buf, size);
	buf[8] = 0x80;
	buf[11] = 1;
	for (i = 0; i < count; i++) {
		pfd[i] = (struct pollfd){ .fd = sp_connect(url), .events = POLLIN };
		if (pfd[i].fd == -1) {
			printf("cannot connect: %s\n", strerror(errno));
			continue;
		}
		open++;
		/* the header, the request id, part - 4 zeros */
		if (size > 0 && write(pfd[i].fd, buf, 8 + (part > 4 ? part : 4)) < 0)
			continue;	/* closed already: poll sees it */
	}
	t0 = now_ms();
	printf("stalling %d\n", open);
	fflush(stdout);
	while (open > 0 && poll(pfd, count, -1) > 0) {
		for (i = 0; i < count; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			if (read(pfd[i].fd, &c, 1) == 1)
				continue;	/* nng says nothing more; ignore */
			printf("closed %d after %lld ms\n", i + 1, (long long)(now_ms() - t0));
			fflush(stdout);
			close(pfd[i].fd);
			pfd[i].fd = -1;
			open--;
		}
	}
	printf("all closed\n");
	free(pfd);
	free(buf);
	return 0;
}

/* --- floods from many source addresses --- */

static volatile sig_atomic_t	flood_stop;

static void
on_term(int sig)
{
	(void)sig;
	flood_stop = 1;
}

/* The i-th source address counted from src (127.X.Y.Z), as in the usage. */
static struct in_addr
source_addr(const char *src, int i)
{
	struct in_addr	a;
	uint32_t	base;

	if (inet_pton(AF_INET, src, &a) != 1) {
		fprintf(stderr, "not an IPv4 address: %s\n", src);
		exit(64);
	}
	base = ntohl(a.s_addr) & 0xff000000u;
	base |= (ntohl(a.s_addr) & 0x00ff0000u);
	a.s_addr = htonl(base | (uint32_t)(i / 250) << 8 | (uint32_t)(1 + i % 250));
	return a;
}

static struct sockaddr_in
url_addr(const char *url)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	const char		*h = strstr(url, "://"), *colon = strrchr(url, ':');
	char			 host[64];

	if (h == NULL || colon == NULL || (size_t)(colon - h - 3) >= sizeof(host)) {
		fprintf(stderr, "not tcp://IP:PORT: %s\n", url);
		exit(64);
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - h - 3), h + 3);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "not an IPv4 address: %s\n", host);
		exit(64);
	}
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	return sa;
}

/* A non-blocking connection from src to dst, under way; -1 when refused. */
static int
open_from(struct in_addr src, const struct sockaddr_in *dst)
{
	struct sockaddr_in	me = { .sin_family = AF_INET, .sin_addr = src };
	int			fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) == -1 ||
	    (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) == -1 &&
	    errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * hush (sends the 8-byte SP header) and slowloris (sends its first byte):
 * count connections kept up from count addresses.
 */
static int
flood(const char *url, int count, const char *src, bool loris)
{
	static const uint8_t	 hs[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 };
	struct sockaddr_in	 dst = url_addr(url);
	struct pollfd		*pfd = calloc(count, sizeof(*pfd));
	bool			*up = calloc(count, sizeof(*up)), told = false;
	uint64_t		 reconnects = 0;
	uint8_t			 buf[64];
	int			 i, nup = 0;

	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	for (i = 0; i < count; i++)
		pfd[i] = (struct pollfd){ .fd = open_from(source_addr(src, i), &dst),
		    .events = POLLOUT };
	while (!flood_stop) {
		if (poll(pfd, count, 100) < 0 && errno != EINTR)
			break;
		for (i = 0; i < count; i++) {
			short	re = pfd[i].revents;
			bool	lost = pfd[i].fd == -1;

			if (!lost && (re & POLLOUT) && !up[i]) {
				int		e = 0;
				socklen_t	el = sizeof(e);

				getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &e, &el);
				if (e == 0 && write(pfd[i].fd, hs, loris ? 1 : 8) > 0) {
					up[i] = true;
					nup++;
					pfd[i].events = POLLIN;
				} else
					lost = true;
			} else if (!lost && (re & (POLLIN | POLLHUP | POLLERR))) {
				ssize_t	r = read(pfd[i].fd, buf, sizeof(buf));

				if (r == 0 || (r < 0 && errno != EAGAIN))
					lost = true;
			}
			if (!lost)
				continue;
			/* Closed, or refused: again from the same address. */
			if (pfd[i].fd != -1)
				close(pfd[i].fd);
			if (up[i])
				nup--;
			up[i] = false;
			reconnects++;
			pfd[i] = (struct pollfd){ .fd = open_from(source_addr(src, i), &dst),
			    .events = POLLOUT };
		}
		if (!told && nup == count) {
			printf("%s %d\n", loris ? "slowloris" : "holding", count);
			fflush(stdout);
			told = true;
		}
	}
	printf("reconnected %llu\n", (unsigned long long)reconnects);
	fflush(stdout);
	return 0;
}

/* One SP request on fd (req0 framing by hand) and its reply's body. */
static ssize_t
sp_call(int fd, uint32_t id, const uint8_t *body, size_t len, uint8_t *out, size_t cap)
{
	uint8_t		hdr[12];
	size_t		got = 0, want;
	ssize_t		r;

	put_be64(hdr, 4 + len);
	hdr[8] = 0x80 | (uint8_t)(id >> 24);
	hdr[9] = (uint8_t)(id >> 16);
	hdr[10] = (uint8_t)(id >> 8);
	hdr[11] = (uint8_t)id;
	if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    write(fd, body, len) != (ssize_t)len)
		return -1;
	while (got < 12 && (r = read(fd, hdr + got, 12 - got)) > 0)
		got += (size_t)r;
	if (got < 12)
		return -1;
	want = (size_t)get_be64(hdr) - 4;
	if (want > cap)
		return -1;
	for (got = 0; got < want && (r = read(fd, out + got, want - got)) > 0; )
		got += (size_t)r;
	return got == want ? (ssize_t)want : -1;
}

struct guesser {
	const char		*src;
	struct sockaddr_in	 dst;
	int			 first, step, count;
	uint64_t		 refused, other;
	uint64_t		 why[5];	/* guess_why's, for other */
};

/* Where a guess that was not refused went wrong (said when any did). */
static const char *const guess_why[5] = { "socket/bind/connect",
    "transport handshake", "hello", "challenge", "proof's answer" };

static void *
guess_main(void *arg)
{
	static const uint8_t	 hs[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 };
	struct guesser		*g = arg;
	struct msg		 m, rep;
	char			 err[ERR_LEN];
	uint8_t			*buf, out[4096], phs[8];
	size_t			 len;
	ssize_t			 r;
	int			 i, fd, at;
	bool			 ok;

	for (i = g->first; i < g->count; i += g->step) {
		struct sockaddr_in	me = { .sin_family = AF_INET,
					    .sin_addr = source_addr(g->src, i % 1000) };

		ok = false;
		at = 0;
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			goto next;
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) == -1 ||
		    connect(fd, (struct sockaddr *)&g->dst, sizeof(g->dst)) == -1)
			goto next;
		at = 1;
		if (write(fd, hs, 8) != 8 || read(fd, phs, 8) != 8)
			goto next;
		at = 2;
		m = hello();
		msg_encode(&m, &buf, &len, err);
		r = sp_call(fd, 1, buf, len, out, sizeof(out));
		free(buf);
		if (r <= 0 || msg_decode(out, (size_t)r, &rep, err) == -1)
			goto next;
		at = 3;
		ok = rep.type == MSG_CHALLENGE;
		msg_clear(&rep);
		if (!ok)
			goto next;
		at = 4;
		memset(&m, 0, sizeof(m));
		m.type = MSG_AUTH;
		auth_nonce(m.u.auth.proof, err);
		msg_encode(&m, &buf, &len, err);
		r = sp_call(fd, 2, buf, len, out, sizeof(out));
		free(buf);
		ok = r > 0 && msg_decode(out, (size_t)r, &rep, err) == 0 &&
		    rep.type == MSG_NACK && strcmp(rep.u.ack.text, "authentication failed") == 0;
		if (r > 0)
			msg_clear(&rep);
next:
		if (ok)
			g->refused++;
		else {
			g->other++;
			g->why[at]++;
		}
		if (fd != -1)
			close(fd);
	}
	return NULL;
}

static int
guess(const char *url, int count, const char *src, int par)
{
	struct guesser	*g = calloc(par, sizeof(*g));
	pthread_t	*t = calloc(par, sizeof(*t));
	uint64_t	 refused = 0, other = 0, why[5] = { 0 };
	int64_t		 t0 = now_ms();
	int		 i, k;

	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < par; i++) {
		g[i] = (struct guesser){ .src = src, .dst = url_addr(url), .first = i,
		    .step = par, .count = count };
		pthread_create(&t[i], NULL, guess_main, &g[i]);
	}
	for (i = 0; i < par; i++) {
		pthread_join(t[i], NULL);
		refused += g[i].refused;
		other += g[i].other;
		for (k = 0; k < 5; k++)
			why[k] += g[i].why[k];
	}
	printf("guesses %d in %lld ms: refused %llu, otherwise %llu\n", count,
	    (long long)(now_ms() - t0), (unsigned long long)refused,
	    (unsigned long long)other);
	for (k = 0; k < 5; k++)
		if (why[k] > 0)
			printf("  not refused, failed at the %s: %llu\n",
			    guess_why[k], (unsigned long long)why[k]);
	return 0;
}

static int
client(const char *url, const char *mode)
{
	nng_socket	s = dial(url);
	struct msg	m = hello();
	char		err[ERR_LEN];
	int		wid, type = 0;

	if (strcmp(mode, "garbage") == 0) {
		call_raw(s, "GET / HTTP/1.1\r\n\r\n", 18, NULL);
	} else if (strcmp(mode, "version") == 0) {
		uint8_t	*buf;
		size_t	 len;

		msg_encode(&m, &buf, &len, err);
		buf[5] = MSG_VERSION + 1;
		call_raw(s, buf, len, NULL);
		free(buf);
	} else if (strcmp(mode, "stranger") == 0) {
		m.type = MSG_LEASE_REQ;
		m.u.lease_req.worker_id = 4242;
		call(s, &m, NULL);
	} else if (strcmp(mode, "forged") == 0) {
		wid = call(s, &m, &type);
		memset(&m, 0, sizeof(m));
		m.type = MSG_RESULT;
		m.u.result.worker_id = wid > 0 ? (uint32_t)wid : 1;
		m.u.result.lease_id = 1;
		m.u.result.seed = 0;
		m.u.result.attempt = 1;
		m.u.result.verdict = VERDICT_PASS;
		m.u.result.reason = "";
		m.u.result.detail = "{}";
		call(s, &m, NULL);
		memset(&m, 0, sizeof(m));
		m.type = MSG_LEASE_REQ;
		m.u.lease_req.worker_id = wid > 0 ? (uint32_t)wid : 1;
		if (wid <= 0)
			call(s, &m, NULL);
		memset(&m, 0, sizeof(m));
		m.type = MSG_BYE;
		m.u.bye.worker_id = wid > 0 ? (uint32_t)wid : 1;
		call(s, &m, NULL);
	} else if (strcmp(mode, "badauth") == 0) {
		call(s, &m, &type);
		memset(&m, 0, sizeof(m));
		m.type = MSG_AUTH;
		if (auth_nonce(m.u.auth.proof, err) == -1)
			exit(2);
		call(s, &m, NULL);
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 64;
	}
	nng_close(s);
	return 0;
}

/* --- in the middle --- */

struct relay {
	const char	*up_url, *mode;
	nng_socket	 up, down;
	int		 dump;
	pthread_mutex_t	 mu;
	uint8_t		*hello, *auth;	/* the worker's, as they passed */
	size_t		 hlen, alen;
	bool		 tricked;
	uint8_t		*lease;		/* stale: the first LEASE, sealed */
	size_t		 llen;
	bool		 staled;
};

static int
msg_type_of(const uint8_t *b, size_t len)
{
	return len >= MSG_HDR_LEN ? b[6] << 8 | b[7] : 0;
}

static void
record(struct relay *r, const uint8_t *b, size_t len)
{
	uint8_t	**keep = NULL;
	size_t	 *klen = NULL;

	pthread_mutex_lock(&r->mu);
	(void)!write(r->dump, b, len);
	if (msg_type_of(b, len) == MSG_HELLO && r->hello == NULL) {
		keep = &r->hello;
		klen = &r->hlen;
	} else if (msg_type_of(b, len) == MSG_AUTH && r->auth == NULL) {
		keep = &r->auth;
		klen = &r->alen;
	}
	if (keep) {
		*keep = malloc(len);
		memcpy(*keep, b, len);
		*klen = len;
	}
	pthread_mutex_unlock(&r->mu);
}

/* The captured HELLO and AUTH, once more, from a connection of our own. */
static void
replay(struct relay *r)
{
	nng_socket	s = dial(r->up_url);
	int		type = 0;

	printf("replay hello: ");
	fflush(stdout);
	call_raw(s, r->hello, r->hlen, &type);
	printf("replay auth: ");
	fflush(stdout);
	call_raw(s, r->auth, r->alen, &type);
	nng_close(s);
}

static void *
relay_main(void *arg)
{
	struct relay	*r = arg;
	nng_ctx		 dc, uc;
	nng_aio		*aio;
	nng_msg		*m;
	uint8_t		*b;
	size_t		 len;

	if (nng_ctx_open(&dc, r->down) != 0 || nng_ctx_open(&uc, r->up) != 0 ||
	    nng_aio_alloc(&aio, NULL, NULL) != 0)
		exit(2);
	for (;;) {
		nng_ctx_recv(dc, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0)
			break;
		m = nng_aio_get_msg(aio);
		record(r, nng_msg_body(m), nng_msg_len(m));
		nng_aio_set_msg(aio, m);
		nng_ctx_send(uc, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0)
			break;
		nng_ctx_recv(uc, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0)
			break;
		m = nng_aio_get_msg(aio);
		b = nng_msg_body(m);
		len = nng_msg_len(m);
		if (msg_type_of(b, len) == MSG_WELCOME) {
			pthread_mutex_lock(&r->mu);
			if (!r->tricked && strcmp(r->mode, "replay") == 0 && r->auth)
				replay(r);
			if (!r->tricked && strcmp(r->mode, "tamper") == 0) {
				b[len / 2] ^= 0x01;
				printf("tampered with the welcome\n");
				fflush(stdout);
			}
			r->tricked = true;
			pthread_mutex_unlock(&r->mu);
		}
		if (msg_type_of(b, len) == MSG_LEASE && strcmp(r->mode, "stale") == 0) {
			pthread_mutex_lock(&r->mu);
			if (r->lease == NULL) {
				r->lease = malloc(len);
				memcpy(r->lease, b, len);
				r->llen = len;
			} else if (!r->staled) {
				nng_msg_clear(m);
				nng_msg_append(m, r->lease, r->llen);
				b = nng_msg_body(m);
				len = nng_msg_len(m);
				r->staled = true;
				printf("answered a lease request with the older lease\n");
				fflush(stdout);
			}
			pthread_mutex_unlock(&r->mu);
		}
		record(r, b, len);
		nng_aio_set_msg(aio, m);
		nng_ctx_send(dc, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0)
			nng_msg_free(nng_aio_get_msg(aio));
	}
	nng_aio_free(aio);
	return NULL;
}

static void
print_listening(nng_listener l, const char *url)
{
	const char	*colon = strrchr(url, ':');
	int		 port = 0;

	nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
	printf("listening on %.*s:%d\n", (int)(colon - url), url, port);
	fflush(stdout);
}

static int
relay(const char *up_url, const char *listen, const char *dump, const char *mode)
{
	struct relay	 r = { .up_url = up_url, .mode = mode,
			    .mu = PTHREAD_MUTEX_INITIALIZER };
	nng_listener	 l;
	pthread_t	 t[4];
	int		 i;

	if ((r.dump = open(dump, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600)) == -1)
		return 1;
	r.up = dial(up_url);
	nng_socket_set_ms(r.up, NNG_OPT_RECVTIMEO, NNG_DURATION_INFINITE);
	nng_socket_set_ms(r.up, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if (nng_rep0_open(&r.down) != 0 || nng_listen(r.down, listen, &l, 0) != 0) {
		fprintf(stderr, "cannot listen on %s\n", listen);
		return 1;
	}
	print_listening(l, listen);
	/* A worker has two contexts (requests, heartbeats): room for both. */
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, relay_main, &r);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* --- a fake coordinator --- */

static void
reply(nng_socket s, struct msg *m)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;

	if (msg_encode(m, &buf, &len, err) == -1)
		exit(2);
	nng_send(s, buf, len, 0);
	free(buf);
}

static int
fake(const char *url, const char *mode, const char *config, const char *tls_cert)
{
	nng_socket	 s;
	nng_listener	 l;
	nng_tls_config	*tc;
	struct msg	 req, rep;
	struct msg_seed	 seed0 = { 0, 1 };
	char		 err[ERR_LEN], path[PATH_MAX], *text = NULL;
	void		*buf;
	size_t		 len;
	int		 leased = 0;

	if (config && ((text = read_file(config, 1 << 20, NULL, err)) == NULL ||
	    realpath(config, path) == NULL)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (nng_rep0_open(&s) != 0 || nng_listener_create(&l, s, url) != 0)
		return 1;
	if (tls_cert && (nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER) != 0 ||
	    nng_tls_config_cert_key_file(tc, tls_cert, NULL) != 0 ||
	    nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc) != 0)) {
		fprintf(stderr, "cannot use %s\n", tls_cert);
		return 1;
	}
	if (nng_listener_start(l, 0) != 0)
		return 1;
	print_listening(l, url);
	while (nng_recv(s, &buf, &len, NNG_FLAG_ALLOC) == 0) {
		int	r = msg_decode(buf, len, &req, err);

		nng_free(buf, len);
		if (r == -1) {
			printf("got garbage: %s\n", err);
			fflush(stdout);
			continue;
		}
		printf("got %s\n", msg_type_name(req.type));
		fflush(stdout);
		memset(&rep, 0, sizeof(rep));
		rep.type = MSG_ACK;
		rep.u.ack.ok = 1;
		rep.u.ack.text = "ok";
		if (req.type == MSG_HELLO && strcmp(mode, "fake-nack") == 0) {
			rep.type = MSG_NACK;
			rep.u.ack.ok = 0;
			rep.u.ack.text = getenv("SOAK_PEER_TEXT") ? getenv("SOAK_PEER_TEXT") : "";
		} else if (req.type == MSG_HELLO && strcmp(mode, "fake-challenge") == 0) {
			rep.type = MSG_CHALLENGE;
			auth_nonce(rep.u.challenge.nonce, err);
			auth_nonce(rep.u.challenge.proof, err);
		} else if (req.type == MSG_HELLO) {
			rep.type = MSG_WELCOME;
			rep.u.welcome.worker_id = 1;
			rep.u.welcome.run_id = "fake";
			rep.u.welcome.cfg_path = path;
			rep.u.welcome.cfg_text = text;
			rep.u.welcome.db_conninfo = "";
			rep.u.welcome.keep_dir = "";
			rep.u.welcome.workspace = "";
			rep.u.welcome.heartbeat_ms = 500;
		} else if (req.type == MSG_LEASE_REQ && !leased++) {
			rep.type = MSG_LEASE;
			rep.u.lease.lease_id = 1;
			rep.u.lease.ttl_ms = 60000;
			rep.u.lease.nseeds = 1;
			rep.u.lease.seeds = &seed0;
		} else if (req.type == MSG_LEASE_REQ)
			rep.type = MSG_DONE;
		msg_clear(&req);
		reply(s, &rep);
	}
	free(text);
	return 0;
}

int
main(int argc, char **argv)
{
	const char	*tls_cert = NULL;

	cond_init_monotonic(&gone_cv);
	if (argc > 2 && strcmp(argv[1], "--tls-cert") == 0) {
		tls_cert = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc >= 5 && strcmp(argv[2], "relay") == 0)
		return relay(argv[1], argv[3], argv[4], argc > 5 ? argv[5] : "record");
	if (argc == 4 && strcmp(argv[2], "fake-welcome") == 0)
		return fake(argv[1], argv[2], argv[3], tls_cert);
	if (argc == 3 && (strcmp(argv[2], "fake-challenge") == 0 ||
	    strcmp(argv[2], "fake-nack") == 0))
		return fake(argv[1], argv[2], NULL, tls_cert);
	if (argc == 4 && strcmp(argv[2], "inflight") == 0)
		return inflight(argv[1], atoi(argv[3]));
	if (argc == 3 && strcmp(argv[2], "hold") == 0)
		return hold(argv[1]);
	if (argc == 3 && strcmp(argv[2], "explore-forge") == 0)
		return explore_forge(argv[1]);
	if (argc == 3 && strcmp(argv[2], "junk") == 0)
		return junk(argv[1]);
	if (argc == 6 && strcmp(argv[2], "stall") == 0)
		return stall(argv[1], atoi(argv[3]), strtoull(argv[4], NULL, 10),
		    strtoull(argv[5], NULL, 10));
	if (argc == 4 && strcmp(argv[2], "silent") == 0)
		return stall(argv[1], atoi(argv[3]), 0, 0);
	if (argc == 5 && strcmp(argv[2], "hush") == 0)
		return flood(argv[1], atoi(argv[3]), argv[4], false);
	if (argc == 5 && strcmp(argv[2], "slowloris") == 0)
		return flood(argv[1], atoi(argv[3]), argv[4], true);
	if (argc == 6 && strcmp(argv[2], "guess") == 0)
		return guess(argv[1], atoi(argv[3]), argv[4], atoi(argv[5]));
	if (argc == 3)
		return client(argv[1], argv[2]);
	fprintf(stderr, "usage: soak_peer URL garbage|version|stranger|forged|badauth\n"
	    "       soak_peer URL hold | explore-forge | inflight N | junk | stall COUNT SIZE PART | silent COUNT\n"
	    "       soak_peer URL hush COUNT SRC | slowloris COUNT SRC | guess COUNT SRC PAR\n"
	    "       soak_peer URL relay LISTEN DUMP [replay|tamper|stale]\n"
	    "       soak_peer [--tls-cert PEM] URL fake-welcome CONFIG | fake-challenge\n"
	    "       soak_peer URL fake-nack\n");
	return 64;
}
