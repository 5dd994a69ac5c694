/*
 * The gate's side connection to PostgreSQL (gate.h, gate_conf.lockinfo):
 * which of the exchanges in flight wait on a lock and whose, whether a
 * connection outside the proxy waits on a held turn's lock, the cancel of
 * a deadlock's victim, and what their answers do to the gate's entries;
 * and the cycle finder that picks the victim.  Admission is gate.c's,
 * which calls in here (gate_int.h); nothing here calls gate.c.
 */
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <sys/syscall.h>

#include <libpq-fe.h>

#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"
#include "fault-proxy/gate_int.h"
#include "fault-proxy/io.h"

static pid_t	parent_postgres(pid_t pid);

/* ---- the side connection ---- */

void
gate_side_close(struct gate *g)
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
	gate_side_close(g);
}

/* Blocking, once per gate, before the loop starts; a failure is not fatal. */
void
gate_side_open(struct gate *g, const char *conninfo)
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
	/* a server on this host: its backends' parent, whose children only
	 * soak stops (gate_backend_stop) */
	g->postmaster = parent_postgres(PQbackendPID(g->side));
	if (g->postmaster > 0) {
		char	mark[64];

		/* soak's own server only (iso.h SOAK_PG_MARK): a backend
		 * of another would stay stopped if this process died */
		snprintf(mark, sizeof(mark), "/proc/%d/cwd/" SOAK_PG_MARK,
		    (int)g->postmaster);
		if (access(mark, F_OK) == -1)
			g->postmaster = 0;
	}
	log_debug("%s: wake-ups decided by %s", g->name, g->postmaster > 0 ?
	    "soak (its own server)" : "PostgreSQL (a server soak did not start)");
}

/* /proc/PID/FILE into buf; 0, or -1. */
static int
proc_line(pid_t pid, const char *file, char *buf, size_t len)
{
	char	path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return read_small(path, buf, len) < 0 ? -1 : 0;
}

/* The parent of pid when pid is a postgres process of this host, else 0. */
static pid_t
parent_postgres(pid_t pid)
{
	char	line[512], comm[64];
	long	ppid;

	if (pid <= 0 || proc_line(pid, "stat", line, sizeof(line)) == -1 ||
	    sscanf(line, "%*d (%63[^)]) %*c %ld", comm, &ppid) != 2 ||
	    strcmp(comm, "postgres") != 0)
		return 0;
	return (pid_t)ppid;
}

/* Whether pid sleeps in a latch wait (epoll): where a backend waits on a
 * heavyweight lock, holding no lightweight one. */
static bool
in_latch_wait(pid_t pid)
{
	char	buf[256];
	long	nr;

	if (proc_line(pid, "syscall", buf, sizeof(buf)) == -1 ||
	    sscanf(buf, "%ld", &nr) != 1)
		return false;
#ifdef SYS_epoll_wait
	if (nr == SYS_epoll_wait)
		return true;
#endif
	return nr == SYS_epoll_pwait;
}

/* pid's state letter ('T' stopped), or 0. */
static char
proc_state(pid_t pid)
{
	char	 buf[512], *p;

	if (proc_line(pid, "stat", buf, sizeof(buf)) == -1 ||
	    (p = strrchr(buf, ')')) == NULL || p[1] == '\0')
		return 0;
	return p[2];
}

/*
 * Stops e's backend, but only where it sleeps in its lock wait: its
 * system call looked at (a latch wait, epoll), SIGSTOP, and once it shows
 * stopped its system call again — still the latch wait, where a backend
 * holds no lightweight lock (it may have been granted its lock and come
 * back to wait for its client meanwhile: harmless too).  One stopped
 * anywhere else (it ran: it may hold a buffer's lock) is continued at once
 * and its wake is PostgreSQL's.  The wait for the stop is bounded
 * (STOP_LOOKS looks).
 */
#define STOP_LOOKS	20000
void
gate_backend_stop(struct gate *g, struct gate_ent *e)
{
	char	st = 0;
	int	i;

	if (g->postmaster <= 0 || e->stopped || e->pid <= 0 ||
	    parent_postgres(e->pid) != g->postmaster)
		return;
	if (!in_latch_wait(e->pid) || kill(e->pid, SIGSTOP) == -1)
		return;
	for (i = 0; i < STOP_LOOKS && (st = proc_state(e->pid)) != 'T' &&
	    st != 't' && st != 0; i++)
		sched_yield();
	if ((st == 'T' || st == 't') && in_latch_wait(e->pid)) {
		e->stopped = true;
		return;
	}
	log_debug("%s/%d: backend %d not stopped in its lock wait: its wake is "
	    "PostgreSQL's", g->name, e->turn, (int)e->pid);
	kill(e->pid, SIGCONT);
}

/* schedstat's run delay (ns) of the task at path; 0 unknown. */
static int64_t
run_delay_ns(const char *path)
{
	char			 buf[128];
	unsigned long long	 run, delay;

	if (read_small(path, buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llu %llu", &run, &delay) != 2 || delay > INT64_MAX)
		return 0;
	return (int64_t)delay;
}

int64_t
gate_starved_ms(const struct gate *g, const struct gate_ent *e)
{
	char	path[64];
	int64_t	ns = run_delay_ns("/proc/thread-self/schedstat");

	if (g->postmaster > 0 && e->pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)e->pid);
		ns += run_delay_ns(path);
	}
	return ns / 1000000;
}

void
gate_backend_cont(struct gate *g, struct gate_ent *e)
{
	if (!e->stopped)
		return;
	e->stopped = false;
	if (kill(e->pid, SIGCONT) == -1)
		log_warn("%s/%d: SIGCONT to backend %d", g->name, e->turn,
		    (int)e->pid);
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
void
gate_side_ask_outside(struct gate *g, int64_t now)
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
		gate_backend_stop(g, e);	/* its wake-up is soak's */
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
		e->starved = g->starved(g, e);
	}
}

/* ---- the cycle finder ---- */

/* Whether row j's backend waits on row k's. */
static bool
edge(const struct row *rows, size_t j, size_t k)
{
	size_t	b;

	if (rows[k].e->st != GS_LOCK)
		return false;
	for (b = 0; b < rows[j].nb; b++)
		if (rows[j].b[b] == rows[k].e->pid)
			return true;
	return false;
}

/*
 * Depth-first from row j (colour 1 while on the path, 2 when done); on an
 * edge back to a row on the path, the cycle is the path from that row, and
 * *victim becomes its exchange admitted first.
 */
static bool
dfs(const struct row *rows, size_t n, size_t j, uint8_t *colour, size_t *path,
    size_t depth, struct gate_ent **victim)
{
	size_t	k, i;

	colour[j] = 1;
	path[depth++] = j;
	for (k = 0; k < n; k++) {
		if (!edge(rows, j, k))
			continue;
		if (colour[k] == 1) {
			for (i = 0; path[i] != k; i++)
				;
			for (*victim = NULL; i < depth; i++)
				if (*victim == NULL || rows[path[i]].e->rec->step <
				    (*victim)->rec->step)
					*victim = rows[path[i]].e;
			return true;
		}
		if (colour[k] == 0 && dfs(rows, n, k, colour, path, depth, victim))
			return true;
	}
	colour[j] = 2;
	return false;
}

/* Rows are few: one per exchange in flight. */
struct gate_ent *
gate_cycle_victim(const struct row *rows, size_t n)
{
	struct gate_ent	*victim = NULL;
	uint8_t		*colour;
	size_t		*path, i;

	if (n < 2)
		return NULL;
	colour = xcalloc(n, 1);
	path = xcalloc(n, sizeof(*path));
	for (i = 0; i < n && victim == NULL; i++)
		if (colour[i] == 0 && rows[i].e->st == GS_LOCK)
			(void)dfs(rows, n, i, colour, path, 0, &victim);
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
	/* a stopped backend would take its cancel only once continued */
	gate_backend_cont(g, v);
	g->stats.deadlocks++;
}

/* ---- the answers ---- */

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
	if (g->victim == NULL && (v = gate_cycle_victim(g->rows, g->nrows)) != NULL)
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

/* What PostgreSQL must be told or asked before anything is admitted. */
void
gate_side_work(struct gate *g, int64_t now)
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
