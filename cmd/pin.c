/*
 * soak pin RUN_DIR --seed N [--minimized] [--name NAME] [--force]: a
 * failing seed's plan (failures/N/plan.json, or the minimized
 * plan.min.json beside it) into its config's regressions folder
 * (common/regress.h), with the failure it pins: its fingerprint, reason,
 * the invariants it broke, and the command that replays the pinned file
 * (docs/plan.md "Regressions").  The run's config is the one report.json
 * names (config.path).  soak pin CONFIG --plan FILE pins any failing plan
 * (soak minimize's, soak explore's) with the failure the plan itself
 * records.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/config.h"
#include "common/log.h"
#include "common/plan.h"
#include "common/regress.h"
#include "common/seed.h"
#include "cmd/cmd.h"
#include "common/soak.h"
#include "common/util.h"
#include "coordinator/report.h"

#define EX_DATAERR	65
#define EX_NOINPUT	66
#define EX_CANTCREAT	73

static int
pin_usage(FILE *f)
{
	fprintf(f,
	    "usage: soak pin RUN_DIR --seed N [--minimized] [--name NAME] [--force]\n"
	    "       soak pin CONFIG --plan FILE [--name NAME] [--force]\n"
	    "       soak pin RUN_DIR --refresh NAME [--force]\n"
	    "\n"
	    "Pins a failing seed of the run in RUN_DIR as a regression: its plan\n"
	    "(RUN_DIR/failures/N/plan.json) is copied into the config's regressions\n"
	    "folder (regressions: in the config, default regressions/ beside it) as\n"
	    "NAME.json, with the invariant it broke, its fingerprint and the command\n"
	    "that replays it.  Every later soak run and soak coordinator of the\n"
	    "config runs it before the seeds, and reports it apart.  The second form\n"
	    "pins any failing plan of CONFIG (soak minimize's, soak explore's) with\n"
	    "the failure the plan records.  The third pins the new schedule of\n"
	    "regression NAME, whose plan diverged in the run in RUN_DIR and was\n"
	    "judged by exploring (RUN_DIR/refresh/NAME.json), over its file.\n"
	    "\n"
	    "  --seed N     the failing seed (report.json's results)\n"
	    "  --minimized  its minimized plan, failures/N/plan.min.json (written by\n"
	    "               tickets.minimize, or by soak minimize --plan\n"
	    "               failures/N/plan.json)\n"
	    "  --plan FILE  a plan file to pin into CONFIG's regressions\n"
	    "  --name NAME  the regression's name (default seed-N-<what failed>,\n"
	    "               with -min for a minimized plan)\n"
	    "  --refresh NAME  regression NAME's new schedule from that run: the\n"
	    "               explored schedule closest to its plan's order (a pass),\n"
	    "               or its failing schedule (a fail)\n"
	    "  --force      replace a regression of that name (--refresh: even one\n"
	    "               changed since that run)\n"
	    "  --help       this text\n"
	    "\n"
	    "Exit: 0 pinned; 64 usage; 65 the seed did not fail (--refresh: the\n"
	    "regression has no new schedule in that run); 66 no report.json, plan or\n"
	    "config; 73 NAME.json is there already, or (--refresh) changed since the\n"
	    "run (--force); 78 the config does not load, or cannot run the plan.\n"
	    SOAK_MANUAL);
	return f == stdout ? 0 : SOAK_EXIT_USAGE;
}

static const char *
jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The result record of seed in report.json's results, or NULL. */
static const json_t *
find_result(const json_t *report, uint64_t seed)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(report, "results"), i, r)
		if (json_is_integer(json_object_get(r, "seed")) &&
		    (uint64_t)json_integer_value(json_object_get(r, "seed")) == seed)
			return r;
	return NULL;
}

/* What the record says of its failure, into the plan (plan.h). */
static void
pin_failure(struct plan *p, const json_t *rec, const char *replay, const char *run_id,
    const char *from)
{
	const json_t	*inv;
	size_t		 i, k;

	free(p->fingerprint);
	p->fingerprint = jstr(rec, "fingerprint") ? xstrdup(jstr(rec, "fingerprint")) :
	    NULL;
	free(p->message);
	p->message = jstr(rec, "message") ? xstrdup(jstr(rec, "message")) : NULL;
	free(p->reason);
	p->reason = jstr(rec, "reason") ? xstrdup(jstr(rec, "reason")) : NULL;
	for (k = 0; k < p->ninvariants; k++)
		free(p->invariants[k]);
	free(p->invariants);
	p->invariants = xcalloc(json_array_size(json_object_get(rec, "invariants")) + 1,
	    sizeof(char *));
	p->ninvariants = 0;
	json_array_foreach(json_object_get(rec, "invariants"), i, inv)
		if (jstr(inv, "name") != NULL)
			p->invariants[p->ninvariants++] = xstrdup(jstr(inv, "name"));
	free(p->replay);
	p->replay = xstrdup(replay);
	free(p->pinned_run);
	p->pinned_run = run_id ? xstrdup(run_id) : NULL;
	free(p->pinned_from);
	p->pinned_from = xstrdup(from);
}

/* The default name: seed-N-<the fingerprint, as a slug><suffix>; heap. */
static char *
pin_name(uint64_t seed, const char *fp, const char *suffix)
{
	char	*slug = regress_slug(fp != NULL ? fp : "", 60), *name;

	name = *slug ? xasprintf("seed-%" PRIu64 "-%s%s", seed, slug, suffix) :
	    xasprintf("seed-%" PRIu64 "%s", seed, suffix);
	free(slug);
	return name;
}

/*
 * Where NAME goes in cfg's regressions folder (made if need be), free to
 * write unless force: 0 with *dst (heap), else the exit status, said.
 */
static int
pin_dest(const struct cfg *cfg, const char *name, bool force, char **dst)
{
	char		*file = xasprintf("%s.json", name), err[ERR_LEN];
	struct stat	 st;

	*dst = path_join(cfg->regressions, file);
	free(file);
	if (!force && lstat(*dst, &st) == 0) {
		fprintf(stderr, "soak pin: %s is there already: --force replaces it, or "
		    "--name NAME pins under another name\n", *dst);
		return EX_CANTCREAT;
	}
	if (mkdir_p(cfg->regressions, 0755, err) == -1) {
		fprintf(stderr, "soak pin: %s\n", err);
		return EX_CANTCREAT;
	}
	return 0;
}

/* p written at dst, whole or not at all: 0, or the exit status, said. */
static int
pin_save(const char *dst, const struct plan *p)
{
	char	*text = plan_dump(p), err[ERR_LEN];
	int	 rc = 0;

	if (write_file_atomic(dst, text, strlen(text), 0644, err) == -1) {
		fprintf(stderr, "soak pin: %s\n", err);
		rc = EX_CANTCREAT;
	}
	free(text);
	return rc;
}

/* The regression record NAME of report.json, or NULL. */
static const json_t *
find_regression(const json_t *report, const char *name)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(report, "regressions"), i, r)
		if (jstr(r, "name") != NULL && strcmp(jstr(r, "name"), name) == 0)
			return r;
	return NULL;
}

/*
 * The plan at path and the config, loaded, and the plan fits the config:
 * 0, or the exit status with what is wrong said (what the plan or the
 * config's checks quote is anyone's text: escaped).  cwhat prefixes a
 * config error.
 */
static int
pin_load(const char *path, const char *cfg_path, const char *cwhat,
    struct plan *p, struct cfg *cfg)
{
	char	err[ERR_LEN], esc[LOG_ESC_LEN];

	if (plan_load(path, p, err) == -1) {
		fprintf(stderr, "soak pin: %s\n", log_escape(esc, sizeof(esc), err));
		return access(path, R_OK) == 0 ? EX_DATAERR : EX_NOINPUT;
	}
	if (cfg_load_file(cfg_path, cfg, err) == -1) {
		fprintf(stderr, "soak pin: %s%s\n", cwhat, err);
		return access(cfg_path, R_OK) == 0 ? SOAK_EXIT_CONFIG : EX_NOINPUT;
	}
	if (plan_fits(p, cfg, err) == -1) {
		fprintf(stderr, "soak pin: %s cannot run %s: %s\n", cfg_path, path,
		    log_escape(esc, sizeof(esc), err));
		return SOAK_EXIT_CONFIG;
	}
	return 0;
}

/*
 * soak pin RUN_DIR --refresh NAME: the new schedule of regression NAME,
 * whose plan diverged in that run and was judged by exploring
 * (RUN_DIR/refresh/NAME.json: a pass's explored schedule closest to the
 * plan's order, a fail's failing schedule), pinned over NAME.json in the
 * config's regressions folder.  The file must be the one that run ran
 * (its hash) unless force.
 */
static int
pin_refresh(const char *run_dir, const json_t *report, const char *cfg_path,
    const char *name, bool force)
{
	struct cfg	 cfg = { 0 };
	struct plan	 p = { 0 };
	const json_t	*rec = find_regression(report, name);
	const char	*verdict = rec ? jstr(rec, "verdict") : NULL;
	const char	*rel = rec ? jstr(rec, "refresh_plan") : NULL;
	char		*from = NULL, *dst = NULL, *replay = NULL, *text = NULL;
	char		 err[ERR_LEN], hash[REGRESS_HASH_LEN + 1];
	size_t		 len;
	int		 rc;

	if (rec == NULL) {
		fprintf(stderr, "soak pin: regression %s did not run in %s: refresh a "
		    "regression of that run (report.json's regressions)\n", name, run_dir);
		return EX_DATAERR;
	}
	if (!json_is_object(json_object_get(rec, "explored")) || rel == NULL) {
		fprintf(stderr, "soak pin: regression %s has no new schedule in that run: "
		    "%s%s); --refresh pins the schedule of a regression whose plan "
		    "diverged and whose exploration passed or failed\n", name,
		    !json_is_object(json_object_get(rec, "explored")) ? "its plan did "
		    "not diverge (it ended " : "its exploration was incomplete (it ended ",
		    verdict ? verdict : "without a verdict");
		return EX_DATAERR;
	}
	text = path_join(run_dir, rel);
	from = realpath(text, NULL);
	if (from == NULL)
		from = text;
	else
		free(text);
	text = NULL;
	if ((rc = pin_load(from, cfg_path, "the run's config: ", &p, &cfg)) != 0)
		goto out;
	if ((rc = pin_dest(&cfg, name, true, &dst)) != 0)
		goto out;
	/* the file that run judged, not one changed since */
	if ((text = read_file(dst, PLAN_MAX_BYTES, &len, err)) == NULL ||
	    regress_hash(text, len, hash, err) == -1) {
		fprintf(stderr, "soak pin: %s\n", err);
		rc = EX_NOINPUT;
		goto out;
	}
	if (!force && (jstr(rec, "hash") == NULL || strcmp(hash, jstr(rec, "hash")) != 0)) {
		fprintf(stderr, "soak pin: %s changed since that run (sha256 %.12s, the "
		    "run's %.12s): --force replaces it anyway\n", dst, hash,
		    jstr(rec, "hash") ? jstr(rec, "hash") : "?");
		rc = EX_CANTCREAT;
		goto out;
	}
	replay = report_replay_plan(cfg.path[0] == '/' ? cfg.path : cfg_path, dst);
	if (verdict != NULL && strcmp(verdict, "fail") == 0)
		pin_failure(&p, rec, replay, jstr(report, "run_id"), from);
	else {
		free(p.replay);
		p.replay = xstrdup(replay);
		free(p.pinned_run);
		p.pinned_run = jstr(report, "run_id") ? xstrdup(jstr(report, "run_id")) :
		    NULL;
		free(p.pinned_from);
		p.pinned_from = xstrdup(from);
	}
	free(p.pinned_replaced);
	p.pinned_replaced = xstrdup(hash);
	if ((rc = pin_save(dst, &p)) != 0)
		goto out;
	printf("refreshed regression %s: %s\n  its new schedule (%s in that run: %s)\n"
	    "  replay: %s\n", name, dst, verdict ? verdict : "?", from, replay);
	rc = 0;
out:
	plan_free(&p);
	cfg_free(&cfg);
	free(from);
	free(dst);
	free(replay);
	free(text);
	return rc;
}

/*
 * soak pin CONFIG --plan FILE: a plan of CONFIG (soak minimize's output,
 * a failing schedule of soak explore's) pinned with the failure it
 * records itself.
 */
static int
pin_plan(const char *cfg_path, const char *planarg, const char *name, bool force)
{
	struct cfg	 cfg = { 0 };
	struct plan	 p = { 0 };
	char		 esc[LOG_ESC_LEN], *defname = NULL, *dst = NULL;
	char		*from = NULL, *replay = NULL;
	int		 rc;

	if ((rc = pin_load(planarg, cfg_path, "", &p, &cfg)) != 0)
		goto out;
	if (p.fingerprint == NULL) {
		fprintf(stderr, "soak pin: %s records no failure (failure.fingerprint): "
		    "a regression pins a failure; soak replay %s --plan %s tells whether "
		    "it fails\n", planarg, cfg_path, planarg);
		rc = EX_DATAERR;
		goto out;
	}
	if (name == NULL)
		name = defname = pin_name(p.seed, p.fingerprint, "-plan");
	if ((rc = pin_dest(&cfg, name, force, &dst)) != 0)
		goto out;
	replay = report_replay_plan(cfg.path[0] == '/' ? cfg.path : cfg_path, dst);
	free(p.replay);
	p.replay = xstrdup(replay);
	from = realpath(planarg, NULL);
	free(p.pinned_from);
	p.pinned_from = xstrdup(from != NULL ? from : planarg);
	if ((rc = pin_save(dst, &p)) != 0)
		goto out;
	/* the fingerprint is the plan file's, and a plan file is anyone's */
	printf("pinned %s as regression %s: %s\n  it failed with %s\n  soak run and "
	    "soak coordinator of %s run it before the seeds\n  replay: %s\n",
	    planarg, name, dst, log_escape(esc, sizeof(esc), p.fingerprint),
	    cfg_path, replay);
	rc = 0;
out:
	plan_free(&p);
	cfg_free(&cfg);
	free(defname);
	free(dst);
	free(replay);
	free(from);
	return rc;
}

int
cmd_pin(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed",	required_argument, NULL, 's' },
		{ "name",	required_argument, NULL, 'n' },
		{ "minimized",	no_argument,	   NULL, 'm' },
		{ "plan",	required_argument, NULL, 'p' },
		{ "force",	no_argument,	   NULL, 'f' },
		{ "refresh",	required_argument, NULL, 'r' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg	 cfg = { 0 };
	struct plan	 p = { 0 };
	json_t		*report = NULL;
	json_error_t	 jerr;
	const json_t	*rec;
	const char	*run_dir, *cfg_path, *name = NULL, *verdict, *planarg = NULL;
	const char	*refresh = NULL;
	char		*path = NULL, *plan_path = NULL, *dst = NULL;
	char		*defname = NULL, *replay = NULL;
	char		 err[ERR_LEN], esc[LOG_ESC_LEN];
	uint64_t	 seed = 0;
	bool		 have_seed = false, force = false, minimized = false;
	int		 ch, rc = SOAK_EXIT_USAGE;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "s:n:mp:fr:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (seed_parse(optarg, &seed, err) == -1) {
				fprintf(stderr, "soak pin: --seed: %s\n", err);
				return SOAK_EXIT_USAGE;
			}
			have_seed = true;
			break;
		case 'n': name = optarg; break;
		case 'm': minimized = true; break;
		case 'p': planarg = optarg; break;
		case 'f': force = true; break;
		case 'r': refresh = optarg; break;
		case 'h': return pin_usage(stdout);
		default:
			fprintf(stderr, "soak pin: unknown option \"%s\"\n", argv[optind - 1]);
			return pin_usage(stderr);
		}
	}
	if (argc - optind != 1 || (refresh != NULL ? have_seed || planarg != NULL ||
	    minimized || name != NULL : have_seed == (planarg != NULL)) ||
	    (minimized && planarg != NULL)) {
		fprintf(stderr, "soak pin: want RUN_DIR and --seed N, CONFIG and "
		    "--plan FILE, or RUN_DIR and --refresh NAME\n");
		return pin_usage(stderr);
	}
	if (refresh != NULL && !regress_name_valid(refresh)) {
		fprintf(stderr, "soak pin: --refresh \"%s\": not a regression's name\n",
		    refresh);
		return SOAK_EXIT_USAGE;
	}
	if (name != NULL && !regress_name_valid(name)) {
		fprintf(stderr, "soak pin: --name \"%s\": a regression's name is a file "
		    "name (no '/', not starting with '.', at most 200 bytes)\n", name);
		return SOAK_EXIT_USAGE;
	}
	if (planarg != NULL)
		return pin_plan(argv[optind], planarg, name, force);
	run_dir = argv[optind];
	path = path_join(run_dir, "report.json");
	if ((report = json_load_file(path, 0, &jerr)) == NULL) {
		fprintf(stderr, "soak pin: %s: %s; is %s the --out folder of a finished "
		    "run?\n", path, access(path, R_OK) == 0 ? jerr.text :
		    "missing or unreadable", run_dir);
		rc = EX_NOINPUT;
		goto out;
	}
	cfg_path = jstr(json_object_get(report, "config"), "path");
	if (cfg_path == NULL || cfg_path[0] != '/') {
		fprintf(stderr, "soak pin: %s names no config path (config.path): pin "
		    "from a run of this soak\n", path);
		rc = EX_NOINPUT;
		goto out;
	}
	if (refresh != NULL) {
		rc = pin_refresh(run_dir, report, cfg_path, refresh, force);
		goto out;
	}
	if ((rec = find_result(report, seed)) == NULL) {
		fprintf(stderr, "soak pin: seed %" PRIu64 " has no verdict in %s: pin a "
		    "seed of that run that failed\n", seed, path);
		rc = EX_DATAERR;
		goto out;
	}
	verdict = jstr(rec, "verdict");
	if (verdict == NULL || strcmp(verdict, "fail") != 0) {
		fprintf(stderr, "soak pin: seed %" PRIu64 " did not fail in that run (it "
		    "ended %s): a regression pins a failure; pin a failing seed (the "
		    "summary lists them), or replay this one with soak replay --seed\n",
		    seed, verdict ? log_escape(esc, sizeof(esc), verdict) :
		    "without a verdict");
		rc = EX_DATAERR;
		goto out;
	}
	plan_path = xasprintf("%s/failures/%" PRIu64 "/plan%s.json", run_dir, seed,
	    minimized ? ".min" : "");
	if (plan_load(plan_path, &p, err) == -1) {
		if (minimized)
			fprintf(stderr, "soak pin: %s\n  (a minimized plan is written by "
			    "tickets.minimize, or by soak minimize %s --plan %s/failures/%"
			    PRIu64 "/plan.json)\n", log_escape(esc, sizeof(esc), err),
			    cfg_path, run_dir, seed);
		else
			fprintf(stderr, "soak pin: %s\n  (a failing seed's plan is written "
			    "by the coordinator; without it, soak replay %s --seed %" PRIu64
			    " --save-plan FILE makes one)\n", log_escape(esc, sizeof(esc),
			    err), cfg_path, seed);
		rc = EX_NOINPUT;
		goto out;
	}
	if (cfg_load_file(cfg_path, &cfg, err) == -1) {
		fprintf(stderr, "soak pin: the run's config: %s\n", err);
		rc = access(cfg_path, R_OK) == 0 ? SOAK_EXIT_CONFIG : EX_NOINPUT;
		goto out;
	}
	if (plan_fits(&p, &cfg, err) == -1) {
		fprintf(stderr, "soak pin: %s cannot run the plan of seed %" PRIu64 ": %s\n",
		    cfg_path, seed, log_escape(esc, sizeof(esc), err));
		rc = SOAK_EXIT_CONFIG;
		goto out;
	}
	if (name == NULL)
		name = defname = pin_name(seed, jstr(rec, "fingerprint"), minimized ?
		    "-min" : "");
	if ((rc = pin_dest(&cfg, name, force, &dst)) != 0)
		goto out;
	replay = report_replay_plan(cfg.path[0] == '/' ? cfg.path : cfg_path, dst);
	pin_failure(&p, rec, replay, jstr(report, "run_id"), plan_path);
	if ((rc = pin_save(dst, &p)) != 0)
		goto out;
	printf("pinned seed %" PRIu64 " as regression %s: %s\n", seed, name, dst);
	if (p.fingerprint != NULL)
		printf("  it failed with %s\n", log_escape(esc, sizeof(esc),
		    p.fingerprint));
	printf("  soak run and soak coordinator of %s run it before the seeds\n"
	    "  replay: %s\n", cfg_path, replay);
	rc = 0;
out:
	json_decref(report);
	plan_free(&p);
	cfg_free(&cfg);
	free(path);
	free(plan_path);
	free(dst);
	free(defname);
	free(replay);
	return rc;
}
