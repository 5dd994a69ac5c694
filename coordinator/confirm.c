/*
 * Confirming re-runs and minimize leases (coord.h; docs/results.md): once
 * every seed is final, the smallest failing seed of each fingerprint is
 * queued for its re-run and to be minimized (coord_plan_confirms, called
 * by coord.c as the last verdict comes); what a re-run's or a minimize
 * lease's outcome adds to the seed's detail, which never changes its
 * verdict.  Their leases are granted and lost in lease.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/plan.h"
#include "common/util.h"
#include "coordinator/coord_int.h"
#include "coordinator/fingerprint.h"
#include "fault-proxy/proxy.h"

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
void
coord_plan_confirms(struct coord *c)
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
void
coord_confirm_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
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

/*
 * A minimize lease's outcome (tickets.minimize): the worker's "minimize"
 * record, into the seed's detail as "minimized", with what the
 * coordinator checked of it — the plan parses and fits the config, and
 * the minimal plan's failure has the seed's fingerprint ("same_failure"),
 * else its plan is dropped and the ticket says it was not minimized.  The
 * verdict stands either way.  detail is consumed.
 */
void
coord_minimize_outcome(struct coord *c, struct coord_seed *s, uint32_t worker,
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
	    plan_check(plan, c->o.cfg, s->seed, "the minimized plan", NULL, err) == -1)) {
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
