/*
 * `soak worker --connect URL`: dial the coordinator, take its config, then
 * lease seeds and run them one after another until it says done.  The
 * worker keeps nothing the coordinator needs: every verdict travels in a
 * RESULT message before the next seed starts, so a worker that dies loses
 * at most the seed it was running, which the coordinator gives to another.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/auth.h"
#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/soak.h"
#include "common/tlsconf.h"
#include "common/util.h"
#include "isolation/iso.h"
#include "worker/wrk.h"

int
wrk_open(struct wrk *w, char *err)
{
	const char	*path = getenv("PATH");

	w->path_env = xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (w->unusable != NULL) {
		w->open_failed = REASON_SETUP;
		return errf(err, "%s", w->unusable);
	}
	w->open_failed = REASON_DB;
	if (iso_dbparams_parse(w->conninfo, &w->db, err) == -1)
		return -1;
	if ((w->iso = iso_open(w->cfg, w->conninfo, w->run_id, w->id, w->workspace,
	    err)) == NULL)
		return -1;
	w->open_failed = REASON_SERVICE;
	if (wrk_services_start(w, err) == -1)
		return -1;
	w->open_failed = REASON_NONE;
	return 0;
}

void
wrk_close(struct wrk *w, bool drop_schema)
{
	char	err[ERR_LEN];

	wrk_services_stop(w);
	if (w->iso && drop_schema && iso_drop(w->iso, err) == -1)
		log_warnx("%s", err);
	iso_close(w->iso);
	w->iso = NULL;
	iso_dbparams_free(&w->db);
	free(w->path_env);
	w->path_env = NULL;
}

/* --- talking to the coordinator --- */

/*
 * The session both contexts of a link (the main one and the heartbeat's)
 * share once the handshake is done: requests are numbered across both
 * (common/auth.h).
 */
struct link_auth {
	pthread_mutex_t		 mu;
	bool			 sealed;
	uint64_t		 seq;		/* the last request's */
	struct auth_session	 sess;
};

struct link {
	nng_socket	 sock;
	nng_ctx		 ctx;
	nng_aio		*aio;
	char		*url;
	struct link_auth *auth;
	int		 rv;		/* the last exchange's nng error, or 0 */
};

#define DIAL_PATIENCE_MS	60000	/* a coordinator not up yet */

/* Errors a later dial may not meet: nothing listens there yet. */
static bool
dial_retryable(int rv)
{
	return rv == NNG_ECONNREFUSED || rv == NNG_ENOENT || rv == NNG_ETIMEDOUT ||
	    rv == NNG_EUNREACHABLE || rv == NNG_ECONNRESET;
}

/*
 * The first connection, dialed synchronously so a failure can be told:
 * a TLS handshake that fails (wrong CA, wrong name, no client certificate)
 * ends the worker with the reason; a coordinator not listening yet is
 * dialed again for up to DIAL_PATIENCE_MS.  Once connected, the dialer
 * redials by itself.
 */
static int
link_dial(struct link *l, const struct auth_opts *o, char *err)
{
	nng_dialer	d;
	int64_t		give_up = now_ms() + DIAL_PATIENCE_MS;
	int		rv, pause_ms = 20;

	for (;;) {
		if ((rv = nng_dialer_create(&d, l->sock, l->url)) != 0)
			return errf(err, "cannot dial coordinator at %s: %s", l->url,
			    nng_strerror(rv));
		if (auth_url_is_tls(l->url) && tlsconf_dialer(d, l->url, o, err) == -1) {
			nng_dialer_close(d);
			return -1;
		}
		if ((rv = nng_dialer_start(d, 0)) == 0)
			return 0;
		nng_dialer_close(d);
		if (!dial_retryable(rv) || now_ms() >= give_up)
			break;
		poll(NULL, 0, pause_ms);
		pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
	}
	if (auth_url_is_tls(l->url) && !dial_retryable(rv))
		tlsconf_explain(l->url, o, rv, err);
	else
		errf(err, "cannot dial coordinator at %s: %s%s", l->url, nng_strerror(rv),
		    rv == NNG_ECONNSHUT ? " (does it listen on tls+tcp://?)" : "");
	return -1;
}

static int
link_open(struct link *l, const char *url, const struct auth_opts *o,
    struct link_auth *a, char *err)
{
	int	rv;

	l->url = xstrdup(url);
	l->auth = a;
	if ((rv = nng_req0_open(&l->sock)) != 0)
		return errf(err, "cannot open a request socket: %s", nng_strerror(rv));
	/* Never resend on our own: a resent lease request would lease twice. */
	nng_socket_set_ms(l->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	/* Not the coordinator's MSG_COORD_RECV_MAX: a WELCOME carries the config. */
	nng_socket_set_size(l->sock, NNG_OPT_RECVMAXSZ, MSG_MAX + AUTH_TRAILER_LEN);
	nng_socket_set_ms(l->sock, NNG_OPT_RECONNMINT, 20);
	nng_socket_set_ms(l->sock, NNG_OPT_RECONNMAXT, 1000);
	if (link_dial(l, o, err) == -1)
		return -1;
	if ((rv = nng_ctx_open(&l->ctx, l->sock)) != 0 ||
	    (rv = nng_aio_alloc(&l->aio, NULL, NULL)) != 0)
		return errf(err, "nng: %s", nng_strerror(rv));
	return 0;
}

static void
link_close(struct link *l)
{
	if (l->aio)
		nng_aio_free(l->aio);
	nng_ctx_close(l->ctx);
	nng_close(l->sock);
	free(l->url);
}

/* A second context on the same socket, for the heartbeat thread. */
static int
link_clone(struct link *dst, const struct link *src, char *err)
{
	int	rv;

	dst->sock = src->sock;
	dst->url = xstrdup(src->url);
	dst->auth = src->auth;
	if ((rv = nng_ctx_open(&dst->ctx, src->sock)) != 0 ||
	    (rv = nng_aio_alloc(&dst->aio, NULL, NULL)) != 0)
		return errf(err, "nng: %s", nng_strerror(rv));
	return 0;
}

/* Sends buf (taken) and waits for the reply's bytes. */
static int
link_exchange(struct link *l, uint8_t *buf, size_t len, int timeout_ms,
    const char *what, nng_msg **reply, char *err)
{
	nng_msg	*nm = NULL;
	int	 rv;

	if ((rv = nng_msg_alloc(&nm, 0)) != 0 || (rv = nng_msg_append(nm, buf, len)) != 0) {
		free(buf);
		nng_msg_free(nm);
		return errf(err, "nng: %s", nng_strerror(rv));
	}
	free(buf);
	l->rv = 0;
	nng_aio_set_timeout(l->aio, timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	nng_aio_set_msg(l->aio, nm);
	nng_ctx_send(l->ctx, l->aio);
	nng_aio_wait(l->aio);
	if ((l->rv = rv = nng_aio_result(l->aio)) != 0) {
		nng_msg_free(nng_aio_get_msg(l->aio));
		return errf(err, "sending %s to %s: %s", what, l->url, nng_strerror(rv));
	}
	nng_ctx_recv(l->ctx, l->aio);
	nng_aio_wait(l->aio);
	if ((l->rv = rv = nng_aio_result(l->aio)) != 0)
		return errf(err, "no reply to %s from %s%s: %s", what, l->url,
		    rv == NNG_ETIMEDOUT ? " (watchdog)" : "", nng_strerror(rv));
	*reply = nng_aio_get_msg(l->aio);
	return 0;
}

/*
 * One request, one reply.  seal: the request carries seq and the session
 * MAC; open: the reply must carry the MAC and the same seq, checked before
 * it is decoded.  timeout_ms < 0: wait as long as it takes.
 */
static int
link_roundtrip(struct link *l, const struct msg *req, struct msg *rep, int timeout_ms,
    const char *what, bool seal, bool open, uint64_t seq, char *err)
{
	nng_msg		*nm = NULL;
	uint8_t		*buf = NULL;
	size_t		 len, mlen;
	uint64_t	 rseq = 0;
	char		 tmp[ERR_LEN], text[128];
	int		 rv;

	if (msg_encode(req, &buf, &len, err) == -1)
		return -1;
	if (seal)
		auth_seal(&l->auth->sess, AUTH_TO_COORDINATOR, seq, &buf, &len);
	if (link_exchange(l, buf, len, timeout_ms, what, &nm, err) == -1)
		return -1;
	mlen = nng_msg_len(nm);
	if (open && auth_open(&l->auth->sess, AUTH_TO_WORKER, nng_msg_body(nm),
	    nng_msg_len(nm), &rseq, &mlen, tmp) == -1) {
		/* A refusal needs no seal: believing one can only stop us. */
		if (msg_decode(nng_msg_body(nm), nng_msg_len(nm), rep, tmp) == 0 &&
		    rep->type == MSG_NACK)
			errf(err, "the coordinator at %s refused %s: %s", l->url, what,
			    log_escape(text, sizeof(text), rep->u.ack.text));
		else
			errf(err, "the reply to %s from %s is not the coordinator's: "
			    "bad session MAC", what, l->url);
		msg_clear(rep);
		nng_msg_free(nm);
		return -1;
	}
	if (open && rseq != seq) {
		nng_msg_free(nm);
		return errf(err, "the reply to %s from %s answers request %" PRIu64
		    ", not %" PRIu64, what, l->url, rseq, seq);
	}
	rv = msg_decode(nng_msg_body(nm), mlen, rep, tmp);
	nng_msg_free(nm);
	if (rv == -1)
		return errf(err, "bad reply to %s from %s: %s", what, l->url, tmp);
	return 0;
}

/*
 * Whether the last exchange failed because the connection went away: the
 * coordinator closes connections it cannot take yet (its limit of
 * unauthenticated connections, coordinator/peer.h), and a request without
 * resends (link_open) fails with them.
 */
static bool
link_lost(const struct link *l)
{
	return l->rv == NNG_ECONNRESET || l->rv == NNG_ECONNSHUT;
}

/* A request of the session: sealed once the handshake is done. */
static int
link_call(struct link *l, const struct msg *req, struct msg *rep, int timeout_ms,
    const char *what, char *err)
{
	struct link_auth	*a = l->auth;
	uint64_t		 seq = 0;
	bool			 sealed;

	pthread_mutex_lock(&a->mu);
	if ((sealed = a->sealed))
		seq = ++a->seq;
	pthread_mutex_unlock(&a->mu);
	return link_roundtrip(l, req, rep, timeout_ms, what, sealed, sealed, seq, err);
}

/* --- heartbeat thread --- */

struct beat {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct link	 link;
	uint32_t	 worker_id;
	uint64_t	 lease_id;	/* 0: none held */
	uint64_t	 seed;
	int		 interval_ms;
	bool		 stop, lost;	/* lost: the coordinator refused the lease */
};

static void *
beat_main(void *arg)
{
	struct beat	*b = arg;
	struct msg	 req, rep;
	char		 err[ERR_LEN], text[LOG_ESC_LEN];

	pthread_mutex_lock(&b->mu);
	while (!b->stop) {
		struct timespec	ts;

		abstime_in(&ts, b->interval_ms);
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
		if (b->stop || b->lease_id == 0)
			continue;
		memset(&req, 0, sizeof(req));
		req.type = MSG_HEARTBEAT;
		req.u.heartbeat.worker_id = b->worker_id;
		req.u.heartbeat.lease_id = b->lease_id;
		req.u.heartbeat.seed = b->seed;
		pthread_mutex_unlock(&b->mu);
		if (link_call(&b->link, &req, &rep, 10000, "heartbeat", err) == -1)
			log_warnx("%s", err);
		else {
			if (rep.type == MSG_ACK && !rep.u.ack.ok) {
				/* A beat that crossed the lease's last result is no news. */
				pthread_mutex_lock(&b->mu);
				if (b->lease_id == req.u.heartbeat.lease_id) {
					b->lost = true;
					log_warnx("coordinator refused lease %" PRIu64 ": %s",
					    req.u.heartbeat.lease_id, log_escape(text,
					    sizeof(text), rep.u.ack.text));
				}
				pthread_mutex_unlock(&b->mu);
			}
			msg_clear(&rep);
		}
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static void
beat_set(struct beat *b, uint64_t lease_id, uint64_t seed)
{
	pthread_mutex_lock(&b->mu);
	if (b->lease_id != lease_id)
		b->lost = false;
	b->lease_id = lease_id;
	b->seed = seed;
	pthread_mutex_unlock(&b->mu);
}

static bool
beat_lost(struct beat *b)
{
	bool	lost;

	pthread_mutex_lock(&b->mu);
	lost = b->lost;
	pthread_mutex_unlock(&b->mu);
	return lost;
}

/* --- the worker's life: hello, leases, report, teardown --- */

struct wopts {
	const char	*url;
	const char	*workspace;
	struct auth_opts auth;
	int		 slots;
};

/* One worker process's state across its phases. */
struct worker {
	const struct wopts	*o;
	struct link		 link;
	struct beat		 beat;
	pthread_t		 beat_thread;
	bool			 beating;
	bool			 opened;	/* wrk_open succeeded */
	struct cfg		 cfg;
	struct wrk		 w;
	struct iso_db		 db;
	struct link_auth	 auth;		/* the session, both contexts */
	/*
	 * Why what the coordinator says may be acted on: how it proved
	 * itself, or what waived the proof (--insecure, ipc://).  NULL
	 * until then, and nothing is run, created or deleted while NULL.
	 */
	const char		*trusted_by;
};

/* The paths the coordinator chose, or this machine's defaults. */
static void
worker_paths(struct worker *k, const struct msg *welcome)
{
	struct wrk	*w = &k->w;
	const char	*tmp = getenv("TMPDIR");

	if (*welcome->u.welcome.workspace)
		w->workspace = xasprintf("%s/w%d", welcome->u.welcome.workspace, w->id);
	else
		w->workspace = xasprintf("%s/soak-%s-w%d", k->o->workspace ?
		    k->o->workspace : scratch_root(), w->run_id, w->id);
	/* Kept failures outlive the worker, so not under its workspace. */
	w->keep_dir = *welcome->u.welcome.keep_dir ?
	    xstrdup(welcome->u.welcome.keep_dir) :
	    xasprintf("%s/soak-%s-failures", tmp && *tmp ? tmp : "/tmp", w->run_id);
}

/* What vouches for a coordinator that sent WELCOME without a challenge. */
static const char *
trust_without_secret(const struct wopts *o)
{
	if (auth_url_is_tls(o->url) && o->auth.tls_ca)
		return "its TLS certificate (--tls-ca)";
	if (auth_url_is_ipc(o->url))
		return "a local ipc:// socket";
	if (o->auth.insecure)
		return "nothing (--insecure)";
	return NULL;
}

/*
 * The challenge of common/auth.h: checks the coordinator's proof, sends
 * ours, and turns the session on.  0 with the sealed reply to AUTH in
 * *rep; -1 (logged) with *rep cleared; -2 when the connection went away
 * (link_lost), to start over.
 */
static int
worker_prove(struct worker *k, const uint8_t nw[AUTH_NONCE_LEN], struct msg *rep)
{
	const struct auth_secret	*key = &k->o->auth.secret;
	struct msg			 req = { .type = MSG_AUTH };
	uint8_t				 nc[AUTH_NONCE_LEN];
	char				 err[ERR_LEN];
	const char			*url = k->o->url;
	int				 rc = -1;

	memcpy(nc, rep->u.challenge.nonce, AUTH_NONCE_LEN);
	if (key->len == 0) {
		log_warnx("the coordinator at %s wants a shared secret: set SOAK_SECRET "
		    "or --secret-file FILE", url);
		goto fail;
	}
	if (!auth_proof_ok(key, AUTH_COORDINATOR, nw, nc, rep->u.challenge.proof)) {
		log_warnx("the coordinator at %s failed to prove it knows the shared "
		    "secret (another secret, or not our coordinator): refusing it, "
		    "nothing run", url);
		goto fail;
	}
	auth_session_init(&k->auth.sess, key, nw, nc);
	auth_proof(key, AUTH_WORKER, nw, nc, req.u.auth.proof);
	msg_clear(rep);
	/* AUTH goes in the clear; the WELCOME answering it is sealed, seq 0. */
	if (link_roundtrip(&k->link, &req, rep, 60000, "auth", false, true, 0,
	    err) == -1) {
		if (link_lost(&k->link)) {
			log_debug("%s", err);
			rc = -2;
		} else
			log_warnx("%s", err);
		goto fail;
	}
	explicit_bzero(&req, sizeof(req));
	pthread_mutex_lock(&k->auth.mu);
	k->auth.sealed = true;
	pthread_mutex_unlock(&k->auth.mu);
	k->trusted_by = auth_url_is_tls(url) && k->o->auth.tls_ca ?
	    "its TLS certificate and the shared secret" : "the shared secret";
	return 0;
fail:
	explicit_bzero(&req, sizeof(req));
	msg_clear(rep);
	return rc;
}

/*
 * HELLO with a fresh nonce and no secret, then whatever the coordinator
 * must do to prove itself.  0 with the WELCOME in *rep, else -1 (logged),
 * or -2 when the connection went away before the end (link_lost).
 */
static int
worker_handshake(struct worker *k, struct msg *rep)
{
	struct msg	 req = { .type = MSG_HELLO };
	uint8_t		 nw[AUTH_NONCE_LEN];
	char		 err[ERR_LEN], host[256] = "localhost", name[300];
	char		 text[LOG_ESC_LEN];
	const char	*url = k->o->url;
	int		 rc = -1;

	gethostname(host, sizeof(host) - 1);
	snprintf(name, sizeof(name), "%s:%d", host, (int)getpid());
	if (auth_nonce(nw, err) == -1) {
		log_warnx("%s", err);
		return -1;
	}
	req.u.hello.name = name;
	req.u.hello.host = host;
	req.u.hello.pid = (uint32_t)getpid();
	req.u.hello.slots = 1;
	memcpy(req.u.hello.nonce, nw, AUTH_NONCE_LEN);
	if (link_call(&k->link, &req, rep, 60000, "hello", err) == -1) {
		if (link_lost(&k->link)) {
			log_debug("%s", err);
			rc = -2;
		} else
			log_warnx("%s", err);
		goto out;
	}
	/* After a challenge, *rep is the sealed reply to AUTH. */
	if (rep->type == MSG_CHALLENGE && (rc = worker_prove(k, nw, rep)) != 0)
		goto out;
	if (rep->type != MSG_WELCOME)
		log_warnx("coordinator at %s refused this worker: %s", url,
		    rep->type == MSG_NACK ? log_escape(text, sizeof(text),
		    rep->u.ack.text) : msg_type_name(rep->type));
	else if (k->trusted_by == NULL && k->o->auth.secret.len > 0)
		log_warnx("the coordinator at %s sent its config without proving it "
		    "knows the shared secret (it has none, or it is not our "
		    "coordinator): refusing it, nothing run", url);
	else {
		if (k->trusted_by == NULL)
			k->trusted_by = trust_without_secret(k->o);
		rc = 0;
	}
out:
	explicit_bzero(nw, sizeof(nw));
	if (rc != 0)
		msg_clear(rep);
	return rc;
}

/*
 * Hello: dial, introduce ourselves, have the coordinator prove itself, and
 * take the run from the WELCOME — the config, the paths, the database.
 * Returns 0, or an exit status.
 */
static int
worker_hello(struct worker *k)
{
	struct msg	 rep = { 0 };
	char		 err[ERR_LEN], role[32], text[LOG_ESC_LEN * 2];
	int64_t		 give_up = now_ms() + DIAL_PATIENCE_MS;
	int		 rc = 1, hs, pause_ms = 20;

	if (link_open(&k->link, k->o->url, &k->o->auth, &k->auth, err) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	/* A connection closed before the handshake ends (the coordinator at its
	 * limit of unauthenticated connections) is tried again, from HELLO. */
	while ((hs = worker_handshake(k, &rep)) == -2 && now_ms() < give_up) {
		poll(NULL, 0, pause_ms);
		pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
	}
	if (hs == -2)
		log_warnx("the coordinator at %s kept closing the connection before this "
		    "worker could authenticate, for %d s (at its limit of connections "
		    "not authenticated yet, or refusing this address)", k->o->url,
		    DIAL_PATIENCE_MS / 1000);
	if (hs != 0)
		return 1;
	/* The gate: nothing below — a config that names commands, paths this
	 * worker creates and deletes, a database it connects to — is taken
	 * from a coordinator that has not proved itself. */
	if (k->trusted_by == NULL) {
		log_warnx("refusing the coordinator at %s: it has not proved itself",
		    k->o->url);
		goto out;
	}
	log_debug("the coordinator at %s is trusted by %s", k->o->url, k->trusted_by);
	k->w.id = (int)rep.u.welcome.worker_id;
	snprintf(role, sizeof(role), "worker %d", k->w.id);
	log_set_role(role);
	/* A config that does not load here makes every seed infra, saying why. */
	if (wrk_bundle_config(&rep, k->o->workspace, link_call, &k->link, &k->cfg,
	    err) == -1) {
		log_warnx("the coordinator's config does not load here: %s",
		    log_escape(text, sizeof(text), err));
		k->w.unusable = xstrdup(err);
	}
	k->w.cfg = &k->cfg;
	k->w.run_id = xstrdup(rep.u.welcome.run_id);
	worker_paths(k, &rep);
	k->beat.interval_ms = rep.u.welcome.heartbeat_ms ?
	    (int)rep.u.welcome.heartbeat_ms : 1000;
	k->beat.worker_id = (uint32_t)k->w.id;
	if (!k->w.unusable && iso_db_open(&k->db, &k->cfg, 1, rep.u.welcome.db_conninfo,
	    err) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	k->w.conninfo = xstrdup(k->db.conninfo);
	rc = 0;
out:
	msg_clear(&rep);
	return rc;
}

static int
worker_beat_start(struct worker *k)
{
	char	err[ERR_LEN] = "";

	if (link_clone(&k->beat.link, &k->link, err) == -1 ||
	    pthread_create(&k->beat_thread, NULL, beat_main, &k->beat) != 0) {
		log_warnx("cannot start the heartbeat: %s", err);
		return -1;
	}
	k->beating = true;
	return 0;
}

/* Stops the heartbeat thread and closes its context of the shared socket. */
static void
worker_beat_stop(struct worker *k)
{
	struct beat	*b = &k->beat;

	if (!k->beating)
		return;
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(k->beat_thread, NULL);
	if (b->link.aio)
		nng_aio_free(b->link.aio);
	nng_ctx_close(b->link.ctx);
	free(b->link.url);
	k->beating = false;
}

/* Runs one seed; a worker that cannot open its environment says infra. */
static void
worker_run_seed(struct worker *k, const struct msg_seed *s, struct seed_result *res)
{
	char	err[ERR_LEN];

	if (!k->opened) {
		if (wrk_open(&k->w, err) == 0)
			k->opened = true;
		else {
			log_warnx("cannot run seeds: %s", err);
			memset(res, 0, sizeof(*res));
			res->verdict = VERDICT_INFRA;
			res->reason = k->w.open_failed;
			snprintf(res->message, sizeof(res->message), "%s", err);
			res->detail = json_pack("{s:s}", "message", err);
			wrk_close(&k->w, false);
		}
	}
	if (k->opened)
		wrk_run_seed(&k->w, s->seed, s->attempt, res);
	log_debug("seed %" PRIu64 ": %s %s (%lld ms)", s->seed,
	    msg_verdict_name(res->verdict), reason_name(res->reason),
	    (long long)res->duration_ms);
}

/*
 * Report: one RESULT, acknowledged before the next seed starts.  Returns
 * 0 accepted, 1 refused (the lease is gone: stop running it), -1 when the
 * coordinator cannot be reached.
 */
static int
worker_report(struct worker *k, uint64_t lease_id, const struct msg_seed *s,
    const struct seed_result *res)
{
	struct msg	 r = { .type = MSG_RESULT }, ack;
	char		*detail, err[ERR_LEN], text[LOG_ESC_LEN];
	int		 rc = 0;

	/* At most MSG_DETAIL_MAX: a detail too big to encode is a summary,
	 * never a worker that exits and loses the verdict. */
	detail = wrk_result_text(res);
	r.u.result.worker_id = (uint32_t)k->w.id;
	r.u.result.lease_id = lease_id;
	r.u.result.seed = s->seed;
	r.u.result.attempt = s->attempt;
	r.u.result.verdict = (uint8_t)res->verdict;
	r.u.result.reason = UNCONST(reason_name(res->reason));
	r.u.result.duration_ms = res->duration_ms > UINT32_MAX ?
	    UINT32_MAX : (uint32_t)res->duration_ms;
	r.u.result.detail = detail;
	if (link_call(&k->link, &r, &ack, 60000, "result", err) == -1) {
		log_warnx("%s", err);
		free(detail);
		return -1;
	}
	free(detail);
	if (ack.type == MSG_ACK && !ack.u.ack.ok) {
		log_warnx("seed %" PRIu64 ": result refused: %s", s->seed,
		    log_escape(text, sizeof(text), ack.u.ack.text));
		rc = 1;
	}
	msg_clear(&ack);
	return rc;
}

/* Runs a lease's seeds in order; -1 when the coordinator is gone. */
static int
worker_run_lease(struct worker *k, const struct msg *lease)
{
	uint32_t	i;
	int		rc;

	for (i = 0; i < lease->u.lease.nseeds; i++) {
		const struct msg_seed	*s = &lease->u.lease.seeds[i];
		struct seed_result	 res;

		if (beat_lost(&k->beat))
			break;
		beat_set(&k->beat, lease->u.lease.lease_id, s->seed);
		worker_run_seed(k, s, &res);
		rc = worker_report(k, lease->u.lease.lease_id, s, &res);
		seed_result_clear(&res);
		if (rc == -1)
			return -1;
		if (rc == 1)
			break;
	}
	beat_set(&k->beat, 0, 0);
	return 0;
}

/* Leases until the coordinator says done; 0, or -1 when it is gone. */
static int
worker_leases(struct worker *k)
{
	struct msg	req, rep;
	char		err[ERR_LEN], text[LOG_ESC_LEN];
	int		rc;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.type = MSG_LEASE_REQ;
		req.u.lease_req.worker_id = (uint32_t)k->w.id;
		if (link_call(&k->link, &req, &rep, -1, "lease request", err) == -1) {
			log_warnx("%s", err);
			return -1;
		}
		if (rep.type == MSG_DONE) {
			msg_clear(&rep);
			return 0;
		}
		if (rep.type != MSG_LEASE) {
			log_warnx("unexpected %s in reply to a lease request: %s",
			    msg_type_name(rep.type), rep.type == MSG_NACK ?
			    log_escape(text, sizeof(text), rep.u.ack.text) : "");
			msg_clear(&rep);
			return -1;
		}
		rc = worker_run_lease(k, &rep);
		msg_clear(&rep);
		if (rc == -1)
			return -1;
	}
}

static void
worker_bye(struct worker *k)
{
	struct msg	req = { .type = MSG_BYE }, rep;
	char		err[ERR_LEN];

	req.u.bye.worker_id = (uint32_t)k->w.id;
	if (link_call(&k->link, &req, &rep, 5000, "bye", err) == 0)
		msg_clear(&rep);
}

static void
worker_teardown(struct worker *k)
{
	worker_beat_stop(k);
	if (k->w.cfg)
		wrk_close(&k->w, true);
	if (k->w.workspace)
		rm_rf(k->w.workspace);
	iso_db_close(&k->db);
	link_close(&k->link);
	free(k->w.run_id);
	free(k->w.workspace);
	free(k->w.keep_dir);
	free(k->w.conninfo);
	free(k->w.unusable);
	cfg_free(&k->cfg);
	auth_session_clear(&k->auth.sess);
}

static int
worker_main(const struct wopts *o)
{
	struct worker	k = { .o = o, .beat = { .mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER },
			    .auth = { .mu = PTHREAD_MUTEX_INITIALIZER } };
	int		rc;

	if ((rc = worker_hello(&k)) == 0) {
		rc = 1;
		if (worker_beat_start(&k) == 0 && worker_leases(&k) == 0) {
			worker_bye(&k);
			rc = 0;
		}
	}
	worker_teardown(&k);
	return rc;
}

static void
worker_usage(FILE *f)
{
	fprintf(f,
	    "usage: soak worker --connect URL [--slots N] [--workspace DIR]\n"
	    "                   [--secret-file FILE] [--tls-ca PEM [--tls-server-name NAME]]\n"
	    "                   [--tls-cert PEM] [--insecure] [-v]\n"
	    "\n"
	    "Dials the coordinator at URL (tls+tcp://HOST:PORT, tcp://HOST:PORT,\n"
	    "ipc://PATH), makes it prove itself, takes the run's config from it, and\n"
	    "runs leased seeds until the run is done.\n"
	    "\n"
	    "  --connect URL          the coordinator's --listen address\n"
	    "  --slots N              seeds to run at once (N worker processes; default 1)\n"
	    "  --workspace DIR        where turns' workspaces and cached config folders\n"
	    "                         live (default /dev/shm)\n"
	    "  --secret-file FILE     the shared secret (else SOAK_SECRET; at least 16\n"
	    "                         bytes; the file mode 600); never sent, proved by\n"
	    "                         HMAC challenge-response in both directions\n"
	    "  --tls-ca PEM           verify the coordinator's certificate against this CA\n"
	    "  --tls-server-name NAME the name its certificate must carry (default: the\n"
	    "                         URL's host; needed when that is an IP address)\n"
	    "  --tls-cert PEM         this worker's client certificate and key, one file\n"
	    "                         (when the coordinator has --tls-client-ca)\n"
	    "  --insecure             accept a coordinator that cannot prove itself (a\n"
	    "                         trusted lab network only; warned at every start)\n"
	    "  -v, --verbose          log every seed\n"
	    "\n"
	    "On any URL but ipc:// the coordinator must prove itself before this worker\n"
	    "runs, creates or deletes anything: by the shared secret, or by its TLS\n"
	    "certificate (tls+tcp:// with --tls-ca).  Without either the worker refuses\n"
	    "to start (exit 64) unless --insecure.  The coordinator in turn wants the\n"
	    "secret or, with --tls-client-ca, a client certificate (--tls-cert).\n");
}

int
cmd_worker(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect",	required_argument, NULL, 'c' },
		{ "slots",	required_argument, NULL, 's' },
		{ "workspace",	required_argument, NULL, 'w' },
		{ "secret-file",	required_argument, NULL, 'F' },
		{ "tls-ca",	required_argument, NULL, 'A' },
		{ "tls-server-name",	required_argument, NULL, 'N' },
		{ "tls-cert",	required_argument, NULL, 'C' },
		{ "insecure",	no_argument,	   NULL, 'I' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct wopts	 o = { .slots = 1 };
	pid_t		*kids;
	int		 ch, i, rc = 0, st;
	char		*end, err[ERR_LEN], warn[ERR_LEN];

	while ((ch = getopt_long(argc, argv, "c:s:w:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.url = optarg;
			break;
		case 's':
			o.slots = (int)strtol(optarg, &end, 10);
			if (*end || o.slots < 1 || o.slots > 256) {
				fprintf(stderr, "soak worker: --slots wants 1..256, got \"%s\"\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'w':
			o.workspace = optarg;
			break;
		case 'F': o.auth.secret_file = optarg; break;
		case 'A': o.auth.tls_ca = optarg; break;
		case 'N': o.auth.tls_server_name = optarg; break;
		case 'C': o.auth.tls_cert = optarg; break;
		case 'I': o.auth.insecure = true; break;
		case 'v':
			log_init("worker", 1);
			break;
		case 'h':
			worker_usage(stdout);
			return 0;
		default:
			worker_usage(stderr);
			return SOAK_EXIT_USAGE;
		}
	}
	if (o.url == NULL || optind != argc) {
		worker_usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	/* Before anything is dialed: the secret, the rules, the files. */
	if (auth_secret_load(o.auth.secret_file, &o.auth.secret, err) == -1 ||
	    (rc = auth_policy(AUTH_WORKER, o.url, &o.auth, warn, err)) == -1 ||
	    tlsconf_check(AUTH_WORKER, o.url, &o.auth, err) == -1) {
		fprintf(stderr, "soak worker: %s\n", err);
		auth_secret_free(&o.auth.secret);
		return SOAK_EXIT_USAGE;
	}
	if (rc == 1)
		fprintf(stderr, "soak worker: warning: %s\n", warn);
	rc = 0;
	signal(SIGPIPE, SIG_IGN);
	if (o.slots == 1) {
		rc = worker_main(&o);
		auth_secret_free(&o.auth.secret);
		return rc;
	}
	/* Slots are processes: each has its own schema, workspace, connection. */
	kids = xcalloc(o.slots, sizeof(pid_t));
	for (i = 0; i < o.slots; i++) {
		if ((kids[i] = fork()) == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			_exit(worker_main(&o));
		}
	}
	for (i = 0; i < o.slots; i++)
		if (kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] &&
		    (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
			rc = 1;
	free(kids);
	auth_secret_free(&o.auth.secret);
	return rc;
}
