/*
 * A result's detail, cut to fit one message (the contract is in detail.h).
 * Costs are counted in bytes of compact JSON, the form the detail travels
 * in, so a tail of quotes costs what it will cost on the wire.
 */
#include "worker/detail.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/wrk.h"

_Static_assert(MSG_DETAIL_MAX <= MSG_STR_LONG, "a detail must fit its field");
_Static_assert(DETAIL_INV_MAX + DETAIL_TURNS_MAX + DETAIL_TRACE_MAX +
    MSG_DETAIL_MAX / 16 <= MSG_DETAIL_MAX, "the parts' caps exceed the detail's");

#define COST_FLAGS	(JSON_COMPACT | JSON_ENCODE_ANY)

size_t
detail_str_cost(const char *s, size_t len)
{
	size_t	i, n = len + 2;

	/* jansson's dump_string: '"' '\\' and the five named controls take
	 * two bytes, other controls (NUL too) \u00XX; the rest is copied. */
	for (i = 0; i < len; i++) {
		unsigned char	c = (unsigned char)s[i];

		if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' ||
		    c == '\r' || c == '\t')
			n += 1;
		else if (c < 0x20)
			n += 5;
	}
	return n;
}

size_t
detail_cost(const json_t *v)
{
	return v == NULL ? 0 : json_dumpb(v, NULL, 0, COST_FLAGS);
}

json_t *
detail_trim_invariants(const json_t *invs, size_t budget, json_t *markers)
{
	size_t	 n = json_array_size(invs), i, r, maxrows = 0, used = 2;
	size_t	*shown = xcalloc(n + 1, sizeof(*shown));
	json_t	*out = json_array();
	bool	 full = false;

	/* Every invariant's head first: its name is the fingerprint. */
	for (i = 0; i < n; i++) {
		json_t	*inv = json_array_get(invs, i), *head = json_copy(inv);
		size_t	 nrows = json_array_size(json_object_get(inv, "rows"));

		json_object_set_new(head, "rows", json_array());
		used += detail_cost(head) + 1;
		json_array_append_new(out, head);
		if (nrows > maxrows)
			maxrows = nrows;
	}
	/* Then rows, the first of each before the second of any; the first
	 * row that does not fit ends it, so no later row takes its place. */
	for (r = 0; r < maxrows && !full; r++) {
		for (i = 0; i < n; i++) {
			json_t	*rows = json_object_get(json_array_get(invs, i), "rows");
			json_t	*row = json_array_get(rows, r);
			size_t	 c;

			if (row == NULL)
				continue;
			if (used + (c = detail_cost(row) + 1) > budget) {
				full = true;
				break;
			}
			used += c;
			json_array_append(json_object_get(json_array_get(out, i), "rows"), row);
			shown[i]++;
		}
	}
	for (i = 0; i < n; i++) {
		const json_t	*inv = json_array_get(invs, i);
		size_t		 left = json_array_size(json_object_get(inv, "rows")) - shown[i];
		const char	*name = json_string_value(json_object_get(inv, "name"));
		char		*m;

		if (left == 0)
			continue;
		m = xasprintf("truncated: %zu more rows", left);
		json_object_set_new(json_array_get(out, i), "truncated", json_string(m));
		free(m);
		m = xasprintf("truncated: %zu more rows of \"%s\"", left, name ? name : "");
		json_array_append_new(markers, json_string(m));
		free(m);
	}
	free(shown);
	return out;
}

/* Which turns a reader needs first: 0 abnormal, 1 a non-zero exit, 2 ok. */
static int
turn_rank(const json_t *t)
{
	const char	*st = json_string_value(json_object_get(t, "status"));

	if (st != NULL && strcmp(st, "ok") == 0)
		return 2;
	if (st != NULL && strcmp(st, "error") == 0)
		return 1;
	return 0;
}

json_t *
detail_trim_turns(const json_t *turns, size_t budget, json_t *markers)
{
	size_t	 n = json_array_size(turns), i, kept = 0, used = 2, c;
	bool	*keep = xcalloc(n + 1, sizeof(*keep));
	json_t	*out = json_array();
	int	 rank;

	for (rank = 0; rank <= 2; rank++) {
		for (i = 0; i < n; i++) {
			if (turn_rank(json_array_get(turns, i)) != rank)
				continue;
			if (used + (c = detail_cost(json_array_get(turns, i)) + 1) > budget)
				goto done;
			used += c;
			keep[i] = true;
			kept++;
		}
	}
done:
	for (i = 0; i < n; i++)
		if (keep[i])
			json_array_append(out, json_array_get(turns, i));
	if (kept < n) {
		char	*m = xasprintf("truncated: %zu more turns", n - kept);

		json_array_append_new(markers, json_string(m));
		free(m);
	}
	free(keep);
	return out;
}

int
detail_trace_read(const char *path, size_t budget, struct detail_trace *t,
    char *err)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0, size = 0, used = 2, c;
	ssize_t	 n;
	int	 rc = 0;

	memset(t, 0, sizeof(*t));
	if ((f = fopen(path, "re")) == NULL)
		return errf(err, "cannot open \"%s\": %s", path, strerror(errno));
	while ((n = getline(&line, &cap, f)) != -1) {
		if (t->more == 0 &&
		    used + (c = detail_str_cost(line, (size_t)n) - 2) <= budget) {
			if (t->len + (size_t)n + 1 > size) {
				size = (t->len + (size_t)n + 1) * 2;
				t->text = xreallocarray(t->text, size, 1);
			}
			memcpy(t->text + t->len, line, (size_t)n);
			t->len += (size_t)n;
			t->lines++;
			used += c;
		} else
			t->more++;
	}
	if (ferror(f))
		rc = errf(err, "cannot read \"%s\": %s", path, strerror(errno));
	fclose(f);
	free(line);
	if (t->text == NULL)
		t->text = xstrdup("");
	t->text[t->len] = '\0';
	/* jansson refuses a string that is not UTF-8. */
	utf8_scrub(t->text, t->len);
	return rc;
}

void
detail_trace_free(struct detail_trace *t)
{
	if (t == NULL)
		return;
	free(t->text);
	json_decref(t->schedule);
	memset(t, 0, sizeof(*t));
}

json_t *
detail_trace_json(const struct detail_trace *t, const char *full_trace,
    json_t *markers)
{
	json_t	*line, *s;
	char	*m, *lj, *text;

	if (t->more == 0)
		return json_stringn(t->text ? t->text : "", t->len);
	m = xasprintf("truncated: %" PRIu64 " more trace lines", t->more);
	/* The marker is a line of JSON, so the shipped trace stays JSONL. */
	line = json_object();
	json_object_set_new(line, "truncated", json_string(m));
	json_object_set_new(line, "full_trace",
	    full_trace && (s = json_string(full_trace)) ? s : json_null());
	if (json_object_size(t->schedule) > 0)
		json_object_set(line, "schedule", t->schedule);
	lj = json_dumps(line, JSON_COMPACT);
	text = xasprintf("%.*s%s%s\n", (int)t->len, t->text ? t->text : "",
	    t->len > 0 && t->text[t->len - 1] != '\n' ? "\n" : "", lj ? lj : "{}");
	s = json_string(text);
	json_array_append_new(markers, json_string(m));
	json_decref(line);
	free(lj);
	free(text);
	free(m);
	return s;
}

/*
 * A plan over DETAIL_PLAN_MAX: without its "what" words, which are for
 * people; still over: left out (null), said in a marker.
 */
static json_t *
detail_trim_plan(const json_t *plan, json_t *markers)
{
	json_t		*p = json_deep_copy(UNCONST(plan)), *px, *x, *list, *e;
	const char	*name, *kind;
	size_t		 i, k;

	px = json_object_get(p, "proxies");
	json_object_foreach(px, name, x) {
		for (k = 0; k < 2; k++) {
			kind = k == 0 ? "faults" : "steps";
			list = json_object_get(x, kind);
			json_array_foreach(list, i, e)
				json_object_del(e, "what");
		}
	}
	if (detail_cost(p) <= DETAIL_PLAN_MAX) {
		json_array_append_new(markers, json_string("the plan's statement "
		    "heads (what) left out: over the plan's cap"));
		return p;
	}
	json_decref(p);
	json_array_append_new(markers, json_string("the plan left out: over its "
	    "cap even without its statement heads"));
	return json_null();
}

json_t *
detail_trim(const json_t *detail, const struct detail_trace *t, const char *full_dir)
{
	json_t		*out = json_copy(UNCONST(detail)), *markers = json_array(), *v, *s;
	const char	*ws = json_string_value(json_object_get(detail, "workspace"));
	char		*full_trace;

	if (json_is_array(v = json_object_get(detail, "invariants")))
		json_object_set_new(out, "invariants",
		    detail_trim_invariants(v, DETAIL_INV_MAX, markers));
	if (json_is_array(v = json_object_get(detail, "turns")))
		json_object_set_new(out, "turns",
		    detail_trim_turns(v, DETAIL_TURNS_MAX, markers));
	if ((v = json_object_get(detail, "plan")) != NULL &&
	    detail_cost(v) > DETAIL_PLAN_MAX)
		json_object_set_new(out, "plan", detail_trim_plan(v, markers));
	if (t != NULL) {
		full_trace = full_dir && ws ? xasprintf("%s/trace.jsonl", ws) : NULL;
		json_object_set_new(out, "trace", detail_trace_json(t, full_trace, markers));
		free(full_trace);
	}
	if (json_array_size(markers) == 0) {
		json_decref(markers);
		return out;
	}
	v = json_object();
	json_object_set_new(v, "markers", markers);
	json_object_set_new(v, "full_data",
	    full_dir && (s = json_string(full_dir)) ? s : json_null());
	json_object_set_new(out, "truncated", v);
	return out;
}

/* A new reference to d[key], or nothing when d has none. */
static void
copy_key(json_t *to, const json_t *d, const char *key)
{
	json_t	*v = json_object_get(d, key);

	if (v != NULL)
		json_object_set(to, key, v);
}

json_t *
detail_minimal(const json_t *detail, size_t nbytes, size_t max)
{
	const json_t	*invs = json_object_get(detail, "invariants");
	const char	*msg = json_string_value(json_object_get(detail, "message"));
	const char	*full = json_string_value(json_object_get(
			    json_object_get(detail, "truncated"), "full_data"));
	json_t		*out = json_object(), *names = json_array(), *tr, *s;
	char		*why, *text;
	size_t		 i;

	if (full == NULL)
		full = json_string_value(json_object_get(detail, "workspace"));
	why = nbytes > 0 ?
	    xasprintf("detail dropped: %zu bytes, over the limit of %zu", nbytes, max) :
	    xstrdup("detail dropped: it could not be encoded");
	text = xasprintf("%s (%s; %s%s)", msg ? msg : "", why,
	    full ? "the full data is in " : "the full data was not kept",
	    full ? full : "");
	utf8_scrub(text, strlen(text));
	json_object_set_new(out, "message", json_string(text));
	copy_key(out, detail, "round");
	copy_key(out, detail, "ok_turns");
	copy_key(out, detail, "total_turns");
	/* Small, and what stops a run that cannot go on (common/cfgerr.h). */
	copy_key(out, detail, "config_error");
	/* Small, and the run's sums would miss the seed without it. */
	copy_key(out, detail, "coverage");
	/* A regression judged by exploring: without it a pass is not one
	 * (worker/regexplore.h, coord_reg_pass_earned). */
	copy_key(out, detail, "diverged");
	copy_key(out, detail, "explored");
	/* The names make the fingerprint: without them this failure would
	 * count as another bug. */
	for (i = 0; i < json_array_size(invs); i++) {
		const json_t	*inv = json_array_get(invs, i);

		json_array_append_new(names, json_pack("{s:O?, s:O?}",
		    "name", json_object_get(inv, "name"),
		    "row_count", json_object_get(inv, "row_count")));
	}
	if (json_is_array(invs))
		json_object_set_new(out, "invariants", names);
	else
		json_decref(names);
	copy_key(out, detail, "workspace");
	copy_key(out, detail, "workspace_error");
	tr = json_object();
	json_object_set_new(tr, "markers", json_pack("[s]", why));
	json_object_set_new(tr, "full_data", full && (s = json_string(full)) ? s : json_null());
	json_object_set_new(out, "truncated", tr);
	free(why);
	free(text);
	return out;
}

char *
wrk_result_text(const struct seed_result *res)
{
	json_t	*min;
	char	*s;
	size_t	 len = 0;

	if (res->detail == NULL)
		return xstrdup("{}");
	if ((s = json_dumps(res->detail, JSON_COMPACT)) != NULL &&
	    (len = strlen(s)) <= MSG_DETAIL_MAX)
		return s;
	free(s);
	log_warnx("result detail of %zu bytes does not fit in %u: sending a summary",
	    len, MSG_DETAIL_MAX);
	min = detail_minimal(res->detail, len, MSG_DETAIL_MAX);
	s = json_dumps(min, JSON_COMPACT);
	json_decref(min);
	if (s == NULL || strlen(s) > MSG_DETAIL_MAX) {
		/* Only a message or path of a megabyte gets here. */
		free(s);
		s = xstrdup("{\"message\":\"detail dropped: even its summary did not fit\"}");
	}
	return s;
}
