/*
 * Scheduled admission (gate.h): which exchange of which turn goes next,
 * the watchdogs (`arrival`, `blocked`), the checks between steps, and the
 * plan's pick (docs/plan.md).  What PostgreSQL is asked on the side
 * connection, and the deadlock-cycle finder, are gate_side.c's; the
 * struct and the entries' state setter they share are in gate_int.h.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/gate_int.h"
#include "fault-proxy/sched.h"

/* ---- admission ---- */

/*
 * A timeout decided: the admitted exchange, or one whose lock was granted,
 * has not ended within blocked_ms and PostgreSQL did not say it waits (or
 * cannot be asked): it is taken as stuck, and the gate goes on.
 */
static void
timeouts(struct gate *g, int64_t now)
{
	struct gate_ent	*e;

	if ((e = g->running) != NULL) {
		if (now - g->running_since < g->blocked_ms)
			gate_at(g, g->running_since + g->blocked_ms);
		else {
			log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": not "
			    "done in %lldms: taken as waiting on a lock", g->name,
			    e->turn, e->rec->conn, e->rec->exchange,
			    (long long)g->blocked_ms);
			e->rec->forced = "blocked";
			ent_set(g, e, GS_STUCK);
			g->stats.forced++;
			g->running = NULL;
			g->free_since = now;
		}
	}
	if (g->n[GS_WOKE] == 0)
		return;
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->st != GS_WOKE)
			continue;
		if (now - e->since < g->blocked_ms)
			gate_at(g, e->since + g->blocked_ms);
		else {
			log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": its "
			    "lock granted, not done in %lldms: taken as stuck",
			    g->name, e->turn, e->rec->conn, e->rec->exchange,
			    (long long)g->blocked_ms);
			e->rec->forced = "blocked";
			ent_set(g, e, GS_STUCK);
			g->stats.forced++;
			g->free_since = now;
		}
	}
}

/*
 * Whether every live turn is accounted for (gate.h): ready here, blocked
 * here, held at another gate, or not live.  Fills ready[], oldest[], the
 * waiting set and the earliest waiter; *idle counts the turns waited for,
 * *idles has their bits (a forced decision's trace says which, "idle").
 */
static int
account(struct gate *g, uint64_t *cand, int64_t *earliest, int *idle,
    uint64_t *idles)
{
	struct gate_ent	*e;
	int		 t, nready = 0;

	memset(g->oldest, 0, (size_t)g->nturns * sizeof(*g->oldest));
	memset(g->blocked, 0, (size_t)g->nturns * sizeof(*g->blocked));
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->st == GS_LOCK || e->st == GS_STUCK)
			g->blocked[e->turn] = true;
		if (e->st == GS_WAIT && (g->oldest[e->turn] == NULL ||
		    e->seq < g->oldest[e->turn]->seq))
			g->oldest[e->turn] = e;
	}
	*cand = 0;
	*earliest = INT64_MAX;
	*idle = 0;
	*idles = 0;
	for (t = 0; t < g->nturns; t++) {
		g->ready[t] = g->oldest[t] != NULL;
		if (g->ready[t]) {
			nready++;
			if (t < 64)
				*cand |= (uint64_t)1 << t;
			if (g->oldest[t]->since < *earliest)
				*earliest = g->oldest[t]->since;
		} else if (g->live[t] && !g->blocked[t] &&
		    g->held[t] <= g->mine[t]) {
			(*idle)++;
			if (t < 64)
				*idles |= (uint64_t)1 << t;
		}
	}
	return nready;
}

/*
 * Some live turn has sent nothing: wait for it, up to `arrival`, unless
 * PostgreSQL shows a wait outside the proxy on a held turn's lock.  NULL
 * while waiting; else the mark the decision gets.
 */
static const char *
idle_turns(struct gate *g, int64_t now, int64_t earliest, bool *go)
{
	int64_t	from;

	*go = false;
	if (g->outside_gen == g->gen && g->outside > 0) {
		g->outside = 0;		/* one decision per answer */
		*go = true;
		return "outside";
	}
	from = g->free_since > earliest ? g->free_since : earliest;
	if (now - from >= g->arrival_ms) {
		*go = true;
		return "arrival";
	}
	gate_at(g, from + g->arrival_ms);
	if (g->side != NULL && g->q == Q_NONE && now >= g->outside_at)
		gate_side_ask_outside(g, now);
	if (g->side != NULL)
		gate_at(g, g->outside_at);
	return NULL;
}

/* ---- under a plan ---- */

static bool
step_is(const struct plan_step *s, const struct gate_ent *e)
{
	return s->round == e->round && s->turn == e->turn && s->key == e->key &&
	    s->occ == e->occ;
}

/* The plan's unused step e's exchange is, or SIZE_MAX: unplanned. */
static size_t
planned_as(const struct gate *g, const struct gate_ent *e)
{
	size_t	i;

	if (g->plan == NULL || e->key == 0)
		return SIZE_MAX;
	for (i = g->cursor; i < g->plan->nsteps; i++)
		if (!g->used[i] && step_is(&g->plan->steps[i], e))
			return i;
	return SIZE_MAX;
}

static void
use_step(struct gate *g, size_t i)
{
	g->used[i] = true;
	while (g->cursor < g->plan->nsteps && g->used[g->cursor])
		g->cursor++;
}

/* "turn 2's SELECT items_reserved … (occurrence 1)" */
static void
put_ent(char *buf, size_t len, const struct gate_ent *e)
{
	snprintf(buf, len, "turn %d's %s (occurrence %" PRIu32 ")", e->turn,
	    e->rec->sql[0] ? e->rec->sql : e->rec->req[0] ? e->rec->req :
	    e->rec->pg ? e->rec->pg : "exchange", e->occ);
}

/*
 * The plan's next exchange cannot come: say where, what was waiting, and
 * the nearest match (the same turn's held exchange, else another
 * occurrence of the step's key), once; then go on as then_seed says.
 */
static void
diverge(struct gate *g, const char *why)
{
	const struct plan_step	*s = &g->plan->steps[g->cursor];
	struct gate_ent		*e, *near = NULL;
	char			 text[2048], one[256], hex[24];
	size_t			 o;
	int			 n = 0;

	if (g->diverged != NULL)
		return;
	o = (size_t)snprintf(text, sizeof(text), "the plan diverged at step %zu "
	    "of proxy %s: it wanted turn %d's %s (key %s, occurrence %" PRIu32
	    ", round %d), but %s; waiting:", g->cursor + 1, g->name, s->turn,
	    s->what ? s->what : "exchange", plan_key_hex(s->key, hex, sizeof(hex)),
	    s->occ, s->round, why);
	for (e = g->ents; e != NULL && o < sizeof(text); e = e->next) {
		if (e->st != GS_WAIT)
			continue;
		put_ent(one, sizeof(one), e);
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s %s",
		    n++ ? "," : "", one);
		if (e->turn == s->turn || (near == NULL && e->key == s->key))
			near = e;
	}
	if (n == 0 && o < sizeof(text))
		o += (size_t)snprintf(text + o, sizeof(text) - o, " nothing");
	if (near != NULL && o < sizeof(text)) {
		put_ent(one, sizeof(one), near);
		snprintf(text + o, sizeof(text) - o, "; nearest: %s", one);
	}
	g->diverged = xstrdup(text);
	g->pmode = g->then_seed ? PM_SEED : PM_DRAIN;
	log_warnx("seed %" PRIu64 ": %s", g->seed, text);
}

/*
 * An explorer's prefix (plan.h, plan_proxy.prefix): its next step, and
 * nothing else, while it has one; then the last step's turn while it has
 * an exchange waiting, else the lowest turn that has one, marked
 * "explore".  -1 when the step cannot come (a divergence: the scenario did
 * not do again what it did when the prefix was recorded).
 */
static int
prefix_pick(struct gate *g, const char **mark)
{
	const struct plan_step	*s;
	int			 t;

	if (g->cursor < g->plan->nsteps) {
		s = &g->plan->steps[g->cursor];
		t = s->turn;
		if (t >= 0 && t < g->nturns && g->ready[t] && step_is(s, g->oldest[t])) {
			use_step(g, g->cursor);
			return t;
		}
		diverge(g, t >= 0 && t < g->nturns && g->ready[t] ? "its turn has "
		    "another exchange waiting" : t >= 0 && t < g->nturns &&
		    g->blocked[t] ? "its turn waits on a lock" : t >= 0 &&
		    t < g->nturns && g->live[t] ? "every live turn is held or "
		    "blocked, and none with it" : "its turn is not running");
		return -1;
	}
	*mark = "explore";
	if (g->last_turn >= 0 && g->ready[g->last_turn])
		return g->last_turn;
	for (t = 0; t < g->nturns; t++)
		if (g->ready[t])
			return t;
	return -1;
}

/*
 * The plan's choice among the waiting turns (docs/plan.md's rules), or -1
 * when it diverged (the caller then picks as its mode says).
 */
static int
plan_pick(struct gate *g, const char **mark, uint32_t *deferred)
{
	const struct plan_step	*s;
	struct gate_ent		*e, *lock = NULL;
	size_t			 j;
	int			 t;

	*mark = NULL;
	*deferred = 0;
	if (g->plan->prefix)
		return prefix_pick(g, mark);
	for (t = 0; t < g->nturns; t++)		/* 1: unplanned, lowest turn */
		if (g->ready[t] && planned_as(g, g->oldest[t]) == SIZE_MAX) {
			*mark = "unplanned";
			return t;
		}
	if (g->cursor >= g->plan->nsteps) {
		for (t = 0; t < g->nturns && !g->ready[t]; t++)
			;
		*mark = "unplanned";	/* not reached: every step is used */
		return t < g->nturns ? t : -1;
	}
	s = &g->plan->steps[g->cursor];
	for (t = 0; t < g->nturns; t++)		/* 2: the next step */
		if (g->ready[t] && step_is(s, g->oldest[t])) {
			use_step(g, g->cursor);
			return t;
		}
	if (s->turn < g->nturns && g->blocked[s->turn]) {
		uint64_t	holders = 0, seen = 0, more;
		int		u;

		/*
		 * 3: it waits on a lock: its holders' next planned step first,
		 * in plan order.  A holder that waits on a lock itself passes it
		 * on to its own holders (FOR UPDATE queues: the second reader
		 * waits on the first waiter, which waits on the owner).
		 */
		for (e = g->ents; e != NULL; e = e->next)
			if (e->turn == s->turn && e->st == GS_LOCK)
				lock = e;
		more = lock != NULL ? lock->rec->waits_on : 0;
		while ((more &= ~seen) != 0) {
			seen |= more;
			holders |= more;
			for (u = 0, more = 0; u < g->nturns && u < 64; u++)
				if ((seen >> u & 1) && g->blocked[u])
					for (e = g->ents; e != NULL; e = e->next)
						if (e->turn == u && e->st == GS_LOCK)
							more |= e->rec->waits_on;
		}
		for (j = g->cursor + 1; lock != NULL && j < g->plan->nsteps; j++) {
			const struct plan_step	*h = &g->plan->steps[j];

			if (g->used[j] || h->turn >= 64 ||
			    !(holders >> h->turn & 1) ||
			    !g->ready[h->turn] || !step_is(h, g->oldest[h->turn]))
				continue;
			*mark = "lock-deferred";
			*deferred = (uint32_t)g->cursor + 1;
			use_step(g, j);
			return h->turn;
		}
		diverge(g, "its turn waits on a lock whose holders have no planned "
		    "step waiting");
		return -1;
	}
	diverge(g, s->turn < g->nturns && g->live[s->turn] ? "every live turn "
	    "is held or blocked, and none with it" : "its turn is not running");
	return -1;
}

/*
 * Turn t exited: a step of its still to come never will.  Its last
 * exchange has been admitted by then (a turn waits for its answers), so
 * an unused step of (round, t) at or before the rounds that have run is
 * a divergence.
 */
static void
plan_exited(struct gate *g, int turn)
{
	size_t	i;

	if (g->plan == NULL || g->pmode != PM_PLAN)
		return;
	for (i = g->cursor; i < g->plan->nsteps; i++)
		if (!g->used[i] && g->plan->steps[i].turn == turn &&
		    g->plan->steps[i].round <= g->round_no) {
			size_t	keep = g->cursor;
			char	why[96];

			g->cursor = i;
			snprintf(why, sizeof(why), "turn %d exited without it", turn);
			diverge(g, why);
			g->cursor = keep;
			return;
		}
}

int
gate_diverged(const struct gate *g, char *buf, size_t len)
{
	if (g->diverged == NULL)
		return 0;
	snprintf(buf, len, "%s", g->diverged);
	return 1;
}

/* What a step waited for its actors (gate_stats): since the gate was free
 * with something waiting. */
static void
actor_wait(struct gate *g, int64_t now, int64_t earliest, uint32_t step)
{
	int64_t	from = g->free_since > earliest ? g->free_since : earliest;
	int64_t	ms = now > from ? now - from : 0;

	g->stats.wait_ms += (uint64_t)ms;
	if (ms > (int64_t)g->stats.wait_max_ms) {
		g->stats.wait_max_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
		g->stats.wait_max_step = step;
	}
}

struct gate_ent *
gate_decide(struct gate *g, int64_t now)
{
	struct gate_ent	*e;
	const char	*forced = NULL, *mark;
	int64_t		 earliest;
	uint64_t	 cand, idles;
	uint32_t	 deferred;
	int		 t, k, idle;
	bool		 go;

	g->next_at = 0;
	timeouts(g, now);
	gate_side_work(g, now);
	if (g->n[GS_WAIT] == 0 || g->running != NULL || g->n[GS_WOKE] > 0 ||
	    g->victim != NULL || (g->side != NULL && g->n[GS_LOCK] > 0 &&
	    !g->settled))
		return NULL;
	if (account(g, &cand, &earliest, &idle, &idles) == 0)
		return NULL;
	if (idle > 0) {
		forced = idle_turns(g, now, earliest, &go);
		if (!go)
			return NULL;
		g->stats.forced++;
	}
	/* when: steps: the state between two steps, no transaction open */
	if (atomic_load_explicit(&g->check_on, memory_order_acquire) &&
	    !g->check_over && g->stepno > g->checked_at && g->n[GS_LOCK] == 0 &&
	    g->open_tx == 0) {
		g->checked_at = g->stepno;
		atomic_fetch_add(&g->nchecks, 1);
		if (g->check_fn(g->check_arg, g->round_no, g->stepno) != 0)
			g->check_over = true;
	}
	g->outside_every = LOCK_PROBE_MS;
	g->outside_at = 0;
	mark = NULL;
	deferred = 0;
	t = -1;
	if (g->planned && g->pmode == PM_PLAN) {
		if (g->plan != NULL)
			t = plan_pick(g, &mark, &deferred);
		else
			mark = "unplanned";	/* a proxy the plan has no steps for */
	}
	if (t == -1 && g->planned && g->pmode == PM_DRAIN) {
		/* diverged: the oldest first, so the turns run to their end */
		for (k = 0; k < g->nturns; k++)
			if (g->ready[k] && (t == -1 ||
			    g->oldest[k]->seq < g->oldest[t]->seq))
				t = k;
		mark = "after divergence";
	}
	if (t == -1) {
		t = sched_pick(g->s, g->ready);
		if (g->planned && g->pmode != PM_PLAN)
			mark = "after divergence";
	}
	e = g->oldest[t];
	ent_set(g, e, GS_RUN);
	g->last_turn = t;
	e->rec->step = ++g->stepno;
	e->rec->cand = cand;
	actor_wait(g, now, earliest, e->rec->step);
	e->rec->forced = forced;
	e->rec->idle = forced != NULL ? idles : 0;
	e->rec->plan = mark;
	e->rec->deferred = deferred;
	g->stats.steps = e->rec->step;
	g->running = e;
	g->running_since = now;
	g->settled = false;
	gate_at(g, now + g->blocked_ms);	/* come back if it never ends */
	if (g->side != NULL && e->pid > 0)	/* or ask PostgreSQL before */
		gate_at(g, g->probe_at = now + LOCK_PROBE_MS);
	log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": step %" PRIu32
	    " of the schedule (waiting: %" PRIx64 "%s%s)", g->name, e->turn,
	    e->rec->conn, e->rec->exchange, e->rec->step, cand,
	    forced ? ", forced by " : "", forced ? forced : "");
	return e;
}

int64_t
gate_next_at(const struct gate *g)
{
	return g->next_at;
}

void
gate_wait(struct gate *g, struct gate_ent *e, int64_t now)
{
	e->seq = ++g->seq;
	e->since = now;
	e->victim = false;
	ent_set(g, e, GS_WAIT);
}

/*
 * e's exchange ended its transaction (ReadyForQuery idle, or failed: its
 * locks are gone either way).  Every exchange that waited on e's turn, or
 * on a turn that waits on it (a row's lock queue behind another waiter),
 * wakes; when two or more do, which takes the row first is PostgreSQL's
 * order, not the schedule's.  The trace says so ("wakes": the turns
 * woken), for a reader of a replay that parts from the run's there.
 */
static void
mark_wakes(struct gate *g, struct gate_ent *e)
{
	struct gate_ent	*w;
	uint64_t	 reach, woken = 0;
	int		 n = 0;
	bool		 grew = true;

	if (e->turn >= 64 || (e->rec->tx != 'I' && e->rec->tx != 'E'))
		return;
	reach = (uint64_t)1 << e->turn;
	while (grew) {
		grew = false;
		for (w = g->ents; w != NULL; w = w->next) {
			if (w->st != GS_LOCK || w->turn >= 64 ||
			    (w->rec->waits_on & reach) == 0 ||
			    (woken >> w->turn & 1))
				continue;
			woken |= (uint64_t)1 << w->turn;
			reach |= (uint64_t)1 << w->turn;
			n++;
			grew = true;
		}
	}
	if (n >= 2) {
		e->rec->wakes = woken;
		g->stats.wakes++;
	}
}

/* e's connection has, or has not, a transaction open now. */
static void
set_in_tx(struct gate *g, struct gate_ent *e, bool in)
{
	if (e->in_tx == in)
		return;
	e->in_tx = in;
	g->open_tx += in ? 1 : -1;
}

void
gate_end(struct gate *g, struct gate_ent *e, int64_t now)
{
	/* ReadyForQuery's status, when the exchange reached one */
	if (e->rec != NULL && e->rec->tx != '\0')
		set_in_tx(g, e, e->rec->tx == 'T' || e->rec->tx == 'E');
	if (e->st == GS_OUT)
		return;
	mark_wakes(g, e);
	if (g->running == e || e->st == GS_WOKE ||
	    (e->st == GS_LOCK && g->side == NULL))
		g->free_since = now;
	if (g->running == e)
		g->running = NULL;
	if (g->victim == e)
		g->victim = NULL;
	ent_set(g, e, GS_OUT);
	g->gen++;	/* a lock may have been released */
	g->settled = false;
}

void
gate_conn_closed(struct gate *g, struct gate_ent *e)
{
	set_in_tx(g, e, false);		/* PostgreSQL rolls it back */
	g->gen++;
	g->settled = false;
}

void
gate_backend(struct gate *g, int32_t pid, int turn)
{
	if (pid <= 0)
		return;
	if (g->nbe == g->capbe) {
		g->capbe = g->capbe ? g->capbe * 2 : 16;
		g->be = xreallocarray(g->be, g->capbe, sizeof(*g->be));
	}
	g->be[g->nbe++] = (struct backend){ pid, turn };
}

void
gate_backend_gone(struct gate *g, int32_t pid)
{
	size_t	i;

	for (i = 0; i < g->nbe; i++)
		if (g->be[i].pid == pid) {
			g->be[i] = g->be[--g->nbe];
			return;
		}
}

void
gate_live(struct gate *g, int turn, bool live)
{
	if (turn < 0 || turn >= g->nturns)
		return;
	if (g->live[turn] && !live)
		plan_exited(g, turn);
	g->live[turn] = live;
}

void
gate_set_step_check(struct gate *g, gate_step_fn fn, void *arg)
{
	g->check_fn = fn;
	g->check_arg = arg;
	atomic_store_explicit(&g->check_on, fn != NULL, memory_order_release);
}

uint32_t
gate_step_checks(const struct gate *g)
{
	return atomic_load(&g->nchecks);
}

void
gate_round(struct gate *g, int round, const bool *runs)
{
	int	t;

	g->round_no = round;
	g->last_turn = -1;
	for (t = 0; t < g->nturns; t++)
		g->live[t] = runs == NULL || runs[t];
}

struct gate *
gate_new(const struct gate_conf *c, char *err)
{
	const struct cfg_schedule	*sc = c->sched;
	struct gate			*g;

	g = xcalloc(1, sizeof(*g));
	g->name = xstrdup(c->name);
	g->seed = c->seed;
	g->nturns = c->nturns;
	g->arrival_ms = sc->arrival_ms;
	g->blocked_ms = sc->blocked_ms;
	g->held = c->held;
	g->epfd = c->epfd;
	g->sep.fd = -1;
	g->outside_every = LOCK_PROBE_MS;
	g->s = sched_new(sc->mode == CFG_SCHED_RANDOM ? SCHED_RANDOM : SCHED_PCT,
	    c->seed, c->name, c->nturns, sc->depth, (uint32_t)sc->steps);
	if (g->s == NULL) {
		errf(err, "proxy %s: a schedule of %d turns, depth %d and %d steps "
		    "cannot be made", c->name, c->nturns, sc->depth, sc->steps);
		gate_free(g);
		return NULL;
	}
	g->live = xcalloc((size_t)c->nturns, sizeof(*g->live));
	g->mine = xcalloc((size_t)c->nturns, sizeof(*g->mine));
	g->ready = xcalloc((size_t)c->nturns, sizeof(*g->ready));
	g->blocked = xcalloc((size_t)c->nturns, sizeof(*g->blocked));
	g->oldest = xcalloc((size_t)c->nturns, sizeof(*g->oldest));
	gate_round(g, 0, NULL);
	g->planned = c->planned;
	g->plan = c->plan;
	g->then_seed = c->then_seed;
	if (c->plan != NULL)
		g->used = xcalloc(c->plan->nsteps + 1, sizeof(*g->used));
	gate_side_open(g, c->lockinfo);
	return g;
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	gate_side_close(g);
	sched_free(g->s);
	free(g->name);
	free(g->live);
	free(g->mine);
	free(g->ready);
	free(g->blocked);
	free(g->oldest);
	free(g->be);
	free(g->rows);
	free(g->used);
	free(g->diverged);
	free(g);
}

void
gate_stats(const struct gate *g, struct gate_stats *out)
{
	*out = g->stats;
}

const char *
gate_name(const struct gate *g)
{
	return g->name;
}
