/*
 * The config loader (docs/design.md, "The config").
 *
 * Approach.  libyaml's document API composes the whole file into a node
 * tree first; each node keeps its start mark, so every message can name
 * "file:line:col" of the key or value at fault without tracking parser
 * state by hand.  We then walk the tree once, section by section:
 *
 *  - take_keys() turns one mapping into a table indexed by the section's
 *    known key list.  It rejects non-scalar keys, duplicate keys and unknown
 *    keys (listing the expected ones) in file order, so a typo is reported
 *    before any value is looked at.
 *  - Each section then converts the values it found with small typed
 *    getters (string, integer in a range, bool, duration, share, byte count,
 *    enum, command) that either fill the field or fail with the key's dotted
 *    path ("proxies[0].faults.rate") and a sentence saying what was wanted.
 *  - Sections run in key-table order, not file order, so cross references
 *    resolve no matter how the user ordered the file: services are known
 *    before proxies name them, turns and rounds before the guard is checked.
 *
 * Everything is parsed straight into the caller's struct cfg; on any error
 * the partial struct is freed and zeroed, so a caller never sees half a
 * config.  cfg_load_file is read_file + cfg_load_text, and the folder is
 * computed the same way in both (realpath when the folder exists, otherwise
 * a lexical absolute path), which is what makes a worker's cfg_load_text of
 * the shipped text identical to the coordinator's cfg_load_file.
 *
 * YAML nulls ("key:" with no value, "~", "null") mean "use the default" for
 * sections and lists, and "" for plain strings; required strings then fail
 * as empty.  Scalars are typed by their text, not by YAML tags: turns: "8"
 * is the same as turns: 8.
 */
#include "common/config.h"

#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "common/conninfo.h"
#include "common/fault.h"
#include "common/log.h"
#include "common/units.h"
#include "common/util.h"

#define CFG_MAX_BYTES	(1024 * 1024)	/* a config bigger than this is a mistake */
#define CFG_KEY_LEN	128		/* dotted key path */
#define CFG_MAX_KEYS	32		/* most keys any one section knows */
#define CFG_BAND_EPS	1e-9		/* 0.4 + 0.3 + 0.3 is not > 1 */
#define CFG_MAX_ERRS	20		/* messages kept; the rest are counted */
#define CFG_MSG_LEN	1024		/* a message in full (err gets ERR_LEN of it) */

struct cfg_ctx {
	const char	*file;		/* for messages: the path as given */
	const char	*dir;		/* absolute folder, for relative paths */
	yaml_document_t	*doc;
	struct cfg	*cfg;
	char		*err;		/* the first message */
	size_t		 marks_cap;	/* of cfg->marks */
	struct cfg_errors *errs;	/* every message, or NULL */
	size_t		 nerr;		/* messages so far */
	bool		 services_bad;	/* a service failed: names may be missing */
	yaml_node_t	*db_proxy;	/* database.proxy, resolved after proxies */
};

/* ---- messages ---------------------------------------------------------- */

static int fail_at(struct cfg_ctx *, const yaml_node_t *, const char *,
    const char *, ...) __attribute__((format(printf, 4, 5)));

static int fail_msg(struct cfg_ctx *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Keeps one message: the first goes to err (what cfg_load_* callers
 * print), each one to cx->errs while there is room.  Loading goes on after
 * a message where what follows does not depend on what failed, so a user
 * hears every mistake of a file at once, as a compiler says them.
 */
static int
fail_msg(struct cfg_ctx *cx, const char *fmt, ...)
{
	char		 msg[CFG_MSG_LEN];
	struct cfg_errors *e = cx->errs;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cx->nerr++ == 0) {
		size_t	n = strnlen(msg, ERR_LEN - 1);

		memcpy(cx->err, msg, n);	/* the first ERR_LEN - 1 bytes */
		cx->err[n] = '\0';
	}
	if (e != NULL) {
		if (e->n < CFG_MAX_ERRS) {
			e->msg = xreallocarray(e->msg, e->n + 1, sizeof(*e->msg));
			e->msg[e->n++] = xstrdup(msg);
		}
		e->total++;
	}
	return -1;
}

/* Every message goes through here, so every message has the same shape. */
static int
fail_at(struct cfg_ctx *cx, const yaml_node_t *n, const char *key,
    const char *fmt, ...)
{
	char	msg[CFG_MSG_LEN];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail_msg(cx, "%s:%zu:%zu: %s: %s", cx->file,
	    n->start_mark.line + 1, n->start_mark.column + 1, key, msg);
}

/* "a, b or c" */
static void
join_names(const char *const *names, size_t n, const char *last_sep,
    char *buf, size_t size)
{
	size_t	i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && o < size; i++) {
		const char	*sep = i == 0 ? "" : (i + 1 == n ? last_sep : ", ");
		int		 w = snprintf(buf + o, size - o, "%s%s", sep, names[i]);

		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/*
 * Key paths are built by hand rather than with snprintf: a deep path is
 * cut at CFG_KEY_LEN, which is fine for a message and keeps gcc's
 * truncation analysis quiet.
 */
static void
key_put(char *buf, const char *a, const char *b, const char *c)
{
	const char	*parts[3] = { a, b, c };
	size_t		 i, o = 0;
	const char	*p;

	for (i = 0; i < nitems(parts); i++)
		for (p = parts[i]; p != NULL && *p && o + 1 < CFG_KEY_LEN; p++)
			buf[o++] = *p;
	buf[o] = '\0';
}

static void
key_join(char *buf, const char *prefix, const char *key)
{
	if (prefix == NULL || *prefix == '\0')
		key_put(buf, key, NULL, NULL);
	else
		key_put(buf, prefix, ".", key);
}

static void
key_index(char *buf, const char *prefix, size_t i)
{
	char	num[32];
	size_t	o = sizeof(num) - 1;

	num[o] = '\0';
	num[--o] = ']';
	do
		num[--o] = (char)('0' + i % 10);
	while ((i /= 10) != 0 && o > 1);
	num[--o] = '[';
	key_put(buf, prefix, num + o, NULL);
}

/* ---- nodes ------------------------------------------------------------- */

static yaml_node_t *
node_at(struct cfg_ctx *cx, int index)
{
	return yaml_document_get_node(cx->doc, index);
}

static const char *
scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int
is_null(const yaml_node_t *n)
{
	const char	*s;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	s = scalar(n);
	return *s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	    strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static const char *
kind_of(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return is_null(n) ? "nothing" : "a string";
	}
}

/* "expected WHAT, got X", quoting X when it is a scalar. */
static int
fail_type(struct cfg_ctx *cx, const yaml_node_t *n, const char *key,
    const char *what)
{
	char	b[QUOTE_LEN], *red;

	if (n->type == YAML_SCALAR_NODE && !is_null(n)) {
		/* "database: postgresql://u:pw@h" must not print pw. */
		red = conninfo_redact(scalar(n));
		quote_value(red, b, sizeof(b));
		free(red);
		return fail_at(cx, n, key, "expected %s, got %s", what, b);
	}
	return fail_at(cx, n, key, "expected %s, got %s", what, kind_of(n));
}

/* Remembers where key's value n stands (struct cfg_mark). */
static void
mark_add(struct cfg_ctx *cx, const char *key, const yaml_node_t *n)
{
	struct cfg	*cfg = cx->cfg;

	if (cfg->nmarks == cx->marks_cap) {
		cx->marks_cap = cx->marks_cap ? cx->marks_cap * 2 : 32;
		cfg->marks = xreallocarray(cfg->marks, cx->marks_cap,
		    sizeof(*cfg->marks));
	}
	cfg->marks[cfg->nmarks].key = xstrdup(key);
	cfg->marks[cfg->nmarks].line = (int)n->start_mark.line + 1;
	cfg->marks[cfg->nmarks].col = (int)n->start_mark.column + 1;
	cfg->nmarks++;
}

/*
 * Edit distance with transpositions (optimal string alignment), for "did
 * you mean": "tunrs" is one step from "turns".  Keys are short; longer
 * words than CFG_KEY_LEN are too far from any key anyway.
 */
static size_t
key_distance(const char *a, const char *b)
{
	size_t	la = strlen(a), lb = strlen(b), i, j, c, d[3][CFG_KEY_LEN + 1];

	if (la >= CFG_KEY_LEN || lb >= CFG_KEY_LEN)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		size_t	*cur = d[i % 3], *prev = d[(i + 2) % 3], *pp = d[(i + 1) % 3];

		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			c = a[i - 1] == b[j - 1] ? 0 : 1;
			cur[j] = prev[j] + 1;
			if (cur[j - 1] + 1 < cur[j])
				cur[j] = cur[j - 1] + 1;
			if (prev[j - 1] + c < cur[j])
				cur[j] = prev[j - 1] + c;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && pp[j - 2] + 1 < cur[j])
				cur[j] = pp[j - 2] + 1;
		}
	}
	return d[la % 3][lb];
}

/* The known key word is most likely a typo of, or NULL when none is near. */
static const char *
key_near(const char *word, const char *const *keys, size_t nkeys)
{
	const char	*best = NULL;
	size_t		 i, dist, bestd = SIZE_MAX, limit;

	limit = strlen(word) <= 4 ? 1 : 2;
	for (i = 0; i < nkeys; i++)
		if ((dist = key_distance(word, keys[i])) < bestd) {
			bestd = dist;
			best = keys[i];
		}
	return bestd <= limit ? best : NULL;
}

/*
 * Spreads a mapping over vals[], indexed like keys[].  Duplicate, unknown and
 * non-scalar keys fail here.  A null value (a section written as "key:")
 * counts as an empty mapping.
 */
static int
take_keys(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    const char *const *keys, size_t nkeys, yaml_node_t **vals)
{
	yaml_node_pair_t	*p;
	yaml_node_t		*kn;
	const yaml_node_t	*first[CFG_MAX_KEYS];
	char			 path[CFG_KEY_LEN], list[CFG_MSG_LEN];
	size_t			 i;
	int			 rc = 0;

	if (nkeys > CFG_MAX_KEYS)
		fatalx("%s: %zu keys, over CFG_MAX_KEYS", __func__, nkeys);
	memset(vals, 0, nkeys * sizeof(*vals));
	memset(first, 0, sizeof(first));
	if (is_null(map))
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail_type(cx, map, prefix && *prefix ? prefix : "config",
		    "a mapping");
	/* Every bad key of the mapping is told, not only the first. */
	for (p = map->data.mapping.pairs.start;
	    p < map->data.mapping.pairs.top; p++) {
		kn = node_at(cx, p->key);
		if (kn->type != YAML_SCALAR_NODE) {
			key_join(path, prefix, "?");
			rc = fail_at(cx, kn, path,
			    "a key must be a plain word, not %s", kind_of(kn));
			continue;
		}
		key_join(path, prefix, scalar(kn));
		for (i = 0; i < nkeys; i++)
			if (strcmp(keys[i], scalar(kn)) == 0)
				break;
		if (i == nkeys) {
			const char	*near = key_near(scalar(kn), keys, nkeys);

			join_names(keys, nkeys, ", ", list, sizeof(list));
			if (near != NULL)
				rc = fail_at(cx, kn, path, "unknown key, did you "
				    "mean %s?", near);
			else
				rc = fail_at(cx, kn, path,
				    "unknown key (expected %s)", list);
			continue;
		}
		if (first[i] != NULL) {
			rc = fail_at(cx, kn, path,
			    "duplicate key (first at line %zu)",
			    first[i]->start_mark.line + 1);
			continue;
		}
		first[i] = kn;
		vals[i] = node_at(cx, p->value);
		mark_add(cx, path, vals[i]);
	}
	return rc;
}

static int
fail_missing(struct cfg_ctx *cx, const yaml_node_t *map, const char *prefix,
    const char *key)
{
	char	path[CFG_KEY_LEN];

	key_join(path, prefix, key);
	return fail_at(cx, map, path, "required key is missing");
}

/* Items of a list; a null means an empty list. */
static int
take_list(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    yaml_node_item_t **items, size_t *count)
{
	yaml_node_item_t	*it;
	char			 path[CFG_KEY_LEN];

	*items = NULL;
	*count = 0;
	if (is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return fail_type(cx, n, key, "a list");
	*items = n->data.sequence.items.start;
	*count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	for (it = *items; it < n->data.sequence.items.top; it++) {
		key_index(path, key, (size_t)(it - *items));
		mark_add(cx, path, node_at(cx, *it));
	}
	return 0;
}

/* ---- plain values ------------------------------------------------------ */

/* Strict decimal: optional '-', digits, nothing else. */
static int
parse_int(const char *s, int64_t *v)
{
	uint64_t	x, lim = INT64_MAX;
	int		neg = 0;

	if (*s == '-') {
		neg = 1;
		s++;
		lim = (uint64_t)INT64_MAX + 1;
	}
	if (dec_u64(s, s + strlen(s), lim, &x) == -1)
		return -1;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}

static int
get_str(struct cfg_ctx *cx, yaml_node_t *n, const char *key, int required,
    char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail_type(cx, n, key, "a string");
	if (required && (is_null(n) || *scalar(n) == '\0'))
		return fail_at(cx, n, key, "must not be empty");
	free(*out);
	*out = xstrdup(is_null(n) ? "" : scalar(n));
	return 0;
}

static int
get_int(struct cfg_ctx *cx, yaml_node_t *n, const char *key, int64_t lo,
    int64_t hi, int64_t *out)
{
	char	b[QUOTE_LEN];
	int64_t	v;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "an integer");
	if (parse_int(scalar(n), &v) == -1)
		return fail_at(cx, n, key, "expected an integer, got %s",
		    quote_value(scalar(n), b, sizeof(b)));
	if (v < lo || v > hi)
		return fail_at(cx, n, key, "%lld is out of range (%lld..%lld)",
		    (long long)v, (long long)lo, (long long)hi);
	*out = v;
	return 0;
}

static int
get_int32(struct cfg_ctx *cx, yaml_node_t *n, const char *key, int lo,
    int hi, int *out)
{
	int64_t	v;

	if (get_int(cx, n, key, lo, hi, &v) == -1)
		return -1;
	*out = (int)v;
	return 0;
}

static int
get_bool(struct cfg_ctx *cx, yaml_node_t *n, const char *key, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };
	size_t	i;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "true or false");
	for (i = 0; i < nitems(yes); i++) {
		if (strcasecmp(scalar(n), yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(scalar(n), no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return fail_type(cx, n, key, "true or false");
}

static int
get_enum(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    const char *const *names, size_t count, int *out)
{
	char	list[CFG_MSG_LEN];
	size_t	i;

	if (n->type == YAML_SCALAR_NODE)
		for (i = 0; i < count; i++)
			if (strcmp(scalar(n), names[i]) == 0) {
				*out = (int)i;
				return 0;
			}
	join_names(names, count, " or ", list, sizeof(list));
	return fail_type(cx, n, key, list);
}

/* ---- durations, shares, byte counts (grammars in common/units.h) ------ */

/* Wraps a standalone parser's message in "file:line:col: key: ". */
static int
fail_parser(struct cfg_ctx *cx, const yaml_node_t *n, const char *key,
    const char *why)
{
	return fail_at(cx, n, key, "%s", why);
}

static int
get_duration(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    int64_t min_ms, int64_t *out)
{
	char	why[ERR_LEN];
	int64_t	v;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "a duration (e.g. 5s)");
	if (parse_duration_ms(scalar(n), &v, why) == -1)
		return fail_parser(cx, n, key, why);
	if (v < min_ms)
		return fail_at(cx, n, key, "must be at least %lldms",
		    (long long)min_ms);
	*out = v;
	return 0;
}

static int
get_share(struct cfg_ctx *cx, yaml_node_t *n, const char *key, double *out)
{
	char	why[ERR_LEN];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "a share (e.g. 0.15 or 15%)");
	if (parse_share(scalar(n), out, why) == -1)
		return fail_parser(cx, n, key, why);
	return 0;
}

static int
get_bytes(struct cfg_ctx *cx, yaml_node_t *n, const char *key, int64_t *out)
{
	char	why[ERR_LEN];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "a byte count (e.g. 512K)");
	if (parse_bytes(scalar(n), out, why) == -1)
		return fail_parser(cx, n, key, why);
	return 0;
}

/* "A..B" or one duration, B at most limit_ms. */
static int
get_duration_range(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    int64_t limit_ms, int64_t *lo, int64_t *hi)
{
	char	why[ERR_LEN];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "a duration or a range (e.g. 0ms..40ms)");
	if (parse_duration_range(scalar(n), limit_ms, lo, hi, why) == -1)
		return fail_parser(cx, n, key, why);
	return 0;
}

/* ---- paths and commands ------------------------------------------------ */

/*
 * Lexical clean-up of an absolute path ("/a/./b/../c" -> "/a/c").  We do not
 * call realpath on files: they may not exist yet on this machine, and a
 * symlinked program must keep the name the user gave it.
 */
static char *
path_clean(const char *path)
{
	char	*out, *copy, *tok, *save = NULL;
	size_t	 o = 0, len = strlen(path);

	out = xcalloc(1, len + 2);
	copy = xstrdup(path);
	for (tok = strtok_r(copy, "/", &save); tok != NULL;
	    tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;		/* the slash before it */
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, tok, strlen(tok));
		o += strlen(tok);
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	free(copy);
	return out;
}

/*
 * The absolute folder of the config file.  realpath when the folder exists
 * (so "soak.yaml" and "./x/../soak.yaml" agree), else a lexical absolute
 * path: a worker given the text may not have the folder at all.
 */
static char *
config_dir(const char *path, char *err)
{
	char		*dir = NULL, *abs = NULL, *real, cwd[PATH_MAX];
	const char	*slash = strrchr(path, '/');

	if (slash == NULL)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xasprintf("%.*s", (int)(slash - path), path);
	if ((real = realpath(dir, NULL)) != NULL) {
		free(dir);
		return real;
	}
	if (dir[0] == '/')
		abs = path_clean(dir);
	else if (getcwd(cwd, sizeof(cwd)) != NULL) {
		char	*joined = path_join(cwd, dir);

		abs = path_clean(joined);
		free(joined);
	} else
		errf(err, "%s: cannot find the current folder: %s", path,
		    strerror(errno));
	free(dir);
	return abs;
}

static char *
resolve(struct cfg_ctx *cx, const char *rel)
{
	char	*joined = path_join(cx->dir, rel), *clean;

	clean = path_clean(joined);
	free(joined);
	return clean;
}

/* Lists a command in cfg->commands (at most one per key: keys are unique). */
static void
cmd_add(struct cfg_ctx *cx, const char *key, char **argv, bool one_string)
{
	struct cfg		*cfg = cx->cfg;
	struct cfg_command	*c;

	cfg->commands = xreallocarray(cfg->commands, cfg->ncommands + 1,
	    sizeof(*cfg->commands));
	c = &cfg->commands[cfg->ncommands++];
	c->key = xstrdup(key);
	c->argv = argv;
	c->one_string = one_string;
}

/*
 * A command is a list of strings (argv) or one string, which is one program
 * name: we never split on spaces, so no quoting rules to get wrong.
 */
static int
get_command(struct cfg_ctx *cx, yaml_node_t *n, const char *key, char ***out)
{
	const char	*what = "a command (a list of strings, or one program)";
	char		**argv = NULL, path[CFG_KEY_LEN];
	yaml_node_item_t *items;
	yaml_node_t	*it;
	size_t		 i, count;

	if (n->type == YAML_SCALAR_NODE && !is_null(n)) {
		argv = xcalloc(2, sizeof(*argv));
		argv[0] = xstrdup(scalar(n));
	} else if (n->type == YAML_SEQUENCE_NODE) {
		items = n->data.sequence.items.start;
		count = (size_t)(n->data.sequence.items.top - items);
		if (count == 0)
			return fail_at(cx, n, key, "the command is empty");
		argv = xcalloc(count + 1, sizeof(*argv));
		for (i = 0; i < count; i++) {
			it = node_at(cx, items[i]);
			if (it->type != YAML_SCALAR_NODE) {
				strv_free(argv);
				key_index(path, key, i);
				return fail_type(cx, it, path, "a string");
			}
			argv[i] = xstrdup(is_null(it) ? "" : scalar(it));
		}
	} else
		return fail_type(cx, n, key, what);
	if (argv[0][0] == '\0') {
		strv_free(argv);
		return fail_at(cx, n, key, "the program name is empty");
	}
	if (strchr(argv[0], '/') != NULL) {
		char	*abs = resolve(cx, argv[0]);

		free(argv[0]);
		argv[0] = abs;
	}
	strv_free(*out);
	*out = argv;
	cmd_add(cx, key, argv, n->type == YAML_SCALAR_NODE);
	return 0;
}

/* Proxy and service names become env names: SOAK_PROXY_<NAME>. */
static int
get_name(struct cfg_ctx *cx, yaml_node_t *n, const char *key, char **out)
{
	char		 b[QUOTE_LEN];
	const char	*p;

	if (get_str(cx, n, key, 1, out) == -1)
		return -1;
	for (p = *out; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '_'))
			return fail_at(cx, n, key,
			    "%s may only hold letters, digits and _ "
			    "(it becomes part of an environment variable)",
			    quote_value(*out, b, sizeof(b)));
	return 0;
}

/* ---- sections ---------------------------------------------------------- */

static int
parse_database(struct cfg_ctx *cx, yaml_node_t *map)
{
	static const char *const keys[] = { "url", "schema", "reset", "proxy" };
	static const char *const resets[] = { "recreate", "truncate" };
	struct cfg	*cfg = cx->cfg;
	yaml_node_t	*v[nitems(keys)];
	char		 b[QUOTE_LEN];
	struct stat	 st;
	int		 reset = 0, rc;

	rc = take_keys(cx, map, "database", keys, nitems(keys), v);
	if (v[0] && get_str(cx, v[0], "database.url", 0, &cfg->db_url) == -1)
		rc = -1;
	if (v[1] && get_str(cx, v[1], "database.schema", 1,
	    &cfg->db_schema) == 0) {
		quote_value(cfg->db_schema, b, sizeof(b));
		free(cfg->db_schema);
		cfg->db_schema = resolve(cx, scalar(v[1]));
		if (stat(cfg->db_schema, &st) == -1)
			rc = fail_at(cx, v[1], "database.schema",
			    "%s: %s (looked at %s)", b, strerror(errno),
			    cfg->db_schema);
		else if (!S_ISREG(st.st_mode))
			rc = fail_at(cx, v[1], "database.schema",
			    "%s is not a regular file", b);
	} else if (v[1])
		rc = -1;
	if (v[2]) {
		if (get_enum(cx, v[2], "database.reset", resets, nitems(resets),
		    &reset) == -1)
			rc = -1;
		else
			cfg->db_reset = reset == 0 ? CFG_RESET_RECREATE :
			    CFG_RESET_TRUNCATE;
	}
	/* It names a proxy: resolved once the proxies are known. */
	if (v[3] && !is_null(v[3])) {
		if (v[3]->type != YAML_SCALAR_NODE)
			rc = fail_type(cx, v[3], "database.proxy",
			    "a proxy's name, or none");
		else
			cx->db_proxy = v[3];
	}
	return rc;
}

/*
 * A list of named items (services:, proxies:): each item parsed by item
 * into the array of size-byte elements, whatever the one before it said,
 * and a name already used by an earlier item refused (ignoring case: both
 * would be one SOAK_PROXY_<NAME upper>, one service:NAME).
 */
typedef int	(*cfg_item_fn)(struct cfg_ctx *, yaml_node_t *, const char *,
		    void *, size_t, yaml_node_t **);
typedef const char *(*cfg_name_fn)(const void *, size_t);

static int
parse_named_list(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    size_t size, void **arr, size_t *count, cfg_item_fn item, cfg_name_fn name)
{
	yaml_node_item_t	*items;
	yaml_node_t		*name_node = NULL;
	char			 prefix[CFG_KEY_LEN], path[CFG_KEY_LEN], b[QUOTE_LEN];
	size_t			 i, j, nitem;
	int			 rc = 0;

	if (take_list(cx, n, key, &items, &nitem) == -1)
		return -1;
	if (nitem == 0)
		return 0;
	*arr = xcalloc(nitem, size);
	for (i = 0; i < nitem; i++) {
		*count = i + 1;
		key_index(prefix, key, i);
		if (item(cx, node_at(cx, items[i]), prefix, *arr, i,
		    &name_node) == -1) {
			rc = -1;
			continue;
		}
		for (j = 0; j < i; j++)
			if (name(*arr, j) != NULL &&
			    strcasecmp(name(*arr, j), name(*arr, i)) == 0) {
				key_join(path, prefix, "name");
				rc = fail_at(cx, name_node, path,
				    "%s is already used by %s[%zu]",
				    quote_value(name(*arr, i), b, sizeof(b)), key, j);
				break;
			}
	}
	return rc;
}

static int
parse_service(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    struct cfg_service *svc, yaml_node_t **name_node)
{
	static const char *const keys[] = { "name", "command", "ready",
	    "ready_timeout", "listen", "seam" };
	static const char *const readies[] = { "tcp", "none" };
	static const char *const listens[] = { "port", "socket" };
	yaml_node_t	*v[nitems(keys)];
	char		 path[CFG_KEY_LEN];
	int		 ready = 0, listen = 0;

	svc->ready = CFG_READY_TCP;
	svc->ready_timeout_ms = 10 * 1000;
	svc->listen = CFG_LISTEN_PORT;
	svc->seam = true;
	if (map->type != YAML_MAPPING_NODE)
		return fail_type(cx, map, prefix, "a mapping");
	if (take_keys(cx, map, prefix, keys, nitems(keys), v) == -1)
		return -1;
	if (v[0] == NULL)
		return fail_missing(cx, map, prefix, "name");
	if (v[1] == NULL)
		return fail_missing(cx, map, prefix, "command");
	*name_node = v[0];
	key_join(path, prefix, "name");
	if (get_name(cx, v[0], path, &svc->name) == -1)
		return -1;
	key_join(path, prefix, "command");
	if (get_command(cx, v[1], path, &svc->command) == -1)
		return -1;
	key_join(path, prefix, "ready");
	if (v[2]) {
		if (get_enum(cx, v[2], path, readies, nitems(readies), &ready) == -1)
			return -1;
		svc->ready = ready == 0 ? CFG_READY_TCP : CFG_READY_NONE;
	}
	key_join(path, prefix, "ready_timeout");
	if (v[3] && get_duration(cx, v[3], path, 1, &svc->ready_timeout_ms) == -1)
		return -1;
	key_join(path, prefix, "listen");
	if (v[4]) {
		if (get_enum(cx, v[4], path, listens, nitems(listens),
		    &listen) == -1)
			return -1;
		svc->listen = listen == 0 ? CFG_LISTEN_PORT : CFG_LISTEN_SOCKET;
	}
	key_join(path, prefix, "seam");
	if (v[5] && get_bool(cx, v[5], path, &svc->seam) == -1)
		return -1;
	return 0;
}

static int
service_item(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    void *v, size_t i, yaml_node_t **name_node)
{
	return parse_service(cx, map, prefix, (struct cfg_service *)v + i,
	    name_node);
}

static const char *
service_name(const void *v, size_t i)
{
	return ((const struct cfg_service *)v)[i].name;
}

static int
parse_services(struct cfg_ctx *cx, yaml_node_t *n)
{
	return parse_named_list(cx, n, "services", sizeof(struct cfg_service),
	    (void **)&cx->cfg->services, &cx->cfg->nservices, service_item,
	    service_name);
}

static int
parse_upstream(struct cfg_ctx *cx, yaml_node_t *n, const char *key,
    struct cfg_proxy *px)
{
	struct cfg	*cfg = cx->cfg;
	const char	*s, *colon, *port;
	char		 b[QUOTE_LEN];
	int64_t		 portno;
	size_t		 i;

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "host:port, https://HOST, "
		    "unix:PATH, service:NAME, database or model:FILE");
	s = scalar(n);
	quote_value(s, b, sizeof(b));
	if (strncmp(s, "model:", 6) == 0) {
		struct stat	st;

		/* the script itself is read by soak check and the proxy */
		if (s[6] == '\0')
			return fail_at(cx, n, key, "%s names no model script", b);
		px->upstream_kind = CFG_UP_MODEL;
		px->upstream = resolve(cx, s + 6);
		if (stat(px->upstream, &st) == -1)
			return fail_at(cx, n, key, "%s: %s (looked at %s)", b,
			    strerror(errno), px->upstream);
		if (!S_ISREG(st.st_mode))
			return fail_at(cx, n, key, "%s is not a regular file", b);
		return 0;
	}
	if (strncmp(s, "https://", 8) == 0) {
		const char	*h = s + 8, *end = h + strlen(h);

		/* a model API's base: host and port, no path (docs/models.md) */
		if (end > h && end[-1] == '/')
			end--;
		if (memchr(h, '/', (size_t)(end - h)) != NULL || end == h)
			return fail_at(cx, n, key, "%s: an https upstream is "
			    "https://HOST or https://HOST:PORT, with no path (the "
			    "turns' SDKs send theirs)", b);
		colon = memrchr(h, ':', (size_t)(end - h));
		if (colon != NULL && colon > h && (colon[-1] == ']' || memchr(h, ':',
		    (size_t)(colon - h)) == NULL)) {
			if (dec_u64(colon + 1, end, 65535, (uint64_t *)&portno) ==
			    -1 || portno < 1)
				return fail_at(cx, n, key, "%s has no valid port "
				    "(1..65535)", b);
		} else {
			colon = end;
			portno = 443;
		}
		px->upstream_kind = CFG_UP_HOSTPORT;
		px->tls = true;
		px->tls_name = xasprintf("%.*s", (int)(colon - h), h);
		if (px->tls_name[0] == '[') {	/* [::1]: the address itself */
			memmove(px->tls_name, px->tls_name + 1, strlen(px->tls_name));
			px->tls_name[strcspn(px->tls_name, "]")] = '\0';
		}
		px->upstream = xasprintf("%.*s:%lld", (int)(colon - h), h,
		    (long long)portno);
		return 0;
	}
	if (strcmp(s, "database") == 0) {
		px->upstream_kind = CFG_UP_DATABASE;
		px->upstream = xstrdup(s);
		return 0;
	}
	if (strncmp(s, "unix:", 5) == 0) {
		if (s[5] == '\0')
			return fail_at(cx, n, key, "%s names no socket path", b);
		px->upstream_kind = CFG_UP_UNIX;
		px->upstream = resolve(cx, s + 5);
		return 0;
	}
	if (strncmp(s, "service:", 8) == 0) {
		for (i = 0; i < cfg->nservices; i++)
			if (cfg->services[i].name != NULL &&
			    strcmp(cfg->services[i].name, s + 8) == 0)
				break;
		/* A service that failed to load is not this one's fault. */
		if (i == cfg->nservices && cx->services_bad)
			return 0;
		if (i == cfg->nservices)
			return fail_at(cx, n, key,
			    "%s names no service declared under services", b);
		px->upstream_kind = CFG_UP_SERVICE;
		px->upstream = xstrdup(s + 8);
		return 0;
	}
	/* host:port; the last colon so "[::1]:5432" works. */
	if ((colon = strrchr(s, ':')) == NULL || colon == s)
		return fail_at(cx, n, key, "%s is not an upstream "
		    "(use host:port, https://HOST, unix:PATH, service:NAME, "
		    "database or model:FILE)", b);
	port = colon + 1;
	if (parse_int(port, &portno) == -1 || portno < 1 || portno > 65535)
		return fail_at(cx, n, key, "%s has no valid port (1..65535)", b);
	px->upstream_kind = CFG_UP_HOSTPORT;
	px->upstream = xstrdup(s);
	return 0;
}

/*
 * A fault's match: a POSIX extended regex, compiled here so a bad one is
 * reported at load with its place; the proxy compiles its own copy.
 */
static int
get_match(struct cfg_ctx *cx, yaml_node_t *n, const char *key, char **out)
{
	regex_t	re;
	char	why[ERR_LEN];
	int	rc;

	if (get_str(cx, n, key, 1, out) == -1)
		return -1;
	if ((rc = regcomp(&re, *out, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, &re, why, sizeof(why));
		regfree(&re);
		return fail_at(cx, n, key, "not a POSIX extended regex: %s", why);
	}
	regfree(&re);
	return 0;
}

/*
 * The parameters of the HTTP API faults (cfg_faults): statuses (a list
 * of error statuses), retry_after (a duration), cut_after and stall_after
 * (a count of events or a range of them), stall (a duration or a range).
 */
static int
parse_api_faults(struct cfg_ctx *cx, const char *prefix, struct cfg_faults *f,
    yaml_node_t *statuses, yaml_node_t *retry, yaml_node_t *cut,
    yaml_node_t *stall_after, yaml_node_t *stall)
{
	yaml_node_t	*counts[2] = { cut, stall_after };
	uint32_t	*lo_of[2] = { &f->cut_after_min, &f->stall_after_min };
	uint32_t	*hi_of[2] = { &f->cut_after_max, &f->stall_after_max };
	const char	*names[2] = { "cut_after", "stall_after" };
	yaml_node_item_t *items;
	char		 path[CFG_KEY_LEN], ipath[CFG_KEY_LEN], why[ERR_LEN];
	size_t		 count, i;
	int64_t		 lo, hi;
	int		 st;

	key_join(path, prefix, "statuses");
	if (statuses != NULL) {
		if (take_list(cx, statuses, path, &items, &count) == -1)
			return -1;
		if (count == 0 || count > CFG_STATUSES_MAX)
			return fail_at(cx, statuses, path, "a list of 1 to %d HTTP "
			    "error statuses (e.g. [429, 500, 529])",
			    CFG_STATUSES_MAX);
		for (i = 0; i < count; i++) {
			key_index(ipath, path, i);
			if (get_int32(cx, node_at(cx, items[i]), ipath, 400, 599,
			    &st) == -1)
				return -1;
			f->statuses[i] = st;
		}
		f->nstatuses = count;
	}
	key_join(path, prefix, "retry_after");
	if (retry != NULL && get_duration(cx, retry, path, 0,
	    &f->retry_after_ms) == -1)
		return -1;
	for (i = 0; i < 2; i++) {
		if (counts[i] == NULL)
			continue;
		key_join(path, prefix, names[i]);
		if (counts[i]->type != YAML_SCALAR_NODE || is_null(counts[i]))
			return fail_type(cx, counts[i], path, "a count of events "
			    "or a range of them (e.g. 2..6)");
		if (parse_count_range(scalar(counts[i]), 1, CFG_EVENTS_MAX, &lo,
		    &hi, why) == -1)
			return fail_parser(cx, counts[i], path, why);
		*lo_of[i] = (uint32_t)lo;
		*hi_of[i] = (uint32_t)hi;
	}
	key_join(path, prefix, "stall");
	if (stall != NULL && get_duration_range(cx, stall, path, INT64_MAX,
	    &f->stall_min_ms, &f->stall_max_ms) == -1)
		return -1;
	return 0;
}

static int
parse_faults(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    struct cfg_faults *f)
{
	enum { RATE, LOST, RESET, DUP, BLACKHOLE, STATUS, CUT, STALL, LATENCY,
	    HOLD, BW, BW_UP, BW_DOWN, SLICE, SLICE_UP, SLICE_DOWN, SLICE_DELAY,
	    CLOSE, CLOSE_UP, CLOSE_DOWN, MATCH, LATENCY_REAL, STATUSES,
	    RETRY_AFTER, CUT_AFTER, STALL_AFTER, STALL_FOR, NKEYS };
	/* a fault kind's share or bytes is keyed by its name (common/fault.h) */
	const char *const keys[NKEYS] = { "rate", fault_name(FAULT_LOST_REPLY),
	    fault_name(FAULT_RESET), fault_name(FAULT_DUPLICATE),
	    fault_name(FAULT_BLACKHOLE), fault_name(FAULT_STATUS),
	    fault_name(FAULT_STREAM_CUT), fault_name(FAULT_STREAM_STALL),
	    "latency", "hold", "bandwidth",
	    "bandwidth_up", "bandwidth_down", "slice", "slice_up", "slice_down",
	    "slice_delay", fault_name(FAULT_CLOSE_AFTER), "close_after_up",
	    "close_after_down", "match", "latency_real", "statuses",
	    "retry_after", "cut_after", "stall_after", "stall" };
	/* Generic key first, so _up/_down override it whatever the file order. */
	static const struct { int key, dir; } bytes[] = {
		{ BW, -1 }, { BW_UP, CFG_UP }, { BW_DOWN, CFG_DOWN },
		{ SLICE, -1 }, { SLICE_UP, CFG_UP }, { SLICE_DOWN, CFG_DOWN },
		{ CLOSE, -1 }, { CLOSE_UP, CFG_UP }, { CLOSE_DOWN, CFG_DOWN },
	};
	double		*shares[] = { &f->rate, &f->lost_reply, &f->reset,
			    &f->duplicate, &f->blackhole, &f->status,
			    &f->stream_cut, &f->stream_stall };
	yaml_node_t	*v[NKEYS];
	char		 path[CFG_KEY_LEN];
	int64_t		*field, n = 0;
	size_t		 i;
	double		 sum;

	if (take_keys(cx, map, prefix, keys, NKEYS, v) == -1)
		return -1;
	for (i = 0; i < nitems(shares); i++) {
		key_join(path, prefix, keys[i]);
		if (v[i] && get_share(cx, v[i], path, shares[i]) == -1)
			return -1;
	}
	sum = f->lost_reply + f->reset + f->duplicate + f->status +
	    f->stream_cut + f->stream_stall;
	if (sum > 1 + CFG_BAND_EPS)
		return fail_at(cx, map, prefix, "the bands lost_reply + reset + "
		    "duplicate + status + stream_cut + stream_stall add up to %g; "
		    "they are shares of rate and must add up to at most 1", sum);
	if (parse_api_faults(cx, prefix, f, v[STATUSES], v[RETRY_AFTER],
	    v[CUT_AFTER], v[STALL_AFTER], v[STALL_FOR]) == -1)
		return -1;
	key_join(path, prefix, "latency");
	if (v[LATENCY] && get_duration_range(cx, v[LATENCY], path,
	    FAULT_LATENCY_MAX_MS, &f->latency_min_ms, &f->latency_max_ms) == -1)
		return -1;
	key_join(path, prefix, "latency_real");
	if (v[LATENCY_REAL] && get_bool(cx, v[LATENCY_REAL], path,
	    &f->latency_real) == -1)
		return -1;
	key_join(path, prefix, "hold");
	if (v[HOLD] && get_duration(cx, v[HOLD], path, 0, &f->hold_ms) == -1)
		return -1;
	key_join(path, prefix, "slice_delay");
	if (v[SLICE_DELAY] && get_duration(cx, v[SLICE_DELAY], path, 0,
	    &f->slice_delay_ms) == -1)
		return -1;
	for (i = 0; i < nitems(bytes); i++) {
		if (v[bytes[i].key] == NULL)
			continue;
		key_join(path, prefix, keys[bytes[i].key]);
		if (get_bytes(cx, v[bytes[i].key], path, &n) == -1)
			return -1;
		field = bytes[i].key <= BW_DOWN ? f->bandwidth :
		    bytes[i].key <= SLICE_DOWN ? f->slice : f->close_after;
		if (bytes[i].dir == -1)
			field[CFG_UP] = field[CFG_DOWN] = n;
		else
			field[bytes[i].dir] = n;
	}
	key_join(path, prefix, "match");
	if (v[MATCH] && get_match(cx, v[MATCH], path, &f->match) == -1)
		return -1;
	return 0;
}

static int
parse_schedule(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    struct cfg_schedule *sc)
{
	static const char *const keys[] = { "mode", "depth", "steps",
	    "arrival", "blocked" };
	static const char *const modes[] = { "pct", "random" };
	yaml_node_t	*v[nitems(keys)];
	char		 path[CFG_KEY_LEN];
	int		 mode = 0, rc;

	sc->enabled = true;
	sc->mode = CFG_SCHED_PCT;
	sc->depth = 3;
	sc->steps = 200;
	sc->arrival_ms = 2000;
	sc->blocked_ms = 500;
	rc = take_keys(cx, map, prefix, keys, nitems(keys), v);
	key_join(path, prefix, "mode");
	if (v[0]) {
		if (get_enum(cx, v[0], path, modes, nitems(modes), &mode) == -1)
			rc = -1;
		else
			sc->mode = mode == 0 ? CFG_SCHED_PCT : CFG_SCHED_RANDOM;
	}
	key_join(path, prefix, "depth");
	if (v[1] && get_int32(cx, v[1], path, 1, 16, &sc->depth) == -1)
		rc = -1;
	key_join(path, prefix, "steps");
	if (v[2] && get_int32(cx, v[2], path, 1, 100000, &sc->steps) == -1)
		rc = -1;
	key_join(path, prefix, "arrival");
	if (v[3] && get_duration(cx, v[3], path, 0, &sc->arrival_ms) == -1)
		rc = -1;
	key_join(path, prefix, "blocked");
	if (v[4] && get_duration(cx, v[4], path, 1, &sc->blocked_ms) == -1)
		rc = -1;
	return rc;
}

/* A file a key names, resolved; it must be a regular file when must_exist. */
static int
get_file(struct cfg_ctx *cx, yaml_node_t *n, const char *key, bool must_exist,
    char **out)
{
	char		b[QUOTE_LEN];
	struct stat	st;

	if (get_str(cx, n, key, 1, out) == -1)
		return -1;
	quote_value(*out, b, sizeof(b));
	free(*out);
	*out = resolve(cx, scalar(n));
	if (!must_exist)
		return 0;
	if (stat(*out, &st) == -1)
		return fail_at(cx, n, key, "%s: %s (looked at %s)", b,
		    strerror(errno), *out);
	if (!S_ISREG(st.st_mode))
		return fail_at(cx, n, key, "%s is not a regular file", b);
	return 0;
}

/*
 * record, replay, tls_ca, api_key_env (docs/models.md): a model API's
 * exchanges written to a cassette, or answered from one.  The key goes
 * only over TLS; replay needs its cassette, record makes one; the two
 * exclude each other and the stand-in.  v: the four values, in that order.
 */
static int
parse_model_api(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    struct cfg_proxy *px, yaml_node_t **v)
{
	char		 path[CFG_KEY_LEN];
	const char	*s;
	size_t		 i;

	key_join(path, prefix, "record");
	if (v[0] && get_file(cx, v[0], path, false, &px->record) == -1)
		return -1;
	key_join(path, prefix, "replay");
	if (v[1] && get_file(cx, v[1], path, true, &px->replay) == -1)
		return -1;
	if (v[0] && v[1])
		return fail_at(cx, v[1], path, "a proxy records or replays, not "
		    "both");
	key_join(path, prefix, v[0] ? "record" : "replay");
	if ((v[0] || v[1]) && px->upstream_kind == CFG_UP_MODEL)
		return fail_at(cx, v[0] ? v[0] : v[1], path, "the stand-in "
		    "(model:) answers by its script, nothing to record or "
		    "replay");
	if (v[0] || v[1]) {
		if (px->protocol != CFG_PROTO_AUTO && px->protocol !=
		    CFG_PROTO_HTTP) {
			key_join(path, prefix, "protocol");
			return fail_at(cx, map, path, "a proxy that records or "
			    "replays speaks http");
		}
		px->protocol = CFG_PROTO_HTTP;
	}
	key_join(path, prefix, "tls_ca");
	if (v[2]) {
		if (get_file(cx, v[2], path, true, &px->tls_ca) == -1)
			return -1;
		if (!px->tls)
			return fail_at(cx, v[2], path, "a CA for an upstream "
			    "without TLS (use upstream: https://HOST)");
	}
	key_join(path, prefix, "api_key_env");
	if (v[3]) {
		if (get_str(cx, v[3], path, 1, &px->api_key_env) == -1)
			return -1;
		s = px->api_key_env;
		for (i = 0; s[i]; i++)
			if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') ||
			    (s[i] >= 'a' && s[i] <= 'z') || (i > 0 && s[i] >= '0' &&
			    s[i] <= '9')))
				return fail_at(cx, v[3], path, "the name of an "
				    "environment variable ([A-Za-z_][A-Za-z0-9_]*), "
				    "not its value");
		/* the key goes to the upstream: never over plain text */
		if (!px->tls)
			return fail_at(cx, v[3], path, "a key goes to an https "
			    "upstream only (upstream: https://HOST)");
	}
	return 0;
}

static int
parse_proxy(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    struct cfg_proxy *px, yaml_node_t **name_node)
{
	enum { NAME, UPSTREAM, PROTOCOL, FAULTS, SCHEDULE, RECORD, REPLAY,
	    TLS_CA, KEY_ENV, NKEYS };
	static const char *const keys[NKEYS] = { "name", "upstream", "protocol",
	    "faults", "schedule", "record", "replay", "tls_ca", "api_key_env" };
	static const char *const protos[] = { "auto", "http", "tcp",
	    "postgres" };
	static const enum cfg_protocol proto_vals[] = { CFG_PROTO_AUTO,
	    CFG_PROTO_HTTP, CFG_PROTO_TCP, CFG_PROTO_POSTGRES };
	yaml_node_t	*v[NKEYS];
	char		 path[CFG_KEY_LEN];
	int		 proto = 0;

	px->protocol = CFG_PROTO_AUTO;
	CFG_FAULTS_DEFAULTS(&px->faults);
	if (map->type != YAML_MAPPING_NODE)
		return fail_type(cx, map, prefix, "a mapping");
	if (take_keys(cx, map, prefix, keys, nitems(keys), v) == -1)
		return -1;
	if (v[0] == NULL)
		return fail_missing(cx, map, prefix, "name");
	if (v[1] == NULL)
		return fail_missing(cx, map, prefix, "upstream");
	*name_node = v[0];
	key_join(path, prefix, "name");
	if (get_name(cx, v[0], path, &px->name) == -1)
		return -1;
	key_join(path, prefix, "upstream");
	if (parse_upstream(cx, v[1], path, px) == -1)
		return -1;
	key_join(path, prefix, "protocol");
	if (v[2]) {
		if (get_enum(cx, v[2], path, protos, nitems(protos), &proto) == -1)
			return -1;
		px->protocol = proto_vals[proto];
	}
	/* the model APIs are HTTP: a stand-in frames its exchanges so */
	if (px->upstream_kind == CFG_UP_MODEL) {
		if (px->protocol != CFG_PROTO_AUTO &&
		    px->protocol != CFG_PROTO_HTTP)
			return fail_at(cx, v[2], path, "a model upstream speaks "
			    "http, not %s", scalar(v[2]));
		px->protocol = CFG_PROTO_HTTP;
	}
	key_join(path, prefix, "faults");
	if (v[3] && parse_faults(cx, v[3], path, &px->faults) == -1)
		return -1;
	if ((px->protocol == CFG_PROTO_TCP || px->protocol == CFG_PROTO_POSTGRES) &&
	    px->faults.status + px->faults.stream_cut + px->faults.stream_stall > 0)
		return fail_at(cx, v[3], path, "status, stream_cut and "
		    "stream_stall fault HTTP exchanges, and this proxy's protocol "
		    "is %s", px->protocol == CFG_PROTO_TCP ? "tcp" : "postgres");
	key_join(path, prefix, "schedule");
	if (v[4] && parse_schedule(cx, v[4], path, &px->schedule) == -1)
		return -1;
	return parse_model_api(cx, map, prefix, px, v + RECORD);
}

static int
proxy_item(struct cfg_ctx *cx, yaml_node_t *map, const char *prefix,
    void *v, size_t i, yaml_node_t **name_node)
{
	return parse_proxy(cx, map, prefix, (struct cfg_proxy *)v + i, name_node);
}

static const char *
proxy_name(const void *v, size_t i)
{
	return ((const struct cfg_proxy *)v)[i].name;
}

static int
parse_proxies(struct cfg_ctx *cx, yaml_node_t *n)
{
	return parse_named_list(cx, n, "proxies", sizeof(struct cfg_proxy),
	    (void **)&cx->cfg->proxies, &cx->cfg->nproxies, proxy_item,
	    proxy_name);
}

/*
 * Which proxy the turns' database defaults go through (cfg->db_proxy):
 * the one database.proxy names, none, or by default the first proxy in
 * front of the database.  A name that is not such a proxy is refused with
 * the ones that are.  Skipped when a proxy failed to load: its name may be
 * the one meant.
 */
static int
resolve_db_proxy(struct cfg_ctx *cx, bool proxies_bad)
{
	struct cfg	*cfg = cx->cfg;
	yaml_node_t	*n = cx->db_proxy;
	const char	*key = "database.proxy", *want, *names[CFG_MAX_KEYS];
	char		 b[QUOTE_LEN], list[CFG_MSG_LEN];
	size_t		 i, ndb = 0;
	int		 none_named = -1;

	cfg->db_proxy = -1;
	cfg->model_proxy = -1;
	for (i = 0; i < cfg->nproxies; i++) {
		const struct cfg_proxy	*p = &cfg->proxies[i];

		if (p->name != NULL && cfg->model_proxy == -1 &&
		    (p->upstream_kind == CFG_UP_MODEL || p->record != NULL ||
		    p->replay != NULL))
			cfg->model_proxy = (int)i;
		if (p->name == NULL || p->upstream_kind != CFG_UP_DATABASE)
			continue;
		if (cfg->db_proxy == -1)
			cfg->db_proxy = (int)i;
		if (ndb < nitems(names))
			names[ndb] = p->name;
		ndb++;
		if (strcasecmp(p->name, "none") == 0)
			none_named = (int)i;
	}
	if (n == NULL)
		return 0;
	cfg->db_proxy_named = true;
	want = scalar(n);
	quote_value(want, b, sizeof(b));
	if (strcmp(want, "none") == 0) {
		cfg->db_proxy = -1;
		if (none_named >= 0)
			return fail_at(cx, n, key, "\"none\" means the database "
			    "itself, but proxies[%d] is named %s too: rename that "
			    "proxy", none_named, cfg->proxies[none_named].name);
		return 0;
	}
	if (*want == '\0')
		return fail_at(cx, n, key, "must not be empty (a proxy's name, "
		    "or none)");
	if (proxies_bad)
		return 0;
	if (ndb > nitems(names))
		ndb = nitems(names);
	join_names(names, ndb, " or ", list, sizeof(list));
	for (i = 0; i < cfg->nproxies; i++) {
		const struct cfg_proxy	*p = &cfg->proxies[i];

		if (p->name == NULL || strcmp(p->name, want) != 0)
			continue;
		if (p->upstream_kind == CFG_UP_DATABASE) {
			cfg->db_proxy = (int)i;
			return 0;
		}
		return fail_at(cx, n, key, "%s is proxies[%zu], in front of %s%s, "
		    "not of the database: use %s%snone for the database itself",
		    b, i, p->upstream_kind == CFG_UP_SERVICE ? "service:" : "",
		    p->upstream, list, ndb ? ", or " : "");
	}
	if (ndb == 0)
		return fail_at(cx, n, key, "%s names no proxy, and no proxy has "
		    "upstream: database: add one, or leave the key out", b);
	return fail_at(cx, n, key, "%s names no proxy in front of the database: "
	    "use %s, or none for the database itself", b, list);
}

static int
parse_turn(struct cfg_ctx *cx, yaml_node_t *map)
{
	static const char *const keys[] = { "command", "timeout" };
	yaml_node_t	*v[nitems(keys)];
	int		 rc;

	rc = take_keys(cx, map, "turn", keys, nitems(keys), v);
	if (v[0] == NULL && (map->type == YAML_MAPPING_NODE || is_null(map)))
		rc = fail_missing(cx, map, "turn", "command");
	if (v[0] && get_command(cx, v[0], "turn.command",
	    &cx->cfg->turn_command) == -1)
		rc = -1;
	if (v[1] && get_duration(cx, v[1], "turn.timeout", 1,
	    &cx->cfg->turn_timeout_ms) == -1)
		rc = -1;
	return rc;
}

/* invariants[i]; the names before it are all set or NULL (failed). */
static int
parse_invariant(struct cfg_ctx *cx, yaml_node_t *item, size_t i)
{
	static const char *const keys[] = { "name", "sql", "when" };
	static const char *const whens[] = { "rounds", "steps" };
	struct cfg		*cfg = cx->cfg;
	struct cfg_invariant	*inv = &cfg->invariants[i];
	int			 when = 0;
	yaml_node_t		*v[nitems(keys)];
	char			 prefix[CFG_KEY_LEN], path[CFG_KEY_LEN], b[QUOTE_LEN];
	const char		*p;
	size_t			 j;
	int			 rc;

	key_index(prefix, "invariants", i);
	inv->line = (int)item->start_mark.line + 1;
	if (item->type != YAML_MAPPING_NODE)
		return fail_type(cx, item, prefix, "a mapping");
	rc = take_keys(cx, item, prefix, keys, nitems(keys), v);
	if (v[0] == NULL)
		rc = fail_missing(cx, item, prefix, "name");
	if (v[1] == NULL)
		rc = fail_missing(cx, item, prefix, "sql");
	key_join(path, prefix, "name");
	if (v[0] && get_str(cx, v[0], path, 1, &inv->name) == -1)
		rc = -1;
	for (j = 0; inv->name != NULL && j < i; j++)
		if (cfg->invariants[j].name != NULL &&
		    strcmp(cfg->invariants[j].name, inv->name) == 0) {
			rc = fail_at(cx, v[0], path,
			    "%s is already used by invariants[%zu]",
			    quote_value(inv->name, b, sizeof(b)), j);
			break;
		}
	key_join(path, prefix, "when");
	if (v[2] && get_enum(cx, v[2], path, whens, nitems(whens), &when) == -1)
		rc = -1;
	inv->steps = when == 1;
	key_join(path, prefix, "sql");
	if (v[1] == NULL)
		return rc;
	if (get_str(cx, v[1], path, 0, &inv->sql) == -1)
		return -1;
	for (p = inv->sql; *p == ' ' || (*p >= '\t' && *p <= '\r'); p++)
		;
	if (*p == '\0')
		return fail_at(cx, v[1], path, "must not be empty");
	return rc;
}

static int
parse_invariants(struct cfg_ctx *cx, yaml_node_t *top, yaml_node_t *n)
{
	struct cfg		*cfg = cx->cfg;
	yaml_node_item_t	*items;
	size_t			 i, count;
	int			 rc = 0;

	if (take_list(cx, n, "invariants", &items, &count) == -1)
		return -1;
	if (count == 0)
		return fail_at(cx, is_null(n) ? top : n, "invariants",
		    "at least one invariant is required (a check that checks "
		    "nothing always passes)");
	cfg->invariants = xcalloc(count, sizeof(*cfg->invariants));
	for (i = 0; i < count; i++) {
		cfg->ninvariants = i + 1;
		if (parse_invariant(cx, node_at(cx, items[i]), i) == -1)
			rc = -1;
	}
	return rc;
}

static int
parse_guard(struct cfg_ctx *cx, yaml_node_t *map)
{
	static const char *const keys[] = { "min_ok_turns" };
	struct cfg	*cfg = cx->cfg;
	yaml_node_t	*v[nitems(keys)], *n;
	const char	*key = "guard.min_ok_turns", *s;
	char		 b[QUOTE_LEN], *num = NULL;
	int64_t		 total = (int64_t)cfg->turns * cfg->rounds;
	size_t		 len;
	int		 rc = -1;

	if (take_keys(cx, map, "guard", keys, nitems(keys), v) == -1)
		return -1;
	if ((n = v[0]) == NULL)
		return 0;
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail_type(cx, n, key, "a count or a percentage (e.g. 50%)");
	s = scalar(n);
	len = strlen(s);
	if (len > 0 && s[len - 1] == '%') {
		num = xasprintf("%.*s", (int)(len - 1), s);
		if (parse_int(num, &cfg->guard_min_ok) == -1) {
			fail_at(cx, n, key, "%s is not a whole percentage "
			    "(e.g. 50%%)", quote_value(s, b, sizeof(b)));
			goto out;
		}
		if (cfg->guard_min_ok < 0 || cfg->guard_min_ok > 100) {
			fail_at(cx, n, key, "%s is out of range (0%%..100%%)",
			    quote_value(s, b, sizeof(b)));
			goto out;
		}
		cfg->guard_percent = true;
		cfg->guard_set = true;
	} else {
		if (get_int(cx, n, key, 0, INT64_MAX, &cfg->guard_min_ok) == -1)
			goto out;
		if (cfg->guard_min_ok > total) {
			fail_at(cx, n, key, "%lld is more than the %lld turns of "
			    "a seed (turns x rounds)", (long long)cfg->guard_min_ok,
			    (long long)total);
			goto out;
		}
		cfg->guard_set = true;
	}
	rc = 0;
out:
	free(num);
	return rc;
}

static int
parse_labels(struct cfg_ctx *cx, yaml_node_t *n, char ***out)
{
	yaml_node_item_t	*items;
	yaml_node_t		*it;
	char			 path[CFG_KEY_LEN];
	size_t			 i, count;

	if (take_list(cx, n, "tickets.labels", &items, &count) == -1)
		return -1;
	*out = xcalloc(count + 1, sizeof(**out));
	for (i = 0; i < count; i++) {
		it = node_at(cx, items[i]);
		key_index(path, "tickets.labels", i);
		if (get_str(cx, it, path, 1, &(*out)[i]) == -1)
			return -1;
	}
	return 0;
}

static int
parse_tickets(struct cfg_ctx *cx, yaml_node_t *map)
{
	enum { SINK, URL, REPO, PROJECT, TOKEN_ENV, USER_ENV, ISSUE_TYPE,
	    LABELS, INFRA, INSECURE_HTTP, MINIMIZE, MINIMIZE_BUDGET, NKEYS };
	static const char *const keys[NKEYS] = { "sink", "url", "repo",
	    "project", "token_env", "user_env", "issue_type", "labels",
	    "infra", "insecure_http", "minimize", "minimize_budget" };
	static const char *const sinks[] = { "file", "github", "gitlab",
	    "jira", "webhook" };
	/* What each sink cannot work without; checked here, not at filing time. */
	static const struct { const char *sink; int key; } needs[] = {
		{ "github", REPO }, { "gitlab", PROJECT }, { "jira", URL },
		{ "jira", PROJECT }, { "webhook", URL },
	};
	struct cfg_tickets *t = &cx->cfg->tickets;
	char		**strs[NKEYS] = { NULL, &t->url, &t->repo, &t->project,
			    &t->token_env, &t->user_env, &t->issue_type };
	yaml_node_t	*v[NKEYS];
	char		 path[CFG_KEY_LEN];
	size_t		 i;
	int		 sink = 0, rc;

	t->enabled = true;
	rc = take_keys(cx, map, "tickets", keys, NKEYS, v);
	if (v[SINK]) {
		if (get_enum(cx, v[SINK], "tickets.sink", sinks, nitems(sinks),
		    &sink) == -1)
			return -1;	/* what else is needed rests on the sink */
		free(t->sink);
		t->sink = xstrdup(sinks[sink]);
	}
	for (i = URL; i <= ISSUE_TYPE; i++) {
		key_join(path, "tickets", keys[i]);
		if (v[i] && get_str(cx, v[i], path, 1, strs[i]) == -1)
			rc = -1;
	}
	if (v[LABELS] && parse_labels(cx, v[LABELS], &t->labels) == -1)
		rc = -1;
	if (v[INFRA] && get_bool(cx, v[INFRA], "tickets.infra", &t->infra) == -1)
		rc = -1;
	if (v[INSECURE_HTTP] && get_bool(cx, v[INSECURE_HTTP],
	    "tickets.insecure_http", &t->insecure_http) == -1)
		rc = -1;
	if (v[MINIMIZE] && get_bool(cx, v[MINIMIZE], "tickets.minimize",
	    &t->minimize) == -1)
		rc = -1;
	if (v[MINIMIZE_BUDGET] && get_duration(cx, v[MINIMIZE_BUDGET],
	    "tickets.minimize_budget", 1000, &t->minimize_budget_ms) == -1)
		rc = -1;
	if (rc == -1)
		return -1;
	for (i = 0; i < nitems(needs); i++)
		if (strcmp(t->sink, needs[i].sink) == 0 && v[needs[i].key] == NULL) {
			key_join(path, "tickets", keys[needs[i].key]);
			return fail_at(cx, map, path,
			    "required key is missing (sink %s needs it)", t->sink);
		}
	/*
	 * A token must not cross the network in clear text.  The default
	 * urls (github, gitlab) are https; a url without a scheme is http to
	 * libcurl.  The http layer refuses too (tickets_http.c).
	 */
	if (strcmp(t->sink, "file") != 0 && t->token_env != NULL &&
	    t->url != NULL && strncasecmp(t->url, "https://", 8) != 0 &&
	    !t->insecure_http)
		return fail_at(cx, v[URL], "tickets.url", "not https://: the %s "
		    "token (%s) would travel in clear text; use https://, or set "
		    "tickets.insecure_http: true", t->sink, t->token_env);
	return 0;
}

/* The section just read told a message since before: it is broken. */
static void
broke(struct cfg_ctx *cx, size_t before, unsigned section)
{
	if (cx->nerr != before)
		cx->cfg->broken |= section;
}

static int
parse_top(struct cfg_ctx *cx, yaml_node_t *top)
{
	enum { NAME, SEEDS, TURNS, ROUNDS, SEED_TIMEOUT, RETRIES, CONFIRM,
	    DATABASE, SERVICES, PROXIES, SETUP, SETUP_TIMEOUT, TURN, INVARIANTS,
	    INVARIANT_TIMEOUT, GUARD, TICKETS, REGRESSIONS, REGRESSIONS_EXPLORE_BUDGET,
	    NKEYS };
	/* Order matters: services before proxies, turns/rounds before guard. */
	static const char *const keys[NKEYS] = { "name", "seeds", "turns",
	    "rounds", "seed_timeout", "retries", "confirm", "database", "services",
	    "proxies", "setup", "setup_timeout", "turn", "invariants",
	    "invariant_timeout", "guard", "tickets", "regressions",
	    "regressions_explore_budget" };
	struct cfg	*cfg = cx->cfg;
	yaml_node_t	*v[NKEYS];
	char		 why[ERR_LEN];
	size_t		 before;
	int		 rc = 0, counts_ok = 1;

	if (top->type != YAML_MAPPING_NODE)
		return fail_at(cx, top, "config", "expected a mapping of keys "
		    "(name, turn, invariants, ...), got %s", kind_of(top));
	/*
	 * Every section is looked at even after one failed, so one run of
	 * soak check tells every mistake; a section is skipped only where its
	 * checks rest on one that failed (the guard on turns and rounds; a
	 * proxy's service:NAME on the services, parse_upstream).
	 */
	if (take_keys(cx, top, "", keys, NKEYS, v) == -1)
		rc = -1;
	if (v[NAME] == NULL)
		rc = fail_missing(cx, top, "", "name");
	if (v[TURN] == NULL) {
		rc = fail_missing(cx, top, "", "turn");
		cfg->broken |= CFG_BROKEN_TURN;
	}
	if (v[INVARIANTS] == NULL) {
		rc = fail_missing(cx, top, "", "invariants");
		cfg->broken |= CFG_BROKEN_INVARIANTS;
	}

	if (v[NAME] && get_str(cx, v[NAME], "name", 1, &cfg->name) == -1)
		rc = -1;
	if (v[SEEDS]) {
		if (v[SEEDS]->type != YAML_SCALAR_NODE || is_null(v[SEEDS]))
			rc = fail_type(cx, v[SEEDS], "seeds",
			    "a seed range (A..B or a count N)");
		else if (seed_range_parse(scalar(v[SEEDS]), &cfg->seeds, why) == -1)
			rc = fail_parser(cx, v[SEEDS], "seeds", why);
	}
	if (v[TURNS] && get_int32(cx, v[TURNS], "turns", 1, 1024,
	    &cfg->turns) == -1)
		rc = counts_ok = -1;
	if (v[ROUNDS] && get_int32(cx, v[ROUNDS], "rounds", 1, 10000,
	    &cfg->rounds) == -1)
		rc = counts_ok = -1;
	if (v[SEED_TIMEOUT] && get_duration(cx, v[SEED_TIMEOUT], "seed_timeout",
	    1, &cfg->seed_timeout_ms) == -1)
		rc = -1;
	if (v[RETRIES] && get_int32(cx, v[RETRIES], "retries", 0, 10,
	    &cfg->retries) == -1)
		rc = -1;
	if (v[CONFIRM] && get_bool(cx, v[CONFIRM], "confirm", &cfg->confirm) == -1)
		rc = -1;
	before = cx->nerr;
	if (v[DATABASE] && parse_database(cx, v[DATABASE]) == -1)
		rc = -1;
	broke(cx, before, CFG_BROKEN_DATABASE);
	before = cx->nerr;
	if (v[SERVICES] && parse_services(cx, v[SERVICES]) == -1)
		rc = -1;
	cx->services_bad = cx->nerr != before;
	broke(cx, before, CFG_BROKEN_SERVICES);
	before = cx->nerr;
	if (v[PROXIES] && parse_proxies(cx, v[PROXIES]) == -1)
		rc = -1;
	broke(cx, before, CFG_BROKEN_PROXIES);
	if (resolve_db_proxy(cx, cx->nerr != before) == -1)
		rc = -1;
	before = cx->nerr;
	if (v[SETUP] && !is_null(v[SETUP]) &&
	    get_command(cx, v[SETUP], "setup", &cfg->setup) == -1)
		rc = -1;
	broke(cx, before, CFG_BROKEN_SETUP);
	if (v[SETUP_TIMEOUT] && get_duration(cx, v[SETUP_TIMEOUT],
	    "setup_timeout", 1, &cfg->setup_timeout_ms) == -1)
		rc = -1;
	before = cx->nerr;
	if (v[TURN] && parse_turn(cx, v[TURN]) == -1)
		rc = -1;
	broke(cx, before, CFG_BROKEN_TURN);
	before = cx->nerr;
	if (v[INVARIANTS] && parse_invariants(cx, top, v[INVARIANTS]) == -1)
		rc = -1;
	broke(cx, before, CFG_BROKEN_INVARIANTS);
	if (v[INVARIANT_TIMEOUT] && get_duration(cx, v[INVARIANT_TIMEOUT],
	    "invariant_timeout", 1, &cfg->invariant_timeout_ms) == -1)
		rc = -1;
	if (v[GUARD] && counts_ok == 1 && parse_guard(cx, v[GUARD]) == -1)
		rc = -1;
	if (v[TICKETS] && parse_tickets(cx, v[TICKETS]) == -1)
		rc = -1;
	/* A folder of pinned plans (common/regress.h): whether it is there is
	 * the run's to check, not the loader's (a worker's copy of the
	 * config need not hold it). */
	if (v[REGRESSIONS]) {
		char	*rel = NULL;

		if (get_str(cx, v[REGRESSIONS], "regressions", 1, &rel) == -1)
			rc = -1;
		else {
			cfg->regressions = resolve(cx, rel);
			cfg->regressions_set = true;
		}
		free(rel);
	}
	if (cfg->regressions == NULL)
		cfg->regressions = resolve(cx, "regressions");
	if (v[REGRESSIONS_EXPLORE_BUDGET] && get_int32(cx, v[REGRESSIONS_EXPLORE_BUDGET],
	    "regressions_explore_budget", 0, CFG_REGRESS_EXPLORE_MAX,
	    &cfg->regress_explore_budget) == -1)
		rc = -1;
	return rc;
}

static void
set_defaults(struct cfg *cfg)
{
	cfg->seeds.first = 0;
	cfg->seeds.last = 199;
	cfg->turns = 8;
	cfg->rounds = 1;
	cfg->seed_timeout_ms = 60 * 1000;
	cfg->retries = 2;
	cfg->confirm = true;
	cfg->regress_explore_budget = CFG_REGRESS_EXPLORE_BUDGET;
	cfg->db_reset = CFG_RESET_RECREATE;
	cfg->db_proxy = -1;
	cfg->model_proxy = -1;
	cfg->setup_timeout_ms = 30 * 1000;
	cfg->turn_timeout_ms = 30 * 1000;
	cfg->invariant_timeout_ms = 10 * 1000;
	cfg->tickets.sink = xstrdup("file");
	cfg->tickets.issue_type = xstrdup("Bug");
	cfg->tickets.minimize_budget_ms = CFG_MINIMIZE_BUDGET_MS;
}

/* The byte offset of 1-based (line, col) in text, col counted in characters. */
size_t
cfg_text_offset(const char *text, size_t len, int line, int col)
{
	size_t	o = 0;
	int	l = 1, c = 1;

	while (o < len && l < line)
		if (text[o++] == '\n')
			l++;
	while (o < len && c < col && text[o] != '\n') {
		o++;
		while (o < len && ((unsigned char)text[o] & 0xc0) == 0x80)
			o++;
		c++;
	}
	return o;
}

/*
 * libyaml says what its scanner met ("found character that cannot start
 * any token"); a user wants to hear what they did (a tab in the
 * indentation).  The usual mistakes, in words, each at the mark that shows
 * it: a quote or bracket never closed at its opening, not at the end of
 * the file.  Anything else as libyaml says it.
 */
static const char *
yaml_explain(const yaml_parser_t *p, const char *text, size_t len,
    size_t *line, size_t *col, char *buf, size_t size)
{
	const char	*problem = p->problem ? p->problem : "cannot parse";
	const char	*context = p->context ? p->context : "";
	size_t		 o = cfg_text_offset(text, len, (int)*line, (int)*col), b;
	int		 ch = o < len ? (unsigned char)text[o] : '\0';
	bool		 indenting = true;

	/* Only blanks before the mark on its line: it is in the indentation. */
	for (b = o; b > 0 && text[b - 1] != '\n'; b--)
		if (text[b - 1] != ' ' && text[b - 1] != '\t')
			indenting = false;
	if (strcmp(problem, "found character that cannot start any token") == 0) {
		if (ch == '\t')
			return indenting ? "a tab in the indentation: YAML indents "
			    "with spaces only" : "a tab where a value should start: "
			    "YAML separates with spaces, not tabs";
		if (ch > ' ' && ch < 0x7f)
			snprintf(buf, size, "\"%c\" cannot start an unquoted value "
			    "(YAML reserves it): put the value in quotes", ch);
		else
			snprintf(buf, size, "a character that cannot start an "
			    "unquoted value: put the value in quotes");
		return buf;
	}
	if (strstr(problem, "found a tab character") == problem)
		return "a tab in the indentation: YAML indents with spaces only";
	if (strcmp(problem, "mapping values are not allowed in this context") == 0) {
		if (memmem(text + b, o - b, ": ", 2) != NULL)
			return "a second \": \" on this line: quote a value that "
			    "holds \": \" (key: \"a: b\")";
		for (*col = 1; b < o && text[b] == ' '; b++)
			(*col)++;	/* at the key */
		return "this key is indented deeper than the key above it";
	}
	if (strcmp(problem, "did not find expected key") == 0)
		return ch == '-' ? "a list item (\"- \") where a key was expected: "
		    "a list goes under its key, indented" : "this line is indented "
		    "differently from the keys above it";
	if (strcmp(problem, "did not find expected '-' indicator") == 0)
		return "this line is indented differently from the list items "
		    "above it";
	if (strcmp(problem, "block sequence entries are not allowed in this "
	    "context") == 0)
		return "a list item (\"- \") cannot follow a key on its line: "
		    "start the list on the next line, indented";
	if (strcmp(problem, "found unknown escape character") == 0)
		return "an unknown escape in a double-quoted value: write \\\\ "
		    "for a backslash, or use single quotes";
	if (strcmp(problem, "found undefined alias") == 0)
		return "\"*\" starts a YAML alias: put a value that starts with "
		    "\"*\" in quotes";
	/* The rest are best shown where the thing they lack began. */
	*line = p->context_mark.line + 1;
	*col = p->context_mark.column + 1;
	if (strcmp(problem, "could not find expected ':'") == 0)
		return "this line has no \":\" after its key (a value that goes "
		    "on over lines needs quotes)";
	if (strcmp(context, "while scanning a quoted scalar") == 0)
		return "this quoted value is never closed";
	if (strcmp(problem, "did not find expected ',' or '}'") == 0)
		return "this \"{\" is never closed with \"}\" (or an item in it "
		    "lacks its \",\")";
	if (strcmp(problem, "did not find expected ',' or ']'") == 0)
		return "this \"[\" is never closed with \"]\" (or an item in it "
		    "lacks its \",\")";
	*line = p->problem_mark.line + 1;
	*col = p->problem_mark.column + 1;
	return problem;
}

/*
 * libyaml's problem, at its mark, in our message shape (yaml_explain).
 * Reader errors (bad UTF-8, control bytes) carry only a byte offset, so we
 * count lines to it.
 */
void
cfg_yaml_problem(const struct yaml_parser_s *parser, const char *file,
    const char *text, size_t len, char *out, size_t size)
{
	const char	*problem = parser->problem ? parser->problem : "cannot parse";
	char		 buf[ERR_LEN];
	size_t		 line, col, i;

	if (parser->error == YAML_MEMORY_ERROR) {
		snprintf(out, size, "%s: YAML: out of memory", file);
		return;
	}
	line = parser->problem_mark.line + 1;
	col = parser->problem_mark.column + 1;
	if (parser->error == YAML_READER_ERROR) {
		line = col = 1;
		for (i = 0; i < parser->problem_offset && i < len; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else if (((unsigned char)text[i] & 0xc0) != 0x80)
				col++;
		}
		problem = strstr(problem, "control characters") ? "a control "
		    "character: only tabs and line breaks may stand in the text" :
		    "bytes that are not UTF-8 text: save the file as UTF-8";
	} else
		problem = yaml_explain(parser, text, len, &line, &col, buf,
		    sizeof(buf));
	snprintf(out, size, "%s:%zu:%zu: YAML: %s", file, line, col, problem);
}

static int
fail_yaml(struct cfg_ctx *cx, const yaml_parser_t *parser)
{
	char	msg[CFG_MSG_LEN];

	cfg_yaml_problem(parser, cx->file, cx->cfg->text, cx->cfg->text_len,
	    msg, sizeof(msg));
	return fail_msg(cx, "%s", msg);
}

/*
 * Aliases ("*name") are refused before the file is composed.  libyaml
 * shares an aliased node rather than copying it, but every walk of the
 * tree -- ours, the redaction's -- goes down each reference, so a few
 * nested aliases make a small file cost gigabytes (a "billion laughs").
 * A config has no need of them.  Anchors alone are harmless.  Returns -1
 * at the first alias, 0 when there is none.  For text yaml_parser_load
 * took: composing shares the aliased node, so that much is cheap.
 */
int
cfg_yaml_aliases(const char *file, const char *text, size_t len, char *out,
    size_t size)
{
	yaml_parser_t	p;
	yaml_event_t	ev;
	int		rc = 0, done = 0;

	if (memchr(text, '*', len) == NULL || !yaml_parser_initialize(&p))
		return 0;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done && yaml_parser_parse(&p, &ev)) {
		if (ev.type == YAML_ALIAS_EVENT) {
			snprintf(out, size, "%s:%zu:%zu: YAML: an alias (*%s): "
			    "soak does not expand aliases (a few nested ones make "
			    "a small file gigabytes); write the value out, or "
			    "quote a value that starts with \"*\"", file,
			    ev.start_mark.line + 1, ev.start_mark.column + 1,
			    (const char *)ev.data.alias.anchor);
			rc = -1;
			done = 1;
		}
		if (ev.type == YAML_STREAM_END_EVENT)
			done = 1;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

static int
refuse_aliases(struct cfg_ctx *cx, const char *text, size_t len)
{
	char	msg[CFG_MSG_LEN];

	if (cfg_yaml_aliases(cx->file, text, len, msg, sizeof(msg)) == 0)
		return 0;
	return fail_msg(cx, "%s", msg);
}

/* The line and column a message names after "path:", 0 when none. */
static void
msg_where(const char *msg, size_t plen, unsigned long *line, unsigned long *col)
{
	char	*end;

	*line = *col = 0;
	if (strlen(msg) <= plen || msg[plen] != ':')
		return;
	*line = strtoul(msg + plen + 1, &end, 10);
	if (*end == ':')
		*col = strtoul(end + 1, NULL, 10);
}

static int
cmp_where(const void *a, const void *b, void *arg)
{
	size_t		plen = *(const size_t *)arg;
	unsigned long	la, ca, lb, cb;

	msg_where(*(char *const *)a, plen, &la, &ca);
	msg_where(*(char *const *)b, plen, &lb, &cb);
	if (la != lb)
		return la < lb ? -1 : 1;
	return ca < cb ? -1 : ca > cb;
}

/* ---- public ------------------------------------------------------------ */

void
cfg_msg_where(const char *msg, const char *path, int *line, int *col)
{
	unsigned long	l, c;

	*line = *col = 0;
	if (strncmp(msg, path, strlen(path)) != 0)
		return;
	msg_where(msg, strlen(path), &l, &c);
	*line = l > INT_MAX ? INT_MAX : (int)l;
	*col = c > INT_MAX ? INT_MAX : (int)c;
}

static int
load_text(const char *path, const char *text, size_t len, struct cfg *cfg,
    char *err, struct cfg_errors *errs, bool keep)
{
	yaml_parser_t	 parser;
	yaml_document_t	 doc, extra;
	yaml_node_t	*top;
	struct cfg_ctx	 cx;
	int		 parser_ok = 0, doc_ok = 0, rc = -1;

	memset(cfg, 0, sizeof(*cfg));
	cfg->path = xstrdup(path);
	cfg->text = xcalloc(1, len + 1);
	memcpy(cfg->text, text, len);
	cfg->text_len = len;
	set_defaults(cfg);

	memset(&cx, 0, sizeof(cx));
	cx.file = path;
	cx.doc = &doc;
	cx.cfg = cfg;
	cx.err = err;
	cx.errs = errs;
	if ((cfg->dir = config_dir(path, err)) == NULL) {
		fail_msg(&cx, "%s", err);
		goto fail;
	}
	cx.dir = cfg->dir;

	if (!yaml_parser_initialize(&parser)) {
		fail_msg(&cx, "%s: YAML: cannot start the parser (out of memory)",
		    path);
		goto fail;
	}
	parser_ok = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)cfg->text,
	    len);
	if (!yaml_parser_load(&parser, &doc)) {
		fail_yaml(&cx, &parser);
		goto fail;
	}
	doc_ok = 1;
	if ((top = yaml_document_get_root_node(&doc)) == NULL) {
		fail_msg(&cx, "%s:1:1: config: the file is empty (it needs at "
		    "least name, turn and invariants)", path);
		goto fail;
	}
	/* A second document would be silently ignored otherwise. */
	if (!yaml_parser_load(&parser, &extra)) {
		fail_yaml(&cx, &parser);
		goto fail;
	}
	if (yaml_document_get_root_node(&extra) != NULL) {
		fail_msg(&cx, "%s:%zu:%zu: YAML: only one document is allowed",
		    path, extra.start_mark.line + 1, extra.start_mark.column + 1);
		yaml_document_delete(&extra);
		goto fail;
	}
	yaml_document_delete(&extra);
	/* After the load, which names an alias to no anchor in its words. */
	if (refuse_aliases(&cx, cfg->text, len) == -1)
		goto fail;
	if (parse_top(&cx, top) == -1 || cx.nerr > 0) {
		/* The file is YAML: what did load may still be checked. */
		if (keep)
			cfg->broken |= CFG_BROKEN_SOME;
		goto fail;
	}
	rc = 0;
	goto out;
fail:
	/* Sections are read in dependency order; a person reads top down. */
	if (errs != NULL && errs->n > 1) {
		size_t	plen = strlen(path);

		qsort_r(errs->msg, errs->n, sizeof(*errs->msg), cmp_where, &plen);
		snprintf(err, ERR_LEN, "%s", errs->msg[0]);
	}
	if (!(cfg->broken & CFG_BROKEN_SOME))
		cfg_free(cfg);
out:
	if (doc_ok)
		yaml_document_delete(&doc);
	if (parser_ok)
		yaml_parser_delete(&parser);
	return rc;
}

int
cfg_load_text(const char *path, const char *text, size_t len,
    struct cfg *cfg, char *err)
{
	return load_text(path, text, len, cfg, err, NULL, false);
}

int
cfg_load_file(const char *path, struct cfg *cfg, char *err)
{
	return cfg_load_file_all(path, cfg, err, NULL);
}

int
cfg_load_file_all(const char *path, struct cfg *cfg, char *err,
    struct cfg_errors *errs)
{
	return cfg_load_file_keep(path, cfg, err, errs, false);
}

int
cfg_load_file_keep(const char *path, struct cfg *cfg, char *err,
    struct cfg_errors *errs, bool keep)
{
	char	*text;
	size_t	 len;
	int	 rc;

	memset(cfg, 0, sizeof(*cfg));
	if ((text = read_file(path, CFG_MAX_BYTES, &len, err)) == NULL) {
		if (errs != NULL) {
			errs->msg = xreallocarray(errs->msg, errs->n + 1,
			    sizeof(*errs->msg));
			errs->msg[errs->n++] = xstrdup(err);
			errs->total++;
		}
		return -1;
	}
	rc = load_text(path, text, len, cfg, err, errs, keep);
	free(text);
	return rc;
}

void
cfg_errors_add(struct cfg_errors *errs, const char *msg)
{
	if (errs->n < CFG_MAX_ERRS) {
		errs->msg = xreallocarray(errs->msg, errs->n + 1, sizeof(*errs->msg));
		errs->msg[errs->n++] = xstrdup(msg);
	}
	errs->total++;
}

void
cfg_errors_sort(struct cfg_errors *errs, const char *path)
{
	size_t	plen = strlen(path);

	if (errs->n > 1)
		qsort_r(errs->msg, errs->n, sizeof(*errs->msg), cmp_where, &plen);
}

int
cfg_errors_print(const struct cfg_errors *errs, FILE *f, const char *who)
{
	size_t	i;

	for (i = 0; i < errs->n; i++)
		fprintf(f, "%s: %s\n", who, errs->msg[i]);
	if (errs->total > errs->n)
		fprintf(f, "%s: ... and %zu more error(s) not shown\n", who,
		    errs->total - errs->n);
	return (int)errs->total;
}

void
cfg_errors_free(struct cfg_errors *errs)
{
	size_t	i;

	for (i = 0; i < errs->n; i++)
		free(errs->msg[i]);
	free(errs->msg);
	memset(errs, 0, sizeof(*errs));
}

void
cfg_free(struct cfg *cfg)
{
	size_t	i;

	if (cfg == NULL)
		return;
	free(cfg->path);
	free(cfg->dir);
	free(cfg->text);
	free(cfg->name);
	free(cfg->db_url);
	free(cfg->db_schema);
	free(cfg->regressions);
	for (i = 0; i < cfg->nservices; i++) {
		free(cfg->services[i].name);
		strv_free(cfg->services[i].command);
	}
	free(cfg->services);
	for (i = 0; i < cfg->nproxies; i++) {
		free(cfg->proxies[i].name);
		free(cfg->proxies[i].upstream);
		free(cfg->proxies[i].faults.match);
		free(cfg->proxies[i].tls_name);
		free(cfg->proxies[i].tls_ca);
		free(cfg->proxies[i].api_key_env);
		free(cfg->proxies[i].record);
		free(cfg->proxies[i].replay);
	}
	free(cfg->proxies);
	strv_free(cfg->setup);
	strv_free(cfg->turn_command);
	for (i = 0; i < cfg->ninvariants; i++) {
		free(cfg->invariants[i].name);
		free(cfg->invariants[i].sql);
	}
	free(cfg->invariants);
	free(cfg->tickets.sink);
	free(cfg->tickets.url);
	free(cfg->tickets.repo);
	free(cfg->tickets.project);
	free(cfg->tickets.token_env);
	free(cfg->tickets.user_env);
	free(cfg->tickets.issue_type);
	strv_free(cfg->tickets.labels);
	for (i = 0; i < cfg->nmarks; i++)
		free(cfg->marks[i].key);
	free(cfg->marks);
	for (i = 0; i < cfg->ncommands; i++)
		free(cfg->commands[i].key);
	free(cfg->commands);
	memset(cfg, 0, sizeof(*cfg));
}

const struct cfg_mark *
cfg_mark_find(const struct cfg *cfg, const char *key)
{
	size_t	i;

	for (i = 0; i < cfg->nmarks; i++)
		if (strcmp(cfg->marks[i].key, key) == 0)
			return &cfg->marks[i];
	return NULL;
}

void
cfg_sql_where(const struct cfg *cfg, size_t i, long pos, int *line, int *col)
{
	const struct cfg_mark	*m;
	const char		*sql, *t = cfg->text, *p;
	char			 item[CFG_KEY_LEN], key[CFG_KEY_LEN];
	size_t			 o;
	long			 k;
	int			 nl = 0, c = 0, indent = 0, kept = 0;

	*line = *col = 0;
	if (i >= cfg->ninvariants)
		return;
	key_index(item, "invariants", i);
	key_join(key, item, "sql");
	if ((m = cfg_mark_find(cfg, key)) == NULL)
		return;
	*line = m->line;
	*col = m->col;
	sql = cfg->invariants[i].sql;
	if (pos <= 0 || t == NULL)
		return;
	/* The line and column of character pos inside the value. */
	for (p = sql, k = 1; *p && k < pos; p++) {
		if (((unsigned char)*p & 0xc0) == 0x80)
			continue;
		if (*p == '\n') {
			nl++;
			c = 0;
		} else
			c++;
		k++;
	}
	o = cfg_text_offset(t, cfg->text_len, m->line, m->col);
	if (o < cfg->text_len && t[o] == '|') {
		/* A literal block: line for line the file's, after the
		 * block's indentation: the spaces of its first line that is
		 * not empty, less those the value keeps (an indentation
		 * indicator, "|2", lets a block start with spaces). */
		while (o < cfg->text_len && t[o] != '\n')
			o++;
		for (o++; o < cfg->text_len; o++) {
			if (t[o] == ' ')
				indent++;
			else if (t[o] == '\n' || t[o] == '\r')
				indent = 0;	/* an empty line, "\r\n" or not */
			else
				break;
		}
		for (p = sql; *p == ' ' || *p == '\n'; p++)
			kept = *p == ' ' ? kept + 1 : 0;
		*line = m->line + 1 + nl;
		*col = indent - kept + c + 1;
	} else if (nl == 0 && strlen(sql) <= cfg->text_len - o &&
	    strncmp(t + o, sql, strlen(sql)) == 0)
		*col = m->col + c;	/* plain, as it stands in the file */
}

int64_t
cfg_guard_floor(const struct cfg *cfg)
{
	int64_t	total = (int64_t)cfg->turns * cfg->rounds;

	if (!cfg->guard_percent)
		return cfg->guard_min_ok;
	return (cfg->guard_min_ok * total + 99) / 100;
}

int64_t
cfg_guard_floor_of(const struct cfg *cfg, int64_t ran)
{
	int64_t	total = (int64_t)cfg->turns * cfg->rounds;

	if (ran >= total || total == 0)
		return cfg_guard_floor(cfg);
	if (cfg->guard_percent)
		return (cfg->guard_min_ok * ran + 99) / 100;
	return (cfg->guard_min_ok * ran + total - 1) / total;
}

bool
cfg_service_seam(const struct cfg *cfg, const struct cfg_service *s)
{
	return s->seam && cfg->nproxies > 0;
}

size_t
cfg_services_direct(const struct cfg *cfg)
{
	size_t	i, n = 0;

	for (i = 0; i < cfg->nservices; i++)
		n += !cfg_service_seam(cfg, &cfg->services[i]);
	return n;
}

bool
cfg_guard_allows_idle_round(const struct cfg *cfg)
{
	return cfg->guard_set && cfg->guard_min_ok == 0;
}
