/*
 * One execution of `soak explore` (docs/explore.md), wherever it runs: in
 * soak explore's own process, in one of its --workers executors, or on a
 * `soak worker` that took an explore lease from `soak explore --listen`.
 * An execution follows a prefix of scheduling choices (plan.h's
 * plan_proxy.prefix) and comes back as a record: the steps the scheduled
 * proxy admitted (with the turns that were waiting at each), what made it
 * inexact, the verdict, and for a failing one its invariants and plan.
 * The record is what explore branches on, journals (explore.jsonl) and
 * what a worker sends back, so all three agree by construction; the
 * explorer (worker/explore.h) checks every record it takes.
 */
#ifndef SOAK_XEXEC_H
#define SOAK_XEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/plan.h"
#include "common/verdict.h"
#include "worker/wrk.h"

#define XP_MAX_TURNS	64	/* cand is a 64-bit set */
/*
 * The most steps a record may hold (docs/explore.md, "Limits"): an
 * execution that takes more is broken (its subtree unexplored), and a
 * record or journal line with more is refused before it is read further.
 * It bounds what one record costs the explorer: its steps, its branches
 * (at most (turns - 1) per step) and their search tables.
 */
#define XP_MAX_STEPS	4096
#define XP_REC_VERSION	2	/* a record's "v": 2 added per-step flags */

/* The trace's "cls" (fault-proxy/stmtkey.h sk_class): what commutes. */
enum xcls { XC_OTHER, XC_READ, XC_BEGIN, XC_SESSION };

/* What a step's trace line says beyond the order (struct xstep.flags). */
#define XS_FORCED	0x01	/* a watchdog decided it, not the schedule */
#define XS_WAKES	0x02	/* its end woke several waiters on its
				   transaction id at once */
#define XS_PG_DEADLOCK	0x04	/* PostgreSQL's own detector ended it */
#define XS_SOAK_DEADLOCK 0x08	/* soak's victim rule ended it (exact) */
#define XS_NOTIFY	0x10	/* LISTEN/NOTIFY: delivery outside the schedule */
#define XS_SERVICE	0x20	/* not a PostgreSQL statement (no "pg"): a
				   request to a service, held to its reply */
#define XS_ALL		0x3f

/* One admission of an execution, as its trace has it. */
struct xstep {
	int		 round, turn;
	uint64_t	 key;
	uint32_t	 occ;
	uint64_t	 cand;		/* turns with an exchange waiting then */
	int		 cls;		/* enum xcls: what it ran */
	uint8_t		 flags;		/* XS_* */
	char		 what[96];	/* xp_step_what: valid UTF-8 */
};

/*
 * A step's what, for people: w (a statement's summary or a request line,
 * bytes a system under test sent) cut to fit between characters and made
 * valid UTF-8 (utf8_cut), so a record always packs; NULL is "exchange".
 */
void	 xp_step_what(struct xstep *s, const char *w);

/*
 * What makes one execution differ from the schedule it was given.  The
 * counts are the steps' flags counted (xp_rec_count): a record's own
 * counts are never read back.
 */
struct xinexact {
	uint32_t	 forced, wakes, pg_deadlocks, soak_deadlocks, notify;
	/* turns (bit t) with connections that had exchanges in flight at
	 * once at the scheduled proxy (the trace's "overlap") */
	uint64_t	 overlap;
	/* exchanges the schedule did not order, at any proxy: a service's
	 * statements that passed unheld ("bypass"), and requests a front let
	 * go by the clock ("served":"arrival"); not recounted from steps */
	uint32_t	 unordered;
};

/* An execution, as explore takes it. */
struct xrec {
	int		 verdict;	/* enum msg_verdict */
	enum reason	 reason;
	char		 message[512];
	int64_t		 ms, turns_ms;	/* its wall time; the turns' share */
	bool		 has_steps;	/* its trace was read */
	char		 why_no_steps[256];
	struct xstep	*steps;
	size_t		 n;
	struct xinexact	 inexact;
	json_t		*invariants;	/* a failing one's (owned), or NULL */
	json_t		*plan;		/* a failing one's plan (owned), or NULL */
};

/*
 * Runs the prefix steps[0..n) on w (w->plan is the base plan, pp its
 * scheduled proxy's entry, prefix set) as execution no; its wall time, ms.
 */
int64_t	 xp_run_one(struct wrk *w, struct plan_proxy *pp, uint64_t seed,
	    const struct xstep *steps, size_t n, uint64_t no, struct seed_result *res);
/*
 * An execution's result as a record (proxy: the scheduled one).  An
 * execution of more than XP_MAX_STEPS steps has none (has_steps false,
 * said in why_no_steps).
 */
void	 xp_rec_of_result(const struct seed_result *res, const char *proxy, int64_t ms,
	    struct xrec *r);
void	 xp_rec_clear(struct xrec *r);
/* r->inexact's counts, from its steps' flags (its overlap kept). */
void	 xp_rec_count(struct xrec *r);
/*
 * The record as JSON ({"v": XP_REC_VERSION, ...}) and back: -1 with err
 * when it is not one of this version, or has more than XP_MAX_STEPS
 * steps.  Its form only: whether it fits the branch it answers is the
 * explorer's to check (worker/explore.h).
 */
json_t	*xp_rec_json(const struct xrec *r);
int	 xp_rec_parse(const json_t *j, struct xrec *r, char *err);
/* Steps as JSON ([[round, turn, key, occ, what, cand, cls, flags], ...])
 * and back (at most XP_MAX_STEPS).  A step's what is xp_step_what's, so
 * every step packs: a step that would not (memory) aborts, never goes. */
json_t	*xp_steps_json(const struct xstep *s, size_t n);
int	 xp_steps_parse(const json_t *a, struct xstep **s, size_t *n, char *err);

/*
 * The entry of plan p for proxy (made if p has none), and that entry made
 * an explorer's prefix: its steps gone (the prefix is given per execution),
 * prefix set (a plan file never says it, plan.h).
 */
struct plan_proxy *xp_proxy_entry(struct plan *p, const char *proxy);
void	 xp_prefix_start(struct plan_proxy *pp);

/*
 * An explore lease on a worker (docs/explore.md, "Across machines"):
 * payload is the lease's {"proxy", "plan" (the base plan), "steps" (the
 * prefix), "no"}; res gets the execution's verdict and as its detail
 * {"explore": record}.  A payload that is not one is infra, said.
 */
void	 wrk_explore(struct wrk *w, uint64_t seed, const char *payload,
	    struct seed_result *res);

#endif
