/*
 * Where the password of a libpq connection string is (contract in
 * conninfo.h).  The scanner mirrors libpq's parser (fe-connect.c:
 * conninfo_parse, conninfo_uri_parse_options, conninfo_uri_parse_params)
 * and marks spans of the string; redaction replaces the spans, scrubbing
 * replaces their text wherever a message repeats it.  The scanner calls no
 * libpq: the redactor must work on strings libpq refuses, and their error
 * messages are exactly what must be scrubbed.  Its spans hold more than
 * libpq's password where a string is malformed (a second '@', a '?' in
 * brackets), so scrubbing, which looks for the password as libpq read it,
 * also asks libpq (PQconninfoParse) when libpq takes the string.
 */
#include "common/conninfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libpq-fe.h>

#include "common/util.h"

/* isspace() in the C locale, as libpq */
#define CI_BLANKS	" \t\n\v\f\r"

/* One password: where its value is written (inside any quotes), as read. */
struct ci_secret {
	size_t	 off;
	size_t	 len;
	char	*plain;		/* decoded/unescaped; NULL when undecodable */
	bool	 uri;		/* in a URI: libpq may split it at @ / : , */
};

struct ci_secrets {
	struct ci_secret	*v;
	size_t			 n;
};

static void
add(struct ci_secrets *sv, size_t off, size_t len, char *plain, bool uri)
{
	if (len == 0) {
		free(plain);
		return;
	}
	sv->v = xreallocarray(sv->v, sv->n + 1, sizeof(*sv->v));
	sv->v[sv->n++] = (struct ci_secret){ off, len, plain, uri };
}

static void
secrets_free(struct ci_secrets *sv)
{
	size_t	i;

	for (i = 0; i < sv->n; i++) {
		if (sv->v[i].plain != NULL)
			explicit_bzero(sv->v[i].plain, strlen(sv->v[i].plain));
		free(sv->v[i].plain);
	}
	free(sv->v);
	memset(sv, 0, sizeof(*sv));
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* libpq's conninfo_uri_decode: %XX only; NULL for a bad or %00 escape. */
static char *
pct_decode(const char *s, size_t len)
{
	char	*d = xcalloc(len + 1, 1), *o = d;
	size_t	 i;
	int	 hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= len)
			goto bad;
		hi = hexval(s[i + 1]);
		lo = hexval(s[i + 2]);
		if (hi == -1 || lo == -1 || (hi == 0 && lo == 0))
			goto bad;
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	return d;
bad:
	free(d);
	return NULL;
}

/* The length of the URI scheme at s ("postgresql://"), any case; or 0. */
static size_t
uri_prefix(const char *s)
{
	static const char *const schemes[] = { "postgresql://", "postgres://" };
	size_t			 i, n;

	for (i = 0; i < nitems(schemes); i++) {
		n = strlen(schemes[i]);
		if (strncasecmp(s, schemes[i], n) == 0)
			return n;
	}
	return 0;
}

/*
 * The keywords whose values are secrets: the password, and sslpassword
 * (the passphrase of an encrypted client key, sslkey=).
 */
static bool
secret_key(const char *name, size_t len)
{
	return (len == 8 && strncmp(name, "password", 8) == 0) ||
	    (len == 11 && strncmp(name, "sslpassword", 11) == 0);
}

/* Each secret parameter ("password", "sslpassword") of the query after q ('?'). */
static void
scan_query(const char *s, const char *q, struct ci_secrets *sv)
{
	const char	*k, *eq, *amp;
	char		*key;

	for (k = q + 1; *k != '\0'; k = *amp ? amp + 1 : amp) {
		amp = k + strcspn(k, "&");
		if ((eq = memchr(k, '=', (size_t)(amp - k))) == NULL)
			continue;
		if ((key = pct_decode(k, (size_t)(eq - k))) == NULL)
			key = xasprintf("%.*s", (int)(eq - k), k);
		if (secret_key(key, strlen(key)))
			add(sv, (size_t)(eq + 1 - s), (size_t)(amp - eq - 1),
			    pct_decode(eq + 1, (size_t)(amp - eq - 1)), true);
		free(key);
	}
}

/*
 * URI form.  libpq takes the userinfo up to the first '@' met before any
 * '/', the password from its first ':', and the query from the first '?'
 * after the userinfo and any host in brackets ("[::1]", which may hold a
 * '?' of its own).  We end the userinfo at the later of that '@' and the
 * last '@' before the first '?', which holds libpq's password and any
 * password with an unencoded '/' or '@' that libpq would misread as host,
 * port or database; and we read a query from every '?', so libpq's is
 * read wherever it starts.
 */
static void
scan_uri(const char *s, size_t start, struct ci_secrets *sv)
{
	const char	*a = s + start, *p, *end = NULL, *colon, *q;
	size_t		 n, len;

	n = strcspn(a, "@/");
	if (a[n] == '@')
		end = a + n;
	q = a + strcspn(a, "?");
	for (p = a; p < q; p++)
		if (*p == '@' && (end == NULL || p > end))
			end = p;
	if (end != NULL) {
		colon = a + strcspn(a, ":@");
		if (*colon == ':' && colon < end) {
			len = (size_t)(end - colon - 1);
			add(sv, (size_t)(colon + 1 - s), len,
			    pct_decode(colon + 1, len), true);
		}
	}
	for (p = q; *p == '?'; p = p + 1 + strcspn(p + 1, "?"))
		scan_query(s, p, sv);
}

/*
 * Keyword/value form, as libpq's conninfo_parse: NAME [blanks] = [blanks]
 * VALUE, where VALUE is 'quoted' (backslash escapes) or runs to the next
 * blank (backslash escapes).  libpq gives up at a word without '='; we
 * carry on (a later password must still be found), and when such words
 * follow a password they join it.
 */
static void
scan_keywords(const char *s, struct ci_secrets *sv)
{
	const char	*p = s, *name, *name_end, *val;
	char		*plain, *o;
	bool		 last_was_pw = false;

	for (;;) {
		p += strspn(p, CI_BLANKS);
		if (*p == '\0')
			break;
		name = p;
		p += strcspn(p, "=" CI_BLANKS);
		name_end = p;
		p += strspn(p, CI_BLANKS);
		if (*p != '=') {
			/* A word libpq refuses; after a password, its tail. */
			if (last_was_pw)
				add(sv, (size_t)(name - s),
				    (size_t)(name_end - name), NULL, false);
			p = name_end;
			continue;
		}
		p++;
		p += strspn(p, CI_BLANKS);
		val = p;
		plain = o = xcalloc(strlen(val) + 1, 1);
		if (*p == '\'') {
			val = ++p;	/* the quotes stay: '***' */
			for (; *p != '\0' && *p != '\''; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				*o++ = *p;
			}
		} else {
			for (; *p != '\0' && !strchr(CI_BLANKS, *p); p++) {
				/* A lone trailing backslash is dropped. */
				if (*p == '\\' && p[1] == '\0')
					break;
				if (*p == '\\')
					p++;
				*o++ = *p;
			}
			if (*p == '\\')
				p++;
		}
		last_was_pw = secret_key(name, (size_t)(name_end - name)) &&
		    *plain != '\0';
		if (last_was_pw)
			add(sv, (size_t)(val - s), (size_t)(p - val), plain,
			    false);
		else
			free(plain);
		if (*p == '\'') {
			/* A quoted password ends at its quote: none joins it. */
			last_was_pw = false;
			p++;
		}
	}
}

static void
scan(const char *s, struct ci_secrets *sv)
{
	size_t	lead = strspn(s, CI_BLANKS), n;

	memset(sv, 0, sizeof(*sv));
	if ((n = uri_prefix(s + lead)) > 0)
		scan_uri(s, lead + n, sv);
	else
		scan_keywords(s, sv);
}

static int
cmp_secret(const void *a, const void *b)
{
	const struct ci_secret	*x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* One pass: every span scan() finds replaced by the mark. */
static char *
redact_once(const char *conninfo)
{
	struct ci_secrets	 sv;
	size_t			 i, at = 0, end, len;
	char			*out;
	FILE			*f;

	scan(conninfo, &sv);
	/* A URI's readings of its query can mark one span more than once. */
	if (sv.n > 1)
		qsort(sv.v, sv.n, sizeof(*sv.v), cmp_secret);
	if ((f = open_memstream(&out, &len)) == NULL)
		abort();
	for (i = 0; i < sv.n; i++) {
		end = sv.v[i].off + sv.v[i].len;
		if (end <= at)
			continue;
		/* Overlapping spans, or words of one password: one mark. */
		if (sv.v[i].off >= at && (i == 0 ||
		    strspn(conninfo + at, CI_BLANKS) < sv.v[i].off - at)) {
			fwrite(conninfo + at, 1, sv.v[i].off - at, f);
			fputs(CONNINFO_MARK, f);
		}
		at = end;
	}
	fputs(conninfo + at, f);
	fclose(f);
	secrets_free(&sv);
	return out;
}

/*
 * The spans of a malformed string can overlap (a query that starts inside
 * the userinfo, a '?' inside a password): once marked, the string may read
 * otherwise, its '&', '?' or '@' gone with the password, and show a new
 * password.  So it is marked again until it shows none; a string that
 * still does after a few passes becomes the mark alone.
 */
#define CI_PASSES	8

char *
conninfo_redact(const char *conninfo)
{
	char	*out, *next;
	int	 pass;

	if (conninfo == NULL)
		return NULL;
	out = redact_once(conninfo);
	for (pass = 1; pass < CI_PASSES && conninfo_has_password(out); pass++) {
		next = redact_once(out);
		free(out);
		out = next;
	}
	if (conninfo_has_password(out)) {
		free(out);
		out = xstrdup(CONNINFO_MARK);
	}
	return out;
}

bool
conninfo_has_password(const char *conninfo)
{
	struct ci_secrets	sv;
	size_t			i;
	bool			has = false;

	if (conninfo == NULL)
		return false;
	scan(conninfo, &sv);
	for (i = 0; i < sv.n && !has; i++)
		has = sv.v[i].len != strlen(CONNINFO_MARK) ||
		    strncmp(conninfo + sv.v[i].off, CONNINFO_MARK,
		    sv.v[i].len) != 0;
	secrets_free(&sv);
	return has;
}

/* Replaces every needle in msg with the mark, cutting the result at size. */
static void
replace_all(char *msg, size_t size, const char *needle, size_t nlen)
{
	char	*out, *p, *hit;
	size_t	 len;
	FILE	*f;

	if (nlen == 0 || strstr(msg, needle) == NULL)
		return;
	if ((f = open_memstream(&out, &len)) == NULL)
		abort();
	for (p = msg; (hit = strstr(p, needle)) != NULL; p = hit + nlen) {
		fwrite(p, 1, (size_t)(hit - p), f);
		fputs(CONNINFO_MARK, f);
	}
	fputs(p, f);
	fclose(f);
	snprintf(msg, size, "%s", out);
	free(out);
}

static int
cmp_longer(const void *a, const void *b)
{
	size_t	x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);

	return x > y ? -1 : x < y;
}

/*
 * The secrets libpq reads in conninfo (password, sslpassword), appended
 * to *needles (heap strings); none when libpq refuses the string.
 */
static void
libpq_secrets(const char *conninfo, char ***needles, size_t *n)
{
	PQconninfoOption	*opts, *o;
	char			*errmsg = NULL;

	if ((opts = PQconninfoParse(conninfo, &errmsg)) == NULL) {
		PQfreemem(errmsg);
		return;
	}
	for (o = opts; o->keyword != NULL; o++)
		if (secret_key(o->keyword, strlen(o->keyword)) && o->val != NULL &&
		    *o->val != '\0') {
			*needles = xreallocarray(*needles, *n + 1, sizeof(**needles));
			(*needles)[(*n)++] = xstrdup(o->val);
		}
	PQconninfoFree(opts);
}

void
conninfo_scrub(char *msg, size_t size, const char *conninfo)
{
	struct ci_secrets	  sv;
	char			**needles = NULL, *raw, *w, *save;
	size_t			  i, n = 0;

	if (msg == NULL || size == 0 || conninfo == NULL)
		return;
	libpq_secrets(conninfo, &needles, &n);
	scan(conninfo, &sv);
	for (i = 0; i < sv.n; i++) {
		raw = xasprintf("%.*s", (int)sv.v[i].len,
		    conninfo + sv.v[i].off);
		needles = xreallocarray(needles, n + 2, sizeof(*needles));
		if (sv.v[i].plain != NULL)
			needles[n++] = xstrdup(sv.v[i].plain);
		needles[n++] = raw;
		/*
		 * libpq reads "u:p@ss@h" as host "ss@h" and "u:p/w@h" as host
		 * u, port p: its messages then quote the pieces.
		 */
		if (!sv.v[i].uri || strcspn(raw, "@/:,") == strlen(raw))
			continue;
		raw = xstrdup(raw);
		for (w = strtok_r(raw, "@/:,", &save); w != NULL;
		    w = strtok_r(NULL, "@/:,", &save)) {
			needles = xreallocarray(needles, n + 1,
			    sizeof(*needles));
			needles[n++] = xstrdup(w);
		}
		free(raw);
	}
	/* Longest first: a secret inside another must not split it. */
	if (n > 1)
		qsort(needles, n, sizeof(*needles), cmp_longer);
	for (i = 0; i < n; i++) {
		replace_all(msg, size, needles[i], strlen(needles[i]));
		explicit_bzero(needles[i], strlen(needles[i]));
		free(needles[i]);
	}
	free(needles);
	secrets_free(&sv);
}
