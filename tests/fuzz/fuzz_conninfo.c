/*
 * Password redaction of libpq connection strings (common/conninfo.h) on
 * arbitrary strings, with libpq itself as the judge of where a password
 * is: what PQconninfoParse reads as "password" is what must never be
 * shown.  Checked on every string S (the input up to its first NUL):
 *  - when libpq reads a password in S (not empty, not the mark),
 *    conninfo_has_password(S) says so;
 *  - R = conninfo_redact(S) holds no password by soak's reading nor by
 *    libpq's, redacts to itself, and is S itself when S holds none;
 *  - conninfo_scrub of a message quoting S and its password leaves a
 *    NUL-terminated message within its buffer without that password.
 */
#include <string.h>

#include <libpq-fe.h>

#include "common/conninfo.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

/* libpq's reading of s's password: heap, or NULL (none, or s refused). */
static char *
libpq_password(const char *s)
{
	PQconninfoOption	*opts, *o;
	char			*errmsg = NULL, *pw = NULL;

	if ((opts = PQconninfoParse(s, &errmsg)) == NULL) {
		PQfreemem(errmsg);
		return NULL;
	}
	for (o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL)
			pw = xstrdup(o->val);
	PQconninfoFree(opts);
	return pw;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = xcalloc(1, size + 1), *r, *again, *pw, *rpw;
	char	 msg[256];

	memcpy(s, data, size);
	pw = libpq_password(s);
	if (pw != NULL && (*pw == '\0' || strcmp(pw, CONNINFO_MARK) == 0)) {
		free(pw);
		pw = NULL;
	}
	FUZZ_CHECK(pw == NULL || conninfo_has_password(s),
	    "libpq reads a password that soak does not see in \"%s\"", s);

	r = conninfo_redact(s);
	FUZZ_CHECK(r != NULL, "no redaction");
	FUZZ_CHECK(!conninfo_has_password(r),
	    "the redaction \"%s\" still holds a password", r);
	rpw = libpq_password(r);
	FUZZ_CHECK(rpw == NULL || *rpw == '\0' || strcmp(rpw, CONNINFO_MARK) == 0,
	    "libpq reads the password \"%s\" in the redaction \"%s\"", rpw, r);
	again = conninfo_redact(r);
	FUZZ_CHECK(strcmp(again, r) == 0, "redacting \"%s\" again gives \"%s\"",
	    r, again);
	FUZZ_CHECK(conninfo_has_password(s) || strcmp(r, s) == 0,
	    "\"%s\" holds no password but redacts to \"%s\"", s, r);

	/*
	 * A password that starts or ends with the mark's '*' may be made
	 * again by a mark put beside a letter: "*a" in "***a".
	 */
	if (pw != NULL && pw[0] != '*' && pw[strlen(pw) - 1] != '*') {
		snprintf(msg, sizeof(msg), "connection to \"%s\" failed: "
		    "password \"%s\" refused", s, pw);
		conninfo_scrub(msg, sizeof(msg), s);
		FUZZ_CHECK(memchr(msg, '\0', sizeof(msg)) != NULL,
		    "a scrubbed message not terminated");
		FUZZ_CHECK(strstr(msg, pw) == NULL,
		    "the password \"%s\" of \"%s\" stays in \"%s\"", pw, s, msg);
	}
	free(again);
	free(rpw);
	free(r);
	free(pw);
	free(s);
	return 0;
}
