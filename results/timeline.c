/* timeline.c - stored schedules and timelines read back; see timeline.h. */
#include "results/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

static zb_status sql_err(zb_store *s, const char *doing, zb_error *err)
{
	return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
		       sqlite3_errmsg(zb_store_db(s)));
}

static void copy_text(char *dst, size_t n, const unsigned char *src)
{
	snprintf(dst, n, "%s", src ? (const char *)src : "");
}

/* "--warmup N" or "--warmup=N" in a command line; -1 when absent. */
static int parse_warmup(const char *cmd)
{
	const char *p = cmd ? strstr(cmd, "--warmup") : NULL;
	if (!p)
		return -1;
	p += strlen("--warmup");
	if (*p != '=' && *p != ' ')
		return -1;
	char *end;
	long v = strtol(p + 1, &end, 10);
	return end == p + 1 || v < 0 || v > 1000 ? -1 : (int)v;
}

zb_status zb_store_run_configs(zb_store *s, int64_t run_id, const char *source, int64_t **ids, int *n,
			       zb_error *err)
{
	sqlite3 *db = zb_store_db(s);
	sqlite3_stmt *q = NULL;
	*ids = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs WHERE id = ?1", -1, &q, NULL) != SQLITE_OK)
		return sql_err(s, "look up a run", err);
	sqlite3_bind_int64(q, 1, run_id);
	int found = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 0;
	sqlite3_finalize(q);
	if (!found)
		return zb_fail(err, ZB_E_INPUT, "no run %lld in database '%s'", (long long)run_id, zb_store_path(s));
	const char *sql = source ? "SELECT c.id FROM configs c WHERE c.run_id = ?1 AND EXISTS"
				   " (SELECT 1 FROM events e WHERE e.config_id = c.id AND e.source = ?2)"
				   " ORDER BY c.id"
				 : "SELECT id FROM configs WHERE run_id = ?1 ORDER BY id";
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return sql_err(s, "list the configurations of a run", err);
	sqlite3_bind_int64(q, 1, run_id);
	if (source)
		sqlite3_bind_text(q, 2, source, -1, SQLITE_TRANSIENT);
	int cap = 0, rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*ids = zb_xrealloc(*ids, (size_t)cap * sizeof **ids);
		}
		(*ids)[(*n)++] = sqlite3_column_int64(q, 0);
	}
	zb_status st = rc == SQLITE_DONE ? ZB_OK : sql_err(s, "list the configurations of a run", err);
	sqlite3_finalize(q);
	if (st) {
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
	return st;
}

zb_status zb_store_config_info(zb_store *s, int64_t config_id, zb_stored_config *o, zb_error *err)
{
	sqlite3 *db = zb_store_db(s);
	sqlite3_stmt *q = NULL;
	memset(o, 0, sizeof *o);
	const char *sql =
		"SELECT c.run_id, r.kind, r.device, r.command, c.hw, c.model, c.policy, c.ratio, c.micro_batch,"
		" c.seq, c.gas, c.steps, c.cpu_threads,"
		" (SELECT count(*) FROM events e WHERE e.config_id = c.id AND e.source = 'predicted'),"
		" (SELECT count(*) FROM events e WHERE e.config_id = c.id AND e.source = 'measured')"
		" FROM configs c JOIN runs r ON r.id = c.run_id WHERE c.id = ?1";
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return sql_err(s, "read a configuration", err);
	sqlite3_bind_int64(q, 1, config_id);
	int rc = sqlite3_step(q);
	zb_status st = ZB_OK;
	if (rc == SQLITE_ROW) {
		o->config_id = config_id;
		o->run_id = sqlite3_column_int64(q, 0);
		copy_text(o->run_kind, sizeof o->run_kind, sqlite3_column_text(q, 1));
		copy_text(o->device, sizeof o->device, sqlite3_column_text(q, 2));
		o->warmup = parse_warmup((const char *)sqlite3_column_text(q, 3));
		copy_text(o->hw, sizeof o->hw, sqlite3_column_text(q, 4));
		copy_text(o->model, sizeof o->model, sqlite3_column_text(q, 5));
		copy_text(o->policy, sizeof o->policy, sqlite3_column_text(q, 6));
		o->ratio = sqlite3_column_double(q, 7);
		o->micro_batch = sqlite3_column_int(q, 8);
		o->seq = sqlite3_column_int(q, 9);
		o->gas = sqlite3_column_int(q, 10);
		o->steps = sqlite3_column_int(q, 11);
		o->cpu_threads = sqlite3_column_int(q, 12);
		o->predicted = sqlite3_column_int64(q, 13);
		o->measured = sqlite3_column_int64(q, 14);
	} else if (rc == SQLITE_DONE) {
		st = zb_fail(err, ZB_E_INPUT, "no configuration %lld in database '%s'", (long long)config_id,
			     zb_store_path(s));
	} else {
		st = sql_err(s, "read a configuration", err);
	}
	sqlite3_finalize(q);
	return st;
}

static int lookup(const char *name, const char *(*namer)(int), int count)
{
	for (int i = 0; i < count; i++)
		if (name && !strcmp(name, namer(i)))
			return i;
	return -1;
}

static const char *res_name(int i) { return zb_resource_name((zb_resource)i); }
static const char *kind_name(int i) { return zb_task_kind_name((zb_task_kind)i); }
static const char *op_name(int i) { return zb_op_name((zb_op)i); }
static const char *pass_name(int i) { return zb_pass_name((zb_pass)i); }

static zb_status load_tasks(zb_store *s, int64_t cid, zb_graph *g, zb_error *err)
{
	sqlite3 *db = zb_store_db(s);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT task_id, kind, resource, op, pass, step, micro, unit, bucket, flops, bytes,"
			       " params, param_offset, m, n, k, batch FROM tasks WHERE config_id = ?1 ORDER BY task_id",
			       -1, &q, NULL) != SQLITE_OK)
		return sql_err(s, "read tasks", err);
	sqlite3_bind_int64(q, 1, cid);
	size_t cap = 0;
	int rc;
	zb_status st = ZB_OK;
	while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (g->ntasks == cap) {
			cap = cap ? 2 * cap : 1024;
			g->tasks = zb_xrealloc(g->tasks, cap * sizeof *g->tasks);
		}
		zb_task *t = &g->tasks[g->ntasks];
		memset(t, 0, sizeof *t);
		int64_t id = sqlite3_column_int64(q, 0);
		int kind = lookup((const char *)sqlite3_column_text(q, 1), kind_name, ZB_TASK_KIND_COUNT);
		int res = lookup((const char *)sqlite3_column_text(q, 2), res_name, ZB_RES_COUNT);
		int op = lookup((const char *)sqlite3_column_text(q, 3), op_name, ZB_OP_COUNT);
		int pass = lookup((const char *)sqlite3_column_text(q, 4), pass_name, ZB_PASS_COUNT);
		if (id != (int64_t)g->ntasks || kind < 0 || res < 0 || op < 0 || pass < 0) {
			st = zb_fail(err, ZB_E_STORE,
				     "task %lld of configuration %lld in database '%s' is not one this zbench knows"
				     " (ids must be dense; kind, resource, op and pass names of graph.h)",
				     (long long)id, (long long)cid, zb_store_path(s));
			break;
		}
		t->id = (uint32_t)id;
		t->kind = (uint8_t)kind;
		t->resource = (uint8_t)res;
		t->op = (uint8_t)op;
		t->pass = (uint8_t)pass;
		t->step = sqlite3_column_int(q, 5);
		t->micro = sqlite3_column_int(q, 6);
		t->unit = sqlite3_column_int(q, 7);
		t->bucket = sqlite3_column_int(q, 8);
		t->flops = sqlite3_column_double(q, 9);
		t->bytes = sqlite3_column_double(q, 10);
		t->params = sqlite3_column_int64(q, 11);
		t->param_offset = sqlite3_column_int64(q, 12);
		t->m = sqlite3_column_int(q, 13);
		t->n = sqlite3_column_int(q, 14);
		t->k = sqlite3_column_int(q, 15);
		t->batch = sqlite3_column_int(q, 16);
		if (t->step + 1 > g->steps)
			g->steps = t->step + 1;
		g->ntasks++;
	}
	if (!st && rc != SQLITE_DONE)
		st = sql_err(s, "read tasks", err);
	sqlite3_finalize(q);
	if (st)
		return st;
	g->cap_tasks = cap;

	/* dependencies, grouped by task in id order */
	if (sqlite3_prepare_v2(db, "SELECT task_id, dep_id FROM task_deps WHERE config_id = ?1 ORDER BY task_id, dep_id",
			       -1, &q, NULL) != SQLITE_OK)
		return sql_err(s, "read task dependencies", err);
	sqlite3_bind_int64(q, 1, cid);
	cap = 0;
	size_t next = 0; /* tasks before this one have their dep_begin set */
	while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t tid = sqlite3_column_int64(q, 0), dep = sqlite3_column_int64(q, 1);
		if (tid < 0 || (size_t)tid >= g->ntasks || dep < 0 || dep >= tid) {
			st = zb_fail(err, ZB_E_STORE, "dependency %lld -> %lld of configuration %lld in database '%s'"
						      " does not point to an earlier task",
				     (long long)tid, (long long)dep, (long long)cid, zb_store_path(s));
			break;
		}
		while (next <= (size_t)tid)
			g->tasks[next++].dep_begin = (uint32_t)g->ndeps;
		if (g->ndeps == cap) {
			cap = cap ? 2 * cap : 4096;
			g->deps = zb_xrealloc(g->deps, cap * sizeof *g->deps);
		}
		g->deps[g->ndeps++] = (uint32_t)dep;
		g->tasks[tid].dep_count++;
	}
	if (!st && rc != SQLITE_DONE)
		st = sql_err(s, "read task dependencies", err);
	sqlite3_finalize(q);
	while (next < g->ntasks)
		g->tasks[next++].dep_begin = (uint32_t)g->ndeps;
	g->cap_deps = cap;
	return st;
}

static zb_status load_events(zb_store *s, int64_t cid, const char *source, size_t n, double *start, double *end,
			     zb_error *err)
{
	for (size_t i = 0; i < n; i++)
		start[i] = end[i] = -1;
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s),
			       "SELECT task_id, start_ns, end_ns FROM events WHERE config_id = ?1 AND source = ?2", -1, &q,
			       NULL) != SQLITE_OK)
		return sql_err(s, "read events", err);
	sqlite3_bind_int64(q, 1, cid);
	sqlite3_bind_text(q, 2, source, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(q, 0);
		if (id < 0 || (size_t)id >= n)
			continue; /* an event without its task: nothing to join it to */
		start[id] = sqlite3_column_int64(q, 1) * 1e-9;
		end[id] = sqlite3_column_int64(q, 2) * 1e-9;
	}
	zb_status st = rc == SQLITE_DONE ? ZB_OK : sql_err(s, "read events", err);
	sqlite3_finalize(q);
	return st;
}

zb_status zb_store_load_timeline(zb_store *s, int64_t config_id, zb_graph *g, double **ps, double **pe,
				 double **ms, double **me, zb_stored_config *info, zb_error *err)
{
	memset(g, 0, sizeof *g);
	*ps = *pe = *ms = *me = NULL;
	zb_status st = zb_store_config_info(s, config_id, info, err);
	if (st)
		return st;
	if ((st = load_tasks(s, config_id, g, err)))
		goto fail;
	if (g->ntasks == 0) {
		st = zb_fail(err, ZB_E_INPUT,
			     "configuration %lld in database '%s' has no stored schedule (predict it with --timeline,"
			     " or use zbench run)",
			     (long long)config_id, zb_store_path(s));
		goto fail;
	}
	g->tokens_per_step = (double)info->micro_batch * info->seq * (info->gas > 0 ? info->gas : 1);
	size_t n = g->ntasks;
	*ps = zb_xmalloc(n * sizeof **ps);
	*pe = zb_xmalloc(n * sizeof **pe);
	*ms = zb_xmalloc(n * sizeof **ms);
	*me = zb_xmalloc(n * sizeof **me);
	if ((st = load_events(s, config_id, "predicted", n, *ps, *pe, err)) ||
	    (st = load_events(s, config_id, "measured", n, *ms, *me, err)))
		goto fail;
	return ZB_OK;
fail:
	zb_graph_free(g);
	free(*ps);
	free(*pe);
	free(*ms);
	free(*me);
	*ps = *pe = *ms = *me = NULL;
	return st;
}
