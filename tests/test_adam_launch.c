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

#include "analysis/kfit.h"
#include "analysis/kfit_adam.h"
#include "inputs/execprofile.h"
#include "inputs/presets.h"
#include "results/store.h"
#include "sim/kernels.h"
#include "sim/predict.h"
#include "sim/resources.h"

/* A profile with the CPU Adam curve, the DRAM queue and adam_copy, adam_launch v. */
static void profile(zb_hw *hw, double v)
{
	zb_exec_profile *p = &hw->gpu.exec;
	zb_exec_profile_neutral(p);
	p->set = 1;
	p->adam_thread = 1.1;
	p->adam_mem = 1.6;
	p->h2d_queue = 0.16;
	p->adam_copy = 0.6;
	p->adam_launch = v;
}

static void test_rates(void **state)
{
	(void)state;
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_preset_default_model(&c.model);
	zb_policy_defaults(&c.policy);
	c.steps = 1;
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

/* dpu and overlap on all the cores (and dpu on half, which the term leaves alone),
 * simulated with adam_launch 0.1: the fit on the CPU busy time gives it back */
static void test_fit(void **state)
{
	(void)state;
	zb_hw truth;
	zb_preset_default_hw(&truth);
	profile(&truth, 0.1);
	zb_error err;
	char db[128];
	snprintf(db, sizeof db, "%s/adam_launch.db", dir);
	zb_store *s;
	int64_t run;
	zb_test_open_run(db, &s, &run);
	const struct { const char *pol; double ratio; int half; } cfg[] = {
		{ "dpu", 1, 0 }, { "dpu", 0.5, 0 }, { "overlap", 1, 0 }, { "dpu", 1, 1 },
	};
	for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
		zb_config c;
		zb_test_fixture_config(&c, &truth, "gpt2-medium", cfg[i].pol, 4);
		c.policy.ratio = cfg[i].ratio;
		c.policy.cpu_threads = cfg[i].half ? truth.cpu.cores / 2 : truth.cpu.cores;
		c.steps = 5;
		zb_test_store_measured(s, run, &c);
	}
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_fit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
