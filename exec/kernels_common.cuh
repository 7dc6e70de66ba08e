/*
 * kernels_common.cuh - private to exec/'s .cu files: what the kernel files share
 * (the bf16 type, launch sizing, argument checks, warp reductions, vector loads and
 * stores). See kernels.cu for how the kernels are built.
 */
#ifndef ZB_KERNELS_COMMON_CUH
#define ZB_KERNELS_COMMON_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "exec/cuda_check.h"
#include "exec/gemm.h"
#include "exec/gpu_adam.h"
#include "exec/kernels.h"

typedef __nv_bfloat16 bf16;

/* ---- host helpers ---------------------------------------------------------------- */

static inline bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

/* Multiprocessors of the current device (cached per device; 132 if unknown). */
static inline int sm_count(void)
{
	static int cached[64];
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
		(void)cudaGetLastError();
		return 132;
	}
	if (!cached[dev]) {
		int n = 0;
		if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
		    n <= 0) {
			(void)cudaGetLastError();
			n = 132;
		}
		cached[dev] = n;
	}
	return cached[dev];
}

/* Blocks of `threads` for `items` work items in a grid-stride loop: one item per
 * thread up to 512 blocks per SM (streaming kernels ran faster on the H200 with a
 * grid as large as the work than with one resident wave), at least one. */
static inline unsigned grid_for(size_t items, int threads)
{
	size_t want = (items + threads - 1) / threads;
	size_t cap = (size_t)sm_count() * 512;
	if (want > cap)
		want = cap;
	return want ? (unsigned)want : 1u;
}

#define CHECK_ARG(cond, err, ...)                                     \
	do {                                                          \
		if (!(cond))                                          \
			return zb_fail((err), ZB_E_INPUT, __VA_ARGS__); \
	} while (0)

#define CHECK_PTR(p, err, fn)                                                          \
	CHECK_ARG((p) != NULL, err, "%s: missing buffer %s", fn, #p)

/* ---- device helpers -------------------------------------------------------------- */

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Merge two (max, sum of exp(x - max)) pairs; an empty pair is (-inf, 0). */
__device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2)
{
	float mn = fmaxf(m, m2);
	if (mn == -INFINITY)
		return; /* both empty */
	s = s * expf(m - mn) + s2 * expf(m2 - mn);
	m = mn;
}

/* Add one value to a running (max, sum) pair. */
__device__ __forceinline__ void lse_add(float &m, float &s, float x)
{
	if (x > m) {
		s = s * expf(m - x) + 1.0f; /* m = -inf: 0 * 0 + 1 */
		m = x;
	} else if (m != -INFINITY) {
		s += expf(x - m);
	}
}

__device__ __forceinline__ void warp_lse(float &m, float &s)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		float m2 = __shfl_xor_sync(0xffffffffu, m, o);
		float s2 = __shfl_xor_sync(0xffffffffu, s, o);
		lse_merge(m, s, m2, s2);
	}
}

/* Load / store V consecutive elements as floats: V = 8 is one or two 16-byte
 * accesses (the caller guarantees alignment), V = 1 a scalar access. */
template <int V> __device__ __forceinline__ void ldv(const bf16 *p, float *f)
{
	if constexpr (V == 8) {
		uint4 u = *reinterpret_cast<const uint4 *>(p);
		const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 t = __bfloat1622float2(h[k]);
			f[2 * k] = t.x;
			f[2 * k + 1] = t.y;
		}
	} else {
		f[0] = __bfloat162float(*p);
	}
}

template <int V> __device__ __forceinline__ void stv(bf16 *p, const float *f)
{
	if constexpr (V == 8) {
		uint4 u;
		__nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
		for (int k = 0; k < 4; k++)
			h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
		*reinterpret_cast<uint4 *>(p) = u;
	} else {
		*p = __float2bfloat16_rn(f[0]);
	}
}

template <int V> __device__ __forceinline__ void ldv(const float *p, float *f)
{
	if constexpr (V == 8) {
		float4 a = reinterpret_cast<const float4 *>(p)[0];
		float4 b = reinterpret_cast<const float4 *>(p)[1];
		f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
		f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
	} else {
		f[0] = *p;
	}
}

template <int V> __device__ __forceinline__ void stv(float *p, const float *f)
{
	if constexpr (V == 8) {
		reinterpret_cast<float4 *>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
		reinterpret_cast<float4 *>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
	} else {
		*p = f[0];
	}
}

#endif
