/*
 * The journal's replay (coord_replay, coord_resumed): each event of a
 * journal (coordinator/journal.h) redone on a fresh coordinator by the
 * rules that made it, and the whole state as JSON (coord_dump) that a
 * replay must rebuild exactly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/coord_int.h"
#include "coordinator/coverage.h"

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
	l = coord_lease_new(c, w->id, 0);
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
	coord_lease_fit(l);
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
	coord_result_apply(c, l, i, minimizing ? RESULT_MINIMIZE : confirming ?
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
		coord_lease_end(c, l, json_is_true(json_object_get(e, "running")),
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
			coord_lease_expire(c, &c->leases[i], "its worker died with the "
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
