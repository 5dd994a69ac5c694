/*
 * The proxy engine: one epoll thread per proxy_set serving every listener of
 * the set.  Each accepted connection is a small state machine (conn_state)
 * that walks exchange by exchange: roll -> (delay) -> dial lazily ->
 * forward the request -> relay or withhold the reply.  Sockets are
 * nonblocking, epoll is level-triggered, and an fd is removed from the
 * interest set whenever we want nothing from it, so a peer that hangs up
 * while we apply back-pressure cannot make the loop spin.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/http.h"
#include "fault-proxy/pgframe.h"
#include "fault-proxy/proxy.h"
#include "fault-proxy/sched.h"

#define DIR_UP		CFG_UP
#define DIR_DOWN	CFG_DOWN
#define MAX_EVENTS	64
#define REQLINE_LEN	512		/* an HTTP request line, for match */

_Static_assert(PG_SQL_LEN == PROXY_SQL_LEN, "statement summary sizes differ");

enum ep_kind { EP_LISTENER, EP_CLIENT, EP_UPSTREAM, EP_DUP, EP_WAKE, EP_SIDE };

/* What epoll hands back: which object, and which of its sockets. */
struct ep {
	enum ep_kind	 kind;
	void		*owner;
	int		 fd;
	uint32_t	 mask;		/* registered events; 0 = not in the set */
};

struct buf {
	char		*data;		/* PROXY_BUF_CAP bytes, allocated lazily */
	size_t		 off;
	size_t		 len;
};

/*
 * One proxy's schedule (cfg_schedule): its exchanges across every turn of
 * the seed go one at a time, the next chosen by the seeded scheduler among
 * the turns that have one waiting.  Every listener of the proxy points
 * here.
 */
struct psched {
	size_t			 proxy;
	const char		*name;		/* the first listener's */
	struct sched		*s;
	int			 nturns;
	int64_t			 arrival_ms, blocked_ms;
	struct conn		*running;	/* admitted, its reply not all in */
	int64_t			 running_since;
	int64_t			 free_since;	/* the last admission's end */
	int64_t			 next_at;	/* a timeout to come back at, or 0 */
	int			*live;		/* per turn: open connections */
	bool			*seen;		/* per turn: has connected */
	bool			*ready;		/* scratch, per turn */
	struct conn		**oldest;	/* scratch, per turn */
	uint32_t		 forced;	/* decisions a timeout made */

	/*
	 * Lock waits, asked of PostgreSQL: a connection of our own to the
	 * database (NULL: none, `blocked` alone decides) on which an admitted
	 * exchange's backend is looked up in pg_blocking_pids() every
	 * LOCK_PROBE_MS until it either answers or waits on a lock.
	 */
	PGconn			*side;
	struct ep		 sep;
	bool			 probing;	/* a probe in flight */
	int64_t			 probe_at;	/* the next probe, or 0 */
	int			 nwait;		/* exchanges waiting to be admitted */
	int			 nlock;		/* exchanges waiting on a lock */
	int			 nwoke;		/* ... whose lock was since granted */
	uint64_t		 gen;		/* exchanges ended so far */
	uint64_t		 probe_gen;	/* gen when the probe was sent */
	bool			 settled;	/* every lock wait re-asked since */
	bool			*stuck;		/* scratch, per turn */
	unsigned		 round;		/* the set's round seen[] is of */
};

#define LOCK_PROBE_MS	2

struct listener {
	struct ep		 ep;
	struct proxy_set	*ps;
	struct psched		*sched;		/* NULL: not scheduled */
	const struct cfg_schedule *schedule;	/* proxy_set_open only */
	char			*name;
	size_t			 proxy;
	int			 turn;
	enum cfg_protocol	 protocol;
	struct cfg_faults	 faults;	/* faults.match: NULL, see re */
	regex_t			 re;		/* the faults' match */
	bool			 has_re;
	bool			 tls_warned;	/* said once: the database wants TLS */
	struct sockaddr_storage	 up_addr;
	socklen_t		 up_len;
	char			*upstream;
	char			 addr[64];
	uint32_t		 next_conn;
	int64_t			 backoff_until;	/* accept paused (EMFILE) */
};

enum conn_state {
	CS_IDLE,		/* between exchanges */
	CS_PENDING,		/* exchange begun, its statement not yet known */
	CS_DELAY,		/* exchange rolled, latency running */
	CS_CONNECTING,		/* dialling the upstream */
	CS_REQUEST,		/* forwarding the request */
	CS_REPLY,		/* relaying the reply */
	CS_HOLD,		/* lost_reply: reply dropped, client waits for its reset */
	CS_BLACKHOLE,		/* everything swallowed */
	CS_CLOSED,
	CS_MAX
};

static const char *const conn_state_names[CS_MAX] = {
	[CS_IDLE] = "idle", [CS_PENDING] = "pending", [CS_DELAY] = "delay",
	[CS_CONNECTING] = "connecting",
	[CS_REQUEST] = "request", [CS_REPLY] = "reply", [CS_HOLD] = "hold",
	[CS_BLACKHOLE] = "blackhole", [CS_CLOSED] = "closed",
};

struct conn {
	struct ep		 cep;		/* client socket */
	struct ep		 uep;		/* upstream socket, fd -1 until dialled */
	struct listener		*l;
	struct conn		*next, *prev;
	uint32_t		 no;
	enum conn_state		 state;
	bool			 http;		/* framing of the current exchange */
	bool			 pg;		/* PostgreSQL v3 framing: pgf */
	bool			 mode_known;
	bool			 tls_asked;	/* the client sent SSLRequest/GSSENCRequest */
	struct pgframe		*pgf;
	uint64_t		 notifies0;	/* pgf->notifies as the exchange began */
	char			*hello;		/* pg: exchange 0's bytes, for duplicate */
	size_t			 hello_len;
	struct http_frame	 req, resp;
	struct buf		 up, down;
	size_t			 up_scan;	/* head of `up` forwardable now */
	bool			 client_eof, up_eof, up_shut;
	bool			 wblocked[2];
	int64_t			 deadline;	/* state timer, ms; 0 = none */
	int64_t			 next_write[2];	/* throttle, ms */
	uint64_t		 sent[2];	/* for close_after */

	bool			 in_exchange;
	bool			 req_done;	/* request of this exchange complete */
	bool			 got_reply;	/* first reply byte seen */
	uint32_t		 exch_no;	/* next exchange number */
	struct proxy_roll	 roll;
	struct proxy_trace_rec	 rec;
	char			*dupreq;	/* request copy for a duplicate */
	size_t			 duplen;
	bool			 dup_overflow;

	/* scheduled proxies: an exchange known and waiting for its turn */
	bool			 sched_wait;
	bool			 sched_lock;	/* PostgreSQL: it waits on a lock */
	bool			 sched_woke;	/* ... and no longer does */
	bool			 sched_stuck;	/* `blocked` passed it */
	uint64_t		 sched_seq;	/* arrival order, set-wide */
	int64_t			 sched_since;	/* waiting or woke since */
	bool			 sched_has_line;
	char			 sched_line[REQLINE_LEN];	/* http: for match */
};

/* The second delivery of a duplicated request, on its own connection. */
struct dup {
	struct ep		 ep;
	struct proxy_set	*ps;
	struct dup		*next, *prev;
	bool			 connected;
	bool			 http;
	struct http_frame	 resp;
	struct pgframe		*pgf;		/* pg: counts ReadyForQuery */
	int			 ready_left;
	char			*req;
	size_t			 len, off;
	int64_t			 deadline;
};

struct proxy_set {
	pthread_t		 thr;
	bool			 running;
	int			 epfd;
	struct ep		 wake;
	struct listener		*ls;
	size_t			 nls;
	size_t			 nproxies;	/* proxy_set_open_cfg layout */
	int			 turns;
	struct conn		*conns;
	struct conn		*dead;		/* freed after each loop pass */
	struct dup		*dups;
	uint64_t		 seed;
	char			*trace_path;
	FILE			*trace;
	char			 scratch[PROXY_BUF_CAP];

	atomic_size_t		 live;		/* conns + duplicates not yet freed */
	pthread_cond_t		 idle;		/* signalled when live drops to 0 */
	pthread_mutex_t		 mu;		/* guards the records */
	struct proxy_trace_rec	*recs;
	size_t			 nrecs, caprecs, dropped;

	struct psched		**scheds;	/* one per scheduled proxy */
	size_t			 nscheds;
	atomic_uint		 round;		/* proxy_set_round, any thread */
	uint64_t		 sched_seq;
};

static void	conn_process(struct conn *);
static void	conn_close(struct conn *, bool);
static void	exchange_admit(struct conn *, const char *);
static void	conn_arm(struct conn *);

/* ---- small socket helpers ---- */

static void
set_nodelay(int fd)
{
	int	one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Close with an RST instead of a FIN: what a crashed peer looks like. */
static void
close_rst(int fd)
{
	struct linger	lg = { 1, 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static int
parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len,
    char *err)
{
	struct addrinfo		 hints, *res = NULL;
	struct sockaddr_un	*sun;
	char			 host[256];
	const char		*colon, *h, *port;
	size_t			 hl;
	int			 rc;

	memset(ss, 0, sizeof(*ss));
	if (strncmp(s, "unix:", 5) == 0) {
		sun = (struct sockaddr_un *)ss;
		if (strlen(s + 5) == 0 || strlen(s + 5) >= sizeof(sun->sun_path))
			return errf(err, "bad unix socket address \"%s\"", s);
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, s + 5);
		*len = sizeof(*sun);
		return 0;
	}
	if ((colon = strrchr(s, ':')) == NULL || colon[1] == '\0')
		return errf(err, "bad address \"%s\" (want HOST:PORT or unix:/path)", s);
	h = s;
	hl = (size_t)(colon - s);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return errf(err, "bad host in address \"%s\"", s);
	memcpy(host, h, hl);
	host[hl] = '\0';
	port = colon + 1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0)
		return errf(err, "cannot resolve \"%s\": %s", s, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Makes epoll watch exactly `want` on e (none at all when want is 0). */
static void
ep_set(struct proxy_set *ps, struct ep *e, uint32_t want)
{
	struct epoll_event	ev;
	int			op;

	if (e->fd < 0 || want == e->mask)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = want;
	ev.data.ptr = e;
	if (want == 0)
		op = EPOLL_CTL_DEL;
	else
		op = e->mask == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	if (epoll_ctl(ps->epfd, op, e->fd, &ev) == -1)
		log_warn("%s: epoll_ctl fd %d", __func__, e->fd);
	e->mask = want;
}

static void
ep_close(struct proxy_set *ps, struct ep *e, bool rst)
{
	if (e->fd < 0)
		return;
	ep_set(ps, e, 0);
	if (rst)
		close_rst(e->fd);
	else
		close(e->fd);
	e->fd = -1;
}

static int
buf_alloc(struct buf *b)
{
	if (b->data == NULL && (b->data = malloc(PROXY_BUF_CAP)) == NULL)
		return -1;
	return 0;
}

static size_t
buf_space(struct buf *b)
{
	if (b->len == 0)
		b->off = 0;
	else if (b->off > 0 && b->off + b->len == PROXY_BUF_CAP) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	return PROXY_BUF_CAP - b->off - b->len;
}

static void
buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

/* ---- trace ---- */

static void
trace_add(struct proxy_set *ps, const struct proxy_trace_rec *r)
{
	struct proxy_trace_rec	*n;
	size_t			 cap;

	pthread_mutex_lock(&ps->mu);
	if (ps->nrecs == ps->caprecs) {
		cap = ps->caprecs ? ps->caprecs * 2 : 256;
		if (ps->nrecs >= PROXY_TRACE_CAP ||
		    (n = realloc(ps->recs, cap * sizeof(*n))) == NULL) {
			ps->dropped++;
			pthread_mutex_unlock(&ps->mu);
			return;
		}
		ps->recs = n;
		ps->caprecs = cap;
	}
	ps->recs[ps->nrecs++] = *r;
	pthread_mutex_unlock(&ps->mu);
}

static int
rec_cmp(const void *a, const void *b)
{
	const struct proxy_trace_rec	*x = a, *y = b;

	if (x->proxy != y->proxy)
		return x->proxy < y->proxy ? -1 : 1;
	if (x->turn != y->turn)
		return x->turn < y->turn ? -1 : 1;
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->exchange != y->exchange)
		return x->exchange < y->exchange ? -1 : 1;
	return 0;
}

size_t
proxy_set_trace_count(struct proxy_set *ps)
{
	size_t	n;

	pthread_mutex_lock(&ps->mu);
	n = ps->nrecs;
	pthread_mutex_unlock(&ps->mu);
	return n;
}

size_t
proxy_set_live(struct proxy_set *ps)
{
	return ps->live;
}

/* Engine thread: one connection or duplicate gone. */
static void
live_release(struct proxy_set *ps)
{
	if (atomic_fetch_sub(&ps->live, 1) == 1) {
		pthread_mutex_lock(&ps->mu);
		pthread_cond_broadcast(&ps->idle);
		pthread_mutex_unlock(&ps->mu);
	}
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
	while (ps->live > 0 && rc == 0)
		rc = pthread_cond_timedwait(&ps->idle, &ps->mu, &ts);
	rc = ps->live > 0 ? -1 : 0;
	pthread_mutex_unlock(&ps->mu);
	return rc;
}

/* ---- connections ---- */

static void
set_state(struct conn *c, enum conn_state s)
{
	if (c->state == s)
		return;
	log_debug("%s/%d conn %u: %s -> %s", c->l->name, c->l->turn, c->no,
	    conn_state_names[c->state], conn_state_names[s]);
	c->state = s;
}

static void
exchange_end(struct conn *c)
{
	struct psched	*q = c->l->sched;

	if (!c->in_exchange)
		return;
	if (q != NULL) {
		if (q->running == c || c->sched_woke ||
		    (c->sched_lock && q->side == NULL))
			q->free_since = now_ms();
		if (q->running == c)
			q->running = NULL;
		if (c->sched_lock)
			q->nlock--;
		if (c->sched_woke)
			q->nwoke--;
		c->sched_lock = c->sched_woke = c->sched_stuck = false;
		q->gen++;	/* a lock may have been released */
		q->settled = false;
	}
	c->rec.client_got_reply = c->rec.bytes_down > 0;
	if (c->pg) {
		c->rec.pg = pg_kind_name(c->pgf->kind);
		if (c->pgf->has_sql && c->rec.sql[0] == '\0')
			memcpy(c->rec.sql, c->pgf->sql, sizeof(c->rec.sql));
		if (c->pgf->notifies > c->notifies0)
			c->rec.note = c->pgf->copy ? "copy and notification "
			    "passed through unframed" :
			    "notification passed through unframed";
		else if (c->pgf->copy)
			c->rec.note = "copy passed through unframed";
		pg_exchange_next(c->pgf);
	}
	trace_add(c->l->ps, &c->rec);
	c->in_exchange = false;
	c->req_done = false;
	c->got_reply = false;
	c->duplen = 0;
	c->dup_overflow = false;
}

static void
dup_free(struct dup *d)
{
	struct proxy_set	*ps;

	if (d == NULL)
		return;
	ps = d->ps;
	ep_close(ps, &d->ep, false);
	if (d->prev)
		d->prev->next = d->next;
	else
		ps->dups = d->next;
	if (d->next)
		d->next->prev = d->prev;
	http_frame_free(&d->resp);
	free(d->pgf);
	free(d->req);
	free(d);
	live_release(ps);
}

/* Replays the exchange's request on a fresh upstream connection. */
static void
dup_start(struct conn *c)
{
	struct proxy_set	*ps = c->l->ps;
	struct dup		*d;
	int			 fd;

	if (c->dup_overflow || c->duplen == 0) {
		log_warnx("%s/%d conn %u exchange %u: duplicate not sent "
		    "(request over %d bytes or empty)", c->l->name, c->l->turn,
		    c->no, c->rec.exchange, PROXY_DUP_CAP);
		return;
	}
	if (c->pg && c->hello == NULL) {
		log_warnx("%s/%d conn %u exchange %u: duplicate not sent "
		    "(the session's start-up was over %d bytes)", c->l->name,
		    c->l->turn, c->no, c->rec.exchange, PROXY_HELLO_CAP);
		return;
	}
	if ((fd = socket(c->l->up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket", __func__);
		return;
	}
	d = xcalloc(1, sizeof(*d));
	ps->live++;
	d->ps = ps;
	d->ep = (struct ep){ EP_DUP, d, fd, 0 };
	d->req = c->dupreq;
	d->len = c->duplen;
	c->dupreq = NULL;
	c->duplen = 0;
	d->http = c->http;
	if (c->pg && c->rec.exchange > 0) {
		/*
		 * A new session: exchange 0's bytes again (start-up and any
		 * password), then the request; done at the ReadyForQuery
		 * after it.  Challenge-response authentication (SCRAM, md5)
		 * cannot be replayed: the server refuses and the duplicate
		 * ends there, with a warning.
		 */
		char	*r = xcalloc(1, c->hello_len + d->len);

		memcpy(r, c->hello, c->hello_len);
		memcpy(r + c->hello_len, d->req, d->len);
		free(d->req);
		d->req = r;
		d->len += c->hello_len;
		d->pgf = xcalloc(1, sizeof(*d->pgf));
		pg_init(d->pgf);
		d->ready_left = 2;
	}
	http_frame_init(&d->resp, true, c->req.is_head);
	d->deadline = now_ms() + PROXY_DUP_MS;
	d->next = ps->dups;
	if (ps->dups)
		ps->dups->prev = d;
	ps->dups = d;
	if (connect(fd, (struct sockaddr *)&c->l->up_addr, c->l->up_len) == 0)
		d->connected = true;
	else if (errno != EINPROGRESS) {
		log_warn("%s: connect duplicate to %s", __func__, c->l->upstream);
		dup_free(d);
		return;
	}
	if (c->l->up_addr.ss_family != AF_UNIX)
		set_nodelay(fd);
	ep_set(ps, &d->ep, EPOLLOUT);
}

static void
dup_event(struct dup *d, uint32_t ev)
{
	struct proxy_set	*ps = d->ps;
	ssize_t			 n;
	int			 soerr = 0;
	socklen_t		 sl = sizeof(soerr);

	if (!d->connected) {
		if (getsockopt(d->ep.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1 ||
		    soerr != 0) {
			log_warnx("duplicate: connect failed: %s", strerror(soerr));
			dup_free(d);
			return;
		}
		d->connected = true;
	}
	while (d->off < d->len) {
		n = send(d->ep.fd, d->req + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			ep_set(ps, &d->ep, EPOLLOUT);
			return;
		}
		if (n <= 0) {
			dup_free(d);
			return;
		}
		d->off += (size_t)n;
	}
	if (!(ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ep_set(ps, &d->ep, EPOLLIN);
		return;
	}
	n = recv(d->ep.fd, ps->scratch, sizeof(ps->scratch), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		dup_free(d);		/* closed: the reply, such as it was, is over */
		return;
	}
	/* tcp: the first reply bytes end the exchange; http: the framed reply */
	if (d->pgf != NULL) {
		size_t	off = 0;

		while (off < (size_t)n && d->ready_left > 0 && !d->pgf->error &&
		    !d->pgf->auth_error) {
			off += pg_scan_server(d->pgf, ps->scratch + off,
			    (size_t)n - off);
			if (d->pgf->ready) {
				d->pgf->ready = false;
				d->ready_left--;
			}
		}
		if (d->pgf->auth_error)
			log_warnx("duplicate: the database refused the replayed "
			    "start-up (SQLSTATE %s); challenge-response "
			    "authentication cannot be replayed", d->pgf->sqlstate);
		if (d->ready_left > 0 && !d->pgf->error && !d->pgf->auth_error)
			return;
	} else if (d->http) {
		http_feed(&d->resp, ps->scratch, (size_t)n);
		if (d->resp.state != HF_DONE && d->resp.state != HF_ERROR)
			return;
	}
	dup_free(d);
}

static void
conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	live_release(c->l->ps);
	http_frame_free(&c->req);
	http_frame_free(&c->resp);
	free(c->pgf);
	free(c->hello);
	free(c->up.data);
	free(c->down.data);
	free(c->dupreq);
	free(c);
}

/*
 * Closes both sides; rst_client makes the client see a reset.  The conn is
 * only unlinked here and freed after the loop pass, because later events of
 * the same epoll batch may still point at it.
 */
static void
conn_close(struct conn *c, bool rst_client)
{
	struct proxy_set	*ps = c->l->ps;

	if (c->state == CS_CLOSED)
		return;
	exchange_end(c);
	if (c->l->sched != NULL) {
		if (c->sched_wait)
			c->l->sched->nwait--;
		c->sched_wait = false;
		c->l->sched->live[c->l->turn]--;
		c->l->sched->gen++;
		c->l->sched->settled = false;
	}
	ep_close(ps, &c->cep, rst_client);
	ep_close(ps, &c->uep, rst_client);
	set_state(c, CS_CLOSED);
	if (c->prev)
		c->prev->next = c->next;
	else
		ps->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = NULL;
	c->next = ps->dead;
	ps->dead = c;
}

static void
conn_dial(struct conn *c)
{
	struct listener	*l = c->l;
	int		 fd;

	if ((fd = socket(l->up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket", __func__);
		conn_close(c, true);
		return;
	}
	c->uep = (struct ep){ EP_UPSTREAM, c, fd, 0 };
	if (l->up_addr.ss_family != AF_UNIX)
		set_nodelay(fd);
	if (connect(fd, (struct sockaddr *)&l->up_addr, l->up_len) == 0) {
		set_state(c, CS_REQUEST);
		return;
	}
	if (errno != EINPROGRESS) {
		log_warn("%s/%d conn %u: connect %s", l->name, l->turn, c->no,
		    l->upstream);
		conn_close(c, true);	/* a dead upstream looks like a reset */
		return;
	}
	c->deadline = now_ms() + PROXY_CONNECT_MS;
	set_state(c, CS_CONNECTING);
}

/* The exchange's latency is over: act on its roll. */
static void
exchange_go(struct conn *c)
{
	c->deadline = 0;
	if (c->roll.fault == PROXY_FAULT_RESET) {
		/* before anything is forwarded, and before any dial */
		conn_close(c, true);
		return;
	}
	if (c->uep.fd < 0)
		conn_dial(c);
	else
		set_state(c, CS_REQUEST);
}

/*
 * The connection's first bytes decide its framing.  For PostgreSQL, the
 * proxy answers SSLRequest and GSSENCRequest itself ('N': traffic stays
 * plain, so the proxy can read it) before the start-up packet, which is
 * exchange 0.  Returns 1 when the next exchange may begin, 0 while more
 * bytes are needed.
 */
static int
conn_hello(struct conn *c)
{
	struct listener	*l = c->l;
	enum pg_first	 first;
	size_t		 space;

	for (;;) {
		if (c->mode_known && (!c->pg || !c->pgf->fe.startup))
			return 1;
		first = pg_first(c->up.data + c->up.off, c->up.len);
		if (!c->mode_known) {
			if (first == PGF_MORE && !c->client_eof &&
			    l->protocol == CFG_PROTO_AUTO)
				return 0;
			c->mode_known = true;
			if (l->protocol == CFG_PROTO_POSTGRES ||
			    (l->protocol == CFG_PROTO_AUTO &&
			    first != PGF_NOT_PG && first != PGF_MORE)) {
				c->pg = true;
				c->pgf = xcalloc(1, sizeof(*c->pgf));
				pg_init(c->pgf);
			} else {
				c->http = l->protocol == CFG_PROTO_HTTP ||
				    (l->protocol == CFG_PROTO_AUTO &&
				    http_looks_like_request(c->up.data + c->up.off,
				    c->up.len));
				return 1;
			}
		}
		if (first == PGF_MORE)
			return c->client_eof ? 1 : 0;
		if (first != PGF_SSL && first != PGF_GSSENC)
			return 1;	/* start-up, cancel, or garbage the framer refuses */
		if (buf_alloc(&c->down) == -1 || (space = buf_space(&c->down)) == 0)
			return 0;
		buf_consume(&c->up, 8);
		c->down.data[c->down.off + c->down.len++] = 'N';
		c->tls_asked = true;
		log_debug("%s/%d conn %u: %s answered with N (plain traffic)",
		    l->name, l->turn, c->no, first == PGF_SSL ? "SSLRequest" :
		    "GSSENCRequest");
	}
}

static void
exchange_begin(struct conn *c)
{
	struct listener	*l = c->l;

	c->in_exchange = true;
	c->req_done = false;
	c->got_reply = false;
	if (!c->pg)
		c->up_scan = 0;	/* pg: bytes already framed stay framed */
	if (c->http) {
		http_frame_init(&c->req, false, false);
		http_frame_init(&c->resp, true, false);
	}
	/* the roll is drawn now, whatever match later says: keyed by number */
	proxy_roll(&l->faults, l->ps->seed, l->name, l->turn, c->no,
	    c->exch_no, &c->roll);
	memset(&c->rec, 0, sizeof(c->rec));
	c->rec.proxy = l->proxy;
	c->rec.name = l->name;
	c->rec.turn = l->turn;
	c->rec.conn = c->no;
	c->rec.exchange = c->exch_no++;
	if (c->pg)
		c->notifies0 = c->pgf->notifies;
	if (c->pg || (c->http && l->has_re) || l->sched != NULL)
		set_state(c, CS_PENDING);
	else
		exchange_admit(c, NULL);
}

/*
 * The exchange is known: whether the schedule holds it for its turn (then
 * it waits in CS_PENDING with every byte still in `up`, and sched_try
 * admits it).  A PostgreSQL start-up and messages that get no reply go at
 * once: they touch no data, and nothing would tell the scheduler they
 * ended.
 */
static bool
sched_holds(struct conn *c, const char *stmt)
{
	struct psched	*q = c->l->sched;

	if (q == NULL)
		return false;
	if (c->sched_wait)
		return true;
	if (c->pg && (c->rec.exchange == 0 || c->pgf->noreply))
		return false;
	c->sched_wait = true;
	q->nwait++;
	c->sched_seq = ++c->l->ps->sched_seq;
	c->sched_since = now_ms();
	c->sched_has_line = !c->pg && stmt != NULL;
	if (c->sched_has_line)
		snprintf(c->sched_line, sizeof(c->sched_line), "%s", stmt);
	return true;
}

/* Closes q's side connection, if any; its socket is libpq's to close. */
static void
side_close(struct proxy_set *ps, struct psched *q)
{
	if (q->side == NULL)
		return;
	q->sep.fd = PQsocket(q->side);
	ep_set(ps, &q->sep, 0);
	q->sep.fd = -1;
	PQfinish(q->side);
	q->side = NULL;
	q->probing = false;
}

/*
 * The side connection broke or never worked: say so once, and let the
 * `blocked` timeout alone decide from now on.
 */
static void
side_drop(struct proxy_set *ps, struct psched *q, const char *why)
{
	char	msg[256];

	snprintf(msg, sizeof(msg), "%s", PQerrorMessage(q->side));
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("proxy %s: cannot ask PostgreSQL about lock waits (%s%s%s); "
	    "a lock wait is now passed by the schedule's blocked timeout",
	    q->name, why, msg[0] ? ": " : "", msg);
	side_close(ps, q);
}

/* Whether c's exchange is one PostgreSQL can be asked about now. */
static bool
probeable(const struct conn *c)
{
	return c->pg && c->pgf->backend_pid > 0 && c->in_exchange &&
	    (c->state == CS_REQUEST || c->state == CS_REPLY);
}

/*
 * Asks, in one statement, whose locks the backends of q's exchanges in
 * flight wait for: the admitted one, those PostgreSQL said wait on a lock,
 * and those it since said do not.  side_event reads the answer.
 */
static void
lock_probe(struct proxy_set *ps, struct psched *q, int64_t now)
{
	struct conn	*c;
	char		 pids[1024];
	const char	*v[1] = { pids };
	size_t		 o = 0;
	int		 n;

	pids[o++] = '{';
	for (c = ps->conns; c != NULL; c = c->next) {
		if (c->l->sched != q || !probeable(c) ||
		    !(c == q->running || c->sched_lock || c->sched_woke))
			continue;
		n = snprintf(pids + o, sizeof(pids) - o, "%s%" PRId32,
		    o > 1 ? "," : "", c->pgf->backend_pid);
		if (n < 0 || (size_t)n >= sizeof(pids) - o - 1)
			break;
		o += (size_t)n;
	}
	if (o == 1)
		return;		/* nothing to ask about yet */
	pids[o++] = '}';
	pids[o] = '\0';
	if (!PQsendQueryParams(q->side, "SELECT p, pg_blocking_pids(p) "
	    "FROM unnest($1::int[]) AS p", 1, NULL, v, NULL, NULL, 0)) {
		side_drop(ps, q, "send");
		return;
	}
	q->probing = true;
	q->probe_gen = q->gen;
	q->probe_at = now + LOCK_PROBE_MS;
	if (PQflush(q->side) == 1)
		ep_set(ps, &q->sep, EPOLLIN | EPOLLOUT);
}

/*
 * The turns (bit t) whose connections through q are the backends of the
 * array text "{pid,pid,...}"; *any whether the array had a pid at all.
 */
static uint64_t
lock_holders(struct proxy_set *ps, struct psched *q, const char *arr,
    bool *any)
{
	struct conn	*c;
	uint64_t	 mask = 0;
	long		 pid;
	char		*end;

	*any = false;
	for (arr += strspn(arr, "{,"); *arr >= '0' && *arr <= '9';
	    arr = end + strspn(end, ",}")) {
		pid = strtol(arr, &end, 10);
		*any = true;
		for (c = ps->conns; c != NULL; c = c->next)
			if (c->l->sched == q && c->pg && c->pgf->backend_pid == pid &&
			    c->l->turn < 64)
				mask |= (uint64_t)1 << c->l->turn;
	}
	return mask;
}

/*
 * One backend's answer: c's exchange waits on a lock (any) held by the
 * turns of mask, or does not.  The admitted exchange that waits is no
 * longer running (the next may be admitted); one that waited and no
 * longer does runs again (woke), and the scheduler waits for it as for
 * the admitted one, until it ends or waits again.
 */
static void
lock_answer(struct psched *q, struct conn *c, bool any, uint64_t mask,
    int64_t now)
{
	char	set[256];

	if (any && (c == q->running || c->sched_woke)) {
		log_debug("seed %" PRIu64 ": %s/%d conn %u exchange %u: waits on "
		    "a lock (held by turns %s)%s", c->l->ps->seed, c->l->name,
		    c->l->turn, c->no, c->rec.exchange,
		    proxy_turn_set(mask, set, sizeof(set)), c == q->running ?
		    ": the next is admitted" : " again");
		if (c == q->running)
			q->running = NULL;
		else {
			c->sched_woke = false;
			q->nwoke--;
		}
		c->sched_lock = true;
		q->nlock++;
		c->rec.lock_wait = true;
		c->rec.waits_on |= mask;
		q->free_since = now;
	} else if (!any && c->sched_lock) {
		log_debug("seed %" PRIu64 ": %s/%d conn %u exchange %u: its lock "
		    "was granted", c->l->ps->seed, c->l->name, c->l->turn, c->no,
		    c->rec.exchange);
		c->sched_lock = false;
		q->nlock--;
		c->sched_woke = true;
		c->sched_since = now;
		q->nwoke++;
	}
}

/*
 * An answer on the side connection, one row per backend asked about.  The
 * answers are PostgreSQL's, not a clock's, so every replay makes the same
 * decisions.  When nothing ended since the probe was sent and no exchange
 * runs, the answer is a settled picture: each exchange in flight waits on
 * a lock, and the next may be admitted.
 */
static void
side_event(struct proxy_set *ps, struct psched *q, uint32_t ev)
{
	PGresult	*r;
	struct conn	*c;
	uint64_t	 mask;
	int64_t		 now = now_ms();
	long		 pid;
	bool		 any;
	int		 i;

	if ((ev & EPOLLOUT) && PQflush(q->side) == 0)
		ep_set(ps, &q->sep, EPOLLIN);
	if (!PQconsumeInput(q->side)) {
		side_drop(ps, q, "read");
		return;
	}
	while (q->probing && !PQisBusy(q->side)) {
		if ((r = PQgetResult(q->side)) == NULL) {
			q->probing = false;
			if (q->probe_gen == q->gen && q->running == NULL &&
			    q->nwoke == 0 && !q->settled) {
				q->settled = true;
				q->free_since = now;
			}
			break;
		}
		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQnfields(r) != 2) {
			PQclear(r);
			side_drop(ps, q, "pg_blocking_pids");
			return;
		}
		for (i = 0; i < PQntuples(r); i++) {
			pid = strtol(PQgetvalue(r, i, 0), NULL, 10);
			mask = lock_holders(ps, q, PQgetvalue(r, i, 1), &any);
			for (c = ps->conns; c != NULL; c = c->next)
				if (c->l->sched == q && c->pg && c->in_exchange &&
				    c->pgf->backend_pid == pid)
					break;
			/* an exchange ended since: the answer may be about
			 * one that is over; the next probe asks again */
			if (c != NULL && q->probe_gen == q->gen)
				lock_answer(q, c, any, mask, now);
		}
		PQclear(r);
	}
	if (q->side != NULL && PQstatus(q->side) != CONNECTION_OK)
		side_drop(ps, q, "connection lost");
}

/* A new round (proxy_set_round): no turn of it has connected yet. */
static void
sched_round(struct proxy_set *ps, struct psched *q)
{
	unsigned	r = atomic_load(&ps->round);

	if (q->round == r)
		return;
	q->round = r;
	memset(q->seen, 0, (size_t)q->nturns * sizeof(*q->seen));
}

/* Comes back to q at `at` at the latest. */
static void
sched_at(struct psched *q, int64_t at)
{
	if (q->next_at == 0 || at < q->next_at)
		q->next_at = at;
}

/*
 * A timeout decided: the admitted exchange, or one whose lock was granted,
 * has not ended within blocked_ms and PostgreSQL did not say it waits (or
 * cannot be asked): it is taken as stuck, and the scheduler goes on.
 */
static void
sched_timeouts(struct proxy_set *ps, struct psched *q, int64_t now)
{
	struct conn	*c;

	if ((c = q->running) != NULL) {
		if (now - q->running_since < q->blocked_ms)
			sched_at(q, q->running_since + q->blocked_ms);
		else {
			log_debug("%s/%d conn %u exchange %u: not done in %lldms: "
			    "taken as waiting on a lock", c->l->name, c->l->turn,
			    c->no, c->rec.exchange, (long long)q->blocked_ms);
			c->rec.forced = "blocked";
			c->sched_stuck = true;
			q->forced++;
			q->running = NULL;
			q->free_since = now;
		}
	}
	if (q->nwoke == 0)
		return;
	for (c = ps->conns; c != NULL; c = c->next) {
		if (c->l->sched != q || !c->sched_woke)
			continue;
		if (now - c->sched_since < q->blocked_ms)
			sched_at(q, c->sched_since + q->blocked_ms);
		else {
			log_debug("%s/%d conn %u exchange %u: its lock granted, "
			    "not done in %lldms: taken as stuck", c->l->name,
			    c->l->turn, c->no, c->rec.exchange,
			    (long long)q->blocked_ms);
			c->rec.forced = "blocked";
			c->sched_woke = false;
			c->sched_stuck = true;
			q->nwoke--;
			q->forced++;
			q->free_since = now;
		}
	}
}

/*
 * Admits the next exchange of q when it is free: among the turns with one
 * waiting, the scheduler's choice.  Free means no exchange runs: the
 * admitted one has ended or PostgreSQL said it waits on a lock, and every
 * exchange that waited on one still does (asked again after anything
 * ended, since an end may have released a lock).  A turn with no exchange
 * waiting is waited for arrival_ms (from when the scheduler became free,
 * or the first waiter came), unless it has closed every connection or its
 * exchange waits on a lock.  An exchange not done within blocked_ms that
 * PostgreSQL did not say waits is taken as stuck.  Both timeouts are named
 * in the trace ("forced"): where a replay may diverge.
 */
static void
sched_try(struct proxy_set *ps, struct psched *q)
{
	struct conn	*c;
	const char	*forced = NULL;
	int64_t		 now = now_ms(), earliest = INT64_MAX, from;
	uint64_t	 cand = 0;
	int		 t, nready = 0;
	bool		 all = true, ask;

	q->next_at = 0;
	sched_round(ps, q);
	sched_timeouts(ps, q, now);
	/* what PostgreSQL must be asked before anything is admitted */
	ask = q->side != NULL && (q->nwoke > 0 || (q->running != NULL &&
	    q->running->pg) || (q->nlock > 0 && !q->settled));
	if (ask && !q->probing) {
		if (now >= q->probe_at)
			lock_probe(ps, q, now);
		if (!q->probing && q->side != NULL)
			/* nothing to ask yet (a request not on its way) */
			q->probe_at = now + LOCK_PROBE_MS;
		sched_at(q, q->probe_at);
	}
	if (q->nwait == 0 || q->running != NULL || q->nwoke > 0 ||
	    (q->side != NULL && q->nlock > 0 && !q->settled))
		return;
	memset(q->oldest, 0, (size_t)q->nturns * sizeof(*q->oldest));
	memset(q->stuck, 0, (size_t)q->nturns * sizeof(*q->stuck));
	for (c = ps->conns; c != NULL; c = c->next) {
		if (c->l->sched != q)
			continue;
		if (c->in_exchange && (c->sched_lock || c->sched_stuck))
			q->stuck[c->l->turn] = true;
		if (c->sched_wait && (q->oldest[c->l->turn] == NULL ||
		    c->sched_seq < q->oldest[c->l->turn]->sched_seq))
			q->oldest[c->l->turn] = c;
	}
	for (t = 0; t < q->nturns; t++) {
		q->ready[t] = q->oldest[t] != NULL;
		if (q->ready[t]) {
			nready++;
			if (t < 64)
				cand |= (uint64_t)1 << t;
			if (q->oldest[t]->sched_since < earliest)
				earliest = q->oldest[t]->sched_since;
		} else if (!q->stuck[t] && (!q->seen[t] || q->live[t] > 0))
			all = false;
	}
	if (nready == 0)
		return;
	if (!all) {
		from = q->free_since > earliest ? q->free_since : earliest;
		if (now - from < q->arrival_ms) {
			sched_at(q, from + q->arrival_ms);
			return;
		}
		forced = "arrival";
		q->forced++;
	}
	t = sched_pick(q->s, q->ready);
	c = q->oldest[t];
	c->sched_wait = false;
	q->nwait--;
	c->rec.step = sched_steps(q->s);
	c->rec.cand = cand;
	c->rec.forced = forced;
	q->running = c;
	q->running_since = now;
	q->settled = false;
	sched_at(q, now + q->blocked_ms);	/* come back if it never ends */
	if (q->side != NULL && c->pg)		/* or ask PostgreSQL before */
		sched_at(q, q->probe_at = now + LOCK_PROBE_MS);
	log_debug("%s/%d conn %u exchange %u: step %u of the schedule (waiting: "
	    "%" PRIx64 "%s%s)", c->l->name, c->l->turn, c->no, c->rec.exchange,
	    c->rec.step, cand, forced ? ", forced by " : "", forced ? forced : "");
	exchange_admit(c, c->pg ? (c->pgf->has_sql ? c->pgf->sql : NULL) :
	    c->sched_has_line ? c->sched_line : NULL);
	conn_process(c);
	conn_arm(c);
}

/*
 * Whether the pending exchange is known well enough to admit: for
 * PostgreSQL, its kind and statement head; for HTTP under match, its
 * request line.  stmt is what match reads (NULL: nothing to match).
 */
static bool
exchange_known(struct conn *c, char *line, size_t linelen,
    const char **stmt)
{
	const char	*p = c->up.data + c->up.off, *nl;
	size_t		 n;

	*stmt = NULL;
	if (!c->pg && !c->http)
		return true;	/* tcp (a scheduled proxy): its first bytes */
	if (c->pg) {
		if (!c->pgf->ident && !c->client_eof)
			return false;
		if (c->pgf->has_sql)
			*stmt = c->pgf->sql;
		return true;
	}
	/* http: nothing is forwarded yet, so the line starts the buffer */
	if ((nl = memchr(p, '\n', c->up.len)) == NULL)
		return c->client_eof || c->up.len == PROXY_BUF_CAP;
	n = (size_t)(nl - p);
	if (n > 0 && p[n - 1] == '\r')
		n--;
	if (n >= linelen)
		n = linelen - 1;
	memcpy(line, p, n);
	line[n] = '\0';
	*stmt = line;
	return true;
}

/*
 * The exchange is known and nothing of it has been forwarded: apply match
 * to its roll and start it.  This is the hook where a scheduler (issue 15,
 * part 3) would hold an exchange: park it here in CS_PENDING and call
 * exchange_admit when its turn comes; every byte of it is still in `up`.
 */
static void
exchange_admit(struct conn *c, const char *stmt)
{
	struct listener	*l = c->l;

	if (l->has_re && (stmt == NULL ||
	    regexec(&l->re, stmt, 0, NULL, 0) != 0)) {
		c->roll.fault = PROXY_FAULT_NONE;
		c->roll.latency_ms = 0;
	}
	if (c->pg) {
		c->rec.pg = pg_kind_name(c->pgf->kind);
		if (c->pgf->has_sql)
			memcpy(c->rec.sql, c->pgf->sql, sizeof(c->rec.sql));
	}
	c->rec.fault = c->roll.fault;
	c->rec.latency_ms = c->roll.latency_ms;
	log_debug("%s/%d conn %u exchange %u: %s, latency %lldms%s%s", l->name,
	    l->turn, c->no, c->rec.exchange, proxy_fault_name(c->roll.fault),
	    (long long)c->roll.latency_ms, c->rec.sql[0] ? ": " : "",
	    c->rec.sql);
	if (c->roll.latency_ms > 0) {
		c->deadline = now_ms() + c->roll.latency_ms;
		set_state(c, CS_DELAY);
	} else
		exchange_go(c);
}

/* A framing error: what the peer sent is refused, never trusted. */
static void
pg_refuse(struct conn *c)
{
	log_warnx("%s/%d conn %u: %s; closing the connection", c->l->name,
	    c->l->turn, c->no, c->pgf->why);
	if (c->in_exchange)
		c->rec.note = "refused: not PostgreSQL v3";
	conn_close(c, true);
}

/* Frames newly arrived client bytes into the current exchange. */
static void
scan_request(struct conn *c)
{
	size_t	n;

	if (!c->in_exchange)
		return;
	if (c->pg) {
		n = pg_scan_client(c->pgf, c->up.data + c->up.off + c->up_scan,
		    c->up.len - c->up_scan);
		c->up_scan += n;
		if (c->pgf->error) {
			pg_refuse(c);
			return;
		}
		if (c->pgf->req_done)
			c->req_done = true;
		return;
	}
	if (!c->http) {
		c->up_scan = c->up.len;
		return;
	}
	if (c->req.state == HF_DONE)
		return;
	n = http_feed(&c->req, c->up.data + c->up.off + c->up_scan,
	    c->up.len - c->up_scan);
	c->up_scan += n;
	if (c->req.state == HF_ERROR) {
		log_debug("%s/%d conn %u: not HTTP after all, framing as tcp",
		    c->l->name, c->l->turn, c->no);
		c->http = false;
		c->up_scan = c->up.len;
	} else if (c->req.state == HF_DONE) {
		c->req_done = true;
		c->resp.head_req = c->req.is_head;
	}
}

/* pg: exchange 0's bytes, kept while duplicates may need a new session. */
static void
hello_copy(struct conn *c, const char *p, size_t n)
{
	const struct cfg_faults	*f = &c->l->faults;

	if (!c->pg || c->rec.exchange != 0 || c->pgf->kind != PGK_STARTUP ||
	    f->rate <= 0 || f->duplicate <= 0)
		return;
	if (c->hello_len + n > PROXY_HELLO_CAP) {
		free(c->hello);
		c->hello = NULL;
		c->hello_len = PROXY_HELLO_CAP + 1;	/* never again */
		return;
	}
	if (c->hello == NULL && c->hello_len == 0)
		c->hello = xcalloc(1, PROXY_HELLO_CAP);
	if (c->hello == NULL)
		return;
	memcpy(c->hello + c->hello_len, p, n);
	c->hello_len += n;
}

static void
dup_copy(struct conn *c, const char *p, size_t n)
{
	if (c->roll.fault != PROXY_FAULT_DUPLICATE || c->dup_overflow)
		return;
	if (c->duplen + n > PROXY_DUP_CAP) {
		c->dup_overflow = true;
		return;
	}
	if (c->dupreq == NULL && (c->dupreq = malloc(PROXY_DUP_CAP)) == NULL) {
		c->dup_overflow = true;
		return;
	}
	memcpy(c->dupreq + c->duplen, p, n);
	c->duplen += n;
}

/*
 * Writes direction d as far as the socket, the throttles and close_after
 * allow.  Returns -1 if the conn was closed.
 */
static int
conn_write(struct conn *c, int d)
{
	const struct cfg_faults	*f = &c->l->faults;
	struct buf		*b = d == DIR_UP ? &c->up : &c->down;
	struct ep		*e = d == DIR_UP ? &c->uep : &c->cep;
	size_t			 avail, n;
	ssize_t			 w;
	int64_t			 now, wait;

	for (;;) {
		avail = d == DIR_UP ? c->up_scan : c->down.len;
		if (avail == 0 || c->wblocked[d] || e->fd < 0)
			return 0;
		if (d == DIR_UP && c->state != CS_REQUEST &&
		    c->state != CS_REPLY)
			return 0;
		if (d == DIR_DOWN && (c->state == CS_HOLD ||
		    c->state == CS_BLACKHOLE))
			return 0;
		now = 0;
		if (c->next_write[d] != 0) {
			now = now_ms();
			if (now < c->next_write[d])
				return 0;
			c->next_write[d] = 0;
		}
		n = avail;
		if (f->slice[d] > 0 && n > (size_t)f->slice[d])
			n = (size_t)f->slice[d];
		if (f->bandwidth[d] > 0) {
			/* 10 ms worth of bytes per write */
			int64_t q = f->bandwidth[d] / 100 > 0 ?
			    f->bandwidth[d] / 100 : 1;
			if (n > (size_t)q)
				n = (size_t)q;
		}
		if (f->close_after[d] > 0 &&
		    n > (uint64_t)f->close_after[d] - c->sent[d])
			n = (size_t)((uint64_t)f->close_after[d] - c->sent[d]);
		w = send(e->fd, b->data + b->off, n, MSG_NOSIGNAL);
		if (w == -1 && (errno == EAGAIN || errno == EINTR)) {
			c->wblocked[d] = true;
			return 0;
		}
		if (w <= 0) {
			/* the peer is gone: the other side sees a reset too */
			conn_close(c, true);
			return -1;
		}
		if (d == DIR_UP) {
			dup_copy(c, b->data + b->off, (size_t)w);
			hello_copy(c, b->data + b->off, (size_t)w);
			c->up_scan -= (size_t)w;
			c->rec.bytes_up += (uint64_t)w;
			c->rec.upstream_saw = true;
		}
		buf_consume(b, (size_t)w);
		c->sent[d] += (uint64_t)w;
		if (f->close_after[d] > 0 &&
		    c->sent[d] >= (uint64_t)f->close_after[d]) {
			if (c->in_exchange && c->rec.fault == PROXY_FAULT_NONE)
				c->rec.fault = PROXY_FAULT_CLOSE_AFTER;
			conn_close(c, false);
			return -1;
		}
		wait = 0;
		if (f->slice[d] > 0)
			wait = f->slice_delay_ms;
		if (f->bandwidth[d] > 0) {
			int64_t bw = (int64_t)w * 1000 / f->bandwidth[d];
			if (bw > wait)
				wait = bw;
		}
		if (wait > 0) {
			c->next_write[d] = (now ? now : now_ms()) + wait;
			return 0;
		}
	}
}

static void
conn_read_client(struct conn *c)
{
	struct proxy_set	*ps = c->l->ps;
	ssize_t			 n;
	size_t			 space;

	if (c->state == CS_BLACKHOLE || c->state == CS_HOLD) {
		n = recv(c->cep.fd, ps->scratch, sizeof(ps->scratch), 0);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			if (c->state == CS_BLACKHOLE)
				conn_close(c, false);
			else
				c->client_eof = true;	/* the hold still ends in a reset */
		}
		return;
	}
	if (buf_alloc(&c->up) == -1) {
		conn_close(c, true);
		return;
	}
	if ((space = buf_space(&c->up)) == 0)
		return;
	n = recv(c->cep.fd, c->up.data + c->up.off + c->up.len, space, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		conn_close(c, true);
		return;
	}
	if (n == 0) {
		c->client_eof = true;
		return;
	}
	c->up.len += (size_t)n;
}

/*
 * The database refused a plain connection because it wants TLS, which the
 * proxy cannot pass while it answers SSLRequest with N.  When the refusal
 * is still whole in `down` (n bytes at its end, nothing of it sent), the
 * client gets the proxy's own ErrorResponse saying so instead.
 */
static void
pg_tls_refused(struct conn *c, size_t n)
{
	struct listener	*l = c->l;
	char		 msg[400], out[512];
	size_t		 len;

	if (!l->tls_warned) {
		log_warnx("%s/%d: the database at %s requires TLS (pg_hba.conf "
		    "hostssl, SQLSTATE %s): the proxy answers SSLRequest with N "
		    "so it can read the traffic, and cannot proxy it; let the "
		    "proxy connect without TLS (a host line for it)", l->name,
		    l->turn, l->upstream, c->pgf->sqlstate);
		l->tls_warned = true;
	}
	c->rec.note = "refused: the database requires TLS";
	snprintf(msg, sizeof(msg), "soak fault-proxy %s: the database requires "
	    "TLS (pg_hba.conf hostssl), but this proxy keeps PostgreSQL "
	    "traffic plain (it answers SSLRequest with N), so it cannot proxy "
	    "this database; allow plain connections from the proxy", l->name);
	if (c->down.len != n ||
	    (len = pg_error_response("28000", msg, out, sizeof(out))) == 0 ||
	    len > PROXY_BUF_CAP)
		return;		/* the server's own refusal goes through */
	c->down.off = 0;
	memcpy(c->down.data, out, len);
	c->down.len = len;
}

/*
 * pg: every server byte goes through the framer, in or out of an exchange
 * (notifications, parameter changes and notices come unasked).  The
 * exchange ends right after its ReadyForQuery.
 */
static void
pg_reply(struct conn *c, const char *p, size_t n)
{
	struct pgframe	*f = c->pgf;
	size_t		 off = 0, k;
	bool		 counted, tls_before = f->tls_required;

	while (off < n) {
		k = pg_scan_server(f, p + off, n - off);
		off += k;
		counted = c->in_exchange && c->rec.upstream_saw &&
		    (c->state == CS_REQUEST || c->state == CS_REPLY);
		if (f->error) {
			pg_refuse(c);
			return;
		}
		if (counted) {
			c->rec.bytes_down += k;
			if (!c->got_reply) {
				c->got_reply = true;
				if (c->roll.fault == PROXY_FAULT_DUPLICATE)
					dup_start(c);
			}
			set_state(c, CS_REPLY);
		}
		if (f->tls_required && !tls_before) {
			/* down may now hold the proxy's words, not p's bytes */
			pg_tls_refused(c, n);
			return;
		}
		if (f->ready) {
			f->ready = false;
			if (counted) {
				c->rec.tx = f->tx;
				exchange_end(c);
				set_state(c, CS_IDLE);
			}
		}
	}
}

/* Moves newly read upstream bytes into the exchange; drops them if lost. */
static void
conn_read_upstream(struct conn *c)
{
	struct proxy_set	*ps = c->l->ps;
	ssize_t			 n;
	size_t			 space, used;
	char			*p;

	if (c->state == CS_HOLD || (c->in_exchange && c->rec.upstream_saw &&
	    c->roll.fault == PROXY_FAULT_LOST_REPLY)) {
		n = recv(c->uep.fd, ps->scratch, sizeof(ps->scratch), 0);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			c->up_eof = true;
		if (c->state != CS_HOLD) {
			/* the upstream has acted; the client will never know */
			c->deadline = now_ms() + c->l->faults.hold_ms;
			set_state(c, CS_HOLD);
		}
		if (c->up_eof)
			ep_close(ps, &c->uep, false);
		return;
	}
	if (buf_alloc(&c->down) == -1) {
		conn_close(c, true);
		return;
	}
	if ((space = buf_space(&c->down)) == 0)
		return;
	p = c->down.data + c->down.off + c->down.len;
	n = recv(c->uep.fd, p, space, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		conn_close(c, true);	/* upstream reset: pass it on */
		return;
	}
	if (n == 0) {
		c->up_eof = true;
		if (c->in_exchange && c->http && c->resp.state == HF_BODY_EOF) {
			http_eof(&c->resp);
			exchange_end(c);
		}
		return;
	}
	c->down.len += (size_t)n;
	if (c->pg) {
		pg_reply(c, p, (size_t)n);
		return;
	}
	/* bytes before the request went out are unsolicited: relayed, not counted */
	if (!c->in_exchange || !c->rec.upstream_saw ||
	    (c->state != CS_REQUEST && c->state != CS_REPLY))
		return;
	if (!c->http) {
		c->rec.bytes_down += (uint64_t)n;
		if (!c->got_reply) {
			c->got_reply = true;
			c->req_done = true;
			if (c->roll.fault == PROXY_FAULT_DUPLICATE)
				dup_start(c);
		}
		set_state(c, CS_REPLY);
		return;
	}
	used = http_feed(&c->resp, p, (size_t)n);
	c->rec.bytes_down += used;
	c->got_reply = true;
	if (c->state == CS_REQUEST && c->up_scan == 0 && c->req_done)
		set_state(c, CS_REPLY);
	if (c->resp.state == HF_ERROR) {
		c->http = false;	/* garbage reply: frame the rest as tcp */
		c->rec.bytes_down += (uint64_t)n - used;
		c->req_done = true;
		set_state(c, CS_REPLY);
	} else if (c->resp.state == HF_DONE) {
		if (c->resp.upgrade)
			c->http = false;	/* 101: the rest is a byte stream */
		if (c->roll.fault == PROXY_FAULT_DUPLICATE)
			dup_start(c);
		exchange_end(c);
		set_state(c, CS_IDLE);
	}
}

/*
 * The state machine's driver: run after every event and timer until
 * nothing changes.  Decides exchange boundaries, forwards, and closes.
 */
static void
conn_process(struct conn *c)
{
	int64_t	now;
	int	guard;

	for (guard = 0; guard < 16 && c->state != CS_CLOSED; guard++) {
		enum conn_state	before = c->state;
		size_t		up_before = c->up.len, down_before = c->down.len;
		uint32_t	exch_before = c->exch_no;

		if (c->deadline != 0 && (now = now_ms()) >= c->deadline) {
			c->deadline = 0;
			switch (c->state) {
			case CS_DELAY:
				exchange_go(c);
				break;
			case CS_CONNECTING:
				log_warnx("%s/%d conn %u: connect %s timed out",
				    c->l->name, c->l->turn, c->no, c->l->upstream);
				conn_close(c, true);
				break;
			case CS_HOLD:
				conn_close(c, true);
				break;
			default:
				break;
			}
			continue;
		}
		/* a new exchange starts with the first client bytes after the last */
		if (c->up.len > 0 && (c->state == CS_IDLE ||
		    (c->state == CS_REPLY && !c->http && !c->pg &&
		    c->up_scan == 0 && c->got_reply))) {
			if (conn_hello(c) == 0 || c->up.len == 0)
				goto io;
			exchange_end(c);
			exchange_begin(c);
			continue;
		}
		scan_request(c);
		if (c->state == CS_CLOSED)
			return;
		if (c->state == CS_PENDING) {
			char		 line[REQLINE_LEN];
			const char	*stmt;

			if (!c->sched_wait &&
			    exchange_known(c, line, sizeof(line), &stmt)) {
				if (sched_holds(c, stmt))
					goto io;	/* sched_try admits it */
				exchange_admit(c, stmt);
				continue;
			}
		}
		/* pg: nothing answers a cancel, a Terminate or stray COPY data */
		if (c->pg && c->in_exchange && c->pgf->noreply && c->req_done &&
		    c->up_scan == 0 && c->state == CS_REQUEST &&
		    c->rec.upstream_saw) {
			exchange_end(c);
			set_state(c, CS_IDLE);
		}
io:
		if ((c->state == CS_REQUEST || c->state == CS_REPLY) &&
		    conn_write(c, DIR_UP) == -1)
			return;
		if (c->state == CS_REQUEST && c->http && c->req_done &&
		    c->up_scan == 0)
			set_state(c, CS_REPLY);
		if (conn_write(c, DIR_DOWN) == -1)
			return;

		/* half-close: pass the client's FIN on once its bytes are out */
		if (c->client_eof && c->up_scan == 0 && c->uep.fd >= 0 &&
		    !c->up_shut && (c->state == CS_REQUEST ||
		    c->state == CS_REPLY)) {
			(void)shutdown(c->uep.fd, SHUT_WR);
			c->up_shut = true;
		}
		if (c->state == CS_BLACKHOLE && c->client_eof) {
			conn_close(c, false);
			return;
		}
		if (c->client_eof && c->up.len == 0 && !c->in_exchange &&
		    c->state == CS_IDLE && c->down.len == 0) {
			if (c->pg && c->tls_asked && c->pgf->fe.startup)
				log_warnx("%s/%d conn %u: the client asked for TLS "
				    "and hung up on the proxy's N: it requires TLS "
				    "(sslmode=require?), and the proxy keeps "
				    "PostgreSQL traffic plain", c->l->name,
				    c->l->turn, c->no);
			conn_close(c, false);
			return;
		}
		if (c->up_eof && c->down.len == 0 && c->state != CS_HOLD) {
			conn_close(c, false);
			return;
		}
		if (c->client_eof && c->up_eof && c->state == CS_HOLD) {
			/* nothing left to hold for but the timer */
		}
		if (c->state == before && c->up.len == up_before &&
		    c->down.len == down_before && c->exch_no == exch_before)
			break;
	}
}

/* Registers exactly the events the conn's state wants. */
static void
conn_arm(struct conn *c)
{
	struct proxy_set	*ps = c->l->ps;
	uint32_t		 cw = 0, uw = 0;

	if (c->state == CS_CLOSED)
		return;
	if (!c->client_eof) {
		if (c->state == CS_BLACKHOLE || c->state == CS_HOLD)
			cw |= EPOLLIN;
		else if (c->up.data == NULL || c->up.len < PROXY_BUF_CAP)
			cw |= EPOLLIN;
	}
	if (c->wblocked[DIR_DOWN] && c->down.len > 0 && c->state != CS_HOLD)
		cw |= EPOLLOUT;
	if (c->uep.fd >= 0) {
		if (c->state == CS_CONNECTING)
			uw |= EPOLLOUT;
		else {
			if (!c->up_eof && (c->state == CS_HOLD ||
			    c->down.data == NULL || c->down.len < PROXY_BUF_CAP))
				uw |= EPOLLIN;
			if (c->wblocked[DIR_UP] && c->up_scan > 0)
				uw |= EPOLLOUT;
		}
	}
	ep_set(ps, &c->cep, cw);
	ep_set(ps, &c->uep, uw);
}

static void
conn_event(struct conn *c, struct ep *e, uint32_t ev)
{
	int		soerr = 0;
	socklen_t	sl = sizeof(soerr);

	if (c->state == CS_CLOSED)
		return;
	if (e == &c->cep) {
		if (ev & EPOLLOUT)
			c->wblocked[DIR_DOWN] = false;
		if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
			conn_read_client(c);
	} else {
		if (c->state == CS_CONNECTING) {
			if (getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1 ||
			    soerr != 0) {
				log_warnx("%s/%d conn %u: connect %s: %s", c->l->name,
				    c->l->turn, c->no, c->l->upstream, strerror(soerr));
				conn_close(c, true);
				return;
			}
			c->deadline = 0;
			set_state(c, CS_REQUEST);
		} else {
			if (ev & EPOLLOUT)
				c->wblocked[DIR_UP] = false;
			if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
				conn_read_upstream(c);
		}
	}
	if (c->state == CS_CLOSED)
		return;
	conn_process(c);
	conn_arm(c);
}

static void
listener_accept(struct listener *l)
{
	struct proxy_set	*ps = l->ps;
	struct conn		*c;
	int			 fd;

	for (;;) {
		fd = accept4(l->ep.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* back off rather than spin or die */
				log_warn("%s/%d: accept, pausing %dms", l->name,
				    l->turn, PROXY_ACCEPT_BACKOFF_MS);
				l->backoff_until = now_ms() + PROXY_ACCEPT_BACKOFF_MS;
				ep_set(ps, &l->ep, 0);
			}
			return;
		}
		set_nodelay(fd);
		c = xcalloc(1, sizeof(*c));
		ps->live++;
		c->l = l;
		c->no = l->next_conn++;
		if (l->sched != NULL) {
			sched_round(ps, l->sched);
			l->sched->live[l->turn]++;
			l->sched->seen[l->turn] = true;
		}
		c->cep = (struct ep){ EP_CLIENT, c, fd, 0 };
		c->uep = (struct ep){ EP_UPSTREAM, c, -1, 0 };
		c->state = CS_IDLE;
		c->next = ps->conns;
		if (ps->conns)
			ps->conns->prev = c;
		ps->conns = c;
		if (proxy_roll_blackhole(&l->faults, ps->seed, l->name, l->turn,
		    c->no)) {
			memset(&c->rec, 0, sizeof(c->rec));
			c->rec.proxy = l->proxy;
			c->rec.name = l->name;
			c->rec.turn = l->turn;
			c->rec.conn = c->no;
			c->rec.fault = PROXY_FAULT_BLACKHOLE;
			c->in_exchange = true;	/* one record, written at close */
			set_state(c, CS_BLACKHOLE);
		}
		conn_arm(c);
	}
}

/* ---- the loop ---- */

static int
loop_timeout(struct proxy_set *ps)
{
	struct conn	*c;
	struct dup	*d;
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
	for (i = 0; i < ps->nls; i++)
		CONSIDER(ps->ls[i].backoff_until);
	for (i = 0; i < ps->nscheds; i++)
		CONSIDER(ps->scheds[i]->next_at);
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
	size_t		 i;
	int64_t		 now = now_ms();

	for (c = ps->conns; c != NULL; c = cn) {
		cn = c->next;
		if ((c->deadline && c->deadline <= now) ||
		    (c->next_write[0] && c->next_write[0] <= now) ||
		    (c->next_write[1] && c->next_write[1] <= now)) {
			conn_process(c);
			conn_arm(c);
		}
	}
	for (d = ps->dups; d != NULL; d = dn) {
		dn = d->next;
		if (d->deadline <= now) {
			log_warnx("duplicate: no reply within %dms", PROXY_DUP_MS);
			dup_free(d);
		}
	}
	for (i = 0; i < ps->nls; i++)
		if (ps->ls[i].backoff_until && ps->ls[i].backoff_until <= now) {
			ps->ls[i].backoff_until = 0;
			ep_set(ps, &ps->ls[i].ep, EPOLLIN);
		}
}

static void *
loop_main(void *arg)
{
	struct proxy_set	*ps = arg;
	struct epoll_event	 evs[MAX_EVENTS];
	struct ep		*e;
	struct conn		*c;
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
			case EP_LISTENER:
				listener_accept(e->owner);
				break;
			case EP_CLIENT:
			case EP_UPSTREAM:
				conn_event(e->owner, e, evs[i].events);
				break;
			case EP_DUP:
				dup_event(e->owner, evs[i].events);
				break;
			case EP_SIDE: {
				struct psched	*q = e->owner;

				if (q->side != NULL)
					side_event(ps, q, evs[i].events);
				break;
			}
			}
		}
		loop_timers(ps);
		for (i = 0; i < (int)ps->nscheds; i++)
			sched_try(ps, ps->scheds[i]);
		while ((c = ps->dead) != NULL) {
			ps->dead = c->next;
			conn_free(c);
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
	l->protocol = pl->protocol;
	l->faults = *pl->faults;
	l->faults.match = NULL;		/* the caller's; re is ours */
	l->upstream = xstrdup(pl->upstream);
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
	if (parse_addr(pl->upstream, &l->up_addr, &l->up_len, err) == -1)
		return -1;
	if (parse_addr(pl->listen, &ss, &sl, err) == -1)
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

/*
 * The side connection of q, from the conninfo of its listeners (NULL:
 * none).  Blocking, once per set, before the loop starts.  A failure is
 * not fatal: lock waits are then passed by the blocked timeout.
 */
static void
side_open(struct proxy_set *ps, struct psched *q, const char *conninfo)
{
	if (conninfo == NULL)
		return;
	q->side = PQconnectdb(conninfo);
	if (PQstatus(q->side) != CONNECTION_OK) {
		side_drop(ps, q, "connect");
		return;
	}
	if (PQsetnonblocking(q->side, 1) == -1) {
		side_drop(ps, q, "nonblocking");
		return;
	}
	q->sep = (struct ep){ EP_SIDE, q, PQsocket(q->side), 0 };
	ep_set(ps, &q->sep, EPOLLIN);
}

/* One psched per scheduled proxy index, its turns those of its listeners. */
static int
sched_setup(struct proxy_set *ps, const struct proxy_listen *pl, char *err)
{
	struct psched	*q;
	size_t		 i, j;

	for (i = 0; i < ps->nls; i++) {
		struct listener			*l = &ps->ls[i];
		const struct cfg_schedule	*sc = l->schedule;

		if (sc == NULL)
			continue;
		for (j = 0; j < ps->nscheds; j++)
			if (ps->scheds[j]->proxy == l->proxy)
				break;
		if (j == ps->nscheds) {
			ps->scheds = xreallocarray(ps->scheds, ps->nscheds + 1,
			    sizeof(*ps->scheds));
			q = ps->scheds[ps->nscheds++] = xcalloc(1, sizeof(*q));
			q->proxy = l->proxy;
			q->name = l->name;
			q->sep.fd = -1;
			q->arrival_ms = sc->arrival_ms;
			q->blocked_ms = sc->blocked_ms;
		}
		q = ps->scheds[j];
		if (l->turn + 1 > q->nturns)
			q->nturns = l->turn + 1;
		l->sched = q;
	}
	for (j = 0; j < ps->nscheds; j++) {
		const struct cfg_schedule	*sc = NULL;

		q = ps->scheds[j];
		for (i = 0; i < ps->nls && sc == NULL; i++)
			if (ps->ls[i].sched == q)
				sc = ps->ls[i].schedule;
		q->s = sched_new(sc->mode == CFG_SCHED_RANDOM ? SCHED_RANDOM :
		    SCHED_PCT, ps->seed, ps->ls[i - 1].name, q->nturns, sc->depth,
		    (uint32_t)sc->steps);
		if (q->s == NULL)
			return errf(err, "proxy %s: a schedule of %d turns, depth %d "
			    "and %d steps cannot be made", ps->ls[i - 1].name,
			    q->nturns, sc->depth, sc->steps);
		q->live = xcalloc((size_t)q->nturns, sizeof(*q->live));
		q->seen = xcalloc((size_t)q->nturns, sizeof(*q->seen));
		q->ready = xcalloc((size_t)q->nturns, sizeof(*q->ready));
		q->oldest = xcalloc((size_t)q->nturns, sizeof(*q->oldest));
		q->stuck = xcalloc((size_t)q->nturns, sizeof(*q->stuck));
		side_open(ps, q, pl[i - 1].lockinfo);
	}
	for (i = 0; i < ps->nls; i++)
		ps->ls[i].schedule = NULL;	/* the config is the caller's */
	return 0;
}

struct proxy_set *
proxy_set_open(const struct proxy_listen *pl, size_t n, uint64_t seed,
    const char *trace_path, char *err)
{
	struct proxy_set	*ps;
	size_t			 i;

	ps = xcalloc(1, sizeof(*ps));
	ps->epfd = -1;
	ps->wake = (struct ep){ EP_WAKE, ps, -1, 0 };
	pthread_mutex_init(&ps->mu, NULL);
	cond_init_monotonic(&ps->idle);
	ps->seed = seed;
	ps->ls = xcalloc(n ? n : 1, sizeof(*ps->ls));
	for (i = 0; i < n; i++)
		ps->ls[i].ep.fd = -1;
	if ((ps->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		errf(err, "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	if ((ps->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		errf(err, "eventfd: %s", strerror(errno));
		goto fail;
	}
	ep_set(ps, &ps->wake, EPOLLIN);
	for (i = 0; i < n; i++) {
		ps->ls[i].ps = ps;
		ps->nls = i + 1;
		if (listener_open(&ps->ls[i], &pl[i], err) == -1)
			goto fail;
		ep_set(ps, &ps->ls[i].ep, EPOLLIN);
	}
	if (sched_setup(ps, pl, err) == -1)
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
    const char *dbinfo, int turns, uint64_t seed, const char *trace_path,
    char *err)
{
	struct proxy_listen	*pl = NULL;
	struct proxy_set	*ps = NULL;
	size_t			 i, n;
	int			 t;

	if (turns < 0 || (cfg->nproxies > 0 && turns == 0)) {
		errf(err, "proxy_set_open_cfg: bad turn count %d", turns);
		return NULL;
	}
	n = cfg->nproxies * (size_t)turns;
	pl = xcalloc(n ? n : 1, sizeof(*pl));
	for (i = 0; i < cfg->nproxies; i++)
		for (t = 0; t < turns; t++) {
			struct proxy_listen *p = &pl[i * (size_t)turns + (size_t)t];

			p->name = cfg->proxies[i].name;
			p->proxy = i;
			p->turn = t;
			p->listen = "127.0.0.1:0";
			p->upstream = upstreams[i];
			p->protocol = cfg->proxies[i].protocol;
			p->faults = &cfg->proxies[i].faults;
			p->schedule = &cfg->proxies[i].schedule;
			if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
				p->lockinfo = dbinfo;
		}
	if ((ps = proxy_set_open(pl, n, seed, trace_path, err)) != NULL) {
		ps->nproxies = cfg->nproxies;
		ps->turns = turns;
	}
	free(pl);
	return ps;
}

void
proxy_set_round(struct proxy_set *ps)
{
	if (ps != NULL)
		atomic_fetch_add(&ps->round, 1);
}

const char *
proxy_set_addr(const struct proxy_set *ps, size_t proxy, int turn)
{
	if (ps == NULL || proxy >= ps->nproxies || turn < 0 || turn >= ps->turns)
		return NULL;
	return ps->ls[proxy * (size_t)ps->turns + (size_t)turn].addr;
}

static void
trace_write(struct proxy_set *ps)
{
	char	line[512];
	size_t	i;
	int	n;

	if (ps->trace == NULL)
		return;
	if (ps->nrecs > 0)	/* recs is NULL when nothing was recorded */
		qsort(ps->recs, ps->nrecs, sizeof(*ps->recs), rec_cmp);
	for (i = 0; i < ps->nrecs; i++)
		if ((n = proxy_trace_format(&ps->recs[i], line, sizeof(line))) > 0)
			fwrite(line, 1, (size_t)n, ps->trace);
	if (ps->dropped)
		log_warnx("fault trace %s: %zu records over the cap of %d dropped",
		    ps->trace_path, ps->dropped, PROXY_TRACE_CAP);
	if (fclose(ps->trace) != 0)
		log_warn("fault trace %s", ps->trace_path);
	ps->trace = NULL;
}

void
proxy_set_close(struct proxy_set *ps)
{
	struct conn	*c;
	uint64_t	 one = 1;
	size_t		 i;

	if (ps == NULL)
		return;
	if (ps->running) {
		if (write(ps->wake.fd, &one, sizeof(one)) != sizeof(one))
			log_warn("%s: wake", __func__);
		pthread_join(ps->thr, NULL);
		ps->running = false;
	}
	/* open exchanges are part of the story: conn_close records them */
	while (ps->conns != NULL)
		conn_close(ps->conns, false);
	while ((c = ps->dead) != NULL) {
		ps->dead = c->next;
		conn_free(c);
	}
	while (ps->dups != NULL)
		dup_free(ps->dups);
	trace_write(ps);	/* records point at the listeners' names */
	for (i = 0; i < ps->nls; i++) {
		ep_close(ps, &ps->ls[i].ep, false);
		free(ps->ls[i].name);
		free(ps->ls[i].upstream);
		if (ps->ls[i].has_re)
			regfree(&ps->ls[i].re);
	}
	for (i = 0; i < ps->nscheds; i++) {
		struct psched	*q = ps->scheds[i];

		side_close(ps, q);
		sched_free(q->s);
		free(q->live);
		free(q->seen);
		free(q->ready);
		free(q->oldest);
		free(q->stuck);
		free(q);
	}
	free(ps->scheds);
	ep_close(ps, &ps->wake, false);
	if (ps->epfd >= 0)
		close(ps->epfd);
	free(ps->ls);
	free(ps->recs);
	free(ps->trace_path);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->idle);
	free(ps);
}
