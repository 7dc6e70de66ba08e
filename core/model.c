/* model.c - parameter counts and FLOPs of the transformer shapes in config.h. */
#include "core/model.h"

/* Parameters of one norm: LayerNorm has a gain and a bias, RMSNorm only a gain. */
static int64_t norm_params(const zb_model *m) { return (int64_t)m->hidden * (m->bias ? 2 : 1); }

static int64_t block_params(const zb_model *m)
{
	int64_t h = m->hidden, kv = zb_model_kv_dim(m), f = m->ffn;
	int64_t attn = h * h /* q */ + 2 * h * kv /* k, v */ + h * h /* out */;
	int64_t mlp = (m->gated_mlp ? 3 : 2) * h * f;
	int64_t bias = 0;
	if (m->bias)
		bias = (h + 2 * kv) + h /* attention */ + (m->gated_mlp ? 2 * f : f) + h /* mlp */;
	return attn + mlp + bias + 2 * norm_params(m);
}

static int64_t embed_params(const zb_model *m)
{
	int64_t h = m->hidden, e = m->embed_proj > 0 ? m->embed_proj : m->hidden;
	int64_t p = (int64_t)m->vocab * e + (int64_t)m->max_seq * h;
	if (m->embed_proj > 0 && m->embed_proj != m->hidden)
		p += 2 * e * h; /* OPT's project_in and project_out */
	return p;
}

static int64_t head_params(const zb_model *m)
{
	int64_t e = m->embed_proj > 0 ? m->embed_proj : m->hidden;
	return norm_params(m) + (m->tied_embeddings ? 0 : (int64_t)m->vocab * e);
}

int64_t zb_model_unit_params(const zb_model *m, int unit)
{
	if (unit == 0)
		return embed_params(m);
	if (unit <= m->layers)
		return block_params(m);
	if (unit == m->layers + 1)
		return head_params(m);
	return 0;
}

int64_t zb_model_unit_offset(const zb_model *m, int unit)
{
	if (unit <= 0)
		return 0;
	int64_t off = embed_params(m);
	if (unit <= m->layers)
		return off + (int64_t)(unit - 1) * block_params(m);
	return off + (int64_t)m->layers * block_params(m);
}

int64_t zb_model_params(const zb_model *m)
{
	return zb_model_unit_offset(m, m->layers + 1) + head_params(m);
}

int64_t zb_model_matmul_params(const zb_model *m)
{
	int64_t h = m->hidden, kv = zb_model_kv_dim(m), f = m->ffn;
	int64_t e = m->embed_proj > 0 ? m->embed_proj : m->hidden;
	int64_t per_block = 2 * h * h + 2 * h * kv + (m->gated_mlp ? 3 : 2) * h * f;
	/* The LM head multiply always happens, tied or not. */
	return (int64_t)m->layers * per_block + (int64_t)m->vocab * e;
}

double zb_model_flops_per_token(const zb_model *m, int seq)
{
	/* 2 FLOPs per multiply-add, x3 for forward + two backward GEMMs. Attention:
	 * scores and context are 2 * seq * hidden MACs each per token and layer. */
	double dense = 6.0 * (double)zb_model_matmul_params(m);
	double attn = 12.0 * m->layers * (double)m->hidden * seq;
	return dense + attn;
}
