/*
 * report.html's pieces that every part of the page writes with (report_html.c,
 * report_lanes.c, report_since.c): escaping, scrubbing, the output helpers
 * and report.json read one record at a time.  Below the page's parts, so
 * they call down to it and it calls none of them.
 */
#include "coordinator/report_html.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/conninfo.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/util.h"
#include "coordinator/fingerprint.h"
#include "coordinator/report_html_int.h"

static void
escape_n(FILE *f, const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s, *end = p + n;
	size_t			 k;

	while (p < end) {
		switch (*p) {
		case '&':	fputs("&amp;", f); p++; continue;
		case '<':	fputs("&lt;", f); p++; continue;
		case '>':	fputs("&gt;", f); p++; continue;
		case '"':	fputs("&quot;", f); p++; continue;
		case '\'':	fputs("&#39;", f); p++; continue;
		case '\n': case '\t':
			fputc(*p++, f);
			continue;
		}
		/* util.h's one decoder: NUL and controls are caught above it */
		if (*p < 0x20 || *p == 0x7f ||
		    (k = utf8_decode((const char *)p, (size_t)(end - p), NULL)) == 0) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			p++;
			continue;
		}
		fwrite(p, 1, k, f);
		p += k;
	}
}

void
report_html_escape(FILE *f, const char *s)
{
	if (s != NULL)
		escape_n(f, s, strlen(s));
}

void
report_scrub_init(struct report_scrub *sc, const struct cfg *cfg)
{
	const char	*env = getenv("SOAK_DATABASE_URL"), *tok;
	size_t		 n = 0, w = 0;

	memset(sc, 0, sizeof(*sc));
	sc->conninfos = xcalloc(3, sizeof(char *));
	sc->words = xcalloc(2, sizeof(char *));
	if (cfg != NULL && cfg->db_url != NULL && *cfg->db_url)
		sc->conninfos[n++] = xstrdup(cfg->db_url);
	if (env != NULL && *env)
		sc->conninfos[n++] = xstrdup(env);
	if (cfg != NULL && cfg->tickets.token_env != NULL &&
	    (tok = getenv(cfg->tickets.token_env)) != NULL && strlen(tok) >= 4)
		sc->words[w++] = xstrdup(tok);
}

void
report_scrub_free(struct report_scrub *sc)
{
	strv_free(sc->conninfos);
	strv_free(sc->words);
	memset(sc, 0, sizeof(*sc));
}

/* Every occurrence of word in *s replaced by CONNINFO_MARK. */
static void
scrub_word(char **s, const char *word)
{
	size_t	 wl = strlen(word), ml = strlen(CONNINFO_MARK), n = 0;
	char	*p, *o, *q;

	for (p = *s; (p = strstr(p, word)) != NULL; p += wl)
		n++;
	if (n == 0)
		return;
	o = q = xcalloc(strlen(*s) + n * ml + 1, 1);
	for (p = *s; *p;) {
		if (strncmp(p, word, wl) == 0) {
			memcpy(q, CONNINFO_MARK, ml);
			q += ml;
			p += wl;
		} else
			*q++ = *p++;
	}
	free(*s);
	*s = o;
}

char *
report_html_scrub(const struct report_scrub *sc, const char *s)
{
	size_t	 len = strlen(s), size;
	char	*o;
	size_t	 i;

	/* A mark can be longer than the password it replaces: room for it. */
	size = len * 3 + 8;
	o = xcalloc(size, 1);
	memcpy(o, s, len);
	for (i = 0; sc->conninfos && sc->conninfos[i]; i++)
		conninfo_scrub(o, size, sc->conninfos[i]);
	for (i = 0; sc->words && sc->words[i]; i++)
		scrub_word(&o, sc->words[i]);
	return o;
}

static bool
scrub_needed(const struct rh *h)
{
	return (h->scrub.conninfos && h->scrub.conninfos[0]) ||
	    (h->scrub.words && h->scrub.words[0]);
}

void
rh_text(struct rh *h, const char *s)
{
	char	*c;

	if (s == NULL)
		return;
	if (!scrub_needed(h)) {
		escape_n(h->f, s, strlen(s));
		return;
	}
	c = report_html_scrub(&h->scrub, s);
	escape_n(h->f, c, strlen(c));
	free(c);
}

void
rh_textn(struct rh *h, const char *s, size_t n)
{
	char	*c;
	size_t	 len;

	if (s == NULL)
		return;
	len = strlen(s);
	if (len <= n) {
		rh_text(h, s);
		return;
	}
	c = strndup(s, utf8_prefix(s, len, n));
	if (c == NULL)
		abort();
	rh_text(h, c);
	fputs("…", h->f);
	free(c);
}

void
rh_put(struct rh *h, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfprintf(h->f, fmt, ap);
	va_end(ap);
}

const char *
rh_dur(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "?");
	else if (ms < 1000)
		snprintf(buf, len, "%" PRId64 " ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1f s", (double)ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, len, "%" PRId64 " min %" PRId64 " s", ms / 60000,
		    ms / 1000 % 60);
	else
		snprintf(buf, len, "%" PRId64 " h %" PRId64 " min", ms / 3600000,
		    ms / 60000 % 60);
	return buf;
}

/* --- report.json ------------------------------------------------------- */

/* A seed's verdict as the grid's class: p f i (m: none). */
char
rh_verdict_class(const char *v)
{
	if (v == NULL)
		return 'm';
	if (strcmp(v, "pass") == 0)
		return 'p';
	if (strcmp(v, "fail") == 0)
		return 'f';
	return 'i';
}

/*
 * report.json one record at a time (report_html_int.h).  report.c writes
 * "results" last; the head is the text before that key, closed, and each
 * record is parsed alone (JSON_DISABLE_EOF_CHECK says where it ended).  A
 * candidate "results" inside an earlier field leaves a head that does
 * not parse, and the next one is tried.
 */
int
rh_report_stream(const char *path, void (*head_fn)(json_t *, void *),
    void (*rec_fn)(json_t *, void *), void *arg, char *err)
{
	int		 fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	struct stat	 st;
	char		*map = MAP_FAILED, *p, *end, *k, *head;
	json_t		*h = NULL, *r;
	json_error_t	 jerr;
	size_t		 hl;

	if (fd == -1 || fstat(fd, &st) == -1) {
		errf(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (st.st_size == 0) {
		errf(err, "%s is empty", path);
		goto out;
	}
	if ((map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		errf(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	end = map + st.st_size;
	for (k = map; (k = memmem(k, (size_t)(end - k), "\"results\"", 9)) != NULL; k += 9) {
		for (p = k + 9; p < end && strchr(" \t\r\n", *p); p++)
			;
		if (p >= end || *p != ':')
			continue;
		for (p++; p < end && strchr(" \t\r\n", *p); p++)
			;
		if (p >= end || *p != '[')
			continue;
		/* the head: up to the key, less its comma, closed */
		for (hl = (size_t)(k - map); hl > 0 && strchr(" \t\r\n,", map[hl - 1]); hl--)
			;
		head = xcalloc(hl + 2, 1);
		memcpy(head, map, hl);
		head[hl] = '}';
		h = json_loadb(head, hl + 1, 0, NULL);
		free(head);
		if (json_is_object(h))
			break;
		json_decref(h);
		h = NULL;
	}
	if (h == NULL) {
		/* not laid out as report.c writes it: whole */
		if ((h = json_loadb(map, (size_t)st.st_size, 0, &jerr)) == NULL ||
		    !json_is_object(h)) {
			errf(err, "%s:%d:%d: %s", path, jerr.line, jerr.column,
			    h ? "not an object" : jerr.text);
			goto out;
		}
		head_fn(h, arg);
		if (rec_fn != NULL) {
			size_t	i;

			json_array_foreach(json_object_get(h, "results"), i, r)
				rec_fn(r, arg);
		}
		rc = 0;
		goto out;
	}
	head_fn(h, arg);
	for (p++; rec_fn != NULL && p < end;) {
		if (strchr(" \t\r\n,", *p)) {
			p++;
			continue;
		}
		if (*p == ']')
			break;
		if ((r = json_loadb(p, (size_t)(end - p), JSON_DISABLE_EOF_CHECK, &jerr)) == NULL) {
			errf(err, "%s: a record at byte %zu: %s", path, (size_t)(p - map), jerr.text);
			goto out;
		}
		p += jerr.position;
		rec_fn(r, arg);
		json_decref(r);
	}
	/* Keys after "results" (report.c writes none; another writer may):
	 * into the head, which the callbacks hold. */
	if (rec_fn != NULL && p < end && *p == ']') {
		for (p++; p < end && strchr(" \t\r\n", *p); p++)
			;
		if (p < end && *p == ',') {
			head = xcalloc((size_t)(end - p) + 1, 1);
			memcpy(head, p, (size_t)(end - p));
			head[0] = '{';
			if ((r = json_loadb(head, (size_t)(end - p), 0, NULL)) != NULL &&
			    json_is_object(r))
				json_object_update(h, r);
			json_decref(r);
			free(head);
		}
	}
	rc = 0;
out:
	json_decref(h);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd != -1)
		close(fd);
	return rc;
}

static void
keep_head(json_t *h, void *arg)
{
	*(json_t **)arg = json_incref(h);
}

json_t *
report_html_head(const char *run_dir, char *err)
{
	char	*path = xasprintf("%s/report.json", run_dir);
	json_t	*h = NULL;

	if (rh_report_stream(path, keep_head, NULL, &h, err) == -1) {
		json_decref(h);
		h = NULL;
	}
	free(path);
	return h;
}

/* --- fingerprints ------------------------------------------------------ */

/* The fingerprint of a record: report.json's, or config|reason for infra. */
char *
rh_record_fp(const char *cfg_name, const json_t *r)
{
	const char	*fp = jstr(r, "fingerprint");

	if (fp != NULL)
		return xstrdup(fp);
	return fp_string(cfg_name, jstr(r, "reason"), json_object_get(r, "invariants"));
}
