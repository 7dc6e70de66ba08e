/*
 * kfit_host.h - a fitted executor profile moved to another host: its CPU and memory
 * scaled to fit a few configurations measured there.
 *
 * Why: the GPU machine is lent, and the host behind the same H200 differs from one time
 * to the next. Full refits of the fid suite on three hosts (BENCHMARKS.md) agree on the
 * GPU's factors within a few percent, but CPU Adam's rates and the DRAM bandwidth moved
 * by 7-17 % (adam_thread 1.02 / 1.19 / 1.10, dram_Bps 138 / 143 / 127 GB/s), so one
 * host's profile predicted another's suite at 6.6-7.0 % MAPE against 1.9-2.0 %
 * in-sample. Scaling the two host figures, fitted on four CPU-bound configurations of
 * the other host (gpt2-large dpu 1 on 2, 4, 8 and 16 threads: they
 * tell the per-core rate from the memory ceiling), brought that to 2.0-2.3 %.
 *
 * The scales: cpu x cpu.adam_params_per_core; mem x cpu.dram_Bps and cpu.adam_Bps.
 * Everything else stays the base's, the pageable copy rates too: the anchor has no
 * pageable copy, and they do not follow its memory scale (on three more hosts, scaled with
 * it, pageable offload came 8.3 -> 4.9 % closer on one, pageable dpu went -8.1 -> -12.8 %
 * on another; their rates differ between hosts by themselves, H2D beside Adam 3.8-6.4
 * GB/s). Where
 * the run has a pageable configuration (the anchor suite's gpt2-medium dpu 1), the pageable
 * terms are fitted from its tasks instead, on the moved host, and it stays out of the grid. The fit: the step-time MAPE of the items (rounds merged,
 * kfit_eval.h) over a grid of both scales, 0.70-1.42 by 0.06, then 0.02 around the best.
 */
#ifndef ZB_KFIT_HOST_H
#define ZB_KFIT_HOST_H

#include "analysis/kfit.h"

typedef struct zb_kfit_host {
	double cpu, mem;          /* the scales fitted */
	double mape_before, mape; /* on the items, at 1 x 1 and at the scales */
	int configs;              /* the configurations (rounds merged) they were fitted on */
	int pageable;             /* measured pageable configurations the pageable terms came from (0: none) */
	int pageable_copies;      /* their copies used (kfit_pageable.h) */
} zb_kfit_host;

/* hw with its host scaled: CPU Adam's per-core rate x cpu, memory x mem (above). */
void zb_kfit_host_apply(zb_hw *hw, double cpu, double mem);

/* The scales that fit s's configurations with pinned copies best over base (an executor
 * profile); *out = base scaled, and where s has pageable configurations, their pageable
 * terms (lone rates, pageable_queue) fitted from their tasks on it (zb_kfit_pageable_fit). */
zb_status zb_kfit_host_fit(const zb_kfit_set *s, const zb_hw *base, zb_hw *out, zb_kfit_host *h, zb_error *err);

/* Out of sample on the run itself: the scales fitted on every other configuration of s
 * (zb_kfit_points: even, then odd; a configuration's rounds on one side), px (one per item
 * of s) the other half predicted with them. Fitted on a suite rather than an anchor, the
 * scales see the host as it was during the suite, not minutes before (on two disturbed
 * hosts the anchor's host was 10-20 % off the suite's on the 16-thread configurations).
 * Fails with fewer than 4 configurations, or when a half has no configuration with pinned
 * copies. */
zb_status zb_kfit_host_half_out(const zb_kfit_set *s, const zb_hw *base, zb_kfit_pred *px, zb_error *err);

#endif
