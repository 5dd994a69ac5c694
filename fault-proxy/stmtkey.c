/*
 * Statement keys (stmtkey.h): a streaming lexer over SQL text that emits
 * normalized tokens into an FNV-1a hash.  It is not a parser: it needs to
 * agree with itself, not with PostgreSQL's grammar, except where a client
 * library's way of sending a statement would otherwise change the key
 * (literals inline or as parameters, comments, case, spacing).
 */
#include "fault-proxy/stmtkey.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

#define FNV_OFF		0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

enum {
	S_WS,		/* between tokens */
	S_WORD,		/* an unquoted word */
	S_UAMP,		/* "u&": a Unicode string, or the word u and & */
	S_DOT,		/* a '.': ".5" or a.b */
	S_COLON,	/* a ':': "::" or a slice */
	S_NUM,		/* a number */
	S_PARAM,	/* $1 */
	S_SQ,		/* '...' */
	S_SQQ,		/* a quote inside '...': '' or the end */
	S_DQ,		/* "..." */
	S_DQQ,
	S_TAG,		/* $tag$ opening */
	S_DOLLAR,	/* inside $tag$...$tag$ */
	S_OP,		/* an operator */
	S_LINE,		/* -- comment */
	S_BLOCK,	/* block comment */
	S_BSTAR,	/* a star in a block comment */
	S_BSLASH	/* a slash in a block comment */
};

static const char ops[] = "+-*/<>=~!@#%^&|`?";

static bool
is_op(int c)
{
	return c != '\0' && strchr(ops, c) != NULL;
}

static bool
word_start(int c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

static bool
word_char(int c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

static void
hash_bytes(struct stmtkey *k, const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		k->h ^= (unsigned char)s[i];
		k->h *= FNV_PRIME;
	}
	if (k->out != NULL)
		for (i = 0; i < n && k->outlen + 1 < k->outcap; i++)
			k->out[k->outlen++] = s[i];
}

/* Where a trailing locking clause is (stmtkey.h): its grammar by token. */
enum { LK_NONE, LK_FOR, LK_NO, LK_NOKEY, LK_KEY, LK_DONE, LK_OF, LK_OFID,
    LK_SKIP, LK_END };

static bool
tok_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* The clause's next state after token s, or LK_NONE: not a clause. */
static int
lock_next(int st, const char *s, size_t n)
{
	bool	word = n > 0 && (word_start((unsigned char)s[0]) || s[0] == '"');

	switch (st) {
	case LK_FOR:
		if (tok_is(s, n, "update") || tok_is(s, n, "share"))
			return LK_DONE;
		if (tok_is(s, n, "no"))
			return LK_NO;
		if (tok_is(s, n, "key"))
			return LK_KEY;
		return LK_NONE;
	case LK_NO:
		return tok_is(s, n, "key") ? LK_NOKEY : LK_NONE;
	case LK_NOKEY:
		return tok_is(s, n, "update") ? LK_DONE : LK_NONE;
	case LK_KEY:
		return tok_is(s, n, "share") ? LK_DONE : LK_NONE;
	case LK_OF:
		return word ? LK_OFID : LK_NONE;
	case LK_OFID:
		if (tok_is(s, n, ",") || tok_is(s, n, "."))
			return LK_OF;
		/* FALLTHROUGH */
	case LK_DONE:
		if (st == LK_DONE && tok_is(s, n, "of"))
			return LK_OF;
		if (tok_is(s, n, "nowait"))
			return LK_END;
		if (tok_is(s, n, "skip"))
			return LK_SKIP;
		/* FALLTHROUGH */
	case LK_END:
		if (tok_is(s, n, "for"))
			return LK_FOR;
		if (tok_is(s, n, ";"))
			return LK_END;
		return LK_NONE;
	case LK_SKIP:
		return tok_is(s, n, "locked") ? LK_END : LK_NONE;
	}
	return LK_NONE;
}

/*
 * Words that may stand before "(" in a read without calling anything: SQL
 * keywords, and built-in functions that neither write nor lock nor wait.
 */
static bool
paren_ok(const char *w)
{
	static const char *const ok[] = { "select", "from", "where", "and", "or",
	    "not", "in", "exists", "any", "all", "some", "on", "join", "by",
	    "having", "as", "values", "array", "row", "cast", "case", "when",
	    "then", "else", "between", "like", "ilike", "is", "distinct", "over",
	    "filter", "using", "union", "except", "intersect", "lateral",
	    "count", "sum", "min", "max", "avg", "coalesce", "nullif", "greatest",
	    "least", "array_agg", "string_agg", "bool_and", "bool_or", "every",
	    "json_agg", "jsonb_agg", "json_build_object", "jsonb_build_object",
	    "lower", "upper", "length", "abs", "round", "floor", "ceil", "trim",
	    "substring", "position", "concat", "extract", "date_trunc",
	    "array_length", "cardinality", "unnest", "now", NULL };
	size_t	i;

	for (i = 0; ok[i] != NULL; i++)
		if (strcmp(w, ok[i]) == 0)
			return true;
	return false;
}

/* What a token says of the statement's class (sk_class). */
static void
classify(struct stmtkey *k, const char *s, size_t n)
{
	if (!k->any) {
		n = n < sizeof(k->first) - 1 ? n : sizeof(k->first) - 1;
		memcpy(k->first, s, n);
		k->first[n] = '\0';
		return;
	}
	if (k->semi && !tok_is(s, n, ";"))
		k->more = true;		/* a second statement */
	if (tok_is(s, n, "for") || tok_is(s, n, "into"))
		k->not_read = true;
	else if (tok_is(s, n, "(") && (k->last[0] == '"' || k->lastdot ||
	    (word_start((unsigned char)k->last[0]) && !paren_ok(k->last))))
		k->not_read = true;	/* a call of something that may write:
					   quoted or schema-qualified names too */
	k->lastdot = strcmp(k->last, ".") == 0;
}

static void
put(struct stmtkey *k, const char *s, size_t n)
{
	classify(k, s, n);
	if (!tok_is(s, n, ";"))
		k->semi = false;
	else if (!k->semi) {
		k->semi = true;
		k->semi_h = k->h;
		k->semi_outlen = k->outlen;
	}
	if (k->lk != LK_NONE)
		k->lk = lock_next(k->lk, s, n);
	else if (k->any && tok_is(s, n, "for")) {
		k->lk = LK_FOR;
		k->lk_h = k->h;
		k->lk_outlen = k->outlen;
	}
	if (k->any)
		hash_bytes(k, " ", 1);
	hash_bytes(k, s, n);
	k->any = true;
	n = n < sizeof(k->last) - 1 ? n : sizeof(k->last) - 1;
	memcpy(k->last, s, n);
	k->last[n] = '\0';
}

/*
 * Whether a sign here stands before an operand (unary): at the start,
 * after an operator or an opening bracket or comma, or after a word that
 * takes an expression.
 */
static bool
unary_here(const struct stmtkey *k)
{
	static const char *const words[] = { "select", "where", "and", "or",
	    "not", "when", "then", "else", "case", "values", "return",
	    "returning", "in", "between", "like", "limit", "offset", "by",
	    "having", "on", "is", "array", NULL };
	size_t	i;

	if (!k->any || is_op(k->last[0]) || strcmp(k->last, "(") == 0 ||
	    strcmp(k->last, ",") == 0 || strcmp(k->last, "[") == 0 ||
	    strcmp(k->last, "::") == 0)
		return true;
	for (i = 0; words[i] != NULL; i++)
		if (strcmp(k->last, words[i]) == 0)
			return true;
	return false;
}

/* One token; lit: a literal, which a unary sign before it joins. */
static void
emit(struct stmtkey *k, const char *s, size_t n, bool lit)
{
	if (k->held) {
		char	sign = k->held;

		k->held = 0;
		if (!(lit && unary_here(k)))
			put(k, &sign, 1);
	}
	if (!k->any && !lit && n == 7 && memcmp(s, "execute", 7) == 0)
		k->execute = true;
	put(k, s, n);
}

static void
emit_lit(struct stmtkey *k)
{
	emit(k, "?", 1, true);
}

static void
end_word(struct stmtkey *k)
{
	if ((k->wlen == 4 && memcmp(k->word, "true", 4) == 0) ||
	    (k->wlen == 5 && memcmp(k->word, "false", 5) == 0) ||
	    (k->wlen == 4 && memcmp(k->word, "null", 4) == 0))
		emit_lit(k);
	else
		emit(k, k->word, k->wlen, false);
	k->wlen = 0;
}

/* An operator is over: a lone sign is held to see what follows. */
static void
end_op(struct stmtkey *k)
{
	if (k->oplen == 0)
		return;
	if (k->oplen == 1 && (k->op[0] == '-' || k->op[0] == '+')) {
		if (k->held)
			emit(k, &k->held, 1, false);
		k->held = k->op[0];
	} else
		emit(k, k->op, k->oplen, false);
	k->oplen = 0;
}

void
sk_init(struct stmtkey *k)
{
	memset(k, 0, sizeof(*k));
	k->h = FNV_OFF;
	k->st = S_WS;
}

static void sk_char(struct stmtkey *k, int c);

/* From between tokens: what c begins. */
static void
begin(struct stmtkey *k, int c)
{
	if (isspace(c))
		k->st = S_WS;
	else if (word_start(c)) {
		k->word[0] = (char)tolower(c);
		k->wlen = 1;
		k->st = S_WORD;
	} else if (isdigit(c)) {
		k->word[0] = (char)c;
		k->wlen = 1;
		k->st = S_NUM;
	} else if (c == '\'') {
		k->estr = k->bs = false;
		k->st = S_SQ;
	} else if (c == '"') {
		k->wlen = 0;
		k->word[k->wlen++] = '"';
		k->st = S_DQ;
	} else if (c == '$') {
		k->tag[0] = '$';
		k->taglen = 1;
		k->st = S_TAG;
	} else if (is_op(c)) {
		k->op[0] = (char)c;
		k->oplen = 1;
		k->st = S_OP;
	} else if (c == ':') {
		k->st = S_COLON;
	} else if (c == '.') {
		k->st = S_DOT;
	} else {
		char	ch = (char)c;

		emit(k, &ch, 1, false);
		k->st = S_WS;
	}
}

/* In a word, or after "u&": a word goes on, a string begins, or it ends. */
static void
in_word(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_WORD:
		if (word_char(c)) {
			if (k->wlen < sizeof(k->word))
				k->word[k->wlen++] = (char)tolower(c);
			return;
		}
		if (c == '\'' && k->wlen == 1 && strchr("ebxn", k->word[0])) {
			/* E'..' takes backslash escapes; B, X, N quotes do not */
			k->estr = k->word[0] == 'e';
			k->bs = false;
			k->wlen = 0;
			k->st = S_SQ;
			return;
		}
		if (c == '&' && k->wlen == 1 && k->word[0] == 'u') {
			k->st = S_UAMP;
			return;
		}
		end_word(k);
		begin(k, c);
		return;
	case S_UAMP:
		if (c == '\'' || c == '"') {
			k->wlen = 0;
			if (c == '\'') {
				k->estr = k->bs = false;
				k->st = S_SQ;
			} else {
				k->word[k->wlen++] = '"';
				k->st = S_DQ;
			}
			return;
		}
		end_word(k);
		k->op[0] = '&';
		k->oplen = 1;
		k->st = S_OP;
		sk_char(k, c);
		return;
	}
}

/* After a '.' or a ':', in a number or a $n parameter. */
static void
in_number(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_DOT:
		if (isdigit(c)) {
			k->word[0] = '.';
			k->word[1] = (char)c;
			k->wlen = 2;
			k->st = S_NUM;
			return;
		}
		emit(k, ".", 1, false);		/* a.b */
		begin(k, c);
		return;
	case S_COLON:
		if (c == ':') {
			emit(k, "::", 2, false);
			k->st = S_WS;
			return;
		}
		emit(k, ":", 1, false);		/* an array slice */
		begin(k, c);
		return;
	case S_NUM:
		/* digits, a point, an exponent and its sign, 0x.., 1_000 */
		if (isalnum(c) || c == '_' || c == '.' ||
		    ((c == '-' || c == '+') && k->wlen > 0 &&
		    (k->word[k->wlen - 1] == 'e' || k->word[k->wlen - 1] == 'E'))) {
			if (k->wlen < sizeof(k->word))
				k->word[k->wlen++] = (char)c;
			return;
		}
		emit_lit(k);
		k->wlen = 0;
		begin(k, c);
		return;
	case S_PARAM:
		if (isdigit(c))
			return;
		emit_lit(k);
		begin(k, c);
		return;
	}
}

/* Inside '...' or "...", or at a quote that may end it. */
static void
in_quotes(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_SQ:
		if (k->bs) {
			k->bs = false;		/* E'\'': the byte is taken as is */
			return;
		}
		if (k->estr && c == '\\') {
			k->bs = true;
			return;
		}
		if (c == '\'')
			k->st = S_SQQ;
		return;
	case S_SQQ:
		if (c == '\'') {		/* '' inside a string */
			k->st = S_SQ;
			return;
		}
		emit_lit(k);
		begin(k, c);
		return;
	case S_DQ:
		if (c == '"') {
			k->st = S_DQQ;
			return;
		}
		if (k->wlen < sizeof(k->word))
			k->word[k->wlen++] = (char)c;
		return;
	case S_DQQ:
		if (c == '"') {
			if (k->wlen < sizeof(k->word))
				k->word[k->wlen++] = '"';
			k->st = S_DQ;
			return;
		}
		if (k->wlen < sizeof(k->word))
			k->word[k->wlen++] = '"';
		emit(k, k->word, k->wlen, false);
		k->wlen = 0;
		begin(k, c);
		return;
	}
}

/* A $tag$ opening, or inside $tag$...$tag$ (or a $n after all). */
static void
in_dollar(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_TAG:
		if (k->taglen == 1 && isdigit(c)) {
			k->st = S_PARAM;
			return;
		}
		if (c == '$') {
			k->tag[k->taglen++] = '$';
			k->tagpos = 0;
			k->st = S_DOLLAR;
			return;
		}
		if ((isalnum(c) || c == '_' || c >= 0x80) &&
		    k->taglen < sizeof(k->tag) - 1 &&
		    !(k->taglen == 1 && isdigit(c))) {
			k->tag[k->taglen++] = (char)c;
			return;
		}
		/* a lone '$' or an identifier-ish run: a token as it is */
		emit(k, k->tag, k->taglen, false);
		begin(k, c);
		return;
	case S_DOLLAR:
		/* match the closing tag; a mismatch restarts, and may begin it */
		if (c == k->tag[k->tagpos]) {
			if (++k->tagpos == k->taglen) {
				emit_lit(k);
				k->st = S_WS;
			}
		} else
			k->tagpos = c == k->tag[0] ? 1 : 0;
		return;
	}
}

/* In an operator, or in a comment it began. */
static void
in_op(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_OP:
		if (c == '-' && k->op[k->oplen - 1] == '-') {
			k->oplen--;		/* "--": a comment */
			end_op(k);
			k->st = S_LINE;
			return;
		}
		if (c == '*' && k->op[k->oplen - 1] == '/') {
			k->oplen--;
			end_op(k);
			k->depth = 1;
			k->st = S_BLOCK;
			return;
		}
		if (is_op(c) && k->oplen < sizeof(k->op)) {
			k->op[k->oplen++] = (char)c;
			return;
		}
		end_op(k);
		begin(k, c);
		return;
	case S_LINE:
		if (c == '\n')
			k->st = S_WS;
		return;
	case S_BLOCK:
		if (c == '*')
			k->st = S_BSTAR;
		else if (c == '/')
			k->st = S_BSLASH;
		return;
	case S_BSTAR:
		if (c == '/')
			k->st = --k->depth == 0 ? S_WS : S_BLOCK;
		else
			k->st = c == '*' ? S_BSTAR : S_BLOCK;
		return;
	case S_BSLASH:
		if (c == '*')
			k->depth++;
		k->st = c == '/' ? S_BSLASH : S_BLOCK;
		return;
	}
}

/* One character of the statement, by the lexer's state. */
static void
sk_char(struct stmtkey *k, int c)
{
	switch (k->st) {
	case S_WS:
		begin(k, c);
		return;
	case S_WORD:
	case S_UAMP:
		in_word(k, c);
		return;
	case S_DOT:
	case S_COLON:
	case S_NUM:
	case S_PARAM:
		in_number(k, c);
		return;
	case S_SQ:
	case S_SQQ:
	case S_DQ:
	case S_DQQ:
		in_quotes(k, c);
		return;
	case S_TAG:
	case S_DOLLAR:
		in_dollar(k, c);
		return;
	case S_OP:
	case S_LINE:
	case S_BLOCK:
	case S_BSTAR:
	case S_BSLASH:
		in_op(k, c);
		return;
	}
}

void
sk_feed(struct stmtkey *k, const char *p, size_t n)
{
	size_t	i;

	if (k->fed >= STMTKEY_MAX)
		return;
	if (n > STMTKEY_MAX - k->fed)
		n = STMTKEY_MAX - k->fed;
	k->fed += n;
	for (i = 0; i < n; i++)
		sk_char(k, p[i] == '\0' ? ' ' : (unsigned char)p[i]);
}

uint64_t
sk_done(struct stmtkey *k)
{
	sk_char(k, ' ');	/* ends a word, number, operator or quote */
	sk_char(k, ' ');	/* ... and what a '.' or ':' held back */
	switch (k->st) {
	case S_SQ: case S_DQ: case S_DOLLAR:
		emit_lit(k);	/* cut inside a literal: it was one */
		break;
	default:
		break;
	}
	if (k->held) {
		char	sign = k->held;

		k->held = 0;
		put(k, &sign, 1);
	}
	/* a whole locking clause at the end: keyed as the statement without it */
	if (k->lk == LK_DONE || k->lk == LK_OFID || k->lk == LK_END) {
		k->h = k->lk_h;
		k->outlen = k->lk_outlen;
	} else if (k->semi) {
		k->h = k->semi_h;
		k->outlen = k->semi_outlen;
	}
	if (k->out != NULL && k->outcap > 0)
		k->out[k->outlen] = '\0';
	if (k->execute)
		return 0;
	return k->h != 0 ? k->h : 1;
}

enum sk_class
sk_class(const struct stmtkey *k)
{
	if (k->more || k->execute || k->fed >= STMTKEY_MAX || k->st != S_WS)
		return SK_OTHER;
	if (strcmp(k->first, "begin") == 0 || strcmp(k->first, "start") == 0)
		return SK_BEGIN;
	if (strcmp(k->first, "set") == 0 || strcmp(k->first, "reset") == 0 ||
	    strcmp(k->first, "show") == 0)
		return SK_SESSION;
	if (strcmp(k->first, "select") == 0 && !k->not_read && k->lk == LK_NONE)
		return SK_READ;
	return SK_OTHER;
}

const char *
sk_class_name(enum sk_class c)
{
	switch (c) {
	case SK_READ:		return "read";
	case SK_BEGIN:		return "begin";
	case SK_SESSION:	return "session";
	default:		return "other";
	}
}

uint64_t
stmtkey_sql(const char *sql, size_t n)
{
	struct stmtkey	k;

	sk_init(&k);
	sk_feed(&k, sql, n);
	return sk_done(&k);
}

void
stmtkey_norm(const char *sql, size_t n, char *out, size_t len)
{
	struct stmtkey	k;

	sk_init(&k);
	k.out = out;
	k.outcap = len;
	if (len > 0)
		out[0] = '\0';
	sk_feed(&k, sql, n);
	(void)sk_done(&k);
}

/* A path segment that is an id: digits, a UUID, or a long hex string. */
static bool
id_segment(const char *s, size_t n)
{
	size_t	i, hex = 0, digits = 0, dashes = 0;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (isdigit((unsigned char)s[i]))
			digits++;
		if (isxdigit((unsigned char)s[i]))
			hex++;
		else if (s[i] == '-')
			dashes++;
		else
			return false;
	}
	if (digits == n)
		return true;
	if (n == 36 && dashes == 4 && s[8] == '-' && s[13] == '-' &&
	    s[18] == '-' && s[23] == '-')
		return true;
	return dashes == 0 && ((n >= 8 && digits > 0) || n >= 16);
}

uint64_t
stmtkey_http(const char *line, size_t n, char *norm, size_t normlen)
{
	const char	*sp, *path, *end, *seg;
	size_t		 o = 0, ml, i;
	uint64_t	 h = FNV_OFF;
	char		 buf[512];

	if ((sp = memchr(line, ' ', n)) == NULL || sp == line)
		return 0;
	ml = (size_t)(sp - line);
	for (i = 0; i < ml; i++)
		if (!isupper((unsigned char)line[i]))
			return 0;
	path = sp + 1;
	for (end = path; end < line + n && *end != ' ' && *end != '?' &&
	    *end != '#'; end++)
		;
	if (ml >= sizeof(buf) / 2)
		return 0;
	memcpy(buf, line, ml);
	o = ml;
	buf[o++] = ' ';
	for (seg = path; seg < end && o < sizeof(buf) - 4;) {
		const char	*next = memchr(seg, '/', (size_t)(end - seg));
		size_t		 sl;

		if (next == NULL)
			next = end;
		sl = (size_t)(next - seg);
		if (id_segment(seg, sl)) {
			memcpy(buf + o, "{}", 2);
			o += 2;
		} else {
			if (sl > sizeof(buf) - 4 - o)
				sl = sizeof(buf) - 4 - o;
			memcpy(buf + o, seg, sl);
			o += sl;
		}
		if (next < end)
			buf[o++] = '/';
		seg = next + 1;
	}
	if (o == ml + 1)
		buf[o++] = '/';
	for (i = 0; i < o; i++) {
		h ^= (unsigned char)buf[i];
		h *= FNV_PRIME;
	}
	/* the request line as people read it: a path's bytes are whatever the
	 * client sent, so cut between characters, never inside one */
	if (norm != NULL)
		(void)utf8_cut(norm, normlen, buf, o);
	return h != 0 ? h : 1;
}
