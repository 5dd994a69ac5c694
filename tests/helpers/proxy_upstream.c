/*
 * A counting upstream for the fault-proxy tests and benchmarks.
 *
 *   proxy_upstream http|echo [PORT]
 *
 * Prints "listening on 127.0.0.1:PORT" when ready, then one line per event,
 * flushed, so a test can wait on them:  "conn N" per accepted connection,
 * "req N METHOD PATH" per HTTP request (answered 200 with body "ok N\n"),
 * "data N" per echo read (echoed back).  Keep-alive and Content-Length
 * request bodies are supported; one thread per connection.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static atomic_int	nconn, nreq;
static int		http_mode;
static pthread_mutex_t	out_mu = PTHREAD_MUTEX_INITIALIZER;

static void
event(const char *fmt, int n, const char *a, const char *b)
{
	pthread_mutex_lock(&out_mu);
	printf(fmt, n, a, b);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

static void
serve_echo(int fd)
{
	char	buf[65536];
	ssize_t	n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		event("data %d%s%s\n", (int)n, "", "");
		if (write(fd, buf, (size_t)n) != n)
			break;
	}
}

static void
serve_http(int fd)
{
	char		*b = malloc(1 << 20), *eoh, *cl, method[16], path[256];
	size_t		 len = 0, need;
	ssize_t		 n;
	long		 clen;
	char		 resp[256];
	int		 k, rl;

	for (;;) {
		while ((eoh = memmem(b, len, "\r\n\r\n", 4)) == NULL) {
			if (len == (1 << 20) ||
			    (n = read(fd, b + len, (1 << 20) - len)) <= 0)
				goto out;
			len += (size_t)n;
		}
		*eoh = '\0';
		clen = 0;
		if ((cl = strcasestr(b, "\r\nContent-Length:")) != NULL)
			clen = strtol(cl + 17, NULL, 10);
		need = (size_t)(eoh - b) + 4 + (size_t)clen;
		while (len < need) {
			if (need > (1 << 20) ||
			    (n = read(fd, b + len, (1 << 20) - len)) <= 0)
				goto out;
			len += (size_t)n;
		}
		method[0] = path[0] = '\0';
		sscanf(b, "%15s %255s", method, path);
		k = ++nreq;
		event("req %d %s %s\n", k, method, path);
		rl = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\nok %06d\n",
		    snprintf(NULL, 0, "ok %06d\n", k), k);
		if (write(fd, resp, (size_t)rl) != rl)
			goto out;
		memmove(b, b + need, len - need);
		len -= need;
	}
out:
	free(b);
}

static void *
serve(void *arg)
{
	int	fd = (int)(intptr_t)arg;

	if (http_mode)
		serve_http(fd);
	else
		serve_echo(fd);
	close(fd);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);
	pthread_t		t;
	pthread_attr_t		attr;
	int			lfd, fd, one = 1;

	if (argc < 2 || (strcmp(argv[1], "http") && strcmp(argv[1], "echo"))) {
		fprintf(stderr, "usage: proxy_upstream http|echo [PORT]\n");
		return 64;
	}
	http_mode = strcmp(argv[1], "http") == 0;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(argc > 2 ? (uint16_t)atoi(argv[2]) : 0);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 1024) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) == -1) {
		perror("proxy_upstream: listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(sin.sin_port));
	fflush(stdout);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		event("conn %d%s%s\n", ++nconn, "", "");
		if (pthread_create(&t, &attr, serve, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}
