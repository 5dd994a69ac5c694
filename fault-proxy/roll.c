/*
 * The pure half of the proxy: what happens to an exchange, and how it is
 * written down.  Nothing here reads a clock or depends on arrival order.
 */
#include <inttypes.h>
#include <stdio.h>

#include "common/seed.h"
#include "fault-proxy/proxy.h"

static const char *const fault_names[PROXY_FAULT_MAX] = {
	[PROXY_FAULT_NONE] = "none",
	[PROXY_FAULT_LOST_REPLY] = "lost_reply",
	[PROXY_FAULT_RESET] = "reset",
	[PROXY_FAULT_DUPLICATE] = "duplicate",
	[PROXY_FAULT_BLACKHOLE] = "blackhole",
	[PROXY_FAULT_CLOSE_AFTER] = "close_after",
};

const char *
proxy_fault_name(enum proxy_fault f)
{
	if ((unsigned)f >= PROXY_FAULT_MAX)
		return "?";
	return fault_names[f];
}

static uint64_t
roll_key(uint64_t seed, const char *name, int turn, uint32_t conn,
    uint32_t exchange)
{
	return seed_derive(seed ^ seed_str(name), (uint64_t)(uint32_t)turn,
	    ((uint64_t)conn << 32) | exchange);
}

void
proxy_roll(const struct cfg_faults *f, uint64_t seed, const char *name,
    int turn, uint32_t conn, uint32_t exchange, struct proxy_roll *out)
{
	struct seed_rng	 rng;
	double		 u, edge;
	int64_t		 lo, hi;

	seed_rng_init(&rng, roll_key(seed, name, turn, conn, exchange));
	/*
	 * Both draws are always taken, in this order, so changing one band
	 * never shifts the latency of an exchange (and vice versa).
	 */
	u = seed_rng_unit(&rng);
	lo = f->latency_min_ms;
	hi = f->latency_max_ms > lo ? f->latency_max_ms : lo;
	out->latency_ms = lo + (int64_t)seed_rng_below(&rng,
	    (uint64_t)(hi - lo) + 1);

	out->fault = PROXY_FAULT_NONE;
	if (f->rate <= 0)
		return;
	edge = f->rate * f->lost_reply;
	if (u < edge) {
		out->fault = PROXY_FAULT_LOST_REPLY;
		return;
	}
	edge += f->rate * f->reset;
	if (u < edge) {
		out->fault = PROXY_FAULT_RESET;
		return;
	}
	edge += f->rate * f->duplicate;
	if (u < edge)
		out->fault = PROXY_FAULT_DUPLICATE;
}

bool
proxy_roll_blackhole(const struct cfg_faults *f, uint64_t seed,
    const char *name, int turn, uint32_t conn)
{
	struct seed_rng	 rng;

	if (f->blackhole <= 0)
		return false;
	seed_rng_init(&rng, roll_key(seed, name, turn, conn, UINT32_MAX));
	return seed_rng_unit(&rng) < f->blackhole;
}

int
proxy_trace_format(const struct proxy_trace_rec *r, char *buf, size_t len)
{
	int	n;

	/* proxy names are [A-Za-z0-9_]+ (config contract): no escaping needed */
	n = snprintf(buf, len, "{\"proxy\":\"%s\",\"turn\":%d,\"conn\":%" PRIu32
	    ",\"exchange\":%" PRIu32 ",\"fault\":\"%s\",\"latency_ms\":%" PRId64
	    ",\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64
	    ",\"upstream_saw\":%s,\"client_got_reply\":%s}\n",
	    r->name, r->turn, r->conn, r->exchange, proxy_fault_name(r->fault),
	    r->latency_ms, r->bytes_up, r->bytes_down,
	    r->upstream_saw ? "true" : "false",
	    r->client_got_reply ? "true" : "false");
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n;
}
