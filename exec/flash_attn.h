/*
 * flash_attn.h - fused attention (FlashAttention-2 style), forward and backward, on
 * tensor cores (bf16 inputs and outputs, fp32 accumulation), causal or not, with
 * grouped-query attention (kv_heads divides heads).
 *
 * Layout: token t of sequence b is row (b * seq + t); a row of Q holds all heads,
 * head h at columns [h * head_dim, (h + 1) * head_dim); a row of K and V holds
 * kv_heads heads, query head h reading kv head h / (heads / kv_heads). Each tensor
 * has its own row stride (elements), so Q, K and V can be slices of one packed QKV
 * buffer (the executor's [T, h + 2 kv] layout) and dQ, dK, dV slices of its gradient.
 *
 * Forward: O = softmax(scale * Q K^T (+ causal mask)) V, computed tile by tile with
 * an online softmax (running max and sum in fp32), never storing the score matrix;
 * lse [batch, heads, seq] (fp32) keeps log(sum_j exp(scale * s_ij)) per query row
 * for the backward.
 * Backward: dD = rowsum(dO * O) first; then per block of 64 keys (and kv head) the
 * probabilities are recomputed per tile from lse, dV and dK accumulate in registers
 * over all query tiles and all query heads of the group, dQ is added with fp32
 * atomics into a workspace and converted to bf16 at the end.
 *
 * Kernels: FlashAttention-2 on mma.sync (exec/flash_mma.h, the default) or the older
 * wmma ones (ZB_FLASH_IMPL=wmma); another ZB_FLASH_IMPL value is ZB_E_INPUT.
 *
 * Supported head dims: ZB_FLASH_HEAD_DIM_OK(d): 32, 64, 80, 96, 128 (the model
 * shapes; any multiple of 16 would work, each one is one more template instance). Any seq >= 1 (tiles are zero-padded).
 * All pointers are device pointers; work is queued on `stream`, nothing waits.
 * Bad arguments: ZB_E_INPUT and nothing queued.
 */
#ifndef ZB_FLASH_ATTN_H
#define ZB_FLASH_ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/error.h"

#ifndef ZB_STREAM_DEFINED
#define ZB_STREAM_DEFINED
struct CUstream_st;
typedef struct CUstream_st *zb_stream; /* == cudaStream_t */
#endif

#define ZB_FLASH_HEAD_DIM_OK(d) ((d) == 32 || (d) == 64 || (d) == 80 || (d) == 96 || (d) == 128)

typedef struct zb_flash_shape {
	int batch, seq, heads, kv_heads, head_dim;
	int causal;
	float scale;            /* usually 1 / sqrt(head_dim) */
} zb_flash_shape;

/* Checks the shape (one line naming the bad value). */
zb_status zb_flash_check(const zb_flash_shape *sh, zb_error *err);

/* o and lse are outputs; o may not alias q, k or v. */
zb_status zb_flash_fwd(const zb_flash_shape *sh, const uint16_t *q, int64_t ldq, const uint16_t *k,
		       int64_t ldk, const uint16_t *v, int64_t ldv, uint16_t *o, int64_t ldo, float *lse,
		       zb_stream stream, zb_error *err);

/* Bytes of device workspace zb_flash_bwd needs (fp32 dQ accumulator and dD). */
size_t zb_flash_bwd_workspace(const zb_flash_shape *sh);

/* dq, dk, dv are written (not accumulated); they may share one buffer at different
 * column offsets, and may not alias the inputs. o and lse are the forward's. */
zb_status zb_flash_bwd(const zb_flash_shape *sh, const uint16_t *q, int64_t ldq, const uint16_t *k,
		       int64_t ldk, const uint16_t *v, int64_t ldv, const uint16_t *o, int64_t ldo,
		       const uint16_t *dout, int64_t lddo, const float *lse, uint16_t *dq, int64_t lddq,
		       uint16_t *dk, int64_t lddk, uint16_t *dv, int64_t lddv, void *workspace,
		       zb_stream stream, zb_error *err);

/* FLOPs of the forward (2 GEMMs) and backward (5 GEMMs) as executed: 4 and 10
 * times b*heads*d*(number of allowed (query, key) pairs). */
double zb_flash_fwd_flops(const zb_flash_shape *sh);
double zb_flash_bwd_flops(const zb_flash_shape *sh);

/* Benchmark (for `zbench bench`): forward + backward on random data, median of
 * `repeats` timed runs after warm-up, TFLOP/s counted with the two functions above. */
zb_status zb_bench_flash(const zb_flash_shape *sh, int repeats, double *fwd_tflops, double *bwd_tflops,
			 zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
