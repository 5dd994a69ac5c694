/*
 * The run's journal: OUT/journal.jsonl, one JSON object per line, appended
 * as the run goes, so that a coordinator killed mid-run can be started
 * again with --resume and end with the report an uninterrupted run would
 * have written.
 *
 * The first line is the run's head:
 *
 *	{"t":"run","format":1,"run_id":…,"config_hash":…,"seeds":[A,B],
 *	 "started_at_ms":…}
 *
 * then the coordinator's events (coordinator/coord.h coord_event_cb: a
 * worker's hello, a lease granted, a result accepted, a lease ended), each
 * {"t":TYPE, …, "at_ms":…} (at_ms: when it was journalled, ms since the
 * epoch by the coordinator's clock, for report.html's worker timeline;
 * journals of older builds lack it, and nothing a resume rebuilds reads
 * it), and a {"t":"resume","at_ms":…} line for each restart.
 * Every line is written (write(2), O_APPEND) before the reply that depends
 * on it is sent, so a killed coordinator loses nothing it acknowledged;
 * lines are fsync'd in small batches (JOURNAL_SYNC_LINES lines or
 * JOURNAL_SYNC_MS, whichever first, and at the end), so a machine that
 * loses power loses at most that much — results a resumed coordinator then
 * does not know are run again, by the rule that a seed without a verdict
 * is run.  A line that cannot be written (ENOSPC, EIO) is cut off again
 * and nothing more is written (journal_failed says why: `soak run` then
 * stops the run).  A torn last line (the process died mid-write) is cut off when
 * the journal is resumed; a bad line anywhere else is an error naming it.
 */
#ifndef SOAK_JOURNAL_H
#define SOAK_JOURNAL_H

#include <stdint.h>

#include <jansson.h>

#define JOURNAL_NAME		"journal.jsonl"
#define JOURNAL_SYNC_LINES	64
#define JOURNAL_SYNC_MS		100

struct journal;

/*
 * What a line is, its "t": the run's head, a restart, and the
 * coordinator's events (coordinator/coord.h coord_event_cb).  JEV_OTHER is
 * a line of a newer soak, skipped by the replay.
 */
enum jev {
	JEV_RUN, JEV_RESUME, JEV_WORKER, JEV_LEASE, JEV_RESULT, JEV_LEASE_END,
	JEV_OTHER
};

/* The one name table: "run", "resume", "worker", "lease", "result",
 * "lease_end" (and "other").  jev_parse: JEV_OTHER for any other name. */
const char	*jev_name(enum jev ev);
enum jev	 jev_parse(const char *name);

/* Creates DIR/journal.jsonl (it must not exist) and writes head (taken). */
struct journal	*journal_create(const char *dir, json_t *head, char *err);
/*
 * Reads DIR/journal.jsonl of a killed run: *head gets its first line (a
 * new reference), and fn is called with each event after it, in order
 * ("resume" lines included).  fn returning -1 (err filled) stops with an
 * error that names the line.  Then the journal is open for appending,
 * after a "resume" line.
 */
struct journal	*journal_resume(const char *dir, json_t **head,
		    int (*fn)(enum jev type, json_t *e, void *arg, char *err),
		    void *arg, char *err);
/* The head of DIR/journal.jsonl alone (a new reference), or NULL with err. */
json_t		*journal_head(const char *dir, char *err);
/* Appends {"t":jev_name(type), …e, "at_ms":now} (e taken); fsyncs when a
 * batch is due. */
void		 journal_append(struct journal *j, enum jev type, json_t *e);
/* fsyncs what is pending if it has waited JOURNAL_SYNC_MS. */
void		 journal_tick(struct journal *j);
/*
 * Why the journal cannot be written (a write or fsync failed: ENOSPC,
 * EIO), or NULL.  After the first failure nothing more is written, and a
 * line written in part is cut off again: the journal stays a valid one
 * of the run so far, for --resume once the cause is mended.
 */
const char	*journal_failed(const struct journal *j);
/* fsyncs and closes; -1 with err if any write failed during the run. */
int		 journal_close(struct journal *j, char *err);

#endif
