/*
 * calibrate_ds.h - `zbench calibrate --deepspeed`: fit the DeepSpeed framework
 * profile (dsprofile.h) to measured DeepSpeed runs with the DeepSpeed schedule: the
 * measured rows against their predictions before and after the fit, each
 * configuration's sessions pooled, DeepSpeed's order, the fitted values.
 */
#ifndef ZB_CALIBRATE_DS_H
#define ZB_CALIBRATE_DS_H

#include <stdio.h>

#include "common/error.h"

typedef struct zb_calibrate_ds_opts {
	const char *files[8];   /* the measured runs (TSV tables or harness result lines) */
	int nfiles;             /* >= 1 */
	const char *hw;         /* the machine they ran on (NULL: h200-machine); its profile is the start */
	const char *model;      /* for rows that name none: a preset or a .json file (NULL: the default) */
	long long seq, micro_batch, sub_group; /* likewise (0: the defaults) */
	const char *out;        /* write the hardware profile with the fitted profile (NULL: no) */
	int no_fit;             /* only predict the rows with the start profile */
	int cross_validate;     /* also fit without each configuration, predicting it */
	const char *held[8];    /* runs the fit never sees (another family or regime), predicted with
				   the fitted profile: in-sample and held-out errors side by side */
	int nheld;
} zb_calibrate_ds_opts;

/* Predict the rows, fit, report on out. A file, model or hardware that cannot be
 * read, or a fit that fails: the error (the command exits 1). */
zb_status zb_calibrate_deepspeed(const zb_calibrate_ds_opts *o, FILE *out, zb_error *err);

#endif
