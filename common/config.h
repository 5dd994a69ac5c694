/*
 * The config file (docs/design.md, "The config"), parsed once with libyaml.
 *
 * Contract:
 *  - cfg_load_file / cfg_load_text fill *cfg or return -1 with err set to
 *    "FILE:LINE:COL: KEY: what is wrong" (LINE and COL 1-based, pointing at
 *    the offending key or value).  Unknown keys are errors.  A file that
 *    is not YAML says what the user did, at the mark that shows it ("a tab
 *    in the indentation: YAML indents with spaces only"), not libyaml's
 *    words ("found character that cannot start any token").
 *  - Relative paths (database.schema, commands whose first word contains a
 *    '/', unix: upstreams) are resolved against the config file's folder;
 *    cfg->dir holds that folder as an absolute path.
 *  - The coordinator ships cfg->text (the file as read) and cfg->path to
 *    workers, which call cfg_load_text with the same path, so both sides
 *    hold an identical struct cfg.
 *  - Durations, latency ranges, shares and byte counts follow the grammars
 *    of common/units.h, which the command line shares.
 *  - A tickets sink that would send a token (token_env set; any sink but
 *    file) to a url that is not https:// is refused at load, naming
 *    tickets.url, unless tickets.insecure_http is true.
 *  - cfg_free(NULL) is a no-op.
 */
#ifndef SOAK_CONFIG_H
#define SOAK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/seed.h"

enum cfg_reset	{ CFG_RESET_RECREATE, CFG_RESET_TRUNCATE };
enum cfg_ready	{ CFG_READY_NONE, CFG_READY_TCP };
/* Who binds a service's port: the service (SOAK_PORT) or soak (LISTEN_FDS). */
enum cfg_listen	{ CFG_LISTEN_PORT, CFG_LISTEN_SOCKET };
/* CFG_UP_MODEL: model:FILE, the model stand-in (docs/models.md), answered
 * by the proxy itself from the script FILE, nothing dialled. */
enum cfg_upstream { CFG_UP_HOSTPORT, CFG_UP_UNIX, CFG_UP_SERVICE, CFG_UP_DATABASE,
		    CFG_UP_MODEL };
enum cfg_protocol { CFG_PROTO_AUTO, CFG_PROTO_HTTP, CFG_PROTO_TCP, CFG_PROTO_POSTGRES };

/* Direction index for per-direction stream faults. */
#define CFG_UP		0	/* client -> upstream */
#define CFG_DOWN	1	/* upstream -> client */

struct cfg_service {
	char		 *name;
	char		**command;		/* argv, NULL-terminated, argv[0] resolved */
	enum cfg_ready	  ready;		/* default CFG_READY_TCP */
	int64_t		  ready_timeout_ms;	/* default 10s */
	enum cfg_listen	  listen;		/* default CFG_LISTEN_PORT */
	/*
	 * seam (default true): the service goes through the seam like a
	 * turn (docs/turns.md "What a service gets"): its PG*, DATABASE_URL
	 * and JDBC_DATABASE_URL name its own listener of the proxy in front
	 * of the database, it gets SOAK_PROXY_<NAME> of every proxy, and,
	 * since listeners are per seed, it is started after each seed's
	 * proxies open and stopped once the seed's rounds are over.  false:
	 * direct to the database, no SOAK_PROXY_*, once per worker.  A config
	 * without proxies has no seam: its services run once per worker.
	 */
	bool		  seam;
};

#define CFG_STATUSES_MAX	16		/* faults.statuses */
#define CFG_EVENTS_MAX		100000		/* cut_after, stall_after */

/* A proxy's faults' defaults, where the config and `soak proxy` start. */
#define CFG_FAULTS_DEFAULTS(f) do {					\
	(f)->hold_ms = 100;						\
	(f)->retry_after_ms = 1000;					\
	(f)->cut_after_min = (f)->stall_after_min = 1;			\
	(f)->cut_after_max = (f)->stall_after_max = 5;			\
	(f)->stall_min_ms = 1000;					\
	(f)->stall_max_ms = 3000;					\
} while (0)

struct cfg_faults {
	double		 rate;			/* share of exchanges faulted, 0..1 */
	double		 lost_reply;		/* bands, as shares of rate; sum <= 1 */
	double		 reset;
	double		 duplicate;
	double		 blackhole;		/* share of connections swallowed, 0..1 */
	/*
	 * The faults of an HTTP API (docs/faults.md "Faults of an HTTP
	 * API"), bands of rate like the three above.  status: the proxy
	 * answers the request itself with one of statuses (drawn by the
	 * seed; none listed: 429, 500, 529), Retry-After retry_after_ms on a
	 * 429, 503 or 529.  stream_cut: a streamed reply (server-sent
	 * events) cut after K events, K drawn in cut_after_min..max;
	 * stream_stall: one stopped after K events (stall_after_min..max)
	 * for stall_min..max_ms, then resumed.
	 */
	double		 status;
	double		 stream_cut;
	double		 stream_stall;
	int		 statuses[CFG_STATUSES_MAX];
	size_t		 nstatuses;
	int64_t		 retry_after_ms;	/* default 1s */
	uint32_t	 cut_after_min;		/* default 1..5 */
	uint32_t	 cut_after_max;
	uint32_t	 stall_after_min;	/* default 1..5 */
	uint32_t	 stall_after_max;
	int64_t		 stall_min_ms;		/* default 1s..3s */
	int64_t		 stall_max_ms;
	int64_t		 latency_min_ms;	/* "A..B" or one duration */
	int64_t		 latency_max_ms;
	/*
	 * latency_real: sleep the latency even when the seed has a schedule.
	 * Under a schedule (a proxy of the config with schedule:, fault-proxy/
	 * proxy.h) every proxy's latency is recorded, not slept: the schedule
	 * opens the window the clock would have.  A client timeout that must
	 * fire needs the real clock.
	 */
	bool		 latency_real;
	int64_t		 hold_ms;		/* lost_reply: reply held this long; default 100ms */
	int64_t		 bandwidth[2];		/* bytes/s per direction; 0 = unlimited */
	int64_t		 slice[2];		/* max bytes per write; 0 = off */
	int64_t		 slice_delay_ms;	/* pause between slices */
	int64_t		 close_after[2];	/* close after N bytes; 0 = off */
	/*
	 * POSIX extended regex on an exchange's statement (PostgreSQL) or
	 * request line (HTTP); NULL = every exchange.  Exchanges that do not
	 * match get neither a fault nor latency; the rolls stay keyed by
	 * exchange, so it never reshuffles the others.  Checked by regcomp
	 * at load; the proxy compiles its own copy.
	 */
	char		*match;
};

/*
 * A seeded schedule of the proxy's exchanges across all turns of a seed
 * (fault-proxy/sched.h): one exchange admitted at a time, the next chosen
 * by the scheduler among the turns that have one waiting.
 */
enum cfg_sched_mode { CFG_SCHED_PCT, CFG_SCHED_RANDOM };

struct cfg_schedule {
	bool			 enabled;
	enum cfg_sched_mode	 mode;		/* default pct */
	int			 depth;		/* pct: bug depth d, default 3 */
	int			 steps;		/* pct: bound k on steps a seed, default 200 */
	int64_t			 arrival_ms;	/* watchdog: a live turn that sent nothing, default 2s */
	int64_t			 blocked_ms;	/* an admitted exchange this long is taken
						   as waiting on a lock, default 500ms */
};

struct cfg_proxy {
	char			*name;		/* [A-Za-z0-9_]+ ; env SOAK_PROXY_<NAME upper> */
	enum cfg_upstream	 upstream_kind;
	char			*upstream;	/* "host:port", unix path (resolved), service name,
						   or the model script's path (resolved) */
	enum cfg_protocol	 protocol;	/* default auto */
	struct cfg_faults	 faults;
	struct cfg_schedule	 schedule;
	/*
	 * A real model API behind it (docs/models.md "Record once, replay by
	 * seed"): upstream: https://HOST[:PORT] is host:port (443 by default)
	 * with tls set and tls_name HOST (SNI and the certificate's name,
	 * checked against the system's CAs, or tls_ca's: a PEM file,
	 * resolved).  api_key_env names the variable of soak's own
	 * environment whose value the proxy puts in each request in place of
	 * the turn's dummy key (https only).  record: the cassette it writes
	 * (each worker a part, merged after the run); replay: the cassette
	 * it answers from, nothing dialled.  Paths resolved; NULL: none.
	 */
	bool			 tls;
	char			*tls_name;
	char			*tls_ca;
	char			*api_key_env;
	char			*record;
	char			*replay;
};

struct cfg_invariant {
	char		*name;
	char		*sql;
	int		 line;			/* where it was defined, for messages */
	/*
	 * when: steps -- also checked between the steps of a scheduled proxy
	 * at which none of its turns has a transaction open (docs/config.md);
	 * false (when: rounds, the default): after each round only.
	 */
	bool		 steps;
};

/*
 * Where a key's value stands in the file, 1-based, for the messages that
 * come after the load (soak check's commands and SQL, a run's config
 * errors).  key is the dotted path of messages: "turn.command",
 * "invariants[1].sql", "services[0]".  Every key the file holds has one,
 * and every item of a list.
 */
struct cfg_mark {
	char		*key;
	int		 line, col;
};

/* A command of the config: setup, services[i].command, turn.command. */
struct cfg_command {
	char		 *key;			/* "services[0].command" */
	char *const	 *argv;			/* the field's own, borrowed */
	bool		  one_string;		/* written as one string: one
						   program name, never split */
};

struct cfg_tickets {
	char		 *sink;			/* file | github | gitlab | jira | webhook; default file */
	char		 *url;			/* API base / webhook URL */
	char		 *repo;			/* github: owner/name */
	char		 *project;		/* gitlab: id or path; jira: key */
	char		 *token_env;		/* name of the env var holding the token */
	char		 *user_env;		/* jira: env var with the user (basic auth) */
	char		 *issue_type;		/* jira; default "Bug" */
	char		**labels;		/* NULL-terminated, may be NULL */
	bool		  infra;		/* file one infra ticket per run */
	bool		  insecure_http;	/* a token may go to an http:// url */
	/*
	 * minimize: before filing, the smallest failing seed of each
	 * fingerprint is minimized on a worker (a lease of its own kind,
	 * docs/tickets.md), within minimize_budget_ms each.
	 */
	bool		  minimize;
	int64_t		  minimize_budget_ms;	/* default CFG_MINIMIZE_BUDGET_MS */
	bool		  enabled;		/* the section was present */
};
#define CFG_MINIMIZE_BUDGET_MS	(5 * 60 * 1000)
/* regressions_explore_budget: its default and its most (executions) */
#define CFG_REGRESS_EXPLORE_BUDGET	200
#define CFG_REGRESS_EXPLORE_MAX		100000

struct cfg {
	char			 *path;		/* as given */
	char			 *dir;		/* absolute folder of the file */
	char			 *text;		/* the file's bytes, NUL-terminated */
	size_t			  text_len;

	char			 *name;		/* required */
	struct seed_range	  seeds;	/* default 0..199 */
	int			  turns;	/* default 8, 1..1024 */
	int			  rounds;	/* default 1, 1..10000 */
	int64_t			  seed_timeout_ms; /* default 60s */
	int			  retries;	/* infra retries; default 2 */
	bool			  confirm;	/* re-run each distinct failure's
						   smallest seed once; default true */

	char			 *db_url;	/* NULL/"" = embedded */
	char			 *db_schema;	/* resolved path of DDL file, or NULL */
	enum cfg_reset		  db_reset;
	/*
	 * The proxy whose listener a turn's PGHOST, PGPORT, DATABASE_URL and
	 * JDBC_DATABASE_URL name (worker/env.h): the index of a proxy with
	 * upstream: database, or -1 for the database itself.  database.proxy
	 * names it (none: -1); without the key, the first proxy in front of
	 * the database in file order, -1 when there is none.
	 */
	int			  db_proxy;
	bool			  db_proxy_named;	/* database.proxy was given */
	/*
	 * The proxy whose listener a turn's OPENAI_BASE_URL and
	 * ANTHROPIC_BASE_URL name (worker/env.h, docs/models.md): the first
	 * in file order with a model upstream, record or replay, -1 when
	 * there is none.
	 */
	int			  model_proxy;

	struct cfg_service	 *services;
	size_t			  nservices;
	struct cfg_proxy	 *proxies;
	size_t			  nproxies;

	char			**setup;	/* argv or NULL */
	int64_t			  setup_timeout_ms; /* default 30s */
	char			**turn_command;	/* required */
	int64_t			  turn_timeout_ms;  /* default 30s */

	struct cfg_invariant	 *invariants;
	size_t			  ninvariants;
	int64_t			  invariant_timeout_ms; /* statement timeout; default 10s */

	int64_t			  guard_min_ok;	/* count, or percent when guard_percent */
	bool			  guard_percent;
	bool			  guard_set;	/* guard.min_ok_turns was given */

	struct cfg_tickets	  tickets;
	/*
	 * The folder of pinned plans that run before the seeds
	 * (common/regress.h): regressions: resolved against the config's
	 * folder, or its regressions/ by default; regressions_set when the
	 * key was given (then the folder must exist).
	 */
	char			 *regressions;
	bool			  regressions_set;
	/*
	 * regressions_explore_budget: the executions a regression whose plan
	 * diverged may take to explore its turns within its plan's
	 * preemptions (worker/regexplore.h); 0: such a regression is not
	 * explored, and ends infra/diverged.  Default
	 * CFG_REGRESS_EXPLORE_BUDGET, at most CFG_REGRESS_EXPLORE_MAX.
	 */
	int			  regress_explore_budget;

	struct cfg_mark		 *marks;	/* in file order */
	size_t			  nmarks;
	struct cfg_command	 *commands;	/* services, setup, turn */
	size_t			  ncommands;
	/*
	 * 0 after a load that succeeded.  A config kept though it did not
	 * load (cfg_load_file_keep): CFG_BROKEN_SOME, and a bit for each
	 * section that told a message, whose fields may be half filled (a
	 * list's failed items have NULL names; an invariant that failed may
	 * have no sql).  Every other field is as loaded, or its default.
	 */
	unsigned		  broken;
};

#define CFG_BROKEN_SOME		0x01
#define CFG_BROKEN_DATABASE	0x02
#define CFG_BROKEN_SERVICES	0x04
#define CFG_BROKEN_PROXIES	0x08
#define CFG_BROKEN_SETUP	0x10
#define CFG_BROKEN_TURN		0x20
#define CFG_BROKEN_INVARIANTS	0x40

/*
 * Every message of one load, for a person to read (soak check, run,
 * coordinator, replay): the loader goes on after a mistake where what
 * follows does not rest on it, so one look tells them all.  msg[] holds
 * the first 20 (err always gets the first); total counts them all.
 */
struct cfg_errors {
	char	**msg;
	size_t	  n, total;
};

int	cfg_load_file(const char *path, struct cfg *cfg, char *err);
/* cfg_load_file, keeping every message in *errs (NULL: only err). */
int	cfg_load_file_all(const char *path, struct cfg *cfg, char *err,
	    struct cfg_errors *errs);
/*
 * cfg_load_file_all, and with keep a file that is YAML but did not load
 * is kept as far as it loaded (cfg->broken says what failed) for checks
 * that go on past the loader's (soak check: commands and SQL).  Returns
 * -1 all the same; cfg_free it then.  A file that cannot be read or is
 * not YAML leaves *cfg empty.
 */
int	cfg_load_file_keep(const char *path, struct cfg *cfg, char *err,
	    struct cfg_errors *errs, bool keep);
/* The LINE and COL of a "PATH:LINE:COL: ..." message; 0 and 0 without. */
void	cfg_msg_where(const char *msg, const char *path, int *line, int *col);
/* One more message (kept while there is room, counted always). */
void	cfg_errors_add(struct cfg_errors *errs, const char *msg);
/* In file order, as path:LINE:COL: messages say (the loader's order). */
void	cfg_errors_sort(struct cfg_errors *errs, const char *path);
/* "who: message" a line each, and how many more; returns the total. */
int	cfg_errors_print(const struct cfg_errors *errs, FILE *f,
	    const char *who);
void	cfg_errors_free(struct cfg_errors *errs);
int	cfg_load_text(const char *path, const char *text, size_t len,
	    struct cfg *cfg, char *err);
void	cfg_free(struct cfg *cfg);
/* The byte offset of 1-based (line, col) in text, col counted in characters
 * and lines by "\n" (a mark's line and column, as messages give them). */
size_t	cfg_text_offset(const char *text, size_t len, int line, int col);

/*
 * The config text as soak writes and shows it (RUN_DIR/config.yaml, the
 * hash): every top-level database.url with its password replaced by "***"
 * (conninfo_redact, common/conninfo.h), every other byte as in text.
 * Redacted in place when the value stands verbatim in the file, else the
 * value is rewritten as one double-quoted scalar; the result is parsed
 * again and must read back as the redacted value, or the whole text is
 * withheld (a one-line YAML comment saying so) -- never a password.  For
 * text the loader accepted.  Heap; *lenp (may be NULL) gets the length.
 */
char	*cfg_text_redact(const char *text, size_t len, size_t *lenp);

/*
 * report.json's config.hash and the tickets' config hash: 64-bit FNV-1a
 * of cfg_text_redact(cfg->text), 16 lower-case hex digits.  A password
 * change leaves it as it was, and it reveals nothing of the password.
 */
#define CFG_HASH_LEN	17
void	cfg_hash_hex(const struct cfg *cfg, char out[CFG_HASH_LEN]);

/*
 * For the other YAML files soak reads (fault-proxy/model.h's scripts), in
 * this loader's words: cfg_yaml_problem says what libyaml's parser p met
 * as "FILE:LINE:COL: YAML: what you did" (a tab in the indentation, a
 * quote never closed); cfg_yaml_aliases: 0, or -1 with out naming the
 * first alias (refused, as here: a few nested ones cost gigabytes).
 */
struct yaml_parser_s;
void	cfg_yaml_problem(const struct yaml_parser_s *p, const char *file,
	    const char *text, size_t len, char *out, size_t size);
int	cfg_yaml_aliases(const char *file, const char *text, size_t len,
	    char *out, size_t size);

/* The mark of key's value, or NULL when the file does not hold key. */
const struct cfg_mark	*cfg_mark_find(const struct cfg *cfg, const char *key);
/*
 * Where character pos (1-based, PostgreSQL's PG_DIAG_STATEMENT_POSITION)
 * of invariants[i].sql stands in the file: exact for a literal block
 * (sql: |) and a one-line plain value, else the value's own mark; 0 for
 * pos 0.  *line and *col are 0 when the file has no such invariant.
 */
void	cfg_sql_where(const struct cfg *cfg, size_t i, long pos, int *line,
	    int *col);

/* The minimum number of ok turns the guard demands for one seed. */
int64_t	cfg_guard_floor(const struct cfg *cfg);
/*
 * The same for a seed of which only `ran` turns ran (a plan's runs,
 * docs/plan.md): a share of those, or a count scaled to them (rounded
 * up), so a plan of one turn can pass once its bug is fixed.
 */
int64_t	cfg_guard_floor_of(const struct cfg *cfg, int64_t ran);
/*
 * Whether a seed may pass with a round in which no turn succeeded: only
 * when the config says so, guard.min_ok_turns: 0 (or 0%).  Without a
 * guard such a round is a guard failure: it tested nothing (a turn that
 * cannot start its interpreter, a driver that is not installed).
 */
bool	cfg_guard_allows_idle_round(const struct cfg *cfg);
/* Whether service s goes through cfg's seam (cfg_service.seam, and a
 * proxy to go through). */
bool	cfg_service_seam(const struct cfg *cfg, const struct cfg_service *s);
/* How many of cfg's services do not go through the seam: started once
 * per worker, they keep their memory across seeds. */
size_t	cfg_services_direct(const struct cfg *cfg);

#endif
