/*
 * store.h - the SQLite results store.
 *
 * One database file holds many runs. A run is one zbench invocation (predict,
 * sweep, run, calibrate, ...) with its time, host, zbench version, git commit and
 * command line. A run has configurations (one per sweep row); a configuration has
 * at most one prediction (the summary figures), and its schedule's tasks; events
 * are timeline intervals, predicted or measured, keyed by (config, source, task),
 * so `predicted JOIN measured ON task_id` is one query.
 *
 * Schema versioned with PRAGMA user_version and forward migrations; WAL journal;
 * foreign keys on; every write inside an explicit transaction so a failure leaves
 * no partial rows. A database from a newer zbench is refused, never touched.
 */
#ifndef ZB_STORE_H
#define ZB_STORE_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "core/memory.h"

#define ZB_STORE_DEFAULT_PATH "results/zbench.db"
/* 1: runs, configs, predictions, tasks, task_deps, events; 2: steps, indexes,
 * the event_pairs view; 3: the trace tables of the Nsight Systems export
 * (StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, ...) and the trace_tasks view;
 * 4: peer_runs and the peer_vs_predicted view (results/peers.h);
 * 5: ZB_THREAD_CPU and trace_steps (traces of other programs, results/foreign.h);
 * 6: hw_profiles, baselines, baseline_results (results/records.h); 7, 8: several
 * GPUs (busy_comm_s and work_comm_s, ranks and rank_events); 9: model_type,
 * skipped_steps and ds_counts of peer_runs (results/peers.h). */
#define ZB_SCHEMA_VERSION 9

/* An open database. It belongs to one thread at a time (the connection is opened
 * without SQLite's mutex); other threads or processes open their own. */
typedef struct zb_store zb_store;

typedef struct zb_run_info {
	const char *kind;        /* "predict", "sweep", "run", ... */
	const char *command;     /* the full command line */
	const char *host;        /* NULL: gethostname() */
	const char *version;     /* zbench version */
	const char *git_commit;  /* NULL or "" if unknown */
	const char *device;      /* GPU name for measured runs, NULL for predictions */
} zb_run_info;

/* Open (creating the file, its parent directory and the schema as needed) and
 * migrate. Errors: unwritable path, locked database (busy for more than
 * busy_timeout_ms), not a database, newer schema version. */
zb_status zb_store_open(zb_store **out, const char *path, int busy_timeout_ms, zb_error *err);
/* The same, migrating only up to schema version (1..ZB_SCHEMA_VERSION): for tests
 * of migrations, which need a database as an older zbench left it. */
zb_status zb_store_open_version(zb_store **out, const char *path, int busy_timeout_ms,
				int version, zb_error *err);
/* Open an existing database for reading only (plot, export): works in a read-only
 * directory or mount, never creates, migrates or writes. Errors: missing file,
 * permission denied, not a zbench database, a schema version other than this
 * zbench's. */
zb_status zb_store_open_readonly(zb_store **out, const char *path, int busy_timeout_ms, zb_error *err);
/* How long a writer waits for another one (a sweep storing its timelines holds
 * the write lock for seconds): writers queue instead of failing. */
#define ZB_STORE_WRITE_WAIT_MS 600000
void zb_store_close(zb_store *s);
int zb_store_schema_version(zb_store *s);

/* Explicit write transactions (BEGIN IMMEDIATE .. COMMIT / ROLLBACK). Wrap all
 * writes of one invocation in one transaction. The zb_store_add_* functions open
 * none themselves: inside a transaction each call is a savepoint (a failed call
 * leaves the transaction as it was, the caller then rolls back); called outside
 * one, a call is its own transaction. */
zb_status zb_store_begin(zb_store *s, zb_error *err);
zb_status zb_store_commit(zb_store *s, zb_error *err);
void zb_store_rollback(zb_store *s);

zb_status zb_store_add_run(zb_store *s, const zb_run_info *info, int64_t *run_id, zb_error *err);
/* Record the run's end (status text, e.g. "ok", "interrupted"). */
zb_status zb_store_finish_run(zb_store *s, int64_t run_id, const char *status, zb_error *err);
/* Record the device a run measured on, once it is known (validate learns it from the
 * first configuration that ran). */
zb_status zb_store_set_run_device(zb_store *s, int64_t run_id, const char *device, zb_error *err);

/* A configuration row: the named parts of cfg as columns (hw, link, gpu, cpu,
 * model, policy, ratio, micro_batch, seq, gas, ...) plus the full JSON text. */
zb_status zb_store_add_config(zb_store *s, int64_t run_id, const zb_config *cfg,
			      const char *config_json, int64_t *config_id, zb_error *err);

/* The predicted summary of a configuration. res may be NULL when the
 * configuration does not fit (mem->fits == 0): the row then records why. */
zb_status zb_store_add_prediction(zb_store *s, int64_t config_id, const zb_graph *g,
				  const zb_sim_result *res, const zb_memory *mem, zb_error *err);

/* The schedule's tasks (one row each: id, kind, resource, op, pass, step, micro,
 * unit, bucket, flops, bytes, params) and their dependencies. */
zb_status zb_store_add_tasks(zb_store *s, int64_t config_id, const zb_graph *g, zb_error *err);

/* Timeline events of one source ("predicted" or "measured"): start and end per
 * task id, in seconds (stored as integer nanoseconds, the Nsight export unit).
 * A task whose start or end is not finite (NaN: not recorded) gets no row. */
zb_status zb_store_add_events(zb_store *s, int64_t config_id, const char *source,
			      const zb_graph *g, const double *start, const double *end,
			      zb_error *err);

/* Measured step times of a run on the GPU: one row per step. */
zb_status zb_store_add_steps(zb_store *s, int64_t config_id, const char *source,
			     int nsteps, const double *step_s, zb_error *err);

/* A measured run's trace (profiler/trace.h, with its records already mapped to
 * tasks by zb_trace_resolve) and its CPU spans (profiler/spans.h, may be NULL), in
 * the Nsight Systems export tables of schema version 3 (see schema.c): every row
 * with zbConfigId = config_id, and zbTaskId where it maps to a task of g (g may be
 * NULL: spans are then labelled by task id only). Times are written in ns relative
 * to origin_ns, the run's time zero on the CLOCK_MONOTONIC clock
 * (zb_exec_result.t0_ns), the zero of the events rows. All rows go in or none
 * (a savepoint inside the caller's transaction, else a transaction of its own). */
struct zb_trace;
struct zb_spans;
zb_status zb_store_add_trace(zb_store *s, int64_t config_id, const zb_graph *g, const struct zb_trace *t,
			     const struct zb_spans *spans, int64_t origin_ns, zb_error *err);
/* Whether the caller opened a transaction with zb_store_begin that is still open
 * in zbench's view (for writers in other files of this module). */
int zb_store_in_transaction(zb_store *s);
/* Inside a transaction, zb_store_add_config and zb_store_add_prediction normally
 * form a savepoint each (two statements more per row, about a third of a sweep
 * row's cost). A caller that rolls its whole transaction back on any failure (a
 * sweep) can turn them off: a failed call then leaves the transaction as it is. */
void zb_store_set_no_savepoints(zb_store *s, int on);

/* Readers, for tests, compare and plots. */
/* Rows of a table or view of this database (the name must be a plain identifier
 * naming an existing table; ZB_E_INPUT otherwise). */
zb_status zb_store_count(zb_store *s, const char *table, int64_t *n, zb_error *err);
/* The newest configuration id; with source ("predicted" or "measured") the newest
 * one that has events of that source. ZB_E_INPUT when there is none. */
zb_status zb_store_latest_config(zb_store *s, const char *source, int64_t *config_id,
				 zb_error *err);
/* The path the store was opened with, for messages. */
const char *zb_store_path(zb_store *s);
/* The underlying handle, for results/ and tests; other modules read through the
 * named queries of results/query.h and write through these functions. */
struct sqlite3 *zb_store_db(zb_store *s);

#endif
