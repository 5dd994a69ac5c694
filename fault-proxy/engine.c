/*
 * The proxy engine: one epoll thread per proxy_set serving every listener
 * of the set (proxy.h).  This file is the set: its listeners, its loop and
 * its timers, and the gates of its scheduled proxies; a connection's own
 * life is conn.c's, scheduled admission gate.c's (its side connection to
 * PostgreSQL gate_side.c's).
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/cassette.h"
#include "fault-proxy/engine_int.h"

#define MAX_EVENTS	64

size_t
proxy_set_live(struct proxy_set *ps)
{
	return ps->live;
}

int
proxy_set_settle(struct proxy_set *ps, int timeout_ms)
{
	struct timespec	ts;
	int		rc = 0;

	if (ps == NULL)
		return 0;
	abstime_mono_in(&ts, timeout_ms);
	pthread_mutex_lock(&ps->mu);
	/* every connection closed, and the turns' exits acted on: what a
	 * turn's exit tells the gates (a plan's step that never came) is
	 * said before the caller asks (proxy_set_diverged) */
	while ((ps->live > 0 || atomic_load(&ps->turn_done) !=
	    atomic_load(&ps->turn_gen)) && rc == 0)
		rc = pthread_cond_timedwait(&ps->idle, &ps->mu, &ts);
	rc = ps->live > 0 || atomic_load(&ps->turn_done) !=
	    atomic_load(&ps->turn_gen) ? -1 : 0;
	pthread_mutex_unlock(&ps->mu);
	return rc;
}

static void
listener_accept(struct listener *l)
{
	struct proxy_set	*ps = l->ps;
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	uint16_t		 port;
	int			 fd;

	for (;;) {
		sl = sizeof(ss);
		fd = accept4(l->ep.fd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* back off rather than spin or die */
				log_warn("%s/%d: accept, pausing %dms", l->name,
				    l->turn, PROXY_ACCEPT_BACKOFF_MS);
				l->backoff_until = now_ms() + PROXY_ACCEPT_BACKOFF_MS;
				px_ep_set(ps->epfd, &l->ep, 0);
			}
			return;
		}
		port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)
		    &ss)->sin_port) : ss.ss_family == AF_INET6 ? ntohs(
		    ((struct sockaddr_in6 *)&ss)->sin6_port) : 0;
		(void)px_conn_new(l, fd, port);
	}
}

/* ---- actors (gate.h): a turn's processes as /proc and the set see them ---- */

static int
by_port(const void *a, const void *b)
{
	uint16_t	x = *(const uint16_t *)a, y = *(const uint16_t *)b;

	return (x > y) - (x < y);
}

/* quiet.h's ours: a peer that is one of the set's listeners, or the set's
 * own connection to a service it fronts (its upstream socket's port). */
static enum quiet_peer
set_ours(void *arg, uint32_t addr, uint16_t port)
{
	struct proxy_set	*ps = arg;
	const struct conn	*c;

	if (addr != INADDR_LOOPBACK)
		return QUIET_PEER_NONE;
	if (bsearch(&port, ps->lports, ps->nlports, sizeof(*ps->lports),
	    by_port) != NULL)
		return QUIET_PEER_LISTENER;
	for (c = ps->conns; ps->nsvcs > 0 && c != NULL; c = c->next)
		if (c->l->front >= 0 && c->uep.fd != -1 && c->up_lport == port)
			return QUIET_PEER_UPSTREAM;
	return QUIET_PEER_NONE;
}

static struct conn *
conn_of_port(struct proxy_set *ps, uint16_t port)
{
	struct conn	*c;

	for (c = ps->conns; c != NULL; c = c->next)
		if (c->peer_port == port)
			return c;
	return NULL;
}

/*
 * gate_conf.actor: turn t's processes, looked at through /proc when
 * something may have woken them since the last look that found them
 * quiet, then each socket they wait on judged by what the set knows of its
 * connection: held at a gate or idle, accounted for; an exchange on its
 * way (at another proxy, or admitted elsewhere), busy; a stall the proxy
 * makes itself (a lost reply's hold, a blackhole), a wait that ends by
 * itself; a socket the set has not accepted yet, running.
 */
/* gate_conf.replied: bytes on e's upstream descriptor that the loop has
 * not read yet (FIONREAD; a descriptor it does not apply to: no). */
static bool
engine_replied(const struct gate *g, const struct gate_ent *e)
{
	const struct conn	*c = (const struct conn *)(const void *)((const char *)e -
	    offsetof(struct conn, gent));
	int			 unread;

	(void)g;
	return c->uep.fd != -1 && ioctl(c->uep.fd, FIONREAD, &unread) == 0 &&
	    unread > 0;
}

/*
 * Whether idle connection c has nothing on its way to its client: no byte
 * and no close from its upstream the loop has not acted on yet.  A client
 * reading an idle connection whose server has closed (an HTTP/1.0 reply,
 * `Connection: close`) is woken by the close the proxy passes on next,
 * not by anything a gate admits: until then it is busy, not accounted for.
 */
static bool
conn_idle_still(const struct conn *c)
{
	struct pollfd	pfd = { .fd = c->uep.fd, .events = POLLIN | POLLRDHUP };

	if (c->up_eof)
		return false;
	return c->uep.fd == -1 || poll(&pfd, 1, 0) == 0;
}

/* ---- services under a schedule (docs/faults.md) ---- */

/* Whether front connection c's admitted request has all reached the
 * service (what is in its socket the service's threads see). */
static bool
front_delivered(const struct conn *c)
{
	return c->in_exchange && c->req_done && c->up.len == 0 &&
	    c->uep.fd != -1 && (c->state == CS_REQUEST || c->state == CS_REPLY);
}

/* Whether front connection c's request is in its service's hands: all of
 * it delivered, and nothing of its reply come back yet (not even unread by
 * the loop: then the reply is on its way). */
static bool
front_in_hand(const struct conn *c)
{
	int	unread;

	return front_delivered(c) && !c->got_reply && !c->up_eof &&
	    !(ioctl(c->uep.fd, FIONREAD, &unread) == 0 && unread > 0);
}

/*
 * Service k as gate `asking` sees it now: GA_QUIET when its process group
 * is quiet (an accept loop's own timeout counts: quiet.h timed_listen), no
 * request its front let go is on its way to it, and every socket of soak's
 * it waits on is held at a gate, idle, or `asking`'s own admitted
 * exchange; else what keeps it from being so.  /proc is read once a loop
 * pass (the pass moves with each admission, which may wake it).
 */
static enum gate_act
svc_act(struct proxy_set *ps, int k, const struct gate *asking)
{
	struct svc_state	*s = &ps->svcs[k];
	struct conn		*c;
	pid_t			 pgid = atomic_load(&s->pgid);
	size_t			 i;
	int			 unread;

	if (pgid <= 0)
		return GA_UNSEEN;
	for (c = ps->conns; c != NULL; c = c->next)
		if (c->l->front == k && (c->gent.st == GS_RUN ||
		    c->gent.st == GS_WOKE) && !front_delivered(c))
			return GA_BUSY;		/* a request on its way to it */
	if (s->pass != ps->pass) {
		quiet_look(ps->quiet, pgid, &s->res);
		s->pass = ps->pass;
		log_debug("service %d (group %d): %s%s, %d processes, %d "
		    "threads%s%s", k, (int)pgid, quiet_st_name(s->res.st),
		    s->res.timed_listen ? " (an accept loop's timeout)" : "",
		    s->res.nprocs, s->res.nthreads, s->res.what[0] ? ": " : "",
		    s->res.what);
	}
	switch (s->res.st) {
	case QUIET_GONE:	return GA_GONE;
	case QUIET_RUNNING:	return GA_RUNNING;
	case QUIET_UNSEEN:	return GA_UNSEEN;
	case QUIET_TIMED:
		if (!s->res.timed_listen)
			return GA_TIMED;
		break;
	default:		break;
	}
	if (s->res.ports_cut)
		return GA_UNSEEN;
	for (i = 0; i < s->res.nports; i++) {
		if ((c = conn_of_port(ps, s->res.ports[i])) == NULL)
			return GA_RUNNING;	/* not accepted yet */
		if (ioctl(c->cep.fd, FIONREAD, &unread) == 0 && unread > 0)
			return GA_BUSY;
		if (c->gent.st == GS_WAIT || c->gent.st == GS_LOCK ||
		    c->gent.st == GS_STUCK)
			continue;		/* held at a gate */
		if ((c->gent.st == GS_RUN || c->gent.st == GS_WOKE) &&
		    c->l->gate == asking)
			continue;		/* the asking gate's own */
		if ((c->state == CS_IDLE && conn_idle_still(c)) ||
		    c->state == CS_CLOSED)
			continue;
		if (c->state == CS_HOLD || c->state == CS_BLACKHOLE ||
		    c->state == CS_STALL)
			return GA_TIMED;
		return GA_BUSY;			/* a reply on its way to it */
	}
	return GA_QUIET;
}

/* Whether a gate holds an exchange of service k's (waiting, on a lock, or
 * one `blocked` went past). */
static bool
svc_holds(const struct proxy_set *ps, int k)
{
	const struct conn	*c;

	for (c = ps->conns; c != NULL; c = c->next)
		if (c->l->svc == k && (c->gent.st == GS_WAIT ||
		    c->gent.st == GS_LOCK || c->gent.st == GS_STUCK))
			return true;
	return false;
}

/*
 * A request in a service's hands, the service not quiet: nothing the loop
 * would hear of says when it is, so a pass is due soon to look again,
 * backing off while nothing settles (svc_serve's pass resets it).
 */
static void
svc_relook(struct proxy_set *ps)
{
	int64_t	at = now_ms() + ps->svc_look_ms;

	if (ps->svc_next != 0 && ps->svc_next <= at)
		return;
	ps->svc_next = at;
	if ((ps->svc_look_ms *= 2) > ACTOR_LOOK_MAX_MS)
		ps->svc_look_ms = ACTOR_LOOK_MAX_MS;
}

/*
 * The requests a front's gate let go that have reached their service:
 * once the service is quiet, each has settled, and the gate is free for
 * the next one (the trace's "served":"quiet"), before the reply: what the
 * service does for it from then on waits at the database's gate as the
 * turn's, so the next request is ordered, not held to this one's reply.
 * One `blocked` went past (GS_STUCK) settles the same way.
 */
static void
svc_serve(struct proxy_set *ps)
{
	struct conn	*c;
	enum gate_act	 sa;
	bool		 left = false, quiet;

	if (ps->svc_next != 0 && ps->svc_next <= now_ms())
		ps->svc_next = 0;	/* this pass is the look */
	for (c = ps->conns; ps->nsvcs > 0 && c != NULL; c = c->next) {
		if (c->l->front < 0 || !c->svc_counted || !front_in_hand(c))
			continue;
		sa = svc_act(ps, c->l->front, c->l->gate);
		quiet = sa == GA_QUIET;
		if (quiet) {
			ps->svc_look_ms = ACTOR_LOOK_MS;
			px_front_settled(c);
		} else
			left = true;
		if (c->rec.served || (c->gent.st != GS_RUN && c->gent.st != GS_STUCK))
			continue;
		/*
		 * Not quiet, but in a wait that ends by itself while a gate
		 * holds what it asked (Node's timers; a thread's timed wait),
		 * `arrival` after it was let go: the next request goes, forced.
		 * This one stays in the service's hands for whose statement is
		 * whose (conn.c served_turn): two at once cannot be told apart,
		 * and their statements pass unheld, counted, rather than be
		 * given to the wrong turn.
		 */
		if (!quiet && ((sa != GA_TIMED && sa != GA_UNSEEN) ||
		    !svc_holds(ps, c->l->front) ||
		    now_ms() - c->svc_since < c->l->arrival_ms))
			continue;
		c->rec.served = true;
		c->rec.served_forced = !quiet;
		log_debug("%s/%d conn %u: service %d %s, the %s goes on",
		    c->l->name, c->l->turn, c->no, c->l->front,
		    quiet ? "quiet" : "past arrival",
		    c->l->turnstile ? "turnstile" : "gate");
		if (c->l->turnstile)
			c->gent.st = GS_OUT;
		else
			gate_end(c->l->gate, &c->gent, now_ms());
	}
	if (left)
		svc_relook(ps);
}

/*
 * Each service's turnstile (a front with no schedule of its own): when
 * none of its requests is in its hands unsettled, the one that came first
 * goes.  No step, no draw: the order among requests is not what decides a
 * race inside the service, the database's gate is, which waits for every
 * request held here to be let go and its statements to come before it
 * decides (engine_actor).
 */
static void
turnstile_pass(struct proxy_set *ps)
{
	struct conn	*c, *first;
	size_t		 k;

	for (k = 0; k < ps->nsvcs; k++) {
		first = NULL;
		for (c = ps->conns; c != NULL; c = c->next) {
			if (c->l->front != (int)k || !c->l->turnstile)
				continue;
			if (c->svc_counted && !c->rec.served)
				break;		/* one in its hands, not let go */
			if (c->gent.st == GS_WAIT &&
			    (first == NULL || c->gent.seq < first->gent.seq))
				first = c;
		}
		if (c != NULL || first == NULL)
			continue;
		log_debug("%s/%d conn %u: the turnstile lets it go", first->l->name,
		    first->l->turn, first->no);
		first->gent.st = GS_RUN;
		px_conn_admit(first);
		ps->pass++;
		if (ps->quiet != NULL)
			quiet_begin(ps->quiet);
	}
}

static enum gate_act
engine_actor(void *arg, const struct gate *asking, int turn, int64_t *ran_ms)
{
	struct proxy_set	*ps = arg;
	struct actor_view	*v;
	enum gate_act		 a = GA_QUIET;
	struct conn		*c;
	pid_t			 pid;
	size_t			 i;
	int			 unread;
	bool			 timed = false, idle = false, pending = false;

	*ran_ms = -1;
	if (turn < 0 || turn >= ps->nturn_live || ps->quiet == NULL ||
	    !atomic_load(&ps->actors_on))
		return GA_UNKNOWN;
	if ((pid = atomic_load(&ps->turn_pid[turn])) <= 0)
		return GA_RUNNING;	/* started, not told yet */
	v = &ps->views[turn];
	if (!v->valid || v->pid != pid || v->gen != ps->poke[turn] ||
	    v->res.st != QUIET_QUIET) {
		quiet_look(ps->quiet, pid, &v->res);
		v->pid = pid;
		v->gen = ps->poke[turn];
		v->valid = true;
		log_debug("turn %d (group %d): %s, %d processes, %d threads, %zu "
		    "sockets of soak's%s%s", turn, (int)pid,
		    quiet_st_name(v->res.st), v->res.nprocs, v->res.nthreads,
		    v->res.nports, v->res.what[0] ? ": " : "", v->res.what);
		if (v->res.denied && !ps->denied_told) {
			ps->denied_told = true;
			log_warnx("proxy: /proc does not show turn %d's waits (%s): "
			    "its decisions are left to `arrival` and marked forced",
			    turn, v->res.what);
		}
	}
	switch (v->res.st) {
	case QUIET_GONE:	return GA_GONE;
	case QUIET_RUNNING:
		*ran_ms = v->res.cpu_ns > 0 ? (int64_t)(v->res.cpu_ns / 1000000) : -1;
		return GA_RUNNING;
	case QUIET_UNSEEN:	return GA_UNSEEN;
	case QUIET_TIMED:
		/* its own timeout on sockets of soak's: busy while a reply
		 * is on its way to one, else a wait that ends by itself */
		if (!v->res.timed_socks)
			return GA_TIMED;
		timed = true;
		break;
	default:		break;
	}
	if (v->res.ports_cut)
		return GA_UNSEEN;
	for (i = 0; i < v->res.nports; i++) {
		if ((c = conn_of_port(ps, v->res.ports[i])) == NULL)
			return GA_RUNNING;	/* not accepted yet */
		/* each socket but an idle one: what its wait is on is soak's
		 * to end (a client's own timeout on it fires only if soak
		 * holds it that long) */
		pending = true;
		/* what it sent that the loop has not read yet: an event to come */
		if (ioctl(c->cep.fd, FIONREAD, &unread) == 0 && unread > 0) {
			a = GA_BUSY;
			continue;
		}
		if (c->gent.st == GS_WAIT)
			c->gent.origin = v->res.origin[i];
		if (c->l->front >= 0 && c->gent.st != GS_WAIT &&
		    !((c->gent.st == GS_RUN || c->gent.st == GS_WOKE) &&
		    c->l->gate == asking) && front_in_hand(c)) {
			/* a request in a service's hands: accounted for
			 * while the service is quiet (what it asks for the
			 * request waits at a gate), else its reply is on its
			 * way, waited for as one at another proxy */
			enum gate_act	sa = svc_act(ps, c->l->front, asking);

			if (sa == GA_QUIET)
				continue;
			/* a wait that ends by itself, or one soak does not
			 * see, while soak holds what the service asked for
			 * the request (Node's timers): what it does when its
			 * timer ends is not known, `arrival` */
			if ((sa == GA_TIMED || sa == GA_UNSEEN) &&
			    svc_holds(ps, c->l->front))
				return sa;
			svc_relook(ps);	/* nothing the loop hears says when */
			a = GA_BUSY;
			continue;
		}
		if (c->gent.st == GS_WAIT && c->l->front >= 0 &&
		    c->l->gate != asking) {
			/* a request a service's front holds: what the
			 * service will ask for it comes before any other
			 * gate decides (docs/faults.md "Services under a
			 * schedule"); the front lets it go once the service
			 * is quiet, an event of the loop's */
			a = GA_BUSY;
			continue;
		}
		if (c->gent.st == GS_WAIT || c->gent.st == GS_LOCK ||
		    c->gent.st == GS_STUCK)
			continue;		/* held at a gate */
		if ((c->gent.st == GS_RUN || c->gent.st == GS_WOKE) &&
		    c->l->gate == asking)
			continue;		/* this gate's own: it waits too */
		if ((c->state == CS_IDLE && conn_idle_still(c)) ||
		    c->state == CS_CLOSED) {
			log_debug("turn %d: waits on %s conn %u, idle", turn,
			    c->l->name, c->no);
			idle = true;
			continue;
		}
		if (c->state == CS_HOLD || c->state == CS_BLACKHOLE ||
		    c->state == CS_STALL)
			return GA_TIMED;	/* the proxy's own stall */
		a = GA_BUSY;			/* its reply is on its way */
	}
	/* a timed wait with nothing of soak's pending on it ends by itself,
	 * and so does an event loop's (its timer is anyone's, quiet.h) */
	return a == GA_QUIET && timed && (idle || !pending ||
	    v->res.timed_epoll) ? GA_TIMED : a;
}

/* ---- the loop ---- */

/*
 * The next timer of the set, in ms from now (-1: none).  O(connections +
 * duplicates + listeners + gates) per loop pass: the timers are unsorted,
 * and a seed's set holds tens of connections, not thousands.
 */
static int
loop_timeout(struct proxy_set *ps)
{
	struct conn	*c;
	struct dup	*d;
	struct local	*lo;
	size_t		 i;
	int64_t		 now = now_ms(), next = -1, t;
	int		 dir;

#define CONSIDER(x) do { t = (x); if (t > 0 && (next < 0 || t < next)) next = t; } while (0)
	for (c = ps->conns; c != NULL; c = c->next) {
		CONSIDER(c->deadline);
		for (dir = 0; dir < 2; dir++)
			CONSIDER(c->next_write[dir]);
	}
	for (d = ps->dups; d != NULL; d = d->next)
		CONSIDER(d->deadline);
	for (lo = ps->locals; lo != NULL; lo = lo->next)
		CONSIDER(lo->next_at);
	for (i = 0; i < ps->nls; i++)
		CONSIDER(ps->ls[i].backoff_until);
	for (i = 0; i < ps->ngates; i++)
		CONSIDER(gate_next_at(ps->gates[i]));
	CONSIDER(ps->svc_next);
#undef CONSIDER
	if (next < 0)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}

static void
loop_timers(struct proxy_set *ps)
{
	struct conn	*c, *cn;
	struct dup	*d, *dn;
	struct local	*lo, *lon;
	size_t		 i;
	int64_t		 now = now_ms();

	for (c = ps->conns; c != NULL; c = cn) {
		cn = c->next;
		if ((c->deadline && c->deadline <= now) ||
		    (c->next_write[0] && c->next_write[0] <= now) ||
		    (c->next_write[1] && c->next_write[1] <= now))
			px_conn_timer(c);
	}
	for (lo = ps->locals; lo != NULL; lo = lon) {
		lon = lo->next;
		if (lo->next_at && lo->next_at <= now)
			px_local_timer(lo);
	}
	for (d = ps->dups; d != NULL; d = dn) {
		dn = d->next;
		if (d->deadline <= now) {
			log_warnx("duplicate: no reply within %dms", PROXY_DUP_MS);
			px_dup_free(d);
		}
	}
	for (i = 0; i < ps->nls; i++)
		if (ps->ls[i].backoff_until && ps->ls[i].backoff_until <= now) {
			ps->ls[i].backoff_until = 0;
			px_ep_set(ps->epfd, &ps->ls[i].ep, EPOLLIN);
		}
}

/*
 * The worker's word on its turns (proxy_set_round, proxy_set_turn_exited)
 * reaches the gates before any of them decides in this pass: a new
 * round's turns may already have connected in it.
 */
static void
loop_turns(struct proxy_set *ps)
{
	unsigned	gen = atomic_load(&ps->turn_gen);
	size_t		i;
	int		t;

	int		round = atomic_load(&ps->round_no);

	if (gen == ps->turn_seen)
		return;
	ps->turn_seen = gen;
	for (i = 0; i < ps->ngates; i++) {
		if (round != ps->round_seen)
			gate_round(ps->gates[i], round, NULL);
		for (t = 0; t < ps->nturn_live; t++)
			gate_live(ps->gates[i], t, atomic_load(&ps->turn_live[t]) != 0);
	}
	ps->round_seen = round;
}

/* The gates' waits for their actors, summed for proxy_set_waits. */
static void
waits_take(struct proxy_set *ps)
{
	struct proxy_waits	w = { 0 };
	struct gate_stats	st;
	size_t			i;

	for (i = 0; i < ps->ngates; i++) {
		gate_stats(ps->gates[i], &st);
		w.wait_ms += st.wait_ms;
		w.steps += st.steps;
		if (st.wait_max_ms > w.max_ms || w.max_proxy[0] == '\0') {
			w.max_ms = st.wait_max_ms;
			w.max_step = st.wait_max_step;
			snprintf(w.max_proxy, sizeof(w.max_proxy), "%s",
			    gate_name(ps->gates[i]));
		}
	}
	pthread_mutex_lock(&ps->mu);
	ps->waits = w;
	pthread_mutex_unlock(&ps->mu);
}

/* Each gate's decisions, acted on: admit what it says, until it says none. */
static void
loop_gates(struct proxy_set *ps)
{
	struct gate_ent	*e;
	size_t		 i;
	char		 why[sizeof(ps->diverged)];
	bool		 decided = false;

	loop_turns(ps);
	if (ps->quiet != NULL)
		quiet_begin(ps->quiet);	/* /proc/net/tcp read once a pass */
	ps->pass++;
	if (ps->quiet != NULL && atomic_load(&ps->actors_on))
		svc_serve(ps);
	turnstile_pass(ps);
	for (i = 0; i < ps->ngates; i++) {
		while ((e = gate_decide(ps->gates[i], now_ms())) != NULL) {
			px_conn_admit((struct conn *)((char *)e -
			    offsetof(struct conn, gent)));
			decided = true;
			/* what it woke is looked at afresh */
			ps->pass++;
			if (ps->quiet != NULL)
				quiet_begin(ps->quiet);
		}
		if (!ps->diverged_told && gate_diverged(ps->gates[i],
		    why, sizeof(why))) {
			pthread_mutex_lock(&ps->mu);
			memcpy(ps->diverged, why, sizeof(ps->diverged));
			pthread_mutex_unlock(&ps->mu);
			ps->diverged_told = true;
		}
	}
	if (decided)
		waits_take(ps);
	if (atomic_load(&ps->turn_done) != ps->turn_seen) {
		pthread_mutex_lock(&ps->mu);
		atomic_store(&ps->turn_done, ps->turn_seen);
		pthread_cond_broadcast(&ps->idle);
		pthread_mutex_unlock(&ps->mu);
	}
}

void
proxy_set_waits(struct proxy_set *ps, struct proxy_waits *out)
{
	memset(out, 0, sizeof(*out));
	if (ps == NULL)
		return;
	pthread_mutex_lock(&ps->mu);
	*out = ps->waits;
	pthread_mutex_unlock(&ps->mu);
}

int
proxy_set_diverged(struct proxy_set *ps, char *buf, size_t len)
{
	int	rc;

	if (ps == NULL)
		return 0;
	pthread_mutex_lock(&ps->mu);
	rc = ps->diverged[0] != '\0';
	if (rc)
		snprintf(buf, len, "%s", ps->diverged);
	pthread_mutex_unlock(&ps->mu);
	return rc;
}

static void *
loop_main(void *arg)
{
	struct proxy_set	*ps = arg;
	struct epoll_event	 evs[MAX_EVENTS];
	struct ep		*e;
	struct conn		*c;
	uint64_t		 v;
	int			 n, i;

	for (;;) {
		n = epoll_wait(ps->epfd, evs, MAX_EVENTS, loop_timeout(ps));
		if (n == -1 && errno != EINTR) {
			log_warn("%s: epoll_wait", __func__);
			break;
		}
		for (i = 0; i < n; i++) {
			e = evs[i].data.ptr;
			switch (e->kind) {
			case EP_WAKE:
				goto out;
			case EP_TURNS:
				if (read(e->fd, &v, sizeof(v)) == -1 && errno != EAGAIN)
					log_warn("%s: turn events", __func__);
				break;
			case EP_LISTENER:
				listener_accept(e->owner);
				break;
			case EP_CLIENT:
			case EP_UPSTREAM:
				px_conn_event(e->owner, e, evs[i].events);
				break;
			case EP_DUP:
				px_dup_event(e->owner, evs[i].events);
				break;
			case EP_LOCAL:
				px_local_event(e->owner, evs[i].events);
				break;
			case EP_BRIDGE:
				px_local_bridged(e->owner);
				break;
			case EP_SIDE:
				gate_side_event(e->owner, evs[i].events, now_ms());
				break;
			}
		}
		loop_timers(ps);
		loop_gates(ps);
		while ((c = ps->dead) != NULL) {
			ps->dead = c->next;
			px_conn_free(c);
		}
	}
out:
	return NULL;
}

/* ---- the set ---- */

static bool
name_ok(const char *s)
{
	if (s == NULL || *s == '\0')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/*
 * The stand-in's script of a listener whose upstream is model:PATH: one
 * load per proxy, shared by its turns' listeners (the set's listeners of
 * one proxy index are opened one after another).
 */
static int
model_load(struct listener *l, const struct proxy_listen *pl, char *err)
{
	struct proxy_set	*ps = l->ps;
	char			 why[ERR_LEN];
	size_t			 i;

	for (i = 0; i < ps->nls && &ps->ls[i] != l; i++)
		if (ps->ls[i].proxy == pl->proxy && ps->ls[i].model != NULL) {
			l->model = ps->ls[i].model;
			return 0;
		}
	l->model = xcalloc(1, sizeof(*l->model));
	l->model_owner = true;
	if (model_script_load(pl->upstream + 6, l->model, why) == -1)
		return errf(err, "proxy %s: %s", pl->name, why);
	return 0;
}

/* A replaying listener's cassette: one load per proxy, as model_load. */
static int
cassette_open(struct listener *l, const struct proxy_listen *pl, char *err)
{
	struct proxy_set	*ps = l->ps;
	char			 why[ERR_LEN];
	size_t			 i;

	for (i = 0; i < ps->nls && &ps->ls[i] != l; i++)
		if (ps->ls[i].proxy == pl->proxy && ps->ls[i].cassette != NULL) {
			l->cassette = ps->ls[i].cassette;
			return 0;
		}
	l->cassette = xcalloc(1, sizeof(*l->cassette));
	l->cassette_owner = true;
	if (cassette_load(pl->replay, l->cassette, why) == -1)
		return errf(err, "proxy %s: %s", pl->name, why);
	return 0;
}

/*
 * A listener in front of a real model API: its bridge's base URL (TLS by
 * https://, to the name SNI and the certificate check use), CA and key.
 */
static int
bridge_open(struct listener *l, const struct proxy_listen *pl, char *err)
{
	struct bridge_conf	*bc;

	if (strncmp(pl->upstream, "unix:", 5) == 0)
		return errf(err, "proxy %s: a recording proxy reaches its upstream "
		    "over TCP, not a unix socket", pl->name);
	bc = l->bridge = xcalloc(1, sizeof(*l->bridge));
	bc->base = xasprintf("%s://%s", pl->tls ? "https" : "http",
	    pl->upstream);
	bc->ca = xstrdup(pl->tls_ca);
	bc->key = xstrdup(pl->api_key);
	bc->record = pl->record != NULL;
	l->record = xstrdup(pl->record);
	return 0;
}

/* A recording listener's exchanges, appended to this process's part. */
static void
tape_write(struct listener *l)
{
	char	*part, err[ERR_LEN];
	size_t	 i;
	int	 fd;

	if (l->record == NULL || l->ntape == 0)
		return;
	part = xasprintf("%s.part-%ld", l->record, (long)getpid());
	if ((fd = open(part, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0644)) == -1) {
		errf(err, "%s: %s", part, strerror(errno));
		log_warnx("proxy %s: %zu recorded exchange(s) lost: %s", l->name,
		    l->ntape, err);
		free(part);
		return;
	}
	/* a line a write: parts of one file from several seeds never mix */
	for (i = 0; i < l->ntape; i++)
		if (write(fd, l->tape[i], strlen(l->tape[i])) !=
		    (ssize_t)strlen(l->tape[i]))
			log_warn("proxy %s: %s", l->name, part);
	close(fd);
	free(part);
}

int
proxy_set_missed(struct proxy_set *ps, char *buf, size_t len)
{
	int	rc;

	if (ps == NULL)
		return 0;
	pthread_mutex_lock(&ps->mu);
	rc = ps->missed[0] != '\0';
	if (rc)
		snprintf(buf, len, "%s", ps->missed);
	pthread_mutex_unlock(&ps->mu);
	return rc;
}

static int
listener_open(struct listener *l, const struct proxy_listen *pl, char *err)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	char			 host[INET6_ADDRSTRLEN];
	int			 fd = -1, one = 1, port;

	l->ep = (struct ep){ EP_LISTENER, l, -1, 0 };
	if (!name_ok(pl->name))
		return errf(err, "bad proxy name \"%s\" (want [A-Za-z0-9_]+)",
		    pl->name ? pl->name : "");
	l->name = xstrdup(pl->name);
	l->proxy = pl->proxy;
	l->schedule = pl->schedule != NULL && pl->schedule->enabled ?
	    pl->schedule : NULL;
	l->turn = pl->turn;
	l->service = pl->service != NULL ? xstrdup(pl->service) : NULL;
	l->svc = -1;			/* proxy_set_open's */
	l->front = pl->front - 1;
	l->turnstile = l->front >= 0 && l->schedule == NULL && pl->service == NULL;
	l->protocol = pl->protocol;
	l->faults = *pl->faults;
	l->faults.match = NULL;		/* the caller's; re is ours */
	l->upstream = xstrdup(pl->upstream);
	/* A plan carries no service's exchange yet (common/plan.c): under a
	 * plan they get the seed's decisions, as in the run it was made of. */
	l->planned = pl->planned && pl->service == NULL;
	l->plan = pl->service == NULL ? pl->plan : NULL;
	if (pl->faults->match != NULL) {
		char	why[128];
		int	rc;

		if ((rc = regcomp(&l->re, pl->faults->match,
		    REG_EXTENDED | REG_NOSUB)) != 0) {
			regerror(rc, &l->re, why, sizeof(why));
			regfree(&l->re);
			return errf(err, "proxy %s: match \"%s\" is not a POSIX "
			    "extended regex: %s", pl->name, pl->faults->match, why);
		}
		l->has_re = true;
	}
	if (pl->replay != NULL) {
		if (cassette_open(l, pl, err) == -1)
			return -1;
	} else if (strncmp(pl->upstream, "model:", 6) == 0) {
		if (model_load(l, pl, err) == -1)
			return -1;
	} else if (pl->record != NULL || pl->tls) {
		if (bridge_open(l, pl, err) == -1)
			return -1;
	} else if (px_parse_addr(pl->upstream, &l->up_addr, &l->up_len,
	    err) == -1)
		return -1;
	if (px_parse_addr(pl->listen, &ss, &sl, err) == -1)
		return -1;
	if (ss.ss_family == AF_UNIX)
		return errf(err, "proxy %s: listen on a unix socket is not supported",
		    pl->name);
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		return errf(err, "proxy %s: socket: %s", pl->name, strerror(errno));
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1) {
		errf(err, "proxy %s: bind %s: %s", pl->name, pl->listen,
		    strerror(errno));
		goto fail;
	}
	if (listen(fd, 1024) == -1) {
		errf(err, "proxy %s: listen: %s", pl->name, strerror(errno));
		goto fail;
	}
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1) {
		errf(err, "proxy %s: getsockname: %s", pl->name, strerror(errno));
		goto fail;
	}
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host,
		    sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(l->addr, sizeof(l->addr), "%s:%d", host, port);
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host,
		    sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		snprintf(l->addr, sizeof(l->addr), "[%s]:%d", host, port);
	}
	l->ep.fd = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

/* What the set needs to see its turns' processes (a scheduled set only). */
static void
actors_setup(struct proxy_set *ps)
{
	size_t	i, n = (size_t)(ps->nturn_live ? ps->nturn_live : 1);
	char	*p;

	ps->turn_pid = xcalloc(n, sizeof(*ps->turn_pid));
	ps->views = xcalloc(n, sizeof(*ps->views));
	ps->poke = xcalloc(n, sizeof(*ps->poke));
	ps->lports = xcalloc(ps->nls ? ps->nls : 1, sizeof(*ps->lports));
	for (i = 0; i < ps->nls; i++)
		if ((p = strrchr(ps->ls[i].addr, ':')) != NULL)
			ps->lports[ps->nlports++] = (uint16_t)atoi(p + 1);
	qsort(ps->lports, ps->nlports, sizeof(*ps->lports), by_port);
	ps->quiet = quiet_new(set_ours, ps);
}

/*
 * One gate per scheduled proxy index, its turns those of its turns'
 * listeners; a gate asks PostgreSQL about lock waits on the lockinfo of its
 * listeners.  A service's listener of a scheduled proxy in front of the
 * database feeds the gate too: each of its exchanges waits there as the
 * turn whose request it serves (conn.c, served_turn), or passes unheld,
 * marked (bypass), when that cannot be told (the service's process not
 * known, its requests not through a front of the set).  A service's
 * listener of any other scheduled proxy passes unheld, marked.
 */
static int
gates_setup(struct proxy_set *ps, const struct proxy_listen *pl, char *err)
{
	struct gate_conf	 gc;
	size_t			 i, j, k;
	int			 nturns;

	ps->held = xcalloc((size_t)(ps->nturn_live ? ps->nturn_live : 1),
	    sizeof(*ps->held));
	for (i = 0; i < ps->nls; i++) {
		if (ps->ls[i].schedule == NULL || ps->ls[i].gate != NULL ||
		    ps->ls[i].bypass || ps->ls[i].service != NULL)
			continue;
		nturns = 0;
		for (j = i; j < ps->nls; j++)
			if (ps->ls[j].proxy == ps->ls[i].proxy &&
			    ps->ls[j].service == NULL && ps->ls[j].turn + 1 > nturns)
				nturns = ps->ls[j].turn + 1;
		gc = (struct gate_conf){ .name = ps->ls[i].name, .nturns = nturns,
		    .seed = ps->seed, .sched = ps->ls[i].schedule,
		    .lockinfo = pl[i].lockinfo, .epfd = ps->epfd,
		    .held = ps->held, .planned = pl[i].planned,
		    .plan = pl[i].plan, .then_seed = pl[i].then_seed,
		    .actor = engine_actor, .actor_arg = ps,
		    .replied = engine_replied };
		ps->gates = xreallocarray(ps->gates, ps->ngates + 1,
		    sizeof(*ps->gates));
		if ((ps->gates[ps->ngates] = gate_new(&gc, err)) == NULL)
			return -1;
		for (k = i; k < ps->nls; k++) {
			if (ps->ls[k].proxy != ps->ls[i].proxy)
				continue;
			ps->ls[k].arrival_ms = ps->ls[i].schedule->arrival_ms;
			if (ps->ls[k].service != NULL && (pl[k].lockinfo == NULL ||
			    ps->ls[k].svc < 0))
				ps->ls[k].bypass = true;
			else
				ps->ls[k].gate = ps->gates[ps->ngates];
		}
		ps->ngates++;
	}
	for (i = 0; i < ps->nls; i++)
		ps->ls[i].schedule = NULL;	/* the config is the caller's */
	if (ps->ngates > 0)
		actors_setup(ps);
	return 0;
}

/* The services of the set's listeners, numbered in order of first
 * appearance (proxy_set_open_cfg: the k-th service is actor turns + k). */
static void
svcs_setup(struct proxy_set *ps)
{
	size_t	i, j, k;

	for (i = 0; i < ps->nls; i++) {
		if (ps->ls[i].service == NULL)
			continue;
		for (j = 0; j < i; j++)
			if (ps->ls[j].service != NULL &&
			    strcmp(ps->ls[j].service, ps->ls[i].service) == 0)
				break;
		ps->ls[i].svc = j < i ? ps->ls[j].svc : (int)ps->nsvcs++;
	}
	ps->svcs = xcalloc(ps->nsvcs ? ps->nsvcs : 1, sizeof(*ps->svcs));
	for (k = 0; k < ps->nsvcs; k++) {
		ps->svcs[k].last = -1;
		ps->svc_look_ms = ACTOR_LOOK_MS;
		ps->svcs[k].active = xcalloc((size_t)(ps->nturn_live ?
		    ps->nturn_live : 1), sizeof(*ps->svcs[k].active));
	}
	for (i = 0; i < ps->nls; i++)
		if (ps->ls[i].front >= (int)ps->nsvcs) {
			ps->ls[i].front = -1;
			ps->ls[i].turnstile = false;
		}
}

struct proxy_set *
proxy_set_open(const struct proxy_listen *pl, size_t n, uint64_t seed,
    const char *trace_path, char *err)
{
	struct proxy_set	*ps;
	size_t			 i;
	int			 t;

	ps = xcalloc(1, sizeof(*ps));
	ps->epfd = -1;
	ps->wake = (struct ep){ EP_WAKE, ps, -1, 0 };
	ps->turnev = (struct ep){ EP_TURNS, ps, -1, 0 };
	pthread_mutex_init(&ps->mu, NULL);
	cond_init_monotonic(&ps->idle);
	ps->seed = seed;
	ps->ls = xcalloc(n ? n : 1, sizeof(*ps->ls));
	/* the turns' own: a service is no turn the worker starts and reaps */
	for (i = 0; i < n; i++) {
		ps->ls[i].ep.fd = -1;
		if (pl[i].service == NULL && pl[i].turn + 1 > ps->nturn_live)
			ps->nturn_live = pl[i].turn + 1;
	}
	ps->turn_live = xcalloc((size_t)(ps->nturn_live ? ps->nturn_live : 1),
	    sizeof(*ps->turn_live));
	for (t = 0; t < ps->nturn_live; t++)
		atomic_store(&ps->turn_live[t], 1);
	if ((ps->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		errf(err, "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	if ((ps->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
	    (ps->turnev.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		errf(err, "eventfd: %s", strerror(errno));
		goto fail;
	}
	px_ep_set(ps->epfd, &ps->wake, EPOLLIN);
	px_ep_set(ps->epfd, &ps->turnev, EPOLLIN);
	for (i = 0; i < n; i++) {
		ps->ls[i].ps = ps;
		ps->nls = i + 1;
		if (listener_open(&ps->ls[i], &pl[i], err) == -1)
			goto fail;
		px_ep_set(ps->epfd, &ps->ls[i].ep, EPOLLIN);
	}
	svcs_setup(ps);
	if (gates_setup(ps, pl, err) == -1)
		goto fail;
	if (trace_path != NULL) {
		ps->trace_path = xstrdup(trace_path);
		if ((ps->trace = fopen(trace_path, "w")) == NULL) {
			errf(err, "cannot create fault trace %s: %s", trace_path,
			    strerror(errno));
			goto fail;
		}
	}
	if (pthread_create(&ps->thr, NULL, loop_main, ps) != 0) {
		errf(err, "cannot start the proxy thread");
		goto fail;
	}
	ps->running = true;
	return ps;
fail:
	proxy_set_close(ps);
	return NULL;
}

const char *
proxy_set_listener_addr(const struct proxy_set *ps, size_t i)
{
	if (ps == NULL || i >= ps->nls)
		return NULL;
	return ps->ls[i].addr;
}

struct proxy_set *
proxy_set_open_cfg(const struct cfg *cfg, char *const *upstreams,
    const char *dbinfo, int turns, const char *const *services,
    size_t nservices, uint64_t seed, const struct plan *plan,
    bool then_seed, const char *trace_path, char *err)
{
	struct proxy_listen	*pl = NULL;
	struct proxy_set	*ps = NULL;
	const char		**keys;
	size_t			 i, n;
	int			 t, actors;

	if (turns < 0 || (cfg->nproxies > 0 && turns == 0)) {
		errf(err, "proxy_set_open_cfg: bad turn count %d", turns);
		return NULL;
	}
	/* the real API keys, from this process's environment (never a turn's) */
	keys = xcalloc(cfg->nproxies + 1, sizeof(*keys));
	for (i = 0; i < cfg->nproxies; i++) {
		const char	*env = cfg->proxies[i].api_key_env;

		if (env == NULL || cfg->proxies[i].replay != NULL)
			continue;
		if ((keys[i] = getenv(env)) == NULL || *keys[i] == '\0') {
			errf(err, "proxy %s: api_key_env: %s is not set in soak's "
			    "environment (the key the proxy puts in each request)",
			    cfg->proxies[i].name, env);
			free(keys);
			return NULL;
		}
	}
	actors = turns + (int)nservices;
	n = cfg->nproxies * (size_t)actors;
	pl = xcalloc(n ? n : 1, sizeof(*pl));
	for (i = 0; i < cfg->nproxies; i++) {
		const struct cfg_schedule	*sched = &cfg->proxies[i].schedule;
		int				 front = 0;
		size_t				 k;

		/*
		 * A proxy in front of a service through the seam, when the
		 * database's proxy is scheduled: its requests are let go one
		 * at a time, each until the service is quiet, by a gate of its
		 * own (the database proxy's schedule when it has none: the
		 * config's, implied), so
		 * that the service's statements can be told whose they are
		 * (docs/faults.md "Services under a schedule").
		 */
		for (k = 0; cfg->proxies[i].upstream_kind == CFG_UP_SERVICE &&
		    k < nservices; k++)
			if (strcmp(services[k], cfg->proxies[i].upstream) == 0)
				front = (int)k + 1;
		if (front > 0 && (cfg->db_proxy < 0 ||
		    !cfg->proxies[cfg->db_proxy].schedule.enabled))
			front = 0;
		for (t = 0; t < actors; t++) {
			struct proxy_listen *p = &pl[i * (size_t)actors + (size_t)t];

			p->name = cfg->proxies[i].name;
			p->proxy = i;
			p->turn = t;
			p->service = t >= turns ? services[t - turns] : NULL;
			p->listen = "127.0.0.1:0";
			p->upstream = upstreams[i];
			p->protocol = cfg->proxies[i].protocol;
			p->faults = &cfg->proxies[i].faults;
			p->schedule = sched;
			p->front = front;
			if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
				p->lockinfo = dbinfo;
			p->planned = plan != NULL;
			p->plan = plan_proxy(plan, cfg->proxies[i].name);
			p->then_seed = then_seed;
			p->replay = cfg->proxies[i].replay;
			p->record = cfg->proxies[i].record;
			p->tls = cfg->proxies[i].tls;
			p->tls_name = cfg->proxies[i].tls_name;
			p->tls_ca = cfg->proxies[i].tls_ca;
			p->api_key = keys[i];
		}
	}
	if ((ps = proxy_set_open(pl, n, seed, trace_path, err)) != NULL) {
		ps->nproxies = cfg->nproxies;
		ps->turns = turns;
		ps->actors = actors;
		ps->plan = plan;
	}
	free(pl);
	free(keys);
	return ps;
}

/* Any thread: the loop takes it up at its next pass (loop_turns). */
static void
turns_changed(struct proxy_set *ps)
{
	uint64_t	one = 1;

	atomic_fetch_add(&ps->turn_gen, 1);
	if (write(ps->turnev.fd, &one, sizeof(one)) != sizeof(one))
		log_warn("%s: wake", __func__);
}

void
proxy_set_actors(struct proxy_set *ps)
{
	if (ps != NULL && ps->quiet != NULL)
		atomic_store(&ps->actors_on, true);
}

void
proxy_set_turn_started(struct proxy_set *ps, int turn, pid_t pid)
{
	if (ps == NULL || ps->turn_pid == NULL || turn < 0 ||
	    turn >= ps->nturn_live)
		return;
	atomic_store(&ps->turn_pid[turn], pid);
	turns_changed(ps);
}

void
proxy_set_service_started(struct proxy_set *ps, size_t k, pid_t pid)
{
	if (ps == NULL || k >= ps->nsvcs)
		return;
	atomic_store(&ps->svcs[k].pgid, pid);
	turns_changed(ps);
}

void
proxy_set_round(struct proxy_set *ps, int round, const bool *runs)
{
	int	t;

	if (ps == NULL)
		return;
	atomic_store(&ps->round_no, round);
	for (t = 0; t < ps->nturn_live; t++) {
		atomic_store(&ps->turn_live[t], runs == NULL || runs[t] ? 1 : 0);
		if (ps->turn_pid != NULL)	/* the round's own, once told */
			atomic_store(&ps->turn_pid[t], 0);
	}
	turns_changed(ps);
}

void
proxy_set_turn_exited(struct proxy_set *ps, int turn)
{
	if (ps == NULL || turn < 0 || turn >= ps->nturn_live)
		return;
	atomic_store(&ps->turn_live[turn], 0);
	turns_changed(ps);
}

const char *
proxy_set_addr(const struct proxy_set *ps, size_t proxy, int actor)
{
	if (ps == NULL || proxy >= ps->nproxies || actor < 0 ||
	    actor >= ps->actors)
		return NULL;
	return ps->ls[proxy * (size_t)ps->actors + (size_t)actor].addr;
}

void
proxy_set_close(struct proxy_set *ps)
{
	struct conn	*c;
	uint64_t	 one = 1;
	size_t		 i, j;

	if (ps == NULL)
		return;
	if (ps->running) {
		if (write(ps->wake.fd, &one, sizeof(one)) != sizeof(one))
			log_warn("%s: wake", __func__);
		pthread_join(ps->thr, NULL);
		ps->running = false;
	}
	/* open exchanges are part of the story: px_conn_close records them */
	while (ps->conns != NULL)
		px_conn_close(ps->conns, PXC_SET_CLOSED);
	while ((c = ps->dead) != NULL) {
		ps->dead = c->next;
		px_conn_free(c);
	}
	while (ps->dups != NULL)
		px_dup_free(ps->dups);
	while (ps->locals != NULL)
		px_local_free(ps->locals);
	px_trace_write(ps);	/* records point at the listeners' names */
	for (i = 0; i < ps->nls; i++) {
		px_ep_close(ps->epfd, &ps->ls[i].ep, false);
		free(ps->ls[i].name);
		free(ps->ls[i].service);
		free(ps->ls[i].upstream);
		free(ps->ls[i].occ_keys);
		free(ps->ls[i].occ_next);
		if (ps->ls[i].model_owner) {
			model_script_free(ps->ls[i].model);
			free(ps->ls[i].model);
		}
		if (ps->ls[i].cassette_owner) {
			cassette_free(ps->ls[i].cassette);
			free(ps->ls[i].cassette);
		}
		tape_write(&ps->ls[i]);
		for (j = 0; j < ps->ls[i].ntape; j++)
			free(ps->ls[i].tape[j]);
		free(ps->ls[i].tape);
		free(ps->ls[i].record);
		if (ps->ls[i].bridge != NULL) {
			free(ps->ls[i].bridge->base);
			free(ps->ls[i].bridge->ca);
			if (ps->ls[i].bridge->key != NULL)
				explicit_bzero(ps->ls[i].bridge->key,
				    strlen(ps->ls[i].bridge->key));
			free(ps->ls[i].bridge->key);
			free(ps->ls[i].bridge);
		}
		if (ps->ls[i].has_re)
			regfree(&ps->ls[i].re);
	}
	for (i = 0; i < ps->ngates; i++)
		gate_free(ps->gates[i]);
	free(ps->gates);
	free(ps->held);
	for (i = 0; ps->svcs != NULL && i < ps->nsvcs; i++)
		free(ps->svcs[i].active);
	free(ps->svcs);
	free(ps->turn_live);
	free(ps->turn_pid);
	free(ps->views);
	free(ps->poke);
	free(ps->lports);
	quiet_free(ps->quiet);
	px_ep_close(ps->epfd, &ps->wake, false);
	px_ep_close(ps->epfd, &ps->turnev, false);
	if (ps->epfd >= 0)
		close(ps->epfd);
	free(ps->ls);
	free(ps->recs);
	free(ps->trace_path);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->idle);
	free(ps);
}

void
proxy_set_step_check(struct proxy_set *ps, int (*fn)(void *arg, int round,
    uint32_t step), void *arg)
{
	size_t	i;

	if (ps == NULL)
		return;
	for (i = 0; i < ps->ngates; i++)
		gate_set_step_check(ps->gates[i], fn, arg);
}

bool
proxy_set_scheduled(const struct proxy_set *ps)
{
	return ps != NULL && ps->ngates > 0;
}

uint32_t
proxy_set_step_checks(const struct proxy_set *ps)
{
	uint32_t	n = 0;
	size_t		i;

	for (i = 0; ps != NULL && i < ps->ngates; i++)
		n += gate_step_checks(ps->gates[i]);
	return n;
}
