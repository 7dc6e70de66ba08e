/*
 * event_queue.h - the simulator's pending events: an array binary heap ordered by
 * time, ties broken by insertion sequence so that a run is deterministic (ROSS's
 * tw-queue API: create, push, pop, peek, size).
 */
#ifndef ZB_EVENT_QUEUE_H
#define ZB_EVENT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct zb_event {
	double time;
	uint64_t seq;      /* insertion order: the tie-breaker */
	uint32_t task;     /* the task whose flow completes */
	uint32_t version;  /* the flow's version when scheduled; stale events are skipped */
} zb_event;

typedef struct zb_event_queue {
	zb_event *heap;
	size_t size, cap;
	uint64_t next_seq;
} zb_event_queue;

void zb_eq_init(zb_event_queue *q, size_t cap_hint);
void zb_eq_free(zb_event_queue *q);
void zb_eq_push(zb_event_queue *q, double time, uint32_t task, uint32_t version);
/* Remove and return the earliest event; the queue must not be empty. */
zb_event zb_eq_pop(zb_event_queue *q);
static inline const zb_event *zb_eq_peek(const zb_event_queue *q) { return q->size ? &q->heap[0] : NULL; }
static inline size_t zb_eq_size(const zb_event_queue *q) { return q->size; }

#endif
