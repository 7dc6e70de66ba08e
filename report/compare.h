/*
 * compare.h - predicted against measured for one stored configuration (the
 * arithmetic of analysis/compare.h), shown: a table for people (step, the busy
 * time of each resource, each task class, the overlap of the flows, the critical
 * path, a verdict) and the same as JSON.
 */
#ifndef ZB_REPORT_COMPARE_H
#define ZB_REPORT_COMPARE_H

#include <jansson.h>
#include <stdio.h>

#include "analysis/compare.h"
#include "results/timeline.h"

/* "gpt2-large on h200-machine: dpu ratio 1.00, micro-batch 8, seq 1024, gas 1, 16 threads" */
void zb_stored_config_label(const zb_stored_config *i, char *buf, size_t n);

void zb_comparison_print(FILE *f, const zb_stored_config *info, const zb_comparison *c);
json_t *zb_comparison_json(const zb_stored_config *info, const zb_comparison *c);

#endif
