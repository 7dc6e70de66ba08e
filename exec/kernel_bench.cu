/*
 * kernel_bench.cu - GPU micro-benchmarks (exec/kernels.h): GPU Adam, GEMM and the
 * device copy, each timed with CUDA events on a private stream after warm-up, the
 * median reported.
 */
#include "exec/kernels_common.cuh"

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
