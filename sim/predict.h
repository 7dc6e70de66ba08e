/*
 * predict.h - one configuration through the whole model: memory estimate, then
 * (only if it fits) the schedule and its simulation. A configuration that does
 * not fit is reported with the reason, never simulated.
 */
#ifndef ZB_PREDICT_H
#define ZB_PREDICT_H

#include "core/config.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "core/memory.h"

typedef struct zb_prediction {
	zb_config cfg;
	zb_memory mem;
	zb_graph graph;       /* built whenever the configuration is valid */
	zb_sim_result res;    /* valid when simulated */
	int simulated;
} zb_prediction;

zb_status zb_predict(zb_prediction *p, const zb_config *c, zb_error *err);

/* Long gradient accumulation: DeepSpeed's micro-steps between a step's first and its
 * last are the same work, so with gas above ZB_GAS_FULL the schedule is built and
 * simulated with k, k + 1 and k + 2 micro-steps (k = 3: the first, one steady, the
 * last). When the two differences agree (the steady micro-step is periodic, to
 * ZB_GAS_PERIODIC of the step), every figure (step time, busy and alone times,
 * copy bytes, makespan) is the k + 2 one plus (gas - k - 2) differences, and the
 * prediction's graph (the k + 2 one) says so in micro_simulated; when they do not,
 * k doubles, and at k + 2 >= gas the whole schedule is simulated. */
#define ZB_GAS_FULL 12
#define ZB_GAS_PERIODIC 1e-5
/* Whether zb_predict takes that shortcut for c (DeepSpeed, one rank, gas > ZB_GAS_FULL). */
int zb_predict_shortcut(const zb_config *c);
/* The same, every micro-step simulated whatever gas is (the shortcut's reference). */
zb_status zb_predict_all_micro(zb_prediction *p, const zb_config *c, zb_error *err);
/* The same, simulated even where the memory estimate says it does not fit (p->mem
 * still says so): for a measurement that is known to have run, e.g. a published
 * result, whose time is worth predicting although zbench's memory model refuses it. */
zb_status zb_predict_even_if_too_big(zb_prediction *p, const zb_config *c, zb_error *err);
void zb_prediction_free(zb_prediction *p);

/* The warm-up steps a run of c needs before its measured ones are steady: c predicted
 * over at least ZB_SETTLE_STEPS steps, its zb_settle_step (within ZB_SETTLE_TOL) less one
 * (a measured window begins after step `warmup`), at least 2 (the engine's and the
 * executor's own warm-up). *settle gets the step. */
#define ZB_SETTLE_STEPS 12
#define ZB_SETTLE_TOL 0.02
zb_status zb_predict_warmup(const zb_config *c, int *warmup, int *settle, zb_error *err);

/* Free the schedule's tasks and the per-task times, keeping every summary figure
 * (the graph's counts, parameters and copy bytes, the result's times): what a
 * sweep without --timeline keeps of each row, so its memory does not grow with the
 * sum of all schedules. Afterwards graph.tasks, graph.deps and res.start/end are
 * NULL; graph.ntasks still says how many tasks were simulated. */
void zb_prediction_drop_schedule(zb_prediction *p);

#endif
