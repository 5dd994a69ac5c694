#include "common/regress.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "common/config.h"
#include "common/util.h"

bool
regress_name_valid(const char *name)
{
	return name != NULL && *name != '\0' && *name != '.' &&
	    strchr(name, '/') == NULL && strlen(name) <= 200;
}

int
regress_hash(const void *data, size_t len, char *hex, char *err)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen = 0, i;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen * 2 != REGRESS_HASH_LEN)
		return errf(err, "cannot hash a plan: OpenSSL's SHA-256 failed");
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

char *
regress_slug(const char *fingerprint, size_t max)
{
	const char	*s = strchr(fingerprint, '|');
	char		*o = xcalloc(max + 1, 1);
	size_t		 n = 0;
	bool		 dash = false;

	/* The config's name is the folder's own: not repeated in each file. */
	for (s = s ? s + 1 : fingerprint; *s && n < max; s++) {
		unsigned char	ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    (ch >= 'A' && ch <= 'Z')) {
			if (dash && n > 0 && n + 1 < max)
				o[n++] = '-';
			dash = false;
			o[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
		} else
			dash = true;
	}
	return o;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One file: read, hashed, parsed and fitted; -1 with err naming it. */
static int
regress_file(const struct cfg *cfg, const char *path, const char *name,
    struct regress *r, char *err)
{
	struct plan	 p;
	char		*text, why[ERR_LEN];
	size_t		 len;
	int		 rc = -1;

	memset(r, 0, sizeof(*r));
	if ((text = read_file(path, PLAN_MAX_BYTES, &len, err)) == NULL)
		return -1;
	if (regress_hash(text, len, r->hash, err) == -1)
		goto out;
	if (plan_parse(text, len, path, &p, why) == -1) {
		errf(err, "%s (a regression of %s: mend the file, or remove it)",
		    why, cfg->path);
		goto out;
	}
	if (plan_fits(&p, cfg, why) == -1) {
		errf(err, "%s: %s cannot run this regression: %s (remove the file, "
		    "or pin a plan of this config)", path, cfg->path, why);
		plan_free(&p);
		goto out;
	}
	r->name = xstrdup(name);
	r->file = xstrdup(path);
	r->seed = p.seed;
	r->fingerprint = p.fingerprint ? xstrdup(p.fingerprint) : NULL;
	plan_free(&p);
	rc = 0;
out:
	free(text);
	return rc;
}

int
regress_load(const struct cfg *cfg, struct regress_set *rs,
    struct cfg_errors *errs, char *err)
{
	const struct cfg_mark	*m = cfg_mark_find(cfg, "regressions");
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	char			**names = NULL, one[ERR_LEN];
	size_t			 nnames = 0, i, len;
	int			 rc = 0;

	memset(rs, 0, sizeof(*rs));
	err[0] = '\0';
	if (cfg->regressions == NULL)
		return 0;
	if ((d = opendir(cfg->regressions)) == NULL) {
		if (errno == ENOENT && !cfg->regressions_set) {
			rs->absent = true;
			return 0;
		}
		if (m != NULL)
			errf(one, "%s:%d:%d: regressions: %s: %s (the folder of pinned "
			    "plans: create it, or give the one that holds them)",
			    cfg->path, m->line, m->col, cfg->regressions, strerror(errno));
		else
			errf(one, "%s: regressions: %s: %s", cfg->path,
			    cfg->regressions, strerror(errno));
		goto one_fail;
	}
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 ||
		    strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		if (nnames == REGRESS_MAX) {
			errf(one, "%s: more than %d plans: a regressions folder holds "
			    "at most that many", cfg->regressions, REGRESS_MAX);
			closedir(d);
			for (i = 0; i < nnames; i++)
				free(names[i]);
			free(names);
			goto one_fail;
		}
		names = xreallocarray(names, nnames + 1, sizeof(*names));
		names[nnames++] = xstrdup(de->d_name);
	}
	closedir(d);
	/* Name order: the same on every machine, whatever readdir gives. */
	if (nnames > 1)
		qsort(names, nnames, sizeof(*names), cmp_str);
	rs->v = xcalloc(nnames + 1, sizeof(*rs->v));
	for (i = 0; i < nnames; i++) {
		char	*path = path_join(cfg->regressions, names[i]);

		names[i][strlen(names[i]) - 5] = '\0';
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			errf(one, "%s: not a file (a regression is a plan file)", path);
		else if (!regress_name_valid(names[i]))
			errf(one, "%s: a regression's name is its file name without "
			    ".json, at most 200 bytes", path);
		else if (regress_file(cfg, path, names[i], &rs->v[rs->n], one) == 0) {
			rs->n++;
			one[0] = '\0';
		}
		if (one[0] != '\0') {
			if (rc == 0)
				snprintf(err, ERR_LEN, "%s", one);
			if (errs != NULL)
				cfg_errors_add(errs, one);
			rc = -1;
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
one_fail:
	snprintf(err, ERR_LEN, "%s", one);
	if (errs != NULL)
		cfg_errors_add(errs, one);
	return -1;
}

void
regress_set_free(struct regress_set *rs)
{
	size_t	i;

	if (rs == NULL)
		return;
	for (i = 0; i < rs->n; i++) {
		free(rs->v[i].name);
		free(rs->v[i].file);
		free(rs->v[i].fingerprint);
	}
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}

const struct regress *
regress_find(const struct regress_set *rs, const char *name, const char *hash)
{
	size_t	i;

	for (i = 0; i < rs->n; i++)
		if (strcmp(rs->v[i].name, name) == 0 &&
		    (hash == NULL || strcmp(rs->v[i].hash, hash) == 0))
			return &rs->v[i];
	return NULL;
}

int
regress_open(const struct cfg *cfg, const char *name, const char *hash,
    struct plan *p, char *err)
{
	char	*path, *file = NULL, *text = NULL, mine[REGRESS_HASH_LEN + 1];
	char	 why[ERR_LEN];
	size_t	 len;
	int	 rc = -1;

	memset(p, 0, sizeof(*p));
	if (!regress_name_valid(name) || cfg->regressions == NULL)
		return errf(err, "\"%.64s\" cannot be a regression of %s", name,
		    cfg->path);
	file = xasprintf("%s.json", name);
	path = path_join(cfg->regressions, file);
	if ((text = read_file(path, PLAN_MAX_BYTES, &len, why)) == NULL) {
		errf(err, "regression %s: this worker cannot read it: %s (its copy "
		    "of the config folder lacks the regressions folder: use the "
		    "coordinator's bundle, or the same folder)", name, why);
		goto out;
	}
	if (regress_hash(text, len, mine, err) == -1)
		goto out;
	if (strcmp(mine, hash) != 0) {
		errf(err, "regression %s: this worker's %s has sha256 %.12s, the "
		    "lease's is %.12s: its copy of the regressions folder is not the "
		    "coordinator's (give workers the same folder, or the bundle)",
		    name, path, mine, hash);
		goto out;
	}
	if (plan_parse(text, len, path, p, err) == -1)
		goto out;
	if (plan_fits(p, cfg, why) == -1) {
		errf(err, "regression %s: %s", name, why);
		plan_free(p);
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(path);
	free(file);
	return rc;
}
