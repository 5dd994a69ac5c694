/*
 * Ticket filer (docs/design.md, "Tickets"): turns the domain failures of
 * a finished run into one ticket per fingerprint, never one per seed.
 *
 * Input is RUN_DIR/report.json (docs/report.md) plus, when present,
 * RUN_DIR/failures/<seed>/result.json (turn outcomes) and trace.jsonl (fault
 * trace).  Everything the filer needs, including the config's tickets:
 * section, comes from the report; no YAML is read.
 *
 * Dedupe: every ticket body carries the marker
 *     <!-- soak-fingerprint: HHHHHHHHHHHHHHHH -->
 * (64-bit FNV-1a of the fingerprint text, 16 lower-case hex digits) and, on
 * github, gitlab and jira, the label "soak:HHHHHHHHHHHHHHHH".  Before filing,
 * the sink looks for an open ticket carrying that label; when one exists the
 * run's seeds go into a comment there instead of a new ticket.
 *
 * The token is read from the environment variable the config names
 * (tickets.token_env) at request time; it is sent only in request headers and
 * never written to a log line, an error message, stdout or a file.
 */
#ifndef SOAK_TICKETS_H
#define SOAK_TICKETS_H

#include <stdbool.h>
#include <stdio.h>

struct tickets_opts {
	bool	 dry_run;	/* print what would be filed, make no request */
	FILE	*out;		/* what was filed / would be filed; NULL = stdout */
};

/*
 * Files tickets for the finished run in run_dir per its report.json's
 * config.tickets (the sink defaults to "file" when the section is absent).
 * Returns 0 when every ticket was filed or there was nothing to file, and
 * also when a sink failed: a failed filing is a logged warning naming the
 * sink, the request and the HTTP status, counted in *nfailed (may be NULL),
 * and never changes a verdict or a run's exit status.  Returns 1 when a
 * ticket could not be made into a request (its title or body is not valid
 * UTF-8: a soak bug, warned naming the ticket, counted in *nfailed, and
 * nothing sent for it).  Returns -1 with err set when report.json cannot
 * be read or is malformed.
 */
int	tickets_file_run(const char *run_dir, const struct tickets_opts *opts,
	    int *nfailed, char *err);

/*
 * The end-of-run hook of `soak run` and `soak coordinator`: call it after
 * report.json is written.  Files tickets when the report's
 * config.tickets.enabled is true (the config has a tickets: section), and
 * does nothing otherwise.  Every problem, including an unreadable report,
 * is a logged warning: it returns nothing so that it cannot change a
 * verdict or the run's exit status.  What was filed goes to out (NULL =
 * stdout).
 */
void	tickets_after_run(const char *run_dir, FILE *out);

#endif
