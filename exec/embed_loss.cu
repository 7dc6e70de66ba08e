/*
 * embed_loss.cu - the embedding (forward gather, backward scatter-add) and the
 * cross-entropy loss (one block per row: an online max and sum in one pass, the
 * gradient in a second) of exec/kernels.h. See kernels.cu for how kernels are built.
 */
#include "exec/kernels_common.cuh"

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
