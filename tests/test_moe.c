/*
 * test_moe.c - a mixture-of-experts model through the schedules, the memory models
 * and the simulator: every expert's parameters are stored, moved and updated (the
 * gradient copies, the Adam tasks, the host and GPU optimizer states count all of
 * them), while the GEMMs do only the routed experts' work and the router's. The
 * reference is the model's "dense twin": the same model with one dense MLP as wide
 * as the routed experts together, whose GEMMs must differ from the MoE's by exactly
 * the router's FLOPs, and whose parameters by exactly the unrouted experts'.
 */
#include "tests/harness.h"

#include "core/graph.h"
#include "core/memory.h"
#include "core/model.h"
#include "inputs/presets.h"
#include "schedules/deepspeed.h"
#include "sim/predict.h"

/* Mixtral-like and small: 8 experts of 512, 2 per token. */
static zb_model moe(void)
{
	zb_model m = { .name = "tiny-mixtral", .layers = 3, .hidden = 256, .heads = 8, .kv_heads = 2, .ffn = 512,
		       .vocab = 1000, .gated_mlp = 1, .experts = 8, .experts_active = 2, .loss = ZB_LOSS_HF };
	return m;
}

static zb_model dense_twin(const zb_model *m)
{
	zb_model d = *m;
	d.ffn = (int)zb_model_mlp_width(m);
	d.experts = d.experts_active = d.shared_ffn = 0;
	return d;
}

static void config(zb_config *c, const zb_model *m, int framework)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	c->model = *m;
	zb_policy_defaults(&c->policy);
	c->policy.kind = ZB_POLICY_OFFLOAD;
	c->policy.ratio = 1.0;
	c->policy.micro_batch = 2;
	c->policy.seq = 128;
	c->policy.bucket_params = 100000;
	c->framework = framework;
	c->steps = 2;
}

typedef struct sums {
	double gemm_flops, adam_params, d2h_bytes;
} sums;

static sums sum_step(const zb_graph *g, int step)
{
	sums s = { 0 };
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step != step)
			continue;
		if (t->kind == ZB_TASK_GEMM)
			s.gemm_flops += t->flops;
		if (t->op == ZB_OP_ADAM)
			s.adam_params += (double)t->params;
		if (t->resource == ZB_RES_D2H && t->op == ZB_OP_GRAD_DOWN)
			s.d2h_bytes += t->bytes;
	}
	return s;
}

static void build(zb_graph *g, const zb_config *c)
{
	zb_error err = { 0 };
	zb_status st = zb_graph_build(g, c, &err);
	if (!st)
		st = zb_graph_check(g, &err);
	if (st)
		print_error("%s\n", err.msg);
	assert_int_equal(st, ZB_OK);
}

static void check_framework(int framework)
{
	zb_model m = moe(), d = dense_twin(&m);
	int64_t P = zb_model_params(&m), Pd = zb_model_params(&d);
	int64_t h = m.hidden, unrouted = (int64_t)m.layers * (m.experts - m.experts_active) * 3 * h * m.ffn;
	assert_int_equal(P - Pd, unrouted + (int64_t)m.layers * h * m.experts); /* and the router */
	zb_config c, cd;
	config(&c, &m, framework);
	config(&cd, &d, framework);
	zb_graph g, gd;
	build(&g, &c);
	build(&gd, &cd);
	assert_int_equal(g.params, P);
	sums s = sum_step(&g, 1), sd = sum_step(&gd, 1);
	/* compute: the router's GEMM (h -> experts) in forward and both backward GEMMs */
	double T = (double)c.policy.micro_batch * c.policy.seq;
	double router = (double)m.layers * 3 * 2.0 * T * h * m.experts;
	printf("# %s: GEMM %.4g FLOP/step (dense twin %.4g, router %.4g); Adam %.0f of %lld parameters\n",
	       framework == ZB_FW_DEEPSPEED ? "deepspeed" : "zbench", s.gemm_flops, sd.gemm_flops, router, s.adam_params,
	       (long long)P);
	assert_close(s.gemm_flops - sd.gemm_flops, router, 1e-9);
	/* parameters: every expert's gradient goes down and every expert is updated */
	assert_close(s.adam_params, (double)P, 1e-12);
	if (framework == ZB_FW_ZBENCH)
		assert_close(s.d2h_bytes, 2.0 * (double)P, 1e-12);
	/* model FLOPs (TFLOP/s): routed, the same identity */
	assert_close(g.model_flops_per_step - gd.model_flops_per_step, router * c.policy.gas, 1e-9);
	zb_graph_free(&g);
	zb_graph_free(&gd);

	/* memory: optimizer states of all experts; activations of the routed width */
	zb_memory mm, md;
	if (framework == ZB_FW_DEEPSPEED) {
		zb_ds_memory_estimate(&c, &mm);
		zb_ds_memory_estimate(&cd, &md);
	} else {
		zb_memory_estimate(&c, &mm);
		zb_memory_estimate(&cd, &md);
	}
	assert_close(mm.host_optimizer, 12.0 * (double)P, 1e-12);
	assert_close(mm.host_optimizer - md.host_optimizer, 12.0 * (double)(P - Pd), 1e-9);
	assert_close(mm.gpu_activations, md.gpu_activations, 1e-12);

	/* the simulator: the MoE's step is no shorter than its twin's (more to move and
	 * update, the same compute but the router) */
	zb_prediction p, pd;
	zb_error err = { 0 };
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_int_equal(zb_predict(&pd, &cd, &err), ZB_OK);
	assert_true(p.simulated && pd.simulated);
	assert_true(p.res.step_time_s >= pd.res.step_time_s);
	zb_prediction_free(&p);
	zb_prediction_free(&pd);
}

static void test_zbench_schedule(void **state) { check_framework(ZB_FW_ZBENCH); }
static void test_deepspeed_schedule(void **state) { check_framework(ZB_FW_DEEPSPEED); }

/* A shared expert (Qwen2-MoE) adds its width to what each token computes, and its
 * gate to the router's outputs. */
static void test_shared_expert(void **state)
{
	zb_model m = moe();
	m.shared_ffn = 1024;
	assert_int_equal(zb_model_mlp_width(&m), 2 * 512 + 1024);
	assert_int_equal(zb_model_fc1_out(&m), 2 * (2 * 512 + 1024) + 8 + 1);
	zb_model d = dense_twin(&m);
	/* the dense twin has the routed and the shared width in one MLP */
	assert_int_equal(zb_model_params(&m) - zb_model_params(&d),
			 3LL * (8 - 2) * 3 * 256 * 512 + 3LL * 256 * (8 + 1));
	zb_error e;
	assert_int_equal(zb_model_validate(&m, &e), ZB_OK);
	m.experts_active = 9;
	assert_int_equal(zb_model_validate(&m, &e), ZB_E_INPUT);
	assert_contains(e.msg, "experts_active 9");
	m.experts_active = 2, m.experts = 0;
	assert_int_equal(zb_model_validate(&m, &e), ZB_E_INPUT);
	m = moe();
	m.experts = 4096, m.experts_active = 1, m.layers = 10000, m.hidden = 8192, m.heads = 64, m.kv_heads = 64,
	m.ffn = 1048576;
	assert_int_equal(zb_model_validate(&m, &e), ZB_E_INPUT); /* 1.1e18 expert parameters */
	assert_contains(e.msg, "exceeds the limit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zbench_schedule),
		cmocka_unit_test(test_deepspeed_schedule),
		cmocka_unit_test(test_shared_expert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
