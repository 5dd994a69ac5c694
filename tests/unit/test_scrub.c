/*
 * Secrets out of captured text (common/scrub.h): every form libpq reads a
 * password in, the text around it kept, short passwords and those equal
 * to the role or database refused with a reason, JSON strings and keys;
 * a secret that extends another scrubbed whole (the longest tried first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/scrub.h"
#include "common/util.h"

#define PW	"Pw'd @/:x%y\\z"

static void
check(const struct scrub *sc, const char *in, const char *want)
{
	char	*t = xstrdup(in);

	scrub_text(sc, t);
	if (strcmp(t, want) != 0)
		fail_msg("scrub [%s]: got [%s], want [%s]", in, t, want);
	free(t);
}

static void
test_forms(void **state)
{
	struct scrub	*sc = scrub_new();
	char		 why[ERR_LEN];

	(void)state;
	assert_int_equal(scrub_add_conninfo(sc, "host=h user=soak dbname=shop "
	    "password='" "Pw\\'d @/:x%y\\\\z" "'", why), 0);
	assert_false(scrub_empty(sc));
	/* raw, as PGPASSWORD holds it */
	check(sc, "PGPASSWORD=" PW "\n", "PGPASSWORD=***\n");
	/* percent-encoded, upper and lower case, fully or in part */
	check(sc, "postgresql://soak:Pw%27d%20%40%2F%3Ax%25y%5Cz@h/shop",
	    "postgresql://soak:***@h/shop");
	check(sc, "postgresql://soak:Pw%27d%20%40%2f%3ax%25y%5cz@h/shop",
	    "postgresql://soak:***@h/shop");
	check(sc, "u=%50%77%27%64%20%40%2F%3A%78%25%79%5C%7A;",
	    "u=***;");
	check(sc, "q=Pw'd+@/:x%25y%5Cz&", "q=***&");
	/* keyword form: quoted with escapes, unquoted with escapes */
	check(sc, "password='Pw\\'d @/:x%y\\\\z' host=h", "password='***' host=h");
	check(sc, "password=Pw\\'d\\ @/:x%y\\\\z host=h", "password=*** host=h");
	/* JSON's escapes of a backslash */
	check(sc, "{\"pw\":\"Pw'd @/:x%y\\\\z\"}", "{\"pw\":\"***\"}");
	/* twice, and next to other text */
	check(sc, PW PW "|" PW, "******|***");
	/* a part of it is not it */
	check(sc, "Pw'd @/:x%y", "Pw'd @/:x%y");
	check(sc, "nothing here", "nothing here");
	assert_int_equal(scrub_reach(sc), 3 * strlen(PW));
	scrub_free(sc);
}

static void
test_refused(void **state)
{
	struct scrub	*sc = scrub_new();
	char		 why[ERR_LEN];

	(void)state;
	/* too short */
	assert_int_equal(scrub_add_conninfo(sc, "user=u password=abc", why), -1);
	assert_non_null(strstr(why, "the database password is 3 byte(s)"));
	/* the role's name, the database's */
	assert_int_equal(scrub_add_conninfo(sc, "postgresql://postgres:postgres@h/db",
	    why), -1);
	assert_non_null(strstr(why, "equals the role name \"postgres\""));
	assert_int_equal(scrub_add_conninfo(sc, "user=u dbname=shopdb password=shopdb",
	    why), -1);
	assert_non_null(strstr(why, "equals the database name"));
	assert_true(scrub_empty(sc));
	check(sc, "postgres postgres abc", "postgres postgres abc");
	/* none, or a string libpq refuses: nothing, no complaint */
	assert_int_equal(scrub_add_conninfo(sc, "host=h user=u", why), 0);
	assert_int_equal(scrub_add_conninfo(sc, NULL, why), 0);
	/* sslpassword counts; the same secret twice is one */
	assert_int_equal(scrub_add_conninfo(sc, "sslkey=k sslpassword=keypass9 "
	    "password=keypass9", why), 0);
	assert_int_equal(scrub_add(sc, "the shared secret", "keypass9", 8, why), 1);
	check(sc, "keypass9", "***");
	scrub_free(sc);
}

static void
test_json(void **state)
{
	struct scrub	*sc = scrub_new();
	char		 why[ERR_LEN], *s;
	json_t		*v;

	(void)state;
	assert_int_equal(scrub_add(sc, "the shared secret", "s3cr3t-hex-0123", 15, why), 0);
	v = json_pack("{s:s, s:[s, {s:s}], s:i, s:s}", "message", "a s3cr3t-hex-0123 b",
	    "rows", "x", "s3cr3t-hex-0123", "k", "n", 3, "u", "\xc3\xa9 s3cr3t-hex-0123");
	assert_int_equal(scrub_json(sc, v), 3);
	s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"message\":\"a *** b\",\"n\":3,\"rows\":[\"x\","
	    "{\"***\":\"k\"}],\"u\":\"\xc3\xa9 ***\"}");
	free(s);
	json_decref(v);
	scrub_free(sc);
}

/*
 * A secret that extends another (a key's passphrase that begins with the
 * password): the longer is tried first, whichever was added first, so no
 * tail of it is left beside the mark.
 */
static void
test_longest_first(void **state)
{
	static const char *const	 v[2] = { "hunter22", "hunter22-and-its-tail" };
	struct scrub			*sc;
	char				 why[ERR_LEN];
	int				 first;

	(void)state;
	for (first = 0; first < 2; first++) {
		sc = scrub_new();
		assert_int_equal(scrub_add(sc, "a secret", v[first], strlen(v[first]),
		    why), 0);
		assert_int_equal(scrub_add(sc, "another", v[!first], strlen(v[!first]),
		    why), 0);
		check(sc, "key=hunter22-and-its-tail;", "key=***;");
		check(sc, "pw=hunter22 key=hunter22-and-its-tail",
		    "pw=*** key=***");
		check(sc, "hunter22-and-its", "***-and-its");
		check(sc, "key=hunter22%2Dand-its-tail;", "key=***;");
		assert_int_equal(scrub_reach(sc), 3 * strlen(v[1]));
		scrub_free(sc);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_longest_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
