/*
 * kernels.cu - the CUDA kernels behind exec/kernels.h and exec/gpu_adam.h, and the
 * GPU micro-benchmarks.
 *
 * Everything here is memory-bound, so the kernels are built for bytes, not flops:
 * 16-byte loads and stores where the data allows (8 bf16 or 4 fp32 per access), a
 * scalar path with identical arithmetic where it does not, fp32 arithmetic and
 * reductions, one rounding to bf16 at the store. Shapes:
 *   - flat elementwise work (activations, residual, casts, gradient accumulation,
 *     Adam): a grid-stride loop over a grid sized to the GPU;
 *   - row work (norms, attention softmax): one warp per row, rows re-read from L1/L2
 *     instead of staged in shared memory, which keeps any row length legal;
 *   - cross-entropy: one block per row (vocabularies are long), an online max and
 *     sum in one pass, the gradient in a second;
 *   - norm weight gradients: a column reduction over row chunks, fp32 atomics.
 * Host wrappers check their arguments, pick the vector or scalar instance, launch
 * and check the launch; none of them synchronizes except the benchmarks.
 */
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

static bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

/* Multiprocessors of the current device (cached per device; 132 if unknown). */
static int sm_count(void)
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
static unsigned grid_for(size_t items, int threads)
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

/* ---- random fills ---------------------------------------------------------------- */

__global__ void fill_bf16_kernel(bf16 *x, size_t n, uint64_t seed, float lo, float hi)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		x[i] = __float2bfloat16_rn(zb_uniform_at(seed, i, lo, hi));
}

__global__ void fill_f32_kernel(float *x, size_t n, uint64_t seed, float lo, float hi)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		x[i] = zb_uniform_at(seed, i, lo, hi);
}

__global__ void fill_tokens_kernel(int32_t *x, size_t n, uint64_t seed, int vocab)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		x[i] = zb_token_at(seed, i, vocab);
}

static zb_status check_range(const char *fn, float lo, float hi, zb_error *err)
{
	CHECK_ARG(isfinite(lo) && isfinite(hi) && lo <= hi && isfinite(hi - lo), err,
		  "%s: invalid range [%g, %g)", fn, lo, hi);
	return ZB_OK;
}

extern "C" zb_status zb_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed, float lo,
					  float hi, zb_stream stream, zb_error *err)
{
	zb_status st = check_range("zb_fill_uniform_bf16", lo, hi, err);
	if (st != ZB_OK || n == 0)
		return st;
	CHECK_PTR(x, err, "zb_fill_uniform_bf16");
	fill_bf16_kernel<<<grid_for(n, 256), 256, 0, stream>>>((bf16 *)x, n, seed, lo, hi);
	ZB_CUDA_LAUNCHED(err, "fill_bf16");
	return ZB_OK;
}

extern "C" zb_status zb_fill_uniform_f32(float *x, size_t n, uint64_t seed, float lo, float hi,
					 zb_stream stream, zb_error *err)
{
	zb_status st = check_range("zb_fill_uniform_f32", lo, hi, err);
	if (st != ZB_OK || n == 0)
		return st;
	CHECK_PTR(x, err, "zb_fill_uniform_f32");
	fill_f32_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, n, seed, lo, hi);
	ZB_CUDA_LAUNCHED(err, "fill_f32");
	return ZB_OK;
}

extern "C" zb_status zb_fill_tokens(int32_t *ids, size_t n, uint64_t seed, int vocab,
				    zb_stream stream, zb_error *err)
{
	CHECK_ARG(vocab >= 1, err, "zb_fill_tokens: invalid vocab %d", vocab);
	if (n == 0)
		return ZB_OK;
	CHECK_PTR(ids, err, "zb_fill_tokens");
	fill_tokens_kernel<<<grid_for(n, 256), 256, 0, stream>>>(ids, n, seed, vocab);
	ZB_CUDA_LAUNCHED(err, "fill_tokens");
	return ZB_OK;
}

/* ---- norms: one warp per row ----------------------------------------------------- */

#define ROW_WARPS 8 /* rows per 256-thread block */

/* LayerNorm (RMS = false) or RMSNorm (RMS = true) forward. */
template <int V, bool RMS>
__global__ void __launch_bounds__(ROW_WARPS * 32)
	norm_fwd_kernel(bf16 *out, float *mean, float *rstd, const bf16 *x, const bf16 *gain,
			const bf16 *bias, int rows, int cols, float eps)
{
	int row = blockIdx.x * ROW_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	if (row >= rows)
		return;
	const bf16 *xr = x + (size_t)row * cols;
	bf16 *outr = out + (size_t)row * cols;
	float mu = 0.0f;
	if (!RMS) {
		float sum = 0.0f;
		for (int c = lane * V; c < cols; c += 32 * V) {
			float f[V];
			ldv<V>(xr + c, f);
#pragma unroll
			for (int k = 0; k < V; k++)
				sum += f[k];
		}
		mu = warp_sum(sum) / cols;
	}
	float sq = 0.0f; /* two passes: no cancellation in the variance */
	for (int c = lane * V; c < cols; c += 32 * V) {
		float f[V];
		ldv<V>(xr + c, f);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float d = f[k] - mu;
			sq += d * d;
		}
	}
	float rs = 1.0f / sqrtf(warp_sum(sq) / cols + eps);
	for (int c = lane * V; c < cols; c += 32 * V) {
		float f[V], g[V], b[V], y[V];
		ldv<V>(xr + c, f);
		ldv<V>(gain + c, g);
		if (!RMS && bias)
			ldv<V>(bias + c, b);
#pragma unroll
		for (int k = 0; k < V; k++)
			y[k] = (f[k] - mu) * rs * g[k] + ((!RMS && bias) ? b[k] : 0.0f);
		stv<V>(outr + c, y);
	}
	if (lane == 0) {
		if (!RMS && mean)
			mean[row] = mu;
		if (rstd)
			rstd[row] = rs;
	}
}

/* dx of LayerNorm / RMSNorm; mean is unused for RMS. */
template <int V, bool RMS>
__global__ void __launch_bounds__(ROW_WARPS * 32)
	norm_bwd_kernel(bf16 *dx, const bf16 *dout, const bf16 *x, const bf16 *gain,
			const float *mean, const float *rstd, int rows, int cols)
{
	int row = blockIdx.x * ROW_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	if (row >= rows)
		return;
	size_t base = (size_t)row * cols;
	float mu = RMS ? 0.0f : mean[row], rs = rstd[row];
	float a = 0.0f, b = 0.0f; /* sum of dout*gain, sum of dout*gain*xhat */
	for (int c = lane * V; c < cols; c += 32 * V) {
		float d[V], f[V], g[V];
		ldv<V>(dout + base + c, d);
		ldv<V>(x + base + c, f);
		ldv<V>(gain + c, g);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float dg = d[k] * g[k];
			a += dg;
			b += dg * (f[k] - mu) * rs;
		}
	}
	a = RMS ? 0.0f : warp_sum(a) / cols;
	b = warp_sum(b) / cols;
	for (int c = lane * V; c < cols; c += 32 * V) {
		float d[V], f[V], g[V], y[V];
		ldv<V>(dout + base + c, d);
		ldv<V>(x + base + c, f);
		ldv<V>(gain + c, g);
#pragma unroll
		for (int k = 0; k < V; k++)
			y[k] = rs * (d[k] * g[k] - a - (f[k] - mu) * rs * b);
		stv<V>(dx + base + c, y); /* dx may be dout: same element, same thread */
	}
}

/* dgain += sum_rows(dout * xhat), dbias += sum_rows(dout): block (32, 8) covers 32
 * columns of a chunk of rows; partial sums meet in shared memory, then one fp32
 * atomic per column and block. mean NULL: RMSNorm (xhat = x * rstd). */
__global__ void __launch_bounds__(256)
	norm_param_grad_kernel(float *dgain, float *dbias, const bf16 *dout, const bf16 *x,
			       const float *mean, const float *rstd, int rows, int cols,
			       int rows_per_block)
{
	__shared__ float sg[8][33], sb[8][33];
	int tx = threadIdx.x, ty = threadIdx.y;
	int c = blockIdx.x * 32 + tx;
	int r0 = blockIdx.y * rows_per_block;
	int r1 = min(rows, r0 + rows_per_block);
	float g = 0.0f, b = 0.0f;
	if (c < cols) {
		for (int r = r0 + ty; r < r1; r += 8) {
			size_t i = (size_t)r * cols + c;
			float d = __bfloat162float(dout[i]);
			float xh = (__bfloat162float(x[i]) - (mean ? mean[r] : 0.0f)) * rstd[r];
			g += d * xh;
			b += d;
		}
	}
	sg[ty][tx] = g;
	sb[ty][tx] = b;
	__syncthreads();
	if (ty == 0 && c < cols) {
		for (int k = 1; k < 8; k++) {
			g += sg[k][tx];
			b += sb[k][tx];
		}
		if (dgain)
			atomicAdd(&dgain[c], g);
		if (dbias)
			atomicAdd(&dbias[c], b);
	}
}

static zb_status launch_param_grad(float *dgain, float *dbias, const bf16 *dout, const bf16 *x,
				   const float *mean, const float *rstd, int rows, int cols,
				   zb_stream stream, zb_error *err)
{
	if (!dgain && !dbias)
		return ZB_OK;
	unsigned gx = (unsigned)((cols + 31) / 32);
	/* about 4 blocks per SM in all, each at least 64 rows */
	long chunks = ((long)sm_count() * 4 + gx - 1) / gx;
	long max_chunks = (rows + 63) / 64;
	if (chunks > max_chunks)
		chunks = max_chunks;
	if (chunks > 65535)
		chunks = 65535;
	if (chunks < 1)
		chunks = 1;
	int per = (int)((rows + chunks - 1) / chunks);
	chunks = (rows + per - 1) / per;
	norm_param_grad_kernel<<<dim3(gx, (unsigned)chunks), dim3(32, 8), 0, stream>>>(
		dgain, dbias, dout, x, mean, rstd, rows, cols, per);
	ZB_CUDA_LAUNCHED(err, "norm_param_grad");
	return ZB_OK;
}

static zb_status check_rows(const char *fn, int rows, int cols, zb_error *err)
{
	CHECK_ARG(rows >= 0, err, "%s: invalid rows %d", fn, rows);
	CHECK_ARG(cols >= 1, err, "%s: invalid cols %d", fn, cols);
	return ZB_OK;
}

extern "C" zb_status zb_layernorm_fwd(uint16_t *out, float *mean, float *rstd, const uint16_t *x,
				      const uint16_t *gain, const uint16_t *bias, int rows,
				      int cols, float eps, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_layernorm_fwd";
	zb_status st = check_rows(fn, rows, cols, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(out, err, fn);
	CHECK_PTR(x, err, fn);
	CHECK_PTR(gain, err, fn);
	CHECK_ARG(eps >= 0.0f, err, "%s: invalid eps %g", fn, eps);
	bool vec = cols % 8 == 0 && aligned16(out) && aligned16(x) && aligned16(gain) &&
		   (!bias || aligned16(bias));
	unsigned blocks = (unsigned)((rows + ROW_WARPS - 1) / ROW_WARPS);
	if (vec)
		norm_fwd_kernel<8, false><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)out, mean, rstd, (const bf16 *)x, (const bf16 *)gain,
			(const bf16 *)bias, rows, cols, eps);
	else
		norm_fwd_kernel<1, false><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)out, mean, rstd, (const bf16 *)x, (const bf16 *)gain,
			(const bf16 *)bias, rows, cols, eps);
	ZB_CUDA_LAUNCHED(err, "layernorm_fwd");
	return ZB_OK;
}

extern "C" zb_status zb_rmsnorm_fwd(uint16_t *out, float *rstd, const uint16_t *x,
				    const uint16_t *gain, int rows, int cols, float eps,
				    zb_stream stream, zb_error *err)
{
	const char *fn = "zb_rmsnorm_fwd";
	zb_status st = check_rows(fn, rows, cols, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(out, err, fn);
	CHECK_PTR(x, err, fn);
	CHECK_PTR(gain, err, fn);
	CHECK_ARG(eps >= 0.0f, err, "%s: invalid eps %g", fn, eps);
	bool vec = cols % 8 == 0 && aligned16(out) && aligned16(x) && aligned16(gain);
	unsigned blocks = (unsigned)((rows + ROW_WARPS - 1) / ROW_WARPS);
	if (vec)
		norm_fwd_kernel<8, true><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)out, NULL, rstd, (const bf16 *)x, (const bf16 *)gain, NULL, rows,
			cols, eps);
	else
		norm_fwd_kernel<1, true><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)out, NULL, rstd, (const bf16 *)x, (const bf16 *)gain, NULL, rows,
			cols, eps);
	ZB_CUDA_LAUNCHED(err, "rmsnorm_fwd");
	return ZB_OK;
}

extern "C" zb_status zb_layernorm_bwd(uint16_t *dx, float *dgain, float *dbias,
				      const uint16_t *dout, const uint16_t *x,
				      const uint16_t *gain, const float *mean, const float *rstd,
				      int rows, int cols, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_layernorm_bwd";
	zb_status st = check_rows(fn, rows, cols, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(dx, err, fn);
	CHECK_PTR(dout, err, fn);
	CHECK_PTR(x, err, fn);
	CHECK_PTR(gain, err, fn);
	CHECK_PTR(mean, err, fn);
	CHECK_PTR(rstd, err, fn);
	/* weight gradients first: dx may overwrite dout */
	st = launch_param_grad(dgain, dbias, (const bf16 *)dout, (const bf16 *)x, mean, rstd, rows,
			       cols, stream, err);
	if (st != ZB_OK)
		return st;
	bool vec = cols % 8 == 0 && aligned16(dx) && aligned16(dout) && aligned16(x) &&
		   aligned16(gain);
	unsigned blocks = (unsigned)((rows + ROW_WARPS - 1) / ROW_WARPS);
	if (vec)
		norm_bwd_kernel<8, false><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dout, (const bf16 *)x, (const bf16 *)gain, mean,
			rstd, rows, cols);
	else
		norm_bwd_kernel<1, false><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dout, (const bf16 *)x, (const bf16 *)gain, mean,
			rstd, rows, cols);
	ZB_CUDA_LAUNCHED(err, "layernorm_bwd");
	return ZB_OK;
}

extern "C" zb_status zb_rmsnorm_bwd(uint16_t *dx, float *dgain, const uint16_t *dout,
				    const uint16_t *x, const uint16_t *gain, const float *rstd,
				    int rows, int cols, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_rmsnorm_bwd";
	zb_status st = check_rows(fn, rows, cols, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(dx, err, fn);
	CHECK_PTR(dout, err, fn);
	CHECK_PTR(x, err, fn);
	CHECK_PTR(gain, err, fn);
	CHECK_PTR(rstd, err, fn);
	/* weight gradient first: dx may overwrite dout */
	st = launch_param_grad(dgain, NULL, (const bf16 *)dout, (const bf16 *)x, NULL, rstd, rows,
			       cols, stream, err);
	if (st != ZB_OK)
		return st;
	bool vec = cols % 8 == 0 && aligned16(dx) && aligned16(dout) && aligned16(x) &&
		   aligned16(gain);
	unsigned blocks = (unsigned)((rows + ROW_WARPS - 1) / ROW_WARPS);
	if (vec)
		norm_bwd_kernel<8, true><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dout, (const bf16 *)x, (const bf16 *)gain, NULL,
			rstd, rows, cols);
	else
		norm_bwd_kernel<1, true><<<blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dout, (const bf16 *)x, (const bf16 *)gain, NULL,
			rstd, rows, cols);
	ZB_CUDA_LAUNCHED(err, "rmsnorm_bwd");
	return ZB_OK;
}

/* ---- flat elementwise work ------------------------------------------------------- */

/* out[i] = op(a[i]) (and op(a[i], b[i])) over n elements: 8 per access when vec,
 * then the remaining n % 8 one by one. */
template <class Op, class TO, class TA>
__global__ void ew1_kernel(TO *out, const TA *a, size_t n, bool vec, Op op)
{
	size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x, done = 0;
	if (vec) {
		size_t nv = n / 8;
		for (size_t i = tid; i < nv; i += stride) {
			float x[8], y[8];
			ldv<8>(a + 8 * i, x);
#pragma unroll
			for (int k = 0; k < 8; k++)
				y[k] = op(x[k]);
			stv<8>(out + 8 * i, y);
		}
		done = nv * 8;
	}
	for (size_t i = done + tid; i < n; i += stride) {
		float x, y;
		ldv<1>(a + i, &x);
		y = op(x);
		stv<1>(out + i, &y);
	}
}

template <class Op, class TO, class TA, class TB>
__global__ void ew2_kernel(TO *out, const TA *a, const TB *b, size_t n, bool vec, Op op)
{
	size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x, done = 0;
	if (vec) {
		size_t nv = n / 8;
		for (size_t i = tid; i < nv; i += stride) {
			float x[8], z[8], y[8];
			ldv<8>(a + 8 * i, x);
			ldv<8>(b + 8 * i, z);
#pragma unroll
			for (int k = 0; k < 8; k++)
				y[k] = op(x[k], z[k]);
			stv<8>(out + 8 * i, y);
		}
		done = nv * 8;
	}
	for (size_t i = done + tid; i < n; i += stride) {
		float x, z, y;
		ldv<1>(a + i, &x);
		ldv<1>(b + i, &z);
		y = op(x, z);
		stv<1>(out + i, &y);
	}
}

struct OpIdentity {
	__device__ float operator()(float x) const { return x; }
};

struct OpAdd {
	__device__ float operator()(float a, float b) const { return __fadd_rn(a, b); }
};

#define GELU_K0 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_K1 0.044715f

struct OpGelu {
	__device__ float operator()(float x) const
	{
		float u = GELU_K0 * (x + GELU_K1 * x * x * x);
		return 0.5f * x * (1.0f + tanhf(u));
	}
};

struct OpGeluBwd { /* (dout, x) */
	__device__ float operator()(float d, float x) const
	{
		float u = GELU_K0 * (x + GELU_K1 * x * x * x);
		float t = tanhf(u);
		float du = GELU_K0 * (1.0f + 3.0f * GELU_K1 * x * x);
		return d * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
	}
};

template <class Op, class TO, class TA>
static zb_status launch_ew1(const char *name, TO *out, const TA *a, size_t n, Op op,
			    zb_stream stream, zb_error *err)
{
	if (n == 0)
		return ZB_OK;
	CHECK_ARG(out && a, err, "%s: missing buffer", name);
	bool vec = aligned16(out) && aligned16(a);
	ew1_kernel<<<grid_for(vec ? n / 8 + 8 : n, 256), 256, 0, stream>>>(out, a, n, vec, op);
	return zb_cuda_launched_at(err, name, __FILE__, __LINE__);
}

template <class Op, class TO, class TA, class TB>
static zb_status launch_ew2(const char *name, TO *out, const TA *a, const TB *b, size_t n, Op op,
			    zb_stream stream, zb_error *err)
{
	if (n == 0)
		return ZB_OK;
	CHECK_ARG(out && a && b, err, "%s: missing buffer", name);
	bool vec = aligned16(out) && aligned16(a) && aligned16(b);
	ew2_kernel<<<grid_for(vec ? n / 8 + 8 : n, 256), 256, 0, stream>>>(out, a, b, n, vec, op);
	return zb_cuda_launched_at(err, name, __FILE__, __LINE__);
}

extern "C" zb_status zb_gelu_fwd(uint16_t *out, const uint16_t *x, size_t n, zb_stream stream,
				 zb_error *err)
{
	return launch_ew1("zb_gelu_fwd", (bf16 *)out, (const bf16 *)x, n, OpGelu(), stream, err);
}

extern "C" zb_status zb_gelu_bwd(uint16_t *dx, const uint16_t *dout, const uint16_t *x, size_t n,
				 zb_stream stream, zb_error *err)
{
	return launch_ew2("zb_gelu_bwd", (bf16 *)dx, (const bf16 *)dout, (const bf16 *)x, n,
			  OpGeluBwd(), stream, err);
}

extern "C" zb_status zb_residual_add(uint16_t *out, const uint16_t *a, const uint16_t *b,
				     size_t n, zb_stream stream, zb_error *err)
{
	return launch_ew2("zb_residual_add", (bf16 *)out, (const bf16 *)a, (const bf16 *)b, n,
			  OpAdd(), stream, err);
}

extern "C" zb_status zb_grad_acc_f32(float *acc, const uint16_t *g, size_t n, zb_stream stream,
				     zb_error *err)
{
	return launch_ew2("zb_grad_acc_f32", acc, (const float *)acc, (const bf16 *)g, n, OpAdd(),
			  stream, err);
}

extern "C" zb_status zb_grad_acc_bf16(uint16_t *acc, const uint16_t *g, size_t n,
				      zb_stream stream, zb_error *err)
{
	return launch_ew2("zb_grad_acc_bf16", (bf16 *)acc, (const bf16 *)acc, (const bf16 *)g, n,
			  OpAdd(), stream, err);
}

extern "C" zb_status zb_cast_f32_bf16(uint16_t *out, const float *in, size_t n, zb_stream stream,
				      zb_error *err)
{
	return launch_ew1("zb_cast_f32_bf16", (bf16 *)out, in, n, OpIdentity(), stream, err);
}

extern "C" zb_status zb_cast_bf16_f32(float *out, const uint16_t *in, size_t n, zb_stream stream,
				      zb_error *err)
{
	return launch_ew1("zb_cast_bf16_f32", out, (const bf16 *)in, n, OpIdentity(), stream, err);
}

/* ---- SwiGLU ---------------------------------------------------------------------- */

__device__ __forceinline__ float sigmoidf_(float g)
{
	return 1.0f / (1.0f + expf(-g));
}

/* Element e of [rows, ffn]: row r = e / ffn, column j; gate at in[r, j], up at
 * in[r, ffn + j]. V = 8 needs ffn % 8 == 0 and aligned buffers. */
template <int V>
__global__ void swiglu_fwd_kernel(bf16 *out, const bf16 *in, size_t total, int ffn)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total / V; i += stride) {
		size_t e = i * V, r = e / ffn, j = e - r * ffn;
		const bf16 *row = in + r * 2 * ffn;
		float g[V], u[V], y[V];
		ldv<V>(row + j, g);
		ldv<V>(row + ffn + j, u);
#pragma unroll
		for (int k = 0; k < V; k++)
			y[k] = g[k] * sigmoidf_(g[k]) * u[k];
		stv<V>(out + e, y);
	}
}

template <int V>
__global__ void swiglu_bwd_kernel(bf16 *din, const bf16 *dout, const bf16 *in, size_t total,
				  int ffn)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total / V; i += stride) {
		size_t e = i * V, r = e / ffn, j = e - r * ffn;
		const bf16 *row = in + r * 2 * ffn;
		bf16 *drow = din + r * 2 * ffn;
		float g[V], u[V], d[V], dg[V], du[V];
		ldv<V>(row + j, g);
		ldv<V>(row + ffn + j, u);
		ldv<V>(dout + e, d);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float s = sigmoidf_(g[k]);
			float silu = g[k] * s;
			dg[k] = d[k] * u[k] * (s * (1.0f + g[k] * (1.0f - s)));
			du[k] = d[k] * silu;
		}
		stv<V>(drow + j, dg);
		stv<V>(drow + ffn + j, du);
	}
}

extern "C" zb_status zb_swiglu_fwd(uint16_t *out, const uint16_t *in, int rows, int ffn,
				   zb_stream stream, zb_error *err)
{
	const char *fn = "zb_swiglu_fwd";
	zb_status st = check_rows(fn, rows, ffn, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(out, err, fn);
	CHECK_PTR(in, err, fn);
	size_t total = (size_t)rows * ffn;
	if (ffn % 8 == 0 && aligned16(out) && aligned16(in))
		swiglu_fwd_kernel<8><<<grid_for(total / 8, 256), 256, 0, stream>>>(
			(bf16 *)out, (const bf16 *)in, total, ffn);
	else
		swiglu_fwd_kernel<1><<<grid_for(total, 256), 256, 0, stream>>>(
			(bf16 *)out, (const bf16 *)in, total, ffn);
	ZB_CUDA_LAUNCHED(err, "swiglu_fwd");
	return ZB_OK;
}

extern "C" zb_status zb_swiglu_bwd(uint16_t *din, const uint16_t *dout, const uint16_t *in,
				   int rows, int ffn, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_swiglu_bwd";
	zb_status st = check_rows(fn, rows, ffn, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(din, err, fn);
	CHECK_PTR(dout, err, fn);
	CHECK_PTR(in, err, fn);
	size_t total = (size_t)rows * ffn;
	if (ffn % 8 == 0 && aligned16(din) && aligned16(dout) && aligned16(in))
		swiglu_bwd_kernel<8><<<grid_for(total / 8, 256), 256, 0, stream>>>(
			(bf16 *)din, (const bf16 *)dout, (const bf16 *)in, total, ffn);
	else
		swiglu_bwd_kernel<1><<<grid_for(total, 256), 256, 0, stream>>>(
			(bf16 *)din, (const bf16 *)dout, (const bf16 *)in, total, ffn);
	ZB_CUDA_LAUNCHED(err, "swiglu_bwd");
	return ZB_OK;
}

/* ---- attention softmax: one warp per row ----------------------------------------- */

template <int V>
__global__ void __launch_bounds__(ROW_WARPS * 32)
	softmax_fwd_kernel(bf16 *sc, size_t nrows, int s, float scale, int causal)
{
	size_t row = (size_t)blockIdx.x * ROW_WARPS + (threadIdx.x >> 5);
	int lane = threadIdx.x & 31;
	if (row >= nrows)
		return;
	int valid = causal ? (int)(row % s) + 1 : s;
	bf16 *p = sc + row * s;
	float m = -INFINITY, sum = 0.0f;
	for (int c = lane * V; c < valid; c += 32 * V) { /* masked chunks are never read */
		float f[V];
		ldv<V>(p + c, f);
#pragma unroll
		for (int k = 0; k < V; k++)
			if (c + k < valid)
				lse_add(m, sum, f[k] * scale);
	}
	warp_lse(m, sum);
	float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
	for (int c = lane * V; c < s; c += 32 * V) {
		float f[V], y[V];
		if (c < valid)
			ldv<V>(p + c, f);
#pragma unroll
		for (int k = 0; k < V; k++)
			y[k] = (c + k < valid && m != -INFINITY) ? expf(f[k] * scale - m) * inv : 0.0f;
		stv<V>(p + c, y);
	}
}

template <int V>
__global__ void __launch_bounds__(ROW_WARPS * 32)
	softmax_bwd_kernel(bf16 *dx, const bf16 *dp, const bf16 *pr, size_t nrows, int s,
			   float scale, int causal)
{
	size_t row = (size_t)blockIdx.x * ROW_WARPS + (threadIdx.x >> 5);
	int lane = threadIdx.x & 31;
	if (row >= nrows)
		return;
	int valid = causal ? (int)(row % s) + 1 : s;
	size_t base = row * s;
	float dot = 0.0f;
	for (int c = lane * V; c < valid; c += 32 * V) {
		float a[V], b[V];
		ldv<V>(pr + base + c, a);
		ldv<V>(dp + base + c, b);
#pragma unroll
		for (int k = 0; k < V; k++)
			if (c + k < valid)
				dot += a[k] * b[k];
	}
	dot = warp_sum(dot);
	for (int c = lane * V; c < s; c += 32 * V) {
		float a[V], b[V], y[V];
		if (c < valid) {
			ldv<V>(pr + base + c, a);
			ldv<V>(dp + base + c, b);
		}
#pragma unroll
		for (int k = 0; k < V; k++)
			y[k] = c + k < valid ? scale * a[k] * (b[k] - dot) : 0.0f;
		stv<V>(dx + base + c, y);
	}
}

static zb_status check_softmax(const char *fn, int bh, int s, float scale, zb_error *err)
{
	CHECK_ARG(bh >= 0, err, "%s: invalid bh %d", fn, bh);
	CHECK_ARG(s >= 1, err, "%s: invalid s %d", fn, s);
	CHECK_ARG(isfinite(scale), err, "%s: invalid scale %g", fn, scale);
	return ZB_OK;
}

extern "C" zb_status zb_softmax_fwd(uint16_t *scores, int bh, int s, float scale, int causal,
				    zb_stream stream, zb_error *err)
{
	const char *fn = "zb_softmax_fwd";
	zb_status st = check_softmax(fn, bh, s, scale, err);
	if (st != ZB_OK || bh == 0)
		return st;
	CHECK_PTR(scores, err, fn);
	size_t nrows = (size_t)bh * s;
	size_t blocks = (nrows + ROW_WARPS - 1) / ROW_WARPS;
	CHECK_ARG(blocks <= 0x7fffffffu, err, "%s: too many rows %zu", fn, nrows);
	if (s % 8 == 0 && aligned16(scores))
		softmax_fwd_kernel<8><<<(unsigned)blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)scores, nrows, s, scale, causal);
	else
		softmax_fwd_kernel<1><<<(unsigned)blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)scores, nrows, s, scale, causal);
	ZB_CUDA_LAUNCHED(err, "softmax_fwd");
	return ZB_OK;
}

extern "C" zb_status zb_softmax_bwd(uint16_t *dx, const uint16_t *dp, const uint16_t *p, int bh,
				    int s, float scale, int causal, zb_stream stream,
				    zb_error *err)
{
	const char *fn = "zb_softmax_bwd";
	zb_status st = check_softmax(fn, bh, s, scale, err);
	if (st != ZB_OK || bh == 0)
		return st;
	CHECK_PTR(dx, err, fn);
	CHECK_PTR(dp, err, fn);
	CHECK_PTR(p, err, fn);
	size_t nrows = (size_t)bh * s;
	size_t blocks = (nrows + ROW_WARPS - 1) / ROW_WARPS;
	CHECK_ARG(blocks <= 0x7fffffffu, err, "%s: too many rows %zu", fn, nrows);
	if (s % 8 == 0 && aligned16(dx) && aligned16(dp) && aligned16(p))
		softmax_bwd_kernel<8><<<(unsigned)blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dp, (const bf16 *)p, nrows, s, scale, causal);
	else
		softmax_bwd_kernel<1><<<(unsigned)blocks, ROW_WARPS * 32, 0, stream>>>(
			(bf16 *)dx, (const bf16 *)dp, (const bf16 *)p, nrows, s, scale, causal);
	ZB_CUDA_LAUNCHED(err, "softmax_bwd");
	return ZB_OK;
}

/* ---- embedding ------------------------------------------------------------------- */

template <int V>
__global__ void embed_fwd_kernel(bf16 *out, const int32_t *ids, const bf16 *wte, const bf16 *wpe,
				 size_t total, int seq, int cols, int vocab)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total / V; i += stride) {
		size_t e = i * V, r = e / cols, c = e - r * cols;
		int id = ids[r];
		float f[V], q[V];
		if (id >= 0 && id < vocab) {
			ldv<V>(wte + (size_t)id * cols + c, f);
		} else {
#pragma unroll
			for (int k = 0; k < V; k++)
				f[k] = 0.0f;
		}
		if (wpe) {
			ldv<V>(wpe + (r % seq) * cols + c, q);
#pragma unroll
			for (int k = 0; k < V; k++)
				f[k] += q[k];
		}
		stv<V>(out + e, f);
	}
}

/* Scatter-add of dout rows into dwte[ids[r]] (and dwpe[r % seq]). T float: fp32
 * atomics; T bf16: bf16x2 atomics when V = 8 (pairs), bf16 atomics when V = 1. */
template <int V, class T>
__global__ void embed_bwd_kernel(T *dwte, T *dwpe, const int32_t *ids, const bf16 *dout,
				 size_t total, int seq, int cols, int vocab)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total / V; i += stride) {
		size_t e = i * V, r = e / cols, c = e - r * cols;
		int id = ids[r];
		float d[V];
		ldv<V>(dout + e, d);
		T *dst[2] = {id >= 0 && id < vocab ? dwte + (size_t)id * cols + c : (T *)NULL,
			     dwpe ? dwpe + (r % seq) * cols + c : (T *)NULL};
#pragma unroll
		for (int t = 0; t < 2; t++) {
			if (!dst[t])
				continue;
			if constexpr (sizeof(T) == 4) {
#pragma unroll
				for (int k = 0; k < V; k++)
					atomicAdd((float *)dst[t] + k, d[k]);
			} else if constexpr (V == 8) {
#pragma unroll
				for (int k = 0; k < V; k += 2)
					atomicAdd((__nv_bfloat162 *)dst[t] + k / 2,
						  __floats2bfloat162_rn(d[k], d[k + 1]));
			} else {
				atomicAdd((bf16 *)dst[t], __float2bfloat16_rn(d[0]));
			}
		}
	}
}

static zb_status check_embed(const char *fn, int rows, int seq, int cols, int vocab,
			     zb_error *err)
{
	CHECK_ARG(rows >= 0, err, "%s: invalid rows %d", fn, rows);
	CHECK_ARG(seq >= 1, err, "%s: invalid seq %d", fn, seq);
	CHECK_ARG(cols >= 1, err, "%s: invalid cols %d", fn, cols);
	CHECK_ARG(vocab >= 1, err, "%s: invalid vocab %d", fn, vocab);
	return ZB_OK;
}

extern "C" zb_status zb_embed_fwd(uint16_t *out, const int32_t *ids, const uint16_t *wte,
				  const uint16_t *wpe, int rows, int seq, int cols, int vocab,
				  zb_stream stream, zb_error *err)
{
	const char *fn = "zb_embed_fwd";
	zb_status st = check_embed(fn, rows, seq, cols, vocab, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(out, err, fn);
	CHECK_PTR(ids, err, fn);
	CHECK_PTR(wte, err, fn);
	size_t total = (size_t)rows * cols;
	if (cols % 8 == 0 && aligned16(out) && aligned16(wte) && (!wpe || aligned16(wpe)))
		embed_fwd_kernel<8><<<grid_for(total / 8, 256), 256, 0, stream>>>(
			(bf16 *)out, ids, (const bf16 *)wte, (const bf16 *)wpe, total, seq, cols,
			vocab);
	else
		embed_fwd_kernel<1><<<grid_for(total, 256), 256, 0, stream>>>(
			(bf16 *)out, ids, (const bf16 *)wte, (const bf16 *)wpe, total, seq, cols,
			vocab);
	ZB_CUDA_LAUNCHED(err, "embed_fwd");
	return ZB_OK;
}

extern "C" zb_status zb_embed_bwd_f32(float *dwte, float *dwpe, const int32_t *ids,
				      const uint16_t *dout, int rows, int seq, int cols, int vocab,
				      zb_stream stream, zb_error *err)
{
	const char *fn = "zb_embed_bwd_f32";
	zb_status st = check_embed(fn, rows, seq, cols, vocab, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(dwte, err, fn);
	CHECK_PTR(ids, err, fn);
	CHECK_PTR(dout, err, fn);
	size_t total = (size_t)rows * cols;
	if (cols % 8 == 0 && aligned16(dout))
		embed_bwd_kernel<8, float><<<grid_for(total / 8, 256), 256, 0, stream>>>(
			dwte, dwpe, ids, (const bf16 *)dout, total, seq, cols, vocab);
	else
		embed_bwd_kernel<1, float><<<grid_for(total, 256), 256, 0, stream>>>(
			dwte, dwpe, ids, (const bf16 *)dout, total, seq, cols, vocab);
	ZB_CUDA_LAUNCHED(err, "embed_bwd_f32");
	return ZB_OK;
}

extern "C" zb_status zb_embed_bwd_bf16(uint16_t *dwte, uint16_t *dwpe, const int32_t *ids,
				       const uint16_t *dout, int rows, int seq, int cols,
				       int vocab, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_embed_bwd_bf16";
	zb_status st = check_embed(fn, rows, seq, cols, vocab, err);
	if (st != ZB_OK || rows == 0)
		return st;
	CHECK_PTR(dwte, err, fn);
	CHECK_PTR(ids, err, fn);
	CHECK_PTR(dout, err, fn);
	size_t total = (size_t)rows * cols;
	/* pairs need 4-byte alignment of every row start in the gradients */
	if (cols % 8 == 0 && aligned16(dout) && ((uintptr_t)dwte & 3) == 0 &&
	    ((uintptr_t)dwpe & 3) == 0)
		embed_bwd_kernel<8, bf16><<<grid_for(total / 8, 256), 256, 0, stream>>>(
			(bf16 *)dwte, (bf16 *)dwpe, ids, (const bf16 *)dout, total, seq, cols,
			vocab);
	else
		embed_bwd_kernel<1, bf16><<<grid_for(total, 256), 256, 0, stream>>>(
			(bf16 *)dwte, (bf16 *)dwpe, ids, (const bf16 *)dout, total, seq, cols,
			vocab);
	ZB_CUDA_LAUNCHED(err, "embed_bwd_bf16");
	return ZB_OK;
}

/* ---- cross-entropy: one block per row -------------------------------------------- */

#define CE_THREADS 512

template <int V>
__global__ void __launch_bounds__(CE_THREADS)
	cross_entropy_kernel(bf16 *dlogits, float *losses, const bf16 *logits,
			     const int32_t *targets, int vocab, float grad_scale)
{
	__shared__ float sm[32], ss[32];
	size_t row = blockIdx.x;
	const bf16 *x = logits + row * vocab;
	int t = targets[row], tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	bool valid = t >= 0 && t < vocab;
	/* read the target's logit before any thread can overwrite it (dlogits may be
	 * logits): the barrier below orders this read before every write */
	float xt = (tid == 0 && valid) ? __bfloat162float(x[t]) : 0.0f;
	float m = -INFINITY, s = 0.0f;
	for (int c = tid * V; c < vocab; c += CE_THREADS * V) {
		float f[V];
		ldv<V>(x + c, f);
#pragma unroll
		for (int k = 0; k < V; k++)
			lse_add(m, s, f[k]);
	}
	warp_lse(m, s);
	if (lane == 0) {
		sm[warp] = m;
		ss[warp] = s;
	}
	__syncthreads();
	if (warp == 0) {
		m = lane < CE_THREADS / 32 ? sm[lane] : -INFINITY;
		s = lane < CE_THREADS / 32 ? ss[lane] : 0.0f;
		warp_lse(m, s);
		if (lane == 0) {
			sm[0] = m;
			ss[0] = s;
		}
	}
	__syncthreads();
	m = sm[0];
	s = ss[0];
	if (tid == 0)
		losses[row] = valid ? (m + logf(s)) - xt : 0.0f;
	if (!dlogits)
		return;
	float inv = 1.0f / s;
	bf16 *dx = dlogits + row * vocab;
	for (int c = tid * V; c < vocab; c += CE_THREADS * V) {
		float f[V], y[V];
		ldv<V>(x + c, f);
#pragma unroll
		for (int k = 0; k < V; k++) {
			float p = expf(f[k] - m) * inv;
			y[k] = valid ? grad_scale * (p - (c + k == t ? 1.0f : 0.0f)) : 0.0f;
		}
		stv<V>(dx + c, y);
	}
}

/* *loss_mean = mean of losses over rows with a valid target; one block, sums in
 * double so the order of a few thousand additions does not matter. */
__global__ void __launch_bounds__(1024)
	loss_mean_kernel(float *loss_mean, const float *losses, const int32_t *targets, int rows,
			 int vocab)
{
	__shared__ double ssum[32];
	__shared__ int scnt[32];
	double sum = 0.0;
	int cnt = 0;
	for (int r = threadIdx.x; r < rows; r += blockDim.x) {
		int t = targets[r];
		if (t >= 0 && t < vocab) {
			sum += losses[r];
			cnt++;
		}
	}
	for (int o = 16; o > 0; o >>= 1) {
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
		cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
	}
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	if (lane == 0) {
		ssum[warp] = sum;
		scnt[warp] = cnt;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		sum = 0.0;
		cnt = 0;
		for (int w = 0; w < (int)(blockDim.x >> 5); w++) {
			sum += ssum[w];
			cnt += scnt[w];
		}
		*loss_mean = cnt ? (float)(sum / cnt) : 0.0f;
	}
}

extern "C" zb_status zb_cross_entropy(uint16_t *dlogits, float *losses, float *loss_mean,
				      const uint16_t *logits, const int32_t *targets, int rows,
				      int vocab, float grad_scale, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_cross_entropy";
	CHECK_ARG(rows >= 0, err, "%s: invalid rows %d", fn, rows);
	CHECK_ARG(vocab >= 1, err, "%s: invalid vocab %d", fn, vocab);
	CHECK_ARG(isfinite(grad_scale), err, "%s: invalid grad_scale %g", fn, grad_scale);
	if (rows == 0) {
		if (loss_mean)
			ZB_CUDA_TRY(err, cudaMemsetAsync(loss_mean, 0, sizeof(float), stream));
		return ZB_OK;
	}
	CHECK_PTR(losses, err, fn);
	CHECK_PTR(logits, err, fn);
	CHECK_PTR(targets, err, fn);
	if (vocab % 8 == 0 && aligned16(logits) && (!dlogits || aligned16(dlogits)))
		cross_entropy_kernel<8><<<(unsigned)rows, CE_THREADS, 0, stream>>>(
			(bf16 *)dlogits, losses, (const bf16 *)logits, targets, vocab, grad_scale);
	else
		cross_entropy_kernel<1><<<(unsigned)rows, CE_THREADS, 0, stream>>>(
			(bf16 *)dlogits, losses, (const bf16 *)logits, targets, vocab, grad_scale);
	ZB_CUDA_LAUNCHED(err, "cross_entropy");
	if (loss_mean) {
		loss_mean_kernel<<<1, 1024, 0, stream>>>(loss_mean, losses, targets, rows, vocab);
		ZB_CUDA_LAUNCHED(err, "loss_mean");
	}
	return ZB_OK;
}

/* ---- copy ------------------------------------------------------------------------ */

__global__ void copy16_kernel(uint4 *dst, const uint4 *src, size_t n16)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += stride)
		__stcs(dst + i, __ldcs(src + i));
}

__global__ void copy1_kernel(unsigned char *dst, const unsigned char *src, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		dst[i] = src[i];
}

extern "C" zb_status zb_copy_kernel(void *dst, const void *src, size_t bytes, zb_stream stream,
				    zb_error *err)
{
	if (bytes == 0)
		return ZB_OK;
	CHECK_ARG(dst && src, err, "zb_copy_kernel: missing buffer");
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;
	size_t head = 0;
	if ((((uintptr_t)d ^ (uintptr_t)s) & 15) == 0) /* same phase: peel to alignment */
		head = (16 - ((uintptr_t)d & 15)) & 15;
	else
		head = bytes; /* phases differ: bytes only */
	if (head > bytes)
		head = bytes;
	size_t n16 = (bytes - head) / 16, tail = bytes - head - n16 * 16;
	if (head) {
		copy1_kernel<<<grid_for(head, 256), 256, 0, stream>>>(d, s, head);
		ZB_CUDA_LAUNCHED(err, "copy1");
	}
	if (n16) {
		copy16_kernel<<<grid_for(n16, 256), 256, 0, stream>>>((uint4 *)(d + head),
								   (const uint4 *)(s + head), n16);
		ZB_CUDA_LAUNCHED(err, "copy16");
	}
	if (tail) {
		size_t off = head + n16 * 16;
		copy1_kernel<<<grid_for(tail, 256), 256, 0, stream>>>(d + off, s + off, tail);
		ZB_CUDA_LAUNCHED(err, "copy1");
	}
	return ZB_OK;
}

/* ---- GPU Adam -------------------------------------------------------------------- */

template <class T> __device__ __forceinline__ float half_to_f(T h);
template <> __device__ __forceinline__ float half_to_f<bf16>(bf16 h)
{
	return __bfloat162float(h);
}
template <> __device__ __forceinline__ float half_to_f<__half>(__half h)
{
	return __half2float(h);
}
template <class T> __device__ __forceinline__ T f_to_half(float f);
template <> __device__ __forceinline__ bf16 f_to_half<bf16>(float f)
{
	return __float2bfloat16_rn(f);
}
template <> __device__ __forceinline__ __half f_to_half<__half>(float f)
{
	return __float2half_rn(f);
}

/* One parameter, in exactly gpu_adam.h's order; every operation rounds once. */
__device__ __forceinline__ void adam_one(float &p, float &m, float &v, float g16,
					 const zb_gpu_adam_coeffs &c)
{
	float g = __fmul_rn(g16, c.inv_scale);
	m = __fmaf_rn(c.b1, m, __fmul_rn(c.c1, g));
	v = __fmaf_rn(c.b2, v, __fmul_rn(c.c2, __fmul_rn(g, g)));
	float d = __fadd_rn(__fsqrt_rn(__fmul_rn(v, c.ibc2)), c.eps);
	p = __fmaf_rn(-c.step, __fdiv_rn(m, d), __fmaf_rn(-c.decay, p, p));
}

template <class TG, class TP>
__device__ __forceinline__ void adam_scalar(float *p, float *m, float *v, TP *p16, const TG *g16,
					    size_t i, const zb_gpu_adam_coeffs &c)
{
	float pp = p[i], mm = m[i], vv = v[i];
	adam_one(pp, mm, vv, half_to_f<TG>(g16[i]), c);
	p[i] = pp;
	m[i] = mm;
	v[i] = vv;
	if (p16)
		p16[i] = f_to_half<TP>(pp);
}

/* Elements [head, head + 4 nvec) in groups of 4: three float4 and one 8-byte
 * load per group, all in flight before the first use, streaming hints (the data
 * is used once); the caller checked the alignment. The few elements of [0, head)
 * and [head + 4 nvec, n) one by one. nvec = 0, head = n: everything one by one.
 * Measured on the H200 (scratch variants, 2^27 and 2^28 parameters): 4 per thread
 * at 38 registers (6 blocks of 256 per SM) on a grid as large as the work gave
 * 148-150 Gparam/s (4.15 TB/s); 8 per thread (52 registers) 140, and either on a
 * persistent grid of one wave 124-139. Results are bitwise the same in all. */
template <class TG, class TP>
__global__ void __launch_bounds__(256)
	adam_kernel(float *__restrict__ p, float *__restrict__ m, float *__restrict__ v,
		    TP *__restrict__ p16, const TG *__restrict__ g16, size_t head, size_t nvec,
		    size_t n, zb_gpu_adam_coeffs c)
{
	size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t tail0 = head + 4 * nvec, nscalar = head + (n - tail0);
	for (size_t i = tid; i < nscalar; i += stride)
		adam_scalar<TG, TP>(p, m, v, p16, g16, i < head ? i : tail0 + (i - head), c);

	float4 *p4 = reinterpret_cast<float4 *>(p + head);
	float4 *m4 = reinterpret_cast<float4 *>(m + head);
	float4 *v4 = reinterpret_cast<float4 *>(v + head);
	const uint2 *g4 = reinterpret_cast<const uint2 *>(g16 + head);
	uint2 *q4 = p16 ? reinterpret_cast<uint2 *>(p16 + head) : NULL;
	for (size_t i = tid; i < nvec; i += stride) {
		uint2 gq = __ldcs(g4 + i);
		float4 pa = __ldcs(p4 + i), ma = __ldcs(m4 + i), va = __ldcs(v4 + i);
		float P[4] = {pa.x, pa.y, pa.z, pa.w};
		float M[4] = {ma.x, ma.y, ma.z, ma.w};
		float W[4] = {va.x, va.y, va.z, va.w};
		const TG *gh = reinterpret_cast<const TG *>(&gq);
		uint2 qq;
		TP *qh = reinterpret_cast<TP *>(&qq);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			adam_one(P[k], M[k], W[k], half_to_f<TG>(gh[k]), c);
			qh[k] = f_to_half<TP>(P[k]);
		}
		__stcs(p4 + i, make_float4(P[0], P[1], P[2], P[3]));
		__stcs(m4 + i, make_float4(M[0], M[1], M[2], M[3]));
		__stcs(v4 + i, make_float4(W[0], W[1], W[2], W[3]));
		if (q4)
			__stcs(q4 + i, qq);
	}
}

extern "C" zb_status zb_gpu_adam_coeffs_make(const zb_adam_params *p, zb_gpu_adam_coeffs *c,
					     zb_error *err)
{
	const char *fn = "zb_gpu_adam";
	CHECK_ARG(p && c, err, "%s: missing parameters", fn);
	CHECK_ARG(isfinite(p->lr) && p->lr >= 0, err, "%s: invalid lr %g", fn, p->lr);
	CHECK_ARG(p->beta1 >= 0 && p->beta1 < 1, err, "%s: invalid beta1 %g (want [0, 1))", fn,
		  p->beta1);
	CHECK_ARG(p->beta2 >= 0 && p->beta2 < 1, err, "%s: invalid beta2 %g (want [0, 1))", fn,
		  p->beta2);
	CHECK_ARG(isfinite(p->eps) && p->eps >= 0, err, "%s: invalid eps %g", fn, p->eps);
	CHECK_ARG(isfinite(p->weight_decay) && p->weight_decay >= 0, err,
		  "%s: invalid weight_decay %g", fn, p->weight_decay);
	CHECK_ARG(p->step >= 1, err, "%s: invalid step %lld (the first update is step 1)", fn,
		  (long long)p->step);
	CHECK_ARG(isfinite(p->grad_scale) && p->grad_scale > 0, err, "%s: invalid grad_scale %g",
		  fn, p->grad_scale);
	CHECK_ARG(p->grad_type == ZB_HALF_BF16 || p->grad_type == ZB_HALF_FP16, err,
		  "%s: unknown grad_type %d", fn, (int)p->grad_type);
	CHECK_ARG(p->param_type == ZB_HALF_BF16 || p->param_type == ZB_HALF_FP16, err,
		  "%s: unknown param_type %d", fn, (int)p->param_type);
	double t = (double)p->step;
	c->b1 = (float)p->beta1;
	c->b2 = (float)p->beta2;
	c->c1 = (float)(1.0 - p->beta1);
	c->c2 = (float)(1.0 - p->beta2);
	c->step = (float)(p->lr / (1.0 - pow(p->beta1, t)));
	c->ibc2 = (float)(1.0 / (1.0 - pow(p->beta2, t)));
	c->decay = (float)(p->lr * p->weight_decay);
	c->eps = (float)p->eps;
	c->inv_scale = (float)(1.0 / p->grad_scale);
	return ZB_OK;
}

template <class TG, class TP>
static zb_status launch_adam(const zb_gpu_adam_coeffs *c, const zb_adam_buffers *b, size_t n,
			     zb_stream stream, zb_error *err)
{
	/* the vector path needs a head h < 4 after which the fp32 arrays are 16-byte and
	 * the 16-bit ones 8-byte aligned: true whenever their element offsets agree
	 * modulo 4 (any slice of one flat parameter vector) */
	size_t head = n, nvec = 0;
	for (size_t h = 0; h < 4 && h <= n; h++) {
		if (aligned16(b->master + h) && aligned16(b->m + h) && aligned16(b->v + h) &&
		    (((uintptr_t)(b->grad + h)) & 7) == 0 &&
		    (!b->param16 || (((uintptr_t)(b->param16 + h)) & 7) == 0)) {
			head = h;
			nvec = (n - h) / 4;
			break;
		}
	}
	size_t nscalar = n - 4 * nvec;
	size_t items = nvec > nscalar ? nvec : nscalar;
	/* one group per thread: a grid as large as the work (see adam_kernel) */
	size_t blocks = (items + 255) / 256;
	if (blocks > 0x7fffffffu)
		blocks = 0x7fffffffu;
	if (blocks < 1)
		blocks = 1;
	adam_kernel<TG, TP><<<(unsigned)blocks, 256, 0, stream>>>(
		b->master, b->m, b->v, (TP *)b->param16, (const TG *)b->grad, head, nvec, n, *c);
	return zb_cuda_launched_at(err, "gpu_adam", __FILE__, __LINE__);
}

extern "C" zb_status zb_gpu_adam_step_coeffs(const zb_gpu_adam_coeffs *c, zb_half grad_type,
					     zb_half param_type, const zb_adam_buffers *b,
					     int64_t n, zb_stream stream, zb_error *err)
{
	const char *fn = "zb_gpu_adam";
	CHECK_ARG(c && b, err, "%s: missing coefficients or buffers", fn);
	CHECK_ARG(n >= 0, err, "%s: invalid parameter count %lld", fn, (long long)n);
	if (n == 0)
		return ZB_OK;
	CHECK_ARG(b->grad && b->master && b->m && b->v, err,
		  "%s: missing buffer (grad, master, m and v are required)", fn);
	bool gb = grad_type == ZB_HALF_BF16, pb = param_type == ZB_HALF_BF16;
	CHECK_ARG(gb || grad_type == ZB_HALF_FP16, err, "%s: unknown grad_type %d", fn,
		  (int)grad_type);
	CHECK_ARG(pb || param_type == ZB_HALF_FP16, err, "%s: unknown param_type %d", fn,
		  (int)param_type);
	if (gb && pb)
		return launch_adam<bf16, bf16>(c, b, (size_t)n, stream, err);
	if (gb)
		return launch_adam<bf16, __half>(c, b, (size_t)n, stream, err);
	if (pb)
		return launch_adam<__half, bf16>(c, b, (size_t)n, stream, err);
	return launch_adam<__half, __half>(c, b, (size_t)n, stream, err);
}

extern "C" zb_status zb_gpu_adam_step(const zb_adam_params *p, const zb_adam_buffers *b,
				      int64_t n, zb_stream stream, zb_error *err)
{
	zb_gpu_adam_coeffs c;
	zb_status st = zb_gpu_adam_coeffs_make(p, &c, err);
	if (st != ZB_OK)
		return st;
	return zb_gpu_adam_step_coeffs(&c, p->grad_type, p->param_type, b, n, stream, err);
}

/* ---- micro-benchmarks ------------------------------------------------------------ */

#define BENCH_WARMUP 3

/* CUDA events time in float milliseconds; the median is zbench's one (common/stats.h). */
static float median_ms(const float *t, int n)
{
	double *v = (double *)zb_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *v);
	for (int i = 0; i < n; i++)
		v[i] = t[i];
	float m = (float)zb_median(v, n);
	free(v);
	return m;
}

/* What every benchmark needs: a stream, two events, a table of times. */
typedef struct bench_ctx {
	cudaStream_t s;
	cudaEvent_t e0, e1;
	float *ms;
} bench_ctx;

static zb_status bench_open(bench_ctx *b, int repeats, zb_error *err)
{
	memset(b, 0, sizeof *b);
	CHECK_ARG(repeats >= 1, err, "invalid repeats %d", repeats);
	b->ms = (float *)zb_xcalloc((size_t)repeats, sizeof *b->ms);
	ZB_CUDA_TRY(err, cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
	ZB_CUDA_TRY(err, cudaEventCreate(&b->e0));
	ZB_CUDA_TRY(err, cudaEventCreate(&b->e1));
	return ZB_OK;
}

static void bench_close(bench_ctx *b)
{
	if (b->s)
		(void)cudaStreamSynchronize(b->s);
	if (b->e0)
		(void)cudaEventDestroy(b->e0);
	if (b->e1)
		(void)cudaEventDestroy(b->e1);
	if (b->s)
		(void)cudaStreamDestroy(b->s);
	free(b->ms);
	(void)cudaGetLastError();
}

static zb_status bench_time_start(bench_ctx *b, zb_error *err)
{
	ZB_CUDA_TRY(err, cudaEventRecord(b->e0, b->s));
	return ZB_OK;
}

static zb_status bench_time_stop(bench_ctx *b, int i, zb_error *err)
{
	ZB_CUDA_TRY(err, cudaEventRecord(b->e1, b->s));
	ZB_CUDA_TRY(err, cudaEventSynchronize(b->e1));
	ZB_CUDA_TRY(err, cudaEventElapsedTime(&b->ms[i], b->e0, b->e1));
	return ZB_OK;
}

extern "C" zb_status zb_bench_gpu_adam(int64_t params, int repeats, double *gparam_per_s,
				       zb_error *err)
{
	CHECK_ARG(params >= 1, err, "zb_bench_gpu_adam: invalid params %lld", (long long)params);
	CHECK_ARG(gparam_per_s, err, "zb_bench_gpu_adam: missing result");
	size_t n = (size_t)params;
	zb_status st;
	float *master = NULL, *m = NULL, *v = NULL;
	uint16_t *g = NULL, *p16 = NULL;
	bench_ctx b;
	st = bench_open(&b, repeats, err);
	if (st != ZB_OK)
		goto out;
	ZB_CUDA_MALLOC_GOTO(st, err, &master, n * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &m, n * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &v, n * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &g, n * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &p16, n * 2, out);
	if ((st = zb_fill_uniform_f32(master, n, 1, -1.0f, 1.0f, b.s, err)) != ZB_OK ||
	    (st = zb_fill_uniform_f32(m, n, 2, -1e-3f, 1e-3f, b.s, err)) != ZB_OK ||
	    (st = zb_fill_uniform_f32(v, n, 3, 0.0f, 1e-6f, b.s, err)) != ZB_OK ||
	    (st = zb_fill_uniform_bf16(g, n, 4, -1e-2f, 1e-2f, b.s, err)) != ZB_OK)
		goto out;
	{
		zb_adam_params ap;
		memset(&ap, 0, sizeof ap);
		ap.lr = 1e-3;
		ap.beta1 = 0.9;
		ap.beta2 = 0.999;
		ap.eps = 1e-8;
		ap.weight_decay = 0.01;
		ap.grad_scale = 1.0;
		ap.grad_type = ZB_HALF_BF16;
		ap.param_type = ZB_HALF_BF16;
		zb_adam_buffers bufs = {g, master, m, v, p16};
		for (int i = 0; i < BENCH_WARMUP + repeats; i++) {
			ap.step = i + 1;
			if (i >= BENCH_WARMUP && (st = bench_time_start(&b, err)) != ZB_OK)
				goto out;
			if ((st = zb_gpu_adam_step(&ap, &bufs, params, b.s, err)) != ZB_OK)
				goto out;
			if (i >= BENCH_WARMUP &&
			    (st = bench_time_stop(&b, i - BENCH_WARMUP, err)) != ZB_OK)
				goto out;
		}
		ZB_CUDA_GOTO(st, err, cudaStreamSynchronize(b.s), out);
		float med = median_ms(b.ms, repeats);
		*gparam_per_s = med > 0 ? (double)params / (med * 1e-3) / 1e9 : 0.0;
	}
out:
	bench_close(&b);
	cudaFree(master);
	cudaFree(m);
	cudaFree(v);
	cudaFree(g);
	cudaFree(p16);
	return st;
}

extern "C" zb_status zb_bench_gemm(int m, int n, int k, int repeats, double *tflops,
				   zb_error *err)
{
	CHECK_ARG(m >= 1 && n >= 1 && k >= 1, err, "zb_bench_gemm: invalid shape %dx%dx%d", m, n,
		  k);
	CHECK_ARG(tflops, err, "zb_bench_gemm: missing result");
	zb_status st;
	uint16_t *a = NULL, *bm = NULL, *c = NULL;
	zb_gemm *gm = NULL;
	bench_ctx b;
	st = bench_open(&b, repeats, err);
	if (st != ZB_OK)
		goto out;
	ZB_CUDA_MALLOC_GOTO(st, err, &a, (size_t)m * k * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &bm, (size_t)k * n * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &c, (size_t)m * n * 2, out);
	if ((st = zb_fill_uniform_bf16(a, (size_t)m * k, 11, -1.0f, 1.0f, b.s, err)) != ZB_OK ||
	    (st = zb_fill_uniform_bf16(bm, (size_t)k * n, 12, -1.0f, 1.0f, b.s, err)) != ZB_OK ||
	    (st = zb_gemm_create(&gm, err)) != ZB_OK)
		goto out;
	{
		zb_gemm_op op;
		zb_gemm_op_init(&op, ZB_BF16, 0, 0, m, n, k);
		for (int i = 0; i < BENCH_WARMUP + repeats; i++) {
			if (i >= BENCH_WARMUP && (st = bench_time_start(&b, err)) != ZB_OK)
				goto out;
			if ((st = zb_gemm_run(gm, &op, a, bm, c, b.s, err)) != ZB_OK)
				goto out;
			if (i >= BENCH_WARMUP &&
			    (st = bench_time_stop(&b, i - BENCH_WARMUP, err)) != ZB_OK)
				goto out;
		}
		ZB_CUDA_GOTO(st, err, cudaStreamSynchronize(b.s), out);
		float med = median_ms(b.ms, repeats);
		*tflops = med > 0 ? 2.0 * m * n * (double)k / (med * 1e-3) / 1e12 : 0.0;
	}
out:
	bench_close(&b);
	if (gm) {
		zb_error e2;
		zb_status s2 = zb_gemm_destroy(gm, &e2);
		if (st == ZB_OK && s2 != ZB_OK) {
			st = s2;
			if (err)
				*err = e2;
		}
	}
	cudaFree(a);
	cudaFree(bm);
	cudaFree(c);
	return st;
}

extern "C" zb_status zb_bench_copy(size_t bytes, int repeats, double *gbytes_per_s,
				   zb_error *err)
{
	CHECK_ARG(bytes >= 1, err, "zb_bench_copy: invalid size %zu", bytes);
	CHECK_ARG(gbytes_per_s, err, "zb_bench_copy: missing result");
	zb_status st;
	float *src = NULL, *dst = NULL;
	size_t n = (bytes + 3) / 4;
	bench_ctx b;
	st = bench_open(&b, repeats, err);
	if (st != ZB_OK)
		goto out;
	ZB_CUDA_MALLOC_GOTO(st, err, &src, n * 4, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &dst, n * 4, out);
	if ((st = zb_fill_uniform_f32(src, n, 21, -1.0f, 1.0f, b.s, err)) != ZB_OK)
		goto out;
	for (int i = 0; i < BENCH_WARMUP + repeats; i++) {
		if (i >= BENCH_WARMUP && (st = bench_time_start(&b, err)) != ZB_OK)
			goto out;
		if ((st = zb_copy_kernel(dst, src, bytes, b.s, err)) != ZB_OK)
			goto out;
		if (i >= BENCH_WARMUP && (st = bench_time_stop(&b, i - BENCH_WARMUP, err)) != ZB_OK)
			goto out;
	}
	ZB_CUDA_GOTO(st, err, cudaStreamSynchronize(b.s), out);
	{
		float med = median_ms(b.ms, repeats);
		*gbytes_per_s = med > 0 ? 2.0 * (double)bytes / (med * 1e-3) / 1e9 : 0.0;
	}
out:
	bench_close(&b);
	cudaFree(src);
	cudaFree(dst);
	return st;
}
