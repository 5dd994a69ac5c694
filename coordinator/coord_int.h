/*
 * Private to the coordinator's bookkeeping: coord.c (the core: the state,
 * each outcome recorded, the halt, the read side), confirm.c (confirming
 * re-runs and minimize leases), lease.c (leasing, stealing, a lease's
 * end), requests.c (what each request of a worker does) and
 * coord_journal.c (the journal's replay).  coord.c's opening comment maps
 * coord.h's rules to those files.  The public face is coord.h.
 *
 * Calls go one way: coord_journal.c -> requests.c -> lease.c -> coord.c
 * -> confirm.c (and from each file to any below it).  What every part
 * reads and changes (the getters, the state setters that log each
 * change, the callbacks' wrappers) is inline here, so no two of them call
 * each other (tests/lint/layering.sh).
 */
#ifndef SOAK_COORD_INT_H
#define SOAK_COORD_INT_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/cfgerr.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/queue.h"
#include "common/regress.h"
#include "common/verdict.h"
#include "coordinator/coord.h"

#define MAX_SEEDS	(10u * 1000 * 1000)	/* one run; a bigger sweep is several runs */
#define CONFIRM_MAX	20	/* confirming re-runs per run: one per distinct failure */
#define MINIMIZE_TRIES	2	/* minimize leases of a seed, when workers are lost */
#define EARLY_SEEDS	3	/* the early stop looks at this many seeds' first attempts */

enum lease_state { LEASE_ACTIVE, LEASE_DONE, LEASE_EXPIRED };
static const char *const lease_state_names[] = { "active", "done", "expired" };
static const char *const seed_state_names[] = {
	[CSEED_PENDING] = "pending", [CSEED_LEASED] = "leased", [CSEED_FINAL] = "final",
};
static const char *const confirm_names[] = {
	[CONFIRM_NONE] = "none", [CONFIRM_PENDING] = "pending",
	[CONFIRM_LEASED] = "leased", [CONFIRM_DONE] = "done",
};

struct lease {
	uint64_t		 id;
	uint32_t		 worker;
	enum lease_state	 state;
	int64_t			 expires;
	uint32_t		 n;
	/*
	 * seeds[0..keep) are the worker's; the tail past keep was taken by
	 * an idle worker (lease_steal).  The worker learns keep from the
	 * ACK of each result, before it starts its next seed.
	 */
	uint32_t		 keep;
	uint64_t		 from;		/* the lease its seeds were taken from */
	bool			 confirm;	/* a confirming re-run */
	bool			 minimize;	/* a minimize lease (tickets.minimize) */
	/* An explore lease (coord_explore): its execution's number, 0 for
	 * any other lease, and its text */
	uint64_t		 explore_no;
	char			*explore;
	/* A regression's lease: 1 + its index in the regressions (it holds
	 * that one alone); 0 for a lease of seeds. */
	size_t			 reg;
	struct msg_seed		*seeds;
	uint8_t			*reported;
};

struct wrec {
	uint32_t	 id;
	char		*name, *host;
	uint32_t	 pid;
	uint32_t	 pipe;
	bool		 alive;
	uint64_t	 lease;		/* 0 = none */
	uint32_t	 seeds;		/* final verdicts it produced */
	uint32_t	 results;	/* results accepted from it, any attempt */
	uint32_t	 infra_run;	/* its own infra outcomes in a row */
	bool		 bye;		/* it said bye: gone for good */
	bool		 restored;	/* from the journal, not rejoined yet */
	int64_t		 closed_at;	/* its connection closed (now_ms) */
	bool		 quarantined;
	enum reason	 quarantine_why;	/* the last of the run */
};

struct coord {
	struct coord_opts	 o;
	/* the range's seeds, then the nregs regressions (c->seeds + nseeds) */
	struct coord_seed	*seeds;
	uint64_t		 nseeds, next_fresh, nfinal;
	size_t			 nregs;
	struct queue		 regq;		/* regressions waiting for a lease */
	/* FIFOs of seed indices (uint64_t) */
	struct queue		 returned;	/* unstarted seeds of dead leases */
	struct queue		 retry;		/* infra seeds waiting for a new attempt */
	struct queue		 confirm;	/* failing seeds waiting for their re-run */
	uint64_t		 nconfirm_open;	/* confirming re-runs without an outcome */
	struct queue		 minq;		/* failing seeds waiting to be minimized */
	uint64_t		 nmin_open;	/* minimize leases without an outcome */
	uint64_t		 nexplore_open;	/* explore leases without a result */
	struct lease		*leases;
	size_t			 nleases, cap_leases;
	struct wrec		*workers;
	size_t			 nworkers;
	coord_final_cb		 final_cb;
	void			*final_arg;
	coord_event_cb		 event_cb;
	void			*event_arg;
	bool			 replaying;	/* coord_replay: no events, no callbacks */
	uint64_t		 retries;
	uint32_t		 nquarantined;
	/* The early stop (early_note): a config error on the first seeds. */
	uint32_t		 early_seen;	/* first attempts, all with early_err */
	bool			 early_off;	/* another outcome came: never stop */
	struct cfgerr		 early_err;
	char			*halt_why;	/* why the run stopped, or NULL */
	int			 in_cb;		/* inside an event or final callback */
	char			*halt_asked;	/* coord_halt from a callback: at the next entry */
	int			 halt_asked_status;
	int			 halt_status;	/* its exit status: 78 or 2 */
	struct cov		*cov;		/* what the final attempts exercised */
	/* Local worker processes started and not joined (coord_worker_starting). */
	struct starting {
		uint32_t	 pid;
		int64_t		 at;
	}			*starting;
	size_t			 nstarting;
};

/* What an accepted result is for (coord_result_apply). */
enum result_kind { RESULT_SEED, RESULT_CONFIRM, RESULT_MINIMIZE };

static inline uint64_t
q_at(const struct queue *q, size_t i)
{
	return *(const uint64_t *)queue_at(q, i);
}

/* Queues the seed s by its index. */
static inline void
q_push(struct coord *c, struct queue *q, const struct coord_seed *s)
{
	uint64_t	idx = (uint64_t)(s - c->seeds);

	queue_push(q, &idx);
}

static inline struct wrec *
worker_get(struct coord *c, uint32_t id)
{
	if (id == 0 || id > c->nworkers)
		return NULL;
	return &c->workers[id - 1];
}

static inline struct lease *
lease_get(struct coord *c, uint64_t id)
{
	if (id == 0 || id > c->nleases)
		return NULL;
	return &c->leases[id - 1];
}

static inline struct coord_seed *
seed_get(struct coord *c, uint64_t seed)
{
	if (seed < c->o.seeds.first || seed > c->o.seeds.last)
		return NULL;
	return &c->seeds[seed - c->o.seeds.first];
}

/*
 * What l->seeds[i] is: the lease's regression, or the seed of the range
 * by its number.  NULL when the lease cannot hold it.
 */
static inline struct coord_seed *
item_get(struct coord *c, const struct lease *l, uint32_t i)
{
	if (l->reg != 0)
		return i == 0 && l->reg <= c->nregs ? &c->seeds[c->nseeds + l->reg - 1] :
		    NULL;
	return seed_get(c, l->seeds[i].seed);
}

/* "seed 7" or "regression NAME", for the log. */
static inline const char *
item_words(const struct coord_seed *s, char *buf, size_t len)
{
	if (s->regress != NULL)
		snprintf(buf, len, "regression %s", s->regress->name);
	else
		snprintf(buf, len, "seed %" PRIu64, s->seed);
	return buf;
}

static inline void
set_lease_state(struct lease *l, enum lease_state s)
{
	log_debug("lease %" PRIu64 " (worker %u): %s -> %s", l->id, l->worker,
	    lease_state_names[l->state], lease_state_names[s]);
	l->state = s;
}

static inline void
set_seed_state(struct coord_seed *s, enum coord_seed_state st)
{
	char	what[256];

	log_debug("%s: %s -> %s", item_words(s, what, sizeof(what)),
	    seed_state_names[s->state], seed_state_names[st]);
	s->state = st;
}

static inline void
set_confirm_state(struct coord_seed *s, enum coord_confirm st)
{
	log_debug("seed %" PRIu64 ": confirm %s -> %s", s->seed,
	    confirm_names[s->confirm], confirm_names[st]);
	s->confirm = st;
}

static inline void
set_min_state(struct coord_seed *s, enum coord_confirm st)
{
	log_debug("seed %" PRIu64 ": minimize %s -> %s", s->seed,
	    confirm_names[s->minimize], confirm_names[st]);
	s->minimize = st;
}

/*
 * The callbacks (coord_on_event, coord_on_final) run in the middle of the
 * coordinator's bookkeeping: a coord_halt from one of them is kept in
 * halt_asked and applied at the next entry (coord_halt_apply), when no lease or
 * seed is half updated.
 */
static inline void
emit(struct coord *c, enum jev type, json_t *e)
{
	c->in_cb++;
	c->event_cb(c, type, e, c->event_arg);
	c->in_cb--;
}

static inline void
final_call(struct coord *c, const struct coord_seed *s)
{
	c->in_cb++;
	c->final_cb(c, s, c->final_arg);
	c->in_cb--;
}

/*
 * The worker runs its lease in order and reports each seed before it
 * starts the next: the first unreported seed is the one running (or about
 * to), the rest have not started.  l->keep when every seed is reported.
 */
static inline uint32_t
lease_running(const struct lease *l)
{
	uint32_t	i;

	for (i = 0; i < l->keep && l->reported[i]; i++)
		;
	return i;
}

/* A seed of a lease that never ran goes back to the pool, first in line. */
static inline void
seed_return(struct coord *c, struct coord_seed *s)
{
	set_seed_state(s, CSEED_PENDING);
	s->attempts--;		/* it never ran */
	/* A regression waits for a lease of its own kind, before the seeds. */
	q_push(c, s->regress != NULL ? &c->regq : &c->returned, s);
}

/* ---- coord.c ---- */

/*
 * Records one attempt's outcome and decides: final, or back in the retry
 * queue.  detail is consumed.
 */
void	coord_seed_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
	    enum reason why, int64_t duration_ms, json_t *detail);
/* A coord_halt asked from a callback takes effect: at each API entry. */
void	coord_halt_apply(struct coord *c);

/* ---- confirm.c ---- */

/* Once every seed is final: the confirming re-runs and minimize leases. */
void	coord_plan_confirms(struct coord *c);
/* A confirming re-run's outcome; detail is consumed. */
void	coord_confirm_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
	    enum reason why, int64_t duration_ms, json_t *detail);
/* A minimize lease's outcome; detail is consumed. */
void	coord_minimize_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
	    enum reason why, int64_t duration_ms, json_t *detail);

/* ---- lease.c ---- */

struct lease	*coord_lease_new(struct coord *c, uint32_t worker, int64_t now);
/* A lease never grows once granted: it keeps what it holds, no more. */
void	coord_lease_fit(struct lease *l);
/*
 * Ends an active lease: running, whether a seed may be running (that
 * seed gets an infra attempt "worker-lost"); the unstarted rest go back.
 */
void	coord_lease_end(struct coord *c, struct lease *l, bool running,
	    const char *why);
void	coord_lease_expire(struct coord *c, struct lease *l, const char *why);
/* The process pid is no longer to come: it joined or it died. */
void	coord_starting_drop(struct coord *c, uint32_t pid);
/* *rep as an ACK, NACK or DONE of one sentence. */
void	coord_text_reply(struct msg *rep, enum msg_type type, int ok,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- requests.c ---- */

/*
 * An accepted result of seed l->seeds[i]: its outcome, the lease's end
 * when it was its last seed, and the quarantine's cut.  detail is
 * consumed.  The journal's replay comes here too.
 */
void	coord_result_apply(struct coord *c, struct lease *l, uint32_t i,
	    enum result_kind kind, enum reason why, int64_t duration_ms,
	    json_t *detail);

#endif
