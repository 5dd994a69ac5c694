/*
 * Private to the gate: gate.c (admission: what is admitted next, the
 * watchdogs, the plan's pick) and gate_side.c (the side connection to
 * PostgreSQL: lock probes, waits outside the proxy, the cancel of a
 * deadlock's victim, and the cycle finder that picks it).  The public face
 * is gate.h.  Calls go one way, gate.c -> gate_side.c; what both change
 * (an entry's state, the next instant to come back) is inline here.
 */
#ifndef SOAK_PROXY_GATE_INT_H
#define SOAK_PROXY_GATE_INT_H

#include <sys/types.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "common/log.h"
#include "fault-proxy/gate.h"
#include "fault-proxy/io.h"
#include "fault-proxy/sched.h"

#define BLOCKERS_MAX	64	/* blockers kept per backend asked about */

static const char *const gate_st_names[GS_MAX] = {
	[GS_OUT] = "out", [GS_WAIT] = "wait", [GS_RUN] = "run",
	[GS_LOCK] = "lock", [GS_WOKE] = "woke", [GS_STUCK] = "stuck",
};

/* What the side connection is asking, one question at a time. */
enum side_q { Q_NONE, Q_BLOCKERS, Q_OUTSIDE, Q_CANCEL };

/* A turn's admitted exchanges of one key in the round: the next occ. */
struct occ {
	int		 turn;
	uint64_t	 key;
	uint32_t	 next;
};

/* A backend of one of the gate's turns, named by BackendKeyData. */
struct backend {
	int32_t	 pid;
	int	 turn;
};

/* One row of a blockers answer, kept until the answer is whole. */
struct row {
	struct gate_ent	*e;
	size_t		 nb;
	int32_t		 b[BLOCKERS_MAX];
};

/*
 * The deadlock in one whole blockers answer, rows[0..n): a cycle of
 * exchanges waiting on locks (GS_LOCK), each one's backend blocked by the
 * next's, and its victim -- the cycle's exchange admitted first, the
 * lowest step (docs/faults.md "Schedules: races that replay"): the
 * backend PostgreSQL's own detector would abort.  An exchange that waits
 * on the cycle without being in it is never the victim.  NULL: no cycle.
 */
struct gate_ent	*gate_cycle_victim(const struct row *rows, size_t n);

struct gate {
	char			*name;
	uint64_t		 seed;
	int			 nturns;
	struct sched		*s;
	int64_t			 arrival_ms, blocked_ms;
	struct gate_ent		*ents;		/* entries not GS_OUT */
	int			 n[GS_MAX];	/* entries in each state */
	struct gate_ent		*running;
	int64_t			 running_since;
	int64_t			 free_since;	/* the last admission's end */
	int64_t			 next_at;
	uint64_t		 seq;
	uint64_t		 gen;		/* ends and closes so far */
	bool			 settled;	/* every lock wait re-asked since */
	struct gate_ent		*victim;	/* cancelled, its exchange not over */

	bool			*live;		/* per turn */
	uint32_t		*held;		/* per turn, the set's (gate_conf) */
	uint32_t		*mine;		/* per turn, held at this gate */
	bool			*ready, *blocked;	/* scratch */
	struct gate_ent		**oldest;	/* scratch: a turn's first lane waiting */

	/* actors (gate.h "Actors"): the engine's view of each turn, looked
	 * at again at look_at[t] while it is not accounted for, backing off
	 * from ACTOR_LOOK_MS to ACTOR_LOOK_MAX_MS */
	gate_actor_fn		 actor;
	void			*actor_arg;
	gate_starved_fn		 starved;
	gate_replied_fn		 replied;
	enum gate_act		*act;		/* scratch: this pass's view */
	int			*look_ms;
	uint64_t		*lanes;		/* per turn: lanes in use (bit l) */
	uint64_t		 idle;		/* scratch: turns waited for under
						   the arrival watchdog */
	int64_t			*idle_since;	/* per turn: waited for under it since
						   (0: accounted for, or busy) */
	int64_t			 idle_from;	/* scratch: the latest of those */
	/* per turn, while it runs: how long it had run (CPU ms; -1 not
	 * known) at the look at ran_at; idle_since moves on by the time it
	 * did not run between two looks */
	int64_t			*ran_ms, *ran_at;
	struct occ		*occ;		/* admitted (turn, key) counts */
	size_t			 nocc, capocc;

	struct backend		*be;		/* the turns' backends */
	size_t			 nbe, capbe;

	/* the side connection (NULL: none; `blocked` alone decides) */
	PGconn			*side;
	struct ep		 sep;
	int			 epfd;
	enum side_q		 q;		/* in flight */
	uint64_t		 q_gen;		/* gen when it was sent */
	int64_t			 probe_at;	/* the next blockers probe, or 0 */
	struct row		*rows;
	size_t			 nrows, caprows;
	int32_t			 cancel_pid;	/* a victim's, to cancel next */
	int64_t			 outside_at;	/* the next outside ask */
	int64_t			 outside_every;
	uint64_t		 outside_gen;	/* gen of the last answer */
	long			 outside;	/* its count of outside waiters */

	/* Wake-ups decided by soak: the postmaster of the side connection's
	 * server when it runs on this host (0: a server soak cannot signal,
	 * and a wake of several waiters is PostgreSQL's order, marked) */
	pid_t			 postmaster;

	struct gate_stats	 stats;

	/* under a plan (docs/plan.md) */
	bool			 planned;
	const struct plan_proxy	*plan;
	bool			*used;		/* per plan step: admitted */
	size_t			 cursor;	/* the first step not used */
	bool			 then_seed;
	enum { PM_PLAN, PM_SEED, PM_DRAIN } pmode;
	char			*diverged;	/* why, once it did */
	/* per turn (planned): what it was admitted as unplanned since its
	 * last planned step (diverge's "instead") */
	struct gate_unp {
		uint32_t	 n;
		char		 what[384];
	}			*unp;
	uint32_t		 stepno;	/* steps taken, by any strategy */
	int			 last_turn;	/* the last step's turn, or -1 */
	int			 last_lane;	/* ... and its lane */
	/* when: steps (gate_set_step_check) */
	gate_step_fn		 check_fn;
	void			*check_arg;
	_Atomic bool		 check_on;
	bool			 check_over;	/* it broke, or could not run */
	uint32_t		 checked_at;	/* the step after which it last ran */
	_Atomic uint32_t	 nchecks;
	int			 open_tx;	/* entries with in_tx */
	int			 round_no;	/* gate_round's */
};

static inline bool
held_st(enum gate_st st)
{
	return st == GS_WAIT || st == GS_LOCK || st == GS_STUCK;
}

/* Every state change of an entry goes through here (STYLE.md 6). */
static inline void
ent_set(struct gate *g, struct gate_ent *e, enum gate_st st)
{
	if (e->st == st)
		return;
	log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": %s -> %s",
	    g->name, e->turn, e->rec->conn, e->rec->exchange,
	    gate_st_names[e->st], gate_st_names[st]);
	if (held_st(e->st) && !held_st(st)) {
		g->held[e->turn]--;
		g->mine[e->turn]--;
	} else if (!held_st(e->st) && held_st(st)) {
		g->held[e->turn]++;
		g->mine[e->turn]++;
	}
	if (e->st == GS_OUT) {
		e->prev = NULL;
		e->next = g->ents;
		if (g->ents)
			g->ents->prev = e;
		g->ents = e;
	} else if (st == GS_OUT) {
		if (e->prev)
			e->prev->next = e->next;
		else
			g->ents = e->next;
		if (e->next)
			e->next->prev = e->prev;
		e->next = e->prev = NULL;
	}
	g->n[e->st]--;
	g->n[st]++;
	e->st = st;
}

/* Comes back at `at` at the latest. */
static inline void
gate_at(struct gate *g, int64_t at)
{
	if (g->next_at == 0 || at < g->next_at)
		g->next_at = at;
}

/*
 * Wake-ups (docs/faults.md "Wake-ups"): a backend
 * PostgreSQL says waits on a lock is stopped (SIGSTOP; it sleeps in the
 * lock manager holding no lightweight lock), so that when the holder's
 * transaction ends and every waiter is granted at once, none runs until
 * the gate lets it: one at a time, first admitted first, each until its
 * statement ends or waits again.  Only for a server on this host whose
 * backends are children of the side connection's postmaster.
 */
void	gate_backend_stop(struct gate *g, struct gate_ent *e);
/* gate_conf.starved's default: /proc's schedstat of e's backend (on soak's
 * own server only: another's pid means nothing here) and of this thread */
int64_t	gate_starved_ms(const struct gate *g, const struct gate_ent *e);
void	gate_backend_cont(struct gate *g, struct gate_ent *e);

/* gate_side.c, called by gate.c */

/* Blocking, once per gate, before the loop starts; a failure is not fatal. */
void	gate_side_open(struct gate *g, const char *conninfo);
void	gate_side_close(struct gate *g);
/* What PostgreSQL must be told or asked before anything is admitted. */
void	gate_side_work(struct gate *g, int64_t now);
/*
 * Asks whether a connection that is not one of the turns' (a service's
 * own) waits on a lock held by a backend whose next statement the gate
 * holds.
 */
void	gate_side_ask_outside(struct gate *g, int64_t now);

#endif
