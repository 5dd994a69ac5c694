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
#include <stdbool.h>
#include <stdio.h>

struct auth_opts;
struct bundle;
struct cfg;
struct seed_result;
/*
 * The config folder as workers without it get it (common/bundle.h), for a
 * coordinator that listens (soak coordinator, soak explore --listen): out
 * (and ./soak-out when default_out), the secret file, the TLS certificate
 * and any file holding the shared secret or the TLS key left out; the
 * line that says so on stderr.  -1 said on stderr.  cmd/run.c.
 */
int	coordinator_bundle(const char *config, const struct cfg *cfg, const char *out,
	    bool default_out, const struct auth_opts *auth, struct bundle *b);
/*
 * After a run or a replay: every recording proxy's cassette made whole
 * from the parts its workers wrote (fault-proxy/proxy.h,
 * proxy_cassette_merge), a line each on out.  cmd/run.c.
 */
void	cassettes_merge(const struct cfg *cfg, FILE *out);
/* A failing result's fingerprint (heap; NULL for another verdict): the
 * coordinator's rule, for the worker's minimize leases. */
char	*min_fingerprint(const struct cfg *cfg, const struct seed_result *res);

#endif
