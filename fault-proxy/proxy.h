/*
 * fault-proxy: a TCP proxy that lies to its client on purpose, reproducibly
 * (docs/design.md, "The determinism contract").  Every decision is a pure
 * function of (seed, proxy name, turn, connection number within the turn,
 * exchange number within the connection), drawn from seed_derive()/seed_rng
 * (common/seed.h).
 *
 * The worker's view: one proxy_set per seed, with one loopback listener per
 * (proxy, actor), all driven by one event-loop thread owned by the set.
 * An actor is a turn (indices 0..turns-1) or a service that goes through
 * the seam (docs/turns.md "What a service gets"): the set's k-th service
 * is actor turns + k, in the trace's "turn" like a turn's index, and its
 * records say "service":"NAME".  A service's connections are numbered,
 * rolled and traced as a turn's are.  At a scheduled proxy in front of the
 * database its exchanges are held by the gate as the turn's whose request
 * they serve (docs/faults.md "Services under a schedule"; engine.c, the
 * service's front lets its requests go one at a time, each until the
 * service is quiet), their records with that turn in "turn"; one whose
 * turn cannot be told passes unscheduled and says "bypass":true.
 *
 * Determinism contract
 *  - The roll of exchange X on connection C of turn T of proxy P under seed S
 *    comes from a splitmix64 stream keyed by
 *        seed_derive(S ^ seed_str(P), T, (C << 32) | X)
 *    (see proxy_roll()).  Connections are numbered 0, 1, ... in accept order
 *    on the (P, T) listener, exchanges 0, 1, ... in order on a connection.
 *    Accept order is the turn's own connect order, so numbering is
 *    deterministic as long as a turn opens its connections to one proxy
 *    sequentially (the common case: one client, or a pool filled in order).
 *    Turns never share a listener, so concurrency *between* turns cannot
 *    perturb the numbering.
 *  - Connection-level decisions (blackhole) use exchange key 0xffffffff.
 *  - The trace is held in memory and written at proxy_set_close(), sorted by
 *    (proxy index, turn, conn, exchange), so it is byte-identical across
 *    runs of one seed whenever the turns do the same thing.
 *
 * Exchanges
 *  - HTTP/1.1 (protocol http, or auto and the first bytes look like a
 *    request line): one request (Content-Length or chunked body) and its
 *    response (Content-Length, chunked, no-body statuses, HEAD, or
 *    close-delimited).  Requests on a keep-alive connection are forwarded
 *    one at a time; a pipelined request waits for the previous response.
 *    A 101 response or unparseable HTTP switches the connection to tcp.
 *  - PostgreSQL v3 (protocol postgres, or auto and the first bytes are a
 *    startup packet, SSLRequest or GSSENCRequest): SSLRequest and
 *    GSSENCRequest are answered 'N' by the proxy; the startup and its
 *    authentication are exchange 0; then one exchange per simple Query or
 *    per extended batch up to Sync, each up to its ReadyForQuery (see
 *    pgframe.h).  Pipelined batches are forwarded one at a time: the next
 *    waits in the proxy for the previous ReadyForQuery.  An exchange is
 *    admitted (rolled faults applied, latency started, first byte
 *    forwarded) once its statement's head is known.
 *  - tcp: the client's bytes up to the first upstream reply byte, plus the
 *    reply up to the client's next bytes (or a close).
 *  - An exchange's life: it begins (is numbered and rolled) at the first
 *    byte of its first message, sits in CS_PENDING until its statement's
 *    head is known, and is admitted by exchange_admit() (conn.c) before
 *    any byte of it goes upstream.  A schedule that orders exchanges
 *    across connections (gate.h; docs/faults.md "Schedules") plugs in
 *    there: the gate keeps an exchange pending until its turn, then admits
 *    it (px_conn_admit); the bytes wait in the connection's buffer, and the
 *    client, waiting for a reply, sends nothing that could overtake them.
 *  - match (cfg_faults): an exchange whose statement or request line does
 *    not match, or that has none (tcp, a PostgreSQL startup), gets no
 *    fault and no latency.  Its roll is drawn all the same, so match
 *    never changes another exchange's roll.
 *  - Upstreams are dialled lazily, at the first exchange that is forwarded,
 *    so a `reset` on exchange 0 never reaches the upstream.  Protocols in
 *    which the server speaks first are therefore not supported.
 *  - A model upstream (model: in the config, docs/models.md) is answered
 *    inside the proxy by the stand-in (local.c), through a socketpair in
 *    place of a socket: every fault applies to it as to a real upstream,
 *    and its reply is a pure function of the exchange (its round, turn,
 *    key and occurrence) and the seed, or the plan's.
 *
 * Bands (one roll u in [0,1) per exchange, cut out of `rate` as in
 * seeds/000): u < rate*lost_reply -> lost_reply; then reset; then
 * duplicate; else none.  Latency is a second draw, uniform in
 * [latency_min_ms, latency_max_ms], applied before the request is forwarded.
 * Under a schedule (a set with a scheduled proxy, proxy_set_scheduled) the
 * latency of every proxy of the set is virtual: recorded in the trace
 * (latency_ms) and a plan, not slept, since each gate waits for every live
 * turn anyway and the schedule opens the window the latency stands for;
 * faults.latency_real keeps a proxy's latency on the clock.
 */
#ifndef SOAK_PROXY_H
#define SOAK_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/config.h"
#include "common/fault.h"
#include "common/trace.h"

struct proxy_set;
struct plan;
struct plan_proxy;

/*
 * Starts listeners on 127.0.0.1 ephemeral ports for each of cfg->proxies x
 * actors: the turns, then the nservices names of services[] (actors
 * turns.. turns + nservices - 1; NULL with 0: none).  upstreams[i] is
 * proxy i's resolved upstream: "host:port" or
 * "unix:/abs/path" (the worker has already turned service:NAME and
 * database into one of those).  dbinfo is the libpq conninfo of the
 * database, for the lock-wait probes of scheduled proxies in front of it
 * (NULL: none).  Each decision is appended as one JSON line to trace_path
 * (created/truncated; NULL = no trace).
 */
/*
 * With a plan (NULL: none), the set makes the plan's decisions
 * (docs/plan.md) instead of the seed's: faults by (round, turn, key,
 * occurrence), each scheduled proxy's steps in the plan's order; then_seed:
 * on a divergence, go on under the seed's own scheduler instead of
 * stopping.  plan stays the caller's and must outlive the set.
 */
struct proxy_set	*proxy_set_open_cfg(const struct cfg *cfg,
			    char *const *upstreams, const char *dbinfo,
			    int turns, const char *const *services,
			    size_t nservices, uint64_t seed, const struct plan *plan,
			    bool then_seed, const char *trace_path, char *err);
/*
 * Whether a plan diverged (docs/plan.md): 1 and why (the step, what the
 * plan wanted, what was waiting, the nearest match) into buf; 0 not.
 * Any thread.
 */
int			 proxy_set_diverged(struct proxy_set *ps, char *buf,
			    size_t len);
/*
 * Round `round` begins: runs[t] says whether turn t runs in it (NULL:
 * every turn).  Its connections' exchanges are keyed in that round.  A schedule waits for exactly the turns that run and have not
 * exited, whatever their connections (gate.h): a turn that runs one
 * `psql -c` per statement is waited for between its statements.  Call
 * before spawning the round's turns.  Any thread; NULL is a no-op.
 */
void			 proxy_set_round(struct proxy_set *ps, int round,
			    const bool *runs);
/*
 * The caller will tell every turn's process as it starts
 * (proxy_set_turn_started): until it has, a schedule waits for a live turn
 * as for one that runs.  Without this call a turn's processes are not
 * looked at (a turn is waited for until it has an exchange held: `soak
 * proxy`, tests).  Before the first round; NULL is a no-op.
 */
void			 proxy_set_actors(struct proxy_set *ps);
/*
 * Turn t of the round was started as process pid, the leader of its own
 * process group: a schedule judges from then on whether the turn can still
 * send by what /proc shows of that group (gate.h "Actors").  Any thread;
 * NULL is a no-op.
 */
void			 proxy_set_turn_started(struct proxy_set *ps, int turn,
			    pid_t pid);
/*
 * The set's k-th service through the seam was started for this seed as
 * pid, the leader of its own process group: a schedule judges from then on
 * when it is quiet (docs/faults.md "Services under a schedule"), lets its
 * requests go one at a time, and holds its statements as the turns' whose
 * requests they serve.  Until told, its statements pass unheld (bypass).
 * Any thread; NULL is a no-op.
 */
void			 proxy_set_service_started(struct proxy_set *ps,
			    size_t k, pid_t pid);
/*
 * Turn t of the round has exited (reaped), or could not be started: no
 * schedule waits for it any more.  Any thread; NULL is a no-op.
 */
void			 proxy_set_turn_exited(struct proxy_set *ps, int turn);
/*
 * when: steps (docs/config.md): every scheduled proxy of the set calls
 * fn(arg, round, step) between steps at which none of its turns has a
 * transaction open (gate.h, gate_set_step_check), on the set's thread.
 * Call before the first round.  NULL ps is a no-op.
 */
void			 proxy_set_step_check(struct proxy_set *ps,
			    int (*fn)(void *arg, int round, uint32_t step), void *arg);
/* How many checks between steps its proxies have run (any thread). */
uint32_t		 proxy_set_step_checks(const struct proxy_set *ps);
/*
 * What the set's schedules waited for their actors so far (gate.h,
 * gate_stats): the sum over the steps of every scheduled proxy, and the
 * longest single wait with its proxy and step.  Any thread; zeros for NULL
 * or a set without a schedule.
 */
struct proxy_waits {
	uint64_t	 wait_ms;
	uint32_t	 steps;
	uint32_t	 max_ms;
	uint32_t	 max_step;
	char		 max_proxy[64];
};
void			 proxy_set_waits(struct proxy_set *ps, struct proxy_waits *out);
/* Whether the set has a scheduled proxy. */
bool			 proxy_set_scheduled(const struct proxy_set *ps);
/* "127.0.0.1:PORT" of proxy i's listener for actor a (a turn, or turns + k
 * for the k-th service); NULL out of range. */
const char		*proxy_set_addr(const struct proxy_set *ps, size_t proxy,
			    int actor);
/*
 * Closes every listener and connection, joins the thread, flushes and
 * closes the trace.  NULL is a no-op.
 */
void			 proxy_set_close(struct proxy_set *ps);

/*
 * A model stand-in's script (upstream: model:FILE, docs/models.md), read
 * as the proxy reads it: 0 with how many patterns and alternatives it
 * has, or -1 with err "FILE:LINE:COL: KEY: problem".  For soak check.
 */
int			 proxy_model_check(const char *path, size_t *patterns,
			    size_t *alternatives, char *err);

/*
 * Cassettes (docs/models.md "Record once, replay by seed"):
 * proxy_cassette_check reads FILE as a replaying proxy does (0 with how
 * many request keys and replies it holds, or -1 with err);
 * proxy_cassette_merge folds the parts the workers of a run wrote
 * (FILE.part-*) into FILE, after the run, and says what it holds then.
 */
int			 proxy_cassette_check(const char *path, size_t *keys,
			    size_t *replies, char *err);
int			 proxy_cassette_merge(const char *path, size_t *keys,
			    size_t *replies, char *err);
/*
 * Whether a replaying proxy met a request its cassette has no answer for
 * (the seed is infra/cassette, never a silent pass-through): 1 and which
 * (the proxy, the turn, the request, its key) into buf; 0 not.  Any thread.
 */
int			 proxy_set_missed(struct proxy_set *ps, char *buf,
			    size_t len);

/* ---- lower level: used by `soak proxy`, tests and benchmarks ---- */

/* What the proxy did: every one of common/fault.h's kinds, whose names
 * (fault_name) the trace writes. */
enum proxy_fault {
	PROXY_FAULT_NONE = FAULT_NONE,
	PROXY_FAULT_LOST_REPLY = FAULT_LOST_REPLY,
	PROXY_FAULT_RESET = FAULT_RESET,
	PROXY_FAULT_DUPLICATE = FAULT_DUPLICATE,
	PROXY_FAULT_BLACKHOLE = FAULT_BLACKHOLE,
	PROXY_FAULT_STATUS = FAULT_STATUS,
	PROXY_FAULT_STREAM_CUT = FAULT_STREAM_CUT,
	PROXY_FAULT_STREAM_STALL = FAULT_STREAM_STALL,
	PROXY_FAULT_CLOSE_AFTER = FAULT_CLOSE_AFTER,
	PROXY_FAULT_MAX = FAULT_MAX
};

/* One listener: a proxy as seen by one actor (a turn, or a service). */
struct proxy_listen {
	const char		*name;		/* proxy name, keys the rolls */
	size_t			 proxy;		/* index, for trace ordering */
	int			 turn;		/* the actor's index */
	/* a service's name (copied; NULL: a turn's listener): its exchanges
	 * are traced with it, never held by a schedule, and hold `live` only
	 * while one is open (proxy_set_settle) */
	const char		*service;
	/* the set's service through the seam this proxy's upstream is, plus
	 * one (0: none): its gate lets the service's requests go one at a
	 * time, each until the service is quiet (proxy_set_service_started) */
	int			 front;
	const char		*listen;	/* "host:port", port 0 = ephemeral */
	const char		*upstream;	/* "host:port", "unix:/path", or
						   "model:/path": the stand-in's
						   script, loaded at the open */
	enum cfg_protocol	 protocol;
	const struct cfg_faults	*faults;	/* copied */
	/* NULL or not enabled: unscheduled; listeners of one proxy index
	 * share one scheduler (fault-proxy/sched.h), copied */
	const struct cfg_schedule *schedule;
	/* scheduled PostgreSQL proxies: a libpq conninfo of the upstream on
	 * which soak asks pg_blocking_pids() whether an admitted exchange
	 * waits on a lock (NULL: the schedule's blocked timeout decides) */
	const char		*lockinfo;
	/* under a plan (docs/plan.md): this proxy's decisions (plan may be
	 * NULL with planned: none for it) and what a divergence does */
	bool			 planned;
	const struct plan_proxy	*plan;
	bool			 then_seed;
	/*
	 * A model API (docs/models.md): replay answers from that cassette,
	 * nothing dialled; else record (a cassette whose part this process
	 * writes as the set closes) or tls (tls_name: SNI and the name the
	 * certificate must have, tls_ca: a CA file or NULL for the system's)
	 * carry each request to the upstream over a bridge, api_key (a
	 * secret, copied, never logged; NULL: none) in place of the turn's.
	 */
	const char		*replay;
	const char		*record;
	bool			 tls;
	const char		*tls_name;
	const char		*tls_ca;
	const char		*api_key;
};

/*
 * The pure decision for one exchange.  With a status fault, the status
 * the proxy answers (cfg_faults.statuses); with a stream fault, the
 * events let through before it (after, 1..) and a stall's length.  Every
 * parameter is drawn whatever the band, after the band and the latency,
 * so neither moves when a config adds these faults.
 */
struct proxy_roll {
	enum proxy_fault	 fault;		/* none, lost_reply, reset, duplicate,
						   status, stream_cut or stream_stall */
	int64_t			 latency_ms;
	int			 status;
	uint32_t		 after;
	int64_t			 stall_ms;
};
void			 proxy_roll(const struct cfg_faults *f, uint64_t seed,
			    const char *name, int turn, uint32_t conn,
			    uint32_t exchange, struct proxy_roll *out);
/*
 * The roll of an exchange at a scheduled proxy, keyed by what it hits
 * instead of by connection and exchange numbers: (turn, round, key,
 * occurrence), the occurrence counted in admission order (gate.h).  A
 * turn's connections open at once are numbered in the order they connect,
 * which threads race for; what a step hits, and when it is admitted, are
 * the schedule's.
 */
void			 proxy_roll_hit(const struct cfg_faults *f, uint64_t seed,
			    const char *name, int turn, int round, uint64_t key,
			    uint32_t occ, struct proxy_roll *out);
/* Whether connection `conn` is blackholed (its own roll, exchange key ~0). */
bool			 proxy_roll_blackhole(const struct cfg_faults *f,
			    uint64_t seed, const char *name, int turn,
			    uint32_t conn);

#define PROXY_SQL_LEN	96		/* a statement summary, with its NUL */

/* One trace record: what happened to one exchange. */
struct proxy_trace_rec {
	size_t			 proxy;
	const char		*name;
	int			 turn;
	/* a service's exchange (the listener's service name), or NULL; bypass:
	 * at a scheduled proxy, one a turn's would have been held for (not a
	 * PostgreSQL start-up, nor a message without reply) that passed
	 * unscheduled */
	const char		*service;
	bool			 bypass;
	/* a request to a service through the seam that its gate let go of
	 * once the service was quiet, before its reply (the trace's
	 * "served":"quiet"): the next request was not held to this reply */
	bool			 served;
	/* ... not quiet but in a wait that ends by itself while a gate held
	 * what it asked (Node's timers), `arrival` after the request was let
	 * go ("served":"arrival"): a decision of the clock's, counted forced */
	bool			 served_forced;
	uint32_t		 conn;
	uint32_t		 exchange;
	enum proxy_fault	 fault;
	int64_t			 latency_ms;
	uint64_t		 bytes_up;	/* request bytes forwarded upstream */
	uint64_t		 bytes_down;	/* reply bytes passed to the client */
	bool			 upstream_saw;
	bool			 client_got_reply;
	/* what its fault did (0 for another): the status the proxy answered
	 * (status), the events let through before a stream fault
	 * (stream_cut, stream_stall) and how long the stall lasted */
	int			 status;
	uint32_t		 after;
	int64_t			 stall_ms;
	/* What it hit (docs/plan.md): its round, and when keyed its key and
	 * occurrence among the turn's exchanges of that key in the round;
	 * an HTTP exchange's request line as keyed ("POST /refunds/{}") */
	int			 round;
	bool			 keyed;
	uint64_t		 key;
	uint32_t		 occ;
	char			 req[PROXY_SQL_LEN];
	/* Under a plan: static "unplanned", "lock-deferred" (the plan's step
	 * deferred is deferred), "after divergence"; NULL: as planned */
	const char		*plan;
	uint32_t		 deferred;
	/* PostgreSQL framing only (pg NULL otherwise: no more fields) */
	const char		*pg;		/* exchange kind: startup, simple... */
	char			 sql[PROXY_SQL_LEN];	/* statement's first words */
	char			 tx;		/* ReadyForQuery status I/T/E, or 0 */
	const char		*note;		/* static: what passed unframed */
	/* Scheduled proxies only (step 0 otherwise: no more fields) */
	uint32_t		 step;		/* admission order, 1, 2, ... */
	uint64_t		 cand;		/* turns waiting at that step (bit t) */
	/* the lane of the turn's connection it came on (gate.h "Actors";
	 * the trace's "lane" when not 0); the actors waiting at that step
	 * when one was on a lane other than 0 ("acand": bit lane * turns +
	 * turn; acand_cut: one did not fit in 64 bits); lane_tie: two of a
	 * turn's new connections asked the same and got their lanes in
	 * arrival order */
	int			 lane;
	uint64_t		 acand;
	bool			 acand_cut;
	bool			 lane_tie;
	/* what it ran, for soak explore's reduction (stmtkey.h sk_class):
	 * static "read", "begin", "session", "other"; NULL: not known */
	const char		*cls;
	const char		*forced;	/* static: a timeout decided, or NULL */
	/* forced: the live turns it did not wait for (bit t), which had
	 * nothing at any proxy of the set for `arrival` (or, "outside", while
	 * PostgreSQL showed a wait outside the proxy) */
	uint64_t		 idle;
	/* PostgreSQL said it waited on a lock (pg_blocking_pids), held by
	 * these turns (bit t; 0: by no turn of this proxy) */
	bool			 lock_wait;
	uint64_t		 waits_on;
	/* scheduled proxies: another connection of its turn was open at
	 * this proxy with its own (a turn of threads, a pool): which of the
	 * two the turn sent on first was its own choice, not the schedule's;
	 * a turn that opens one at a time (a psql -c per statement) is not
	 * marked */
	bool			 overlap;
	/* a deadlock ended this exchange's statement: soak's (its victim, by
	 * soak's rule) or postgres's (PostgreSQL's own detector) */
	enum trace_deadlock	 deadlock;
	/* it ended a transaction while these turns' exchanges (bit t, two
	 * or more) waited on its locks: PostgreSQL's order wakes them */
	uint64_t		 wakes;
	/* static: why the connection closed while this exchange was open
	 * (engine_int.h enum px_close), or NULL */
	const char		*closed;
	/*
	 * Answered by a model stand-in (docs/models.md): the pattern's name
	 * (the script's, alive while the set is) or what the stand-in met
	 * ("(no pattern)", "(not a model request)"); with has_alt, the
	 * alternative it answered and a streamed reply's events.  NULL: none.
	 */
	const char		*model;
	bool			 has_alt;
	uint32_t		 alt;
	uint32_t		 events;
};
/*
 * Formats one JSON line (with '\n') into buf; returns its length, or -1 if
 * it does not fit.  Field order is fixed:
 * {"proxy","turn","conn","exchange","fault","latency_ms","bytes_up",
 *  "bytes_down","upstream_saw","client_got_reply"}, then what its fault
 * did: "status" (a status fault's), "after" (a stream fault's events) and
 * "stall_ms" (a stall's), then "service" and "bypass" (true) for a
 * service's exchange, then "round" (when
 * not 0 or when keyed), "key", "occ" and "req" when keyed, "plan" (and
 * "deferred") under a plan when not as planned, and for a PostgreSQL
 * exchange then "pg", "sql" (when there is a statement), "tx" (when
 * ReadyForQuery came), "note" (when something passed unframed).  A
 * scheduled exchange has "step" and "cand" before "pg", then "forced"
 * when a timeout decided (and "idle", the turns it went without, a hex
 * mask, when it went without any), "waits_on" when PostgreSQL said it
 * waited on a lock, "overlap" (true) when another connection of its turn
 * was open with its own, "deadlock" when a deadlock ended its statement
 * and "wakes" when its end woke several lock waiters.  An exchange a model
 * stand-in answered has "model" (the pattern) and "alt" (the
 * alternative), and "events" for a streamed reply, after "plan".  Last of
 * all, "closed" when its connection closed while it was open.
 */
/*
 * Compares the scheduled steps of two fault traces (a run's and another
 * attempt's, JSON lines; `again` names the other: "this replay", "the
 * re-run") proxy by proxy, by name, step by step: a step is the same when
 * the same exchange (turn, lane, occurrence: the schedule's numbering)
 * was admitted with the same turns and actors waiting (cand, acand), the same statement (sql, else the exchange kind),
 * the same `forced`, `waits_on` and `deadlock`.  A trace that ends with
 * a cut's marker line (worker/detail.h) is compared as far as it was kept,
 * and past that by the marker's "schedule" ({"db": {"steps": N, "digest":
 * HEX}}, proxy_cov_schedule): the whole schedule, never a guess.
 * Returns 0 the same (out "the same as the run's, all 24 steps"; "" when
 * neither trace has a scheduled step), 1 they differ (out says where and
 * both sides: "left the run's at step 13 of proxy db: the run admitted turn
 * 2 (conn 0, exchange 3: UPDATE ...) with turns {0,2} waiting; this replay
 * admitted ... (they differ in the turns waiting)", or "the same for 12
 * steps, then the run took 12 more (the first, ...)"), 2 the same as far as
 * a cut trace without digests was kept ("the rest was not compared"), -1 a
 * trace that does not read or is not a schedule soak wrote (a step twice
 * or missing, a connection's exchanges out of step order), said in out.
 */
int			 proxy_schedule_diff(const char *run, size_t runlen,
			    const char *replay, size_t replaylen, const char *again,
			    char *out, size_t outlen);
/* "{0,2,3}": the turns of a mask (bit t), for people; returns buf. */
const char		*proxy_turn_set(uint64_t mask, char *buf, size_t len);
/*
 * The interleaving of a fault trace (JSON lines) for people: for each
 * scheduled proxy (in name order) a header, "schedule of proxy db (12
 * steps, pct):" (the mode from cfg's proxy of that name; cfg may be NULL),
 * then one line per step in step order — step, turn, the statement head
 * (`sql`, else the exchange kind in parentheses) and, when the trace says
 * so, "[forced: arrival|blocked]", "[waits on turns {0,2}]" (waits_on),
 * "[deadlock: soak|postgres]" and "[fault: KIND]" (a fault other than none).  A proxy with more than limit
 * steps (limit 0: no limit) shows its first (limit + 1) / 2 and last
 * limit / 2 steps around "… N more steps".  Returns the text (malloc'd;
 * "" when no line of the trace has a step), or NULL with err filled when a
 * line is not a JSON object.
 */
char			*proxy_schedule_show(const char *trace, size_t len,
			    const struct cfg *cfg, size_t limit, char *err);
int			 proxy_trace_format(const struct proxy_trace_rec *r,
			    char *buf, size_t len);

/*
 * What a seed's proxies did (docs/report.md "coverage"), counted from its
 * fault trace one line at a time, so a trace of any length costs little
 * memory: proxy_cov_line for each line (-1 with err on a line that is not a
 * JSON object), or proxy_cov_file for a whole file.  proxy_cov_json: {"db":
 * {"exchanges", "connections" (distinct (turn, conn) numbers, counted as
 * each turn's highest conn + 1), "faults": {"lost_reply": n, ...} (the
 * trace's fault other than none), "latency" (exchanges delayed, latency_ms
 * > 0), "steps" (scheduled), "forced": {"arrival": n, ...}, "idle": {"3":
 * n} (per turn, the arrival decisions that went without it), "lock_waits"
 * (lines with waits_on), "deadlocks": {"soak": n, "postgres": n},
 * "bypassed": {"tools": n} (per service, its exchanges with "bypass"),
 * "serialized" (steps that admitted a request that is not a PostgreSQL
 * statement while another turn's waited: worker/explore.c's rule, the
 * service behind it never ran two at once)}}, zeros
 * left out, one key per proxy that has a line.  proxy_cov_schedule: the
 * scheduled proxies' whole schedules, {"db": {"steps": N, "digest": "16 hex
 * digits"}}, for a cut trace's marker line (proxy_schedule_diff).  Both
 * return new references.
 */
struct proxy_cov;
struct proxy_cov	*proxy_cov_new(void);
int			 proxy_cov_line(struct proxy_cov *c, const char *line,
			    size_t len, char *err);
int			 proxy_cov_file(struct proxy_cov *c, const char *path,
			    char *err);
json_t			*proxy_cov_json(const struct proxy_cov *c);
json_t			*proxy_cov_schedule(const struct proxy_cov *c);
void			 proxy_cov_free(struct proxy_cov *c);

/* Starts n listeners served by one thread; see proxy_set_open_cfg. */
struct proxy_set	*proxy_set_open(const struct proxy_listen *l, size_t n,
			    uint64_t seed, const char *trace_path, char *err);
/* The bound address of listener i ("127.0.0.1:PORT"). */
const char		*proxy_set_listener_addr(const struct proxy_set *ps,
			    size_t i);
/* Number of trace records so far (thread-safe); for tests. */
size_t			 proxy_set_trace_count(struct proxy_set *ps);

/* Connections and duplicate deliveries still holding sockets (a service's
 * connection only while an exchange of it is open); for tests. */
size_t			 proxy_set_live(struct proxy_set *ps);
/*
 * Waits until every turn's connection through the set has closed, every
 * duplicate delivery has finished and no service's connection is in an
 * exchange (a service's pool keeps its connections open across rounds),
 * so the data the invariants read holds every effect the faults caused,
 * and until the gates have acted on the worker's last word on its turns
 * (proxy_set_turn_exited), so that a plan's step a turn exited without is
 * a divergence proxy_set_diverged tells.
 * The worker calls it after a round's turns have exited.  0, or -1 if
 * something is still open after timeout_ms.
 */
int			 proxy_set_settle(struct proxy_set *ps, int timeout_ms);

/* Caps: what a connection may hold in memory. */
#define PROXY_BUF_CAP		(64 * 1024)	/* per direction */
#define PROXY_DUP_CAP		(1024 * 1024)	/* request copy for duplicate */
#define PROXY_HDR_CAP		(64 * 1024)	/* HTTP header block */
#define PROXY_HELLO_CAP		(16 * 1024)	/* pg start-up kept for duplicate */
#define PROXY_TRACE_CAP		1000000		/* records kept per set */
#define PROXY_CONNECT_MS	5000		/* upstream connect timeout */
#define PROXY_DUP_MS		5000		/* duplicate reply wait */
#define PROXY_ACCEPT_BACKOFF_MS	100		/* after EMFILE/ENFILE */

#endif
