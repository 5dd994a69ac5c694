/*
 * The per-seed cost of soak's orchestration, piece by piece, against this
 * machine's own cost of starting processes (bench/orchestration.sh runs
 * it; see bench/README.md).
 *
 *	orchestration CONFIG ITERATIONS PROCS
 *
 * The workspace is made under /tmp, where `soak run --out` puts it in
 * bench/orchestration.sh.  CONFIG is a soak config (its schema, invariants and turn count are
 * used); an embedded PostgreSQL is started for the database parts.  Each
 * figure is the median (and p90) of ITERATIONS samples.  Process-start
 * figures run in PROCS processes at once, as PROCS workers would, each
 * doing batches of cfg.turns /bin/true:
 *
 *	fork+exec	fork, execve, then waitpid all: what a plain fork costs
 *	posix_spawn	glibc's vfork-style spawn: the machine's cheapest exec
 *	wrk_run_batch	soak's turn batch (clone(CLONE_VM|CLONE_VFORK), own
 *			process group, PDEATHSIG, stdin/stdout/stderr files,
 *			chdir, its env, pidfd waits, stderr tail)
 *
 * The other rows are one seed's worth of each step of worker/seedrun.c.
 * Output: a table on stdout, and "key=value" lines (prefixed "# ") that
 * the script picks up.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/config.h"
#include "common/msg.h"
#include "common/util.h"
#include "invariants/inv.h"
#include "isolation/iso.h"
#include "worker/env.h"
#include "worker/wrk.h"

extern char	**environ;

static int
cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct stat_us {
	double	med, p90;
};

static struct stat_us
stats(int64_t *v, int n)
{
	struct stat_us	s;

	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	s.med = (double)v[n / 2];
	s.p90 = (double)v[(n * 9) / 10 >= n ? n - 1 : (n * 9) / 10];
	return s;
}

static void
row(const char *what, struct stat_us s, const char *note)
{
	printf("%-34s %9.2f %9.2f   %s\n", what, s.med / 1000.0, s.p90 / 1000.0, note);
}

/* --- process start: each of procs processes does iters batches --- */

enum how { HOW_FORK, HOW_POSIX_SPAWN, HOW_WRK };

struct batch_ctx {
	int		 nturns;
	const char	*dir;
	struct wrk	*w;
};

static int64_t
one_batch(enum how how, const struct batch_ctx *b)
{
	char			*argv[] = { "/bin/true", NULL };
	pid_t			 pids[64];
	int64_t			 t0 = now_us();
	int			 i, n = b->nturns;

	if (how == HOW_FORK) {
		for (i = 0; i < n; i++)
			if ((pids[i] = fork()) == 0) {
				execve(argv[0], argv, environ);
				_exit(127);
			}
		for (i = 0; i < n; i++)
			waitpid(pids[i], NULL, 0);
	} else if (how == HOW_POSIX_SPAWN) {
		for (i = 0; i < n; i++)
			posix_spawn(&pids[i], argv[0], NULL, NULL, argv, environ);
		for (i = 0; i < n; i++)
			waitpid(pids[i], NULL, 0);
	} else {
		struct spawn_req	reqs[64];
		struct turn_outcome	out[64];
		struct env		envs[64];
		char			dirs[64][256], so[64][300], se[64][300];
		bool			hung;

		/* What run_round hands wrk_run_batch, minus iso_turn_dir's
		 * mkdirs (measured on their own row). */
		for (i = 0; i < n; i++) {
			snprintf(dirs[i], sizeof(dirs[i]), "%s/t%d", b->dir, i);
			snprintf(so[i], sizeof(so[i]), "%s/stdout.log", dirs[i]);
			snprintf(se[i], sizeof(se[i]), "%s/stderr.log", dirs[i]);
			env_init(&envs[i]);
			env_base(&envs[i], b->w, NULL, 0, dirs[i]);
			reqs[i] = (struct spawn_req){ .argv = argv, .envp = envs[i].v,
			    .dir = dirs[i], .stdout_path = so[i], .stderr_path = se[i] };
		}
		t0 = now_us();
		memset(out, 0, sizeof(out));
		wrk_run_batch(reqs, (size_t)n, 10000, now_ms() + 60000, out, &hung);
		for (i = 0; i < n; i++) {
			if (out[i].status != TURN_OK)
				fprintf(stderr, "turn %d: %s\n", i, out[i].stderr_tail);
			turn_outcome_clear(&out[i]);
			env_free(&envs[i]);
		}
	}
	return now_us() - t0;
}

/*
 * Runs iters rounds in each of procs processes, all started together (a
 * pipe is the starting gun); a round is one batch of each kind in turn,
 * so that the machine's changing load falls on all three alike.  Returns
 * the pooled per-batch times of each kind.
 */
static void
spawn_bench(const struct batch_ctx *b, int iters, int procs, struct stat_us *res)
{
	size_t	 nv = (size_t)(iters * procs), sz = sizeof(int64_t) * 3 * nv;
	int64_t	*shared, *v = xcalloc(nv, sizeof(int64_t));
	pid_t	 kids[16];
	int	 gun[2], i, k, h;
	char	 c;

	shared = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || pipe(gun) == -1)
		abort();
	for (k = 0; k < procs; k++)
		if ((kids[k] = fork()) == 0) {
			close(gun[1]);
			if (read(gun[0], &c, 1) < 0)
				_exit(1);
			for (h = 0; h < 3; h++)	/* warm up */
				one_batch((enum how)h, b);
			for (i = 0; i < iters; i++)
				for (h = 0; h < 3; h++)
					shared[h * nv + (size_t)(k * iters + i)] =
					    one_batch((enum how)((h + i) % 3), b);
			_exit(0);
		}
	close(gun[0]);
	close(gun[1]);	/* EOF starts everyone at once */
	for (k = 0; k < procs; k++)
		waitpid(kids[k], NULL, 0);
	/* Slot h of round i ran kind (h + i) % 3. */
	for (h = 0; h < 3; h++) {
		size_t	n = 0;

		for (k = 0; k < procs; k++)
			for (i = 0; i < iters; i++) {
				int	slot = ((h - i) % 3 + 3) % 3;

				v[n++] = shared[(size_t)slot * nv + (size_t)(k * iters + i)];
			}
		res[h] = stats(v, (int)n);
	}
	munmap(shared, sz);
	free(v);
}

/* --- messaging: RESULT -> ACK over nng req/rep on ipc, as a seed does --- */

struct rep_side {
	nng_socket	sock;
	int		n;
};

static void *
rep_main(void *arg)
{
	struct rep_side	*r = arg;
	struct msg	 m, ack = { .type = MSG_ACK };
	char		 err[ERR_LEN];
	uint8_t		*buf;
	size_t		 len;
	void		*in;
	int		 i;

	ack.u.ack.ok = 1;
	ack.u.ack.text = "";
	for (i = 0; i < r->n; i++) {
		if (nng_recv(r->sock, &in, &len, NNG_FLAG_ALLOC) != 0)
			break;
		if (msg_decode(in, len, &m, err) == -1)
			fprintf(stderr, "decode: %s\n", err);
		msg_clear(&m);
		nng_free(in, len);
		msg_encode(&ack, &buf, &len, err);
		nng_send(r->sock, buf, len, 0);
		free(buf);
	}
	return NULL;
}

static struct stat_us
msg_bench(int iters)
{
	struct rep_side	 r = { .n = iters + 1 };
	struct msg	 res = { .type = MSG_RESULT }, ack;
	nng_socket	 req;
	pthread_t	 t;
	int64_t		*v = xcalloc((size_t)iters, sizeof(int64_t));
	char		 url[128], err[ERR_LEN];
	uint8_t		*buf;
	size_t		 len;
	void		*in;
	int		 i;

	snprintf(url, sizeof(url), "ipc:///tmp/soak-bench-%d.ipc", (int)getpid());
	if (nng_rep0_open(&r.sock) || nng_listen(r.sock, url, NULL, 0) ||
	    nng_req0_open(&req) || nng_dial(req, url, NULL, 0))
		abort();
	pthread_create(&t, NULL, rep_main, &r);
	/* A passing seed's result: a small detail object. */
	res.u.result = (typeof(res.u.result)){ .worker_id = 1, .lease_id = 7, .seed = 42,
	    .attempt = 1, .verdict = VERDICT_PASS, .reason = "", .duration_ms = 30,
	    .detail = "{\"message\": \"8 of 8 turns ok\", \"round\": null, "
	    "\"ok_turns\": 8, \"total_turns\": 8}" };
	for (i = -1; i < iters; i++) {
		int64_t	t0 = now_us();

		msg_encode(&res, &buf, &len, err);
		nng_send(req, buf, len, 0);
		free(buf);
		nng_recv(req, &in, &len, NNG_FLAG_ALLOC);
		msg_decode(in, len, &ack, err);
		msg_clear(&ack);
		nng_free(in, len);
		if (i >= 0)
			v[i] = now_us() - t0;
	}
	pthread_join(t, NULL);
	nng_close(req);
	nng_close(r.sock);
	struct stat_us s = stats(v, iters);
	free(v);
	return s;
}

static struct stat_us
workspace_bench(struct iso *iso, const struct cfg *cfg, int64_t *v, int iters)
{
	char	err[ERR_LEN], *sd, *td;
	int64_t	t0;
	int	i, k;

	for (i = 0; i < iters; i++) {
		t0 = now_us();
		if ((sd = iso_seed_dir(iso, 1000 + (uint64_t)i, err)) == NULL)
			fprintf(stderr, "iso_seed_dir: %s\n", err);
		for (k = 0; k < cfg->turns; k++) {
			if ((td = iso_turn_dir(iso, 1000 + (uint64_t)i, 0, k, err)) == NULL)
				fprintf(stderr, "iso_turn_dir: %s\n", err);
			free(td);
		}
		rm_rf(sd);
		free(sd);
		v[i] = now_us() - t0;
	}
	return stats(v, iters);
}

int
main(int argc, char **argv)
{
	struct cfg		 cfg;
	struct pg_embedded	*pg = NULL;
	struct iso		*iso = NULL, *iso_shm = NULL;
	struct wrk		 w = { 0 };
	struct batch_ctx	 b;
	struct stat_us		 s_fork, s_pspawn, s_wrk, s_trunc, s_recreate, s_inv,
				 s_ws, s_env, s_msg, s_pgstart, sp[3], s_delete, s_ws_shm;
	char			 err[ERR_LEN], root[] = "/tmp/soak-bench.XXXXXX",
				 shmroot[] = "/dev/shm/soak-bench.XXXXXX", *shm = NULL;
	int64_t			*v, t0;
	int			 iters, procs, i, k, rc = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: orchestration CONFIG ITERATIONS PROCS\n");
		return 64;
	}
	iters = atoi(argv[2]);
	procs = atoi(argv[3]);
	if (iters < 1 || procs < 1 || procs > 16) {
		fprintf(stderr, "orchestration: bad ITERATIONS or PROCS\n");
		return 64;
	}
	if (cfg_load_file(argv[1], &cfg, err) == -1) {
		fprintf(stderr, "orchestration: %s\n", err);
		return 78;
	}
	if (cfg.turns > 64)
		cfg.turns = 64;
	v = xcalloc((size_t)iters, sizeof(int64_t));
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		goto out;
	}

	t0 = now_us();
	if ((pg = pg_embedded_start(30, err)) == NULL) {
		fprintf(stderr, "orchestration: %s\n", err);
		goto out;
	}
	s_pgstart.med = s_pgstart.p90 = (double)(now_us() - t0);
	if ((iso = iso_open(&cfg, pg_embedded_conninfo(pg), "bench", 1, root, err)) == NULL ||
	    iso_dbparams_parse(pg_embedded_conninfo(pg), &w.db, err) == -1 ||
	    iso_reset(iso, INT64_MAX, err) == -1) {
		fprintf(stderr, "orchestration: %s\n", err);
		goto out;
	}
	w.cfg = &cfg;
	w.run_id = "bench";
	w.id = 1;
	w.iso = iso;
	w.path_env = "/usr/local/bin:/usr/bin:/bin";

	/* Turn batches, with PostgreSQL idle in the background. */
	b = (struct batch_ctx){ .nturns = cfg.turns, .dir = root, .w = &w };
	for (i = 0; i < cfg.turns; i++) {
		char	*d = xasprintf("%s/t%d", root, i);

		mkdir_p(d, 0700, NULL);
		free(d);
	}
	spawn_bench(&b, iters, procs, sp);
	s_fork = sp[HOW_FORK];
	s_pspawn = sp[HOW_POSIX_SPAWN];
	s_wrk = sp[HOW_WRK];

	cfg.db_reset = CFG_RESET_TRUNCATE;
	for (i = 0; i < iters; i++) {
		t0 = now_us();
		if (iso_reset(iso, INT64_MAX, err) == -1)
			fprintf(stderr, "iso_reset: %s\n", err);
		v[i] = now_us() - t0;
	}
	s_trunc = stats(v, iters);
	cfg.db_reset = CFG_RESET_RECREATE;
	for (i = 0; i < iters; i++) {
		t0 = now_us();
		if (iso_reset(iso, INT64_MAX, err) == -1)
			fprintf(stderr, "iso_reset: %s\n", err);
		v[i] = now_us() - t0;
	}
	s_recreate = stats(v, iters);
	/* What a reset by DELETE would cost instead, for comparison. */
	for (i = 0; i < iters; i++) {
		PGresult	*r;

		t0 = now_us();
		r = PQexec(iso_conn(iso), "DELETE FROM t");
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			fprintf(stderr, "DELETE: %s", PQerrorMessage(iso_conn(iso)));
		PQclear(r);
		v[i] = now_us() - t0;
	}
	s_delete = stats(v, iters);

	for (i = 0; i < iters; i++) {
		struct inv_result	ir = { 0 };

		t0 = now_us();
		if (inv_check(iso_conn(iso), &cfg, INT64_MAX, &ir, err) == -1)
			fprintf(stderr, "inv_check: %s\n", err);
		v[i] = now_us() - t0;
		inv_result_free(&ir);
	}
	s_inv = stats(v, iters);

	/* A seed's workspace: iso_seed_dir, iso_turn_dir per turn, rm_rf;
	 * under /tmp as soak run puts it, and on tmpfs for comparison. */
	s_ws = workspace_bench(iso, &cfg, v, iters);
	if ((shm = mkdtemp(shmroot)) == NULL ||
	    (iso_shm = iso_open(&cfg, pg_embedded_conninfo(pg), "bench", 2, shm, err)) == NULL) {
		fprintf(stderr, "orchestration: %s\n", shm ? err : strerror(errno));
		goto out;
	}
	s_ws_shm = workspace_bench(iso_shm, &cfg, v, iters);

	/* Every turn's environment, as run_round builds it. */
	for (i = 0; i < iters; i++) {
		struct env	e;

		t0 = now_us();
		for (k = 0; k < cfg.turns; k++) {
			env_init(&e);
			env_base(&e, &w, NULL, 0, root);
			env_addf(&e, "SOAK_SEED", "%d", i);
			env_addf(&e, "SOAK_ROUND", "%d", 0);
			env_addf(&e, "SOAK_TURN", "%d", k);
			env_addf(&e, "SOAK_TURNS", "%d", cfg.turns);
			env_addf(&e, "SOAK_TURN_SEED", "%d", i * k);
			env_free(&e);
		}
		v[i] = now_us() - t0;
	}
	s_env = stats(v, iters);

	s_msg = msg_bench(iters);

	printf("per-seed steps, %d turns, %d iterations, %d processes at once for the "
	    "process rows\n\n", cfg.turns, iters, procs);
	printf("%-34s %9s %9s   %s\n", "step", "med ms", "p90 ms", "");
	row("PostgreSQL start (once per run)", s_pgstart, "initdb + postgres, one sample");
	row("schema reset, truncate", s_trunc, "iso_reset: TRUNCATE .. RESTART IDENTITY");
	row("schema reset, recreate", s_recreate, "iso_reset: DROP + CREATE SCHEMA + DDL");
	row("  (DELETE FROM t instead)", s_delete, "not soak's: what a DELETE reset would cost");
	row("invariants", s_inv, "inv_check: BEGIN RR RO; query; ROLLBACK");
	row("workspace dirs, /tmp", s_ws, "iso_seed_dir + iso_turn_dir x turns + rm_rf");
	row("workspace dirs, /dev/shm", s_ws_shm, "the same on tmpfs (for comparison)");
	row("turn env", s_env, "env_base + SOAK_* x turns");
	row("messaging", s_msg, "RESULT -> ACK, msg codec + nng req/rep ipc");
	printf("%-34s %9s %9s\n", "process start, batch of turns:", "", "");
	row("  fork + execve + waitpid", s_fork, "machine baseline, plain fork");
	row("  posix_spawn + waitpid", s_pspawn, "machine baseline, vfork-style");
	row("  wrk_run_batch", s_wrk, "soak's turn batch");
	printf("\nturn spawn vs the machine: wrk_run_batch / posix_spawn = %.2f, "
	    "overhead %.2f ms per batch\n", s_wrk.med / s_pspawn.med,
	    (s_wrk.med - s_pspawn.med) / 1000.0);
	printf("# pg_start_ms=%.2f\n# reset_truncate_ms=%.3f\n# reset_recreate_ms=%.3f\n"
	    "# inv_ms=%.3f\n# workspace_ms=%.3f\n# workspace_shm_ms=%.3f\n# env_ms=%.3f\n# msg_ms=%.3f\n"
	    "# fork_batch_ms=%.3f\n# posix_spawn_batch_ms=%.3f\n# wrk_batch_ms=%.3f\n",
	    s_pgstart.med / 1000, s_trunc.med / 1000, s_recreate.med / 1000,
	    s_inv.med / 1000, s_ws.med / 1000, s_ws_shm.med / 1000, s_env.med / 1000, s_msg.med / 1000,
	    s_fork.med / 1000, s_pspawn.med / 1000, s_wrk.med / 1000);
	rc = 0;
out:
	if (iso) {
		iso_drop(iso, err);
		iso_close(iso);
	}
	iso_close(iso_shm);
	if (shm)
		rm_rf(shm);
	iso_dbparams_free(&w.db);
	pg_embedded_stop(pg);
	rm_rf(root);
	cfg_free(&cfg);
	free(v);
	return rc;
}
