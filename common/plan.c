/*
 * Plans (plan.h, docs/plan.md): their JSON form, and the plan of a trace.
 */
#include "common/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/seed.h"
#include "common/trace.h"
#include "common/util.h"

/* A fault a plan can decide, by its name (fault.h): -1 for another. */
static int
plan_fault_parse(const char *s, enum plan_fault *f)
{
	enum fault	k;

	if (fault_parse(s, &k) == -1 || k >= (enum fault)PLAN_FAULT_MAX)
		return -1;
	*f = (enum plan_fault)k;
	return 0;
}

const char *
plan_fault_words(const struct plan_fault_rec *f, char *buf, size_t len)
{
	const char	*k = fault_name((enum fault)f->fault);

	if (f->fault == PLAN_STATUS)
		snprintf(buf, len, "%s %d", k, f->status);
	else if (f->fault == PLAN_STREAM_CUT)
		snprintf(buf, len, "%s after %" PRIu32, k, f->after);
	else if (f->fault == PLAN_STREAM_STALL)
		snprintf(buf, len, "%s after %" PRIu32 " for %" PRId64 " ms", k,
		    f->after, f->stall_ms);
	else
		snprintf(buf, len, "%s", k);
	return buf;
}

void
plan_free(struct plan *p)
{
	size_t	i, j;

	if (p == NULL)
		return;
	for (i = 0; i < p->nproxies; i++) {
		struct plan_proxy	*x = &p->proxies[i];

		for (j = 0; j < x->nfaults; j++)
			free(x->faults[j].what);
		for (j = 0; j < x->nsteps; j++) {
			free(x->steps[j].what);
			free(x->steps[j].deadlock);
		}
		free(x->faults);
		free(x->steps);
		free(x->name);
	}
	free(p->proxies);
	free(p->runs);
	free(p->config);
	free(p->fingerprint);
	free(p->message);
	free(p->reason);
	for (i = 0; i < p->ninvariants; i++)
		free(p->invariants[i]);
	free(p->invariants);
	free(p->replay);
	free(p->pinned_run);
	free(p->pinned_from);
	free(p->pinned_replaced);
	memset(p, 0, sizeof(*p));
}

/* ---- reading ---- */

struct rd {
	const char	*what;		/* the file, for messages */
	char		*err;
};

static int
bad(struct rd *r, const char *path, const char *why)
{
	return errf(r->err, "%s: %s: %s", r->what, path, why);
}

static int
get_int(struct rd *r, json_t *o, const char *k, const char *path, int lo,
    int hi, int *out)
{
	json_t		*v = json_object_get(o, k);
	char		 p[320];
	json_int_t	 n;

	snprintf(p, sizeof(p), "%s.%s", path, k);
	if (!json_is_integer(v))
		return bad(r, p, "missing, or not an integer");
	n = json_integer_value(v);
	if (n < lo || n > hi) {
		char	why[96];

		snprintf(why, sizeof(why), "%lld is out of range (%d..%d)",
		    (long long)n, lo, hi);
		return bad(r, p, why);
	}
	*out = (int)n;
	return 0;
}

static char *
opt_str(json_t *o, const char *k)
{
	const char	*s = json_string_value(json_object_get(o, k));

	return s != NULL ? xstrdup(s) : NULL;
}

static int
get_key(struct rd *r, json_t *o, const char *path, uint64_t *key)
{
	char	p[320];

	snprintf(p, sizeof(p), "%s.key", path);
	if (trace_key_parse(json_string_value(json_object_get(o, "key")), key) == -1)
		return bad(r, p, "missing, or not 16 hex digits");
	return 0;
}

/*
 * An HTTP API fault's parameters: each is there exactly when its kind
 * has it (a status with status, after with a stream fault, stall_ms with
 * a stall), so an edited plan means what it says or is refused.
 */
static int
read_api_fault(struct rd *r, json_t *o, const char *path,
    struct plan_fault_rec *f)
{
	static const struct {
		const char	*key;
		json_int_t	 lo, hi;
		bool		 status, cut, stall;	/* whose it is */
		const char	*what;
	} params[] = {
		{ "status", 400, 599, true, false, false,
		    "an HTTP error status of 400..599" },
		{ "after", 1, CFG_EVENTS_MAX, false, true, true,
		    "a count of events of 1..100000" },
		{ "stall_ms", 0, 3600000, false, false, true,
		    "an integer of 0..3600000 (ms)" },
	};
	json_t		*v;
	json_int_t	 n[3] = { 0, 0, 0 };
	char		 q[320], why[160];
	size_t		 i;
	bool		 want;

	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		want = (params[i].status && f->fault == PLAN_STATUS) ||
		    (params[i].cut && f->fault == PLAN_STREAM_CUT) ||
		    (params[i].stall && f->fault == PLAN_STREAM_STALL);
		v = json_object_get(o, params[i].key);
		snprintf(q, sizeof(q), "%s.%s", path, params[i].key);
		if (v == NULL && want) {
			snprintf(why, sizeof(why), "missing: a %s fault has one (%s)",
			    fault_name((enum fault)f->fault), params[i].what);
			return bad(r, q, why);
		}
		if (v == NULL)
			continue;
		if (!want) {
			snprintf(why, sizeof(why), "not a parameter of a %s fault",
			    f->fault == PLAN_NONE ? "latency or reply, nor of no" :
			    fault_name((enum fault)f->fault));
			return bad(r, q, why);
		}
		if (!json_is_integer(v) || json_integer_value(v) < params[i].lo ||
		    json_integer_value(v) > params[i].hi) {
			snprintf(why, sizeof(why), "not %s", params[i].what);
			return bad(r, q, why);
		}
		n[i] = json_integer_value(v);
	}
	f->status = (int)n[0];
	f->after = (uint32_t)n[1];
	f->stall_ms = n[2];
	return 0;
}

static int
read_fault(struct rd *r, json_t *o, const char *path, const struct plan *p,
    struct plan_fault_rec *f)
{
	const char	*name = json_string_value(json_object_get(o, "fault"));
	json_t		*lat = json_object_get(o, "latency_ms"), *rep;
	char		 q[320];
	int		 v;

	if (!json_is_object(o))
		return bad(r, path, "not an object");
	if (get_int(r, o, "round", path, 0, p->rounds - 1, &f->round) == -1 ||
	    get_int(r, o, "turn", path, 0, p->turns - 1, &f->turn) == -1)
		return -1;
	f->fault = PLAN_NONE;
	snprintf(q, sizeof(q), "%s.fault", path);
	if (name != NULL && plan_fault_parse(name, &f->fault) == -1)
		return bad(r, q, "not one of lost_reply, reset, duplicate, "
		    "blackhole, status, stream_cut, stream_stall");
	if (f->fault == PLAN_BLACKHOLE) {
		if (get_int(r, o, "conn", path, 0, INT32_MAX, &v) == -1)
			return -1;
		f->occ = (uint32_t)v;
	} else {
		if (get_key(r, o, path, &f->key) == -1 ||
		    get_int(r, o, "occ", path, 0, INT32_MAX, &v) == -1)
			return -1;
		f->occ = (uint32_t)v;
	}
	snprintf(q, sizeof(q), "%s.latency_ms", path);
	if (lat != NULL && (!json_is_integer(lat) || json_integer_value(lat) < 0 ||
	    json_integer_value(lat) > FAULT_LATENCY_MAX_MS))
		return bad(r, q, "not an integer of 0..3600000");
	f->latency_ms = lat != NULL ? json_integer_value(lat) : 0;
	snprintf(q, sizeof(q), "%s.reply", path);
	if ((rep = json_object_get(o, "reply")) != NULL &&
	    (!json_is_integer(rep) || json_integer_value(rep) < 0 ||
	    json_integer_value(rep) > 1000 || f->fault == PLAN_BLACKHOLE))
		return bad(r, q, "not an integer of 0..1000 (an exchange's reply)");
	f->reply = rep != NULL ? (uint32_t)json_integer_value(rep) : 0;
	if (f->fault == PLAN_NONE && f->latency_ms == 0 && f->reply == 0)
		return bad(r, path, "neither a fault, a latency nor a reply");
	if (read_api_fault(r, o, path, f) == -1)
		return -1;
	f->what = opt_str(o, "what");
	return 0;
}

static int
read_step(struct rd *r, json_t *o, const char *path, const struct plan *p,
    struct plan_step *s)
{
	json_t	*w = json_object_get(o, "waits_on"), *t;
	size_t	 i;
	int	 v;

	if (!json_is_object(o))
		return bad(r, path, "not an object");
	if (get_int(r, o, "round", path, 0, p->rounds - 1, &s->round) == -1 ||
	    get_int(r, o, "turn", path, 0, p->turns - 1, &s->turn) == -1 ||
	    get_key(r, o, path, &s->key) == -1 ||
	    get_int(r, o, "occ", path, 0, INT32_MAX, &v) == -1)
		return -1;
	s->occ = (uint32_t)v;
	/* a version 1 plan has no lanes: every step on lane 0 */
	if (json_object_get(o, "lane") != NULL &&
	    get_int(r, o, "lane", path, 0, 63, &s->lane) == -1)
		return -1;
	if (w != NULL) {
		char	q[320];

		snprintf(q, sizeof(q), "%s.waits_on", path);
		if (!json_is_array(w))
			return bad(r, q, "not a list of turns");
		s->lock_wait = true;
		json_array_foreach(w, i, t) {
			if (!json_is_integer(t) || json_integer_value(t) < 0 ||
			    json_integer_value(t) >= 64)
				return bad(r, q, "a turn is not an integer of 0..63");
			s->waits_on |= (uint64_t)1 << json_integer_value(t);
		}
	}
	if ((w = json_object_get(o, "cand")) != NULL) {
		char	q[320];

		snprintf(q, sizeof(q), "%s.cand", path);
		if (!json_is_array(w))
			return bad(r, q, "not a list of turns");
		s->has_cand = true;
		json_array_foreach(w, i, t) {
			if (!json_is_integer(t) || json_integer_value(t) < 0 ||
			    json_integer_value(t) >= 64)
				return bad(r, q, "a turn is not an integer of 0..63");
			s->cand |= (uint64_t)1 << json_integer_value(t);
		}
	}
	if ((w = json_object_get(o, "deadlock")) != NULL) {
		enum trace_deadlock	d;
		char			q[320];

		snprintf(q, sizeof(q), "%s.deadlock", path);
		if (trace_deadlock_parse(json_string_value(w), &d) == -1)
			return bad(r, q, "not soak or postgres");
		s->deadlock = xstrdup(trace_deadlock_name(d));
	}
	s->what = opt_str(o, "what");
	return 0;
}

static int
read_proxy(struct rd *r, const char *name, json_t *o, struct plan *p,
    struct plan_proxy *x)
{
	json_t	*fa = json_object_get(o, "faults"), *st = json_object_get(o, "steps");
	json_t	*e;
	char	 path[256];
	size_t	 i;

	x->name = xstrdup(name);
	snprintf(path, sizeof(path), "proxies.%s", name);
	if (!json_is_object(o))
		return bad(r, path, "not an object");
	if ((fa != NULL && !json_is_array(fa)) || (st != NULL && !json_is_array(st)))
		return bad(r, path, "faults and steps must be lists");
	x->faults = xcalloc(json_array_size(fa) + 1, sizeof(*x->faults));
	json_array_foreach(fa, i, e) {
		snprintf(path, sizeof(path), "proxies.%s.faults[%zu]", name, i);
		if (read_fault(r, e, path, p, &x->faults[x->nfaults]) == -1)
			return -1;
		x->nfaults++;
	}
	x->steps = xcalloc(json_array_size(st) + 1, sizeof(*x->steps));
	json_array_foreach(st, i, e) {
		snprintf(path, sizeof(path), "proxies.%s.steps[%zu]", name, i);
		if (read_step(r, e, path, p, &x->steps[x->nsteps]) == -1)
			return -1;
		x->nsteps++;
	}
	return 0;
}

static int
read_runs(struct rd *r, json_t *runs, struct plan *p)
{
	json_t		*e;
	size_t		 i;
	char		 path[64];
	json_int_t	 rt[2];

	if (runs == NULL)
		return 0;
	if (!json_is_array(runs))
		return bad(r, "runs", "not a list of [round, turn] pairs");
	if (json_array_size(runs) == 0)
		return bad(r, "runs", "an empty list runs no turn, and a plan that runs "
		    "none tests nothing (leave runs out for every turn)");
	p->runs = xcalloc((size_t)p->rounds * (size_t)p->turns, sizeof(*p->runs));
	json_array_foreach(runs, i, e) {
		snprintf(path, sizeof(path), "runs[%zu]", i);
		if (!json_is_array(e) || json_array_size(e) != 2 ||
		    !json_is_integer(json_array_get(e, 0)) ||
		    !json_is_integer(json_array_get(e, 1)))
			return bad(r, path, "not a [round, turn] pair");
		/* compared as they are: a cast to int would wrap 2^32 to 0 */
		rt[0] = json_integer_value(json_array_get(e, 0));
		rt[1] = json_integer_value(json_array_get(e, 1));
		if (rt[0] < 0 || rt[0] >= p->rounds || rt[1] < 0 || rt[1] >= p->turns)
			return bad(r, path, "round or turn out of range");
		p->runs[(size_t)rt[0] * (size_t)p->turns + (size_t)rt[1]] = true;
	}
	return 0;
}

int
plan_parse(const char *text, size_t len, const char *what, struct plan *p,
    char *err)
{
	struct rd	 r = { what, err };
	json_error_t	 je;
	json_t		*o, *v, *px, *fail, *pin;
	const char	*name;
	int		 version, rc = -1;

	memset(p, 0, sizeof(*p));
	if ((o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)) == NULL)
		return errf(err, "%s:%d:%d: not JSON: %s", what, je.line, je.column,
		    je.text);
	if (!json_is_object(o)) {
		bad(&r, "(top)", "not an object");
		goto out;
	}
	if (get_int(&r, o, "soak_plan", "(top)", 1, INT32_MAX, &version) == -1)
		goto out;
	if (version < 1 || version > PLAN_VERSION) {
		errf(err, "%s: a plan of version %d; this soak reads versions 1 to %d",
		    what, version, PLAN_VERSION);
		goto out;
	}
	v = json_object_get(o, "seed");
	if (!json_is_integer(v) && !json_is_string(v)) {
		bad(&r, "seed", "missing, or not an integer");
		goto out;
	}
	if (json_is_string(v)) {	/* seeds past 2^63 are written as text */
		char	why[ERR_LEN];

		if (seed_parse(json_string_value(v), &p->seed, why) == -1) {
			bad(&r, "seed", why);
			goto out;
		}
	} else if (json_integer_value(v) < 0) {
		char	why[96];

		snprintf(why, sizeof(why), "%" JSON_INTEGER_FORMAT " is negative (a "
		    "seed is 0 to %" PRIu64 ")", json_integer_value(v), UINT64_MAX);
		bad(&r, "seed", why);
		goto out;
	} else
		p->seed = (uint64_t)json_integer_value(v);
	if (get_int(&r, o, "turns", "(top)", 1, 1024, &p->turns) == -1 ||
	    get_int(&r, o, "rounds", "(top)", 1, 10000, &p->rounds) == -1 ||
	    read_runs(&r, json_object_get(o, "runs"), p) == -1)
		goto out;
	p->config = opt_str(o, "config");
	px = json_object_get(o, "proxies");
	if (px != NULL && !json_is_object(px)) {
		bad(&r, "proxies", "not an object");
		goto out;
	}
	p->proxies = xcalloc(json_object_size(px) + 1, sizeof(*p->proxies));
	json_object_foreach(px, name, v) {
		if (read_proxy(&r, name, v, p, &p->proxies[p->nproxies++]) == -1)
			goto out;
	}
	if ((fail = json_object_get(o, "failure")) != NULL) {
		json_t	*invs = json_object_get(fail, "invariants"), *inv;
		size_t	 k;

		p->fingerprint = opt_str(fail, "fingerprint");
		p->message = opt_str(fail, "message");
		p->reason = opt_str(fail, "reason");
		p->replay = opt_str(fail, "replay");
		if (invs != NULL && !json_is_array(invs)) {
			bad(&r, "failure.invariants", "not an array of names");
			goto out;
		}
		p->invariants = xcalloc(json_array_size(invs) + 1, sizeof(char *));
		json_array_foreach(invs, k, inv) {
			if (!json_is_string(inv)) {
				bad(&r, "failure.invariants", "not an array of names");
				goto out;
			}
			p->invariants[p->ninvariants++] = xstrdup(json_string_value(inv));
		}
	}
	if ((pin = json_object_get(o, "pinned")) != NULL) {
		if (!json_is_object(pin)) {
			bad(&r, "pinned", "not an object");
			goto out;
		}
		p->pinned_run = opt_str(pin, "run");
		p->pinned_from = opt_str(pin, "from");
		p->pinned_replaced = opt_str(pin, "replaced");
	}
	rc = 0;
out:
	json_decref(o);
	if (rc == -1)
		plan_free(p);
	return rc;
}

int
plan_load(const char *path, struct plan *p, char *err)
{
	char	*text;
	size_t	 len;
	int	 rc;

	memset(p, 0, sizeof(*p));
	if ((text = read_file(path, PLAN_MAX_BYTES, &len, err)) == NULL)
		return -1;
	rc = plan_parse(text, len, path, p, err);
	free(text);
	return rc;
}

void
plan_copy(const struct plan *src, struct plan *dst)
{
	char	*text = plan_dump(src), err[ERR_LEN];

	/* plan_dump writes only what plan_parse reads back */
	if (plan_parse(text, strlen(text), "(a copy)", dst, err) == -1)
		fatalx("%s: %s", __func__, err);
	free(text);
}

/* ---- writing ---- */

static json_t *
turns_json(uint64_t mask)
{
	json_t	*a = json_array();
	int	 t;

	for (t = 0; t < 64; t++)
		if (mask >> t & 1)
			json_array_append_new(a, json_integer(t));
	return a;
}

static json_t *
proxy_json(const struct plan_proxy *x)
{
	json_t	*o = json_object(), *fa = json_array(), *st = json_array(), *e;
	char	 hex[24];
	size_t	 i;

	for (i = 0; i < x->nfaults; i++) {
		const struct plan_fault_rec	*f = &x->faults[i];

		e = json_pack("{s:i, s:i}", "round", f->round, "turn", f->turn);
		if (f->fault == PLAN_BLACKHOLE)
			json_object_set_new(e, "conn", json_integer(f->occ));
		else {
			json_object_set_new(e, "key", json_string(trace_key_hex(f->key,
			    hex, sizeof(hex))));
			json_object_set_new(e, "occ", json_integer(f->occ));
		}
		if (f->what != NULL)
			json_object_set_new(e, "what", json_string(f->what));
		if (f->fault != PLAN_NONE)
			json_object_set_new(e, "fault",
			    json_string(fault_name((enum fault)f->fault)));
		if (f->fault == PLAN_STATUS)
			json_object_set_new(e, "status", json_integer(f->status));
		if (f->fault == PLAN_STREAM_CUT || f->fault == PLAN_STREAM_STALL)
			json_object_set_new(e, "after", json_integer(f->after));
		if (f->fault == PLAN_STREAM_STALL)
			json_object_set_new(e, "stall_ms",
			    json_integer(f->stall_ms));
		if (f->latency_ms > 0)
			json_object_set_new(e, "latency_ms",
			    json_integer(f->latency_ms));
		if (f->reply > 0)
			json_object_set_new(e, "reply", json_integer(f->reply));
		json_array_append_new(fa, e);
	}
	for (i = 0; i < x->nsteps; i++) {
		const struct plan_step	*s = &x->steps[i];

		e = json_pack("{s:i, s:i, s:s, s:i}", "round", s->round, "turn",
		    s->turn, "key", trace_key_hex(s->key, hex, sizeof(hex)), "occ",
		    (int)s->occ);
		if (s->lane > 0)
			json_object_set_new(e, "lane", json_integer(s->lane));
		if (s->what != NULL)
			json_object_set_new(e, "what", json_string(s->what));
		if (s->has_cand)
			json_object_set_new(e, "cand", turns_json(s->cand));
		if (s->lock_wait)
			json_object_set_new(e, "waits_on", turns_json(s->waits_on));
		if (s->deadlock != NULL)
			json_object_set_new(e, "deadlock", json_string(s->deadlock));
		json_array_append_new(st, e);
	}
	json_object_set_new(o, "faults", fa);
	json_object_set_new(o, "steps", st);
	return o;
}

char *
plan_dump(const struct plan *p)
{
	json_t	*o = json_object(), *px = json_object(), *runs, *fail;
	char	*text, *out;
	size_t	 i;
	int	 r, t;

	json_object_set_new(o, "soak_plan", json_integer(PLAN_VERSION));
	if (p->config != NULL)
		json_object_set_new(o, "config", json_string(p->config));
	if (p->seed > (uint64_t)INT64_MAX) {
		char	s[24];

		snprintf(s, sizeof(s), "%" PRIu64, p->seed);
		json_object_set_new(o, "seed", json_string(s));
	} else
		json_object_set_new(o, "seed", json_integer((json_int_t)p->seed));
	json_object_set_new(o, "turns", json_integer(p->turns));
	json_object_set_new(o, "rounds", json_integer(p->rounds));
	if (p->runs != NULL) {
		runs = json_array();
		for (r = 0; r < p->rounds; r++)
			for (t = 0; t < p->turns; t++)
				if (p->runs[(size_t)r * (size_t)p->turns + (size_t)t])
					json_array_append_new(runs,
					    json_pack("[i, i]", r, t));
		json_object_set_new(o, "runs", runs);
	}
	for (i = 0; i < p->nproxies; i++)
		json_object_set_new(px, p->proxies[i].name,
		    proxy_json(&p->proxies[i]));
	json_object_set_new(o, "proxies", px);
	if (p->fingerprint != NULL || p->message != NULL || p->reason != NULL ||
	    p->ninvariants > 0 || p->replay != NULL) {
		fail = json_object();
		if (p->fingerprint != NULL)
			json_object_set_new(fail, "fingerprint",
			    json_string(p->fingerprint));
		if (p->message != NULL)
			json_object_set_new(fail, "message", json_string(p->message));
		if (p->reason != NULL)
			json_object_set_new(fail, "reason", json_string(p->reason));
		if (p->ninvariants > 0) {
			json_t	*invs = json_array();

			for (i = 0; i < p->ninvariants; i++)
				json_array_append_new(invs, json_string(p->invariants[i]));
			json_object_set_new(fail, "invariants", invs);
		}
		if (p->replay != NULL)
			json_object_set_new(fail, "replay", json_string(p->replay));
		json_object_set_new(o, "failure", fail);
	}
	if (p->pinned_run != NULL || p->pinned_from != NULL ||
	    p->pinned_replaced != NULL) {
		json_t	*pin = json_object();

		if (p->pinned_run != NULL)
			json_object_set_new(pin, "run", json_string(p->pinned_run));
		if (p->pinned_from != NULL)
			json_object_set_new(pin, "from", json_string(p->pinned_from));
		if (p->pinned_replaced != NULL)
			json_object_set_new(pin, "replaced", json_string(p->pinned_replaced));
		json_object_set_new(o, "pinned", pin);
	}
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (text == NULL)
		abort();
	out = xasprintf("%s\n", text);
	free(text);
	return out;
}

int
plan_save(const struct plan *p, const char *path, char *err)
{
	char	*text = plan_dump(p), *tmp = xasprintf("%s.tmp", path);
	FILE	*f;
	int	 rc = -1;

	if ((f = fopen(tmp, "w")) == NULL) {
		errf(err, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (fputs(text, f) == EOF || fclose(f) != 0) {
		errf(err, "cannot write %s: %s", tmp, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) == -1) {
		errf(err, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	free(text);
	return rc;
}

/* ---- a trace's plan ---- */

static struct plan_proxy *
proxy_of(struct plan *p, const char *name)
{
	size_t	i;

	for (i = 0; i < p->nproxies; i++)
		if (strcmp(p->proxies[i].name, name) == 0)
			return &p->proxies[i];
	p->proxies = xreallocarray(p->proxies, p->nproxies + 1, sizeof(*p->proxies));
	memset(&p->proxies[p->nproxies], 0, sizeof(p->proxies[0]));
	p->proxies[p->nproxies].name = xstrdup(name);
	return &p->proxies[p->nproxies++];
}

/* A scheduled step of a trace, until the steps are sorted. */
struct tstep {
	size_t			 proxy;		/* index in plan.proxies */
	uint64_t		 step;
	struct plan_step	 s;
};

struct tsteps {
	struct tstep	*v;
	size_t		 n, cap;
};

static int
by_step(const void *a, const void *b)
{
	const struct tstep	*x = a, *y = b;

	if (x->proxy != y->proxy)
		return x->proxy < y->proxy ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

static void
add_fault(struct plan_proxy *x, const struct plan_fault_rec *f)
{
	x->faults = xreallocarray(x->faults, x->nfaults + 1, sizeof(*f));
	x->faults[x->nfaults++] = *f;
}

/* One trace record into p; its scheduled step, if any, into ts. */
static int
trace_rec(struct plan *p, json_t *o, int line, struct tsteps *ts, char *err)
{
	struct trace_line	 l;
	const char		*what, *model;
	struct plan_proxy	*x;
	struct plan_fault_rec	 f;
	struct tstep		*t;
	enum plan_fault		 k = PLAN_NONE;
	char			 why[ERR_LEN];
	json_int_t		 alt = json_integer_value(json_object_get(o, "alt"));

	if (trace_line_parse(o, &l, why) == -1)
		return errf(err, "line %d: %s", line, why);
	what = l.sql != NULL ? l.sql : l.req;
	/* A service's exchange (fault-proxy/proxy.h): its faults stay the
	 * seed's under a plan too; a step it took at a gate, as the turn it
	 * served (docs/faults.md "Services under a schedule"), is the plan's
	 * like a turn's own.  One that passed unheld has its actor index past
	 * the turns, and no step. */
	if (l.service != NULL && (l.step == 0 || l.turn >= p->turns))
		return 0;
	if (l.round >= p->rounds || l.turn >= p->turns)
		return errf(err, "line %d: round %d, turn %d out of the config's "
		    "%d x %d", line, l.round, l.turn, p->rounds, p->turns);
	/* close_after is a stream fault, not a decision: none here */
	if (l.fault < (enum fault)PLAN_FAULT_MAX && l.service == NULL)
		k = (enum plan_fault)l.fault;
	if (k == PLAN_BLACKHOLE) {
		/* occ: the connection's number among the turn's in the round */
		f = (struct plan_fault_rec){ .round = l.round, .turn = l.turn,
		    .occ = l.occ, .fault = PLAN_BLACKHOLE };
		add_fault(proxy_of(p, l.proxy), &f);
		return 0;
	}
	if (!l.keyed)
		return 0;	/* an exchange not keyed: never planned */
	if ((k == PLAN_STATUS && l.status < 400) || ((k == PLAN_STREAM_CUT ||
	    k == PLAN_STREAM_STALL) && l.after == 0))
		return errf(err, "line %d: a %s fault without its %s", line,
		    fault_name(l.fault), k == PLAN_STATUS ? "error status" :
		    "events (after)");
	x = proxy_of(p, l.proxy);
	if (alt < 0 || alt > 1000)
		alt = 0;
	if (l.key != 0 && l.service == NULL &&
	    (k != PLAN_NONE || l.latency_ms > 0 || alt > 0)) {
		/* a stand-in's answer says which pattern it was, for people */
		model = json_string_value(json_object_get(o, "model"));
		f = (struct plan_fault_rec){ .round = l.round, .turn = l.turn,
		    .key = l.key, .occ = l.occ, .fault = k, .latency_ms = l.latency_ms,
		    .status = k == PLAN_STATUS ? l.status : 0,
		    .after = k == PLAN_STREAM_CUT || k == PLAN_STREAM_STALL ?
		    l.after : 0, .stall_ms = k == PLAN_STREAM_STALL ? l.stall_ms : 0,
		    .reply = (uint32_t)alt, .what = what == NULL ? NULL : model ?
		    xasprintf("%s: %s", what, model) : xstrdup(what) };
		add_fault(x, &f);
	}
	if (l.step == 0)
		return 0;
	if (ts->n == ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 64;
		ts->v = xreallocarray(ts->v, ts->cap, sizeof(*ts->v));
	}
	t = &ts->v[ts->n++];
	*t = (struct tstep){ .proxy = (size_t)(x - p->proxies), .step = l.step,
	    .s = { .round = l.round, .turn = l.turn, .lane = l.lane, .key = l.key,
	    .occ = l.occ,
	    .what = what ? xstrdup(what) : NULL, .has_cand = l.has_cand,
	    .cand = l.cand, .lock_wait = l.lock_wait, .waits_on = l.waits_on,
	    .deadlock = l.deadlock != TRACE_DEADLOCK_NONE ?
	    xstrdup(trace_deadlock_name(l.deadlock)) : NULL } };
	return 0;
}

int
plan_from_trace(const char *trace, size_t len, uint64_t seed, const char *config,
    int turns, int rounds, struct plan *p, char *err)
{
	const char	*q = trace, *end = trace + len, *nl;
	struct tsteps	 ts = { 0 };
	json_error_t	 je;
	json_t		*o;
	size_t		 i;
	int		 line = 0, rc = -1, keyed = 0, recs = 0;

	memset(p, 0, sizeof(*p));
	p->seed = seed;
	p->config = config ? xstrdup(config) : NULL;
	p->turns = turns;
	p->rounds = rounds;
	while (q < end) {
		nl = memchr(q, '\n', (size_t)(end - q));
		if (nl == NULL)
			nl = end;
		line++;
		if (nl == q) {
			q = nl + 1;
			continue;
		}
		if ((o = json_loadb(q, (size_t)(nl - q), 0, &je)) == NULL ||
		    !json_is_object(o)) {
			json_decref(o);
			errf(err, "line %d: not a JSON object", line);
			goto out;
		}
		q = nl + 1;
		recs++;
		keyed += json_is_string(json_object_get(o, "key"));
		if (trace_rec(p, o, line, &ts, err) == -1) {
			json_decref(o);
			goto out;
		}
		json_decref(o);
	}
	if (recs > 0 && keyed == 0) {
		errf(err, "the trace has no keys (written by a soak older than plans)");
		goto out;
	}
	/* every proxy's steps in the order they were admitted */
	if (ts.n > 1)
		qsort(ts.v, ts.n, sizeof(*ts.v), by_step);
	for (i = 0; i < ts.n; i++) {
		struct plan_proxy	*x = &p->proxies[ts.v[i].proxy];

		x->steps = xreallocarray(x->steps, x->nsteps + 1, sizeof(*x->steps));
		x->steps[x->nsteps++] = ts.v[i].s;
		ts.v[i].s.what = ts.v[i].s.deadlock = NULL;
	}
	rc = 0;
out:
	for (i = 0; i < ts.n; i++) {
		free(ts.v[i].s.what);
		free(ts.v[i].s.deadlock);
	}
	free(ts.v);
	if (rc == -1)
		plan_free(p);
	return rc;
}

bool
plan_runs(const struct plan *p, int round, int turn)
{
	if (p == NULL)
		return true;
	if (round < 0 || round >= p->rounds || turn < 0 || turn >= p->turns)
		return false;
	return p->runs == NULL ||
	    p->runs[(size_t)round * (size_t)p->turns + (size_t)turn];
}

int
plan_fits(const struct plan *p, const struct cfg *cfg, char *err)
{
	size_t	i, j;

	if (p->turns > cfg->turns || p->rounds > cfg->rounds)
		return errf(err, "the plan is of %d turns x %d rounds; %s has %d x "
		    "%d", p->turns, p->rounds, cfg->name, cfg->turns, cfg->rounds);
	for (i = 0; i < p->nproxies; i++) {
		for (j = 0; j < cfg->nproxies; j++)
			if (strcmp(cfg->proxies[j].name, p->proxies[i].name) == 0)
				break;
		if (j == cfg->nproxies)
			return errf(err, "the plan has decisions for proxy %s, which "
			    "%s does not have", p->proxies[i].name, cfg->name);
		if (p->proxies[i].nsteps > 0 && !cfg->proxies[j].schedule.enabled)
			return errf(err, "the plan schedules proxy %s, which has no "
			    "schedule: in %s", p->proxies[i].name, cfg->name);
	}
	return 0;
}

int
plan_check(const json_t *o, const struct cfg *cfg, uint64_t seed, const char *what,
    struct plan *out, char *err)
{
	struct plan	 p = { 0 };
	char		*text = json_is_object(o) ? json_dumps(o, JSON_COMPACT) : NULL;
	int		 rc;

	if (text == NULL)
		return errf(err, "%s is not a JSON object", what);
	rc = plan_parse(text, strlen(text), what, &p, err);
	free(text);
	if (rc == 0 && p.seed != seed)
		rc = errf(err, "%s is of seed %" PRIu64 ", not %" PRIu64, what, p.seed,
		    seed);
	if (rc == 0)
		rc = plan_fits(&p, cfg, err);
	if (rc == 0 && out != NULL)
		*out = p;
	else
		plan_free(&p);
	return rc;
}

int
plan_turns_in(const struct plan *p, int round)
{
	int	t, n = 0;

	for (t = 0; t < (p ? p->turns : 0); t++)
		n += plan_runs(p, round, t);
	return n;
}

bool
plan_runs_any(const struct plan *p)
{
	int	r;

	for (r = 0; p != NULL && r < p->rounds; r++)
		if (plan_turns_in(p, r) > 0)
			return true;
	return false;
}

const struct plan_proxy *
plan_proxy(const struct plan *p, const char *name)
{
	size_t	i;

	for (i = 0; p != NULL && i < p->nproxies; i++)
		if (strcmp(p->proxies[i].name, name) == 0)
			return &p->proxies[i];
	return NULL;
}
