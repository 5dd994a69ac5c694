/*
 * A fault trace made into a plan (common/plan.h plan_from_trace): every
 * failing seed's plan.json and every --save-plan is made of the trace.jsonl
 * the worker's proxies wrote and a turn could scribble on, read through the
 * trace's one decoder (common/trace.h).  Input: the config's turns (first
 * byte, 1..64) and rounds (second, 1..8), then the trace's lines.
 * Checked:
 *  - a refusal says why;
 *  - a plan made of a trace is one soak can read back as it wrote it:
 *    plan_dump -> plan_parse (the strict reader of docs/plan.md "Reading a
 *    plan") takes it, and dumps the same text again;
 *  - its seed, turns and rounds are the ones asked for, and every fault
 *    and step it has is of a round and turn inside them.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/plan.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan	 p, q;
	char		 err[ERR_LEN], *t1, *t2;
	int		 turns, rounds;
	size_t		 i, j;

	if (size < 2)
		return 0;
	turns = 1 + data[0] % 64;
	rounds = 1 + data[1] % 8;
	err[0] = '\0';
	if (plan_from_trace((const char *)data + 2, size - 2, 77, "fuzz", turns,
	    rounds, &p, err) == -1) {
		FUZZ_CHECK(err[0] != '\0', "refused without saying why");
		return 0;
	}
	FUZZ_CHECK(p.seed == 77 && p.turns == turns && p.rounds == rounds,
	    "seed %llu, %d x %d, not 77, %d x %d", (unsigned long long)p.seed,
	    p.turns, p.rounds, turns, rounds);
	for (i = 0; i < p.nproxies; i++) {
		for (j = 0; j < p.proxies[i].nfaults; j++)
			FUZZ_CHECK(p.proxies[i].faults[j].round >= 0 &&
			    p.proxies[i].faults[j].round < rounds &&
			    p.proxies[i].faults[j].turn >= 0 &&
			    p.proxies[i].faults[j].turn < turns,
			    "a fault of round %d, turn %d", p.proxies[i].faults[j].round,
			    p.proxies[i].faults[j].turn);
		for (j = 0; j < p.proxies[i].nsteps; j++)
			FUZZ_CHECK(p.proxies[i].steps[j].round >= 0 &&
			    p.proxies[i].steps[j].round < rounds &&
			    p.proxies[i].steps[j].turn >= 0 &&
			    p.proxies[i].steps[j].turn < turns,
			    "a step of round %d, turn %d", p.proxies[i].steps[j].round,
			    p.proxies[i].steps[j].turn);
	}
	t1 = plan_dump(&p);
	FUZZ_CHECK(t1 != NULL, "the trace's plan does not dump");
	if (plan_parse(t1, strlen(t1), "plan.json", &q, err) == -1)
		FUZZ_CHECK(0, "the plan soak made of a trace is refused: %s\n%s",
		    err, t1);
	t2 = plan_dump(&q);
	FUZZ_CHECK(t2 != NULL && strcmp(t1, t2) == 0,
	    "dump -> parse -> dump differs:\n%s\n---\n%s", t1, t2);
	free(t1);
	free(t2);
	plan_free(&q);
	plan_free(&p);
	return 0;
}
