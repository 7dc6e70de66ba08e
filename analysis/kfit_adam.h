/*
 * kfit_adam.h - the CPU Adam memory factor of the executor profile (execprofile.h
 * adam_mem) fitted from runs with several ranks (kfit.h): the value that makes the
 * re-simulated CPU busy time per step (the slowest rank's Adam tasks) match the
 * measured one, least squares on the log ratio, by a golden section on [0.3, 1.5] x
 * the value in hw. What it measures: the DRAM rate one rank's Adam pool gets while
 * the node's other pools run too, beside its copies (the DRAM queue of kernels.h
 * stays as it is). The per-thread factor (adam_thread) is kept: runs with one thread
 * count cannot separate it from the memory term, and the host's microbenchmark
 * measures it over 1..cores threads.
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
 * of the items chosen by use (NULL: all) with pinned copies at the native link and at
 * least 2 GB/s of copies beside them: each task cut where a copy starts or ends, its
 * work alone taken as the seconds of each piece times 1 / (1 + k c / hw->cpu.dram_Bps)
 * (c the copies' bytes/s then), against params / its configuration's Adam alone (its
 * tasks with < 2 GB/s of copies beside them; the profile's rate where fewer than 3),
 * least squares of the relative error weighted by duration, golden section on [0, 10].
 * The rate alone comes from the configuration where it can, so that the configurations'
 * own drift (16-thread Adam alone varies by ~10 % between them) stays out of k.
 * Returns 0 when fewer than 20 tasks qualify (keep what hw has). */
double zb_kfit_adam_copy(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *n);

#endif
