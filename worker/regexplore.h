/*
 * A regression whose plan diverged, judged by what the plan was about
 * (docs/plan.md "When a regression's plan diverges"): a regression means
 * "this bug stays fixed", and a fix that changes a statement the plan
 * names (or adds one of the same key, which shifts the occurrences) makes
 * the plan's next step never come.  Then, on the worker that holds the
 * regression's lease, the explorer (worker/explore.h) runs the plan's
 * turns and rounds in every order within the plan's own preemptions, from
 * the plan's seed and with the plan's faults, up to the config's
 * regressions_explore_budget executions:
 *
 *  - complete (the tree exhausted for the bound, every execution exact)
 *    and no schedule fails: the regression passes;
 *  - a schedule fails: the regression fails, with that schedule as its
 *    plan (detail "plan": failures/regression-NAME/plan.json);
 *  - anything else (the budget ran out, executions were not exact or
 *    broke, nothing to explore, no execution can be exact): neither.  It
 *    stays infra/diverged, as a diverged regression was before, with
 *    why: the exploration is incomplete, so it proved nothing either way,
 *    and infra is what "this seed could not test it" already means (exit
 *    2, a junit error).
 *
 * The bound is the plan's preemptions at its scheduled proxy
 * (rx_preemptions: min_is_preemption's rule, worker/minimize.h).  A
 * preemption bound turns the explorer's reduction off (docs/explore.md
 * "Reduction"), so every schedule within it runs.
 *
 * The result (the seed_result's detail) keeps "diverged" (the proxy's
 * own account) and adds "explored" (rx_explored_json's form, small, so a
 * detail cut to its summary keeps it) and, for a pass, "refresh": the
 * explored schedule closest to the plan's own order, as a plan that
 * `soak pin RUN --refresh NAME` pins.
 */
#ifndef SOAK_WORKER_REGEXPLORE_H
#define SOAK_WORKER_REGEXPLORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/plan.h"
#include "worker/wrk.h"
#include "worker/xexec.h"

/*
 * The preemptions of pp's steps (min_is_preemption: a switch away from a
 * turn that has a later step in the round and was waiting: its bit in the
 * step's cand, or, for a step without cand, unless the turn's step before
 * waited on a lock).  *from_cand: whether every switch was read from cand
 * (false: at least one was counted from the order alone).
 */
int	rx_preemptions(const struct plan_proxy *pp, bool *from_cand);
/* The turns (bit t) of p that run in any round (its runs; all without). */
uint64_t rx_turns(const struct plan *p);

/*
 * How a diverged run differs from its plan, turn by turn: each turn's
 * exchanges at the scheduled proxy, in order, against the plan's steps of
 * that turn, by key.  The first turn (by the plan's step number) whose
 * sequence differs is the one named.
 */
enum rx_kind {
	RX_NONE,	/* every turn sent what the plan names: the order moved */
	RX_CHANGED,	/* turn sent another exchange where the plan has one */
	RX_ENDED,	/* turn sent fewer: the plan's step never came */
};

struct rx_divergence {
	enum rx_kind	 kind;
	size_t		 step;		/* the plan's step (1-based), or 0 */
	int		 turn, round;
	uint64_t	 others;	/* the other turns whose statements
					   changed (bit t) */
	char		 wanted[96];	/* the plan's statement there */
	char		 came[96];	/* RX_CHANGED: the run's instead */
};

/*
 * d from pp (the plan's steps at the proxy) and the diverged run's steps
 * there (its record's, in step order).
 */
void	rx_divergence(const struct plan_proxy *pp, const struct xstep *run, size_t n,
	    struct rx_divergence *d);
/* "turn 1's statements changed at step 4", for a sentence (buf). */
const char *rx_divergence_words(const struct rx_divergence *d, char *buf, size_t len);

/*
 * The regression whose plan p diverged (res: its run, infra/diverged,
 * with its whole trace: w->whole_trace) judged by exploring, as the
 * header says; res is replaced by the verdict.  name is the regression's
 * (its failing executions are kept under w->keep_dir/regression-NAME);
 * stop a signal's number when the worker is told to stop (the verdict is
 * then infra/worker-lost, retried elsewhere).  w is open.
 */
void	wrk_regress_explore(struct wrk *w, const struct plan *p, const char *name,
	    volatile sig_atomic_t *stop, struct seed_result *res);

#endif
