/*
 * test_trace.c - CUPTI tracing on a real GPU (make test-gpu):
 *   - alignment: a host span bracketing a synchronous cudaMemcpy (pinned, both
 *     directions, 1-64 MiB) contains the copy's CUPTI interval within 5 us, and the
 *     copy fills most of the bracket; the same for a kernel bracketed by a sync;
 *   - launch count: every kernel launch (our kernels and cuBLASLt's) gives exactly
 *     one kernel record, with no record dropped;
 *   - a traced executor run: every task of the schedule exactly once (one issue
 *     span per GPU task, one task span per CPU task), every GPU task has GPU
 *     records mapped to it and no GPU record of the run is unmapped, the copy bytes
 *     add up to the schedule's PCIe volume (copy_bytes x steps), kernel records ==
 *     launches, zero dropped records, and each CPU Adam task starts after the CUPTI
 *     end of the gradient copy it waits for; stored, nsys-style SQL runs on it;
 *   - `zbench run --trace` then `zbench export latest`: the JSON parses.
 * Without a GPU it prints "skipped: no GPU" and skips (ZB_REQUIRE_GPU=1 fails).
 */
#include "tests/harness.h"

#include <cuda_runtime.h>
#include <jansson.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/executor.h"
#include "exec/gemm.h"
#include "exec/kernels.h"
#include "exec/threadpool.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "results/store.h"
#include "core/graph.h"
#include "inputs/presets.h"

static int g_have_gpu, g_require;
static char g_why[512];
static char tmpdir[128];

#define NEED_GPU()                                                                   \
	do {                                                                         \
		if (!g_have_gpu) {                                                   \
			if (g_require)                                               \
				fail_msg("no GPU and ZB_REQUIRE_GPU=1: %s", g_why);  \
			skip();                                                      \
		}                                                                    \
	} while (0)

#define CU(call)                                                                               \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess)                                                         \
			fail_msg("%s failed: %s at line %d", #call, cudaGetErrorString(e_), __LINE__); \
	} while (0)

#define OK(call)                                                                        \
	do {                                                                            \
		zb_error err_ = { 0 };                                                  \
		zb_status s_ = (call);                                                  \
		if (s_ != ZB_OK)                                                        \
			fail_msg("%s: %s (line %d)", #call, err_.msg, __LINE__);        \
	} while (0)

/* Start a session; a GPU machine where CUPTI cannot trace is a failure here. */
static zb_trace *start(void)
{
	zb_trace *t = zb_trace_create();
	OK(zb_trace_start(t, &err_));
	assert_true(zb_trace_active());
	return t;
}

static void stop(zb_trace *t)
{
	OK(zb_trace_stop(t, &err_));
	assert_false(zb_trace_active());
	print_message("# session: %zu kernels, %llu launches, %zu copies, %zu memsets, %zu API, %zu sync, %zu overhead;"
		      " dropped %llu, buffers %llu (failed %llu), parse errors %llu, unknown %llu, untimed %llu;"
		      " clock %s, offset %lld ns, residual %lld ns\n",
		      t->nkernels, (unsigned long long)t->launches, t->nmemcpys, t->nmemsets, t->napis, t->nsyncs,
		      t->noverheads, (unsigned long long)t->dropped, (unsigned long long)t->buffers,
		      (unsigned long long)t->buffer_failures, (unsigned long long)t->parse_errors,
		      (unsigned long long)t->unknown_records, (unsigned long long)t->untimed_records, t->clock_method,
		      (long long)t->clock_offset_ns, (long long)t->clock_residual_ns);
	assert_int_equal(t->dropped, 0);
	assert_int_equal(t->buffer_failures, 0);
	assert_int_equal(t->parse_errors, 0);
}

/* ---- alignment of CUPTI time with the host clock ------------------------------------- */

typedef struct bracket {
	int64_t a, b;     /* host clock around the synchronous call */
	size_t bytes;
	int kind;         /* 1 h2d, 2 d2h */
} bracket;

static void test_alignment(void **state)
{
	NEED_GPU();
	CU(cudaSetDevice(0));
	CU(cudaFree(0)); /* the context, before the session: its setup is not what we time */
	const size_t top = 64u << 20;
	void *h = NULL, *d = NULL;
	CU(cudaMallocHost(&h, top));
	CU(cudaMalloc(&d, top));
	memset(h, 7, top);
	zb_trace *t = start();
	CU(cudaMemcpy(d, h, top, cudaMemcpyHostToDevice)); /* warm-up */
	static const size_t sizes[] = { 1u << 20, 16u << 20, 64u << 20 };
	bracket br[12];
	int nb = 0;
	for (int rep = 0; rep < 2; rep++)
		for (int s = 0; s < 3; s++)
			for (int dir = 1; dir <= 2; dir++) {
				bracket *x = &br[nb++];
				x->bytes = sizes[s];
				x->kind = dir;
				x->a = zb_now_ns();
				CU(cudaMemcpy(dir == 1 ? d : h, dir == 1 ? h : d, x->bytes,
					      dir == 1 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
				x->b = zb_now_ns();
			}
	/* a kernel: launch, then wait for it on the host */
	zb_error err = { 0 };
	int64_t ka = zb_now_ns();
	assert_int_equal(zb_fill_uniform_bf16((uint16_t *)d, top / 2, 5, -1, 1, NULL, &err), ZB_OK);
	CU(cudaDeviceSynchronize());
	int64_t kb = zb_now_ns();
	stop(t);
	const int64_t slack = 5000; /* ns */
	for (int i = 0; i < nb; i++) {
		bracket *x = &br[i];
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		uint64_t bytes = 0;
		for (size_t j = 0; j < t->nmemcpys; j++) {
			const zb_tr_memcpy *c = &t->memcpys[j];
			/* records overlapping the bracket widened by 10 us: a neighbouring copy
			 * of the same direction is at least one opposite copy away */
			if (c->copy_kind != x->kind || c->end < x->a - 10000 || c->start > x->b + 10000)
				continue;
			bytes += c->bytes;
			lo = c->start < lo ? c->start : lo;
			hi = c->end > hi ? c->end : hi;
		}
		print_message("# %s %3zu MiB: host [0, %.1f] us, CUPTI copy [%.1f, %.1f] us\n", x->kind == 1 ? "h2d" : "d2h",
			      x->bytes >> 20, (x->b - x->a) / 1e3, (lo - x->a) / 1e3, (hi - x->a) / 1e3);
		assert_int_equal(bytes, x->bytes);
		if (lo < x->a - slack || hi > x->b + slack)
			fail_msg("%s copy of %zu bytes: CUPTI [%lld, %lld] ns is outside the host bracket [0, %lld] ns by more"
				 " than %lld ns",
				 x->kind == 1 ? "h2d" : "d2h", x->bytes, (long long)(lo - x->a), (long long)(hi - x->a),
				 (long long)(x->b - x->a), (long long)slack);
		if (x->bytes >= (16u << 20))
			assert_true(hi - lo > (x->b - x->a) / 2); /* the copy is most of the bracket */
	}
	int found = 0;
	for (size_t j = 0; j < t->nkernels; j++) {
		const zb_tr_kernel *k = &t->kernels[j];
		if (k->start < ka - 1000000 || k->end > kb + 1000000)
			continue;
		found++;
		print_message("# kernel %s: host [0, %.1f] us, CUPTI [%.1f, %.1f] us\n", zb_trace_string(t, k->short_name),
			      (kb - ka) / 1e3, (k->start - ka) / 1e3, (k->end - ka) / 1e3);
		assert_true(k->start >= ka - slack);
		assert_true(k->end <= kb + slack);
	}
	assert_int_equal(found, 1);
	zb_trace_free(t);
	CU(cudaFreeHost(h));
	CU(cudaFree(d));
}

/* ---- launches ------------------------------------------------------------------------- */

static void test_launch_count(void **state)
{
	NEED_GPU();
	CU(cudaSetDevice(0));
	const int n = 1024;
	uint16_t *a = NULL, *b = NULL, *c = NULL;
	CU(cudaMalloc((void **)&a, (size_t)n * n * 2));
	CU(cudaMalloc((void **)&b, (size_t)n * n * 2));
	CU(cudaMalloc((void **)&c, (size_t)n * n * 2));
	zb_gemm *g = NULL;
	OK(zb_gemm_create(&g, &err_));
	zb_trace *t = start();
	zb_error err = { 0 };
	for (int i = 0; i < 100; i++)
		assert_int_equal(zb_fill_uniform_bf16(a, (size_t)n * n, (uint64_t)i, -1, 1, NULL, &err), ZB_OK);
	for (int i = 0; i < 10; i++) {
		zb_gemm_op op;
		zb_gemm_op_init(&op, ZB_BF16, 0, 0, n, n, n);
		OK(zb_gemm_run(g, &op, a, b, c, NULL, &err_));
	}
	CU(cudaMemsetAsync(c, 0, 4096, NULL));
	CU(cudaDeviceSynchronize());
	stop(t);
	print_message("# 100 fills + 10 cuBLASLt GEMMs: %zu kernel records, %llu launches counted, %zu memsets\n",
		      t->nkernels, (unsigned long long)t->launches, t->nmemsets);
	assert_true(t->nkernels >= 110);
	assert_int_equal(t->nkernels, t->launches);
	assert_true(t->nmemsets >= 1);
	zb_trace_free(t);
	OK(zb_gemm_destroy(g, &err_));
	CU(cudaFree(a));
	CU(cudaFree(b));
	CU(cudaFree(c));
}

/* ---- a traced run of the executor ------------------------------------------------------------ */

static void small_config(zb_config *c)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	assert_int_equal(zb_preset_model("gpt2", &c->model, &err), ZB_OK);
	c->model.layers = 4;
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_policy_parse("dpu", &c->policy.kind, &err), ZB_OK);
	c->policy.ratio = 0.5;
	c->policy.micro_batch = 2;
	c->policy.seq = 256;
	c->policy.bucket_params = 3000000;
	c->policy.cpu_threads = 4;
	c->steps = 5;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK || sqlite3_step(q) != SQLITE_ROW)
		fail_msg("query failed (%s): %s", sqlite3_errmsg(db), sql);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static void test_traced_run(void **state)
{
	NEED_GPU();
	zb_config c;
	small_config(&c);
	zb_graph g;
	OK(zb_graph_build(&g, &c, &err_));
	zb_trace *t = start();
	zb_spans *sp = zb_spans_create();
	zb_exec_options o = { .quiet = 1, .seed = 7, .trace = 1, .spans = sp };
	zb_exec_result r;
	zb_error err = { 0 };
	zb_status st = zb_execute(&g, &c, &o, &r, &err);
	stop(t);
	if (st)
		fail_msg("execute: %s", err.msg);
	assert_int_equal(r.steps_done, g.steps);
	zb_trace_resolve(t, &g, r.start, r.end, r.t0_ns);
	print_message("# run: %zu tasks; GPU records mapped by tag %llu, by time %llu, unmapped %llu\n", g.ntasks,
		      (unsigned long long)t->mapped_tag, (unsigned long long)t->mapped_time,
		      (unsigned long long)t->unmapped);

	/* kernels: one record per launch, whatever launched it */
	assert_int_equal(t->nkernels, t->launches);
	assert_int_equal(t->unmapped, 0);

	/* every GPU task has records; no record points outside the schedule */
	size_t *recs = calloc(g.ntasks, sizeof *recs);
	double h2d = 0, d2h = 0;
	for (size_t i = 0; i < t->nkernels; i++)
		if (t->kernels[i].task >= 0) {
			assert_true((size_t)t->kernels[i].task < g.ntasks);
			recs[t->kernels[i].task]++;
		}
	for (size_t i = 0; i < t->nmemsets; i++)
		if (t->memsets[i].task >= 0)
			recs[t->memsets[i].task]++;
	for (size_t i = 0; i < t->nmemcpys; i++) {
		const zb_tr_memcpy *m = &t->memcpys[i];
		if (m->task < 0)
			continue;
		recs[m->task]++;
		const zb_task *tk = &g.tasks[m->task];
		if (tk->kind != ZB_TASK_COPY)
			fail_msg("a copy of %llu bytes maps to task %d (%s), not a copy task", (unsigned long long)m->bytes,
				 m->task, zb_op_name(tk->op));
		if (m->copy_kind == 1)
			h2d += (double)m->bytes;
		else if (m->copy_kind == 2)
			d2h += (double)m->bytes;
	}
	double sched_h2d = 0, sched_d2h = 0;
	size_t gpu_tasks = 0, cpu_tasks = 0;
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *tk = &g.tasks[i];
		if (tk->resource == ZB_RES_CPU) {
			cpu_tasks++;
			continue;
		}
		gpu_tasks++;
		if (tk->kind == ZB_TASK_COPY)
			*(tk->resource == ZB_RES_H2D ? &sched_h2d : &sched_d2h) += (double)(size_t)tk->bytes;
		if (recs[i] == 0 && !(tk->kind == ZB_TASK_COPY && (size_t)tk->bytes == 0))
			fail_msg("GPU task %zu (%s %s, step %d) has no CUPTI record", i, zb_op_name(tk->op),
				 zb_pass_name(tk->pass), tk->step);
	}
	print_message("# copies: h2d %.0f B traced, %.0f B scheduled, %.0f B = copy_bytes x steps; d2h %.0f, %.0f, %.0f\n",
		      h2d, sched_h2d, g.copy_bytes[ZB_RES_H2D] * g.steps, d2h, sched_d2h,
		      g.copy_bytes[ZB_RES_D2H] * g.steps);
	assert_close(h2d, sched_h2d, 0);
	assert_close(d2h, sched_d2h, 0);
	assert_close(h2d, g.copy_bytes[ZB_RES_H2D] * g.steps, 1e-9);
	assert_close(d2h, g.copy_bytes[ZB_RES_D2H] * g.steps, 1e-9);

	/* every task exactly once in the CPU spans */
	size_t *once = calloc(g.ntasks, sizeof *once);
	int64_t *cpu_start = calloc(g.ntasks, sizeof *cpu_start);
	size_t workers = 0;
	for (int th = 0; th < zb_spans_nthreads(sp); th++) {
		size_t n;
		const zb_span *v = zb_spans_data(sp, th, &n);
		for (size_t j = 0; j < n; j++) {
			assert_true(v[j].end_ns >= v[j].start_ns);
			assert_true(v[j].start_ns >= r.t0_ns - 1000);
			if (v[j].kind == ZB_SPAN_TASK || v[j].kind == ZB_SPAN_ISSUE) {
				assert_true(v[j].task >= 0 && (size_t)v[j].task < g.ntasks);
				once[v[j].task]++;
				int cpu = g.tasks[v[j].task].resource == ZB_RES_CPU;
				assert_int_equal(v[j].kind == ZB_SPAN_TASK, cpu);
				if (cpu)
					cpu_start[v[j].task] = v[j].start_ns;
			}
			workers += v[j].kind == ZB_SPAN_WORKER;
		}
	}
	for (size_t i = 0; i < g.ntasks; i++)
		if (once[i] != 1)
			fail_msg("task %zu (%s) has %zu task/issue spans, want 1", i, zb_op_name(g.tasks[i].op), once[i]);
	print_message("# spans: %zu GPU tasks issued once, %zu CPU tasks run once, %zu worker shares, %zu in all\n",
		      gpu_tasks, cpu_tasks, workers, zb_spans_total(sp));
	assert_true(workers >= cpu_tasks);

	/* the clocks agree on a real run: a CPU task starts after the CUPTI end of the
	 * gradient copy it waits for (the host waits on the copy's event) */
	int checked = 0;
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *tk = &g.tasks[i];
		if (tk->resource != ZB_RES_CPU)
			continue;
		const uint32_t *dep = zb_task_deps(&g, tk);
		for (uint32_t j = 0; j < tk->dep_count; j++) {
			if (g.tasks[dep[j]].resource != ZB_RES_D2H)
				continue;
			for (size_t m = 0; m < t->nmemcpys; m++)
				if (t->memcpys[m].task == (int32_t)dep[j]) {
					if (cpu_start[i] + 20000 < t->memcpys[m].end)
						fail_msg("CPU task %zu starts %.1f us before the CUPTI end of its copy %u", i,
							 (t->memcpys[m].end - cpu_start[i]) / 1e3, dep[j]);
					checked++;
				}
		}
	}
	print_message("# %d CPU task / copy pairs in order on one clock\n", checked);
	assert_true(checked > 0);

	/* stored: nsys-style SQL and the per-task view */
	char path[256];
	snprintf(path, sizeof path, "%s/run.db", tmpdir);
	zb_store *s = NULL;
	OK(zb_store_open(&s, path, 1000, &err_));
	OK(zb_store_begin(s, &err_));
	zb_run_info info = { .kind = "run", .command = "test_trace", .device = r.device };
	int64_t run_id, cid;
	OK(zb_store_add_run(s, &info, &run_id, &err_));
	OK(zb_store_add_config(s, run_id, &c, "{}", &cid, &err_));
	OK(zb_store_add_tasks(s, cid, &g, &err_));
	OK(zb_store_add_events(s, cid, "measured", &g, r.start, r.end, &err_));
	OK(zb_store_add_trace(s, cid, &g, t, sp, r.t0_ns, &err_));
	OK(zb_store_commit(s, &err_));
	sqlite3 *db = zb_store_db(s);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM trace_tasks"), (int64_t)g.ntasks);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM (SELECT s.value, sum(k.end - k.start) FROM"
				     " CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName GROUP BY 1)")
				 > 0,
			 1);
	assert_int_equal(sql_int(db, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbTaskId IS NOT NULL"),
			 (int64_t)(h2d + d2h));
	assert_int_equal(sql_int(db, "SELECT count(*) FROM TARGET_INFO_GPU WHERE smCount > 0"), 1);
	zb_store_close(s);

	free(recs);
	free(once);
	free(cpu_start);
	zb_spans_free(sp);
	zb_trace_free(t);
	zb_exec_result_free(&r);
	zb_graph_free(&g);
}

/* ---- the command line ------------------------------------------------------------------------ */

static void test_cli_run_trace_export(void **state)
{
	NEED_GPU();
	const char *zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	char cmd[2048], out[256], json[256];
	snprintf(out, sizeof out, "%s/cli.out", tmpdir);
	snprintf(json, sizeof json, "%s/cli.json", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "%s run --model gpt2 --policy dpu --ratio 0.5 --micro-batch 2 --seq 256 --steps 2 --warmup 1 --trace"
		 " --quiet --db %s/cli.db >%s 2>&1 && %s export latest --format perfetto -o %s --db %s/cli.db >>%s 2>&1",
		 zbench, tmpdir, out, zbench, json, tmpdir, out);
	int rc = system(cmd);
	FILE *f = fopen(out, "r");
	char line[1024];
	int traced = 0;
	while (f && fgets(line, sizeof line, f)) {
		print_message("# %s", line);
		traced |= !strncmp(line, "trace: ", 7) && strstr(line, " 0 records dropped") != NULL;
	}
	if (f)
		fclose(f);
	assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
	assert_true(traced);
	json_error_t jerr;
	json_t *root = json_load_file(json, 0, &jerr);
	if (!root)
		fail_msg("%s does not parse: %s (line %d)", json, jerr.text, jerr.line);
	size_t kernels = 0, i;
	json_t *ev;
	json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
	{
		const char *cat = json_string_value(json_object_get(ev, "cat"));
		kernels += cat && !strcmp(cat, "kernel");
	}
	print_message("# export: %zu events, %zu kernels\n", json_array_size(json_object_get(root, "traceEvents")),
		      kernels);
	assert_true(kernels > 0);
	json_decref(root);
}

int main(void)
{
	zb_error err = { 0 };
	g_require = getenv("ZB_REQUIRE_GPU") && !strcmp(getenv("ZB_REQUIRE_GPU"), "1");
	g_have_gpu = zb_exec_available(&err);
	snprintf(g_why, sizeof g_why, "%s", err.msg);
	if (!g_have_gpu)
		printf("skipped: no GPU (%s)\n", g_why);
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_launch_count),
		cmocka_unit_test(test_traced_run),
		cmocka_unit_test(test_cli_run_trace_export),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
