#include "common/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static char	log_role[64] = "soak";
static int	log_level_verbose;
static int	log_warnings_off;

void
log_init(const char *role, int verbose)
{
	log_set_role(role);
	log_level_verbose = verbose;
}

void
log_set_role(const char *role)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
}

void
log_set_warnings(int on)
{
	log_warnings_off = !on;
}

int
log_verbose(void)
{
	return log_level_verbose;
}

static size_t	esc_piece(const unsigned char *s, size_t avail, int flags,
		    char *piece, size_t *n);

/*
 * One write(2) per line, so lines from concurrent processes never
 * interleave.  Whatever a message quotes, no terminal escape reaches
 * stderr: the line goes out the log_escape way, its own backslashes and
 * line breaks as they are (a caller escapes what could fake a line).
 */
static void
log_vemit(const char *level, const char *fmt, va_list ap, int with_errno)
{
	char		 raw[2048], line[4096], piece[16];
	int		 saved = errno, n;
	size_t		 o = 0, i, plen, k;

	n = snprintf(raw, sizeof(raw), "%s: %s", log_role, level);
	if (n < 0 || (size_t)n >= sizeof(raw))
		n = 0;
	n += vsnprintf(raw + n, sizeof(raw) - n, fmt, ap);
	if ((size_t)n >= sizeof(raw) - 2)
		n = sizeof(raw) - 2 - 64;
	if (with_errno)
		n += snprintf(raw + n, sizeof(raw) - n, ": %s", strerror(saved));
	if ((size_t)n > sizeof(raw) - 2)
		n = sizeof(raw) - 2;
	for (i = 0; i < (size_t)n; i += k) {
		plen = esc_piece((const unsigned char *)raw + i, (size_t)n - i,
		    LOG_ESC_LINES | LOG_ESC_BACKSLASH, piece, &k);
		if (o + plen > sizeof(line) - 1)
			break;
		memcpy(line + o, piece, plen);
		o += plen;
	}
	line[o++] = '\n';
	(void)!write(STDERR_FILENO, line, o);
	errno = saved;
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (!log_level_verbose)
		return;
	va_start(ap, fmt);
	log_vemit("", fmt, ap, 0);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("", fmt, ap, 0);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	if (log_warnings_off)
		return;
	va_start(ap, fmt);
	log_vemit("warning: ", fmt, ap, 1);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	if (log_warnings_off)
		return;
	va_start(ap, fmt);
	log_vemit("warning: ", fmt, ap, 0);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit("fatal: ", fmt, ap, 0);
	va_end(ap);
	exit(70);
}

/*
 * One piece of s (avail bytes left, 1 or more) written the log_escape way
 * into piece (16 bytes hold any): its length; *n, the bytes of s it stands
 * for.  flags: LOG_ESC_*.
 */
static size_t
esc_piece(const unsigned char *s, size_t avail, int flags, char *piece,
    size_t *n)
{
	static const char	 hex[] = "0123456789abcdef";
	size_t			 plen = 0, i;
	uint32_t		 cp;

	*n = 1;
	if ((*s == '\n' && (flags & LOG_ESC_LINES)) ||
	    (*s == '\\' && (flags & LOG_ESC_BACKSLASH)))
		piece[plen++] = (char)*s;
	else if (*s == '\\' || *s == '\n' || *s == '\r' || *s == '\t') {
		piece[plen++] = '\\';
		piece[plen++] = *s == '\\' ? '\\' : *s == '\n' ? 'n' :
		    *s == '\r' ? 'r' : 't';
	} else if (*s >= 0x20 && *s < 0x7f)
		piece[plen++] = (char)*s;
	else if (*s >= 0x80 && (*n = utf8_decode((const char *)s, avail,
	    &cp)) > 0 && !utf8_hidden(cp)) {
		memcpy(piece, s, *n);
		plen = *n;
	} else {
		if (*n == 0)
			*n = 1;		/* not UTF-8: this byte alone */
		for (i = 0; i < *n; i++) {
			piece[plen++] = '\\';
			piece[plen++] = 'x';
			piece[plen++] = hex[s[i] >> 4];
			piece[plen++] = hex[s[i] & 0xf];
		}
	}
	return plen;
}

char *
log_escape(char *buf, size_t size, const char *str)
{
	const unsigned char	*s = (const unsigned char *)(str ? str : "(null)");
	char			 piece[16];
	size_t			 o = 0, mark = 0, plen, n, i;

	if (size == 0)
		return buf;
	while (*s) {
		plen = esc_piece(s, strnlen((const char *)s, 4), 0, piece, &n);
		if (o + plen > size - 1) {
			/* Cut where "..." still fits, never inside a piece. */
			o = mark;
			for (i = 0; i < 3 && o < size - 1; i++)
				buf[o++] = '.';
			break;
		}
		memcpy(buf + o, piece, plen);
		o += plen;
		if (o + 3 <= size - 1)
			mark = o;
		s += n;
	}
	buf[o] = '\0';
	return buf;
}

int
log_escape_put(FILE *f, const char *str, size_t len, int flags)
{
	const unsigned char	*s = (const unsigned char *)str, *end;
	char			 piece[16];
	size_t			 plen, n;

	if (str == NULL)
		return fputs("(null)", f) == EOF ? -1 : 0;
	for (end = s + len; s < end; s += n) {
		plen = esc_piece(s, (size_t)(end - s), flags, piece, &n);
		if (fwrite(piece, 1, plen, f) != plen)
			return -1;
	}
	return 0;
}
