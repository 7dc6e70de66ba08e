/* calibrate_comm.h - zbench calibrate --from-db ... --fit-comm / --fit-adam: only the
 * collectives' rate factors (execprofile.h comm_gpu, comm_opt; analysis/kfit_comm.h),
 * or only CPU Adam's memory factor (adam_mem; analysis/kfit_adam.h), fitted over --base
 * from runs on several ranks, with in-sample, half-out and leave-one-out predictions. */
#ifndef ZB_CALIBRATE_COMM_H
#define ZB_CALIBRATE_COMM_H

#include <stdio.h>

#include "analysis/kfit.h"

/* Fit on s over base (fit_adam 1: adam_mem, 2: starved_s, 0: comm_gpu and comm_opt),
 * report on out, write base with the fitted factors to path (named name, NULL: the
 * base's). Nothing to fit it on: ZB_E_INPUT. */
zb_status zb_calibrate_comm(const zb_kfit_set *s, const zb_hw *base, const char *base_name, const char *path,
			    const char *name, int fit_adam, FILE *out, zb_error *err);

#endif
