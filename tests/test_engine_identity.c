/*
 * test_engine_identity.c - the tabulated engine (sim/engine.c) against the
 * heap-based loop it replaced (tests/engine_ref.h), bit for bit: every figure
 * stored as a REAL in the predictions table, the event count, and each task's
 * start and end, over a few hundred configurations (models x policies x ratios x
 * links x cores x gas x checkpointing x pinned/pageable x parameter offload).
 * Steps 1 to 6. Through zb_simulate (one graph, one configuration) and through the shared
 * index and scratch a sweep uses (one graph, many configurations), with and
 * without the memo of identical simulations.
 */
#include "tests/harness.h"

#include "sim/engine.h"
#include "core/graph.h"
#include "inputs/presets.h"
#include "tests/engine_ref.h"

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

#define SAME(field)                                                                            \
	do {                                                                                   \
		if (!same_bits(got->field, want->field)) {                                      \
			print_error("%s: " #field " %.17g, reference %.17g\n", label, got->field,     \
				    want->field);                                              \
			fail();                                                                \
		}                                                                              \
	} while (0)

static void same_result(const zb_sim_result *got, const zb_sim_result *want, const char *label)
{
	SAME(total_s);
	SAME(step_time_s);
	SAME(tokens_per_s);
	SAME(tflops_per_gpu);
	SAME(lower_bound_s);
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		SAME(busy_s[r]);
		SAME(work_s[r]);
	}
	assert_int_equal(got->bottleneck, want->bottleneck);
	assert_int_equal(got->bound_resource, want->bound_resource);
	assert_int_equal(got->events, want->events);
	assert_int_equal(got->ntasks, want->ntasks);
	if (!got->start && !got->end)
		return; /* from the memo: figures only */
	assert_memory_equal(got->start, want->start, got->ntasks * sizeof(double));
	assert_memory_equal(got->end, want->end, got->ntasks * sizeof(double));
}

static const char *models[] = { "gpt2", "gpt2-large", "opt-1.3b" };
static const char *links[] = { "gen3", "gen4", "gen5", "gen6" };
static const int cores[] = { 2, 8, 64 };
static const double ratios[] = { 0, 0.3, 0.7, 1 };

/* The policy of case i (varied over a mixed radix so a few hundred cases cover the
 * modifiers in many combinations). */
static int policy_case(zb_config *c, int model, int i)
{
	zb_error err = { 0 };
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	assert_int_equal(zb_preset_model(models[model], &c->model, &err), ZB_OK);
	zb_policy_defaults(&c->policy);
	c->steps = 1 + (i / 3) % 6; /* 1 and 2 steps take other branches of the summary */
	c->policy.kind = (zb_policy_kind)(i % ZB_POLICY_COUNT);
	c->policy.ratio = ratios[(i / ZB_POLICY_COUNT) % 4];
	c->policy.gas = 1 + (i / 16) % 2;
	c->policy.ckpt = (zb_ckpt)((i / 32) % ZB_CKPT_COUNT);
	c->policy.pageable = (i / 7) % 3 == 0;
	c->policy.offload_param = (i / 5) % 4 == 0 && (c->policy.kind == ZB_POLICY_OFFLOAD ||
						      c->policy.kind == ZB_POLICY_OVERLAP);
	c->policy.micro_batch = 2;
	c->policy.seq = 512;
	return 1;
}

static void test_identical_to_reference(void **state)
{
	int compared = 0, memos = 0;
	zb_sim_scratch *w = zb_sim_scratch_new(), *wm = zb_sim_scratch_new();
	zb_sim_scratch_memo(wm, 1);
	for (int m = 0; m < 3; m++)
		for (int i = 0; i < 24; i++) {
			zb_config c;
			policy_case(&c, m, i * 5 + m);
			zb_graph g;
			zb_error err = { 0 };
			if (zb_graph_build(&g, &c, &err)) {
				print_error("graph: %s\n", err.msg);
				fail();
			}
			zb_sim_index *ix = zb_sim_index_new(&g);
			/* the same graph on several machines, as a sweep runs it */
			for (int l = 0; l < 4; l++)
				for (int k = 0; k < 3; k++) {
					char label[160];
					assert_int_equal(zb_preset_link(links[l], &c.hw.link, &err), ZB_OK);
					c.hw.cpu.cores = cores[k];
					snprintf(label, sizeof label, "%s %s ratio %g %s %d cores pageable %d",
						 models[m], zb_policy_name(c.policy.kind), c.policy.ratio,
						 links[l], cores[k], c.policy.pageable);
					zb_sim_result want, got, shared, memo;
					assert_int_equal(ref_simulate(&g, &c, &want, &err), ZB_OK);
					assert_int_equal(zb_simulate(&g, &c, &got, &err), ZB_OK);
					assert_int_equal(zb_simulate_indexed(ix, w, &c, &shared, &err), ZB_OK);
					assert_int_equal(zb_simulate_indexed(ix, wm, &c, &memo, &err), ZB_OK);
					same_result(&got, &want, label);
					same_result(&shared, &want, label);
					same_result(&memo, &want, label);
					memos += !memo.start;
					zb_sim_result_free(&want);
					zb_sim_result_free(&got);
					compared++;
				}
			zb_sim_index_free(ix);
			zb_graph_free(&g);
		}
	printf("# %d configurations identical to the reference loop (%d of them from the memo)\n", compared,
	       memos);
	assert_true(compared >= 300);
	assert_true(memos > 0);
	zb_sim_scratch_free(w);
	zb_sim_scratch_free(wm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical_to_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
