/*
 * kfit_fixture.h - "measured" runs for the calibration tests (test_kfit, test_adam_copy,
 * test_adam_launch), and the set-up of their rate tests:
 * a database with one validate run whose configurations' measured timelines are their own
 * simulations, so that a fit must give back the factors they were simulated with.
 * Header-only, like harness.h; include after it.
 */
#ifndef ZB_TEST_KFIT_FIXTURE_H
#define ZB_TEST_KFIT_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "inputs/hwfile.h" /* zb_config_to_json */
#include "inputs/presets.h"
#include "results/store.h"
#include "sim/predict.h"

/* The test group's scratch folder: made by setup, removed with its databases by teardown. */
static char dir[64];

static int setup(void **state)
{
	(void)state;
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Open (create) db and start one validate run in a transaction: *s and *run. */
static inline void zb_test_open_run(const char *db, zb_store **s, int64_t *run)
{
	zb_error err;
	zb_run_info info = { .kind = "validate", .command = "test", .version = "t", .git_commit = "" };
	assert_int_equal(zb_store_open(s, db, 1000, &err), ZB_OK);
	assert_int_equal(zb_store_begin(*s, &err), ZB_OK);
	assert_int_equal(zb_store_add_run(*s, &info, run, &err), ZB_OK);
}

/* A configuration of the fixture: hw, a model preset, a policy by name, micro-batch mb;
 * the rest zbench's defaults. */
static inline void zb_test_fixture_config(zb_config *c, const zb_hw *hw, const char *model, const char *policy,
					  int mb)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	c->hw = *hw;
	assert_int_equal(zb_preset_model(model, &c->model, &err), ZB_OK);
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_policy_parse(policy, &c->policy.kind, &err), ZB_OK);
	c->policy.micro_batch = mb;
}

/* zbench's default machine, model and policy, one step: the set-up of the rate tests. */
static inline void zb_test_default_config(zb_config *c)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_preset_default_model(&c->model);
	zb_policy_defaults(&c->policy);
	c->steps = 1;
}

/* hw's executor profile: neutral but for the CPU Adam curve (adam_thread 1.1, adam_mem 1.6),
 * the DRAM queue (h2d_queue 0.16) and adam_copy k. */
static inline void zb_test_adam_profile(zb_hw *hw, double k)
{
	zb_exec_profile *p = &hw->gpu.exec;
	zb_exec_profile_neutral(p);
	p->set = 1;
	p->adam_thread = 1.1;
	p->adam_mem = 1.6;
	p->h2d_queue = 0.16;
	p->adam_copy = k;
}

/* Store config c's schedule with its simulated timeline as the "measured" one. */
static inline void zb_test_store_measured(zb_store *s, int64_t run, const zb_config *c)
{
	zb_prediction p;
	zb_error err;
	assert_int_equal(zb_predict(&p, c, &err), ZB_OK);
	assert_true(p.simulated);
	char *json = zb_config_to_json(c);
	int64_t id;
	assert_int_equal(zb_store_add_config(s, run, c, json, &id, &err), ZB_OK);
	assert_int_equal(zb_store_add_tasks(s, id, &p.graph, &err), ZB_OK);
	assert_int_equal(zb_store_add_events(s, id, "measured", &p.graph, p.res.start, p.res.end, &err), ZB_OK);
	free(json);
	zb_prediction_free(&p);
}

/* One configuration of a fixture run: a model preset, a policy by name, micro-batch,
 * ratio and CPU threads (0 each: zbench's default), pageable copies or not, 5 steps. */
typedef struct zb_test_case {
	const char *model, *policy;
	int mb;
	double ratio;
	int threads;
	int pageable;
} zb_test_case;

/* db with one validate run of the n cases on hw, each "measured" as simulated. */
static inline void zb_test_measured_db(const char *db, const zb_hw *hw, const zb_test_case *cases, int n)
{
	zb_store *s;
	zb_error err;
	int64_t run;
	zb_test_open_run(db, &s, &run);
	for (int i = 0; i < n; i++) {
		zb_config c;
		zb_test_fixture_config(&c, hw, cases[i].model, cases[i].policy, cases[i].mb);
		if (cases[i].ratio > 0)
			c.policy.ratio = cases[i].ratio;
		if (cases[i].threads > 0)
			c.policy.cpu_threads = cases[i].threads;
		c.policy.pageable = cases[i].pageable;
		c.steps = 5;
		zb_test_store_measured(s, run, &c);
	}
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);
}

#endif
