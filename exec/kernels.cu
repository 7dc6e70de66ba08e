/*
 * kernels.cu - the CUDA kernels behind exec/kernels.h: fills, norms, elementwise
 * work, SwiGLU, attention softmax, the device copy. Embedding and cross-entropy are
 * embed_loss.cu, the GPU Adam gpu_adam.cu, the micro-benchmarks kernel_bench.cu;
 * their shared helpers kernels_common.cuh.
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
#include "exec/kernels_common.cuh"

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
