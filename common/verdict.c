#include "common/verdict.h"

#include <stdio.h>
#include <string.h>

#include "common/msg.h"

static const struct {
	const char	*name;
	int		 verdict;	/* enum msg_verdict */
	const char	*what;		/* in words, for the summary */
} reasons[REASON_MAX] = {
	[REASON_NONE] =		{ "",		VERDICT_PASS,	"passed" },
	[REASON_INVARIANT] =	{ "invariant",	VERDICT_FAIL,	"an invariant broke" },
	[REASON_GUARD] =	{ "guard",	VERDICT_FAIL,	"too few turns succeeded" },
	[REASON_HANG] =		{ "hang",	VERDICT_FAIL,	"still running at seed_timeout" },
	[REASON_CRASH] =	{ "crash",	VERDICT_FAIL,	"a turn died of a signal" },
	[REASON_DB] =		{ "db",		VERDICT_INFRA,	"the database failed" },
	[REASON_SETUP] =	{ "setup",	VERDICT_INFRA,	"the setup command failed" },
	[REASON_SERVICE] =	{ "service",	VERDICT_INFRA,	"a service would not start or died" },
	[REASON_PROXY] =	{ "proxy",	VERDICT_INFRA,	"a fault proxy would not start" },
	[REASON_EXEC] =		{ "exec",	VERDICT_INFRA,	"a turn could not be executed" },
	[REASON_TEMPFAIL] =	{ "tempfail",	VERDICT_INFRA,	"a turn exited 75 (its environment broke)" },
	[REASON_WORKER_LOST] =	{ "worker-lost", VERDICT_INFRA,	"the worker died mid-seed" },
	[REASON_DIVERGED] =	{ "diverged",	VERDICT_INFRA,	"a plan's next step could not come" },
	[REASON_PLAN] =		{ "plan",	VERDICT_INFRA,	"the worker's copy of a regression is not the lease's" },
	[REASON_CASSETTE] =	{ "cassette",	VERDICT_INFRA,	"a model request its cassette has no answer for" },
	[REASON_TRACE] =	{ "trace",	VERDICT_INFRA,	"soak could not read its own fault trace" },
};

const char *
reason_name(enum reason r)
{
	if ((unsigned)r >= REASON_MAX)
		return "?";
	return reasons[r].name;
}

const char *
reason_what(enum reason r)
{
	if ((unsigned)r >= REASON_MAX)
		return "unknown";
	return reasons[r].what;
}

int
reason_parse(const char *s)
{
	int	r;

	if (s == NULL)
		return -1;
	for (r = 0; r < REASON_MAX; r++)
		if (strcmp(reasons[r].name, s) == 0)
			return r;
	return -1;
}

int
reason_verdict(enum reason r)
{
	if ((unsigned)r >= REASON_MAX)
		return -1;
	return reasons[r].verdict;
}

bool
reason_valid(int verdict, int reason)
{
	return reason >= 0 && reason < REASON_MAX &&
	    reasons[reason].verdict == verdict;
}

const char *
verdict_pass_words(char *buf, size_t len, long long ok, long long total)
{
	snprintf(buf, len, "%lld of %lld turns ok", ok, total);
	return buf;
}
