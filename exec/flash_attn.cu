/*
 * flash_attn.cu - fused attention on tensor cores; see flash_attn.h.
 *
 * Tiles are 64 queries x 64 keys, a block is 4 warps (128 threads) and each warp owns
 * 16 rows of the tile. Matrix products use nvcuda::wmma bf16 16x16x16 fragments with
 * fp32 accumulators (mma.sync on sm_80 and sm_90). A wmma accumulator's element
 * layout is opaque, so wherever a product must be combined row by row (the online
 * softmax, the recomputed probabilities) the warp stores it to its own shared-memory
 * strip and each lane works on a fixed half row: row lane/2, columns (lane%2) * 32.
 *
 * Forward, one block per (query tile, head, sequence); causal blocks run heaviest
 * first. The output rows of a warp live in registers (head_dim/2 floats per lane),
 * rescaled by exp(m_old - m_new) when the running max grows; the softmax runs in
 * base 2 (scale * log2 e folded in), lse is stored in natural log.
 *
 * Backward, one block per (key tile, kv head, sequence): K and V stay in shared
 * memory, dK and dV accumulate in wmma fragments over every query tile of every query
 * head of the group (so GQA needs no atomics for them); per query tile the warp
 * recomputes S^T = K Q^T and dP^T = V dO^T for its 16 keys, forms P and dS, adds
 * P^T dO to dV and dS^T Q to dK, and the block adds dS K into the fp32 dQ workspace
 * with atomics (FlashAttention-2's split).
 *
 * These wmma kernels are the fallback (ZB_FLASH_IMPL=wmma): the mma.sync kernels of
 * flash_mma.cu are the default: on the H200 they were 3.4x faster at the same
 * tolerances. Both share the checks, dD, the dQ workspace and its conversion below.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/flash_attn.h"
#include "exec/flash_mma.h"
#include "exec/kernels.h"

using namespace nvcuda;
typedef __nv_bfloat16 bf16;

#define FA_TILE 64
#define FA_WARPS 4
#define FA_THREADS (32 * FA_WARPS)
#define FA_PL 72            /* row stride of bf16 64-wide tiles (padding against bank conflicts) */
#define FA_LOG2E 1.4426950408889634f
#define FA_LN2 0.6931471805599453f

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major> frag_at;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

struct fa_args {
	const bf16 *q, *k, *v, *o, *dout;
	const float *lse;
	bf16 *out;
	float *lse_out, *dqacc, *dd;
	int64_t ldq, ldk, ldv, ldo, lddo;
	int seq, heads, kv_heads, causal, vec;
	float scale;
};

/* Rows [row0, row0 + 64) of a [*, D] slice with row stride lds into a shared tile of
 * row stride D + 8; rows at or past `seq` are zero. 8 elements per access. */
template <int D>
__device__ void load_tile(bf16 *dst, const bf16 *src, int64_t lds, int row0, int seq, int vec)
{
	constexpr int LD = D + 8, CH = D / 8;
	for (int c = threadIdx.x; c < FA_TILE * CH; c += FA_THREADS) {
		int r = c / CH, col = (c % CH) * 8;
		bf16 *d = dst + r * LD + col;
		if (row0 + r >= seq) {
			*(uint4 *)d = make_uint4(0, 0, 0, 0);
			continue;
		}
		const bf16 *s = src + (int64_t)(row0 + r) * lds + col;
		if (vec) {
			*(uint4 *)d = *(const uint4 *)s;
		} else {
			for (int i = 0; i < 8; i++)
				d[i] = s[i];
		}
	}
}

template <int D> struct fa_fwd_smem {
	static constexpr int LD = D + 8;
	static constexpr int SW = (D > FA_TILE ? D : FA_TILE) + 4; /* fp32 strip row stride */
	static constexpr size_t bytes = 3 * FA_TILE * LD * 2 + FA_WARPS * 16 * SW * 4 + FA_WARPS * 16 * FA_PL * 2;
};

template <int D>
__global__ void __launch_bounds__(FA_THREADS) flash_fwd_kernel(fa_args a)
{
	constexpr int LD = fa_fwd_smem<D>::LD, SW = fa_fwd_smem<D>::SW, NT = D / 16, HD = D / 2;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Qs = (bf16 *)smem, *Ks = Qs + FA_TILE * LD, *Vs = Ks + FA_TILE * LD;
	float *F = (float *)(Vs + FA_TILE * LD);
	bf16 *P = (bf16 *)(F + FA_WARPS * 16 * SW);
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	float *Fw = F + warp * 16 * SW;
	bf16 *Pw = P + warp * 16 * FA_PL;
	const int S = a.seq, nqb = gridDim.x;
	const int qb = a.causal ? nqb - 1 - (int)blockIdx.x : (int)blockIdx.x;
	const int h = blockIdx.y, b = blockIdx.z, hk = h / (a.heads / a.kv_heads);
	const bf16 *q = a.q + (int64_t)b * S * a.ldq + (int64_t)h * D;
	const bf16 *k = a.k + (int64_t)b * S * a.ldk + (int64_t)hk * D;
	const bf16 *v = a.v + (int64_t)b * S * a.ldv + (int64_t)hk * D;
	const int q0 = qb * FA_TILE, r = lane >> 1, half = lane & 1;
	const int qi = q0 + warp * 16 + r;
	const float sl2 = a.scale * FA_LOG2E;

	load_tile<D>(Qs, q, a.ldq, q0, S, a.vec);
	__syncthreads();
	frag_a qf[NT];
#pragma unroll
	for (int kd = 0; kd < NT; kd++)
		wmma::load_matrix_sync(qf[kd], Qs + warp * 16 * LD + kd * 16, LD);

	float m = -INFINITY, l = 0.f, o[HD];
#pragma unroll
	for (int c = 0; c < HD; c++)
		o[c] = 0.f;
	const int nkb = a.causal ? qb + 1 : (S + FA_TILE - 1) / FA_TILE;
	for (int j = 0; j < nkb; j++) {
		const int k0 = j * FA_TILE;
		__syncthreads(); /* every warp is done with the previous K and V */
		load_tile<D>(Ks, k, a.ldk, k0, S, a.vec);
		load_tile<D>(Vs, v, a.ldv, k0, S, a.vec);
		__syncthreads();
		/* S = Q K^T for the warp's 16 rows: K stored [key][dim] is K^T column-major */
#pragma unroll
		for (int n = 0; n < FA_TILE / 16; n++) {
			frag_c acc;
			wmma::fill_fragment(acc, 0.f);
#pragma unroll
			for (int kd = 0; kd < NT; kd++) {
				frag_bt kf;
				wmma::load_matrix_sync(kf, Ks + n * 16 * LD + kd * 16, LD);
				wmma::mma_sync(acc, qf[kd], kf, acc);
			}
			wmma::store_matrix_sync(Fw + n * 16, acc, SW, wmma::mem_row_major);
		}
		__syncwarp();
		/* online softmax of row r over columns [half * 32, half * 32 + 32) */
		float sv[32], mx = -INFINITY;
#pragma unroll
		for (int c = 0; c < 32; c++) {
			int col = half * 32 + c, kj = k0 + col;
			bool ok = kj < S && qi < S && (!a.causal || kj <= qi);
			sv[c] = ok ? Fw[r * SW + col] * sl2 : -INFINITY;
			mx = fmaxf(mx, sv[c]);
		}
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		float mnew = fmaxf(m, mx);
		float base = mnew == -INFINITY ? 0.f : mnew;
		float alpha = mnew == -INFINITY ? 1.f : exp2f(m - mnew);
		float sum = 0.f;
#pragma unroll
		for (int c = 0; c < 32; c++) {
			float p = exp2f(sv[c] - base);
			sum += p;
			Pw[r * FA_PL + half * 32 + c] = __float2bfloat16_rn(p);
		}
		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		l = l * alpha + sum;
		m = mnew;
		__syncwarp(); /* P written, the strip's scores read */
		/* P V into the strip, then o = o * alpha + P V on the lane's half row */
#pragma unroll
		for (int n = 0; n < NT; n++) {
			frag_c acc;
			wmma::fill_fragment(acc, 0.f);
#pragma unroll
			for (int kk = 0; kk < FA_TILE / 16; kk++) {
				frag_a pf;
				frag_b vf;
				wmma::load_matrix_sync(pf, Pw + kk * 16, FA_PL);
				wmma::load_matrix_sync(vf, Vs + kk * 16 * LD + n * 16, LD);
				wmma::mma_sync(acc, pf, vf, acc);
			}
			wmma::store_matrix_sync(Fw + n * 16, acc, SW, wmma::mem_row_major);
		}
		__syncwarp();
#pragma unroll
		for (int c = 0; c < HD; c++)
			o[c] = o[c] * alpha + Fw[r * SW + half * HD + c];
		__syncwarp(); /* the strip is rewritten by the next tile's scores */
	}
	if (qi >= S)
		return;
	float inv = l > 0.f ? 1.f / l : 0.f;
	bf16 *out = a.out + ((int64_t)b * S + qi) * a.ldo + (int64_t)h * D + half * HD;
#pragma unroll
	for (int c = 0; c < HD; c++)
		out[c] = __float2bfloat16_rn(o[c] * inv);
	if (half == 0)
		a.lse_out[((int64_t)b * a.heads + h) * S + qi] = l > 0.f ? (m + log2f(l)) * FA_LN2 : -INFINITY;
}

/* dd[b, h, i] = sum_d dO[i, h, d] * O[i, h, d], one warp per row. */
template <int D>
__global__ void flash_bwd_dot_kernel(fa_args a, int64_t rows)
{
	int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int lane = threadIdx.x % 32;
	if (w >= rows)
		return;
	int h = (int)(w % a.heads);
	int64_t t = w / a.heads; /* token row b * seq + i */
	const bf16 *o = a.o + t * a.ldo + (int64_t)h * D, *d = a.dout + t * a.lddo + (int64_t)h * D;
	float s = 0.f;
	for (int c = lane; c < D; c += 32)
		s += __bfloat162float(o[c]) * __bfloat162float(d[c]);
	for (int off = 16; off; off >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, off);
	if (lane == 0) {
		int64_t b = t / a.seq, i = t % a.seq;
		a.dd[(b * a.heads + h) * a.seq + i] = s;
	}
}

template <int D> struct fa_bwd_smem {
	static constexpr int LD = D + 8;
	static constexpr int FW = FA_TILE + 4;
	static constexpr size_t bytes = 4 * FA_TILE * LD * 2 /* Q, dO, K, V */ + FA_TILE * FA_PL * 2 /* dS^T */ +
					FA_WARPS * 16 * FA_PL * 2 /* P^T */ + 2 * FA_WARPS * 16 * FW * 4 /* S^T, dP^T */ +
					2 * FA_TILE * 4 /* lse, dd */;
};

/* The warp's 16 x 16 fp32 tile staged at T (row stride FW): element e of 256 goes to
 * the lane e / 8 (8 each). */
template <int D>
__device__ void store_dkv(const frag_c &f, float *T, bf16 *dst, int64_t ld, int row0, int col0, int seq,
			  float mul)
{
	constexpr int FW = fa_bwd_smem<D>::FW;
	const int lane = threadIdx.x % 32;
	wmma::store_matrix_sync(T, f, FW, wmma::mem_row_major);
	__syncwarp();
	for (int e = lane * 8; e < lane * 8 + 8; e++) {
		int rr = e / 16, cc = e % 16;
		if (row0 + rr < seq)
			dst[(int64_t)(row0 + rr) * ld + col0 + cc] = __float2bfloat16_rn(T[rr * FW + cc] * mul);
	}
	__syncwarp();
}

template <int D>
__global__ void __launch_bounds__(FA_THREADS) flash_bwd_kernel(fa_args a, bf16 *dk_out, int64_t lddk, bf16 *dv_out,
							      int64_t lddv)
{
	constexpr int LD = fa_bwd_smem<D>::LD, FW = fa_bwd_smem<D>::FW, NT = D / 16, NQ = FA_TILE / 16;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Qs = (bf16 *)smem, *dOs = Qs + FA_TILE * LD, *Ks = dOs + FA_TILE * LD, *Vs = Ks + FA_TILE * LD;
	bf16 *dSt = Vs + FA_TILE * LD;             /* [key][query], the whole tile */
	bf16 *Pt = dSt + FA_TILE * FA_PL;          /* per warp [16 keys][64 queries] */
	float *Sf = (float *)(Pt + FA_WARPS * 16 * FA_PL);
	float *dPf = Sf + FA_WARPS * 16 * FW;
	float *lse_s = dPf + FA_WARPS * 16 * FW, *dd_s = lse_s + FA_TILE;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1, half = lane & 1;
	bf16 *Ptw = Pt + warp * 16 * FA_PL;
	float *Sw = Sf + warp * 16 * FW, *dPw = dPf + warp * 16 * FW;
	const int S = a.seq, kb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
	const int group = a.heads / a.kv_heads, k0 = kb * FA_TILE, kj = k0 + warp * 16 + r;
	const float sl2 = a.scale * FA_LOG2E;

	load_tile<D>(Ks, a.k + (int64_t)b * S * a.ldk + (int64_t)hk * D, a.ldk, k0, S, a.vec);
	load_tile<D>(Vs, a.v + (int64_t)b * S * a.ldv + (int64_t)hk * D, a.ldv, k0, S, a.vec);
	frag_c dk[NT], dv[NT];
#pragma unroll
	for (int n = 0; n < NT; n++) {
		wmma::fill_fragment(dk[n], 0.f);
		wmma::fill_fragment(dv[n], 0.f);
	}
	const int nqb = (S + FA_TILE - 1) / FA_TILE;
	for (int g = 0; g < group; g++) {
		const int h = hk * group + g;
		const bf16 *q = a.q + (int64_t)b * S * a.ldq + (int64_t)h * D;
		const bf16 *dout = a.dout + (int64_t)b * S * a.lddo + (int64_t)h * D;
		const float *lse = a.lse + ((int64_t)b * a.heads + h) * S, *dd = a.dd + ((int64_t)b * a.heads + h) * S;
		for (int i = a.causal ? kb : 0; i < nqb; i++) {
			const int q0 = i * FA_TILE;
			__syncthreads(); /* every warp is done with the previous Q, dO and dS^T */
			load_tile<D>(Qs, q, a.ldq, q0, S, a.vec);
			load_tile<D>(dOs, dout, a.lddo, q0, S, a.vec);
			if (threadIdx.x < FA_TILE) {
				int qi = q0 + threadIdx.x;
				lse_s[threadIdx.x] = qi < S ? lse[qi] : 0.f;
				dd_s[threadIdx.x] = qi < S ? dd[qi] : 0.f;
			}
			__syncthreads();
			/* S^T = K_w Q^T and dP^T = V_w dO^T for the warp's 16 keys */
#pragma unroll
			for (int n = 0; n < NQ; n++) {
				frag_c s, dp;
				wmma::fill_fragment(s, 0.f);
				wmma::fill_fragment(dp, 0.f);
#pragma unroll
				for (int kd = 0; kd < NT; kd++) {
					frag_a kf, vf;
					frag_bt qf, of;
					wmma::load_matrix_sync(kf, Ks + warp * 16 * LD + kd * 16, LD);
					wmma::load_matrix_sync(qf, Qs + n * 16 * LD + kd * 16, LD);
					wmma::mma_sync(s, kf, qf, s);
					wmma::load_matrix_sync(vf, Vs + warp * 16 * LD + kd * 16, LD);
					wmma::load_matrix_sync(of, dOs + n * 16 * LD + kd * 16, LD);
					wmma::mma_sync(dp, vf, of, dp);
				}
				wmma::store_matrix_sync(Sw + n * 16, s, FW, wmma::mem_row_major);
				wmma::store_matrix_sync(dPw + n * 16, dp, FW, wmma::mem_row_major);
			}
			__syncwarp();
			/* P^T = exp(scale s - lse), dS^T = P^T (dP^T - dd) on the lane's half row */
#pragma unroll 8
			for (int c = 0; c < 32; c++) {
				int col = half * 32 + c, qi = q0 + col;
				bool ok = qi < S && kj < S && (!a.causal || kj <= qi);
				float p = ok ? exp2f(Sw[r * FW + col] * sl2 - lse_s[col] * FA_LOG2E) : 0.f;
				float ds = p * (dPw[r * FW + col] - dd_s[col]);
				Ptw[r * FA_PL + col] = __float2bfloat16_rn(p);
				dSt[(warp * 16 + r) * FA_PL + col] = __float2bfloat16_rn(ds);
			}
			__syncwarp();
			/* dV_w += P^T dO, dK_w += dS^T Q (scaled at the end) */
#pragma unroll
			for (int kk = 0; kk < NQ; kk++) {
				frag_a pf, sf;
				wmma::load_matrix_sync(pf, Ptw + kk * 16, FA_PL);
				wmma::load_matrix_sync(sf, dSt + warp * 16 * FA_PL + kk * 16, FA_PL);
#pragma unroll
				for (int n = 0; n < NT; n++) {
					frag_b of, qf;
					wmma::load_matrix_sync(of, dOs + kk * 16 * LD + n * 16, LD);
					wmma::mma_sync(dv[n], pf, of, dv[n]);
					wmma::load_matrix_sync(qf, Qs + kk * 16 * LD + n * 16, LD);
					wmma::mma_sync(dk[n], sf, qf, dk[n]);
				}
			}
			__syncthreads(); /* dS^T complete: all 64 keys */
			/* dQ rows warp*16.. += scale * dS K: dS[q][k] = dSt[k][q] is column-major */
			const int qrow = q0 + warp * 16;
			for (int n = 0; n < NT; n++) {
				frag_c acc;
				wmma::fill_fragment(acc, 0.f);
#pragma unroll
				for (int kk = 0; kk < FA_TILE / 16; kk++) {
					frag_at sf;
					frag_b kf;
					wmma::load_matrix_sync(sf, dSt + kk * 16 * FA_PL + warp * 16, FA_PL);
					wmma::load_matrix_sync(kf, Ks + kk * 16 * LD + n * 16, LD);
					wmma::mma_sync(acc, sf, kf, acc);
				}
				wmma::store_matrix_sync(Sw, acc, FW, wmma::mem_row_major);
				__syncwarp();
				for (int e = lane * 8; e < lane * 8 + 8; e++) {
					int rr = e / 16, cc = e % 16;
					if (qrow + rr < S)
						atomicAdd(a.dqacc + (((int64_t)b * S + qrow + rr) * a.heads + h) * D + n * 16 + cc,
							  Sw[rr * FW + cc] * a.scale);
				}
				__syncwarp();
			}
		}
	}
	bf16 *dkb = dk_out + (int64_t)b * S * lddk + (int64_t)hk * D;
	bf16 *dvb = dv_out + (int64_t)b * S * lddv + (int64_t)hk * D;
#pragma unroll
	for (int n = 0; n < NT; n++) {
		store_dkv<D>(dk[n], Sw, dkb, lddk, k0 + warp * 16, n * 16, S, a.scale);
		store_dkv<D>(dv[n], Sw, dvb, lddv, k0 + warp * 16, n * 16, S, 1.f);
	}
}

/* dq[t, h, :] = bf16(dqacc[t, h, :]) */
__global__ void flash_dq_cast_kernel(bf16 *dq, int64_t lddq, const float *acc, int64_t rows, int hd)
{
	int64_t n = rows * hd;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		dq[(i / hd) * lddq + i % hd] = __float2bfloat16_rn(acc[i]);
}

/* ---- host side ------------------------------------------------------------------- */

extern "C" zb_status zb_flash_check(const zb_flash_shape *sh, zb_error *err)
{
	if (!sh)
		return zb_fail(err, ZB_E_INPUT, "flash attention: missing shape");
	if (sh->batch < 1 || sh->seq < 1)
		return zb_fail(err, ZB_E_INPUT, "flash attention: batch %d, seq %d (both must be >= 1)", sh->batch,
			       sh->seq);
	if (sh->heads < 1 || sh->kv_heads < 1 || sh->heads % sh->kv_heads)
		return zb_fail(err, ZB_E_INPUT, "flash attention: kv_heads %d must divide heads %d", sh->kv_heads,
			       sh->heads);
	if (!ZB_FLASH_HEAD_DIM_OK(sh->head_dim))
		return zb_fail(err, ZB_E_INPUT, "flash attention: head dim %d (supported: 32, 64, 80, 96, 128)",
			       sh->head_dim);
	if (!(sh->scale > 0) || !isfinite(sh->scale))
		return zb_fail(err, ZB_E_INPUT, "flash attention: scale %g must be positive", (double)sh->scale);
	return ZB_OK;
}

static bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static int vec_ok(const void *p, int64_t ld) { return al16(p) && ld % 8 == 0; }

/* bf16 pairs at even columns are 4-byte aligned */
static int pair_ok(const void *p, int64_t ld) { return ((uintptr_t)p & 3) == 0 && ld % 2 == 0; }

/* ZB_FLASH_IMPL: mma (default: flash_mma.cu's kernels) or wmma (this file's, slower). */
static zb_status flash_use_wmma(int *wmma, zb_error *err)
{
	const char *e = getenv("ZB_FLASH_IMPL");
	*wmma = 0;
	if (!e || !*e || strcmp(e, "mma") == 0)
		return ZB_OK;
	if (strcmp(e, "wmma") == 0) {
		*wmma = 1;
		return ZB_OK;
	}
	return zb_fail(err, ZB_E_INPUT, "ZB_FLASH_IMPL '%s': expected mma or wmma", e);
}

template <int D>
static zb_status fwd_launch(const zb_flash_shape *sh, const fa_args &a, cudaStream_t s, zb_error *err)
{
	size_t bytes = fa_fwd_smem<D>::bytes;
	ZB_CUDA_TRY(err, cudaFuncSetAttribute(flash_fwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					      (int)bytes));
	dim3 grid((unsigned)((sh->seq + FA_TILE - 1) / FA_TILE), (unsigned)sh->heads, (unsigned)sh->batch);
	flash_fwd_kernel<D><<<grid, FA_THREADS, bytes, s>>>(a);
	ZB_CUDA_LAUNCHED(err, "flash_fwd");
	return ZB_OK;
}

template <int D>
static zb_status bwd_launch(const zb_flash_shape *sh, const fa_args &a, bf16 *dq, int64_t lddq, bf16 *dk,
			    int64_t lddk, bf16 *dv, int64_t lddv, const zb_flash_mma_args *mma, cudaStream_t s,
			    zb_error *err)
{
	int64_t rows = (int64_t)sh->batch * sh->seq * sh->heads;
	ZB_CUDA_TRY(err, cudaMemsetAsync(a.dqacc, 0, (size_t)rows * D * sizeof(float), s));
	flash_bwd_dot_kernel<D><<<(unsigned)((rows * 32 + 255) / 256), 256, 0, s>>>(a, rows);
	ZB_CUDA_LAUNCHED(err, "flash_bwd_dot");
	if (mma) {
		zb_status st = zb_flash_mma_bwd(sh, mma, (zb_stream)s, err);
		if (st)
			return st;
	} else {
		size_t bytes = fa_bwd_smem<D>::bytes;
		ZB_CUDA_TRY(err, cudaFuncSetAttribute(flash_bwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
						      (int)bytes));
		dim3 grid((unsigned)((sh->seq + FA_TILE - 1) / FA_TILE), (unsigned)sh->kv_heads, (unsigned)sh->batch);
		flash_bwd_kernel<D><<<grid, FA_THREADS, bytes, s>>>(a, dk, lddk, dv, lddv);
		ZB_CUDA_LAUNCHED(err, "flash_bwd");
	}
	int64_t n = rows * D, blocks = (n + 255) / 256;
	flash_dq_cast_kernel<<<(unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0, s>>>(
		dq, lddq, a.dqacc, (int64_t)sh->batch * sh->seq, sh->heads * D);
	ZB_CUDA_LAUNCHED(err, "flash_dq_cast");
	return ZB_OK;
}

static fa_args args_of(const zb_flash_shape *sh)
{
	fa_args a;
	memset(&a, 0, sizeof a);
	a.seq = sh->seq;
	a.heads = sh->heads;
	a.kv_heads = sh->kv_heads;
	a.causal = sh->causal != 0;
	a.scale = sh->scale;
	return a;
}

extern "C" zb_status zb_flash_fwd(const zb_flash_shape *sh, const uint16_t *q, int64_t ldq, const uint16_t *k,
				  int64_t ldk, const uint16_t *v, int64_t ldv, uint16_t *o, int64_t ldo, float *lse,
				  zb_stream stream, zb_error *err)
{
	zb_status st = zb_flash_check(sh, err);
	if (st)
		return st;
	int D = sh->head_dim;
	if (!q || !k || !v || !o || !lse)
		return zb_fail(err, ZB_E_INPUT, "zb_flash_fwd: missing buffer");
	if (ldq < (int64_t)sh->heads * D || ldo < (int64_t)sh->heads * D || ldk < (int64_t)sh->kv_heads * D ||
	    ldv < (int64_t)sh->kv_heads * D)
		return zb_fail(err, ZB_E_INPUT, "zb_flash_fwd: a row stride is shorter than its heads");
	fa_args a = args_of(sh);
	a.q = (const bf16 *)q, a.k = (const bf16 *)k, a.v = (const bf16 *)v;
	a.out = (bf16 *)o, a.lse_out = lse;
	a.ldq = ldq, a.ldk = ldk, a.ldv = ldv, a.ldo = ldo;
	a.vec = vec_ok(q, ldq) && vec_ok(k, ldk) && vec_ok(v, ldv);
	cudaStream_t s = (cudaStream_t)stream;
	int wmma;
	if ((st = flash_use_wmma(&wmma, err)))
		return st;
	if (!wmma) {
		zb_flash_mma_args x;
		memset(&x, 0, sizeof x);
		x.q = q, x.k = k, x.v = v, x.o = o, x.lse_out = lse;
		x.ldq = ldq, x.ldk = ldk, x.ldv = ldv, x.ldo = ldo;
		x.vec = a.vec, x.ovec = pair_ok(o, ldo);
		return zb_flash_mma_fwd(sh, &x, stream, err);
	}
	switch (D) {
	case 64: return fwd_launch<64>(sh, a, s, err);
	case 80: return fwd_launch<80>(sh, a, s, err);
	case 96: return fwd_launch<96>(sh, a, s, err);
	case 128: return fwd_launch<128>(sh, a, s, err);
	case 32: return fwd_launch<32>(sh, a, s, err);
	}
	return zb_fail(err, ZB_E_INPUT, "zb_flash_fwd: head dim %d", D);
}

extern "C" size_t zb_flash_bwd_workspace(const zb_flash_shape *sh)
{
	size_t rows = (size_t)sh->batch * sh->seq * sh->heads;
	return rows * (size_t)sh->head_dim * sizeof(float) + rows * sizeof(float);
}

extern "C" zb_status zb_flash_bwd(const zb_flash_shape *sh, const uint16_t *q, int64_t ldq, const uint16_t *k,
				  int64_t ldk, const uint16_t *v, int64_t ldv, const uint16_t *o, int64_t ldo,
				  const uint16_t *dout, int64_t lddo, const float *lse, uint16_t *dq, int64_t lddq,
				  uint16_t *dk, int64_t lddk, uint16_t *dv, int64_t lddv, void *workspace,
				  zb_stream stream, zb_error *err)
{
	zb_status st = zb_flash_check(sh, err);
	if (st)
		return st;
	int D = sh->head_dim;
	int64_t hq = (int64_t)sh->heads * D, hkv = (int64_t)sh->kv_heads * D;
	if (!q || !k || !v || !o || !dout || !lse || !dq || !dk || !dv || !workspace)
		return zb_fail(err, ZB_E_INPUT, "zb_flash_bwd: missing buffer");
	if (ldq < hq || ldo < hq || lddo < hq || lddq < hq || ldk < hkv || ldv < hkv || lddk < hkv || lddv < hkv)
		return zb_fail(err, ZB_E_INPUT, "zb_flash_bwd: a row stride is shorter than its heads");
	fa_args a = args_of(sh);
	a.q = (const bf16 *)q, a.k = (const bf16 *)k, a.v = (const bf16 *)v;
	a.o = (const bf16 *)o, a.dout = (const bf16 *)dout, a.lse = lse;
	a.ldq = ldq, a.ldk = ldk, a.ldv = ldv, a.ldo = ldo, a.lddo = lddo;
	size_t rows = (size_t)sh->batch * sh->seq * sh->heads;
	a.dqacc = (float *)workspace;
	a.dd = a.dqacc + rows * (size_t)D;
	a.vec = vec_ok(q, ldq) && vec_ok(k, ldk) && vec_ok(v, ldv) && vec_ok(dout, lddo);
	cudaStream_t s = (cudaStream_t)stream;
	bf16 *Q = (bf16 *)dq, *K = (bf16 *)dk, *V = (bf16 *)dv;
	int wmma;
	if ((st = flash_use_wmma(&wmma, err)))
		return st;
	zb_flash_mma_args x, *m = NULL;
	if (!wmma) {
		memset(&x, 0, sizeof x);
		x.q = q, x.k = k, x.v = v, x.dout = dout, x.dk = dk, x.dv = dv;
		x.ldq = ldq, x.ldk = ldk, x.ldv = ldv, x.lddo = lddo, x.lddk = lddk, x.lddv = lddv;
		x.lse = lse, x.dd = a.dd, x.dqacc = a.dqacc;
		x.vec = a.vec, x.ovec = pair_ok(dk, lddk) && pair_ok(dv, lddv);
		m = &x;
	}
	switch (D) {
	case 64: return bwd_launch<64>(sh, a, Q, lddq, K, lddk, V, lddv, m, s, err);
	case 80: return bwd_launch<80>(sh, a, Q, lddq, K, lddk, V, lddv, m, s, err);
	case 96: return bwd_launch<96>(sh, a, Q, lddq, K, lddk, V, lddv, m, s, err);
	case 128: return bwd_launch<128>(sh, a, Q, lddq, K, lddk, V, lddv, m, s, err);
	case 32: return bwd_launch<32>(sh, a, Q, lddq, K, lddk, V, lddv, m, s, err);
	}
	return zb_fail(err, ZB_E_INPUT, "zb_flash_bwd: head dim %d", D);
}

/* (query, key) pairs the mask allows, per sequence and head */
static double pairs(const zb_flash_shape *sh)
{
	double s = sh->seq;
	return sh->causal ? s * (s + 1) / 2 : s * s;
}

extern "C" double zb_flash_fwd_flops(const zb_flash_shape *sh)
{
	return 4.0 * sh->batch * sh->heads * sh->head_dim * pairs(sh);
}

extern "C" double zb_flash_bwd_flops(const zb_flash_shape *sh)
{
	return 10.0 * sh->batch * sh->heads * sh->head_dim * pairs(sh);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

#define FA_BENCH_WARMUP 3

/* Times `repeats` runs of forward then backward, each with its own event pair. */
static zb_status bench_runs(const zb_flash_shape *sh, uint16_t *q, uint16_t *kv, uint16_t *o, uint16_t *dout,
			    uint16_t *dq, uint16_t *dkv, float *lse, void *ws, int repeats, float *fwd_ms,
			    float *bwd_ms, cudaStream_t s, zb_error *err)
{
	int64_t hq = (int64_t)sh->heads * sh->head_dim, hkv = (int64_t)sh->kv_heads * sh->head_dim;
	zb_status st = ZB_OK;
	cudaEvent_t ev[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++)
		ZB_CUDA_GOTO(st, err, cudaEventCreate(&ev[i]), out);
	for (int i = 0; i < FA_BENCH_WARMUP + repeats; i++) {
		ZB_CUDA_GOTO(st, err, cudaEventRecord(ev[0], s), out);
		if ((st = zb_flash_fwd(sh, q, hq, kv, 2 * hkv, kv + hkv, 2 * hkv, o, hq, lse, s, err)))
			goto out;
		ZB_CUDA_GOTO(st, err, cudaEventRecord(ev[1], s), out);
		if ((st = zb_flash_bwd(sh, q, hq, kv, 2 * hkv, kv + hkv, 2 * hkv, o, hq, dout, hq, lse, dq, hq, dkv,
				       2 * hkv, dkv + hkv, 2 * hkv, ws, s, err)))
			goto out;
		ZB_CUDA_GOTO(st, err, cudaEventRecord(ev[2], s), out);
		ZB_CUDA_GOTO(st, err, cudaEventSynchronize(ev[2]), out);
		if (i >= FA_BENCH_WARMUP) {
			ZB_CUDA_GOTO(st, err, cudaEventElapsedTime(&fwd_ms[i - FA_BENCH_WARMUP], ev[0], ev[1]), out);
			ZB_CUDA_GOTO(st, err, cudaEventElapsedTime(&bwd_ms[i - FA_BENCH_WARMUP], ev[1], ev[2]), out);
		}
	}
out:
	for (int i = 0; i < 3; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	return st;
}

extern "C" zb_status zb_bench_flash(const zb_flash_shape *sh, int repeats, double *fwd_tflops, double *bwd_tflops,
				    zb_error *err)
{
	zb_status st = zb_flash_check(sh, err);
	if (st)
		return st;
	if (repeats < 1 || !fwd_tflops || !bwd_tflops)
		return zb_fail(err, ZB_E_INPUT, "zb_bench_flash: repeats %d (>= 1) and results needed", repeats);
	size_t T = (size_t)sh->batch * sh->seq, hq = (size_t)sh->heads * sh->head_dim;
	size_t hkv = (size_t)sh->kv_heads * sh->head_dim;
	uint16_t *q = NULL, *kv = NULL, *o = NULL, *dout = NULL, *dq = NULL, *dkv = NULL;
	float *lse = NULL, *fm = (float *)calloc((size_t)repeats * 2, sizeof(float));
	void *ws = NULL;
	cudaStream_t s = NULL;
	if (!fm)
		return zb_fail(err, ZB_E_NOMEM, "zb_bench_flash: out of host memory");
	ZB_CUDA_GOTO(st, err, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	ZB_CUDA_MALLOC_GOTO(st, err, &q, T * hq * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &kv, T * hkv * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &o, T * hq * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &dout, T * hq * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &dq, T * hq * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &dkv, T * hkv * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &lse, T * sh->heads * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &ws, zb_flash_bwd_workspace(sh), out);
	if ((st = zb_fill_uniform_bf16(q, T * hq, 21, -1.f, 1.f, s, err)) ||
	    (st = zb_fill_uniform_bf16(kv, T * hkv * 2, 22, -1.f, 1.f, s, err)) ||
	    (st = zb_fill_uniform_bf16(dout, T * hq, 23, -1.f, 1.f, s, err)))
		goto out;
	if ((st = bench_runs(sh, q, kv, o, dout, dq, dkv, lse, ws, repeats, fm, fm + repeats, s, err)))
		goto out;
	qsort(fm, (size_t)repeats, sizeof(float), cmp_float);
	qsort(fm + repeats, (size_t)repeats, sizeof(float), cmp_float);
	{
		float f = fm[repeats / 2], b = fm[repeats + repeats / 2];
		*fwd_tflops = f > 0 ? zb_flash_fwd_flops(sh) / (f * 1e-3) / 1e12 : 0;
		*bwd_tflops = b > 0 ? zb_flash_bwd_flops(sh) / (b * 1e-3) / 1e12 : 0;
	}
out:
	void *bufs[] = { q, kv, o, dout, dq, dkv, lse, ws };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (bufs[i])
			cudaFree(bufs[i]);
	if (s)
		cudaStreamDestroy(s);
	free(fm);
	return st;
}
