/*
 * compare.h - predicted against measured: the arithmetic of `zbench compare`,
 * `validate` and `regress`, as pure functions over a task graph and timelines
 * (start[], end[] per task id, seconds; a task that did not run has start < 0 or a
 * non-finite time). Nothing here reads a database or a clock, so the tests feed it
 * hand-made timelines.
 *
 * Window: the steady state, as the engine defines it (engine.h): from the end of
 * step `warm` (its last GPU compute task) to the end of the last step; figures "per
 * step" are divided by the number of steps in it. warm < 0 takes the engine's
 * default (2 when there are at least 4 steps, else steps - 2, at least 0).
 *
 * What is summarised for one timeline:
 *   step time       zb_step_time_window (the slowest resource's pace)
 *   busy per resource  union of its tasks' intervals inside the window; equal to
 *                   zb_busy_window when a resource runs one task at a time
 *   union           time at least one resource was busy
 *   overlap         sum of busy - union: time saved by running flows at once
 *   hidden          per resource: its busy time while GPU compute was also busy
 *                   (for GPU compute itself: while any other resource was busy);
 *                   hidden_frac: of all non-GPU-compute busy time, the fraction that
 *                   ran under GPU compute (1: the offload flows cost nothing extra)
 *   critical path   walked back from the end of the last step: each task's binding
 *                   predecessor is whichever of its dependencies and the task
 *                   before it on its resource ended last; the time inside the window
 *                   is charged to the resource of the task that ran, or to "wait"
 *                   where the path has a gap (host overhead, a dependency the graph
 *                   does not show). crit_s + crit_wait_s = the GPU's step pace.
 *   task classes    GEMMs, other GPU kernels, D2H copies, H2D copies, CPU Adam, GPU
 *                   Adam: summed task durations per step over steps warm+1..N-1
 *                   (as many steps as the window holds; by each task's step number,
 *                   so a delayed update counts with the step it belongs to).
 * Errors are (predicted - measured) / measured; NaN where the measured figure is 0.
 */
#ifndef ZB_COMPARE_H
#define ZB_COMPARE_H

#include <stdint.h>

#include "common/error.h"
#include "common/stats.h" /* zb_median: medians of errors and timings */
#include "core/graph.h"

typedef enum zb_task_class {
	ZB_CLASS_GEMM,
	ZB_CLASS_KERNEL,
	ZB_CLASS_D2H,
	ZB_CLASS_H2D,
	ZB_CLASS_CPU_ADAM,
	ZB_CLASS_GPU_ADAM,
	ZB_CLASS_COUNT
} zb_task_class;

zb_task_class zb_task_class_of(const zb_task *t);
const char *zb_task_class_name(zb_task_class c); /* "gemm", "kernel", "copy_d2h", ... */

typedef struct zb_timeline_stats {
	int warm;                        /* warm-up steps left out (resolved) */
	int window_steps;                /* steps the per-step figures are divided by */
	double window_lo_s, window_hi_s; /* the window on the timeline */
	double step_time_s;
	double busy_s[ZB_RES_COUNT];
	double union_s;
	double overlap_s;
	double hidden_s[ZB_RES_COUNT];
	double hidden_frac;
	double crit_s[ZB_RES_COUNT];
	double crit_wait_s;
	int64_t crit_tasks;              /* tasks of the path inside the window */
	double class_s[ZB_CLASS_COUNT];
	int64_t class_n[ZB_CLASS_COUNT]; /* tasks of the class counted */
	int64_t tasks_run;               /* tasks with a valid interval */
} zb_timeline_stats;

/* The default warm-up of a run of `steps` steps (the engine's). */
int zb_default_warm(int steps);

/* Summarise one timeline. ZB_E_INPUT when no task of the graph ran. */
zb_status zb_timeline_stats_compute(const zb_graph *g, const double *start, const double *end, int warm,
				    zb_timeline_stats *out, zb_error *err);

typedef struct zb_comparison {
	zb_timeline_stats pred, meas;
	double step_err;
	double busy_err[ZB_RES_COUNT];
	double class_err[ZB_CLASS_COUNT];
	/* per task, over tasks of steps warm+1..N-1 that ran on both sides with a measured
	 * duration > 0: mean |pred - meas| / meas of the class, and how many */
	double class_task_mape[ZB_CLASS_COUNT];
	int64_t class_tasks[ZB_CLASS_COUNT];
	double hidden_frac_diff;         /* pred - meas (a difference of fractions) */
	double crit_share_diff[ZB_RES_COUNT]; /* pred - meas share of the critical path */
} zb_comparison;

zb_status zb_compare_timelines(const zb_graph *g, const double *pred_start, const double *pred_end,
			       const double *meas_start, const double *meas_end, int warm, zb_comparison *out,
			       zb_error *err);

/* (pred - meas) / meas; NaN when meas is not > 0 or either is not finite. */
double zb_rel_err(double pred, double meas);

/* Mean of |rel_err| over the pairs where it is defined; NaN when none is. *used
 * (may be NULL) gets how many pairs counted. */
double zb_mape(const double *pred, const double *meas, int n, int *used);

/* Largest |rel_err| over the pairs where it is defined (NaN when none is). */
double zb_max_abs_err(const double *pred, const double *meas, int n);

#endif
