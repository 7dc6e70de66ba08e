/* calibrate_comm.h - zbench calibrate --from-db ... --fit-comm: only the collectives'
 * rate factors (execprofile.h comm_gpu, comm_opt) fitted over --base, with in-sample,
 * half-out and leave-one-out predictions (analysis/kfit_comm.h). */
#ifndef ZB_CALIBRATE_COMM_H
#define ZB_CALIBRATE_COMM_H

#include "analysis/kfit.h"

/* Fit on s over base, print the report, write base with the fitted factors to out.
 * Returns 0 or the error's exit status (reported). */
int zb_calibrate_comm(const zb_kfit_set *s, const zb_hw *base, const char *base_name, const char *out,
		      const char *name);

#endif
