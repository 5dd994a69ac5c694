#include "coordinator/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "common/log.h"
#include "common/queue.h"
#include "common/util.h"

enum slot_state { SLOT_RECV, SLOT_READY, SLOT_PARKED, SLOT_SEND, SLOT_CLOSED };

struct slot {
	struct server	*srv;
	int		 idx;
	nng_ctx		 ctx;
	nng_aio		*aio;
	enum slot_state	 state;
	uint32_t	 worker;	/* parked: whose lease request */
	uint32_t	 pipe;
};

enum ev_kind { EV_MSG, EV_PIPE_GONE };

struct event {
	enum ev_kind	kind;
	int		slot;
	uint32_t	pipe;
};

struct server {
	nng_socket	 sock;
	nng_listener	 listener;
	struct slot	*slots;
	int		 nslots;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct queue	 q;		/* pending events, under mu */
	int		 closing;
	char		*url;		/* as bound: tcp port 0 resolved */
};

static void
push_event(struct server *s, struct event ev)
{
	pthread_mutex_lock(&s->mu);
	queue_push(&s->q, &ev);
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* nng thread: one aio per slot, used for recv and send in turn. */
static void
slot_cb(void *arg)
{
	struct slot	*sl = arg;
	int		 rv = nng_aio_result(sl->aio);

	if (sl->state == SLOT_SEND) {
		if (rv != 0)
			nng_msg_free(nng_aio_get_msg(sl->aio));
		if (rv == NNG_ECLOSED || sl->srv->closing) {
			sl->state = SLOT_CLOSED;
			return;
		}
		sl->state = SLOT_RECV;
		nng_ctx_recv(sl->ctx, sl->aio);
		return;
	}
	if (rv == NNG_ECLOSED || sl->srv->closing) {
		sl->state = SLOT_CLOSED;
		return;
	}
	if (rv != 0) {
		nng_ctx_recv(sl->ctx, sl->aio);
		return;
	}
	sl->state = SLOT_READY;
	push_event(sl->srv, (struct event){ .kind = EV_MSG, .slot = sl->idx });
}

static void
pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void)ev;
	push_event(arg, (struct event){ .kind = EV_PIPE_GONE,
	    .pipe = (uint32_t)nng_pipe_id(p) });
}

struct server *
server_open(const char *url, int nslots, char *err)
{
	struct server	*s = xcalloc(1, sizeof(*s));
	int		 rv, i;

	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	queue_init(&s->q, sizeof(struct event));
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		errf(err, "cannot open the coordinator socket: %s", nng_strerror(rv));
		free(s);
		return NULL;
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, MSG_MAX);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_cb, s);
	if ((rv = nng_listen(s->sock, url, &s->listener, 0)) != 0) {
		errf(err, "cannot listen on %s: %s", url, nng_strerror(rv));
		nng_close(s->sock);
		free(s);
		return NULL;
	}
	s->url = xstrdup(url);
	if (strncmp(url, "tcp://", 6) == 0 || strncmp(url, "tls+tcp://", 10) == 0) {
		int		 port = 0;
		const char	*colon = strrchr(url, ':');

		if (nng_listener_get_int(s->listener, NNG_OPT_TCP_BOUND_PORT, &port) == 0 &&
		    colon && strcmp(colon, ":0") == 0) {
			free(s->url);
			s->url = xasprintf("%.*s:%d", (int)(colon - url), url, port);
		}
	}
	s->nslots = nslots;
	s->slots = xcalloc(nslots, sizeof(struct slot));
	for (i = 0; i < nslots; i++) {
		struct slot	*sl = &s->slots[i];

		sl->srv = s;
		sl->idx = i;
		if ((rv = nng_ctx_open(&sl->ctx, s->sock)) != 0 ||
		    (rv = nng_aio_alloc(&sl->aio, slot_cb, sl)) != 0)
			fatalx("nng: %s", nng_strerror(rv));
		sl->state = SLOT_RECV;
		nng_ctx_recv(sl->ctx, sl->aio);
	}
	return s;
}

const char *
server_url(const struct server *s)
{
	return s->url;
}

void
server_close(struct server *s)
{
	int	i;

	if (s == NULL)
		return;
	s->closing = 1;
	for (i = 0; i < s->nslots; i++)
		nng_aio_stop(s->slots[i].aio);
	for (i = 0; i < s->nslots; i++) {
		if (s->slots[i].state == SLOT_READY || s->slots[i].state == SLOT_PARKED)
			nng_msg_free(nng_aio_get_msg(s->slots[i].aio));
		nng_aio_free(s->slots[i].aio);
		nng_ctx_close(s->slots[i].ctx);
	}
	nng_close(s->sock);
	free(s->url);
	free(s->slots);
	queue_free(&s->q);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

static void
slot_send(struct slot *sl, struct msg *rep)
{
	char	 err[ERR_LEN];
	uint8_t	*buf;
	size_t	 len;
	nng_msg	*nm;

	if (msg_encode(rep, &buf, &len, err) == -1) {
		log_warnx("cannot encode %s: %s", msg_type_name(rep->type), err);
		msg_clear(rep);
		rep->type = MSG_NACK;
		rep->u.ack.text = xstrdup("coordinator could not encode its reply");
		if (msg_encode(rep, &buf, &len, err) == -1)
			fatalx("%s", err);
	}
	msg_clear(rep);
	if (nng_msg_alloc(&nm, len) != 0)
		fatalx("nng_msg_alloc: out of memory");
	memcpy(nng_msg_body(nm), buf, len);
	free(buf);
	sl->state = SLOT_SEND;
	nng_aio_set_msg(sl->aio, nm);
	nng_ctx_send(sl->ctx, sl->aio);
}

static void
handle_slot(struct server *s, struct coord *c, struct slot *sl)
{
	nng_msg		*nm = nng_aio_get_msg(sl->aio);
	struct msg	 req, rep;
	char		 err[ERR_LEN];
	uint32_t	 pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(nm));
	int		 r;

	(void)s;
	r = msg_decode(nng_msg_body(nm), nng_msg_len(nm), &req, err);
	nng_msg_free(nm);
	nng_aio_set_msg(sl->aio, NULL);
	if (r == -1) {
		/* Never trusted, always answered: the peer learns why. */
		log_warnx("rejected a message from pipe %u: %s", pipe, err);
		memset(&rep, 0, sizeof(rep));
		rep.type = MSG_NACK;
		rep.u.ack.text = xasprintf("rejected: %s", err);
		slot_send(sl, &rep);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	if (coord_handle(c, &req, pipe, now_ms(), &rep)) {
		msg_clear(&req);
		slot_send(sl, &rep);
		return;
	}
	sl->state = SLOT_PARKED;
	sl->worker = req.u.lease_req.worker_id;
	sl->pipe = pipe;
	msg_clear(&req);
}

/* Parked lease requests get served, in slot order, whenever work appears. */
static void
serve_parked(struct server *s, struct coord *c)
{
	struct msg	rep;
	int		i;

	for (i = 0; i < s->nslots; i++) {
		struct slot	*sl = &s->slots[i];

		if (sl->state != SLOT_PARKED)
			continue;
		memset(&rep, 0, sizeof(rep));
		if (coord_serve(c, sl->worker, now_ms(), &rep))
			slot_send(sl, &rep);
	}
}

/* Drops parked requests of a pipe that closed; their worker is gone. */
static void
forget_pipe(struct server *s, uint32_t pipe)
{
	int	i;

	for (i = 0; i < s->nslots; i++) {
		struct slot	*sl = &s->slots[i];

		if (sl->state == SLOT_PARKED && sl->pipe == pipe) {
			sl->state = SLOT_RECV;
			nng_ctx_recv(sl->ctx, sl->aio);
		}
	}
}

static int
wait_event(struct server *s, int timeout_ms, struct event *ev)
{
	struct timespec	ts;
	int		got = 0;

	pthread_mutex_lock(&s->mu);
	if (s->q.len == 0 && timeout_ms > 0) {
		abstime_in(&ts, timeout_ms);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	got = queue_pop(&s->q, ev);
	pthread_mutex_unlock(&s->mu);
	return got;
}

static void
dispatch(struct server *s, struct coord *c, const struct event *ev)
{
	if (ev->kind == EV_MSG)
		handle_slot(s, c, &s->slots[ev->slot]);
	else {
		forget_pipe(s, ev->pipe);
		coord_pipe_closed(c, ev->pipe, now_ms());
	}
	serve_parked(s, c);
}

int
server_run(struct server *s, struct coord *c, volatile int *stop, int tick_ms,
    int (*tick)(void *), void *arg)
{
	struct event	ev;
	int64_t		next_tick = now_ms() + tick_ms, wait, until;

	while (!coord_finished(c) && !*stop) {
		until = coord_tick(c, now_ms());
		serve_parked(s, c);
		wait = next_tick - now_ms();
		if (until >= 0 && until < wait)
			wait = until;
		if (wait < 1)
			wait = 1;
		if (wait_event(s, (int)wait, &ev))
			dispatch(s, c, &ev);
		if (now_ms() >= next_tick) {
			next_tick = now_ms() + tick_ms;
			if (tick && tick(arg))
				break;
		}
	}
	serve_parked(s, c);
	return 0;
}

void
server_drain(struct server *s, struct coord *c, int grace_ms, volatile int *stop)
{
	struct event	ev;
	int64_t		deadline = now_ms() + grace_ms;

	serve_parked(s, c);
	while (coord_live_workers(c) > 0 && now_ms() < deadline && !*stop) {
		if (wait_event(s, 50, &ev))
			dispatch(s, c, &ev);
	}
}
