/*
 * test_kfit.c - the executor profile (core/execprofile.h, sim/kernels.h) and its fit
 * from measured tasks (analysis/kfit.h): the file format round trip, errors naming the
 * key, the class factors in task times, the CPU Adam thread curve, and a fit that
 * recovers known factors from a database whose "measured" timelines were simulated
 * with them.
 */
#include "tests/harness.h"
#include "tests/kfit_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/kfit.h"
#include "analysis/kfit_eval.h"
#include "analysis/kfit_starved.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "results/store.h"
#include "validate/suite.h"
#include "sim/engine.h"
#include "core/attention.h"
#include "sim/kernels.h"
#include "sim/predict.h"
#include "sim/resources.h"

/* The fixture's accuracy with the h200-machine preset (BENCHMARKS.md), with margin. */
#define MAPE_PRESET 0.065 /* measured 5.96 % with the profile fitted on another day's fid suite
			   * (3.98 % with the one fitted on this fixture's own day: the host behind the
			   * machine moves, kfit_host.h) */
#define WORST_PRESET 0.09 /* measured 8.05 % */

/* A profile given in a file survives save and load; the preset's reads back by name. */
static void test_round_trip(void **state)
{
	zb_hw hw, back;
	zb_preset_default_hw(&hw);
	assert_int_equal(hw.gpu.exec.set, 0); /* a preset is first principles alone */
	zb_exec_profile_h200(&hw.gpu.exec);    /* the built-in fit, as "executor": "h200" names it */
	char path[128];
	snprintf(path, sizeof path, "%s/hw.json", dir);
	zb_error err;
	assert_int_equal(zb_hw_save(path, &hw, &err), ZB_OK);
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_OK);
	assert_memory_equal(&hw.gpu.exec, &back.gpu.exec, sizeof hw.gpu.exec);
	char *text = zb_test_slurp(path, NULL);
	assert_contains(text, "\"executor\": \"h200\"");
	free(text);
	zb_exec_profile_neutral(&hw.gpu.exec);
	hw.gpu.exec.set = 1;
	hw.gpu.exec.gemm[ZB_GEMM_UNALIGNED] = 0.25;
	hw.gpu.exec.kernel[ZB_KERN_SOFTMAX_FWD] = 0.5;
	hw.gpu.exec.starved = 0.75;
	hw.gpu.exec.comm_wait = 1;
	hw.gpu.exec.adam_thread = 1.25;
	assert_int_equal(zb_hw_save(path, &hw, &err), ZB_OK);
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_OK);
	assert_memory_equal(&hw.gpu.exec, &back.gpu.exec, sizeof hw.gpu.exec);
}

static void bad(const char *json, const char *want)
{
	char path[128];
	snprintf(path, sizeof path, "%s/bad.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"preset\": \"h200-machine\", \"executor\": %s}", json);
	fclose(f);
	zb_hw hw;
	zb_error err = { 0 };
	assert_int_equal(zb_hw_load(path, &hw, &err), ZB_E_INPUT);
	assert_contains(err.msg, want);
}

static void test_bad_files(void **state)
{
	bad("{\"gemm\": {\"dense\": 11}}", "executor.gemm.dense 11 out of range");
	bad("{\"gemm\": {\"sparse\": 1}}", "unknown key 'executor.gemm.sparse' (known: dense, batched");
	bad("{\"gemm\": {\"dense_fwd\": 1}}", "'executor.gemm.dense_fwd' is no longer a factor (now one per group");
	bad("{\"kernel\": {\"norm1_fwd\": 1}}", "unknown key 'executor.kernel.norm1_fwd' (known: stream,");
	bad("{\"comm_wait\": 0.5}", "'executor.comm_wait' must be true or false");
	bad("{\"kernel\": {\"softmax_fwd\": \"fast\"}}", "'executor.kernel.softmax_fwd' must be a number");
	bad("{\"starved\": 2}", "executor.starved 2 out of range");
	bad("{\"warp\": 1}", "unknown key 'executor.warp'");
	bad("\"a100\"", "must be an object or \"h200\"");
}

/* Task times: a class factor divides the work; the neutral profile is the plain model. */
static void test_class_factors(void **state)
{
	zb_config c;
	zb_test_default_config(&c);
	zb_task gemm = zb_task_blank(ZB_TASK_GEMM, ZB_RES_GPU, ZB_OP_LMHEAD, ZB_PASS_BWD_DATA, 0, 0, 1);
	gemm.m = 1280, gemm.n = 4096, gemm.k = 50257, gemm.batch = 1;
	gemm.flops = 2.0 * gemm.m * gemm.n * gemm.k;
	assert_int_equal(zb_exec_gemm_group(&gemm), ZB_GEMM_UNALIGNED);
	zb_exec_profile_neutral(&c.hw.gpu.exec);
	c.hw.gpu.exec.set = 1;
	double fixed, plain, slow;
	zb_task_flow(&gemm, &c, &fixed, &plain);
	c.hw.gpu.exec.gemm[ZB_GEMM_UNALIGNED] = 0.25;
	c.hw.gpu.exec.launch_s = 7e-6;
	zb_task_flow(&gemm, &c, &fixed, &slow);
	assert_close(slow, 4 * plain, 1e-12);
	assert_close(fixed, 7e-6, 1e-12);
	/* another framework's schedule: no executor profile */
	c.framework = ZB_FW_DEEPSPEED;
	assert_null(zb_exec_profile_for(&c, NULL));
}

/* CPU Adam: 1 / rate = 1 / (t x thread x per-core) + 1 / (mem x ceiling). */
static void test_adam_curve(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_preset_default_model(&c.model);
	zb_policy_defaults(&c.policy);
	zb_exec_profile_neutral(&c.hw.gpu.exec);
	c.hw.gpu.exec.set = 1;
	c.hw.gpu.exec.adam_thread = 1.1;
	c.hw.gpu.exec.adam_mem = 1.6;
	c.hw.cpu.dram_Bps = 1e13; /* not the limit here */
	double per = c.hw.cpu.adam_params_per_core * 1.1, mem = c.hw.cpu.adam_Bps / 28 * 1.6;
	for (int t = 1; t <= 16; t *= 2) {
		c.policy.cpu_threads = t;
		assert_close(zb_cpu_adam_Bps(&c) / 28, 1 / (1 / (t * per) + 1 / mem), 1e-12);
	}
}

/* Host DRAM under the queue model (kernels.h zb_exec_dram): D2H keeps its rate, H2D
 * slows by 1 + k u / (1 - u), Adam gets the rest; without h2d_queue the proportional
 * share of resources.c is unchanged. */
static void test_dram_queue(void **state)
{
	zb_config c;
	zb_test_default_config(&c);
	zb_exec_profile_neutral(&c.hw.gpu.exec);
	c.hw.gpu.exec.set = 1;
	c.hw.gpu.exec.adam_thread = 1.1;
	c.hw.gpu.exec.adam_mem = 1.6;
	zb_task adam = zb_task_blank(ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, 0, 0, 1);
	zb_task down = zb_task_blank(ZB_TASK_COPY, ZB_RES_D2H, ZB_OP_GRAD_DOWN, ZB_PASS_OPT, 0, 0, 1);
	zb_task up = zb_task_blank(ZB_TASK_COPY, ZB_RES_H2D, ZB_OP_PARAM_UP, ZB_PASS_OPT, 0, 0, 1);
	const zb_task *act[ZB_RES_COUNT] = { 0 };
	act[ZB_RES_CPU] = &adam, act[ZB_RES_D2H] = &down, act[ZB_RES_H2D] = &up;
	double plain[ZB_RES_COUNT], q[ZB_RES_COUNT];
	zb_resource_rates(&c, act, plain);
	double a = zb_cpu_adam_Bps(&c), B = c.hw.cpu.dram_Bps;
	double d = c.hw.link.d2h_Bps * c.hw.link.duplex_d2h, h0 = c.hw.link.h2d_Bps * c.hw.link.duplex_h2d;
	assert_true(a + d + h0 > B); /* the proportional share slows all three alike */
	assert_close(plain[ZB_RES_D2H] / d, plain[ZB_RES_CPU] / a, 1e-9);
	c.hw.gpu.exec.h2d_queue = 0.1;
	zb_resource_rates(&c, act, q);
	assert_close(q[ZB_RES_D2H], d, 1e-12); /* posted writes keep their rate */
	double h = q[ZB_RES_H2D], u = (q[ZB_RES_CPU] + d) / B;
	assert_close(h, h0 / (1 + 0.1 * u / (1 - u)), 1e-6); /* the fixed point */
	assert_close(q[ZB_RES_CPU] + d + h, B, 1e-9);       /* Adam takes the rest */
	assert_true(h < h0 && q[ZB_RES_CPU] < a);
	/* H2D alone with Adam on few threads: Adam keeps its rate, H2D slows a little */
	c.policy.cpu_threads = 2;
	act[ZB_RES_D2H] = NULL;
	zb_resource_rates(&c, act, q);
	assert_close(q[ZB_RES_CPU], zb_cpu_adam_Bps(&c), 1e-12);
	assert_true(q[ZB_RES_H2D] < c.hw.link.h2d_Bps && q[ZB_RES_H2D] > 0.9 * c.hw.link.h2d_Bps);
	/* paced copies keep the paced rate; pageable ones cost 3x their bytes of DRAM */
	zb_error err;
	c.policy.cpu_threads = 16;
	zb_config p = c;
	assert_int_equal(zb_link_rate_apply(&p, 12e9, &err), ZB_OK);
	zb_resource_rates(&p, act, q);
	assert_close(q[ZB_RES_H2D], 12e9, 1e-12);
	p = c;
	p.policy.pageable = 1;
	act[ZB_RES_D2H] = &down;
	zb_resource_rates(&p, act, q);
	assert_close(q[ZB_RES_D2H], p.hw.link.pageable_d2h_Bps * p.hw.link.duplex_d2h, 1e-12);
	assert_close(q[ZB_RES_CPU], fmin(zb_cpu_adam_Bps(&p), B - 3 * (q[ZB_RES_D2H] + q[ZB_RES_H2D])), 1e-9);
}

/* Replay of real measurements (tests/data/fid-llama-measured.txt: the fid suite's four
 * 4-layer GQA Llama configurations as the H200 measured them, BENCHMARKS.md):
 * the h200-machine preset predicts their step times within the accuracy recorded there,
 * and a profile refitted on them does no worse. Not timed: the simulator is deterministic. */
static void test_replay_fixture(void **state)
{
	const char *d = getenv("ZB_TEST_DATA");
	char path[512], db[128];
	snprintf(path, sizeof path, "%s/fid-llama-measured.txt", d && *d ? d : "tests/data");
	snprintf(db, sizeof db, "%s/fixture.db", dir);
	char hwfile[160]; /* the H200 machine with its executor fit, named as an overlay */
	snprintf(hwfile, sizeof hwfile, "%s/h200-exec.json", dir);
	FILE *hf = fopen(hwfile, "w");
	assert_non_null(hf);
	fputs("{\"preset\": \"h200-machine\", \"executor\": \"h200\"}\n", hf);
	assert_int_equal(fclose(hf), 0);
	char *text = zb_test_slurp(path, NULL);
	const zb_suite *suite;
	zb_error err;
	assert_int_equal(zb_suite_find("fid", &suite, &err), ZB_OK);
	zb_store *s;
	int64_t run;
	zb_test_open_run(db, &s, &run);
	int configs = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		int idx, n;
		if (sscanf(line, "config %d %d", &idx, &n) != 2)
			continue;
		assert_true(idx >= 0 && idx < suite->n);
		zb_config c;
		zb_graph g;
		assert_int_equal(zb_suite_config(&suite->entries[idx], hwfile, 2, 3, &c, &err), ZB_OK);
		assert_int_equal(zb_graph_build(&g, &c, &err), ZB_OK);
		assert_int_equal((int)g.ntasks, n);
		double *st = calloc((size_t)n, sizeof *st), *en = calloc((size_t)n, sizeof *en);
		for (int i = 0; i < n; i++) {
			line = strtok(NULL, "\n");
			assert_non_null(line);
			assert_int_equal(sscanf(line, "%lf %lf", &st[i], &en[i]), 2);
			st[i] *= 1e-6, en[i] *= 1e-6;
		}
		char *json = zb_config_to_json(&c);
		int64_t id;
		assert_int_equal(zb_store_add_config(s, run, &c, json, &id, &err), ZB_OK);
		assert_int_equal(zb_store_add_tasks(s, id, &g, &err), ZB_OK);
		assert_int_equal(zb_store_add_events(s, id, "measured", &g, st, en, &err), ZB_OK);
		if (configs == 0) { /* per-step times: the load's standard error over the steady window */
			const double steps[6] = { 0.3, 0.2, 0.1, 0.11, 0.12, 0.13 };
			assert_int_equal(zb_store_add_steps(s, id, "measured", 6, steps, &err), ZB_OK);
		}
		free(json), free(st), free(en);
		zb_graph_free(&g);
		configs++;
	}
	free(text);
	assert_int_equal(configs, 4);
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);

	zb_hw preset, fit;
	assert_int_equal(zb_preset_hw("h200-machine", &preset, &err), ZB_OK);
	zb_exec_profile_h200(&preset.gpu.exec);
	preset.gpu.flash_efficiency = 0.050; /* the fixture's flash run had the wmma kernels */
	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &preset, &set, &err), ZB_OK);
	assert_int_equal(set.n, 4);
	assert_close(set.it[0].meas_se_s, 0.01 / sqrt(3), 1e-12); /* steps 3..5 after warm-up 2 */
	for (int k = 1; k < 4; k++)
		assert_true(isnan(set.it[k].meas_se_s)); /* no steps stored */
	zb_kfit_pred pred[4], refit[4];
	zb_kfit_stats stats;
	assert_int_equal(zb_kfit_predict(&set, &preset, pred, &err), ZB_OK);
	assert_int_equal(zb_kfit_fit(&set, NULL, &preset, &fit, &stats, &err), ZB_OK);
	assert_int_equal(zb_kfit_predict(&set, &fit, refit, &err), ZB_OK);
	zb_kfit_summary mp, mf;
	zb_kfit_summarize(&set, pred, &mp);
	zb_kfit_summarize(&set, refit, &mf);
	print_message("fixture replay: preset MAPE %.2f%% worst %.2f%%, refit MAPE %.2f%% worst %.2f%%\n",
		      100 * mp.mape, 100 * mp.worst, 100 * mf.mape, 100 * mf.worst);
	assert_int_equal(mp.n, 4);
	assert_true(mp.mape < MAPE_PRESET && mp.worst < WORST_PRESET);
	/* measured 3.09 % (1.86 % with the per-op and per-pass factors of before: fewer terms fit
	 * these four configurations less closely, and predict held-out ones better, docs/model.md) */
	assert_true(mf.mape <= mp.mape + 1e-9 && mf.mape < 0.035);
	zb_kfit_free(&set);
}


/* A fit recovers the factors the "measurements" were simulated with, and predicts
 * them back; the plain model does not. */
static void test_fit_recovers(void **state)
{
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_exec_profile *p = &truth.gpu.exec;
	zb_exec_profile_neutral(p);
	p->set = 1;
	p->gemm[ZB_GEMM_UNALIGNED] = 0.2; /* dense: the GPU's own curve, not a factor */
	p->kernel[ZB_KERN_SOFTMAX_FWD] = 0.5;
	p->kernel[ZB_KERN_STREAM] = 0.8;
	p->launch_s = 5e-6;
	char db[128];
	snprintf(db, sizeof db, "%s/m.db", dir);
	zb_store *s;
	zb_error err;
	int64_t run;
	zb_test_open_run(db, &s, &run);
	const char *policies[] = { "none", "dpu" };
	for (int i = 0; i < 2; i++) {
		zb_config c;
		zb_test_fixture_config(&c, &truth, "gpt2", policies[i], 2);
		c.policy.seq = 256;
		c.policy.ratio = i ? 0.5 : 0;
		c.steps = 4;
		zb_test_store_measured(s, run, &c);
	}
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);

	zb_hw base;
	zb_preset_default_hw(&base);
	zb_exec_profile_neutral(&base.gpu.exec);
	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &base, &set, &err), ZB_OK);
	assert_int_equal(set.n, 2);
	zb_hw fit;
	zb_kfit_stats st;
	assert_int_equal(zb_kfit_fit(&set, NULL, &base, &fit, &st, &err), ZB_OK);
	assert_true(st.gpu_samples > 100);
	assert_close(fit.gpu.exec.launch_s, 5e-6, 0.02);
	printf("fit: launch %.3g s, stream %.4f, softmax_fwd %.4f, unaligned %.4f (simulated with 5e-6, 0.8, 0.5, 0.2)\n",
	       fit.gpu.exec.launch_s, fit.gpu.exec.kernel[ZB_KERN_STREAM], fit.gpu.exec.kernel[ZB_KERN_SOFTMAX_FWD],
	       fit.gpu.exec.gemm[ZB_GEMM_UNALIGNED]);
	assert_true(fit.gpu.exec.gemm[ZB_GEMM_DENSE] == 1);
	assert_close(fit.gpu.exec.kernel[ZB_KERN_STREAM], 0.8, 0.02);
	assert_close(fit.gpu.exec.kernel[ZB_KERN_SOFTMAX_FWD], 0.5, 0.02);
	assert_close(fit.gpu.exec.gemm[ZB_GEMM_UNALIGNED], 0.2, 0.1);
	zb_kfit_pred pred[2], plain[2];
	assert_int_equal(zb_kfit_predict(&set, &fit, pred, &err), ZB_OK);
	assert_int_equal(zb_kfit_predict(&set, &base, plain, &err), ZB_OK);
	zb_kfit_summary mf, mp;
	zb_kfit_summarize(&set, pred, &mf);
	zb_kfit_summarize(&set, plain, &mp);
	assert_int_equal(mf.n, 2);
	assert_true(mf.mape < 0.02);
	assert_true(mp.mape > mf.mape);
	zb_kfit_free(&set);
}

/* starved measured from tasks (kfit_starved.h): timelines simulated with the GPU at 0.6
 * of its rate while Adam holds every core (with and without GPU Adam beside it, at the
 * SM share 0.5) give back 0.6 from wall time against work; with a core left free, no
 * task qualifies and the measure says 0 (the fit then falls back to its grid). */
static void test_starved_measured(void **state)
{
	zb_hw truth;
	zb_preset_default_hw(&truth);
	zb_exec_profile *p = &truth.gpu.exec;
	zb_exec_profile_neutral(p);
	p->set = 1;
	p->starved = 0.6;
	p->shared_gpu = 0.5;
	char db[128];
	snprintf(db, sizeof db, "%s/starved.db", dir);
	zb_store *s;
	zb_error err;
	int64_t run;
	zb_test_open_run(db, &s, &run);
	const double ratios[] = { 1, 0.5, 1 };
	for (int i = 0; i < 3; i++) {
		zb_config c;
		memset(&c, 0, sizeof c);
		c.hw = truth;
		assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
		zb_policy_defaults(&c.policy);
		assert_int_equal(zb_policy_parse("dpu", &c.policy.kind, &err), ZB_OK);
		c.policy.micro_batch = 2;
		c.policy.seq = 256;
		c.policy.ratio = ratios[i];
		c.policy.cpu_threads = i < 2 ? truth.cpu.cores : truth.cpu.cores / 2; /* the last leaves cores free */
		c.steps = 4;
		zb_test_store_measured(s, run, &c);
	}
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);

	zb_kfit_set set;
	assert_int_equal(zb_kfit_load(db, 0, 2, &truth, &set, &err), ZB_OK);
	assert_int_equal(set.n, 3);
	zb_config cfgs[3];
	for (int k = 0; k < 3; k++)
		assert_int_equal(zb_kfit_config(&set.it[k], &truth, &cfgs[k], &err), ZB_OK);
	zb_hw measure = truth; /* the work at the unstarved rate */
	measure.gpu.exec.starved = 1;
	int n;
	unsigned char use[3] = { 1, 1, 0 };
	double r = zb_kfit_starved_rate(&set, use, cfgs, &measure, &n);
	printf("starved measured: %.3f from %d tasks (simulated with 0.6)\n", r, n);
	assert_true(n >= 100);
	assert_close(r, 0.6, 0.01);
	unsigned char free_core[3] = { 0, 0, 1 };
	assert_true(zb_kfit_starved_rate(&set, free_core, cfgs, &measure, &n) == 0);
	assert_int_equal(n, 0);
	zb_kfit_free(&set);
}

/* Item x, a round of run 1 (policy kind, ratio 1) measured meas and predicted pred, with
 * its busy times not known. */
static void round_item(zb_kfit_item *x, zb_kfit_pred *p, zb_policy_kind kind, double meas, double pred)
{
	memset(x, 0, sizeof *x);
	memset(p, 0, sizeof *p);
	zb_test_default_config(&x->c);
	x->c.policy.kind = kind;
	x->c.policy.ratio = 1;
	x->run_id = 1;
	x->meas_step_s = meas;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		p->busy_s[r] = NAN;
	p->step_s = pred;
}

/* Rounds of one configuration in one run (validate --rounds) count once, with the mean
 * of their measurements: an ABBA pair whose rounds are 10% apart is exact on average;
 * a configuration of another run stays one of its own, and a speedup is taken against
 * the merged reference. */
static void test_rounds_merge(void **state)
{
	(void)state;
	zb_kfit_item it[5];
	zb_kfit_pred p[5];
	const double meas[5] = { 0.19, 0.21, 0.10, 0.10, 0.30 }; /* offload twice, dpu twice, offload of run 2 */
	for (int i = 0; i < 5; i++) {
		int dpu = i == 2 || i == 3;
		round_item(&it[i], &p[i], dpu ? ZB_POLICY_DPU : ZB_POLICY_OFFLOAD, meas[i], dpu ? 0.10 : 0.20);
		it[i].run_id = i == 4 ? 2 : 1;
		it[i].c.policy.cpu_threads = i == 4 ? 4 : 8; /* run 2's: a shape of its own */
	}
	zb_kfit_set set = { .it = it, .n = 5 };
	int point[5];
	assert_int_equal(zb_kfit_points(&set, point), 3); /* what half-out splits */
	assert_int_equal(point[0], 0);
	assert_int_equal(point[1], 0);
	assert_int_equal(point[2], 1);
	assert_int_equal(point[3], 1);
	assert_int_equal(point[4], 2);
	zb_kfit_summary m;
	zb_kfit_summarize(&set, p, &m);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.merged, 2);
	assert_close(m.worst, 1 - 0.20 / 0.30, 1e-9); /* run 2's offload: 0.20 against 0.30 */
	assert_close(m.mape, (1 - 0.20 / 0.30) / 3, 1e-9);
	/* dpu against the merged offload: 2x predicted, 0.20 / 0.10 = 2x measured */
	assert_int_equal(m.nspeed, 1);
	assert_int_equal(m.speed_ok, 1);
	/* the same items, each its own run: five configurations, the rounds' errors +-5% */
	for (int i = 0; i < 5; i++)
		it[i].run_id = i + 1;
	zb_kfit_summarize(&set, p, &m);
	assert_int_equal(m.n, 5);
	assert_int_equal(m.merged, 0);
	assert_int_equal(m.within8, 4);
	/* a dpu round that cannot be simulated is left out, not merged */
	for (int i = 0; i < 5; i++)
		it[i].run_id = 1;
	p[3].step_s = NAN;
	zb_kfit_summarize(&set, p, &m);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.merged, 1);
	assert_int_equal(m.within3, 2); /* offload (merged) and dpu (the one round left) exact */
}

/* Beyond the noise: a swap or a speedup miss inside two standard errors of the rounds is
 * counted, but not as established. Offload measured 0.100 and 0.110 (mean 0.105, standard
 * error 0.005), dpu of its shape 0.100 twice; predicted 0.100 and 0.101: 5 % apart the
 * other way round, inside 2 x 0.005; the speedup 0.99 against 1.05 (-5.7 %) inside
 * 5 % + 2 x 4.8 %. One round each (no spread known): both established. */
static void test_noise(void **state)
{
	(void)state;
	zb_kfit_item it[4];
	zb_kfit_pred p[4];
	const double meas[4] = { 0.100, 0.110, 0.100, 0.100 };
	for (int i = 0; i < 4; i++)
		round_item(&it[i], &p[i], i < 2 ? ZB_POLICY_OFFLOAD : ZB_POLICY_DPU, meas[i], i < 2 ? 0.100 : 0.101);
	zb_kfit_set set = { .it = it, .n = 4 };
	zb_kfit_summary m;
	zb_kfit_summarize(&set, p, &m);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.order_pairs, 1);
	assert_int_equal(m.order_swaps, 1);
	assert_int_equal(m.order_pairs_sure, 0);
	assert_int_equal(m.order_swaps_sure, 0);
	assert_int_equal(m.nspeed, 1);
	assert_int_equal(m.speed_ok, 0);
	assert_int_equal(m.speed_miss_sure, 0);
	/* offload's two rounds, 100 and 110 ms: a mean of 105 +- 5 ms */
	assert_close(m.noise_worst, 0.005 / 0.105, 1e-9);
	assert_int_equal(m.noise_worst_item, 0);
	/* one round each, at the same means: no spread, both established */
	zb_kfit_item one[2] = { it[1], it[2] };
	one[0].meas_step_s = 0.105;
	zb_kfit_pred q[2] = { p[1], p[2] };
	set = (zb_kfit_set){ .it = one, .n = 2 };
	zb_kfit_summarize(&set, q, &m);
	assert_int_equal(m.order_swaps_sure, 1);
	assert_int_equal(m.speed_miss_sure, 1);
	assert_close(m.noise_worst, 0, 0);
	assert_int_equal(m.noise_worst_item, -1);
}

/* A configuration's rounds merged as validate merges them (zb_rounds_mean): offload
 * measured 100 and 102 ms with steady steps (se 0.5 ms, under the 1 % floor) and 150 ms in
 * a round whose steps varied (se 15 ms): the disturbed round weighs (1.1733 / 15)^2 of a
 * steady one, and the 101 ms prediction is within 0.2 % of the merged mean (13.9 % of the
 * plain mean, 117.3 ms). */
static void test_rounds_weighed(void **state)
{
	(void)state;
	zb_kfit_item it[3];
	zb_kfit_pred p[3];
	const double meas[3] = { 0.100, 0.102, 0.150 }, se[3] = { 0.0005, 0.0005, 0.015 };
	for (int i = 0; i < 3; i++) {
		round_item(&it[i], &p[i], ZB_POLICY_OFFLOAD, meas[i], 0.101);
		it[i].meas_se_s = se[i];
	}
	zb_kfit_set set = { .it = it, .n = 3 };
	zb_kfit_summary m;
	zb_kfit_summarize(&set, p, &m);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.merged, 2);
	double f = 0.01 * (0.100 + 0.102 + 0.150) / 3, w = f * f / (0.015 * 0.015);
	double mean = (0.100 + 0.102 + 0.150 * w) / (2 + w);
	assert_close(m.mape, fabs(0.101 / mean - 1), 1e-9);
	assert_true(m.mape < 0.002);
	it[2].meas_se_s = NAN; /* its own spread not known: the floor, the plain mean */
	zb_kfit_summarize(&set, p, &m);
	assert_close(m.mape, fabs(0.101 / ((0.100 + 0.102 + 0.150) / 3) - 1), 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_rounds_weighed),
		cmocka_unit_test(test_class_factors), cmocka_unit_test(test_adam_curve),
		cmocka_unit_test(test_fit_recovers), cmocka_unit_test(test_dram_queue),
		cmocka_unit_test(test_replay_fixture), cmocka_unit_test(test_starved_measured),
		cmocka_unit_test(test_rounds_merge),
		cmocka_unit_test(test_noise),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
