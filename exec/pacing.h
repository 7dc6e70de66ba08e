/*
 * pacing.h - emulating a slower host link on the real one (`zbench run --link-rate`).
 *
 * A copy of B bytes is cut into chunks of C bytes (the last one shorter). Each chunk
 * runs at the link's native rate N, but chunk k is held until its release time
 *     r_k = max(0, (end_k) / R - C_k / N),   end_k = bytes up to and including chunk k,
 * counted from the moment the copy could start on its stream, so that chunk k ends
 * at end_k / R: the copy as a whole takes B / R, the rate R asked for, and its bytes
 * arrive spread over that time as a slow link would deliver them (a copy waiting
 * on its stream does not shift the plan, and a late release is caught up by the
 * next chunk instead of accumulating). With R >= N nothing is paced.
 *
 * The plan is plain arithmetic (tested without a GPU); the pacer carries it out on a
 * copy stream: a one-thread kernel stamps the GPU's global timer when the copy's
 * turn comes, and before each chunk another one-thread kernel spins (nanosleep)
 * until stamp + r_k. N is measured when the pacer is created (a 64 MiB pinned copy
 * in its direction). The spin kernels need one free SM slot each: on a GPU filled by
 * large GEMMs a release can be late by up to one GEMM block, which the absolute
 * release times absorb.
 */
#ifndef ZB_PACING_H
#define ZB_PACING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/error.h"

#define ZB_PACE_CHUNK_BYTES (4u << 20) /* 4 MiB: ~0.1-0.3 ms per chunk on gen3..gen5 */

typedef struct zb_pace_plan {
	size_t bytes, chunk_bytes;
	int64_t chunks;      /* >= 1 */
	double rate_Bps, native_Bps;
	int paced;           /* 0: rate >= native, one plain copy */
} zb_pace_plan;

/* Checks the numbers (bytes may be 0: one empty chunk). */
zb_status zb_pace_plan_make(size_t bytes, double rate_Bps, double native_Bps, size_t chunk_bytes,
			    zb_pace_plan *p, zb_error *err);
size_t zb_pace_chunk_size(const zb_pace_plan *p, int64_t k);
/* Release time of chunk k, seconds from the copy's start (0 when not paced). */
double zb_pace_release_s(const zb_pace_plan *p, int64_t k);
/* When the last chunk ends if every chunk runs at the native rate: bytes / rate when
 * paced, bytes / native otherwise. */
double zb_pace_end_s(const zb_pace_plan *p);

#ifndef ZB_STREAM_DEFINED
#define ZB_STREAM_DEFINED
struct CUstream_st;
typedef struct CUstream_st *zb_stream; /* == cudaStream_t */
#endif

/* The pacer of one copy direction (CUDA builds only, exec/pacing.cu). */
typedef struct zb_pacer zb_pacer;

/* to_device: 1 for host-to-device. Measures the native pinned rate on `stream`. */
zb_status zb_pacer_create(zb_pacer **out, double rate_Bps, int to_device, zb_stream stream, zb_error *err);
/* cudaMemcpyAsync(dst, src, bytes) in paced chunks on `stream` (pinned host side). */
zb_status zb_pacer_copy(zb_pacer *p, void *dst, const void *src, size_t bytes, zb_stream stream, zb_error *err);
double zb_pacer_native_Bps(const zb_pacer *p);
void zb_pacer_destroy(zb_pacer *p);

#ifdef __cplusplus
}
#endif

#endif
