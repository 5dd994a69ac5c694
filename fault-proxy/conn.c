/*
 * One proxied connection: a small state machine (conn_state) that walks
 * exchange by exchange: known -> (held by the gate) -> rolled -> (delay)
 * -> dial lazily -> forward the request -> relay or withhold the reply.
 * Sockets are nonblocking, epoll is level-triggered, and an fd is removed
 * from the interest set whenever we want nothing from it, so a peer that
 * hangs up while we apply back-pressure cannot make the loop spin.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fault.h"
#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/engine_int.h"
#include "fault-proxy/stmtkey.h"

static const char *const conn_state_names[CS_MAX] = {
	[CS_IDLE] = "idle", [CS_PENDING] = "pending", [CS_DELAY] = "delay",
	[CS_CONNECTING] = "connecting",
	[CS_REQUEST] = "request", [CS_REPLY] = "reply", [CS_HOLD] = "hold",
	[CS_BLACKHOLE] = "blackhole", [CS_STATUS] = "status",
	[CS_STALL] = "stall", [CS_CLOSED] = "closed",
};

static void	conn_process(struct conn *);
static void	conn_arm(struct conn *);
static void	exchange_admit(struct conn *, const char *);
static void	conn_canon(struct conn *);

/* A TCP socket's local port (0: none, or not TCP). */
static uint16_t
sock_lport(int fd)
{
	struct sockaddr_storage	ss;
	socklen_t		sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
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
	if (!c->in_exchange)
		return;
	if (c->l->gate != NULL)
		gate_end(c->l->gate, &c->gent, now_ms());
	else if (c->l->turnstile)
		c->gent.st = GS_OUT;
	px_front_settled(c);
	/* a service's statement answered: the thread it wakes serves its turn */
	if (c->l->svc >= 0 && c->rec.step > 0 &&
	    c->rec.turn < c->l->ps->nturn_live)
		c->l->ps->svcs[c->l->svc].last = c->rec.turn;
	/* ... and out of a transaction, its connection is no turn's (a pool's
	 * serves the next request, whoever's): its lane goes back now, so a
	 * turn's own connection does not find it taken */
	if (c->l->svc >= 0 && c->l->gate != NULL && !c->gent.in_tx &&
	    c->gent.turn >= 0)
		gate_ent_turn(c->l->gate, &c->gent, 0, -1);
	c->hold_down = false;
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
	if (c->sse_on && !c->sse_hit) {
		/* its event never came: every byte read was free to go */
		log_debug("%s/%d conn %u exchange %u: %s after %" PRIu32 " events "
		    "drawn, but the reply %s: no fault", c->l->name, c->l->turn,
		    c->no, c->rec.exchange, fault_name((enum fault)c->roll.fault),
		    c->roll.after, c->sse.stream ? "ended before" :
		    "was not server-sent events");
		c->sse_on = false;
	}
	c->reply_read = false;
	px_trace_add(c->l->ps, &c->rec);
	c->in_exchange = false;
	if (!px_conn_holds_live(c->l))
		px_live_release(c->l->ps);
	c->req_done = false;
	c->got_reply = false;
	c->duplen = 0;
	c->dup_overflow = false;
}

void
px_conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	if (px_conn_holds_live(c->l))
		px_live_release(c->l->ps);
	http_frame_free(&c->req);
	http_frame_free(&c->resp);
	pg_free(c->pgf);
	free(c->pgf);
	free(c->hello);
	free(c->up.data);
	free(c->down.data);
	free(c->dupreq);
	free(c);
}

/*
 * rst: the client sees a reset, not a FIN.  cut: the close is news in an
 * open exchange's trace record ("closed"); a fault's own close is in its
 * "fault", and a peer's hang-up is how tcp and close-delimited replies end.
 */
static const struct {
	const char	*name;		/* NULL: the fault's (fault_name) */
	enum fault	 fault;
	bool		 rst, cut;
} close_causes[PXC_MAX] = {
	[PXC_CLIENT_DONE] = { "client hung up", FAULT_NONE, false, false },
	[PXC_UPSTREAM_DONE] = { "upstream hung up", FAULT_NONE, false, false },
	[PXC_CLIENT_GONE] = { "client gone", FAULT_NONE, true, true },
	[PXC_UPSTREAM_GONE] = { "upstream gone", FAULT_NONE, true, true },
	[PXC_UPSTREAM_RESET] = { "upstream reset", FAULT_NONE, true, true },
	[PXC_DIAL_FAILED] = { "upstream dial failed", FAULT_NONE, true, true },
	[PXC_DIAL_TIMEOUT] = { "upstream dial timed out", FAULT_NONE, true, true },
	[PXC_FAULT_RESET] = { NULL, FAULT_RESET, true, false },
	[PXC_FAULT_LOST_REPLY] = { NULL, FAULT_LOST_REPLY, true, false },
	[PXC_FAULT_BLACKHOLE] = { NULL, FAULT_BLACKHOLE, false, false },
	[PXC_CLOSE_AFTER] = { NULL, FAULT_CLOSE_AFTER, false, false },
	[PXC_STREAM_CUT] = { NULL, FAULT_STREAM_CUT, false, false },
	[PXC_REFUSED] = { "refused", FAULT_NONE, true, true },
	[PXC_NO_MEMORY] = { "out of memory or descriptors", FAULT_NONE, true, true },
	[PXC_SET_CLOSED] = { "seed over", FAULT_NONE, false, true },
};

const char *
px_close_name(enum px_close why)
{
	if ((size_t)why >= PXC_MAX)
		return "unknown";
	return close_causes[why].name != NULL ? close_causes[why].name :
	    fault_name(close_causes[why].fault);
}

/*
 * Closes both sides, the client with a reset or a FIN as why says.  The
 * conn is only unlinked here and freed after the loop pass, because later
 * events of the same epoll batch may still point at it.
 */
void
px_conn_close(struct conn *c, enum px_close why)
{
	struct proxy_set	*ps = c->l->ps;
	bool			 rst = close_causes[why].rst;

	if (c->state == CS_CLOSED)
		return;
	log_debug("%s/%d conn %u: closed (%s%s)", c->l->name, c->l->turn, c->no,
	    (size_t)why < PXC_MAX && close_causes[why].name == NULL ? "fault " : "",
	    px_close_name(why));
	if (c->in_exchange && close_causes[why].cut)
		c->rec.closed = px_close_name(why);
	exchange_end(c);		/* out of the gate too, in any state */
	px_poke(ps, c->l->turn);	/* its client sees the close */
	if (c->l->gate != NULL) {
		gate_conn_closed(c->l->gate, &c->gent);
		if (c->pid_told > 0)
			gate_backend_gone(c->l->gate, c->pid_told);
	}
	px_local_detach(c);
	px_ep_close(ps->epfd, &c->cep, rst);
	px_ep_close(ps->epfd, &c->uep, rst);
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

	if (px_answered_inside(l)) {
		/* the stand-in, a cassette or a bridge: connected at once, nothing dialled */
		if ((fd = px_local_pair(l, c, NULL)) == -1) {
			px_conn_close(c, PXC_NO_MEMORY);
			return;
		}
		c->uep = (struct ep){ EP_UPSTREAM, c, fd, 0 };
		set_state(c, CS_REQUEST);
		return;
	}
	if ((fd = socket(l->up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket", __func__);
		px_conn_close(c, PXC_NO_MEMORY);
		return;
	}
	c->uep = (struct ep){ EP_UPSTREAM, c, fd, 0 };
	if (l->up_addr.ss_family != AF_UNIX)
		px_set_nodelay(fd);
	if (connect(fd, (struct sockaddr *)&l->up_addr, l->up_len) == 0) {
		c->up_lport = sock_lport(fd);
		set_state(c, CS_REQUEST);
		return;
	}
	c->up_lport = sock_lport(fd);	/* bound by connect, in progress */
	if (errno != EINPROGRESS) {
		log_warn("%s/%d conn %u: connect %s", l->name, l->turn, c->no,
		    l->upstream);
		px_conn_close(c, PXC_DIAL_FAILED);	/* a dead upstream looks like a reset */
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
		px_conn_close(c, PXC_FAULT_RESET);
		return;
	}
	if (c->roll.fault == PROXY_FAULT_STATUS) {
		/* the proxy answers: nothing is forwarded, nothing dialled */
		set_state(c, CS_STATUS);
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
		if (px_buf_alloc(&c->down) == -1 || (space = px_buf_space(&c->down)) == 0)
			return 0;
		px_buf_consume(&c->up, 8);
		c->down.data[c->down.off + c->down.len++] = 'N';
		c->tls_asked = true;
		log_debug("%s/%d conn %u: %s answered with N (plain traffic)",
		    l->name, l->turn, c->no, first == PGF_SSL ? "SSLRequest" :
		    "GSSENCRequest");
	}
}

/*
 * The connection's number on its listener, taken when it first carries an
 * exchange (or is blackholed), not when it is accepted: a client that
 * opens a connection it never uses (Node's fetch beside a request it
 * aborted) shifts no other connection's number, so its faults, keyed by
 * number (proxy_roll), are the seed's on every replay (docs/faults.md).
 */
static void
conn_number(struct conn *c)
{
	if (c->numbered)
		return;
	c->no = c->l->next_conn++;
	c->numbered = true;
}

static void
exchange_begin(struct conn *c)
{
	struct listener	*l = c->l;

	conn_number(c);
	c->in_exchange = true;
	if (!px_conn_holds_live(l))
		l->ps->live++;	/* until exchange_end */
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
	c->rec.service = l->service;
	c->rec.conn = c->no;
	c->rec.exchange = c->exch_no++;
	c->rec.overlap = c->overlap;
	if (c->pg)
		c->notifies0 = c->pgf->notifies;
	c->rec.round = c->round;
	/* pg and http wait for their statement or request line: its key */
	if (c->pg || c->http || l->gate != NULL)
		set_state(c, CS_PENDING);
	else
		exchange_admit(c, NULL);
}

/* A new round's first connection: its turn's keys count from 0 again. */
static void
listener_round(struct listener *l, int round)
{
	if (l->occ_round == round)
		return;
	l->occ_round = round;
	l->nocc = 0;
	l->rconns = 0;
}

/* The occurrence of key among the turn's exchanges of this round. */
static uint32_t
occ_next(struct listener *l, int round, uint64_t key)
{
	size_t	i;

	listener_round(l, round);
	for (i = 0; i < l->nocc; i++)
		if (l->occ_keys[i] == key)
			return l->occ_next[i]++;
	if (l->nocc == l->capocc) {
		l->capocc = l->capocc ? l->capocc * 2 : 16;
		l->occ_keys = xreallocarray(l->occ_keys, l->capocc,
		    sizeof(*l->occ_keys));
		l->occ_next = xreallocarray(l->occ_next, l->capocc,
		    sizeof(*l->occ_next));
	}
	l->occ_keys[l->nocc] = key;
	l->occ_next[l->nocc++] = 1;
	return 0;
}

/* An exchange without a statement is keyed by its kind: "(startup)". */
static uint64_t
kind_key(const char *kind)
{
	char	k[32];

	snprintf(k, sizeof(k), "(%s)", kind);
	return stmtkey_sql(k, strlen(k));
}

/*
 * Whether the gate holds this exchange until it admits it: every exchange
 * of a scheduled proxy but a PostgreSQL start-up and messages that get no
 * reply, which go at once (they touch no data, and nothing would tell the
 * gate they ended).
 */
static bool
conn_gated(const struct conn *c)
{
	return c->l->gate != NULL &&
	    !(c->pg && (c->rec.exchange == 0 || c->pgf->noreply));
}

/*
 * What the exchange hits, once it is known (docs/plan.md): its key and
 * occurrence, and for people its statement or request line.  Before the
 * gate holds it or it is admitted, so a plan can name it either way.  A
 * held exchange's occurrence is the gate's, counted in admission order
 * (px_conn_admit): a turn's connections open at once race to arrive.
 */
static void
exchange_key(struct conn *c, const char *stmt)
{
	struct listener	*l = c->l;
	uint64_t	 key;

	if (c->rec.keyed)
		return;
	if (c->pg) {
		c->rec.pg = pg_kind_name(c->pgf->kind);
		if (c->pgf->has_sql)
			memcpy(c->rec.sql, c->pgf->sql, sizeof(c->rec.sql));
		key = c->pgf->has_key ? c->pgf->key : kind_key(c->rec.pg);
	} else if (c->http && stmt != NULL) {
		if ((key = stmtkey_http(stmt, strlen(stmt), c->rec.req,
		    sizeof(c->rec.req))) == 0)
			key = kind_key("http");
	} else
		key = kind_key(c->http ? "http" : "tcp");
	c->rec.keyed = true;
	c->rec.key = key;
	c->rec.round = c->round;
	/* a service's exchange a turn's would have been held for, passing a
	 * schedule unheld: counted (the trace's bypass; docs/turns.md) */
	c->rec.bypass = l->bypass && !(c->pg && (c->rec.exchange == 0 ||
	    c->pgf->noreply));
	if (!conn_gated(c))
		c->rec.occ = occ_next(l, c->round, key);
}

/*
 * Under a plan, the plan's fault for this exchange, and none where it
 * has none (docs/plan.md); the seed's roll is not used.
 */
static void
plan_fault(struct conn *c)
{
	const struct plan_proxy	*x = c->l->plan;
	size_t			 i;

	memset(&c->roll, 0, sizeof(c->roll));
	for (i = 0; x != NULL && i < x->nfaults; i++) {
		const struct plan_fault_rec	*f = &x->faults[i];

		if (f->fault == PLAN_BLACKHOLE || f->round != c->rec.round ||
		    f->turn != c->l->turn || f->key != c->rec.key ||
		    f->occ != c->rec.occ || c->rec.key == 0)
			continue;
		/* a plan's kinds are fault.h's, as the proxy's are */
		c->roll.fault = f->fault < PLAN_FAULT_MAX ?
		    (enum proxy_fault)f->fault : PROXY_FAULT_NONE;
		c->roll.latency_ms = f->latency_ms;
		c->roll.status = f->status;
		c->roll.after = f->after;
		c->roll.stall_ms = f->stall_ms;
		return;
	}
}

/* Whether the plan blackholes the round's conn-th connection of turn t. */
static bool
plan_blackhole(const struct listener *l, int round, uint32_t conn)
{
	const struct plan_proxy	*x = l->plan;
	size_t			 i;

	for (i = 0; x != NULL && i < x->nfaults; i++)
		if (x->faults[i].fault == PLAN_BLACKHOLE &&
		    x->faults[i].round == round && x->faults[i].turn == l->turn &&
		    x->faults[i].occ == conn)
			return true;
	return false;
}

/*
 * The turn a service's exchange serves (docs/faults.md "Services under a
 * schedule"), or -1: inside a transaction, the turn that began it; else
 * the turn whose request its front let go and that has not settled (the
 * service has not been quiet since, nor answered it: nothing else of the
 * service has run since it was quiet); two turns with such requests, -1:
 * it cannot be told (a request `blocked` went past, a service that runs
 * two at once); none, the turn of the service's statement answered last
 * (the reply that woke the thread sending this).  -1 also without a
 * process to judge the service by.
 */
static int
served_turn(const struct conn *c)
{
	const struct proxy_set	*ps = c->l->ps;
	const struct svc_state	*s = &ps->svcs[c->l->svc];
	int			 t, one = -1;

	if (atomic_load(&s->pgid) <= 0)
		return -1;
	if (c->gent.in_tx && c->served >= 0)
		return c->served;
	for (t = 0; t < ps->nturn_live; t++) {
		if (s->active[t] == 0)
			continue;
		if (one >= 0)
			return -1;
		one = t;
	}
	return one >= 0 ? one : s->last;
}

/*
 * A service's connections are many turns' in turn (a pool's, or one per
 * request): two serving one turn at once (a request that uses two, a turn
 * whose requests overlap) send in an order the service decides, not the
 * schedule: their exchanges say so ("overlap"), as a turn's own
 * connections open at once do.
 */
static bool	conn_still_open(const struct conn *);

static void
served_overlap(struct conn *c)
{
	struct conn	*d;

	for (d = c->l->ps->conns; d != NULL; d = d->next)
		if (d != c && d->l == c->l && d->served == c->served &&
		    d->round == c->round && conn_still_open(d) &&
		    (d->in_exchange || d->gent.in_tx)) {
			c->overlap = d->overlap = true;
			c->rec.overlap = true;
			if (d->in_exchange)
				d->rec.overlap = true;
		}
}

/*
 * The exchange is known: whether the gate holds it for its turn (then it
 * waits in CS_PENDING with every byte still in `up`, and the gate's
 * decision admits it, px_conn_admit).  A PostgreSQL start-up and messages
 * that get no reply go at once: they touch no data, and nothing would
 * tell the gate they ended.
 */
static bool
conn_hold(struct conn *c, const char *stmt)
{
	struct gate	*g = c->l->gate;

	if (c->l->turnstile) {
		/* engine.c turnstile_pass lets it go */
		if (c->gent.st != GS_WAIT) {
			c->gent.turn = c->l->turn;
			c->gent.occ = c->rec.occ;
			c->gent.seq = ++c->l->ps->tseq;
			c->gent.st = GS_WAIT;
		}
		return true;
	}
	if (g == NULL)
		return false;
	if (c->gent.st == GS_WAIT)
		return true;
	if (!conn_gated(c))
		return false;
	if (c->l->svc >= 0) {
		int	t = served_turn(c);

		if (t < 0) {
			/* whose it is cannot be told: unheld, counted, and
			 * its backend outside the turns' (gate.h "outside") */
			if (c->served >= 0) {
				gate_backend_gone(g, c->pid_told);
				gate_ent_turn(g, &c->gent, 0, -1);
			}
			c->served = -1;
			c->rec.bypass = true;
			c->rec.occ = occ_next(c->l, c->rec.round, c->rec.key);
			return false;
		}
		gate_ent_turn(g, &c->gent, c->pid_told, t);
		c->served = t;
		c->rec.turn = t;
		served_overlap(c);
	}
	c->gent.turn = c->rec.turn;
	c->gent.round = c->rec.round;
	c->gent.key = c->rec.key;
	c->gent.occ = c->rec.occ;
	c->gent.pid = c->pg ? c->pgf->backend_pid : 0;
	c->gent.rec = &c->rec;
	c->has_line = !c->pg && stmt != NULL;
	if (c->has_line)
		snprintf(c->line, sizeof(c->line), "%s", stmt);
	conn_canon(c);
	gate_wait(g, &c->gent, now_ms());
	return true;
}

/*
 * A held exchange's canon (gate.h): its bytes as they stand, the whole
 * request once the client waits for its reply (a Bind's parameters too),
 * so that a turn's connections asking the same statement of different
 * rows are told apart.
 */
static void
conn_canon(struct conn *c)
{
	c->gent.canon = fnv1a64(c->up.data + c->up.off, c->up.len);
}

void
px_conn_admit(struct conn *c)
{
	struct listener	*l = c->l;

	/* what it hits, now that the schedule says when: the gate's
	 * occurrence, and the seed's roll for it keyed by that (proxy.h,
	 * proxy_roll_hit) */
	c->rec.occ = c->gent.occ;
	if (!l->planned && l->gate != NULL)
		proxy_roll_hit(&l->faults, l->ps->seed, l->name, c->rec.turn,
		    c->rec.round, c->rec.key, c->rec.occ, &c->roll);
	if (l->front >= 0 && c->gent.turn >= 0 &&
	    c->gent.turn < l->ps->nturn_live) {
		/* a request let go to a service: what begins in it until it
		 * settles is this turn's (served_turn) */
		if (!c->svc_counted)
			l->ps->svcs[l->front].active[c->gent.turn]++;
		c->svc_counted = true;
		c->svc_since = now_ms();
	}
	exchange_admit(c, c->pg ? (c->pgf->has_sql ? c->pgf->sql : NULL) :
	    c->has_line ? c->line : NULL);
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
 * Whether an exchange's latency is slept.  Not under a schedule (a gate in
 * the set, whichever proxy it is on): each gate waits for every live turn
 * before it decides, so the window a latency stands for (seeds/001's model
 * call between a read and a write) is opened by the schedule, and a sleep
 * would only spend wall time, turn by turn along the schedule (and, on a
 * scheduled proxy, hold the gate until `blocked` forced a decision).  The
 * trace and a plan keep the latency drawn.  latency_real keeps the clock,
 * for a client timeout that must fire.
 */
static bool
latency_slept(const struct conn *c)
{
	return c->l->ps->ngates == 0 || c->l->faults.latency_real;
}

/*
 * An HTTP API fault drawn for an exchange (docs/faults.md "Faults of an
 * HTTP API"): none on one that is not HTTP (a PostgreSQL statement, tcp
 * bytes); a status fault's answer in the error shape of the API its
 * request line names (stmt), whatever the upstream; a stream fault
 * counts the reply's events from now on.
 */
static void
api_fault_admit(struct conn *c, const char *stmt)
{
	const char	*sp, *end;
	char		 path[REQLINE_LEN];
	size_t		 n;

	c->sse_on = c->sse_hit = c->reply_read = false;
	if (c->roll.fault != PROXY_FAULT_STATUS &&
	    c->roll.fault != PROXY_FAULT_STREAM_CUT &&
	    c->roll.fault != PROXY_FAULT_STREAM_STALL)
		return;
	if (!c->http) {
		log_debug("%s/%d conn %u exchange %u: %s drawn on an exchange "
		    "that is not HTTP: no fault", c->l->name, c->l->turn, c->no,
		    c->rec.exchange, fault_name((enum fault)c->roll.fault));
		c->roll.fault = PROXY_FAULT_NONE;
		return;
	}
	if (c->roll.fault == PROXY_FAULT_STATUS) {
		c->rec.status = c->roll.status;
		c->status_api = MODEL_API_MAX;
		/* "POST /v1/messages?beta=true HTTP/1.1": its path */
		if (stmt != NULL && (sp = strchr(stmt, ' ')) != NULL) {
			sp++;
			end = sp + strcspn(sp, " ?");
			n = (size_t)(end - sp) < sizeof(path) ? (size_t)(end - sp) :
			    sizeof(path) - 1;
			memcpy(path, sp, n);
			path[n] = '\0';
			if (model_api_of(path, &c->status_api) == -1)
				c->status_api = MODEL_API_MAX;
		}
		return;
	}
	c->sse_on = true;
	c->sse_free = c->down.len;	/* what is there already goes */
	sse_start(&c->sse, false, false);	/* until the reply's head */
}

/*
 * The exchange is known and nothing of it has been forwarded: apply match
 * to its roll and start it (at once, or when the gate admits it).
 */
static void
exchange_admit(struct conn *c, const char *stmt)
{
	struct listener	*l = c->l;

	exchange_key(c, stmt);
	if (l->planned)
		plan_fault(c);
	else if (l->has_re && (stmt == NULL ||
	    regexec(&l->re, stmt, 0, NULL, 0) != 0))
		memset(&c->roll, 0, sizeof(c->roll));
	api_fault_admit(c, stmt);
	c->rec.fault = c->roll.fault;
	c->rec.latency_ms = c->roll.latency_ms;
	if (c->sse_on)
		c->rec.fault = PROXY_FAULT_NONE;	/* until its event comes */
	log_debug("%s/%d conn %u exchange %u: %s, latency %lldms%s%s%s", l->name,
	    l->turn, c->no, c->rec.exchange, fault_name((enum fault)c->roll.fault),
	    (long long)c->roll.latency_ms, c->roll.latency_ms > 0 &&
	    !latency_slept(c) ? " (virtual: the schedule's)" : "",
	    c->rec.sql[0] ? ": " : "", c->rec.sql);
	if (c->roll.latency_ms > 0 && latency_slept(c)) {
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
	px_conn_close(c, PXC_REFUSED);
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

/*
 * pg: exchange 0's bytes, kept while duplicates may need a new session:
 * when the seed's roll may draw a duplicate, and under a plan, whose
 * faults are its own whatever the config's rates (a plan's duplicate of
 * a config without one — an explain variant, an edited plan — was once
 * never sent).
 */
static void
hello_copy(struct conn *c, const char *p, size_t n)
{
	const struct cfg_faults	*f = &c->l->faults;

	if (!c->pg || c->rec.exchange != 0 || c->pgf->kind != PGK_STARTUP ||
	    (!c->l->planned && (f->rate <= 0 || f->duplicate <= 0)))
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
		/* a stream fault: nothing past its event, until it is over */
		if (d == DIR_DOWN && c->sse_on && avail > c->sse_free)
			avail = c->sse_free;
		if (avail == 0 || c->wblocked[d] || e->fd < 0)
			return 0;
		if (d == DIR_UP && c->state != CS_REQUEST &&
		    c->state != CS_REPLY)
			return 0;
		if (d == DIR_DOWN && (c->state == CS_HOLD ||
		    c->state == CS_BLACKHOLE))
			return 0;
		/* a deadlock's victim: its reply waits to be rewritten */
		if (d == DIR_DOWN && c->gent.victim && c->in_exchange &&
		    c->rec.deadlock == TRACE_DEADLOCK_NONE && c->down.len < PROXY_BUF_CAP)
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
			px_conn_close(c, d == DIR_UP ? PXC_UPSTREAM_GONE :
			    PXC_CLIENT_GONE);
			return -1;
		}
		if (d == DIR_UP) {
			dup_copy(c, b->data + b->off, (size_t)w);
			hello_copy(c, b->data + b->off, (size_t)w);
			c->up_scan -= (size_t)w;
			c->rec.bytes_up += (uint64_t)w;
			c->rec.upstream_saw = true;
		} else {
			px_poke(c->l->ps, c->l->turn);	/* it may wake on these */
			if (c->sse_on)
				c->sse_free -= (size_t)w;
		}
		px_buf_consume(b, (size_t)w);
		c->sent[d] += (uint64_t)w;
		if (f->close_after[d] > 0 &&
		    c->sent[d] >= (uint64_t)f->close_after[d]) {
			if (c->in_exchange && c->rec.fault == PROXY_FAULT_NONE)
				c->rec.fault = PROXY_FAULT_CLOSE_AFTER;
			px_conn_close(c, PXC_CLOSE_AFTER);
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
				px_conn_close(c, PXC_FAULT_BLACKHOLE);
			else
				c->client_eof = true;	/* the hold still ends in a reset */
		}
		return;
	}
	if (px_buf_alloc(&c->up) == -1) {
		px_conn_close(c, PXC_NO_MEMORY);
		return;
	}
	if ((space = px_buf_space(&c->up)) == 0)
		return;
	n = recv(c->cep.fd, c->up.data + c->up.off + c->up.len, space, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		px_conn_close(c, PXC_CLIENT_GONE);
		return;
	}
	if (n == 0) {
		c->client_eof = true;
		return;
	}
	c->up.len += (size_t)n;
	if (c->gent.st == GS_WAIT)
		conn_canon(c);
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
 * A deadlock's victim (gate.h): its statement was cancelled by soak, and
 * its client gets, instead of the cancel's ErrorResponse (57014), the one
 * PostgreSQL's deadlock detector sends (40P01), so a turn that retries a
 * deadlock does here what it does in production.  The message ends at
 * *pp + end and is whole in `down`, held since the cancel (conn_write);
 * the bytes after it, not yet framed, move with the rewrite, and so does
 * *pp.
 */
static void
pg_deadlock(struct conn *c, char **pp, size_t end)
{
	struct pgframe	*f = c->pgf;
	struct buf	*b = &c->down;
	char		 msg[640], detail[400], set[256];
	char		*mend = *pp + end, *mstart, *bend = b->data + b->off + b->len;
	size_t		 len;
	ptrdiff_t	 delta;

	f->stop_at_error = false;
	if (strcmp(f->err_sqlstate, "57014") != 0)
		return;		/* it failed of itself before the cancel */
	mstart = mend - f->err_len;
	snprintf(detail, sizeof(detail), "soak's schedule found a cycle of lock "
	    "waits among the turns' statements: this one (turn %d, step %u) "
	    "waits on turns %s, and was cancelled as PostgreSQL's deadlock "
	    "detector would have done", c->l->turn, (unsigned)c->rec.step,
	    proxy_turn_set(c->rec.waits_on, set, sizeof(set)));
	len = pg_error_message("ERROR", "40P01", "deadlock detected", detail,
	    msg, sizeof(msg));
	delta = (ptrdiff_t)len - (ptrdiff_t)f->err_len;
	if (mstart < b->data + b->off || len == 0 ||
	    (ptrdiff_t)(b->off + b->len) + delta > PROXY_BUF_CAP) {
		log_warnx("%s/%d conn %u: the cancelled statement's error could "
		    "not be made a deadlock's; the client sees SQLSTATE 57014",
		    c->l->name, c->l->turn, c->no);
		c->rec.deadlock = TRACE_DEADLOCK_SOAK;
		return;
	}
	memmove(mend + delta, mend, (size_t)(bend - mend));
	memcpy(mstart, msg, len);
	b->len = (size_t)((ptrdiff_t)b->len + delta);
	*pp += delta;
	c->rec.bytes_down = (uint64_t)((int64_t)c->rec.bytes_down + delta);
	c->rec.deadlock = TRACE_DEADLOCK_SOAK;
}

/*
 * pg: every server byte goes through the framer, in or out of an exchange
 * (notifications, parameter changes and notices come unasked).  The
 * exchange ends right after its ReadyForQuery.  p: the n bytes just read,
 * at the end of `down`.
 */
static void
pg_reply(struct conn *c, char *p, size_t n)
{
	struct pgframe	*f = c->pgf;
	size_t		 off = 0, k;
	bool		 counted, tls_before = f->tls_required;

	f->stop_at_error = c->gent.victim && c->in_exchange &&
	    c->rec.deadlock == TRACE_DEADLOCK_NONE;
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
					px_dup_start(c);
			}
			set_state(c, CS_REPLY);
		}
		if (f->tls_required && !tls_before) {
			/* down may now hold the proxy's words, not p's bytes */
			pg_tls_refused(c, n);
			return;
		}
		if (c->l->gate != NULL && f->backend_pid > 0 && c->pid_told == 0) {
			c->pid_told = f->backend_pid;
			/* a service's: a turn's once it serves one (conn_hold) */
			if (c->l->svc < 0)
				gate_backend(c->l->gate, f->backend_pid, c->l->turn);
		}
		if (f->err_now) {
			f->err_now = false;
			if (counted)
				pg_deadlock(c, &p, off);
		}
		if (counted && f->err_seen && c->rec.deadlock == TRACE_DEADLOCK_NONE &&
		    strcmp(f->err_sqlstate, "40P01") == 0)
			c->rec.deadlock = TRACE_DEADLOCK_POSTGRES;
		if (f->ready) {
			f->ready = false;
			if (counted) {
				c->rec.tx = f->tx;
				c->rec.cls = sk_class_name(pg_exchange_class(f));
				exchange_end(c);
				set_state(c, CS_IDLE);
			}
		}
	}
}

/* A stream fault has found its event, and cuts the stream there. */
static bool
stream_cut(const struct conn *c)
{
	return c->sse_on && c->sse_hit &&
	    c->roll.fault == PROXY_FAULT_STREAM_CUT;
}

/* ... or stalls it there (its stall to come, or under way). */
static bool
stalling(const struct conn *c)
{
	return c->sse_on && c->sse_hit &&
	    c->roll.fault == PROXY_FAULT_STREAM_STALL;
}

/*
 * Frames n reply bytes just read (at p, the end of `down`) and returns how
 * many the framer took.  Under a stream fault it also counts the reply's
 * events (sse.h), the head fed line by line so that the body's first byte
 * is known; at the fault's event (the end of event `after`), what follows
 * it in p is taken off sse_free: held for a stall, dropped from `down`
 * for a cut (whose bytes_down are then those that go).
 */
static size_t
resp_feed(struct conn *c, char *p, size_t n)
{
	const char	*nl;
	size_t		 used = 0, body, k, took, rest;

	if (!c->sse_on || c->sse_hit)
		return http_feed(&c->resp, p, n);
	while (used < n && c->resp.state == HF_HEAD) {
		nl = memchr(p + used, '\n', n - used);
		k = nl ? (size_t)(nl - (p + used)) + 1 : n - used;
		used += http_feed(&c->resp, p + used, k);
		if (c->resp.state == HF_ERROR)
			return used;
		if (c->resp.state != HF_HEAD)	/* a final head (1xx go back) */
			sse_start(&c->sse, c->resp.event_stream, c->resp.chunked);
	}
	body = used;
	if (used < n && c->resp.state != HF_DONE)
		used += http_feed(&c->resp, p + used, n - used);
	if (!c->sse.stream || body >= used)
		return used;
	took = sse_feed(&c->sse, p + body, used - body, c->roll.after);
	if (c->sse.events < c->roll.after)
		return used;
	/* the event: p[0 .. body + took) go, the rest waits or is dropped */
	c->sse_hit = true;
	rest = n - (body + took);
	c->sse_free -= rest;
	c->rec.fault = c->roll.fault;
	c->rec.after = c->roll.after;
	log_debug("%s/%d conn %u exchange %u: %s after event %" PRIu32,
	    c->l->name, c->l->turn, c->no, c->rec.exchange,
	    fault_name((enum fault)c->roll.fault), c->roll.after);
	if (c->roll.fault == PROXY_FAULT_STREAM_STALL) {
		c->rec.stall_ms = c->roll.stall_ms;
		return used;
	}
	c->down.len -= rest;
	c->rec.bytes_down += body + took;
	return body + took;
}

/* Moves newly read upstream bytes into the exchange; drops them if lost. */
static void
conn_read_upstream(struct conn *c)
{
	struct proxy_set	*ps = c->l->ps;
	ssize_t			 n;
	size_t			 space, used;
	char			*p;

	if (stream_cut(c)) {
		/* the rest of a cut stream: never relayed */
		n = recv(c->uep.fd, ps->scratch, sizeof(ps->scratch), 0);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			c->up_eof = true;
			px_ep_close(ps->epfd, &c->uep, false);
		}
		return;
	}
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
			px_ep_close(ps->epfd, &c->uep, false);
		return;
	}
	if (px_buf_alloc(&c->down) == -1) {
		px_conn_close(c, PXC_NO_MEMORY);
		return;
	}
	if ((space = px_buf_space(&c->down)) == 0)
		return;
	p = c->down.data + c->down.off + c->down.len;
	n = recv(c->uep.fd, p, space, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		px_conn_close(c, PXC_UPSTREAM_RESET);	/* upstream reset: pass it on */
		return;
	}
	if (n == 0) {
		c->up_eof = true;
		if (c->in_exchange && c->http && c->resp.state == HF_BODY_EOF) {
			http_eof(&c->resp);
			if (stalling(c))
				c->reply_read = true;	/* it ends with the stall */
			else
				exchange_end(c);
		}
		return;
	}
	c->down.len += (size_t)n;
	if (c->sse_on && !c->sse_hit)
		c->sse_free += (size_t)n;
	if (c->pg) {
		pg_reply(c, p, (size_t)n);
		return;
	}
	/* bytes before the request went out are unsolicited: relayed, not counted */
	if (!c->in_exchange || !c->rec.upstream_saw ||
	    (c->state != CS_REQUEST && c->state != CS_REPLY &&
	    c->state != CS_STALL))
		return;
	if (!c->http) {
		c->rec.bytes_down += (uint64_t)n;
		if (!c->got_reply) {
			c->got_reply = true;
			c->req_done = true;
			if (c->roll.fault == PROXY_FAULT_DUPLICATE)
				px_dup_start(c);
		}
		set_state(c, CS_REPLY);
		return;
	}
	used = resp_feed(c, p, (size_t)n);
	c->got_reply = true;
	if (stream_cut(c)) {
		/* the exchange ends with the connection, once its events went */
		set_state(c, CS_REPLY);
		return;
	}
	c->rec.bytes_down += used;
	if (c->state == CS_REQUEST && c->up_scan == 0 && c->req_done)
		set_state(c, CS_REPLY);
	if (c->resp.state == HF_ERROR) {
		c->http = false;	/* garbage reply: frame the rest as tcp */
		c->rec.bytes_down += (uint64_t)n - used;
		c->req_done = true;
		if (c->state != CS_STALL)
			set_state(c, CS_REPLY);
	} else if (c->resp.state == HF_DONE) {
		if (c->resp.upgrade)
			c->http = false;	/* 101: the rest is a byte stream */
		if (c->roll.fault == PROXY_FAULT_DUPLICATE)
			px_dup_start(c);
		if (stalling(c))
			c->reply_read = true;	/* it ends with the stall */
		else {
			exchange_end(c);
			set_state(c, CS_IDLE);
		}
	}
}

/* A state timer fired: what it means in this state. */
static void
conn_deadline(struct conn *c)
{
	c->deadline = 0;
	switch (c->state) {
	case CS_DELAY:
		exchange_go(c);
		break;
	case CS_CONNECTING:
		log_warnx("%s/%d conn %u: connect %s timed out", c->l->name,
		    c->l->turn, c->no, c->l->upstream);
		px_conn_close(c, PXC_DIAL_TIMEOUT);
		break;
	case CS_HOLD:
		px_conn_close(c, PXC_FAULT_LOST_REPLY);
		break;
	case CS_STALL:
		/* resumed: the rest of the reply goes as it came */
		c->sse_on = false;
		set_state(c, CS_REPLY);
		if (c->reply_read) {
			exchange_end(c);
			set_state(c, CS_IDLE);
		}
		break;
	default:
		break;
	}
}

/*
 * Exchange boundaries: a new exchange begins with the first client bytes
 * after the last, a pending one is admitted (or held by the gate) once it
 * is known, one that nothing answers ends once it is forwarded.  1 when
 * something changed that the driver should look at again, 0 to go on to
 * the I/O, -1 when the conn closed.
 */
static int
conn_frame(struct conn *c)
{
	char		 line[REQLINE_LEN];
	const char	*stmt;

	if (c->up.len > 0 && (c->state == CS_IDLE ||
	    (c->state == CS_REPLY && !c->http && !c->pg &&
	    c->up_scan == 0 && c->got_reply))) {
		if (conn_hello(c) == 0 || c->up.len == 0)
			return 0;
		exchange_end(c);
		exchange_begin(c);
		return 1;
	}
	scan_request(c);
	if (c->state == CS_CLOSED)
		return -1;
	if (c->state == CS_PENDING && c->gent.st != GS_WAIT &&
	    exchange_known(c, line, sizeof(line), &stmt)) {
		exchange_key(c, stmt);
		if (conn_hold(c, stmt))
			return 0;	/* the gate admits it */
		exchange_admit(c, stmt);
		return 1;
	}
	/* pg: nothing answers a cancel, a Terminate or stray COPY data */
	if (c->pg && c->in_exchange && c->pgf->noreply && c->req_done &&
	    c->up_scan == 0 && c->state == CS_REQUEST && c->rec.upstream_saw) {
		exchange_end(c);
		set_state(c, CS_IDLE);
	}
	return 0;
}

/*
 * A status fault: the request's bytes are read and dropped as they are
 * framed, and once it is whole the proxy's answer goes in its place
 * (model.h model_status_reply); the exchange is over, the connection
 * goes on.
 */
static void
status_answer(struct conn *c)
{
	struct listener	*l = c->l;
	char		*reply;
	size_t		 len;

	if (c->up_scan > 0) {
		px_buf_consume(&c->up, c->up_scan);
		c->up_scan = 0;
	}
	if (!c->req_done && !c->client_eof)
		return;
	if (px_buf_alloc(&c->down) == -1) {
		px_conn_close(c, PXC_NO_MEMORY);
		return;
	}
	reply = model_status_reply(c->status_api, c->roll.status,
	    l->faults.retry_after_ms, l->name, &len);
	if (px_buf_space(&c->down) < len) {
		free(reply);	/* a reply before it still going out */
		return;
	}
	memcpy(c->down.data + c->down.off + c->down.len, reply, len);
	c->down.len += len;
	free(reply);
	c->rec.bytes_down = len;
	log_debug("%s/%d conn %u exchange %u: answered %d", l->name, l->turn,
	    c->no, c->rec.exchange, c->roll.status);
	exchange_end(c);
	set_state(c, CS_IDLE);
}

/* Forwards what may go now, and closes what is over.  -1: closed. */
static int
conn_flush(struct conn *c)
{
	if (c->state == CS_STATUS) {
		status_answer(c);
		if (c->state == CS_CLOSED)
			return -1;
	}
	if ((c->state == CS_REQUEST || c->state == CS_REPLY) &&
	    conn_write(c, DIR_UP) == -1)
		return -1;
	if (c->state == CS_REQUEST && c->http && c->req_done && c->up_scan == 0)
		set_state(c, CS_REPLY);
	if (conn_write(c, DIR_DOWN) == -1)
		return -1;
	/* a stream fault's events have gone: the cut, or the stall begins */
	if (c->sse_hit && c->sse_on && c->sse_free == 0) {
		if (stream_cut(c) && c->down.len == 0) {
			px_conn_close(c, PXC_STREAM_CUT);
			return -1;
		}
		if (stalling(c) && c->state != CS_STALL) {
			c->deadline = now_ms() + c->roll.stall_ms;
			set_state(c, CS_STALL);
		}
	}
	/* half-close: pass the client's FIN on once its bytes are out */
	if (c->client_eof && c->up_scan == 0 && c->uep.fd >= 0 && !c->up_shut &&
	    (c->state == CS_REQUEST || c->state == CS_REPLY)) {
		(void)shutdown(c->uep.fd, SHUT_WR);
		c->up_shut = true;
	}
	if (c->state == CS_BLACKHOLE && c->client_eof) {
		px_conn_close(c, PXC_FAULT_BLACKHOLE);
		return -1;
	}
	if (c->client_eof && c->up.len == 0 && !c->in_exchange &&
	    c->state == CS_IDLE && c->down.len == 0) {
		if (c->pg && c->tls_asked && c->pgf->fe.startup)
			log_warnx("%s/%d conn %u: the client asked for TLS and "
			    "hung up on the proxy's N: it requires TLS "
			    "(sslmode=require?), and the proxy keeps PostgreSQL "
			    "traffic plain", c->l->name, c->l->turn, c->no);
		px_conn_close(c, PXC_CLIENT_DONE);
		return -1;
	}
	/* a hold ends in a reset at its timer, a stall resumes at its
	 * timer, whatever the peers did */
	if (c->up_eof && c->down.len == 0 && c->state != CS_HOLD &&
	    c->state != CS_STALL) {
		px_conn_close(c, PXC_UPSTREAM_DONE);
		return -1;
	}
	return 0;
}

/*
 * The state machine's driver: run after every event and timer until
 * nothing changes.  Decides exchange boundaries, forwards, and closes.
 */
static void
conn_process(struct conn *c)
{
	int	guard, r;

	for (guard = 0; guard < 16 && c->state != CS_CLOSED; guard++) {
		enum conn_state	before = c->state;
		size_t		up_before = c->up.len, down_before = c->down.len;
		uint32_t	exch_before = c->exch_no;

		if (c->deadline != 0 && now_ms() >= c->deadline) {
			conn_deadline(c);
			continue;
		}
		if ((r = conn_frame(c)) == -1)
			return;
		if (r == 1)
			continue;
		if (conn_flush(c) == -1)
			return;
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
	px_ep_set(ps->epfd, &c->cep, cw);
	px_ep_set(ps->epfd, &c->uep, uw);
}

void
px_conn_event(struct conn *c, struct ep *e, uint32_t ev)
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
				px_conn_close(c, PXC_DIAL_FAILED);
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

void
px_conn_timer(struct conn *c)
{
	conn_process(c);
	conn_arm(c);
}

/*
 * Whether d's client is still there to send: not gone (its FIN already
 * queued: a `psql -c` that exited before the next one connected, whose
 * end this loop has not read yet) and not saying goodbye (a PostgreSQL
 * Terminate waiting to be read).
 */
static bool
conn_still_open(const struct conn *d)
{
	char	b;
	ssize_t	n;

	if (d->client_eof || d->state == CS_CLOSED)
		return false;
	n = recv(d->cep.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == -1 ? errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR :
	    n == 1 && !(d->pg && b == 'X');
}

/* An accepted client socket: a connection in CS_IDLE, or blackholed. */
struct conn *
px_conn_new(struct listener *l, int fd, uint16_t peer_port)
{
	struct proxy_set	*ps = l->ps;
	struct conn		*c, *d;

	px_set_nodelay(fd);
	c = xcalloc(1, sizeof(*c));
	if (px_conn_holds_live(l))
		ps->live++;
	c->l = l;
	c->no = l->next_conn;	/* conn_number's, if it gets one */
	c->round = atomic_load(&ps->round_no);
	listener_round(l, c->round);
	c->rconn = l->rconns++;
	c->cep = (struct ep){ EP_CLIENT, c, fd, 0 };
	c->uep = (struct ep){ EP_UPSTREAM, c, -1, 0 };
	c->state = CS_IDLE;
	/*
	 * A turn with two connections open at once at a scheduled proxy (a
	 * turn of threads, a pool) can send on either first: which, the
	 * schedule does not decide.  Their exchanges say so from now on
	 * ("overlap"); a `psql -c` per statement opens one at a time.
	 */
	for (d = l->gate != NULL && l->svc < 0 ? ps->conns : NULL; d != NULL;
	    d = d->next)
		if (d->l == l && d->round == c->round && conn_still_open(d)) {
			c->overlap = d->overlap = true;
			if (d->in_exchange)
				d->rec.overlap = true;
		}
	GATE_ENT_INIT(&c->gent);
	c->served = -1;
	c->peer_port = peer_port;
	c->next = ps->conns;
	if (ps->conns)
		ps->conns->prev = c;
	ps->conns = c;
	if (l->planned ? plan_blackhole(l, c->round, c->rconn) :
	    proxy_roll_blackhole(&l->faults, ps->seed, l->name, l->turn, c->no)) {
		conn_number(c);
		memset(&c->rec, 0, sizeof(c->rec));
		c->rec.proxy = l->proxy;
		c->rec.name = l->name;
		c->rec.turn = l->turn;
		c->rec.service = l->service;
		c->rec.conn = c->no;
		c->rec.round = c->round;
		c->rec.keyed = true;	/* key 0, occ: the round's connection */
		c->rec.occ = c->rconn;
		c->rec.fault = PROXY_FAULT_BLACKHOLE;
		c->in_exchange = true;	/* one record, written at close */
		if (!px_conn_holds_live(l))
			ps->live++;	/* until exchange_end, at its close */
		set_state(c, CS_BLACKHOLE);
	}
	conn_arm(c);
	return c;
}
