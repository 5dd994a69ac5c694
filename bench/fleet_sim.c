/*
 * Simulated workers, to measure what one `soak coordinator` can carry:
 * bench/fleet.sh runs it; see bench/README.md "Fleet".
 *
 *	fleet_sim [--secret-file F] [--insecure] [--coord-pid PID] [--hold-ms MS]
 *	    [--sources N] URL WORKERS
 *	fleet_sim --null URL SEEDS
 *	fleet_sim --rusage FILE COMMAND [ARGS...]
 *
 * URL WORKERS: WORKERS threads, each a worker of its own — its own req0
 * socket and connection, HELLO .. WELCOME as worker/worker.c does it
 * (CHALLENGE, proof checked, AUTH, sealed session when there is a secret)
 * — that wait for each other once joined, then all at once lease and
 * answer every leased seed at once with a RESULT "pass" (an empty
 * detail), until the coordinator says DONE; then BYE.  No heartbeats: a
 * result is a lease's sign of life, and results come back in
 * microseconds.  A connection closed before it authenticates (the
 * coordinator's 64 unauthenticated connections, coordinator/peer.h) is
 * joined again, as a worker does, for up to 60 s.  Anything else out of
 * order (a NACK, a bad MAC, a refused result) is counted and printed; a
 * refused result ends that lease, as in a worker; --hold-ms MS waits MS
 * before each RESULT, as if each seed ran that long (still no
 * heartbeats: keep MS under the lease TTL, 5 s); --sources N spreads the
 * workers over N source addresses, worker i dialing from 127.0.0.(1 + i %
 * N) (nng's "tcp://SRC;HOST:PORT"), as a Kubernetes Job's pods come from
 * a few nodes; a worker that cannot join or loses its coordinator exits 1.
 *
 * It prints one line for people and "# key=value" lines for the script:
 * join_ms (all joined), results, refused, leases, run_ms (release to the
 * last ACK), results_per_s, per-worker results (min, max), the RESULT ->
 * ACK round trip (median, p99, µs; one in 16 sampled, --hold-ms not
 * included), join_retries, and
 * with --coord-pid PID the coordinator's VmHWM and VmRSS (kB, from
 * /proc/PID/status) once the last result is acknowledged.
 *
 * --null URL SEEDS: the baseline, a coordinator that keeps no books.  A
 * rep0 listener with 512 contexts that answers HELLO with a WELCOME (no
 * secret), LEASE_REQ with a LEASE of up to 32 seeds from a counter, then
 * DONE; RESULT, BYE and HEARTBEAT with ACK ok=1 — what nng and the codec
 * cost on this machine for the same conversation.  Prints "listening on
 * URL"; runs until SIGTERM.
 *
 * --rusage FILE COMMAND: runs COMMAND (the coordinator), passes SIGTERM,
 * SIGINT and SIGHUP on, writes "# pid=N" to FILE at once and, when it
 * exits, "# cpu_us=N" (user + system) and "# maxrss_kb=N" (its peak
 * resident size, as VmHWM, from wait4).  Exits with its status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/auth.h"
#include "common/msg.h"
#include "common/util.h"

#define JOIN_PATIENCE_MS	60000
#define SAMPLE_EVERY		16
#define MAX_SAMPLES		(1 << 16)

/* One simulated worker's connection: its socket and, after a challenge, its session. */
struct conn {
	nng_socket		 s;
	struct auth_session	 sess;
	bool			 sealed;
	uint64_t		 seq;
	uint32_t		 wid;
	uint32_t		 pipe;		/* the last reply's connection */
};

struct simw {
	int			 idx;
	char			*url;		/* g_url, from its source address */
	pthread_t		 t;
	struct conn		 c;
	uint64_t		 results, refused, leases, join_retries;
	int64_t			 last_ack_us;
	int64_t			*rtt;		/* sampled RESULT -> ACK, µs */
	size_t			 nrtt;
	int			 rc;
	char			 err[ERR_LEN];
};

static const char		*g_url;
static struct auth_opts		 g_auth;
static pthread_barrier_t	 g_joined, g_go;
static int64_t			 g_release_us;
static int			 g_hold_ms;	/* a seed's run time before its RESULT */
static int			 g_sources;	/* --sources: 127.0.0.1..N; 0: any */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One request, one reply on c (fleet_handshake.c's roundtrip): sealed and
 * opened with the session once there is one.  *nng_rv gets nng's error.
 */
static int
call(struct conn *c, const struct msg *req, struct msg *rep, bool seal, bool open,
    int *nng_rv, char *err)
{
	uint8_t		*buf = NULL, *rbuf;
	nng_msg		*nm;
	size_t		 len, rlen, mlen;
	uint64_t	 seq = seal || open ? ++c->seq : 0, rseq = 0;	/* AUTH: 0 */
	char		 tmp[ERR_LEN];
	int		 rv;

	*nng_rv = 0;
	if (msg_encode(req, &buf, &len, err) == -1)
		return -1;
	if (seal)
		auth_seal(&c->sess, AUTH_TO_COORDINATOR, seq, &buf, &len);
	rv = nng_send(c->s, buf, len, 0);
	free(buf);
	c->pipe = 0;
	if (rv != 0 || (rv = nng_recvmsg(c->s, &nm, 0)) != 0) {
		*nng_rv = rv;
		return errf(err, "%s: %s", msg_type_name(req->type), nng_strerror(rv));
	}
	c->pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(nm));
	rbuf = nng_msg_body(nm);
	mlen = rlen = nng_msg_len(nm);
	if (open && (auth_open(&c->sess, AUTH_TO_WORKER, rbuf, rlen, &rseq, &mlen, tmp) == -1 ||
	    rseq != seq)) {
		nng_msg_free(nm);
		return errf(err, "the reply to %s fails its session MAC or seq",
		    msg_type_name(req->type));
	}
	rv = msg_decode(rbuf, mlen, rep, tmp);
	nng_msg_free(nm);
	if (rv == -1)
		return errf(err, "bad reply to %s: %s", msg_type_name(req->type), tmp);
	if (rep->type == MSG_NACK) {
		errf(err, "%s refused: %s", msg_type_name(req->type), rep->u.ack.text);
		msg_clear(rep);
		return -1;
	}
	return 0;
}

static int
scall(struct conn *c, const struct msg *req, struct msg *rep, int *nng_rv, char *err)
{
	return call(c, req, rep, c->sealed, c->sealed, nng_rv, err);
}

/*
 * HELLO .. WELCOME once.  -2: the connection went before the handshake
 * ended (try again), -1: refused or out of order.
 */
static int
join_once(struct simw *w, char *err)
{
	struct conn	*c = &w->c;
	struct msg	 req = { .type = MSG_HELLO }, rep;
	uint8_t		 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	char		 name[64];
	uint32_t	 challenged_on;
	int		 rv, nrv = 0;

	memset(c, 0, sizeof(*c));
	if ((rv = nng_req0_open(&c->s)) != 0)
		return errf(err, "nng_req0_open: %s", nng_strerror(rv));
	nng_socket_set_ms(c->s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(c->s, NNG_OPT_RECVMAXSZ, MSG_MAX + AUTH_TRAILER_LEN);
	/* A lease request waits while the coordinator has no work. */
	nng_socket_set_ms(c->s, NNG_OPT_RECVTIMEO, 120000);
	nng_socket_set_ms(c->s, NNG_OPT_SENDTIMEO, 10000);
	nng_socket_set_ms(c->s, NNG_OPT_RECONNMINT, 20);
	nng_socket_set_ms(c->s, NNG_OPT_RECONNMAXT, 1000);
	if ((rv = nng_dial(c->s, w->url, NULL, 0)) != 0) {
		nng_close(c->s);
		return errf(err, "cannot dial %s: %s", w->url, nng_strerror(rv));
	}
	snprintf(name, sizeof(name), "sim:%d", w->idx);
	req.u.hello.name = name;
	req.u.hello.host = UNCONST("sim");
	req.u.hello.pid = (uint32_t)w->idx;
	req.u.hello.slots = 1;
	if (auth_nonce(nw, err) == -1)
		goto fail;
	memcpy(req.u.hello.nonce, nw, AUTH_NONCE_LEN);
	if (call(c, &req, &rep, false, false, &nrv, err) == -1)
		goto fail;
	if (rep.type == MSG_CHALLENGE) {
		memcpy(nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
		if (g_auth.secret.len == 0 || !auth_proof_ok(&g_auth.secret, AUTH_COORDINATOR,
		    nw, nc, rep.u.challenge.proof)) {
			msg_clear(&rep);
			errf(err, "the coordinator's proof is wrong, or there is no secret");
			nrv = 0;
			goto fail;
		}
		msg_clear(&rep);
		auth_session_init(&c->sess, &g_auth.secret, nw, nc);
		memset(&req, 0, sizeof(req));
		req.type = MSG_AUTH;
		auth_proof(&g_auth.secret, AUTH_WORKER, nw, nc, req.u.auth.proof);
		/* AUTH goes in the clear; the WELCOME answering it is sealed, seq 0. */
		c->seq = (uint64_t)-1;
		challenged_on = c->pipe;
		if (call(c, &req, &rep, false, true, &nrv, err) == -1) {
			/*
			 * The challenge's connection closed with AUTH
			 * outstanding and req0 sent it again on the next,
			 * which was never challenged (worker_prove does the
			 * same): start over.
			 */
			if (c->pipe != 0 && c->pipe != challenged_on)
				nrv = NNG_ECONNSHUT;
			goto fail;
		}
		c->sealed = true;
	}
	if (rep.type != MSG_WELCOME) {
		errf(err, "%s where WELCOME was due", msg_type_name(rep.type));
		msg_clear(&rep);
		nrv = 0;
		goto fail;
	}
	c->wid = rep.u.welcome.worker_id;
	msg_clear(&rep);
	return 0;
fail:
	nng_close(c->s);
	auth_session_clear(&c->sess);
	return nrv == NNG_ECONNRESET || nrv == NNG_ECONNSHUT || nrv == NNG_ECLOSED ||
	    nrv == NNG_ETIMEDOUT ? -2 : -1;
}

static int
join(struct simw *w)
{
	int64_t	give_up = now_ms() + JOIN_PATIENCE_MS;
	int	rc, pause_ms = 20;

	while ((rc = join_once(w, w->err)) == -2 && now_ms() < give_up) {
		w->join_retries++;
		poll(NULL, 0, pause_ms);
		pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
	}
	return rc == 0 ? 0 : -1;
}

/* Lease, answer every seed at once, until DONE. */
static int
lease_loop(struct simw *w)
{
	struct msg	req, rep, res, ack;
	uint32_t	i;
	int64_t		t0;
	int		nrv;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.type = MSG_LEASE_REQ;
		req.u.lease_req.worker_id = w->c.wid;
		if (scall(&w->c, &req, &rep, &nrv, w->err) == -1)
			return -1;
		if (rep.type == MSG_DONE) {
			msg_clear(&rep);
			return 0;
		}
		if (rep.type != MSG_LEASE) {
			errf(w->err, "%s in reply to a lease request", msg_type_name(rep.type));
			msg_clear(&rep);
			return -1;
		}
		w->leases++;
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			memset(&res, 0, sizeof(res));
			res.type = MSG_RESULT;
			res.u.result.worker_id = w->c.wid;
			res.u.result.lease_id = rep.u.lease.lease_id;
			res.u.result.seed = rep.u.lease.seeds[i].seed;
			res.u.result.attempt = rep.u.lease.seeds[i].attempt;
			res.u.result.verdict = VERDICT_PASS;
			res.u.result.reason = UNCONST("");
			/* What a real worker sends for a pass of one turn. */
			res.u.result.detail = UNCONST("{\"message\":\"1 of 1 turns ok\","
			    "\"round\":null,\"ok_turns\":1,\"total_turns\":1}");
			if (g_hold_ms > 0)
				poll(NULL, 0, g_hold_ms);
			t0 = now_us();
			if (scall(&w->c, &res, &ack, &nrv, w->err) == -1) {
				msg_clear(&rep);
				return -1;
			}
			w->last_ack_us = now_us();
			if (w->results % SAMPLE_EVERY == 0 && w->nrtt < MAX_SAMPLES)
				w->rtt[w->nrtt++] = w->last_ack_us - t0;
			if (ack.type == MSG_ACK && ack.u.ack.ok) {
				w->results++;
				msg_clear(&ack);
				continue;
			}
			w->refused++;
			msg_clear(&ack);
			break;		/* the lease is gone: ask again */
		}
		msg_clear(&rep);
	}
}

static void *
sim_main(void *arg)
{
	struct simw	*w = arg;
	struct msg	 req = { .type = MSG_BYE }, rep;
	int		 joined, nrv;

	joined = join(w) == 0;
	if (!joined)
		w->rc = 1;
	pthread_barrier_wait(&g_joined);
	pthread_barrier_wait(&g_go);
	if (!joined)
		return NULL;
	if (lease_loop(w) == -1) {
		w->rc = 1;
		nng_close(w->c.s);
		return NULL;
	}
	req.u.bye.worker_id = w->c.wid;
	if (scall(&w->c, &req, &rep, &nrv, w->err) == 0)
		msg_clear(&rep);
	nng_close(w->c.s);
	auth_session_clear(&w->c.sess);
	return NULL;
}

/* "VmHWM:" and "VmRSS:" of pid, kB; -1 when gone. */
static void
vm_of(int pid, long *hwm, long *rss)
{
	char	 path[64], line[256];
	FILE	*f;

	*hwm = *rss = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = strtol(line + 6, NULL, 10);
	}
	fclose(f);
}

static int
sim(int nworkers, int coord_pid)
{
	struct simw	*w = xcalloc(nworkers, sizeof(*w));
	int64_t		 t0 = now_us(), joined_us, last = 0, *all;
	uint64_t	 results = 0, refused = 0, leases = 0, retries = 0, rmin = UINT64_MAX, rmax = 0;
	size_t		 nall = 0;
	long		 hwm = -1, rss = -1;
	int		 i, failed = 0;

	pthread_barrier_init(&g_joined, NULL, (unsigned)nworkers + 1);
	pthread_barrier_init(&g_go, NULL, (unsigned)nworkers + 1);
	for (i = 0; i < nworkers; i++) {
		w[i].idx = i;
		if (g_sources > 0 && strncmp(g_url, "tcp://", 6) == 0)
			w[i].url = xasprintf("tcp://127.0.0.%d;%s", 1 + i % g_sources,
			    g_url + 6);
		else
			w[i].url = xstrdup(g_url);
		w[i].rtt = xcalloc(MAX_SAMPLES, sizeof(int64_t));
		if (pthread_create(&w[i].t, NULL, sim_main, &w[i]) != 0) {
			fprintf(stderr, "fleet_sim: cannot start thread %d\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&g_joined);
	joined_us = now_us();
	g_release_us = joined_us;
	pthread_barrier_wait(&g_go);
	for (i = 0; i < nworkers; i++)
		pthread_join(w[i].t, NULL);
	if (coord_pid > 0)
		vm_of(coord_pid, &hwm, &rss);
	all = xcalloc((size_t)nworkers * MAX_SAMPLES, sizeof(int64_t));
	for (i = 0; i < nworkers; i++) {
		if (w[i].rc) {
			if (failed++ < 5)
				fprintf(stderr, "fleet_sim: worker %d: %s\n", i, w[i].err);
			continue;
		}
		results += w[i].results;
		refused += w[i].refused;
		leases += w[i].leases;
		retries += w[i].join_retries;
		rmin = w[i].results < rmin ? w[i].results : rmin;
		rmax = w[i].results > rmax ? w[i].results : rmax;
		if (w[i].last_ack_us > last)
			last = w[i].last_ack_us;
		memcpy(all + nall, w[i].rtt, w[i].nrtt * sizeof(int64_t));
		nall += w[i].nrtt;
	}
	for (i = 0; i < nworkers; i++)
		retries += w[i].rc ? w[i].join_retries : 0;
	qsort(all, nall, sizeof(*all), cmp_i64);
	{
		double	run_ms = (double)(last - g_release_us) / 1000.0;
		double	rate = run_ms > 0 ? (double)results * 1000.0 / run_ms : 0;
		int64_t	p50 = nall ? all[nall / 2] : 0, p99 = nall ? all[nall * 99 / 100] : 0;

		printf("%d workers joined in %.0f ms (%" PRIu64 " retries), %" PRIu64
		    " results in %.0f ms: %.0f results/s; %" PRIu64 " leases, %" PRIu64
		    " refused; per worker %" PRIu64 "..%" PRIu64 "; RESULT->ACK p50 %"
		    PRId64 " µs p99 %" PRId64 " µs%s\n", nworkers - failed,
		    (double)(joined_us - t0) / 1000.0, retries, results, run_ms, rate, leases,
		    refused, failed ? 0 : rmin, rmax, p50, p99, failed ? " (workers failed)" : "");
		printf("# join_ms=%.0f\n# join_retries=%" PRIu64 "\n# results=%" PRIu64
		    "\n# refused=%" PRIu64 "\n# leases=%" PRIu64 "\n# run_ms=%.0f\n"
		    "# results_per_s=%.0f\n# per_worker_min=%" PRIu64 "\n# per_worker_max=%"
		    PRIu64 "\n# rtt_p50_us=%" PRId64 "\n# rtt_p99_us=%" PRId64 "\n# failed=%d\n",
		    (double)(joined_us - t0) / 1000.0, retries, results, refused, leases,
		    run_ms, rate, failed ? 0 : rmin, rmax, p50, p99, failed);
		if (coord_pid > 0)
			printf("# vmhwm_kb=%ld\n# vmrss_kb=%ld\n", hwm, rss);
	}
	for (i = 0; i < nworkers; i++) {
		free(w[i].rtt);
		free(w[i].url);
	}
	free(all);
	free(w);
	return failed ? 1 : 0;
}

/* --- the baseline: a coordinator that keeps no books --- */

#define NULL_CTX	512
#define NULL_CHUNK	32

struct nctx {
	nng_ctx		 ctx;
	nng_aio		*aio;
	bool		 sending;
};

static _Atomic uint64_t	null_next, null_lease;
static uint64_t		null_seeds;
static _Atomic uint32_t	null_wid;

static void
null_reply(const struct msg *req, struct msg *rep, struct msg_seed *seeds)
{
	uint64_t	first, n;
	uint32_t	i;

	memset(rep, 0, sizeof(*rep));
	rep->type = MSG_ACK;
	rep->u.ack.ok = 1;
	rep->u.ack.text = UNCONST("ok");
	switch (req->type) {
	case MSG_HELLO:
		rep->type = MSG_WELCOME;
		rep->u.welcome.worker_id = ++null_wid;
		rep->u.welcome.run_id = UNCONST("null");
		rep->u.welcome.cfg_path = UNCONST("");
		rep->u.welcome.cfg_text = UNCONST("");
		rep->u.welcome.db_conninfo = UNCONST("");
		rep->u.welcome.keep_dir = UNCONST("");
		rep->u.welcome.workspace = UNCONST("");
		rep->u.welcome.heartbeat_ms = 500;
		break;
	case MSG_LEASE_REQ:
		first = atomic_fetch_add(&null_next, NULL_CHUNK);
		if (first >= null_seeds) {
			rep->type = MSG_DONE;
			rep->u.ack.text = UNCONST("run finished");
			break;
		}
		n = null_seeds - first < NULL_CHUNK ? null_seeds - first : NULL_CHUNK;
		for (i = 0; i < n; i++)
			seeds[i] = (struct msg_seed){ first + i, 1 };
		rep->type = MSG_LEASE;
		rep->u.lease.lease_id = ++null_lease;
		rep->u.lease.ttl_ms = 5000;
		rep->u.lease.nseeds = (uint32_t)n;
		rep->u.lease.seeds = seeds;
		break;
	default:
		break;
	}
}

static void
null_cb(void *arg)
{
	struct nctx	*c = arg;
	struct msg	 req, rep;
	struct msg_seed	 seeds[NULL_CHUNK];
	char		 err[ERR_LEN];
	uint8_t		*buf;
	size_t		 len;
	nng_msg		*m;
	int		 rv = nng_aio_result(c->aio);

	if (c->sending) {
		c->sending = false;
		if (rv != 0)
			nng_msg_free(nng_aio_get_msg(c->aio));
		if (rv == NNG_ECLOSED)
			return;
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	if (rv == NNG_ECLOSED)
		return;
	if (rv != 0) {
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	m = nng_aio_get_msg(c->aio);
	if (msg_decode(nng_msg_body(m), nng_msg_len(m), &req, err) == -1) {
		nng_msg_free(m);
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	null_reply(&req, &rep, seeds);
	msg_clear(&req);
	if (msg_encode(&rep, &buf, &len, err) == -1) {
		fprintf(stderr, "fleet_sim --null: %s\n", err);
		exit(2);
	}
	nng_msg_clear(m);
	nng_msg_append(m, buf, len);
	free(buf);
	c->sending = true;
	nng_aio_set_msg(c->aio, m);
	nng_ctx_send(c->ctx, c->aio);
}

static int
null_mode(const char *url, uint64_t seeds)
{
	struct nctx	*c = xcalloc(NULL_CTX, sizeof(*c));
	nng_socket	 s;
	nng_listener	 l;
	sigset_t	 set;
	const char	*colon = strrchr(url, ':');
	int		 i, sig, port = 0;

	null_seeds = seeds;
	if (nng_rep0_open(&s) != 0 || nng_listen(s, url, &l, 0) != 0) {
		fprintf(stderr, "fleet_sim --null: cannot listen on %s\n", url);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);		/* nng's threads inherit it */
	for (i = 0; i < NULL_CTX; i++) {
		if (nng_ctx_open(&c[i].ctx, s) != 0 ||
		    nng_aio_alloc(&c[i].aio, null_cb, &c[i]) != 0)
			return 1;
		nng_ctx_recv(c[i].ctx, c[i].aio);
	}
	nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
	printf("listening on %.*s:%d\n", (int)(colon - url), url, port);
	fflush(stdout);
	sigwait(&set, &sig);
	/* No nng_close: the process ends, and the socket with it. */
	return 0;
}

/* --- a command's CPU time and peak resident size --- */

static volatile sig_atomic_t	ru_child;

static void
forward(int sig)
{
	if (ru_child > 0)
		kill((pid_t)ru_child, sig);
}

static int
rusage_mode(const char *file, char **argv)
{
	struct sigaction	 sa = { .sa_handler = forward };
	struct rusage		 ru;
	FILE			*f;
	pid_t			 pid;
	int			 st;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if ((f = fopen(file, "w")) == NULL)
		return 1;
	if ((pid = fork()) == -1)
		return 1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "fleet_sim --rusage: cannot run %s\n", argv[0]);
		_exit(127);
	}
	ru_child = pid;
	fprintf(f, "# pid=%d\n", (int)pid);
	fflush(f);
	while (wait4(pid, &st, 0, &ru) == -1)
		if (errno != EINTR)
			return 1;
	fprintf(f, "# cpu_us=%lld\n# maxrss_kb=%ld\n",
	    (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec, ru.ru_maxrss);
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
usage(void)
{
	fprintf(stderr, "usage: fleet_sim [--secret-file F] [--insecure] [--coord-pid PID] [--hold-ms MS] [--sources N]\n"
	    "                 URL WORKERS\n"
	    "       fleet_sim --null URL SEEDS\n"
	    "       fleet_sim --rusage FILE COMMAND [ARGS...]\n");
	exit(64);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "secret-file",	required_argument, NULL, 'F' },
		{ "insecure",		no_argument,	   NULL, 'I' },
		{ "coord-pid",		required_argument, NULL, 'P' },
		{ "hold-ms",		required_argument, NULL, 'H' },
		{ "sources",		required_argument, NULL, 'S' },
		{ "null",		no_argument,	   NULL, 'N' },
		{ "rusage",		required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 }
	};
	char	err[ERR_LEN];
	int	ch, n, rc, coord_pid = 0;
	bool	null = false;

	/* "+": options end at the first operand (--rusage's COMMAND). */
	while ((ch = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (ch) {
		case 'F': g_auth.secret_file = optarg; break;
		case 'I': g_auth.insecure = true; break;
		case 'P': coord_pid = atoi(optarg); break;
		case 'H': g_hold_ms = atoi(optarg); break;
		case 'S': g_sources = atoi(optarg); break;
		case 'N': null = true; break;
		case 'R':
			if (optind >= argc)
				usage();
			return rusage_mode(optarg, argv + optind);
		default: usage();
		}
	}
	if (argc - optind != 2)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (null)
		return null_mode(argv[optind], strtoull(argv[optind + 1], NULL, 10));
	if ((n = atoi(argv[optind + 1])) < 1)
		usage();
	g_url = argv[optind];
	if (auth_secret_load(g_auth.secret_file, &g_auth.secret, err) == -1) {
		fprintf(stderr, "fleet_sim: %s\n", err);
		return 64;
	}
	rc = sim(n, coord_pid);
	auth_secret_free(&g_auth.secret);
	return rc;
}
