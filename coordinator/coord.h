/*
 * The coordinator's bookkeeping: seeds, leases, workers.  Pure logic with
 * no I/O of its own — the server (server.c) feeds it decoded messages and
 * pipe events and sends back what it answers — so every rule below is
 * testable without a socket.
 *
 * Rules (docs/design.md, "Verdicts" and "Across machines"; coord.c's
 * opening comment says which file of coordinator/ holds each):
 *  - every seed of the range ends with exactly one final verdict;
 *  - seeds are leased in chunks that shrink as the range drains
 *    (ceil(left / (2 * live workers)), clamped to 1..32); once none is
 *    left to lease, a worker that asks takes the unstarted half of the
 *    busiest lease's tail (lease_steal), so no worker idles while another
 *    holds seeds it has not started;
 *  - a lease lives while its worker heartbeats (ttl); when it expires or
 *    the worker's pipe closes, the seed that was running gets an infra
 *    attempt "worker-lost" and the unstarted rest go back to the pool;
 *  - a result under a dead lease, or for a seed it does not hold (never
 *    did, or no longer: taken by another worker), is refused (ACK ok=0)
 *    and changes nothing; an accepted result's ACK says how much of the
 *    lease is still the worker's (keep);
 *  - a worker whose own infra outcomes come quarantine_after times in a
 *    row is quarantined: no more leases (worker_outcome says which count);
 *  - when the first-attempt outcomes of the first 3 seeds (fewer in a
 *    smaller run) all carry the same config error and nothing else came
 *    first, the run stops (early_note): nothing more is leased or
 *    retried, the seeds that ran keep their last attempt as their
 *    verdict, the unstarted ones end without one;
 *  - an infra attempt is retried (cfg->retries more times), on another
 *    worker than the last one whenever another worker is alive or about
 *    to join (a local worker started, coord_worker_starting): meanwhile
 *    its last worker takes other seeds, or waits;
 *  - regressions (coord_opts.regress) are leased before any seed of the
 *    range: no lease of seeds is granted while a regression waits for its
 *    first lease.  Each is a lease of its own kind holding it alone, keyed
 *    by its name and hash (a RESULT must name both); its plan's seed may
 *    also be in the range, and both run.  Otherwise a regression lives as a
 *    seed does: retried when infra (its worker lost, its plan diverged
 *    and its exploration was incomplete: not when the exploration says
 *    another worker would find the same, "explored": {"final": true}),
 *    final once, journaled (so --resume runs a finished one never again),
 *    and never confirmed.  A pass whose plan diverged counts only when
 *    its exploration earned it (coord_reg_pass_earned);
 *  - fail is never retried away.  When every seed is final and
 *    cfg->confirm is set, the smallest failing seed of each fingerprint
 *    (at most CONFIRM_MAX) runs once more, on another worker than the
 *    one that failed it whenever another is alive; the outcome is kept as
 *    "reproduced" (true, false, or absent when the re-run itself was
 *    infra) and never changes the verdict.  The run finishes after.
 */
#ifndef SOAK_COORD_H
#define SOAK_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cfgerr.h"
#include "common/config.h"
#include "common/msg.h"
#include "common/verdict.h"
#include "coordinator/coverage.h"
#include "coordinator/journal.h"

/* Each changes only through its setter (coord_int.h), which logs it (-v). */
enum coord_seed_state { CSEED_PENDING, CSEED_LEASED, CSEED_FINAL };
/* The confirming re-run of a failing seed (cfg->confirm). */
enum coord_confirm { CONFIRM_NONE, CONFIRM_PENDING, CONFIRM_LEASED, CONFIRM_DONE };

struct regress;

struct coord_seed {
	uint64_t		 seed;
	/*
	 * A regression (common/regress.h), borrowed from coord_opts.regress:
	 * seed is its plan's, which may also be one of the range's.  NULL for
	 * a seed of the range.
	 */
	const struct regress	*regress;
	enum coord_seed_state	 state;
	uint8_t			 verdict;	/* final verdict */
	enum reason		 why;		/* final reason (REASON_NONE for pass) */
	uint32_t		 attempts;	/* attempts started */
	uint32_t		 infra;		/* infra attempts */
	uint32_t		 last_worker;
	uint32_t		 worker;	/* worker of the final attempt */
	int64_t			 duration_ms;
	/*
	 * A run holds up to millions of seeds, most of them passing on their
	 * first attempt, so a seed keeps little: history holds the attempts
	 * before the final one (NULL: none), and a plain pass keeps no detail
	 * (NULL) but its turn counts.  coord_seed_attempts and
	 * coord_seed_detail give them whole.
	 */
	json_t			*history;
	json_t			*detail;	/* the final attempt's detail object;
						   "reproduced" and "confirm" are
						   added by the confirming re-run */
	uint32_t		 ok_turns, total_turns;	/* a pass without detail */
	uint32_t		 forced;	/* the final attempt's forced decisions
						   (coordinator/coverage.h) */
	struct cov_waits	 waits;		/* what its schedules waited for
						   their actors (coverage.h) */
	enum coord_confirm	 confirm;
	uint32_t		 confirm_attempt;
	/* Minimized before its ticket (tickets.minimize): its detail gets
	 * "minimized" (the worker's record, checked) */
	enum coord_confirm	 minimize;
	uint32_t		 minimize_attempt;
	uint32_t		 minimize_lost;	/* its minimize leases lost with a worker */
	/* What the last coord_on_final call was for: the verdict, the
	 * confirming re-run's outcome, or the minimize lease's */
	enum { FINAL_VERDICT, FINAL_CONFIRM, FINAL_MINIMIZE } final_why;
};

/* Every attempt of s, oldest first, the final one included (new reference). */
json_t		*coord_seed_attempts(const struct coord_seed *s);
/* The final attempt's detail object (new reference; {} without a verdict). */
json_t		*coord_seed_detail(const struct coord_seed *s);

/*
 * An exploration across machines (soak explore --listen; docs/explore.md,
 * "Across machines"): the coordinator has no seed range; each lease is one
 * execution of the explored seed that the driver hands out (next: 1 with
 * its number and its text, which the lease carries to the worker; 0 when
 * none can go now, or none to that worker: the request waits, and is
 * served again after the next event), whose result goes back to the driver (result: the worker's
 * verdict, reason and detail, a borrowed reference, checked to be a JSON
 * object), or, when its worker is lost or the lease expires, the
 * execution (lost: the driver hands it out again).  A result counts once;
 * one under an ended lease, or for another seed or execution, is refused.
 * The run is finished when done says so and no execution is out.
 */
struct coord_explore {
	uint64_t	 seed;
	int		(*next)(void *arg, uint32_t worker, uint64_t *no, char **payload);
	void		(*result)(void *arg, uint64_t no, uint32_t worker, int verdict,
			    enum reason why, const json_t *detail);
	void		(*lost)(void *arg, uint64_t no, const char *why);
	bool		(*done)(void *arg);
	void		*arg;
};

struct coord_opts {
	const struct cfg	*cfg;
	/* An exploration: seeds is ignored (coord_explore); NULL for a run */
	const struct coord_explore *explore;
	struct seed_range	 seeds;
	const char		*run_id;
	const char		*cfg_path;	/* absolute, shipped to workers */
	const char		*db_conninfo;	/* "" = each worker's own */
	const char		*keep_dir;	/* "" = each worker's own */
	const char		*workspace;	/* "" = each worker's own */
	int			 heartbeat_ms;
	int			 lease_ttl_ms;
	int			 max_chunk;
	int			 quarantine_after;	/* 0: 3 */
	/*
	 * The config folder's bundle (common/bundle.h), built once at start
	 * and answered to BUNDLE_REQ; bundle_hash NULL or "" = none (--bundle
	 * off): workers read the folder at cfg_path's.  Not copied: it must
	 * outlive the coord.
	 */
	const char		*bundle_hash;
	const uint8_t		*bundle;
	size_t			 bundle_len;
	/*
	 * The config's regressions (common/regress.h), NULL or empty for
	 * none; not copied: it must outlive the coord.
	 */
	const struct regress_set	*regress;
};

struct coord;

/*
 * Called with each seed when its verdict becomes final (e.g. to write
 * failures/), and again when its confirming re-run has an outcome.
 */
typedef void	(*coord_final_cb)(struct coord *, const struct coord_seed *, void *);
/*
 * Called with each change of the run's state that a restarted coordinator
 * needs (the journal, coordinator/journal.h): type is JEV_WORKER,
 * JEV_LEASE, JEV_LEASE_END or JEV_RESULT; e (a new reference, the callee's) is what
 * coord_replay takes back.  Called before the change takes effect, and
 * before the reply that tells a worker.
 */
typedef void	(*coord_event_cb)(struct coord *, enum jev type, json_t *e, void *);

struct coord	*coord_new(const struct coord_opts *o, char *err);
void		 coord_free(struct coord *c);
void		 coord_on_final(struct coord *c, coord_final_cb cb, void *arg);
void		 coord_on_event(struct coord *c, coord_event_cb cb, void *arg);
/*
 * Replays one event of a journal into a coordinator fresh from coord_new
 * with the same config and seeds: the state is rebuilt by the same rules
 * that made it (an expired lease's worker-lost attempt, a retry, the
 * confirming re-runs), without callbacks.  Other types are skipped; -1
 * with err when the event does not fit the state (a journal of another
 * run, or damaged).
 */
int		 coord_replay(struct coord *c, enum jev type, json_t *e, char *err);
/*
 * After the replay: leases still active get a fresh ttl from now, for
 * their workers to rejoin (msg.h HELLO rejoin_id) and go on; workers are
 * not alive until they do.  orphaned: their workers cannot come back (they
 * died with the coordinator: `soak run`), so those leases end at once, the
 * seed each was running an infra attempt "worker-lost".
 */
void		 coord_resumed(struct coord *c, int64_t now, bool orphaned);

/*
 * Handles one request from pipe, an authenticated connection (server.c
 * passes nothing else; coordinator/peer.h).  Returns 1 with *rep filled
 * (the caller sends it and msg_clear()s it), or 0 when it is a lease
 * request that must wait: the caller parks it and asks
 * coord_serve(worker) after each event.
 */
int		 coord_handle(struct coord *c, const struct msg *req, uint32_t pipe,
		    int64_t now, struct msg *rep);
/* For a parked lease request of worker: 1 with *rep (LEASE or DONE), or 0. */
int		 coord_serve(struct coord *c, uint32_t worker, int64_t now, struct msg *rep);
void		 coord_pipe_closed(struct coord *c, uint32_t pipe, int64_t now);
/* Expires overdue leases; returns the ms until the next deadline (or -1). */
int64_t		 coord_tick(struct coord *c, int64_t now);

bool		 coord_finished(const struct coord *c);
/*
 * Whether the run cannot go on: a worker was quarantined and no other
 * worker is alive or holds a lease; or the early stop: the first seeds'
 * first attempts all met the same config error (common/cfgerr.h), which
 * no retry mends.  The caller ends the run incomplete.
 */
bool		 coord_halted(const struct coord *c);
/* Why, in a sentence (a config error names FILE:LINE:COL: KEY), or NULL. */
const char	*coord_halt_reason(const struct coord *c);
/*
 * The exit status the early stop demands: 78 when it is plainly the
 * config, 2 when it may be the machines' (cfgerr_plain); 0 for a run
 * that was not stopped for a config error.
 */
int		 coord_halt_status(const struct coord *c);
/* The config error that stopped the run, or NULL. */
const struct cfgerr	*coord_halt_cfgerr(const struct coord *c);
/*
 * Stops the run from outside (the output directory cannot be written):
 * why becomes coord_halt_reason, status coord_halt_status (2).  As for
 * the early stop, nothing more is leased, a seed waiting for a retry keeps
 * its last attempt as its verdict, the unstarted seeds of every lease go
 * back never to run (missing), and the seed a worker is running may still
 * report.  Nothing if the run was stopped already or is finished.  From
 * an event or final callback it takes effect at the next coord_handle,
 * coord_serve, coord_tick or coord_worker_died, when nothing is half done.
 */
void		 coord_halt(struct coord *c, int status, const char *why);
/*
 * Whether the worker that said HELLO with this pid (the newest of them)
 * had a result accepted: a local worker that died before that is a failed
 * start (cmd/run.c's respawn limit).
 */
bool		 coord_pid_reported(const struct coord *c, uint32_t pid);
/*
 * The worker process that said HELLO with this pid (the newest of them)
 * is dead -- `soak run` reaped it -- and can never rejoin: its lease ends
 * now rather than at its ttl, the seed it was running with an
 * infra/worker-lost attempt (why), the rest back to the pool.
 */
void		 coord_worker_died(struct coord *c, uint32_t pid, const char *why);
/*
 * `soak run` started a local worker process pid at now.  Until it says
 * HELLO, dies (coord_worker_died) or COORD_JOIN_WAIT_MS pass, it counts as
 * a worker about to join: a retry or a confirming re-run waits for it
 * rather than going back to the worker that last ran its seed.
 */
#define COORD_JOIN_WAIT_MS	30000
void		 coord_worker_starting(struct coord *c, uint32_t pid, int64_t now);
/*
 * The config error is not plainly the config's after all (the caller
 * found the command on the coordinator's machine: the workers' copy of the
 * folder lacks it): exit 2, and the reason says why.
 */
void		 coord_halt_not_plain(struct coord *c, const char *why);
/*
 * Workers the end of the run waits for, to tell them it is over: those
 * connected, and those that may come back — a connection closed less than
 * a lease ttl ago, or a worker of the journal not rejoined yet (--resume)
 * — but not one that said bye or was quarantined.
 */
int		 coord_awaited_workers(const struct coord *c, int64_t now);
/* Live workers, i.e. with an open pipe. */
int		 coord_live_workers(const struct coord *c);

struct coord_counts {
	uint64_t	total, done, pass, fail, infra, retries;
};
void		 coord_counts(const struct coord *c, struct coord_counts *n);
const struct coord_seed	*coord_seeds(const struct coord *c, uint64_t *n);
/* The regressions, in coord_opts.regress's order (none: *n 0). */
const struct coord_seed	*coord_regressions(const struct coord *c, size_t *n);
/*
 * diverged: final infra/diverged (its plan diverged and the exploration
 * that judges it was incomplete, or did not run); explored: final ones
 * whose plan diverged and that were judged by exploring (detail
 * "explored", worker/regexplore.h), whatever their verdict.
 */
struct coord_reg_counts {
	size_t	total, done, pass, fail, diverged, infra;	/* infra: the rest */
	size_t	explored;
};
/*
 * Whether detail, a regression's pass, is one: a plan followed (no
 * "diverged"), or a diverged plan whose exploration says complete, at
 * least one execution and none failing.  Any other pass tested nothing:
 * coord_seed_outcome makes it infra/diverged.
 */
bool		 coord_reg_pass_earned(const json_t *detail);
void		 coord_reg_counts(const struct coord *c, struct coord_reg_counts *n);
/*
 * The whole state but the clock and the connections, as JSON (a new
 * reference): what a replay must rebuild exactly (tests, debugging).
 */
json_t		*coord_dump(const struct coord *c);
/* What the seeds' final attempts exercised (coordinator/coverage.h). */
struct cov;
const struct cov	*coord_coverage(const struct coord *c);
/* Workers as JSON [{id, host, name, pid, seeds}] (new reference). */
json_t		*coord_workers_json(const struct coord *c);

#endif
