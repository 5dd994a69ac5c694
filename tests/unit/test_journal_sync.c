/*
 * When coordinator/journal.c fsyncs (coordinator/journal.h): in batches
 * of JOURNAL_SYNC_LINES lines, or once the oldest line not yet fsync'd
 * has waited JOURNAL_SYNC_MS, whichever comes first: what a power cut
 * may lose is bounded by both.  Nothing in the file shows it, so this
 * binary counts its fsync(2) calls and runs on a clock of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "common/util.h"
#include "coordinator/journal.h"

/*
 * The executable's definitions take the place of libc's: fsync counts,
 * and CLOCK_MONOTONIC (now_ms) reads fake_ms once it is set, so that
 * "has waited" does not depend on how fast this machine runs the test.
 */
static int	nfsync;
static int64_t	fake_ms = -1;

int
fsync(int fd)
{
	nfsync++;
	return (int)syscall(SYS_fsync, fd);
}

int
clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk == CLOCK_MONOTONIC && fake_ms >= 0) {
		ts->tv_sec = fake_ms / 1000;
		ts->tv_nsec = (fake_ms % 1000) * 1000000;
		return 0;
	}
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void
line(struct journal *j, int seed)
{
	journal_append(j, JEV_RESULT, json_pack("{s:i}", "seed", seed));
}

/*
 * A line waits JOURNAL_SYNC_MS from when it was written, however many
 * follow it; a fresh one is not fsync'd at once.
 */
static void
test_sync_after_the_oldest_waited(void **state)
{
	char		 dir[] = "/tmp/soak-journal-sync.XXXXXX", err[ERR_LEN] = "";
	char		*path;
	struct journal	*j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_ms = 1000000;
	j = journal_create(dir, json_pack("{s:i}", "format", 1), err);
	assert_non_null(j);
	nfsync = 0;
	line(j, 0);
	journal_tick(j);
	assert_int_equal(nfsync, 0);		/* it has not waited */
	fake_ms += 60;
	line(j, 1);
	fake_ms += JOURNAL_SYNC_MS - 61;
	journal_tick(j);
	assert_int_equal(nfsync, 0);
	fake_ms += 1;				/* the first has waited */
	journal_tick(j);
	assert_int_equal(nfsync, 1);
	journal_tick(j);			/* nothing pending */
	assert_int_equal(nfsync, 1);
	fake_ms += 1000;			/* a new batch, its own clock */
	line(j, 2);
	fake_ms += JOURNAL_SYNC_MS - 1;
	journal_tick(j);
	assert_int_equal(nfsync, 1);
	fake_ms += 1;
	journal_tick(j);
	assert_int_equal(nfsync, 2);
	assert_int_equal(journal_close(j, err), 0);
	fake_ms = -1;
	path = xasprintf("%s/%s", dir, JOURNAL_NAME);
	unlink(path);
	free(path);
	rmdir(dir);
}

/* JOURNAL_SYNC_LINES lines written at once are fsync'd as the last is. */
static void
test_sync_a_full_batch(void **state)
{
	char		 dir[] = "/tmp/soak-journal-sync.XXXXXX", err[ERR_LEN] = "";
	char		*path;
	struct journal	*j;
	int		 i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fake_ms = 2000000;
	j = journal_create(dir, json_pack("{s:i}", "format", 1), err);
	assert_non_null(j);
	nfsync = 0;
	for (i = 0; i < JOURNAL_SYNC_LINES - 1; i++)
		line(j, i);
	assert_int_equal(nfsync, 0);
	line(j, i);
	assert_int_equal(nfsync, 1);
	nfsync = 0;
	assert_int_equal(journal_close(j, err), 0);	/* nothing pending */
	assert_int_equal(nfsync, 0);
	fake_ms = -1;
	path = xasprintf("%s/%s", dir, JOURNAL_NAME);
	unlink(path);
	free(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_after_the_oldest_waited),
		cmocka_unit_test(test_sync_a_full_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
