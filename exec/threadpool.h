/*
 * threadpool.h - a pool of pinned CPU worker threads running a parallel-for.
 *
 * The CPU side of the executor (chiefly the fused Adam of cpu_adam.h) runs one
 * bucket at a time: the bucket's range [0, n) is cut into chunks whose boundaries
 * are multiples of 64 items, and the workers take chunks from a shared counter
 * until none are left. Chunks that start on multiples of 64 keep every thread on
 * its own cache lines of every array (64 fp32 = 4 lines, 64 bf16 = 2 lines), so
 * no line is written by two cores, and taking chunks dynamically lets a worker that
 * was interrupted (by the thread feeding the GPU, say) fall behind without stalling
 * the bucket.
 *
 * Workers are pinned one per core, picked from the process's allowed CPU set with
 * the first hardware thread of every core first (so 16 workers on a 16-core box with
 * SMT land on 16 different cores). Pinning that fails is not an error: the worker
 * runs unpinned and zb_pool_cpu() says -1 for it.
 *
 * Idle workers sleep on a condition variable (a futex), they never spin: a spinning
 * waiter would burn a core that Adam or the CUDA host thread needs. The cost is a
 * wake-up of a few microseconds per run, small against a bucket of a few million
 * parameters (milliseconds).
 *
 * The calling thread does not work: zb_pool_run() hands the range to the N workers
 * and sleeps until the last chunk is done. Runs from several threads are serialized.
 */
#ifndef ZB_THREADPOOL_H
#define ZB_THREADPOOL_H

#include <stdint.h>

#include "common/clock.h" /* zb_now_ns: the clock of pool spans */
#include "common/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Chunk boundaries are multiples of this many items (except the range's end). */
#define ZB_POOL_ALIGN 64

typedef struct zb_pool zb_pool;

/* Work on items [begin, end); worker is 0..threads-1. Called once per chunk. */
typedef void (*zb_pool_fn)(void *ctx, int64_t begin, int64_t end, int worker);

/* What one worker did in the latest run, on the zb_now_ns() clock. A worker that
 * took no chunk has items == 0 and start_ns == end_ns. */
typedef struct zb_pool_span {
	int64_t start_ns; /* woke up and took its first chunk */
	int64_t end_ns;   /* finished its last chunk */
	int64_t items;    /* items it processed */
	int64_t chunks;   /* chunks it processed */
} zb_pool_span;

/* Start `threads` workers (threads <= 0: one per CPU in the allowed set). Fails only
 * when threads cannot be created. */
zb_status zb_pool_create(int threads, zb_pool **out, zb_error *err);

/* The same on slice `slice` of `slices` of the allowed CPUs (a data-parallel rank's
 * share, exec/ranks_cuda.c): a contiguous 1/slices of the cores' first hardware
 * threads, then of the other threads. threads <= 0: one per CPU of the slice. */
zb_status zb_pool_create_slice(int threads, int slice, int slices, zb_pool **out, zb_error *err);

/* Stop and join the workers, free the pool. NULL is fine. */
void zb_pool_destroy(zb_pool *pool);

int zb_pool_threads(const zb_pool *pool);

/* The CPU worker i is pinned to, or -1 when pinning failed for it. */
int zb_pool_cpu(const zb_pool *pool, int worker);

/* How many workers are pinned (== zb_pool_threads() when all went well). When some
 * are not, zb_pool_pin_note() says why (empty string otherwise). */
int zb_pool_pinned(const zb_pool *pool);
const char *zb_pool_pin_note(const zb_pool *pool);

/* Run fn over [0, n_items) in chunks of `chunk` items, rounded up to a multiple of
 * ZB_POOL_ALIGN (chunk <= 0: zb_pool_auto_chunk()), and return when every chunk is
 * done. Every item is passed to fn exactly once. n_items <= 0 returns at once.
 * Must not be called from inside fn (the run would wait for itself). */
void zb_pool_run(zb_pool *pool, zb_pool_fn fn, void *ctx, int64_t n_items, int64_t chunk);

/* The chunk zb_pool_run() uses when given none: about ZB_POOL_CHUNKS_PER_WORKER
 * chunks per worker, a multiple of ZB_POOL_ALIGN, at least 4096 items (taking a chunk
 * costs one atomic add, ~100 ns, against ~10 us for 4096 Adam parameters). Several
 * chunks per worker let the others take over the share of a worker that was
 * preempted; a worker waits at most about one chunk at the end of a run. */
#define ZB_POOL_CHUNKS_PER_WORKER 8
int64_t zb_pool_auto_chunk(const zb_pool *pool, int64_t n_items);

/* Per-worker spans of the latest run; valid until the next run. Array of
 * zb_pool_threads() entries. */
const zb_pool_span *zb_pool_spans(const zb_pool *pool);


#ifdef __cplusplus
}
#endif

#endif
