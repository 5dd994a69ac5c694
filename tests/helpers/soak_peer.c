/*
 * A misbehaving peer for the coordinator tests: dials URL with a req0
 * socket and sends one of a few bad requests, printing the reply as
 * "TYPE ok=N text" (or "no reply: ...").
 *
 *   soak_peer URL garbage        bytes that are not a soak message
 *   soak_peer URL version        a hello with the wrong protocol version
 *   soak_peer URL stranger       a lease request from a worker that never said hello
 *   soak_peer URL forged         hello, then a result for a lease it does not hold
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/msg.h"
#include "common/util.h"

static int
call(nng_socket s, const void *buf, size_t len)
{
	struct msg	 rep;
	char		 err[ERR_LEN];
	void		*rbuf;
	size_t		 rlen;
	int		 rv;

	if ((rv = nng_send(s, UNCONST(buf), len, 0)) != 0 ||
	    (rv = nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC)) != 0) {
		printf("no reply: %s\n", nng_strerror(rv));
		return -1;
	}
	if (msg_decode(rbuf, rlen, &rep, err) == -1) {
		printf("bad reply: %s\n", err);
		nng_free(rbuf, rlen);
		return -1;
	}
	nng_free(rbuf, rlen);
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

static int
send_msg(nng_socket s, struct msg *m)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;
	int	 rv;

	if (msg_encode(m, &buf, &len, err) == -1) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	rv = call(s, buf, len);
	free(buf);
	return rv;
}

int
main(int argc, char **argv)
{
	nng_socket	s;
	struct msg	m;
	int		wid;

	if (argc != 3) {
		fprintf(stderr, "usage: soak_peer URL garbage|version|stranger|forged\n");
		return 64;
	}
	if (nng_req0_open(&s) != 0 || nng_dial(s, argv[1], NULL, 0) != 0) {
		fprintf(stderr, "cannot dial %s\n", argv[1]);
		return 1;
	}
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 10000);
	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	m.u.hello.name = "peer";
	m.u.hello.host = "peer";
	m.u.hello.secret = "";
	if (strcmp(argv[2], "garbage") == 0) {
		call(s, "GET / HTTP/1.1\r\n\r\n", 18);
	} else if (strcmp(argv[2], "version") == 0) {
		char	 err[ERR_LEN];
		uint8_t	*buf;
		size_t	 len;

		msg_encode(&m, &buf, &len, err);
		buf[5] = MSG_VERSION + 1;
		call(s, buf, len);
		free(buf);
	} else if (strcmp(argv[2], "stranger") == 0) {
		m.type = MSG_LEASE_REQ;
		m.u.lease_req.worker_id = 4242;
		send_msg(s, &m);
	} else if (strcmp(argv[2], "forged") == 0) {
		wid = send_msg(s, &m);
		memset(&m, 0, sizeof(m));
		m.type = MSG_RESULT;
		m.u.result.worker_id = (uint32_t)wid;
		m.u.result.lease_id = 999;
		m.u.result.seed = 0;
		m.u.result.attempt = 1;
		m.u.result.verdict = VERDICT_PASS;
		m.u.result.reason = "";
		m.u.result.detail = "{}";
		send_msg(s, &m);
		memset(&m, 0, sizeof(m));
		m.type = MSG_BYE;
		m.u.bye.worker_id = (uint32_t)wid;
		send_msg(s, &m);
	} else {
		fprintf(stderr, "unknown mode %s\n", argv[2]);
		return 64;
	}
	nng_close(s);
	return 0;
}
