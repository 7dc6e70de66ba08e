/*
 * hfconfig.h - a model shape from a Hugging Face config.json (`--hf-config FILE`),
 * so a user points zbench at the file that ships with the checkpoint instead of
 * translating it into --layers/--hidden/... by hand.
 *
 * Three families are understood, chosen by "model_type" (or, without it, by the
 * keys present):
 *   GPT-2 (gpt2): n_layer, n_embd, n_head, n_inner (null: 4 x n_embd), vocab_size,
 *     n_positions (learned positions); LayerNorm and biases; tied LM head unless
 *     tie_word_embeddings is false.
 *   OPT (opt): num_hidden_layers, hidden_size, ffn_dim, num_attention_heads,
 *     vocab_size, max_position_embeddings (learned), word_embed_proj_dim (project
 *     in/out when it differs from hidden_size), enable_bias; tied LM head.
 *   Llama style (llama, mistral, qwen2, qwen3): num_hidden_layers, hidden_size,
 *     intermediate_size (SwiGLU: gate, up, down), num_attention_heads,
 *     num_key_value_heads (absent: = heads, multi-head), vocab_size,
 *     tie_word_embeddings (absent: false); RMSNorm, no biases, rotary positions
 *     (max_seq 0: no position table) with max_position_embeddings kept as the
 *     sequence length limit.
 *
 * Every other key of the file (dropout, eps, token ids, rope_theta, ...) does not
 * change the parameter layout or the FLOPs and is ignored without a word. Keys that
 * would change them in a way zbench cannot represent are errors naming the key:
 * mixture-of-experts, a head_dim that is not hidden_size / num_attention_heads, an
 * unknown model_type. Small approximations (Qwen2's q/k/v biases, OPT-350m's missing
 * final norm) are accepted and described in `notes`.
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
	char notes[320];         /* approximations made, "" when none */
} zb_hf_config;

/* Read path into out. Errors (ZB_E_INPUT) name the file and the key: missing
 * required key, wrong type, value out of range, unsupported feature. */
zb_status zb_hf_load(const char *path, zb_hf_config *out, zb_error *err);

#endif
