/*
 * query.h - the named read queries of the results database, and a cursor over
 * their rows, for the modules above results/ that read stored rows (export,
 * plots, baselines). The SQL text of each query lives in results/query.c beside
 * the schema it reads, so a schema change is one folder's change and no SQL is
 * written outside results/.
 *
 *     zb_rows *q;
 *     if (zb_rows_open(store, ZB_Q_EVENTS_OF_SOURCE, &q, err)) return ...;
 *     zb_rows_bind_int(q, 1, config_id);
 *     zb_rows_bind_text(q, 2, "predicted");
 *     while ((rc = zb_rows_next(q)) > 0) ... zb_rows_int(q, 0, -1) ...
 *     st = zb_rows_close(q, rc, "read the events", err);
 *
 * Parameters are numbered from 1 as in the SQL (?1, ?2); columns from 0, in the
 * order listed for each query below.
 */
#ifndef ZB_QUERY_H
#define ZB_QUERY_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

typedef enum zb_query {
	/* runs and configurations; ?1 an id where named. One column. */
	ZB_Q_RUN_ID,                   /* ?1 run: its id, or no row */
	ZB_Q_RUN_MAX,                  /* the largest run id (NULL: none) */
	ZB_Q_RUN_INFO,                 /* ?1 run: 0 kind, 1 started_at, 2 version, 3 git_commit, 4 command, 5 status */
	ZB_Q_CONFIG_ID,                /* ?1 config: its id, or no row */
	ZB_Q_CONFIG_MAX,               /* the largest config id */
	ZB_Q_CONFIG_COUNT,             /* ?1 config: 1 when it exists, else 0 */
	ZB_Q_CONFIG_RUN,               /* ?1 config: its run id */
	ZB_Q_LATEST_SWEEP_RUN,         /* the newest sweep run that has configurations */
	ZB_Q_LATEST_SWEEP_RUN_PREDICTED, /* the newest sweep run with predictions */
	ZB_Q_LATEST_RUN_PREDICTED,     /* the newest run with predictions */
	ZB_Q_LATEST_RUN_MEASURED,      /* the newest run with measured events (NULL: none) */
	ZB_Q_RUN_LATEST_CONFIG_EVENTS, /* ?1 run: its newest configuration with events */
	ZB_Q_LATEST_CONFIG_EVENTS,     /* the newest configuration with events */
	ZB_Q_LATEST_CONFIG_TIMELINE,   /* the newest configuration with anything export writes: events of
					* either source, or trace records (trace, import, run --trace) */

	/* configuration rows with their predictions, by id. Columns: 0 id, 1 run_id, then
	 * the configs columns hw, link, gpu, cpu, cpu_cores, model, policy, ratio,
	 * offload_param, prefetch_layers, ckpt, gas, micro_batch, seq, dtype, pageable,
	 * bucket_params, cpu_threads (2..19), then 20 has a prediction, 21 fits,
	 * 22 tokens_per_s, 23 step_time_s, 24 gpu_bytes, 25 host_bytes, 26 config_json. */
	ZB_Q_CONFIG_ROWS_OF_RUN,       /* ?1 run */
	ZB_Q_CONFIG_ROW,               /* ?1 config */
	ZB_Q_CONFIG_ROWS_MEASURED,     /* every configuration with a prediction and measured steps or events */

	/* timelines; ?1 config */
	ZB_Q_EVENT_COUNT,              /* ?2 source: the number of its events */
	ZB_Q_EVENTS_OF_SOURCE,         /* ?2 source: 0 task_id, 1 start_ns, 2 end_ns, 3 kind, 4 resource,
					* 5 op, 6 pass, 7 step, 8 bytes; by start */
	ZB_Q_STEP_BARS,                /* ?2 source, ?3 step: 0 resource, 1 kind, 2 op, 3 start_ns, 4 end_ns */
	ZB_Q_STEPS_WITH_EVENTS,        /* 0 step (distinct, >= 0, ascending) */
	ZB_Q_MEASURED_STEP_TIMES,      /* 0 time_s of the measured steps rows, by step */
	ZB_Q_MEASURED_STEP_SPANS,      /* 0 step, 1 first start_ns, 2 last end_ns of measured events */
	ZB_Q_RANK_EVENTS,              /* several ranks: 0 rank, 1 t0_offset_ns, 2 slowest, 3 task_id,
					* 4 start_ns, 5 end_ns (on the rank's own zero); by rank, task */

	/* traces (the Nsight Systems export tables); ?1 config */
	ZB_Q_TRACE_RECORD_COUNT,       /* kernels + memcpys + NVTX spans */
	ZB_Q_TIMELINE_ORIGIN,          /* the earliest start of events and trace records (ns) */
	ZB_Q_TRACE_STREAMS,            /* 0 streamId, 1 "name (resource)" or NULL */
	ZB_Q_TRACE_THREAD_NAMES,       /* 0 thread id, 1 name */
	ZB_Q_TRACE_GPU_RECORDS,        /* kernels, memcpys, memsets by start: 0 start, 1 end, 2 streamId,
					* 3 zbTaskId, 4 category, 5 name, 6 bytes, 7 full name, 8..10 grid,
					* 11..13 block, 14 registers, 15 correlationId */
	ZB_Q_TRACE_CPU_RECORDS,        /* CPU spans and CUDA API calls by start: 0 start, 1 end, 2 thread id,
					* 3 zbTaskId, 4 category, 5 name, 6 source, 7 global tid, 8 (unused),
					* 9 thread name */

	/* baselines (results/records.h) */
	ZB_Q_BASELINES,                /* 0 tag, 1 suite, 2 source, 3 repeats, 4 configurations, 5 created_at */

	ZB_Q_COUNT
} zb_query;

typedef struct zb_rows zb_rows;

/* Prepare a named query. ZB_E_STORE with err when the database cannot. */
zb_status zb_rows_open(zb_store *s, zb_query q, zb_rows **out, zb_error *err);
void zb_rows_bind_int(zb_rows *r, int param, int64_t v);
void zb_rows_bind_text(zb_rows *r, int param, const char *v); /* copied */
/* The next row: 1 a row, 0 the end, -1 an error (zb_rows_close reports it). */
int zb_rows_next(zb_rows *r);
int zb_rows_is_null(zb_rows *r, int col);
int64_t zb_rows_int(zb_rows *r, int col, int64_t if_null);
double zb_rows_real(zb_rows *r, int col, double if_null);
const char *zb_rows_text(zb_rows *r, int col); /* NULL for NULL; valid until the next row */
/* Column col of every remaining row into *out (malloc'd, NULL when none; the caller frees
 * it), *n how many. Returns the last zb_rows_next result, for zb_rows_close. */
int zb_rows_reals(zb_rows *r, int col, double if_null, double **out, int *n);
/* Finish with the last zb_rows_next result: ZB_OK after the end (or rc 1: stopped
 * early on purpose), else ZB_E_STORE "cannot <doing> in database '<path>': <why>". */
zb_status zb_rows_close(zb_rows *r, int rc, const char *doing, zb_error *err);

/* One integer from a query (params ?1 = a when it has any); *found = 0 when there is
 * no row or the value is NULL. */
zb_status zb_query_int(zb_store *s, zb_query q, int64_t a, int64_t *out, int *found, zb_error *err);

#endif
