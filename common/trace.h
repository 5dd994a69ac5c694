/*
 * The fault trace read back: one decoder of its lines, in the vocabulary
 * of its one writer (fault-proxy/roll.c, proxy.h proxy_trace_format).
 * Every reader of a trace decodes a line here — the schedule's comparison
 * and the coverage (fault-proxy/tracecmp.c), a trace's plan (plan.c),
 * an explore execution's steps (worker/xexec.c), a minimized plan's story
 * (worker/min_story.c), report.html's swimlane (coordinator/report_lanes.c)
 * — so a field soak did not write is refused the same way everywhere,
 * with a sentence that names it, never read as 0.
 *
 * The vocabulary: fault kinds are common/fault.h's; a deadlock's victim is
 * TRACE_DEADLOCK_*'s; a statement's key is 16 hex digits (docs/plan.md
 * "Keys"); a set of turns (cand, waits_on, wakes) is a 64-bit mask, bit t
 * for turn t, written as 1 to 16 hex digits ("a9": turns 0, 3, 5, 7).
 */
#ifndef SOAK_TRACE_H
#define SOAK_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/fault.h"

/* Who broke a deadlock by ending this exchange's statement (gate.h). */
enum trace_deadlock {
	TRACE_DEADLOCK_NONE,
	TRACE_DEADLOCK_SOAK,		/* soak's rule chose it and cancelled it */
	TRACE_DEADLOCK_POSTGRES,	/* PostgreSQL's own detector killed it */
	TRACE_DEADLOCK_MAX
};
/* "soak", "postgres" ("" for none, "?" out of range). */
const char	*trace_deadlock_name(enum trace_deadlock d);
/* The victim named s, "soak" or "postgres" exactly, or -1. */
int		 trace_deadlock_parse(const char *s, enum trace_deadlock *d);

/* A key as the trace and plans write it: 16 hex digits (buf 17+). */
const char	*trace_key_hex(uint64_t key, char *buf, size_t len);
/* Exactly 16 hex digits, either case, or -1. */
int		 trace_key_parse(const char *s, uint64_t *key);
/* A set of turns: 1 to 16 hex digits, or -1. */
int		 trace_turns_parse(const char *s, uint64_t *turns);

/*
 * One line of a trace, decoded.  Strings are borrowed from the line's
 * JSON (valid while it lives); a field the line does not have is NULL,
 * false or 0 (fault: FAULT_NONE; deadlock: TRACE_DEADLOCK_NONE).
 */
struct trace_line {
	const char		*proxy;
	int			 turn;		/* 0..: a turn, or a service's actor */
	/* a service's exchange: its name, and whether it passed a schedule
	 * unheld (fault-proxy/proxy.h); NULL, false: a turn's */
	const char		*service;
	bool			 bypass;
	/* "served":"quiet": a request to a service its gate let go of once
	 * the service was quiet, before its reply (fault-proxy/proxy.h) */
	bool			 served;
	bool			 served_forced;	/* "served":"arrival" */
	uint32_t		 conn, exchange;
	enum fault		 fault;
	int64_t			 latency_ms;
	bool			 upstream_saw, client_got_reply;
	int			 status;	/* a status fault's (400..599) */
	uint32_t		 after;		/* a stream fault's events */
	int64_t			 stall_ms;	/* a stream_stall's */
	int			 round;
	bool			 keyed;		/* key (and occ) are there */
	uint64_t		 key;
	uint32_t		 occ;
	const char		*req;		/* an HTTP request line as keyed */
	const char		*plan;		/* under a plan: "unplanned", … */
	uint32_t		 deferred;
	const char		*pg, *sql, *tx, *note;
	uint32_t		 step;		/* 0: not a scheduled exchange */
	bool			 has_cand;
	uint64_t		 cand;
	/* the turn's connection it came on (0 unless the turn had several
	 * open at once), and the actors waiting (bit lane * turns + turn;
	 * 0: cand says it all); acand_cut: more actors than 64 bits hold;
	 * lane_tie: lanes given in arrival order (fault-proxy/gate.h) */
	int			 lane;
	uint64_t		 acand;
	bool			 acand_cut, lane_tie;
	const char		*cls, *forced;
	bool			 lock_wait;	/* waits_on is there */
	uint64_t		 waits_on;
	enum trace_deadlock	 deadlock;
	uint64_t		 wakes;
	const char		*closed;
};

/*
 * Decodes o, one line of a trace that is not a cut's marker (a line
 * without "proxy": worker/detail.h): 0, or -1 with err naming the field
 * and what is wrong with it ("key: \"zz\" is not 16 hex digits").  proxy,
 * turn, conn and exchange must be there; every other field may be absent,
 * but one that is there must be what the writer writes: a known fault
 * kind, a whole number in its field's range, a key of 16 hex digits, a
 * set of turns of 1 to 16, a string where the writer puts a string.
 * Fields the writer does not know are left to the caller (a newer soak's).
 */
int		 trace_line_parse(const json_t *o, struct trace_line *l, char *err);

#endif
