/*
 * resources.h - the resource models the simulator runs tasks on.
 *
 * Each task is a flow on its resource: a fixed part (launch or per-copy latency,
 * thread-pool dispatch), untouched by sharing, then an amount of work drained at a
 * rate. Rates depend on which other flows are active at the same time:
 *   - PCIe: each direction has its own bandwidth; while both directions run each
 *     keeps its duplex fraction; GPUs behind one link divide it.
 *   - host DRAM: CPU Adam traffic (28 B/param) and DMA traffic draw on one memory
 *     system; when their demand exceeds its bandwidth all of them slow down in
 *     proportion (measured on the H200 machine: both lose ~25-30%).
 *   - GPU: compute kernels and the GPU optimizer time-share the GPU when both run.
 * Work units: GPU and GPU optimizer flows count standalone seconds (rate 1 alone);
 * copies count bytes (rate in B/s); CPU Adam counts DRAM bytes (rate in B/s).
 */
#ifndef ZB_RESOURCES_H
#define ZB_RESOURCES_H

#include "core/config.h"
#include "core/graph.h"

/* Fraction of the peak rate a GEMM of this shape reaches: each of m, n, k scales
 * it by d / (d + gemm_half_dim), so small dimensions waste the tensor cores. */
double zb_gemm_efficiency(const zb_gpu *gpu, double m, double n, double k);
/* Wave quantization: a GEMM's output tiles (128 x 256, cuBLAS's bf16 tile on
 * Hopper) run in waves of gpu->sms; the share of the last wave left idle slows the
 * GEMM by tiles / (waves * sms). 1 when sms is unknown (0). The H200's measured
 * 2560 x 2560 x 8192 weight gradient (553 TFLOP/s, 0.74 of the large shapes'
 * ~747; BENCHMARKS.md "GEMMs") is 200 tiles in 2 waves of 132: 0.76. */
double zb_gemm_waves(const zb_gpu *gpu, double m, double n, double batch);
/* The output tiles of an m x n (x batch) GEMM, counted as zb_gemm_waves does; the GEMM
 * holds every SM while it runs when that is at least gpu->sms (known: sms > 0). */
double zb_gemm_tiles(double m, double n, double batch);
int zb_gemm_fills(const zb_gpu *gpu, double tiles);

/* A task's flow on its resource when it runs alone. */
void zb_task_flow(const zb_task *t, const zb_config *c, double *fixed_s, double *work);

/* Duration of a task running alone: fixed + work / rate with no contention. */
double zb_task_alone_s(const zb_task *t, const zb_config *c);

/* Rates of the flows active now. active_task[r] is the task on resource r or NULL.
 * rate[r] is written for every resource with an active task. */
void zb_resource_rates(const zb_config *c, const zb_task *const active_task[ZB_RES_COUNT],
		       double rate[ZB_RES_COUNT]);

/* GPUs that divide one host link's bandwidth (gpus_per_link, and with several ranks
 * per node at most policy.gpus of them). */
int zb_link_sharers(const zb_config *c);

/* Optimizer threads and their unshared Adam traffic rate (B/s) for one GPU. */
double zb_cpu_adam_Bps(const zb_config *c);

#endif
