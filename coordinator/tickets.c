/*
 * Ticket filer: reads a finished run's report.json, groups its failures by
 * fingerprint, renders one ticket per group and hands each to the sink
 * (tickets_sinks.c).  Rendering is a pure function of the run directory, so
 * --dry-run prints byte for byte what a real filing sends.
 */
#include "coordinator/tickets.h"
#include "coordinator/tickets_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/fingerprint.h"
#include "coordinator/report.h"

#define TK_REPORT_CAP	(256u << 20)	/* report.json of a 100k-seed sweep fits */
#define TK_SIDE_CAP	(16u << 20)	/* result.json, trace.jsonl */
#define TK_SEEDS_LISTED	2000		/* trackers cap bodies near 64 KiB */

static const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static uint64_t
rec_seed(const json_t *rec)
{
	return (uint64_t)json_integer_value(json_object_get(rec, "seed"));
}

/*
 * Recomputed rather than trusted: the grouping is the filer's promise, and
 * a coordinator bug that wrote a different string must not split or merge
 * tickets silently.
 */
char *
tk_fingerprint(const char *config_name, const json_t *rec)
{
	return fp_string(config_name, jstr(rec, "reason"),
	    json_object_get(rec, "invariants"));
}

static char *
dup_opt(const json_t *o, const char *key, const char *def)
{
	const char	*s = jstr(o, key);

	return xstrdup(s != NULL && *s != '\0' ? s : def);
}

static int
config_load(const json_t *t, struct tk_config *c, char *err)
{
	const json_t	*labels;
	size_t		 i, n = 0;

	memset(c, 0, sizeof(*c));
	if (t != NULL && !json_is_object(t) && !json_is_null(t))
		return errf(err, "report.json: config.tickets is not an object");
	c->sink = dup_opt(t, "sink", "file");
	c->url = dup_opt(t, "url", NULL);
	c->repo = dup_opt(t, "repo", NULL);
	c->project = dup_opt(t, "project", NULL);
	c->token_env = dup_opt(t, "token_env", NULL);
	c->user_env = dup_opt(t, "user_env", NULL);
	c->issue_type = dup_opt(t, "issue_type", "Bug");
	c->infra = json_is_true(json_object_get(t, "infra"));
	c->insecure_http = json_is_true(json_object_get(t, "insecure_http"));
	c->enabled = json_is_true(json_object_get(t, "enabled"));
	labels = json_object_get(t, "labels");
	c->labels = xcalloc(json_array_size(labels) + 1, sizeof(char *));
	for (i = 0; i < json_array_size(labels); i++) {
		const char *l = json_string_value(json_array_get(labels, i));

		if (l == NULL)
			return errf(err, "report.json: config.tickets.labels[%zu] "
			    "is not a string", i);
		c->labels[n++] = xstrdup(l);
	}
	return 0;
}

static void
config_clear(struct tk_config *c)
{
	free(c->sink);
	free(c->url);
	free(c->repo);
	free(c->project);
	free(c->token_env);
	free(c->user_env);
	free(c->issue_type);
	strv_free(c->labels);
	memset(c, 0, sizeof(*c));
}

/* Takes a reference to report; label names it in errors. */
static int
run_from_json(json_t *report, const char *run_dir, const char *label,
    struct tk_run *run, char *err)
{
	const json_t	*config, *results;
	size_t		 i;

	memset(run, 0, sizeof(*run));
	run->run_dir = run_dir != NULL ? xstrdup(run_dir) : NULL;
	run->report = json_incref(report);
	if (!json_is_object(run->report) ||
	    json_integer_value(json_object_get(run->report, "format")) != 1) {
		errf(err, "%s: not a soak report (want \"format\": 1)", label);
		goto fail;
	}
	config = json_object_get(run->report, "config");
	results = json_object_get(run->report, "results");
	run->run_id = jstr(run->report, "run_id");
	run->config_name = jstr(config, "name");
	if (run->run_id == NULL || run->config_name == NULL ||
	    !json_is_array(results)) {
		errf(err, "%s: missing run_id, config.name or results[]", label);
		goto fail;
	}
	for (i = 0; i < json_array_size(results); i++) {
		const json_t *r = json_array_get(results, i);

		if (!json_is_integer(json_object_get(r, "seed")) ||
		    jstr(r, "verdict") == NULL) {
			errf(err, "%s: results[%zu] has no integer seed or no "
			    "verdict", label, i);
			goto fail;
		}
	}
	run->config_hash = jstr(config, "hash");
	run->config_path = jstr(config, "path");
	if (run->config_path != NULL && run->config_path[0] != '/')
		run->config_path = NULL;	/* nothing to resolve against */
	run->soak_version = jstr(run->report, "soak_version");
	run->host = jstr(run->report, "host");
	run->sut_revision = jstr(run->report, "sut_revision");
	if (run->sut_revision == NULL || *run->sut_revision == '\0')
		run->sut_revision = getenv("SOAK_SUT_REVISION");
	if (config_load(json_object_get(config, "tickets"), &run->cfg, err) == -1)
		goto fail;
	return 0;
fail:
	tk_run_free(run);
	return -1;
}

int
tk_run_from_json(json_t *report, const char *run_dir, struct tk_run *run,
    char *err)
{
	return run_from_json(report, run_dir, "report.json", run, err);
}

int
tk_run_load(const char *run_dir, struct tk_run *run, char *err)
{
	json_error_t	 jerr;
	json_t		*report = NULL;
	char		*path, *text = NULL;
	size_t		 len;
	int		 rc = -1;

	memset(run, 0, sizeof(*run));
	path = path_join(run_dir, "report.json");
	if ((text = read_file(path, TK_REPORT_CAP, &len, err)) == NULL)
		goto out;
	if ((report = json_loadb(text, len, 0, &jerr)) == NULL) {
		errf(err, "%s:%d:%d: not valid JSON: %s", path, jerr.line,
		    jerr.column, jerr.text);
		goto out;
	}
	rc = run_from_json(report, run_dir, path, run, err);
out:
	json_decref(report);
	free(path);
	free(text);
	return rc;
}

void
tk_run_free(struct tk_run *run)
{
	if (run == NULL)
		return;
	json_decref(run->report);
	free(run->run_dir);
	config_clear(&run->cfg);
	memset(run, 0, sizeof(*run));
}

/* ---- rendering ---- */

/*
 * Every string from the run is untrusted (tickets_text.c): it reaches the
 * body only through tk_put_text, tk_put_code or tk_put_block, which repair
 * its UTF-8, cut it on a character boundary and make it inert in the
 * ticket's dialect.  Only soak's own words and numbers are printed raw.
 */

static void
put_h(FILE *f, enum tk_dialect d, int level)
{
	if (d == TK_JIRA)
		fprintf(f, "h%d. ", level);
	else
		fprintf(f, "%.*s ", level, "######");
}

/* Table rows: "| a | b |"; a Jira row of header cells is "|| a || b ||". */
static void
row_open(FILE *f, enum tk_dialect d, bool head)
{
	fputs(head && d == TK_JIRA ? "|| " : "| ", f);
}

static void
cell_sep(FILE *f, enum tk_dialect d, bool head)
{
	fputs(head && d == TK_JIRA ? " || " : " | ", f);
}

static void
row_close(FILE *f, enum tk_dialect d, bool head)
{
	fputs(head && d == TK_JIRA ? " ||\n" : " |\n", f);
}

/* A header row of soak's own words, with markdown's delimiter row. */
static void
put_thead(FILE *f, enum tk_dialect d, const char *const *cols)
{
	size_t	i;

	row_open(f, d, true);
	for (i = 0; cols[i] != NULL; i++) {
		if (i > 0)
			cell_sep(f, d, true);
		fputs(cols[i], f);
	}
	row_close(f, d, true);
	if (d == TK_MD) {
		fputc('|', f);
		for (i = 0; cols[i] != NULL; i++)
			fputs("---|", f);
		fputc('\n', f);
	}
}

static void
put_cell(FILE *f, enum tk_dialect d, const char *s)
{
	tk_put_text(f, d, s, TK_CELL_MAX);
}

static void
put_bold_u64(FILE *f, enum tk_dialect d, uint64_t v)
{
	fprintf(f, d == TK_JIRA ? "*%" PRIu64 "*" : "**%" PRIu64 "**", v);
}

static void
put_seeds(FILE *f, const struct tk_ticket *t)
{
	size_t	i;

	for (i = 0; i < t->nseeds && i < TK_SEEDS_LISTED; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", t->seeds[i]);
	if (t->nseeds > TK_SEEDS_LISTED)
		fprintf(f, ", … and %zu more (see report.json)",
		    t->nseeds - TK_SEEDS_LISTED);
	fputc('\n', f);
}

static void
put_invariant(FILE *f, enum tk_dialect d, const json_t *inv)
{
	const json_t	*cols = json_object_get(inv, "columns");
	const json_t	*rows = json_object_get(inv, "rows");
	const char	*sql = jstr(inv, "sql");
	json_int_t	 total = json_integer_value(json_object_get(inv, "row_count"));
	size_t		 i, j, shown;

	put_h(f, d, 3);
	fputs("Invariant: ", f);
	put_cell(f, d, jstr(inv, "name"));
	fprintf(f, "\n\n");
	if (sql != NULL)
		tk_put_block(f, d, "sql", sql);
	shown = json_array_size(rows);
	if (shown > TK_MAX_ROWS)
		shown = TK_MAX_ROWS;
	if (total < 0 || (size_t)total < shown)
		total = (json_int_t)shown;
	if (shown == 0 || json_array_size(cols) == 0) {
		fprintf(f, "\n%" JSON_INTEGER_FORMAT " violating row(s).\n\n", total);
		return;
	}
	fprintf(f, "\nViolating rows (%zu of %" JSON_INTEGER_FORMAT " shown):\n\n",
	    shown, total);
	row_open(f, d, true);
	for (j = 0; j < json_array_size(cols); j++) {
		if (j > 0)
			cell_sep(f, d, true);
		put_cell(f, d, json_string_value(json_array_get(cols, j)));
	}
	row_close(f, d, true);
	if (d == TK_MD) {
		fputc('|', f);
		for (j = 0; j < json_array_size(cols); j++)
			fputs("---|", f);
		fputc('\n', f);
	}
	for (i = 0; i < shown; i++) {
		const json_t *row = json_array_get(rows, i);

		row_open(f, d, false);
		for (j = 0; j < json_array_size(cols); j++) {
			if (j > 0)
				cell_sep(f, d, false);
			put_cell(f, d, json_string_value(json_array_get(row, j)));
		}
		row_close(f, d, false);
	}
	fputc('\n', f);
}

/* The last non-empty line of a stderr tail: enough to recognise a panic. */
static void
put_tail_line(FILE *f, enum tk_dialect d, const char *s)
{
	const char	*end, *start;

	if (s == NULL)
		return;
	end = s + strlen(s);
	while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	start = end;
	while (start > s && start[-1] != '\n')
		start--;
	if (end > start) {
		char *line = strndup(start, end - start);

		if (line == NULL)
			abort();
		put_cell(f, d, line);
		free(line);
	}
}

static void
put_turns(FILE *f, enum tk_dialect d, const json_t *res, const char *trace)
{
	static const char *const head[] = { "round", "turn", "status", "exit",
	    "ms", "stderr (last line)", NULL };
	const json_t	*turns = json_object_get(res, "turns");
	size_t		 i;

	if (json_array_size(turns) > 0) {
		put_h(f, d, 4);
		fputs("Turn outcomes\n\n", f);
		put_thead(f, d, head);
		for (i = 0; i < json_array_size(turns); i++) {
			const json_t	*t = json_array_get(turns, i);
			const json_t	*code = json_object_get(t, "exit_code");
			const json_t	*sig = json_object_get(t, "signal");
			const char	*st = jstr(t, "stderr_tail");

			if (code == NULL)
				code = json_object_get(t, "exit");
			if (st == NULL)
				st = jstr(t, "stderr");
			row_open(f, d, false);
			fprintf(f, "%" JSON_INTEGER_FORMAT,
			    json_integer_value(json_object_get(t, "round")));
			cell_sep(f, d, false);
			fprintf(f, "%" JSON_INTEGER_FORMAT,
			    json_integer_value(json_object_get(t, "turn")));
			cell_sep(f, d, false);
			put_cell(f, d, jstr(t, "status"));
			cell_sep(f, d, false);
			if (json_is_integer(sig) && json_integer_value(sig) != 0)
				fprintf(f, "signal %" JSON_INTEGER_FORMAT,
				    json_integer_value(sig));
			else if (json_is_integer(code))
				fprintf(f, "%" JSON_INTEGER_FORMAT,
				    json_integer_value(code));
			cell_sep(f, d, false);
			fprintf(f, "%" JSON_INTEGER_FORMAT,
			    json_integer_value(json_object_get(t, "duration_ms")));
			cell_sep(f, d, false);
			put_tail_line(f, d, st);
			row_close(f, d, false);
		}
		fputc('\n', f);
	}
	if (trace != NULL && *trace != '\0') {
		char		*text = xstrdup(trace), *p, *cut = NULL;
		size_t		 lines, total = 0;

		for (p = text; *p != '\0'; p++)
			if (*p == '\n' || p[1] == '\0') {
				total++;
				if (total == TK_TRACE_LINES && cut == NULL)
					cut = p + 1;
			}
		lines = total < TK_TRACE_LINES ? total : TK_TRACE_LINES;
		if (cut != NULL)
			*cut = '\0';
		put_h(f, d, 4);
		fprintf(f, "Fault trace (first %zu of %zu exchanges)\n\n", lines,
		    total);
		tk_put_block(f, d, "json", text);
		fputc('\n', f);
		free(text);
	}
}

/* One row of the run table: a label of soak's own and an untrusted value. */
static void
meta_row(FILE *f, enum tk_dialect d, const char *label, const char *value)
{
	if (d == TK_JIRA)
		fprintf(f, "|| %s | ", label);
	else
		fprintf(f, "| %s | ", label);
	put_cell(f, d, value);
}

static void
put_run_meta(FILE *f, enum tk_dialect d, const struct tk_run *run,
    const struct tk_ticket *t)
{
	put_h(f, d, 3);
	fputs(d == TK_JIRA ? "Run\n\n" : "Run\n\n| | |\n|---|---|\n", f);
	meta_row(f, d, "run", run->run_id);
	fputs(" |\n", f);
	meta_row(f, d, "config", run->config_name);
	if (run->config_hash != NULL) {
		fputs(" (", f);
		tk_put_code(f, d, run->config_hash, TK_CELL_MAX, true);
		fputc(')', f);
	}
	fputs(" |\n", f);
	meta_row(f, d, "soak version", run->soak_version ? run->soak_version :
	    SOAK_VERSION);
	fputs(" |\n", f);
	meta_row(f, d, "system under test", run->sut_revision ?
	    run->sut_revision : "unknown (set SOAK_SUT_REVISION)");
	fputs(" |\n", f);
	meta_row(f, d, "host", run->host ? run->host : "unknown");
	fputs(" |\n", f);
	if (d == TK_JIRA)
		fputs("|| fingerprint | ", f);
	else
		fputs("| fingerprint | ", f);
	tk_put_code(f, d, t->fingerprint, 2 * TK_CELL_MAX, true);
	fputs(" |\n", f);
}

/*
 * The dedupe marker: an HTML comment in markdown (invisible), a plain line
 * in Jira (which shows HTML comments as text; its dedupe is the label).
 */
static void
put_markers(FILE *f, enum tk_dialect d, const struct tk_run *run,
    const struct tk_ticket *t)
{
	char	*id = tk_marker_id(run->run_id);

	if (d == TK_JIRA)
		fprintf(f, "soak\\-fingerprint: %s, soak\\-run: ", t->hash);
	else
		fprintf(f, "<!-- soak-fingerprint: %s -->\n<!-- soak-run: %s -->\n",
		    t->hash, id);
	if (d == TK_JIRA) {
		tk_put_text(f, d, id, TK_CELL_MAX);
		fputc('\n', f);
	}
	free(id);
}

/* soak: "a", "b" broken — seed N (+k); the names part is bounded. */
static char *
bug_title(const struct tk_run *run, const struct tk_ticket *t,
    const char *reason, const json_t *invs)
{
	size_t	 i, n, len, others = t->nseeds - 1;
	char	*what = NULL, *plain, *title;
	FILE	*f;

	if ((f = open_memstream(&what, &len)) == NULL)
		abort();
	/* The invariant names in fingerprint order, so the title is stable. */
	if (reason_parse(reason) == REASON_INVARIANT && json_array_size(invs) > 0) {
		const char	**names = fp_names(invs, &n);

		for (i = 0; i < n; i++)
			fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
		free(names);
		fputs(" broken", f);
	} else
		fprintf(f, "%s %s", run->config_name, reason);
	fclose(f);
	/* What follows the names (" — seed N (+k)") always fits. */
	plain = tk_plain(what, TK_TITLE_MAX - 64);
	if (others > 0)
		title = xasprintf("soak: %s — seed %" PRIu64 " (+%zu)", plain,
		    t->seeds[0], others);
	else
		title = xasprintf("soak: %s — seed %" PRIu64, plain, t->seeds[0]);
	free(plain);
	free(what);
	return title;
}

/*
 * The pinned regressions (report.json's regressions) that failed with the
 * ticket's fingerprint: the bug is back, and which pin says so.
 */
static void
put_regressions(FILE *f, enum tk_dialect d, const struct tk_run *run,
    const struct tk_ticket *t)
{
	const json_t	*r;
	size_t		 i;
	char		*fp;

	json_array_foreach(json_object_get(run->report, "regressions"), i, r) {
		if (jstr(r, "verdict") == NULL || strcmp(jstr(r, "verdict"), "fail") != 0 ||
		    jstr(r, "name") == NULL)
			continue;
		fp = tk_fingerprint(run->config_name, r);
		if (strcmp(fp, t->fingerprint) == 0) {
			fputs("It is the pinned regression ", f);
			tk_put_code(f, d, jstr(r, "name"), TK_CELL_MAX, false);
			fputs(" failing again (its plan, seed ", f);
			fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(
			    json_object_get(r, "seed")));
			fputs(")", f);
			if (jstr(r, "replay") != NULL) {
				fputs(":\n\n", f);
				tk_put_block(f, d, "sh", jstr(r, "replay"));
			} else
				fputs(".\n", f);
			fputc('\n', f);
		}
		free(fp);
	}
}

/* At most this much of a minimized story in a ticket body. */
#define TK_STORY_MAX	(16u << 10)

/*
 * tickets.minimize: the smallest seed's failure minimized before filing
 * (report.json's "minimized"), above the full trace — the story, and the
 * command that replays the minimal plan; or why it was not minimized.
 */
static void
put_minimized(FILE *f, enum tk_dialect d, const json_t *first)
{
	const json_t	*mz = json_object_get(first, "minimized");
	const char	*outcome = jstr(mz, "outcome"), *story = jstr(mz, "story");
	const char	*replay = jstr(mz, "replay"), *msg = jstr(mz, "message");
	char		*cut = NULL;

	if (!json_is_object(mz))
		return;
	put_h(f, d, 3);
	if (!json_is_true(json_object_get(mz, "same_failure")) ||
	    !json_is_object(json_object_get(mz, "plan")) || outcome == NULL) {
		fputs("Not minimized\n\n", f);
		if (msg != NULL && *msg != '\0') {
			put_cell(f, d, msg);
			fputs("\n\n", f);
		}
		return;
	}
	fputs(strcmp(outcome, "minimal") == 0 ? "Minimized (1-minimal)\n\n" :
	    "Minimized (stopped by tickets.minimize_budget: the smallest failing "
	    "plan found, not shown 1-minimal)\n\n", f);
	if (jstr(mz, "summary") != NULL) {
		tk_put_text(f, d, jstr(mz, "summary"), 2 * TK_CELL_MAX);
		fputs("\n\n", f);
	}
	if (story != NULL) {
		if (strlen(story) > TK_STORY_MAX)
			story = cut = xasprintf("%.*s\n(cut at %u bytes)", (int)TK_STORY_MAX,
			    story, TK_STORY_MAX);
		tk_put_block(f, d, "text", story);
		fputc('\n', f);
		free(cut);
	}
	if (replay != NULL) {
		fputs(report_replay_from_top(replay) ? "Replay the minimized plan, from the top "
		    "folder of the repository that holds the config:\n\n" :
		    "Replay the minimized plan:\n\n", f);
		tk_put_block(f, d, "sh", replay);
		fputc('\n', f);
	}
}

static void
render_bug(const struct tk_run *run, struct tk_ticket *t, enum tk_dialect d,
    const json_t *result, const char *trace)
{
	const json_t	*first = t->first, *invs = json_object_get(first, "invariants");
	const json_t	*rep = json_object_get(first, "reproduced");
	const char	*reason = jstr(first, "reason"), *replay = jstr(first, "replay");
	const char	*msg = jstr(first, "message");
	size_t		 i, len;
	FILE		*f;

	if (reason == NULL)
		reason = "unknown";
	t->title = bug_title(run, t, reason, invs);

	if ((f = open_memstream(&t->body, &len)) == NULL)
		abort();
	put_markers(f, d, run, t);
	fputs("\nsoak found a domain failure (", f);
	tk_put_code(f, d, reason, TK_CELL_MAX, false);
	fputs(") in config ", f);
	tk_put_code(f, d, run->config_name, TK_CELL_MAX, false);
	fprintf(f, ": %zu failing seed(s) share this fingerprint; the smallest "
	    "is ", t->nseeds);
	put_bold_u64(f, d, t->seeds[0]);
	fputs(".\n\n", f);
	for (i = 0; i < json_array_size(invs); i++)
		put_invariant(f, d, json_array_get(invs, i));
	put_minimized(f, d, first);
	put_h(f, d, 3);
	fprintf(f, "Smallest seed: %" PRIu64 "\n\n", t->seeds[0]);
	if (msg != NULL) {
		fputs("Message: ", f);
		put_cell(f, d, msg);
		fputs("\n\n", f);
	}
	if (json_is_integer(json_object_get(first, "total_turns")))
		fprintf(f, "Successful turns: %" JSON_INTEGER_FORMAT " of %"
		    JSON_INTEGER_FORMAT ".\n\n",
		    json_integer_value(json_object_get(first, "ok_turns")),
		    json_integer_value(json_object_get(first, "total_turns")));
	put_turns(f, d, result, trace);
	if (replay != NULL) {
		put_h(f, d, 3);
		fputs("Replay\n\n", f);
		if (report_replay_from_top(replay))
			fputs("From the top folder of the repository that holds the "
			    "config:\n\n", f);
		tk_put_block(f, d, "sh", replay);
		fputc('\n', f);
	}
	if (json_is_boolean(rep)) {
		const json_t	*cf = json_object_get(first, "confirm");
		const char	*cfp = jstr(cf, "fingerprint");
		const char	*mine = jstr(first, "fingerprint");
		bool		 other = json_is_false(rep) && cfp != NULL;

		fprintf(f, "Confirming re-run of seed %" PRIu64 ": ", t->seeds[0]);
		fputs(d == TK_JIRA ? "*" : "**", f);
		fputs(json_is_true(rep) ? "reproduced" : other ? "failed differently" :
		    "did not reproduce", f);
		fputs(d == TK_JIRA ? "*" : "**", f);
		if (json_is_integer(json_object_get(cf, "worker")))
			fprintf(f, " (worker %" JSON_INTEGER_FORMAT ")",
			    json_integer_value(json_object_get(cf, "worker")));
		if (json_is_false(rep)) {
			const char *why = jstr(cf, "reason");
			char *ended = xasprintf("%s%s%s", jstr(cf, "verdict") ?
			    jstr(cf, "verdict") : "?", why && *why ? " " : "",
			    why ? why : "");

			fputs("; it ended ", f);
			tk_put_code(f, d, ended, TK_CELL_MAX, false);
			free(ended);
			if (cfp != NULL) {
				fputs(" (fingerprint ", f);
				tk_put_code(f, d, cfp, 2 * TK_CELL_MAX, false);
				if (mine != NULL) {
					fputs(", not this ticket's ", f);
					tk_put_code(f, d, mine, 2 * TK_CELL_MAX, false);
				}
				fputc(')', f);
			}
			fputs(other ? ". It failed, but as another bug, or as this one "
			    "showing another way: the failure depends on more than the "
			    "seed (timing, most often), and a replay may need a few "
			    "tries" : ". The failure depends on more than the seed "
			    "(timing, most often): a replay may need a few tries", f);
		}
		fputs(".\n\n", f);
	}
	put_h(f, d, 3);
	fprintf(f, "Failing seeds (%zu)\n\n", t->nseeds);
	put_seeds(f, t);
	fputc('\n', f);
	put_regressions(f, d, run, t);
	put_run_meta(f, d, run, t);
	fclose(f);

	if ((f = open_memstream(&t->comment, &len)) == NULL)
		abort();
	put_markers(f, d, run, t);
	fputs("\nSeen again in run ", f);
	tk_put_code(f, d, run->run_id, TK_CELL_MAX, false);
	fputs(" (soak ", f);
	tk_put_text(f, d, run->soak_version ? run->soak_version : SOAK_VERSION,
	    TK_CELL_MAX);
	fputs(", system under test ", f);
	tk_put_text(f, d, run->sut_revision ? run->sut_revision : "unknown",
	    TK_CELL_MAX);
	fputs(", host ", f);
	tk_put_text(f, d, run->host ? run->host : "unknown", TK_CELL_MAX);
	fprintf(f, "): %zu failing seed(s), the smallest is ", t->nseeds);
	put_bold_u64(f, d, t->seeds[0]);
	fputs(".\n\n", f);
	put_regressions(f, d, run, t);
	fputs("Seeds: ", f);
	put_seeds(f, t);
	if (replay != NULL) {
		fputs(report_replay_from_top(replay) ? "\nReplay, from the top folder of "
		    "the repository that holds the config:\n\n" : "\nReplay:\n\n", f);
		tk_put_block(f, d, "sh", replay);
	}
	fclose(f);
}

static void
render_infra(const struct tk_run *run, struct tk_ticket *t, enum tk_dialect d)
{
	static const char *const head[] = { "seed", "reason", "attempts",
	    "message", NULL };
	const json_t	*results = json_object_get(run->report, "results");
	char		*id = tk_plain(run->run_id, TK_TITLE_MAX - 64);
	size_t		 i, len;
	FILE		*f;

	t->title = xasprintf("soak: infra failures in run %s (%zu seeds)", id,
	    t->nseeds);
	free(id);
	if ((f = open_memstream(&t->body, &len)) == NULL)
		abort();
	put_markers(f, d, run, t);
	fprintf(f, "\n%zu seed(s) of run ", t->nseeds);
	tk_put_code(f, d, run->run_id, TK_CELL_MAX, false);
	fputs(" (config ", f);
	tk_put_code(f, d, run->config_name, TK_CELL_MAX, false);
	fputs(") ended infra after their retries: the environment broke, not the "
	    "system under test. The run is incomplete.\n\n", f);
	put_thead(f, d, head);
	for (i = 0; i < json_array_size(results); i++) {
		const json_t *r = json_array_get(results, i);

		if (strcmp(jstr(r, "verdict"), "infra") != 0)
			continue;
		row_open(f, d, false);
		fprintf(f, "%" PRIu64, rec_seed(r));
		cell_sep(f, d, false);
		put_cell(f, d, jstr(r, "reason"));
		cell_sep(f, d, false);
		fprintf(f, "%zu", json_array_size(json_object_get(r, "attempts")));
		cell_sep(f, d, false);
		put_cell(f, d, jstr(r, "message"));
		row_close(f, d, false);
	}
	fputc('\n', f);
	put_run_meta(f, d, run, t);
	fclose(f);
	/* One infra ticket per run: its fingerprint holds the run id, so a
	 * comment only happens when the same run is filed twice. */
	if ((f = open_memstream(&t->comment, &len)) == NULL)
		abort();
	put_markers(f, d, run, t);
	fputs("\nFiled again for the same run.\n", f);
	fclose(f);
}

void
tk_render(const struct tk_run *run, struct tk_ticket *t, enum tk_dialect d,
    const json_t *result, const char *trace)
{
	free(t->title);
	free(t->body);
	free(t->comment);
	t->title = t->body = t->comment = NULL;
	t->dialect = d;
	if (t->infra)
		render_infra(run, t, d);
	else
		render_bug(run, t, d, result, trace);
}

int
tk_ticket_check(const struct tk_ticket *t, char *err)
{
	const char	*what = NULL;
	json_t		*j;

	if (t->title == NULL || !tk_utf8_valid(t->title, strlen(t->title)))
		what = "title";
	else if (t->body == NULL || !tk_utf8_valid(t->body, strlen(t->body)))
		what = "body";
	else if (t->comment == NULL ||
	    !tk_utf8_valid(t->comment, strlen(t->comment)))
		what = "comment";
	if (what == NULL) {
		j = json_pack("{s:s, s:s, s:s}", "title", t->title, "body",
		    t->body, "comment", t->comment);
		if (j == NULL)
			what = "JSON request";
		json_decref(j);
	}
	if (what == NULL)
		return 0;
	/* The title may be the broken part: quote it repaired. */
	{
		char *title = tk_plain(t->title, 120);

		errf(err, "ticket %s (%s): the %s is not valid UTF-8 and cannot "
		    "be sent; not filed", t->hash, title, what);
		free(title);
	}
	return -1;
}

/*
 * The smallest seed's failures/<seed>/ files, when the run left them:
 * result.json (turn outcomes) and trace.jsonl (the fault trace).
 */
static void
load_side(const struct tk_run *run, const json_t *first, json_t **result,
    char **trace)
{
	const char	*fdir = jstr(first, "failure_dir");
	char		*dir, *path, *text, err[ERR_LEN];
	size_t		 len;

	*result = NULL;
	*trace = NULL;
	if (fdir == NULL || run->run_dir == NULL)
		return;
	dir = path_join(run->run_dir, fdir);
	path = path_join(dir, "result.json");
	if ((text = read_file(path, TK_SIDE_CAP, &len, err)) != NULL)
		*result = json_loadb(text, len, 0, NULL);
	free(text);
	free(path);
	path = path_join(dir, "trace.jsonl");
	*trace = read_file(path, TK_SIDE_CAP, &len, err);
	free(path);
	free(dir);
}

static int
cmp_ticket(const void *a, const void *b)
{
	const struct tk_ticket	*x = a, *y = b;

	/* Bugs before the infra ticket; bugs by their smallest seed. */
	if (x->infra != y->infra)
		return x->infra ? 1 : -1;
	return cmp_u64(&x->seeds[0], &y->seeds[0]);
}

int
tk_build(const struct tk_run *run, struct tk_ticket **tvp, size_t *ntp,
    char *err)
{
	const json_t		*results = json_object_get(run->report, "results");
	struct tk_ticket	*tv = NULL;
	struct fp_groups	 g;
	size_t			 i, j, nt;
	/* One infra ticket per run: its fingerprint holds the run id. */
	char			*infra_fp = xasprintf("%s|infra|%s",
				    run->config_name, run->run_id);

	fp_groups_init(&g, true);
	for (i = 0; i < json_array_size(results); i++) {
		const json_t	*r = json_array_get(results, i);
		const char	*verdict = jstr(r, "verdict");
		const char	*stored = jstr(r, "fingerprint");
		char		*fp;

		if (strcmp(verdict, "fail") == 0) {
			fp = tk_fingerprint(run->config_name, r);
			if (stored != NULL && strcmp(stored, fp) != 0)
				log_warnx("tickets: seed %" PRIu64 ": report.json "
				    "says fingerprint \"%s\", recomputed \"%s\"; "
				    "filing under the recomputed one",
				    rec_seed(r), stored, fp);
			fp_groups_add(&g, fp, rec_seed(r), i);
			free(fp);
		} else if (strcmp(verdict, "infra") == 0 && run->cfg.infra) {
			/* Never a bug: infra goes into the run's own ticket. */
			fp_groups_add(&g, infra_fp, rec_seed(r), i);
		}
	}
	/* A failing regression joins its fingerprint's ticket (or makes it):
	 * its index past the results'. */
	for (i = 0; i < json_array_size(json_object_get(run->report, "regressions")); i++) {
		const json_t	*r = json_array_get(json_object_get(run->report,
				    "regressions"), i);
		char		*fp;

		if (jstr(r, "verdict") == NULL || strcmp(jstr(r, "verdict"), "fail") != 0 ||
		    !json_is_integer(json_object_get(r, "seed")))
			continue;
		fp = tk_fingerprint(run->config_name, r);
		fp_groups_add(&g, fp, rec_seed(r), json_array_size(results) + i);
		free(fp);
	}
	fp_groups_sort(&g);
	nt = g.n;
	if (nt > 0)
		tv = xcalloc(nt, sizeof(*tv));
	for (i = 0; i < nt; i++) {
		struct tk_ticket	*t = &tv[i];

		t->fingerprint = xstrdup(g.v[i].fp);
		fp_hash_hex(t->fingerprint, t->hash);
		t->infra = strcmp(t->fingerprint, infra_fp) == 0;
		t->seeds = g.v[i].seeds;	/* the ticket takes the list */
		g.v[i].seeds = NULL;
		t->nseeds = g.v[i].count;
		t->first = g.v[i].first < json_array_size(results) ?
		    json_array_get(results, g.v[i].first) :
		    json_array_get(json_object_get(run->report, "regressions"),
		    g.v[i].first - json_array_size(results));
	}
	fp_groups_free(&g);
	free(infra_fp);
	if (nt > 1)
		qsort(tv, nt, sizeof(*tv), cmp_ticket);
	for (i = 0; i < nt; i++) {
		struct tk_ticket *t = &tv[i];
		size_t n = strv_len(run->cfg.labels);
		json_t	*result = NULL;
		char	*trace = NULL;

		if (!t->infra)
			load_side(run, t->first, &result, &trace);
		tk_render(run, t, strcmp(run->cfg.sink, "jira") == 0 ?
		    TK_JIRA : TK_MD, result, trace);
		json_decref(result);
		free(trace);
		t->labels = xcalloc(n + 2, sizeof(char *));
		for (j = 0; j < n; j++)
			t->labels[j] = xstrdup(run->cfg.labels[j]);
		t->labels[n] = xasprintf("soak:%s", t->hash);
	}
	(void)err;
	*tvp = tv;
	*ntp = nt;
	return 0;
}

void
tk_tickets_free(struct tk_ticket *tv, size_t nt)
{
	size_t	i;

	for (i = 0; tv != NULL && i < nt; i++) {
		free(tv[i].fingerprint);
		free(tv[i].seeds);
		free(tv[i].title);
		free(tv[i].body);
		free(tv[i].comment);
		strv_free(tv[i].labels);
	}
	free(tv);
}

/* ---- filing ---- */

static void
print_dry_run(FILE *out, const struct tk_sink *sink, struct tk_sink_ctx *ctx,
    const struct tk_ticket *t)
{
	char	*where = sink->where(ctx, t);
	size_t	 i;

	fprintf(out, "=== %s: would file at %s\n", sink->name, where);
	if (strcmp(sink->name, "file") == 0)
		fprintf(out, "    (unless that file exists: then the comment below "
		    "is appended to it, once per run)\n");
	else if (sink->find != NULL)
		fprintf(out, "    (unless an open ticket labelled soak:%s exists: "
		    "then the comment below goes there instead)\n", t->hash);
	fprintf(out, "fingerprint: %s\ntitle: %s\nlabels:", t->fingerprint,
	    t->title);
	for (i = 0; t->labels[i] != NULL; i++)
		fprintf(out, " %s", t->labels[i]);
	fprintf(out, "\nseeds: ");
	put_seeds(out, t);
	fprintf(out, "--- body ---\n%s--- comment (when deduplicated) ---\n%s"
	    "=== end\n\n", t->body, t->comment);
	free(where);
}

static int
file_one(const struct tk_sink *sink, struct tk_sink_ctx *ctx,
    const struct tk_ticket *t, FILE *out, char *err)
{
	char	*ref = NULL;
	int	 rc = -1;

	if (sink->find != NULL && sink->find(ctx, t, &ref, err) == -1)
		goto out;	/* filing blind could duplicate the ticket */
	if (ref != NULL) {
		switch (sink->comment(ctx, t, ref, err)) {
		case -1:
			goto out;
		case 1:
			fprintf(out, "%s: %s already records run %s, unchanged: %s\n",
			    sink->name, ref, ctx->run->run_id, t->title);
			break;
		default:
			fprintf(out, "%s: commented on %s (seed %" PRIu64 ", %zu "
			    "seeds): %s\n", sink->name, ref, t->seeds[0], t->nseeds,
			    t->title);
		}
	} else {
		if (sink->create(ctx, t, &ref, err) == -1)
			goto out;
		fprintf(out, "%s: filed %s: %s\n", sink->name,
		    ref ? ref : "ticket", t->title);
	}
	rc = 0;
out:
	free(ref);
	return rc;
}

int
tickets_file_run(const char *run_dir, const struct tickets_opts *opts,
    int *nfailed, char *err)
{
	struct tk_run		 run;
	struct tk_ticket	*tv = NULL;
	struct tk_sink_ctx	 ctx;
	const struct tk_sink	*sink;
	FILE			*out = opts && opts->out ? opts->out : stdout;
	bool			 dry = opts && opts->dry_run;
	size_t			 i, nt = 0;
	int			 failed = 0, broken = 0, rc = -1;
	char			 serr[ERR_LEN];

	memset(&ctx, 0, sizeof(ctx));
	if (nfailed != NULL)
		*nfailed = 0;
	if (tk_run_load(run_dir, &run, err) == -1)
		return -1;
	if ((sink = tk_sink_lookup(run.cfg.sink)) == NULL) {
		errf(err, "report.json: tickets.sink \"%s\" is not one of file, "
		    "github, gitlab, jira, webhook", run.cfg.sink);
		goto out;
	}
	if (tk_build(&run, &tv, &nt, err) == -1)
		goto out;
	if (nt == 0) {
		fprintf(out, "tickets: nothing to file for run %s\n", run.run_id);
		rc = 0;
		goto out;
	}
	if (tk_sink_ctx_init(&ctx, &run, !dry, serr) == -1) {
		/* A sink that cannot even start is a warning, never a verdict. */
		log_warnx("tickets: %s: %s; %zu ticket(s) not filed",
		    sink->name, serr, nt);
		failed = (int)nt;
		rc = 0;
		goto out;
	}
	if (!dry)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	for (i = 0; i < nt; i++) {
		if (dry) {
			print_dry_run(out, sink, &ctx, &tv[i]);
			continue;
		}
		/* A ticket that cannot travel is never sent half or empty. */
		if (tk_ticket_check(&tv[i], serr) == -1) {
			log_warnx("tickets: %s", serr);
			failed++;
			broken++;
		} else if (file_one(sink, &ctx, &tv[i], out, serr) == -1) {
			log_warnx("tickets: not filed (%s): %s", tv[i].title, serr);
			failed++;
		}
	}
	if (!dry)
		curl_global_cleanup();
	if (failed > 0)
		log_warnx("tickets: %d of %zu ticket(s) not filed; the run's "
		    "verdicts and exit status are unchanged", failed, nt);
	rc = broken > 0 ? 1 : 0;
out:
	fflush(out);
	if (nfailed != NULL)
		*nfailed = failed;
	tk_sink_ctx_clear(&ctx);
	tk_tickets_free(tv, nt);
	tk_run_free(&run);
	return rc;
}

void
tickets_after_run(const char *run_dir, FILE *out)
{
	struct tickets_opts	opts = { false, out };
	struct tk_run		run;
	char			err[ERR_LEN];
	bool			enabled;
	int			nfailed;

	if (tk_run_load(run_dir, &run, err) == -1) {
		log_warnx("tickets: not filed: %s", err);
		return;
	}
	enabled = run.cfg.enabled;
	tk_run_free(&run);
	if (enabled && tickets_file_run(run_dir, &opts, &nfailed, err) == -1)
		log_warnx("tickets: not filed: %s", err);
}
