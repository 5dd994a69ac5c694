/*
 * A result's detail, cut to fit one message.
 *
 * A failing seed's detail (worker/seedrun.c) grows with the seed: every
 * turn's outcome with its stdout and stderr tails, the broken invariants'
 * rows, the fault trace.  64 turns x 40 rounds made 10.7 MB, more than a message may carry,
 * and a worker that cannot encode its RESULT is a lost worker.  So the
 * detail sent is cut to MSG_DETAIL_MAX (common/msg.h), in this order of
 * what matters, each part within its own cap:
 *
 *	message, round, turn counts, workspace,
 *	config_error, coverage		never cut
 *	plan (DETAIL_PLAN_MAX)		whole; else without its "what" words
 *					(the statements' heads, for people);
 *					else left out, said in a marker
 *	invariants (DETAIL_INV_MAX)	every broken invariant's name, SQL,
 *					columns and row_count; then rows, the
 *					first row of each before the second of any
 *	turns (DETAIL_TURNS_MAX)	turns that ended abnormally (signal,
 *					timeout, exec, tempfail, killed), then
 *					the ones that exited non-zero, then the
 *					ok ones; each group in run order, kept in
 *					run order
 *	trace (DETAIL_TRACE_MAX)	the first whole lines
 *
 * Whole rows, turns and lines are kept or left out, so a cut never splits
 * a UTF-8 character (a turn's stdout and stderr tails are already tails of
 * at most TURN_TAIL_MAX bytes each, worker/spawn.c, and count in its cost).  What was left out is said twice: in place (an
 * invariant's "truncated": "truncated: N more rows"; a last trace line
 * {"truncated": "truncated: N more trace lines", "full_trace": PATH,
 * "schedule": {PROXY: {"steps": N, "digest": HEX}}}) and in
 * the detail's "truncated": {"markers": [..], "full_data": DIR}, DIR being
 * where the full data stays (DIR/detail.json: the detail before the cut;
 * the workspace with every turn's stdout.log, stderr.log and the full
 * trace.jsonl), or
 * null when the workspace was not kept.  docs/report.md shows the shape.
 *
 * Everything here is a function of its input: the same seed gives the same
 * detail.  The caps cover each part's data; the fields never cut and the
 * markers live in the rest (MSG_DETAIL_MAX / 16), and wrk_result_text
 * checks the total whatever happened.
 */
#ifndef SOAK_DETAIL_H
#define SOAK_DETAIL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/msg.h"

#define DETAIL_INV_MAX		(MSG_DETAIL_MAX / 4)		/* 256 KiB */
#define DETAIL_TURNS_MAX	(MSG_DETAIL_MAX / 16 * 6)	/* 384 KiB */
#define DETAIL_PLAN_MAX		(MSG_DETAIL_MAX / 16)		/* 64 KiB */
#define DETAIL_TRACE_MAX	(MSG_DETAIL_MAX / 4)		/* 256 KiB */

/* Bytes s[0..len) takes as a JSON string in jansson's output, quotes included. */
size_t	detail_str_cost(const char *s, size_t len);
/* Bytes v takes as compact JSON. */
size_t	detail_cost(const json_t *v);

/*
 * The broken invariants ([{name, sql, columns, rows, row_count}, ..]) cut
 * to budget bytes: a new array; each marker is appended to markers.
 */
json_t	*detail_trim_invariants(const json_t *invs, size_t budget, json_t *markers);
/* The turn outcomes cut to budget bytes: a new array; markers as above. */
json_t	*detail_trim_turns(const json_t *turns, size_t budget, json_t *markers);

/* The first lines of a fault trace that fit a budget, and how many did not. */
struct detail_trace {
	char		*text;		/* whole lines, valid UTF-8; heap */
	size_t		 len;
	uint64_t	 lines;		/* lines in text */
	uint64_t	 more;		/* lines left out */
	/* the whole schedules (proxy_cov_schedule), for the marker; owned,
	 * NULL: none */
	json_t		*schedule;
};

/*
 * Reads the trace file at path, keeping whole lines while the JSON string
 * they make costs at most budget bytes and counting the rest, so a trace of
 * any size costs budget bytes of memory.  0, or -1 with err.
 */
int	detail_trace_read(const char *path, size_t budget, struct detail_trace *t,
	    char *err);
void	detail_trace_free(struct detail_trace *t);
/* The trace as a JSON string: t's lines, then the marker line if lines were
 * left out (full_trace: where the whole file is, or NULL), with t's
 * "schedule" when it has one, so a cut trace is still compared whole
 * (proxy_schedule_diff). */
json_t	*detail_trace_json(const struct detail_trace *t, const char *full_trace,
	    json_t *markers);

/*
 * The detail to send: a new object, detail's fields with "invariants" and
 * "turns" cut to their caps and "trace" from t (NULL: none), plus
 * "truncated" when anything was left out.  full_dir is where the full data
 * is kept (NULL: not kept); the full trace is taken to be the workspace's
 * trace.jsonl.  detail is not changed: the caller keeps it as the full data.
 */
json_t	*detail_trim(const json_t *detail, const struct detail_trace *t,
	    const char *full_dir);

/*
 * The detail that replaces one that does not fit in max bytes (nbytes: its
 * size, 0 if it could not be encoded): the message saying it was dropped
 * and where the full data is, the round, the turn counts, the broken
 * invariants' names (the fingerprint), the config_error, the coverage,
 * and "truncated".
 */
json_t	*detail_minimal(const json_t *detail, size_t nbytes, size_t max);

#endif
