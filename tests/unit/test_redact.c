/*
 * Passwords out of what soak shows: common/conninfo.c (URI and keyword
 * forms, quotes and escapes as libpq reads them, percent-encoding, query
 * parameters, strings libpq refuses, message scrubbing) checked against
 * libpq's own parser, and cfg_text_redact (database.url in every YAML
 * style, everything else byte for byte, the hash).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "common/config.h"
#include "common/conninfo.h"
#include "common/util.h"

struct pair {
	const char	*in;
	const char	*want;
};

static void
check_pairs(const struct pair *v, size_t n)
{
	size_t	i;
	char	*got, *again;

	for (i = 0; i < n; i++) {
		got = conninfo_redact(v[i].in);
		if (strcmp(got, v[i].want) != 0)
			fail_msg("redact [%s]: got [%s], want [%s]", v[i].in, got,
			    v[i].want);
		again = conninfo_redact(got);
		if (strcmp(again, got) != 0)
			fail_msg("redact is not idempotent on [%s]: [%s]", got, again);
		assert_int_equal(conninfo_has_password(v[i].in),
		    strcmp(v[i].in, v[i].want) != 0);
		free(again);
		free(got);
	}
}

static void
test_uri(void **state)
{
	static const struct pair v[] = {
		{ "postgresql://u:secret@h/db", "postgresql://u:***@h/db" },
		{ "postgres://u:secret@h:5432/db?sslmode=require",
		  "postgres://u:***@h:5432/db?sslmode=require" },
		{ "postgresql://:secret@h", "postgresql://:***@h" },
		{ "postgresql://u:secret@h1:1,h2:2/db",
		  "postgresql://u:***@h1:1,h2:2/db" },
		{ "postgresql://u:secret@[::1]:5432/db",
		  "postgresql://u:***@[::1]:5432/db" },
		/* percent-encoded: the encoded form goes as a whole */
		{ "postgresql://u:p%40ss%2Fw%3A@h/db", "postgresql://u:***@h/db" },
		/* the query parameter, alone, among others, its key encoded */
		{ "postgresql://h/db?password=secret", "postgresql://h/db?password=***" },
		{ "postgresql://h/db?user=u&password=s%20t&sslmode=disable",
		  "postgresql://h/db?user=u&password=***&sslmode=disable" },
		{ "postgresql://h/db?pass%77ord=secret", "postgresql://h/db?pass%77ord=***" },
		{ "postgresql://u:a@h/db?password=b", "postgresql://u:***@h/db?password=***" },
		/* sslpassword, the passphrase of an encrypted sslkey, is one too */
		{ "postgresql://u@h/db?sslkey=k.pem&sslpassword=kp",
		  "postgresql://u@h/db?sslkey=k.pem&sslpassword=***" },
		{ "postgresql://h/db?sslpass%77ord=kp", "postgresql://h/db?sslpass%77ord=***" },
		/* nothing to hide */
		{ "postgresql://u@h/db", "postgresql://u@h/db" },
		{ "postgresql://h:5432/db", "postgresql://h:5432/db" },
		{ "postgresql://", "postgresql://" },
		{ "postgresql://u:@h/db", "postgresql://u:@h/db" },
		{ "postgresql://h/db?password=", "postgresql://h/db?password=" },
		{ "postgresql://h/db?passwordx=1&xpassword=2",
		  "postgresql://h/db?passwordx=1&xpassword=2" },
		{ "postgresql://u@h/db?application_name=a@b",
		  "postgresql://u@h/db?application_name=a@b" },
		/* libpq would refuse or misread these; the password still goes */
		{ "POSTGRESQL://u:secret@h/db", "POSTGRESQL://u:***@h/db" },
		{ " postgresql://u:secret@h", " postgresql://u:***@h" },
		{ "postgresql://u:se/cret@h/db", "postgresql://u:***@h/db" },
		{ "postgresql://u:se@cret@h/db", "postgresql://u:***@h/db" },
		{ "postgresql://u:p%zz@h/db", "postgresql://u:***@h/db" },
		{ "postgresql://h/db?password=a=b", "postgresql://h/db?password=***" },
		{ "postgresql://h?x=a:b@c/db?password=z",
		  "postgresql://h?x=a:***@c/db?password=***" },
	};

	(void)state;
	check_pairs(v, nitems(v));
}

static void
test_keywords(void **state)
{
	static const struct pair v[] = {
		{ "host=h password=secret dbname=d", "host=h password=*** dbname=d" },
		{ "password = secret", "password = ***" },
		{ "\tpassword=secret\n", "\tpassword=***\n" },
		{ "password='sec ret' host=h", "password='***' host=h" },
		{ "password='it\\'s' host=h", "password='***' host=h" },
		{ "password=se\\ cret host=h", "password=*** host=h" },
		{ "password=a password=b", "password=*** password=***" },
		{ "sslkey=k.pem sslpassword=kp host=h", "sslkey=k.pem sslpassword=*** host=h" },
		{ "sslpassword = 'k p' password=pw", "sslpassword = '***' password=***" },
		{ "user=password password=pw", "user=password password=***" },
		/* libpq: the value after "= " is the next word */
		{ "password= host=h", "password= ***" },
		/* nothing to hide */
		{ "password='' host=h", "password='' host=h" },
		{ "password=", "password=" },
		{ "host=h", "host=h" },
		{ "", "" },
		{ "passwordx=1 xpassword=2 PASSWORD=3", "passwordx=1 xpassword=2 PASSWORD=3" },
		/* libpq refuses these; what it would quote goes too */
		{ "password=sec ret host=h", "password=*** host=h" },
		{ "password=sec ret", "password=***" },
		{ "password='unterminated", "password='***" },
		{ "password='a' b", "password='***' b" },
	};

	(void)state;
	check_pairs(v, nitems(v));
	assert_null(conninfo_redact(NULL));
	assert_false(conninfo_has_password(NULL));
}

/* The value libpq reads for keyword kw, or NULL; *ok says whether it parsed. */
static char *
libpq_value(const char *conninfo, const char *kw, bool *ok)
{
	PQconninfoOption	*opts, *o;
	char			*err = NULL, *v = NULL;

	if ((opts = PQconninfoParse(conninfo, &err)) == NULL) {
		PQfreemem(err);
		*ok = false;
		return NULL;
	}
	*ok = true;
	for (o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, kw) == 0 && o->val != NULL)
			v = xstrdup(o->val);
	PQconninfoFree(opts);
	return v;
}

/*
 * Against libpq itself: where libpq reads a password, the redacted string
 * reads "***" for it and the same for every other option; where it reads
 * none, the string is left alone.
 */
static void
test_agrees_with_libpq(void **state)
{
	static const char *const v[] = {
		"postgresql://u:secret@h/db",
		"postgres://u:p%40ss%2Fw@h:5432/db?sslmode=disable",
		"postgresql://u:a@h1:1,h2:2/db?password=b&application_name=x",
		"postgresql://h/db?pass%77ord=x&user=u",
		"postgresql://u@h/db",
		"host=h password=secret dbname=d",
		"password = secret port=5",
		"password='sec ret' host=h",
		"password='it\\'s' host=h",
		"password=se\\ cret host=h",
		"password=a\\\\b host=h",
		"password=a password=b",
		"password= host=h",
		"password='' host=h",
		"host=/tmp port=5432 user=postgres",
	};
	static const char *const kws[] = { "host", "port", "user", "dbname",
	    "sslmode", "application_name" };
	size_t	i, k;
	char	*red, *a, *b;
	bool	ok, ok2;

	(void)state;
	for (i = 0; i < nitems(v); i++) {
		red = conninfo_redact(v[i]);
		a = libpq_value(v[i], "password", &ok);
		assert_true(ok);
		b = libpq_value(red, "password", &ok2);
		if (!ok2)
			fail_msg("libpq refuses the redaction of [%s]: [%s]", v[i], red);
		if (a != NULL && *a != '\0') {
			if (b == NULL || strcmp(b, CONNINFO_MARK) != 0)
				fail_msg("[%s] -> [%s]: libpq reads password [%s]",
				    v[i], red, b ? b : "(none)");
		} else
			assert_string_equal(red, v[i]);
		free(a);
		free(b);
		for (k = 0; k < nitems(kws); k++) {
			a = libpq_value(v[i], kws[k], &ok);
			b = libpq_value(red, kws[k], &ok2);
			if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
				fail_msg("[%s] -> [%s]: %s changed", v[i], red, kws[k]);
			free(a);
			free(b);
		}
		free(red);
	}
}

/* libpq's own message for a string it refuses, scrubbed. */
static void
check_libpq_message(const char *conninfo, const char *secret)
{
	char	*perr = NULL, msg[ERR_LEN];

	assert_null(PQconninfoParse(conninfo, &perr));
	assert_non_null(perr);
	snprintf(msg, sizeof(msg), "%s", perr);
	PQfreemem(perr);
	conninfo_scrub(msg, sizeof(msg), conninfo);
	if (strstr(msg, secret) != NULL)
		fail_msg("[%s]: \"%s\" survives in [%s]", conninfo, secret, msg);
	assert_non_null(strstr(msg, CONNINFO_MARK));
}

static void
test_scrub(void **state)
{
	char	msg[ERR_LEN], small[16];

	(void)state;
	/* libpq quotes the token it chokes on */
	check_libpq_message("postgresql://u:s3cr%zz@h/db", "s3cr");
	check_libpq_message("postgresql://u:s3cr%00@h/db", "s3cr");
	check_libpq_message("password=s3cr et host=h", "et\"");
	check_libpq_message("POSTGRESQL://u:s3cret@h/db", "s3cret");

	/* as written, decoded, and the pieces libpq misreads as host and port */
	snprintf(msg, sizeof(msg), "a p%%40ss b p@ss c");
	conninfo_scrub(msg, sizeof(msg), "postgresql://u:p%40ss@h/db");
	assert_string_equal(msg, "a *** b *** c");
	snprintf(msg, sizeof(msg), "invalid integer value \"pa\" for connection "
	    "option \"port\"");
	conninfo_scrub(msg, sizeof(msg), "postgresql://u:pa/ss@h/db");
	assert_string_equal(msg, "invalid integer value \"***\" for connection "
	    "option \"port\"");
	snprintf(msg, sizeof(msg), "could not translate host name \"wd@h\"");
	conninfo_scrub(msg, sizeof(msg), "postgresql://u:pw@wd@h/db");
	assert_string_equal(msg, "could not translate host name \"***@h\"");
	/* keyword form: quoted, escaped */
	snprintf(msg, sizeof(msg), "x 'a b' a b y");
	conninfo_scrub(msg, sizeof(msg), "password='a b'");
	assert_string_equal(msg, "x '***' *** y");
	/* a secret inside a longer one does not split it */
	snprintf(msg, sizeof(msg), "[abc] [b]");
	conninfo_scrub(msg, sizeof(msg), "postgresql://u:abc@h/db?password=b");
	assert_string_equal(msg, "[***] [***]");
	/* sslpassword too, as libpq reads it */
	snprintf(msg, sizeof(msg), "could not decrypt key with k p'w");
	conninfo_scrub(msg, sizeof(msg), "sslkey=k.pem sslpassword='k p\\'w' host=h");
	assert_string_equal(msg, "could not decrypt key with ***");
	/* nothing to hide, no conninfo: untouched */
	snprintf(msg, sizeof(msg), "password authentication failed");
	conninfo_scrub(msg, sizeof(msg), "host=h user=u");
	conninfo_scrub(msg, sizeof(msg), NULL);
	assert_string_equal(msg, "password authentication failed");
	/* a longer result is cut to the buffer */
	snprintf(small, sizeof(small), "x y x y x y x");
	conninfo_scrub(small, sizeof(small), "password=x");
	assert_string_equal(small, "*** y *** y ***");
}

/* ---- the config text ---------------------------------------------------- */

#define HEAD	"name: n # é\nturn: {command: t}\n"
#define TAIL	"  schema: s.sql\ninvariants:\n  - {name: i, sql: SELECT 1}\n"

static void
check_text(const char *in, const char *want)
{
	char	*got;
	size_t	 len;

	got = cfg_text_redact(in, strlen(in), &len);
	assert_int_equal(len, strlen(got));
	if (strcmp(got, want) != 0)
		fail_msg("redact:\n%s\ngot:\n%s\nwant:\n%s", in, got, want);
	free(got);
}

static void
test_cfg_text(void **state)
{
	static const struct pair v[] = {
		/* in place, in every style where the value stands verbatim */
		{ HEAD "database:\n  url: postgresql://u:secret@h/db\n" TAIL,
		  HEAD "database:\n  url: postgresql://u:***@h/db\n" TAIL },
		{ HEAD "database:\n  url: \"host=h password=secret\"   # prod\n" TAIL,
		  HEAD "database:\n  url: \"host=h password=***\"   # prod\n" TAIL },
		{ HEAD "database:\n  url: 'password=''x y'' host=h'\n" TAIL,
		  HEAD "database:\n  url: \"password='***' host=h\"\n" TAIL },
		{ HEAD "database:\n  url: 'host=h password=secret'\n" TAIL,
		  HEAD "database:\n  url: 'host=h password=***'\n" TAIL },
		{ HEAD "database: {reset: truncate, url: \"postgres://u:secret@h/d\"}\n",
		  HEAD "database: {reset: truncate, url: \"postgres://u:***@h/d\"}\n" },
		{ HEAD "database:\n  url: |\n    host=h password=secret\n\n" TAIL,
		  HEAD "database:\n  url: |\n    host=h password=***\n\n" TAIL },
		{ HEAD "database:\n  url: &db postgresql://u:secret@h/db\n" TAIL,
		  HEAD "database:\n  url: &db postgresql://u:***@h/db\n" TAIL },
		/* CRLF lines, a BOM */
		{ "\xef\xbb\xbfname: é\r\ndatabase:\r\n  url: password=secret\r\n",
		  "\xef\xbb\xbfname: é\r\ndatabase:\r\n  url: password=***\r\n" },
		/* escaped or folded: the value is rewritten, double-quoted */
		{ HEAD "database:\n  url: \"host=h password=se\\x63ret\"\n" TAIL,
		  HEAD "database:\n  url: \"host=h password=***\"\n" TAIL },
		{ HEAD "database:\n  url: >-\n    host=h\n    password=secret\n\n" TAIL,
		  HEAD "database:\n  url: \"host=h password=***\"\n\n" TAIL },
		{ HEAD "database:\n  url: postgresql://u:secret@h/db?x=\"y\"\n"
		    "    &password=z\n" TAIL,
		  HEAD "database:\n  url: \"postgresql://u:***@h/db?x=\\\"y\\\" "
		    "&password=***\"\n" TAIL },
		/* nothing else changes: other urls, other keys named url */
		{ HEAD "database:\n  url: postgresql://u@h/db\n" TAIL
		    "tickets: {sink: webhook, url: \"https://h/x?password=p\"}\n",
		  HEAD "database:\n  url: postgresql://u@h/db\n" TAIL
		    "tickets: {sink: webhook, url: \"https://h/x?password=p\"}\n" },
		{ HEAD "database:\n" TAIL, HEAD "database:\n" TAIL },
		{ "", "" },
	};
	static const char withheld[] = "# soak: this config text is withheld: "
	    "its database.url could not be redacted\n";
	size_t	i;

	(void)state;
	for (i = 0; i < nitems(v); i++)
		check_text(v[i].in, v[i].want);
	/* Not YAML, or a url that is not a string: nothing of it is shown. */
	check_text("database: {url: [postgresql://u:secret@h", withheld);
	check_text("database: {url: [postgresql://u:secret@h]}\n", withheld);
}

static void
test_cfg_hash(void **state)
{
	static const char a[] = HEAD "database:\n  url: postgresql://u:old@h/db\n" TAIL;
	static const char b[] = HEAD "database:\n  url: postgresql://u:rotated@h/db\n" TAIL;
	static const char c[] = HEAD "database:\n  url: postgresql://u:old@h2/db\n" TAIL;
	struct cfg	 cfg = { 0 };
	char		 ha[CFG_HASH_LEN], hb[CFG_HASH_LEN], hc[CFG_HASH_LEN];

	(void)state;
	cfg.text = UNCONST(a);
	cfg.text_len = strlen(a);
	cfg_hash_hex(&cfg, ha);
	cfg.text = UNCONST(b);
	cfg.text_len = strlen(b);
	cfg_hash_hex(&cfg, hb);
	cfg.text = UNCONST(c);
	cfg.text_len = strlen(c);
	cfg_hash_hex(&cfg, hc);
	assert_int_equal(strlen(ha), 16);
	assert_string_equal(ha, hb);		/* a password rotation */
	assert_string_not_equal(ha, hc);	/* another host */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uri),
		cmocka_unit_test(test_keywords),
		cmocka_unit_test(test_agrees_with_libpq),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_cfg_text),
		cmocka_unit_test(test_cfg_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
