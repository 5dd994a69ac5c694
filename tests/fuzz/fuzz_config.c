/*
 * The config loader (common/config.h) on arbitrary text, through
 * cfg_load_text: what a worker does with the text a WELCOME carries.
 *
 * The file stands, by name, in a folder of our own that holds the schema
 * files the examples name (database.schema is looked up with stat), so
 * the example configs of the corpus load all the way.  Checked on every
 * input, from the contracts of config.h:
 *  - a refused text says why, "FILE:...", and leaves the struct zeroed;
 *  - an accepted one has what is required (name, turn.command), a mark
 *    that cfg_mark_find finds for every key it lists, and for every
 *    character of every invariant's SQL a place (cfg_sql_where) that is
 *    that character in the file, or else the value's own mark (in a file
 *    whose lines end in "\n" or "\r\n": see odd_breaks);
 *  - cfg_text_redact gives the text back byte for byte when database.url
 *    holds no password, and otherwise either the withheld stub or a text
 *    that loads again with the redacted url and no password in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/conninfo.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

static char	*cfg_path;	/* FOLDER/soak.yaml */

/*
 * One folder per user, made once and used again, so no run leaves a
 * folder behind and every run names the same path (realpath and all).
 */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const files[] = { "schema.sql",
	    "schema-no-unique.sql" };
	const char	*tmp = getenv("TMPDIR");
	char		*dir, *file;
	size_t		 i;
	int		 fd;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	dir = xasprintf("%s/soak-fuzz-config-%u", tmp, (unsigned)getuid());
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "fuzz_config: %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		file = path_join(dir, files[i]);
		if ((fd = open(file, O_WRONLY | O_CREAT, 0600)) == -1) {
			fprintf(stderr, "fuzz_config: %s: %s\n", file,
			    strerror(errno));
			exit(1);
		}
		close(fd);
		free(file);
	}
	cfg_path = path_join(dir, "soak.yaml");
	free(dir);
	return 0;
}

/*
 * Whether text holds a line break other than "\n" and "\r\n": a lone
 * "\r", NEL, LS or PS.  libyaml counts lines by them (so do the marks);
 * config.c's offsets count "\n" only.  Positions in such a file are not
 * checked (a known limit: files are written with "\n" or "\r\n").
 */
static int
odd_breaks(const char *t, size_t len)
{
	size_t	o;

	for (o = 0; o < len; o++)
		if ((t[o] == '\r' && (o + 1 == len || t[o + 1] != '\n')) ||
		    (o + 1 < len && memcmp(t + o, "\xc2\x85", 2) == 0) ||
		    (o + 2 < len && (memcmp(t + o, "\xe2\x80\xa8", 3) == 0 ||
		    memcmp(t + o, "\xe2\x80\xa9", 3) == 0)))
			return 1;
	return 0;
}

static void
check_sql_where(const struct cfg *cfg, size_t i)
{
	const struct cfg_mark	*m;
	const char		*sql = cfg->invariants[i].sql, *p;
	char			 key[64];
	long			 pos = 0;
	size_t			 o;
	int			 line, col;

	snprintf(key, sizeof(key), "invariants[%zu].sql", i);
	m = cfg_mark_find(cfg, key);
	FUZZ_CHECK(m != NULL, "no mark for %s", key);
	cfg_sql_where(cfg, i, 0, &line, &col);
	FUZZ_CHECK(line == m->line && col == m->col,
	    "%s: position 0 is %d:%d, not the value's mark %d:%d", key, line,
	    col, m->line, m->col);
	/* Character by character (UTF-8 lead bytes), the first 64 of them. */
	for (p = sql; *p != '\0' && pos < 64; p++) {
		if (((unsigned char)*p & 0xc0) == 0x80)
			continue;
		pos++;
		cfg_sql_where(cfg, i, pos, &line, &col);
		FUZZ_CHECK(line >= 1 && col >= 1, "%s: character %ld at %d:%d",
		    key, pos, line, col);
		if (line == m->line && col == m->col)
			continue;	/* not exact: the value's mark */
		if (*p == '\n' || *p == '\r')
			continue;	/* a line's end may be "\r\n" in the file */
		o = cfg_text_offset(cfg->text, cfg->text_len, line, col);
		FUZZ_CHECK(o < cfg->text_len && cfg->text[o] == *p,
		    "%s: character %ld ('%c') is said to be at %d:%d, which "
		    "holds '%c'", key, pos, *p, line, col,
		    o < cfg->text_len ? cfg->text[o] : '$');
	}
}

static void
check_redact(const struct cfg *cfg)
{
	static const char	 stub[] = "# soak: this config text is withheld";
	struct cfg		 again;
	char			 err[ERR_LEN] = "", *red, *want;
	size_t			 len;

	red = cfg_text_redact(cfg->text, cfg->text_len, &len);
	FUZZ_CHECK(red != NULL, "no redacted text");
	if (cfg->db_url == NULL || !conninfo_has_password(cfg->db_url)) {
		FUZZ_CHECK(len == cfg->text_len &&
		    memcmp(red, cfg->text, len) == 0,
		    "a text without a password was changed by redaction");
		free(red);
		return;
	}
	if (strncmp(red, stub, strlen(stub)) == 0) {
		free(red);
		return;
	}
	FUZZ_CHECK(cfg_load_text(cfg_path, red, len, &again, err) == 0,
	    "the redacted text does not load: %s", err);
	want = conninfo_redact(cfg->db_url);
	FUZZ_CHECK(again.db_url != NULL && strcmp(again.db_url, want) == 0,
	    "the redacted text's database.url is not the redacted url");
	FUZZ_CHECK(!conninfo_has_password(again.db_url),
	    "the redacted text's database.url holds a password");
	free(want);
	cfg_free(&again);
	free(red);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cfg	 zero;
	struct cfg		 cfg;
	char			 err[ERR_LEN] = "", hash[CFG_HASH_LEN];
	size_t			 i;

	if (cfg_load_text(cfg_path, (const char *)data, size, &cfg, err) == -1) {
		FUZZ_CHECK(strncmp(err, cfg_path, strlen(cfg_path)) == 0 &&
		    err[strlen(cfg_path)] == ':',
		    "a refused config's message does not start with its "
		    "file: \"%s\"", err);
		FUZZ_CHECK(memcmp(&cfg, &zero, sizeof(zero)) == 0,
		    "a refused config left fields behind (%s)", err);
		return 0;
	}
	FUZZ_CHECK(cfg.name != NULL && cfg.name[0] != '\0', "no name");
	FUZZ_CHECK(cfg.turn_command != NULL && cfg.turn_command[0] != NULL,
	    "no turn.command");
	FUZZ_CHECK(cfg.text_len == size && memcmp(cfg.text, data, size) == 0,
	    "cfg->text is not the text loaded");
	for (i = 0; i < cfg.nmarks; i++) {
		FUZZ_CHECK(cfg.marks[i].line >= 1 && cfg.marks[i].col >= 1,
		    "%s at %d:%d", cfg.marks[i].key, cfg.marks[i].line,
		    cfg.marks[i].col);
		FUZZ_CHECK(cfg_mark_find(&cfg, cfg.marks[i].key) == &cfg.marks[i],
		    "the mark of %s is listed twice", cfg.marks[i].key);
	}
	for (i = 0; i < cfg.ninvariants && !odd_breaks(cfg.text, cfg.text_len);
	    i++)
		check_sql_where(&cfg, i);
	check_redact(&cfg);
	cfg_hash_hex(&cfg, hash);
	FUZZ_CHECK(strlen(hash) == CFG_HASH_LEN - 1 &&
	    strspn(hash, "0123456789abcdef") == CFG_HASH_LEN - 1,
	    "config hash \"%s\"", hash);
	(void)cfg_guard_floor(&cfg);
	cfg_free(&cfg);
	return 0;
}
