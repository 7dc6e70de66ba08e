/*
 * store_rows.c - the bulk rows of the results store (store.h): a configuration's
 * tasks and their dependencies, timeline events and measured steps.
 */
#include "results/store_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bulk rows: tasks, dependencies, events -------------------------------------
 *
 * A one-row INSERT costs a statement execution (with foreign keys on, a statement
 * savepoint) per row, which caps it near 0.3 M rows/s; one execution of a
 * multi-row INSERT carries `rows` rows and reaches several times that. So each
 * bulk table has two statements of one shape: `rows` rows, and one row for the
 * remainder. Leading parameters (config id, source) are shared by every row and
 * bound once per call. */

static const struct bulk_def {
	const char *head; /* "INSERT INTO table(columns) VALUES " */
	int shared;       /* leading parameters shared by all rows: ?1 (, ?2) */
	int cols;         /* parameters of each row after the shared ones */
	int rows;         /* rows per execution of the multi-row statement */
} bulk_defs[BULK_COUNT] = {
	[BULK_TASKS] = { "INSERT INTO tasks(config_id, task_id, kind, resource, op, pass, step,"
			 " micro, unit, bucket, flops, bytes, params, param_offset, m, n, k, batch)"
			 " VALUES ", 1, 17, 64 },
	[BULK_DEPS] = { "INSERT INTO task_deps(config_id, task_id, dep_id) VALUES ", 1, 2, 64 },
	[BULK_EVENTS] = { "INSERT INTO events(config_id, source, task_id, start_ns, end_ns)"
			  " VALUES ", 2, 3, 64 },
};

/* The bulk statement of table `which`, many rows (multi = 1) or one. */
static zb_status bulk_stmt(zb_store *s, int which, int multi, sqlite3_stmt **out, zb_error *err)
{
	sqlite3_stmt **slot = &s->bulk[which][multi];
	if (!*slot) {
		const struct bulk_def *b = &bulk_defs[which];
		int rows = multi ? b->rows : 1;
		/* "(?1, ?2, ?, ?, ?)": anonymous ? number on from the largest so far. */
		size_t rowlen = 8 + 3 * (size_t)b->cols + 3;
		size_t n = strlen(b->head) + (size_t)rows * (rowlen + 1) + 1;
		char *sql = zb_xmalloc(n), *p = sql;
		p += sprintf(p, "%s", b->head);
		for (int r = 0; r < rows; r++) {
			p += sprintf(p, "%s(?1%s", r ? "," : "", b->shared > 1 ? ",?2" : "");
			for (int c = 0; c < b->cols; c++)
				p += sprintf(p, ",?");
			p += sprintf(p, ")");
		}
		int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);
		free(sql);
		if (rc != SQLITE_OK) {
			*slot = NULL;
			return store_sql_fail(s, rc, "prepare a statement", err);
		}
	}
	*out = *slot;
	return ZB_OK;
}

/* Binds the next row's parameters from index p on; returns an SQLite code. */
typedef int (*bulk_row_fn)(sqlite3_stmt *st, int p, void *ctx);

/* Insert nrows rows, produced in order by row(), into table `which`. */
static zb_status bulk_insert(zb_store *s, int which, int64_t config_id, const char *source,
			     size_t nrows, bulk_row_fn row, void *ctx, const char *doing,
			     zb_error *err)
{
	const struct bulk_def *b = &bulk_defs[which];
	sqlite3_stmt *one = NULL, *many = NULL;
	zb_status st = bulk_stmt(s, which, 0, &one, err);
	if (st == ZB_OK)
		st = bulk_stmt(s, which, 1, &many, err);
	if (st != ZB_OK)
		return st;
	/* Bindings outlive sqlite3_reset: bind the shared ones once. */
	int rc = SQLITE_OK;
	for (int k = 0; k < 2; k++) {
		sqlite3_stmt *q = k ? many : one;
		rc |= sqlite3_bind_int64(q, 1, config_id);
		if (b->shared > 1)
			rc |= store_bind_static(q, 2, source);
	}
	if (rc != SQLITE_OK)
		return store_sql_fail(s, sqlite3_errcode(s->db), doing, err);
	while (nrows > 0) {
		int rows = nrows >= (size_t)b->rows ? b->rows : 1;
		sqlite3_stmt *q = rows > 1 ? many : one;
		rc = SQLITE_OK;
		for (int r = 0; r < rows; r++)
			rc |= row(q, b->shared + 1 + r * b->cols, ctx);
		rc = rc == SQLITE_OK ? store_step_done(q) : sqlite3_errcode(s->db);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc, doing, err);
		nrows -= (size_t)rows;
	}
	return ZB_OK;
}

struct task_iter {
	const zb_graph *g;
	size_t i;      /* next task */
	uint32_t d;    /* next dependency of task i */
};

static int bind_task_row(sqlite3_stmt *q, int p, void *ctx)
{
	struct task_iter *it = ctx;
	const zb_task *t = &it->g->tasks[it->i++];
	/* Names checked by check_tasks before any row is written. */
	int rc = sqlite3_bind_int64(q, p, t->id);
	rc |= store_bind_static(q, p + 1, zb_task_kind_name((zb_task_kind)t->kind));
	rc |= store_bind_static(q, p + 2, zb_resource_name((zb_resource)t->resource));
	rc |= store_bind_static(q, p + 3, zb_op_name((zb_op)t->op));
	rc |= store_bind_static(q, p + 4, zb_pass_name((zb_pass)t->pass));
	rc |= sqlite3_bind_int(q, p + 5, t->step);
	rc |= sqlite3_bind_int(q, p + 6, t->micro);
	rc |= sqlite3_bind_int(q, p + 7, t->unit);
	rc |= sqlite3_bind_int(q, p + 8, t->bucket);
	rc |= sqlite3_bind_double(q, p + 9, t->flops);
	rc |= sqlite3_bind_double(q, p + 10, t->bytes);
	rc |= sqlite3_bind_int64(q, p + 11, t->params);
	rc |= sqlite3_bind_int64(q, p + 12, t->param_offset);
	rc |= sqlite3_bind_int(q, p + 13, t->m);
	rc |= sqlite3_bind_int(q, p + 14, t->n);
	rc |= sqlite3_bind_int(q, p + 15, t->k);
	rc |= sqlite3_bind_int(q, p + 16, t->batch);
	return rc;
}

static int bind_dep_row(sqlite3_stmt *q, int p, void *ctx)
{
	struct task_iter *it = ctx;
	const zb_task *t = &it->g->tasks[it->i];
	while (it->d >= t->dep_count) { /* next task that has dependencies left */
		t = &it->g->tasks[++it->i];
		it->d = 0;
	}
	int rc = sqlite3_bind_int64(q, p, t->id);
	rc |= sqlite3_bind_int64(q, p + 1, zb_task_deps(it->g, t)[it->d++]);
	return rc;
}

/* Everything add_tasks will bind is in range, so rows either all go in or none. */
static zb_status check_tasks(const zb_graph *g, size_t *ndeps, zb_error *err)
{
	*ndeps = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->kind >= ZB_TASK_KIND_COUNT || t->resource >= ZB_RES_COUNT ||
		    t->op >= ZB_OP_COUNT || t->pass >= ZB_PASS_COUNT)
			return zb_fail(err, ZB_E_INTERNAL,
				       "task %u has an unknown kind, resource, op or pass"
				       " (%d, %d, %d, %d)",
				       t->id, t->kind, t->resource, t->op, t->pass);
		if ((size_t)t->dep_begin + t->dep_count > g->ndeps)
			return zb_fail(err, ZB_E_INTERNAL,
				       "task %u has dependencies %u..%zu past the graph's %zu", t->id,
				       t->dep_begin, (size_t)t->dep_begin + t->dep_count, g->ndeps);
		*ndeps += t->dep_count;
	}
	return ZB_OK;
}

zb_status zb_store_add_tasks(zb_store *s, int64_t config_id, const zb_graph *g, zb_error *err)
{
	size_t ndeps;
	zb_status st = check_tasks(g, &ndeps, err);
	if (st != ZB_OK)
		return st;
	int own;
	st = store_wbegin(s, &own, "insert tasks", err);
	if (st != ZB_OK)
		return st;
	char doing[96];
	snprintf(doing, sizeof doing, "insert the tasks of config %lld", (long long)config_id);
	struct task_iter it = { g, 0, 0 };
	st = bulk_insert(s, BULK_TASKS, config_id, NULL, g->ntasks, bind_task_row, &it, doing, err);
	if (st == ZB_OK) {
		/* After the tasks: each dependency row references its task. */
		snprintf(doing, sizeof doing, "insert the task dependencies of config %lld",
			 (long long)config_id);
		it = (struct task_iter){ g, 0, 0 };
		st = bulk_insert(s, BULK_DEPS, config_id, NULL, ndeps, bind_dep_row, &it, doing,
				 err);
	}
	return store_wend(s, own, st, "insert tasks", err);
}

/* Seconds to integer nanoseconds. */
static int64_t to_ns(double s) { return (int64_t)llround(s * 1e9); }

struct event_iter {
	const zb_graph *g;
	const double *start, *end;
	size_t i;
};

/* A task the executor did not record has a non-finite time: no row. */
static int event_recorded(const struct event_iter *it, uint32_t id)
{
	return isfinite(it->start[id]) && isfinite(it->end[id]);
}

static int bind_event_row(sqlite3_stmt *q, int p, void *ctx)
{
	struct event_iter *it = ctx;
	uint32_t id = it->g->tasks[it->i++].id;
	while (!event_recorded(it, id))
		id = it->g->tasks[it->i++].id;
	int rc = sqlite3_bind_int64(q, p, id);
	rc |= sqlite3_bind_int64(q, p + 1, to_ns(it->start[id]));
	rc |= sqlite3_bind_int64(q, p + 2, to_ns(it->end[id]));
	return rc;
}

zb_status zb_store_add_events(zb_store *s, int64_t config_id, const char *source,
			      const zb_graph *g, const double *start, const double *end,
			      zb_error *err)
{
	zb_status st = store_check_source(source, err);
	if (st != ZB_OK)
		return st;
	struct event_iter it = { g, start, end, 0 };
	size_t nrows = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		uint32_t id = g->tasks[i].id;
		if (id >= g->ntasks)
			return zb_fail(err, ZB_E_INTERNAL, "task id %u out of range (%zu tasks)", id,
				       g->ntasks);
		nrows += event_recorded(&it, id);
	}
	int own;
	st = store_wbegin(s, &own, "insert events", err);
	if (st != ZB_OK)
		return st;
	char doing[96];
	snprintf(doing, sizeof doing, "insert the %s events of config %lld", source,
		 (long long)config_id);
	/* A static copy of the name: the statement keeps it bound after this call. */
	const char *src = !strcmp(source, "predicted") ? "predicted" : "measured";
	st = bulk_insert(s, BULK_EVENTS, config_id, src, nrows, bind_event_row, &it, doing, err);
	return store_wend(s, own, st, "insert events", err);
}

zb_status zb_store_add_steps(zb_store *s, int64_t config_id, const char *source, int nsteps,
			     const double *step_s, zb_error *err)
{
	zb_status st = store_check_source(source, err);
	if (st != ZB_OK)
		return st;
	sqlite3_stmt *q = NULL;
	int own;
	st = store_stmt(s, ST_STEP, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "insert step times", err);
	if (st != ZB_OK)
		return st;
	for (int i = 0; i < nsteps && st == ZB_OK; i++) {
		int rc = sqlite3_bind_int64(q, 1, config_id);
		rc |= store_bind_static(q, 2, !strcmp(source, "predicted") ? "predicted" : "measured");
		rc |= sqlite3_bind_int(q, 3, i);
		rc |= isfinite(step_s[i]) ? sqlite3_bind_double(q, 4, step_s[i])
					  : sqlite3_bind_null(q, 4);
		rc = rc == SQLITE_OK ? store_step_done(q) : sqlite3_errcode(s->db);
		if (rc != SQLITE_OK)
			st = store_sql_fail(s, rc, "insert step times", err);
	}
	return store_wend(s, own, st, "insert step times", err);
}
