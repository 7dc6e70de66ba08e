/*
 * copy_bench.h - host<->device copy timing, shared by `zbench bench --filter pcie`
 * and `zbench calibrate` (one way of measuring, not two).
 *
 * Method (nvbandwidth's): two warm-up copies, then `reps` timed ones, the median
 * reported; the data that moved is checked at sampled positions afterwards.
 *   pinned    cudaMemcpyAsync on a dedicated non-blocking stream per direction,
 *             timed by CUDA events recorded around each copy on its stream, so the
 *             enqueue cost is not timed; both directions at once are enqueued
 *             back to back and synchronized together.
 *   pageable  the driver stages a pageable copy through its own pinned buffers and
 *             the call returns only when it is done (or staged), so events would miss
 *             the staging: each copy is timed on the host clock from the call to the
 *             end of a stream synchronize. Both at once need two host threads (one
 *             pageable call blocks its thread): a barrier starts them together.
 * Host buffers hold a counter pattern and device buffers random bf16 values (never
 * zeros), so a copy that moved nothing is caught by the check.
 *
 * Needs CUDA (copy_bench_cuda.c; not built without nvcc).
 */
#ifndef ZB_COPY_BENCH_H
#define ZB_COPY_BENCH_H

#include <stddef.h>

#include "common/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zb_copy_bench zb_copy_bench;

typedef enum zb_copy_dir {
	ZB_COPY_H2D,
	ZB_COPY_D2H,
	ZB_COPY_BOTH, /* H2D and D2H of the same size at the same time */
} zb_copy_dir;

/* Buffers for copies of up to max_bytes each way (two host, two device buffers)
 * on the current device, pinned or pageable host memory, and two streams. */
zb_status zb_copy_bench_open(size_t max_bytes, int pinned, zb_copy_bench **out, zb_error *err);
void zb_copy_bench_close(zb_copy_bench *b);

/* Median seconds of `reps` copies of `bytes`: t[0] of the H2D copy, t[1] of the
 * D2H copy (0 for a direction that did not run). */
zb_status zb_copy_bench_time(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, int reps, double t[2],
			     zb_error *err);

/* One untimed copy of `bytes` in dir (both: the two at once), returning when it is
 * done: background traffic for measurements of what copies do to other work. It
 * waits by polling with 20 us sleeps, not by a synchronize that may spin a core. */
zb_status zb_copy_bench_load(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, zb_error *err);

/* The last copies of `bytes` moved the right data: sampled positions of the H2D
 * destination equal the host source, and of the D2H destination the device
 * source. Call after a zb_copy_bench_time of that size in each direction checked. */
zb_status zb_copy_bench_verify(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
