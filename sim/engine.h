/*
 * engine.h - the discrete-event simulator: runs a task graph on resource models
 * and returns the predicted timeline.
 *
 * Time advances from event to event (a task becomes ready, a task finishes).
 * Rate-based resources are fluid: while several flows share a resource (two
 * copies in one PCIe direction, both directions at once, CPU Adam and DMA drawing
 * on one DRAM, GPU compute and GPU Adam sharing the GPU) each flow's rate is
 * recomputed whenever the set of active flows changes, and its completion event is
 * moved. The resource models live in resources.h; this is the loop around them.
 */
#ifndef ZB_ENGINE_H
#define ZB_ENGINE_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"

typedef struct zb_sim_result {
	double *start;              /* per task id, seconds from time 0 */
	double *end;
	size_t ntasks;
	double total_s;             /* makespan of the whole graph */
	double step_time_s;         /* steady-state time per optimizer step */
	double tokens_per_s;
	double tflops_per_gpu;      /* model FLOPs / step time / 1e12 */
	double busy_s[ZB_RES_COUNT];   /* steady-state busy time per step, by resource */
	double work_s[ZB_RES_COUNT];   /* the same work timed alone, no contention, per step */
	double lower_bound_s;       /* max over resources of work_s */
	zb_resource bottleneck;     /* the resource with the largest busy time */
	zb_resource bound_resource; /* the resource that sets lower_bound_s */
	uint64_t events;            /* events processed */
} zb_sim_result;

/* Simulate g on cfg's hardware. result must be released with zb_sim_result_free. */
zb_status zb_simulate(const zb_graph *g, const zb_config *cfg, zb_sim_result *result,
		      zb_error *err);
void zb_sim_result_free(zb_sim_result *r);

/* Many configurations of one graph (a sweep over hardware): the graph's successor
 * index is built once and shared read-only (by any number of threads); each thread
 * has its own scratch, reused from configuration to configuration so the
 * simulation allocates nothing once the scratch has grown to the largest graph.
 * The result's start/end point into the scratch: valid until its next use, never
 * passed to zb_sim_result_free. Results are identical to zb_simulate's. */
typedef struct zb_sim_index zb_sim_index;
typedef struct zb_sim_scratch zb_sim_scratch;
zb_sim_index *zb_sim_index_new(const zb_graph *g); /* g must outlive the index */
void zb_sim_index_free(zb_sim_index *ix);
zb_sim_scratch *zb_sim_scratch_new(void);
void zb_sim_scratch_free(zb_sim_scratch *w);
zb_status zb_simulate_indexed(const zb_sim_index *ix, zb_sim_scratch *w, const zb_config *cfg,
			      zb_sim_result *result, zb_error *err);
/* With the memo on, a configuration whose simulation inputs (graph, each task's
 * work, fixed costs, the rate of every resource in every busy set) equal bit for
 * bit those of one of the scratch's last 8 simulations gets that result without
 * simulating: the same figures and event count, but start and end NULL. For
 * callers that need only the figures (a sweep without --timeline). */
void zb_sim_scratch_memo(zb_sim_scratch *w, int on);

/* Steady-state step time from per-step boundary times: the step boundary is the
 * end of the last GPU compute task of each step. Shared with the executor so that
 * predicted and measured step times are defined the same way. */
double zb_steady_step_time(const zb_graph *g, const double *end);

/* The same with an explicit warm-up: the mean step time from the end of step
 * `warm` to the end of the last step (the whole run for one step). */
double zb_step_time_window(const zb_graph *g, const double *end, int warm);
/* The first step from which every step's time (between step boundaries, zb_step_boundaries)
 * is within tol of the last two steps' pace: where a timeline's steady state begins. With
 * dpu and a CPU slower than the GPU the GPU first uses up its slack (it may run two steps
 * ahead of the CPU's updates), so the first steps are short: gpt-2.5b, seq 2048, dpu ratio
 * 1 on the H200 machine settles at step 5 predicted (421, 508, 520, 520, 579, then 614 ms),
 * at step 3 measured (466, 356, 466, then 619-678 ms over 23 steps). 0 with < 3 steps. */
int zb_settle_step(const zb_graph *g, const double *end, double tol);

/* Busy time per step of each resource inside the steady-state window (warm < 0:
 * the default warm-up), from any timeline of g: predicted or measured. */
void zb_busy_window(const zb_graph *g, const double *start, const double *end, int warm,
		    double busy[ZB_RES_COUNT]);

/* End of each step (its last GPU compute task), written to out[0 .. g->steps). */
void zb_step_boundaries(const zb_graph *g, const double *end, double *out);

#endif
