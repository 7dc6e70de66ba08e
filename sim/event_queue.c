/* event_queue.c - array binary heap of zb_event, see event_queue.h. */
#include "sim/event_queue.h"

#include <stdlib.h>

#include "common/error.h"

static inline int before(const zb_event *a, const zb_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void zb_eq_init(zb_event_queue *q, size_t cap_hint)
{
	q->cap = cap_hint ? cap_hint : 64;
	q->heap = zb_xmalloc(q->cap * sizeof *q->heap);
	q->size = 0;
	q->next_seq = 0;
}

void zb_eq_free(zb_event_queue *q)
{
	free(q->heap);
	q->heap = NULL;
	q->size = q->cap = 0;
}

void zb_eq_push(zb_event_queue *q, double time, uint32_t task, uint32_t version)
{
	if (q->size == q->cap) {
		q->cap *= 2;
		q->heap = zb_xrealloc(q->heap, q->cap * sizeof *q->heap);
	}
	zb_event e = { time, q->next_seq++, task, version };
	size_t i = q->size++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&e, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = e;
}

zb_event zb_eq_pop(zb_event_queue *q)
{
	zb_event top = q->heap[0];
	zb_event last = q->heap[--q->size];
	size_t i = 0, n = q->size;
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && before(&q->heap[child + 1], &q->heap[child]))
			child++;
		if (!before(&q->heap[child], &last))
			break;
		q->heap[i] = q->heap[child];
		i = child;
	}
	if (n)
		q->heap[i] = last;
	return top;
}
