#include "common/queue.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void
queue_init(struct queue *q, size_t esize)
{
	memset(q, 0, sizeof(*q));
	q->esize = esize;
}

void
queue_free(struct queue *q)
{
	if (q == NULL)
		return;
	free(q->v);
	queue_init(q, q->esize);
}

void *
queue_at(const struct queue *q, size_t i)
{
	return q->v + ((q->head + i) % q->cap) * q->esize;
}

void
queue_push(struct queue *q, const void *e)
{
	if (q->len == q->cap) {
		unsigned char	*nv;
		size_t		 i, ncap = q->cap ? q->cap * 2 : 64;

		/* Unrolled from head, so the new ring starts at 0. */
		nv = xcalloc(ncap, q->esize);
		for (i = 0; i < q->len; i++)
			memcpy(nv + i * q->esize, queue_at(q, i), q->esize);
		free(q->v);
		q->v = nv;
		q->cap = ncap;
		q->head = 0;
	}
	memcpy(queue_at(q, q->len), e, q->esize);
	q->len++;
}

bool
queue_pop(struct queue *q, void *e)
{
	if (q->len == 0)
		return false;
	memcpy(e, queue_at(q, 0), q->esize);
	q->head = (q->head + 1) % q->cap;
	q->len--;
	return true;
}

void
queue_remove(struct queue *q, size_t i)
{
	for (; i + 1 < q->len; i++)
		memcpy(queue_at(q, i), queue_at(q, i + 1), q->esize);
	q->len--;
}
