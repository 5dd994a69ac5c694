/*
 * coordinator/report.c, read as a user reads it: a coordinator driven to
 * its verdicts without a socket, then report.json, junit.xml, failures/N/
 * and the summary written and read back.  A report says what the run
 * found (every field of a record, the regressions apart from the seeds),
 * is written whole or not at all, and is durable once report_write says
 * so (each file fsync'd, then its directory).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "common/config.h"
#include "common/msg.h"
#include "common/regress.h"
#include "common/soak.h"
#include "common/util.h"
#include "common/verdict.h"
#include "coordinator/coord.h"
#include "coordinator/report.h"

/*
 * Every fsync(2) of this binary, logged: what a power cut would keep is
 * not visible in the files, only in which of them were fsync'd.  The
 * executable's definition takes the place of libc's; the real call is the
 * system call.  Each entry: "file PATH" or "dir PATH".
 */
static char	*fsyncs[16];
static size_t	 nfsyncs;

int
fsync(int fd)
{
	char		 link[64], path[512];
	struct stat	 st;
	ssize_t		 n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) < 0)
		n = 0;
	path[n] = '\0';
	if (nfsyncs < nitems(fsyncs))
		fsyncs[nfsyncs++] = xasprintf("%s %s", fstat(fd, &st) == 0 &&
		    S_ISDIR(st.st_mode) ? "dir" : "file", path);
	return (int)syscall(SYS_fsync, fd);
}

static void
fsyncs_clear(void)
{
	while (nfsyncs > 0)
		free(fsyncs[--nfsyncs]);
}

static struct cfg	cfg;

static struct coord *
mk(uint64_t first, uint64_t last, const struct regress_set *regs)
{
	struct coord_opts	o = { 0 };
	char			err[ERR_LEN];
	struct coord		*c;

	memset(&cfg, 0, sizeof(cfg));
	cfg.name = "t";
	cfg.text = "name: t\n";
	cfg.path = "/nonexistent/t.yaml";
	o.cfg = &cfg;
	o.seeds.first = first;
	o.seeds.last = last;
	o.run_id = "r";
	o.cfg_path = "/nonexistent/t.yaml";
	o.heartbeat_ms = 100;
	o.lease_ttl_ms = 1000;
	o.regress = regs;
	c = coord_new(&o, err);
	assert_non_null(c);
	return c;
}

static uint32_t
hello(struct coord *c, uint32_t pipe)
{
	struct msg	req = { .type = MSG_HELLO }, rep;
	uint32_t	id;

	req.u.hello.name = "w";
	req.u.hello.host = "h";
	assert_int_equal(coord_handle(c, &req, pipe, 0, &rep), 1);
	assert_int_equal(rep.type, MSG_WELCOME);
	id = rep.u.welcome.worker_id;
	msg_clear(&rep);
	return id;
}

/* What a worker answers for a seed (or a regression: plan is its name). */
struct answer {
	int		 verdict;
	const char	*reason;
	const char	*detail;
};
typedef struct answer	(*answer_fn)(uint64_t seed, uint32_t attempt,
			    const char *plan);

/* work_same's answer to every seed, whatever it is. */
static const struct answer	*same;

static struct answer
answer_same(uint64_t seed, uint32_t attempt, const char *plan)
{
	(void)seed;
	(void)attempt;
	(void)plan;
	return *same;
}

/*
 * Worker w (its pipe the same number) takes leases until it is given
 * none, answering each seed by fn; returns how many results it sent.
 */
static int
work(struct coord *c, uint32_t w, answer_fn fn)
{
	struct msg	req = { .type = MSG_LEASE_REQ }, rep, res, ack;
	struct answer	a;
	uint32_t	i;
	int		sent = 0;

	req.u.lease_req.worker_id = w;
	while (coord_handle(c, &req, w, 0, &rep) == 1 && rep.type == MSG_LEASE) {
		for (i = 0; i < rep.u.lease.nseeds; i++) {
			memset(&res, 0, sizeof(res));
			res.type = MSG_RESULT;
			res.u.result.worker_id = w;
			res.u.result.lease_id = rep.u.lease.lease_id;
			res.u.result.seed = rep.u.lease.seeds[i].seed;
			res.u.result.attempt = rep.u.lease.seeds[i].attempt;
			if (*rep.u.lease.plan) {
				res.u.result.plan = rep.u.lease.plan;
				res.u.result.plan_hash = rep.u.lease.plan_hash;
			}
			a = fn(res.u.result.seed, res.u.result.attempt,
			    rep.u.lease.plan);
			res.u.result.verdict = (uint8_t)a.verdict;
			res.u.result.reason = UNCONST(a.reason);
			res.u.result.detail = UNCONST(a.detail);
			assert_int_equal(coord_handle(c, &res, w, 0, &ack), 1);
			assert_int_equal(ack.type, MSG_ACK);
			assert_int_equal(ack.u.ack.ok, 1);
			msg_clear(&ack);
			sent++;
		}
		msg_clear(&rep);
	}
	msg_clear(&rep);
	return sent;
}

/* work() with one answer for every seed: a. */
static int
work_same(struct coord *c, uint32_t w, const struct answer *a)
{
	same = a;
	return work(c, w, answer_same);
}

static struct report_meta
meta(const char *out_dir)
{
	struct report_meta	m = { 0 };

	m.cfg = &cfg;
	m.cfg_path = "/nonexistent/t.yaml";
	m.run_id = "r";
	m.out_dir = out_dir;
	m.wall_ms = 1500;
	return m;
}

static char *
run_dir(void)
{
	char	tmpl[] = "/tmp/soak-test-report.XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	return xstrdup(tmpl);
}

static void
run_dir_rm(char *dir)
{
	char	*cmd = xasprintf("rm -rf '%s'", dir);

	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(dir);
}

/* dir/name's text (NUL-terminated), or NULL when it is not there. */
static char *
slurp(const char *dir, const char *name)
{
	char	*path = xasprintf("%s/%s", dir, name), *text, err[ERR_LEN];
	size_t	 len;

	text = read_file(path, 1 << 24, &len, err);
	free(path);
	return text;
}

static json_t *
report_json(const char *dir)
{
	char		*path = xasprintf("%s/report.json", dir);
	json_error_t	 jerr;
	json_t		*r = json_load_file(path, 0, &jerr);

	free(path);
	assert_non_null(r);
	return r;
}

static char *
summary(const struct report_meta *m, const struct coord *c)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_summary(f, m, c);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static bool
has(const char *text, const char *needle)
{
	if (strstr(text, needle) == NULL) {
		print_error("not found: \"%s\" in:\n%s\n", needle, text);
		return false;
	}
	return true;
}

static const struct answer ans_pass = { VERDICT_PASS, "",
    "{\"message\":\"m\"}" };

/* --- a seed's record --- */

static struct answer
answer_records(uint64_t seed, uint32_t attempt, const char *plan)
{
	(void)attempt;
	(void)plan;
	if (seed == 0)	/* no turn counts, and cut to fit a message */
		return (struct answer){ VERDICT_FAIL, "invariant",
		    "{\"message\":\"m\",\"invariants\":[{\"name\":\"A\"}],"
		    "\"truncated\":true}" };
	return (struct answer){ VERDICT_PASS, "",
	    "{\"message\":\"2 of 3 turns ok\",\"round\":null,\"ok_turns\":2,"
	    "\"total_turns\":3}" };
}

/*
 * A record without turn counts says 0 of them; a cut detail says so
 * ("truncated"); a pass keeps its counts.  Without a halt the summary
 * says nothing of stopping early, without regressions nothing of them,
 * and without an idle pass nothing of one.
 */
static void
test_seed_records(void **state)
{
	struct coord		*c = mk(0, 1, NULL);
	char			*dir = run_dir(), err[ERR_LEN] = "", *text;
	struct report_meta	 m = meta(dir);
	json_t			*r, *res;

	(void)state;
	assert_int_equal(work(c, hello(c, 1), answer_records), 2);
	assert_true(coord_finished(c));
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_FAIL);
	r = report_json(dir);
	res = json_object_get(r, "results");
	assert_int_equal(json_array_size(res), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 0),
	    "ok_turns")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 0),
	    "total_turns")), 0);
	assert_true(json_is_true(json_object_get(json_array_get(res, 0), "truncated")));
	assert_null(json_object_get(json_array_get(res, 1), "truncated"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 1),
	    "ok_turns")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 1),
	    "total_turns")), 3);
	assert_int_equal(json_array_size(json_object_get(r, "regressions")), 0);
	json_decref(r);
	text = summary(&m, c);
	/* the counts, a blank line, then the groups */
	assert_true(has(text, "1 pass, 1 fail, 0 infra\n\n  FAIL "));
	assert_null(strstr(text, "regressions:"));
	/* a fail is no pass with an idle round */
	assert_null(strstr(text, "with a round in which no turn succeeded"));
	assert_null(strstr(text, "stopped early"));
	free(text);
	m.halted = "the database went away";
	text = summary(&m, c);
	assert_true(has(text, "\n  the run stopped early: the database went away\n"));
	free(text);
	coord_free(c);
	run_dir_rm(dir);
}

/* --- regressions: report.json, junit.xml and the summary --- */

static struct regress	reg_v[1] = {
	{ .name = "r1", .file = "/nonexistent/regressions/r1.json", .seed = 7, .hash =
	    "1111111111111111111111111111111111111111111111111111111111111111" },
};
static const struct regress_set	one_reg = { .v = reg_v, .n = 1 };

/* work_reg's answer to the regression; every seed passes. */
static const struct answer	*reg_answer;

static struct answer
answer_reg(uint64_t seed, uint32_t attempt, const char *plan)
{
	(void)seed;
	(void)attempt;
	return *plan ? *reg_answer : ans_pass;
}

static int
work_reg(struct coord *c, uint32_t w, const struct answer *a)
{
	reg_answer = a;
	return work(c, w, answer_reg);
}

static const struct answer ans_reg_fails = { VERDICT_FAIL, "invariant",
    "{\"message\":\"r1 broke A\",\"invariants\":[{\"name\":\"A\"}]}" };

/*
 * A failing regression (the only one): its record names its failure
 * folder, junit.xml has its test case, and the summary its line.
 */
static void
test_regression_fails(void **state)
{
	struct coord		*c = mk(0, 0, &one_reg);
	char			*dir = run_dir(), err[ERR_LEN] = "", *text;
	struct report_meta	 m = meta(dir);
	json_t			*r, *reg;

	(void)state;
	assert_int_equal(work_reg(c, hello(c, 1), &ans_reg_fails), 2);
	assert_true(coord_finished(c));
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_FAIL);
	r = report_json(dir);
	assert_int_equal(json_array_size(json_object_get(r, "regressions")), 1);
	reg = json_array_get(json_object_get(r, "regressions"), 0);
	assert_string_equal(json_string_value(json_object_get(reg, "name")), "r1");
	assert_string_equal(json_string_value(json_object_get(reg, "verdict")), "fail");
	assert_string_equal(json_string_value(json_object_get(reg, "failure_dir")),
	    "failures/regression-r1");
	/* the seed that passed has no failure folder */
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(r,
	    "results"), 0), "failure_dir")));
	json_decref(r);
	text = slurp(dir, "junit.xml");
	assert_non_null(text);
	assert_true(has(text, "tests=\"2\" failures=\"1\" errors=\"0\""));
	assert_true(has(text, "<testcase classname=\"soak.t\" name=\"regression r1\""));
	assert_true(has(text, "<testcase classname=\"soak.t\" name=\"seed 0\""));
	assert_true(has(text, "pinned plan: /nonexistent/regressions/r1.json"));
	free(text);
	text = summary(&m, c);
	assert_true(has(text, "\n  regressions: 0 pass, 1 FAIL, 0 diverged\n"));
	assert_true(has(text, "    FAIL     r1 — "));
	assert_true(has(text, "             r1 broke A\n"));
	free(text);
	coord_free(c);
	run_dir_rm(dir);
}

/*
 * A regression that passed has no reason and no failure folder, and the
 * summary counts it without a line of its own.
 */
static void
test_regression_passes(void **state)
{
	struct coord		*c = mk(0, 0, &one_reg);
	char			*dir = run_dir(), err[ERR_LEN] = "", *text;
	struct report_meta	 m = meta(dir);
	json_t			*r, *reg;

	(void)state;
	assert_int_equal(work_same(c, hello(c, 1), &ans_pass), 2);
	assert_true(coord_finished(c));
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_PASS);
	r = report_json(dir);
	reg = json_array_get(json_object_get(r, "regressions"), 0);
	assert_non_null(reg);
	assert_string_equal(json_string_value(json_object_get(reg, "verdict")), "pass");
	assert_true(json_is_null(json_object_get(reg, "reason")));
	assert_true(json_is_null(json_object_get(reg, "failure_dir")));
	json_decref(r);
	text = summary(&m, c);
	assert_true(has(text, "\n  regressions: 1 pass, 0 fail, 0 diverged\n"));
	assert_null(strstr(text, "r1 —"));
	free(text);
	coord_free(c);
	run_dir_rm(dir);
}

static const struct answer ans_reg_diverges = { VERDICT_INFRA, "diverged",
    "{\"message\":\"the run left its plan\"}" };

/*
 * Every seed passed, but the regression diverged and no exploration judged
 * it (coord.h: a diverged pass is counted only when earned), so the run
 * is incomplete (exit status, report.json, the summary), never a
 * pass.
 */
static void
test_regression_diverged_is_incomplete(void **state)
{
	struct coord		*c = mk(0, 1, &one_reg);
	char			*dir = run_dir(), err[ERR_LEN] = "", *text;
	struct report_meta	 m = meta(dir);
	json_t			*r;

	(void)state;
	work_reg(c, hello(c, 1), &ans_reg_diverges);
	assert_true(coord_finished(c));
	assert_int_equal(report_exit_status(c), SOAK_EXIT_INCOMPLETE);
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_INCOMPLETE);
	r = report_json(dir);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r,
	    "totals"), "pass")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r,
	    "regression_totals"), "diverged")), 1);
	assert_true(json_is_false(json_object_get(r, "complete")));
	assert_int_equal(json_integer_value(json_object_get(r, "exit_status")),
	    SOAK_EXIT_INCOMPLETE);
	json_decref(r);
	text = summary(&m, c);
	assert_true(has(text, "the run is INCOMPLETE: a regression whose plan "
	    "diverged was not judged by a complete exploration; it is not a pass"));
	free(text);
	coord_free(c);
	run_dir_rm(dir);
}

/* --- a config error stops the run --- */

static const struct answer ans_config_error = { VERDICT_INFRA, "exec",
    "{\"message\":\"m\",\"config_error\":{\"kind\":\"exec\","
    "\"what\":\"turn.command\",\"code\":\"ENOENT\",\"detail\":"
    "\"/x/t.sh: No such file or directory\"}}" };

/*
 * Every seed hits the same config error: the run stops.  Each record
 * carries the error as the worker named it, and the summary sends the
 * user to the config (soak check), not to a replay that cannot mend it.
 */
static void
test_config_error(void **state)
{
	struct coord		*c = mk(0, 2, NULL);
	char			*dir = run_dir(), err[ERR_LEN] = "", *text;
	struct report_meta	 m = meta(dir);
	json_t			*r, *ce;

	(void)state;
	assert_int_equal(work_same(c, hello(c, 1), &ans_config_error), 3);
	assert_int_equal(coord_halt_status(c), 78);
	assert_int_equal(report_write(&m, c, err), 78);
	r = report_json(dir);
	ce = json_object_get(json_array_get(json_object_get(r, "results"), 0),
	    "config_error");
	assert_string_equal(json_string_value(json_object_get(ce, "kind")), "exec");
	assert_string_equal(json_string_value(json_object_get(ce, "what")),
	    "turn.command");
	json_decref(r);
	text = summary(&m, c);
	assert_true(has(text, "\n  INFRA exec: a turn could not be executed — 3 "
	    "seed(s), smallest 0\n"));
	assert_true(has(text, "        the config error below; soak check "
	    "/nonexistent/t.yaml checks a config before a run\n"));
	assert_null(strstr(text, "replay:"));
	free(text);
	coord_free(c);
	run_dir_rm(dir);
}

/* --- the summary's groups --- */

#define LONG_CELL	"0123456789012345678901234567890123456789XYZ"

/* five rows, a cell with a DEL in it, one of 43 bytes: the summary
 * shows three */
static const struct answer ans_rows = { VERDICT_FAIL, "invariant",
    "{\"message\":\"m\",\"invariants\":[{\"name\":\"A\",\"columns\":[\"a\","
    "\"b\"],\"rows\":[[\"x\\u007fy\",\"r0\"],[\"1\",\"" LONG_CELL "\"],"
    "[\"2\",\"r2\"],"
    "[\"3\",\"r3\"],[\"4\",\"r4\"]],\"row_count\":5}]}" };

/*
 * A broken invariant's rows in the summary: at most three, the rest
 * counted; a control character (DEL too) is a space on a terminal; a
 * cell longer than 40 bytes is cut there, and says so with "…".
 */
static void
test_summary_rows(void **state)
{
	struct coord		*c = mk(0, 0, NULL);
	struct report_meta	 m = meta("/nonexistent/out");
	char			*text;

	(void)state;
	assert_int_equal(work_same(c, hello(c, 1), &ans_rows), 1);
	text = summary(&m, c);
	assert_true(has(text, "        \"A\": 5 rows\n"));
	assert_true(has(text, "          a | b\n"));
	assert_true(has(text, "          x y | r0\n"));
	assert_true(has(text, "          1 | 0123456789012345678901234567890123456789…\n"));
	assert_null(strstr(text, "XYZ"));
	assert_true(has(text, "          2 | r2\n"));
	assert_null(strstr(text, "r3"));
	assert_true(has(text, "          … 2 more rows\n"));
	assert_null(strchr(text, 0x7f));
	free(text);
	coord_free(c);
}

static const struct answer ans_idle = { VERDICT_PASS, "",
    "{\"message\":\"round 2: no turn succeeded\",\"round\":null,"
    "\"ok_turns\":0,\"total_turns\":2,\"idle_round\":2}" };

/* A pass with an idle round is said, with the first line of its message. */
static void
test_summary_idle_pass(void **state)
{
	struct coord		*c = mk(3, 4, NULL);
	struct report_meta	 m = meta("/nonexistent/out");
	char			*text;

	(void)state;
	assert_int_equal(work_same(c, hello(c, 1), &ans_idle), 2);
	text = summary(&m, c);
	assert_true(has(text, "\n  PASS  with a round in which no turn succeeded — 2 "
	    "seed(s), smallest 3 (guard: min_ok_turns: 0 allows it)\n"
	    "        round 2: no turn succeeded\n"));
	free(text);
	coord_free(c);
}

/* The confirming re-run of seed 0 passes, under a schedule of its own. */
static struct answer
answer_confirm(uint64_t seed, uint32_t attempt, const char *plan)
{
	(void)seed;
	(void)plan;
	if (attempt == 1)
		return (struct answer){ VERDICT_FAIL, "invariant",
		    "{\"message\":\"m\",\"invariants\":[{\"name\":\"A\"}],\"trace\":"
		    "\"{\\\"proxy\\\":\\\"db\\\",\\\"turn\\\":0,\\\"conn\\\":0,"
		    "\\\"exchange\\\":1,\\\"fault\\\":\\\"none\\\",\\\"step\\\":1,"
		    "\\\"cand\\\":\\\"1\\\",\\\"pg\\\":\\\"simple\\\",\\\"sql\\\":"
		    "\\\"UPDATE\\\",\\\"tx\\\":\\\"I\\\"}\\n\"}" };
	return (struct answer){ VERDICT_PASS, "", "{\"message\":\"m\"}" };
}

/*
 * The summary says what the confirming re-run showed, and where its
 * schedule left the run's.
 */
static void
test_summary_confirm(void **state)
{
	struct coord		*c = mk(0, 0, NULL);
	struct report_meta	 m = meta("/nonexistent/out");
	const struct coord_seed	*s;
	uint64_t		 n;
	uint32_t		 w1, w2;
	char			*text, *want;
	const char		*sched;

	(void)state;
	cfg.confirm = true;
	w1 = hello(c, 1);
	w2 = hello(c, 2);
	assert_int_equal(work(c, w1, answer_confirm), 1);
	assert_int_equal(work(c, w2, answer_confirm), 1);
	assert_true(coord_finished(c));
	s = coord_seeds(c, &n);
	sched = json_string_value(json_object_get(json_object_get(s[0].detail,
	    "confirm"), "schedule"));
	assert_non_null(sched);
	text = summary(&m, c);
	assert_true(has(text, "        a confirming re-run did NOT reproduce it"));
	want = xasprintf("        its schedule: %s\n", sched);
	assert_true(has(text, want));
	free(want);
	free(text);
	coord_free(c);
}

/* --- failures/N/ --- */

static const struct answer ans_plans = { VERDICT_FAIL, "invariant",
    "{\"message\":\"m\",\"invariants\":[{\"name\":\"A\"}],"
    "\"plan\":{\"format\":1,\"seed\":5},"
    "\"minimized\":{\"plan\":{\"format\":1,\"seed\":5,\"small\":true}}}" };

/*
 * failures/N/ holds the seed's plan and its minimized plan, each naming
 * the coordinator's fingerprint of the failure.
 */
static void
test_failure_plans(void **state)
{
	struct coord		*c = mk(5, 5, NULL);
	char			*dir = run_dir(), err[ERR_LEN] = "", *path;
	struct report_meta	 m = meta(dir);
	const struct coord_seed	*s;
	uint64_t		 n;
	json_error_t		 jerr;
	json_t			*p;
	const char		*names[] = { "plan.json", "plan.min.json" };
	size_t			 i;

	(void)state;
	assert_int_equal(work_same(c, hello(c, 1), &ans_plans), 1);
	s = coord_seeds(c, &n);
	assert_int_equal(report_failure(&m, &s[0], err), 0);
	for (i = 0; i < nitems(names); i++) {
		path = xasprintf("%s/failures/5/%s", dir, names[i]);
		p = json_load_file(path, 0, &jerr);
		if (p == NULL)
			fail_msg("%s: %s", path, jerr.text);
		assert_int_equal(json_integer_value(json_object_get(p, "seed")), 5);
		assert_string_equal(json_string_value(json_object_get(json_object_get(p,
		    "failure"), "fingerprint")), "t|invariant|A");
		assert_true(i == 0 || json_is_true(json_object_get(p, "small")));
		json_decref(p);
		free(path);
	}
	coord_free(c);
	run_dir_rm(dir);
}

/* --- written whole, durable, or an error --- */

/*
 * report.json and junit.xml are each fsync'd before the rename that puts
 * them in place, and the folder after it: once report_write returns, a
 * power cut keeps both.
 */
static void
test_write_is_durable(void **state)
{
	struct coord		*c = mk(0, 0, NULL);
	char			*dir = run_dir(), err[ERR_LEN] = "", *want[4];
	struct report_meta	 m = meta(dir);
	size_t			 i;

	(void)state;
	work_same(c, hello(c, 1), &ans_pass);
	want[0] = xasprintf("file %s/report.json.tmp", dir);
	want[1] = xasprintf("dir %s", dir);
	want[2] = xasprintf("file %s/junit.xml.tmp", dir);
	want[3] = xasprintf("dir %s", dir);
	fsyncs_clear();
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_PASS);
	assert_int_equal(nfsyncs, 4);
	for (i = 0; i < 4; i++) {
		assert_string_equal(fsyncs[i], want[i]);
		free(want[i]);
	}
	fsyncs_clear();
	coord_free(c);
	run_dir_rm(dir);
}

/* The file size limit, for a write that fails (EFBIG, as ENOSPC would). */
static void
fsize_limit(rlim_t n)
{
	struct rlimit	rl;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = n;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/*
 * A report that cannot be written is an error that names it, and leaves
 * no report.json: not one that cannot be opened, nor one whose last bytes
 * a full disk refused (the stream drops them; its fsync succeeds).  A
 * junit.xml that cannot be opened is an error too.
 */
static void
test_write_fails(void **state)
{
	struct coord		*c = mk(0, 0, NULL);
	char			*dir = run_dir(), err[ERR_LEN] = "", *path, *want;
	struct report_meta	 m = meta(dir);
	struct stat		 st;

	(void)state;
	work_same(c, hello(c, 1), &ans_pass);
	/* report.json.tmp cannot be opened: nothing written, junit.xml neither */
	path = xasprintf("%s/report.json.tmp", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(report_write(&m, c, err), -1);
	want = xasprintf("cannot write %s", path);
	assert_string_equal(err, want);
	free(want);
	assert_int_equal(rmdir(path), 0);
	free(path);
	path = xasprintf("%s/junit.xml", dir);
	assert_int_equal(stat(path, &st), -1);
	free(path);
	/* junit.xml.tmp cannot be opened: the same, after report.json */
	path = xasprintf("%s/junit.xml.tmp", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	err[0] = '\0';
	assert_int_equal(report_write(&m, c, err), -1);
	want = xasprintf("cannot write %s", path);
	assert_string_equal(err, want);
	free(want);
	assert_int_equal(rmdir(path), 0);
	free(path);
	/* the disk fills as the last bytes go out: the same report, its size
	 * less two */
	assert_int_equal(report_write(&m, c, err), SOAK_EXIT_PASS);
	path = xasprintf("%s/report.json", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(unlink(path), 0);
	signal(SIGXFSZ, SIG_IGN);
	fsize_limit((rlim_t)st.st_size - 2);
	err[0] = '\0';
	assert_int_equal(report_write(&m, c, err), -1);
	fsize_limit(RLIM_INFINITY);
	want = xasprintf("cannot write %s: File too large", path);
	assert_string_equal(err, want);
	free(want);
	assert_int_equal(stat(path, &st), -1);
	free(path);
	coord_free(c);
	run_dir_rm(dir);
}

static int
teardown(void **state)
{
	(void)state;
	fsyncs_clear();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_records),
		cmocka_unit_test(test_regression_fails),
		cmocka_unit_test(test_regression_passes),
		cmocka_unit_test(test_regression_diverged_is_incomplete),
		cmocka_unit_test(test_config_error),
		cmocka_unit_test(test_summary_rows),
		cmocka_unit_test(test_summary_idle_pass),
		cmocka_unit_test(test_summary_confirm),
		cmocka_unit_test(test_failure_plans),
		cmocka_unit_test(test_write_is_durable),
		cmocka_unit_test(test_write_fails),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
