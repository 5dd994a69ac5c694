/*
 * The explorer: every interleaving of one seed's scenario at its scheduled
 * proxy, up to a bound (docs/explore.md).  A library below the commands,
 * so that `soak explore` (cmd/explore.c: options, output, the fleet) and a
 * worker (a regression whose plan diverged) drive the same search.
 *
 * The search.  Stateless model checking in the manner of CHESS (Musuvathi
 * et al., OSDI 2008), loom and Shuttle's check_dfs, over real processes
 * and a real PostgreSQL.  Every execution starts from the seed's start
 * (the schema reset, fresh turn processes, the seed's turn seeds and
 * faults) and is given a prefix: the first steps of a schedule, which the
 * gate follows strictly (plan.h's plan_proxy.prefix); past it the gate
 * preempts no one (the turn that went last goes on while it has an
 * exchange waiting, else the lowest turn that has one).  An execution
 * comes back as a record (worker/xexec.h): the steps admitted and, at
 * each, the turns that were waiting (`cand`).  Depth first, every other
 * waiting turn at every step past the prefix is a new branch: the prefix
 * up to that step, then that turn's waiting exchange.  Branches are
 * numbered in the order they are made (the root is 1), which depends only
 * on the records taken before; so a journal of records taken in order
 * rebuilds the tree exactly (explore_journal_replay).
 *
 * The bound: preemptions (opts.bound; -1: none).  A preemption is a step
 * that passes over the turn of the step before while that turn has its
 * next exchange waiting; passing over a turn that waits on a lock or has
 * exited is free.  A branch that would exceed the bound is not made
 * (counted: beyond_bound).  With one round (opts.only_round), only the
 * steps of that round branch.
 *
 * The reduction (opts.reduce; only without a bound: sleep sets and a
 * preemption bound together can miss a class).  Sleep sets (Godefroid,
 * 1996) over a rule that errs one way: a BEGIN or a session setting
 * (SET, RESET, SHOW) of one turn commutes with anything of another, two
 * plain reads commute, and everything else, a step not known included,
 * is dependent (explore_indep).  Siblings are ordered (the turn the execution
 * took, then the others by number); a branch carries asleep the earlier
 * siblings whose waiting exchanges commute with its own, a turn stays
 * asleep down the path until a step that does not commute with its
 * waiting one, and a sleeping turn is never branched to; an execution
 * whose extension takes a sleeping turn is covered from there on.  Every
 * schedule run is put in its equivalence class (its lexicographic normal
 * form under the rule): a class with both verdicts is counted
 * (classes_mixed), the rule or the system being wrong.
 *
 * Exact.  An execution is exact when the order it ran is the schedule it
 * was given and nothing else decided it: no decision forced by a watchdog
 * (`arrival`, `blocked`), no commit that woke several waiters on its
 * transaction id (PostgreSQL's order), no deadlock broken by PostgreSQL's
 * own detector, no divergence, no turn whose connections were open at
 * once (a turn of threads orders them itself), no LISTEN/NOTIFY,
 * and no request that is not a PostgreSQL statement (a service's, behind
 * an HTTP or TCP proxy) held while another turn's ran to its reply (the
 * service never ran two at once: the schedule serialized it).  Each is counted (struct xstats),
 * per step or per execution.
 *
 * Complete is claimed only when it is earned: the tree exhausted for the
 * bound, every execution exact, none broken (infra, or a record refused
 * twice), every waiting turn a branch named seen to go.  Anything else is
 * incomplete, with its reasons counted.
 *
 * Records are checked before they are taken (explore_take): the form
 * (xp_rec_parse), then against the branch they answer — the steps extend
 * its prefix, there is at least one whenever the seed's own run took any,
 * every step's turn runs and was waiting at its own step (its `cand`),
 * every `cand` names only turns that run; the verdict agrees with the
 * failure fields (a pass has none; a failure by invariant names them; a
 * failing plan passes plan_check and its steps at the scheduled proxy
 * are the record's).  A refused record is said (opts.event, escaped by the
 * caller) and its branch goes back to be run again; refused twice, the
 * branch is broken.  This is consistency, not tamper-proofing: whoever
 * can write a record (a worker with the secret, the journal's folder) can
 * write a consistent lie.
 *
 * Memory grows with the frontier, not with the square of a record: a
 * branch is a parent pointer, the step at which it leaves its parent's
 * record and the index of its own step there (its prefix rebuilt from the
 * path when it runs); an execution's steps are kept while a branch of it
 * is pending.  A record holds at most XP_MAX_STEPS steps.
 *
 * One thread drives an explorer; nothing here is thread-safe.
 */
#ifndef SOAK_WORKER_EXPLORE_H
#define SOAK_WORKER_EXPLORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/config.h"
#include "common/plan.h"
#include "worker/wrk.h"
#include "worker/xexec.h"

#define XP_SAVED_PLANS		100	/* failing schedules written as plans */
#define XP_JOURNAL_VERSION	2	/* explore.jsonl's; 2: records of v 2 */

struct explore;
struct xnode;		/* a branch still to run */

/* What the explorer tells its driver as it goes (explore_opts.event). */
enum xp_event {
	XE_EXECUTION,	/* an execution taken (rec, turns, node) */
	XE_FAILING,	/* a failing schedule (rec, turns, plan: its file or NULL) */
	XE_DIVERGED,	/* an execution whose prefix could not be followed (rec) */
	XE_BROKEN,	/* an execution that says nothing of its subtree (why) */
	XE_REFUSED,	/* a record that does not check (why; again: refused
			   twice, the branch broken) */
};

struct xp_event_info {
	enum xp_event		 kind;
	uint64_t		 execution;	/* its number among those taken */
	uint64_t		 failing;	/* XE_FAILING: its number among the failing */
	uint64_t		 node;		/* XE_EXECUTION: its branch's number (a
						   failing one is kept as schedule-NODE) */
	const struct xrec	*rec;
	const char		*turns;		/* the schedule, a turn per step */
	const char		*plan;		/* XE_FAILING: the plan written, or NULL */
	const char		*why;		/* text from the record: not escaped */
	size_t			 prefix;	/* the branch's prefix length */
	int			 preemptions;
	bool			 again;
	bool			 replaying;	/* a journal's record (--resume) */
};

struct explore_opts {
	const struct cfg	*cfg;
	const char		*proxy;		/* the scheduled proxy (one) */
	uint64_t		 seed;
	uint64_t		 turns;		/* the turns that run (bit t) */
	int			 bound;		/* preemptions; -1: none */
	int			 only_round;	/* -1: every round */
	bool			 reduce;
	/* the seed's own run took steps at the proxy (of the turns that
	 * run): then a record of none is refused */
	bool			 seed_steps;
	/* failing/K.plan.json are written into this folder (an open fd;
	 * files are made without following a symlink), or -1: none */
	int			 failing_dfd;
	const char		*failing_path;	/* its path, for the event */
	/* a failure's fingerprint (coordinator/fingerprint.h's rule), heap */
	char			*(*fingerprint)(const char *config, const char *reason,
				    const json_t *invariants);
	void			(*event)(void *arg, const struct xp_event_info *ev);
	void			*arg;
};

/* What the executions were, counted (read-only for the driver). */
struct xstats {
	uint64_t	 executions, failing, passing, diverged, infra;
	uint64_t	 refused;		/* records refused (each run again) */
	uint64_t	 distinct;
	uint64_t	 beyond_bound;		/* branches the bound cut */
	uint64_t	 slept;			/* branches a sleep set cut */
	uint64_t	 redundant;		/* executions whose rest was covered */
	uint64_t	 nclasses;		/* equivalence classes */
	uint64_t	 mixed;			/* classes with both verdicts */
	bool		 classes_cut;		/* an execution too long to class */
	uint64_t	 no_alternative;	/* a waiting turn that never went */
	uint64_t	 steps_min, steps_max, steps_sum;
	/* per step: decisions forced, commits that woke several waiters,
	 * deadlocks PostgreSQL broke, soak's (exact), LISTEN/NOTIFY */
	uint64_t	 forced, wakes, pg_deadlocks, soak_deadlocks, notify;
	/* per execution: a turn's connections overlapped; a service's
	 * requests held until another's reply (serialized) */
	uint64_t	 overlap, serialized;
	/* per execution: exchanges the schedule did not order (a service's
	 * statements unheld, a request a front let go by the clock) */
	uint64_t	 unordered;
	uint64_t	 inexact;		/* executions with any of the above,
						   or diverged */
	uint64_t	 saved;			/* failing plans written */
	uint64_t	 nodes;			/* branches made (their numbers) */
	int64_t		 exec_ms;
	int64_t		 turns_ms;		/* of that, from the first turn's start
						   to the last one's end, per round */
};

/*
 * The root prefix of an exploration of round `round` alone (--rounds R,
 * docs/explore.md): p's steps at its proxy pp of the rounds before it, of
 * the pairs p runs, in order, as the seed ran them, into *out (heap, even
 * for 0); their number.  0 when round <= 0 (nothing runs before it).
 * Round `round`'s own steps are never in it: they are what branches.
 */
size_t		 explore_root_prefix(const struct plan *p, const struct plan_proxy *pp,
		    int round, struct xstep **out);
/*
 * A new explorer whose root runs prefix root[0..nroot) (the rounds before
 * --rounds R, as the seed ran them; n 0 otherwise).  o is copied; o's
 * strings and cfg must outlive the explorer.
 */
struct explore	*explore_new(const struct explore_opts *o, const struct xstep *root,
		    size_t nroot);
/* Frees it and every branch it holds; branches out with a driver must
 * have been put back or taken. */
void		 explore_free(struct explore *x);

/* The next branch to run (depth first), out of the tree, or NULL. */
struct xnode	*explore_next(struct explore *x);
/* The branch numbered no, out of the tree (a journal's line), or NULL. */
struct xnode	*explore_find(struct explore *x, uint64_t no);
uint64_t	 explore_node_no(const struct xnode *b);
/* b's prefix, rebuilt from its path: a heap array of its length. */
size_t		 explore_prefix(const struct xnode *b, struct xstep **out);
/*
 * b's execution's record: checked (the header's "Records"), then counted,
 * journaled, its failing plan written, its branches made; b is consumed.
 * -1 with err when refused: b goes back to run again, or is counted
 * broken when its record was refused once before (b consumed either way).
 */
int		 explore_take(struct explore *x, struct xnode *b, const struct xrec *r,
		    char *err);
/*
 * b's record could not be read, or does not check (why; r may be NULL):
 * said (XE_REFUSED), and b goes back to run again, or is counted broken
 * when a record of it was refused before; b is consumed either way.
 */
void		 explore_refuse(struct explore *x, struct xnode *b, const struct xrec *r,
		    const char *why);
/* b ran to no record (a signal, a lost executor or worker): it goes back. */
void		 explore_put_back(struct explore *x, struct xnode *b);
/* Branches still to run; the longest prefix among them. */
size_t		 explore_left(const struct explore *x);
size_t		 explore_deepest(const struct explore *x);
const struct xstats *explore_stats(const struct explore *x);
/*
 * Whether the result is complete (the header's "Complete"): stopped is
 * what stopped the search (NULL: nothing), counted with what is left.
 */
bool		 explore_complete(const struct explore *x, const char *stopped);
/*
 * The counts as explore.json has them (docs/explore.md, "Files"): the
 * caller adds the scenario's own fields.
 */
json_t		*explore_json(const struct explore *x, const char *stopped);
/*
 * The reduction's rule (the header's "The reduction"): whether two steps
 * of two turns commute.  Anything it is not sure of is dependent.
 */
bool		 explore_indep(const struct xstep *a, const struct xstep *b);
/* The schedule of steps as "0 1 1 0" (heap). */
char		*explore_turn_list(const struct xstep *s, size_t n);

/*
 * The seed's own run's record, read for what no exploration of it can
 * make exact: the steps of the turns that run (*steps), the turns of
 * those whose connections overlapped (*overlap), and whether a proxy in
 * front of a service held a request of one until another's reply
 * (*serialized).
 */
void		 explore_seed_facts(const struct explore_opts *o, const struct xrec *r,
		    size_t *steps, uint64_t *overlap, bool *serialized);

/*
 * The journal (explore.jsonl, docs/explore.md "Resuming"): a header
 * naming the exploration, then one line per execution taken, in the
 * order taken: {"no": its branch, "rec": its record}, each flushed and
 * fdatasync'ed before the next.  explore_journal_set hands the explorer
 * the file (it writes every record explore_take takes, until it is set
 * to NULL; the caller keeps and closes it).
 */
json_t		*explore_journal_header(const struct explore_opts *o, const char *turns);
void		 explore_journal_set(struct explore *x, FILE *f);
/*
 * A journal's lines (its header gone) taken again, in order, not run:
 * each line's record is checked as a worker's is; a line that does not
 * check, or names a branch this tree does not hold, is refused (said by
 * event, not fatal): its execution runs again.  Returns the lines taken.
 */
size_t		 explore_journal_replay(struct explore *x, const json_t *lines);

/*
 * What a driver gives its executors: the text of an execution's lease
 * (wrk_explore's payload: the proxy, the base plan's text, the prefix,
 * the branch's number), heap.
 */
char		*explore_lease(const char *proxy, const char *plan_text,
		    const struct xnode *b);

/* When a local search stops (explore_run). */
struct explore_budget {
	uint64_t			 executions;	/* 0: no count */
	int64_t				 ms;		/* 0: no time */
	int64_t				 t0;		/* now_ms() at the start */
	volatile sig_atomic_t		*stop;		/* a signal's number, or 0 */
	/* stop once a failing schedule is taken (a regression's judge,
	 * worker/regexplore.h: one failure decides it) */
	bool				 first_failure;
};

/*
 * Runs the tree on this machine until it is done or the budget says stop:
 * in w itself (nexec 1: w is open, w->plan the base plan), or in nexec
 * executors forked with workers of their own (w closed: each opens its
 * own, id 1..nexec), fed leases and answering results in the message
 * codec (common/msg.h) over pipes.  w->plan is base, whose proxy entry is
 * an explorer's prefix (xp_prefix_start).  Returns what stopped it ("the
 * budget", "Ctrl-C", "SIGTERM", "no executor left", "a failing schedule")
 * or NULL.
 */
const char	*explore_run(struct explore *x, struct wrk *w, const struct plan *base,
		    int nexec, const struct explore_budget *b, bool quiet);

#endif
