/* soak: one binary, subcommands (DESIGN.md §4). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/self.h"
#include "common/soak.h"

static const struct {
	const char	*name;
	int		(*fn)(int, char **);
	const char	*usage;
} commands[] = {
	{ "run",	 cmd_run,	  "run CONFIG [--seeds A..B] [--workers N] [--out DIR]" },
	{ "coordinator", cmd_coordinator, "coordinator CONFIG --listen URL [--seeds A..B] [--out DIR]\n"
	    "                   [--secret-file FILE | --tls-cert PEM --tls-client-ca PEM]" },
	{ "worker",	 cmd_worker,	  "worker [--connect URL] [--slots N]\n"
	    "                   [--secret-file FILE | --tls-ca PEM [--tls-cert PEM]]" },
	{ "replay",	 cmd_replay,	  "replay CONFIG --seed N [--keep]" },
	{ "proxy",	 cmd_proxy,	  "proxy --listen ADDR --upstream ADDR --seed N [fault options]" },
	{ "check",	 cmd_check,	  "check CONFIG [--db URL]" },
	{ "tickets",	 cmd_tickets,	  "tickets RUN_DIR [--dry-run]" },
	{ "report",	 cmd_report,	  "report RUN_DIR [--previous DIR | --no-previous]" },
};

static int
usage(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: soak COMMAND [OPTIONS]   (soak COMMAND --help)\n\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  soak %s\n", commands[i].usage);
	fprintf(f, "  soak --version     the version the build recorded (git describe)\n");
	return f == stdout ? 0 : SOAK_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	size_t	i;

	self_init(argv[0]);	/* before anything prints a command to run */
	if (argc < 2)
		return usage(stderr);
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
