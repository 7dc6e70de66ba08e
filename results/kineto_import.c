/*
 * kineto_import.c - a PyTorch profiler (Kineto) trace into the store (import.h,
 * zb_store_import_kineto): read whole by profiler/kineto.h before anything is
 * written, then in one transaction a run of kind "import", its configuration row,
 * the records through the trace writer of zbench's own CUPTI traces
 * (zb_store_add_trace: the same tables, so analyze reads both alike), the threads'
 * names and what the import left out (META_DATA_EXPORT).
 */
#include "results/import.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "results/foreign.h"

static zb_status sql_fail(zb_store *s, const char *doing, zb_error *err)
{
	return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
		       sqlite3_errmsg(zb_store_db(s)));
}

/* The configuration's JSON; a path byte that is not ASCII is written as '?'. */
static char *config_json(const char *path)
{
	char *t = zb_xmalloc(strlen(path) + 1);
	size_t i = 0;
	for (; path[i]; i++)
		t[i] = (unsigned char)path[i] < 0x80 ? path[i] : '?';
	t[i] = 0;
	json_t *j = json_pack("{s:s, s:s, s:s}", "foreign", "import", "format", "kineto", "file", t);
	free(t);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return text;
}

static zb_status thread_names(zb_store *s, int64_t cfg, const zb_kineto_trace *k, zb_error *err)
{
	sqlite3 *db = zb_store_db(s);
	sqlite3_stmt *add = NULL, *ins = NULL;
	if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO StringIds(value) VALUES(?1)", -1, &add, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO ThreadNames(nameId, priority, globalTid, zbConfigId)"
				   " SELECT id, NULL, ?2, ?3 FROM StringIds WHERE value = ?1", -1, &ins, NULL) != SQLITE_OK) {
		sqlite3_finalize(add);
		return sql_fail(s, "prepare the thread-name insert", err);
	}
	zb_status st = ZB_OK;
	for (size_t i = 0; i < k->nthreads && !st; i++) {
		const char *name = zb_trace_string(k->t, k->threads[i].name);
		int64_t gtid = (int64_t)k->threads[i].pid << 24 | (k->threads[i].tid & 0xFFFFFF);
		int rc = sqlite3_bind_text(add, 1, name, -1, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(add) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(add);
		rc |= sqlite3_bind_text(ins, 1, name, -1, SQLITE_STATIC);
		rc |= sqlite3_bind_int64(ins, 2, gtid);
		rc |= sqlite3_bind_int64(ins, 3, cfg);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(ins);
		if (rc != SQLITE_OK)
			st = sql_fail(s, "insert into ThreadNames", err);
	}
	sqlite3_finalize(add);
	sqlite3_finalize(ins);
	return st;
}

static zb_status meta_counts(zb_store *s, int64_t cfg, const char *path, const zb_kineto_trace *k, zb_error *err)
{
	const zb_kineto_counts *n = &k->n;
	char v[64];
	zb_status st = zb_store_add_trace_meta(s, cfg, "ZB_IMPORTED_FROM", path, err);
	if (!st)
		st = zb_store_add_trace_meta(s, cfg, "ZB_IMPORT_FORMAT", "kineto", err);
	const struct { const char *name; int64_t v; } rows[] = {
		{ "ZB_IMPORT_BAD_TIMES_LEFT_OUT", (int64_t)n->bad_times },
		{ "ZB_IMPORT_OTHER_EVENTS_LEFT_OUT", (int64_t)n->other },
		{ "ZB_KINETO_ORIGIN_NS", k->origin_ns },
		{ "ZB_KINETO_PROFILER_STEPS", (int64_t)n->profiler_steps },
		{ "ZB_KINETO_CPU_OPS", (int64_t)n->cpu_ops },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !st; i++) {
		snprintf(v, sizeof v, "%" PRId64, rows[i].v);
		st = zb_store_add_trace_meta(s, cfg, rows[i].name, v, err);
	}
	return st;
}

static zb_status import_body(zb_store *s, const char *path, const zb_run_info *info, const zb_kineto_trace *k,
			     int64_t *run_id, int64_t *cfg, zb_error *err)
{
	zb_status st = zb_store_add_run(s, info, run_id, err);
	char *json = config_json(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!st && !json)
		st = zb_fail(err, ZB_E_INTERNAL, "cannot format the configuration of '%s'", path);
	if (!st)
		st = zb_store_add_foreign_config(s, *run_id, base, json, cfg, err);
	free(json);
	if (!st)
		st = zb_store_add_trace(s, *cfg, NULL, k->t, NULL, 0, err);
	if (!st)
		st = thread_names(s, *cfg, k, err);
	if (!st)
		st = meta_counts(s, *cfg, path, k, err);
	if (!st)
		st = zb_store_finish_run(s, *run_id, "ok", err);
	return st;
}

zb_status zb_store_import_kineto(zb_store *s, const char *path, const zb_run_info *info, int64_t *run_id,
				 int64_t *config_id, zb_kineto_counts *counts, zb_error *err)
{
	zb_kineto_trace k;
	zb_status st = zb_kineto_read(path, &k, err);
	if (st)
		return st;
	*counts = k.n;
	if (!(st = zb_store_begin(s, err))) {
		st = import_body(s, path, info, &k, run_id, config_id, err);
		if (!st)
			st = zb_store_commit(s, err);
		if (st)
			zb_store_rollback(s);
	}
	zb_kineto_free(&k);
	return st;
}
