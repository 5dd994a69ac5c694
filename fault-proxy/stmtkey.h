/*
 * What an exchange hits, as a key a plan can name (docs/plan.md): the same
 * statement gives the same key however a client sends it, and a key does
 * not move when other statements are added around it.
 *
 * PostgreSQL: a 64-bit FNV-1a hash of the statement text normalized by a
 * small lexer: comments dropped (nested block comments too), whitespace
 * folded to one space between tokens, unquoted words lower-cased (keywords
 * and identifiers: PostgreSQL folds both), and every literal -- quoted
 * strings (E'', B'', X'', U&'', N''), dollar-quoted strings, numbers, the
 * words true, false and null, and parameters $1, $2 ... -- one placeholder
 * "?", a sign before a number in an operand's place included.  So psql's
 * inline literals, psycopg2's client-side interpolation and libpq's
 * parameters give one key.  Quoted identifiers keep their case.  A locking
 * clause that ends the statement (FOR UPDATE, FOR SHARE, ... OF t, NOWAIT,
 * SKIP LOCKED) is left out: a fix that locks the row it reads keeps the
 * key of the read it fixes, so a plan applies to it; so are semicolons at
 * the end.  The text
 * is streamed (sk_feed, any number of pieces); past STMTKEY_MAX bytes it
 * is keyed by what came.
 *
 * HTTP: the method and the path, numeric, UUID and long hex segments as
 * "{}", no query string: "POST /refunds/{}".
 *
 * Key 0 is "unknown" (a Bind of a statement the proxy never saw Parsed,
 * SQL EXECUTE of a prepared statement): a plan never names it.
 */
#ifndef SOAK_PROXY_STMTKEY_H
#define SOAK_PROXY_STMTKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STMTKEY_MAX	(60u * 1024)	/* statement bytes keyed */
#define STMTKEY_WORD	32		/* the last word kept, for context */

struct stmtkey {
	uint64_t	 h;
	size_t		 fed;		/* bytes seen */
	int		 st;		/* lexer state */
	int		 depth;		/* block comment nesting */
	bool		 estr;		/* an E'' string: backslash escapes */
	bool		 bs;		/* ... and a backslash came */
	char		 tag[64];	/* a dollar quote's tag, "$tag$" */
	size_t		 taglen, tagpos;
	char		 word[STMTKEY_WORD];	/* the word being read, lowered */
	size_t		 wlen;
	/* the last token emitted, for a sign's meaning */
	char		 last[STMTKEY_WORD];
	bool		 any;		/* a token was emitted */
	bool		 execute;	/* it began with the word EXECUTE */
	char		 held;		/* a sign held back ('-', '+'), or 0 */
	char		 op[8];		/* an operator being read */
	size_t		 oplen;
	/*
	 * A locking clause at the end (FOR UPDATE, FOR NO KEY UPDATE, FOR
	 * SHARE, FOR KEY SHARE, OF tables, NOWAIT, SKIP LOCKED, repeated) is
	 * not part of the key: the state at its FOR, and where in the clause
	 * the tokens since are (0: none under way).
	 */
	int		 lk;
	uint64_t	 lk_h;
	size_t		 lk_outlen;
	/* Semicolons at the end are not part of it either (psql -c "...;"). */
	bool		 semi;
	uint64_t	 semi_h;
	size_t		 semi_outlen;
	/* the statement's class (sk_class), from its tokens */
	char		 first[16];	/* its first word, lowered, cut */
	bool		 not_read;	/* a token a pure read never has */
	bool		 more;		/* a statement after a semicolon */
	bool		 lastdot;	/* the token before the last was "." */
	/* stmtkey_norm: the normalized text too (NULL: not wanted) */
	char		*out;
	size_t		 outcap, outlen;
};

void		 sk_init(struct stmtkey *k);
void		 sk_feed(struct stmtkey *k, const char *p, size_t n);
/* The key of what was fed; 0 for SQL EXECUTE (unknown). */
uint64_t	 sk_done(struct stmtkey *k);
/*
 * What a statement can do to another turn's, for soak explore's reduction
 * (docs/explore.md): read from the tokens, conservatively, so anything
 * unsure is SK_OTHER.
 *  - SK_BEGIN: BEGIN or START TRANSACTION alone (no snapshot is taken
 *    until the transaction's first statement, no lock: it commutes with
 *    every statement of another session);
 *  - SK_SESSION: SET, RESET, SHOW alone (the session's own settings);
 *  - SK_READ: one SELECT with no locking clause (no FOR anywhere), no
 *    INTO, and no call of a function outside a short list of built-in
 *    pure ones (count, sum, coalesce, ...): two reads of two sessions
 *    commute;
 *  - SK_OTHER: anything else, several statements, a cut one, EXECUTE.
 * A view or a row-level policy that calls a writing function is not seen
 * (docs/explore.md says so).  After sk_done.
 */
enum sk_class { SK_OTHER, SK_READ, SK_BEGIN, SK_SESSION };
enum sk_class	 sk_class(const struct stmtkey *k);
const char	*sk_class_name(enum sk_class c);
/* One whole statement. */
uint64_t	 stmtkey_sql(const char *sql, size_t n);
/*
 * The key of an HTTP request line ("POST /refunds/42?x=1 HTTP/1.1"); norm
 * gets "POST /refunds/{}", valid UTF-8 cut to normlen between characters
 * (utf8_cut: a byte that is not UTF-8 as '?'; the key is of the bytes as
 * sent).  0 when it is not a request line.
 */
uint64_t	 stmtkey_http(const char *line, size_t n, char *norm,
		    size_t normlen);
/* The normalized text of a statement, for tests and people (cut to len). */
void		 stmtkey_norm(const char *sql, size_t n, char *out, size_t len);

#endif
