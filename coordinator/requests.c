/*
 * What each request of a worker does (coord_handle): HELLO (a worker joins
 * or rejoins), BUNDLE_REQ, LEASE_REQ (lease.c's coord_serve), RESULT
 * (refused under a dead lease or for a seed the lease does not hold;
 * accepted, recorded by coord.c or confirm.c, with the quarantine's cut
 * and the lease's keep in its ACK; an explore lease's result to the
 * driver), HEARTBEAT and BYE.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/coord_int.h"

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
		coord_text_reply(rep, MSG_DONE, 1, "run finished");
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
	coord_starting_drop(c, w->pid);
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
		coord_text_reply(rep, MSG_NACK, 0, "worker %u said hello on another connection, "
		    "or never", req->u.bundle_req.worker_id);
		return 1;
	}
	if (c->o.bundle_hash == NULL || *c->o.bundle_hash == '\0') {
		coord_text_reply(rep, MSG_NACK, 0, "this coordinator sends no bundle (--bundle "
		    "off): the config folder must be at %s on the worker", c->o.cfg_path);
		return 1;
	}
	if (strcmp(req->u.bundle_req.hash, c->o.bundle_hash) != 0) {
		coord_text_reply(rep, MSG_NACK, 0, "this coordinator's bundle is %.12s..., not "
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
void
coord_result_apply(struct coord *c, struct lease *l, uint32_t i, enum result_kind kind,
    enum reason why, int64_t duration_ms, json_t *detail)
{
	struct coord_seed	*s = item_get(c, l, i), *t;
	struct wrec		*w = worker_get(c, l->worker);
	uint32_t		 k;

	l->reported[i] = 1;
	if (w != NULL)
		w->results++;
	if (kind == RESULT_CONFIRM)
		coord_confirm_outcome(c, s, l->worker, why, duration_ms, detail);
	else if (kind == RESULT_MINIMIZE)
		coord_minimize_outcome(c, s, l->worker, why, duration_ms, detail);
	else
		coord_seed_outcome(c, s, l->worker, why, duration_ms, detail);
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
		coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is execution %" PRIu64
		    " of seed %" PRIu64 ", not the result's", l->id, l->explore_no,
		    l->seeds[0].seed);
		return false;
	}
	if (l->reported[0]) {
		coord_text_reply(rep, MSG_ACK, 1, "execution %" PRIu64 " was already recorded",
		    l->explore_no);
		rep->u.ack.keep = 1;
		return false;
	}
	if (l->state != LEASE_ACTIVE) {
		log_warnx("late result of execution %" PRIu64 " under %s lease %" PRIu64
		    " from worker %u refused", l->explore_no, lease_state_names[l->state],
		    l->id, l->worker);
		coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " has %s; execution %" PRIu64
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
	coord_text_reply(rep, MSG_ACK, 1, "ok");
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
		coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is not yours",
		    req->u.result.lease_id);
		return false;
	}
	if (l->explore_no != 0)
		return explore_result(c, l, req, rep);
	/* A regression's result names its plan as its lease did; a seed's none. */
	s = l->reg != 0 ? item_get(c, l, 0) : seed_get(c, seed);
	if (l->reg != 0 ? strcmp(plan, s->regress->name) != 0 ||
	    strcmp(hash, s->regress->hash) != 0 : *plan != '\0') {
		coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is %s%s, not the "
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
			coord_text_reply(rep, MSG_ACK, 1, "seed %" PRIu64 " (attempt %u) was "
			    "already recorded", seed, req->u.result.attempt);
			rep->u.ack.keep = l->keep;
			return false;
		}
	if (l->state != LEASE_ACTIVE) {
		log_warnx("late result for seed %" PRIu64 " under %s lease %" PRIu64
		    " from worker %u refused", seed, lease_state_names[l->state], l->id,
		    l->worker);
		coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " has %s; seed %" PRIu64
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
		coord_text_reply(rep, MSG_ACK, 0, "seed %" PRIu64 " (attempt %u) is not "
		    "being minimized under lease %" PRIu64, seed,
		    req->u.result.attempt, l->id);
		return false;
	}
	if (!confirming && !minimizing && (i == l->keep || l->reported[i] || s == NULL ||
	    s->state != CSEED_LEASED || l->seeds[i].attempt != req->u.result.attempt)) {
		coord_text_reply(rep, MSG_ACK, 0, "seed %" PRIu64 " (attempt %u) is not open "
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
	coord_result_apply(c, l, i, minimizing ? RESULT_MINIMIZE : confirming ?
	    RESULT_CONFIRM : RESULT_SEED, why, req->u.result.duration_ms, detail);
	coord_text_reply(rep, MSG_ACK, 1, "ok");
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

	coord_halt_apply(c);
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
		coord_text_reply(rep, MSG_NACK, 0, "a worker does not send %s",
		    msg_type_name(req->type));
		return 1;
	}
	/* A worker speaks only from the pipe it said hello on. */
	if ((w = worker_get(c, wid)) == NULL) {
		log_warnx("%s from unknown worker %u refused", msg_type_name(req->type), wid);
		coord_text_reply(rep, MSG_NACK, 0, "unknown worker %u: say hello first", wid);
		return 1;
	}
	if (w->pipe != pipe) {
		log_warnx("%s as worker %u from another connection refused",
		    msg_type_name(req->type), wid);
		coord_text_reply(rep, MSG_NACK, 0, "worker %u said hello on another connection", wid);
		return 1;
	}
	switch (req->type) {
	case MSG_LEASE_REQ:
		if (!w->alive) {
			coord_text_reply(rep, MSG_NACK, 0, "worker %u said bye", wid);
			return 1;
		}
		/* A worker asks between leases: had it not received its last
		 * one (the reply lost with its connection), none of it ran. */
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			coord_lease_end(c, l, false, "it asked for another lease");
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
			coord_text_reply(rep, MSG_ACK, 1, "lease done");
			return 1;
		}
		if (l == NULL || l->worker != wid || l->state != LEASE_ACTIVE) {
			coord_text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is not active",
			    req->u.heartbeat.lease_id);
			return 1;
		}
		l->expires = now + c->o.lease_ttl_ms;
		coord_text_reply(rep, MSG_ACK, 1, "ok");
		return 1;
	case MSG_BYE:
		/* A worker says bye between seeds: nothing of its lease runs. */
		w->alive = false;
		w->bye = true;
		if (req->u.bye.drain)
			log_info("worker %u is draining: its unstarted seeds go back", wid);
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			coord_lease_end(c, l, false, "it said bye");
		coord_text_reply(rep, MSG_ACK, 1, "bye");
		return 1;
	default:
		return 1;
	}
}
