/*
 * The worker: runs seeds one after another in its own schema and
 * workspace.  wrk_run_seed is the whole life of one seed
 * (reset -> setup -> round k -> check -> verdict) and is shared by the
 * networked worker (worker.c) and `soak replay` (replay.c), so a replay
 * runs exactly the code a run does.
 */
#ifndef SOAK_WRK_H
#define SOAK_WRK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/auth.h"
#include "common/cfgerr.h"
#include "common/auth.h"
#include "common/config.h"
#include "common/plan.h"
#include "common/scrub.h"
#include "common/verdict.h"
#include "isolation/iso.h"
#include "worker/env.h"

/* How one turn (or the setup command) ended. */
enum turn_status {
	TURN_OK,		/* exit 0 */
	TURN_ERROR,		/* another exit status: expected under faults */
	TURN_TEMPFAIL,		/* exit 75: its environment broke -> infra */
	TURN_SIGNAL,		/* died of a signal it was not sent -> crash */
	TURN_TIMEOUT,		/* killed at turn.timeout */
	TURN_EXEC,		/* could not be started -> infra */
	TURN_KILLED,		/* killed because the seed hung */
};
const char	*turn_status_name(enum turn_status s);

/*
 * The last bytes of a turn's stdout and stderr kept in its outcome (the
 * whole streams stay in its workspace's stdout.log and stderr.log).
 */
#define TURN_TAIL_MAX	2048

struct turn_outcome {
	int			 round, turn;	/* turn -1: the setup command */
	enum turn_status	 status;
	int			 code;		/* exit status or signal number */
	int			 exec_errno;	/* TURN_EXEC at execve: its errno */
	int64_t			 start_ms;	/* now_ms() instants: started, and */
	int64_t			 end_ms;	/* reaped (start_ms for TURN_EXEC) */
	int64_t			 duration_ms;	/* end_ms - start_ms */
	char			*stdout_tail;	/* last TURN_TAIL_MAX bytes, as */
	char			*stderr_tail;	/* text (spawn.c); heap */
};

/* A process to start: argv, env, working directory, output files. */
struct spawn_req {
	char *const	*argv;
	char *const	*envp;
	const char	*dir;
	const char	*stdout_path;
	const char	*stderr_path;
	/*
	 * Socket activation (a service with listen: socket): when listen_pid
	 * is not NULL, listen_fd becomes the child's fd 3 (without
	 * FD_CLOEXEC; every other descriptor of ours is close-on-exec), and
	 * listen_pid, one of envp's strings, "LISTEN_PID=" followed by room
	 * for 20 digits, gets the child's own pid, written by the child
	 * before exec (sd_listen_fds(3) checks it).
	 */
	int		 listen_fd;
	char		*listen_pid;
	/*
	 * wrk_run_batch: called on the caller's thread once the process has
	 * been reaped, or could not be started (NULL: nothing to tell).  The
	 * proxies' schedule stops waiting for a turn then (proxy.h).
	 */
	void		(*ended)(void *arg);
	void		*ended_arg;
	/* wrk_run_batch: called on the caller's thread once the process is
	 * started, with its pid (the leader of its process group), before any
	 * other is (NULL: nothing to tell); its arg is ended_arg */
	void		(*started)(void *arg, pid_t pid);
	/* Scrubs the stdout and stderr tails (common/scrub.h); may be NULL. */
	const struct scrub *scrub;
};

/*
 * Starts a process in its own process group, with PDEATHSIG so it dies
 * with the worker.  Returns its pid and a pidfd to poll; -1 with err if it
 * could not be exec'd (the child reports execve's errno through a
 * close-on-exec pipe, so "no such file" is known before we return), and
 * then *exec_errno (may be NULL) is execve's errno, or 0 when an earlier
 * step failed (chdir, its output files).
 */
int	wrk_spawn(const struct spawn_req *req, pid_t *pid, int *pidfd,
	    int *exec_errno, char *err);


/*
 * Runs n processes to completion concurrently.  Each gets its own
 * timeout_ms; all are killed (status TURN_KILLED) once the absolute
 * monotonic deadline_ms passes, and then *hung is set.  Fills out[i]:
 * its status, when it started and was reaped, and the tails of the files
 * its stdout and stderr went to (for TURN_EXEC, stderr_tail is why).
 */
void	wrk_run_batch(const struct spawn_req *reqs, size_t n, int64_t timeout_ms,
	    int64_t deadline_ms, struct turn_outcome *out, bool *hung);
void	turn_outcome_clear(struct turn_outcome *t);

/*
 * Services of the system under test (services.c).  Every service's port
 * is chosen (bound) before the first one starts and stays the same for
 * the worker's life, restarts included.  A service that goes through the
 * seam (cfg_service_seam) lives for one seed at a time; the others for
 * the worker's life.
 */
struct wrk_services;
struct wrk;
struct proxy_set;

/* Binds every port, then starts the services that do not go through the
 * seam in order, each ready. */
int	wrk_services_start(struct wrk *w, char *err);
/*
 * The services that go through the seam, by name in config order (*n of
 * them; NULL when none): the proxy set's services, actors turns + k
 * (fault-proxy/proxy.h proxy_set_open_cfg).  The same from
 * wrk_services_start to wrk_services_stop.
 */
const char *const *wrk_seam_services(const struct wrk *w, size_t *n);
/* What a seam service's seed gives it. */
struct wrk_seam {
	struct proxy_set	*ps;	/* the seed's, open; must outlive the
					   services' seed (seed_stop first) */
	int			 turns;	/* the set's turns: its services'
					   actors follow them */
	uint64_t		 seed;
	const char		*dir;	/* the seed's workspace: each service's
					   folder is services/NAME in it */
};
/*
 * Starts every seam service for seam's seed, in order, each ready within
 * its ready_timeout and deadline; *took_ms the time it took.  -1 with err
 * (and w->open_cfgerr when its program cannot be started here).
 */
int	wrk_services_seed_start(struct wrk *w, const struct wrk_seam *seam,
	    int64_t deadline, int64_t *took_ms, char *err);
/*
 * Stops every seam service that runs, its whole process group (SIGTERM,
 * then SIGKILL), reaped; *died: one had exited before (the first said in
 * why); *took_ms the time it took.  A no-op for one not running.
 */
void	wrk_services_seed_stop(struct wrk *w, bool *died, char *why, size_t len,
	    int64_t *took_ms);
/*
 * Restarts any direct service that died, on its port, each ready within
 * its ready_timeout and deadline (a now_ms() instant; INT64_MAX: none);
 * *died says whether one had.  -1 if one can't come back.
 */
int	wrk_services_check(struct wrk *w, int64_t deadline, bool *died, char *err);
void	wrk_services_stop(struct wrk *w);
int	wrk_service_port(const struct wrk *w, const char *name);
/* Every service's name and port, for env_base; the same from
 * wrk_services_start to wrk_services_stop. */
const struct env_port	*wrk_service_ports(const struct wrk *w, size_t *n);

/* Everything constant for one worker. */
struct wrk {
	const struct cfg	*cfg;
	char			*run_id;
	int			 id;
	struct iso		*iso;
	struct iso_watch	*watch;		/* the database watch, or NULL */
	struct iso_dbparams	 db;
	char			*conninfo;
	char			*workspace;	/* root of this worker's directories */
	char			*keep_dir;	/* failing workspaces go to keep_dir/<seed>/ */
	struct wrk_services	*services;
	FILE			*timeline;	/* replay's readable account, or NULL */
	bool			 keep_all;	/* replay --keep: never remove the workspace */
	bool			 whole_trace;	/* replay: seed_result.trace gets the
						   whole fault trace, pass or fail */
	/* A plan to follow instead of the seed's decisions (docs/plan.md),
	 * the caller's; then_seed: after a divergence the seed's scheduler
	 * goes on (else the seed ends infra/diverged) */
	const struct plan	*plan;
	bool			 then_seed;
	bool			 save_plan;	/* a passing seed's plan too */
	/* A seed's whole time when shorter than the config's seed_timeout
	 * (0: the config's): soak minimize gives a candidate about twice
	 * the original's time, so a turn waiting on a removed peer ends the
	 * candidate as a hang (not its failure) instead of at turn.timeout */
	int64_t			 seed_timeout_ms;
	/* The folder under keep_dir a failing seed is kept in: NULL for its
	 * number; a regression's "regression-NAME" (its seed may also be one
	 * of the range's) */
	const char		*keep_name;
	char			*path_env;	/* the PATH turns inherit */
	enum reason		 open_failed;	/* after wrk_open's -1: REASON_DB
						   or REASON_SERVICE */
	struct cfgerr		 open_cfgerr;	/* after wrk_open's -1: a cause no
						   retry mends (the config does not
						   load here, a service's program is
						   not there), else CFGERR_NONE */
	/*
	 * The running seed's deadline, a now_ms() instant (CLOCK_MONOTONIC),
	 * 0 between seeds: written by wrk_run_seed, readable from any thread
	 * (wrk_seed_deadline).  By then every phase and every libpq call of
	 * the seed has given up, and the verdict follows within WRK_PROBE_MS
	 * and the time to kill the turns and keep a failing workspace.
	 */
	_Atomic int64_t		 seed_deadline_ms;
	bool			 workspace_ok;	/* iso_open took it: ours to remove */
	char			*unusable;	/* why the config does not load
						   here: every seed is infra/setup */
	/*
	 * What text captured from turns, services and setup is scrubbed of
	 * before it is sent or written (common/scrub.h): the database
	 * passwords of conninfo, the worker's own PGPASSWORD, and *secret
	 * (the shared secret, when the caller set it).  Made by wrk_open.
	 */
	const struct auth_secret *secret;
	struct scrub		*scrub;
};

/* A probe of the database once a seed's deadline passed (iso_probe). */
#define WRK_PROBE_MS	2000
/* At most this long for the proxies' last exchanges after a round. */
#define WRK_SETTLE_MS	10000
/* replay's whole trace (seed_result.trace): a proxy keeps at most
 * PROXY_TRACE_CAP records of a few hundred bytes */
#define WRK_TRACE_WHOLE_MAX	((size_t)512 << 20)

/* w->seed_deadline_ms, for another thread (the heartbeat's). */
static inline int64_t
wrk_seed_deadline(struct wrk *w)
{
	return atomic_load(&w->seed_deadline_ms);
}

enum run_state { RUN_RESET, RUN_SETUP, RUN_ROUND, RUN_CHECK, RUN_VERDICT };

struct seed_result {
	int		 verdict;	/* enum msg_verdict */
	enum reason	 reason;	/* REASON_NONE for pass */
	char		 message[512];
	int64_t		 duration_ms;
	json_t		*detail;	/* owned */
	/* w->whole_trace: the seed's fault trace, every line (NULL: none,
	 * or it could not be read); the detail holds at most its first lines */
	char		*trace;
	size_t		 trace_len;
};

/*
 * Opens the worker: parses conninfo, iso_open, starts services.  The
 * caller fills cfg/run_id/id/conninfo/workspace/keep_dir/timeline first.
 * On -1, w->open_failed says which part failed, as an infra reason, and
 * w->open_cfgerr whether it was a config error.
 */
int	wrk_open(struct wrk *w, char *err);
/*
 * Scrubs text the system under test produced (an invariant's row quoted
 * in a message) of the secrets soak holds, in place, within size bytes:
 * today the database password, by conninfo_scrub (common/conninfo.h).
 * Every such quote goes through here, so one place decides what a secret
 * is.
 */
void	wrk_scrub(const struct wrk *w, char *text, size_t size);
/* At most this many bytes of a violating row in a failure's message. */
#define WRK_ROW_QUOTE	160
void	wrk_close(struct wrk *w, bool drop_schema);
/*
 * Never fails: every failure is a verdict.  seed_timeout bounds it whole:
 * one deadline is taken at its start and every phase (service restarts,
 * the schema reset, setup, rounds, the proxies settling, the checks) gets
 * what is left of it.  When it passes, the database is probed (iso_probe):
 * no answer within WRK_PROBE_MS is infra/db, an answer fail/hang.
 * Every seed's detail, passing ones included, holds "coverage" (what the
 * seed exercised, computed before its workspace goes): {"proxies":
 * proxy_cov_json of its whole fault trace (fault-proxy/proxy.h), and
 * "invariants": [[checks, broken], ..] in config order, the rounds after
 * which each invariant was checked and those after which it returned
 * rows}; the coordinator sums them (coordinator/coverage.h).
 */
void	wrk_run_seed(struct wrk *w, uint64_t seed, uint32_t attempt,
	    struct seed_result *res);
/*
 * `soak check`'s dry run: what wrk_run_seed does before the first round
 * (services checked, the schema reset, the setup command), then nothing
 * more, the seed's workspace removed.  0, the schema left as a round
 * would find it; -1 with res's verdict, reason and message saying what
 * failed, and *cfgerr (CFGERR_NONE if none) whether it was a config error.
 * res->detail holds "message" and "turns" (the setup's outcome, with its
 * stderr tail); res is seed_result_clear()ed by the caller either way.
 */
int	wrk_dry_seed(struct wrk *w, uint64_t seed, struct seed_result *res,
	    struct cfgerr *cfgerr);
void	seed_result_clear(struct seed_result *res);
/*
 * The detail to put in a RESULT: res->detail as JSON text, never NULL and
 * never more than MSG_DETAIL_MAX bytes.  wrk_run_seed already cut it to
 * fit (worker/detail.h); one that still does not is replaced by a summary
 * saying so and where the full data is, because a result that cannot be
 * encoded would end the worker and lose a real verdict.
 */
char	*wrk_result_text(const struct seed_result *res);

/*
 * One request to the coordinator and its reply, over the worker's session
 * (worker.c's link_call; rep to be msg_clear()ed).  0, or -1 with err.
 */
struct link;
struct msg;
typedef int	(*wrk_call_fn)(struct link *l, const struct msg *req, struct msg *rep,
		    int timeout_ms, const char *what, char *err);

/*
 * Loads the config a WELCOME carries into *cfg (worker/bundle_fetch.c).
 * With a bundle_hash, from the config folder's bundle cached under root
 * (the worker's --workspace, NULL for scratch_root()), asked of the
 * coordinator through call(l, ...) and checked against the hash when the
 * cache has no copy; relative paths then resolve in that copy.  Without
 * one, from the folder at the coordinator's path, as `soak run` does.
 * 0, or -1 with err: this worker cannot take the run's config.
 */
int	wrk_bundle_config(const struct msg *welcome, const char *root,
	    wrk_call_fn call, struct link *l, struct cfg *cfg, char *err);

/*
 * A worker's life for a coordinator (worker/worker.c): dial o->url, make
 * the coordinator prove itself, take the run's config, run leased seeds
 * until the run is done, say BYE.  SIGTERM drains: the running seed
 * finishes and is reported, the lease's unstarted seeds go back.  The
 * options `soak worker` parsed (cmd/worker.c), one process per slot.
 */
struct wrk_opts {
	const char	*url;
	const char	*workspace;
	struct auth_opts auth;
	int		 slots;
	int64_t		 reconnect_ms;	/* --reconnect: how long to dial a lost
					   coordinator (and the first one) */
	bool		 quiet;		/* --quiet: no connected/done lines */
	bool		 slot;		/* one of --slots N > 1: its parent
					   says "the run is over", once */
	/* The fingerprint of a failing result (heap), NULL for any other
	 * verdict: a minimize lease's (the rule lives above the worker;
	 * required: cmd/worker.c sets it) */
	char		*(*fingerprint)(const struct cfg *cfg,
			    const struct seed_result *res);
};

/* A slot's exit status for "the run was over before it came", which its
 * parent turns into 0 and one line for all (cmd/worker.c). */
#define WRK_SLOT_LATE	3

/* 0 the run is done (or was over: WRK_SLOT_LATE for a slot), 1 lost. */
int	wrk_serve(const struct wrk_opts *o);

#endif
