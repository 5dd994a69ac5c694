/*
 * Statement keys (fault-proxy/stmtkey.c): psql's inline literals,
 * psycopg2's interpolation and libpq's parameters give one key; comments,
 * case and spacing do not matter; different statements differ; a binary
 * minus is not a literal's sign; the lexer streams; HTTP paths lose their
 * ids and query strings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "fault-proxy/stmtkey.h"

static uint64_t
key(const char *s)
{
	return stmtkey_sql(s, strlen(s));
}

static void
norm_is(const char *sql, const char *want)
{
	char	out[512];

	stmtkey_norm(sql, strlen(sql), out, sizeof(out));
	if (strcmp(out, want) != 0)
		fail_msg("norm(%s) = \"%s\", want \"%s\"", sql, out, want);
}

static void
same(const char *a, const char *b)
{
	if (key(a) != key(b)) {
		char	na[512], nb[512];

		stmtkey_norm(a, strlen(a), na, sizeof(na));
		stmtkey_norm(b, strlen(b), nb, sizeof(nb));
		fail_msg("keys differ:\n  %s -> %s\n  %s -> %s", a, na, b, nb);
	}
}

static void
differ(const char *a, const char *b)
{
	if (key(a) == key(b))
		fail_msg("keys equal: \"%s\" and \"%s\"", a, b);
}

static void
test_literals_and_parameters(void **state)
{
	(void)state;
	same("SELECT n FROM counter WHERE id = 1",
	    "select  n\n\tfrom counter WHERE id = $1");
	same("SELECT n FROM counter WHERE id = 1",
	    "SELECT n FROM counter WHERE id = '1'");
	same("UPDATE t SET n = -5 WHERE id = 1", "UPDATE t SET n = $1 WHERE id = $2");
	same("UPDATE t SET n = n - 1", "UPDATE t SET n = n - $1");
	differ("UPDATE t SET n = n - 1", "UPDATE t SET n = n + 1");
	differ("UPDATE t SET n = n - 1", "UPDATE t SET n = ?");
	same("SELECT E'it\\'s', 'a''b', $$x'y$$, $tag$ $$ $tag$",
	    "SELECT $1, $2, $3, $4");
	same("SELECT B'101', X'1F', N'x', U&'d\\0061'", "SELECT $1, $2, $3, $4");
	same("INSERT INTO t (a, b, c) VALUES (NULL, true, FALSE)",
	    "INSERT INTO t (a, b, c) VALUES ($1, $2, $3)");
	same("SELECT 1.5e-3, .5, 0x1F, 1_000", "SELECT $1, $2, $3, $4");
	same("SELECT '5'::int", "SELECT $1::int");
	same("SELECT * FROM t LIMIT -1", "SELECT * FROM t LIMIT $1");
	same("SELECT a[1:2] FROM t", "SELECT a[$1:$2] FROM t");
	norm_is("UPDATE t SET n = n - 1 WHERE id = 7", "update t set n = n - ? where id = ?");
	norm_is("SELECT t.col FROM t", "select t . col from t");
	norm_is("SELECT '5'::int", "select ? :: int");
}

static void
test_comments_case_space(void **state)
{
	(void)state;
	same("SELECT a FROM t -- why\n", "/* a /* nested */ comment */ select A\nfrom\tT");
	same("SELECT a-- c\nFROM t", "SELECT a FROM t");
	same("SELECT 2/*x*/-1", "SELECT 2 - 1");
	differ("SELECT \"Foo\" FROM t", "SELECT \"foo\" FROM t");
	same("SELECT Foo FROM t", "select foo from t");
	differ("SELECT a FROM t", "SELECT b FROM t");
	differ("BEGIN", "COMMIT");
	norm_is("  BEGIN ; ", "begin");
	same("COMMIT;", "commit");
	same("SELECT 1;;", "SELECT 1");
	differ("SELECT 1; SELECT 2", "SELECT 1 SELECT 2");
}

/* A fix that locks the row it reads keeps the read's key (docs/plan.md). */
static void
test_locking_clause(void **state)
{
	(void)state;
	same("SELECT n FROM t WHERE id = $1", "SELECT n FROM t WHERE id = $1 FOR UPDATE");
	same("SELECT n FROM t WHERE id = 1", "select n from t where id = 1 for update;");
	same("SELECT n FROM t WHERE id = 1;", "SELECT n FROM t WHERE id = 1 FOR NO KEY UPDATE");
	same("SELECT n FROM t", "SELECT n FROM t FOR SHARE OF t NOWAIT");
	same("SELECT n FROM t", "SELECT n FROM t FOR KEY SHARE OF a, s.b SKIP LOCKED");
	same("SELECT n FROM t", "SELECT n FROM t FOR UPDATE OF t FOR SHARE OF \"U\"");
	/* not a locking clause at the end: keyed whole */
	differ("SELECT substring(s FROM 1 FOR 2) FROM t", "SELECT substring(s FROM 1) FROM t");
	differ("SELECT n FROM (SELECT n FROM t FOR UPDATE) x", "SELECT n FROM (SELECT n FROM t) x");
	differ("SELECT n FROM t FOR UPDATE OF", "SELECT n FROM t");
	differ("SELECT n FROM t FOR", "SELECT n FROM t");
	norm_is("SELECT n FROM t WHERE id = 3 FOR UPDATE", "select n from t where id = ?");
}

static void
test_execute_unknown(void **state)
{
	(void)state;
	assert_int_equal(key("EXECUTE stmt(1, 2)"), 0);
	assert_int_equal(key("  /* c */ execute s"), 0);
	assert_int_not_equal(key("SELECT execute FROM t"), 0);
	assert_int_not_equal(key(""), 0);
}

static void
test_streaming(void **state)
{
	const char	*sql = "UPDATE orders SET items_reserved = items_reserved + 3, "
	    "note = E'a\\'b' /* c */ WHERE id = -1 AND tag = $x$y$x$ -- z\n";
	struct stmtkey	 k;
	size_t		 i, n = strlen(sql);
	char		*big;

	(void)state;
	sk_init(&k);
	for (i = 0; i < n; i++)
		sk_feed(&k, sql + i, 1);
	assert_int_equal(sk_done(&k), key(sql));
	/* past STMTKEY_MAX, what came is the key */
	big = malloc(STMTKEY_MAX + 100);
	assert_non_null(big);
	memset(big, 'a', STMTKEY_MAX + 100);
	memcpy(big, "SELECT ", 7);
	assert_int_equal(stmtkey_sql(big, STMTKEY_MAX + 100),
	    stmtkey_sql(big, STMTKEY_MAX));
	free(big);
}

static void
test_http(void **state)
{
	char		 n1[128], n2[128];
	const char	*a = "POST /refunds/42?dispute=7 HTTP/1.1";
	const char	*b = "POST /refunds/977 HTTP/1.1";

	(void)state;
	assert_int_equal(stmtkey_http(a, strlen(a), n1, sizeof(n1)),
	    stmtkey_http(b, strlen(b), n2, sizeof(n2)));
	assert_string_equal(n1, "POST /refunds/{}");
	assert_int_not_equal(stmtkey_http("GET /refunds/1 HTTP/1.1", 23, NULL, 0),
	    stmtkey_http(b, strlen(b), NULL, 0));
	(void)stmtkey_http("GET /v1/orders/3f2b1c4e-9a7d-4e2b-8c1f-0a9b8c7d6e5f/items HTTP/1.1",
	    66, n1, sizeof(n1));
	assert_string_equal(n1, "GET /v1/orders/{}/items");
	(void)stmtkey_http("GET /blobs/deadbeef42 HTTP/1.1", 30, n1, sizeof(n1));
	assert_string_equal(n1, "GET /blobs/{}");
	(void)stmtkey_http("GET /cafe HTTP/1.1", 18, n1, sizeof(n1));
	assert_string_equal(n1, "GET /cafe");
	(void)stmtkey_http("GET / HTTP/1.1", 14, n1, sizeof(n1));
	assert_string_equal(n1, "GET /");
	assert_int_equal(stmtkey_http("not a request", 13, NULL, 0), 0);
}

/*
 * What a client sent in a path, as the trace's "req" (96 bytes): cut
 * between characters, a byte that is not UTF-8 as '?', valid UTF-8
 * whatever came (issue 38: one such byte cost a seed its plan); the key
 * is still of the bytes as sent.
 */
static void
test_http_utf8(void **state)
{
	char	 line[256], norm[96], path[128];
	uint64_t k1, k2;

	(void)state;
	/* "GET /" is 5 bytes; 89 'a's end at 94, so "é" takes 94..95 and
	 * the 95 bytes the field holds end inside it */
	memset(path, 'a', 89);
	memcpy(path + 89, "\xc3\xa9z", 3);
	snprintf(line, sizeof(line), "GET /%.*s HTTP/1.1", 92, path);
	k1 = stmtkey_http(line, strlen(line), norm, sizeof(norm));
	assert_int_equal(strlen(norm), 94);
	assert_int_equal(utf8_cut(path, sizeof(path), norm, strlen(norm)),
	    strlen(norm));	/* it decodes as it is */
	/* a Latin-1 "é" in the path: '?' in the text, its own key */
	k2 = stmtkey_http("GET /caf\xe9 HTTP/1.1", 19, norm, sizeof(norm));
	assert_string_equal(norm, "GET /caf?");
	assert_int_not_equal(k2, stmtkey_http("GET /caf? HTTP/1.1", 18, NULL, 0));
	assert_int_not_equal(k1, 0);
}

/*
 * The class soak explore's reduction reads (sk_class): only what is sure
 * to commute is a read, a BEGIN or a session setting; everything else,
 * and anything unsure, is "other".
 */
static enum sk_class
class_of(const char *sql)
{
	struct stmtkey	k;

	sk_init(&k);
	sk_feed(&k, sql, strlen(sql));
	(void)sk_done(&k);
	return sk_class(&k);
}

static void
test_class(void **state)
{
	(void)state;
	assert_int_equal(class_of("SELECT items_reserved, version FROM orders WHERE id = $1"), SK_READ);
	assert_int_equal(class_of("select n from counter where id = 1;"), SK_READ);
	assert_int_equal(class_of("SELECT count(*), coalesce(sum(n), 0) FROM t WHERE x IN (1, 2)"), SK_READ);
	assert_int_equal(class_of("SELECT 1 WHERE EXISTS (SELECT 1 FROM t)"), SK_READ);
	assert_int_equal(class_of("BEGIN"), SK_BEGIN);
	assert_int_equal(class_of("begin isolation level repeatable read"), SK_BEGIN);
	assert_int_equal(class_of("START TRANSACTION"), SK_BEGIN);
	assert_int_equal(class_of("SET search_path = s1"), SK_SESSION);
	assert_int_equal(class_of("SHOW server_version"), SK_SESSION);
	/* a locking read, anywhere, is not a read */
	assert_int_equal(class_of("SELECT n FROM counter WHERE id = 1 FOR UPDATE"), SK_OTHER);
	assert_int_equal(class_of("SELECT n FROM counter WHERE id = 1 FOR NO KEY UPDATE NOWAIT"), SK_OTHER);
	assert_int_equal(class_of("SELECT * FROM (SELECT * FROM t FOR SHARE) x"), SK_OTHER);
	/* writes, and reads that may write */
	assert_int_equal(class_of("UPDATE counter SET n = n + 1"), SK_OTHER);
	assert_int_equal(class_of("INSERT INTO t VALUES (1)"), SK_OTHER);
	assert_int_equal(class_of("COMMIT"), SK_OTHER);
	assert_int_equal(class_of("WITH u AS (UPDATE t SET n = 1 RETURNING n) SELECT n FROM u"), SK_OTHER);
	assert_int_equal(class_of("SELECT nextval('s')"), SK_OTHER);
	assert_int_equal(class_of("SELECT pg_advisory_lock(1)"), SK_OTHER);
	assert_int_equal(class_of("SELECT my_func(1)"), SK_OTHER);
	assert_int_equal(class_of("SELECT myschema.count(1)"), SK_OTHER);
	assert_int_equal(class_of("SELECT \"count\"(1)"), SK_OTHER);
	assert_int_equal(class_of("SELECT * INTO t2 FROM t"), SK_OTHER);
	/* several statements, or none whole */
	assert_int_equal(class_of("SELECT 1; UPDATE t SET n = 2"), SK_OTHER);
	assert_int_equal(class_of("BEGIN; SELECT 1"), SK_OTHER);
	assert_int_equal(class_of("EXECUTE p(1)"), SK_OTHER);
	assert_int_equal(class_of("SELECT 'unterminated"), SK_OTHER);
	assert_int_equal(class_of(""), SK_OTHER);
}

/*
 * A statement past STMTKEY_MAX is keyed by what came, and classed by none
 * of it: a long SELECT whose FOR UPDATE lies past the cut is no read,
 * whole or fed in pieces; one just under the cap still is.
 */
static void
test_class_cut(void **state)
{
	static const char	 head[] = "SELECT n FROM counter WHERE id IN (1";
	static const char	 tail[] = ") FOR UPDATE";
	static const size_t	 lens[] = { STMTKEY_MAX - 64, STMTKEY_MAX + 4096 };
	size_t			 n, len, i, j, piece;
	char			*sql;

	(void)state;
	for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
		len = lens[j];
		sql = malloc(len + 1);
		assert_non_null(sql);
		memcpy(sql, head, sizeof(head) - 1);
		for (n = sizeof(head) - 1; n + 3 + sizeof(tail) - 1 <= len; n += 3)
			memcpy(sql + n, ", 1", 3);
		memcpy(sql + n, tail, sizeof(tail));
		n += sizeof(tail) - 1;
		/* whole: never a read, under the cap (FOR UPDATE seen) or past it */
		assert_int_equal(class_of(sql), SK_OTHER);
		/* without its locking clause: a read only when all of it was seen */
		sql[n - sizeof(tail) + 2] = '\0';
		assert_int_equal(class_of(sql), n - sizeof(tail) + 2 < STMTKEY_MAX ?
		    SK_READ : SK_OTHER);
		sql[n - sizeof(tail) + 2] = ' ';
		for (piece = 1000; piece <= 8192; piece *= 8) {
			struct stmtkey	k;

			sk_init(&k);
			for (i = 0; i < n; i += piece)
				sk_feed(&k, sql + i, n - i < piece ? n - i : piece);
			(void)sk_done(&k);
			assert_int_equal(sk_class(&k), SK_OTHER);
		}
		free(sql);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literals_and_parameters),
		cmocka_unit_test(test_comments_case_space),
		cmocka_unit_test(test_locking_clause),
		cmocka_unit_test(test_execute_unknown),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_utf8),
		cmocka_unit_test(test_class),
		cmocka_unit_test(test_class_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
