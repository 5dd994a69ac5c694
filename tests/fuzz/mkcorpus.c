/*
 * Writes the seed inputs that come from code (make fuzz-corpus):
 * CORPUS/msg/ real messages of every type, encoded by msg_encode,
 * CORPUS/http/ requests and responses with fuzz_http's prefix (flags,
 * split sizes), CORPUS/bundle/ bundles of small folders (bundle_pack) and
 * CORPUS/preauth/ programs for fuzz_preauth (a handshake, a wrong proof,
 * a crowd of connections).  Run it after a change to the wire format and
 * commit what changed; tests/fuzz/corpus/config/ is written by hand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/bundle.h"
#include "common/msg.h"
#include "common/util.h"

static const char	*corpus;

static void
put(const char *dir, const char *name, const void *data, size_t len)
{
	char	*path = xasprintf("%s/%s/%s", corpus, dir, name);
	FILE	*f;

	if ((f = fopen(path, "wb")) == NULL ||
	    fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "mkcorpus: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	free(path);
}

static void
put_msg(const char *name, const struct msg *m)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;

	if (msg_encode(m, &buf, &len, err) == -1) {
		fprintf(stderr, "mkcorpus: %s: %s\n", name, err);
		exit(1);
	}
	put("msg", name, buf, len);
	free(buf);
}

static void
msgs(char *cfg_text)
{
	static struct msg_seed	 seeds[3] = { { 17, 1 }, { 18, 1 }, { 4096, 2 } };
	static uint8_t		 blob[] = { 0x1f, 0x8b, 0, 0, 'p', 'a', 'x', 0 };
	struct msg		 m;
	size_t			 i;

	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	m.u.hello.name = "worker-3:4242";
	m.u.hello.host = "worker-3";
	m.u.hello.pid = 4242;
	m.u.hello.slots = 4;
	for (i = 0; i < MSG_B32; i++)
		m.u.hello.nonce[i] = (uint8_t)(i * 7 + 1);
	m.u.hello.rejoin_run = "";
	put_msg("hello", &m);
	m.u.hello.rejoin_id = 3;
	m.u.hello.rejoin_run = "20250101T000000-ab12";
	put_msg("hello-rejoin", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_CHALLENGE;
	for (i = 0; i < MSG_B32; i++) {
		m.u.challenge.nonce[i] = (uint8_t)(0xc0 + i);
		m.u.challenge.proof[i] = (uint8_t)(0x33 ^ i);
	}
	put_msg("challenge", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_AUTH;
	for (i = 0; i < MSG_B32; i++)
		m.u.auth.proof[i] = (uint8_t)(0x5a + i);
	put_msg("auth", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_WELCOME;
	m.u.welcome.worker_id = 3;
	m.u.welcome.run_id = "20250101T000000-ab12";
	m.u.welcome.cfg_path = "/srv/soak/examples/refunds/soak.yaml";
	m.u.welcome.cfg_text = cfg_text;
	m.u.welcome.db_conninfo = "host=db.internal port=5432 user=soak password=***";
	m.u.welcome.keep_dir = "";
	m.u.welcome.workspace = "/var/tmp/soak";
	m.u.welcome.heartbeat_ms = 2000;
	m.u.welcome.bundle_hash =
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	put_msg("welcome", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE_REQ;
	m.u.lease_req.worker_id = 3;
	put_msg("lease-request", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE;
	m.u.lease.lease_id = 0x0102030405060708ULL;
	m.u.lease.ttl_ms = 30000;
	m.u.lease.nseeds = 3;
	m.u.lease.seeds = seeds;
	put_msg("lease", &m);
	/* A regression's lease (common/regress.h): its plan, alone. */
	m.u.lease.plan = "seed-16-invariant-items-reserved-matches";
	m.u.lease.plan_hash =
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	m.u.lease.nseeds = 1;
	put_msg("lease-regression", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_RESULT;
	m.u.result.worker_id = 3;
	m.u.result.lease_id = 9;
	m.u.result.seed = 17;
	m.u.result.attempt = 1;
	m.u.result.verdict = VERDICT_FAIL;
	m.u.result.reason = "invariant: at most one settled refund per dispute";
	m.u.result.duration_ms = 1834;
	m.u.result.detail = "{\"rows\":[[\"d-1\",2,\"40.00\",\"a1 a2\"]],"
	    "\"turns\":[{\"turn\":0,\"status\":0}]}";
	put_msg("result-fail", &m);
	m.u.result.verdict = VERDICT_PASS;
	m.u.result.reason = "";
	m.u.result.detail = "{}";
	put_msg("result-pass", &m);
	m.u.result.plan = "seed-16-invariant-items-reserved-matches";
	m.u.result.plan_hash =
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	m.u.result.verdict = VERDICT_INFRA;
	m.u.result.reason = "diverged";
	put_msg("result-regression", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_HEARTBEAT;
	m.u.heartbeat.worker_id = 3;
	m.u.heartbeat.lease_id = 9;
	m.u.heartbeat.seed = 18;
	put_msg("heartbeat", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_ACK;
	m.u.ack.ok = 1;
	m.u.ack.text = "ok";
	m.u.ack.keep = 2;
	put_msg("ack", &m);
	m.type = MSG_NACK;
	m.u.ack.ok = 0;
	m.u.ack.text = "lease 9 expired";
	m.u.ack.keep = 0;
	put_msg("nack", &m);
	m.type = MSG_DONE;
	m.u.ack.text = "run over";
	put_msg("done", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_BYE;
	m.u.bye.worker_id = 3;
	m.u.bye.drain = 1;
	put_msg("bye", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_BUNDLE_REQ;
	m.u.bundle_req.worker_id = 3;
	m.u.bundle_req.hash =
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	put_msg("bundle-request", &m);

	memset(&m, 0, sizeof(m));
	m.type = MSG_BUNDLE;
	m.u.bundle.hash =
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
	m.u.bundle.data = blob;
	m.u.bundle.len = sizeof(blob);
	put_msg("bundle", &m);
}

/* flags (bit 0 responses, bit 1 to HEAD), split sizes, then the stream. */
static void
put_http(const char *name, unsigned flags, const char *sizes, size_t ns,
    const char *stream)
{
	size_t	 n = strlen(stream);
	char	*buf = xcalloc(1, 2 + ns + n);

	buf[0] = (char)flags;
	buf[1] = (char)ns;
	memcpy(buf + 2, sizes, ns);
	memcpy(buf + 2 + ns, stream, n);
	put("http", name, buf, 2 + ns + n);
	free(buf);
}

#define SIZES(s)	s, sizeof(s) - 1

static void
http(void)
{
	/* Split sizes as bytes: "\x05\x01" feeds 5 bytes, then 1, then 5...;
	 * 0 is an empty read, then one byte. */
	put_http("req-get", 0, SIZES("\x07"),
	    "GET /v1/refunds?dispute=d-1 HTTP/1.1\r\nHost: provider\r\n"
	    "Accept: */*\r\n\r\n");
	put_http("req-post-length", 0, SIZES("\x03\x11\x00"),
	    "POST /v1/refunds HTTP/1.1\r\nHost: provider\r\n"
	    "Content-Type: application/json\r\nContent-Length: 27\r\n\r\n"
	    "{\"dispute\":\"d-1\",\"eur\":20}\n");
	put_http("req-post-chunked", 0, SIZES("\x0d\x02"),
	    "POST /upload HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n"
	    "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
	    "0\r\nX-Checksum: 42\r\n\r\n");
	put_http("req-pipelined", 0, SIZES("\x20"),
	    "\r\nHEAD / HTTP/1.1\r\nHost: a\r\n\r\n"
	    "PUT /k HTTP/1.1\r\ncontent-length: 3\r\n\r\nabc"
	    "DELETE /k HTTP/1.1\r\nHost: a\r\n\r\n"
	    "OPTIONS * HTTP/1.1\r\n\r\n");
	put_http("req-not-http", 0, SIZES(""),
	    "SSH-2.0-OpenSSH_9.2\r\n\r\n");
	put_http("resp-length", 1, SIZES("\x01\x40"),
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 17\r\n\r\n{\"refunded\":true}");
	put_http("resp-chunked", 1, SIZES("\x09\x09\x01"),
	    "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n"
	    "HTTP/1.1 204 No Content\r\n\r\n"
	    "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n");
	put_http("resp-continue", 1, SIZES("\x0b"),
	    "HTTP/1.1 100 Continue\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	put_http("resp-upgrade", 1, SIZES(""),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\n\r\n\x81\x05hello");
	put_http("resp-close", 1, SIZES("\x10\x00"),
	    "HTTP/1.0 200 OK\r\nServer: old\r\n\r\nuntil the connection closes");
	put_http("resp-head", 3, SIZES("\x05"),
	    "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
	    "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n");
	put_http("resp-bad-length", 1, SIZES(""),
	    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"
	    "hello!");
}

/* A folder under tmp: name -> text (mode), "name/" a folder, "name@target" a symlink. */
static void
put_bundle(const char *name, const char *const *entries)
{
	char		 tmp[] = "/tmp/soak-mkcorpus.XXXXXX", err[ERR_LEN], *p;
	struct bundle	 b;
	const char	*at;
	size_t		 i;

	if (mkdtemp(tmp) == NULL)
		exit(1);
	for (i = 0; entries[i] != NULL; i++) {
		const char	*e = entries[i];
		size_t		 n = strlen(e);

		if ((at = strchr(e, '@')) != NULL) {
			char	*link = xasprintf("%s/%.*s", tmp, (int)(at - e), e);

			if (symlink(at + 1, link) == -1)
				exit(1);
			free(link);
		} else if (e[n - 1] == '/') {
			p = xasprintf("%s/%s", tmp, e);
			mkdir(p, 0755);
			free(p);
		} else {
			p = xasprintf("%s/%s", tmp, e);
			if (write_file(p, "#!/bin/sh\nexit 0\n", 17, err) == -1)
				exit(1);
			chmod(p, strstr(e, ".sh") ? 0755 : 0644);
			free(p);
		}
	}
	if (bundle_pack(tmp, NULL, &b, err) == -1) {
		fprintf(stderr, "mkcorpus: %s: %s\n", name, err);
		exit(1);
	}
	put("bundle", name, b.data, b.len);
	bundle_free(&b);
	rm_rf(tmp);
}

static void
bundles(void)
{
	static const char *const config[] = { "soak.yaml", "schema.sql", "turn.sh",
	    "fixtures/", "fixtures/a.sql", "fixtures/deep/", "fixtures/deep/b.sql",
	    "run.sh@turn.sh", "data@fixtures", "up@fixtures/../schema.sql", NULL };
	static const char *const one[] = { "soak.yaml", NULL };
	static const char *const none[] = { NULL };

	put_bundle("config-folder", config);
	put_bundle("one-file", one);
	put_bundle("empty", none);
}

/* fuzz_preauth's records (its header comment). */
struct prog {
	uint8_t	b[4096];
	size_t	n;
};

static void
op(struct prog *p, uint8_t code, int arg)
{
	p->b[p->n++] = code;
	if (arg >= 0)
		p->b[p->n++] = (uint8_t)arg;
}

static void
op_msg(struct prog *p, uint8_t code, const struct msg *m)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;

	if (msg_encode(m, &buf, &len, err) == -1)
		exit(1);
	p->b[p->n++] = code;
	p->b[p->n++] = (uint8_t)(len >> 8);
	p->b[p->n++] = (uint8_t)len;
	memcpy(p->b + p->n, buf, len);
	p->n += len;
	free(buf);
}

static void
preauth(void)
{
	struct prog	p;
	struct msg	hello = { .type = MSG_HELLO }, auth = { .type = MSG_AUTH },
			lease = { .type = MSG_LEASE_REQ }, beat = { .type = MSG_HEARTBEAT };
	int		i;

	hello.u.hello.name = "worker-1:77";
	hello.u.hello.host = "worker-1";
	hello.u.hello.slots = 1;
	/* Fixed bytes: the same corpus at every make fuzz-corpus. */
	memset(hello.u.hello.nonce, 0x5a, sizeof(hello.u.hello.nonce));
	memset(auth.u.auth.proof, 0xa5, sizeof(auth.u.auth.proof));
	lease.u.lease_req.worker_id = 1;
	beat.u.heartbeat.worker_id = 1;
	/* A worker: HELLO, the right AUTH, sealed requests, then it goes. */
	memset(&p, 0, sizeof(p));
	op_msg(&p, 0, &hello);
	op(&p, 5, -1);
	op(&p, 2, -1);
	op_msg(&p, 1, &lease);
	op_msg(&p, 1, &beat);
	op_msg(&p, 0, &beat);
	op(&p, 6, 200);
	op(&p, 7, -1);
	put("preauth", "worker", p.b, p.n);
	/* A wrong proof, an AUTH out of the blue, a second HELLO. */
	memset(&p, 0, sizeof(p));
	op_msg(&p, 0, &hello);
	op_msg(&p, 0, &auth);
	op(&p, 3, 1);
	op_msg(&p, 0, &auth);
	op(&p, 3, 2);
	op_msg(&p, 0, &hello);
	op_msg(&p, 0, &hello);
	put("preauth", "failures", p.b, p.n);
	/* A crowd: silent ones, a few that speak, time passing. */
	memset(&p, 0, sizeof(p));
	for (i = 0; i < 14; i++) {
		op(&p, 3, i);
		if (i % 3 == 0) {
			op_msg(&p, 0, &hello);
			op(&p, 5, -1);
		}
	}
	op(&p, 6, 30);
	op(&p, 4, 2);
	op(&p, 2, -1);
	op(&p, 6, 130);
	put("preauth", "crowd", p.b, p.n);
}

int
main(int argc, char **argv)
{
	char	 err[ERR_LEN], *cfg;
	size_t	 len;

	if (argc != 3) {
		fprintf(stderr, "usage: mkcorpus CORPUS_DIR CONFIG_FOR_WELCOME\n");
		return 64;
	}
	corpus = argv[1];
	if ((cfg = read_file(argv[2], 64 * 1024, &len, err)) == NULL) {
		fprintf(stderr, "mkcorpus: %s\n", err);
		return 1;
	}
	msgs(cfg);
	http();
	bundles();
	preauth();
	free(cfg);
	return 0;
}
