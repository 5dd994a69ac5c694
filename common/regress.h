/*
 * Regressions: a config's folder of pinned plans (docs/plan.md
 * "Regressions"), run before the seeds of every `soak run` and `soak
 * coordinator`, each leased as a lease of its own kind (coordinator/
 * coord.h), keyed by its name and hash, never by its seed: a plan's seed
 * may also be in the run's range, and both run.
 *
 *  - The folder is cfg->regressions: `regressions:` resolved against the
 *    config's folder, else regressions/ beside it.  The default one absent
 *    is no regressions; a configured one absent is a config error at the
 *    key's FILE:LINE:COL.
 *  - Each *.json file in it (not starting with '.') is one, in name order;
 *    its name is the file name without ".json".  A file that is not a
 *    plan, or that the config cannot run (plan_fits: proxies by name, the
 *    turn and round counts, not the config's hash), is a config error
 *    naming the file.
 *  - Its hash is the SHA-256 of the file's bytes (64 hex digits): what a
 *    lease names and the worker checks the file it loads against.
 */
#ifndef SOAK_REGRESS_H
#define SOAK_REGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/plan.h"

#define REGRESS_HASH_LEN	64
#define REGRESS_MAX		1000	/* files in one folder */

struct cfg;
struct cfg_errors;

struct regress {
	char		*name;		/* the file name without .json */
	char		*file;		/* its path, absolute */
	char		 hash[REGRESS_HASH_LEN + 1];
	uint64_t	 seed;		/* the plan's */
	char		*fingerprint;	/* what it failed with when pinned, or NULL */
};

struct regress_set {
	struct regress	*v;
	size_t		 n;
	bool		 absent;	/* the default folder is not there */
};

/*
 * Loads cfg's regressions folder: every file read, parsed and fitted.
 * -1 with each problem a message in errs (may be NULL) and the first in
 * err; rs holds the files that loaded either way (regress_set_free).
 */
int	regress_load(const struct cfg *cfg, struct regress_set *rs,
	    struct cfg_errors *errs, char *err);
void	regress_set_free(struct regress_set *rs);
const struct regress	*regress_find(const struct regress_set *rs,
	    const char *name, const char *hash);

/*
 * A worker's side: the plan NAME of cfg's regressions folder, whose bytes
 * must hash to hash (the lease's).  -1 with err saying what differs: a
 * name that cannot be a file of the folder, the file missing, another
 * hash (the worker's copy of the folder is not the coordinator's), a plan
 * that does not parse or fit.
 */
int	regress_open(const struct cfg *cfg, const char *name, const char *hash,
	    struct plan *p, char *err);

/* Whether name can be a regression's: a file name of the folder. */
bool	regress_name_valid(const char *name);
/* SHA-256 of data as 64 hex digits (buf REGRESS_HASH_LEN + 1). */
int	regress_hash(const void *data, size_t len, char *hex, char *err);
/*
 * The slug of a fingerprint for a file name: its lower-case letters and
 * digits, every other run of bytes one '-', at most max bytes, no '-' at
 * either end ("reservations|invariant|items_reserved matches" ->
 * "invariant-items-reserved-matches").  The config's name, the
 * fingerprint's first field, is left out.  Heap.
 */
char	*regress_slug(const char *fingerprint, size_t max);

#endif
