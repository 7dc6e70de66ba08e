/*
 * dsprofile.c - DeepSpeed framework profile: defaults with their sources, ranges,
 * the "deepspeed" object of hardware files; see dsprofile.h.
 *
 * Defaults are read off the measured H200 data (data/deepspeed-h200-table.tsv,
 * first table: step times; second: one profiled step per configuration), by
 * subtracting what the hardware profile already explains from a profiled phase:
 * they are what an uncalibrated prediction uses, and the starting point of
 * `zbench calibrate --deepspeed`.
 */
#include "core/dsprofile.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

static const struct {
	zb_ds_param_info info;
	size_t off;
	double def;
} params[ZB_DS_NPARAM] = {
	{ { "gpu_eff", "", 0.2, 1.5,
	    "s2-none: kernels busy 396 ms of which ~55 ms optimizer and copies; zbench's kernel model "
	    "(h200 preset, causal flash attention) gives the forward and backward in ~0.6 of the rest", 0, 0 },
	  offsetof(zb_ds_profile, gpu_eff), 0.60 },
	{ { "step_s", "s", 0, 1,
	    "s2-none: step 451 ms against 396 ms of kernels; fwd launch 16 ms (profiled host times)", 0, 0 },
	  offsetof(zb_ds_profile, step_s), 0.035 },
	{ { "hook_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-h200.jsonl, steady steps; "
	    "data/deepspeed-hf-unit-costs.tsv) per call: the pre- and post-module functions of the forward "
	    "and backward (fetch_sub_module and release_sub_module in them) less the parameters' gathers, "
	    "handle waits and releases, per module and pass: 192.1 / 211.9 us (was 0.406 ms, read off the "
	    "2.5 B GPT's forward time with everything ZeRO-3 adds to it); held", 1, 0 },
	  offsetof(zb_ds_profile, hook_s), 2.097e-4 },
	{ { "grad_hook_s", "s", 0, 0.01,
	    "ds_step.py --step-split, H200 machine (data/deepspeed-h200-split.jsonl): "
	    "copy_grads_in_partition 151.8 / 280.7 / 345.8 ms over 436 / 254 / 388 tensors (gpt2-large, "
	    "Llama-3.2-3B, gpt-2.5b s2-off) less their 4 B/param D2H at 55.8 GB/s: 0.28 ms a tensor; held", 1, 0 },
	  offsetof(zb_ds_profile, grad_hook_s), 2.8e-4 },
	{ { "cpu_adam_rel", "", 0.2, 2,
	    "DeepSpeed's _optimizer_step timed in its step() by ds_step.py --step-split ("
	    "data/deepspeed-h200-split.jsonl): 192.6 / 732.3 / 604.1 ms for 0.774 / 3.213 / "
	    "2.652 B params, 4.34 Gparam/s pooled (alone: 3.92-4.22), against the h200-machine preset's 4.4", 0, 0 },
	  offsetof(zb_ds_profile, cpu_adam_rel), 0.99 },
	{ { "pageable_h2d_Bps", "B/s", 1e8, 1e12,
	    "s3-off: 2 B/param pageable H2D of 2.652 B params in 639 ms (profiled); held", 1, 0 },
	  offsetof(zb_ds_profile, pageable_h2d_Bps), 8.3e9 },
	{ { "cast_Bps", "B/s", 1e9, 1e12,
	    "step()'s fp32 -> bf16 copy_ into the pinned buffer, timed alone on the same tensors after the "
	    "run by ds_step.py --step-split (data/deepspeed-h200-split.jsonl): "
	    "63.1 / 237.0 / 227.7 ms for 0.774 / 3.213 / 2.652 B params: 6 B/param at 75.5 GB/s (in ZeRO-3's "
	    "step with offload_param, data/deepspeed-h200-split-s3.jsonl: 80.6); held", 1, 0 },
	  offsetof(zb_ds_profile, cast_Bps), 7.55e10 },
	{ { "fresh_Bps", "B/s", 1e8, 1e12,
	    "stage3.py's _reassign_or_swap_out_partitioned_parameters timed by ds_step.py --step-split "
	    "(data/deepspeed-h200-split-s3.jsonl): s3-off 1258.4 ms (cast, fresh "
	    "pageable temporary, pageable H2D) less the tuned config's 197.3 ms (the same cast into pinned "
	    "host memory) less the profiled 639 ms H2D: 422 ms for 2 B/param; held", 1, 0 },
	  offsetof(zb_ds_profile, fresh_Bps), 1.256e10 },
	{ { "torch_adam_Bpp", "B", 16, 400,
	    "torch AdamW multi-tensor (foreach): ~5 passes over fp32 p, g, m, v; s2-none kernels", 0, 0 },
	  offsetof(zb_ds_profile, torch_adam_Bpp), 64 },
	{ { "subgroup_s", "s", 0, 0.1,
	    "not separable in the profiled step (inside s3-off's 486 ms of other host work): 2 ms per "
	    "sub-group as a start, left to calibrate", 0, 0 },
	  offsetof(zb_ds_profile, subgroup_s), 0.002 },
	{ { "unscale_Bps", "B/s", 1e9, 1e12,
	    "unscale_and_clip_grads multiplies the host fp32 gradient partition by 1/scale even at scale 1 "
	    "(stage_1_and_2.py, stage3.py): timed by ds_step.py --step-split on the H200 machine "
	    "(data/deepspeed-h200-split.jsonl), 56.4 / 204.1 / 174.0 ms for 0.774 / 3.213 / "
	    "2.652 B params (gpt2-large, Llama-3.2-3B, gpt-2.5b s2-off): 8 B/param at 122 GB/s; held", 1, 0 },
	  offsetof(zb_ds_profile, unscale_Bps), 1.22e11 },
	{ { "fetch_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-h200.jsonl, steady steps; "
	    "data/deepspeed-hf-unit-costs.tsv) per call: __all_gather_params' seconds over the parameters it "
	    "gathers (their .to() copies issued, the in-flight registry): 109.5 / 118.1 us; held", 1, 0 },
	  offsetof(zb_ds_profile, fetch_s), 1.171e-4 },
	{ { "z3_grad_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per call: "
	    "reduce_ready_partitions_and_remove_grads less the bucket reductions it runs (the gradient into "
	    "the IPG bucket), per gradient hook: 120.5 / 132.0 us; held", 1, 0 },
	  offsetof(zb_ds_profile, z3_grad_s), 1.307e-4 },
	{ { "flush_s", "s", 0, 0.1,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per call: "
	    "__reduce_and_partition_ipg_grads less its partition_grads, per bucket (events, the world-1 "
	    "all_reduce call, the average): 401.5 / 441.2 us; held", 1, 0 },
	  offsetof(zb_ds_profile, flush_s), 4.368e-4 },
	{ { "acc_hook_s", "s", 0, 0.01,
	    "measured on ZeRO-3's path that issues the same three copies (no fitting run has ZeRO-1/2 "
	    "offload at gas > 1): ds_counts of the llama-3.2-1b ZeRO-3 tutorial run at gas 8 less the one at gas 1 (data/deepspeed-hf-unit-costs.tsv), partition_grads "
	    "per parameter at a micro-step after the first (partition up, add, down issued; the first "
	    "micro-step's 121.0 us at the gas-1 run's rate taken out); held", 1, 0 },
	  offsetof(zb_ds_profile, acc_hook_s), 1.724e-4 },
	{ { "overflow_Bps", "B/s", 1e8, 1e12,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per byte: "
	    "_overflow_check_and_loss_scale_update over the 16-bit host gradient buffer counted 8 B/param "
	    "(isinf, isnan, each an any() over its bool copy): 10.1 / 9.0 GB/s, far below the unscale "
	    "pass's 122; held", 1, 0 },
	  offsetof(zb_ds_profile, overflow_Bps), 9.535e9 },
	{ { "release_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per call: "
	    "__release_param's seconds over the parameters it partitions again: 106.6 / 123.6 us; held", 1, 0 },
	  offsetof(zb_ds_profile, release_s), 1.214e-4 },
	{ { "z3_part_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per call: partition_grads "
	    "less _offload_grad_partition_at_boundary, per parameter (its copies to and from the pinned "
	    "gradient partition issued): 121.0 / 166.0 us; held", 1, 0 },
	  offsetof(zb_ds_profile, z3_part_s), 1.610e-4 },
	{ { "z3_offload_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) (data/deepspeed-hf-unit-costs.tsv) per call: "
	    "_offload_grad_partition_at_boundary (the partition's norm, its fp32 copy issued): "
	    "196.3 / 188.6 us; held", 1, 0 },
	  offsetof(zb_ds_profile, z3_offload_s), 1.924e-4 },
	{ { "z2_hook_s", "s", 0, 0.01,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-2 runs (offload, and the tuned config) (data/deepspeed-hf-unit-costs.tsv) per call: "
	    "reduce_independent_p_g_buckets_and_remove_grads less the bucket reductions it runs: "
	    "143.7 / 81.6 us; held", 1, 0 },
	  offsetof(zb_ds_profile, z2_hook_s), 1.126e-4 },
	{ { "z2_flush_s", "s", 0, 0.1,
	    "measured: ds_counts of the llama-3.2-1b ZeRO-2 runs (offload, and the tuned config) (data/deepspeed-hf-unit-costs.tsv) per call: reduce_ipg_grads "
	    "less its copy_grads_in_partition, per bucket (average_tensor's world-1 all_reduce call and its "
	    "per-tensor bookkeeping): 1483 us over the offload run's 3 buckets of ~49 tensors, 379.4 over the tuned run's 130; "
	    "pooled; held", 1, 0 },
	  offsetof(zb_ds_profile, z2_flush_s), 4.043e-4 },
	{ { "py_fwd_s", "s", 0, 0.01,
	    "fitted: the forward phase (fwd_ms, host time of engine()) of the llama-3.2-1b ZeRO-2 runs (offload, and the tuned config; ZeRO-1/2: no DeepSpeed "
	    "path in the forward) over its module calls, as ZeRO-3's pre-forward hooks count them on the same "
	    "model (214 at gas 1) (data/deepspeed-hf-unit-costs.tsv): 121.6 / 93.5 us; held", 1, 0 },
	  offsetof(zb_ds_profile, py_fwd_s), 1.075e-4 },
	{ { "py_bwd_s", "s", 0, 0.01,
	    "fitted: the backward phase of the llama-3.2-1b ZeRO-2 runs (offload, and the tuned config) less its counted gradient hooks and epilogue, over its "
	    "module calls (data/deepspeed-hf-unit-costs.tsv): 231.0 / 254.6 us; held", 1, 0 },
	  offsetof(zb_ds_profile, py_bwd_s), 2.428e-4 },
	{ { "wrap_s", "s", 0, 0.01,
	    "fitted: the forward and backward phases of the llama-3.2-1b ZeRO-3 tutorial runs (gas 1, 8) less every counted path in them and "
	    "py_fwd_s, py_bwd_s, over their module calls (data/deepspeed-hf-unit-costs.tsv): 166.9 / 238.9 us; "
	    "no counter wraps torch's hook dispatch or the autograd Functions; held", 1, 0 },
	  offsetof(zb_ds_profile, wrap_s), 2.309e-4 },
};

const zb_ds_param_info *zb_ds_param(int i)
{
	return i >= 0 && i < ZB_DS_NPARAM ? &params[i].info : NULL;
}

double *zb_ds_param_ptr(zb_ds_profile *p, int i)
{
	return (double *)((char *)p + params[i].off);
}

double zb_ds_param_get(const zb_ds_profile *p, int i)
{
	return *(const double *)((const char *)p + params[i].off);
}

void zb_ds_profile_defaults(zb_ds_profile *p)
{
	memset(p, 0, sizeof *p);
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		*zb_ds_param_ptr(p, i) = params[i].def;
	p->flash = 1;
	p->set = 1;
}

const zb_ds_profile *zb_ds_profile_of(const zb_ds_profile *maybe, zb_ds_profile *scratch)
{
	if (maybe && maybe->set)
		return maybe;
	zb_ds_profile_defaults(scratch);
	return scratch;
}

zb_status zb_ds_profile_validate(const zb_ds_profile *p, zb_error *err)
{
	for (int i = 0; i < ZB_DS_NPARAM; i++) {
		double v = zb_ds_param_get(p, i);
		if (!isfinite(v) || v < params[i].info.lo || v > params[i].info.hi)
			return zb_fail(err, ZB_E_INPUT, "deepspeed.%s %g out of range [%g, %g]", params[i].info.key,
				       v, params[i].info.lo, params[i].info.hi);
	}
	if (p->flash != 0 && p->flash != 1)
		return zb_fail(err, ZB_E_INPUT, "deepspeed.flash %d must be 0 or 1", p->flash);
	return ZB_OK;
}

static int param_index(const char *key)
{
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		if (strcmp(key, params[i].info.key) == 0)
			return i;
	return -1;
}

/* "source": { "fetch_s": "not measured: ...", ... }: each key a profile key, each value text. */
static zb_status read_sources(const json_t *v, const char *path, zb_error *err)
{
	if (!json_is_object(v))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'deepspeed.source' must be an object", path);
	const char *k;
	json_t *text;
	json_object_foreach((json_t *)v, k, text) {
		if (param_index(k) < 0 && strcmp(k, "flash") != 0)
			return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'deepspeed.source.%s'", path, k);
		if (!json_is_string(text))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'deepspeed.source.%s' must be a string", path, k);
	}
	return ZB_OK;
}

zb_status zb_ds_profile_from_json(const void *obj, const char *path, zb_ds_profile *out, zb_error *err)
{
	const json_t *o = obj;
	zb_ds_profile p;
	zb_ds_profile_defaults(&p);
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'deepspeed' must be an object", path);
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		if (strcmp(key, "source") == 0) {
			zb_status st = read_sources(v, path, err);
			if (st)
				return st;
			continue;
		}
		if (strcmp(key, "flash") == 0) {
			if (!json_is_boolean(v))
				return zb_fail(err, ZB_E_INPUT, "%s: key 'deepspeed.flash' must be true or false", path);
			p.flash = json_is_true(v);
			continue;
		}
		int i;
		for (i = 0; i < ZB_DS_NPARAM; i++)
			if (strcmp(key, params[i].info.key) == 0)
				break;
		if (i == ZB_DS_NPARAM)
			return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'deepspeed.%s'", path, key);
		if (!json_is_number(v))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'deepspeed.%s' must be a number", path, key);
		*zb_ds_param_ptr(&p, i) = json_number_value(v);
	}
	zb_error e;
	if (zb_ds_profile_validate(&p, &e))
		return zb_fail(err, ZB_E_INPUT, "%s: %s", path, e.msg);
	*out = p;
	return ZB_OK;
}

void *zb_ds_profile_to_json(const zb_ds_profile *p)
{
	json_t *o = json_object();
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		json_object_set_new(o, params[i].info.key, json_real(zb_ds_param_get(p, i)));
	json_object_set_new(o, "flash", json_boolean(p->flash));
	/* where each value comes from: its documented source while it is the default, else the fit */
	json_t *src = json_object();
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		json_object_set_new(src, params[i].info.key,
				    json_string(fabs(zb_ds_param_get(p, i) / params[i].def - 1) < 1e-9
							? params[i].info.source
							: "fitted by zbench calibrate --deepspeed to the step times it was given"));
	if (json_object_size(src) > 0)
		json_object_set_new(o, "source", src);
	else
		json_decref(src);
	return o;
}
