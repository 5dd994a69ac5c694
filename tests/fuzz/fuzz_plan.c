/*
 * Plan files (common/plan.h plan_parse, docs/plan.md "Reading a plan"): a
 * failure's plan.json, a regression in regressions/, a plan a user wrote
 * or edited, any bytes.  Checked:
 *  - a refusal says why (err not empty);
 *  - an accepted plan means what its file says, so what soak writes of it
 *    reads back the same: parse -> dump -> parse -> dump gives the same
 *    text, and the second parse takes the first dump;
 *  - what it names is in range: turns and rounds at least 1, every run,
 *    fault and step of a round and turn inside them (a plan that runs no
 *    turn is refused, docs/plan.md), runs (when there are) at least one.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/plan.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

static void
check_ranges(const struct plan *p)
{
	size_t	i, j;

	FUZZ_CHECK(p->turns >= 1 && p->rounds >= 1, "turns %d, rounds %d",
	    p->turns, p->rounds);
	if (p->runs != NULL)
		FUZZ_CHECK(plan_runs_any(p), "a plan that runs no turn was taken");
	for (i = 0; i < p->nproxies; i++) {
		const struct plan_proxy	*x = &p->proxies[i];

		FUZZ_CHECK(x->name != NULL, "proxy %zu without a name", i);
		for (j = 0; j < x->nfaults; j++)
			FUZZ_CHECK(x->faults[j].round >= 0 &&
			    x->faults[j].round < p->rounds &&
			    x->faults[j].turn >= 0 && x->faults[j].turn < p->turns,
			    "proxy %s: fault %zu of round %d, turn %d", x->name, j,
			    x->faults[j].round, x->faults[j].turn);
		for (j = 0; j < x->nsteps; j++)
			FUZZ_CHECK(x->steps[j].round >= 0 &&
			    x->steps[j].round < p->rounds &&
			    x->steps[j].turn >= 0 && x->steps[j].turn < p->turns,
			    "proxy %s: step %zu of round %d, turn %d", x->name, j,
			    x->steps[j].round, x->steps[j].turn);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan	 p, q;
	char		 err[ERR_LEN], *t1, *t2;

	err[0] = '\0';
	if (plan_parse((const char *)data, size, "fuzz.json", &p, err) == -1) {
		FUZZ_CHECK(err[0] != '\0', "refused without saying why");
		return 0;
	}
	check_ranges(&p);
	t1 = plan_dump(&p);
	FUZZ_CHECK(t1 != NULL, "an accepted plan does not dump");
	if (plan_parse(t1, strlen(t1), "dump.json", &q, err) == -1)
		FUZZ_CHECK(0, "its own dump is refused: %s\n%s", err, t1);
	t2 = plan_dump(&q);
	FUZZ_CHECK(t2 != NULL && strcmp(t1, t2) == 0,
	    "parse -> dump -> parse -> dump differs:\n%s\n---\n%s", t1, t2);
	free(t1);
	free(t2);
	plan_free(&q);
	plan_free(&p);
	return 0;
}
