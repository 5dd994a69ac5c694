/*
 * report.html's pictures over time (coordinator/report_html_int.h): one
 * failing seed's swimlane and schedule, and the run's worker timeline.
 * SVG, one element per thing drawn, each with its <title> for hover; the
 * coordinates are a 1000-wide viewBox that CSS scales to the page.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fault.h"
#include "common/msg.h"
#include "common/trace.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/journal.h"
#include "coordinator/report_html_int.h"

#define VW		1000	/* viewBox width */
#define LX		86	/* the plot's left edge: lane labels before it */
#define PW		(VW - LX - 14)	/* the plot's width */
#define LANE_H		22
#define TOP		24	/* the time axis above the lanes */

/* --- shared -------------------------------------------------------------- */

/* A round step for a time axis of span ms, about n ticks. */
static int64_t
tick_step(int64_t span, int n)
{
	static const int64_t	m[] = { 1, 2, 5 };
	int64_t			scale = 1;
	size_t			i;

	if (span <= 0)
		return 1;
	for (;;) {
		for (i = 0; i < nitems(m); i++)
			if (span / (m[i] * scale) <= n)
				return m[i] * scale;
		scale *= 10;
	}
}

static double
xat(int64_t t, int64_t span)
{
	return LX + (span > 0 ? (double)t * PW / (double)span : 0);
}

/* The time axis over [0, span] ms, with grid lines down to height. */
static void
time_axis(struct rh *h, int64_t span, int height, int64_t offset_label)
{
	int64_t	step = tick_step(span, 8), t;
	char	d[48];

	for (t = 0; t <= span; t += step) {
		double	x = xat(t, span);

		/* the last label ends at the edge rather than past it */
		rh_put(h, "<line class=grd x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
		    "<text class=ax x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
		    x, TOP - 6, x, height, x, TOP - 10, x > VW - 40 ? "end" : "middle",
		    rh_dur(t + offset_label, d, sizeof(d)));
	}
}

/*
 * A fault mark at (x, y) with its title still open: the caller writes the
 * title's text and then mark_end.  Shapes differ by kind (common/fault.h;
 * an exchange only delayed has a latency mark), so the marks read without
 * colour too.
 */
static void
mark_begin(struct rh *h, enum fault f, bool delayed, double x, double y,
    const char *extra)
{
	switch (f) {
	case FAULT_NONE:
		if (delayed)
			rh_put(h, "<path class=\"mk f-latency%s\" d=\"M%.1f %.1fl5 9h-10z\">",
			    extra, x, y - 5);
		else
			rh_put(h, "<circle class=\"mk f-none%s\" cx=\"%.1f\" cy=\"%.1f\" "
			    "r=\"3.5\">", extra, x, y);
		break;
	case FAULT_LOST_REPLY:
		rh_put(h, "<path class=\"mk f-lost_reply%s\" d=\"M%.1f %.1fl6 6-6 6-6-6z\">",
		    extra, x, y - 6);
		break;
	case FAULT_RESET:
		rh_put(h, "<rect class=\"mk f-reset%s\" x=\"%.1f\" y=\"%.1f\" width=\"9\" "
		    "height=\"9\">", extra, x - 4.5, y - 4.5);
		break;
	case FAULT_DUPLICATE:
		rh_put(h, "<path class=\"mk f-duplicate%s\" d=\"M%.1f %.1fa3.5 3.5 0 1 0 7 0"
		    "a3.5 3.5 0 1 0-7 0m4 0a3.5 3.5 0 1 0 7 0a3.5 3.5 0 1 0-7 0\">", extra,
		    x - 5.5, y);
		break;
	case FAULT_BLACKHOLE:
		rh_put(h, "<circle class=\"mk f-blackhole%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5.5\">",
		    extra, x, y);
		break;
	case FAULT_STATUS:
		/* a triangle upside down: the proxy's own answer */
		rh_put(h, "<path class=\"mk f-status%s\" d=\"M%.1f %.1fh11l-5.5 10z\">",
		    extra, x - 5.5, y - 5);
		break;
	case FAULT_STREAM_CUT:
		/* a bar cut in two */
		rh_put(h, "<path class=\"mk f-stream_cut%s\" d=\"M%.1f %.1fh5v5h-5zm7 0"
		    "h5v5h-5z\">", extra, x - 6, y - 2.5);
		break;
	case FAULT_STREAM_STALL:
		/* a pause */
		rh_put(h, "<path class=\"mk f-stream_stall%s\" d=\"M%.1f %.1fh3.5v11h-3.5z"
		    "m5.5 0h3.5v11h-3.5z\">", extra, x - 4.5, y - 5.5);
		break;
	case FAULT_CLOSE_AFTER:
	case FAULT_MAX:
		rh_put(h, "<rect class=\"mk f-close_after%s\" x=\"%.1f\" y=\"%.1f\" width=\"4\" "
		    "height=\"12\">", extra, x - 2, y - 6);
		break;
	}
	rh_put(h, "<title>");
}

static void
mark_end(struct rh *h, enum fault f, bool delayed)
{
	const char	*tag = "circle";

	switch (f) {
	case FAULT_NONE:
		tag = delayed ? "path" : "circle";
		break;
	case FAULT_LOST_REPLY:
	case FAULT_DUPLICATE:
	case FAULT_STATUS:
	case FAULT_STREAM_CUT:
	case FAULT_STREAM_STALL:
		tag = "path";
		break;
	case FAULT_RESET:
	case FAULT_CLOSE_AFTER:
	case FAULT_MAX:
		tag = "rect";
		break;
	case FAULT_BLACKHOLE:
		break;
	}
	rh_put(h, "</title></%s>\n", tag);
}

/* A mark's name in the legend. */
static const char *
mark_label(enum fault f, bool delayed)
{
	switch (f) {
	case FAULT_NONE:
		return delayed ? "delayed" : "no fault";
	case FAULT_LOST_REPLY:
		return "lost reply";
	case FAULT_RESET:
		return "reset";
	case FAULT_DUPLICATE:
		return "duplicate";
	case FAULT_BLACKHOLE:
		return "blackhole";
	case FAULT_STATUS:
		return "error status";
	case FAULT_STREAM_CUT:
		return "stream cut";
	case FAULT_STREAM_STALL:
		return "stream stalled";
	case FAULT_CLOSE_AFTER:
	case FAULT_MAX:
		break;
	}
	return "closed after";
}

void
rh_fault_legend(struct rh *h)
{
	unsigned	i;

	/* no fault, delayed, then every fault kind */
	rh_put(h, "<div class=legend>exchanges: ");
	for (i = 0; i < FAULT_MAX + 1; i++) {
		enum fault	f = i < 2 ? FAULT_NONE : (enum fault)(i - 1);
		bool		delayed = i == 1;

		rh_put(h, "<span><svg width=\"16\" height=\"14\" viewBox=\"0 0 16 14\">");
		mark_begin(h, f, delayed, 8, 7, "");
		rh_put(h, "%s", mark_label(f, delayed));
		mark_end(h, f, delayed);
		rh_put(h, "</svg>%s</span>", mark_label(f, delayed));
	}
	rh_put(h, "<br>turns: <span><i class=\"sw t-ok\"></i>ok</span><span><i class=\"sw "
	    "t-error\"></i>exited non-zero</span><span><i class=\"sw t-signal\"></i>killed "
	    "by a signal</span><span><i class=\"sw t-timeout\"></i>timed out</span>"
	    "<span><i class=\"sw chk\"></i>invariant check</span><span><i class=\"sw chk "
	    "bad\"></i>check that found a broken invariant</span>"
	    "<span><svg width=\"26\" height=\"10\" viewBox=\"0 0 26 10\"><line class=wait "
	    "x1=\"1\" y1=\"5\" x2=\"25\" y2=\"5\"/></svg>waits on a lock held by</span></div>\n");
}

/* --- one seed -------------------------------------------------------------- */

struct xch {
	json_t		*rec;		/* the trace line */
	struct trace_line l;		/* rec decoded (its strings rec's) */
	const char	*proxy;
	int		 turn;
	int64_t		 conn, exch, step;
	int64_t		 t_begin, t_admit, t_end;	/* -1: not recorded */
	double		 x;
};

struct lane_seed {
	json_t		*result;	/* result.json */
	json_t		*turns;		/* its "turns" */
	struct xch	*x;
	size_t		 nx, capx;
	bool		 cut;		/* the trace was cut (marker line) */
	size_t		 bad;		/* lines that are not soak's */
	size_t		 bad_line;	/* the first one's number */
	char		 bad_why[ERR_LEN];	/* and what is wrong with it */
	size_t		 cursor;	/* timing_line's next candidate */
	bool		 timed;		/* some exchange has times */
	int		 nlanes;	/* turns 0..nlanes-1 */
	bool		 setup;		/* turn -1 has a lane */
	int64_t		 span;
};

static int
lane_y(const struct lane_seed *s, int turn)
{
	return TOP + LANE_H * (turn < 0 ? 0 : turn + (s->setup ? 1 : 0));
}

/*
 * The lines of a JSONL file, at most cap: fn gets each object (borrowed)
 * with its line number, and NULL for a line that is not one.
 */
static void
each_line(const char *path, size_t cap, void (*fn)(json_t *, size_t, void *),
    void *arg)
{
	FILE		*f = fopen(path, "re");
	char		*line = NULL;
	size_t		 lcap = 0, n = 0, lineno = 0;
	ssize_t		 len;
	json_t		*o;

	if (f == NULL)
		return;
	while ((len = getline(&line, &lcap, f)) != -1 && n < cap) {
		lineno++;
		if (len == 1 && line[0] == '\n')
			continue;
		o = json_loadb(line, (size_t)len, 0, NULL);
		fn(json_is_object(o) ? o : NULL, lineno, arg);
		n++;
		json_decref(o);
	}
	free(line);
	fclose(f);
}

/* A trace line, read by the trace's own decoder (common/trace.h): one
 * that is not soak's is counted, said once, and not drawn. */
static void
trace_line(json_t *o, size_t lineno, void *arg)
{
	struct lane_seed	*s = arg;
	struct trace_line	 l;
	struct xch		*x;
	char			 why[ERR_LEN] = "not a JSON object";

	if (o != NULL && json_object_get(o, "truncated") != NULL &&
	    json_object_get(o, "proxy") == NULL) {
		s->cut = true;
		return;
	}
	if (o == NULL || trace_line_parse(o, &l, why) == -1) {
		if (s->bad++ == 0) {
			s->bad_line = lineno;
			snprintf(s->bad_why, sizeof(s->bad_why), "%s", why);
		}
		return;
	}
	if (s->nx == s->capx) {
		s->capx = s->capx ? s->capx * 2 : 64;
		s->x = xreallocarray(s->x, s->capx, sizeof(*s->x));
	}
	x = &s->x[s->nx++];
	memset(x, 0, sizeof(*x));
	x->rec = json_incref(o);
	x->l = l;
	x->proxy = l.proxy;
	x->turn = l.turn;
	x->conn = l.conn;
	x->exch = l.exchange;
	x->step = l.step;
	x->t_begin = x->t_admit = x->t_end = -1;
}

/*
 * timing.jsonl: {"proxy","turn","conn","exchange","t_begin_ms","t_admit_ms",
 * "t_end_ms"}.  The search starts after the last match, so lines in the
 * trace's own order cost one compare each.
 */
static void
timing_line(json_t *o, size_t lineno, void *arg)
{
	struct lane_seed	*s = arg;
	const char		*p = jstr(o, "proxy");
	size_t			 k, i;

	if (o == NULL || p == NULL || s->nx == 0)
		return;
	for (k = 0; k < s->nx; k++) {
		struct xch	*x = &s->x[i = (s->cursor + k) % s->nx];

		if (x->turn == jint(o, "turn", -2) && x->conn == jint(o, "conn", -2) &&
		    x->exch == jint(o, "exchange", -2) && strcmp(x->proxy, p) == 0) {
			x->t_begin = jint(o, "t_begin_ms", -1);
			x->t_admit = jint(o, "t_admit_ms", -1);
			x->t_end = jint(o, "t_end_ms", -1);
			if (x->t_begin >= 0 || x->t_admit >= 0)
				s->timed = true;
			s->cursor = i + 1;
			return;
		}
	}
}

static const char *const known_keys[] = {
	"proxy", "turn", "conn", "exchange", "fault", "latency_ms", "bytes_up",
	"bytes_down", "upstream_saw", "client_got_reply", "pg", "sql", "tx", "note",
	"step", "cand", "forced", "waits_on", "req", "request", "round", "key",
	"occ", "plan", "deferred", "deadlock", "wakes", "closed",
};

/* A field of any type, as text ("" for none). */
static void
put_field(struct rh *h, const json_t *v)
{
	char	*s;

	if (json_is_string(v)) {
		rh_textn(h, json_string_value(v), 300);
		return;
	}
	if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL) {
		rh_textn(h, s, 300);
		free(s);
	}
}

static void
put_turnset(struct rh *h, uint64_t mask)
{
	int	t, n = 0;

	rh_put(h, "{");
	for (t = 0; t < 64; t++)
		if (mask & ((uint64_t)1 << t))
			rh_put(h, "%s%d", n++ ? "," : "", t);
	rh_put(h, "}");
}

/* What an exchange was, for its title. */
static void
xch_title(struct rh *h, const struct xch *x)
{
	const json_t	*r = x->rec, *v;
	const char	*k, *what = x->l.sql;
	size_t		 i;

	if (x->step > 0)
		rh_put(h, "step %" PRId64 ": ", x->step);
	if (json_is_integer(json_object_get(r, "round")))
		rh_put(h, "round %" PRId64 " ", jint(r, "round", 0));
	rh_put(h, "turn %d · ", x->turn);
	rh_text(h, x->proxy);
	rh_put(h, " conn %" PRId64 " exchange %" PRId64 ": ", x->conn, x->exch);
	rh_text(h, fault_name(x->l.fault));
	if (x->l.status != 0)
		rh_put(h, " %d", x->l.status);
	if (x->l.after != 0)
		rh_put(h, " after %" PRIu32 " event%s", x->l.after,
		    x->l.after == 1 ? "" : "s");
	if (x->l.fault == FAULT_STREAM_STALL)
		rh_put(h, " for %" PRId64 " ms", x->l.stall_ms);
	if (jint(r, "latency_ms", 0) > 0)
		rh_put(h, ", +%" PRId64 " ms", jint(r, "latency_ms", 0));
	if (json_is_true(json_object_get(r, "upstream_saw")) &&
	    json_is_false(json_object_get(r, "client_got_reply")))
		rh_put(h, " — the upstream got it, the client got no reply");
	else if (json_is_false(json_object_get(r, "upstream_saw")))
		rh_put(h, " — it never reached the upstream");
	/* the statement, else the HTTP request line (req; request before) */
	if (what == NULL)
		what = x->l.req;
	if (what == NULL)
		what = jstr(r, "request");
	if (what != NULL) {
		rh_put(h, "\n");
		rh_textn(h, what, 300);
	} else if (jstr(r, "pg")) {
		rh_put(h, " (");
		rh_text(h, jstr(r, "pg"));
		rh_put(h, ")");
	}
	if ((v = json_object_get(r, "key")) != NULL) {
		rh_put(h, "\nstatement key ");
		put_field(h, v);
		if ((v = json_object_get(r, "occ")) != NULL) {
			rh_put(h, ", occurrence ");
			put_field(h, v);
		}
	}
	if ((v = json_object_get(r, "plan")) != NULL && !json_is_null(v)) {
		rh_put(h, "\nthe plan: ");
		put_field(h, v);
	}
	if ((v = json_object_get(r, "deferred")) != NULL && !json_is_false(v) &&
	    !json_is_null(v)) {
		rh_put(h, "\ndeferred");
		if (!json_is_true(v)) {
			rh_put(h, ": ");
			put_field(h, v);
		}
	}
	if (jstr(r, "forced")) {
		rh_put(h, "\nforced: ");
		rh_text(h, jstr(r, "forced"));
		if (strcmp(jstr(r, "forced"), "outside") == 0)
			rh_put(h, " (a wait outside the schedule decided)");
	}
	if (x->l.waits_on > 0) {
		rh_put(h, "\nwaited on a lock held by turns ");
		put_turnset(h, x->l.waits_on);
	}
	if (x->l.cand > 0) {
		rh_put(h, "\nturns waiting at this step: ");
		put_turnset(h, x->l.cand);
	}
	switch (x->l.deadlock) {
	case TRACE_DEADLOCK_SOAK:
		rh_put(h, "\ndeadlock victim: cancelled by soak");
		break;
	case TRACE_DEADLOCK_POSTGRES:
		rh_put(h, "\ndeadlock victim: killed by PostgreSQL's detector");
		break;
	case TRACE_DEADLOCK_NONE:
	case TRACE_DEADLOCK_MAX:
		break;
	}
	if (x->l.wakes > 0) {
		rh_put(h, "\nits end woke turns ");
		put_turnset(h, x->l.wakes);
		rh_put(h, ": PostgreSQL's order");
	}
	if (jstr(r, "closed")) {
		rh_put(h, "\nits connection closed: ");
		rh_text(h, jstr(r, "closed"));
	}
	if (x->t_begin >= 0)
		rh_put(h, "\nbegan %" PRId64 " ms, admitted %" PRId64 " ms, ended %" PRId64
		    " ms", x->t_begin, x->t_admit, x->t_end);
	/* Fields this build does not know, as they are. */
	json_object_foreach(UNCONST(r), k, v) {
		for (i = 0; i < nitems(known_keys) && strcmp(known_keys[i], k) != 0; i++)
			;
		if (i < nitems(known_keys))
			continue;
		rh_put(h, "\n");
		rh_text(h, k);
		rh_put(h, ": ");
		put_field(h, v);
	}
}

static bool
xch_deadlock(const struct xch *x)
{
	return x->l.deadlock != TRACE_DEADLOCK_NONE;
}

/*
 * Where exchanges without times go: spread over the time of their turn's
 * runs (each round's run of the turn, end to end), in trace order, which
 * within a turn is connection then exchange order.
 */
static void
place_by_order(struct lane_seed *s)
{
	size_t	 i, j, k, n;
	json_t	*t;

	for (i = 0; i < s->nx; i++) {
		int64_t	total = 0, pos, acc;

		if (s->x[i].x > 0)
			continue;
		/* the exchanges of this turn (and proxy order as in the trace) */
		for (n = 0, j = i; j < s->nx; j++)
			if (s->x[j].turn == s->x[i].turn && s->x[j].x == 0 &&
			    s->x[j].t_admit < 0 && s->x[j].t_begin < 0)
				n++;
		json_array_foreach(s->turns, k, t)
			if (jint(t, "turn", -2) == s->x[i].turn)
				total += jint(t, "end_ms", 0) - jint(t, "start_ms", 0);
		for (k = 0, j = i; j < s->nx; j++) {
			size_t	m;

			if (s->x[j].turn != s->x[i].turn || s->x[j].x != 0 ||
			    s->x[j].t_admit >= 0 || s->x[j].t_begin >= 0)
				continue;
			pos = (int64_t)((double)total * ((double)k + 0.5) / (double)n);
			acc = 0;
			s->x[j].x = -1;		/* no turn run: at the left edge */
			json_array_foreach(s->turns, m, t) {
				int64_t	d;

				if (jint(t, "turn", -2) != s->x[i].turn)
					continue;
				d = jint(t, "end_ms", 0) - jint(t, "start_ms", 0);
				if (pos <= acc + d) {
					s->x[j].x = xat(jint(t, "start_ms", 0) + pos - acc, s->span);
					break;
				}
				acc += d;
			}
			if (s->x[j].x < 0)
				s->x[j].x = LX + 2;
			k++;
		}
	}
}

static void
put_turn_bars(struct rh *h, struct lane_seed *s)
{
	json_t	*t;
	size_t	 i;
	char	 d[48];

	json_array_foreach(s->turns, i, t) {
		int		 turn = (int)jint(t, "turn", 0), y = lane_y(s, turn);
		int64_t		 a = jint(t, "start_ms", 0), b = jint(t, "end_ms", a);
		const char	*st = jstr(t, "status") ? jstr(t, "status") : "ok";
		double		 x0 = xat(a, s->span), x1 = xat(b, s->span);
		const char	*tail = jstr(t, "stderr_tail");

		if (i >= 20000)
			break;
		rh_put(h, "<rect class=\"t-");
		rh_text(h, st);
		rh_put(h, "\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\" rx=\"2\"><title>",
		    x0, y + 5, x1 - x0 > 0.5 ? x1 - x0 : 0.5);
		if (turn < 0)
			rh_put(h, "setup");
		else
			rh_put(h, "round %" PRId64 " turn %d", jint(t, "round", 0), turn);
		rh_put(h, ": %" PRId64 "–%" PRId64 " ms (%s), ", a, b, rh_dur(b - a, d, sizeof(d)));
		rh_text(h, st);
		rh_put(h, " %" PRId64, jint(t, "code", 0));
		if (tail != NULL && *tail) {
			size_t	n = strlen(tail);

			rh_put(h, "\nstderr: …");
			rh_text(h, n > 400 ? tail + utf8_prefix(tail, n, n - 400) : tail);
		}
		rh_put(h, "</title></rect>\n<line class=exit x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
		    "y2=\"%d\"><title>", x1, y + 2, x1, y + 20);
		if (turn < 0)
			rh_put(h, "setup");
		else
			rh_put(h, "round %" PRId64 " turn %d", jint(t, "round", 0), turn);
		rh_put(h, " exited at %" PRId64 " ms: ", b);
		rh_text(h, st);
		rh_put(h, " %" PRId64 "</title></line>\n", jint(t, "code", 0));
	}
}

/* The checks: timing.checks' times, else the end of each round (said). */
static void
put_checks(struct rh *h, struct lane_seed *s, int height)
{
	json_t	*checks = json_object_get(json_object_get(s->result, "timing"), "checks");
	json_t	*c, *t;
	size_t	 i;
	int64_t	 rounds = -1, r, end;
	char	 d[48];

	json_array_foreach(checks, i, c) {
		int64_t	a = json_integer_value(json_array_get(c, 1));
		int64_t	b = json_integer_value(json_array_get(c, 2));
		int64_t	broken = json_integer_value(json_array_get(c, 3));
		double	x0 = xat(a, s->span), x1 = xat(b, s->span);

		rh_put(h, "<rect class=\"chk%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\">"
		    "<title>invariant check after round %" PRId64 ": %" PRId64 "–%" PRId64
		    " ms (%s), %s</title></rect>\n", broken != 0 ? " bad" : "", x0, TOP,
		    x1 - x0 > 2 ? x1 - x0 : 2, height - TOP,
		    (int64_t)json_integer_value(json_array_get(c, 0)), a, b, rh_dur(b - a, d, sizeof(d)),
		    broken < 0 ? "the check itself failed" : broken > 0 ?
		    "found a broken invariant" : "every invariant held");
	}
	if (json_array_size(checks) > 0)
		return;
	/* An older run: no check times; each round's check came after its turns. */
	json_array_foreach(s->turns, i, t)
		if (jint(t, "round", -1) > rounds)
			rounds = jint(t, "round", -1);
	for (r = 0; r <= rounds; r++) {
		end = 0;
		json_array_foreach(s->turns, i, t)
			if (jint(t, "round", -1) == r && jint(t, "end_ms", 0) > end)
				end = jint(t, "end_ms", 0);
		rh_put(h, "<rect class=\"chk%s\" x=\"%.1f\" y=\"%d\" width=\"3\" height=\"%d\">"
		    "<title>invariant check after round %" PRId64 " (its time was not "
		    "recorded: after %" PRId64 " ms)</title></rect>\n",
		    r == jint(s->result, "round", -1) &&
		    json_array_size(json_object_get(s->result, "invariants")) > 0 ? " bad" : "",
		    xat(end, s->span), TOP, height - TOP, r, end);
	}
}

static int
xch_by_step(const void *a, const void *b)
{
	const struct xch	*x = *(const struct xch *const *)a;
	const struct xch	*y = *(const struct xch *const *)b;

	return (x->step > y->step) - (x->step < y->step);
}

/*
 * A scheduled proxy's steps in schedule order: a column per step, a lane
 * per turn, and each lock wait an arrow from the waiting exchange to the
 * last step before it of each turn it waited on.
 */
static void
put_schedule(struct rh *h, struct lane_seed *s, const char *proxy)
{
	struct xch	**v = xcalloc(s->nx + 1, sizeof(*v));
	size_t		  n = 0, i, shown;
	int		  lanes = s->nlanes > 0 ? s->nlanes : 1, height, width, t;
	double		  cw;
	uint64_t	  id = ++h->svg_ids;

	for (i = 0; i < s->nx; i++)
		if (s->x[i].step > 0 && strcmp(s->x[i].proxy, proxy) == 0)
			v[n++] = &s->x[i];
	if (n > 1)
		qsort(v, n, sizeof(*v), xch_by_step);
	shown = n > RH_SCHED_STEPS ? RH_SCHED_STEPS : n;
	cw = shown > 0 && (double)PW / (double)shown > 9 ? (double)PW / (double)shown : 9;
	width = (int)(LX + cw * (double)shown + 14);
	if (width < VW)
		width = VW;
	height = TOP + LANE_H * lanes + 8;
	rh_put(h, "<h4>the schedule of proxy “");
	rh_text(h, proxy);
	rh_put(h, "”: %zu steps in the order it admitted them</h4>\n", n);
	if (shown < n)
		rh_put(h, "<p class=note>the first %zu of %zu steps drawn</p>\n", shown, n);
	rh_put(h, "<div class=scroll><svg class=sched width=\"%d\" viewBox=\"0 0 %d %d\" "
	    "role=\"img\" aria-label=\"schedule of %zu steps\"><defs><marker id=\"ah%" PRIu64
	    "\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" "
	    "orient=\"auto-start-reverse\"><path class=arrh d=\"M0 0L8 4L0 8z\"/></marker>"
	    "</defs>\n", width, width, height, n, id);
	for (t = 0; t < lanes; t++)
		rh_put(h, "<rect class=lane x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
		    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">turn %d</text>\n", LX,
		    TOP + LANE_H * t + 2, width - LX - 14, LANE_H - 4, LX - 8,
		    TOP + LANE_H * t + 15, t);
	for (i = 0; i < shown; i += shown > 40 ? 10 : 1)
		rh_put(h, "<text class=ax x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%" PRId64
		    "</text>\n", LX + cw * ((double)i + 0.5), TOP - 8, v[i]->step);
	/* arrows under the marks */
	for (i = 0; i < shown; i++) {
		uint64_t	mask = v[i]->l.waits_on;
		double		x = LX + cw * ((double)i + 0.5);
		int		y = TOP + LANE_H * v[i]->turn + 11, u;

		for (u = 0; u < 64 && mask; u++) {
			size_t	j;
			double	hx = x;

			if (!(mask & ((uint64_t)1 << u)))
				continue;
			for (j = i; j-- > 0;)
				if (v[j]->turn == u) {
					hx = LX + cw * ((double)j + 0.5);
					break;
				}
			rh_put(h, "<line class=wait x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			    "marker-end=\"url(#ah%" PRIu64 ")\"><title>step %" PRId64 ": turn %d "
			    "waits on a lock held by turn %d</title></line>\n", x, y, hx,
			    TOP + LANE_H * u + 11 + (y > TOP + LANE_H * u ? 6 : -6), id,
			    v[i]->step, v[i]->turn, u);
		}
	}
	for (i = 0; i < shown; i++) {
		double	x = LX + cw * ((double)i + 0.5);
		int	y = TOP + LANE_H * v[i]->turn + 11;

		if (xch_deadlock(v[i]))
			rh_put(h, "<circle class=dl cx=\"%.1f\" cy=\"%d\" r=\"8\" fill=\"none\"/>",
			    x, y);
		mark_begin(h, v[i]->l.fault, v[i]->l.latency_ms > 0, x, y,
		    v[i]->l.forced ? " forced" : "");
		xch_title(h, v[i]);
		mark_end(h, v[i]->l.fault, v[i]->l.latency_ms > 0);
	}
	rh_put(h, "</svg></div>\n");
	free(v);
}

static void
lane_seed_free(struct lane_seed *s)
{
	size_t	i;

	for (i = 0; i < s->nx; i++)
		json_decref(s->x[i].rec);
	free(s->x);
	json_decref(s->result);
}

void
rh_swimlane(struct rh *h, uint64_t seed, const char *label)
{
	struct lane_seed	 s = { 0 };
	char			*dir = xasprintf("%s/failures/%" PRIu64, h->dir, seed), *path;
	json_t			*t;
	size_t			 i, j, drawn;
	int			 height, lane;
	const char		*procs[16];
	size_t			 nprocs = 0;
	struct stat		 st;
	char			 d[48];

	path = xasprintf("%s/result.json", dir);
	s.result = json_load_file(path, 0, NULL);
	free(path);
	rh_put(h, "<h4>seed %" PRIu64 " over time</h4>\n", seed);
	if (s.result == NULL) {
		rh_put(h, "<p class=note>No failures/%" PRIu64 "/result.json in the run "
		    "folder: no swimlane.</p>\n", seed);
		goto out;
	}
	s.turns = json_object_get(s.result, "turns");
	path = xasprintf("%s/trace.jsonl", dir);
	if (stat(path, &st) != 0) {
		free(path);
		path = xasprintf("%s/workspace/trace.jsonl", dir);
	}
	each_line(path, RH_TRACE_LINES, trace_line, &s);
	free(path);
	path = xasprintf("%s/timing.jsonl", dir);
	if (stat(path, &st) != 0) {
		free(path);
		path = xasprintf("%s/workspace/timing.jsonl", dir);
	}
	if (s.nx > 0)
		each_line(path, RH_TRACE_LINES, timing_line, &s);
	free(path);
	if (json_array_size(s.turns) == 0 && s.nx == 0) {
		rh_put(h, "<p class=note>The seed recorded no turns and no exchanges "
		    "(it ended before its first round): no swimlane.</p>\n");
		goto out;
	}
	s.span = jint(s.result, "duration_ms", 0);
	json_array_foreach(s.turns, i, t) {
		if (jint(t, "turn", 0) < 0)
			s.setup = true;
		else if (jint(t, "turn", 0) + 1 > s.nlanes)
			s.nlanes = (int)jint(t, "turn", 0) + 1;
		if (jint(t, "end_ms", 0) > s.span)
			s.span = jint(t, "end_ms", 0);
	}
	for (i = 0; i < s.nx; i++) {
		if (s.x[i].turn + 1 > s.nlanes && s.x[i].turn < 256)
			s.nlanes = s.x[i].turn + 1;
		if (s.x[i].t_end > s.span)
			s.span = s.x[i].t_end;
	}
	json_array_foreach(json_object_get(json_object_get(s.result, "timing"), "checks"), i, t)
		if (json_integer_value(json_array_get(t, 2)) > s.span)
			s.span = json_integer_value(json_array_get(t, 2));
	if (s.nlanes > 256)
		s.nlanes = 256;
	if (s.span <= 0)
		s.span = 1;
	for (i = 0; i < s.nx; i++) {
		int64_t	at = s.x[i].t_admit >= 0 ? s.x[i].t_admit : s.x[i].t_begin;

		s.x[i].x = at >= 0 ? xat(at, s.span) : 0;
	}
	place_by_order(&s);
	height = TOP + LANE_H * (s.nlanes + (s.setup ? 1 : 0)) + 8;
	rh_put(h, "<p class=note>%s%s</p>\n", s.nx == 0 ? "No exchange went through a "
	    "proxy (none is configured, or no turn used one)." : s.timed ?
	    "Exchanges at the time the proxy admitted them (timing.jsonl)." :
	    "This run recorded no exchange times: each turn's exchanges are spread over "
	    "its run in the order it made them, so positions within a turn show order, "
	    "not time.", s.cut ? " The run kept only the first lines of the fault trace "
	    "(the worker cut it); the rest are not drawn." : "");
	if (s.bad > 0) {
		rh_put(h, "<p class=note>%zu line%s of the fault trace %s not as soak "
		    "writes them, and not drawn: the first, line %zu: ", s.bad,
		    s.bad == 1 ? "" : "s", s.bad == 1 ? "is" : "are", s.bad_line);
		rh_text(h, s.bad_why);
		rh_put(h, "</p>\n");
	}
	rh_put(h, "<svg class=swimlane viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
	    VW, height);
	rh_text(h, label);
	rh_put(h, ": seed %" PRIu64 ", %s\">\n", seed, rh_dur(s.span, d, sizeof(d)));
	time_axis(h, s.span, height - 6, 0);
	for (lane = s.setup ? -1 : 0; lane < s.nlanes; lane++) {
		rh_put(h, "<rect class=lane x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
		    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LX, lane_y(&s, lane) + 2,
		    PW, LANE_H - 4, LX - 8, lane_y(&s, lane) + 15);
		if (lane < 0)
			rh_put(h, "setup</text>\n");
		else
			rh_put(h, "turn %d</text>\n", lane);
	}
	put_checks(h, &s, height - 6);
	put_turn_bars(h, &s);
	for (i = 0, drawn = 0; i < s.nx && drawn < RH_LANE_MARKS; i++, drawn++) {
		double	y = lane_y(&s, s.x[i].turn) + 11;

		if (s.x[i].t_begin >= 0 && s.x[i].t_end > s.x[i].t_begin)
			rh_put(h, "<line class=xs x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			    xat(s.x[i].t_begin, s.span), y, xat(s.x[i].t_end, s.span), y);
		if (xch_deadlock(&s.x[i]))
			rh_put(h, "<circle class=dl cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\"/>",
			    s.x[i].x, y);
		mark_begin(h, s.x[i].l.fault, s.x[i].l.latency_ms > 0, s.x[i].x, y, "");
		xch_title(h, &s.x[i]);
		mark_end(h, s.x[i].l.fault, s.x[i].l.latency_ms > 0);
	}
	rh_put(h, "</svg>\n");
	if (drawn < s.nx)
		rh_put(h, "<p class=note>the first %zu of %zu exchanges drawn</p>\n", drawn, s.nx);
	for (i = 0; i < s.nx; i++) {
		if (s.x[i].step <= 0)
			continue;
		for (j = 0; j < nprocs && strcmp(procs[j], s.x[i].proxy) != 0; j++)
			;
		if (j == nprocs && nprocs < nitems(procs))
			procs[nprocs++] = s.x[i].proxy;
	}
	for (j = 0; j < nprocs; j++)
		put_schedule(h, &s, procs[j]);
out:
	lane_seed_free(&s);
	free(dir);
}

/* --- the worker timeline -------------------------------------------------- */

struct jlease {
	int64_t		 worker;
	bool		 confirm;
	int64_t		*seeds;
	size_t		 n;
	uint8_t		*reported;
};

struct bar {
	int64_t		 worker, seed, a, b;
	char		 cls;		/* p f i c */
	int32_t		 attempt;
	int		 reason;	/* enum reason; -1: a name this soak
					   does not know (a newer soak's) */
};

struct lost {
	int64_t		 worker, at, seed;
	char		*why;
};

struct wt {
	int64_t		 start;		/* the journal head's started_at_ms */
	int64_t		 end;
	struct jlease	*leases;	/* by lease id */
	size_t		 nleases;
	struct bar	*bars;
	size_t		 nbars, capbars;
	struct lost	*lost;
	size_t		 nlost;
	int64_t		*resumes;
	size_t		 nresumes, capresumes;
	int64_t		*seed_ms, *turn_ms;	/* durations */
	size_t		 nseed, capseed, nturn, capturn;
	bool		 no_at, head;
	bool		 worker_clock;	/* bars from timing.started_at_ms */
	char		**names;	/* by worker id */
	size_t		 nnames;
};

static void
push_i64(int64_t **v, size_t *n, size_t *cap, int64_t x)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		*v = xreallocarray(*v, *cap, sizeof(int64_t));
	}
	(*v)[(*n)++] = x;
}

/*
 * A result's class by its reason, read with common/verdict.h's names (the
 * journal writes reason_name): its verdict's.  No reason is a pass (the
 * journals of older builds leave it out); a name this soak does not know
 * is not a pass it can vouch for: infra.
 */
static char
reason_cls(int r)
{
	switch (r < 0 ? VERDICT_INFRA : reason_verdict((enum reason)r)) {
	case VERDICT_PASS:	return 'p';
	case VERDICT_FAIL:	return 'f';
	default:		return 'i';
	}
}

static void
wt_turns(struct wt *w, const json_t *detail)
{
	json_t	*t;
	size_t	 i;

	json_array_foreach(json_object_get(detail, "turns"), i, t)
		if (jint(t, "turn", -1) >= 0)
			push_i64(&w->turn_ms, &w->nturn, &w->capturn,
			    jint(t, "end_ms", 0) - jint(t, "start_ms", 0));
	json_array_foreach(json_object_get(json_object_get(detail, "timing"), "turns"), i, t)
		if (json_integer_value(json_array_get(t, 1)) >= 0)
			push_i64(&w->turn_ms, &w->nturn, &w->capturn,
			    json_integer_value(json_array_get(t, 3)) -
			    json_integer_value(json_array_get(t, 2)));
}

static void
wt_worker(struct wt *w, json_t *e)
{
	int64_t	id = jint(e, "id", -1);

	if (id < 0 || id > 100000)
		return;
	if ((size_t)id >= w->nnames) {
		w->names = xreallocarray(w->names, (size_t)id + 1, sizeof(char *));
		memset(w->names + w->nnames, 0, ((size_t)id + 1 - w->nnames) * sizeof(char *));
		w->nnames = (size_t)id + 1;
	}
	free(w->names[id]);
	w->names[id] = xstrdup(jstr(e, "name"));
}

static void
wt_lease(struct wt *w, json_t *e)
{
	json_t		*s;
	struct jlease	*l;
	int64_t		 id = jint(e, "id", -1);
	size_t		 i;

	if (id < 0 || id > 50000000)
		return;
	if ((size_t)id >= w->nleases) {
		size_t	n = (size_t)id + 1 > w->nleases * 2 ? (size_t)id + 1 : w->nleases * 2;

		w->leases = xreallocarray(w->leases, n, sizeof(*w->leases));
		memset(w->leases + w->nleases, 0, (n - w->nleases) * sizeof(*w->leases));
		w->nleases = n;
	}
	l = &w->leases[id];
	free(l->seeds);
	free(l->reported);
	l->worker = jint(e, "worker", 0);
	l->confirm = json_is_true(json_object_get(e, "confirm"));
	l->n = json_array_size(json_object_get(e, "seeds"));
	l->seeds = xcalloc(l->n + 1, sizeof(int64_t));
	l->reported = xcalloc(l->n + 1, 1);
	json_array_foreach(json_object_get(e, "seeds"), i, s)
		l->seeds[i] = json_integer_value(json_array_get(s, 0));
}

static void
wt_result(struct wt *w, json_t *e, int64_t at)
{
	struct jlease	*l;
	struct bar	*b;
	json_t		*d = json_object_get(e, "detail");
	int64_t		 dur = jint(e, "duration_ms", 0), seed = jint(e, "seed", -1);
	int64_t		 wstart = jint(json_object_get(d, "timing"), "started_at_ms", -1);
	int64_t		 id = jint(e, "lease", -1);
	size_t		 i;

	if (id < 0 || (size_t)id >= w->nleases || w->leases[id].seeds == NULL)
		return;
	l = &w->leases[id];
	for (i = 0; i < l->n; i++)
		if (l->seeds[i] == seed)
			l->reported[i] = 1;
	push_i64(&w->seed_ms, &w->nseed, &w->capseed, dur);
	wt_turns(w, d);
	if (at < 0 && wstart < 0) {
		w->no_at = true;
		return;
	}
	if (at < 0) {
		w->worker_clock = true;
		at = wstart + dur;
		if (at > w->end)
			w->end = at;
	}
	if (w->nbars == w->capbars) {
		w->capbars = w->capbars ? w->capbars * 2 : 1024;
		w->bars = xreallocarray(w->bars, w->capbars, sizeof(*w->bars));
	}
	b = &w->bars[w->nbars++];
	b->worker = l->worker;
	b->seed = seed;
	b->b = at;
	b->a = at - dur;
	b->attempt = (int32_t)jint(e, "attempt", 1);
	b->reason = jstr(e, "reason") != NULL ? reason_parse(jstr(e, "reason")) :
	    REASON_NONE;
	b->cls = l->confirm ? 'c' : reason_cls(b->reason);
}

static void
wt_lease_end(struct wt *w, json_t *e, int64_t at)
{
	struct jlease	*l;
	int64_t		 id = jint(e, "id", -1);
	size_t		 i;

	if (!json_is_true(json_object_get(e, "running")) || at < 0 || id < 0 ||
	    (size_t)id >= w->nleases || w->leases[id].seeds == NULL)
		return;
	l = &w->leases[id];
	for (i = 0; i < l->n && l->reported[i]; i++)
		;
	if (i == l->n)
		return;
	w->lost = xreallocarray(w->lost, w->nlost + 1, sizeof(*w->lost));
	w->lost[w->nlost++] = (struct lost){ l->worker, at, l->seeds[i],
	    xstrdup(jstr(e, "why") ? jstr(e, "why") : "") };
}

/* A journal line, by its "t" in the journal's own names (journal.h). */
static void
wt_line(json_t *e, size_t lineno, void *arg)
{
	struct wt	*w = arg;
	const char	*t = jstr(e, "t");
	int64_t		 at = jint(e, "at_ms", -1);

	if (e == NULL || t == NULL)
		return;
	if (at > w->end)
		w->end = at;
	switch (jev_parse(t)) {
	case JEV_RUN:
		w->start = jint(e, "started_at_ms", 0);
		w->head = true;
		break;
	case JEV_WORKER:
		wt_worker(w, e);
		break;
	case JEV_LEASE:
		wt_lease(w, e);
		break;
	case JEV_RESULT:
		wt_result(w, e, at);
		break;
	case JEV_LEASE_END:
		wt_lease_end(w, e, at);
		break;
	case JEV_RESUME:
		if (at >= 0)
			push_i64(&w->resumes, &w->nresumes, &w->capresumes, at);
		break;
	case JEV_OTHER:
		break;		/* a newer soak's line */
	}
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int
bar_cmp(const void *a, const void *b)
{
	const struct bar	*x = a, *y = b;

	if (x->worker != y->worker)
		return (x->worker > y->worker) - (x->worker < y->worker);
	return (x->a > y->a) - (x->a < y->a);
}

static void
put_quantiles(struct rh *h, const char *what, int64_t *v, size_t n)
{
	char	d[4][48];

	if (n == 0)
		return;
	if (n > 1)
		qsort(v, n, sizeof(*v), i64_cmp);
	rh_put(h, "<tr><th>%s</th><td>%zu</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
	    what, n, rh_dur(v[n / 2], d[0], sizeof(d[0])),
	    rh_dur(v[(size_t)((double)(n - 1) * 0.9)], d[1], sizeof(d[1])),
	    rh_dur(v[(size_t)((double)(n - 1) * 0.99)], d[2], sizeof(d[2])),
	    rh_dur(v[n - 1], d[3], sizeof(d[3])));
}

static const char *
cls_name(char c)
{
	switch (c) {
	case 'p': return "pass";
	case 'f': return "fail";
	case 'i': return "infra";
	default: return "confirming re-run";
	}
}

/* Bars of one lane from v[i] on, merged while the gaps are under a unit. */
static size_t
put_bar_run(struct rh *h, const struct wt *w, size_t i, size_t n, int64_t span,
    int y, bool merge)
{
	const struct bar	*b = &w->bars[i];
	double			 unit = (double)span / PW;
	size_t			 j = i + 1, c[4] = { 0 }, k;
	int64_t			 end = b->b;
	char			 cls, d[48];
	static const char	 order[] = "pfic";

	if (merge)
		for (; j < n && w->bars[j].worker == b->worker &&
		    (double)(w->bars[j].a - end) < unit; j++)
			if (w->bars[j].b > end)
				end = w->bars[j].b;
	for (k = i; k < j; k++)
		c[strchr(order, w->bars[k].cls) - order]++;
	cls = c[1] ? 'f' : c[2] ? 'i' : c[3] ? 'c' : 'p';
	rh_put(h, "<rect class=\"w-%c\" x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"12\"><title>",
	    cls, xat(b->a - w->start, span), y + 4,
	    xat(end - w->start, span) - xat(b->a - w->start, span) > 0.3 ?
	    xat(end - w->start, span) - xat(b->a - w->start, span) : 0.3);
	if (j - i == 1) {
		rh_put(h, "seed %" PRId64 " attempt %d: %s", b->seed, b->attempt,
		    cls_name(b->cls));
		if (b->reason < 0)
			rh_put(h, " (a reason this soak does not know)");
		else if (b->reason != REASON_NONE)
			rh_put(h, " %s", reason_name((enum reason)b->reason));
		rh_put(h, ", %s", rh_dur(b->b - b->a, d, sizeof(d)));
		rh_put(h, ", from %s", rh_dur(b->a - w->start, d, sizeof(d)));
	} else {
		rh_put(h, "%zu attempts, seeds %" PRId64 " to %" PRId64, j - i, b->seed,
		    w->bars[j - 1].seed);
		for (k = 0; k < 4; k++)
			if (c[k])
				rh_put(h, ", %zu %s", c[k], cls_name(order[k]));
	}
	rh_put(h, "</title></rect>\n");
	return j;
}

void
rh_workers(struct rh *h)
{
	struct wt	 w = { .end = -1 };
	char		*path = xasprintf("%s/journal.jsonl", h->dir), d[48];
	json_t		*ws = json_object_get(h->report, "workers"), *x;
	size_t		 i, nlanes = 0, lane;
	int64_t		*ids = NULL, span, id;
	int		 height;
	bool		 merge;

	rh_put(h, "<h2 id=\"workers\">Workers</h2>\n");
	each_line(path, SIZE_MAX, wt_line, &w);
	free(path);
	if (!w.head) {
		rh_put(h, "<p class=note>No journal.jsonl in the run folder: no worker "
		    "timeline.</p>\n");
		goto durations;
	}
	if (w.nbars == 0) {
		rh_put(h, "<p class=note>%s</p>\n", w.no_at ? "This run's journal has no "
		    "times (written by a soak before report.html): no worker timeline." :
		    "No seed finished on a worker: no timeline.");
		goto durations;
	}
	/* the lanes: the report's workers, then any only the journal knows */
	ids = xcalloc(json_array_size(ws) + w.nnames + 1, sizeof(int64_t));
	json_array_foreach(ws, i, x)
		ids[nlanes++] = jint(x, "id", 0);
	for (id = 0; (size_t)id < w.nnames; id++) {
		for (i = 0; i < nlanes && ids[i] != id; i++)
			;
		if (i == nlanes && w.names[id] != NULL)
			ids[nlanes++] = id;
	}
	if (w.nbars > 1)
		qsort(w.bars, w.nbars, sizeof(*w.bars), bar_cmp);
	for (i = 0; i < w.nbars; i++)
		if (w.bars[i].a < w.start)
			w.start = w.bars[i].a;
	span = w.end - w.start > 0 ? w.end - w.start : 1;
	merge = w.nbars > RH_BARS;
	height = TOP + LANE_H * (int)(nlanes > 0 ? nlanes : 1) + 8;
	rh_put(h, "<p class=note>A lane per worker, a bar per seed it ran (%s), by the "
	    "%s clock, over the run's %s.%s</p>\n", merge ? "bars closer than a pixel "
	    "merged, hover for their counts" : "hover for the seed", w.worker_clock ?
	    "workers'" : "coordinator's", rh_dur(span, d, sizeof(d)),
	    w.nlost ? " × marks a worker lost while it ran a seed." : "");
	rh_put(h, "<div class=legend><span><i class=\"sw w-p p\"></i>pass</span><span><i "
	    "class=\"sw f\"></i>fail</span><span><i class=\"sw i\"></i>infra attempt</span>"
	    "<span><svg width=\"12\" height=\"12\" viewBox=\"0 0 12 12\"><rect class=w-c "
	    "width=\"12\" height=\"12\"/></svg>confirming re-run</span><span>× worker lost"
	    "</span><span>■ quarantined</span></div>\n");
	rh_put(h, "<svg class=workers viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"worker "
	    "timeline\">\n", VW, height);
	time_axis(h, span, height - 6, 0);
	for (lane = 0; lane < nlanes; lane++) {
		const char	*name = NULL, *quar = NULL;
		int		 y = TOP + LANE_H * (int)lane;
		size_t		 j;
		int64_t		 last = -1;

		json_array_foreach(ws, j, x)
			if (jint(x, "id", -1) == ids[lane]) {
				name = jstr(x, "name");
				quar = jstr(x, "quarantined");
			}
		if (name == NULL && (size_t)ids[lane] < w.nnames)
			name = w.names[ids[lane]];
		rh_put(h, "<rect class=lane x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
		    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">w%" PRId64 "<title>", LX, y + 2,
		    PW, LANE_H - 4, LX - 8, y + 15, ids[lane]);
		rh_text(h, name ? name : "?");
		rh_put(h, "</title></text>\n");
		for (i = 0; i < w.nbars && w.bars[i].worker != ids[lane]; i++)
			;
		while (i < w.nbars && w.bars[i].worker == ids[lane]) {
			if (w.bars[i].b > last)
				last = w.bars[i].b;
			i = put_bar_run(h, &w, i, w.nbars, span, y, merge);
		}
		for (j = 0; j < w.nlost; j++)
			if (w.lost[j].worker == ids[lane]) {
				double	lx = xat(w.lost[j].at - w.start, span);

				rh_put(h, "<path class=lost d=\"M%.1f %dl8 8m0-8l-8 8\"><title>"
				    "worker lost at %s while it ran seed %" PRId64 ": ", lx - 4,
				    y + 6, rh_dur(w.lost[j].at - w.start, d, sizeof(d)),
				    w.lost[j].seed);
				rh_text(h, w.lost[j].why);
				rh_put(h, "</title></path>\n");
			}
		if (quar != NULL) {
			rh_put(h, "<rect class=quar x=\"%.1f\" y=\"%d\" width=\"8\" height=\"8\">"
			    "<title>quarantined: ", xat((last >= 0 ? last : w.end) - w.start,
			    span) + 2, y + 6);
			rh_text(h, quar);
			rh_put(h, "</title></rect>\n");
		}
	}
	for (i = 0; i < w.nresumes; i++)
		rh_put(h, "<line class=exit x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"><title>"
		    "the coordinator resumed the run here</title></line>\n",
		    xat(w.resumes[i] - w.start, span), TOP, xat(w.resumes[i] - w.start, span),
		    height - 6);
	rh_put(h, "</svg>\n");
durations:
	rh_put(h, "<h3>Durations</h3>\n");
	if (w.nseed == 0)
		rh_put(h, "<p class=note>The journal records no result.</p>\n");
	else {
		rh_put(h, "<table class=plain><tr><th></th><th>count</th><th>median</th>"
		    "<th>p90</th><th>p99</th><th>max</th></tr>\n");
		put_quantiles(h, "seeds (every attempt)", w.seed_ms, w.nseed);
		put_quantiles(h, "turns", w.turn_ms, w.nturn);
		rh_put(h, "</table>\n");
		if (w.nturn == 0)
			rh_put(h, "<p class=note>No turn times: the journal's passing seeds carry "
			    "none (written by a soak before report.html).</p>\n");
	}
	free(ids);
	for (i = 0; i < w.nleases; i++) {
		free(w.leases[i].seeds);
		free(w.leases[i].reported);
	}
	free(w.leases);
	free(w.bars);
	for (i = 0; i < w.nlost; i++)
		free(w.lost[i].why);
	free(w.lost);
	free(w.resumes);
	free(w.seed_ms);
	free(w.turn_ms);
	for (i = 0; i < w.nnames; i++)
		free(w.names[i]);
	free(w.names);
}
