/*
 * kfit_comm.h - the collectives' rate factors of the executor profile (execprofile.h
 * comm_gpu, comm_opt) fitted from runs with several ranks (kfit.h): the values that
 * make the re-simulated collectives' busy time per step (the transfer: the latest
 * rank's start to the ranks' mean end) match the measured one, least squares on the
 * log ratio over the configurations used. They are fitted on whole simulations, not
 * on single tasks, because a collective's measured time mixes its transfer beside
 * compute, beside GPU Adam and alone (and, with comm_wait, the wait for a GEMM that
 * fills the SMs), which only the simulation separates.
 *
 * Search on [0.05, 1]: a golden section on each factor, then Nelder-Mead on both (they
 * trade off where a collective runs beside both streams); a factor the configurations
 * do not constrain (no collective runs beside GPU Adam: every ratio-1 offload) keeps
 * its value in hw.
 */
#ifndef ZB_KFIT_COMM_H
#define ZB_KFIT_COMM_H

#include "analysis/kfit.h"

typedef struct zb_kfit_comm_stats {
	int n;          /* configurations the fit used (several ranks, a measured transfer) */
	double rms;     /* rms of log(predicted / measured) there, after the fit */
	int fit_gpu, fit_opt; /* 1: that factor was fitted (else kept) */
} zb_kfit_comm_stats;

/* Fit hw->gpu.exec.comm_gpu and comm_opt on the items whose use[i] is non-zero (NULL:
 * all); nothing changes when no such item has several ranks. */
zb_status zb_kfit_comm(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_comm_stats *stats,
		       zb_error *err);

#endif
