/*
 * test_store.c - the SQLite results store (results/store.h): creating and
 * migrating the schema, writing a run with its configuration, prediction, tasks,
 * events and step times and reading them back with plain SQL, and every refusal
 * the store promises (newer schema, locked, not a database, unwritable path),
 * each leaving the file as it was. The bulk-insert test prints its rate.
 */
#include "tests/harness.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

#include "results/store.h"
#include "core/model.h"

/* ---- fixtures ----------------------------------------------------------------- */

static char *db_path(const char *name)
{
	char dir[64];
	zb_test_tmpdir(dir, sizeof dir);
	char *p = malloc(strlen(dir) + strlen(name) + 2);
	sprintf(p, "%s/%s", dir, name);
	return p;
}

static zb_store *open_ok(const char *path)
{
	zb_store *s = NULL;
	zb_error err = { 0 };
	zb_status st = zb_store_open(&s, path, 1000, &err);
	if (st != ZB_OK)
		print_error("zb_store_open: %s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	assert_non_null(s);
	return s;
}

#define assert_ok(call)                                          \
	do {                                                     \
		zb_error err_ = { 0 };                           \
		zb_status st_ = (call);                          \
		if (st_ != ZB_OK)                                \
			print_error("%s: %s\n", #call, err_.msg); \
		assert_int_equal(st_, ZB_OK);                    \
	} while (0)
/* assert_ok needs the call to use &err_ as its error argument. */
#define E (&err_)

static int64_t count(zb_store *s, const char *table)
{
	int64_t n = -1;
	assert_ok(zb_store_count(s, table, &n, E));
	return n;
}

/* One integer from SQL on the store's own connection. */
static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
	if (rc != SQLITE_OK)
		print_error("%s: %s\n", sql, sqlite3_errmsg(db));
	assert_int_equal(rc, SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);
	return v;
}

static void sql_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		print_error("%s: %s\n", sql, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	assert_int_equal(rc, SQLITE_OK);
}

static char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	char *buf = malloc((size_t)len + 1);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static void assert_same_file(const char *path, const char *before, size_t nbefore)
{
	size_t n;
	char *after = read_all(path, &n);
	assert_int_equal(n, nbefore);
	assert_memory_equal(after, before, n);
	free(after);
}

/* A small hand-made configuration: gpt2-ish, 2 layers. */
static void make_config(zb_config *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->hw.name, sizeof c->hw.name, "h200-machine");
	snprintf(c->hw.link.name, sizeof c->hw.link.name, "gen5");
	snprintf(c->hw.gpu.name, sizeof c->hw.gpu.name, "h200");
	snprintf(c->hw.cpu.name, sizeof c->hw.cpu.name, "xeon-16");
	c->hw.cpu.cores = 16;
	snprintf(c->model.name, sizeof c->model.name, "tiny");
	c->model.layers = 2;
	c->model.hidden = 64;
	c->model.heads = 4;
	c->model.kv_heads = 4;
	c->model.ffn = 256;
	c->model.vocab = 1000;
	c->model.max_seq = 128;
	c->model.bias = 1;
	c->model.tied_embeddings = 1;
	c->policy.kind = ZB_POLICY_DPU;
	c->policy.ratio = 0.75;
	c->policy.prefetch_layers = 1;
	c->policy.ckpt = ZB_CKPT_GPU;
	c->policy.gas = 2;
	c->policy.micro_batch = 8;
	c->policy.seq = 128;
	c->policy.dtype = ZB_FP16;
	c->policy.bucket_params = 50000;
	c->policy.cpu_threads = 12;
	c->steps = 3;
}

/* A task graph built by hand: n tasks cycling through GEMM on the GPU, gradient
 * copy down, CPU Adam and parameter copy up, each depending on the one before. */
static void make_graph(zb_graph *g, size_t n)
{
	memset(g, 0, sizeof *g);
	g->tasks = calloc(n, sizeof *g->tasks);
	g->deps = calloc(n, sizeof *g->deps);
	assert_non_null(g->tasks);
	assert_non_null(g->deps);
	g->ntasks = g->cap_tasks = n;
	static const struct { uint8_t kind, res, op, pass; } pat[4] = {
		{ ZB_TASK_GEMM, ZB_RES_GPU, ZB_OP_QKV, ZB_PASS_FWD },
		{ ZB_TASK_COPY, ZB_RES_D2H, ZB_OP_GRAD_DOWN, ZB_PASS_BWD_WEIGHT },
		{ ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT },
		{ ZB_TASK_COPY, ZB_RES_H2D, ZB_OP_PARAM_UP, ZB_PASS_OPT },
	};
	for (size_t i = 0; i < n; i++) {
		zb_task *t = &g->tasks[i];
		t->id = (uint32_t)i;
		t->kind = pat[i % 4].kind;
		t->resource = pat[i % 4].res;
		t->op = pat[i % 4].op;
		t->pass = pat[i % 4].pass;
		t->step = (int32_t)(i / 4);
		t->micro = i % 4 == 0 ? 0 : -1;
		t->unit = 1;
		t->bucket = i % 4 == 0 ? -1 : 0;
		t->flops = i % 4 == 0 ? 2.0 * 1024 * 192 * 64 : 0;
		t->bytes = 1000.5 + (double)i;
		t->params = 12345 + (int64_t)i;
		t->param_offset = i % 4 == 0 ? -1 : 777;
		if (i % 4 == 0) {
			t->m = 1024;
			t->n = 192;
			t->k = 64;
			t->batch = 1;
		}
		t->dep_begin = (uint32_t)g->ndeps;
		if (i > 0) {
			g->deps[g->ndeps++] = (uint32_t)(i - 1);
			t->dep_count = 1;
		}
	}
	g->cap_deps = n;
	g->steps = (int)((n + 3) / 4);
	g->params = 100000;
	g->cpu_params = 75000;
	g->copy_bytes[ZB_RES_D2H] = 2e5;
	g->copy_bytes[ZB_RES_H2D] = 1.5e5;
}

static void free_graph(zb_graph *g)
{
	free(g->tasks);
	free(g->deps);
}

/* Timelines for make_graph's tasks: predicted back to back, measured 10% longer. */
static void make_times(size_t n, double **ps, double **pe, double **ms, double **me)
{
	*ps = malloc(n * sizeof **ps);
	*pe = malloc(n * sizeof **pe);
	*ms = malloc(n * sizeof **ms);
	*me = malloc(n * sizeof **me);
	for (size_t i = 0; i < n; i++) {
		(*ps)[i] = 1e-3 * (double)i;
		(*pe)[i] = 1e-3 * (double)i + 0.5e-3;
		(*ms)[i] = 1.1e-3 * (double)i;
		(*me)[i] = 1.1e-3 * (double)i + 0.55e-3;
	}
}

static void make_result(zb_sim_result *r)
{
	memset(r, 0, sizeof *r);
	r->total_s = 0.75;
	r->step_time_s = 0.25;
	r->tokens_per_s = 8192;
	r->tflops_per_gpu = 123.5;
	for (int i = 0; i < ZB_RES_COUNT; i++) {
		r->busy_s[i] = 0.01 * (i + 1);
		r->work_s[i] = 0.001 * (i + 1);
	}
	r->lower_bound_s = 0.2;
	r->bottleneck = ZB_RES_CPU;
	r->bound_resource = ZB_RES_D2H;
	r->events = 4242;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_open_creates_schema(void **state)
{
	(void)state;
	char dir[64];
	zb_test_tmpdir(dir, sizeof dir);
	char path[128];
	snprintf(path, sizeof path, "%s/a/b/zbench.db", dir); /* parents do not exist */
	zb_store *s = open_ok(path);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(zb_store_schema_version(s), ZB_SCHEMA_VERSION);
	assert_int_equal(ZB_SCHEMA_VERSION, 9);
	assert_string_equal(zb_store_path(s), path);
	sqlite3 *db = zb_store_db(s);
	assert_int_equal(sql_int(db, "PRAGMA user_version"), ZB_SCHEMA_VERSION);
	assert_int_equal(sql_int(db, "PRAGMA foreign_keys"), 1);
	assert_int_equal(sql_int(db, "PRAGMA synchronous"), 1); /* NORMAL */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM pragma_journal_mode"
				     " WHERE journal_mode = 'wal'"), 1);
	const char *tables[] = { "runs", "configs", "predictions", "tasks", "task_deps",
				 "events", "steps", "event_pairs" };
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
		assert_int_equal(count(s, tables[i]), 0);

	/* Table names are checked, never spliced blindly into SQL. */
	zb_error err = { 0 };
	int64_t n = 0;
	assert_int_equal(zb_store_count(s, "nope", &n, &err), ZB_E_INPUT);
	assert_string_equal(err.msg, "unknown table 'nope' (known: runs, configs, predictions,"
				     " tasks, task_deps, events, steps)");
	assert_int_equal(zb_store_count(s, "runs; DROP TABLE runs", &n, &err), ZB_E_INPUT);
	assert_int_equal(zb_store_count(s, "runs\"", &n, &err), ZB_E_INPUT);
	assert_int_equal(count(s, "runs"), 0);

	int64_t cid = 0;
	assert_int_equal(zb_store_latest_config(s, NULL, &cid, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "no configuration in database"));
	assert_int_equal(zb_store_latest_config(s, "guessed", &cid, &err), ZB_E_INPUT);
	assert_string_equal(err.msg, "unknown event source 'guessed' (known: predicted, measured)");
	zb_store_close(s);

	/* Reopening an up-to-date database changes nothing. */
	s = open_ok(path);
	assert_int_equal(zb_store_schema_version(s), ZB_SCHEMA_VERSION);
	zb_store_close(s);
}

static void test_round_trip(void **state)
{
	(void)state;
	char *path = db_path("rt.db");
	zb_store *s = open_ok(path);
	sqlite3 *db = zb_store_db(s);
	zb_config cfg;
	make_config(&cfg);
	zb_graph g;
	make_graph(&g, 4);
	zb_sim_result res;
	make_result(&res);
	zb_memory mem;
	memset(&mem, 0, sizeof mem);
	mem.fits = 1;
	mem.gpu_bytes = 3.5e9;
	mem.host_bytes = 7.25e9;
	double *ps, *pe, *ms, *me;
	make_times(g.ntasks, &ps, &pe, &ms, &me);
	me[2] = NAN; /* not recorded by the executor: no row */
	double steps[3] = { 0.31, 0.25, 0.26 };

	zb_run_info info = { .kind = "run", .command = "zbench run --model tiny",
			     .host = "testhost", .version = "0.1.0", .git_commit = "abc1234",
			     .device = "NVIDIA H200" };
	int64_t run_id = 0, cid = 0;
	assert_ok(zb_store_begin(s, E));
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, "{\"model\": \"tiny\"}", &cid, E));
	assert_ok(zb_store_add_prediction(s, cid, &g, &res, &mem, E));
	assert_ok(zb_store_add_tasks(s, cid, &g, E));
	assert_ok(zb_store_add_events(s, cid, "predicted", &g, ps, pe, E));
	assert_ok(zb_store_add_events(s, cid, "measured", &g, ms, me, E));
	assert_ok(zb_store_add_steps(s, cid, "measured", 3, steps, E));
	assert_ok(zb_store_finish_run(s, run_id, "ok", E));
	assert_ok(zb_store_commit(s, E));
	assert_true(run_id > 0);
	assert_true(cid > 0);

	assert_int_equal(count(s, "runs"), 1);
	assert_int_equal(count(s, "configs"), 1);
	assert_int_equal(count(s, "predictions"), 1);
	assert_int_equal(count(s, "tasks"), 4);
	assert_int_equal(count(s, "task_deps"), 3);
	assert_int_equal(count(s, "events"), 7);
	assert_int_equal(count(s, "steps"), 3);

	/* runs */
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT kind, status, host, version, git_commit, device, command,"
		" started_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:"
		"[0-9][0-9].[0-9][0-9][0-9]Z',"
		" finished_at >= started_at FROM runs WHERE id = ?", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, run_id), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	const char *want_run[] = { "run", "ok", "testhost", "0.1.0", "abc1234", "NVIDIA H200",
				   "zbench run --model tiny" };
	for (int i = 0; i < 7; i++)
		assert_string_equal((const char *)sqlite3_column_text(q, i), want_run[i]);
	assert_int_equal(sqlite3_column_int(q, 7), 1);
	assert_int_equal(sqlite3_column_int(q, 8), 1);
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);

	/* configs */
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT run_id, hw, link, gpu, cpu, cpu_cores, model, policy, ratio, offload_param,"
		" prefetch_layers, ckpt, gas, micro_batch, seq, dtype, pageable, bucket_params,"
		" cpu_threads, steps, params, config_json FROM configs WHERE id = ?", -1, &q, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, cid), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), run_id);
	assert_string_equal((const char *)sqlite3_column_text(q, 1), "h200-machine");
	assert_string_equal((const char *)sqlite3_column_text(q, 2), "gen5");
	assert_string_equal((const char *)sqlite3_column_text(q, 3), "h200");
	assert_string_equal((const char *)sqlite3_column_text(q, 4), "xeon-16");
	assert_int_equal(sqlite3_column_int(q, 5), 16);
	assert_string_equal((const char *)sqlite3_column_text(q, 6), "tiny");
	assert_string_equal((const char *)sqlite3_column_text(q, 7), zb_policy_name(ZB_POLICY_DPU));
	assert_close(sqlite3_column_double(q, 8), 0.75, 0);
	assert_int_equal(sqlite3_column_int(q, 9), 0);
	assert_int_equal(sqlite3_column_int(q, 10), 1);
	assert_string_equal((const char *)sqlite3_column_text(q, 11), zb_ckpt_name(ZB_CKPT_GPU));
	assert_int_equal(sqlite3_column_int(q, 12), 2);
	assert_int_equal(sqlite3_column_int(q, 13), 8);
	assert_int_equal(sqlite3_column_int(q, 14), 128);
	assert_string_equal((const char *)sqlite3_column_text(q, 15), zb_dtype_name(ZB_FP16));
	assert_int_equal(sqlite3_column_int(q, 16), 0);
	assert_int_equal(sqlite3_column_int64(q, 17), 50000);
	assert_int_equal(sqlite3_column_int(q, 18), 12);
	assert_int_equal(sqlite3_column_int(q, 19), 3);
	assert_int_equal(sqlite3_column_int64(q, 20), zb_model_params(&cfg.model));
	assert_string_equal((const char *)sqlite3_column_text(q, 21), "{\"model\": \"tiny\"}");
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);

	/* predictions */
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT fits, fit_reason IS NULL, total_s, step_time_s, tokens_per_s, tflops_per_gpu,"
		" bottleneck, lower_bound_s, bound_resource,"
		" busy_gpu_s, busy_d2h_s, busy_h2d_s, busy_cpu_s, busy_gpu_opt_s,"
		" work_gpu_s, work_d2h_s, work_h2d_s, work_cpu_s, work_gpu_opt_s,"
		" pcie_h2d_bytes, pcie_d2h_bytes, gpu_bytes, host_bytes, events,"
		" busy_comm_s, work_comm_s"
		" FROM predictions WHERE config_id = ?", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, cid), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 1);
	assert_int_equal(sqlite3_column_int(q, 1), 1);
	assert_close(sqlite3_column_double(q, 2), 0.75, 0);
	assert_close(sqlite3_column_double(q, 3), 0.25, 0);
	assert_close(sqlite3_column_double(q, 4), 8192, 0);
	assert_close(sqlite3_column_double(q, 5), 123.5, 0);
	assert_string_equal((const char *)sqlite3_column_text(q, 6), zb_resource_name(ZB_RES_CPU));
	assert_close(sqlite3_column_double(q, 7), 0.2, 0);
	assert_string_equal((const char *)sqlite3_column_text(q, 8), zb_resource_name(ZB_RES_D2H));
	for (int r = 0; r < ZB_RES_COMM; r++) {
		assert_close(sqlite3_column_double(q, 9 + r), res.busy_s[r], 0);
		assert_close(sqlite3_column_double(q, 14 + r), res.work_s[r], 0);
	}
	assert_close(sqlite3_column_double(q, 24), res.busy_s[ZB_RES_COMM], 0);
	assert_close(sqlite3_column_double(q, 25), res.work_s[ZB_RES_COMM], 0);
	assert_close(sqlite3_column_double(q, 19), 1.5e5, 0);
	assert_close(sqlite3_column_double(q, 20), 2e5, 0);
	assert_close(sqlite3_column_double(q, 21), 3.5e9, 0);
	assert_close(sqlite3_column_double(q, 22), 7.25e9, 0);
	assert_int_equal(sqlite3_column_int64(q, 23), 4242);
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);

	/* tasks, every column, and their dependencies */
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT task_id, kind, resource, op, pass, step, micro, unit, bucket, flops, bytes,"
		" params, param_offset, m, n, k, batch FROM tasks WHERE config_id = ?"
		" ORDER BY task_id", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, cid), SQLITE_OK);
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int64(q, 0), t->id);
		assert_string_equal((const char *)sqlite3_column_text(q, 1),
				    zb_task_kind_name((zb_task_kind)t->kind));
		assert_string_equal((const char *)sqlite3_column_text(q, 2),
				    zb_resource_name((zb_resource)t->resource));
		assert_string_equal((const char *)sqlite3_column_text(q, 3), zb_op_name((zb_op)t->op));
		assert_string_equal((const char *)sqlite3_column_text(q, 4),
				    zb_pass_name((zb_pass)t->pass));
		assert_int_equal(sqlite3_column_int(q, 5), t->step);
		assert_int_equal(sqlite3_column_int(q, 6), t->micro);
		assert_int_equal(sqlite3_column_int(q, 7), t->unit);
		assert_int_equal(sqlite3_column_int(q, 8), t->bucket);
		assert_close(sqlite3_column_double(q, 9), t->flops, 0);
		assert_close(sqlite3_column_double(q, 10), t->bytes, 0);
		assert_int_equal(sqlite3_column_int64(q, 11), t->params);
		assert_int_equal(sqlite3_column_int64(q, 12), t->param_offset);
		assert_int_equal(sqlite3_column_int(q, 13), t->m);
		assert_int_equal(sqlite3_column_int(q, 14), t->n);
		assert_int_equal(sqlite3_column_int(q, 15), t->k);
		assert_int_equal(sqlite3_column_int(q, 16), t->batch);
	}
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM task_deps WHERE dep_id = task_id - 1"), 3);

	/* events: seconds in, integer nanoseconds stored */
	assert_int_equal(sql_int(db, "SELECT end_ns FROM events WHERE source = 'predicted'"
				     " AND task_id = 3"), 3500000);
	assert_int_equal(sql_int(db, "SELECT start_ns FROM events WHERE source = 'measured'"
				     " AND task_id = 3"), 3300000);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM events WHERE source = 'measured'"
				     " AND task_id = 2"), 0);

	/* predicted JOIN measured on the task id, by hand and through the view */
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT p.task_id, t.resource, (m.end_ns - m.start_ns) - (p.end_ns - p.start_ns)"
		" FROM events p JOIN events m ON m.config_id = p.config_id"
		"  AND m.task_id = p.task_id AND m.source = 'measured'"
		" JOIN tasks t ON t.config_id = p.config_id AND t.task_id = p.task_id"
		" WHERE p.source = 'predicted' AND p.config_id = ? ORDER BY p.task_id",
		-1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, cid), SQLITE_OK);
	const int want_ids[3] = { 0, 1, 3 };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), want_ids[i]);
		assert_string_equal((const char *)sqlite3_column_text(q, 1),
				    zb_resource_name((zb_resource)g.tasks[want_ids[i]].resource));
		assert_int_equal(sqlite3_column_int64(q, 2), 50000); /* 0.55 ms - 0.5 ms */
	}
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);
	assert_int_equal(count(s, "event_pairs"), 3);
	assert_int_equal(sql_int(db, "SELECT sum((meas_end_ns - meas_start_ns)"
				     " - (pred_end_ns - pred_start_ns)) FROM event_pairs"), 3 * 50000);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM event_pairs WHERE resource = 'gpu'"
				     " AND op = 'qkv' AND kind = 'gemm' AND step = 0"), 1);

	/* steps */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT step, time_s FROM steps"
		" WHERE config_id = ? AND source = 'measured' ORDER BY step", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_int64(q, 1, cid), SQLITE_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), i);
		assert_close(sqlite3_column_double(q, 1), steps[i], 0);
	}
	assert_int_equal(sqlite3_finalize(q), SQLITE_OK);

	/* the readers */
	int64_t latest = 0;
	assert_ok(zb_store_latest_config(s, NULL, &latest, E));
	assert_int_equal(latest, cid);
	assert_ok(zb_store_latest_config(s, "measured", &latest, E));
	assert_int_equal(latest, cid);

	/* A second config without measured events: newest overall, not newest measured. */
	int64_t cid2 = 0;
	assert_ok(zb_store_add_config(s, run_id, &cfg, NULL, &cid2, E));
	assert_ok(zb_store_add_events(s, cid2, "predicted", &g, ps, pe, E));
	assert_ok(zb_store_latest_config(s, NULL, &latest, E));
	assert_int_equal(latest, cid2);
	assert_ok(zb_store_latest_config(s, "measured", &latest, E));
	assert_int_equal(latest, cid);

	/* A configuration that does not fit: no result, the reason recorded. */
	memset(&mem, 0, sizeof mem);
	snprintf(mem.reason, sizeof mem.reason, "gpu needs 95.2 GiB of 80.0 GiB");
	assert_ok(zb_store_add_prediction(s, cid2, NULL, NULL, &mem, E));
	assert_int_equal(sql_int(db, "SELECT count(*) FROM predictions WHERE fits = 0"
				     " AND fit_reason = 'gpu needs 95.2 GiB of 80.0 GiB'"
				     " AND step_time_s IS NULL AND bottleneck IS NULL"), 1);
	/* One prediction per configuration. */
	zb_error err = { 0 };
	assert_int_equal(zb_store_add_prediction(s, cid2, NULL, NULL, &mem, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "UNIQUE"));

	/* Deleting a run deletes everything under it. */
	sql_exec(db, "DELETE FROM runs");
	const char *tables[] = { "configs", "predictions", "tasks", "task_deps", "events", "steps" };
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
		assert_int_equal(count(s, tables[i]), 0);

	zb_store_close(s);
	free(ps), free(pe), free(ms), free(me);
	free_graph(&g);
	free(path);
}

static void test_foreign_keys_and_checks(void **state)
{
	(void)state;
	char *path = db_path("fk.db");
	zb_store *s = open_ok(path);
	zb_graph g;
	make_graph(&g, 4);
	double *ps, *pe, *ms, *me;
	make_times(g.ntasks, &ps, &pe, &ms, &me);
	zb_error err = { 0 };

	/* An event of a configuration that does not exist. */
	assert_int_equal(zb_store_add_events(s, 999, "predicted", &g, ps, pe, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "FOREIGN KEY constraint failed"));
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(count(s, "events"), 0);

	/* A configuration of a run that does not exist, tasks of a missing config. */
	zb_config cfg;
	make_config(&cfg);
	int64_t cid = 0;
	assert_int_equal(zb_store_add_config(s, 12345, &cfg, NULL, &cid, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "FOREIGN KEY"));
	assert_int_equal(zb_store_add_tasks(s, 999, &g, &err), ZB_E_STORE);
	assert_int_equal(count(s, "tasks"), 0);
	assert_int_equal(count(s, "configs"), 0);

	/* Unknown source; end before start. */
	assert_int_equal(zb_store_add_events(s, 999, "guessed", &g, ps, pe, &err), ZB_E_INPUT);
	assert_string_equal(err.msg, "unknown event source 'guessed' (known: predicted, measured)");
	zb_run_info info = { .kind = "predict", .command = "zbench predict" };
	int64_t run_id = 0;
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, NULL, &cid, E));
	pe[2] = ps[2] - 1e-6;
	assert_int_equal(zb_store_add_events(s, cid, "predicted", &g, ps, pe, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "CHECK constraint failed"));
	assert_int_equal(count(s, "events"), 0); /* the call wrote nothing, not two rows */

	/* Finishing a run that does not exist. */
	assert_int_equal(zb_store_finish_run(s, 4711, "ok", &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "no run 4711"));

	zb_store_close(s);
	free(ps), free(pe), free(ms), free(me);
	free_graph(&g);
	free(path);
}

static void test_newer_schema_refused(void **state)
{
	(void)state;
	char *path = db_path("newer.db");
	zb_store *s = open_ok(path);
	zb_run_info info = { .kind = "predict", .command = "zbench predict" };
	int64_t run_id;
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	zb_store_close(s);

	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sql_exec(db, "PRAGMA user_version = 10");
	assert_int_equal(sqlite3_close(db), SQLITE_OK);

	size_t n;
	char *before = read_all(path, &n);
	zb_error err = { 0 };
	s = NULL;
	assert_int_equal(zb_store_open(&s, path, 100, &err), ZB_E_STORE);
	assert_null(s);
	char want[512];
	snprintf(want, sizeof want,
		 "database '%s' has schema version 10, newer than this zbench (%d)", path, ZB_SCHEMA_VERSION);
	assert_string_equal(err.msg, want);
	assert_int_equal(err.status, ZB_E_STORE);
	assert_same_file(path, before, n);
	free(before);
	free(path);
}

/* Hold a database with another connection: BEGIN EXCLUSIVE plus a write. */
static sqlite3 *hold_lock(const char *path)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sql_exec(db, "BEGIN EXCLUSIVE");
	sql_exec(db, "CREATE TABLE IF NOT EXISTS holder(x); INSERT INTO holder VALUES(1)");
	return db;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_locked(void **state)
{
	(void)state;
	zb_error err = { 0 };

	/* A zbench database (WAL) held by a writer: readers may still open it, the
	 * first write waits 50 ms and gives up. */
	char *path = db_path("locked.db");
	zb_store_close(open_ok(path));
	sqlite3 *holder = hold_lock(path);
	zb_store *s = NULL;
	assert_int_equal(zb_store_open(&s, path, 50, &err), ZB_OK);
	double t0 = now_s();
	assert_int_equal(zb_store_begin(s, &err), ZB_E_STORE);
	double waited = now_s() - t0;
	char want[512];
	snprintf(want, sizeof want, "database '%s' is locked (", path);
	assert_memory_equal(err.msg, want, strlen(want));
	assert_non_null(strstr(err.msg, "50 ms"));
	assert_true(waited >= 0.04);
	/* The same outside a transaction. */
	zb_run_info info = { .kind = "predict", .command = "zbench predict" };
	int64_t run_id;
	assert_int_equal(zb_store_add_run(s, &info, &run_id, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "is locked"));
	zb_store_close(s);
	assert_int_equal(sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(holder), SQLITE_OK);
	/* Once released, the same store works. */
	s = open_ok(path);
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	zb_store_close(s);
	free(path);

	/* A new file held exclusively (rollback journal) by another program: even
	 * reading the header waits, so the open itself fails. */
	path = db_path("held.db");
	holder = hold_lock(path);
	s = NULL;
	assert_int_equal(zb_store_open(&s, path, 50, &err), ZB_E_STORE);
	assert_null(s);
	snprintf(want, sizeof want, "database '%s' is locked (", path);
	assert_memory_equal(err.msg, want, strlen(want));
	assert_int_equal(sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(holder), SQLITE_OK);
	free(path);
}

static void test_not_a_database(void **state)
{
	(void)state;
	zb_error err = { 0 };
	zb_store *s = NULL;

	char *path = db_path("notes.db");
	zb_test_write_file(path, "these are my notes, not a database; zbench must not touch"
				 " them, whatever they are called. ................................"
				 "..................................................................."
				 ".................................................................\n");
	size_t n;
	char *before = read_all(path, &n);
	assert_int_equal(zb_store_open(&s, path, 100, &err), ZB_E_STORE);
	assert_null(s);
	char want[512];
	snprintf(want, sizeof want, "not a zbench database: '%s' (file is not a database)", path);
	assert_string_equal(err.msg, want);
	assert_same_file(path, before, n);
	free(before);
	free(path);

	/* A SQLite database of another program: refused too, and left alone. */
	path = db_path("other.db");
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sql_exec(db, "CREATE TABLE contacts(name, phone); INSERT INTO contacts VALUES('a', 'b')");
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	before = read_all(path, &n);
	assert_int_equal(zb_store_open(&s, path, 100, &err), ZB_E_STORE);
	snprintf(want, sizeof want, "not a zbench database: '%s' (", path);
	assert_memory_equal(err.msg, want, strlen(want));
	assert_same_file(path, before, n);
	free(before);
	free(path);
}

static void test_unwritable_path(void **state)
{
	(void)state;
	zb_error err = { 0 };
	zb_store *s = NULL;
	assert_int_equal(zb_store_open(&s, "/proc/zbench-test.db", 100, &err), ZB_E_STORE);
	assert_null(s);
	const char *want = "cannot open database '/proc/zbench-test.db': ";
	assert_memory_equal(err.msg, want, strlen(want));

	assert_int_equal(zb_store_open(&s, "/proc/zbench-test/sub/x.db", 100, &err), ZB_E_STORE);
	want = "cannot open database '/proc/zbench-test/sub/x.db': cannot create directory"
	       " '/proc/zbench-test' (";
	assert_memory_equal(err.msg, want, strlen(want));

	/* A parent that is a file, not a directory. */
	char *file = db_path("plain");
	zb_test_write_file(file, "x");
	char path[256];
	snprintf(path, sizeof path, "%s/x.db", file);
	assert_int_equal(zb_store_open(&s, path, 100, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "cannot open database"));
	free(file);
}

static void test_rollback_leaves_nothing(void **state)
{
	(void)state;
	char *path = db_path("rb.db");
	zb_store *s = open_ok(path);
	zb_config cfg;
	make_config(&cfg);
	zb_graph g;
	make_graph(&g, 8);
	double *ps, *pe, *ms, *me;
	make_times(g.ntasks, &ps, &pe, &ms, &me);
	zb_run_info info = { .kind = "sweep", .command = "zbench sweep" };
	int64_t run_id, cid;

	/* Everything written, then rolled back. */
	assert_ok(zb_store_begin(s, E));
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, "{}", &cid, E));
	assert_ok(zb_store_add_tasks(s, cid, &g, E));
	assert_ok(zb_store_add_events(s, cid, "predicted", &g, ps, pe, E));
	assert_int_equal(count(s, "events"), 8); /* visible inside the transaction */
	zb_store_rollback(s);
	const char *tables[] = { "runs", "configs", "tasks", "task_deps", "events" };
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
		assert_int_equal(count(s, tables[i]), 0);

	/* A failure half-way: the failed call undoes itself, earlier rows stay until
	 * the caller rolls back; a second begin inside a transaction is refused. */
	zb_error err = { 0 };
	assert_ok(zb_store_begin(s, E));
	assert_int_equal(zb_store_begin(s, &err), ZB_E_INTERNAL);
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, "{}", &cid, E));
	assert_ok(zb_store_add_tasks(s, cid, &g, E));
	assert_int_equal(zb_store_add_tasks(s, cid, &g, &err), ZB_E_STORE); /* duplicates */
	assert_non_null(strstr(err.msg, "UNIQUE constraint failed"));
	assert_non_null(strstr(err.msg, "insert the tasks of config"));
	assert_int_equal(count(s, "tasks"), 8);
	zb_store_rollback(s);
	assert_int_equal(count(s, "runs"), 0);
	assert_int_equal(count(s, "tasks"), 0);
	zb_store_rollback(s); /* harmless without a transaction */
	assert_int_equal(zb_store_commit(s, &err), ZB_E_INTERNAL);
	assert_non_null(strstr(err.msg, "no transaction to commit"));

	/* SQLite itself ended the caller's transaction (as it does after some I/O
	 * errors; here by a ROLLBACK behind the store's back): later writes must not
	 * quietly commit on their own. */
	assert_ok(zb_store_begin(s, E));
	sql_exec(zb_store_db(s), "ROLLBACK");
	assert_int_equal(zb_store_add_run(s, &info, &run_id, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "rolled back after an earlier error"));
	assert_int_equal(zb_store_commit(s, &err), ZB_E_STORE);
	assert_int_equal(count(s, "runs"), 0);

	/* Outside a transaction each call commits on its own: another connection
	 * sees the row at once. */
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	sqlite3 *other = NULL;
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
	assert_int_equal(sql_int(other, "SELECT count(*) FROM runs"), 1);
	assert_int_equal(sqlite3_close(other), SQLITE_OK);

	/* An abandoned transaction is rolled back on close. */
	assert_ok(zb_store_begin(s, E));
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	zb_store_close(s);
	s = open_ok(path);
	assert_int_equal(count(s, "runs"), 1);
	zb_store_close(s);

	free(ps), free(pe), free(ms), free(me);
	free_graph(&g);
	free(path);
}

static void test_migration_from_v1(void **state)
{
	(void)state;
	char *path = db_path("v1.db");
	zb_store *s = NULL;
	assert_ok(zb_store_open_version(&s, path, 1000, 1, E));
	assert_int_equal(zb_store_schema_version(s), 1);
	assert_int_equal(sql_int(zb_store_db(s), "PRAGMA user_version"), 1);
	zb_error err = { 0 };
	int64_t n;
	assert_int_equal(zb_store_count(s, "steps", &n, &err), ZB_E_INPUT); /* not in v1 */

	zb_config cfg;
	make_config(&cfg);
	zb_graph g;
	make_graph(&g, 6);
	double *ps, *pe, *ms, *me;
	make_times(g.ntasks, &ps, &pe, &ms, &me);
	zb_run_info info = { .kind = "run", .command = "zbench run" };
	int64_t run_id, cid;
	assert_ok(zb_store_begin(s, E));
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, "{}", &cid, E));
	assert_ok(zb_store_add_tasks(s, cid, &g, E));
	assert_ok(zb_store_add_events(s, cid, "predicted", &g, ps, pe, E));
	assert_ok(zb_store_add_events(s, cid, "measured", &g, ms, me, E));
	assert_ok(zb_store_commit(s, E));
	zb_store_close(s);

	/* The current zbench migrates it, keeping every row. */
	s = open_ok(path);
	assert_int_equal(zb_store_schema_version(s), ZB_SCHEMA_VERSION);
	assert_int_equal(sql_int(zb_store_db(s), "PRAGMA user_version"), ZB_SCHEMA_VERSION);
	assert_int_equal(count(s, "runs"), 1);
	assert_int_equal(count(s, "configs"), 1);
	assert_int_equal(count(s, "tasks"), 6);
	assert_int_equal(count(s, "task_deps"), 5);
	assert_int_equal(count(s, "events"), 12);
	assert_int_equal(count(s, "event_pairs"), 6);
	assert_int_equal(sql_int(zb_store_db(s), "SELECT count(*) FROM sqlite_master"
			 " WHERE type = 'index' AND name IN ('configs_run', 'runs_kind')"), 2);
	double steps[2] = { 0.5, 0.4 };
	assert_ok(zb_store_add_steps(s, cid, "measured", 2, steps, E));
	assert_int_equal(count(s, "steps"), 2);
	zb_store_close(s);

	/* Asking for an older version of a newer file does not downgrade it. */
	assert_ok(zb_store_open_version(&s, path, 1000, 1, E));
	assert_int_equal(zb_store_schema_version(s), ZB_SCHEMA_VERSION);
	zb_store_close(s);
	assert_int_equal(zb_store_open_version(&s, path, 1000, ZB_SCHEMA_VERSION + 1, &err), ZB_E_INTERNAL);

	free(ps), free(pe), free(ms), free(me);
	free_graph(&g);
	free(path);
}

static void test_bulk_insert_rate(void **state)
{
	(void)state;
	/* ZB_STORE_BULK_ROWS: fewer rows, for valgrind runs. */
	const char *env = getenv("ZB_STORE_BULK_ROWS");
	const size_t n = env && atol(env) > 0 ? (size_t)atol(env) : 1000000;
	char *path = db_path("bulk.db");
	zb_store *s = open_ok(path);
	zb_config cfg;
	make_config(&cfg);
	zb_graph g;
	make_graph(&g, n);
	double *ps, *pe, *ms, *me;
	make_times(n, &ps, &pe, &ms, &me);
	zb_run_info info = { .kind = "run", .command = "zbench run" };
	int64_t run_id, cid;

	assert_ok(zb_store_begin(s, E));
	assert_ok(zb_store_add_run(s, &info, &run_id, E));
	assert_ok(zb_store_add_config(s, run_id, &cfg, "{}", &cid, E));
	double t0 = now_s();
	assert_ok(zb_store_add_tasks(s, cid, &g, E));
	double t1 = now_s();
	assert_ok(zb_store_add_events(s, cid, "predicted", &g, ps, pe, E));
	double t2 = now_s();
	assert_ok(zb_store_add_events(s, cid, "measured", &g, ms, me, E));
	double t3 = now_s();
	assert_ok(zb_store_commit(s, E));
	double t4 = now_s();
	assert_int_equal(count(s, "events"), 2 * (int64_t)n);
	assert_int_equal(count(s, "tasks"), (int64_t)n);
	assert_int_equal(count(s, "task_deps"), (int64_t)n - 1);
	/* Printed, not asserted: the rate depends on the machine and its load. */
	printf("# bulk insert: %.2f M rows/s tasks+deps (%zu + %zu rows), %.2f M rows/s predicted"
	       " events, %.2f M rows/s measured events (%zu rows each), commit %.2f s\n",
	       (double)(n + g.ndeps) / (t1 - t0) / 1e6, n, g.ndeps,
	       (double)n / (t2 - t1) / 1e6, (double)n / (t3 - t2) / 1e6, n, t4 - t3);
	zb_store_close(s);
	free(ps), free(pe), free(ms), free(me);
	free_graph(&g);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_creates_schema),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_foreign_keys_and_checks),
		cmocka_unit_test(test_newer_schema_refused),
		cmocka_unit_test(test_locked),
		cmocka_unit_test(test_not_a_database),
		cmocka_unit_test(test_unwritable_path),
		cmocka_unit_test(test_rollback_leaves_nothing),
		cmocka_unit_test(test_migration_from_v1),
		cmocka_unit_test(test_bulk_insert_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
