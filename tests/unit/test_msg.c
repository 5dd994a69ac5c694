/* The wire codec: round trips, and every way a hostile message is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/msg.h"
#include "common/util.h"

static uint8_t *
encode(const struct msg *m, size_t *len)
{
	char	 err[ERR_LEN];
	uint8_t	*buf = NULL;

	assert_int_equal(msg_encode(m, &buf, len, err), 0);
	return buf;
}

/* m encodes, and its decoder refuses it with an error naming why. */
static void
refused(const struct msg *m, const char *why)
{
	struct msg	 out;
	char		 err[ERR_LEN];
	size_t		 len;
	uint8_t		*buf = encode(m, &len);

	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, why));
	free(buf);
}

static void
test_roundtrip_all_types(void **state)
{
	struct msg_seed	 seeds[3] = { { 5, 1 }, { 6, 1 }, { UINT64_MAX, 3 } };
	struct msg	 in[12], out;
	uint8_t		 blob[5] = { 'a', 0, 0xff, 0, 'z' };
	char		 err[ERR_LEN];
	size_t		 i, len;
	uint8_t		*buf;

	(void)state;
	memset(in, 0, sizeof(in));
	in[0].type = MSG_HELLO;
	in[0].u.hello.name = "h:1"; in[0].u.hello.host = "h";
	in[0].u.hello.pid = 4242; in[0].u.hello.slots = 2;
	in[0].u.hello.rejoin_id = 5; in[0].u.hello.rejoin_run = "r0";
	for (i = 0; i < MSG_B32; i++)
		in[0].u.hello.nonce[i] = (uint8_t)(0xa0 + i);
	in[1].type = MSG_WELCOME;
	in[1].u.welcome.worker_id = 7; in[1].u.welcome.run_id = "r1";
	in[1].u.welcome.cfg_path = "/x/soak.yaml"; in[1].u.welcome.cfg_text = "name: x\n";
	in[1].u.welcome.db_conninfo = "host=/tmp"; in[1].u.welcome.keep_dir = "";
	in[1].u.welcome.workspace = "/w"; in[1].u.welcome.heartbeat_ms = 500;
	in[1].u.welcome.bundle_hash = "ab12";
	in[2].type = MSG_LEASE;
	in[2].u.lease.lease_id = 0x0102030405060708ULL; in[2].u.lease.ttl_ms = 5000;
	in[2].u.lease.nseeds = 3; in[2].u.lease.seeds = seeds;
	in[3].type = MSG_RESULT;
	in[3].u.result.worker_id = 3; in[3].u.result.lease_id = 9;
	in[3].u.result.seed = 1477; in[3].u.result.attempt = 2;
	in[3].u.result.verdict = VERDICT_FAIL; in[3].u.result.reason = "invariant";
	in[3].u.result.duration_ms = 131; in[3].u.result.detail = "{\"a\":1}";
	in[4].type = MSG_HEARTBEAT;
	in[4].u.heartbeat.worker_id = 3; in[4].u.heartbeat.lease_id = 9;
	in[4].u.heartbeat.seed = 11;
	in[5].type = MSG_ACK; in[5].u.ack.ok = 1; in[5].u.ack.text = "ok";
	in[5].u.ack.keep = 17;
	in[6].type = MSG_LEASE_REQ; in[6].u.lease_req.worker_id = 12;
	in[7].type = MSG_BYE; in[7].u.bye.worker_id = 12; in[7].u.bye.drain = 1;
	in[8].type = MSG_CHALLENGE;
	for (i = 0; i < MSG_B32; i++) {
		in[8].u.challenge.nonce[i] = (uint8_t)i;
		in[8].u.challenge.proof[i] = (uint8_t)(255 - i);
	}
	in[9].type = MSG_AUTH;
	memset(in[9].u.auth.proof, 0x5a, MSG_B32);
	in[9].u.auth.proof[MSG_B32 - 1] = 0;	/* raw bytes: a NUL is fine */
	in[10].type = MSG_BUNDLE_REQ;
	in[10].u.bundle_req.worker_id = 4; in[10].u.bundle_req.hash = "ab12";
	in[11].type = MSG_BUNDLE;
	in[11].u.bundle.hash = "ab12";
	in[11].u.bundle.data = blob; in[11].u.bundle.len = sizeof(blob);

	for (i = 0; i < 12; i++) {
		buf = encode(&in[i], &len);
		assert_int_equal(msg_decode(buf, len, &out, err), 0);
		assert_int_equal(out.type, in[i].type);
		free(buf);
		switch (out.type) {
		case MSG_HELLO:
			assert_string_equal(out.u.hello.name, "h:1");
			assert_int_equal(out.u.hello.pid, 4242);
			assert_int_equal(out.u.hello.slots, 2);
			assert_int_equal(out.u.hello.rejoin_id, 5);
			assert_string_equal(out.u.hello.rejoin_run, "r0");
			assert_memory_equal(out.u.hello.nonce, in[0].u.hello.nonce, MSG_B32);
			break;
		case MSG_CHALLENGE:
			assert_memory_equal(out.u.challenge.nonce, in[8].u.challenge.nonce,
			    MSG_B32);
			assert_memory_equal(out.u.challenge.proof, in[8].u.challenge.proof,
			    MSG_B32);
			break;
		case MSG_AUTH:
			assert_memory_equal(out.u.auth.proof, in[9].u.auth.proof, MSG_B32);
			break;
		case MSG_WELCOME:
			assert_int_equal(out.u.welcome.worker_id, 7);
			assert_string_equal(out.u.welcome.cfg_text, "name: x\n");
			assert_string_equal(out.u.welcome.workspace, "/w");
			assert_int_equal(out.u.welcome.heartbeat_ms, 500);
			assert_string_equal(out.u.welcome.bundle_hash, "ab12");
			break;
		case MSG_BUNDLE_REQ:
			assert_int_equal(out.u.bundle_req.worker_id, 4);
			assert_string_equal(out.u.bundle_req.hash, "ab12");
			break;
		case MSG_BUNDLE:
			assert_string_equal(out.u.bundle.hash, "ab12");
			assert_int_equal(out.u.bundle.len, sizeof(blob));
			assert_memory_equal(out.u.bundle.data, blob, sizeof(blob));
			break;
		case MSG_LEASE:
			assert_true(out.u.lease.lease_id == 0x0102030405060708ULL);
			assert_int_equal(out.u.lease.nseeds, 3);
			assert_true(out.u.lease.seeds[2].seed == UINT64_MAX);
			assert_int_equal(out.u.lease.seeds[2].attempt, 3);
			break;
		case MSG_RESULT:
			assert_true(out.u.result.seed == 1477);
			assert_int_equal(out.u.result.verdict, VERDICT_FAIL);
			assert_string_equal(out.u.result.reason, "invariant");
			assert_string_equal(out.u.result.detail, "{\"a\":1}");
			break;
		case MSG_HEARTBEAT:
			assert_true(out.u.heartbeat.seed == 11);
			break;
		case MSG_ACK:
			assert_int_equal(out.u.ack.ok, 1);
			assert_string_equal(out.u.ack.text, "ok");
			assert_int_equal(out.u.ack.keep, 17);
			break;
		case MSG_LEASE_REQ:
			assert_int_equal(out.u.lease_req.worker_id, 12);
			break;
		case MSG_BYE:
			assert_int_equal(out.u.bye.worker_id, 12);
			break;
		default:
			fail();
		}
		msg_clear(&out);
	}
}

#define HASH_A	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct msg
sample_result(void)
{
	struct msg	m;

	memset(&m, 0, sizeof(m));
	m.type = MSG_RESULT;
	m.u.result.seed = 3;
	m.u.result.reason = "db";
	m.u.result.verdict = VERDICT_INFRA;
	m.u.result.detail = "{}";
	return m;
}

static void
test_every_truncation_rejected(void **state)
{
	struct msg	 m = sample_result(), out;
	char		 err[ERR_LEN];
	size_t		 len, cut;
	uint8_t		*buf;

	(void)state;
	buf = encode(&m, &len);
	/* Cut anywhere, with the header patched to agree or not: never accepted. */
	for (cut = 0; cut < len; cut++) {
		assert_int_equal(msg_decode(buf, cut, &out, err), -1);
		if (cut >= MSG_HDR_LEN) {
			uint8_t	*c = malloc(cut);
			uint32_t b = (uint32_t)(cut - MSG_HDR_LEN);

			memcpy(c, buf, cut);
			c[8] = b >> 24; c[9] = b >> 16; c[10] = b >> 8; c[11] = b;
			assert_int_equal(msg_decode(c, cut, &out, err), -1);
			assert_non_null(strstr(err, "truncated"));
			free(c);
		}
	}
	free(buf);
}

static void
test_wrong_version_magic_type_trailing(void **state)
{
	struct msg	 m = sample_result(), out;
	char		 err[ERR_LEN];
	size_t		 len;
	uint8_t		*buf, *big;

	(void)state;
	buf = encode(&m, &len);
	buf[5] = MSG_VERSION + 1;
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "protocol version"));
	buf[5] = MSG_VERSION;
	buf[0] = 'X';
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "magic"));
	buf[0] = 'S';
	buf[7] = 99;
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "unknown message type"));
	buf[7] = MSG_RESULT;
	/* One extra byte, with a header that admits it. */
	big = calloc(1, len + 1);
	memcpy(big, buf, len);
	big[11] += 1;
	assert_int_equal(msg_decode(big, len + 1, &out, err), -1);
	assert_non_null(strstr(err, "trailing"));
	/* Bad verdict value. */
	buf[MSG_HDR_LEN + 4 + 8 + 8 + 4] = 7;
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "verdict"));
	free(big);
	free(buf);
}

static void
test_oversized_and_lying_lengths(void **state)
{
	struct msg	 m = sample_result(), out;
	char		 err[ERR_LEN], *huge;
	size_t		 len;
	uint8_t		*buf;

	(void)state;
	/* A string field whose length prefix claims 4 GiB. */
	buf = encode(&m, &len);
	memset(buf + MSG_HDR_LEN + 4 + 8 + 8 + 4 + 1, 0xff, 4);
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "reason"));
	free(buf);
	/* A field over its cap is refused by the encoder, too. */
	huge = malloc(MSG_STR_SHORT + 2);
	memset(huge, 'a', MSG_STR_SHORT + 1);
	huge[MSG_STR_SHORT + 1] = '\0';
	m.u.result.reason = huge;
	assert_int_equal(msg_encode(&m, &buf, &len, err), -1);
	assert_non_null(strstr(err, "reason"));
	free(huge);
	/* A lease whose count disagrees with its bytes. */
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE;
	buf = encode(&m, &len);
	buf[MSG_HDR_LEN + 8 + 4 + 4 + 4 + 4 + 4 + 3] = 200;	/* past plan, plan_hash,
								   minimize_ms, explore */
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "seeds"));
	free(buf);
	/* An embedded NUL in a string. */
	m = sample_result();
	m.u.result.reason = "ab";
	buf = encode(&m, &len);
	buf[MSG_HDR_LEN + 4 + 8 + 8 + 4 + 1 + 4] = '\0';
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "NUL"));
	free(buf);
}

/* The handshake's fixed-size fields: exact lengths, nothing more or less. */
static void
test_handshake_sizes(void **state)
{
	struct msg	 m, out;
	char		 err[ERR_LEN];
	size_t		 len, cut;
	uint8_t		*buf, *big;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MSG_CHALLENGE;
	buf = encode(&m, &len);
	assert_int_equal(len, MSG_HDR_LEN + 2 * MSG_B32);
	for (cut = MSG_HDR_LEN; cut < len; cut++) {
		uint32_t b = (uint32_t)(cut - MSG_HDR_LEN);

		buf[8] = b >> 24; buf[9] = b >> 16; buf[10] = b >> 8; buf[11] = b;
		assert_int_equal(msg_decode(buf, cut, &out, err), -1);
		assert_non_null(strstr(err, "truncated"));
	}
	free(buf);
	m.type = MSG_AUTH;
	buf = encode(&m, &len);
	assert_int_equal(len, MSG_HDR_LEN + MSG_B32);
	big = calloc(1, len + 1);
	memcpy(big, buf, len);
	big[11] += 1;
	assert_int_equal(msg_decode(big, len + 1, &out, err), -1);
	assert_non_null(strstr(err, "trailing"));
	free(big);
	free(buf);
	/* A HELLO carries no secret: its body is its names, two u32, Nw, and
	 * the rejoin id and run (empty for a new worker). */
	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	m.u.hello.name = "n";
	m.u.hello.host = "h";
	buf = encode(&m, &len);
	assert_int_equal(len, MSG_HDR_LEN + 4 + 1 + 4 + 1 + 4 + 4 + MSG_B32 + 4 + 4);
	free(buf);
}

static void
test_garbage_never_accepted(void **state)
{
	struct msg	out;
	char		err[ERR_LEN];
	uint8_t		buf[512];
	uint64_t	x = 88172645463325252ULL;
	int		i, j, accepted = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		size_t	len = 1 + (size_t)(x % sizeof(buf));

		for (j = 0; j < (int)len; j++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			buf[j] = (uint8_t)x;
		}
		/* Half the time keep a valid header so the body parser is hit. */
		if (i & 1 && len >= MSG_HDR_LEN) {
			uint32_t b = (uint32_t)(len - MSG_HDR_LEN);

			memcpy(buf, "SOAK", 4);
			buf[4] = 0; buf[5] = MSG_VERSION;
			buf[6] = 0; buf[7] = 1 + (uint8_t)(x % (MSG_TYPE_MAX - 1));
			buf[8] = b >> 24; buf[9] = b >> 16; buf[10] = b >> 8; buf[11] = b;
		}
		if (msg_decode(buf, len, &out, err) == 0) {
			accepted++;
			msg_clear(&out);
		}
	}
	/* Random bytes may form a valid short message; they must never crash. */
	assert_true(accepted < 20000);
}

/* A detail past MSG_DETAIL_MAX is refused both ways; the largest RESULT fits the cap. */
static void
test_detail_cap(void **state)
{
	struct msg	 m = sample_result(), out;
	char		 err[ERR_LEN], *detail, *reason, plan[MSG_PLAN_MAX + 1];
	size_t		 len;
	uint8_t		*buf;

	(void)state;
	detail = malloc(MSG_DETAIL_MAX + 2);
	reason = malloc(MSG_STR_SHORT + 1);
	memset(detail, 'd', MSG_DETAIL_MAX + 1);
	detail[MSG_DETAIL_MAX + 1] = '\0';
	memset(reason, 'r', MSG_STR_SHORT);
	reason[MSG_STR_SHORT] = '\0';
	m.u.result.detail = detail;
	assert_int_equal(msg_encode(&m, &buf, &len, err), -1);
	assert_non_null(strstr(err, "detail"));
	/* At the caps: encodes, decodes, and is MSG_RESULT_MAX long. */
	detail[MSG_DETAIL_MAX] = '\0';
	m.u.result.reason = reason;
	memset(plan, 'p', MSG_PLAN_MAX);
	plan[MSG_PLAN_MAX] = '\0';
	m.u.result.plan = plan;
	m.u.result.plan_hash = UNCONST(HASH_A);
	buf = encode(&m, &len);
	assert_int_equal(len, MSG_RESULT_MAX);
	assert_true(len < MSG_COORD_RECV_MAX);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	msg_clear(&out);
	free(buf);
	/* One byte more, written by hand: the decoder refuses it. */
	detail[MSG_DETAIL_MAX] = 'd';
	{
		uint8_t		*b;
		size_t		 n, off;
		uint32_t	 body;

		n = MSG_HDR_LEN + 4 + 8 + 8 + 4 + 1 + 4 + 2 + 4 + 4 + MSG_DETAIL_MAX + 1;
		b = calloc(1, n);
		memcpy(b, "SOAK", 4);
		b[5] = MSG_VERSION;
		b[7] = MSG_RESULT;
		body = (uint32_t)(n - MSG_HDR_LEN);
		b[8] = body >> 24; b[9] = body >> 16; b[10] = body >> 8; b[11] = body;
		off = MSG_HDR_LEN + 4 + 8 + 8 + 4 + 1;
		b[off + 3] = 2;			/* reason "db" */
		memcpy(b + off + 4, "db", 2);
		off += 4 + 2 + 4;		/* duration */
		b[off] = (MSG_DETAIL_MAX + 1) >> 24;
		b[off + 1] = ((MSG_DETAIL_MAX + 1) >> 16) & 0xff;
		b[off + 2] = ((MSG_DETAIL_MAX + 1) >> 8) & 0xff;
		b[off + 3] = (MSG_DETAIL_MAX + 1) & 0xff;
		memset(b + off + 4, 'd', MSG_DETAIL_MAX + 1);
		assert_int_equal(msg_decode(b, n, &out, err), -1);
		assert_non_null(strstr(err, "field detail claims"));
		free(b);
	}
	free(detail);
	free(reason);
}

/*
 * BUNDLE's data is raw bytes with a cap of its own: at the cap the message
 * fits a worker's MSG_MAX; one byte more is refused by the encoder and the
 * decoder; a cut or lying length never decodes.
 */
static void
test_bundle_bytes(void **state)
{
	struct msg	 m, out;
	char		 err[ERR_LEN];
	size_t		 len, cut;
	uint8_t		*data, *buf;
	uint32_t	 body;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MSG_BUNDLE;
	m.u.bundle.hash = "h";
	data = calloc(1, MSG_BYTES_MAX + 1);
	m.u.bundle.data = data;
	m.u.bundle.len = MSG_BYTES_MAX + 1;
	assert_int_equal(msg_encode(&m, &buf, &len, err), -1);
	assert_non_null(strstr(err, "data"));
	m.u.bundle.len = MSG_BYTES_MAX;
	buf = encode(&m, &len);
	assert_int_equal(len, MSG_HDR_LEN + 4 + 1 + 4 + MSG_BYTES_MAX);
	assert_true(len <= MSG_MAX);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_int_equal(out.u.bundle.len, MSG_BYTES_MAX);
	msg_clear(&out);
	/* A length one past the cap, written by hand. */
	buf[MSG_HDR_LEN + 4 + 1 + 3] += 1;
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "field data claims"));
	free(buf);
	free(data);
	/* Small, cut at every length with the header agreeing. */
	m.u.bundle.data = (uint8_t *)"\0\1\2";
	m.u.bundle.len = 3;
	buf = encode(&m, &len);
	for (cut = MSG_HDR_LEN; cut < len; cut++) {
		body = (uint32_t)(cut - MSG_HDR_LEN);
		buf[8] = body >> 24; buf[9] = body >> 16; buf[10] = body >> 8; buf[11] = body;
		assert_int_equal(msg_decode(buf, cut, &out, err), -1);
		assert_non_null(strstr(err, "truncated"));
	}
	free(buf);
}

/*
 * A regression's lease and result (common/regress.h): the plan's name and
 * hash round-trip; the decoder refuses a name that cannot be a file of the
 * folder, a hash that is not a SHA-256, one without the other, and a
 * regression's lease of more than one seed.
 */
static void
test_plan_fields(void **state)
{
	struct msg	 m, out;
	struct msg_seed	 two[2] = { { 5, 1 }, { 6, 1 } };
	char		 err[ERR_LEN];
	size_t		 len, i;
	uint8_t		*buf;
	static const struct {
		const char	*plan, *hash, *why;
	} bad[] = {
		{ "r1", "", "plan_hash" },
		{ "", HASH_A, "plan" },
		{ "../r1", HASH_A, "regression's name" },
		{ ".hidden", HASH_A, "regression's name" },
		{ "r1", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		    "plan_hash" },
		{ "r1", "0123", "plan_hash" },
	};

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE;
	m.u.lease.lease_id = 9;
	m.u.lease.plan = UNCONST("seed-16-invariant");
	m.u.lease.plan_hash = UNCONST(HASH_A);
	m.u.lease.nseeds = 1;
	m.u.lease.seeds = two;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_string_equal(out.u.lease.plan, "seed-16-invariant");
	assert_string_equal(out.u.lease.plan_hash, HASH_A);
	assert_int_equal(out.u.lease.seeds[0].seed, 5);
	msg_clear(&out);
	free(buf);
	/* A regression's lease holds it alone. */
	m.u.lease.nseeds = 2;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), -1);
	assert_non_null(strstr(err, "one seed"));
	free(buf);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = sample_result();
		m.u.result.plan = UNCONST(bad[i].plan);
		m.u.result.plan_hash = UNCONST(bad[i].hash);
		buf = encode(&m, &len);
		assert_int_equal(msg_decode(buf, len, &out, err), -1);
		if (strstr(err, bad[i].why) == NULL)
			fail_msg("case %zu: %s", i, err);
		free(buf);
		memset(&m, 0, sizeof(m));
		m.type = MSG_LEASE;
		m.u.lease.plan = UNCONST(bad[i].plan);
		m.u.lease.plan_hash = UNCONST(bad[i].hash);
		m.u.lease.nseeds = 1;
		m.u.lease.seeds = two;
		buf = encode(&m, &len);
		assert_int_equal(msg_decode(buf, len, &out, err), -1);
		free(buf);
	}
	m = sample_result();
	m.u.result.plan = UNCONST("r1");
	m.u.result.plan_hash = UNCONST(HASH_A);
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_string_equal(out.u.result.plan, "r1");
	assert_string_equal(out.u.result.plan_hash, HASH_A);
	msg_clear(&out);
	free(buf);
}

/*
 * A minimize lease (tickets.minimize): its budget round-trips; it holds
 * exactly one seed and no regression, and the decoder holds it to that.
 */
static void
test_minimize_lease(void **state)
{
	struct msg	 m, out;
	struct msg_seed	 two[2] = { { 5, 3 }, { 6, 1 } };
	char		 err[ERR_LEN];
	size_t		 len;
	uint8_t		*buf;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE;
	m.u.lease.lease_id = 9;
	m.u.lease.minimize_ms = 300000;
	m.u.lease.nseeds = 1;
	m.u.lease.seeds = two;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_int_equal(out.u.lease.minimize_ms, 300000);
	assert_int_equal(out.u.lease.nseeds, 1);
	assert_int_equal(out.u.lease.seeds[0].seed, 5);
	assert_int_equal(out.u.lease.seeds[0].attempt, 3);
	msg_clear(&out);
	free(buf);
	/* a lease of seeds says 0 */
	m.u.lease.minimize_ms = 0;
	m.u.lease.nseeds = 2;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_int_equal(out.u.lease.minimize_ms, 0);
	msg_clear(&out);
	free(buf);
	/* two seeds, or a regression's plan: refused */
	m.u.lease.minimize_ms = 1000;
	refused(&m, "minimize lease");
	m.u.lease.nseeds = 1;
	m.u.lease.plan = UNCONST("r1");
	m.u.lease.plan_hash = UNCONST(HASH_A);
	refused(&m, "minimize lease");
}

/* An explore lease: its execution's text, one seed, nothing else. */
static void
test_explore_lease(void **state)
{
	struct msg	 m, out;
	struct msg_seed	 two[2] = { { 1, 7 }, { 2, 1 } };
	char		 err[ERR_LEN];
	size_t		 len;
	uint8_t		*buf;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MSG_LEASE;
	m.u.lease.lease_id = 3;
	m.u.lease.explore = UNCONST("{\"no\":7,\"steps\":[]}");
	m.u.lease.nseeds = 1;
	m.u.lease.seeds = two;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_string_equal(out.u.lease.explore, "{\"no\":7,\"steps\":[]}");
	assert_int_equal(out.u.lease.seeds[0].attempt, 7);
	msg_clear(&out);
	free(buf);
	/* a lease of seeds says "" */
	m.u.lease.explore = NULL;
	m.u.lease.nseeds = 2;
	buf = encode(&m, &len);
	assert_int_equal(msg_decode(buf, len, &out, err), 0);
	assert_string_equal(out.u.lease.explore, "");
	msg_clear(&out);
	free(buf);
	/* two seeds, a budget or a plan with it: refused */
	m.u.lease.explore = UNCONST("{}");
	refused(&m, "explore lease");
	m.u.lease.nseeds = 1;
	m.u.lease.minimize_ms = 5;
	refused(&m, "a budget");
	m.u.lease.minimize_ms = 0;
	m.u.lease.plan = UNCONST("r1");
	m.u.lease.plan_hash = UNCONST(HASH_A);
	refused(&m, "explore lease");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detail_cap),
		cmocka_unit_test(test_minimize_lease),
		cmocka_unit_test(test_explore_lease),
		cmocka_unit_test(test_roundtrip_all_types),
		cmocka_unit_test(test_every_truncation_rejected),
		cmocka_unit_test(test_wrong_version_magic_type_trailing),
		cmocka_unit_test(test_oversized_and_lying_lengths),
		cmocka_unit_test(test_handshake_sizes),
		cmocka_unit_test(test_garbage_never_accepted),
		cmocka_unit_test(test_bundle_bytes),
		cmocka_unit_test(test_plan_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
