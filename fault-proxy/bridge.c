/*
 * A model API's request carried to the real upstream (engine_int.h, struct
 * bridge): over TLS with SNI and the certificate checked against the
 * system's CAs (or the config's tls_ca), with the API key from soak's
 * environment in place of the turn's dummy, the reply relayed to the
 * local's socketpair as it comes -- a stream event by event -- and kept
 * whole for the cassette.
 *
 * One request is one thread running libcurl (built on OpenSSL here):
 * blocking code, so the engine's loop never waits on a model that takes
 * seconds to answer; the thread touches nothing of the engine's but the
 * socketpair's end it was given and a pipe it writes one byte to when it
 * is over, which the loop watches (EP_BRIDGE).  The loop joins it then.
 *
 * The reply is framed anew for the client: its status and its headers but
 * those of a hop (Transfer-Encoding, Content-Length, Connection,
 * Keep-Alive, Content-Encoding: none is asked for), and a chunked body, a
 * chunk for each piece libcurl hands over.  The API key is in the request's
 * header list and nowhere else: no log, trace or cassette line holds it.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/log.h"
#include "common/util.h"
#include "fault-proxy/cassette.h"
#include "fault-proxy/engine_int.h"

#define BRIDGE_HEAD_CAP	(64 * 1024)	/* the reply's head, as relayed */
#define BRIDGE_WAIT_MS	200		/* a blocked write looks at abort */

struct bridge {
	pthread_t	 thr;
	bool		 started;
	int		 done[2];	/* the thread writes a byte to [1] */
	int		 out;		/* the local's end of the socketpair */
	atomic_bool	 abort;
	CURL		*curl;
	struct curl_slist *hdrs;
	char		*url, *body;
	size_t		 body_len;
	char		 errbuf[CURL_ERROR_SIZE];
	CURLcode	 rc;
	/* the reply */
	long		 status;
	char		 ctype[128];
	char		*head;		/* its headers as relayed */
	size_t		 head_len;
	bool		 head_sent, client_gone, in_head;
	char		*copy;		/* the body, for the cassette */
	size_t		 copy_len, copy_cap;
	bool		 copy_over;
};

static pthread_once_t	curl_once = PTHREAD_ONCE_INIT;

static void
curl_start(void)
{
	(void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Everything of p to the client, waiting for room; -1: it is gone. */
static int
out_all(struct bridge *b, const char *p, size_t n)
{
	struct pollfd	pfd = { .fd = b->out, .events = POLLOUT };
	ssize_t		w;

	while (n > 0 && !b->client_gone) {
		if (atomic_load(&b->abort))
			return -1;
		w = send(b->out, p, n, MSG_NOSIGNAL);
		if (w == -1 && (errno == EAGAIN || errno == EINTR)) {
			(void)poll(&pfd, 1, BRIDGE_WAIT_MS);
			continue;
		}
		if (w <= 0) {
			b->client_gone = true;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return b->client_gone ? -1 : 0;
}

static int
send_head(struct bridge *b)
{
	char	line[96];

	if (b->head_sent)
		return 0;
	b->head_sent = true;
	snprintf(line, sizeof(line), "HTTP/1.1 %ld Status\r\n", b->status);
	if (out_all(b, line, strlen(line)) == -1 ||
	    out_all(b, b->head ? b->head : "", b->head_len) == -1)
		return -1;
	return out_all(b, "Transfer-Encoding: chunked\r\n\r\n", 30);
}

/* A header of the reply that belongs to one hop, not to the message. */
static bool
hop_header(const char *p, size_t n)
{
	static const char *const hop[] = { "transfer-encoding", "content-length",
	    "connection", "keep-alive", "content-encoding", "te", "trailer",
	    "upgrade", "proxy-connection" };
	size_t	i, l;

	for (i = 0; i < nitems(hop); i++) {
		l = strlen(hop[i]);
		if (n > l && p[l] == ':' && strncasecmp(p, hop[i], l) == 0)
			return true;
	}
	return false;
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct bridge	*b = arg;
	size_t		 n = size * nmemb, v;

	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* a status line: a 1xx's headers are not the reply's */
		const char *sp = memchr(p, ' ', n);

		b->status = sp ? strtol(sp + 1, NULL, 10) : 502;
		b->head_len = 0;
		b->ctype[0] = '\0';
		b->in_head = true;
		return n;
	}
	if (n <= 2 || hop_header(p, n))
		return n;
	if (strncasecmp(p, "content-type:", 13) == 0) {
		for (v = 13; v < n && (p[v] == ' ' || p[v] == '\t'); v++)
			;
		snprintf(b->ctype, sizeof(b->ctype), "%.*s", (int)(n - v), p + v);
		b->ctype[strcspn(b->ctype, "\r\n")] = '\0';
	}
	if (b->head_len + n > BRIDGE_HEAD_CAP)
		return 0;	/* a head that big is not a model API's */
	b->head = xreallocarray(b->head, b->head_len + n + 1, 1);
	memcpy(b->head + b->head_len, p, n);
	b->head_len += n;
	return n;
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct bridge	*b = arg;
	size_t		 n = size * nmemb;
	char		 len[24];

	if (send_head(b) == -1)
		return 0;
	if (n == 0)
		return 0;
	snprintf(len, sizeof(len), "%zx\r\n", n);
	if (out_all(b, len, strlen(len)) == -1 || out_all(b, p, n) == -1 ||
	    out_all(b, "\r\n", 2) == -1)
		return 0;	/* the client went: libcurl stops */
	if (!b->copy_over && b->copy_len + n > CASSETTE_REPLY_CAP)
		b->copy_over = true;
	if (!b->copy_over) {
		if (b->copy_len + n + 1 > b->copy_cap) {
			b->copy_cap = (b->copy_len + n + 1) * 2;
			b->copy = xreallocarray(b->copy, b->copy_cap, 1);
		}
		memcpy(b->copy + b->copy_len, p, n);
		b->copy_len += n;
		b->copy[b->copy_len] = '\0';
	}
	return n;
}

static int
on_progress(void *arg, curl_off_t a, curl_off_t b2, curl_off_t c, curl_off_t d)
{
	struct bridge	*b = arg;

	(void)a; (void)b2; (void)c; (void)d;
	return atomic_load(&b->abort) ? 1 : 0;
}

static void *
bridge_main(void *arg)
{
	struct bridge	*b = arg;
	char		 one = 1;

	b->rc = curl_easy_perform(b->curl);
	if (b->rc == CURLE_OK && !b->client_gone) {
		if (send_head(b) == 0)
			(void)out_all(b, "0\r\n\r\n", 5);
	}
	if (write(b->done[1], &one, 1) != 1)
		log_warn("%s: done", __func__);
	return NULL;
}

/* The request's headers for the upstream, its key put in; NULL-safe. */
static struct curl_slist *
headers_for(const struct bridge_conf *bc, const char *head, size_t len,
    const char *path)
{
	static const char *const drop[] = { "host", "content-length",
	    "transfer-encoding", "connection", "keep-alive", "expect",
	    "accept-encoding", "te", "upgrade", "proxy-authorization",
	    "proxy-connection" };
	struct curl_slist	*l = NULL;
	const char		*p, *eol, *end = head + len, *colon;
	char			*line;
	bool			 xkey = false, bearer = false, skip;
	size_t			 i, n;

	p = memchr(head, '\n', len);
	for (p = p ? p + 1 : end; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		n = (size_t)(eol - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == 0 || (colon = memchr(p, ':', n)) == NULL)
			continue;
		skip = false;
		for (i = 0; i < nitems(drop); i++)
			if ((size_t)(colon - p) == strlen(drop[i]) &&
			    strncasecmp(p, drop[i], strlen(drop[i])) == 0)
				skip = true;
		if ((size_t)(colon - p) == 9 && strncasecmp(p, "x-api-key", 9) == 0) {
			xkey = true;
			skip = skip || bc->key != NULL;
		}
		if ((size_t)(colon - p) == 13 &&
		    strncasecmp(p, "authorization", 13) == 0) {
			bearer = true;
			skip = skip || bc->key != NULL;
		}
		if (skip)
			continue;
		line = xasprintf("%.*s", (int)n, p);
		l = curl_slist_append(l, line);
		free(line);
	}
	l = curl_slist_append(l, "Expect:");	/* no 100-continue round trip */
	if (bc->key != NULL) {
		/* the API's own header: the one the turn's SDK sent, else by path */
		if (!xkey && !bearer) {
			n = strlen(path);
			xkey = n >= 12 && strcmp(path + n - 12, "/v1/messages") == 0;
		}
		line = xkey ? xasprintf("x-api-key: %s", bc->key) :
		    xasprintf("Authorization: Bearer %s", bc->key);
		l = curl_slist_append(l, line);
		explicit_bzero(line, strlen(line));
		free(line);
	}
	return l;
}

struct bridge *
px_bridge_start(const struct bridge_conf *bc, const char *head, size_t hlen,
    const char *method, const char *target, const char *body, size_t blen,
    int out, char *err)
{
	struct bridge	*b;

	(void)pthread_once(&curl_once, curl_start);
	b = xcalloc(1, sizeof(*b));
	b->done[0] = b->done[1] = -1;
	b->out = out;
	if (pipe2(b->done, O_CLOEXEC | O_NONBLOCK) == -1) {
		errf(err, "pipe: %s", strerror(errno));
		goto fail;
	}
	if ((b->curl = curl_easy_init()) == NULL) {
		errf(err, "libcurl: cannot start a transfer");
		goto fail;
	}
	b->url = xasprintf("%s%s", bc->base, target);
	b->body = xcalloc(1, blen + 1);
	memcpy(b->body, body, blen);
	b->body_len = blen;
	b->hdrs = headers_for(bc, head, hlen, target);
	curl_easy_setopt(b->curl, CURLOPT_URL, b->url);
	curl_easy_setopt(b->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(b->curl, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		curl_easy_setopt(b->curl, CURLOPT_POSTFIELDS, b->body);
		curl_easy_setopt(b->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)b->body_len);
	}
	curl_easy_setopt(b->curl, CURLOPT_HTTPHEADER, b->hdrs);
	curl_easy_setopt(b->curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(b->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(b->curl, CURLOPT_HEADERDATA, b);
	curl_easy_setopt(b->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(b->curl, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(b->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(b->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(b->curl, CURLOPT_XFERINFODATA, b);
	curl_easy_setopt(b->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(b->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)PROXY_CONNECT_MS);
	curl_easy_setopt(b->curl, CURLOPT_ERRORBUFFER, b->errbuf);
	/* the certificate and its name are checked: libcurl's defaults, said */
	curl_easy_setopt(b->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(b->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (bc->ca != NULL)
		curl_easy_setopt(b->curl, CURLOPT_CAINFO, bc->ca);
	if (pthread_create(&b->thr, NULL, bridge_main, b) != 0) {
		errf(err, "cannot start a thread for the upstream request");
		goto fail;
	}
	b->started = true;
	return b;
fail:
	px_bridge_free(b);
	return NULL;
}

int
px_bridge_fd(const struct bridge *b)
{
	return b->done[0];
}

void
px_bridge_abort(struct bridge *b)
{
	if (b != NULL)
		atomic_store(&b->abort, true);
}

void
px_bridge_finish(struct bridge *b, struct bridge_out *o)
{
	memset(o, 0, sizeof(*o));
	if (b->started) {
		pthread_join(b->thr, NULL);
		b->started = false;
	}
	o->head_sent = b->head_sent;
	o->client_gone = b->client_gone;
	o->status = b->status;
	snprintf(o->ctype, sizeof(o->ctype), "%s", b->ctype);
	o->ok = b->rc == CURLE_OK && !b->client_gone;
	if (o->ok && !b->copy_over) {
		o->body = b->copy ? b->copy : xstrdup("");
		o->len = b->copy_len;
		b->copy = NULL;
	}
	if (b->rc != CURLE_OK)
		snprintf(o->err, sizeof(o->err), "%s", b->errbuf[0] ? b->errbuf :
		    curl_easy_strerror(b->rc));
}

void
px_bridge_free(struct bridge *b)
{
	struct curl_slist	*h;

	if (b == NULL)
		return;
	if (b->started) {
		atomic_store(&b->abort, true);
		pthread_join(b->thr, NULL);
	}
	if (b->done[0] >= 0)
		close(b->done[0]);
	if (b->done[1] >= 0)
		close(b->done[1]);
	curl_easy_cleanup(b->curl);
	for (h = b->hdrs; h != NULL; h = h->next)
		explicit_bzero(h->data, strlen(h->data));	/* the key's line */
	curl_slist_free_all(b->hdrs);
	free(b->url);
	free(b->body);
	free(b->head);
	free(b->copy);
	free(b);
}
