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

#define TK_REPORT_CAP	(256u << 20)	/* report.json of a 100k-seed sweep fits */
#define TK_SIDE_CAP	(16u << 20)	/* result.json, trace.jsonl */
#define TK_CELL_MAX	160		/* characters of one table cell */
#define TK_SEEDS_LISTED	2000		/* trackers cap bodies near 64 KiB */

static const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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

int
tk_run_load(const char *run_dir, struct tk_run *run, char *err)
{
	json_error_t	 jerr;
	const json_t	*config, *results;
	char		*path, *text = NULL;
	size_t		 i, len;

	memset(run, 0, sizeof(*run));
	run->run_dir = xstrdup(run_dir);
	path = path_join(run_dir, "report.json");
	if ((text = read_file(path, TK_REPORT_CAP, &len, err)) == NULL)
		goto fail;
	if ((run->report = json_loadb(text, len, 0, &jerr)) == NULL) {
		errf(err, "%s:%d:%d: not valid JSON: %s", path, jerr.line,
		    jerr.column, jerr.text);
		goto fail;
	}
	if (!json_is_object(run->report) ||
	    json_integer_value(json_object_get(run->report, "format")) != 1) {
		errf(err, "%s: not a soak report (want \"format\": 1)", path);
		goto fail;
	}
	config = json_object_get(run->report, "config");
	results = json_object_get(run->report, "results");
	run->run_id = jstr(run->report, "run_id");
	run->config_name = jstr(config, "name");
	if (run->run_id == NULL || run->config_name == NULL ||
	    !json_is_array(results)) {
		errf(err, "%s: missing run_id, config.name or results[]", path);
		goto fail;
	}
	for (i = 0; i < json_array_size(results); i++) {
		const json_t *r = json_array_get(results, i);

		if (!json_is_integer(json_object_get(r, "seed")) ||
		    jstr(r, "verdict") == NULL) {
			errf(err, "%s: results[%zu] has no integer seed or no "
			    "verdict", path, i);
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
	free(path);
	free(text);
	return 0;
fail:
	free(path);
	free(text);
	tk_run_free(run);
	return -1;
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

/* A markdown table cell: one line, pipes escaped, bounded. */
static void
put_cell(FILE *f, const char *s)
{
	size_t	n = 0;

	if (s == NULL) {
		fputs("NULL", f);
		return;
	}
	for (; *s != '\0' && n < TK_CELL_MAX; s++, n++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n' || *s == '\r' || *s == '\t')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
	if (*s != '\0')
		fputs("…", f);
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
put_fence(FILE *f, const char *lang, const char *text)
{
	/* Four tildes: an SQL comment or stderr tail can hold ``` but not this. */
	fprintf(f, "~~~~%s\n%s%s~~~~\n", lang, text,
	    text[0] != '\0' && text[strlen(text) - 1] == '\n' ? "" : "\n");
}

static void
put_invariant(FILE *f, const json_t *inv)
{
	const json_t	*cols = json_object_get(inv, "columns");
	const json_t	*rows = json_object_get(inv, "rows");
	const char	*sql = jstr(inv, "sql");
	json_int_t	 total = json_integer_value(json_object_get(inv, "row_count"));
	size_t		 i, j, shown;

	fprintf(f, "### Invariant: ");
	put_cell(f, jstr(inv, "name"));
	fprintf(f, "\n\n");
	if (sql != NULL)
		put_fence(f, "sql", sql);
	shown = json_array_size(rows);
	if (shown > TK_MAX_ROWS)
		shown = TK_MAX_ROWS;
	if ((size_t)total < shown)
		total = (json_int_t)shown;
	if (shown == 0 || json_array_size(cols) == 0) {
		fprintf(f, "\n%" JSON_INTEGER_FORMAT " violating row(s).\n\n", total);
		return;
	}
	fprintf(f, "\nViolating rows (%zu of %" JSON_INTEGER_FORMAT " shown):\n\n|",
	    shown, total);
	for (j = 0; j < json_array_size(cols); j++) {
		fputc(' ', f);
		put_cell(f, json_string_value(json_array_get(cols, j)));
		fputs(" |", f);
	}
	fputs("\n|", f);
	for (j = 0; j < json_array_size(cols); j++)
		fputs("---|", f);
	fputc('\n', f);
	for (i = 0; i < shown; i++) {
		const json_t *row = json_array_get(rows, i);

		fputc('|', f);
		for (j = 0; j < json_array_size(cols); j++) {
			fputc(' ', f);
			put_cell(f, json_string_value(json_array_get(row, j)));
			fputs(" |", f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* The last non-empty line of a stderr tail: enough to recognise a panic. */
static void
put_tail_line(FILE *f, const char *s)
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
		put_cell(f, line);
		free(line);
	}
}

static void
put_turns(FILE *f, const struct tk_run *run, const json_t *first)
{
	const json_t	*turns;
	json_t		*res = NULL;
	const char	*fdir = jstr(first, "failure_dir");
	char		*dir = NULL, *path = NULL, *text = NULL, err[ERR_LEN];
	size_t		 i, len;

	if (fdir == NULL)
		return;
	dir = path_join(run->run_dir, fdir);

	path = path_join(dir, "result.json");
	if ((text = read_file(path, TK_SIDE_CAP, &len, err)) != NULL &&
	    (res = json_loadb(text, len, 0, NULL)) != NULL &&
	    json_array_size(turns = json_object_get(res, "turns")) > 0) {
		fprintf(f, "#### Turn outcomes\n\n"
		    "| round | turn | status | exit | ms | stderr (last line) |\n"
		    "|---|---|---|---|---|---|\n");
		for (i = 0; i < json_array_size(turns); i++) {
			const json_t	*t = json_array_get(turns, i);
			const json_t	*code = json_object_get(t, "exit_code");
			const json_t	*sig = json_object_get(t, "signal");
			const char	*st = jstr(t, "stderr_tail");

			if (code == NULL)
				code = json_object_get(t, "exit");
			if (st == NULL)
				st = jstr(t, "stderr");
			fprintf(f, "| %" JSON_INTEGER_FORMAT " | %" JSON_INTEGER_FORMAT
			    " | ", json_integer_value(json_object_get(t, "round")),
			    json_integer_value(json_object_get(t, "turn")));
			put_cell(f, jstr(t, "status"));
			if (json_is_integer(sig) && json_integer_value(sig) != 0)
				fprintf(f, " | signal %" JSON_INTEGER_FORMAT,
				    json_integer_value(sig));
			else if (json_is_integer(code))
				fprintf(f, " | %" JSON_INTEGER_FORMAT,
				    json_integer_value(code));
			else
				fputs(" | ", f);
			fprintf(f, " | %" JSON_INTEGER_FORMAT " | ",
			    json_integer_value(json_object_get(t, "duration_ms")));
			put_tail_line(f, st);
			fputs(" |\n", f);
		}
		fputc('\n', f);
	}
	json_decref(res);
	free(text);
	free(path);

	path = path_join(dir, "trace.jsonl");
	if ((text = read_file(path, TK_SIDE_CAP, &len, err)) != NULL && len > 0) {
		size_t	lines = 0, total = 0;
		char	*p, *cut = NULL;

		for (p = text; *p != '\0'; p++)
			if (*p == '\n' || p[1] == '\0') {
				total++;
				if (total == TK_TRACE_LINES && cut == NULL)
					cut = p + 1;
			}
		lines = total < TK_TRACE_LINES ? total : TK_TRACE_LINES;
		if (cut != NULL)
			*cut = '\0';
		fprintf(f, "#### Fault trace (first %zu of %zu exchanges)\n\n",
		    lines, total);
		put_fence(f, "json", text);
		fputc('\n', f);
	}
	free(text);
	free(path);
	free(dir);
}

static void
put_run_meta(FILE *f, const struct tk_run *run, const struct tk_ticket *t)
{
	fprintf(f, "### Run\n\n| | |\n|---|---|\n| run | ");
	put_cell(f, run->run_id);
	fprintf(f, " |\n| config | ");
	put_cell(f, run->config_name);
	if (run->config_hash != NULL)
		fprintf(f, " (`%s`)", run->config_hash);
	fprintf(f, " |\n| soak version | ");
	put_cell(f, run->soak_version ? run->soak_version : SOAK_VERSION);
	fprintf(f, " |\n| system under test | ");
	put_cell(f, run->sut_revision ? run->sut_revision : "unknown "
	    "(set SOAK_SUT_REVISION)");
	fprintf(f, " |\n| host | ");
	put_cell(f, run->host ? run->host : "unknown");
	fprintf(f, " |\n| fingerprint | `");
	put_cell(f, t->fingerprint);
	fprintf(f, "` |\n");
}

static void
put_markers(FILE *f, const struct tk_run *run, const struct tk_ticket *t)
{
	fprintf(f, "<!-- soak-fingerprint: %s -->\n<!-- soak-run: %s -->\n",
	    t->hash, run->run_id);
}

/*
 * Whether a replay command's config path is relative: report.json writes
 * it relative to the top of the config's git work tree (report.h).
 */
static bool
replay_from_top(const char *replay)
{
	const char	*p = strstr(replay, " replay ");

	if (p == NULL)
		return false;
	p += strlen(" replay ");
	if (*p == '\'')
		p++;
	return *p != '/' && *p != '\0';
}

static void
render_bug(const struct tk_run *run, struct tk_ticket *t)
{
	const json_t	*first = t->first, *invs = json_object_get(first, "invariants");
	const json_t	*rep = json_object_get(first, "reproduced");
	const char	*reason = jstr(first, "reason"), *replay = jstr(first, "replay");
	const char	*msg = jstr(first, "message");
	size_t		 i, n, len, others = t->nseeds - 1;
	FILE		*f;

	if (reason == NULL)
		reason = "unknown";
	/* Title: the invariant names in fingerprint order, so it is stable. */
	if (reason_parse(reason) == REASON_INVARIANT && json_array_size(invs) > 0) {
		const char	**names = fp_names(invs, &n);

		if ((f = open_memstream(&t->title, &len)) == NULL)
			abort();
		fputs("soak: ", f);
		for (i = 0; i < n; i++)
			fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
		fprintf(f, " broken — seed %" PRIu64, t->seeds[0]);
		if (others > 0)
			fprintf(f, " (+%zu)", others);
		fclose(f);
		free(names);
	}
	if (t->title == NULL)
		t->title = others > 0 ?
		    xasprintf("soak: %s %s — seed %" PRIu64 " (+%zu)",
		    run->config_name, reason, t->seeds[0], others) :
		    xasprintf("soak: %s %s — seed %" PRIu64, run->config_name,
		    reason, t->seeds[0]);

	if ((f = open_memstream(&t->body, &len)) == NULL)
		abort();
	put_markers(f, run, t);
	fprintf(f, "\nsoak found a domain failure (`%s`) in config `%s`: "
	    "%zu failing seed(s) share this fingerprint; the smallest is **%"
	    PRIu64 "**.\n\n", reason, run->config_name, t->nseeds, t->seeds[0]);
	for (i = 0; i < json_array_size(invs); i++)
		put_invariant(f, json_array_get(invs, i));
	fprintf(f, "### Smallest seed: %" PRIu64 "\n\n", t->seeds[0]);
	if (msg != NULL) {
		fputs("Message: ", f);
		put_cell(f, msg);
		fputs("\n\n", f);
	}
	if (json_is_integer(json_object_get(first, "total_turns")))
		fprintf(f, "Successful turns: %" JSON_INTEGER_FORMAT " of %"
		    JSON_INTEGER_FORMAT ".\n\n",
		    json_integer_value(json_object_get(first, "ok_turns")),
		    json_integer_value(json_object_get(first, "total_turns")));
	put_turns(f, run, first);
	if (replay != NULL) {
		fputs("### Replay\n\n", f);
		if (replay_from_top(replay))
			fputs("From the top folder of the repository that holds the "
			    "config:\n\n", f);
		put_fence(f, "sh", replay);
		fputc('\n', f);
	}
	if (json_is_boolean(rep)) {
		const json_t	*cf = json_object_get(first, "confirm");
		const char	*cfp = jstr(cf, "fingerprint");

		fprintf(f, "Confirming re-run of seed %" PRIu64 ": **%s**", t->seeds[0],
		    json_is_true(rep) ? "reproduced" : "did not reproduce");
		if (json_is_integer(json_object_get(cf, "worker")))
			fprintf(f, " (worker %" JSON_INTEGER_FORMAT ")",
			    json_integer_value(json_object_get(cf, "worker")));
		if (json_is_false(rep))
			fprintf(f, "; it ended `%s %s`%s%s%s. The failure depends on "
			    "more than the seed (timing, most often): a replay may need "
			    "a few tries", jstr(cf, "verdict") ?
			    jstr(cf, "verdict") : "?", jstr(cf, "reason") ? jstr(cf, "reason") : "",
			    cfp ? " (fingerprint `" : "", cfp ? cfp : "", cfp ? "`)" : "");
		fputs(".\n\n", f);
	}
	fprintf(f, "### Failing seeds (%zu)\n\n", t->nseeds);
	put_seeds(f, t);
	fputc('\n', f);
	put_run_meta(f, run, t);
	fclose(f);

	if ((f = open_memstream(&t->comment, &len)) == NULL)
		abort();
	put_markers(f, run, t);
	fprintf(f, "\nSeen again in run `%s` (soak %s, system under test %s, "
	    "host %s): %zu failing seed(s), the smallest is **%" PRIu64 "**.\n\n"
	    "Seeds: ", run->run_id,
	    run->soak_version ? run->soak_version : SOAK_VERSION,
	    run->sut_revision ? run->sut_revision : "unknown",
	    run->host ? run->host : "unknown", t->nseeds, t->seeds[0]);
	put_seeds(f, t);
	if (replay != NULL) {
		fputs(replay_from_top(replay) ? "\nReplay, from the top folder of "
		    "the repository that holds the config:\n\n" : "\nReplay:\n\n", f);
		put_fence(f, "sh", replay);
	}
	fclose(f);
}

static void
render_infra(const struct tk_run *run, struct tk_ticket *t,
    const json_t *results)
{
	size_t	i, len;
	FILE	*f;

	t->title = xasprintf("soak: infra failures in run %s (%zu seeds)",
	    run->run_id, t->nseeds);
	if ((f = open_memstream(&t->body, &len)) == NULL)
		abort();
	put_markers(f, run, t);
	fprintf(f, "\n%zu seed(s) of run `%s` (config `%s`) ended `infra` after "
	    "their retries: the environment broke, not the system under test. "
	    "The run is incomplete.\n\n| seed | reason | attempts | message |\n"
	    "|---|---|---|---|\n", t->nseeds, run->run_id, run->config_name);
	for (i = 0; i < json_array_size(results); i++) {
		const json_t *r = json_array_get(results, i);

		if (strcmp(jstr(r, "verdict"), "infra") != 0)
			continue;
		fprintf(f, "| %" PRIu64 " | ", rec_seed(r));
		put_cell(f, jstr(r, "reason"));
		fprintf(f, " | %zu | ", json_array_size(json_object_get(r,
		    "attempts")));
		put_cell(f, jstr(r, "message"));
		fputs(" |\n", f);
	}
	fputc('\n', f);
	put_run_meta(f, run, t);
	fclose(f);
	/* One infra ticket per run: its fingerprint holds the run id, so a
	 * comment only happens when the same run is filed twice. */
	t->comment = xasprintf("<!-- soak-fingerprint: %s -->\n"
	    "<!-- soak-run: %s -->\n\nFiled again for the same run.\n",
	    t->hash, run->run_id);
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
		t->first = json_array_get(results, g.v[i].first);
	}
	fp_groups_free(&g);
	free(infra_fp);
	if (nt > 1)
		qsort(tv, nt, sizeof(*tv), cmp_ticket);
	for (i = 0; i < nt; i++) {
		struct tk_ticket *t = &tv[i];
		size_t n = strv_len(run->cfg.labels);

		if (t->infra)
			render_infra(run, t, results);
		else
			render_bug(run, t);
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
	int			 failed = 0, rc = -1;
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
		if (file_one(sink, &ctx, &tv[i], out, serr) == -1) {
			log_warnx("tickets: not filed (%s): %s", tv[i].title, serr);
			failed++;
		}
	}
	if (!dry)
		curl_global_cleanup();
	if (failed > 0)
		log_warnx("tickets: %d of %zu ticket(s) not filed; the run's "
		    "verdicts and exit status are unchanged", failed, nt);
	rc = 0;
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
