/*
 * gpu_adam.h - fused Adam(W) on the GPU for the GPU-resident share of the optimizer
 * (Twin-Flow's 1 - r), bitwise the same as the CPU's fused Adam (exec/cpu_adam.h).
 *
 * It takes the CPU side's own zb_adam_params and zb_adam_buffers (device pointers
 * here), so one set of hyper-parameters drives both flows, and it does the very
 * operations cpu_adam.h documents, in the same order, each rounded once:
 *
 *   per call, in double on the host, each rounded once to float (zb_gpu_adam_coeffs):
 *     b1 = beta1, b2 = beta2, c1 = 1 - beta1, c2 = 1 - beta2,
 *     step = lr / (1 - beta1^t), ibc2 = 1 / (1 - beta2^t),
 *     decay = lr * weight_decay, eps = eps, inv_scale = 1 / grad_scale
 *     (beta^t is pow(beta, t) in double)
 *   per parameter, in float, by the kernel:
 *     g  = half_to_float(grad) * inv_scale                      __fmul_rn
 *     m  = fma(b1, m, c1 * g)                                   __fmaf_rn, __fmul_rn
 *     v  = fma(b2, v, c2 * (g * g))
 *     d  = sqrt(v * ibc2) + eps                                 __fsqrt_rn, __fadd_rn
 *     p  = fma(-step, m / d, fma(-decay, p, p))                 __fdiv_rn (IEEE)
 *     param16 = float_to_half(p), round to nearest even         __float2bfloat16_rn
 *
 * The intrinsics forbid the compiler's own fma contraction and fast division or
 * square root, and CUDA keeps subnormals (no flush to zero) without --use_fast_math,
 * as the CPU does, so for finite inputs the GPU's master, m, v and param16 equal the
 * CPU's bit for bit (tests/gpu/test_kernels.c checks this against a scalar C copy of
 * the sequence). A NaN stays a NaN (its payload bits may differ from the CPU's).
 *
 * Traffic: ZB_ADAM_BYTES_PER_PARAM = 28 bytes per parameter (reads grad 2, master,
 * m, v 12; writes master, m, v 12, param16 2). The kernel moves 4 parameters per
 * thread (16-byte fp32 and 8-byte 16-bit accesses, streaming cache hints: the data
 * is used once) on a grid as large as the work: about 148-150 Gparam/s (4.15 TB/s)
 * on the H200 for 2^27-2^28 parameters. Arrays whose element offsets agree modulo 4
 * (any slice of one flat parameter vector) take this path after a scalar head of
 * at most 3; others run one parameter per thread, with the same results.
 */
#ifndef ZB_GPU_ADAM_H
#define ZB_GPU_ADAM_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/error.h"

#include "exec/cpu_adam.h" /* zb_adam_params, zb_adam_buffers, zb_half (no extern "C" of its own) */

#ifndef ZB_STREAM_DEFINED
#define ZB_STREAM_DEFINED
struct CUstream_st;
typedef struct CUstream_st *zb_stream; /* == cudaStream_t */
#endif

/* The per-call constants, each a float rounded once from a double (see above). */
typedef struct zb_gpu_adam_coeffs {
	float b1, b2, c1, c2;
	float step;      /* lr / (1 - beta1^t) */
	float ibc2;      /* 1 / (1 - beta2^t) */
	float decay;     /* lr * weight_decay */
	float eps;
	float inv_scale; /* 1 / grad_scale */
} zb_gpu_adam_coeffs;

/* Validate p (lr >= 0, betas in [0, 1), eps >= 0, weight_decay >= 0, step >= 1,
 * grad_scale > 0, known 16-bit types) and compute the constants. */
zb_status zb_gpu_adam_coeffs_make(const zb_adam_params *p, zb_gpu_adam_coeffs *c, zb_error *err);

/* One Adam step over parameters [0, n) of b (device pointers; b->param16 NULL: not
 * written), queued on stream. p->grad_type and p->param_type pick bf16 or fp16 for
 * the 16-bit arrays; p->isa is ignored. Arrays must not overlap. */
zb_status zb_gpu_adam_step(const zb_adam_params *p, const zb_adam_buffers *b, int64_t n,
			   zb_stream stream, zb_error *err);

/* The same step with constants already made (the executor makes them once per
 * step and runs many buckets). */
zb_status zb_gpu_adam_step_coeffs(const zb_gpu_adam_coeffs *c, zb_half grad_type,
				  zb_half param_type, const zb_adam_buffers *b, int64_t n,
				  zb_stream stream, zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
