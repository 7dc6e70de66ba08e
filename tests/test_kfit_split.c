/*
 * test_kfit_split.c - the held-out check (analysis/kfit_split.h): split rules parse, or fail
 * with one line naming the term; a fit on what a rule leaves in gives back the factors the
 * "measured" timelines were simulated with and predicts the held-out configurations and
 * another database's unseen ones as simulated; `zbench calibrate --from-db --holdout
 * --judge-db` end to end (the table, the JSON, the profile written, its errors).
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
#include "analysis/kfit_split.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

static void test_rule(void **state)
{
	(void)state;
	zb_kfit_rule r;
	zb_error err;
	assert_int_equal(zb_kfit_rule_parse("model:gpt2-large,policy:overlap,threads:8,paced,pageable", &r, &err), ZB_OK);
	assert_int_equal(r.n, 5);
	zb_config c;
	zb_hw hw;
	zb_preset_default_hw(&hw);
	zb_test_fixture_config(&c, &hw, "gpt2-medium", "dpu", 4);
	c.policy.cpu_threads = 4;
	assert_false(zb_kfit_rule_holds_out(&r, &c));
	c.policy.cpu_threads = 8;
	assert_true(zb_kfit_rule_holds_out(&r, &c));
	c.policy.cpu_threads = 4;
	c.policy.kind = ZB_POLICY_OVERLAP;
	assert_true(zb_kfit_rule_holds_out(&r, &c));
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.link_rate_Bps = 12e9;
	assert_true(zb_kfit_rule_holds_out(&r, &c));
	/* a bare name is a model, as --holdout <model> was */
	assert_int_equal(zb_kfit_rule_parse("gpt2-medium", &r, &err), ZB_OK);
	c.policy.link_rate_Bps = 0;
	assert_true(zb_kfit_rule_holds_out(&r, &c));
	const struct { const char *rule, *msg; } bad[] = {
		{ "size:big", "unknown term 'size:big'" }, { "model:", "term 'model:' needs a value" },
		{ "gpt2-large,,dpu", "an empty term" }, { "policy:fast", "unknown policy 'fast'" },
		{ "threads:0", "threads must be a count" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(zb_kfit_rule_parse(bad[i].rule, &r, &err), ZB_E_INPUT);
		if (!strstr(err.msg, bad[i].msg))
			print_error("%s: %s\n", bad[i].rule, err.msg);
		assert_non_null(strstr(err.msg, bad[i].msg));
	}
}

/* gpt2-medium dpu and overlap on all the cores and dpu on half of them, gpt2-large dpu on all
 * (with `large`), simulated on truth as the measured runs of db. */
static void make_db(const char *db, const zb_hw *truth, int large)
{
	int all = truth->cpu.cores, half = all / 2;
	const zb_test_case cfg[] = {
		{ "gpt2-medium", "dpu", 4, 1, all, 0 },  { "gpt2-medium", "dpu", 4, 0.5, all, 0 }, { "gpt2-medium", "overlap", 4, 1, all, 0 },
		{ "gpt2-medium", "dpu", 4, 1, half, 0 }, { "gpt2-large", "dpu", 4, 1, all, 0 },
	};
	zb_test_measured_db(db, truth, cfg, 5 - !large);
}

/* Fitted on gpt2-medium, judged on gpt2-large (held out) and on a second database holding
 * one configuration the fit saw and gpt2-large again: the CPU Adam curve comes back, the
 * unseen ones are predicted as simulated, the seen one is not judged. */
static void test_holdout(void **state)
{
	(void)state;
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_test_adam_profile(&truth, 0.6);
	char db[128], db2[128];
	snprintf(db, sizeof db, "%s/split.db", dir);
	snprintf(db2, sizeof db2, "%s/judge.db", dir);
	make_db(db, &truth, 1);
	const zb_test_case other[] = { { "gpt2-medium", "dpu", 4, 1, truth.cpu.cores, 0 },
				       { "gpt2-large", "dpu", 4, 1, truth.cpu.cores, 0 } };
	zb_test_measured_db(db2, &truth, other, 2);
	zb_error err;
	{ /* a later run without measured tasks (a predict upgrading the schema adds one) is passed over */
		zb_store *st;
		int64_t run;
		zb_test_open_run(db2, &st, &run);
		assert_int_equal(zb_store_commit(st, &err), ZB_OK);
		zb_store_close(st);
	}
	zb_kfit_set s, j;
	assert_int_equal(zb_kfit_load(db, 0, 2, &truth, &s, &err), ZB_OK);
	assert_int_equal(zb_kfit_load(db2, 0, 2, &truth, &j, &err), ZB_OK);
	zb_kfit_rule r;
	assert_int_equal(zb_kfit_rule_parse("model:gpt2-large", &r, &err), ZB_OK);
	zb_kfit_holdout h;
	assert_int_equal(zb_kfit_holdout_run(&s, &j, &r, &truth, &h, &err), ZB_OK);
	assert_int_equal(h.fit_n, 4);
	assert_int_equal(h.held_n, 1);
	assert_int_equal(h.judge_n, 1); /* gpt2-large; the gpt2-medium one was fitted on */
	assert_false(h.judged[0]);
	assert_true(h.judged[1]);
	printf("held-out fit: adam_thread %.4f adam_mem %.4f (simulated with 1.1, 1.6); held-out MAPE %.3f%% over %d\n",
	       h.fitted.gpu.exec.adam_thread, h.fitted.gpu.exec.adam_mem, 100 * h.held_out.mape, h.held_out.n);
	assert_close(h.fitted.gpu.exec.adam_thread, 1.1, 0.01);
	assert_close(h.fitted.gpu.exec.adam_mem, 1.6, 0.01);
	assert_int_equal(h.held_out.n, 2); /* two runs: not merged as rounds of one */
	assert_true(h.held_out.mape < 0.02);
	assert_int_equal(h.in_sample.n, 4);
	assert_int_equal(h.nfam, 2); /* model gpt2-large, policy dpu */
	assert_string_equal(h.fam[0].name, "model gpt2-large");
	assert_string_equal(h.fam[1].name, "policy dpu");
	zb_kfit_holdout_free(&h);
	/* a rule that holds out nothing, or everything, is one line */
	assert_int_equal(zb_kfit_rule_parse("model:nosuch", &r, &err), ZB_OK);
	assert_int_equal(zb_kfit_holdout_run(&s, NULL, &r, &truth, &h, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "--holdout model:nosuch: no configuration is held out"));
	zb_kfit_holdout_free(&h);
	assert_int_equal(zb_kfit_rule_parse("policy:dpu,policy:overlap", &r, &err), ZB_OK);
	assert_int_equal(zb_kfit_holdout_run(&s, NULL, &r, &truth, &h, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "every configuration is held out"));
	zb_kfit_holdout_free(&h);
	zb_kfit_free(&s);
	zb_kfit_free(&j);
}

/* `zbench calibrate --from-db` end to end: --holdout with --judge-db in the JSON, the profile
 * written is the held-out fit; bad rules and --judge-db alone are one line and exit 2,
 * nothing written. */
static void test_calibrate_cli(void **state)
{
	(void)state;
	const char *zbench = getenv("ZBENCH") && *getenv("ZBENCH") ? getenv("ZBENCH") : "build/zbench";
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_test_adam_profile(&truth, 0.6);
	zb_error err;
	char db[128], db2[128], base_file[128], out[128], args[1024];
	snprintf(db, sizeof db, "%s/cli.db", dir);
	snprintf(db2, sizeof db2, "%s/cli2.db", dir);
	snprintf(base_file, sizeof base_file, "%s/base.json", dir);
	snprintf(out, sizeof out, "%s/fit.json", dir);
	make_db(db, &truth, 1);
	const zb_test_case other[] = { { "gpt2-large", "overlap", 4, 1, truth.cpu.cores, 0 } };
	zb_test_measured_db(db2, &truth, other, 1);
	assert_int_equal(zb_hw_save(base_file, &truth, &err), ZB_OK);
	snprintf(args, sizeof args,
		 "calibrate --from-db %s --warmup 2 --base %s --out %s --holdout model:gpt2-large,threads:%d --judge-db %s "
		 "--json", db, base_file, out, truth.cpu.cores / 2, db2);
	zb_test_result r = zb_test_run(zbench, dir, args);
	if (r.rc != 0)
		print_error("%s: exit %d: %s\n", args, r.rc, r.err);
	assert_int_equal(r.rc, 0);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	assert_non_null(j);
	json_t *h = json_object_get(j, "holdout");
	assert_string_equal(json_string_value(json_object_get(h, "rule")), "model:gpt2-large,threads:8");
	assert_int_equal(json_integer_value(json_object_get(h, "fit_configs")), 3);
	assert_int_equal(json_integer_value(json_object_get(h, "held_out_configs")), 2);
	assert_int_equal(json_integer_value(json_object_get(h, "judged_configs")), 1);
	json_t *ho = json_object_get(h, "held_out");
	assert_int_equal(json_integer_value(json_object_get(ho, "configs")), 3);
	assert_true(json_real_value(json_object_get(ho, "mape")) < 0.02);
	assert_non_null(json_object_get(json_object_get(h, "families"), "model gpt2-large"));
	assert_int_equal(json_array_size(json_object_get(h, "judged")), 1);
	int held = 0;
	json_t *cfgs = json_object_get(j, "configs");
	for (size_t i = 0; i < json_array_size(cfgs); i++)
		held += json_is_true(json_object_get(json_array_get(cfgs, i), "held_out"));
	assert_int_equal(held, 2);
	json_decref(j);
	zb_test_result_free(&r);
	zb_hw fitted;
	assert_int_equal(zb_hw_load(out, &fitted, &err), ZB_OK);
	assert_close(fitted.gpu.exec.adam_thread, 1.1, 0.01); /* the held-out fit's, gpt2-medium on all cores */
	/* the table: a row per held-out and judged configuration, and the summaries */
	snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --out %s --holdout gpt2-large", db,
		 base_file, out);
	r = zb_test_run(zbench, dir, args);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "# --holdout gpt2-large: fitted on 4 configurations, judged on 1 held out"));
	assert_non_null(strstr(r.out, "held out (1 + 0 judged)"));
	assert_non_null(strstr(r.out, "held out, model gpt2-large"));
	zb_test_result_free(&r);
	remove(out);
	const struct { const char *extra, *msg; } bad[] = {
		{ "--holdout nosuch", "--holdout nosuch: no configuration is held out" },
		{ "--holdout size:big", "unknown term 'size:big'" },
		{ "--judge-db x.db", "--judge-db x.db: needs --holdout" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(args, sizeof args, "calibrate --from-db %s --warmup 2 --base %s --out %s %s", db, base_file, out,
			 bad[i].extra);
		r = zb_test_run(zbench, dir, args);
		assert_int_equal(r.rc, 2);
		if (!strstr(r.err, bad[i].msg))
			print_error("%s: %s\n", bad[i].extra, r.err);
		assert_non_null(strstr(r.err, bad[i].msg));
		assert_int_equal(access(out, F_OK), -1);
		zb_test_result_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_holdout),
		cmocka_unit_test(test_calibrate_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
