/*
 * test_kfit_ranks.c - the replay of runs on several GPUs (analysis/kfit.h, "Several
 * ranks"; `zbench calibrate --from-db --all-runs`): every run's configurations load
 * with their ranks, and a collective's busy time is its transfer (the latest rank's
 * start to the ranks' mean end), not the slowest rank's stream occupancy, which
 * includes its wait for the other rank.
 */
#include "tests/harness.h"
#include "tests/ranks_fixture.h"
#include "tests/kfit_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "results/store.h"
#include "results/store_ranks.h"
#include "sim/predict.h"

static zb_config two_ranks(void)
{
	zb_config c;
	zb_error err;
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw("h200-x2", &c.hw, &err), ZB_OK);
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.kind = ZB_POLICY_NONE;
	c.policy.micro_batch = 2;
	c.policy.seq = 256;
	c.policy.gpus = 2;
	c.steps = 5;
	return c;
}

static void test_transfer_not_occupancy(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/r.db", dir);
	zb_store *s;
	zb_error err;
	zb_config c = two_ranks();
	assert_int_equal(zb_store_open(&s, db, 1000, &err), ZB_OK);
	assert_int_equal(zb_store_begin(s, &err), ZB_OK);
	zb_test_store_ranks_run_early(s, &c, 0);
	zb_test_store_ranks_run_early(s, &c, 50e-6);
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);

	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &c.hw, &set, &err), ZB_OK);
	assert_int_equal(set.n, 1); /* the newest run only */
	zb_kfit_free(&set);
	assert_int_equal(zb_kfit_load(db, -1, 2, &c.hw, &set, &err), ZB_OK);
	assert_int_equal(set.n, 2); /* every run */
	zb_kfit_pred pred[2];
	assert_int_equal(zb_kfit_predict(&set, &c.hw, pred, &err), ZB_OK);
	int per_step = 0;
	for (size_t i = 0; i < set.it[1].g.ntasks; i++)
		per_step += set.it[1].g.tasks[i].resource == ZB_RES_COMM && set.it[1].g.tasks[i].step == 3;
	assert_true(per_step > 0);
	assert_true(strstr(set.it[0].key, "/g2x1/") != NULL);
	for (int k = 0; k < 2; k++) {
		const zb_kfit_item *x = &set.it[k];
		assert_int_equal(x->g.ranks, 2);
		/* the transfer is the simulated busy time, whatever rank 0 waited */
		assert_close(x->meas_busy_s[ZB_RES_COMM], pred[k].busy_s[ZB_RES_COMM], 1e-6);
		assert_close(pred[k].step_s, x->meas_step_s, 1e-6);
	}
	assert_close(set.it[0].meas_comm_raw_s, set.it[0].meas_busy_s[ZB_RES_COMM], 1e-6);
	/* the second run's slowest rank waited 50 us in every collective */
	assert_close(set.it[1].meas_comm_raw_s - set.it[1].meas_busy_s[ZB_RES_COMM], per_step * 50e-6, 0.02);
	zb_kfit_free(&set);

	/* replayed over a machine with no fabric, the 2-rank runs cannot be rebuilt: the
	 * error says so and why, not that nothing was measured */
	zb_hw single;
	assert_int_equal(zb_preset_hw("h200-machine", &single, &err), ZB_OK);
	assert_int_equal(zb_kfit_load(db, -1, 2, &single, &set, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "every run of"));
	assert_non_null(strstr(err.msg, "2 measured configurations could not be rebuilt"));
	assert_non_null(strstr(err.msg, "fabric"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transfer_not_occupancy),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
