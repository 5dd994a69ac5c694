/*
 * Recovery from a damaged journal (coordinator/journal.h), resumed more
 * than once: a run's journal whose last line a kill tore is resumed, the
 * resumed coordinator appends and is killed mid-line again, and resumed
 * again.  Each resume sees every whole event once, in order, and leaves a
 * file of whole lines only, so the next one can read it; a bad line
 * anywhere but the end is an error that names it, never dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/journal.h"

struct seen {
	int	results[16];	/* seed of each result line, in order */
	int	nresults;
	int	nresumes;
};

static int
count(enum jev type, json_t *e, void *arg, char *err)
{
	struct seen	*s = arg;

	(void)err;
	if (type == JEV_RESUME)
		s->nresumes++;
	else if (type == JEV_RESULT && s->nresults < 16)
		s->results[s->nresults++] =
		    (int)json_integer_value(json_object_get(e, "seed"));
	return 0;
}

static char *
path_of(const char *dir)
{
	return xasprintf("%s/%s", dir, JOURNAL_NAME);
}

/* Cuts the file's last line in the middle: its newline and half of it go. */
static void
tear(const char *dir)
{
	char	*p = path_of(dir), buf[8192];
	FILE	*f = fopen(p, "r");
	size_t	 n, last = 0, i;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > 2 && buf[n - 1] == '\n');
	for (i = 0; i + 1 < n; i++)
		if (buf[i] == '\n')
			last = i + 1;
	assert_int_equal(truncate(p, (off_t)(last + (n - last) / 2)), 0);
	free(p);
}

/* Every line of the file is a whole JSON object ending in '\n'. */
static int
whole_lines(const char *dir)
{
	char		*p = path_of(dir), *line = NULL;
	size_t		 cap = 0;
	ssize_t		 n;
	int		 lines = 0;
	FILE		*f = fopen(p, "r");
	json_t		*e;

	assert_non_null(f);
	while ((n = getline(&line, &cap, f)) != -1) {
		if (line[n - 1] != '\n')
			fail_msg("%s: line %d is cut short: [%s]", p, lines + 1, line);
		if ((e = json_loadb(line, (size_t)n, 0, NULL)) == NULL)
			fail_msg("%s: line %d is not JSON: [%s]", p, lines + 1, line);
		json_decref(e);
		lines++;
	}
	free(line);
	fclose(f);
	free(p);
	return lines;
}

static void
result(struct journal *j, int seed)
{
	journal_append(j, JEV_RESULT, json_pack("{s:i, s:s}", "seed", seed, "verdict", "pass"));
}

static void
test_torn_twice(void **state)
{
	char		 dir[] = "/tmp/soak-journal-torn.XXXXXX", err[ERR_LEN];
	struct journal	*j;
	struct seen	 s;
	json_t		*head;
	char		*p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	j = journal_create(dir, json_pack("{s:i, s:s}", "format", 1, "run_id", "r1"), err);
	assert_non_null(j);
	result(j, 0);
	result(j, 1);
	result(j, 2);
	assert_int_equal(journal_close(j, err), 0);

	/* The first kill tore seed 2's line. */
	tear(dir);
	memset(&s, 0, sizeof(s));
	j = journal_resume(dir, &head, count, &s, err);
	if (j == NULL)
		fail_msg("the first resume: %s", err);
	json_decref(head);
	assert_int_equal(s.nresults, 2);
	assert_int_equal(s.results[0], 0);
	assert_int_equal(s.results[1], 1);
	assert_int_equal(s.nresumes, 0);
	result(j, 2);	/* run again: it had no verdict */
	result(j, 3);
	assert_int_equal(journal_close(j, err), 0);
	/* head, 0, 1, resume, 2, 3 */
	assert_int_equal(whole_lines(dir), 6);

	/* The second kill tore seed 3's line. */
	tear(dir);
	memset(&s, 0, sizeof(s));
	j = journal_resume(dir, &head, count, &s, err);
	if (j == NULL)
		fail_msg("the second resume: %s", err);
	json_decref(head);
	assert_int_equal(s.nresults, 3);
	assert_int_equal(s.results[2], 2);
	assert_int_equal(s.nresumes, 1);
	result(j, 3);
	assert_int_equal(journal_close(j, err), 0);
	assert_int_equal(whole_lines(dir), 7);

	/* And a third resume, of an untorn file, sees all of it. */
	memset(&s, 0, sizeof(s));
	j = journal_resume(dir, &head, count, &s, err);
	if (j == NULL)
		fail_msg("the third resume: %s", err);
	json_decref(head);
	assert_int_equal(s.nresults, 4);
	assert_int_equal(s.nresumes, 2);
	assert_int_equal(journal_close(j, err), 0);

	p = path_of(dir);
	unlink(p);
	free(p);
	rmdir(dir);
}

/* A bad line that is not the last is the journal's damage, not a tear. */
static void
test_bad_middle(void **state)
{
	char		 dir[] = "/tmp/soak-journal-torn.XXXXXX", err[ERR_LEN];
	struct journal	*j;
	struct seen	 s;
	json_t		*head;
	char		*p;
	FILE		*f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	j = journal_create(dir, json_pack("{s:i}", "format", 1), err);
	assert_non_null(j);
	result(j, 0);
	assert_int_equal(journal_close(j, err), 0);
	p = path_of(dir);
	f = fopen(p, "a");
	fputs("{\"t\":\"result\",\"se\n{\"t\":\"result\",\"seed\":1}\n", f);
	fclose(f);
	memset(&s, 0, sizeof(s));
	assert_null(journal_resume(dir, &head, count, &s, err));
	if (strstr(err, "journal.jsonl:3: not a journal line") == NULL)
		fail_msg("the error does not name line 3: %s", err);
	unlink(p);
	free(p);
	rmdir(dir);
}

/* The file size limit, for a write that fails (EFBIG, as ENOSPC would). */
static void
fsize_limit(rlim_t n)
{
	struct rlimit	rl;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = n;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/*
 * A journal that cannot be written: its head unwritable, the run is not
 * created (said why, no file left); a line written in part later is cut off
 * again, nothing more is written, and the close says so; the file left is
 * a valid journal of the run so far.
 */
static void
test_write_fails(void **state)
{
	char		 dir[] = "/tmp/soak-journal-fail.XXXXXX", err[ERR_LEN] = "";
	char		 path[sizeof(dir) + 32], *want;
	struct journal	*j;
	struct seen	 s;
	struct stat	 st;
	json_t		*head;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	signal(SIGXFSZ, SIG_IGN);
	fsize_limit(0);
	j = journal_create(dir, json_pack("{s:i}", "format", 1), err);
	fsize_limit(RLIM_INFINITY);
	assert_null(j);
	want = xasprintf("cannot write %s: File too large", path);
	assert_string_equal(err, want);
	free(want);
	assert_int_equal(stat(path, &st), -1);		/* no head: no run */

	j = journal_create(dir, json_pack("{s:i}", "format", 1), err);
	assert_non_null(j);
	result(j, 0);
	assert_null(journal_failed(j));
	assert_int_equal(stat(path, &st), 0);
	fsize_limit((rlim_t)st.st_size + 10);		/* the next line, in part */
	result(j, 1);
	fsize_limit(RLIM_INFINITY);
	assert_non_null(journal_failed(j));
	assert_non_null(strstr(journal_failed(j), "File too large"));
	result(j, 2);					/* after a hole: never */
	err[0] = '\0';
	assert_int_equal(journal_close(j, err), -1);
	assert_non_null(strstr(err, "cannot write"));
	memset(&s, 0, sizeof(s));
	j = journal_resume(dir, &head, count, &s, err);
	assert_non_null(j);
	assert_int_equal(s.nresults, 1);
	assert_int_equal(s.results[0], 0);
	json_decref(head);
	err[0] = 'x';
	assert_int_equal(journal_close(j, err), 0);	/* a good one closes clean */
	/* no journal (a run without --out's journal): every call a no-op */
	journal_tick(NULL);
	journal_append(NULL, JEV_RESULT, json_object());
	assert_null(journal_failed(NULL));
	assert_int_equal(journal_close(NULL, err), 0);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torn_twice),
		cmocka_unit_test(test_bad_middle),
		cmocka_unit_test(test_write_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
