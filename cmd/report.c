/*
 * soak report RUN_DIR [--previous DIR | --no-previous]: writes
 * RUN_DIR/report.html again (coordinator/report_html.h) for any finished
 * or resumed run.  Only the command line is here; the page is the
 * renderer's.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "common/config.h"
#include "common/soak.h"
#include "common/util.h"
#include "coordinator/report_html.h"

#define EX_NOINPUT	66

static int
report_usage(FILE *f)
{
	fprintf(f,
	    "usage: soak report RUN_DIR [--previous DIR | --no-previous]\n"
	    "\n"
	    "Writes RUN_DIR/report.html: the run at a glance (seed grid, failures\n"
	    "by fingerprint with their rows and swimlanes, the worker timeline,\n"
	    "coverage, what changed since the previous run).  One file, no\n"
	    "network; open it in any browser.  Every soak run and soak\n"
	    "coordinator writes it at its end; this writes it again.\n"
	    "\n"
	    "  --previous DIR   the run to compare with (default: the newest\n"
	    "                   earlier run beside RUN_DIR, in its output root)\n"
	    "  --no-previous    compare with none\n"
	    "  --help           this text\n"
	    "\n"
	    "Exit: 0 written; 64 usage; 66 RUN_DIR has no readable report.json;\n"
	    "1 the page could not be written.\n" SOAK_MANUAL);
	return f == stdout ? 0 : SOAK_EXIT_USAGE;
}

/*
 * The run's config, for the secrets to scrub (its database password, a
 * ticket token): report.json's config.path, when it still reads.
 */
static int
load_config(const char *run_dir, struct cfg *cfg)
{
	char	 err[ERR_LEN];
	json_t	*r = report_html_head(run_dir, err);
	const char *cp = json_string_value(json_object_get(json_object_get(r, "config"), "path"));
	int	 rc = -1;

	if (cp != NULL && cfg_load_file(cp, cfg, err) == 0)
		rc = 0;
	else if (cp != NULL)
		fprintf(stderr, "soak report: note: the run's config %s does not load (%s); "
		    "only SOAK_DATABASE_URL's password is scrubbed\n", cp, err);
	json_decref(r);
	return rc;
}

int
cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "previous",	required_argument, NULL, 'p' },
		{ "no-previous", no_argument,	   NULL, 'n' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct report_html_opts	 o = { 0 };
	struct cfg		 cfg = { 0 };
	char			 err[ERR_LEN], *json;
	size_t			 size = 0;
	int			 ch, rc, have_cfg;
	FILE			*probe;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "p:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			o.previous = optarg;
			break;
		case 'n':
			o.previous = "";
			break;
		case 'h':
			return report_usage(stdout);
		default:
			fprintf(stderr, "soak report: unknown option or missing value: \"%s\"\n",
			    argv[optind - 1]);
			return report_usage(stderr);
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "soak report: want exactly one RUN_DIR\n");
		return report_usage(stderr);
	}
	o.run_dir = argv[optind];
	json = path_join(o.run_dir, "report.json");
	probe = fopen(json, "r");
	if (probe == NULL) {
		fprintf(stderr, "soak report: %s is missing or unreadable; is %s the --out "
		    "folder of a finished run? (a stopped one: soak run CONFIG --resume %s "
		    "finishes it)\n", json, o.run_dir, o.run_dir);
		free(json);
		return EX_NOINPUT;
	}
	fclose(probe);
	free(json);
	if (o.previous != NULL && *o.previous) {
		json = path_join(o.previous, "report.json");
		probe = fopen(json, "r");
		if (probe == NULL) {
			fprintf(stderr, "soak report: --previous: %s is missing or unreadable\n",
			    json);
			free(json);
			return SOAK_EXIT_USAGE;
		}
		fclose(probe);
		free(json);
	}
	have_cfg = load_config(o.run_dir, &cfg) == 0;
	o.cfg = have_cfg ? &cfg : NULL;
	rc = report_html_write(&o, &size, err);
	if (have_cfg)
		cfg_free(&cfg);
	if (rc == -1) {
		fprintf(stderr, "soak report: %s\n", err);
		return 1;
	}
	printf("%s/%s (%.1f KiB)\n", o.run_dir, RH_NAME, (double)size / 1024.0);
	return 0;
}
