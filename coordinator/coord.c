#include "coordinator/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/queue.h"
#include "common/util.h"
#include "coordinator/fingerprint.h"

#define MAX_SEEDS	(10u * 1000 * 1000)	/* one run; a bigger sweep is several runs */
#define CONFIRM_MAX	20	/* confirming re-runs per run: one per distinct failure */

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
};

struct coord {
	struct coord_opts	 o;
	struct coord_seed	*seeds;
	uint64_t		 nseeds, next_fresh, nfinal;
	/* FIFOs of seed indices (uint64_t) */
	struct queue		 returned;	/* unstarted seeds of dead leases */
	struct queue		 retry;		/* infra seeds waiting for a new attempt */
	struct queue		 confirm;	/* failing seeds waiting for their re-run */
	uint64_t		 nconfirm_open;	/* confirming re-runs without an outcome */
	struct lease		*leases;
	size_t			 nleases, cap_leases;
	struct wrec		*workers;
	size_t			 nworkers;
	coord_final_cb		 final_cb;
	void			*final_arg;
	uint64_t		 retries;
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
	uint64_t	 n = seed_range_count(&o->seeds), i;

	if (n == 0 || n > MAX_SEEDS) {
		errf(err, "a run holds at most %u seeds; split the range", MAX_SEEDS);
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->o = *o;
	if (c->o.max_chunk <= 0)
		c->o.max_chunk = 32;
	c->nseeds = n;
	c->seeds = xcalloc(n, sizeof(*c->seeds));
	queue_init(&c->returned, sizeof(uint64_t));
	queue_init(&c->retry, sizeof(uint64_t));
	queue_init(&c->confirm, sizeof(uint64_t));
	for (i = 0; i < n; i++) {
		c->seeds[i].seed = o->seeds.first + i;
		c->seeds[i].history = json_array();
	}
	return c;
}

void
coord_free(struct coord *c)
{
	uint64_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nseeds; i++) {
		json_decref(c->seeds[i].history);
		json_decref(c->seeds[i].detail);
	}
	for (i = 0; i < c->nleases; i++) {
		free(c->leases[i].seeds);
		free(c->leases[i].reported);
	}
	for (i = 0; i < c->nworkers; i++) {
		free(c->workers[i].name);
		free(c->workers[i].host);
	}
	queue_free(&c->returned);
	queue_free(&c->retry);
	queue_free(&c->confirm);
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
	log_debug("seed %" PRIu64 ": %s -> %s", s->seed, seed_state_names[s->state],
	    seed_state_names[st]);
	s->state = st;
}

static void
set_confirm_state(struct coord_seed *s, enum coord_confirm st)
{
	log_debug("seed %" PRIu64 ": confirm %s -> %s", s->seed,
	    confirm_names[s->confirm], confirm_names[st]);
	s->confirm = st;
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
 * fingerprint for its confirming re-run, for the first CONFIRM_MAX
 * fingerprints in seed order.  Seeds are in order, so the groups found
 * before the scan stops are those, with their smallest seeds.
 */
static void
plan_confirms(struct coord *c)
{
	struct fp_groups	 g;
	uint64_t		 i;
	size_t			 k;

	if (!c->o.cfg->confirm)
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

		set_confirm_state(s, CONFIRM_PENDING);
		q_push(c, &c->confirm, s);
		c->nconfirm_open++;
		log_debug("seed %" PRIu64 ": confirming re-run of %s", s->seed,
		    g.v[k].fp);
	}
	fp_groups_free(&g);
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
		free(mine);
	}
	json_object_set_new(s->detail, "confirm", rec);
	log_debug("seed %" PRIu64 ": confirming re-run on worker %u: %s %s", s->seed,
	    worker, msg_verdict_name(verdict), reason_name(why));
	free(fp);
	json_decref(detail);
	if (c->final_cb)
		c->final_cb(c, s, c->final_arg);
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

	json_array_append_new(s->history, json_pack("{s:i, s:s, s:s, s:I, s:s}",
	    "worker", (int)worker, "verdict", msg_verdict_name(verdict),
	    "reason", reason_name(why), "duration_ms", (json_int_t)duration_ms,
	    "message", json_is_string(msgj) ? json_string_value(msgj) : ""));
	s->last_worker = worker;
	if (verdict == VERDICT_INFRA && (int)s->infra++ < c->o.cfg->retries) {
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
	json_decref(s->detail);
	s->detail = detail;
	c->nfinal++;
	if (w)
		w->seeds++;
	if (c->final_cb)
		c->final_cb(c, s, c->final_arg);
	if (c->nfinal == c->nseeds)
		plan_confirms(c);
}

static void
lease_expire(struct coord *c, struct lease *l, const char *why)
{
	struct wrec	*w = worker_get(c, l->worker);
	bool		 first = true;
	uint32_t	 i;

	if (l->state != LEASE_ACTIVE)
		return;
	set_lease_state(l, LEASE_EXPIRED);
	if (w && w->lease == l->id)
		w->lease = 0;
	/* The worker runs its lease in order: the first unreported seed was
	 * running, the rest never started. */
	for (i = 0; i < l->n; i++) {
		struct coord_seed	*s = seed_get(c, l->seeds[i].seed);

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
			log_warnx("seed %" PRIu64 ": worker %u lost (%s)", s->seed,
			    l->worker, why);
			seed_outcome(c, s, l->worker, REASON_WORKER_LOST, 0,
			    json_pack("{s:s}", "message", why));
		} else {
			set_seed_state(s, CSEED_PENDING);
			s->attempts--;		/* it never ran */
			q_push(c, &c->returned, s);
		}
	}
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

static void
lease_add(struct coord *c, struct lease *l, uint64_t idx)
{
	struct coord_seed	*s = &c->seeds[idx];

	set_seed_state(s, CSEED_LEASED);
	s->attempts++;
	l->seeds[l->n].seed = s->seed;
	l->seeds[l->n].attempt = s->attempts;
	l->n++;
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
	return c->nfinal == c->nseeds && c->nconfirm_open == 0;
}

static void
lease_reply(const struct lease *l, int ttl, struct msg *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_LEASE;
	rep->u.lease.lease_id = l->id;
	rep->u.lease.ttl_ms = (uint32_t)ttl;
	rep->u.lease.nseeds = l->n;
	rep->u.lease.seeds = xcalloc(l->n, sizeof(struct msg_seed));
	memcpy(rep->u.lease.seeds, l->seeds, l->n * sizeof(struct msg_seed));
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

int
coord_serve(struct coord *c, uint32_t worker, int64_t now, struct msg *rep)
{
	struct wrec	*w = worker_get(c, worker);
	struct lease	*l = NULL;
	uint64_t	 left, chunk;
	int		 live;
	size_t		 i;

	if (coord_finished(c)) {
		text_reply(rep, MSG_DONE, 1, "run finished");
		return 1;
	}
	if (w == NULL)
		return 0;
	/* A retry goes to another worker than its last, whenever one is alive. */
	live = coord_live_workers(c);
	for (i = 0; i < c->retry.len; i++) {
		uint64_t	idx = q_at(&c->retry, i);

		if (c->seeds[idx].last_worker != worker || live <= 1) {
			l = lease_new(c, worker, now);
			lease_add(c, l, idx);
			queue_remove(&c->retry, i);
			goto leased;
		}
	}
	/* A confirming re-run goes elsewhere too, whenever another is alive. */
	for (i = 0; i < c->confirm.len; i++) {
		struct coord_seed	*s = &c->seeds[q_at(&c->confirm, i)];

		if (s->worker != worker || live <= 1) {
			l = lease_new(c, worker, now);
			set_confirm_state(s, CONFIRM_LEASED);
			s->confirm_attempt = s->attempts + 1;
			l->seeds[0].seed = s->seed;
			l->seeds[0].attempt = s->confirm_attempt;
			l->n = 1;
			queue_remove(&c->confirm, i);
			goto leased;
		}
	}
	left = c->returned.len + (c->nseeds - c->next_fresh);
	if (left == 0)
		return 0;
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
	w->lease = l->id;
	lease_reply(l, c->o.lease_ttl_ms, rep);
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

/* Fills *rep; returns whether the result was accepted. */
static bool
handle_result(struct coord *c, const struct msg *req, struct msg *rep)
{
	const uint64_t		 seed = req->u.result.seed;
	struct lease		*l = lease_get(c, req->u.result.lease_id);
	struct coord_seed	*s = seed_get(c, seed);
	json_t			*detail;
	json_error_t		 jerr;
	uint32_t		 i;
	int			 verdict = req->u.result.verdict;
	int			 why = reason_parse(req->u.result.reason);
	bool			 confirming;
	char			 reason[64], jtext[LOG_ESC_LEN];

	if (l == NULL || l->worker != req->u.result.worker_id) {
		text_reply(rep, MSG_ACK, 0, "lease %" PRIu64 " is not yours",
		    req->u.result.lease_id);
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
	for (i = 0; i < l->n; i++)
		if (l->seeds[i].seed == seed)
			break;
	confirming = i < l->n && !l->reported[i] && s != NULL &&
	    s->confirm == CONFIRM_LEASED && s->confirm_attempt == req->u.result.attempt &&
	    l->seeds[i].attempt == req->u.result.attempt;
	if (!confirming && (i == l->n || l->reported[i] || s == NULL ||
	    s->state != CSEED_LEASED || l->seeds[i].attempt != req->u.result.attempt)) {
		text_reply(rep, MSG_ACK, 0, "seed %" PRIu64 " (attempt %u) is not open "
		    "under lease %" PRIu64, seed, req->u.result.attempt, l->id);
		return false;
	}
	l->reported[i] = 1;
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
	if (confirming)
		confirm_outcome(c, s, l->worker, why, req->u.result.duration_ms, detail);
	else
		seed_outcome(c, s, l->worker, why, req->u.result.duration_ms, detail);
	for (i = 0; i < l->n && l->reported[i]; i++)
		;
	if (i == l->n) {
		struct wrec	*w = worker_get(c, l->worker);

		set_lease_state(l, LEASE_DONE);
		if (w && w->lease == l->id)
			w->lease = 0;
	}
	text_reply(rep, MSG_ACK, 1, "ok");
	return true;
}

int
coord_handle(struct coord *c, const struct msg *req, uint32_t pipe, int64_t now,
    struct msg *rep)
{
	struct wrec	*w = NULL;
	struct lease	*l;
	uint32_t	 wid = 0;

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
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			lease_expire(c, l, "it asked for a new lease while holding one");
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
		w->alive = false;
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			lease_expire(c, l, "it said bye while holding a lease");
		text_reply(rep, MSG_ACK, 1, "bye");
		return 1;
	default:
		return 1;
	}
}

void
coord_pipe_closed(struct coord *c, uint32_t pipe, int64_t now)
{
	struct lease	*l;
	size_t		 i;

	(void)now;
	for (i = 0; i < c->nworkers; i++) {
		struct wrec	*w = &c->workers[i];

		if (w->pipe != pipe || !w->alive)
			continue;
		w->alive = false;
		if (w->lease && (l = lease_get(c, w->lease)) != NULL)
			lease_expire(c, l, "its connection closed");
	}
}

int64_t
coord_tick(struct coord *c, int64_t now)
{
	int64_t	next = -1;
	size_t	i;

	for (i = 0; i < c->nleases; i++) {
		struct lease	*l = &c->leases[i];

		if (l->state != LEASE_ACTIVE)
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

json_t *
coord_workers_json(const struct coord *c)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; i < c->nworkers; i++)
		json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:i, s:i}",
		    "id", (int)c->workers[i].id, "host", c->workers[i].host,
		    "name", c->workers[i].name, "pid", (int)c->workers[i].pid,
		    "seeds", (int)c->workers[i].seeds));
	return a;
}
