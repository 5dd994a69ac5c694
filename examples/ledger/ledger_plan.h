/*
 * The seeded choices of the ledger example, shared by ledger_setup (the
 * lesson prices), ledger_turn (each turn's operation) and the simulation
 * that counts how often a seed holds a given order of operations
 * (tests/helpers/ledger_mix.c), so the three cannot drift apart.
 */
#ifndef LEDGER_PLAN_H
#define LEDGER_PLAN_H

#include <stdint.h>

#define NSTUDENTS	4	/* the last is on a billing freeze */
#define NLESSONS	10
#define NROUNDS		5	/* the day[] below; soak.yaml's rounds */
#define NHOURS		3	/* rounds 0-2 teach, 3-4 are the evening */
#define PERHOUR		2	/* lessons 1-2 in hour 0, 3-4 in 1, 5-6 in 2 */

enum op { OP_MARK, OP_CLEAR, OP_NOSHOW, OP_CANCEL, OP_PAY, OP_REDELIVER, NOPS };

/*
 * A school day is five rounds: three teaching hours (rounds 0-2), two
 * lessons an hour, then the evening (rounds 3-4).  In an hour, teachers
 * mark attendance at the lessons running now and an office cancels some of
 * them (the teacher is ill), so a mark and a cancellation of one lesson
 * meet in one round in most seeds: the race of the share lock.  In the
 * evening the journal of the day is tidied (clears, no-show refunds) over
 * every lesson taught, so a lesson marked, then cancelled, is then cleared:
 * the double refund.  Payments and redeliveries come at any time; lessons
 * 7-10 are not on today's timetable.  Percentages.
 */
static const int ledger_day[NROUNDS][NOPS] = {
	/* mark clear noshow cancel pay redeliver */
	{ 60,  0,  0, 25,  8,  7 },
	{ 60,  0,  0, 25,  8,  7 },
	{ 60,  0,  0, 25,  8,  7 },
	{  5, 40, 40,  0,  8,  7 },
	{  5, 40, 40,  0,  8,  7 },
};

struct ledger_plan {
	enum op	op;
	int	student;	/* 1..NSTUDENTS */
	int	lesson;		/* 1..NLESSONS */
	int	k;		/* which of the student's three payments */
};

/* splitmix64, the stream of SOAK_TURN_SEED (and of SOAK_SEED for prices) */
static inline uint64_t
ledger_next(uint64_t *rng)
{
	uint64_t	z = (*rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * One turn's operation from its stream (seeded with SOAK_TURN_SEED); the
 * stream goes on to the turn's think times.
 */
static inline void
ledger_plan(uint64_t *rng, int round, struct ledger_plan *p)
{
	const int	*w = ledger_day[round % NROUNDS];
	int		 roll, op, h, l;

	roll = (int)(ledger_next(rng) % 100);
	for (op = 0; op < NOPS - 1 && roll >= w[op]; op++)
		roll -= w[op];
	p->op = (enum op)op;
	p->student = 1 + (int)(ledger_next(rng) % NSTUDENTS);
	h = round % NROUNDS;
	if (h < NHOURS && (op == OP_MARK || op == OP_CANCEL))
		l = PERHOUR * h + (int)(ledger_next(rng) % PERHOUR);
	else
		l = (int)(ledger_next(rng) % (PERHOUR * (h < NHOURS ? h + 1 : NHOURS)));
	p->lesson = 1 + l;
	p->k = (int)(ledger_next(rng) % 3);
}

/*
 * The lessons' prices for SOAK_SEED, price[1..NLESSONS]: lesson NLESSONS is
 * always free and about a quarter of the others are.
 */
static inline void
ledger_prices(uint64_t seed, int price[NLESSONS + 1])
{
	uint64_t	rng = seed ^ 0x6c6564676572ULL;	/* "ledger" */
	int		i;

	price[0] = 0;
	for (i = 1; i <= NLESSONS; i++)
		price[i] = i == NLESSONS || ledger_next(&rng) % 4 == 0 ?
		    0 : 100 * (int)(2 + ledger_next(&rng) % 6);
}

#endif
