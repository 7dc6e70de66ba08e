/*
 * calibrate_db.h - zbench calibrate --from-db: the executor profile (execprofile.h)
 * fitted to the measured tasks of a validate run (analysis/kfit.h) and written over a
 * base profile, with the step-time error of every measured configuration re-simulated
 * on the base, on the fit (in-sample), on fits of each half predicting the other, and
 * on a fit without what a split rule holds out judged on it and on another database's
 * unseen configurations (analysis/kfit_split.h); or a given profile evaluated (eval); or
 * one group of factors alone: the host's scales (fit_host), the collectives (fit_comm),
 * CPU Adam's memory factor (fit_adam), the GPU's rate beside Adam (fit_starved).
 */
#ifndef ZB_CALIBRATE_DB_H
#define ZB_CALIBRATE_DB_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

typedef struct zb_calibrate_db_opts {
	const char *db;       /* the validate database with measured tasks */
	int64_t run;          /* its run (0: the newest) */
	int all_runs;         /* every run's measured configurations */
	int warmup;           /* warm-up steps the runs left out */
	const char *base;     /* values not fitted (NULL: h200-machine) */
	const char *out;      /* the profile to write */
	const char *name;     /* its machine name (NULL: executor-fit) */
	const char *eval;     /* evaluate this profile, fit nothing (NULL: fit) */
	const char *holdout;  /* a split rule (kfit_split.h): also fit without what it holds out, judged on it */
	const char *judge_db; /* with holdout: also judge on this database's unseen configurations */
	int fit_comm, fit_adam, fit_starved, fit_host; /* one group of factors alone */
	int json, quiet, busy; /* the report as JSON; no per-configuration rows; busy times too */
} zb_calibrate_db_opts;

/* Fit (or evaluate) and report on out; options that cannot go together, an unknown
 * run or a database without measured tasks: ZB_E_INPUT. */
zb_status zb_calibrate_from_db(const zb_calibrate_db_opts *o, FILE *out, zb_error *err);

#endif
