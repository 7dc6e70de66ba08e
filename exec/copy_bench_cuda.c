/* copy_bench_cuda.c - host<->device copy timing; see copy_bench.h. */
#include "exec/copy_bench.h"

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/cuda_check.h"
#include "exec/kernels.h"
#include "exec/threadpool.h"
#include "common/stats.h"

#define WARMUP 2

struct zb_copy_bench {
	void *host_a, *host_b; /* H2D source, D2H destination */
	void *dev_a, *dev_b;   /* H2D destination, D2H source */
	size_t max_bytes;
	int pinned;
	cudaStream_t s[2];     /* [0] H2D, [1] D2H */
	cudaEvent_t e[4];
};

void zb_copy_bench_close(zb_copy_bench *b)
{
	if (!b)
		return;
	for (int i = 0; i < 2; i++)
		if (b->s[i])
			cudaStreamDestroy(b->s[i]);
	for (int i = 0; i < 4; i++)
		if (b->e[i])
			cudaEventDestroy(b->e[i]);
	if (b->pinned) {
		cudaFreeHost(b->host_a);
		cudaFreeHost(b->host_b);
	} else {
		free(b->host_a);
		free(b->host_b);
	}
	cudaFree(b->dev_a);
	cudaFree(b->dev_b);
	free(b);
}

zb_status zb_copy_bench_open(size_t max_bytes, int pinned, zb_copy_bench **out, zb_error *err)
{
	*out = NULL;
	if (max_bytes < 8)
		return zb_fail(err, ZB_E_INPUT, "copy benchmark buffers of %zu bytes are too small", max_bytes);
	zb_copy_bench *b = zb_xcalloc(1, sizeof *b);
	b->max_bytes = max_bytes;
	b->pinned = pinned;
	zb_status st = ZB_OK;
	if (pinned) {
		ZB_CUDA_GOTO(st, err, cudaMallocHost(&b->host_a, max_bytes), fail);
		ZB_CUDA_GOTO(st, err, cudaMallocHost(&b->host_b, max_bytes), fail);
	} else {
		b->host_a = aligned_alloc(4096, (max_bytes + 4095) / 4096 * 4096);
		b->host_b = aligned_alloc(4096, (max_bytes + 4095) / 4096 * 4096);
		if (!b->host_a || !b->host_b) {
			st = zb_fail(err, ZB_E_NOMEM, "cannot allocate 2 x %zu pageable bytes", max_bytes);
			goto fail;
		}
	}
	ZB_CUDA_MALLOC_GOTO(st, err, &b->dev_a, max_bytes, fail);
	ZB_CUDA_MALLOC_GOTO(st, err, &b->dev_b, max_bytes, fail);
	for (size_t i = 0; i < max_bytes / 8; i++) /* not zeros: a pattern the check can see */
		((uint64_t *)b->host_a)[i] = i * 0x9e3779b97f4a7c15ull;
	memset(b->host_b, 0x5a, max_bytes); /* touched, so page faults are not timed */
	if ((st = zb_fill_uniform_bf16(b->dev_b, max_bytes / 2, 7, -1, 1, NULL, err)))
		goto fail;
	ZB_CUDA_GOTO(st, err, cudaStreamCreateWithFlags(&b->s[0], cudaStreamNonBlocking), fail);
	ZB_CUDA_GOTO(st, err, cudaStreamCreateWithFlags(&b->s[1], cudaStreamNonBlocking), fail);
	for (int i = 0; i < 4; i++)
		ZB_CUDA_GOTO(st, err, cudaEventCreate(&b->e[i]), fail);
	ZB_CUDA_GOTO(st, err, cudaDeviceSynchronize(), fail);
	*out = b;
	return ZB_OK;
fail:
	zb_copy_bench_close(b);
	return st;
}

/* ---- pinned: events ------------------------------------------------------------------ */

static zb_status time_pinned(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, int reps, double *t0, double *t1,
			     zb_error *err)
{
	int h2d = dir != ZB_COPY_D2H, d2h = dir != ZB_COPY_H2D;
	for (int r = -WARMUP; r < reps; r++) {
		if (h2d) {
			ZB_CUDA_TRY(err, cudaEventRecord(b->e[0], b->s[0]));
			ZB_CUDA_TRY(err, cudaMemcpyAsync(b->dev_a, b->host_a, bytes, cudaMemcpyHostToDevice, b->s[0]));
			ZB_CUDA_TRY(err, cudaEventRecord(b->e[1], b->s[0]));
		}
		if (d2h) {
			ZB_CUDA_TRY(err, cudaEventRecord(b->e[2], b->s[1]));
			ZB_CUDA_TRY(err, cudaMemcpyAsync(b->host_b, b->dev_b, bytes, cudaMemcpyDeviceToHost, b->s[1]));
			ZB_CUDA_TRY(err, cudaEventRecord(b->e[3], b->s[1]));
		}
		ZB_CUDA_TRY(err, cudaDeviceSynchronize());
		if (r < 0)
			continue;
		float ms;
		t0[r] = t1[r] = 0;
		if (h2d) {
			ZB_CUDA_TRY(err, cudaEventElapsedTime(&ms, b->e[0], b->e[1]));
			t0[r] = ms * 1e-3;
		}
		if (d2h) {
			ZB_CUDA_TRY(err, cudaEventElapsedTime(&ms, b->e[2], b->e[3]));
			t1[r] = ms * 1e-3;
		}
	}
	return ZB_OK;
}

/* ---- pageable: host clock, a thread per direction ---------------------------------- */

typedef struct pg_job {
	zb_copy_bench *b;
	size_t bytes;
	int h2d, reps;
	double *t;
	pthread_barrier_t *bar; /* NULL: alone */
	cudaError_t rc;
} pg_job;

static void *pageable_loop(void *arg)
{
	pg_job *j = arg;
	zb_copy_bench *b = j->b;
	cudaStream_t s = b->s[j->h2d ? 0 : 1];
	for (int r = -WARMUP; r < j->reps; r++) {
		if (j->bar)
			pthread_barrier_wait(j->bar);
		int64_t a = zb_now_ns();
		cudaError_t e = j->h2d ? cudaMemcpyAsync(b->dev_a, b->host_a, j->bytes, cudaMemcpyHostToDevice, s)
				       : cudaMemcpyAsync(b->host_b, b->dev_b, j->bytes, cudaMemcpyDeviceToHost, s);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		int64_t z = zb_now_ns();
		if (e != cudaSuccess && j->rc == cudaSuccess)
			j->rc = e;
		if (r >= 0)
			j->t[r] = (z - a) * 1e-9;
	}
	return NULL;
}

static zb_status time_pageable(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, int reps, double *t0, double *t1,
			       zb_error *err)
{
	pg_job jh = { b, bytes, 1, reps, t0, NULL, cudaSuccess }, jd = { b, bytes, 0, reps, t1, NULL, cudaSuccess };
	for (int r = 0; r < reps; r++)
		t0[r] = t1[r] = 0;
	if (dir == ZB_COPY_H2D) {
		pageable_loop(&jh);
	} else if (dir == ZB_COPY_D2H) {
		pageable_loop(&jd);
	} else {
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, 2);
		jh.bar = jd.bar = &bar;
		pthread_t th;
		if (pthread_create(&th, NULL, pageable_loop, &jd) != 0) {
			pthread_barrier_destroy(&bar);
			return zb_fail(err, ZB_E_INTERNAL, "cannot start the pageable D2H copy thread");
		}
		pageable_loop(&jh);
		pthread_join(th, NULL);
		pthread_barrier_destroy(&bar);
	}
	cudaError_t e = jh.rc != cudaSuccess ? jh.rc : jd.rc;
	if (e != cudaSuccess)
		return zb_fail(err, ZB_E_CUDA, "pageable copy of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
	return ZB_OK;
}

zb_status zb_copy_bench_time(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, int reps, double t[2], zb_error *err)
{
	if (bytes < 1 || bytes > b->max_bytes || reps < 1)
		return zb_fail(err, ZB_E_INPUT, "copy of %zu bytes (%d repetitions) outside the benchmark's 1..%zu bytes",
			       bytes, reps, b->max_bytes);
	double *t0 = zb_xmalloc(2 * (size_t)reps * sizeof *t0), *t1 = t0 + reps;
	zb_status st = b->pinned ? time_pinned(b, bytes, dir, reps, t0, t1, err)
				 : time_pageable(b, bytes, dir, reps, t0, t1, err);
	if (!st) {
		t[0] = dir == ZB_COPY_D2H ? 0 : zb_median(t0, reps);
		t[1] = dir == ZB_COPY_H2D ? 0 : zb_median(t1, reps);
	}
	free(t0);
	return st;
}

zb_status zb_copy_bench_load(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, zb_error *err)
{
	if (bytes < 1 || bytes > b->max_bytes)
		return zb_fail(err, ZB_E_INPUT, "copy of %zu bytes outside the benchmark's 1..%zu bytes", bytes,
			       b->max_bytes);
	if (!b->pinned) {
		double t[2];
		return zb_copy_bench_time(b, bytes, dir, 1, t, err);
	}
	if (dir != ZB_COPY_D2H)
		ZB_CUDA_TRY(err, cudaMemcpyAsync(b->dev_a, b->host_a, bytes, cudaMemcpyHostToDevice, b->s[0]));
	if (dir != ZB_COPY_H2D)
		ZB_CUDA_TRY(err, cudaMemcpyAsync(b->host_b, b->dev_b, bytes, cudaMemcpyDeviceToHost, b->s[1]));
	/* wait by polling with short sleeps: a synchronize may spin, and this thread
	 * must leave the cores to the work it is measured against */
	for (int i = 0; i < 2; i++) {
		cudaError_t e;
		while ((e = cudaStreamQuery(b->s[i])) == cudaErrorNotReady)
			usleep(20);
		if (e != cudaSuccess)
			return zb_fail(err, ZB_E_CUDA, "copy of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
	}
	return ZB_OK;
}

/* Compare n bytes at off of a device buffer with a host one. */
static zb_status same(const void *dev, const void *host, size_t off, size_t n, const char *what, size_t bytes,
		      zb_error *err)
{
	unsigned char buf[4096];
	if (cudaMemcpy(buf, (const char *)dev + off, n, cudaMemcpyDeviceToHost) != cudaSuccess)
		return zb_fail(err, ZB_E_CUDA, "verification read of the %s copy failed", what);
	if (memcmp(buf, (const char *)host + off, n))
		return zb_fail(err, ZB_E_INTERNAL, "%s copy of %zu bytes corrupted data at offset %zu", what, bytes, off);
	return ZB_OK;
}

zb_status zb_copy_bench_verify(zb_copy_bench *b, size_t bytes, zb_copy_dir dir, zb_error *err)
{
	if (bytes > b->max_bytes)
		return zb_fail(err, ZB_E_INPUT, "cannot verify %zu bytes of %zu-byte buffers", bytes, b->max_bytes);
	zb_status st = ZB_OK;
	for (size_t off = 0; off < bytes && !st; off += bytes / 7 + 1) {
		size_t n = bytes - off < 4096 ? bytes - off : 4096;
		if (dir != ZB_COPY_D2H)
			st = same(b->dev_a, b->host_a, off, n, "h2d", bytes, err);
		if (!st && dir != ZB_COPY_H2D)
			st = same(b->dev_b, b->host_b, off, n, "d2h", bytes, err);
	}
	return st;
}
