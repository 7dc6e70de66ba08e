/*
 * test_adam_gap.c - the GPU's idle before each compute task beside CPU Adam on fewer
 * than every core (execprofile.h adam_gap_s, sim/kernels.h zb_exec_starved_s): the wait
 * scales with Adam's share of the cores, every core keeps starved_s, other frameworks
 * none; a prediction grows by at most one wait per GPU task and not at all without
 * Adam; the term's range and JSON round trip; and zb_kfit_adam_gap (kfit_starved.h)
 * reads it back from timelines whose tasks start that much after their ready time.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit.h"
#include "analysis/kfit_starved.h"
#include "core/execprofile.h"
#include "inputs/presets.h"
#include "sim/kernels.h"
#include "sim/predict.h"

#define GAP 4e-6

static void test_wait(void **state)
{
	(void)state;
	zb_config c;
	zb_test_default_config(&c);
	zb_test_adam_profile(&c.hw, 0.6);
	c.hw.gpu.exec.adam_gap_s = GAP;
	int cores = c.hw.cpu.cores;
	c.policy.cpu_threads = cores / 2;
	assert_close(zb_exec_starved_s(&c), GAP / 2, 1e-12);
	c.policy.cpu_threads = cores / 4;
	assert_close(zb_exec_starved_s(&c), GAP / 4, 1e-12);
	/* two ranks of a quarter each: half the cores */
	c.policy.gpus = 2;
	assert_close(zb_exec_starved_s(&c), GAP / 2, 1e-12);
	c.policy.gpus = 1;
	/* every core: starved_s, not the gap */
	c.policy.cpu_threads = cores;
	assert_true(zb_exec_starved_s(&c) == 0);
	c.hw.gpu.exec.starved_s = 20e-6;
	assert_close(zb_exec_starved_s(&c), 20e-6, 1e-12);
	/* another framework's schedule: not zbench's issuing thread */
	c.policy.cpu_threads = cores / 2;
	c.framework = ZB_FW_DEEPSPEED;
	assert_true(zb_exec_starved_s(&c) == 0);
	c.framework = ZB_FW_ZBENCH;
	c.hw.gpu.exec.adam_gap_s = 0;
	assert_true(zb_exec_starved_s(&c) == 0);
}

/* gpt2-medium dpu 0.5 on half the cores (GPU-bound): each GPU task starting beside Adam
 * waits GAP / 2, so the step grows, by less than a wait per GPU task; no offload: no
 * Adam, no change. */
static void test_predict(void **state)
{
	(void)state;
	zb_hw hw;
	zb_preset_default_hw(&hw);
	zb_test_adam_profile(&hw, 0.6);
	const char *pol[] = { "dpu", "none" };
	for (int k = 0; k < 2; k++) {
		zb_config c;
		zb_test_fixture_config(&c, &hw, "gpt2-medium", pol[k], 8);
		c.policy.ratio = k == 0 ? 0.5 : 0;
		c.policy.cpu_threads = hw.cpu.cores / 2;
		c.steps = 4;
		double step[2];
		size_t gpu_tasks = 0;
		for (int on = 0; on < 2; on++) {
			c.hw.gpu.exec.adam_gap_s = on ? GAP : 0;
			zb_prediction p;
			zb_error err;
			assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
			step[on] = zb_step_time_window(&p.graph, p.res.end, 1);
			gpu_tasks = 0;
			for (size_t i = 0; i < p.graph.ntasks; i++)
				gpu_tasks += p.graph.tasks[i].resource == ZB_RES_GPU && p.graph.tasks[i].step == 2;
			zb_prediction_free(&p);
		}
		print_message("%s: step %.3f ms without the gap, %.3f with (%zu GPU tasks a step)\n", pol[k], 1e3 * step[0],
			      1e3 * step[1], gpu_tasks);
		if (k == 0) {
			assert_true(step[1] > step[0] + 20 * GAP / 2);
			assert_true(step[1] <= step[0] + gpu_tasks * GAP / 2 * 1.001);
		} else {
			assert_true(step[1] == step[0]);
		}
	}
}

static void test_json(void **state)
{
	(void)state;
	zb_exec_profile p, q;
	zb_exec_profile_h200(&p);
	p.set = 1;
	p.adam_gap_s = 2.5e-6;
	json_t *o = zb_exec_profile_to_json(&p);
	zb_error err;
	assert_int_equal(zb_exec_profile_from_json(o, "t.json", &q, &err), ZB_OK);
	assert_close(q.adam_gap_s, 2.5e-6, 1e-15);
	json_decref(o);
	p.adam_gap_s = 0; /* without it, the key is not written: older files stay as they were */
	o = zb_exec_profile_to_json(&p);
	assert_null(json_object_get(o, "adam_gap_s"));
	json_decref(o);
	p.adam_gap_s = 0.01;
	assert_int_equal(zb_exec_profile_validate(&p, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "adam_gap_s 0.01"));
}

/* Delay the measured start of x's GPU compute tasks of the steady steps by base, and of
 * those beside CPU Adam by extra more, as the executor's issuing thread would. */
static void delay_starts(zb_kfit_item *x, int warmup, double base, double extra)
{
	for (size_t i = 0; i < x->g.ntasks; i++) {
		const zb_task *t = &x->g.tasks[i];
		if (t->resource != ZB_RES_GPU || t->step < warmup || !(x->mend[i] - x->mstart[i] > base + extra))
			continue;
		int beside = zb_kfit_overlap(x, ZB_RES_CPU, x->mstart[i], x->mend[i]) > 0.5;
		x->mstart[i] += base + (beside ? extra : 0);
	}
}

/* Timelines of dpu on a quarter and on half the cores, and of no offload, whose GPU tasks
 * start 0.4 us after ready, and GAP x share later beside Adam: GAP back; the items on
 * every core are no evidence. */
static void test_measure(void **state)
{
	(void)state;
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_test_adam_profile(&truth, 0.6);
	char db[128];
	snprintf(db, sizeof db, "%s/gap.db", dir);
	const int div[4] = { 4, 2, 2, 1 }; /* Adam's threads: cores / div */
	const zb_test_case cfg[4] = { { "gpt2-medium", "dpu", 4, 0, truth.cpu.cores / div[0], 0 },
				      { "gpt2-medium", "dpu", 4, 0, truth.cpu.cores / div[1], 0 },
				      { "gpt2-medium", "none", 4, 0, truth.cpu.cores / div[2], 0 },
				      { "gpt2-medium", "dpu", 4, 0, truth.cpu.cores / div[3], 0 } };
	zb_test_measured_db(db, &truth, cfg, 4);
	zb_error err;
	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &truth, &set, &err), ZB_OK);
	assert_int_equal(set.n, 4);
	for (int k = 0; k < 4; k++)
		delay_starts(&set.it[k], 2, 0.4e-6, GAP / div[k]);
	int n;
	double g = zb_kfit_adam_gap(&set, NULL, &truth, &n);
	printf("adam_gap_s measured: %.3f us from %d tasks (delayed by %.1f us)\n", 1e6 * g, n, 1e6 * GAP);
	assert_true(n >= 100);
	assert_close(g, GAP, 0.02);
	/* Adam on every core only: nothing to read */
	unsigned char every[4] = { 0, 0, 1, 1 };
	assert_true(zb_kfit_adam_gap(&set, every, &truth, &n) == 0);
	assert_int_equal(n, 0);
	zb_kfit_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_predict),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_measure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
