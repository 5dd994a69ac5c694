/*
 * An upstream answered inside the proxy (engine_int.h, struct local), for
 * a model API (docs/models.md).  A connection to such a listener "dials"
 * a socketpair instead of a socket, and this side of it reads each whole
 * request and answers it one of three ways:
 *  - the stand-in (model:): the reply its script gives, paced between a
 *    stream's events;
 *  - replay: the reply its cassette holds for the request's key, one of
 *    several by seed; a request it has none for gets an error, and the
 *    set remembers the miss (the seed is infra/cassette);
 *  - a bridge (record, or TLS): the request carried to the real API by
 *    bridge.c, its reply relayed as it comes and, recording, kept.
 * Everything between the client and this side -- the framing, the trace,
 * lost_reply, reset, duplicate, latency, the stream faults, a schedule --
 * is conn.c's and dup.c's, as for any upstream.
 *
 * Which exchange a request is comes from the connection whose upstream it
 * is (its trace record: round, key, occurrence): the connection forwards
 * one exchange at a time, so the request this side has whole is that
 * connection's current one.  A duplicate's delivery carries a copy.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/cassette.h"
#include "fault-proxy/engine_int.h"
#include "fault-proxy/model.h"

/* A request's head and body, whole: what one exchange may hold. */
#define LOCAL_IN_CAP	(PROXY_HDR_CAP + MODEL_BODY_CAP)

void
px_local_free(struct local *lo)
{
	struct proxy_set	*ps;

	if (lo == NULL)
		return;
	ps = lo->l->ps;
	if (lo->c != NULL)
		lo->c->local = NULL;
	if (lo->bridge != NULL) {
		px_ep_set(ps->epfd, &lo->bep, 0);	/* the bridge's fd */
		px_bridge_free(lo->bridge);
	}
	free(lo->bmethod);
	free(lo->bpath);
	free(lo->bwhat);
	free(lo->breq);
	px_ep_close(ps->epfd, &lo->ep, false);
	if (lo->prev)
		lo->prev->next = lo->next;
	else
		ps->locals = lo->next;
	if (lo->next)
		lo->next->prev = lo->prev;
	http_frame_free(&lo->req);
	model_out_free(&lo->out);
	free(lo->in);
	free(lo);
	px_live_release(ps);
}

void
px_local_detach(struct conn *c)
{
	if (c->local != NULL) {
		c->local->c = NULL;
		c->local = NULL;
	}
}

int
px_local_pair(struct listener *l, struct conn *c,
    const struct proxy_trace_rec *dup_of)
{
	struct proxy_set	*ps = l->ps;
	struct local		*lo;
	int			 sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1) {
		log_warn("%s/%d: socketpair for the model stand-in", l->name,
		    l->turn);
		return -1;
	}
	lo = xcalloc(1, sizeof(*lo));
	ps->live++;
	lo->l = l;
	lo->ep = (struct ep){ EP_LOCAL, lo, sv[1], 0 };
	lo->bep = (struct ep){ EP_BRIDGE, lo, -1, 0 };
	if (c != NULL) {
		lo->c = c;
		c->local = lo;
	} else if (dup_of != NULL) {
		lo->round = dup_of->round;
		lo->key = dup_of->key;
		lo->occ = dup_of->occ;
		lo->keyed = dup_of->keyed;
	}
	http_frame_init(&lo->req, false, false);
	lo->next = ps->locals;
	if (ps->locals)
		ps->locals->prev = lo;
	ps->locals = lo;
	px_ep_set(ps->epfd, &lo->ep, EPOLLIN);
	return sv[0];
}

/* The plan's reply for the exchange (docs/plan.md), 0 where it has none. */
static size_t
plan_reply(const struct listener *l, int round, uint64_t key, uint32_t occ)
{
	const struct plan_proxy	*x = l->plan;
	size_t			 i;

	for (i = 0; x != NULL && i < x->nfaults; i++)
		if (x->faults[i].fault != PLAN_BLACKHOLE &&
		    x->faults[i].round == round && x->faults[i].turn == l->turn &&
		    x->faults[i].key == key && x->faults[i].occ == occ)
			return x->faults[i].reply;
	return 0;
}

static void
local_error(struct local *lo, enum model_api api, int status,
    const char *type, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int	local_frame(struct local *);
static void	local_arm(struct local *);

/* An error in the API's shape; the trace says what the stand-in met. */
static void
local_error(struct local *lo, enum model_api api, int status,
    const char *type, const char *fmt, ...)
{
	char	msg[1024];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	utf8_scrub(msg, strlen(msg));
	model_render_error(api, status, type, msg, 0, &lo->out);
}

/*
 * The stand-in's reply to one whole request (msg, len): into lo->out.
 * Never a made-up answer: a request the script has no pattern for, or
 * that is no model request, gets an error in the API's shape saying so.
 */
static void
model_answer(struct local *lo, const char *msg, size_t len)
{
	struct listener		*l = lo->l;
	struct proxy_trace_rec	*rec = NULL;
	const struct model_script *s = l->model;
	struct model_http	 h;
	struct model_req	 r;
	struct model_id		 id;
	enum model_api		 api = MODEL_API_OPENAI;
	char			 err[ERR_LEN], what[MODEL_WHAT_LEN];
	char			*cap[MODEL_CAPTURES] = { 0 };
	uint64_t		 draw;
	size_t			 alt;
	int			 p;

	if (lo->c != NULL && lo->c->in_exchange)
		rec = &lo->c->rec;
	memset(&r, 0, sizeof(r));
	if (model_http_parse(msg, len, &h, err) == -1) {
		local_error(lo, api, 400, "invalid_request_error", "soak's model "
		    "stand-in (proxy %s): %s", l->name, err);
		lo->closing = true;
		return;
	}
	lo->closing = h.close;
	if (strcmp(h.method, "POST") != 0 || model_api_of(h.path, &api) == -1) {
		local_error(lo, api, 404, "not_found_error", "soak's model "
		    "stand-in (proxy %s) answers POST .../chat/completions "
		    "(OpenAI) and POST /v1/messages (Anthropic), not %s %s",
		    l->name, h.method, h.path);
		if (rec != NULL)
			rec->model = "(not a model request)";
		goto out;
	}
	if (model_req_parse(api, h.body, h.body_len, &r, err) == -1) {
		local_error(lo, api, 400, "invalid_request_error", "soak's model "
		    "stand-in (proxy %s): %s", l->name, err);
		if (rec != NULL)
			rec->model = "(not a model request)";
		goto out;
	}
	if ((p = model_match(s, &r, l->turn, cap)) == -1) {
		model_req_what(&r, what, sizeof(what));
		if (!l->model_warned)
			log_warnx("%s/%d: no pattern of %s answers a request (%s); "
			    "the turn gets an error (said once a listener)",
			    l->name, l->turn, s->path, what);
		l->model_warned = true;
		local_error(lo, api, 400, "invalid_request_error", "soak's model "
		    "stand-in (proxy %s): no pattern of %s answers this request "
		    "(%s)", l->name, s->path, what);
		if (rec != NULL)
			rec->model = "(no pattern)";
		goto out;
	}
	id = (struct model_id){ .seed = l->ps->seed, .proxy = l->name,
	    .round = rec ? rec->round : lo->round, .turn = l->turn,
	    .key = rec ? rec->key : lo->key, .occ = rec ? rec->occ : lo->occ };
	draw = model_draw(&id);
	alt = l->planned ? plan_reply(l, id.round, id.key, id.occ) :
	    model_pick(&s->pats[p], draw);
	if (alt >= s->pats[p].nalts) {
		log_warnx("%s/%d: the plan's reply %zu to round %d, occurrence "
		    "%" PRIu32 " is not an alternative of \"%s\" (it has %zu); "
		    "the first", l->name, l->turn, alt, id.round, id.occ,
		    s->pats[p].name, s->pats[p].nalts);
		alt = 0;
	}
	model_render(&s->pats[p], alt, &r, cap, draw, &lo->out);
	if (rec != NULL) {
		rec->model = s->pats[p].name;
		rec->alt = (uint32_t)alt;
		rec->has_alt = true;
		rec->events = (uint32_t)lo->out.events;
	}
	log_debug("%s/%d: %s: pattern \"%s\", reply %zu of %zu%s", l->name,
	    l->turn, h.path, s->pats[p].name, alt, s->pats[p].nalts,
	    r.stream ? ", streamed" : "");
out:
	model_captures_free(cap);
	model_req_free(&r);
	model_http_free(&h);
}

/* The exchange a request is, and its trace record (NULL: a duplicate's). */
static struct proxy_trace_rec *
local_id(struct local *lo, struct model_id *id)
{
	struct proxy_trace_rec	*rec = NULL;

	if (lo->c != NULL && lo->c->in_exchange)
		rec = &lo->c->rec;
	*id = (struct model_id){ .seed = lo->l->ps->seed, .proxy = lo->l->name,
	    .round = rec ? rec->round : lo->round, .turn = lo->l->turn,
	    .key = rec ? rec->key : lo->key, .occ = rec ? rec->occ : lo->occ };
	return rec;
}

/* For people: "POST /v1/chat/completions (step 1, after 1 tool result ...)". */
static void
request_what(const struct model_http *h, char *buf, size_t len)
{
	struct model_req	r;
	enum model_api		api;
	char			err[ERR_LEN], what[MODEL_WHAT_LEN];

	if (model_api_of(h->path, &api) == 0 &&
	    model_req_parse(api, h->body, h->body_len, &r, err) == 0) {
		model_req_what(&r, what, sizeof(what));
		model_req_free(&r);
		snprintf(buf, len, "%s %s (%s)", h->method, h->path, what);
	} else
		snprintf(buf, len, "%s %s", h->method, h->path);
}

/*
 * A cassette's reply to one whole request: the one of its key's replies
 * the seed (or the plan) picks.  A request it has no answer for is never
 * passed on: the client gets an error, and the set remembers the first
 * such miss for the seed's verdict (infra/cassette).
 */
static void
replay_answer(struct local *lo, const char *msg, size_t len)
{
	struct listener			*l = lo->l;
	struct proxy_set		*ps = l->ps;
	struct proxy_trace_rec		*rec;
	const struct cassette_entry	*e;
	struct model_http		 h;
	struct model_id			 id;
	enum model_api			 api = MODEL_API_OPENAI;
	char				 err[ERR_LEN], what[MODEL_WHAT_LEN + 600];
	uint64_t			 key;
	size_t				 alt;

	rec = local_id(lo, &id);
	if (model_http_parse(msg, len, &h, err) == -1) {
		local_error(lo, api, 400, "invalid_request_error", "soak's "
		    "replay (proxy %s): %s", l->name, err);
		lo->closing = true;
		return;
	}
	lo->closing = h.close;
	(void)model_api_of(h.path, &api);
	key = cassette_key(h.method, h.path, h.body, h.body_len);
	if ((e = cassette_find(l->cassette, key)) == NULL) {
		request_what(&h, what, sizeof(what));
		local_error(lo, api, 404, "not_found_error", "soak's replay "
		    "(proxy %s): the cassette %s has no answer for %s, key %016"
		    PRIx64, l->name, l->cassette->path, what, key);
		/* the lowest turn's: which turn missed first is timing */
		pthread_mutex_lock(&ps->mu);
		if (ps->missed[0] == '\0' || l->turn < ps->missed_turn) {
			ps->missed_turn = l->turn;
			snprintf(ps->missed, sizeof(ps->missed), "proxy %s, turn %d: "
			    "the cassette %s has no answer for %s (key %016" PRIx64
			    "); record it again, or replay what it holds", l->name,
			    l->turn, l->cassette->path, what, key);
		}
		pthread_mutex_unlock(&ps->mu);
		if (rec != NULL)
			rec->model = "(cassette miss)";
		model_http_free(&h);
		return;
	}
	alt = l->planned ? plan_reply(l, id.round, id.key, id.occ) :
	    model_pick_among(model_draw(&id), e->n);
	if (alt >= e->n) {
		log_warnx("%s/%d: the plan's reply %zu is not one of the %zu the "
		    "cassette keeps for key %016" PRIx64 "; the first", l->name,
		    l->turn, alt, e->n, key);
		alt = 0;
	}
	cassette_render(&e->r[alt], &lo->out);
	if (rec != NULL) {
		rec->model = "(cassette)";
		rec->has_alt = true;
		rec->alt = (uint32_t)alt;
		rec->events = (uint32_t)lo->out.events;
	}
	model_http_free(&h);
}

/*
 * A request for the real upstream: handed to a bridge (its own thread),
 * which writes the reply to the client as it comes; this side waits for
 * its end (EP_BRIDGE), reading nothing meanwhile.
 */
static void
bridge_answer(struct local *lo, const char *msg, size_t len)
{
	struct listener		*l = lo->l;
	struct proxy_trace_rec	*rec;
	struct model_http	 h;
	struct model_id		 id;
	enum model_api		 api = MODEL_API_OPENAI;
	const char		*sp1, *sp2, *hend;
	char			 err[ERR_LEN], what[MODEL_WHAT_LEN + 600], *target;
	json_t			*j;

	rec = local_id(lo, &id);
	if (model_http_parse(msg, len, &h, err) == -1) {
		local_error(lo, api, 400, "invalid_request_error", "soak's "
		    "proxy %s: %s", l->name, err);
		lo->closing = true;
		return;
	}
	lo->closing = h.close;
	(void)model_api_of(h.path, &api);
	/* the request's own target, query and all, for the upstream */
	sp1 = memchr(msg, ' ', len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - msg)) : NULL;
	hend = memmem(msg, len, "\r\n\r\n", 4);
	target = sp1 && sp2 ? strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1)) :
	    xstrdup(h.path);
	lo->bridge = px_bridge_start(l->bridge, msg, hend ? (size_t)(hend - msg) :
	    len, h.method, target, h.body, h.body_len, lo->ep.fd, err);
	free(target);
	if (lo->bridge == NULL) {
		local_error(lo, api, 502, "api_error", "soak's proxy %s: %s",
		    l->name, err);
		model_http_free(&h);
		return;
	}
	lo->bep.fd = px_bridge_fd(lo->bridge);
	px_ep_set(l->ps->epfd, &lo->bep, EPOLLIN);
	lo->bkey = cassette_key(h.method, h.path, h.body, h.body_len);
	lo->bmethod = xstrdup(h.method);
	lo->bpath = xstrdup(h.path);
	request_what(&h, what, sizeof(what));
	lo->bwhat = xstrdup(what);
	lo->breq = h.body;
	lo->breq_len = h.body_len;
	h.body = NULL;
	j = json_loadb(lo->breq, lo->breq_len, 0, NULL);
	lo->bstream = json_is_true(json_object_get(j, "stream"));
	json_decref(j);
	if (rec != NULL && l->bridge->record)
		rec->model = "(recorded)";
	model_http_free(&h);
}

/* The key's text replaced in body (a reply that echoes it is kept without). */
static void
unkey(char *body, size_t len, const char *key)
{
	size_t	k = key ? strlen(key) : 0;
	char	*p = body, *end = body + len;

	if (k < 8)
		return;
	while ((p = memmem(p, (size_t)(end - p), key, k)) != NULL) {
		memset(p, '*', k);
		p += k;
	}
}

void
px_local_bridged(struct local *lo)
{
	struct listener		*l = lo->l;
	struct bridge_out	 o;
	enum model_api		 api = MODEL_API_OPENAI;
	char			*line;

	px_ep_set(l->ps->epfd, &lo->bep, 0);
	px_bridge_finish(lo->bridge, &o);
	px_bridge_free(lo->bridge);
	lo->bridge = NULL;
	lo->bep.fd = -1;
	(void)model_api_of(lo->bpath ? lo->bpath : "", &api);
	if (o.ok && l->bridge->record && o.body != NULL) {
		unkey(o.body, o.len, l->bridge->key);
		line = cassette_line(lo->bkey, lo->bmethod, lo->bpath, lo->bwhat,
		    lo->breq, lo->breq_len, (int)o.status, o.ctype, o.body, o.len);
		if (line == NULL)
			log_warnx("%s/%d: a reply to %s is not UTF-8 text: not "
			    "recorded", l->name, l->turn, lo->bwhat);
		else {
			l->tape = xreallocarray(l->tape, l->ntape + 1,
			    sizeof(*l->tape));
			l->tape[l->ntape++] = line;
		}
	} else if (!o.ok && !o.client_gone) {
		log_warnx("%s/%d: the upstream %s failed on %s: %s", l->name,
		    l->turn, l->bridge->base, lo->bwhat ? lo->bwhat : "a request",
		    o.err[0] ? o.err : "the reply did not end");
		if (!o.head_sent)
			local_error(lo, api, 502, "api_error", "soak's proxy %s: "
			    "the upstream %s failed: %s", l->name, l->bridge->base,
			    o.err[0] ? o.err : "no reply");
		else
			lo->closing = true;	/* a reply cut short stays cut */
	}
	free(o.body);
	free(lo->bmethod);
	free(lo->bpath);
	free(lo->bwhat);
	free(lo->breq);
	lo->bmethod = lo->bpath = lo->bwhat = lo->breq = NULL;
	if (local_frame(lo) == -1)
		return;
	local_arm(lo);
}

/* Interest: a reply being written waits for room or its pace; a bridge
 * writes by itself; else read. */
static void
local_arm(struct local *lo)
{
	uint32_t	want = 0;

	if (lo->bridge != NULL)
		want = 0;
	else if (lo->piece < lo->out.n) {
		if (lo->wblocked)
			want = EPOLLOUT;
	} else
		want = EPOLLIN;		/* a request, or the other side's close */
	px_ep_set(lo->l->ps->epfd, &lo->ep, want);
}

/* Writes what may go now.  -1: freed. */
static int
local_write(struct local *lo)
{
	int64_t	pace = lo->l->model ? lo->l->model->pace_ms : 0;
	ssize_t	n;

	while (lo->piece < lo->out.n) {
		if (lo->next_at != 0 && now_ms() < lo->next_at)
			return 0;
		lo->next_at = 0;
		n = send(lo->ep.fd, lo->out.piece[lo->piece] + lo->off,
		    lo->out.len[lo->piece] - lo->off, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			lo->wblocked = true;
			return 0;
		}
		if (n <= 0) {
			px_local_free(lo);	/* the connection went */
			return -1;
		}
		lo->off += (size_t)n;
		if (lo->off < lo->out.len[lo->piece])
			continue;
		lo->off = 0;
		/* between a stream's events, not after its head or last one */
		if (++lo->piece >= 2 && pace > 0 && lo->piece + 1 < lo->out.n)
			lo->next_at = now_ms() + pace;
	}
	model_out_free(&lo->out);
	lo->piece = 0;
	if (lo->closing && lo->bridge == NULL)
		(void)shutdown(lo->ep.fd, SHUT_WR);	/* Connection: close */
	return 0;
}

/* Frames what was read; answers a whole request.  -1: freed. */
static int
local_frame(struct local *lo)
{
	size_t	used;

	while (lo->piece >= lo->out.n && !lo->closing && lo->bridge == NULL &&
	    lo->framed < lo->in_len) {
		used = http_feed(&lo->req, lo->in + lo->framed,
		    lo->in_len - lo->framed);
		lo->framed += used;
		if (lo->req.state == HF_ERROR) {
			local_error(lo, MODEL_API_OPENAI, 400,
			    "invalid_request_error", "soak's model stand-in "
			    "(proxy %s): not an HTTP/1.1 request", lo->l->name);
			lo->closing = true;
			break;
		}
		if (lo->req.state != HF_DONE)
			break;
		if (lo->l->cassette != NULL)
			replay_answer(lo, lo->in, lo->framed);
		else if (lo->l->bridge != NULL)
			bridge_answer(lo, lo->in, lo->framed);
		else
			model_answer(lo, lo->in, lo->framed);
		memmove(lo->in, lo->in + lo->framed, lo->in_len - lo->framed);
		lo->in_len -= lo->framed;
		lo->framed = 0;
		http_frame_free(&lo->req);
		http_frame_init(&lo->req, false, false);
	}
	return local_write(lo);
}

void
px_local_event(struct local *lo, uint32_t ev)
{
	ssize_t	n;

	if (lo->bridge != NULL)
		return;		/* its thread has the socket */
	if (ev & EPOLLOUT)
		lo->wblocked = false;
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && lo->closing &&
	    lo->piece >= lo->out.n) {
		/* answered and closing: what comes now is thrown away */
		n = recv(lo->ep.fd, lo->l->ps->scratch, sizeof(lo->l->ps->scratch), 0);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			px_local_free(lo);
		return;
	}
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && lo->piece >= lo->out.n) {
		if (lo->in_len == lo->in_cap) {
			if (lo->in_cap >= LOCAL_IN_CAP) {
				local_error(lo, MODEL_API_OPENAI, 413,
				    "invalid_request_error", "soak's model "
				    "stand-in (proxy %s): a request over %d bytes",
				    lo->l->name, LOCAL_IN_CAP);
				lo->closing = true;
				goto write;
			}
			lo->in_cap = lo->in_cap ? lo->in_cap * 2 : 16384;
			if (lo->in_cap > LOCAL_IN_CAP)
				lo->in_cap = LOCAL_IN_CAP;
			lo->in = xreallocarray(lo->in, lo->in_cap, 1);
		}
		n = recv(lo->ep.fd, lo->in + lo->in_len, lo->in_cap - lo->in_len, 0);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			goto write;
		if (n <= 0) {
			px_local_free(lo);	/* the client side closed */
			return;
		}
		lo->in_len += (size_t)n;
	}
write:
	if (local_frame(lo) == -1)
		return;
	local_arm(lo);
}

void
px_local_timer(struct local *lo)
{
	lo->next_at = 0;
	if (local_frame(lo) == -1)
		return;
	local_arm(lo);
}
