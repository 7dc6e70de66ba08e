/* calibrate_gpu_cuda.c - the GPU measurements of zbench calibrate; see calibrate.h. */
#include "bench/calibrate.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/cases.h"
#include "exec/copy_bench.h"
#include "exec/cpu_adam.h"
#include "exec/cuda_check.h"
#include "exec/executor.h"
#include "exec/gemm.h"
#include "exec/kernels.h"
#include "exec/threadpool.h"
#include "common/stats.h"

static void say(FILE *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE *log, const char *fmt, ...)
{
	if (!log)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(log, fmt, ap);
	va_end(ap);
	fflush(log);
}

/* ---- copies -------------------------------------------------------------------------- */

static zb_status copies(int pinned, size_t first, size_t top, int quick, zb_calib_copy *rows, int *n, FILE *log,
			zb_error *err)
{
	zb_copy_bench *b;
	zb_status st = zb_copy_bench_open(top, pinned, &b, err);
	if (st)
		return st;
	*n = 0;
	for (size_t sz = first; sz <= top && *n < ZB_CALIB_MAX_SIZES && !st; sz *= 4) {
		int reps = pinned ? (sz <= (1u << 20) ? (quick ? 50 : 200) : sz <= (64u << 20) ? (quick ? 5 : 20) : 5)
				  : (sz <= (16u << 20) ? (quick ? 5 : 20) : (quick ? 2 : 5));
		double h[2], d[2], both[2];
		if ((st = zb_copy_bench_time(b, sz, ZB_COPY_H2D, reps, h, err)) ||
		    (st = zb_copy_bench_time(b, sz, ZB_COPY_D2H, reps, d, err)) ||
		    (st = zb_copy_bench_time(b, sz, ZB_COPY_BOTH, reps, both, err)) ||
		    (st = zb_copy_bench_verify(b, sz, ZB_COPY_BOTH, err)))
			break;
		rows[*n] = (zb_calib_copy){ (double)sz, h[0], d[1], both[0], both[1] };
		say(log, "  %-8s %11zu B  h2d %7.2f  d2h %7.2f  both %7.2f / %7.2f GB/s\n", pinned ? "pinned" : "pageable",
		    sz, sz / h[0] / 1e9, sz / d[1] / 1e9, sz / both[0] / 1e9, sz / both[1] / 1e9);
		(*n)++;
	}
	zb_copy_bench_close(b);
	return st;
}

/* ---- GEMMs ------------------------------------------------------------------------------- */

static zb_status gemms(zb_calib_plan *plan, FILE *log, zb_error *err)
{
	size_t a = 1, bsz = 1, c = 1;
	for (int i = 0; i < plan->ngemm; i++) {
		const zb_calib_gemm *g = &plan->gemm[i];
		size_t na = (size_t)g->m * g->k * g->batch, nb = (size_t)g->k * g->n * g->batch,
		       nc = (size_t)g->m * g->n * g->batch;
		a = na > a ? na : a;
		bsz = nb > bsz ? nb : bsz;
		c = nc > c ? nc : c;
	}
	uint16_t *A = NULL, *B = NULL, *C = NULL;
	zb_gemm *gm = NULL;
	cudaStream_t s = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	zb_status st = ZB_OK;
	int reps = plan->quick ? 5 : 20;
	double *t = zb_xmalloc((size_t)reps * sizeof *t);
	ZB_CUDA_MALLOC_GOTO(st, err, &A, a * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &B, bsz * 2, out);
	ZB_CUDA_MALLOC_GOTO(st, err, &C, c * 2, out);
	ZB_CUDA_GOTO(st, err, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), out);
	ZB_CUDA_GOTO(st, err, cudaEventCreate(&e0), out);
	ZB_CUDA_GOTO(st, err, cudaEventCreate(&e1), out);
	if ((st = zb_fill_uniform_bf16(A, a, 31, -1, 1, s, err)) || (st = zb_fill_uniform_bf16(B, bsz, 32, -1, 1, s, err)) ||
	    (st = zb_gemm_create(&gm, err)))
		goto out;
	for (int i = 0; i < plan->ngemm && !st; i++) {
		zb_calib_gemm *g = &plan->gemm[i];
		zb_gemm_op op;
		zb_gemm_op_init(&op, ZB_BF16, g->transa, g->transb, g->m, g->n, g->k);
		op.batch = g->batch;
		if (g->batch > 1) {
			op.stride_a = (int64_t)g->m * g->k;
			op.stride_b = (int64_t)g->k * g->n;
			op.stride_c = (int64_t)g->m * g->n;
		}
		for (int r = -3; r < reps && !st; r++) {
			ZB_CUDA_GOTO(st, err, cudaEventRecord(e0, s), out);
			if ((st = zb_gemm_run(gm, &op, A, B, C, s, err)))
				break;
			ZB_CUDA_GOTO(st, err, cudaEventRecord(e1, s), out);
			ZB_CUDA_GOTO(st, err, cudaEventSynchronize(e1), out);
			float ms;
			ZB_CUDA_GOTO(st, err, cudaEventElapsedTime(&ms, e0, e1), out);
			if (r >= 0)
				t[r] = ms * 1e-3;
		}
		if (st)
			break;
		g->time_s = zb_median(t, reps);
		say(log, "  gemm %c%c %6d x %6d x %6d x %4d  %8.3f ms  %7.1f TFLOP/s  (weight %.3f)\n", g->transa ? 'T' : 'N',
		    g->transb ? 'T' : 'N', g->m, g->n, g->k, g->batch, g->time_s * 1e3, g->flops / g->time_s / 1e12,
		    g->weight);
	}
out:
	free(t);
	if (gm)
		zb_gemm_destroy(gm, NULL);
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	if (s)
		cudaStreamDestroy(s);
	cudaFree(A);
	cudaFree(B);
	cudaFree(C);
	return st;
}

/* ---- CPU Adam and copies together ------------------------------------------------------- */

typedef struct adam_arrays {
	uint16_t *g, *p16;
	float *master, *m, *v;
} adam_arrays;

static void adam_fill(void *ctx, int64_t lo, int64_t hi, int worker)
{
	adam_arrays *x = ctx;
	(void)worker;
	for (int64_t i = lo; i < hi; i++) {
		float u = zb_uniform_at(5, (uint64_t)i, -1.0f, 1.0f);
		x->g[i] = zb_f32_to_bf16(u * 1e-2f);
		x->master[i] = u;
		x->m[i] = u * 1e-3f;
		x->v[i] = u * u * 1e-6f;
		x->p16[i] = 0;
	}
}

#define MAX_ITERS 200000

typedef struct copy_loop {
	zb_copy_bench *b;
	size_t bytes;
	volatile int stop;
	int n;
	int64_t *t0, *t1;  /* per iteration, host clock */
	zb_status st;
	zb_error err;
} copy_loop;

static void *copy_loop_run(void *arg)
{
	copy_loop *c = arg;
	while (!c->stop && c->n < MAX_ITERS) {
		int64_t a = zb_now_ns();
		if ((c->st = zb_copy_bench_load(c->b, c->bytes, ZB_COPY_BOTH, &c->err)))
			break;
		c->t0[c->n] = a;
		c->t1[c->n] = zb_now_ns();
		c->n++;
	}
	return NULL;
}

/* Bytes both ways per second over [lo, hi], iterations cut at the edges. */
static double copy_rate(const copy_loop *c, int64_t lo, int64_t hi)
{
	double bytes = 0;
	for (int i = 0; i < c->n; i++) {
		int64_t a = c->t0[i] > lo ? c->t0[i] : lo, z = c->t1[i] < hi ? c->t1[i] : hi;
		if (z > a)
			bytes += 2.0 * c->bytes * (double)(z - a) / (double)(c->t1[i] - c->t0[i]);
	}
	return hi > lo ? bytes / ((hi - lo) * 1e-9) : 0;
}

static zb_status adam_steps(zb_pool *pool, adam_arrays *x, int64_t n, int reps, int64_t *step, double *median_s,
			    int64_t *t_lo, int64_t *t_hi, zb_error *err)
{
	zb_adam_params p = zb_adam_defaults();
	zb_adam_buffers bufs = { x->g, x->master, x->m, x->v, x->p16 };
	double *t = zb_xmalloc((size_t)reps * sizeof *t);
	zb_status st = ZB_OK;
	*t_lo = zb_now_ns();
	for (int r = 0; r < reps && !st; r++) {
		p.step = ++*step;
		int64_t a = zb_now_ns();
		st = zb_cpu_adam_step(pool, &p, &bufs, n, err);
		t[r] = (zb_now_ns() - a) * 1e-9;
	}
	*t_hi = zb_now_ns();
	*median_s = zb_median(t, reps);
	free(t);
	return st;
}

static zb_status together(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err)
{
	int64_t n = plan->adam_params;
	int reps = plan->quick ? 3 : 5;
	adam_arrays x = { 0 };
	zb_pool *pool = NULL;
	zb_copy_bench *b = NULL;
	copy_loop c = { 0 };
	zb_status st;
	x.g = aligned_alloc(64, (size_t)n * 2);
	x.p16 = aligned_alloc(64, (size_t)n * 2);
	x.master = aligned_alloc(64, (size_t)n * 4);
	x.m = aligned_alloc(64, (size_t)n * 4);
	x.v = aligned_alloc(64, (size_t)n * 4);
	if (!x.g || !x.p16 || !x.master || !x.m || !x.v) {
		st = zb_fail(err, ZB_E_NOMEM, "cannot allocate Adam arrays of %lld parameters", (long long)n);
		goto out;
	}
	if ((st = zb_pool_create(plan->threads, &pool, err)))
		goto out;
	zb_pool_run(pool, adam_fill, &x, n, 0); /* first touch by the workers that will run Adam */
	/* 512 MB each way: well beyond the last-level cache (300 MiB on the H200 host),
	 * so the DMA really reads and writes DRAM */
	c.bytes = plan->quick ? (32u << 20) : (512u << 20);
	c.t0 = zb_xmalloc(MAX_ITERS * sizeof *c.t0);
	c.t1 = zb_xmalloc(MAX_ITERS * sizeof *c.t1);
	if ((st = zb_copy_bench_open(c.bytes, 1, &b, err)))
		goto out;
	c.b = b;
	int64_t step = 0, lo, hi;
	double med;
	/* Adam alone (one warm-up step first) */
	if ((st = adam_steps(pool, &x, n, 1, &step, &med, &lo, &hi, err)) ||
	    (st = adam_steps(pool, &x, n, reps, &step, &med, &lo, &hi, err)))
		goto out;
	out->alone_adam_params_per_s = n / med;
	/* copies alone, about as long */
	pthread_t th;
	c.stop = 0;
	c.n = 0;
	if (pthread_create(&th, NULL, copy_loop_run, &c) != 0) {
		st = zb_fail(err, ZB_E_INTERNAL, "cannot start the copy thread");
		goto out;
	}
	usleep(20000);
	lo = zb_now_ns();
	usleep((useconds_t)(med * reps * 1e6 > 1e5 ? med * reps * 1e6 : 1e5));
	hi = zb_now_ns();
	c.stop = 1;
	pthread_join(th, NULL);
	if ((st = c.st)) {
		*err = c.err;
		goto out;
	}
	out->alone_copy_Bps = copy_rate(&c, lo, hi);
	/* both */
	c.stop = 0;
	c.n = 0;
	if (pthread_create(&th, NULL, copy_loop_run, &c) != 0) {
		st = zb_fail(err, ZB_E_INTERNAL, "cannot start the copy thread");
		goto out;
	}
	usleep(20000);
	st = adam_steps(pool, &x, n, reps, &step, &med, &lo, &hi, err);
	c.stop = 1;
	pthread_join(th, NULL);
	if (!st && (st = c.st))
		*err = c.err;
	if (st)
		goto out;
	out->together_adam_params_per_s = n / med;
	out->together_copy_Bps = copy_rate(&c, lo, hi);
	for (int64_t i = 0; i < n; i += n / 97 + 1)
		if (!isfinite(x.master[i])) {
			st = zb_fail(err, ZB_E_INTERNAL, "CPU Adam produced a non-finite master weight at %lld", (long long)i);
			goto out;
		}
	say(log, "  together %d threads: Adam %.3f Gparam/s alone, %.3f with copies; copies %.1f GB/s alone, %.1f "
		 "with Adam\n",
	    plan->threads, out->alone_adam_params_per_s / 1e9, out->together_adam_params_per_s / 1e9,
	    out->alone_copy_Bps / 1e9, out->together_copy_Bps / 1e9);
out:
	zb_copy_bench_close(b);
	zb_pool_destroy(pool);
	free(c.t0);
	free(c.t1);
	free(x.g);
	free(x.p16);
	free(x.master);
	free(x.m);
	free(x.v);
	return st;
}

/* ---- all of it ------------------------------------------------------------------------------ */

zb_status zb_calibrate_gpu(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err)
{
	memset(out, 0, sizeof *out);
	if (!zb_exec_available(err))
		return err ? err->status : ZB_E_NOGPU;
	double t0 = zb_wall_s();
	struct cudaDeviceProp prop;
	ZB_CUDA_TRY(err, cudaGetDeviceProperties(&prop, 0));
	snprintf(out->device, sizeof out->device, "%.127s", prop.name);
	out->mem_bytes = (double)prop.totalGlobalMem;
	size_t top = plan->quick ? (64u << 20) : (1u << 30);
	zb_status st;
	say(log, "# copies (pinned, then pageable)\n");
	if ((st = copies(1, 4096, top, plan->quick, out->pinned, &out->npinned, log, err)) ||
	    (st = copies(0, 65536, top, plan->quick, out->pageable, &out->npageable, log, err)))
		return st;
	say(log, "# device memory (copy kernel)\n");
	for (size_t sz = 65536; sz <= top && out->ndev < ZB_CALIB_MAX_SIZES; sz *= 4) {
		double GBps;
		if ((st = zb_bench_copy(sz, plan->quick ? 10 : 20, &GBps, err)))
			return st;
		out->dev_bytes[out->ndev] = 2.0 * sz;
		out->dev_s[out->ndev] = 2.0 * sz / (GBps * 1e9);
		say(log, "  device copy %11zu B  %8.1f GB/s (read + write)\n", sz, GBps);
		out->ndev++;
	}
	say(log, "# GEMMs (%d shapes)\n", plan->ngemm);
	if ((st = gemms(plan, log, err)))
		return st;
	size_t free_b = 0, total_b = 0;
	ZB_CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
	out->gpu_adam_params = plan->quick ? (16LL << 20) : 1000000000LL;
	if (16.0 * out->gpu_adam_params > 0.8 * free_b)
		out->gpu_adam_params = (int64_t)(0.8 * free_b / 16);
	double gr;
	if ((st = zb_bench_gpu_adam(out->gpu_adam_params, 10, &gr, err)))
		return st;
	out->gpu_adam_params_per_s = gr * 1e9;
	say(log, "# GPU Adam %.0f M params: %.1f Gparam/s (%.0f GB/s at 28 B/param)\n", out->gpu_adam_params / 1e6, gr,
	    gr * 28);
	say(log, "# CPU Adam with copies both ways\n");
	if ((st = together(plan, out, log, err)))
		return st;
	out->seconds = zb_wall_s() - t0;
	return ZB_OK;
}
