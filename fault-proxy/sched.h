/*
 * A seeded scheduler for exchanges at the database seam (docs/faults.md
 * "Schedules"):
 * which turn's pending exchange is admitted next, as a pure function of
 * (seed, proxy name, the sequence of ready sets it was shown).
 *
 * Two modes:
 *
 *  - random: uniform among the ready turns, one draw per step.
 *  - pct: probabilistic concurrency testing (Burckhardt, Kothari,
 *    Musuvathi, Nagarakatte, "A Randomized Scheduler with Probabilistic
 *    Guarantees of Finding Bugs", ASPLOS 2010).  Each of the n turns gets
 *    a distinct initial priority from d .. d+n-1 in seeded random order;
 *    d-1 change points k_1 .. k_{d-1} are drawn uniformly from 1 .. k (k:
 *    the bound on steps per seed), independently.  At every step the ready
 *    turn of highest priority goes; when the step number is k_j, the turn
 *    that went has its priority lowered to j, below every initial one.  A bug that
 *    needs d ordering constraints among n turns within k steps is then hit
 *    with probability at least 1/(n * k^(d-1)) per seed.
 *
 * The engine calls sched_pick() once per admission with the set of turns
 * that have an exchange waiting; the step it returns is the trace's `step`.
 * Nothing here reads a clock or does I/O.
 */
#ifndef SOAK_SCHED_H
#define SOAK_SCHED_H

#include <stdbool.h>
#include <stdint.h>

enum sched_mode { SCHED_PCT, SCHED_RANDOM };

#define SCHED_MAX_TURNS	1024		/* cfg turns' upper bound */
#define SCHED_MAX_DEPTH	16

struct sched;

/*
 * n turns; depth d >= 1 (pct; d = 1 is plain random priorities, no change
 * point); k >= 1 the bound on steps used to place change points.  NULL
 * when an argument is out of range.
 */
struct sched	*sched_new(enum sched_mode mode, uint64_t seed, const char *name,
		    int nturns, int depth, uint32_t k);
void		 sched_free(struct sched *s);

/*
 * ready[t] for each of the n turns: whether turn t has an exchange
 * waiting.  Returns the turn to admit and counts a step (1, 2, ...), or -1
 * when none is ready (no step is counted).
 */
int		 sched_pick(struct sched *s, const bool *ready);
/* Steps taken so far: the step number of the last pick. */
uint32_t	 sched_steps(const struct sched *s);
/* pct: turn t's priority now (for the trace and tests); random: 0. */
int		 sched_priority(const struct sched *s, int turn);
/* pct: the j-th change point (lowers to j+1), 0 <= j < depth-1; else 0. */
uint32_t	 sched_change_point(const struct sched *s, int j);

#endif
