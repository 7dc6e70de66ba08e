/*
 * merge.c - zb_store_merge; see merge.h.
 *
 * Each input is read through its own read-only connection and its rows are
 * inserted through prepared statements on the output's connection (ATTACH would
 * cap the inputs at SQLite's limit of attached databases, and cannot be undone
 * inside the one transaction all inputs share). Column lists come from the
 * output's schema, so a column added by a later migration is copied without a
 * change here.
 */
#include "results/merge.h"
#include "results/store_parts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/outfile.h"

/* SQLite's smallest default limit of bound parameters (999 before 3.32): a row's
 * columns are bound one each */
#define MAX_COLUMNS 999

enum { KEEP, RUN_ID, CONFIG_ID };

/* The tables merged, in an order that respects their references, and which of
 * their columns hold ids to remap. */
static const struct {
	const char *table;
	const char *col[2];
	int kind[2];
} tables[] = {
	{ "runs", { "id" }, { RUN_ID } },
	{ "configs", { "id", "run_id" }, { CONFIG_ID, RUN_ID } },
	{ "predictions", { "config_id" }, { CONFIG_ID } },
	{ "tasks", { "config_id" }, { CONFIG_ID } },
	{ "task_deps", { "config_id" }, { CONFIG_ID } },
	{ "events", { "config_id" }, { CONFIG_ID } },
	{ "steps", { "config_id" }, { CONFIG_ID } },
	{ "ranks", { "config_id" }, { CONFIG_ID } },       /* runs on several GPUs (schema 8) */
	{ "rank_events", { "config_id" }, { CONFIG_ID } },
};
#define NTABLES (sizeof tables / sizeof tables[0])

/* Tables whose rows merge does not copy: an input with rows in one is refused. */
static const char *const not_merged[] = {
	"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_OVERHEAD",
	"NVTX_EVENTS", "hw_profiles", "baselines",
};

typedef struct ctx {
	sqlite3 *out, *in;
	const char *out_path, *in_path;
	int64_t run_off, config_off;
	zb_merge_counts *counts;
	zb_error *err;
} ctx;

static zb_status fail_db(ctx *c, sqlite3 *db, const char *doing)
{
	const char *path = db == c->out ? c->out_path : c->in_path;
	return zb_fail(c->err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, path, sqlite3_errmsg(db));
}

/* One integer from a one-row query on db (bound text parameters, NULL ends). */
static zb_status query_int(ctx *c, sqlite3 *db, const char *sql, int64_t *out, const char *doing)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail_db(c, db, doing);
	int rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	zb_status s = rc == SQLITE_ROW || rc == SQLITE_DONE ? ZB_OK : fail_db(c, db, doing);
	sqlite3_finalize(st);
	return s;
}

/* A shard whose sweep still runs (or whose writer died) has a write-ahead log that
 * is not empty: what it holds is not committed to the file yet, or not known to
 * be. Its rows are not merged half-way. */
static zb_status check_not_written(ctx *c)
{
	char *wal = sqlite3_mprintf("%s-wal", c->in_path);
	struct stat st;
	int hot = wal && stat(wal, &st) == 0 && st.st_size > 0;
	sqlite3_free(wal);
	if (hot)
		return zb_fail(c->err, ZB_E_INPUT,
			       "database '%s' is still being written (its write-ahead log '%s-wal' is not empty): merge it "
			       "once its command has finished",
			       c->in_path, c->in_path);
	return ZB_OK;
}

/* Every run of the input finished (or was interrupted) and there is one at least. */
static zb_status check_runs_finished(ctx *c)
{
	int64_t runs = 0, running = 0;
	zb_status s = query_int(c, c->in, "SELECT count(*) FROM runs", &runs, "read runs");
	if (!s)
		s = query_int(c, c->in, "SELECT count(*) FROM runs WHERE status = 'running'", &running, "read runs");
	if (s)
		return s;
	if (running)
		return zb_fail(c->err, ZB_E_INPUT,
			       "database '%s' has %lld run%s still running (status 'running'): merge it once its command "
			       "has finished",
			       c->in_path, (long long)running, running == 1 ? "" : "s");
	if (!runs)
		return zb_fail(c->err, ZB_E_INPUT, "database '%s' has no runs: nothing to merge (a shard not written yet?)",
			       c->in_path);
	return ZB_OK;
}

static zb_status open_input(ctx *c, const struct stat *out_st)
{
	struct stat st;
	if (stat(c->in_path, &st) != 0)
		return zb_fail(c->err, ZB_E_INPUT, "cannot read database '%s': %s", c->in_path, strerror(errno));
	if (out_st && st.st_dev == out_st->st_dev && st.st_ino == out_st->st_ino)
		return zb_fail(c->err, ZB_E_INPUT, "'%s' is the output database: merging it into itself is refused",
			       c->in_path);
	zb_status s = check_not_written(c);
	if (s)
		return s;
	/* read-only, immutable in a read-only folder (results/store_parts.h) */
	int rc = store_open_ro(c->in_path, 2000, &c->in);
	if (rc != SQLITE_OK)
		return zb_fail(c->err, ZB_E_INPUT, "cannot read database '%s': %s", c->in_path,
			       c->in ? sqlite3_errmsg(c->in) : sqlite3_errstr(rc));
	/* a quoted column name the input lacks is an error, not a string literal */
	sqlite3_db_config(c->in, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
	int64_t app = 0, version = 0;
	if (query_int(c, c->in, "PRAGMA application_id", &app, "read the application id"))
		return zb_fail(c->err, ZB_E_INPUT, "not a zbench database: '%s' (%s)", c->in_path,
			       sqlite3_errmsg(c->in));
	if (app != ZB_APP_ID)
		return zb_fail(c->err, ZB_E_INPUT, "not a zbench database: '%s'", c->in_path);
	if (query_int(c, c->in, "PRAGMA user_version", &version, "read the schema version"))
		return c->err->status;
	if (version != ZB_SCHEMA_VERSION)
		return zb_fail(c->err, ZB_E_INPUT,
			       "database '%s' has schema version %lld, this zbench writes %d: open it with a"
			       " zbench of that version (any command migrates an older one)",
			       c->in_path, (long long)version, ZB_SCHEMA_VERSION);
	for (size_t i = 0; i < sizeof not_merged / sizeof not_merged[0]; i++) {
		char sql[160];
		int64_t exists = 0, rows = 0;
		snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
			 not_merged[i]);
		if (query_int(c, c->in, sql, &exists, "read the schema"))
			return c->err->status;
		if (!exists)
			continue;
		snprintf(sql, sizeof sql, "SELECT EXISTS(SELECT 1 FROM \"%s\")", not_merged[i]);
		if (query_int(c, c->in, sql, &rows, "read a table"))
			return c->err->status;
		if (rows)
			return zb_fail(c->err, ZB_E_INPUT,
				       "database '%s' has rows in %s, which zbench merge does not copy (it merges"
				       " runs, configurations, predictions, tasks, events and steps)",
				       c->in_path, not_merged[i]);
	}
	return check_runs_finished(c);
}

/* A run of the input that is already in the output is refused. */
static zb_status check_duplicates(ctx *c)
{
	sqlite3_stmt *sel = NULL, *find = NULL;
	zb_status s = ZB_OK;
	if (sqlite3_prepare_v2(c->in, "SELECT id, kind, started_at, host, command FROM runs ORDER BY id", -1, &sel,
			       NULL) != SQLITE_OK)
		return fail_db(c, c->in, "read runs");
	if (sqlite3_prepare_v2(c->out,
			       "SELECT id FROM runs WHERE kind = ?1 AND started_at = ?2 AND host IS ?3"
			       " AND command IS ?4",
			       -1, &find, NULL) != SQLITE_OK) {
		sqlite3_finalize(sel);
		return fail_db(c, c->out, "read runs");
	}
	int rc;
	while (!s && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		for (int i = 1; i <= 4; i++)
			sqlite3_bind_value(find, i, sqlite3_column_value(sel, i));
		int f = sqlite3_step(find);
		if (f == SQLITE_ROW)
			s = zb_fail(c->err, ZB_E_INPUT,
				    "run %lld of '%s' (%s, started %s) is already in '%s' as run %lld: duplicates"
				    " are refused",
				    (long long)sqlite3_column_int64(sel, 0), c->in_path, sqlite3_column_text(sel, 1),
				    sqlite3_column_text(sel, 2), c->out_path, (long long)sqlite3_column_int64(find, 0));
		else if (f != SQLITE_DONE)
			s = fail_db(c, c->out, "read runs");
		sqlite3_reset(find);
	}
	if (!s && rc != SQLITE_DONE)
		s = fail_db(c, c->in, "read runs");
	sqlite3_finalize(sel);
	sqlite3_finalize(find);
	return s;
}

/* The columns of table t in the output: their quoted names as one list, as many
 * placeholders, and which ids each holds. Built with sqlite3_str, which grows as
 * needed (a column name may be of any length) and quotes a name's own double
 * quotes (%w). */
typedef struct collist {
	char *names, *marks;
	int *kind;
	int n;
} collist;

static void collist_free(collist *l)
{
	sqlite3_free(l->names);
	sqlite3_free(l->marks);
	free(l->kind);
	memset(l, 0, sizeof *l);
}

static zb_status columns(ctx *c, const char *t, collist *l)
{
	memset(l, 0, sizeof *l);
	char *sql = sqlite3_mprintf("PRAGMA table_info(\"%w\")", t);
	sqlite3_stmt *st = NULL;
	int rc = sql ? sqlite3_prepare_v2(c->out, sql, -1, &st, NULL) : SQLITE_NOMEM;
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return fail_db(c, c->out, "read the schema");
	int which = -1;
	for (size_t i = 0; i < NTABLES; i++)
		if (!strcmp(tables[i].table, t))
			which = (int)i;
	sqlite3_str *names = sqlite3_str_new(c->out), *marks = sqlite3_str_new(c->out);
	int cap = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		if (l->n == cap)
			l->kind = zb_xrealloc(l->kind, sizeof *l->kind * (size_t)(cap = cap ? 2 * cap : 32));
		l->kind[l->n] = KEEP;
		for (int k = 0; k < 2 && which >= 0 && tables[which].col[k]; k++)
			if (name && !strcmp(tables[which].col[k], name))
				l->kind[l->n] = tables[which].kind[k];
		sqlite3_str_appendf(names, "%s\"%w\"", l->n ? ", " : "", name ? name : "");
		sqlite3_str_appendf(marks, "%s?", l->n ? ", " : "");
		l->n++;
	}
	sqlite3_finalize(st);
	int bad = sqlite3_str_errcode(names) || sqlite3_str_errcode(marks);
	l->names = sqlite3_str_finish(names);
	l->marks = sqlite3_str_finish(marks);
	zb_status res = ZB_OK;
	if (rc != SQLITE_DONE)
		res = fail_db(c, c->out, "read the schema");
	else if (bad || !l->names || !l->marks)
		res = zb_fail(c->err, ZB_E_NOMEM, "table %s: cannot list its columns: out of memory", t);
	else if (l->n == 0 || l->n > MAX_COLUMNS)
		res = zb_fail(c->err, ZB_E_STORE, "table %s of '%s' has %d columns (1..%d merged)", t, c->out_path,
			      l->n, MAX_COLUMNS);
	if (res)
		collist_free(l);
	return res;
}

/* Rows of table t from the input into the output, ids moved by the offsets. */
static zb_status copy_rows(ctx *c, const char *t, const collist *l, int64_t *copied)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	char *sql = sqlite3_mprintf("SELECT %s FROM \"%w\"", l->names, t);
	int rc = sql ? sqlite3_prepare_v2(c->in, sql, -1, &sel, NULL) : SQLITE_NOMEM;
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return fail_db(c, c->in, "read a table");
	sql = sqlite3_mprintf("INSERT INTO \"%w\"(%s) VALUES(%s)", t, l->names, l->marks);
	rc = sql ? sqlite3_prepare_v2(c->out, sql, -1, &ins, NULL) : SQLITE_NOMEM;
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(sel);
		return fail_db(c, c->out, "insert rows");
	}
	zb_status s = ZB_OK;
	*copied = 0;
	while (!s && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		for (int i = 0; i < l->n; i++) {
			if (l->kind[i] == KEEP || sqlite3_column_type(sel, i) == SQLITE_NULL)
				sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
			else
				sqlite3_bind_int64(ins, i + 1, sqlite3_column_int64(sel, i) +
								(l->kind[i] == RUN_ID ? c->run_off : c->config_off));
		}
		if (sqlite3_step(ins) != SQLITE_DONE)
			s = fail_db(c, c->out, "insert rows");
		sqlite3_reset(ins);
		(*copied)++;
	}
	if (!s && rc != SQLITE_DONE)
		s = fail_db(c, c->in, "read a table");
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	return s;
}

static zb_status copy_table(ctx *c, const char *t, int64_t *copied)
{
	collist l;
	zb_status s = columns(c, t, &l);
	if (s)
		return s;
	s = copy_rows(c, t, &l, copied);
	collist_free(&l);
	return s;
}

static zb_status merge_one(ctx *c, const struct stat *out_st)
{
	zb_status s = open_input(c, out_st);
	if (!s)
		s = check_duplicates(c);
	if (!s)
		s = query_int(c, c->out, "SELECT coalesce(max(id), 0) FROM runs", &c->run_off, "read runs");
	if (!s)
		s = query_int(c, c->out, "SELECT coalesce(max(id), 0) FROM configs", &c->config_off, "read configs");
	int64_t n[NTABLES] = { 0 };
	for (size_t i = 0; i < NTABLES && !s; i++)
		s = copy_table(c, tables[i].table, &n[i]);
	if (!s && c->counts)
		*c->counts = (zb_merge_counts){ .runs = n[0], .configs = n[1], .predictions = n[2], .tasks = n[3],
						 .events = n[5] };
	sqlite3_close(c->in);
	c->in = NULL;
	return s;
}

zb_status zb_store_merge(zb_store *out, const char *const *inputs, int n, zb_merge_counts *per_input,
			 zb_error *err)
{
	struct stat out_st;
	int have_out = stat(zb_store_path(out), &out_st) == 0;
	zb_status s = zb_store_begin(out, err);
	if (s)
		return s;
	ctx c = { .out = zb_store_db(out), .out_path = zb_store_path(out), .err = err };
	sqlite3_db_config(c.out, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
	for (int i = 0; i < n && !s; i++) {
		c.in_path = inputs[i];
		c.counts = per_input ? &per_input[i] : NULL;
		s = merge_one(&c, have_out ? &out_st : NULL);
	}
	if (!s)
		return zb_store_commit(out, err);
	zb_store_rollback(out);
	return s;
}

/* A new output: a temporary beside it, renamed once every input is in, so a bad
 * input leaves no empty database behind. */
static zb_status merge_new(const char *out_path, const char *const *inputs, int n, zb_merge_counts *per_input,
			   zb_error *err)
{
	zb_outfile o;
	zb_status s = zb_outfile_open(&o, out_path, err);
	if (s)
		return s;
	const char *tmp = zb_outfile_release(&o);
	zb_store *out = NULL;
	if (!tmp)
		s = zb_fail(err, ZB_E_INPUT, "cannot merge into '%s': not a regular file", out_path);
	if (!s)
		s = zb_store_open(&out, tmp, ZB_STORE_WRITE_WAIT_MS, err);
	if (!s)
		s = zb_store_merge(out, inputs, n, per_input, err);
	zb_store_close(out); /* the last connection: its write-ahead log checkpointed and removed */
	if (!s)
		s = zb_outfile_commit(&o, err);
	if (s && tmp) {
		char *side = sqlite3_mprintf("%s-wal", tmp);
		if (side)
			unlink(side);
		sqlite3_free(side);
		side = sqlite3_mprintf("%s-shm", tmp);
		if (side)
			unlink(side);
		sqlite3_free(side);
	}
	zb_outfile_abort(&o);
	return s;
}

zb_status zb_store_merge_into(const char *out_path, const char *const *inputs, int n, zb_merge_counts *per_input,
			      zb_error *err)
{
	struct stat st;
	if (stat(out_path, &st) != 0)
		return merge_new(out_path, inputs, n, per_input, err);
	zb_store *out;
	zb_status s = zb_store_open(&out, out_path, ZB_STORE_WRITE_WAIT_MS, err);
	if (!s)
		s = zb_store_merge(out, inputs, n, per_input, err);
	zb_store_close(out);
	return s;
}
