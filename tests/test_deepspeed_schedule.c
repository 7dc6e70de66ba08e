/*
 * test_deepspeed_schedule.c - DeepSpeed's schedule (schedule_deepspeed.h) checked
 * against what DeepSpeed was measured doing on the H200 machine
 * (data/deepspeed-h200-table.tsv).
 *
 * Structure: bytes per parameter each way per copy kind (the profiled table of the
 * data file), sub-groups stepped one at a time after backward, hooks only in
 * ZeRO-3, Twin-Flow's GPU sub-groups updated on the GPU, every graph passing
 * zb_graph_check, the profile through the hardware JSON file.
 *
 * Accuracy (the regression guard: this CAN fail when a change to the simulator
 * makes DeepSpeed predictions worse): the 8 measured configurations predicted from
 * the presets with the default profile, and with the profile fitted to them, must
 * stay within the bounds recorded below (the achieved errors when the bounds were
 * set are in BENCHMARKS.md), and keep DeepSpeed's order.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <unistd.h>

#include "core/config.h"
#include "analysis/dscalib.h"
#include "analysis/dsorder.h"
#include "inputs/dsconfig.h"
#include "inputs/dsmeasured.h"
#include "core/dsprofile.h"
#include "analysis/dstune.h"
#include "analysis/dsphases.h"
#include "sim/engine.h"
#include "schedules/framework.h"
#include "core/graph.h"
#include "inputs/hwfile.h"
#include "core/model.h"
#include "sim/predict.h"
#include "inputs/presets.h"
#include "schedules/deepspeed.h"
#include "schedules/ds_eltwise.h"
#include "schedules/ds_trace.h"
#include "sim/resources.h"

#define DATA "data/deepspeed-h200-table.tsv"
#define SHAPES "data/deepspeed-h200-shapes.jsonl"
#define TABLE2 "data/deepspeed-h200-table-sessions.jsonl" /* the same 8, another session */
#define SPLIT "data/deepspeed-h200-split.jsonl"
#define LLAMA2 "data/deepspeed-h200-llama.jsonl" /* Llama s2-off and s3-tf50, another session */
#define SPLIT_S3 "data/deepspeed-h200-split-s3.jsonl"

/* Recorded bounds (BENCHMARKS.md "DeepSpeed's schedule" has the tables they come from).
 * Since ZeRO-3 runs module by module (ds_trace.h: the per-parameter gradient partitions
 * as stage3.py moves them, the 2 B/param copy back up in the backward, no step-end copy),
 * the fit to the 2.5 B table (both sessions, DATA and TABLE2) is 5.4 % MAPE against each
 * configuration's pooled steps, worst 11.3 % (Twin-Flow 0.5 and 0.3, predicted like the
 * --step-split sessions of the same configurations, 1636 and 1694 ms, not like the table's
 * 1962 and 1848), 6.3 % against the 16 session rows, worst 16.7 % (s2-off-ovl's 1471 ms
 * session); before, 1.0 % / 3.2 % and 3.9 % / 10.8 %, with ~350 ms of Twin-Flow's step
 * carried by a 9.3 ms sub-group cost and a step-end copy that the split does not find.
 * The presets alone: worst 22.4 % per row, pooled 13.8 %. */
#define BOUND_DEFAULT_WORST 0.25        /* within 25 % without calibration (per row: 22.4 %) */
#define BOUND_DEFAULT_POOLED_WORST 0.14 /* recorded 13.8 % */
#define BOUND_FITTED_POOLED_WORST 0.12  /* recorded 11.3 % (was 3.2 %) */
#define BOUND_FITTED_POOLED_MAPE 0.06   /* recorded 5.4 % (was 1.0 %) */
#define BOUND_FITTED_WORST 0.17         /* per session row (recorded 16.7 %) */
#define BOUND_PRESET_FIT_WORST 0.17     /* per session row, fitted from the preset's hardware (16.5 %) */
#define BOUND_FITTED_MAPE 0.065         /* per session row (recorded 6.3 %) */
#define ORDER_MISSES 2                  /* separated pairs out of DeepSpeed's order (recorded: s3-tf50
					   against s2-off and s2-off-ovl, which the split sessions order
					   the other way) */
#define BOUND_GPU_MEM 0.10
#define BOUND_HOST_MEM 0.15
/* The other shapes (gpt2-large, Llama-3.2-3B; BENCHMARKS.md "Other shapes" has the
 * table): presets and the default profile worst 9.7 %; the committed profile, fitted
 * on the 2.5 B table only (calibrated hardware), predicts them without refitting:
 * MAPE 4.8 %, each configuration's error recorded in shape_errors below. */
#define BOUND_SHAPES_DEFAULT_WORST 0.25
#define SHAPES_MAPE 0.048        /* recorded (DeepSpeed's measured host paths; was 3.9 %) */
#define SHAPES_SLACK 0.010       /* per configuration, on |error| */

static void base(zb_config *c)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	assert_int_equal(zb_preset_model("gpt-2.5b", &c->model, NULL), ZB_OK);
	zb_policy_defaults(&c->policy);
	c->policy.seq = 2048;
	c->policy.micro_batch = 4;
	c->policy.sub_group_size = 100000000;
	c->framework = ZB_FW_DEEPSPEED;
	c->steps = 3;
}

/* One of the measured configurations by its zero column. */
static void config_of(zb_config *c, const char *zero)
{
	zb_config b;
	base(&b);
	zb_ds_row r;
	memset(&r, 0, sizeof r);
	snprintf(r.name, sizeof r.name, "t");
	snprintf(r.zero, sizeof r.zero, "%s", zero);
	zb_error err = { 0 };
	zb_status st = zb_ds_row_config(&r, "test", &b, c, &err);
	if (st)
		print_error("%s\n", err.msg);
	assert_int_equal(st, ZB_OK);
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

typedef struct perparam {
	double d2h, h2d_pinned, h2d_pageable;
} perparam;

/* Bytes per parameter in one step (step 1, past the first). */
static perparam bytes_per_param(const zb_graph *g)
{
	perparam b = { 0 };
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step != 1 || t->kind != ZB_TASK_COPY)
			continue;
		if (t->resource == ZB_RES_D2H)
			b.d2h += t->bytes;
		else if (t->op == ZB_OP_PARAM_UP_PAGEABLE)
			b.h2d_pageable += t->bytes;
		else
			b.h2d_pinned += t->bytes;
	}
	b.d2h /= (double)g->params;
	b.h2d_pinned /= (double)g->params;
	b.h2d_pageable /= (double)g->params;
	return b;
}

/* The profiled table of the data file: D2H pinned, H2D pinned, H2D pageable. */
static void test_bytes_per_param(void **state)
{
	static const struct {
		const char *zero;
		double d2h, up, pageable;
	} cases[] = {
		{ "stage 2, offload_optimizer cpu, overlap_comm false", 4.00, 2.00, 0.00 },
		{ "stage 3, offload_optimizer cpu (ratio 1)", 6.00, 2.00, 2.00 },
		{ "stage 3, offload_optimizer cpu ratio 0.5 (Twin-Flow)", 3.90, 2.00, 0.95 },
		{ "stage 2, no offload, torch Adam", 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		zb_config c;
		config_of(&c, cases[i].zero);
		zb_graph g;
		build(&g, &c);
		perparam b = bytes_per_param(&g);
		print_message("# %-55s D2H %.2f H2D pinned %.2f pageable %.2f B/param (profiled %.2f %.2f %.2f)\n",
			      cases[i].zero, b.d2h, b.h2d_pinned, b.h2d_pageable, cases[i].d2h, cases[i].up,
			      cases[i].pageable);
		/* the profile rounds to 0.05 B; Twin-Flow's split is by whole sub-groups */
		assert_true(fabs(b.d2h - cases[i].d2h) <= 0.1);
		assert_true(fabs(b.h2d_pinned - cases[i].up) <= 0.1);
		assert_true(fabs(b.h2d_pageable - cases[i].pageable) <= 0.1);
		zb_graph_free(&g);
	}
	/* offload_param: 2 B per element the coordinator gathers (ds_trace.h: the forward
	 * fetches every non-persistent parameter, the backward those the reuse window of 1e9
	 * trace elements let go), and the 2 B/param gradient partitions back up */
	zb_config c;
	config_of(&c, "stage 3, offload_optimizer cpu + offload_param cpu");
	zb_graph g;
	build(&g, &c);
	perparam b = bytes_per_param(&g);
	zb_ds_trace_opts o;
	zb_ds_trace_opts_of(&c, &o);
	zb_ds_trace t;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_trace_build(&c.model, &o, &t, &err), ZB_OK);
	double fetched = (t.count.fetched_elems[0] + t.count.fetched_elems[1]) / (double)g.params;
	print_message("# offload_param: %.3f elements a parameter fetched per micro-step (forward %.3f), H2D %.3f B/param\n",
		      fetched, t.count.fetched_elems[0] / (double)g.params, b.h2d_pinned);
	/* the forward gathers every non-persistent parameter, and from its end on already some
	 * of what the backward needs again (the prefetcher passes over what is on the GPU) */
	assert_true(t.count.fetched_elems[0] >= (double)g.params - t.count.persistent_elems);
	assert_true(fetched > 1.5 && fetched < 2); /* the top ~0.5 B stay for the backward */
	assert_close(b.h2d_pinned, 2.0 * fetched + 2.0, 1e-9);
	assert_close(b.h2d_pageable, 0.0, 1e-9);
	zb_ds_trace_free(&t);
	zb_graph_free(&g);
}

/* ZeRO-3 offload: CPU Adam starts after the last backward kernel, and each CPU
 * sub-group starts after the previous one's pageable upload ended. */
static void test_subgroups_serial_after_backward(void **state)
{
	zb_config c;
	config_of(&c, "stage 3, offload_optimizer cpu ratio 0.5 (Twin-Flow)");
	zb_graph g;
	build(&g, &c);
	zb_sim_result r;
	zb_error err = { 0 };
	assert_int_equal(zb_simulate(&g, &c, &r, &err), ZB_OK);
	double bwd_end = 0, prev_up_end = -1;
	int adams = 0, gpu_adams = 0;
	int64_t gpu_params = 0;
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		if (t->step != 1)
			continue;
		if (t->resource == ZB_RES_GPU && (t->pass == ZB_PASS_BWD_DATA || t->pass == ZB_PASS_BWD_WEIGHT) &&
		    r.end[i] > bwd_end)
			bwd_end = r.end[i];
		if (t->kind == ZB_TASK_CPU_ADAM) {
			assert_true(r.start[i] >= bwd_end - 1e-12);
			assert_true(r.start[i] >= prev_up_end - 1e-12);
			adams++;
		}
		if (t->op == ZB_OP_PARAM_UP_PAGEABLE)
			prev_up_end = r.end[i];
		if (t->op == ZB_OP_ADAM && t->resource == ZB_RES_GPU) {
			gpu_adams++;
			gpu_params += t->params;
		}
	}
	/* 2.652 B parameters in sub-groups of >= 1e8: 27; ratio 0.5 puts the top on the CPU */
	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&c.model, 100000000, 0.5, &tf);
	print_message("# %d sub-groups: %d CPU Adam, %d GPU Adam (%lld params on the GPU)\n", g.nbuckets, adams,
		      gpu_adams, (long long)gpu_params);
	assert_int_equal(g.nbuckets, tf.sub_groups);
	assert_int_equal(adams, tf.cpu_sub_groups);
	assert_int_equal(adams + gpu_adams, g.nbuckets);
	assert_int_equal(gpu_params, g.params - tf.cpu_params);
	assert_int_equal(g.cpu_params, tf.cpu_params);
	zb_sim_result_free(&r);
	zb_graph_free(&g);
}

static int count_op(const zb_graph *g, int op, int step)
{
	int64_t n = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		if (g->tasks[i].op == op && g->tasks[i].step == step)
			n += g->tasks[i].params;
	return (int)n;
}

/* Module hooks: ZeRO-3 only, a pre and a post hook of each module per pass (forward,
 * backward); gradient hooks: per parameter in ZeRO-3, and partition_grads once for each
 * parameter of a reduced bucket; per tensor and unit in stage 1/2 offload. */
static void test_hooks(void **state)
{
	int modules = 0, tensors = 0;
	zb_config c;
	config_of(&c, "stage 3, no offload");
	for (int u = 0; u < zb_model_units(&c.model); u++) {
		modules += zb_ds_unit_modules(&c.model, u);
		tensors += zb_ds_unit_tensors(&c.model, u);
	}
	zb_graph g;
	build(&g, &c);
	assert_int_equal(count_op(&g, ZB_OP_MOD_HOOK, 1), 2 * 2 * modules);
	assert_int_equal(count_op(&g, ZB_OP_GRAD_HOOK, 1), tensors);
	assert_int_equal(count_op(&g, ZB_OP_PARTITION, 1), tensors);
	zb_ds_trace_opts o;
	zb_ds_trace_opts_of(&c, &o);
	zb_ds_trace t;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_trace_build(&c.model, &o, &t, &err), ZB_OK);
	assert_int_equal(count_op(&g, ZB_OP_FLUSH, 1), t.nflush);
	/* no offload_param: the gathers' Python runs on the GPU partitions, nothing is copied up */
	assert_true(count_op(&g, ZB_OP_FETCH, 1) > 0);
	for (size_t i = 0; i < g.ntasks; i++)
		assert_false(g.tasks[i].op == ZB_OP_PARAM_FETCH || (g.tasks[i].resource == ZB_RES_H2D && g.tasks[i].step == 1));
	zb_ds_trace_free(&t);
	zb_graph_free(&g);
	config_of(&c, "stage 2, offload_optimizer cpu, overlap_comm true");
	build(&g, &c);
	assert_int_equal(count_op(&g, ZB_OP_HOOK, 1), 0);
	assert_int_equal(count_op(&g, ZB_OP_GRAD_HOOK, 1), tensors);
	zb_graph_free(&g);
	/* gpt-2.5b: 32 blocks of 12 tensors (weights and biases) + wte, wpe, ln_f w, b */
	assert_int_equal(tensors, 32 * 12 + 4);
}

/* Terms timed by ds_step.py --step-split (data/deepspeed-h200-split.jsonl):
 * step()'s unscale_and_clip_grads multiplies the host fp32 gradients (8 B/param, before
 * CPU Adam, at the held unscale_Bps), and each tensor's gradient hook waits for the
 * gradient copies before it (the overflow check synchronizes), with or without overlap_comm
 * (stage_1_and_2.py 0.19.8: the check runs on the reduction stream that holds the copies). */
typedef struct flush_shape {
	int hooks, chained;  /* gradient hooks, and those that wait for their unit's copy */
	int held_kernels;    /* GPU kernels that wait for a gradient copy */
	int unscales;
	uint32_t unscale, adam;
} flush_shape;

static flush_shape flush_of(const zb_graph *g)
{
	flush_shape f = { .unscale = UINT32_MAX, .adam = UINT32_MAX };
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step != 1)
			continue;
		if (t->op == ZB_OP_UNSCALE && t->resource == ZB_RES_CPU)
			f.unscale = (uint32_t)i, f.unscales++;
		if (t->kind == ZB_TASK_CPU_ADAM)
			f.adam = (uint32_t)i;
		const uint32_t *d = zb_task_deps(g, t);
		int waits = 0;
		for (uint32_t k = 0; k < t->dep_count; k++)
			waits += g->tasks[d[k]].resource == ZB_RES_D2H && g->tasks[d[k]].op == ZB_OP_GRAD_DOWN &&
				 (t->op != ZB_OP_GRAD_HOOK || g->tasks[d[k]].unit == t->unit);
		if (t->op == ZB_OP_GRAD_HOOK)
			f.hooks++, f.chained += waits > 0;
		if (t->resource == ZB_RES_GPU && t->kind == ZB_TASK_KERNEL)
			f.held_kernels += waits > 0;
	}
	return f;
}

static void test_unscale_and_serial_flush(void **state)
{
	(void)state;
	zb_config c;
	config_of(&c, "stage 2, offload_optimizer cpu, overlap_comm false");
	zb_graph g;
	build(&g, &c);
	flush_shape f = flush_of(&g);
	assert_true(f.unscale != UINT32_MAX && f.adam != UINT32_MAX && f.unscale < f.adam);
	assert_close(g.tasks[f.unscale].bytes, 8.0 * (double)g.params, 1e-12);
	assert_close(zb_ds_host_task_s(&g.tasks[f.unscale], &c), 8.0 * (double)g.params / 1.22e11, 1e-9);
	assert_true(f.hooks > 0 && f.chained == f.hooks);
	assert_true(f.held_kernels > 0); /* the copies are on the compute stream */
	/* the measured costs are held by calibrate, not fitted */
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		if (strcmp(zb_ds_param(i)->key, "unscale_Bps") == 0 || strcmp(zb_ds_param(i)->key, "grad_hook_s") == 0)
			assert_int_equal(zb_ds_param(i)->held, 1);
	zb_graph_free(&g);
	/* overlap_comm: the copies are on their own stream (no kernel waits for one), the
	 * hooks still chained to them */
	config_of(&c, "stage 2, offload_optimizer cpu, overlap_comm true");
	build(&g, &c);
	f = flush_of(&g);
	assert_true(f.hooks > 0 && f.chained == f.hooks);
	assert_int_equal(f.held_kernels, 0);
	assert_int_equal(f.unscales, 1);
	zb_graph_free(&g);
}

/* The held costs are the split's measurements (data/deepspeed-h200-split.jsonl,
 * three shapes): the unscale pass's rate on each shape within 12 % of the held value, and
 * the pooled per-tensor flush cost (each tensor's copy_grads_in_partition less its 4 B/param
 * copy at the calibrated link's D2H rate) within 5 % of the held grad_hook_s. */
static void test_held_costs_match_split(void **state)
{
	(void)state;
	zb_ds_profile d;
	zb_ds_profile_defaults(&d);
	zb_hw hw;
	zb_error err = { 0 };
	assert_int_equal(zb_hw_load("hw/h200-machine-calibrated.json", &hw, &err), ZB_OK);
	FILE *f = fopen(SPLIT, "r");
	assert_non_null(f);
	char line[65536];
	int n = 0, tensors = 0;
	double hook_ms = 0;
	while (fgets(line, sizeof line, f)) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		assert_non_null(o);
		double P = json_number_value(json_object_get(o, "params"));
		json_t *ms = json_object_get(o, "split_ms"), *calls = json_object_get(o, "split_calls");
		double unscale = json_number_value(json_object_get(ms, "unscale_and_clip_grads"));
		double rate = 8.0 * P / (unscale / 1e3);
		print_message("# split %-6s %.3f B params: unscale %.0f GB/s (held %.0f)\n",
			      json_string_value(json_object_get(o, "family")), P / 1e9, rate / 1e9, d.unscale_Bps / 1e9);
		assert_true(fabs(rate / d.unscale_Bps - 1) < 0.12);
		hook_ms += json_number_value(json_object_get(ms, "copy_grads_in_partition")) - 4.0 * P / hw.link.d2h_Bps * 1e3;
		tensors += (int)json_integer_value(json_object_get(calls, "copy_grads_in_partition"));
		json_decref(o);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 3);
	print_message("# flush: %.3f ms a tensor over %d tensors (held %.3f)\n", hook_ms / tensors, tensors,
		      d.grad_hook_s * 1e3);
	assert_true(fabs(hook_ms / tensors / (d.grad_hook_s * 1e3) - 1) < 0.05);

	/* ZeRO-3 (2.5 B, tuned config then s3-off): the fresh pageable temporary is what s3-off's
	 * fp32 -> bf16 copy_ costs beyond the tuned config's cast into pinned memory, less the
	 * profiled pageable H2D (639 ms, pageable_h2d_Bps) */
	f = fopen(SPLIT_S3, "r");
	assert_non_null(f);
	double reassign[2] = { 0, 0 }, P = 0;
	n = 0;
	while (fgets(line, sizeof line, f) && n < 2) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		assert_non_null(o);
		P = json_number_value(json_object_get(o, "params"));
		reassign[n++] = json_number_value(json_object_get(json_object_get(o, "split_ms"),
								  "_reassign_or_swap_out_partitioned_parameters"));
		json_decref(o);
	}
	fclose(f);
	assert_int_equal(n, 2);
	double fresh_s = (reassign[1] - reassign[0]) / 1e3 - 2.0 * P / d.pageable_h2d_Bps;
	print_message("# s3-off copy_ %.0f ms, tuned %.0f ms: fresh pages %.1f GB/s (held %.1f)\n", reassign[1],
		      reassign[0], 2.0 * P / fresh_s / 1e9, d.fresh_Bps / 1e9);
	assert_true(fabs(2.0 * P / fresh_s / d.fresh_Bps - 1) < 0.02);
}

/* Every variant builds, passes zb_graph_check (each parameter updated once per
 * step, each CPU-updated gradient sent down once) and simulates, with gradient
 * accumulation too. */
static void test_variants(void **state)
{
	static const char *zeros[] = {
		"stage 1, offload_optimizer cpu",
		"stage 2, offload_optimizer cpu, overlap_comm false",
		"stage 2, offload_optimizer cpu, overlap_comm true",
		"stage 2, no offload",
		"stage 3, no offload",
		"stage 3, offload_optimizer cpu",
		"stage 3, offload_optimizer cpu ratio 0.3",
		"stage 3, offload_optimizer cpu, overlap_comm false",
		"stage 3, offload_optimizer cpu + offload_param cpu",
		"stage 3, offload_optimizer cpu ratio 0.5 + offload_param cpu",
	};
	static const char *models[] = { "gpt2-large", "llama2-7b" };
	for (size_t mi = 0; mi < 2; mi++)
		for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++)
			for (int ck = 0; ck < 2 * ZB_CKPT_COUNT; ck++) {
				zb_config c;
				config_of(&c, zeros[i]);
				c.policy.gas = ck >= ZB_CKPT_COUNT ? 3 : 1;
				assert_int_equal(zb_preset_model(models[mi], &c.model, NULL), ZB_OK);
				c.policy.seq = 1024;
				c.policy.micro_batch = 1;
				c.policy.ckpt = (zb_ckpt)(ck % ZB_CKPT_COUNT);
				c.policy.sub_group_size = 200000000;
				zb_graph g;
				build(&g, &c);
				zb_sim_result r;
				zb_error err = { 0 };
				assert_int_equal(zb_simulate(&g, &c, &r, &err), ZB_OK);
				assert_true(r.step_time_s > 0);
				zb_sim_result_free(&r);
				zb_graph_free(&g);
			}
	/* DeepSpeed refuses what it cannot run */
	zb_config c;
	config_of(&c, "stage 2, offload_optimizer cpu");
	c.policy.ratio = 0.5;
	zb_graph g;
	zb_error err = { 0 };
	assert_int_equal(zb_graph_build(&g, &c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "needs zero stage 3");
	c.policy.ratio = 1;
	c.policy.kind = ZB_POLICY_DPU;
	assert_int_equal(zb_graph_build(&g, &c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "dpu");
}

/* More Twin-Flow on the GPU: faster, more GPU memory, less host memory. */
static void test_ratio_monotone(void **state)
{
	double prev_t = 1e9, prev_gpu = 0, prev_host = 1e30;
	static const char *zeros[] = { "stage 3, offload_optimizer cpu", "stage 3, offload_optimizer cpu ratio 0.5",
				       "stage 3, offload_optimizer cpu ratio 0.3" };
	for (int i = 0; i < 3; i++) {
		zb_config c;
		config_of(&c, zeros[i]);
		zb_prediction p;
		zb_error err = { 0 };
		assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
		assert_true(p.simulated);
		assert_true(p.res.step_time_s < prev_t);
		assert_true(p.mem.gpu_bytes > prev_gpu);
		assert_true(p.mem.host_bytes < prev_host);
		prev_t = p.res.step_time_s, prev_gpu = p.mem.gpu_bytes, prev_host = p.mem.host_bytes;
		zb_prediction_free(&p);
	}
}

static void test_profile_json(void **state)
{
	char dir[64], path[128];
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/hw.json", dir);
	zb_hw hw;
	zb_preset_default_hw(&hw);
	zb_ds_profile_defaults(&hw.ds);
	hw.ds.hook_s = 1.25e-4;
	hw.ds.flash = 0;
	zb_error err = { 0 };
	assert_int_equal(zb_hw_save(path, &hw, &err), ZB_OK);
	zb_hw back;
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_OK);
	assert_true(back.ds.set);
	assert_close(back.ds.hook_s, 1.25e-4, 1e-12);
	assert_int_equal(back.ds.flash, 0);
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		assert_close(zb_ds_param_get(&back.ds, i), zb_ds_param_get(&hw.ds, i), 1e-12);
	/* a file without the object: no profile, the schedule takes the defaults */
	zb_preset_default_hw(&hw);
	assert_int_equal(zb_hw_save(path, &hw, &err), ZB_OK);
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_OK);
	assert_false(back.ds.set);
	/* bad values name the key */
	FILE *f = fopen(path, "w");
	fprintf(f, "{\"preset\": \"h200-machine\", \"deepspeed\": {\"gpu_eff\": -1}}");
	fclose(f);
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_E_INPUT);
	assert_contains(err.msg, "deepspeed.gpu_eff");
	f = fopen(path, "w");
	fprintf(f, "{\"preset\": \"h200-machine\", \"deepspeed\": {\"hooks\": 1}}");
	fclose(f);
	assert_int_equal(zb_hw_load(path, &back, &err), ZB_E_INPUT);
	assert_contains(err.msg, "unknown key 'deepspeed.hooks'");
	unlink(path);
	rmdir(dir);
}

static void test_framework_table(void **state)
{
	int fw = -1;
	zb_error err = { 0 };
	assert_int_equal(zb_framework_parse("deepspeed", &fw, &err), ZB_OK);
	assert_int_equal(fw, ZB_FW_DEEPSPEED);
	assert_string_equal(zb_framework_name(ZB_FW_ZBENCH), "zbench");
	assert_int_equal(zb_framework_parse("megatron", &fw, &err), ZB_E_INPUT);
	assert_contains(err.msg, "unknown framework 'megatron'");
}

/* ---- accuracy against the measured runs ------------------------------------------- */

/* Both sessions of the 2.5 B table in one set (dsmeasured.h). */
static void load_tables(zb_ds_measured *m, const zb_config *c)
{
	const char *files[] = { DATA, TABLE2 };
	zb_error err = { 0 };
	zb_status st = zb_ds_measured_load_many(files, 2, &c->model, m, &err);
	if (st)
		print_error("%s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	assert_int_equal(m->n, 16);
	assert_int_equal(m->rows[0].nsteps, 5); /* steps 4-8 of the table */
	assert_int_equal(m->rows[8].nsteps, 5); /* 8 steps, warmup_steps 3 */
}

/* Every pair that DeepSpeed's own steps separate is ranked as DeepSpeed ranks it, and at
 * most two (s2-off / s2-off-ovl, s3-tf50 / s3-off-param: each pair's order differs between
 * sessions or between steps, dsorder.h) are not separated. */
static void check_order(const zb_ds_measured *m, const zb_config *c, const zb_ds_eval *e, int required,
			double *pooled_worst, double *pooled_mape)
{
	zb_ds_pooled *p = zb_xcalloc((size_t)m->n, sizeof *p);
	int n = zb_ds_pool(m, e, c, p);
	assert_int_equal(n, 8);
	zb_ds_order o;
	zb_ds_order_check(m, p, n, &o, stderr);
	print_message("# ranked as DeepSpeed: %d of %d separated pairs (%d pairs)\n", o.in_order, o.separated, o.pairs);
	assert_int_equal(o.pairs, 28);
	assert_true(o.separated >= 26);
	if (required)
		assert_true(o.in_order >= o.separated - ORDER_MISSES);
	*pooled_worst = 0, *pooled_mape = 0;
	for (int k = 0; k < n; k++) {
		double x = fabs(p[k].predicted_s / p[k].measured_s - 1);
		*pooled_mape += x / n;
		*pooled_worst = x > *pooled_worst ? x : *pooled_worst;
	}
	free(p);
}

static void errors(const zb_ds_measured *m, const zb_config *c, zb_ds_eval *e, double *worst, double *mape,
		   const char *what)
{
	*worst = 0, *mape = 0;
	for (int i = 0; i < m->n; i++) {
		zb_error err = { 0 };
		zb_status st = zb_ds_eval_row(m, i, c, &e[i], &err);
		if (st)
			print_error("%s\n", err.msg);
		assert_int_equal(st, ZB_OK);
		double x = fabs(e[i].step_s / m->rows[i].step_s - 1);
		print_message("# %-8s %-14s measured %6.0f ms predicted %6.0f ms (%+.1f%%)\n", what, m->rows[i].name,
			      m->rows[i].step_s * 1e3, e[i].step_s * 1e3, 100 * (e[i].step_s / m->rows[i].step_s - 1));
		*mape += x / m->n;
		*worst = x > *worst ? x : *worst;
	}
}

static void test_accuracy_measured(void **state)
{
	zb_ds_measured m;
	zb_error err = { 0 };
	zb_config c;
	base(&c);
	load_tables(&m, &c);
	zb_ds_eval e[16];
	double worst, mape, pworst, pmape;
	errors(&m, &c, e, &worst, &mape, "default");
	check_order(&m, &c, e, 0, &pworst, &pmape); /* presets alone: 24 of 26 (recorded) */
	print_message("# default profile: MAPE %.1f%%, worst %.1f%% (bound %.0f%%); pooled worst %.1f%% (bound %.0f%%)\n",
		      100 * mape, 100 * worst, 100 * BOUND_DEFAULT_WORST, 100 * pworst, 100 * BOUND_DEFAULT_POOLED_WORST);
	assert_true(worst <= BOUND_DEFAULT_WORST);
	assert_true(pworst <= BOUND_DEFAULT_POOLED_WORST);

	zb_ds_profile fitted;
	zb_ds_fit_report rep;
	assert_int_equal(zb_ds_calibrate(&m, &c, &fitted, &rep, &err), ZB_OK);
	c.hw.ds = fitted;
	errors(&m, &c, e, &worst, &mape, "fitted");
	check_order(&m, &c, e, 1, &pworst, &pmape);
	print_message("# fitted profile: MAPE %.1f%%, worst %.1f%% (bounds %.1f%%, %.1f%%); pooled MAPE %.1f%%, "
		      "worst %.1f%% (bounds %.1f%%, %.0f%%)\n", 100 * mape, 100 * worst, 100 * BOUND_FITTED_MAPE,
		      100 * BOUND_PRESET_FIT_WORST, 100 * pmape, 100 * pworst, 100 * BOUND_FITTED_POOLED_MAPE,
		      100 * BOUND_FITTED_POOLED_WORST);
	assert_true(worst <= BOUND_PRESET_FIT_WORST);
	assert_true(mape <= BOUND_FITTED_MAPE);
	assert_true(pworst <= BOUND_FITTED_POOLED_WORST);
	assert_true(pmape <= BOUND_FITTED_POOLED_MAPE);
	for (int i = 0; i < m.n; i++) {
		double g = e[i].gpu_B / m.rows[i].gpu_peak_B - 1, h = e[i].host_B / m.rows[i].host_rss_B - 1;
		print_message("# memory %-14s gpu %+.1f%% host %+.1f%%\n", m.rows[i].name, 100 * g, 100 * h);
		assert_true(fabs(g) <= BOUND_GPU_MEM);
		assert_true(fabs(h) <= BOUND_HOST_MEM);
	}
	zb_ds_measured_free(&m);
}

/* The committed fitted profile predicts the measured runs as well as a fresh fit. */
static void test_committed_profile(void **state)
{
	zb_ds_measured m;
	zb_error err = { 0 };
	zb_config c;
	base(&c);
	load_tables(&m, &c);
	assert_int_equal(zb_hw_load("hw/h200-machine-deepspeed.json", &c.hw, &err), ZB_OK);
	assert_true(c.hw.ds.set);
	zb_ds_eval e[16];
	double worst, mape, pworst, pmape;
	errors(&m, &c, e, &worst, &mape, "file");
	check_order(&m, &c, e, 1, &pworst, &pmape);
	assert_true(worst <= BOUND_FITTED_WORST);
	assert_true(pworst <= BOUND_FITTED_POOLED_WORST);
	/* the fit's second target: the profiled GPU kernel busy time of 4 rows */
	int busy = 0;
	for (int i = 0; i < m.n; i++) {
		if (m.rows[i].gpu_busy_s <= 0)
			continue;
		busy++;
		double x = e[i].gpu_busy_s / m.rows[i].gpu_busy_s - 1;
		print_message("# gpu busy %-8s measured %.0f ms predicted %.0f ms (%+.1f%%)\n", m.rows[i].name,
			      m.rows[i].gpu_busy_s * 1e3, e[i].gpu_busy_s * 1e3, 100 * x);
		assert_true(fabs(x) < 0.05);
	}
	assert_int_equal(busy, 4);
	zb_ds_measured_free(&m);
}

/* The shape terms the flat gpu_eff could not carry to other shapes. */
static void test_shape_terms(void **state)
{
	(void)state;
	zb_gpu g;
	memset(&g, 0, sizeof g);
	assert_true(zb_gemm_waves(&g, 2560, 2560, 1) == 1); /* SMs unknown */
	g.sms = 132;
	/* the H200's 2560 x 2560 weight gradient: 200 tiles in 2 waves */
	assert_close(zb_gemm_waves(&g, 2560, 2560, 1), 200.0 / 264.0, 1e-12);
	assert_close(zb_gemm_waves(&g, 1280, 8192, 1), 320.0 / 396.0, 1e-12);
	assert_true(zb_gemm_waves(&g, 10240, 8192, 1) > 0.96);

	zb_config c;
	base(&c);
	zb_model gpt = c.model, llama;
	assert_int_equal(zb_preset_model("llama2-7b", &llama, NULL), ZB_OK);
	/* fp32 RMSNorm moves 9x LayerNorm's bytes forward; rotary only without learned positions */
	assert_close(zb_ds_norm_bytes(&llama, 0) / llama.hidden, 36, 1e-12);
	assert_close(zb_ds_norm_bytes(&gpt, 0) / gpt.hidden, 4, 1e-12);
	assert_true(zb_ds_rotary_bytes(&gpt, 0) == 0 && zb_ds_rotary_bytes(&llama, 1) > 0);
	assert_true(zb_ds_extra_saved_bytes(&gpt) == 0 && zb_ds_extra_saved_bytes(&llama) > 0);
	/* GPT's fused QKV adds split's concatenation and bias gradients in backward */
	assert_true(zb_ds_layout_bytes(&gpt, 1) > zb_ds_layout_bytes(&gpt, 0));
}

/* Errors of the committed profile on the other shapes, in the data file's order
 * (gpt2-large s2-none s2-off s3-off s3-tf50, then Llama-3.2-3B the same), recorded with
 * DeepSpeed's host paths at the unit costs the Hugging Face fitting runs' counters
 * measured (data/deepspeed-hf-unit-costs.tsv) and the table's fit of the rest. A change
 * that moves any of them further from 0 by more than the slack fails: the shapes are
 * predicted without refitting. */
static const double shape_errors[8] = { -0.089, -0.004, -0.048, +0.095, -0.002, -0.034, -0.089, -0.020 };

/* The gpt2-large and Llama-3.2-3B runs (JSON lines): from presets, and without
 * refitting with the committed profile, which is the 2.5 B table's fit (checked:
 * a fresh fit from the calibrated hardware predicts the shapes the same). */
static void test_accuracy_shapes(void **state)
{
	zb_ds_measured m, t;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_measured_load(SHAPES, &m, &err), ZB_OK);
	assert_int_equal(m.n, 8);
	assert_true(m.rows[0].have_shape && m.rows[0].shape.layers == 36);
	zb_config c;
	base(&c);
	zb_ds_eval e[8], f[8];
	double worst, mape;
	errors(&m, &c, e, &worst, &mape, "default");
	print_message("# shapes, default profile: MAPE %.1f%%, worst %.1f%%\n", 100 * mape, 100 * worst);
	assert_true(worst <= BOUND_SHAPES_DEFAULT_WORST);

	assert_int_equal(zb_hw_load("hw/h200-machine-deepspeed.json", &c.hw, &err), ZB_OK);
	errors(&m, &c, e, &worst, &mape, "file");
	print_message("# shapes, committed profile (2.5 B fit): MAPE %.1f%%, worst %.1f%% (recorded MAPE %.1f%%)\n",
		      100 * mape, 100 * worst, 100 * SHAPES_MAPE);
	assert_true(mape <= SHAPES_MAPE + 0.002);
	for (int i = 0; i < m.n; i++) {
		double x = e[i].step_s / m.rows[i].step_s - 1;
		print_message("# %-8s recorded %+.1f%% now %+.1f%%\n", m.rows[i].name, 100 * shape_errors[i], 100 * x);
		assert_true(fabs(x) <= fabs(shape_errors[i]) + SHAPES_SLACK);
	}

	/* DeepSpeed's order on the held-out shapes, Llama's s2-off / s3-tf50 with a second session:
	 * every pair the steps separate in order (that pair is not separated: 1909 / 1890 ms) */
	{
		const char *files[] = { SHAPES, LLAMA2 };
		zb_ds_measured two;
		assert_int_equal(zb_ds_measured_load_many(files, 2, &c.model, &two, &err), ZB_OK);
		zb_ds_eval *e2 = zb_xcalloc((size_t)two.n, sizeof *e2);
		for (int i = 0; i < two.n; i++)
			assert_int_equal(zb_ds_eval_row(&two, i, &c, &e2[i], &err), ZB_OK);
		zb_ds_pooled *p = zb_xcalloc((size_t)two.n, sizeof *p);
		int n = zb_ds_pool(&two, e2, &c, p);
		assert_int_equal(n, 8);
		zb_ds_order o;
		zb_ds_order_check(&two, p, n, &o, stderr);
		print_message("# shapes ranked as DeepSpeed: %d of %d separated pairs (%d pairs)\n", o.in_order, o.separated,
			      o.pairs);
		assert_true(o.separated >= 26);
		assert_int_equal(o.in_order, o.separated);
		free(p);
		free(e2);
		zb_ds_measured_free(&two);
	}

	/* the committed file is the 2.5 B table's fit (both sessions): refit it here and compare */
	zb_config h;
	base(&h);
	load_tables(&t, &h);
	assert_int_equal(zb_hw_load("hw/h200-machine-calibrated.json", &h.hw, &err), ZB_OK);
	zb_ds_fit_report rep;
	assert_int_equal(zb_ds_calibrate(&t, &h, &h.hw.ds, &rep, &err), ZB_OK);
	errors(&m, &h, f, &worst, &mape, "refit");
	for (int i = 0; i < m.n; i++)
		assert_true(fabs(f[i].step_s / e[i].step_s - 1) < 0.01);
	zb_ds_measured_free(&t);
	zb_ds_measured_free(&m);
}

/* Predicted phases: each positive, together the steady step; offload puts most of
 * stage 2's time after the backward (CPU Adam). */
static void test_phases(void **state)
{
	zb_config c;
	base(&c);
	c.steps = 4;
	c.policy.zero_stage = 2;
	c.policy.kind = ZB_POLICY_OFFLOAD;
	zb_prediction p;
	zb_error err = { 0 };
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.simulated);
	zb_ds_phases ph;
	zb_ds_phases_of(&p.graph, &p.res, &ph);
	double sum = ph.fwd_s + ph.bwd_s + ph.opt_s;
	print_message("# phases fwd %.0f bwd %.0f opt %.0f ms, step %.0f ms\n", ph.fwd_s * 1e3, ph.bwd_s * 1e3,
		      ph.opt_s * 1e3, p.res.step_time_s * 1e3);
	assert_true(ph.fwd_s > 0 && ph.bwd_s > 0 && ph.opt_s > 0);
	assert_true(fabs(sum / p.res.step_time_s - 1) < 0.02);
	assert_true(ph.opt_s > ph.fwd_s + ph.bwd_s);
	zb_prediction_free(&p);
}

/* JSON lines: the row's shape and DeepSpeed config from the line; bad lines named. */
static void test_measured_jsonl(void **state)
{
	zb_ds_measured m;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_measured_load(SHAPES, &m, &err), ZB_OK);
	zb_config b, c;
	base(&b);
	assert_string_equal(m.rows[0].model, "gpt2-large"); /* named like the preset of its shape */
	assert_int_equal(zb_ds_row_config(&m.rows[7], SHAPES, &b, &c, &err), ZB_OK);
	assert_int_equal(c.model.layers, 28);
	assert_int_equal(c.model.kv_heads, 8);
	assert_int_equal(c.model.gated_mlp, 1);
	assert_int_equal(c.policy.seq, 2048);
	assert_int_equal(c.policy.micro_batch, 2);
	assert_int_equal(c.policy.zero_stage, 3);
	assert_true(c.policy.ratio > 0.3 && c.policy.ratio < 0.7); /* s3-tf50 */
	zb_ds_measured_free(&m);

	char dir[64], path[128];
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.jsonl", dir);
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"config\": \"x\", \"step_ms\": 5}\n", "m.jsonl:1: a result line needs config, ds_config" },
		{ "{\"config\": \"x\"}\nnot json\n", "m.jsonl:1:" },
		{ "{\"config\": \"x\", \"ds_config\": \"peers/configs/s2-off.json\", \"step_ms\": 5}\n",
		  "m.jsonl:1: no model shape" },
		{ "{\"config\": \"x\", \"ds_config\": \"nope.json\", \"step_ms\": 5, \"family\": \"gpt\", "
		  "\"layers\": 2, \"hidden\": 64, \"heads\": 2, \"vocab\": 100}\n",
		  "ds_config 'nope.json'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		FILE *f = fopen(path, "w");
		fputs(bad[i].text, f);
		fclose(f);
		err.msg[0] = 0;
		assert_int_not_equal(zb_ds_measured_load(path, &m, &err), ZB_OK);
		if (!strstr(err.msg, bad[i].want))
			print_error("got '%s', want '%s'\n", err.msg, bad[i].want);
		assert_non_null(strstr(err.msg, bad[i].want));
	}
}

/* The measured table: the shared file's first table only, per-row models (preset,
 * Hugging Face config), bad input named with file and line. */
static void test_measured_table(void **state)
{
	zb_ds_measured m;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_measured_load(DATA, &m, &err), ZB_OK);
	assert_int_equal(m.n, 8); /* the profiled table below it is not read */
	assert_string_equal(m.rows[7].name, "s3-off-param");
	assert_close(m.rows[0].step_s, 1.570, 1e-12);
	assert_close(m.rows[0].gpu_busy_s, 0.328, 1e-12); /* gpu_busy_ms column */
	assert_true(m.rows[3].gpu_busy_s == 0);           /* "-": not profiled */
	zb_ds_measured_free(&m);

	char dir[64], path[128];
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.tsv", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "# comment\nconfig\tzero\tstep_ms\tmodel\tseq\tmicro_batch\n"
		   "a\tstage 3, offload_optimizer cpu ratio 0.5\t900\ttests/data/hf-llama2-7b.json\t1024\t1\n"
		   "b\tstage 2, no offload\t400\tgpt2-large\t1024\t2\n\n");
	fclose(f);
	assert_int_equal(zb_ds_measured_load(path, &m, &err), ZB_OK);
	assert_int_equal(m.n, 2);
	zb_config b, c;
	base(&b);
	assert_int_equal(zb_ds_row_config(&m.rows[0], path, &b, &c, &err), ZB_OK);
	assert_int_equal(c.model.gated_mlp, 1);
	assert_int_equal(c.model.layers, 32);
	assert_int_equal(c.policy.seq, 1024);
	assert_int_equal(c.policy.zero_stage, 3);
	assert_int_equal(c.policy.kind, ZB_POLICY_OVERLAP); /* overlap_comm: stage 3's default */
	assert_true(c.policy.ratio > 0.3 && c.policy.ratio < 0.7);
	assert_int_equal(zb_ds_row_config(&m.rows[1], path, &b, &c, &err), ZB_OK);
	assert_int_equal(c.policy.kind, ZB_POLICY_NONE);
	assert_int_equal(c.policy.micro_batch, 2);
	zb_ds_measured_free(&m);

	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "config\tzero\nx\tstage 2\n", "no 'step_ms' column" },
		{ "config\tzero\tstep_ms\nx\tstage 2\tfast\n", "m.tsv:2: bad step_ms 'fast'" },
		{ "config\tzero\tstep_ms\tgpu_busy_ms\nx\tstage 2\t9\t-3\n", "m.tsv:2: bad gpu_busy_ms '-3'" },
		{ "# nothing here\n", "no measured table" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		f = fopen(path, "w");
		fputs(bad[i].text, f);
		fclose(f);
		assert_int_equal(zb_ds_measured_load(path, &m, &err), ZB_E_INPUT);
		assert_contains(err.msg, bad[i].want);
	}
	f = fopen(path, "w");
	fputs("config\tzero\tstep_ms\nx\tzero offload\t100\ny\tstage 2\t100\tno-such-model\n", f);
	fclose(f);
	assert_int_equal(zb_ds_measured_load(path, &m, &err), ZB_OK);
	assert_int_equal(zb_ds_row_config(&m.rows[0], path, &b, &c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "names no stage");
	zb_ds_measured_free(&m);
	unlink(path);
	rmdir(dir);
}

/* tune: candidates fastest first, each one's knobs reproduce its prediction, the
 * best is no slower than the input; the CLI writes a config that predicts the same
 * and keeps the input's other keys. */
static void test_tune(void **state)
{
	zb_config c;
	config_of(&c, "stage 3, offload_optimizer cpu");
	c.policy.micro_batch = 2;
	c.policy.gas = 2;
	zb_ds_candidate *v;
	int n, tried;
	zb_error err = { 0 };
	assert_int_equal(zb_ds_tune(&c, &v, &n, &tried, &err), ZB_OK);
	print_message("# %d settings tried, %d fit\n", tried, n);
	assert_true(n > 10 && n <= tried);
	for (int i = 1; i < n; i++)
		assert_true(v[i].step_s >= v[i - 1].step_s);
	zb_prediction p;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(v[0].step_s <= p.res.step_time_s);
	zb_prediction_free(&p);
	for (int i = 0; i < n; i += n / 7 + 1) {
		zb_config k = c;
		zb_ds_knobs_apply(&v[i].k, &k);
		assert_int_equal(v[i].k.micro_batch * v[i].k.gas, 4);
		assert_int_equal(zb_predict(&p, &k, &err), ZB_OK);
		assert_close(p.res.step_time_s, v[i].step_s, 1e-9);
		zb_prediction_free(&p);
	}
	free(v);

	char dir[64], in[128], out[128], cmd[1024];
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(in, sizeof in, "%s/in.json", dir);
	snprintf(out, sizeof out, "%s/tuned.json", dir);
	FILE *f = fopen(in, "w");
	fprintf(f, "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 2, \"bf16\": {\"enabled\": true},"
		   " \"steps_per_print\": 77, \"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\","
		   " \"pin_memory\": true, \"buffer_count\": 5}, \"sub_group_size\": 1e8}}");
	fclose(f);
	const char *bin = getenv("ZBENCH");
	snprintf(cmd, sizeof cmd, "%s tune --no-db --ds-config %s --model gpt2-large --seq 1024 --top 3 -o %s > %s/out 2>&1",
		 bin && *bin ? bin : "build/zbench", in, out, dir);
	int rc = system(cmd);
	snprintf(cmd, sizeof cmd, "%s/out", dir);
	char *text = zb_test_slurp(cmd, NULL);
	if (rc != 0)
		print_error("%s\n", text);
	assert_int_equal(rc, 0);
	assert_contains(text, "# wrote");
	double best_ms = 0;
	const char *line = strstr(text, "\n   1 ");
	assert_non_null(line);
	assert_int_equal(sscanf(line + 6, "%lf", &best_ms), 1);
	free(text);
	json_error_t je;
	json_t *t = json_load_file(out, 0, &je);
	assert_non_null(t);
	assert_int_equal(json_integer_value(json_object_get(t, "steps_per_print")), 77);
	json_t *oo = json_object_get(json_object_get(t, "zero_optimization"), "offload_optimizer");
	if (oo) /* kept with its other keys, whatever the device */
		assert_int_equal(json_integer_value(json_object_get(oo, "buffer_count")), 5);
	json_decref(t);
	snprintf(cmd, sizeof cmd, "%s predict --no-db --json --ds-config %s --model gpt2-large --seq 1024 > %s/out 2>/dev/null",
		 bin && *bin ? bin : "build/zbench", out, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s/out", dir);
	t = json_load_file(cmd, 0, &je);
	assert_non_null(t);
	assert_close(json_real_value(json_object_get(t, "step_time_s")) * 1e3, best_ms, 1e-3);
	json_decref(t);
	unlink(cmd);
	unlink(in);
	unlink(out);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_per_param),
		cmocka_unit_test(test_subgroups_serial_after_backward),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_unscale_and_serial_flush),
		cmocka_unit_test(test_held_costs_match_split),
		cmocka_unit_test(test_variants),
		cmocka_unit_test(test_ratio_monotone),
		cmocka_unit_test(test_profile_json),
		cmocka_unit_test(test_framework_table),
		cmocka_unit_test(test_accuracy_measured),
		cmocka_unit_test(test_committed_profile),
		cmocka_unit_test(test_shape_terms),
		cmocka_unit_test(test_accuracy_shapes),
		cmocka_unit_test(test_measured_jsonl),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_measured_table),
		cmocka_unit_test(test_tune),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
