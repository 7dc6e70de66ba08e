/*
 * calibrate_hw.h - zbench calibrate: measure this machine and fit the simulator's
 * hardware model to it (analysis/fit.h), writing a hardware profile (a --hw JSON
 * file) and the measurements behind every fit (results/records.h: hw_profiles).
 *
 * Measured: the fused CPU Adam over 1, 2, 4, ... threads, a triad, the thread
 * pool's dispatch cost; with a GPU (bench/calibrate.h) copies pinned and pageable,
 * each way alone and both at once, the device copy kernel, the executor's GEMM
 * shapes, GPU Adam, CPU Adam while copies run, and with two GPUs NCCL's collectives.
 * Anything not measured keeps the base's value; a fit that fails says so in a note.
 */
#ifndef ZB_CALIBRATE_HW_H
#define ZB_CALIBRATE_HW_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "results/store.h"

typedef struct zb_calibrate_opts {
	const char *out_path;   /* the profile to write */
	const char *name;       /* its machine name (NULL: calibrated) */
	const char *base_name;  /* values where nothing is measured (NULL: h200-machine) */
	const char *models;     /* GEMM shapes of these presets, "a,b" (NULL: the full suite's) */
	int quick;              /* small sizes, for tests */
	int cpu_only;           /* the CPU alone, no GPU needed */
	int threads;            /* CPU threads (0: all) */
	int mb, seq;            /* micro-batch and sequence length of those shapes (0: the defaults) */
} zb_calibrate_opts;

typedef struct zb_calibration zb_calibration;

/* Plan (the output must be writable, the GPU there unless cpu_only), measure
 * (progress lines on log), fit, validate and write the profile. */
zb_status zb_calibration_run(const zb_calibrate_opts *o, FILE *log, zb_calibration **k, zb_error *err);
void zb_calibration_free(zb_calibration *k);

/* Every measurement behind the fits (the hw_profiles row's document; the caller owns it). */
json_t *zb_calibration_measurements(zb_calibration *k);
/* The device measured, NULL for the CPU alone. */
const char *zb_calibration_device(const zb_calibration *k);
/* The profile as written and the measurements (mtext) into hw_profiles, under run_id. */
zb_status zb_calibration_store(const zb_calibration *k, zb_store *s, int64_t run_id, const char *mtext, zb_error *err);

/* The report: each parameter, base against calibrated, its fit's error and source;
 * the notes; where the profile went (run_id 0: not stored). */
void zb_calibration_text(const zb_calibration *k, int64_t run_id, FILE *out);
/* The same as JSON, with the measurements m (taken). */
json_t *zb_calibration_json(const zb_calibration *k, json_t *m);

#endif
