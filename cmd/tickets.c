/* soak tickets RUN_DIR [--dry-run]: file tickets for a finished run. */
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"
#include "coordinator/tickets.h"

#define EX_DATAERR	65
#define EX_NOINPUT	66
#define EX_SOFTWARE	70

static int
tickets_usage(FILE *f)
{
	fprintf(f,
	    "usage: soak tickets RUN_DIR [--dry-run]\n"
	    "\n"
	    "Files one ticket per failure fingerprint of the finished run in\n"
	    "RUN_DIR (read from RUN_DIR/report.json), to the sink named by the\n"
	    "config's tickets: section (default: markdown files in\n"
	    "RUN_DIR/tickets/).  An open ticket with the same fingerprint gets\n"
	    "a comment instead of a new ticket.\n"
	    "\n"
	    "  --dry-run   print what would be filed and where; send nothing\n"
	    "  --help      this text\n"
	    "\n"
	    "Exit: 0 filed, nothing to file, or a sink failed (printed as a\n"
	    "warning); 64 usage; 65 malformed report.json; 66 no report.json;\n"
	    "70 a ticket could not be made into a request (nothing was sent\n"
	    "for it; the warning names it).\n" SOAK_MANUAL);
	return f == stdout ? 0 : SOAK_EXIT_USAGE;
}

int
cmd_tickets(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run",	no_argument,	NULL, 'n' },
		{ "help",	no_argument,	NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct tickets_opts	 opts = { false, stdout };
	char			 err[ERR_LEN], *report;
	int			 ch, nfailed = 0, missing;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "nh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			opts.dry_run = true;
			break;
		case 'h':
			return tickets_usage(stdout);
		default:
			fprintf(stderr, "soak tickets: unknown option \"%s\"\n",
			    argv[optind - 1]);
			return tickets_usage(stderr);
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "soak tickets: want exactly one RUN_DIR\n");
		return tickets_usage(stderr);
	}
	report = path_join(argv[optind], "report.json");
	missing = access(report, R_OK) == -1;
	free(report);
	if (missing) {
		fprintf(stderr, "soak tickets: %s/report.json is missing or "
		    "unreadable; is %s the --out folder of a finished run?\n",
		    argv[optind], argv[optind]);
		return EX_NOINPUT;
	}
	switch (tickets_file_run(argv[optind], &opts, &nfailed, err)) {
	case -1:
		fprintf(stderr, "soak tickets: %s\n", err);
		return EX_DATAERR;
	case 1:
		return EX_SOFTWARE;
	}
	return 0;
}
