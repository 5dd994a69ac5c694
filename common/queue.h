/*
 * A FIFO ring of fixed-size elements, grown by doubling (never shrunk).
 * The coordinator queues seed indices in it (coord_int.h), the server the
 * events nng's threads hand to its loop (server.c).  Not thread-safe: a
 * queue shared between threads is used under its owner's lock.
 *
 * push and pop are O(1) (amortised for push); queue_remove is O(len), for
 * the short queues that need it (retries, confirming re-runs).
 */
#ifndef SOAK_QUEUE_H
#define SOAK_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

struct queue {
	unsigned char	*v;
	size_t		 esize;		/* bytes per element */
	size_t		 head, len, cap;	/* in elements */
};

/* An empty queue of esize-byte elements; it allocates on the first push. */
void	 queue_init(struct queue *q, size_t esize);
/* Frees the storage; q is empty again.  NULL is fine. */
void	 queue_free(struct queue *q);
/* Copies esize bytes of e to the tail.  Aborts when out of memory. */
void	 queue_push(struct queue *q, const void *e);
/* Copies the head to e and removes it; false when the queue is empty. */
bool	 queue_pop(struct queue *q, void *e);
/* Element i from the head (i < len), in place until the next push or remove. */
void	*queue_at(const struct queue *q, size_t i);
/* Removes element i (i < len), keeping the order of the rest. */
void	 queue_remove(struct queue *q, size_t i);

#endif
