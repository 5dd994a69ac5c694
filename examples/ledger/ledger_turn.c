/*
 * One billing operation of seeds/002 per turn per round, picked from
 * SOAK_TURN_SEED (which differs per round): mark, clear, no-show refund,
 * cancel, pay, or a redelivered pay (the same provider payment id twice),
 * with odds that follow a school day (ledger_plan.h).
 *
 * The lock order that keeps writes out of a cycle (seeds/002): marks,
 * clears and no-show refunds lock the student FOR NO KEY UPDATE, then the
 * lesson FOR SHARE; a cancellation locks only the lesson FOR UPDATE, so it
 * waits for the marks and clears already in flight on that lesson.  Every
 * operation "thinks" a few ms between its reads and its writes, as the real
 * code does, so the windows are as wide as production's.
 *
 *   ledger_turn                    fixed
 *   ledger_turn --no-cancel-guard  as shipped: clearing does not refuse a
 *                                  cancelled lesson (mark, cancel, clear
 *                                  refunds the student twice)
 *   mutants, each removing one defence of the fixed turn:
 *     --no-share-lock    the lesson is read without FOR SHARE
 *     --no-pay-check     a redelivered payment is credited again
 *     --no-freeze-check  a student on a billing freeze is charged
 *
 * The no-show refund is "the next feature" of the seed's comment: a path
 * that reverses a charge and forgot the cancelled-lesson rule.  It relies on
 * the unique index on reverses_id (schema.sql) to turn a second reversal
 * into an error at insert, which it reports as a refusal.
 *
 * Exit 0: done (or nothing to do); 1: refused because the lesson is
 * cancelled (the only error the test accepts); 2: any other failure, also
 * written to op_failure so an invariant sees it; 75: no database.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "ledger_plan.h"

enum outcome { DONE = 0, REFUSED = 1, FAILED = 2 };

static uint64_t	 rng;
static PGconn	*conn;
static char	 who[32];
static char	 err_state[8], err_msg[512];	/* the last SQL failure */
static bool	 cancel_guard = true, share_lock = true, pay_check = true,
		 freeze_check = true;

/* The operation's own work between what it read and what it writes. */
static void
think(void)
{
	struct timespec	ts = { 0, (long)(1 + ledger_next(&rng) % 4) * 1000000 };

	while (nanosleep(&ts, &ts) == -1)
		;
}

/*
 * One statement with text parameters.  NULL on failure, with the SQLSTATE
 * and message kept for op_failure.
 */
static PGresult *
sql(const char *q, int n, const char *const *p)
{
	PGresult	*r = PQexecParams(conn, q, n, NULL, p, NULL, NULL, 0);
	ExecStatusType	 s = PQresultStatus(r);
	const char	*st;

	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
		return r;
	st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	snprintf(err_state, sizeof(err_state), "%s", st ? st : "");
	snprintf(err_msg, sizeof(err_msg), "%s", PQerrorMessage(conn));
	err_msg[strcspn(err_msg, "\n")] = '\0';
	PQclear(r);
	return NULL;
}

/* A statement whose rows we do not need. */
static int
run(const char *q, int n, const char *const *p)
{
	PGresult	*r = sql(q, n, p);

	PQclear(r);
	return r ? 0 : -1;
}

/* Records the high-water mark of the ledger, then commits. */
static int
commit(void)
{
	if (run("INSERT INTO ledger_seen (n, seen_by) "
	    "SELECT count(*), $1 FROM ledger_transaction", 1,
	    (const char *[]){ who }) == -1)
		return -1;
	return run("COMMIT", 0, NULL);
}

/* Locks the student FOR NO KEY UPDATE; *frozen says whether billing is. */
static int
lock_student(const char *student, bool *frozen)
{
	PGresult	*r = sql("SELECT billing_frozen FROM student WHERE id = $1 "
	    "FOR NO KEY UPDATE", 1, &student);

	if (r == NULL)
		return -1;
	*frozen = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return 0;
}

/* Reads the lesson under FOR SHARE (the lock a cancellation waits for). */
static int
lock_lesson_shared(const char *lesson, int *price, bool *cancelled)
{
	PGresult	*r = sql(share_lock ?
	    "SELECT price, is_cancelled FROM class_session WHERE id = $1 FOR SHARE" :
	    "SELECT price, is_cancelled FROM class_session WHERE id = $1", 1, &lesson);

	if (r == NULL)
		return -1;
	*price = atoi(PQgetvalue(r, 0, 0));
	*cancelled = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	PQclear(r);
	return 0;
}

static enum outcome
mark(const char *student, const char *lesson)
{
	PGresult	*r;
	bool		 frozen, cancelled;
	int		 price;
	char		 amount[16];

	if (run("BEGIN", 0, NULL) == -1 || lock_student(student, &frozen) == -1 ||
	    lock_lesson_shared(lesson, &price, &cancelled) == -1)
		return FAILED;
	if (cancelled)
		return REFUSED;
	think();
	if ((r = sql("INSERT INTO attendance (student_id, class_session_id) VALUES ($1, $2) "
	    "ON CONFLICT DO NOTHING", 2, (const char *[]){ student, lesson })) == NULL)
		return FAILED;
	if (strcmp(PQcmdTuples(r), "1") != 0) {		/* already marked */
		PQclear(r);
		return commit() == 0 ? DONE : FAILED;
	}
	PQclear(r);
	snprintf(amount, sizeof(amount), "%d", -price);
	if (price > 0 && !(frozen && freeze_check) &&
	    run("INSERT INTO ledger_transaction (student_id, class_session_id, kind, amount, created_by) "
	    "VALUES ($1, $2, 'LESSON_CHARGE', $3, $4)", 4,
	    (const char *[]){ student, lesson, amount, who }) == -1)
		return FAILED;
	return commit() == 0 ? DONE : FAILED;
}

/*
 * Clears a mark and reverses the lesson's charge.  noshow: the teacher did
 * not show, same effect, from the path that forgot the cancelled-lesson
 * rule and leans on the unique index instead.
 */
static enum outcome
clear(const char *student, const char *lesson, bool noshow)
{
	PGresult	*r;
	bool		 frozen, cancelled;
	int		 price;
	char		 charge[32], amount[16];

	if (run("BEGIN", 0, NULL) == -1 || lock_student(student, &frozen) == -1 ||
	    lock_lesson_shared(lesson, &price, &cancelled) == -1)
		return FAILED;
	/* The fix: the cancellation already reversed the charge. */
	if (cancelled && cancel_guard && !noshow)
		return REFUSED;
	if ((r = sql("DELETE FROM attendance WHERE student_id = $1 AND class_session_id = $2",
	    2, (const char *[]){ student, lesson })) == NULL)
		return FAILED;
	if (strcmp(PQcmdTuples(r), "1") != 0) {		/* nothing marked */
		PQclear(r);
		return commit() == 0 ? DONE : FAILED;
	}
	PQclear(r);
	if ((r = sql("SELECT id, amount FROM ledger_transaction WHERE student_id = $1 "
	    "AND class_session_id = $2 AND kind = 'LESSON_CHARGE' ORDER BY id DESC LIMIT 1",
	    2, (const char *[]){ student, lesson })) == NULL)
		return FAILED;
	if (PQntuples(r) == 0) {			/* free, or frozen */
		PQclear(r);
		return commit() == 0 ? DONE : FAILED;
	}
	snprintf(charge, sizeof(charge), "%s", PQgetvalue(r, 0, 0));
	snprintf(amount, sizeof(amount), "%d", -atoi(PQgetvalue(r, 0, 1)));
	PQclear(r);
	think();
	if (run("INSERT INTO ledger_transaction (student_id, class_session_id, kind, amount, "
	    "reverses_id, created_by) VALUES ($1, $2, 'CHARGE_REVERSAL', $3, $4, $5)", 5,
	    (const char *[]){ student, lesson, amount, charge, who }) == -1)
		/* already reversed: the index said no instead of a wrong net */
		return noshow && strcmp(err_state, "23505") == 0 ? REFUSED : FAILED;
	return commit() == 0 ? DONE : FAILED;
}

static enum outcome
cancel(const char *lesson)
{
	PGresult	*r;
	char		 ids[1024];

	if (run("BEGIN", 0, NULL) == -1 ||
	    (r = sql("SELECT is_cancelled FROM class_session WHERE id = $1 FOR UPDATE",
	    1, &lesson)) == NULL)
		return FAILED;
	if (strcmp(PQgetvalue(r, 0, 0), "t") == 0) {	/* already: nothing to do */
		PQclear(r);
		return commit() == 0 ? DONE : FAILED;
	}
	PQclear(r);
	if (run("UPDATE class_session SET is_cancelled = true WHERE id = $1", 1, &lesson) == -1)
		return FAILED;
	/* The nets after the lock wait: the charges nobody reversed yet. */
	if ((r = sql("SELECT coalesce(array_agg(c.id), '{}') FROM ledger_transaction c "
	    "WHERE c.class_session_id = $1 AND c.kind = 'LESSON_CHARGE' AND NOT EXISTS "
	    "(SELECT 1 FROM ledger_transaction v WHERE v.reverses_id = c.id)",
	    1, &lesson)) == NULL)
		return FAILED;
	snprintf(ids, sizeof(ids), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	think();
	if (run("INSERT INTO ledger_transaction (student_id, class_session_id, kind, amount, "
	    "reverses_id, created_by) SELECT student_id, class_session_id, 'CHARGE_REVERSAL', "
	    "-amount, id, $2 FROM ledger_transaction WHERE id = ANY ($1::bigint[]) ORDER BY id",
	    2, (const char *[]){ ids, who }) == -1)
		return FAILED;
	return commit() == 0 ? DONE : FAILED;
}

/* Credits a provider payment once, however often the provider delivers it. */
static enum outcome
pay(const char *student, const char *payment, const char *amount)
{
	PGresult	*r;
	bool		 frozen;

	if (run("BEGIN", 0, NULL) == -1 || lock_student(student, &frozen) == -1)
		return FAILED;
	if (pay_check) {
		if ((r = sql("SELECT 1 FROM ledger_transaction WHERE provider_payment_id = $1",
		    1, &payment)) == NULL)
			return FAILED;
		if (PQntuples(r) > 0) {			/* a redelivery */
			PQclear(r);
			return commit() == 0 ? DONE : FAILED;
		}
		PQclear(r);
	}
	think();
	if (run("INSERT INTO ledger_transaction (student_id, kind, amount, provider_payment_id, "
	    "created_by) VALUES ($1, 'PAYMENT', $2, $3, $4)", 4,
	    (const char *[]){ student, amount, payment, who }) == -1)
		return FAILED;
	return commit() == 0 ? DONE : FAILED;
}

int
main(int argc, char **argv)
{
	const char	*seed = getenv("SOAK_TURN_SEED"), *turn = getenv("SOAK_TURN");
	const char	*round = getenv("SOAK_ROUND"), *opname, *db, *colon;
	char		 student[16], lesson[16], payment[32], amount[16], host[64];
	enum outcome	 out;
	struct ledger_plan plan;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-cancel-guard") == 0)
			cancel_guard = false;
		else if (strcmp(argv[i], "--no-share-lock") == 0)
			share_lock = false;
		else if (strcmp(argv[i], "--no-pay-check") == 0)
			pay_check = false;
		else if (strcmp(argv[i], "--no-freeze-check") == 0)
			freeze_check = false;
		else {
			fprintf(stderr, "usage: ledger_turn [--no-cancel-guard] [--no-share-lock] "
			    "[--no-pay-check] [--no-freeze-check]\n");
			return 75;
		}
	}
	if (seed == NULL || turn == NULL || round == NULL) {
		fprintf(stderr, "run me under soak (SOAK_TURN_SEED is not set)\n");
		return 75;
	}
	rng = strtoull(seed, NULL, 10);
	snprintf(who, sizeof(who), "r%st%s", round, turn);
	ledger_plan(&rng, atoi(round), &plan);
	snprintf(student, sizeof(student), "%d", plan.student);
	snprintf(lesson, sizeof(lesson), "%d", plan.lesson);
	snprintf(payment, sizeof(payment), "pay_%s_%d", student, plan.k);
	snprintf(amount, sizeof(amount), "%d", 1000 + 250 * plan.k);

	/* PG* from soak land us in our schema; through the fault proxy when
	 * the config has one in front of the database (SOAK_PROXY_DB). */
	if ((db = getenv("SOAK_PROXY_DB")) != NULL &&
	    (colon = strrchr(db, ':')) != NULL && colon - db < (int)sizeof(host)) {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - db), db);
		conn = PQconnectdbParams((const char *[]){ "host", "port", NULL },
		    (const char *[]){ host, colon + 1, NULL }, 0);
	} else
		conn = PQconnectdb("");
	if (PQstatus(conn) != CONNECTION_OK) {
		fprintf(stderr, "connect: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return 75;
	}
	switch (plan.op) {
	case OP_MARK:
		opname = "mark";
		out = mark(student, lesson);
		break;
	case OP_CLEAR:
		opname = "clear";
		out = clear(student, lesson, false);
		break;
	case OP_NOSHOW:
		opname = "noshow";
		out = clear(student, lesson, true);
		break;
	case OP_CANCEL:
		opname = "cancel";
		out = cancel(lesson);
		break;
	case OP_PAY:
		opname = "pay";
		out = pay(student, payment, amount);
		break;
	default:
		opname = "redeliver";
		out = pay(student, payment, amount);
		if (out == DONE)
			out = pay(student, payment, amount);
		break;
	}
	if (strcmp(opname, "cancel") == 0)
		fprintf(stderr, "%s cancel lesson %s: ", who, lesson);
	else if (strncmp(opname, "pay", 3) == 0 || strcmp(opname, "redeliver") == 0)
		fprintf(stderr, "%s %s %s student %s: ", who, opname, payment, student);
	else
		fprintf(stderr, "%s %s student %s lesson %s: ", who, opname, student, lesson);
	if (out == DONE)
		fprintf(stderr, "done\n");
	else if (out == REFUSED) {
		fprintf(stderr, "refused: the lesson is cancelled\n");
		run("ROLLBACK", 0, NULL);
	} else {
		fprintf(stderr, "FAILED %s %s\n", err_state, err_msg);
		run("ROLLBACK", 0, NULL);
		if (run("INSERT INTO op_failure (turn, op, sqlstate, message) VALUES ($1, $2, $3, $4)",
		    4, (const char *[]){ who, opname, err_state, err_msg }) == -1)
			fprintf(stderr, "cannot record the failure: %s\n", err_msg);
	}
	PQfinish(conn);
	return out;
}
