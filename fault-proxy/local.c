/*
 * An upstream answered inside the proxy (engine_int.h, struct local): the
 * model stand-in (docs/models.md).  A connection to a listener with a
 * model "dials" a socketpair instead of a socket, and this side of it
 * reads each whole request and writes the reply the script gives, paced
 * between a stream's events.  Everything between the client and this side
 * -- the framing, the trace, lost_reply, reset, duplicate, latency, the
 * stream faults, a schedule -- is conn.c's and dup.c's, as for any
 * upstream.
 *
 * Which exchange a request is comes from the connection whose upstream it
 * is (its trace record: round, key, occurrence): the connection forwards
 * one exchange at a time, so the request this side has whole is that
 * connection's current one.  A duplicate's delivery carries a copy.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
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
 * The reply to one whole request (msg, len): into lo->out.  Never a
 * made-up answer: a request the script has no pattern for, or that is no
 * model request, gets an error in the API's shape saying so.
 */
static void
local_answer(struct local *lo, const char *msg, size_t len)
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

/* Interest: a reply being written waits for room or its pace; else read. */
static void
local_arm(struct local *lo)
{
	uint32_t	want = 0;

	if (lo->piece < lo->out.n) {
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
	int64_t	pace = lo->l->model->pace_ms;
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
	if (lo->closing)
		(void)shutdown(lo->ep.fd, SHUT_WR);	/* Connection: close */
	return 0;
}

/* Frames what was read; answers a whole request.  -1: freed. */
static int
local_frame(struct local *lo)
{
	size_t	used;

	while (lo->piece >= lo->out.n && !lo->closing && lo->framed < lo->in_len) {
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
		local_answer(lo, lo->in, lo->framed);
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
