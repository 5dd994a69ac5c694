/*
 * A failing seed minimized in one call: the original run, its plan, the
 * reduction and the story (minimize.h's wrk_minimize).  `soak minimize`
 * shares the first steps (min_original, min_normalize) and prints as it
 * goes; a worker's minimize lease (tickets.minimize, docs/tickets.md)
 * calls wrk_minimize and sends the coordinator what it made.
 */
#include "worker/minimize.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/plan.h"
#include "common/scrub.h"
#include "common/util.h"
#include "common/verdict.h"

int
min_original(struct wrk *w, uint64_t seed, int tries,
    volatile sig_atomic_t *stop, struct seed_result *res, char *why, size_t len)
{
	int	i;

	for (i = 0; i < tries; i++) {
		memset(res, 0, sizeof(*res));
		wrk_run_seed(w, seed, 1, res);
		if (res->verdict == VERDICT_FAIL)
			return 0;
		snprintf(why, len, "%s%s%s: %s", msg_verdict_name(res->verdict),
		    res->reason != REASON_NONE ? " " : "", reason_name(res->reason),
		    res->message);
		if ((stop != NULL && *stop) || i + 1 == tries)
			break;
		seed_result_clear(res);
	}
	return -1;
}

int
min_plan_of(const struct seed_result *res, struct plan *p, char *err)
{
	json_t	*o = json_object_get(res->detail, "plan");
	char	*text = json_is_object(o) ? json_dumps(o, 0) : NULL;
	int	 rc;

	if (text == NULL)
		return errf(err, "its result holds no plan");
	rc = plan_parse(text, strlen(text), "the seed's plan", p, err);
	free(text);
	return rc;
}

void
min_normalize(struct plan *best)
{
	struct min_elem	*e;
	size_t		 n = min_elems(best, MIN_RUNS, &e), i;
	bool		*all = xcalloc(n + 1, sizeof(*all));
	struct plan	 norm;

	for (i = 0; i < n; i++)
		all[i] = true;
	min_candidate(best, MIN_RUNS, e, n, all, &norm);
	plan_free(best);
	*best = norm;
	free(all);
	free(e);
}

void
min_prepare(struct plan *best, const char *want, const char *message,
    size_t n0[MIN_KINDS])
{
	free(best->fingerprint);
	best->fingerprint = xstrdup(want);
	free(best->message);
	best->message = xstrdup(message);
	min_normalize(best);
	min_counts(best, n0);
}

int64_t
min_candidate_ms(const struct cfg *cfg, int64_t orig_ms)
{
	int64_t	t = orig_ms * 2 > MIN_TIMEOUT_FLOOR_MS ? orig_ms * 2 :
		    MIN_TIMEOUT_FLOOR_MS;

	return cfg->seed_timeout_ms > 0 && t > cfg->seed_timeout_ms ?
	    cfg->seed_timeout_ms : t;
}

bool
min_replayed(struct min_run *m, const struct plan *best)
{
	uint64_t	h = min_plan_hash(best);

	if (m->last_hash != h && !(m->stop != NULL && *m->stop)) {
		m->nseen = 0;
		m->deadline_ms = INT64_MAX;
		(void)min_test(m, best);
	}
	return m->last_hash == h;
}

void
min_counts_line(const struct min_run *m, const size_t n0[MIN_KINDS],
    bool rounds, const struct plan *p, char *buf, size_t len)
{
	size_t	n[MIN_KINDS], o = 0;
	int	k;

	min_counts(p, n);
	buf[0] = '\0';
	for (k = rounds ? 0 : 1; k < MIN_KINDS; k++)
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s %zu → %zu, ",
		    min_kind_name((enum min_kind)k), n0[k], n[k]);
	snprintf(buf + (o < len ? o : len - 1), o < len ? len - o : 1,
	    "%zu replays, %lld s", m->replays,
	    (long long)((now_ms() - m->started_ms + 500) / 1000));
}

/* The lease's result: verdict, reason and the "minimize" record. */
static void
said(struct seed_result *res, int verdict, enum reason why, json_t *rec,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
said(struct seed_result *res, int verdict, enum reason why, json_t *rec,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	res->verdict = verdict;
	res->reason = why;
	json_object_set_new(rec, "message", json_string(res->message));
	res->detail = json_pack("{s:s, s:o}", "message", res->message, "minimize", rec);
}

void
wrk_minimize(struct wrk *w, uint64_t seed, int tries, int64_t budget_ms,
    char *(*fingerprint)(const struct cfg *, const struct seed_result *),
    volatile sig_atomic_t *stop, struct seed_result *res)
{
	const char		*was_keep = w->keep_name;
	const struct plan	*was_plan = w->plan;
	bool			 was_save = w->save_plan, was_whole = w->whole_trace;
	int64_t			 was_timeout = w->seed_timeout_ms;
	struct seed_result	 orig = { 0 };
	struct min_run		 m = { 0 };
	struct plan		 best = { 0 };
	json_t			*rec = json_object(), *counts;
	char			 why[600] = "", err[ERR_LEN], line[256], *story = NULL;
	char			*keep = xasprintf("minimize-%" PRIu64, seed);
	size_t			 n0[MIN_KINDS], n[MIN_KINDS], slen = 0;
	int64_t			 t0 = now_ms();
	int			 k, stopped;
	bool			 replayed;
	FILE			*f;

	memset(res, 0, sizeof(*res));
	/* Its own folder: a candidate's failing workspace replaces the last. */
	w->keep_name = keep;
	w->plan = NULL;
	w->save_plan = true;
	w->whole_trace = true;
	json_object_set_new(rec, "tries", json_integer(tries));
	json_object_set_new(rec, "budget_ms", json_integer(budget_ms));
	if (min_original(w, seed, tries, stop, &orig, why, sizeof(why)) == -1) {
		if (orig.verdict == VERDICT_PASS) {
			json_object_set_new(rec, "outcome", json_string("no_failure"));
			said(res, VERDICT_PASS, REASON_NONE, rec, "seed %" PRIu64 " does "
			    "not fail in %d tr%s: %s", seed, tries, tries == 1 ? "y" : "ies",
			    why);
		} else {
			json_object_set_new(rec, "outcome", json_string("cannot"));
			said(res, VERDICT_INFRA, orig.reason, rec, "cannot minimize: seed %"
			    PRIu64 " ended %s", seed, why);
		}
		goto out;
	}
	m.want = fingerprint(w->cfg, &orig);
	if (min_plan_of(&orig, &best, err) == -1) {
		json_object_set_new(rec, "outcome", json_string("cannot"));
		said(res, VERDICT_INFRA, REASON_PLAN, rec, "cannot minimize: seed %"
		    PRIu64 " failed, but made no plan: %s", seed, err);
		goto out;
	}
	min_prepare(&best, m.want, orig.message, n0);
	w->seed_timeout_ms = min_candidate_ms(w->cfg, orig.duration_ms);
	w->save_plan = false;
	m.w = w;
	m.fingerprint = fingerprint;
	m.tries = tries;
	m.started_ms = t0;
	m.deadline_ms = budget_ms > 0 ? t0 + budget_ms : INT64_MAX;
	m.stop = stop;
	switch (min_test(&m, &best)) {
	case 0:
		json_object_set_new(rec, "outcome", json_string("no_failure"));
		said(res, VERDICT_PASS, REASON_NONE, rec, "seed %" PRIu64 " fails, but "
		    "its plan does not replay the failure in %d tr%s (%zu diverged, %zu "
		    "failed otherwise)", seed, tries, tries == 1 ? "y" : "ies",
		    m.diverged, m.other);
		goto out;
	case -1:
		stopped = -1;
		break;
	default:
		log_set_warnings(log_verbose());
		stopped = min_minimize(&m, &best);
		log_set_warnings(1);
		break;
	}
	/* The story of the plan as sent, from its own failing replay. */
	replayed = min_replayed(&m, &best);
	if (replayed && (f = open_memstream(&story, &slen)) != NULL) {
		min_story(f, w->cfg, &best, &m.last);
		fclose(f);
	}
	min_counts(&best, n);
	min_counts_line(&m, n0, w->cfg->rounds > 1, &best, line, sizeof(line));
	counts = json_object();
	for (k = 0; k < MIN_KINDS; k++)
		json_object_set_new(counts, min_kind_name((enum min_kind)k),
		    json_pack("[I, I]", (json_int_t)n0[k], (json_int_t)n[k]));
	{
		char	*text = plan_dump(&best);

		json_object_set_new(rec, "plan", json_loads(text, JSON_DECODE_ANY |
		    JSON_ALLOW_NUL, NULL));
		free(text);
	}
	json_object_set_new(rec, "outcome", json_string(stopped == -1 ? "stopped" :
	    "minimal"));
	json_object_set_new(rec, "fingerprint", json_string(m.want));
	json_object_set_new(rec, "counts", counts);
	json_object_set_new(rec, "summary", json_string(line));
	json_object_set_new(rec, "story", story != NULL ? json_string(story) :
	    json_null());
	json_object_set_new(rec, "replays", json_integer((json_int_t)m.replays));
	json_object_set_new(rec, "candidates", json_integer((json_int_t)m.candidates));
	json_object_set_new(rec, "disagreed", json_integer((json_int_t)m.disagreed));
	json_object_set_new(rec, "diverged", json_integer((json_int_t)m.diverged));
	json_object_set_new(rec, "failed_otherwise", json_integer((json_int_t)m.other));
	said(res, VERDICT_FAIL, orig.reason, rec, "%s: %s", stopped == -1 ?
	    "stopped by the budget: the smallest failing plan so far, not shown "
	    "1-minimal" : "1-minimal", line);
	/* the broken invariants of the minimal plan's replay, as a seed's */
	if (replayed && json_object_get(m.last.detail, "invariants") != NULL)
		json_object_set(res->detail, "invariants", json_object_get(m.last.detail,
		    "invariants"));
out:
	/* (every path told said(), which took rec) */
	/* Before it is sent (common/scrub.h): the story quotes turns. */
	if (w->scrub != NULL) {
		scrub_text(w->scrub, res->message);
		scrub_json(w->scrub, res->detail);
	}
	res->duration_ms = now_ms() - t0;
	free(story);
	free(m.want);
	min_run_free(&m);
	plan_free(&best);
	seed_result_clear(&orig);
	/* the worker's own settings back, for its next lease */
	w->keep_name = was_keep;
	w->plan = was_plan;
	w->save_plan = was_save;
	w->whole_trace = was_whole;
	w->seed_timeout_ms = was_timeout;
	free(keep);
}
