/*
 * What a run exercised (docs/report.md "coverage"; Antithesis: a property
 * that never fired is a finding about the test, not a pass).  Each seed's
 * worker counts what its proxies did and which invariants it checked
 * (worker/wrk.h's "coverage", passing seeds included); the coordinator sums
 * the final attempt of each seed here as its verdict comes in, so the
 * journal's replay (--resume) sums the same seeds again and a run of
 * millions of seeds keeps a few counters, not its seeds' details.
 * Confirming re-runs and retried infra attempts are not counted: each seed
 * counts once, as it ended.
 *
 * Out of the sums: report.json's "coverage" (cov_json, docs/report.md) and
 * the summary's lines (cov_summary): per proxy its exchanges, connections,
 * faults by kind, scheduled steps (with the median and the most of a
 * seed), forced decisions by kind, the turns `arrival` went without (with
 * what to do about them), lock waits and deadlocks; per invariant
 * the seeds that checked it and those that broke it; the forced decisions
 * of the run and the seeds that had any; what the schedules waited for
 * their actors (the total, its share of those seeds' time, the slowest
 * step); for each `schedule: pct` proxy
 * PCT's bound; and the warnings: a proxy that saw no exchange in any seed
 * (with how turns reach it), a fault kind with a share above 0 that never
 * fired, a schedule that took no step, a PCT `steps` (k) far from the
 * steps seeds took, an invariant never checked.
 */
#ifndef SOAK_COVERAGE_H
#define SOAK_COVERAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/config.h"

struct cov;

/* Sums for cfg's proxies and invariants; cfg must outlive it. */
struct cov	*cov_new(const struct cfg *cfg);
void		 cov_free(struct cov *c);
/*
 * Adds one seed's "coverage" (NULL or not an object: a seed that reported
 * none, e.g. an old worker's; not counted).  Counts of proxies or
 * invariants the config does not have are left out.  A coverage with
 * "unread" (its worker could not read the seed's fault trace: verdict
 * infra, reason trace, unless it failed) counts as a seed and in its
 * invariants, and in report.json's "unread_traces", never as a seed whose
 * proxies saw nothing: the proxies' warnings are of the seeds traced.
 */
void		 cov_add(struct cov *c, const json_t *seed);
/* The forced decisions of one seed's "coverage", every proxy and kind. */
uint32_t	 cov_seed_forced(const json_t *seed);
/*
 * What one seed's schedules waited for their actors (fault-proxy/proxy.h,
 * proxy_set_waits; the seed's "timing"."waits", docs/report.md): the sum
 * over its steps, its steps, and its slowest step's wait, number and
 * proxy (an index of the config's proxies).  scheduled false (all zeros,
 * as a seed's record starts): the seed had no schedule, or a worker too
 * old to say.  Small, so the coordinator keeps one per seed, passes
 * included.
 */
struct cov_waits {
	uint32_t	 ms, steps, max_ms, max_step;
	uint16_t	 max_proxy;
	bool		 scheduled;
};
/* Reads a seed's "timing" (NULL, or without "waits": not scheduled). */
void		 cov_seed_waits(const struct cov *c, const json_t *timing,
		    struct cov_waits *out);
/*
 * Adds one seed's waits (not scheduled: nothing) to the run's: the total,
 * the seeds and their own durations, the slowest step (the lowest seed
 * on a tie, so a resumed run says the same).
 */
void		 cov_add_waits(struct cov *c, uint64_t seed,
		    const struct cov_waits *w, int64_t duration_ms);
/* A seed's record's "waits" (docs/report.md): an object, or null. */
json_t		*cov_waits_json(const struct cfg *cfg, const struct cov_waits *w);
/* report.json's "coverage" (new reference). */
json_t		*cov_json(const struct cov *c);
/*
 * The summary's coverage lines, each indented by two spaces; nothing when
 * no seed reported coverage.
 */
void		 cov_summary(FILE *f, const struct cov *c);

#endif
