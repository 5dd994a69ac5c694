/*
 * Where a replay's schedule left the run's (issue 15 item 4): two fault
 * traces (JSON lines, proxy.h's proxy_trace_format) compared step by step
 * for every scheduled proxy.  A step is the same when the same exchange
 * (turn, connection, exchange number) was admitted with the same turns
 * waiting; the first that is not is where the two runs parted, and what
 * each had waiting says why (a turn that had not arrived in one of them:
 * the system's own timing, outside the schedule).
 */
#include "fault-proxy/proxy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"

struct step {
	char		 proxy[64];
	uint64_t	 step;
	int64_t		 turn, conn, exchange;
	uint64_t	 cand;
	char		 sql[PROXY_SQL_LEN];
	char		 forced[16];
};

struct steps {
	struct step	*v;
	size_t		 n, cap;
};

static int
cmp_step(const void *a, const void *b)
{
	const struct step	*x = a, *y = b;
	int			 c = strcmp(x->proxy, y->proxy);

	if (c != 0)
		return c;
	return x->step < y->step ? -1 : x->step > y->step;
}

/* The scheduled lines of one trace, sorted by (proxy, step); -1 on a bad line. */
static int
steps_read(const char *text, size_t len, struct steps *s, int *lineno)
{
	const char	*p = text, *end = text + len, *nl;
	json_error_t	 je;

	*lineno = 0;
	while (p < end) {
		json_t		*o;
		struct step	*st;
		const char	*cand, *str;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		(*lineno)++;
		if (nl == p) {
			p = nl + 1;
			continue;
		}
		if ((o = json_loadb(p, (size_t)(nl - p), 0, &je)) == NULL ||
		    !json_is_object(o)) {
			json_decref(o);
			return -1;
		}
		p = nl + 1;
		if (!json_is_integer(json_object_get(o, "step"))) {
			json_decref(o);
			continue;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
		}
		st = &s->v[s->n++];
		memset(st, 0, sizeof(*st));
		if ((str = json_string_value(json_object_get(o, "proxy"))) != NULL)
			snprintf(st->proxy, sizeof(st->proxy), "%s", str);
		st->step = (uint64_t)json_integer_value(json_object_get(o, "step"));
		st->turn = json_integer_value(json_object_get(o, "turn"));
		st->conn = json_integer_value(json_object_get(o, "conn"));
		st->exchange = json_integer_value(json_object_get(o, "exchange"));
		if ((cand = json_string_value(json_object_get(o, "cand"))) != NULL)
			st->cand = strtoull(cand, NULL, 16);
		if ((str = json_string_value(json_object_get(o, "sql"))) != NULL)
			snprintf(st->sql, sizeof(st->sql), "%s", str);
		if ((str = json_string_value(json_object_get(o, "forced"))) != NULL)
			snprintf(st->forced, sizeof(st->forced), "%s", str);
		json_decref(o);
	}
	qsort(s->v, s->n, sizeof(*s->v), cmp_step);
	return 0;
}

/* "{0,2,3}" */
static void
put_set(char *buf, size_t len, uint64_t cand)
{
	size_t	o = 0;
	int	t, first = 1;

	o += (size_t)snprintf(buf + o, len - o, "{");
	for (t = 0; t < 64 && o < len; t++)
		if (cand & ((uint64_t)1 << t)) {
			o += (size_t)snprintf(buf + o, len - o, "%s%d", first ? "" : ",", t);
			first = 0;
		}
	if (o < len)
		snprintf(buf + o, len - o, "}");
}

static void
put_step(char *buf, size_t len, const char *who, const struct step *st)
{
	char	set[256];

	put_set(set, sizeof(set), st->cand);
	snprintf(buf, len, "%s admitted turn %" PRId64 " (conn %" PRId64
	    ", exchange %" PRId64 "%s%s) with turns %s waiting%s%s%s", who,
	    st->turn, st->conn, st->exchange, st->sql[0] ? ": " : "", st->sql,
	    set, st->forced[0] ? " (forced by " : "", st->forced,
	    st->forced[0] ? ")" : "");
}

int
proxy_schedule_diff(const char *run, size_t runlen, const char *replay,
    size_t replaylen, char *out, size_t outlen)
{
	struct steps	 a = { 0 }, b = { 0 };
	char		 sa[512], sb[512];
	size_t		 i;
	int		 line, rc = 0;

	if (steps_read(run, runlen, &a, &line) == -1) {
		snprintf(out, outlen, "the run's trace: line %d is not a JSON object",
		    line);
		rc = -1;
		goto done;
	}
	if (steps_read(replay, replaylen, &b, &line) == -1) {
		snprintf(out, outlen, "the replay's trace: line %d is not a JSON "
		    "object", line);
		rc = -1;
		goto done;
	}
	for (i = 0; i < a.n && i < b.n; i++) {
		const struct step	*x = &a.v[i], *y = &b.v[i];

		if (strcmp(x->proxy, y->proxy) == 0 && x->step == y->step &&
		    x->turn == y->turn && x->conn == y->conn &&
		    x->exchange == y->exchange && x->cand == y->cand)
			continue;
		put_step(sa, sizeof(sa), "the run", x);
		put_step(sb, sizeof(sb), "this replay", y);
		snprintf(out, outlen, "left the run's at step %" PRIu64 " of "
		    "proxy %s: %s; %s", x->step, x->proxy, sa, sb);
		rc = 1;
		goto done;
	}
	if (a.n != b.n) {
		snprintf(out, outlen, "the same for %zu steps, then %s took %zu more",
		    i, a.n > b.n ? "the run" : "this replay",
		    a.n > b.n ? a.n - b.n : b.n - a.n);
		rc = 1;
	} else
		snprintf(out, outlen, "the same as the run's, all %zu steps", a.n);
done:
	free(a.v);
	free(b.v);
	return rc;
}
