/*
 * `soak replay CONFIG --seed N [--keep]`: one seed alone, in this process,
 * through the same wrk_run_seed a run uses, with a readable timeline.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/conninfo.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/soak.h"
#include "common/util.h"
#include "isolation/iso.h"
#include "worker/wrk.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak replay CONFIG --seed N [--keep] [--out DIR] [-v]\n"
	    "\n"
	    "Runs one seed alone and prints its timeline: the schema reset, the setup,\n"
	    "every turn's exit, every invariant's result with the rows that broke it,\n"
	    "and the verdict.  The faults, turn seeds and schedule inputs are the same\n"
	    "as in the run that reported the seed.\n"
	    "\n"
	    "  --seed N     the seed to replay\n"
	    "  --keep       keep the schema and the workspace, and say where they are\n"
	    "               (the embedded database, if any, is stopped on exit: set\n"
	    "               database.url or SOAK_DATABASE_URL to inspect the schema)\n"
	    "  --out DIR    where a failing seed's workspace is kept (default soak-replay)\n"
	    "  -v           log every state change\n"
	    "\n"
	    "Exit status: 0 pass, 1 fail, 125 infra (the environment broke: what\n"
	    "`git bisect run` skips), 64 usage, 78 config error.\n");
}

int
cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed",	required_argument, NULL, 's' },
		{ "keep",	no_argument,	   NULL, 'k' },
		{ "out",	required_argument, NULL, 'o' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg		 cfg = { 0 };
	struct wrk		 w = { 0 };
	struct seed_result	 res = { 0 };
	struct iso_db		 db = { 0 };
	const char		*out = "soak-replay", *seedarg = NULL;
	char			 err[ERR_LEN], *end, outabs[PATH_MAX];
	uint64_t		 seed = 0;
	bool			 keep = false;
	/* Anything that stops the seed before its verdict is the environment's. */
	int			 ch, rc = SOAK_EXIT_REPLAY_INFRA;

	while ((ch = getopt_long(argc, argv, "s:ko:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': seedarg = optarg; break;
		case 'k': keep = true; break;
		case 'o': out = optarg; break;
		case 'v': log_init("replay", 1); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || seedarg == NULL) {
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	seed = strtoull(seedarg, &end, 10);
	if (*seedarg == '\0' || *end != '\0' || *seedarg == '-') {
		fprintf(stderr, "soak replay: --seed wants an integer, got \"%s\"\n", seedarg);
		return SOAK_EXIT_USAGE;
	}
	if (cfg_load_file(argv[optind], &cfg, err) == -1) {
		fprintf(stderr, "soak: %s\n", err);
		return SOAK_EXIT_CONFIG;
	}
	signal(SIGPIPE, SIG_IGN);
	if (mkdir_p(out, 0755, err) == -1 || realpath(out, outabs) == NULL) {
		fprintf(stderr, "soak replay: %s\n", err);
		goto out;
	}
	if (iso_db_open(&db, &cfg, 1, NULL, err) == -1) {
		fprintf(stderr, "soak replay: %s\n", err);
		goto out;
	}
	w.cfg = &cfg;
	w.run_id = xasprintf("replay%d", (int)getpid());
	w.id = 1;
	w.conninfo = xstrdup(db.conninfo);
	w.workspace = xasprintf("%s/soak-replay-%d", scratch_root(), (int)getpid());
	w.keep_dir = xasprintf("%s/failures", outabs);
	w.timeline = stdout;
	w.keep_all = keep;
	printf("replay of seed %" PRIu64 " of %s (%d turns x %d rounds)\n", seed,
	    cfg.name, cfg.turns, cfg.rounds);
	if (wrk_open(&w, err) == -1) {
		printf("verdict: infra — %s\n", err);
		wrk_close(&w, !keep);
		goto out;
	}
	wrk_run_seed(&w, seed, 1, &res);
	rc = res.verdict == VERDICT_PASS ? SOAK_EXIT_PASS :
	    res.verdict == VERDICT_FAIL ? SOAK_EXIT_FAIL : SOAK_EXIT_REPLAY_INFRA;
	{
		json_t	*ws = json_object_get(res.detail, "workspace");
		json_t	*tr = json_object_get(res.detail, "trace");

		if (json_is_string(tr) && json_string_length(tr) > 0) {
			printf("\nfault trace:\n%s", json_string_value(tr));
		}
		if (json_is_string(ws))
			printf("\nworkspace kept: %s\n", json_string_value(ws));
	}
	if (keep) {
		char	*red = conninfo_redact(db.conninfo);

		/* The password stays out of the terminal: PGPASSWORD or ~/.pgpass. */
		printf("schema kept: %s (connect: psql \"%s\" -c 'SET search_path = %s')\n",
		    iso_schema(w.iso), red, iso_schema(w.iso));
		if (conninfo_has_password(db.conninfo))
			printf("note: the password is shown as %s: give psql the "
			    "real one (PGPASSWORD, ~/.pgpass)\n", CONNINFO_MARK);
		free(red);
		if (db.pg)
			printf("note: the embedded database is removed when replay exits; "
			    "set SOAK_DATABASE_URL to keep the schema for inspection\n");
	}
	seed_result_clear(&res);
	wrk_close(&w, !keep);
out:
	if (!keep && w.workspace)
		rm_rf(w.workspace);
	iso_db_close(&db);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
	cfg_free(&cfg);
	return rc;
}
