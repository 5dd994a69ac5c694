/*
 * The coordinator's bookkeeping (coord.h), in parts; this file is the
 * core: the state and its life, each attempt's outcome recorded (the
 * verdict or a retry, the quarantine's count, the early stop), the halt,
 * and what the state reads as.  coord.h's rules, by the file that holds
 * each:
 *
 *   one final verdict per seed; an infra      coord.c (coord_seed_outcome);
 *   attempt retried, on another worker        the retry leased in lease.c
 *   leases in shrinking chunks; lease_steal   lease.c (coord_serve)
 *   a lease's ttl, heartbeats, its end        lease.c (coord_tick,
 *   (the seed running "worker-lost")          coord_lease_end); heartbeats
 *                                             and bye in requests.c
 *   results refused under a dead lease, or    requests.c (handle_result)
 *   for a seed not held; the ACK's keep
 *   quarantine                                coord.c (worker_outcome); the
 *                                             lease cut in requests.c
 *   the early stop, coord_halt                coord.c (early_note, halt_now)
 *   regressions: leased before the range,     lease.c (coord_serve); their
 *   each alone, keyed by name and hash        results requests.c
 *   confirming re-runs, minimize leases       confirm.c (queued, outcomes);
 *                                             leased and lost in lease.c
 *   explore leases (coord_explore)            lease.c (granted, lost),
 *                                             requests.c (explore_result)
 *   the journal's replay, coord_dump          coord_journal.c
 *
 * The struct, the getters and the state setters they share are in
 * coord_int.h, which says which way calls go.
 */
#include "coordinator/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfgerr.h"
#include "common/log.h"
#include "common/queue.h"
#include "common/regress.h"
#include "common/util.h"
#include "coordinator/coord_int.h"
#include "coordinator/coverage.h"

/* ---- the state and its life ---- */

struct coord *
coord_new(const struct coord_opts *o, char *err)
{
	struct coord	*c;
	uint64_t	 n = o->explore ? 0 : seed_range_count(&o->seeds), i;

	if (o->explore == NULL && (n == 0 || n > MAX_SEEDS)) {
		errf(err, "a run holds at most %u seeds; split the range", MAX_SEEDS);
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->o = *o;
	if (c->o.max_chunk <= 0)
		c->o.max_chunk = 32;
	if (c->o.quarantine_after <= 0)
		c->o.quarantine_after = 3;
	c->nseeds = n;
	c->nregs = o->regress != NULL ? o->regress->n : 0;
	c->seeds = xcalloc(n + c->nregs, sizeof(*c->seeds));
	queue_init(&c->regq, sizeof(uint64_t));
	queue_init(&c->returned, sizeof(uint64_t));
	queue_init(&c->retry, sizeof(uint64_t));
	queue_init(&c->confirm, sizeof(uint64_t));
	queue_init(&c->minq, sizeof(uint64_t));
	c->cov = cov_new(o->cfg);
	for (i = 0; i < n; i++) {
		c->seeds[i].seed = o->seeds.first + i;
	}
	for (i = 0; i < c->nregs; i++) {
		struct coord_seed	*s = &c->seeds[n + i];

		s->seed = o->regress->v[i].seed;
		s->regress = &o->regress->v[i];
		q_push(c, &c->regq, s);
	}
	return c;
}

void
coord_free(struct coord *c)
{
	uint64_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nseeds + c->nregs; i++) {
		json_decref(c->seeds[i].history);
		json_decref(c->seeds[i].detail);
	}
	for (i = 0; i < c->nleases; i++) {
		free(c->leases[i].seeds);
		free(c->leases[i].reported);
		free(c->leases[i].explore);
	}
	for (i = 0; i < c->nworkers; i++) {
		free(c->workers[i].name);
		free(c->workers[i].host);
	}
	queue_free(&c->regq);
	queue_free(&c->returned);
	queue_free(&c->retry);
	queue_free(&c->confirm);
	queue_free(&c->minq);
	cov_free(c->cov);
	free(c->starting);
	free(c->halt_why);
	free(c->halt_asked);
	free(c->leases);
	free(c->workers);
	free(c->seeds);
	free(c);
}

void
coord_on_final(struct coord *c, coord_final_cb cb, void *arg)
{
	c->final_cb = cb;
	c->final_arg = arg;
}

void
coord_on_event(struct coord *c, coord_event_cb cb, void *arg)
{
	c->event_cb = cb;
	c->event_arg = arg;
}

/* ---- an attempt's outcome: verdict or retry, quarantine, early stop ---- */

/*
 * Quarantine: a worker whose own seeds end infra quarantine_after times in
 * a row gets no more leases.  Only what points at the worker's machine
 * counts — a service or proxy that would not start there, the worker lost
 * — not the database (shared by every worker), a turn that cannot be
 * executed or a setup that fails (the config's, on every worker alike),
 * nor a turn's own exit 75.  A pass or a fail clears the count.
 */
static void
worker_outcome(struct coord *c, struct wrec *w, enum reason why)
{
	if (w == NULL || w->quarantined)
		return;
	if (why != REASON_SERVICE && why != REASON_PROXY && why != REASON_WORKER_LOST) {
		if (reason_verdict(why) != VERDICT_INFRA)
			w->infra_run = 0;
		return;
	}
	w->quarantine_why = why;
	if (++w->infra_run < (uint32_t)c->o.quarantine_after)
		return;
	w->quarantined = true;
	c->nquarantined++;
	log_warnx("worker %u (%s) quarantined: %u infra outcomes in a row, the last "
	    "%s", w->id, w->name, w->infra_run, reason_name(why));
}

/*
 * A pass whose detail says no more than its turn counts keeps only them:
 * {"message": "K of N turns ok", "round": null, "ok_turns": K,
 * "total_turns": N}, as worker/seedrun.c words every pass.  Its "timing"
 * (when its turns ran) stays in the journal alone, for report.html: a
 * million passes would otherwise hold a million of them here.
 */
static void
pass_compact(struct coord_seed *s)
{
	json_t		*ok, *total, *msgj;
	char		 words[64];

	if (s->verdict == VERDICT_PASS)
		json_object_del(s->detail, "timing");
	ok = json_object_get(s->detail, "ok_turns");
	total = json_object_get(s->detail, "total_turns");
	msgj = json_object_get(s->detail, "message");
	if (s->verdict != VERDICT_PASS || json_object_size(s->detail) != 4 ||
	    !json_is_integer(ok) || !json_is_integer(total) ||
	    json_integer_value(ok) < 0 || json_integer_value(ok) > UINT32_MAX ||
	    json_integer_value(total) < 0 || json_integer_value(total) > UINT32_MAX ||
	    !json_is_null(json_object_get(s->detail, "round")) || !json_is_string(msgj))
		return;
	if (strcmp(verdict_pass_words(words, sizeof(words), json_integer_value(ok),
	    json_integer_value(total)), json_string_value(msgj)) != 0)
		return;
	s->ok_turns = (uint32_t)json_integer_value(ok);
	s->total_turns = (uint32_t)json_integer_value(total);
	json_decref(s->detail);
	s->detail = NULL;
}

json_t *
coord_seed_detail(const struct coord_seed *s)
{
	if (s->detail != NULL)
		return json_incref(s->detail);
	if (s->state != CSEED_FINAL)
		return json_object();
	return json_pack("{s:o, s:n, s:I, s:I}", "message", json_sprintf("%u of %u "
	    "turns ok", s->ok_turns, s->total_turns), "round",
	    "ok_turns", (json_int_t)s->ok_turns, "total_turns", (json_int_t)s->total_turns);
}

json_t *
coord_seed_attempts(const struct coord_seed *s)
{
	json_t	*a = s->history ? json_copy(s->history) : json_array();
	json_t	*d, *msgj;

	if (s->state != CSEED_FINAL)
		return a;
	d = coord_seed_detail(s);
	msgj = json_object_get(d, "message");
	json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:I, s:s}",
	    "worker", (int)s->worker, "verdict", msg_verdict_name(s->verdict),
	    "reason", reason_name(s->why), "duration_ms", (json_int_t)s->duration_ms,
	    "message", json_is_string(msgj) ? json_string_value(msgj) : ""));
	json_decref(d);
	return a;
}

/*
 * The early stop (docs/results.md "Reading the results").  A config mistake --
 * a turn command that is not there, an invariant that does not parse --
 * fails every seed the same way on every worker, and retrying each seed
 * twice only hides it.  So when the first-attempt outcomes of the first
 * EARLY_SEEDS seeds to report (all of them, in a smaller run) are all infra
 * with the same config error (common/cfgerr.h: a cause no retry mends,
 * named by the worker), and nothing else came first -- no pass, no fail,
 * no other infra -- the run stops: early_halt.  One first attempt without
 * it settles the run as one that goes on, whatever comes later.  Derived
 * from the outcomes alone, in the order coord_seed_outcome sees them, so the
 * journal's replay (coord_replay) stops where the run stopped.
 */
static void	early_halt(struct coord *);
static void	halt_now(struct coord *);

static void
early_note(struct coord *c, const struct coord_seed *s, enum reason why,
    const json_t *detail)
{
	struct cfgerr	e;
	uint64_t	total = c->nseeds + c->nregs;
	uint64_t	want = total < EARLY_SEEDS ? total : EARLY_SEEDS;

	if (c->early_off || c->halt_why != NULL || s->infra > 0)
		return;		/* decided, or not the seed's first attempt */
	if (reason_verdict(why) != VERDICT_INFRA ||
	    cfgerr_from_detail(detail, &e) == -1 ||
	    (c->early_seen > 0 && !cfgerr_same(&e, &c->early_err))) {
		c->early_off = true;
		return;
	}
	if (c->early_seen++ == 0)
		c->early_err = e;
	if (c->early_seen >= want)
		early_halt(c);
}

/*
 * A seed waiting for its retry when the run stopped: its last attempt
 * becomes its verdict, with the attempts before it as its history.
 */
static void
seed_final_halted(struct coord *c, struct coord_seed *s)
{
	size_t		 n = json_array_size(s->history);
	json_t		*last = json_incref(json_array_get(s->history, n - 1));
	const char	*msg = json_string_value(json_object_get(last, "message"));
	int		 why = reason_parse(json_string_value(json_object_get(last,
			    "reason")) ? json_string_value(json_object_get(last,
			    "reason")) : "?");
	struct wrec	*w;

	json_array_remove(s->history, n - 1);
	if (json_array_size(s->history) == 0) {
		json_decref(s->history);
		s->history = NULL;
	}
	set_seed_state(s, CSEED_FINAL);
	s->verdict = VERDICT_INFRA;
	s->why = why >= 0 && reason_verdict((enum reason)why) == VERDICT_INFRA ?
	    (enum reason)why : REASON_WORKER_LOST;
	s->worker = (uint32_t)json_integer_value(json_object_get(last, "worker"));
	s->duration_ms = json_integer_value(json_object_get(last, "duration_ms"));
	json_decref(s->detail);
	/* Stopped for a config error: its first attempt was one of those. */
	if (c->early_err.kind != CFGERR_NONE)
		s->detail = json_pack("{s:s, s:o}", "message", msg ? msg : "",
		    "config_error", cfgerr_json(&c->early_err));
	else
		s->detail = json_pack("{s:s}", "message", msg ? msg : "");
	json_decref(last);
	c->nfinal++;
	if ((w = worker_get(c, s->worker)) != NULL)
		w->seeds++;
	s->final_why = FINAL_VERDICT;
	if (c->final_cb && !c->replaying)
		final_call(c, s);
}

/*
 * Stops the run for early_err: nothing more is leased (coord_serve says
 * done), the seeds waiting for a retry keep their last attempt as their
 * verdict, and every active lease keeps only the seed that may be running:
 * the rest go back, never to run, so they end the run without a verdict
 * (missing).  The caller (coord_seed_outcome) makes its own seed final.
 */
static void
early_halt(struct coord *c)
{
	const struct cfg_mark	*m = cfg_mark_find(c->o.cfg, c->early_err.what);
	size_t			 inv;
	int			 line = m ? m->line : 0, col = m ? m->col : 0;
	char			 tail;

	c->halt_status = cfgerr_plain(&c->early_err) ? 78 : 2;
	/* An invariant's SQL: where in the file the server pointed. */
	if (sscanf(c->early_err.what, "invariants[%zu].sq%c", &inv, &tail) == 2 &&
	    tail == 'l' && c->early_err.position > 0)
		cfg_sql_where(c->o.cfg, inv, c->early_err.position, &line, &col);
	if (line > 0)
		c->halt_why = xasprintf("a config error on the first %u seed(s), which "
		    "no retry mends: %s:%d:%d: %s: %s", c->early_seen, c->o.cfg->path,
		    line, col, c->early_err.what, c->early_err.detail);
	else
		c->halt_why = xasprintf("a config error on the first %u seed(s), which "
		    "no retry mends: %s: %s", c->early_seen, c->early_err.what,
		    c->early_err.detail);
	halt_now(c);
}

/*
 * The run stops (c->halt_why set): nothing more is leased (coord_serve
 * says done), the seeds waiting for a retry keep their last attempt as
 * their verdict, and every active lease keeps only the seed that may be
 * running: the rest go back, never to run, so they end the run without a
 * verdict (missing).
 */
static void
halt_now(struct coord *c)
{
	uint64_t	idx;
	uint32_t	run, k;
	size_t		i;

	log_debug("the run stops: %s", c->halt_why);
	while (c->retry.len > 0) {
		idx = q_at(&c->retry, 0);
		queue_remove(&c->retry, 0);
		seed_final_halted(c, &c->seeds[idx]);
	}
	for (i = 0; i < c->nleases; i++) {
		struct lease	*l = &c->leases[i];

		if (l->state != LEASE_ACTIVE || (run = lease_running(l)) + 1 >= l->keep)
			continue;
		for (k = run + 1; k < l->keep; k++) {
			struct coord_seed	*t = item_get(c, l, k);

			if (t != NULL && t->state == CSEED_LEASED)
				seed_return(c, t);
		}
		l->keep = run + 1;
	}
}

bool
coord_reg_pass_earned(const json_t *detail)
{
	const json_t	*ex = json_object_get(detail, "explored");

	if (json_object_get(detail, "diverged") == NULL)
		return true;
	return json_is_true(json_object_get(ex, "complete")) &&
	    json_integer_value(json_object_get(ex, "executions")) > 0 &&
	    json_is_integer(json_object_get(ex, "failing")) &&
	    json_integer_value(json_object_get(ex, "failing")) == 0;
}

/*
 * Records one attempt's outcome and decides: final, or back in the retry
 * queue.  detail is consumed.
 */
void
coord_seed_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	json_t		*msgj;
	struct wrec	*w = worker_get(c, worker);
	int		 verdict;
	bool		 final;

	/*
	 * A regression whose plan diverged passes only on a complete, clean
	 * exploration (worker/regexplore.h); a worker's pass that does not
	 * say so tested nothing.
	 */
	if (s->regress != NULL && why == REASON_NONE && !coord_reg_pass_earned(detail)) {
		char	*m = xasprintf("its plan diverged, and the worker's pass has no "
			    "complete exploration without a failing schedule behind it: "
			    "%s", json_string_value(json_object_get(detail, "message")) ?
			    json_string_value(json_object_get(detail, "message")) : "");

		json_object_set_new(detail, "message", json_string(m));
		free(m);
		why = REASON_DIVERGED;
	}
	msgj = json_object_get(detail, "message");
	verdict = reason_verdict(why);
	/* An exploration another worker would repeat is not retried. */
	final = s->regress != NULL && json_is_true(json_object_get(json_object_get(detail,
	    "explored"), "final"));
	s->last_worker = worker;
	worker_outcome(c, w, why);
	early_note(c, s, why, detail);
	/* A stopped run retries nothing: no more attempts will run. */
	if (verdict == VERDICT_INFRA && (int)s->infra++ < c->o.cfg->retries &&
	    c->halt_why == NULL && !final) {
		if (s->history == NULL)
			s->history = json_array();
		json_array_append_new(s->history, json_pack("{s:i, s:s, s:s, s:I, s:s}",
		    "worker", (int)worker, "verdict", msg_verdict_name(verdict),
		    "reason", reason_name(why), "duration_ms", (json_int_t)duration_ms,
		    "message", json_is_string(msgj) ? json_string_value(msgj) : ""));
		set_seed_state(s, CSEED_PENDING);
		c->retries++;
		q_push(c, &c->retry, s);
		log_debug("seed %" PRIu64 ": infra (%s), retry %u of %d", s->seed,
		    reason_name(why), s->infra, c->o.cfg->retries);
		json_decref(detail);
		return;
	}
	set_seed_state(s, CSEED_FINAL);
	s->verdict = (uint8_t)verdict;
	s->why = why;
	s->worker = worker;
	s->duration_ms = duration_ms;
	/* Counted once, as the seed ended; a pass keeps only the sums. */
	s->forced = cov_seed_forced(json_object_get(detail, "coverage"));
	cov_add(c->cov, json_object_get(detail, "coverage"));
	cov_seed_waits(c->cov, json_object_get(detail, "timing"), &s->waits);
	cov_add_waits(c->cov, s->seed, &s->waits, duration_ms);
	if (verdict == VERDICT_PASS && json_object_get(detail, "coverage") != NULL) {
		/* a copy: the journal's event may still hold this one */
		json_t	*d = json_copy(detail);

		json_object_del(d, "coverage");
		json_decref(detail);
		detail = d;
	}
	json_decref(s->detail);
	s->detail = detail;
	pass_compact(s);
	c->nfinal++;
	if (w)
		w->seeds++;
	s->final_why = FINAL_VERDICT;
	if (c->final_cb && !c->replaying)
		final_call(c, s);
	if (c->nfinal == c->nseeds + c->nregs)
		coord_plan_confirms(c);
}

/* ---- the halt ---- */

const char *
coord_halt_reason(const struct coord *c)
{
	if (c->halt_why != NULL)
		return c->halt_why;
	if (coord_halted(c))
		return "every worker is quarantined (see workers in report.json)";
	return NULL;
}

int
coord_halt_status(const struct coord *c)
{
	return c->halt_why != NULL ? c->halt_status : 0;
}

const struct cfgerr *
coord_halt_cfgerr(const struct coord *c)
{
	return c->halt_why != NULL ? &c->early_err : NULL;
}

void
coord_halt(struct coord *c, int status, const char *why)
{
	if (c->in_cb > 0) {
		if (c->halt_asked == NULL) {
			c->halt_asked = xstrdup(why);
			c->halt_asked_status = status;
		}
		return;
	}
	coord_halt_apply(c);
	if (c->halt_why != NULL || coord_finished(c))
		return;
	c->halt_why = xstrdup(why);
	c->halt_status = status;
	halt_now(c);
}

void
coord_halt_apply(struct coord *c)
{
	char	*why = c->halt_asked;

	if (why == NULL || c->in_cb > 0)
		return;
	c->halt_asked = NULL;
	coord_halt(c, c->halt_asked_status, why);
	free(why);
}

void
coord_halt_not_plain(struct coord *c, const char *why)
{
	char	*was = c->halt_why;

	if (was == NULL)
		return;
	c->halt_why = xasprintf("%s (%s)", was, why);
	c->halt_status = 2;
	free(was);
}

bool
coord_halted(const struct coord *c)
{
	size_t	i;

	if (c->halt_why != NULL)
		return true;
	if (c->nquarantined == 0 || coord_finished(c))
		return false;
	for (i = 0; i < c->nworkers; i++)
		if (!c->workers[i].quarantined && (c->workers[i].alive ||
		    c->workers[i].lease != 0))
			return false;
	return true;
}

/* ---- what the state reads as ---- */

bool
coord_pid_reported(const struct coord *c, uint32_t pid)
{
	size_t	i;

	/* The newest worker of that pid: a pid may come back in a long run. */
	for (i = c->nworkers; i-- > 0;)
		if (c->workers[i].pid == pid)
			return c->workers[i].results > 0;
	return false;
}

int
coord_awaited_workers(const struct coord *c, int64_t now)
{
	size_t	i;
	int	n = 0;

	for (i = 0; i < c->nworkers; i++) {
		const struct wrec	*w = &c->workers[i];

		n += w->alive || (!w->bye && !w->quarantined && (w->restored ||
		    now - w->closed_at < c->o.lease_ttl_ms));
	}
	return n;
}

int
coord_live_workers(const struct coord *c)
{
	size_t	i;
	int	n = 0;

	for (i = 0; i < c->nworkers; i++)
		n += c->workers[i].alive;
	return n;
}

bool
coord_finished(const struct coord *c)
{
	if (c->o.explore != NULL)
		return c->nexplore_open == 0 && c->o.explore->done(c->o.explore->arg);
	return c->nfinal == c->nseeds + c->nregs && c->nconfirm_open == 0 &&
	    c->nmin_open == 0;
}

void
coord_counts(const struct coord *c, struct coord_counts *n)
{
	uint64_t	i;

	memset(n, 0, sizeof(*n));
	n->total = c->nseeds;
	n->retries = c->retries;
	for (i = 0; i < c->nseeds; i++) {
		if (c->seeds[i].state != CSEED_FINAL)
			continue;
		n->done++;
		if (c->seeds[i].verdict == VERDICT_PASS)
			n->pass++;
		else if (c->seeds[i].verdict == VERDICT_FAIL)
			n->fail++;
		else
			n->infra++;
	}
}

const struct coord_seed *
coord_seeds(const struct coord *c, uint64_t *n)
{
	*n = c->nseeds;
	return c->seeds;
}

const struct coord_seed *
coord_regressions(const struct coord *c, size_t *n)
{
	*n = c->nregs;
	return c->seeds + c->nseeds;
}

void
coord_reg_counts(const struct coord *c, struct coord_reg_counts *n)
{
	size_t	i;

	memset(n, 0, sizeof(*n));
	n->total = c->nregs;
	for (i = 0; i < c->nregs; i++) {
		const struct coord_seed	*s = &c->seeds[c->nseeds + i];

		if (s->state != CSEED_FINAL)
			continue;
		n->done++;
		if (json_is_object(json_object_get(s->detail, "explored")))
			n->explored++;
		/* A diverged plan tested nothing: never a pass. */
		if (s->verdict == VERDICT_PASS)
			n->pass++;
		else if (s->verdict == VERDICT_FAIL)
			n->fail++;
		else if (s->why == REASON_DIVERGED)
			n->diverged++;
		else
			n->infra++;
	}
}

const struct cov *
coord_coverage(const struct coord *c)
{
	return c->cov;
}

json_t *
coord_workers_json(const struct coord *c)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; i < c->nworkers; i++) {
		const struct wrec	*w = &c->workers[i];
		json_t			*o = json_pack("{s:i, s:s, s:s, s:i, s:i}",
		    "id", (int)w->id, "host", w->host, "name", w->name,
		    "pid", (int)w->pid, "seeds", (int)w->seeds);

		if (w->quarantined)
			json_object_set_new(o, "quarantined", json_sprintf("%u infra "
			    "outcomes in a row, the last %s", w->infra_run,
			    reason_name(w->quarantine_why)));
		json_array_append_new(a, o);
	}
	return a;
}
