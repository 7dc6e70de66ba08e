/*
 * test_gpu_load.c - build/zbench reaches its CUDA side only through
 * build/lib/libzbench_gpu.so, loaded on first use (exec/gpu_entry.h):
 *   - zbench itself needs no CUDA library, and predict, sweep and --version load none;
 *   - a GPU command loads the library (without a GPU it then says "no CUDA device
 *     ..." as before: test_cli);
 *   - a library that cannot be loaded gives one line naming it, exit 2, and the
 *     GPU bench cases are still listed, waived with that reason.
 * In a build without nvcc there is no library: those commands say "built without
 * CUDA", checked by test_cli; this program checks that and nothing else there.
 */
#include "tests/harness.h"

#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *zbench;

static zb_test_result run_env(const char *env, const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s %s", env, zbench);
	return zb_test_run(cmd, tmpdir, args);
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#ifdef ZB_HAVE_CUDA
/* LD_DEBUG=files names every object the loader maps, dlopen'ed ones included. */
static void assert_no_cuda_mapped(const char *args)
{
	zb_test_result r = run_env("LD_DEBUG=files", args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.err, "libsqlite3"); /* the trace is there ... */
	assert_null(strstr(r.err, "libcudart"));  /* ... and names no CUDA library */
	assert_null(strstr(r.err, "libcublas"));
	assert_null(strstr(r.err, "libcupti"));
	assert_null(strstr(r.err, "libzbench_gpu"));
	zb_test_result_free(&r);
}

static void test_host_commands_load_no_cuda(void **state)
{
	zb_test_result r = run_env("LD_TRACE_LOADED_OBJECTS=1", "");
	assert_contains(r.out, "libc.so");
	assert_null(strstr(r.out, "libcudart"));
	assert_null(strstr(r.out, "libcupti"));
	assert_null(strstr(r.out, "libstdc++"));
	zb_test_result_free(&r);
	assert_no_cuda_mapped("--version");
	char args[600];
	snprintf(args, sizeof args, "predict --model gpt2 --steps 3 --db %s/a.db", tmpdir);
	assert_no_cuda_mapped(args);
	snprintf(args, sizeof args, "sweep --model gpt2 --steps 3 --pcie gen3,gen4 --db %s/a.db", tmpdir);
	assert_no_cuda_mapped(args);
}

static void test_gpu_command_loads_library(void **state)
{
	/* asking whether the GPU cases can run loads it (and runs nothing) */
	zb_test_result r = run_env("LD_DEBUG=files", "bench --list");
	assert_contains(r.err, "libzbench_gpu.so");
	assert_contains(r.err, "libcudart");
	zb_test_result_free(&r);
}

static void test_missing_library(void **state)
{
	zb_test_result r = run_env("ZBENCH_GPU_LIB=/nonexistent/libzbench_gpu.so", "run --model gpt2 --steps 2");
	assert_int_equal(r.rc, 3); /* no GPU side: exit 3 (common/error.h zb_exit) */
	assert_int_equal(lines(r.err), 1);
	assert_contains(r.err, "zbench: cannot load the GPU library: /nonexistent/libzbench_gpu.so");
	assert_string_equal(r.out, "");
	zb_test_result_free(&r);

	r = run_env("ZBENCH_GPU_LIB=/nonexistent/libzbench_gpu.so", "bench --list");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "gemm           gpu  bf16 cuBLASLt GEMMs");
	assert_contains(r.out, "(waived: cannot load the GPU library: /nonexistent/libzbench_gpu.so");
	assert_contains(r.out, "sim-engine");
	zb_test_result_free(&r);

	/* a file that is not a library of this zbench (no table) */
	char env[700];
	snprintf(env, sizeof env, "ZBENCH_GPU_LIB=%.*s/lib/libcmocka.so.0", (int)(strrchr(zbench, '/') - zbench),
		 zbench);
	r = run_env(env, "run --model gpt2 --steps 2");
	assert_int_equal(r.rc, 3);
	assert_int_equal(lines(r.err), 1);
	assert_contains(r.err, "does not match this zbench");
	zb_test_result_free(&r);
}
#else
static void test_built_without_cuda(void **state)
{
	zb_test_result r = run_env("", "run --model gpt2 --steps 2");
	assert_int_equal(r.rc, 3); /* no GPU (common/error.h zb_exit) */
	assert_contains(r.err, "built without CUDA");
	zb_test_result_free(&r);
}
#endif

static int setup(void **state)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench || !strchr(zbench, '/'))
		zbench = "build/zbench";
	if (access(zbench, X_OK) != 0) {
		print_error("zbench binary '%s' not found (set ZBENCH)\n", zbench);
		return -1;
	}
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#ifdef ZB_HAVE_CUDA
		cmocka_unit_test(test_host_commands_load_no_cuda),
		cmocka_unit_test(test_gpu_command_loads_library),
		cmocka_unit_test(test_missing_library),
#else
		cmocka_unit_test(test_built_without_cuda),
#endif
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
