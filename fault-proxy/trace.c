/*
 * The fault trace (proxy.h's determinism contract): records are kept in
 * memory as exchanges end, and written at proxy_set_close sorted by
 * (proxy index, turn, conn, exchange), so the file is the same whatever
 * order the turns ran in.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "fault-proxy/engine_int.h"

void
px_trace_add(struct proxy_set *ps, const struct proxy_trace_rec *r)
{
	struct proxy_trace_rec	*n;
	size_t			 cap;

	pthread_mutex_lock(&ps->mu);
	if (ps->nrecs == ps->caprecs) {
		cap = ps->caprecs ? ps->caprecs * 2 : 256;
		if (ps->nrecs >= PROXY_TRACE_CAP ||
		    (n = realloc(ps->recs, cap * sizeof(*n))) == NULL) {
			ps->dropped++;
			pthread_mutex_unlock(&ps->mu);
			return;
		}
		ps->recs = n;
		ps->caprecs = cap;
	}
	ps->recs[ps->nrecs++] = *r;
	pthread_mutex_unlock(&ps->mu);
}

static int
rec_cmp(const void *a, const void *b)
{
	const struct proxy_trace_rec	*x = a, *y = b;

	if (x->proxy != y->proxy)
		return x->proxy < y->proxy ? -1 : 1;
	if (x->turn != y->turn)
		return x->turn < y->turn ? -1 : 1;
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->exchange != y->exchange)
		return x->exchange < y->exchange ? -1 : 1;
	return 0;
}

size_t
proxy_set_trace_count(struct proxy_set *ps)
{
	size_t	n;

	pthread_mutex_lock(&ps->mu);
	n = ps->nrecs;
	pthread_mutex_unlock(&ps->mu);
	return n;
}

void
px_trace_write(struct proxy_set *ps)
{
	char	line[640];
	size_t	i;
	int	n;

	if (ps->trace == NULL)
		return;
	if (ps->nrecs > 0)	/* recs is NULL when nothing was recorded */
		qsort(ps->recs, ps->nrecs, sizeof(*ps->recs), rec_cmp);
	for (i = 0; i < ps->nrecs; i++)
		if ((n = proxy_trace_format(&ps->recs[i], line, sizeof(line))) > 0)
			fwrite(line, 1, (size_t)n, ps->trace);
	if (ps->dropped)
		log_warnx("fault trace %s: %zu records over the cap of %d dropped",
		    ps->trace_path, ps->dropped, PROXY_TRACE_CAP);
	if (fclose(ps->trace) != 0)
		log_warn("fault trace %s", ps->trace_path);
	ps->trace = NULL;
}
