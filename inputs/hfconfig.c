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
		{ "moe_intermediate_size", ZB_MAX_FFN }, { "shared_expert_intermediate_size", ZB_MAX_FFN },
		{ "num_local_experts", ZB_MAX_EXPERTS }, { "num_experts", ZB_MAX_EXPERTS },
		{ "num_experts_per_tok", ZB_MAX_EXPERTS },
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

/* ---- families -------------------------------------------------------------- */

/* What transformers' config class of a family assumes for an absent key (its
 * dataclass default), which is what AutoConfig builds from the same file. */
typedef struct family family;
typedef zb_status (*family_fn)(rd *r, const family *fam, zb_hf_config *hf);
struct family {
	const char *type;
	family_fn fn;
	int kv_default;       /* num_key_value_heads absent (0: = num_attention_heads) */
	int head_dim_default; /* head_dim absent (0: hidden_size / num_attention_heads) */
	int tied_default;     /* tie_word_embeddings absent */
};

/* An expert key on a family whose transformers class has no experts: transformers
 * ignores it and builds a dense model, which is most likely not what was meant. */
static zb_status reject_moe(rd *r, const char *type)
{
	static const char *const keys[] = { "num_local_experts", "num_experts", "n_routed_experts",
					    "moe_num_experts", NULL };
	for (int i = 0; keys[i]; i++) {
		json_t *v = get(r, keys[i]);
		if (v && !(json_is_integer(v) && json_integer_value(v) <= 1)) {
			char got[64];
			zb_json_show(v, got, sizeof got);
			return zb_fail(r->err, ZB_E_INPUT,
				       "%s: key '%s' %s with model_type '%s': transformers builds that family "
				       "dense and ignores the key (mixture-of-experts families: mixtral, qwen2_moe)",
				       r->path, keys[i], got, type);
		}
	}
	return ZB_OK;
}

/* The key is in the file, null or not (json null means "None" to transformers,
 * which differs from the class default an absent key gets). */
static int in_file(rd *r, const char *key) { return json_object_get(r->root, key) != NULL; }

static zb_status gpt2(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "n_layer", &m->layers)) || (st = need_int(r, "n_embd", &m->hidden)) ||
	    (st = need_int(r, "n_head", &m->heads)) || (st = need_int(r, "vocab_size", &m->vocab)) ||
	    (st = need_int(r, "n_positions", &m->max_seq)))
		return st;
	int cross = 0, cross_found;
	if ((st = opt_bool(r, "add_cross_attention", &cross, &cross_found)))
		return st;
	if (cross)
		return zb_fail(r->err, ZB_E_INPUT, "%s: key 'add_cross_attention' true: encoder-decoder "
			       "cross-attention is not modelled (decoder-only)", r->path);
	m->kv_heads = m->heads;
	m->ffn = 4 * m->hidden;
	if ((st = opt_int(r, "n_inner", &m->ffn, &found)))
		return st;
	m->gated_mlp = 0;
	m->bias = 1;
	m->tied_embeddings = fam->tied_default;
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

static zb_status opt(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "num_hidden_layers", &m->layers)) ||
	    (st = need_int(r, "hidden_size", &m->hidden)) ||
	    (st = need_int(r, "num_attention_heads", &m->heads)) ||
	    (st = need_int(r, "ffn_dim", &m->ffn)) || (st = need_int(r, "vocab_size", &m->vocab)) ||
	    (st = need_int(r, "max_position_embeddings", &hf->max_positions)))
		return st;
	/* OPTLearnedPositionalEmbedding keeps 2 rows ahead of the positions (its offset) */
	m->max_seq = hf->max_positions + 2;
	m->kv_heads = m->heads;
	m->gated_mlp = 0;
	m->bias = 1;
	int bias = 1, affine = 1, affine_found;
	if ((st = opt_bool(r, "enable_bias", &bias, &found)) ||
	    (st = opt_bool(r, "layer_norm_elementwise_affine", &affine, &affine_found)))
		return st;
	if (!bias || !affine)
		return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' false: OPT's LayerNorms and linears then carry "
			       "different parameters, which is not modelled", r->path,
			       !bias ? "enable_bias" : "layer_norm_elementwise_affine");
	m->tied_embeddings = fam->tied_default;
	int tied_found;
	if ((st = opt_bool(r, "tie_word_embeddings", &m->tied_embeddings, &tied_found)))
		return st;
	int proj = 0;
	if ((st = opt_int(r, "word_embed_proj_dim", &proj, &found)))
		return st;
	m->embed_proj = found && proj != m->hidden ? proj : 0;
	int before = 1, before_found, removed = 0, removed_found;
	if ((st = opt_bool(r, "do_layer_norm_before", &before, &before_found)) ||
	    (st = opt_bool(r, "_remove_final_layer_norm", &removed, &removed_found)))
		return st;
	if (!before || removed) /* post-norm blocks (OPT-350m): no norm before the head */
		m->norms = ZB_NORM_NO_FINAL;
	hf->key[ZB_HF_LAYERS] = "num_hidden_layers";
	hf->key[ZB_HF_HIDDEN] = "hidden_size";
	hf->key[ZB_HF_HEADS] = "num_attention_heads";
	hf->key[ZB_HF_KV_HEADS] = "num_attention_heads (OPT is multi-head)";
	hf->key[ZB_HF_FFN] = "ffn_dim";
	hf->key[ZB_HF_VOCAB] = "vocab_size";
	hf->key[ZB_HF_POSITIONS] = "max_position_embeddings + 2 (learned, OPT's offset)";
	hf->key[ZB_HF_TIED] = tied_found ? "tie_word_embeddings" : "tie_word_embeddings absent: true";
	return ZB_OK;
}

/* The shape every rotary family shares: layers, widths, heads (grouped-query),
 * head_dim, vocabulary, tied head, with the family's defaults for absent keys. */
static zb_status rotary_shape(rd *r, const family *fam, zb_hf_config *hf, const char *ffn_key)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found;
	if ((st = need_int(r, "num_hidden_layers", &m->layers)) ||
	    (st = need_int(r, "hidden_size", &m->hidden)) ||
	    (st = need_int(r, "num_attention_heads", &m->heads)) || (st = need_int(r, ffn_key, &m->ffn)) ||
	    (st = need_int(r, "vocab_size", &m->vocab)))
		return st;
	/* absent: the class default; null: None, which the class turns into heads */
	m->kv_heads = fam->kv_default > 0 && !in_file(r, "num_key_value_heads") ? fam->kv_default : m->heads;
	int kv_found;
	if ((st = opt_int(r, "num_key_value_heads", &m->kv_heads, &kv_found)))
		return st;
	int head_dim = fam->head_dim_default;
	if ((st = opt_int(r, "head_dim", &head_dim, &found)))
		return st;
	/* kept only where it differs from hidden / heads, so a plain shape stays plain */
	m->head_dim = head_dim > 0 && (m->hidden % m->heads != 0 || head_dim != m->hidden / m->heads) ? head_dim : 0;
	m->max_seq = 0; /* rotary: no position table */
	int pos_found;
	if ((st = opt_int(r, "max_position_embeddings", &hf->max_positions, &pos_found)))
		return st;
	m->gated_mlp = 1;
	m->bias = 0;
	m->tied_embeddings = fam->tied_default;
	int tied_found;
	if ((st = opt_bool(r, "tie_word_embeddings", &m->tied_embeddings, &tied_found)))
		return st;
	hf->key[ZB_HF_LAYERS] = "num_hidden_layers";
	hf->key[ZB_HF_HIDDEN] = "hidden_size";
	hf->key[ZB_HF_HEADS] = "num_attention_heads";
	hf->key[ZB_HF_KV_HEADS] = kv_found		  ? "num_key_value_heads"
				  : fam->kv_default > 0 && !in_file(r, "num_key_value_heads")
					  ? "num_key_value_heads absent: transformers' default"
					  : "num_key_value_heads absent: = num_attention_heads";
	hf->key[ZB_HF_FFN] = m->experts ? ffn_key : "intermediate_size (gated: gate, up, down)";
	hf->key[ZB_HF_VOCAB] = "vocab_size";
	hf->key[ZB_HF_POSITIONS] = pos_found ? "max_position_embeddings (rotary: length limit only)"
					     : "rotary, no length limit given";
	hf->key[ZB_HF_TIED] = tied_found     ? "tie_word_embeddings"
			      : m->tied_embeddings ? "tie_word_embeddings absent: true"
						   : "tie_word_embeddings absent: false";
	return ZB_OK;
}

/* attention_bias: q, k, v and o; mlp_bias: gate, up and down (Llama, Qwen3, Gemma-2). */
static zb_status attention_bias(rd *r, zb_model *m, int with_mlp_bias)
{
	int attn = 0, mlp = 0, found;
	zb_status st;
	if ((st = opt_bool(r, "attention_bias", &attn, &found)))
		return st;
	if (with_mlp_bias && (st = opt_bool(r, "mlp_bias", &mlp, &found)))
		return st;
	m->linear_bias |= (attn ? ZB_BIAS_QKV | ZB_BIAS_OUT : 0) | (mlp ? ZB_BIAS_MLP : 0);
	return ZB_OK;
}

static zb_status llama(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_status st = rotary_shape(r, fam, hf, "intermediate_size");
	return st ? st : attention_bias(r, &hf->model, 1);
}

/* Qwen2: q, k and v always carry biases, o does not (no key). */
static zb_status qwen2(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_status st = rotary_shape(r, fam, hf, "intermediate_size");
	hf->model.linear_bias = ZB_BIAS_QKV;
	return st;
}

/* Qwen3: an RMSNorm over head_dim on each query and key head. */
static zb_status qwen3(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_status st = rotary_shape(r, fam, hf, "intermediate_size");
	hf->model.norms = ZB_NORM_QK;
	return st ? st : attention_bias(r, &hf->model, 0);
}

/* Phi-3: q, k, v in one linear, gate and up in one: the same parameters and FLOPs
 * as Llama's separate ones, no biases. */
static zb_status phi3(rd *r, const family *fam, zb_hf_config *hf)
{
	return rotary_shape(r, fam, hf, "intermediate_size");
}

/* Gemma-2: four norms per block (before and after attention and MLP), tanh
 * soft-capped logits unless final_logit_softcapping is null. */
static zb_status gemma2(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_status st = rotary_shape(r, fam, hf, "intermediate_size");
	if (st || (st = attention_bias(r, &hf->model, 0)))
		return st;
	hf->model.norms = ZB_NORM_SANDWICH;
	hf->model.loss = !in_file(r, "final_logit_softcapping") || get(r, "final_logit_softcapping")
				 ? ZB_LOSS_HF_SOFTCAP
				 : ZB_LOSS_HF;
	note(hf, "gemma2's sliding-window layers are counted with full causal attention (differs only "
		 "beyond sliding_window tokens)");
	return ZB_OK;
}

/* The router's width: experts and the experts each token takes. */
static zb_status experts(rd *r, zb_model *m, const char *n_key, const char *k_key)
{
	zb_status st;
	if ((st = need_int(r, n_key, &m->experts)) || (st = need_int(r, k_key, &m->experts_active)))
		return st;
	if (m->experts_active > m->experts)
		return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' %d exceeds %s %d", r->path, k_key, m->experts_active,
			       n_key, m->experts);
	return ZB_OK;
}

/* Mixtral: every block's MLP is num_local_experts SwiGLU experts of
 * intermediate_size, num_experts_per_tok of them per token, and a router. */
static zb_status mixtral(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_status st = experts(r, &hf->model, "num_local_experts", "num_experts_per_tok");
	return st ? st : rotary_shape(r, fam, hf, "intermediate_size");
}

/* Qwen2-MoE: experts of moe_intermediate_size and a shared expert with a sigmoid
 * gate; q, k, v biases (qkv_bias). Layers whose MLP is dense instead
 * (mlp_only_layers, decoder_sparse_step > 1) would make blocks of two sizes. */
static zb_status qwen2_moe(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st;
	int found, step = 1, qkv_bias = 1;
	if ((st = experts(r, m, "num_experts", "num_experts_per_tok")) ||
	    (st = need_int(r, "shared_expert_intermediate_size", &m->shared_ffn)) ||
	    (st = rotary_shape(r, fam, hf, "moe_intermediate_size")) ||
	    (st = opt_int(r, "decoder_sparse_step", &step, &found)) ||
	    (st = opt_bool(r, "qkv_bias", &qkv_bias, &found)))
		return st;
	json_t *dense = get(r, "mlp_only_layers");
	if (dense && !json_is_array(dense))
		return bad(r, "mlp_only_layers", "a list of layer numbers", dense);
	if (step != 1 || (dense && json_array_size(dense) > 0))
		return zb_fail(r->err, ZB_E_INPUT,
			       "%s: key '%s': dense and mixture-of-experts layers in one model are not modelled "
			       "(every layer sparse: decoder_sparse_step 1, mlp_only_layers [])",
			       r->path, step != 1 ? "decoder_sparse_step" : "mlp_only_layers");
	m->linear_bias = qkv_bias ? ZB_BIAS_QKV : 0;
	return ZB_OK;
}

/* GPT-NeoX (Pythia): GPT-2's block (LayerNorm, fused q/k/v with biases, GeLU MLP
 * with biases) with rotary positions on part of each head (rotary_pct: no
 * parameters) and an untied embed_out; use_parallel_residual changes the order,
 * not the counts. */
static zb_status gpt_neox(rd *r, const family *fam, zb_hf_config *hf)
{
	zb_model *m = &hf->model;
	zb_status st = rotary_shape(r, fam, hf, "intermediate_size");
	if (st)
		return st;
	if (in_file(r, "num_key_value_heads") || in_file(r, "head_dim"))
		return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' is not read by transformers' gpt_neox "
			       "(multi-head, hidden_size / num_attention_heads wide)", r->path,
			       in_file(r, "head_dim") ? "head_dim" : "num_key_value_heads");
	int attn_bias = 1, found;
	if ((st = opt_bool(r, "attention_bias", &attn_bias, &found)))
		return st;
	if (!attn_bias)
		return zb_fail(r->err, ZB_E_INPUT, "%s: key 'attention_bias' false: LayerNorm biases without "
			       "attention biases are not modelled", r->path);
	m->gated_mlp = 0;
	m->bias = 1;
	hf->key[ZB_HF_KV_HEADS] = "num_attention_heads (GPT-NeoX is multi-head)";
	hf->key[ZB_HF_FFN] = "intermediate_size";
	return ZB_OK;
}

static const family families[] = {
	{ "gpt2", gpt2, 0, 0, 1 },          { "opt", opt, 0, 0, 1 },
	{ "llama", llama, 0, 0, 0 },        { "mistral", llama, 8, 0, 0 },
	{ "qwen2", qwen2, 32, 0, 0 },       { "qwen3", qwen3, 32, 128, 0 },
	{ "gpt_neox", gpt_neox, 0, 0, 0 },  { "phi3", phi3, 0, 0, 0 },
	{ "gemma2", gemma2, 4, 256, 1 },    { "mixtral", mixtral, 8, 0, 0 },
	{ "qwen2_moe", qwen2_moe, 16, 0, 0 },
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

	const family *fam = NULL;
	json_t *mt = get(&r, "model_type");
	if (mt) {
		if (!json_is_string(mt)) {
			st = bad(&r, "model_type", "a string", mt);
			goto out;
		}
		const char *t = json_string_value(mt);
		for (int i = 0; i < NFAMILIES; i++)
			if (strcmp(t, families[i].type) == 0)
				fam = &families[i];
		if (!fam) {
			char known[200] = "";
			for (int i = 0; i < NFAMILIES; i++)
				snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
					 families[i].type);
			st = zb_fail(err, ZB_E_INPUT, "%s: unsupported model_type '%s' (known: %s)", path, t,
				     known);
			goto out;
		}
	} else if (get(&r, "n_layer")) {
		fam = &families[0];
	} else if (get(&r, "ffn_dim")) {
		fam = &families[1];
	} else if (get(&r, "intermediate_size")) {
		fam = &families[2];
	} else {
		st = zb_fail(err, ZB_E_INPUT,
			     "%s: cannot tell the model family: no 'model_type' and none of 'n_layer' "
			     "(GPT-2), 'ffn_dim' (OPT), 'intermediate_size' (Llama)",
			     path);
		goto out;
	}
	snprintf(hf.model_type, sizeof hf.model_type, "%s", fam->type);
	hf.model.loss = ZB_LOSS_HF; /* every family's ForCausalLM loss upcasts the logits */
	if ((fam->fn != mixtral && fam->fn != qwen2_moe && (st = reject_moe(&r, fam->type))) ||
	    (st = fam->fn(&r, fam, &hf)))
		goto out;
	/* transformers' module tree of the family: DeepSpeed's ZeRO-3 hooks fire per module */
	hf.model.modules = fam->fn == gpt2       ? ZB_MODULES_HF_GPT2
			   : fam->fn == opt      ? ZB_MODULES_HF_OPT
			   : fam->fn == gpt_neox ? ZB_MODULES_HF_NEOX
			   : fam->fn == phi3     ? ZB_MODULES_HF_PHI3
						 : ZB_MODULES_HF_LLAMA;
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
