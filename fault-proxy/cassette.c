/*
 * Cassettes (cassette.h): keys, files, parts and their merge, and a kept
 * reply written back as the pieces local.c sends.
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/seed.h"
#include "common/util.h"
#include "fault-proxy/cassette.h"
#include "fault-proxy/proxy.h"

/*
 * A tool call's id as its place among the conversation's ("tc1", "tc2",
 * ... in order of first sight), in o's member key, when it is a string:
 * a model gives each call an id of its own making, so the same
 * conversation recorded twice, or replayed with another of a key's
 * replies, carries other ids -- and must still be the same request.
 */
static void
id_place(json_t *o, const char *key, json_t *ids)
{
	const char	*id = json_string_value(json_object_get(o, key));
	json_t		*placed;
	char		 tc[32];

	if (id == NULL)
		return;
	if ((placed = json_object_get(ids, id)) == NULL) {
		snprintf(tc, sizeof(tc), "tc%zu", json_object_size(ids) + 1);
		placed = json_string(tc);
		json_object_set_new(ids, id, placed);
	}
	json_object_set(o, key, placed);
}

/* Every tool call id of a request's messages, OpenAI's and Anthropic's. */
static void
ids_placed(json_t *j)
{
	json_t	*msgs = json_object_get(j, "messages"), *m, *c, *ids = json_object();
	size_t	 i, k;

	json_array_foreach(msgs, i, m) {
		json_array_foreach(json_object_get(m, "tool_calls"), k, c)
			id_place(c, "id", ids);
		id_place(m, "tool_call_id", ids);
		json_array_foreach(json_object_get(m, "content"), k, c) {
			id_place(c, "id", ids);		/* tool_use */
			id_place(c, "tool_use_id", ids);	/* tool_result */
		}
	}
	json_decref(ids);
}

uint64_t
cassette_key(const char *method, const char *path, const char *body,
    size_t len)
{
	json_t		*j;
	char		*canon = NULL, *all;
	uint64_t	 k;
	size_t		 n;

	/* canonical JSON: what the SDKs' spacing and key order cannot change */
	if ((j = json_loadb(body, len, JSON_DECODE_ANY, NULL)) != NULL) {
		if (json_is_object(j))
			ids_placed(j);
		canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS |
		    JSON_ENCODE_ANY);
		json_decref(j);
	}
	if (canon != NULL) {
		body = canon;
		len = strlen(canon);
	}
	n = strlen(method) + 1 + strlen(path) + 1;
	all = xcalloc(1, n + len + 1);
	snprintf(all, n + 1, "%s %s\n", method, path);
	memcpy(all + n, body, len);
	k = fnv1a64(all, n + len);
	free(all);
	free(canon);
	return k;
}

void
cassette_free(struct cassette *c)
{
	size_t	i, j;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		struct cassette_entry	*e = &c->e[i];

		free(e->method);
		free(e->path);
		free(e->what);
		json_decref(e->request);
		for (j = 0; j < e->n; j++) {
			free(e->r[j].ctype);
			free(e->r[j].body);
		}
		free(e->r);
	}
	free(c->e);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

static int
by_key(const void *a, const void *b)
{
	const struct cassette_entry	*x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

const struct cassette_entry *
cassette_find(const struct cassette *c, uint64_t key)
{
	struct cassette_entry	want = { .key = key };

	if (c->n == 0)
		return NULL;
	return bsearch(&want, c->e, c->n, sizeof(*c->e), by_key);
}

/* The entry of key, made when there is none (in a cassette being built). */
static struct cassette_entry *
entry_of(struct cassette *c, uint64_t key, size_t *cap)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		if (c->e[i].key == key)
			return &c->e[i];
	if (c->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		c->e = xreallocarray(c->e, *cap, sizeof(*c->e));
	}
	memset(&c->e[c->n], 0, sizeof(c->e[0]));
	c->e[c->n].key = key;
	return &c->e[c->n++];
}

/* A reply of JSON into e, unless e has one equal to it.  -1: not one. */
static int
reply_add(struct cassette_entry *e, const json_t *r, size_t *replies)
{
	const char	*ct = json_string_value(json_object_get(r, "content_type"));
	const char	*body = json_string_value(json_object_get(r, "body"));
	json_t		*st = json_object_get(r, "status");
	size_t		 i, len;

	if (!json_is_object(r) || !json_is_integer(st) || body == NULL ||
	    json_integer_value(st) < 100 || json_integer_value(st) > 999)
		return -1;
	len = json_string_length(json_object_get(r, "body"));
	for (i = 0; i < e->n; i++)
		if (e->r[i].status == json_integer_value(st) && e->r[i].len == len &&
		    memcmp(e->r[i].body, body, len) == 0 &&
		    strcmp(e->r[i].ctype, ct ? ct : "") == 0)
			return 0;
	e->r = xreallocarray(e->r, e->n + 1, sizeof(*e->r));
	e->r[e->n].status = (int)json_integer_value(st);
	e->r[e->n].ctype = xstrdup(ct ? ct : "");
	e->r[e->n].body = xcalloc(1, len + 1);
	memcpy(e->r[e->n].body, body, len);
	e->r[e->n].len = len;
	e->n++;
	(*replies)++;
	return 0;
}

/* An entry's fields other than its replies, from the first that has them. */
static int
entry_fill(struct cassette_entry *e, const json_t *o)
{
	const char	*m = json_string_value(json_object_get(o, "method"));
	const char	*p = json_string_value(json_object_get(o, "path"));
	const char	*w = json_string_value(json_object_get(o, "what"));

	if (m == NULL || p == NULL)
		return -1;
	if (e->method == NULL) {
		e->method = xstrdup(m);
		e->path = xstrdup(p);
		e->what = w ? xstrdup(w) : NULL;
		e->request = json_incref(json_object_get(o, "request"));
	}
	return 0;
}

static int
key_of(const json_t *o, uint64_t *key)
{
	const char	*k = json_string_value(json_object_get(o, "key"));
	char		*end;

	if (k == NULL || strlen(k) != 16)
		return -1;
	errno = 0;
	*key = strtoull(k, &end, 16);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* The entries of a cassette's JSON into c (growing, cap its room). */
static int
take_file(struct cassette *c, size_t *cap, const json_t *j, const char *path,
    char *err)
{
	json_t			*ents, *o, *r;
	struct cassette_entry	*e;
	uint64_t		 key;
	size_t			 i, k;

	if (!json_is_object(j) || json_integer_value(json_object_get(j,
	    "soak_cassette")) != CASSETTE_VERSION)
		return errf(err, "%s: not a cassette of version %d (no "
		    "\"soak_cassette\": %d)", path, CASSETTE_VERSION,
		    CASSETTE_VERSION);
	if (!json_is_array(ents = json_object_get(j, "entries")))
		return errf(err, "%s: entries: not a list", path);
	json_array_foreach(ents, i, o) {
		if (key_of(o, &key) == -1)
			return errf(err, "%s: entries[%zu].key: not 16 hex digits",
			    path, i);
		e = entry_of(c, key, cap);
		if (entry_fill(e, o) == -1)
			return errf(err, "%s: entries[%zu]: no method or path",
			    path, i);
		if (!json_is_array(json_object_get(o, "replies")))
			return errf(err, "%s: entries[%zu].replies: not a list",
			    path, i);
		json_array_foreach(json_object_get(o, "replies"), k, r)
			if (reply_add(e, r, &c->replies) == -1)
				return errf(err, "%s: entries[%zu].replies[%zu]: "
				    "not a status, content_type and body", path,
				    i, k);
	}
	return 0;
}

int
cassette_load(const char *path, struct cassette *c, char *err)
{
	json_error_t	 je;
	json_t		*j = NULL;
	char		*text;
	size_t		 len, cap = 0, i;
	int		 rc = -1;

	memset(c, 0, sizeof(*c));
	c->path = xstrdup(path);
	if ((text = read_regular_file(path, CASSETTE_CAP, &len, err)) == NULL)
		goto out;
	if ((j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		errf(err, "%s:%d:%d: not JSON: %s", path, je.line, je.column,
		    je.text);
		goto out;
	}
	if (take_file(c, &cap, j, path, err) == -1)
		goto out;
	if (c->n > 0)
		qsort(c->e, c->n, sizeof(*c->e), by_key);
	for (i = 0; i < c->n; i++)
		if (c->e[i].n == 0) {
			errf(err, "%s: the entry of key %016" PRIx64 " has no "
			    "reply", path, c->e[i].key);
			goto out;
		}
	rc = 0;
out:
	json_decref(j);
	free(text);
	if (rc == -1) {
		char	*p = c->path;

		c->path = NULL;
		cassette_free(c);
		c->path = p;
	}
	return rc;
}

int
proxy_cassette_check(const char *path, size_t *keys, size_t *replies,
    char *err)
{
	struct cassette	c;

	*keys = *replies = 0;
	if (cassette_load(path, &c, err) == -1) {
		cassette_free(&c);
		return -1;
	}
	*keys = c.n;
	*replies = c.replies;
	cassette_free(&c);
	return 0;
}

void
cassette_render(const struct cassette_reply *r, struct model_out *o)
{
	const char	*p = r->body, *end = r->body + r->len, *e;
	char		*head, *chunk;
	bool		 sse = strncmp(r->ctype, "text/event-stream", 17) == 0;

	memset(o, 0, sizeof(*o));
	o->status = r->status;
	if (!sse) {
		head = xasprintf("HTTP/1.1 %d Status\r\nContent-Type: %s\r\n"
		    "Content-Length: %zu\r\nx-soak: cassette\r\n\r\n", r->status,
		    r->ctype[0] ? r->ctype : "application/json", r->len);
		model_out_add(o, head, strlen(head));
		free(head);
		if (r->len > 0) {
			/* the body joins the head's piece: one write */
			head = xcalloc(1, o->len[0] + r->len + 1);
			memcpy(head, o->piece[0], o->len[0]);
			memcpy(head + o->len[0], r->body, r->len);
			free(o->piece[0]);
			o->piece[0] = head;
			o->len[0] += r->len;
		}
		return;
	}
	head = xasprintf("HTTP/1.1 %d Status\r\nContent-Type: %s\r\n"
	    "Transfer-Encoding: chunked\r\nx-soak: cassette\r\n\r\n", r->status,
	    r->ctype);
	model_out_add(o, head, strlen(head));
	free(head);
	/* one chunk an event, as the API sent them */
	while (p < end) {
		e = memmem(p, (size_t)(end - p), "\n\n", 2);
		e = e ? e + 2 : end;
		chunk = xasprintf("%zx\r\n%.*s\r\n", (size_t)(e - p),
		    (int)(e - p), p);
		model_out_add(o, chunk, strlen(chunk));
		free(chunk);
		o->events++;
		p = e;
	}
	model_out_add(o, "0\r\n\r\n", 5);
}

char *
cassette_line(uint64_t key, const char *method, const char *path,
    const char *what, const char *req, size_t reqlen, int status,
    const char *ctype, const char *body, size_t len)
{
	json_t	*o, *rq, *b;
	char	 hex[24], *s, *line;

	if ((b = json_stringn(body, len)) == NULL)
		return NULL;
	if ((rq = json_loadb(req, reqlen, 0, NULL)) == NULL &&
	    (rq = json_stringn(req, reqlen)) == NULL)
		rq = json_null();
	snprintf(hex, sizeof(hex), "%016" PRIx64, key);
	o = json_pack("{sisssssssoso}", "soak_cassette_part", CASSETTE_VERSION,
	    "key", hex, "method", method, "path", path, "request", rq, "reply",
	    json_pack("{sisss o}", "status", status, "content_type",
	    ctype ? ctype : "", "body", b));
	if (o == NULL)
		return NULL;
	if (what != NULL)
		json_object_set_new(o, "what", json_string(what));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (s == NULL)
		return NULL;
	line = xasprintf("%s\n", s);
	free(s);
	return line;
}

/* The lines of one part into c; a line that does not read is skipped. */
static int
take_part(struct cassette *c, size_t *cap, const char *file, char *err)
{
	char			*text, *p, *nl;
	size_t			 len;
	json_t			*o;
	uint64_t		 key;
	int			 line = 0, bad = 0;

	if ((text = read_regular_file(file, CASSETTE_CAP, &len, err)) == NULL)
		return -1;
	for (p = text; p < text + len; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(text + len - p))) == NULL)
			nl = text + len;	/* a last line a kill cut short */
		line++;
		if ((o = json_loadb(p, (size_t)(nl - p), 0, NULL)) == NULL ||
		    key_of(o, &key) == -1 ||
		    entry_fill(entry_of(c, key, cap), o) == -1 ||
		    reply_add(entry_of(c, key, cap), json_object_get(o, "reply"),
		    &c->replies) == -1)
			bad++;
		json_decref(o);
	}
	free(text);
	if (bad > 0)
		fprintf(stderr, "soak: %s: %d line(s) of %d not a recorded "
		    "exchange, left out\n", file, bad, line);
	return 0;
}

static json_t *
cassette_json(const struct cassette *c)
{
	json_t	*ents = json_array(), *o, *rs;
	char	 hex[24];
	size_t	 i, j;

	for (i = 0; i < c->n; i++) {
		const struct cassette_entry	*e = &c->e[i];

		rs = json_array();
		for (j = 0; j < e->n; j++)
			json_array_append_new(rs, json_pack("{sisss s%}", "status",
			    e->r[j].status, "content_type", e->r[j].ctype, "body",
			    e->r[j].body, e->r[j].len));
		snprintf(hex, sizeof(hex), "%016" PRIx64, e->key);
		o = json_pack("{ssssss}", "key", hex, "method", e->method, "path",
		    e->path);
		if (e->what != NULL)
			json_object_set_new(o, "what", json_string(e->what));
		json_object_set(o, "request", e->request ? e->request : json_null());
		json_object_set_new(o, "replies", rs);
		json_array_append_new(ents, o);
	}
	return json_pack("{siso}", "soak_cassette", CASSETTE_VERSION, "entries",
	    ents);
}

int
cassette_merge(const char *path, size_t *keys, size_t *replies, char *err)
{
	struct cassette	 c;
	glob_t		 g;
	json_t		*j = NULL;
	json_error_t	 je;
	char		*pat, *text = NULL;
	size_t		 cap = 0, len, i;
	int		 rc = -1, grc;

	memset(&c, 0, sizeof(c));
	memset(&g, 0, sizeof(g));
	*keys = *replies = 0;
	pat = xasprintf("%s.part-*", path);
	grc = glob(pat, 0, NULL, &g);
	if (grc != 0 && grc != GLOB_NOMATCH) {
		errf(err, "%s: cannot list its parts", pat);
		goto out;
	}
	if (access(path, F_OK) == 0) {
		if ((text = read_regular_file(path, CASSETTE_CAP, &len, err)) ==
		    NULL)
			goto out;
		if ((j = json_loadb(text, len, 0, &je)) == NULL) {
			errf(err, "%s:%d:%d: not JSON: %s", path, je.line,
			    je.column, je.text);
			goto out;
		}
		if (take_file(&c, &cap, j, path, err) == -1)
			goto out;
	}
	for (i = 0; i < g.gl_pathc; i++)
		if (take_part(&c, &cap, g.gl_pathv[i], err) == -1)
			goto out;
	if (c.n > 0)
		qsort(c.e, c.n, sizeof(*c.e), by_key);
	*keys = c.n;
	*replies = c.replies;
	if (g.gl_pathc == 0) {
		rc = 0;
		goto out;
	}
	json_decref(j);
	j = cassette_json(&c);
	free(text);
	if ((text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) == NULL)
		abort();
	len = strlen(text);
	text = xreallocarray(text, len + 2, 1);
	text[len++] = '\n';
	if (write_file_atomic(path, text, len, 0644, err) == -1)
		goto out;
	for (i = 0; i < g.gl_pathc; i++)
		(void)unlink(g.gl_pathv[i]);
	rc = 0;
out:
	free(pat);
	free(text);
	json_decref(j);
	globfree(&g);
	cassette_free(&c);
	return rc;
}

int
proxy_cassette_merge(const char *path, size_t *keys, size_t *replies,
    char *err)
{
	return cassette_merge(path, keys, replies, err);
}
