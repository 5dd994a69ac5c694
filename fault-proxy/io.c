/*
 * Sockets, epoll registration and buffers for the proxy engine (io.h).
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/io.h"
#include "fault-proxy/proxy.h"

void
px_set_nodelay(int fd)
{
	int	one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void
px_close_rst(int fd)
{
	struct linger	lg = { 1, 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

int
px_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len,
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

void
px_ep_set(int epfd, struct ep *e, uint32_t want)
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
	if (epoll_ctl(epfd, op, e->fd, &ev) == -1)
		log_warn("%s: epoll_ctl fd %d", __func__, e->fd);
	e->mask = want;
}

void
px_ep_close(int epfd, struct ep *e, bool rst)
{
	if (e->fd < 0)
		return;
	px_ep_set(epfd, e, 0);
	if (rst)
		px_close_rst(e->fd);
	else
		close(e->fd);
	e->fd = -1;
}

int
px_buf_alloc(struct buf *b)
{
	if (b->data == NULL && (b->data = malloc(PROXY_BUF_CAP)) == NULL)
		return -1;
	return 0;
}

size_t
px_buf_space(struct buf *b)
{
	if (b->len == 0)
		b->off = 0;
	else if (b->off > 0 && b->off + b->len == PROXY_BUF_CAP) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	return PROXY_BUF_CAP - b->off - b->len;
}

void
px_buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}
