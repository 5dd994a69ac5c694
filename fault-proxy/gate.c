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
 * How long e has been admitted (or woken) since `since`, less the time its
 * backend and the gate's thread waited for a core: read only once the
 * clock alone says `blocked`, so a step costs no /proc read.
 */
static int64_t
waited(struct gate *g, const struct gate_ent *e, int64_t since, int64_t now)
{
	int64_t	w = now - since, s;

	if (w >= g->blocked_ms && (s = g->starved(g, e) - e->starved) > 0)
		w -= s;
	return w;
}

/*
 * e's reply is in and waits unread (gate_conf.replied): its statement ended
 * or is under way, and the proxy's thread was busy elsewhere (a /proc look
 * of a turn, a slow build).  Not `blocked`: looked at again shortly, by
 * when the loop has read it.
 */
static bool
replied_unread(struct gate *g, const struct gate_ent *e, int64_t now)
{
	if (g->replied == NULL || !g->replied(g, e))
		return false;
	gate_at(g, now + ACTOR_LOOK_MAX_MS);
	return true;
}

/*
 * A timeout decided: the admitted exchange, or one whose lock was granted,
 * has not ended within blocked_ms (its own time, not the machine's: the
 * time it waited for a core is not counted), no reply of it waits unread,
 * and PostgreSQL did not say it waits (or cannot be asked): it is taken as
 * stuck, and the gate goes on.
 */
static void
timeouts(struct gate *g, int64_t now)
{
	struct gate_ent	*e;
	int64_t		 w;

	if ((e = g->running) != NULL) {
		if ((w = waited(g, e, g->running_since, now)) < g->blocked_ms)
			gate_at(g, now + g->blocked_ms - w);
		else if (replied_unread(g, e, now))
			;
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
		if (e->st != GS_WOKE || e->stopped)
			continue;	/* a stopped one waits on the gate, not on a lock */
		if ((w = waited(g, e, e->since, now)) < g->blocked_ms)
			gate_at(g, now + g->blocked_ms - w);
		else if (replied_unread(g, e, now))
			;
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

/* ---- occurrences and lanes ---- */

static struct occ *
occ_find(struct gate *g, int turn, uint64_t key)
{
	size_t	i;

	for (i = 0; i < g->nocc; i++)
		if (g->occ[i].turn == turn && g->occ[i].key == key)
			return &g->occ[i];
	return NULL;
}

/* The occurrence the turn's next admitted exchange of key gets. */
static uint32_t
occ_peek(struct gate *g, int turn, uint64_t key)
{
	struct occ	*o = occ_find(g, turn, key);

	return o != NULL ? o->next : 0;
}

static void
occ_take(struct gate *g, int turn, uint64_t key)
{
	struct occ	*o = occ_find(g, turn, key);

	if (o == NULL) {
		if (g->nocc == g->capocc) {
			g->capocc = g->capocc ? g->capocc * 2 : 32;
			g->occ = xreallocarray(g->occ, g->capocc, sizeof(*g->occ));
		}
		o = &g->occ[g->nocc++];
		*o = (struct occ){ turn, key, 0 };
	}
	o->next++;
}

/* The order in which a turn's new connections get their lanes: by what
 * they ask (key, then the whole statement), then by who asks (the thread,
 * the descriptor: gate_ent.origin), then by arrival. */
static int
by_canon(const void *a, const void *b)
{
	const struct gate_ent	*x = *(const struct gate_ent *const *)a;
	const struct gate_ent	*y = *(const struct gate_ent *const *)b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->canon != y->canon)
		return x->canon < y->canon ? -1 : 1;
	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * Lanes for the waiting exchanges of connections that have none, at a
 * decision (every actor accounted for, so the set of them is the same in
 * every run of the seed): per turn, in by_canon's order, the lowest lanes
 * free.  Returns whether two of a turn's new connections could only be
 * told apart by arrival (the same key and statement): their lanes are then
 * not the seed's.
 */
static bool
lanes_give(struct gate *g)
{
	struct gate_ent	*e, *v[GATE_LANES];
	size_t		 n, i;
	bool		 tie = false;
	int		 t, l;

	for (t = 0; t < g->nturns; t++) {
		n = 0;
		for (e = g->ents; e != NULL; e = e->next)
			if (e->turn == t && e->st == GS_WAIT && e->lane < 0 &&
			    n < GATE_LANES)
				v[n++] = e;
		if (n == 0)
			continue;
		qsort(v, n, sizeof(*v), by_canon);
		for (i = 0; i < n; i++) {
			if (i > 0 && v[i]->key == v[i - 1]->key &&
			    v[i]->canon == v[i - 1]->canon &&
			    v[i]->origin == v[i - 1]->origin)
				tie = true;
			for (l = 0; l < GATE_LANES && (g->lanes[t] >> l & 1); l++)
				;
			if (l == GATE_LANES)
				break;		/* a turn of 64 connections at once */
			v[i]->lane = l;
			g->lanes[t] |= (uint64_t)1 << l;
		}
	}
	return tie;
}

/* Turn t's waiting exchange on lane l, or NULL. */
static struct gate_ent *
lane_waiting(const struct gate *g, int t, int l)
{
	struct gate_ent	*e;

	for (e = g->ents; e != NULL; e = e->next)
		if (e->st == GS_WAIT && e->turn == t && e->lane == l)
			return e;
	return NULL;
}

/* Turn t's lanes with an exchange waiting (bit l). */
static uint64_t
lanes_waiting(const struct gate *g, int t)
{
	struct gate_ent	*e;
	uint64_t	 m = 0;

	for (e = g->ents; e != NULL; e = e->next)
		if (e->st == GS_WAIT && e->turn == t && e->lane >= 0 &&
		    e->lane < 64)
			m |= (uint64_t)1 << e->lane;
	return m;
}

/*
 * Which of turn t's waiting lanes goes, when the seed's scheduler chose
 * the turn: one lane, that one; several, a draw of the seed's keyed by the
 * step (the same waiting lanes at the same step: the same choice).
 */
static struct gate_ent *
lane_pick(struct gate *g, int t)
{
	uint64_t	m = lanes_waiting(g, t), r;
	int		n = __builtin_popcountll(m), l;

	if (n <= 1)
		return g->oldest[t];
	r = seed_derive(g->seed ^ seed_str(g->name) ^ 0x6c616e6573ull /* "lanes" */,
	    (uint64_t)t, g->stepno + 1) % (uint64_t)n;
	for (l = 0; l < 64; l++)
		if ((m >> l & 1) && r-- == 0)
			break;
	return lane_waiting(g, t, l);
}

/* oldest[t]: turn t's waiting exchange of its lowest lane, once every
 * waiting exchange has one. */
static void
first_lanes(struct gate *g)
{
	struct gate_ent	*e;
	uint64_t	 m;
	int		 t;

	for (t = 0; t < g->nturns; t++)
		if (g->ready[t] && (m = lanes_waiting(g, t)) != 0 &&
		    (e = lane_waiting(g, t, __builtin_ctzll(m))) != NULL)
			g->oldest[t] = e;
}

/*
 * The actors waiting (the trace's "acand"): bit lane * nturns + turn, when
 * some waiting exchange is on a lane other than 0 (else 0: "cand" says it
 * all); *cut when an actor's bit would pass 63.
 */
static uint64_t
actors_waiting(const struct gate *g, bool *cut)
{
	struct gate_ent	*e;
	uint64_t	 m = 0;
	bool		 more = false;
	long		 bit;

	*cut = false;
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->st != GS_WAIT || e->lane < 0)
			continue;
		if (e->lane > 0)
			more = true;
		bit = (long)e->lane * g->nturns + e->turn;
		if (bit >= 64)
			*cut = true;
		else
			m |= (uint64_t)1 << bit;
	}
	if (!more) {
		*cut = false;
		return 0;
	}
	return m;
}

static const char *const gate_act_names[GA_MAX] = {
	[GA_UNKNOWN] = "unknown", [GA_GONE] = "gone", [GA_QUIET] = "quiet",
	[GA_BUSY] = "busy", [GA_RUNNING] = "running", [GA_TIMED] = "timed",
	[GA_UNSEEN] = "unseen",
};

const char *
gate_act_name(enum gate_act a)
{
	return a < GA_MAX ? gate_act_names[a] : "?";
}

/*
 * Whether live turn t is accounted for (gate.h "Actors"), by what the
 * engine sees of its processes; without that view, by its exchanges: one
 * held here or at another gate, or one waiting on a lock.
 */
static enum gate_act
actor_of(struct gate *g, int t, int64_t *ran_ms)
{
	enum gate_act	a;

	*ran_ms = -1;
	a = g->actor != NULL ? g->actor(g->actor_arg, g, t, ran_ms) : GA_UNKNOWN;
	if (a != GA_RUNNING)
		*ran_ms = -1;

	if (a == GA_UNKNOWN && (g->ready[t] || g->blocked[t] ||
	    g->held[t] > g->mine[t]))
		a = GA_QUIET;
	return a;	/* GA_UNKNOWN: it has sent nothing, wait for it */
}

/*
 * Whether every live turn is accounted for: fills ready[], blocked[],
 * oldest[] (a turn's waiting exchange of its lowest lane, or the one it
 * waited with longest when none has a lane yet), act[], the waiting set
 * and the earliest waiter.  *idle counts the turns waited for under the
 * arrival watchdog (their mask in g->idle), *busy those waited for
 * without it.  A turn not yet accounted for is looked at again soon.
 */
static int
account(struct gate *g, int64_t now, uint64_t *cand, int64_t *earliest,
    int *idle, int *busy)
{
	struct gate_ent	*e, *o;
	int64_t		 ran, wall, got;
	int		 t, nready = 0;

	memset(g->oldest, 0, (size_t)g->nturns * sizeof(*g->oldest));
	memset(g->blocked, 0, (size_t)g->nturns * sizeof(*g->blocked));
	*earliest = INT64_MAX;
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->st == GS_LOCK || e->st == GS_STUCK)
			g->blocked[e->turn] = true;
		if (e->st != GS_WAIT)
			continue;
		e->occ = occ_peek(g, e->turn, e->key);
		if (e->since < *earliest)
			*earliest = e->since;
		o = g->oldest[e->turn];
		if (o == NULL || (e->lane >= 0 && (o->lane < 0 || e->lane < o->lane)) ||
		    (e->lane < 0 && o->lane < 0 && e->seq < o->seq))
			g->oldest[e->turn] = e;
	}
	*cand = 0;
	*idle = *busy = 0;
	g->idle = 0;
	g->idle_from = 0;
	for (t = 0; t < g->nturns; t++) {
		g->ready[t] = g->oldest[t] != NULL;
		if (g->ready[t]) {
			nready++;
			if (t < 64)
				*cand |= (uint64_t)1 << t;
		}
		g->act[t] = GA_GONE;
		if (!g->live[t]) {
			g->idle_since[t] = 0;
			g->ran_ms[t] = -1;
			continue;
		}
		g->act[t] = actor_of(g, t, &ran);
		if (g->act[t] != GA_RUNNING || g->idle_since[t] == 0)
			g->ran_ms[t] = -1;
		switch (g->act[t]) {
		case GA_GONE:
		case GA_QUIET:
			g->look_ms[t] = ACTOR_LOOK_MS;
			g->idle_since[t] = 0;
			continue;
		case GA_BUSY:
			/* its reply is an event of the loop's: no look */
			(*busy)++;
			g->idle_since[t] = 0;
			continue;
		default:
			(*idle)++;
			if (t < 64)
				g->idle |= (uint64_t)1 << t;
			/* without the engine's view an exchange is what the loop
			 * hears of, and `arrival` counts from the gate's free */
			if (g->act[t] == GA_UNKNOWN)
				continue;
			/* `arrival` counts from when it left every proxy */
			if (g->idle_since[t] == 0)
				g->idle_since[t] = now;
			/* ... in the time it ran while it runs: the time it
			 * waited for a core (a loaded machine) is not late */
			if (g->ran_ms[t] >= 0 && ran >= 0) {
				wall = now - g->ran_at[t];
				/* < 0: a process gone with its time */
				got = ran > g->ran_ms[t] ? ran - g->ran_ms[t] : 0;
				if (got < wall)
					g->idle_since[t] += wall - got;
				if (g->idle_since[t] > now)
					g->idle_since[t] = now;
			}
			g->ran_ms[t] = ran;
			g->ran_at[t] = now;
			if (g->idle_since[t] > g->idle_from)
				g->idle_from = g->idle_since[t];
			break;
		}
		/* not accounted for, nothing the loop would hear of: look again,
		 * backing off */
		gate_at(g, now + g->look_ms[t]);
		if (g->look_ms[t] < ACTOR_LOOK_MAX_MS)
			g->look_ms[t] *= 2;
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
	/* ... and from when the last of the turns waited for left every
	 * proxy: a turn busy at another proxy (a model's seconds) is not late */
	if (g->idle_from > from)
		from = g->idle_from;
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
	return e != NULL && s->round == e->round && s->turn == e->turn &&
	    s->lane == e->lane && s->key == e->key && s->occ == e->occ;
}

/* The waiting exchange step s names, or NULL. */
static struct gate_ent *
step_waiting(const struct gate *g, const struct plan_step *s)
{
	if (s->turn < 0 || s->turn >= g->nturns || !g->ready[s->turn])
		return NULL;
	return step_is(s, lane_waiting(g, s->turn, s->lane)) ?
	    lane_waiting(g, s->turn, s->lane) : NULL;
}

/*
 * The plan's unused step e's exchange is, or may yet be, or SIZE_MAX:
 * unplanned.  A waiting exchange's occurrence is the one it would get now
 * (gate.h); a turn's connections asking the same key get theirs in the
 * order they are admitted, so a step of the same lane and key with a later
 * occurrence is still this exchange's.
 */
static size_t
planned_as(const struct gate *g, const struct gate_ent *e)
{
	const struct plan_step	*s;
	size_t			 i;

	if (g->plan == NULL || e->key == 0)
		return SIZE_MAX;
	for (i = g->cursor; i < g->plan->nsteps; i++) {
		s = &g->plan->steps[i];
		if (!g->used[i] && s->round == e->round && s->turn == e->turn &&
		    s->lane == e->lane && s->key == e->key && s->occ >= e->occ)
			return i;
	}
	return SIZE_MAX;
}

static void
use_step(struct gate *g, size_t i)
{
	g->used[i] = true;
	while (g->cursor < g->plan->nsteps && g->used[g->cursor])
		g->cursor++;
}

/* "its SELECT … (occurrence 1, the plan's step 5)", or "(…, no step of
 * the plan)": e's exchange in the plan's terms; a lane when not 0 */
static void
put_its(const struct gate *g, const struct gate_ent *e, char *buf, size_t len)
{
	size_t	i;
	char	lane[32] = "", where[48];

	/* every unused step: a divergence at a turn's exit moves the cursor */
	for (i = 0; g->plan != NULL && e->key != 0 && i < g->plan->nsteps; i++)
		if (!g->used[i] && step_is(&g->plan->steps[i], e))
			break;
	if (g->plan == NULL || e->key == 0 || i == g->plan->nsteps)
		i = SIZE_MAX;

	if (e->lane > 0)
		snprintf(lane, sizeof(lane), " on its connection %d", e->lane);
	if (i == SIZE_MAX)
		snprintf(where, sizeof(where), "no step of the plan");
	else
		snprintf(where, sizeof(where), "the plan's step %zu", i + 1);
	snprintf(buf, len, "its %s (occurrence %" PRIu32 ", %s)%s",
	    e->rec->sql[0] ? e->rec->sql : e->rec->req[0] ? e->rec->req :
	    e->rec->pg ? e->rec->pg : "exchange", e->occ, where, lane);
}

/* What a held entry is doing: "at its X (…)", with a lock's holders */
static void
put_doing(const struct gate *g, const struct gate_ent *e, char *buf, size_t len)
{
	char	its[384], who[200];
	size_t	o = 0;
	int	t;

	put_its(g, e, its, sizeof(its));
	if (e->st == GS_LOCK) {
		o = (size_t)snprintf(who, sizeof(who), "{");
		for (t = 0; t < 64 && o < sizeof(who); t++)
			if (e->rec->waits_on >> t & 1)
				o += (size_t)snprintf(who + o, sizeof(who) - o, "%s%d",
				    o > 1 ? "," : "", t);
		if (o < sizeof(who))
			snprintf(who + o, sizeof(who) - o, "}");
		snprintf(buf, len, "at %s, waiting on a lock held by turns %s", its, who);
	} else if (e->st == GS_STUCK)
		snprintf(buf, len, "at %s, with no answer since `blocked` passed", its);
	else
		snprintf(buf, len, "at %s", its);
}

/* text + *o, what is left of len */
#define PUT(...)	(*o += (size_t)snprintf(text + *o, *o < len ? len - *o : 0, \
			    __VA_ARGS__))

/* What the wanted step's turn did instead (diverge). */
static void
put_instead(const struct gate *g, const struct plan_step *s, char *text, size_t len,
    size_t *o)
{
	const struct gate_ent	*e, *mine = NULL;
	const struct gate_unp	*u = g->unp != NULL ? &g->unp[s->turn] : NULL;
	char			 one[640];

	for (e = g->ents; e != NULL; e = e->next)
		if (e->turn == s->turn && held_st(e->st) && (mine == NULL ||
		    e->st != GS_WAIT))
			mine = e;
	PUT("; instead turn %d", s->turn);
	if (u != NULL && u->n == 1)
		PUT(" sent %s,", u->what);
	else if (u != NULL && u->n > 1)
		PUT(" sent %" PRIu32 " exchanges of no step of the plan (the last: %s),",
		    u->n, u->what);
	if (mine != NULL) {
		put_doing(g, mine, one, sizeof(one));
		PUT(" %sis %s", u != NULL && u->n > 0 ? "and " : "", one);
	} else if (!g->live[s->turn])
		PUT(" %sexited", u != NULL && u->n > 0 ? "and " : "");
	else
		PUT(" %shas no exchange held", u != NULL && u->n > 0 ? "and " : "");
}

/*
 * The plan's next exchange cannot come: say it once, in the plan's terms
 * (docs/plan.md "Replaying a plan"): the step and what it wanted, and why
 * it cannot come; what its turn did instead (what it was admitted as
 * unplanned since its last planned step, and where it is now: at an
 * exchange, with that exchange's step of the plan, on a lock and whose,
 * exited); and every other turn held, at what and on what.  Then go on
 * as then_seed says.
 */
static void
diverge(struct gate *g, const char *why)
{
	const struct plan_step	*s = &g->plan->steps[g->cursor];
	const struct gate_ent	*e;
	char			 text[2048], one[640], hex[24];
	size_t			 len = sizeof(text), off = 0, *o = &off;
	int			 n = 0, t;

	if (g->diverged != NULL)
		return;
	PUT("the plan diverged at step %zu of proxy %s: it wanted turn %d's %s (key "
	    "%s, occurrence %" PRIu32 ", round %d), which cannot come: %s",
	    g->cursor + 1, g->name, s->turn, s->what ? s->what : "exchange",
	    trace_key_hex(s->key, hex, sizeof(hex)), s->occ, s->round, why);
	if (s->turn >= 0 && s->turn < g->nturns)
		put_instead(g, s, text, len, o);
	PUT("; waiting:");
	for (t = 0; t < g->nturns; t++)
		for (e = g->ents; e != NULL; e = e->next) {
			if (e->turn != t || t == s->turn || !held_st(e->st))
				continue;
			put_doing(g, e, one, sizeof(one));
			PUT("%s turn %d %s", n++ ? ";" : "", t, one);
		}
	if (n == 0)
		PUT(" no other turn");
	g->diverged = xstrdup(text);
	g->pmode = g->then_seed ? PM_SEED : PM_DRAIN;
	/* said once, by whoever reads gate_diverged (a replay, a verdict) */
	log_debug("seed %" PRIu64 ": %s", g->seed, text);
}

#undef PUT

/*
 * Under a plan: what each turn was admitted as unplanned since its last
 * planned step, for a divergence's "instead" (diverge).
 */
static void
plan_note(struct gate *g, const struct gate_ent *e, const char *mark)
{
	struct gate_unp	*u;

	if (g->unp == NULL || e->turn < 0 || e->turn >= g->nturns)
		return;
	u = &g->unp[e->turn];
	if (mark != NULL && strcmp(mark, "unplanned") == 0) {
		u->n++;
		put_its(g, e, u->what, sizeof(u->what));
	} else if (mark == NULL || strcmp(mark, "lock-deferred") == 0)
		u->n = 0;
}

/*
 * An explorer's prefix (plan.h, plan_proxy.prefix): its next step, and
 * nothing else, while it has one; then the last step's turn while it has
 * an exchange waiting, else the lowest turn that has one, marked
 * "explore".  -1 when the step cannot come (a divergence: the scenario did
 * not do again what it did when the prefix was recorded).
 */
static struct gate_ent *
prefix_pick(struct gate *g, const char **mark)
{
	const struct plan_step	*s;
	struct gate_ent		*e;
	int			 t;

	if (g->cursor < g->plan->nsteps) {
		s = &g->plan->steps[g->cursor];
		t = s->turn;
		if ((e = step_waiting(g, s)) != NULL) {
			use_step(g, g->cursor);
			return e;
		}
		diverge(g, t >= 0 && t < g->nturns && g->ready[t] ? "its turn has "
		    "another exchange waiting" : t >= 0 && t < g->nturns &&
		    g->blocked[t] ? "its turn waits on a lock" : t >= 0 &&
		    t < g->nturns && g->live[t] ? "every live turn is held or "
		    "blocked, and none with it" : "its turn is not running");
		return NULL;
	}
	*mark = "explore";
	if (g->last_turn >= 0 && g->ready[g->last_turn] &&
	    (e = lane_waiting(g, g->last_turn, g->last_lane)) != NULL)
		return e;
	if (g->last_turn >= 0 && g->ready[g->last_turn])
		return g->oldest[g->last_turn];
	for (t = 0; t < g->nturns; t++)
		if (g->ready[t])
			return g->oldest[t];
	return NULL;
}

/* The lowest turn's (and lane's) waiting exchange the plan has no step for. */
static struct gate_ent *
unplanned_waiting(const struct gate *g)
{
	struct gate_ent	*e, *best = NULL;

	for (e = g->ents; e != NULL; e = e->next)
		if (e->st == GS_WAIT && planned_as(g, e) == SIZE_MAX &&
		    (best == NULL || e->turn < best->turn ||
		    (e->turn == best->turn && e->lane < best->lane)))
			best = e;
	return best;
}

/*
 * The plan's choice among the waiting exchanges (docs/plan.md's rules), or
 * NULL when it diverged (the caller then picks as its mode says).
 */
static struct gate_ent *
plan_pick(struct gate *g, const char **mark, uint32_t *deferred)
{
	const struct plan_step	*s;
	struct gate_ent		*e, *lock = NULL;
	size_t			 j;

	*mark = NULL;
	*deferred = 0;
	if (g->plan->prefix)
		return prefix_pick(g, mark);
	if ((e = unplanned_waiting(g)) != NULL) {	/* 1: unplanned, lowest turn */
		*mark = "unplanned";
		return e;
	}
	if (g->cursor >= g->plan->nsteps) {
		int	t;

		for (t = 0; t < g->nturns && !g->ready[t]; t++)
			;
		*mark = "unplanned";	/* not reached: every step is used */
		return t < g->nturns ? g->oldest[t] : NULL;
	}
	s = &g->plan->steps[g->cursor];
	if ((e = step_waiting(g, s)) != NULL) {	/* 2: the next step */
		use_step(g, g->cursor);
		return e;
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
			    (e = step_waiting(g, h)) == NULL)
				continue;
			*mark = "lock-deferred";
			*deferred = (uint32_t)g->cursor + 1;
			use_step(g, j);
			return e;
		}
		diverge(g, "its turn waits on a lock whose holders have no planned "
		    "step waiting");
		return NULL;
	}
	diverge(g, s->turn < g->nturns && g->live[s->turn] ? "every live turn "
	    "is held or blocked, and none with it" : "its turn is not running");
	return NULL;
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

/*
 * Wake-ups (gate_int.h): the waiters a transaction's end granted, still
 * stopped, go one at a time, the first admitted first; the next once the
 * one let go has ended its statement or waits again.
 */
static void
wakes_release(struct gate *g, int64_t now)
{
	struct gate_ent	*e, *first = NULL;

	if (g->n[GS_WOKE] == 0)
		return;
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->st != GS_WOKE)
			continue;
		if (!e->stopped)
			return;		/* one goes: wait for it */
		if (first == NULL || e->rec->step < first->rec->step)
			first = e;
	}
	if (first == NULL)
		return;
	log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": its lock granted, "
	    "let go (step %" PRIu32 ")", g->name, first->turn, first->rec->conn,
	    first->rec->exchange, first->rec->step);
	gate_backend_cont(g, first);
	first->since = now;
	first->starved = g->starved(g, first);
	g->settled = false;
	gate_at(g, now + LOCK_PROBE_MS);
}

struct gate_ent *
gate_decide(struct gate *g, int64_t now)
{
	struct gate_ent	*e = NULL, *w;
	const char	*forced = NULL, *mark;
	int64_t		 earliest;
	uint64_t	 cand;
	uint32_t	 deferred;
	int		 t, idle, busy;
	bool		 go, tie;

	g->next_at = 0;
	wakes_release(g, now);
	timeouts(g, now);
	gate_side_work(g, now);
	if (g->n[GS_WAIT] == 0 || g->running != NULL || g->n[GS_WOKE] > 0 ||
	    g->victim != NULL || (g->side != NULL && g->n[GS_LOCK] > 0 &&
	    !g->settled))
		return NULL;
	if (account(g, now, &cand, &earliest, &idle, &busy) == 0)
		return NULL;
	if (idle > 0) {
		forced = idle_turns(g, now, earliest, &go);
		if (!go)
			return NULL;
		g->stats.forced++;
	} else if (busy > 0)
		return NULL;	/* a reply on its way elsewhere: an event */
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
	/* the connections new since the last step: their lanes, now that
	 * every one that will come has come */
	tie = lanes_give(g);
	first_lanes(g);
	mark = NULL;
	deferred = 0;
	if (g->planned && g->pmode == PM_PLAN) {
		if (g->plan != NULL)
			e = plan_pick(g, &mark, &deferred);
		else
			mark = "unplanned";	/* a proxy the plan has no steps for */
	}
	if (e == NULL && g->planned && g->pmode == PM_DRAIN) {
		/* diverged: the oldest first, so the turns run to their end */
		for (w = g->ents; w != NULL; w = w->next)
			if (w->st == GS_WAIT && (e == NULL || w->seq < e->seq))
				e = w;
		mark = "after divergence";
	}
	if (e == NULL) {
		t = sched_pick(g->s, g->ready);
		e = lane_pick(g, t);
		if (g->planned && g->pmode != PM_PLAN)
			mark = "after divergence";
	}
	t = e->turn;
	ent_set(g, e, GS_RUN);
	occ_take(g, e->turn, e->key);
	g->last_turn = t;
	g->last_lane = e->lane;
	e->rec->step = ++g->stepno;
	e->rec->cand = cand;
	e->rec->lane = e->lane;
	e->rec->acand = actors_waiting(g, &e->rec->acand_cut);
	e->rec->lane_tie = tie;
	actor_wait(g, now, earliest, e->rec->step);
	e->rec->forced = forced;
	e->rec->idle = forced != NULL ? g->idle : 0;
	e->rec->plan = mark;
	e->rec->deferred = deferred;
	if (g->pmode == PM_PLAN)
		plan_note(g, e, mark);
	g->stats.steps = e->rec->step;
	g->running = e;
	g->running_since = now;
	e->starved = g->starved(g, e);
	g->settled = false;
	gate_at(g, now + g->blocked_ms);	/* come back if it never ends */
	if (g->side != NULL && e->pid > 0)	/* or ask PostgreSQL before */
		gate_at(g, g->probe_at = now + LOCK_PROBE_MS);
	log_debug("%s/%d conn %" PRIu32 " exchange %" PRIu32 ": step %" PRIu32
	    " of the schedule, lane %d (waiting: %" PRIx64 "%s%s)", g->name,
	    e->turn, e->rec->conn, e->rec->exchange, e->rec->step, e->lane, cand,
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
 * order, not the schedule's (gate.h says why a waiter queued behind
 * another counts).  The trace says so ("wakes": the turns woken), for a
 * reader of a replay that parts from the run's there.
 */
static void
mark_wakes(struct gate *g, struct gate_ent *e)
{
	struct gate_ent	*w;
	uint64_t	 reach, woken = 0;
	int		 n = 0;
	bool		 grew = true, loose = false;

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
			loose |= !w->stopped;
		}
	}
	/* stopped waiters go in the gate's order (wakes_release): the
	 * order is soak's, no mark; one not stopped (another server, or a
	 * backend that ran before its stop) races */
	if (n >= 2 && loose) {
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
	gate_backend_cont(g, e);
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
	gate_backend_cont(g, e);	/* its backend must see the close */
	set_in_tx(g, e, false);		/* PostgreSQL rolls it back */
	if (e->lane >= 0 && e->lane < GATE_LANES && e->turn >= 0 &&
	    e->turn < g->nturns)
		g->lanes[e->turn] &= ~((uint64_t)1 << e->lane);
	e->lane = -1;
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
gate_ent_turn(struct gate *g, struct gate_ent *e, int32_t pid, int turn)
{
	size_t	i;

	if (e->turn != turn) {
		if (e->lane >= 0 && e->lane < GATE_LANES && e->turn >= 0 &&
		    e->turn < g->nturns)
			g->lanes[e->turn] &= ~((uint64_t)1 << e->lane);
		e->lane = -1;
		e->turn = turn;
		g->gen++;
		g->settled = false;
	}
	for (i = 0; pid > 0 && i < g->nbe; i++)
		if (g->be[i].pid == pid) {
			g->be[i].turn = turn;
			return;
		}
	gate_backend(g, pid, turn);
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
	bool	was = g->live[turn];

	g->live[turn] = live;	/* a divergence says it exited */
	if (was && !live)
		plan_exited(g, turn);
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
	g->last_lane = -1;
	g->nocc = 0;		/* occurrences count within a round */
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
	g->act = xcalloc((size_t)c->nturns, sizeof(*g->act));
	g->look_ms = xcalloc((size_t)c->nturns, sizeof(*g->look_ms));
	g->idle_since = xcalloc((size_t)c->nturns, sizeof(*g->idle_since));
	g->lanes = xcalloc((size_t)c->nturns, sizeof(*g->lanes));
	g->ran_ms = xcalloc((size_t)c->nturns, sizeof(*g->ran_ms));
	g->ran_at = xcalloc((size_t)c->nturns, sizeof(*g->ran_at));
	for (int t = 0; t < c->nturns; t++) {
		g->look_ms[t] = ACTOR_LOOK_MS;
		g->ran_ms[t] = -1;
	}
	g->actor = c->actor;
	g->actor_arg = c->actor_arg;
	g->starved = c->starved != NULL ? c->starved : gate_starved_ms;
	g->replied = c->replied;
	gate_round(g, 0, NULL);
	g->planned = c->planned;
	g->plan = c->plan;
	g->then_seed = c->then_seed;
	if (c->plan != NULL)
		g->used = xcalloc(c->plan->nsteps + 1, sizeof(*g->used));
	if (c->planned)
		g->unp = xcalloc((size_t)c->nturns, sizeof(*g->unp));
	gate_side_open(g, c->lockinfo);
	return g;
}

void
gate_free(struct gate *g)
{
	struct gate_ent	*e;

	if (g == NULL)
		return;
	for (e = g->ents; e != NULL; e = e->next)
		gate_backend_cont(g, e);	/* no backend left stopped */
	gate_side_close(g);
	sched_free(g->s);
	free(g->name);
	free(g->live);
	free(g->mine);
	free(g->ready);
	free(g->blocked);
	free(g->oldest);
	free(g->act);
	free(g->look_ms);
	free(g->idle_since);
	free(g->ran_ms);
	free(g->ran_at);
	free(g->lanes);
	free(g->occ);
	free(g->be);
	free(g->rows);
	free(g->used);
	free(g->unp);
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
