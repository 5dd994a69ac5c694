/*
 * common/util: deadline arithmetic, monotonic timed waits, and the private
 * roots soak creates and deletes under.  common/self: the paths of the
 * replay command (a path under a folder, a git work tree's top, the word
 * that runs this binary).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/self.h"
#include "common/util.h"

static char	tmpdir[] = "/tmp/soak-test-util-XXXXXX";

static int
group_setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	rm_rf(tmpdir);
	return 0;
}

/* The one decimal reader: every number soak parses goes through it. */
static void
test_dec_u64(void **state)
{
	const char	*s, *p;
	uint64_t	 v = 7;

	(void)state;
	s = "18446744073709551615";
	assert_int_equal(dec_u64(s, s + strlen(s), UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	s = "18446744073709551616";	/* 2^64: one past */
	assert_int_equal(dec_u64(s, s + strlen(s), UINT64_MAX, &v), -1);
	s = "99999999999999999999";
	assert_int_equal(dec_u64(s, s + strlen(s), UINT64_MAX, &v), -1);
	s = "9223372036854775808";	/* INT64_MAX + 1 */
	assert_int_equal(dec_u64(s, s + strlen(s), INT64_MAX, &v), -1);
	assert_int_equal(dec_u64(s, s + strlen(s), (uint64_t)INT64_MAX + 1, &v), 0);
	s = "10";
	assert_int_equal(dec_u64(s, s + 2, 9, &v), -1);
	assert_int_equal(dec_u64(s, s + 2, 10, &v), 0);
	assert_true(v == 10);
	s = "7";
	assert_int_equal(dec_u64(s, s + 1, 5, &v), -1);	/* one digit past */
	{
		const char	*bad[] = { "", " 1", "+1", "-1", "1x", "1 " };
		size_t		 i;

		for (i = 0; i < nitems(bad); i++) {
			v = 42;
			assert_int_equal(dec_u64(bad[i], bad[i] + strlen(bad[i]),
			    UINT64_MAX, &v), -1);
			assert_true(v == 42);
		}
	}
	s = "120ms";
	p = s;
	assert_int_equal(dec_digits(&p, s + strlen(s), UINT64_MAX, &v), 0);
	assert_true(v == 120);
	assert_ptr_equal(p, s + 3);
	p = s + 3;
	assert_int_equal(dec_digits(&p, s + strlen(s), UINT64_MAX, &v), 0);
	assert_true(v == 0);
	assert_ptr_equal(p, s + 3);
}

static void
test_utf8_decode(void **state)
{
	uint32_t	cp = 0;

	(void)state;
	assert_int_equal(utf8_decode("a", 1, &cp), 1);
	assert_int_equal(cp, 'a');
	assert_int_equal(utf8_decode("\xc3\xa9", 2, &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(utf8_decode("\xe2\x80\x94", 3, &cp), 3);
	assert_int_equal(cp, 0x2014);
	assert_int_equal(utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4);
	assert_int_equal(cp, 0x1f600);
	assert_int_equal(utf8_decode("\xf4\x8f\xbf\xbf", 4, NULL), 4);
	assert_int_equal(utf8_decode("\xe2\x80\x94", 2, NULL), 0);	/* cut */
	assert_int_equal(utf8_decode("", 1, NULL), 0);			/* NUL */
	assert_int_equal(utf8_decode("a", 0, NULL), 0);
	assert_int_equal(utf8_decode("\xc0\xaf", 2, NULL), 0);	/* overlong */
	assert_int_equal(utf8_decode("\xe0\x80\xaf", 3, NULL), 0);
	assert_int_equal(utf8_decode("\xf0\x80\x80\xaf", 4, NULL), 0);
	assert_int_equal(utf8_decode("\xed\xa0\x80", 3, NULL), 0);	/* surrogate */
	assert_int_equal(utf8_decode("\xf4\x90\x80\x80", 4, NULL), 0);
	assert_int_equal(utf8_decode("\x80", 1, NULL), 0);
	assert_int_equal(utf8_decode("\xc3(", 2, NULL), 0);
}

/*
 * The one cutter (issue 38): whole characters that fit, a character that
 * does not fit left out whole, a byte that is not UTF-8 as '?', in place
 * too; what comes out always decodes.
 */
static void
test_utf8_cut(void **state)
{
	char	buf[8], in[16];

	(void)state;
	assert_int_equal(utf8_cut(buf, sizeof(buf), "abc", 3), 3);
	assert_string_equal(buf, "abc");
	/* "abcde" + "é" (2 bytes): 7 bytes fit, all of it */
	assert_int_equal(utf8_cut(buf, sizeof(buf), "abcde\xc3\xa9", 7), 7);
	assert_string_equal(buf, "abcde\xc3\xa9");
	/* "abcdef" + "é": the é would end past 7 bytes, so it goes whole */
	assert_int_equal(utf8_cut(buf, sizeof(buf), "abcdef\xc3\xa9", 8), 6);
	assert_string_equal(buf, "abcdef");
	/* "€" (3 bytes) at 5..7: left out, never half */
	assert_int_equal(utf8_cut(buf, sizeof(buf), "abcde\xe2\x82\xac", 8), 5);
	assert_string_equal(buf, "abcde");
	/* a stray byte, a Latin-1 é, a character cut before: '?' each */
	assert_int_equal(utf8_cut(buf, sizeof(buf), "a\xff\xe9" "b\xe2\x82", 6), 6);
	assert_string_equal(buf, "a??b??");
	/* a NUL inside n is no character either */
	assert_int_equal(utf8_cut(buf, sizeof(buf), "a\0b", 3), 3);
	assert_string_equal(buf, "a?b");
	/* in place */
	memcpy(in, "x\xc3\xa9\x80y", 6);
	assert_int_equal(utf8_cut(in, 6, in, 5), 5);
	assert_string_equal(in, "x\xc3\xa9?y");
	assert_int_equal(utf8_cut(buf, 1, "abc", 3), 0);
	assert_string_equal(buf, "");
	buf[0] = 'z';
	assert_int_equal(utf8_cut(buf, 0, "abc", 3), 0);
	assert_int_equal(buf[0], 'z');
}

/*
 * JSON strings' hand writer: quotes, backslashes and controls escaped,
 * UTF-8 as it is, a byte that is not UTF-8 as U+FFFD, all or nothing.
 */
static void
test_jsonstr_put(void **state)
{
	char	buf[64];
	size_t	o = 0;

	(void)state;
	strcpy(buf, "[");
	o = 1;
	assert_int_equal(jsonstr_put(buf, sizeof(buf), &o, "a\"b\\c\n\x1b\x7f"), 0);
	assert_string_equal(buf, "[a\\\"b\\\\c\\u000a\\u001b\\u007f");
	o = 0;
	assert_int_equal(jsonstr_put(buf, sizeof(buf), &o,
	    "caf\xc3\xa9 caf\xe9 \xe2\x82"), 0);
	assert_string_equal(buf, "caf\xc3\xa9 caf\xef\xbf\xbd \xef\xbf\xbd"
	    "\xef\xbf\xbd");
	assert_int_equal(o, strlen(buf));
	/* does not fit: -1, *o and the text as they were */
	strcpy(buf, "ab");
	o = 2;
	assert_int_equal(jsonstr_put(buf, 6, &o, "\x01"), -1);
	assert_int_equal(o, 2);
	assert_string_equal(buf, "ab");
	assert_int_equal(jsonstr_put(buf, 6, &o, "xyz"), 0);
	assert_string_equal(buf, "abxyz");
	assert_int_equal(jsonstr_put(buf, 6, &o, "q"), -1);
	assert_string_equal(buf, "abxyz");
}

static void
test_cmp_u64(void **state)
{
	uint64_t	v[] = { UINT64_MAX, 3, 0, (uint64_t)1 << 63, 3 };

	(void)state;
	qsort(v, nitems(v), sizeof(v[0]), cmp_u64);
	assert_true(v[0] == 0 && v[1] == 3 && v[2] == 3 &&
	    v[3] == (uint64_t)1 << 63 && v[4] == UINT64_MAX);
}

static void
test_ms_until(void **state)
{
	int64_t	now = now_ms();
	int	left;

	(void)state;
	assert_int_equal(ms_until(now - 1), 0);
	assert_int_equal(ms_until(INT64_MIN), 0);
	assert_int_equal(ms_until(INT64_MAX), INT_MAX);
	assert_int_equal(ms_until(now + (int64_t)INT_MAX * 4), INT_MAX);
	left = ms_until(now + 1500);
	assert_true(left > 1000 && left <= 1500);
}

static void
test_deadline_within(void **state)
{
	int64_t	now = now_ms(), d;

	(void)state;
	/* The phase's own limit when it comes first ... */
	d = deadline_within(now + 60000, 1000);
	assert_true(d >= now + 1000 && d < now + 2000);
	/* ... the enclosing deadline when that does ... */
	assert_int_equal(deadline_within(now + 500, 10000), now + 500);
	/* ... and one that passed stays passed. */
	assert_int_equal(deadline_within(now - 10, 10000), now - 10);
	/* No limit of its own, or one that would overflow: the deadline. */
	assert_int_equal(deadline_within(now + 5, -1), now + 5);
	assert_int_equal(deadline_within(INT64_MAX, INT64_MAX), INT64_MAX);
	d = deadline_within(INT64_MAX, 2000);
	assert_true(d >= now + 2000 && d < now + 3000);
}

/* A timed wait on a monotonic cv ends after its time on that clock. */
static void
test_cond_monotonic(void **state)
{
	pthread_mutex_t	mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t	cv;
	struct timespec	ts;
	int64_t		t0, took;
	int		rv;

	(void)state;
	assert_int_equal(cond_init_monotonic(&cv), 0);
	pthread_mutex_lock(&mu);
	t0 = now_ms();
	abstime_mono_in(&ts, 50);
	do
		rv = pthread_cond_timedwait(&cv, &mu, &ts);
	while (rv == 0);
	took = now_ms() - t0;
	pthread_mutex_unlock(&mu);
	assert_int_equal(rv, ETIMEDOUT);
	assert_true(took >= 49);
	/* A realtime instant would lie decades ahead of the monotonic clock,
	 * or behind it: either way not 50 ms. */
	assert_true(took < 5000);
	pthread_cond_destroy(&cv);
}

static char *
path_in(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void
test_private_dir_creates(void **state)
{
	struct stat	 st;
	char		 err[ERR_LEN] = "";
	char		*p = path_in("fresh/deeper/root");

	(void)state;
	if (private_dir(p, err) == -1)
		fail_msg("private_dir: %s", err);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 077, 0);
	/* Again: ours, so accepted. */
	if (private_dir(p, err) == -1)
		fail_msg("private_dir on its own directory: %s", err);
	free(p);
}

static void
test_private_dir_refuses_symlink(void **state)
{
	char	 err[ERR_LEN] = "";
	char	*target = path_in("elsewhere"), *p = path_in("linked");

	(void)state;
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "symbolic link"));
	/* A dangling one too: mkdir(2) would not follow it, nor may we. */
	unlink(p);
	assert_int_equal(symlink("/nonexistent/soak-test", p), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, "symbolic link"));
	free(target);
	free(p);
}

static void
test_private_dir_refuses_writable(void **state)
{
	char	 err[ERR_LEN] = "";
	char	*p = path_in("shared");

	(void)state;
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "writable by its group and others (mode 0777)"));
	assert_int_equal(chmod(p, 0770), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, "writable by its group"));
	/* Readable by others is no threat to what soak writes there. */
	assert_int_equal(chmod(p, 0755), 0);
	if (private_dir(p, err) == -1)
		fail_msg("private_dir on a 0755 directory of ours: %s", err);
	free(p);
}

static void
test_private_dir_refuses_file(void **state)
{
	char	 err[ERR_LEN] = "";
	char	*p = path_in("a-file");

	(void)state;
	assert_int_equal(write_file(p, "x", 1, err), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, "not a directory"));
	free(p);
}

/* Another owner's directory: only root can make one to test with. */
static void
test_private_dir_refuses_other_owner(void **state)
{
	char	 err[ERR_LEN] = "";
	char	*p = path_in("theirs");

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "# not root: cannot make a directory of another owner\n");
		free(p);
		skip();
	}
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(private_dir(p, err), -1);
	assert_non_null(strstr(err, "owned by uid 65534"));
	free(p);
}

static void
test_path_under(void **state)
{
	char	*r;

	(void)state;
	assert_string_equal(r = path_under("/a/b/c.yaml", "/a"), "b/c.yaml");
	free(r);
	assert_string_equal(r = path_under("/a/b/c.yaml", "/a/"), "b/c.yaml");
	free(r);
	assert_string_equal(r = path_under("/a/b", "/a/b"), ".");
	free(r);
	assert_string_equal(r = path_under("/a/b", "/"), "a/b");
	free(r);
	assert_null(path_under("/ab/c", "/a"));		/* a prefix, not a folder */
	assert_null(path_under("/x/c", "/a"));
}

static void
test_git_toplevel(void **state)
{
	char	*top = path_in("repo"), *mid, *deep, *git, *r;

	(void)state;
	mid = xasprintf("%s/x", top);
	deep = xasprintf("%s/x/y", top);
	git = xasprintf("%s/.git", top);
	assert_int_equal(mkdir(top, 0700), 0);
	assert_int_equal(mkdir(mid, 0700), 0);
	assert_int_equal(mkdir(deep, 0700), 0);
	/* A worktree's .git is a file: a top all the same. */
	assert_int_equal(write_file(git, "gitdir: /elsewhere\n", 19, NULL), 0);
	assert_string_equal(r = git_toplevel(deep), top);
	free(r);
	assert_string_equal(r = git_toplevel(top), top);
	free(r);
	/* The nearest one wins (a submodule in a repository). */
	free(git);
	git = xasprintf("%s/.git", mid);
	assert_int_equal(mkdir(git, 0700), 0);
	assert_string_equal(r = git_toplevel(deep), mid);
	free(r);
	free(mid);
	free(deep);
	free(git);
	free(top);
}

static void
test_self_command(void **state)
{
	char	exe[PATH_MAX], *r, *dir, *base;

	(void)state;
	assert_non_null(realpath("/proc/self/exe", exe));
	/* Run by its absolute path: that path, from anywhere. */
	self_init(exe);
	assert_string_equal(r = self_command(NULL), exe);
	free(r);
	assert_string_equal(r = self_command("/"), exe);
	free(r);
	/* From its folder, under a base: "./" and the rest. */
	dir = xstrdup(exe);
	*strrchr(dir, '/') = '\0';
	base = xstrdup(dir);
	*strrchr(base, '/') = '\0';
	r = self_command(base);
	assert_int_equal(strncmp(r, "./", 2), 0);
	assert_string_equal(r + 2, exe + strlen(base) + 1);
	free(r);
	/* A name the shell would not find on PATH: the absolute path. */
	setenv("PATH", "/nonexistent-soak-path", 1);
	self_init("soak-unit-test-not-on-path");
	assert_string_equal(r = self_command(NULL), exe);
	free(r);
	/* Found on PATH: the bare name. */
	setenv("PATH", dir, 1);
	self_init(strrchr(exe, '/') + 1);
	assert_string_equal(r = self_command(NULL), strrchr(exe, '/') + 1);
	free(r);
	/* An argv[0] that is another program: the absolute path. */
	self_init("/bin/sh");
	assert_string_equal(r = self_command(NULL), exe);
	free(r);
	free(dir);
	free(base);
}

/*
 * A file made in an output folder where someone planted a symlink under
 * its name (or its temporary's): the symlink is replaced, what it pointed
 * to is untouched (file_create_at, file_put_at, fopen_new).
 */
static void
test_no_follow(void **state)
{
	char		 dir[] = "/tmp/soak-nofollow.XXXXXX", err[ERR_LEN], buf[64];
	char		*victim, *link, *got;
	struct stat	 st;
	size_t		 len;
	FILE		*f;
	int		 dfd, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	victim = xasprintf("%s/victim", dir);
	assert_int_equal(write_file(victim, "mine", 4, err), 0);
	assert_int_equal(mkdir(link = xasprintf("%s/out", dir), 0755), 0);
	free(link);
	link = xasprintf("%s/out/a", dir);
	assert_int_equal(symlink(victim, link), 0);
	free(link);
	link = xasprintf("%s/out/b.tmp", dir);
	assert_int_equal(symlink(victim, link), 0);
	free(link);
	link = xasprintf("%s/out/c", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_true((dfd = open(got = xasprintf("%s/out", dir), O_RDONLY | O_DIRECTORY)) >= 0);
	free(got);
	assert_true((fd = file_create_at(dfd, "a", 0644, err)) >= 0);
	assert_int_equal(write_all(fd, "new", 3), 0);
	close(fd);
	assert_int_equal(file_put_at(dfd, "b", "new", 3, 0644, err), 0);
	assert_non_null(f = fopen_new(link, 0644, err));
	fputs("new", f);
	fclose(f);
	assert_non_null(got = read_file(victim, 64, &len, err));
	assert_string_equal(got, "mine");
	free(got);
	for (fd = 0; fd < 3; fd++) {
		snprintf(buf, sizeof(buf), "%s", fd == 0 ? "a" : fd == 1 ? "b" : "c");
		assert_int_equal(fstatat(dfd, buf, &st, AT_SYMLINK_NOFOLLOW), 0);
		assert_true(S_ISREG(st.st_mode));
	}
	close(dfd);
	free(link);
	free(victim);
	assert_int_equal(rm_rf(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dec_u64),
		cmocka_unit_test(test_utf8_decode),
		cmocka_unit_test(test_utf8_cut),
		cmocka_unit_test(test_jsonstr_put),
		cmocka_unit_test(test_cmp_u64),
		cmocka_unit_test(test_ms_until),
		cmocka_unit_test(test_deadline_within),
		cmocka_unit_test(test_cond_monotonic),
		cmocka_unit_test(test_private_dir_creates),
		cmocka_unit_test(test_private_dir_refuses_symlink),
		cmocka_unit_test(test_private_dir_refuses_writable),
		cmocka_unit_test(test_private_dir_refuses_file),
		cmocka_unit_test(test_private_dir_refuses_other_owner),
		cmocka_unit_test(test_path_under),
		cmocka_unit_test(test_git_toplevel),
		cmocka_unit_test(test_self_command),
		cmocka_unit_test(test_no_follow),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
