/*
 * A worker without the config folder takes it from the coordinator
 * (docs/fleet.md "The config travels"): the WELCOME names the bundle's hash; a
 * copy of that hash under <root>/soak-bundles-<euid>/bundle-<hash> is
 * used as it is, else the worker asks for the bytes (BUNDLE_REQ), checks
 * that they hash to what was announced, and installs them there whole
 * (common/bundle.h).  The config then loads as if its file were in that
 * copy, so the schema, the commands and SOAK_CONFIG_DIR are the copy's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bundle.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"
#include "worker/wrk.h"

#define BUNDLE_WAIT_MS	120000	/* 8 MiB over a slow link */

/* Asks the coordinator for the bundle of hash and installs it in cache. */
static int
bundle_fetch(const struct msg *welcome, const char *cache, wrk_call_fn call,
    struct link *l, char **dirp, char *err)
{
	struct msg	 req = { .type = MSG_BUNDLE_REQ }, rep;
	const char	*hash = welcome->u.welcome.bundle_hash;
	char		 text[LOG_ESC_LEN], tmp[ERR_LEN];
	int		 rc = -1;

	req.u.bundle_req.worker_id = welcome->u.welcome.worker_id;
	req.u.bundle_req.hash = UNCONST(hash);
	if (call(l, &req, &rep, BUNDLE_WAIT_MS, "bundle request", err) == -1)
		return -1;
	if (rep.type != MSG_BUNDLE) {
		errf(err, "the coordinator sent no bundle: %s", rep.type == MSG_NACK ?
		    log_escape(text, sizeof(text), rep.u.ack.text) :
		    msg_type_name(rep.type));
		goto out;
	}
	if (strcmp(rep.u.bundle.hash, hash) != 0) {
		errf(err, "the coordinator sent the bundle %.12s..., not %.12s...",
		    log_escape(text, sizeof(text), rep.u.bundle.hash), hash);
		goto out;
	}
	if (bundle_install(cache, hash, rep.u.bundle.data, rep.u.bundle.len, dirp,
	    tmp) == -1) {
		errf(err, "the config folder's bundle: %s", tmp);
		goto out;
	}
	log_info("took the config folder from the coordinator: %u bytes, sha256 "
	    "%.12s, into %s", rep.u.bundle.len, hash, *dirp);
	rc = 0;
out:
	msg_clear(&rep);
	return rc;
}

/* Where the bundle of the WELCOME is on this machine, fetched if need be. */
static int
bundle_dir(const struct msg *welcome, const char *root, wrk_call_fn call,
    struct link *l, char **dirp, char *err)
{
	const char	*hash = welcome->u.welcome.bundle_hash;
	char		*cache, tmp[ERR_LEN];
	int		 rc, n;

	if (!bundle_hash_valid(hash))
		return errf(err, "the coordinator announced a bundle hash that is not "
		    "64 hex digits");
	if ((cache = bundle_cache_dir(root ? root : scratch_root(), tmp)) == NULL)
		return errf(err, "no bundle cache: %s", tmp);
	/* A cached copy being pruned is fetched again. */
	if ((rc = bundle_cached(cache, hash, dirp, tmp)) == 1 &&
	    bundle_hold(*dirp, tmp) == 0)
		log_debug("the config folder's bundle %.12s is cached: %s", hash, *dirp);
	else if (rc >= 0) {
		free(*dirp);
		*dirp = NULL;
		if ((rc = bundle_fetch(welcome, cache, call, l, dirp, err)) == 0 &&
		    bundle_hold(*dirp, tmp) == -1)
			rc = errf(err, "the bundle cache: %s", tmp);
	} else
		errf(err, "the bundle cache: %s", tmp);
	/* Held, ours is safe: the cache keeps the bundles used last. */
	if (rc >= 0 && (n = bundle_prune(cache, BUNDLE_KEEP)) > 0)
		log_info("removed %d bundle(s) of the config folder not used lately "
		    "from %s (it keeps the %d used last, and any a worker runs on)",
		    n, cache, BUNDLE_KEEP);
	free(cache);
	return rc == -1 ? -1 : 0;
}

int
wrk_bundle_config(const struct msg *welcome, const char *root, wrk_call_fn call,
    struct link *l, struct cfg *cfg, char *err)
{
	const struct msg	*w = welcome;
	const char		*hash = w->u.welcome.bundle_hash, *base;
	char			*dir = NULL, *path;
	int			 rc;

	if (hash == NULL || *hash == '\0')
		return cfg_load_text(w->u.welcome.cfg_path, w->u.welcome.cfg_text,
		    strlen(w->u.welcome.cfg_text), cfg, err);
	/* The file's name only: its folder is the bundle's root. */
	base = strrchr(w->u.welcome.cfg_path, '/');
	base = base ? base + 1 : w->u.welcome.cfg_path;
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return errf(err, "the coordinator's config path has no file name");
	if (bundle_dir(w, root, call, l, &dir, err) == -1)
		return -1;
	path = xasprintf("%s/%s", dir, base);
	rc = cfg_load_text(path, w->u.welcome.cfg_text, strlen(w->u.welcome.cfg_text),
	    cfg, err);
	free(path);
	free(dir);
	return rc;
}
