/*
 * A plan: a seed's decisions as data (docs/plan.md).  Read from and
 * written to its JSON form here; made from a seed's fault trace
 * (plan_from_trace); followed by the proxies (fault-proxy/) and the worker
 * (the runs); compared, pinned and minimized by the commands.
 *
 * Every decision is keyed by what it hit: (round, turn, key, occurrence),
 * key being fault-proxy/stmtkey.h's (16 hex digits in the file:
 * common/trace.h trace_key_hex, trace_key_parse); a blackhole by (round,
 * turn, the turn's connection number in the round).
 */
#ifndef SOAK_PLAN_H
#define SOAK_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/fault.h"
#include "common/trace.h"

/*
 * 2: steps say their lane, and a scheduled proxy's occurrences count in
 * admission order (fault-proxy/gate.h "Actors").  Version 1 plans load:
 * their turns opened one connection at a time, so every step is on lane 0
 * and arrival order was admission order.
 */
#define PLAN_VERSION	2
#define PLAN_MAX_BYTES	(16u * 1024 * 1024)	/* a plan file, read whole */

/*
 * The faults a plan decides: common/fault.h's kinds but close_after (a
 * stream fault, applied as the config says), by their names there.
 */
enum plan_fault {
	PLAN_NONE = FAULT_NONE,			/* latency only */
	PLAN_LOST_REPLY = FAULT_LOST_REPLY,
	PLAN_RESET = FAULT_RESET,
	PLAN_DUPLICATE = FAULT_DUPLICATE,
	PLAN_BLACKHOLE = FAULT_BLACKHOLE,	/* of a connection: conn, no key */
	PLAN_STATUS = FAULT_STATUS,		/* with status */
	PLAN_STREAM_CUT = FAULT_STREAM_CUT,	/* with after */
	PLAN_STREAM_STALL = FAULT_STREAM_STALL,	/* with after and stall_ms */
	PLAN_FAULT_MAX = FAULT_CLOSE_AFTER
};

struct plan_fault_rec {
	int		 round, turn;
	uint64_t	 key;		/* PLAN_BLACKHOLE: unused */
	uint32_t	 occ;		/* PLAN_BLACKHOLE: the connection */
	enum plan_fault	 fault;
	int64_t		 latency_ms;
	/*
	 * An HTTP API fault's parameters (docs/plan.md): the status the
	 * proxy answers (PLAN_STATUS, 400..599), the events let through
	 * before a stream fault (1..CFG_EVENTS_MAX) and a stall's length
	 * (0..3600000 ms); 0 for the other kinds, which may not have them.
	 */
	int		 status;
	uint32_t	 after;
	int64_t		 stall_ms;
	/*
	 * A model stand-in's answer to the exchange (docs/models.md): its
	 * script's alternative `reply` of the pattern the request matches;
	 * 0, the first, is what an exchange the plan does not name gets.
	 */
	uint32_t	 reply;
	char		*what;		/* for people; NULL */
	bool		 used;		/* a replay: it was applied */
};

struct plan_step {
	int		 round, turn;
	/* the turn's connection it came on, by the gate's numbering of the
	 * connections a turn has open at once (0 for a turn of one at a
	 * time; "lane" in the file when not 0) */
	int		 lane;
	uint64_t	 key;
	uint32_t	 occ;
	char		*what;
	uint64_t	 waits_on;	/* turns (bit t), as reported then */
	bool		 lock_wait;
	/* the turns whose exchange was held when this step was chosen (bit
	 * t; the trace's "cand"), when the plan says (has_cand): what
	 * `soak minimize` calls a preemption is read from it */
	uint64_t	 cand;
	bool		 has_cand;
	char		*deadlock;	/* "soak", "postgres" or NULL */
};

struct plan_proxy {
	char			*name;
	struct plan_fault_rec	*faults;
	size_t			 nfaults;
	struct plan_step	*steps;
	size_t			 nsteps;
	/*
	 * An explorer's prefix, never read from or written to a file
	 * (worker/explore.h): the steps are followed strictly and alone (an
	 * exchange they do not name waits, and one that cannot come is a
	 * divergence); after the last, the turn that went last goes on while
	 * it has an exchange waiting, else the lowest turn that has one: the
	 * extension preempts no turn.
	 */
	bool			 prefix;
};

struct plan {
	uint64_t		 seed;
	char			*config;	/* the config's name then, or NULL */
	int			 turns, rounds;
	bool			*runs;		/* rounds x turns, round-major; NULL: all */
	struct plan_proxy	*proxies;
	size_t			 nproxies;
	char			*fingerprint;	/* the failure it was made of, or NULL */
	char			*message;
	/*
	 * The failure as `soak pin` records it (docs/plan.md "Regressions"):
	 * its reason, the invariants it broke (names), and the command that
	 * replays the pinned file; where it was pinned from (the run, the
	 * file).  Each NULL / 0 when absent.
	 */
	char			*reason;
	char			**invariants;
	size_t			 ninvariants;
	char			*replay;
	char			*pinned_run;
	char			*pinned_from;
	/* soak pin --refresh: the SHA-256 of the plan it replaced */
	char			*pinned_replaced;
};

/*
 * A planned fault's kind and parameters in words, into buf: "lost_reply",
 * "status 429", "stream_cut after 3", "stream_stall after 3 for 1500 ms".
 * Returns buf.
 */
const char		*plan_fault_words(const struct plan_fault_rec *f, char *buf,
			    size_t len);

/* The text of a plan file; -1 with err naming what is wrong and where. */
int			 plan_parse(const char *text, size_t len, const char *what,
			    struct plan *p, char *err);
int			 plan_load(const char *path, struct plan *p, char *err);
/* Its JSON (with a trailing newline), malloc'd. */
char			*plan_dump(const struct plan *p);
int			 plan_save(const struct plan *p, const char *path, char *err);
void			 plan_free(struct plan *p);
/* A deep copy of src into dst (through its JSON form). */
void			 plan_copy(const struct plan *src, struct plan *dst);

/*
 * A plan of a seed's fault trace (JSON lines; the whole trace, not a cut
 * detail's): its faults and scheduled steps; the config's turns and rounds,
 * every turn running.  Lines without a key (a trace written by an older
 * soak) make it fail with err saying so.
 */
int			 plan_from_trace(const char *trace, size_t len, uint64_t seed,
			    const char *config, int turns, int rounds,
			    struct plan *p, char *err);

struct cfg;
/*
 * Whether cfg can run p: no more turns or rounds than cfg has, every proxy
 * of p in cfg (by name), every scheduled one scheduled.  A changed config
 * (a fix) runs a plan by these, not by its hash.  -1 with err.
 */
int			 plan_fits(const struct plan *p, const struct cfg *cfg,
			    char *err);
/*
 * A plan that came from another process (a worker's minimized plan, an
 * explore record's failing schedule) as JSON, before anyone writes it or
 * suggests replaying it: it parses (plan_parse, what naming it in err), is
 * of seed, and fits cfg (plan_fits).  0 with *out the plan (when out is
 * not NULL; plan_free it), or -1 with err.
 */
int			 plan_check(const json_t *o, const struct cfg *cfg, uint64_t seed,
			    const char *what, struct plan *out, char *err);
/* Whether (round, turn) runs under p: all of p's turns and rounds when
 * it lists no runs; true when p is NULL. */
bool			 plan_runs(const struct plan *p, int round, int turn);
/* Turns of round r that run; at most turns. */
int			 plan_turns_in(const struct plan *p, int round);
/* Whether p runs any turn at all: a plan file always does (plan_parse
 * refuses "runs": []), a plan made in memory (a candidate) may not. */
bool			 plan_runs_any(const struct plan *p);
const struct plan_proxy	*plan_proxy(const struct plan *p, const char *name);

#endif
