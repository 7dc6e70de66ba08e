/*
 * calibrate.h - the GPU measurements of `zbench calibrate` (calibrate_gpu_cuda.c;
 * calibrate_gpu_nocuda.c says "built without CUDA"), handed to validate/calibrate_hw.c,
 * which measures the CPU itself, fits the model (analysis/fit.h) and writes the profile.
 *
 * What is measured, each with warm-up runs and the median of several timed ones:
 *   copies     pinned, 4 KB .. 1 GB (x4 steps): H2D alone, D2H alone, both at once;
 *              pageable, 64 KB .. 1 GB: the same three (exec/copy_bench.h); the data
 *              checked after each size
 *   HBM        the device copy kernel over 64 KB .. 1 GB (zb_bench_copy): time vs
 *              bytes read + written
 *   GEMMs      the shapes (and transposes, batch) the executor runs for the models
 *              asked for, cuBLASLt bf16, CUDA events around each call
 *   GPU Adam   zb_bench_gpu_adam (reported; the model times it by hbm_Bps)
 *   together   the fused CPU Adam on `threads` workers alone, then again while a
 *              second thread keeps pinned copies running both ways: Adam's rate and
 *              the copies' bytes/s over the same window give the DRAM bandwidth the
 *              two flows share (zb_fit_cpu)
 */
#ifndef ZB_CALIBRATE_H
#define ZB_CALIBRATE_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

#define ZB_CALIB_MAX_SIZES 16
#define ZB_CALIB_MAX_GEMMS 64

typedef struct zb_calib_gemm {
	int transa, transb, m, n, k, batch;
	double flops;
	double weight;     /* share of the models' GEMM work (sums to 1 per model) */
	double time_s;     /* measured median */
} zb_calib_gemm;

typedef struct zb_calib_copy {
	double bytes;
	double h2d_s, d2h_s;           /* alone */
	double both_h2d_s, both_d2h_s; /* at once */
} zb_calib_copy;

typedef struct zb_calib_plan {
	int quick;                     /* smaller sizes and fewer repeats */
	int ngemm;
	zb_calib_gemm gemm[ZB_CALIB_MAX_GEMMS]; /* shapes in; time_s out */
	int threads;                   /* CPU Adam workers for the together run */
	int64_t adam_params;           /* parameters of that run */
} zb_calib_plan;

typedef struct zb_calib_gpu {
	char device[128];
	double mem_bytes;              /* device memory, total */
	int npinned, npageable, ndev;
	zb_calib_copy pinned[ZB_CALIB_MAX_SIZES];
	zb_calib_copy pageable[ZB_CALIB_MAX_SIZES];
	double dev_bytes[ZB_CALIB_MAX_SIZES];  /* bytes read + written by one device copy */
	double dev_s[ZB_CALIB_MAX_SIZES];
	int64_t gpu_adam_params;
	double gpu_adam_params_per_s;
	/* Adam and copies together */
	double alone_adam_params_per_s;
	double alone_copy_Bps;         /* copies both ways, Adam idle */
	double together_adam_params_per_s;
	double together_copy_Bps;      /* H2D + D2H bytes/s while Adam ran */
	double seconds;                /* wall time of the GPU part */
} zb_calib_gpu;

/* Run every GPU measurement; progress lines go to log (may be NULL). ZB_E_NOCUDA
 * without CUDA, ZB_E_NOGPU without a device. */
zb_status zb_calibrate_gpu(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err);

#endif
