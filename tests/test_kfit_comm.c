/*
 * test_kfit_comm.c - comm_gpu and comm_opt fitted from runs on several GPUs
 * (analysis/kfit_comm.h): runs whose "measured" timelines are simulations with known
 * factors give those factors back from other starting values; a set without several
 * ranks fits nothing; the same for CPU Adam's adam_mem (kfit_adam.h); `zbench calibrate
 * --fit-comm` prints in-sample, half-out and leave-one-out rows and refuses what it
 * cannot do.
 */
#include "tests/harness.h"
#include "tests/ranks_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit.h"
#include "analysis/kfit_adam.h"
#include "analysis/kfit_comm.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "results/store.h"
#include "results/store_ranks.h"
#include "sim/predict.h"

static char dir[64];
static const char *zbench;

static int setup(void **state)
{
	(void)state;
	return zb_test_cli_setup_x2(&zbench, dir, sizeof dir) ? 1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return zb_test_cli_teardown(dir);
}

static zb_config ranks(int gpus, zb_policy_kind kind, double ratio)
{
	zb_config c;
	zb_error err;
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw("h200-x2", &c.hw, &err), ZB_OK);
	zb_exec_profile_h200(&c.hw.gpu.exec); /* the overlay of x2.json */
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.kind = kind;
	c.policy.ratio = ratio;
	c.policy.micro_batch = 2;
	c.policy.seq = 256;
	c.policy.gpus = gpus;
	c.steps = 5;
	return c;
}

static void make_db(const char *db, const zb_config *cs, int n)
{
	zb_store *s;
	zb_error err;
	assert_int_equal(zb_store_open(&s, db, 1000, &err), ZB_OK);
	assert_int_equal(zb_store_begin(s, &err), ZB_OK);
	for (int i = 0; i < n; i++)
		zb_test_store_ranks_run(s, &cs[i]);
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);
}

static void test_factors_recovered(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/c.db", dir);
	zb_config cs[3] = { ranks(2, ZB_POLICY_NONE, 1), ranks(2, ZB_POLICY_OVERLAP, 1), ranks(2, ZB_POLICY_OVERLAP, 0.5) };
	for (int i = 0; i < 3; i++) {
		cs[i].hw.gpu.exec.comm_gpu = 0.5;
		cs[i].hw.gpu.exec.comm_opt = 0.4;
	}
	make_db(db, cs, 3);
	zb_hw base = cs[0].hw;
	base.gpu.exec.comm_gpu = 0.9;
	base.gpu.exec.comm_opt = 0; /* "1" */
	zb_kfit_set set;
	zb_error err;
	assert_int_equal(zb_kfit_load(db, -1, 2, &base, &set, &err), ZB_OK);
	assert_int_equal(set.n, 3);
	zb_hw hw = base;
	zb_kfit_comm_stats st;
	assert_int_equal(zb_kfit_comm(&set, NULL, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 3);
	assert_true(st.fit_gpu);
	assert_close(hw.gpu.exec.comm_gpu, 0.5, 0.02);
	if (st.fit_opt)
		assert_close(hw.gpu.exec.comm_opt, 0.4, 0.05);
	else
		assert_true(hw.gpu.exec.comm_opt == 0);
	assert_true(st.rms < 0.01);
	/* one item only: the same answer from it */
	unsigned char use[3] = { 0, 1, 0 };
	hw = base;
	assert_int_equal(zb_kfit_comm(&set, use, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 1);
	assert_close(hw.gpu.exec.comm_gpu, 0.5, 0.02);
	zb_kfit_free(&set);
}

/* adam_mem (kfit_adam.h) the same way: runs simulated with 1.2 give 1.2 back from 1.61 */
static void test_adam_mem_recovered(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/a.db", dir);
	zb_config cs[2] = { ranks(2, ZB_POLICY_OVERLAP, 1), ranks(2, ZB_POLICY_OFFLOAD, 1) };
	for (int i = 0; i < 2; i++)
		cs[i].hw.gpu.exec.adam_mem = 1.2;
	make_db(db, cs, 2);
	zb_hw base = cs[0].hw;
	base.gpu.exec.adam_mem = 1.61;
	zb_kfit_set set;
	zb_error err;
	assert_int_equal(zb_kfit_load(db, -1, 2, &base, &set, &err), ZB_OK);
	zb_hw hw = base;
	zb_kfit_adam_stats st;
	assert_int_equal(zb_kfit_adam_mem(&set, NULL, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 2);
	assert_close(hw.gpu.exec.adam_mem, 1.2, 0.01);
	assert_true(st.rms < 0.01);
	/* without a CPU Adam curve there is nothing to scale */
	hw = base;
	hw.gpu.exec.adam_thread = 0;
	assert_int_equal(zb_kfit_adam_mem(&set, NULL, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 0);
	assert_true(hw.gpu.exec.adam_mem == 1.61);
	zb_kfit_free(&set);
}

static void test_one_rank_fits_nothing(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/one.db", dir);
	zb_config c = ranks(1, ZB_POLICY_OVERLAP, 1);
	make_db(db, &c, 1);
	zb_kfit_set set;
	zb_error err;
	assert_int_equal(zb_kfit_load(db, -1, 2, &c.hw, &set, &err), ZB_OK);
	zb_hw hw = c.hw;
	zb_kfit_comm_stats st;
	assert_int_equal(zb_kfit_comm(&set, NULL, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 0);
	assert_true(hw.gpu.exec.comm_gpu == c.hw.gpu.exec.comm_gpu && hw.gpu.exec.comm_opt == c.hw.gpu.exec.comm_opt);
	zb_kfit_free(&set);
	/* the command says why and writes nothing */
	char cmd[512], out[128];
	snprintf(out, sizeof out, "%s/none.json", dir);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --all-runs --fit-comm --base %s/x2.json --out %s >/dev/null 2>&1",
		 zbench, db, dir, out);
	assert_int_not_equal(system(cmd), 0);
	FILE *f = fopen(out, "r");
	assert_null(f);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --fit-comm --eval %s/x2.json >/dev/null 2>&1", zbench, db, dir);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --fit-comm --fit-adam >/dev/null 2>&1", zbench, db);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --all-runs --fit-adam --base %s/x2.json --out %s >/dev/null 2>&1",
		 zbench, db, dir, out);
	assert_int_not_equal(system(cmd), 0);
	f = fopen(out, "r");
	assert_null(f);
}

static void test_cli_rows(void **state)
{
	(void)state;
	char db[128], out[128], cmd[512];
	snprintf(db, sizeof db, "%s/c.db", dir);
	snprintf(out, sizeof out, "%s/fit.json", dir);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --all-runs --fit-comm --base %s/x2.json --out %s", zbench,
		 db, dir, out);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[512];
	int loo = 0, half = 0, ins = 0;
	while (fgets(line, sizeof line, p)) {
		loo += !strncmp(line, "leave-one-out  step MAPE", 24);
		half += !strncmp(line, "half-out       step MAPE", 24);
		ins += !strncmp(line, "in-sample      step MAPE", 24);
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(loo + half + ins, 3);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_factors_recovered),
		cmocka_unit_test(test_adam_mem_recovered),
		cmocka_unit_test(test_one_rank_fits_nothing),
		cmocka_unit_test(test_cli_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
