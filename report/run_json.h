/*
 * run_json.h - the JSON document of `zbench run --json`: the configuration at the
 * top level, and the two views of the step kept apart:
 *   "predicted"  the simulator's figures for this schedule (step time over the
 *                measured window, throughput, per-resource busy and work time,
 *                bottleneck, lower bound, memory, task and event counts);
 *   "measured"   the executor's (step time, per-step times, per-resource busy time,
 *                device, CPU threads, Adam ISA; with --link-rate the native and the
 *                achieved copy rates);
 *   "error"      (predicted - measured) / measured, for the step and each resource
 *                that was busy.
 * Keys of a measured value never appear at the top level, so `busy_s` can no longer
 * be read as the measurement.
 */
#ifndef ZB_RUN_JSON_H
#define ZB_RUN_JSON_H

#include <jansson.h>

#include "exec/executor.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "sim/predict.h"

/* `measured` (the caller's object of executor figures) becomes "measured"; warm is the
 * number of warm-up steps (the window of the step figures). Also "attention": the
 * attention tasks (flash: the fused ones; eager: score and context GEMMs and the
 * softmax) per step after warm-up, predicted and measured seconds and the TFLOP/s
 * of their FLOPs (executed FLOPs: what the GEMMs or kernels compute) - the figure
 * that fits gpu.flash_efficiency. */
json_t *zb_run_json(const zb_config *c, const zb_prediction *p, double predicted_step_s,
		    const zb_exec_result *r, json_t *measured, int warm);

/* The executor's figures of one run (one rank): step time, throughput, busy time per
 * resource, the step times, device, CPU threads, Adam ISA, interrupted. */
json_t *zb_run_measured_json(const zb_exec_result *r);

/* What a --trace run recorded: records by kind, bytes, how they were mapped to tasks,
 * what was dropped, the clock. */
json_t *zb_run_trace_json(const zb_trace *t, const zb_spans *spans);

#endif
