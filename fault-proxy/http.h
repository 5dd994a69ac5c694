/*
 * A streaming HTTP/1.1 message framer, private to fault-proxy.  It never
 * copies the body: it only finds where one request or response ends so the
 * proxy can count exchanges and replay a request byte for byte.
 *
 * Contract: http_feed() consumes at most n bytes and returns how many belong
 * to the current message; when the message is complete state becomes
 * HF_DONE and the remaining bytes belong to the next one.  HF_ERROR means
 * "not HTTP we understand": the caller falls back to tcp framing.  A
 * close-delimited response body ends with http_eof().
 */
#ifndef SOAK_PROXY_HTTP_H
#define SOAK_PROXY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum http_state {
	HF_HEAD,		/* collecting the start line and headers */
	HF_BODY_LEN,		/* Content-Length body */
	HF_CHUNK_SIZE,		/* chunk-size line */
	HF_CHUNK_DATA,
	HF_CHUNK_CRLF,		/* CRLF after chunk data */
	HF_TRAILER,		/* trailer lines after the last chunk */
	HF_BODY_EOF,		/* response body delimited by close */
	HF_DONE,
	HF_ERROR
};

struct http_frame {
	enum http_state	 state;
	bool		 response;
	bool		 head_req;	/* response to a HEAD: no body */
	bool		 is_head;	/* request: method was HEAD */
	bool		 upgrade;	/* response: 101 Switching Protocols */
	/* of the last head read: Transfer-Encoding chunked, and (a
	 * response) Content-Type text/event-stream: server-sent events */
	bool		 chunked;
	bool		 event_stream;
	int		 status;
	uint64_t	 remaining;	/* body or chunk bytes left */
	char		*line;		/* header block / chunk line so far */
	size_t		 line_len;
	size_t		 line_cap;
};

void	http_frame_init(struct http_frame *h, bool response, bool head_req);
void	http_frame_free(struct http_frame *h);
size_t	http_feed(struct http_frame *h, const char *p, size_t n);
void	http_eof(struct http_frame *h);
/* Whether these first bytes look like an HTTP/1.x request line. */
bool	http_looks_like_request(const char *p, size_t n);

#endif
