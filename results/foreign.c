/*
 * foreign.c - foreign traces in the store (foreign.h).
 */
#include "results/foreign.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "profiler/analyze.h"
#include "profiler/procsample.h"
#include "profiler/trace.h"

static zb_status store_sql_fail(zb_store *s, const char *doing, zb_error *err)
{
	return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
		       sqlite3_errmsg(zb_store_db(s)));
}

static zb_status prepare(zb_store *s, const char *sql, sqlite3_stmt **q, const char *doing, zb_error *err)
{
	if (sqlite3_prepare_v2(zb_store_db(s), sql, -1, q, NULL) != SQLITE_OK) {
		*q = NULL;
		return store_sql_fail(s, doing, err);
	}
	return ZB_OK;
}

static zb_status step_done(zb_store *s, sqlite3_stmt *q, int rc, const char *doing, zb_error *err)
{
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_reset(q);
	return rc == SQLITE_OK ? ZB_OK : store_sql_fail(s, doing, err);
}

zb_status zb_store_add_foreign_config(zb_store *s, int64_t run_id, const char *label, const char *json,
				      int64_t *config_id, zb_error *err)
{
	sqlite3_stmt *q;
	zb_status st = prepare(s, "INSERT INTO configs(run_id, model, config_json) VALUES(?1, ?2, ?3)", &q,
			       "prepare the configuration insert", err);
	if (st)
		return st;
	int rc = sqlite3_bind_int64(q, 1, run_id);
	rc |= sqlite3_bind_text(q, 2, label, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(q, 3, json, -1, SQLITE_STATIC);
	st = step_done(s, q, rc, "insert the configuration of a trace", err);
	sqlite3_finalize(q);
	if (!st)
		*config_id = sqlite3_last_insert_rowid(zb_store_db(s));
	return st;
}

zb_status zb_store_add_trace_meta(zb_store *s, int64_t config_id, const char *name, const char *value,
				  zb_error *err)
{
	sqlite3_stmt *q;
	zb_status st = prepare(s, "INSERT INTO META_DATA_EXPORT(name, value, zbConfigId) VALUES(?1, ?2, ?3)", &q,
			       "prepare the metadata insert", err);
	if (st)
		return st;
	int rc = sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(q, 3, config_id);
	st = step_done(s, q, rc, "insert into META_DATA_EXPORT", err);
	sqlite3_finalize(q);
	return st;
}

static zb_status string_id(zb_store *s, const char *value, int64_t *id, zb_error *err)
{
	sqlite3_stmt *q;
	zb_status st = prepare(s, "INSERT OR IGNORE INTO StringIds(value) VALUES(?1)", &q, "prepare a string insert", err);
	if (st)
		return st;
	st = step_done(s, q, sqlite3_bind_text(q, 1, value, -1, SQLITE_STATIC), "add a string", err);
	sqlite3_finalize(q);
	if (st || (st = prepare(s, "SELECT id FROM StringIds WHERE value = ?1", &q, "prepare a string lookup", err)))
		return st;
	int rc = sqlite3_bind_text(q, 1, value, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		*id = sqlite3_column_int64(q, 0);
	else
		st = store_sql_fail(s, "look up a string", err);
	sqlite3_finalize(q);
	return st;
}

zb_status zb_store_add_cpu_samples(zb_store *s, int64_t config_id, const zb_proc_sampler *ps, int64_t origin_ns,
				   zb_error *err)
{
	sqlite3_stmt *q;
	zb_status st = prepare(s, "INSERT INTO ZB_THREAD_CPU(start, end, globalTid, cpuNs, zbConfigId)"
				  " VALUES(?1, ?2, ?3, ?4, ?5)", &q, "prepare the CPU sample insert", err);
	for (size_t i = 0; i < ps->nsamples && !st; i++) {
		const zb_cpu_sample *x = &ps->samples[i];
		int rc = sqlite3_bind_int64(q, 1, x->start - origin_ns);
		rc |= sqlite3_bind_int64(q, 2, x->end - origin_ns);
		rc |= sqlite3_bind_int64(q, 3, ((int64_t)x->pid << 24) | (x->tid & 0xFFFFFF));
		rc |= sqlite3_bind_int64(q, 4, x->cpu_ns);
		rc |= sqlite3_bind_int64(q, 5, config_id);
		st = step_done(s, q, rc, "insert into ZB_THREAD_CPU", err);
	}
	sqlite3_finalize(q);
	if (st || (st = prepare(s, "INSERT INTO ThreadNames(nameId, priority, globalTid, zbConfigId)"
				   " VALUES(?1, NULL, ?2, ?3)", &q, "prepare the thread-name insert", err)))
		return st;
	for (size_t i = 0; i < ps->nthreads && !st; i++) {
		const zb_cpu_thread *t = &ps->threads[i];
		int64_t id = 0;
		if ((st = string_id(s, t->name, &id, err)))
			break;
		int rc = sqlite3_bind_int64(q, 1, id);
		rc |= sqlite3_bind_int64(q, 2, ((int64_t)t->pid << 24) | (t->tid & 0xFFFFFF));
		rc |= sqlite3_bind_int64(q, 3, config_id);
		st = step_done(s, q, rc, "insert into ThreadNames", err);
	}
	sqlite3_finalize(q);
	return st;
}

zb_status zb_store_trace_config(zb_store *s, int64_t run, int64_t *config_id, zb_error *err)
{
	sqlite3_stmt *q;
	const char *sql = run > 0 ? "SELECT max(c.id) FROM configs c WHERE c.run_id = ?1 AND (EXISTS(SELECT 1 FROM"
				    " CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.zbConfigId = c.id) OR EXISTS(SELECT 1 FROM"
				    " CUPTI_ACTIVITY_KIND_MEMCPY m WHERE m.zbConfigId = c.id))"
				  : "SELECT max(zbConfigId) FROM (SELECT zbConfigId FROM CUPTI_ACTIVITY_KIND_KERNEL"
				    " UNION SELECT zbConfigId FROM CUPTI_ACTIVITY_KIND_MEMCPY)";
	zb_status st = prepare(s, sql, &q, "find a traced configuration", err);
	if (st)
		return st;
	if (run > 0)
		sqlite3_bind_int64(q, 1, run);
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW)
		st = store_sql_fail(s, "find a traced configuration", err);
	else if (sqlite3_column_type(q, 0) == SQLITE_NULL)
		st = run > 0 ? zb_fail(err, ZB_E_INPUT, "run %" PRId64 " has no trace in database '%s'", run, zb_store_path(s))
			     : zb_fail(err, ZB_E_INPUT, "database '%s' holds no trace", zb_store_path(s));
	else
		*config_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return st;
}

/* ---- reading a trace back for the analysis ------------------------------------------- */

static void push_op(zb_trace_input *in, size_t *cap, const zb_gpu_op *o)
{
	if (in->nops == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		in->ops = zb_xrealloc(in->ops, *cap * sizeof *in->ops);
	}
	in->ops[in->nops++] = *o;
}

static uint8_t copy_class(int copy_kind)
{
	switch (copy_kind) {
	case 1: return ZB_GOP_H2D;
	case 2: return ZB_GOP_D2H;
	case 8: return ZB_GOP_D2D;
	default: return ZB_GOP_OTHER_COPY;
	}
}

zb_status zb_store_load_trace_input(zb_store *s, int64_t config_id, zb_trace_input *in, zb_error *err)
{
	memset(in, 0, sizeof *in);
	zb_trace *pool = zb_trace_create();
	in->pool = pool;
	static const char *const sql[] = {
		"SELECT k.start, k.end, coalesce(s.value, ''), 0, 0, 0, 0 FROM CUPTI_ACTIVITY_KIND_KERNEL k"
		" LEFT JOIN StringIds s ON s.id = k.shortName WHERE k.zbConfigId = ?1",
		"SELECT start, end, '', bytes, copyKind, coalesce(srcKind, 0), coalesce(dstKind, 0)"
		" FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbConfigId = ?1",
		"SELECT start, end, '', bytes, -1, 0, 0 FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbConfigId = ?1",
		"SELECT n.start, n.end, coalesce(n.text, s.value, ''), n.globalTid, 0, 0, 0 FROM NVTX_EVENTS n"
		" LEFT JOIN StringIds s ON s.id = n.textId WHERE n.zbConfigId = ?1 AND n.end IS NOT NULL"
		" AND n.eventType IN (59, 60) AND (n.zbKind IS NULL OR n.zbKind = 'program')",
		"SELECT start, end, '', globalTid, cpuNs, 0, 0 FROM ZB_THREAD_CPU WHERE zbConfigId = ?1",
	};
	size_t cap_ops = 0, cap_r = 0, cap_c = 0;
	zb_status st = ZB_OK;
	for (int k = 0; k < 5 && !st; k++) {
		sqlite3_stmt *q;
		if ((st = prepare(s, sql[k], &q, "prepare the trace read", err)))
			break;
		sqlite3_bind_int64(q, 1, config_id);
		int rc;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			int64_t a = sqlite3_column_int64(q, 0), b = sqlite3_column_int64(q, 1);
			int64_t x = sqlite3_column_int64(q, 3);
			int y = sqlite3_column_int(q, 4);
			if (k == 0) {
				zb_gpu_op o = { a, b, 0, (int32_t)zb_trace_intern(pool, (const char *)sqlite3_column_text(q, 2)),
						ZB_GOP_KERNEL, 0 };
				push_op(in, &cap_ops, &o);
			} else if (k == 1 || k == 2) {
				zb_gpu_op o = { a, b, x, -1, k == 2 ? ZB_GOP_MEMSET : copy_class(y),
						sqlite3_column_int(q, 5) == 1 || sqlite3_column_int(q, 6) == 1 };
				push_op(in, &cap_ops, &o);
			} else if (k == 3) {
				if (in->nranges == cap_r) {
					cap_r = cap_r ? 2 * cap_r : 256;
					in->ranges = zb_xrealloc(in->ranges, cap_r * sizeof *in->ranges);
				}
				in->ranges[in->nranges++] = (zb_range){ a, b,
					(int32_t)zb_trace_intern(pool, (const char *)sqlite3_column_text(q, 2)), (uint32_t)(x & 0xFFFFFF) };
			} else {
				if (in->ncpu == cap_c) {
					cap_c = cap_c ? 2 * cap_c : 4096;
					in->cpu = zb_xrealloc(in->cpu, cap_c * sizeof *in->cpu);
				}
				in->cpu[in->ncpu++] = (zb_cpu_slice){ a, b, sqlite3_column_int64(q, 4),
					(uint32_t)(x >> 24 & 0xFFFFFF), (uint32_t)(x & 0xFFFFFF) };
			}
		}
		if (rc != SQLITE_DONE)
			st = store_sql_fail(s, "read a trace", err);
		sqlite3_finalize(q);
	}
	in->names = pool->strings;
	in->nnames = pool->nstrings;
	if (st)
		zb_trace_input_free(in);
	return st;
}

void zb_trace_input_free(zb_trace_input *in)
{
	free(in->ops);
	free(in->ranges);
	free(in->cpu);
	zb_trace_free(in->pool);
	memset(in, 0, sizeof *in);
}

zb_status zb_store_add_trace_steps(zb_store *s, int64_t config_id, const zb_analysis *a, zb_error *err)
{
	sqlite3_stmt *q;
	zb_status st = prepare(s, "DELETE FROM trace_steps WHERE config_id = ?1", &q, "prepare the step delete", err);
	if (st)
		return st;
	st = step_done(s, q, sqlite3_bind_int64(q, 1, config_id), "delete old trace_steps", err);
	sqlite3_finalize(q);
	if (st || (st = prepare(s,
				"INSERT INTO trace_steps(config_id, step, start_ns, end_ns, compute_s, h2d_s, d2h_s,"
				" h2d_bytes, d2h_bytes, compute_only_s, copy_only_s, overlap_s, idle_s, idle_cpu_s,"
				" cpu_opt_s, cpu_core_s, kernels, copies, found_by) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
				" ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
				&q, "prepare the trace_steps insert", err)))
		return st;
	for (size_t i = 0; i < a->nsteps && !st; i++) {
		const zb_step_stats *x = &a->steps[i];
		double v[] = { x->compute_s, x->h2d_s, x->d2h_s, x->h2d_bytes, x->d2h_bytes, x->compute_only_s,
			       x->copy_only_s, x->overlap_s, x->idle_s, x->idle_cpu_s, x->cpu_opt_s, x->cpu_core_s };
		int rc = sqlite3_bind_int64(q, 1, config_id);
		rc |= sqlite3_bind_int64(q, 2, (int64_t)i);
		rc |= sqlite3_bind_int64(q, 3, x->start);
		rc |= sqlite3_bind_int64(q, 4, x->end);
		for (int k = 0; k < 12; k++)
			rc |= sqlite3_bind_double(q, 5 + k, v[k]);
		rc |= sqlite3_bind_int64(q, 17, (int64_t)x->kernels);
		rc |= sqlite3_bind_int64(q, 18, (int64_t)x->copies);
		rc |= sqlite3_bind_text(q, 19, a->method, -1, SQLITE_STATIC);
		st = step_done(s, q, rc, "insert into trace_steps", err);
	}
	sqlite3_finalize(q);
	return st;
}
