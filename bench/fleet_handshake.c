/*
 * HELLO -> WELCOME handshakes against a real `soak coordinator`, N times,
 * each on a connection of its own: what a worker pays (and makes the
 * coordinator pay) to join a run over tcp://, with a shared secret, over
 * TLS, or with mutual TLS.  bench/fleet_auth.sh runs it; see
 * bench/README.md "Fleet authentication".
 *
 *	fleet_handshake [--pings] [--warmup W] [--secret-file F] [--tls-ca PEM]
 *	    [--tls-cert PEM] [--tls-server-name NAME] [--insecure] URL N
 *	fleet_handshake --mac N
 *	fleet_handshake --pg
 *	fleet_handshake --time FILE COMMAND [ARGS...]
 *
 * One handshake is what worker/worker.c does to join, in the same order
 * and with the same calls (common/auth.h, common/tlsconf.h), minus the
 * config load and the database: a fresh req0 socket, a dialer configured
 * by tlsconf_dialer() (the PEM files read as a worker reads them, once per
 * connection), the dial (TCP connect, TLS handshake, nng's SP header),
 * HELLO with a fresh nonce, and — when the coordinator challenges — the
 * coordinator's proof checked, AUTH sent, and the sealed WELCOME opened;
 * then a BYE (sealed when there is a session) answered by an ACK, and the
 * socket closed.  Anything out of order (a NACK, a bad proof, a bad MAC)
 * stops the run with exit 1: a benchmark of a refused handshake is none.
 *
 * Per handshake it times: config (socket + dialer + TLS config), connect
 * (nng_dialer_start: TCP + TLS + SP header), messages (HELLO .. WELCOME,
 * HMACs included), bye (BYE -> ACK and close).  It prints one line for
 * people and "# key=value" lines for the script: medians in µs, p90 of
 * dial-to-WELCOME, handshakes/s over the timed loop's wall time, and this
 * process's CPU time (user + system, nng's threads included) per
 * handshake.  W untimed handshakes (default 10) go first.
 *
 * --pings: one handshake, then N HEARTBEAT -> ACK round trips on that one
 * connection (W untimed first), sealed when there is a session: what every
 * later message of a run pays on each link (a seed is a RESULT -> ACK, a
 * share of a LEASE_REQ -> LEASE, and heartbeats).  The coordinator answers
 * a heartbeat for lease 0 with ACK ok=0, logging nothing.  Prints the
 * median and p90 round trip, round trips/s, and client CPU per round trip.
 *
 * --mac N times N auth_seal and N auth_open of a 200-byte message in a
 * hot loop: the HMAC-SHA256 alone, as each side pays it per sealed message.
 *
 * --pg starts an embedded PostgreSQL (isolation/pg.c, as a worker would),
 * prints its conninfo on one line, and keeps it until SIGTERM, SIGINT or
 * SIGHUP: the script hands it to every worker as SOAK_DATABASE_URL, so
 * the seeds/s runs do not include a PostgreSQL start.
 *
 * --time runs COMMAND (a `soak coordinator`), passes SIGTERM/SIGINT/SIGHUP
 * on to it, and writes the CPU time it used (user + system, µs, from
 * wait4) to FILE: the coordinator's side of a seeds/s run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/auth.h"
#include "common/msg.h"
#include "common/tlsconf.h"
#include "common/util.h"
#include "isolation/iso.h"

struct hs_times {
	int64_t	config, connect, msgs, bye, to_welcome, total;
};

static int
cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int64_t
pct(int64_t *v, int n, int p)
{
	int	i = (n * p) / 100;

	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return v[i >= n ? n - 1 : i];
}

static int64_t
cpu_us(void)
{
	struct rusage	ru;

	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/*
 * One request, one reply on s.  seal: the request carries seq and the
 * session MAC; open: the reply must carry the session MAC and seq, checked
 * before it is decoded (worker/worker.c's link_roundtrip).  A NACK is -1.
 */
static int
roundtrip(nng_socket s, const struct msg *req, struct msg *rep,
    const struct auth_session *seal, const struct auth_session *open, uint64_t seq,
    char *err)
{
	uint8_t		*buf = NULL;
	void		*rbuf;
	size_t		 len, rlen, mlen;
	uint64_t	 rseq = 0;
	char		 tmp[ERR_LEN];
	int		 rv;

	if (msg_encode(req, &buf, &len, err) == -1)
		return -1;
	if (seal)
		auth_seal(seal, AUTH_TO_COORDINATOR, seq, &buf, &len);
	rv = nng_send(s, buf, len, 0);
	free(buf);
	if (rv != 0)
		return errf(err, "sending %s: %s", msg_type_name(req->type), nng_strerror(rv));
	if ((rv = nng_recv(s, &rbuf, &rlen, NNG_FLAG_ALLOC)) != 0)
		return errf(err, "no reply to %s: %s", msg_type_name(req->type),
		    nng_strerror(rv));
	mlen = rlen;
	if (open && (auth_open(open, AUTH_TO_WORKER, rbuf, rlen, &rseq, &mlen, tmp) == -1 ||
	    rseq != seq)) {
		nng_free(rbuf, rlen);
		return errf(err, "the reply to %s fails its session MAC or seq",
		    msg_type_name(req->type));
	}
	rv = msg_decode(rbuf, mlen, rep, tmp);
	nng_free(rbuf, rlen);
	if (rv == -1)
		return errf(err, "bad reply to %s: %s", msg_type_name(req->type), tmp);
	if (rep->type == MSG_NACK) {
		errf(err, "%s refused: %s", msg_type_name(req->type), rep->u.ack.text);
		msg_clear(rep);
		return -1;
	}
	return 0;
}

/* One worker's connection: its socket and, after a challenge, its session. */
struct conn {
	nng_socket		 s;
	struct auth_session	 sess;
	bool			 sealed;
	uint64_t		 seq;		/* the last sealed request's */
	uint32_t		 wid;
};

/* A request of the session: sealed, with the next seq, once there is one. */
static int
call(struct conn *c, const struct msg *req, struct msg *rep, char *err)
{
	const struct auth_session	*sp = c->sealed ? &c->sess : NULL;

	return roundtrip(c->s, req, rep, sp, sp, sp ? ++c->seq : 0, err);
}

/*
 * Dials url and goes HELLO .. WELCOME as worker/worker.c does; t (when not
 * NULL) gets the config, connect and messages times.  0, or -1 with err
 * (and c->s closed).
 */
static int
join(const char *url, const struct auth_opts *o, struct conn *c, struct hs_times *t,
    char *err)
{
	struct msg	 req = { .type = MSG_HELLO }, rep;
	uint8_t		 nw[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	nng_dialer	 d;
	int64_t		 t0, t1, t2;
	int		 rv;

	memset(c, 0, sizeof(*c));
	t0 = now_us();
	if ((rv = nng_req0_open(&c->s)) != 0)
		return errf(err, "nng_req0_open: %s", nng_strerror(rv));
	nng_socket_set_ms(c->s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(c->s, NNG_OPT_RECVMAXSZ, MSG_MAX + AUTH_TRAILER_LEN);
	nng_socket_set_ms(c->s, NNG_OPT_RECVTIMEO, 10000);
	nng_socket_set_ms(c->s, NNG_OPT_SENDTIMEO, 10000);
	if ((rv = nng_dialer_create(&d, c->s, url)) != 0) {
		errf(err, "cannot dial %s: %s", url, nng_strerror(rv));
		goto fail;
	}
	if (auth_url_is_tls(url) && tlsconf_dialer(d, url, o, err) == -1)
		goto fail;
	t1 = now_us();
	if ((rv = nng_dialer_start(d, 0)) != 0) {
		errf(err, "cannot dial %s: %s", url, nng_strerror(rv));
		goto fail;
	}
	t2 = now_us();

	req.u.hello.name = UNCONST("bench:0");
	req.u.hello.host = UNCONST("bench");
	req.u.hello.slots = 1;
	if (auth_nonce(nw, err) == -1)
		goto fail;
	memcpy(req.u.hello.nonce, nw, AUTH_NONCE_LEN);
	if (roundtrip(c->s, &req, &rep, NULL, NULL, 0, err) == -1)
		goto fail;
	if (rep.type == MSG_CHALLENGE) {
		if (o->secret.len == 0) {
			msg_clear(&rep);
			errf(err, "the coordinator wants a shared secret (--secret-file)");
			goto fail;
		}
		memcpy(nc, rep.u.challenge.nonce, AUTH_NONCE_LEN);
		if (!auth_proof_ok(&o->secret, AUTH_COORDINATOR, nw, nc,
		    rep.u.challenge.proof)) {
			msg_clear(&rep);
			errf(err, "the coordinator's proof is wrong (another secret?)");
			goto fail;
		}
		msg_clear(&rep);
		auth_session_init(&c->sess, &o->secret, nw, nc);
		memset(&req, 0, sizeof(req));
		req.type = MSG_AUTH;
		auth_proof(&o->secret, AUTH_WORKER, nw, nc, req.u.auth.proof);
		/* AUTH goes in the clear; the WELCOME answering it is sealed, seq 0. */
		if (roundtrip(c->s, &req, &rep, NULL, &c->sess, 0, err) == -1)
			goto fail;
		c->sealed = true;
	} else if (o->secret.len > 0) {
		errf(err, "the coordinator sent %s without proving the secret",
		    msg_type_name(rep.type));
		msg_clear(&rep);
		goto fail;
	}
	if (rep.type != MSG_WELCOME) {
		errf(err, "%s where WELCOME was due", msg_type_name(rep.type));
		msg_clear(&rep);
		goto fail;
	}
	c->wid = rep.u.welcome.worker_id;
	msg_clear(&rep);
	if (t) {
		t->config = t1 - t0;
		t->connect = t2 - t1;
		t->msgs = now_us() - t2;
		t->to_welcome = t->config + t->connect + t->msgs;
	}
	explicit_bzero(nw, sizeof(nw));
	explicit_bzero(nc, sizeof(nc));
	return 0;
fail:
	nng_close(c->s);
	auth_session_clear(&c->sess);
	explicit_bzero(nw, sizeof(nw));
	explicit_bzero(nc, sizeof(nc));
	return -1;
}

/* BYE -> ACK, and the socket closed. */
static int
leave(struct conn *c, char *err)
{
	struct msg	req = { .type = MSG_BYE }, rep;
	int		rc;

	req.u.bye.worker_id = c->wid;
	if ((rc = call(c, &req, &rep, err)) == 0)
		msg_clear(&rep);
	nng_close(c->s);
	auth_session_clear(&c->sess);
	return rc;
}

/* HELLO .. WELCOME, then BYE, on a connection of its own. */
static int
handshake(const char *url, const struct auth_opts *o, struct hs_times *t, char *err)
{
	struct conn	c;
	int64_t		t0 = now_us();

	if (join(url, o, &c, t, err) == -1 || leave(&c, err) == -1)
		return -1;
	t->total = now_us() - t0;
	t->bye = t->total - t->to_welcome;
	return 0;
}

/*
 * One HEARTBEAT -> ACK on an open connection: a lease that is not active
 * (0), so the coordinator answers ACK ok=0 without logging — the framing,
 * MACs and TLS records of a RESULT -> ACK, minus the result's bookkeeping.
 */
static int
ping(struct conn *c, char *err)
{
	struct msg	req = { .type = MSG_HEARTBEAT }, rep;

	req.u.heartbeat.worker_id = c->wid;
	if (call(c, &req, &rep, err) == -1)
		return -1;
	if (rep.type != MSG_ACK) {
		msg_clear(&rep);
		return errf(err, "%s in reply to a heartbeat", msg_type_name(rep.type));
	}
	msg_clear(&rep);
	return 0;
}

/* --- the session MAC alone --- */

/*
 * n auth_seal and n auth_open of a 200-byte message (a RESULT of a passing
 * seed is about that), hot: the HMAC-SHA256 each sealed message costs its
 * sender and its receiver, without any I/O.
 */
static int
mac_mode(int n)
{
	struct auth_secret	 k = { .key = (uint8_t *)xstrdup("bench-secret-0123456789abcdef"),
				    .len = 29 };
	struct auth_session	 s;
	uint8_t			 nw[AUTH_NONCE_LEN] = { 1 }, nc[AUTH_NONCE_LEN] = { 2 };
	uint8_t			*buf = NULL;
	size_t			 len, mlen;
	uint64_t		 seq;
	int64_t			 t0, seal, open;
	char			 err[ERR_LEN];
	int			 i;

	auth_session_init(&s, &k, nw, nc);
	t0 = now_us();
	for (i = 0; i < n; i++) {
		buf = xcalloc(1, 200);
		len = 200;
		auth_seal(&s, AUTH_TO_COORDINATOR, (uint64_t)i + 1, &buf, &len);
		if (i < n - 1)
			free(buf);
	}
	seal = now_us() - t0;
	t0 = now_us();
	for (i = 0; i < n; i++)
		if (auth_open(&s, AUTH_TO_COORDINATOR, buf, len, &seq, &mlen, err) == -1) {
			fprintf(stderr, "fleet_handshake --mac: %s\n", err);
			return 1;
		}
	open = now_us() - t0;
	free(buf);
	auth_session_clear(&s);
	free(k.key);
	printf("auth_seal %.2f µs, auth_open %.2f µs (200-byte message, mean of %d)"
	    "\n# seal_us=%.2f\n# open_us=%.2f\n", (double)seal / n,
	    (double)open / n, n, (double)seal / n, (double)open / n);
	return 0;
}

/* --- a command's own CPU time --- */

static volatile sig_atomic_t	timed_child;

static void
forward(int sig)
{
	if (timed_child > 0)
		kill((pid_t)timed_child, sig);
}

/*
 * Runs argv, passing SIGTERM, SIGINT and SIGHUP on to it, and writes its
 * user + system CPU time in µs (its own, and that of the children it
 * reaped) to file.  Exits with its status.
 */
static int
time_mode(const char *file, char **argv)
{
	struct sigaction	 sa = { .sa_handler = forward };
	struct rusage		 ru;
	FILE			*f;
	pid_t			 pid;
	int			 st;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if ((pid = fork()) == -1)
		return 1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "fleet_handshake --time: cannot run %s\n", argv[0]);
		_exit(127);
	}
	timed_child = pid;
	while (wait4(pid, &st, 0, &ru) == -1)
		if (errno != EINTR)
			return 1;
	if ((f = fopen(file, "w")) != NULL) {
		fprintf(f, "%lld\n", (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
		    1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
		fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* --- a PostgreSQL for the workers, started once --- */

static int
pg_mode(void)
{
	struct pg_embedded	*pg;
	sigset_t		 set;
	char			 err[ERR_LEN];
	int			 sig;

	if ((pg = pg_embedded_start(64, err)) == NULL) {
		fprintf(stderr, "fleet_handshake --pg: %s\n", err);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("%s\n", pg_embedded_conninfo(pg));
	fflush(stdout);
	sigwait(&set, &sig);
	pg_embedded_stop(pg);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: fleet_handshake [--pings] [--warmup W] [--secret-file F] [--tls-ca PEM]\n"
	    "           [--tls-cert PEM] [--tls-server-name NAME] [--insecure] URL N\n"
	    "       fleet_handshake --mac N\n"
	    "       fleet_handshake --pg\n"
	    "       fleet_handshake --time FILE COMMAND [ARGS...]\n");
	exit(64);
}

/* N handshakes, each on a new connection, after warmup untimed ones. */
static int
run_handshakes(const char *url, const struct auth_opts *o, int n, int warmup)
{
	struct hs_times	*t = xcalloc((size_t)n, sizeof(*t));
	int64_t		*v = xcalloc((size_t)n, sizeof(*v)), t0, wall, c0, cpu;
	char		 err[ERR_LEN];
	int		 i;

	for (i = 0; i < warmup; i++)
		if (handshake(url, o, &t[0], err) == -1) {
			fprintf(stderr, "fleet_handshake: warm-up %d: %s\n", i, err);
			return 1;
		}
	c0 = cpu_us();
	t0 = now_us();
	for (i = 0; i < n; i++)
		if (handshake(url, o, &t[i], err) == -1) {
			fprintf(stderr, "fleet_handshake: handshake %d: %s\n", i, err);
			return 1;
		}
	wall = now_us() - t0;
	cpu = cpu_us() - c0;

#define MED(f) (__extension__({ for (i = 0; i < n; i++) v[i] = t[i].f; pct(v, n, 50); }))
	{
		int64_t	config = MED(config), connect = MED(connect), msgs = MED(msgs);
		int64_t	bye = MED(bye), total = MED(total), tw = MED(to_welcome);
		int64_t	p90 = pct(v, n, 90);	/* v holds to_welcome, sorted */
		double	rate = n * 1e6 / (double)wall;

		printf("%d handshakes in %.0f ms: %.0f/s; median µs: config %" PRId64
		    ", connect %" PRId64 ", HELLO..WELCOME %" PRId64 ", to WELCOME %" PRId64
		    " (p90 %" PRId64 "), BYE+close %" PRId64 ", total %" PRId64
		    "; client CPU %.0f µs/handshake\n", n, wall / 1000.0, rate, config,
		    connect, msgs, tw, p90, bye, total, (double)cpu / n);
		printf("# n=%d\n# wall_us=%" PRId64 "\n# rate=%.1f\n# config_us=%" PRId64
		    "\n# connect_us=%" PRId64 "\n# msgs_us=%" PRId64 "\n# to_welcome_us=%"
		    PRId64 "\n# p90_us=%" PRId64 "\n# bye_us=%" PRId64 "\n# total_us=%" PRId64
		    "\n# cpu_us=%.1f\n", n, wall, rate, config, connect, msgs, tw, p90, bye,
		    total, (double)cpu / n);
	}
#undef MED
	free(t);
	free(v);
	return 0;
}

/* One connection: n HEARTBEAT -> ACK round trips after warmup untimed ones. */
static int
run_pings(const char *url, const struct auth_opts *o, int n, int warmup)
{
	struct conn	 c;
	int64_t		*v = xcalloc((size_t)n, sizeof(*v)), t0, t1, wall, c0, cpu;
	char		 err[ERR_LEN];
	int		 i;

	if (join(url, o, &c, NULL, err) == -1) {
		fprintf(stderr, "fleet_handshake: %s\n", err);
		return 1;
	}
	for (i = 0; i < warmup; i++)
		if (ping(&c, err) == -1) {
			fprintf(stderr, "fleet_handshake: warm-up ping %d: %s\n", i, err);
			return 1;
		}
	c0 = cpu_us();
	t0 = now_us();
	for (i = 0; i < n; i++) {
		t1 = now_us();
		if (ping(&c, err) == -1) {
			fprintf(stderr, "fleet_handshake: ping %d: %s\n", i, err);
			return 1;
		}
		v[i] = now_us() - t1;
	}
	wall = now_us() - t0;
	cpu = cpu_us() - c0;
	if (leave(&c, err) == -1) {
		fprintf(stderr, "fleet_handshake: bye: %s\n", err);
		return 1;
	}
	{
		int64_t	med = pct(v, n, 50), p90 = pct(v, n, 90);

		printf("%d heartbeat round trips in %.0f ms: %.0f/s; median %" PRId64
		    " µs (p90 %" PRId64 "); client CPU %.1f µs/round trip\n", n,
		    wall / 1000.0, n * 1e6 / (double)wall, med, p90, (double)cpu / n);
		printf("# n=%d\n# ping_rate=%.1f\n# ping_us=%" PRId64 "\n# ping_p90_us=%"
		    PRId64 "\n# ping_cpu_us=%.2f\n", n, n * 1e6 / (double)wall, med, p90,
		    (double)cpu / n);
	}
	free(v);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "warmup",		required_argument, NULL, 'W' },
		{ "pings",		no_argument,	   NULL, 'p' },
		{ "mac",		required_argument, NULL, 'M' },
		{ "secret-file",	required_argument, NULL, 'F' },
		{ "tls-ca",		required_argument, NULL, 'A' },
		{ "tls-cert",		required_argument, NULL, 'C' },
		{ "tls-server-name",	required_argument, NULL, 'N' },
		{ "insecure",		no_argument,	   NULL, 'I' },
		{ "pg",			no_argument,	   NULL, 'P' },
		{ "time",		required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 }
	};
	struct auth_opts	 o = { 0 };
	const char		*url;
	char			 err[ERR_LEN], warn[ERR_LEN];
	int			 ch, n, rc, warmup = 10;
	bool			 pings = false;

	/* "+": options end at the first operand (--time's COMMAND). */
	while ((ch = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (ch) {
		case 'W': warmup = atoi(optarg); break;
		case 'p': pings = true; break;
		case 'F': o.secret_file = optarg; break;
		case 'A': o.tls_ca = optarg; break;
		case 'C': o.tls_cert = optarg; break;
		case 'N': o.tls_server_name = optarg; break;
		case 'I': o.insecure = true; break;
		case 'P': return pg_mode();
		case 'M': return mac_mode(atoi(optarg) > 0 ? atoi(optarg) : 1);
		case 'T':
			if (optind >= argc)
				usage();
			return time_mode(optarg, argv + optind);
		default: usage();
		}
	}
	if (argc - optind != 2 || (n = atoi(argv[optind + 1])) < 1 || warmup < 0)
		usage();
	url = argv[optind];
	/* The worker's rules and checks, before anything is dialed. */
	if (auth_secret_load(o.secret_file, &o.secret, err) == -1 ||
	    auth_policy(AUTH_WORKER, url, &o, warn, err) == -1 ||
	    tlsconf_check(AUTH_WORKER, url, &o, err) == -1) {
		fprintf(stderr, "fleet_handshake: %s\n", err);
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	rc = pings ? run_pings(url, &o, n, warmup) : run_handshakes(url, &o, n, warmup);
	auth_secret_free(&o.secret);
	return rc;
}
