/*
 * soak proxy: the engine of fault-proxy/engine.c in front of anyone's
 * service, configured from the command line.  Values follow the same
 * grammars as the config file (common/units.h).
 *
 * Phases, each its own function: proxy_options (argv to struct
 * proxy_opts), proxy_check (what needs the options together), proxy_start
 * (listener up, "listening on"), proxy_serve (until SIGINT/SIGTERM) and
 * proxy_shutdown (trace written).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "common/fault.h"
#include "common/log.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/units.h"
#include "common/util.h"
#include "fault-proxy/proxy.h"

#define PROXY_MAX_TURN	1000000

struct proxy_opts {
	const char		*listen;	/* required */
	const char		*upstream;	/* required */
	uint64_t		 seed;		/* required: have_seed */
	bool			 have_seed;
	int64_t			 turn;
	const char		*name;
	enum cfg_protocol	 protocol;
	struct cfg_faults	 faults;
	bool			 bands;		/* a band was given: no defaults */
	const char		*trace;
	int			 verbose;
	bool			 help;
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: soak proxy --listen HOST:PORT --upstream ADDR --seed N [options]\n"
"\n"
"  --listen HOST:PORT      where clients connect (port 0: ephemeral); prints\n"
"                          \"listening on HOST:PORT\" when ready\n"
"  --upstream ADDR         HOST:PORT or unix:/path, dialled lazily; or\n"
"                          model:FILE, the model stand-in answering from\n"
"                          the script FILE (docs/models.md)\n"
"  --seed N                every decision derives from it\n"
"  --turn K                the turn these rolls belong to (default 0)\n"
"  --name NAME             proxy name, part of the roll key (default proxy)\n"
"  --protocol P            auto | http | tcp | postgres (default auto)\n"
"\n"
"  --rate SHARE            share of exchanges faulted (0.15 or 15%%)\n"
"  --lost-reply SHARE      bands, as shares of the rate; with --rate alone\n"
"  --reset SHARE             the bands default to 0.4 / 0.3 / 0.3\n"
"  --duplicate SHARE\n"
"  --blackhole SHARE       share of connections swallowed whole\n"
"  --latency A..B          added to each exchange, seeded (e.g. 0ms..40ms,\n"
"                          or one duration)\n"
"  --hold DUR              lost_reply: how long the client waits (default 100ms)\n"
"  --bandwidth-up BYTES    bytes/s client->upstream (K, M, G: powers of 1024)\n"
"  --bandwidth-down BYTES  bytes/s upstream->client\n"
"  --slice-up BYTES        max bytes per write, and\n"
"  --slice-down BYTES\n"
"  --slice-delay DUR       pause between slices\n"
"  --close-after-up BYTES  close the connection after this many bytes\n"
"  --close-after-down BYTES\n"
"  --match REGEX           faults and latency only for exchanges whose\n"
"                          statement (postgres) or request line (http)\n"
"                          matches this POSIX extended regex\n"
"\n"
"  HTTP API faults (bands of the rate, like --lost-reply):\n"
"  --status SHARE          the proxy answers an error status itself\n"
"  --statuses LIST         drawn among these (default 429,500,529)\n"
"  --retry-after DUR       Retry-After of a 429, 503, 529 (default 1s)\n"
"  --stream-cut SHARE      a streamed reply cut after K events\n"
"  --cut-after N..M        K, seeded (default 1..5)\n"
"  --stream-stall SHARE    a streamed reply stopped after K events, then\n"
"                          resumed\n"
"  --stall-after N..M      K, seeded (default 1..5)\n"
"  --stall A..B            how long it stops, seeded (default 1s..3s)\n"
"\n"
"  Durations take a unit (250ms, 5s, 2m): a bare number is an error.\n"
"\n"
"  --trace FILE            fault trace, one JSON line per exchange, written\n"
"                          sorted on SIGINT/SIGTERM\n"
"  -v, --verbose           log every state transition\n" SOAK_MANUAL);
}

enum {
	O_LISTEN = 256, O_UPSTREAM, O_SEED, O_TURN, O_NAME, O_PROTOCOL, O_RATE,
	O_LOST, O_RESET, O_DUP, O_BLACKHOLE, O_LATENCY, O_HOLD, O_BW_UP,
	O_BW_DOWN, O_SLICE_UP, O_SLICE_DOWN, O_SLICE_DELAY, O_CA_UP, O_CA_DOWN,
	O_MATCH, O_STATUS, O_STATUSES, O_RETRY_AFTER, O_CUT, O_CUT_AFTER,
	O_STALL, O_STALL_AFTER, O_STALL_FOR,
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
	{ "match", required_argument, NULL, O_MATCH },
	{ "status", required_argument, NULL, O_STATUS },
	{ "statuses", required_argument, NULL, O_STATUSES },
	{ "retry-after", required_argument, NULL, O_RETRY_AFTER },
	{ "stream-cut", required_argument, NULL, O_CUT },
	{ "cut-after", required_argument, NULL, O_CUT_AFTER },
	{ "stream-stall", required_argument, NULL, O_STALL },
	{ "stall-after", required_argument, NULL, O_STALL_AFTER },
	{ "stall", required_argument, NULL, O_STALL_FOR },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* Each fault option: its grammar (common/units.h) and its field. */
enum fault_type { F_SHARE, F_DURATION, F_RANGE, F_BYTES, F_COUNTS };

#define FIELD(f)	offsetof(struct cfg_faults, f)

static const struct fault_opt {
	int		 opt;
	enum fault_type	 type;
	size_t		 off;		/* the field; F_RANGE: the minimum */
	size_t		 off_max;	/* F_RANGE: the maximum */
	bool		 band;		/* lost-reply, reset, duplicate, ... */
} fault_opts[] = {
	{ O_RATE,	 F_SHARE,	FIELD(rate),		0, false },
	{ O_LOST,	 F_SHARE,	FIELD(lost_reply),	0, true },
	{ O_RESET,	 F_SHARE,	FIELD(reset),		0, true },
	{ O_DUP,	 F_SHARE,	FIELD(duplicate),	0, true },
	{ O_BLACKHOLE,	 F_SHARE,	FIELD(blackhole),	0, false },
	{ O_LATENCY,	 F_RANGE,	FIELD(latency_min_ms),
	    FIELD(latency_max_ms), false },
	{ O_HOLD,	 F_DURATION,	FIELD(hold_ms),		0, false },
	{ O_BW_UP,	 F_BYTES,	FIELD(bandwidth[CFG_UP]), 0, false },
	{ O_BW_DOWN,	 F_BYTES,	FIELD(bandwidth[CFG_DOWN]), 0, false },
	{ O_SLICE_UP,	 F_BYTES,	FIELD(slice[CFG_UP]),	0, false },
	{ O_SLICE_DOWN,	 F_BYTES,	FIELD(slice[CFG_DOWN]),	0, false },
	{ O_SLICE_DELAY, F_DURATION,	FIELD(slice_delay_ms),	0, false },
	{ O_CA_UP,	 F_BYTES,	FIELD(close_after[CFG_UP]), 0, false },
	{ O_CA_DOWN,	 F_BYTES,	FIELD(close_after[CFG_DOWN]), 0, false },
	{ O_STATUS,	 F_SHARE,	FIELD(status),		0, true },
	{ O_RETRY_AFTER, F_DURATION,	FIELD(retry_after_ms),	0, false },
	{ O_CUT,	 F_SHARE,	FIELD(stream_cut),	0, true },
	{ O_CUT_AFTER,	 F_COUNTS,	FIELD(cut_after_min),
	    FIELD(cut_after_max), false },
	{ O_STALL,	 F_SHARE,	FIELD(stream_stall),	0, true },
	{ O_STALL_AFTER, F_COUNTS,	FIELD(stall_after_min),
	    FIELD(stall_after_max), false },
	{ O_STALL_FOR,	 F_RANGE,	FIELD(stall_min_ms),
	    FIELD(stall_max_ms), false },
};

static const char *
opt_name(int opt)
{
	const struct option	*lo;

	for (lo = longopts; lo->name != NULL; lo++)
		if (lo->val == opt)
			return lo->name;
	return "?";
}

/* One fault option's value into o->faults; "--NAME: why" when it is bad. */
static int
fault_option(struct proxy_opts *o, const struct fault_opt *fo,
    const char *arg, char *err)
{
	char	*f = (char *)&o->faults, why[ERR_LEN];
	int64_t	 lo, hi;
	int	 rc = -1;

	switch (fo->type) {
	case F_SHARE:
		rc = parse_share(arg, (double *)(void *)(f + fo->off), why);
		break;
	case F_DURATION:
		rc = parse_duration_ms(arg, (int64_t *)(void *)(f + fo->off), why);
		break;
	case F_RANGE:
		/* a latency goes into traces and plans: at most what a plan holds */
		rc = parse_duration_range(arg, fo->opt == O_LATENCY ?
		    FAULT_LATENCY_MAX_MS : INT64_MAX, (int64_t *)(void *)(f + fo->off),
		    (int64_t *)(void *)(f + fo->off_max), why);
		break;
	case F_BYTES:
		rc = parse_bytes(arg, (int64_t *)(void *)(f + fo->off), why);
		break;
	case F_COUNTS:
		if ((rc = parse_count_range(arg, 1, CFG_EVENTS_MAX, &lo, &hi,
		    why)) == 0) {
			*(uint32_t *)(void *)(f + fo->off) = (uint32_t)lo;
			*(uint32_t *)(void *)(f + fo->off_max) = (uint32_t)hi;
		}
		break;
	}
	if (rc == -1)
		return errf(err, "--%s: %s", opt_name(fo->opt), why);
	if (fo->band)
		o->bands = true;
	return 0;
}

static int
protocol_option(const char *arg, enum cfg_protocol *proto, char *err)
{
	static const char *const names[] = { "auto", "http", "tcp",
	    "postgres" };
	static const enum cfg_protocol vals[] = { CFG_PROTO_AUTO,
	    CFG_PROTO_HTTP, CFG_PROTO_TCP, CFG_PROTO_POSTGRES };
	size_t	i;

	for (i = 0; i < nitems(names); i++)
		if (strcmp(arg, names[i]) == 0) {
			*proto = vals[i];
			return 0;
		}
	return errf(err, "bad protocol \"%s\" (auto, http, tcp or postgres)", arg);
}

/* --statuses 429,500,529: HTTP error statuses. */
static int
statuses_option(const char *arg, struct cfg_faults *f, char *err)
{
	const char	*p = arg, *comma;
	char		 one[16], why[ERR_LEN];
	int64_t		 v;
	size_t		 n;

	for (f->nstatuses = 0; ; p = comma + 1) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (f->nstatuses == CFG_STATUSES_MAX)
			return errf(err, "--statuses: more than %d statuses",
			    CFG_STATUSES_MAX);
		snprintf(one, sizeof(one), "%.*s", (int)(n < sizeof(one) ? n :
		    sizeof(one) - 1), p);
		if (n >= sizeof(one) || parse_count(one, 400, 599, &v, why) == -1)
			return errf(err, "--statuses: %s (a list of HTTP error "
			    "statuses, e.g. 429,500,529)", why);
		f->statuses[f->nstatuses++] = (int)v;
		if (comma == NULL)
			return 0;
	}
}

/* The options that are not faults; 1 when ch is none of them. */
static int
plain_option(struct proxy_opts *o, int ch, const char *arg, char *err)
{
	char	why[ERR_LEN];

	switch (ch) {
	case O_LISTEN:
		o->listen = arg;
		return 0;
	case O_UPSTREAM:
		o->upstream = arg;
		return 0;
	case O_SEED:
		o->have_seed = true;
		if (seed_parse(arg, &o->seed, why) == -1)
			return errf(err, "--seed: %s", why);
		return 0;
	case O_TURN:
		if (parse_count(arg, 0, PROXY_MAX_TURN, &o->turn, why) == -1)
			return errf(err, "--turn: %s", why);
		return 0;
	case O_NAME:
		o->name = arg;
		return 0;
	case O_PROTOCOL:
		return protocol_option(arg, &o->protocol, err);
	case O_TRACE:
		o->trace = arg;
		return 0;
	case O_MATCH:
		o->faults.match = (char *)(uintptr_t)arg;	/* argv outlives o */
		return 0;
	case O_STATUSES:
		return statuses_option(arg, &o->faults, err);
	case 'v':
		o->verbose++;
		return 0;
	}
	return 1;
}

/*
 * argv into *o.  -1 with err set for a bad value, or with err empty when
 * getopt has already said what is wrong (the caller prints the usage).
 * -h stops here with o->help set.
 */
static int
proxy_options(int argc, char **argv, struct proxy_opts *o, char *err)
{
	size_t	i;
	int	ch, rc;

	memset(o, 0, sizeof(*o));
	o->name = "proxy";
	o->protocol = CFG_PROTO_AUTO;
	CFG_FAULTS_DEFAULTS(&o->faults);
	err[0] = '\0';
	optind = 1;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		if (ch == 'h') {
			o->help = true;
			return 0;
		}
		if ((rc = plain_option(o, ch, optarg, err)) == -1)
			return -1;
		if (rc == 0)
			continue;
		for (i = 0; i < nitems(fault_opts); i++)
			if (fault_opts[i].opt == ch)
				break;
		if (i == nitems(fault_opts))
			return -1;		/* getopt has said why */
		if (fault_option(o, &fault_opts[i], optarg, err) == -1)
			return -1;
	}
	if (optind < argc)
		return errf(err, "unexpected argument \"%s\"", argv[optind]);
	return 0;
}

/* What needs the options together: the required ones, the bands. */
static int
proxy_check(struct proxy_opts *o, char *err)
{
	struct cfg_faults	*f = &o->faults;
	double			 sum;

	if (o->listen == NULL || o->upstream == NULL || !o->have_seed)
		return errf(err, "--listen, --upstream and --seed are required");
	if (!o->bands && f->rate > 0) {
		/* seeds/000's Chaos: no 0.4, reset 0.3, yes twice 0.3 */
		f->lost_reply = 0.4;
		f->reset = 0.3;
		f->duplicate = 0.3;
	}
	sum = f->lost_reply + f->reset + f->duplicate + f->status +
	    f->stream_cut + f->stream_stall;
	if (sum > 1.0 + 1e-9)
		return errf(err, "--lost-reply + --reset + --duplicate + --status "
		    "+ --stream-cut + --stream-stall is %.3f, over 1", sum);
	return 0;
}

/*
 * The listener, up and announced.  SIGINT and SIGTERM are blocked before
 * the engine's loop thread starts, so it inherits the mask and only
 * proxy_serve's sigwait sees them.
 */
static struct proxy_set *
proxy_start(const struct proxy_opts *o, sigset_t *sigs, char *err)
{
	struct proxy_listen	 pl;
	struct proxy_set	*ps;

	memset(&pl, 0, sizeof(pl));
	pl.name = o->name;
	pl.proxy = 0;
	pl.turn = (int)o->turn;
	pl.listen = o->listen;
	pl.upstream = o->upstream;
	pl.protocol = o->protocol;
	pl.faults = &o->faults;		/* copied */
	sigemptyset(sigs);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	if ((ps = proxy_set_open(&pl, 1, o->seed, o->trace, err)) == NULL)
		return NULL;
	printf("listening on %s\n", proxy_set_listener_addr(ps, 0));
	fflush(stdout);
	return ps;
}

/* The engine's thread does the work; this one waits for the signal. */
static void
proxy_serve(const sigset_t *sigs)
{
	int	sig = 0;

	if (sigwait(sigs, &sig) != 0)
		log_warnx("sigwait failed");
	log_debug("signal %d: writing the trace and exiting", sig);
}

/* Stops the listener and writes the sorted trace. */
static void
proxy_shutdown(struct proxy_set *ps)
{
	proxy_set_close(ps);
}

int
cmd_proxy(int argc, char **argv)
{
	struct proxy_opts	 o;
	struct proxy_set	*ps;
	sigset_t		 sigs;
	char			 err[ERR_LEN];

	if (proxy_options(argc, argv, &o, err) == -1)
		goto bad;
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (proxy_check(&o, err) == -1)
		goto bad;
	log_init("proxy", o.verbose);
	if ((ps = proxy_start(&o, &sigs, err)) == NULL) {
		fprintf(stderr, "soak proxy: %s\n", err);
		return 1;
	}
	proxy_serve(&sigs);
	proxy_shutdown(ps);
	return 0;
bad:
	if (err[0] == '\0')
		usage(stderr);
	else
		fprintf(stderr, "soak proxy: %s\n", err);
	return SOAK_EXIT_USAGE;
}
