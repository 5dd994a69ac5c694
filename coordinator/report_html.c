/*
 * report.html, the page (coordinator/report_html.h): header, seed grid,
 * failures by fingerprint, coverage, since last time.  The pictures over
 * time are report_lanes.c's.
 */
#include "coordinator/report_html.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/conninfo.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/trace.h"
#include "common/util.h"
#include "coordinator/fingerprint.h"
#include "coordinator/report_html_int.h"

/*
 * The page's own style and script.  Their SHA-256 goes into the
 * Content-Security-Policy, so any other style or script (one a hostile
 * row smuggled past the escaping) does not run.  Colours: Okabe and Ito's
 * palette, told apart with every common colour blindness; the grid's and
 * the marks' meaning never rests on colour alone (legend, titles, shapes).
 */
static const char page_css[] =
":root{--pass:#009E73;--fail:#D55E00;--infra:#E69F00;--ink:#1f2328;--mute:#59636e;"
"--line:#d1d9e0;--panel:#f6f8fa;--accent:#0072B2}"
"*{box-sizing:border-box}"
"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans',"
"'Liberation Sans',Arial,sans-serif;color:var(--ink);background:#fff}"
"header,main,footer{max-width:1180px;margin:0 auto;padding:0 24px}"
"header{padding-top:18px;border-bottom:1px solid var(--line);padding-bottom:10px}"
"footer{color:var(--mute);font-size:12px;padding:24px}"
"h1{font-size:22px;margin:0 0 6px;font-weight:600}"
"h2{font-size:18px;margin:30px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}"
"h3{font-size:15px;margin:16px 0 6px}"
"a{color:var(--accent)}"
"code,pre,.mono,td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace;font-size:12.5px}"
"pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px;"
"overflow:auto;white-space:pre-wrap;word-break:break-word;margin:6px 0}"
".badge{display:inline-block;padding:1px 9px;border-radius:11px;font-weight:600;font-size:13px;"
"color:#fff;vertical-align:2px}"
".b-fail{background:var(--fail)}.b-pass{background:var(--pass)}.b-infra,.b-incomplete{background:var(--infra);color:#000}"
".b-new{background:var(--fail)}.b-still{background:var(--mute)}.b-fixed{background:var(--pass)}.b-flaky{background:var(--infra);color:#000}"
"dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:1px 18px;margin:8px 0}"
"dl.meta dt{color:var(--mute)}dl.meta dd{margin:0}"
"nav{font-size:13px;margin-top:8px}nav a{margin-right:16px}"
".totals span{margin-right:14px;white-space:nowrap}"
".sw{display:inline-block;width:11px;height:11px;border-radius:2px;vertical-align:-1px;margin-right:4px}"
".grid{display:flex;flex-direction:column;gap:2px;margin:8px 0}"
".gr{display:flex;gap:2px;align-items:center}"
".gl{flex:0 0 76px;text-align:right;padding-right:6px;color:var(--mute);font-size:11px;"
"font-variant-numeric:tabular-nums}"
".c{display:block;flex:0 0 13px;height:13px;border-radius:2px}"
".p{background:var(--pass)}.f{background:var(--fail)}.i{background:var(--infra)}"
".m{background:#fff;border:1px dashed #818b98}"
".f.part{background:radial-gradient(circle,var(--fail) 0 3.5px,var(--pass) 4px)}"
".i.part{background:radial-gradient(circle,var(--infra) 0 3.5px,var(--pass) 4px)}"
"a.c:hover,a.c:focus{outline:2px solid var(--ink)}"
".legend{font-size:12.5px;color:var(--mute);margin:4px 0}.legend>span{margin-right:16px;white-space:nowrap}"
".legend svg{display:inline-block;vertical-align:-2px;margin-right:3px}"
".sw.t-ok{background:#cfe6f5;border:1px solid #0072B2}.sw.t-error{background:#f6d3bc;border:1px solid #D55E00}"
".sw.t-signal{background:#000}.sw.t-timeout{background:#f3e49a;border:1px solid #8a6d00}"
".sw.chk{background:#56B4E9;opacity:.5}.sw.chk.bad{background:#D55E00;opacity:.5}"
".sw.w-c{background:var(--accent)}"
"table{border-collapse:collapse;margin:6px 0 10px}"
"th,td{border:1px solid var(--line);padding:2px 8px;text-align:left;vertical-align:top}"
"th{background:var(--panel);font-weight:600;font-size:12.5px}"
"td{white-space:pre-wrap;word-break:break-word}"
"table.plain td{font-family:inherit;font-size:inherit}"
"section.fp{border:1px solid var(--line);border-radius:8px;padding:2px 16px 12px;margin:16px 0}"
"section.fp:target{box-shadow:0 0 0 3px var(--infra)}"
"section.fp h3 .badge{margin-right:6px}"
".note{color:var(--mute);font-size:12.5px}"
".warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:4px 10px;margin:6px 0}"
"td.num{text-align:right;font-variant-numeric:tabular-nums}tr.unchecked td{color:var(--mute)}"
"svg.share{display:inline-block;vertical-align:-1px}.sh0{fill:var(--panel);stroke:var(--line)}"
".sh1{fill:var(--fail)}.pct{background:var(--panel);border-radius:6px;padding:6px 10px}"
".scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px;margin:6px 0}"
"svg{display:block}svg text{font:11px system-ui,sans-serif;fill:var(--ink)}"
"svg .ax{fill:var(--mute);font-size:10px}svg .grd{stroke:#eaeef2}"
".lane{fill:var(--panel)}"
".t-ok{fill:#cfe6f5;stroke:#0072B2}.t-error{fill:#f6d3bc;stroke:var(--fail)}"
".t-signal,.t-killed{fill:#000;stroke:#000}.t-timeout{fill:#f3e49a;stroke:#8a6d00}"
".t-tempfail,.t-exec{fill:#f2d29b;stroke:var(--infra)}"
".exit{stroke:var(--ink);stroke-width:2}"
".chk{fill:#56B4E9;opacity:.28}.chk.bad{fill:var(--fail);opacity:.32}"
".xs{stroke:var(--mute);stroke-width:1}"
".mk{stroke:var(--ink);stroke-width:1}"
".f-none{fill:#fff}.f-lost_reply{fill:var(--fail)}.f-reset{fill:#000}"
".f-duplicate{fill:#CC79A7}.f-latency{fill:#56B4E9}.f-blackhole{fill:#000}"
".f-close_after{fill:#0072B2}.f-status{fill:#E69F00}.f-stream_cut{fill:#D55E00}"
".f-stream_stall{fill:#009E73}.dl{stroke:var(--fail);stroke-width:2.5}"
".wait{stroke:#CC79A7;stroke-width:1.5;fill:none}.arrh{fill:#CC79A7}"
".w-p{fill:var(--pass)}.w-f{fill:var(--fail)}.w-i{fill:var(--infra)}.w-c{fill:var(--accent)}"
".lost{stroke:#000;stroke-width:2}.quar{fill:#000}"
"details>summary{cursor:pointer;color:var(--accent)}.seeds{margin:10px 0}.seeds details{display:inline}"
"#loadms:empty{display:none}";

/* Stamps how long the page took to load, for people and the browser test. */
static const char page_js[] =
"addEventListener('load',function(){setTimeout(function(){"
"var n=performance.getEntriesByType('navigation')[0],e=document.getElementById('loadms');"
"if(n&&e){e.textContent='page loaded in '+Math.round(n.loadEventEnd-n.startTime)+' ms';"
"e.setAttribute('data-ms',String(Math.round(n.loadEventEnd-n.startTime)))}},0)})";

/* --- text ------------------------------------------------------------ */

/* The length of the UTF-8 character at s (at most n bytes), 0 if none. */

static size_t
group_add(struct groups *g, char *fp, char cls, uint64_t seed, json_t *rec)
{
	struct group	*x;
	size_t		 i;

	for (i = 0; i < g->n; i++)
		if (strcmp(g->v[i].fp, fp) == 0)
			break;
	if (i == g->n) {
		g->v = xreallocarray(g->v, g->n + 1, sizeof(*g->v));
		x = &g->v[g->n++];
		memset(x, 0, sizeof(*x));
		x->fp = fp;
		x->cls = cls;
		x->smallest = seed;
		x->first = json_incref(rec);
	} else {
		x = &g->v[i];
		free(fp);
		if (seed < x->smallest) {
			x->smallest = seed;
			json_decref(x->first);
			x->first = json_incref(rec);
		}
	}
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 16;
		x->seeds = xreallocarray(x->seeds, x->cap, sizeof(uint64_t));
	}
	x->seeds[x->n++] = seed;
	return i;
}

static void
groups_free(struct groups *g)
{
	size_t	i;

	for (i = 0; i < g->n; i++) {
		free(g->v[i].fp);
		free(g->v[i].seeds);
		json_decref(g->v[i].first);
	}
	free(g->v);
	memset(g, 0, sizeof(*g));
}

/*
 * Fail groups before infra ones, then by their seed count (the biggest
 * bug first), then by the smallest seed: the order of the sections.
 */
static int
group_cmp(const void *a, const void *b)
{
	const struct group	*x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls == 'f' ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return (x->smallest > y->smallest) - (x->smallest < y->smallest);
}

/* --- the page ---------------------------------------------------------- */

/* base64 of the SHA-256 of s: a CSP source hash. */
static void
csp_hash(const char *s, char out[64])
{
	unsigned char	md[32];
	unsigned int	mdlen = 0;

	EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha256(), NULL);
	EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen);
}

static const char *
status_words(int64_t st)
{
	switch (st) {
	case SOAK_EXIT_PASS:		return "every seed passed";
	case SOAK_EXIT_FAIL:		return "at least one seed failed";
	case SOAK_EXIT_INCOMPLETE:	return "incomplete: infra verdicts or seeds without one";
	case SOAK_EXIT_CONFIG:		return "a config error stopped the run";
	default:			return "";
	}
}

static void
put_header(struct page *p)
{
	struct rh	*h = &p->h;
	json_t		*r = h->report, *cfg = json_object_get(r, "config");
	json_t		*tot = json_object_get(r, "totals"), *ws = json_object_get(r, "workers");
	json_t		*w;
	int64_t		 st = jint(r, "exit_status", -1), fail = jint(tot, "fail", 0);
	int64_t		 infra = jint(tot, "infra", 0), miss = jint(tot, "missing", 0);
	const char	*badge, *word;
	char		 d[48];
	size_t		 i;

	if (fail > 0)
		badge = "fail", word = "FAIL";
	else if (infra > 0 || miss > 0 || st == SOAK_EXIT_INCOMPLETE || st == SOAK_EXIT_CONFIG)
		badge = "incomplete", word = "INCOMPLETE";
	else
		badge = "pass", word = "PASS";
	rh_put(h, "<header>\n<h1><span class=\"badge b-%s\">%s</span> ", badge, word);
	rh_text(h, p->cfg_name);
	rh_put(h, " — %" PRId64 " of %" PRIu64 " seeds failed</h1>\n", fail, p->count);
	rh_put(h, "<div class=totals><span><i class=\"sw p\"></i>%" PRId64 " pass</span>"
	    "<span><i class=\"sw f\"></i>%" PRId64 " fail</span>"
	    "<span><i class=\"sw i\"></i>%" PRId64 " infra</span>"
	    "<span><i class=\"sw m\"></i>%" PRId64 " without a verdict</span></div>\n",
	    jint(tot, "pass", 0), fail, infra, miss);
	rh_put(h, "<dl class=meta>\n<dt>config</dt><dd>");
	rh_text(h, jstr(cfg, "name"));
	rh_put(h, " <span class=note>hash <code>");
	rh_text(h, jstr(cfg, "hash"));
	rh_put(h, "</code> · ");
	rh_text(h, jstr(cfg, "path"));
	rh_put(h, " · %" PRId64 " turns × %" PRId64 " rounds</span></dd>\n",
	    jint(cfg, "turns", 0), jint(cfg, "rounds", 0));
	rh_put(h, "<dt>seeds</dt><dd>%" PRIu64 "..%" PRIu64 " (%" PRIu64 ")</dd>\n",
	    p->seeds.first, p->seeds.last, p->count);
	rh_put(h, "<dt>run</dt><dd><code>");
	rh_text(h, jstr(r, "run_id"));
	rh_put(h, "</code> on ");
	rh_text(h, jstr(r, "host"));
	rh_put(h, ", ");
	rh_text(h, jstr(r, "started_at"));
	rh_put(h, " to ");
	rh_text(h, jstr(r, "finished_at"));
	rh_put(h, " (%s)</dd>\n", rh_dur(jint(r, "wall_ms", -1), d, sizeof(d)));
	rh_put(h, "<dt>soak</dt><dd>");
	rh_text(h, jstr(r, "soak_version"));
	rh_put(h, "</dd>\n<dt>system under test</dt><dd>");
	if (jstr(r, "sut_revision"))
		rh_text(h, jstr(r, "sut_revision"));
	else
		rh_put(h, "<span class=note>no SOAK_SUT_REVISION given</span>");
	rh_put(h, "</dd>\n<dt>workers</dt><dd>%zu", json_array_size(ws));
	json_array_foreach(ws, i, w) {
		if (i >= 12) {
			rh_put(h, ", …");
			break;
		}
		rh_put(h, "%s", i ? ", " : ": ");
		rh_text(h, jstr(w, "name"));
		if (jstr(w, "quarantined"))
			rh_put(h, " (quarantined)");
	}
	rh_put(h, "</dd>\n<dt>exit status</dt><dd>%" PRId64 " <span class=note>%s%s%s</span></dd>\n",
	    st, status_words(st), json_is_true(json_object_get(r, "interrupted")) ?
	    "; interrupted (SIGINT/SIGTERM)" : "",
	    json_is_true(json_object_get(r, "complete")) ? "" : "; the run is incomplete");
	if (jstr(r, "halted")) {
		rh_put(h, "<dt>stopped early</dt><dd>");
		rh_text(h, jstr(r, "halted"));
		rh_put(h, "</dd>\n");
	}
	if (json_array_size(json_object_get(r, "missing_seeds")) > 0) {
		rh_put(h, "<dt>without a verdict</dt><dd>");
		json_array_foreach(json_object_get(r, "missing_seeds"), i, w) {
			if (i >= 20) {
				rh_put(h, " …");
				break;
			}
			rh_put(h, "%s", i ? ", " : "");
			rh_text(h, json_string_value(w));
		}
		rh_put(h, "</dd>\n");
	}
	rh_put(h, "</dl>\n<nav><a href=\"#seeds\">Seeds</a><a href=\"#failures\">Failures (%zu)</a>"
	    "<a href=\"#workers\">Workers</a><a href=\"#coverage\">Coverage</a>"
	    "%s<a href=\"#since\">Since last time</a></nav>\n</header>\n", p->g.n,
	    json_object_get(r, "regressions") ? "<a href=\"#regressions\">Regressions</a>" : "");
}

/* A grid cell's words: " reason — the message's first line" (200 bytes). */
static char *
cell_title(const json_t *r)
{
	const char	*m = jstr(r, "message"), *why = jstr(r, "reason");
	size_t		 n = m ? strcspn(m, "\r\n") : 0;

	if (n > 200)
		n = utf8_prefix(m, n, 200);
	return xasprintf("%s%s%s%.*s", why ? " " : "", why ? why : "", n ? " — " : "",
	    (int)n, m ? m : "");
}

static const char *
cls_word(char c)
{
	switch (c) {
	case 'p': return "pass";
	case 'f': return "fail";
	case 'i': return "infra";
	default: return "no verdict";
	}
}

/* One cell a seed, for runs of at most RH_GRID_CELLS seeds. */
static void
grid_cell(struct page *p, uint64_t k)
{
	struct rh	*h = &p->h;
	uint64_t	 seed = p->seeds.first + k;
	char		 c = p->cls[k];

	if (p->grp[k] >= 0)
		rh_put(h, "<a class=\"c %c\" href=\"#g%d\" title=\"seed %" PRIu64 ": %s",
		    c, p->grp[k], seed, cls_word(c));
	else
		rh_put(h, "<i class=\"c %c\" title=\"seed %" PRIu64 ": %s", c, seed,
		    cls_word(c));
	if (p->title[k] != NULL)
		rh_text(h, p->title[k]);
	rh_put(h, p->grp[k] >= 0 ? "\"></a>" : "\"></i>");
}

/* A bin of seeds [k, k + n): the worst verdict in it, and its counts. */
static void
grid_bin(struct page *p, uint64_t k, uint64_t n)
{
	struct rh	*h = &p->h;
	uint64_t	 c[4] = { 0 }, j;	/* p f i m */
	int32_t		 gf = -1, gi = -1, grp;
	char		 cls;
	bool		 part;

	/* The link goes to the first failure's group, else the first infra's. */
	for (j = k; j < k + n; j++) {
		switch (p->cls[j]) {
		case 'p': c[0]++; break;
		case 'f': if (c[1]++ == 0) gf = p->grp[j]; break;
		case 'i': if (c[2]++ == 0) gi = p->grp[j]; break;
		default: c[3]++; break;
		}
	}
	grp = gf >= 0 ? gf : gi;
	cls = c[1] ? 'f' : c[2] ? 'i' : c[3] ? 'm' : 'p';
	part = (cls == 'f' || cls == 'i') && c[0] > 0;
	if (grp >= 0)
		rh_put(h, "<a class=\"c %c%s\" href=\"#g%d\"", cls, part ? " part" : "", grp);
	else
		rh_put(h, "<i class=\"c %c%s\"", cls, part ? " part" : "");
	rh_put(h, " title=\"seeds %" PRIu64 "..%" PRIu64 ":", p->seeds.first + k,
	    p->seeds.first + k + n - 1);
	if (c[1])
		rh_put(h, " %" PRIu64 " fail", c[1]);
	if (c[2])
		rh_put(h, " %" PRIu64 " infra", c[2]);
	if (c[3])
		rh_put(h, " %" PRIu64 " without a verdict", c[3]);
	if (c[0])
		rh_put(h, " %" PRIu64 " pass", c[0]);
	rh_put(h, grp >= 0 ? "\"></a>" : "\"></i>");
}

/*
 * The bin size: 1 up to RH_GRID_CELLS seeds, else the smallest of 2, 5,
 * 10, 20, 25, 50, 100, ... that makes at most RH_GRID_BINS cells.
 */
static uint64_t
bin_size(uint64_t count)
{
	static const uint64_t	steps[] = { 1, 2, 5, 10, 20, 25, 50 };
	uint64_t		scale = 1;
	size_t			i;

	if (count <= RH_GRID_CELLS)
		return 1;
	for (;;) {
		for (i = 0; i < nitems(steps); i++)
			if ((count + steps[i] * scale - 1) / (steps[i] * scale) <= RH_GRID_BINS)
				return steps[i] * scale;
		scale *= 100;
	}
}

static void
put_grid(struct page *p)
{
	struct rh	*h = &p->h;
	uint64_t	 bin = bin_size(p->count), cells, k, row;
	const uint64_t	 per_row = 50;

	cells = (p->count + bin - 1) / bin;
	rh_put(h, "<h2 id=\"seeds\">Seeds</h2>\n<p class=note>");
	if (bin == 1)
		rh_put(h, "One cell per seed, %" PRIu64 " to a row; hover for the verdict "
		    "and why, click a failing one for its failure.", per_row);
	else
		rh_put(h, "%" PRIu64 " seeds are too many for a cell each: one cell per %"
		    PRIu64 " seeds (%" PRIu64 " cells), coloured by the worst verdict in "
		    "it, a dot when only some of its seeds failed; hover for the counts, "
		    "click a failing one for its failure.", p->count, bin, cells);
	rh_put(h, "</p>\n<div class=legend><span><i class=\"sw p\"></i>pass</span>"
	    "<span><i class=\"sw f\"></i>fail</span><span><i class=\"sw i\"></i>infra</span>"
	    "<span><i class=\"sw m\"></i>no verdict</span>%s</div>\n<div class=grid>\n",
	    bin > 1 ? "<span><i class=\"sw f part\"></i>some failed</span>" : "");
	for (row = 0; row * per_row < cells; row++) {
		rh_put(h, "<div class=gr><span class=gl>%" PRIu64 "</span>",
		    p->seeds.first + row * per_row * bin);
		for (k = row * per_row; k < cells && k < (row + 1) * per_row; k++) {
			if (bin == 1)
				grid_cell(p, k);
			else
				grid_bin(p, k * bin, k * bin + bin <= p->count ? bin :
				    p->count - k * bin);
		}
		rh_put(h, "</div>\n");
	}
	rh_put(h, "</div>\n");
}

/*
 * Seeds as runs of the seed grammar, each end linked to its result.json:
 * the first few inline, up to RH_LIST_SEEDS under "all N".
 */
static void
put_seed_list(struct rh *h, const struct group *g)
{
	size_t	 i, j, shown = 0;
	bool	 fold = false;

	rh_put(h, "<div class=seeds>%zu seed%s: ", g->n, g->n == 1 ? "" : "s");
	for (i = 0; i < g->n; i = j) {
		for (j = i + 1; j < g->n && g->seeds[j] == g->seeds[j - 1] + 1; j++)
			;
		if (shown >= RH_LIST_SEEDS) {
			rh_put(h, " … and %zu more (report.json has them all)", g->n - i);
			break;
		}
		if (shown >= 24 && !fold) {
			rh_put(h, " <details><summary>all %zu</summary>", g->n);
			fold = true;
		}
		rh_put(h, "%s<a href=\"failures/%" PRIu64 "/result.json\">%" PRIu64 "</a>",
		    i ? ", " : "", g->seeds[i], g->seeds[i]);
		if (j - i > 1)
			rh_put(h, "..<a href=\"failures/%" PRIu64 "/result.json\">%" PRIu64
			    "</a>", g->seeds[j - 1], g->seeds[j - 1]);
		shown += j - i > 1 ? 2 : 1;
	}
	rh_put(h, "%s</div>\n", fold ? "</details>" : "");
}

static void
put_invariant(struct rh *h, const json_t *inv)
{
	json_t	*cols = json_object_get(inv, "columns"), *rows = json_object_get(inv, "rows");
	json_t	*row, *v;
	size_t	 i, k;

	rh_put(h, "<h4>broken: “");
	rh_text(h, jstr(inv, "name"));
	rh_put(h, "” — %" PRId64 " row%s</h4>\n<details><summary>its SQL</summary><pre>",
	    jint(inv, "row_count", 0), jint(inv, "row_count", 0) == 1 ? "" : "s");
	rh_text(h, jstr(inv, "sql"));
	rh_put(h, "</pre></details>\n<table><tr>");
	json_array_foreach(cols, i, v) {
		rh_put(h, "<th>");
		rh_text(h, json_string_value(v));
		rh_put(h, "</th>");
	}
	rh_put(h, "</tr>\n");
	json_array_foreach(rows, i, row) {
		rh_put(h, "<tr>");
		json_array_foreach(row, k, v) {
			rh_put(h, "<td>");
			if (json_is_null(v))
				rh_put(h, "<span class=note>NULL</span>");
			else
				rh_textn(h, json_string_value(v), 2000);
			rh_put(h, "</td>");
		}
		rh_put(h, "</tr>\n");
	}
	rh_put(h, "</table>\n");
	if (jint(inv, "row_count", 0) > (int64_t)json_array_size(rows))
		rh_put(h, "<p class=note>%zu of %" PRId64 " rows kept</p>\n",
		    json_array_size(rows), jint(inv, "row_count", 0));
	if (jstr(inv, "truncated")) {
		rh_put(h, "<p class=note>");
		rh_text(h, jstr(inv, "truncated"));
		rh_put(h, "</p>\n");
	}
}

/* report.json groups[] entry of a fingerprint (minimize's story and plan). */
static json_t *
group_extra(const json_t *report, const char *fp)
{
	json_t	*g;
	size_t	 i;

	json_array_foreach(json_object_get(report, "groups"), i, g)
		if (jstr(g, "fingerprint") && strcmp(jstr(g, "fingerprint"), fp) == 0)
			return g;
	return NULL;
}

/*
 * The fingerprint's minimized story and plan: report.json's groups[]
 * entry, else its smallest seed's "minimized" (tickets.minimize), when
 * the coordinator kept its plan (same_failure).
 */
static void
put_story(struct page *p, const struct group *g, const json_t *rec)
{
	struct rh	*h = &p->h;
	json_t		*x = group_extra(h->report, g->fp), *plan;
	json_t		*mz = json_object_get(rec, "minimized");
	char		*path, *txt;
	struct stat	 st;

	if (x == NULL && json_is_true(json_object_get(mz, "same_failure")) &&
	    jstr(mz, "plan_file") != NULL) {
		x = mz;
		rh_put(h, "<p class=note>minimized before filing: ");
		rh_text(h, jstr(mz, "summary") ? jstr(mz, "summary") : "");
		rh_put(h, "%s</p>\n", jstr(mz, "outcome") && strcmp(jstr(mz, "outcome"),
		    "minimal") == 0 ? " (1-minimal)" : " (stopped by its budget: not "
		    "shown 1-minimal)");
	}
	if (x != NULL && jstr(x, "story")) {
		rh_put(h, "<h4>the minimized story</h4><pre>");
		rh_text(h, jstr(x, "story"));
		rh_put(h, "</pre>\n");
	}
	plan = x == NULL ? NULL : x == mz ? json_object_get(x, "plan_file") :
	    json_object_get(x, "plan");
	if (json_is_string(plan)) {
		/* a link only to a file of the run folder: no scheme, no way up */
		const char	*pl = json_string_value(plan);
		bool		 link = *pl != '/' && strstr(pl, "..") == NULL &&
				    strspn(pl, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789._-/") == strlen(pl);

		rh_put(h, "<p>plan: ");
		if (link) {
			rh_put(h, "<a href=\"");
			rh_text(h, pl);
			rh_put(h, "\">");
		}
		rh_text(h, pl);
		rh_put(h, "%s</p>\n", link ? "</a>" : "");
	} else if (plan != NULL && (txt = json_dumps(plan, JSON_INDENT(1))) != NULL) {
		rh_put(h, "<details><summary>the minimized plan</summary><pre>");
		rh_textn(h, txt, 64 * 1024);
		rh_put(h, "</pre></details>\n");
		free(txt);
	} else {
		path = xasprintf("%s/failures/%" PRIu64 "/plan.json", h->dir, g->smallest);
		if (stat(path, &st) == 0)
			rh_put(h, "<p>plan: <a href=\"failures/%" PRIu64 "/plan.json\">failures/%"
			    PRIu64 "/plan.json</a></p>\n", g->smallest, g->smallest);
		free(path);
	}
}

static void
put_group(struct page *p, size_t gi)
{
	struct rh	*h = &p->h;
	struct group	*g = &p->g.v[gi];
	json_t		*rec = g->first, *inv, *conf;
	json_t		*rep = json_object_get(rec, "reproduced");
	char		*words = fp_words(jstr(rec, "reason"), json_object_get(rec, "invariants"));
	size_t		 i;

	rh_put(h, "<section class=fp id=\"g%zu\">\n<h3><span class=\"badge b-%s\">%s</span>",
	    gi, g->cls == 'f' ? "fail" : "infra", g->cls == 'f' ? "FAIL" : "INFRA");
	rh_text(h, words);
	rh_put(h, " — %zu seed%s, smallest %" PRIu64 "</h3>\n<p class=note>fingerprint <code>",
	    g->n, g->n == 1 ? "" : "s", g->smallest);
	rh_text(h, g->fp);
	rh_put(h, "</code></p>\n<p>seed %" PRIu64 ": ", g->smallest);
	rh_textn(h, jstr(rec, "message"), 4000);
	rh_put(h, "</p>\n");
	json_array_foreach(json_object_get(rec, "invariants"), i, inv)
		put_invariant(h, inv);
	if (json_object_get(rec, "config_error")) {
		json_t	*ce = json_object_get(rec, "config_error");

		rh_put(h, "<p class=warn>a config error: ");
		rh_text(h, jstr(ce, "what"));
		rh_put(h, ": ");
		rh_text(h, jstr(ce, "detail"));
		rh_put(h, "</p>\n");
	}
	put_seed_list(h, g);
	conf = json_object_get(rec, "confirm");
	rh_put(h, "<p>confirming re-run: ");
	if (json_is_true(rep))
		rh_put(h, "<strong>reproduced it</strong>");
	else if (json_is_false(rep))
		rh_put(h, "<strong>did not reproduce it</strong> (it depends on more than "
		    "the seed, timing most often)");
	else if (conf != NULL)
		rh_put(h, "ended infra; reproduction unknown");
	else
		rh_put(h, "<span class=note>none ran (confirm off, or past the first 20 "
		    "fingerprints)</span>");
	if (conf != NULL) {
		rh_put(h, " <span class=note>on worker %" PRId64 ", %" PRId64 " ms: ",
		    jint(conf, "worker", 0), jint(conf, "duration_ms", 0));
		rh_text(h, jstr(conf, "verdict"));
		rh_put(h, " ");
		rh_text(h, jstr(conf, "reason"));
		rh_put(h, "</span>");
		if (jstr(conf, "schedule")) {
			rh_put(h, "<br>its schedule ");
			rh_text(h, jstr(conf, "schedule"));
		}
	}
	rh_put(h, "</p>\n<p>replay: <code>");
	rh_text(h, jstr(rec, "replay"));
	rh_put(h, "</code></p>\n");
	if (json_object_get(rec, "truncated")) {
		rh_put(h, "<p class=note>the worker cut this result to fit a message: ");
		json_array_foreach(json_object_get(json_object_get(rec, "truncated"),
		    "markers"), i, inv) {
			rh_put(h, "%s", i ? "; " : "");
			rh_text(h, json_string_value(inv));
		}
		rh_put(h, "</p>\n");
	}
	put_story(p, g, rec);
	rh_swimlane(h, g->smallest, words);
	rh_put(h, "</section>\n");
	free(words);
}

static void
put_failures(struct page *p)
{
	struct rh	*h = &p->h;
	size_t		 i;

	rh_put(h, "<h2 id=\"failures\">Failures by fingerprint</h2>\n");
	if (p->g.n == 0) {
		rh_put(h, "<p>No seed failed and none ended infra.</p>\n");
		return;
	}
	rh_put(h, "<p class=note>%zu fingerprint%s (the same broken invariants, or the "
	    "same reason, make the same bug); each with its smallest seed's rows, "
	    "replay command and swimlane.</p>\n", p->g.n, p->g.n == 1 ? "" : "s");
	rh_fault_legend(h);
	for (i = 0; i < p->g.n && i < RH_GROUPS; i++)
		put_group(p, i);
	if (p->g.n > RH_GROUPS) {
		rh_put(h, "<p class=note>%zu more fingerprints, without a section:</p><ul>\n",
		    p->g.n - RH_GROUPS);
		for (i = RH_GROUPS; i < p->g.n; i++) {
			rh_put(h, "<li id=\"g%zu\"><code>", i);
			rh_text(h, p->g.v[i].fp);
			rh_put(h, "</code> — %zu seeds, smallest %" PRIu64 "</li>\n", p->g.v[i].n,
			    p->g.v[i].smallest);
		}
		rh_put(h, "</ul>\n");
	}
}

/* --- coverage and the other optional parts ----------------------------- */

static void put_json(struct rh *h, const json_t *v, int depth);

/* An array of objects as a table, its columns the keys of the first rows. */
static bool
put_json_table(struct rh *h, const json_t *a, int depth)
{
	const char	*keys[32], *k;
	size_t		 nk = 0, i, j;
	json_t		*o, *v;

	json_array_foreach(a, i, o) {
		if (!json_is_object(o))
			return false;
		if (i >= 50)
			continue;
		json_object_foreach(UNCONST(o), k, v) {
			for (j = 0; j < nk && strcmp(keys[j], k) != 0; j++)
				;
			if (j == nk && nk < nitems(keys))
				keys[nk++] = k;
		}
	}
	rh_put(h, "<table class=plain><tr>");
	for (j = 0; j < nk; j++) {
		rh_put(h, "<th>");
		rh_text(h, keys[j]);
		rh_put(h, "</th>");
	}
	rh_put(h, "</tr>\n");
	json_array_foreach(a, i, o) {
		if (i >= 500) {
			rh_put(h, "<tr><td colspan=%zu>… %zu more</td></tr>\n", nk,
			    json_array_size(a) - i);
			break;
		}
		rh_put(h, "<tr>");
		for (j = 0; j < nk; j++) {
			rh_put(h, "<td>");
			if ((v = json_object_get(o, keys[j])) != NULL)
				put_json(h, v, depth + 1);
			rh_put(h, "</td>");
		}
		rh_put(h, "</tr>\n");
	}
	rh_put(h, "</table>\n");
	return true;
}

/*
 * Any JSON as HTML, for the parts whose fields other branches define
 * (coverage, regressions): objects as key/value tables, arrays of
 * objects as tables, warnings as warnings.  Every string is escaped.
 */
static void
put_json(struct rh *h, const json_t *v, int depth)
{
	const char	*k;
	json_t		*x, *w;
	size_t		 i;
	char		*s;

	if (depth > 6) {
		if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL) {
			rh_textn(h, s, 2000);
			free(s);
		}
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rh_put(h, "<table class=plain>\n");
		json_object_foreach(UNCONST(v), k, x) {
			rh_put(h, "<tr><th>");
			rh_text(h, k);
			rh_put(h, "</th><td>");
			if (strcmp(k, "warnings") == 0 && json_is_array(x)) {
				json_array_foreach(x, i, w) {
					rh_put(h, "<div class=warn>");
					put_json(h, w, depth + 1);
					rh_put(h, "</div>");
				}
				if (json_array_size(x) == 0)
					rh_put(h, "<span class=note>none</span>");
			} else
				put_json(h, x, depth + 1);
			rh_put(h, "</td></tr>\n");
		}
		rh_put(h, "</table>\n");
		break;
	case JSON_ARRAY:
		if (json_array_size(v) > 0 && put_json_table(h, v, depth))
			break;
		json_array_foreach(v, i, x) {
			if (i >= 200) {
				rh_put(h, ", … %zu more", json_array_size(v) - i);
				break;
			}
			rh_put(h, "%s", i ? ", " : "");
			put_json(h, x, depth + 1);
		}
		if (json_array_size(v) == 0)
			rh_put(h, "<span class=note>none</span>");
		break;
	case JSON_STRING:
		rh_textn(h, json_string_value(v), 4000);
		break;
	case JSON_INTEGER:
		rh_put(h, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		rh_put(h, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		rh_put(h, "yes");
		break;
	case JSON_FALSE:
		rh_put(h, "no");
		break;
	case JSON_NULL:
		rh_put(h, "<span class=note>—</span>");
		break;
	}
}

/* "lost_reply 9, reset 4" of an object of counts, the zeros left out. */
static void
put_counts(struct rh *h, const json_t *o, const char *none)
{
	const char	*k;
	json_t		*v;
	int		 n = 0;

	if (!json_is_object(o)) {
		if (o != NULL && !json_is_null(o))
			put_json(h, o, 1);
		else
			rh_put(h, "<span class=note>—</span>");
		return;
	}
	json_object_foreach(UNCONST(o), k, v) {
		if (json_is_integer(v) && json_integer_value(v) == 0)
			continue;
		rh_put(h, "%s", n++ ? ", " : "");
		rh_text(h, k);
		rh_put(h, " ");
		put_json(h, v, 1);
	}
	if (n == 0)
		rh_put(h, "<span class=note>%s</span>", none);
}

static void
put_cov_int(struct rh *h, const json_t *o, const char *key)
{
	json_t	*v = json_object_get(o, key);

	rh_put(h, "<td class=num>");
	if (v == NULL || json_is_null(v))
		rh_put(h, "<span class=note>—</span>");
	else
		put_json(h, v, 1);
	rh_put(h, "</td>");
}

/*
 * coverage.proxies.NAME.idle: the turns arrival decisions went without,
 * under the proxy's row, as the summary says them; nothing when none.
 */
static void
put_cov_idle(struct rh *h, const json_t *idle)
{
	json_t	*o;
	size_t	 i;

	if (!json_is_array(idle)) {
		if (idle != NULL) {
			rh_put(h, "<tr><td></td><td colspan=10>idle: ");
			put_json(h, idle, 2);
			rh_put(h, "</td></tr>\n");
		}
		return;
	}
	if (json_array_size(idle) == 0)
		return;
	rh_put(h, "<tr><td></td><td colspan=10 class=warn>decisions forced by "
	    "<code>arrival</code> went without ");
	json_array_foreach(idle, i, o)
		rh_put(h, "%sturn %" PRId64 " (%" PRId64 " in %" PRId64 " seed%s)",
		    i ? ", " : "", jint(o, "turn", 0), jint(o, "decisions", 0),
		    jint(o, "seeds", 0), jint(o, "seeds", 0) == 1 ? "" : "s");
	rh_put(h, ": each was outside every proxy of its seed for <code>arrival"
	    "</code> or more. Raise <code>arrival</code> above the turn's longest "
	    "such pause, or put what it waits on behind a proxy.</td></tr>\n");
}

/* coverage.waits: where the schedules' time went, as the summary says it. */
static void
put_cov_waits(struct rh *h, const json_t *w)
{
	const json_t	*slow = json_object_get(w, "slowest");
	int64_t		 ms = jint(w, "ms", 0), dur = jint(w, "seeds_ms", 0);

	if (jint(w, "seeds", 0) == 0)
		return;
	rh_put(h, "<p>The schedules waited %.3g s for their actors in %" PRId64
	    " seed%s, %.0f %% of those seeds' %.3g s (%" PRId64 " steps)",
	    (double)ms / 1000, jint(w, "seeds", 0), jint(w, "seeds", 0) == 1 ?
	    "" : "s", dur > 0 ? 100.0 * (double)ms / (double)dur : 0.0,
	    (double)dur / 1000, jint(w, "steps", 0));
	if (json_is_object(slow)) {
		rh_put(h, "; the slowest step: %" PRId64 " ms, step %" PRId64
		    " of proxy ", jint(slow, "ms", 0), jint(slow, "step", 0));
		rh_text(h, jstr(slow, "proxy") ? jstr(slow, "proxy") : "?");
		rh_put(h, " in seed %" PRId64, jint(slow, "seed", 0));
	}
	rh_put(h, ". <span class=note>(docs/faults.md \"What it costs\")"
	    "</span></p>\n");
}

/* coverage.proxies: an object by proxy name (docs/report.md), one row each. */
static void
put_cov_proxies(struct rh *h, const json_t *px)
{
	static const char *const known[] = { "schedule", "exchanges",
	    "seeds_with_exchanges", "connections", "faults", "steps",
	    "steps_per_seed", "forced", "lock_waits", "deadlocks", "idle" };
	const char	*name, *k;
	json_t		*o, *v, *spp;
	size_t		 i;

	rh_put(h, "<table class=plain><tr><th>proxy</th><th>schedule</th>"
	    "<th>exchanges</th><th>seeds with one</th><th>connections</th>"
	    "<th>faults fired</th><th>steps</th><th>steps a seed (median, most)</th>"
	    "<th>forced decisions</th><th>lock waits</th><th>deadlocks</th></tr>\n");
	json_object_foreach(UNCONST(px), name, o) {
		rh_put(h, "<tr><td>");
		rh_text(h, name);
		rh_put(h, "</td><td>");
		if (jstr(o, "schedule"))
			rh_text(h, jstr(o, "schedule"));
		else
			rh_put(h, "<span class=note>none</span>");
		rh_put(h, "</td>");
		put_cov_int(h, o, "exchanges");
		put_cov_int(h, o, "seeds_with_exchanges");
		put_cov_int(h, o, "connections");
		rh_put(h, "<td>");
		put_counts(h, json_object_get(o, "faults"), "none fired");
		rh_put(h, "</td>");
		put_cov_int(h, o, "steps");
		rh_put(h, "<td>");
		spp = json_object_get(o, "steps_per_seed");
		if (json_is_object(spp))
			rh_put(h, "%" PRId64 ", %" PRId64, jint(spp, "median", 0),
			    jint(spp, "max", 0));
		else
			rh_put(h, "<span class=note>no step</span>");
		rh_put(h, "</td><td>");
		put_counts(h, json_object_get(o, "forced"), "none");
		rh_put(h, "</td>");
		put_cov_int(h, o, "lock_waits");
		rh_put(h, "<td>");
		v = json_object_get(o, "deadlocks");
		if (json_is_object(v)) {
			rh_put(h, "%" PRId64 " broken by soak, %" PRId64 " by PostgreSQL",
			    jint(v, trace_deadlock_name(TRACE_DEADLOCK_SOAK), 0),
			    jint(v, trace_deadlock_name(TRACE_DEADLOCK_POSTGRES), 0));
		} else
			put_counts(h, v, "—");
		rh_put(h, "</td></tr>\n");
		put_cov_idle(h, json_object_get(o, "idle"));
		/* fields a later soak adds: under the row, as they are */
		json_object_foreach(o, k, v) {
			for (i = 0; i < nitems(known) && strcmp(known[i], k) != 0; i++)
				;
			if (i < nitems(known))
				continue;
			rh_put(h, "<tr><td></td><td colspan=10>");
			rh_text(h, k);
			rh_put(h, ": ");
			put_json(h, v, 2);
			rh_put(h, "</td></tr>\n");
		}
	}
	rh_put(h, "</table>\n");
}

static void
put_cov_invariants(struct rh *h, const json_t *inv)
{
	json_t	*o;
	size_t	 i;
	int64_t	 c, b;

	rh_put(h, "<table class=plain><tr><th>invariant</th><th>seeds checked</th>"
	    "<th>seeds broken</th><th></th></tr>\n");
	json_array_foreach(inv, i, o) {
		c = jint(o, "seeds_checked", 0);
		b = jint(o, "seeds_broken", 0);
		rh_put(h, "<tr%s><td>", c == 0 ? " class=unchecked" : "");
		rh_text(h, jstr(o, "name"));
		rh_put(h, "</td><td class=num>%" PRId64 "</td><td class=num>%" PRId64
		    "</td><td>", c, b);
		if (c == 0)
			rh_put(h, "<span class=note>never checked</span>");
		else
			rh_put(h, "<svg class=share width=\"80\" height=\"9\" aria-hidden=\"true\">"
			    "<rect class=sh0 width=\"80\" height=\"9\"/><rect class=sh1 "
			    "width=\"%.1f\" height=\"9\"/></svg> %.1f %%",
			    80.0 * (double)(b < c ? b : c) / (double)c,
			    100.0 * (double)b / (double)c);
		rh_put(h, "</td></tr>\n");
	}
	rh_put(h, "</table>\n");
}

/* coverage.pct: PCT's bound as a sentence, as the summary says it. */
static void
put_cov_pct(struct rh *h, const json_t *pct)
{
	json_t	*o;
	size_t	 i;

	json_array_foreach(pct, i, o) {
		int64_t	n = jint(o, "turns", 0), k = jint(o, "steps", 0), d = jint(o, "depth", 0);

		rh_put(h, "<p class=pct>PCT bound, proxy ");
		rh_text(h, jstr(o, "proxy"));
		rh_put(h, " (n = %" PRId64 " turns, k = %" PRId64 " steps, d = %" PRId64
		    "): a bug of depth %" PRId64 " or less is found in a seed with "
		    "probability p ≥ 1/(n·k<sup>d−1</sup>) = %.4g %%, and in the run's %"
		    PRId64 " seeds with 1 − (1 − p)<sup>%" PRId64 "</sup> = %.4g %%", n, k, d,
		    d, 100.0 * json_number_value(json_object_get(o, "per_seed")),
		    jint(o, "seeds", 0), jint(o, "seeds", 0),
		    100.0 * json_number_value(json_object_get(o, "over_run")));
		if (jstr(o, "assumes")) {
			rh_put(h, ", assuming ");
			rh_text(h, jstr(o, "assumes"));
		}
		rh_put(h, " (this run: %" PRId64 " forced decision%s)</p>\n",
		    jint(o, "forced", 0), jint(o, "forced", 0) == 1 ? "" : "s");
	}
}

/*
 * report.json's coverage (docs/report.md "coverage"): its warnings first,
 * then per proxy, per invariant, PCT's bound; a key this build does not
 * know, and any part not of the documented shape, as it is.
 */
static void
put_coverage(struct page *p)
{
	static const char *const known[] = { "seeds", "proxies", "forced",
	    "invariants", "pct", "warnings", "waits" };
	struct rh	*h = &p->h;
	json_t		*cov = json_object_get(h->report, "coverage");
	json_t		*reg = json_object_get(h->report, "regressions");
	json_t		*v, *w;
	const char	*k;
	size_t		 i, n = 0;

	if (reg != NULL) {
		rh_put(h, "<h2 id=\"regressions\">Regressions</h2>\n");
		put_json(h, reg, 0);
	}
	rh_put(h, "<h2 id=\"coverage\">Coverage</h2>\n");
	if (cov == NULL) {
		rh_put(h, "<p class=note>This run's report.json has no coverage (written "
		    "by a soak that did not count what a run exercised): nothing to show "
		    "of exchanges, faults by kind, forced decisions or lock waits.</p>\n");
		return;
	}
	if (!json_is_object(cov)) {
		put_json(h, cov, 0);
		return;
	}
	rh_put(h, "<p>What the run exercised, summed over the final attempt of ");
	if (json_is_integer(json_object_get(cov, "seeds")))
		rh_put(h, "%" PRId64 " seed%s", jint(cov, "seeds", 0),
		    jint(cov, "seeds", 0) == 1 ? "" : "s");
	else
		rh_put(h, "each seed");
	v = json_object_get(cov, "forced");
	if (json_is_object(v))
		rh_put(h, "; %" PRId64 " decision%s left to a timeout, in %" PRId64
		    " seed%s", jint(v, "decisions", 0), jint(v, "decisions", 0) == 1 ?
		    "" : "s", jint(v, "seeds", 0), jint(v, "seeds", 0) == 1 ? "" : "s");
	rh_put(h, ". <span class=note>(docs/report.md \"coverage\")</span></p>\n");
	w = json_object_get(cov, "warnings");
	if (json_is_array(w)) {
		json_array_foreach(w, i, v) {
			rh_put(h, "<div class=\"warn cov\">");
			put_json(h, v, 1);
			rh_put(h, "</div>\n");
		}
		if (json_array_size(w) == 0)
			rh_put(h, "<p class=note>No warnings: every proxy saw exchanges, "
			    "every fault kind with a share fired, every invariant was "
			    "checked.</p>\n");
	}
	v = json_object_get(cov, "proxies");
	if (json_is_object(v) && json_object_size(v) > 0) {
		rh_put(h, "<h3>Proxies</h3>\n");
		put_cov_proxies(h, v);
	} else if (v != NULL && !json_is_object(v)) {
		rh_put(h, "<h3>Proxies</h3>\n");
		put_json(h, v, 0);
	}
	v = json_object_get(cov, "waits");
	if (json_is_object(v))
		put_cov_waits(h, v);
	else if (v != NULL)
		put_json(h, v, 0);
	v = json_object_get(cov, "pct");
	if (json_is_array(v))
		put_cov_pct(h, v);
	else if (v != NULL)
		put_json(h, v, 0);
	v = json_object_get(cov, "invariants");
	if (json_is_array(v) && json_array_size(v) > 0) {
		rh_put(h, "<h3>Invariants</h3>\n");
		put_cov_invariants(h, v);
	} else if (v != NULL && !json_is_array(v))
		put_json(h, v, 0);
	json_object_foreach(cov, k, v) {
		for (i = 0; i < nitems(known) && strcmp(known[i], k) != 0; i++)
			;
		if (i < nitems(known))
			continue;
		if (n++ == 0)
			rh_put(h, "<h3>More</h3>\n<table class=plain>\n");
		rh_put(h, "<tr><th>");
		rh_text(h, k);
		rh_put(h, "</th><td>");
		put_json(h, v, 1);
		rh_put(h, "</td></tr>\n");
	}
	if (n > 0)
		rh_put(h, "</table>\n");
}

/* --- the whole ---------------------------------------------------------- */

/* report.json's head: the run's facts, and the seed range to index. */
static void
page_head(json_t *head, void *arg)
{
	struct page	*p = arg;
	json_t		*seeds = json_object_get(head, "seeds");
	uint64_t	 k;

	p->h.report = json_incref(head);
	p->cfg_name = jstr(json_object_get(head, "config"), "name");
	if (p->cfg_name == NULL || !json_is_integer(json_object_get(seeds, "first")) ||
	    !json_is_integer(json_object_get(seeds, "last")) ||
	    jint(seeds, "last", 0) < jint(seeds, "first", 0)) {
		errf(p->err, "%s/report.json lacks config.name or seeds", p->h.dir);
		return;
	}
	p->seeds.first = (uint64_t)jint(seeds, "first", 0);
	p->seeds.last = (uint64_t)jint(seeds, "last", 0);
	p->count = p->seeds.last - p->seeds.first + 1;
	if (p->count > 100000000) {
		errf(p->err, "%s/report.json: %" PRIu64 " seeds is more than report.html "
		    "draws (100,000,000)", p->h.dir, p->count);
		p->count = 0;
		return;
	}
	p->cls = xcalloc(p->count, 1);
	memset(p->cls, 'm', p->count);
	p->grp = xcalloc(p->count, sizeof(int32_t));
	if (p->count <= RH_GRID_CELLS)
		p->title = xcalloc(p->count, sizeof(char *));
	for (k = 0; k < p->count; k++)
		p->grp[k] = -1;
}

/* One record: its cell, its group; nothing else of it is kept. */
static void
page_rec(json_t *r, void *arg)
{
	struct page	*p = arg;
	int64_t		 seed = jint(r, "seed", -1);
	char		 c = rh_verdict_class(jstr(r, "verdict"));
	uint64_t	 k;

	if (p->cls == NULL || seed < (int64_t)p->seeds.first || seed > (int64_t)p->seeds.last)
		return;
	k = (uint64_t)seed - p->seeds.first;
	p->cls[k] = c;
	if (p->title != NULL) {
		free(p->title[k]);
		p->title[k] = cell_title(r);
	}
	if (c != 'p')
		p->grp[k] = (int32_t)group_add(&p->g, rh_record_fp(p->cfg_name, r), c,
		    (uint64_t)seed, r);
}

static int
page_index(struct page *p, const char *path, char *err)
{
	size_t		 gi;
	uint64_t	 k, *remap;
	struct group	*sorted;

	if (rh_report_stream(path, page_head, page_rec, p, err) == -1)
		return -1;
	if (p->h.report == NULL || p->cls == NULL)
		return errf(err, "%s", *p->err ? p->err : "report.json has no head");
	/* Sections in group_cmp order: the cells' links follow. */
	sorted = xcalloc(p->g.n + 1, sizeof(*sorted));
	if (p->g.n > 0)
		memcpy(sorted, p->g.v, p->g.n * sizeof(*sorted));
	for (gi = 0; gi < p->g.n; gi++)
		sorted[gi].cap = gi;	/* its old index, for the remap */
	if (p->g.n > 1)
		qsort(sorted, p->g.n, sizeof(*sorted), group_cmp);
	remap = xcalloc(p->g.n + 1, sizeof(uint64_t));
	for (gi = 0; gi < p->g.n; gi++) {
		remap[sorted[gi].cap] = gi;
		sorted[gi].cap = sorted[gi].n;
	}
	free(p->g.v);
	p->g.v = sorted;
	for (k = 0; k < p->count; k++)
		if (p->grp[k] >= 0)
			p->grp[k] = (int32_t)remap[p->grp[k]];
	free(remap);
	return 0;
}

static void
put_page(struct page *p)
{
	struct rh	*h = &p->h;
	char		 css[64], js[64], now[64];
	time_t		 t = time(NULL);
	struct tm	 tm;

	csp_hash(page_css, css);
	csp_hash(page_js, js);
	if (p->o->now_text)
		snprintf(now, sizeof(now), "%s", p->o->now_text);
	else {
		gmtime_r(&t, &tm);
		strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	rh_put(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	    "style-src 'sha256-%s'; script-src 'sha256-%s'; img-src data:; "
	    "base-uri 'none'; form-action 'none'\">\n"
	    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	    "<meta name=\"generator\" content=\"soak ", css, js);
	rh_text(h, SOAK_VERSION);
	rh_put(h, "\">\n<title>soak: ");
	rh_text(h, p->cfg_name);
	rh_put(h, " — %" PRId64 " fail, %" PRId64 " pass of %" PRIu64 " seeds</title>\n"
	    "<style>%s</style>\n</head>\n<body>\n",
	    jint(json_object_get(h->report, "totals"), "fail", 0),
	    jint(json_object_get(h->report, "totals"), "pass", 0), p->count, page_css);
	put_header(p);
	rh_put(h, "<main>\n");
	put_grid(p);
	put_failures(p);
	rh_workers(h);
	put_coverage(p);
	rh_since(p);
	rh_put(h, "</main>\n<footer>written by soak ");
	rh_text(h, SOAK_VERSION);
	rh_put(h, " at %s from %s/report.json · <span id=\"loadms\"></span>\n</footer>\n"
	    "<script>%s</script>\n</body>\n</html>\n", now, "this folder", page_js);
}

int
report_html_write(const struct report_html_opts *o, size_t *size, char *err)
{
	struct page	 p = { .o = o };
	char		*path = xasprintf("%s/report.json", o->run_dir);
	char		*out = xasprintf("%s/%s", o->run_dir, RH_NAME), *tmp = NULL;
	bool		 ok;
	int		 rc = -1;
	long		 end;
	uint64_t	 k;

	p.h.dir = o->run_dir;
	report_scrub_init(&p.h.scrub, o->cfg);
	if (access(path, R_OK) == -1) {
		errf(err, "%s: %s (is %s the --out folder of a finished run? a run "
		    "stopped midway writes it once resumed: soak run CONFIG --resume %s)",
		    path, strerror(errno), o->run_dir, o->run_dir);
		goto out;
	}
	if (page_index(&p, path, err) == -1)
		goto out;
	tmp = xasprintf("%s.tmp.%d", out, (int)getpid());
	/* made anew, never through a symlink planted in the run's folder */
	if ((p.h.f = fopen_new(tmp, 0644, err)) == NULL)
		goto out;
	put_page(&p);
	errno = 0;
	end = ftell(p.h.f);
	ok = !ferror(p.h.f) && fflush(p.h.f) == 0 && fsync(fileno(p.h.f)) == 0;
	if (fclose(p.h.f) != 0 || !ok || rename(tmp, out) == -1) {
		errf(err, "cannot write %s: %s", out, errno ? strerror(errno) : "an I/O error");
		unlink(tmp);
		goto out;
	}
	fsync_dir_of(out);
	if (size != NULL)
		*size = end > 0 ? (size_t)end : 0;
	rc = 0;
out:
	json_decref(p.h.report);
	groups_free(&p.g);
	free(p.cls);
	for (k = 0; p.title && k < p.count; k++)
		free(p.title[k]);
	free(p.title);
	free(p.grp);
	report_scrub_free(&p.h.scrub);
	free(path);
	free(out);
	free(tmp);
	return rc;
}
