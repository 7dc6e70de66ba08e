/*
 * gpu_adam.cu - the fused GPU Adam of exec/gpu_adam.h: a grid-stride loop over a
 * bucket, fp32 master, m and v, the 16-bit copy rounded once at the store, bitwise
 * equal to the CPU Adam (exec/cpu_adam.h).
 */
#include "exec/kernels_common.cuh"

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
 * persistent one-wave grid 124-139. Results are bitwise the same in all. */
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
