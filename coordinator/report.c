#include "coordinator/report.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/regress.h"
#include "common/seed.h"
#include "common/self.h"
#include "common/soak.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/coverage.h"
#include "coordinator/fingerprint.h"

/* The fingerprint of a final seed. */
static char *
seed_fingerprint(const struct cfg *cfg, const struct coord_seed *s)
{
	return fp_string(cfg->name, reason_name(s->why),
	    json_object_get(s->detail, "invariants"));
}

const char *
report_reproduced(const struct cfg *cfg, const struct coord_seed *s, char *buf,
    size_t len)
{
	json_t		*rep = json_object_get(s->detail, "reproduced");
	const char	*again = json_string_value(json_object_get(json_object_get(
			    s->detail, "confirm"), "fingerprint"));
	char		*mine;

	buf[0] = '\0';
	if (s->confirm != CONFIRM_DONE)
		return buf;
	if (json_is_true(rep))
		snprintf(buf, len, "reproduced it");
	else if (json_is_false(rep) && again != NULL) {
		/* It failed, as another bug: not a pass, and not this one. */
		mine = seed_fingerprint(cfg, s);
		snprintf(buf, len, "failed differently: %s, where the run failed "
		    "with %s (another bug, or this one showing another way: it "
		    "depends on more than the seed)", again, mine);
		free(mine);
	} else if (json_is_false(rep))
		snprintf(buf, len, "did NOT reproduce it (it depends on more than "
		    "the seed, timing most often: a replay may need tries)");
	else
		snprintf(buf, len, "ended infra; reproduction unknown");
	return buf;
}

/* Shell-quotes only when needed, so the common command stays copyable. */
static char *
shell_word(const char *s)
{
	const char	*p;
	char		*o, *q;

	for (p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("/._-+=:,@", *p)))
			break;
	if (*p == '\0' && *s)
		return xstrdup(s);
	o = q = xcalloc(strlen(s) * 4 + 3, 1);
	*q++ = '\'';
	for (p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(q, "'\\''", 4);
			q += 4;
		} else
			*q++ = *p;
	}
	*q++ = '\'';
	return o;
}

/* "BIN replay CONFIG --seed N", each word quoted as needed. */
static char *
replay_line(const char *bin, const char *cfg, uint64_t seed)
{
	char	*b = shell_word(bin), *c = shell_word(cfg), *r;

	r = xasprintf("%s replay %s --seed %" PRIu64, b, c, seed);
	free(b);
	free(c);
	return r;
}

/*
 * The git top of the config's folder, found once per config path: every
 * seed record asks, and the answer does not change during a run.
 */
static const char *
config_top(const char *cfg_path)
{
	static char	*path, *top;
	char		*dir, *slash;

	if (path != NULL && strcmp(path, cfg_path) == 0)
		return top;
	free(path);
	free(top);
	path = xstrdup(cfg_path);
	dir = xstrdup(cfg_path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	top = slash ? git_toplevel(dir) : NULL;
	free(dir);
	return top;
}

char *
report_replay(const char *cfg_path, uint64_t seed)
{
	const char	*top = config_top(cfg_path);
	char		*rel = top ? path_under(cfg_path, top) : NULL;
	char		*bin = self_command(rel ? top : "/"), *r;

	r = replay_line(bin, rel ? rel : cfg_path, seed);
	free(bin);
	free(rel);
	return r;
}

char *
report_replay_here(const char *cfg_path, uint64_t seed)
{
	const char	*cwd = self_cwd();
	char		*rel = cwd ? path_under(cfg_path, cwd) : NULL;
	char		*bin = self_command(NULL), *r;

	r = replay_line(bin, rel ? rel : cfg_path, seed);
	free(bin);
	free(rel);
	return r;
}

/* "BIN replay CONFIG --plan FILE", each word quoted as needed. */
static char *
replay_plan_line(const char *bin, const char *cfg, const char *plan)
{
	char	*b = shell_word(bin), *c = shell_word(cfg), *p = shell_word(plan), *r;

	r = xasprintf("%s replay %s --plan %s", b, c, p);
	free(b);
	free(c);
	free(p);
	return r;
}

char *
report_replay_plan(const char *cfg_path, const char *plan_path)
{
	const char	*top = config_top(cfg_path);
	char		*rel = top ? path_under(cfg_path, top) : NULL;
	char		*prel = rel ? path_under(plan_path, top) : NULL;
	char		*bin = self_command(rel && prel ? top : "/"), *r;

	r = replay_plan_line(bin, rel && prel ? rel : cfg_path, prel ? prel : plan_path);
	free(bin);
	free(rel);
	free(prel);
	return r;
}

char *
report_replay_plan_here(const char *cfg_path, const char *plan_path)
{
	const char	*cwd = self_cwd();
	char		*rel = cwd ? path_under(cfg_path, cwd) : NULL;
	char		*prel = cwd ? path_under(plan_path, cwd) : NULL;
	char		*bin = self_command(NULL), *r;

	r = replay_plan_line(bin, rel ? rel : cfg_path, prel ? prel : plan_path);
	free(bin);
	free(rel);
	free(prel);
	return r;
}

bool
report_replay_from_top(const char *replay)
{
	const char	*p = replay != NULL ? strstr(replay, " replay ") : NULL;

	if (p == NULL)
		return false;
	p += strlen(" replay ");
	if (*p == '\'')	/* shell_word's quote */
		p++;
	return *p != '/' && *p != '\0';
}

const char *
report_failure_dir(const struct coord_seed *s, char *buf, size_t len)
{
	if (s->regress != NULL)
		snprintf(buf, len, "failures/regression-%s", s->regress->name);
	else
		snprintf(buf, len, "failures/%" PRIu64, s->seed);
	return buf;
}

const json_t *
report_refresh_plan(const struct coord_seed *s)
{
	const json_t	*p;

	if (s->regress == NULL || s->state != CSEED_FINAL ||
	    !json_is_object(json_object_get(s->detail, "explored")))
		return NULL;
	p = json_object_get(s->detail, s->verdict == VERDICT_PASS ? "refresh" :
	    s->verdict == VERDICT_FAIL ? "plan" : "");
	return json_is_object(p) ? p : NULL;
}

const char *
report_refresh_path(const struct coord_seed *s, char *buf, size_t len)
{
	snprintf(buf, len, "refresh/%s.json", s->regress ? s->regress->name : "");
	return buf;
}

static char *
iso8601(int64_t ms)
{
	time_t		t = (time_t)(ms / 1000);
	struct tm	tm;
	char		buf[32];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return xstrdup(buf);
}

/* A new reference to d[key], or to dflt (consumed) when absent. */
static json_t *
jref(json_t *d, const char *key, json_t *dflt)
{
	json_t	*v = json_object_get(d, key);

	if (v == NULL)
		return dflt;
	json_decref(dflt);
	return json_incref(v);
}

static json_t	*reg_record(const struct report_meta *, const struct coord_seed *,
		    bool);

/*
 * tickets.minimize's record of a seed (its "minimized" in docs/report.md): the
 * worker's, with where its plan is and the command that replays it.
 */
static json_t *
minimized_record(const struct report_meta *m, const struct coord_seed *s,
    const json_t *mz)
{
	json_t	*o = json_deep_copy(mz);

	if (json_is_object(json_object_get(o, "plan"))) {
		char	*path = xasprintf("%s/failures/%" PRIu64 "/plan.min.json",
			    m->out_dir, s->seed);
		char	*replay = report_replay_plan(m->cfg_path, path);

		json_object_set_new(o, "plan_file", json_sprintf("failures/%" PRIu64
		    "/plan.min.json", s->seed));
		json_object_set_new(o, "replay", json_string(replay));
		free(replay);
		free(path);
	}
	return o;
}

static json_t *
seed_record(const struct report_meta *m, const struct coord_seed *s, bool full)
{
	json_t	*r, *d;

	if (s->regress != NULL)
		return reg_record(m, s, full);
	d = coord_seed_detail(s);
	char	*fp = NULL, *replay = report_replay(m->cfg_path, s->seed), *fdir = NULL;
	json_t	*msgj;

	msgj = json_object_get(d, "message");
	if (s->verdict == VERDICT_FAIL)
		fp = seed_fingerprint(m->cfg, s);
	if (s->verdict != VERDICT_PASS)
		fdir = xasprintf("failures/%" PRIu64, s->seed);
	r = json_pack("{s:I, s:s, s:o, s:s, s:i, s:I, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:s, s:o}",
	    "seed", (json_int_t)s->seed,
	    "verdict", msg_verdict_name(s->verdict),
	    "reason", s->why != REASON_NONE ? json_string(reason_name(s->why)) :
	    json_null(),
	    "message", json_is_string(msgj) ? json_string_value(msgj) : "",
	    "worker", (int)s->worker,
	    "duration_ms", (json_int_t)s->duration_ms,
	    "round", jref(d, "round", json_null()),
	    "ok_turns", jref(d, "ok_turns", json_integer(0)),
	    "total_turns", jref(d, "total_turns", json_integer(0)),
	    "forced", (json_int_t)s->forced,
	    "fingerprint", fp ? json_string(fp) : json_null(),
	    "invariants", jref(d, "invariants", json_array()),
	    "attempts", coord_seed_attempts(s),
	    "reproduced", jref(d, "reproduced", json_null()),
	    "replay", replay,
	    "failure_dir", fdir ? json_string(fdir) : json_null());
	json_object_set_new(r, "waits", cov_waits_json(m->cfg, &s->waits));
	if (json_object_get(d, "confirm"))
		json_object_set(r, "confirm", json_object_get(d, "confirm"));
	if (json_is_object(json_object_get(d, "minimized")))
		json_object_set_new(r, "minimized", minimized_record(m, s,
		    json_object_get(d, "minimized")));
	if (json_object_get(d, "config_error"))
		json_object_set(r, "config_error", json_object_get(d, "config_error"));
	/* A pass with a round in which no turn succeeded (guard 0 allows it). */
	if (json_object_get(d, "idle_round"))
		json_object_set(r, "idle_round", json_object_get(d, "idle_round"));
	/* The worker cut the detail to fit a message (worker/detail.h). */
	if (json_object_get(d, "truncated"))
		json_object_set(r, "truncated", json_object_get(d, "truncated"));
	if (full) {
		json_object_set_new(r, "turns", jref(d, "turns", json_array()));
		if (json_object_get(d, "coverage"))
			json_object_set(r, "coverage", json_object_get(d, "coverage"));
		if (json_object_get(d, "timing"))
			json_object_set(r, "timing", json_object_get(d, "timing"));
		if (json_object_get(d, "workspace"))
			json_object_set(r, "workspace", json_object_get(d, "workspace"));
		if (json_object_get(d, "workspace_error"))
			json_object_set(r, "workspace_error", json_object_get(d,
			    "workspace_error"));
	}
	json_decref(d);
	free(fp);
	free(fdir);
	free(replay);
	return r;
}

/*
 * A regression's record (docs/report.md "regressions"): what a seed's
 * holds, keyed by its name, file and hash; a missing one has no verdict
 * (null) and says so.
 */
static json_t *
reg_record(const struct report_meta *m, const struct coord_seed *s, bool full)
{
	const struct regress	*g = s->regress;
	json_t			*d = coord_seed_detail(s), *r;
	json_t			*msgj = json_object_get(d, "message");
	char			*fp = NULL, *replay = report_replay_plan(m->cfg_path, g->file);
	char			 fdir[300];
	bool			 final = s->state == CSEED_FINAL;

	if (final && s->verdict == VERDICT_FAIL)
		fp = seed_fingerprint(m->cfg, s);
	report_failure_dir(s, fdir, sizeof(fdir));
	r = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:s, s:s, s:o, s:i, s:I, "
	    "s:o, s:o, s:o, s:o, s:o, s:o}",
	    "name", g->name, "file", g->file, "hash", g->hash,
	    "seed", (json_int_t)s->seed,
	    "verdict", final ? json_string(msg_verdict_name(s->verdict)) : json_null(),
	    "reason", final && s->why != REASON_NONE ? json_string(reason_name(s->why)) :
	    json_null(),
	    "fingerprint", fp ? json_string(fp) : json_null(),
	    "message", final ? json_is_string(msgj) ? json_string_value(msgj) : "" :
	    "no verdict: the run ended before this regression finished",
	    "replay", replay,
	    "pinned_fingerprint", g->fingerprint ? json_string(g->fingerprint) :
	    json_null(),
	    "worker", (int)s->worker,
	    "duration_ms", (json_int_t)s->duration_ms,
	    "round", jref(d, "round", json_null()),
	    "ok_turns", jref(d, "ok_turns", json_integer(0)),
	    "total_turns", jref(d, "total_turns", json_integer(0)),
	    "invariants", jref(d, "invariants", json_array()),
	    "attempts", coord_seed_attempts(s),
	    "failure_dir", final && s->verdict != VERDICT_PASS ? json_string(fdir) :
	    json_null());
	if (json_object_get(d, "diverged"))
		json_object_set(r, "diverged", json_object_get(d, "diverged"));
	/* judged by exploring, because its plan diverged (regexplore.h) */
	if (json_is_object(json_object_get(d, "explored"))) {
		char	rel[300];

		json_object_set(r, "explored", json_object_get(d, "explored"));
		json_object_set_new(r, "refresh_plan", report_refresh_plan(s) != NULL ?
		    json_string(report_refresh_path(s, rel, sizeof(rel))) : json_null());
	}
	if (json_object_get(d, "plan_departures"))
		json_object_set(r, "plan_departures", json_object_get(d,
		    "plan_departures"));
	if (full) {
		json_object_set_new(r, "turns", jref(d, "turns", json_array()));
		if (json_object_get(d, "workspace"))
			json_object_set(r, "workspace", json_object_get(d, "workspace"));
	}
	json_decref(d);
	free(fp);
	free(replay);
	return r;
}

int
report_config_copy(const struct cfg *cfg, const char *out_dir, char *err)
{
	char	*path = xasprintf("%s/config.yaml", out_dir), *text;
	size_t	 len;
	int	 rc;

	text = cfg_text_redact(cfg->text, cfg->text_len, &len);
	rc = write_file_atomic(path, text, len, 0600, err);
	free(text);
	free(path);
	return rc;
}

/*
 * path: j, written whole or not at all, and never through a symlink planted
 * where it goes (write_file_atomic: made anew, then renamed over it).
 */
static int
dump_new(const json_t *j, const char *path, size_t flags, char *err)
{
	char	*text = json_dumps(j, flags);
	int	 rc;

	if (text == NULL)
		return errf(err, "cannot write %s: out of memory", path);
	rc = write_file_atomic(path, text, strlen(text), 0644, err);
	free(text);
	return rc;
}

/* dir/name: plan, its failure's fingerprint the coordinator's (fp). */
static int
write_plan(const char *dir, const char *name, const json_t *plan0,
    json_t *fp, char *err)
{
	json_t	*plan = json_deep_copy(plan0), *failure;
	char	*path = xasprintf("%s/%s", dir, name);
	int	 rc = 0;

	if (json_is_string(fp)) {
		if (!json_is_object(failure = json_object_get(plan, "failure"))) {
			failure = json_object();
			json_object_set_new(plan, "failure", failure);
		}
		json_object_set(failure, "fingerprint", fp);
	}
	rc = dump_new(plan, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER, err);
	free(path);
	json_decref(plan);
	return rc;
}

/*
 * refresh/NAME.json: a regression's new schedule (report_refresh_plan); a
 * failing one's with the coordinator's fingerprint, a pass's with the
 * failure the plan pinned.
 */
static int
write_refresh(const struct report_meta *m, const struct coord_seed *s, char *err)
{
	char	*dir = xasprintf("%s/refresh", m->out_dir);
	char	*name = xasprintf("%s.json", s->regress->name);
	char	*fp = s->verdict == VERDICT_FAIL ? seed_fingerprint(m->cfg, s) : NULL;
	json_t	*fpj = fp != NULL ? json_string(fp) : NULL;
	int	 rc;

	rc = mkdir_p(dir, 0755, err);
	if (rc == 0)
		rc = write_plan(dir, name, report_refresh_plan(s), fpj, err);
	json_decref(fpj);
	free(fp);
	free(name);
	free(dir);
	return rc;
}

int
report_failure(const struct report_meta *m, const struct coord_seed *s, char *err)
{
	char	*dir, *path;
	json_t	*rec, *trace, *plan;
	int	 rc = 0;

	char	 rel[300];

	if (report_refresh_plan(s) != NULL && write_refresh(m, s, err) == -1)
		return -1;
	if (s->verdict == VERDICT_PASS)
		return 0;
	dir = xasprintf("%s/%s", m->out_dir, report_failure_dir(s, rel, sizeof(rel)));
	if (mkdir_p(dir, 0755, err) == -1) {
		free(dir);
		return -1;
	}
	rec = seed_record(m, s, true);
	path = xasprintf("%s/result.json", dir);
	/* Written whole or not at all: a full disk leaves no half a file. */
	rc = dump_new(rec, path, JSON_INDENT(2), err);
	free(path);
	plan = json_object_get(s->detail, "plan");
	if (rc == 0 && json_is_object(plan))
		rc = write_plan(dir, "plan.json", plan, json_object_get(rec,
		    "fingerprint"), err);
	/* tickets.minimize: what the worker made of it (confirm.c checked it) */
	plan = json_object_get(json_object_get(s->detail, "minimized"), "plan");
	if (rc == 0 && json_is_object(plan))
		rc = write_plan(dir, "plan.min.json", plan, json_object_get(rec,
		    "fingerprint"), err);
	json_decref(rec);
	trace = json_object_get(s->detail, "trace");
	if (rc == 0 && json_is_string(trace)) {
		path = xasprintf("%s/trace.jsonl", dir);
		if (write_file_atomic(path, json_string_value(trace),
		    json_string_length(trace), 0644, err) == -1)
			rc = -1;
		free(path);
	}
	free(dir);
	return rc;
}

int
report_exit_status(const struct coord *c)
{
	struct coord_counts	n;

	struct coord_reg_counts	rn;

	coord_counts(c, &n);
	coord_reg_counts(c, &rn);
	/* Stopped for a config error: that is what to fix first. */
	if (coord_halt_status(c) != 0)
		return coord_halt_status(c);
	/* A failing regression fails the run as a seed does; a diverged one
	 * tested nothing: infra, never a pass. */
	if (n.fail > 0 || rn.fail > 0)
		return SOAK_EXIT_FAIL;
	if (n.infra > 0 || n.done < n.total || rn.done < rn.total ||
	    rn.diverged + rn.infra > 0)
		return SOAK_EXIT_INCOMPLETE;
	return SOAK_EXIT_PASS;
}

static void
xml_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char	ch = (unsigned char)*s;

		switch (ch) {
		case '<':	fputs("&lt;", f); break;
		case '>':	fputs("&gt;", f); break;
		case '&':	fputs("&amp;", f); break;
		case '"':	fputs("&quot;", f); break;
		case '\'':	fputs("&apos;", f); break;
		default:
			/* XML 1.0 forbids most control characters, even escaped. */
			if (ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r')
				fputc('?', f);
			else
				fputc(ch, f);
		}
	}
}

/* A cell as one line: control characters as spaces, cut with "…". */
static void
cell_put(FILE *f, const json_t *v, size_t max, void (*put)(FILE *, const char *))
{
	const char	*s = json_is_string(v) ? json_string_value(v) : "NULL";
	size_t		 len = strlen(s), n = len > max ? utf8_prefix(s, len, max) : len;
	char		*c = strndup(s, n), *p;

	if (c == NULL)
		abort();
	for (p = c; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	put(f, c);
	if (n < len)
		put(f, "…");
	free(c);
}

static void
plain_put(FILE *f, const char *s)
{
	fputs(s, f);
}

/*
 * The broken invariants' first rows, as replay shows them ("col | col",
 * then a row a line), at most max_rows of each and max_inv invariants,
 * each line after indent, through put (XML-escaped for junit).  The rows
 * are report.json's: what the worker captured (and scrubbed).
 */
static void
rows_put(FILE *f, const json_t *invariants, size_t max_inv, size_t max_rows,
    const char *indent, void (*put)(FILE *, const char *))
{
	const json_t	*inv, *cols, *rows, *row, *v;
	size_t		 i, r, k, nrows;
	json_int_t	 total;
	char		 more[96];

	json_array_foreach(invariants, i, inv) {
		if (i == max_inv) {
			snprintf(more, sizeof(more), "%s… %zu more broken invariant(s)\n",
			    indent, json_array_size(invariants) - max_inv);
			put(f, more);
			break;
		}
		cols = json_object_get(inv, "columns");
		rows = json_object_get(inv, "rows");
		total = json_integer_value(json_object_get(inv, "row_count"));
		put(f, indent);
		put(f, "\"");
		put(f, json_string_value(json_object_get(inv, "name")) ?
		    json_string_value(json_object_get(inv, "name")) : "?");
		snprintf(more, sizeof(more), "\": %lld row%s\n", (long long)total,
		    total == 1 ? "" : "s");
		put(f, more);
		if (json_array_size(cols) == 0)
			continue;
		put(f, indent);
		put(f, "  ");
		json_array_foreach(cols, k, v) {
			if (k)
				put(f, " | ");
			cell_put(f, v, 40, put);
		}
		put(f, "\n");
		nrows = json_array_size(rows);
		for (r = 0; r < nrows && r < max_rows; r++) {
			row = json_array_get(rows, r);
			put(f, indent);
			put(f, "  ");
			json_array_foreach(row, k, v) {
				if (k)
					put(f, " | ");
				cell_put(f, v, 40, put);
			}
			put(f, "\n");
		}
		if (total > (json_int_t)r) {
			snprintf(more, sizeof(more), "%s  … %lld more row%s\n", indent,
			    (long long)(total - (json_int_t)r), total - (json_int_t)r == 1 ?
			    "" : "s");
			put(f, more);
		}
	}
}

static void
xml_put(FILE *f, const char *s)
{
	xml_escape(f, s);
}

/* One <testcase>: "seed N", or a regression's "regression NAME". */
static void
junit_case(FILE *f, const struct report_meta *m, const struct coord_seed *s,
    const char *replay)
{
	json_t		*msgj = json_object_get(s->detail, "message");
	const char	*msg = json_is_string(msgj) ? json_string_value(msgj) : "";
	char		 fdir[300];

	fprintf(f, "    <testcase classname=\"soak.");
	xml_escape(f, m->cfg->name);
	if (s->regress != NULL) {
		fprintf(f, "\" name=\"regression ");
		xml_escape(f, s->regress->name);
		fprintf(f, "\" time=\"%.3f\"", (double)s->duration_ms / 1000.0);
	} else
		fprintf(f, "\" name=\"seed %" PRIu64 "\" time=\"%.3f\"", s->seed,
		    (double)s->duration_ms / 1000.0);
	if (s->state != CSEED_FINAL) {
		fprintf(f, ">\n      <error type=\"missing\" message=\"no verdict: "
		    "the run ended before this %s finished\"/>\n    </testcase>\n",
		    s->regress ? "regression" : "seed");
	} else if (s->verdict == VERDICT_PASS && s->regress != NULL &&
	    json_is_object(json_object_get(s->detail, "explored"))) {
		/* a pass by exploring: said, so it does not read as the plan's */
		fprintf(f, ">\n      <system-out>");
		xml_escape(f, msg);
		fprintf(f, "</system-out>\n    </testcase>\n");
	} else if (s->verdict == VERDICT_PASS) {
		fprintf(f, "/>\n");
	} else {
		const char	*tag = s->verdict == VERDICT_FAIL ? "failure" : "error";

		fprintf(f, ">\n      <%s type=\"", tag);
		xml_escape(f, reason_name(s->why));
		fprintf(f, "\" message=\"");
		xml_escape(f, msg);
		fprintf(f, "\">");
		xml_escape(f, msg);
		fputc('\n', f);
		rows_put(f, json_object_get(s->detail, "invariants"), 5, 5, "",
		    xml_put);
		if (s->regress != NULL) {
			fprintf(f, "pinned plan: ");
			xml_escape(f, s->regress->file);
			fputc('\n', f);
		}
		fprintf(f, "replay: ");
		xml_escape(f, replay);
		fprintf(f, "\ndetails: ");
		xml_escape(f, report_failure_dir(s, fdir, sizeof(fdir)));
		fprintf(f, "/</%s>\n    </testcase>\n", tag);
	}
}

static int
write_junit(const struct report_meta *m, const struct coord *c, char *err)
{
	const struct coord_seed	*seeds, *regs;
	struct coord_counts	 n;
	struct coord_reg_counts	 rn;
	uint64_t		 ns, i, tests, failures, errors;
	size_t			 nr, k;
	char			*path = xasprintf("%s/junit.xml", m->out_dir), *tmp;
	FILE			*f;
	bool			 synced;

	tmp = xasprintf("%s.tmp", path);
	/* made anew, never through a symlink planted in --out */
	if ((f = fopen_new(tmp, 0644, err)) == NULL) {
		errf(err, "cannot write %s", tmp);
		free(path);
		free(tmp);
		return -1;
	}
	coord_counts(c, &n);
	coord_reg_counts(c, &rn);
	seeds = coord_seeds(c, &ns);
	regs = coord_regressions(c, &nr);
	tests = n.total + rn.total;
	failures = n.fail + rn.fail;
	/* A diverged regression is an error, never a pass; so is a missing one. */
	errors = n.infra + (n.total - n.done) + rn.diverged + rn.infra +
	    (rn.total - rn.done);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites name=\"soak\" tests=\"%" PRIu64 "\" failures=\"%" PRIu64
	    "\" errors=\"%" PRIu64 "\" time=\"%.3f\">\n", tests, failures, errors,
	    (double)m->wall_ms / 1000.0);
	fprintf(f, "  <testsuite name=\"");
	xml_escape(f, m->cfg->name);
	fprintf(f, "\" tests=\"%" PRIu64 "\" failures=\"%" PRIu64 "\" errors=\"%" PRIu64
	    "\" time=\"%.3f\">\n", tests, failures, errors, (double)m->wall_ms / 1000.0);
	/* The regressions first, as they ran. */
	for (k = 0; k < nr; k++) {
		char	*replay = report_replay_plan(m->cfg_path, regs[k].regress->file);

		junit_case(f, m, &regs[k], replay);
		free(replay);
	}
	for (i = 0; i < ns; i++) {
		char	*replay = report_replay(m->cfg_path, seeds[i].seed);

		junit_case(f, m, &seeds[i], replay);
		free(replay);
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	synced = fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (fclose(f) != 0 || !synced || rename(tmp, path) == -1) {
		errf(err, "cannot write %s", path);
		free(path);
		free(tmp);
		return -1;
	}
	fsync_dir_of(path);
	free(path);
	free(tmp);
	return 0;
}

static json_t *
tickets_json(const struct cfg_tickets *t)
{
	json_t	*labels = json_array();
	size_t	 i;

	for (i = 0; t->labels && t->labels[i]; i++)
		json_array_append_new(labels, json_string(t->labels[i]));
#define S(x)	((x) ? json_string(x) : json_null())
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b}",
	    "sink", S(t->sink), "url", S(t->url), "repo", S(t->repo),
	    "project", S(t->project), "token_env", S(t->token_env),
	    "user_env", S(t->user_env), "issue_type", S(t->issue_type),
	    "labels", labels, "infra", t->infra,
	    "insecure_http", t->insecure_http, "enabled", t->enabled);
#undef S
}

/* Writes s with every line indented by n spaces, the first too. */
static void
put_indented(FILE *f, const char *s, int n)
{
	const char	*nl;

	for (; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		fprintf(f, "%*s%.*s\n", n, "", (int)(nl ? nl - s : (ptrdiff_t)strlen(s)), s);
		if (nl == NULL)
			break;
	}
}

/*
 * report.json, the head (text: the object without "results", as dumped)
 * and then the records one at a time: a run of a million seeds never
 * holds its whole report in memory.  Written to path.tmp, fsync'd,
 * renamed into place, the directory fsync'd.
 */
static int
write_report(const char *path, const char *head, const struct report_meta *m,
    const struct coord_seed *seeds, uint64_t ns, char *err)
{
	char	*tmp = xasprintf("%s.tmp", path), *rec;
	size_t	 len = strlen(head);
	FILE	*f;
	bool	 first = true, ok;
	uint64_t i;

	/* The head ends "\n}": the results go before that brace. */
	while (len > 0 && head[len - 1] != '}')
		len--;
	if (len == 0 || (f = fopen_new(tmp, 0644, err)) == NULL) {
		errf(err, "cannot write %s", tmp);
		free(tmp);
		return -1;
	}
	for (len--; len > 0 && (head[len - 1] == '\n' || head[len - 1] == ' '); len--)
		;
	fprintf(f, "%.*s,\n  \"results\": [", (int)len, head);
	for (i = 0; i < ns; i++) {
		json_t	*r;

		if (seeds[i].state != CSEED_FINAL)
			continue;
		r = seed_record(m, &seeds[i], false);
		rec = json_dumps(r, JSON_INDENT(2));
		json_decref(r);
		if (rec == NULL)
			continue;
		fprintf(f, "%s\n", first ? "" : ",");
		put_indented(f, rec, 4);
		/* put_indented ended the record with a newline: take it back. */
		fseek(f, -1, SEEK_CUR);
		first = false;
		free(rec);
	}
	fprintf(f, "%s]\n}\n", first ? "" : "\n  ");
	errno = 0;
	ok = !ferror(f) && fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (fclose(f) != 0 || !ok || rename(tmp, path) == -1) {
		errf(err, "cannot write %s: %s", path, errno ? strerror(errno) :
		    "an I/O error");
		unlink(tmp);
		free(tmp);
		return -1;
	}
	fsync_dir_of(path);
	free(tmp);
	return 0;
}

/*
 * The seeds without a verdict, as runs of the seed grammar: ["3..199"],
 * "7" for one alone.  A range of millions costs a string or two.
 */
static json_t *
missing_json(const struct coord_seed *seeds, uint64_t n)
{
	json_t		*a = json_array();
	uint64_t	 i, j;

	for (i = 0; i < n; i = j) {
		if (seeds[i].state == CSEED_FINAL) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < n && seeds[j].state != CSEED_FINAL; j++)
			;
		if (j - i == 1)
			json_array_append_new(a, json_sprintf("%" PRIu64, seeds[i].seed));
		else
			json_array_append_new(a, json_sprintf("%" PRIu64 "..%" PRIu64,
			    seeds[i].seed, seeds[j - 1].seed));
	}
	return a;
}

int
report_write(const struct report_meta *m, const struct coord *c, char *err)
{
	const struct coord_seed	*seeds;
	struct coord_counts	 n;
	uint64_t		 ns;
	json_t			*root;
	char			 host[256] = "localhost", hash[CFG_HASH_LEN], *path, *text;
	char			*started, *finished;
	const char		*rev = getenv("SOAK_SUT_REVISION");
	int			 status = report_exit_status(c);

	gethostname(host, sizeof(host) - 1);
	coord_counts(c, &n);
	seeds = coord_seeds(c, &ns);
	cfg_hash_hex(m->cfg, hash);	/* over the redacted text */
	started = iso8601(m->started_wall_ms);
	finished = iso8601(m->started_wall_ms + m->wall_ms);
	root = json_pack("{s:i, s:s, s:s, s:s, s:o, s:{s:s, s:s, s:s, s:i, s:i, s:o},"
	    " s:{s:I, s:I, s:I}, s:s, s:s, s:I, s:o, s:{s:I, s:I, s:I, s:I},"
	    " s:b, s:b, s:i, s:o, s:o}",
	    "format", 1, "soak_version", SOAK_VERSION, "run_id", m->run_id,
	    "host", host, "sut_revision", rev ? json_string(rev) : json_null(),
	    "config", "name", m->cfg->name, "path", m->cfg_path, "hash", hash,
	    "turns", m->cfg->turns, "rounds", m->cfg->rounds,
	    "tickets", tickets_json(&m->cfg->tickets),
	    "seeds", "first", (json_int_t)m->seeds.first, "last", (json_int_t)m->seeds.last,
	    "count", (json_int_t)n.total,
	    "started_at", started, "finished_at", finished,
	    "wall_ms", (json_int_t)m->wall_ms,
	    "workers", coord_workers_json(c),
	    "totals", "pass", (json_int_t)n.pass, "fail", (json_int_t)n.fail,
	    "infra", (json_int_t)n.infra, "missing", (json_int_t)(n.total - n.done),
	    "complete", n.done == n.total && n.infra == 0,
	    "interrupted", m->interrupted,
	    "exit_status", status,
	    "halted", m->halted ? json_string(m->halted) : json_null(),
	    "missing_seeds", missing_json(seeds, ns));
	free(started);
	free(finished);
	if (root != NULL) {
		const struct coord_seed	*regs;
		struct coord_reg_counts	 rn;
		json_t			*ra = json_array();
		size_t			 nr, k;

		json_object_set_new(root, "coverage", cov_json(coord_coverage(c)));
		/* Apart from the seeds' results, in the order they ran. */
		regs = coord_regressions(c, &nr);
		for (k = 0; k < nr; k++)
			json_array_append_new(ra, reg_record(m, &regs[k], false));
		json_object_set_new(root, "regressions", ra);
		coord_reg_counts(c, &rn);
		json_object_set_new(root, "regression_totals", json_pack("{s:I, s:I, "
		    "s:I, s:I, s:I, s:I, s:I}", "count", (json_int_t)rn.total,
		    "pass", (json_int_t)rn.pass, "fail", (json_int_t)rn.fail,
		    "diverged", (json_int_t)rn.diverged, "infra", (json_int_t)rn.infra,
		    "missing", (json_int_t)(rn.total - rn.done),
		    "explored", (json_int_t)rn.explored));
		if (rn.done < rn.total || rn.diverged + rn.infra > 0)
			json_object_set_new(root, "complete", json_false());
	}
	if (root == NULL) {
		errf(err, "cannot build report.json (internal error)");
		return -1;
	}
	path = xasprintf("%s/report.json", m->out_dir);
	text = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	if (text == NULL || write_report(path, text, m, seeds, ns, err) == -1) {
		if (text == NULL)
			errf(err, "cannot write %s", path);
		free(text);
		free(path);
		return -1;
	}
	free(text);
	free(path);
	if (write_junit(m, c, err) == -1)
		return -1;
	return status;
}

/* The first line of a seed's message, fit for a terminal; "" if none. */
static void
first_line(const struct coord_seed *s, char *buf, size_t size)
{
	json_t		*msgj = json_object_get(s->detail, "message");
	const char	*msg = json_is_string(msgj) ? json_string_value(msgj) : "";
	char		*line = strndup(msg, strcspn(msg, "\r\n"));

	if (line == NULL)
		abort();
	log_escape(buf, size, line);
	free(line);
}

/*
 * Passes that a round in which no turn succeeded would have failed, had
 * the config not said guard: min_ok_turns: 0: said, so a green run that
 * tested nothing does not read as one that tested something.
 */
static void
idle_passes(FILE *f, const struct coord_seed *seeds, uint64_t ns)
{
	const struct coord_seed	*first = NULL;
	uint64_t		 i, count = 0;
	char			 msg[LOG_ESC_LEN];

	for (i = 0; i < ns; i++)
		if (seeds[i].state == CSEED_FINAL && seeds[i].verdict == VERDICT_PASS &&
		    json_object_get(seeds[i].detail, "idle_round") != NULL) {
			if (count++ == 0)
				first = &seeds[i];
		}
	if (count == 0)
		return;
	fprintf(f, "\n  PASS  with a round in which no turn succeeded — %" PRIu64
	    " seed(s), smallest %" PRIu64 " (guard: min_ok_turns: 0 allows it)\n",
	    count, first->seed);
	first_line(first, msg, sizeof(msg));
	if (*msg)
		fprintf(f, "        %s\n", msg);
}

/*
 * The regressions, apart from the seeds: "regressions: 3 pass, 1 FAIL, 0
 * diverged", then each one that did not pass by name, with its replay.
 */
static void
reg_summary(FILE *f, const struct report_meta *m, const struct coord *c)
{
	const struct coord_seed	*regs;
	struct coord_reg_counts	 rn;
	char			 msg[LOG_ESC_LEN];
	size_t			 nr, k;

	coord_reg_counts(c, &rn);
	if (rn.total == 0)
		return;
	regs = coord_regressions(c, &nr);
	fprintf(f, "\n  regressions: %zu pass, %zu %s, %zu diverged", rn.pass, rn.fail,
	    rn.fail ? "FAIL" : "fail", rn.diverged);
	if (rn.infra > 0)
		fprintf(f, ", %zu infra", rn.infra);
	if (rn.done < rn.total)
		fprintf(f, ", %zu without a verdict", rn.total - rn.done);
	if (rn.explored > 0)
		fprintf(f, "; %zu whose plan diverged, judged by exploring", rn.explored);
	fprintf(f, "\n");
	for (k = 0; k < nr; k++) {
		const struct coord_seed	*s = &regs[k];
		char			*replay, *words, rel[300];
		bool			 explored = json_is_object(json_object_get(
					    s->detail, "explored"));

		if (s->state == CSEED_FINAL && s->verdict == VERDICT_PASS && explored) {
			first_line(s, msg, sizeof(msg));
			fprintf(f, "    PASS     %s — %s\n", s->regress->name, msg);
			if (report_refresh_plan(s) != NULL)
				fprintf(f, "             its new schedule: %s/%s (soak pin %s "
				    "--refresh %s pins it)\n", m->out_dir,
				    report_refresh_path(s, rel, sizeof(rel)), m->out_dir,
				    s->regress->name);
			continue;
		}
		if (s->state == CSEED_FINAL && s->verdict == VERDICT_PASS)
			continue;
		if (s->state != CSEED_FINAL) {
			fprintf(f, "    MISSING  %s — no verdict\n", s->regress->name);
			continue;
		}
		words = fp_words(reason_name(s->why), json_object_get(s->detail,
		    "invariants"));
		fprintf(f, "    %s %s — %s\n", s->verdict == VERDICT_FAIL ? "FAIL    " :
		    s->why == REASON_DIVERGED ? "DIVERGED" : "INFRA   ", s->regress->name,
		    words);
		first_line(s, msg, sizeof(msg));
		if (*msg)
			fprintf(f, "             %s\n", msg);
		rows_put(f, json_object_get(s->detail, "invariants"), 2, 3,
		    "             ", plain_put);
		/* a failing schedule found by exploring replays; the plan does not */
		if (explored && s->verdict == VERDICT_FAIL && report_refresh_plan(s)) {
			char	*fplan = xasprintf("%s/%s/plan.json", m->out_dir,
				    report_failure_dir(s, rel, sizeof(rel)));

			replay = report_replay_plan_here(m->cfg_path, fplan);
			free(fplan);
		} else
			replay = report_replay_plan_here(m->cfg_path, s->regress->file);
		fprintf(f, "             replay: %s\n", replay);
		free(replay);
		free(words);
	}
}

void
report_summary(FILE *f, const struct report_meta *m, const struct coord *c)
{
	const struct coord_seed	*seeds;
	struct coord_counts	 n;
	struct coord_reg_counts	 rn;
	struct fp_groups	 g;
	json_t			*workers, *w;
	size_t			 k;
	uint64_t		 ns, i;

	coord_counts(c, &n);
	seeds = coord_seeds(c, &ns);
	/* Fail and infra reasons differ, so a fingerprint holds one verdict. */
	fp_groups_init(&g, false);
	for (i = 0; i < ns; i++) {
		const struct coord_seed	*s = &seeds[i];
		char			*fp;

		if (s->state != CSEED_FINAL || s->verdict == VERDICT_PASS)
			continue;
		fp = seed_fingerprint(m->cfg, s);
		fp_groups_add(&g, fp, s->seed, i);
		free(fp);
	}
	fprintf(f, "\n%s: %" PRIu64 " seeds in %.1fs — %" PRIu64 " pass, %" PRIu64
	    " fail, %" PRIu64 " infra", m->cfg->name, n.total,
	    (double)m->wall_ms / 1000.0, n.pass, n.fail, n.infra);
	if (n.done < n.total)
		fprintf(f, ", %" PRIu64 " without a verdict", n.total - n.done);
	fprintf(f, "\n");
	for (k = 0; k < g.n; k++) {
		const struct coord_seed	*s = &seeds[g.v[k].first];
		char			*replay = report_replay_here(m->cfg_path, s->seed);
		char			*words = fp_words(reason_name(s->why),
					    json_object_get(s->detail, "invariants"));
		char			 msg[LOG_ESC_LEN], rep[1024];
		const char		*sched;

		/* Like pytest's short summary: what, how often, why, how to see it. */
		fprintf(f, "\n  %s %s — %" PRIu64 " seed(s), smallest %" PRIu64 "\n",
		    s->verdict == VERDICT_FAIL ? "FAIL " : "INFRA", words, g.v[k].count,
		    s->seed);
		first_line(s, msg, sizeof(msg));
		if (*msg)
			fprintf(f, "        %s\n", msg);
		rows_put(f, json_object_get(s->detail, "invariants"), 2, 3, "        ",
		    plain_put);
		if (*report_reproduced(m->cfg, s, rep, sizeof(rep)))
			fprintf(f, "        a confirming re-run %s\n", rep);
		if ((sched = json_string_value(json_object_get(json_object_get(
		    s->detail, "confirm"), "schedule"))) != NULL)
			fprintf(f, "        its schedule: %s\n", sched);
		/* A replay cannot mend a config error: fixing the config can. */
		if (s->verdict == VERDICT_INFRA && coord_halt_status(c) != 0)
			fprintf(f, "        the config error below; soak check %s "
			    "checks a config before a run\n", m->cfg->path);
		else
			fprintf(f, "        replay: %s\n", replay);
		free(replay);
		free(words);
	}
	fp_groups_free(&g);
	reg_summary(f, m, c);
	idle_passes(f, seeds, ns);
	workers = coord_workers_json(c);
	json_array_foreach(workers, k, w)
		if (json_is_string(json_object_get(w, "quarantined")))
			fprintf(f, "\n  worker %s quarantined: %s\n",
			    json_string_value(json_object_get(w, "name")),
			    json_string_value(json_object_get(w, "quarantined")));
	json_decref(workers);
	cov_summary(f, coord_coverage(c));
	if (m->halted)
		fprintf(f, "\n  the run stopped early: %s\n", m->halted);
	fprintf(f, "\n  report: %s/report.json\n", m->out_dir);
	coord_reg_counts(c, &rn);
	if (n.done < n.total || n.infra > 0)
		fprintf(f, "  the run is INCOMPLETE: %s\n", n.infra > 0 ?
		    "infra verdicts are not a pass" : "some seeds have no verdict");
	else if (rn.done < rn.total || rn.diverged + rn.infra > 0)
		fprintf(f, "  the run is INCOMPLETE: %s\n", rn.diverged > 0 ?
		    "a regression whose plan diverged was not judged by a complete "
		    "exploration; it is not a pass" :
		    "a regression ended infra or without a verdict");
}
