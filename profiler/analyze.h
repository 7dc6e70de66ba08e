/*
 * analyze.h - a trace of a training program, cut into steps and measured in
 * zbench's resource terms (zbench analyze). Plain C over plain arrays: the reader
 * of the database (results/foreign.h) fills a zb_trace_input, the tests build
 * one by hand.
 *
 * Steps. With NVTX ranges whose name (digits ignored: "step 3" = "step #") holds
 * "step" and occurs at least twice, the outermost such name (largest total
 * duration) marks the steps: step i runs from one range's start to the next one's
 * (the last range counts as a step when the ranges fill their periods, >= 90 %).
 * Otherwise the GPU's sequence of operations (kernel names, copy directions)
 * repeats with the training loop: its period p is the smallest lag at which the
 * sequence matches itself (autocorrelation of the token sequence, >= 90 % of the
 * best match, candidate lags from the spacing of rare tokens), and the steps start
 * at each occurrence of the token that occurs once per period and follows the
 * longest GPU idle gap on average (the loop's top, after the optimizer). Without
 * either, the whole trace is one step.
 *
 * Per step [start, end): unions of intervals, clipped to the step, so that
 *   compute_only + copy_only + overlap + idle = step time exactly;
 * compute = kernels, memsets and device-to-device copies; copies = H2D, D2H and
 * other host copies. The CPU optimizer is active where the traced tree's threads
 * other than each process's main thread together use at least cpu_threshold
 * cores (the /proc samples of zbench trace); in a trace without samples (an nsys
 * import) where an NVTX range whose name holds "adam" or "optim" runs.
 * idle_cpu = GPU idle while the CPU optimizer is active: what the GPU was waiting
 * for.
 */
#ifndef ZB_ANALYZE_H
#define ZB_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zb_gpu_op_kind {
	ZB_GOP_KERNEL,
	ZB_GOP_MEMSET,
	ZB_GOP_H2D,
	ZB_GOP_D2H,
	ZB_GOP_D2D,
	ZB_GOP_OTHER_COPY,
	ZB_GOP_KIND_COUNT
} zb_gpu_op_kind;

typedef struct zb_gpu_op {
	int64_t start, end;  /* ns, one clock for the whole input */
	int64_t bytes;       /* copies and memsets */
	int32_t name;        /* index into names (kernels), -1 for none */
	uint8_t kind;        /* zb_gpu_op_kind */
	uint8_t pageable;    /* a copy from or to pageable host memory */
} zb_gpu_op;

typedef struct zb_range {
	int64_t start, end;
	int32_t name;        /* index into names */
	uint32_t tid;
} zb_range;

typedef struct zb_cpu_slice {
	int64_t start, end, cpu_ns;
	uint32_t pid, tid;   /* tid == pid: the process's main thread */
} zb_cpu_slice;

typedef struct zb_trace_input {
	zb_gpu_op *ops;      /* sorted by start (zb_analyze sorts them) */
	size_t nops;
	zb_range *ranges;    /* NVTX ranges (marks left out) */
	size_t nranges;
	zb_cpu_slice *cpu;
	size_t ncpu;
	char **names;
	size_t nnames;
	void *pool;          /* owner of names, for the reader that made them (or NULL) */
} zb_trace_input;

typedef struct zb_analyze_options {
	const char *step_range;  /* NVTX name marking steps (NULL: automatic) */
	int no_nvtx;             /* ignore NVTX: the operation pattern only */
	double cpu_threshold;    /* cores; <= 0: 2 */
} zb_analyze_options;

typedef struct zb_step_stats {
	int64_t start, end;
	double step_s;
	double compute_s, h2d_s, d2h_s, copy_s;       /* busy (union) */
	double compute_only_s, copy_only_s, overlap_s, idle_s; /* sum = step_s */
	double idle_cpu_s;                            /* idle while the CPU optimizer runs */
	double cpu_opt_s;                             /* CPU optimizer active (wall) */
	double cpu_core_s;                            /* CPU time of every thread of the tree */
	double h2d_bytes, d2h_bytes, pageable_bytes;
	double kernels, copies;
	double idle_gaps, max_gap_s;                  /* GPU idle stretches >= 100 us; the longest */
} zb_step_stats;

typedef struct zb_analysis {
	char found_by[200];      /* "nvtx range 'train_step #'", "pattern of 412 operations", "whole trace" */
	char method[16];         /* "nvtx", "pattern", "whole" */
	size_t period;           /* pattern: operations per step */
	const char *cpu_opt_from;  /* how the CPU optimizer was found (static text) */
	zb_step_stats *steps;
	size_t nsteps;
	size_t first_steady;     /* steps before it are warm-up (left out of the median) */
	zb_step_stats median;    /* per field, over the steady steps */
} zb_analysis;

/* Cut in into steps and measure each (in->ops is sorted in place). ZB_E_INPUT
 * when there is no GPU operation at all. */
zb_status zb_analyze(zb_trace_input *in, const zb_analyze_options *opt, zb_analysis *out, zb_error *err);
void zb_analysis_free(zb_analysis *a);

/* Step detection parts, for tests. The period of a token sequence (0: none);
 * *match gets the fraction of positions that match at that lag. */
size_t zb_sequence_period(const int32_t *seq, size_t n, double *match);
/* Normalized NVTX name: each run of digits becomes '#'. */
void zb_nvtx_normalize(const char *s, char *out, size_t n);

/* Length of the union of intervals (a, b sorted by start or not; modifies nothing). */
double zb_union_s(const int64_t *start, const int64_t *end, size_t n);

#ifdef __cplusplus
}
#endif

#endif
