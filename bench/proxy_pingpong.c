/*
 * proxy_pingpong HOST:PORT [ROUNDS] [CONNS]
 * Request/response latency over one connection (64-byte ping echoed back)
 * and new connections per second (connect, 1-byte exchange, close).
 * Prints one line: "rtt_p50_us=.. rtt_p99_us=.. rtt_avg_us=.. conn_per_s=..".
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static int
dial(const char *addr)
{
	struct sockaddr_in	sin;
	int			fd, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static int
exchange(int fd, char *b, size_t n)
{
	size_t	got = 0;
	ssize_t	r;

	if (write(fd, b, n) != (ssize_t)n)
		return -1;
	while (got < n) {
		if ((r = read(fd, b + got, n - got)) <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int	 rounds = argc > 2 ? atoi(argv[2]) : 20000;
	int	 conns = argc > 3 ? atoi(argv[3]) : 2000;
	int64_t	*rtt, t0, sum = 0;
	char	 b[64];
	int	 fd, i;

	if (argc < 2) {
		fprintf(stderr, "usage: proxy_pingpong HOST:PORT [ROUNDS] [CONNS]\n");
		return 64;
	}
	rtt = calloc((size_t)rounds, sizeof(*rtt));
	memset(b, 'p', sizeof(b));
	fd = dial(argv[1]);
	for (i = 0; i < 200; i++)	/* warm up */
		exchange(fd, b, sizeof(b));
	for (i = 0; i < rounds; i++) {
		t0 = now_us();
		if (exchange(fd, b, sizeof(b)) == -1) {
			fprintf(stderr, "exchange failed\n");
			return 1;
		}
		rtt[i] = now_us() - t0;
		sum += rtt[i];
	}
	close(fd);
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp64);
	t0 = now_us();
	for (i = 0; i < conns; i++) {
		fd = dial(argv[1]);
		if (exchange(fd, b, 1) == -1) {
			fprintf(stderr, "connection %d failed\n", i);
			return 1;
		}
		close(fd);
	}
	printf("rtt_p50_us=%lld rtt_p99_us=%lld rtt_avg_us=%.1f conn_per_s=%.0f\n",
	    (long long)rtt[rounds / 2], (long long)rtt[rounds * 99 / 100],
	    (double)sum / rounds, conns * 1e6 / (double)(now_us() - t0));
	free(rtt);
	return 0;
}
