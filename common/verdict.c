#include "common/verdict.h"

#include <string.h>

#include "common/msg.h"

static const struct {
	const char	*name;
	int		 verdict;	/* enum msg_verdict */
} reasons[REASON_MAX] = {
	[REASON_NONE] =		{ "",		VERDICT_PASS },
	[REASON_INVARIANT] =	{ "invariant",	VERDICT_FAIL },
	[REASON_GUARD] =	{ "guard",	VERDICT_FAIL },
	[REASON_HANG] =		{ "hang",	VERDICT_FAIL },
	[REASON_CRASH] =	{ "crash",	VERDICT_FAIL },
	[REASON_DB] =		{ "db",		VERDICT_INFRA },
	[REASON_SETUP] =	{ "setup",	VERDICT_INFRA },
	[REASON_SERVICE] =	{ "service",	VERDICT_INFRA },
	[REASON_PROXY] =	{ "proxy",	VERDICT_INFRA },
	[REASON_EXEC] =		{ "exec",	VERDICT_INFRA },
	[REASON_TEMPFAIL] =	{ "tempfail",	VERDICT_INFRA },
	[REASON_WORKER_LOST] =	{ "worker-lost", VERDICT_INFRA },
};

const char *
reason_name(enum reason r)
{
	if ((unsigned)r >= REASON_MAX)
		return "?";
	return reasons[r].name;
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
