/*
 * Fault kinds' names (fault.h).
 */
#include "common/fault.h"

#include <string.h>

static const char *const fault_names[FAULT_MAX] = {
	[FAULT_NONE] = "none",
	[FAULT_LOST_REPLY] = "lost_reply",
	[FAULT_RESET] = "reset",
	[FAULT_DUPLICATE] = "duplicate",
	[FAULT_BLACKHOLE] = "blackhole",
	[FAULT_STATUS] = "status",
	[FAULT_STREAM_CUT] = "stream_cut",
	[FAULT_STREAM_STALL] = "stream_stall",
	[FAULT_CLOSE_AFTER] = "close_after",
};

const char *
fault_name(enum fault f)
{
	if ((unsigned)f >= FAULT_MAX)
		return "?";
	return fault_names[f];
}

int
fault_parse(const char *s, enum fault *f)
{
	unsigned	i;

	for (i = 0; s != NULL && i < FAULT_MAX; i++)
		if (strcmp(s, fault_names[i]) == 0) {
			*f = (enum fault)i;
			return 0;
		}
	return -1;
}
