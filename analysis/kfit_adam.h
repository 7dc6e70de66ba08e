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

#endif
