/*
 * The commands: one file each in cmd/, the top floor (docs/design.md, "The
 * layers").  argv[0] is the command's name; each returns its exit status
 * (common/soak.h).  cmd/main.c's table dispatches to them; nothing below
 * cmd/ names one.
 */
#ifndef SOAK_CMD_H
#define SOAK_CMD_H

int	cmd_run(int argc, char **argv);		/* cmd/run.c */
int	cmd_coordinator(int argc, char **argv);	/* cmd/run.c */
int	cmd_worker(int argc, char **argv);	/* cmd/worker.c */
int	cmd_replay(int argc, char **argv);	/* cmd/replay.c */
int	cmd_proxy(int argc, char **argv);	/* cmd/proxy.c */
int	cmd_check(int argc, char **argv);	/* cmd/check.c */
int	cmd_tickets(int argc, char **argv);	/* cmd/tickets.c */
int	cmd_pin(int argc, char **argv);		/* cmd/pin.c */
int	cmd_report(int argc, char **argv);	/* cmd/report.c */
int	cmd_explore(int argc, char **argv);	/* cmd/explore.c */
int	cmd_minimize(int argc, char **argv);	/* cmd/minimize.c */
struct cfg;
struct seed_result;
/* A failing result's fingerprint (heap; NULL for another verdict): the
 * coordinator's rule, for the worker's minimize leases. */
char	*min_fingerprint(const struct cfg *cfg, const struct seed_result *res);

#endif
