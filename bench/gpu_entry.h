/*
 * gpu_entry.h - bench/'s own table of entry points in build/lib/libzbench_gpu.so
 * (the library of exec/gpu_entry.h): the GPU calibration measurements
 * (calibrate.h) and the GPU benchmark cases (gpu_cases.h), which live in the
 * library beside the executor. build/zbench reaches them through forwarders
 * (bench/gpu_load_shim.c) that look the table up with zb_gpu_symbol, so exec/'s
 * table names nothing of bench/.
 *
 * Adding an entry point: a member here, a line in bench/gpu_entry_cuda.c, a
 * forwarder in bench/gpu_load_shim.c; bump ZB_BENCH_GPU_ABI.
 */
#ifndef ZB_BENCH_GPU_ENTRY_H
#define ZB_BENCH_GPU_ENTRY_H

#include <stdio.h>

#include "bench/calibrate.h"
#include "bench/cases.h"
#include "common/error.h"

#define ZB_BENCH_GPU_ABI 1

typedef struct zb_bench_gpu_entry {
	unsigned abi;  /* ZB_BENCH_GPU_ABI of the library */
	size_t size;   /* sizeof(zb_bench_gpu_entry) of the library */
	zb_status (*calibrate_gpu)(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err);
	/* the GPU benchmark cases, in the order of ZB_BENCH_GPU_CASES (bench/gpu_cases.h) */
	const zb_bench_case *bench_gpu_cases;
} zb_bench_gpu_entry;

/* The library's second exported symbol (exec/gpu_entry.map). */
const zb_bench_gpu_entry *zb_bench_gpu_entry_points(void);

#endif
