/*
 * A TLS front for the tests of a recording proxy (docs/models.md): a model
 * API "behind TLS" made of a local stand-in and this.
 *
 *   tls_front CERT KEY BACKEND_HOST:PORT LOG
 *
 * Listens on 127.0.0.1 (an ephemeral port), prints "listening on
 * 127.0.0.1:PORT" when ready, and for each connection does the TLS
 * handshake with CERT and KEY (PEM files a test makes with its own
 * throwaway CA) and relays the plain bytes both ways to BACKEND.  It writes
 * to LOG, a line each, what the proxy's requests carried that the test
 * must see: "sni NAME" for each handshake, "req METHOD PATH" and every
 * Authorization or x-api-key header as received ("key: VALUE"), so a test
 * can tell the real key arrived and the turn's dummy did not.  One thread
 * a connection; runs until killed.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static SSL_CTX		*ctx;
static const char	*backend;
static FILE		*logfp;
static pthread_mutex_t	 log_mu = PTHREAD_MUTEX_INITIALIZER;

static void
log_line(const char *fmt, const char *a, size_t n)
{
	pthread_mutex_lock(&log_mu);
	fprintf(logfp, fmt, (int)n, a);
	fflush(logfp);
	pthread_mutex_unlock(&log_mu);
}

/* The request lines and key headers of what the client sent. */
static void
log_request(const char *p, size_t n)
{
	const char	*end = p + n, *eol;
	size_t		 l;

	for (; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		l = (size_t)(eol - p);
		if (l > 0 && p[l - 1] == '\r')
			l--;
		if (l > 5 && (strncmp(p, "POST ", 5) == 0 || strncmp(p, "GET ", 4) == 0))
			log_line("req %.*s\n", p, l);
		else if (l > 14 && strncasecmp(p, "authorization:", 14) == 0)
			log_line("key:%.*s\n", p + 14, l - 14);
		else if (l > 10 && strncasecmp(p, "x-api-key:", 10) == 0)
			log_line("key:%.*s\n", p + 10, l - 10);
		if (eol == end)
			break;
	}
}

static int
dial(void)
{
	char		 host[256], *colon;
	struct addrinfo	 hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int		 fd;

	snprintf(host, sizeof(host), "%s", backend);
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static void *
serve(void *arg)
{
	int		 cfd = (int)(intptr_t)arg, bfd = -1, n;
	SSL		*ssl = SSL_new(ctx);
	struct pollfd	 pf[2];
	char		 buf[65536];
	const char	*sni;
	ssize_t		 r;

	SSL_set_fd(ssl, cfd);
	if (SSL_accept(ssl) != 1)
		goto out;	/* a client that did not trust us, say */
	sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	log_line("sni %.*s\n", sni ? sni : "-", strlen(sni ? sni : "-"));
	if ((bfd = dial()) == -1)
		goto out;
	for (;;) {
		pf[0] = (struct pollfd){ .fd = cfd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = bfd, .events = POLLIN };
		if (SSL_pending(ssl) == 0 && poll(pf, 2, -1) == -1)
			break;
		if (SSL_pending(ssl) > 0 || (pf[0].revents & (POLLIN | POLLHUP))) {
			if ((n = SSL_read(ssl, buf, sizeof(buf))) <= 0)
				break;
			log_request(buf, (size_t)n);
			if (write(bfd, buf, (size_t)n) != n)
				break;
		}
		if (pf[1].revents & (POLLIN | POLLHUP)) {
			if ((r = read(bfd, buf, sizeof(buf))) <= 0)
				break;
			if (SSL_write(ssl, buf, (int)r) != (int)r)
				break;
		}
	}
out:
	SSL_free(ssl);
	close(cfd);
	if (bfd >= 0)
		close(bfd);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sa = { .sin_family = AF_INET };
	socklen_t		 sl = sizeof(sa);
	pthread_t		 t;
	int			 lfd, cfd, one = 1;

	if (argc != 5) {
		fprintf(stderr, "usage: tls_front CERT KEY BACKEND_HOST:PORT LOG\n");
		return 64;
	}
	backend = argv[3];
	if ((logfp = fopen(argv[4], "a")) == NULL) {
		perror(argv[4]);
		return 1;
	}
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL || SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(lfd, 64) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) == -1) {
		perror("tls_front: listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	for (;;) {
		if ((cfd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)cfd) != 0)
			close(cfd);
		else
			pthread_detach(t);
	}
}
