/*
 * dscalib.h - the DeepSpeed framework profile against measured runs: predict each
 * measured configuration (dsmeasured.h) and fit the profile (dsprofile.h) to the
 * measured step times by least squares (fit.h, zb_fit_lsq).
 *
 * The fit works on log step times (a 5 % error weighs the same at 450 ms and at
 * 3 s) and, for rows that give it (gpu_busy_ms), on the log of the measured GPU
 * kernel busy time, which pins the GPU's share of a step (gpu_eff) so that the fit
 * cannot trade GPU time for host time: step times alone let it make the kernels
 * slower and the host work faster than measured and in log space of each parameter, with a weak pull towards the profile it
 * starts from (ZB_DS_PRIOR per e-fold), so that parameters the data cannot tell
 * apart stay at their sourced defaults instead of wandering.
 */
#ifndef ZB_DSCALIB_H
#define ZB_DSCALIB_H

#include "common/error.h"
#include "core/config.h"
#include "inputs/dsmeasured.h"

#define ZB_DS_PRIOR 0.03

typedef struct zb_ds_eval {
	double step_s;     /* predicted step time (0 when it does not fit) */
	double gpu_B;      /* predicted GPU peak */
	double host_B;     /* predicted host memory */
	double gpu_busy_s; /* predicted GPU busy time per step (the compute stream) */
	int fits;
} zb_ds_eval;

/* Predict row i of m with base's hardware and profile. */
zb_status zb_ds_eval_row(const zb_ds_measured *m, int i, const zb_config *base, zb_ds_eval *out,
			 zb_error *err);

typedef struct zb_ds_fit_report {
	double rms_before, rms_after;   /* of log(predicted / measured) step time */
	double max_before, max_after;   /* max |predicted / measured - 1| */
	int evaluations;
} zb_ds_fit_report;

/* Step time errors of rows e of m (predicted against measured): the mean and the worst
 * |predicted / measured - 1| over the rows that were predicted. */
typedef struct zb_ds_errors {
	double mape, worst;
	int n;
	int worst_row;
} zb_ds_errors;
void zb_ds_errors_of(const zb_ds_measured *m, const zb_ds_eval *e, zb_ds_errors *out);

/* Fit base->hw.ds (its defaults when unset) to m; writes the fitted profile to *out. */
zb_status zb_ds_calibrate(const zb_ds_measured *m, const zb_config *base, zb_ds_profile *out,
			  zb_ds_fit_report *rep, zb_error *err);

#endif
