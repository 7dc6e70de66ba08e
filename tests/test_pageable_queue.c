/*
 * test_pageable_queue.c - pageable uploads in the DRAM queue (execprofile.h pageable_queue,
 * sim/kernels.c zb_exec_dram): beside CPU Adam a pageable H2D copy slows by its own queue
 * term, 0 falls back to h2d_queue, pinned copies never read it; and the calibration
 * (analysis/kfit_pageable.h, kfit.c's copy rates) gives back the lone pageable rate and
 * the term from timelines simulated with them.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit.h"
#include "analysis/kfit_pageable.h"
#include "inputs/presets.h"
#include "sim/kernels.h"
#include "sim/resources.h"

/* The H2D rate beside Adam (and D2H when both) on c, H2D's task a pinned or pageable
 * upload as c says. */
static double h2d_beside_adam(const zb_config *c, int with_d2h)
{
	zb_task adam = zb_task_blank(ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	zb_task down = zb_task_blank(ZB_TASK_COPY, ZB_RES_D2H, ZB_OP_GRAD_DOWN, ZB_PASS_OPT, 0, 0, 1);
	zb_task up = zb_task_blank(ZB_TASK_COPY, ZB_RES_H2D,
				   c->policy.pageable ? ZB_OP_PARAM_UP_PAGEABLE : ZB_OP_PARAM_UP, ZB_PASS_OPT, 0, 0, 1);
	const zb_task *act[ZB_RES_COUNT] = { 0 };
	act[ZB_RES_CPU] = &adam, act[ZB_RES_H2D] = &up;
	if (with_d2h)
		act[ZB_RES_D2H] = &down;
	double rate[ZB_RES_COUNT];
	zb_resource_rates(c, act, rate);
	return rate[ZB_RES_H2D];
}

static void test_rates(void **state)
{
	zb_config c;
	zb_test_default_config(&c);
	c.policy.cpu_threads = c.hw.cpu.cores / 2;
	zb_test_adam_profile(&c.hw, 0.6);
	double pinned = h2d_beside_adam(&c, 0);
	c.policy.pageable = 1;
	double by_h2d_queue = h2d_beside_adam(&c, 0);
	/* the term set to h2d_queue's value: the same rate as without it */
	c.hw.gpu.exec.pageable_queue = c.hw.gpu.exec.h2d_queue;
	assert_close(h2d_beside_adam(&c, 0), by_h2d_queue, 1e-9);
	/* a longer queue: slower, and by the queue's form at the same utilization */
	c.hw.gpu.exec.pageable_queue = 4 * c.hw.gpu.exec.h2d_queue;
	double slow = h2d_beside_adam(&c, 0), h0 = c.hw.link.pageable_h2d_Bps;
	assert_true(slow < by_h2d_queue);
	double u1 = (h0 / by_h2d_queue - 1) / c.hw.gpu.exec.h2d_queue, u4 = (h0 / slow - 1) / (4 * c.hw.gpu.exec.h2d_queue);
	/* u / (1 - u) from each: the slower copy leaves Adam more DRAM, so u grows a little */
	assert_true(u4 >= u1 * 0.999 && u4 < u1 * 1.2);
	assert_true(h2d_beside_adam(&c, 1) > 0);
	/* pinned uploads never read it */
	c.policy.pageable = 0;
	assert_close(h2d_beside_adam(&c, 0), pinned, 1e-12);
	/* alone, a pageable upload keeps its lone rate whatever the term */
	c.policy.pageable = 1;
	zb_task up = zb_task_blank(ZB_TASK_COPY, ZB_RES_H2D, ZB_OP_PARAM_UP_PAGEABLE, ZB_PASS_OPT, 0, 0, 1);
	const zb_task *act[ZB_RES_COUNT] = { 0 };
	act[ZB_RES_H2D] = &up;
	double rate[ZB_RES_COUNT];
	zb_resource_rates(&c, act, rate);
	assert_close(rate[ZB_RES_H2D], h0, 1e-9 * h0);
}

/* Pageable offload (copies alone) and dpu on half and all the cores (copies beside Adam),
 * simulated with a lone pageable upload of 7 GB/s and pageable_queue 0.5: the fit gives
 * both back. */
static void test_fit(void **state)
{
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_test_adam_profile(&truth, 0.6);
	truth.link.pageable_h2d_Bps = 7e9;
	truth.link.pageable_d2h_Bps = 12e9;
	truth.gpu.exec.pageable_queue = 0.5;
	char db[128];
	snprintf(db, sizeof db, "%s/pageable.db", dir);
	int all = truth.cpu.cores, half = all / 2;
	/* the first three pageable; the pinned ones give the DRAM budget and h2d_queue, which
	 * the pageable term stands beside */
	const zb_test_case cases[] = { { "gpt2-medium", "offload", 4, 1, half, 1 }, { "gpt2-medium", "dpu", 4, 1, half, 1 },
				       { "gpt2-medium", "dpu", 4, 1, all, 1 },      { "gpt2-medium", "dpu", 4, 1, half, 0 },
				       { "gpt2-medium", "dpu", 4, 1, all, 0 } };
	zb_error err;
	zb_test_measured_db(db, &truth, cases, 5);

	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &truth, &set, &err), ZB_OK);
	assert_int_equal(set.n, 5);
	int n;
	double k = zb_kfit_pageable_queue(&set, NULL, &truth, &n);
	printf("pageable_queue measured: %.3f from %d copies (simulated with 0.5)\n", k, n);
	assert_true(n >= 3);
	/* each copy solved at its own utilization; copies that Adam overlaps only in part of
	 * their time were simulated at two rates and read as one (the task-average bias) */
	assert_true(k > 0.45 && k < 0.55);
	/* the pageable offload and the pinned ones: no pageable copy beside Adam, nothing fitted */
	unsigned char offload_only[5] = { 1, 0, 0, 1, 1 };
	assert_close(zb_kfit_pageable_queue(&set, offload_only, &truth, &n), 0, 0);
	assert_int_equal(n, 0);

	/* the whole fit: the lone rate from the copies Adam does not overlap, and the term */
	zb_hw base = truth, out;
	base.link.pageable_h2d_Bps = 5e9; /* a mixed rate, as fitted before the term */
	base.gpu.exec.pageable_queue = 0;
	zb_kfit_stats st;
	assert_int_equal(zb_kfit_fit(&set, NULL, &base, &out, &st, &err), ZB_OK);
	printf("fitted: dram %.1f GB/s (simulated %.1f), h2d_queue %.3f (%.3f), pageable H2D %.2f GB/s alone (simulated 7), pageable_queue %.3f\n", out.cpu.dram_Bps / 1e9, truth.cpu.dram_Bps / 1e9, out.gpu.exec.h2d_queue, truth.gpu.exec.h2d_queue,
	       out.link.pageable_h2d_Bps / 1e9, out.gpu.exec.pageable_queue);
	assert_true(fabs(out.link.pageable_h2d_Bps / 7e9 - 1) < 0.03);
	/* the term is read at the fitted DRAM budget (4 % low here, so u is higher and k lower:
	 * u / (1 - u) is steep near 0.8); what it must give is the pageable steps */
	assert_true(out.gpu.exec.pageable_queue > 0.3 && out.gpu.exec.pageable_queue < 0.6);
	zb_kfit_pred pred[5];
	assert_int_equal(zb_kfit_predict(&set, &out, pred, &err), ZB_OK);
	zb_hw mixed = out; /* the same fit without the term: the dpu steps come out fast */
	mixed.gpu.exec.pageable_queue = 0;
	zb_kfit_pred pm[5];
	assert_int_equal(zb_kfit_predict(&set, &mixed, pm, &err), ZB_OK);
	for (int i = 0; i < 3; i++) {
		double e = pred[i].step_s / set.it[i].meas_step_s - 1, em = pm[i].step_s / set.it[i].meas_step_s - 1;
		printf("  %-40s %+.2f %% (without the term %+.2f %%)\n", set.it[i].key, 100 * e, 100 * em);
		assert_true(fabs(e) < 0.02);
		if (i > 0)
			assert_true(em < -0.02);
	}
	zb_kfit_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_fit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
