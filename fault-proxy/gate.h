/*
 * The gate: scheduled admission of one proxy's exchanges across the turns
 * of a seed (docs/faults.md "Schedules"), private to fault-proxy.  One gate per
 * scheduled proxy of a proxy_set; every listener of that proxy feeds it.
 *
 * The gate decides and the engine acts, as coord.h's bookkeeping decides
 * for the coordinator's server: the engine tells the gate what happened (an
 * exchange is known and waits, it ended, a turn started or exited, the
 * side connection is readable) and asks it what to admit next
 * (gate_decide); the gate never calls back into the connection code.  So
 * the gate can be driven without sockets (tests/unit/test_gate.c), and a
 * strategy other than the seeded one (a plan, an explorer) plugs in at
 * gate_decide's pick.
 *
 * What the gate waits for (docs/faults.md "Actors").  One exchange runs
 * at a time.  The next is chosen among the waiting ones once every turn
 * that may still send one is accounted for, by the engine's view of the
 * turn's processes (gate_conf.actor, quiet.h): GA_GONE and GA_QUIET are
 * accounted for; GA_BUSY (a reply on its way at another proxy) is waited
 * for with no watchdog; GA_RUNNING, GA_TIMED and GA_UNSEEN are waited for
 * under `arrival`, counted from when the turn left every proxy, and looked
 * at again every ACTOR_LOOK_MS, backing off to ACTOR_LOOK_MAX_MS.  Without
 * that view (GA_UNKNOWN: `soak proxy`, the unit tests) a live turn is
 * waited for until it has something held anywhere: an exchange waiting
 * here or at another gate of the set, one PostgreSQL says waits on a lock,
 * one `blocked` passed.  Two timeouts remain, both watchdogs whose
 * decisions are marked in the trace (`forced`): `arrival` and `blocked`
 * (an admitted exchange that neither answers nor waits on a lock).  A
 * third mark, "outside", is a decision made without waiting for idle turns
 * because PostgreSQL showed a connection that is not the proxy's waiting
 * on a lock held by a turn whose next statement the gate holds: a circular
 * wait through something outside the schedule (a database connection of
 * a service's whose turn could not be told, or of a program soak does not
 * proxy), which only the watchdog would otherwise break.
 *
 * Services (docs/faults.md "Services under a schedule").  A service's
 * exchange enters the gate as an entry of the turn whose request it
 * serves (gate_ent_turn, the engine's attribution), with a lane in that
 * turn like the turn's own connection's: the gate orders turns, and a
 * service's statements are steps of the turns they serve.  Whether such a
 * turn is accounted for is the engine's word (gate_conf.actor): its
 * request in a quiet service's hands is; in a running one's it is busy.
 *
 * Actors are connections.  A turn may have several connections open at
 * once (threads, a pool), each with an exchange waiting.  At a decision
 * each connection that has none gets a lane, the lowest free of its turn,
 * in the order of what it asks (key, then canon: its whole request), then
 * who asks (origin: the thread and descriptor the engine saw waiting on
 * it), then arrival; the lane is its connection's until it closes.  The
 * seed's scheduler picks a turn, then among its waiting lanes one by a
 * draw keyed by the step; a plan's step names (round, turn, lane, key,
 * occurrence).  Occurrences are the gate's, counted per (turn, key) in
 * admission order, and the engine rolls a scheduled exchange's faults by
 * them (proxy_roll_hit), so neither depends on which thread arrived first.
 * The trace's "acand" names the actors waiting (bit lane * turns + turn)
 * when any lane other than 0 was.
 *
 * PostgreSQL is asked, not a clock, on a connection of the gate's own (the
 * side connection, gate_conf.lockinfo): while an admitted exchange has not
 * answered, every LOCK_PROBE_MS, which of the exchanges in flight wait on
 * a lock and whose (pg_blocking_pids).  A waiting exchange frees the gate;
 * one whose lock was granted is waited for like the admitted one.
 *
 * Deadlocks are decided by soak: when the answers show a cycle among the
 * gate's exchanges that wait on locks, the victim is the cycle's exchange
 * admitted first (the lowest step: the first to start waiting, which is
 * the backend PostgreSQL's own detector aborts when the cycle closes
 * within deadlock_timeout), its statement is cancelled with
 * pg_cancel_backend(), and the engine hands its client the error
 * PostgreSQL's detector would have sent (SQLSTATE 40P01; conn.c).  The
 * trace marks it "deadlock":"soak"; nothing is admitted until its
 * exchange has ended.  The embedded database runs with a deadlock_timeout
 * long enough that PostgreSQL's own detector never runs first; on a server
 * of your own it can (its default is 1 s), and an exchange it aborted is
 * marked "deadlock":"postgres".
 *
 * Wake-ups: when a transaction ends while two or more of the gate's
 * exchanges wait on its locks, PostgreSQL wakes them, and which takes the
 * row first is its own race.  On soak's own server (common/soak.h
 * SOAK_PG_MARK) the gate decides it: a backend found waiting on a lock is
 * stopped (SIGSTOP), and the ones a transaction's end grants go one at a
 * time in admission order (gate_int.h, gate_backend_stop).  On any other
 * server the race stays PostgreSQL's, and the ending exchange's
 * trace record says so ("wakes": the turns woken), and a replay that
 * parts from the run's there has a reason the trace names.  A waiter
 * queued behind another on a row's tuple lock (it waits on the first
 * waiter, not on the holder's transaction id, pg_locks says) counts too:
 * when the holder updated the row, the first waiter and the ones behind
 * it all follow the update to the row's new version, and which locks it
 * first is PostgreSQL's order.  Measured on PostgreSQL 15 (three
 * sessions, 300 tries each): the second waiter wrote first 13 times when
 * the holder had updated the row, never when it had only locked it (FOR
 * UPDATE); a rule that counted only waiters on the transaction id left
 * replays of schedule_turns' wallet parting with no reason in the trace.
 *
 * Under a plan (docs/plan.md) the pick is the plan's: unplanned exchanges
 * first (lowest turn first), then the plan's next step; a step whose turn
 * PostgreSQL says waits on a lock is deferred behind its holder's next
 * planned step; anything else is a divergence, reported once, after which
 * the seed's scheduler goes on (then_seed) or the gate admits in arrival
 * order until the turns end.  The watchdogs and PostgreSQL's answers work
 * as for a seed.
 *
 * Costs: gate_decide scans the gate's entries (the exchanges in it, at
 * most one per connection of its turns) and its turns, O(entries + turns),
 * once per loop pass that has anything for it.
 */
#ifndef SOAK_PROXY_GATE_H
#define SOAK_PROXY_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/plan.h"
#include "fault-proxy/proxy.h"

struct gate;

enum gate_st {
	GS_OUT,		/* not in the gate: not yet known, or over */
	GS_WAIT,	/* known, waiting to be admitted */
	GS_RUN,		/* admitted, not answered: the gate is not free */
	GS_LOCK,	/* admitted, PostgreSQL says it waits on a lock */
	GS_WOKE,	/* its lock was granted: waited for like GS_RUN */
	GS_STUCK,	/* `blocked` passed it: the gate goes on without it */
	GS_MAX
};

/*
 * One exchange as the gate sees it, embedded in the engine's connection.
 * The engine fills turn, pid and rec before gate_wait and keeps pid
 * current; the rest is the gate's.
 */
struct gate_ent {
	int			 turn;
	int			 round;		/* what it hits (docs/plan.md) */
	uint64_t		 key;		/* 0: unknown, never planned */
	/* its occurrence among the turn's admitted exchanges of key in the
	 * round: the gate's, set when it is admitted (while it waits: the
	 * one it would get) */
	uint32_t		 occ;
	/* what it says in full (its statement or request line), hashed: the
	 * order of a turn's new connections among themselves (the engine's) */
	uint64_t		 canon;
	/* who sent it, when the engine saw (quiet.h, origin: process, thread
	 * and descriptor ranks); 0: not seen */
	uint64_t		 origin;
	int32_t			 pid;		/* PostgreSQL backend; 0: none known */
	struct proxy_trace_rec	*rec;		/* step, cand, forced, waits_on, deadlock */
	/* the gate's */
	enum gate_st		 st;
	struct gate_ent		*next, *prev;	/* the gate's entries not GS_OUT */
	uint64_t		 seq;		/* arrival order */
	int64_t			 since;		/* waiting, or woke, since */
	bool			 victim;	/* soak cancelled it: a deadlock */
	int64_t			 starved;	/* gate_conf.starved when admitted or
						   woken (ms) */
	bool			 stopped;	/* its backend SIGSTOPped while it waits
						   on a lock (gate_int.h "Wake-ups") */
	bool			 in_tx;		/* its connection's last exchange left
						   a transaction open (T or E) */
	/* its connection's lane within the turn (gate.h "Actors"), -1 until
	 * the gate gives it one; kept from exchange to exchange, given back
	 * when the connection closes */
	int			 lane;
};

/* The engine, before an entry's first gate_wait: no lane yet. */
#define GATE_ENT_INIT(e)	((e)->lane = -1)

/*
 * What a live turn's processes are doing, as the engine sees them through
 * /proc (quiet.h) and its own connections (gate_conf.actor).
 */
enum gate_act {
	GA_UNKNOWN,	/* no process known: the rule without /proc (a turn is
			   waited for until it has an exchange held somewhere) */
	GA_GONE,	/* no process left: it sends nothing more */
	GA_QUIET,	/* every thread waits on soak (a held exchange, a reply
			   of an admitted one, an idle connection) or on the turn
			   itself: nothing more comes until the gate admits */
	GA_BUSY,	/* quiet, but a reply it waits for is on its way at
			   another proxy (a model, a tool server): waited for,
			   with no watchdog */
	GA_RUNNING,	/* a thread computes: waited for, `arrival` bounds the
			   time it ran (*ran_ms), not the time it waited for a
			   core: a loaded machine makes no turn late */
	GA_TIMED,	/* a wait that ends by itself: `arrival` */
	GA_UNSEEN,	/* a wait soak cannot see the end of: `arrival` */
	GA_MAX
};
const char	*gate_act_name(enum gate_act a);
/*
 * How long (ms, in all) exchange e's backend on soak's own server and the
 * calling thread have waited for a core (schedstat's run delay): `blocked`
 * counts an admitted exchange's time less what it spent so, so a loaded
 * machine makes no statement stuck.  NULL in gate_conf: /proc's.
 */
typedef int64_t	(*gate_starved_fn)(const struct gate *g, const struct gate_ent *e);
/* Whether e's reply has come in and waits unread by the proxy: the
 * statement is done (or under way), not blocked, however long the proxy's
 * own thread took to get to it. */
typedef bool	(*gate_replied_fn)(const struct gate *g, const struct gate_ent *e);

/* The engine's view of turn t now, for gate g (any cost it has is the
 * engine's); with GA_RUNNING, *ran_ms is how long its processes have run
 * in all (CPU time, ms), or -1 when that is not known (then `arrival`
 * counts the wall clock). */
typedef enum gate_act	(*gate_actor_fn)(void *arg, const struct gate *g, int turn,
			    int64_t *ran_ms);

struct gate_conf {
	const char			*name;		/* the proxy's: keys the draws */
	int				 nturns;
	uint64_t			 seed;
	const struct cfg_schedule	*sched;
	/* libpq conninfo of the upstream database for lock probes, or NULL
	 * (then `blocked` alone passes a lock wait) */
	const char			*lockinfo;
	int				 epfd;		/* the side connection's socket */
	/* per turn, shared by the gates of one set: entries of the turn held
	 * at any gate (GS_WAIT, GS_LOCK, GS_STUCK); the set owns it */
	uint32_t			*held;
	/* under a plan: this proxy's steps (NULL with planned: none, every
	 * exchange unplanned); then_seed: after a divergence the seed's own
	 * scheduler goes on (else the gate admits in arrival order, so the
	 * turns end, and the seed is infra/diverged) */
	bool				 planned;
	const struct plan_proxy		*plan;
	bool				 then_seed;
	/* how the turns' processes are doing (NULL: not known, every turn
	 * GA_UNKNOWN) */
	gate_actor_fn			 actor;
	void				*actor_arg;
	gate_starved_fn			 starved;	/* NULL: /proc's */
	gate_replied_fn			 replied;	/* NULL: never known */
};

#define LOCK_PROBE_MS		2	/* between two asks while one runs */
#define ACTOR_LOOK_MS		1	/* a running turn looked at again, first */
#define ACTOR_LOOK_MAX_MS	16	/* ... backing off to this */
#define GATE_LANES		64	/* a turn's connections open at once */
#define OUTSIDE_PROBE_MAX_MS	50	/* the outside-wait ask backs off to this */

/* NULL with err when the schedule cannot be made. */
struct gate	*gate_new(const struct gate_conf *conf, char *err);
void		 gate_free(struct gate *g);

/* Whether turn t may still send an exchange in this round (the worker's
 * word); all turns are live until told otherwise. */
void		 gate_live(struct gate *g, int turn, bool live);
/* Round `round` begins: every turn of runs (NULL: all) is live again. */
void		 gate_round(struct gate *g, int round, const bool *runs);

/* e's exchange is known and waits for admission. */
void		 gate_wait(struct gate *g, struct gate_ent *e, int64_t now);
/* e's exchange is over (answered, or its connection closed), in any
 * state; a no-op for GS_OUT. */
void		 gate_end(struct gate *g, struct gate_ent *e, int64_t now);
/* A connection of the gate's turns closed (e its entry): it may have held
 * locks, and its transaction, if any, is over. */
void		 gate_conn_closed(struct gate *g, struct gate_ent *e);

/*
 * when: steps (docs/config.md): fn(arg, round, step) is called on the
 * proxy's thread before an admission, once after each step at which no
 * exchange runs or waits on a lock and no connection of the gate's turns
 * has a transaction open (ReadyForQuery said I); nothing is admitted while
 * it runs.  It returns 0 (the invariants held), 1 (one broke) or -1 (they
 * could not run): after 1 or -1 it is not called again.  Set before the
 * turns start (any thread; published with a release store).
 */
typedef int	(*gate_step_fn)(void *arg, int round, uint32_t step);
void		 gate_set_step_check(struct gate *g, gate_step_fn fn, void *arg);
/* How many times it ran (any thread). */
uint32_t	 gate_step_checks(const struct gate *g);
/*
 * The backend pid of a connection of turn t (BackendKeyData), so that the
 * turns holding a lock can be named; gone: the connection closed.  Every
 * connection, in an exchange or idle in a transaction, holds locks.
 */
void		 gate_backend(struct gate *g, int32_t pid, int turn);
/*
 * A service's connection (docs/faults.md "Services under a schedule")
 * serves turn `turn` from its next exchange on: e, not in the gate, is
 * that turn's from now (a lane it had in another turn is given back, a new
 * one given at the next decision), and so is its backend pid (0: none
 * known) when the gate names the turns that hold a lock.
 */
void		 gate_ent_turn(struct gate *g, struct gate_ent *e, int32_t pid,
		    int turn);
void		 gate_backend_gone(struct gate *g, int32_t pid);

/*
 * What to admit now, or NULL: runs the watchdogs, asks PostgreSQL what it
 * must know first, and picks among the waiting turns.  The entry returned
 * is GS_RUN with its rec's step, cand and forced filled; the engine admits
 * its exchange.  Call again until it returns NULL (today one at most).
 */
struct gate_ent	*gate_decide(struct gate *g, int64_t now);
/* When gate_decide wants to run again (a now_ms() instant), or 0. */
int64_t		 gate_next_at(const struct gate *g);

/*
 * Under a plan: whether it diverged, and why (gate.c says: the step, what
 * the plan wanted, what was waiting, the nearest match); 0 when not.
 */
int		 gate_diverged(const struct gate *g, char *buf, size_t len);

/* The side connection's socket is ready (EP_SIDE, owner the gate). */
void		 gate_side_event(struct gate *g, uint32_t ev, int64_t now);

/* Counts for the trace's readers and tests. */
struct gate_stats {
	uint32_t	steps;
	uint32_t	forced;		/* arrival, blocked and outside */
	uint32_t	lock_waits;
	uint32_t	deadlocks;	/* victims soak chose */
	uint32_t	wakes;		/* ends that woke several lock waiters */
	/* time the gate waited for its actors before deciding: from when it
	 * was free with an exchange waiting to the decision, summed over the
	 * steps, and the longest such wait and its step */
	uint64_t	wait_ms;
	uint32_t	wait_max_ms;
	uint32_t	wait_max_step;
};
void		 gate_stats(const struct gate *g, struct gate_stats *out);
const char	*gate_name(const struct gate *g);

#endif
