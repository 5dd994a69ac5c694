/* soak: one binary, subcommands (docs/design.md, "Commands and exit
 * statuses"). */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "common/log.h"
#include "common/self.h"
#include "common/soak.h"

static const struct {
	const char	*name;
	int		(*fn)(int, char **);
	const char	*usage;
	const char	*what;
} commands[] = {
	{ "run",	 cmd_run,	  "run CONFIG [--seeds A..B] [--workers N] [--out DIR]",
	    "a whole run on this machine" },
	{ "coordinator", cmd_coordinator, "coordinator CONFIG --listen URL [--seeds A..B] [--out DIR]",
	    "a run across machines: leases seeds to workers" },
	{ "worker",	 cmd_worker,	  "worker [--connect URL] [--slots N]",
	    "runs seeds for a coordinator" },
	{ "replay",	 cmd_replay,	  "replay CONFIG (--seed N | --plan FILE) [--keep [--shell]] [--out DIR]",
	    "one seed alone, with its timeline" },
	{ "proxy",	 cmd_proxy,	  "proxy --listen ADDR --upstream ADDR --seed N [fault options]",
	    "the fault proxy on its own" },
	{ "check",	 cmd_check,	  "check CONFIG [--db URL [--schema NAME] [--json]]",
	    "validates a config; with --db, the production monitor" },
	{ "tickets",	 cmd_tickets,	  "tickets RUN_DIR [--dry-run]",
	    "files a finished run's tickets" },
	{ "report",	 cmd_report,	  "report RUN_DIR [--previous DIR | --no-previous]",
	    "writes a run folder's report.html again" },
	{ "pin",	 cmd_pin,	  "pin RUN_DIR --seed N [--name NAME] [--force]",
	    "keeps a failing seed's plan as a regression, run before the seeds" },
	{ "explore",	 cmd_explore,	  "explore CONFIG --seed N [--preemptions P] [--budget B]",
	    "every interleaving of one seed up to a bound on preemptions" },
	{ "minimize",	 cmd_minimize,	  "minimize CONFIG (--seed N | --plan FILE) [--tries K] [--budget DUR] [--out FILE]",
	    "reduces a failing seed's plan to a 1-minimal one, and tells its story" },
};

/*
 * Each command's own --help lists all of its options (each command owns
 * its table of them); this one says what each command is for, its usual
 * options, and where the rest are.
 */
static int
usage(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: soak COMMAND [OPTIONS]\n\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  soak %s\n        %s\n", commands[i].usage, commands[i].what);
	fprintf(f, "  soak --version\n        the version the build recorded (git describe)\n"
	    "\nEvery option of a command, and its exit status: soak COMMAND --help\n"
	    "(or soak help COMMAND), e.g. soak replay --help\n" SOAK_MANUAL);
	return f == stdout ? 0 : SOAK_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	size_t	i;

	self_init(argv[0]);	/* before anything prints a command to run */
	if (argc < 2)
		return usage(stderr);
	/* soak help COMMAND is soak COMMAND --help. */
	if (strcmp(argv[1], "help") == 0 && argc == 3) {
		static char	 help_opt[] = "--help";
		char		*hargv[3] = { argv[2], help_opt, NULL };

		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[2], commands[i].name) == 0) {
				log_init(commands[i].name, 0);
				return commands[i].fn(2, hargv);
			}
		fprintf(stderr, "soak: no command \"%s\"\n", argv[2]);
		return usage(stderr);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0)
		return usage(stdout);
	if (strcmp(argv[1], "--version") == 0) {
		printf("soak %s\n", SOAK_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0) {
			log_init(commands[i].name, 0);
			return commands[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "soak: unknown command \"%s\"\n", argv[1]);
	return usage(stderr);
}
