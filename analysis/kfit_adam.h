/*
 * kfit_adam.h - the CPU Adam memory factor of the executor profile (execprofile.h
 * adam_mem) fitted from runs with several ranks (kfit.h): the value that makes the
 * re-simulated CPU busy time per step (the slowest rank's Adam tasks) match the
 * measured one, least squares on the log ratio, by a golden section on [0.3, 1.5] x
 * the value in hw. What it measures: the DRAM rate one rank's Adam pool gets while
 * the node's other pools run too, beside its copies (the DRAM queue of kernels.h
 * stays as it is). The per-thread factor (adam_thread) is kept: runs with one thread
 * count cannot separate it from the memory term, and the host's microbenchmark
 * measures it over 1..cores threads. Also adam_copy, CPU Adam's slowdown beside the
 * copies, from the measured Adam tasks (below).
 */
#ifndef ZB_KFIT_ADAM_H
#define ZB_KFIT_ADAM_H

#include "analysis/kfit.h"

typedef struct zb_kfit_adam_stats {
	int n;      /* configurations used (several ranks, measured CPU Adam) */
	double rms; /* rms of log(predicted / measured CPU busy) after the fit */
} zb_kfit_adam_stats;

/* Fit hw->gpu.exec.adam_mem on the items whose use[i] is non-zero (NULL: all); nothing
 * changes when no such item has several ranks or hw has no CPU Adam curve. */
zb_status zb_kfit_adam_mem(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_adam_stats *stats,
			   zb_error *err);

/* CPU Adam's slowdown beside DMA (execprofile.h adam_copy), from the measured Adam tasks
 * of the items chosen by use (NULL: all) with pinned copies at the native link: each task's
 * slowdown against its own configuration's Adam alone (its tasks with < 2 GB/s of copies
 * beside them; the profile's rate where fewer than 3) over the copies' bytes/s during the
 * task / hw->cpu.dram_Bps, least squares through the origin weighted by duration. The
 * rate alone comes from the configuration where it can, so that the configurations' own
 * drift (16-thread Adam alone varies by ~10 % between them) stays out of k. A task-average
 * slope: on timelines simulated with k, where copies start and stop inside a task, it
 * gives ~8 % less (the model is linear in the rate at each instant, the rate's average is
 * not the average of its effect); fitted piece by piece instead, the measured tasks give
 * 0.90 where this gives 0.56 (one fid suite) and the other suites are predicted worse: the
 * measured slowdown is concave in the copy rate, and the slope describes it by task as
 * measured (BENCHMARKS.md). Configurations whose Adam threads leave a core free only, where
 * they give 20 tasks: on every core the GPU's launches slow some tasks of both kinds
 * (one core to them, kernels.h zb_exec_adam_launch), which lowers the slope (0.39 for 0.6 on a
 * simulated timeline; a fid suite measured 0.604 with them, 0.675 without). Returns 0 when
 * fewer than 20 tasks have copies beside them. */
double zb_kfit_adam_copy(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *n);

#endif
