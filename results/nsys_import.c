/*
 * nsys_import.c - an Nsight Systems SQLite export into the store (foreign.h,
 * zb_store_import_nsys). The export is ATTACHed read-only as "nsys"; its strings
 * are added to StringIds and a temporary map renumbers every string id; each
 * table zbench keeps is copied with INSERT .. SELECT (the columns zbench's tables
 * share with the export), in one transaction. Times stay as nsys wrote them (ns
 * from its session start).
 */
#include "results/foreign.h"
#include "results/store_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

static zb_status run_sql(zb_store *s, const char *sql, const char *doing, zb_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(zb_store_db(s), sql, NULL, NULL, &msg) == SQLITE_OK)
		return ZB_OK;
	zb_status st = zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
			       msg ? msg : sqlite3_errmsg(zb_store_db(s)));
	sqlite3_free(msg);
	return st;
}

static int has_table(zb_store *s, const char *table)
{
	sqlite3_stmt *q;
	int found = 0;
	if (sqlite3_prepare_v2(zb_store_db(s), "SELECT 1 FROM nsys.sqlite_master WHERE type = 'table' AND name = ?1", -1,
			       &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	found = sqlite3_step(q) == SQLITE_ROW;
	sqlite3_finalize(q);
	return found;
}

#define MAP(col) "(SELECT dst FROM temp.zb_idmap WHERE src = " col ")"

/* table, then INSERT .. SELECT with ?CFG replaced by the configuration id */
static const struct copy {
	const char *table;
	const char *sql;
} copies[] = {
	{ "CUPTI_ACTIVITY_KIND_KERNEL",
	  "INSERT INTO main.CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, correlationId,"
	  " globalPid, demangledName, shortName, mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY,"
	  " blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId,"
	  " zbConfigId) SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid,"
	  " " MAP("demangledName") ", " MAP("shortName") ", " MAP("mangledName") ", registersPerThread, gridX, gridY,"
	  " gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread,"
	  " localMemoryTotal, gridId, ?CFG FROM nsys.CUPTI_ACTIVITY_KIND_KERNEL" },
	{ "CUPTI_ACTIVITY_KIND_MEMCPY",
	  "INSERT INTO main.CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, contextId, streamId, correlationId,"
	  " globalPid, bytes, copyKind, srcKind, dstKind, zbConfigId) SELECT start, end, deviceId, contextId, streamId,"
	  " correlationId, globalPid, bytes, copyKind, srcKind, dstKind, ?CFG FROM nsys.CUPTI_ACTIVITY_KIND_MEMCPY" },
	{ "CUPTI_ACTIVITY_KIND_MEMSET",
	  "INSERT INTO main.CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, contextId, streamId, correlationId,"
	  " globalPid, value, bytes, memKind, zbConfigId) SELECT start, end, deviceId, contextId, streamId,"
	  " correlationId, globalPid, value, bytes, memKind, ?CFG FROM nsys.CUPTI_ACTIVITY_KIND_MEMSET" },
	{ "CUPTI_ACTIVITY_KIND_RUNTIME",
	  "INSERT INTO main.CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId,"
	  " returnValue, zbConfigId) SELECT start, end, eventClass, globalTid, correlationId, " MAP("nameId") ","
	  " returnValue, ?CFG FROM nsys.CUPTI_ACTIVITY_KIND_RUNTIME" },
	{ "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
	  "INSERT INTO main.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, contextId, streamId,"
	  " correlationId, globalPid, syncType, eventId, zbConfigId) SELECT start, end, deviceId, contextId, streamId,"
	  " correlationId, globalPid, syncType, eventId, ?CFG FROM nsys.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" },
	{ "NVTX_EVENTS",
	  "INSERT INTO main.NVTX_EVENTS(start, end, eventType, rangeId, category, color, text, globalTid,"
	  " endGlobalTid, textId, domainId, zbConfigId, zbKind) SELECT start, end, eventType, rangeId, category, color,"
	  " text, globalTid, endGlobalTid, " MAP("textId") ", domainId, ?CFG, 'program' FROM nsys.NVTX_EVENTS" },
};

/* A row's times as the export writes them: integer ns, the end not before the
 * start; an NVTX mark (a point, not a range) has no end. Rows with text, blobs,
 * reals or an end before the start would give analyze negative or garbage
 * durations: they are left out and counted. */
#define GOOD_TIMES "typeof(start) = 'integer' AND typeof(end) = 'integer' AND end >= start"
#define GOOD_TIMES_NVTX "typeof(start) = 'integer' AND (end IS NULL OR (typeof(end) = 'integer' AND end >= start))"

static const char *good_times(const struct copy *c)
{
	return strcmp(c->table, "NVTX_EVENTS") ? GOOD_TIMES : GOOD_TIMES_NVTX;
}

/* Rows of the export's table whose times are not good. */
static zb_status count_bad_times(zb_store *s, const struct copy *c, int64_t *bad, zb_error *err)
{
	char *sql = sqlite3_mprintf("SELECT count(*) FROM nsys.\"%w\" WHERE NOT (%s)", c->table, good_times(c));
	sqlite3_stmt *q = NULL;
	int rc = sql ? sqlite3_prepare_v2(zb_store_db(s), sql, -1, &q, NULL) : SQLITE_NOMEM;
	sqlite3_free(sql);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	*bad = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	sqlite3_finalize(q);
	if (rc != SQLITE_ROW)
		return zb_fail(err, ZB_E_INPUT, "cannot read %s of the export: %s", c->table, sqlite3_errmsg(zb_store_db(s)));
	return ZB_OK;
}

static zb_status copy_table(zb_store *s, const struct copy *c, int64_t cfg, int64_t *left_out, zb_error *err)
{
	int64_t bad;
	zb_status st = count_bad_times(s, c, &bad, err);
	if (st)
		return st;
	*left_out += bad;
	char num[32];
	snprintf(num, sizeof num, "%lld", (long long)cfg);
	const char *at = strstr(c->sql, "?CFG");
	size_t n = strlen(c->sql) + 32 + strlen(GOOD_TIMES_NVTX) + 16;
	char *sql = zb_xmalloc(n);
	snprintf(sql, n, "%.*s%s%s WHERE %s", (int)(at - c->sql), c->sql, num, at + 4, good_times(c));
	char doing[96];
	snprintf(doing, sizeof doing, "import %s", c->table);
	st = run_sql(s, sql, doing, err);
	free(sql);
	return st;
}

/* The configuration's JSON: {"foreign":"import","file":PATH} (a byte of the path that
 * is not UTF-8 text written as '?'). Caller frees; NULL: out of memory. */
static char *import_json(const char *path)
{
	json_t *j = json_pack("{s:s, s:s}", "foreign", "import", "file", path);
	if (!j) {
		char *t = zb_xmalloc(strlen(path) + 1);
		size_t i = 0;
		for (; path[i]; i++)
			t[i] = (unsigned char)path[i] < 0x80 ? path[i] : '?';
		t[i] = 0;
		j = json_pack("{s:s, s:s}", "foreign", "import", "file", t);
		free(t);
	}
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return text;
}

static zb_status import_body(zb_store *s, const char *path, const zb_run_info *info, int64_t *run_id,
			     int64_t *cfg, int64_t *left_out, zb_error *err)
{
	if (!has_table(s, "CUPTI_ACTIVITY_KIND_KERNEL") && !has_table(s, "CUPTI_ACTIVITY_KIND_MEMCPY"))
		return zb_fail(err, ZB_E_INPUT,
			       "'%s' is not an Nsight Systems SQLite export (no CUPTI_ACTIVITY_KIND_KERNEL or _MEMCPY table)",
			       path);
	if (!has_table(s, "StringIds"))
		return zb_fail(err, ZB_E_INPUT, "'%s' is not an Nsight Systems SQLite export (no StringIds table)", path);
	zb_status st = zb_store_add_run(s, info, run_id, err);
	char *json = import_json(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!st && !json)
		st = zb_fail(err, ZB_E_NOMEM, "out of memory importing '%s'", path);
	if (!st)
		st = zb_store_add_foreign_config(s, *run_id, base, json, cfg, err);
	free(json);
	if (!st)
		st = run_sql(s,
			     "INSERT OR IGNORE INTO main.StringIds(value) SELECT value FROM nsys.StringIds;"
			     "DROP TABLE IF EXISTS temp.zb_idmap;"
			     "CREATE TEMP TABLE zb_idmap(src INTEGER PRIMARY KEY, dst INTEGER);"
			     "INSERT INTO temp.zb_idmap SELECT n.id, m.id FROM nsys.StringIds n JOIN main.StringIds m"
			     " ON m.value = n.value;",
			     "map the export's strings", err);
	*left_out = 0;
	for (size_t i = 0; i < sizeof copies / sizeof copies[0] && !st; i++)
		if (has_table(s, copies[i].table))
			st = copy_table(s, &copies[i], *cfg, left_out, err);
	if (!st)
		st = zb_store_add_trace_meta(s, *cfg, "ZB_IMPORTED_FROM", path, err);
	char n[32];
	snprintf(n, sizeof n, "%lld", (long long)*left_out);
	if (!st && *left_out)
		st = zb_store_add_trace_meta(s, *cfg, "ZB_IMPORT_BAD_TIMES_LEFT_OUT", n, err);
	if (!st)
		st = zb_store_finish_run(s, *run_id, "ok", err);
	(void)run_sql(s, "DROP TABLE IF EXISTS temp.zb_idmap", "drop the string map", NULL);
	return st;
}

zb_status zb_store_import_nsys(zb_store *s, const char *path, const zb_run_info *info, int64_t *run_id,
			       int64_t *config_id, int64_t *left_out, zb_error *err)
{
	int64_t ignored;
	if (!left_out)
		left_out = &ignored;
	*left_out = 0;
	if (access(path, R_OK) != 0)
		return zb_fail(err, ZB_E_INPUT, "cannot read nsys export '%s'", path);
	sqlite3 *db = zb_store_db(s);
	char *uri = store_uri(path, "mode=ro"); /* '?', '#', '%' in the name are its own */
	if (!uri)
		return zb_fail(err, ZB_E_NOMEM, "cannot attach '%s': out of memory", path);
	sqlite3_stmt *q;
	zb_status st = ZB_OK;
	if (sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS nsys", -1, &q, NULL) != SQLITE_OK) {
		sqlite3_free(uri);
		return zb_fail(err, ZB_E_STORE, "cannot attach '%s': %s", path, sqlite3_errmsg(db));
	}
	sqlite3_bind_text(q, 1, uri, -1, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE)
		st = zb_fail(err, ZB_E_INPUT, "cannot open nsys export '%s': %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(q);
	sqlite3_free(uri);
	if (st)
		return st;
	/* a file that is not SQLite fails at its first read */
	if (sqlite3_exec(db, "SELECT count(*) FROM nsys.sqlite_master", NULL, NULL, NULL) != SQLITE_OK)
		st = zb_fail(err, ZB_E_INPUT, "'%s' is not an SQLite database: %s", path, sqlite3_errmsg(db));
	if (!st)
		st = zb_store_begin(s, err);
	if (!st) {
		st = import_body(s, path, info, run_id, config_id, left_out, err);
		if (!st)
			st = zb_store_commit(s, err);
		if (st)
			zb_store_rollback(s);
	}
	(void)sqlite3_exec(db, "DETACH DATABASE nsys", NULL, NULL, NULL);
	return st;
}
