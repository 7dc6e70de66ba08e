/*
 * dsconfig.c - DeepSpeed JSON configs as zbench policies; see dsconfig.h.
 *
 * Reading walks the file once against three tables: the keys zbench maps (typed,
 * range-checked, "auto" recorded), the blocks it descends into, and the keys it
 * accepts because they cannot change a one-GPU step time (learning rate schedule,
 * optimizer hyperparameters, logging, fp16 loss-scaling knobs). Anything else is
 * collected for one warning line. Resolving follows DeepSpeed's own rules, cited
 * where they are applied:
 *   - "auto" is filled by the Hugging Face integration for the batch keys (from the
 *     Trainer's arguments: here zbench's --micro-batch/--gas or their defaults),
 *     fp16/bf16.enabled (from --dtype), reduce_bucket_size = hidden^2 and, for
 *     stage 3, stage3_prefetch_bucket_size = 0.9 hidden^2 and
 *     stage3_param_persistence_threshold = 10 hidden
 *     (transformers/integrations/deepspeed.py, trainer_config_process and
 *     trainer_config_finalize). Any other "auto" is dropped by DeepSpeed's config
 *     models, so the key takes DeepSpeed's default (runtime/config_utils.py,
 *     DeepSpeedConfigModel.__init__).
 *   - absent keys take DeepSpeed's defaults (runtime/zero/config.py,
 *     runtime/zero/offload_config.py): stage 0, reduce_bucket_size 5e8,
 *     stage3_prefetch_bucket_size 5e7, stage3_param_persistence_threshold 1e5,
 *     sub_group_size 1e9, pin_memory false, ratio 1, overlap_comm true for stage 3
 *     and false otherwise.
 *   - batch sizes are derived like runtime/config.py _set_batch_related_parameters
 *     and checked like _batch_assertion, with one GPU.
 */
#include "inputs/jsonfile.h"
#include "inputs/dsconfig.h"

#include "core/limits.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/model.h"

/* ---- tables ---------------------------------------------------------------- */

typedef enum vtype { T_INT, T_NUM, T_BOOL, T_STR, T_OBJ } vtype;

static const struct {
	const char *path;
	vtype type;
} keys[ZB_DSK_COUNT] = {
	[ZB_DSK_TRAIN_BATCH] = { "train_batch_size", T_INT },
	[ZB_DSK_MICRO_BATCH] = { "train_micro_batch_size_per_gpu", T_INT },
	[ZB_DSK_GAS] = { "gradient_accumulation_steps", T_INT },
	[ZB_DSK_STAGE] = { "zero_optimization.stage", T_INT },
	[ZB_DSK_OPT_DEVICE] = { "zero_optimization.offload_optimizer.device", T_STR },
	[ZB_DSK_OPT_PIN] = { "zero_optimization.offload_optimizer.pin_memory", T_BOOL },
	[ZB_DSK_RATIO] = { "zero_optimization.offload_optimizer.ratio", T_NUM },
	[ZB_DSK_PARAM_DEVICE] = { "zero_optimization.offload_param.device", T_STR },
	[ZB_DSK_PARAM_PIN] = { "zero_optimization.offload_param.pin_memory", T_BOOL },
	[ZB_DSK_OVERLAP] = { "zero_optimization.overlap_comm", T_BOOL },
	[ZB_DSK_CONTIGUOUS] = { "zero_optimization.contiguous_gradients", T_BOOL },
	[ZB_DSK_REDUCE_BUCKET] = { "zero_optimization.reduce_bucket_size", T_INT },
	[ZB_DSK_PREFETCH_BUCKET] = { "zero_optimization.stage3_prefetch_bucket_size", T_INT },
	[ZB_DSK_PERSISTENCE] = { "zero_optimization.stage3_param_persistence_threshold", T_INT },
	[ZB_DSK_SUB_GROUP] = { "zero_optimization.sub_group_size", T_INT },
	[ZB_DSK_MAX_LIVE] = { "zero_optimization.stage3_max_live_parameters", T_INT },
	[ZB_DSK_MAX_REUSE] = { "zero_optimization.stage3_max_reuse_distance", T_INT },
	[ZB_DSK_FP16] = { "fp16.enabled", T_BOOL },
	[ZB_DSK_LOSS_SCALE] = { "fp16.loss_scale", T_NUM },
	[ZB_DSK_INITIAL_SCALE_POWER] = { "fp16.initial_scale_power", T_INT },
	[ZB_DSK_LOSS_SCALE_WINDOW] = { "fp16.loss_scale_window", T_NUM },
	[ZB_DSK_HYSTERESIS] = { "fp16.hysteresis", T_INT },
	[ZB_DSK_MIN_LOSS_SCALE] = { "fp16.min_loss_scale", T_NUM },
	[ZB_DSK_BF16] = { "bf16.enabled", T_BOOL },
	[ZB_DSK_ACT_CKPT] = { "activation_checkpointing", T_OBJ },
	[ZB_DSK_PARTITION_ACT] = { "activation_checkpointing.partition_activations", T_BOOL },
	[ZB_DSK_CPU_CKPT] = { "activation_checkpointing.cpu_checkpointing", T_BOOL },
	[ZB_DSK_OPTIMIZER] = { "optimizer.type", T_STR },
};

/* Objects whose keys are looked up one by one. */
static const char *const blocks[] = {
	"zero_optimization", "zero_optimization.offload_optimizer", "zero_optimization.offload_param",
	"fp16", "bf16", "activation_checkpointing", "optimizer", NULL,
};

/* Accepted whatever they hold: they do not change the time of a step on one GPU. */
static const char *const accepted[] = {
	"optimizer.params",          /* lr, betas, eps, weight_decay: same work per step */
	"scheduler",                 /* learning-rate schedule */
	"gradient_clipping",         /* the norm is taken whether or not it clips (modelled); clipping
	                                only changes the factor of the unscale pass */
	"steps_per_print", "wall_clock_breakdown",
	"zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer",
	"fp16.consecutive_hysteresis", "fp16.auto_cast",
	NULL,
};

const char *zb_ds_key_path(zb_ds_key k)
{
	return (int)k >= 0 && k < ZB_DSK_COUNT ? keys[k].path : "?";
}

/* ---- reading ----------------------------------------------------------------- */

typedef struct rd {
	const char *path;
	zb_ds_config *ds;
	zb_error *err;
} rd;


static zb_status bad(rd *r, const char *key, const char *want, const json_t *v)
{
	char got[96];
	zb_json_show(v, got, sizeof got);
	return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' must be %s (got %s)", r->path, key, want, got);
}

static int in_list(const char *s, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

static void add_ignored(zb_ds_config *ds, const char *key)
{
	ds->nignored++;
	size_t len = strlen(ds->ignored), room = sizeof ds->ignored - len;
	if (len >= 5 && strcmp(ds->ignored + len - 5, ", ...") == 0)
		return;
	/* keep room for ", ..." */
	if (strlen(key) + 2 + 6 >= room) {
		snprintf(ds->ignored + len, room, ", ...");
		return;
	}
	snprintf(ds->ignored + len, room, "%s%s", len ? ", " : "", key);
}

static zb_status read_value(rd *r, zb_ds_key k, const json_t *v)
{
	zb_ds_val *out = &r->ds->v[k];
	const char *key = keys[k].path;
	if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0 && keys[k].type != T_OBJ) {
		out->state = ZB_DS_AUTO;
		return ZB_OK;
	}
	double d;
	switch (keys[k].type) {
	case T_INT:
		if (json_is_integer(v))
			d = (double)json_integer_value(v);
		else if (json_is_real(v))
			d = json_real_value(v);
		else
			return bad(r, key, "a non-negative integer or \"auto\"", v);
		if (!(d >= 0) || d != floor(d) || d > 9e15)
			return bad(r, key, "a non-negative integer or \"auto\"", v);
		out->num = d;
		break;
	case T_NUM:
		if (!json_is_number(v) || !isfinite(json_number_value(v)))
			return bad(r, key, "a number", v);
		out->num = json_number_value(v);
		break;
	case T_BOOL:
		if (json_is_boolean(v))
			out->num = json_is_true(v);
		else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
			out->num = (double)json_integer_value(v);
		else
			return bad(r, key, "true, false or \"auto\"", v);
		break;
	case T_STR:
		if (!json_is_string(v) || json_string_length(v) >= sizeof out->str)
			return bad(r, key, "a short string", v);
		snprintf(out->str, sizeof out->str, "%s", json_string_value(v));
		break;
	case T_OBJ:
		if (!json_is_object(v))
			return bad(r, key, "an object", v);
		break;
	}
	out->state = ZB_DS_SET;

	/* ranges DeepSpeed's config models enforce */
	if (k == ZB_DSK_STAGE && out->num > 3)
		return bad(r, key, "0, 1, 2 or 3", v);
	if (k == ZB_DSK_RATIO && !(out->num >= 0 && out->num <= 1))
		return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' %g out of range (must be in [0, 1])", r->path,
			       key, out->num);
	if ((k == ZB_DSK_OPT_DEVICE || k == ZB_DSK_PARAM_DEVICE) && strcmp(out->str, "none") != 0 &&
	    strcmp(out->str, "cpu") != 0 && strcmp(out->str, "nvme") != 0)
		return bad(r, key, "one of none, cpu, nvme", v);
	if ((k == ZB_DSK_LOSS_SCALE || k == ZB_DSK_LOSS_SCALE_WINDOW || k == ZB_DSK_MIN_LOSS_SCALE) &&
	    out->num < 0)
		return bad(r, key, "a non-negative number", v);
	return ZB_OK;
}

static zb_status walk(rd *r, const json_t *obj, const char *prefix)
{
	const char *name;
	json_t *v;
	char full[256];
	json_object_foreach((json_t *)obj, name, v) {
		snprintf(full, sizeof full, "%s%s%s", prefix, prefix[0] ? "." : "", name);
		int k;
		for (k = 0; k < ZB_DSK_COUNT; k++)
			if (strcmp(full, keys[k].path) == 0)
				break;
		if (k < ZB_DSK_COUNT) {
			zb_status st = read_value(r, (zb_ds_key)k, v);
			if (st)
				return st;
			if (keys[k].type != T_OBJ)
				continue;
		}
		if (in_list(full, blocks)) {
			if (!json_is_object(v))
				return bad(r, full, "an object", v);
			zb_status st = walk(r, v, full);
			if (st)
				return st;
			continue;
		}
		if (k < ZB_DSK_COUNT || in_list(full, accepted))
			continue;
		add_ignored(r->ds, full);
	}
	return ZB_OK;
}

zb_status zb_ds_load(const char *path, zb_ds_config *out, zb_error *err)
{
	zb_ds_config ds;
	memset(&ds, 0, sizeof ds);
	snprintf(ds.path, sizeof ds.path, "%s", path);
	rd r = { path, &ds, err };

	json_t *root;
	zb_status st = zb_json_load_object(path, &root, err);
	if (st)
		return st;
	st = walk(&r, root, "");
	json_decref(root);
	if (st == ZB_OK)
		*out = ds;
	return st;
}

/* ---- the model's tensors ------------------------------------------------------- */

typedef struct tensor_sink {
	void (*fn)(int64_t size, void *ctx);
	void *ctx;
	int64_t sum;
} tensor_sink;

static void emit(tensor_sink *s, int64_t size)
{
	if (size <= 0)
		return;
	s->fn(size, s->ctx);
	s->sum += size;
}

/* Anything model.c counts that the list above missed (or a future layout change):
 * one more tensor, so the sizes always add up to the unit. */
static void settle(tensor_sink *s, int64_t unit_params, int64_t before)
{
	emit(s, unit_params - (s->sum - before));
}

/* One MLP of inner width w: gate and up (or fc1), down (or fc2), with their biases. */
static void mlp_tensors(tensor_sink *s, const zb_model *m, int64_t w, int bias)
{
	int64_t h = m->hidden;
	if (m->gated_mlp) {
		emit(s, h * w), emit(s, bias * w); /* gate */
		emit(s, h * w), emit(s, bias * w); /* up */
	} else {
		emit(s, h * w), emit(s, bias * w); /* fc1 */
	}
	emit(s, w * h), emit(s, bias * h);         /* down / fc2 */
}

/* A mixture of experts as transformers stores it: the router, every expert's
 * gate+up and down as one 3-D tensor each, the shared expert and its gate. */
static void moe_tensors(tensor_sink *s, const zb_model *m, int bias)
{
	int64_t h = m->hidden, f = m->ffn, E = m->experts;
	emit(s, E * h);                                   /* router */
	emit(s, E * (m->gated_mlp ? 2 : 1) * f * h);      /* experts' gate_up_proj */
	emit(s, E * h * f);                               /* experts' down_proj */
	if (bias)
		emit(s, E * ((m->gated_mlp ? 2 : 1) * f + h)); /* their biases */
	if (m->shared_ffn > 0) {
		mlp_tensors(s, m, m->shared_ffn, bias);
		emit(s, h);                               /* shared expert gate */
	}
}

void zb_ds_tensors(const zb_model *m, void (*fn)(int64_t size, void *ctx), void *ctx)
{
	tensor_sink s = { fn, ctx, 0 };
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m), V = m->vocab;
	int64_t e = m->embed_proj > 0 ? m->embed_proj : h, d = zb_model_head_dim(m);
	int b = m->bias;
	int bqkv = b || (m->linear_bias & ZB_BIAS_QKV), bout = b || (m->linear_bias & ZB_BIAS_OUT);
	int bmlp = b || (m->linear_bias & ZB_BIAS_MLP);

	int64_t before = s.sum;
	emit(&s, V * e);
	emit(&s, (int64_t)m->max_seq * h);
	if (m->embed_proj > 0 && m->embed_proj != h) {
		emit(&s, e * h); /* project_in */
		emit(&s, h * e); /* project_out */
	}
	settle(&s, zb_model_unit_params(m, 0), before);

	for (int l = 1; l <= m->layers; l++) {
		before = s.sum;
		emit(&s, h), emit(&s, b * h);           /* input norm */
		emit(&s, h * q), emit(&s, bqkv * q);    /* q */
		emit(&s, h * kv), emit(&s, bqkv * kv);  /* k */
		emit(&s, h * kv), emit(&s, bqkv * kv);  /* v */
		emit(&s, q * h), emit(&s, bout * h);    /* o */
		if (m->norms & ZB_NORM_QK)
			emit(&s, d), emit(&s, b * d), emit(&s, d), emit(&s, b * d); /* q and k norms */
		emit(&s, h), emit(&s, b * h);           /* post-attention norm */
		if (m->norms & ZB_NORM_SANDWICH)
			emit(&s, h), emit(&s, b * h), emit(&s, h), emit(&s, b * h); /* pre-, post-feedforward */
		if (m->experts > 0)
			moe_tensors(&s, m, bmlp);
		else
			mlp_tensors(&s, m, m->ffn, bmlp);
		settle(&s, zb_model_unit_params(m, l), before);
	}

	before = s.sum;
	if (!(m->norms & ZB_NORM_NO_FINAL))
		emit(&s, h), emit(&s, b * h); /* final norm */
	if (!m->tied_embeddings)
		emit(&s, V * e);      /* LM head */
	settle(&s, zb_model_unit_params(m, m->layers + 1), before);
}

/* ---- Twin-Flow sub-groups ------------------------------------------------------ */

typedef struct grouping {
	int64_t limit;     /* sub_group_size */
	int64_t cur;       /* elements in the open sub-group */
	int n;             /* sub-groups closed */
	int first_cpu;     /* pass 2: index of the first CPU sub-group */
	int64_t cpu;       /* pass 2: elements in CPU sub-groups */
	int64_t total;
} grouping;

/* DeepSpeed's _create_fp16_sub_groups: append the tensor, close the sub-group once
 * it holds >= sub_group_size elements. */
static void group_tensor(int64_t size, void *ctx)
{
	grouping *g = ctx;
	g->cur += size;
	g->total += size;
	if (g->n >= g->first_cpu)
		g->cpu += size;
	if (g->cur >= g->limit) {
		g->n++;
		g->cur = 0;
	}
}

void zb_ds_twinflow_split(const zb_model *m, int64_t sub_group_size, double ratio, zb_ds_twinflow *out)
{
	grouping g = { sub_group_size, 0, 0, 1 << 30, 0, 0 };
	zb_ds_tensors(m, group_tensor, &g);
	int n = g.n + (g.cur > 0); /* the last tensor closes the last sub-group */
	/* stage3.py: subgroup_to_device[i] = 'cpu' if i >= int((1 - ratio) * n) */
	int first_cpu = (int)((1.0 - ratio) * (double)n);
	grouping g2 = { sub_group_size, 0, 0, first_cpu, 0, 0 };
	zb_ds_tensors(m, group_tensor, &g2);
	out->sub_groups = n;
	out->cpu_sub_groups = n - first_cpu;
	out->params = g2.total;
	out->cpu_params = g2.cpu;
	out->ratio = g2.total > 0 ? (double)g2.cpu / (double)g2.total : 0.0;
}

/* ---- resolving --------------------------------------------------------------------- */

typedef struct below {
	int64_t threshold, params;
} below;

static void count_small(int64_t size, void *ctx)
{
	below *b = ctx;
	if (size <= b->threshold) /* parameter_offload.py: ds_numel <= param_threshold */
		b->params += size;
}

#define V(k) (&ds->v[k])
#define IS_SET(k) (ds->v[k].state == ZB_DS_SET)
#define IS_AUTO(k) (ds->v[k].state == ZB_DS_AUTO)

static void why(zb_ds_plan *p, zb_ds_field f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why(zb_ds_plan *p, zb_ds_field f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->why[f], sizeof p->why[f], fmt, ap);
	va_end(ap);
}

static const char *count_text(int64_t x, char *buf, size_t n)
{
	snprintf(buf, n, "%lld", (long long)x);
	return buf;
}

/* A value DeepSpeed leaves to its default after dropping "auto". */
static const char *dflt(const zb_ds_config *ds, zb_ds_key k)
{
	return IS_AUTO(k) ? "\"auto\" (left to DeepSpeed)" : "absent";
}

/* ZeRO stage, what is offloaded and the checks DeepSpeed makes; the policy kind and
 * the Twin-Flow ratio. */
static zb_status plan_offload(const zb_ds_config *ds, zb_ds_plan *p, int *opt_out, int *param_out, zb_error *err)
{
	const char *path = ds->path;
	/* ZeRO stage and what is offloaded */
	p->stage = IS_SET(ZB_DSK_STAGE) ? (int)V(ZB_DSK_STAGE)->num : 0;
	const char *odev = IS_SET(ZB_DSK_OPT_DEVICE) ? V(ZB_DSK_OPT_DEVICE)->str : "none";
	const char *pdev = IS_SET(ZB_DSK_PARAM_DEVICE) ? V(ZB_DSK_PARAM_DEVICE)->str : "none";
	if (strcmp(odev, "nvme") == 0 || strcmp(pdev, "nvme") == 0)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key '%s' 'nvme' is not modelled (zbench models cpu and none)", path,
			       zb_ds_key_path(strcmp(odev, "nvme") == 0 ? ZB_DSK_OPT_DEVICE : ZB_DSK_PARAM_DEVICE));
	int off_opt = strcmp(odev, "cpu") == 0, off_param = strcmp(pdev, "cpu") == 0;
	*opt_out = off_opt;
	*param_out = off_param;
	if (off_opt && p->stage == 0)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'zero_optimization.offload_optimizer': optimizer offload needs ZeRO "
			       "stage 1, 2 or 3 (zero_optimization.stage is 0)",
			       path);
	if (off_param && p->stage != 3)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'zero_optimization.offload_param': parameter offload needs ZeRO stage 3 "
			       "(zero_optimization.stage is %d)",
			       path, p->stage);
	if (off_param && !off_opt)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'zero_optimization.offload_param' without offload_optimizer on the cpu "
			       "is not modelled (zbench keeps offloaded parameters with the CPU optimizer's)",
			       path);
	double ratio = IS_SET(ZB_DSK_RATIO) ? V(ZB_DSK_RATIO)->num : 1.0;
	if (off_opt && ratio < 1.0 && p->stage != 3)
		/* runtime/zero/config.py offload_ratio_check */
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'zero_optimization.offload_optimizer.ratio' %g: partial offload "
			       "(Twin-Flow) needs ZeRO stage 3 (zero_optimization.stage is %d)",
			       path, ratio, p->stage);
	p->offload_optimizer = off_opt;

	/* optimizer: zbench's CPU and GPU flows are Adam */
	if (IS_SET(ZB_DSK_OPTIMIZER) && strcasecmp(V(ZB_DSK_OPTIMIZER)->str, "adam") != 0 &&
	    strcasecmp(V(ZB_DSK_OPTIMIZER)->str, "adamw") != 0)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'optimizer.type' '%s' is not modelled (zbench models Adam and AdamW)",
			       path, V(ZB_DSK_OPTIMIZER)->str);

	/* policy kind */
	p->set[ZB_DSF_KIND] = 1;
	if (!off_opt) {
		p->policy.kind = ZB_POLICY_NONE;
		why(p, ZB_DSF_KIND, "stage %d, offload_optimizer %s: no optimizer offload", p->stage,
		    IS_SET(ZB_DSK_OPT_DEVICE) ? "device none" : "absent");
	} else {
		int overlap = IS_SET(ZB_DSK_OVERLAP) ? (int)V(ZB_DSK_OVERLAP)->num : p->stage == 3;
		p->policy.kind = overlap ? ZB_POLICY_OVERLAP : ZB_POLICY_OFFLOAD;
		if (IS_SET(ZB_DSK_OVERLAP))
			why(p, ZB_DSF_KIND, "stage %d, offload_optimizer.device cpu, overlap_comm %s", p->stage,
			    overlap ? "true" : "false");
		else
			why(p, ZB_DSF_KIND,
			    "stage %d, offload_optimizer.device cpu, overlap_comm %s: DeepSpeed's default for "
			    "stage %d is %s",
			    p->stage, dflt(ds, ZB_DSK_OVERLAP), p->stage, overlap ? "true" : "false");
	}
	if (off_opt) {
		p->set[ZB_DSF_RATIO] = 1;
		p->policy.ratio = ratio;
		if (IS_SET(ZB_DSK_RATIO))
			why(p, ZB_DSF_RATIO, "offload_optimizer.ratio %g", ratio);
		else
			why(p, ZB_DSF_RATIO, "offload_optimizer.ratio %s: 1 (all of the optimizer on the CPU)",
			    dflt(ds, ZB_DSK_RATIO));
	}

	return ZB_OK;
}

int zb_ds_prefetch_layers(const zb_model *m, int64_t elements)
{
	int64_t block = zb_model_unit_params(m, 1);
	int64_t layers = block > 0 ? (elements + block - 1) / block : 1;
	if (layers < 1)
		layers = 1;
	if (layers > ZB_MAX_PREFETCH) /* more than the model has: the same as all */
		layers = ZB_MAX_PREFETCH;
	return (int)layers;
}

/* ZeRO-3 parameter offload and its prefetch window in layers. */
static void plan_param_offload(const zb_ds_config *ds, const zb_model *m, zb_ds_plan *p, int off_param)
{
	int64_t h = m->hidden;
	char b1[32];
	/* parameter offload and its prefetch window */
	p->set[ZB_DSF_OFFLOAD_PARAM] = 1;
	p->policy.offload_param = off_param;
	why(p, ZB_DSF_OFFLOAD_PARAM, "offload_param %s",
	    IS_SET(ZB_DSK_PARAM_DEVICE) ? (off_param ? "device cpu" : "device none") : "absent");
	if (IS_SET(ZB_DSK_PREFETCH_BUCKET)) {
		p->prefetch_elements = (int64_t)V(ZB_DSK_PREFETCH_BUCKET)->num;
	} else if (IS_AUTO(ZB_DSK_PREFETCH_BUCKET) && p->stage == 3) {
		p->prefetch_elements = (int64_t)(0.9 * (double)h * (double)h);
	} else {
		p->prefetch_elements = ZB_DS_PREFETCH_DEFAULT;
	}
	/* stage 3 without offload_param too: the window bounds its all-gathers on several
	 * ranks, and `zbench tune` turning offload_param on keeps the config's window */
	if (off_param || p->stage == 3) {
		int64_t block = zb_model_unit_params(m, 1);
		p->set[ZB_DSF_PREFETCH] = 1;
		p->policy.prefetch_layers = zb_ds_prefetch_layers(m, p->prefetch_elements);
		const char *how = IS_SET(ZB_DSK_PREFETCH_BUCKET) ? ""
				  : IS_AUTO(ZB_DSK_PREFETCH_BUCKET) ? " (\"auto\" = 0.9 x hidden^2)"
								    : " (absent: DeepSpeed's 5e7)";
		why(p, ZB_DSF_PREFETCH,
		    "stage3_prefetch_bucket_size %s elements%s / %lld per block, rounded up%s",
		    count_text(p->prefetch_elements, b1, sizeof b1), how, (long long)block,
		    p->prefetch_elements == 0 ? " (0, no prefetch, is modelled as 1 layer ahead)" : "");
	}

}

/* Pinned or pageable host buffers (DeepSpeed's default is pageable). */
static void plan_pinned(const zb_ds_config *ds, zb_ds_plan *p, int off_opt, int off_param)
{
	if (!off_opt && !off_param)
		return;
	int opin = !off_opt || (IS_SET(ZB_DSK_OPT_PIN) && V(ZB_DSK_OPT_PIN)->num);
	int ppin = !off_param || (IS_SET(ZB_DSK_PARAM_PIN) && V(ZB_DSK_PARAM_PIN)->num);
	p->set[ZB_DSF_PAGEABLE] = 1;
	p->policy.pageable = !(opin && ppin);
	char o[96] = "", q[96] = "";
	if (off_opt)
		snprintf(o, sizeof o, "offload_optimizer.pin_memory %s",
			 IS_SET(ZB_DSK_OPT_PIN) ? (V(ZB_DSK_OPT_PIN)->num ? "true" : "false")
						: "absent: false");
	if (off_param)
		snprintf(q, sizeof q, "offload_param.pin_memory %s",
			 IS_SET(ZB_DSK_PARAM_PIN) ? (V(ZB_DSK_PARAM_PIN)->num ? "true" : "false")
						  : "absent: false");
	why(p, ZB_DSF_PAGEABLE, "%s%s%s%s", o, o[0] && q[0] ? ", " : "", q,
	    p->policy.pageable && off_opt && off_param && opin != ppin ? " (one setting in zbench: pageable)"
									: "");
}


static zb_status plan_bucket(const zb_ds_config *ds, const zb_model *m, zb_ds_plan *p, zb_error *err)
{
	const char *path = ds->path;
	int64_t h = m->hidden;
	p->set[ZB_DSF_BUCKET] = 1;
	if (IS_SET(ZB_DSK_REDUCE_BUCKET)) {
		p->policy.bucket_params = (int64_t)V(ZB_DSK_REDUCE_BUCKET)->num;
		if (p->policy.bucket_params <= 0)
			return zb_fail(err, ZB_E_INPUT,
				       "%s: key 'zero_optimization.reduce_bucket_size' 0 is not modelled (zbench "
				       "needs a positive bucket)",
				       path);
		why(p, ZB_DSF_BUCKET, "reduce_bucket_size %lld", (long long)p->policy.bucket_params);
	} else if (IS_AUTO(ZB_DSK_REDUCE_BUCKET)) {
		p->policy.bucket_params = h * h;
		why(p, ZB_DSF_BUCKET, "reduce_bucket_size \"auto\" = hidden^2 = %lld^2", (long long)h);
	} else {
		p->policy.bucket_params = 500000000;
		why(p, ZB_DSF_BUCKET, "reduce_bucket_size absent: DeepSpeed's default 5e8");
	}

	return ZB_OK;
}

/* Sub-groups and persistent parameters (ZeRO-3). */
static void plan_subgroups(const zb_ds_config *ds, const zb_model *m, zb_ds_plan *p)
{
	int64_t h = m->hidden;
	p->sub_group_size = IS_SET(ZB_DSK_SUB_GROUP) ? (int64_t)V(ZB_DSK_SUB_GROUP)->num : 1000000000;
	if (IS_SET(ZB_DSK_PERSISTENCE))
		p->persistence_threshold = (int64_t)V(ZB_DSK_PERSISTENCE)->num;
	else if (IS_AUTO(ZB_DSK_PERSISTENCE) && p->stage == 3)
		p->persistence_threshold = 10 * h;
	else
		p->persistence_threshold = 100000;
	below bl = { p->persistence_threshold, 0 };
	zb_ds_tensors(m, count_small, &bl);
	p->persistent_params = bl.params;
	/* any "auto" here is dropped by DeepSpeed's config model: its default */
	p->max_live = IS_SET(ZB_DSK_MAX_LIVE) ? (int64_t)V(ZB_DSK_MAX_LIVE)->num : 1000000000;
	p->max_reuse = IS_SET(ZB_DSK_MAX_REUSE) ? (int64_t)V(ZB_DSK_MAX_REUSE)->num : 1000000000;

}

static void plan_ckpt(const zb_ds_config *ds, zb_ds_plan *p)
{
	if (IS_SET(ZB_DSK_ACT_CKPT)) {
		int cpu = IS_SET(ZB_DSK_CPU_CKPT) && V(ZB_DSK_CPU_CKPT)->num;
		int part = IS_SET(ZB_DSK_PARTITION_ACT) && V(ZB_DSK_PARTITION_ACT)->num;
		p->set[ZB_DSF_CKPT] = 1;
		p->policy.ckpt = cpu ? ZB_CKPT_CPU : ZB_CKPT_GPU;
		why(p, ZB_DSF_CKPT, "%s%s",
		    cpu ? "activation_checkpointing.cpu_checkpointing true" : "activation_checkpointing present",
		    part ? " (partition_activations: nothing to partition on one GPU)" : "");
	}

}

/* Precision: DeepSpeed allows one of fp16 and bf16; fp32 is not modelled. */
static zb_status plan_precision(const zb_ds_config *ds, zb_ds_plan *p, zb_error *err)
{
	const char *path = ds->path;
	const zb_ds_val *fp = V(ZB_DSK_FP16), *bf = V(ZB_DSK_BF16);
	int fp_on = fp->state == ZB_DS_SET && fp->num, bf_on = bf->state == ZB_DS_SET && bf->num;
	if (fp_on && bf_on)
		return zb_fail(err, ZB_E_INPUT,
			       "%s: keys 'fp16.enabled' and 'bf16.enabled' are both true (DeepSpeed allows one)",
			       path);
	if (fp_on || bf_on) {
		p->set[ZB_DSF_DTYPE] = 1;
		p->policy.dtype = fp_on ? ZB_FP16 : ZB_BF16;
		why(p, ZB_DSF_DTYPE, "%s.enabled true", fp_on ? "fp16" : "bf16");
	} else if (fp->state == ZB_DS_AUTO || bf->state == ZB_DS_AUTO) {
		why(p, ZB_DSF_DTYPE, "%s.enabled \"auto\"", fp->state == ZB_DS_AUTO ? "fp16" : "bf16");
	} else if (fp->state == ZB_DS_SET || bf->state == ZB_DS_SET) {
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key '%s' false and no 16-bit precision enabled: fp32 training is not "
			       "modelled (zbench computes in bf16 or fp16)",
			       path, zb_ds_key_path(fp->state == ZB_DS_SET ? ZB_DSK_FP16 : ZB_DSK_BF16));
	}
	if (p->policy.dtype == ZB_FP16 && p->set[ZB_DSF_DTYPE]) {
		double ls = IS_SET(ZB_DSK_LOSS_SCALE) ? V(ZB_DSK_LOSS_SCALE)->num : 0;
		if (ls > 0)
			snprintf(p->precision, sizeof p->precision, "fp16, static loss scale %g", ls);
		else
		{
			/* fp16/loss_scaler.py: an overflow skips the optimizer; the scale doubles
			 * after `window` clean steps, and an overflow then skips `hysteresis` steps
			 * before it halves (the first ones only use up the hysteresis) */
			double win = IS_SET(ZB_DSK_LOSS_SCALE_WINDOW) ? V(ZB_DSK_LOSS_SCALE_WINDOW)->num : 1000.0;
			double hys = IS_SET(ZB_DSK_HYSTERESIS) ? V(ZB_DSK_HYSTERESIS)->num : 2.0;
			snprintf(p->precision, sizeof p->precision,
				 "fp16, dynamic loss scaling (initial 2^%g, window %g, hysteresis %g, min %g): steady, "
				 "%g of every %g steps skip the optimizer (%.2f%%, not in the step time); the first "
				 "steps skip until the scale fits (not modelled)",
				 IS_SET(ZB_DSK_INITIAL_SCALE_POWER) ? V(ZB_DSK_INITIAL_SCALE_POWER)->num : 16.0, win, hys,
				 IS_SET(ZB_DSK_MIN_LOSS_SCALE) ? V(ZB_DSK_MIN_LOSS_SCALE)->num : 1.0, hys, win + hys,
				 100.0 * hys / (win + hys));
		}
	} else if (p->set[ZB_DSF_DTYPE]) {
		snprintf(p->precision, sizeof p->precision, "bf16, no loss scaling");
	}

	return ZB_OK;
}

/* The batch: runtime/config.py _set_batch_related_parameters, world size 1. -1: not
 * given. "auto" micro/gas are the Trainer's arguments, here zbench's (flag or
 * default); a flag given explicitly replaces the file's value before deriving. */
static zb_status plan_batch(const zb_ds_config *ds, const zb_ds_batch *b, zb_ds_plan *p, zb_error *err)
{
	const char *path = ds->path;
	const zb_ds_val *tv = V(ZB_DSK_TRAIN_BATCH), *mv = V(ZB_DSK_MICRO_BATCH), *gv = V(ZB_DSK_GAS);
	static const zb_ds_key bkeys[3] = { ZB_DSK_TRAIN_BATCH, ZB_DSK_MICRO_BATCH, ZB_DSK_GAS };
	for (int i = 0; i < 3; i++)
		if (IS_SET(bkeys[i]) && V(bkeys[i])->num < 1)
			return zb_fail(err, ZB_E_INPUT, "%s: key '%s' %g must be positive", path,
				       zb_ds_key_path(bkeys[i]), V(bkeys[i])->num);
	/* bounded so that micro x gas below cannot overflow */
	static const double bmax[3] = { (double)ZB_MAX_MICRO_BATCH * ZB_MAX_GAS, ZB_MAX_MICRO_BATCH, ZB_MAX_GAS };
	for (int i = 0; i < 3; i++)
		if (IS_SET(bkeys[i]) && V(bkeys[i])->num > bmax[i])
			return zb_fail(err, ZB_E_INPUT, "%s: key '%s' %.0f exceeds the limit %.0f", path,
				       zb_ds_key_path(bkeys[i]), V(bkeys[i])->num, bmax[i]);
	if (tv->state == ZB_DS_ABSENT && mv->state == ZB_DS_ABSENT && gv->state == ZB_DS_ABSENT)
		return ZB_OK; /* no batch keys: zbench's batch */
	long long fm = mv->state == ZB_DS_SET ? (long long)mv->num : -1;
	long long fg = gv->state == ZB_DS_SET ? (long long)gv->num : -1;
	long long tb = tv->state == ZB_DS_SET ? (long long)tv->num : -1;
	long long mb = b->micro_given ? b->micro : fm >= 0 ? fm : mv->state == ZB_DS_AUTO ? b->micro : -1;
	long long ga = b->gas_given ? b->gas : fg >= 0 ? fg : gv->state == ZB_DS_AUTO ? b->gas : -1;
	const char *mname = b->micro_given ? "--micro-batch" : "train_micro_batch_size_per_gpu";
	const char *gname = b->gas_given ? "--gas" : "gradient_accumulation_steps";
	if (tv->state == ZB_DS_AUTO) { /* the Trainer computes it: world x micro x gas */
		if (mb < 0)
			mb = b->micro;
		if (ga < 0)
			ga = b->gas;
		tb = mb * ga;
	}
	int mderived = 0, gderived = 0;
	char note[160] = "";
	if (tb >= 0 && mb >= 0 && ga >= 0) {
		if (tb != mb * ga) {
			if (!b->micro_given && !b->gas_given)
				return zb_fail(err, ZB_E_INPUT,
					       "%s: key 'train_batch_size' %lld is not train_micro_batch_size_per_gpu "
					       "%lld x gradient_accumulation_steps %lld x 1 GPU",
					       path, tb, mb, ga);
			snprintf(note, sizeof note, " (the file's train_batch_size %lld gives way to the flags)", tb);
			tb = mb * ga;
		}
	} else if (tb >= 0 && mb >= 0) {
		ga = tb / mb, gderived = 1;
		if (ga < 1 || tb != mb * ga)
			return zb_fail(err, ZB_E_INPUT,
				       "%s: key 'train_batch_size' %lld is not a multiple of %s %lld (x 1 GPU)", path,
				       tb, mname, mb);
	} else if (tb >= 0 && ga >= 0) {
		mb = tb / ga, mderived = 1;
		if (mb < 1 || tb != mb * ga)
			return zb_fail(err, ZB_E_INPUT,
				       "%s: key 'train_batch_size' %lld is not a multiple of %s %lld (x 1 GPU)", path,
				       tb, gname, ga);
	} else if (mb >= 0 && ga >= 0) {
		tb = mb * ga;
	} else if (tb >= 0) {
		mb = tb, ga = 1, mderived = 1;
	} else if (mb >= 0) {
		ga = 1, tb = mb;
	} else if (ga >= 0) {
		return zb_fail(err, ZB_E_INPUT,
			       "%s: key 'gradient_accumulation_steps' given without train_batch_size or "
			       "train_micro_batch_size_per_gpu (DeepSpeed needs one of them)",
			       path);
	}
	if (mb > 2147483647LL || ga > 2147483647LL)
		return zb_fail(err, ZB_E_INPUT, "%s: batch sizes too large (micro %lld, gas %lld)", path, mb, ga);
	p->train_batch = tb;
	if (tb >= 0)
		snprintf(p->batch, sizeof p->batch, "train_batch_size %lld = %lld x %lld x 1 GPU%s", tb, mb, ga, note);
	if (mb >= 0) {
		p->policy.micro_batch = (int)mb;
		/* decided by the file: its own value (a flag may still override it), or
		 * derived from its train_batch_size */
		p->set[ZB_DSF_MICRO_BATCH] = fm >= 0 || mderived;
		if (mderived)
			why(p, ZB_DSF_MICRO_BATCH, "derived: train_batch_size %lld / %s %lld", tb, gname, ga);
		else if (fm >= 0)
			why(p, ZB_DSF_MICRO_BATCH, "train_micro_batch_size_per_gpu %lld", fm);
		else if (mv->state == ZB_DS_AUTO)
			why(p, ZB_DSF_MICRO_BATCH, "train_micro_batch_size_per_gpu \"auto\"");
	}
	if (ga >= 0) {
		p->policy.gas = (int)ga;
		p->set[ZB_DSF_GAS] = fg >= 0 || gderived || (gv->state == ZB_DS_ABSENT && !b->gas_given);
		if (gderived)
			why(p, ZB_DSF_GAS, "derived: train_batch_size %lld / %s %lld", tb, mname, mb);
		else if (fg >= 0)
			why(p, ZB_DSF_GAS, "gradient_accumulation_steps %lld", fg);
		else if (gv->state == ZB_DS_AUTO)
			why(p, ZB_DSF_GAS, "gradient_accumulation_steps \"auto\"");
		else if (!b->gas_given)
			why(p, ZB_DSF_GAS, "gradient_accumulation_steps absent: 1 (DeepSpeed's rule)");
	}
	return ZB_OK;
}

zb_status zb_ds_plan_make(const zb_ds_config *ds, const zb_model *m, const zb_ds_batch *b, zb_ds_plan *out,
			  zb_error *err)
{
	zb_ds_plan p;
	memset(&p, 0, sizeof p);
	zb_policy_defaults(&p.policy);
	int off_opt = 0, off_param = 0;
	zb_status st;
	if ((st = plan_offload(ds, &p, &off_opt, &off_param, err)))
		return st;
	plan_param_offload(ds, m, &p, off_param);
	plan_pinned(ds, &p, off_opt, off_param);
	if ((st = plan_bucket(ds, m, &p, err)))
		return st;
	plan_subgroups(ds, m, &p);
	plan_ckpt(ds, &p);
	if ((st = plan_precision(ds, &p, err)) || (st = plan_batch(ds, b, &p, err)))
		return st;
	*out = p;
	return ZB_OK;
}
