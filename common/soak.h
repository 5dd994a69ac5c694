/* Things every role shares: version, exit statuses, subcommand entry points. */
#ifndef SOAK_SOAK_H
#define SOAK_SOAK_H

/*
 * What the build recorded (Makefile: `git describe --always --dirty` of the
 * tree, else its VERSION_BASE), written into BUILD/version.c: `soak
 * --version`, report.json's soak_version, the tickets, the User-Agent.
 */
extern const char soak_version[];
#define SOAK_VERSION	soak_version

/* Exit statuses of run and coordinator (DESIGN.md §4). */
#define SOAK_EXIT_PASS		0
#define SOAK_EXIT_FAIL		1	/* at least one domain failure */
#define SOAK_EXIT_INCOMPLETE	2	/* no domain failure, but infra or missing */
#define SOAK_EXIT_USAGE		64
#define SOAK_EXIT_CONFIG	78
/*
 * `soak replay` of a seed that ended infra (DESIGN.md §12): 125 is what
 * `git bisect run` takes for "cannot test this commit, skip it"; 2 would
 * count as bad.  Pass and fail are 0 and 1, as for run.
 */
#define SOAK_EXIT_REPLAY_INFRA	125

/* Subcommands: argv[0] is the subcommand's name. */
int	cmd_run(int argc, char **argv);		/* coordinator/run.c */
int	cmd_coordinator(int argc, char **argv);	/* coordinator/run.c */
int	cmd_worker(int argc, char **argv);	/* worker/worker.c */
int	cmd_replay(int argc, char **argv);	/* worker/replay.c */
int	cmd_proxy(int argc, char **argv);	/* fault-proxy/cmd.c */
int	cmd_check(int argc, char **argv);	/* invariants/check.c */
int	cmd_tickets(int argc, char **argv);	/* coordinator/tickets_cmd.c */
int	cmd_pin(int argc, char **argv);		/* coordinator/pin.c */
int	cmd_report(int argc, char **argv);	/* coordinator/report_cmd.c */

#endif
