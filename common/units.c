/*
 * Value grammars (contract in units.h).
 *
 * Each parser walks its bytes by hand over [s, s + len): a range parses its
 * two halves in place, without copying them, and a message quotes exactly
 * the piece that was wrong.
 */
#include "common/units.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define QUOTE_MAX	48	/* longest value quoted back in a message */

static const char *
quote_n(const char *s, size_t len, char *buf, size_t size)
{
	size_t	i, o = 0, max = size - 6;	/* quotes, "...", NUL */

	buf[o++] = '"';
	for (i = 0; i < len && i < QUOTE_MAX && o < max; i++)
		buf[o++] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

const char *
quote_value(const char *s, char *buf, size_t size)
{
	return quote_n(s, strlen(s), buf, size);
}

static int
duration_n(const char *s, size_t len, int64_t *ms, char *err)
{
	const char	*p = s, *end = s + len;
	char		 b[QUOTE_LEN];
	uint64_t	 x, mul;
	size_t		 ulen;

	if (len == 0)
		return errf(err, "empty duration (use e.g. 250ms, 5s, 2m)");
	quote_n(s, len, b, sizeof(b));
	if (*s == '-')
		return errf(err, "%s is negative (a duration is at least 0ms)", b);
	if (*p < '0' || *p > '9')
		return errf(err, "%s is not a duration (use e.g. 250ms, 5s, 2m)",
		    b);
	if (dec_digits(&p, end, INT64_MAX, &x) == -1)
		return errf(err, "%s is too large", b);
	if ((ulen = (size_t)(end - p)) == 0)
		return errf(err, "%s has no unit (use ms, s or m)", b);
	if (ulen == 2 && memcmp(p, "ms", 2) == 0)
		mul = 1;
	else if (ulen == 1 && *p == 's')
		mul = 1000;
	else if (ulen == 1 && *p == 'm')
		mul = 60 * 1000;
	else
		return errf(err, "%s has an unknown unit (use ms, s or m)", b);
	if (x > (uint64_t)INT64_MAX / mul)
		return errf(err, "%s is too large", b);
	*ms = (int64_t)(x * mul);
	return 0;
}

int
parse_duration_ms(const char *s, int64_t *ms, char *err)
{
	return duration_n(s ? s : "", s ? strlen(s) : 0, ms, err);
}

/* ms in the largest unit of the grammar that says it whole: 60m, 5s, 250ms. */
static const char *
duration_text(int64_t ms, char *buf, size_t len)
{
	if (ms % 60000 == 0)
		snprintf(buf, len, "%" PRId64 "m", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%" PRId64 "s", ms / 1000);
	else
		snprintf(buf, len, "%" PRId64 "ms", ms);
	return buf;
}

int
parse_duration_range(const char *s, int64_t limit_ms, int64_t *min_ms,
    int64_t *max_ms, char *err)
{
	const char	*dots;
	char		 b[QUOTE_LEN], lim[32];
	int64_t		 lo, hi;

	if (s == NULL || (dots = strstr(s, "..")) == NULL) {
		if (parse_duration_ms(s, &lo, err) == -1)
			return -1;
		if (lo > limit_ms)
			return errf(err, "%s is more than %s",
			    quote_value(s, b, sizeof(b)), duration_text(limit_ms, lim,
			    sizeof(lim)));
		*min_ms = *max_ms = lo;
		return 0;
	}
	if (duration_n(s, (size_t)(dots - s), &lo, err) == -1 ||
	    parse_duration_ms(dots + 2, &hi, err) == -1)
		return -1;
	if (lo > hi)
		return errf(err, "%s: the minimum is above the maximum",
		    quote_value(s, b, sizeof(b)));
	if (hi > limit_ms)
		return errf(err, "%s: the maximum is more than %s",
		    quote_value(s, b, sizeof(b)), duration_text(limit_ms, lim,
		    sizeof(lim)));
	*min_ms = lo;
	*max_ms = hi;
	return 0;
}

/*
 * Digits with an optional fraction, converted by strtod only once they are
 * known to be nothing else, so "1e-3", "nan" and "inf" never get through.
 */
int
parse_share(const char *s, double *v, char *err)
{
	char		 b[QUOTE_LEN], num[64];
	const char	*p = s;
	size_t		 len, ndigits = 0;
	int		 pct = 0;
	double		 x;

	if (s == NULL || *s == '\0')
		return errf(err, "empty share (use e.g. 0.15 or 15%%)");
	quote_value(s, b, sizeof(b));
	len = strlen(s);
	if (s[len - 1] == '%') {
		pct = 1;
		len--;
	}
	for (; p < s + len && *p >= '0' && *p <= '9'; p++)
		ndigits++;
	if (p < s + len && *p == '.')
		for (p++; p < s + len && *p >= '0' && *p <= '9'; p++)
			ndigits++;
	if (ndigits == 0 || p != s + len || len >= sizeof(num))
		return errf(err, "%s is not a share (use e.g. 0.15 or 15%%)", b);
	memcpy(num, s, len);
	num[len] = '\0';
	x = strtod(num, NULL);
	if (pct) {
		if (x > 100)
			return errf(err, "%s is more than 100%%", b);
		x /= 100;
	} else if (x > 1)
		return errf(err, "%s is more than 1 (a share is 0..1 or "
		    "0%%..100%%)", b);
	*v = x;
	return 0;
}

int
parse_bytes(const char *s, int64_t *v, char *err)
{
	char		 b[QUOTE_LEN];
	const char	*p, *end;
	uint64_t	 x, mul = 1;

	if (s == NULL)
		s = "";
	quote_value(s, b, sizeof(b));
	p = s;
	end = s + strlen(s);
	if (dec_digits(&p, end, INT64_MAX, &x) == -1)
		return errf(err, "%s is too large", b);
	if (p != s && end - p == 1) {
		switch (*p) {
		case 'K': case 'k':
			mul = 1024;
			p++;
			break;
		case 'M': case 'm':
			mul = 1024 * 1024;
			p++;
			break;
		case 'G': case 'g':
			mul = 1024 * 1024 * 1024;
			p++;
			break;
		}
	}
	if (p == s || p != end)
		return errf(err, "%s is not a byte count (use e.g. 65536, 512K, "
		    "1M)", b);
	if (x > (uint64_t)INT64_MAX / mul)
		return errf(err, "%s is too large", b);
	*v = (int64_t)(x * mul);
	return 0;
}

int
parse_count(const char *s, int64_t min, int64_t max, int64_t *v, char *err)
{
	char		b[QUOTE_LEN];
	uint64_t	x;

	if (s == NULL)
		s = "";
	if (min < 0 || max < min ||
	    dec_u64(s, s + strlen(s), (uint64_t)max, &x) == -1 || x < (uint64_t)min)
		return errf(err, "%s is not a whole number of %lld..%lld",
		    quote_value(s, b, sizeof(b)), (long long)min, (long long)max);
	*v = (int64_t)x;
	return 0;
}

int
parse_count_range(const char *s, int64_t min, int64_t max, int64_t *lo,
    int64_t *hi, char *err)
{
	const char	*dots;
	char		 b[QUOTE_LEN], first[32];
	int64_t		 a, z;

	if (s == NULL || (dots = strstr(s, "..")) == NULL) {
		if (parse_count(s, min, max, &a, err) == -1)
			return -1;
		*lo = *hi = a;
		return 0;
	}
	if ((size_t)(dots - s) >= sizeof(first))
		return errf(err, "%s is not a whole number of %lld..%lld, nor a "
		    "range of them", quote_value(s, b, sizeof(b)), (long long)min,
		    (long long)max);
	memcpy(first, s, (size_t)(dots - s));
	first[dots - s] = '\0';
	if (parse_count(first, min, max, &a, err) == -1 ||
	    parse_count(dots + 2, min, max, &z, err) == -1)
		return -1;
	if (a > z)
		return errf(err, "%s: the minimum is above the maximum",
		    quote_value(s, b, sizeof(b)));
	*lo = a;
	*hi = z;
	return 0;
}
