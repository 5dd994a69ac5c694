/*
 * The seeded exchange scheduler (sched.h).  Pure: every choice comes from
 * one splitmix64 stream keyed by (seed, proxy name), so a replay shown the
 * same ready sets makes the same choices.
 */
#include "fault-proxy/sched.h"

#include <stdlib.h>

#include "common/seed.h"
#include "common/util.h"

/* The stream's key: apart from the fault rolls' (seed ^ name, turn, ...). */
#define SCHED_KEY	0x5c4ed01eULL

struct sched {
	enum sched_mode	 mode;
	int		 nturns, depth;
	uint32_t	 step;
	uint32_t	 change[SCHED_MAX_DEPTH];	/* depth-1 steps, as drawn */
	int		*prio;				/* pct: per turn */
	struct seed_rng	 rng;
};

struct sched *
sched_new(enum sched_mode mode, uint64_t seed, const char *name, int nturns,
    int depth, uint32_t k)
{
	struct sched	*s;
	int		 i, j, t;

	if (nturns < 1 || nturns > SCHED_MAX_TURNS || depth < 1 ||
	    depth > SCHED_MAX_DEPTH || k < 1)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->mode = mode;
	s->nturns = nturns;
	s->depth = depth;
	seed_rng_init(&s->rng, seed_derive(seed ^ seed_str(name), SCHED_KEY,
	    (uint64_t)nturns << 32 | (uint32_t)depth));
	if (mode != SCHED_PCT)
		return s;
	/* Initial priorities d .. d+n-1 in a seeded order (Fisher-Yates). */
	s->prio = xcalloc((size_t)nturns, sizeof(*s->prio));
	for (i = 0; i < nturns; i++)
		s->prio[i] = depth + i;
	for (i = nturns - 1; i > 0; i--) {
		j = (int)seed_rng_below(&s->rng, (uint64_t)i + 1);
		t = s->prio[i];
		s->prio[i] = s->prio[j];
		s->prio[j] = t;
	}
	/*
	 * d-1 change points, each uniform in 1..k and independent (they may
	 * coincide); the j-th lowers to priority j+1.  As in the paper, not
	 * sorted: which lowered turn outranks which is part of the draw.
	 */
	for (i = 0; i < depth - 1; i++)
		s->change[i] = 1 + (uint32_t)seed_rng_below(&s->rng, k);
	return s;
}

void
sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	free(s->prio);
	free(s);
}

int
sched_pick(struct sched *s, const bool *ready)
{
	int	t, best = -1, nready = 0, j;
	uint64_t r;

	for (t = 0; t < s->nturns; t++)
		nready += ready[t] ? 1 : 0;
	if (nready == 0)
		return -1;
	s->step++;
	if (s->mode == SCHED_RANDOM) {
		r = seed_rng_below(&s->rng, (uint64_t)nready);
		for (t = 0; t < s->nturns; t++)
			if (ready[t] && r-- == 0)
				return t;
		return -1;	/* not reached */
	}
	for (t = 0; t < s->nturns; t++)
		if (ready[t] && (best == -1 || s->prio[t] > s->prio[best]))
			best = t;
	/*
	 * A change point at this step lowers the turn that goes now below
	 * every initial priority: to j+1 for the j-th (two at one step: the
	 * last wins).
	 */
	for (j = 0; j < s->depth - 1; j++)
		if (s->change[j] == s->step)
			s->prio[best] = j + 1;
	return best;
}

uint32_t
sched_steps(const struct sched *s)
{
	return s->step;
}

int
sched_priority(const struct sched *s, int turn)
{
	if (s->mode != SCHED_PCT || turn < 0 || turn >= s->nturns)
		return 0;
	return s->prio[turn];
}

uint32_t
sched_change_point(const struct sched *s, int j)
{
	if (s->mode != SCHED_PCT || j < 0 || j >= s->depth - 1)
		return 0;
	return s->change[j];
}
