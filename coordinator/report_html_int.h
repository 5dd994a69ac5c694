/*
 * report.html's parts, between report_html.c (the page: header, grid,
 * failures, coverage, since last time) and report_lanes.c (the pictures
 * over time: a seed's swimlane and schedule, the worker timeline).
 * Private to those two files.
 */
#ifndef SOAK_REPORT_HTML_INT_H
#define SOAK_REPORT_HTML_INT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "coordinator/report_html.h"

struct rh {
	FILE			*f;
	const char		*dir;		/* the run folder */
	json_t			*report;	/* report.json */
	struct report_scrub	 scrub;
	uint64_t		 svg_ids;	/* for ids unique in the page */
};

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
