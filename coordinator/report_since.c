/*
 * report.html's "since last time" (coordinator/report_html.h): this run's
 * fingerprints against the previous run's, new, still failing or fixed,
 * and the flaky ones; and which run is the previous one by default.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "coordinator/report_html_int.h"

struct prev_fp {
	char		*fp;
	uint64_t	 n, smallest;
};

struct prev {
	json_t		*head;
	struct prev_fp	*v;
	size_t		 n;
};

static void
prev_head(json_t *h, void *arg)
{
	((struct prev *)arg)->head = json_incref(h);
}

static void
prev_rec(json_t *r, void *arg)
{
	struct prev	*pv = arg;
	const char	*name = jstr(json_object_get(pv->head, "config"), "name");
	char		*fp;
	size_t		 j;
	uint64_t	 seed = (uint64_t)jint(r, "seed", 0);

	if (rh_verdict_class(jstr(r, "verdict")) == 'p')
		return;
	fp = rh_record_fp(name ? name : "", r);
	for (j = 0; j < pv->n && strcmp(pv->v[j].fp, fp) != 0; j++)
		;
	if (j == pv->n) {
		pv->v = xreallocarray(pv->v, pv->n + 1, sizeof(*pv->v));
		pv->v[pv->n++] = (struct prev_fp){ fp, 0, seed };
	} else
		free(fp);
	pv->v[j].n++;
	if (seed < pv->v[j].smallest)
		pv->v[j].smallest = seed;
}

void
rh_since(struct page *p)
{
	struct rh	*h = &p->h;
	const struct report_html_opts *o = p->o;
	char		 why[512] = "", *prev = NULL, *path;
	json_t		*pr = NULL;
	struct prev	 pv = { 0 };
	struct prev_fp	*pf = NULL;
	size_t		 npf = 0, i, j, nfixed = 0, nflaky = 0;
	const char	*pname;

	rh_put(h, "<h2 id=\"since\">Since last time</h2>\n");
	if (o->previous != NULL && *o->previous == '\0') {
		rh_put(h, "<p class=note>No earlier run was asked for.</p>\n");
		goto flaky;
	}
	prev = o->previous ? xstrdup(o->previous) : report_html_previous(h->dir, why,
	    sizeof(why));
	if (prev == NULL) {
		rh_put(h, "<p class=note>");
		rh_text(h, why);
		rh_put(h, "</p>\n");
		goto flaky;
	}
	path = xasprintf("%s/report.json", prev);
	if (rh_report_stream(path, prev_head, prev_rec, &pv, why) == -1) {
		free(path);
		rh_put(h, "<p class=warn>The earlier run ");
		rh_text(h, prev);
		rh_put(h, " has no readable report.json (");
		rh_text(h, why);
		rh_put(h, "): nothing to compare.</p>\n");
		goto flaky;
	}
	free(path);
	pr = pv.head;
	pf = pv.v;
	npf = pv.n;
	pname = jstr(json_object_get(pr, "config"), "name");
	rh_put(h, "<p>Compared with run <code>");
	rh_text(h, jstr(pr, "run_id"));
	rh_put(h, "</code> (");
	rh_text(h, jstr(pr, "started_at"));
	rh_put(h, ", ");
	rh_text(h, prev);
	rh_put(h, ")%s.</p>\n", pname && strcmp(pname, p->cfg_name) != 0 ?
	    ", of another config" : "");
	if (jstr(json_object_get(pr, "config"), "hash") &&
	    jstr(json_object_get(h->report, "config"), "hash") &&
	    strcmp(jstr(json_object_get(pr, "config"), "hash"),
	    jstr(json_object_get(h->report, "config"), "hash")) != 0)
		rh_put(h, "<p class=note>The config changed between the runs (its hash).</p>\n");
	if (jint(json_object_get(pr, "seeds"), "first", -1) != (int64_t)p->seeds.first ||
	    jint(json_object_get(pr, "seeds"), "last", -1) != (int64_t)p->seeds.last)
		rh_put(h, "<p class=note>The runs cover different seeds (%" PRId64 "..%" PRId64
		    " then, %" PRIu64 "..%" PRIu64 " now): a fingerprint gone may only be "
		    "out of range.</p>\n", jint(json_object_get(pr, "seeds"), "first", 0),
		    jint(json_object_get(pr, "seeds"), "last", 0), p->seeds.first,
		    p->seeds.last);
	rh_put(h, "<table class=plain id=\"since-table\"><tr><th></th><th>fingerprint</th>"
	    "<th>seeds now</th><th>seeds then</th></tr>\n");
	for (i = 0; i < p->g.n; i++) {
		for (j = 0; j < npf && strcmp(pf[j].fp, p->g.v[i].fp) != 0; j++)
			;
		rh_put(h, "<tr class=\"%s\"><td><span class=\"badge b-%s\">%s</span></td>"
		    "<td><a href=\"#g%zu\"><code>", j < npf ? "still" : "new",
		    j < npf ? "still" : "new", j < npf ? "still failing" : "new", i);
		rh_text(h, p->g.v[i].fp);
		rh_put(h, "</code></a></td><td>%zu (smallest %" PRIu64 ")</td><td>", p->g.v[i].n,
		    p->g.v[i].smallest);
		if (j < npf)
			rh_put(h, "%" PRIu64 " (smallest %" PRIu64 ")", pf[j].n, pf[j].smallest);
		else
			rh_put(h, "—");
		rh_put(h, "</td></tr>\n");
	}
	for (j = 0; j < npf; j++) {
		for (i = 0; i < p->g.n && strcmp(pf[j].fp, p->g.v[i].fp) != 0; i++)
			;
		if (i < p->g.n)
			continue;
		nfixed++;
		rh_put(h, "<tr class=fixed><td><span class=\"badge b-fixed\">fixed</span></td>"
		    "<td><code>");
		rh_text(h, pf[j].fp);
		rh_put(h, "</code></td><td>0</td><td>%" PRIu64 " (smallest %" PRIu64
		    ")</td></tr>\n", pf[j].n, pf[j].smallest);
	}
	if (p->g.n == 0 && npf == 0)
		rh_put(h, "<tr><td></td><td colspan=3>no failure then, none now</td></tr>\n");
	rh_put(h, "</table>\n");
	(void)nfixed;
flaky:
	rh_put(h, "<h3>Flaky</h3>\n");
	for (i = 0; i < p->g.n; i++) {
		json_t	*rec = p->g.v[i].first;

		if (!json_is_false(json_object_get(rec, "reproduced")))
			continue;
		if (nflaky++ == 0)
			rh_put(h, "<p>The confirming re-run did not reproduce these (the "
			    "failure depends on more than the seed):</p><ul id=\"flaky\">\n");
		rh_put(h, "<li class=flaky><span class=\"badge b-flaky\">flaky</span> seed %"
		    PRIu64 " — <a href=\"#g%zu\"><code>", p->g.v[i].smallest, i);
		rh_text(h, p->g.v[i].fp);
		rh_put(h, "</code></a></li>\n");
	}
	if (nflaky > 0)
		rh_put(h, "</ul>\n");
	else
		rh_put(h, "<p class=note>No confirming re-run failed to reproduce its "
		    "seed.</p>\n");
	for (j = 0; j < pv.n; j++)
		free(pv.v[j].fp);
	free(pv.v);
	json_decref(pv.head);
	free(prev);
}

char *
report_html_previous(const char *run_dir, char *why, size_t whylen)
{
	char		*abs = realpath(run_dir, NULL), *parent, *slash, *best = NULL;
	char		*bstart = NULL, *mine = NULL, *path, *name = NULL, err[ERR_LEN];
	DIR		*d;
	struct dirent	*e;
	json_t		*r;

	if (abs == NULL) {
		snprintf(why, whylen, "%s: %s", run_dir, strerror(errno));
		return NULL;
	}
	parent = xstrdup(abs);
	if ((slash = strrchr(parent, '/')) != NULL)
		*(slash == parent ? slash + 1 : slash) = '\0';
	if ((r = report_html_head(abs, err)) != NULL) {
		mine = xstrdup(jstr(r, "started_at"));
		name = xstrdup(jstr(json_object_get(r, "config"), "name"));
	}
	json_decref(r);
	if ((d = opendir(parent)) == NULL) {
		snprintf(why, whylen, "No earlier run: cannot read the output root %s (%s).",
		    parent, strerror(errno));
		goto out;
	}
	while ((e = readdir(d)) != NULL) {
		char		*dir;
		const char	*st;

		if (e->d_name[0] == '.')
			continue;
		dir = xasprintf("%s/%s", strcmp(parent, "/") == 0 ? "" : parent, e->d_name);
		path = xasprintf("%s/report.json", dir);
		r = strcmp(dir, abs) != 0 && access(path, R_OK) == 0 ?
		    report_html_head(dir, err) : NULL;
		free(path);
		st = jstr(r, "started_at");
		/* of the same config, earlier than this run, the newest of those */
		if (st != NULL && (mine == NULL || strcmp(st, mine) < 0) &&
		    (name == NULL || (jstr(json_object_get(r, "config"), "name") &&
		    strcmp(jstr(json_object_get(r, "config"), "name"), name) == 0)) &&
		    (bstart == NULL || strcmp(st, bstart) > 0 ||
		    (strcmp(st, bstart) == 0 && strcmp(dir, best) > 0))) {
			free(best);
			free(bstart);
			best = dir;
			bstart = xstrdup(st);
			dir = NULL;
		}
		free(dir);
		json_decref(r);
	}
	closedir(d);
	if (best == NULL)
		snprintf(why, whylen, "No earlier run of %s under the output root %s (a "
		    "folder beside this one holding a report.json of the same config "
		    "name that started before it); soak report --previous DIR compares "
		    "with any run.", name ? name : "this config", parent);
out:
	free(name);
	free(bstart);
	free(mine);
	free(parent);
	free(abs);
	return best;
}

