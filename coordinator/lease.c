/*
 * Leasing (coord.h): what a worker that asks is given (coord_serve:
 * retries elsewhere, confirming re-runs, minimize leases, regressions
 * first, then seeds in chunks that shrink as the range drains, then the
 * unstarted tail of the busiest lease, lease_steal; an exploration's
 * executions), a lease's end (its ttl, coord_tick; its worker gone,
 * coord_worker_died; the seed it was running an infra attempt
 * "worker-lost", the rest back to the pool), and the local workers about
 * to join.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/coord_int.h"

/*
 * Ends an active lease.  running: whether a seed may be running (the
 * lease expired, the pipe closed) — that seed gets an infra attempt
 * "worker-lost"; without (a worker between seeds said bye), every
 * unreported seed goes back unstarted.
 */
void
coord_lease_end(struct coord *c, struct lease *l, bool running, const char *why)
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
			coord_minimize_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
			continue;
		}
		if (!l->reported[i] && s != NULL && s->confirm == CONFIRM_LEASED &&
		    l->seeds[i].attempt == s->confirm_attempt) {
			log_warnx("seed %" PRIu64 ": worker %u lost during the "
			    "confirming re-run (%s)", s->seed, l->worker, why);
			coord_confirm_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
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
			coord_seed_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
		} else
			seed_return(c, s);
	}
}

void
coord_lease_expire(struct coord *c, struct lease *l, const char *why)
{
	coord_lease_end(c, l, true, why);
}

struct lease *
coord_lease_new(struct coord *c, uint32_t worker, int64_t now)
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
void
coord_lease_fit(struct lease *l)
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

/* The process pid is no longer to come: it joined or it died. */
void
coord_starting_drop(struct coord *c, uint32_t pid)
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
	coord_starting_drop(c, pid);
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

	coord_halt_apply(c);
	coord_starting_drop(c, pid);
	for (i = c->nworkers; i-- > 0 && w == NULL;)
		if (c->workers[i].pid == pid)
			w = &c->workers[i];
	if (w == NULL)
		return;
	w->alive = false;
	w->bye = true;		/* nobody to wait for at the end */
	if ((l = lease_get(c, w->lease)) != NULL && l->state == LEASE_ACTIVE)
		coord_lease_expire(c, l, why);
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

void
coord_text_reply(struct msg *rep, enum msg_type type, int ok, const char *fmt, ...)
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
	l = coord_lease_new(c, worker, now);
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

	coord_halt_apply(c);
	if (coord_finished(c)) {
		coord_text_reply(rep, MSG_DONE, 1, "run finished");
		return 1;
	}
	if (w == NULL)
		return 0;
	if (c->halt_why != NULL) {
		coord_text_reply(rep, MSG_DONE, 1, "the run stopped: %s", c->halt_why);
		return 1;
	}
	if (w->quarantined) {
		coord_text_reply(rep, MSG_DONE, 1, "quarantined: %u infra outcomes in a row, "
		    "the last %s; this worker gets no more seeds", w->infra_run,
		    reason_name(w->quarantine_why));
		return 1;
	}
	/* An exploration: one execution a lease, as the driver hands them out. */
	if (c->o.explore != NULL) {
		uint64_t	 no;
		char		*payload;

		if (c->o.explore->next(c->o.explore->arg, worker, &no, &payload) != 1)
			return 0;
		l = coord_lease_new(c, worker, now);
		l->seeds[0].seed = c->o.explore->seed;
		l->seeds[0].attempt = no > UINT32_MAX ? UINT32_MAX : (uint32_t)no;
		l->n = l->keep = 1;
		l->explore_no = no;
		l->explore = payload;
		c->nexplore_open++;
		coord_lease_fit(l);
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
			l = coord_lease_new(c, worker, now);
			lease_add(c, l, idx);
			queue_remove(&c->retry, i);
			goto leased;
		}
	}
	/* A confirming re-run goes elsewhere too, whenever another is alive. */
	for (i = 0; i < c->confirm.len; i++) {
		struct coord_seed	*s = &c->seeds[q_at(&c->confirm, i)];

		if (s->worker != worker || !elsewhere) {
			l = coord_lease_new(c, worker, now);
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

		l = coord_lease_new(c, worker, now);
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
		l = coord_lease_new(c, worker, now);
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
	l = coord_lease_new(c, worker, now);
	while (l->n < chunk && c->returned.len > 0) {
		lease_add(c, l, q_at(&c->returned, 0));
		queue_remove(&c->returned, 0);
	}
	while (l->n < chunk && c->next_fresh < c->nseeds)
		lease_add(c, l, c->next_fresh++);
leased:
	coord_lease_fit(l);
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

	coord_halt_apply(c);
	for (i = 0; i < c->nworkers; i++) {
		struct lease	*l = lease_get(c, c->workers[i].lease);

		if (l == NULL || l->state != LEASE_ACTIVE)
			continue;
		if (now >= l->expires) {
			coord_lease_expire(c, l, "no heartbeat before its lease expired");
			continue;
		}
		if (next == -1 || l->expires - now < next)
			next = l->expires - now;
	}
	return next;
}
