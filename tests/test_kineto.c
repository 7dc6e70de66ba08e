/*
 * test_kineto.c - PyTorch profiler (Kineto) traces through `zbench import` and
 * `analyze` (profiler/kineto.h, results/import.h):
 *   - a real trace: one profiled step of a Hugging Face + DeepSpeed job on the H200
 *     machine (Llama-3.2-1B shape, ZeRO-3 parameter and optimizer offload, fp16), trimmed
 *     by scripts/kineto-trim.py to every GPU record and annotation plus the first 50 ms
 *     of CPU operators and CUDA calls (tests/data/kineto-llama1b-z3-step.json.gz): exact
 *     counts, and the step analyze finds;
 *   - the whole trace when it is there ($ZB_KINETO_FULL, else where the development
 *     machine keeps it): analyze's step time against the job's own timer (1988.818 ms,
 *     torch.cuda.synchronize around the step) within 2 %;
 *   - hand-written traces: ProfilerStep#N ranges (the optimizer's own step range inside
 *     them cuts nothing), one ProfilerStep, bad timestamps, a bare event list, gzip;
 *   - the formats told apart, an .nsys-rep answered with its nsys export line, anything
 *     else refused with the accepted formats, each in one line.
 */
#include "tests/harness.h"

#include <zlib.h>

#include "profiler/analyze.h"
#include "profiler/kineto.h"
#include "results/foreign.h"
#include "results/import.h"
#include "results/store.h"

#define TRIMMED "tests/data/kineto-llama1b-z3-step.json.gz"
#define FULL_DEFAULT "/work/data/kineto-F05-llama1b-z3-fp16.json.gz"
#define JOB_STEP_MS 1988.818 /* the job's timer around the profiled step */

static char dir[64];
static const char *zbench;

static int setup(void **state) { return zb_test_cli_setup(&zbench, dir, sizeof dir); }

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *path_in(const char *name)
{
	static char p[4][200];
	static int k;
	char *s = p[k++ % 4];
	snprintf(s, sizeof p[0], "%s/%s", dir, name);
	return s;
}

/* Import path into a fresh database and analyze it. */
static void import_analyze(const char *path, const char *db, zb_kineto_counts *n, zb_analysis *a)
{
	unlink(db);
	zb_store *s;
	zb_error err = { 0 };
	assert_int_equal(zb_store_open(&s, db, 1000, &err), ZB_OK);
	zb_run_info info = { .kind = "import", .command = "test", .version = "test", .git_commit = "" };
	zb_import_result r;
	if (zb_store_import(s, path, &info, &r, &err))
		print_error("%s\n", err.msg);
	assert_int_equal(r.format, ZB_IMPORT_KINETO);
	*n = r.kineto;
	int64_t cfg;
	assert_int_equal(zb_store_trace_config(s, 0, &cfg, &err), ZB_OK);
	assert_int_equal(cfg, r.config_id);
	zb_trace_input in;
	assert_int_equal(zb_store_load_trace_input(s, cfg, &in, &err), ZB_OK);
	assert_int_equal(zb_analyze(&in, NULL, a, &err), ZB_OK);
	zb_trace_input_free(&in);
	zb_store_close(s);
}

static void test_trimmed_real_trace(void **state)
{
	zb_kineto_counts n;
	zb_analysis a;
	import_analyze(TRIMMED, path_in("trimmed.db"), &n, &a);
	/* the counts scripts/kineto-trim.py printed when it wrote the file */
	assert_int_equal(n.kernels, 3096);
	assert_int_equal(n.memcpys, 770);
	assert_int_equal(n.memsets, 229);
	assert_int_equal(n.apis, 499);
	assert_int_equal(n.cpu_ops, 1030);
	assert_int_equal(n.annotations, 135);
	assert_int_equal(n.profiler_steps, 0);
	assert_int_equal(n.bad_times, 0);
	assert_int_equal((long long)n.h2d_bytes, 5639512081LL);
	assert_int_equal((long long)n.d2h_bytes, 7414886439LL);
	/* one profiled step, no step range: the layers' repeating kernels cut no steps */
	assert_int_equal(a.nsteps, 1);
	assert_string_equal(a.method, "whole");
	assert_contains(a.found_by, "repeats within a step");
	const zb_step_stats *st = &a.steps[0];
	print_message("trimmed trace: step %.3f ms (the job's timer: %.3f ms), %.0f kernels, %.3f GB up, %.3f GB down\n",
		      st->step_s * 1e3, JOB_STEP_MS, st->kernels, st->h2d_bytes / 1e9, st->d2h_bytes / 1e9);
	assert_close(st->step_s * 1e3, 1989.313, 1e-6); /* first GPU record's start to the last one's end */
	assert_int_equal((long long)st->kernels, 3096);
	assert_int_equal((long long)st->copies, 770);
	assert_close(st->h2d_bytes, 5639512081.0, 0);
	assert_close(st->compute_only_s + st->copy_only_s + st->overlap_s + st->idle_s, st->step_s, 1e-9);
	/* DeepSpeed's CPU Adam annotations mark the CPU optimizer, not steps */
	assert_true(st->cpu_opt_s > 0.29 && st->cpu_opt_s < 0.30);
	zb_analysis_free(&a);
}

/* The whole trace against the job's own timer. */
static void test_full_trace_step_time(void **state)
{
	const char *full = getenv("ZB_KINETO_FULL");
	if (!full || !*full)
		full = FULL_DEFAULT;
	if (access(full, R_OK) != 0) {
		print_message("skipped: no full trace at %s (set ZB_KINETO_FULL)\n", full);
		skip();
	}
	zb_kineto_counts n;
	zb_analysis a;
	import_analyze(full, path_in("full.db"), &n, &a);
	assert_int_equal(n.kernels, 3096);
	assert_int_equal(n.cpu_ops, 22653);
	assert_int_equal(n.apis, 10790);
	assert_int_equal(a.nsteps, 1);
	double ms = a.steps[0].step_s * 1e3;
	print_message("full trace: analyze %.3f ms, the job's timer %.3f ms: %+.3f %%\n", ms, JOB_STEP_MS,
		      100 * (ms - JOB_STEP_MS) / JOB_STEP_MS);
	assert_close(ms, JOB_STEP_MS, 0.02);
	zb_analysis_free(&a);
}

/* ---- hand-written traces ------------------------------------------------------------------ */

#define KERNEL(ts, dur) \
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void ns::gemm<float, 4>(float*)\",\"pid\":0,\"tid\":7,\"ts\":" #ts \
	",\"dur\":" #dur ",\"args\":{\"device\":0,\"stream\":7,\"correlation\":1,\"grid\":[2,1,1],\"block\":[128,1,1]," \
	"\"registers per thread\":32}}"
#define RANGE(cat, name, ts, dur) \
	"{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":100,\"tid\":101,\"ts\":" #ts ",\"dur\":" #dur "}"

static zb_analysis analyze_text(const char *text, zb_kineto_counts *n)
{
	const char *p = path_in("t.json");
	zb_test_write_file(p, text);
	zb_analysis a;
	import_analyze(p, path_in("t.db"), n, &a);
	return a;
}

static void test_profiler_steps(void **state)
{
	zb_kineto_counts n;
	/* three steps of 100 us; the optimizer's range inside each, and the GPU's copies of
	 * the annotations, cut nothing */
	zb_analysis a = analyze_text(
		"{\"traceEvents\":["
		RANGE("user_annotation", "ProfilerStep#4", 1000, 100) "," RANGE("user_annotation", "ProfilerStep#5", 1100, 100)
		"," RANGE("user_annotation", "ProfilerStep#6", 1200, 100) ","
		RANGE("user_annotation", "Optimizer.step#Adam.step", 1080, 10) ","
		RANGE("user_annotation", "Optimizer.step#Adam.step", 1180, 10) ","
		RANGE("user_annotation", "Optimizer.step#Adam.step", 1280, 10) ","
		RANGE("gpu_user_annotation", "ProfilerStep#4", 1001, 90) ","
		RANGE("cpu_op", "aten::mm", 1002, 5) ","
		KERNEL(1010, 20) "," KERNEL(1110, 20) "," KERNEL(1210, 20) "]}",
		&n);
	assert_int_equal(n.profiler_steps, 3);
	assert_int_equal(n.annotations, 6);
	assert_int_equal(n.gpu_annotations, 1);
	assert_int_equal(n.cpu_ops, 1);
	assert_string_equal(a.method, "nvtx");
	assert_contains(a.found_by, "ProfilerStep");
	assert_int_equal(a.nsteps, 3);
	assert_close(a.steps[1].step_s, 100e-6, 1e-9);
	assert_close(a.steps[1].compute_s, 20e-6, 1e-9);
	zb_analysis_free(&a);
	/* one profiled step: the range, to the end of the GPU work it launched */
	a = analyze_text("[" RANGE("cpu_op", "ProfilerStep#9", 5000, 100) "," KERNEL(5050, 200) "]", &n);
	assert_int_equal(n.profiler_steps, 1);
	assert_int_equal(a.nsteps, 1);
	assert_close(a.steps[0].step_s, 250e-6, 1e-9);
	assert_contains(a.found_by, "1 occurrence");
	zb_analysis_free(&a);
}

static void test_times_and_forms(void **state)
{
	/* bad timestamps are left out and counted; the others stay */
	const char *text = "{\"traceEvents\":[" KERNEL(10, 5) ","
			   "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":\"soon\",\"dur\":1},"
			   "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":20,\"dur\":-3},"
			   "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1e300,\"dur\":1},"
			   "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoH (Device -> Pageable)\",\"ts\":12,"
			   "\"dur\":2,\"args\":{\"bytes\":4096,\"stream\":9}},"
			   "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"flow\",\"ts\":11},"
			   "{\"ph\":\"X\",\"cat\":\"mystery\",\"name\":\"x\",\"ts\":11,\"dur\":1}]}";
	zb_kineto_trace k;
	zb_error err = { 0 };
	assert_int_equal(zb_kineto_parse(text, strlen(text), "t", &k, &err), ZB_OK);
	assert_int_equal(k.n.kernels, 1);
	assert_int_equal(k.n.bad_times, 3);
	assert_int_equal(k.n.other, 2);
	assert_int_equal(k.n.memcpys, 1);
	assert_int_equal(k.t->memcpys[0].copy_kind, 2);
	assert_int_equal(k.t->memcpys[0].dst_kind, 1); /* pageable */
	assert_int_equal(k.t->memcpys[0].bytes, 4096);
	assert_int_equal(k.t->kernels[0].start, 0);    /* ns from the earliest event */
	assert_int_equal(k.t->kernels[0].end, 5000);
	assert_string_equal(zb_trace_string(k.t, k.t->kernels[0].short_name), "gemm");
	zb_kineto_free(&k);
	/* the same through gzip, whatever the file is called */
	const char *gz = path_in("trace.bin");
	gzFile f = gzopen(gz, "wb");
	assert_non_null(f);
	gzputs(f, text);
	gzclose(f);
	assert_int_equal(zb_kineto_read(gz, &k, &err), ZB_OK);
	assert_int_equal(k.n.kernels, 1);
	assert_int_equal(k.n.bad_times, 3);
	zb_kineto_free(&k);
}

static void test_refusals(void **state)
{
	static const struct { const char *text, *want; } bad[] = {
		{ "{\"traceEvents\": [}", "not JSON (line 1" },
		{ "{\"schemaVersion\": 1}", "no \"traceEvents\" list" },
		{ "{\"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\"}]}", "holds no event zbench reads" },
		{ "[1, 2, 3]", "holds no event zbench reads" },
		{ "", "not JSON" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		zb_kineto_trace k;
		zb_error err = { 0 };
		assert_int_equal(zb_kineto_parse(bad[i].text, strlen(bad[i].text), "x.json", &k, &err), ZB_E_INPUT);
		assert_contains(err.msg, bad[i].want);
		assert_contains(err.msg, "x.json");
		assert_null(strchr(err.msg, '\n'));
	}
}

/* What `zbench import` says about each kind of file, and what it stores. */
static void test_import_cli(void **state)
{
	char args[700];
	const char *db = path_in("cli.db");
	unlink(db);
	snprintf(args, sizeof args, "import %s --db %s", TRIMMED, db);
	zb_test_result r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "PyTorch profiler trace (Kineto)): 3096 kernels, 770 memcpys");
	assert_contains(r.out, "as run 1 (configuration 1)");
	zb_test_result_free(&r);
	snprintf(args, sizeof args, "analyze latest --db %s", db);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "step time         1989.31 ms");
	assert_contains(r.err, "stored 1 step of configuration 1");
	zb_test_result_free(&r);
	snprintf(args, sizeof args, "export latest -o %s --db %s", path_in("x.json"), db);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "of configuration 1 to");
	zb_test_result_free(&r);
	/* an .nsys-rep: the exact export line */
	zb_test_write_file(path_in("run.nsys-rep"), "not read");
	snprintf(args, sizeof args, "import %s --db %s", path_in("run.nsys-rep"), db);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 2);
	char want[600];
	snprintf(want, sizeof want, "nsys export --type sqlite -o %s/run.sqlite %s/run.nsys-rep, then zbench import %s/run.sqlite",
		 dir, dir, dir);
	assert_contains(r.err, want);
	assert_int_equal(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err)); /* one line */
	zb_test_result_free(&r);
	/* anything else: the formats accepted */
	snprintf(args, sizeof args, "import Makefile --db %s", db);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "accepted: an Nsight Systems SQLite export");
	assert_contains(r.err, "Kineto Chrome-trace JSON, .json or .json.gz");
	zb_test_result_free(&r);
	/* the nsys reader still takes its SQLite file (format from the first bytes) */
	zb_import_format f;
	zb_error err = { 0 };
	assert_int_equal(zb_import_detect(db, &f, &err), ZB_OK);
	assert_int_equal(f, ZB_IMPORT_NSYS_SQLITE);
	assert_int_equal(zb_import_detect(TRIMMED, &f, &err), ZB_OK);
	assert_int_equal(f, ZB_IMPORT_KINETO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trimmed_real_trace),
		cmocka_unit_test(test_full_trace_step_time),
		cmocka_unit_test(test_profiler_steps),
		cmocka_unit_test(test_times_and_forms),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_import_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
