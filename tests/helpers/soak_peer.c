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
 *
 * A fake coordinator (listens on URL, optionally with TLS, and prints
 * "got TYPE" for each request):
 *
 *   soak_peer [--tls-cert PEM] URL fake-welcome CONFIG
 *        answers HELLO with a WELCOME carrying CONFIG, leases seed 0 once
 *   soak_peer [--tls-cert PEM] URL fake-challenge
 *        answers HELLO with a CHALLENGE whose proof is made up
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	m.u.hello.name = "peer";
	m.u.hello.host = "peer";
	if (auth_nonce(m.u.hello.nonce, err) == -1)
		exit(2);
	return m;
}

/* --- against a coordinator --- */

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
		if (req.type == MSG_HELLO && strcmp(mode, "fake-challenge") == 0) {
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

	if (argc > 2 && strcmp(argv[1], "--tls-cert") == 0) {
		tls_cert = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc >= 5 && strcmp(argv[2], "relay") == 0)
		return relay(argv[1], argv[3], argv[4], argc > 5 ? argv[5] : "record");
	if (argc == 4 && strcmp(argv[2], "fake-welcome") == 0)
		return fake(argv[1], argv[2], argv[3], tls_cert);
	if (argc == 3 && strcmp(argv[2], "fake-challenge") == 0)
		return fake(argv[1], argv[2], NULL, tls_cert);
	if (argc == 3)
		return client(argv[1], argv[2]);
	fprintf(stderr, "usage: soak_peer URL garbage|version|stranger|forged|badauth\n"
	    "       soak_peer URL relay LISTEN DUMP [replay|tamper]\n"
	    "       soak_peer [--tls-cert PEM] URL fake-welcome CONFIG | fake-challenge\n");
	return 64;
}
