/*
 * report.h - how predictions are shown: for people (a header of '#' lines, a
 * per-resource table with a units row, a verdict) and for machines (JSON with the
 * field names every command shares: step_time_s, tokens_per_s, tflops_per_gpu,
 * bottleneck, lower_bound_s, busy_s, work_s, pcie_bytes, memory, events).
 */
#ifndef ZB_REPORT_H
#define ZB_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "config/resolve.h"
#include "core/config.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "core/memory.h"

/* "# zbench 0.1.0 (abc123) predict" and the configuration, one '#' line each. */
void zb_print_header(FILE *f, const char *command, const zb_config *c);

/* "# inputs:" - each setting, its value, where it came from (flag, ds-config,
 * hf-config, default) and which flag or file key; then one '#' line each on the
 * DeepSpeed and Hugging Face files. files_only: just the settings the files decided
 * (for sweep, whose flags vary per row). */
void zb_sources_print(FILE *f, const zb_config *c, const zb_sources *s, int files_only);

/* Add "sources" ({"ratio": {"from": "ds-config", "detail": ...}, ...}) and, when
 * those files were given, "deepspeed" and "hf_config" objects to j. */
void zb_sources_json(json_t *j, const zb_config *c, const zb_sources *s);

/* "zbench: warning: FILE: N keys not modelled, ignored: a.b, c", one line, when a
 * DeepSpeed config has keys zbench does not model; nothing otherwise. */
void zb_ds_ignored_print(FILE *f, const zb_ds_config *ds);

/* A one-line description of the configuration: "gpt2-large overlap r=1.00 mb=8 ..." */
void zb_config_label(const zb_config *c, char *buf, size_t n);

/* res may be NULL when the configuration does not fit. */
void zb_prediction_print(FILE *f, const zb_config *c, const zb_graph *g, const zb_sim_result *res,
			 const zb_memory *mem);
json_t *zb_prediction_json(const zb_config *c, const zb_graph *g, const zb_sim_result *res,
			   const zb_memory *mem);
void zb_memory_print(FILE *f, const zb_memory *mem);

/* Every task's predicted start and end, one line each. */
void zb_timeline_print(FILE *f, const zb_graph *g, const double *start, const double *end);

/* Print JSON to f with a newline; returns 0 on success. */
int zb_json_print(FILE *f, json_t *j);

#endif
