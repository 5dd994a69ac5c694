/*
 * The statement normaliser (fault-proxy/stmtkey.h): a statement's text as
 * the proxy streams it, in whatever pieces the client's packets and the
 * proxy's reads cut it.  Input:
 *
 *	flags  nsizes  size[nsizes]  text...
 *
 * flags 0x?f: the text, spaces, and the text twice again with the cut
 * STMTKEY_MAX (60 KiB) at (flags >> 4) % its length into the first of
 * those, so the cut is exercised (one input in 16 of the fuzzer's own:
 * 60 KiB fed three ways costs a hundred short statements).  The text is
 * fed whole, in pieces of the given sizes (cycled; 0 is an empty feed),
 * and, when short, a byte at a time.  Checked:
 *  - the key, the class (sk_class) and the normalized text are the same
 *    whichever way it was fed, and stmtkey_sql's (one piece) too;
 *  - an empty feed changes nothing;
 *  - a statement cut at STMTKEY_MAX is never classed a read, a BEGIN or a
 *    session setting: what lies past the cut (a FOR UPDATE, a second
 *    statement) is unknown, so it is SK_OTHER (docs/explore.md), and it
 *    is keyed by its first STMTKEY_MAX bytes alone;
 *  - the normalized text is NUL-terminated within its buffer.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fault-proxy/stmtkey.h"
#include "tests/fuzz/fuzz.h"

#define NORM_LEN	512

struct fed {
	uint64_t	 key;
	enum sk_class	 cls;
	char		 norm[NORM_LEN];
};

static void
feed(const char *p, size_t n, const uint8_t *sizes, size_t nsizes, bool bytes,
    struct fed *out)
{
	struct stmtkey	k;
	size_t		 off = 0, si = 0, c;
	uint64_t	 h;

	sk_init(&k);
	k.out = out->norm;
	k.outcap = sizeof(out->norm);
	out->norm[0] = '\0';
	while (off < n) {
		c = n - off;
		if (bytes)
			c = 1;
		else if (nsizes > 0) {
			c = sizes[si++ % nsizes];
			if (c == 0) {
				h = k.h;
				sk_feed(&k, p + off, 0);
				FUZZ_CHECK(k.h == h, "an empty feed moved the hash");
				c = 1;
			}
			if (c > n - off)
				c = n - off;
		}
		sk_feed(&k, p + off, c);
		off += c;
	}
	out->key = sk_done(&k);
	out->cls = sk_class(&k);
	FUZZ_CHECK(memchr(out->norm, '\0', sizeof(out->norm)) != NULL,
	    "the normalized text is not terminated");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fed	 whole, split, bytes;
	const uint8_t		*sizes;
	const char		*text;
	char			*big = NULL;
	size_t			 nsizes, n, at;
	bool			 longer;

	if (size < 2)
		return 0;
	longer = (data[0] & 0x0f) == 0x0f;
	nsizes = data[1] % 16;
	if (size < 2 + nsizes)
		return 0;
	sizes = data + 2;
	text = (const char *)data + 2 + nsizes;
	n = size - 2 - nsizes;
	if (n == 0 || n > STMTKEY_MAX / 4)
		longer = false;
	if (longer) {
		/*
		 * The text, spaces, and the text twice more with the cut
		 * inside the first of those (where, by flags' other bits):
		 * what came before the cut is known, what lies past it
		 * (a FOR UPDATE, a second statement) is not.  Spaces, not
		 * copies, between: a lexer's token costs, and the target
		 * stays fast enough to run millions of times.
		 */
		at = STMTKEY_MAX - (size_t)(data[0] >> 4) % n;
		big = malloc(at + 2 * n);
		FUZZ_CHECK(big != NULL, "no memory");
		memcpy(big, text, n);
		memset(big + n, ' ', at - n);
		memcpy(big + at, text, n);
		memcpy(big + at + n, text, n);
		text = big;
		n = at + 2 * n;
	}
	feed(text, n, NULL, 0, false, &whole);
	feed(text, n, sizes, nsizes, false, &split);
	FUZZ_CHECK(whole.key == split.key && whole.cls == split.cls,
	    "whole: key %016llx class %d; split: %016llx class %d",
	    (unsigned long long)whole.key, whole.cls,
	    (unsigned long long)split.key, split.cls);
	FUZZ_CHECK(strcmp(whole.norm, split.norm) == 0,
	    "normalized whole \"%s\", split \"%s\"", whole.norm, split.norm);
	if (!longer) {
		feed(text, n, NULL, 0, true, &bytes);
		FUZZ_CHECK(whole.key == bytes.key && whole.cls == bytes.cls &&
		    strcmp(whole.norm, bytes.norm) == 0,
		    "whole: key %016llx class %d; a byte at a time: %016llx "
		    "class %d", (unsigned long long)whole.key, whole.cls,
		    (unsigned long long)bytes.key, bytes.cls);
		FUZZ_CHECK(stmtkey_sql(text, n) == whole.key, "stmtkey_sql differs");
	} else {
		FUZZ_CHECK(whole.cls == SK_OTHER, "a statement cut at %u bytes "
		    "classed %d, not other", STMTKEY_MAX, whole.cls);
		FUZZ_CHECK(stmtkey_sql(text, STMTKEY_MAX) == whole.key,
		    "a statement cut at %u bytes is not keyed by what came",
		    STMTKEY_MAX);
	}
	free(big);
	return 0;
}
