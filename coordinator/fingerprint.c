#include "coordinator/fingerprint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/seed.h"
#include "common/util.h"
#include "common/verdict.h"

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
cmp_group(const void *a, const void *b)
{
	return cmp_u64(&((const struct fp_group *)a)->smallest,
	    &((const struct fp_group *)b)->smallest);
}

const char **
fp_names(const json_t *invariants, size_t *n)
{
	const char	**names;
	size_t		  i;

	*n = json_array_size(invariants);
	names = xcalloc(*n + 1, sizeof(*names));
	for (i = 0; i < *n; i++) {
		const char	*nm = json_string_value(json_object_get(
		    json_array_get(invariants, i), "name"));

		names[i] = nm ? nm : "";
	}
	qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

char *
fp_string(const char *config_name, const char *reason, const json_t *invariants)
{
	const char	**names;
	size_t		  i, n, len;
	char		 *fp, *p;

	if (reason == NULL)
		reason = "unknown";
	if (reason_parse(reason) != REASON_INVARIANT)
		return xasprintf("%s|%s", config_name, reason);
	names = fp_names(invariants, &n);
	len = strlen(config_name) + 1 + strlen(reason);
	for (i = 0; i < n; i++)
		len += 1 + strlen(names[i]);
	fp = p = xcalloc(len + 1, 1);
	p += sprintf(p, "%s|%s", config_name, reason);
	for (i = 0; i < n; i++)
		p += sprintf(p, "|%s", names[i]);
	free(names);
	return fp;
}

char *
fp_words(const char *reason, const json_t *invariants)
{
	const char	**names;
	char		 *w = NULL;
	size_t		  i, n, len;
	int		  r = reason_parse(reason);
	FILE		 *f;

	if (reason == NULL)
		reason = "unknown";
	if (r != REASON_INVARIANT || json_array_size(invariants) == 0)
		return xasprintf("%s: %s", reason, r < 0 ? "unknown reason" :
		    reason_what((enum reason)r));
	names = fp_names(invariants, &n);
	if ((f = open_memstream(&w, &len)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
	fputs(" broken", f);
	fclose(f);
	free(names);
	return w;
}

void
fp_hash_hex(const char *fp, char out[FP_HASH_LEN])
{
	snprintf(out, FP_HASH_LEN, "%016" PRIx64, fnv1a64(fp, strlen(fp)));
}

void
fp_groups_init(struct fp_groups *g, bool keep_seeds)
{
	memset(g, 0, sizeof(*g));
	g->keep_seeds = keep_seeds;
}

struct fp_group *
fp_groups_add(struct fp_groups *g, const char *fp, uint64_t seed, size_t idx)
{
	struct fp_group	*gr;
	uint64_t	 h = fnv1a64(fp, strlen(fp));
	size_t		 k;

	for (k = 0; k < g->n; k++)
		if (g->v[k].hash == h && strcmp(g->v[k].fp, fp) == 0)
			break;
	if (k == g->n) {
		g->v = xreallocarray(g->v, g->n + 1, sizeof(*g->v));
		g->v[g->n++] = (struct fp_group){ .fp = xstrdup(fp), .hash = h,
		    .smallest = seed, .first = idx };
	}
	gr = &g->v[k];
	if (seed < gr->smallest) {
		gr->smallest = seed;
		gr->first = idx;
	}
	if (g->keep_seeds && (gr->count & (gr->count - 1)) == 0) {
		/* At 0, 1, 2, 4, ... seeds: room doubles. */
		gr->seeds = xreallocarray(gr->seeds, gr->count ? gr->count * 2 : 1,
		    sizeof(*gr->seeds));
	}
	if (g->keep_seeds)
		gr->seeds[gr->count] = seed;
	gr->count++;
	return gr;
}

void
fp_groups_sort(struct fp_groups *g)
{
	size_t	k;

	for (k = 0; k < g->n && g->keep_seeds; k++)
		qsort(g->v[k].seeds, g->v[k].count, sizeof(uint64_t), cmp_u64);
	if (g->n > 1)
		qsort(g->v, g->n, sizeof(*g->v), cmp_group);
}

void
fp_groups_free(struct fp_groups *g)
{
	size_t	k;

	if (g == NULL)
		return;
	for (k = 0; k < g->n; k++) {
		free(g->v[k].fp);
		free(g->v[k].seeds);
	}
	free(g->v);
	fp_groups_init(g, g->keep_seeds);
}
