/*
 * report.html's parts, between report_html.c (the page: header, grid,
 * failures, coverage, since last time) and report_lanes.c (the pictures
 * over time: a seed's swimlane and schedule, the worker timeline).
 * Private to those two files.
 */
#ifndef SOAK_REPORT_HTML_INT_H
#define SOAK_REPORT_HTML_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/seed.h"
#include "common/util.h"
#include "coordinator/report_html.h"

struct rh {
	FILE			*f;
	const char		*dir;		/* the run folder */
	json_t			*report;	/* report.json */
	struct report_scrub	 scrub;
	uint64_t		 svg_ids;	/* for ids unique in the page */
};

struct group {
	char		*fp;
	char		 cls;		/* f or i */
	uint64_t	 smallest;
	json_t		*first;		/* the record of the smallest */
	uint64_t	*seeds;		/* ascending: results come by seed */
	size_t		 n, cap;
	uint64_t	 flaky;		/* its confirming re-run did not reproduce */
};

struct groups {
	struct group	*v;
	size_t		 n;
};

struct page {
	struct rh	 h;
	const char	*cfg_name;
	struct seed_range seeds;
	uint64_t	 count;
	struct groups	 g;
	char		*cls;		/* per seed of the range: p f i m */
	char		**title;	/* per seed, at most RH_GRID_CELLS: "reason —
					   message's first line", NULL: none */
	int32_t		*grp;		/* per seed: its group, -1 none */
	char		 err[ERR_LEN];	/* a record that does not fit */
	const struct report_html_opts *o;
};

static inline const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static inline int64_t
jint(const json_t *o, const char *key, int64_t dflt)
{
	json_t	*v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* A verdict as the grid's class: p f i, m for none. */
char	 rh_verdict_class(const char *verdict);
/* A record's fingerprint: report.json's, or config|reason (heap). */
char	*rh_record_fp(const char *cfg_name, const json_t *rec);
/* "Since last time" (report_since.c). */
void	 rh_since(struct page *p);

/*
 * report.json read one record at a time, so a run of millions of seeds
 * is never one tree in memory: head_fn gets the object without
 * "results", then rec_fn each record, in file order (both borrowed;
 * rec_fn NULL: the head alone).  0, or -1 with err.
 */
int	rh_report_stream(const char *path, void (*head_fn)(json_t *, void *),
	    void (*rec_fn)(json_t *, void *), void *arg, char *err);

/* Untrusted text, scrubbed and escaped. */
void	rh_text(struct rh *h, const char *s);
/* The same for at most n bytes of s (whole UTF-8 characters). */
void	rh_textn(struct rh *h, const char *s, size_t n);
/* printf, then nothing escaped: only for the page's own words and numbers. */
void	rh_put(struct rh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A duration for people: "610 ms", "3.2 s", "4 min 10 s", "2 h 5 min". */
const char *rh_dur(int64_t ms, char *buf, size_t len);

/*
 * The swimlane (and schedule, when the trace has steps) of one failing
 * seed, from failures/<seed>/: result.json, trace.jsonl, timing.jsonl.
 */
void	rh_swimlane(struct rh *h, uint64_t seed, const char *label);
/*
 * The worker timeline from journal.jsonl, and the turn and seed
 * durations it records; what it cannot draw it says.
 */
void	rh_workers(struct rh *h);
/* The legend of the fault marks (shared by every swimlane). */
void	rh_fault_legend(struct rh *h);

#endif
