/*
 * trace_run.h - zbench trace: run any command (DeepSpeed, PyTorch, a CUDA program)
 * with zbench's CUPTI collector injected into each of its CUDA processes
 * (CUDA_INJECTION64_PATH, inherited by child processes), sample the CPU time of
 * every thread of its process tree from /proc meanwhile, and store it all as one
 * run of kind "trace" (results/foreign.h). trace_run.c says how signals and --steps
 * stop it.
 */
#ifndef ZB_TRACE_RUN_H
#define ZB_TRACE_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

typedef struct zb_trace_run_opts {
	const char *db;          /* the database */
	const char *nvtx;        /* "all", "steps" or "none" (the injection library's NVTX handling) */
	const char *step_match;  /* with steps: the text a step range's name holds */
	double sample_ms;        /* CPU sampling period */
	int keep;                /* keep the spool directory */
	unsigned kinds;          /* what is recorded (profiler/trace_kinds.h) */
	long stop_steps;         /* > 0: SIGINT to the command once that many step ranges ended */
	FILE *log;               /* zbench's report (the command's own output is its own) */
} zb_trace_run_opts;

typedef struct zb_trace_run_result {
	int ran;                 /* the command ran (then the fields below are set) */
	int exit_code;           /* its exit status (128 + signal when one ended it) */
	int stopped;             /* ended by the SIGINT of stop_steps */
	int64_t run_id;          /* the stored run */
	int64_t config_id;       /* and its configuration, which holds the trace */
	char spool[64];          /* its records' directory (kept when they could not be stored) */
} zb_trace_run_result;

/* The injection library: ZB_INJECT_LIB, else libzbench_inject.so beside this
 * executable; 0 when it is not there (buf: where it looked). */
int zb_trace_inject_path(char *buf, size_t n);

/* Run cmd (argv style, NULL-terminated) under the collector and store it, the run's
 * command line being `command` and the traced one `traced`. Fails before the command
 * runs (no injection library, database, spool, fork: r->ran 0) or after, when the
 * records cannot be stored (they stay in r->spool). */
zb_status zb_trace_run(char **cmd, const zb_trace_run_opts *o, const char *command, const char *traced,
		       zb_trace_run_result *r, zb_error *err);

#endif
