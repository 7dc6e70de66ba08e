/*
 * test_kfit_host.c - a profile moved to another host (analysis/kfit_host.h): the scales
 * touch only the host's CPU Adam rate and memory figures; timelines simulated on a host
 * 10 % faster per core with 12 % less memory bandwidth give those scales back from the
 * anchor suite's four thread counts, and the moved profile predicts them; `zbench
 * calibrate --from-db --fit-host` writes it and refuses --eval beside it.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/kfit.h"
#include "analysis/kfit_eval.h"
#include "analysis/kfit_host.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

static void test_apply(void **state)
{
	(void)state;
	zb_hw hw, s;
	zb_preset_default_hw(&hw);
	s = hw;
	zb_kfit_host_apply(&s, 1.1, 0.9);
	assert_close(s.cpu.adam_params_per_core, 1.1 * hw.cpu.adam_params_per_core, 1e-12);
	assert_close(s.cpu.dram_Bps, 0.9 * hw.cpu.dram_Bps, 1e-12);
	assert_close(s.cpu.adam_Bps, 0.9 * hw.cpu.adam_Bps, 1e-12);
	/* the GPU, the link (pageable copies too: the anchor has none) and the executor's factors stay */
	assert_memory_equal(&s.gpu, &hw.gpu, sizeof hw.gpu);
	assert_memory_equal(&s.link, &hw.link, sizeof hw.link);
	assert_int_equal(s.cpu.cores, hw.cpu.cores);
}

/* The anchor suite's shape (gpt2-large dpu 1 on 2, 4, 8 and 16 threads; micro-batch 2 to
 * keep it short) simulated on `there` as the measured runs of db. */
static void anchor_db(const char *db, const zb_hw *there)
{
	const zb_test_case cfg[] = { { "gpt2-large", "dpu", 2, 1, 2, 0 },
				     { "gpt2-large", "dpu", 2, 1, 4, 0 },
				     { "gpt2-large", "dpu", 2, 1, 8, 0 },
				     { "gpt2-large", "dpu", 2, 1, 16, 0 } };
	zb_test_measured_db(db, there, cfg, 4);
}

/* The anchor suite simulated on a host 10 % faster per core with 12 % less memory
 * bandwidth than *here (a profile), stored as db `name` in the test folder and loaded on
 * *here into *set. */
static void load_moved_anchor(const char *name, zb_hw *here, zb_kfit_set *set)
{
	zb_preset_default_hw(here);
	zb_test_adam_profile(here, 0.6);
	zb_hw there = *here;
	zb_kfit_host_apply(&there, 1.1, 0.88);
	char db[128];
	snprintf(db, sizeof db, "%s/%s", dir, name);
	anchor_db(db, &there);
	zb_error err;
	assert_int_equal(zb_kfit_load(db, 0, 2, here, set, &err), ZB_OK);
	assert_int_equal(set->n, 4);
}

static void test_fit(void **state)
{
	(void)state;
	zb_hw here;
	zb_kfit_set set;
	zb_error err;
	load_moved_anchor("anchor.db", &here, &set);
	zb_hw moved;
	zb_kfit_host h;
	assert_int_equal(zb_kfit_host_fit(&set, &here, &moved, &h, &err), ZB_OK);
	printf("host fitted: cpu x %.2f, memory x %.2f (simulated with 1.10, 0.88); MAPE %.2f%% -> %.2f%%\n", h.cpu,
	       h.mem, 100 * h.mape_before, 100 * h.mape);
	assert_int_equal(h.configs, 4);
	assert_true(h.mape_before > 0.02);
	assert_true(h.mape < 0.005);
	assert_close(h.cpu, 1.1, 0.02);
	assert_close(h.mem, 0.88, 0.025);
	assert_close(moved.cpu.adam_params_per_core, h.cpu * here.cpu.adam_params_per_core, 1e-12);
	zb_kfit_free(&set);
}

/* With a pageable configuration in the run (the anchor suite's fifth): it stays out of the
 * grid (the scales come out as without it), and the pageable terms come from its tasks on
 * the moved host, so that the moved profile predicts it. */
static void test_fit_pageable(void **state)
{
	(void)state;
	zb_hw here;
	zb_preset_default_hw(&here);
	zb_test_adam_profile(&here, 0.6);
	here.link.pageable_h2d_Bps = 5.5e9;
	here.gpu.exec.pageable_queue = 0.13;
	zb_hw there = here;
	zb_kfit_host_apply(&there, 1.1, 0.88);
	there.link.pageable_h2d_Bps = 7e9; /* lone uploads faster there, queued longer beside Adam */
	there.gpu.exec.pageable_queue = 0.4;
	char db[128];
	snprintf(db, sizeof db, "%s/anchor_pg.db", dir);
	/* the anchor suite's five: gpt2-large on 2, 4, 8 and 16 threads, gpt2-medium pageable */
	const zb_test_case cases[] = { { "gpt2-large", "dpu", 2, 1, 2, 0 },  { "gpt2-large", "dpu", 2, 1, 4, 0 },
				       { "gpt2-large", "dpu", 2, 1, 8, 0 },  { "gpt2-large", "dpu", 2, 1, 16, 0 },
				       { "gpt2-medium", "dpu", 4, 1, 8, 1 } };
	zb_error err;
	zb_test_measured_db(db, &there, cases, 5);
	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &here, &set, &err), ZB_OK);
	assert_int_equal(set.n, 5);
	zb_hw moved;
	zb_kfit_host h;
	assert_int_equal(zb_kfit_host_fit(&set, &here, &moved, &h, &err), ZB_OK);
	printf("host fitted: cpu x %.2f, memory x %.2f; pageable H2D %.2f GB/s alone (7), queue %.3f (0.4), %d copies\n",
	       h.cpu, h.mem, moved.link.pageable_h2d_Bps / 1e9, moved.gpu.exec.pageable_queue, h.pageable_copies);
	assert_int_equal(h.configs, 4);
	assert_int_equal(h.pageable, 1);
	assert_close(h.cpu, 1.1, 0.02);
	assert_close(h.mem, 0.88, 0.025);
	assert_true(fabs(moved.link.pageable_h2d_Bps / 7e9 - 1) < 0.03);
	assert_true(moved.gpu.exec.pageable_queue > 0.25);
	zb_kfit_pred pred[5];
	assert_int_equal(zb_kfit_predict(&set, &moved, pred, &err), ZB_OK);
	printf("pageable dpu: %+.2f %% on the moved profile\n", 100 * (pred[4].step_s / set.it[4].meas_step_s - 1));
	assert_true(fabs(pred[4].step_s / set.it[4].meas_step_s - 1) < 0.02);
	zb_kfit_free(&set);
}

/* Half-out on the run itself: the scales fitted on the 2- and 8-thread configurations
 * predict the 4- and 16-thread ones, and the other way round, within 1 % (the base's
 * MAPE: 3.5 %); fewer than four configurations: an error that says so. */
static void test_half_out(void **state)
{
	(void)state;
	zb_hw here;
	zb_kfit_set set;
	zb_error err;
	load_moved_anchor("half.db", &here, &set);
	zb_kfit_pred base[4], px[4];
	assert_int_equal(zb_kfit_predict(&set, &here, base, &err), ZB_OK);
	for (int k = 0; k < 4; k++)
		px[k].step_s = NAN;
	assert_int_equal(zb_kfit_host_half_out(&set, &here, px, &err), ZB_OK);
	zb_kfit_summary mb, mx;
	zb_kfit_summarize(&set, base, &mb);
	zb_kfit_summarize(&set, px, &mx);
	printf("half-out: MAPE %.2f%% worst %.2f%% (base %.2f%%)\n", 100 * mx.mape, 100 * mx.worst, 100 * mb.mape);
	assert_int_equal(mx.n, 4); /* every configuration predicted by the other half */
	assert_true(mb.mape > 0.02);
	assert_true(mx.worst < 0.01);
	set.n = 3;
	assert_int_equal(zb_kfit_host_half_out(&set, &here, px, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "4 configurations or more (3)"));
	set.n = 4;
	zb_kfit_free(&set);
}

/* The command: the profile written, the scales printed; --eval beside it: one line, exit 2. */
static void test_cli(void **state)
{
	(void)state;
	const char *zbench = getenv("ZBENCH") && *getenv("ZBENCH") ? getenv("ZBENCH") : "build/zbench";
	zb_hw here;
	zb_preset_default_hw(&here);
	zb_test_adam_profile(&here, 0.6);
	zb_hw there = here;
	zb_kfit_host_apply(&there, 0.9, 1.0);
	char db[128], base[128], out[128], args[640];
	snprintf(db, sizeof db, "%s/cli.db", dir);
	snprintf(base, sizeof base, "%s/base.json", dir);
	snprintf(out, sizeof out, "%s/moved.json", dir);
	anchor_db(db, &there);
	zb_error err;
	assert_int_equal(zb_hw_save(base, &here, &err), ZB_OK);
	snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --fit-host --out %s", db, base, out);
	zb_test_result r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "host: CPU Adam per core x 0.90, memory"));
	assert_non_null(strstr(r.out, "host fitted on half, other half    MAPE"));
	assert_null(strstr(r.out, "warning")); /* one round each: nothing to doubt */
	zb_test_result_free(&r);
	zb_hw moved;
	assert_int_equal(zb_hw_load(out, &moved, &err), ZB_OK);
	assert_close(moved.cpu.adam_params_per_core, 0.9 * here.cpu.adam_params_per_core, 0.021);
	unlink(out);
	/* a run of the 2-thread configuration measured twice, the second time on a host 20 %
	 * slower: its mean is uncertain by ~11 %, and the command says so */
	char noisy[128];
	snprintf(noisy, sizeof noisy, "%s/noisy.db", dir);
	zb_store *st;
	int64_t run;
	zb_test_open_run(noisy, &st, &run);
	zb_hw slow = there;
	zb_kfit_host_apply(&slow, 0.8, 1.0);
	for (int k = 0; k < 2; k++) {
		zb_config c;
		zb_test_fixture_config(&c, k ? &slow : &there, "gpt2-large", "dpu", 2);
		c.policy.ratio = 1;
		c.policy.cpu_threads = 2;
		c.steps = 5;
		zb_test_store_measured(st, run, &c);
	}
	assert_int_equal(zb_store_commit(st, &err), ZB_OK);
	zb_store_close(st);
	snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --fit-host --out %s", noisy, base, out);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "warning: the rounds of gpt2-large/dpu/r1/t2/"));
	zb_test_result_free(&r);
	unlink(out);
	snprintf(args, sizeof args, "calibrate --from-db %s --base %s --fit-host --eval %s --out %s", db, base, base, out);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "--fit-host with --eval"));
	assert_int_equal(access(out, F_OK), -1);
	zb_test_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_fit_pageable),
		cmocka_unit_test(test_half_out),
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
