#include "coordinator/server.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "common/log.h"
#include "common/queue.h"
#include "common/tlsconf.h"
#include "common/util.h"
#include "common/fdtab.h"
#include "coordinator/peer.h"

_Static_assert(AUTH_TRAILER_LEN + 4 <= MSG_COORD_RECV_MAX - MSG_RESULT_MAX,
    "the receive cap's headroom holds a session trailer and the request id");

/*
 * A slot's life: RECV (listening) -> READY (a request arrived, nng's
 * thread) -> SEND (the reply on its way) or PARKED (a lease request
 * waiting for work, the loop's) -> SEND -> RECV again; CLOSED once the
 * socket closes.  Every change goes through slot_set.
 */
enum slot_state { SLOT_RECV, SLOT_READY, SLOT_PARKED, SLOT_SEND, SLOT_CLOSED,
	SLOT_NSTATES };

static const char *const slot_state_names[SLOT_NSTATES] = {
	[SLOT_RECV] = "recv", [SLOT_READY] = "ready", [SLOT_PARKED] = "parked",
	[SLOT_SEND] = "send", [SLOT_CLOSED] = "closed",
};

struct slot {
	struct server	*srv;
	int		 idx;
	nng_ctx		 ctx;
	nng_aio		*aio;
	enum slot_state	 state;
	uint32_t	 worker;	/* parked: whose lease request */
	uint32_t	 pipe;		/* whose request this slot answers */
	uint64_t	 seq;		/* the request's, for the reply's seal */
};

/*
 * What nng's threads tell the loop.  EV_MSG: a slot received a request.
 * EV_SENT: a slot's reply was handed to its pipe (rv 0), or not
 * (NNG_ETIMEDOUT: the peer did not read within PEER_SEND_MS).
 * EV_PIPE_NEW: a connection was admitted (peers_admit), before any of its
 * messages.  EV_EVICTED: an unauthenticated one lost its place to a
 * newcomer, and its socket was shut.  EV_PIPE_GONE: it closed.
 */
enum ev_kind { EV_MSG, EV_SENT, EV_PIPE_NEW, EV_EVICTED, EV_PIPE_GONE };

struct event {
	enum ev_kind	kind;
	int		slot;
	int		rv;		/* EV_SENT */
	uint32_t	pipe;
	int64_t		at;		/* EV_PIPE_NEW: when admitted */
	int		fd;		/* EV_PIPE_NEW: its socket, or -1 */
	char		addr[64];	/* EV_PIPE_NEW */
	char		host[48];
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
	struct peers	*peers;		/* every connection's state (peer.h) */
	int64_t		 next_expiry;	/* the first time to authenticate that
					   may be up; -1: none */
	int		 nparked;	/* slots in SLOT_PARKED (the loop's) */
};

static void
push_event(struct server *s, struct event ev)
{
	pthread_mutex_lock(&s->mu);
	queue_push(&s->q, &ev);
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/*
 * The one place a slot changes state, logged with -v, and with the count
 * of parked slots kept: only the loop's thread parks a slot or takes it
 * out of PARKED (nng's thread moves RECV and SEND slots only).
 */
static void
slot_set(struct slot *sl, enum slot_state st)
{
	log_debug("slot %d: %s -> %s", sl->idx, slot_state_names[sl->state],
	    slot_state_names[st]);
	if (sl->state == SLOT_PARKED)
		sl->srv->nparked--;
	if (st == SLOT_PARKED)
		sl->srv->nparked++;
	sl->state = st;
}

/*
 * nng thread: one aio per slot, used for recv and send in turn.  A send's
 * end goes to the loop (EV_SENT), which counts the reply as answered and
 * sets the slot listening again.
 */
static void
slot_cb(void *arg)
{
	struct slot	*sl = arg;
	int		 rv = nng_aio_result(sl->aio);

	if (sl->state == SLOT_SEND) {
		if (rv != 0) {
			nng_msg_free(nng_aio_get_msg(sl->aio));
			nng_aio_set_msg(sl->aio, NULL);
		}
		if (rv == NNG_ECLOSED || sl->srv->closing) {
			slot_set(sl, SLOT_CLOSED);
			return;
		}
		push_event(sl->srv, (struct event){ .kind = EV_SENT, .slot = sl->idx,
		    .rv = rv });
		return;
	}
	if (rv == NNG_ECLOSED || sl->srv->closing) {
		slot_set(sl, SLOT_CLOSED);
		return;
	}
	if (rv != 0) {
		nng_ctx_recv(sl->ctx, sl->aio);
		return;
	}
	/* At once, on nng's thread: the loop may be behind a flood's events,
	 * and the pool must know this connection is moving (peer.h). */
	peers_heard(sl->srv->peers, (uint32_t)nng_pipe_id(nng_msg_get_pipe(
	    nng_aio_get_msg(sl->aio))), now_ms());
	slot_set(sl, SLOT_READY);
	push_event(sl->srv, (struct event){ .kind = EV_MSG, .slot = sl->idx });
}

/*
 * The remote address of a pipe: addr for logs ("10.0.0.7:50122"), host
 * for the limiter (the IP; "" for local transports, which it leaves be).
 * -1 when the pipe is already gone.
 */
static int
pipe_addr(nng_pipe p, char *addr, size_t asz, char *host, size_t hsz)
{
	nng_sockaddr	sa;
	char		ip[INET6_ADDRSTRLEN] = "";
	unsigned	port = 0;

	if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0) {
		snprintf(addr, asz, "gone");
		snprintf(host, hsz, "%s", "");
		return -1;
	}
	switch (sa.s_family) {
	case NNG_AF_INET:
		inet_ntop(AF_INET, &sa.s_in.sa_addr, ip, sizeof(ip));
		port = ntohs(sa.s_in.sa_port);
		snprintf(addr, asz, "%s:%u", ip, port);
		break;
	case NNG_AF_INET6:
		inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip));
		port = ntohs(sa.s_in6.sa_port);
		snprintf(addr, asz, "[%s]:%u", ip, port);
		break;
	default:
		snprintf(addr, asz, "local");
		break;
	}
	snprintf(host, hsz, "%s", ip);
	return 0;
}

static bool
sockaddr_is(const struct sockaddr_storage *ss, const nng_sockaddr *sa)
{
	const struct sockaddr_in	*in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6	*in6 = (const struct sockaddr_in6 *)ss;

	if (sa->s_family == NNG_AF_INET && ss->ss_family == AF_INET)
		return in->sin_port == sa->s_in.sa_port &&
		    in->sin_addr.s_addr == sa->s_in.sa_addr;
	if (sa->s_family == NNG_AF_INET6 && ss->ss_family == AF_INET6)
		return in6->sin6_port == sa->s_in6.sa_port &&
		    memcmp(&in6->sin6_addr, sa->s_in6.sa_addr, 16) == 0;
	return false;
}

/* The socket of a TCP pipe, by its two addresses among ours: O(open files). */
static int
scan_fd(const nng_sockaddr *rem, const nng_sockaddr *loc)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	struct stat		 st;
	struct dirent		*de;
	DIR			*d;
	int			 fd;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if ((fd = atoi(de->d_name)) <= 2 || fd == dirfd(d) ||
		    fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode))
			continue;
		sl = sizeof(ss);
		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == -1 ||
		    !sockaddr_is(&ss, rem))
			continue;
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1 ||
		    !sockaddr_is(&ss, loc))
			continue;
		closedir(d);
		return fd;
	}
	closedir(d);
	return -1;
}

/*
 * Ends a connection.  nng 1.5.2 (Debian 12's) can leave a pipe's teardown
 * waiting forever when the pipe is closed while one of its I/Os is being
 * started on another thread (nanomsg/nng#1236, #1813; fixed in 1.8): the
 * reaper thread waits with it, and no connection is torn down again.  A
 * peer that floods keeps its pipe's receive side restarting, so
 * nng_pipe_close would race it.  Instead the connection's socket is shut
 * for reading: nng reads what is queued, meets the end of the stream, and
 * closes the pipe from its own receive path, as when a peer hangs up.
 * The caller has nothing of ours on the way to the pipe (peer_shut, or a
 * place of the pool that is not pinned), so its send side is idle or
 * waits on a peer that does not read, and both cancel cleanly.
 *
 * The socket is fd, noted when nng admitted the pipe (common/fdtab.h)
 * and checked here to still be that connection (getpeername and
 * getsockname: O(1)); only a pipe whose socket was not noted is looked for
 * among all our descriptors (O(open files)).  ipc://, or a socket not
 * found: nng_pipe_close.
 */
static void
pipe_shut(nng_pipe np, int fd)
{
	nng_sockaddr	rem, loc;

	if (nng_pipe_get_addr(np, NNG_OPT_REMADDR, &rem) != 0 ||
	    nng_pipe_get_addr(np, NNG_OPT_LOCADDR, &loc) != 0 ||
	    (rem.s_family != NNG_AF_INET && rem.s_family != NNG_AF_INET6)) {
		nng_pipe_close(np);
		return;
	}
	if (!fdtab_is(fd, &rem, &loc))
		fd = scan_fd(&rem, &loc);
	if (fd >= 0)
		shutdown(fd, SHUT_RD);
	else
		nng_pipe_close(np);
}

/* The loop's thread: the slot waits for the next request, as long as it takes. */
static void
slot_listen(struct slot *sl)
{
	slot_set(sl, SLOT_RECV);
	nng_aio_set_timeout(sl->aio, NNG_DURATION_INFINITE);
	nng_ctx_recv(sl->ctx, sl->aio);
}

/*
 * A CLOSING peer's connection ends once none of our replies is still on
 * the way to its pipe (pipe_shut); until then each sent reply asks again.
 * Its parked lease requests will never be answered: let go first.
 */
static void
peer_shut(struct server *s, struct peer *p)
{
	nng_pipe	np = NNG_PIPE_INITIALIZER;
	int		i;

	if (p == NULL || p->state != PEER_CLOSING || p->shut)
		return;
	for (i = 0; i < s->nslots && p->inflight > 0; i++) {
		struct slot	*sl = &s->slots[i];

		if (sl->state == SLOT_PARKED && sl->pipe == p->pipe) {
			slot_listen(sl);
			peer_replied(s->peers, p, now_ms());
		}
	}
	if (p->inflight > 0)
		return;
	p->shut = true;
	np.id = p->pipe;
	pipe_shut(np, p->fd);
}

/*
 * nng thread.  A connection is added when the pre-auth pool has a place
 * for it, maybe one it takes from a connection that has not authenticated
 * (peers_admit, peer.h), whose socket is shut here and now; else it is
 * closed before it starts, which is safe (nothing of it runs yet).  The
 * loop hears of every admitted one before any of its messages.  O(1): a
 * hash for its socket (fdtab_claim), the pool's constant work.
 */
static void
pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct server		*s = arg;
	struct event		 e = { .kind = EV_PIPE_NEW, .pipe = (uint32_t)nng_pipe_id(p),
				    .fd = -1 };
	struct peer_evicted	 gone;
	nng_sockaddr		 rem;
	nng_pipe		 victim = NNG_PIPE_INITIALIZER;

	if (ev == NNG_PIPE_EV_ADD_PRE) {
		e.at = now_ms();
		pipe_addr(p, e.addr, sizeof(e.addr), e.host, sizeof(e.host));
		if (*e.host != '\0' && nng_pipe_get_addr(p, NNG_OPT_REMADDR, &rem) == 0)
			e.fd = fdtab_claim(&rem);
		if (peers_admit(s->peers, e.pipe, e.addr, e.host, e.fd, e.at, &gone) !=
		    PEER_ADMITTED) {
			nng_pipe_close(p);
			return;
		}
		push_event(s, e);
		if (gone.pipe != 0) {
			victim.id = gone.pipe;
			pipe_shut(victim, gone.fd);
			push_event(s, (struct event){ .kind = EV_EVICTED, .pipe = gone.pipe });
		}
		return;
	}
	push_event(s, (struct event){ .kind = EV_PIPE_GONE,
	    .pipe = (uint32_t)nng_pipe_id(p) });
}

/* Creates, configures (TLS) and starts the listener. */
static int
server_listen(struct server *s, const char *url, const struct auth_opts *auth,
    char *err)
{
	int	rv;

	if ((rv = nng_listener_create(&s->listener, s->sock, url)) != 0)
		return errf(err, "cannot listen on %s: %s", url, nng_strerror(rv));
	if (auth_url_is_tls(url) && tlsconf_listener(s->listener, auth, err) == -1)
		return -1;
	if ((rv = nng_listener_start(s->listener, 0)) != 0)
		return errf(err, "cannot listen on %s: %s", url, nng_strerror(rv));
	return 0;
}

struct server *
server_open(const char *url, int nslots, const struct auth_opts *auth, char *err)
{
	struct server	*s = xcalloc(1, sizeof(*s));
	int		 rv, i;

	pthread_mutex_init(&s->mu, NULL);
	cond_init_monotonic(&s->cv);
	queue_init(&s->q, sizeof(struct event));
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		errf(err, "cannot open the coordinator socket: %s", nng_strerror(rv));
		free(s);
		return NULL;
	}
	s->peers = peers_new(&auth->secret);
	s->next_expiry = -1;
	if (strncmp(url, "tcp://", 6) == 0 || strncmp(url, "tls+tcp://", 10) == 0) {
		uint64_t	was, limit;

		/* Before the listener starts: every accepted socket is noted. */
		fdtab_start(&was, &limit);
		if (limit > was)
			log_info("descriptors: up to %llu (RLIMIT_NOFILE raised from %llu "
			    "to its hard limit)", (unsigned long long)limit,
			    (unsigned long long)was);
		else
			log_info("descriptors: up to %llu (RLIMIT_NOFILE, at its hard limit)",
			    (unsigned long long)limit);
	}
	/* One cap for every pipe, authenticated or not (common/msg.h). */
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, MSG_COORD_RECV_MAX);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, pipe_cb, s);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_cb, s);
	if (server_listen(s, url, auth, err) == -1) {
		nng_close(s->sock);
		peers_free(s->peers);
		queue_free(&s->q);
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
		sl->state = SLOT_RECV;	/* born listening: no change to log */
		nng_ctx_recv(sl->ctx, sl->aio);
	}
	return s;
}

const char *
server_url(const struct server *s)
{
	return s->url;
}

/*
 * nng_close, bounded.  nng 1.5.2's can wait for ever on its reaper when a
 * pipe's teardown raced an I/O being started (pipe_shut's comment; seen at
 * a coordinator's exit after a flood of connections shut mid-handshake,
 * integration/fleet_flood: the run over, its summary printed, the process
 * never ending).  So it runs on a thread of its own and the caller waits
 * on its end at most ms: whether it ended.  The state is static: the
 * thread may outlive the wait, and the process exits around it.
 */
static int	close_fd = -1;

static void *
close_main(void *arg)
{
	nng_socket	*sock = arg;
	uint64_t	 one = 1;

	nng_close(*sock);
	(void)!write(close_fd, &one, sizeof(one));
	return NULL;
}

static bool
close_bounded(nng_socket *sock, int ms)
{
	struct pollfd	p;
	pthread_t	t;
	int64_t		until = now_ms() + ms, left;

	if (close_fd == -1 && (close_fd = eventfd(0, EFD_CLOEXEC)) == -1) {
		nng_close(*sock);		/* no way to bound it: as before */
		return true;
	}
	if (pthread_create(&t, NULL, close_main, sock) != 0) {
		nng_close(*sock);
		return true;
	}
	pthread_detach(t);
	p.fd = close_fd;
	p.events = POLLIN;
	p.revents = 0;
	while ((left = until - now_ms()) > 0 && poll(&p, 1, (int)left) == -1 &&
	    errno == EINTR)
		;
	if (p.revents & POLLIN) {
		uint64_t	v;

		(void)!read(close_fd, &v, sizeof(v));
		return true;
	}
	return false;
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
	if (!close_bounded(&s->sock, SERVER_CLOSE_MS)) {
		/*
		 * nng still holds the socket, and its callbacks (pipe_cb) may
		 * yet run with s: nothing of s is freed.  The caller is on its
		 * way out of the process.
		 */
		log_warnx("nng did not finish closing the listener within %d s (a "
		    "known hang of nng 1.5.2's teardown); exiting without waiting "
		    "for it", SERVER_CLOSE_MS / 1000);
		return;
	}
	peers_note_flush(s->peers, now_ms(), true);
	if (strncmp(s->url, "ipc://", 6) != 0) {
		struct fdtab_stats	st;

		fdtab_stats(&st);
		log_debug("connections accepted: %llu; shut in their transport handshake: "
		    "%llu (%llu accepts met the descriptor limit; %llu times one was passed "
		    "over, its header unread by nng)", (unsigned long long)st.accepted,
		    (unsigned long long)st.evicted, (unsigned long long)st.limit_hits,
		    (unsigned long long)st.spared);
	}
	peers_free(s->peers);
	free(s->url);
	free(s->slots);
	queue_free(&s->q);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/*
 * Sends rep on the slot, sealed for its peer when the peer has a session.
 * A peer gone meanwhile gets nothing: the slot listens again.  The reply
 * has PEER_SEND_MS to be taken by the pipe (slot_sent).
 */
static void
slot_send(struct server *s, struct slot *sl, struct msg *rep)
{
	struct peer	*p = peers_find(s->peers, sl->pipe);
	char		 err[ERR_LEN];
	uint8_t		*buf;
	size_t		 len;
	nng_msg		*nm;

	if (p == NULL) {
		msg_clear(rep);
		slot_listen(sl);
		return;
	}
	if (peer_encode(p, rep, sl->seq, &buf, &len, err) == -1) {
		log_warnx("cannot encode %s: %s", msg_type_name(rep->type), err);
		msg_clear(rep);
		rep->type = MSG_NACK;
		rep->u.ack.text = xstrdup("coordinator could not encode its reply");
		if (peer_encode(p, rep, sl->seq, &buf, &len, err) == -1)
			fatalx("%s", err);
	}
	msg_clear(rep);
	if (nng_msg_alloc(&nm, len) != 0)
		fatalx("nng_msg_alloc: out of memory");
	memcpy(nng_msg_body(nm), buf, len);
	free(buf);
	slot_set(sl, SLOT_SEND);
	nng_aio_set_msg(sl->aio, nm);
	nng_aio_set_timeout(sl->aio, PEER_SEND_MS);
	nng_ctx_send(sl->ctx, sl->aio);
}

/*
 * A reply was handed over, or not within PEER_SEND_MS: a peer that does
 * not read its replies would hold the slot (and the next ones) for as long
 * as it stays connected, so it is closed.
 */
static void
slot_sent(struct server *s, struct slot *sl, int rv)
{
	struct peer	*p = peers_find(s->peers, sl->pipe);

	if (p != NULL) {
		peer_replied(s->peers, p, now_ms());
		if (rv == NNG_ETIMEDOUT)
			peer_drop(s->peers, p, PEER_NOTE_DEAF, now_ms());
		peer_shut(s, p);	/* a failed authentication's NACK is out */
	}
	slot_listen(sl);
}

/* The peer of the pipe a message came on; NULL when the pipe is gone. */
static struct peer *
slot_peer(struct server *s, nng_pipe np)
{
	struct peer	*p;
	char		 addr[64], host[48];

	if ((p = peers_find(s->peers, (uint32_t)nng_pipe_id(np))) != NULL)
		return p;
	if (pipe_addr(np, addr, sizeof(addr), host, sizeof(host)) == -1)
		return NULL;
	return peers_get(s->peers, (uint32_t)nng_pipe_id(np), addr, host, now_ms());
}

/*
 * One request: through its peer (handshake, session MAC), then to the
 * coordinator's rules if the peer is authenticated.
 */
static void
handle_slot(struct server *s, struct coord *c, struct slot *sl)
{
	nng_msg		*nm = nng_aio_get_msg(sl->aio);
	nng_pipe	 np = nng_msg_get_pipe(nm);
	struct peer	*p = slot_peer(s, np);
	struct msg	 req, rep;
	enum peer_action act = PEER_DROP;

	nng_aio_set_msg(sl->aio, NULL);
	sl->pipe = (uint32_t)nng_pipe_id(np);
	sl->seq = 0;
	/* One request too many in flight: closed, unread. */
	if (p != NULL && !peer_request(s->peers, p, now_ms())) {
		nng_msg_free(nm);
		peer_shut(s, p);
		slot_listen(sl);
		return;
	}
	if (p != NULL)
		act = peer_recv(s->peers, p, nng_msg_body(nm), nng_msg_len(nm), now_ms(),
		    &req, &rep, &sl->seq);
	nng_msg_free(nm);
	switch (act) {
	case PEER_DROP:
		if (p != NULL) {
			peer_replied(s->peers, p, now_ms());
			peer_shut(s, p);
		}
		slot_listen(sl);
		return;
	case PEER_ANSWER:
		/* A CLOSING peer's connection ends once this is sent. */
		slot_send(s, sl, &rep);
		return;
	case PEER_PASS:
		break;
	}
	memset(&rep, 0, sizeof(rep));
	if (coord_handle(c, &req, sl->pipe, now_ms(), &rep)) {
		msg_clear(&req);
		slot_send(s, sl, &rep);
		return;
	}
	slot_set(sl, SLOT_PARKED);
	sl->worker = req.u.lease_req.worker_id;
	msg_clear(&req);
}

/* Parked lease requests get served, in slot order, whenever work appears. */
static void
serve_parked(struct server *s, struct coord *c)
{
	struct msg	rep;
	int		i, left = s->nparked;

	/* Called after every event: with nothing parked, nothing to scan. */
	for (i = 0; i < s->nslots && left > 0; i++) {
		struct slot	*sl = &s->slots[i];

		if (sl->state != SLOT_PARKED)
			continue;
		left--;
		memset(&rep, 0, sizeof(rep));
		if (coord_serve(c, sl->worker, now_ms(), &rep))
			slot_send(s, sl, &rep);
	}
}

/* Drops parked requests of a pipe that closed; their worker is gone. */
static void
forget_pipe(struct server *s, uint32_t pipe)
{
	int	i;

	for (i = 0; i < s->nslots; i++) {
		struct slot	*sl = &s->slots[i];

		if (sl->state == SLOT_PARKED && sl->pipe == pipe)
			slot_listen(sl);
	}
}

static int
wait_event(struct server *s, int timeout_ms, struct event *ev)
{
	struct timespec	ts;
	int		got = 0;

	pthread_mutex_lock(&s->mu);
	if (s->q.len == 0 && timeout_ms > 0) {
		abstime_mono_in(&ts, timeout_ms);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	got = queue_pop(&s->q, ev);
	pthread_mutex_unlock(&s->mu);
	return got;
}

/* A connection was admitted: its time to authenticate starts. */
static void
pipe_new(struct server *s, const struct event *ev)
{
	struct peer	*p = peers_add(s->peers, ev->pipe, ev->addr, ev->host, ev->fd,
			    ev->at);

	if (*p->host != '\0' && (s->next_expiry < 0 || p->deadline < s->next_expiry))
		s->next_expiry = p->deadline;
}

/*
 * Closes the connections whose time to authenticate is up.  Scans the
 * peers (O(peers)) only when the earliest deadline has come.
 */
static void
expire_peers(struct server *s)
{
	uint32_t	pipes[32];
	size_t		n, i;
	int64_t		now = now_ms(), next;

	if (s->next_expiry < 0 || now < s->next_expiry)
		return;
	do {
		n = peers_overdue(s->peers, now, pipes, 32, &next);
		for (i = 0; i < n; i++)
			peer_shut(s, peers_find(s->peers, pipes[i]));
	} while (n == 32);
	s->next_expiry = next;
}

static void
dispatch(struct server *s, struct coord *c, const struct event *ev)
{
	switch (ev->kind) {
	case EV_MSG:
		handle_slot(s, c, &s->slots[ev->slot]);
		break;
	case EV_SENT:
		slot_sent(s, &s->slots[ev->slot], ev->rv);
		break;
	case EV_PIPE_NEW:
		pipe_new(s, ev);
		break;
	case EV_EVICTED:
		peers_evicted(s->peers, ev->pipe, now_ms());
		break;
	case EV_PIPE_GONE:
		forget_pipe(s, ev->pipe);
		peers_gone(s->peers, ev->pipe);
		coord_pipe_closed(c, ev->pipe, now_ms());
		break;
	}
	serve_parked(s, c);
}

int
server_run(struct server *s, struct coord *c, volatile int *stop, int tick_ms,
    int (*tick)(void *), void *arg)
{
	struct event	ev;
	int64_t		next_tick = now_ms() + tick_ms, wait, until;

	while (!coord_finished(c) && !coord_halted(c) && !*stop) {
		until = coord_tick(c, now_ms());
		serve_parked(s, c);
		wait = next_tick - now_ms();
		if (until >= 0 && until < wait)
			wait = until;
		if (s->next_expiry >= 0 && s->next_expiry - now_ms() < wait)
			wait = s->next_expiry - now_ms();
		if (wait < 1)
			wait = 1;
		if (wait_event(s, (int)wait, &ev))
			dispatch(s, c, &ev);
		expire_peers(s);
		if (now_ms() >= next_tick) {
			next_tick = now_ms() + tick_ms;
			peers_note_flush(s->peers, now_ms(), false);
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
	while (coord_awaited_workers(c, now_ms()) > 0 && now_ms() < deadline && !*stop) {
		if (wait_event(s, 50, &ev))
			dispatch(s, c, &ev);
		expire_peers(s);
	}
}

void
server_linger(struct server *s, struct coord *c, int ms, volatile int *stop)
{
	struct event	ev;
	int64_t		deadline = now_ms() + ms;

	while (now_ms() < deadline && !*stop) {
		if (wait_event(s, (int)(deadline - now_ms() < 200 ?
		    deadline - now_ms() : 200), &ev))
			dispatch(s, c, &ev);
		expire_peers(s);
	}
}
