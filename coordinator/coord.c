#include "coordinator/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfgerr.h"
#include "common/log.h"
#include "common/plan.h"
#include "common/queue.h"
#include "common/regress.h"
#include "common/util.h"
#include "coordinator/coverage.h"
#include "coordinator/fingerprint.h"
#include "fault-proxy/proxy.h"

#define MAX_SEEDS	(10u * 1000 * 1000)	/* one run; a bigger sweep is several runs */
#define CONFIRM_MAX	20	/* confirming re-runs per run: one per distinct failure */
#define MINIMIZE_TRIES	2	/* minimize leases of a seed, when workers are lost */
#define EARLY_SEEDS	3	/* the early stop looks at this many seeds' first attempts */

enum lease_state { LEASE_ACTIVE, LEASE_DONE, LEASE_EXPIRED };
static const char *const lease_state_names[] = { "active", "done", "expired" };
static const char *const seed_state_names[] = {
	[CSEED_PENDING] = "pending", [CSEED_LEASED] = "leased", [CSEED_FINAL] = "final",
};
static const char *const confirm_names[] = {
	[CONFIRM_NONE] = "none", [CONFIRM_PENDING] = "pending",
	[CONFIRM_LEASED] = "leased", [CONFIRM_DONE] = "done",
};

struct lease {
	uint64_t		 id;
	uint32_t		 worker;
	enum lease_state	 state;
	int64_t			 expires;
	uint32_t		 n;
	/*
	 * seeds[0..keep) are the worker's; the tail past keep was taken by
	 * an idle worker (lease_steal).  The worker learns keep from the
	 * ACK of each result, before it starts its next seed.
	 */
	uint32_t		 keep;
	uint64_t		 from;		/* the lease its seeds were taken from */
	bool			 confirm;	/* a confirming re-run */
	bool			 minimize;	/* a minimize lease (tickets.minimize) */
	/* An explore lease (coord_explore): its execution's number, 0 for
	 * any other lease, and its text */
	uint64_t		 explore_no;
	char			*explore;
	/* A regression's lease: 1 + its index in the regressions (it holds
	 * that one alone); 0 for a lease of seeds. */
	size_t			 reg;
	struct msg_seed		*seeds;
	uint8_t			*reported;
};

struct wrec {
	uint32_t	 id;
	char		*name, *host;
	uint32_t	 pid;
	uint32_t	 pipe;
	bool		 alive;
	uint64_t	 lease;		/* 0 = none */
	uint32_t	 seeds;		/* final verdicts it produced */
	uint32_t	 results;	/* results accepted from it, any attempt */
	uint32_t	 infra_run;	/* its own infra outcomes in a row */
	bool		 bye;		/* it said bye: gone for good */
	bool		 restored;	/* from the journal, not rejoined yet */
	int64_t		 closed_at;	/* its connection closed (now_ms) */
	bool		 quarantined;
	enum reason	 quarantine_why;	/* the last of the run */
};

struct coord {
	struct coord_opts	 o;
	/* the range's seeds, then the nregs regressions (c->seeds + nseeds) */
	struct coord_seed	*seeds;
	uint64_t		 nseeds, next_fresh, nfinal;
	size_t			 nregs;
	struct queue		 regq;		/* regressions waiting for a lease */
	/* FIFOs of seed indices (uint64_t) */
	struct queue		 returned;	/* unstarted seeds of dead leases */
	struct queue		 retry;		/* infra seeds waiting for a new attempt */
	struct queue		 confirm;	/* failing seeds waiting for their re-run */
	uint64_t		 nconfirm_open;	/* confirming re-runs without an outcome */
	struct queue		 minq;		/* failing seeds waiting to be minimized */
	uint64_t		 nmin_open;	/* minimize leases without an outcome */
	uint64_t		 nexplore_open;	/* explore leases without a result */
	struct lease		*leases;
	size_t			 nleases, cap_leases;
	struct wrec		*workers;
	size_t			 nworkers;
	coord_final_cb		 final_cb;
	void			*final_arg;
	coord_event_cb		 event_cb;
	void			*event_arg;
	bool			 replaying;	/* coord_replay: no events, no callbacks */
	uint64_t		 retries;
	uint32_t		 nquarantined;
	/* The early stop (early_note): a config error on the first seeds. */
	uint32_t		 early_seen;	/* first attempts, all with early_err */
	bool			 early_off;	/* another outcome came: never stop */
	struct cfgerr		 early_err;
	char			*halt_why;	/* why the run stopped, or NULL */
	int			 in_cb;		/* inside an event or final callback */
	char			*halt_asked;	/* coord_halt from a callback: at the next entry */
	int			 halt_asked_status;
	int			 halt_status;	/* its exit status: 78 or 2 */
	struct cov		*cov;		/* what the final attempts exercised */
	/* Local worker processes started and not joined (coord_worker_starting). */
	struct starting {
		uint32_t	 pid;
		int64_t		 at;
	}			*starting;
	size_t			 nstarting;
};

static uint64_t
q_at(const struct queue *q, size_t i)
{
	return *(const uint64_t *)queue_at(q, i);
}

/* Queues the seed s by its index. */
static void
q_push(struct coord *c, struct queue *q, const struct coord_seed *s)
{
	uint64_t	idx = (uint64_t)(s - c->seeds);

	queue_push(q, &idx);
}

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

static struct wrec *
worker_get(struct coord *c, uint32_t id)
{
	if (id == 0 || id > c->nworkers)
		return NULL;
	return &c->workers[id - 1];
}

static struct lease *
lease_get(struct coord *c, uint64_t id)
{
	if (id == 0 || id > c->nleases)
		return NULL;
	return &c->leases[id - 1];
}

static struct coord_seed *
seed_get(struct coord *c, uint64_t seed)
{
	if (seed < c->o.seeds.first || seed > c->o.seeds.last)
		return NULL;
	return &c->seeds[seed - c->o.seeds.first];
}

/*
 * What l->seeds[i] is: the lease's regression, or the seed of the range
 * by its number.  NULL when the lease cannot hold it.
 */
static struct coord_seed *
item_get(struct coord *c, const struct lease *l, uint32_t i)
{
	if (l->reg != 0)
		return i == 0 && l->reg <= c->nregs ? &c->seeds[c->nseeds + l->reg - 1] :
		    NULL;
	return seed_get(c, l->seeds[i].seed);
}

/* "seed 7" or "regression NAME", for the log. */
static const char *
item_words(const struct coord_seed *s, char *buf, size_t len)
{
	if (s->regress != NULL)
		snprintf(buf, len, "regression %s", s->regress->name);
	else
		snprintf(buf, len, "seed %" PRIu64, s->seed);
	return buf;
}

static void
set_lease_state(struct lease *l, enum lease_state s)
{
	log_debug("lease %" PRIu64 " (worker %u): %s -> %s", l->id, l->worker,
	    lease_state_names[l->state], lease_state_names[s]);
	l->state = s;
}

static void
set_seed_state(struct coord_seed *s, enum coord_seed_state st)
{
	char	what[256];

	log_debug("%s: %s -> %s", item_words(s, what, sizeof(what)),
	    seed_state_names[s->state], seed_state_names[st]);
	s->state = st;
}

static void
set_confirm_state(struct coord_seed *s, enum coord_confirm st)
{
	log_debug("seed %" PRIu64 ": confirm %s -> %s", s->seed,
	    confirm_names[s->confirm], confirm_names[st]);
	s->confirm = st;
}

static void
set_min_state(struct coord_seed *s, enum coord_confirm st)
{
	log_debug("seed %" PRIu64 ": minimize %s -> %s", s->seed,
	    confirm_names[s->minimize], confirm_names[st]);
	s->minimize = st;
}

/* The fingerprint of a final seed, or of an outcome (why, detail). */
static char *
fingerprint(const struct coord *c, enum reason why, const json_t *detail)
{
	return fp_string(c->o.cfg->name, reason_name(why),
	    json_object_get(detail, "invariants"));
}

/*
 * Once every seed is final: queues the smallest failing seed of each
 * fingerprint for its confirming re-run (cfg->confirm) and to be
 * minimized before its ticket is filed (tickets.minimize), for the first
 * CONFIRM_MAX fingerprints in seed order.  Seeds are in order, so the
 * groups found before the scan stops are those, with their smallest
 * seeds.
 */
static void
plan_confirms(struct coord *c)
{
	struct fp_groups	 g;
	uint64_t		 i;
	size_t			 k;
	bool			 confirm = c->o.cfg->confirm;
	bool			 minimize = c->o.cfg->tickets.minimize;

	if ((!confirm && !minimize) || c->halt_why != NULL)
		return;
	fp_groups_init(&g, false);
	for (i = 0; i < c->nseeds && g.n < CONFIRM_MAX; i++) {
		struct coord_seed	*s = &c->seeds[i];
		char			*fp;

		if (s->verdict != VERDICT_FAIL)
			continue;
		fp = fingerprint(c, s->why, s->detail);
		fp_groups_add(&g, fp, s->seed, i);
		free(fp);
	}
	for (k = 0; k < g.n; k++) {
		struct coord_seed	*s = &c->seeds[g.v[k].first];

		if (confirm) {
			set_confirm_state(s, CONFIRM_PENDING);
			q_push(c, &c->confirm, s);
			c->nconfirm_open++;
			log_debug("seed %" PRIu64 ": confirming re-run of %s", s->seed,
			    g.v[k].fp);
		}
		if (minimize) {
			set_min_state(s, CONFIRM_PENDING);
			q_push(c, &c->minq, s);
			c->nmin_open++;
			log_debug("seed %" PRIu64 ": to be minimized, for %s", s->seed,
			    g.v[k].fp);
		}
	}
	fp_groups_free(&g);
}

/*
 * The callbacks (coord_on_event, coord_on_final) run in the middle of the
 * coordinator's bookkeeping: a coord_halt from one of them is kept in
 * halt_asked and applied at the next entry (halt_apply), when no lease or
 * seed is half updated.
 */
static void
emit(struct coord *c, enum jev type, json_t *e)
{
	c->in_cb++;
	c->event_cb(c, type, e, c->event_arg);
	c->in_cb--;
}

static void
final_call(struct coord *c, const struct coord_seed *s)
{
	c->in_cb++;
	c->final_cb(c, s, c->final_arg);
	c->in_cb--;
}

/*
 * A confirming re-run that did not reproduce, under a schedule: where its
 * schedule left the run's (the first step of a proxy whose exchange,
 * turns waiting, statement, forced decision, lock wait or deadlock
 * differ), or that it did not, into rec's "schedule".  The details' traces
 * are their first lines; a cut one's marker carries the digests of its
 * whole schedules, so the comparison is whole, or says where it stopped
 * (proxy_schedule_diff).
 */
static void
confirm_schedule(const json_t *run, const json_t *again, json_t *rec)
{
	json_t	*a = json_object_get(run, "trace"), *b = json_object_get(again,
		    "trace");
	char	 out[4096];

	if (!json_is_string(a) && !json_is_string(b))
		return;
	if (proxy_schedule_diff(json_is_string(a) ? json_string_value(a) : "",
	    json_string_length(a), json_is_string(b) ? json_string_value(b) : "",
	    json_string_length(b), "the re-run", out, sizeof(out)) >= 0 &&
	    out[0] != '\0')
		json_object_set_new(rec, "schedule", json_string(out));
}

/*
 * The confirming re-run's outcome: "reproduced" is whether it failed with
 * the same fingerprint; an infra re-run leaves it unknown.  The verdict
 * stands either way.  detail is consumed.
 */
static void
confirm_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	json_t		*msgj = json_object_get(detail, "message"), *rec;
	char		*fp = NULL, *mine;
	int		 verdict = reason_verdict(why);

	set_confirm_state(s, CONFIRM_DONE);
	c->nconfirm_open--;
	rec = json_pack("{s:i, s:s, s:s, s:I, s:s}", "worker", (int)worker,
	    "verdict", msg_verdict_name(verdict), "reason", reason_name(why),
	    "duration_ms", (json_int_t)duration_ms,
	    "message", json_is_string(msgj) ? json_string_value(msgj) : "");
	if (verdict == VERDICT_FAIL) {
		fp = fingerprint(c, why, detail);
		json_object_set_new(rec, "fingerprint", json_string(fp));
	}
	if (verdict != VERDICT_INFRA) {
		mine = fingerprint(c, s->why, s->detail);
		json_object_set_new(s->detail, "reproduced",
		    json_boolean(fp != NULL && strcmp(fp, mine) == 0));
		/* Failing as another bug is not passing: said apart. */
		json_object_set_new(rec, "outcome", json_string(fp == NULL ? "passed" :
		    strcmp(fp, mine) == 0 ? "reproduced" : "failed_differently"));
		if (fp == NULL || strcmp(fp, mine) != 0)
			confirm_schedule(s->detail, detail, rec);
		free(mine);
	} else
		json_object_set_new(rec, "outcome", json_string("infra"));
	json_object_set_new(s->detail, "confirm", rec);
	log_debug("seed %" PRIu64 ": confirming re-run on worker %u: %s %s", s->seed,
	    worker, msg_verdict_name(verdict), reason_name(why));
	free(fp);
	json_decref(detail);
	s->final_why = FINAL_CONFIRM;
	if (c->final_cb && !c->replaying)
		final_call(c, s);
}

/* A worker's minimized plan: a plan of this config, of the seed. */
static int
min_plan_check(const json_t *o, const struct cfg *cfg, uint64_t seed, char *err)
{
	struct plan	 p = { 0 };
	char		*text = json_is_object(o) ? json_dumps(o, JSON_COMPACT) : NULL;
	int		 rc;

	if (text == NULL)
		return errf(err, "the plan is not a JSON object");
	rc = plan_parse(text, strlen(text), "the minimized plan", &p, err);
	free(text);
	if (rc == 0 && p.seed != seed)
		rc = errf(err, "the plan is of seed %" PRIu64 ", not %" PRIu64, p.seed,
		    seed);
	if (rc == 0)
		rc = plan_fits(&p, cfg, err);
	plan_free(&p);
	return rc;
}

/*
 * A minimize lease's outcome (tickets.minimize): the worker's "minimize"
 * record, into the seed's detail as "minimized", with what the
 * coordinator checked of it — the plan parses and fits the config, and
 * the minimal plan's failure has the seed's fingerprint ("same_failure"),
 * else its plan is dropped and the ticket says it was not minimized.  The
 * verdict stands either way.  detail is consumed.
 */
static void
minimize_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	json_t		*got = json_object_get(detail, "minimize"), *rec, *plan;
	json_t		*msgj = json_object_get(detail, "message");
	int		 verdict = reason_verdict(why);
	char		*fp, *mine, err[ERR_LEN];

	set_min_state(s, CONFIRM_DONE);
	c->nmin_open--;
	rec = json_is_object(got) ? json_deep_copy(got) : json_object();
	json_object_set_new(rec, "worker", json_integer(worker));
	json_object_set_new(rec, "verdict", json_string(msg_verdict_name(verdict)));
	json_object_set_new(rec, "reason", json_string(reason_name(why)));
	json_object_set_new(rec, "duration_ms", json_integer(duration_ms));
	json_object_set_new(rec, "message", json_string(json_is_string(msgj) ?
	    json_string_value(msgj) : ""));
	if (!json_is_string(json_object_get(rec, "outcome")))
		json_object_set_new(rec, "outcome", json_string(verdict ==
		    VERDICT_INFRA ? "cannot" : "no_failure"));
	plan = json_object_get(rec, "plan");
	if (verdict == VERDICT_FAIL) {
		fp = fingerprint(c, why, detail);
		mine = fingerprint(c, s->why, s->detail);
		json_object_set_new(rec, "same_failure", json_boolean(strcmp(fp,
		    mine) == 0));
		if (strcmp(fp, mine) != 0)
			log_warnx("seed %" PRIu64 ": the minimized plan fails as \"%s\", "
			    "not as the seed's \"%s\": not used", s->seed, fp, mine);
		free(fp);
		free(mine);
	}
	if (plan != NULL && (verdict != VERDICT_FAIL ||
	    !json_is_true(json_object_get(rec, "same_failure")) ||
	    min_plan_check(plan, c->o.cfg, s->seed, err) == -1)) {
		if (verdict == VERDICT_FAIL && json_is_true(json_object_get(rec,
		    "same_failure"))) {
			log_warnx("seed %" PRIu64 ": worker %u's minimized plan is not "
			    "usable: %s", s->seed, worker, err);
			json_object_set_new(rec, "plan_error", json_string(err));
			json_object_set_new(rec, "same_failure", json_false());
		}
		json_object_del(rec, "plan");
	}
	if (!json_is_object(json_object_get(rec, "plan")))
		json_object_del(rec, "story");
	json_object_set_new(s->detail, "minimized", rec);
	log_debug("seed %" PRIu64 ": minimized on worker %u: %s", s->seed, worker,
	    json_string_value(json_object_get(rec, "outcome")));
	json_decref(detail);
	s->final_why = FINAL_MINIMIZE;
	if (c->final_cb && !c->replaying)
		final_call(c, s);
}

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
	snprintf(words, sizeof(words), "%lld of %lld turns ok",
	    (long long)json_integer_value(ok), (long long)json_integer_value(total));
	if (strcmp(words, json_string_value(msgj)) != 0)
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
 * from the outcomes alone, in the order seed_outcome sees them, so the
 * journal's replay (coord_replay) stops where the run stopped.
 */
static void	early_halt(struct coord *);
static void	halt_now(struct coord *);
static void	halt_apply(struct coord *);
static uint32_t	lease_running(const struct lease *);
static void	seed_return(struct coord *, struct coord_seed *);

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
 * (missing).  The caller (seed_outcome) makes its own seed final.
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

/*
 * Records one attempt's outcome and decides: final, or back in the retry
 * queue.  detail is consumed.
 */
static void
seed_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	json_t		*msgj = json_object_get(detail, "message");
	struct wrec	*w = worker_get(c, worker);
	int		 verdict = reason_verdict(why);

	s->last_worker = worker;
	worker_outcome(c, w, why);
	early_note(c, s, why, detail);
	/* A stopped run retries nothing: no more attempts will run. */
	if (verdict == VERDICT_INFRA && (int)s->infra++ < c->o.cfg->retries &&
	    c->halt_why == NULL) {
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
		plan_confirms(c);
}

/*
 * The worker runs its lease in order and reports each seed before it
 * starts the next: the first unreported seed is the one running (or about
 * to), the rest have not started.  l->keep when every seed is reported.
 */
static uint32_t
lease_running(const struct lease *l)
{
	uint32_t	i;

	for (i = 0; i < l->keep && l->reported[i]; i++)
		;
	return i;
}

/* A seed of a lease that never ran goes back to the pool, first in line. */
static void
seed_return(struct coord *c, struct coord_seed *s)
{
	set_seed_state(s, CSEED_PENDING);
	s->attempts--;		/* it never ran */
	/* A regression waits for a lease of its own kind, before the seeds. */
	q_push(c, s->regress != NULL ? &c->regq : &c->returned, s);
}

/*
 * Ends an active lease.  running: whether a seed may be running (the
 * lease expired, the pipe closed) — that seed gets an infra attempt
 * "worker-lost"; without (a worker between seeds said bye), every
 * unreported seed goes back unstarted.
 */
static void
lease_end(struct coord *c, struct lease *l, bool running, const char *why)
{
	struct wrec	*w = worker_get(c, l->worker);
	bool		 first = running;
	uint32_t	 i;

	if (l->state != LEASE_ACTIVE)
		return;
	if (l->explore_no != 0) {
		/* an execution never answered: back to the driver, to hand out again */
		set_lease_state(l, LEASE_EXPIRED);
		if (w && w->lease == l->id)
			w->lease = 0;
		c->nexplore_open--;
		log_warnx("execution %" PRIu64 ": worker %u lost (%s): it goes to "
		    "another worker", l->explore_no, l->worker, why);
		c->o.explore->lost(c->o.explore->arg, l->explore_no, why);
		return;
	}
	if (c->event_cb && !c->replaying)
		emit(c, JEV_LEASE_END, json_pack("{s:I, s:b, s:s}", "id",
		    (json_int_t)l->id, "running", running, "why", why));
	set_lease_state(l, LEASE_EXPIRED);
	if (w && w->lease == l->id)
		w->lease = 0;
	for (i = 0; i < l->keep; i++) {
		struct coord_seed	*s = item_get(c, l, i);
		char			 what[256];

		if (!l->reported[i] && s != NULL && l->minimize &&
		    s->minimize == CONFIRM_LEASED &&
		    l->seeds[i].attempt == s->minimize_attempt) {
			/* once more on another lease (a coordinator resumed
			 * ends its old leases so), then filed unminimized */
			if (++s->minimize_lost < MINIMIZE_TRIES) {
				if (!c->replaying)
					log_warnx("seed %" PRIu64 ": worker %u lost while "
					    "minimizing it (%s): minimized again",
					    s->seed, l->worker, why);
				set_min_state(s, CONFIRM_PENDING);
				q_push(c, &c->minq, s);
				continue;
			}
			if (!c->replaying)
				log_warnx("seed %" PRIu64 ": worker %u lost while "
				    "minimizing it (%s), %d times: its ticket is filed "
				    "unminimized", s->seed, l->worker, why, MINIMIZE_TRIES);
			minimize_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
			continue;
		}
		if (!l->reported[i] && s != NULL && s->confirm == CONFIRM_LEASED &&
		    l->seeds[i].attempt == s->confirm_attempt) {
			log_warnx("seed %" PRIu64 ": worker %u lost during the "
			    "confirming re-run (%s)", s->seed, l->worker, why);
			confirm_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
			continue;
		}
		if (l->reported[i] || s == NULL || s->state != CSEED_LEASED)
			continue;
		if (first) {
			first = false;
			if (!c->replaying)
				log_warnx("%s: worker %u lost (%s)", item_words(s,
				    what, sizeof(what)), l->worker, why);
			seed_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
		} else
			seed_return(c, s);
	}
}

static void
lease_expire(struct coord *c, struct lease *l, const char *why)
{
	lease_end(c, l, true, why);
}

static struct lease *
lease_new(struct coord *c, uint32_t worker, int64_t now)
{
	struct lease	*l;

	if (c->nleases == c->cap_leases) {
		c->cap_leases = c->cap_leases ? c->cap_leases * 2 : 64;
		c->leases = xreallocarray(c->leases, c->cap_leases, sizeof(*l));
	}
	l = &c->leases[c->nleases++];
	memset(l, 0, sizeof(*l));
	l->id = c->nleases;
	l->worker = worker;
	l->state = LEASE_ACTIVE;
	l->expires = now + c->o.lease_ttl_ms;
	l->seeds = xcalloc(c->o.max_chunk, sizeof(*l->seeds));
	l->reported = xcalloc(c->o.max_chunk, 1);
	return l;
}

/* A lease never grows once granted: it keeps what it holds, no more. */
static void
lease_fit(struct lease *l)
{
	l->seeds = xreallocarray(l->seeds, l->n, sizeof(*l->seeds));
	l->reported = xreallocarray(l->reported, l->n, 1);
}

static void
lease_add(struct coord *c, struct lease *l, uint64_t idx)
{
	struct coord_seed	*s = &c->seeds[idx];

	set_seed_state(s, CSEED_LEASED);
	s->attempts++;
	if (s->regress != NULL)		/* a lease of its own kind, alone */
		l->reg = (size_t)(s - c->seeds) - c->nseeds + 1;
	l->seeds[l->n].seed = s->seed;
	l->seeds[l->n].attempt = s->attempts;
	l->n++;
	l->keep = l->n;
}

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
	halt_apply(c);
	if (c->halt_why != NULL || coord_finished(c))
		return;
	c->halt_why = xstrdup(why);
	c->halt_status = status;
	halt_now(c);
}

static void
halt_apply(struct coord *c)
{
	char	*why = c->halt_asked;

	if (why == NULL || c->in_cb > 0)
		return;
	c->halt_asked = NULL;
	coord_halt(c, c->halt_asked_status, why);
	free(why);
}

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

/* The process pid is no longer to come: it joined or it died. */
static void
starting_drop(struct coord *c, uint32_t pid)
{
	size_t	i;

	for (i = 0; i < c->nstarting; i++)
		if (c->starting[i].pid == pid) {
			c->starting[i] = c->starting[--c->nstarting];
			return;
		}
}

void
coord_worker_starting(struct coord *c, uint32_t pid, int64_t now)
{
	starting_drop(c, pid);
	c->starting = xreallocarray(c->starting, c->nstarting + 1, sizeof(*c->starting));
	c->starting[c->nstarting++] = (struct starting){ .pid = pid, .at = now };
}

/*
 * Whether a worker other than `worker` can take a seed now or soon: one
 * connected and not quarantined, or a local process started less than
 * COORD_JOIN_WAIT_MS ago that has not joined yet.  Without the second, a
 * retry asked for before the other local worker has said HELLO (a loaded
 * machine starts processes slowly) went back to the worker that had just
 * failed it.  The bound keeps a start that never joins from holding a
 * seed for ever: run.c reaps a process that dies, not one that hangs.
 */
static bool
another_worker(const struct coord *c, uint32_t worker, int64_t now)
{
	size_t	i;

	for (i = 0; i < c->nworkers; i++)
		if (c->workers[i].id != worker && c->workers[i].alive &&
		    !c->workers[i].quarantined)
			return true;
	for (i = 0; i < c->nstarting; i++)
		if (now - c->starting[i].at < COORD_JOIN_WAIT_MS)
			return true;
	return false;
}

void
coord_worker_died(struct coord *c, uint32_t pid, const char *why)
{
	struct wrec	*w = NULL;
	struct lease	*l;
	size_t		 i;

	halt_apply(c);
	starting_drop(c, pid);
	for (i = c->nworkers; i-- > 0 && w == NULL;)
		if (c->workers[i].pid == pid)
			w = &c->workers[i];
	if (w == NULL)
		return;
	w->alive = false;
	w->bye = true;		/* nobody to wait for at the end */
	if ((l = lease_get(c, w->lease)) != NULL && l->state == LEASE_ACTIVE)
		lease_expire(c, l, why);
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

static void
lease_reply(const struct coord *c, const struct lease *l, int ttl, struct msg *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_LEASE;
	rep->u.lease.lease_id = l->id;
	rep->u.lease.ttl_ms = (uint32_t)ttl;
	rep->u.lease.nseeds = l->keep;
	rep->u.lease.plan = xstrdup(l->reg ? c->seeds[c->nseeds + l->reg - 1].regress->name :
	    "");
	rep->u.lease.plan_hash = xstrdup(l->reg ?
	    c->seeds[c->nseeds + l->reg - 1].regress->hash : "");
	if (l->minimize) {
		int64_t	b = c->o.cfg->tickets.minimize_budget_ms;

		rep->u.lease.minimize_ms = b > 0 && b < UINT32_MAX ? (uint32_t)b :
		    UINT32_MAX;
	}
	rep->u.lease.explore = xstrdup(l->explore ? l->explore : "");
	rep->u.lease.seeds = xcalloc(l->keep, sizeof(struct msg_seed));
	memcpy(rep->u.lease.seeds, l->seeds, l->keep * sizeof(struct msg_seed));
}

static void
text_reply(struct msg *rep, enum msg_type type, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
text_reply(struct msg *rep, enum msg_type type, int ok, const char *fmt, ...)
{
	va_list	ap;

	memset(rep, 0, sizeof(*rep));
	rep->type = type;
	rep->u.ack.ok = (uint8_t)ok;
	va_start(ap, fmt);
	if (vasprintf(&rep->u.ack.text, fmt, ap) == -1)
		abort();
	va_end(ap);
}

/* The journal's record of a grant: enough for coord_replay to redo it. */
static void
lease_event(struct coord *c, const struct lease *l)
{
	json_t		*seeds, *e;
	uint32_t	 i;

	if (c->event_cb == NULL || c->replaying)
		return;
	seeds = json_array();
	for (i = 0; i < l->n; i++)
		json_array_append_new(seeds, json_pack("[I, i]",
		    (json_int_t)l->seeds[i].seed, (int)l->seeds[i].attempt));
	e = json_pack("{s:I, s:i, s:I, s:b, s:o}",
	    "id", (json_int_t)l->id, "worker", (int)l->worker,
	    "from", (json_int_t)l->from, "confirm", l->confirm, "seeds", seeds);
	if (l->minimize)
		json_object_set_new(e, "minimize", json_true());
	/* A regression's lease is keyed by its plan, not by its seed. */
	if (l->reg != 0) {
		const struct regress	*r = c->seeds[c->nseeds + l->reg - 1].regress;

		json_object_set_new(e, "plan", json_string(r->name));
		json_object_set_new(e, "hash", json_string(r->hash));
	}
	emit(c, JEV_LEASE, e);
}

/*
 * An idle worker takes the unstarted tail of the busiest lease: half of
 * the seeds that its worker has not started (rounded up), the last ones,
 * so each worker still runs a contiguous run of seeds.  The seed running
 * is never taken, nor any seed before it.  The victim's lease shrinks to
 * keep; its worker hears it in the ACK of the result it sends next, and
 * a result for a taken seed is refused like any result under a lease that
 * does not hold it, so the steal is fenced.  The seeds keep their attempt
 * numbers: they never ran.  NULL when no lease has a seed to spare.
 */
static struct lease *
lease_steal(struct coord *c, uint32_t worker, int64_t now)
{
	struct lease	*victim = NULL, *l;
	uint32_t	 best = 0, spare, take, i;
	size_t		 k;

	for (k = 0; k < c->nworkers; k++) {
		struct lease	*v;
		uint32_t	 run;

		if (c->workers[k].lease == 0 || c->workers[k].id == worker ||
		    (v = lease_get(c, c->workers[k].lease)) == NULL ||
		    v->state != LEASE_ACTIVE)
			continue;
		run = lease_running(v);
		spare = run + 1 < v->keep ? v->keep - run - 1 : 0;
		if (spare > best) {
			best = spare;
			victim = v;
		}
	}
	if (victim == NULL)
		return NULL;
	take = (best + 1) / 2;
	l = lease_new(c, worker, now);
	for (i = victim->keep - take; i < victim->keep; i++)
		l->seeds[l->n++] = victim->seeds[i];
	l->keep = l->n;
	l->from = victim->id;
	victim->keep -= take;
	log_debug("lease %" PRIu64 ": %u unstarted seed(s) from %" PRIu64
	    " taken from worker %u's lease %" PRIu64, l->id, take, l->seeds[0].seed,
	    victim->worker, victim->id);
	return l;
}

int
coord_serve(struct coord *c, uint32_t worker, int64_t now, struct msg *rep)
{
	struct wrec	*w = worker_get(c, worker);
	struct lease	*l = NULL;
	uint64_t	 left, chunk;
	int		 live;
	bool		 elsewhere;
	size_t		 i;

	halt_apply(c);
	if (coord_finished(c)) {
		text_reply(rep, MSG_DONE, 1, "run finished");
		return 1;
	}
	if (w == NULL)
		return 0;
	if (c->halt_why != NULL) {
		text_reply(rep, MSG_DONE, 1, "the run stopped: %s", c->halt_why);
		return 1;
	}
	if (w->quarantined) {
		text_reply(rep, MSG_DONE, 1, "quarantined: %u infra outcomes in a row, "
		    "the last %s; this worker gets no more seeds", w->infra_run,
		    reason_name(w->quarantine_why));
		return 1;
	}
	/* An exploration: one execution a lease, as the driver hands them out. */
	if (c->o.explore != NULL) {
		uint64_t	 no;
		char		*payload;

		if (c->o.explore->next(c->o.explore->arg, &no, &payload) != 1)
			return 0;
		l = lease_new(c, worker, now);
		l->seeds[0].seed = c->o.explore->seed;
		l->seeds[0].attempt = no > UINT32_MAX ? UINT32_MAX : (uint32_t)no;
		l->n = l->keep = 1;
		l->explore_no = no;
		l->explore = payload;
		c->nexplore_open++;
		lease_fit(l);
		w->lease = l->id;
		lease_reply(c, l, c->o.lease_ttl_ms, rep);
		log_debug("lease %" PRIu64 " to worker %u: execution %" PRIu64, l->id,
		    worker, no);
		return 1;
	}
	/* A retry goes to another worker than its last, whenever there is one. */
	live = coord_live_workers(c);
	elsewhere = another_worker(c, worker, now);
	for (i = 0; i < c->retry.len; i++) {
		uint64_t	idx = q_at(&c->retry, i);

		if (c->seeds[idx].last_worker != worker || !elsewhere) {
			l = lease_new(c, worker, now);
			lease_add(c, l, idx);
			queue_remove(&c->retry, i);
			goto leased;
		}
	}
	/* A confirming re-run goes elsewhere too, whenever another is alive. */
	for (i = 0; i < c->confirm.len; i++) {
		struct coord_seed	*s = &c->seeds[q_at(&c->confirm, i)];

		if (s->worker != worker || !elsewhere) {
			l = lease_new(c, worker, now);
			set_confirm_state(s, CONFIRM_LEASED);
			s->confirm_attempt = s->attempts + 1;
			l->seeds[0].seed = s->seed;
			l->seeds[0].attempt = s->confirm_attempt;
			l->n = l->keep = 1;
			l->confirm = true;
			queue_remove(&c->confirm, i);
			goto leased;
		}
	}
	/* A failing seed to minimize: one lease each, any worker. */
	if (c->minq.len > 0) {
		struct coord_seed	*s = &c->seeds[q_at(&c->minq, 0)];

		l = lease_new(c, worker, now);
		set_min_state(s, CONFIRM_LEASED);
		/* past the confirming re-run's, so the two never mix */
		s->minimize_attempt = s->attempts + 2;
		l->seeds[0].seed = s->seed;
		l->seeds[0].attempt = s->minimize_attempt;
		l->n = l->keep = 1;
		l->minimize = true;
		queue_remove(&c->minq, 0);
		goto leased;
	}
	/* Regressions before any seed of the range: each a lease of its own. */
	if (c->regq.len > 0) {
		l = lease_new(c, worker, now);
		lease_add(c, l, q_at(&c->regq, 0));
		queue_remove(&c->regq, 0);
		goto leased;
	}
	left = c->returned.len + (c->nseeds - c->next_fresh);
	if (left == 0) {
		if ((l = lease_steal(c, worker, now)) == NULL)
			return 0;
		goto leased;
	}
	chunk = (left + 2 * (uint64_t)live - 1) / (2 * (uint64_t)(live ? live : 1));
	if (chunk < 1)
		chunk = 1;
	if (chunk > (uint64_t)c->o.max_chunk)
		chunk = c->o.max_chunk;
	l = lease_new(c, worker, now);
	while (l->n < chunk && c->returned.len > 0) {
		lease_add(c, l, q_at(&c->returned, 0));
		queue_remove(&c->returned, 0);
	}
	while (l->n < chunk && c->next_fresh < c->nseeds)
		lease_add(c, l, c->next_fresh++);
leased:
	lease_fit(l);
	w->lease = l->id;
	lease_event(c, l);
	lease_reply(c, l, c->o.lease_ttl_ms, rep);
	if (l->minimize)
		log_debug("lease %" PRIu64 " to worker %u: minimize seed %" PRIu64,
		    l->id, worker, l->seeds[0].seed);
	else if (l->reg != 0)
		log_debug("lease %" PRIu64 " to worker %u: regression %s", l->id, worker,
		    c->seeds[c->nseeds + l->reg - 1].regress->name);
	else
		log_debug("lease %" PRIu64 " to worker %u: %u seed(s) from %" PRIu64,
		    l->id, worker, l->n, l->seeds[0].seed);
	return 1;
}

/*
 * A worker joins.  Only an authenticated connection's HELLO gets here
 * (coordinator/peer.h): the WELCOME carries the config, the database and
 * the paths.
 */
static int
handle_hello(struct coord *c, const struct msg *req, uint32_t pipe, struct msg *rep)
{
	struct wrec	*w;
	char		 name[LOG_ESC_LEN];

	/*
	 * A worker that arrives once every seed has its verdict (a late pod,
	 * a slow node, the coordinator draining its last workers) has nothing
	 * to do: it is told so now, as a new worker it would only have
	 * opened a database to hear it at its first lease request.  DONE
	 * answers only an authenticated HELLO, like WELCOME (peer.h), and
	 * the worker exits 0 on it: a Job must not count it as a failure.
	 */
	if (coord_finished(c)) {
		log_debug("a worker said hello after the run finished: \"%s\"",
		    log_escape(name, sizeof(name), req->u.hello.name));
		text_reply(rep, MSG_DONE, 1, "run finished");
		return 1;
	}

	/*
	 * A worker of this run that lost its connection (or this coordinator
	 * restarted, --resume) rejoins as itself: its lease, if still active,
	 * is its own again.  Only an authenticated connection gets here, and
	 * every authenticated worker is trusted alike.
	 */
	w = req->u.hello.rejoin_run != NULL &&
	    strcmp(req->u.hello.rejoin_run, c->o.run_id) == 0 ?
	    worker_get(c, req->u.hello.rejoin_id) : NULL;
	if (w != NULL && !w->quarantined) {
		log_info("worker %u rejoined%s", w->id, w->alive ?
		    " (its old connection is dropped)" : "");
		w->pipe = pipe;
		w->alive = true;
		w->restored = false;
		w->pid = req->u.hello.pid;
		goto welcome;
	}
	c->workers = xreallocarray(c->workers, c->nworkers + 1, sizeof(*w));
	w = &c->workers[c->nworkers++];
	memset(w, 0, sizeof(*w));
	w->id = (uint32_t)c->nworkers;
	w->name = xstrdup(req->u.hello.name);
	w->host = xstrdup(req->u.hello.host);
	w->pid = req->u.hello.pid;
	w->pipe = pipe;
	w->alive = true;
	log_debug("worker %u is %s", w->id, log_escape(name, sizeof(name), w->name));
	if (c->event_cb)
		emit(c, JEV_WORKER, json_pack("{s:i, s:s, s:s, s:i}", "id", (int)w->id,
		    "name", w->name, "host", w->host, "pid", (int)w->pid));
welcome:
	starting_drop(c, w->pid);
	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_WELCOME;
	rep->u.welcome.worker_id = w->id;
	rep->u.welcome.run_id = xstrdup(c->o.run_id);
	rep->u.welcome.cfg_path = xstrdup(c->o.cfg_path);
	rep->u.welcome.cfg_text = xstrdup(c->o.cfg->text);
	rep->u.welcome.db_conninfo = xstrdup(c->o.db_conninfo ? c->o.db_conninfo : "");
	rep->u.welcome.keep_dir = xstrdup(c->o.keep_dir ? c->o.keep_dir : "");
	rep->u.welcome.workspace = xstrdup(c->o.workspace ? c->o.workspace : "");
	rep->u.welcome.heartbeat_ms = (uint32_t)c->o.heartbeat_ms;
	rep->u.welcome.bundle_hash = xstrdup(c->o.bundle_hash ? c->o.bundle_hash : "");
	return 1;
}

/*
 * A worker without the config folder asks for its bundle, by the hash its
 * WELCOME announced.  Like every message here it comes from an
 * authenticated connection, and only from the one its worker said hello
 * on.  Each reply is a copy: the message owns its data.
 */
static int
handle_bundle_req(struct coord *c, const struct msg *req, uint32_t pipe, struct msg *rep)
{
	struct wrec	*w = worker_get(c, req->u.bundle_req.worker_id);

	if (w == NULL || w->pipe != pipe) {
		text_reply(rep, MSG_NACK, 0, "worker %u said hello on another connection, "
		    "or never", req->u.bundle_req.worker_id);
		return 1;
	}
	if (c->o.bundle_hash == NULL || *c->o.bundle_hash == '\0') {
		text_reply(rep, MSG_NACK, 0, "this coordinator sends no bundle (--bundle "
		    "off): the config folder must be at %s on the worker", c->o.cfg_path);
		return 1;
	}
	if (strcmp(req->u.bundle_req.hash, c->o.bundle_hash) != 0) {
		text_reply(rep, MSG_NACK, 0, "this coordinator's bundle is %.12s..., not "
		    "the one asked for", c->o.bundle_hash);
		return 1;
	}
	log_debug("sending the config folder's bundle (%zu bytes) to worker %u",
	    c->o.bundle_len, w->id);
	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_BUNDLE;
	rep->u.bundle.hash = xstrdup(c->o.bundle_hash);
	rep->u.bundle.len = (uint32_t)c->o.bundle_len;
	rep->u.bundle.data = xcalloc(1, c->o.bundle_len ? c->o.bundle_len : 1);
	memcpy(rep->u.bundle.data, c->o.bundle, c->o.bundle_len);
	return 1;
}

/*
 * An accepted result of seed l->seeds[i]: its outcome, the lease's end
 * when it was its last seed, and the quarantine's cut.  detail is
 * consumed.  The journal's replay (coord_replay) comes here too.
 */
enum result_kind { RESULT_SEED, RESULT_CONFIRM, RESULT_MINIMIZE };

static void
result_apply(struct coord *c, struct lease *l, uint32_t i, enum result_kind kind,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	struct coord_seed	*s = item_get(c, l, i), *t;
	struct wrec		*w = worker_get(c, l->worker);
	uint32_t		 k;

	l->reported[i] = 1;
	if (w != NULL)
		w->results++;
	if (kind == RESULT_CONFIRM)
		confirm_outcome(c, s, l->worker, why, duration_ms, detail);
	else if (kind == RESULT_MINIMIZE)
		minimize_outcome(c, s, l->worker, why, duration_ms, detail);
	else
		seed_outcome(c, s, l->worker, why, duration_ms, detail);
	if ((w != NULL && w->quarantined) || c->halt_why != NULL) {
		/* It runs nothing more: what it has not started goes back. */
		for (k = i + 1; k < l->keep; k++)
			if (!l->reported[k] && (t = item_get(c, l, k)) != NULL &&
			    t->state == CSEED_LEASED)
				seed_return(c, t);
		if (l->keep > i + 1)
			l->keep = i + 1;
	}
	if (lease_running(l) == l->keep) {
		set_lease_state(l, LEASE_DONE);
		if (w && w->lease == l->id)
			w->lease = 0;
	}
}

/*
 * An explore lease's result: its one execution, of the explored seed (the
 * attempt is the execution's number), once; the detail goes to the driver
 * (a detail that is not a JSON object goes as {"message": ...}, infra).
 */
static bool
explore_result(struct coord *c, struct lease *l, const struct msg *req, struct msg *rep)
{
	struct wrec	*w = worker_get(c, l->worker);
	json_t		*detail;
	int		 verdict = req->u.result.verdict;
	int		 why = reason_parse(req->u.result.reason);

	if (req->u.result.seed != l->seeds[0].seed ||
	    req->u.result.attempt != l->seeds[0].attempt ||
	    (req->u.result.plan != NULL && *req->u.result.plan != '\0')) {
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is execution %" PRIu64
		    " of seed %" PRIu64 ", not the result's", l->id, l->explore_no,
		    l->seeds[0].seed);
		return false;
	}
	if (l->reported[0]) {
		text_reply(rep, MSG_ACK, 1, "execution %" PRIu64 " was already recorded",
		    l->explore_no);
		rep->u.ack.keep = 1;
		return false;
	}
	if (l->state != LEASE_ACTIVE) {
		log_warnx("late result of execution %" PRIu64 " under %s lease %" PRIu64
		    " from worker %u refused", l->explore_no, lease_state_names[l->state],
		    l->id, l->worker);
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " has %s; execution %" PRIu64
		    " went to another worker", l->id, lease_state_names[l->state],
		    l->explore_no);
		return false;
	}
	detail = json_loads(req->u.result.detail, JSON_REJECT_DUPLICATES, NULL);
	if (!reason_valid(verdict, why) || !json_is_object(detail)) {
		char	reason[64];

		log_warnx("execution %" PRIu64 ": worker %u sent an unreadable result "
		    "(verdict %d, reason \"%s\")", l->explore_no, l->worker, verdict,
		    log_escape(reason, sizeof(reason), req->u.result.reason));
		json_decref(detail);
		detail = json_pack("{s:s}", "message", "the worker sent an unreadable result");
		verdict = VERDICT_INFRA;
		why = REASON_WORKER_LOST;
	}
	l->reported[0] = 1;
	set_lease_state(l, LEASE_DONE);
	if (w != NULL) {
		w->results++;
		if (w->lease == l->id)
			w->lease = 0;
	}
	c->nexplore_open--;
	c->o.explore->result(c->o.explore->arg, l->explore_no, l->worker, verdict,
	    (enum reason)why, detail);
	json_decref(detail);
	text_reply(rep, MSG_ACK, 1, "ok");
	rep->u.ack.keep = 1;
	return true;
}

/* Fills *rep; returns whether the result was accepted. */
static bool
handle_result(struct coord *c, const struct msg *req, struct msg *rep)
{
	const uint64_t		 seed = req->u.result.seed;
	struct lease		*l = lease_get(c, req->u.result.lease_id);
	struct coord_seed	*s = NULL;
	const char		*plan = req->u.result.plan ? req->u.result.plan : "";
	const char		*hash = req->u.result.plan_hash ?
				    req->u.result.plan_hash : "";
	json_t			*detail;
	json_error_t		 jerr;
	uint32_t		 i;
	int			 verdict = req->u.result.verdict;
	int			 why = reason_parse(req->u.result.reason);
	bool			 confirming, minimizing;
	char			 reason[64], jtext[LOG_ESC_LEN];

	if (l == NULL || l->worker != req->u.result.worker_id) {
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is not yours",
		    req->u.result.lease_id);
		return false;
	}
	if (l->explore_no != 0)
		return explore_result(c, l, req, rep);
	/* A regression's result names its plan as its lease did; a seed's none. */
	s = l->reg != 0 ? item_get(c, l, 0) : seed_get(c, seed);
	if (l->reg != 0 ? strcmp(plan, s->regress->name) != 0 ||
	    strcmp(hash, s->regress->hash) != 0 : *plan != '\0') {
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is %s%s, not the "
		    "result's %s%s", l->id, l->reg ? "regression " : "of seeds",
		    l->reg ? s->regress->name : "", *plan ? "regression " : "seed",
		    *plan ? plan : "");
		return false;
	}
	/*
	 * The same result again (its ACK was lost with the connection, and
	 * the worker sends it once more after it rejoined): acknowledged, and
	 * nothing changes — a result counts once.
	 */
	for (i = 0; i < l->keep; i++)
		if (l->seeds[i].seed == seed && l->seeds[i].attempt ==
		    req->u.result.attempt && l->reported[i]) {
			text_reply(rep, MSG_ACK, 1, "seed %" PRIu64 " (attempt %u) was "
			    "already recorded", seed, req->u.result.attempt);
			rep->u.ack.keep = l->keep;
			return false;
		}
	if (l->state != LEASE_ACTIVE) {
		log_warnx("late result for seed %" PRIu64 " under %s lease %" PRIu64
		    " from worker %u refused", seed, lease_state_names[l->state], l->id,
		    l->worker);
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " has %s; seed %" PRIu64
		    " went to another worker", l->id, lease_state_names[l->state], seed);
		return false;
	}
	for (i = 0; i < l->keep; i++)
		if (l->seeds[i].seed == seed)
			break;
	confirming = i < l->keep && !l->reported[i] && s != NULL &&
	    s->confirm == CONFIRM_LEASED && s->confirm_attempt == req->u.result.attempt &&
	    l->seeds[i].attempt == req->u.result.attempt;
	minimizing = i < l->keep && !l->reported[i] && s != NULL && l->minimize &&
	    s->minimize == CONFIRM_LEASED && s->minimize_attempt ==
	    req->u.result.attempt && l->seeds[i].attempt == req->u.result.attempt;
	if (l->minimize && !minimizing) {
		text_reply(rep, MSG_ACK, 0, "seed %" PRIu64 " (attempt %u) is not "
		    "being minimized under lease %" PRIu64, seed,
		    req->u.result.attempt, l->id);
		return false;
	}
	if (!confirming && !minimizing && (i == l->keep || l->reported[i] || s == NULL ||
	    s->state != CSEED_LEASED || l->seeds[i].attempt != req->u.result.attempt)) {
		text_reply(rep, MSG_ACK, 0, "seed %" PRIu64 " (attempt %u) is not open "
		    "under lease %" PRIu64, seed, req->u.result.attempt, l->id);
		return false;
	}
	l->expires = 0;		/* refreshed below: a result is a sign of life */
	/* The verdict stands only if the worker's claim is coherent; a bad
	 * detail or reason is the worker's fault, not the system's: infra. */
	detail = json_loads(req->u.result.detail, JSON_REJECT_DUPLICATES, &jerr);
	if (!reason_valid(verdict, why) || !json_is_object(detail)) {
		log_warnx("seed %" PRIu64 ": worker %u sent an unreadable result "
		    "(verdict %d, reason \"%s\"%s%s)", seed, l->worker, verdict,
		    log_escape(reason, sizeof(reason), req->u.result.reason),
		    detail ? "" : ", detail: ",
		    detail ? "" : log_escape(jtext, sizeof(jtext), jerr.text));
		json_decref(detail);
		detail = json_pack("{s:s}", "message", "the worker sent an unreadable result");
		why = REASON_WORKER_LOST;
	}
	if (c->event_cb && !c->replaying) {
		json_t	*e = json_pack("{s:I, s:I, s:i, s:s, s:I, s:O}",
		    "lease", (json_int_t)l->id, "seed", (json_int_t)seed,
		    "attempt", (int)req->u.result.attempt, "reason", reason_name(why),
		    "duration_ms", (json_int_t)req->u.result.duration_ms,
		    "detail", detail);

		if (l->reg != 0) {
			json_object_set_new(e, "plan", json_string(s->regress->name));
			json_object_set_new(e, "hash", json_string(s->regress->hash));
		}
		emit(c, JEV_RESULT, e);
	}
	result_apply(c, l, i, minimizing ? RESULT_MINIMIZE : confirming ?
	    RESULT_CONFIRM : RESULT_SEED, why, req->u.result.duration_ms, detail);
	text_reply(rep, MSG_ACK, 1, "ok");
	rep->u.ack.keep = l->keep;
	return true;
}

int
coord_handle(struct coord *c, const struct msg *req, uint32_t pipe, int64_t now,
    struct msg *rep)
{
	struct wrec	*w = NULL;
	struct lease	*l;
	uint32_t	 wid = 0;

	halt_apply(c);
	switch (req->type) {
	case MSG_HELLO:
		return handle_hello(c, req, pipe, rep);
	case MSG_BUNDLE_REQ:
		return handle_bundle_req(c, req, pipe, rep);
	case MSG_LEASE_REQ:	wid = req->u.lease_req.worker_id; break;
	case MSG_RESULT:	wid = req->u.result.worker_id; break;
	case MSG_HEARTBEAT:	wid = req->u.heartbeat.worker_id; break;
	case MSG_BYE:		wid = req->u.bye.worker_id; break;
	default:
		text_reply(rep, MSG_NACK, 0, "a worker does not send %s",
		    msg_type_name(req->type));
		return 1;
	}
	/* A worker speaks only from the pipe it said hello on. */
	if ((w = worker_get(c, wid)) == NULL) {
		log_warnx("%s from unknown worker %u refused", msg_type_name(req->type), wid);
		text_reply(rep, MSG_NACK, 0, "unknown worker %u: say hello first", wid);
		return 1;
	}
	if (w->pipe != pipe) {
		log_warnx("%s as worker %u from another connection refused",
		    msg_type_name(req->type), wid);
		text_reply(rep, MSG_NACK, 0, "worker %u said hello on another connection", wid);
		return 1;
	}
	switch (req->type) {
	case MSG_LEASE_REQ:
		if (!w->alive) {
			text_reply(rep, MSG_NACK, 0, "worker %u said bye", wid);
			return 1;
		}
		/* A worker asks between leases: had it not received its last
		 * one (the reply lost with its connection), none of it ran. */
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			lease_end(c, l, false, "it asked for another lease");
		return coord_serve(c, wid, now, rep);
	case MSG_RESULT:
		/* Only an accepted result is a sign of life of its lease: a
		 * refused one (another worker's lease, a seed not open) must
		 * not keep a lease alive. */
		if (handle_result(c, req, rep) && (l = lease_get(c,
		    req->u.result.lease_id)) != NULL && l->state == LEASE_ACTIVE)
			l->expires = now + c->o.lease_ttl_ms;
		return 1;
	case MSG_HEARTBEAT:
		l = lease_get(c, req->u.heartbeat.lease_id);
		/* A beat that crossed the lease's last result: nothing to drop. */
		if (l != NULL && l->worker == wid && l->state == LEASE_DONE) {
			text_reply(rep, MSG_ACK, 1, "lease done");
			return 1;
		}
		if (l == NULL || l->worker != wid || l->state != LEASE_ACTIVE) {
			text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is not active",
			    req->u.heartbeat.lease_id);
			return 1;
		}
		l->expires = now + c->o.lease_ttl_ms;
		text_reply(rep, MSG_ACK, 1, "ok");
		return 1;
	case MSG_BYE:
		/* A worker says bye between seeds: nothing of its lease runs. */
		w->alive = false;
		w->bye = true;
		if (req->u.bye.drain)
			log_info("worker %u is draining: its unstarted seeds go back", wid);
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			lease_end(c, l, false, "it said bye");
		text_reply(rep, MSG_ACK, 1, "bye");
		return 1;
	default:
		return 1;
	}
}

/*
 * A closed connection is not yet a lost worker: it may rejoin (a network
 * blip, a coordinator restart) and keep its lease, which lives until its
 * ttl as if it had stopped beating.
 */
void
coord_pipe_closed(struct coord *c, uint32_t pipe, int64_t now)
{
	size_t	i;

	(void)now;
	for (i = 0; i < c->nworkers; i++) {
		struct wrec	*w = &c->workers[i];

		if (w->pipe != pipe || !w->alive)
			continue;
		w->alive = false;
		w->closed_at = now;
		log_debug("worker %u: connection closed%s", w->id, w->lease ?
		    "; its lease waits for it until its ttl" : "");
	}
}

/*
 * Only a worker's current lease can be active (a worker asks for another
 * only between leases, which ends the one it held), so the workers, not
 * the leases of the whole run, are what is scanned.
 */
int64_t
coord_tick(struct coord *c, int64_t now)
{
	int64_t	next = -1;
	size_t	i;

	halt_apply(c);
	for (i = 0; i < c->nworkers; i++) {
		struct lease	*l = lease_get(c, c->workers[i].lease);

		if (l == NULL || l->state != LEASE_ACTIVE)
			continue;
		if (now >= l->expires) {
			lease_expire(c, l, "no heartbeat before its lease expired");
			continue;
		}
		if (next == -1 || l->expires - now < next)
			next = l->expires - now;
	}
	return next;
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

/* --- the journal's replay (coord_replay) --- */

/* Removes the seed at index idx from q; whether it was there. */
static bool
q_take(struct queue *q, uint64_t idx)
{
	size_t	i;

	for (i = 0; i < q->len; i++)
		if (q_at(q, i) == idx) {
			queue_remove(q, i);
			return true;
		}
	return false;
}

static int
replay_worker(struct coord *c, json_t *e, char *err)
{
	struct wrec	*w;
	json_int_t	 id = json_integer_value(json_object_get(e, "id"));
	const char	*name = json_string_value(json_object_get(e, "name"));
	const char	*host = json_string_value(json_object_get(e, "host"));

	if (id != (json_int_t)c->nworkers + 1 || name == NULL || host == NULL)
		return errf(err, "worker %lld out of order", (long long)id);
	c->workers = xreallocarray(c->workers, c->nworkers + 1, sizeof(*w));
	w = &c->workers[c->nworkers++];
	memset(w, 0, sizeof(*w));
	w->id = (uint32_t)id;
	w->name = xstrdup(name);
	w->host = xstrdup(host);
	w->pid = (uint32_t)json_integer_value(json_object_get(e, "pid"));
	w->restored = true;
	return 0;
}

/* The regression of that name and hash, or NULL. */
static struct coord_seed *
reg_find(struct coord *c, const char *name, const char *hash)
{
	size_t	i;

	for (i = 0; i < c->nregs; i++) {
		struct coord_seed	*s = &c->seeds[c->nseeds + i];

		if (strcmp(s->regress->name, name) == 0 && hash != NULL &&
		    strcmp(s->regress->hash, hash) == 0)
			return s;
	}
	return NULL;
}

static int
replay_lease(struct coord *c, json_t *e, char *err)
{
	json_int_t	 id = json_integer_value(json_object_get(e, "id"));
	json_int_t	 from = json_integer_value(json_object_get(e, "from"));
	json_t		*seeds = json_object_get(e, "seeds"), *v;
	bool		 confirm = json_is_true(json_object_get(e, "confirm"));
	bool		 minimize = json_is_true(json_object_get(e, "minimize"));
	struct wrec	*w = worker_get(c, (uint32_t)json_integer_value(
			    json_object_get(e, "worker")));
	struct lease	*l, *victim = NULL;
	struct coord_seed	*reg = NULL;
	const char	*plan = json_string_value(json_object_get(e, "plan"));
	const char	*hash = json_string_value(json_object_get(e, "hash"));
	size_t		 k;

	if (id != (json_int_t)c->nleases + 1 || w == NULL || !json_is_array(seeds) ||
	    json_array_size(seeds) == 0 ||
	    json_array_size(seeds) > (size_t)c->o.max_chunk)
		return errf(err, "lease %lld does not follow", (long long)id);
	if (from != 0 && ((victim = lease_get(c, (uint64_t)from)) == NULL ||
	    victim->keep < json_array_size(seeds)))
		return errf(err, "lease %lld: no lease %lld to take from",
		    (long long)id, (long long)from);
	if (plan != NULL && (reg = reg_find(c, plan, hash)) == NULL)
		return errf(err, "lease %lld: regression %s (sha256 %.12s) is not one "
		    "of this config's: its regressions folder changed since", (long long)id,
		    plan, hash ? hash : "?");
	if (reg != NULL && (json_array_size(seeds) != 1 || confirm || from != 0))
		return errf(err, "lease %lld: a regression's lease holds it alone",
		    (long long)id);
	if (minimize && (json_array_size(seeds) != 1 || confirm || from != 0 ||
	    reg != NULL))
		return errf(err, "lease %lld: a minimize lease holds one seed alone",
		    (long long)id);
	l = lease_new(c, w->id, 0);
	l->from = (uint64_t)from;
	l->confirm = confirm;
	l->minimize = minimize;
	json_array_foreach(seeds, k, v) {
		struct coord_seed	*s = reg != NULL ? reg : seed_get(c,
					    (uint64_t)json_integer_value(json_array_get(v, 0)));
		uint32_t		 a = (uint32_t)json_integer_value(json_array_get(v, 1));
		uint64_t		 idx;

		if (s == NULL)
			return errf(err, "lease %lld: a seed out of the range", (long long)id);
		idx = (uint64_t)(s - c->seeds);
		if (minimize) {
			if (!q_take(&c->minq, idx))
				return errf(err, "lease %lld: seed %" PRIu64 " was not "
				    "waiting to be minimized", (long long)id, s->seed);
			set_min_state(s, CONFIRM_LEASED);
			s->minimize_attempt = a;
		} else if (confirm) {
			if (!q_take(&c->confirm, idx))
				return errf(err, "lease %lld: seed %" PRIu64 " has no "
				    "confirming re-run waiting", (long long)id, s->seed);
			set_confirm_state(s, CONFIRM_LEASED);
			s->confirm_attempt = a;
		} else if (reg != NULL) {
			if (!q_take(&c->regq, idx) && !q_take(&c->retry, idx))
				return errf(err, "lease %lld: regression %s was not free "
				    "to lease", (long long)id, plan);
			set_seed_state(s, CSEED_LEASED);
			s->attempts = a;
			l->reg = idx - c->nseeds + 1;
		} else if (victim == NULL) {
			if (idx == c->next_fresh)
				c->next_fresh++;
			else if (!q_take(&c->returned, idx) && !q_take(&c->retry, idx))
				return errf(err, "lease %lld: seed %" PRIu64 " was not "
				    "free to lease", (long long)id, s->seed);
			set_seed_state(s, CSEED_LEASED);
			s->attempts = a;
		}
		l->seeds[l->n].seed = s->seed;
		l->seeds[l->n].attempt = a;
		l->n++;
	}
	l->keep = l->n;
	lease_fit(l);
	if (victim != NULL)
		victim->keep -= l->n;
	w->lease = l->id;
	return 0;
}

static int
replay_result(struct coord *c, json_t *e, char *err)
{
	struct lease		*l = lease_get(c, (uint64_t)json_integer_value(
				    json_object_get(e, "lease")));
	uint64_t		 seed = (uint64_t)json_integer_value(json_object_get(e, "seed"));
	uint32_t		 a = (uint32_t)json_integer_value(json_object_get(e, "attempt"));
	int			 why = reason_parse(json_string_value(json_object_get(e,
				    "reason")) ? json_string_value(json_object_get(e,
				    "reason")) : "?");
	json_t			*detail = json_object_get(e, "detail");
	const char		*plan = json_string_value(json_object_get(e, "plan"));
	struct coord_seed	*s;
	uint32_t		 i;
	bool			 confirming, minimizing;

	if (l == NULL || why < 0 || !json_is_object(detail))
		return errf(err, "a result that does not parse");
	s = l->reg != 0 ? item_get(c, l, 0) : seed_get(c, seed);
	if (s == NULL || (l->reg != 0) != (plan != NULL) ||
	    (plan != NULL && strcmp(plan, s->regress->name) != 0))
		return errf(err, "a result of %s under lease %" PRIu64 ", which is "
		    "not its", plan ? plan : "a seed", l->id);
	for (i = 0; i < l->keep; i++)
		if (l->seeds[i].seed == seed)
			break;
	if (i == l->keep || l->reported[i] || l->seeds[i].attempt != a)
		return errf(err, "seed %" PRIu64 " was not open under lease %" PRIu64,
		    seed, l->id);
	confirming = s->confirm == CONFIRM_LEASED && s->confirm_attempt == a;
	minimizing = l->minimize && s->minimize == CONFIRM_LEASED &&
	    s->minimize_attempt == a;
	if (l->minimize && !minimizing)
		return errf(err, "seed %" PRIu64 " was not being minimized", seed);
	if (!confirming && !minimizing && s->state != CSEED_LEASED)
		return errf(err, "seed %" PRIu64 " was not leased", seed);
	result_apply(c, l, i, minimizing ? RESULT_MINIMIZE : confirming ?
	    RESULT_CONFIRM : RESULT_SEED, (enum reason)why,
	    json_integer_value(json_object_get(e, "duration_ms")), json_incref(detail));
	return 0;
}

int
coord_replay(struct coord *c, enum jev type, json_t *e, char *err)
{
	struct lease	*l;
	const char	*why;
	int		 rc = 0;

	c->replaying = true;
	switch (type) {
	case JEV_WORKER:
		rc = replay_worker(c, e, err);
		break;
	case JEV_LEASE:
		rc = replay_lease(c, e, err);
		break;
	case JEV_RESULT:
		rc = replay_result(c, e, err);
		break;
	case JEV_LEASE_END:
		if ((l = lease_get(c, (uint64_t)json_integer_value(json_object_get(e,
		    "id")))) == NULL) {
			rc = errf(err, "the end of a lease never granted");
			break;
		}
		why = json_string_value(json_object_get(e, "why"));
		lease_end(c, l, json_is_true(json_object_get(e, "running")),
		    why ? why : "");
		break;
	case JEV_RUN:
	case JEV_RESUME:
	case JEV_OTHER:
		break;		/* not the coordinator's: the run's own records */
	}
	c->replaying = false;
	return rc;
}

void
coord_resumed(struct coord *c, int64_t now, bool orphaned)
{
	size_t	i;

	for (i = 0; i < c->nleases; i++) {
		if (c->leases[i].state != LEASE_ACTIVE)
			continue;
		if (orphaned)
			lease_expire(c, &c->leases[i], "its worker died with the "
			    "coordinator");
		else
			c->leases[i].expires = now + c->o.lease_ttl_ms;
	}
}

static json_t *
q_json(const struct queue *q)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; i < q->len; i++)
		json_array_append_new(a, json_integer((json_int_t)q_at(q, i)));
	return a;
}

json_t *
coord_dump(const struct coord *c)
{
	json_t		*seeds = json_array(), *leases = json_array(), *workers = json_array();
	uint64_t	 i;
	uint32_t	 k;

	for (i = 0; i < c->nseeds + c->nregs; i++) {
		const struct coord_seed	*s = &c->seeds[i];

		json_array_append_new(seeds, json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, "
		    "s:i, s:O, s:O?, s:i, s:i}", "state", s->state, "verdict", s->verdict,
		    "why", s->why, "attempts", (int)s->attempts, "infra", (int)s->infra,
		    "last_worker", (int)s->last_worker, "worker", (int)s->worker,
		    "history", s->history ? s->history : json_null(),
		    "detail", s->detail ? s->detail : json_null(), "confirm", s->confirm,
		    "confirm_attempt", (int)s->confirm_attempt));
		json_object_set_new(json_array_get(seeds, i), "turns", json_pack("[I, I]",
		    (json_int_t)s->ok_turns, (json_int_t)s->total_turns));
		json_object_set_new(json_array_get(seeds, i), "forced",
		    json_integer(s->forced));
		json_object_set_new(json_array_get(seeds, i), "minimize", json_pack(
		    "[i, i, i]", s->minimize, (int)s->minimize_attempt,
		    (int)s->minimize_lost));
		if (s->regress != NULL)
			json_object_set_new(json_array_get(seeds, i), "regression",
			    json_string(s->regress->name));
	}
	for (i = 0; i < c->nleases; i++) {
		const struct lease	*l = &c->leases[i];
		json_t			*ls = json_array();

		for (k = 0; k < l->n; k++)
			json_array_append_new(ls, json_pack("[I, i, i]",
			    (json_int_t)l->seeds[k].seed, (int)l->seeds[k].attempt,
			    (int)l->reported[k]));
		json_array_append_new(leases, json_pack("{s:I, s:i, s:i, s:i, s:I, s:b, "
		    "s:o}", "id", (json_int_t)l->id, "worker", (int)l->worker,
		    "state", l->state, "keep", (int)l->keep, "from", (json_int_t)l->from,
		    "confirm", l->confirm, "seeds", ls));
		json_object_set_new(json_array_get(leases, i), "minimize",
		    json_boolean(l->minimize));
	}
	for (i = 0; i < c->nworkers; i++) {
		const struct wrec	*w = &c->workers[i];

		json_array_append_new(workers, json_pack("{s:i, s:s, s:I, s:i, s:i, s:b}",
		    "id", (int)w->id, "name", w->name, "lease", (json_int_t)w->lease,
		    "seeds", (int)w->seeds, "infra_run", (int)w->infra_run,
		    "quarantined", w->quarantined));
	}
	json_t	*d = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:i, "
	    "s:i, s:b, s:s?, s:i, s:o}",
	    "seeds", seeds, "leases", leases, "workers", workers,
	    "returned", q_json(&c->returned), "retry", q_json(&c->retry),
	    "regq", q_json(&c->regq),
	    "confirm", q_json(&c->confirm), "next_fresh", (json_int_t)c->next_fresh,
	    "nfinal", (json_int_t)c->nfinal, "nconfirm_open",
	    (json_int_t)c->nconfirm_open, "retries", (json_int_t)c->retries,
	    "nquarantined", (int)c->nquarantined, "early_seen", (int)c->early_seen,
	    "early_off", c->early_off, "halt_why", c->halt_why,
	    "halt_status", c->halt_status, "coverage", cov_json(c->cov));
	json_object_set_new(d, "minq", q_json(&c->minq));
	json_object_set_new(d, "nmin_open", json_integer((json_int_t)c->nmin_open));
	return d;
}
