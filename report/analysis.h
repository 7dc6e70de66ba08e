/*
 * analysis.h - a trace's steps and each step's use of the resources
 * (profiler/analyze.h), shown: the medians as a table (busy time, utilization,
 * bytes and achieved rates per resource; the step's compute-only, copy-only,
 * overlapped and idle parts), every step as a row, and all of it as JSON.
 */
#ifndef ZB_REPORT_ANALYSIS_H
#define ZB_REPORT_ANALYSIS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "profiler/analyze.h"

void zb_analysis_print(FILE *f, const zb_analysis *a);
void zb_analysis_steps_print(FILE *f, const zb_analysis *a);
/* {"config_id": cfg, "method", "found_by", ..., "median": {...}, "steps": [...]} */
json_t *zb_analysis_json(const zb_analysis *a, int64_t cfg);

#endif
