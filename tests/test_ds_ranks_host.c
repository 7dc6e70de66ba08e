/*
 * test_ds_ranks_host.c - DeepSpeed's schedule on several ranks of one host:
 * each rank's gradient hooks run after their unit's backward (not during the forward),
 * and the memory-bound host passes (unscale, cast) take at most the rank's share of the
 * host's DRAM, with one rank unchanged.
 */
#include "tests/harness.h"

#include "core/config.h"
#include "core/graph.h"
#include "inputs/presets.h"
#include "sim/engine.h"
#include "sim/hostpass.h"

static void ds_config(zb_config *c, int gpus)
{
	memset(c, 0, sizeof *c);
	assert_int_equal(zb_preset_hw("dgx-h100", &c->hw, NULL), ZB_OK);
	zb_model m = { .name = "tiny-gpt", .layers = 4, .hidden = 256, .heads = 4, .kv_heads = 4, .ffn = 1024,
		       .vocab = 1000, .max_seq = 256, .gated_mlp = 0, .bias = 1, .tied_embeddings = 1 };
	c->model = m;
	zb_policy_defaults(&c->policy);
	c->policy.micro_batch = 2;
	c->policy.seq = 128;
	c->policy.bucket_params = 150001;
	c->policy.gpus = gpus;
	c->policy.nodes = 1;
	c->policy.zero_stage = 2;
	c->policy.kind = ZB_POLICY_OFFLOAD;
	c->framework = ZB_FW_DEEPSPEED;
	c->steps = 3;
}

/* Every gradient hook of a 2-rank ZeRO-2 offload step waits for a backward GPU task
 * of its own unit and step, and starts after it in the simulation. */
static void test_hooks_after_their_unit(void **state)
{
	(void)state;
	zb_config c;
	ds_config(&c, 2);
	zb_graph g;
	zb_error err = { 0 };
	assert_int_equal(zb_graph_build(&g, &c, &err), ZB_OK);
	zb_sim_result r;
	assert_int_equal(zb_simulate(&g, &c, &r, &err), ZB_OK);
	int hooks = 0;
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		if (t->op != ZB_OP_GRAD_HOOK)
			continue;
		hooks++;
		const uint32_t *deps = zb_task_deps(&g, t);
		int found = 0;
		for (uint32_t j = 0; j < t->dep_count; j++) {
			const zb_task *d = &g.tasks[deps[j]];
			if (d->resource == ZB_RES_GPU && d->unit == t->unit && d->step == t->step &&
			    d->pass != ZB_PASS_FWD) {
				found = 1;
				assert_true(r.start[i] >= r.end[deps[j]] - 1e-12);
			}
		}
		if (!found)
			print_error("hook %zu (unit %d step %d) waits for no backward task of its unit\n", i, t->unit,
				    t->step);
		assert_true(found);
	}
	assert_true(hooks >= (int)(c.steps * 4));
	zb_sim_result_free(&r);
	zb_graph_free(&g);
}

/* unscale and cast: one rank keeps its fitted duration; two ranks on a one-socket host
 * take at least bytes / (dram / 2); other host tasks are never touched. */
static void test_host_pass_share(void **state)
{
	(void)state;
	zb_config c;
	ds_config(&c, 1);
	c.hw.cpu.sockets = 1;
	c.hw.cpu.dram_Bps = 100e9;
	c.hw.gpus_per_cpu = 1;
	zb_task t = zb_task_blank(ZB_TASK_HOST, ZB_RES_CPU, ZB_OP_UNSCALE, ZB_PASS_OPT, 0, -1, 0);
	t.bytes = 8e9; /* 0.08 s at the whole DRAM, 0.16 s at half */
	assert_true(zb_host_pass_s(&t, &c, 0.1) == 0.1);
	c.policy.gpus = 2;
	assert_true(fabs(zb_host_pass_s(&t, &c, 0.1) - 0.16) < 1e-12);
	assert_true(zb_host_pass_s(&t, &c, 0.2) == 0.2); /* slower on its own: unchanged */
	t.op = ZB_OP_CAST;
	assert_true(fabs(zb_host_pass_s(&t, &c, 0.1) - 0.16) < 1e-12);
	t.op = ZB_OP_GRAD_HOOK;
	assert_true(zb_host_pass_s(&t, &c, 0.1) == 0.1);
	t.op = ZB_OP_UNSCALE;
	c.hw.cpu.dram_Bps = 0; /* unknown DRAM: unchanged */
	assert_true(zb_host_pass_s(&t, &c, 0.1) == 0.1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hooks_after_their_unit),
		cmocka_unit_test(test_host_pass_share),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
