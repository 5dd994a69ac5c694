/*
 * The config text as soak shows it: database.url's password hidden,
 * every other byte as the user wrote it (contract in config.h).
 *
 * Approach.  libyaml composes the text into nodes whose marks say where
 * each scalar starts and ends, in characters (code points after any BOM;
 * "\r\n" counts two).  For each top-level database.url scalar whose value
 * holds a password, the value is looked for verbatim inside its span (a
 * plain or quoted scalar without escapes, a one-line block scalar, after
 * any anchor or tag): there it is replaced by its redaction.  A value that
 * is not there verbatim (escapes, folding, several lines) gets its whole
 * span replaced by the redaction as one double-quoted scalar.  Either way
 * the result is parsed again, and only a text whose every database.url
 * reads as the redacted value is returned; otherwise a stub that says the
 * text was withheld, since no password may get through.
 */
#include "common/config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/conninfo.h"
#include "common/seed.h"
#include "common/util.h"

/* database.url scalars looked at; the loader allows one. */
#define CFG_URLS_MAX	8

static const char	withheld[] = "# soak: this config text is withheld: "
			    "its database.url could not be redacted\n";

/* The scalar nodes of every top-level database.url, in file order. */
static size_t
find_urls(yaml_document_t *doc, yaml_node_t **out, size_t max)
{
	yaml_node_t		*top = yaml_document_get_root_node(doc), *k, *v;
	yaml_node_pair_t	*p, *q;
	size_t			 n = 0;

	if (top == NULL || top->type != YAML_MAPPING_NODE)
		return 0;
	for (p = top->data.mapping.pairs.start;
	    p < top->data.mapping.pairs.top; p++) {
		k = yaml_document_get_node(doc, p->key);
		v = yaml_document_get_node(doc, p->value);
		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE ||
		    strcmp((char *)k->data.scalar.value, "database") != 0 ||
		    v->type != YAML_MAPPING_NODE)
			continue;
		for (q = v->data.mapping.pairs.start;
		    q < v->data.mapping.pairs.top; q++) {
			k = yaml_document_get_node(doc, q->key);
			if (k == NULL || k->type != YAML_SCALAR_NODE ||
			    strcmp((char *)k->data.scalar.value, "url") != 0)
				continue;
			if (n < max)
				out[n] = yaml_document_get_node(doc, q->value);
			n++;
		}
	}
	return n;
}

static int
load(const char *text, size_t len, yaml_document_t *doc)
{
	yaml_parser_t	parser;
	int		ok;

	if (!yaml_parser_initialize(&parser))
		return -1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ok = yaml_parser_load(&parser, doc);
	yaml_parser_delete(&parser);
	return ok ? 0 : -1;
}

/* The byte offset of a libyaml mark's character index in UTF-8 text. */
static size_t
byte_at(const char *text, size_t len, size_t index)
{
	const unsigned char	*t = (const unsigned char *)text;
	size_t			 b = 0;

	if (len >= 3 && t[0] == 0xef && t[1] == 0xbb && t[2] == 0xbf)
		b = 3;
	for (; index > 0 && b < len; index--) {
		b++;
		while (b < len && (t[b] & 0xc0) == 0x80)
			b++;
	}
	return b;
}

static void
put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char	c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * One pass: each url node's span rewritten, in place (verbatim) or whole
 * (quoted).  Spans come in file order, so the text is copied around them.
 */
static char *
rewrite(const char *text, size_t len, yaml_node_t **urls, char **red,
    size_t n, bool whole, size_t *lenp)
{
	const char	*v;
	char		*out, *hit;
	size_t		 i, at = 0, b0, b1, vlen, olen;
	FILE		*f;

	if ((f = open_memstream(&out, &olen)) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (red[i] == NULL)
			continue;
		v = (const char *)urls[i]->data.scalar.value;
		vlen = urls[i]->data.scalar.length;
		b0 = byte_at(text, len, urls[i]->start_mark.index);
		b1 = byte_at(text, len, urls[i]->end_mark.index);
		if (b0 < at || b1 < b0)
			goto fail;
		fwrite(text + at, 1, b0 - at, f);
		if (!whole) {
			hit = vlen > 0 ? memmem(text + b0, b1 - b0, v, vlen) :
			    NULL;
			if (hit == NULL)
				goto fail;
			fwrite(text + b0, 1, (size_t)(hit - (text + b0)), f);
			fputs(red[i], f);
			fwrite(hit + vlen, 1, b1 - (size_t)(hit + vlen - text), f);
		} else {
			/* A block scalar's span holds its trailing breaks. */
			while (b1 > b0 && strchr(" \t\r\n", text[b1 - 1]))
				b1--;
			put_quoted(f, red[i]);
		}
		at = b1;
	}
	fwrite(text + at, 1, len - at, f);
	fclose(f);
	*lenp = olen;
	return out;
fail:
	fclose(f);
	free(out);
	return NULL;
}

/* Whether out's database.url values are exactly red[] (NULL: unchanged). */
static bool
verify(const char *out, size_t len, yaml_node_t **urls, char **red, size_t n)
{
	yaml_document_t	 doc;
	yaml_node_t	*got[CFG_URLS_MAX];
	const char	*want, *v;
	size_t		 i;
	bool		 ok;

	if (load(out, len, &doc) == -1)
		return false;
	ok = find_urls(&doc, got, CFG_URLS_MAX) == n;
	for (i = 0; ok && i < n; i++) {
		want = red[i] ? red[i] :
		    (const char *)urls[i]->data.scalar.value;
		v = (const char *)got[i]->data.scalar.value;
		ok = got[i]->type == YAML_SCALAR_NODE &&
		    strcmp(v, want) == 0 && !conninfo_has_password(v);
	}
	yaml_document_delete(&doc);
	return ok;
}

char *
cfg_text_redact(const char *text, size_t len, size_t *lenp)
{
	yaml_document_t	 doc;
	yaml_node_t	*urls[CFG_URLS_MAX];
	char		*red[CFG_URLS_MAX] = { NULL }, *out = NULL;
	const char	*v;
	size_t		 i, n, olen = 0;
	bool		 any = false;
	int		 pass;

	if (load(text, len, &doc) == -1)
		goto withhold;
	if ((n = find_urls(&doc, urls, CFG_URLS_MAX)) > CFG_URLS_MAX) {
		yaml_document_delete(&doc);
		goto withhold;
	}
	for (i = 0; i < n; i++) {
		if (urls[i]->type != YAML_SCALAR_NODE) {
			/* Not a string: the loader refuses it anyway. */
			yaml_document_delete(&doc);
			goto withhold;
		}
		v = (const char *)urls[i]->data.scalar.value;
		if (conninfo_has_password(v)) {
			red[i] = conninfo_redact(v);
			any = true;
		}
	}
	if (!any) {
		yaml_document_delete(&doc);
		out = xcalloc(len + 1, 1);
		memcpy(out, text, len);
		olen = len;
		goto done;
	}
	for (pass = 0; pass < 2 && out == NULL; pass++) {
		out = rewrite(text, len, urls, red, n, pass == 1, &olen);
		if (out != NULL && !verify(out, olen, urls, red, n)) {
			free(out);
			out = NULL;
		}
	}
	for (i = 0; i < n; i++)
		free(red[i]);
	yaml_document_delete(&doc);
	if (out != NULL)
		goto done;
withhold:
	out = xstrdup(withheld);
	olen = strlen(withheld);
done:
	if (lenp != NULL)
		*lenp = olen;
	return out;
}

void
cfg_hash_hex(const struct cfg *cfg, char out[CFG_HASH_LEN])
{
	char	*red;
	size_t	 len;

	red = cfg_text_redact(cfg->text, cfg->text_len, &len);
	snprintf(out, CFG_HASH_LEN, "%016" PRIx64, fnv1a64(red, len));
	free(red);
}
