/*
 * The coordinator's bookkeeping: seeds, leases, workers.  Pure logic with
 * no I/O of its own — the server (server.c) feeds it decoded messages and
 * pipe events and sends back what it answers — so every rule below is
 * testable without a socket.
 *
 * Rules (DESIGN.md §8, §11):
 *  - every seed of the range ends with exactly one final verdict;
 *  - seeds are leased in chunks that shrink as the range drains
 *    (ceil(left / (2 * live workers)), clamped to 1..32);
 *  - a lease lives while its worker heartbeats (ttl); when it expires or
 *    the worker's pipe closes, the seed that was running gets an infra
 *    attempt "worker-lost" and the unstarted rest go back to the pool;
 *  - a result under a dead lease, or for a seed it does not hold, is
 *    refused (ACK ok=0) and changes nothing;
 *  - an infra attempt is retried (cfg->retries more times), on another
 *    worker than the last one whenever another worker is alive;
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

#include "common/config.h"
#include "common/msg.h"
#include "common/verdict.h"

/* Each changes only through its setter in coord.c, which logs it (-v). */
enum coord_seed_state { CSEED_PENDING, CSEED_LEASED, CSEED_FINAL };
/* The confirming re-run of a failing seed (cfg->confirm). */
enum coord_confirm { CONFIRM_NONE, CONFIRM_PENDING, CONFIRM_LEASED, CONFIRM_DONE };

struct coord_seed {
	uint64_t		 seed;
	enum coord_seed_state	 state;
	uint8_t			 verdict;	/* final verdict */
	enum reason		 why;		/* final reason (REASON_NONE for pass) */
	uint32_t		 attempts;	/* attempts started */
	uint32_t		 infra;		/* infra attempts */
	uint32_t		 last_worker;
	uint32_t		 worker;	/* worker of the final attempt */
	int64_t			 duration_ms;
	json_t			*history;	/* attempts, oldest first */
	json_t			*detail;	/* the final attempt's detail object;
						   "reproduced" and "confirm" are
						   added by the confirming re-run */
	enum coord_confirm	 confirm;
	uint32_t		 confirm_attempt;
};

struct coord_opts {
	const struct cfg	*cfg;
	struct seed_range	 seeds;
	const char		*run_id;
	const char		*cfg_path;	/* absolute, shipped to workers */
	const char		*db_conninfo;	/* "" = each worker's own */
	const char		*keep_dir;	/* "" = each worker's own */
	const char		*workspace;	/* "" = each worker's own */
	int			 heartbeat_ms;
	int			 lease_ttl_ms;
	int			 max_chunk;
	/*
	 * The config folder's bundle (common/bundle.h), built once at start
	 * and answered to BUNDLE_REQ; bundle_hash NULL or "" = none (--bundle
	 * off): workers read the folder at cfg_path's.  Not copied: it must
	 * outlive the coord.
	 */
	const char		*bundle_hash;
	const uint8_t		*bundle;
	size_t			 bundle_len;
};

struct coord;

/*
 * Called with each seed when its verdict becomes final (e.g. to write
 * failures/), and again when its confirming re-run has an outcome.
 */
typedef void	(*coord_final_cb)(struct coord *, const struct coord_seed *, void *);

struct coord	*coord_new(const struct coord_opts *o, char *err);
void		 coord_free(struct coord *c);
void		 coord_on_final(struct coord *c, coord_final_cb cb, void *arg);

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
/* Live workers, i.e. with an open pipe. */
int		 coord_live_workers(const struct coord *c);

struct coord_counts {
	uint64_t	total, done, pass, fail, infra, retries;
};
void		 coord_counts(const struct coord *c, struct coord_counts *n);
const struct coord_seed	*coord_seeds(const struct coord *c, uint64_t *n);
/* Workers as JSON [{id, host, name, pid, seeds}] (new reference). */
json_t		*coord_workers_json(const struct coord *c);

#endif
