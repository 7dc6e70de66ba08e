/*
 * spans.h - CPU spans: intervals of host work (a CPU Adam task, a pool worker's
 * share of it, a dispatcher issuing a GPU task, a host wait) recorded by the thread
 * that did the work, on the clock of zb_now_ns() (CLOCK_MONOTONIC, nanoseconds),
 * which is also the clock the CUPTI records are put on (trace.h).
 *
 * Each recording thread owns one buffer (zb_spans_thread) and appends to it without
 * a lock: a span costs two clock reads and a store (~50 ns). Buffers are registered
 * with their zb_spans under a mutex once per thread. A thread that cannot record
 * for itself (the pool workers, whose spans the CPU dispatcher reads from
 * zb_pool_spans() after each bucket) gets a virtual buffer with a synthetic thread
 * id (ZB_SPANS_VIRTUAL_TID + index), never a real Linux tid.
 *
 * Reading (zb_spans_nthreads, zb_spans_data) is for after every recording thread
 * has stopped (joined): there is no synchronization between writers and readers.
 */
#ifndef ZB_SPANS_H
#define ZB_SPANS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zb_span_kind {
	ZB_SPAN_TASK,   /* a CPU task of the schedule (an Adam bucket), start to end */
	ZB_SPAN_ISSUE,  /* a dispatcher issuing a GPU task's work (launches, copies, event records) */
	ZB_SPAN_WORKER, /* one pool worker's part of a CPU task */
	ZB_SPAN_WAIT,   /* a host wait of a dispatcher for a dependency (task = waiter, other = awaited) */
	ZB_SPAN_KIND_COUNT
} zb_span_kind;

typedef struct zb_span {
	int64_t start_ns, end_ns; /* zb_now_ns() clock */
	int32_t task;             /* schedule task id, -1 for none */
	int32_t other;            /* the awaited task of a wait, else -1 */
	uint8_t kind;             /* zb_span_kind */
} zb_span;

/* Synthetic thread ids of virtual buffers start here (above Linux's pid_max
 * limit of 4194304, so they never collide with a real thread id). */
#define ZB_SPANS_VIRTUAL_TID 0xF00000

typedef struct zb_spans zb_spans;
typedef struct zb_span_buf zb_span_buf;

zb_spans *zb_spans_create(void);
void zb_spans_free(zb_spans *s); /* NULL is fine */

/* The calling thread's buffer, registered under `name` ("zb-disp-gpu") with the
 * thread's Linux tid. Call once per thread and keep the pointer. */
zb_span_buf *zb_spans_thread(zb_spans *s, const char *name);
/* A buffer for work done on another thread, recorded by the caller: thread id
 * ZB_SPANS_VIRTUAL_TID + index. Returns the existing buffer for a known index. */
zb_span_buf *zb_spans_virtual(zb_spans *s, const char *name, int index);

/* Append one span (buf NULL: nothing). */
void zb_span_add(zb_span_buf *buf, zb_span_kind kind, int32_t task, int32_t other, int64_t start_ns,
		 int64_t end_ns);

/* Readers, once no thread records any more. */
int zb_spans_nthreads(const zb_spans *s);
const char *zb_spans_thread_name(const zb_spans *s, int i);
int64_t zb_spans_thread_tid(const zb_spans *s, int i); /* Linux tid, or ZB_SPANS_VIRTUAL_TID + index */
/* The thread's pthread_self() (0 for a virtual buffer): CUPTI may name API threads
 * by it rather than by tid, so the writer can put their calls on the same track. */
uint64_t zb_spans_thread_pthread(const zb_spans *s, int i);
const zb_span *zb_spans_data(const zb_spans *s, int i, size_t *n);
size_t zb_spans_total(const zb_spans *s); /* spans of all threads */

const char *zb_span_kind_name(zb_span_kind k); /* "task", "issue", "worker", "wait" */

/* The calling thread's Linux thread id (gettid). */
int64_t zb_gettid(void);

#ifdef __cplusplus
}
#endif

#endif
