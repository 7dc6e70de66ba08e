/*
 * foreign.h - traces of programs zbench did not write, in the results store:
 * `zbench trace` (the injection library's records, the /proc CPU samples),
 * `zbench import` (an Nsight Systems SQLite export), and what `zbench analyze`
 * reads back and stores (trace_steps).
 *
 * A foreign trace is one run (kind "trace" or "import") with one configuration
 * row that names the program (model = the program's name, config_json =
 * {"foreign": ..., "command": ...}); every trace row carries its zbConfigId as
 * zbench's own traces do. Times are ns from the run's time zero (the moment
 * `zbench trace` started the program; an nsys export keeps its own zero).
 */
#ifndef ZB_FOREIGN_H
#define ZB_FOREIGN_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

struct zb_proc_sampler;
struct zb_trace_input;
struct zb_analysis;

/* The configuration row of a foreign trace. */
zb_status zb_store_add_foreign_config(zb_store *s, int64_t run_id, const char *label, const char *json,
				      int64_t *config_id, zb_error *err);

/* The sampler's per-thread CPU time (ZB_THREAD_CPU) and its thread names
 * (ThreadNames), times relative to origin_ns. */
zb_status zb_store_add_cpu_samples(zb_store *s, int64_t config_id, const struct zb_proc_sampler *ps,
				   int64_t origin_ns, zb_error *err);

/* A META_DATA_EXPORT row of the configuration. */
zb_status zb_store_add_trace_meta(zb_store *s, int64_t config_id, const char *name, const char *value,
				  zb_error *err);

/* The configuration holding the trace of run `run` (0: the newest run that has
 * trace rows): ZB_E_INPUT naming the run when it has none. */
zb_status zb_store_trace_config(zb_store *s, int64_t run, int64_t *config_id, zb_error *err);

/* GPU operations, NVTX ranges of the program and CPU samples of a configuration,
 * for zb_analyze. Free with zb_trace_input_free. */
zb_status zb_store_load_trace_input(zb_store *s, int64_t config_id, struct zb_trace_input *in, zb_error *err);
void zb_trace_input_free(struct zb_trace_input *in);

/* The analysis's steps (trace_steps; a configuration's old rows are replaced). */
zb_status zb_store_add_trace_steps(zb_store *s, int64_t config_id, const struct zb_analysis *a, zb_error *err);

/* Import an Nsight Systems SQLite export (nsys export --type sqlite) as a new run
 * of kind "import": kernels, memcpys, memsets, runtime/driver API calls,
 * synchronization and NVTX events, with their strings re-numbered into this
 * store's StringIds. path is a plain file name (no URI syntax). Rows whose times
 * are not integers or end before they start are left out; *left_out (may be
 * NULL) counts them (also kept as ZB_IMPORT_BAD_TIMES_LEFT_OUT in META_DATA_EXPORT).
 * All or nothing. ZB_E_INPUT when path is not such an export. */
zb_status zb_store_import_nsys(zb_store *s, const char *path, const zb_run_info *info, int64_t *run_id,
			       int64_t *config_id, int64_t *left_out, zb_error *err);

#endif
