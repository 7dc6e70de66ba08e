/*
 * ds_trace.c - ZeRO-3's module trace and its parameter coordinator replayed; see
 * ds_trace.h for what DeepSpeed does and schedules/deepspeed.c for the costs.
 *
 * Three parts: the module tree of each family as its forward calls it (builders,
 * one per zb_modules value), the backward derived from it (hooks reversed, gradient
 * hooks after each module's work), and the replay of DeepSpeed's fetch, prefetch,
 * release and bucket rules over that trace.
 */
#include "schedules/ds_trace.h"

#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "core/model.h"

/* ---- building the forward ------------------------------------------------------ */

#define MAX_DEPTH 16

typedef struct bld {
	const zb_model *m;
	zb_ds_trace *t;
	int unit;
	int stack[MAX_DEPTH], depth;
	int cap_t, cap_mod, cap_it, cap_pairs;
	int32_t (*pairs)[2];      /* (module, tensor) references, sorted into refs at the end */
	int npairs;
	zb_status st;
} bld;

static void *grow(void *p, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? 2 * *cap : 64;
	if (*cap < need)
		*cap = need;
	return zb_xrealloc(p, size * (size_t)*cap);
}

static zb_ds_item *item(bld *b, int kind)
{
	zb_ds_trace *t = b->t;
	t->it = grow(t->it, &b->cap_it, t->nit + 1, sizeof *t->it);
	zb_ds_item *x = &t->it[t->nit++];
	memset(x, 0, sizeof *x);
	x->kind = (uint8_t)kind;
	x->pass = ZB_PASS_FWD;
	x->seg = ZB_DSS_NONE;
	x->unit = b->unit;
	x->module = x->tensor = x->flush = -1;
	return x;
}

static int open_mod(bld *b, const char *name, int compute)
{
	zb_ds_trace *t = b->t;
	t->mod = grow(t->mod, &b->cap_mod, t->nmod + 1, sizeof *t->mod);
	int id = t->nmod++;
	zb_ds_module *m = &t->mod[id];
	memset(m, 0, sizeof *m);
	m->unit = b->unit;
	m->compute = (uint8_t)compute;
	m->name = name;
	if (b->depth == MAX_DEPTH)
		b->st = ZB_E_INTERNAL;
	else
		b->stack[b->depth++] = id;
	item(b, ZB_DSI_PRE)->module = id;
	return id;
}

static void close_mod(bld *b)
{
	if (b->depth == 0) {
		b->st = ZB_E_INTERNAL;
		return;
	}
	item(b, ZB_DSI_POST)->module = b->stack[--b->depth];
}

static void use(bld *b, int tensor)
{
	b->pairs = grow(b->pairs, &b->cap_pairs, b->npairs + 1, sizeof *b->pairs);
	b->pairs[b->npairs][0] = b->depth ? b->stack[b->depth - 1] : 0;
	b->pairs[b->npairs][1] = tensor;
	b->npairs++;
}

/* A tensor owned by the innermost open module; none when numel is 0 (no bias). */
static int own(bld *b, int64_t numel)
{
	if (numel <= 0)
		return -1;
	zb_ds_trace *t = b->t;
	t->t = grow(t->t, &b->cap_t, t->nt + 1, sizeof *t->t);
	int id = t->nt++;
	t->t[id].numel = numel;
	t->t[id].unit = b->unit;
	t->t[id].module = b->depth ? b->stack[b->depth - 1] : 0;
	t->t[id].persist = 0;
	use(b, id);
	return id;
}

static void seg(bld *b, int s) { item(b, ZB_DSI_SEG)->seg = (int16_t)s; }

/* A module with a weight (and a bias) whose kernels are segment s. */
static int leaf(bld *b, const char *name, int s, int64_t w, int64_t bias)
{
	open_mod(b, name, 1);
	int id = own(b, w);
	own(b, bias);
	seg(b, s);
	close_mod(b);
	return id;
}

/* ---- the families ---------------------------------------------------------------- */

typedef struct dims {
	int64_t h, q, kv, f, V, e, S, b;  /* b: norms' and every linear's bias (bias) */
	int64_t bqkv, bout, bmlp;          /* linear biases (bias, or linear_bias's bits) */
} dims;

static dims dims_of(const zb_model *m)
{
	dims d;
	d.h = m->hidden;
	d.q = zb_model_q_dim(m);
	d.kv = zb_model_kv_dim(m);
	d.f = m->ffn;
	d.V = m->vocab;
	d.e = m->embed_proj > 0 ? m->embed_proj : m->hidden;
	d.S = m->max_seq;
	d.b = m->bias;
	d.bqkv = m->bias || (m->linear_bias & ZB_BIAS_QKV);
	d.bout = m->bias || (m->linear_bias & ZB_BIAS_OUT);
	d.bmlp = m->bias || (m->linear_bias & ZB_BIAS_MLP);
	return d;
}

/* The head after the final norm: the embedding's weight (tied) or its own. */
static void head(bld *b, const char *name, int embed)
{
	dims d = dims_of(b->m);
	open_mod(b, name, 1);
	if (b->m->tied_embeddings)
		use(b, embed);
	else
		own(b, d.V * d.e);
	seg(b, ZB_DSS_HEAD);
	close_mod(b);
}

/* The end of a transformers model: its final norm closes the base model, then the
 * head (tied or its own) and the loss close the ...ForCausalLM. */
static void hf_tail(bld *b, const char *norm, const char *head_name, int embed)
{
	dims d = dims_of(b->m);
	leaf(b, norm, ZB_DSS_NORMF, d.h, d.b * d.h);
	close_mod(b);
	head(b, head_name, embed);
	seg(b, ZB_DSS_LOSS);
	close_mod(b);
}

/* An MLP of two linears (the first `up` wide) with its activation as a module between
 * them, each linear with the model's MLP bias. */
static void two_linears(bld *b, const char *fc1, int64_t up, const char *act, const char *fc2)
{
	dims d = dims_of(b->m);
	leaf(b, fc1, ZB_DSS_FC1, d.h * up, d.bmlp * up);
	open_mod(b, act, 1);
	seg(b, ZB_DSS_ACT);
	close_mod(b);
	leaf(b, fc2, ZB_DSS_FC2, d.f * d.h, d.bmlp * d.h);
}

/* peers/ds_step.py's Gpt: fused QKV, F.gelu in the block, the tied head by F.linear
 * in Gpt.forward (the embedding's weight an external parameter of Gpt). */
static void own_gpt(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "WithLoss", 0);
		open_mod(b, "Gpt", 0);
		*embed = leaf(b, "wte", ZB_DSS_EMBED, d.V * d.e, 0);
		leaf(b, "wpe", ZB_DSS_NONE, d.S * d.h, 0);
		seg(b, ZB_DSS_NONE); /* the sum of the two, in Gpt.forward */
	} else if (part == 1) {
		open_mod(b, "blocks.N", 0);
		leaf(b, "ln1", ZB_DSS_NORM1, d.h, d.b * d.h);
		leaf(b, "qkv", ZB_DSS_QKV, (d.h + 2 * d.kv) * d.h, d.b * (d.h + 2 * d.kv));
		seg(b, ZB_DSS_ATTN);
		leaf(b, "proj", ZB_DSS_PROJ, d.h * d.h, d.b * d.h);
		seg(b, ZB_DSS_RESID1);
		leaf(b, "ln2", ZB_DSS_NORM2, d.h, d.b * d.h);
		leaf(b, "fc", ZB_DSS_FC1, d.f * d.h, d.b * d.f);
		seg(b, ZB_DSS_ACT);
		leaf(b, "out", ZB_DSS_FC2, d.h * d.f, d.b * d.h);
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		leaf(b, "ln_f", ZB_DSS_NORMF, d.h, d.b * d.h);
		if (b->m->tied_embeddings) {
			use(b, *embed); /* F.linear(x, self.wte.weight) */
			seg(b, ZB_DSS_HEAD);
		} else {
			head(b, "head", *embed);
		}
		close_mod(b);
		seg(b, ZB_DSS_LOSS);
		close_mod(b);
	}
}

/* peers/ds_step.py's Llama: separate q, k, v, o and gate, up, down, rotary in the
 * block's code, RMSNorm without bias. */
static void own_llama(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "WithLoss", 0);
		open_mod(b, "Llama", 0);
		*embed = leaf(b, "embed", ZB_DSS_EMBED, d.V * d.e, 0);
	} else if (part == 1) {
		open_mod(b, "blocks.N", 0);
		leaf(b, "norm1", ZB_DSS_NORM1, d.h, 0);
		leaf(b, "q", ZB_DSS_QKV, d.h * d.q, d.bqkv * d.q);
		leaf(b, "k", ZB_DSS_NONE, d.kv * d.h, d.b * d.kv);
		leaf(b, "v", ZB_DSS_NONE, d.kv * d.h, d.b * d.kv);
		seg(b, ZB_DSS_ROTARY);
		seg(b, ZB_DSS_ATTN);
		leaf(b, "o", ZB_DSS_PROJ, d.q * d.h, d.bout * d.h);
		seg(b, ZB_DSS_RESID1);
		leaf(b, "norm2", ZB_DSS_NORM2, d.h, 0);
		leaf(b, "gate", ZB_DSS_FC1, d.f * d.h, d.b * d.f);
		leaf(b, "up", ZB_DSS_NONE, d.f * d.h, d.b * d.f);
		seg(b, ZB_DSS_ACT);
		leaf(b, "down", ZB_DSS_FC2, d.h * d.f, d.b * d.h);
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		leaf(b, "norm", ZB_DSS_NORMF, d.h, 0);
		if (b->m->tied_embeddings) {
			use(b, *embed);
			seg(b, ZB_DSS_HEAD);
		} else {
			head(b, "head", *embed);
		}
		close_mod(b);
		seg(b, ZB_DSS_LOSS);
		close_mod(b);
	}
}

/* A dropout module: a kernel with p > 0 in training, nothing with p = 0. */
static void dropout(bld *b, const char *name)
{
	open_mod(b, name, b->m->dropout);
	if (b->m->dropout)
		seg(b, ZB_DSS_DROPOUT);
	close_mod(b);
}

/* transformers' GPT2LMHeadModel (SDPA: attn_dropout is not called, the attention's
 * dropout runs inside the fused kernel). */
static void hf_gpt2(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "GPT2LMHeadModel", 0);
		open_mod(b, "transformer", 0);
		*embed = leaf(b, "wte", ZB_DSS_EMBED, d.V * d.e, 0);
		leaf(b, "wpe", ZB_DSS_NONE, d.S * d.h, 0);
		seg(b, ZB_DSS_NONE); /* inputs_embeds + position_embeds */
		dropout(b, "drop");
	} else if (part == 1) {
		open_mod(b, "h.N", 0);
		leaf(b, "ln_1", ZB_DSS_NORM1, d.h, d.b * d.h);
		open_mod(b, "attn", 0);
		leaf(b, "c_attn", ZB_DSS_QKV, d.h * (d.h + 2 * d.kv), d.b * (d.h + 2 * d.kv));
		seg(b, ZB_DSS_ATTN);
		leaf(b, "c_proj", ZB_DSS_PROJ, d.h * d.h, d.b * d.h);
		dropout(b, "resid_dropout");
		close_mod(b);
		seg(b, ZB_DSS_RESID1);
		leaf(b, "ln_2", ZB_DSS_NORM2, d.h, d.b * d.h);
		open_mod(b, "mlp", 0);
		two_linears(b, "c_fc", d.f, "act", "c_proj");
		dropout(b, "dropout");
		close_mod(b);
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		hf_tail(b, "ln_f", "lm_head", *embed);
	}
}

/* transformers' OPTForCausalLM (pre-norm layers, ReLU as a module). */
static void hf_opt(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "OPTForCausalLM", 0);
		open_mod(b, "model", 0);
		open_mod(b, "decoder", 0);
		*embed = leaf(b, "embed_tokens", ZB_DSS_EMBED, d.V * d.e, 0);
		leaf(b, "embed_positions", ZB_DSS_NONE, (d.S + 2) * d.h, 0);
		if (d.e != d.h)
			leaf(b, "project_in", ZB_DSS_NONE, d.e * d.h, 0);
		seg(b, ZB_DSS_NONE);
	} else if (part == 1) {
		open_mod(b, "layers.N", 0);
		leaf(b, "self_attn_layer_norm", ZB_DSS_NORM1, d.h, d.b * d.h);
		open_mod(b, "self_attn", 0);
		leaf(b, "q_proj", ZB_DSS_QKV, d.h * d.h, d.b * d.h);
		leaf(b, "k_proj", ZB_DSS_NONE, d.h * d.kv, d.b * d.kv);
		leaf(b, "v_proj", ZB_DSS_NONE, d.h * d.kv, d.b * d.kv);
		seg(b, ZB_DSS_ATTN);
		leaf(b, "out_proj", ZB_DSS_PROJ, d.h * d.h, d.b * d.h);
		close_mod(b);
		seg(b, ZB_DSS_RESID1);
		leaf(b, "final_layer_norm", ZB_DSS_NORM2, d.h, d.b * d.h);
		leaf(b, "fc1", ZB_DSS_FC1, d.h * d.f, d.b * d.f);
		open_mod(b, "activation_fn", 1);
		seg(b, ZB_DSS_ACT);
		close_mod(b);
		leaf(b, "fc2", ZB_DSS_FC2, d.f * d.h, d.b * d.h);
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		if (!(b->m->norms & ZB_NORM_NO_FINAL)) /* OPT-350m's post-norm layers have none */
			leaf(b, "final_layer_norm", ZB_DSS_NORMF, d.h, d.b * d.h);
		if (d.e != d.h) /* model.h counts it with the embeddings */
			b->t->t[leaf(b, "project_out", ZB_DSS_NONE, d.h * d.e, 0)].unit = 0;
		close_mod(b);
		close_mod(b);
		head(b, "lm_head", *embed);
		seg(b, ZB_DSS_LOSS);
		close_mod(b);
	}
}

/* transformers' LlamaForCausalLM and the families built like it (mistral, qwen2,
 * qwen3): rotary_emb a module called once per forward, SiLU as a module. */
static void hf_llama(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "LlamaForCausalLM", 0);
		open_mod(b, "model", 0);
		*embed = leaf(b, "embed_tokens", ZB_DSS_EMBED, d.V * d.e, 0);
		open_mod(b, "rotary_emb", 1);
		seg(b, ZB_DSS_NONE); /* cos, sin of the positions */
		close_mod(b);
	} else if (part == 1) {
		const zb_model *m = b->m;
		open_mod(b, "layers.N", 0);
		leaf(b, "input_layernorm", ZB_DSS_NORM1, d.h, d.b * d.h);
		open_mod(b, "self_attn", 0);
		leaf(b, "q_proj", ZB_DSS_QKV, d.h * d.q, d.bqkv * d.q);
		leaf(b, "k_proj", ZB_DSS_NONE, d.h * d.kv, d.bqkv * d.kv);
		leaf(b, "v_proj", ZB_DSS_NONE, d.h * d.kv, d.bqkv * d.kv);
		if (m->norms & ZB_NORM_QK) { /* Qwen3: RMSNorm over head_dim on q and k */
			int64_t hd = zb_model_head_dim(m);
			leaf(b, "q_norm", ZB_DSS_NONE, hd, d.b * hd);
			leaf(b, "k_norm", ZB_DSS_NONE, hd, d.b * hd);
		}
		seg(b, ZB_DSS_ROTARY);
		seg(b, ZB_DSS_ATTN);
		leaf(b, "o_proj", ZB_DSS_PROJ, d.q * d.h, d.bout * d.h);
		close_mod(b);
		if (m->norms & ZB_NORM_SANDWICH) /* Gemma-2: a norm after attention */
			leaf(b, "post_attention_layernorm", ZB_DSS_NONE, d.h, d.b * d.h);
		seg(b, ZB_DSS_RESID1);
		leaf(b, m->norms & ZB_NORM_SANDWICH ? "pre_feedforward_layernorm" : "post_attention_layernorm",
		     ZB_DSS_NORM2, d.h, d.b * d.h);
		if (m->experts > 0) { /* the router, every expert's fused tensors (transformers 5), a shared one */
			open_mod(b, "mlp", 0);
			leaf(b, "gate", ZB_DSS_NONE, (int64_t)m->experts * d.h, 0);
			open_mod(b, "experts", 1);
			own(b, (int64_t)m->experts * (m->gated_mlp ? 2 : 1) * d.f * d.h);
			own(b, (int64_t)m->experts * d.h * d.f);
			seg(b, ZB_DSS_FC1);
			seg(b, ZB_DSS_ACT);
			seg(b, ZB_DSS_FC2);
			close_mod(b);
			if (m->shared_ffn > 0) {
				int64_t w = m->shared_ffn;
				open_mod(b, "shared_expert", 0);
				leaf(b, "gate_proj", ZB_DSS_NONE, d.h * w, d.bmlp * w);
				leaf(b, "up_proj", ZB_DSS_NONE, d.h * w, d.bmlp * w);
				leaf(b, "down_proj", ZB_DSS_NONE, w * d.h, d.bmlp * d.h);
				close_mod(b);
				leaf(b, "shared_expert_gate", ZB_DSS_NONE, d.h, 0);
			}
			close_mod(b);
		} else {
			open_mod(b, "mlp", 0);
			leaf(b, "gate_proj", ZB_DSS_FC1, d.h * d.f, d.bmlp * d.f);
			open_mod(b, "act_fn", 1);
			seg(b, ZB_DSS_ACT);
			close_mod(b);
			leaf(b, "up_proj", ZB_DSS_NONE, d.h * d.f, d.bmlp * d.f);
			seg(b, ZB_DSS_NONE); /* act_fn(gate) * up */
			leaf(b, "down_proj", ZB_DSS_FC2, d.f * d.h, d.bmlp * d.h);
			close_mod(b);
		}
		if (m->norms & ZB_NORM_SANDWICH)
			leaf(b, "post_feedforward_layernorm", ZB_DSS_NONE, d.h, d.b * d.h);
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		hf_tail(b, "norm", "lm_head", *embed);
	}
}

/* transformers' GPTNeoXForCausalLM (Pythia): q, k, v in one biased linear, a GeLU
 * module between the MLP's two, dropout modules after attention and the MLP (called
 * even at p = 0; their kernels only when the model's dropout runs), rotary at the model. */
static void hf_neox(bld *b, int part, int *embed)
{
	dims d = dims_of(b->m);
	if (part == 0) {
		open_mod(b, "GPTNeoXForCausalLM", 0);
		open_mod(b, "gpt_neox", 0);
		*embed = leaf(b, "embed_in", ZB_DSS_EMBED, d.V * d.e, 0);
		dropout(b, "emb_dropout");
		open_mod(b, "rotary_emb", 1);
		seg(b, ZB_DSS_NONE);
		close_mod(b);
	} else if (part == 1) {
		open_mod(b, "layers.N", 0);
		leaf(b, "input_layernorm", ZB_DSS_NORM1, d.h, d.b * d.h);
		open_mod(b, "attention", 0);
		leaf(b, "query_key_value", ZB_DSS_QKV, d.h * (d.q + 2 * d.kv), d.bqkv * (d.q + 2 * d.kv));
		seg(b, ZB_DSS_ROTARY);
		seg(b, ZB_DSS_ATTN);
		leaf(b, "dense", ZB_DSS_PROJ, d.q * d.h, d.bout * d.h);
		close_mod(b);
		dropout(b, "post_attention_dropout");
		seg(b, ZB_DSS_RESID1);
		leaf(b, "post_attention_layernorm", ZB_DSS_NORM2, d.h, d.b * d.h);
		open_mod(b, "mlp", 0);
		two_linears(b, "dense_h_to_4h", d.f, "act", "dense_4h_to_h");
		close_mod(b);
		dropout(b, "post_mlp_dropout");
		seg(b, ZB_DSS_RESID2);
		close_mod(b);
	} else {
		hf_tail(b, "final_layer_norm", "embed_out", *embed);
	}
}

/* transformers' Phi3ForCausalLM: Llama's block with q, k, v in one linear (qkv_proj),
 * gate and up in one (gate_up_proj), and a residual dropout module after each half. */
static void hf_phi3(bld *b, int part, int *embed)
{
	if (part != 1) {
		hf_llama(b, part, embed);
		return;
	}
	dims d = dims_of(b->m);
	open_mod(b, "layers.N", 0);
	leaf(b, "input_layernorm", ZB_DSS_NORM1, d.h, d.b * d.h);
	open_mod(b, "self_attn", 0);
	leaf(b, "qkv_proj", ZB_DSS_QKV, d.h * (d.q + 2 * d.kv), d.bqkv * (d.q + 2 * d.kv));
	seg(b, ZB_DSS_ROTARY);
	seg(b, ZB_DSS_ATTN);
	leaf(b, "o_proj", ZB_DSS_PROJ, d.q * d.h, d.bout * d.h);
	close_mod(b);
	dropout(b, "resid_attn_dropout");
	seg(b, ZB_DSS_RESID1);
	leaf(b, "post_attention_layernorm", ZB_DSS_NORM2, d.h, d.b * d.h);
	open_mod(b, "mlp", 0);
	two_linears(b, "gate_up_proj", 2 * d.f, "activation_fn", "down_proj");
	close_mod(b);
	dropout(b, "resid_mlp_dropout");
	seg(b, ZB_DSS_RESID2);
	close_mod(b);
}

typedef void (*family_fn)(bld *b, int part, int *embed);

static family_fn family_of(const zb_model *m)
{
	switch (m->modules) {
	case ZB_MODULES_HF_GPT2: return hf_gpt2;
	case ZB_MODULES_HF_OPT: return hf_opt;
	case ZB_MODULES_HF_LLAMA: return hf_llama;
	case ZB_MODULES_HF_NEOX: return hf_neox;
	case ZB_MODULES_HF_PHI3: return hf_phi3;
	default: return m->gated_mlp || m->max_seq == 0 ? own_llama : own_gpt;
	}
}

/* The tensors of unit u add up to model.h's count: what a layout here leaves out
 * (or counts twice) goes into (or comes off) the unit's largest tensor, so bytes,
 * buckets and sub-groups always see the same parameters. */
static void settle(zb_ds_trace *t, const zb_model *m, int u)
{
	int64_t sum = 0;
	int big = -1;
	for (int i = 0; i < t->nt; i++) {
		if (t->t[i].unit != u)
			continue;
		sum += t->t[i].numel;
		if (big < 0 || t->t[i].numel > t->t[big].numel)
			big = i;
	}
	int64_t want = zb_model_unit_params(m, u);
	if (big >= 0 && sum != want && t->t[big].numel + (want - sum) > 0)
		t->t[big].numel += want - sum;
}

static int by_module(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void build_forward(bld *b)
{
	zb_ds_trace *t = b->t;
	const zb_model *m = b->m;
	family_fn fn = family_of(m);
	int embed = 0, L = m->layers;
	t->fwd_at = zb_xcalloc((size_t)t->units + 1, sizeof *t->fwd_at);
	for (int u = 0; u < t->units; u++) {
		b->unit = u;
		t->fwd_at[u] = t->nit;
		fn(b, u == 0 ? 0 : u <= L ? 1 : 2, &embed);
	}
	for (int u = 0; u < t->units; u++)
		settle(t, m, u);
	t->fwd_at[t->units] = t->nit;
	t->nfwd = t->nit;
	/* module -> its parameters, each once, in ds_id (creation) order */
	qsort(b->pairs, (size_t)b->npairs, sizeof *b->pairs, by_module);
	t->refs = zb_xmalloc(sizeof *t->refs * (size_t)(b->npairs + 1));
	for (int i = 0; i < b->npairs; i++) {
		if (i > 0 && b->pairs[i][0] == b->pairs[i - 1][0] && b->pairs[i][1] == b->pairs[i - 1][1])
			continue;
		zb_ds_module *md = &t->mod[b->pairs[i][0]];
		if (md->nref == 0)
			md->ref = t->nrefs;
		md->nref++;
		t->refs[t->nrefs++] = b->pairs[i][1];
	}
}

/* ---- the backward ------------------------------------------------------------------ */

static void push(zb_ds_trace *t, int *cap, zb_ds_item x)
{
	t->it = grow(t->it, cap, t->nit + 1, sizeof *t->it);
	t->it[t->nit++] = x;
}

/* The forward items of unit u again, as the recompute of gradient checkpointing. */
static void recompute(zb_ds_trace *t, int *cap, int u)
{
	for (int i = t->fwd_at[u]; i < t->fwd_at[u + 1]; i++) {
		zb_ds_item x = t->it[i];
		x.pass = ZB_PASS_RECOMPUTE;
		push(t, cap, x);
	}
}

/* Hooks reversed: a module's backward pre-hook where its forward post-hook was, its
 * post-backward hook where its pre-hook was, its parameters' gradient hooks just
 * before that (AccumulateGrad runs as its inputs' gradients leave). */
static void build_backward(zb_ds_trace *t, const zb_model *m, int ckpt, int *cap)
{
	t->bwd_at = zb_xcalloc((size_t)t->units, sizeof *t->bwd_at);
	t->bwd_n = zb_xcalloc((size_t)t->units, sizeof *t->bwd_n);
	for (int u = t->units - 1; u >= 0; u--) {
		t->bwd_at[u] = t->nit;
		if (ckpt && u >= 1 && u <= m->layers)
			recompute(t, cap, u);
		for (int i = t->fwd_at[u + 1] - 1; i >= t->fwd_at[u]; i--) {
			zb_ds_item x = t->it[i];
			x.pass = ZB_PASS_BWD_DATA;
			if (x.kind == ZB_DSI_PRE) {
				const zb_ds_module *md = &t->mod[x.module];
				for (int r = md->ref; r < md->ref + md->nref; r++) {
					int k = t->refs[r];
					if (t->t[k].module != x.module)
						continue; /* a tied or external use: its owner's hook */
					zb_ds_item g = x;
					g.kind = ZB_DSI_GRAD;
					g.tensor = k;
					g.module = -1;
					g.unit = t->t[k].unit;
					push(t, cap, g);
				}
				x.kind = ZB_DSI_POST;
			} else if (x.kind == ZB_DSI_POST) {
				x.kind = ZB_DSI_PRE;
			}
			push(t, cap, x);
		}
		t->bwd_n[u] = t->nit - t->bwd_at[u];
	}
}

/* ---- the coordinator ---------------------------------------------------------------- */

enum { NA, INFLIGHT, AVAIL };

typedef struct rp {
	zb_ds_trace *t;
	const zb_ds_trace_opts *o;
	int *pre;               /* the trace: item index of each fetch (PRE) */
	int npre;
	int (*queue)[2];        /* (tensor, step) in trace order */
	int nq, qhead;
	uint8_t *status;
	int *active;            /* modules holding the parameter */
	long long *recent;      /* __most_recent_step_id_param_fetched_for */
	double avail, live, live_max;
	int step;
	char *mark;
} rp;

static int pass_of(const zb_ds_item *x) { return x->pass == ZB_PASS_FWD ? 0 : 1; }

static void gather(rp *r, int k)
{
	r->t->gathered[r->t->ngathered++] = k;
	r->status[k] = INFLIGHT;
	r->avail += (double)r->t->t[k].numel;
	r->live += (double)r->t->t[k].numel;
	if (r->live > r->live_max)
		r->live_max = r->live;
}

/* fetch_sub_module at item x (module md). */
static void fetch(rp *r, zb_ds_item *x)
{
	zb_ds_trace *t = r->t;
	const zb_ds_module *md = &t->mod[x->module];
	int p = pass_of(x);
	x->gath = t->ngathered;
	for (int i = md->ref; i < md->ref + md->nref; i++) { /* the module's own, gathered */
		int k = t->refs[i];
		if (r->status[k] != NA)
			continue;
		gather(r, k);
		x->demand++;
		x->demand_elems += (double)t->t[k].numel;
	}
	for (int i = md->ref; i < md->ref + md->nref; i++) { /* and waited for */
		int k = t->refs[i];
		r->active[k]++;
		if (r->status[k] == INFLIGHT)
			x->wait = 1;
		r->status[k] = AVAIL;
	}
	/* its entries come off the queue (those no prefetch has taken yet) */
	int want = 0;
	for (int i = md->ref; i < md->ref + md->nref; i++)
		want += r->recent[t->refs[i]] < r->step;
	for (int got = 0; r->qhead < r->nq && got < want; got++) {
		int k = r->queue[r->qhead][0], s = r->queue[r->qhead][1];
		r->qhead++;
		r->recent[k] = s;
	}
	/* prefetch: up to the bucket, within the live limit, skipping what is there */
	double room = (double)r->o->max_live - r->avail, cap = (double)r->o->prefetch_bucket;
	double limit = room < cap ? room : cap, numel = 0;
	if (r->o->prefetch_bucket > 0) {
		while (r->qhead < r->nq && numel < limit) {
			int k = r->queue[r->qhead][0], s = r->queue[r->qhead][1];
			r->qhead++;
			if (r->status[k] == NA) {
				gather(r, k);
				x->prefetch++;
				x->prefetch_elems += (double)t->t[k].numel;
				numel += (double)t->t[k].numel;
			}
			if (s > r->recent[k])
				r->recent[k] = s;
		}
	}
	t->count.hooks[p]++;
	t->count.fetched[p] += x->demand + x->prefetch;
	t->count.fetched_elems[p] += x->demand_elems + x->prefetch_elems;
	t->count.waits[p] += x->wait;
	t->count.gathers[p] += (x->demand > 0) + (x->prefetch > 0);
	r->step++;
}

/* release_sub_module at item x: what __params_to_release keeps, and the rest freed. */
static void release(rp *r, zb_ds_item *x)
{
	zb_ds_trace *t = r->t;
	const zb_ds_module *md = &t->mod[x->module];
	for (int i = md->ref; i < md->ref + md->nref; i++) {
		int k = t->refs[i];
		r->mark[k] = !t->t[k].persist && !(r->recent[k] > r->step);
	}
	/* a parameter used again within max_reuse elements of the trace stays */
	double traversed = 0;
	for (int s = r->step; s < r->npre && traversed < (double)r->o->max_reuse; s++) {
		const zb_ds_module *nx = &t->mod[t->it[r->pre[s]].module];
		for (int i = nx->ref; i < nx->ref + nx->nref; i++) {
			r->mark[t->refs[i]] = 0;
			traversed += (double)t->t[t->refs[i]].numel;
		}
	}
	for (int i = md->ref; i < md->ref + md->nref; i++) {
		int k = t->refs[i];
		if (r->active[k] > 0)
			r->active[k]--;
		if (r->mark[k] && r->status[k] == AVAIL && r->active[k] == 0) {
			r->status[k] = NA;
			r->avail -= (double)t->t[k].numel;
			r->live -= (double)t->t[k].numel;
			x->released++;
		}
		r->mark[k] = 0;
	}
	t->count.hooks[pass_of(x)]++;
}

static void replay(zb_ds_trace *t, const zb_ds_trace_opts *o)
{
	rp r;
	memset(&r, 0, sizeof r);
	r.t = t;
	r.o = o;
	r.pre = zb_xmalloc(sizeof *r.pre * (size_t)(t->nit + 1));
	int nq = 0;
	for (int i = 0; i < t->nit; i++)
		if (t->it[i].kind == ZB_DSI_PRE) {
			r.pre[r.npre++] = i;
			nq += t->mod[t->it[i].module].nref;
		}
	r.queue = zb_xmalloc(sizeof *r.queue * (size_t)(nq + 1));
	t->gathered = zb_xmalloc(sizeof *t->gathered * (size_t)(2 * nq + 1)); /* a demand and a prefetch per entry at most */
	for (int s = 0; s < r.npre; s++) {
		const zb_ds_module *md = &t->mod[t->it[r.pre[s]].module];
		for (int i = md->ref; i < md->ref + md->nref; i++) {
			r.queue[r.nq][0] = t->refs[i];
			r.queue[r.nq++][1] = s;
		}
	}
	r.status = zb_xcalloc((size_t)t->nt + 1, 1);
	r.mark = zb_xcalloc((size_t)t->nt + 1, 1);
	r.active = zb_xcalloc((size_t)t->nt + 1, sizeof *r.active);
	r.recent = zb_xmalloc(sizeof *r.recent * (size_t)(t->nt + 1));
	for (int k = 0; k < t->nt; k++) {
		r.recent[k] = -10000000000LL;
		if (t->t[k].persist) { /* on the GPU since the first step */
			r.status[k] = AVAIL;
			r.live += (double)t->t[k].numel;
		}
	}
	r.live_max = r.live;
	for (int i = 0; i < t->nit; i++) {
		if (t->it[i].kind == ZB_DSI_PRE)
			fetch(&r, &t->it[i]);
		else if (t->it[i].kind == ZB_DSI_POST)
			release(&r, &t->it[i]);
	}
	t->count.max_live_elems = r.live_max;
	free(r.pre);
	free(r.queue);
	free(r.status);
	free(r.mark);
	free(r.active);
	free(r.recent);
}

/* The IPG bucket over the backward's gradient hooks (stage3.py
 * reduce_independent_p_g_buckets_and_remove_grads, __add_grad_to_ipg_bucket). */
static void buckets(zb_ds_trace *t, int64_t size)
{
	t->flush_tensors = zb_xmalloc(sizeof *t->flush_tensors * (size_t)(t->nt + 1));
	t->flush = zb_xmalloc(sizeof *t->flush * (size_t)(t->nt + 1));
	int in = 0, first = 0, n = 0;
	double elems = 0;
	for (int i = t->nfwd; i < t->nit; i++) {
		zb_ds_item *x = &t->it[i];
		if (x->kind != ZB_DSI_GRAD)
			continue;
		double k = (double)t->t[x->tensor].numel;
		if (elems > 0 && elems + k > (double)size) {
			t->flush[t->nflush] = (zb_ds_flush){ first, n, elems, x->unit };
			x->flush = t->nflush++;
			first = in, n = 0, elems = 0;
		}
		x->contiguous = elems + k <= (double)size;
		t->count.contiguous += x->contiguous;
		t->flush_tensors[in++] = x->tensor;
		n++;
		elems += k;
		t->count.grads++;
	}
	if (n > 0) /* independent_gradient_partition_epilogue */
		t->flush[t->nflush++] = (zb_ds_flush){ first, n, elems, 0 };
	t->count.flushes = t->nflush;
}

/* Stretches of GPU work: a segment (a module's or its parent's kernels), a
 * gradient copied into the bucket buffer, each gradient of a reduced bucket
 * (partition_grads issues its copies one parameter at a time, Python between); each
 * after host work. */
static void stretches(zb_ds_trace *t)
{
	for (int p = 0; p < 2; p++) {
		int lo = p ? t->nfwd : 0, hi = p ? t->nit : t->nfwd, gpu = 0;
		for (int i = lo; i < hi; i++) {
			const zb_ds_item *x = &t->it[i];
			if (x->kind == ZB_DSI_GRAD && x->flush >= 0)
				t->count.stretches[p] += t->flush[x->flush].n;
			int work = x->kind == ZB_DSI_SEG || (x->kind == ZB_DSI_GRAD && x->contiguous);
			if (work && !gpu)
				t->count.stretches[p]++;
			gpu = x->kind == ZB_DSI_SEG ? 1 : 0;
		}
	}
	if (t->nflush > 0) /* the epilogue's bucket */
		t->count.stretches[1] += t->flush[t->nflush - 1].n;
}

zb_status zb_ds_trace_build(const zb_model *m, const zb_ds_trace_opts *o, zb_ds_trace *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	bld b;
	memset(&b, 0, sizeof b);
	b.m = m;
	b.t = out;
	out->units = zb_model_units(m);
	build_forward(&b);
	free(b.pairs);
	if (b.st || b.depth != 0) {
		zb_ds_trace_free(out);
		return zb_fail(err, ZB_E_INTERNAL, "module tree of %s does not close (%d open)", m->name, b.depth);
	}
	int64_t off = 0;
	for (int k = 0; k < out->nt; k++) {
		out->t[k].offset = off;
		off += out->t[k].numel;
		out->t[k].persist = out->t[k].numel <= o->persist_threshold;
		out->count.persistent += out->t[k].persist;
		out->count.persistent_elems += out->t[k].persist ? (double)out->t[k].numel : 0;
	}
	out->count.tensors = out->nt;
	out->count.modules = out->nmod;
	build_backward(out, m, o->recompute, &b.cap_it);
	replay(out, o);
	buckets(out, o->reduce_bucket > 0 ? o->reduce_bucket : 1);
	stretches(out);
	return ZB_OK;
}

void zb_ds_trace_free(zb_ds_trace *t)
{
	free(t->t);
	free(t->mod);
	free(t->refs);
	free(t->it);
	free(t->fwd_at);
	free(t->bwd_at);
	free(t->bwd_n);
	free(t->flush);
	free(t->flush_tensors);
	free(t->gathered);
	memset(t, 0, sizeof *t);
}
