/*
 * flash_mma.h - the FlashAttention-2 kernels behind exec/flash_attn.h (the default
 * implementation; ZB_FLASH_IMPL=wmma selects the older wmma kernels of
 * flash_attn.cu). Only flash_attn.cu calls these: it checks the shape, the buffers
 * and the strides first, and for the backward zeroes the dQ accumulator, computes
 * dD = rowsum(dO * O) and converts dQ to bf16 afterwards (shared by both kernels).
 *
 * Forward: one CTA of 4 warps per 64 query rows (of one head and sequence), each
 * warp owning 16 rows; K and V tiles of 64 keys arrive by cp.async into a double
 * buffer; S = Q K^T and O += P V are mma.sync m16n8k16 bf16 products whose operands
 * come from ldmatrix (ldmatrix.trans for V); the online softmax runs on the
 * accumulator registers (row max and sum over the 4 lanes of a quad) and P goes
 * straight from the S accumulators into the A operand of P V.
 * (Head dim <= 80: each warp owns 32 rows, a CTA 128; ZB_FLASH_FWD_ROWS=16|32 overrides.)
 * Backward: one CTA of 4 warps per 64 keys (of one kv head and sequence), each warp
 * owning 16 keys (ZB_FLASH_BWD_WARPS=8: 8 warps, 128 keys); per query tile (64 rows,
 * 32 for head dim 96 and 128; ZB_FLASH_BWD_ROWS=32|64 overrides) S^T, dP^T,
 * P^T and dS^T stay in registers, dV += P^T dO and dK += dS^T Q accumulate in
 * registers over all query tiles of all query heads of the group, and dQ += dS K
 * (dS^T staged in shared memory) is added to the fp32 workspace with atomics.
 */
#ifndef ZB_FLASH_MMA_H
#define ZB_FLASH_MMA_H

#include "exec/flash_attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zb_flash_mma_args {
	const void *q, *k, *v, *dout; /* bf16 */
	void *o, *dk, *dv;           /* bf16 outputs */
	int64_t ldq, ldk, ldv, ldo, lddo, lddk, lddv;
	float *lse_out;              /* forward output [batch, heads, seq] */
	const float *lse, *dd;       /* backward inputs [batch, heads, seq] */
	float *dqacc;                /* backward: [batch * seq, heads, head_dim], zeroed */
	int vec;                     /* inputs 16-byte aligned rows: cp.async */
	int ovec;                    /* outputs 4-byte aligned pairs (o, or dk and dv) */
} zb_flash_mma_args;

zb_status zb_flash_mma_fwd(const zb_flash_shape *sh, const zb_flash_mma_args *a, zb_stream stream, zb_error *err);

/* The main backward kernel only (see above for what the caller does around it). */
zb_status zb_flash_mma_bwd(const zb_flash_shape *sh, const zb_flash_mma_args *a, zb_stream stream, zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
