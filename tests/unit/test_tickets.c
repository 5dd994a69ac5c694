/*
 * Unit tests of the ticket filer (grouping, rendering, backoff) and of the
 * fingerprint it shares with the coordinator (coordinator/fingerprint.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "common/util.h"
#include "coordinator/fingerprint.h"
#include "coordinator/tickets.h"
#include "coordinator/tickets_int.h"

static char *
make_run(const char *report)
{
	char	tmpl[] = "/tmp/soak-tickets-unit.XXXXXX", err[ERR_LEN], *dir, *p;

	assert_non_null(mkdtemp(tmpl));
	dir = xstrdup(tmpl);
	p = path_join(dir, "report.json");
	assert_int_equal(write_file(p, report, strlen(report), err), 0);
	free(p);
	return dir;
}

/* A result record; invs is a JSON array text. */
static char *
rec(int seed, const char *verdict, const char *reason, const char *fp,
    const char *invs)
{
	return xasprintf("{\"seed\": %d, \"verdict\": \"%s\", \"reason\": %s%s%s, "
	    "\"message\": \"m\", \"fingerprint\": %s%s%s, \"invariants\": %s, "
	    "\"attempts\": [], \"reproduced\": null, \"replay\": \"soak replay "
	    "c.yaml --seed %d\", \"failure_dir\": null}", seed, verdict,
	    reason ? "\"" : "", reason ? reason : "null", reason ? "\"" : "",
	    fp ? "\"" : "", fp ? fp : "null", fp ? "\"" : "", invs, seed);
}

static char *
report_with(const char *tickets, char **recs)
{
	char	*body = xstrdup(""), *r;
	size_t	 i;

	for (i = 0; recs[i] != NULL; i++) {
		char *nb = xasprintf("%s%s%s", body, i ? "," : "", recs[i]);

		free(body);
		body = nb;
	}
	r = xasprintf("{\"format\": 1, \"soak_version\": \"0.1.0\", \"run_id\": "
	    "\"r-1\", \"host\": \"h\", \"sut_revision\": \"rev9\", \"config\": "
	    "{\"name\": \"cfg\", \"hash\": \"00ff\", \"tickets\": %s}, "
	    "\"results\": [%s]}", tickets, body);
	free(body);
	return r;
}

static void
test_hash(void **state)
{
	char	h[FP_HASH_LEN];

	(void)state;
	fp_hash_hex("", h);
	assert_string_equal(h, "cbf29ce484222325");
	fp_hash_hex("a", h);
	assert_string_equal(h, "af63dc4c8601ec8c");
	fp_hash_hex("reservations|invariant|a rule|b rule", h);
	assert_string_equal(h, "643f0abc06cf7d57");
}

static void
test_fingerprint_rule(void **state)
{
	json_t		*invs;
	const char	**names;
	char		*fp;
	size_t		 n;

	(void)state;
	/* A nameless broken invariant is the empty name, sorted first: the
	 * coordinator's rule, which the filer once disagreed with. */
	invs = json_loads("[{\"name\": \"b\"}, {}, {\"name\": null}, "
	    "{\"name\": \"a\"}]", 0, NULL);
	assert_non_null(invs);
	fp = fp_string("cfg", "invariant", invs);
	assert_string_equal(fp, "cfg|invariant|||a|b");
	free(fp);
	names = fp_names(invs, &n);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "");
	assert_string_equal(names[3], "b");
	assert_null(names[4]);
	free(names);
	/* Only the invariant reason carries names. */
	fp = fp_string("cfg", "hang", invs);
	assert_string_equal(fp, "cfg|hang");
	free(fp);
	fp = fp_string("cfg", "worker-lost", NULL);
	assert_string_equal(fp, "cfg|worker-lost");
	free(fp);
	fp = fp_string("cfg", "invariant", NULL);
	assert_string_equal(fp, "cfg|invariant");
	free(fp);
	fp = fp_string("cfg", NULL, invs);
	assert_string_equal(fp, "cfg|unknown");
	free(fp);
	json_decref(invs);
}

static void
test_fingerprint_groups(void **state)
{
	struct fp_groups	 g;
	struct fp_group		*gr;

	(void)state;
	fp_groups_init(&g, true);
	/* Seeds out of order, as a hand-edited report.json may hold them. */
	gr = fp_groups_add(&g, "c|invariant|A", 40, 0);
	assert_int_equal(gr->count, 1);
	fp_groups_add(&g, "c|hang", 8, 1);
	gr = fp_groups_add(&g, "c|invariant|A", 7, 2);
	assert_int_equal(gr->count, 2);
	fp_groups_add(&g, "c|invariant|A", 90, 3);
	fp_groups_add(&g, "c|invariant|A|B", 3, 4);
	fp_groups_add(&g, "c|invariant|A", 7, 5);	/* a tie keeps the first */
	assert_int_equal(g.n, 3);
	assert_string_equal(g.v[0].fp, "c|invariant|A");
	assert_int_equal(g.v[0].count, 4);
	assert_int_equal(g.v[0].smallest, 7);
	assert_int_equal(g.v[0].first, 2);
	fp_groups_sort(&g);
	assert_string_equal(g.v[0].fp, "c|invariant|A|B");
	assert_string_equal(g.v[1].fp, "c|invariant|A");
	assert_int_equal(g.v[1].first, 2);
	assert_int_equal(g.v[1].seeds[0], 7);
	assert_int_equal(g.v[1].seeds[1], 7);
	assert_int_equal(g.v[1].seeds[2], 40);
	assert_int_equal(g.v[1].seeds[3], 90);
	assert_string_equal(g.v[2].fp, "c|hang");
	assert_int_equal(g.v[2].first, 1);
	fp_groups_free(&g);
	assert_int_equal(g.n, 0);

	/* Counting alone keeps no list. */
	fp_groups_init(&g, false);
	fp_groups_add(&g, "c|crash", 5, 0);
	gr = fp_groups_add(&g, "c|crash", 2, 1);
	assert_int_equal(gr->count, 2);
	assert_int_equal(gr->smallest, 2);
	assert_null(gr->seeds);
	fp_groups_free(&g);
}

static void
test_fingerprint_sorted_and_agrees(void **state)
{
	json_t	*r;
	char	*fp;

	(void)state;
	/* The same record shape the coordinator writes (docs/report.md). */
	r = json_loads("{\"seed\": 17, \"verdict\": \"fail\", \"reason\": "
	    "\"invariant\", \"fingerprint\": \"reservations|invariant|a rule|"
	    "b rule\", \"invariants\": [{\"name\": \"b rule\"}, {\"name\": "
	    "\"a rule\"}]}", 0, NULL);
	assert_non_null(r);
	fp = tk_fingerprint("reservations", r);
	assert_string_equal(fp, "reservations|invariant|a rule|b rule");
	assert_string_equal(fp, json_string_value(json_object_get(r,
	    "fingerprint")));
	free(fp);
	json_decref(r);

	/* guard, hang, crash: the kind alone, whatever invariants say. */
	r = json_loads("{\"reason\": \"guard\", \"invariants\": [{\"name\": "
	    "\"x\"}]}", 0, NULL);
	fp = tk_fingerprint("reservations", r);
	assert_string_equal(fp, "reservations|guard");
	free(fp);
	json_decref(r);
}

static void
test_backoff(void **state)
{
	(void)state;
	assert_int_equal(tk_http_backoff_ms(1, 0), 200);
	assert_int_equal(tk_http_backoff_ms(2, 0), 400);
	assert_int_equal(tk_http_backoff_ms(3, 0), 800);
	assert_int_equal(tk_http_backoff_ms(20, 0), 5000);
	assert_int_equal(tk_http_backoff_ms(1, 1), 1000);
	assert_int_equal(tk_http_backoff_ms(1, 3600), 30000);
}

static void
test_url_escape(void **state)
{
	char	*s;

	(void)state;
	s = pct_encode("group/shop a:b~c");
	assert_string_equal(s, "group%2Fshop%20a%3Ab~c");
	free(s);
}

/* Credentials never leave for a url that is not https:// (nothing is sent). */
static void
test_http_refuses_cleartext(void **state)
{
	struct tk_http	 req;
	char		 err[ERR_LEN], *resp = (char *)1;
	long		 status = 7;

	(void)state;
	memset(&req, 0, sizeof(req));
	req.sink = "github";
	req.method = "GET";
	req.url = "http://127.0.0.1:1/repos/a/b/issues";
	req.auth_header = "Authorization: Bearer tok_unit_secret";
	assert_int_equal(tk_http_do(&req, &status, &resp, err), -1);
	assert_null(resp);
	assert_int_equal(status, 0);
	assert_string_equal(err, "github: GET http://127.0.0.1:1/repos/a/b/issues: "
	    "refused: not https://, the token would travel in clear text (use "
	    "https://, or set tickets.insecure_http: true)");
	req.auth_header = NULL;
	req.userpwd = "bot:tok_unit_secret";
	req.url = "jira.local/rest/api/2/issue";	/* no scheme is http to curl */
	assert_int_equal(tk_http_do(&req, &status, &resp, err), -1);
	assert_non_null(strstr(err, "refused: not https://"));
	assert_null(strstr(err, "tok_unit_secret"));
}

static void
test_build_groups(void **state)
{
	const char	*inv_a = "[{\"name\": \"A\", \"sql\": \"SELECT 1\", "
	    "\"columns\": [\"x|y\"], \"rows\": [[\"1\"], [null]], \"row_count\": 2}]";
	const char	*inv_ab = "[{\"name\": \"B\"}, {\"name\": \"A\"}]";
	char		*recs[8], *report, *dir, err[ERR_LEN];
	struct tk_run	 run;
	struct tk_ticket *tv = NULL;
	size_t		 nt = 0, i;

	(void)state;
	recs[0] = rec(40, "fail", "invariant", "cfg|invariant|A", inv_a);
	recs[1] = rec(7, "fail", "invariant", "cfg|invariant|A", inv_a);
	/* A wrong stored fingerprint must not split the group. */
	recs[2] = rec(90, "fail", "invariant", "cfg|invariant|WRONG", inv_a);
	recs[3] = rec(3, "fail", "invariant", "cfg|invariant|A|B", inv_ab);
	recs[4] = rec(5, "pass", NULL, NULL, "[]");
	recs[5] = rec(6, "infra", "db", NULL, "[]");
	recs[6] = rec(8, "fail", "hang", "cfg|hang", "[]");
	recs[7] = NULL;
	report = report_with("{\"sink\": \"file\", \"labels\": [\"l1\"], "
	    "\"infra\": true}", recs);
	dir = make_run(report);
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_string_equal(run.cfg.sink, "file");
	assert_string_equal(run.cfg.issue_type, "Bug");
	assert_int_equal(tk_build(&run, &tv, &nt, err), 0);
	assert_int_equal(nt, 4);

	assert_string_equal(tv[0].title, "soak: \"A\", \"B\" broken — seed 3");
	assert_string_equal(tv[1].title, "soak: \"A\" broken — seed 7 (+2)");
	assert_int_equal(tv[1].nseeds, 3);
	assert_int_equal(tv[1].seeds[0], 7);
	assert_int_equal(tv[1].seeds[2], 90);
	assert_non_null(strstr(tv[1].body, "7, 40, 90\n"));
	assert_non_null(strstr(tv[1].body, "| x&#124;y |"));
	assert_non_null(strstr(tv[1].body, "| NULL |"));
	assert_non_null(strstr(tv[1].body, "~~~~sql\nSELECT 1\n~~~~"));
	assert_int_equal(tv[1].dialect, TK_MD);
	assert_non_null(strstr(tv[1].body, "rev9"));
	assert_non_null(strstr(tv[1].body, "soak replay c.yaml --seed 7"));
	assert_string_equal(tv[2].title, "soak: cfg hang — seed 8");
	assert_true(tv[3].infra);
	assert_string_equal(tv[3].title, "soak: infra failures in run r-1 (1 seeds)");
	for (i = 0; i < nt; i++) {
		char *m = xasprintf("<!-- soak-fingerprint: %s -->", tv[i].hash);

		assert_non_null(strstr(tv[i].body, m));
		assert_non_null(strstr(tv[i].comment, m));
		assert_string_equal(tv[i].labels[0], "l1");
		assert_int_equal(strncmp(tv[i].labels[1], "soak:", 5), 0);
		assert_null(tv[i].labels[2]);
		free(m);
	}
	tk_tickets_free(tv, nt);
	tk_run_free(&run);
	rm_rf(dir);
	free(dir);
	free(report);
	for (i = 0; recs[i] != NULL; i++)
		free(recs[i]);
}

static void
test_rows_capped(void **state)
{
	char		*rows = xstrdup(""), *inv, *recs[2], *report, *dir;
	char		 err[ERR_LEN];
	struct tk_run	 run;
	struct tk_ticket *tv = NULL;
	size_t		 nt = 0;
	int		 i;

	(void)state;
	for (i = 0; i < 25; i++) {
		char *nr = xasprintf("%s%s[\"row%02d\"]", rows, i ? "," : "", i);

		free(rows);
		rows = nr;
	}
	inv = xasprintf("[{\"name\": \"A\", \"sql\": \"S\", \"columns\": "
	    "[\"c\"], \"rows\": [%s], \"row_count\": 31}]", rows);
	recs[0] = rec(1, "fail", "invariant", NULL, inv);
	recs[1] = NULL;
	report = report_with("null", recs);
	dir = make_run(report);
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_int_equal(tk_build(&run, &tv, &nt, err), 0);
	assert_int_equal(nt, 1);
	assert_non_null(strstr(tv[0].body, "row19"));
	assert_null(strstr(tv[0].body, "row20"));
	assert_non_null(strstr(tv[0].body, "(20 of 31 shown)"));
	tk_tickets_free(tv, nt);
	tk_run_free(&run);
	rm_rf(dir);
	free(dir);
	free(report);
	free(recs[0]);
	free(inv);
	free(rows);
}

static void
test_bad_reports(void **state)
{
	char	 err[ERR_LEN], *dir;
	int	 nfailed = -1;

	(void)state;
	dir = make_run("{\"format\": 1, ");
	assert_int_equal(tickets_file_run(dir, NULL, &nfailed, err), -1);
	assert_non_null(strstr(err, "not valid JSON"));
	rm_rf(dir);
	free(dir);

	dir = make_run("{\"format\": 1, \"run_id\": \"r\", \"config\": {\"name\": "
	    "\"c\", \"tickets\": {\"sink\": \"fax\"}}, \"results\": []}");
	assert_int_equal(tickets_file_run(dir, NULL, &nfailed, err), -1);
	assert_non_null(strstr(err, "\"fax\" is not one of"));
	rm_rf(dir);
	free(dir);

	assert_int_equal(tickets_file_run("/nonexistent-soak", NULL, NULL, err), -1);
	assert_non_null(strstr(err, "report.json"));
}

static void
test_dry_run_and_secret(void **state)
{
	struct tickets_opts	 o;
	struct tk_sink_ctx	 ctx;
	struct tk_run		 run;
	char			*recs[2], *report, *dir, *out = NULL, err[ERR_LEN];
	size_t			 len;
	int			 nfailed = -1;

	(void)state;
	recs[0] = rec(4, "fail", "crash", NULL, "[]");
	recs[1] = NULL;
	report = report_with("{\"sink\": \"github\", \"repo\": \"o/r\", "
	    "\"token_env\": \"SOAK_UNIT_TOKEN\"}", recs);
	dir = make_run(report);
	o.dry_run = true;
	assert_non_null(o.out = open_memstream(&out, &len));
	unsetenv("SOAK_UNIT_TOKEN");	/* a dry run needs no token */
	assert_int_equal(tickets_file_run(dir, &o, &nfailed, err), 0);
	fclose(o.out);
	assert_int_equal(nfailed, 0);
	assert_non_null(strstr(out, "=== github: would file at POST "
	    "https://api.github.com/repos/o/r/issues"));
	assert_non_null(strstr(out, "title: soak: cfg crash — seed 4\n"));

	/* The token reaches the header, never the error text. */
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_int_equal(tk_sink_ctx_init(&ctx, &run, true, err), -1);
	assert_non_null(strstr(err, "SOAK_UNIT_TOKEN"));
	tk_sink_ctx_clear(&ctx);
	setenv("SOAK_UNIT_TOKEN", "s3cr3t-unit", 1);
	assert_int_equal(tk_sink_ctx_init(&ctx, &run, true, err), 0);
	assert_string_equal(ctx.auth_header, "Authorization: Bearer s3cr3t-unit");
	tk_sink_ctx_clear(&ctx);
	tk_run_free(&run);
	unsetenv("SOAK_UNIT_TOKEN");

	rm_rf(dir);
	free(dir);
	free(out);
	free(report);
	free(recs[0]);
}

static void
test_after_run_hook(void **state)
{
	char		*recs[2], *report, *dir, *tdir, *out = NULL;
	size_t		 len;
	struct stat	 st;
	FILE		*f;
	int		 i;

	(void)state;
	recs[0] = rec(2, "fail", "guard", NULL, "[]");
	recs[1] = NULL;
	for (i = 0; i < 2; i++) {
		report = report_with(i ? "{\"sink\": \"file\", \"enabled\": true}" :
		    "{\"sink\": \"file\", \"enabled\": false}", recs);
		dir = make_run(report);
		assert_non_null(f = open_memstream(&out, &len));
		tickets_after_run(dir, f);
		fclose(f);
		tdir = path_join(dir, "tickets");
		/* Only a config with a tickets: section files at run end. */
		assert_int_equal(stat(tdir, &st) == 0, i == 1);
		assert_int_equal(strstr(out, "file: filed") != NULL, i == 1);
		free(tdir);
		free(out);
		out = NULL;
		rm_rf(dir);
		free(dir);
		free(report);
	}
	tickets_after_run("/nonexistent-soak", NULL);	/* a warning, no crash */
	free(recs[0]);
}


/* The cuts and the repair that keep every body valid UTF-8. */
static void
test_utf8(void **state)
{
	char	*c;

	(void)state;
	assert_true(tk_utf8_valid("a\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80", 10));
	assert_false(tk_utf8_valid("\xc3", 1));		/* cut short */
	assert_false(tk_utf8_valid("\xc0\xaf", 2));	/* overlong "/" */
	assert_false(tk_utf8_valid("\xed\xa0\x80", 3));	/* a surrogate */
	assert_false(tk_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(tk_utf8_valid("\xff", 1));
	c = tk_utf8_clean("a\xff" "b\xc3\xa9\xe2\x80", 7);
	assert_string_equal(c, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
	free(c);
	c = tk_utf8_clean("x\x1b[31my\n", 8);	/* a terminal escape */
	assert_string_equal(c, "x\xef\xbf\xbd[31my\n");
	free(c);
	/* "aé…": never inside the two bytes of "é". */
	assert_int_equal(utf8_prefix("a\xc3\xa9\xc3\xa9", strlen("a\xc3\xa9\xc3\xa9"), 2), 1);
	assert_int_equal(utf8_prefix("a\xc3\xa9\xc3\xa9", strlen("a\xc3\xa9\xc3\xa9"), 3), 3);
	assert_int_equal(utf8_prefix("\xe2\x80\x94\xe2\x80\x94", strlen("\xe2\x80\x94\xe2\x80\x94"), 5), 3);
	assert_int_equal(utf8_prefix("abc", strlen("abc"), 10), 3);
	c = tk_plain("x\xe2\x80\x94y", 3);
	assert_string_equal(c, "x…");
	free(c);
	c = tk_marker_id("r-1 --> <b>");
	assert_string_equal(c, "r-1______b_");
	assert_null(strstr(c, "--"));
	free(c);
}

/* A run whose rows, names, SQL and stderr are hostile, on disk. */
static char *
hostile_run(const char *sink, const char *row1, size_t nrows)
{
	json_t	*rep, *rows, *res, *inv, *r;
	char	*dir, *fdir, *p, err[ERR_LEN], *text, tmpl[] =
	    "/tmp/soak-tickets-unit.XXXXXX";
	size_t	 i;

	assert_non_null(mkdtemp(tmpl));
	dir = xstrdup(tmpl);
	rows = json_array();
	json_array_append_new(rows, json_pack("[s, s]", row1, "ok"));
	for (i = 1; i < nrows; i++)
		json_array_append_new(rows, json_pack("[s, s]",
		    i == 1 ? "<img src=x onerror=alert(1)>" :
		    i == 2 ? "[click](http://evil)" :
		    i == 3 ? "@team please look" : "a ` b `` c ```` d",
		    "x|y"));
	inv = json_pack("{s:s, s:s, s:[s, s], s:o, s:i}",
	    "name", "no <b>dup</b> @team [x](http://evil) — refunds",
	    "sql", "SELECT 1\n~~~~~\n{noformat}\n-- ```\n",
	    "columns", "id", "@col", "rows", rows, "row_count", 7);
	r = json_pack("{s:i, s:s, s:s, s:s, s:[o], s:s, s:s}", "seed", 5,
	    "verdict", "fail", "reason", "invariant", "message",
	    "boom <script>x</script> @ops _em_ a_ _b", "invariants", inv,
	    "replay", "soak replay c.yaml --seed 5", "failure_dir", "failures/5");
	rep = json_pack("{s:i, s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s}}, "
	    "s:[o]}", "format", 1, "run_id", "r-1", "host", "h<i>",
	    "config", "name", "cfg", "tickets", "sink", sink, "repo", "o/r",
	    "project", "P", "url", "https://tracker.invalid", "results", r);
	assert_non_null(rep);
	text = json_dumps(rep, 0);
	p = path_join(dir, "report.json");
	assert_int_equal(write_file(p, text, strlen(text), err), 0);
	free(p);
	free(text);
	fdir = path_join(dir, "failures/5");
	assert_int_equal(mkdir_p(fdir, 0755, err), 0);
	res = json_pack("{s:[{s:i, s:i, s:s, s:i, s:i, s:s}]}", "turns",
	    "round", 0, "turn", 1, "status", "error", "exit_code", 1,
	    "duration_ms", 3, "stderr_tail", "x\npanic: <img src=y> @here [a](b)\n");
	text = json_dumps(res, 0);
	p = path_join(fdir, "result.json");
	assert_int_equal(write_file(p, text, strlen(text), err), 0);
	free(p);
	free(text);
	/* trace.jsonl is read raw: a byte that is not UTF-8 reaches us. */
	p = path_join(fdir, "trace.jsonl");
	text = "{\"x\": \"\xff\xfe\"}\n~~~~~~~~\n";
	assert_int_equal(write_file(p, text, strlen(text), err), 0);
	free(p);
	free(fdir);
	json_decref(res);
	json_decref(rep);
	return dir;
}

/* Whether every "@" and "<" of the markdown body is inside code. */
static void
assert_md_inert(const char *body)
{
	const char	*p = body, *line;
	size_t		 fence = 0, n;

	/* Skip the two marker lines: soak's own HTML comments. */
	while (strncmp(p, "<!-- soak-", 10) == 0)
		p = strchr(p, '\n') + 1;
	for (line = p; *line != '\0'; line = p) {
		const char *end = strchr(line, '\n');

		p = end ? end + 1 : line + strlen(line);
		for (n = 0; line[n] == '~'; n++)
			;
		if (fence == 0 && n >= 3) {
			fence = n;
			continue;
		}
		if (fence > 0) {
			if (n >= fence)
				fence = 0;
			continue;
		}
		{
			const char	*q = line;
			size_t		 ticks, k;

			while (q < p) {
				if (*q == '`') {
					for (ticks = 0; q[ticks] == '`'; ticks++)
						;
					q += ticks;
					/* the closing run of the same length */
					for (;;) {
						assert_true(q < p);
						if (*q == '`') {
							for (k = 0; q[k] == '`'; k++)
								;
							q += k;
							if (k == ticks)
								break;
						} else
							q++;
					}
					continue;
				}
				if (*q == '<' || *q == '@')
					fail_msg("raw '%c' outside code: %.*s", *q,
					    (int)(p - line), line);
				q++;
			}
		}
	}
	assert_int_equal(fence, 0);
}

static void
test_render_hostile_md(void **state)
{
	char		 row[256], *dir, err[ERR_LEN], *cut;
	struct tk_run	 run;
	struct tk_ticket *tv = NULL;
	size_t		 nt = 0, i;

	(void)state;
	/* "a" and 100 "é": 201 bytes, cut at 160 lands inside an "é". */
	row[0] = 'a';
	for (i = 0; i < 100; i++)
		memcpy(row + 1 + 2 * i, "\xc3\xa9", 2);
	row[201] = '\0';
	dir = hostile_run("github", row, 5);
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_int_equal(tk_build(&run, &tv, &nt, err), 0);
	assert_int_equal(nt, 1);
	assert_int_equal(tv[0].dialect, TK_MD);
	assert_int_equal(tk_ticket_check(&tv[0], err), 0);
	assert_true(tk_utf8_valid(tv[0].body, strlen(tv[0].body)));
	/* 1 + 79 * 2 = 159 bytes kept, then the mark of the cut. */
	cut = xasprintf("| a%.158s… | ok |", row + 1);
	assert_non_null(strstr(tv[0].body, cut));
	free(cut);
	assert_md_inert(tv[0].body);
	assert_md_inert(tv[0].comment);
	assert_null(strstr(tv[0].body, "<img"));
	assert_null(strstr(tv[0].body, "<script"));
	assert_null(strstr(tv[0].body, "[click]"));
	/* A link only in the fingerprint's code span (the invariant name). */
	assert_ptr_equal(strstr(tv[0].body, "](http"), strstr(strstr(tv[0].body,
	    "| fingerprint | `cfg\\|invariant\\|no <b>dup</b> @team "), "[x]") + 2);
	assert_non_null(strstr(tv[0].body, "| &lt;img src=x onerror=alert(1)&gt; | "
	    "x&#124;y |"));
	assert_non_null(strstr(tv[0].body, "| &#91;click&#93;(http://evil) |"));
	assert_non_null(strstr(tv[0].body, "| &#64;&#8203;team please look |"));
	assert_non_null(strstr(tv[0].body, "| a &#96; b &#96;&#96; c "));
	assert_non_null(strstr(tv[0].body, "### Invariant: no &lt;b&gt;dup&lt;/b&gt; "
	    "&#64;&#8203;team &#91;x&#93;(http://evil) — refunds\n"));
	assert_non_null(strstr(tv[0].body, "| &#64;&#8203;col |"));
	/* snake_case stays; an "_" that could start emphasis does not. */
	assert_non_null(strstr(tv[0].body, "unknown (set SOAK_SUT_REVISION)"));
	assert_non_null(strstr(tv[0].body, "Message: boom &lt;script&gt;x&lt;/script&gt; "
	    "&#64;&#8203;ops &#95;em&#95; a&#95; &#95;b\n"));
	assert_non_null(strstr(tv[0].body, "Message: boom &lt;script&gt;"));
	assert_non_null(strstr(tv[0].body, "panic: &lt;img src=y&gt; "
	    "&#64;&#8203;here &#91;a&#93;(b) |"));
	/* The SQL holds a run of 5 tildes: its fence is 6, and it is whole. */
	assert_non_null(strstr(tv[0].body, "~~~~~~sql\nSELECT 1\n~~~~~\n"
	    "{noformat}\n-- ```\n~~~~~~\n"));
	/* The trace's bad bytes are repaired, its 8 tildes out-fenced. */
	assert_non_null(strstr(tv[0].body, "~~~~~~~~~json\n{\"x\": \""
	    "\xef\xbf\xbd\xef\xbf\xbd\"}\n~~~~~~~~\n~~~~~~~~~\n"));
	/* The fingerprint holds the names: a code span, "|" escaped. */
	assert_non_null(strstr(tv[0].body, "| fingerprint | `cfg\\|invariant\\|"
	    "no <b>dup</b> @team"));
	/* A title is plain text: the names as they are, but valid. */
	assert_string_equal(tv[0].title, "soak: \"no <b>dup</b> @team "
	    "[x](http://evil) — refunds\" broken — seed 5");
	tk_tickets_free(tv, nt);
	tk_run_free(&run);
	rm_rf(dir);
	free(dir);
}

/* Jira gets wiki markup: {noformat} the text cannot close, Jira tables. */
static void
test_render_hostile_jira(void **state)
{
	char		 *dir, err[ERR_LEN], *p;
	struct tk_run	 run;
	struct tk_ticket *tv = NULL;
	size_t		 nt = 0, n;

	(void)state;
	dir = hostile_run("jira", "[~admin] *bold* {code}x{code} -strike- a\\b", 5);
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_int_equal(tk_build(&run, &tv, &nt, err), 0);
	assert_int_equal(nt, 1);
	assert_int_equal(tv[0].dialect, TK_JIRA);
	assert_int_equal(tk_ticket_check(&tv[0], err), 0);
	/* No markdown at all. */
	assert_null(strstr(tv[0].body, "~~~~sql"));
	assert_null(strstr(tv[0].body, "###"));
	assert_null(strstr(tv[0].body, "<!--"));
	assert_null(strstr(tv[0].body, "|---|"));
	assert_non_null(strstr(tv[0].body, "h3. Invariant: no <b>dup</b> "
	    "@\xe2\x80\x8bteam \\[x\\]\\(http://evil\\) — refunds\n"));
	assert_non_null(strstr(tv[0].body, "|| id || @\xe2\x80\x8b" "col ||\n"));
	assert_non_null(strstr(tv[0].body, "| \\[\\~admin\\] \\*bold\\* \\{code\\}x"
	    "\\{code\\} \\-strike\\- a\xef\xbc\xbc" "b | ok |\n"));
	assert_non_null(strstr(tv[0].body, "| \\[click\\]\\(http://evil\\) | "
	    "x\\|y |\n"));
	/* The SQL says {noformat}: a zero width space keeps the block whole. */
	assert_non_null(strstr(tv[0].body, "{noformat}\nSELECT 1\n~~~~~\n"
	    "{\xe2\x80\x8bnoformat}\n-- ```\n{noformat}\n"));
	/* Three blocks (SQL, trace, replay): six delimiters, no more. */
	for (n = 0, p = tv[0].body; (p = strstr(p, "{noformat}")) != NULL; p++)
		n++;
	assert_int_equal(n, 6);
	assert_non_null(strstr(tv[0].body, "|| fingerprint | cfg\\|invariant\\|"));
	assert_non_null(strstr(tv[0].body, "soak\\-fingerprint: "));
	assert_non_null(strstr(tv[0].comment, "Seen again in run r\\-1 "));
	tk_tickets_free(tv, nt);
	tk_run_free(&run);
	rm_rf(dir);
	free(dir);
}

/*
 * A body that cannot be built is an error naming the ticket, and nothing
 * is sent: not an empty POST (the tracker here is a closed port, so a
 * request would fail differently).
 */
static void
test_body_not_built(void **state)
{
	struct tk_ticket	 t;
	struct tk_run		 run;
	struct tk_sink_ctx	 ctx;
	char			*labels[] = { "soak:0123456789abcdef", NULL };
	char			*recs[2], *report, *dir, err[ERR_LEN], *ref = NULL;
	uint64_t		 seed = 3;

	(void)state;
	recs[0] = rec(3, "fail", "crash", NULL, "[]");
	recs[1] = NULL;
	report = report_with("{\"sink\": \"github\", \"repo\": \"o/r\", \"url\": "
	    "\"http://127.0.0.1:1\", \"insecure_http\": true}", recs);
	dir = make_run(report);
	assert_int_equal(tk_run_load(dir, &run, err), 0);
	assert_int_equal(tk_sink_ctx_init(&ctx, &run, false, err), 0);
	memset(&t, 0, sizeof(t));
	t.fingerprint = "cfg|crash";
	memcpy(t.hash, "0123456789abcdef", FP_HASH_LEN);
	t.seeds = &seed;
	t.nseeds = 1;
	t.title = "soak: cfg crash \xe2\x80 seed 3";	/* "—" cut in half */
	t.body = "body";
	t.comment = "comment";
	t.labels = labels;
	assert_int_equal(tk_ticket_check(&t, err), -1);
	assert_string_equal(err, "ticket 0123456789abcdef (soak: cfg crash "
	    "\xef\xbf\xbd\xef\xbf\xbd seed 3): the title is not valid UTF-8 and cannot be "
	    "sent; not filed");
	t.title = "soak: cfg crash";
	t.body = "| a\xc3 |";
	assert_int_equal(tk_ticket_check(&t, err), -1);
	assert_non_null(strstr(err, "the body is not valid UTF-8"));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	assert_int_equal(tk_sink_lookup("github")->create(&ctx, &t, &ref, err), -1);
	assert_null(ref);
	assert_string_equal(err, "github: POST http://127.0.0.1:1/repos/o/r/issues: "
	    "the request body for ticket 0123456789abcdef could not be built (a "
	    "string in it is not valid UTF-8); nothing sent");
	t.comment = "c\xff";
	assert_int_equal(tk_sink_lookup("github")->comment(&ctx, &t, "1", err), -1);
	assert_non_null(strstr(err, "could not be built"));
	curl_global_cleanup();
	tk_sink_ctx_clear(&ctx);
	tk_run_free(&run);
	rm_rf(dir);
	free(dir);
	free(report);
	free(recs[0]);
}

/* tk_render from memory: no run directory, no file read. */
static void
test_render_in_memory(void **state)
{
	json_t			*rep;
	struct tk_run		 run;
	struct tk_ticket	 t;
	char			 err[ERR_LEN];
	uint64_t		 seeds[] = { 4, 9 };

	(void)state;
	rep = json_pack("{s:i, s:s, s:{s:s}, s:[{s:i, s:s, s:s, s:[{s:s}]}]}",
	    "format", 1, "run_id", "m-1", "config", "name", "cfg", "results",
	    "seed", 4, "verdict", "fail", "reason", "invariant", "invariants",
	    "name", "A");
	assert_int_equal(tk_run_from_json(rep, NULL, &run, err), 0);
	json_decref(rep);
	memset(&t, 0, sizeof(t));
	t.fingerprint = xstrdup("cfg|invariant|A");
	t.seeds = seeds;
	t.nseeds = 2;
	t.first = json_array_get(json_object_get(run.report, "results"), 0);
	tk_render(&run, &t, TK_MD, NULL, "{\"t\": 1}\n");
	assert_string_equal(t.title, "soak: \"A\" broken — seed 4 (+1)");
	assert_non_null(strstr(t.body, "#### Fault trace (first 1 of 1 exchanges)"));
	tk_render(&run, &t, TK_JIRA, NULL, NULL);
	assert_non_null(strstr(t.body, "h3. Invariant: A\n"));
	assert_null(strstr(t.body, "Fault trace"));
	free(t.fingerprint);
	free(t.title);
	free(t.body);
	free(t.comment);
	tk_run_free(&run);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_fingerprint_rule),
		cmocka_unit_test(test_fingerprint_groups),
		cmocka_unit_test(test_fingerprint_sorted_and_agrees),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_url_escape),
		cmocka_unit_test(test_http_refuses_cleartext),
		cmocka_unit_test(test_build_groups),
		cmocka_unit_test(test_rows_capped),
		cmocka_unit_test(test_bad_reports),
		cmocka_unit_test(test_dry_run_and_secret),
		cmocka_unit_test(test_after_run_hook),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_render_hostile_md),
		cmocka_unit_test(test_render_hostile_jira),
		cmocka_unit_test(test_body_not_built),
		cmocka_unit_test(test_render_in_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
