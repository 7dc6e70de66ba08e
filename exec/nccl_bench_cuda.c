/*
 * nccl_bench_cuda.c - NCCL collectives timed on this machine's GPUs (nccl_bench.h).
 */
#include "exec/nccl_bench.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "core/graph.h"
#include "exec/cuda_check.h"
#include "exec/kernels.h"
#include "exec/nccl_dl.h"

#define WARMUP 5

int zb_nccl_gpus(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n;
}

typedef struct bench {
	int n;
	ncclComm_t comm[64];
	cudaStream_t stream[64];
	cudaEvent_t ev0[64], ev1[64];
	uint16_t *buf[64];
} bench;

/* One iteration: op over `count` elements on every rank, in place. */
static zb_status issue(bench *b, int op, size_t count, zb_error *err)
{
	const zb_nccl_api *nc = zb_nccl();
	size_t part = count / (size_t)b->n;
	ZB_NCCL_TRY(err, nc->GroupStart());
	for (int i = 0; i < b->n; i++) {
		ncclResult_t r;
		uint16_t *base = b->buf[i], *slot = base + (size_t)i * part;
		if (op == ZB_OP_REDUCE_SCATTER)
			r = nc->ReduceScatter(base, slot, part, ncclBfloat16, ncclSum, b->comm[i], b->stream[i]);
		else if (op == ZB_OP_ALL_GATHER)
			r = nc->AllGather(slot, base, part, ncclBfloat16, b->comm[i], b->stream[i]);
		else
			r = nc->AllReduce(base, base, count, ncclBfloat16, ncclSum, b->comm[i], b->stream[i]);
		if (r != ncclSuccess) {
			nc->GroupEnd();
			return zb_fail(err, ZB_E_CUDA, "NCCL %s of %zu elements on rank %d failed: %s", zb_op_name(op),
				       count, i, nc->GetErrorString(r));
		}
	}
	ZB_NCCL_TRY(err, nc->GroupEnd());
	return ZB_OK;
}

static zb_status time_point(bench *b, int op, double bytes, int iters, zb_nccl_point *pt, zb_error *err)
{
	size_t count = (size_t)(bytes / 2) / (size_t)b->n * (size_t)b->n;
	zb_status st = ZB_OK;
	for (int it = 0; it < WARMUP && !st; it++)
		st = issue(b, op, count, err);
	for (int i = 0; i < b->n && !st; i++) {
		ZB_CUDA_TRY(err, cudaSetDevice(i));
		ZB_CUDA_TRY(err, cudaEventRecord(b->ev0[i], b->stream[i]));
	}
	for (int it = 0; it < iters && !st; it++)
		st = issue(b, op, count, err);
	double worst = 0;
	for (int i = 0; i < b->n && !st; i++) {
		ZB_CUDA_TRY(err, cudaSetDevice(i));
		ZB_CUDA_TRY(err, cudaEventRecord(b->ev1[i], b->stream[i]));
	}
	for (int i = 0; i < b->n && !st; i++) {
		float ms = 0;
		ZB_CUDA_TRY(err, cudaEventSynchronize(b->ev1[i]));
		ZB_CUDA_TRY(err, cudaEventElapsedTime(&ms, b->ev0[i], b->ev1[i]));
		if (ms > worst)
			worst = ms;
	}
	if (st)
		return st;
	pt->op = op;
	pt->bytes = (double)count * 2;
	pt->time_s = worst * 1e-3 / iters;
	pt->algbw_Bps = pt->bytes / pt->time_s;
	pt->busbw_Bps = pt->algbw_Bps * zb_nccl_bus_factor(op, b->n);
	return ZB_OK;
}

/* Communicators (one process, group init), streams, events, data on every GPU. */
static zb_status open_bench(bench *b, double max_bytes, zb_error *err)
{
	const zb_nccl_api *nc = zb_nccl();
	ncclUniqueId id;
	ZB_NCCL_TRY(err, nc->GetUniqueId(&id));
	size_t elems = (size_t)(max_bytes / 2) + 64;
	for (int i = 0; i < b->n; i++) {
		ZB_CUDA_TRY(err, cudaSetDevice(i));
		ZB_CUDA_TRY(err, cudaStreamCreateWithFlags(&b->stream[i], cudaStreamNonBlocking));
		ZB_CUDA_TRY(err, cudaEventCreate(&b->ev0[i]));
		ZB_CUDA_TRY(err, cudaEventCreate(&b->ev1[i]));
		ZB_CUDA_MALLOC(err, (void **)&b->buf[i], elems * 2);
		zb_status st = zb_fill_uniform_bf16(b->buf[i], elems, 77 + (uint64_t)i, -1.0f, 1.0f, b->stream[i], err);
		if (st)
			return st;
		ZB_CUDA_TRY(err, cudaStreamSynchronize(b->stream[i]));
	}
	ZB_NCCL_TRY(err, nc->GroupStart());
	for (int i = 0; i < b->n; i++) {
		ncclResult_t r;
		if (cudaSetDevice(i) != cudaSuccess || (r = nc->CommInitRank(&b->comm[i], b->n, id, i)) != ncclSuccess) {
			nc->GroupEnd();
			return zb_fail(err, ZB_E_CUDA, "NCCL communicator of GPU %d failed to start", i);
		}
	}
	ZB_NCCL_TRY(err, nc->GroupEnd());
	return ZB_OK;
}

static void close_bench(bench *b)
{
	for (int i = 0; i < b->n; i++) {
		cudaSetDevice(i);
		if (b->comm[i])
			zb_nccl()->CommDestroy(b->comm[i]);
		if (b->buf[i])
			cudaFree(b->buf[i]);
		if (b->ev0[i])
			cudaEventDestroy(b->ev0[i]);
		if (b->ev1[i])
			cudaEventDestroy(b->ev1[i]);
		if (b->stream[i])
			cudaStreamDestroy(b->stream[i]);
	}
}

zb_status zb_nccl_bench(int ranks, const int *ops, int nops, const double *sizes, int nsizes, int iters,
			zb_nccl_point *out, zb_error *err)
{
	int have = zb_nccl_gpus();
	if (ranks < 2 || ranks > 64 || ranks > have)
		return zb_fail(err, ZB_E_NOGPU, "NCCL collectives need 2 GPUs or more: %d asked, %d present", ranks, have);
	zb_status st = zb_nccl_load(err);
	if (st)
		return st;
	double most = 0;
	for (int s = 0; s < nsizes; s++)
		if (sizes[s] > most)
			most = sizes[s];
	bench *b = zb_xcalloc(1, sizeof *b);
	b->n = ranks;
	st = open_bench(b, most, err);
	for (int o = 0; o < nops && !st; o++)
		for (int s = 0; s < nsizes && !st; s++)
			st = time_point(b, ops[o], sizes[s], iters, &out[o * nsizes + s], err);
	close_bench(b);
	free(b);
	return st;
}

zb_status zb_nccl_calibrate(int quick, zb_nccl_fabric *f, FILE *log, zb_error *err)
{
	memset(f, 0, sizeof *f);
	double t0 = zb_wall_s();
	f->ranks = zb_nccl_gpus();
	const int ops[] = { ZB_OP_REDUCE_SCATTER, ZB_OP_ALL_GATHER };
	double sizes[12];
	int ns = 0;
	for (double s = 64 * 1024.0; s <= (quick ? 16.0 : 1024.0) * (1 << 20) && ns < 12; s *= 4)
		sizes[ns++] = s;
	if (log)
		fprintf(log, "# fabric: NCCL reduce-scatter and all-gather on %d GPUs, %d sizes\n", f->ranks, ns);
	zb_status st = zb_nccl_bench(f->ranks, ops, 2, sizes, ns, quick ? 5 : 20, f->points, err);
	if (st)
		return st;
	f->npoints = 2 * ns;
	st = zb_nccl_fit(f->points, f->npoints, f->ranks, &f->bus_Bps, &f->latency_s, &f->rms_rel, err);
	f->seconds = zb_wall_s() - t0;
	return st;
}
