/*
 * model.c - the model part of zb_config_resolve: a preset, a model JSON file or a
 * Hugging Face config.json (one of them), then the shape flags (--layers, --hidden,
 * --heads, --kv-heads, --ffn, --vocab), which make the model "custom".
 */
#include "config/parts.h"

#include <stdio.h>

#include "inputs/hwfile.h"
#include "inputs/presets.h"

static const zb_setting shape[] = { ZB_SET_LAYERS, ZB_SET_HIDDEN, ZB_SET_HEADS, ZB_SET_KV_HEADS,
				    ZB_SET_FFN, ZB_SET_VOCAB, ZB_SET_TIED };
#define NSHAPE (sizeof shape / sizeof shape[0])

/* The base model and where its shape came from. */
static zb_status base(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	const zb_hf_config *hf = in->hf;
	zb_status st;
	if (v[ZB_AX_MODEL] && v[ZB_AX_MODEL_FILE])
		return zb_fail(err, ZB_E_INPUT, "--model '%s' and --model-file '%s' both given (choose one)",
			       v[ZB_AX_MODEL], v[ZB_AX_MODEL_FILE]);
	if (hf && (v[ZB_AX_MODEL] || v[ZB_AX_MODEL_FILE]))
		return zb_fail(err, ZB_E_INPUT, "--hf-config '%s' and %s '%s' both given (choose one)", hf->path,
			       v[ZB_AX_MODEL] ? "--model" : "--model-file",
			       v[ZB_AX_MODEL] ? v[ZB_AX_MODEL] : v[ZB_AX_MODEL_FILE]);
	if (hf)
		c->model = hf->model, st = ZB_OK;
	else if (v[ZB_AX_MODEL_FILE])
		st = zb_model_load(v[ZB_AX_MODEL_FILE], &c->model, err);
	else if (v[ZB_AX_MODEL])
		st = zb_preset_model(v[ZB_AX_MODEL], &c->model, err);
	else
		zb_preset_default_model(&c->model), st = ZB_OK;
	if (st)
		return st;
	static const zb_hf_field hf_field[] = { ZB_HF_LAYERS, ZB_HF_HIDDEN, ZB_HF_HEADS, ZB_HF_KV_HEADS,
						ZB_HF_FFN, ZB_HF_VOCAB, ZB_HF_TIED };
	if (hf) {
		s->hf = 1;
		snprintf(s->hf_path, sizeof s->hf_path, "%s", hf->path);
		snprintf(s->hf_model_type, sizeof s->hf_model_type, "%s", hf->model_type);
		snprintf(s->hf_notes, sizeof s->hf_notes, "%s", hf->notes);
		s->hf_max_positions = hf->max_positions;
		zb_src_mark(s, ZB_SET_MODEL, ZB_SRC_HF, "%s (model_type %s)", hf->path, hf->model_type);
		for (size_t i = 0; i < NSHAPE; i++)
			zb_src_mark(s, shape[i], ZB_SRC_HF, "%s", hf->key[hf_field[i]] ? hf->key[hf_field[i]] : "");
		return ZB_OK;
	}
	zb_source from = v[ZB_AX_MODEL] || v[ZB_AX_MODEL_FILE] ? ZB_SRC_FLAG : ZB_SRC_DEFAULT;
	if (v[ZB_AX_MODEL_FILE])
		zb_src_mark(s, ZB_SET_MODEL, from, "--model-file %s", v[ZB_AX_MODEL_FILE]);
	else if (v[ZB_AX_MODEL])
		zb_src_mark(s, ZB_SET_MODEL, from, "--model %s", v[ZB_AX_MODEL]);
	else
		zb_src_mark(s, ZB_SET_MODEL, from, "zbench's reference model");
	for (size_t i = 0; i < NSHAPE; i++)
		zb_src_mark(s, shape[i], from, "of %s %s", v[ZB_AX_MODEL_FILE] ? "model file" : "preset",
			    v[ZB_AX_MODEL_FILE] ? v[ZB_AX_MODEL_FILE] : c->model.name);
	return ZB_OK;
}

zb_status zb_resolve_model(const zb_config_inputs *in, zb_config *c, zb_sources *s, zb_error *err)
{
	const char *const *v = in->value;
	zb_status st;
	if ((st = base(in, c, s, err)))
		return st;
	int custom = 0;
	for (int a = ZB_AX_LAYERS; a <= ZB_AX_VOCAB; a++)
		custom |= v[a] != NULL;
	int heads_before = c->model.heads, kv_before = c->model.kv_heads;
	ZB_INT_AXIS(v, ZB_AX_LAYERS, c->model.layers);
	ZB_INT_AXIS(v, ZB_AX_HIDDEN, c->model.hidden);
	ZB_INT_AXIS(v, ZB_AX_HEADS, c->model.heads);
	ZB_INT_AXIS(v, ZB_AX_KV_HEADS, c->model.kv_heads);
	ZB_INT_AXIS(v, ZB_AX_FFN, c->model.ffn);
	ZB_INT_AXIS(v, ZB_AX_VOCAB, c->model.vocab);
	for (int a = ZB_AX_LAYERS; a <= ZB_AX_VOCAB; a++)
		if (v[a])
			zb_src_mark_flag(s, shape[a - ZB_AX_LAYERS], (zb_axis)a, v[a]);
	if (v[ZB_AX_HEADS] && !v[ZB_AX_KV_HEADS] && kv_before == heads_before) {
		c->model.kv_heads = c->model.heads; /* multi-head stays multi-head */
		zb_src_mark(s, ZB_SET_KV_HEADS, ZB_SRC_FLAG, "= --heads (multi-head stays multi-head)");
	}
	if (v[ZB_AX_HIDDEN] && !v[ZB_AX_FFN]) {
		c->model.ffn = 4 * c->model.hidden;
		zb_src_mark(s, ZB_SET_FFN, ZB_SRC_FLAG, "4 x --hidden");
	}
	if (custom)
		snprintf(c->model.name, sizeof c->model.name, "custom");
	return ZB_OK;
}
