/*
 * The story of a minimized plan (docs/minimize.md "What it writes and
 * says"), told from its last failing replay, and what the explain phase
 * found: `soak minimize` prints them, a minimize lease (tickets.minimize)
 * sends them to the coordinator for the ticket.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/plan.h"
#include "common/seed.h"
#include "common/trace.h"
#include "common/util.h"
#include "worker/minimize.h"
#include "worker/wrk.h"

/* Lines of a turn's own output in the story, and exchanges per turn. */
#define MIN_STORY_TAIL		4
#define MIN_STORY_EXCHANGES	24

/*
 * The trace's lines, one at a time, read by its own decoder
 * (common/trace.h): fn(l, arg) for each exchange.  A line that is not one
 * soak writes has no place in a story: left out.
 */
static void
trace_each(const char *trace, size_t len,
    void (*fn)(const struct trace_line *l, const json_t *o, void *arg), void *arg)
{
	const char		*p = trace, *end = trace + len, *nl;
	struct trace_line	 l;
	char			 why[ERR_LEN];

	for (; p != NULL && p < end; p = nl + 1) {
		json_t	*o;

		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl > p && (o = json_loadb(p, (size_t)(nl - p), 0, NULL)) != NULL) {
			if (trace_line_parse(o, &l, why) == 0)
				fn(&l, o, arg);
			json_decref(o);
		}
	}
}

/* A fault in words. */
static void
fault_words(const struct trace_line *l, const json_t *o, char *buf, size_t len)
{
	const char	*model = json_string_value(json_object_get(o, "model"));
	bool	saw = l->upstream_saw;
	size_t	n = 0;

	buf[0] = '\0';
	switch (l->fault) {
	case FAULT_NONE:
		n = (size_t)snprintf(buf, len, "ok");
		break;
	case FAULT_LOST_REPLY:
		n = (size_t)snprintf(buf, len, "reply lost%s", saw ?
		    " (the upstream had done it)" : "");
		break;
	case FAULT_RESET:
		n = (size_t)snprintf(buf, len, "connection reset%s", saw ?
		    " (after the upstream had it)" : "");
		break;
	case FAULT_DUPLICATE:
		n = (size_t)snprintf(buf, len, "sent twice to the upstream");
		break;
	case FAULT_BLACKHOLE:
		n = (size_t)snprintf(buf, len, "connection black-holed");
		break;
	case FAULT_STATUS:
		n = (size_t)snprintf(buf, len, "answered %d by the proxy (the "
		    "upstream never saw it)", l->status);
		break;
	case FAULT_STREAM_CUT:
		n = (size_t)snprintf(buf, len, "stream cut after %" PRIu32
		    " event%s", l->after, l->after == 1 ? "" : "s");
		break;
	case FAULT_STREAM_STALL:
		n = (size_t)snprintf(buf, len, "stream stalled %" PRId64 " ms "
		    "after %" PRIu32 " event%s", l->stall_ms, l->after,
		    l->after == 1 ? "" : "s");
		break;
	case FAULT_CLOSE_AFTER:
	case FAULT_MAX:
		n = (size_t)snprintf(buf, len, "%s", fault_name(l->fault));
		break;
	}
	if (l->latency_ms > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", %lld ms late",
		    (long long)l->latency_ms);
	/* a model stand-in's or a cassette's answer: which one (models.md) */
	if (model != NULL && n < len)
		n += (size_t)snprintf(buf + n, len - n, "; the model: \"%s\"",
		    model);
	if (model != NULL && json_is_integer(json_object_get(o, "alt")) && n < len)
		snprintf(buf + n, len - n, ", reply %lld", (long long)
		    json_integer_value(json_object_get(o, "alt")));
}

static const char *
exchange_what(const struct trace_line *l)
{
	const char	*w = l->req;

	if (w == NULL)
		w = l->sql;
	if (w == NULL || w[0] == '\0')
		w = l->pg;
	return w != NULL ? w : "(an exchange)";
}

/* One turn's exchanges through the proxies that are not scheduled. */
struct turn_story {
	FILE			*f;
	const struct cfg	*cfg;
	int			 round, turn;
	size_t			 shown, more;
	uint64_t		 seen[64];	/* key hashes, to say "again" */
	size_t			 nseen;
};

static bool
scheduled(const struct cfg *cfg, const char *proxy)
{
	size_t	i;

	for (i = 0; proxy != NULL && i < cfg->nproxies; i++)
		if (strcmp(cfg->proxies[i].name, proxy) == 0)
			return cfg->proxies[i].schedule.enabled;
	return false;
}

static void
turn_exchange(const struct trace_line *l, const json_t *o, void *arg)
{
	struct turn_story	*ts = arg;
	FILE			*f = ts->f;
	const char		*proxy = l->proxy;
	const char		*what = exchange_what(l);
	char			 words[128];
	uint64_t		 h = fnv1a64(what, strlen(what));
	bool			 again = false;
	size_t			 i;
	bool			 stmt = l->req != NULL || l->sql != NULL;

	if (l->round != ts->round || l->turn != ts->turn ||
	    scheduled(ts->cfg, proxy) || !l->keyed)
		return;
	/* a start-up, a Sync, a Terminate: told only when a fault hit it */
	if (!stmt && l->fault == FAULT_NONE && l->latency_ms == 0)
		return;
	for (i = 0; stmt && i < ts->nseen; i++)
		again |= ts->seen[i] == h;
	if (stmt && !again && ts->nseen < 64)
		ts->seen[ts->nseen++] = h;
	if (ts->shown >= MIN_STORY_EXCHANGES) {
		ts->more++;
		return;
	}
	fault_words(l, o, words, sizeof(words));
	fprintf(f, "    %s %s%s — %s\n", proxy, what, again ? " again" : "",
	    words);
	ts->shown++;
}

/* The last lines of a turn's output, indented. */
static void
tail_lines(FILE *f, const char *label, const char *s)
{
	const char	*end, *p;
	int		 n = 0;

	if (s == NULL || s[0] == '\0')
		return;
	end = s + strlen(s);
	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (p = end; p > s; p--)
		if (p[-1] == '\n' && ++n == MIN_STORY_TAIL)
			break;
	fprintf(f, "    its %s (last lines):\n", label);
	while (p < end) {
		const char	*nl = memchr(p, '\n', (size_t)(end - p));

		if (nl == NULL)
			nl = end;
		fprintf(f, "      | %.*s\n", (int)(nl - p), p);
		p = nl + 1;
	}
}

static json_t *
outcome_of(json_t *turns, int round, int turn)
{
	json_t	*t;
	size_t	 i;

	json_array_foreach(turns, i, t)
		if (json_integer_value(json_object_get(t, "round")) == round &&
		    json_integer_value(json_object_get(t, "turn")) == turn)
			return t;
	return NULL;
}

static void
story_schedule(FILE *f, const struct plan *p)
{
	size_t	i, j;

	for (i = 0; i < p->nproxies; i++) {
		const struct plan_proxy	*x = &p->proxies[i];

		if (x->nsteps == 0)
			continue;
		fprintf(f, "  the schedule of proxy %s, its steps in order (* a "
		    "preemption):\n", x->name);
		for (j = 0; j < x->nsteps; j++) {
			const struct plan_step	*s = &x->steps[j];
			int			 a = -1;
			bool			 pre = min_is_preemption(x, j, &a);

			fprintf(f, "  %c %3zu. round %d turn %d  %s", pre ? '*' : ' ', j + 1,
			    s->round, s->turn, s->what ? s->what : "(a statement)");
			if (pre)
				fprintf(f, "   — preempts turn %d", a);
			if (s->lock_wait)
				fprintf(f, "   — waited on a lock");
			fprintf(f, "\n");
		}
	}
}

static void
story_invariants(FILE *f, json_t *invs)
{
	json_t	*inv, *row, *cell;
	size_t	 i, r, c;

	json_array_foreach(invs, i, inv) {
		json_t	*cols = json_object_get(inv, "columns");

		fprintf(f, "  broken: \"%s\" (%lld row%s)\n",
		    json_string_value(json_object_get(inv, "name")),
		    (long long)json_integer_value(json_object_get(inv, "row_count")),
		    json_integer_value(json_object_get(inv, "row_count")) == 1 ? "" : "s");
		fprintf(f, "    ");
		json_array_foreach(cols, c, cell)
			fprintf(f, "%s%s", c ? " | " : "", json_string_value(cell));
		fprintf(f, "\n");
		json_array_foreach(json_object_get(inv, "rows"), r, row) {
			if (r == 5) {
				fprintf(f, "    …\n");
				break;
			}
			fprintf(f, "    ");
			json_array_foreach(row, c, cell)
				fprintf(f, "%s%s", c ? " | " : "", json_is_string(cell) ?
				    json_string_value(cell) : "NULL");
			fprintf(f, "\n");
		}
	}
}

/*
 * The story of the minimal plan, from the failing replay of it: the turns
 * that run, each with its exchanges through the proxies that are not
 * scheduled (their faults in words) and its own last output; the
 * schedule's steps in order, preemptions marked; the broken invariants
 * and their rows.
 */
void
min_story(FILE *f, const struct cfg *cfg, const struct plan *p,
    const struct seed_result *res)
{
	json_t	*turns = json_object_get(res->detail, "turns");
	int	 r, t;

		for (r = 0; r < p->rounds; r++)
		for (t = 0; t < p->turns; t++) {
			struct turn_story	 ts = { .f = f, .cfg = cfg, .round = r,
						    .turn = t };
			json_t			*o;

			if (!plan_runs(p, r, t))
				continue;
			o = outcome_of(turns, r, t);
			fprintf(f, "  round %d turn %d: %s", r, t, o ? json_string_value(
			    json_object_get(o, "status")) : "ran");
			if (o != NULL && strcmp(json_string_value(json_object_get(o,
			    "status")), "ok") != 0)
				fprintf(f, " (%lld)", (long long)json_integer_value(
				    json_object_get(o, "code")));
			fprintf(f, "\n");
			trace_each(res->trace, res->trace_len, turn_exchange, &ts);
			if (ts.more > 0)
				fprintf(f, "    (and %zu more exchanges)\n", ts.more);
			if (o != NULL) {
				tail_lines(f, "stdout", json_string_value(json_object_get(o,
				    "stdout_tail")));
				tail_lines(f, "stderr", json_string_value(json_object_get(o,
				    "stderr_tail")));
			}
		}
	story_schedule(f, p);
	story_invariants(f, json_object_get(res->detail, "invariants"));
	if (json_array_size(json_object_get(res->detail, "invariants")) == 0)
		fprintf(f, "  the failure: %s\n", res->message);
}

static const char *
said_words(enum min_said s)
{
	return s == MIN_STILL_FAILS ? "still fails" : s == MIN_PASSES ? "passes" :
	    "cannot come (diverged)";
}

/*
 * What the explain phase found: each kept fault as the other kinds and
 * with other latencies, each step later and later; "does not
 * matter" where it still fails.
 */
void
min_explain_print(FILE *f, const struct plan *p, const struct min_note *v,
    size_t n, int variants)
{
	size_t	i, j;

	fprintf(f, "\nwhat matters (explain: each fault as the other kinds and with up "
	    "to %d latencies, each step up to %d places later):\n", variants,
	    variants);
	for (i = 0; i < n; i = j) {
		const struct min_note	*a = &v[i];
		size_t			 lats = 0, lfail = 0;
		int64_t			 lo = INT64_MAX, hi = 0;

		for (j = i; j < n && v[j].kind == a->kind && v[j].proxy == a->proxy &&
		    v[j].index == a->index; j++)
			;
		if (a->kind == MIN_FAULTS) {
			const struct plan_fault_rec	*fr = &p->proxies[a->proxy].faults[a->index];
			const char			*sep = "";
			size_t				 q;

			char				 kind[48];

			if (fr->reply > 0 && fr->fault == PLAN_NONE)
				snprintf(kind, sizeof(kind), "reply %u", fr->reply);
			else
				plan_fault_words(fr, kind, sizeof(kind));
			fprintf(f, "  %s round %d turn %d %s (%s%s): ", p->proxies[a->proxy].name,
			    fr->round, fr->turn, fr->what ? fr->what : "(an exchange)",
			    kind, fr->latency_ms > 0 ? ", late" : "");
			for (q = i; q < j; q++) {
				if (v[q].latency_ms >= 0) {
					lats++;
					lfail += v[q].said == MIN_STILL_FAILS;
					lo = v[q].latency_ms < lo ? v[q].latency_ms : lo;
					hi = v[q].latency_ms > hi ? v[q].latency_ms : hi;
					continue;
				}
				fprintf(f, "%s%s — %s", sep, v[q].variant, said_words(v[q].said));
				sep = "; ";
			}
			if (lats > 0 && lfail == lats)
				fprintf(f, "%slatency: any value (%zu tried, %lld..%lld ms) — still "
				    "fails", sep, lats, (long long)lo, (long long)hi);
			else if (lats > 0)
				for (q = i; q < j; q++)
					if (v[q].latency_ms >= 0 && v[q].said != MIN_STILL_FAILS)
						fprintf(f, "%s%s — %s", sep, v[q].variant,
						    said_words(v[q].said)), sep = "; ";
			fprintf(f, "\n");
		} else {
			const struct plan_proxy	*x = &p->proxies[a->proxy];
			const struct plan_step	*s = &x->steps[a->index];
			const struct min_note	*z = &v[j - 1];
			const struct plan_step	*t = &x->steps[a->index + (size_t)z->latency_ms];

			fprintf(f, "  step %zu of %s, turn %d's %s: ", a->index + 1, x->name,
			    s->turn, s->what ? s->what : "statement");
			if (z->said == MIN_STILL_FAILS)
				fprintf(f, "%lld later (after turn %d's %s) — still fails (its place "
				    "does not matter that far)\n", (long long)z->latency_ms,
				    t->turn, t->what ? t->what : "statement");
			else
				fprintf(f, "%s%lld later (after turn %d's %s) — %s (its place "
				    "matters)\n", z->latency_ms > 1 ? "up to 1 less still "
				    "fails; " : "", (long long)z->latency_ms, t->turn, t->what ?
				    t->what : "statement", said_words(z->said));
		}
	}
}

