/*
 * coordinator/report_html.c: untrusted text is text (every markup
 * character an entity, bytes that are not UTF-8 and control characters
 * replaced), secrets are scrubbed before escaping, and a run folder with a
 * hostile row renders a page in which the row cannot open an element.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/util.h"
#include "coordinator/report_html.h"

static char *
escaped(const char *s)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f = open_memstream(&buf, &len);

	report_html_escape(f, s);
	fclose(f);
	return buf;
}

static void
test_escape(void **state)
{
	char	*e;

	(void)state;
	e = escaped("<script>alert(1)</script>\"><img src=x onerror=alert('2')>&amp;");
	assert_string_equal(e, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img "
	    "src=x onerror=alert(&#39;2&#39;)&gt;&amp;amp;");
	free(e);
	/* UTF-8 passes; a lone continuation byte, an overlong '<' and a
	 * surrogate do not, nor control characters; newline and tab do. */
	e = escaped("é€😀\x80|\xc0\xbc|\xed\xa0\x80|\x01\x1b[31m|\n\t");
	assert_string_equal(e, "é€😀\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd[31m|\n\t");
	free(e);
	/* a character cut at the end of the string */
	e = escaped("ab\xe2\x82");
	assert_string_equal(e, "ab\xef\xbf\xbd\xef\xbf\xbd");
	free(e);
}

static void
test_scrub(void **state)
{
	struct report_scrub	 sc = { 0 };
	char			*conn[] = { xstrdup("postgresql://app:s3cr3t-pw@db:5432/x"), NULL };
	char			*words[] = { xstrdup("ghp_tokentokentoken"), NULL };
	char			*s;

	(void)state;
	sc.conninfos = conn;
	sc.words = words;
	s = report_html_scrub(&sc, "FATAL: password s3cr3t-pw rejected; token "
	    "ghp_tokentokentoken, ghp_tokentokentoken");
	assert_null(strstr(s, "s3cr3t-pw"));
	assert_null(strstr(s, "ghp_tokentokentoken"));
	assert_non_null(strstr(s, "password *** rejected; token ***, ***"));
	free(s);
	free(conn[0]);
	free(words[0]);
}

/* A run folder whose only failure carries markup in every field. */
static void
test_hostile_run(void **state)
{
	char		 dir[] = "/tmp/soak-test-rhtml.XXXXXX", err[ERR_LEN], *path, *html;
	const char	*bad = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
	json_t		*r, *res, *inv;
	size_t		 size = 0, len;
	struct report_html_opts o = { 0 };
	const char	*p;
	int		 scripts = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	inv = json_pack("{s:s, s:s, s:[s], s:[[s]], s:i}", "name", bad, "sql", bad,
	    "columns", bad, "rows", bad, "row_count", 1);
	res = json_pack("[{s:i, s:s, s:s, s:s, s:i, s:i, s:s, s:[o], s:[], s:s, s:s}]",
	    "seed", 0, "verdict", "fail", "reason", "invariant", "message", bad,
	    "worker", 1, "duration_ms", 5, "fingerprint", bad, "invariants", inv,
	    "attempts", "replay", bad, "failure_dir", "failures/0");
	r = json_pack("{s:i, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i, s:i, s:i},"
	    " s:s, s:s, s:i, s:[], s:{s:i, s:i, s:i, s:i}, s:i, s:o}",
	    "format", 1, "soak_version", "t", "run_id", bad, "host", bad,
	    "config", "name", bad, "hash", bad, "path", bad,
	    "seeds", "first", 0, "last", 0, "count", 1,
	    "started_at", bad, "finished_at", bad, "wall_ms", 5, "workers",
	    "totals", "pass", 0, "fail", 1, "infra", 0, "missing", 0,
	    "exit_status", 1, "results", res);
	/* a plan that is a URL is text, never a link */
	json_object_set_new(r, "groups", json_pack("[{s:s, s:s, s:s}]", "fingerprint", bad,
	    "story", bad, "plan", "javascript:alert(3)"));
	path = xasprintf("%s/report.json", dir);
	assert_int_equal(json_dump_file(r, path, 0), 0);
	free(path);
	json_decref(r);
	o.run_dir = dir;
	o.previous = "";
	assert_int_equal(report_html_write(&o, &size, err), 0);
	path = xasprintf("%s/report.html", dir);
	html = read_file(path, 1 << 24, &len, err);
	assert_non_null(html);
	assert_int_equal(len, size);
	/* Only the page's own script opens one, and no row an <img>. */
	for (p = html; (p = strstr(p, "<script")) != NULL; p++)
		scripts++;
	assert_int_equal(scripts, 1);
	assert_null(strstr(html, "<img"));
	assert_null(strstr(html, "onerror=alert(2)>"));
	assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img"));
	assert_non_null(strstr(html, "Content-Security-Policy"));
	assert_null(strstr(html, "href=\"javascript"));
	assert_non_null(strstr(html, "plan: javascript:alert(3)</p>"));
	free(html);
	unlink(path);
	free(path);
	path = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	free(path);
}

/* Writes text to dir/name. */
static void
put_file(const char *dir, const char *name, const char *text)
{
	char	*path = xasprintf("%s/%s", dir, name);
	FILE	*f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(path);
}

/*
 * The proxy writes turn sets as hex masks ("cand":"3"): a schedule's
 * turns waiting, a lock wait's arrow and a COMMIT's wakes come from them;
 * the trace fields a later proxy adds show on hover, none required; a
 * line with a field soak never writes so ("cand":"zz") is said, not drawn.
 */
static void
test_trace_masks(void **state)
{
	char		 dir[] = "/tmp/soak-test-rhtml.XXXXXX", err[ERR_LEN], *path, *html;
	struct report_html_opts o = { 0 };
	size_t		 len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put_file(dir, "report.json", "{\"format\":1,\"config\":{\"name\":\"m\"},"
	    "\"seeds\":{\"first\":0,\"last\":0,\"count\":1},\"totals\":{\"fail\":1},"
	    "\"results\":[{\"seed\":0,\"verdict\":\"fail\",\"reason\":\"invariant\","
	    "\"message\":\"x\",\"duration_ms\":40,\"fingerprint\":\"m|invariant|x\","
	    "\"invariants\":[],\"failure_dir\":\"failures/0\"}]}\n");
	path = xasprintf("%s/failures/0", dir);
	assert_int_equal(mkdir_p(path, 0755, err), 0);
	free(path);
	put_file(dir, "failures/0/result.json", "{\"seed\":0,\"duration_ms\":40,\"turns\":["
	    "{\"round\":0,\"turn\":0,\"status\":\"ok\",\"code\":0,\"start_ms\":1,\"end_ms\":30},"
	    "{\"round\":0,\"turn\":1,\"status\":\"ok\",\"code\":0,\"start_ms\":2,\"end_ms\":35}]}\n");
	put_file(dir, "failures/0/trace.jsonl",
	    "{\"proxy\":\"db\",\"turn\":0,\"conn\":0,\"exchange\":0,\"fault\":\"none\","
	    "\"step\":1,\"cand\":\"3\",\"pg\":\"simple\",\"sql\":\"UPDATE a\",\"wakes\":\"a\"}\n"
	    "{\"proxy\":\"db\",\"turn\":1,\"conn\":0,\"exchange\":0,\"fault\":\"none\","
	    "\"step\":2,\"cand\":\"2\",\"pg\":\"simple\",\"sql\":\"UPDATE b\","
	    "\"waits_on\":\"1\",\"forced\":\"outside\",\"req\":\"GET /x HTTP/1.1\","
	    "\"key\":\"00000000000000ab\",\"occ\":3,\"newer\":\"<b>\"}\n"
	    "{\"proxy\":\"db\",\"turn\":1,\"conn\":0,\"exchange\":1,\"fault\":\"none\","
	    "\"step\":3,\"cand\":\"zz\"}\n");
	o.run_dir = dir;
	o.previous = "";
	assert_int_equal(report_html_write(&o, NULL, err), 0);
	path = xasprintf("%s/report.html", dir);
	html = read_file(path, 1 << 24, &len, err);
	free(path);
	assert_non_null(html);
	assert_non_null(strstr(html, "turns waiting at this step: {0,1}"));
	assert_non_null(strstr(html, "<line class=wait "));
	assert_non_null(strstr(html, "waited on a lock held by turns {0}"));
	assert_non_null(strstr(html, "its end woke turns {1,3}: PostgreSQL's order"));
	assert_non_null(strstr(html, "forced: outside"));
	assert_non_null(strstr(html, "statement key 00000000000000ab, occurrence 3"));
	assert_non_null(strstr(html, "newer: &lt;b&gt;"));
	/* a turn set soak never writes is said, never drawn as no turn */
	assert_non_null(strstr(html, "1 line of the fault trace is not as soak writes "
	    "them, and not drawn: the first, line 3: cand: &quot;zz&quot; is not a "
	    "set of turns (1 to 16 hex digits)"));
	assert_null(strstr(html, "step 3:"));
	free(html);
	path = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	free(path);
}

/*
 * The worker timeline reads the journal with the coordinator's own names
 * (journal.h's events, verdict.h's reasons): every reason shows as
 * itself, in its verdict's colour, a regression's diverged and plan
 * included, and a reason of a newer soak says it is one.
 */
static void
test_timeline_reasons(void **state)
{
	char		 dir[] = "/tmp/soak-test-rhtml.XXXXXX", err[ERR_LEN], *path, *html;
	struct report_html_opts o = { 0 };
	size_t		 len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put_file(dir, "report.json", "{\"format\":1,\"config\":{\"name\":\"m\"},"
	    "\"seeds\":{\"first\":0,\"last\":3,\"count\":4},\"totals\":{\"pass\":4},"
	    "\"workers\":[{\"id\":1,\"name\":\"w1\"}],\"results\":[]}\n");
	put_file(dir, "journal.jsonl",
	    "{\"t\":\"run\",\"format\":1,\"run_id\":\"r\",\"seeds\":[0,3],"
	    "\"started_at_ms\":1000}\n"
	    "{\"t\":\"worker\",\"id\":1,\"name\":\"w1\",\"at_ms\":1001}\n"
	    "{\"t\":\"lease\",\"id\":1,\"worker\":1,\"from\":7,\"confirm\":false,"
	    "\"seeds\":[[7,1]],\"plan\":\"seed-7-x\",\"hash\":\"ab\",\"at_ms\":1002}\n"
	    "{\"t\":\"result\",\"lease\":1,\"seed\":7,\"attempt\":1,\"reason\":\"diverged\","
	    "\"duration_ms\":10,\"detail\":{},\"plan\":\"seed-7-x\",\"at_ms\":1020}\n"
	    "{\"t\":\"lease\",\"id\":2,\"worker\":1,\"from\":8,\"confirm\":false,"
	    "\"seeds\":[[8,1]],\"plan\":\"seed-8-y\",\"hash\":\"cd\",\"at_ms\":1021}\n"
	    "{\"t\":\"result\",\"lease\":2,\"seed\":8,\"attempt\":1,\"reason\":\"plan\","
	    "\"duration_ms\":5,\"detail\":{},\"at_ms\":1030}\n"
	    "{\"t\":\"lease\",\"id\":3,\"worker\":1,\"from\":0,\"confirm\":false,"
	    "\"seeds\":[[0,1],[1,1],[2,1]],\"at_ms\":1031}\n"
	    "{\"t\":\"result\",\"lease\":3,\"seed\":0,\"attempt\":1,\"reason\":\"hang\","
	    "\"duration_ms\":9,\"detail\":{},\"at_ms\":1040}\n"
	    "{\"t\":\"result\",\"lease\":3,\"seed\":1,\"attempt\":1,\"reason\":\"\","
	    "\"duration_ms\":9,\"detail\":{},\"at_ms\":1050}\n"
	    "{\"t\":\"result\",\"lease\":3,\"seed\":2,\"attempt\":1,\"reason\":\"newer\","
	    "\"duration_ms\":9,\"detail\":{},\"at_ms\":1060}\n");
	o.run_dir = dir;
	o.previous = "";
	assert_int_equal(report_html_write(&o, NULL, err), 0);
	path = xasprintf("%s/report.html", dir);
	html = read_file(path, 1 << 24, &len, err);
	free(path);
	assert_non_null(html);
	assert_non_null(strstr(html, "<rect class=\"w-i\""));
	assert_non_null(strstr(html, "seed 7 attempt 1: infra diverged, "));
	assert_non_null(strstr(html, "seed 8 attempt 1: infra plan, "));
	assert_non_null(strstr(html, "seed 0 attempt 1: fail hang, "));
	assert_non_null(strstr(html, "seed 1 attempt 1: pass, "));
	assert_non_null(strstr(html, "seed 2 attempt 1: infra (a reason this soak "
	    "does not know), "));
	assert_null(strstr(html, " other, "));
	free(html);
	path = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	free(path);
}

/* A run folder dir/name: seeds 0..n-1, seed s failing with fps[s % 3] when s % 7 == 1. */
static void
write_run(const char *dir, const char *started, uint64_t n, const char *const fps[3],
    uint64_t recorded)
{
	json_t		*res = json_array(), *r;
	char		*path;
	uint64_t	 s;

	for (s = 0; s < recorded && s < n; s++) {
		bool		 fail = s % 7 == 1;
		const char	*fp = fps[s % 3];

		json_array_append_new(res, json_pack("{s:I, s:s, s:o, s:s, s:o, s:[]}",
		    "seed", (json_int_t)s, "verdict", fail ? "fail" : "pass",
		    "reason", fail ? json_string("invariant") : json_null(),
		    "message", fail ? "1 invariant(s) broken after round 0" : "4 of 4 turns ok",
		    "fingerprint", fail ? json_sprintf("t|invariant|%s", fp) : json_null(),
		    "invariants"));
	}
	r = json_pack("{s:i, s:s, s:{s:s, s:s}, s:{s:I, s:I, s:I}, s:s, s:{s:i}, s:o}",
	    "format", 1, "run_id", started, "config", "name", "t", "hash", "h",
	    "seeds", "first", (json_int_t)0, "last", (json_int_t)(n - 1),
	    "count", (json_int_t)n, "started_at", started, "totals", "fail", 1,
	    "results", res);
	assert_int_equal(mkdir_p(dir, 0755, NULL), 0);
	path = xasprintf("%s/report.json", dir);
	assert_int_equal(json_dump_file(r, path, JSON_INDENT(2)), 0);
	free(path);
	json_decref(r);
}

static char *
render(const char *dir, const char *previous)
{
	struct report_html_opts	 o = { .run_dir = dir, .previous = previous };
	char			 err[ERR_LEN], *path = xasprintf("%s/report.html", dir), *html;
	size_t			 len;

	if (report_html_write(&o, NULL, err) == -1)
		fail_msg("%s", err);
	html = read_file(path, 1 << 26, &len, err);
	assert_non_null(html);
	free(path);
	return html;
}

static size_t
count(const char *s, const char *what)
{
	size_t	n = 0;

	for (; (s = strstr(s, what)) != NULL; s++)
		n++;
	return n;
}

/* Past RH_GRID_CELLS seeds a cell is a bin: 12,000 seeds are 2,400 cells of 5. */
static void
test_binning(void **state)
{
	static const char *const fps[3] = { "a", "b", "c" };
	char	 root[] = "/tmp/soak-test-rhtml.XXXXXX", *dir, *html, *cmd;

	(void)state;
	assert_non_null(mkdtemp(root));
	dir = xasprintf("%s/run", root);
	write_run(dir, "2026-11-30T00:00:00Z", 12000, fps, 11000);
	html = render(dir, "");
	assert_int_equal(count(html, "class=\"c "), 2400);
	assert_non_null(strstr(html, "title=\"seeds 0..4: 1 fail 4 pass\""));
	/* the last 1,000 seeds never reported */
	assert_non_null(strstr(html, "title=\"seeds 11995..11999: 5 without a verdict\""));
	free(html);
	free(dir);
	/* a run at the threshold is a cell a seed */
	dir = xasprintf("%s/small", root);
	write_run(dir, "2026-11-30T00:00:00Z", RH_GRID_CELLS, fps, RH_GRID_CELLS);
	html = render(dir, "");
	assert_int_equal(count(html, "class=\"c "), RH_GRID_CELLS);
	free(html);
	free(dir);
	cmd = xasprintf("rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

/* Against the newest earlier run of the config beside it: new, still, fixed. */
static void
test_previous(void **state)
{
	static const char *const then[3] = { "x", "y", "x" }, *const now[3] = { "y", "z", "z" };
	char	 root[] = "/tmp/soak-test-rhtml.XXXXXX", *a, *b, *c, *html, *cmd, why[512];
	char	*prev, *o;

	(void)state;
	assert_non_null(mkdtemp(root));
	a = xasprintf("%s/a", root);
	b = xasprintf("%s/b", root);
	c = xasprintf("%s/c", root);
	write_run(a, "2026-11-29T00:00:00Z", 50, then, 50);
	write_run(b, "2026-11-30T00:00:00Z", 50, now, 50);
	write_run(c, "2026-12-01T00:00:00Z", 50, then, 50);	/* later: not "previous" */
	/* older than a: earlier, but not the newest of the earlier runs */
	o = xasprintf("%s/o", root);
	write_run(o, "2026-11-28T00:00:00Z", 50, now, 50);
	prev = report_html_previous(b, why, sizeof(why));
	assert_non_null(prev);
	assert_non_null(strstr(prev, "/a"));
	free(prev);
	prev = report_html_previous(a, why, sizeof(why));
	assert_non_null(prev);
	assert_non_null(strstr(prev, "/o"));
	free(prev);
	assert_null(report_html_previous(o, why, sizeof(why)));
	assert_non_null(strstr(why, "No earlier run of t under the output root"));
	html = render(b, NULL);
	assert_non_null(strstr(html, "<tr class=\"new\"><td><span class=\"badge b-new\">new"
	    "</span></td><td><a href=\"#g"));
	assert_int_equal(count(html, "<tr class=\"new\">"), 1);
	assert_int_equal(count(html, "<tr class=\"still\">"), 1);
	assert_int_equal(count(html, "<tr class=fixed>"), 1);
	assert_non_null(strstr(html, "fixed</span></td><td><code>t|invariant|x</code>"));
	free(html);
	cmd = xasprintf("rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(a);
	free(b);
	free(c);
	free(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_hostile_run),
		cmocka_unit_test(test_trace_masks),
		cmocka_unit_test(test_timeline_reasons),
		cmocka_unit_test(test_binning),
		cmocka_unit_test(test_previous),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
