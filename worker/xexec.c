/*
 * One execution of soak explore, and its record (worker/xexec.h).
 */
#include "worker/xexec.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/trace.h"
#include "common/util.h"

static int
cmp_line_step(const void *a, const void *b)
{
	const json_t	*x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t	 i = json_integer_value(json_object_get(x, "step"));
	json_int_t	 j = json_integer_value(json_object_get(y, "step"));

	return i < j ? -1 : i > j;
}

/* A step's flags from its trace line (struct xstep.flags). */
static uint8_t
step_flags(const struct trace_line *l, const char *what)
{
	uint8_t	f = 0;

	if (l->forced != NULL && l->forced[0] != '\0')
		f |= XS_FORCED;
	if (l->deadlock == TRACE_DEADLOCK_POSTGRES)
		f |= XS_PG_DEADLOCK;
	else if (l->deadlock == TRACE_DEADLOCK_SOAK)
		f |= XS_SOAK_DEADLOCK;
	if (__builtin_popcountll(l->wakes) >= 2)
		f |= XS_WAKES;
	if (what != NULL && (strncasecmp(what, "LISTEN", 6) == 0 ||
	    strncasecmp(what, "NOTIFY", 6) == 0))
		f |= XS_NOTIFY;
	if (l->served_forced)
		f |= XS_FORCED;
	if (l->pg == NULL && !l->served)
		f |= XS_SERVICE;
	return f;
}

/*
 * The steps proxy took in one execution's whole trace, in step order, and
 * the turns whose connections overlapped there (x->overlap).  -1 when a
 * step line lacks what a step needs, or there are more than XP_MAX_STEPS
 * (err).
 */
static int
trace_steps(const char *trace, size_t len, const char *proxy, struct xstep **out,
    size_t *nout, struct xinexact *x, char *err)
{
	const char	*p = trace, *end = trace + len, *nl;
	json_t		**lines = NULL;
	size_t		 n = 0, cap = 0, i;
	int		 rc = 0;

	*out = NULL;
	*nout = 0;
	for (; p < end; p = nl + 1) {
		json_t		*j;
		json_int_t	 t;

		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		j = nl > p ? json_loadb(p, (size_t)(nl - p), 0, NULL) : NULL;
		if (j != NULL && (json_is_true(json_object_get(j, "bypass")) ||
		    (json_is_string(json_object_get(j, "served")) &&
		    strcmp(json_string_value(json_object_get(j, "served")),
		    "arrival") == 0)))
			x->unordered++;
		if (j != NULL && json_is_string(json_object_get(j, "proxy")) &&
		    strcmp(json_string_value(json_object_get(j, "proxy")), proxy) == 0) {
			t = json_integer_value(json_object_get(j, "turn"));
			if (t >= 0 && t < XP_MAX_TURNS &&
			    json_is_true(json_object_get(j, "overlap")))
				x->overlap |= (uint64_t)1 << t;
			if (json_integer_value(json_object_get(j, "step")) > 0 &&
			    rc == 0) {
				if (n == XP_MAX_STEPS)
					rc = errf(err, "more than %d steps at proxy %s (the "
					    "most a record holds)", XP_MAX_STEPS, proxy);
				else {
					if (n == cap) {
						cap = cap ? cap * 2 : 64;
						lines = xreallocarray(lines, cap,
						    sizeof(*lines));
					}
					lines[n++] = j;
					j = NULL;
				}
			}
		}
		json_decref(j);
		if (nl == end)
			break;
	}
	if (n > 0)	/* qsort(NULL, 0) is undefined */
		qsort(lines, n, sizeof(*lines), cmp_line_step);
	*out = xcalloc(n + 1, sizeof(**out));
	for (i = 0; i < n && rc == 0; i++) {
		struct xstep		*s = &(*out)[i];
		struct trace_line	 l;
		const char		*w, *c;
		char			 why[ERR_LEN];

		/* the trace's own decoder (common/trace.h): a field soak did
		 * not write is an error, never a 0 */
		if (trace_line_parse(lines[i], &l, why) == -1) {
			rc = errf(err, "step %" JSON_INTEGER_FORMAT " of proxy %s: %s",
			    json_integer_value(json_object_get(lines[i], "step")), proxy,
			    why);
			break;
		}
		if (!l.keyed || l.turn >= XP_MAX_TURNS) {
			rc = errf(err, "step %" PRIu32 " of proxy %s %s", l.step, proxy,
			    !l.keyed ? "has no key (a trace of an older soak?)" :
			    "is of a turn past the 64 explore takes");
			break;
		}
		s->turn = l.turn;
		s->round = l.round;
		s->occ = l.occ;
		s->cand = l.cand;
		s->key = l.key;
		c = l.cls;
		s->cls = c == NULL ? XC_OTHER : strcmp(c, "read") == 0 ? XC_READ :
		    strcmp(c, "begin") == 0 ? XC_BEGIN : strcmp(c, "session") == 0 ?
		    XC_SESSION : XC_OTHER;
		w = l.sql != NULL ? l.sql : l.req;
		xp_step_what(s, w);
		s->flags = step_flags(&l, w);
	}
	for (i = 0; i < n; i++)
		json_decref(lines[i]);
	free(lines);
	if (rc == -1) {
		free(*out);
		*out = NULL;
		return -1;
	}
	*nout = n;
	return 0;
}

/*
 * How long the turns of one execution ran: per round, from the first
 * turn's start to the last one's end (a failing seed's detail lists its
 * turns, a passing one's timing does), summed.  What is left of the
 * execution is soak's own: the reset, the setup, spawning, the checks.
 */
static int64_t
turns_span_ms(const json_t *detail)
{
	const json_t	*turns = json_object_get(detail, "turns"), *o;
	int64_t		 lo[64], hi[64], sum = 0, a, b;
	size_t		 i;
	int		 r;
	bool		 rows = false;

	if (!json_is_array(turns)) {
		turns = json_object_get(json_object_get(detail, "timing"), "turns");
		rows = true;
	}
	for (r = 0; r < 64; r++)
		lo[r] = INT64_MAX, hi[r] = INT64_MIN;
	json_array_foreach(turns, i, o) {
		if (rows) {
			r = (int)json_integer_value(json_array_get(o, 0));
			a = json_integer_value(json_array_get(o, 2));
			b = json_integer_value(json_array_get(o, 3));
		} else {
			r = (int)json_integer_value(json_object_get(o, "round"));
			a = json_integer_value(json_object_get(o, "start_ms"));
			b = json_integer_value(json_object_get(o, "end_ms"));
		}
		if (r < 0 || r >= 64 || b < a)
			continue;
		lo[r] = a < lo[r] ? a : lo[r];
		hi[r] = b > hi[r] ? b : hi[r];
	}
	for (r = 0; r < 64; r++)
		if (hi[r] >= lo[r])
			sum += hi[r] - lo[r];
	return sum;
}

int64_t
xp_run_one(struct wrk *w, struct plan_proxy *pp, uint64_t seed, const struct xstep *steps,
    size_t n, uint64_t no, struct seed_result *res)
{
	char	keep[48];
	int64_t	te = now_ms();
	size_t	i;

	pp->steps = xcalloc(n + 1, sizeof(*pp->steps));
	for (i = 0; i < n; i++) {
		pp->steps[i].round = steps[i].round;
		pp->steps[i].turn = steps[i].turn;
		pp->steps[i].key = steps[i].key;
		pp->steps[i].occ = steps[i].occ;
		pp->steps[i].what = UNCONST(steps[i].what);	/* for the log */
	}
	pp->nsteps = n;
	snprintf(keep, sizeof(keep), "schedule-%" PRIu64, no);
	w->keep_name = keep;
	wrk_run_seed(w, seed, 1, res);
	w->keep_name = NULL;
	free(pp->steps);
	pp->steps = NULL;
	pp->nsteps = 0;
	return now_ms() - te;
}


void
xp_rec_of_result(const struct seed_result *res, const char *proxy, int64_t ms,
    struct xrec *r)
{
	memset(r, 0, sizeof(*r));
	r->verdict = res->verdict;
	r->reason = res->reason;
	snprintf(r->message, sizeof(r->message), "%s", res->message);
	r->ms = ms;
	r->turns_ms = turns_span_ms(res->detail);
	if (res->trace == NULL)
		snprintf(r->why_no_steps, sizeof(r->why_no_steps), "no trace");
	else if (trace_steps(res->trace, res->trace_len, proxy, &r->steps, &r->n,
	    &r->inexact, r->why_no_steps) == 0)
		r->has_steps = true;
	xp_rec_count(r);
	if (res->verdict == VERDICT_FAIL) {
		r->invariants = json_incref(json_object_get(res->detail, "invariants"));
		if (json_is_object(json_object_get(res->detail, "plan")))
			r->plan = json_deep_copy(json_object_get(res->detail, "plan"));
	}
}

void
xp_rec_count(struct xrec *r)
{
	size_t	i;

	r->inexact.forced = r->inexact.wakes = r->inexact.pg_deadlocks = 0;
	r->inexact.soak_deadlocks = r->inexact.notify = 0;
	for (i = 0; i < r->n; i++) {
		r->inexact.forced += (r->steps[i].flags & XS_FORCED) != 0;
		r->inexact.wakes += (r->steps[i].flags & XS_WAKES) != 0;
		r->inexact.pg_deadlocks += (r->steps[i].flags & XS_PG_DEADLOCK) != 0;
		r->inexact.soak_deadlocks += (r->steps[i].flags & XS_SOAK_DEADLOCK) != 0;
		r->inexact.notify += (r->steps[i].flags & XS_NOTIFY) != 0;
	}
}

void
xp_rec_clear(struct xrec *r)
{
	free(r->steps);
	json_decref(r->invariants);
	json_decref(r->plan);
	memset(r, 0, sizeof(*r));
}

void
xp_step_what(struct xstep *s, const char *w)
{
	if (w == NULL)
		w = "exchange";
	(void)utf8_cut(s->what, sizeof(s->what), w, strlen(w));
}

json_t *
xp_steps_json(const struct xstep *s, size_t n)
{
	json_t	*a = json_array(), *v;
	char	 key[24], cand[24];
	size_t	 i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%016" PRIx64, s[i].key);
		snprintf(cand, sizeof(cand), "%" PRIx64, s[i].cand);
		/* what is xp_step_what's, valid UTF-8: json_pack fails here
		 * only without memory, and a record must not lose a step
		 * quietly (json_array_append_new(NULL) is a silent no-op) */
		v = json_pack("[i,i,s,I,s,s,i,i]", s[i].round, s[i].turn, key,
		    (json_int_t)s[i].occ, s[i].what, cand, s[i].cls, s[i].flags);
		if (v == NULL || json_array_append_new(a, v) == -1)
			fatalx("step %zu of a record: cannot pack it", i + 1);
	}
	return a;
}

int
xp_steps_parse(const json_t *a, struct xstep **out, size_t *nout, char *err)
{
	const json_t	*v;
	size_t		 i, n = json_array_size(a);
	struct xstep	*s;

	*out = NULL;
	*nout = 0;
	if (!json_is_array(a))
		return errf(err, "steps: not a list");
	if (n > XP_MAX_STEPS)
		return errf(err, "steps: %zu, more than the %d a record may hold", n,
		    XP_MAX_STEPS);
	s = xcalloc(n + 1, sizeof(*s));
	json_array_foreach(a, i, v) {
		const char	*key = json_string_value(json_array_get(v, 2));
		const char	*w = json_string_value(json_array_get(v, 4));
		const char	*cand = json_string_value(json_array_get(v, 5));
		json_int_t	 t = json_integer_value(json_array_get(v, 1));
		json_int_t	 r = json_integer_value(json_array_get(v, 0));
		json_int_t	 occ = json_integer_value(json_array_get(v, 3));
		json_int_t	 cls = json_integer_value(json_array_get(v, 6));
		json_int_t	 fl = json_integer_value(json_array_get(v, 7));

		/* the trace's vocabulary (common/trace.h): a key of 16 hex
		 * digits, a set of turns of 1 to 16 */
		if (!json_is_array(v) || json_array_size(v) != 8 || key == NULL ||
		    trace_key_parse(key, &s[i].key) == -1 || t < 0 || t >= XP_MAX_TURNS ||
		    !json_is_integer(json_array_get(v, 0)) || r < 0 || r > INT_MAX ||
		    !json_is_integer(json_array_get(v, 3)) || occ < 0 ||
		    occ > UINT32_MAX || cand == NULL ||
		    trace_turns_parse(cand, &s[i].cand) == -1 ||
		    !json_is_integer(json_array_get(v, 6)) || cls < XC_OTHER ||
		    cls > XC_SESSION || !json_is_integer(json_array_get(v, 7)) ||
		    fl < 0 || fl > XS_ALL) {
			free(s);
			return errf(err, "steps: step %zu is not [round, turn, key, occ, "
			    "what, cand, cls, flags]", i + 1);
		}
		s[i].round = (int)r;
		s[i].turn = (int)t;
		s[i].occ = (uint32_t)occ;
		xp_step_what(&s[i], w);
		s[i].cls = (int)cls;
		s[i].flags = (uint8_t)fl;
	}
	*out = s;
	*nout = n;
	return 0;
}

json_t *
xp_rec_json(const struct xrec *r)
{
	char	 ov[24], msg[sizeof(r->message)], why[sizeof(r->why_no_steps)];
	json_t	*j;

	snprintf(ov, sizeof(ov), "%" PRIx64, r->inexact.overlap);
	/* the counts are for people reading a journal: xp_rec_parse counts
	 * the steps' flags again */
	j = json_pack("{s:i,s:i,s:s,s:s,s:I,s:I,s:{s:i,s:i,s:i,s:i,s:i,s:s}}",
	    "v", XP_REC_VERSION, "verdict", r->verdict, "reason",
	    reason_name(r->reason), "message", "", "ms", (json_int_t)r->ms,
	    "turns_ms", (json_int_t)r->turns_ms,
	    "inexact", "forced", (int)r->inexact.forced, "wakes", (int)r->inexact.wakes,
	    "postgres_deadlocks", (int)r->inexact.pg_deadlocks, "soak_deadlocks",
	    (int)r->inexact.soak_deadlocks, "notify", (int)r->inexact.notify,
	    "overlap", ov);
	json_object_set_new(json_object_get(j, "inexact"), "unordered",
	    json_integer((json_int_t)r->inexact.unordered));
	/* a message quotes the system's rows and statements: any bytes */
	snprintf(msg, sizeof(msg), "%s", r->message);
	utf8_scrub(msg, strlen(msg));
	json_object_set_new(j, "message", json_string(msg));
	if (r->has_steps)
		json_object_set_new(j, "steps", xp_steps_json(r->steps, r->n));
	else {
		/* cut by snprintf, or a sentence that quotes a trace's
		 * bytes: json_string() would refuse it, and the key vanish */
		snprintf(why, sizeof(why), "%s", r->why_no_steps);
		utf8_scrub(why, strlen(why));
		json_object_set_new(j, "no_steps", json_string(why));
	}
	if (r->invariants != NULL)
		json_object_set(j, "invariants", r->invariants);
	if (r->plan != NULL)
		json_object_set(j, "plan", r->plan);
	return j;
}

int
xp_rec_parse(const json_t *j, struct xrec *r, char *err)
{
	const char	*reason = json_string_value(json_object_get(j, "reason"));
	const char	*msg = json_string_value(json_object_get(j, "message"));
	const char	*ov = json_string_value(json_object_get(json_object_get(j,
			    "inexact"), "overlap"));
	const json_t	*steps;
	int		 why;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(j) || json_integer_value(json_object_get(j, "v")) !=
	    XP_REC_VERSION)
		return errf(err, "not an execution's record of this soak (\"v\": %d)",
		    XP_REC_VERSION);
	if (reason == NULL || (why = reason_parse(reason)) < 0 ||
	    !json_is_integer(json_object_get(j, "verdict")))
		return errf(err, "an execution's record without its verdict or reason");
	r->verdict = (int)json_integer_value(json_object_get(j, "verdict"));
	r->reason = (enum reason)why;
	if (!reason_valid(r->verdict, r->reason))
		return errf(err, "an execution's record: verdict %d with reason %s",
		    r->verdict, reason);
	if (ov == NULL || trace_turns_parse(ov, &r->inexact.overlap) == -1)
		return errf(err, "an execution's record without its overlapping turns");
	/* what the steps cannot say again: kept as sent (0 when absent) */
	{
		json_int_t	u = json_integer_value(json_object_get(
				    json_object_get(j, "inexact"), "unordered"));

		r->inexact.unordered = u > 0 && u < UINT32_MAX ? (uint32_t)u : 0;
	}
	snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "");
	r->ms = json_integer_value(json_object_get(j, "ms"));
	r->turns_ms = json_integer_value(json_object_get(j, "turns_ms"));
	if ((steps = json_object_get(j, "steps")) != NULL) {
		if (xp_steps_parse(steps, &r->steps, &r->n, err) == -1)
			return -1;
		r->has_steps = true;
	} else
		snprintf(r->why_no_steps, sizeof(r->why_no_steps), "%s",
		    json_string_value(json_object_get(j, "no_steps")) ?
		    json_string_value(json_object_get(j, "no_steps")) : "no steps");
	xp_rec_count(r);
	if (json_object_get(j, "invariants") != NULL &&
	    !json_is_null(json_object_get(j, "invariants")))
		r->invariants = json_incref(json_object_get(j, "invariants"));
	if (json_object_get(j, "plan") != NULL && !json_is_null(json_object_get(j, "plan"))) {
		if (!json_is_object(json_object_get(j, "plan"))) {
			xp_rec_clear(r);
			return errf(err, "an execution's record whose plan is not an object");
		}
		r->plan = json_incref(json_object_get(j, "plan"));
	}
	return 0;
}

struct plan_proxy *
xp_proxy_entry(struct plan *p, const char *proxy)
{
	size_t	i;

	for (i = 0; i < p->nproxies; i++)
		if (strcmp(p->proxies[i].name, proxy) == 0)
			return &p->proxies[i];
	p->proxies = xreallocarray(p->proxies, p->nproxies + 1, sizeof(*p->proxies));
	memset(&p->proxies[p->nproxies], 0, sizeof(p->proxies[p->nproxies]));
	p->proxies[p->nproxies].name = xstrdup(proxy);
	return &p->proxies[p->nproxies++];
}

void
xp_prefix_start(struct plan_proxy *pp)
{
	size_t	i;

	for (i = 0; i < pp->nsteps; i++)
		free(pp->steps[i].what), free(pp->steps[i].deadlock);
	free(pp->steps);
	pp->steps = NULL;
	pp->nsteps = 0;
	pp->prefix = true;
}

void
wrk_explore(struct wrk *w, uint64_t seed, const char *payload, struct seed_result *res)
{
	struct plan		 base = { 0 };
	struct plan_proxy	*pp = NULL;
	struct xstep		*steps = NULL;
	struct xrec		 rec;
	const struct plan	*was_plan = w->plan;
	bool			 was_whole = w->whole_trace, was_save = w->save_plan;
	json_t			*j = json_loads(payload, JSON_REJECT_DUPLICATES, NULL), *d;
	const char		*proxy = json_string_value(json_object_get(j, "proxy"));
	const char		*ptext = json_string_value(json_object_get(j, "plan"));
	char			 err[ERR_LEN];
	size_t			 n = 0;
	int64_t			 ms;

	memset(res, 0, sizeof(*res));
	if (proxy == NULL || ptext == NULL ||
	    plan_parse(ptext, strlen(ptext), "the explore lease's plan", &base, err) == -1 ||
	    xp_steps_parse(json_object_get(j, "steps"), &steps, &n, err) == -1) {
		if (proxy == NULL || ptext == NULL)
			errf(err, "an explore lease without its proxy or plan");
		goto bad;
	}
	pp = xp_proxy_entry(&base, proxy);
	xp_prefix_start(pp);
	w->plan = &base;
	w->whole_trace = true;
	w->save_plan = true;
	/* a failing one is kept as schedule-NO, NO the explorer's number */
	ms = xp_run_one(w, pp, seed, steps, n, (uint64_t)json_integer_value(
	    json_object_get(j, "no")), res);
	w->plan = was_plan;
	w->whole_trace = was_whole;
	w->save_plan = was_save;
	xp_rec_of_result(res, proxy, ms, &rec);
	d = json_pack("{s:o}", "explore", xp_rec_json(&rec));
	xp_rec_clear(&rec);
	json_decref(res->detail);
	res->detail = d;
	free(res->trace);
	res->trace = NULL;
	res->trace_len = 0;
	free(steps);
	plan_free(&base);
	json_decref(j);
	return;
bad:
	free(steps);
	plan_free(&base);
	json_decref(j);
	res->verdict = VERDICT_INFRA;
	res->reason = REASON_PLAN;
	snprintf(res->message, sizeof(res->message), "%s", err);
	res->detail = json_pack("{s:s}", "message", err);
}
