/*
 * Fault traces (JSON lines, proxy.h's proxy_trace_format) read back: for
 * people, for a comparison, and for a run's coverage.
 *
 * Where a replay's schedule left the run's (docs/faults.md "Schedules",
 * the replay's `schedule:` line): two traces compared step by step for each scheduled proxy, by
 * name, so two scheduled proxies never misalign.  A step is the same when
 * the same exchange (turn, lane, occurrence: the schedule's numbering, not
 * the connections' accept order, which a turn's threads race for) was
 * admitted with the same turns (and actors) waiting, the same statement, the same decision left to a
 * timeout (`forced`), the same lock wait PostgreSQL reported (`waits_on`)
 * and the same deadlock (`deadlock`); the first that is not is where the
 * two runs parted, and what each had waiting says why (a turn that had
 * not arrived in one of them: the system's own timing, outside the
 * schedule).  A trace cut to fit a result (worker/detail.c) ends with a
 * marker line that carries each proxy's whole schedule as a step count and
 * a digest, so a cut trace is still compared whole; one without them says
 * the comparison stopped at the cut, never "the same".
 *
 * The interleaving (docs/faults.md, `soak replay`'s timeline): one trace's steps in step order, a
 * line each, so a replay shows the race as it ran (two reads before two
 * writes).  The trace file is sorted by turn, which hides it.
 *
 * Coverage (docs/report.md "coverage"): what each proxy of one seed did, counted
 * over its whole trace file a line at a time.
 */
#include "fault-proxy/proxy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/seed.h"
#include "common/trace.h"
#include "common/util.h"

struct step {
	char		 proxy[64];
	/* a service's step (the turn it served in turn): its connections are
	 * the service's, numbered apart from the turn's own */
	char		 service[64];
	uint64_t	 step;
	int64_t		 turn, conn, exchange;
	/* what it was, by the schedule's numbering (gate.h "Actors"): the
	 * turn's lane and the key's occurrence; conn and exchange are the
	 * accept order's, which a turn's threads race for */
	int64_t		 lane, occ;
	uint64_t	 cand, acand;
	char		 sql[PROXY_SQL_LEN];
	/* an HTTP request line as keyed ("POST /reserve_seat"), for people
	 * only: what is compared stays the statement, else the kind */
	char		 req[PROXY_SQL_LEN];
	char		 forced[16];
	char		 pg[16];		/* exchange kind, when no sql */
	enum fault	 fault;
	enum trace_deadlock deadlock;
	bool		 has_waits;
	uint64_t	 waits_on;	/* turns holding the lock it waited on */
	uint64_t	 wakes;		/* lock waiters its end woke together */
	char		 plan[24];	/* under a plan: "unplanned", ... */
	uint64_t	 deferred;	/* lock-deferred: the plan's step */
	int		 line;		/* in its trace, for a doctored one */
};

/* One trace's steps, and whether lines of it were left out. */
struct steps {
	struct step	*v;
	size_t		 n, cap;
	bool		 cut;		/* it ends with a cut's marker line */
	char		 cutwhy[96];	/* the marker's words */
	json_t		*sched;		/* the marker's whole schedules, or NULL */
};

static void
steps_free(struct steps *s)
{
	free(s->v);
	json_decref(s->sched);
	memset(s, 0, sizeof(*s));
}

static int
cmp_step(const void *a, const void *b)
{
	const struct step	*x = a, *y = b;
	int			 c = strcmp(x->proxy, y->proxy);

	if (c != 0)
		return c;
	return x->step < y->step ? -1 : x->step > y->step;
}

static void
copy_str(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

/* A decoded trace line (common/trace.h) as a step of line lineno. */
static void
step_of(const struct trace_line *l, int lineno, struct step *st)
{
	memset(st, 0, sizeof(*st));
	st->line = lineno;
	st->step = l->step;
	copy_str(st->proxy, sizeof(st->proxy), l->proxy);
	copy_str(st->service, sizeof(st->service), l->service);
	st->turn = l->turn;
	st->conn = l->conn;
	st->exchange = l->exchange;
	st->lane = l->lane;
	st->occ = l->occ;
	st->cand = l->cand;
	st->acand = l->acand;
	copy_str(st->sql, sizeof(st->sql), l->sql);
	copy_str(st->req, sizeof(st->req), l->req);
	copy_str(st->forced, sizeof(st->forced), l->forced);
	copy_str(st->pg, sizeof(st->pg), l->pg);
	st->fault = l->fault;
	st->deadlock = l->deadlock;
	copy_str(st->plan, sizeof(st->plan), l->plan);
	st->deferred = l->deferred;
	st->wakes = l->wakes;
	st->has_waits = l->lock_wait;
	st->waits_on = l->waits_on;
}

/* What a step ran, for people: its statement, else its request line. */
static const char *
step_said(const struct step *st)
{
	return st->sql[0] != '\0' ? st->sql : st->req;
}

/* A trace line into st: -1 with err when it is not one soak wrote. */
static int
step_parse(const json_t *o, int lineno, struct step *st, char *err)
{
	struct trace_line	l;

	if (trace_line_parse(o, &l, err) == -1)
		return -1;
	step_of(&l, lineno, st);
	return 0;
}

/*
 * What makes a step the same in two runs, as one 64-bit key: everything
 * compared (the fault is the seed's alone, and bytes vary with data).  A
 * schedule's digest is the sum of its steps' keys, so it can be summed in
 * any order (the file is sorted by turn) and still tells one order from
 * another: a step's key holds its number.
 */
static uint64_t
step_key(const struct step *st)
{
	char	buf[512];
	int	n;

	n = snprintf(buf, sizeof(buf), "%s|%" PRIu64 "|%" PRId64 "|%" PRId64 "|%"
	    PRId64 "|%" PRIx64 ":%" PRIx64 "|%s|%s|%s|%d:%" PRIx64 "|%s", st->proxy,
	    st->step, st->turn, st->lane, st->occ, st->cand, st->acand, st->sql,
	    st->sql[0] ? "" : st->pg, st->forced, st->has_waits, st->waits_on,
	    trace_deadlock_name(st->deadlock));
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return seed_mix(fnv1a64(buf, (size_t)n));
}

/*
 * The lines of one trace (who: "the run", "this replay") into s, sorted
 * by (proxy, step); -1 with err on a line that is not a JSON object or a
 * scheduled line that is not a step.  A marker line (worker/detail.h)
 * sets s->cut.
 */
static int
steps_read(const char *text, size_t len, const char *who, struct steps *s,
    char *err, size_t errlen)
{
	const char	*p = text, *end = text + len, *nl;
	json_error_t	 je;
	int		 lineno = 0;

	while (p < end) {
		json_t		*o;
		const char	*cutwhy;
		char		 why[ERR_LEN];

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		lineno++;
		if (nl == p) {
			p = nl + 1;
			continue;
		}
		if ((o = json_loadb(p, (size_t)(nl - p), 0, &je)) == NULL ||
		    !json_is_object(o)) {
			json_decref(o);
			snprintf(err, errlen, "%s trace: line %d is not a JSON object",
			    who, lineno);
			return -1;
		}
		p = nl + 1;
		if ((cutwhy = json_string_value(json_object_get(o, "truncated"))) != NULL) {
			s->cut = true;
			snprintf(s->cutwhy, sizeof(s->cutwhy), "%s", cutwhy);
			if (json_is_object(json_object_get(o, "schedule"))) {
				json_decref(s->sched);
				s->sched = json_incref(json_object_get(o, "schedule"));
			}
			json_decref(o);
			continue;
		}
		if (json_object_get(o, "step") == NULL) {
			json_decref(o);
			continue;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
		}
		if (step_parse(o, lineno, &s->v[s->n], why) == -1) {
			json_decref(o);
			snprintf(err, errlen, "%s trace: line %d: %s", who, lineno, why);
			return -1;
		}
		s->n++;
		json_decref(o);
	}
	if (s->n > 1)		/* qsort's array must not be NULL, even empty */
		qsort(s->v, s->n, sizeof(*s->v), cmp_step);
	return 0;
}

static int
cmp_conn_order(const void *a, const void *b)
{
	const struct step	*x = *(const struct step *const *)a;
	const struct step	*y = *(const struct step *const *)b;
	int			 c = strcmp(x->proxy, y->proxy);

	if (c != 0)
		return c;
	if ((c = strcmp(x->service, y->service)) != 0)
		return c;
	if (x->service[0] == '\0' && x->turn != y->turn)
		return x->turn < y->turn ? -1 : 1;
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	return (x->exchange > y->exchange) - (x->exchange < y->exchange);
}

/*
 * A schedule soak wrote holds each step once, steps 1..N with none missing
 * unless the trace was cut, and the exchanges of one connection in the
 * order they were admitted (a client waits for each reply).  A trace that
 * breaks one of these was edited or damaged: -1 with err, rather than a
 * comparison of something else.
 */
static int
steps_check(const struct steps *s, const char *who, char *err, size_t errlen)
{
	const struct step	**by;
	size_t			  i, first = 0;
	int			  rc = 0;

	for (i = 0; i < s->n; i++) {
		const struct step	*x = &s->v[i];

		if (i > 0 && strcmp(x->proxy, s->v[i - 1].proxy) != 0)
			first = i;
		if (i > first && x->step == s->v[i - 1].step) {
			snprintf(err, errlen, "%s trace is not a schedule soak wrote: "
			    "step %" PRIu64 " of proxy %s is on lines %d and %d", who,
			    x->step, x->proxy, s->v[i - 1].line, x->line);
			return -1;
		}
		if (!s->cut && x->step != i - first + 1) {
			snprintf(err, errlen, "%s trace is not a schedule soak wrote: "
			    "step %zu of proxy %s is missing (the next is step %" PRIu64
			    ", on line %d)", who, i - first + 1, x->proxy, x->step,
			    x->line);
			return -1;
		}
	}
	by = xcalloc(s->n + 1, sizeof(*by));
	for (i = 0; i < s->n; i++)
		by[i] = &s->v[i];
	if (s->n > 1)
		qsort(by, s->n, sizeof(*by), cmp_conn_order);
	for (i = 1; i < s->n; i++) {
		const struct step	*x = by[i - 1], *y = by[i];

		if (strcmp(x->proxy, y->proxy) != 0 ||
		    strcmp(x->service, y->service) != 0 ||
		    (x->service[0] == '\0' && x->turn != y->turn) ||
		    x->conn != y->conn)
			continue;
		if (x->exchange == y->exchange || x->step > y->step) {
			snprintf(err, errlen, "%s trace is not a schedule soak wrote: "
			    "on proxy %s, turn %" PRId64 " conn %" PRId64 ", exchange %"
			    PRId64 " is step %" PRIu64 " (line %d) and exchange %" PRId64
			    " step %" PRIu64 " (line %d): steps out of order", who,
			    x->proxy, x->turn, x->conn, x->exchange, x->step, x->line,
			    y->exchange, y->step, y->line);
			rc = -1;
			break;
		}
	}
	free(by);
	return rc;
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

/* "soak cancelled it to break a deadlock", for a step's deadlock field. */
static const char *
deadlock_words(enum trace_deadlock d)
{
	switch (d) {
	case TRACE_DEADLOCK_SOAK:
		return "soak cancelled it to break a deadlock";
	case TRACE_DEADLOCK_POSTGRES:
		return "PostgreSQL's deadlock detector killed it";
	case TRACE_DEADLOCK_NONE:
	case TRACE_DEADLOCK_MAX:
		break;
	}
	return "";
}

static void
put_step(char *buf, size_t len, const char *who, const struct step *st)
{
	char	set[256], waits[300] = "", dl[96] = "";

	proxy_turn_set(st->cand, set, sizeof(set));
	if (st->has_waits) {
		if (st->waits_on != 0)
			proxy_turn_set(st->waits_on, waits + 200, 100);
		snprintf(waits, 200, ", then waited on a lock held by %s%s",
		    st->waits_on ? "turns " : "no turn of this proxy",
		    st->waits_on ? waits + 200 : "");
	}
	if (st->deadlock != TRACE_DEADLOCK_NONE)
		snprintf(dl, sizeof(dl), ", and %s", deadlock_words(st->deadlock));
	snprintf(buf, len, "%s admitted turn %" PRId64 " (conn %" PRId64
	    ", exchange %" PRId64 "%s%s%s%s) with turns %s waiting%s%s%s%s%s", who,
	    st->turn, st->conn, st->exchange, step_said(st)[0] || st->pg[0] ?
	    ": " : "", step_said(st)[0] || !st->pg[0] ? "" : "(",
	    step_said(st)[0] ? step_said(st) : st->pg,
	    step_said(st)[0] || !st->pg[0] ? "" : ")", set,
	    st->forced[0] ? " (forced by " : "", st->forced,
	    st->forced[0] ? ")" : "", waits, dl);
}

enum {
	D_EXCHANGE = 1, D_CAND = 2, D_SQL = 4, D_FORCED = 8, D_WAITS = 16,
	D_DEADLOCK = 32,
};

/* What differs between two steps of the same number, as D_ bits. */
static unsigned
step_differs(const struct step *x, const struct step *y)
{
	unsigned	d = 0;

	if (x->turn != y->turn || x->lane != y->lane || x->occ != y->occ)
		d |= D_EXCHANGE;
	if (x->cand != y->cand || x->acand != y->acand)
		d |= D_CAND;
	if (strcmp(x->sql, y->sql) != 0 || (x->sql[0] == '\0' &&
	    strcmp(x->pg, y->pg) != 0))
		d |= D_SQL;
	if (strcmp(x->forced, y->forced) != 0)
		d |= D_FORCED;
	if (x->has_waits != y->has_waits || x->waits_on != y->waits_on)
		d |= D_WAITS;
	if (x->deadlock != y->deadlock)
		d |= D_DEADLOCK;
	return d;
}

/* "the turns waiting and the lock wait", for D_ bits. */
static void
put_differs(char *buf, size_t len, unsigned d)
{
	static const char *const words[] = { "the exchange", "the turns waiting",
		"the statement", "the timeout that decided", "the lock wait",
		"the deadlock" };
	size_t	 i, n = 0, k = 0, o = 0;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		n += (d >> i) & 1;
	buf[0] = '\0';
	for (i = 0; i < sizeof(words) / sizeof(words[0]) && o < len; i++) {
		if (!((d >> i) & 1))
			continue;
		k++;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", k == 1 ? "" :
		    k == n ? " and " : ", ", words[i]);
	}
}

/* One proxy's steps in one trace. */
struct pside {
	const char		*who;		/* "the run", "this replay" */
	const struct step	*v;		/* kept steps, in step order */
	size_t			 n;
	size_t			 prefix;	/* steps 1..prefix are all kept */
	bool			 known;		/* total and digest: whole */
	uint64_t		 total, digest;
	const struct steps	*trace;
};

static void
pside_init(struct pside *p, const char *who, const struct steps *s,
    const char *name)
{
	const json_t	*m;
	const char	*hex;
	size_t		 i, j;

	memset(p, 0, sizeof(*p));
	p->who = who;
	p->trace = s;
	for (i = 0; i < s->n && strcmp(s->v[i].proxy, name) != 0; i++)
		;
	for (j = i; j < s->n && strcmp(s->v[j].proxy, name) == 0; j++)
		;
	p->v = s->v + i;
	p->n = j - i;
	while (p->prefix < p->n && p->v[p->prefix].step == p->prefix + 1)
		p->prefix++;
	if (!s->cut) {
		p->known = true;
		p->total = p->n;
		for (i = 0; i < p->n; i++)
			p->digest += step_key(&p->v[i]);
		return;
	}
	m = json_object_get(s->sched, name);
	hex = json_string_value(json_object_get(m, "digest"));
	if (json_is_integer(json_object_get(m, "steps")) &&
	    json_integer_value(json_object_get(m, "steps")) >= 0 &&
	    trace_key_parse(hex, &p->digest) == 0) {
		p->known = true;
		p->total = (uint64_t)json_integer_value(json_object_get(m, "steps"));
	}
}

enum pcmp { PC_NONE, PC_SAME, PC_UNKNOWN, PC_DIFF };

/* "the run's trace was cut (truncated: 12 more trace lines)" for the cut ones. */
static void
put_cuts(char *buf, size_t len, const struct pside *a, const struct pside *b)
{
	if (a->trace->cut && b->trace->cut)
		snprintf(buf, len, "both traces were cut (%s; %s)", a->trace->cutwhy,
		    b->trace->cutwhy);
	else
		snprintf(buf, len, "%s's trace was cut (%s)",
		    a->trace->cut ? a->who : b->who,
		    a->trace->cut ? a->trace->cutwhy : b->trace->cutwhy);
}

/*
 * What the schedule did not decide just before step i of either side: a
 * transaction's end that woke several lock waiters (PostgreSQL's order),
 * or a deadlock's victim.  "" when neither.
 */
static void
put_cause(char *buf, size_t len, const struct pside *a, const struct pside *b,
    size_t i)
{
	const struct pside	*sides[2] = { a, b };
	char			 set[256];
	size_t			 k, j;

	buf[0] = '\0';
	for (k = i; k-- > 0;)
		for (j = 0; j < 2; j++) {
			const struct step	*st = &sides[j]->v[k];

			if (st->wakes != 0) {
				snprintf(buf, len, " — after step %" PRIu64 " (turn %"
				    PRId64 "), whose end woke turns %s at once: which "
				    "took the lock first was PostgreSQL's order, not "
				    "the schedule's", st->step, st->turn,
				    proxy_turn_set(st->wakes, set, sizeof(set)));
				return;
			}
			if (st->deadlock != TRACE_DEADLOCK_NONE) {
				snprintf(buf, len, " — after a deadlock whose victim "
				    "was turn %" PRId64 " at step %" PRIu64 " (%s)",
				    st->turn, st->step, st->deadlock == TRACE_DEADLOCK_SOAK ?
				    "cancelled by soak" : "by PostgreSQL's detector, a "
				    "clock");
				return;
			}
		}
}

/*
 * One proxy's schedules compared; out gets the sentence (without the
 * "schedule:" of replay's line).  The same: *same_total its steps, and
 * *same_cut whether a trace was cut (the sentence then says so).
 */
static enum pcmp
proxy_cmp(const char *name, const struct pside *a, const struct pside *b,
    char *out, size_t len, uint64_t *same_total, bool *same_cut)
{
	char		 sa[640], sb[640], what[160], cuts[256], same[256], why[400];
	size_t		 i, m = a->prefix < b->prefix ? a->prefix : b->prefix;
	const struct pside *l;
	uint64_t	 more;
	unsigned	 d;
	bool		 a_ends, b_ends;

	if (a->n == 0 && b->n == 0 && (!a->known || a->total == 0) &&
	    (!b->known || b->total == 0))
		return PC_NONE;
	for (i = 0; i < m; i++) {
		if ((d = step_differs(&a->v[i], &b->v[i])) == 0)
			continue;
		put_step(sa, sizeof(sa), a->who, &a->v[i]);
		put_step(sb, sizeof(sb), b->who, &b->v[i]);
		put_differs(what, sizeof(what), d);
		put_cause(why, sizeof(why), a, b, i);
		/* cut to len, said whole by the trace files themselves */
		if (snprintf(out, len, "left the run's at step %" PRIu64 " of proxy %s: "
		    "%s; %s (they differ in %s)%s", a->v[i].step, name, sa, sb, what,
		    why) >= (int)len && len > 4)
			memcpy(out + len - 4, "...", 4);
		return PC_DIFF;
	}
	if (a->known && b->known && a->total == b->total && a->digest == b->digest) {
		*same_total = a->total;
		*same_cut = a->trace->cut || b->trace->cut;
		if (*same_cut) {
			put_cuts(cuts, sizeof(cuts), a, b);
			snprintf(out, len, "all %" PRIu64 " steps of proxy %s (%s; the "
			    "steps past the cut were compared by the digest of the whole "
			    "schedule)", a->total, name, cuts);
		} else
			snprintf(out, len, "all %" PRIu64 " steps of proxy %s", a->total,
			    name);
		return PC_SAME;
	}
	/* One ended where the other went on: a turn did less, or more. */
	a_ends = a->known && a->total == m;
	b_ends = b->known && b->total == m;
	l = NULL;
	if (a_ends && !b_ends && (b->known ? b->total > m : b->n > m))
		l = b;
	else if (b_ends && !a_ends && (a->known ? a->total > m : a->n > m))
		l = a;
	if (l != NULL) {
		more = l->known ? l->total - m : l->n - m;
		if (m < l->prefix) {
			put_step(sa, sizeof(sa), "it", &l->v[m]);
			snprintf(out, len, "the same for %zu step%s, then %s took %s%"
			    PRIu64 " more (the first, step %" PRIu64 " of proxy %s: %s)",
			    m, m == 1 ? "" : "s", l->who, l->known ? "" : "at least ",
			    more, l->v[m].step, name, sa);
		} else
			snprintf(out, len, "the same for %zu step%s, then %s took %s%"
			    PRIu64 " more (of proxy %s)", m, m == 1 ? "" : "s", l->who,
			    l->known ? "" : "at least ", more, name);
		return PC_DIFF;
	}
	put_cuts(cuts, sizeof(cuts), a, b);
	if (a->known && b->known) {
		snprintf(same, sizeof(same), "the same for the first %zu step%s of "
		    "proxy %s, which both traces kept, and different after them",
		    m, m == 1 ? "" : "s", name);
		snprintf(out, len, "%s (%s; the run took %" PRIu64 " steps, %s %"
		    PRIu64 ", and the digests of their whole schedules differ)",
		    m > 0 ? same : "", cuts, a->total, b->who, b->total);
		if (m == 0)
			snprintf(out, len, "different on proxy %s past where the "
			    "traces were kept (%s; the run took %" PRIu64 " steps, %s %"
			    PRIu64 ", and the digests of their whole schedules differ)",
			    name, cuts, a->total, b->who, b->total);
		return PC_DIFF;
	}
	if (m == 0)
		snprintf(out, len, "not compared on proxy %s: %s before its first "
		    "step, without the digest of its whole schedule", name, cuts);
	else
		snprintf(out, len, "the same for the first %zu step%s of proxy %s, "
		    "as far as the traces were kept (%s, without the digest of its "
		    "whole schedule): the rest was not compared", m, m == 1 ? "" :
		    "s", name, cuts);
	return PC_UNKNOWN;
}

/* Every proxy named in either trace, steps or marker, sorted, once. */
static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t
proxy_names(const struct steps *a, const struct steps *b, char ***out)
{
	const struct steps	*sides[2] = { a, b };
	char			**v = NULL;
	size_t			  n = 0, cap = 0, i, k, j;
	const char		 *key;
	json_t			 *val;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < sides[k]->n; i++) {
			if (n == cap) {
				cap = cap ? cap * 2 : 8;
				v = xreallocarray(v, cap, sizeof(*v));
			}
			v[n++] = sides[k]->v[i].proxy;
		}
		json_object_foreach(sides[k]->sched, key, val) {
			if (n == cap) {
				cap = cap ? cap * 2 : 8;
				v = xreallocarray(v, cap, sizeof(*v));
			}
			v[n++] = UNCONST(key);
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_name);
	for (i = j = 0; i < n; i++)
		if (j == 0 || strcmp(v[j - 1], v[i]) != 0)
			v[j++] = v[i];
	*out = v;
	return j;
}

int
proxy_schedule_diff(const char *run, size_t runlen, const char *replay,
    size_t replaylen, const char *again, char *out, size_t outlen)
{
	struct steps	 a = { 0 }, b = { 0 };
	struct pside	 pa, pb;
	char		**names = NULL, againw[64];
	size_t		 nnames, i, k, nsame = 0, o = 0;
	enum pcmp	*res = NULL;
	char		(*words)[1536] = NULL;
	uint64_t	*totals = NULL;
	bool		*cuts = NULL;
	int		 rc = 0, first = -1;

	out[0] = '\0';
	snprintf(againw, sizeof(againw), "%s's", again);
	if (steps_read(run, runlen, "the run's", &a, out, outlen) == -1 ||
	    steps_read(replay, replaylen, againw, &b, out, outlen) == -1 ||
	    steps_check(&a, "the run's", out, outlen) == -1 ||
	    steps_check(&b, againw, out, outlen) == -1) {
		rc = -1;
		goto done;
	}
	nnames = proxy_names(&a, &b, &names);
	res = xcalloc(nnames + 1, sizeof(*res));
	words = xcalloc(nnames + 1, sizeof(*words));
	totals = xcalloc(nnames + 1, sizeof(*totals));
	cuts = xcalloc(nnames + 1, sizeof(*cuts));
	for (i = 0; i < nnames; i++) {
		pside_init(&pa, "the run", &a, names[i]);
		pside_init(&pb, again, &b, names[i]);
		res[i] = proxy_cmp(names[i], &pa, &pb, words[i], sizeof(words[i]),
		    &totals[i], &cuts[i]);
		if (res[i] == PC_SAME)
			nsame++;
		if (res[i] == PC_DIFF && first == -1)
			first = (int)i;
	}
	/* A difference names the sentence; else a comparison cut short. */
	for (i = 0; first == -1 && i < nnames; i++)
		if (res[i] == PC_UNKNOWN)
			first = (int)i;
	if (first == -1) {
		/* The same everywhere; or nothing was scheduled: "" then. */
		for (i = 0, k = 0; i < nnames && o < outlen; i++) {
			if (res[i] != PC_SAME)
				continue;
			/* One proxy: "all 24 steps", without its name, as ever. */
			if (nsame == 1 && !cuts[i])
				snprintf(words[i], sizeof(words[i]), "all %" PRIu64
				    " steps", totals[i]);
			k++;
			o += (size_t)snprintf(out + o, outlen - o, "%s%s",
			    k == 1 ? "the same as the run's, " : k == nsame ? " and " : ", ",
			    words[i]);
		}
		goto done;
	}
	rc = res[first] == PC_DIFF ? 1 : 2;
	o += (size_t)snprintf(out, outlen, "%s", words[first]);
	for (i = 0; i < nnames && o < outlen; i++) {
		if ((int)i == first || res[i] == PC_NONE)
			continue;
		o += (size_t)snprintf(out + o, outlen - o, "; %s%s", res[i] == PC_SAME ?
		    "the same: " : res[i] == PC_DIFF ? "also " : "", words[i]);
	}
done:
	free(res);
	free(words);
	free(totals);
	free(cuts);
	free(names);
	steps_free(&a);
	steps_free(&b);
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
	/* an HTTP proxy's step by its request line, as keyed */
	if (step_said(st)[0] != '\0')
		fputs(step_said(st), f);
	else
		fprintf(f, "(%s)", st->pg[0] ? st->pg : "no statement");
	if (st->forced[0] != '\0')
		fprintf(f, "  [forced: %s]", st->forced);
	if (st->has_waits) {
		proxy_turn_set(st->waits_on, set, sizeof(set));
		fprintf(f, "  [waits on turn%s %s]",
		    (st->waits_on & (st->waits_on - 1)) ? "s" : "", set);
	}
	if (st->deadlock != TRACE_DEADLOCK_NONE)
		fprintf(f, "  [deadlock victim: %s]", st->deadlock ==
		    TRACE_DEADLOCK_SOAK ? "cancelled by soak" : "PostgreSQL's detector");
	if (st->wakes != 0)
		fprintf(f, "  [its end woke turns %s: PostgreSQL's order]",
		    proxy_turn_set(st->wakes, set, sizeof(set)));
	if (st->plan[0] != '\0' && st->deferred != 0)
		fprintf(f, "  [%s: the plan's step %" PRIu64 " waited on its lock]",
		    st->plan, st->deferred);
	else if (st->plan[0] != '\0')
		fprintf(f, "  [%s]", st->plan);
	if (st->fault != FAULT_NONE)
		fprintf(f, "  [fault: %s]", fault_name(st->fault));
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
	int		 wstep, wturn, ok = 0;

	if (steps_read(trace, len, "the", &s, err, ERR_LEN) == -1)
		goto out;
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
	steps_free(&s);
	if (!ok) {
		free(text);
		text = NULL;
	}
	return text;
}

/* ---- coverage ---- */

/* What one proxy did in one seed. */
struct cov_proxy {
	char		 name[64];
	uint64_t	 exchanges, latency, steps, lock_waits, serialized;
	json_t		*faults, *forced, *deadlocks;	/* {"kind": count} */
	json_t		*bypassed;	/* {"service": its exchanges with bypass} */
	json_t		*idle;		/* {"turn": arrival decisions without it} */
	uint32_t	*conns;		/* per turn: its highest conn + 1 */
	size_t		 nturns;
	json_t		*svc_conns;	/* {"service": its highest conn + 1} */
	uint64_t	 digest;
};

struct proxy_cov {
	struct cov_proxy	*v;
	size_t			 n;
	int			 lineno;
};

struct proxy_cov *
proxy_cov_new(void)
{
	return xcalloc(1, sizeof(struct proxy_cov));
}

void
proxy_cov_free(struct proxy_cov *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		json_decref(c->v[i].faults);
		json_decref(c->v[i].forced);
		json_decref(c->v[i].deadlocks);
		json_decref(c->v[i].idle);
		json_decref(c->v[i].bypassed);
		json_decref(c->v[i].svc_conns);
		free(c->v[i].conns);
	}
	free(c->v);
	free(c);
}

static struct cov_proxy *
cov_proxy(struct proxy_cov *c, const char *name)
{
	struct cov_proxy	*p;
	size_t			 i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->v[i].name, name) == 0)
			return &c->v[i];
	c->v = xreallocarray(c->v, c->n + 1, sizeof(*c->v));
	p = &c->v[c->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->faults = json_object();
	p->forced = json_object();
	p->deadlocks = json_object();
	p->idle = json_object();
	p->bypassed = json_object();
	p->svc_conns = json_object();
	return p;
}

static void
count_kind(json_t *o, const char *kind)
{
	json_t	*v = json_object_get(o, kind);

	json_object_set_new(o, kind, json_integer(v ? json_integer_value(v) + 1 : 1));
}

/* Each turn of a forced step's "idle" (a hex mask), counted by its number. */
static void
count_idle(json_t *o, const char *hex)
{
	uint64_t	mask;
	char		*end, turn[16];
	int		 t;

	if (hex == NULL || *hex == '\0')
		return;
	mask = strtoull(hex, &end, 16);
	if (*end != '\0')
		return;
	for (t = 0; t < 64; t++)
		if (mask >> t & 1) {
			snprintf(turn, sizeof(turn), "%d", t);
			count_kind(o, turn);
		}
}

int
proxy_cov_line(struct proxy_cov *c, const char *line, size_t len, char *err)
{
	json_t			*o;
	json_error_t		 je;
	struct cov_proxy	*p;
	struct trace_line	 l;
	struct step		 st;
	char			 why[ERR_LEN];
	int			 rc = 0;

	c->lineno++;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len == 0)
		return 0;
	if ((o = json_loadb(line, len, 0, &je)) == NULL || !json_is_object(o)) {
		json_decref(o);
		return errf(err, "the trace: line %d is not a JSON object", c->lineno);
	}
	/* A cut's marker, or a line of no proxy: nothing a proxy did. */
	if (json_object_get(o, "proxy") == NULL)
		goto out;
	if (trace_line_parse(o, &l, why) == -1) {
		rc = errf(err, "the trace: line %d: %s", c->lineno, why);
		goto out;
	}
	p = cov_proxy(c, l.proxy);
	p->exchanges++;
	if (l.fault != FAULT_NONE)
		count_kind(p->faults, fault_name(l.fault));
	if (l.latency_ms > 0)
		p->latency++;
	/* turns are at most 1024 (config), connections counted per turn; a
	 * service's per service (its lines' turn is the turn each served) */
	if (l.service != NULL && l.conn < UINT32_MAX) {
		json_int_t	had = json_integer_value(json_object_get(p->svc_conns,
				    l.service));

		if (had < (json_int_t)l.conn + 1)
			json_object_set_new(p->svc_conns, l.service,
			    json_integer((json_int_t)l.conn + 1));
	} else if (l.turn < 4096 && l.conn < UINT32_MAX) {
		if ((size_t)l.turn >= p->nturns) {
			p->conns = xreallocarray(p->conns, (size_t)l.turn + 1,
			    sizeof(*p->conns));
			memset(p->conns + p->nturns, 0,
			    ((size_t)l.turn + 1 - p->nturns) * sizeof(*p->conns));
			p->nturns = (size_t)l.turn + 1;
		}
		if (p->conns[l.turn] < l.conn + 1)
			p->conns[l.turn] = l.conn + 1;
	}
	/* a request a front let go by the clock: a turnstile's takes no step */
	if (l.served_forced)
		count_kind(p->forced, "arrival");
	if (l.step > 0) {
		step_of(&l, c->lineno, &st);
		p->steps++;
		p->digest += step_key(&st);
		if (st.forced[0] != '\0')
			count_kind(p->forced, st.forced);
		if (strcmp(st.forced, "arrival") == 0)
			count_idle(p->idle, json_string_value(json_object_get(o,
			    "idle")));
		/* worker/explore.c's serialized_steps, on one trace: a request
		 * that is not a PostgreSQL statement admitted while another
		 * turn's waited is held to its reply, so the service behind
		 * the proxy never ran two at once (not one let go once the
		 * service was quiet: "served") */
		if (l.pg == NULL && !l.served &&
		    (l.cand & ~((uint64_t)1 << (l.turn & 63))) != 0)
			p->serialized++;
	}
	if (l.service != NULL && l.bypass)
		count_kind(p->bypassed, l.service);
	if (l.lock_wait)
		p->lock_waits++;
	if (l.deadlock != TRACE_DEADLOCK_NONE)
		count_kind(p->deadlocks, trace_deadlock_name(l.deadlock));
out:
	json_decref(o);
	return rc;
}

int
proxy_cov_file(struct proxy_cov *c, const char *path, char *err)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;
	int	 rc = 0;

	if ((f = fopen(path, "re")) == NULL)
		return errf(err, "cannot open \"%s\": %s", path, strerror(errno));
	while (rc == 0 && (n = getline(&line, &cap, f)) != -1)
		rc = proxy_cov_line(c, line, (size_t)n, err);
	if (rc == 0 && ferror(f))
		rc = errf(err, "cannot read \"%s\": %s", path, strerror(errno));
	fclose(f);
	free(line);
	return rc;
}

static void
set_nonzero(json_t *o, const char *key, uint64_t v)
{
	if (v > 0)
		json_object_set_new(o, key, json_integer((json_int_t)v));
}

static void
set_kinds(json_t *o, const char *key, json_t *kinds)
{
	if (json_object_size(kinds) > 0)
		json_object_set(o, key, kinds);
}

json_t *
proxy_cov_json(const struct proxy_cov *c)
{
	json_t	*out = json_object(), *p;
	size_t	 i, t;

	for (i = 0; i < c->n; i++) {
		const struct cov_proxy	*x = &c->v[i];
		uint64_t		 conns = 0;

		const char		*svc;
		json_t			*v;

		for (t = 0; t < x->nturns; t++)
			conns += x->conns[t];
		json_object_foreach(x->svc_conns, svc, v)
			conns += (uint64_t)json_integer_value(v);
		p = json_object();
		set_nonzero(p, "exchanges", x->exchanges);
		set_nonzero(p, "connections", conns);
		set_kinds(p, "faults", x->faults);
		set_nonzero(p, "latency", x->latency);
		set_nonzero(p, "steps", x->steps);
		set_kinds(p, "forced", x->forced);
		set_kinds(p, "idle", x->idle);
		set_nonzero(p, "lock_waits", x->lock_waits);
		set_kinds(p, "deadlocks", x->deadlocks);
		set_kinds(p, "bypassed", x->bypassed);
		set_nonzero(p, "serialized", x->serialized);
		json_object_set_new(out, x->name, p);
	}
	return out;
}

json_t *
proxy_cov_schedule(const struct proxy_cov *c)
{
	json_t	*out = json_object();
	size_t	 i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].steps > 0)
			json_object_set_new(out, c->v[i].name, json_pack("{s:I, s:o}",
			    "steps", (json_int_t)c->v[i].steps, "digest",
			    json_sprintf("%016" PRIx64, c->v[i].digest)));
	return out;
}
