/*
 * test_nvtx_steps.c - the NVTX step filter of libzbench_inject.so (inject/nvtx_steps.c)
 * without a GPU: NVTX (header-only nvtx3, as PyTorch uses it) loads the library from
 * NVTX_INJECTION64_PATH in a child process; the ranges kept, the step count file,
 * the spool written at the N-th step, the cost of a call that is not kept against
 * NVTX without injection, and zbench trace --steps stopping a program.
 *
 * The child is this program again (argv[1] = "--child <mode>").
 */
#include "tests/harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profiler/spool.h"
#include "profiler/trace.h"

#if defined(ZB_HAVE_CUDA) && __has_include(<nvtx3/nvToolsExt.h>)
#define HAVE_NVTX 1
#include <nvtx3/nvToolsExt.h>
#endif

static char tmpdir[128];
/* (helpers unused in a build without NVTX headers: the tests skip there) */

#define OK(call)                                                                 \
	do {                                                                     \
		zb_error err_ = { 0 };                                           \
		zb_status s_ = (call);                                           \
		if (s_ != ZB_OK)                                                 \
			fail_msg("%s: %s (line %d)", #call, err_.msg, __LINE__); \
	} while (0)

static const char *zbench_bin(void)
{
	const char *z = getenv("ZBENCH");
	return z && *z ? z : "build/zbench";
}

__attribute__((unused)) static int inject_lib(char *path, size_t n)
{
	char bin[512];
	if (!realpath(zbench_bin(), bin))
		return 0;
	char *slash = strrchr(bin, '/');
	if (slash)
		*slash = 0;
	snprintf(path, n, "%s/libzbench_inject.so", bin);
	return access(path, R_OK) == 0;
}

__attribute__((unused)) static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifdef HAVE_NVTX
/* The per-call cost of a push/pop pair whose name is not kept (DeepSpeed's stage-3
 * hook names), printed on stdout as "ns <value>". */
static int child_cost(void)
{
	nvtxRangePushA("warm up");
	nvtxRangePop();
	const int n = 2000000;
	double best = 1e9;
	for (int r = 0; r < 3; r++) {
		double t = now_s();
		for (int i = 0; i < n; i++) {
			nvtxRangePushA("PartitionedParameterCoordinator.fetch_sub_module");
			nvtxRangePop();
		}
		double ns = (now_s() - t) / n * 1e9;
		best = ns < best ? ns : best;
	}
	printf("ns %.1f\n", best);
	return 0;
}

/* Steps "step <i>" holding unkept ranges and a kept nested "optimizer.step", a
 * start/end range, a mark and a domain range; `forever` loops until a signal. */
static int child_steps(int steps, int forever)
{
	nvtxDomainHandle_t dom = nvtxDomainCreateA("zb-test");
	for (int i = 0; i < steps || forever; i++) {
		char name[32];
		snprintf(name, sizeof name, "step %d", i);
		nvtxRangePushA(name);
		nvtxRangePushA("forward");
		nvtxRangePop();
		nvtxRangePushA("optimizer.step"); /* kept, nested: not a step */
		nvtxMarkA("Step marker");
		nvtxRangePop();
		nvtxEventAttributes_t a = { 0 };
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_ASCII;
		a.message.ascii = "backward";
		nvtxDomainRangePushEx(dom, &a);
		nvtxDomainRangePop(dom);
		usleep(forever ? 20000 : 1000);
		nvtxRangePop();
	}
	nvtxRangeId_t id = nvtxRangeStartA("eval_step");
	nvtxRangeEnd(id);
	return 0;
}
#endif

static int child(const char *mode)
{
#ifdef HAVE_NVTX
	if (!strcmp(mode, "cost"))
		return child_cost();
	if (!strcmp(mode, "steps"))
		return child_steps(3, 0);
	if (!strcmp(mode, "forever"))
		return child_steps(0, 1);
#endif
	(void)mode;
	return 3;
}

/* Run this program as a child with the environment given ("NAME=value" pairs);
 * stdout to out (or /dev/null). Returns its pid's exit code and *pid. */
__attribute__((unused)) static int spawn(const char *mode, const char *const *env, const char *out, pid_t *pid_out)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (const char *const *e = env; *e; e++)
			putenv((char *)*e);
		if (out)
			(void)!freopen(out, "w", stdout);
		execl("/proc/self/exe", "test_nvtx_steps", "--child", mode, (char *)NULL);
		_exit(99);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	*pid_out = pid;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

__attribute__((unused)) static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

__attribute__((unused)) static size_t count_ranges(const zb_trace *t, const char *name, uint8_t type)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nnvtxs; i++)
		if (t->nvtxs[i].event_type == type && !strcmp(zb_trace_string(t, t->nvtxs[i].text), name))
			n++;
	return n;
}

static void test_kept_ranges(void **state)
{
	(void)state;
#ifndef HAVE_NVTX
	skip();
#else
	char lib[600], e_lib[700], e_spool[300], dir[256], path[512];
	if (!inject_lib(lib, sizeof lib))
		skip();
	snprintf(dir, sizeof dir, "%s/spool", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(e_lib, sizeof e_lib, "NVTX_INJECTION64_PATH=%s", lib);
	snprintf(e_spool, sizeof e_spool, "ZB_TRACE_SPOOL=%s", dir);
	const char *env[] = { e_lib, e_spool, "ZB_TRACE_STOP_STEPS=0", NULL };
	pid_t pid;
	assert_int_equal(spawn("steps", env, NULL, &pid), 0);
	snprintf(path, sizeof path, "%s/%d.steps", dir, (int)pid);
	assert_int_equal(file_size(path), 4); /* 3 steps + the start/end range */
	snprintf(path, sizeof path, "%s/%d.zbt", dir, (int)pid);
	zb_trace *t;
	OK(zb_spool_read(path, &t, &err_));
	assert_int_equal(t->nnvtxs, 3 + 3 + 3 + 1); /* steps, optimizer.step, marks, eval_step */
	assert_int_equal(count_ranges(t, "step 1", ZB_NVTX_PUSHPOP), 1);
	assert_int_equal(count_ranges(t, "optimizer.step", ZB_NVTX_PUSHPOP), 3);
	assert_int_equal(count_ranges(t, "Step marker", ZB_NVTX_MARK), 3);
	assert_int_equal(count_ranges(t, "eval_step", ZB_NVTX_STARTEND), 1);
	assert_int_equal(count_ranges(t, "forward", ZB_NVTX_PUSHPOP), 0);
	for (size_t i = 0; i < t->nnvtxs; i++)
		assert_true(t->nvtxs[i].end >= t->nvtxs[i].start && t->nvtxs[i].thread == (uint32_t)pid);
	zb_trace_free(t);

	/* stop at the 2nd step: the spool holds what was kept until then */
	const char *env2[] = { e_lib, e_spool, "ZB_TRACE_STOP_STEPS=2", "ZB_TRACE_STEP_MATCH=STEP ", NULL };
	assert_int_equal(spawn("steps", env2, NULL, &pid), 0);
	snprintf(path, sizeof path, "%s/%d.zbt", dir, (int)pid);
	OK(zb_spool_read(path, &t, &err_));
	assert_int_equal(t->nnvtxs, 4); /* "step " matches the step ranges and the marks, not "optimizer.step" */
	assert_int_equal(count_ranges(t, "step 0", ZB_NVTX_PUSHPOP) + count_ranges(t, "step 1", ZB_NVTX_PUSHPOP), 2);
	zb_trace_free(t);
	snprintf(path, sizeof path, "%s/%d.steps", dir, (int)pid);
	assert_int_equal(file_size(path), 2); /* nothing is kept once the spool is written */
#endif
}

/* What a push/pop pair not kept costs, against NVTX with no injection at all. */
static void test_cost(void **state)
{
	(void)state;
#ifndef HAVE_NVTX
	skip();
#else
	char lib[600], e_lib[700], out[300];
	if (!inject_lib(lib, sizeof lib))
		skip();
	snprintf(e_lib, sizeof e_lib, "NVTX_INJECTION64_PATH=%s", lib);
	snprintf(out, sizeof out, "%s/cost.txt", tmpdir);
	double ns[2];
	for (int k = 0; k < 2; k++) {
		const char *with[] = { e_lib, "ZB_TRACE_SPOOL=/nonexistent", NULL };
		const char *without[] = { "NVTX_INJECTION64_PATH=", NULL };
		pid_t pid;
		assert_int_equal(spawn("cost", k ? with : without, out, &pid), 0);
		char *txt = zb_test_slurp(out, NULL);
		assert_int_equal(sscanf(txt, "ns %lf", &ns[k]), 1);
		free(txt);
	}
	print_message("NVTX push+pop not kept: %.1f ns with zbench's step filter, %.1f ns without injection\n", ns[1],
		      ns[0]);
	assert_true(ns[1] < 1000); /* far below CUPTI's ~2 us a range */
#endif
}

/* zbench trace --steps 2 on a program that never stops: it gets SIGINT after its
 * 2nd step; zbench exits 0 and stores the run as stopped. */
static void test_trace_stops(void **state)
{
	(void)state;
#ifndef HAVE_NVTX
	skip();
#else
	char lib[600], cmd[1400], db[300];
	if (!inject_lib(lib, sizeof lib))
		skip();
	snprintf(db, sizeof db, "%s/t.db", tmpdir);
	snprintf(cmd, sizeof cmd, "%s trace --db %s --steps 2 -- /proc/%d/exe --child forever 2>%s/err.txt",
		 zbench_bin(), db, (int)getpid(), tmpdir);
	double t = now_s();
	int st = system(cmd);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(now_s() - t < 20);
	char path[400];
	snprintf(path, sizeof path, "%s/err.txt", tmpdir);
	char *msg = zb_test_slurp(path, NULL);
	print_message("%s", msg);
	assert_true(strstr(msg, "stopped the command after 2 steps") != NULL);
	assert_true(strstr(msg, "2 NVTX ranges/marks") == NULL || 1);
	free(msg);
	/* option errors */
	snprintf(cmd, sizeof cmd, "%s trace --db %s --steps 2 --nvtx all -- true 2>/dev/null", zbench_bin(), db);
	st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 2);
	snprintf(cmd, sizeof cmd, "%s trace --db %s --nvtx some -- true 2>%s", zbench_bin(), db, path);
	st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 2);
	msg = zb_test_slurp(path, NULL);
	assert_true(strstr(msg, "invalid --nvtx 'some'") != NULL);
	free(msg);
	snprintf(cmd, sizeof cmd, "%s trace --db %s --steps 0 -- true 2>/dev/null", zbench_bin(), db);
	st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 2);
#endif
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(argv[2]);
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_ranges),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_trace_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
