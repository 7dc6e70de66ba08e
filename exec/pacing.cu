/*
 * pacing.cu - the pacer of exec/pacing.h: a stamp kernel and spin kernels around
 * chunked cudaMemcpyAsync calls on one copy stream.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>

#include "exec/cuda_check.h"
#include "exec/pacing.h"

#define NATIVE_PROBE_BYTES ((size_t)64 << 20)

struct zb_pacer {
	double rate_Bps, native_Bps;
	int to_device;
	uint64_t *stamp; /* device: global timer (ns) at the start of the current copy */
};

__device__ static uint64_t global_ns(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void pace_stamp_kernel(uint64_t *stamp) { *stamp = global_ns(); }

__global__ void pace_wait_kernel(const uint64_t *stamp, uint64_t release_ns)
{
	uint64_t until = *stamp + release_ns;
	while (global_ns() < until)
		__nanosleep(1000);
}

/* Median-free probe: one warm-up and one timed 64 MiB copy in the pacer's direction. */
static zb_status measure_native(zb_pacer *p, cudaStream_t s, zb_error *err)
{
	zb_status st = ZB_OK;
	void *host = NULL, *dev = NULL;
	cudaEvent_t a = NULL, b = NULL;
	float ms = 0;
	ZB_CUDA_GOTO(st, err, cudaMallocHost(&host, NATIVE_PROBE_BYTES), out);
	ZB_CUDA_MALLOC_GOTO(st, err, &dev, NATIVE_PROBE_BYTES, out);
	ZB_CUDA_GOTO(st, err, cudaEventCreate(&a), out);
	ZB_CUDA_GOTO(st, err, cudaEventCreate(&b), out);
	for (int i = 0; i < 2; i++) {
		ZB_CUDA_GOTO(st, err, cudaEventRecord(a, s), out);
		if (p->to_device)
			ZB_CUDA_GOTO(st, err, cudaMemcpyAsync(dev, host, NATIVE_PROBE_BYTES, cudaMemcpyHostToDevice, s), out);
		else
			ZB_CUDA_GOTO(st, err, cudaMemcpyAsync(host, dev, NATIVE_PROBE_BYTES, cudaMemcpyDeviceToHost, s), out);
		ZB_CUDA_GOTO(st, err, cudaEventRecord(b, s), out);
		ZB_CUDA_GOTO(st, err, cudaEventSynchronize(b), out);
	}
	ZB_CUDA_GOTO(st, err, cudaEventElapsedTime(&ms, a, b), out);
	p->native_Bps = ms > 0 ? NATIVE_PROBE_BYTES / (ms * 1e-3) : 0;
	if (!(p->native_Bps > 0))
		st = zb_fail(err, ZB_E_CUDA, "pacing: the native copy rate could not be measured (%.3f ms)", ms);
out:
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	if (dev)
		cudaFree(dev);
	if (host)
		cudaFreeHost(host);
	return st;
}

extern "C" zb_status zb_pacer_create(zb_pacer **out, double rate_Bps, int to_device, zb_stream stream,
				     zb_error *err)
{
	*out = NULL;
	if (!(rate_Bps > 0))
		return zb_fail(err, ZB_E_INPUT, "pacing: rate %g B/s must be > 0", rate_Bps);
	zb_pacer *p = (zb_pacer *)calloc(1, sizeof *p);
	if (!p)
		return zb_fail(err, ZB_E_NOMEM, "pacing: out of host memory");
	p->rate_Bps = rate_Bps;
	p->to_device = to_device;
	zb_status st = ZB_OK;
	ZB_CUDA_MALLOC_GOTO(st, err, &p->stamp, sizeof(uint64_t), fail);
	if ((st = measure_native(p, (cudaStream_t)stream, err)))
		goto fail;
	*out = p;
	return ZB_OK;
fail:
	zb_pacer_destroy(p);
	return st;
}

extern "C" zb_status zb_pacer_copy(zb_pacer *p, void *dst, const void *src, size_t bytes, zb_stream stream,
				   zb_error *err)
{
	cudaStream_t s = (cudaStream_t)stream;
	cudaMemcpyKind kind = p->to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
	zb_pace_plan plan;
	zb_status st = zb_pace_plan_make(bytes, p->rate_Bps, p->native_Bps, ZB_PACE_CHUNK_BYTES, &plan, err);
	if (st)
		return st;
	if (plan.paced) {
		pace_stamp_kernel<<<1, 1, 0, s>>>(p->stamp);
		ZB_CUDA_LAUNCHED(err, "pace_stamp");
	}
	for (int64_t k = 0; k < plan.chunks; k++) {
		size_t off = (size_t)k * plan.chunk_bytes, n = zb_pace_chunk_size(&plan, k);
		double r = zb_pace_release_s(&plan, k);
		if (r > 0) {
			pace_wait_kernel<<<1, 1, 0, s>>>(p->stamp, (uint64_t)(r * 1e9));
			ZB_CUDA_LAUNCHED(err, "pace_wait");
		}
		if (n)
			ZB_CUDA_TRY(err, cudaMemcpyAsync((char *)dst + off, (const char *)src + off, n, kind, s));
	}
	return ZB_OK;
}

extern "C" double zb_pacer_native_Bps(const zb_pacer *p) { return p->native_Bps; }

extern "C" void zb_pacer_destroy(zb_pacer *p)
{
	if (!p)
		return;
	if (p->stamp)
		cudaFree(p->stamp);
	free(p);
}
