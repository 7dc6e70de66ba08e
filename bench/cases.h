/*
 * cases.h - the benchmark registry behind `zbench bench` (nvbandwidth's testcase.h,
 * nccl-tests' struct testColl): each case has a name, a group, a description, a
 * filter that can waive it on this machine (no GPU, built without CUDA), and a run
 * function that prints its own rows and adds its figures to a JSON object.
 */
#ifndef ZB_CASES_H
#define ZB_CASES_H

#include <jansson.h>
#include <stdio.h>

#include "common/clock.h" /* zb_wall_s: cases time themselves */
#include "common/error.h"
#include "common/stats.h" /* zb_median */

typedef struct zb_bench_args {
	int repeats;        /* timed repetitions (median reported) */
	int threads;        /* CPU threads for CPU cases (0: all) */
	double size;        /* problem size override (0: the case's default) */
	int quick;          /* smaller sizes, for tests */
} zb_bench_args;

typedef struct zb_bench_case {
	const char *name;
	const char *group;        /* "sim", "cpu", "gpu" */
	const char *description;
	/* NULL when the case can run here, else why not ("built without CUDA") */
	const char *(*waived)(void);
	zb_status (*run)(const zb_bench_args *a, FILE *out, json_t *result, zb_error *err);
} zb_bench_case;

/* Registries of each group, terminated by a zero entry. */
extern const zb_bench_case zb_bench_sim_cases[];
extern const zb_bench_case zb_bench_sweep_cases[];
extern const zb_bench_case zb_bench_cpu_cases[];
extern const zb_bench_case zb_bench_gpu_cases[];
extern const zb_bench_case zb_bench_trace_cases[];

/* The fused-attention case (bench/bench_flash_cuda.c, CUDA builds). */
zb_status zb_bench_run_flash(const zb_bench_args *a, FILE *out, json_t *result, zb_error *err);

/* NCCL collectives on all GPUs (bench/bench_nccl_cuda.c, CUDA builds). */
const char *zb_bench_nccl_waived(void);
zb_status zb_bench_run_nccl(const zb_bench_args *a, FILE *out, json_t *result, zb_error *err);

#endif
