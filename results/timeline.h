/*
 * timeline.h - a stored configuration read back: its schedule (the tasks and
 * task_deps rows rebuilt into a zb_graph) and both timelines (events rows), so
 * `zbench compare` can run the arithmetic of analysis/compare.h on any run in the
 * database without rebuilding the configuration from its JSON.
 *
 * Read-only: uses the store's connection (zb_store_db) for SELECTs only.
 */
#ifndef ZB_TIMELINE_H
#define ZB_TIMELINE_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"
#include "core/graph.h"

typedef struct zb_stored_config {
	int64_t config_id, run_id;
	char run_kind[32];
	char device[128];
	char hw[64], model[64], policy[32];
	double ratio;
	int micro_batch, seq, gas, steps, cpu_threads;
	int warmup;          /* from the run's command line (--warmup N); -1 when not given */
	int64_t predicted;   /* event rows of each source */
	int64_t measured;
} zb_stored_config;

/* The configurations of run_id that have events of `source` ("measured",
 * "predicted"; NULL: all), ascending. *ids is malloc'd (NULL when *n is 0).
 * ZB_E_INPUT when the run does not exist. */
zb_status zb_store_run_configs(zb_store *s, int64_t run_id, const char *source, int64_t **ids, int *n,
			       zb_error *err);

/* The run a configuration belongs to, and its summary (no events loaded).
 * ZB_E_INPUT when the configuration does not exist. */
zb_status zb_store_config_info(zb_store *s, int64_t config_id, zb_stored_config *out, zb_error *err);

/* Load config_id's schedule and timelines: g is filled like zb_graph_build fills it
 * (tasks, deps, steps, tokens_per_step; no buckets) and freed with zb_graph_free;
 * pred_* and meas_* are malloc'd arrays of g->ntasks seconds, -1 where a task has no
 * event of that source. ZB_E_INPUT when the configuration has no stored tasks
 * (predicted without --timeline). */
zb_status zb_store_load_timeline(zb_store *s, int64_t config_id, zb_graph *g, double **pred_start,
				 double **pred_end, double **meas_start, double **meas_end,
				 zb_stored_config *info, zb_error *err);

#endif
