/*
 * gpu_entry.h - the table of entry points through which build/zbench reaches its
 * CUDA side, which lives in build/lib/libzbench_gpu.so.
 *
 * Why: linking cudart, cuBLAS(Lt) and CUPTI into zbench made every process map
 * and relocate them (~0.1 s and ~220 MB resident even for `zbench --version`),
 * half the time of a 1260-configuration sweep. Only run, trace, calibrate and the
 * GPU benchmark cases need them, so zbench loads the library on first use
 * (exec/gpu_load_shim.c) and predict, sweep, plot, export never do.
 *
 * The library (every *_cuda.c and *.cu object, linked against the CUDA libraries)
 * exports one symbol, zb_gpu_entry_points; the rest of it stays private (a version
 * script), so its own calls never go through the shim's functions of the same
 * name. Its references to the host code (zb_fail, the predictor, the trace
 * writers, jansson) resolve against zbench itself, linked with --export-dynamic:
 * one copy of every global, whichever side calls.
 *
 * Test programs link the CUDA objects directly (build/libzbench.a), not through
 * this table.
 *
 * Adding an entry point: a function the host C code calls and a *_cuda.c file
 * defines gets a member here, a line in exec/gpu_entry_cuda.c and a forwarder in
 * exec/gpu_load_shim.c (the zbench link fails with an undefined reference until
 * then). Bump ZB_GPU_ABI when the table changes. A layer above exec/ keeps a table
 * of its own in the same library (bench/gpu_entry.h), found with zb_gpu_symbol, so
 * this one names nothing above exec/.
 */
#ifndef ZB_GPU_ENTRY_H
#define ZB_GPU_ENTRY_H

#include <stdio.h>

#include "common/error.h"
#include "exec/executor.h"
#include "exec/nccl_bench.h"
#include "profiler/trace.h"

#define ZB_GPU_ABI 3

typedef struct zb_gpu_entry {
	unsigned abi;  /* ZB_GPU_ABI of the library */
	size_t size;   /* sizeof(zb_gpu_entry) of the library */
	int (*exec_available)(zb_error *err);
	zb_status (*execute)(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			     zb_error *err);
	void (*exec_result_free)(zb_exec_result *r);
	zb_status (*trace_start)(zb_trace *t, zb_error *err);
	zb_status (*trace_stop)(zb_trace *t, zb_error *err);
	/* several GPUs (exec/ranks_cuda.c, exec/nccl_bench_cuda.c) */
	zb_status (*execute_ranks)(const zb_graph *g, const zb_config *c, const zb_exec_options *o,
				   zb_exec_result *r, zb_error *err);
	int (*nccl_gpus)(void);
	zb_status (*nccl_calibrate)(int quick, zb_nccl_fabric *out, FILE *log, zb_error *err);
} zb_gpu_entry;

/* The library's one exported symbol. */
const zb_gpu_entry *zb_gpu_entry_points(void);

/* zbench's side (gpu_load_shim.c): the table, loading the library on first call;
 * NULL when it cannot be loaded, with err saying why (ZB_E_NOCUDA). */
const zb_gpu_entry *zb_gpu_load(zb_error *err);

/* The loaded library's exported symbol `name` (another layer's table), loading the
 * library first; NULL with err (ZB_E_NOCUDA) when it cannot be loaded or has none. */
void *zb_gpu_symbol(const char *name, zb_error *err);

#endif
