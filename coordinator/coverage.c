/*
 * A run's coverage, summed seed by seed (the contract is in coverage.h).
 * Costs: each seed adds O(proxies + invariants + kinds), and the steps a
 * seed took go into a histogram sorted by value (O(distinct values) to
 * insert), which stays small: a config's seeds take a narrow range of
 * steps.
 */
#include "coordinator/coverage.h"

#include <ctype.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/trace.h"
#include "common/util.h"

/* How many seeds took each number of steps. */
struct hist {
	uint64_t	 value, count;
};

struct cov_px {
	const struct cfg_proxy	*p;
	uint64_t		 exchanges, connections, steps, lock_waits;
	uint64_t		 seeds_used;	/* seeds with an exchange */
	json_t			*faults, *forced, *deadlocks;	/* {"kind": sum} */
	/* per turn ("3"): the arrival decisions that went without it, and
	 * the seeds in which one did */
	json_t			*idle_dec, *idle_seeds;
	/* per service ("tools"): its exchanges that passed the schedule
	 * unheld (the trace's bypass), and the seeds with one */
	json_t			*byp_n, *byp_seeds;
	/* steps that held a request to its reply while another turn's
	 * waited (the trace's serialized), and the seeds with one */
	uint64_t		 serialized, ser_seeds;
	uint64_t		 nostep_seeds;	/* scheduled: seeds that ran
						   without a step of it */
	struct hist		*h;		/* seeds with a step, by value */
	size_t			 nh;
	uint64_t		 hseeds;
};

struct cov {
	const struct cfg	*cfg;
	uint64_t		 seeds, forced, forced_seeds;
	/* seeds whose trace their worker could not read (its "unread"):
	 * counted in seeds, never as seeds without exchanges */
	uint64_t		 unread;
	struct cov_px		*px;		/* config order */
	uint64_t		*inv_checked, *inv_broken;
	/* what the schedules waited for their actors (cov_add_waits): the
	 * sum, the steps, the seeds with a schedule and their durations, the
	 * slowest step and its seed */
	uint64_t		 wait_ms, wait_steps, wait_seeds, wait_dur_ms;
	bool			 has_slow;
	uint64_t		 slow_seed;
	struct cov_waits	 slow;
};

/*
 * The kinds every report names, zeros included, in this order: the fault
 * kinds but none (common/fault.h), then "latency", the exchanges delayed
 * whatever their fault (fault-proxy/proxy.h proxy_cov_json); the
 * decisions left to a timeout; the deadlocks' victims by who broke them
 * (common/trace.h).
 */
#define COV_LATENCY	"latency"
static const char *const forced_kinds[] = { "arrival", "blocked" };
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

static json_t *
kinds_new(const char *const *k, size_t n)
{
	json_t	*o = json_object();
	size_t	 i;

	for (i = 0; i < n; i++)
		json_object_set_new(o, k[i], json_integer(0));
	return o;
}

static json_t *
fault_kinds_new(void)
{
	json_t		*o = json_object();
	unsigned	 k;

	for (k = FAULT_NONE + 1; k < FAULT_MAX; k++)
		json_object_set_new(o, fault_name((enum fault)k), json_integer(0));
	json_object_set_new(o, COV_LATENCY, json_integer(0));
	return o;
}

static json_t *
deadlock_kinds_new(void)
{
	json_t		*o = json_object();
	unsigned	 k;

	for (k = TRACE_DEADLOCK_NONE + 1; k < TRACE_DEADLOCK_MAX; k++)
		json_object_set_new(o, trace_deadlock_name((enum trace_deadlock)k),
		    json_integer(0));
	return o;
}

/* Whether cfg has a service of that name (a count off the wire names one). */
static bool
cfg_service_named(const struct cfg *cfg, const char *name)
{
	size_t	i;

	for (i = 0; i < cfg->nservices; i++)
		if (strcmp(cfg->services[i].name, name) == 0)
			return true;
	return false;
}

/* A count off the wire: an authenticated worker's, but never negative. */
static uint64_t
count_of(const json_t *v)
{
	json_int_t	n = json_integer_value(v);

	return n > 0 ? (uint64_t)n : 0;
}

/* The seeds whose proxies' counts are in the sums: those traced. */
static uint64_t
traced(const struct cov *c)
{
	return c->seeds - c->unread;
}

static uint64_t
kind_get(const json_t *o, const char *kind)
{
	return count_of(json_object_get(o, kind));
}

static void
kind_add(json_t *o, const char *kind, uint64_t n)
{
	json_object_set_new(o, kind, json_integer((json_int_t)(kind_get(o, kind) + n)));
}

/* Adds every kind of from (a seed's {"kind": n}) into to; returns the sum. */
static uint64_t
kinds_add(json_t *to, const json_t *from)
{
	const char	*k;
	json_t		*v;
	uint64_t	 sum = 0;

	json_object_foreach(UNCONST(from), k, v) {
		kind_add(to, k, count_of(v));
		sum += count_of(v);
	}
	return sum;
}

static uint64_t
kinds_sum(const json_t *o)
{
	const char	*k;
	json_t		*v;
	uint64_t	 sum = 0;

	json_object_foreach(UNCONST(o), k, v)
		sum += count_of(v);
	return sum;
}

struct cov *
cov_new(const struct cfg *cfg)
{
	struct cov	*c = xcalloc(1, sizeof(*c));
	size_t		 i;

	c->cfg = cfg;
	c->px = xcalloc(cfg->nproxies + 1, sizeof(*c->px));
	for (i = 0; i < cfg->nproxies; i++) {
		c->px[i].p = &cfg->proxies[i];
		c->px[i].faults = fault_kinds_new();
		c->px[i].forced = kinds_new(forced_kinds, NELEM(forced_kinds));
		c->px[i].deadlocks = deadlock_kinds_new();
		c->px[i].idle_dec = json_object();
		c->px[i].idle_seeds = json_object();
		c->px[i].byp_n = json_object();
		c->px[i].byp_seeds = json_object();
	}
	c->inv_checked = xcalloc(cfg->ninvariants + 1, sizeof(*c->inv_checked));
	c->inv_broken = xcalloc(cfg->ninvariants + 1, sizeof(*c->inv_broken));
	return c;
}

void
cov_free(struct cov *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->cfg->nproxies; i++) {
		json_decref(c->px[i].faults);
		json_decref(c->px[i].forced);
		json_decref(c->px[i].deadlocks);
		json_decref(c->px[i].idle_dec);
		json_decref(c->px[i].idle_seeds);
		json_decref(c->px[i].byp_n);
		json_decref(c->px[i].byp_seeds);
		free(c->px[i].h);
	}
	free(c->px);
	free(c->inv_checked);
	free(c->inv_broken);
	free(c);
}

static void
hist_add(struct cov_px *x, uint64_t v)
{
	size_t	lo = 0, hi = x->nh, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (x->h[mid].value < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == x->nh || x->h[lo].value != v) {
		x->h = xreallocarray(x->h, x->nh + 1, sizeof(*x->h));
		memmove(&x->h[lo + 1], &x->h[lo], (x->nh - lo) * sizeof(*x->h));
		x->h[lo] = (struct hist){ .value = v, .count = 0 };
		x->nh++;
	}
	x->h[lo].count++;
	x->hseeds++;
}

/* The median of the seeds' steps (the lower one of an even count). */
static uint64_t
hist_median(const struct cov_px *x)
{
	uint64_t	want = (x->hseeds - 1) / 2, seen = 0;
	size_t		i;

	for (i = 0; i < x->nh; i++) {
		seen += x->h[i].count;
		if (seen > want)
			return x->h[i].value;
	}
	return 0;
}

uint32_t
cov_seed_forced(const json_t *seed)
{
	const char	*name, *k;
	json_t		*p, *v;
	uint64_t	 n = 0;

	json_object_foreach(json_object_get(seed, "proxies"), name, p)
		json_object_foreach(json_object_get(p, "forced"), k, v)
			n += count_of(v);
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* A seed's {"3": n}: decisions without turn 3, and one more seed for it. */
static void
idle_add(struct cov_px *x, const json_t *idle)
{
	const char	*k;
	json_t		*v;
	char		*end;

	json_object_foreach(UNCONST(idle), k, v) {
		/* a turn's number, nothing else, off the wire */
		if (count_of(v) == 0 || strtoul(k, &end, 10) > 65535 ||
		    *end != '\0' || *k == '\0')
			continue;
		kind_add(x->idle_dec, k, count_of(v));
		kind_add(x->idle_seeds, k, 1);
	}
}

void
cov_add(struct cov *c, const json_t *seed)
{
	const json_t	*proxies = json_object_get(seed, "proxies");
	const json_t	*invs = json_object_get(seed, "invariants");
	uint64_t	 forced = 0, steps;
	size_t		 i;

	if (!json_is_object(seed))
		return;
	c->seeds++;
	if (json_object_get(seed, "unread") != NULL) {
		c->unread++;
		goto invariants;
	}
	for (i = 0; i < c->cfg->nproxies; i++) {
		struct cov_px	*x = &c->px[i];
		const json_t	*o = json_object_get(proxies, x->p->name);
		const char	*k;
		json_t		*v;

		/* a seed that ran (some proxy of it saw an exchange) and in
		 * which this schedule took no step */
		if (x->p->schedule.enabled && json_object_size(proxies) > 0 &&
		    count_of(json_object_get(o, "steps")) == 0)
			x->nostep_seeds++;
		if (!json_is_object(o))
			continue;
		json_object_foreach(json_object_get(o, "bypassed"), k, v)
			if (count_of(v) > 0 && cfg_service_named(c->cfg, k)) {
				kind_add(x->byp_n, k, count_of(v));
				kind_add(x->byp_seeds, k, 1);
			}
		if ((steps = count_of(json_object_get(o, "serialized"))) > 0) {
			x->serialized += steps;
			x->ser_seeds++;
		}
		x->exchanges += count_of(json_object_get(o, "exchanges"));
		x->seeds_used += count_of(json_object_get(o, "exchanges")) > 0;
		x->connections += count_of(json_object_get(o, "connections"));
		kinds_add(x->faults, json_object_get(o, "faults"));
		kind_add(x->faults, COV_LATENCY, count_of(json_object_get(o, "latency")));
		forced += kinds_add(x->forced, json_object_get(o, "forced"));
		idle_add(x, json_object_get(o, "idle"));
		x->lock_waits += count_of(json_object_get(o, "lock_waits"));
		kinds_add(x->deadlocks, json_object_get(o, "deadlocks"));
		if ((steps = count_of(json_object_get(o, "steps"))) > 0) {
			x->steps += steps;
			hist_add(x, steps);
		}
	}
	c->forced += forced;
	c->forced_seeds += forced > 0;
invariants:
	if (json_array_size(invs) != c->cfg->ninvariants)
		return;
	for (i = 0; i < c->cfg->ninvariants; i++) {
		const json_t	*r = json_array_get(invs, i);

		c->inv_checked[i] += count_of(json_array_get(r, 0)) > 0;
		c->inv_broken[i] += count_of(json_array_get(r, 1)) > 0;
	}
}

void
cov_seed_waits(const struct cov *c, const json_t *timing, struct cov_waits *out)
{
	const json_t	*w = json_object_get(timing, "waits");
	const char	*name = json_string_value(json_object_get(w, "max_proxy"));
	size_t		 i;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(w) || name == NULL)
		return;
	for (i = 0; i < c->cfg->nproxies && i < UINT16_MAX; i++)
		if (strcmp(c->cfg->proxies[i].name, name) == 0) {
			out->max_proxy = (uint16_t)i;
			out->scheduled = true;
		}
	if (!out->scheduled)
		return;		/* a proxy the config does not have */
#define U32(k)	(count_of(json_object_get(w, k)) > UINT32_MAX ? UINT32_MAX : \
	(uint32_t)count_of(json_object_get(w, k)))
	out->ms = U32("ms");
	out->steps = U32("steps");
	out->max_ms = U32("max_ms");
	out->max_step = U32("max_step");
#undef U32
}

void
cov_add_waits(struct cov *c, uint64_t seed, const struct cov_waits *w,
    int64_t duration_ms)
{
	if (!w->scheduled)
		return;
	c->wait_ms += w->ms;
	c->wait_steps += w->steps;
	c->wait_seeds++;
	c->wait_dur_ms += duration_ms > 0 ? (uint64_t)duration_ms : 0;
	if (w->steps > 0 && (!c->has_slow || w->max_ms > c->slow.max_ms ||
	    (w->max_ms == c->slow.max_ms && seed < c->slow_seed))) {
		c->has_slow = true;
		c->slow = *w;
		c->slow_seed = seed;
	}
}

json_t *
cov_waits_json(const struct cfg *cfg, const struct cov_waits *w)
{
	if (!w->scheduled || w->max_proxy >= cfg->nproxies)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I, s:s}", "ms", (json_int_t)w->ms,
	    "steps", (json_int_t)w->steps, "max_ms", (json_int_t)w->max_ms,
	    "max_step", (json_int_t)w->max_step,
	    "max_proxy", cfg->proxies[w->max_proxy].name);
}

/*
 * The share of exchanges (or connections: *of) a kind of the coverage's
 * (a fault's name, or "latency") is given; 0 for a name it does not know.
 */
static double
fault_share(const struct cfg_faults *f, const char *kind, const char **of)
{
	enum fault	k;

	*of = "exchanges";
	if (strcmp(kind, COV_LATENCY) == 0)
		return f->latency_max_ms > 0;
	if (fault_parse(kind, &k) == -1)
		return 0;
	switch (k) {
	case FAULT_LOST_REPLY:
		return f->rate * f->lost_reply;
	case FAULT_RESET:
		return f->rate * f->reset;
	case FAULT_DUPLICATE:
		return f->rate * f->duplicate;
	case FAULT_STATUS:
		return f->rate * f->status;
	case FAULT_STREAM_CUT:
		return f->rate * f->stream_cut;
	case FAULT_STREAM_STALL:
		return f->rate * f->stream_stall;
	case FAULT_BLACKHOLE:
		*of = "connections";
		return f->blackhole;
	case FAULT_CLOSE_AFTER:
		*of = "connections";
		return f->close_after[0] > 0 || f->close_after[1] > 0;
	case FAULT_NONE:
	case FAULT_MAX:
		break;
	}
	return 0;
}

static const char *
sched_mode(const struct cfg_proxy *p)
{
	if (!p->schedule.enabled)
		return NULL;
	return p->schedule.mode == CFG_SCHED_RANDOM ? "random" : "pct";
}

/* "SOAK_PROXY_DB" for proxy db: worker/env.c's rule. */
static void
proxy_env(char *buf, size_t len, const char *name)
{
	size_t	i = (size_t)snprintf(buf, len, "SOAK_PROXY_"), j;

	for (j = 0; name[j] && i + 1 < len; j++)
		buf[i++] = isalnum((unsigned char)name[j]) ?
		    (char)toupper((unsigned char)name[j]) : '_';
	buf[i < len ? i : len - 1] = '\0';
}

/* PCT's bound for a bug of depth d among n turns in k steps. */
static double
pct_seed(int n, int k, int d)
{
	return 1.0 / ((double)n * pow((double)k, (double)(d - 1)));
}

static double
pct_run(double p, uint64_t seeds)
{
	return -expm1((double)seeds * log1p(-p));
}

/* "1/(8·24^2)", the bound as written. */
static void
pct_formula(char *buf, size_t len, int n, int k, int d)
{
	if (d <= 1)
		snprintf(buf, len, "1/%d", n);
	else if (d == 2)
		snprintf(buf, len, "1/(%d\u00b7%d)", n, k);
	else
		snprintf(buf, len, "1/(%d\u00b7%d^%d)", n, k, d - 1);
}

static void
warn(json_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
warn(json_t *w, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		abort();
	va_end(ap);
	json_array_append_new(w, json_string(s));
	free(s);
}

/* Why an HTTP API fault may draw and still not fire (docs/faults.md). */
static const char *
api_hint(const char *kind)
{
	enum fault	k;

	if (fault_parse(kind, &k) == -1)
		return "";
	if (k == FAULT_STATUS)
		return "; a status fault fires on an HTTP exchange only: is "
		    "the proxy's traffic HTTP?";
	if (k == FAULT_STREAM_CUT || k == FAULT_STREAM_STALL)
		return "; a stream fault fires on a reply of server-sent events "
		    "that reaches its event (cut_after, stall_after): do the "
		    "turns ask for streamed replies, and that long?";
	return "";
}

static void
warn_faults(json_t *w, const struct cov *c, const struct cov_px *x)
{
	const struct cfg_faults	*f = &x->p->faults;
	const char		*of, *kind;
	char			 match[300] = "", expect[64];
	json_t			*v;
	enum fault		 k;
	double			 share;
	uint64_t		 base;

	if (f->match != NULL)
		snprintf(match, sizeof(match), "; its match: /%s/ picks which "
		    "exchanges may be faulted (a statement's head, an HTTP request "
		    "line): does it match any the turns send?", f->match);
	json_object_foreach(x->faults, kind, v) {
		if ((share = fault_share(f, kind, &of)) <= 0 || count_of(v) > 0)
			continue;
		base = strcmp(of, "connections") == 0 ? x->connections : x->exchanges;
		if (strcmp(kind, COV_LATENCY) == 0)
			warn(w, "proxy %s: latency (%lld..%lld ms) delayed none of its "
			    "%" PRIu64 " exchanges in %" PRIu64 " seeds%s", x->p->name,
			    (long long)f->latency_min_ms, (long long)f->latency_max_ms,
			    x->exchanges, traced(c), match);
		else if (fault_parse(kind, &k) == 0 && k == FAULT_CLOSE_AFTER)
			warn(w, "proxy %s: close_after closed none of its %" PRIu64
			    " connections in %" PRIu64 " seeds (none passed that many "
			    "bytes)", x->p->name, x->connections, traced(c));
		else {
			if (f->match)
				expect[0] = '\0';
			else
				snprintf(expect, sizeof(expect),
				    ", about %.3g expected", share * (double)base);
			warn(w, "proxy %s: %s never fired in %" PRIu64 " %s of %" PRIu64
			    " seeds, though its share is %.3g %% of them%s%s%s",
			    x->p->name, kind, base, of, traced(c), share * 100, expect,
			    strcmp(of, "connections") == 0 ? "" : match,
			    api_hint(kind));
		}
	}
}

static void
warn_pct(json_t *w, const struct cov_px *x)
{
	int		k = x->p->schedule.steps;
	uint64_t	max, med;

	if (x->hseeds == 0)
		return;
	max = x->h[x->nh - 1].value;
	med = hist_median(x);
	if (max > (uint64_t)k)
		warn(w, "proxy %s: seeds took up to %" PRIu64 " scheduled steps "
		    "(median %" PRIu64 "), more than its pct steps (k = %d): PCT's "
		    "change points fall only in steps 1..%d, so a race later in a "
		    "seed gets none, and the bound does not hold; set steps: to "
		    "about %" PRIu64 " (drivers send BEGIN and COMMIT of their own, "
		    "and each is a step)", x->p->name, max, med, k, k, max);
	else if ((uint64_t)k > 2 * max)
		warn(w, "proxy %s: its pct steps (k = %d) is far above the steps "
		    "seeds took (median %" PRIu64 ", at most %" PRIu64 "): a change "
		    "point falls past a seed's last step, wasted, %.0f %% of the "
		    "time or more; set steps: to about %" PRIu64 " (drivers send "
		    "BEGIN and COMMIT of their own, and each is a step)", x->p->name,
		    k, med, max, 100.0 * (double)((uint64_t)k - max) / k, max);
}

/*
 * Where a schedule claimed more than it controls (docs/faults.md,
 * "A service behind the schedule"): a service's exchanges that passed it unheld, and a schedule on a
 * proxy in front of a service that held each request to its reply, so
 * the service never ran two at once (worker/explore.c's serialized).
 */
static void
warn_seam(json_t *w, const struct cov *c, const struct cov_px *x,
    const char *mode)
{
	const char	*svc, *what;
	json_t		*v;
	char		 up[160];

	what = x->p->upstream_kind == CFG_UP_DATABASE ||
	    x->p->protocol == CFG_PROTO_POSTGRES ? "statements" : "exchanges";
	json_object_foreach(x->byp_n, svc, v)
		warn(w, "proxy %s: %" PRIu64 " %s of service %s bypassed the "
		    "schedule (%s), in %" PRIu64 " of the %" PRIu64 " seeds: which "
		    "turn's request they served could not be told (the service "
		    "was called on its own port, not through a proxy of the "
		    "config, or had two turns' requests in hand at once), so they "
		    "passed unheld, in the order the service sent them, and a race "
		    "among them is not the seed's (docs/faults.md, \"Services "
		    "under a schedule\")", x->p->name,
		    count_of(v), what, svc, mode ? mode : "none",
		    kind_get(x->byp_seeds, svc), c->seeds);
	/* a model's stand-in or API has no race of the system's to remove */
	if (x->serialized == 0 || x->p->upstream_kind == CFG_UP_MODEL ||
	    x->p->tls)
		return;
	if (x->p->upstream_kind == CFG_UP_SERVICE)
		snprintf(up, sizeof(up), "service %s", x->p->upstream);
	else
		snprintf(up, sizeof(up), "its upstream %s", x->p->upstream);
	warn(w, "proxy %s: its schedule (%s) serialized %s in %" PRIu64 " of "
	    "the %" PRIu64 " seeds: %" PRIu64 " step%s admitted a request while "
	    "another turn's waited, and each is held until its reply, so %s "
	    "never ran two requests at once and a race inside it cannot happen "
	    "there; a schedule on the proxy in front of the database orders the "
	    "statements instead (docs/faults.md, \"Schedules\")", x->p->name,
	    mode ? mode : "none", up, x->ser_seeds, c->seeds, x->serialized,
	    x->serialized == 1 ? "" : "s", x->p->upstream_kind ==
	    CFG_UP_SERVICE ? "the service" : "it");
}

/* {"tools": {"exchanges": n, "seeds": m}} of x's bypassed counts. */
static json_t *
bypassed_json(const struct cov_px *x)
{
	json_t		*o = json_object(), *v;
	const char	*svc;

	json_object_foreach(x->byp_n, svc, v)
		json_object_set_new(o, svc, json_pack("{s:I, s:I}", "exchanges",
		    (json_int_t)count_of(v), "seeds",
		    (json_int_t)kind_get(x->byp_seeds, svc)));
	return o;
}

static json_t *
warnings(const struct cov *c)
{
	json_t	*w = json_array();
	char	 env[128];
	size_t	 i;

	if (c->seeds == 0)
		return w;
	if (c->unread > 0)
		warn(w, "soak could not read its own fault trace of %" PRIu64 " of "
		    "the %" PRIu64 " seeds (soak's error, not the system's: each is "
		    "infra, reason trace, unless it failed; the worker's log says "
		    "why): their exchanges are in no count here", c->unread,
		    c->seeds);
	for (i = 0; i < c->cfg->nproxies; i++) {
		const struct cov_px	*x = &c->px[i];
		const char		*mode = sched_mode(x->p);

		if (traced(c) == 0)
			break;
		if (x->exchanges == 0) {
			proxy_env(env, sizeof(env), x->p->name);
			warn(w, "proxy %s saw no exchange in any of the %" PRIu64
			    " seeds: no turn's traffic went through it%s. A turn "
			    "reaches it at $%s (host:port of its own listener)%s",
			    x->p->name, traced(c), mode ? ", so its schedule took no "
			    "step" : "", env, x->p->upstream_kind == CFG_UP_DATABASE ?
			    "; in front of the database, also through PGHOST, PGPORT "
			    "and DATABASE_URL when they point at it (a turn that "
			    "connects by an address of its own, or database.url's, "
			    "bypasses it)" : "");
			continue;
		}
		warn_faults(w, c, x);
		if (mode != NULL && x->steps == 0)
			warn(w, "proxy %s has a schedule (%s) but took no step in any "
			    "of the %" PRIu64 " seeds: its %" PRIu64 " exchanges were "
			    "all outside it (a PostgreSQL start-up is%s)", x->p->name,
			    mode, traced(c), x->exchanges, json_object_size(x->byp_n) > 0 ?
			    ", and a service's exchanges are: below" : "");
		else if (mode != NULL && x->nostep_seeds > 0)
			warn(w, "proxy %s has a schedule (%s) but took no step in %"
			    PRIu64 " of the %" PRIu64 " seeds: nothing of those seeds "
			    "was ordered at it", x->p->name, mode, x->nostep_seeds,
			    traced(c));
		if (mode != NULL && x->steps > 0 &&
		    x->p->schedule.mode == CFG_SCHED_PCT)
			warn_pct(w, x);
		warn_seam(w, c, x, mode);
	}
	for (i = 0; i < c->cfg->ninvariants; i++)
		if (c->inv_checked[i] == 0)
			warn(w, "invariant \"%s\" was checked in none of the %" PRIu64
			    " seeds (each ended before its first check)",
			    c->cfg->invariants[i].name, c->seeds);
	return w;
}

static const char pct_assumes[] = "no forced decisions and no exchanges "
    "outside the schedule";

static int
int_cmp(const void *a, const void *b)
{
	int	x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* The turns of x's idle counts, by number (malloc'd; *n of them). */
static int *
idle_turns(const struct cov_px *x, size_t *n)
{
	const char	*k;
	json_t		*v;
	int		*t = xcalloc(json_object_size(x->idle_dec) + 1, sizeof(*t));

	*n = 0;
	json_object_foreach(x->idle_dec, k, v)
		t[(*n)++] = atoi(k);
	qsort(t, *n, sizeof(*t), int_cmp);
	return t;
}

/* [{"turn": 3, "decisions": n, "seeds": m}, ...] by turn. */
static json_t *
idle_json(const struct cov_px *x)
{
	json_t	*a = json_array();
	size_t	 i, n;
	int	*t = idle_turns(x, &n);
	char	 k[16];

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%d", t[i]);
		json_array_append_new(a, json_pack("{s:i, s:I, s:I}", "turn", t[i],
		    "decisions", (json_int_t)kind_get(x->idle_dec, k),
		    "seeds", (json_int_t)kind_get(x->idle_seeds, k)));
	}
	free(t);
	return a;
}

static json_t *
waits_json(const struct cov *c)
{
	json_t	*slow = json_null();

	if (c->has_slow)
		slow = json_pack("{s:I, s:s, s:I, s:I}", "seed",
		    (json_int_t)c->slow_seed, "proxy",
		    c->cfg->proxies[c->slow.max_proxy].name, "step",
		    (json_int_t)c->slow.max_step, "ms", (json_int_t)c->slow.max_ms);
	return json_pack("{s:I, s:I, s:I, s:I, s:o}", "ms", (json_int_t)c->wait_ms,
	    "steps", (json_int_t)c->wait_steps, "seeds", (json_int_t)c->wait_seeds,
	    "seeds_ms", (json_int_t)c->wait_dur_ms, "slowest", slow);
}

json_t *
cov_json(const struct cov *c)
{
	json_t	*root, *proxies = json_object(), *invs = json_array(), *pct = json_array();
	size_t	 i;

	for (i = 0; i < c->cfg->nproxies; i++) {
		const struct cov_px	*x = &c->px[i];
		const char		*mode = sched_mode(x->p);
		json_t			*sps = json_null();

		if (x->hseeds > 0)
			sps = json_pack("{s:I, s:I}", "median", (json_int_t)hist_median(x),
			    "max", (json_int_t)x->h[x->nh - 1].value);
		json_object_set_new(proxies, x->p->name, json_pack("{s:o, s:I, s:I, "
		    "s:I, s:O, s:I, s:o, s:O, s:I, s:O}",
		    "schedule", mode ? json_string(mode) : json_null(),
		    "exchanges", (json_int_t)x->exchanges,
		    "seeds_with_exchanges", (json_int_t)x->seeds_used,
		    "connections", (json_int_t)x->connections,
		    "faults", x->faults,
		    "steps", (json_int_t)x->steps,
		    "steps_per_seed", sps,
		    "forced", x->forced,
		    "lock_waits", (json_int_t)x->lock_waits,
		    "deadlocks", x->deadlocks));
		json_object_set_new(json_object_get(proxies, x->p->name), "idle",
		    idle_json(x));
		json_object_set_new(json_object_get(proxies, x->p->name), "bypassed",
		    bypassed_json(x));
		json_object_set_new(json_object_get(proxies, x->p->name),
		    "serialized", json_pack("{s:I, s:I}", "steps",
		    (json_int_t)x->serialized, "seeds", (json_int_t)x->ser_seeds));
		json_object_set_new(json_object_get(proxies, x->p->name),
		    "seeds_without_steps", mode ? json_integer((json_int_t)
		    x->nostep_seeds) : json_null());
		if (mode == NULL || x->p->schedule.mode != CFG_SCHED_PCT)
			continue;
		{
			const struct cfg_schedule	*s = &x->p->schedule;
			double				 p = pct_seed(c->cfg->turns,
							    s->steps, s->depth);

			json_array_append_new(pct, json_pack("{s:s, s:i, s:i, s:i, "
			    "s:f, s:I, s:f, s:I, s:s}", "proxy", x->p->name,
			    "turns", c->cfg->turns, "steps", s->steps, "depth", s->depth,
			    "per_seed", p, "seeds", (json_int_t)c->seeds,
			    "over_run", pct_run(p, c->seeds),
			    "forced", (json_int_t)kinds_sum(x->forced),
			    "assumes", pct_assumes));
		}
	}
	for (i = 0; i < c->cfg->ninvariants; i++)
		json_array_append_new(invs, json_pack("{s:s, s:I, s:I}",
		    "name", c->cfg->invariants[i].name,
		    "seeds_checked", (json_int_t)c->inv_checked[i],
		    "seeds_broken", (json_int_t)c->inv_broken[i]));
	root = json_pack("{s:I, s:I, s:o, s:{s:I, s:I}, s:o, s:o, s:o}",
	    "seeds", (json_int_t)c->seeds,
	    "unread_traces", (json_int_t)c->unread, "proxies", proxies,
	    "forced", "decisions", (json_int_t)c->forced,
	    "seeds", (json_int_t)c->forced_seeds,
	    "invariants", invs, "pct", pct, "warnings", warnings(c));
	json_object_set_new(root, "waits", waits_json(c));
	return root;
}

/* ", kinds: a 3, b 0" for the kinds with a count or a share configured. */
static void
put_kinds(FILE *f, const char *what, const json_t *kinds,
    const struct cfg_faults *faults)
{
	const char	*k, *of;
	json_t		*v;
	int		 n = 0;

	json_object_foreach(UNCONST(kinds), k, v) {
		if (count_of(v) == 0 && (faults == NULL ||
		    fault_share(faults, k, &of) <= 0))
			continue;
		fprintf(f, "%s%s %" PRIu64, n++ ? ", " : what, k, count_of(v));
	}
	if (n > 0 && faults == NULL)
		fputc(')', f);
}

/* "2s", "1.5s", "300ms": a duration for people. */
static const char *
dur(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 "ms", ms);
	else
		snprintf(buf, len, "%.3gs", (double)ms / 1000);
	return buf;
}

#define IDLE_SHOWN	8	/* turns named in a proxy's arrival lines */

/*
 * The turns proxy x's arrival decisions went without, and what to do:
 * docs/faults.md "What it costs" (`arrival` covers only what soak cannot
 * see; a decision it forces names the turns it went without).
 */
static void
idle_summary(FILE *f, const struct cov_px *x)
{
	size_t		 i, n;
	int		*t = idle_turns(x, &n);
	uint64_t	 dec = kind_get(x->forced, "arrival");
	char		 k[16], a[32];

	if (n == 0)
		goto out;
	dur((uint64_t)x->p->schedule.arrival_ms, a, sizeof(a));
	fprintf(f, "    proxy %s: %" PRIu64 " decision%s forced by arrival (%s) "
	    "went without ", x->p->name, dec, dec == 1 ? "" : "s", a);
	for (i = 0; i < n && i < IDLE_SHOWN; i++) {
		snprintf(k, sizeof(k), "%d", t[i]);
		fprintf(f, "%sturn %d (%" PRIu64 " time%s in %" PRIu64 " seed%s)",
		    i ? ", " : "", t[i], kind_get(x->idle_dec, k),
		    kind_get(x->idle_dec, k) == 1 ? "" : "s",
		    kind_get(x->idle_seeds, k),
		    kind_get(x->idle_seeds, k) == 1 ? "" : "s");
	}
	if (n > IDLE_SHOWN)
		fprintf(f, " and %zu more turns", n - IDLE_SHOWN);
	fprintf(f, ": each was outside every proxy of its seed for %s or more, "
	    "computing, sleeping or waiting on something soak does not see (a "
	    "model called directly), and a decision the clock made is one a "
	    "replay may make differently.\n      Raise proxies: %s: schedule: "
	    "arrival: above the turn's longest such pause, or put what it waits "
	    "on behind a proxy of the config (an exchange in flight at a proxy "
	    "is waited for, not late)\n", a, x->p->name);
out:
	free(t);
}

/* Where a scheduled run's time went: waiting for the actors. */
static void
waits_summary(FILE *f, const struct cov *c)
{
	char	a[32], b[32], d[32];
	double	share;

	if (c->wait_seeds == 0)
		return;
	share = c->wait_dur_ms > 0 ? (double)c->wait_ms / c->wait_dur_ms : 0;
	fprintf(f, "    the schedules waited %s for their actors in %" PRIu64
	    " seed%s, %.0f %% of those seeds' %s (%s a step over %" PRIu64
	    " steps)", dur(c->wait_ms, a, sizeof(a)), c->wait_seeds,
	    c->wait_seeds == 1 ? "" : "s", 100 * share,
	    dur(c->wait_dur_ms, b, sizeof(b)), dur(c->wait_steps ?
	    c->wait_ms / c->wait_steps : 0, d, sizeof(d)), c->wait_steps);
	if (c->has_slow)
		fprintf(f, "; the slowest step: %s, step %" PRIu32 " of proxy %s "
		    "in seed %" PRIu64, dur(c->slow.max_ms, a, sizeof(a)),
		    c->slow.max_step, c->cfg->proxies[c->slow.max_proxy].name,
		    c->slow_seed);
	fputc('\n', f);
	if (share >= 0.5)
		fprintf(f, "      a step waits until every live turn has sent its "
		    "next statement, so what a turn does between statements "
		    "(thinking, a sleep, a model's answer) is spent one turn after "
		    "another; a model's time as latency: on its proxy costs nothing "
		    "under a schedule (docs/faults.md, \"What it costs\")\n");
}

void
cov_summary(FILE *f, const struct cov *c)
{
	json_t		*w;
	char		 formula[64];
	size_t		 i;
	uint64_t	 dl;

	if (c->seeds == 0)
		return;
	fprintf(f, "\n  coverage of %" PRIu64 " seed%s", c->seeds,
	    c->seeds == 1 ? "" : "s");
	if (c->unread > 0)
		fprintf(f, " (%" PRIu64 " whose fault trace soak could not read: "
		    "infra, reason trace; their exchanges are not counted)",
		    c->unread);
	fputs(":\n", f);
	for (i = 0; i < c->cfg->nproxies; i++) {
		const struct cov_px	*x = &c->px[i];
		const char		*mode = sched_mode(x->p);
		uint64_t		 forced = kinds_sum(x->forced);

		fprintf(f, "    proxy %s%s%s%s: ", x->p->name, mode ? " (" : "",
		    mode ? mode : "", mode ? ")" : "");
		if (x->exchanges == 0) {
			fprintf(f, "%s\n", traced(c) > 0 ? "no exchange in any seed" :
			    "no fault trace read");
			continue;
		}
		fprintf(f, "%" PRIu64 " exchanges in %" PRIu64 " seed%s, %" PRIu64
		    " connections", x->exchanges, x->seeds_used,
		    x->seeds_used == 1 ? "" : "s", x->connections);
		if (mode != NULL) {
			fprintf(f, "; %" PRIu64 " scheduled steps", x->steps);
			if (x->hseeds > 0)
				fprintf(f, " (median %" PRIu64 ", at most %" PRIu64
				    " a seed)", hist_median(x), x->h[x->nh - 1].value);
			fprintf(f, ", %" PRIu64 " forced", forced);
			if (forced > 0)
				put_kinds(f, " (", x->forced, NULL);
		}
		dl = kinds_sum(x->deadlocks);
		/* what PostgreSQL said of a scheduled proxy's statements */
		if (mode != NULL || x->lock_waits > 0 || dl > 0)
			fprintf(f, "; %" PRIu64 " lock wait%s", x->lock_waits,
			    x->lock_waits == 1 ? "" : "s");
		if (mode != NULL && dl == 0)
			fprintf(f, ", no deadlock");
		else if (dl > 0)
			fprintf(f, ", %" PRIu64 " deadlock%s: %" PRIu64 " broken by "
			    "soak, %" PRIu64 " by PostgreSQL", dl, dl == 1 ? "" : "s",
			    kind_get(x->deadlocks, trace_deadlock_name(TRACE_DEADLOCK_SOAK)),
			    kind_get(x->deadlocks,
			    trace_deadlock_name(TRACE_DEADLOCK_POSTGRES)));
		put_kinds(f, "; faults: ", x->faults, &x->p->faults);
		fputc('\n', f);
	}
	for (i = 0; i < c->cfg->ninvariants; i++)
		fprintf(f, "    invariant \"%s\": checked in %" PRIu64 " seed%s, "
		    "broken in %" PRIu64 "\n", c->cfg->invariants[i].name,
		    c->inv_checked[i], c->inv_checked[i] == 1 ? "" : "s",
		    c->inv_broken[i]);
	for (i = 0; i < c->cfg->nproxies && !c->px[i].p->schedule.enabled; i++)
		;
	/* a timeout's decisions: only a schedule makes them */
	if (i < c->cfg->nproxies || c->forced > 0)
		fprintf(f, "    %" PRIu64 " forced decision%s in %" PRIu64 " of %"
		    PRIu64 " seeds\n", c->forced, c->forced == 1 ? "" : "s",
		    c->forced_seeds, c->seeds);
	for (i = 0; i < c->cfg->nproxies; i++)
		idle_summary(f, &c->px[i]);
	waits_summary(f, c);
	for (i = 0; i < c->cfg->nproxies; i++) {
		const struct cfg_schedule	*s = &c->px[i].p->schedule;
		double				 p;

		if (!s->enabled || s->mode != CFG_SCHED_PCT)
			continue;
		p = pct_seed(c->cfg->turns, s->steps, s->depth);
		pct_formula(formula, sizeof(formula), c->cfg->turns, s->steps, s->depth);
		fprintf(f, "    pct bound, proxy %s (n = %d turns, k = %d steps, d = "
		    "%d): a bug of depth %d or less is found in a seed with "
		    "probability p \u2265 %s = %.3g %%, and in the run's %" PRIu64
		    " seeds with 1 \u2212 (1 \u2212 p)^%" PRIu64 " = %.3g %%, assuming "
		    "%s (this run: %" PRIu64 " forced decision%s)\n", c->px[i].p->name,
		    c->cfg->turns, s->steps, s->depth, s->depth, formula, 100 * p,
		    c->seeds, c->seeds, 100 * pct_run(p, c->seeds), pct_assumes,
		    kinds_sum(c->px[i].forced),
		    kinds_sum(c->px[i].forced) == 1 ? "" : "s");
	}
	w = warnings(c);
	for (i = 0; i < json_array_size(w); i++)
		fprintf(f, "    warning: %s\n", json_string_value(json_array_get(w, i)));
	json_decref(w);
}
