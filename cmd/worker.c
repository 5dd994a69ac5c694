/*
 * `soak worker [--connect URL] [--slots N] ...`: the options, the slot
 * processes (one per --slots, each its own worker: schema, workspace,
 * connection) and the signals that drain them.  The worker's life itself,
 * its session with the coordinator and its seeds, is worker/ (wrk_serve).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "common/auth.h"
#include "common/log.h"
#include "common/soak.h"
#include "common/tlsconf.h"
#include "common/units.h"
#include "common/util.h"
#include "worker/wrk.h"

static void
worker_usage(FILE *f)
{
	fprintf(f,
	    "usage: soak worker [--connect URL] [--slots N] [--workspace DIR]\n"
	    "                   [--secret-file FILE] [--tls-ca PEM [--tls-server-name NAME]]\n"
	    "                   [--tls-cert PEM] [--insecure] [--reconnect DUR] [-q | -v]\n"
	    "\n"
	    "Dials the coordinator at URL (tls+tcp://HOST:PORT, tcp://HOST:PORT,\n"
	    "ipc://PATH), makes it prove itself, takes the run's config from it, and\n"
	    "runs leased seeds until the run is done.\n"
	    "\n"
	    "  --connect URL          the coordinator's --listen address (else the\n"
	    "                         environment's SOAK_COORDINATOR)\n"
	    "  --slots N              seeds to run at once (N worker processes; default 1)\n"
	    "  --workspace DIR        where turns' workspaces and cached config folders\n"
	    "                         live (default /dev/shm)\n"
	    "  --secret-file FILE     the shared secret (else SOAK_SECRET; at least 16\n"
	    "                         bytes; the file mode 600); never sent, proved by\n"
	    "                         HMAC challenge-response in both directions\n"
	    "  --tls-ca PEM           verify the coordinator's certificate against this CA\n"
	    "  --tls-server-name NAME the name its certificate must carry (default: the\n"
	    "                         URL's host; needed when that is an IP address)\n"
	    "  --tls-cert PEM         this worker's client certificate and key, one file\n"
	    "                         (when the coordinator has --tls-client-ca)\n"
	    "  --insecure             accept a coordinator that cannot prove itself (a\n"
	    "                         trusted lab network only; warned at every start)\n"
	    "  --reconnect DUR        dial a coordinator that is not up yet, or was lost,\n"
	    "                         for up to DUR (default 5m), then rejoin the run as\n"
	    "                         the same worker; past it, exit 1\n"
	    "                         (a worker that comes after the run is over is\n"
	    "                         told so and exits 0)\n"
	    "  -q, --quiet            only warnings: no line when it connects or is done\n"
	    "                         (how `soak run` starts its local workers)\n"
	    "  -v, --verbose          also a line per lease and per seed's verdict\n"
	    "\n"
	    "On any URL but ipc:// the coordinator must prove itself before this worker\n"
	    "runs, creates or deletes anything: by the shared secret, or by its TLS\n"
	    "certificate (tls+tcp:// with --tls-ca).  Without either the worker refuses\n"
	    "to start (exit 64) unless --insecure.  The coordinator in turn wants the\n"
	    "secret or, with --tls-client-ca, a client certificate (--tls-cert).\n"
	    "\n"
	    "SIGTERM drains: the seed running finishes and is reported, the unstarted\n"
	    "seeds of the lease go back to the coordinator, and the worker exits 0.\n"
	    SOAK_MANUAL);
}

static pid_t *volatile	slot_kids;
static volatile int	slot_nkids;

static void
forward_sigterm(int sig)
{
	int	i, saved = errno;

	for (i = 0; i < slot_nkids; i++)
		if (slot_kids[i] > 0)
			kill(slot_kids[i], sig);
	errno = saved;
}

int
cmd_worker(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect",	required_argument, NULL, 'c' },
		{ "slots",	required_argument, NULL, 's' },
		{ "workspace",	required_argument, NULL, 'w' },
		{ "secret-file",	required_argument, NULL, 'F' },
		{ "tls-ca",	required_argument, NULL, 'A' },
		{ "tls-server-name",	required_argument, NULL, 'N' },
		{ "tls-cert",	required_argument, NULL, 'C' },
		{ "insecure",	no_argument,	   NULL, 'I' },
		{ "reconnect",	required_argument, NULL, 'r' },
		{ "quiet",	no_argument,	   NULL, 'q' },
		{ "verbose",	no_argument,	   NULL, 'v' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct wrk_opts	 o = { .slots = 1, .reconnect_ms = 5 * 60 * 1000,
			    .fingerprint = min_fingerprint };
	int64_t		 ms;
	pid_t		*kids;
	int		 ch, i, rc = 0, st, late = 0;
	char		 err[ERR_LEN], warn[ERR_LEN];
	const char	*env;

	while ((ch = getopt_long(argc, argv, "c:s:w:qvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.url = optarg;
			break;
		case 's':
			if (parse_count(optarg, 1, 256, &ms, err) == -1) {
				fprintf(stderr, "soak worker: --slots: %s\n", err);
				return SOAK_EXIT_USAGE;
			}
			o.slots = (int)ms;
			break;
		case 'w':
			o.workspace = optarg;
			break;
		case 'F': o.auth.secret_file = optarg; break;
		case 'A': o.auth.tls_ca = optarg; break;
		case 'N': o.auth.tls_server_name = optarg; break;
		case 'C': o.auth.tls_cert = optarg; break;
		case 'I': o.auth.insecure = true; break;
		case 'r':
			if (parse_duration_ms(optarg, &ms, err) == -1 || ms < 1000 ||
			    ms > 7 * 24 * 3600 * 1000LL) {
				fprintf(stderr, "soak worker: --reconnect wants a duration "
				    "from 1s to 7d, got \"%s\"\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			o.reconnect_ms = ms;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'v':
			log_init("worker", 1);
			break;
		case 'h':
			worker_usage(stdout);
			return 0;
		default:
			worker_usage(stderr);
			return SOAK_EXIT_USAGE;
		}
	}
	/* --connect wins; SOAK_COORDINATOR is for engines that start the
	 * same command everywhere (a Slurm step, a pod template, a unit). */
	if (o.url == NULL && (env = getenv("SOAK_COORDINATOR")) != NULL) {
		if (*env == '\0') {
			fprintf(stderr, "soak worker: SOAK_COORDINATOR is set but "
			    "empty: set it to the coordinator's --listen URL, or "
			    "give --connect URL\n");
			return SOAK_EXIT_USAGE;
		}
		o.url = env;
	}
	if (o.url == NULL) {
		fprintf(stderr, "soak worker: no coordinator: give --connect URL "
		    "or set SOAK_COORDINATOR\n");
		worker_usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	if (optind != argc) {
		worker_usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	/* Before anything is dialed: the secret, the rules, the files. */
	if (auth_secret_load(o.auth.secret_file, &o.auth.secret, err) == -1 ||
	    (rc = auth_policy(AUTH_WORKER, o.url, &o.auth, warn, err)) == -1 ||
	    tlsconf_check(AUTH_WORKER, o.url, &o.auth, err) == -1) {
		fprintf(stderr, "soak worker: %s\n", err);
		auth_secret_free(&o.auth.secret);
		return SOAK_EXIT_USAGE;
	}
	if (rc == 1)
		fprintf(stderr, "soak worker: warning: %s\n", warn);
	rc = 0;
	signal(SIGPIPE, SIG_IGN);
	if (o.slots == 1) {
		rc = wrk_serve(&o);
		auth_secret_free(&o.auth.secret);
		return rc;
	}
	/* Slots are processes: each has its own schema, workspace, connection.
	 * A SIGTERM to this one drains them all. */
	slot_kids = kids = xcalloc(o.slots, sizeof(pid_t));
	slot_nkids = o.slots;
	o.slot = true;
	signal(SIGTERM, forward_sigterm);
	for (i = 0; i < o.slots; i++) {
		if ((kids[i] = fork()) == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			_exit(wrk_serve(&o));
		}
	}
	for (i = 0; i < o.slots; i++) {
		if (kids[i] <= 0)
			continue;
		while (waitpid(kids[i], &st, 0) == -1 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == WRK_SLOT_LATE)
			late++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = 1;
	}
	if (late == o.slots && !o.quiet)
		log_info("the run at %s is over (run finished): nothing to do, "
		    "exiting 0", o.url);
	slot_nkids = 0;
	free(kids);
	auth_secret_free(&o.auth.secret);
	return rc;
}
