/*
 * What a run leaves behind (docs/design.md, "Outputs"): report.json,
 * junit.xml, failures/<seed>/, and the summary on the terminal.
 */
#ifndef SOAK_REPORT_H
#define SOAK_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/config.h"
#include "coordinator/coord.h"

struct report_meta {
	const struct cfg	*cfg;
	const char		*cfg_path;	/* absolute */
	const char		*run_id;
	const char		*out_dir;
	struct seed_range	 seeds;
	int64_t			 started_wall_ms;
	int64_t			 wall_ms;
	bool			 interrupted;
	const char		*halted;	/* why the run stopped early, or NULL */
};

/*
 * What the confirming re-run of s showed, in words, into buf ("" when there
 * was none): "reproduced it", "did NOT reproduce it (...)" when it passed,
 * "failed differently: FP, where the run failed with FP" naming both
 * fingerprints, or "ended infra; ...".  Returns buf.
 */
const char *report_reproduced(const struct cfg *cfg, const struct coord_seed *s,
	    char *buf, size_t len);
/*
 * The command that replays seed (heap), the soak binary as it was invoked
 * (common/self.h), every word shell-quoted when it needs it:
 *
 * report_replay: for report.json, junit.xml and the tickets, read on other
 * machines.  With the config in a git work tree the config's path is
 * relative to its top, to run from there ("./soak replay
 * examples/refunds/soak.yaml --seed 0"); otherwise paths are absolute.
 *
 * report_replay_here: for the summary on screen, to run as printed from
 * the working directory soak was started in: the binary as invoked, the
 * config relative to that directory when under it, else absolute.
 */
char	*report_replay(const char *cfg_path, uint64_t seed);
/* The same for a regression: "BIN replay CONFIG --plan FILE". */
char	*report_replay_plan(const char *cfg_path, const char *plan_path);
char	*report_replay_plan_here(const char *cfg_path, const char *plan_path);
/*
 * Whether a command report_replay or report_replay_plan wrote (read back
 * from report.json, perhaps of an older run) runs from the top folder of
 * the config's git work tree: its config path is relative.  The one
 * reader of that command, beside its writers.
 */
bool	 report_replay_from_top(const char *replay);
/* Where s's failure files go under the run's folder: "failures/N", or a
 * regression's "failures/regression-NAME".  Returns buf. */
const char *report_failure_dir(const struct coord_seed *s, char *buf, size_t len);
char	*report_replay_here(const char *cfg_path, uint64_t seed);
/*
 * out_dir/config.yaml: the config text with database.url's password
 * redacted (cfg_text_redact), mode 0600, replaced in one rename.
 */
int	 report_config_copy(const struct cfg *cfg, const char *out_dir, char *err);
/*
 * A regression whose plan diverged and was judged by exploring (detail
 * "explored", worker/regexplore.h): its new schedule as a plan, for
 * `soak pin RUN --refresh NAME` — a pass's explored schedule closest to
 * the plan's order ("refresh"), a fail's failing schedule ("plan") — or
 * NULL (borrowed from s).  Where report_failure writes it: buf gets
 * "refresh/NAME.json" (under the run's folder).
 */
const json_t *report_refresh_plan(const struct coord_seed *s);
const char *report_refresh_path(const struct coord_seed *s, char *buf, size_t len);
/*
 * failures/<seed>/{result.json,trace.jsonl}, and a regression's
 * refresh/NAME.json (report_refresh_plan); called as each verdict is
 * final.  -1 with err when they cannot be written (a full disk): the
 * caller stops the run; a file written in part is removed.
 */
int	 report_failure(const struct report_meta *m, const struct coord_seed *s,
	    char *err);
/* Writes report.json and junit.xml; returns the run's exit status. */
int	 report_write(const struct report_meta *m, const struct coord *c, char *err);
/* Exit status from counts (docs/design.md, "Commands and exit statuses"). */
int	 report_exit_status(const struct coord *c);
/* The end-of-run summary grouped by fingerprint. */
void	 report_summary(FILE *f, const struct report_meta *m, const struct coord *c);

#endif
