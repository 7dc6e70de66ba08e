/*
 * query.c - the SQL of the named read queries (query.h) and the cursor over their
 * rows, a thin layer on a prepared SQLite statement.
 */
#include "results/query.h"

#include <sqlite3.h>
#include <stdlib.h>

/* The columns of a configuration row (query.h lists them). */
#define CONFIG_ROWS                                                                                      \
	"SELECT c.id, c.run_id, c.hw, c.link, c.gpu, c.cpu, c.cpu_cores, c.model, c.policy, c.ratio,"    \
	" c.offload_param, c.prefetch_layers, c.ckpt, c.gas, c.micro_batch, c.seq, c.dtype, c.pageable," \
	" c.bucket_params, c.cpu_threads, p.config_id IS NOT NULL, p.fits, p.tokens_per_s, p.step_time_s," \
	" p.gpu_bytes, p.host_bytes, c.config_json FROM configs c LEFT JOIN predictions p ON p.config_id = c.id"

static const char *const sql[ZB_Q_COUNT] = {
	[ZB_Q_RUN_ID] = "SELECT id FROM runs WHERE id = ?1",
	[ZB_Q_RUN_MAX] = "SELECT max(id) FROM runs",
	[ZB_Q_RUN_INFO] = "SELECT kind, started_at, version, git_commit, command, status FROM runs WHERE id = ?1",
	[ZB_Q_LATEST_RUN_MEASURED] = "SELECT max(c.run_id) FROM configs c WHERE EXISTS(SELECT 1 FROM events e"
	" WHERE e.config_id = c.id AND e.source = 'measured')",
	[ZB_Q_CONFIG_ID] = "SELECT id FROM configs WHERE id = ?1",
	[ZB_Q_CONFIG_MAX] = "SELECT max(id) FROM configs",
	[ZB_Q_CONFIG_COUNT] = "SELECT count(*) FROM configs WHERE id = ?1",
	[ZB_Q_CONFIG_RUN] = "SELECT run_id FROM configs WHERE id = ?1",
	[ZB_Q_LATEST_SWEEP_RUN] = "SELECT max(r.id) FROM runs r WHERE r.kind = 'sweep'"
				  " AND EXISTS(SELECT 1 FROM configs c WHERE c.run_id = r.id)",
	[ZB_Q_LATEST_SWEEP_RUN_PREDICTED] = "SELECT max(c.run_id) FROM configs c JOIN predictions p ON p.config_id = c.id"
					    " JOIN runs r ON r.id = c.run_id WHERE r.kind = 'sweep'",
	[ZB_Q_LATEST_RUN_PREDICTED] = "SELECT max(c.run_id) FROM configs c JOIN predictions p ON p.config_id = c.id",
	[ZB_Q_RUN_LATEST_CONFIG_EVENTS] = "SELECT max(c.id) FROM configs c WHERE c.run_id = ?1"
					  " AND EXISTS(SELECT 1 FROM events e WHERE e.config_id = c.id)",
	[ZB_Q_LATEST_CONFIG_EVENTS] = "SELECT max(config_id) FROM events",
	[ZB_Q_LATEST_CONFIG_TIMELINE] = "SELECT max(x) FROM (SELECT max(config_id) AS x FROM events"
					" UNION ALL SELECT max(zbConfigId) FROM CUPTI_ACTIVITY_KIND_KERNEL"
					" UNION ALL SELECT max(zbConfigId) FROM CUPTI_ACTIVITY_KIND_MEMCPY"
					" UNION ALL SELECT max(zbConfigId) FROM NVTX_EVENTS)",

	[ZB_Q_CONFIG_ROWS_OF_RUN] = CONFIG_ROWS " WHERE c.run_id = ?1 ORDER BY c.id",
	[ZB_Q_CONFIG_ROW] = CONFIG_ROWS " WHERE c.id = ?1 ORDER BY c.id",
	[ZB_Q_CONFIG_ROWS_MEASURED] = CONFIG_ROWS
	" WHERE p.step_time_s > 0 AND (EXISTS(SELECT 1 FROM steps s WHERE s.config_id = c.id"
	" AND s.source = 'measured') OR EXISTS(SELECT 1 FROM events e WHERE"
	" e.config_id = c.id AND e.source = 'measured')) ORDER BY c.id",

	[ZB_Q_EVENT_COUNT] = "SELECT count(*) FROM events WHERE config_id = ?1 AND source = ?2",
	[ZB_Q_EVENTS_OF_SOURCE] =
		"SELECT e.task_id, e.start_ns, e.end_ns, t.kind, t.resource, t.op, t.pass, t.step, t.bytes"
		" FROM events e LEFT JOIN tasks t ON t.config_id = e.config_id AND t.task_id = e.task_id"
		" WHERE e.config_id = ?1 AND e.source = ?2 ORDER BY e.start_ns, e.task_id",
	[ZB_Q_STEP_BARS] = "SELECT t.resource, t.kind, t.op, e.start_ns, e.end_ns FROM events e JOIN tasks t"
			   " ON t.config_id = e.config_id AND t.task_id = e.task_id"
			   " WHERE e.config_id = ?1 AND e.source = ?2 AND t.step = ?3"
			   " ORDER BY e.start_ns, e.task_id",
	[ZB_Q_STEPS_WITH_EVENTS] = "SELECT DISTINCT t.step FROM events e JOIN tasks t ON t.config_id = e.config_id"
				   " AND t.task_id = e.task_id WHERE e.config_id = ?1 AND t.step >= 0 ORDER BY t.step",
	[ZB_Q_MEASURED_STEP_TIMES] = "SELECT time_s FROM steps WHERE config_id = ?1 AND source = 'measured'"
				     " AND time_s > 0 ORDER BY step",
	[ZB_Q_MEASURED_STEP_SPANS] = "SELECT t.step, min(e.start_ns), max(e.end_ns) FROM events e JOIN tasks t"
				     " ON t.config_id = e.config_id AND t.task_id = e.task_id"
				     " WHERE e.config_id = ?1 AND e.source = 'measured' GROUP BY t.step ORDER BY t.step",

	[ZB_Q_RANK_EVENTS] = "SELECT e.rank, r.t0_offset_ns, r.slowest, e.task_id, e.start_ns, e.end_ns"
			     " FROM rank_events e JOIN ranks r ON r.config_id = e.config_id AND r.rank = e.rank"
			     " WHERE e.config_id = ?1 ORDER BY e.rank, e.task_id",

	[ZB_Q_TRACE_RECORD_COUNT] = "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = ?1)"
				    " + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbConfigId = ?1)"
				    " + (SELECT count(*) FROM NVTX_EVENTS WHERE zbConfigId = ?1)",
	[ZB_Q_TIMELINE_ORIGIN] = "SELECT min(m) FROM (SELECT min(start_ns) AS m FROM events WHERE config_id = ?1"
				 " UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = ?1"
				 " UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbConfigId = ?1"
				 " UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbConfigId = ?1"
				 " UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE zbConfigId = ?1"
				 " UNION ALL SELECT min(start) FROM NVTX_EVENTS WHERE zbConfigId = ?1)",
	[ZB_Q_TRACE_STREAMS] =
		"SELECT s.streamId, (SELECT n.name || ' (' || n.zbResource || ')'"
		"  FROM TARGET_INFO_NVTX_CUDA_STREAM n WHERE n.zbConfigId = ?1 AND n.streamId = s.streamId)"
		" FROM (SELECT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = ?1"
		"  UNION SELECT streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbConfigId = ?1"
		"  UNION SELECT streamId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbConfigId = ?1) s"
		" ORDER BY s.streamId",
	[ZB_Q_TRACE_THREAD_NAMES] =
		"SELECT tn.globalTid & 16777215, s.value FROM ThreadNames tn JOIN StringIds s ON s.id = tn.nameId"
		" WHERE tn.zbConfigId = ?1 ORDER BY s.value",
	[ZB_Q_TRACE_GPU_RECORDS] =
		"SELECT * FROM ("
		" SELECT k.start, k.end, k.streamId, k.zbTaskId, 'kernel' AS cat, s.value AS name,"
		"  NULL AS bytes, d.value AS full, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,"
		"  k.registersPerThread, k.correlationId"
		" FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName"
		" LEFT JOIN StringIds d ON d.id = k.demangledName WHERE k.zbConfigId = ?1"
		" UNION ALL SELECT c.start, c.end, c.streamId, c.zbTaskId, 'memcpy', 'memcpy ' || e.label, c.bytes,"
		"  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, c.correlationId"
		" FROM CUPTI_ACTIVITY_KIND_MEMCPY c LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = c.copyKind"
		" WHERE c.zbConfigId = ?1"
		" UNION ALL SELECT start, end, streamId, zbTaskId, 'memset', 'memset', bytes,"
		"  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, correlationId"
		" FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbConfigId = ?1)"
		" ORDER BY 1, 2 DESC",
	[ZB_Q_TRACE_CPU_RECORDS] =
		"SELECT * FROM ("
		" SELECT n.start, n.end, n.globalTid & 16777215 AS tid, n.zbTaskId, n.zbKind AS cat, n.text AS name,"
		"  'cpu_span' AS source, n.globalTid AS gtid FROM NVTX_EVENTS n WHERE n.zbConfigId = ?1"
		" UNION ALL SELECT a.start, a.end, a.globalTid & 16777215, a.zbTaskId,"
		"  CASE a.eventClass WHEN 1 THEN 'cuda_driver' ELSE 'cuda_runtime' END, s.value, 'cuda_api', a.globalTid"
		" FROM CUPTI_ACTIVITY_KIND_RUNTIME a LEFT JOIN StringIds s ON s.id = a.nameId WHERE a.zbConfigId = ?1)"
		" x LEFT JOIN (SELECT tn.globalTid AS g, st.value AS tname FROM ThreadNames tn"
		"  JOIN StringIds st ON st.id = tn.nameId WHERE tn.zbConfigId = ?1) t ON t.g = x.gtid"
		" ORDER BY 1, 2 DESC",

	[ZB_Q_BASELINES] = "SELECT b.tag, b.suite, b.source, b.repeats, (SELECT count(*) FROM baseline_results r"
			   " WHERE r.baseline_id = b.id), b.created_at FROM baselines b ORDER BY b.id",
};

struct zb_rows {
	zb_store *s;
	sqlite3_stmt *q;
};

zb_status zb_rows_open(zb_store *s, zb_query q, zb_rows **out, zb_error *err)
{
	sqlite3 *db = zb_store_db(s);
	sqlite3_stmt *st = NULL;
	*out = NULL;
	if ((int)q < 0 || q >= ZB_Q_COUNT || !sql[q])
		return zb_fail(err, ZB_E_INTERNAL, "unknown query %d", (int)q);
	if (sqlite3_prepare_v2(db, sql[q], -1, &st, NULL) != SQLITE_OK) {
		zb_status rc = zb_fail(err, ZB_E_STORE, "cannot read database '%s': %s", zb_store_path(s),
				       sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return rc;
	}
	zb_rows *r = zb_xcalloc(1, sizeof *r);
	r->s = s;
	r->q = st;
	*out = r;
	return ZB_OK;
}

void zb_rows_bind_int(zb_rows *r, int param, int64_t v)
{
	sqlite3_bind_int64(r->q, param, v);
}

void zb_rows_bind_text(zb_rows *r, int param, const char *v)
{
	sqlite3_bind_text(r->q, param, v, -1, SQLITE_TRANSIENT);
}

int zb_rows_next(zb_rows *r)
{
	int rc = sqlite3_step(r->q);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int zb_rows_is_null(zb_rows *r, int col)
{
	return sqlite3_column_type(r->q, col) == SQLITE_NULL;
}

int64_t zb_rows_int(zb_rows *r, int col, int64_t if_null)
{
	return zb_rows_is_null(r, col) ? if_null : sqlite3_column_int64(r->q, col);
}

double zb_rows_real(zb_rows *r, int col, double if_null)
{
	return zb_rows_is_null(r, col) ? if_null : sqlite3_column_double(r->q, col);
}

int zb_rows_reals(zb_rows *r, int col, double if_null, double **out, int *n)
{
	int cap = 0, rc;
	*out = NULL;
	*n = 0;
	while ((rc = zb_rows_next(r)) > 0) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = zb_xrealloc(*out, (size_t)cap * sizeof **out);
		}
		(*out)[(*n)++] = zb_rows_real(r, col, if_null);
	}
	return rc;
}

const char *zb_rows_text(zb_rows *r, int col)
{
	return (const char *)sqlite3_column_text(r->q, col);
}

zb_status zb_rows_close(zb_rows *r, int rc, const char *doing, zb_error *err)
{
	zb_status st = ZB_OK;
	if (!r)
		return ZB_OK;
	if (rc < 0) {
		sqlite3 *db = zb_store_db(r->s);
		if (doing)
			st = zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(r->s),
				     sqlite3_errmsg(db));
		else
			st = zb_fail(err, ZB_E_STORE, "cannot read database '%s': %s", zb_store_path(r->s),
				     sqlite3_errmsg(db));
	}
	sqlite3_finalize(r->q);
	free(r);
	return st;
}

zb_status zb_query_int(zb_store *s, zb_query q, int64_t a, int64_t *out, int *found, zb_error *err)
{
	zb_rows *r;
	zb_status st = zb_rows_open(s, q, &r, err);
	*found = 0;
	if (st)
		return st;
	if (sqlite3_bind_parameter_count(r->q) > 0)
		zb_rows_bind_int(r, 1, a);
	int rc = zb_rows_next(r);
	if (rc > 0 && !zb_rows_is_null(r, 0)) {
		*out = zb_rows_int(r, 0, 0);
		*found = 1;
	}
	return zb_rows_close(r, rc, NULL, err);
}
