/*
 * The coordinator <-> worker codec (common/msg.h) on arbitrary bytes.
 *
 * A message off the network is never trusted for a length, so decoding
 * any bytes must either fail with a sentence (and leave the message
 * cleared) or succeed; and since the format has one encoding per message
 * (exact lengths, no slack, no trailing bytes), a decoded message must
 * encode back to the very bytes it came from and decode again to an equal
 * message.  Any difference aborts.
 *
 * Under libFuzzer a custom mutator mends the header's magic, version and
 * body length after most mutations, so the fuzzer spends its time in the
 * bodies rather than rediscovering that body_len must equal what follows.
 */
#include <string.h>

#include "common/msg.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

static int
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Whether a and b, both decoded, carry the same fields. */
static int
msg_equal(const struct msg *a, const struct msg *b)
{
	uint32_t	i;

	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case MSG_HELLO:
		return str_eq(a->u.hello.name, b->u.hello.name) &&
		    str_eq(a->u.hello.host, b->u.hello.host) &&
		    a->u.hello.pid == b->u.hello.pid &&
		    a->u.hello.slots == b->u.hello.slots &&
		    memcmp(a->u.hello.nonce, b->u.hello.nonce, MSG_B32) == 0 &&
		    a->u.hello.rejoin_id == b->u.hello.rejoin_id &&
		    str_eq(a->u.hello.rejoin_run, b->u.hello.rejoin_run);
	case MSG_CHALLENGE:
		return memcmp(a->u.challenge.nonce, b->u.challenge.nonce,
		    MSG_B32) == 0 && memcmp(a->u.challenge.proof,
		    b->u.challenge.proof, MSG_B32) == 0;
	case MSG_AUTH:
		return memcmp(a->u.auth.proof, b->u.auth.proof, MSG_B32) == 0;
	case MSG_WELCOME:
		return a->u.welcome.worker_id == b->u.welcome.worker_id &&
		    str_eq(a->u.welcome.run_id, b->u.welcome.run_id) &&
		    str_eq(a->u.welcome.cfg_path, b->u.welcome.cfg_path) &&
		    str_eq(a->u.welcome.cfg_text, b->u.welcome.cfg_text) &&
		    str_eq(a->u.welcome.db_conninfo, b->u.welcome.db_conninfo) &&
		    str_eq(a->u.welcome.keep_dir, b->u.welcome.keep_dir) &&
		    str_eq(a->u.welcome.workspace, b->u.welcome.workspace) &&
		    a->u.welcome.heartbeat_ms == b->u.welcome.heartbeat_ms &&
		    str_eq(a->u.welcome.bundle_hash, b->u.welcome.bundle_hash);
	case MSG_LEASE_REQ:
		return a->u.lease_req.worker_id == b->u.lease_req.worker_id;
	case MSG_LEASE:
		if (a->u.lease.lease_id != b->u.lease.lease_id ||
		    a->u.lease.ttl_ms != b->u.lease.ttl_ms ||
		    a->u.lease.nseeds != b->u.lease.nseeds)
			return 0;
		for (i = 0; i < a->u.lease.nseeds; i++)
			if (a->u.lease.seeds[i].seed != b->u.lease.seeds[i].seed ||
			    a->u.lease.seeds[i].attempt !=
			    b->u.lease.seeds[i].attempt)
				return 0;
		return 1;
	case MSG_RESULT:
		return a->u.result.worker_id == b->u.result.worker_id &&
		    a->u.result.lease_id == b->u.result.lease_id &&
		    a->u.result.seed == b->u.result.seed &&
		    a->u.result.attempt == b->u.result.attempt &&
		    a->u.result.verdict == b->u.result.verdict &&
		    str_eq(a->u.result.reason, b->u.result.reason) &&
		    a->u.result.duration_ms == b->u.result.duration_ms &&
		    str_eq(a->u.result.detail, b->u.result.detail);
	case MSG_HEARTBEAT:
		return a->u.heartbeat.worker_id == b->u.heartbeat.worker_id &&
		    a->u.heartbeat.lease_id == b->u.heartbeat.lease_id &&
		    a->u.heartbeat.seed == b->u.heartbeat.seed;
	case MSG_ACK:
	case MSG_NACK:
	case MSG_DONE:
		return a->u.ack.ok == b->u.ack.ok &&
		    str_eq(a->u.ack.text, b->u.ack.text) &&
		    a->u.ack.keep == b->u.ack.keep;
	case MSG_BYE:
		return a->u.bye.worker_id == b->u.bye.worker_id &&
		    a->u.bye.drain == b->u.bye.drain;
	case MSG_BUNDLE_REQ:
		return a->u.bundle_req.worker_id == b->u.bundle_req.worker_id &&
		    str_eq(a->u.bundle_req.hash, b->u.bundle_req.hash);
	case MSG_BUNDLE:
		return str_eq(a->u.bundle.hash, b->u.bundle.hash) &&
		    a->u.bundle.len == b->u.bundle.len &&
		    (a->u.bundle.len == 0 || memcmp(a->u.bundle.data,
		    b->u.bundle.data, a->u.bundle.len) == 0);
	default:
		return 0;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct msg	 zero;
	struct msg		 first, again;
	char			 err[ERR_LEN] = "";
	uint8_t			*buf = NULL;
	size_t			 len = 0;

	if (msg_decode(data, size, &first, err) == -1) {
		FUZZ_CHECK(err[0] != '\0', "a refused message with no reason");
		FUZZ_CHECK(memcmp(&first, &zero, sizeof(zero)) == 0,
		    "a refused message left fields behind (%s)", err);
		return 0;
	}
	FUZZ_CHECK(strcmp(msg_type_name(first.type), "unknown") != 0,
	    "decoded type %d has no name", first.type);
	FUZZ_CHECK(msg_encode(&first, &buf, &len, err) == 0,
	    "a decoded %s message does not encode: %s",
	    msg_type_name(first.type), err);
	FUZZ_CHECK(len == size && memcmp(buf, data, size) == 0,
	    "a %s message of %zu bytes encodes back to %zu other bytes",
	    msg_type_name(first.type), size, len);
	FUZZ_CHECK(msg_decode(buf, len, &again, err) == 0,
	    "a re-encoded %s message does not decode: %s",
	    msg_type_name(first.type), err);
	FUZZ_CHECK(msg_equal(&first, &again),
	    "a %s message decodes to another message after a round trip",
	    msg_type_name(first.type));
	msg_clear(&again);
	msg_clear(&first);
	free(buf);
	return 0;
}

#ifdef SOAK_LIBFUZZER
size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
    unsigned int seed)
{
	uint32_t	body;

	size = LLVMFuzzerMutate(data, size, max_size);
	/* One mutation in eight keeps its header as it came out. */
	if (size < MSG_HDR_LEN || seed % 8 == 0)
		return size;
	memcpy(data, "SOAK", 4);
	data[4] = MSG_VERSION >> 8;
	data[5] = MSG_VERSION & 0xff;
	body = (uint32_t)(size - MSG_HDR_LEN);
	data[8] = body >> 24;
	data[9] = (body >> 16) & 0xff;
	data[10] = (body >> 8) & 0xff;
	data[11] = body & 0xff;
	return size;
}
#endif
