/*
 * A fault trace's lines decoded (trace.h).
 */
#include "common/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/fault.h"
#include "common/units.h"
#include "common/util.h"

static const char *const deadlock_names[TRACE_DEADLOCK_MAX] = {
	[TRACE_DEADLOCK_NONE] = "",
	[TRACE_DEADLOCK_SOAK] = "soak",
	[TRACE_DEADLOCK_POSTGRES] = "postgres",
};

const char *
trace_deadlock_name(enum trace_deadlock d)
{
	if ((unsigned)d >= TRACE_DEADLOCK_MAX)
		return "?";
	return deadlock_names[d];
}

int
trace_deadlock_parse(const char *s, enum trace_deadlock *d)
{
	unsigned	i;

	for (i = TRACE_DEADLOCK_NONE + 1; s != NULL && i < TRACE_DEADLOCK_MAX; i++)
		if (strcmp(s, deadlock_names[i]) == 0) {
			*d = (enum trace_deadlock)i;
			return 0;
		}
	return -1;
}

const char *
trace_key_hex(uint64_t key, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64, key);
	return buf;
}

int
trace_key_parse(const char *s, uint64_t *key)
{
	if (s == NULL || strlen(s) != 16)
		return -1;
	return hex_u64(s, s + 16, key);
}

int
trace_turns_parse(const char *s, uint64_t *turns)
{
	if (s == NULL)
		return -1;
	return hex_u64(s, s + strlen(s), turns);
}

/* ---- a line ---- */

/* o[k] as a whole number of lo..hi into *v: 0, 1 when absent, or -1 (err). */
static int
get_int(const json_t *o, const char *k, json_int_t lo, json_int_t hi,
    json_int_t *v, char *err)
{
	const json_t	*j = json_object_get(o, k);

	if (j == NULL)
		return 1;
	if (!json_is_integer(j))
		return errf(err, "%s: not a whole number", k);
	if (json_integer_value(j) < lo || json_integer_value(j) > hi)
		return errf(err, "%s: %" JSON_INTEGER_FORMAT " is out of range "
		    "(%" JSON_INTEGER_FORMAT "..%" JSON_INTEGER_FORMAT ")", k,
		    json_integer_value(j), lo, hi);
	*v = json_integer_value(j);
	return 0;
}

/* o[k] as a string into *s (NULL when absent): -1 (err) when not one. */
static int
get_str(const json_t *o, const char *k, const char **s, char *err)
{
	const json_t	*j = json_object_get(o, k);

	*s = NULL;
	if (j == NULL)
		return 0;
	if (!json_is_string(j))
		return errf(err, "%s: not a string", k);
	*s = json_string_value(j);
	return 0;
}

static int
get_bool(const json_t *o, const char *k, bool *b, char *err)
{
	const json_t	*j = json_object_get(o, k);

	*b = false;
	if (j == NULL)
		return 0;
	if (!json_is_boolean(j))
		return errf(err, "%s: not true or false", k);
	*b = json_is_true(j);
	return 0;
}

/* o[k], a set of turns, into *m: 0, 1 when absent, or -1 (err). */
static int
get_turns(const json_t *o, const char *k, uint64_t *m, char *err)
{
	const char	*s;
	char		 q[QUOTE_LEN];

	*m = 0;
	if (get_str(o, k, &s, err) == -1)
		return -1;
	if (s == NULL)
		return 1;
	if (trace_turns_parse(s, m) == -1)
		return errf(err, "%s: %s is not a set of turns (1 to 16 hex digits)",
		    k, quote_value(s, q, sizeof(q)));
	return 0;
}

int
trace_line_parse(const json_t *o, struct trace_line *l, char *err)
{
	const char	*s;
	json_int_t	 v;
	char		 q[QUOTE_LEN];
	int		 rc;

	memset(l, 0, sizeof(*l));
	if (!json_is_object(o))
		return errf(err, "not a JSON object");
	if (get_str(o, "proxy", &l->proxy, err) == -1)
		return -1;
	if (l->proxy == NULL)
		return errf(err, "no proxy");
	/* the exchange: which turn's, which connection, which of it */
	if ((rc = get_int(o, "turn", 0, INT32_MAX, &v, err)) != 0)
		return rc == 1 ? errf(err, "no turn") : -1;
	l->turn = (int)v;
	if ((rc = get_int(o, "conn", 0, UINT32_MAX, &v, err)) != 0)
		return rc == 1 ? errf(err, "no conn") : -1;
	l->conn = (uint32_t)v;
	if ((rc = get_int(o, "exchange", 0, UINT32_MAX, &v, err)) != 0)
		return rc == 1 ? errf(err, "no exchange") : -1;
	l->exchange = (uint32_t)v;
	if (get_str(o, "service", &l->service, err) == -1 ||
	    get_bool(o, "bypass", &l->bypass, err) == -1)
		return -1;
	if (get_str(o, "served", &s, err) == -1)
		return -1;
	if (s != NULL && strcmp(s, "quiet") != 0 && strcmp(s, "arrival") != 0)
		return errf(err, "served: %s is not \"quiet\" or \"arrival\"",
		    quote_value(s, q, sizeof(q)));
	l->served = s != NULL;
	l->served_forced = s != NULL && strcmp(s, "arrival") == 0;
	/* what happened to it */
	if (get_str(o, "fault", &s, err) == -1)
		return -1;
	if (s != NULL && fault_parse(s, &l->fault) == -1)
		return errf(err, "fault: %s is not a fault kind",
		    quote_value(s, q, sizeof(q)));
	if ((rc = get_int(o, "latency_ms", 0, FAULT_LATENCY_MAX_MS, &v, err)) == -1)
		return -1;
	l->latency_ms = rc == 0 ? v : 0;
	if (get_bool(o, "upstream_saw", &l->upstream_saw, err) == -1 ||
	    get_bool(o, "client_got_reply", &l->client_got_reply, err) == -1)
		return -1;
	/* what its fault did: an HTTP API fault's parameters */
	if ((rc = get_int(o, "status", 100, 599, &v, err)) == -1)
		return -1;
	l->status = rc == 0 ? (int)v : 0;
	if ((rc = get_int(o, "after", 1, UINT32_MAX, &v, err)) == -1)
		return -1;
	l->after = rc == 0 ? (uint32_t)v : 0;
	if ((rc = get_int(o, "stall_ms", 0, INT64_MAX, &v, err)) == -1)
		return -1;
	l->stall_ms = rc == 0 ? v : 0;
	/* what it hit (docs/plan.md) */
	if ((rc = get_int(o, "round", 0, INT32_MAX, &v, err)) == -1)
		return -1;
	l->round = rc == 0 ? (int)v : 0;
	if (get_str(o, "key", &s, err) == -1)
		return -1;
	if (s != NULL) {
		if (trace_key_parse(s, &l->key) == -1)
			return errf(err, "key: %s is not 16 hex digits",
			    quote_value(s, q, sizeof(q)));
		l->keyed = true;
	}
	if ((rc = get_int(o, "occ", 0, UINT32_MAX, &v, err)) == -1)
		return -1;
	l->occ = rc == 0 ? (uint32_t)v : 0;
	if (get_str(o, "req", &l->req, err) == -1 ||
	    get_str(o, "plan", &l->plan, err) == -1)
		return -1;
	if ((rc = get_int(o, "deferred", 0, UINT32_MAX, &v, err)) == -1)
		return -1;
	l->deferred = rc == 0 ? (uint32_t)v : 0;
	if (get_str(o, "pg", &l->pg, err) == -1 ||
	    get_str(o, "sql", &l->sql, err) == -1 ||
	    get_str(o, "tx", &l->tx, err) == -1 ||
	    get_str(o, "note", &l->note, err) == -1)
		return -1;
	/* a scheduled exchange: its step and what the schedule saw */
	if ((rc = get_int(o, "step", 1, UINT32_MAX, &v, err)) == -1)
		return -1;
	l->step = rc == 0 ? (uint32_t)v : 0;
	if ((rc = get_turns(o, "cand", &l->cand, err)) == -1)
		return -1;
	l->has_cand = rc == 0;
	if ((rc = get_int(o, "lane", 0, 63, &v, err)) == -1)
		return -1;
	l->lane = rc == 0 ? (int)v : 0;
	if (get_turns(o, "acand", &l->acand, err) == -1 ||
	    get_bool(o, "acand_cut", &l->acand_cut, err) == -1 ||
	    get_bool(o, "lane_tie", &l->lane_tie, err) == -1)
		return -1;
	if (get_str(o, "cls", &l->cls, err) == -1 ||
	    get_str(o, "forced", &l->forced, err) == -1)
		return -1;
	if ((rc = get_turns(o, "waits_on", &l->waits_on, err)) == -1)
		return -1;
	l->lock_wait = rc == 0;
	if (get_str(o, "deadlock", &s, err) == -1)
		return -1;
	if (s != NULL && trace_deadlock_parse(s, &l->deadlock) == -1)
		return errf(err, "deadlock: %s is not soak or postgres",
		    quote_value(s, q, sizeof(q)));
	if (get_turns(o, "wakes", &l->wakes, err) == -1 ||
	    get_str(o, "closed", &l->closed, err) == -1)
		return -1;
	return 0;
}
