/*
 * A worker's life (wrk_serve; `soak worker` is cmd/worker.c): dial the
 * coordinator, take its config, then lease seeds and run them one after
 * another until it says done.  The worker keeps nothing the coordinator
 * needs: every verdict travels in a RESULT message before the next seed
 * starts, so a worker that dies loses at most the seed it was running,
 * which the coordinator gives to another.
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
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/auth.h"
#include "common/config.h"
#include "common/conninfo.h"
#include "common/exec.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/regress.h"
#include "common/soak.h"
#include "common/tlsconf.h"
#include "common/units.h"
#include "common/util.h"
#include "isolation/iso.h"
#include "worker/minimize.h"
#include "worker/regexplore.h"
#include "worker/xexec.h"
#include "worker/wrk.h"

/*
 * A proxy in front of the database connects to it in clear (it reads the
 * protocol, answering its clients' SSLRequest with N), so a database that
 * refuses that (pg_hba.conf with hostssl lines only) fails every turn
 * through it, which would read as the system's own failure.  Asked once,
 * as the proxy connects (iso_plain_probe); over a unix socket there is no
 * TLS, and iso_open's connection got in.  A refusal fails the open as
 * infra/proxy with a cause no retry mends (the run stops early, exit 2:
 * the database's pg_hba.conf, not the config file); a probe that could not
 * ask is a warning, the turns will tell.
 */
static int
db_plain_check(struct wrk *w, char *err)
{
	const struct cfg	*cfg = w->cfg;
	struct iso_plain	 pl;
	struct cfgerr		*ce = &w->open_cfgerr;
	char			 why[ERR_LEN];
	size_t			 i;

	for (i = 0; i < cfg->nproxies; i++)
		if (cfg->proxies[i].upstream_kind == CFG_UP_DATABASE)
			break;
	if (i == cfg->nproxies || w->db.host == NULL || w->db.host[0] == '/')
		return 0;
	if (iso_plain_probe(w->conninfo, now_ms() + ISO_CONNECT_MS, &pl, why) == -1) {
		conninfo_scrub(why, sizeof(why), w->conninfo);
		log_warnx("could not ask the database whether proxy %s can reach "
		    "it: %s", cfg->proxies[i].name, why);
		return 0;
	}
	if (!pl.refused || !pl.hba)
		return 0;
	w->open_failed = REASON_PROXY;
	memset(ce, 0, sizeof(*ce));
	ce->kind = CFGERR_LOAD;
	snprintf(ce->what, sizeof(ce->what), "proxies[%zu].upstream", i);
	snprintf(ce->code, sizeof(ce->code), "%s", pl.sqlstate);
	snprintf(ce->detail, sizeof(ce->detail), "proxy %.24s cannot reach the "
	    "database at %.48s: %s (pg_hba.conf, SQLSTATE %s); the proxy reads "
	    "the traffic, so let plain connections in from here (a host line)",
	    cfg->proxies[i].name, pl.where, pl.tls_wanted ? "it requires TLS" :
	    "it refuses plain ones", pl.sqlstate);
	return errf(err, "%s", ce->detail);
}

/*
 * The scrubber of text this worker captures (common/scrub.h).  A password
 * too short, or equal to a name, cannot be scrubbed as text: said once.
 */
static void
wrk_scrub_start(struct wrk *w)
{
	static bool	 told;
	const char	*env = getenv("PGPASSWORD");
	char		 why[ERR_LEN];
	bool		 short_one = false;
	size_t		 i;

	if (w->scrub != NULL)
		return;
	w->scrub = scrub_new();
	if (scrub_add_conninfo(w->scrub, w->conninfo, why) == -1)
		short_one = true;
	else if (env && *env && scrub_add(w->scrub, "the PGPASSWORD of soak's "
	    "environment", env, strlen(env), why) == -1)
		short_one = true;
	else if (w->secret && w->secret->len > 0 && scrub_add(w->scrub,
	    "the shared secret", w->secret->key, w->secret->len, why) == -1)
		short_one = true;
	/* a model API's real key (docs/models.md): a turn never has it, but
	 * a reply or a service could still print it */
	for (i = 0; w->cfg != NULL && i < w->cfg->nproxies; i++) {
		const char	*name = w->cfg->proxies[i].api_key_env;
		const char	*key = name ? getenv(name) : NULL;

		if (key != NULL && *key != '\0' && scrub_add(w->scrub,
		    "a model API key (api_key_env)", key, strlen(key), why) == -1)
			short_one = true;
	}
	if (short_one && !told) {
		log_warnx("%s", why);
		told = true;
	}
}

int
wrk_open(struct wrk *w, char *err)
{
	wrk_scrub_start(w);
	w->path_env = xstrdup(exec_path());
	memset(&w->open_cfgerr, 0, sizeof(w->open_cfgerr));
	if (w->unusable != NULL) {
		w->open_failed = REASON_SETUP;
		cfgerr_load(&w->open_cfgerr, w->unusable);
		return errf(err, "%s", w->unusable);
	}
	w->open_failed = REASON_DB;
	if (iso_dbparams_parse(w->conninfo, &w->db, err) == -1)
		return -1;
	/* The workspace root is ours (made 0700, or checked: no symlink,
	 * our own, no one else writes in it) before anything goes in it. */
	if (private_dir(w->workspace, err) == -1)
		return -1;
	w->workspace_ok = true;
	if ((w->iso = iso_open(w->cfg, w->conninfo, w->run_id, w->id, w->workspace,
	    err)) == NULL)
		return -1;
	if (db_plain_check(w, err) == -1)
		return -1;
	/* Without it only outages that outlast a seed are seen: go on. */
	if ((w->watch = iso_watch_start(w->conninfo, w->id, err)) == NULL)
		log_warnx("%s", err);
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
	iso_watch_stop(w->watch);
	w->watch = NULL;
	if (w->iso && drop_schema && iso_drop(w->iso, err) == -1)
		log_warnx("%s", err);
	iso_close(w->iso);
	w->iso = NULL;
	iso_dbparams_free(&w->db);
	free(w->path_env);
	w->path_env = NULL;
	scrub_free(w->scrub);
	w->scrub = NULL;
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
	nng_dialer	 dialer;
	nng_ctx		 ctx;
	nng_aio		*aio;
	int		 efd;		/* the main link: an eventfd its aio's
					   completions count on; -1: none */
	int		 lostfd;	/* the main link: readable once a
					   connection of its socket closed */
	bool		 gone;		/* a request was cut by that */
	char		*url;
	struct link_auth *auth;
	int		 rv;		/* the last exchange's nng error, or 0 */
	uint32_t	 pipe;		/* the connection the last reply came on
					   (nng_pipe_id), or 0 */
};

/*
 * SIGTERM drains the worker: the seed running finishes and is reported,
 * the lease's unstarted seeds go back (BYE drain), and it exits 0.  The
 * handler only sets the flag and makes drain_fds[0] readable, which
 * wakes a lease request parked at the coordinator (link_wait cancels it).
 */
static volatile sig_atomic_t	draining;
static int			drain_fds[2] = { -1, -1 };

static void
on_sigterm(int sig)
{
	int			saved = errno;

	static const char	said[] = "soak worker: SIGTERM: draining — the seed "
				    "running finishes, the unstarted go back\n";

	(void)sig;
	if (!draining)
		(void)!write(STDERR_FILENO, said, sizeof(said) - 1);
	draining = 1;
	if (drain_fds[1] != -1)
		(void)!write(drain_fds[1], "x", 1);
	errno = saved;
}

static void
drain_setup(void)
{
	struct sigaction	sa = { .sa_handler = on_sigterm, .sa_flags = SA_RESTART };

	if (drain_fds[0] == -1 && pipe2(drain_fds, O_CLOEXEC | O_NONBLOCK) == -1)
		drain_fds[0] = drain_fds[1] = -1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * nng's thread: a connection of the socket closed.  The session went with
 * it, and a request in flight would wait for ever (nng keeps it for the
 * next connection): link_wait cancels it, and every request after fails
 * at once, until the worker dials again (worker_rejoin).
 */
static void
link_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct link	*l = arg;
	uint64_t	 one = 1;

	(void)p;
	(void)ev;
	if (l->lostfd != -1)
		(void)!write(l->lostfd, &one, sizeof(one));
}

/* Before a handshake: no session yet, so an earlier loss means nothing. */
static void
link_forget_losses(struct link *l)
{
	uint64_t	v;

	if (l->lostfd != -1)
		(void)!read(l->lostfd, &v, sizeof(v));
	l->gone = false;
}

static void
link_cb(void *arg)
{
	struct link	*l = arg;
	uint64_t	 one = 1;

	(void)!write(l->efd, &one, sizeof(one));
}

/*
 * Waits for the main link's aio.  on_drain: a SIGTERM cancels the request
 * (a lease request the coordinator holds until it has work).
 */
static void
link_wait(struct link *l, bool on_drain)
{
	struct pollfd	p[3] = { { .fd = l->efd, .events = POLLIN },
			    { .fd = l->lostfd, .events = POLLIN },
			    { .fd = on_drain ? drain_fds[0] : -1, .events = POLLIN } };
	bool		cancelled = false;
	uint64_t	v;

	if (l->efd == -1) {
		nng_aio_wait(l->aio);
		return;
	}
	for (;;) {
		/* poll skips an fd of -1: cancelled, only the completion counts. */
		if (cancelled)
			p[1].fd = p[2].fd = -1;
		if (poll(p, 3, -1) == -1)
			continue;
		if (p[0].revents & POLLIN) {
			(void)!read(l->efd, &v, sizeof(v));
			break;
		}
		if (p[1].revents & POLLIN)
			l->gone = true;
		if ((p[1].revents & POLLIN) || (p[2].revents & POLLIN)) {
			nng_aio_cancel(l->aio);
			cancelled = true;
		}
	}
	nng_aio_wait(l->aio);
}

/* Errors a later dial may not meet: nothing listens there yet. */
static bool
dial_retryable(int rv)
{
	/*
	 * A name that does not resolve yet is retried too: nng says EAGAIN
	 * for a resolver that could not answer (EAI_AGAIN) and EADDRINVAL for
	 * a name not found, which is what a Kubernetes Service or a node's
	 * DNS entry looks like for its first seconds.  A misspelt name waits
	 * out --reconnect, and says so at once.
	 */
	return rv == NNG_ECONNREFUSED || rv == NNG_ENOENT || rv == NNG_ETIMEDOUT ||
	    rv == NNG_EUNREACHABLE || rv == NNG_ECONNRESET || rv == NNG_EAGAIN ||
	    rv == NNG_EADDRINVAL;
}

/*
 * The first connection, dialed synchronously so a failure can be told:
 * a TLS handshake that fails (wrong CA, wrong name, no client certificate)
 * ends the worker with the reason; a coordinator not listening yet is
 * dialed again until give_up (--reconnect).  Once connected, the dialer
 * redials by itself.
 */
static int
link_dial(struct link *l, const struct auth_opts *o, int64_t give_up, char *err)
{
	nng_dialer	d;
	int		rv, pause_ms = 20;
	bool		said = false;

	for (;;) {
		if ((rv = nng_dialer_create(&d, l->sock, l->url)) != 0)
			return errf(err, "cannot dial coordinator at %s: %s", l->url,
			    nng_strerror(rv));
		if (auth_url_is_tls(l->url) && tlsconf_dialer(d, l->url, o, err) == -1) {
			nng_dialer_close(d);
			return -1;
		}
		if ((rv = nng_dialer_start(d, 0)) == 0) {
			l->dialer = d;
			return 0;
		}
		nng_dialer_close(d);
		if (!dial_retryable(rv) || now_ms() >= give_up || draining)
			break;
		/* At the first refusal: a worker that waits says so at once. */
		if (!said) {
			log_info("waiting for the coordinator at %s (%s), for up to %lld s",
			    l->url, nng_strerror(rv),
			    (long long)(give_up - now_ms() + 999) / 1000);
			said = true;
		}
		poll(drain_fds[0] != -1 ? &(struct pollfd){ .fd = drain_fds[0],
		    .events = POLLIN } : NULL, drain_fds[0] != -1, pause_ms);
		pause_ms = pause_ms < 2000 ? pause_ms * 2 : 5000;
	}
	if (auth_url_is_tls(l->url) && !dial_retryable(rv))
		tlsconf_explain(l->url, o, rv, err);
	else if (dial_retryable(rv) && draining)
		errf(err, "stopped waiting for the coordinator at %s (%s): told to "
		    "stop", l->url, nng_strerror(rv));
	else if (dial_retryable(rv))
		errf(err, "cannot dial coordinator at %s: %s until the end of "
		    "--reconnect: gave up", l->url, nng_strerror(rv));
	else
		errf(err, "cannot dial coordinator at %s: %s%s", l->url, nng_strerror(rv),
		    rv == NNG_ECONNSHUT ? " (does it listen on tls+tcp://?)" : "");
	return -1;
}

static int
link_open(struct link *l, const char *url, const struct auth_opts *o,
    struct link_auth *a, int64_t give_up, char *err)
{
	int	rv;

	l->url = xstrdup(url);
	l->auth = a;
	if ((l->efd = eventfd(0, EFD_CLOEXEC)) == -1 ||
	    (l->lostfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		return errf(err, "eventfd: %s", strerror(errno));
	if ((rv = nng_req0_open(&l->sock)) != 0)
		return errf(err, "cannot open a request socket: %s", nng_strerror(rv));
	/* Never resend on our own: a resent lease request would lease twice. */
	nng_socket_set_ms(l->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	/* Not the coordinator's MSG_COORD_RECV_MAX: a WELCOME carries the config. */
	nng_socket_set_size(l->sock, NNG_OPT_RECVMAXSZ, MSG_MAX + AUTH_TRAILER_LEN);
	nng_socket_set_ms(l->sock, NNG_OPT_RECONNMINT, 20);
	nng_socket_set_ms(l->sock, NNG_OPT_RECONNMAXT, 1000);
	nng_pipe_notify(l->sock, NNG_PIPE_EV_REM_POST, link_pipe_gone, l);
	if (link_dial(l, o, give_up, err) == -1)
		return -1;
	if ((rv = nng_ctx_open(&l->ctx, l->sock)) != 0 ||
	    (rv = nng_aio_alloc(&l->aio, link_cb, l)) != 0)
		return errf(err, "nng: %s", nng_strerror(rv));
	return 0;
}

static void
link_close(struct link *l, bool final)
{
	if (l->url != NULL && final) {
		/*
		 * The worker exits: the process ends and its sockets with it.
		 * nng_close is not called: nng 1.5.2's can wait for ever once
		 * the worker has rejoined a coordinator (another socket of the
		 * process lost a connection with a request outstanding).  Its
		 * callbacks are told to forget l, which goes with the stack.
		 */
		nng_pipe_notify(l->sock, NNG_PIPE_EV_REM_POST, NULL, NULL);
		if (l->aio)
			nng_aio_free(l->aio);	/* idle: the last reply is in */
	} else if (l->url != NULL) {
		if (l->aio)
			nng_aio_free(l->aio);
		/*
		 * Dropped for another connection (worker_rejoin): its dialer
		 * stops, its connections close, and the socket is left, idle.
		 * nng 1.5.2's nng_close can wait for ever on a socket whose
		 * connection was lost with a request outstanding, and a worker
		 * that rejoins leaks one socket, not its life.
		 */
		nng_pipe_notify(l->sock, NNG_PIPE_EV_REM_POST, NULL, NULL);
		nng_ctx_close(l->ctx);
		nng_dialer_close(l->dialer);
	}
	if (l->efd != -1)
		close(l->efd);
	if (l->lostfd != -1)
		close(l->lostfd);
	free(l->url);
	memset(l, 0, sizeof(*l));
	l->efd = l->lostfd = -1;
}

/* A second context on the same socket, for the heartbeat thread. */
static int
link_clone(struct link *dst, const struct link *src, char *err)
{
	int	rv;

	dst->sock = src->sock;
	dst->url = xstrdup(src->url);
	dst->auth = src->auth;
	dst->efd = dst->lostfd = -1;
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
	l->pipe = 0;
	nng_aio_set_timeout(l->aio, timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	nng_aio_set_msg(l->aio, nm);
	nng_ctx_send(l->ctx, l->aio);
	link_wait(l, timeout_ms < 0);
	if ((l->rv = rv = nng_aio_result(l->aio)) != 0) {
		nng_msg_free(nng_aio_get_msg(l->aio));
		if (l->gone)
			l->rv = NNG_ECONNSHUT;
		return errf(err, "sending %s to %s: %s", what, l->url, l->gone ?
		    "the connection closed" : nng_strerror(rv));
	}
	nng_ctx_recv(l->ctx, l->aio);
	link_wait(l, timeout_ms < 0);
	if ((l->rv = rv = nng_aio_result(l->aio)) != 0) {
		if (l->gone)
			l->rv = NNG_ECONNSHUT;
		return errf(err, "no reply to %s from %s%s: %s", what, l->url,
		    rv == NNG_ETIMEDOUT ? " (watchdog)" : "", l->gone ?
		    "the connection closed" : nng_strerror(rv));
	}
	*reply = nng_aio_get_msg(l->aio);
	l->pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(*reply));
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

/*
 * How long past its deadline a seed may take to end — the database probe
 * (WRK_PROBE_MS), killing its turns, keeping a failing workspace — before
 * its heartbeats stop and its lease is left to expire.
 */
#define BEAT_GRACE_MS	(WRK_PROBE_MS + 10000)

struct beat {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct link	 link;
	uint32_t	 worker_id;
	uint64_t	 lease_id;	/* 0: none held */
	uint64_t	 seed;
	struct wrk	*w;		/* its seed's deadline (wrk_seed_deadline) */
	bool		 overdue;	/* said so, for this seed */
	int		 interval_ms;
	bool		 stop, lost;	/* lost: the coordinator refused the lease */
};

/* An absolute CLOCK_MONOTONIC time ms from now (the beat's cv uses it). */
static void
mono_abstime(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static void *
beat_main(void *arg)
{
	struct beat	*b = arg;
	struct msg	 req, rep;
	char		 err[ERR_LEN], text[LOG_ESC_LEN];

	pthread_mutex_lock(&b->mu);
	while (!b->stop) {
		struct timespec	ts;

		mono_abstime(&ts, b->interval_ms);
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
		if (b->stop || b->lease_id == 0)
			continue;
		/*
		 * A beat says the seed makes progress within its deadline, not
		 * only that this thread lives: a seed stuck past seed_timeout and
		 * its margin (a call that never returns) gets no more, so its
		 * lease expires and the seed runs elsewhere.
		 */
		if (b->w != NULL && wrk_seed_deadline(b->w) != 0 &&
		    now_ms() > wrk_seed_deadline(b->w) + BEAT_GRACE_MS) {
			if (!b->overdue)
				log_warnx("seed %" PRIu64 " is past its deadline by more "
				    "than the margin: no more heartbeats for it", b->seed);
			b->overdue = true;
			continue;
		}
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
	b->overdue = false;
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



/* One worker process's state across its phases. */
struct worker {
	const struct wrk_opts	*o;
	struct link		 link;
	struct beat		 beat;
	pthread_t		 beat_thread;
	bool			 beating;
	bool			 opened;	/* wrk_open succeeded */
	bool			 db_away;	/* worker_open waited in vain */
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
	uint32_t		 ran, refused;	/* seeds reported, and refused */
	bool			 finished;	/* told at HELLO that the run is
						   over: worker_finished */
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
trust_without_secret(const struct wrk_opts *o)
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
	uint32_t			 challenged_on = k->link.pipe;
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
		/*
		 * The connection that carried the challenge closed (the
		 * coordinator's pre-auth pool, coordinator/peer.h) with AUTH
		 * outstanding, and nng's req0 sent it again on the next one,
		 * where no challenge was made: the coordinator's NACK there
		 * is for that connection, not a verdict on our proof (which
		 * matches the coordinator's, checked above).  Start over.
		 */
		if (k->link.pipe != 0 && k->link.pipe != challenged_on) {
			log_debug("%s (on another connection than the challenge's: "
			    "starting over)", err);
			rc = -2;
		} else if (link_lost(&k->link)) {
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
 * must do to prove itself.  0 with the WELCOME in *rep; 1 with the DONE
 * of a run that finished before this worker came (the coordinator told
 * it instead of a WELCOME); else -1 (logged), or -2 when the connection
 * went away before the end (link_lost).
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
	/* After a lost connection: the worker it was, in the run it was in. */
	req.u.hello.rejoin_id = (uint32_t)k->w.id;
	req.u.hello.rejoin_run = k->w.run_id;
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
	if (rep->type != MSG_WELCOME && rep->type != MSG_DONE)
		log_warnx("coordinator at %s refused this worker: %s", url,
		    rep->type == MSG_NACK ? log_escape(text, sizeof(text),
		    rep->u.ack.text) : msg_type_name(rep->type));
	else if (k->trusted_by == NULL && k->o->auth.secret.len > 0)
		log_warnx("the coordinator at %s sent its %s without proving it "
		    "knows the shared secret (it has none, or it is not our "
		    "coordinator): refusing it, nothing run", url,
		    rep->type == MSG_DONE ? "end of run" : "config");
	else {
		if (k->trusted_by == NULL)
			k->trusted_by = trust_without_secret(k->o);
		/* DONE instead of WELCOME: the run finished before we came. */
		rc = rep->type == MSG_DONE ? 1 : 0;
	}
out:
	explicit_bzero(nw, sizeof(nw));
	if (rc < 0)
		msg_clear(rep);
	return rc;
}

/*
 * Dials and runs the handshake until give_up: 0 with the WELCOME of a
 * coordinator that proved itself in *rep; 1 with its DONE when the run
 * is over (a trusted coordinator's word: worker_finished); -1 (logged)
 * otherwise.  A connection closed before the handshake ends (the
 * coordinator at its limit of unauthenticated connections, or
 * restarting) is tried again, from HELLO.
 */
static int
worker_connect(struct worker *k, int64_t give_up, struct msg *rep)
{
	char	err[ERR_LEN];
	int	hs, pause_ms = 20;

	if (link_open(&k->link, k->o->url, &k->o->auth, &k->auth, give_up, err) == -1) {
		log_warnx("%s", err);
		return -1;
	}
	for (;;) {
		link_forget_losses(&k->link);
		if ((hs = worker_handshake(k, rep)) != -2 || now_ms() >= give_up || draining)
			break;
		poll(NULL, 0, pause_ms);
		pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
	}
	if (hs == -2)
		log_warnx("the coordinator at %s kept closing the connection before this "
		    "worker could authenticate (at its limit of connections not "
		    "authenticated yet, or refusing this address)", k->o->url);
	if (hs < 0)
		return -1;
	/* The gate: nothing — a config that names commands, paths this worker
	 * creates and deletes, a database it connects to, a lease — is taken
	 * from a coordinator that has not proved itself. */
	if (k->trusted_by == NULL) {
		log_warnx("refusing the coordinator at %s: it has not proved itself",
		    k->o->url);
		msg_clear(rep);
		return -1;
	}
	log_debug("the coordinator at %s is trusted by %s", k->o->url, k->trusted_by);
	return hs;
}

/*
 * The coordinator answered HELLO with DONE: every seed of its run has its
 * verdict.  One line says so, and the worker exits 0, since arriving late
 * (a slow node, a pod scheduled after the others finished) is no failure.
 */
static void
worker_finished(struct worker *k, struct msg *rep)
{
	char	text[LOG_ESC_LEN];

	if (!k->o->quiet && !k->o->slot)
		log_info("the run at %s is over (%s): nothing to do, exiting 0",
		    k->o->url, log_escape(text, sizeof(text), rep->u.ack.text));
	msg_clear(rep);
	k->finished = true;
}

/* Forgets the connection and its session: the next one starts from HELLO. */
static void
worker_disconnect(struct worker *k)
{
	link_close(&k->link, false);
	pthread_mutex_lock(&k->auth.mu);
	k->auth.sealed = false;
	k->auth.seq = 0;
	auth_session_clear(&k->auth.sess);
	pthread_mutex_unlock(&k->auth.mu);
	k->trusted_by = NULL;
}

static int	worker_beat_start(struct worker *);
static void	worker_beat_stop(struct worker *);

/*
 * The coordinator is gone (it restarted, or the network between us broke):
 * dial it again, with backoff, for up to --reconnect, and rejoin as the
 * worker this was (HELLO rejoin_id, rejoin_run).  0: back, the same run,
 * the same worker id; -1: gave up, or the coordinator runs another run now,
 * or (k->finished) this run finished while the worker was away.
 */
static int
worker_rejoin(struct worker *k, const char *why)
{
	struct msg	rep = { 0 };
	int64_t		give_up = now_ms() + k->o->reconnect_ms;
	int		rc = -1, hs;

	log_warnx("lost the coordinator (%s); dialing %s again for up to %lld s",
	    why, k->o->url, (long long)k->o->reconnect_ms / 1000);
	worker_beat_stop(k);
	worker_disconnect(k);
	for (;;) {
		if ((hs = worker_connect(k, give_up, &rep)) == 0)
			break;
		worker_disconnect(k);
		if (hs == 1) {
			/* Finished while we were away: every seed has its
			 * verdict, this worker's lease included. */
			worker_finished(k, &rep);
			return -1;
		}
		if (now_ms() >= give_up || draining) {
			log_warnx("gave up on the coordinator at %s", k->o->url);
			return -1;
		}
		poll(drain_fds[0] != -1 ? &(struct pollfd){ .fd = drain_fds[0],
		    .events = POLLIN } : NULL, drain_fds[0] != -1, 1000);
	}
	if (strcmp(rep.u.welcome.run_id, k->w.run_id) != 0)
		log_warnx("the coordinator at %s runs another run now (%s, not %s): "
		    "this worker's run is over", k->o->url, rep.u.welcome.run_id,
		    k->w.run_id);
	else if (rep.u.welcome.worker_id != (uint32_t)k->w.id)
		log_warnx("the coordinator does not know this worker any more (it "
		    "made it worker %u): starting over is a new worker's job",
		    rep.u.welcome.worker_id);
	else if (strcmp(rep.u.welcome.cfg_text, k->cfg.text) != 0)
		log_warnx("the coordinator's config changed: this worker stops");
	else if (worker_beat_start(k) == 0) {
		log_info("rejoined the coordinator at %s as worker %d", k->o->url, k->w.id);
		rc = 0;
	}
	msg_clear(&rep);
	return rc;
}

/*
 * Hello: dial, introduce ourselves, have the coordinator prove itself, and
 * take the run from the WELCOME — the config, the paths, the database.
 * Returns 0; 2 when the run finished before this worker came; 1 on failure.
 */
static int
worker_hello(struct worker *k)
{
	struct msg	 rep = { 0 };
	char		 err[ERR_LEN], role[32], text[LOG_ESC_LEN * 2];
	int		 rc = 1;

	log_debug("connecting to %s", k->o->url);
	switch (worker_connect(k, now_ms() + k->o->reconnect_ms, &rep)) {
	case -1:
		return 1;
	case 1:
		worker_finished(k, &rep);
		return 2;
	}
	k->w.id = (int)rep.u.welcome.worker_id;
	if (!k->o->quiet)
		log_info("connected to %s as worker %d (run %s), trusted by %s",
		    k->o->url, k->w.id, log_escape(text, sizeof(text),
		    rep.u.welcome.run_id), k->trusted_by);
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
	k->w.secret = &k->o->auth.secret;
	k->w.run_id = xstrdup(rep.u.welcome.run_id);
	worker_paths(k, &rep);
	k->beat.interval_ms = rep.u.welcome.heartbeat_ms ?
	    (int)rep.u.welcome.heartbeat_ms : 1000;
	k->beat.worker_id = (uint32_t)k->w.id;
	k->beat.w = &k->w;
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
	/* A beat in flight to a coordinator that is gone waits no longer. */
	for (;;) {
		struct timespec	ts;

		if (b->link.aio)
			nng_aio_cancel(b->link.aio);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(k->beat_thread, NULL, &ts) == 0)
			break;
	}
	if (b->link.aio)
		nng_aio_free(b->link.aio);
	nng_ctx_close(b->link.ctx);
	free(b->link.url);
	memset(&b->link, 0, sizeof(b->link));
	b->stop = false;
	b->lease_id = 0;
	k->beating = false;
}

/*
 * wrk_open, waiting for a database that is away for a moment (restarting,
 * its socket not there yet, starting up) within ISO_RECONNECT_MS, as a
 * reset does (iso_reset): a worker started beside a restart would
 * otherwise fail every seed it is given at once, infra, and run through
 * the run's seeds in a second.  Once such a wait has failed, later opens
 * try once each until one gets through.
 */
static int
worker_open(struct worker *k, char *err)
{
	int64_t	until = now_ms() + ISO_RECONNECT_MS, delay = 50;
	bool	said = false;

	for (;;) {
		if (wrk_open(&k->w, err) == 0) {
			if (said)
				log_warnx("the database answers");
			k->db_away = false;
			return 0;
		}
		if (k->w.open_failed != REASON_DB || !iso_err_passing(err))
			return -1;
		if (k->db_away || now_ms() + delay >= until)
			break;
		if (!said)
			log_warnx("%s; waiting for it, for up to %d s", err,
			    ISO_RECONNECT_MS / 1000);
		said = true;
		wrk_close(&k->w, false);
		poll(NULL, 0, (int)delay);	/* backoff: nothing to wait on */
		delay = delay * 2 > 1000 ? 1000 : delay * 2;
	}
	k->db_away = true;
	return -1;
}

/* Runs one seed; a worker that cannot open its environment says infra. */
static void
worker_run_seed(struct worker *k, const struct msg_seed *s, struct seed_result *res)
{
	char	err[ERR_LEN];

	if (!k->opened) {
		if (worker_open(k, err) == 0)
			k->opened = true;
		else {
			log_warnx("cannot run seeds: %s", err);
			memset(res, 0, sizeof(*res));
			res->verdict = VERDICT_INFRA;
			res->reason = k->w.open_failed;
			snprintf(res->message, sizeof(res->message), "%s", err);
			res->detail = json_pack("{s:s}", "message", err);
			if (k->w.open_cfgerr.kind != CFGERR_NONE)
				json_object_set_new(res->detail, "config_error",
				    cfgerr_json(&k->w.open_cfgerr));
			wrk_close(&k->w, false);
		}
	}
	if (k->opened)
		wrk_run_seed(&k->w, s->seed, s->attempt, res);
	/*
	 * An engine that stops a worker (scancel, a pod deleted, a unit with
	 * KillMode=control-group) signals every process, its turns too: a
	 * turn that died of a signal while this worker drains died of the
	 * stop, not of the system under test.  That is the environment's
	 * doing, infra, and the seed runs again elsewhere; a real crash
	 * crashes there too.  (A stop that reaches the turns before the
	 * worker can still read as a crash, if the round ends in between.)
	 */
	if (draining && res->verdict == VERDICT_FAIL && res->reason == REASON_CRASH) {
		char	was[sizeof(res->message)];

		snprintf(was, sizeof(was), "%s", res->message);
		res->verdict = VERDICT_INFRA;
		res->reason = REASON_WORKER_LOST;
		snprintf(res->message, sizeof(res->message), "the worker was being "
		    "stopped (SIGTERM) when %.400s: its engine's stop, retried "
		    "elsewhere", was);
		if (json_is_object(res->detail))
			json_object_set_new(res->detail, "message",
			    json_string(res->message));
		log_info("seed %" PRIu64 ": %s", s->seed, res->message);
	}
	log_debug("seed %" PRIu64 ": %s%s%s (%lld ms)", s->seed,
	    msg_verdict_name(res->verdict), res->reason != REASON_NONE ? " " : "",
	    reason_name(res->reason), (long long)res->duration_ms);
}

/*
 * A regression's lease (common/regress.h): the plan NAME of this worker's
 * copy of the config's regressions folder, whose bytes must hash to the
 * lease's, followed as `soak replay --plan` follows one.  A plan that
 * diverged (the code changed under it) is judged here by exploring its
 * turns within its preemptions (worker/regexplore.h): a pass, a fail with
 * the failing schedule, or infra/diverged when that is incomplete.  A copy
 * that is not the lease's tests nothing: infra/plan, saying which, and the
 * coordinator retries it elsewhere.
 */
static void
worker_run_regression(struct worker *k, const struct msg *lease,
    const struct msg_seed *s, struct seed_result *res)
{
	struct plan	 p;
	char		 err[ERR_LEN], *keep;

	if (regress_open(&k->cfg, lease->u.lease.plan, lease->u.lease.plan_hash,
	    &p, err) == -1) {
		log_warnx("%s", err);
		memset(res, 0, sizeof(*res));
		res->verdict = VERDICT_INFRA;
		res->reason = REASON_PLAN;
		snprintf(res->message, sizeof(res->message), "%s", err);
		res->detail = json_pack("{s:s}", "message", err);
		return;
	}
	keep = xasprintf("regression-%s", lease->u.lease.plan);
	k->w.plan = &p;
	k->w.then_seed = false;
	k->w.keep_name = keep;
	k->w.whole_trace = true;	/* a divergence is read from it */
	worker_run_seed(k, s, res);
	k->w.whole_trace = false;
	if (k->opened && res->verdict == VERDICT_INFRA && res->reason == REASON_DIVERGED &&
	    !draining)
		wrk_regress_explore(&k->w, &p, lease->u.lease.plan, &draining, res);
	k->w.plan = NULL;
	k->w.keep_name = NULL;
	free(keep);
	plan_free(&p);
}

/*
 * Whether the worker's environment is open for a lease of its own kind
 * (minimize, explore); if it cannot be, the lease's seed runs as a seed,
 * which opens again and says why in *res: infra.
 */
static bool
worker_opened(struct worker *k, const struct msg_seed *s, struct seed_result *res)
{
	char	err[ERR_LEN];

	if (!k->opened && wrk_open(&k->w, err) == 0)
		k->opened = true;
	if (!k->opened)
		worker_run_seed(k, s, res);
	return k->opened;
}

/*
 * A minimize lease (tickets.minimize): the seed's failure minimized here
 * within the lease's budget (worker/min_lease.c); a SIGTERM stops it with
 * the smallest failing plan so far.  A worker that cannot open its
 * environment says infra, as for a seed.
 */
static void
worker_run_minimize(struct worker *k, const struct msg *lease,
    const struct msg_seed *s, struct seed_result *res)
{
	if (!worker_opened(k, s, res))
		return;
	log_debug("seed %" PRIu64 ": minimizing, budget %u ms", s->seed,
	    lease->u.lease.minimize_ms);
	wrk_minimize(&k->w, s->seed, 3, lease->u.lease.minimize_ms, k->o->fingerprint,
	    &draining, res);
	log_debug("seed %" PRIu64 ": minimize: %s (%lld ms)", s->seed, res->message,
	    (long long)res->duration_ms);
}

/*
 * An explore lease (soak explore --listen): one execution of the explored
 * seed, in this worker's schema, workspace and services, sent back as its
 * record (worker/xexec.h).  A worker that cannot open its environment says
 * infra, as for a seed.
 */
static void
worker_run_explore(struct worker *k, const struct msg *lease,
    const struct msg_seed *s, struct seed_result *res)
{
	if (!worker_opened(k, s, res))
		return;
	log_debug("seed %" PRIu64 ": execution %u of its exploration", s->seed,
	    s->attempt);
	wrk_explore(&k->w, s->seed, lease->u.lease.explore, res);
}

/*
 * Report: one RESULT, acknowledged before the next seed starts.  Returns
 * 0 accepted, with *keep the seeds of the lease still this worker's (the
 * coordinator may have given the unstarted tail to an idle worker), 1
 * refused (the lease is gone: stop running it), -1 when the coordinator
 * cannot be reached.
 */
static int
worker_report(struct worker *k, const struct msg *lease, const struct msg_seed *s,
    const struct seed_result *res, uint32_t *keep)
{
	uint64_t	 lease_id = lease->u.lease.lease_id;
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
	r.u.result.plan = lease->u.lease.plan;		/* a regression's: its own */
	r.u.result.plan_hash = lease->u.lease.plan_hash;
	/* Lost with the connection, the result is sent again once the worker
	 * rejoined: the coordinator counts it once (msg.h). */
	while (link_call(&k->link, &r, &ack, 60000, "result", err) == -1) {
		if (worker_rejoin(k, err) == -1) {
			free(detail);
			return -1;
		}
	}
	free(detail);
	if (ack.type == MSG_ACK && !ack.u.ack.ok) {
		log_warnx("seed %" PRIu64 ": result refused: %s", s->seed,
		    log_escape(text, sizeof(text), ack.u.ack.text));
		rc = 1;
	} else if (ack.type == MSG_ACK && ack.u.ack.keep < *keep) {
		log_debug("lease %" PRIu64 ": %u unstarted seed(s) went to another "
		    "worker", lease_id, *keep - ack.u.ack.keep);
		*keep = ack.u.ack.keep;
	}
	msg_clear(&ack);
	return rc;
}

/* Runs a lease's seeds in order; -1 when the coordinator is gone. */
static int
worker_run_lease(struct worker *k, const struct msg *lease)
{
	uint32_t	i, keep = lease->u.lease.nseeds;
	int		rc;

	if (keep > 0)
		log_debug("lease %" PRIu64 ": %u seed(s) from %" PRIu64,
		    lease->u.lease.lease_id, keep, lease->u.lease.seeds[0].seed);
	for (i = 0; i < keep; i++) {
		const struct msg_seed	*s = &lease->u.lease.seeds[i];
		struct seed_result	 res;

		if (beat_lost(&k->beat) || draining)
			break;
		beat_set(&k->beat, lease->u.lease.lease_id, s->seed);
		if (lease->u.lease.explore != NULL && *lease->u.lease.explore != '\0')
			worker_run_explore(k, lease, s, &res);
		else if (lease->u.lease.minimize_ms != 0)
			worker_run_minimize(k, lease, s, &res);
		else if (lease->u.lease.plan != NULL && *lease->u.lease.plan != '\0')
			worker_run_regression(k, lease, s, &res);
		else
			worker_run_seed(k, s, &res);
		rc = worker_report(k, lease, s, &res, &keep);
		seed_result_clear(&res);
		if (rc == -1)
			return -1;
		k->ran++;
		if (rc == 1) {
			k->refused++;
			break;
		}
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
		if (draining)
			return 0;
		memset(&req, 0, sizeof(req));
		req.type = MSG_LEASE_REQ;
		req.u.lease_req.worker_id = (uint32_t)k->w.id;
		if (link_call(&k->link, &req, &rep, -1, "lease request", err) == -1) {
			if (draining)
				return 0;
			if (worker_rejoin(k, err) == -1)
				return -1;
			continue;
		}
		if (rep.type == MSG_DONE) {
			/* Done with the run, or with this worker (quarantined,
			 * the run stopped).  A local coordinator (soak run's,
			 * over ipc://) says why itself, once. */
			if (strcmp(rep.u.ack.text, "run finished") != 0 &&
			    !auth_url_is_ipc(k->o->url))
				log_warnx("the coordinator is done with this worker: %s",
				    log_escape(text, sizeof(text), rep.u.ack.text));
			else if (strcmp(rep.u.ack.text, "run finished") != 0)
				log_debug("the coordinator is done with this worker: %s",
				    log_escape(text, sizeof(text), rep.u.ack.text));
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

	if (draining)
		log_info("draining (SIGTERM): handing the unstarted seeds back");
	req.u.bye.worker_id = (uint32_t)k->w.id;
	req.u.bye.drain = draining != 0;
	if (link_call(&k->link, &req, &rep, 5000, "bye", err) == 0)
		msg_clear(&rep);
}

static void
worker_teardown(struct worker *k)
{
	log_debug("teardown: heartbeat");
	worker_beat_stop(k);
	log_debug("teardown: schema and services");
	if (k->w.cfg)
		wrk_close(&k->w, true);
	/* Only a workspace this worker made or checked as its own: a path
	 * that private_dir refused (a symlink, another user's) stays. */
	if (k->w.workspace && k->w.workspace_ok)
		rm_rf(k->w.workspace);
	log_debug("teardown: database");
	iso_db_close(&k->db);
	log_debug("teardown: connection");
	link_close(&k->link, true);
	log_debug("teardown: done");
	free(k->w.run_id);
	free(k->w.workspace);
	free(k->w.keep_dir);
	free(k->w.conninfo);
	free(k->w.unusable);
	cfg_free(&k->cfg);
	auth_session_clear(&k->auth.sess);
}

int
wrk_serve(const struct wrk_opts *o)
{
	struct worker		k = { .o = o, .beat = { .mu = PTHREAD_MUTEX_INITIALIZER },
				    .auth = { .mu = PTHREAD_MUTEX_INITIALIZER } };
	pthread_condattr_t	ca;
	int			rc;

	k.link.efd = k.link.lostfd = -1;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k.beat.cv, &ca);
	pthread_condattr_destroy(&ca);
	drain_setup();
	if ((rc = worker_hello(&k)) == 0) {
		rc = 1;
		if (worker_beat_start(&k) == 0 && worker_leases(&k) == 0) {
			worker_bye(&k);
			rc = 0;
			if (!o->quiet)
				log_info("done: %u seeds, %u refused%s", k.ran,
				    k.refused, draining ? " (drained)" : "");
		} else if (k.finished)
			rc = 0;		/* the run ended while we were away */
	} else if (rc == 2)		/* the run ended before we came */
		rc = o->slot ? WRK_SLOT_LATE : 0;
	worker_teardown(&k);
	pthread_cond_destroy(&k.beat.cv);
	return rc;
}
