/*
 * common/fdtab: the share of descriptors a transport handshake may hold.
 * Real sockets on loopback, accepted through fdtab's own accept(2) (this
 * binary links fdtab.o, so its calls bind to the wrapper as libnng's do in
 * the coordinator), with RLIMIT_NOFILE at 256: past 64 connections in
 * their handshake each accept shuts the oldest, except one whose whole
 * header lies unread (it waits on nng, not on its peer).  Whether the
 * coordinator's side of a connection was shut is read off that side at
 * once (send answers EPIPE), never waited for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fdtab.h"

#define FLOOD	100

static int		lfd;
static struct sockaddr_in lsa;

static int
group_setup(void **state)
{
	struct rlimit	rl = { 256, 256 };
	socklen_t	sl = sizeof(lsa);
	uint64_t	was, limit;

	(void)state;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	fdtab_start(&was, &limit);
	if (limit != 256)
		return -1;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	lsa.sin_family = AF_INET;
	lsa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&lsa, sizeof(lsa)) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&lsa, &sl) == -1 ||
	    listen(lfd, 4 * FLOOD) == -1)
		return -1;
	return 0;
}

/* A client that sends len bytes of a header; *srv: the accepted side. */
static int
client(size_t len, int *srv)
{
	static const char	hs[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 };
	int			c = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_not_equal(c, -1);
	assert_int_equal(connect(c, (struct sockaddr *)&lsa, sizeof(lsa)), 0);
	assert_int_equal(write(c, hs, len), (ssize_t)len);
	*srv = accept(lfd, NULL, NULL);
	assert_int_not_equal(*srv, -1);
	return c;
}

/* Whether the accepted side was shut (shutdown(SHUT_RDWR) by fdtab). */
static bool
was_shut(int srv)
{
	ssize_t	r = send(srv, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);

	return r == -1 && errno == EPIPE;
}

/*
 * The oldest connection, a worker whose header nng has not read, outlives
 * a flood of one-byte connections, each shutting the oldest it may; once
 * its header is read (it waits on its peer now), it is shut like any.
 */
static void
test_header_unread_is_spared(void **state)
{
	int			wc, ws, fc[FLOOD], fs[FLOOD], i;
	struct fdtab_stats	st;
	char			b[8];

	(void)state;
	wc = client(8, &ws);
	for (i = 0; i < FLOOD; i++)
		fc[i] = client(1, &fs[i]);
	fdtab_stats(&st);
	/* 101 in their handshake, 64 allowed: the 37 oldest floods shut. */
	assert_int_equal(st.evicted, FLOOD + 1 - FDTAB_NEGO_MIN);
	assert_true(st.spared > 0);
	assert_false(was_shut(ws));
	for (i = 0; i < FLOOD + 1 - FDTAB_NEGO_MIN; i++)
		assert_true(was_shut(fs[i]));
	for (; i < FLOOD; i++)
		assert_false(was_shut(fs[i]));

	/* nng reads the worker's header (a slowloris's byte: the same). */
	assert_int_equal(read(ws, b, sizeof(b)), 8);
	for (i = FLOOD + 1 - FDTAB_NEGO_MIN; i < FLOOD; i++)
		assert_int_equal(read(fs[i], b, 1), 1);
	{
		int	c2, s2;

		c2 = client(1, &s2);
		assert_true(was_shut(ws));	/* the oldest, and no longer spared */
		assert_false(was_shut(s2));
		close(c2);
		close(s2);
	}
	close(wc);
	close(ws);
	for (i = 0; i < FLOOD; i++) {
		close(fc[i]);
		close(fs[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_header_unread_is_spared),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
