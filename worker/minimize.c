/*
 * soak minimize's engine (minimize.h, docs/minimize.md): the elements of a
 * plan, its candidates, ddmin, and the replays that judge them.
 */
#include "worker/minimize.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/seed.h"
#include "common/util.h"
#include "common/verdict.h"

static const char *const kind_names[MIN_KINDS] = {
	[MIN_ROUNDS] = "rounds", [MIN_RUNS] = "turns", [MIN_FAULTS] = "faults",
	[MIN_PREEMPTIONS] = "preemptions",
};

const char *
min_kind_name(enum min_kind k)
{
	return (size_t)k < MIN_KINDS ? kind_names[k] : "?";
}

/* The first step after i of turn t in i's round, or x->nsteps. */
static size_t
next_of(const struct plan_proxy *x, size_t i, int t)
{
	size_t	j;

	for (j = i + 1; j < x->nsteps && x->steps[j].round == x->steps[i].round; j++)
		if (x->steps[j].turn == t)
			return j;
	return x->nsteps;
}

/* Whether the plan switched away from the turn of step i - 1 at step i
 * while that turn had steps left in the round. */
static bool
is_switch(const struct plan_proxy *x, size_t i)
{
	const struct plan_step	*a, *b;

	if (i == 0 || i >= x->nsteps)
		return false;
	a = &x->steps[i - 1];
	b = &x->steps[i];
	return a->round == b->round && a->turn != b->turn &&
	    next_of(x, i - 1, a->turn) < x->nsteps;
}

bool
min_is_preemption(const struct plan_proxy *x, size_t i, int *preempted)
{
	const struct plan_step	*a, *b;

	if (!is_switch(x, i))
		return false;
	a = &x->steps[i - 1];
	b = &x->steps[i];
	if (preempted != NULL)
		*preempted = a->turn;
	if (b->has_cand)
		return a->turn < 64 && (b->cand >> a->turn & 1);
	return !a->lock_wait;
}

size_t
min_elems(const struct plan *p, enum min_kind k, struct min_elem **out)
{
	struct min_elem	*e = NULL;
	size_t		 n = 0, i, j;
	int		 r, t;

	*out = NULL;
	switch (k) {
	case MIN_ROUNDS:
		e = xcalloc((size_t)p->rounds + 1, sizeof(*e));
		for (r = 0; r < p->rounds; r++)
			if (plan_turns_in(p, r) > 0)
				e[n++] = (struct min_elem){ .kind = k, .round = r };
		break;
	case MIN_RUNS:
		e = xcalloc((size_t)p->rounds * (size_t)p->turns + 1, sizeof(*e));
		for (r = 0; r < p->rounds; r++)
			for (t = 0; t < p->turns; t++)
				if (plan_runs(p, r, t))
					e[n++] = (struct min_elem){ .kind = k,
					    .round = r, .turn = t };
		break;
	case MIN_FAULTS:
		for (i = 0; i < p->nproxies; i++)
			n += p->proxies[i].nfaults;
		e = xcalloc(n + 1, sizeof(*e));
		n = 0;
		for (i = 0; i < p->nproxies; i++)
			for (j = 0; j < p->proxies[i].nfaults; j++) {
				const struct plan_fault_rec	*f = &p->proxies[i].faults[j];

				e[n++] = (struct min_elem){ .kind = k, .round = f->round,
				    .turn = f->turn, .proxy = i, .index = j };
			}
		break;
	case MIN_PREEMPTIONS:
		for (i = 0; i < p->nproxies; i++)
			n += p->proxies[i].nsteps;
		e = xcalloc(n + 1, sizeof(*e));
		n = 0;
		for (i = 0; i < p->nproxies; i++)
			for (j = 0; j < p->proxies[i].nsteps; j++) {
				int	a;

				if (min_is_preemption(&p->proxies[i], j, &a))
					e[n++] = (struct min_elem){ .kind = k,
					    .round = p->proxies[i].steps[j].round,
					    .turn = p->proxies[i].steps[j].turn,
					    .proxy = i, .index = j, .preempted = a };
			}
		break;
	default:
		break;
	}
	if (n == 0) {
		free(e);
		return 0;
	}
	*out = e;
	return n;
}

void
min_counts(const struct plan *p, size_t n[MIN_KINDS])
{
	struct min_elem	*e;
	int		 k;

	for (k = 0; k < MIN_KINDS; k++) {
		n[k] = min_elems(p, (enum min_kind)k, &e);
		free(e);
	}
}

/*
 * x's steps in the order min_candidate (minimize.h) gives them when the
 * plan switches away from a turn only before the steps brk[] marks.
 */
static void
reschedule(struct plan_proxy *x, const bool *brk)
{
	struct plan_step	*v;
	size_t			*order, n = x->nsteps, k = 0, s0, s1, j;
	bool			*done, moved = false;

	if (n < 2)
		return;
	order = xcalloc(n, sizeof(*order));
	done = xcalloc(n, sizeof(*done));
	for (s0 = 0; s0 < n; s0 = s1) {
		int	last = -1;
		size_t	left;

		for (s1 = s0; s1 < n && x->steps[s1].round == x->steps[s0].round; s1++)
			;
		for (left = s1 - s0; left > 0; left--) {
			size_t	head = n, other = n, pick;

			for (j = s0; j < s1; j++) {
				if (done[j])
					continue;
				if (x->steps[j].turn == last) {
					if (head == n)
						head = j;
				} else if (other == n)
					other = j;
			}
			/* the turn goes on unless the plan switches away here
			 * and another turn has a step left */
			if (head < n && (!brk[head] || other == n))
				pick = head;
			else
				pick = other < n ? other : head;
			done[pick] = true;
			order[k++] = pick;
			last = x->steps[pick].turn;
		}
	}
	v = xcalloc(n, sizeof(*v));
	for (j = 0; j < n; j++) {
		v[j] = x->steps[order[j]];
		moved |= order[j] != j;
	}
	if (moved)
		for (j = 0; j < n; j++)
			v[j].has_cand = false, v[j].cand = 0;
	free(x->steps);
	x->steps = v;
	free(order);
	free(done);
}

void
min_candidate(const struct plan *p, enum min_kind k, const struct min_elem *e,
    size_t n, const bool *keep, struct plan *out)
{
	size_t	i, j, m, cells = (size_t)p->rounds * (size_t)p->turns;
	int	t;

	plan_copy(p, out);
	if (out->runs == NULL) {
		out->runs = xcalloc(cells, sizeof(*out->runs));
		for (i = 0; i < cells; i++)
			out->runs[i] = true;
	}
	for (i = 0; i < n; i++) {
		if (keep[i])
			continue;
		if (k == MIN_ROUNDS)
			for (t = 0; t < out->turns; t++)
				out->runs[(size_t)e[i].round * (size_t)out->turns +
				    (size_t)t] = false;
		else if (k == MIN_RUNS)
			out->runs[(size_t)e[i].round * (size_t)out->turns +
			    (size_t)e[i].turn] = false;
	}
	/* Without its preemptions: the switches the proxy keeps, by the step
	 * of the preempted turn that comes next. */
	if (k == MIN_PREEMPTIONS)
		for (i = 0; i < out->nproxies; i++) {
			struct plan_proxy	*x = &out->proxies[i];
			bool			*brk;
			size_t			 s;

			if (x->nsteps < 2)
				continue;
			brk = xcalloc(x->nsteps, sizeof(*brk));
			for (s = 1; s < x->nsteps; s++) {
				bool	 drop = false;

				if (!is_switch(x, s))
					continue;
				for (j = 0; j < n; j++)
					if (e[j].proxy == i && e[j].index == s && !keep[j])
						drop = true;
				if (!drop)
					brk[next_of(x, s - 1, x->steps[s - 1].turn)] = true;
			}
			reschedule(x, brk);
			free(brk);
		}
	/* A removed lost reply, reset, status or stream cut takes the retry
	 * it caused with it: the kept faults after it of the same turn and
	 * key come one occurrence earlier (minimize.h). */
	if (k == MIN_FAULTS)
		for (i = 0; i < n; i++) {
			const struct plan_fault_rec	*r;
			struct plan_proxy		*x = &out->proxies[e[i].proxy];

			r = &p->proxies[e[i].proxy].faults[e[i].index];
			if (keep[i] || (r->fault != PLAN_LOST_REPLY && r->fault !=
			    PLAN_RESET && r->fault != PLAN_STATUS && r->fault !=
			    PLAN_STREAM_CUT))
				continue;
			for (j = 0; j < x->nfaults; j++) {
				const struct plan_fault_rec	*f;

				f = &p->proxies[e[i].proxy].faults[j];
				if (f->fault != PLAN_BLACKHOLE && f->round == r->round &&
				    f->turn == r->turn && f->key == r->key && f->occ > r->occ)
					x->faults[j].occ--;
			}
		}
	/* Faults not kept, and every decision of a pair that does not run. */
	for (i = 0; i < out->nproxies; i++) {
		struct plan_proxy	*x = &out->proxies[i];

		for (j = m = 0; j < x->nfaults; j++) {
			bool	drop = !plan_runs(out, x->faults[j].round,
				    x->faults[j].turn);
			size_t	q;

			for (q = 0; k == MIN_FAULTS && !drop && q < n; q++)
				if (e[q].proxy == i && e[q].index == j && !keep[q])
					drop = true;
			if (drop)
				free(x->faults[j].what);
			else
				x->faults[m++] = x->faults[j];
		}
		x->nfaults = m;
		for (j = m = 0; j < x->nsteps; j++) {
			if (!plan_runs(out, x->steps[j].round, x->steps[j].turn)) {
				free(x->steps[j].what);
				free(x->steps[j].deadlock);
			} else
				x->steps[m++] = x->steps[j];
		}
		x->nsteps = m;
	}
}

/* keep[] := exactly the elements c[lo..hi), or all of c but those. */
static void
pick(bool *keep, size_t n, const size_t *c, size_t nc, size_t lo, size_t hi,
    bool complement)
{
	size_t	i;

	memset(keep, 0, n * sizeof(*keep));
	for (i = 0; i < nc; i++)
		keep[c[i]] = complement ? (i < lo || i >= hi) : (i >= lo && i < hi);
}

int
min_ddmin(size_t n, bool *keep, min_keep_test test, void *arg)
{
	size_t	*c = xcalloc(n + 1, sizeof(*c)), nc = 0, gran = 2, i, lo, hi;
	bool	*trial = xcalloc(n + 1, sizeof(*trial));
	int	 r, rc = 0;

	for (i = 0; i < n; i++)
		if (keep[i])
			c[nc++] = i;
	if (nc == 0)
		goto out;
	/* None of them at all: a failure may need none (two agents on one
	 * dispute need no fault). */
	pick(trial, n, c, nc, 0, 0, false);
	if ((r = test(trial, arg)) != 0) {
		if (r == 1)
			nc = 0, rc = 1;
		else
			rc = -1;
		goto out;
	}
	while (nc >= 2) {
		bool	found = false;

		if (gran > nc)
			gran = nc;
		/* a chunk alone (at two chunks, each is the other's complement,
		 * tried below) */
		for (i = 0; gran > 2 && i < gran && !found; i++) {
			lo = i * nc / gran;
			hi = (i + 1) * nc / gran;
			pick(trial, n, c, nc, lo, hi, false);
			if ((r = test(trial, arg)) == -1)
				goto stopped;
			if (r == 1) {
				memmove(c, c + lo, (hi - lo) * sizeof(*c));
				nc = hi - lo;
				gran = 2;
				found = true;
			}
		}
		/* all but a chunk */
		for (i = 0; i < gran && !found; i++) {
			lo = i * nc / gran;
			hi = (i + 1) * nc / gran;
			pick(trial, n, c, nc, lo, hi, true);
			if ((r = test(trial, arg)) == -1)
				goto stopped;
			if (r == 1) {
				memmove(c + lo, c + hi, (nc - hi) * sizeof(*c));
				nc -= hi - lo;
				gran = gran > 2 ? gran - 1 : 2;
				found = true;
			}
		}
		if (found) {
			rc = 1;
			continue;
		}
		if (gran >= nc)
			break;		/* every single removal was tried */
		gran = gran * 2 < nc ? gran * 2 : nc;
	}
	goto out;
stopped:
	rc = -1;
out:
	pick(keep, n, c, nc, 0, nc, false);
	free(c);
	free(trial);
	return rc;
}

uint64_t
min_plan_hash(const struct plan *p)
{
	char		*text = plan_dump(p);
	uint64_t	 h = fnv1a64(text, strlen(text));

	free(text);
	return h;
}

static bool
stopping(const struct min_run *m)
{
	return (m->stop != NULL && *m->stop) || now_ms() >= m->deadline_ms;
}

int
min_test(struct min_run *m, const struct plan *cand)
{
	uint64_t		 h;
	const struct plan	*was;
	struct seed_result	 res;
	size_t			 i;
	int			 try, fails = 0;

	if (!plan_runs_any(cand))
		return 0;
	h = min_plan_hash(cand);
	was = m->w->plan;
	for (i = 0; i < m->nseen; i++)
		if (m->seen[i].hash == h) {
			m->cached++;
			return m->seen[i].fails;
		}
	m->candidates++;
	m->w->plan = cand;
	for (try = 0; try < m->tries && fails == 0; try++) {
		char	*fp;

		if (stopping(m)) {
			m->w->plan = was;
			return -1;
		}
		memset(&res, 0, sizeof(res));
		if (m->replay != NULL)
			m->replay(m, cand, &res);
		else
			wrk_run_seed(m->w, cand->seed, 1, &res);
		m->replays++;
		fp = m->fingerprint(m->w->cfg, &res);
		if (fp != NULL && m->want != NULL && strcmp(fp, m->want) == 0) {
			fails = 1;
			m->disagreed += (size_t)try;
			seed_result_clear(&m->last);
			m->last = res;
			m->last_hash = h;
		} else {
			if (res.reason == REASON_DIVERGED)
				m->diverged++;
			else if (fp != NULL)
				m->other++;
			seed_result_clear(&res);
		}
		free(fp);
	}
	m->w->plan = was;
	m->seen = xreallocarray(m->seen, m->nseen + 1, sizeof(*m->seen));
	m->seen[m->nseen++] = (struct min_seen){ h, fails };
	return fails;
}

/* One kind's ddmin: its candidates are of the plan the kind started from. */
struct phase {
	struct min_run		*m;
	const struct plan	*base;
	enum min_kind		 kind;
	const struct min_elem	*e;
	size_t			 n;
	struct plan		*best;
};

static int
phase_test(const bool *keep, void *arg)
{
	struct phase	*ph = arg;
	struct plan	 cand;
	int		 r;

	min_candidate(ph->base, ph->kind, ph->e, ph->n, keep, &cand);
	if ((r = min_test(ph->m, &cand)) == 1) {
		/* ddmin goes on from every failing candidate: the best so far */
		plan_free(ph->best);
		*ph->best = cand;
		if (ph->m->accepted != NULL)
			ph->m->accepted(ph->m, ph->best, ph->m->arg);
		return 1;
	}
	plan_free(&cand);
	return r;
}

int
min_minimize(struct min_run *m, struct plan *best)
{
	bool	changed;
	int	k;

	do {
		changed = false;
		for (k = 0; k < MIN_KINDS; k++) {
			struct plan	 base;
			struct min_elem	*e;
			struct phase	 ph;
			bool		*keep;
			size_t		 n, i;
			int		 r;

			plan_copy(best, &base);
			if ((n = min_elems(&base, (enum min_kind)k, &e)) == 0) {
				plan_free(&base);
				continue;
			}
			keep = xcalloc(n, sizeof(*keep));
			for (i = 0; i < n; i++)
				keep[i] = true;
			ph = (struct phase){ m, &base, (enum min_kind)k, e, n, best };
			r = min_ddmin(n, keep, phase_test, &ph);
			free(keep);
			free(e);
			plan_free(&base);
			if (r == -1)
				return -1;
			changed |= r == 1;
		}
		m->passes++;
	} while (changed);
	return 0;
}

void
min_run_free(struct min_run *m)
{
	seed_result_clear(&m->last);
	free(m->seen);
	m->seen = NULL;
	m->nseen = 0;
}

/* ---- explain ---- */

static int
note(struct min_run *m, const struct plan *cand, enum min_kind k, size_t proxy,
    size_t index, const char *variant, int64_t lat, struct min_note **notes,
    size_t *n)
{
	size_t	div = m->diverged;
	int	r;

	if ((r = min_test(m, cand)) == -1)
		return -1;
	*notes = xreallocarray(*notes, *n + 1, sizeof(**notes));
	(*notes)[*n] = (struct min_note){ .kind = k, .proxy = proxy, .index = index,
	    .said = r == 1 ? MIN_STILL_FAILS : m->diverged > div ? MIN_DIVERGES :
	    MIN_PASSES, .latency_ms = lat };
	snprintf((*notes)[*n].variant, sizeof((*notes)[*n].variant), "%s", variant);
	(*n)++;
	return 0;
}

/* best with step i of proxy x moved k places later, past steps of other
 * turns of its round only: 1, else 0 (nothing tried). */
static int
moved(const struct plan *best, size_t x, size_t i, size_t k, struct plan *out)
{
	const struct plan_proxy	*px = &best->proxies[x];
	struct plan_step	 t;
	size_t			 q;

	for (q = i + 1; q <= i + k; q++)
		if (q >= px->nsteps || px->steps[q].round != px->steps[i].round ||
		    px->steps[q].turn == px->steps[i].turn)
			return 0;
	plan_copy(best, out);
	t = out->proxies[x].steps[i];
	memmove(&out->proxies[x].steps[i], &out->proxies[x].steps[i + 1],
	    k * sizeof(t));
	out->proxies[x].steps[i + k] = t;
	for (q = 0; q < out->proxies[x].nsteps; q++)
		out->proxies[x].steps[q].has_cand = false;
	return 1;
}

#define FAULT_VARIANTS	4

/*
 * What the explain phase tries a kept fault as (into alt, FAULT_VARIANTS
 * at most; returns how many): a lost reply, a reset or a duplicate as
 * the other two; a status as the other statuses of 429, 500 and 529; a
 * stream cut as a stall of 1 s at the same event, and one event later; a
 * stall as a cut at the same event, and half as long.
 */
static size_t
fault_variants(const struct plan_fault_rec *f, struct plan_fault_rec *alt)
{
	static const enum plan_fault	 kinds[] = { PLAN_LOST_REPLY, PLAN_RESET,
					    PLAN_DUPLICATE };
	static const int		 statuses[] = { 429, 500, 529 };
	size_t				 n = 0, k;

	switch (f->fault) {
	case PLAN_LOST_REPLY:
	case PLAN_RESET:
	case PLAN_DUPLICATE:
		for (k = 0; k < 3; k++)
			if (kinds[k] != f->fault)
				alt[n++] = (struct plan_fault_rec){ .fault = kinds[k] };
		break;
	case PLAN_STATUS:
		for (k = 0; k < 3; k++)
			if (statuses[k] != f->status)
				alt[n++] = (struct plan_fault_rec){ .fault = PLAN_STATUS,
				    .status = statuses[k] };
		break;
	case PLAN_STREAM_CUT:
		alt[n++] = (struct plan_fault_rec){ .fault = PLAN_STREAM_STALL,
		    .after = f->after, .stall_ms = 1000 };
		if (f->after < CFG_EVENTS_MAX)
			alt[n++] = (struct plan_fault_rec){ .fault = PLAN_STREAM_CUT,
			    .after = f->after + 1 };
		break;
	case PLAN_STREAM_STALL:
		alt[n++] = (struct plan_fault_rec){ .fault = PLAN_STREAM_CUT,
		    .after = f->after };
		if (f->stall_ms > 1)
			alt[n++] = (struct plan_fault_rec){ .fault = PLAN_STREAM_STALL,
			    .after = f->after, .stall_ms = f->stall_ms / 2 };
		break;
	case PLAN_NONE:
	case PLAN_BLACKHOLE:
	case PLAN_FAULT_MAX:
		break;
	}
	return n;
}

int
min_explain(struct min_run *m, const struct plan *best, int variants,
    struct min_note **notes, size_t *n)
{
	struct plan_fault_rec		 alt[FAULT_VARIANTS];
	struct seed_rng			 rng;
	struct plan			 c;
	char				 what[64];
	size_t				 x, i, k, nalt;
	int				 v;

	*notes = NULL;
	*n = 0;
	seed_rng_init(&rng, seed_derive(best->seed, 0x6578706c61696eull, 0));
	for (x = 0; x < best->nproxies; x++)
		for (i = 0; i < best->proxies[x].nfaults; i++) {
			const struct plan_fault_rec	*f = &best->proxies[x].faults[i];
			int64_t				 hi;

			if (f->fault == PLAN_BLACKHOLE)
				continue;
			/* a model's reply (docs/models.md): what the first one does */
			if (f->reply > 0) {
				plan_copy(best, &c);
				c.proxies[x].faults[i].reply = 0;
				snprintf(what, sizeof(what), "with the model's first reply");
				v = note(m, &c, MIN_FAULTS, x, i, what, -1, notes, n);
				plan_free(&c);
				if (v == -1)
					return -1;
				if (f->fault == PLAN_NONE && f->latency_ms == 0)
					continue;	/* its latency is not the point */
			}
			nalt = fault_variants(f, alt);
			for (k = 0; k < nalt; k++) {
				char	words[48];

				plan_copy(best, &c);
				c.proxies[x].faults[i].fault = alt[k].fault;
				c.proxies[x].faults[i].status = alt[k].status;
				c.proxies[x].faults[i].after = alt[k].after;
				c.proxies[x].faults[i].stall_ms = alt[k].stall_ms;
				snprintf(what, sizeof(what), "as %s",
				    plan_fault_words(&alt[k], words, sizeof(words)));
				v = note(m, &c, MIN_FAULTS, x, i, what, -1, notes, n);
				plan_free(&c);
				if (v == -1)
					return -1;
			}
			/* its latency: none, then values drawn up to twice its own */
			hi = f->latency_ms > 25 ? 2 * f->latency_ms : 50;
			for (v = 0; v < variants; v++) {
				int64_t	lat = v == 0 ? 0 : 1 + (int64_t)seed_rng_below(&rng,
					    (uint64_t)hi);
				int	r;

				if (lat == f->latency_ms || (lat == 0 && f->fault == PLAN_NONE))
					continue;
				plan_copy(best, &c);
				c.proxies[x].faults[i].latency_ms = lat;
				snprintf(what, sizeof(what), "latency %lld ms", (long long)lat);
				r = note(m, &c, MIN_FAULTS, x, i, what, lat, notes, n);
				plan_free(&c);
				if (r == -1)
					return -1;
			}
		}
	/* each step later and later, until it no longer fails there */
	for (x = 0; x < best->nproxies; x++)
		for (i = 0; i < best->proxies[x].nsteps; i++)
			for (k = 1; k <= (size_t)variants && moved(best, x, i, k, &c); k++) {
				snprintf(what, sizeof(what), "%zu later", k);
				v = note(m, &c, MIN_PREEMPTIONS, x, i, what, (int64_t)k,
				    notes, n);
				plan_free(&c);
				if (v == -1)
					return -1;
				if ((*notes)[*n - 1].said != MIN_STILL_FAILS)
					break;
			}
	return 0;
}
