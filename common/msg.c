#include "common/msg.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static const char *const type_names[MSG_TYPE_MAX] = {
	[MSG_HELLO] = "hello", [MSG_WELCOME] = "welcome",
	[MSG_LEASE_REQ] = "lease-request", [MSG_LEASE] = "lease",
	[MSG_DONE] = "done", [MSG_RESULT] = "result",
	[MSG_HEARTBEAT] = "heartbeat", [MSG_ACK] = "ack", [MSG_NACK] = "nack",
	[MSG_BYE] = "bye", [MSG_CHALLENGE] = "challenge", [MSG_AUTH] = "auth",
	[MSG_BUNDLE_REQ] = "bundle-request", [MSG_BUNDLE] = "bundle",
};

const char *
msg_type_name(int type)
{
	if (type <= 0 || type >= MSG_TYPE_MAX)
		return "unknown";
	return type_names[type];
}

const char *
msg_verdict_name(int verdict)
{
	switch (verdict) {
	case VERDICT_PASS:	return "pass";
	case VERDICT_FAIL:	return "fail";
	case VERDICT_INFRA:	return "infra";
	}
	return "unknown";
}

/*
 * Encoding and decoding walk the same field list, so one table of "what a
 * type carries" (the two switch statements below) is the whole format.
 */
struct wbuf {
	uint8_t	*p;
	size_t	 len, cap;
	int	 failed;
	char	*err;
};

static void
w_grow(struct wbuf *w, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > MSG_MAX) {
		w->failed = 1;
		errf(w->err, "message larger than %u bytes", MSG_MAX);
		return;
	}
	if (w->len + n <= w->cap)
		return;
	while (w->cap < w->len + n)
		w->cap = w->cap ? w->cap * 2 : 256;
	w->p = xreallocarray(w->p, w->cap, 1);
}

static void
w_u8(struct wbuf *w, uint8_t v)
{
	w_grow(w, 1);
	if (!w->failed)
		w->p[w->len++] = v;
}

static void
w_u16(struct wbuf *w, uint16_t v)
{
	w_u8(w, v >> 8);
	w_u8(w, v & 0xff);
}

static void
w_u32(struct wbuf *w, uint32_t v)
{
	w_u16(w, v >> 16);
	w_u16(w, v & 0xffff);
}

static void
w_u64(struct wbuf *w, uint64_t v)
{
	w_u32(w, v >> 32);
	w_u32(w, v & 0xffffffffu);
}

static void
w_b32(struct wbuf *w, const uint8_t b[MSG_B32])
{
	w_grow(w, MSG_B32);
	if (!w->failed) {
		memcpy(w->p + w->len, b, MSG_B32);
		w->len += MSG_B32;
	}
}

static void
w_str(struct wbuf *w, const char *s, size_t cap, const char *field)
{
	size_t	n = s ? strlen(s) : 0;

	if (w->failed)
		return;
	if (n > cap) {
		w->failed = 1;
		errf(w->err, "field %s is %zu bytes, more than %zu", field, n, cap);
		return;
	}
	w_u32(w, (uint32_t)n);
	w_grow(w, n);
	if (!w->failed && n > 0) {
		memcpy(w->p + w->len, s, n);
		w->len += n;
	}
}

static void
w_bytes(struct wbuf *w, const uint8_t *p, size_t n, size_t cap, const char *field)
{
	if (w->failed)
		return;
	if (n > cap) {
		w->failed = 1;
		errf(w->err, "field %s is %zu bytes, more than %zu", field, n, cap);
		return;
	}
	w_u32(w, (uint32_t)n);
	w_grow(w, n);
	if (!w->failed && n > 0) {
		memcpy(w->p + w->len, p, n);
		w->len += n;
	}
}

int
msg_encode(const struct msg *m, uint8_t **buf, size_t *len, char *err)
{
	struct wbuf	w = { .err = err };
	uint32_t	i;

	if (m->type <= 0 || m->type >= MSG_TYPE_MAX)
		return errf(err, "cannot encode message type %d", m->type);
	w_grow(&w, MSG_HDR_LEN);
	memcpy(w.p, "SOAK", 4);
	w.len = 4;
	w_u16(&w, MSG_VERSION);
	w_u16(&w, (uint16_t)m->type);
	w_u32(&w, 0);			/* body length, patched below */

	switch (m->type) {
	case MSG_HELLO:
		w_str(&w, m->u.hello.name, MSG_STR_SHORT, "name");
		w_str(&w, m->u.hello.host, MSG_STR_SHORT, "host");
		w_u32(&w, m->u.hello.pid);
		w_u32(&w, m->u.hello.slots);
		w_b32(&w, m->u.hello.nonce);
		w_u32(&w, m->u.hello.rejoin_id);
		w_str(&w, m->u.hello.rejoin_run, MSG_STR_SHORT, "rejoin_run");
		break;
	case MSG_CHALLENGE:
		w_b32(&w, m->u.challenge.nonce);
		w_b32(&w, m->u.challenge.proof);
		break;
	case MSG_AUTH:
		w_b32(&w, m->u.auth.proof);
		break;
	case MSG_WELCOME:
		w_u32(&w, m->u.welcome.worker_id);
		w_str(&w, m->u.welcome.run_id, MSG_STR_SHORT, "run_id");
		w_str(&w, m->u.welcome.cfg_path, MSG_STR_SHORT, "cfg_path");
		w_str(&w, m->u.welcome.cfg_text, MSG_STR_LONG, "cfg_text");
		w_str(&w, m->u.welcome.db_conninfo, MSG_STR_SHORT, "db_conninfo");
		w_str(&w, m->u.welcome.keep_dir, MSG_STR_SHORT, "keep_dir");
		w_str(&w, m->u.welcome.workspace, MSG_STR_SHORT, "workspace");
		w_u32(&w, m->u.welcome.heartbeat_ms);
		w_str(&w, m->u.welcome.bundle_hash, MSG_STR_SHORT, "bundle_hash");
		break;
	case MSG_LEASE_REQ:
		w_u32(&w, m->u.lease_req.worker_id);
		break;
	case MSG_LEASE:
		if (m->u.lease.nseeds > MSG_MAX_SEEDS) {
			free(w.p);
			return errf(err, "lease of %u seeds exceeds %u",
			    m->u.lease.nseeds, MSG_MAX_SEEDS);
		}
		w_u64(&w, m->u.lease.lease_id);
		w_u32(&w, m->u.lease.ttl_ms);
		w_str(&w, m->u.lease.plan, MSG_PLAN_MAX, "plan");
		w_str(&w, m->u.lease.plan_hash, MSG_PLAN_HASH_MAX, "plan_hash");
		w_u32(&w, m->u.lease.minimize_ms);
		w_str(&w, m->u.lease.explore, MSG_STR_LONG, "explore");
		w_u32(&w, m->u.lease.nseeds);
		for (i = 0; i < m->u.lease.nseeds; i++) {
			w_u64(&w, m->u.lease.seeds[i].seed);
			w_u32(&w, m->u.lease.seeds[i].attempt);
		}
		break;
	case MSG_RESULT:
		w_u32(&w, m->u.result.worker_id);
		w_u64(&w, m->u.result.lease_id);
		w_u64(&w, m->u.result.seed);
		w_u32(&w, m->u.result.attempt);
		w_u8(&w, m->u.result.verdict);
		w_str(&w, m->u.result.reason, MSG_STR_SHORT, "reason");
		w_u32(&w, m->u.result.duration_ms);
		w_str(&w, m->u.result.detail, MSG_DETAIL_MAX, "detail");
		w_str(&w, m->u.result.plan, MSG_PLAN_MAX, "plan");
		w_str(&w, m->u.result.plan_hash, MSG_PLAN_HASH_MAX, "plan_hash");
		break;
	case MSG_HEARTBEAT:
		w_u32(&w, m->u.heartbeat.worker_id);
		w_u64(&w, m->u.heartbeat.lease_id);
		w_u64(&w, m->u.heartbeat.seed);
		break;
	case MSG_ACK:
	case MSG_NACK:
	case MSG_DONE:
		w_u8(&w, m->u.ack.ok);
		w_str(&w, m->u.ack.text, MSG_STR_SHORT, "text");
		w_u32(&w, m->u.ack.keep);
		break;
	case MSG_BYE:
		w_u32(&w, m->u.bye.worker_id);
		w_u8(&w, m->u.bye.drain);
		break;
	case MSG_BUNDLE_REQ:
		w_u32(&w, m->u.bundle_req.worker_id);
		w_str(&w, m->u.bundle_req.hash, MSG_STR_SHORT, "hash");
		break;
	case MSG_BUNDLE:
		w_str(&w, m->u.bundle.hash, MSG_STR_SHORT, "hash");
		w_bytes(&w, m->u.bundle.data, m->u.bundle.len, MSG_BYTES_MAX, "data");
		break;
	default:
		break;
	}
	if (w.failed) {
		free(w.p);
		return -1;
	}
	{
		uint32_t	body = (uint32_t)(w.len - MSG_HDR_LEN);

		put_be32(w.p + 8, body);
	}
	*buf = w.p;
	*len = w.len;
	return 0;
}

struct rbuf {
	const uint8_t	*p;
	size_t		 len, off;
	int		 failed;
	char		*err;
	const char	*type;
};

static int
r_need(struct rbuf *r, size_t n, const char *field)
{
	if (r->failed)
		return -1;
	if (n > r->len - r->off) {
		r->failed = 1;
		errf(r->err, "%s message truncated in field %s", r->type, field);
		return -1;
	}
	return 0;
}

static uint64_t
r_uint(struct rbuf *r, size_t n, const char *field)
{
	uint64_t	v = 0;
	size_t		i;

	if (r_need(r, n, field) == -1)
		return 0;
	for (i = 0; i < n; i++)
		v = (v << 8) | r->p[r->off++];
	return v;
}

#define r_u8(r, f)	((uint8_t)r_uint((r), 1, (f)))
#define r_u32(r, f)	((uint32_t)r_uint((r), 4, (f)))
#define r_u64(r, f)	(r_uint((r), 8, (f)))

static void
r_b32(struct rbuf *r, uint8_t b[MSG_B32], const char *field)
{
	if (r_need(r, MSG_B32, field) == -1)
		return;
	memcpy(b, r->p + r->off, MSG_B32);
	r->off += MSG_B32;
}

static char *
r_str(struct rbuf *r, size_t cap, const char *field)
{
	uint32_t	 n = r_u32(r, field);
	char		*s;

	if (r->failed)
		return NULL;
	if (n > cap) {
		r->failed = 1;
		errf(r->err, "%s message: field %s claims %u bytes, more than %zu",
		    r->type, field, n, cap);
		return NULL;
	}
	if (r_need(r, n, field) == -1)
		return NULL;
	if (memchr(r->p + r->off, '\0', n) != NULL) {
		r->failed = 1;
		errf(r->err, "%s message: field %s contains a NUL byte", r->type, field);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (s == NULL)
		abort();
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	r->off += n;
	return s;
}

/* Raw bytes, NULs allowed; *n their count.  A fresh buffer even for 0. */
static uint8_t *
r_bytes(struct rbuf *r, size_t cap, const char *field, uint32_t *n)
{
	uint32_t	 len = r_u32(r, field);
	uint8_t		*p;

	*n = 0;
	if (r->failed)
		return NULL;
	if (len > cap) {
		r->failed = 1;
		errf(r->err, "%s message: field %s claims %u bytes, more than %zu",
		    r->type, field, len, cap);
		return NULL;
	}
	if (r_need(r, len, field) == -1)
		return NULL;
	p = xcalloc(1, len ? len : 1);
	memcpy(p, r->p + r->off, len);
	r->off += len;
	*n = len;
	return p;
}

/*
 * A lease's or result's regression (name, hash): both "" (seeds), or a
 * file name of the regressions folder and 64 lower-case hex digits.
 */
static int
plan_check(struct rbuf *r, const char *plan, const char *hash)
{
	size_t	i, n;

	if (r->failed)
		return -1;
	if (*plan == '\0' && *hash == '\0')
		return 0;
	if (*plan == '\0' || *plan == '.' || strchr(plan, '/') != NULL ||
	    strlen(plan) > MSG_PLAN_MAX) {
		r->failed = 1;
		return errf(r->err, "%s message: plan \"%.64s\" is not a regression's "
		    "name", r->type, plan);
	}
	n = strlen(hash);
	for (i = 0; i < n; i++)
		if (!((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' &&
		    hash[i] <= 'f')))
			break;
	if (n != 64 || i != n) {
		r->failed = 1;
		return errf(r->err, "%s message: plan_hash is not 64 lower-case hex "
		    "digits (a SHA-256)", r->type);
	}
	return 0;
}

/* The header: -1 with err unless it is a soak message of this version
 * whose body is the rest of buf; else its type in *type. */
static int
decode_header(const uint8_t *p, size_t len, uint32_t *type, char *err)
{
	uint32_t	version, body;

	if (len < MSG_HDR_LEN)
		return errf(err, "message of %zu bytes is shorter than its header", len);
	if (len > MSG_MAX)
		return errf(err, "message of %zu bytes exceeds %u", len, MSG_MAX);
	if (memcmp(p, "SOAK", 4) != 0)
		return errf(err, "not a soak message (bad magic)");
	version = (uint32_t)p[4] << 8 | p[5];
	*type = (uint32_t)p[6] << 8 | p[7];
	body = get_be32(p + 8);
	if (version != MSG_VERSION)
		return errf(err, "protocol version %u, this soak speaks %u "
		    "(run the same soak version on coordinator and workers)",
		    version, MSG_VERSION);
	if (*type == 0 || *type >= MSG_TYPE_MAX)
		return errf(err, "unknown message type %u", *type);
	if (body != len - MSG_HDR_LEN)
		return errf(err, "%s message: header says %u body bytes, %zu arrived",
		    msg_type_name(*type), body, len - MSG_HDR_LEN);
	return 0;
}

/* LEASE's seeds: as many as it says, and exactly what is left. */
static void
decode_lease(struct rbuf *r, struct msg *m)
{
	uint32_t	i;

	m->u.lease.lease_id = r_u64(r, "lease_id");
	m->u.lease.ttl_ms = r_u32(r, "ttl_ms");
	m->u.lease.plan = r_str(r, MSG_PLAN_MAX, "plan");
	m->u.lease.plan_hash = r_str(r, MSG_PLAN_HASH_MAX, "plan_hash");
	if (plan_check(r, m->u.lease.plan, m->u.lease.plan_hash) == -1)
		return;
	m->u.lease.minimize_ms = r_u32(r, "minimize_ms");
	m->u.lease.explore = r_str(r, MSG_STR_LONG, "explore");
	m->u.lease.nseeds = r_u32(r, "nseeds");
	if (!r->failed && m->u.lease.explore != NULL && *m->u.lease.explore != '\0' &&
	    (*m->u.lease.plan != '\0' || m->u.lease.minimize_ms != 0 ||
	    m->u.lease.nseeds != 1)) {
		r->failed = 1;
		errf(r->err, "lease message: an explore lease holds one seed, no plan "
		    "and no minimize budget, not %u seed(s)%s%s", m->u.lease.nseeds,
		    *m->u.lease.plan != '\0' ? ", a plan" : "",
		    m->u.lease.minimize_ms != 0 ? ", a budget" : "");
		m->u.lease.nseeds = 0;
		return;
	}
	if (!r->failed && m->u.lease.minimize_ms != 0 &&
	    (*m->u.lease.plan != '\0' || m->u.lease.nseeds != 1)) {
		r->failed = 1;
		errf(r->err, "lease message: a minimize lease holds one seed and no "
		    "plan, not %u seed(s)%s", m->u.lease.nseeds,
		    *m->u.lease.plan != '\0' ? " and a plan" : "");
		m->u.lease.nseeds = 0;
		return;
	}
	if (!r->failed && *m->u.lease.plan != '\0' && m->u.lease.nseeds != 1) {
		r->failed = 1;
		errf(r->err, "lease message: a regression's lease holds one "
		    "seed, not %u", m->u.lease.nseeds);
		m->u.lease.nseeds = 0;
		return;
	}
	if (r->failed)
		return;
	if (m->u.lease.nseeds > MSG_MAX_SEEDS ||
	    (size_t)m->u.lease.nseeds * 12 != r->len - r->off) {
		r->failed = 1;
		errf(r->err, "lease message: %u seeds do not match %zu bytes",
		    m->u.lease.nseeds, r->len - r->off);
		m->u.lease.nseeds = 0;
		return;
	}
	m->u.lease.seeds = xcalloc(m->u.lease.nseeds, sizeof(struct msg_seed));
	for (i = 0; i < m->u.lease.nseeds; i++) {
		m->u.lease.seeds[i].seed = r_u64(r, "seed");
		m->u.lease.seeds[i].attempt = r_u32(r, "attempt");
	}
}

static void
decode_result(struct rbuf *r, struct msg *m)
{
	m->u.result.worker_id = r_u32(r, "worker_id");
	m->u.result.lease_id = r_u64(r, "lease_id");
	m->u.result.seed = r_u64(r, "seed");
	m->u.result.attempt = r_u32(r, "attempt");
	m->u.result.verdict = r_u8(r, "verdict");
	m->u.result.reason = r_str(r, MSG_STR_SHORT, "reason");
	m->u.result.duration_ms = r_u32(r, "duration_ms");
	m->u.result.detail = r_str(r, MSG_DETAIL_MAX, "detail");
	m->u.result.plan = r_str(r, MSG_PLAN_MAX, "plan");
	m->u.result.plan_hash = r_str(r, MSG_PLAN_HASH_MAX, "plan_hash");
	if (plan_check(r, m->u.result.plan, m->u.result.plan_hash) == -1)
		return;
	if (!r->failed && m->u.result.verdict > VERDICT_INFRA) {
		r->failed = 1;
		errf(r->err, "result message: verdict %u is not pass, fail or infra",
		    m->u.result.verdict);
	}
}

/* The body's fields, in the order of its type (msg.h). */
static void
decode_body(struct rbuf *r, struct msg *m)
{
	switch (m->type) {
	case MSG_HELLO:
		m->u.hello.name = r_str(r, MSG_STR_SHORT, "name");
		m->u.hello.host = r_str(r, MSG_STR_SHORT, "host");
		m->u.hello.pid = r_u32(r, "pid");
		m->u.hello.slots = r_u32(r, "slots");
		r_b32(r, m->u.hello.nonce, "nonce");
		m->u.hello.rejoin_id = r_u32(r, "rejoin_id");
		m->u.hello.rejoin_run = r_str(r, MSG_STR_SHORT, "rejoin_run");
		break;
	case MSG_CHALLENGE:
		r_b32(r, m->u.challenge.nonce, "nonce");
		r_b32(r, m->u.challenge.proof, "proof");
		break;
	case MSG_AUTH:
		r_b32(r, m->u.auth.proof, "proof");
		break;
	case MSG_WELCOME:
		m->u.welcome.worker_id = r_u32(r, "worker_id");
		m->u.welcome.run_id = r_str(r, MSG_STR_SHORT, "run_id");
		m->u.welcome.cfg_path = r_str(r, MSG_STR_SHORT, "cfg_path");
		m->u.welcome.cfg_text = r_str(r, MSG_STR_LONG, "cfg_text");
		m->u.welcome.db_conninfo = r_str(r, MSG_STR_SHORT, "db_conninfo");
		m->u.welcome.keep_dir = r_str(r, MSG_STR_SHORT, "keep_dir");
		m->u.welcome.workspace = r_str(r, MSG_STR_SHORT, "workspace");
		m->u.welcome.heartbeat_ms = r_u32(r, "heartbeat_ms");
		m->u.welcome.bundle_hash = r_str(r, MSG_STR_SHORT, "bundle_hash");
		break;
	case MSG_LEASE_REQ:
		m->u.lease_req.worker_id = r_u32(r, "worker_id");
		break;
	case MSG_LEASE:
		decode_lease(r, m);
		break;
	case MSG_RESULT:
		decode_result(r, m);
		break;
	case MSG_HEARTBEAT:
		m->u.heartbeat.worker_id = r_u32(r, "worker_id");
		m->u.heartbeat.lease_id = r_u64(r, "lease_id");
		m->u.heartbeat.seed = r_u64(r, "seed");
		break;
	case MSG_ACK:
	case MSG_NACK:
	case MSG_DONE:
		m->u.ack.ok = r_u8(r, "ok");
		m->u.ack.text = r_str(r, MSG_STR_SHORT, "text");
		m->u.ack.keep = r_u32(r, "keep");
		break;
	case MSG_BYE:
		m->u.bye.worker_id = r_u32(r, "worker_id");
		m->u.bye.drain = r_u8(r, "drain");
		break;
	case MSG_BUNDLE_REQ:
		m->u.bundle_req.worker_id = r_u32(r, "worker_id");
		m->u.bundle_req.hash = r_str(r, MSG_STR_SHORT, "hash");
		break;
	case MSG_BUNDLE:
		m->u.bundle.hash = r_str(r, MSG_STR_SHORT, "hash");
		m->u.bundle.data = r_bytes(r, MSG_BYTES_MAX, "data", &m->u.bundle.len);
		break;
	case MSG_TYPE_MAX:
		break;		/* refused by decode_header */
	}
}

int
msg_decode(const void *buf, size_t len, struct msg *m, char *err)
{
	struct rbuf	r;
	uint32_t	type = 0;

	memset(m, 0, sizeof(*m));
	if (decode_header(buf, len, &type, err) == -1)
		return -1;
	r = (struct rbuf){ .p = buf, .len = len, .off = MSG_HDR_LEN, .err = err,
	    .type = msg_type_name(type) };
	m->type = type;
	decode_body(&r, m);
	if (!r.failed && r.off != r.len) {
		r.failed = 1;
		errf(err, "%s message has %zu trailing bytes", msg_type_name(type),
		    r.len - r.off);
	}
	if (r.failed) {
		msg_clear(m);
		return -1;
	}
	return 0;
}

void
msg_clear(struct msg *m)
{
	if (m == NULL)
		return;
	switch (m->type) {
	case MSG_HELLO:
		free(m->u.hello.name);
		free(m->u.hello.host);
		free(m->u.hello.rejoin_run);
		break;
	case MSG_WELCOME:
		free(m->u.welcome.run_id);
		free(m->u.welcome.cfg_path);
		free(m->u.welcome.cfg_text);
		free(m->u.welcome.db_conninfo);
		free(m->u.welcome.keep_dir);
		free(m->u.welcome.workspace);
		free(m->u.welcome.bundle_hash);
		break;
	case MSG_BUNDLE_REQ:
		free(m->u.bundle_req.hash);
		break;
	case MSG_BUNDLE:
		free(m->u.bundle.hash);
		free(m->u.bundle.data);
		break;
	case MSG_LEASE:
		free(m->u.lease.seeds);
		free(m->u.lease.plan);
		free(m->u.lease.plan_hash);
		free(m->u.lease.explore);
		break;
	case MSG_RESULT:
		free(m->u.result.plan);
		free(m->u.result.plan_hash);
		free(m->u.result.reason);
		free(m->u.result.detail);
		break;
	case MSG_ACK:
	case MSG_NACK:
	case MSG_DONE:
		free(m->u.ack.text);
		break;
	default:
		break;
	}
	memset(m, 0, sizeof(*m));
}
