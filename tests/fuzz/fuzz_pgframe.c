/*
 * libFuzzer target for the fault proxy's PostgreSQL framing
 * (fault-proxy/pgframe.c).  Input: two length bytes (how much of the rest
 * is the client's stream), then the client's bytes, then the server's;
 * the chunk sizes come from the first bytes, recycled.  The streams are
 * walked the way the engine walks them (exchange by exchange: client bytes
 * up to the boundary, then server bytes up to ReadyForQuery), once in one
 * piece and once cut into chunks.
 *
 * Invariants: no scan returns more than it was given; after an error
 * nothing more is consumed; kinds are in range; a statement summary is a
 * NUL-terminated string of printable ASCII and whole UTF-8 characters, none
 * a control or hidden (utf8_hidden), with no quote that would start a
 * literal; and the exchanges found — their kinds,
 * statements, boundaries and transaction states — do not depend on how
 * the reads were cut.
 */
#include <stdbool.h>
#include <string.h>

#include "common/util.h"
#include "fault-proxy/pgframe.h"
#include "tests/fuzz/fuzz.h"

#define MAX_EX	64

struct walk {
	size_t		 nex;
	enum pg_kind	 kind[MAX_EX];
	char		 sql[MAX_EX][PG_SQL_LEN];
	size_t		 cend[MAX_EX];	/* client offset after the exchange */
	size_t		 send[MAX_EX];	/* server offset after it */
	char		 tx[MAX_EX];
	bool		 has_key[MAX_EX];
	uint64_t	 key[MAX_EX];
	bool		 error;
};

static void
check_sql(const char *s)
{
	size_t	n = strnlen(s, PG_SQL_LEN), i, k;

	FUZZ_CHECK(n < PG_SQL_LEN, "summary not terminated");
	for (i = 0; i < n; i += k) {
		unsigned char	ch = (unsigned char)s[i];
		uint32_t	cp;

		k = 1;
		if (ch >= 0x80) {
			k = utf8_decode(s + i, n - i, &cp);
			FUZZ_CHECK(k > 0 && cp >= 0xa0 && !utf8_hidden(cp),
			    "byte 0x%02x at %zu of summary \"%s\" is not a "
			    "visible character", ch, i, s);
			continue;
		}
		FUZZ_CHECK(ch >= 0x20 && ch < 0x7f && ch != '\'',
		    "byte 0x%02x at %zu of summary \"%s\"", ch, i, s);
	}
}

/* Feeds at most `chunk(k)` bytes per call. */
static size_t
step(const uint8_t *cuts, size_t ncuts, size_t *k)
{
	size_t	c = ncuts ? (size_t)cuts[*k % ncuts] % 64 + 1 : SIZE_MAX;

	(*k)++;
	return c;
}

static void
walk(const char *cs, size_t cn, const char *ss, size_t sn,
    const uint8_t *cuts, size_t ncuts, struct walk *w)
{
	static struct pgframe	f;
	size_t			co = 0, so = 0, k = 0, lim, got, avail;

	memset(w, 0, sizeof(*w));
	pg_init(&f);
	while (w->nex < MAX_EX && !f.error && (co < cn || so < sn)) {
		/* the client's side of one exchange, up to its boundary */
		for (;;) {
			lim = step(cuts, ncuts, &k);
			avail = cn - co < lim ? cn - co : lim;
			if (avail == 0)
				break;
			got = pg_scan_client(&f, cs + co, avail);
			FUZZ_CHECK(got <= avail, "consumed %zu of %zu", got, avail);
			co += got;
			if (f.error || got < avail)
				break;
		}
		if (f.error)
			break;
		/* then the server's, up to ReadyForQuery */
		while (so < sn && !f.ready && !f.error) {
			lim = step(cuts, ncuts, &k);
			avail = sn - so < lim ? sn - so : lim;
			got = pg_scan_server(&f, ss + so, avail);
			FUZZ_CHECK(got <= avail, "consumed %zu of %zu", got, avail);
			so += got;
		}
		if (f.error)
			break;
		FUZZ_CHECK((unsigned)f.kind < PGK_MAX, "kind %d", (int)f.kind);
		FUZZ_CHECK(pg_kind_name(f.kind) != NULL, "kind %d unnamed",
		    (int)f.kind);
		check_sql(f.sql);
		w->kind[w->nex] = f.kind;
		memcpy(w->sql[w->nex], f.sql, PG_SQL_LEN);
		w->cend[w->nex] = co;
		w->send[w->nex] = so;
		w->tx[w->nex] = f.ready ? f.tx : 0;
		w->has_key[w->nex] = f.has_key;
		w->key[w->nex] = f.has_key ? f.key : 0;
		w->nex++;
		if (!f.ready && co == cn)
			break;		/* neither side can say more */
		pg_exchange_next(&f);
	}
	if (f.error) {
		/* refused: nothing more is taken, and the reason is a sentence */
		FUZZ_CHECK(pg_scan_client(&f, "Q", 1) == 0,
		    "client bytes taken after a refusal");
		FUZZ_CHECK(pg_scan_server(&f, "Z", 1) == 0,
		    "server bytes taken after a refusal");
		FUZZ_CHECK(strnlen(f.why, sizeof(f.why)) < sizeof(f.why),
		    "reason not terminated");
		FUZZ_CHECK(f.why[0] != '\0', "refused without a reason");
	}
	w->error = f.error;
	pg_free(&f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct walk	one, cut;
	char			sum[PG_SQL_LEN], esc[64];
	size_t			cn, i;
	const char		*cs, *ss;

	if (size < 2)
		return 0;
	cn = ((size_t)data[0] << 8 | data[1]);
	data += 2;
	size -= 2;
	if (cn > size)
		cn = size;
	cs = (const char *)data;
	ss = (const char *)data + cn;

	walk(cs, cn, ss, size - cn, NULL, 0, &one);
	walk(cs, cn, ss, size - cn, data, size < 16 ? size : 16, &cut);
	/* framing does not depend on where reads are cut */
	FUZZ_CHECK(one.error == cut.error, "refused in one piece: %d, cut: %d",
	    one.error, cut.error);
	FUZZ_CHECK(one.nex == cut.nex, "%zu exchanges in one piece, %zu cut",
	    one.nex, cut.nex);
	for (i = 0; i < one.nex; i++) {
		FUZZ_CHECK(one.kind[i] == cut.kind[i], "exchange %zu: kind", i);
		FUZZ_CHECK(strcmp(one.sql[i], cut.sql[i]) == 0, "exchange %zu: \"%s\" vs \"%s\"",
		    i, one.sql[i], cut.sql[i]);
		FUZZ_CHECK(one.cend[i] == cut.cend[i], "exchange %zu: client end "
		    "%zu vs %zu", i, one.cend[i], cut.cend[i]);
		FUZZ_CHECK(one.send[i] == cut.send[i], "exchange %zu: server end "
		    "%zu vs %zu", i, one.send[i], cut.send[i]);
		FUZZ_CHECK(one.tx[i] == cut.tx[i], "exchange %zu: tx", i);
		/* nor does a statement's key (plans, docs/plan.md) */
		FUZZ_CHECK(one.has_key[i] == cut.has_key[i] &&
		    one.key[i] == cut.key[i], "exchange %zu: key %016llx vs %016llx",
		    i, (unsigned long long)one.key[i], (unsigned long long)cut.key[i]);
	}

	/* the summary and the escaper on raw bytes */
	pg_sql_summary(cs, cn, sum);
	check_sql(sum);
	pg_escape(cs, cn, esc, sizeof(esc));
	FUZZ_CHECK(strlen(esc) < sizeof(esc), "escape overflow");
	return 0;
}
