/*
 * test_executor.c - the executor on a real GPU (make test-gpu):
 *   - every policy (none, offload, overlap, dpu), Twin-Flow ratios, parameter
 *     offload with prefetch, activation recompute and CPU checkpointing, gradient
 *     accumulation: each runs its whole schedule, every task gets a measured
 *     interval, and the measured timeline respects the graph's dependencies;
 *   - no loss of precision: in check mode, after K steps the fp32 master weights
 *     for ratios 0, 0.3 and 1 and for dpu agree with a double-precision Adam on the
 *     same gradients to 1e-6 relative (norm over a sample of indices), and the
 *     16-bit parameters are the master weights rounded to nearest even, exactly.
 * Without a GPU it prints "skipped: no GPU" and skips (ZB_REQUIRE_GPU=1 fails).
 */
#include "tests/harness.h"

#include "exec/executor.h"
#include "core/graph.h"
#include "inputs/presets.h"

static int g_have_gpu, g_require;
static char g_why[512];

#define NEED_GPU()                                                                   \
	do {                                                                         \
		if (!g_have_gpu) {                                                   \
			if (g_require)                                               \
				fail_msg("no GPU and ZB_REQUIRE_GPU=1: %s", g_why);  \
			skip();                                                      \
		}                                                                    \
	} while (0)

/* A small GPT so every case runs in well under a second. */
static void small_config(zb_config *c, const char *policy, double ratio)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	assert_int_equal(zb_preset_model("gpt2", &c->model, &err), ZB_OK);
	c->model.layers = 4;
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_policy_parse(policy, &c->policy.kind, &err), ZB_OK);
	c->policy.ratio = ratio;
	c->policy.micro_batch = 2;
	c->policy.seq = 256;
	c->policy.bucket_params = 3000000; /* several buckets, one straddling the split */
	c->policy.cpu_threads = 4;
	c->steps = 5;
}

static void run_and_check(zb_config *c, int check)
{
	zb_graph g;
	zb_error err = { 0 };
	zb_status st = zb_graph_build(&g, c, &err);
	if (st)
		fail_msg("graph: %s", err.msg);
	zb_exec_options o = { .quiet = 1, .check = check, .seed = 99 };
	zb_exec_result r;
	st = zb_execute(&g, c, &o, &r, &err);
	if (st)
		fail_msg("execute %s ratio %.2f: %s", zb_policy_name(c->policy.kind), c->policy.ratio, err.msg);
	assert_int_equal(r.steps_done, g.steps);
	/* every task ran, and started no earlier than each dependency ended (allow
	 * 20 us: CPU tasks are timed on the host clock, GPU tasks with events placed
	 * on it through one reference event, and a host wait's wake-up shows as a
	 * gap, never as an overlap, unless the alignment is off) */
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		if (r.start[i] < 0 || r.end[i] < r.start[i])
			fail_msg("task %zu (%s %s) has interval [%g, %g]", i, zb_resource_name(t->resource),
				 zb_op_name(t->op), r.start[i], r.end[i]);
		const uint32_t *d = zb_task_deps(&g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			if (r.start[i] + 20e-6 < r.end[d[j]])
				fail_msg("task %zu (%s) started %.1f us before its dependency %u (%s) ended", i,
					 zb_op_name(t->op), (r.end[d[j]] - r.start[i]) * 1e6, d[j],
					 zb_op_name(g.tasks[d[j]].op));
	}
	assert_true(r.step_time_s > 0);
	if (check) {
		print_message("%s ratio %.2f%s: master vs double reference %.3g (max %.3g), %lld param16 mismatches\n",
			      zb_policy_name(c->policy.kind), c->policy.ratio, c->policy.offload_param ? " offload-param" : "",
			      r.master_rel_err, r.master_max_rel_err, (long long)r.param16_mismatches);
		assert_false(r.nan_found);
		assert_true(r.master_rel_err <= 1e-6);
		assert_int_equal(r.param16_mismatches, 0);
	}
	zb_exec_result_free(&r);
	zb_graph_free(&g);
}

static void test_precision_ratios(void **state)
{
	NEED_GPU();
	static const double ratios[] = { 0.0, 0.3, 1.0 };
	for (int i = 0; i < 3; i++) {
		zb_config c;
		small_config(&c, "overlap", ratios[i]);
		run_and_check(&c, 1);
	}
}

static void test_precision_dpu(void **state)
{
	NEED_GPU();
	zb_config c;
	small_config(&c, "dpu", 1.0);
	run_and_check(&c, 1);
	small_config(&c, "dpu", 0.3);
	run_and_check(&c, 1);
}

static void test_every_policy(void **state)
{
	NEED_GPU();
	static const char *policies[] = { "none", "offload", "overlap", "dpu" };
	for (int i = 0; i < 4; i++) {
		zb_config c;
		small_config(&c, policies[i], 0.5);
		run_and_check(&c, 1);
	}
}

static void test_offload_param_ckpt_gas(void **state)
{
	NEED_GPU();
	zb_config c;
	small_config(&c, "overlap", 1.0);
	c.policy.offload_param = 1;
	c.policy.prefetch_layers = 1;
	run_and_check(&c, 1);
	small_config(&c, "dpu", 0.5);
	c.policy.ckpt = ZB_CKPT_CPU;
	c.policy.gas = 3;
	run_and_check(&c, 1);
	small_config(&c, "offload", 1.0);
	c.policy.ckpt = ZB_CKPT_GPU;
	c.policy.pageable = 1;
	run_and_check(&c, 1);
}

static void test_llama_shape(void **state)
{
	NEED_GPU();
	zb_config c;
	small_config(&c, "dpu", 0.5);
	zb_error err;
	assert_int_equal(zb_preset_model("llama2-7b", &c.model, &err), ZB_OK);
	c.model.layers = 2;
	c.model.hidden = 1024;
	c.model.heads = 16;
	c.model.kv_heads = 4;
	c.model.ffn = 2816;
	c.model.vocab = 32000;
	run_and_check(&c, 1);
}

static void test_interrupt_stops_at_step(void **state)
{
	NEED_GPU();
	zb_config c;
	small_config(&c, "dpu", 1.0);
	c.steps = 8;
	zb_graph g;
	zb_error err;
	assert_int_equal(zb_graph_build(&g, &c, &err), ZB_OK);
	volatile sig_atomic_t stop = 1; /* asked to stop before anything started */
	zb_exec_options o = { .quiet = 1, .seed = 1, .stop = &stop };
	zb_exec_result r;
	assert_int_equal(zb_execute(&g, &c, &o, &r, &err), ZB_OK);
	assert_true(r.interrupted);
	assert_true(r.steps_done < g.steps);
	for (size_t i = 0; i < g.ntasks; i++)
		if (g.tasks[i].step >= r.steps_done)
			assert_true(r.start[i] < 0);
	zb_exec_result_free(&r);
	zb_graph_free(&g);
}

int main(void)
{
	zb_error err = { 0 };
	g_require = getenv("ZB_REQUIRE_GPU") && !strcmp(getenv("ZB_REQUIRE_GPU"), "1");
	g_have_gpu = zb_exec_available(&err);
	snprintf(g_why, sizeof g_why, "%s", err.msg);
	if (!g_have_gpu)
		printf("skipped: no GPU (%s)\n", g_why);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precision_ratios),    cmocka_unit_test(test_precision_dpu),
		cmocka_unit_test(test_every_policy),        cmocka_unit_test(test_offload_param_ckpt_gas),
		cmocka_unit_test(test_llama_shape),         cmocka_unit_test(test_interrupt_stops_at_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
