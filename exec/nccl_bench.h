/*
 * nccl_bench.h - NCCL collectives timed on the GPUs of this machine (`zbench bench
 * nccl`, and `zbench calibrate` for the fabric between GPUs), and the fit of the
 * ring model the simulator uses (sim/collective.h) to those times.
 *
 * Definitions are nccl-tests' (doc/PERFORMANCE.md): for a collective over S bytes
 * (the whole buffer) on n ranks taking t seconds, algbw = S / t and
 * busbw = algbw x (n-1)/n for reduce-scatter and all-gather, x 2(n-1)/n for
 * all-reduce. Timing as nccl-tests does it in one process: all ranks' calls in one
 * ncclGroupStart/End per iteration, warm-up iterations, then CUDA events around
 * `iters` iterations on each rank's stream; t = the slowest rank's time / iters.
 * Operations run in place (as the executor runs them), on 16-bit (bf16) data.
 */
#ifndef ZB_NCCL_BENCH_H
#define ZB_NCCL_BENCH_H

#include <stdio.h>

#include "common/error.h"

typedef struct zb_nccl_point {
	int op;              /* zb_op: ZB_OP_REDUCE_SCATTER, ZB_OP_ALL_GATHER, ZB_OP_ALL_REDUCE */
	double bytes;        /* the whole buffer */
	double time_s;       /* one collective */
	double algbw_Bps, busbw_Bps;
} zb_nccl_point;

/* busbw / algbw of op on n ranks; ring steps of op ((n-1), 2(n-1) for all-reduce). */
double zb_nccl_bus_factor(int op, int ranks);
int zb_nccl_ring_steps(int op, int ranks);

/* GPUs present (0 without CUDA or device). */
int zb_nccl_gpus(void);

/* Time every op of ops[] at every size of sizes[] on GPUs 0..ranks-1: out has
 * nops x nsizes points, op-major. Sizes are rounded down to a multiple of
 * 2 x ranks bytes. Needs NCCL (nccl_dl.h) and `ranks` >= 2 GPUs. */
zb_status zb_nccl_bench(int ranks, const int *ops, int nops, const double *sizes, int nsizes, int iters,
			zb_nccl_point *out, zb_error *err);

/* Fit t = bus_bytes / bus_Bps + steps x latency_s (sim/collective.h) to the points,
 * least squares on relative residuals (small and large sizes count alike);
 * rms_rel: the fit's root-mean-square relative error. Fails with fewer than two
 * points or a fit that is not positive. */
zb_status zb_nccl_fit(const zb_nccl_point *p, int n, int ranks, double *bus_Bps, double *latency_s,
		      double *rms_rel, zb_error *err);

/* The fabric as `zbench calibrate` measures it: reduce-scatter and all-gather over
 * 64 KB .. 1 GB (quick: up to 16 MB) on all GPUs present, fitted. */
typedef struct zb_nccl_fabric {
	int ranks;
	int npoints;
	zb_nccl_point points[32];
	double bus_Bps, latency_s, rms_rel;
	double seconds;
} zb_nccl_fabric;
zb_status zb_nccl_calibrate(int quick, zb_nccl_fabric *out, FILE *log, zb_error *err);

#endif
