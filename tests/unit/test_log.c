/*
 * log_escape (common/log.h): what a peer sends reaches a log as one line
 * of printable text, every byte still told apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/log.h"

static const char *
esc(const char *s)
{
	static char	buf[LOG_ESC_LEN];

	return log_escape(buf, sizeof(buf), s);
}

static void
test_controls_and_lines(void **state)
{
	(void)state;
	assert_string_equal(esc("worker-1:42"), "worker-1:42");
	assert_string_equal(esc("evil\x1b[31m\nsoak: fake line"),
	    "evil\\x1b[31m\\nsoak: fake line");
	assert_string_equal(esc("a\rb\tc\x7f\x01"), "a\\rb\\tc\\x7f\\x01");
	assert_string_equal(esc("back\\slash"), "back\\\\slash");
	assert_string_equal(esc(NULL), "(null)");
	assert_string_equal(esc(""), "");
}

static void
test_utf8(void **state)
{
	(void)state;
	/* Valid UTF-8 stays: é, €, U+1F600. */
	assert_string_equal(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* Not UTF-8: a lone continuation, a cut sequence, an overlong '/', a
	 * surrogate, past U+10FFFF, 0xff. */
	assert_string_equal(esc("\x80"), "\\x80");
	assert_string_equal(esc("\xe2\x82"), "\\xe2\\x82");
	assert_string_equal(esc("\xc0\xaf"), "\\xc0\\xaf");
	assert_string_equal(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	assert_string_equal(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	assert_string_equal(esc("\xff"), "\\xff");
	/* Valid but layout: C1 CSI (U+009B), LINE SEPARATOR, RLO. */
	assert_string_equal(esc("\xc2\x9b" "31m"), "\\xc2\\x9b31m");
	assert_string_equal(esc("a\xe2\x80\xa8" "b"), "a\\xe2\\x80\\xa8b");
	assert_string_equal(esc("\xe2\x80\xae" "cod.exe"), "\\xe2\\x80\\xaecod.exe");
}

static void
test_cut(void **state)
{
	char	buf[12], big[4 * LOG_ESC_LEN];

	(void)state;
	/* Cut with "...", never inside an escape or a UTF-8 sequence. */
	assert_string_equal(log_escape(buf, sizeof(buf), "0123456789ab"), "01234567...");
	assert_string_equal(log_escape(buf, sizeof(buf), "0123456789a"), "0123456789a");
	assert_string_equal(log_escape(buf, sizeof(buf), "012345\x1b\x1b"), "012345...");
	assert_string_equal(log_escape(buf, sizeof(buf), "0123456\xc3\xa9xyz"),
	    "0123456...");
	assert_string_equal(log_escape(buf, sizeof(buf), "012345\xc3\xa9xyzw"),
	    "012345\xc3\xa9...");
	assert_string_equal(log_escape(buf, 4, "abcdef"), "...");
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_true(strlen(esc(big)) < LOG_ESC_LEN);
	assert_string_equal(esc(big) + strlen(esc(big)) - 3, "...");
}

/* log_escape_put's text: f's bytes, whole. */
static char *
put(const char *s, size_t len, int flags)
{
	char	*text = NULL;
	size_t	 n;
	FILE	*f = open_memstream(&text, &n);

	assert_int_equal(log_escape_put(f, s, len, flags), 0);
	fclose(f);
	return text;
}

/*
 * A command's output of what others wrote (issue 38): whole, never cut;
 * the terminal's escapes (a window title, a cleared screen) as \xNN; a
 * NUL inside len and a character len cuts as bytes; a line break and a
 * backslash kept when the caller says so.
 */
static void
test_put(void **state)
{
	static const char	 title[] = "\033]0;pwned\007 \033[2J";
	char			 big[1000], *t;

	(void)state;
	t = put(title, strlen(title), 0);
	assert_string_equal(t, "\\x1b]0;pwned\\x07 \\x1b[2J");
	free(t);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	t = put(big, strlen(big), 0);
	assert_int_equal(strlen(t), sizeof(big) - 1);	/* no "..." */
	free(t);
	t = put("a\0b\xc3\xa9\xe2\x82", 7, 0);
	assert_string_equal(t, "a\\x00b\xc3\xa9\\xe2\\x82");
	free(t);
	t = put("caf\xc3\xa9", 4, 0);		/* the é cut by len */
	assert_string_equal(t, "caf\\xc3");
	free(t);
	t = put("l1\nl2\\\x1b\n", 8, LOG_ESC_LINES);
	assert_string_equal(t, "l1\nl2\\\\\\x1b\n");
	free(t);
	t = put("{\"a\":\"\\u001b\xc2\x9b\"}", 16, LOG_ESC_BACKSLASH);
	assert_string_equal(t, "{\"a\":\"\\u001b\\xc2\\x9b\"}");
	free(t);
	t = put(NULL, 3, 0);
	assert_string_equal(t, "(null)");
	free(t);
}

/* A log line quotes what it is given: the terminal's escapes go out
 * escaped, its backslashes and line breaks as they are. */
static void
test_log_line(void **state)
{
	char	buf[256];
	int	p[2], saved;
	ssize_t	n;

	(void)state;
	assert_int_equal(pipe(p), 0);
	saved = dup(2);
	assert_int_equal(dup2(p[1], 2), 2);
	log_init("t", 0);
	log_warnx("row %s", "\033]0;pwned\007 a\\b \xff");
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "t: warning: row \\x1b]0;pwned\\x07 a\\b \\xff\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_controls_and_lines),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_log_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
