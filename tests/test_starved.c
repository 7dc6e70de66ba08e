/*
 * test_starved.c - the GPU's starvation beside CPU Adam on every core (execprofile.h
 * starved, one form: the GPU compute stream's rate): it slows the step while Adam runs and
 * changes nothing when Adam leaves a core free; runs on several ranks simulated with a known
 * rate give it back through the step fit (analysis/kfit_starved.h); `zbench calibrate
 * --fit-starved` prints in-sample, half-out and leave-one-out rows, writes the value and
 * refuses other fits beside it.
 */
#include "tests/harness.h"
#include "tests/ranks_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit.h"
#include "analysis/kfit_starved.h"
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

static zb_config ranks(int gpus, zb_policy_kind kind, double ratio, double rate)
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
	c.hw.gpu.exec.starved = rate;
	return c;
}

/* Adam on every core slows the step; with Adam's threads short of the cores nothing changes. */
static void test_engine_rate(void **state)
{
	(void)state;
	zb_config c = ranks(2, ZB_POLICY_OVERLAP, 1, 0.7);
	zb_prediction p;
	zb_error err;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	double with = p.res.step_time_s;
	zb_prediction_free(&p);
	c.hw.gpu.exec.starved = 0;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.res.step_time_s < with);
	zb_prediction_free(&p);
	/* 4 threads per rank on 32 cores: no starvation, the rate never applies */
	c.policy.cpu_threads = 4;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	double free_cores = p.res.step_time_s;
	zb_prediction_free(&p);
	c.hw.gpu.exec.starved = 0.7;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.res.step_time_s == free_cores);
	zb_prediction_free(&p);
}

static void make_db(const char *db, double rate)
{
	zb_config cs[3] = { ranks(2, ZB_POLICY_OVERLAP, 1, rate), ranks(2, ZB_POLICY_DPU, 1, rate),
			    ranks(2, ZB_POLICY_NONE, 1, rate) };
	zb_store *s;
	zb_error err;
	assert_int_equal(zb_store_open(&s, db, 1000, &err), ZB_OK);
	assert_int_equal(zb_store_begin(s, &err), ZB_OK);
	for (int i = 0; i < 3; i++)
		zb_test_store_ranks_run(s, &cs[i]);
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);
}

/* Runs simulated with a rate of 0.7 give it back from 1; `none` does not count. */
static void test_rate_recovered(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/s.db", dir);
	make_db(db, 0.7);
	zb_config c = ranks(2, ZB_POLICY_OVERLAP, 1, 0);
	zb_kfit_set set;
	zb_error err;
	assert_int_equal(zb_kfit_load(db, -1, 2, &c.hw, &set, &err), ZB_OK);
	assert_int_equal(set.n, 3);
	zb_hw hw = c.hw;
	zb_kfit_starved_stats st;
	assert_int_equal(zb_kfit_starved_steps(&set, NULL, &hw, &st, &err), ZB_OK);
	printf("starved from the steps: %.4f (simulated with 0.7), rms %.4f\n", hw.gpu.exec.starved, st.rms);
	assert_int_equal(st.n, 2);
	assert_close(hw.gpu.exec.starved, 0.7, 0.01);
	assert_true(st.rms < 0.01);
	/* none of the used items: unchanged */
	unsigned char use[3] = { 0, 0, 1 };
	hw = c.hw;
	assert_int_equal(zb_kfit_starved_steps(&set, use, &hw, &st, &err), ZB_OK);
	assert_int_equal(st.n, 0);
	assert_true(hw.gpu.exec.starved == c.hw.gpu.exec.starved);
	zb_kfit_free(&set);
}

static void test_cli(void **state)
{
	(void)state;
	char db[128], out[128], cmd[512];
	snprintf(db, sizeof db, "%s/s.db", dir);
	snprintf(out, sizeof out, "%s/fit.json", dir);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --all-runs --fit-starved --base %s/x2.json --out %s", zbench,
		 db, dir, out);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[1024];
	int rows = 0, head = 0;
	while (fgets(line, sizeof line, p)) {
		rows += !strncmp(line, "leave-one-out  step MAPE", 24) + !strncmp(line, "half-out       step MAPE", 24) +
			!strncmp(line, "in-sample      step MAPE", 24);
		head += strstr(line, "read from the") != NULL;
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(rows, 3);
	assert_int_equal(head, 1);
	zb_hw hw;
	zb_error err;
	assert_int_equal(zb_hw_load(out, &hw, &err), ZB_OK);
	assert_close(hw.gpu.exec.starved, 0.7, 0.01);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --fit-starved --fit-adam >/dev/null 2>&1", zbench, db);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s calibrate --from-db %s --fit-starved --eval %s/x2.json >/dev/null 2>&1", zbench, db, dir);
	assert_int_not_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_rate),
		cmocka_unit_test(test_rate_recovered),
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
