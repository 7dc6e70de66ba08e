/*
 * test_trace_cost.c - what `zbench trace` costs the program it traces, the parts
 * that can be measured without a GPU, and the options that choose what it records:
 *   - --kinds: the text of a kind set (trace_kinds.h) both ways, its errors, the
 *     default set, and the set zbench trace hands the injection library
 *     (ZB_TRACE_KINDS in the program's environment) and stores (META_DATA_EXPORT);
 *   - the /proc sampler's CPU time a tick against a process of 50 threads (printed;
 *     the DeepSpeed 2.5B process had 51), and that it closes the files of threads
 *     that ended;
 *   - with CUDA headers: the collector's conversion of CUPTI records, ns a record,
 *     on the mix of one DeepSpeed ZeRO-Offload step of the 2.5B shape (~7000
 *     kernels of ~300 distinct names, ~1700 copies, ~1000 memsets, ~300 syncs).
 */
#include "tests/harness.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profiler/procsample.h"
#include "profiler/trace.h"
#include "profiler/trace_kinds.h"

#ifdef ZB_HAVE_CUDA
#include <cupti.h>
#endif

static char tmpdir[128];

static const char *zbench_bin(void)
{
	const char *z = getenv("ZBENCH");
	return z && *z ? z : "build/zbench";
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- --kinds ----------------------------------------------------------------------- */

static unsigned parse_ok(const char *text)
{
	unsigned k = 12345;
	char err[300] = "";
	if (zb_trace_kinds_parse(text, &k, err, sizeof err)) {
		print_error("'%s': %s\n", text, err);
		fail();
	}
	return k;
}

static void test_kinds_text(void **state)
{
	(void)state;
	/* the default: what analyze reads, plus CUPTI's overhead records */
	char s[200];
	zb_trace_kinds_format(ZB_TK_TRACE_DEFAULT, s, sizeof s);
	assert_string_equal(s, "kernel,memcpy,memset,overhead");
	assert_int_equal(ZB_TK_TRACE_DEFAULT & (ZB_TK_API | ZB_TK_LAUNCHES | ZB_TK_MARKER | ZB_TK_SYNC), 0);
	assert_int_equal(parse_ok("default"), ZB_TK_TRACE_DEFAULT);
	/* a list without signs is the set; signs change the default */
	assert_int_equal(parse_ok("kernel,memcpy"), ZB_TK_KERNEL | ZB_TK_MEMCPY);
	assert_int_equal(parse_ok("+api"), ZB_TK_TRACE_DEFAULT | ZB_TK_RUNTIME | ZB_TK_DRIVER);
	assert_int_equal(parse_ok("-sync,-overhead"), ZB_TK_KERNEL | ZB_TK_MEMCPY | ZB_TK_MEMSET);
	assert_int_equal(parse_ok("+sync"), ZB_TK_TRACE_DEFAULT | ZB_TK_SYNC);
	assert_int_equal(parse_ok("+launches,-memset"), (ZB_TK_TRACE_DEFAULT | ZB_TK_LAUNCHES) & ~ZB_TK_MEMSET);
	assert_int_equal(parse_ok("kernel,+runtime"), ZB_TK_KERNEL | ZB_TK_RUNTIME);
	assert_int_equal(parse_ok("none"), 0);
	assert_int_equal(parse_ok("all"), ZB_TK_ALL & ~ZB_TK_MARKER);
	zb_trace_kinds_format(parse_ok("all"), s, sizeof s);
	assert_string_equal(s, "kernel,memcpy,memset,sync,overhead,runtime,driver,launches");
	assert_int_equal(parse_ok(s), ZB_TK_ALL & ~ZB_TK_MARKER); /* the text reads back */
	zb_trace_kinds_format(0, s, sizeof s);
	assert_string_equal(s, "none");
	/* errors name the item and the list */
	const char *bad[] = { "", "kernels", "kernel,,memcpy", "+", "kernel,", "API" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		unsigned k = 77;
		char err[300] = "";
		assert_int_equal(zb_trace_kinds_parse(bad[i], &k, err, sizeof err), -1);
		assert_int_equal(k, 77); /* untouched */
		assert_contains(err, "--kinds");
	}
	char err[300];
	unsigned k;
	zb_trace_kinds_parse("kernel,bogus", &k, err, sizeof err);
	assert_contains(err, "unknown trace kind 'bogus'");
	/* a small buffer is cut, still terminated */
	char tiny[8];
	zb_trace_kinds_format(ZB_TK_TRACE_DEFAULT, tiny, sizeof tiny);
	assert_true(strlen(tiny) < sizeof tiny);
}

static char *meta(const char *db, const char *name)
{
	sqlite3 *h;
	static char buf[200];
	buf[0] = 0;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return buf;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(h, "SELECT value FROM META_DATA_EXPORT WHERE name = ?1 ORDER BY rowid DESC LIMIT 1", -1,
			       &q, NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
			snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
	}
	sqlite3_close(h);
	return buf;
}

/* The set reaches the program's environment and the stored run. The program is a
 * shell that never starts CUDA, so any readable file serves as the library. */
static void test_kinds_cli(void **state)
{
	(void)state;
	char args[1500], db[300], envf[300], lib[300];
	snprintf(db, sizeof db, "%s/k.db", tmpdir);
	snprintf(envf, sizeof envf, "%s/env.txt", tmpdir);
	snprintf(lib, sizeof lib, "%s/fake-inject.so", tmpdir);
	zb_test_write_file(lib, "not a library: the traced shell never loads it\n");
	setenv("ZB_INJECT_LIB", lib, 1);
	struct {
		const char *flags, *env, *stored;
	} cases[] = {
		{ "", "0x17", "kernel,memcpy,memset,overhead" },
		{ "--api", "0x77", "kernel,memcpy,memset,overhead,runtime,driver" },
		{ "--kinds kernel,memcpy --api", "0x63", "kernel,memcpy,runtime,driver" },
		{ "--kinds +launches,+sync,-memset", "0x9b", "kernel,memcpy,sync,overhead,launches" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(args, sizeof args, "trace %s --db %s -- sh -c 'echo $ZB_TRACE_KINDS > %s'", cases[i].flags, db,
			 envf);
		zb_test_result r = zb_test_run(zbench_bin(), tmpdir, args);
		if (r.rc)
			print_error("%s\n", r.err);
		assert_int_equal(r.rc, 0);
		assert_contains(r.err, "tracer cost: sampler");
		char *env = zb_test_slurp(envf, NULL);
		env[strcspn(env, "\n")] = 0;
		assert_string_equal(env, cases[i].env);
		free(env);
		assert_string_equal(meta(db, "ZB_TRACE_KINDS"), cases[i].stored);
		assert_true(meta(db, "ZB_SAMPLER_CPU_NS")[0] != 0);
		zb_test_result_free(&r);
	}
	zb_test_result r = zb_test_run(zbench_bin(), tmpdir, "trace --kinds kernel,bogus -- true");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "unknown trace kind 'bogus'");
	zb_test_result_free(&r);
	r = zb_test_run(zbench_bin(), tmpdir, "trace --kinds");
	assert_int_equal(r.rc, 2);
	zb_test_result_free(&r);
	unsetenv("ZB_INJECT_LIB");
}

/* ---- the /proc sampler ------------------------------------------------------------ */

static void *sleeper(void *p)
{
	(void)p;
	for (;;)
		pause();
	return NULL;
}

static void test_sampler_cost(void **state)
{
	(void)state;
	enum { NTHREADS = 50, NTICKS = 200 };
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < NTHREADS; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, sleeper, NULL))
				_exit(1);
		}
		char c = 1;
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	zb_proc_sampler *s = zb_proc_sampler_create(child);
	zb_proc_sampler_tick(s, mono_ns(), 1);
	int64_t c0 = cpu_ns(), w0 = mono_ns();
	for (int i = 0; i < NTICKS; i++)
		zb_proc_sampler_tick(s, mono_ns(), i % 10 == 0); /* zbench trace's rescan rate */
	double per_tick_us = (cpu_ns() - c0) / 1e3 / NTICKS, wall_us = (mono_ns() - w0) / 1e3 / NTICKS;
	print_message("sampler: %.1f us of CPU a tick (%.1f us wall) for %zu threads, rescan every 10 ticks;"
		      " at --sample-ms 10: %.2f %% of a core\n",
		      per_tick_us, wall_us, s->nthreads, per_tick_us / 100);
	assert_int_equal(s->nthreads, NTHREADS + 1);
	assert_int_equal(s->nopen, NTHREADS + 1); /* every schedstat kept open */
	assert_true(s->self_cpu_ns > 0);
	/* generous: a loaded 2-core CI machine; the figure is printed */
	assert_true(per_tick_us < 5000);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	zb_proc_sampler_tick(s, mono_ns(), 1);
	assert_int_equal(s->nopen, 0); /* the files of ended threads are closed */
	close(ready[0]);
	close(ready[1]);
	zb_proc_sampler_free(s);

	/* the period doubles when ticks take more than 1 % of it, up to the cap */
	const int64_t ms = 1000000, sec = 1000 * ms;
	assert_int_equal(zb_proc_sampler_period(10 * ms, 10 * 60000, 10, sec), 10 * ms); /* 60 us a tick: 0.6 % */
	assert_int_equal(zb_proc_sampler_period(10 * ms, 10 * 100000, 10, sec), 10 * ms); /* exactly 1 % */
	assert_int_equal(zb_proc_sampler_period(10 * ms, 10 * 150000, 10, sec), 20 * ms);
	assert_int_equal(zb_proc_sampler_period(600 * ms, 10 * 50 * ms, 10, sec), sec);
	assert_int_equal(zb_proc_sampler_period(sec, 10 * sec, 10, sec), sec);
	assert_int_equal(zb_proc_sampler_period(10 * ms, 5 * ms, 0, sec), 10 * ms); /* no ticks */
}

/* ---- record conversion ------------------------------------------------------------- */

#ifdef ZB_HAVE_CUDA
static void test_record_cost(void **state)
{
	(void)state;
	enum { NAMES = 300, KERNELS = 7000, COPIES = 1700, MEMSETS = 1000, SYNCS = 300, STEPS = 5 };
	static char names[NAMES][200];
	for (int i = 0; i < NAMES; i++) /* mangled template names as long as cuBLAS's and PyTorch's */
		snprintf(names[i], sizeof names[i],
			 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm%dEEEEviT0_T1_",
			 i + 1);
	zb_trace *t = zb_trace_create();
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.bytes = 1 << 20;
	CUpti_ActivityMemset4 ms;
	memset(&ms, 0, sizeof ms);
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	CUpti_ActivitySynchronization2 sy;
	memset(&sy, 0, sizeof sy);
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	uint64_t ts = 1000;
	int64_t best = INT64_MAX;
	size_t per_step = KERNELS + COPIES + MEMSETS + SYNCS;
	for (int step = 0; step < STEPS; step++) {
		int64_t c0 = cpu_ns();
		for (int i = 0; i < KERNELS; i++) {
			k.start = ts, k.end = ts += 1000, k.correlationId = (uint32_t)i;
			k.name = names[(i * 7) % NAMES];
			zb_trace_add_cupti_record(t, &k);
			if (i % 4 == 0 && i / 4 < COPIES) {
				m.start = ts, m.end = ts += 500;
				zb_trace_add_cupti_record(t, &m);
			}
			if (i % 7 == 0 && i / 7 < MEMSETS) {
				ms.start = ts, ms.end = ts += 100;
				zb_trace_add_cupti_record(t, &ms);
			}
			if (i % 23 == 0 && i / 23 < SYNCS) {
				sy.start = ts, sy.end = ts += 100;
				zb_trace_add_cupti_record(t, &sy);
			}
		}
		int64_t d = cpu_ns() - c0; /* the first step demangles each name once */
		if (step > 0 && d < best)
			best = d;
	}
	size_t got = t->nkernels + t->nmemcpys + t->nmemsets + t->nsyncs;
	double ns_rec = (double)best / (double)per_step;
	print_message("record conversion: %.0f ns a record, %.2f ms for one step's %zu records (best of %d steps)\n",
		      ns_rec, best / 1e6, per_step, STEPS - 1);
	assert_true(got >= (size_t)(STEPS * KERNELS));
	assert_true(ns_rec < 20000); /* generous: the figure is printed */
	zb_trace_free(t);
}
#endif

int main(void)
{
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_text),
		cmocka_unit_test(test_kinds_cli),
		cmocka_unit_test(test_sampler_cost),
#ifdef ZB_HAVE_CUDA
		cmocka_unit_test(test_record_cost),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
