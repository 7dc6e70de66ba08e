/*
 * test_trace.c - the profiler without a GPU: CPU span buffers from several threads;
 * kernel short names; records mapped to schedule tasks by tag and by time; the
 * trace writer (Nsight-Systems-export tables: column names, nanosecond units, the
 * run's time zero, StringIds shared by runs, nsys-style SQL, predicted JOIN trace on
 * the task, every task exactly once, cascade on delete, old schemas refused,
 * rollback); `zbench export` to Perfetto JSON (parsed back) and CSV, and its bad
 * inputs; the insert rate (printed in rows/s). With CUDA headers, synthetic CUPTI
 * activity records go through zb_trace_add_cupti_record, the function the real
 * buffer callback calls for every record; and zb_trace_start refuses cleanly where
 * CUPTI cannot trace.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/threadpool.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "results/store.h"
#include "sim/predict.h"
#include "inputs/presets.h"

#ifdef ZB_HAVE_CUDA
#include <cupti.h>
#endif

static char tmpdir[128];
static const char *zbench;

static void assert_ok_at(zb_status st, const zb_error *err, int line)
{
	if (st != ZB_OK) {
		print_error("status %d: %s\n", st, err->msg);
		_fail(__FILE__, line);
	}
}
/* OK_E(f(..., &err_)): the call succeeds, else its message is printed */
#define OK_E(expr_with_err)                                           \
	do {                                                          \
		zb_error err_ = { 0 };                                \
		zb_status s_ = (expr_with_err);                       \
		assert_ok_at(s_, &err_, __LINE__);                    \
	} while (0)

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		print_error("prepare failed: %s\n  %s\n", sqlite3_errmsg(db), sql);
		fail();
	}
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		print_error("no row (%s): %s\n", sqlite3_errmsg(db), sql);
		fail();
	}
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* ---- names, strings, spans ---------------------------------------------------------- */

static void test_short_names(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{ "void adam_kernel<float, 4>(float*, float*, int)", "adam_kernel" },
		{ "layernorm_fwd(__nv_bfloat16*, const __nv_bfloat16*, int)", "layernorm_fwd" },
		{ "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
		  "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas" },
		{ "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_64x64_tn_align8>("
		  "cutlass_80_tensorop_bf16_s16816gemm_64x64_tn_align8::Params)",
		  "Kernel2" },
		{ "void at::native::(anonymous namespace)::fused_adam<float, (int)4>(float*)", "fused_adam" },
		{ "(anonymous namespace)::foo(int)", "foo" },
		{ "ns::Cls::operator()(int) const", "operator()" },
		{ "void foo<(bar)3>(int)", "foo" },
		{ "void f<int>::g<float>(float)", "g" },
		{ "plain", "plain" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[256];
		zb_trace_short_name(cases[i][0], out, sizeof out);
		if (strcmp(out, cases[i][1])) {
			print_error("short name of '%s' is '%s', want '%s'\n", cases[i][0], out, cases[i][1]);
			fail();
		}
	}
	char small[4];
	zb_trace_short_name("adam_kernel(int)", small, sizeof small);
	assert_string_equal(small, "ada");
}

static void test_intern(void **state)
{
	(void)state;
	zb_trace *t = zb_trace_create();
	assert_int_equal(zb_trace_intern(t, ""), 0);
	assert_int_equal(zb_trace_intern(t, NULL), 0);
	uint32_t a = zb_trace_intern(t, "cudaLaunchKernel_v7000");
	char buf[32];
	for (int i = 0; i < 5000; i++) { /* grows the hash table several times */
		snprintf(buf, sizeof buf, "name%d", i);
		assert_int_equal(zb_trace_intern(t, buf), (uint32_t)(i + 2));
	}
	assert_int_equal(zb_trace_intern(t, "cudaLaunchKernel_v7000"), a);
	assert_string_equal(zb_trace_string(t, a), "cudaLaunchKernel_v7000");
	assert_string_equal(zb_trace_string(t, 4001), "name3999");
	assert_string_equal(zb_trace_string(t, 99999), "");
	zb_trace_free(t);
}

typedef struct span_job {
	zb_spans *sp;
	int index;
	int64_t tid;
} span_job;

static void *record_spans(void *arg)
{
	span_job *j = arg;
	char name[32];
	snprintf(name, sizeof name, "worker-%d", j->index);
	zb_span_buf *b = zb_spans_thread(j->sp, name);
	j->tid = zb_gettid();
	for (int i = 0; i < 5000; i++) {
		int64_t t0 = zb_now_ns();
		zb_span_add(b, ZB_SPAN_TASK, j->index * 10000 + i, -1, t0, zb_now_ns());
	}
	return NULL;
}

static void test_spans_threads(void **state)
{
	(void)state;
	zb_spans *sp = zb_spans_create();
	pthread_t th[4];
	span_job jobs[4];
	for (int i = 0; i < 4; i++) {
		jobs[i] = (span_job){ sp, i, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, record_spans, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	zb_span_buf *v1 = zb_spans_virtual(sp, "zb-pool-1", 1);
	assert_ptr_equal(zb_spans_virtual(sp, "zb-pool-1 again", 1), v1);
	zb_span_add(v1, ZB_SPAN_WORKER, 7, -1, 100, 50); /* end before start: clamped */
	zb_span_add(NULL, ZB_SPAN_TASK, 1, -1, 0, 1);   /* no buffer: nothing */
	assert_int_equal(zb_spans_nthreads(sp), 5);
	assert_int_equal(zb_spans_total(sp), 20001);
	for (int i = 0; i < 4; i++) {
		size_t n;
		const zb_span *v = zb_spans_data(sp, i, &n);
		assert_int_equal(n, 5000);
		/* registration order is not fixed: find the job by name */
		int idx = zb_spans_thread_name(sp, i)[7] - '0';
		assert_int_equal(zb_spans_thread_tid(sp, i), jobs[idx].tid);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(v[k].task, idx * 10000 + (int)k);
			assert_true(v[k].end_ns >= v[k].start_ns);
			if (k)
				assert_true(v[k].start_ns >= v[k - 1].end_ns);
		}
	}
	size_t n;
	const zb_span *v = zb_spans_data(sp, 4, &n);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].end_ns, 100);
	assert_int_equal(zb_spans_thread_tid(sp, 4), ZB_SPANS_VIRTUAL_TID + 1);
	assert_string_equal(zb_span_kind_name(ZB_SPAN_ISSUE), "issue");
	assert_string_equal(zb_span_kind_name(ZB_SPAN_WAIT), "wait");
	zb_spans_free(sp);
	zb_spans_free(NULL);
}

/* ---- mapping records to tasks --------------------------------------------------------- */

static void hand_graph(zb_graph *g)
{
	static const uint8_t res[8] = { ZB_RES_GPU, ZB_RES_GPU, ZB_RES_GPU,     ZB_RES_D2H,
					ZB_RES_CPU, ZB_RES_H2D, ZB_RES_GPU_OPT, ZB_RES_GPU };
	memset(g, 0, sizeof *g);
	g->ntasks = 8;
	g->tasks = calloc(8, sizeof *g->tasks);
	assert_non_null(g->tasks);
	for (uint32_t i = 0; i < 8; i++) {
		g->tasks[i].id = i;
		g->tasks[i].resource = res[i];
		g->tasks[i].kind = res[i] == ZB_RES_GPU ? ZB_TASK_GEMM : res[i] == ZB_RES_CPU ? ZB_TASK_CPU_ADAM
						      : res[i] == ZB_RES_GPU_OPT ? ZB_TASK_GPU_ADAM : ZB_TASK_COPY;
	}
}

static void test_resolve(void **state)
{
	(void)state;
	zb_graph g;
	hand_graph(&g);
	double start[8], end[8];
	for (int i = 0; i < 8; i++) {
		start[i] = i * 1e-3;
		end[i] = i * 1e-3 + 0.5e-3;
	}
	const int64_t t0 = 1000000000;
	zb_trace *t = zb_trace_create();
	static const int res_of_stream[4] = { ZB_RES_GPU, ZB_RES_D2H, ZB_RES_H2D, ZB_RES_GPU_OPT };
	for (int i = 0; i < 4; i++) {
		zb_tr_stream s = { .stream = 13 + (uint32_t)i, .resource = res_of_stream[i] };
		snprintf(s.name, sizeof s.name, "s%d", i);
		zb_trace_add_stream(t, &s);
	}
	zb_tr_stream again = { .stream = 13, .resource = ZB_RES_GPU };
	zb_trace_add_stream(t, &again); /* replaces, no duplicate */
	assert_int_equal(t->nstreams, 4);
	int64_t ms = 1000000;
	zb_tr_kernel k = { .context = 1, .stream = 13, .task = 77 };
	k.correlation = 10, k.start = t0 + ms / 10, k.end = t0 + 3 * ms / 10; /* A: tag -> 0 */
	zb_trace_add_kernel(t, &k);
	k.correlation = 11, k.start = t0 + 11 * ms / 10, k.end = t0 + 13 * ms / 10; /* B: time -> 1 */
	zb_trace_add_kernel(t, &k);
	k.correlation = 12, k.start = t0 - 5 * ms, k.end = t0 - 4 * ms; /* C: setup */
	zb_trace_add_kernel(t, &k);
	k.correlation = 13, k.stream = 99, k.start = t0 + 2 * ms, k.end = t0 + 2 * ms + 100; /* D: other stream */
	zb_trace_add_kernel(t, &k);
	k.correlation = 14, k.stream = 13, k.start = t0 + 47 * ms / 10, k.end = t0 + 48 * ms / 10; /* E: no task */
	zb_trace_add_kernel(t, &k);
	zb_tr_memcpy c = { .context = 1, .stream = 14, .correlation = 15, .start = t0 + 31 * ms / 10,
			   .end = t0 + 32 * ms / 10, .bytes = 1000, .copy_kind = 2 };
	zb_trace_add_memcpy(t, &c); /* F: tag -> 3 */
	c = (zb_tr_memcpy){ .context = 1, .stream = 15, .correlation = 16, .start = t0 + 51 * ms / 10,
			    .end = t0 + 52 * ms / 10, .bytes = 2000, .copy_kind = 1 };
	zb_trace_add_memcpy(t, &c); /* G: time -> 5 */
	zb_tr_api a = { .correlation = 10, .task = 5 };
	zb_trace_add_api(t, &a);
	a.correlation = 99;
	zb_trace_add_api(t, &a);
	zb_tr_sync sy = { .correlation = 15 };
	zb_trace_add_sync(t, &sy);
	zb_tr_extcorr e[] = {
		{ 10, ZB_TRACE_EXT_KIND, 0 + 1 }, { 15, ZB_TRACE_EXT_KIND, 3 + 1 },
		{ 11, ZB_TRACE_EXT_KIND + 1, 7 + 1 }, /* another kind: ignored */
		{ 13, ZB_TRACE_EXT_KIND, 100 },         /* no such task: ignored */
		{ 14, ZB_TRACE_EXT_KIND, 0 },           /* no id: ignored */
	};
	for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
		zb_trace_add_extcorr(t, &e[i]);
	zb_trace_resolve(t, &g, start, end, t0);
	assert_int_equal(t->kernels[0].task, 0);
	assert_int_equal(t->kernels[1].task, 1);
	assert_int_equal(t->kernels[2].task, ZB_TRACE_NO_TASK);
	assert_int_equal(t->kernels[3].task, ZB_TRACE_NO_TASK);
	assert_int_equal(t->kernels[4].task, ZB_TRACE_NO_TASK);
	assert_int_equal(t->memcpys[0].task, 3);
	assert_int_equal(t->memcpys[1].task, 5);
	assert_int_equal(t->apis[0].task, 0);
	assert_int_equal(t->apis[1].task, ZB_TRACE_NO_TASK);
	assert_int_equal(t->syncs[0].task, 3);
	assert_int_equal(t->mapped_tag, 2);
	assert_int_equal(t->mapped_time, 2);
	assert_int_equal(t->unmapped, 1);
	zb_trace_summary s;
	zb_trace_summarize(t, &s);
	assert_int_equal(s.kernels, 5);
	assert_int_equal(s.memcpys, 2);
	assert_int_equal(s.tasks_seen, 4); /* 0, 1, 3, 5 */
	assert_close(s.d2h_bytes, 1000, 0);
	assert_close(s.h2d_bytes, 2000, 0);
	/* tags only: the untagged records stay unmapped, nothing counted as unmapped */
	zb_trace_resolve(t, &g, NULL, NULL, 0);
	assert_int_equal(t->kernels[1].task, ZB_TRACE_NO_TASK);
	assert_int_equal(t->mapped_tag, 2);
	assert_int_equal(t->mapped_time + t->unmapped, 0);
	zb_trace_free(t);
	free(g.tasks);
}

/* ---- a stored traced run --------------------------------------------------------------- */

static const char *const kernel_names[][2] = {
	{ "_Z11adam_kernelIfLi4EEvPfS0_i", "void adam_kernel<float, 4>(float*, float*, int)" },
	{ "_Z9gelu_fwdPfS_i", "gelu_fwd(float*, float*, int)" },
	{ "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
	  "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas" },
};

typedef struct fake_run {
	zb_config c;
	zb_prediction p;
	double *ms, *me;    /* "measured" intervals: the prediction stretched by 10% */
	zb_trace *t;
	zb_spans *sp;
	int64_t t0;
	double kernel_ns, h2d_bytes, d2h_bytes;
	size_t kernels_tagged, gpu_tasks, cpu_tasks;
	size_t overlapping; /* kernels without an API call, partly overlapping another on their stream */
} fake_run;

static void small_config(zb_config *c)
{
	zb_error err = { 0 };
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	assert_int_equal(zb_preset_model("gpt2", &c->model, &err), ZB_OK);
	c->model.layers = 2;
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_policy_parse("dpu", &c->policy.kind, &err), ZB_OK);
	c->policy.ratio = 0.5;
	c->policy.micro_batch = 2;
	c->policy.seq = 256;
	c->policy.bucket_params = 3000000;
	c->policy.cpu_threads = 4;
	c->steps = 3;
}

/* A traced run as zb_execute and the profiler would leave it, built from the
 * prediction: every GPU task one kernel (or a copy), every other one tagged and the
 * rest found by time; CPU tasks a task span and two worker shares; GPU tasks an issue
 * span; one setup kernel before time zero. */
static void fake_run_make(fake_run *f, int traced)
{
	memset(f, 0, sizeof *f);
	small_config(&f->c);
	OK_E(zb_predict(&f->p, &f->c, &err_));
	assert_true(f->p.simulated);
	const zb_graph *g = &f->p.graph;
	f->ms = malloc(g->ntasks * sizeof *f->ms);
	f->me = malloc(g->ntasks * sizeof *f->me);
	for (size_t i = 0; i < g->ntasks; i++) {
		f->ms[i] = f->p.res.start[i] * 1.1;
		f->me[i] = f->p.res.end[i] * 1.1;
	}
	if (!traced)
		return;
	f->t0 = 5000000000LL;
	zb_trace *t = f->t = zb_trace_create();
	zb_spans *sp = f->sp = zb_spans_create();
	zb_span_buf *disp[ZB_RES_COUNT], *wk[2];
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		char name[32];
		snprintf(name, sizeof name, "zb-disp-%s", zb_resource_name((zb_resource)r));
		disp[r] = zb_spans_virtual(sp, name, 100 + r);
		if (r != ZB_RES_CPU) {
			zb_tr_stream s = { .stream = 13 + (uint32_t)r, .resource = r };
			snprintf(s.name, sizeof s.name, "%s", zb_resource_name((zb_resource)r));
			zb_trace_add_stream(t, &s);
		}
	}
	wk[0] = zb_spans_virtual(sp, "zb-pool-0 (cpu 0)", 0);
	wk[1] = zb_spans_virtual(sp, "zb-pool-1 (cpu 1)", 1);
	uint32_t names[3][3];
	for (int i = 0; i < 3; i++) {
		char sn[128];
		zb_trace_short_name(kernel_names[i][1], sn, sizeof sn);
		names[i][0] = zb_trace_intern(t, kernel_names[i][0]);
		names[i][1] = zb_trace_intern(t, kernel_names[i][1]);
		names[i][2] = zb_trace_intern(t, sn);
	}
	uint32_t launch = zb_trace_intern(t, "cudaLaunchKernel_v7000");
	uint32_t copy = zb_trace_intern(t, "cudaMemcpyAsync_v3020");
	zb_tr_kernel setup = { .start = f->t0 - 2000000, .end = f->t0 - 1000000, .context = 1, .stream = 13,
			       .correlation = 1, .mangled = names[0][0], .demangled = names[0][1],
			       .short_name = names[0][2] };
	zb_trace_add_kernel(t, &setup);
	f->kernel_ns += 1000000;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *tk = &g->tasks[i];
		int64_t a = f->t0 + (int64_t)(f->ms[i] * 1e9), b = f->t0 + (int64_t)(f->me[i] * 1e9);
		int64_t lo = a + (b - a) / 4, hi = b - (b - a) / 4;
		if (hi <= lo)
			hi = lo + 1;
		if (tk->resource == ZB_RES_CPU) {
			f->cpu_tasks++;
			zb_span_add(disp[ZB_RES_CPU], ZB_SPAN_TASK, (int32_t)i, -1, a, b);
			zb_span_add(wk[0], ZB_SPAN_WORKER, (int32_t)i, -1, a + 10, b - 10);
			zb_span_add(wk[1], ZB_SPAN_WORKER, (int32_t)i, -1, a + 20, b - 20);
			if (i > 0)
				zb_span_add(disp[ZB_RES_CPU], ZB_SPAN_WAIT, (int32_t)i, (int32_t)i - 1, a - 5000, a - 100);
			continue;
		}
		f->gpu_tasks++;
		uint32_t corr = (uint32_t)(10 + 2 * i);
		zb_span_add(disp[tk->resource], ZB_SPAN_ISSUE, (int32_t)i, -1, a - 3000, a - 1000);
		zb_tr_api api = { .start = a - 2500, .end = a - 1500, .process = t->pid, .thread = 4242,
				  .correlation = corr, .cbid = tk->kind == ZB_TASK_COPY ? 41 : 211,
				  .name = tk->kind == ZB_TASK_COPY ? copy : launch };
		zb_trace_add_api(t, &api);
		if (i % 2 == 0) {
			zb_tr_extcorr e = { corr, ZB_TRACE_EXT_KIND, i + 1 };
			zb_trace_add_extcorr(t, &e);
		}
		if (tk->kind == ZB_TASK_COPY) {
			int h2d = tk->resource == ZB_RES_H2D;
			zb_tr_memcpy c = { .start = lo, .end = hi, .bytes = (uint64_t)tk->bytes, .context = 1,
					   .stream = 13 + tk->resource, .correlation = corr, .copy_kind = h2d ? 1 : 2,
					   .src_kind = h2d ? 2 : 3, .dst_kind = h2d ? 3 : 2 };
			zb_trace_add_memcpy(t, &c);
			*(h2d ? &f->h2d_bytes : &f->d2h_bytes) += (double)(uint64_t)tk->bytes;
		} else {
			const uint32_t *n = names[i % 3];
			zb_tr_kernel k = { .start = lo, .end = hi, .context = 1, .stream = 13 + tk->resource,
					   .correlation = corr, .grid = { 132, 1, 1 }, .block = { 256, 1, 1 },
					   .registers = 32, .grid_id = (int64_t)i, .mangled = n[0], .demangled = n[1],
					   .short_name = n[2] };
			zb_trace_add_kernel(t, &k);
			f->kernel_ns += (double)(hi - lo);
		}
	}
	/* two kernels of one task that partly overlap (programmatic dependent launch),
	 * found by time: the export puts the second on an overlap track */
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *tk = &g->tasks[i];
		int64_t a = f->t0 + (int64_t)(f->ms[i] * 1e9), b = f->t0 + (int64_t)(f->me[i] * 1e9);
		if (tk->resource != ZB_RES_GPU || tk->kind == ZB_TASK_COPY || b - a < 8000)
			continue;
		/* beside the task's own kernel [lo, hi) (the loop above): one from before lo to
		 * its middle, one from lo to its middle, so that the second nests in it whatever
		 * the rounding of the task's length */
		int64_t lo = a + (b - a) / 4, hi = b - (b - a) / 4, d = (hi - lo) / 4;
		zb_tr_kernel k = { .start = lo - d, .end = lo + d, .context = 1, .stream = 13 + ZB_RES_GPU,
				   .correlation = 999999, .mangled = names[1][0], .demangled = names[1][1],
				   .short_name = names[1][2] };
		zb_trace_add_kernel(t, &k);
		k.start = lo;
		k.end = lo + 2 * d;
		zb_trace_add_kernel(t, &k);
		f->kernel_ns += 4 * d;
		f->overlapping = 2;
		break;
	}
	assert_int_equal(f->overlapping, 2);
	t->launches = t->nkernels;
	t->clock_method = "timestamp-callback";
	zb_trace_resolve(t, g, f->ms, f->me, f->t0);
}

static void fake_run_free(fake_run *f)
{
	zb_trace_free(f->t);
	zb_spans_free(f->sp);
	free(f->ms);
	free(f->me);
	zb_prediction_free(&f->p);
}

/* Store f as `zbench run --trace` does; returns the configuration id. */
static int64_t fake_run_store(fake_run *f, const char *path)
{
	zb_store *s = NULL;
	OK_E(zb_store_open(&s, path, 1000, &err_));
	int64_t run_id, cid;
	zb_run_info info = { .kind = "run", .command = "zbench run --trace", .version = "test", .device = "fake" };
	const zb_graph *g = &f->p.graph;
	OK_E(zb_store_begin(s, &err_));
	OK_E(zb_store_add_run(s, &info, &run_id, &err_));
	OK_E(zb_store_add_config(s, run_id, &f->c, "{}", &cid, &err_));
	OK_E(zb_store_add_prediction(s, cid, g, &f->p.res, &f->p.mem, &err_));
	OK_E(zb_store_add_tasks(s, cid, g, &err_));
	OK_E(zb_store_add_events(s, cid, "predicted", g, f->p.res.start, f->p.res.end, &err_));
	OK_E(zb_store_add_events(s, cid, "measured", g, f->ms, f->me, &err_));
	if (f->t)
		OK_E(zb_store_add_trace(s, cid, g, f->t, f->sp, f->t0, &err_));
	OK_E(zb_store_finish_run(s, run_id, "ok", &err_));
	OK_E(zb_store_commit(s, &err_));
	zb_store_close(s);
	return cid;
}

static char *path_in_tmp(const char *name)
{
	char *p = malloc(strlen(tmpdir) + strlen(name) + 2);
	assert_non_null(p);
	sprintf(p, "%s/%s", tmpdir, name);
	return p;
}

static int has_column(sqlite3 *db, const char *table, const char *column)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'", table, column);
	return (int)sql_int(db, sql);
}

static void test_store_schema_and_sql(void **state)
{
	(void)state;
	char *path = path_in_tmp("trace.db");
	fake_run f;
	fake_run_make(&f, 1);
	const zb_graph *g = &f.p.graph;
	int64_t cid = fake_run_store(&f, path);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char sql[1024];

	/* the Nsight Systems export's names */
	static const char *const cols[][2] = {
		{ "StringIds", "id" }, { "StringIds", "value" }, { "ThreadNames", "nameId" }, { "ThreadNames", "globalTid" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "start" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "end" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "deviceId" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "contextId" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "streamId" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "correlationId" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "demangledName" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "shortName" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "mangledName" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "gridX" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "blockZ" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "registersPerThread" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "staticSharedMemory" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "dynamicSharedMemory" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "zbConfigId" },
		{ "CUPTI_ACTIVITY_KIND_KERNEL", "zbTaskId" }, { "CUPTI_ACTIVITY_KIND_MEMCPY", "bytes" },
		{ "CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind" }, { "CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind" },
		{ "CUPTI_ACTIVITY_KIND_MEMCPY", "dstKind" }, { "CUPTI_ACTIVITY_KIND_MEMSET", "value" },
		{ "CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass" }, { "CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid" },
		{ "CUPTI_ACTIVITY_KIND_RUNTIME", "nameId" }, { "CUPTI_ACTIVITY_KIND_RUNTIME", "returnValue" },
		{ "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "syncType" }, { "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "eventId" },
		{ "CUPTI_ACTIVITY_KIND_OVERHEAD", "overheadType" }, { "NVTX_EVENTS", "eventType" },
		{ "NVTX_EVENTS", "text" }, { "NVTX_EVENTS", "globalTid" }, { "NVTX_EVENTS", "eventId" },
		{ "TARGET_INFO_GPU", "smCount" }, { "TARGET_INFO_GPU", "computeMajor" },
		{ "ENUM_CUDA_MEMCPY_OPER", "label" }, { "META_DATA_EXPORT", "name" }, { "META_DATA_EXPORT", "value" },
	};
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
		if (!has_column(db, cols[i][0], cols[i][1])) {
			print_error("no column %s.%s\n", cols[i][0], cols[i][1]);
			fail();
		}
	assert_int_equal(sql_int(db, "SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"), 1);

	/* every record stored, in ns from the run's time zero */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = %lld",
		 (long long)cid);
	assert_int_equal(sql_int(db, sql), f.t->nkernels);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"), f.t->nmemcpys);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), f.t->napis);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS"), zb_spans_total(f.sp));
	assert_int_equal(sql_int(db, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), -2000000); /* setup */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbTaskId IS NULL"), 1);
	const zb_tr_kernel *k1 = &f.t->kernels[1];
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start = %lld AND end - start = %lld"
		 " AND zbTaskId = %d",
		 (long long)(k1->start - f.t0), (long long)(k1->end - k1->start), k1->task);
	assert_int_equal(sql_int(db, sql), 1);
	/* ... and in the unit of the events rows: each kernel inside its task's measured event */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN events m"
				     " ON m.config_id = k.zbConfigId AND m.task_id = k.zbTaskId AND m.source = 'measured'"
				     " WHERE k.start < m.start_ns OR k.end > m.end_ns"),
			 0);

	/* nsys-style SQL, unchanged: kernel time by name through StringIds */
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT s.value AS name, sum(k.end - k.start) AS total_ns, count(*) AS n"
					    " FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.shortName"
					    " GROUP BY s.value ORDER BY total_ns DESC",
					    -1, &q, NULL),
			 SQLITE_OK);
	double total = 0;
	int names = 0, saw_adam = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		names++;
		total += sqlite3_column_double(q, 1);
		saw_adam |= !strcmp((const char *)sqlite3_column_text(q, 0), "adam_kernel");
	}
	sqlite3_finalize(q);
	assert_int_equal(names, 3);
	assert_true(saw_adam);
	assert_close(total, f.kernel_ns, 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d"
				     " ON d.id = k.demangledName WHERE d.value LIKE 'void adam_kernel<float, 4>%'")
				 > 0,
			 1);
	/* copies by direction, through the enum table */
	assert_close(sql_int(db, "SELECT sum(c.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY c JOIN ENUM_CUDA_MEMCPY_OPER e"
				 " ON e.id = c.copyKind WHERE e.label = 'Host-to-Device'"),
		     f.h2d_bytes, 0);
	assert_close(sql_int(db, "SELECT sum(c.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY c JOIN ENUM_CUDA_MEMCPY_OPER e"
				 " ON e.id = c.copyKind WHERE e.name = 'CUDA_MEMCPY_KIND_DTOH'"),
		     f.d2h_bytes, 0);
	/* the schedule's PCIe volume: copy tasks' bytes = traced copy bytes */
	double sched = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		if (g->tasks[i].kind == ZB_TASK_COPY)
			sched += (double)(uint64_t)g->tasks[i].bytes;
	assert_close(f.h2d_bytes + f.d2h_bytes, sched, 0);
	/* API calls by name and class */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id ="
				     " r.nameId JOIN ENUM_NSYS_EVENT_CLASS c ON c.id = r.eventClass"
				     " WHERE s.value = 'cudaLaunchKernel_v7000' AND c.label = 'CUDA runtime'"),
			 (int64_t)(f.t->nkernels - 1 - f.overlapping));

	/* predicted JOIN trace on the task: one query */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN events p ON p.config_id = k.zbConfigId"
		 " AND p.task_id = k.zbTaskId AND p.source = 'predicted' WHERE k.zbConfigId = %lld",
		 (long long)cid);
	assert_int_equal(sql_int(db, sql), f.t->nkernels - 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM trace_tasks"), g->ntasks);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM trace_tasks WHERE pred_start_ns IS NULL OR kind IS NULL"),
			 0);
	/* every task of the schedule exactly once: its CPU task span or its issue span */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM (SELECT zbTaskId, count(*) AS n FROM NVTX_EVENTS"
				     " WHERE zbKind IN ('task', 'issue') GROUP BY zbTaskId HAVING n = 1)"),
			 g->ntasks);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE zbKind = 'worker'"), 2 * f.cpu_tasks);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE zbKind = 'wait'"
				     " AND int64Value = zbTaskId - 1 AND text LIKE 'wait for % #%'"),
			 (int64_t)f.cpu_tasks - (g->tasks[0].resource == ZB_RES_CPU));
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType <> 59"), 0);
	/* thread names and the serialized ids */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM ThreadNames"), ZB_RES_COUNT + 2);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS n JOIN ThreadNames t ON t.globalTid ="
				     " n.globalTid JOIN StringIds s ON s.id = t.nameId WHERE s.value = 'zb-disp-cpu'"),
			 2 * (int64_t)f.cpu_tasks - (g->tasks[0].resource == ZB_RES_CPU));
	snprintf(sql, sizeof sql, "SELECT count(DISTINCT globalTid >> 24 & 16777215) FROM NVTX_EVENTS WHERE"
				  " (globalTid >> 24 & 16777215) = %d",
		 (int)getpid());
	assert_int_equal(sql_int(db, sql), 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM TARGET_INFO_NVTX_CUDA_STREAM WHERE zbResource = 'pcie_h2d'"),
			 1);
	assert_int_equal(sql_int(db, "SELECT value FROM META_DATA_EXPORT WHERE name = 'ZB_MAPPED_BY_TIME'"),
			 f.t->mapped_time);
	assert_true(f.t->mapped_time > 0 && f.t->mapped_tag > 0 && f.t->unmapped == 0);
	int64_t strings = sql_int(db, "SELECT count(*) FROM StringIds");
	sqlite3_close(db);

	/* a second run in the same file: its own rows, the strings shared */
	int64_t cid2 = fake_run_store(&f, path);
	assert_int_equal(cid2, cid + 1);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM StringIds"), strings);
	assert_int_equal(sql_int(db, "SELECT count(*) - count(DISTINCT value) FROM StringIds"), 0);
	assert_int_equal(sql_int(db, "SELECT count(DISTINCT zbConfigId) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 2);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM trace_tasks"), 2 * g->ntasks);
	/* deleting a run deletes its trace (configs cascade, then the trigger) */
	assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), f.t->nkernels);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = 1"), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE zbConfigId = 1"), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM META_DATA_EXPORT WHERE zbConfigId = 1"), 0);
	sqlite3_close(db);
	fake_run_free(&f);
	free(path);
}

static void test_store_refusals(void **state)
{
	(void)state;
	fake_run f;
	fake_run_make(&f, 1);
	/* a database at schema 2 has no trace tables: refused, nothing written */
	char *path = path_in_tmp("v2.db");
	zb_store *s = NULL;
	OK_E(zb_store_open_version(&s, path, 1000, 2, &err_));
	zb_error err = { 0 };
	assert_int_equal(zb_store_add_trace(s, 1, &f.p.graph, f.t, f.sp, f.t0, &err), ZB_E_STORE);
	assert_non_null(strstr(err.msg, "schema version 2; a trace needs version 3"));
	zb_store_close(s);
	free(path);
	/* rolled back with the caller's transaction: no rows */
	path = path_in_tmp("rollback.db");
	OK_E(zb_store_open(&s, path, 1000, &err_));
	OK_E(zb_store_begin(s, &err_));
	OK_E(zb_store_add_trace(s, 1, &f.p.graph, f.t, f.sp, f.t0, &err_));
	zb_store_rollback(s);
	int64_t n = -1;
	OK_E(zb_store_count(s, "CUPTI_ACTIVITY_KIND_KERNEL", &n, &err_));
	assert_int_equal(n, 0);
	OK_E(zb_store_count(s, "NVTX_EVENTS", &n, &err_));
	assert_int_equal(n, 0);
	/* outside a transaction a call is its own transaction */
	OK_E(zb_store_add_trace(s, 1, NULL, f.t, NULL, f.t0, &err_));
	OK_E(zb_store_count(s, "CUPTI_ACTIVITY_KIND_KERNEL", &n, &err_));
	assert_int_equal(n, f.t->nkernels);
	zb_store_close(s);
	free(path);
	fake_run_free(&f);
}

/* ---- zbench export ------------------------------------------------------------------------ */

typedef zb_test_result result;

static result run(const char *args) { return zb_test_run(zbench, tmpdir, args); }

static void result_free(result *r) { zb_test_result_free(r); }

static int exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

typedef struct xev {
	int64_t pid, tid;
	double ts, end;
} xev;

static int xev_cmp(const void *a, const void *b)
{
	const xev *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* The complete events of each thread nest (what the Perfetto importer keeps);
 * returns how many do not. */
static int misnested(xev *v, size_t n)
{
	qsort(v, n, sizeof *v, xev_cmp);
	int bad = 0;
	double stack[256];
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid)
			depth = 0;
		while (depth > 0 && stack[depth - 1] <= v[i].ts + 1e-9)
			depth--;
		if (depth > 0 && v[i].end > stack[depth - 1] + 1e-9)
			bad++;
		else if (depth < 256)
			stack[depth++] = v[i].end;
	}
	return bad;
}

static void test_export_perfetto(void **state)
{
	(void)state;
	char *db = path_in_tmp("export.db"), *json = path_in_tmp("trace.json"), args[1024];
	fake_run f;
	fake_run_make(&f, 1);
	int64_t cid = fake_run_store(&f, db);
	snprintf(args, sizeof args, "export %lld --format perfetto -o %s --db %s", (long long)cid, json, db);
	result r = run(args);
	if (r.rc != 0)
		print_error("%s", r.err);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "wrote "));
	assert_string_equal(r.err, "");
	result_free(&r);
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp", json);
	assert_false(exists(tmp));

	json_error_t jerr;
	json_t *root = json_load_file(json, 0, &jerr);
	if (!root)
		print_error("%s does not parse: %s at line %d\n", json, jerr.text, jerr.line);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
	json_t *evs = json_object_get(root, "traceEvents");
	assert_true(json_is_array(evs));
	size_t i, pred = 0, kern = 0, copies = 0, spans = 0, api = 0, meta_proc = 0, tracks_stream = 0, lanes = 0;
	xev *xs = calloc(json_array_size(evs), sizeof *xs);
	size_t nx = 0;
	double zero = json_real_value(json_object_get(json_object_get(root, "otherData"), "time_zero_us"));
	assert_close(zero, 2000.0, 0); /* the setup kernel at -2 ms lands at 0 */
	json_t *ev;
	json_array_foreach(evs, i, ev)
	{
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		assert_non_null(ph);
		int pid = (int)json_integer_value(json_object_get(ev, "pid"));
		if (!strcmp(ph, "M")) {
			const char *name = json_string_value(json_object_get(ev, "name"));
			const char *val = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
			if (!strcmp(name, "process_name"))
				meta_proc++;
			if (!strcmp(name, "thread_name") && pid == 2 && val && strstr(val, "stream 13: gpu (gpu)"))
				tracks_stream++;
			if (!strcmp(name, "thread_name") && val && strstr(val, "stream 13: gpu (gpu) (overlap 1)"))
				lanes++;
			continue;
		}
		assert_string_equal(ph, "X");
		double ts = json_real_value(json_object_get(ev, "ts")), dur = json_real_value(json_object_get(ev, "dur"));
		assert_true(ts >= 0);
		assert_true(dur >= 0);
		xs[nx++] = (xev){ pid, json_integer_value(json_object_get(ev, "tid")), ts, ts + dur };
		const char *cat = json_string_value(json_object_get(ev, "cat"));
		assert_non_null(cat);
		if (pid == 1)
			pred++;
		else if (!strcmp(cat, "kernel"))
			kern++;
		else if (!strcmp(cat, "memcpy"))
			copies++;
		else if (!strcmp(cat, "cuda_runtime"))
			api++;
		else
			spans++;
	}
	assert_int_equal(meta_proc, 2);
	assert_int_equal(tracks_stream, 2); /* the stream, and its overlap lane */
	assert_int_equal(lanes, 1);
	assert_int_equal(misnested(xs, nx), 0);
	free(xs);
	assert_int_equal(pred, f.p.graph.ntasks);
	assert_int_equal(kern, f.t->nkernels);
	assert_int_equal(copies, f.t->nmemcpys);
	assert_int_equal(api, f.t->napis);
	assert_int_equal(spans, zb_spans_total(f.sp));
	/* a predicted GEMM and its measured kernel sit on comparable clocks */
	json_decref(root);

	/* latest, csv */
	char *csv = path_in_tmp("trace.csv");
	snprintf(args, sizeof args, "export latest --format csv -o %s --db %s", csv, db);
	r = run(args);
	assert_int_equal(r.rc, 0);
	result_free(&r);
	char *text = zb_test_slurp(csv, NULL);
	const char *header = "source,track,task_id,kind,name,start_ns,end_ns,duration_ns,bytes\n";
	assert_true(!strncmp(text, header, strlen(header)));
	size_t rows = 2 * f.p.graph.ntasks + f.t->nkernels + f.t->nmemcpys + f.t->napis + zb_spans_total(f.sp);
	assert_int_equal(lines(text), (int)rows + 1);
	assert_non_null(strstr(text, "\nkernel,stream 13,"));
	free(text);
	fake_run_free(&f);

	/* an untraced run: measured tracks per resource from the executor's events */
	fake_run_make(&f, 0);
	int64_t cid2 = fake_run_store(&f, db);
	snprintf(args, sizeof args, "export %lld -o %s --db %s", (long long)cid2, json, db);
	r = run(args);
	assert_int_equal(r.rc, 0);
	result_free(&r);
	root = json_load_file(json, 0, &jerr);
	assert_non_null(root);
	size_t measured = 0;
	json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
	{
		if (!strcmp(json_string_value(json_object_get(ev, "ph")), "X") &&
		    json_integer_value(json_object_get(ev, "pid")) == 2)
			measured++;
	}
	assert_int_equal(measured, f.p.graph.ntasks);
	json_decref(root);
	fake_run_free(&f);
	free(csv);
	free(db);
	free(json);
}

static void expect_refusal(const char *args, const char *want, const char *must_not_exist)
{
	result r = run(args);
	if (r.rc != 2 || !strstr(r.err, want) || lines(r.err) != 1 || strncmp(r.err, "zbench: ", 8)) {
		print_error("zbench %s: exit %d, stderr '%s' (want exit 2 and one line with '%s')\n", args, r.rc, r.err,
			    want);
		fail();
	}
	assert_string_equal(r.out, "");
	if (must_not_exist) {
		char tmp[600];
		snprintf(tmp, sizeof tmp, "%s.tmp", must_not_exist);
		assert_false(exists(must_not_exist));
		assert_false(exists(tmp));
	}
	result_free(&r);
}

static void test_export_refusals(void **state)
{
	(void)state;
	char *db = path_in_tmp("refuse.db"), *out = path_in_tmp("never.json"), *nodb = path_in_tmp("missing.db");
	char args[1024];
	fake_run f;
	fake_run_make(&f, 1);
	fake_run_store(&f, db);
	fake_run_free(&f);
	snprintf(args, sizeof args, "export 99 -o %s --db %s", out, db);
	expect_refusal(args, "unknown configuration 99", out);
	snprintf(args, sizeof args, "export abc -o %s --db %s", out, db);
	expect_refusal(args, "invalid configuration id 'abc'", out);
	snprintf(args, sizeof args, "export 1 --format xml -o %s --db %s", out, db);
	expect_refusal(args, "unknown export format 'xml' (known: perfetto, csv)", out);
	snprintf(args, sizeof args, "export 1 --db %s", db);
	expect_refusal(args, "needs an output file", NULL);
	snprintf(args, sizeof args, "export 1 -o %s/no/such/dir/x.json --db %s", tmpdir, db);
	expect_refusal(args, "cannot write", NULL);
	snprintf(args, sizeof args, "export 1 -o %s --db %s", out, nodb);
	expect_refusal(args, "no database", out);
	assert_false(exists(nodb)); /* not created by looking */
	snprintf(args, sizeof args, "export -o %s --db %s", out, db);
	expect_refusal(args, "needs a configuration id", out);
	/* a configuration without any timeline */
	zb_store *s = NULL;
	OK_E(zb_store_open(&s, db, 1000, &err_));
	zb_run_info info = { .kind = "predict", .command = "zbench predict" };
	int64_t run_id, cid;
	zb_config c;
	small_config(&c);
	OK_E(zb_store_add_run(s, &info, &run_id, &err_));
	OK_E(zb_store_add_config(s, run_id, &c, "{}", &cid, &err_));
	zb_store_close(s);
	snprintf(args, sizeof args, "export %lld -o %s --db %s", (long long)cid, out, db);
	expect_refusal(args, "has no timeline to export", out);
	free(db);
	free(out);
	free(nodb);
}

/* ---- insert rate ----------------------------------------------------------------------------- */

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: the rate on a loaded machine, where wall time also counts
 * other processes */
static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_insert_rate(void **state)
{
	(void)state;
	const char *env = getenv("ZB_TRACE_BULK_TASKS");
	size_t ntasks = env && *env ? (size_t)atol(env) : 250000;
	zb_trace *t = zb_trace_create();
	zb_trace_fill_synthetic(t, ntasks, 0);
	zb_spans *sp = zb_spans_create();
	zb_span_buf *b = zb_spans_virtual(sp, "zb-disp-cpu", 0);
	for (size_t i = 0; i < ntasks / 4; i++)
		zb_span_add(b, ZB_SPAN_TASK, (int32_t)i, -1, (int64_t)i * 40000, (int64_t)i * 40000 + 30000);
	double rows = (double)(t->nkernels + t->nmemcpys + t->nmemsets + t->napis + t->nsyncs + zb_spans_total(sp));
	char *path = path_in_tmp("rate.db");
	zb_store *s = NULL;
	OK_E(zb_store_open(&s, path, 1000, &err_));
	double t0 = wall(), c0 = cpu();
	OK_E(zb_store_begin(s, &err_));
	OK_E(zb_store_add_trace(s, 1, NULL, t, sp, 0, &err_));
	double t1 = wall();
	OK_E(zb_store_commit(s, &err_));
	double t2 = wall(), c2 = cpu();
	int64_t n = 0, total = 0;
	static const char *const tables[] = { "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
					      "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
					      "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS" };
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		OK_E(zb_store_count(s, tables[i], &n, &err_));
		total += n;
	}
	assert_int_equal(total, (int64_t)rows);
	print_message("# trace insert: %.0f rows (%zu kernels, %zu copies, %zu memsets, %zu API calls, %zu syncs, %zu "
		      "spans) in %.3f s + commit %.3f s: %.2f M rows/s (%.2f M rows per CPU second)\n",
		      rows, t->nkernels, t->nmemcpys, t->nmemsets, t->napis, t->nsyncs, zb_spans_total(sp), t1 - t0,
		      t2 - t1, rows / (t2 - t0) / 1e6, rows / (c2 - c0) / 1e6);
	zb_store_close(s);
	zb_spans_free(sp);
	zb_trace_free(t);
	free(path);
}

/* ---- CUPTI ------------------------------------------------------------------------------------- */

static void test_start_where_cupti_cannot(void **state)
{
	(void)state;
	zb_trace *t = zb_trace_create();
	zb_error err = { 0 };
	zb_status st = zb_trace_start(t, &err);
	if (st == ZB_OK) { /* a machine where CUPTI works: the GPU tests cover it */
		assert_true(zb_trace_active());
		assert_int_equal(zb_trace_stop(t, &err), ZB_OK);
		assert_false(zb_trace_active());
		zb_trace_free(t);
		skip();
	}
	print_message("# zb_trace_start here: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "CUPTI cannot trace here"));
	assert_null(strchr(err.msg, '\n'));
	assert_false(zb_trace_active());
	zb_trace_push_task(3); /* no session: no-ops */
	zb_trace_pop_task();
	/* nothing stayed half-enabled: a second attempt fails the same way */
	zb_error err2 = { 0 };
	assert_int_equal(zb_trace_start(t, &err2), st);
	assert_null(strstr(err2.msg, "already active"));
	assert_int_equal(zb_trace_stop(t, &err2), ZB_OK);
	zb_trace_free(t);
}

#ifdef ZB_HAVE_CUDA
static void test_cupti_records(void **state)
{
	(void)state;
	zb_trace *t = zb_trace_create();
	t->clock_offset_ns = 100; /* the offset method: subtracted from every timestamp */

	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 10100;
	k.end = 15100;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 13;
	k.correlationId = 77;
	k.gridX = 132, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.registersPerThread = 40;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 4096;
	k.gridId = 9;
	k.name = "_Z11adam_kernelIfLi4EEvPfS0_i";
	zb_trace_add_cupti_record(t, &k);
	k.name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas";
	k.correlationId = 78;
	zb_trace_add_cupti_record(t, &k);
	k.start = k.end = 0; /* no timestamps: not stored */
	zb_trace_add_cupti_record(t, &k);
	assert_int_equal(t->nkernels, 2);
	assert_int_equal(t->untimed_records, 1);
	const zb_tr_kernel *r = &t->kernels[0];
	assert_int_equal(r->start, 10000);
	assert_int_equal(r->end, 15000);
	assert_int_equal(r->stream, 13);
	assert_int_equal(r->correlation, 77);
	assert_int_equal(r->grid[1], 2);
	assert_int_equal(r->block[0], 256);
	assert_int_equal(r->registers, 40);
	assert_int_equal(r->dynamic_smem, 4096);
	assert_int_equal(r->grid_id, 9);
	assert_string_equal(zb_trace_string(t, r->mangled), "_Z11adam_kernelIfLi4EEvPfS0_i");
	assert_string_equal(zb_trace_string(t, r->demangled), "void adam_kernel<float, 4>(float*, float*, int)");
	assert_string_equal(zb_trace_string(t, r->short_name), "adam_kernel");
	r = &t->kernels[1]; /* extern "C": the name as it is */
	assert_string_equal(zb_trace_string(t, r->demangled), zb_trace_string(t, r->mangled));
	assert_string_equal(zb_trace_string(t, r->short_name), zb_trace_string(t, r->mangled));

	CUpti_ActivityMemcpy6 c;
	memset(&c, 0, sizeof c);
	c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	c.bytes = 1 << 20;
	c.start = 20100;
	c.end = 40100;
	c.contextId = 1;
	c.streamId = 15;
	c.correlationId = 79;
	zb_trace_add_cupti_record(t, &c);
	assert_int_equal(t->nmemcpys, 1);
	assert_int_equal(t->memcpys[0].bytes, 1 << 20);
	assert_int_equal(t->memcpys[0].copy_kind, 1);
	assert_int_equal(t->memcpys[0].src_kind, 2);
	assert_int_equal(t->memcpys[0].dst_kind, 3);
	assert_int_equal(t->memcpys[0].start, 20000);

	CUpti_ActivityMemset4 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = 4096;
	m.value = 0;
	m.start = 500;
	m.end = 700;
	m.streamId = 13;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	zb_trace_add_cupti_record(t, &m);
	assert_int_equal(t->nmemsets, 1);
	assert_int_equal(t->memsets[0].mem_kind, 3);

	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof a);
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = 9100;
	a.end = 9600;
	a.processId = 1234;
	a.threadId = 5678;
	a.correlationId = 77;
	zb_trace_add_cupti_record(t, &a);
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	a.correlationId = 78;
	zb_trace_add_cupti_record(t, &a);
	assert_int_equal(t->napis, 2);
	assert_int_equal(t->apis[0].cls, ZB_TRACE_CLASS_RUNTIME);
	assert_int_equal(t->apis[1].cls, ZB_TRACE_CLASS_DRIVER);
	const char *rn = zb_trace_string(t, t->apis[0].name), *dn = zb_trace_string(t, t->apis[1].name);
	print_message("# API names from CUPTI here: %s, %s\n", rn, dn);
	assert_true(!strcmp(rn, "cudaLaunchKernel_v7000") || !strcmp(rn, "runtime_cbid_211"));
	assert_true(!strcmp(dn, "cuLaunchKernel") || !strcmp(dn, "driver_cbid_307"));

	CUpti_ActivitySynchronization2 sy;
	memset(&sy, 0, sizeof sy);
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	sy.start = 41000;
	sy.end = 42000;
	sy.contextId = 1;
	sy.cudaEventId = 3;
	sy.correlationId = 80;
	zb_trace_add_cupti_record(t, &sy);
	assert_int_equal(t->nsyncs, 1);
	assert_int_equal(t->syncs[0].type, 1);
	assert_int_equal(t->syncs[0].event, 3);

	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof o);
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = 1234;
	o.objectId.pt.threadId = 99;
	o.start = 100;
	o.end = 300;
	zb_trace_add_cupti_record(t, &o);
	assert_int_equal(t->noverheads, 1);
	assert_int_equal(t->overheads[0].thread, 99);

	CUpti_ActivityExternalCorrelation e;
	memset(&e, 0, sizeof e);
	e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	e.externalId = 5 + 1;
	e.correlationId = 77;
	zb_trace_add_cupti_record(t, &e);
	e.correlationId = 79;
	e.externalId = 6 + 1;
	zb_trace_add_cupti_record(t, &e);
	assert_int_equal(t->nextcorrs, 2);
	assert_int_equal(ZB_TRACE_EXT_KIND, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);

	CUpti_Activity other = { .kind = CUPTI_ACTIVITY_KIND_MEMORY };
	zb_trace_add_cupti_record(t, &other);
	assert_int_equal(t->unknown_records, 1);

	/* mapped and stored like a real run's */
	zb_trace_resolve(t, NULL, NULL, NULL, 0);
	assert_int_equal(t->kernels[0].task, 5);
	assert_int_equal(t->memcpys[0].task, 6);
	assert_int_equal(t->apis[0].task, 5);
	assert_int_equal(t->kernels[1].task, ZB_TRACE_NO_TASK);
	char *path = path_in_tmp("cupti.db");
	zb_store *s = NULL;
	OK_E(zb_store_open(&s, path, 1000, &err_));
	OK_E(zb_store_add_trace(s, 1, NULL, t, NULL, 0, &err_));
	sqlite3 *db = zb_store_db(s);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id ="
				     " k.shortName WHERE s.value = 'adam_kernel' AND k.zbTaskId = 5 AND k.end - k.start"
				     " = 5000 AND k.gridY = 2 AND k.dynamicSharedMemory = 4096"),
			 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY c JOIN ENUM_CUDA_MEM_KIND s ON"
				     " s.id = c.srcKind WHERE s.label = 'Pinned' AND c.zbTaskId = 6"),
			 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN"
				     " ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType WHERE e.label = 'Event sync'"),
			 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_OVERHEAD o JOIN ENUM_CUPTI_OVERHEAD_TYPE"
				     " e ON e.id = o.overheadType WHERE e.label = 'Buffer flush'"
				     " AND o.globalTid = (1234 << 24) + 99"),
			 1);
	zb_store_close(s);
	free(path);
	zb_trace_free(t);
}
#endif

int main(void)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_names),
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_spans_threads),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_store_schema_and_sql),
		cmocka_unit_test(test_store_refusals),
		cmocka_unit_test(test_export_perfetto),
		cmocka_unit_test(test_export_refusals),
		cmocka_unit_test(test_insert_rate),
		cmocka_unit_test(test_start_where_cupti_cannot),
#ifdef ZB_HAVE_CUDA
		cmocka_unit_test(test_cupti_records),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
