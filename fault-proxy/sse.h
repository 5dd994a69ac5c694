/*
 * Server-sent events counted in a relayed HTTP response, private to
 * fault-proxy: where a streamed model reply's K-th event ends in the bytes
 * on the wire, so a fault can cut the stream or stall it right there
 * (docs/models.md; the stream faults, docs/faults.md).
 *
 * Contract
 *  - sse_begin reads a response's head (its status line and headers, as
 *    relayed) and says whether its body is an event stream
 *    (Content-Type: text/event-stream) and how it is framed (chunked, or
 *    not: a length or the connection's end); sse_start is told both by a
 *    caller whose framer has read the head (conn.c, http.h).
 *  - sse_feed is given the body's raw bytes as they pass, in pieces of any
 *    size, and counts the events whose end (a blank line: "\n\n", "\r\n\r\n"
 *    or "\r\r") has passed, through the chunked framing when there is one.
 *    With stop > 0 it consumes no byte past the end of event number stop
 *    (its last newline), and returns how many it took: the bytes that may
 *    go before the cut or the stall.  It never reads past n, and trusts no
 *    length of the peer's: a chunk size that is not hex ends the count
 *    (every later byte passes uncounted).
 *  - Pure: no allocation, no clock.
 */
#ifndef SOAK_PROXY_SSE_H
#define SOAK_PROXY_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sse_chunk { SSE_PLAIN, SSE_SIZE, SSE_EXT, SSE_DATA, SSE_DATA_CR,
		 SSE_DATA_LF, SSE_TRAILER, SSE_DONE, SSE_BROKEN };

struct sse {
	bool		 stream;	/* the body is text/event-stream */
	bool		 chunked;
	enum sse_chunk	 cs;
	uint64_t	 left;		/* of the chunk being read */
	int		 digits;	/* of its size line, so far */
	int		 nl;		/* line ends in a row, in the data */
	bool		 cr;		/* the last data byte was a \r */
	uint32_t	 events;	/* ended so far */
};

/* The head of a response (head, hlen: through its blank line). */
void	sse_begin(struct sse *s, const char *head, size_t hlen);
/* The same, from what a framer read of the head (http.h). */
void	sse_start(struct sse *s, bool stream, bool chunked);
/*
 * Counts the events of p[0..n); with stop > 0 takes no byte past the end
 * of event stop.  Returns the bytes taken (n when not stopped).
 */
size_t	sse_feed(struct sse *s, const char *p, size_t n, uint32_t stop);

#endif
