/*
 * execprofile.h - the executor profile: how zbench's own executor's kernels run on a
 * machine, per kernel class, as factors on the first-principles model of the hardware
 * profile (issue 12). It travels inside the hardware profile (zb_hw.exec, the
 * "executor" object of a --hw JSON file) and applies only to zbench's own schedule
 * (framework zbench): DeepSpeed's kernels have their own profile (dsprofile.h).
 *
 * Classes and what each factor multiplies (0 anywhere: the plain model):
 *   GEMMs      time = flops / (gpu peak x efficiency(m, n, k; half_dim) x gemm[group][pass])
 *              groups: dense (one matrix), batched (attention's QK^T and PV), unaligned
 *              (a dimension not a multiple of 8: GPT-2's 50257-word head, no 16-byte
 *              vector loads), flash (the fused attention; its base is the flash
 *              efficiency); passes: forward (and recompute), backward data, backward weight
 *   kernels    time = bytes / (hbm_Bps x kernel[op][fwd | bwd]): each memory-bound op's
 *              achieved fraction of HBM bandwidth
 *   GPU Adam   bytes / (hbm_Bps x gpu_adam)
 *   launch_s   the fixed part of every GPU task (launch and tail), instead of kernel_latency_s
 *   CPU Adam   1 / rate(t) = 1 / (t x adam_thread x per-core rate) + 1 / (adam_mem x ceiling):
 *              per-thread compute and the memory system's cost add per parameter (no
 *              overlap), so the rate rises with threads t and bends towards the memory
 *              rate, instead of the CPU model's min(t x per-core rate, ceiling); factors on
 *              the CPU's own figures (cpu.adam_params_per_core, cpu.adam_Bps / 28), so one
 *              profile suits any CPU preset; 0: the CPU model
 *   starved    the GPU compute stream's rate while CPU Adam runs on every core: the thread
 *              that launches the kernels then waits for a core (~5 ms time slices measured on
 *              the H200 machine), so the GPU idles between launches (1: no effect)
 *   starved_s  > 0: the same starvation as a wait per GPU compute task (seconds) instead of a
 *              rate: the issuing thread waits for a core before each launch it cannot make
 *              ahead, so the GPU loses about the same time per kernel, short or long.
 *              Measured on 2 H200s (2 x 16 Adam workers on 32 cores, v2 runs): the gap from
 *              a backward task's ready time to its start was 3-4 us without Adam and
 *              14-38 us with it beside gpt2-large's ~0.1 ms kernels (rank 0), 4-8 us beside
 *              gpt-2.5b's 0.5-1 ms ones: a rate of 0.70 would make those 200-400 us.
 *              Replaces starved where set; 0: starved
 *   paced_gpu  --link-rate runs: the GPU compute stream's rate beside each paced copy (to the
 *              power of the paced copies running): the pacer's one-thread spin kernel stays resident
 *              on an SM while it waits for the next chunk's release, and a GEMM block that needs the
 *              whole SM cannot land there, so full-wave GEMMs lose an SM (exec/pacing.h). Measured on
 *              the H200 machine (fid run B, 8 threads, the same GEMMs as on the native link): x1.03-1.05
 *              beside one paced copy, x1.07-1.10 beside two; 0: 1
 *   shared_gpu, shared_opt  the rates of GPU compute and GPU Adam while both streams run
 *              (0: the plain model's 0.5 each; measured on the H200: compute ~0.7, Adam ~0.55)
 *   paced      --link-rate runs: the fraction of the asked rate the paced copies achieve,
 *              each direction (the GPU-timer pacing loses time per chunk; 0: 1)
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
 *              the DMA engine's reads do. Measured on the H200 machine (fid run H, gpt2-medium,
 *              8 threads): pageable H2D 7.1-7.5 GB/s alone, 4.1-4.3 beside Adam (x0.57),
 *              where pinned H2D keeps x0.74 (52-55 against 38-40); pageable D2H 12-14 GB/s
 *              either way. With it, link.pageable_* are the lone copies' rates (before, one
 *              rate over copies alone and beside Adam: pageable offload predicted 10-15 %
 *              slow). 0: h2d_queue
 *   adam_copy  with h2d_queue: CPU Adam beside DMA slows by its own loaded latency, not by a
 *              budget share: rate / (1 + adam_copy x c / cpu.dram_Bps), c the copies' bytes/s
 *              (pageable ones by their bytes too, not their 3x DRAM traffic: measured). Measured
 *              on the H200 machine (fid run C, 4 + 6 steps, each Adam task against its
 *              configuration's Adam alone): x1.02-1.08 beside 10-20 GB/s of copies, x1.2-1.3
 *              beside 50-60, the same on 8 and 16 threads, where "Adam gets the rest" slows 16
 *              threads (127 GB/s of demand) 1.5-1.7x and 8 threads 1.25x. The copies keep the
 *              h2d_queue model. 0: Adam gets what is left
 *   adam_launch  CPU Adam's rate lost while the GPU compute stream runs and Adam's threads (of
 *              every rank) hold every core: the executor's launch thread then takes a core from
 *              Adam's pinned pool, as Adam takes one from it (starved, starved_s). rate x (1 -
 *              adam_launch). Measured on the H200 machine (fid run E, gpt2-large, 16 threads):
 *              Adam's tasks 0.198-0.209 ns/param alone, 0.227-0.241 beside the GPU's backward
 *              (x1.12-1.18) where 8 threads lose x1.06 (the copies' share, adam_copy);
 *              `calibrate --from-db` there: 0.061, about one core of 16. 0: none
 *   adam_gap_s  the wait of each GPU compute task that starts while CPU Adam runs on fewer
 *              than every core, at Adam's threads x ranks / cores = 1 (seconds; the wait
 *              scales with that share): the executor's issuing thread keeps a core, but
 *              Adam's threads stream through the caches and DRAM it uses, so it falls behind
 *              short kernels and the GPU idles before them. Measured on the H200 machine (fid
 *              run G, 4 rounds, from each task's ready time to its start): 0.3-0.45 us per task
 *              without Adam; 0.7 / 1.2-1.7 / 2.0-2.3 us beside Adam on 2 / 4 / 8 threads of 16
 *              (gpt2-medium and gpt2-large, dpu and overlap): 1.5-2 ms of a 75-230 ms step on
 *              8 threads, which the profile without it predicted 2-5 % fast. On every core
 *              starved / starved_s apply instead. 0: none
 *   comm_gpu, comm_opt  several ranks: the collectives' rate (on the fabric's busbw) while
 *              the GPU compute stream / GPU Adam run: NCCL's kernels share the SMs and HBM
 *              with them (0: 1). Measured on 2 H200s (large-none of 2026-11-30, 50 MB
 *              buckets): a reduce-scatter took 0.16 ms beside backward GEMMs, 0.31 beside
 *              GPU Adam, 0.12 alone (the ring model: 0.111)
 *   comm_wait  several ranks, 1: a collective whose inputs become ready while the rank's compute
 *              stream runs a GEMM with at least one output tile per SM (zb_gemm_fills) makes no
 *              progress until that GEMM ends: the block scheduler hands out the blocks of the
 *              kernel already running before those of a kernel launched later on another stream
 *              (no preemption; stream priorities only order pending blocks: CUDA C++ Programming
 *              Guide, "Stream Priorities"), and NCCL's ring needs all its channels' blocks resident.
 *              Measured on 2 H200s (gpt-2.5b, 50 MB buckets): a reduce-scatter issued as the fc2
 *              GEMM started ran beside it in 0.17 ms; the next two, issued while that 0.57 ms GEMM
 *              ran, ended 0.05-0.1 ms after it. The collective holds its stream while it waits (as
 *              the measured NCCL kernels do). 0: off (the fluid model alone)
 * `zbench calibrate --from-db` fits every factor from the executor's measured task
 * durations (analysis/kfit.h); zb_exec_profile_h200() holds the fit of the H200
 * machine's full validate suite, which a hardware file names ("executor": "h200"); no
 * preset carries a profile (docs/hardware.md).
 */
#ifndef ZB_EXECPROFILE_H
#define ZB_EXECPROFILE_H

#include "common/error.h"

enum { ZB_GEMM_DENSE, ZB_GEMM_BATCHED, ZB_GEMM_UNALIGNED, ZB_GEMM_FLASH, ZB_GEMM_GROUPS };
enum { ZB_EXEC_PASSES = 3 };   /* forward (and recompute), backward data, backward weight */
enum { ZB_EXEC_KOPS = 40 };    /* >= ZB_OP_COUNT (core/graph.h; checked in execprofile.c) */

typedef struct zb_exec_profile {
	int set;                                     /* 0: none (plain model), 1: given, 2: a preset's */
	double gemm_half_dim;                        /* 0: gpu.gemm_half_dim */
	double gemm[ZB_GEMM_GROUPS][ZB_EXEC_PASSES]; /* factor on the GEMM efficiency */
	double kernel[ZB_EXEC_KOPS][2];              /* fraction of hbm_Bps, [op][0 fwd, 1 bwd] */
	double gpu_adam;                             /* fraction of hbm_Bps */
	double launch_s;                             /* 0: gpu.kernel_latency_s */
	double adam_thread;                          /* CPU Adam: factor on cpu.adam_params_per_core */
	double adam_mem;                             /* CPU Adam: factor on the memory ceiling */
	double adam_task_s;                          /* 0: cpu.task_latency_s */
	double starved;                              /* GPU compute rate while Adam holds every core (0: 1) */
	double paced_h2d, paced_d2h;                 /* achieved / asked --link-rate (0: 1) */
	double paced_gpu;                            /* GPU compute rate beside each paced copy (0: 1) */
	double shared_gpu, shared_opt;               /* rates while both GPU streams run (0: 0.5) */
	double h2d_queue;                            /* DMA reads' queueing under DRAM load (0: off) */
	double pageable_queue;                       /* the same for pageable H2D copies (0: h2d_queue) */
	double adam_copy;                            /* CPU Adam's latency slowdown beside DMA (0: budget share) */
	double comm_gpu, comm_opt;                   /* collectives' rate beside compute / GPU Adam (0: 1) */
	double comm_wait;                            /* 1: a collective waits for a GEMM that fills the SMs (0: off) */
	double starved_s;                            /* > 0: starvation as a wait per GPU task instead of starved */
	double adam_launch;                          /* CPU Adam's rate lost beside GPU compute on every core (0: none) */
	double adam_gap_s;                           /* GPU task's wait beside Adam on fewer cores, per core share (0: none) */
} zb_exec_profile;

const char *zb_gemm_group_name(int g);  /* "dense", "batched", "unaligned", "flash" */
const char *zb_exec_pass_name(int p);   /* "fwd", "bwd_data", "bwd_weight" */

/* The fit of the H200 machine (set = 2: the built-in fit, written to files by its name
 * "h200"; 1: from a file or a fit, written in full). */
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
