/*
 * hfconfig.c - model shapes from Hugging Face config.json files; see hfconfig.h.
 *
 * The file is read with jansson. Each family is a short function that pulls its
 * keys into a zb_model; the shared helpers give every bad value the same one-line
 * error, "<file>: key '<key>' must be a positive integer (got ...)", in the style
 * of hwfile.c. Parameter counts then come from model.c like any other model, so a
 * config.json and the matching preset give the same numbers.
 */
#include "inputs/jsonfile.h"
#include "inputs/hfconfig.h"

#include "core/limits.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
	const char *path;
	json_t *root;
	zb_error *err;
} rd;


static zb_status bad(rd *r, const char *key, const char *want, const json_t *v)
{
	char got[96];
	zb_json_show(v, got, sizeof got);
	return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' must be %s (got %s)", r->path, key, want, got);
}

/* A present, non-null value of key, or NULL. */
static json_t *get(rd *r, const char *key)
{
	json_t *v = json_object_get(r->root, key);
	return v && !json_is_null(v) ? v : NULL;
}

/* The largest value of a shape key (limits.h), so that a huge value is refused by
 * its key before anything is multiplied by it. */
static long long key_limit(const char *key)
{
	static const struct {
		const char *key;
		long long max;
	} lim[] = {
		{ "n_layer", ZB_MAX_LAYERS }, { "num_hidden_layers", ZB_MAX_LAYERS },
		{ "n_embd", ZB_MAX_HIDDEN }, { "hidden_size", ZB_MAX_HIDDEN }, { "word_embed_proj_dim", ZB_MAX_HIDDEN },
		{ "head_dim", ZB_MAX_HIDDEN },
		{ "n_head", ZB_MAX_HEADS }, { "num_attention_heads", ZB_MAX_HEADS },
		{ "num_key_value_heads", ZB_MAX_HEADS },
		{ "n_inner", ZB_MAX_FFN }, { "ffn_dim", ZB_MAX_FFN }, { "intermediate_size", ZB_MAX_FFN },
		{ "vocab_size", ZB_MAX_VOCAB },
		{ "n_positions", ZB_MAX_POSITIONS }, { "max_position_embeddings", ZB_MAX_POSITIONS },
	};
	for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
		if (strcmp(key, lim[i].key) == 0)
			return lim[i].max;
	return INT_MAX;
}

/* An integer (or an integral real, "n_layer": 36.0) in [lo, key_limit(key)]. */
static zb_status int_value(rd *r, const char *key, const json_t *v, int lo, int *out)
{
	long long i;
	if (json_is_integer(v)) {
		i = json_integer_value(v);
	} else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
		   fabs(json_real_value(v)) < 9e15) {
		i = (long long)json_real_value(v);
	} else {
		return bad(r, key, lo > 0 ? "a positive integer" : "a non-negative integer", v);
	}
	if (i < lo || i > INT_MAX)
		return bad(r, key, lo > 0 ? "a positive integer" : "a non-negative integer", v);
	if (i > key_limit(key))
		return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' %lld exceeds the limit %lld", r->path, key, i,
			       key_limit(key));
	*out = (int)i;
	return ZB_OK;
}

static zb_status need_int(rd *r, const char *key, int *out)
{
	json_t *v = get(r, key);
	if (!v)
		return zb_fail(r->err, ZB_E_INPUT, "%s: missing required key '%s'", r->path, key);
	return int_value(r, key, v, 1, out);
}

/* *found = 0 and *out untouched when absent or null. */
static zb_status opt_int(rd *r, const char *key, int *out, int *found)
{
	json_t *v = get(r, key);
	*found = v != NULL;
	return v ? int_value(r, key, v, 1, out) : ZB_OK;
}

static zb_status opt_bool(rd *r, const char *key, int *out, int *found)
{
	json_t *v = get(r, key);
	*found = v != NULL;
	if (!v)
		return ZB_OK;
	if (!json_is_boolean(v))
		return bad(r, key, "true or false", v);
	*out = json_is_true(v);
	return ZB_OK;
}

static void note(zb_hf_config *hf, const char *text)
{
	size_t len = strlen(hf->notes);
	snprintf(hf->notes + len, sizeof hf->notes - len, "%s%s", len ? "; " : "", text);
}

/* Keys that make a model something zbench's dense blocks cannot stand for. */
static zb_status reject_moe(rd *r)
{
	static const char *const keys[] = { "num_local_experts", "num_experts", "n_routed_experts",
					    "moe_num_experts", NULL };
	for (int i = 0; keys[i]; i++) {
		json_t *v = get(r, keys[i]);
		if (v && !(json_is_integer(v) && json_integer_value(v) <= 1)) {
			char got[64];
			zb_json_show(v, got, sizeof got);
			return zb_fail(r->err, ZB_E_INPUT,
				       "%s: key '%s' %s: mixture-of-experts models are not modelled (dense "
				       "blocks only)",
				       r->path, keys[i], got);
		}
	}
	return ZB_OK;
}

/* ---- families -------------------------------------------------------------- */

static zb_status gpt2(rd *r, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "n_layer", &m->layers)) || (st = need_int(r, "n_embd", &m->hidden)) ||
	    (st = need_int(r, "n_head", &m->heads)) || (st = need_int(r, "vocab_size", &m->vocab)) ||
	    (st = need_int(r, "n_positions", &m->max_seq)))
		return st;
	m->kv_heads = m->heads;
	m->ffn = 4 * m->hidden;
	if ((st = opt_int(r, "n_inner", &m->ffn, &found)))
		return st;
	m->gated_mlp = 0;
	m->bias = 1;
	m->tied_embeddings = 1;
	int tied_found;
	if ((st = opt_bool(r, "tie_word_embeddings", &m->tied_embeddings, &tied_found)))
		return st;
	/* dropout modules that launch kernels in training (transformers' default 0.1) */
	json_t *pd = get(r, "resid_pdrop");
	if (pd && !(json_is_number(pd) && json_number_value(pd) >= 0 && json_number_value(pd) <= 1))
		return bad(r, "resid_pdrop", "a number in [0, 1]", pd);
	m->dropout = !pd || json_number_value(pd) > 0;
	hf->max_positions = m->max_seq;
	hf->key[ZB_HF_LAYERS] = "n_layer";
	hf->key[ZB_HF_HIDDEN] = "n_embd";
	hf->key[ZB_HF_HEADS] = "n_head";
	hf->key[ZB_HF_KV_HEADS] = "n_head (GPT-2 is multi-head)";
	hf->key[ZB_HF_FFN] = found ? "n_inner" : "n_inner null: 4 x n_embd";
	hf->key[ZB_HF_VOCAB] = "vocab_size";
	hf->key[ZB_HF_POSITIONS] = "n_positions (learned)";
	hf->key[ZB_HF_TIED] = tied_found ? "tie_word_embeddings" : "tie_word_embeddings absent: true";
	return ZB_OK;
}

static zb_status opt(rd *r, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "num_hidden_layers", &m->layers)) ||
	    (st = need_int(r, "hidden_size", &m->hidden)) ||
	    (st = need_int(r, "num_attention_heads", &m->heads)) ||
	    (st = need_int(r, "ffn_dim", &m->ffn)) || (st = need_int(r, "vocab_size", &m->vocab)) ||
	    (st = need_int(r, "max_position_embeddings", &m->max_seq)))
		return st;
	m->kv_heads = m->heads;
	m->gated_mlp = 0;
	m->bias = 1;
	if ((st = opt_bool(r, "enable_bias", &m->bias, &found)))
		return st;
	m->tied_embeddings = 1;
	int tied_found;
	if ((st = opt_bool(r, "tie_word_embeddings", &m->tied_embeddings, &tied_found)))
		return st;
	int proj = 0;
	if ((st = opt_int(r, "word_embed_proj_dim", &proj, &found)))
		return st;
	m->embed_proj = found && proj != m->hidden ? proj : 0;
	int before = 1, before_found;
	if ((st = opt_bool(r, "do_layer_norm_before", &before, &before_found)))
		return st;
	if (!before)
		note(hf, "do_layer_norm_before false (OPT-350m): the final LayerNorm is counted although "
			 "OPT-350m has none (2 x hidden_size parameters)");
	hf->max_positions = m->max_seq;
	hf->key[ZB_HF_LAYERS] = "num_hidden_layers";
	hf->key[ZB_HF_HIDDEN] = "hidden_size";
	hf->key[ZB_HF_HEADS] = "num_attention_heads";
	hf->key[ZB_HF_KV_HEADS] = "num_attention_heads (OPT is multi-head)";
	hf->key[ZB_HF_FFN] = "ffn_dim";
	hf->key[ZB_HF_VOCAB] = "vocab_size";
	hf->key[ZB_HF_POSITIONS] = "max_position_embeddings (learned)";
	hf->key[ZB_HF_TIED] = tied_found ? "tie_word_embeddings" : "tie_word_embeddings absent: true";
	return ZB_OK;
}

static zb_status llama(rd *r, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "num_hidden_layers", &m->layers)) ||
	    (st = need_int(r, "hidden_size", &m->hidden)) ||
	    (st = need_int(r, "num_attention_heads", &m->heads)) ||
	    (st = need_int(r, "intermediate_size", &m->ffn)) ||
	    (st = need_int(r, "vocab_size", &m->vocab)))
		return st;
	m->kv_heads = m->heads;
	int kv_found;
	if ((st = opt_int(r, "num_key_value_heads", &m->kv_heads, &kv_found)))
		return st;
	int head_dim = 0;
	if ((st = opt_int(r, "head_dim", &head_dim, &found)))
		return st;
	if (found && m->hidden % m->heads == 0 && head_dim != m->hidden / m->heads)
		return zb_fail(r->err, ZB_E_INPUT,
			       "%s: key 'head_dim' %d is not hidden_size / num_attention_heads = %d: not "
			       "modelled (zbench's attention width is hidden_size)",
			       r->path, head_dim, m->hidden / m->heads);
	m->max_seq = 0; /* rotary: no position table */
	int pos_found;
	if ((st = opt_int(r, "max_position_embeddings", &hf->max_positions, &pos_found)))
		return st;
	m->gated_mlp = 1;
	m->bias = 0;
	int attn_bias = 0, mlp_bias = 0, ab_found, mb_found;
	if ((st = opt_bool(r, "attention_bias", &attn_bias, &ab_found)) ||
	    (st = opt_bool(r, "mlp_bias", &mlp_bias, &mb_found)))
		return st;
	if (attn_bias || mlp_bias) {
		m->bias = 1;
		note(hf, "attention_bias/mlp_bias true: counted as biases on every linear layer and "
			 "norm (the norms' biases, 2 x hidden_size per layer, are extra)");
	}
	if (strcmp(hf->model_type, "qwen2") == 0)
		note(hf, "qwen2's q/k/v biases are not counted (hidden_size + 2 x kv width per layer)");
	if (strcmp(hf->model_type, "qwen3") == 0)
		note(hf, "qwen3's q/k norms are not counted (2 x head_dim per layer)");
	m->tied_embeddings = 0;
	int tied_found;
	if ((st = opt_bool(r, "tie_word_embeddings", &m->tied_embeddings, &tied_found)))
		return st;
	hf->key[ZB_HF_LAYERS] = "num_hidden_layers";
	hf->key[ZB_HF_HIDDEN] = "hidden_size";
	hf->key[ZB_HF_HEADS] = "num_attention_heads";
	hf->key[ZB_HF_KV_HEADS] =
		kv_found ? "num_key_value_heads" : "num_key_value_heads absent: = num_attention_heads";
	hf->key[ZB_HF_FFN] = "intermediate_size (gated: gate, up, down)";
	hf->key[ZB_HF_VOCAB] = "vocab_size";
	hf->key[ZB_HF_POSITIONS] = pos_found ? "max_position_embeddings (rotary: length limit only)"
					     : "rotary, no length limit given";
	hf->key[ZB_HF_TIED] = tied_found ? "tie_word_embeddings" : "tie_word_embeddings absent: false";
	return ZB_OK;
}

typedef zb_status (*family_fn)(rd *r, zb_hf_config *hf);

static const struct {
	const char *type;
	family_fn fn;
} families[] = {
	{ "gpt2", gpt2 }, { "opt", opt }, { "llama", llama },
	{ "mistral", llama }, { "qwen2", llama }, { "qwen3", llama },
};

#define NFAMILIES ((int)(sizeof families / sizeof families[0]))

/* The checkpoint's name: "_name_or_path" without its directories, else the
 * directory holding config.json, else the file name without ".json". */
static void model_name(rd *r, char *name)
{
	json_t *v = get(r, "_name_or_path");
	const char *s = NULL;
	size_t n = 0;
	if (v && json_is_string(v) && json_string_length(v) > 0) {
		s = json_string_value(v);
		const char *slash = strrchr(s, '/');
		if (slash && slash[1])
			s = slash + 1;
		n = strlen(s);
	} else {
		const char *b = strrchr(r->path, '/');
		const char *base = b ? b + 1 : r->path;
		if (strcmp(base, "config.json") == 0 && b && b > r->path) {
			const char *d = b - 1;
			while (d > r->path && d[-1] != '/')
				d--;
			s = d, n = (size_t)(b - d);
		} else {
			s = base, n = strlen(base);
			if (n > 5 && strcmp(base + n - 5, ".json") == 0)
				n -= 5;
		}
	}
	if (n >= ZB_NAME_MAX)
		n = ZB_NAME_MAX - 1;
	memcpy(name, s, n);
	name[n] = '\0';
}

zb_status zb_hf_load(const char *path, zb_hf_config *out, zb_error *err)
{
	zb_hf_config hf;
	memset(&hf, 0, sizeof hf);
	snprintf(hf.path, sizeof hf.path, "%s", path);
	rd r = { path, NULL, err };

	zb_status st = zb_json_load_object(path, &r.root, err);
	if (st)
		return st;

	family_fn fn = NULL;
	json_t *mt = get(&r, "model_type");
	if (mt) {
		if (!json_is_string(mt)) {
			st = bad(&r, "model_type", "a string", mt);
			goto out;
		}
		const char *t = json_string_value(mt);
		for (int i = 0; i < NFAMILIES; i++)
			if (strcmp(t, families[i].type) == 0)
				fn = families[i].fn;
		if (!fn) {
			char known[160] = "";
			for (int i = 0; i < NFAMILIES; i++)
				snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
					 families[i].type);
			st = zb_fail(err, ZB_E_INPUT, "%s: unsupported model_type '%s' (known: %s)", path, t,
				     known);
			goto out;
		}
		snprintf(hf.model_type, sizeof hf.model_type, "%s", t);
	} else if (get(&r, "n_layer")) {
		fn = gpt2, snprintf(hf.model_type, sizeof hf.model_type, "gpt2");
	} else if (get(&r, "ffn_dim")) {
		fn = opt, snprintf(hf.model_type, sizeof hf.model_type, "opt");
	} else if (get(&r, "intermediate_size")) {
		fn = llama, snprintf(hf.model_type, sizeof hf.model_type, "llama");
	} else {
		st = zb_fail(err, ZB_E_INPUT,
			     "%s: cannot tell the model family: no 'model_type' and none of 'n_layer' "
			     "(GPT-2), 'ffn_dim' (OPT), 'intermediate_size' (Llama)",
			     path);
		goto out;
	}
	if ((st = reject_moe(&r)) || (st = fn(&r, &hf)))
		goto out;
	/* transformers' module tree of the family: DeepSpeed's ZeRO-3 hooks fire per module */
	hf.model.modules = fn == gpt2 ? ZB_MODULES_HF_GPT2 : fn == opt ? ZB_MODULES_HF_OPT : ZB_MODULES_HF_LLAMA;
	model_name(&r, hf.model.name);
	zb_error e;
	if ((st = zb_model_validate(&hf.model, &e))) {
		st = zb_fail(err, st, "%s: %s", path, e.msg);
		goto out;
	}
	*out = hf;
out:
	json_decref(r.root);
	return st;
}
