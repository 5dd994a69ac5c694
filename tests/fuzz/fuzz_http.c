/*
 * fault-proxy's HTTP/1.1 framer (fault-proxy/http.h) on arbitrary bytes,
 * split at arbitrary points.
 *
 * The input is
 *
 *	flags  nsplit  size[nsplit % 16]  stream...
 *
 * flags bit 0: the stream is responses (else requests); bit 1: responses
 * to HEAD.  The stream is framed message after message, as the proxy
 * does: http_feed until HF_DONE, then a fresh frame for the bytes left;
 * HF_ERROR, a 101 upgrade or the end of the input end it (the end through
 * http_eof when a message is under way).  It is framed three ways: in one
 * piece, in pieces of the given sizes (cycled; a size 0 is an empty read,
 * then one byte), and a byte at a time.  Checked:
 *  - a feed never consumes more than it was given, and consumes all of it
 *    unless the message ended (HF_DONE) or the framer gave up (HF_ERROR);
 *  - an empty feed consumes nothing and changes nothing;
 *  - the three ways find the same messages: the same starts, the same
 *    ends and the same outcome (state, status, HEAD, upgrade).  Where a
 *    message was refused (HF_ERROR) its end is not compared: the proxy
 *    frames all it holds as tcp from there, whatever the count.
 */
#include <stdbool.h>
#include <string.h>

#include "fault-proxy/http.h"
#include "tests/fuzz/fuzz.h"

#define MAX_MSGS	1024

struct bound {
	size_t		 start, end;
	enum http_state	 state;
	int		 status;
	bool		 is_head, upgrade;
};

struct framing {
	struct bound	 b[MAX_MSGS];
	size_t		 n;
};

static void
record(struct framing *f, const struct http_frame *h, size_t start, size_t end)
{
	f->b[f->n++] = (struct bound){ .start = start, .end = end,
	    .state = h->state, .status = h->status, .is_head = h->is_head,
	    .upgrade = h->upgrade };
}

/* Frames p[0..n) in pieces of sizes[] (cycled), or in one piece. */
static void
frame(const char *p, size_t n, const uint8_t *sizes, size_t nsizes,
    bool response, bool head_req, struct framing *f)
{
	struct http_frame	h;
	enum http_state		before;
	size_t			off = 0, start = 0, si = 0, c, used;

	memset(&h, 0, sizeof(h));
	f->n = 0;
	http_frame_init(&h, response, head_req);
	while (off < n && f->n < MAX_MSGS) {
		c = n - off;
		if (nsizes > 0) {
			size_t	s = sizes[si++ % nsizes];

			if (s == 0) {
				before = h.state;
				used = http_feed(&h, p + off, 0);
				FUZZ_CHECK(used == 0 && h.state == before,
				    "an empty feed consumed %zu bytes, state %d "
				    "-> %d", used, before, h.state);
				s = 1;
			}
			if (s < c)
				c = s;
		}
		while (c > 0 && f->n < MAX_MSGS) {
			used = http_feed(&h, p + off, c);
			FUZZ_CHECK(used <= c, "consumed %zu of %zu bytes", used, c);
			FUZZ_CHECK(used == c || h.state == HF_DONE ||
			    h.state == HF_ERROR, "consumed %zu of %zu bytes in "
			    "state %d", used, c, h.state);
			off += used;
			c -= used;
			if (h.state == HF_ERROR) {
				record(f, &h, start, off);
				goto out;
			}
			if (h.state != HF_DONE)
				continue;
			FUZZ_CHECK(off > start, "an empty message");
			record(f, &h, start, off);
			if (h.upgrade)
				goto out;	/* a byte stream from here */
			start = off;
			http_frame_init(&h, response, head_req);
		}
	}
	if (off > start && f->n < MAX_MSGS) {
		http_eof(&h);
		FUZZ_CHECK(h.state == HF_DONE || h.state == HF_ERROR,
		    "state %d after http_eof", h.state);
		record(f, &h, start, off);
	}
out:
	http_frame_free(&h);
}

static void
compare(const struct framing *a, const struct framing *b, const char *how)
{
	size_t	i;

	FUZZ_CHECK(a->n == b->n, "%zu messages in one piece, %zu %s", a->n,
	    b->n, how);
	for (i = 0; i < a->n; i++) {
		const struct bound	*x = &a->b[i], *y = &b->b[i];

		FUZZ_CHECK(x->start == y->start && x->state == y->state &&
		    x->status == y->status && x->is_head == y->is_head &&
		    x->upgrade == y->upgrade &&
		    (x->state == HF_ERROR || x->end == y->end),
		    "message %zu: [%zu, %zu) state %d status %d in one piece, "
		    "[%zu, %zu) state %d status %d %s", i, x->start, x->end,
		    x->state, x->status, y->start, y->end, y->state, y->status,
		    how);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct framing	 whole, split, bytes;
	static const uint8_t	 one = 1;
	const uint8_t		*sizes;
	size_t			 nsizes;
	bool			 response, head_req;

	if (size < 2)
		return 0;
	response = data[0] & 1;
	head_req = data[0] & 2;
	nsizes = data[1] % 16;
	if (size < 2 + nsizes)
		return 0;
	sizes = data + 2;
	data += 2 + nsizes;
	size -= 2 + nsizes;

	frame((const char *)data, size, NULL, 0, response, head_req, &whole);
	frame((const char *)data, size, sizes, nsizes, response, head_req, &split);
	frame((const char *)data, size, &one, 1, response, head_req, &bytes);
	compare(&whole, &split, "in the given pieces");
	compare(&whole, &bytes, "a byte at a time");
	(void)http_looks_like_request((const char *)data, size);
	return 0;
}
