/*
 * The model stand-in's pure half (model.h): scripts, requests, choices and
 * replies.  Sections: the script (YAML), the HTTP request, the request's
 * JSON (OpenAI, Anthropic), matching, choosing, rendering.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "common/config.h"
#include "common/seed.h"
#include "common/units.h"
#include "common/util.h"
#include "fault-proxy/model.h"
#include "fault-proxy/proxy.h"

#define KEY_LEN		160		/* a dotted key for messages */
#define MSG_LEN		1024
/* What "created" says: no clock reaches a reply (docs/models.md). */
#define MODEL_CREATED	1735689600
#define MODEL_PIECES	24		/* a streamed text's deltas, about */

/* ---- the script --------------------------------------------------------- */

struct sx {
	const char	*file;
	yaml_document_t	*doc;
	char		*err;
	bool		 failed;
};

static int fail_at(struct sx *, const yaml_node_t *, const char *,
    const char *, ...) __attribute__((format(printf, 4, 5)));
static void put3(char *, size_t, const char *, const char *, const char *);

/* The first message wins: later ones often rest on it. */
static int
fail_at(struct sx *x, const yaml_node_t *n, const char *key, const char *fmt,
    ...)
{
	char	msg[MSG_LEN], where[48];
	va_list	ap;

	if (x->failed)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(where, sizeof(where), ":%zu:%zu: ", n->start_mark.line + 1,
	    n->start_mark.column + 1);
	put3(x->err, ERR_LEN, x->file, where, key);
	put3(x->err + strlen(x->err), ERR_LEN - strlen(x->err), ": ", msg, NULL);
	x->failed = true;
	return -1;
}

static yaml_node_t *
node(struct sx *x, int i)
{
	return yaml_document_get_node(x->doc, i);
}

static const char *
scal(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool
is_null(const yaml_node_t *n)
{
	const char	*s;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = scal(n);
	return *s == '\0' || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
}

static const char *
kind_of(const yaml_node_t *n)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	return is_null(n) ? "nothing" : "a string";
}

/* dst (size bytes) = a b c, cut at the end when it does not fit. */
static void
put3(char *dst, size_t size, const char *a, const char *b, const char *c)
{
	const char	*parts[3] = { a, b, c };
	size_t		 o = 0, i, n;

	for (i = 0; i < 3; i++) {
		if (parts[i] == NULL)
			continue;
		n = strlen(parts[i]);
		if (n > size - 1 - o)
			n = size - 1 - o;
		memcpy(dst + o, parts[i], n);
		o += n;
	}
	dst[o] = '\0';
}

static void
key_sub(char *buf, const char *prefix, const char *key)
{
	if (prefix == NULL || *prefix == '\0')
		put3(buf, KEY_LEN, key, NULL, NULL);
	else
		put3(buf, KEY_LEN, prefix, ".", key);
}

static void
key_idx(char *buf, const char *prefix, size_t i)
{
	char	num[24];

	snprintf(num, sizeof(num), "[%zu]", i);
	put3(buf, KEY_LEN, prefix, num, NULL);
}

/* A mapping spread over vals[] by keys[]; unknown and duplicate keys fail. */
static int
take_keys(struct sx *x, yaml_node_t *map, const char *prefix,
    const char *const *keys, size_t nkeys, yaml_node_t **vals)
{
	yaml_node_pair_t	*p;
	yaml_node_t		*kn;
	char			 path[KEY_LEN], list[256];
	size_t			 i, o;

	memset(vals, 0, nkeys * sizeof(*vals));
	if (map->type != YAML_MAPPING_NODE)
		return fail_at(x, map, prefix, "expected a mapping, got %s",
		    kind_of(map));
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	    p++) {
		kn = node(x, p->key);
		if (kn->type != YAML_SCALAR_NODE)
			return fail_at(x, kn, prefix, "a key must be a plain "
			    "word, not %s", kind_of(kn));
		key_sub(path, prefix, scal(kn));
		for (i = 0; i < nkeys; i++)
			if (strcmp(keys[i], scal(kn)) == 0)
				break;
		if (i == nkeys) {
			for (o = 0, list[0] = '\0', i = 0; i < nkeys; i++)
				o += (size_t)snprintf(list + o, o < sizeof(list) ?
				    sizeof(list) - o : 0, "%s%s", i ? ", " : "",
				    keys[i]);
			return fail_at(x, kn, path, "unknown key (expected %s)",
			    list);
		}
		if (vals[i] != NULL)
			return fail_at(x, kn, path, "duplicate key");
		vals[i] = node(x, p->value);
	}
	return 0;
}

static int
get_str(struct sx *x, yaml_node_t *n, const char *key, char **out)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_at(x, n, key, "expected a string, got %s",
		    kind_of(n));
	free(*out);
	*out = xstrdup(scal(n));
	return 0;
}

static int
get_int(struct sx *x, yaml_node_t *n, const char *key, int64_t lo, int64_t hi,
    int64_t *out)
{
	char		 b[QUOTE_LEN];
	uint64_t	 v;
	const char	*s;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_at(x, n, key, "expected an integer, got %s",
		    kind_of(n));
	s = scal(n);
	if (dec_u64(s, s + strlen(s), (uint64_t)hi, &v) == -1 ||
	    (int64_t)v < lo)
		return fail_at(x, n, key, "expected an integer %lld..%lld, got "
		    "%s", (long long)lo, (long long)hi,
		    quote_value(s, b, sizeof(b)));
	*out = (int64_t)v;
	return 0;
}

static int
get_regex(struct sx *x, yaml_node_t *n, const char *key, regex_t *re)
{
	char	why[128];
	int	rc;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_at(x, n, key, "expected a POSIX extended regex, got "
		    "%s", kind_of(n));
	if ((rc = regcomp(re, scal(n), REG_EXTENDED)) != 0) {
		regerror(rc, re, why, sizeof(why));
		regfree(re);
		return fail_at(x, n, key, "not a POSIX extended regex: %s", why);
	}
	return 0;
}

/*
 * Whether s is an integer (-?DIGITS, at most 18 digits: it fits), or with
 * decimal a number with a fraction or an exponent (-?D.D[eE][+-]D).
 */
static bool
is_number(const char *s, bool decimal)
{
	size_t	d;

	if (*s == '-')
		s++;
	if ((d = strspn(s, "0123456789")) == 0)
		return false;
	if (!decimal)
		return s[d] == '\0' && d <= 18;
	s += d;
	if (*s == '.') {
		s++;
		if ((d = strspn(s, "0123456789")) == 0)
			return false;
		s += d;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if ((d = strspn(s, "0123456789")) == 0 || d > 3)
			return false;
		s += d;
	}
	return *s == '\0';
}

/*
 * A YAML value as JSON, by YAML's core schema: a plain scalar that reads
 * as an integer, a decimal, true, false or null is that; anything quoted,
 * and every other scalar, is a string.
 */
static json_t *
yaml_json(struct sx *x, yaml_node_t *n, const char *key, int depth)
{
	yaml_node_pair_t	*p;
	yaml_node_item_t	*it;
	json_t			*j, *v;
	char			 path[KEY_LEN];
	const char		*s;

	if (depth > 32) {
		fail_at(x, n, key, "nested deeper than 32");
		return NULL;
	}
	if (n->type == YAML_MAPPING_NODE) {
		j = json_object();
		for (p = n->data.mapping.pairs.start;
		    p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *kn = node(x, p->key);

			if (kn->type != YAML_SCALAR_NODE) {
				fail_at(x, kn, key, "a key must be a string");
				goto fail;
			}
			key_sub(path, key, scal(kn));
			if ((v = yaml_json(x, node(x, p->value), path,
			    depth + 1)) == NULL)
				goto fail;
			json_object_set_new(j, scal(kn), v);
		}
		return j;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		j = json_array();
		for (it = n->data.sequence.items.start;
		    it < n->data.sequence.items.top; it++) {
			key_idx(path, key,
			    (size_t)(it - n->data.sequence.items.start));
			if ((v = yaml_json(x, node(x, *it), path,
			    depth + 1)) == NULL)
				goto fail;
			json_array_append_new(j, v);
		}
		return j;
	}
	s = scal(n);
	if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		if (is_null(n))
			return json_null();
		if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
			return json_boolean(s[0] == 't');
		if (is_number(s, false))
			return json_integer(strtoll(s, NULL, 10));
		if (is_number(s, true))
			return json_real(strtod(s, NULL));
	}
	if ((j = json_string(s)) == NULL)
		fail_at(x, n, key, "not UTF-8 text");
	return j;
fail:
	json_decref(j);
	return NULL;
}

/* The highest $N of s ($$ is a dollar), 0 when none. */
static int
dollars(const char *s)
{
	int	hi = 0;

	for (; *s; s++)
		if (*s == '$') {
			if (s[1] == '$')
				s++;
			else if (s[1] >= '1' && s[1] <= '9' && s[1] - '0' > hi)
				hi = s[1] - '0';
		}
	return hi;
}

static int
json_dollars(const json_t *j)
{
	const char	*k;
	json_t		*v;
	size_t		 i;
	int		 hi = 0, d;

	if (json_is_string(j))
		return dollars(json_string_value(j));
	if (json_is_object(j))
		json_object_foreach(UNCONST(j), k, v)
			if ((d = json_dollars(v)) > hi)
				hi = d;
	if (json_is_array(j))
		json_array_foreach(j, i, v)
			if ((d = json_dollars(v)) > hi)
				hi = d;
	return hi;
}

static bool
tool_name_ok(const char *s)
{
	size_t	n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_-") == n;
}

static int
check_dollars(struct sx *x, yaml_node_t *n, const char *key,
    const struct model_pattern *p, int hi)
{
	if (hi == 0)
		return 0;
	if (!p->has_user)
		return fail_at(x, n, key, "$%d stands for a group of user:, and "
		    "this pattern has no user:", hi);
	if ((size_t)hi > p->user.re_nsub)
		return fail_at(x, n, key, "$%d, but user: has %zu group%s", hi,
		    p->user.re_nsub, p->user.re_nsub == 1 ? "" : "s");
	return 0;
}

static int
parse_call(struct sx *x, yaml_node_t *map, const char *prefix,
    const struct model_pattern *p, struct model_call *c)
{
	static const char *const keys[] = { "name", "arguments" };
	yaml_node_t	*v[nitems(keys)];
	char		 path[KEY_LEN];
	json_error_t	 je;

	if (take_keys(x, map, prefix, keys, nitems(keys), v) == -1)
		return -1;
	key_sub(path, prefix, "name");
	if (v[0] == NULL)
		return fail_at(x, map, path, "required key is missing");
	if (get_str(x, v[0], path, &c->name) == -1)
		return -1;
	if (!tool_name_ok(c->name))
		return fail_at(x, v[0], path, "a tool's name is 1 to 64 letters, "
		    "digits, _ or - (the APIs' rule)");
	key_sub(path, prefix, "arguments");
	if (v[1] == NULL || is_null(v[1])) {
		c->args = json_object();
		return 0;
	}
	if (v[1]->type == YAML_SCALAR_NODE) {
		/* a JSON text, as the OpenAI API carries arguments */
		if ((c->args = json_loads(scal(v[1]), JSON_REJECT_DUPLICATES,
		    &je)) == NULL)
			return fail_at(x, v[1], path, "neither a mapping nor a "
			    "JSON object: %s", je.text);
	} else if ((c->args = yaml_json(x, v[1], path, 0)) == NULL)
		return -1;
	if (!json_is_object(c->args))
		return fail_at(x, v[1], path, "the arguments must be a mapping "
		    "(a JSON object)");
	return check_dollars(x, v[1], path, p, json_dollars(c->args));
}

static int
parse_alt(struct sx *x, yaml_node_t *map, const char *prefix,
    const struct model_pattern *p, struct model_alt *a)
{
	static const char *const keys[] = { "text", "tool_calls", "weight" };
	yaml_node_t		*v[nitems(keys)];
	yaml_node_item_t	*it;
	char			 path[KEY_LEN], ipath[KEY_LEN];
	int64_t			 w = 1;
	size_t			 n;

	a->line = (int)map->start_mark.line + 1;
	if (take_keys(x, map, prefix, keys, nitems(keys), v) == -1)
		return -1;
	key_sub(path, prefix, "text");
	if (v[0] != NULL && get_str(x, v[0], path, &a->text) == -1)
		return -1;
	if (a->text != NULL && strlen(a->text) > MODEL_TEXT_CAP)
		return fail_at(x, v[0], path, "longer than %d bytes",
		    MODEL_TEXT_CAP);
	if (a->text != NULL && check_dollars(x, v[0], path, p,
	    dollars(a->text)) == -1)
		return -1;
	key_sub(path, prefix, "tool_calls");
	if (v[1] != NULL && !is_null(v[1])) {
		if (v[1]->type != YAML_SEQUENCE_NODE)
			return fail_at(x, v[1], path, "expected a list, got %s",
			    kind_of(v[1]));
		n = (size_t)(v[1]->data.sequence.items.top -
		    v[1]->data.sequence.items.start);
		if (n > MODEL_CALLS_MAX)
			return fail_at(x, v[1], path, "%zu tool calls: at most "
			    "%d", n, MODEL_CALLS_MAX);
		a->calls = xcalloc(n ? n : 1, sizeof(*a->calls));
		for (it = v[1]->data.sequence.items.start;
		    it < v[1]->data.sequence.items.top; it++) {
			key_idx(ipath, path, a->ncalls);
			a->ncalls++;
			if (parse_call(x, node(x, *it), ipath, p,
			    &a->calls[a->ncalls - 1]) == -1)
				return -1;
		}
	}
	if (a->text == NULL && a->ncalls == 0)
		return fail_at(x, map, prefix, "a reply needs text, tool_calls "
		    "or both");
	key_sub(path, prefix, "weight");
	if (v[2] != NULL && get_int(x, v[2], path, 1, 1000, &w) == -1)
		return -1;
	a->weight = (uint32_t)w;
	return 0;
}

static int
parse_pattern(struct sx *x, yaml_node_t *map, const char *prefix,
    struct model_pattern *p)
{
	enum { NAME, USER, RESULT, TOOL, TURN, STEP, REPLIES, NKEYS };
	static const char *const keys[NKEYS] = { "name", "user", "tool_result",
	    "tool", "turn", "step", "replies" };
	yaml_node_t		*v[NKEYS];
	yaml_node_item_t	*it;
	char			 path[KEY_LEN], ipath[KEY_LEN];
	int64_t			 i64;
	size_t			 n;

	p->turn = p->step = -1;
	p->line = (int)map->start_mark.line + 1;
	if (take_keys(x, map, prefix, keys, NKEYS, v) == -1)
		return -1;
	key_sub(path, prefix, "name");
	if (v[NAME] != NULL && get_str(x, v[NAME], path, &p->name) == -1)
		return -1;
	if (p->name != NULL && strlen(p->name) > 80)
		return fail_at(x, v[NAME], path, "a name of %zu bytes: at most "
		    "80 (the trace carries it)", strlen(p->name));
	if (p->name == NULL)
		p->name = xstrdup(prefix);
	key_sub(path, prefix, "user");
	if (v[USER] != NULL) {
		if (get_regex(x, v[USER], path, &p->user) == -1)
			return -1;
		p->has_user = true;
	}
	key_sub(path, prefix, "tool_result");
	if (v[RESULT] != NULL) {
		if (get_regex(x, v[RESULT], path, &p->result) == -1)
			return -1;
		p->has_result = true;
	}
	key_sub(path, prefix, "tool");
	if (v[TOOL] != NULL && get_str(x, v[TOOL], path, &p->tool) == -1)
		return -1;
	key_sub(path, prefix, "turn");
	if (v[TURN] != NULL) {
		if (get_int(x, v[TURN], path, 0, 1023, &i64) == -1)
			return -1;
		p->turn = (int)i64;
	}
	key_sub(path, prefix, "step");
	if (v[STEP] != NULL) {
		if (get_int(x, v[STEP], path, 0, 10000, &i64) == -1)
			return -1;
		p->step = (int)i64;
	}
	key_sub(path, prefix, "replies");
	if (v[REPLIES] == NULL)
		return fail_at(x, map, path, "required key is missing");
	if (v[REPLIES]->type != YAML_SEQUENCE_NODE)
		return fail_at(x, v[REPLIES], path, "expected a list of "
		    "replies, got %s", kind_of(v[REPLIES]));
	n = (size_t)(v[REPLIES]->data.sequence.items.top -
	    v[REPLIES]->data.sequence.items.start);
	if (n == 0 || n > MODEL_ALTS_MAX)
		return fail_at(x, v[REPLIES], path, "%zu replies: a pattern has "
		    "1 to %d", n, MODEL_ALTS_MAX);
	p->alts = xcalloc(n, sizeof(*p->alts));
	for (it = v[REPLIES]->data.sequence.items.start;
	    it < v[REPLIES]->data.sequence.items.top; it++) {
		struct model_alt	*a = &p->alts[p->nalts];

		key_idx(ipath, path, p->nalts++);
		if (parse_alt(x, node(x, *it), ipath, p, a) == -1)
			return -1;
		p->weights += a->weight;
	}
	return 0;
}

int
model_script_parse(const char *path, const char *text, size_t len,
    struct model_script *s, char *err)
{
	static const char *const keys[] = { "pace", "patterns" };
	yaml_parser_t		 parser;
	yaml_document_t		 doc;
	yaml_node_t		*top, *v[nitems(keys)];
	yaml_node_item_t	*it;
	struct sx		 x = { path, &doc, err, false };
	char			 msg[MSG_LEN], ipath[KEY_LEN];
	size_t			 n;
	int			 rc = -1, doc_ok = 0;

	memset(s, 0, sizeof(*s));
	s->path = xstrdup(path);
	if (len > MODEL_SCRIPT_CAP) {
		errf(err, "%s: a model script of %zu bytes: at most %d", path,
		    len, MODEL_SCRIPT_CAP);
		goto fail;
	}
	if (!yaml_parser_initialize(&parser)) {
		errf(err, "%s: YAML: cannot start the parser", path);
		goto fail;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		cfg_yaml_problem(&parser, path, text, len, msg, sizeof(msg));
		put3(err, ERR_LEN, msg, NULL, NULL);
		yaml_parser_delete(&parser);
		goto fail;
	}
	yaml_parser_delete(&parser);
	doc_ok = 1;
	if (cfg_yaml_aliases(path, text, len, msg, sizeof(msg)) == -1) {
		put3(err, ERR_LEN, msg, NULL, NULL);
		goto fail;
	}
	if ((top = yaml_document_get_root_node(&doc)) == NULL) {
		errf(err, "%s:1:1: script: the file is empty (it needs "
		    "patterns)", path);
		goto fail;
	}
	if (take_keys(&x, top, "", keys, nitems(keys), v) == -1)
		goto fail;
	if (v[0] != NULL) {
		char	why[ERR_LEN];

		if (v[0]->type != YAML_SCALAR_NODE ||
		    parse_duration_ms(scal(v[0]), &s->pace_ms, why) == -1) {
			fail_at(&x, v[0], "pace", "%s", v[0]->type ==
			    YAML_SCALAR_NODE ? why : "expected a duration");
			goto fail;
		}
		if (s->pace_ms > 10000) {
			fail_at(&x, v[0], "pace", "at most 10s between events");
			goto fail;
		}
	}
	if (v[1] == NULL) {
		fail_at(&x, top, "patterns", "required key is missing");
		goto fail;
	}
	if (v[1]->type != YAML_SEQUENCE_NODE) {
		fail_at(&x, v[1], "patterns", "expected a list, got %s",
		    kind_of(v[1]));
		goto fail;
	}
	n = (size_t)(v[1]->data.sequence.items.top -
	    v[1]->data.sequence.items.start);
	if (n == 0 || n > MODEL_PATTERNS_MAX) {
		fail_at(&x, v[1], "patterns", "%zu patterns: a script has 1 to "
		    "%d", n, MODEL_PATTERNS_MAX);
		goto fail;
	}
	s->pats = xcalloc(n, sizeof(*s->pats));
	for (it = v[1]->data.sequence.items.start;
	    it < v[1]->data.sequence.items.top; it++) {
		key_idx(ipath, "patterns", s->npats++);
		if (parse_pattern(&x, node(&x, *it), ipath,
		    &s->pats[s->npats - 1]) == -1)
			goto fail;
		s->nalts += s->pats[s->npats - 1].nalts;
	}
	rc = 0;
	goto out;
fail:
	model_script_free(s);
out:
	if (doc_ok)
		yaml_document_delete(&doc);
	return rc;
}

int
model_script_load(const char *path, struct model_script *s, char *err)
{
	char	*text;
	size_t	 len;
	int	 rc;

	memset(s, 0, sizeof(*s));
	if ((text = read_regular_file(path, MODEL_SCRIPT_CAP, &len, err)) ==
	    NULL)
		return -1;
	rc = model_script_parse(path, text, len, s, err);
	free(text);
	return rc;
}

int
proxy_model_check(const char *path, size_t *patterns, size_t *alternatives,
    char *err)
{
	struct model_script	s;

	*patterns = *alternatives = 0;
	if (model_script_load(path, &s, err) == -1)
		return -1;
	*patterns = s.npats;
	*alternatives = s.nalts;
	model_script_free(&s);
	return 0;
}

void
model_script_free(struct model_script *s)
{
	size_t	i, j, k;

	if (s == NULL)
		return;
	for (i = 0; i < s->npats; i++) {
		struct model_pattern	*p = &s->pats[i];

		free(p->name);
		free(p->tool);
		if (p->has_user)
			regfree(&p->user);
		if (p->has_result)
			regfree(&p->result);
		for (j = 0; j < p->nalts; j++) {
			free(p->alts[j].text);
			for (k = 0; k < p->alts[j].ncalls; k++) {
				free(p->alts[j].calls[k].name);
				json_decref(p->alts[j].calls[k].args);
			}
			free(p->alts[j].calls);
		}
		free(p->alts);
	}
	free(s->pats);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

/* ---- the HTTP request --------------------------------------------------- */

/* The value of header `name` (lower case) in the head, or NULL; heap. */
static char *
header_value(const char *head, size_t len, const char *name)
{
	const char	*p = head, *end = head + len, *eol, *colon, *v;
	size_t		 nlen = strlen(name);

	/* past the request line */
	if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
		return NULL;
	for (p = eol + 1; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || (size_t)(colon - p) != nlen ||
		    strncasecmp(p, name, nlen) != 0)
			continue;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		while (eol > v && (eol[-1] == '\r' || eol[-1] == ' ' ||
		    eol[-1] == '\t'))
			eol--;
		return strndup(v, (size_t)(eol - v));
	}
	return NULL;
}

/* A chunked body, de-chunked into h->body; -1 on anything malformed. */
static int
dechunk(const char *p, const char *end, struct model_http *h, char *err)
{
	const char	*eol;
	uint64_t	 sz;
	size_t		 cap = 0;
	int		 d;

	for (;;) {
		sz = 0;
		if (p >= end || hex_digit((unsigned char)*p) < 0)
			return errf(err, "a chunk size that is not hex");
		while (p < end && (d = hex_digit((unsigned char)*p)) >= 0) {
			if (sz > MODEL_BODY_CAP)
				return errf(err, "a chunk over %d bytes",
				    MODEL_BODY_CAP);
			sz = sz * 16 + (uint64_t)d;
			p++;
		}
		if (p >= end || (eol = memchr(p, '\n', (size_t)(end - p))) ==
		    NULL)
			return errf(err, "a chunk size line without its end");
		p = eol + 1;
		if (sz == 0)
			return 0;	/* trailers, if any, are not read */
		if (sz > (uint64_t)(end - p) || h->body_len + sz > MODEL_BODY_CAP)
			return errf(err, "a body over %d bytes, or a chunk past "
			    "the message", MODEL_BODY_CAP);
		if (h->body_len + sz + 1 > cap) {
			cap = (h->body_len + (size_t)sz + 1) * 2;
			h->body = xreallocarray(h->body, cap, 1);
		}
		memcpy(h->body + h->body_len, p, (size_t)sz);
		h->body_len += (size_t)sz;
		h->body[h->body_len] = '\0';
		p += sz;
		if (p < end && *p == '\r')
			p++;
		if (p >= end || *p != '\n')
			return errf(err, "a chunk without its CRLF");
		p++;
	}
}

int
model_http_parse(const char *msg, size_t len, struct model_http *h, char *err)
{
	const char	*hend, *sp1, *sp2, *eol, *q, *body;
	char		*v = NULL;
	uint64_t	 clen;
	size_t		 hlen;

	memset(h, 0, sizeof(*h));
	if ((hend = memmem(msg, len, "\r\n\r\n", 4)) != NULL)
		body = hend + 4;
	else if ((hend = memmem(msg, len, "\n\n", 2)) != NULL)
		body = hend + 2;
	else
		return errf(err, "a request without the end of its head");
	hlen = (size_t)(hend - msg);
	if ((eol = memchr(msg, '\n', len)) == NULL || eol > hend ||
	    (sp1 = memchr(msg, ' ', (size_t)(eol - msg))) == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1))) == NULL)
		return errf(err, "not an HTTP request line");
	if ((size_t)(sp1 - msg) >= sizeof(h->method) ||
	    (size_t)(sp2 - sp1 - 1) >= sizeof(h->path) || sp2 == sp1 + 1)
		return errf(err, "a request line's method or path is too long");
	memcpy(h->method, msg, (size_t)(sp1 - msg));
	memcpy(h->path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	if ((q = strchr(h->path, '?')) != NULL)
		h->path[q - h->path] = '\0';
	if ((v = header_value(msg, hlen, "connection")) != NULL)
		h->close = strcasecmp(v, "close") == 0;
	free(v);
	if ((v = header_value(msg, hlen, "transfer-encoding")) != NULL &&
	    strcasestr(v, "chunked") != NULL) {
		free(v);
		if (dechunk(body, msg + len, h, err) == -1)
			goto fail;
	} else {
		free(v);
		clen = 0;
		if ((v = header_value(msg, hlen, "content-length")) != NULL &&
		    dec_u64(v, v + strlen(v), MODEL_BODY_CAP, &clen) == -1) {
			errf(err, "a Content-Length that is not a number up to "
			    "%d", MODEL_BODY_CAP);
			free(v);
			goto fail;
		}
		free(v);
		if (clen > (uint64_t)(msg + len - body)) {
			errf(err, "a body shorter than its Content-Length");
			goto fail;
		}
		h->body = xcalloc(1, (size_t)clen + 1);
		memcpy(h->body, body, (size_t)clen);
		h->body_len = (size_t)clen;
	}
	if (h->body == NULL)
		h->body = xcalloc(1, 1);
	return 0;
fail:
	model_http_free(h);
	return -1;
}

void
model_http_free(struct model_http *h)
{
	if (h == NULL)
		return;
	free(h->body);
	h->body = NULL;
	h->body_len = 0;
}

/* ---- the request's JSON ------------------------------------------------- */

int
model_api_of(const char *path, enum model_api *api)
{
	size_t	n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
#define ENDS(s) (n >= sizeof(s) - 1 && memcmp(path + n - (sizeof(s) - 1), s, \
	sizeof(s) - 1) == 0)
	if (ENDS("/chat/completions")) {
		*api = MODEL_API_OPENAI;
		return 0;
	}
	if (ENDS("/v1/messages")) {
		*api = MODEL_API_ANTHROPIC;
		return 0;
	}
#undef ENDS
	return -1;
}

/* A string, or the text parts of a content array, joined; heap or NULL. */
static char *
content_text(const json_t *c, const char *want_type)
{
	size_t		 i, o = 0, n;
	json_t		*part, *t;
	char		*buf = NULL;
	const char	*s;

	if (json_is_string(c))
		return xstrdup(json_string_value(c));
	if (!json_is_array(c))
		return NULL;
	json_array_foreach(c, i, part) {
		if (!json_is_object(part) || !json_is_string(json_object_get(part,
		    "type")) || strcmp(json_string_value(json_object_get(part,
		    "type")), want_type) != 0)
			continue;
		if (!json_is_string(t = json_object_get(part, "text")))
			continue;
		s = json_string_value(t);
		n = strlen(s);
		buf = xreallocarray(buf, o + n + 2, 1);
		if (o > 0)
			buf[o++] = '\n';
		memcpy(buf + o, s, n);
		o += n;
		buf[o] = '\0';
	}
	return buf;
}

static void
str_append(char **buf, const char *s)
{
	char	*n;

	if (*buf == NULL) {
		*buf = xstrdup(s);
		return;
	}
	n = xasprintf("%s\n%s", *buf, s);
	free(*buf);
	*buf = n;
}

static void
tools_add(struct model_req *r, const char *name)
{
	/* NULL-ended: strv_free frees it */
	r->tools = xreallocarray(r->tools, r->ntools + 2, sizeof(*r->tools));
	r->tools[r->ntools++] = xstrdup(name);
	r->tools[r->ntools] = NULL;
}

/* The name the assistant message `asst` gave the call with id `id`. */
static const char *
call_name(const json_t *asst, enum model_api api, const char *id)
{
	json_t		*calls, *c;
	size_t		 i;
	const char	*cid, *name;

	if (id == NULL || asst == NULL)
		return "";
	calls = json_object_get(asst, api == MODEL_API_OPENAI ? "tool_calls" :
	    "content");
	if (!json_is_array(calls))
		return "";
	json_array_foreach(calls, i, c) {
		cid = json_string_value(json_object_get(c, "id"));
		name = api == MODEL_API_OPENAI ?
		    json_string_value(json_object_get(json_object_get(c,
		    "function"), "name")) :
		    json_string_value(json_object_get(c, "name"));
		if (cid != NULL && name != NULL && strcmp(cid, id) == 0)
			return name;
	}
	return "";
}

static int
openai_messages(const json_t *msgs, struct model_req *r, char *err)
{
	size_t		 i, last_asst = SIZE_MAX;
	json_t		*m;
	const char	*role;
	char		*t;

	json_array_foreach(msgs, i, m) {
		if (!json_is_object(m) || (role = json_string_value(
		    json_object_get(m, "role"))) == NULL)
			return errf(err, "messages[%zu] has no role", i);
		if (strcmp(role, "assistant") == 0) {
			r->step++;
			last_asst = i;
		} else if (strcmp(role, "user") == 0 &&
		    (t = content_text(json_object_get(m, "content"), "text")) !=
		    NULL) {
			free(r->user);
			r->user = t;
		}
	}
	/* the tool messages after the last assistant message, if it ends so */
	if (json_array_size(msgs) == 0 || strcmp(json_string_value(
	    json_object_get(json_array_get(msgs, json_array_size(msgs) - 1),
	    "role")), "tool") != 0)
		return 0;
	for (i = last_asst == SIZE_MAX ? 0 : last_asst + 1;
	    i < json_array_size(msgs); i++) {
		m = json_array_get(msgs, i);
		if (strcmp(json_string_value(json_object_get(m, "role")),
		    "tool") != 0)
			continue;
		t = content_text(json_object_get(m, "content"), "text");
		str_append(&r->results, t ? t : "");
		free(t);
		tools_add(r, call_name(last_asst == SIZE_MAX ? NULL :
		    json_array_get(msgs, last_asst), MODEL_API_OPENAI,
		    json_string_value(json_object_get(m, "tool_call_id"))));
	}
	return 0;
}

static int
anthropic_messages(const json_t *msgs, struct model_req *r, char *err)
{
	size_t		 i, j, n = json_array_size(msgs);
	json_t		*m, *c, *b, *asst = NULL;
	const char	*role;
	char		*t;

	json_array_foreach(msgs, i, m) {
		if (!json_is_object(m) || (role = json_string_value(
		    json_object_get(m, "role"))) == NULL)
			return errf(err, "messages[%zu] has no role", i);
		if (strcmp(role, "assistant") == 0) {
			r->step++;
			asst = m;
			continue;
		}
		if (strcmp(role, "user") == 0 &&
		    (t = content_text(json_object_get(m, "content"), "text")) !=
		    NULL) {
			free(r->user);
			r->user = t;
		}
	}
	if (n == 0)
		return 0;
	m = json_array_get(msgs, n - 1);
	c = json_object_get(m, "content");
	if (strcmp(json_string_value(json_object_get(m, "role")), "user") != 0 ||
	    !json_is_array(c))
		return 0;
	json_array_foreach(c, j, b) {
		const char	*type = json_string_value(json_object_get(b, "type"));

		if (type == NULL || strcmp(type, "tool_result") != 0)
			continue;
		t = content_text(json_object_get(b, "content"), "text");
		str_append(&r->results, t ? t : "");
		free(t);
		tools_add(r, call_name(asst, MODEL_API_ANTHROPIC,
		    json_string_value(json_object_get(b, "tool_use_id"))));
	}
	return 0;
}

int
model_req_parse(enum model_api api, const char *body, size_t len,
    struct model_req *r, char *err)
{
	json_t		*j = NULL, *msgs, *v;
	json_error_t	 je;
	const char	*model;
	int		 rc = -1;

	memset(r, 0, sizeof(*r));
	r->api = api;
	r->body_len = len;
	if (len > MODEL_BODY_CAP)
		return errf(err, "a request body of %zu bytes: at most %d", len,
		    MODEL_BODY_CAP);
	if ((j = json_loadb(body, len, 0, &je)) == NULL) {
		errf(err, "the request body is not JSON: %s (at %d)", je.text,
		    je.position);
		goto out;
	}
	if (!json_is_object(j)) {
		errf(err, "the request body is not a JSON object");
		goto out;
	}
	model = json_string_value(json_object_get(j, "model"));
	snprintf(r->model, sizeof(r->model), "%s", model ? model : "soak-model");
	utf8_scrub(r->model, strlen(r->model));
	r->stream = json_is_true(json_object_get(j, "stream"));
	v = json_object_get(json_object_get(j, "stream_options"),
	    "include_usage");
	r->usage_chunk = api == MODEL_API_OPENAI && r->stream && json_is_true(v);
	if (!json_is_array(msgs = json_object_get(j, "messages"))) {
		errf(err, "the request has no messages");
		goto out;
	}
	if ((api == MODEL_API_OPENAI ? openai_messages(msgs, r, err) :
	    anthropic_messages(msgs, r, err)) == -1)
		goto out;
	rc = 0;
out:
	json_decref(j);
	if (rc == -1)
		model_req_free(r);
	return rc;
}

void
model_req_free(struct model_req *r)
{
	if (r == NULL)
		return;
	free(r->user);
	free(r->results);
	strv_free(r->tools);
	r->user = r->results = NULL;
	r->tools = NULL;
	r->ntools = 0;
}

void
model_req_what(const struct model_req *r, char *buf, size_t len)
{
	char	u[48];
	size_t	n;

	if (r->results != NULL) {
		snprintf(buf, len, "step %d, after %zu tool result%s (%s)",
		    r->step, r->ntools, r->ntools == 1 ? "" : "s",
		    r->ntools > 0 && r->tools[0][0] ? r->tools[0] : "?");
		return;
	}
	if (r->user == NULL) {
		snprintf(buf, len, "step %d, no user message", r->step);
		return;
	}
	n = utf8_prefix(r->user, strlen(r->user), 40);
	memcpy(u, r->user, n);
	u[n] = '\0';
	snprintf(buf, len, "step %d, user: \"%s%s\"", r->step, u,
	    r->user[n] ? "…" : "");
	utf8_scrub(buf, strlen(buf));
}

/* ---- matching and choosing ---------------------------------------------- */

void
model_captures_free(char *captures[MODEL_CAPTURES])
{
	size_t	i;

	for (i = 0; i < MODEL_CAPTURES; i++) {
		free(captures[i]);
		captures[i] = NULL;
	}
}

static bool
pattern_holds(const struct model_pattern *p, const struct model_req *r,
    int turn, char *captures[MODEL_CAPTURES])
{
	regmatch_t	m[MODEL_CAPTURES];
	size_t		i;
	bool		tool = false;

	if (p->turn >= 0 && p->turn != turn)
		return false;
	if (p->step >= 0 && p->step != r->step)
		return false;
	if ((p->has_result || p->tool != NULL) && r->results == NULL)
		return false;
	if (p->has_result && regexec(&p->result, r->results, 0, NULL, 0) != 0)
		return false;
	if (p->tool != NULL) {
		for (i = 0; i < r->ntools; i++)
			if (strcmp(r->tools[i], p->tool) == 0)
				tool = true;
		if (!tool)
			return false;
	}
	if (!p->has_user)
		return true;
	if (r->user == NULL || regexec(&p->user, r->user, MODEL_CAPTURES, m,
	    0) != 0)
		return false;
	for (i = 1; i < MODEL_CAPTURES && i <= p->user.re_nsub; i++)
		captures[i] = m[i].rm_so < 0 ? xstrdup("") :
		    strndup(r->user + m[i].rm_so, (size_t)(m[i].rm_eo -
		    m[i].rm_so));
	return true;
}

int
model_match(const struct model_script *s, const struct model_req *r, int turn,
    char *captures[MODEL_CAPTURES])
{
	size_t	i;

	memset(captures, 0, MODEL_CAPTURES * sizeof(*captures));
	for (i = 0; i < s->npats; i++) {
		if (pattern_holds(&s->pats[i], r, turn, captures))
			return (int)i;
		model_captures_free(captures);
	}
	return -1;
}

uint64_t
model_draw(const struct model_id *id)
{
	return seed_derive(id->seed ^ seed_str(id->proxy) ^ seed_str("model"),
	    ((uint64_t)(uint32_t)id->round << 32) | (uint32_t)id->turn,
	    seed_derive(id->key, id->occ, 0));
}

size_t
model_pick(const struct model_pattern *p, uint64_t draw)
{
	struct seed_rng	r;
	uint64_t	x;
	size_t		i;

	if (p->nalts <= 1 || p->weights == 0)
		return 0;
	seed_rng_init(&r, draw);
	x = seed_rng_below(&r, p->weights);
	for (i = 0; i < p->nalts; i++) {
		if (x < p->alts[i].weight)
			return i;
		x -= p->alts[i].weight;
	}
	return p->nalts - 1;
}

size_t
model_pick_among(uint64_t draw, size_t n)
{
	struct seed_rng	r;

	if (n <= 1)
		return 0;
	seed_rng_init(&r, draw);
	return (size_t)seed_rng_below(&r, n);
}

/* ---- rendering ---------------------------------------------------------- */

void
model_out_add(struct model_out *o, const char *p, size_t len)
{
	o->piece = xreallocarray(o->piece, o->n + 1, sizeof(*o->piece));
	o->len = xreallocarray(o->len, o->n + 1, sizeof(*o->len));
	o->piece[o->n] = xcalloc(1, len + 1);
	memcpy(o->piece[o->n], p, len);
	o->len[o->n++] = len;
}

void
model_out_free(struct model_out *o)
{
	size_t	i;

	if (o == NULL)
		return;
	for (i = 0; i < o->n; i++)
		free(o->piece[i]);
	free(o->piece);
	free(o->len);
	memset(o, 0, sizeof(*o));
}

/* s with $1..$9 from captures and $$ as $; heap. */
static char *
subst(const char *s, char *const captures[MODEL_CAPTURES])
{
	size_t		 o = 0, cap = strlen(s) + 1, n;
	char		*b = xcalloc(1, cap);
	const char	*c;

	for (; *s; s++) {
		c = NULL;
		if (*s == '$' && s[1] == '$') {
			c = "$";
			s++;
		} else if (*s == '$' && s[1] >= '1' && s[1] <= '9') {
			c = captures[s[1] - '0'] ? captures[s[1] - '0'] : "";
			s++;
		}
		n = c ? strlen(c) : 1;
		if (o + n + 1 > cap) {
			cap = (o + n + 1) * 2;
			b = xreallocarray(b, cap, 1);
		}
		memcpy(b + o, c ? c : s, n);
		o += n;
	}
	b[o] = '\0';
	return b;
}

static json_t *
json_subst(const json_t *j, char *const captures[MODEL_CAPTURES])
{
	const char	*k;
	json_t		*v, *out;
	size_t		 i;
	char		*s;

	if (json_is_string(j)) {
		s = subst(json_string_value(j), captures);
		out = json_string(s);
		free(s);
		return out ? out : json_string("");
	}
	if (json_is_object(j)) {
		out = json_object();
		json_object_foreach(UNCONST(j), k, v)
			json_object_set_new(out, k, json_subst(v, captures));
		return out;
	}
	if (json_is_array(j)) {
		out = json_array();
		json_array_foreach(j, i, v)
			json_array_append_new(out, json_subst(v, captures));
		return out;
	}
	return json_deep_copy(j);
}

static const char *
status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 529: return "Overloaded";
	default: return "Status";
	}
}

static char *
dumps(const json_t *j)
{
	char	*s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);

	if (s == NULL)
		abort();
	return s;
}

/* A whole response: head and body, in one piece. */
static void
out_whole(struct model_out *o, int status, const char *rid, const char *body,
    int retry_after_s)
{
	char	*head, ra[48] = "";

	if (retry_after_s > 0)
		snprintf(ra, sizeof(ra), "Retry-After: %d\r\n", retry_after_s);
	head = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n%s%s\r\n\r\n%s", status, status_text(status),
	    strlen(body), ra, rid, body);
	model_out_add(o, head, strlen(head));
	free(head);
	o->status = status;
}

/* One server-sent event as one chunk of a chunked body. */
static void
out_event(struct model_out *o, const char *event, const json_t *data,
    const char *raw)
{
	char	*d = data ? dumps(data) : NULL, *ev, *chunk;

	if (event != NULL)
		ev = xasprintf("event: %s\ndata: %s\n\n", event, d ? d : raw);
	else
		ev = xasprintf("data: %s\n\n", d ? d : raw);
	chunk = xasprintf("%zx\r\n%s\r\n", strlen(ev), ev);
	model_out_add(o, chunk, strlen(chunk));
	o->events++;
	free(chunk);
	free(ev);
	free(d);
}

static void
out_stream_head(struct model_out *o, const char *rid)
{
	char	*head;

	head = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; "
	    "charset=utf-8\r\nTransfer-Encoding: chunked\r\nCache-Control: "
	    "no-cache\r\n%s\r\n\r\n", rid);
	model_out_add(o, head, strlen(head));
	free(head);
	o->status = 200;
}

static void
out_stream_end(struct model_out *o)
{
	model_out_add(o, "0\r\n\r\n", 5);
}

/*
 * Where a streamed text is cut into deltas: about MODEL_PIECES of them,
 * each ending after a blank when one is near, never inside a character.
 */
static size_t
piece_end(const char *s, size_t len, size_t at)
{
	size_t	target = len / MODEL_PIECES + 4, e;

	if (len - at <= target)
		return len;
	e = at + utf8_prefix(s + at, len - at, target);
	while (e < len && e < at + target * 2 && s[e - 1] != ' ') {
		size_t	c = utf8_decode(s + e, len - e, NULL);

		e += c ? c : 1;
	}
	if (e <= at)
		e = at + 1;
	return e;
}

/* The tool calls of an alternative, arguments substituted, as JSON text. */
struct calls {
	char	*id[MODEL_CALLS_MAX];
	char	*args[MODEL_CALLS_MAX];
	json_t	*obj[MODEL_CALLS_MAX];
	size_t	 n;
	size_t	 bytes;
};

static void
calls_make(struct calls *cs, const struct model_alt *a,
    char *const captures[MODEL_CAPTURES], uint64_t draw, enum model_api api)
{
	size_t	i;

	memset(cs, 0, sizeof(*cs));
	for (i = 0; i < a->ncalls; i++) {
		cs->obj[i] = json_subst(a->calls[i].args, captures);
		cs->args[i] = dumps(cs->obj[i]);
		cs->id[i] = xasprintf(api == MODEL_API_OPENAI ? "call_%016" PRIx64 :
		    "toolu_%016" PRIx64, seed_mix(draw + 2 + i));
		cs->bytes += strlen(cs->args[i]);
	}
	cs->n = a->ncalls;
}

static void
calls_free(struct calls *cs)
{
	size_t	i;

	for (i = 0; i < cs->n; i++) {
		free(cs->id[i]);
		free(cs->args[i]);
		json_decref(cs->obj[i]);
	}
}

static json_t *
openai_usage(const struct model_req *r, size_t out_bytes)
{
	json_int_t	in = (json_int_t)(r->body_len / 4 + 1);
	json_int_t	out = (json_int_t)(out_bytes / 4 + 1);

	return json_pack("{sIsIsI}", "prompt_tokens", in, "completion_tokens",
	    out, "total_tokens", in + out);
}

static json_t *
openai_chunk(const char *id, const struct model_req *r, json_t *delta,
    const char *finish)
{
	json_t	*c;

	c = json_pack("{sssssIsss[{sIsosnso}]}", "id", id, "object",
	    "chat.completion.chunk", "created", (json_int_t)MODEL_CREATED,
	    "model", r->model, "choices", "index", (json_int_t)0, "delta", delta,
	    "logprobs", "finish_reason", finish ? json_string(finish) :
	    json_null());
	json_object_set_new(c, "system_fingerprint", json_string("fp_soak"));
	if (r->usage_chunk)
		json_object_set_new(c, "usage", json_null());
	return c;
}

static void
render_openai(const struct model_alt *a, const char *text,
    const struct calls *cs, const struct model_req *r, uint64_t draw,
    struct model_out *o)
{
	char		 id[48], rid[64];
	json_t		*msg, *tc, *body, *delta, *c;
	char		*s, *frag;
	const char	*finish = cs->n > 0 ? "tool_calls" : "stop";
	size_t		 i, at, e, tl = text ? strlen(text) : 0;

	snprintf(id, sizeof(id), "chatcmpl-soak%016" PRIx64, seed_mix(draw));
	snprintf(rid, sizeof(rid), "x-request-id: req_%016" PRIx64,
	    seed_mix(draw + 1));
	if (!r->stream) {
		msg = json_pack("{sssosn}", "role", "assistant", "content",
		    text ? json_string(text) : json_null(), "refusal");
		json_object_set_new(msg, "annotations", json_array());
		if (cs->n > 0) {
			tc = json_array();
			for (i = 0; i < cs->n; i++)
				json_array_append_new(tc, json_pack("{sssss{ssss}}",
				    "id", cs->id[i], "type", "function", "function",
				    "name", a->calls[i].name, "arguments",
				    cs->args[i]));
			json_object_set_new(msg, "tool_calls", tc);
		}
		body = json_pack("{sssssIsss[{sIsosnss}]soss}", "id", id,
		    "object", "chat.completion", "created",
		    (json_int_t)MODEL_CREATED, "model", r->model, "choices",
		    "index", (json_int_t)0, "message", msg, "logprobs",
		    "finish_reason", finish, "usage", openai_usage(r, tl +
		    cs->bytes), "system_fingerprint", "fp_soak");
		s = dumps(body);
		out_whole(o, 200, rid, s, 0);
		free(s);
		json_decref(body);
		return;
	}
	out_stream_head(o, rid);
	delta = json_pack("{ssso}", "role", "assistant", "content",
	    text ? json_string("") : json_null());
	json_object_set_new(delta, "refusal", json_null());
	c = openai_chunk(id, r, delta, NULL);
	out_event(o, NULL, c, NULL);
	json_decref(c);
	for (at = 0; at < tl; at = e) {
		e = piece_end(text, tl, at);
		s = strndup(text + at, e - at);
		c = openai_chunk(id, r, json_pack("{ss}", "content", s), NULL);
		out_event(o, NULL, c, NULL);
		json_decref(c);
		free(s);
	}
	for (i = 0; i < cs->n; i++) {
		c = openai_chunk(id, r, json_pack("{s[{sIsssss{ssss}}]}",
		    "tool_calls", "index", (json_int_t)i, "id", cs->id[i],
		    "type", "function", "function", "name", a->calls[i].name,
		    "arguments", ""), NULL);
		out_event(o, NULL, c, NULL);
		json_decref(c);
		/* the arguments in a few fragments, as the API sends them */
		tl = strlen(cs->args[i]);
		for (at = 0; at < tl; at = e) {
			e = at + utf8_prefix(cs->args[i] + at, tl - at,
			    tl / 3 + 1);
			if (e == at)
				e = tl;
			frag = strndup(cs->args[i] + at, e - at);
			c = openai_chunk(id, r, json_pack("{s[{sIs{ss}}]}",
			    "tool_calls", "index", (json_int_t)i, "function",
			    "arguments", frag), NULL);
			out_event(o, NULL, c, NULL);
			json_decref(c);
			free(frag);
		}
	}
	c = openai_chunk(id, r, json_object(), finish);
	out_event(o, NULL, c, NULL);
	json_decref(c);
	if (r->usage_chunk) {
		c = json_pack("{sssssIsss[]so}", "id", id, "object",
		    "chat.completion.chunk", "created", (json_int_t)MODEL_CREATED,
		    "model", r->model, "choices", "usage", openai_usage(r,
		    (text ? strlen(text) : 0) + cs->bytes));
		json_object_set_new(c, "system_fingerprint", json_string("fp_soak"));
		out_event(o, NULL, c, NULL);
		json_decref(c);
	}
	out_event(o, NULL, NULL, "[DONE]");
	out_stream_end(o);
}

static void
render_anthropic(const struct model_alt *a, const char *text,
    const struct calls *cs, const struct model_req *r, uint64_t draw,
    struct model_out *o)
{
	char		 id[48], rid[64];
	json_t		*content, *body, *ev;
	char		*s, *frag;
	const char	*stop = cs->n > 0 ? "tool_use" : "end_turn";
	size_t		 i, at, e, tl = text ? strlen(text) : 0, idx = 0;
	json_int_t	 in = (json_int_t)(r->body_len / 4 + 1);
	json_int_t	 outn = (json_int_t)((tl + cs->bytes) / 4 + 1);

	snprintf(id, sizeof(id), "msg_soak%016" PRIx64, seed_mix(draw));
	snprintf(rid, sizeof(rid), "request-id: req_soak%016" PRIx64,
	    seed_mix(draw + 1));
	if (!r->stream) {
		content = json_array();
		if (text != NULL)
			json_array_append_new(content, json_pack("{ssss}", "type",
			    "text", "text", text));
		for (i = 0; i < cs->n; i++)
			json_array_append_new(content, json_pack("{sssssssO}",
			    "type", "tool_use", "id", cs->id[i], "name",
			    a->calls[i].name, "input", cs->obj[i]));
		body = json_pack("{sssssssssosssns{sIsI}}", "id", id, "type",
		    "message", "role", "assistant", "model", r->model,
		    "content", content, "stop_reason", stop, "stop_sequence",
		    "usage", "input_tokens", in, "output_tokens", outn);
		s = dumps(body);
		out_whole(o, 200, rid, s, 0);
		free(s);
		json_decref(body);
		return;
	}
	out_stream_head(o, rid);
	ev = json_pack("{sss{sssssss[]sssnsns{sIsI}}}", "type", "message_start",
	    "message", "id", id, "type", "message", "role", "assistant",
	    "content", "model", r->model, "stop_reason", "stop_sequence",
	    "usage", "input_tokens", in, "output_tokens", (json_int_t)1);
	out_event(o, "message_start", ev, NULL);
	json_decref(ev);
	if (text != NULL) {
		ev = json_pack("{sssIs{ssss}}", "type", "content_block_start",
		    "index", (json_int_t)idx, "content_block", "type", "text",
		    "text", "");
		out_event(o, "content_block_start", ev, NULL);
		json_decref(ev);
		out_event(o, "ping", NULL, "{\"type\": \"ping\"}");
		for (at = 0; at < tl; at = e) {
			e = piece_end(text, tl, at);
			s = strndup(text + at, e - at);
			ev = json_pack("{sssIs{ssss}}", "type",
			    "content_block_delta", "index", (json_int_t)idx,
			    "delta", "type", "text_delta", "text", s);
			out_event(o, "content_block_delta", ev, NULL);
			json_decref(ev);
			free(s);
		}
		ev = json_pack("{sssI}", "type", "content_block_stop", "index",
		    (json_int_t)idx);
		out_event(o, "content_block_stop", ev, NULL);
		json_decref(ev);
		idx++;
	}
	for (i = 0; i < cs->n; i++, idx++) {
		ev = json_pack("{sssIs{sssssss{}}}", "type", "content_block_start",
		    "index", (json_int_t)idx, "content_block", "type", "tool_use",
		    "id", cs->id[i], "name", a->calls[i].name, "input");
		out_event(o, "content_block_start", ev, NULL);
		json_decref(ev);
		if (idx == 0)
			out_event(o, "ping", NULL, "{\"type\": \"ping\"}");
		tl = strlen(cs->args[i]);
		for (at = 0; at < tl; at = e) {
			e = at + utf8_prefix(cs->args[i] + at, tl - at,
			    tl / 3 + 1);
			if (e == at)
				e = tl;
			frag = strndup(cs->args[i] + at, e - at);
			ev = json_pack("{sssIs{ssss}}", "type",
			    "content_block_delta", "index", (json_int_t)idx,
			    "delta", "type", "input_json_delta", "partial_json",
			    frag);
			out_event(o, "content_block_delta", ev, NULL);
			json_decref(ev);
			free(frag);
		}
		ev = json_pack("{sssI}", "type", "content_block_stop", "index",
		    (json_int_t)idx);
		out_event(o, "content_block_stop", ev, NULL);
		json_decref(ev);
	}
	ev = json_pack("{sss{sssn}s{sI}}", "type", "message_delta", "delta",
	    "stop_reason", stop, "stop_sequence", "usage", "output_tokens",
	    outn);
	out_event(o, "message_delta", ev, NULL);
	json_decref(ev);
	out_event(o, "message_stop", NULL, "{\"type\":\"message_stop\"}");
	out_stream_end(o);
}

void
model_render(const struct model_pattern *p, size_t a,
    const struct model_req *r, char *const captures[MODEL_CAPTURES],
    uint64_t draw, struct model_out *o)
{
	const struct model_alt	*alt = &p->alts[a < p->nalts ? a : 0];
	struct calls		 cs;
	char			*text = NULL;

	memset(o, 0, sizeof(*o));
	if (alt->text != NULL)
		text = subst(alt->text, captures);
	calls_make(&cs, alt, captures, draw, r->api);
	if (r->api == MODEL_API_OPENAI)
		render_openai(alt, text, &cs, r, draw, o);
	else
		render_anthropic(alt, text, &cs, r, draw, o);
	calls_free(&cs);
	free(text);
}

void
model_render_error(enum model_api api, int status, const char *type,
    const char *message, int retry_after_s, struct model_out *o)
{
	json_t	*body;
	char	*s;

	memset(o, 0, sizeof(*o));
	if (api == MODEL_API_ANTHROPIC)
		body = json_pack("{sss{ssss}}", "type", "error", "error", "type",
		    type, "message", message);
	else
		body = json_pack("{s{sssssnsn}}", "error", "message", message,
		    "type", type, "param", "code");
	if (body == NULL)	/* a message that is not UTF-8 */
		body = json_pack("{s{ss}}", "error", "message", "soak: error");
	s = dumps(body);
	out_whole(o, status, "x-soak: stand-in", s, retry_after_s);
	free(s);
	json_decref(body);
}

/* The API's error type for a status: Anthropic's names, OpenAI's. */
static const char *
error_type(enum model_api api, int status)
{
	if (api == MODEL_API_ANTHROPIC)
		switch (status) {
		case 400: return "invalid_request_error";
		case 401: return "authentication_error";
		case 403: return "permission_error";
		case 404: return "not_found_error";
		case 413: return "request_too_large";
		case 429: return "rate_limit_error";
		case 529: return "overloaded_error";
		default: return status < 500 ? "invalid_request_error" : "api_error";
		}
	if (status == 429)
		return "requests";
	return status < 500 ? "invalid_request_error" : "server_error";
}

char *
model_status_reply(enum model_api api, int status, int64_t retry_ms,
    const char *proxy, size_t *len)
{
	json_t	*body;
	char	*msg, *b, *out, ra[96] = "";

	msg = xasprintf("soak fault-proxy %s: a status fault (%d %s): the proxy "
	    "answered this request itself, the upstream never saw it", proxy,
	    status, status_text(status));
	if (api == MODEL_API_ANTHROPIC)
		body = json_pack("{sss{ssss}}", "type", "error", "error", "type",
		    error_type(api, status), "message", msg);
	else if (api == MODEL_API_OPENAI)
		body = json_pack("{s{sssssnss?}}", "error", "message", msg, "type",
		    error_type(api, status), "param", "code", status == 429 ?
		    "rate_limit_exceeded" : NULL);
	else
		body = json_pack("{sissss}", "status", status, "error",
		    status_text(status), "message", msg);
	if (body == NULL)
		abort();	/* a proxy's name is [A-Za-z0-9_]+ */
	b = dumps(body);
	if (retry_ms >= 0 && (status == 429 || status == 503 || status == 529))
		snprintf(ra, sizeof(ra), "Retry-After: %lld\r\nretry-after-ms: "
		    "%lld\r\n", (long long)((retry_ms + 999) / 1000),
		    (long long)retry_ms);
	out = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n%sx-soak: fault status\r\n\r\n%s", status,
	    status_text(status), strlen(b), ra, b);
	*len = strlen(out);
	free(b);
	free(msg);
	json_decref(body);
	return out;
}
