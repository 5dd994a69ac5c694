/*
 * Server-sent events counted in a relayed response (sse.h): the chunked
 * framing undone byte by byte, and a blank line in what it carries ends an
 * event (the HTML standard's event stream: a line ends in CRLF, LF or CR).
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "fault-proxy/sse.h"

#define SSE_SIZE_DIGITS	15		/* a chunk under 2^60 bytes */

/* The value of header name (lower case) in head, as a pointer and length. */
static const char *
header(const char *head, size_t hlen, const char *name, size_t *vlen)
{
	const char	*p = head, *end = head + hlen, *eol, *v;
	size_t		 n = strlen(name);

	for (; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		if ((size_t)(eol - p) <= n || p[n] != ':' ||
		    strncasecmp(p, name, n) != 0)
			continue;
		for (v = p + n + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		*vlen = (size_t)(eol - v);
		while (*vlen > 0 && (v[*vlen - 1] == '\r' || v[*vlen - 1] == ' '))
			(*vlen)--;
		return v;
	}
	return NULL;
}

void
sse_start(struct sse *s, bool stream, bool chunked)
{
	memset(s, 0, sizeof(*s));
	s->stream = stream;
	s->chunked = chunked;
	s->cs = s->chunked ? SSE_SIZE : SSE_PLAIN;
}

void
sse_begin(struct sse *s, const char *head, size_t hlen)
{
	const char	*v;
	size_t		 n;
	bool		 stream, chunked;

	v = header(head, hlen, "content-type", &n);
	stream = v != NULL && n >= 17 && strncasecmp(v, "text/event-stream",
	    17) == 0;
	v = header(head, hlen, "transfer-encoding", &n);
	chunked = v != NULL && n >= 7 && strncasecmp(v + n - 7, "chunked",
	    7) == 0;
	sse_start(s, stream, chunked);
}

/* One byte of the stream itself: 1 when it ends an event. */
static int
data_byte(struct sse *s, char c)
{
	if (c == '\n' && s->cr) {
		s->cr = false;		/* the LF of a CRLF: one line end */
		return 0;
	}
	s->cr = c == '\r';
	if (c != '\n' && c != '\r') {
		s->nl = 0;
		return 0;
	}
	if (++s->nl < 2)
		return 0;
	s->nl = 0;
	s->events++;
	return 1;
}

size_t
sse_feed(struct sse *s, const char *p, size_t n, uint32_t stop)
{
	size_t	i;
	int	d;

	if (!s->stream)
		return n;
	for (i = 0; i < n; i++) {
		char	c = p[i];

		switch (s->cs) {
		case SSE_PLAIN:
		case SSE_DATA:
			if (data_byte(s, c) && stop > 0 && s->events >= stop) {
				if (s->cs == SSE_DATA && --s->left == 0)
					s->cs = SSE_DATA_CR;
				return i + 1;
			}
			if (s->cs == SSE_DATA && --s->left == 0)
				s->cs = SSE_DATA_CR;
			break;
		case SSE_SIZE:
			if ((d = hex_digit((unsigned char)c)) >= 0) {
				if (++s->digits > SSE_SIZE_DIGITS) {
					s->cs = SSE_BROKEN;
					break;
				}
				s->left = s->left * 16 + (uint64_t)d;
			} else if (c == ';' || c == ' ' || c == '\t')
				s->cs = SSE_EXT;
			else if (c == '\n') {
				s->cs = s->digits == 0 ? SSE_BROKEN : s->left == 0 ?
				    SSE_TRAILER : SSE_DATA;
				s->digits = 0;
			} else if (c != '\r')
				s->cs = SSE_BROKEN;
			break;
		case SSE_EXT:
			if (c == '\n') {
				s->cs = s->digits == 0 ? SSE_BROKEN : s->left == 0 ?
				    SSE_TRAILER : SSE_DATA;
				s->digits = 0;
			}
			break;
		case SSE_DATA_CR:
			s->cs = c == '\r' ? SSE_DATA_LF : c == '\n' ? SSE_SIZE :
			    SSE_BROKEN;
			break;
		case SSE_DATA_LF:
			s->cs = c == '\n' ? SSE_SIZE : SSE_BROKEN;
			break;
		case SSE_TRAILER:
		case SSE_DONE:
		case SSE_BROKEN:
			return n;	/* nothing more is counted */
		}
	}
	return n;
}
