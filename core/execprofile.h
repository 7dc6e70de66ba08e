/*
 * execprofile.h - the executor profile: how zbench's own executor's kernels run on a
 * machine, per kernel class, as factors on the first-principles model of the hardware
 * profile. It travels inside the hardware profile (zb_hw.exec, the
 * "executor" object of a --hw JSON file) and applies only to zbench's own schedule
 * (framework zbench): DeepSpeed's kernels have their own profile (dsprofile.h).
 *
 * Classes and what each factor multiplies (0 anywhere: the plain model):
 *   GEMMs      time = flops / (gpu peak x efficiency(m, n, k; gpu.gemm_half_dim) x gemm[group])
 *              groups: dense (one matrix: the GPU's own curve, factor 1, not fitted),
 *              batched (attention's QK^T and PV), unaligned (a dimension not a multiple
 *              of 8: GPT-2's 50257-word head, no 16-byte vector loads), flash (the fused
 *              attention; its base is the flash efficiency); one factor for every pass
 *   kernels    time = HBM bytes (schedule.c: what the kernel moves) / (hbm_Bps x
 *              kernel[class]): the achieved fraction of HBM bandwidth of each kind of
 *              kernel: stream (16-byte vector loads through the data once: residual,
 *              norms, activations, gradient accumulation), softmax_fwd, softmax_bwd
 *              (one warp per row, exponentials), embed_fwd (a gather), embed_bwd (atomic
 *              adds), loss (one block per vocabulary row, the scalar path for GPT-2's)
 *   GPU Adam   bytes / (hbm_Bps x gpu_adam)
 *   launch_s   the fixed cost of every kernel launch (and tail) a GPU task makes (kernels.h
 *              zb_exec_launches: 1 to 5), instead of kernel_latency_s
 *   CPU Adam   1 / rate(t) = 1 / (t x adam_thread x per-core rate) + 1 / (adam_mem x ceiling):
 *              per-thread compute and the memory system's cost add per parameter (no
 *              overlap), so the rate rises with threads t and bends towards the memory
 *              rate, instead of the CPU model's min(t x per-core rate, ceiling); factors on
 *              the CPU's own figures (cpu.adam_params_per_core, cpu.adam_Bps / 28), so one
 *              profile suits any CPU preset; 0: the CPU model
 *   starved    the GPU compute stream's rate while CPU Adam's threads (of every rank) hold
 *              every core: the thread that issues the kernels then shares a core with a pinned
 *              Adam worker and is preempted for scheduler time slices, and the GPU idles once
 *              the kernels it queued are done. Measured on the H200 machine (16 threads, from
 *              each GPU task's ready time to its start): 2 us at the median, 12 us at the 90th
 *              percentile, and 2-4 gaps of ~4 ms a step, which hold 75-90 % of the time lost
 *              (gpt2-large and a Llama shape, dpu ratios 0.5 and 1): a loss in proportion to the
 *              time the GPU is busy, 0.70-0.83 of its rate, not a wait per kernel (7-82 us
 *              a task across those). Fitted from the tasks on one rank, from the steps on
 *              several (kfit_starved.h). 0: none (1)
 *   shared_gpu, shared_opt  the rates of GPU compute and GPU Adam while both streams run
 *              (0: the plain model's 0.5 each; measured on the H200: compute ~0.7, Adam ~0.55)
 *   adam_task_s the fixed cost of one CPU Adam task (dispatch, first touch), instead of
 *              cpu.task_latency_s when > 0
 *   h2d_queue  host DRAM shared by CPU Adam and DMA as the executor measures it (sim/kernels.h
 *              zb_exec_dram; 0: resources.c's proportional share): D2H copies (posted PCIe
 *              writes) keep their rate and take their DRAM bandwidth first; H2D copies (DMA
 *              reads, a bounded number in flight, so latency-bound) slow as the memory queue
 *              grows: rate / (1 + h2d_queue x u / (1 - u)), u the DRAM utilization of Adam and
 *              D2H; Adam gets what is left of cpu.dram_Bps
 *   pageable_queue  with h2d_queue: the same queue term for pageable H2D copies. The
 *              driver stages each chunk with a CPU memcpy from pageable into pinned memory
 *              before its DMA: a CPU load stream, which waits in the DRAM queue longer than
 *              the DMA engine's reads do. Measured on the H200 machine (fid suite, gpt2-medium,
 *              8 threads): pageable H2D 7.1-7.5 GB/s alone, 4.1-4.3 beside Adam (x0.57),
 *              where pinned H2D keeps x0.74 (52-55 against 38-40); pageable D2H 12-14 GB/s
 *              either way. With it, link.pageable_* are the lone copies' rates (before, one
 *              rate over copies alone and beside Adam: pageable offload predicted 10-15 %
 *              slow). 0: h2d_queue
 *   adam_copy  with h2d_queue: CPU Adam beside DMA slows by its own loaded latency, not by a
 *              budget share: rate / (1 + adam_copy x c / cpu.dram_Bps), c the copies' bytes/s
 *              (pageable ones by their bytes too, not their 3x DRAM traffic: measured). Measured
 *              on the H200 machine (fid suite, 4 + 6 steps, each Adam task against its
 *              configuration's Adam alone): x1.02-1.08 beside 10-20 GB/s of copies, x1.2-1.3
 *              beside 50-60, the same on 8 and 16 threads, where "Adam gets the rest" slows 16
 *              threads (127 GB/s of demand) 1.5-1.7x and 8 threads 1.25x. The copies keep the
 *              h2d_queue model. 0: Adam gets what is left
 *   comm_gpu, comm_opt  several ranks: the collectives' rate (on the fabric's busbw) while
 *              the GPU compute stream / GPU Adam run: NCCL's kernels share the SMs and HBM
 *              with them (0: 1). Measured on 2 H200s (gpt2-large, policy none, 50 MB
 *              buckets): a reduce-scatter took 0.16 ms beside backward GEMMs, 0.31 beside
 *              GPU Adam, 0.12 alone (the ring model: 0.111)
 *   comm_wait  a model option, not a fitted factor (true | false; 0 or 1 reads the same):
 *              several ranks, true: a collective whose inputs become ready while the rank's
 *              compute stream runs a GEMM with at least one output tile per SM (zb_gemm_fills) makes no
 *              progress until that GEMM ends: the block scheduler hands out the blocks of the
 *              kernel already running before those of a kernel launched later on another stream
 *              (no preemption; stream priorities only order pending blocks: CUDA C++ Programming
 *              Guide, "Stream Priorities"), and NCCL's ring needs all its channels' blocks resident.
 *              Measured on 2 H200s (gpt-2.5b, 50 MB buckets): a reduce-scatter issued as the fc2
 *              GEMM started ran beside it in 0.17 ms; the next two, issued while that 0.57 ms GEMM
 *              ran, ended 0.05-0.1 ms after it. The collective holds its stream while it waits (as
 *              the measured NCCL kernels do). false: off (the fluid model alone)
 * The GEMM efficiency curve's half dimension is the GPU's (gpu.gemm_half_dim: one value per
 * GPU, fitted to cuBLAS's shapes alone). CPU Adam beside the GPU's launches on every core
 * loses one core to them (kernels.h zb_exec_adam_launch: a count, not a factor).
 * `zbench calibrate --from-db` fits every factor from the executor's measured task
 * durations (analysis/kfit.h); hw/h200-machine-executor.json is the H200 machine's fit
 * (built in: zb_exec_profile_h200, which a hardware file names as "executor": "h200"); no
 * preset carries a profile: it is an overlay the user names (docs/hardware.md).
 * docs/model.md lists every term with its fitted value and the held-out error it buys. Keys
 * of earlier files that are no longer factors (gemm_half_dim, starved_s, adam_launch, paced_*,
 * adam_gap_s, per-pass GEMM keys) are refused by name, with what replaced them, and per-op
 * kernel keys with the classes listed: a file does not silently lose a term it was fitted with.
 */
#ifndef ZB_EXECPROFILE_H
#define ZB_EXECPROFILE_H

#include "common/error.h"

enum { ZB_GEMM_DENSE, ZB_GEMM_BATCHED, ZB_GEMM_UNALIGNED, ZB_GEMM_FLASH, ZB_GEMM_GROUPS };
enum { ZB_KERN_STREAM, ZB_KERN_SOFTMAX_FWD, ZB_KERN_SOFTMAX_BWD, ZB_KERN_EMBED_FWD, ZB_KERN_EMBED_BWD, ZB_KERN_LOSS,
       ZB_KERN_CLASSES };

typedef struct zb_exec_profile {
	int set;                                     /* 0: none (plain model), 1: given, 2: a preset's */
	double gemm[ZB_GEMM_GROUPS];                 /* factor on the GEMM efficiency (dense: 1) */
	double kernel[ZB_KERN_CLASSES];              /* fraction of hbm_Bps */
	double gpu_adam;                             /* fraction of hbm_Bps */
	double launch_s;                             /* 0: gpu.kernel_latency_s */
	double adam_thread;                          /* CPU Adam: factor on cpu.adam_params_per_core */
	double adam_mem;                             /* CPU Adam: factor on the memory ceiling */
	double adam_task_s;                          /* 0: cpu.task_latency_s */
	double shared_gpu, shared_opt;               /* rates while both GPU streams run (0: 0.5) */
	double h2d_queue;                            /* DMA reads' queueing under DRAM load (0: off) */
	double pageable_queue;                       /* the same for pageable H2D copies (0: h2d_queue) */
	double adam_copy;                            /* CPU Adam's latency slowdown beside DMA (0: budget share) */
	double comm_gpu, comm_opt;                   /* collectives' rate beside compute / GPU Adam (0: 1) */
	int comm_wait;                               /* option, 1: a collective waits for a GEMM that fills the SMs */
	double starved;                              /* GPU compute rate while Adam holds every core (0: 1) */
} zb_exec_profile;

const char *zb_gemm_group_name(int g);   /* "dense", "batched", "unaligned", "flash" */
const char *zb_kernel_class_name(int k); /* "stream", "softmax_fwd", ..., "loss" */

/* The fit of the H200 machine: the "executor" object of hw/h200-machine-executor.json,
 * built into the program (set = 2: the built-in fit, written to files by its name "h200";
 * 1: from a file or a fit, written in full). No preset carries it. */
void zb_exec_profile_h200(zb_exec_profile *p);
/* Every factor 1, nothing set: the plain model (what a GPU without a profile gets). */
void zb_exec_profile_neutral(zb_exec_profile *p);
/* The profile a configuration runs with: hw's when set, else the neutral one. */
const zb_exec_profile *zb_exec_profile_of(const zb_exec_profile *maybe, zb_exec_profile *scratch);
zb_status zb_exec_profile_validate(const zb_exec_profile *p, zb_error *err);

/* JSON (json_t *, opaque here): the "executor" object of a hardware file (or "h200": the
 * preset's fit); missing keys are neutral, unknown keys and bad values are errors naming
 * path and key. */
zb_status zb_exec_profile_from_json(const void *obj, const char *path, zb_exec_profile *out, zb_error *err);
void *zb_exec_profile_to_json(const zb_exec_profile *p); /* a new json_t * reference */

#endif
