/*
 * gemm.h - the executor's matrix multiplies: a small C API over cuBLASLt for bf16
 * and fp16 GEMMs with fp32 accumulation (CUBLAS_COMPUTE_32F), plain or strided
 * batched, with the layer shapes the schedule (core/graph.h) names.
 *
 * Convention: cuBLAS's, column-major.
 *   C[m x n] = alpha * op(A) op(B) + beta * C
 *   op(A) is m x k: A is stored m x k (transa = 0, lda >= m) or k x m (transa = 1,
 *   lda >= k); op(B) is k x n: B is stored k x n (transb = 0, ldb >= k) or n x k
 *   (transb = 1, ldb >= n); ldc >= m. A row-major product Y[r x o] = X[r x i] W^T
 *   with W[o x i] row-major is C = Y^T: m = o, n = r, k = i, A = W with transa = 1,
 *   B = X with transb = 0.
 *   beta = 1 accumulates into C (weight gradients over micro-batches); C may then
 *   be fp32 (c_f32) so the sum is not rounded to 16 bits at every micro-batch.
 *   Batched: batch matrices at A + i*stride_a, B + i*stride_b, C + i*stride_c
 *   (strides in elements; a stride of 0 for A or B reuses one matrix).
 *
 * A zb_gemm owns a cuBLASLt handle, a cuBLAS handle (the fallback when cuBLASLt
 * offers no algorithm for a layout), one 32 MiB workspace, and a plan cache: the
 * first call with a shape (dtype, c_f32, m, n, k, batch, transposes, leading
 * dimensions, strides, beta != 0, and the pointers' alignment) builds its
 * descriptors and asks cuBLASLt's heuristic once; later calls reuse that plan, so
 * a training step's few dozen shapes cost one query each per run.
 *
 * Not thread-safe, and the workspace is shared by all calls: use one zb_gemm per
 * stream (or order the streams). Pointers are device pointers on the device that
 * was current at zb_gemm_create.
 */
#ifndef ZB_GEMM_H
#define ZB_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/error.h"
#include "core/config.h" /* zb_dtype: ZB_BF16, ZB_FP16 */

#ifndef ZB_STREAM_DEFINED
#define ZB_STREAM_DEFINED
struct CUstream_st;
typedef struct CUstream_st *zb_stream; /* == cudaStream_t */
#endif

#define ZB_GEMM_WORKSPACE_BYTES (32u << 20)

typedef struct zb_gemm zb_gemm;

typedef struct zb_gemm_op {
	zb_dtype dtype;        /* A and B (and C unless c_f32): ZB_BF16 or ZB_FP16 */
	int c_f32;             /* C is fp32 */
	int transa, transb;    /* 0: as stored, 1: transposed */
	int m, n, k;           /* >= 1 */
	int batch;             /* >= 1 */
	int64_t lda, ldb, ldc; /* leading dimensions in elements; 0: packed */
	int64_t stride_a, stride_b, stride_c; /* between batch matrices, elements */
	float alpha, beta;
} zb_gemm_op;

/* A packed single GEMM: lda, ldb, ldc packed, batch 1, strides 0, alpha 1, beta 0. */
void zb_gemm_op_init(zb_gemm_op *op, zb_dtype dtype, int transa, int transb, int m, int n,
		     int k);

/* Handles and workspace on the current device. */
zb_status zb_gemm_create(zb_gemm **out, zb_error *err);

/* Free everything (NULL is fine); the first failure is reported, but everything is
 * released regardless. Call after the work queued with it has finished. */
zb_status zb_gemm_destroy(zb_gemm *g, zb_error *err);

/* C = alpha op(A) op(B) + beta C, queued on stream. ZB_E_INPUT for a shape that is
 * not valid (nothing queued). */
zb_status zb_gemm_run(zb_gemm *g, const zb_gemm_op *op, const void *A, const void *B, void *C,
		      zb_stream stream, zb_error *err);

/* Shapes planned so far, and how many of them fell back to cublasGemmStridedBatchedEx
 * because cuBLASLt offered no algorithm. */
int zb_gemm_plans(const zb_gemm *g);
int zb_gemm_fallbacks(const zb_gemm *g);

#ifdef __cplusplus
}
#endif

#endif
