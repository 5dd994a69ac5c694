/*
 * The pure half of the proxy: what happens to an exchange, and how it is
 * written down.  Nothing here reads a clock or depends on arrival order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/fault.h"
#include "common/seed.h"
#include "common/trace.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"

static uint64_t
roll_key(uint64_t seed, const char *name, int turn, uint32_t conn,
    uint32_t exchange)
{
	return seed_derive(seed ^ seed_str(name), (uint64_t)(uint32_t)turn,
	    ((uint64_t)conn << 32) | exchange);
}

/* The statuses a status fault draws among when the config lists none. */
static const int default_statuses[] = { 429, 500, 529 };

/* lo..hi (hi below lo: lo) by the raw draw x, a stream of its own. */
static int64_t
in_range(uint64_t x, int64_t lo, int64_t hi)
{
	struct seed_rng	rng;

	if (hi <= lo)
		return lo;
	seed_rng_init(&rng, x);
	return lo + (int64_t)seed_rng_below(&rng, (uint64_t)(hi - lo) + 1);
}

/*
 * The roll of the stream `key` names: one draw for the band, one for the
 * latency, then one for each parameter of the HTTP API faults.
 */
static void
roll_from(const struct cfg_faults *f, uint64_t key, struct proxy_roll *out)
{
	struct seed_rng	 rng;
	const int	*st = f->nstatuses > 0 ? f->statuses : default_statuses;
	size_t		 nst = f->nstatuses > 0 ? f->nstatuses :
			    sizeof(default_statuses) / sizeof(default_statuses[0]);
	uint64_t	 d_status, d_after, d_stall;
	double		 u, edge;
	int64_t		 lo, hi;
	size_t		 i;
	/* the bands in this order, each a share of rate */
	const double	 share[] = { f->lost_reply, f->reset, f->duplicate,
			    f->status, f->stream_cut, f->stream_stall };
	static const enum proxy_fault band[] = { PROXY_FAULT_LOST_REPLY,
			    PROXY_FAULT_RESET, PROXY_FAULT_DUPLICATE,
			    PROXY_FAULT_STATUS, PROXY_FAULT_STREAM_CUT,
			    PROXY_FAULT_STREAM_STALL };

	seed_rng_init(&rng, key);
	/*
	 * Every draw is always taken, in this order, so changing one band
	 * never shifts the latency of an exchange (and vice versa), and the
	 * draws of the HTTP API faults, taken last, move nothing of a config
	 * without them.  Each parameter maps a raw draw of its own, so a
	 * range or a list changed moves no other parameter.
	 */
	u = seed_rng_unit(&rng);
	lo = f->latency_min_ms;
	hi = f->latency_max_ms > lo ? f->latency_max_ms : lo;
	out->latency_ms = lo + (int64_t)seed_rng_below(&rng,
	    (uint64_t)(hi - lo) + 1);
	d_status = seed_rng_next(&rng);
	d_after = seed_rng_next(&rng);
	d_stall = seed_rng_next(&rng);

	out->fault = PROXY_FAULT_NONE;
	out->status = 0;
	out->after = 0;
	out->stall_ms = 0;
	if (f->rate <= 0)
		return;
	/* edge by edge as they always were: rate * lost_reply, then + ... */
	edge = 0;
	for (i = 0; i < sizeof(band) / sizeof(band[0]); i++) {
		edge += f->rate * share[i];
		if (u < edge) {
			out->fault = band[i];
			break;
		}
	}
	switch (out->fault) {
	case PROXY_FAULT_STATUS:
		out->status = st[in_range(d_status, 0, (int64_t)nst - 1)];
		break;
	case PROXY_FAULT_STREAM_CUT:
		out->after = (uint32_t)in_range(d_after, f->cut_after_min > 0 ?
		    f->cut_after_min : 1, f->cut_after_max);
		break;
	case PROXY_FAULT_STREAM_STALL:
		out->after = (uint32_t)in_range(d_after, f->stall_after_min > 0 ?
		    f->stall_after_min : 1, f->stall_after_max);
		out->stall_ms = in_range(d_stall, f->stall_min_ms, f->stall_max_ms);
		break;
	default:
		break;
	}
}

void
proxy_roll(const struct cfg_faults *f, uint64_t seed, const char *name,
    int turn, uint32_t conn, uint32_t exchange, struct proxy_roll *out)
{
	roll_from(f, roll_key(seed, name, turn, conn, exchange), out);
}

void
proxy_roll_hit(const struct cfg_faults *f, uint64_t seed, const char *name,
    int turn, int round, uint64_t key, uint32_t occ, struct proxy_roll *out)
{
	/* a stream of its own beside roll_key's: "hit" salts the name's */
	roll_from(f, seed_derive(seed ^ seed_str(name) ^ 0x686974ull,
	    ((uint64_t)(uint32_t)turn << 32) | (uint32_t)round,
	    seed_derive(key, occ, 0)), out);
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

/* Appends s at *o, keeping a NUL; -1 if it does not fit. */
static int
put(char *buf, size_t len, size_t *o, const char *s)
{
	size_t	l = strlen(s);

	if (*o + l + 1 > len)
		return -1;
	memcpy(buf + *o, s, l + 1);
	*o += l;
	return 0;
}

int
proxy_trace_format(const struct proxy_trace_rec *r, char *buf, size_t len)
{
	char	tx[2] = { 0, 0 };
	size_t	o;
	int	n;

	/* proxy names are [A-Za-z0-9_]+ (config contract): no escaping needed */
	n = snprintf(buf, len, "{\"proxy\":\"%s\",\"turn\":%d,\"conn\":%" PRIu32
	    ",\"exchange\":%" PRIu32 ",\"fault\":\"%s\",\"latency_ms\":%" PRId64
	    ",\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64
	    ",\"upstream_saw\":%s,\"client_got_reply\":%s}\n",
	    r->name, r->turn, r->conn, r->exchange, fault_name((enum fault)r->fault),
	    r->latency_ms, r->bytes_up, r->bytes_down,
	    r->upstream_saw ? "true" : "false",
	    r->client_got_reply ? "true" : "false");
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (r->status != 0 || r->after != 0) {
		char	num[96];
		int	m;

		if (r->status != 0)
			m = snprintf(num, sizeof(num), ",\"status\":%d", r->status);
		else if (r->fault == PROXY_FAULT_STREAM_STALL)
			m = snprintf(num, sizeof(num), ",\"after\":%" PRIu32
			    ",\"stall_ms\":%" PRId64, r->after, r->stall_ms);
		else
			m = snprintf(num, sizeof(num), ",\"after\":%" PRIu32,
			    r->after);
		if ((size_t)n + (size_t)m >= len)
			return -1;
		memcpy(buf + n - 2, num, (size_t)m);
		memcpy(buf + n - 2 + m, "}\n", 3);
		n += m;
	}
	if (r->pg == NULL && r->step == 0 && r->deadlock == TRACE_DEADLOCK_NONE &&
	    r->wakes == 0 && r->closed == NULL && !r->keyed && r->round == 0 &&
	    r->plan == NULL && r->model == NULL && r->service == NULL &&
	    !r->served)
		return n;
	o = (size_t)n - 2;	/* over "}\n" */
	if (r->served && put(buf, len, &o, r->served_forced ?
	    ",\"served\":\"arrival\"" : ",\"served\":\"quiet\"") == -1)
		return -1;
	/* service names are [A-Za-z0-9_]+, as proxy names (config contract) */
	if (r->service != NULL && (put(buf, len, &o, ",\"service\":\"") == -1 ||
	    put(buf, len, &o, r->service) == -1 || put(buf, len, &o, "\"") == -1 ||
	    (r->bypass && put(buf, len, &o, ",\"bypass\":true") == -1)))
		return -1;
	if (r->round != 0 || r->keyed) {
		char	num[96];

		if (r->keyed)
			snprintf(num, sizeof(num), ",\"round\":%d,\"key\":\"%016"
			    PRIx64 "\",\"occ\":%" PRIu32, r->round, r->key, r->occ);
		else
			snprintf(num, sizeof(num), ",\"round\":%d", r->round);
		if (put(buf, len, &o, num) == -1)
			return -1;
		if (r->req[0] != '\0' && (put(buf, len, &o, ",\"req\":\"") == -1 ||
		    jsonstr_put(buf, len, &o, r->req) == -1 ||
		    put(buf, len, &o, "\"") == -1))
			return -1;
	}
	if (r->plan != NULL) {
		if (put(buf, len, &o, ",\"plan\":\"") == -1 ||
		    put(buf, len, &o, r->plan) == -1 || put(buf, len, &o, "\"") == -1)
			return -1;
		if (r->deferred != 0) {
			char	num[40];

			snprintf(num, sizeof(num), ",\"deferred\":%" PRIu32, r->deferred);
			if (put(buf, len, &o, num) == -1)
				return -1;
		}
	}
	if (r->model != NULL) {
		char	num[64];

		if (put(buf, len, &o, ",\"model\":\"") == -1 ||
		    jsonstr_put(buf, len, &o, r->model) == -1 ||
		    put(buf, len, &o, "\"") == -1)
			return -1;
		num[0] = '\0';
		if (r->has_alt && r->events > 0)
			snprintf(num, sizeof(num), ",\"alt\":%" PRIu32
			    ",\"events\":%" PRIu32, r->alt, r->events);
		else if (r->has_alt)
			snprintf(num, sizeof(num), ",\"alt\":%" PRIu32, r->alt);
		if (put(buf, len, &o, num) == -1)
			return -1;
	}
	if (r->step != 0) {
		char	num[64];

		snprintf(num, sizeof(num), ",\"step\":%" PRIu32 ",\"cand\":\"%"
		    PRIx64 "\"", r->step, r->cand);
		if (put(buf, len, &o, num) == -1)
			return -1;
		/* a turn of several connections at once (gate.h "Actors") */
		if (r->lane > 0) {
			snprintf(num, sizeof(num), ",\"lane\":%d", r->lane);
			if (put(buf, len, &o, num) == -1)
				return -1;
		}
		if (r->acand != 0 || r->acand_cut) {
			snprintf(num, sizeof(num), ",\"acand\":\"%" PRIx64 "\"%s",
			    r->acand, r->acand_cut ? ",\"acand_cut\":true" : "");
			if (put(buf, len, &o, num) == -1)
				return -1;
		}
		if (r->lane_tie && put(buf, len, &o, ",\"lane_tie\":true") == -1)
			return -1;
		if (r->cls != NULL && (put(buf, len, &o, ",\"cls\":\"") == -1 ||
		    put(buf, len, &o, r->cls) == -1 || put(buf, len, &o, "\"") == -1))
			return -1;
		if (r->forced != NULL && (put(buf, len, &o, ",\"forced\":\"") == -1 ||
		    put(buf, len, &o, r->forced) == -1 || put(buf, len, &o, "\"") == -1))
			return -1;
		if (r->forced != NULL && r->idle != 0) {
			snprintf(num, sizeof(num), ",\"idle\":\"%" PRIx64 "\"",
			    r->idle);
			if (put(buf, len, &o, num) == -1)
				return -1;
		}
		if (r->lock_wait) {
			snprintf(num, sizeof(num), ",\"waits_on\":\"%" PRIx64 "\"",
			    r->waits_on);
			if (put(buf, len, &o, num) == -1)
				return -1;
		}
		if (r->overlap && put(buf, len, &o, ",\"overlap\":true") == -1)
			return -1;
	}
	if (r->deadlock != TRACE_DEADLOCK_NONE && (put(buf, len, &o,
	    ",\"deadlock\":\"") == -1 || put(buf, len, &o,
	    trace_deadlock_name(r->deadlock)) == -1 || put(buf, len, &o, "\"") == -1))
		return -1;
	if (r->wakes != 0) {
		char	num[40];

		snprintf(num, sizeof(num), ",\"wakes\":\"%" PRIx64 "\"", r->wakes);
		if (put(buf, len, &o, num) == -1)
			return -1;
	}
	if (r->pg == NULL)
		goto end;
	if (put(buf, len, &o, ",\"pg\":\"") == -1 ||
	    put(buf, len, &o, r->pg) == -1 || put(buf, len, &o, "\"") == -1)
		return -1;
	if (r->sql[0] != '\0' && (put(buf, len, &o, ",\"sql\":\"") == -1 ||
	    jsonstr_put(buf, len, &o, r->sql) == -1 || put(buf, len, &o, "\"") == -1))
		return -1;
	if (r->tx != '\0') {
		tx[0] = r->tx >= 'A' && r->tx <= 'Z' ? r->tx : '?';
		if (put(buf, len, &o, ",\"tx\":\"") == -1 ||
		    put(buf, len, &o, tx) == -1 || put(buf, len, &o, "\"") == -1)
			return -1;
	}
	if (r->note != NULL && (put(buf, len, &o, ",\"note\":\"") == -1 ||
	    put(buf, len, &o, r->note) == -1 || put(buf, len, &o, "\"") == -1))
		return -1;
end:
	if (r->closed != NULL && (put(buf, len, &o, ",\"closed\":\"") == -1 ||
	    put(buf, len, &o, r->closed) == -1 || put(buf, len, &o, "\"") == -1))
		return -1;
	if (put(buf, len, &o, "}\n") == -1)
		return -1;
	return (int)o;
}
