/* Things every floor shares: the version, the exit statuses, the manual. */
#ifndef SOAK_SOAK_H
#define SOAK_SOAK_H

/*
 * What the build recorded (Makefile: `git describe --always --dirty` of the
 * tree, else its VERSION_BASE), written into BUILD/version.c: `soak
 * --version`, report.json's soak_version, the tickets, the User-Agent.
 */
extern const char soak_version[];
#define SOAK_VERSION	soak_version

/* Exit statuses of run and coordinator (docs/design.md, "Commands and exit
 * statuses"). */
#define SOAK_EXIT_PASS		0
#define SOAK_EXIT_FAIL		1	/* at least one domain failure */
#define SOAK_EXIT_INCOMPLETE	2	/* no domain failure, but infra or missing */
#define SOAK_EXIT_USAGE		64
#define SOAK_EXIT_CONFIG	78
/*
 * `soak replay` of a seed that ended infra (docs/design.md, "Replaying and
 * bisecting"): 125 is what `git bisect run` takes for "cannot test this
 * commit, skip it"; 2 would count as bad.  Pass and fail are 0 and 1, as for run.
 */
#define SOAK_EXIT_REPLAY_INFRA	125

/* The last lines of every command's --help: where the manual is. */
#define SOAK_MANUAL	"\nThe manual: man soak (soak(1)); the config: man soak.yaml " \
			"(soak.yaml(5)).\n"

/*
 * The file in the data directory of a PostgreSQL soak started itself (the
 * embedded one, isolation/pg.c): the fault proxy (by the postmaster's
 * /proc/PID/cwd) stops such a server's backends at a lock wait, so that
 * soak, not PostgreSQL, orders their wake-ups (docs/faults.md
 * "Wake-ups"); never another server's, whose backends would stay stopped
 * if the stopping process died.
 */
#define SOAK_PG_MARK	"soak-embedded"

#endif
