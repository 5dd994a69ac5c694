/*
 * Weak placeholders for subcommands whose module is not linked yet, so each
 * component builds alone.  A module's real definition replaces them.
 */
#include <stdio.h>

#include "common/soak.h"

static int
not_built(const char *name)
{
	fprintf(stderr, "soak %s: not available in this build\n", name);
	return SOAK_EXIT_USAGE;
}

#define STUB(fn, name) \
	__attribute__((weak)) int fn(int argc, char **argv) \
	{ (void)argc; (void)argv; return not_built(name); }

STUB(cmd_run, "run")
STUB(cmd_coordinator, "coordinator")
STUB(cmd_worker, "worker")
STUB(cmd_replay, "replay")
STUB(cmd_proxy, "proxy")
STUB(cmd_check, "check")
STUB(cmd_tickets, "tickets")
