/*
 * trace_compare.h - a trace of another program (zbench trace, zbench import) against
 * zbench's prediction of the configuration it runs, resource by resource: step time,
 * GPU busy (compute + GPU optimizer streams against every kernel, memset and device
 * copy), H2D and D2H busy and bytes, CPU optimizer time, with the error of each
 * ((predicted - measured) / measured). Measured: the medians of the trace's analysis
 * (profiler/analyze.h).
 */
#ifndef ZB_TRACE_COMPARE_H
#define ZB_TRACE_COMPARE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "profiler/analyze.h"
#include "sim/predict.h"

/* The measured side: configuration *cfg of db (0: the trace of run `run`, set to it), analyzed. */
zb_status zb_trace_compare_measure(const char *db, int64_t run, int64_t *cfg, const zb_analyze_options *ao,
				  zb_analysis *a, zb_error *err);

/* {"trace_config", "steps_found_by", "steps", "resources": {"step_s": {"predicted",
 * "measured", "error"}, ...}} (the caller owns it; stored as ZB_TRACE_COMPARE). */
json_t *zb_trace_compare_json(const zb_prediction *p, const zb_analysis *a, int64_t trace_cfg);

/* The table for people: the configuration's header lines, a row per resource, and
 * where the comparison was stored (configuration config_id). */
void zb_trace_compare_print(FILE *out, const zb_config *c, const zb_prediction *p, const zb_analysis *a,
			    int64_t trace_cfg, int64_t config_id);

#endif
