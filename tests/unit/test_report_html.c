/*
 * coordinator/report_html.c: untrusted text is text (every markup
 * character an entity, bytes that are not UTF-8 and control characters
 * replaced), secrets are scrubbed before escaping, and a run folder with a
 * hostile row renders a page in which the row cannot open an element.
 */
#include <setjmp.h>
#include <stdarg.h>
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
	free(html);
	unlink(path);
	free(path);
	path = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
	free(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_hostile_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
