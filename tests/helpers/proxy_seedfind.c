/*
 * proxy_seedfind NAME RATE LOST RESET DUP FAULT[,FAULT...]
 * Prints the smallest seed whose rolls for turn 0, connection 0, exchanges
 * 0.. are exactly the given faults (none|lost_reply|reset|duplicate), so a
 * test can put a fault on one chosen exchange through the real roll.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault-proxy/proxy.h"

int
main(int argc, char **argv)
{
	struct cfg_faults	 f;
	struct proxy_roll	 r;
	char			*want[64], *s;
	int			 n = 0, i;
	uint64_t		 seed;

	if (argc != 7) {
		fprintf(stderr, "usage: proxy_seedfind NAME RATE LOST RESET DUP FAULTS\n");
		return 64;
	}
	memset(&f, 0, sizeof(f));
	f.rate = atof(argv[2]);
	f.lost_reply = atof(argv[3]);
	f.reset = atof(argv[4]);
	f.duplicate = atof(argv[5]);
	for (s = strtok(argv[6], ","); s != NULL && n < 64; s = strtok(NULL, ","))
		want[n++] = s;
	for (seed = 0; seed < 10000000; seed++) {
		for (i = 0; i < n; i++) {
			proxy_roll(&f, seed, argv[1], 0, 0, (uint32_t)i, &r);
			if (strcmp(fault_name((enum fault)r.fault), want[i]) != 0)
				break;
		}
		if (i == n) {
			printf("%llu\n", (unsigned long long)seed);
			return 0;
		}
	}
	return 1;
}
