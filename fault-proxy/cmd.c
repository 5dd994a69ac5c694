/*
 * soak proxy: the engine of fault-proxy/engine.c in front of anyone's
 * service, configured from the command line.  The duration, share and size
 * parsers are private here on purpose: cfg_parse_duration/cfg_parse_share
 * live in the config module, and `soak proxy` must not depend on it.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: soak proxy --listen HOST:PORT --upstream ADDR --seed N [options]\n"
"\n"
"  --listen HOST:PORT      where clients connect (port 0: ephemeral); prints\n"
"                          \"listening on HOST:PORT\" when ready\n"
"  --upstream ADDR         HOST:PORT or unix:/path, dialled lazily\n"
"  --seed N                every decision derives from it\n"
"  --turn K                the turn these rolls belong to (default 0)\n"
"  --name NAME             proxy name, part of the roll key (default proxy)\n"
"  --protocol P            auto | http | tcp (default auto)\n"
"\n"
"  --rate SHARE            share of exchanges faulted (0.15 or 15%%)\n"
"  --lost-reply SHARE      bands, as shares of the rate; with --rate alone\n"
"  --reset SHARE             the bands default to 0.4 / 0.3 / 0.3\n"
"  --duplicate SHARE\n"
"  --blackhole SHARE       share of connections swallowed whole\n"
"  --latency A..B          added to each exchange, seeded (e.g. 0ms..40ms)\n"
"  --hold DUR              lost_reply: how long the client waits (default 100ms)\n"
"  --bandwidth-up BYTES    bytes/s client->upstream (k, M suffixes)\n"
"  --bandwidth-down BYTES  bytes/s upstream->client\n"
"  --slice-up BYTES        max bytes per write, and\n"
"  --slice-down BYTES\n"
"  --slice-delay DUR       pause between slices\n"
"  --close-after-up BYTES  close the connection after this many bytes\n"
"  --close-after-down BYTES\n"
"\n"
"  --trace FILE            fault trace, one JSON line per exchange, written\n"
"                          sorted on SIGINT/SIGTERM\n"
"  -v, --verbose           log every state transition\n");
}

/* "250ms", "5s", "2m"; a bare "0" is allowed, any other bare number is not. */
static int
parse_dur(const char *s, int64_t *ms, char *err)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno != 0 || v < 0)
		return errf(err, "bad duration \"%s\" (want e.g. 250ms, 5s, 2m)", s);
	if (strcmp(end, "ms") == 0)
		*ms = v;
	else if (strcmp(end, "s") == 0)
		*ms = v * 1000;
	else if (strcmp(end, "m") == 0)
		*ms = v * 60000;
	else if (*end == '\0' && v == 0)
		*ms = 0;
	else
		return errf(err, "bad duration \"%s\" (want e.g. 250ms, 5s, 2m)", s);
	return 0;
}

static int
parse_range(const char *s, int64_t *lo, int64_t *hi, char *err)
{
	const char	*dots;
	char		 a[64];

	if ((dots = strstr(s, "..")) == NULL) {
		if (parse_dur(s, lo, err) == -1)
			return -1;
		*hi = *lo;
		return 0;
	}
	if ((size_t)(dots - s) >= sizeof(a))
		return errf(err, "bad latency \"%s\"", s);
	memcpy(a, s, (size_t)(dots - s));
	a[dots - s] = '\0';
	if (parse_dur(a, lo, err) == -1 || parse_dur(dots + 2, hi, err) == -1)
		return -1;
	if (*hi < *lo)
		return errf(err, "bad latency \"%s\": %s is below %s", s, dots + 2, a);
	return 0;
}

static int
parse_share(const char *s, double *v, char *err)
{
	char	*end;
	double	 x;

	errno = 0;
	x = strtod(s, &end);
	if (end == s || errno != 0)
		return errf(err, "bad share \"%s\" (want 0.15 or 15%%)", s);
	if (strcmp(end, "%") == 0)
		x /= 100;
	else if (*end != '\0')
		return errf(err, "bad share \"%s\" (want 0.15 or 15%%)", s);
	if (!(x >= 0 && x <= 1))
		return errf(err, "bad share \"%s\": must be between 0 and 1", s);
	*v = x;
	return 0;
}

static int
parse_bytes(const char *s, int64_t *v, char *err)
{
	char		*end;
	long long	 x;

	errno = 0;
	x = strtoll(s, &end, 10);
	if (end == s || errno != 0 || x < 0)
		return errf(err, "bad byte count \"%s\"", s);
	if (*end == 'k' || *end == 'K') {
		x *= 1024;
		end++;
	} else if (*end == 'M') {
		x *= 1024 * 1024;
		end++;
	}
	if (*end == 'B')
		end++;
	if (*end != '\0')
		return errf(err, "bad byte count \"%s\" (want e.g. 4096, 64k, 1M)", s);
	*v = x;
	return 0;
}

static int
parse_u64(const char *s, uint64_t *v, char *err)
{
	char			*end;
	unsigned long long	 x;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		return errf(err, "bad number \"%s\"", s);
	x = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0)
		return errf(err, "bad number \"%s\"", s);
	*v = x;
	return 0;
}

enum {
	O_LISTEN = 256, O_UPSTREAM, O_SEED, O_TURN, O_NAME, O_PROTOCOL, O_RATE,
	O_LOST, O_RESET, O_DUP, O_BLACKHOLE, O_LATENCY, O_HOLD, O_BW_UP,
	O_BW_DOWN, O_SLICE_UP, O_SLICE_DOWN, O_SLICE_DELAY, O_CA_UP, O_CA_DOWN,
	O_TRACE
};

static const struct option longopts[] = {
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "upstream", required_argument, NULL, O_UPSTREAM },
	{ "seed", required_argument, NULL, O_SEED },
	{ "turn", required_argument, NULL, O_TURN },
	{ "name", required_argument, NULL, O_NAME },
	{ "protocol", required_argument, NULL, O_PROTOCOL },
	{ "rate", required_argument, NULL, O_RATE },
	{ "lost-reply", required_argument, NULL, O_LOST },
	{ "reset", required_argument, NULL, O_RESET },
	{ "duplicate", required_argument, NULL, O_DUP },
	{ "blackhole", required_argument, NULL, O_BLACKHOLE },
	{ "latency", required_argument, NULL, O_LATENCY },
	{ "hold", required_argument, NULL, O_HOLD },
	{ "bandwidth-up", required_argument, NULL, O_BW_UP },
	{ "bandwidth-down", required_argument, NULL, O_BW_DOWN },
	{ "slice-up", required_argument, NULL, O_SLICE_UP },
	{ "slice-down", required_argument, NULL, O_SLICE_DOWN },
	{ "slice-delay", required_argument, NULL, O_SLICE_DELAY },
	{ "close-after-up", required_argument, NULL, O_CA_UP },
	{ "close-after-down", required_argument, NULL, O_CA_DOWN },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int
cmd_proxy(int argc, char **argv)
{
	struct cfg_faults	 f;
	struct proxy_listen	 pl;
	struct proxy_set	*ps = NULL;
	const char		*listen_addr = NULL, *upstream = NULL;
	const char		*trace = NULL, *name = "proxy";
	char			 err[ERR_LEN];
	uint64_t		 seed = 0, turn = 0;
	bool			 have_seed = false, bands = false;
	int			 ch, verbose = 0, rc = SOAK_EXIT_USAGE, sig;
	sigset_t		 set;
	enum cfg_protocol	 proto = CFG_PROTO_AUTO;

	memset(&f, 0, sizeof(f));
	f.hold_ms = 100;
	err[0] = '\0';
	optind = 1;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (ch) {
		case O_LISTEN: listen_addr = optarg; break;
		case O_UPSTREAM: upstream = optarg; break;
		case O_SEED:
			if (parse_u64(optarg, &seed, err) == -1)
				goto bad;
			have_seed = true;
			break;
		case O_TURN:
			if (parse_u64(optarg, &turn, err) == -1 || turn > 1000000) {
				errf(err, "bad turn \"%s\"", optarg);
				goto bad;
			}
			break;
		case O_NAME: name = optarg; break;
		case O_PROTOCOL:
			if (strcmp(optarg, "auto") == 0)
				proto = CFG_PROTO_AUTO;
			else if (strcmp(optarg, "http") == 0)
				proto = CFG_PROTO_HTTP;
			else if (strcmp(optarg, "tcp") == 0)
				proto = CFG_PROTO_TCP;
			else {
				errf(err, "bad protocol \"%s\" (auto, http or tcp)", optarg);
				goto bad;
			}
			break;
		case O_RATE:
			if (parse_share(optarg, &f.rate, err) == -1)
				goto bad;
			break;
		case O_LOST:
			bands = true;
			if (parse_share(optarg, &f.lost_reply, err) == -1)
				goto bad;
			break;
		case O_RESET:
			bands = true;
			if (parse_share(optarg, &f.reset, err) == -1)
				goto bad;
			break;
		case O_DUP:
			bands = true;
			if (parse_share(optarg, &f.duplicate, err) == -1)
				goto bad;
			break;
		case O_BLACKHOLE:
			if (parse_share(optarg, &f.blackhole, err) == -1)
				goto bad;
			break;
		case O_LATENCY:
			if (parse_range(optarg, &f.latency_min_ms, &f.latency_max_ms,
			    err) == -1)
				goto bad;
			break;
		case O_HOLD:
			if (parse_dur(optarg, &f.hold_ms, err) == -1)
				goto bad;
			break;
		case O_BW_UP:
			if (parse_bytes(optarg, &f.bandwidth[CFG_UP], err) == -1)
				goto bad;
			break;
		case O_BW_DOWN:
			if (parse_bytes(optarg, &f.bandwidth[CFG_DOWN], err) == -1)
				goto bad;
			break;
		case O_SLICE_UP:
			if (parse_bytes(optarg, &f.slice[CFG_UP], err) == -1)
				goto bad;
			break;
		case O_SLICE_DOWN:
			if (parse_bytes(optarg, &f.slice[CFG_DOWN], err) == -1)
				goto bad;
			break;
		case O_SLICE_DELAY:
			if (parse_dur(optarg, &f.slice_delay_ms, err) == -1)
				goto bad;
			break;
		case O_CA_UP:
			if (parse_bytes(optarg, &f.close_after[CFG_UP], err) == -1)
				goto bad;
			break;
		case O_CA_DOWN:
			if (parse_bytes(optarg, &f.close_after[CFG_DOWN], err) == -1)
				goto bad;
			break;
		case O_TRACE: trace = optarg; break;
		case 'v': verbose++; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return SOAK_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		errf(err, "unexpected argument \"%s\"", argv[optind]);
		goto bad;
	}
	if (listen_addr == NULL || upstream == NULL || !have_seed) {
		errf(err, "--listen, --upstream and --seed are required");
		goto bad;
	}
	if (!bands && f.rate > 0) {
		/* seeds/000's Chaos: no 0.4, reset 0.3, yes twice 0.3 */
		f.lost_reply = 0.4;
		f.reset = 0.3;
		f.duplicate = 0.3;
	}
	if (f.lost_reply + f.reset + f.duplicate > 1.0 + 1e-9) {
		errf(err, "--lost-reply + --reset + --duplicate is %.3f, over 1",
		    f.lost_reply + f.reset + f.duplicate);
		goto bad;
	}
	log_init("proxy", verbose);

	memset(&pl, 0, sizeof(pl));
	pl.name = name;
	pl.proxy = 0;
	pl.turn = (int)turn;
	pl.listen = listen_addr;
	pl.upstream = upstream;
	pl.protocol = proto;
	pl.faults = &f;

	/* block the signals before the loop thread starts, so it inherits that */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if ((ps = proxy_set_open(&pl, 1, seed, trace, err)) == NULL) {
		fprintf(stderr, "soak proxy: %s\n", err);
		return 1;
	}
	printf("listening on %s\n", proxy_set_listener_addr(ps, 0));
	fflush(stdout);
	if (sigwait(&set, &sig) != 0)
		log_warnx("sigwait failed");
	log_debug("signal %d: writing the trace and exiting", sig);
	proxy_set_stop(ps);
	rc = 0;
	return rc;
bad:
	fprintf(stderr, "soak proxy: %s\n", err);
	return rc;
}
