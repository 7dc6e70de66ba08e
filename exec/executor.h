/*
 * executor.h - runs a schedule (core/graph.h) on the real machine: every GEMM, copy
 * and Adam update of the graph really happens, on real data.
 *
 *   ZB_RES_GPU      one CUDA stream: cuBLASLt bf16 GEMMs with the task's shape,
 *                   elementwise kernels (norms, softmax, activations, loss)
 *   ZB_RES_GPU_OPT  a second CUDA stream: fused GPU Adam on the GPU-resident buckets
 *   ZB_RES_D2H      a dedicated device-to-host stream, pinned (or pageable) buffers
 *   ZB_RES_H2D      a dedicated host-to-device stream
 *   ZB_RES_CPU      a pool of threads pinned to cores running the fused SIMD Adam
 *
 * Each resource has a dispatcher thread that walks that resource's tasks in id
 * order (the order the graph promises). A dependency on another GPU stream is a
 * cudaStreamWaitEvent; a GPU task that depends on a CPU task waits on the host
 * until it finished; the CPU dispatcher waits for GPU work with a blocking-sync
 * event, so waiting burns no core that Adam needs.
 *
 * Times: CPU tasks are timed on the host monotonic clock; GPU tasks with CUDA
 * events converted to that clock through a reference event, so both land on one
 * timeline (seconds from the run's time zero).
 */
#ifndef ZB_EXECUTOR_H
#define ZB_EXECUTOR_H

#include <signal.h>
#include <stdint.h>

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"

typedef struct zb_exec_options {
	int quiet;                     /* no progress line on stderr */
	int check;                     /* precision check: synthetic gradients, double reference */
	uint64_t seed;
	volatile sig_atomic_t *stop;   /* set by a signal handler: stop after the current step */
	/* tracing (profiler/): tag each GPU task's CUDA calls with its id for CUPTI
	 * (zb_trace_push_task; effective while a zb_trace session is active) and name
	 * the executor's streams; record CPU spans into spans (NULL: none): CPU tasks,
	 * pool workers' shares, GPU task issue, host waits longer than 1 us */
	int trace;
	struct zb_spans *spans;
} zb_exec_options;

typedef struct zb_exec_result {
	double *start, *end;           /* per task id, seconds from time zero; -1 if not run */
	size_t ntasks;
	int steps_done;                /* steps fully executed (< g->steps when interrupted) */
	int interrupted;
	double *step_s;                /* [steps_done] time between consecutive step boundaries */
	double step_time_s;            /* steady state, defined as for predictions */
	double tokens_per_s, tflops_per_gpu;
	double busy_s[ZB_RES_COUNT];
	double wall_s;
	int64_t t0_ns;                 /* time zero on the zb_now_ns() clock (CLOCK_MONOTONIC) */
	char device[128];              /* "NVIDIA H200" */
	int cpu_threads;
	const char *adam_isa;          /* "avx512", "avx2", "scalar" */
	double link_native_Bps[2];     /* --link-rate: measured native pinned rate, [0] D2H, [1] H2D */
	/* precision check (check mode) */
	double master_rel_err;         /* ||master - reference|| / ||reference|| */
	double master_max_rel_err;     /* max |master - ref| / (|ref| + 1e-12) */
	int64_t param16_mismatches;    /* GPU 16-bit params that are not RNE(master) */
	int nan_found;
	/* several ranks: FNV-1a of the rank's 16-bit parameters after the run (after a
	 * ZeRO-1/2 step's all-gathers every rank holds the same; 0 with one rank) */
	uint64_t params_digest;
} zb_exec_result;

/* Whether this build can execute (built with CUDA and a GPU is present); on 0, err
 * says why ("built without CUDA", "no CUDA device: ..."). */
int zb_exec_available(zb_error *err);

zb_status zb_execute(const zb_graph *g, const zb_config *c, const zb_exec_options *o,
		     zb_exec_result *r, zb_error *err);
void zb_exec_result_free(zb_exec_result *r);

/* Several GPUs of one node (g->ranks > 1, core/graph.h "Several GPUs"; exec/ranks_cuda.c):
 * rank i on device i in a thread of its own, NCCL (loaded at run time,
 * exec/nccl_dl.h) for the collectives, each rank's CPU Adam on its 1/ranks of the
 * cores. r: g->ranks results, each on its rank's own time zero (r[i].t0_ns on the
 * common host clock). Without --check and --trace; Ctrl-C does not stop it early.
 * One rank: zb_execute. */
zb_status zb_execute_ranks(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			   zb_error *err);

#endif
