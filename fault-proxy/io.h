/*
 * The engine's ground floor, private to fault-proxy: what epoll hands back,
 * the per-direction buffers, and the socket helpers every part of the
 * engine (engine.c, conn.c, dup.c, gate.c, gate_side.c) shares.  Nothing
 * here knows a connection or a schedule.
 */
#ifndef SOAK_PROXY_IO_H
#define SOAK_PROXY_IO_H

#include <sys/socket.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ep_kind {
	EP_LISTENER,	/* owner: struct listener */
	EP_CLIENT,	/* owner: struct conn, its client socket */
	EP_UPSTREAM,	/* owner: struct conn, its upstream socket */
	EP_DUP,		/* owner: struct dup */
	EP_WAKE,	/* the set's shutdown eventfd */
	EP_TURNS,	/* the set's turn-liveness eventfd (proxy_set_turn) */
	EP_SIDE,	/* owner: struct gate, its PostgreSQL side connection */
	EP_LOCAL,	/* owner: struct local, an upstream answered inside */
	EP_BRIDGE	/* owner: struct local, its bridge's end (readable: over) */
};

/* What epoll hands back: which object, and which of its sockets. */
struct ep {
	enum ep_kind	 kind;
	void		*owner;
	int		 fd;
	uint32_t	 mask;		/* registered events; 0 = not in the set */
};

/* One direction's bytes: PROXY_BUF_CAP, allocated at the first use. */
struct buf {
	char		*data;
	size_t		 off;
	size_t		 len;
};

/* Makes epoll epfd watch exactly `want` on e (none at all when want is 0). */
void	px_ep_set(int epfd, struct ep *e, uint32_t want);
/* Takes e out of epfd and closes it; rst: with an RST instead of a FIN. */
void	px_ep_close(int epfd, struct ep *e, bool rst);

int	px_buf_alloc(struct buf *b);		/* -1: no memory */
size_t	px_buf_space(struct buf *b);		/* room at the end, compacting */
void	px_buf_consume(struct buf *b, size_t n);

void	px_set_nodelay(int fd);
/* Close with an RST instead of a FIN: what a crashed peer looks like. */
void	px_close_rst(int fd);
/* "host:port", "[v6]:port" or "unix:/path" into ss; -1 with err. */
int	px_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len,
	    char *err);

#endif
