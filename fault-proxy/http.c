#include "fault-proxy/http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "fault-proxy/proxy.h"

#define CHUNK_LINE_CAP	1024

void
http_frame_init(struct http_frame *h, bool response, bool head_req)
{
	free(h->line);
	memset(h, 0, sizeof(*h));
	h->state = HF_HEAD;
	h->response = response;
	h->head_req = head_req;
}

void
http_frame_free(struct http_frame *h)
{
	if (h == NULL)
		return;
	free(h->line);
	h->line = NULL;
	h->line_len = h->line_cap = 0;
}

bool
http_looks_like_request(const char *p, size_t n)
{
	static const char *const methods[] = { "GET ", "POST ", "PUT ",
	    "DELETE ", "HEAD ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE " };
	size_t	i, l;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		l = strlen(methods[i]);
		if (n >= l && memcmp(p, methods[i], l) == 0)
			return true;
	}
	return false;
}

/* Appends to the line buffer; -1 past cap (a header block is not a stream). */
static int
line_add(struct http_frame *h, const char *p, size_t n, size_t cap)
{
	size_t	ncap;
	char	*nl;

	if (h->line_len + n > cap)
		return -1;
	if (h->line_len + n + 1 > h->line_cap) {
		ncap = h->line_cap ? h->line_cap : 512;
		while (ncap < h->line_len + n + 1)
			ncap *= 2;
		if ((nl = realloc(h->line, ncap)) == NULL)
			return -1;
		h->line = nl;
		h->line_cap = ncap;
	}
	memcpy(h->line + h->line_len, p, n);
	h->line_len += n;
	h->line[h->line_len] = '\0';
	return 0;
}

static int
parse_u64_dec(const char *s, const char *e, uint64_t *v)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return dec_u64(s, e, UINT64_MAX, v);
}

/* The header block is complete in h->line: decide how the body is framed. */
static void
head_done(struct http_frame *h)
{
	char		*p = h->line, *eol, *colon, *v0;
	uint64_t	 clen = 0, v;
	bool		 have_clen = false, chunked = false, first = true;
	bool		 event_stream = false;

	for (; (eol = strstr(p, "\r\n")) != NULL; p = eol + 2) {
		if (eol == p)
			break;
		if (first) {
			first = false;
			if (h->response) {
				if (strncmp(p, "HTTP/1.", 7) != 0 || eol - p < 12 ||
				    !isdigit((unsigned char)p[9])) {
					h->state = HF_ERROR;
					return;
				}
				h->status = atoi(p + 9);
			} else {
				if (!http_looks_like_request(p, (size_t)(eol - p))) {
					h->state = HF_ERROR;
					return;
				}
				h->is_head = strncmp(p, "HEAD ", 5) == 0;
			}
			continue;
		}
		if ((colon = memchr(p, ':', (size_t)(eol - p))) == NULL) {
			h->state = HF_ERROR;
			return;
		}
		if ((size_t)(colon - p) == 14 &&
		    strncasecmp(p, "Content-Length", 14) == 0) {
			if (parse_u64_dec(colon + 1, eol, &v) == -1 ||
			    (have_clen && v != clen)) {
				h->state = HF_ERROR;
				return;
			}
			clen = v;
			have_clen = true;
		} else if ((size_t)(colon - p) == 12 &&
		    strncasecmp(p, "Content-Type", 12) == 0) {
			for (v0 = colon + 1; v0 < eol && (*v0 == ' ' ||
			    *v0 == '\t'); v0++)
				;
			event_stream = eol - v0 >= 17 &&
			    strncasecmp(v0, "text/event-stream", 17) == 0;
		} else if ((size_t)(colon - p) == 17 &&
		    strncasecmp(p, "Transfer-Encoding", 17) == 0) {
			/* chunked must be the last coding; good enough to find it */
			*eol = '\0';
			chunked = strcasestr(colon + 1, "chunked") != NULL;
			*eol = '\r';
		}
	}
	h->line_len = 0;
	h->chunked = chunked;
	h->event_stream = h->response && event_stream;
	if (h->response && h->status >= 100 && h->status < 200) {
		if (h->status == 101) {
			h->upgrade = true;
			h->state = HF_DONE;
		} else
			h->state = HF_HEAD;	/* interim: the final one follows */
		return;
	}
	if (h->response && (h->head_req || h->status == 204 ||
	    h->status == 304)) {
		h->state = HF_DONE;
		return;
	}
	if (chunked)
		h->state = HF_CHUNK_SIZE;
	else if (have_clen) {
		h->remaining = clen;
		h->state = clen ? HF_BODY_LEN : HF_DONE;
	} else
		h->state = h->response ? HF_BODY_EOF : HF_DONE;
}

static void
chunk_line_done(struct http_frame *h)
{
	uint64_t	 x = 0;
	const char	*s = h->line;
	int		 d, ndig = 0;

	for (; *s != '\0'; s++, ndig++) {
		if (isdigit((unsigned char)*s))
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (x > (UINT64_MAX >> 4)) {
			h->state = HF_ERROR;
			return;
		}
		x = (x << 4) | (uint64_t)d;
	}
	if (ndig == 0 || (*s != '\0' && *s != ';' && *s != ' ' &&
	    *s != '\t' && *s != '\r')) {
		h->state = HF_ERROR;
		return;
	}
	h->line_len = 0;
	h->remaining = x;
	h->state = x ? HF_CHUNK_DATA : HF_TRAILER;
}

size_t
http_feed(struct http_frame *h, const char *p, size_t n)
{
	size_t	 used = 0, k;
	const char *nl;

	while (used < n) {
		switch (h->state) {
		case HF_HEAD:
			/* byte by byte up to LF, so we stop exactly at the end */
			nl = memchr(p + used, '\n', n - used);
			k = nl ? (size_t)(nl - (p + used)) + 1 : n - used;
			if (line_add(h, p + used, k, PROXY_HDR_CAP) == -1) {
				h->state = HF_ERROR;
				return used;
			}
			used += k;
			if (nl == NULL)
				break;
			/* a bare CRLF before the start line is tolerated */
			if (h->line_len == 2 && h->line[0] == '\r') {
				h->line_len = 0;
				break;
			}
			if (h->line_len >= 4 &&
			    memcmp(h->line + h->line_len - 4, "\r\n\r\n", 4) == 0)
				head_done(h);
			break;
		case HF_BODY_LEN:
		case HF_CHUNK_DATA:
			k = n - used;
			if ((uint64_t)k > h->remaining)
				k = (size_t)h->remaining;
			used += k;
			h->remaining -= k;
			if (h->remaining == 0)
				h->state = h->state == HF_BODY_LEN ? HF_DONE :
				    HF_CHUNK_CRLF;
			break;
		case HF_CHUNK_CRLF:
		case HF_CHUNK_SIZE:
		case HF_TRAILER:
			nl = memchr(p + used, '\n', n - used);
			k = nl ? (size_t)(nl - (p + used)) + 1 : n - used;
			if (line_add(h, p + used, k, CHUNK_LINE_CAP) == -1) {
				h->state = HF_ERROR;
				return used;
			}
			used += k;
			if (nl == NULL)
				break;
			if (h->state == HF_CHUNK_CRLF) {
				if (h->line_len != 2 || h->line[0] != '\r') {
					h->state = HF_ERROR;
					return used;
				}
				h->line_len = 0;
				h->state = HF_CHUNK_SIZE;
			} else if (h->state == HF_CHUNK_SIZE)
				chunk_line_done(h);
			else {
				/* trailer: an empty line ends the message */
				if (h->line_len <= 2)
					h->state = HF_DONE;
				h->line_len = 0;
			}
			break;
		case HF_BODY_EOF:
			return n;
		case HF_DONE:
		case HF_ERROR:
			return used;
		}
	}
	return used;
}

void
http_eof(struct http_frame *h)
{
	if (h->state == HF_BODY_EOF)
		h->state = HF_DONE;
	else if (h->state != HF_DONE)
		h->state = HF_ERROR;
}
