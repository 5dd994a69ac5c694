/*
 * report.html: a run seen at a glance (docs/results.md "report.html: the
 * run at a glance"; what it reads: docs/report.md "What report.html reads").
 *
 * One self-contained file beside report.json: inline CSS and SVG, no
 * network, no fonts of its own, readable with JavaScript off (one small
 * inline script only stamps the page's own load time), under a
 * Content-Security-Policy that allows nothing but its own style and
 * script, by hash.  It is drawn from what the run folder holds, so the
 * end of `soak run` / `soak coordinator` and `soak report RUN_DIR` write
 * the same page:
 *
 *	report.json		header, seed grid, failures by fingerprint,
 *				coverage, groups[].story/plan, regressions
 *	failures/<seed>/	result.json (turns, timing), trace.jsonl,
 *				timing.jsonl: the swimlane of each
 *				fingerprint's smallest seed
 *	journal.jsonl		lease and result times: the worker timeline,
 *				turn durations of passing seeds
 *	PREVIOUS/report.json	"since last time"
 *
 * Every part that the run folder lacks the data for (an older run, a run
 * without proxies) is left out with a sentence saying why.  Every text
 * that came from the system under test or the config (rows, SQL, stderr,
 * messages, names, hosts) goes through report_html_scrub (secrets) and
 * then report_html_escape: it is text, never markup.
 *
 * Budgets (bench/report_html.sh measures them): at most 3 MB for 200
 * seeds, 15 MB at 100,000; the grid bins seeds past RH_GRID_CELLS, the
 * worker timeline merges bars narrower than a pixel, and every list that
 * grows with the run is capped, saying how much was left out.
 */
#ifndef SOAK_REPORT_HTML_H
#define SOAK_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/config.h"

#define RH_NAME		"report.html"
#define RH_GRID_CELLS	5000	/* seeds drawn one cell each; past it, bins */
#define RH_GRID_BINS	2500	/* at most this many bins */
#define RH_LIST_SEEDS	500	/* seeds linked in a fingerprint's list */
#define RH_GROUPS	50	/* fingerprints given a section of their own */
#define RH_LANE_MARKS	4000	/* exchanges drawn in one swimlane */
#define RH_TRACE_LINES	50000	/* fault-trace lines read for one seed */
#define RH_SCHED_STEPS	1500	/* scheduled steps drawn in one schedule */
#define RH_BARS		3000	/* worker-timeline bars before merging */

struct report_html_opts {
	const char	*run_dir;
	/*
	 * The run to compare with ("since last time"): a run folder, or NULL
	 * for the default, the newest earlier run (by started_at) of the same
	 * config name among the folders beside run_dir (its output root, the
	 * parent of --out); "" for none.
	 */
	const char	*previous;
	/*
	 * Where the secrets come from (NULL: none known): database.url's
	 * password and tickets.token_env's value, and SOAK_DATABASE_URL's.
	 */
	const struct cfg *cfg;
	const char	*now_text;	/* "written at" (NULL: the clock) */
};

/*
 * Writes run_dir/report.html (through a temporary file and a rename).
 * 0, or -1 with err (no report.json, a malformed one, a folder that
 * cannot be written).  *size gets the bytes written when not NULL.
 */
int	 report_html_write(const struct report_html_opts *o, size_t *size, char *err);
/*
 * The default previous run of run_dir (heap), or NULL (why in why, a
 * sentence for the page): the sibling folder holding a report.json of the
 * same config name whose started_at is the newest before run_dir's own
 * (ties: the greater folder name).
 */
char	*report_html_previous(const char *run_dir, char *why, size_t whylen);

/* RUN_DIR/report.json without its results (a new reference), or NULL with err. */
json_t	*report_html_head(const char *run_dir, char *err);

/*
 * Secrets out of untrusted text: the one place report.html calls the
 * scrubber (common/conninfo.h conninfo_scrub today), so switching to a
 * stronger one is one line.  Returns a heap copy of s with every secret
 * of sc replaced by "***".
 */
struct report_scrub {
	char	**conninfos;	/* NULL-terminated; passwords in them */
	char	**words;	/* NULL-terminated; literal secrets (tokens) */
};
void	 report_scrub_init(struct report_scrub *sc, const struct cfg *cfg);
void	 report_scrub_free(struct report_scrub *sc);
char	*report_html_scrub(const struct report_scrub *sc, const char *s);
/*
 * s as HTML text or attribute value: & < > " ' as entities, bytes that
 * are not UTF-8 and control characters other than \n and \t as U+FFFD.
 */
void	 report_html_escape(FILE *f, const char *s);

#endif
