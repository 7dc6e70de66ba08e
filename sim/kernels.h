/*
 * kernels.h - zbench's own executor's tasks timed by the executor profile
 * (core/execprofile.h): per kernel class, a factor on the first-principles model of
 * resources.h. The simulator uses it for framework zbench; the fit (analysis/kfit.h)
 * uses the same unit-factor times, so a fitted factor means the same in both.
 */
#ifndef ZB_KERNELS_H
#define ZB_KERNELS_H

#include "core/config.h"
#include "core/graph.h"

/* The executor profile that times c's tasks, or NULL when the plain model does
 * (another framework's schedule). */
const zb_exec_profile *zb_exec_profile_for(const zb_config *c, zb_exec_profile *scratch);

/* Class of a GPU task: GEMM group (ZB_GEMM_*, -1 for other kinds) and pass. */
int zb_exec_gemm_group(const zb_task *t);
int zb_exec_pass(const zb_task *t);       /* 0 forward/recompute, 1 bwd data, 2 bwd weight */
/* Class of a memory-bound kernel task (ZB_KERN_*, execprofile.h): softmax and embedding
 * each way, the loss, every other op a streaming kernel. */
int zb_exec_kernel_class(const zb_task *t);

/* A GPU-side task's seconds of work with every factor 1 (half_dim as given):
 * GEMMs and fused attention the larger of flops / (peak x efficiency) (the flash
 * efficiency for fused attention) and bytes / hbm_Bps, kernels and GPU Adam
 * bytes / hbm_Bps. */
double zb_exec_unit_s(const zb_task *t, const zb_config *c, double half_dim);

/* The kernels zbench's executor launches for GPU task t (exec/tasks_cuda.c): 1 for most,
 * a norm's backward 4 (5 with a bias), the loss 2, the last micro-batch's gradient
 * accumulation 3, an untied embedding's backward 2, fused attention's backward 4. */
int zb_exec_launches(const zb_task *t, const zb_config *c);

/* The fixed part (one launch_s) and standalone work of a GPU or GPU-optimizer task under
 * p: with a profile set, the work holds the task's further launches, (zb_exec_launches - 1)
 * x launch_s (the neutral profile, the plain model, counts one launch a task). */
void zb_exec_gpu_flow(const zb_task *t, const zb_config *c, const zb_exec_profile *p, double *fixed_s,
		      double *work);

/* CPU Adam params/s of t threads with the harmonic model (execprofile.h), the memory
 * ceiling times share (this GPU's part of the host), before NUMA caps; 0 when p does
 * not set it. */
double zb_exec_adam_Pps(const zb_config *c, const zb_exec_profile *p, double threads, double share);

/* The GPU compute stream's rate factor now (execprofile.h starved): below 1 only for
 * zbench's schedule while CPU Adam runs with its threads (of every rank) on every core.
 * (GPU Adam, a few long kernels, measured no such loss.) */
double zb_exec_starved(const zb_config *c, const zb_task *const active[ZB_RES_COUNT]);
/* CPU Adam's rate factor now: below 1 only in zbench's executor (with an executor profile)
 * while the GPU compute stream runs and Adam's threads of every rank hold every core, so each rank's launch
 * thread takes one of their cores: 1 - ranks / cores (a count, not a fitted factor;
 * the fit it replaces gave 0.059 on the 16-core H200 machine, 1/16 = 0.0625); else 1. */
double zb_exec_adam_launch(const zb_config *c, const zb_task *const active[ZB_RES_COUNT]);

/* While both GPU streams run: rate[GPU] and rate[GPU_OPT] from the profile's
 * shared_gpu and shared_opt where set (zbench's schedule only). */
void zb_exec_shares(const zb_config *c, const zb_task *const active[ZB_RES_COUNT], double rate[ZB_RES_COUNT]);

/* Host DRAM shared by CPU Adam (rate[CPU], bytes/s, when adam) and the copies of
 * active[] at their link rates in rate[], as zbench's executor measured it on the H200
 * machine (execprofile.h h2d_queue; zbench validate, 16 threads: D2H 55 GB/s
 * alone and 53 under Adam, H2D 54.6 alone and 53 / 52 / 46 / 37 GB/s under Adam on 2 / 4 /
 * 8 / 16 threads). PCIe writes into host memory are posted, so D2H keeps its rate and
 * its bytes come first; reads are non-posted with a bounded number of requests in
 * flight, so H2D's rate falls with the loaded memory latency (Neugebauer et al.,
 * "Understanding PCIe performance for end host networking", SIGCOMM 2018: DMA read
 * throughput = outstanding requests x size / latency), modelled as an M/M/1 queue's
 * wait at utilization u; Adam gets the rest of cpu.dram_Bps. Paced copies (--link-rate)
 * are below the latency bound and keep their rate; pageable ones cost 3x their bytes
 * of DRAM (DMA and the driver's staging copy). Returns 0 (nothing changed) when the
 * profile does not set h2d_queue, and for other frameworks. */
int zb_exec_dram(const zb_config *c, int adam, const zb_task *const active[ZB_RES_COUNT], double rate[ZB_RES_COUNT]);
/* The collectives' rate factor now (execprofile.h comm_gpu, comm_opt): below 1 while a
 * GPU stream of the rank runs beside them (zbench's schedule only; the smaller when both). */
double zb_exec_comm_share(const zb_config *c, const zb_task *const active[ZB_RES_COUNT]);

#endif
