/*
 * ledger_mix FIRST LAST [TURNS]
 * How often the ledger example's operation mix holds the orders its
 * mutants need, counted over seeds FIRST..LAST from the turns' own seeded
 * choices (examples/ledger/ledger_plan.h, SOAK_TURN_SEED as the worker
 * derives it), without a database.  Rounds are applied in turn order; the
 * pair a mutant needs within one round is looked for in the state at the
 * round's start, where the real turns of that round all begin.
 *
 *   pair       a mark of a priced lesson by a billable student not yet
 *              marked there, or a clear of a charged mark, and a cancel of
 *              the same lesson, in one round (no-share-lock)
 *   guard      a clear of a mark whose charge a cancellation reversed
 *              (no-cancel-guard)
 *   noshow     a no-show refund of such a mark (no-unique)
 *   redeliver  a redelivered payment (no-pay-check)
 *   frozen     the frozen student marked on a priced lesson (no-freeze-check)
 *   refused    more than 40 % of the turns refused (the fixed ledger's
 *              guard, min_ok_turns: 60 %), counting a mark or clear of a
 *              cancelled lesson and a no-show refund of a reversed charge
 *
 * Prints one line per seed (seed and the orders it holds), then the totals.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/seed.h"
#include "examples/ledger/ledger_plan.h"

enum { NONE, CHARGED, CANCEL_REVERSED, CLEARED };
enum { PAIR, GUARD, NOSHOW, REDELIVER, FROZEN, REFUSED, NKINDS };
static const char *const kind_name[NKINDS] = {
	"pair", "guard", "noshow", "redeliver", "frozen", "refused"
};

int
main(int argc, char **argv)
{
	struct ledger_plan	 p[64];
	uint64_t		 first, last, seed, rng;
	int			 turns, round, t, u, price[NLESSONS + 1], total[NKINDS];
	int			 charge[NSTUDENTS + 1][NLESSONS + 1], k, nseeds = 0, refused;
	bool			 marked[NSTUDENTS + 1][NLESSONS + 1];
	bool			 cancelled[NLESSONS + 1], has[NKINDS];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: ledger_mix FIRST LAST [TURNS]\n");
		return 64;
	}
	first = strtoull(argv[1], NULL, 10);
	last = strtoull(argv[2], NULL, 10);
	turns = argc == 4 ? atoi(argv[3]) : 6;
	if (turns < 1 || turns > 64)
		return 64;
	memset(total, 0, sizeof(total));
	for (seed = first; seed <= last; seed++, nseeds++) {
		ledger_prices(seed, price);
		memset(charge, 0, sizeof(charge));
		memset(marked, 0, sizeof(marked));
		memset(cancelled, 0, sizeof(cancelled));
		memset(has, 0, sizeof(has));
		refused = 0;
		for (round = 0; round < NROUNDS; round++) {
			for (t = 0; t < turns; t++) {
				rng = seed_turn(seed, round, t);
				ledger_plan(&rng, round, &p[t]);
			}
			/* Within the round, against its starting state. */
			for (t = 0; t < turns; t++) {
				int	s = p[t].student, l = p[t].lesson;
				bool	racer = false;

				switch (p[t].op) {
				case OP_MARK:
					racer = !cancelled[l] && !marked[s][l] &&
					    price[l] > 0 && s != NSTUDENTS;
					if (!cancelled[l] && !marked[s][l] && price[l] > 0 &&
					    s == NSTUDENTS)
						has[FROZEN] = true;
					break;
				case OP_CLEAR:
					racer = !cancelled[l] && charge[s][l] == CHARGED;
					if (marked[s][l] && charge[s][l] == CANCEL_REVERSED)
						has[GUARD] = true;
					break;
				case OP_NOSHOW:
					if (marked[s][l] && charge[s][l] == CANCEL_REVERSED)
						has[NOSHOW] = true;
					break;
				case OP_REDELIVER:
					has[REDELIVER] = true;
					break;
				default:
					break;
				}
				for (u = 0; racer && u < turns; u++)
					if (p[u].op == OP_CANCEL && p[u].lesson == l)
						has[PAIR] = true;
			}
			/* Then in turn order. */
			for (t = 0; t < turns; t++) {
				int	s = p[t].student, l = p[t].lesson;

				switch (p[t].op) {
				case OP_MARK:
					refused += cancelled[l];
					if (cancelled[l] || marked[s][l])
						break;
					marked[s][l] = true;
					if (price[l] > 0 && s != NSTUDENTS)
						charge[s][l] = CHARGED;
					break;
				case OP_CLEAR:
				case OP_NOSHOW:
					refused += cancelled[l] && p[t].op == OP_CLEAR;
					refused += p[t].op == OP_NOSHOW && marked[s][l] &&
					    charge[s][l] == CANCEL_REVERSED;
					if ((cancelled[l] && p[t].op == OP_CLEAR) || !marked[s][l])
						break;
					marked[s][l] = false;
					if (charge[s][l] == CHARGED)
						charge[s][l] = CLEARED;
					break;
				case OP_CANCEL:
					cancelled[l] = true;
					for (s = 1; s <= NSTUDENTS; s++)
						if (charge[s][l] == CHARGED)
							charge[s][l] = CANCEL_REVERSED;
					break;
				default:
					break;
				}
			}
		}
		has[REFUSED] = refused * 10 > turns * NROUNDS * 4;
		printf("%llu", (unsigned long long)seed);
		for (k = 0; k < NKINDS; k++) {
			total[k] += has[k];
			if (has[k])
				printf(" %s", kind_name[k]);
		}
		printf("\n");
	}
	printf("seeds %d", nseeds);
	for (k = 0; k < NKINDS; k++)
		printf(" %s %d (%.0f%%)", kind_name[k], total[k],
		    100.0 * total[k] / nseeds);
	printf("\n");
	return 0;
}
