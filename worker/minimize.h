/*
 * soak minimize's engine (docs/minimize.md): delta debugging (Zeller and
 * Hildebrandt's ddmin, TSE 2002) of a failing plan (docs/plan.md) to a
 * 1-minimal one -- removing any one element left makes the failure go away
 * -- over four kinds of element, in this order:
 *
 *	rounds		every (round, turn) pair of the round
 *	turns		(round, turn) pairs (the plan's runs): a removed one is
 *			never started and never waited for; its faults and
 *			steps go with it
 *	faults		one record of a proxy's faults: its exchange behaves as
 *			`none`; a removed lost reply, reset, status or stream
 *			cut takes the retry it caused with it (the kept faults
 *			after it of the same turn and key come one occurrence
 *			earlier)
 *	preemptions	of a scheduled proxy (min_is_preemption): removing one
 *			lets the preempted turn go on (min_candidate)
 *
 * and again, kind by kind, until a whole pass removes nothing: that last
 * pass tried every single removal, so the result is 1-minimal over all
 * four (as far as the tries saw: a candidate is one run of real processes,
 * and a failure of concurrency need not come every time).
 *
 * Candidates are replayed in this process, against the worker's one
 * database, through wrk_run_seed with w->plan -- the path `soak replay
 * --plan` takes -- never a `soak replay` process each.  A candidate fails
 * only with the original's fingerprint; it is run up to `tries` times and
 * fails if any try does.  Identical candidates (the same plan text) are
 * run once.
 */
#ifndef SOAK_MINIMIZE_H
#define SOAK_MINIMIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/plan.h"
#include "worker/wrk.h"

enum min_kind { MIN_ROUNDS, MIN_RUNS, MIN_FAULTS, MIN_PREEMPTIONS, MIN_KINDS };
/* "rounds", "turns", "faults", "preemptions" */
const char	*min_kind_name(enum min_kind k);

/* One element of a plan, of its kind. */
struct min_elem {
	enum min_kind	 kind;
	int		 round, turn;	/* rounds: the round; else the pair's */
	size_t		 proxy;		/* faults, preemptions: the plan's proxy */
	size_t		 index;		/* faults: in proxies[proxy].faults;
					   preemptions: the step of the switch
					   in proxies[proxy].steps */
	int		 preempted;	/* preemptions: the turn not chosen */
};

/*
 * Whether step i of x is a preemption: the step before it (i - 1, of the
 * same round) was turn A's, step i is another turn's, A has a later step
 * in the round, and A was still waiting -- its bit in step i's cand when
 * the plan has it, else inferred: A's step i - 1 did not wait on a lock
 * (a turn blocked on a lock is not passed over, it cannot go).  *preempted
 * (may be NULL) is A.
 */
bool	min_is_preemption(const struct plan_proxy *x, size_t i, int *preempted);
/* The elements of kind k of p, in plan order (*out heap, NULL for 0). */
size_t	min_elems(const struct plan *p, enum min_kind k, struct min_elem **out);
/* How many of each kind p has. */
void	min_counts(const struct plan *p, size_t n[MIN_KINDS]);
/*
 * The candidate of p that keeps the elements e[i] (n of them, all of kind
 * k, from min_elems(p, k)) with keep[i], into *out (plan_free it): the
 * runs, faults and steps of the pairs that no longer run are dropped.
 * Without some of its preemptions a scheduled proxy's steps are
 * re-ordered: within each round the steps go in their order, except that
 * the turn of the step just made goes on with its own next step unless
 * the plan switched away from it there and that switch is kept (a kept
 * preemption, or a switch that was no preemption: the turn was blocked);
 * at a switch the earliest step left of another turn goes.  Keeping every
 * element gives p's own order.  A re-ordered proxy's steps lose their
 * cand (it was of the old order).  O(steps^2) per round: plans have
 * hundreds of steps, not millions.
 */
void	min_candidate(const struct plan *p, enum min_kind k,
	    const struct min_elem *e, size_t n, const bool *keep, struct plan *out);

/*
 * ddmin over n elements: keep[] in (the elements to start from) and out
 * (a 1-minimal subset of them under test).  test(keep, arg) says whether
 * the candidate of a subset fails: 1 it does (ddmin then goes on from
 * it), 0 it does not, -1 stop (keep holds the smallest failing subset so
 * far).  The empty subset is tried first: a failure may need none of
 * them.  Returns 1 it removed something, 0 not, -1 stopped.
 */
typedef int	(*min_keep_test)(const bool *keep, void *arg);
int	min_ddmin(size_t n, bool *keep, min_keep_test test, void *arg);

/* A candidate's replays, remembered by the hash of its plan text. */
struct min_seen {
	uint64_t	 hash;
	int		 fails;
};

/* A minimization: the caller fills the first part, min_minimize the rest. */
struct min_run {
	struct wrk		*w;		/* opened; w->plan is set per try */
	/* The fingerprint of a failing result (heap), NULL for any other
	 * verdict: the caller's (the rule lives above the worker) */
	char			*(*fingerprint)(const struct cfg *cfg,
				    const struct seed_result *res);
	char			*want;		/* the original's fingerprint */
	/* One try of cand into *res: NULL runs it in w (wrk_run_seed with
	 * w->plan = cand, what soak does); set, a unit test's stand-in for
	 * the processes, so the search itself can be checked */
	void			(*replay)(struct min_run *m,
				    const struct plan *cand, struct seed_result *res);
	int			 tries;		/* per candidate, >= 1 */
	int64_t			 deadline_ms;	/* --budget: a now_ms() instant */
	volatile sig_atomic_t	*stop;		/* set by a signal: stop */
	/* After each accepted reduction, best being the new plan. */
	void			(*accepted)(struct min_run *m,
				    const struct plan *best, void *arg);
	void			*arg;

	int64_t			 started_ms;
	size_t			 replays;	/* tries run */
	size_t			 candidates;	/* plans tried (not from memory) */
	size_t			 cached;	/* plans tried before: not run */
	size_t			 disagreed;	/* tries that passed before a later
						   try of their plan failed */
	size_t			 diverged;	/* tries that diverged */
	size_t			 other;		/* tries that failed otherwise */
	size_t			 passes;	/* whole passes over the kinds */
	/* The last try that failed as wanted, and the hash of its plan. */
	struct seed_result	 last;
	uint64_t		 last_hash;
	struct min_seen		*seen;
	size_t			 nseen;
};

/* The hash min_run remembers a plan by. */
uint64_t	min_plan_hash(const struct plan *p);
/*
 * Replays cand up to m->tries times: 1 one try failed with m->want
 * (m->last is that try), 0 none did, -1 the budget or a signal stopped
 * it (then nothing is remembered of it).  A cand that runs no turn is 0
 * unreplayed: it tests nothing, so it is never the failure (nor could it
 * be written down: a plan file runs at least one turn).
 */
int	min_test(struct min_run *m, const struct plan *cand);
/*
 * Minimizes *best (a plan that fails with m->want), in place: 0 it is
 * 1-minimal, -1 stopped by the budget or a signal (*best is the smallest
 * failing plan so far).
 */
int	min_minimize(struct min_run *m, struct plan *best);
void	min_run_free(struct min_run *m);

/*
 * Explain (Hypothesis's explain phase): what of a minimal plan does not
 * matter.  Each kept fault is tried as each other kind (lost reply, reset,
 * duplicate) and with `variants` latencies drawn from the plan's seed (0
 * first); each kept step of a schedule moved 1, 2, ... `variants` places
 * later, past other turns' steps of its round only, until it no longer
 * fails there ("2 later").  Each
 * variant is a candidate as any other (m->tries, the fingerprint).  One
 * note per variant into *notes (heap, *n of them); -1 stopped (the notes
 * so far are kept).
 */
enum min_said { MIN_STILL_FAILS, MIN_PASSES, MIN_DIVERGES };
struct min_note {
	enum min_kind	 kind;		/* MIN_FAULTS or MIN_PREEMPTIONS (a step) */
	size_t		 proxy, index;	/* the fault's, or the step's */
	char		 variant[64];	/* "as reset", "latency 37 ms", "2 later" */
	int64_t		 latency_ms;	/* a latency variant's; a step's places
					   later; else -1 */
	enum min_said	 said;
};
int	min_explain(struct min_run *m, const struct plan *best, int variants,
	    struct min_note **notes, size_t *n);

/* A candidate's time: twice the original's, and never under this. */
#define MIN_TIMEOUT_FLOOR_MS	3000

/*
 * The original, up to tries times: its first failing try's result (0), or
 * none failed (-1: *why says how it ended; a set *stop ends it early).
 */
int	min_original(struct wrk *w, uint64_t seed, int tries,
	    volatile sig_atomic_t *stop, struct seed_result *res, char *why,
	    size_t len);
/* The plan a failing run made of itself (its detail's "plan", which
 * w->save_plan or a failure asks for); -1 with err. */
int	min_plan_of(const struct seed_result *res, struct plan *p, char *err);
/* Explicit runs, no decision of a pair that does not run: the plan every
 * candidate is made from, in place. */
void	min_normalize(struct plan *best);
/* The plan every candidate is made from: the original's fingerprint and
 * message, normalized (min_normalize); its counts into n0. */
void	min_prepare(struct plan *best, const char *want, const char *message,
	    size_t n0[MIN_KINDS]);
/* A candidate's time: about twice the original's (a turn that waits on a
 * removed peer ends it as a hang), at least MIN_TIMEOUT_FLOOR_MS, at most
 * the config's seed_timeout. */
int64_t	min_candidate_ms(const struct cfg *cfg, int64_t orig_ms);
/* Whether m->last is a failing replay of best, replaying best once more
 * (the cache forgotten, no budget) when the last was another plan's. */
bool	min_replayed(struct min_run *m, const struct plan *best);
/* "turns 8 → 3, faults 12 → 2, preemptions 9 → 1, 41 replays, 23 s"
 * (rounds first when the config has more than one). */
void	min_counts_line(const struct min_run *m, const size_t n0[MIN_KINDS],
	    bool rounds, const struct plan *p, char *buf, size_t len);
/*
 * A minimize lease (tickets.minimize, docs/tickets.md): seed's failure
 * minimized in w, within budget_ms (0: none), each candidate up to tries
 * times; no explain phase.  *res: fail, with detail {"minimize": {outcome
 * "minimal" or "stopped", plan, story, counts, ...}, "invariants": those
 * of the minimal plan's replay}; pass ("no_failure": the seed, or its
 * plan, does not fail in tries); infra ("cannot": it diverged or ended
 * infra, or made no plan).  w's plan, keep folder and timeout are its
 * own again after.
 */
void	wrk_minimize(struct wrk *w, uint64_t seed, int tries, int64_t budget_ms,
	    char *(*fingerprint)(const struct cfg *, const struct seed_result *),
	    volatile sig_atomic_t *stop, struct seed_result *res);

/*
 * The story of plan p, told from res (its last failing replay, with the
 * whole trace): each turn that runs, its exchanges through the proxies
 * that are not scheduled with their faults in words, and its last output;
 * each scheduled proxy's steps in order, preemptions marked; the broken
 * invariants and their rows (worker/min_story.c).
 */
void	min_story(FILE *f, const struct cfg *cfg, const struct plan *p,
	    const struct seed_result *res);
/* What min_explain found, in words. */
void	min_explain_print(FILE *f, const struct plan *p, const struct min_note *v,
	    size_t n, int variants);

#endif
