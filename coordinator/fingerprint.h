/*
 * A failure's fingerprint: what makes two failing seeds the same bug
 * (docs/report.md).  The one home of the rule, used by the confirming
 * re-runs (confirm.c), report.json and the summary (report.c), and the
 * ticket filer (tickets.c), which recomputes it from report.json:
 *
 *	<config name>|invariant|<broken invariant names, sorted, joined by |>
 *	<config name>|<reason>		any other reason, infra ones included
 *
 * A broken invariant without a name counts as the empty name; a missing
 * reason is "unknown".  Its hash, the tickets' dedupe key, is the 64-bit
 * FNV-1a of the text (fnv1a64, as report.json's config hash) in 16
 * lower-case hex digits.
 *
 * Nothing here knows a coordinator seed or a report record: callers pass
 * the config name, the reason's name and the "invariants" array of the
 * seed's detail object or result record.
 */
#ifndef SOAK_FINGERPRINT_H
#define SOAK_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define FP_HASH_LEN	17	/* 16 hex digits and a NUL */

/* The fingerprint text (heap).  invariants may be NULL. */
char		 *fp_string(const char *config_name, const char *reason,
		    const json_t *invariants);
/*
 * The broken invariants' names in fingerprint order: sorted, a missing
 * name as "".  A NULL-terminated heap vector of borrowed strings (free
 * the vector only); *n is their count.
 */
const char	**fp_names(const json_t *invariants, size_t *n);
void		  fp_hash_hex(const char *fp, char out[FP_HASH_LEN]);
/*
 * The same failure in words, for a screen (heap): `"a", "b" broken` for
 * broken invariants (the ticket title's words), else `REASON: what it
 * means` (`exec: a turn could not be executed`).  Only for people: the
 * fingerprint and its hash, the dedupe keys, are fp_string's.
 */
char		 *fp_words(const char *reason, const json_t *invariants);

/*
 * Seeds grouped by fingerprint.  Adding is O(groups): fine for the
 * handful of distinct bugs a run finds, not for a fingerprint per seed.
 */
struct fp_group {
	char		*fp;
	uint64_t	 hash;		/* fnv1a64(fp): a cheap first compare */
	uint64_t	 smallest;	/* the group's smallest seed */
	size_t		 first;		/* the caller's index of that seed */
	uint64_t	 count;		/* seeds added */
	uint64_t	*seeds;		/* keep_seeds only: every seed, as added;
					   ascending after fp_groups_sort */
};

struct fp_groups {
	struct fp_group	*v;		/* in the order their first seed came */
	size_t		 n;
	bool		 keep_seeds;
};

void		 fp_groups_init(struct fp_groups *g, bool keep_seeds);
/*
 * Adds seed, found at the caller's index idx, to the group of fp (made
 * when new: then its count is 1).  Returns the group, valid until the
 * next add.
 */
struct fp_group	*fp_groups_add(struct fp_groups *g, const char *fp, uint64_t seed,
		    size_t idx);
/* Sorts each group's seeds and the groups by their smallest seed. */
void		 fp_groups_sort(struct fp_groups *g);
void		 fp_groups_free(struct fp_groups *g);

#endif
