/*
 * model.h - parameter layout and work counts of a decoder-only transformer.
 *
 * The parameters form one flat vector cut into units: unit 0 is the embeddings,
 * units 1..layers are the transformer blocks, unit layers+1 is the final norm and
 * (when untied) the LM head. Buckets, the optimizer split and the executor's
 * buffers all index this one vector, so a bucket means the same bytes everywhere.
 */
#ifndef ZB_MODEL_H
#define ZB_MODEL_H

#include <stdint.h>

#include "core/config.h"

static inline int zb_model_units(const zb_model *m) { return m->layers + 2; }

int64_t zb_model_unit_params(const zb_model *m, int unit);
int64_t zb_model_unit_offset(const zb_model *m, int unit);
int64_t zb_model_params(const zb_model *m);

/* Attention geometry. */
static inline int zb_model_head_dim(const zb_model *m) { return m->hidden / m->heads; }
static inline int64_t zb_model_kv_dim(const zb_model *m)
{
	return (int64_t)m->kv_heads * (m->hidden / m->heads);
}

/* Model FLOPs of one training token (forward + backward, no recompute) at a given
 * sequence length: 6 * matmul params + attention's 12 * layers * hidden * seq, the
 * convention of the Megatron and PaLM MFU papers. Recompute is not counted: this is
 * the figure "TFLOP/s of model FLOPs" divides by. */
double zb_model_flops_per_token(const zb_model *m, int seq);

/* Parameters that take part in matrix multiplies (excludes norms, biases, position
 * tables): what the 6*N*tokens rule counts. */
int64_t zb_model_matmul_params(const zb_model *m);

#endif
