/*
 * Duplicate delivery (the `duplicate` fault): the exchange's request sent
 * again on a fresh upstream connection of its own once the first reply
 * began, its reply read and thrown away.  For PostgreSQL the session's
 * start-up goes first, so the second delivery is a session of its own.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/engine_int.h"

void
px_dup_free(struct dup *d)
{
	struct proxy_set	*ps;

	if (d == NULL)
		return;
	ps = d->ps;
	px_ep_close(ps->epfd, &d->ep, false);
	if (d->prev)
		d->prev->next = d->next;
	else
		ps->dups = d->next;
	if (d->next)
		d->next->prev = d->prev;
	http_frame_free(&d->resp);
	pg_free(d->pgf);
	free(d->pgf);
	free(d->req);
	free(d);
	px_live_release(ps);
}

/* Replays the exchange's request on a fresh upstream connection. */
void
px_dup_start(struct conn *c)
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
	if (px_answered_inside(c->l))
		fd = px_local_pair(c->l, NULL, &c->rec);	/* the stand-in */
	else if ((fd = socket(c->l->up_addr.ss_family, SOCK_STREAM |
	    SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		log_warn("%s: socket", __func__);
	if (fd == -1)
		return;
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
	if (px_answered_inside(c->l))
		d->connected = true;
	else if (connect(fd, (struct sockaddr *)&c->l->up_addr, c->l->up_len) == 0)
		d->connected = true;
	else if (errno != EINPROGRESS) {
		log_warn("%s: connect duplicate to %s", __func__, c->l->upstream);
		px_dup_free(d);
		return;
	}
	if (!px_answered_inside(c->l) && c->l->up_addr.ss_family != AF_UNIX)
		px_set_nodelay(fd);
	px_ep_set(ps->epfd, &d->ep, EPOLLOUT);
}

void
px_dup_event(struct dup *d, uint32_t ev)
{
	struct proxy_set	*ps = d->ps;
	ssize_t			 n;
	int			 soerr = 0;
	socklen_t		 sl = sizeof(soerr);

	if (!d->connected) {
		if (getsockopt(d->ep.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1 ||
		    soerr != 0) {
			log_warnx("duplicate: connect failed: %s", strerror(soerr));
			px_dup_free(d);
			return;
		}
		d->connected = true;
	}
	while (d->off < d->len) {
		n = send(d->ep.fd, d->req + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			px_ep_set(ps->epfd, &d->ep, EPOLLOUT);
			return;
		}
		if (n <= 0) {
			px_dup_free(d);
			return;
		}
		d->off += (size_t)n;
	}
	if (!(ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		px_ep_set(ps->epfd, &d->ep, EPOLLIN);
		return;
	}
	n = recv(d->ep.fd, ps->scratch, sizeof(ps->scratch), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		px_dup_free(d);		/* closed: the reply, such as it was, is over */
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
	px_dup_free(d);
}
