/*
 * trace_store.c - the trace writer of store.h (zb_store_add_trace): a run's CUPTI
 * records and CPU spans into the Nsight Systems export tables of schema version 3.
 *
 * Rows go in as multi-row INSERTs (64 rows a statement, fewer for wide tables so a
 * statement stays under SQLite's 32766 parameters), prepared once per call, all in
 * one savepoint or transaction: the same technique as the store's bulk writers,
 * about 1 M rows/s on the build VM for the record mix of a run (tests/test_trace.c
 * prints the rate). Strings (kernel and API names, thread names) are looked up in,
 * or added to, the shared StringIds table once per distinct string.
 *
 * Column conventions: globalPid = pid << 24 and globalTid = pid << 24 | tid (the nsys
 * serialization with hardware and VM ids 0, so "globalTid >> 24 & 0xFFFFFF" is the
 * pid and "globalTid & 0xFFFFFF" the tid); CPU spans are NVTX push/pop ranges
 * (eventType 59) on the thread that recorded them, zbKind naming the span kind
 * (task: a CPU task run; issue: a dispatcher issuing a GPU task; worker: a pool
 * worker's share of a CPU task; wait: a host wait) and int64Value the awaited task
 * of a wait.
 */
#include "results/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "profiler/spans.h"
#include "profiler/trace.h"

#define ROWS 64
#define MAX_PARAMS 32000

typedef struct writer {
	zb_store *s;
	sqlite3 *db;
	int64_t config_id, origin;
	int64_t gpid;       /* pid << 24 */
	uint32_t *sid;      /* trace string id -> StringIds id */
	const zb_trace *t;
	const zb_graph *g;
	zb_error *err;
	uint32_t ctx_dev[16][2]; /* context -> device, from the kernel and copy records */
	int nctx;
	const zb_spans *spans;   /* to put API calls on their span thread's track */
	uint32_t last_thread;    /* api_tid's cache of its last answer */
	int64_t last_tid;
	int have_last;
} writer;

static zb_status fail_sql(writer *w, const char *doing)
{
	return zb_fail(w->err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(w->s),
		       sqlite3_errmsg(w->db));
}

static zb_status exec(writer *w, const char *sql, const char *doing)
{
	return sqlite3_exec(w->db, sql, NULL, NULL, NULL) == SQLITE_OK ? ZB_OK : fail_sql(w, doing);
}

/* ---- strings ------------------------------------------------------------------- */

/* The StringIds id of value, adding the row when it is new. */
static zb_status string_id(writer *w, sqlite3_stmt *find, sqlite3_stmt *add, const char *value, int64_t *id)
{
	int rc = sqlite3_bind_text(find, 1, value, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(find);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(find, 0);
		sqlite3_reset(find);
		return ZB_OK;
	}
	sqlite3_reset(find);
	if (rc != SQLITE_DONE)
		return fail_sql(w, "look up a string");
	rc = sqlite3_bind_text(add, 1, value, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(add);
	sqlite3_reset(add);
	if (rc != SQLITE_DONE)
		return fail_sql(w, "add a string");
	*id = sqlite3_last_insert_rowid(w->db);
	return ZB_OK;
}

typedef struct string_stmts {
	sqlite3_stmt *find, *add;
} string_stmts;

static zb_status strings_open(writer *w, string_stmts *ss)
{
	memset(ss, 0, sizeof *ss);
	if (sqlite3_prepare_v2(w->db, "SELECT id FROM StringIds WHERE value = ?1", -1, &ss->find, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(w->db, "INSERT INTO StringIds(value) VALUES(?1)", -1, &ss->add, NULL) != SQLITE_OK)
		return fail_sql(w, "prepare the string statements");
	return ZB_OK;
}

static void strings_close(string_stmts *ss)
{
	sqlite3_finalize(ss->find);
	sqlite3_finalize(ss->add);
}

/* ---- bulk rows ------------------------------------------------------------------ */

/* Binds row i's ncols parameters from index p on; returns an SQLite code. */
typedef int (*row_fn)(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx);

static sqlite3_stmt *prepare_rows(writer *w, const char *table, const char *cols, int ncols, int rows)
{
	size_t n = strlen(table) + strlen(cols) + 64 + (size_t)rows * (2 * (size_t)ncols + 4);
	char *sql = zb_xmalloc(n), *p = sql;
	p += sprintf(p, "INSERT INTO %s(%s) VALUES ", table, cols);
	for (int r = 0; r < rows; r++) {
		*p++ = r ? ',' : ' ';
		*p++ = '(';
		for (int c = 0; c < ncols; c++) {
			if (c)
				*p++ = ',';
			*p++ = '?';
		}
		*p++ = ')';
	}
	*p = 0;
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &q, NULL) != SQLITE_OK)
		q = NULL;
	free(sql);
	return q;
}

static zb_status bulk(writer *w, const char *table, const char *cols, int ncols, size_t n, row_fn fn,
		      const void *ctx)
{
	if (n == 0)
		return ZB_OK;
	char doing[96];
	snprintf(doing, sizeof doing, "insert into %s", table);
	int rows = ROWS;
	while (rows > 1 && rows * ncols > MAX_PARAMS)
		rows /= 2;
	sqlite3_stmt *many = n >= (size_t)rows ? prepare_rows(w, table, cols, ncols, rows) : NULL;
	sqlite3_stmt *one = prepare_rows(w, table, cols, ncols, 1);
	zb_status st = ZB_OK;
	if (!one || (n >= (size_t)rows && !many))
		st = fail_sql(w, doing);
	size_t i = 0;
	while (!st && i < n) {
		int k = n - i >= (size_t)rows ? rows : 1;
		sqlite3_stmt *q = k > 1 ? many : one;
		int rc = SQLITE_OK;
		for (int r = 0; r < k; r++)
			rc |= fn(w, q, 1 + r * ncols, i + (size_t)r, ctx);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(q);
		if (rc != SQLITE_OK)
			st = fail_sql(w, doing);
		i += (size_t)k;
	}
	sqlite3_finalize(many);
	sqlite3_finalize(one);
	return st;
}

static int bind_task(sqlite3_stmt *q, int p, int32_t task)
{
	return task >= 0 ? sqlite3_bind_int(q, p, task) : sqlite3_bind_null(q, p);
}

static int64_t sid(const writer *w, uint32_t trace_string) { return (int64_t)w->sid[trace_string]; }

static void note_context(writer *w, uint32_t context, uint32_t device)
{
	for (int i = 0; i < w->nctx; i++)
		if (w->ctx_dev[i][0] == context)
			return;
	if (w->nctx < 16) {
		w->ctx_dev[w->nctx][0] = context;
		w->ctx_dev[w->nctx++][1] = device;
	}
}

/* Synchronization records name no device: the device of their context. */
static uint32_t device_of_context(const writer *w, uint32_t context)
{
	for (int i = 0; i < w->nctx; i++)
		if (w->ctx_dev[i][0] == context)
			return w->ctx_dev[i][1];
	return 0;
}

#define KERNEL_COLS                                                                                         \
	"start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName,"    \
	" mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY,"  \
	" blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId," \
	" sharedMemoryExecuted, clusterX, clusterY, clusterZ, zbConfigId, zbTaskId"

static int kernel_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_kernel *k = &w->t->kernels[i];
	int rc = sqlite3_bind_int64(q, p, k->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, k->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, (int)k->device);
	rc |= sqlite3_bind_int64(q, p + 3, k->context);
	rc |= sqlite3_bind_int64(q, p + 4, k->stream);
	rc |= sqlite3_bind_int64(q, p + 5, k->correlation);
	rc |= sqlite3_bind_int64(q, p + 6, w->gpid);
	rc |= sqlite3_bind_int64(q, p + 7, sid(w, k->demangled));
	rc |= sqlite3_bind_int64(q, p + 8, sid(w, k->short_name));
	rc |= sqlite3_bind_int64(q, p + 9, sid(w, k->mangled));
	rc |= sqlite3_bind_int(q, p + 10, k->launch_type);
	rc |= sqlite3_bind_int(q, p + 11, k->cache_config);
	rc |= sqlite3_bind_int(q, p + 12, k->registers);
	for (int d = 0; d < 3; d++) {
		rc |= sqlite3_bind_int(q, p + 13 + d, k->grid[d]);
		rc |= sqlite3_bind_int(q, p + 16 + d, k->block[d]);
		rc |= sqlite3_bind_int64(q, p + 25 + d, k->cluster[d]);
	}
	rc |= sqlite3_bind_int(q, p + 19, k->static_smem);
	rc |= sqlite3_bind_int(q, p + 20, k->dynamic_smem);
	rc |= sqlite3_bind_int64(q, p + 21, k->local_per_thread);
	rc |= sqlite3_bind_int64(q, p + 22, (int64_t)k->local_total);
	rc |= sqlite3_bind_int64(q, p + 23, k->grid_id);
	rc |= sqlite3_bind_int64(q, p + 24, k->shared_executed);
	rc |= sqlite3_bind_int64(q, p + 28, w->config_id);
	rc |= bind_task(q, p + 29, k->task);
	(void)ctx;
	return rc;
}

#define MEMCPY_COLS                                                                                          \
	"start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind," \
	" zbConfigId, zbTaskId"

static int memcpy_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_memcpy *c = &w->t->memcpys[i];
	int rc = sqlite3_bind_int64(q, p, c->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, c->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, (int)c->device);
	rc |= sqlite3_bind_int64(q, p + 3, c->context);
	rc |= sqlite3_bind_int64(q, p + 4, c->stream);
	rc |= sqlite3_bind_int64(q, p + 5, c->correlation);
	rc |= sqlite3_bind_int64(q, p + 6, w->gpid);
	rc |= sqlite3_bind_int64(q, p + 7, (int64_t)c->bytes);
	rc |= sqlite3_bind_int(q, p + 8, c->copy_kind);
	rc |= sqlite3_bind_int(q, p + 9, c->src_kind);
	rc |= sqlite3_bind_int(q, p + 10, c->dst_kind);
	rc |= sqlite3_bind_int64(q, p + 11, w->config_id);
	rc |= bind_task(q, p + 12, c->task);
	(void)ctx;
	return rc;
}

#define MEMSET_COLS                                                                                   \
	"start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, memKind," \
	" zbConfigId, zbTaskId"

static int memset_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_memset *c = &w->t->memsets[i];
	int rc = sqlite3_bind_int64(q, p, c->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, c->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, (int)c->device);
	rc |= sqlite3_bind_int64(q, p + 3, c->context);
	rc |= sqlite3_bind_int64(q, p + 4, c->stream);
	rc |= sqlite3_bind_int64(q, p + 5, c->correlation);
	rc |= sqlite3_bind_int64(q, p + 6, w->gpid);
	rc |= sqlite3_bind_int64(q, p + 7, c->value);
	rc |= sqlite3_bind_int64(q, p + 8, (int64_t)c->bytes);
	rc |= sqlite3_bind_int(q, p + 9, c->mem_kind);
	rc |= sqlite3_bind_int64(q, p + 10, w->config_id);
	rc |= bind_task(q, p + 11, c->task);
	(void)ctx;
	return rc;
}

#define API_COLS "start, end, eventClass, globalTid, correlationId, nameId, returnValue, zbConfigId, zbTaskId"

/* The tid of a CUPTI API record's thread id: itself when it is the tid of a span
 * thread, that thread's tid when it is the low 32 bits of its pthread_self(), else
 * as CUPTI gave it. */
static int64_t api_tid(writer *w, uint32_t thread)
{
	if (w->have_last && w->last_thread == thread)
		return w->last_tid;
	w->have_last = 1;
	w->last_thread = thread;
	w->last_tid = thread;
	int n = zb_spans_nthreads(w->spans);
	for (int i = 0; i < n; i++)
		if (zb_spans_thread_tid(w->spans, i) == (int64_t)thread)
			return thread;
	for (int i = 0; i < n; i++) {
		uint64_t p = zb_spans_thread_pthread(w->spans, i);
		if (p && (uint32_t)p == thread)
			return w->last_tid = zb_spans_thread_tid(w->spans, i);
	}
	return thread;
}

static int api_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_api *a = &w->t->apis[i];
	int rc = sqlite3_bind_int64(q, p, a->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, a->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, a->cls);
	rc |= sqlite3_bind_int64(q, p + 3, ((int64_t)a->process << 24) | (api_tid(w, a->thread) & 0xFFFFFF));
	rc |= sqlite3_bind_int64(q, p + 4, a->correlation);
	rc |= sqlite3_bind_int64(q, p + 5, sid(w, a->name));
	rc |= sqlite3_bind_int64(q, p + 6, a->ret);
	rc |= sqlite3_bind_int64(q, p + 7, w->config_id);
	rc |= bind_task(q, p + 8, a->task);
	(void)ctx;
	return rc;
}

#define SYNC_COLS                                                                                      \
	"start, end, deviceId, contextId, streamId, correlationId, globalPid, syncType, eventId, eventSyncId," \
	" zbConfigId, zbTaskId"

static int sync_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_sync *c = &w->t->syncs[i];
	int rc = sqlite3_bind_int64(q, p, c->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, c->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, (int)device_of_context(w, c->context));
	rc |= sqlite3_bind_int64(q, p + 3, c->context);
	rc |= sqlite3_bind_int64(q, p + 4, c->stream);
	rc |= sqlite3_bind_int64(q, p + 5, c->correlation);
	rc |= sqlite3_bind_int64(q, p + 6, w->gpid);
	rc |= sqlite3_bind_int64(q, p + 7, c->type);
	rc |= sqlite3_bind_int64(q, p + 8, c->event);
	rc |= sqlite3_bind_int64(q, p + 9, (int64_t)c->sync_id);
	rc |= sqlite3_bind_int64(q, p + 10, w->config_id);
	rc |= bind_task(q, p + 11, c->task);
	(void)ctx;
	return rc;
}

#define OVERHEAD_COLS "start, end, eventClass, globalTid, correlationId, overheadType, zbConfigId"

static int overhead_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_overhead *o = &w->t->overheads[i];
	int rc = sqlite3_bind_int64(q, p, o->start - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, o->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, 0);
	rc |= o->process ? sqlite3_bind_int64(q, p + 3, ((int64_t)o->process << 24) | (o->thread & 0xFFFFFF))
			 : sqlite3_bind_null(q, p + 3);
	rc |= sqlite3_bind_int64(q, p + 4, o->correlation);
	rc |= sqlite3_bind_int64(q, p + 5, o->kind);
	rc |= sqlite3_bind_int64(q, p + 6, w->config_id);
	(void)ctx;
	return rc;
}

/* ---- CPU spans as NVTX ranges ------------------------------------------------------ */

typedef struct span_ref {
	const zb_span *sp;
	int64_t gtid;
} span_ref;

typedef struct span_rows {
	span_ref *v;
	size_t n;
} span_rows;

#define NVTX_COLS "start, end, eventType, text, globalTid, int64Value, zbConfigId, zbTaskId, zbKind"

static void span_text(const writer *w, const zb_span *sp, char *buf, size_t n)
{
	const zb_graph *g = w->g;
	int32_t id = sp->kind == ZB_SPAN_WAIT && sp->other >= 0 ? sp->other : sp->task;
	const zb_task *tk = g && id >= 0 && (size_t)id < g->ntasks ? &g->tasks[id] : NULL;
	char what[96];
	if (tk)
		snprintf(what, sizeof what, "%s %s #%d", zb_op_name((zb_op)tk->op), zb_pass_name((zb_pass)tk->pass), id);
	else
		snprintf(what, sizeof what, "#%d", id);
	switch (sp->kind) {
	case ZB_SPAN_WAIT: snprintf(buf, n, "wait for %s", what); break;
	case ZB_SPAN_WORKER: snprintf(buf, n, "%s (share)", what); break;
	case ZB_SPAN_ISSUE: snprintf(buf, n, "issue %s", what); break;
	default: snprintf(buf, n, "%s", what); break;
	}
}

static int nvtx_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const span_ref *r = &((const span_rows *)ctx)->v[i];
	const zb_span *sp = r->sp;
	char text[160];
	span_text(w, sp, text, sizeof text);
	int rc = sqlite3_bind_int64(q, p, sp->start_ns - w->origin);
	rc |= sqlite3_bind_int64(q, p + 1, sp->end_ns - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, 59); /* NvtxPushPopRange */
	rc |= sqlite3_bind_text(q, p + 3, text, -1, SQLITE_TRANSIENT);
	rc |= sqlite3_bind_int64(q, p + 4, r->gtid);
	rc |= sp->other >= 0 ? sqlite3_bind_int(q, p + 5, sp->other) : sqlite3_bind_null(q, p + 5);
	rc |= sqlite3_bind_int64(q, p + 6, w->config_id);
	rc |= bind_task(q, p + 7, sp->task);
	rc |= sqlite3_bind_text(q, p + 8, zb_span_kind_name((zb_span_kind)sp->kind), -1, SQLITE_STATIC);
	return rc;
}

/* NVTX ranges and marks of a traced program (trace.h zb_tr_nvtx), text inline as
 * nsys writes unregistered strings. */
#define PNVTX_COLS "start, end, eventType, text, globalTid, endGlobalTid, zbConfigId, zbKind"

static int program_nvtx_row(writer *w, sqlite3_stmt *q, int p, size_t i, const void *ctx)
{
	const zb_tr_nvtx *n = &w->t->nvtxs[i];
	int64_t gpid = n->process ? (int64_t)n->process << 24 : w->gpid;
	int rc = sqlite3_bind_int64(q, p, n->start - w->origin);
	rc |= n->event_type == ZB_NVTX_MARK ? sqlite3_bind_null(q, p + 1) : sqlite3_bind_int64(q, p + 1, n->end - w->origin);
	rc |= sqlite3_bind_int(q, p + 2, n->event_type);
	rc |= sqlite3_bind_text(q, p + 3, zb_trace_string(w->t, n->text), -1, SQLITE_STATIC);
	rc |= sqlite3_bind_int64(q, p + 4, gpid | (n->thread & 0xFFFFFF));
	rc |= sqlite3_bind_null(q, p + 5);
	rc |= sqlite3_bind_int64(q, p + 6, w->config_id);
	rc |= sqlite3_bind_text(q, p + 7, zb_nvtx_kind_name((zb_nvtx_kind)n->kind), -1, SQLITE_STATIC);
	(void)ctx;
	return rc;
}

/* ---- small tables ---------------------------------------------------------------- */

static zb_status one_row(writer *w, const char *sql, const char *doing, sqlite3_stmt **q)
{
	if (sqlite3_prepare_v2(w->db, sql, -1, q, NULL) != SQLITE_OK)
		return fail_sql(w, doing);
	return ZB_OK;
}

static zb_status step_reset(writer *w, sqlite3_stmt *q, int rc, const char *doing)
{
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return rc == SQLITE_OK ? ZB_OK : fail_sql(w, doing);
}

static zb_status write_meta(writer *w, const char *name, const char *value, sqlite3_stmt *q)
{
	int rc = sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	rc |= sqlite3_bind_text(q, 2, value, -1, SQLITE_TRANSIENT);
	rc |= sqlite3_bind_int64(q, 3, w->config_id);
	return step_reset(w, q, rc, "insert into META_DATA_EXPORT");
}

static zb_status write_small(writer *w, const zb_spans *spans, string_stmts *ss)
{
	const zb_trace *t = w->t;
	sqlite3_stmt *q = NULL;
	zb_status st = one_row(w, "INSERT INTO META_DATA_EXPORT(name, value, zbConfigId) VALUES(?1, ?2, ?3)",
			       "prepare the metadata insert", &q);
	char v[64];
#define META_I(name, val)                                                     \
	do {                                                                  \
		snprintf(v, sizeof v, "%" PRId64, (int64_t)(val));            \
		if (!st)                                                      \
			st = write_meta(w, name, v, q);                       \
	} while (0)
	if (!st)
		st = write_meta(w, "ZB_CLOCK", "CLOCK_MONOTONIC", q);
	if (!st)
		st = write_meta(w, "ZB_CLOCK_METHOD", t->clock_method ? t->clock_method : "none", q);
	META_I("ZB_CLOCK_OFFSET_NS", t->clock_offset_ns);
	META_I("ZB_CLOCK_RESIDUAL_NS", t->clock_residual_ns);
	META_I("ZB_ORIGIN_MONOTONIC_NS", w->origin);
	META_I("ZB_PROCESS_ID", t->pid);
	META_I("ZB_DROPPED_RECORDS", t->dropped);
	META_I("ZB_KERNEL_LAUNCHES", t->launches);
	META_I("ZB_KERNEL_RECORDS", t->nkernels);
	META_I("ZB_MAPPED_BY_TAG", t->mapped_tag);
	META_I("ZB_MAPPED_BY_TIME", t->mapped_time);
	META_I("ZB_UNMAPPED", t->unmapped);
	META_I("ZB_BUFFERS", t->buffers);
	META_I("ZB_BUFFER_FAILURES", t->buffer_failures);
	META_I("ZB_PARSE_ERRORS", t->parse_errors);
	META_I("ZB_UNKNOWN_RECORDS", t->unknown_records);
	META_I("ZB_UNTIMED_RECORDS", t->untimed_records);
	META_I("ZB_KINDS_REFUSED", t->kinds_refused);
	if (t->nnvtxs || t->nvtx_unmatched)
		META_I("ZB_NVTX_UNMATCHED", t->nvtx_unmatched);
	META_I("ZB_SESSION_START_NS", t->started_ns ? t->started_ns - w->origin : 0);
	META_I("ZB_SESSION_STOP_NS", t->stopped_ns ? t->stopped_ns - w->origin : 0);
#undef META_I
	sqlite3_finalize(q);
	q = NULL;

	if (!st && t->gpu.valid) {
		st = one_row(w,
			     "INSERT INTO TARGET_INFO_GPU(vmId, id, name, busLocation, isDiscrete, l2CacheSize,"
			     " totalMemory, memoryBandwidth, clockRate, smCount, uuid, chipName, cuDevice,"
			     " computeMajor, computeMinor, zbConfigId)"
			     " VALUES(0, 0, ?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?8, ?1, 0, ?9, ?10, ?11)",
			     "prepare the GPU insert", &q);
		if (!st) {
			const zb_tr_gpu *g = &t->gpu;
			int rc = sqlite3_bind_text(q, 1, g->name, -1, SQLITE_STATIC);
			rc |= sqlite3_bind_text(q, 2, g->bus, -1, SQLITE_STATIC);
			rc |= sqlite3_bind_int64(q, 3, g->l2_cache);
			rc |= sqlite3_bind_int64(q, 4, g->total_memory);
			rc |= sqlite3_bind_int64(q, 5, g->memory_bandwidth);
			rc |= sqlite3_bind_int64(q, 6, g->clock_hz);
			rc |= sqlite3_bind_int(q, 7, g->sm_count);
			rc |= sqlite3_bind_text(q, 8, g->uuid, -1, SQLITE_STATIC);
			rc |= sqlite3_bind_int(q, 9, g->cc_major);
			rc |= sqlite3_bind_int(q, 10, g->cc_minor);
			rc |= sqlite3_bind_int64(q, 11, w->config_id);
			st = step_reset(w, q, rc, "insert into TARGET_INFO_GPU");
		}
		sqlite3_finalize(q);
		q = NULL;
	}

	if (!st && t->nstreams > 0) {
		st = one_row(w,
			     "INSERT INTO TARGET_INFO_NVTX_CUDA_STREAM(name, hwId, vmId, processId, deviceId,"
			     " contextId, streamId, zbConfigId, zbResource) VALUES(?1, 0, 0, ?2, ?3, ?4, ?5, ?6, ?7)",
			     "prepare the stream insert", &q);
		for (int i = 0; i < t->nstreams && !st; i++) {
			const zb_tr_stream *s = &t->streams[i];
			int rc = sqlite3_bind_text(q, 1, s->name, -1, SQLITE_STATIC);
			rc |= sqlite3_bind_int64(q, 2, t->pid);
			rc |= sqlite3_bind_int64(q, 3, s->device);
			rc |= sqlite3_bind_int64(q, 4, s->context);
			rc |= sqlite3_bind_int64(q, 5, s->stream);
			rc |= sqlite3_bind_int64(q, 6, w->config_id);
			rc |= sqlite3_bind_text(q, 7, s->resource >= 0 && s->resource < ZB_RES_COUNT
							      ? zb_resource_name((zb_resource)s->resource)
							      : "",
						-1, SQLITE_STATIC);
			st = step_reset(w, q, rc, "insert into TARGET_INFO_NVTX_CUDA_STREAM");
		}
		sqlite3_finalize(q);
		q = NULL;
	}

	int nthreads = zb_spans_nthreads(spans);
	if (!st && nthreads > 0) {
		st = one_row(w, "INSERT INTO ThreadNames(nameId, priority, globalTid, zbConfigId) VALUES(?1, NULL, ?2, ?3)",
			     "prepare the thread-name insert", &q);
		for (int i = 0; i < nthreads && !st; i++) {
			int64_t name_id;
			st = string_id(w, ss->find, ss->add, zb_spans_thread_name(spans, i), &name_id);
			if (st)
				break;
			int rc = sqlite3_bind_int64(q, 1, name_id);
			rc |= sqlite3_bind_int64(q, 2, w->gpid | (zb_spans_thread_tid(spans, i) & 0xFFFFFF));
			rc |= sqlite3_bind_int64(q, 3, w->config_id);
			st = step_reset(w, q, rc, "insert into ThreadNames");
		}
		sqlite3_finalize(q);
	}
	return st;
}

/* ---- entry ------------------------------------------------------------------------ */

zb_status zb_store_add_trace(zb_store *s, int64_t config_id, const zb_graph *g, const zb_trace *t,
			     const zb_spans *spans, int64_t origin_ns, zb_error *err)
{
	writer w = { .s = s, .db = zb_store_db(s), .config_id = config_id, .origin = origin_ns,
		     .gpid = (int64_t)t->pid << 24, .t = t, .g = g, .err = err, .spans = spans };
	if (zb_store_schema_version(s) < 3)
		return zb_fail(err, ZB_E_STORE, "database '%s' has schema version %d; a trace needs version 3",
			       zb_store_path(s), zb_store_schema_version(s));
	int own = sqlite3_get_autocommit(w.db);
	if (own && zb_store_in_transaction(s))
		return zb_fail(err, ZB_E_STORE,
			       "cannot insert a trace in database '%s': the transaction was rolled back after an"
			       " earlier error",
			       zb_store_path(s));
	zb_status st = exec(&w, own ? "BEGIN IMMEDIATE" : "SAVEPOINT zb_trace", "start writing a trace");
	if (st)
		return st;

	/* StringIds for every string of the trace */
	string_stmts ss;
	w.sid = zb_xmalloc((t->nstrings ? t->nstrings : 1) * sizeof *w.sid);
	st = strings_open(&w, &ss);
	for (size_t i = 0; i < t->nstrings && !st; i++) {
		int64_t id;
		st = string_id(&w, ss.find, ss.add, zb_trace_string(t, (uint32_t)i), &id);
		w.sid[i] = (uint32_t)id;
	}

	for (size_t i = 0; i < t->nkernels && w.nctx < 16; i += 1 + t->nkernels / 64)
		note_context(&w, t->kernels[i].context, t->kernels[i].device);
	for (size_t i = 0; i < t->nmemcpys && w.nctx < 16; i += 1 + t->nmemcpys / 64)
		note_context(&w, t->memcpys[i].context, t->memcpys[i].device);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_KERNEL", KERNEL_COLS, 30, t->nkernels, kernel_row, NULL);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_MEMCPY", MEMCPY_COLS, 13, t->nmemcpys, memcpy_row, NULL);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_MEMSET", MEMSET_COLS, 12, t->nmemsets, memset_row, NULL);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_RUNTIME", API_COLS, 9, t->napis, api_row, NULL);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", SYNC_COLS, 12, t->nsyncs, sync_row, NULL);
	if (!st)
		st = bulk(&w, "CUPTI_ACTIVITY_KIND_OVERHEAD", OVERHEAD_COLS, 7, t->noverheads, overhead_row, NULL);
	if (!st)
		st = bulk(&w, "NVTX_EVENTS", PNVTX_COLS, 8, t->nnvtxs, program_nvtx_row, NULL);
	if (!st && spans && zb_spans_total(spans) > 0) {
		span_rows rows = { zb_xmalloc(zb_spans_total(spans) * sizeof(span_ref)), 0 };
		for (int i = 0; i < zb_spans_nthreads(spans); i++) {
			size_t n;
			const zb_span *v = zb_spans_data(spans, i, &n);
			int64_t gtid = w.gpid | (zb_spans_thread_tid(spans, i) & 0xFFFFFF);
			for (size_t j = 0; j < n; j++)
				rows.v[rows.n++] = (span_ref){ &v[j], gtid };
		}
		st = bulk(&w, "NVTX_EVENTS", NVTX_COLS, 9, rows.n, nvtx_row, &rows);
		free(rows.v);
	}
	if (!st)
		st = write_small(&w, spans, &ss);
	strings_close(&ss);
	free(w.sid);

	if (!st)
		st = exec(&w, own ? "COMMIT" : "RELEASE zb_trace", "commit a trace");
	if (st) {
		if (own) {
			if (!sqlite3_get_autocommit(w.db))
				(void)sqlite3_exec(w.db, "ROLLBACK", NULL, NULL, NULL);
		} else {
			(void)sqlite3_exec(w.db, "ROLLBACK TO zb_trace; RELEASE zb_trace", NULL, NULL, NULL);
		}
	}
	return st;
}
