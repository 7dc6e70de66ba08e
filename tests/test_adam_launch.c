/*
 * test_adam_launch.c - CPU Adam losing a core to the GPU's launches (sim/kernels.h
 * zb_exec_adam_launch): Adam's rate x (1 - ranks / cores) only while GPU compute runs and
 * Adam's threads hold every core; a count, so a file naming it as a factor is refused.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/execprofile.h"
#include "sim/kernels.h"
#include "sim/resources.h"

static void test_rates(void **state)
{
	(void)state;
	zb_config c;
	zb_test_default_config(&c);
	c.policy.cpu_threads = c.hw.cpu.cores;
	zb_test_adam_profile(&c.hw, 0.6);
	double one = 1 - 1.0 / c.hw.cpu.cores; /* one core of the host's to the launches */
	zb_task adam = zb_task_blank(ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	zb_task gemm = zb_task_blank(ZB_TASK_GEMM, ZB_RES_GPU, ZB_OP_QKV, ZB_PASS_BWD_DATA, 0, 0, 1);
	const zb_task *act[ZB_RES_COUNT] = { 0 };
	act[ZB_RES_CPU] = &adam;
	double alone[ZB_RES_COUNT], beside[ZB_RES_COUNT];
	zb_resource_rates(&c, act, alone);
	assert_close(alone[ZB_RES_CPU], zb_cpu_adam_Bps(&c), 1e-9 * alone[ZB_RES_CPU]);
	act[ZB_RES_GPU] = &gemm;
	zb_resource_rates(&c, act, beside);
	assert_close(beside[ZB_RES_CPU], one * alone[ZB_RES_CPU], 1e-9 * alone[ZB_RES_CPU]);
	assert_close(zb_exec_adam_launch(&c, act), one, 1e-12);
	/* a core left free: the launches take that one */
	c.policy.cpu_threads = c.hw.cpu.cores - 1;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	/* two ranks of half the cores each hold them all, and each launches */
	c.policy.cpu_threads = c.hw.cpu.cores / 2;
	c.policy.gpus = 2;
	assert_close(zb_exec_adam_launch(&c, act), 1 - 2.0 / c.hw.cpu.cores, 1e-12);
	c.policy.gpus = 1;
	c.policy.cpu_threads = c.hw.cpu.cores;
	/* not Adam on the CPU, no GPU compute, or DeepSpeed's schedule: none */
	zb_task host = zb_task_blank(ZB_TASK_HOST, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	act[ZB_RES_CPU] = &host;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	act[ZB_RES_CPU] = &adam;
	act[ZB_RES_GPU] = NULL;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
	act[ZB_RES_GPU] = &gemm;
	c.framework = ZB_FW_DEEPSPEED;
	assert_close(zb_exec_adam_launch(&c, act), 1, 0);
}

/* Earlier files' fitted adam_launch (and the other retired keys) are refused by name, with
 * what replaced them: a file does not silently lose a term it was fitted with. */
static void test_json(void **state)
{
	(void)state;
	const char *keys[] = { "adam_launch", "starved_s", "gemm_half_dim", "paced_gpu", "adam_gap_s" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_t *o = json_pack("{s:f}", keys[i], 0.01);
		zb_exec_profile q;
		zb_error err;
		assert_int_equal(zb_exec_profile_from_json(o, "t.json", &q, &err), ZB_E_INPUT);
		char want[96];
		snprintf(want, sizeof want, "key 'executor.%s' is no longer a factor", keys[i]);
		if (!strstr(err.msg, want))
			print_error("%s: %s\n", keys[i], err.msg);
		assert_non_null(strstr(err.msg, want));
		json_decref(o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
