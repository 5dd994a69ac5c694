/*
 * Config errors (contract in cfgerr.h).
 */
#include "common/cfgerr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {
	[CFGERR_NONE] = "", [CFGERR_EXEC] = "exec", [CFGERR_SQL] = "sql",
	[CFGERR_LOAD] = "config",
};

/* The execve errors that no retry mends; plain: the config's for sure. */
static const struct {
	int		 errnum;
	const char	*name;
	bool		 plain;
} exec_errs[] = {
	{ ENOENT, "ENOENT", true }, { ENOTDIR, "ENOTDIR", true },
	{ ENOEXEC, "ENOEXEC", true }, { ELOOP, "ELOOP", true },
	{ ENAMETOOLONG, "ENAMETOOLONG", true }, { E2BIG, "E2BIG", true },
	/* A file without its x bit, or a noexec mount: the machine's maybe. */
	{ EACCES, "EACCES", false }, { EPERM, "EPERM", false },
};

static void
fill(struct cfgerr *e, enum cfgerr_kind kind, const char *what,
    const char *code, const char *detail)
{
	e->kind = kind;
	e->position = 0;
	snprintf(e->what, sizeof(e->what), "%s", what);
	snprintf(e->code, sizeof(e->code), "%s", code);
	snprintf(e->detail, sizeof(e->detail), "%s", detail);
	utf8_scrub(e->detail, strlen(e->detail));
}

bool
cfgerr_exec(struct cfgerr *e, const char *what, int errnum, const char *detail)
{
	size_t	i;

	for (i = 0; i < nitems(exec_errs); i++)
		if (exec_errs[i].errnum == errnum) {
			fill(e, CFGERR_EXEC, what, exec_errs[i].name, detail);
			return true;
		}
	return false;
}

bool
cfgerr_sql(struct cfgerr *e, const char *what, const char *sqlstate,
    const char *detail)
{
	if (sqlstate == NULL || strlen(sqlstate) != 5 || strncmp(sqlstate, "42", 2) != 0)
		return false;
	fill(e, CFGERR_SQL, what, sqlstate, detail);
	return true;
}

void
cfgerr_load(struct cfgerr *e, const char *detail)
{
	fill(e, CFGERR_LOAD, "config", "", detail);
}

bool
cfgerr_plain(const struct cfgerr *e)
{
	size_t	i;

	switch (e->kind) {
	case CFGERR_EXEC:
		for (i = 0; i < nitems(exec_errs); i++)
			if (strcmp(exec_errs[i].name, e->code) == 0)
				return exec_errs[i].plain;
		return false;
	case CFGERR_SQL:
		return strcmp(e->code, "42501") != 0;
	default:
		return false;
	}
}

bool
cfgerr_same(const struct cfgerr *a, const struct cfgerr *b)
{
	return a->kind != CFGERR_NONE && a->kind == b->kind &&
	    strcmp(a->what, b->what) == 0 && strcmp(a->code, b->code) == 0;
}

json_t *
cfgerr_json(const struct cfgerr *e)
{
	json_t	*j;

	if (e == NULL || e->kind == CFGERR_NONE)
		return NULL;
	j = json_pack("{s:s, s:s, s:s, s:s}", "kind", kind_names[e->kind],
	    "what", e->what, "code", e->code, "detail", e->detail);
	if (e->position > 0)
		json_object_set_new(j, "position", json_integer(e->position));
	return j;
}

int
cfgerr_from_detail(const json_t *detail, struct cfgerr *e)
{
	const json_t	*o = json_object_get(detail, "config_error");
	const char	*kind = json_string_value(json_object_get(o, "kind"));
	const char	*what = json_string_value(json_object_get(o, "what"));
	const char	*code = json_string_value(json_object_get(o, "code"));
	const char	*text = json_string_value(json_object_get(o, "detail"));
	size_t		 k;

	memset(e, 0, sizeof(*e));
	if (kind == NULL || what == NULL || code == NULL || text == NULL)
		return -1;
	for (k = CFGERR_EXEC; k < nitems(kind_names); k++)
		if (strcmp(kind, kind_names[k]) == 0) {
			fill(e, (enum cfgerr_kind)k, what, code, text);
			if (json_integer_value(json_object_get(o, "position")) > 0)
				e->position = (long)json_integer_value(
				    json_object_get(o, "position"));
			return 0;
		}
	return -1;
}
