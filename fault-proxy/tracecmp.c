/*
 * The scheduled steps of fault traces (JSON lines, proxy.h's
 * proxy_trace_format), read back for people.
 *
 * Where a replay's schedule left the run's (issue 15 item 4): two traces
 * compared step by step for every scheduled proxy.  A step is the same when
 * the same exchange (turn, connection, exchange number) was admitted with
 * the same turns waiting; the first that is not is where the two runs
 * parted, and what each had waiting says why (a turn that had not arrived
 * in one of them: the system's own timing, outside the schedule).
 *
 * The interleaving itself (issue 15 item 5): one trace's steps in step
 * order, a line each, so a replay shows the race as it ran (two reads
 * before two writes).  The trace file is sorted by turn, which hides it.
 */
#include "fault-proxy/proxy.h"

#include <errno.h>
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
	char		 pg[16];		/* exchange kind, when no sql */
	char		 fault[24];
	bool		 has_waits;
	uint64_t	 waits_on;	/* turns holding the lock it waited on */
	char		 deadlock[16];	/* "soak" or "postgres": its victim */
	uint64_t	 wakes;		/* lock waiters its end woke together */
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
		if ((str = json_string_value(json_object_get(o, "pg"))) != NULL)
			snprintf(st->pg, sizeof(st->pg), "%s", str);
		if ((str = json_string_value(json_object_get(o, "fault"))) != NULL)
			snprintf(st->fault, sizeof(st->fault), "%s", str);
		if ((str = json_string_value(json_object_get(o, "waits_on"))) != NULL) {
			st->has_waits = true;
			st->waits_on = strtoull(str, NULL, 16);
		}
		if ((str = json_string_value(json_object_get(o, "deadlock"))) != NULL)
			snprintf(st->deadlock, sizeof(st->deadlock), "%s", str);
		if ((str = json_string_value(json_object_get(o, "wakes"))) != NULL)
			st->wakes = strtoull(str, NULL, 16);
		json_decref(o);
	}
	if (s->n > 1)		/* qsort's array must not be NULL, even empty */
		qsort(s->v, s->n, sizeof(*s->v), cmp_step);
	return 0;
}

const char *
proxy_turn_set(uint64_t cand, char *buf, size_t len)
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
	return buf;
}

static void
put_step(char *buf, size_t len, const char *who, const struct step *st)
{
	char	set[256];

	proxy_turn_set(st->cand, set, sizeof(set));
	snprintf(buf, len, "%s admitted turn %" PRId64 " (conn %" PRId64
	    ", exchange %" PRId64 "%s%s) with turns %s waiting%s%s%s", who,
	    st->turn, st->conn, st->exchange, st->sql[0] ? ": " : "", st->sql,
	    set, st->forced[0] ? " (forced by " : "", st->forced,
	    st->forced[0] ? ")" : "");
}

int
proxy_schedule_diff(const char *run, size_t runlen, const char *replay,
    size_t replaylen, const char *again, char *out, size_t outlen)
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
		snprintf(out, outlen, "%s's trace: line %d is not a JSON object",
		    again, line);
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
		put_step(sb, sizeof(sb), again, y);
		snprintf(out, outlen, "left the run's at step %" PRIu64 " of "
		    "proxy %s: %s; %s", x->step, x->proxy, sa, sb);
		rc = 1;
		goto done;
	}
	if (a.n != b.n) {
		snprintf(out, outlen, "the same for %zu steps, then %s took %zu more",
		    i, a.n > b.n ? "the run" : again,
		    a.n > b.n ? a.n - b.n : b.n - a.n);
		rc = 1;
	} else
		snprintf(out, outlen, "the same as the run's, all %zu steps", a.n);
done:
	free(a.v);
	free(b.v);
	return rc;
}

static int
digits(uint64_t v)
{
	int	d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* "   3  turn 2  UPDATE orders SET … [forced: arrival] [waits on turns {0}]" */
static void
show_step(FILE *f, const struct step *st, int wstep, int wturn)
{
	char	set[256];

	fprintf(f, "  %*" PRIu64 "  turn %-*" PRId64 "  ", wstep, st->step,
	    wturn, st->turn);
	if (st->sql[0] != '\0')
		fputs(st->sql, f);
	else
		fprintf(f, "(%s)", st->pg[0] ? st->pg : "no statement");
	if (st->forced[0] != '\0')
		fprintf(f, "  [forced: %s]", st->forced);
	if (st->has_waits) {
		proxy_turn_set(st->waits_on, set, sizeof(set));
		fprintf(f, "  [waits on turn%s %s]",
		    (st->waits_on & (st->waits_on - 1)) ? "s" : "", set);
	}
	if (st->deadlock[0] != '\0')
		fprintf(f, "  [deadlock victim: %s]", strcmp(st->deadlock,
		    "soak") == 0 ? "cancelled by soak" : "PostgreSQL's detector");
	if (st->wakes != 0)
		fprintf(f, "  [its end woke turns %s: PostgreSQL's order]",
		    proxy_turn_set(st->wakes, set, sizeof(set)));
	if (st->fault[0] != '\0' && strcmp(st->fault, "none") != 0)
		fprintf(f, "  [fault: %s]", st->fault);
	fputc('\n', f);
}

static const char *
sched_mode_of(const struct cfg *cfg, const char *proxy)
{
	size_t	i;

	for (i = 0; cfg != NULL && i < cfg->nproxies; i++) {
		const struct cfg_proxy	*p = &cfg->proxies[i];

		if (strcmp(p->name, proxy) != 0 || !p->schedule.enabled)
			continue;
		return p->schedule.mode == CFG_SCHED_RANDOM ? "random" : "pct";
	}
	return NULL;
}

char *
proxy_schedule_show(const char *trace, size_t len, const struct cfg *cfg,
    size_t limit, char *err)
{
	struct steps	 s = { 0 };
	FILE		*f = NULL;
	char		*text = NULL;
	size_t		 i, j, k, n, textlen;
	int		 line, wstep, wturn, ok = 0;

	if (steps_read(trace, len, &s, &line) == -1) {
		errf(err, "the trace: line %d is not a JSON object", line);
		goto out;
	}
	if ((f = open_memstream(&text, &textlen)) == NULL) {
		errf(err, "open_memstream: %s", strerror(errno));
		goto out;
	}
	/* s is sorted by (proxy, step): one block per proxy, s.v[i..j). */
	for (i = 0; i < s.n; i = j) {
		const char	*mode;
		int64_t		 maxturn = 0;

		for (j = i; j < s.n && strcmp(s.v[j].proxy, s.v[i].proxy) == 0; j++)
			if (s.v[j].turn > maxturn)
				maxturn = s.v[j].turn;
		n = j - i;
		mode = sched_mode_of(cfg, s.v[i].proxy);
		fprintf(f, "%sschedule of proxy %s (%zu step%s%s%s):\n",
		    i > 0 ? "\n" : "", s.v[i].proxy, n, n == 1 ? "" : "s",
		    mode ? ", " : "", mode ? mode : "");
		wstep = digits(s.v[j - 1].step);
		if (wstep < 3)
			wstep = 3;
		wturn = digits((uint64_t)maxturn);
		if (limit == 0 || n <= limit) {
			for (k = i; k < j; k++)
				show_step(f, &s.v[k], wstep, wturn);
			continue;
		}
		/* The start and the end: where a race usually opens and lands. */
		for (k = i; k < i + (limit + 1) / 2; k++)
			show_step(f, &s.v[k], wstep, wturn);
		fprintf(f, "  %*s  … %zu more step%s\n", wstep, "", n - limit,
		    n - limit == 1 ? "" : "s");
		for (k = j - limit / 2; k < j; k++)
			show_step(f, &s.v[k], wstep, wturn);
	}
	ok = fclose(f) == 0;
	f = NULL;
	if (!ok)
		errf(err, "writing the schedule: %s", strerror(errno));
out:
	if (f != NULL)
		fclose(f);
	free(s.v);
	if (!ok) {
		free(text);
		text = NULL;
	}
	return text;
}
