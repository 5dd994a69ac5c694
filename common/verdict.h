/*
 * Why a seed ended as it did: the one vocabulary of verdict reasons
 * (docs/results.md "Reading the results").  Each reason belongs to exactly one
 * verdict, so a reason says its verdict; the names are the strings of the
 * wire (RESULT.reason), report.json, junit.xml and tickets, and the table
 * in verdict.c is their only home.
 */
#ifndef SOAK_VERDICT_H
#define SOAK_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

enum reason {
	REASON_NONE,		/* "": pass */
	/* fail: a domain failure, never retried away */
	REASON_INVARIANT,	/* rows came back from an invariant */
	REASON_GUARD,		/* too few turns succeeded */
	REASON_HANG,		/* still running at seed_timeout, and the
				   database answered a probe then */
	REASON_CRASH,		/* a turn died of a signal */
	/* infra: the environment broke, retried on another worker */
	REASON_DB,		/* database connect, reset, DDL, check; or
				   no answer to the probe at seed_timeout:
				   not hang, since a dead database is not
				   the system's hang (docs/results.md "One
				   deadline per seed"; worker/seedrun.c,
				   deadline_passed) */
	REASON_SETUP,		/* the setup command */
	REASON_SERVICE,		/* a service would not start or died */
	REASON_PROXY,		/* a fault proxy would not start */
	REASON_EXEC,		/* a turn could not be executed */
	REASON_TEMPFAIL,	/* a turn exited 75 */
	REASON_WORKER_LOST,	/* the worker died mid-seed, or spoke nonsense */
	REASON_DIVERGED,	/* a plan's next step cannot come (docs/plan.md):
				   the seed cannot test it */
	REASON_PLAN,		/* a regression's plan the worker has is not
				   the lease's (its hash), or is not there */
	REASON_CASSETTE,	/* a replaying proxy met a model request its
				   cassette has no answer for (docs/models.md):
				   never passed on to the real API */
	REASON_TRACE,		/* soak could not read its own fault trace of
				   the seed: nothing it says of the seed's
				   exchanges (coverage, plan) can be had */
	REASON_MAX
};

/* The reason's name; "" for REASON_NONE, "?" for a value out of range. */
const char	*reason_name(enum reason r);
/* The reason in a few words ("a turn could not be executed"), for people. */
const char	*reason_what(enum reason r);
/* The reason named s (exactly, "" is REASON_NONE), or -1. */
int		 reason_parse(const char *s);
/* The verdict (enum msg_verdict) a reason belongs to; -1 out of range. */
int		 reason_verdict(enum reason r);
/*
 * Whether (verdict, reason) is a coherent claim, reason being an enum
 * reason or reason_parse's -1: pass goes with REASON_NONE alone, fail and
 * infra each with their own reasons.
 */
bool		 reason_valid(int verdict, int reason);

/*
 * The message of a plain pass, "K of N turns ok", into buf (64 bytes
 * hold any): the one place it is worded.  The worker says it of every
 * pass (worker/seedrun.c); the coordinator keeps a pass whose message is
 * exactly this as its two counts and words it again (coordinator/coord.c).
 */
const char	*verdict_pass_words(char *buf, size_t len, long long ok,
		    long long total);

#endif
