/*
 * PostgreSQL v3 framing for the fault proxy (pgframe.h).  Pure: no I/O, no
 * clock, no allocation; the fuzz target drives it directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "fault-proxy/pgframe.h"

static const char *const kind_names[PGK_MAX] = {
	[PGK_NONE] = "none", [PGK_STARTUP] = "startup", [PGK_CANCEL] = "cancel",
	[PGK_SIMPLE] = "simple", [PGK_EXTENDED] = "extended",
	[PGK_FUNCTION] = "function", [PGK_COPY] = "copy",
	[PGK_TERMINATE] = "terminate",
};

const char *
pg_kind_name(enum pg_kind k)
{
	if ((unsigned)k >= PGK_MAX)
		return "?";
	return kind_names[k];
}

void
pg_escape(const char *p, size_t n, char *out, size_t outlen)
{
	size_t	o = 0, i;
	unsigned char	ch;

	if (outlen == 0)
		return;
	for (i = 0; i < n && o + 5 < outlen; i++) {
		ch = (unsigned char)p[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x",
			    ch);
	}
	out[o] = '\0';
}

enum pg_first
pg_first(const char *p, size_t n)
{
	uint32_t	len, code;

	/*
	 * Each byte already here can rule PostgreSQL out: a start-up length
	 * is 8..10000, so its first two bytes are 0 (auto waits for 8 bytes
	 * only while they might still be one).
	 */
	if ((n >= 1 && p[0] != 0) || (n >= 2 && p[1] != 0))
		return PGF_NOT_PG;
	if (n >= 4) {
		len = get_be32((const uint8_t *)p);
		if (len < 8 || len > PG_STARTUP_MAX)
			return PGF_NOT_PG;
	}
	if (n < 8)
		return PGF_MORE;
	len = get_be32((const uint8_t *)p);
	code = get_be32((const uint8_t *)p + 4);
	if (code == PG_CODE_SSL && len == 8)
		return PGF_SSL;
	if (code == PG_CODE_GSSENC && len == 8)
		return PGF_GSSENC;
	if (code == PG_CODE_CANCEL && len == 16)
		return PGF_CANCEL;
	if (code == PG_CODE_PROTO3 && len > 8 && len <= PG_STARTUP_MAX)
		return PGF_STARTUP;
	return PGF_NOT_PG;
}

void
pg_init(struct pgframe *f)
{
	memset(f, 0, sizeof(*f));
	f->fe.startup = true;
	f->fe.hwant = 8;
	f->be.hwant = 5;
}

void
pg_free(struct pgframe *f)
{
	if (f == NULL)
		return;
	free(f->stmts);
	f->stmts = NULL;
	f->nstmts = f->capstmts = 0;
}

void
pg_exchange_next(struct pgframe *f)
{
	f->kind = PGK_NONE;
	f->req_done = false;
	f->noreply = false;
	f->ident = false;
	f->has_sql = false;
	f->copy_ended = false;
	f->sql[0] = '\0';
	f->ready = false;
	f->tx = '\0';
	f->copy = false;
	f->err_seen = f->err_now = false;
	f->err_len = 0;
	f->err_sqlstate[0] = '\0';
	f->has_key = false;
	f->key = 0;
	f->cls = SK_OTHER;
	f->nruns = 0;
}

static void
bad(struct pgframe *f, const char *side, const char *what,
    const unsigned char *hdr, size_t hlen)
{
	char	esc[64];

	pg_escape((const char *)hdr, hlen, esc, sizeof(esc));
	snprintf(f->why, sizeof(f->why), "not PostgreSQL v3 from the %s: %s "
	    "(header \"%s\")", side, what, esc);
	f->error = true;
}

static bool
fe_type_ok(char t)
{
	return t != '\0' && strchr("BCDEFHPQSXcdfp", t) != NULL;
}

static bool
be_type_ok(char t)
{
	return t != '\0' && strchr("RKSZTDCEINAGHWdcnstv123V", t) != NULL;
}

/* Which message bodies the framer reads (the rest are only skipped). */
static bool
fe_keep(char t)
{
	return t == 'Q' || t == 'P' || t == 'B';
}

static bool
be_keep(const struct pgframe *f, char t)
{
	return t == 'Z' || t == 'E' || (t == 'K' && !f->started);
}

/*
 * The header of t is complete: checks the length and sets up the body.
 * Returns false (with f->error) when it is not to be trusted.
 */
static bool
tok_head(struct pgframe *f, struct pg_tok *t, bool server)
{
	const char	*side = server ? "server" : "client";
	uint32_t	 len;

	if (t->startup) {
		len = get_be32(t->hdr);
		t->code = get_be32(t->hdr + 4);
		t->type = '\0';
		if (len < 8 || len > PG_STARTUP_MAX) {
			bad(f, side, "startup packet length out of range",
			    t->hdr, 8);
			return false;
		}
		if (t->code != PG_CODE_PROTO3 && !(t->code == PG_CODE_CANCEL &&
		    len == 16)) {
			bad(f, side, "unsupported startup packet", t->hdr, 8);
			return false;
		}
		t->left = len - 8;
		t->startup = false;
		t->hwant = 5;
	} else {
		t->type = (char)t->hdr[0];
		len = get_be32(t->hdr + 1);
		if (server ? !be_type_ok(t->type) : !fe_type_ok(t->type)) {
			bad(f, side, "unknown message type", t->hdr, 5);
			return false;
		}
		if (len < 4 || len > PG_MSG_MAX) {
			bad(f, side, "message length out of range", t->hdr, 5);
			return false;
		}
		t->left = len - 4;
	}
	t->in_body = true;
	t->caplen = 0;
	t->keep = server ? be_keep(f, t->type) : fe_keep(t->type);
	return true;
}

/*
 * Consumes bytes of one message at most.  *end is set when the message
 * completed with these bytes; *head when its header did; *body, *blen
 * (may be NULL) say which of them were the message's body.
 */
static size_t
tok_feed(struct pgframe *f, struct pg_tok *t, const char *p, size_t n,
    bool server, bool *head, bool *end, const char **body, size_t *blen)
{
	size_t	used = 0, k;

	*head = *end = false;
	if (blen != NULL)
		*blen = 0;
	if (!t->in_body) {
		k = t->hwant - t->hlen;
		if (k > n)
			k = n;
		memcpy(t->hdr + t->hlen, p, k);
		t->hlen += k;
		used = k;
		if (t->hlen < t->hwant)
			return used;
		t->hlen = 0;
		if (!tok_head(f, t, server))
			return used;
		*head = true;
	}
	k = n - used;
	if (k > t->left)
		k = t->left;
	if (t->keep && t->caplen < PG_CAP) {
		size_t	c = PG_CAP - t->caplen;

		if (c > k)
			c = k;
		memcpy(t->cap + t->caplen, p + used, c);
		t->caplen += c;
	}
	if (body != NULL) {
		*body = p + used;
		*blen = k;
	}
	t->left -= (uint32_t)k;
	used += k;
	if (t->left == 0) {
		t->in_body = false;
		*end = true;
	}
	return used;
}

/* ---- statement summaries ---- */

static bool
is_word(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '_' || ch >= 0x80;
}

void
pg_sql_summary(const char *sql, size_t n, char *out)
{
	static const char	 ell[] = " \xe2\x80\xa6";	/* " …" */
	const size_t		 room = PG_SQL_LEN - sizeof(ell);
	size_t			 i = 0, o = 0, k;
	int			 words = 0;
	bool			 space = false, cut = false, inword = false;
	unsigned char		 ch;
	uint32_t		 cp;

	while (i < n && sql[i] != '\0') {
		ch = (unsigned char)sql[i];
		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
		    ch == '\f' || ch == '\v') {
			space = o > 0;
			inword = false;
			i++;
			continue;
		}
		if (ch == '-' && i + 1 < n && sql[i + 1] == '-') {
			while (i < n && sql[i] != '\n' && sql[i] != '\0')
				i++;
			space = o > 0;
			inword = false;
			continue;
		}
		if (ch == '/' && i + 1 < n && sql[i + 1] == '*') {
			for (i += 2; i + 1 < n && !(sql[i] == '*' &&
			    sql[i + 1] == '/'); i++)
				;
			i += 2;
			space = o > 0;
			inword = false;
			continue;
		}
		/* the first literal ends the summary: no values in traces */
		if (ch == '\'' || (ch == '$' && i + 1 < n &&
		    (sql[i + 1] == '$' || (!(sql[i + 1] >= '0' &&
		    sql[i + 1] <= '9') &&
		    is_word((unsigned char)sql[i + 1])))) ||
		    (!inword && ch >= '0' && ch <= '9') ||
		    (!inword && (ch == '-' || ch == '+') && i + 1 < n &&
		    sql[i + 1] >= '0' && sql[i + 1] <= '9') ||
		    (!inword && (ch == 'E' || ch == 'e' || ch == 'B' ||
		    ch == 'b' || ch == 'X' || ch == 'x' || ch == 'U' ||
		    ch == 'u') && i + 1 < n && sql[i + 1] == '\'')) {
			cut = true;
			break;
		}
		if (space || o == 0) {
			/* a new word */
			if (words == PG_SQL_WORDS || o + 2 >= room) {
				cut = true;
				break;
			}
			if (space)
				out[o++] = ' ';
			space = false;
			words++;
		}
		if (o + 1 >= room) {
			cut = true;
			break;
		}
		/* $1: a parameter, not a literal; its digits are kept */
		inword = is_word(ch) || (ch == '$' && i + 1 < n &&
		    sql[i + 1] >= '0' && sql[i + 1] <= '9');
		/* a name in another script stays whole, or goes whole: the
		 * trace and a plan carry UTF-8, never half a character */
		if (ch >= 0x80 && (k = utf8_decode(sql + i, n - i, &cp)) > 0) {
			if (utf8_hidden(cp)) {
				out[o++] = '?';		/* one for the character */
				i += k;
				continue;
			}
			if (o + k >= room) {
				cut = true;
				break;
			}
			memcpy(out + o, sql + i, k);
			o += k;
			i += k;
			continue;
		}
		out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
		i++;
	}
	if (i >= n && n > 0 && sql[n - 1] != '\0' && !cut)
		cut = n >= PG_CAP;	/* the kept head ended mid-statement */
	if (cut) {
		/* "VALUES (…" when cut inside a word, "SELECT …" between */
		if (o > 0 && space)
			memcpy(out + o, ell, sizeof(ell));
		else
			memcpy(out + o, ell + 1, sizeof(ell) - 1);
		return;
	}
	out[o] = '\0';
}

/* A NUL-terminated string at *off in the kept head, or NULL if cut. */
static const char *
cap_str(const struct pg_tok *t, size_t *off, size_t *len)
{
	const char	*s, *z;

	if (*off >= t->caplen)
		return NULL;
	s = t->cap + *off;
	z = memchr(s, '\0', t->caplen - *off);
	*len = z ? (size_t)(z - s) : t->caplen - *off;
	*off += *len + 1;
	return s;
}

/*
 * A Parse's named statement: its summary and key, for the Binds that name
 * it later.  The table grows to PG_STMTS, then the oldest is recycled (a
 * Bind of it is then keyed unknown, never planned).
 */
static void
stmt_remember(struct pgframe *f, const char *name, size_t nl, const char *sql,
    uint64_t key)
{
	size_t	i;

	if (nl >= sizeof(f->stmts[0].name))
		return;
	for (i = 0; i < f->nstmts; i++)
		if (strlen(f->stmts[i].name) == nl &&
		    memcmp(f->stmts[i].name, name, nl) == 0)
			break;
	if (i == f->nstmts) {
		if (f->nstmts == PG_STMTS) {
			i = f->evict;
			f->evict = (f->evict + 1) % PG_STMTS;
		} else {
			if (f->nstmts == f->capstmts) {
				size_t		 cap = f->capstmts ? f->capstmts * 2 : 8;
				struct pg_stmt	*n = realloc(f->stmts,
				    cap * sizeof(*n));

				if (n == NULL)
					return;		/* it will key unknown */
				f->stmts = n;
				f->capstmts = cap;
			}
			f->nstmts++;
		}
	}
	memcpy(f->stmts[i].name, name, nl);
	f->stmts[i].name[nl] = '\0';
	snprintf(f->stmts[i].sql, sizeof(f->stmts[i].sql), "%s", sql);
	f->stmts[i].key = key;
	f->stmts[i].cls = f->pcls;
}

static const struct pg_stmt *
stmt_find(const struct pgframe *f, const char *name, size_t nl)
{
	size_t	i;

	for (i = 0; i < f->nstmts; i++)
		if (strlen(f->stmts[i].name) == nl &&
		    memcmp(f->stmts[i].name, name, nl) == 0)
			return &f->stmts[i];
	return NULL;
}

/* A statement the exchange runs, of class c. */
static void
note_run(struct pgframe *f, int c)
{
	f->cls = f->nruns++ == 0 ? (uint8_t)c : SK_OTHER;
}

int
pg_exchange_class(const struct pgframe *f)
{
	return f->nruns == 1 ? f->cls : SK_OTHER;
}

/* The exchange's key, the first to be known. */
static void
set_key(struct pgframe *f, uint64_t key)
{
	if (f->has_key)
		return;
	f->key = key;
	f->has_key = true;
}

/*
 * Body bytes of a Query or a Parse, into the statement's key: a Query's
 * text is its whole body (up to its NUL), a Parse's the second string of
 * its body, after the statement's name.
 */
static void
key_feed(struct pgframe *f, const struct pg_tok *t, const char *p, size_t n)
{
	const char	*z;
	size_t		 k;

	if (t->type == 'Q') {
		/* up to its first NUL, whichever piece it comes in (found by
		 * make fuzz: bytes after it in a later read were keyed) */
		if (f->sk_phase != 0)
			return;
		if ((z = memchr(p, '\0', n)) != NULL) {
			n = (size_t)(z - p);
			f->sk_phase = 1;
		}
		sk_feed(&f->sk, p, n);
		return;
	}
	while (n > 0 && f->sk_phase < 2) {
		z = memchr(p, '\0', n);
		k = z ? (size_t)(z - p) : n;
		if (f->sk_phase == 1)
			sk_feed(&f->sk, p, k);
		if (z == NULL)
			return;
		f->sk_phase++;
		p += k + 1;
		n -= k + 1;
		if (f->sk_phase == 2)
			f->pkey = sk_done(&f->sk);
	}
}

static void
set_sql(struct pgframe *f, const char *sql)
{
	if (f->has_sql)
		return;
	snprintf(f->sql, sizeof(f->sql), "%s", sql);
	f->has_sql = true;
}

/* A client message's header is complete: the exchange's kind. */
static void
fe_begin(struct pgframe *f, const struct pg_tok *t)
{
	enum pg_kind	k;

	if (t->type == 'Q' || t->type == 'P') {
		sk_init(&f->sk);
		f->sk_phase = 0;
		f->pkey = 0;
	}
	if (f->kind != PGK_NONE)
		return;
	switch (t->type) {
	case '\0':
		k = t->code == PG_CODE_CANCEL ? PGK_CANCEL : PGK_STARTUP;
		break;
	case 'Q':
		k = PGK_SIMPLE;
		break;
	case 'F':
		k = PGK_FUNCTION;
		break;
	case 'X':
		k = PGK_TERMINATE;
		break;
	case 'd': case 'c': case 'f': case 'p':
		k = PGK_COPY;
		break;
	default:
		k = PGK_EXTENDED;
		break;
	}
	f->kind = k;
	/* the kinds whose statement, if any, comes later */
	if (k != PGK_SIMPLE && k != PGK_EXTENDED)
		f->ident = true;
	if (k == PGK_CANCEL || k == PGK_TERMINATE || k == PGK_COPY)
		f->noreply = true;
	if (k == PGK_EXTENDED && t->type != 'P' && t->type != 'B')
		f->ident = true;	/* no statement in sight */
}

/* A client message is complete (or its kept head is full: partial). */
static void
fe_end(struct pgframe *f, const struct pg_tok *t, bool partial)
{
	char			 sum[PG_SQL_LEN];
	const char		*name, *q;
	const struct pg_stmt	*known;
	size_t			 off = 0, nl = 0, ql = 0;

	switch (t->type) {
	case 'Q':
		if (f->kind == PGK_SIMPLE && !f->has_sql) {
			pg_sql_summary(t->cap, t->caplen, sum);
			set_sql(f, sum);
		}
		/* known once its key is: the whole text, or STMTKEY_MAX of it */
		if (!partial || f->sk.fed >= STMTKEY_MAX) {
			set_key(f, sk_done(&f->sk));
			note_run(f, partial ? SK_OTHER : sk_class(&f->sk));
			f->ident = true;
		}
		if (!partial)
			f->req_done = true;
		break;
	case 'P':
		if ((name = cap_str(t, &off, &nl)) == NULL)
			break;
		if ((q = cap_str(t, &off, &ql)) == NULL) {
			q = "";
			ql = 0;
		}
		pg_sql_summary(q, ql, sum);
		if (f->sk_phase < 2 && (!partial || f->sk.fed >= STMTKEY_MAX)) {
			f->pkey = sk_done(&f->sk);	/* cut: what came is the key */
			f->sk_phase = 2;
		}
		f->pcls = partial ? SK_OTHER : (uint8_t)sk_class(&f->sk);
		if (!partial)
			stmt_remember(f, name, nl, sum, f->pkey);
		set_sql(f, sum);
		if (f->sk_phase == 2) {
			set_key(f, f->pkey);
			f->ident = true;
		}
		break;
	case 'B':
		off = 0;
		(void)cap_str(t, &off, &nl);		/* portal */
		if ((name = cap_str(t, &off, &nl)) != NULL &&
		    (known = stmt_find(f, name, nl)) != NULL) {
			set_sql(f, known->sql);
			set_key(f, known->key);
			note_run(f, known->cls);
		} else {
			set_key(f, 0);			/* unknown: never planned */
			note_run(f, SK_OTHER);
		}
		f->ident = true;
		break;
	case 'S':
	case 'F':
	case '\0':
		f->ident = true;
		f->req_done = true;
		break;
	case 'c':
	case 'f':
		f->copy_ended = true;
		f->req_done = true;
		break;
	case 'X':
		f->req_done = true;
		break;
	case 'd':
	case 'p':
		/* outside COPY or authentication: one message, unanswered */
		if (f->kind == PGK_COPY)
			f->req_done = true;
		break;
	default:
		break;
	}
}

size_t
pg_scan_client(struct pgframe *f, const char *p, size_t n)
{
	struct pg_tok	*t = &f->fe;
	const char	*body = NULL;
	size_t		 used = 0, k, blen = 0;
	bool		 head, end;
	char		 ty;

	while (used < n && !f->error) {
		if (!t->in_body && t->hlen == 0 && !t->startup) {
			ty = p[used];
			/*
			 * The first byte of a message: once the request is
			 * complete only COPY data (and, while starting up,
			 * authentication) still belongs to this exchange.
			 */
			if (f->req_done && (f->kind == PGK_STARTUP ?
			    ty != 'p' : f->copy_ended ||
			    (ty != 'd' && ty != 'c' && ty != 'f')))
				break;
		}
		k = tok_feed(f, t, p + used, n - used, false, &head, &end, &body,
		    &blen);
		used += k;
		if (f->error)
			break;
		if (head)
			fe_begin(f, t);
		if (blen > 0 && (t->type == 'Q' || t->type == 'P'))
			key_feed(f, t, body, blen);
		if (end)
			fe_end(f, t, false);
		else if (t->in_body && t->keep && t->caplen == PG_CAP &&
		    !f->ident)
			fe_end(f, t, true);
	}
	return used;
}

/* Whether needle (NUL-terminated) occurs in the n bytes at p. */
static bool
has_sub(const char *p, size_t n, const char *needle)
{
	size_t	l = strlen(needle), i;

	for (i = 0; i + l <= n; i++)
		if (memcmp(p + i, needle, l) == 0)
			return true;
	return false;
}

/* The ErrorResponse of a failed startup: its code, and whether TLS is why. */
static void
be_error(struct pgframe *f, const struct pg_tok *t)
{
	size_t	i = 0, l;
	char	field;

	while (i < t->caplen && t->cap[i] != '\0') {
		field = t->cap[i++];
		l = strnlen(t->cap + i, t->caplen - i);
		if (field == 'C' && l == 5) {
			memcpy(f->sqlstate, t->cap + i, 5);
			f->sqlstate[5] = '\0';
		}
		/* pg_hba: "no pg_hba.conf entry for ..., no encryption" */
		if (field == 'M' && has_sub(t->cap + i, l, "no encryption"))
			f->tls_required = true;
		i += l + 1;
	}
	if (strcmp(f->sqlstate, "28000") != 0)
		f->tls_required = false;
}

/* An ErrorResponse of an exchange: its code and length, kept for the engine. */
static void
err_code(struct pgframe *f, const struct pg_tok *t)
{
	size_t	i = 0, l;

	f->err_seen = true;
	f->err_len = 1 + get_be32(t->hdr + 1);
	f->err_sqlstate[0] = '\0';
	while (i < t->caplen && t->cap[i] != '\0') {
		l = strnlen(t->cap + i + 1, t->caplen - i - 1);
		if (t->cap[i] == 'C' && l == 5) {
			memcpy(f->err_sqlstate, t->cap + i + 1, 5);
			f->err_sqlstate[5] = '\0';
		}
		i += l + 2;
	}
}

size_t
pg_scan_server(struct pgframe *f, const char *p, size_t n)
{
	struct pg_tok	*t = &f->be;
	size_t		 used = 0;
	bool		 head, end;

	while (used < n && !f->error) {
		used += tok_feed(f, t, p + used, n - used, true, &head, &end, NULL,
		    NULL);
		if (f->error || !end)
			continue;
		switch (t->type) {
		case 'Z':
			f->tx = t->caplen >= 1 ? t->cap[0] : '?';
			f->ready = true;
			f->started = true;
			return used;
		case 'G': case 'H': case 'W':
			f->copy = true;
			break;
		case 'A':
			f->notifies++;
			break;
		case 'K':	/* BackendKeyData: the backend's pid */
			if (!f->started && t->caplen >= 4)
				f->backend_pid = (int32_t)get_be32((const uint8_t *)t->cap);
			break;
		case 'E':
			if (!f->started) {
				f->auth_error = true;
				be_error(f, t);
				break;
			}
			err_code(f, t);
			if (f->stop_at_error) {
				f->err_now = true;
				return used;
			}
			break;
		default:
			break;
		}
	}
	return used;
}

size_t
pg_error_message(const char *sev, const char *sqlstate, const char *msg,
    const char *detail, char *out, size_t outlen)
{
	size_t	len, o = 5;

	len = 4 + 2 * (1 + strlen(sev) + 1) + 1 + 6 + 1 + strlen(msg) + 1 +
	    (detail ? 1 + strlen(detail) + 1 : 0) + 1;
	if (len + 1 > outlen || strlen(sqlstate) != 5)
		return 0;
	out[0] = 'E';
	put_be32((uint8_t *)out + 1, (uint32_t)len);
#define FIELD(c, v) do { out[o++] = (c); memcpy(out + o, (v), strlen(v) + 1); \
	o += strlen(v) + 1; } while (0)
	FIELD('S', sev);
	FIELD('V', sev);
	FIELD('C', sqlstate);
	FIELD('M', msg);
	if (detail != NULL)
		FIELD('D', detail);
#undef FIELD
	out[o++] = '\0';
	return o;
}

size_t
pg_error_response(const char *sqlstate, const char *msg, char *out,
    size_t outlen)
{
	return pg_error_message("FATAL", sqlstate, msg, NULL, out, outlen);
}
