/*
 * libFuzzer target: arbitrary bytes as the untrusted strings of a run
 * (invariant name, SQL, a column, rows, stderr, message, fault trace, run
 * id, config name) rendered into a ticket in both dialects, from memory
 * (tk_render; no run directory).  Asserts what docs/tickets.md "Tickets"
 * promises:
 *
 *   - title, body and comment are valid UTF-8, and JSON can carry them;
 *   - markdown: outside fenced blocks and code spans no raw "<" (but the
 *     soak-fingerprint/soak-run marker lines) and no raw "@";
 *   - markdown: the SQL's fenced block holds exactly the (repaired) SQL: the
 *     text did not close its fence early;
 *   - Jira: an unescaped "{noformat" occurs exactly twice per block (the
 *     text cannot open or close one), and the SQL block holds the
 *     repaired SQL.
 *
 * Input: fields separated by NUL bytes, in the order above; missing ones
 * are absent from the run.  Strings are put into the JSON as they are
 * (json_stringn_nocheck), bytes that are not UTF-8 included, as a report
 * written by something other than soak may hold them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "coordinator/tickets_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_NAME, F_SQL, F_COL, F_ROW1, F_ROW2, F_STDERR, F_MSG, F_TRACE,
    F_RUNID, F_CONFIG, F_N };

#define CHECK(c, what) do {						\
	if (!(c)) {							\
		fprintf(stderr, "fuzz_tickets: %s\n", what);		\
		abort();						\
	}								\
} while (0)

static json_t *
raw(const char *s)
{
	return json_stringn_nocheck(s, strlen(s));
}

/* Outside fences and code spans: no "<" (but markers) and no "@". */
static void
check_md_inert(const char *body)
{
	const char	*line = body, *p, *end;
	size_t		 fence = 0, n, ticks, k;

	for (; *line != '\0'; line = end) {
		const char *nl = strchr(line, '\n');

		end = nl ? nl + 1 : line + strlen(line);
		if (fence == 0 && strncmp(line, "<!-- soak-", 10) == 0)
			continue;
		for (n = 0; line[n] == '~'; n++)
			;
		if (fence == 0 && n >= 3) {
			fence = n;
			continue;
		}
		if (fence > 0) {
			if (n >= fence && line + n + 1 == end)
				fence = 0;
			continue;
		}
		for (p = line; p < end; ) {
			if (*p == '`') {
				for (ticks = 0; p[ticks] == '`'; ticks++)
					;
				p += ticks;
				for (;;) {
					CHECK(p < end, "markdown: a code span is not "
					    "closed on its line");
					if (*p != '`') {
						p++;
						continue;
					}
					for (k = 0; p[k] == '`'; k++)
						;
					p += k;
					if (k == ticks)
						break;
				}
				continue;
			}
			CHECK(*p != '<', "markdown: a raw '<' outside code");
			CHECK(*p != '@', "markdown: a raw '@' outside code");
			p++;
		}
	}
	CHECK(fence == 0, "markdown: a fence is never closed");
}

/* The SQL block holds the repaired SQL whole: no early close. */
static void
check_md_sql(const char *body, const char *sql)
{
	char		*want = tk_utf8_clean(sql, strlen(sql));
	const char	*p, *c;
	size_t		 n, w = strlen(want), tildes = 0;

	/* The first fence of the body is the SQL's ("~" is escaped in text). */
	p = strstr(body, "\n~~~");
	CHECK(p != NULL, "markdown: no SQL block");
	for (p++; *p == '~'; p++)
		tildes++;
	CHECK(tildes >= 4, "markdown: the SQL fence is short");
	CHECK(strncmp(p, "sql\n", 4) == 0, "markdown: the first fence is not "
	    "the SQL's");
	c = p + 4;
	CHECK(strncmp(c, want, w) == 0, "markdown: the SQL block lost text");
	c += w;
	if (w > 0 && want[w - 1] != '\n')
		CHECK(*c++ == '\n', "markdown: no newline after the SQL");
	for (n = 0; c[n] == '~'; n++)
		;
	CHECK(n == tildes && c[n] == '\n', "markdown: the SQL block is not "
	    "closed right after the SQL");
	free(want);
}

static void
check_jira(const char *body, const char *sql, size_t blocks)
{
	const char	*p;
	size_t		 n = 0;

	/* "\{noformat\}" is escaped inline text, shown as typed. */
	for (p = body; (p = strcasestr(p, "{noformat")) != NULL; p++)
		if (p == body || p[-1] != '\\')
			n++;
	CHECK(n == 2 * blocks, "jira: the text opened or closed a {noformat}");
	if (sql != NULL) {
		char	*want = tk_utf8_clean(sql, strlen(sql));

		p = strstr(body, "\n\n{noformat}\n");
		CHECK(p != NULL, "jira: no SQL block");
		/* No "{noformat" in want: the count above would have caught it
		 * unless neutralised, so compare only when there is none. */
		if (strcasestr(want, "{noformat") == NULL)
			CHECK(strncmp(p + 13, want, strlen(want)) == 0,
			    "jira: the SQL block lost text");
		free(want);
	}
}

static void
check_common(const struct tk_ticket *t)
{
	json_t	*j;

	CHECK(tk_utf8_valid(t->title, strlen(t->title)), "title not UTF-8");
	CHECK(tk_utf8_valid(t->body, strlen(t->body)), "body not UTF-8");
	CHECK(tk_utf8_valid(t->comment, strlen(t->comment)), "comment not UTF-8");
	j = json_pack("{s:s, s:s, s:s}", "title", t->title, "body", t->body,
	    "comment", t->comment);
	CHECK(j != NULL, "the JSON request does not build");
	json_decref(j);
	CHECK(strchr(t->title, '\n') == NULL, "a title with a newline");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char		*f[F_N] = { NULL };
	char			*buf, *p, err[ERR_LEN];
	json_t			*rep, *inv, *rec, *res = NULL, *rows, *row;
	struct tk_run		 run;
	struct tk_ticket	 t;
	uint64_t		 seeds[] = { 7, 11 };
	size_t			 i, nf = 0, blocks;

	buf = xcalloc(size + 1, 1);
	memcpy(buf, data, size);
	for (p = buf; nf < F_N && p <= buf + size; p += strlen(p) + 1)
		f[nf++] = p;

	rows = json_array();
	row = json_array();
	json_array_append_new(row, raw(f[F_ROW1] ? f[F_ROW1] : "r"));
	json_array_append_new(row, json_null());
	json_array_append_new(rows, row);
	if (f[F_ROW2] != NULL) {
		row = json_array();
		json_array_append_new(row, raw(f[F_ROW2]));
		json_array_append_new(row, raw(f[F_ROW2]));
		json_array_append_new(rows, row);
	}
	inv = json_object();
	if (f[F_NAME] != NULL)
		json_object_set_new(inv, "name", raw(f[F_NAME]));
	if (f[F_SQL] != NULL)
		json_object_set_new(inv, "sql", raw(f[F_SQL]));
	json_object_set_new(inv, "columns", json_pack("[o, s]",
	    raw(f[F_COL] ? f[F_COL] : "c"), "d"));
	json_object_set_new(inv, "rows", rows);
	json_object_set_new(inv, "row_count", json_integer(3));
	rec = json_pack("{s:i, s:s, s:s, s:[o], s:s, s:b}", "seed", 7,
	    "verdict", "fail", "reason", "invariant", "invariants", inv,
	    "replay", "soak replay c.yaml --seed 7", "reproduced", 0);
	if (f[F_MSG] != NULL)
		json_object_set_new(rec, "message", raw(f[F_MSG]));
	json_object_set_new(rec, "confirm", json_pack("{s:o, s:o}", "verdict",
	    raw(f[F_MSG] ? f[F_MSG] : "pass"), "fingerprint",
	    raw(f[F_NAME] ? f[F_NAME] : "x")));
	rep = json_pack("{s:i, s:o, s:o, s:{s:o, s:o}, s:[o]}", "format", 1,
	    "run_id", raw(f[F_RUNID] ? f[F_RUNID] : "run-1"), "host",
	    raw(f[F_ROW2] ? f[F_ROW2] : "h"), "config", "name",
	    raw(f[F_CONFIG] ? f[F_CONFIG] : "cfg"), "hash",
	    raw(f[F_COL] ? f[F_COL] : "00ff"), "results", rec);
	CHECK(rep != NULL, "the fuzz input did not make a report");
	if (f[F_STDERR] != NULL)
		res = json_pack("{s:[{s:i, s:i, s:o, s:i, s:i, s:o}]}", "turns",
		    "round", 0, "turn", 1, "status", raw(f[F_STDERR]),
		    "exit_code", 1, "duration_ms", 2, "stderr_tail",
		    raw(f[F_STDERR]));
	if (tk_run_from_json(rep, NULL, &run, err) == -1)
		CHECK(0, err);
	json_decref(rep);

	memset(&t, 0, sizeof(t));
	t.fingerprint = tk_fingerprint(run.config_name,
	    json_array_get(json_object_get(run.report, "results"), 0));
	fp_hash_hex(t.fingerprint, t.hash);
	t.seeds = seeds;
	t.nseeds = 2;
	t.first = json_array_get(json_object_get(run.report, "results"), 0);
	for (i = 0; i < 2; i++) {
		t.infra = i == 1;
		tk_render(&run, &t, TK_MD, res, f[F_TRACE]);
		check_common(&t);
		check_md_inert(t.body);
		check_md_inert(t.comment);
		if (!t.infra && f[F_SQL] != NULL)
			check_md_sql(t.body, f[F_SQL]);
		tk_render(&run, &t, TK_JIRA, res, f[F_TRACE]);
		check_common(&t);
		blocks = t.infra ? 0 : 1 + (f[F_SQL] != NULL) +
		    (f[F_TRACE] != NULL && *f[F_TRACE] != '\0');
		check_jira(t.body, t.infra ? NULL : f[F_SQL], blocks);
		check_jira(t.comment, NULL, t.infra ? 0 : 1);
	}
	free(t.fingerprint);
	free(t.title);
	free(t.body);
	free(t.comment);
	json_decref(res);
	tk_run_free(&run);
	free(buf);
	return 0;
}
