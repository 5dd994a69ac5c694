#include "common/scrub.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "common/util.h"

struct secret {
	uint8_t	*b;
	size_t	 len;
};

struct scrub {
	struct secret	*v;		/* longest first */
	size_t		 n;
	bool		 start[256];	/* bytes a match can start with */
};

struct scrub *
scrub_new(void)
{
	return xcalloc(1, sizeof(struct scrub));
}

void
scrub_free(struct scrub *sc)
{
	size_t	i;

	if (sc == NULL)
		return;
	for (i = 0; i < sc->n; i++) {
		explicit_bzero(sc->v[i].b, sc->v[i].len);
		free(sc->v[i].b);
	}
	free(sc->v);
	free(sc);
}

bool
scrub_empty(const struct scrub *sc)
{
	return sc == NULL || sc->n == 0;
}

size_t
scrub_reach(const struct scrub *sc)
{
	return sc == NULL || sc->n == 0 ? 0 : 3 * sc->v[0].len;
}

static int
cmp_longer(const void *a, const void *b)
{
	const struct secret	*x = a, *y = b;

	return x->len > y->len ? -1 : x->len < y->len;
}

int
scrub_add(struct scrub *sc, const char *what, const void *secret, size_t len,
    char *why)
{
	size_t	i;

	if (len < SCRUB_MIN)
		return errf(why, "%s is %zu byte(s): text captured from turns, "
		    "services and setup cannot be scrubbed of it without mangling "
		    "everything else, so it stays in it as printed (use one of at "
		    "least %d bytes)", what, len, SCRUB_MIN);
	for (i = 0; i < sc->n; i++)
		if (sc->v[i].len == len && memcmp(sc->v[i].b, secret, len) == 0)
			return 1;
	sc->v = xreallocarray(sc->v, sc->n + 1, sizeof(*sc->v));
	sc->v[sc->n].b = xcalloc(1, len);
	memcpy(sc->v[sc->n].b, secret, len);
	sc->v[sc->n++].len = len;
	qsort(sc->v, sc->n, sizeof(*sc->v), cmp_longer);
	sc->start[((const uint8_t *)secret)[0]] = true;
	sc->start['%'] = sc->start['\\'] = true;
	if (((const uint8_t *)secret)[0] == ' ')
		sc->start['+'] = true;
	return 0;
}

int
scrub_add_conninfo(struct scrub *sc, const char *conninfo, char *why)
{
	PQconninfoOption	*opts, *o;
	const char		*user = NULL, *dbname = NULL;
	char			*perr = NULL;
	int			 rc = 0;

	if (conninfo == NULL || (opts = PQconninfoParse(conninfo, &perr)) == NULL) {
		PQfreemem(perr);
		return 0;
	}
	for (o = opts; o->keyword != NULL; o++) {
		if (o->val == NULL)
			continue;
		if (strcmp(o->keyword, "user") == 0)
			user = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			dbname = o->val;
	}
	for (o = opts; o->keyword != NULL; o++) {
		bool	pw = strcmp(o->keyword, "password") == 0;

		if ((!pw && strcmp(o->keyword, "sslpassword") != 0) || o->val == NULL ||
		    *o->val == '\0')
			continue;
		if ((user && strcmp(o->val, user) == 0) ||
		    (dbname && strcmp(o->val, dbname) == 0)) {
			rc = errf(why, "the database %s equals the %s name \"%s\": text "
			    "captured from turns, services and setup cannot be scrubbed "
			    "of it without mangling every mention of that name, so it "
			    "stays in it as printed", pw ? "password" : "sslpassword",
			    user && strcmp(o->val, user) == 0 ? "role" : "database",
			    o->val);
			continue;
		}
		if (scrub_add(sc, pw ? "the database password" : "the database sslpassword",
		    o->val, strlen(o->val), why) == -1)
			rc = -1;
	}
	PQconninfoFree(opts);
	return rc;
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

#define MATCH_STEPS	4096	/* tries per position: no text makes it slow */

/*
 * Whether the text at t writes out s's bytes from i on (header contract:
 * each byte itself, %XX, after a backslash, a blank as '+'); *end: where
 * the match ends.  A '%' or '\\' of the secret may be written as itself or
 * escaped, so each form is tried in turn, within *steps.
 */
static bool
match_from(const char *t, const struct secret *s, size_t i, size_t *end, int *steps)
{
	unsigned char	c, x;

	if (i == s->len) {
		*end = 0;
		return true;
	}
	if (--*steps < 0 || (x = (unsigned char)*t) == '\0')
		return false;
	c = s->b[i];
	if (x == '%' && hexval(t[1]) >= 0 && hexval(t[2]) >= 0 &&
	    hexval(t[1]) * 16 + hexval(t[2]) == c && match_from(t + 3, s, i + 1, end, steps)) {
		*end += 3;
		return true;
	}
	if (x == '\\' && c != '\0' && (unsigned char)t[1] == c &&
	    match_from(t + 2, s, i + 1, end, steps)) {
		*end += 2;
		return true;
	}
	if ((x == c || (c == ' ' && x == '+')) && match_from(t + 1, s, i + 1, end, steps)) {
		*end += 1;
		return true;
	}
	return false;
}

/* The length of the text at t that writes s out, or 0. */
static size_t
match_at(const char *t, const struct secret *s)
{
	size_t	end;
	int	steps = MATCH_STEPS;

	return match_from(t, s, 0, &end, &steps) ? end : 0;
}

size_t
scrub_text(const struct scrub *sc, char *text)
{
	size_t	r = 0, w = 0, m, i, n = 0;

	if (sc == NULL || sc->n == 0 || text == NULL)
		return 0;
	while (text[r] != '\0') {
		m = 0;
		if (sc->start[(unsigned char)text[r]])
			for (i = 0; i < sc->n && m == 0; i++)
				m = match_at(text + r, &sc->v[i]);
		if (m == 0) {
			text[w++] = text[r++];
			continue;
		}
		/* m >= SCRUB_MIN > the mark: w never passes r. */
		memcpy(text + w, SCRUB_MARK, strlen(SCRUB_MARK));
		w += strlen(SCRUB_MARK);
		r += m;
		n++;
	}
	text[w] = '\0';
	/* A secret that is not UTF-8 may have been cut out of a character. */
	if (n > 0)
		utf8_scrub(text, w);
	return n;
}

size_t
scrub_json(const struct scrub *sc, json_t *v)
{
	const char	*key;
	json_t		*val, *x;
	void		*tmp;
	size_t		 i, n = 0, k;
	char		*s;

	if (sc == NULL || sc->n == 0 || v == NULL)
		return 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		s = xstrdup(json_string_value(v));
		if ((k = scrub_text(sc, s)) > 0 && json_string_set(v, s) == -1)
			json_string_set(v, SCRUB_MARK);
		n += k;
		free(s);
		break;
	case JSON_ARRAY:
		json_array_foreach(v, i, x)
			n += scrub_json(sc, x);
		break;
	case JSON_OBJECT:
		json_object_foreach_safe(v, tmp, key, val) {
			n += scrub_json(sc, val);
			s = xstrdup(key);
			if ((k = scrub_text(sc, s)) > 0) {
				/* A key that held a secret: the value under the mark. */
				json_object_set(v, s, val);
				json_object_del(v, key);
				n += k;
			}
			free(s);
		}
		break;
	default:
		break;
	}
	return n;
}
