/*
 * Untrusted text in tickets: UTF-8 repair, cuts on character boundaries,
 * and rendering that keeps it inert in each tracker's markup (the
 * contracts are in tickets_int.h, "tickets_text.c").
 *
 * Everything a ticket shows from a run (database rows, column and
 * invariant names, SQL, stderr, messages, run ids) went through a system
 * under test or a hand-edited file: it may hold bytes that are not UTF-8,
 * HTML, markdown links, @mentions or fence lines.  None of it may change
 * what a ticket looks like, notify anyone or make a tracker refuse the body.
 */
#include "coordinator/tickets_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

#define REPLACEMENT	"\xef\xbf\xbd"	/* U+FFFD */
#define ZWSP		"\xe2\x80\x8b"	/* U+200B, zero width space */

bool
tk_utf8_valid(const char *s, size_t n)
{
	size_t	i = 0, k;

	while (i < n) {
		if ((k = utf8_decode(s + i, n - i, NULL)) == 0)
			return false;
		i += k;
	}
	return true;
}

char *
tk_utf8_clean(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	char			*out;
	size_t			 i = 0, o = 0, k;

	/* Each bad byte becomes 3 bytes at most. */
	out = xcalloc(3 * n + 1, 1);
	while (i < n) {
		k = utf8_decode(s + i, n - i, NULL);
		if (k == 1 && ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t' &&
		    p[i] != '\r') || p[i] == 0x7f))
			k = 0;	/* a terminal escape is no better than a bad byte */
		if (k == 0) {
			memcpy(out + o, REPLACEMENT, 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

/* The cleaned s cut to cap bytes; *cut says whether something was dropped. */
static char *
clean_cut(const char *s, size_t cap, bool *cut)
{
	char	*c = tk_utf8_clean(s, strlen(s));
	size_t	 n = utf8_prefix(c, strlen(c), cap);

	*cut = c[n] != '\0';
	c[n] = '\0';
	return c;
}

/*
 * Markdown (GitHub, GitLab, the file sink), outside code.  Every character
 * that markdown, GitHub's HTML filter or its reference filters give a
 * meaning is written as a numeric HTML entity: CommonMark decodes entities
 * in text into the plain character and gives it no further meaning, so
 * "<img>" shows as typed, "[x](y)" is no link, "**" no emphasis, "|" no
 * table column.  A backslash escape would do the same for markdown, but
 * not for mentions: GitHub finds "@name" in the rendered text, after
 * escapes and entities are decoded, so "@" is followed by a zero width
 * space (U+200B, as Dependabot and Renovate do) that breaks the mention
 * and shows nothing.  A bare "http://x" may still become a link (GFM's
 * autolinks), but one that shows its real target, as text.
 */
static const char *
md_entity(unsigned char c)
{
	switch (c) {
	case '<':	return "&lt;";
	case '>':	return "&gt;";
	case '&':	return "&amp;";
	case '@':	return "&#64;&#8203;";
	case '[':	return "&#91;";
	case ']':	return "&#93;";
	case '!':	return "&#33;";
	case '|':	return "&#124;";
	case '`':	return "&#96;";
	case '*':	return "&#42;";
	case '_':	return "&#95;";
	case '~':	return "&#126;";
	case '\\':	return "&#92;";
	case '#':	return "&#35;";
	case '$':	return "&#36;";	/* GitHub math */
	default:	return NULL;
	}
}

/*
 * Jira wiki markup (REST v2 "description" and comment "body"), outside
 * {noformat}.  The markup characters are backslash-escaped ("\X" shows X).
 * A backslash itself cannot be: "\\" is Jira's line break, so it becomes
 * U+FF3C (fullwidth reverse solidus), which looks the same.  Jira mentions
 * are "[~user]", which the escaped "[" disarms; a zero width space after
 * "@" keeps Jira Cloud's editor from turning "@name" into one on an edit.
 * Wiki markup has no raw HTML (the {html} macro is off by default) and
 * Jira escapes "<", ">" and "&" when it renders, so they stay as they are.
 */
static const char *
jira_escape(unsigned char c)
{
	switch (c) {
	case '[':	return "\\[";
	case ']':	return "\\]";
	case '{':	return "\\{";
	case '}':	return "\\}";
	case '|':	return "\\|";
	case '*':	return "\\*";
	case '_':	return "\\_";
	case '-':	return "\\-";
	case '+':	return "\\+";
	case '^':	return "\\^";
	case '~':	return "\\~";
	case '!':	return "\\!";
	case '?':	return "\\?";
	case '#':	return "\\#";
	case '(':	return "\\(";
	case ')':	return "\\)";
	case '\\':	return "\xef\xbc\xbc";
	case '@':	return "@" ZWSP;
	default:	return NULL;	/* "<", ">", "&": Jira escapes HTML itself */
	}
}

void
tk_put_text(FILE *f, enum tk_dialect d, const char *s, size_t cap)
{
	const char	*e;
	char		*c, *p;
	bool		 cut;

	if (s == NULL) {
		fputs("NULL", f);
		return;
	}
	c = clean_cut(s, cap, &cut);
	for (p = c; *p != '\0'; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t') {
			fputc(' ', f);
			continue;
		}
		/*
		 * An "_" between two letters or digits never starts or ends
		 * emphasis in CommonMark (6.2, intraword): snake_case stays
		 * readable.  Jira has no such rule.
		 */
		if (d == TK_MD && *p == '_' && p > c && isalnum((unsigned char)
		    p[-1]) && isalnum((unsigned char)p[1])) {
			fputc('_', f);
			continue;
		}
		e = d == TK_JIRA ? jira_escape((unsigned char)*p) :
		    md_entity((unsigned char)*p);
		if (e != NULL)
			fputs(e, f);
		else
			fputc(*p, f);
	}
	if (cut)
		fputs("…", f);
	free(c);
}

/* The longest run of ch in s. */
static size_t
longest_run(const char *s, char ch)
{
	size_t	best = 0, run = 0;

	for (; *s != '\0'; s++) {
		run = *s == ch ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best;
}

void
tk_put_code(FILE *f, enum tk_dialect d, const char *s, size_t cap,
    bool in_table)
{
	char	*c, *p;
	size_t	 ticks, i, n;
	bool	 cut, pad;

	if (s == NULL) {
		fputs(d == TK_JIRA ? "NULL" : "`NULL`", f);
		return;
	}
	if (*s == '\0')
		return;	/* an empty span is no span: its delimiters would show */
	if (d == TK_JIRA) {
		/*
		 * Escaped text, not {{monospace}}: Jira reads markup inside
		 * {{...}} too, and "{{" before the text would make "{{noformat"
		 * of a value that starts with "noformat".
		 */
		tk_put_text(f, d, s, cap);
		return;
	}
	c = clean_cut(s, cap, &cut);
	for (p = c; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	/*
	 * A code span ends at the first backtick run as long as its opener:
	 * one longer than any run inside cannot be closed early.  A space
	 * inside each delimiter, which the renderer strips (CommonMark 6.1),
	 * lets the text start or end with a backtick or a space.
	 */
	ticks = longest_run(c, '`') + 1;
	n = strlen(c);
	pad = n > 0 && (c[0] == '`' || c[0] == ' ' || c[n - 1] == '`' ||
	    c[n - 1] == ' ' || cut);
	for (i = 0; i < ticks; i++)
		fputc('`', f);
	if (pad)
		fputc(' ', f);
	for (p = c; *p != '\0'; p++) {
		/* GFM splits table cells before code spans: "\|" is a "|" there. */
		if (*p == '|' && in_table)
			fputs("\\|", f);
		else
			fputc(*p, f);
	}
	if (cut)
		fputs("…", f);
	if (pad)
		fputc(' ', f);
	for (i = 0; i < ticks; i++)
		fputc('`', f);
	free(c);
}

void
tk_put_block(FILE *f, enum tk_dialect d, const char *lang, const char *text)
{
	char	*c = tk_utf8_clean(text, strlen(text)), *p;
	size_t	 n = strlen(c), i, tildes;
	bool	 nl = n > 0 && c[n - 1] == '\n';

	if (d == TK_JIRA) {
		/*
		 * {noformat} shows its text as is and ends at the next
		 * "{noformat": a zero width space after each "{" that starts
		 * one inside keeps the block whole and shows nothing.
		 */
		fputs("{noformat}\n", f);
		for (p = c; *p != '\0'; p++) {
			fputc(*p, f);
			if (*p == '{' && strncasecmp(p + 1, "noformat", 8) == 0)
				fputs(ZWSP, f);
		}
		fprintf(f, "%s{noformat}\n", nl || n == 0 ? "" : "\n");
		free(c);
		return;
	}
	/*
	 * A fenced block ends at a line of at least as many tildes as its
	 * opener (CommonMark 4.5): one longer than any run of tildes in the
	 * text cannot be closed by it.
	 */
	tildes = longest_run(c, '~') + 1;
	if (tildes < 4)
		tildes = 4;
	for (i = 0; i < tildes; i++)
		fputc('~', f);
	fprintf(f, "%s\n%s%s", lang, c, nl || n == 0 ? "" : "\n");
	for (i = 0; i < tildes; i++)
		fputc('~', f);
	fputc('\n', f);
	free(c);
}

char *
tk_marker_id(const char *s)
{
	char	*c = xstrdup(s != NULL ? s : ""), *p;

	/* An HTML comment must not be ended by the id ("-->"). */
	for (p = c; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		    *p == ':' || (*p == '-' && p[1] != '-' && p[1] != '>')))
			*p = '_';
	return c;
}

char *
tk_plain(const char *s, size_t cap)
{
	char	*c, *p, *r;
	bool	 cut;

	c = clean_cut(s != NULL ? s : "", cap, &cut);
	for (p = c; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	if (!cut)
		return c;
	r = xasprintf("%s…", c);
	free(c);
	return r;
}
