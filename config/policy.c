/*
 * policy.c - the policy part of zb_config_resolve: zbench's defaults, then what a
 * DeepSpeed config decides (resolved for the model chosen so far: "auto" values
 * depend on its hidden size), then the policy flags, which override the file. Last,
 * ZeRO-3 places Twin-Flow work by whole sub-groups, so the ratio that runs is
 * quantized the way DeepSpeed does (inputs/dsconfig.h).
 */
#include "config/parts.h"

#include <stdio.h>

#include "core/attention.h"
#include "core/limits.h"
#include "core/model.h"

/* The settings a policy flag sets directly, for marking. */
static const struct {
	zb_axis axis;
	zb_setting setting;
} flag_settings[] = {
	{ ZB_AX_POLICY, ZB_SET_POLICY }, { ZB_AX_RATIO, ZB_SET_RATIO }, { ZB_AX_PREFETCH, ZB_SET_PREFETCH },
	{ ZB_AX_CKPT, ZB_SET_CKPT }, { ZB_AX_GAS, ZB_SET_GAS }, { ZB_AX_MICRO_BATCH, ZB_SET_MICRO_BATCH },
	{ ZB_AX_SEQ, ZB_SET_SEQ }, { ZB_AX_DTYPE, ZB_SET_DTYPE }, { ZB_AX_BUCKET, ZB_SET_BUCKET },
	{ ZB_AX_THREADS, ZB_SET_THREADS }, { ZB_AX_STEPS, ZB_SET_STEPS },
};

/* The DeepSpeed plan's fields and the settings they are. */
static const zb_setting ds_settings[ZB_DSF_COUNT] = {
	[ZB_DSF_KIND] = ZB_SET_POLICY, [ZB_DSF_RATIO] = ZB_SET_RATIO,
	[ZB_DSF_OFFLOAD_PARAM] = ZB_SET_OFFLOAD_PARAM, [ZB_DSF_PREFETCH] = ZB_SET_PREFETCH,
	[ZB_DSF_CKPT] = ZB_SET_CKPT, [ZB_DSF_MICRO_BATCH] = ZB_SET_MICRO_BATCH, [ZB_DSF_GAS] = ZB_SET_GAS,
	[ZB_DSF_DTYPE] = ZB_SET_DTYPE, [ZB_DSF_PAGEABLE] = ZB_SET_PAGEABLE, [ZB_DSF_BUCKET] = ZB_SET_BUCKET,
};

static void ds_copy(zb_policy *p, const zb_policy *from, zb_ds_field f)
{
	switch (f) {
	case ZB_DSF_KIND: p->kind = from->kind; break;
	case ZB_DSF_RATIO: p->ratio = from->ratio; break;
	case ZB_DSF_OFFLOAD_PARAM: p->offload_param = from->offload_param; break;
	case ZB_DSF_PREFETCH: p->prefetch_layers = from->prefetch_layers; break;
	case ZB_DSF_CKPT: p->ckpt = from->ckpt; break;
	case ZB_DSF_MICRO_BATCH: p->micro_batch = from->micro_batch; break;
	case ZB_DSF_GAS: p->gas = from->gas; break;
	case ZB_DSF_DTYPE: p->dtype = from->dtype; break;
	case ZB_DSF_PAGEABLE: p->pageable = from->pageable; break;
	case ZB_DSF_BUCKET: p->bucket_params = from->bucket_params; break;
	case ZB_DSF_COUNT: break;
	}
}

static void defaults(zb_config *c, zb_sources *s)
{
	static const zb_setting policy_settings[] = { ZB_SET_POLICY, ZB_SET_RATIO, ZB_SET_OFFLOAD_PARAM,
						      ZB_SET_PREFETCH, ZB_SET_CKPT, ZB_SET_MICRO_BATCH,
						      ZB_SET_GAS, ZB_SET_SEQ, ZB_SET_DTYPE, ZB_SET_PAGEABLE,
						      ZB_SET_BUCKET, ZB_SET_THREADS, ZB_SET_STEPS };
	zb_policy_defaults(&c->policy);
	for (size_t i = 0; i < sizeof policy_settings / sizeof policy_settings[0]; i++)
		zb_src_mark(s, policy_settings[i], ZB_SRC_DEFAULT, "zbench's default");
	if (c->hw.gpus_per_cpu > 1) /* the host is shared: this GPU's share of the cores */
		zb_src_mark(s, ZB_SET_THREADS, ZB_SRC_DEFAULT, "%d cores / %d GPUs per CPU", c->hw.cpu.cores,
			    c->hw.gpus_per_cpu);
	else
		zb_src_mark(s, ZB_SET_THREADS, ZB_SRC_DEFAULT, "all cores");
}

/* The DeepSpeed config for this model: the fields it sets replace the defaults. */
static zb_status deepspeed(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	/* "auto" batch values are the Trainer's arguments: here the flags or defaults */
	zb_ds_batch b = { c->policy.micro_batch, c->policy.gas, v[ZB_AX_MICRO_BATCH] != NULL,
			  v[ZB_AX_GAS] != NULL };
	ZB_INT_AXIS(v, ZB_AX_MICRO_BATCH, b.micro);
	ZB_INT_AXIS(v, ZB_AX_GAS, b.gas);
	if ((st = zb_ds_plan_make(in->ds, &c->model, &b, &s->plan, err)))
		return st;
	s->ds = 1;
	s->ds_ignored = in->ds->nignored;
	snprintf(s->ds_path, sizeof s->ds_path, "%s", in->ds->path);
	for (int f = 0; f < ZB_DSF_COUNT; f++) {
		if (!s->plan.set[f])
			continue;
		ds_copy(&c->policy, &s->plan.policy, (zb_ds_field)f);
		zb_src_mark(s, ds_settings[f], ZB_SRC_DS, "%s", s->plan.why[f]);
	}
	/* activation_checkpointing configures deepspeed.checkpointing, which a Hugging Face
	 * model only uses if asked: transformers checkpoints through
	 * gradient_checkpointing_enable(), which the section does not turn on */
	if (in->hf && s->plan.set[ZB_DSF_CKPT]) {
		c->policy.ckpt = ZB_CKPT_NONE;
		snprintf(s->ds_note, sizeof s->ds_note,
			 "activation_checkpointing: a Hugging Face model checkpoints through "
			 "gradient_checkpointing_enable(), which this section does not turn on: no checkpointing "
			 "assumed (--ckpt gpu: HF's, --ckpt cpu: checkpoints on the host, --ckpt none)");
		zb_src_mark(s, ZB_SET_CKPT, ZB_SRC_DS, "%s", s->ds_note);
	}
	return ZB_OK;
}

static zb_status flags(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	if (v[ZB_AX_POLICY] && (st = zb_policy_parse(v[ZB_AX_POLICY], &c->policy.kind, err)))
		return st;
	if (v[ZB_AX_RATIO] && zb_axis_parse_real(v[ZB_AX_RATIO], ZB_AX_RATIO, &c->policy.ratio, err))
		return ZB_E_INPUT;
	if (v[ZB_AX_CKPT] && (st = zb_ckpt_parse(v[ZB_AX_CKPT], &c->policy.ckpt, err)))
		return st;
	if (v[ZB_AX_DTYPE] && (st = zb_dtype_parse(v[ZB_AX_DTYPE], &c->policy.dtype, err)))
		return st;
	ZB_INT_AXIS(v, ZB_AX_PREFETCH, c->policy.prefetch_layers);
	ZB_INT_AXIS(v, ZB_AX_GAS, c->policy.gas);
	ZB_INT_AXIS(v, ZB_AX_MICRO_BATCH, c->policy.micro_batch);
	ZB_INT_AXIS(v, ZB_AX_SEQ, c->policy.seq);
	ZB_INT_AXIS(v, ZB_AX_THREADS, c->policy.cpu_threads);
	ZB_INT_AXIS(v, ZB_AX_GPUS, c->policy.gpus);
	ZB_INT_AXIS(v, ZB_AX_NODES, c->policy.nodes);
	if (v[ZB_AX_BUCKET]) {
		long long x;
		if (zb_axis_parse_int(v[ZB_AX_BUCKET], ZB_AX_BUCKET, &x, err))
			return ZB_E_INPUT;
		if (x > ZB_MAX_BUCKET)
			return zb_fail(err, ZB_E_INPUT, "--bucket %s exceeds the limit %lld", v[ZB_AX_BUCKET],
				       (long long)ZB_MAX_BUCKET);
		c->policy.bucket_params = x;
	}
	c->steps = 6;
	ZB_INT_AXIS(v, ZB_AX_STEPS, c->steps);
	for (size_t i = 0; i < sizeof flag_settings / sizeof flag_settings[0]; i++)
		if (v[flag_settings[i].axis])
			zb_src_mark_flag(s, flag_settings[i].setting, flag_settings[i].axis, v[flag_settings[i].axis]);
	if (in->offload_param) {
		c->policy.offload_param = 1;
		zb_src_mark(s, ZB_SET_OFFLOAD_PARAM, ZB_SRC_FLAG, "--offload-param");
	}
	if (in->pageable) {
		c->policy.pageable = 1;
		zb_src_mark(s, ZB_SET_PAGEABLE, ZB_SRC_FLAG, "--pageable");
	}
	return ZB_OK;
}

/* --attention (flash needs a head shape the fused kernels take) and --link-rate
 * (after --pageable is known: pacing is for pinned copies). */
static zb_status attention_and_link(const zb_config_inputs *in, zb_config *c, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	if (v[ZB_AX_ATTENTION]) {
		if ((st = zb_attention_parse(v[ZB_AX_ATTENTION], &c->policy.attention, err)))
			return st;
		if (c->policy.attention == ZB_ATTN_FLASH && !zb_attention_flash_ok(&c->model))
			return zb_fail(err, ZB_E_INPUT,
				       "--attention flash: head dim %d (%d heads, %d kv heads) not supported by the fused "
				       "kernels (head dim 32, 64, 80, 96 or 128)",
				       zb_model_head_dim(&c->model), c->model.heads, c->model.kv_heads);
	}
	if (v[ZB_AX_LINK_RATE]) {
		double gbps;
		if (zb_axis_parse_real(v[ZB_AX_LINK_RATE], ZB_AX_LINK_RATE, &gbps, err))
			return ZB_E_INPUT;
		return zb_link_rate_apply(c, gbps * 1e9, err);
	}
	return ZB_OK;
}

/* After the flags: what "auto" in the file meant, and ZeRO-3's sub-group ratio. */
static void deepspeed_notes(const zb_config_inputs *in, zb_config *c, zb_sources *s)
{
	for (int f = 0; f < ZB_DSF_COUNT; f++)
		if (!s->plan.set[f] && s->plan.why[f][0])
			zb_src_note(s, ds_settings[f], " (%s: %s)", in->ds->path, s->plan.why[f]);
	if (s->plan.stage == 3 && s->plan.offload_optimizer && c->policy.kind != ZB_POLICY_NONE &&
	    c->policy.ratio >= 0 && c->policy.ratio <= 1) {
		double asked = c->policy.ratio;
		zb_ds_twinflow_split(&c->model, s->plan.sub_group_size, asked, &s->split);
		s->twinflow = 1;
		s->ratio_asked = asked;
		c->policy.ratio = s->split.ratio;
		if (asked > 0 && asked < 1)
			zb_src_note(s, ZB_SET_RATIO, "; ZeRO-3 runs whole sub-groups: %d of %d (sub_group_size %lld) on the CPU, "
						     "%g asked, %.4f effective",
				    s->split.cpu_sub_groups, s->split.sub_groups, (long long)s->plan.sub_group_size, asked,
				    s->split.ratio);
	}
}

/* Whose schedule: a DeepSpeed config implies DeepSpeed's unless --framework says;
 * with DeepSpeed's schedule its ZeRO stage and sub-group size. */
static zb_status framework(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	c->framework = ZB_FW_ZBENCH;
	zb_src_mark(s, ZB_SET_FRAMEWORK, ZB_SRC_DEFAULT, "zbench's default");
	zb_src_mark(s, ZB_SET_ZERO_STAGE, ZB_SRC_DEFAULT, "3 with offload_param or ratio < 1, else 2");
	zb_src_mark(s, ZB_SET_SUB_GROUP, ZB_SRC_DEFAULT, "DeepSpeed's default 1e9");
	if (in->ds) {
		c->framework = ZB_FW_DEEPSPEED;
		zb_src_mark(s, ZB_SET_FRAMEWORK, ZB_SRC_DS, "%s given: DeepSpeed's schedule", in->ds->path);
		c->policy.zero_stage = s->plan.stage;
		zb_src_mark(s, ZB_SET_ZERO_STAGE, ZB_SRC_DS, "zero_optimization.stage %d", s->plan.stage);
		c->policy.sub_group_size = s->plan.sub_group_size;
		zb_src_mark(s, ZB_SET_SUB_GROUP, ZB_SRC_DS, "zero_optimization.sub_group_size (resolved %lld)",
			    (long long)s->plan.sub_group_size);
		/* ZeRO-3's coordinator as the file resolves it (0 there: an explicit 0, core/config.h) */
		const zb_ds_plan *pl = &s->plan;
		c->policy.prefetch_bucket = pl->prefetch_elements > 0 ? pl->prefetch_elements : -1;
		c->policy.persist_threshold = pl->persistence_threshold > 0 ? pl->persistence_threshold : -1;
		c->policy.max_live = pl->max_live > 0 ? pl->max_live : -1;
		c->policy.max_reuse = pl->max_reuse > 0 ? pl->max_reuse : -1;
	}
	if (v[ZB_AX_FRAMEWORK] && (st = zb_framework_parse(v[ZB_AX_FRAMEWORK], &c->framework, err)))
		return st;
	ZB_INT_AXIS(v, ZB_AX_ZERO_STAGE, c->policy.zero_stage);
	if (v[ZB_AX_SUB_GROUP]) {
		long long x;
		if (zb_axis_parse_int(v[ZB_AX_SUB_GROUP], ZB_AX_SUB_GROUP, &x, err))
			return ZB_E_INPUT;
		c->policy.sub_group_size = x;
	}
	for (int a = ZB_AX_FRAMEWORK; a <= ZB_AX_SUB_GROUP; a++)
		if (v[a])
			zb_src_mark_flag(s, (zb_setting)(ZB_SET_FRAMEWORK + (a - ZB_AX_FRAMEWORK)), (zb_axis)a, v[a]);
	/* DeepSpeed's ZeRO-3 places Twin-Flow by whole sub-groups, whoever gave the ratio
	 * (the file's was quantized above; a --ratio flag with DeepSpeed's schedule here) */
	if (c->framework == ZB_FW_DEEPSPEED && !s->twinflow && c->policy.kind != ZB_POLICY_NONE &&
	    c->policy.ratio > 0 && c->policy.ratio < 1) {
		double asked = c->policy.ratio;
		int64_t sub_group = c->policy.sub_group_size > 0 ? c->policy.sub_group_size : ZB_DS_SUB_GROUP_DEFAULT;
		zb_ds_twinflow_split(&c->model, sub_group, asked, &s->split);
		s->twinflow = 1;
		s->ratio_asked = asked;
		c->policy.ratio = s->split.ratio;
		zb_src_note(s, ZB_SET_RATIO, "; ZeRO-3 runs whole sub-groups: %d of %d on the CPU, %g asked, %.4f effective",
			    s->split.cpu_sub_groups, s->split.sub_groups, asked, s->split.ratio);
	}
	return ZB_OK;
}

zb_status zb_resolve_policy(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	zb_status st;
	defaults(c, s);
	if (in->ds && (st = deepspeed(in, c, s, err)))
		return st;
	if ((st = flags(in, c, s, err)) || (st = attention_and_link(in, c, err)))
		return st;
	if (in->ds)
		deepspeed_notes(in, c, s);
	return framework(in, c, s, err);
}
