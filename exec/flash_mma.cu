/*
 * flash_mma.cu - FlashAttention-2 forward and backward on mma.sync m16n8k16 (bf16
 * in, fp32 accumulate); see flash_mma.h for the design and flash_frag.h for the
 * fragment layouts. sm_80 and later (cp.async, ldmatrix, mma.sync); on sm_90 the
 * dQ atomics add float pairs.
 *
 * Shared tiles have rows of D + 8 bf16 (2D + 16 bytes): the 8 row addresses of
 * one ldmatrix matrix then fall in 8 distinct 16-byte bank groups for every head
 * dim here (32, 64, 80, 96, 128), and every row starts 16-byte aligned for cp.async.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/flash_frag.h"
#include "exec/flash_mma.h"

typedef __nv_bfloat16 bf16;

#define FM_WARPS 4
#define FM_THREADS (32 * FM_WARPS)
#define FM_BC 64 /* keys per forward tile */
#define FM_LOG2E 1.4426950408889634f
#define FM_LN2 0.6931471805599453f

/* ---- PTX wrappers ------------------------------------------------------------------ */
/* ZB_FLASH_EMU: tests/emu/flash_emu.cpp compiles this file on the host with its own
 * versions of these (ldmatrix, mma.sync, cp.async emulated for a whole warp) and
 * without the launch code at the end. */
#ifndef ZB_FLASH_EMU

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const bf16 *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const bf16 *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(smem_u32(p)));
}

/* .x2: matrices 0 and 1 only (addresses of lanes 0-15) */
__device__ __forceinline__ void ldsm_x2_t(uint32_t r[2], const bf16 *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
		     : "=r"(r[0]), "=r"(r[1])
		     : "r"(smem_u32(p)));
}

/* c += a b: a 16x16 (row), b 16x8 (col), c 16x8 fp32 */
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async16(bf16 *dst, const bf16 *src)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
#endif /* ZB_FLASH_EMU */

/* bf16x2 with lo in the low half (the lower column of a fragment pair) */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	uint32_t r;
	memcpy(&r, &v, sizeof r);
	return r;
}

/* dst[0], dst[1] = x, y: one 4-byte store when aligned, else two */
__device__ __forceinline__ void store_pair(bf16 *dst, float x, float y, int vec)
{
	if (vec) {
		*reinterpret_cast<__nv_bfloat162 *>(dst) = __floats2bfloat162_rn(x, y);
	} else {
		dst[0] = __float2bfloat16_rn(x);
		dst[1] = __float2bfloat16_rn(y);
	}
}

__device__ __forceinline__ void atomic_add_pair(float *p, float x, float y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	atomicAdd(reinterpret_cast<float2 *>(p), make_float2(x, y));
#else
	atomicAdd(p, x);
	atomicAdd(p + 1, y);
#endif
}

/* Rows [row0, row0 + NR) of a [*, D] slice (row stride lds) into a shared tile of
 * row stride D + 8; rows at or past seq are zero. vec: 16-byte cp.async (the caller
 * commits and waits), else element by element (done at return). */
template <int D, int NR, int NTHR = FM_THREADS>
__device__ __forceinline__ void tile_load(bf16 *dst, const bf16 *src, int64_t lds, int row0, int seq, int vec)
{
	constexpr int LD = D + 8, CH = D / 8;
	for (int c = threadIdx.x; c < NR * CH; c += NTHR) {
		int r = c / CH, col = (c % CH) * 8;
		bf16 *d = dst + r * LD + col;
		if (row0 + r >= seq) {
			*reinterpret_cast<uint4 *>(d) = make_uint4(0, 0, 0, 0);
			continue;
		}
		const bf16 *s = src + (int64_t)(row0 + r) * lds + col;
		if (vec) {
			cp_async16(d, s);
		} else {
#pragma unroll
			for (int i = 0; i < 8; i++)
				d[i] = s[i];
		}
	}
}

struct fm_args {
	const bf16 *q, *k, *v, *dout;
	bf16 *o, *dk, *dv;
	int64_t ldq, ldk, ldv, ldo, lddo, lddk, lddv;
	float *lse_out, *dqacc;
	const float *lse, *dd;
	int seq, heads, kv_heads, causal, vec, ovec;
	float scale;
};

/* ---- tile choices ------------------------------------------------------------------ */
/* The defaults per head dim; ZB_FLASH_FWD_ROWS (16 or 32 query rows per warp in the
 * forward), ZB_FLASH_BWD_ROWS (32 or 64 query rows per backward tile) and
 * ZB_FLASH_BWD_WARPS (4 or 8 warps, 16 keys each, per backward CTA) override them, for
 * measuring. Chosen on the H200 (scripts/suites/flash.suite, BENCHMARKS.md):
 * head dim 80 (b4 s2048 h32): forward 32 rows 156 TFLOP/s (16 rows: 145), backward
 * 8 warps 153 (4: 138); head dim 128 (GQA 32/8): forward 32 rows 159 (16: 118),
 * backward 64-row tiles 114 (32: 107). Head dims 32, 64 follow 80; 96 keeps the
 * smaller tiles (not measured). */
static constexpr int fm_fwd_mw_default(int d) { return d == 96 ? 1 : 2; }
static constexpr int fm_bwd_br_default(int d) { return d == 96 ? 32 : 64; }
static constexpr int fm_bwd_warps_default(int d) { return d <= 80 ? 8 : 4; }
/* dQ of a BR-row tile is split among the W warps as BR/16 row tiles x G column groups of
 * D/G columns, which must be whole n8 tiles */
static constexpr bool fm_bwd_ok(int d, int br, int w)
{
	return (br == 32 || br == 64) && (w == 4 || w == 8) && (d % (w / (br / 16))) == 0 &&
	       (d / (w / (br / 16))) % 8 == 0;
}

/* ---- forward ----------------------------------------------------------------------- */

/* MW: m16 row tiles per warp (the CTA's rows: 64 MW). With 2, every K and V fragment
 * loaded from shared memory feeds twice the mma instructions (shared-memory traffic
 * per FLOP halves) and Q is reloaded from shared memory per tile instead of living
 * in registers (room for the second tile's O and S). */
template <int D, int MW> struct fm_fwd_cfg {
	static constexpr int LD = D + 8, BR = 16 * FM_WARPS * MW;
	static constexpr size_t bytes = (size_t)(BR + 4 * FM_BC) * LD * sizeof(bf16); /* Q, 2 x K, 2 x V */
};

/* Online softmax of the lane's two rows (r = 0: row g, 1: row g + 8) over one tile of
 * scaled scores s (log2 domain, masked = -inf): p replaces s, o is rescaled, m and the
 * lane's partial sum l are updated. m is the same on the 4 lanes of a quad. */
template <int ND>
__device__ __forceinline__ void softmax_tile(float (&s)[FM_BC / 8][4], float (&o)[ND][4], float m[2], float l[2])
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float mx = -INFINITY;
#pragma unroll
		for (int n = 0; n < FM_BC / 8; n++)
			mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
		const float mnew = fmaxf(m[r], mx);
		const float base = mnew == -INFINITY ? 0.f : mnew; /* a row with nothing allowed yet */
		const float alpha = exp2f(m[r] - base);
		m[r] = mnew;
		float sum = 0.f;
#pragma unroll
		for (int n = 0; n < FM_BC / 8; n++) {
			s[n][2 * r] = exp2f(s[n][2 * r] - base);
			s[n][2 * r + 1] = exp2f(s[n][2 * r + 1] - base);
			sum += s[n][2 * r] + s[n][2 * r + 1];
		}
		l[r] = l[r] * alpha + sum;
#pragma unroll
		for (int d = 0; d < ND; d++) {
			o[d][2 * r] *= alpha;
			o[d][2 * r + 1] *= alpha;
		}
	}
}

template <int D, int MW>
__global__ void __launch_bounds__(FM_THREADS) fm_fwd_kernel(fm_args a)
{
	typedef fm_fwd_cfg<D, MW> C;
	constexpr int LD = C::LD, BR = C::BR, KD = D / 16, ND = D / 8, NS = FM_BC / 8;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Qs = reinterpret_cast<bf16 *>(smem), *Ks = Qs + BR * LD, *Vs = Ks + 2 * FM_BC * LD;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	const int S = a.seq, nqb = gridDim.x;
	const int qb = a.causal ? nqb - 1 - (int)blockIdx.x : (int)blockIdx.x; /* causal: heaviest first */
	const int h = blockIdx.y, b = blockIdx.z, hk = h / (a.heads / a.kv_heads);
	const bf16 *q = a.q + (int64_t)b * S * a.ldq + (int64_t)h * D;
	const bf16 *k = a.k + (int64_t)b * S * a.ldk + (int64_t)hk * D;
	const bf16 *v = a.v + (int64_t)b * S * a.ldv + (int64_t)hk * D;
	const int q0 = qb * BR, qw = q0 + warp * 16 * MW; /* the warp's first row */
	const bf16 *Qw = Qs + (warp * 16 * MW) * LD;
	const float sl2 = a.scale * FM_LOG2E;
	int nkb = (S + FM_BC - 1) / FM_BC;
	if (a.causal && (q0 + BR + FM_BC - 1) / FM_BC < nkb)
		nkb = (q0 + BR + FM_BC - 1) / FM_BC;

	tile_load<D, BR>(Qs, q, a.ldq, q0, S, a.vec);
	tile_load<D, FM_BC>(Ks, k, a.ldk, 0, S, a.vec);
	tile_load<D, FM_BC>(Vs, v, a.ldv, 0, S, a.vec);
	cp_async_commit();

	uint32_t qf[MW == 1 ? KD : 1][4]; /* MW 1: Q's fragments stay in registers */
	float o[MW][ND][4], m[MW][2], l[MW][2];
#pragma unroll
	for (int mi = 0; mi < MW; mi++) {
		m[mi][0] = m[mi][1] = -INFINITY;
		l[mi][0] = l[mi][1] = 0.f;
#pragma unroll
		for (int d = 0; d < ND; d++)
			o[mi][d][0] = o[mi][d][1] = o[mi][d][2] = o[mi][d][3] = 0.f;
	}

	for (int j = 0; j < nkb; j++) {
		cp_async_wait_all();
		__syncthreads(); /* tile j is in; every warp is done with tile j - 1's buffers */
		if (MW == 1 && j == 0) {
#pragma unroll
			for (int kd = 0; kd < (MW == 1 ? KD : 0); kd++)
				ldsm_x4(qf[kd], Qw + zb_frag_a_row(lane) * LD + kd * 16 + zb_frag_a_col(lane));
		}
		if (j + 1 < nkb) { /* prefetch tile j + 1 into the other buffer */
			const int nb = (j + 1) & 1, k1 = (j + 1) * FM_BC;
			tile_load<D, FM_BC>(Ks + nb * FM_BC * LD, k, a.ldk, k1, S, a.vec);
			tile_load<D, FM_BC>(Vs + nb * FM_BC * LD, v, a.ldv, k1, S, a.vec);
			cp_async_commit();
		}
		const bf16 *Kb = Ks + (j & 1) * FM_BC * LD, *Vb = Vs + (j & 1) * FM_BC * LD;
		const int k0 = j * FM_BC;

		float s[MW][NS][4];
#pragma unroll
		for (int mi = 0; mi < MW; mi++)
#pragma unroll
			for (int n = 0; n < NS; n++)
				s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.f;
#pragma unroll
		for (int kd = 0; kd < KD; kd++) {
			uint32_t qa[MW][4];
#pragma unroll
			for (int mi = 0; mi < MW; mi++) {
				if (MW == 1) {
#pragma unroll
					for (int i = 0; i < 4; i++)
						qa[mi][i] = qf[MW == 1 ? kd : 0][i];
				} else {
					ldsm_x4(qa[mi], Qw + (mi * 16 + zb_frag_a_row(lane)) * LD + kd * 16 + zb_frag_a_col(lane));
				}
			}
#pragma unroll
			for (int np = 0; np < NS / 2; np++) {
				uint32_t r[4];
				ldsm_x4(r, Kb + (np * 16 + zb_frag_bn_row(lane)) * LD + kd * 16 + zb_frag_bn_col(lane));
#pragma unroll
				for (int mi = 0; mi < MW; mi++) {
					mma16816(s[mi][2 * np], qa[mi], r[0], r[1]);
					mma16816(s[mi][2 * np + 1], qa[mi], r[2], r[3]);
				}
			}
		}
		/* scale into the log2 domain; mask keys past seq and, causal, after the row */
		const bool edge = k0 + FM_BC > S || (a.causal && k0 + FM_BC - 1 > qw);
#pragma unroll
		for (int mi = 0; mi < MW; mi++) {
#pragma unroll
			for (int n = 0; n < NS; n++) {
#pragma unroll
				for (int e = 0; e < 4; e++) {
					float x = s[mi][n][e] * sl2;
					if (edge) {
						int key = k0 + n * 8 + zb_frag_c_col(lane, e);
						int qi = qw + mi * 16 + zb_frag_c_row(lane, e);
						if (key >= S || (a.causal && key > qi))
							x = -INFINITY;
					}
					s[mi][n][e] = x;
				}
			}
			softmax_tile<ND>(s[mi], o[mi], m[mi], l[mi]);
		}
		/* O += P V: P's accumulators are the A operand (flash_frag.h) */
#pragma unroll
		for (int kk = 0; kk < FM_BC / 16; kk++) {
			uint32_t pa[MW][4];
#pragma unroll
			for (int mi = 0; mi < MW; mi++) {
				pa[mi][0] = pack_bf16(s[mi][2 * kk][0], s[mi][2 * kk][1]);
				pa[mi][1] = pack_bf16(s[mi][2 * kk][2], s[mi][2 * kk][3]);
				pa[mi][2] = pack_bf16(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
				pa[mi][3] = pack_bf16(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
			}
#pragma unroll
			for (int dp = 0; dp < D / 16; dp++) {
				uint32_t r[4];
				ldsm_x4_t(r, Vb + (kk * 16 + zb_frag_bt_row(lane)) * LD + dp * 16 + zb_frag_bt_col(lane));
#pragma unroll
				for (int mi = 0; mi < MW; mi++) {
					mma16816(o[mi][2 * dp], pa[mi], r[0], r[1]);
					mma16816(o[mi][2 * dp + 1], pa[mi], r[2], r[3]);
				}
			}
		}
	}
#pragma unroll
	for (int mi = 0; mi < MW; mi++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			float lr = l[mi][r];
			lr += __shfl_xor_sync(0xffffffffu, lr, 1);
			lr += __shfl_xor_sync(0xffffffffu, lr, 2);
			const int qi = qw + mi * 16 + g + 8 * r;
			if (qi >= S)
				continue;
			const float inv = lr > 0.f ? 1.f / lr : 0.f;
			bf16 *out = a.o + ((int64_t)b * S + qi) * a.ldo + (int64_t)h * D + 2 * t;
#pragma unroll
			for (int d = 0; d < ND; d++)
				store_pair(out + d * 8, o[mi][d][2 * r] * inv, o[mi][d][2 * r + 1] * inv, a.ovec);
			if (t == 0)
				a.lse_out[((int64_t)b * a.heads + h) * S + qi] =
					lr > 0.f ? (m[mi][r] + log2f(lr)) * FM_LN2 : -INFINITY;
		}
	}
}

/* ---- backward ---------------------------------------------------------------------- */

/* BR: query rows per tile, 64 or 32. 64 keeps 2 x 32 score registers per lane; 32 halves
 * them, leaving room for dK and dV (2 x D/2 registers) at head dim 128. */
template <int D, int BR_, int W> struct fm_bwd_cfg {
	static constexpr int BR = BR_, BC = 16 * W, THREADS = 32 * W;
	static constexpr int LD = D + 8, LDS = BR + 8;
	static constexpr int MT = BR / 16, G = W / MT, NCOL = D / G; /* dQ: warps as MT x G */
	static constexpr size_t bytes = (size_t)(2 * BC + 4 * BR) * LD * sizeof(bf16) /* K, V, 2 x (Q, dO) */ +
					(size_t)BC * LDS * sizeof(bf16) /* dS^T */ + 4 * BR * sizeof(float);
	static_assert(fm_bwd_ok(D, BR, W), "dQ column group must be whole n8 tiles");
};

/* Query tile `it` of the CTA's loop (query head hk * group + it / nt, query block
 * i0 + it % nt) into buffer `buf`: Q, dO by cp.async (committed), lse (times log2 e)
 * and dD by plain loads. */
template <int D, int BR_, int W>
__device__ __forceinline__ void bwd_load_tile(const fm_args &a, int it, int buf, int b, int hk, int i0, int nt,
					      bf16 *Qs, bf16 *dOs, float *lse2_s, float *dd_s)
{
	typedef fm_bwd_cfg<D, BR_, W> C;
	constexpr int BR = BR_, LD = C::LD;
	const int S = a.seq, h = hk * (a.heads / a.kv_heads) + it / nt, q0 = (i0 + it % nt) * BR;
	tile_load<D, BR, C::THREADS>(Qs + buf * BR * LD, a.q + (int64_t)b * S * a.ldq + (int64_t)h * D, a.ldq, q0, S,
				     a.vec);
	tile_load<D, BR, C::THREADS>(dOs + buf * BR * LD, a.dout + (int64_t)b * S * a.lddo + (int64_t)h * D, a.lddo, q0,
				     S, a.vec);
	cp_async_commit();
	if (threadIdx.x < BR) {
		const int qi = q0 + threadIdx.x;
		const int64_t row = ((int64_t)b * a.heads + h) * S + qi;
		lse2_s[buf * BR + threadIdx.x] = qi < S ? a.lse[row] * FM_LOG2E : 0.f;
		dd_s[buf * BR + threadIdx.x] = qi < S ? a.dd[row] : 0.f;
	}
}

/* acc[n] += A (16 x 16 k-step from registers) times B from a [k][n] shared tile
 * (.trans), n over ND n8 tiles from B's first column; an odd last tile by .x2 (its
 * lanes 0-15 addresses are those of the .x4 pattern's first two matrices). */
template <int ND>
__device__ __forceinline__ void mma_bt_row(float (&acc)[ND][4], const uint32_t a[4], const bf16 *B, int ldb, int lane)
{
#pragma unroll
	for (int dp = 0; dp < ND / 2; dp++) {
		uint32_t r[4];
		ldsm_x4_t(r, B + zb_frag_bt_row(lane) * ldb + dp * 16 + zb_frag_bt_col(lane));
		mma16816(acc[2 * dp], a, r[0], r[1]);
		mma16816(acc[2 * dp + 1], a, r[2], r[3]);
	}
	if (ND % 2) {
		uint32_t r[2];
		ldsm_x2_t(r, B + zb_frag_bt_row(lane) * ldb + (ND - 1) * 8);
		mma16816(acc[ND - 1], a, r[0], r[1]);
	}
}

template <int D, int BR_, int W>
__global__ void __launch_bounds__(32 * W) fm_bwd_kernel(fm_args a)
{
	typedef fm_bwd_cfg<D, BR_, W> C;
	constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LDS = C::LDS, KD = D / 16, ND = D / 8, NB = BR / 8;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *Ks = reinterpret_cast<bf16 *>(smem), *Vs = Ks + BC * LD, *Qs = Vs + BC * LD;
	bf16 *dOs = Qs + 2 * BR * LD, *dSt = dOs + 2 * BR * LD; /* dS^T: [key][query] */
	float *lse2_s = reinterpret_cast<float *>(dSt + BC * LDS), *dd_s = lse2_s + 2 * BR;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	const int S = a.seq, kb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
	const int group = a.heads / a.kv_heads, k0 = kb * BC, kw = warp * 16; /* the warp's keys (local) */
	const int nqb = (S + BR - 1) / BR, i0 = a.causal ? k0 / BR : 0, nt = nqb - i0, total = group * nt;
	const float sl2 = a.scale * FM_LOG2E;
	const int mt = warp % C::MT, c0 = (warp / C::MT) * C::NCOL; /* this warp's dQ rows and columns */

	tile_load<D, BC, C::THREADS>(Ks, a.k + (int64_t)b * S * a.ldk + (int64_t)hk * D, a.ldk, k0, S, a.vec);
	tile_load<D, BC, C::THREADS>(Vs, a.v + (int64_t)b * S * a.ldv + (int64_t)hk * D, a.ldv, k0, S, a.vec);
	bwd_load_tile<D, BR, W>(a, 0, 0, b, hk, i0, nt, Qs, dOs, lse2_s, dd_s); /* commits K and V too */

	float dk[ND][4], dv[ND][4];
#pragma unroll
	for (int d = 0; d < ND; d++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			dk[d][e] = dv[d][e] = 0.f;

	for (int it = 0; it < total; it++) {
		cp_async_wait_all();
		__syncthreads(); /* tile it is in; the previous tile's dQ is done with dS^T and its buffers */
		if (it + 1 < total)
			bwd_load_tile<D, BR, W>(a, it + 1, (it + 1) & 1, b, hk, i0, nt, Qs, dOs, lse2_s, dd_s);
		const int buf = it & 1, h = hk * group + it / nt, q0 = (i0 + it % nt) * BR;
		const bf16 *Qb = Qs + buf * BR * LD, *dOb = dOs + buf * BR * LD;
		const float *lse2 = lse2_s + buf * BR, *ddb = dd_s + buf * BR;

		/* S^T = K_w Q^T and dP^T = V_w dO^T: 16 keys x BR queries */
		float s[NB][4], dp[NB][4];
#pragma unroll
		for (int n = 0; n < NB; n++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				s[n][e] = dp[n][e] = 0.f;
#pragma unroll
		for (int kd = 0; kd < KD; kd++) {
			uint32_t ka[4], va[4];
			ldsm_x4(ka, Ks + (kw + zb_frag_a_row(lane)) * LD + kd * 16 + zb_frag_a_col(lane));
			ldsm_x4(va, Vs + (kw + zb_frag_a_row(lane)) * LD + kd * 16 + zb_frag_a_col(lane));
#pragma unroll
			for (int np = 0; np < NB / 2; np++) {
				uint32_t r[4];
				const int off = (np * 16 + zb_frag_bn_row(lane)) * LD + kd * 16 + zb_frag_bn_col(lane);
				ldsm_x4(r, Qb + off);
				mma16816(s[2 * np], ka, r[0], r[1]);
				mma16816(s[2 * np + 1], ka, r[2], r[3]);
				ldsm_x4(r, dOb + off);
				mma16816(dp[2 * np], va, r[0], r[1]);
				mma16816(dp[2 * np + 1], va, r[2], r[3]);
			}
		}
		/* P^T = exp2(s sl2 - lse2) (0 where masked), dS^T = P^T (dP^T - dD) */
		const bool edge = q0 + BR > S || k0 + BC > S || (a.causal && k0 + BC - 1 > q0);
#pragma unroll
		for (int n = 0; n < NB; n++) {
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int ql = n * 8 + zb_frag_c_col(lane, e), key = k0 + kw + zb_frag_c_row(lane, e);
				float p = exp2f(s[n][e] * sl2 - lse2[ql]);
				if (edge && (q0 + ql >= S || key >= S || (a.causal && key > q0 + ql)))
					p = 0.f;
				s[n][e] = p;
				dp[n][e] = p * (dp[n][e] - ddb[ql]);
			}
		}
		/* dV += P^T dO, dK += dS^T Q (k = the tile's queries) */
#pragma unroll
		for (int kk = 0; kk < BR / 16; kk++) {
			const uint32_t pa[4] = { pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
						 pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
						 pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]) };
			const uint32_t da[4] = { pack_bf16(dp[2 * kk][0], dp[2 * kk][1]),
						 pack_bf16(dp[2 * kk][2], dp[2 * kk][3]),
						 pack_bf16(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
						 pack_bf16(dp[2 * kk + 1][2], dp[2 * kk + 1][3]) };
			mma_bt_row<ND>(dv, pa, dOb + kk * 16 * LD, LD, lane);
			mma_bt_row<ND>(dk, da, Qb + kk * 16 * LD, LD, lane);
			/* the same dS^T pairs into shared memory for dQ */
			bf16 *row = dSt + (kw + g) * LDS + kk * 16 + 2 * t;
			*reinterpret_cast<uint32_t *>(row) = da[0];
			*reinterpret_cast<uint32_t *>(row + 8 * LDS) = da[1];
			*reinterpret_cast<uint32_t *>(row + 8) = da[2];
			*reinterpret_cast<uint32_t *>(row + 8 * LDS + 8) = da[3];
		}
		__syncthreads(); /* dS^T complete: BC keys x BR queries */

		/* dQ rows mt*16.., columns c0..c0+NCOL of this tile += scale dS K */
		float acc[C::NCOL / 8][4];
#pragma unroll
		for (int n = 0; n < C::NCOL / 8; n++)
			acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
		for (int kk = 0; kk < BC / 16; kk++) {
			uint32_t sa[4];
			ldsm_x4_t(sa, dSt + (kk * 16 + zb_frag_at_row(lane)) * LDS + mt * 16 + zb_frag_at_col(lane));
			mma_bt_row<C::NCOL / 8>(acc, sa, Ks + kk * 16 * LD + c0, LD, lane);
		}
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const int qi = q0 + mt * 16 + g + 8 * r;
			if (qi >= S)
				continue;
			float *dst = a.dqacc + (((int64_t)b * S + qi) * a.heads + h) * D + c0 + 2 * t;
#pragma unroll
			for (int n = 0; n < C::NCOL / 8; n++)
				atomic_add_pair(dst + n * 8, acc[n][2 * r] * a.scale, acc[n][2 * r + 1] * a.scale);
		}
	}
	/* dK (scaled) and dV of the warp's 16 keys */
#pragma unroll
	for (int r = 0; r < 2; r++) {
		const int kj = k0 + kw + g + 8 * r;
		if (kj >= S)
			continue;
		bf16 *dkr = a.dk + ((int64_t)b * S + kj) * a.lddk + (int64_t)hk * D + 2 * t;
		bf16 *dvr = a.dv + ((int64_t)b * S + kj) * a.lddv + (int64_t)hk * D + 2 * t;
#pragma unroll
		for (int d = 0; d < ND; d++) {
			store_pair(dkr + d * 8, dk[d][2 * r] * a.scale, dk[d][2 * r + 1] * a.scale, a.ovec);
			store_pair(dvr + d * 8, dv[d][2 * r], dv[d][2 * r + 1], a.ovec);
		}
	}
}

/* ---- host side ------------------------------------------------------------------- */
#ifndef ZB_FLASH_EMU

static fm_args fm_args_of(const zb_flash_shape *sh, const zb_flash_mma_args *x)
{
	fm_args a;
	a.q = (const bf16 *)x->q, a.k = (const bf16 *)x->k, a.v = (const bf16 *)x->v, a.dout = (const bf16 *)x->dout;
	a.o = (bf16 *)x->o, a.dk = (bf16 *)x->dk, a.dv = (bf16 *)x->dv;
	a.ldq = x->ldq, a.ldk = x->ldk, a.ldv = x->ldv, a.ldo = x->ldo, a.lddo = x->lddo, a.lddk = x->lddk,
	a.lddv = x->lddv;
	a.lse_out = x->lse_out, a.dqacc = x->dqacc, a.lse = x->lse, a.dd = x->dd;
	a.seq = sh->seq, a.heads = sh->heads, a.kv_heads = sh->kv_heads, a.causal = sh->causal != 0;
	a.vec = x->vec, a.ovec = x->ovec, a.scale = sh->scale;
	return a;
}

template <int D, int MW>
static zb_status fm_fwd_launch(const zb_flash_shape *sh, const fm_args &a, cudaStream_t s, zb_error *err)
{
	typedef fm_fwd_cfg<D, MW> C;
	ZB_CUDA_TRY(err, cudaFuncSetAttribute(fm_fwd_kernel<D, MW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					      (int)C::bytes));
	dim3 grid((unsigned)((sh->seq + C::BR - 1) / C::BR), (unsigned)sh->heads, (unsigned)sh->batch);
	fm_fwd_kernel<D, MW><<<grid, FM_THREADS, C::bytes, s>>>(a);
	ZB_CUDA_LAUNCHED(err, "flash_mma_fwd");
	return ZB_OK;
}

template <int D, int BR, int W>
static zb_status fm_bwd_launch(const zb_flash_shape *sh, const fm_args &a, cudaStream_t s, zb_error *err)
{
	typedef fm_bwd_cfg<D, BR, W> C;
	ZB_CUDA_TRY(err, cudaFuncSetAttribute(fm_bwd_kernel<D, BR, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					      (int)C::bytes));
	dim3 grid((unsigned)((sh->seq + C::BC - 1) / C::BC), (unsigned)sh->kv_heads, (unsigned)sh->batch);
	fm_bwd_kernel<D, BR, W><<<grid, C::THREADS, C::bytes, s>>>(a);
	ZB_CUDA_LAUNCHED(err, "flash_mma_bwd");
	return ZB_OK;
}

template <int D>
static zb_status fm_fwd_dim(const zb_flash_shape *sh, const fm_args &a, int mw, cudaStream_t s, zb_error *err)
{
	return mw == 2 ? fm_fwd_launch<D, 2>(sh, a, s, err) : fm_fwd_launch<D, 1>(sh, a, s, err);
}

template <int D>
static zb_status fm_bwd_dim(const zb_flash_shape *sh, const fm_args &a, int br, int w, cudaStream_t s,
			    zb_error *err)
{
	if constexpr (fm_bwd_ok(D, 32, 4))
		if (br == 32 && w == 4)
			return fm_bwd_launch<D, 32, 4>(sh, a, s, err);
	if constexpr (fm_bwd_ok(D, 32, 8))
		if (br == 32 && w == 8)
			return fm_bwd_launch<D, 32, 8>(sh, a, s, err);
	if constexpr (fm_bwd_ok(D, 64, 8))
		if (br == 64 && w == 8)
			return fm_bwd_launch<D, 64, 8>(sh, a, s, err);
	return fm_bwd_launch<D, 64, 4>(sh, a, s, err);
}

/* An integer from the environment: *v unchanged when unset, else one of the two allowed. */
static zb_status fm_env_choice(const char *name, int x, int y, int *v, zb_error *err)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return ZB_OK;
	char *end;
	long n = strtol(e, &end, 10);
	if (*end || (n != x && n != y))
		return zb_fail(err, ZB_E_INPUT, "%s '%s': expected %d or %d", name, e, x, y);
	*v = (int)n;
	return ZB_OK;
}

extern "C" zb_status zb_flash_mma_fwd(const zb_flash_shape *sh, const zb_flash_mma_args *x, zb_stream stream,
				      zb_error *err)
{
	fm_args a = fm_args_of(sh, x);
	cudaStream_t s = (cudaStream_t)stream;
	int d = sh->head_dim, rows = 16 * fm_fwd_mw_default(d);
	zb_status st = fm_env_choice("ZB_FLASH_FWD_ROWS", 16, 32, &rows, err);
	if (st)
		return st;
	switch (d) {
	case 32: return fm_fwd_dim<32>(sh, a, rows / 16, s, err);
	case 64: return fm_fwd_dim<64>(sh, a, rows / 16, s, err);
	case 80: return fm_fwd_dim<80>(sh, a, rows / 16, s, err);
	case 96: return fm_fwd_dim<96>(sh, a, rows / 16, s, err);
	case 128: return fm_fwd_dim<128>(sh, a, rows / 16, s, err);
	}
	return zb_fail(err, ZB_E_INPUT, "flash attention (mma): head dim %d", d);
}

extern "C" zb_status zb_flash_mma_bwd(const zb_flash_shape *sh, const zb_flash_mma_args *x, zb_stream stream,
				      zb_error *err)
{
	fm_args a = fm_args_of(sh, x);
	cudaStream_t s = (cudaStream_t)stream;
	int d = sh->head_dim, br = fm_bwd_br_default(d), w = fm_bwd_warps_default(d);
	zb_status st = fm_env_choice("ZB_FLASH_BWD_ROWS", 32, 64, &br, err);
	if (!st)
		st = fm_env_choice("ZB_FLASH_BWD_WARPS", 4, 8, &w, err);
	if (st)
		return st;
	if (!fm_bwd_ok(d, br, w))
		return zb_fail(err, ZB_E_INPUT, "ZB_FLASH_BWD_ROWS %d with ZB_FLASH_BWD_WARPS %d: not at head dim %d", br,
			       w, d);
	switch (d) {
	case 32: return fm_bwd_dim<32>(sh, a, br, w, s, err);
	case 64: return fm_bwd_dim<64>(sh, a, br, w, s, err);
	case 80: return fm_bwd_dim<80>(sh, a, br, w, s, err);
	case 96: return fm_bwd_dim<96>(sh, a, br, w, s, err);
	case 128: return fm_bwd_dim<128>(sh, a, br, w, s, err);
	}
	return zb_fail(err, ZB_E_INPUT, "flash attention (mma): head dim %d", d);
}
#endif /* ZB_FLASH_EMU */
