/*
 * flash_frag.h - where a lane's operands of mma.sync m16n8k16 come from and where its
 * accumulators go, for the FlashAttention-2 kernels (exec/flash_mma.cu). Plain C so
 * that tests/test_flash_frag.c checks these functions on the host against an
 * emulation of ldmatrix and mma.sync written from the PTX ISA's fragment tables.
 *
 * ldmatrix .x4 loads four 8x8 b16 matrices; lanes 8j..8j+7 give the addresses of the
 * 8 rows of matrix j, and register j of lane L receives row L/4, elements 2(L%4) and
 * 2(L%4)+1 of matrix j (of its transpose with .trans). Each function below gives,
 * for a lane, the offset (row, column) in shared memory of the row it addresses,
 * relative to the top-left corner of a 16x16 block:
 *
 *   a:  the A operand (16 x k16) of a row-major [m][k] tile: registers a0..a3.
 *   bn: the B operands of two n8 tiles (n, n + 8) from an [n][k] tile (K for
 *       S = Q K^T): registers {b0, b1} of tile n, then of tile n + 8.
 *   bt: the same from a [k][n] tile with .trans (V for P V).
 *   at: the A operand from a [k][m] tile with .trans (dS^T for dQ = dS K).
 *
 * The accumulator (16 x 8, fp32) of lane L holds c[e] at row L/4 + 8 (e / 2),
 * column 2 (L % 4) + e % 2; two adjacent n8 accumulators (columns 16i..16i+15),
 * each pair packed to bf16x2, are exactly the A operand of k16 step i:
 * a0 = c_lo[0,1], a1 = c_lo[2,3], a2 = c_hi[0,1], a3 = c_hi[2,3].
 */
#ifndef ZB_FLASH_FRAG_H
#define ZB_FLASH_FRAG_H

#ifdef __CUDACC__
#define ZB_FRAG_FN static __host__ __device__ __forceinline__
#else
#define ZB_FRAG_FN static inline
#endif

ZB_FRAG_FN int zb_frag_a_row(int lane) { return (lane & 7) + ((lane >> 3) & 1) * 8; }
ZB_FRAG_FN int zb_frag_a_col(int lane) { return (lane >> 4) * 8; }
ZB_FRAG_FN int zb_frag_bn_row(int lane) { return (lane & 7) + (lane >> 4) * 8; }
ZB_FRAG_FN int zb_frag_bn_col(int lane) { return ((lane >> 3) & 1) * 8; }
ZB_FRAG_FN int zb_frag_bt_row(int lane) { return (lane & 7) + ((lane >> 3) & 1) * 8; }
ZB_FRAG_FN int zb_frag_bt_col(int lane) { return (lane >> 4) * 8; }
ZB_FRAG_FN int zb_frag_at_row(int lane) { return (lane & 7) + (lane >> 4) * 8; }
ZB_FRAG_FN int zb_frag_at_col(int lane) { return ((lane >> 3) & 1) * 8; }
ZB_FRAG_FN int zb_frag_c_row(int lane, int e) { return (lane >> 2) + 8 * (e >> 1); }
ZB_FRAG_FN int zb_frag_c_col(int lane, int e) { return 2 * (lane & 3) + (e & 1); }

#endif
