/*
 * test_ds_trace.c - DeepSpeed ZeRO-3's module trace and coordinator (ds_trace.h)
 * checked by hand on a small model, the tutorial-style Hugging Face gpt2-large run
 * against what its trace measured, and the long-gas shortcut of sim/predict.h
 * against the whole simulation.
 *
 * The small model (zbench's own GPT layout as peers/ds_step.py builds it): 2 blocks,
 * hidden 64, 2 heads, ffn 256, vocab 100, 32 positions, biases, tied head. Modules:
 * WithLoss, Gpt, wte, wpe, per block GptBlock ln1 qkv proj ln2 fc out, ln_f: 4 + 14
 * + 1 = 19. Tensors: wte 6400, wpe 2048, per block ln1 64 + 64, qkv 192 x 64 + 192,
 * proj 64 x 64 + 64, ln2 64 + 64, fc 256 x 64 + 256, out 64 x 256 + 64, ln_f 64 + 64:
 * 2 + 2 x 12 + 2 = 28.
 */
#include "tests/harness.h"

#include "core/config.h"
#include "core/graph.h"
#include "core/model.h"
#include "inputs/hfconfig.h"
#include "inputs/presets.h"
#include "schedules/deepspeed.h"
#include "schedules/ds_trace.h"
#include "sim/predict.h"

static zb_model small(void)
{
	zb_model m;
	memset(&m, 0, sizeof m);
	snprintf(m.name, sizeof m.name, "small");
	m.layers = 2, m.hidden = 64, m.heads = 2, m.kv_heads = 2, m.ffn = 256, m.vocab = 100, m.max_seq = 32;
	m.bias = 1, m.tied_embeddings = 1;
	return m;
}

static zb_ds_trace trace_of(const zb_model *m, zb_ds_trace_opts o)
{
	zb_ds_trace t;
	zb_error err = { 0 };
	zb_status st = zb_ds_trace_build(m, &o, &t, &err);
	if (st)
		print_error("%s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	return t;
}

/* Persistent: at most 100 elements (the norms and the 64-wide biases): per block ln1 w,
 * b, proj b, ln2 w, b, out b, and ln_f w, b: 14. The other 14 (wte, wpe, per block qkv w,
 * b, proj w, fc w, b, out w) are fetched. No prefetch, no reuse window: each module's own
 * are gathered at its pre-hook and freed at its post-hook, except wte, which Gpt holds
 * too (its weight is Gpt's external parameter, the tied head): fetched at Gpt's pre-hook,
 * freed at its post-hook, and again in the backward. */
static void test_small_by_hand(void **state)
{
	(void)state;
	zb_model m = small();
	zb_ds_trace t = trace_of(&m, (zb_ds_trace_opts){ 100, 0, 1000000000, 0, 1000000000, 0 });
	const zb_ds_trace_counts *c = &t.count;
	assert_int_equal(c->modules, 19);
	assert_int_equal(c->tensors, 28);
	assert_int_equal(c->persistent, 14);
	assert_close(c->persistent_elems, 2 * (64 * 4 + 64 * 2) + 2 * 64, 0);
	/* hook calls: a pre and a post per module and pass */
	assert_int_equal(c->hooks[0], 2 * 19);
	assert_int_equal(c->hooks[1], 2 * 19);
	double fetched = 6400 + 2048 + 2 * (192 * 64 + 192 + 64 * 64 + 256 * 64 + 256 + 64 * 256);
	assert_int_equal(c->fetched[0], 14);
	assert_int_equal(c->fetched[1], 14);
	assert_close(c->fetched_elems[0], fetched, 0);
	assert_close(c->fetched_elems[1], fetched, 0);
	/* one demand gather and one wait per module that owns a fetched parameter: Gpt (wte),
	 * wpe, and per block qkv, proj, fc, out */
	assert_int_equal(c->gathers[0], 10);
	assert_int_equal(c->waits[0], 10);
	assert_int_equal(c->waits[1], 10);
	/* the elements on the GPU at most: the persistent ones, wte (held by Gpt all pass
	 * long) and the largest module's own beside it (fc: 256 x 64 + 256) */
	assert_close(c->max_live_elems, c->persistent_elems + 6400 + 256 * 64 + 256, 0);
	/* the tensors add up to the model */
	int64_t sum = 0;
	for (int k = 0; k < t.nt; k++)
		sum += t.t[k].numel;
	assert_int_equal(sum, zb_model_params(&m));
	zb_ds_trace_free(&t);
}

/* stage3_max_reuse_distance above the model: whatever the forward used is used again by
 * the backward within the window, so nothing is freed and nothing fetched again. A
 * prefetch bucket as large as the model: the first fetch gathers everything ahead in one
 * more call. */
static void test_small_reuse_and_prefetch(void **state)
{
	(void)state;
	zb_model m = small();
	zb_ds_trace t = trace_of(&m, (zb_ds_trace_opts){ 100, 0, 1000000000, 1000000000, 1000000000, 0 });
	assert_int_equal(t.count.fetched[0], 14);
	assert_int_equal(t.count.fetched[1], 0);
	assert_close(t.count.max_live_elems, (double)zb_model_params(&m), 0);
	zb_ds_trace_free(&t);
	t = trace_of(&m, (zb_ds_trace_opts){ 100, 1000000000, 1000000000, 1000000000, 1000000000, 0 });
	assert_int_equal(t.count.fetched[0], 14);
	/* the first pre-hook (WithLoss, which owns nothing) prefetches everything ahead */
	assert_int_equal(t.count.gathers[0], 1);
	assert_int_equal(t.count.waits[0], 10); /* still a wait where each is used */
	zb_ds_trace_free(&t);
	/* the live limit stops the prefetch: at most stage3_max_live_parameters elements */
	t = trace_of(&m, (zb_ds_trace_opts){ 100, 1000000000, 20000, 0, 1000000000, 0 });
	assert_true(t.count.gathers[0] > 2);
	zb_ds_trace_free(&t);
}

/* The IPG bucket over the backward's 28 gradients: a bucket of 20000 elements closes
 * before fc w (16384), out w (16384) and qkv w (12288) can join it, which fill one each;
 * contiguous: every gradient that fits beside what is there. */
static void test_small_buckets(void **state)
{
	(void)state;
	zb_model m = small();
	zb_ds_trace t = trace_of(&m, (zb_ds_trace_opts){ 100, 0, 1000000000, 0, 20000, 0 });
	assert_int_equal(t.count.grads, 28);
	double sum = 0;
	for (int k = 0; k < t.nflush; k++) {
		assert_true(t.flush[k].elems <= 20000 || t.flush[k].n == 1);
		sum += t.flush[k].elems;
	}
	assert_close(sum, (double)zb_model_params(&m), 0);
	/* backward, per block: out (b, w), fc (b, w), ln2, proj, qkv (b, w), ln1; each large
	 * weight overflows the bucket it meets */
	print_message("# small model, bucket 20000: %d buckets, %d of 28 gradients copied into one\n", t.nflush,
		      t.count.contiguous);
	assert_true(t.nflush >= 6 && t.nflush <= 10);
	assert_int_equal(t.count.contiguous, 28);
	zb_ds_trace_free(&t);
}

/* A tutorial-style run, traced on the H200 machine: Hugging Face gpt2-large (0.774 B parameters,
 * tied head, dropout 0.1), ZeRO-3, offload_param and offload_optimizer pinned, fp16,
 * "auto" buckets (reduce_bucket_size hidden^2, stage3_prefetch_bucket_size 0.9 hidden^2,
 * stage3_param_persistence_threshold 10 hidden), micro-batch 2, seq 512, gas 8. Its
 * trace measured 15.5 GB down and 28.3 GB up per step and ~12 400 GPU idle gaps.
 *
 * Counts of one micro-step:
 *   modules 2 + 3 (wte, wpe, drop) + 36 x 12 (h.N, ln_1, attn, c_attn, c_proj,
 *     resid_dropout, ln_2, mlp, c_fc, act, c_proj, dropout) + 2 (ln_f, lm_head) = 439;
 *   tensors 2 + 36 x 12 + 2 = 436, of which 290 are at most 12 800 elements (biases and
 *     norms: kept on the GPU), 146 fetched in the forward (4 weights a block, wte, wpe);
 *     47 more (wpe and the bottom blocks' weights, whose reuse in the backward lies more
 *     than stage3_max_reuse_distance = 1e9 trace elements away) are released and fetched
 *     again, prefetched from the end of the forward: 193 copies, 0.998 B elements;
 *   bytes down: 2 B/param each micro-step (the partition into the pinned buffer), 4 B at
 *     the boundary (fp32): (2 x 8 + 4) P = 20 P = 15.48 GB;
 *   bytes up: 2 B per fetched element and 2 B/param each micro-step (the partition back,
 *     or brought up to be added): 8 x 2 x (0.998 + 0.774) B = 28.35 GB;
 *   stretches of GPU work between host work, forward 36 x 12 (ln_1, c_attn, the
 *     attention, c_proj, resid_dropout, the residual add, ln_2, c_fc, act, c_proj,
 *     dropout, the add) + 4 (wte, wpe, their sum, drop) + 3 (ln_f, lm_head, the loss) =
 *     439; backward the same 439 + 217 gradients copied into the bucket after host work
 *     (110 more follow their module's kernels directly) + 436 gradients of reduced
 *     buckets (partition_grads, one parameter at a time) = 1092: 1531 per micro-step,
 *     12 248 per step of 8 (the step's per-parameter norms add a few hundred more). */
static void test_tutorial_gpt2_large(void **state)
{
	(void)state;
	zb_hf_config hf;
	zb_error err = { 0 };
	assert_int_equal(zb_hf_load("tests/data/hf-gpt2-large.json", &hf, &err), ZB_OK);
	const zb_model *m = &hf.model;
	assert_int_equal(m->modules, ZB_MODULES_HF_GPT2);
	int64_t h = m->hidden, P = zb_model_params(m);
	zb_ds_trace t = trace_of(m, (zb_ds_trace_opts){ 10 * h, (int64_t)(0.9 * (double)h * (double)h), 1000000000,
							  1000000000, h * h, 0 });
	const zb_ds_trace_counts *c = &t.count;
	assert_int_equal(c->modules, 2 + 3 + 36 * 12 + 2);
	assert_int_equal(c->tensors, 436);
	assert_int_equal(c->persistent, 290);
	assert_int_equal(c->fetched[0] + c->fetched[1], 146 + 47);
	assert_close(c->fetched_elems[0] + c->fetched_elems[1], 0.998e9, 0.001);
	assert_int_equal(c->stretches[0], 36 * 12 + 4 + 3);
	assert_int_equal(c->stretches[1], 439 + 217 + 436);
	int gaps = 8 * zb_ds_trace_stretches(&t);
	print_message("# tutorial gpt2-large: %d stretches per micro-step, %d per step of 8 (trace: ~12 400 gaps)\n",
		      zb_ds_trace_stretches(&t), gaps);
	assert_int_equal(gaps, 12248);
	assert_close(gaps, 12400, 0.03);

	/* the schedule moves those bytes */
	zb_config cfg;
	memset(&cfg, 0, sizeof cfg);
	zb_preset_default_hw(&cfg.hw);
	cfg.model = *m;
	zb_policy_defaults(&cfg.policy);
	zb_policy *p = &cfg.policy;
	p->kind = ZB_POLICY_OVERLAP, p->ratio = 1, p->offload_param = 1, p->zero_stage = 3, p->dtype = ZB_FP16;
	p->micro_batch = 2, p->seq = 512, p->gas = 8, p->bucket_params = h * h;
	p->prefetch_bucket = (int64_t)(0.9 * (double)h * (double)h), p->persist_threshold = 10 * h;
	cfg.framework = ZB_FW_DEEPSPEED;
	cfg.steps = 2;
	zb_graph g;
	assert_int_equal(zb_graph_build(&g, &cfg, &err), ZB_OK);
	assert_int_equal(zb_graph_check(&g, &err), ZB_OK);
	double down = 20.0 * (double)P, up = 8 * 2.0 * (c->fetched_elems[0] + c->fetched_elems[1] + (double)P);
	print_message("# bytes per step: down %.2f GB (trace 15.5), up %.2f GB (trace 28.3)\n",
		      g.copy_bytes[ZB_RES_D2H] / 1e9, g.copy_bytes[ZB_RES_H2D] / 1e9);
	assert_close(g.copy_bytes[ZB_RES_D2H], down, 1e-9);
	assert_close(g.copy_bytes[ZB_RES_H2D], up, 1e-9);
	assert_close(g.copy_bytes[ZB_RES_D2H], 15.5e9, 0.01);
	assert_close(g.copy_bytes[ZB_RES_H2D], 28.3e9, 0.01);
	zb_graph_free(&g);
	zb_ds_trace_free(&t);
}

/* Own-module layouts count as ds_step.py builds them; Hugging Face's as transformers. */
static void test_families(void **state)
{
	(void)state;
	zb_model m;
	assert_int_equal(zb_preset_model("gpt-2.5b", &m, NULL), ZB_OK);
	int mods = 0, tens = 0;
	for (int u = 0; u < zb_model_units(&m); u++)
		mods += zb_ds_unit_modules(&m, u), tens += zb_ds_unit_tensors(&m, u);
	assert_int_equal(mods, 4 + 32 * 7 + 1); /* WithLoss, Gpt, wte, wpe; blocks; ln_f */
	assert_int_equal(tens, 4 + 32 * 12);
	static const char *hf[] = { "tests/data/hf-llama2-7b.json", "tests/data/hf-opt-350m.json",
				    "tests/data/hf-mistral-7b.json" };
	static const int want_mods[] = { 2 + 2 + 32 * 13 + 2, 3 + 3 + 24 * 11 + 1, 2 + 2 + 32 * 13 + 2 };
	for (int i = 0; i < 3; i++) {
		zb_hf_config c;
		zb_error err = { 0 };
		assert_int_equal(zb_hf_load(hf[i], &c, &err), ZB_OK);
		zb_ds_trace t = trace_of(&c.model, (zb_ds_trace_opts){ 100000, 50000000, 1000000000, 1000000000,
									  500000000, 0 });
		print_message("# %s: %d modules, %d tensors\n", hf[i], t.count.modules, t.count.tensors);
		int64_t sum = 0;
		for (int k = 0; k < t.nt; k++)
			sum += t.t[k].numel;
		assert_int_equal(sum, zb_model_params(&c.model));
		if (i != 1)
			assert_int_equal(t.count.modules, want_mods[i]);
		zb_ds_trace_free(&t);
	}
}

/* The module trees against DeepSpeed's own counters on the Hugging Face runs
 * (data/deepspeed-hf-h200.jsonl, ZeRO-3 tutorial config, per micro-step): pre-forward
 * hook calls (one a module) and gradient hooks (one a parameter tensor). Pythia and
 * Phi-3 fuse q, k and v (and Phi-3 gate and up) and call dropout modules; Llama's tree
 * for them counted 24 and 30 modules too many. */
static void test_hf_trees_as_counted(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		int modules, tensors;
	} runs[] = { { "peers/models/llama-3.2-1b.json", 214, 146 },
		     { "peers/models/qwen2.5-0.5b.json", 318, 290 },
		     { "peers/models/pythia-1b.json", 199, 196 },
		     { "peers/models/phi3-mini-16l.json", 198, 99 } };
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		zb_hf_config c;
		zb_error err = { 0 };
		assert_int_equal(zb_hf_load(runs[i].file, &c, &err), ZB_OK);
		zb_ds_trace t = trace_of(&c.model, (zb_ds_trace_opts){ 100000, 50000000, 1000000000, 1000000000,
									  500000000, 0 });
		int64_t sum = 0;
		for (int k = 0; k < t.nt; k++)
			sum += t.t[k].numel;
		print_message("# %s: %d modules (counted %d), %d tensors (%d)\n", runs[i].file, t.count.modules,
			      runs[i].modules, t.count.tensors, runs[i].tensors);
		assert_int_equal(t.count.modules, runs[i].modules);
		assert_int_equal(t.count.tensors, runs[i].tensors);
		assert_int_equal(sum, zb_model_params(&c.model));
		zb_ds_trace_free(&t);
	}
}

/* Gradient checkpointing: each block's forward runs again in the backward, its hooks
 * fire and fetch again there (not at the block's backward pre-hooks). */
static void test_recompute(void **state)
{
	(void)state;
	zb_model m = small();
	zb_ds_trace t = trace_of(&m, (zb_ds_trace_opts){ 100, 0, 1000000000, 0, 1000000000, 1 });
	assert_int_equal(t.count.hooks[1], 2 * 19 + 2 * 2 * 7); /* the 2 blocks' 7 modules again */
	/* no reuse window: each block's 6 fetched parameters twice (recompute, backward),
	 * wte and wpe once */
	assert_int_equal(t.count.fetched[1], 2 * 2 * 6 + 2);
	zb_ds_trace_free(&t);
}

/* The shortcut of long gas equals the whole simulation where both run. */
static void shortcut_case(zb_config *c, const char *what)
{
	zb_prediction a, b;
	zb_error err = { 0 };
	assert_int_equal(zb_predict(&a, c, &err), ZB_OK);
	assert_int_equal(zb_predict_all_micro(&b, c, &err), ZB_OK);
	assert_true(a.simulated && b.simulated);
	print_message("# %-40s gas %3d: %d micro-steps simulated, step %.3f ms, whole %.3f ms (%+.4f%%)\n", what,
		      c->policy.gas, a.graph.micro_simulated, a.res.step_time_s * 1e3, b.res.step_time_s * 1e3,
		      100 * (a.res.step_time_s / b.res.step_time_s - 1));
	assert_true(a.graph.micro_simulated > 0 && a.graph.micro_simulated < c->policy.gas);
	assert_int_equal(b.graph.micro_simulated, 0);
	assert_close(a.res.step_time_s, b.res.step_time_s, 0.001);
	assert_close(a.res.tokens_per_s, b.res.tokens_per_s, 0.001);
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		assert_close(a.res.busy_s[r], b.res.busy_s[r], 0.001);
		assert_close(a.res.work_s[r], b.res.work_s[r], 0.001);
		assert_close(a.graph.copy_bytes[r], b.graph.copy_bytes[r], 1e-6);
	}
	assert_int_equal(a.res.bottleneck, b.res.bottleneck);
	zb_prediction_free(&a);
	zb_prediction_free(&b);
}

static void test_long_gas_shortcut(void **state)
{
	(void)state;
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	assert_int_equal(zb_preset_model("gpt2-large", &c.model, NULL), ZB_OK);
	c.model.layers = 8;
	zb_policy_defaults(&c.policy);
	c.policy.seq = 512, c.policy.micro_batch = 2, c.policy.gas = 16;
	c.framework = ZB_FW_DEEPSPEED;
	c.steps = 4;
	c.policy.zero_stage = 3, c.policy.kind = ZB_POLICY_OVERLAP, c.policy.offload_param = 1;
	shortcut_case(&c, "zero 3, offload_param");
	c.policy.gas = 40;
	shortcut_case(&c, "zero 3, offload_param");
	c.policy.offload_param = 0, c.policy.ratio = 0.5, c.policy.sub_group_size = 20000000;
	shortcut_case(&c, "zero 3, Twin-Flow 0.5");
	c.policy.zero_stage = 2, c.policy.kind = ZB_POLICY_OFFLOAD, c.policy.ratio = 1, c.policy.gas = 24;
	shortcut_case(&c, "zero 2, offload, overlap_comm false");
	c.policy.kind = ZB_POLICY_NONE;
	shortcut_case(&c, "zero 2, no offload");
	/* and a gas the whole schedule could not hold: 16 384 in the time of a few */
	c.policy.zero_stage = 3, c.policy.kind = ZB_POLICY_OVERLAP, c.policy.offload_param = 1, c.policy.gas = 16384;
	zb_prediction p;
	zb_error err = { 0 };
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.simulated && p.graph.micro_simulated == 5);
	zb_prediction q;
	c.policy.gas = 40;
	assert_int_equal(zb_predict(&q, &c, &err), ZB_OK);
	/* linear in gas beyond the first micro-steps */
	double per = (p.res.step_time_s - q.res.step_time_s) / (16384 - 40);
	assert_true(per > 0);
	assert_close(q.res.step_time_s + per * (16384 - 40), p.res.step_time_s, 1e-9);
	zb_prediction_free(&p);
	zb_prediction_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_by_hand),
		cmocka_unit_test(test_small_reuse_and_prefetch),
		cmocka_unit_test(test_small_buckets),
		cmocka_unit_test(test_tutorial_gpt2_large),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_hf_trees_as_counted),
		cmocka_unit_test(test_recompute),
		cmocka_unit_test(test_long_gas_shortcut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
