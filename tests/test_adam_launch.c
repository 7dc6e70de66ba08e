/*
 * test_adam_launch.c - CPU Adam losing a core to the GPU's launches (execprofile.h
 * adam_launch, sim/kernels.h zb_exec_adam_launch): Adam's rate x (1 - adam_launch) only
 * while GPU compute runs and Adam's threads hold every core; the term's range and its
 * JSON round trip; and zb_kfit_adam_launch (analysis/kfit_adam.h) gives it back from
 * timelines simulated with it.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/kfit.h"
#include "analysis/kfit_adam.h"
#include "core/execprofile.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "results/store.h"
#include "sim/kernels.h"
#include "sim/predict.h"
#include "sim/resources.h"

/* A profile with the CPU Adam curve, the DRAM queue and adam_copy 0.6, adam_launch v. */
static void profile(zb_hw *hw, double v)
{
	zb_test_adam_profile(hw, 0.6);
	hw->gpu.exec.adam_launch = v;
}

static void test_rates(void **state)
{
	(void)state;
	zb_config c;
	zb_test_default_config(&c);
	c.policy.cpu_threads = c.hw.cpu.cores;
	profile(&c.hw, 0.1);
	zb_task adam = zb_task_blank(ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	zb_task gemm = zb_task_blank(ZB_TASK_GEMM, ZB_RES_GPU, ZB_OP_QKV, ZB_PASS_BWD_DATA, 0, 0, 1);
	const zb_task *act[ZB_RES_COUNT] = { 0 };
	act[ZB_RES_CPU] = &adam;
	double alone[ZB_RES_COUNT], beside[ZB_RES_COUNT];
	zb_resource_rates(&c, act, alone);
	assert_close(alone[ZB_RES_CPU], zb_cpu_adam_Bps(&c), 1e-9 * alone[ZB_RES_CPU]);
	act[ZB_RES_GPU] = &gemm;
	zb_resource_rates(&c, act, beside);
	assert_close(beside[ZB_RES_CPU], 0.9 * alone[ZB_RES_CPU], 1e-9 * alone[ZB_RES_CPU]);
	assert_close(zb_exec_adam_launch(&c, act), 0.9, 1e-12);
	/* a core left free: the launches take that one */
	c.policy.cpu_threads = c.hw.cpu.cores - 1;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	/* two ranks of half the cores each hold them all */
	c.policy.cpu_threads = c.hw.cpu.cores / 2;
	c.policy.gpus = 2;
	assert_close(zb_exec_adam_launch(&c, act), 0.9, 1e-12);
	c.policy.gpus = 1;
	c.policy.cpu_threads = c.hw.cpu.cores;
	/* not Adam on the CPU, or DeepSpeed's schedule: no term */
	zb_task host = zb_task_blank(ZB_TASK_HOST, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	act[ZB_RES_CPU] = &host;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	act[ZB_RES_CPU] = &adam;
	c.framework = ZB_FW_DEEPSPEED;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	c.framework = ZB_FW_ZBENCH;
	/* 0: off */
	c.hw.gpu.exec.adam_launch = 0;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
}

static void test_json(void **state)
{
	(void)state;
	zb_exec_profile p, q;
	zb_exec_profile_h200(&p);
	p.set = 1; /* a file's, not the preset's name */
	p.adam_launch = 0.0625;
	json_t *o = zb_exec_profile_to_json(&p);
	zb_error err;
	assert_int_equal(zb_exec_profile_from_json(o, "t.json", &q, &err), ZB_OK);
	assert_close(q.adam_launch, 0.0625, 1e-15);
	json_decref(o);
	/* without it, the key is not written: older files stay as they were */
	p.adam_launch = 0;
	o = zb_exec_profile_to_json(&p);
	assert_null(json_object_get(o, "adam_launch"));
	json_decref(o);
	p.adam_launch = 0.6;
	assert_int_equal(zb_exec_profile_validate(&p, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "adam_launch 0.6"));
}

/* dpu and overlap of gpt2-medium on all the cores and dpu on half (which the term leaves
 * alone), and with `large` a gpt2-large dpu on all the cores too, simulated on truth, as
 * the measured runs of db. */
static void make_db(const char *db, const zb_hw *truth, int large)
{
	int all = truth->cpu.cores, half = all / 2;
	const zb_test_case cfg[] = {
		{ "gpt2-medium", "dpu", 4, 1, all, 0 },  { "gpt2-medium", "dpu", 4, 0.5, all, 0 }, { "gpt2-medium", "overlap", 4, 1, all, 0 },
		{ "gpt2-medium", "dpu", 4, 1, half, 0 }, { "gpt2-large", "dpu", 4, 1, all, 0 },
	};
	zb_test_measured_db(db, truth, cfg, 5 - !large);
}

/* Simulated with adam_launch 0.1: the fit on the CPU busy time gives it back. */
static void test_fit(void **state)
{
	(void)state;
	zb_hw truth;
	zb_preset_default_hw(&truth);
	profile(&truth, 0.1);
	zb_error err;
	char db[128];
	snprintf(db, sizeof db, "%s/adam_launch.db", dir);
	make_db(db, &truth, 0);
	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &truth, &set, &err), ZB_OK);
	assert_int_equal(set.n, 4);
	zb_hw base = truth;
	base.gpu.exec.adam_launch = 0;
	int n;
	zb_status st;
	double v = zb_kfit_adam_launch(&set, NULL, &base, &n, &st, &err);
	printf("adam_launch fitted: %.4f on %d configurations (simulated with 0.1)\n", v, n);
	assert_int_equal(st, ZB_OK);
	assert_int_equal(n, 3); /* the half-core one does not take part */
	assert_close(v, 0.1, 0.005);
	/* none on every core beside the GPU: nothing fitted */
	unsigned char only_half[4] = { 0, 0, 0, 1 };
	assert_close(zb_kfit_adam_launch(&set, only_half, &base, &n, &st, &err), 0, 0);
	assert_int_equal(n, 0);
	zb_kfit_free(&set);
}

/* `zbench calibrate --from-db` end to end: its four fits (in-sample, two halves, --holdout)
 * run at once and each gives its summary; the profile written carries adam_launch; a
 * --holdout that matches nothing is one line and exit 2, nothing written. */
static void test_calibrate_cli(void **state)
{
	(void)state;
	const char *zbench = getenv("ZBENCH") && *getenv("ZBENCH") ? getenv("ZBENCH") : "build/zbench";
	zb_hw truth;
	zb_preset_default_hw(&truth);
	profile(&truth, 0.1);
	zb_error err;
	char db[128], base_file[128], out[128], args[1024];
	snprintf(db, sizeof db, "%s/cli.db", dir);
	snprintf(base_file, sizeof base_file, "%s/base.json", dir);
	snprintf(out, sizeof out, "%s/fit.json", dir);
	make_db(db, &truth, 1);
	zb_hw base = truth;
	base.gpu.exec.adam_launch = 0;
	assert_int_equal(zb_hw_save(base_file, &base, &err), ZB_OK);
	snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --out %s --holdout gpt2-large --json", db,
		 base_file, out);
	zb_test_result r = zb_test_run(zbench, dir, args);
	if (r.rc != 0)
		print_error("%s: exit %d: %s\n", args, r.rc, r.err);
	assert_int_equal(r.rc, 0);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	assert_non_null(j);
	for (const char *k = "fitted"; k; k = !strcmp(k, "fitted") ? "half_out" : NULL)
		assert_true(json_real_value(json_object_get(json_object_get(j, k), "mape")) >= 0);
	json_t *h = json_object_get(json_object_get(j, "holdout"), "summary");
	assert_int_equal(json_integer_value(json_object_get(h, "configs")), 1);
	json_decref(j);
	zb_test_result_free(&r);
	zb_hw fitted;
	assert_int_equal(zb_hw_load(out, &fitted, &err), ZB_OK);
	printf("calibrate --from-db: adam_launch %.4f, adam_thread %.3f, adam_mem %.3f, adam_copy %.3f (simulated with 0.1, "
	       "1.1, 1.6, 0.6)\n", fitted.gpu.exec.adam_launch, fitted.gpu.exec.adam_thread, fitted.gpu.exec.adam_mem,
	       fitted.gpu.exec.adam_copy);
	/* within a fifth: adam_copy's task-average slope is biased low (kfit_adam.h; here 0.48 for
	 * 0.6, from the one half-core configuration) and adam_launch, fitted on the steps after
	 * it, takes up the rest (measured 0.114) */
	assert_close(fitted.gpu.exec.adam_launch, 0.1, 0.2);
	assert_close(fitted.gpu.exec.adam_thread, 1.1, 0.01);
	assert_close(fitted.gpu.exec.adam_mem, 1.6, 0.01);
	remove(out);
	snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --out %s --holdout nosuch", db, base_file,
		 out);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "--holdout nosuch: no configuration of that model"));
	assert_int_equal(access(out, F_OK), -1);
	zb_test_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_calibrate_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
