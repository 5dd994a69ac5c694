/*
 * libpq connection strings: where their password is, and how to keep it
 * out of everything soak writes or prints.
 *
 * soak needs the real string only to connect (and workers receive it for
 * that).  Anything a person or a file sees -- log lines, error messages,
 * report.json, junit.xml, failures/, tickets, RUN_DIR/config.yaml -- gets
 * the password replaced by CONNINFO_MARK, "***".
 *
 * The password is found by libpq's own rules (PQconninfoParse):
 *  - URI form, "postgresql://" or "postgres://": the PASSWORD of
 *    user:PASSWORD@host..., percent-encoded or not, and the value of every
 *    "password" query parameter (?password=..., the key percent-encoded or
 *    not);
 *  - keyword/value form: the value of every "password" keyword, blanks
 *    around '=' allowed, unquoted (backslash escapes) or single-quoted
 *    ('a b\' c', which becomes '***').
 * "sslpassword" (the passphrase of an encrypted sslkey) is a password too,
 * in either form, and is hidden the same way.
 * and, where libpq would refuse the string or read it otherwise than its
 * author meant, soak hides more rather than less, because libpq's own error
 * messages echo the token they choke on: the scheme is matched in any case
 * and after leading blanks; the userinfo runs to the last '@' before the
 * query (a password holding an unencoded '/' or '@'); the words after an
 * unquoted password that libpq would reject for lacking an '=' count as
 * part of it (a password with a blank, unquoted).  An empty password is
 * left as it is: there is nothing to hide.
 */
#ifndef SOAK_CONNINFO_H
#define SOAK_CONNINFO_H

#include <stdbool.h>
#include <stddef.h>

#define CONNINFO_MARK	"***"

/*
 * A heap copy of conninfo with every password replaced by CONNINFO_MARK,
 * everything else byte for byte; NULL for NULL.  Idempotent: the redacted
 * string redacts to itself, and conninfo_has_password says no of it.
 */
char	*conninfo_redact(const char *conninfo);

/* Whether conninfo holds a password other than CONNINFO_MARK itself. */
bool	 conninfo_has_password(const char *conninfo);

/*
 * Replaces in msg (a NUL-terminated string in a buffer of size bytes)
 * every occurrence of conninfo's passwords, as written, as libpq reads
 * them (percent-decoded, unescaped) and, for a URI password holding
 * '@', '/', ':' or ',', each piece between those (what libpq quotes when it
 * misreads the password as host or port), with CONNINFO_MARK; longest
 * first, and a result longer than the buffer is cut.  For libpq's
 * messages and any that quote a connection string's parts.  A short
 * password makes a garbled message rather than a leak.  A no-op for a
 * NULL conninfo.
 */
void	 conninfo_scrub(char *msg, size_t size, const char *conninfo);

#endif
