/*
 * Secrets taken out of text soak captures: a turn, a service or the setup
 * that prints its PGPASSWORD (a harness dumping its environment, a libpq
 * error quoting a connection string) or the shared secret must not put it
 * into journal.jsonl, failures/, detail.json, report.json or a ticket
 * body, which may go to an outside tracker.
 *
 * A scrubber holds the secrets of one process: the database passwords of
 * its connection string (password, sslpassword: as libpq reads them,
 * common/conninfo.h), the PGPASSWORD of its environment, the shared secret.
 * scrub_text replaces each occurrence with SCRUB_MARK in every form libpq
 * would read it back: each byte of the secret written as itself, as %XX
 * (either case: a URL's percent-encoding, by any encoder), after a
 * backslash (keyword values, quoted or not, and JSON's \" and \\), and a
 * blank as '+' (form encoding).  So the forms
 *	Pw'd @x		Pw%27d%20%40x		password='Pw\'d @x'
 *	postgresql://u:Pw%27d%20%40x@h/db	password=Pw'd\ @x
 * all go, and what surrounds them (quotes, "password=", the URL) stays.
 *
 * A secret shorter than SCRUB_MIN bytes, or equal to the role or the
 * database name of its connection string, cannot be scrubbed as text
 * without mangling every 'postgres' or short word of the output; it is not
 * added, and the adder says so (*why) for the caller to log.
 *
 * Cost: O(text length x secrets), a byte compare per position but where a
 * secret's first byte (or '%' or '\\') is.  The text never grows (a mark is
 * 3 bytes, a secret at least SCRUB_MIN), so scrubbing is in place.
 */
#ifndef SOAK_SCRUB_H
#define SOAK_SCRUB_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define SCRUB_MARK	"***"
#define SCRUB_MIN	6

struct scrub;

struct scrub	*scrub_new(void);
void		 scrub_free(struct scrub *sc);
/*
 * Adds a secret of len bytes, what (e.g. "the shared secret") naming it in
 * *why: 0; 1 when it is already there; -1 when it cannot be scrubbed as
 * text (*why, a sentence to log).
 */
int		 scrub_add(struct scrub *sc, const char *what, const void *secret,
		    size_t len, char *why);
/*
 * The passwords of conninfo as libpq reads them (none for NULL or a
 * string libpq refuses); -1 with *why when one cannot be scrubbed (too
 * short, or the role or database name), the others still added.
 */
int		 scrub_add_conninfo(struct scrub *sc, const char *conninfo, char *why);
bool		 scrub_empty(const struct scrub *sc);
/* The most bytes one secret can take written out (every byte as %XX). */
size_t		 scrub_reach(const struct scrub *sc);
/*
 * In place: every secret in text (NUL-terminated) becomes SCRUB_MARK.
 * Returns how many were replaced.  NULL sc or text: 0.
 */
size_t		 scrub_text(const struct scrub *sc, char *text);
/*
 * Every string of v, and every key of its objects, scrubbed; strings
 * that change are replaced in place.  Returns how many were replaced.
 */
size_t		 scrub_json(const struct scrub *sc, json_t *v);

#endif
