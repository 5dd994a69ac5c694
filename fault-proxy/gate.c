/*
 * Scheduled admission (gate.h): which exchange of which turn goes next,
 * the watchdogs, and what PostgreSQL is asked on the side connection (lock
 * waits, waits outside the proxy, and the cancel of a deadlock's victim).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/epoll.h>

#include <libpq-fe.h>

#include "common/log.h"
#include "common/util.h"
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
	struct gate_ent		**oldest;	/* scratch */

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

	struct gate_stats	 stats;

	/* under a plan (docs/plan.md) */
	bool			 planned;
	const struct plan_proxy	*plan;
	bool			*used;		/* per plan step: admitted */
	size_t			 cursor;	/* the first step not used */
	bool			 then_seed;
	enum { PM_PLAN, PM_SEED, PM_DRAIN } pmode;
	char			*diverged;	/* why, once it did */
	uint32_t		 stepno;	/* steps taken, by any strategy */
	int			 last_turn;	/* the last step's turn, or -1 */
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

static bool
held_st(enum gate_st st)
{
	return st == GS_WAIT || st == GS_LOCK || st == GS_STUCK;
}

/* Every state change of an entry goes through here (STYLE.md 6). */
static void
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
static void
gate_at(struct gate *g, int64_t at)
{
	if (g->next_at == 0 || at < g->next_at)
		g->next_at = at;
}

/* ---- the side connection ---- */

static void
side_close(struct gate *g)
{
	if (g->side == NULL)
		return;
	g->sep.fd = PQsocket(g->side);
	px_ep_set(g->epfd, &g->sep, 0);
	g->sep.fd = -1;
	PQfinish(g->side);
	g->side = NULL;
	g->q = Q_NONE;
}

/*
 * The side connection broke or never worked: say so once, and let the
 * `blocked` timeout alone decide from now on.
 */
static void
side_drop(struct gate *g, const char *why)
{
	char	msg[256];

	snprintf(msg, sizeof(msg), "%s", PQerrorMessage(g->side));
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("proxy %s: cannot ask PostgreSQL about lock waits (%s%s%s); "
	    "a lock wait is now passed by the schedule's blocked timeout",
	    g->name, why, msg[0] ? ": " : "", msg);
	side_close(g);
}

/* Blocking, once per gate, before the loop starts; a failure is not fatal. */
static void
side_open(struct gate *g, const char *conninfo)
{
	if (conninfo == NULL)
		return;
	g->side = PQconnectdb(conninfo);
	if (PQstatus(g->side) != CONNECTION_OK) {
		side_drop(g, "connect");
		return;
	}
	if (PQsetnonblocking(g->side, 1) == -1) {
		side_drop(g, "nonblocking");
		return;
	}
	g->sep = (struct ep){ EP_SIDE, g, PQsocket(g->side), 0 };
	px_ep_set(g->epfd, &g->sep, EPOLLIN);
}

/* Sends one question; its answer comes to gate_side_event. */
static void
side_send(struct gate *g, enum side_q q, const char *sql, const char *arg)
{
	const char	*v[1] = { arg };

	if (!PQsendQueryParams(g->side, sql, 1, NULL, v, NULL, NULL, 0)) {
		side_drop(g, "send");
		return;
	}
	g->q = q;
	g->q_gen = g->gen;
	if (PQflush(g->side) == 1)
		px_ep_set(g->epfd, &g->sep, EPOLLIN | EPOLLOUT);
}

/* "{pid,pid,...}" of the entries whose state want() accepts; 0 if none. */
static size_t
pid_array(struct gate *g, bool (*want)(const struct gate *, const struct gate_ent *),
    char *buf, size_t len)
{
	struct gate_ent	*e;
	size_t		 o = 0, k = 0;
	int		 n;

	buf[o++] = '{';
	for (e = g->ents; e != NULL; e = e->next) {
		if (e->pid <= 0 || !want(g, e))
			continue;
		n = snprintf(buf + o, len - o, "%s%" PRId32, k ? "," : "", e->pid);
		if (n < 0 || (size_t)n >= len - o - 1)
			break;
		o += (size_t)n;
		k++;
	}
	buf[o++] = '}';
	buf[o] = '\0';
	return k;
}

static bool
in_flight(const struct gate *g, const struct gate_ent *e)
{
	return e == g->running || e->st == GS_LOCK || e->st == GS_WOKE;
}

static bool
waiting(const struct gate *g, const struct gate_ent *e)
{
	return e->st == GS_WAIT;
}

/*
 * Asks, in one statement, whose locks the backends of the exchanges in
 * flight wait for: the admitted one, those PostgreSQL said wait on a lock,
 * and those it since said do not.
 */
static void
ask_blockers(struct gate *g, int64_t now)
{
	char	pids[2048];

	if (pid_array(g, in_flight, pids, sizeof(pids)) == 0)
		return;		/* nothing to ask about yet */
	g->nrows = 0;
	side_send(g, Q_BLOCKERS, "SELECT p, pg_blocking_pids(p) "
	    "FROM unnest($1::int[]) AS p", pids);
	g->probe_at = now + LOCK_PROBE_MS;
}

/*
 * Asks whether a connection that is not one of the turns' (a service's
 * own) waits on a lock held by a backend whose next statement the gate
 * holds.
 */
static void
ask_outside(struct gate *g, int64_t now)
{
	char		 held[2048], ours[4096];
	const char	*v[2] = { held, ours };
	size_t		 i, o = 0;
	int		 n;

	g->outside_at = now + g->outside_every;
	if (g->outside_every < OUTSIDE_PROBE_MAX_MS)
		g->outside_every *= 2;
	if (pid_array(g, waiting, held, sizeof(held)) == 0)
		return;
	ours[o++] = '{';
	for (i = 0; i < g->nbe; i++) {
		n = snprintf(ours + o, sizeof(ours) - o, "%s%" PRId32, i ? "," : "",
		    g->be[i].pid);
		if (n < 0 || (size_t)n >= sizeof(ours) - o - 1)
			return;		/* too many to ask about: the watchdog decides */
		o += (size_t)n;
	}
	ours[o++] = '}';
	ours[o] = '\0';
	if (!PQsendQueryParams(g->side, "SELECT count(*) FROM pg_stat_activity a "
	    "WHERE a.wait_event_type = 'Lock' AND NOT (a.pid = ANY($2::int[])) "
	    "AND pg_blocking_pids(a.pid) && $1::int[]", 2, NULL, v, NULL, NULL,
	    0)) {
		side_drop(g, "send");
		return;
	}
	g->q = Q_OUTSIDE;
	g->q_gen = g->gen;
	if (PQflush(g->side) == 1)
		px_ep_set(g->epfd, &g->sep, EPOLLIN | EPOLLOUT);
}

static void
ask_cancel(struct gate *g)
{
	char	pid[16];

	snprintf(pid, sizeof(pid), "%" PRId32, g->cancel_pid);
	g->cancel_pid = 0;
	side_send(g, Q_CANCEL, "SELECT pg_cancel_backend($1::int)", pid);
}

/* The turns (bit t) whose connections are the backends of pids. */
static uint64_t
turns_of(const struct gate *g, const int32_t *pids, size_t n)
{
	uint64_t	mask = 0;
	size_t		i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < g->nbe; j++)
			if (g->be[j].pid == pids[i] && g->be[j].turn < 64)
				mask |= (uint64_t)1 << g->be[j].turn;
	return mask;
}

static struct gate_ent *
ent_of_pid(const struct gate *g, int32_t pid)
{
	struct gate_ent	*e;

	for (e = g->ents; e != NULL; e = e->next)
		if (e->pid == pid)
			return e;
	return NULL;
}

/*
 * One backend's answer: e's exchange waits on a lock (nb blockers, of the
 * turns of mask), or does not.  The admitted exchange that waits is no
 * longer running (the next may be admitted); one that waited and no longer
 * does runs again (woke), and the gate waits for it as for the admitted
 * one, until it ends or waits again.
 */
static void
lock_answer(struct gate *g, struct gate_ent *e, size_t nb, uint64_t mask,
    int64_t now)
{
	char	set[256];

	if (nb > 0 && (e == g->running || e->st == GS_WOKE)) {
		log_debug("seed %" PRIu64 ": %s/%d conn %" PRIu32 " exchange %"
		    PRIu32 ": waits on a lock (held by turns %s)%s", g->seed,
		    g->name, e->turn, e->rec->conn, e->rec->exchange,
		    proxy_turn_set(mask, set, sizeof(set)),
		    e == g->running ? ": the next is admitted" : " again");
		if (e == g->running)
			g->running = NULL;
		ent_set(g, e, GS_LOCK);
		if (!e->rec->lock_wait)
			g->stats.lock_waits++;
		e->rec->lock_wait = true;
		e->rec->waits_on |= mask;
		g->free_since = now;
	} else if (nb == 0 && e->st == GS_LOCK) {
		log_debug("seed %" PRIu64 ": %s/%d conn %" PRIu32 " exchange %"
		    PRIu32 ": its lock was granted", g->seed, g->name, e->turn,
		    e->rec->conn, e->rec->exchange);
		ent_set(g, e, GS_WOKE);
		e->since = now;
	}
}

/* Whether row j's backend waits on row k's. */
static bool
edge(const struct gate *g, size_t j, size_t k)
{
	size_t	b;

	if (g->rows[k].e->st != GS_LOCK)
		return false;
	for (b = 0; b < g->rows[j].nb; b++)
		if (g->rows[j].b[b] == g->rows[k].e->pid)
			return true;
	return false;
}

/*
 * Depth-first from row j (colour 1 while on the path, 2 when done); on an
 * edge back to a row on the path, the cycle is the path from that row, and
 * *victim becomes its exchange admitted first.
 */
static bool
dfs(struct gate *g, size_t j, uint8_t *colour, size_t *path, size_t depth,
    struct gate_ent **victim)
{
	size_t	k, i;

	colour[j] = 1;
	path[depth++] = j;
	for (k = 0; k < g->nrows; k++) {
		if (!edge(g, j, k))
			continue;
		if (colour[k] == 1) {
			for (i = 0; path[i] != k; i++)
				;
			for (*victim = NULL; i < depth; i++)
				if (*victim == NULL || g->rows[path[i]].e->rec->step <
				    (*victim)->rec->step)
					*victim = g->rows[path[i]].e;
			return true;
		}
		if (colour[k] == 0 && dfs(g, k, colour, path, depth, victim))
			return true;
	}
	colour[j] = 2;
	return false;
}

/*
 * A cycle among the exchanges that wait on locks is a deadlock nothing
 * but a cancel ends.  Its victim is the cycle's exchange admitted first
 * (gate.h).  Rows are few: one per exchange in flight.
 */
static struct gate_ent *
find_cycle(struct gate *g)
{
	struct gate_ent	*victim = NULL;
	uint8_t		*colour;
	size_t		*path, i;

	if (g->nrows < 2)
		return NULL;
	colour = xcalloc(g->nrows, 1);
	path = xcalloc(g->nrows, sizeof(*path));
	for (i = 0; i < g->nrows && victim == NULL; i++)
		if (colour[i] == 0 && g->rows[i].e->st == GS_LOCK)
			(void)dfs(g, i, colour, path, 0, &victim);
	free(colour);
	free(path);
	return victim;
}

static void
deadlock(struct gate *g, struct gate_ent *v)
{
	char	set[256];

	log_debug("seed %" PRIu64 ": %s/%d conn %" PRIu32 " exchange %" PRIu32
	    ": a deadlock (step %" PRIu32 ", waits on turns %s): soak cancels "
	    "its statement, as PostgreSQL's detector would", g->seed, g->name,
	    v->turn, v->rec->conn, v->rec->exchange, v->rec->step,
	    proxy_turn_set(v->rec->waits_on, set, sizeof(set)));
	g->victim = v;
	v->victim = true;
	g->cancel_pid = v->pid;
	g->stats.deadlocks++;
}

/* A blockers answer is whole: apply it, if nothing ended since it was asked. */
static void
blockers_done(struct gate *g, int64_t now)
{
	struct gate_ent	*v;
	size_t		 i;

	if (g->q_gen != g->gen)
		return;		/* it may be about exchanges that are over */
	for (i = 0; i < g->nrows; i++)
		lock_answer(g, g->rows[i].e, g->rows[i].nb,
		    turns_of(g, g->rows[i].b, g->rows[i].nb), now);
	if (g->victim == NULL && (v = find_cycle(g)) != NULL)
		deadlock(g, v);
	/* nothing ended since, nothing runs: a settled picture */
	if (g->running == NULL && g->n[GS_WOKE] == 0 && !g->settled) {
		g->settled = true;
		g->free_since = now;
	}
}

/* "{1,2,3}" into pids; the count, at most max. */
static size_t
parse_pids(const char *arr, int32_t *pids, size_t max)
{
	size_t	n = 0;
	char	*end;
	long	v;

	for (arr += strspn(arr, "{,"); *arr >= '0' && *arr <= '9';
	    arr = end + strspn(end, ",}")) {
		v = strtol(arr, &end, 10);
		if (n < max)
			pids[n++] = (int32_t)v;
	}
	return n;
}

static int
take_result(struct gate *g, PGresult *r)
{
	struct row	*w;
	int		 i;

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return -1;
	switch (g->q) {
	case Q_BLOCKERS:
		if (PQnfields(r) != 2)
			return -1;
		for (i = 0; i < PQntuples(r); i++) {
			struct gate_ent	*e = ent_of_pid(g,
			    (int32_t)strtol(PQgetvalue(r, i, 0), NULL, 10));

			if (e == NULL)
				continue;
			if (g->nrows == g->caprows) {
				g->caprows = g->caprows ? g->caprows * 2 : 8;
				g->rows = xreallocarray(g->rows, g->caprows,
				    sizeof(*g->rows));
			}
			w = &g->rows[g->nrows++];
			w->e = e;
			w->nb = parse_pids(PQgetvalue(r, i, 1), w->b, BLOCKERS_MAX);
		}
		break;
	case Q_OUTSIDE:
		if (PQnfields(r) != 1 || PQntuples(r) != 1)
			return -1;
		g->outside = strtol(PQgetvalue(r, 0, 0), NULL, 10);
		g->outside_gen = g->q_gen;
		break;
	case Q_CANCEL:
	case Q_NONE:
		break;
	}
	return 0;
}

void
gate_side_event(struct gate *g, uint32_t ev, int64_t now)
{
	PGresult	*r;

	if (g->side == NULL)
		return;
	if ((ev & EPOLLOUT) && PQflush(g->side) == 0)
		px_ep_set(g->epfd, &g->sep, EPOLLIN);
	if (!PQconsumeInput(g->side)) {
		side_drop(g, "read");
		return;
	}
	while (g->q != Q_NONE && !PQisBusy(g->side)) {
		if ((r = PQgetResult(g->side)) == NULL) {
			if (g->q == Q_BLOCKERS)
				blockers_done(g, now);
			g->q = Q_NONE;
			break;
		}
		if (take_result(g, r) == -1) {
			PQclear(r);
			side_drop(g, g->q == Q_CANCEL ? "pg_cancel_backend" :
			    g->q == Q_OUTSIDE ? "pg_stat_activity" :
			    "pg_blocking_pids");
			return;
		}
		PQclear(r);
	}
	if (g->side != NULL && PQstatus(g->side) != CONNECTION_OK)
		side_drop(g, "connection lost");
}

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

/* What PostgreSQL must be told or asked before anything is admitted. */
static void
side_work(struct gate *g, int64_t now)
{
	bool	ask;

	if (g->side == NULL || g->q != Q_NONE)
		return;
	if (g->cancel_pid != 0) {
		ask_cancel(g);
		return;
	}
	ask = g->n[GS_WOKE] > 0 || (g->running != NULL && g->running->pid > 0) ||
	    (g->n[GS_LOCK] > 0 && !g->settled);
	if (!ask)
		return;
	if (now >= g->probe_at)
		ask_blockers(g, now);
	if (g->q == Q_NONE && g->side != NULL)
		/* nothing to ask yet (a request not on its way) */
		g->probe_at = now + LOCK_PROBE_MS;
	gate_at(g, g->probe_at);
}

/*
 * Whether every live turn is accounted for (gate.h): ready here, blocked
 * here, held at another gate, or not live.  Fills ready[], oldest[], the
 * waiting set and the earliest waiter; *idle counts the turns waited for.
 */
static int
account(struct gate *g, uint64_t *cand, int64_t *earliest, int *idle)
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
	for (t = 0; t < g->nturns; t++) {
		g->ready[t] = g->oldest[t] != NULL;
		if (g->ready[t]) {
			nready++;
			if (t < 64)
				*cand |= (uint64_t)1 << t;
			if (g->oldest[t]->since < *earliest)
				*earliest = g->oldest[t]->since;
		} else if (g->live[t] && !g->blocked[t] &&
		    g->held[t] <= g->mine[t])
			(*idle)++;
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
		ask_outside(g, now);
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

struct gate_ent *
gate_decide(struct gate *g, int64_t now)
{
	struct gate_ent	*e;
	const char	*forced = NULL, *mark;
	int64_t		 earliest;
	uint64_t	 cand;
	uint32_t	 deferred;
	int		 t, k, idle;
	bool		 go;

	g->next_at = 0;
	timeouts(g, now);
	side_work(g, now);
	if (g->n[GS_WAIT] == 0 || g->running != NULL || g->n[GS_WOKE] > 0 ||
	    g->victim != NULL || (g->side != NULL && g->n[GS_LOCK] > 0 &&
	    !g->settled))
		return NULL;
	if (account(g, &cand, &earliest, &idle) == 0)
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
	e->rec->forced = forced;
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
	side_open(g, c->lockinfo);
	return g;
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	side_close(g);
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
