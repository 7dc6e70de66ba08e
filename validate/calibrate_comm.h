/* calibrate_comm.h - zbench calibrate --from-db ... --fit-comm / --fit-adam: only the
 * collectives' rate factors (execprofile.h comm_gpu, comm_opt; analysis/kfit_comm.h),
 * or only CPU Adam's memory factor (adam_mem; analysis/kfit_adam.h), fitted over --base
 * from runs on several ranks, with in-sample, half-out and leave-one-out predictions. */
#ifndef ZB_CALIBRATE_COMM_H
#define ZB_CALIBRATE_COMM_H

#include "analysis/kfit.h"

/* Fit on s over base (fit_adam: adam_mem, else comm_gpu and comm_opt), print the
 * report, write base with the fitted factors to out. Returns 0 or the error's exit
 * status (reported). */
int zb_calibrate_comm(const zb_kfit_set *s, const zb_hw *base, const char *base_name, const char *out,
		      const char *name, int fit_adam);

#endif
