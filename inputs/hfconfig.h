/*
 * hfconfig.h - a model shape from a Hugging Face config.json (`--hf-config FILE`),
 * so a user points zbench at the file that ships with the checkpoint instead of
 * translating it into --layers/--hidden/... by hand.
 *
 * The families, chosen by "model_type" (or, without it, by the keys present), give
 * the parameters transformers builds from the same file, exactly (tests/data/
 * hf-params.tsv). An absent key takes the default of transformers' config class of
 * that family (Qwen3's head_dim 128, Mistral's num_key_value_heads 8, Gemma-2's
 * tied head); a null one means None to transformers, which most classes turn into
 * "= num_attention_heads".
 *   GPT-2 (gpt2): n_layer, n_embd, n_head, n_inner (null: 4 x n_embd), vocab_size,
 *     n_positions (learned positions); LayerNorm and biases; tied LM head unless
 *     tie_word_embeddings is false.
 *   OPT (opt): num_hidden_layers, hidden_size, ffn_dim, num_attention_heads,
 *     vocab_size, max_position_embeddings (learned, 2 rows more: OPT's offset),
 *     word_embed_proj_dim (project in/out when it differs from hidden_size),
 *     do_layer_norm_before false: no final norm; tied LM head.
 *   GPT-NeoX (gpt_neox): GPT-2's block (fused q/k/v, biases, LayerNorm) from
 *     num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
 *     vocab_size; rotary (rotary_pct: part of each head, no parameters),
 *     use_parallel_residual (order only), untied embed_out.
 *   Rotary families: num_hidden_layers, hidden_size, intermediate_size (SwiGLU:
 *     gate, up, down), num_attention_heads, num_key_value_heads, head_dim,
 *     vocab_size, tie_word_embeddings; RMSNorm; max_position_embeddings kept as the
 *     sequence length limit only. llama and mistral (attention_bias: q, k, v, o;
 *     mlp_bias), qwen2 (q, k, v biases always), qwen3 (q/k norms over head_dim,
 *     attention_bias), phi3 (fused qkv_proj and gate_up_proj: Llama's counts),
 *     gemma2 (pre/post attention and feed-forward norms: four per block; tanh
 *     soft-capped logits unless final_logit_softcapping is null; query_pre_attn_
 *     scalar and attention soft-capping change no count).
 *   Mixtures of experts: mixtral (num_local_experts SwiGLU experts of
 *     intermediate_size, num_experts_per_tok per token, a router) and qwen2_moe
 *     (num_experts of moe_intermediate_size, num_experts_per_tok, a shared expert
 *     of shared_expert_intermediate_size with a sigmoid gate, qkv_bias; every layer
 *     sparse: decoder_sparse_step 1, mlp_only_layers empty).
 *
 * Every other key of the file (dropout, eps, token ids, rope_theta, ...) does not
 * change the parameter layout or the FLOPs and is ignored without a word. Keys that
 * would change them in a way zbench cannot represent are errors naming the key:
 * dense and sparse layers mixed, an expert key on a dense family (transformers
 * ignores it), biases on OPT's or GPT-NeoX's linears switched off, GPT-2's
 * cross-attention, an unknown model_type. `notes` says where zbench's FLOPs
 * simplify (Gemma-2's sliding-window layers counted as full causal attention).
 */
#ifndef ZB_HFCONFIG_H
#define ZB_HFCONFIG_H

#include "common/error.h"
#include "core/config.h"

/* The model fields a config.json decides, for "where did this come from" output. */
typedef enum zb_hf_field {
	ZB_HF_LAYERS, ZB_HF_HIDDEN, ZB_HF_HEADS, ZB_HF_KV_HEADS, ZB_HF_FFN, ZB_HF_VOCAB,
	ZB_HF_POSITIONS, ZB_HF_TIED, ZB_HF_FIELD_COUNT
} zb_hf_field;

typedef struct zb_hf_config {
	zb_model model;
	char path[256];
	char model_type[32];     /* as in the file, or the family inferred ("gpt2") */
	int max_positions;       /* n_positions / max_position_embeddings: the longest
	                            sequence the checkpoint was built for (0: not given) */
	const char *key[ZB_HF_FIELD_COUNT]; /* the file key each field came from, with
	                                       the default when absent (static text) */
	char notes[320];         /* simplifications of the work (not of the counts), "" when none */
} zb_hf_config;

/* Read path into out. Errors (ZB_E_INPUT) name the file and the key: missing
 * required key, wrong type, value out of range, unsupported feature. */
zb_status zb_hf_load(const char *path, zb_hf_config *out, zb_error *err);

#endif
