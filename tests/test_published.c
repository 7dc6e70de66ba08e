/*
 * test_published.c - the published-measurements suite and the host share model:
 *   - `zbench validate --published` predicts data/published-offload.tsv from the
 *     presets and no case is worse than recorded in tests/data/published-errors.tsv
 *     (a preset change that makes a prediction worse fails here; after an improvement,
 *     re-record with --record);
 *   - a recorded error smaller than today's is reported as a regression (exit 1);
 *   - a malformed suite file is one error line naming the line (exit 2);
 *   - two sockets: a one-GPU run given the whole DGX-2 (--gpus-per-cpu 1) draws on
 *     both nodes, one socket's worth of threads on one, a full machine 1/16 each; the
 *     inter-socket link caps the remote share; a --hw file sets sockets.
 */
#include "tests/harness.h"

#include <sys/wait.h>
#include <unistd.h>

#include "inputs/hwfile.h"
#include "sim/numa.h"
#include "inputs/presets.h"
#include "sim/resources.h"

static char tmpdir[256];
static const char *zbench;

typedef zb_test_result result;

static result run(const char *args) { return zb_test_run(zbench, tmpdir, args); }

static void result_free(result *r) { zb_test_result_free(r); }

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void suite_not_worse_than_recorded(void **state)
{
	(void)state;
	result r = run("validate --published=data/published-offload.tsv "
		       "--check tests/data/published-errors.tsv");
	if (r.rc != 0)
		print_error("%s%s", r.out, r.err);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "single-GPU MAPE");
	/* several GPUs: predicted (ranks sharing the host), and each scaling study's trend */
	assert_contains(r.out, "multi-GPU cases");
	assert_contains(r.out, "scaling layers=50,hidden=4096,heads=32");
	/* cases a preset was fitted to ("+fit") are summed apart from the others */
	assert_contains(r.out, "out-of-sample (no preset value fitted to them) MAPE");
	assert_contains(r.out, "no case worse than recorded");
	result_free(&r);
}

static void tighter_record_fails(void **state)
{
	(void)state;
	char path[512], args[700];
	snprintf(path, sizeof path, "%s/errors.tsv", tmpdir);
	write_file(path, "zo-cpuadam-1b\t+1.0\nmape\t1.0\n");
	snprintf(args, sizeof args, "validate --published --check %s", path);
	result r = run(args);
	assert_int_equal(r.rc, 1);
	assert_contains(r.out, "regression: case zo-cpuadam-1b");
	assert_contains(r.out, "regression: single-GPU MAPE");
	result_free(&r);
}

static void malformed_suite_is_one_line(void **state)
{
	(void)state;
	char path[512], args[700];
	snprintf(path, sizeof path, "%s/bad.tsv", tmpdir);
	write_file(path, "# comment\nid\tgen\nx\tv100\t1\n");
	snprintf(args, sizeof args, "validate --published=%s", path);
	result r = run(args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "bad.tsv:3: expected 21 tab-separated fields");
	assert_string_equal(r.out, "");
	result_free(&r);
	r = run("validate --check x.tsv");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "--check needs --published");
	result_free(&r);
}

static zb_config dgx2(int gpus_per_cpu, int threads)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw("dgx-2", &c.hw, NULL), ZB_OK);
	c.hw.gpus_per_cpu = gpus_per_cpu;
	c.policy.cpu_threads = threads;
	return c;
}

static void two_sockets_share(void **state)
{
	(void)state;
	zb_config whole = dgx2(1, 0), one = dgx2(1, 24), full = dgx2(16, 0);
	assert_int_equal(zb_config_cpu_threads(&whole), 48);
	assert_close(zb_numa_share(&whole), 1.0, 1e-12);
	assert_close(zb_numa_remote_fraction(&whole), 0.5, 1e-12);
	assert_close(zb_numa_share(&one), 0.5, 1e-12);      /* 24 threads: one socket */
	assert_close(zb_numa_remote_fraction(&one), 0.0, 1e-12);
	assert_int_equal(zb_config_cpu_threads(&full), 3);  /* 48 cores / 16 GPUs */
	assert_close(zb_numa_share(&full), 1.0 / 16, 1e-12);
	/* the whole host runs Adam at the published 3.9 Gparam/s (ZeRO-Offload Table 4) */
	assert_close(zb_cpu_adam_Bps(&whole) / 28, 3.9e9, 1e-9);
	/* one socket: half the host's memory ceiling */
	assert_close(zb_cpu_adam_Bps(&one) / 28, 0.5 * 3.9e9, 1e-9);
	/* a slow link caps the remote half: 2 x 10 GB/s / 0.5 = 40 GB/s */
	whole.hw.cpu.xsocket_Bps = 10e9;
	assert_close(zb_cpu_adam_Bps(&whole), 40e9, 1e-9);
}

static void hw_file_sets_sockets(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/hw.json", tmpdir);
	write_file(path, "{\"preset\": \"h200-machine\", \"cpu\": {\"preset\": \"dgx-a100\", "
			 "\"sockets\": 4, \"xsocket_Bps\": 5e10}, \"gpus_per_cpu\": 2}");
	zb_hw hw;
	zb_error err = { 0 };
	assert_int_equal(zb_hw_load(path, &hw, &err), ZB_OK);
	assert_int_equal(hw.cpu.sockets, 4);
	assert_close(hw.cpu.xsocket_Bps, 5e10, 1e-12);
	assert_int_equal(hw.gpus_per_cpu, 2);
	write_file(path, "{\"preset\": \"h200-machine\", \"cpu\": {\"preset\": \"dgx-a100\", "
			 "\"sockets\": -1}}");
	assert_int_not_equal(zb_hw_load(path, &hw, &err), ZB_OK);
	assert_contains(err.msg, "sockets");
}

static void gpus_per_cpu_flag(void **state)
{
	(void)state;
	/* the DGX-2 preset is the full machine (16 GPUs share 48 cores); the flag gives
	 * a one-GPU run the whole host */
	result a = run("predict --hw dgx-2 --policy offload --no-db");
	result b = run("predict --hw dgx-2 --policy offload --gpus-per-cpu 1 --no-db");
	assert_int_equal(a.rc, 0);
	assert_int_equal(b.rc, 0);
	assert_contains(a.out, "cpu dgx-2: 3 threads");
	assert_contains(a.out, "48 cores / 16 GPUs per CPU");
	assert_contains(b.out, "cpu dgx-2: 48 threads");
	result_free(&a);
	result_free(&b);
	result c = run("predict --hw dgx-2 --gpus-per-cpu 0 --no-db");
	assert_int_equal(c.rc, 2);
	assert_contains(c.err, "--gpus-per-cpu 0 must be positive");
	result_free(&c);
}

static int setup(void **state)
{
	(void)state;
	return zb_test_cli_setup(&zbench, tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
	(void)state;
	return zb_test_cli_teardown(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(suite_not_worse_than_recorded),
		cmocka_unit_test(tighter_record_fails),
		cmocka_unit_test(malformed_suite_is_one_line),
		cmocka_unit_test(two_sockets_share),
		cmocka_unit_test(hw_file_sets_sockets),
		cmocka_unit_test(gpus_per_cpu_flag),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
