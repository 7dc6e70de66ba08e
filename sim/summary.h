/*
 * summary.h - the figures of a timeline that predict and run both report: the
 * steady-state step time, each resource's busy time per step in the steady window,
 * tokens/s and TFLOP/s of model FLOPs. One definition for the simulator
 * (sim/engine.c) and the executor (exec/executor_cuda.c), so predicted and measured
 * figures are comparable by construction.
 */
#ifndef ZB_SUMMARY_H
#define ZB_SUMMARY_H

#include "core/graph.h"

typedef struct zb_step_summary {
	double step_time_s;          /* zb_steady_step_time */
	double busy_s[ZB_RES_COUNT]; /* zb_busy_window with the default warm-up */
	double tokens_per_s;         /* g->tokens_per_step / step_time_s (0 when no step) */
	double tflops_per_gpu;       /* model FLOPs per step / step_time_s, in TFLOP/s */
} zb_step_summary;

/* Summarize a timeline (start[], end[] per task, in seconds) of all g->steps steps. */
void zb_step_summarize(const zb_graph *g, const double *start, const double *end, zb_step_summary *out);

#endif
