/*
 * model.h - parameter layout and work counts of a decoder-only transformer.
 *
 * The parameters form one flat vector cut into units: unit 0 is the embeddings,
 * units 1..layers are the transformer blocks, unit layers+1 is the final norm and
 * (when untied) the LM head. Buckets, the optimizer split and the executor's
 * buffers all index this one vector, so a bucket means the same bytes everywhere.
 *
 * A mixture-of-experts block holds every expert's parameters (all of them are
 * stored, copied, reduced and updated by the optimizer: zb_model_unit_params), but a
 * token computes through only experts_active of them, plus the router: the widths
 * below (zb_model_mlp_width, zb_model_fc1_out) are what a token's GEMMs multiply, so
 * a schedule that sizes its MLP GEMMs by them does the routed FLOPs. For a dense
 * model they are ffn and (gated ? 2 : 1) x ffn, as before.
 */
#ifndef ZB_MODEL_H
#define ZB_MODEL_H

#include <stdint.h>

#include "core/config.h"

static inline int zb_model_units(const zb_model *m) { return m->layers + 2; }

int64_t zb_model_unit_params(const zb_model *m, int unit);
int64_t zb_model_unit_offset(const zb_model *m, int unit);
int64_t zb_model_params(const zb_model *m);

/* Attention geometry: one head's width, and the query (also the output projection's
 * input) and key/value widths. Without head_dim the query width is hidden. */
static inline int zb_model_head_dim(const zb_model *m)
{
	return m->head_dim > 0 ? m->head_dim : m->hidden / m->heads;
}
static inline int64_t zb_model_q_dim(const zb_model *m) { return (int64_t)m->heads * zb_model_head_dim(m); }
static inline int64_t zb_model_kv_dim(const zb_model *m) { return (int64_t)m->kv_heads * zb_model_head_dim(m); }

/* The MLP inner width one token computes through: ffn, or with experts the routed
 * experts' and the shared expert's together (experts_active x ffn + shared_ffn). */
int64_t zb_model_mlp_width(const zb_model *m);
/* Output width of the GEMM that reads the MLP's input: up (and gate) of that width,
 * and with experts the router's logits (one per expert) and the shared expert's
 * gate, which read the same normed input. */
int64_t zb_model_fc1_out(const zb_model *m);

/* Model FLOPs of one training token (forward + backward, no recompute) at a given
 * sequence length: 6 * matmul params + attention's 12 * layers * q width * seq, the
 * convention of the Megatron and PaLM MFU papers. Recompute is not counted: this is
 * the figure "TFLOP/s of model FLOPs" divides by. */
double zb_model_flops_per_token(const zb_model *m, int seq);

/* Parameters one token multiplies by (excludes norms, biases, position tables; with
 * experts only the routed ones, plus the router): what the 6*N*tokens rule counts. */
int64_t zb_model_matmul_params(const zb_model *m);

#endif
