/*
 * Fault kinds: the one vocabulary of what a fault proxy can do to an
 * exchange or a connection (docs/faults.md).  The names are the strings of
 * the fault trace ("fault"), of plans, of the config's fault keys and of
 * coverage; the table in fault.c is their only home, and fault_parse their
 * only reader.  A new kind goes here first: every switch over enum fault
 * (the page's marks, the coverage's shares, the stories' words) then names
 * itself in the build's warnings.
 */
#ifndef SOAK_FAULT_H
#define SOAK_FAULT_H

enum fault {
	FAULT_NONE,		/* no fault (a latency alone is not a fault) */
	FAULT_LOST_REPLY,	/* the upstream did it, the client got no reply */
	FAULT_RESET,		/* the connection reset before the upstream saw it */
	FAULT_DUPLICATE,	/* the request sent to the upstream twice */
	FAULT_BLACKHOLE,	/* a connection that swallows everything */
	FAULT_STATUS,		/* HTTP: the proxy answered with an error status,
				   the upstream never saw the request */
	FAULT_STREAM_CUT,	/* a streamed reply cut after K events */
	FAULT_STREAM_STALL,	/* a streamed reply stopped after K events for a
				   while, then resumed */
	/*
	 * Last: the stream fault a config applies, never a decision of a
	 * plan's (common/plan.h takes the kinds before it).
	 */
	FAULT_CLOSE_AFTER,	/* a connection closed after its byte count */
	FAULT_MAX
};

/*
 * The longest latency soak adds to an exchange: an hour, in the config
 * (faults.latency, soak proxy --latency), the fault trace and a plan, so
 * whatever a proxy records a plan can hold.
 */
#define FAULT_LATENCY_MAX_MS	3600000

/* The kind's name ("lost_reply"); "?" for a value out of range. */
const char	*fault_name(enum fault f);
/* The kind named s, exactly (no case folding, no space), or -1. */
int		 fault_parse(const char *s, enum fault *f);

#endif
