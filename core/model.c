/* model.c - parameter counts and FLOPs of the transformer shapes in config.h. */
#include "core/model.h"

/* Parameters of one norm of width w: LayerNorm has a gain and a bias, RMSNorm only a gain. */
static int64_t norm_of(const zb_model *m, int64_t w) { return w * (m->bias ? 2 : 1); }
static int64_t norm_params(const zb_model *m) { return norm_of(m, m->hidden); }

static int has_bias(const zb_model *m, int which) { return m->bias || (m->linear_bias & which); }

/* One MLP (a dense block's, or one expert) of inner width w. */
static int64_t mlp_params(const zb_model *m, int64_t w)
{
	int64_t h = m->hidden;
	int64_t p = (m->gated_mlp ? 3 : 2) * h * w;
	if (has_bias(m, ZB_BIAS_MLP))
		p += (m->gated_mlp ? 2 * w : w) + h;
	return p;
}

/* A mixture of experts: every expert, the router (hidden -> experts, no bias) and
 * the shared expert with its gate (hidden -> 1, no bias). */
static int64_t moe_params(const zb_model *m)
{
	int64_t h = m->hidden;
	int64_t p = (int64_t)m->experts * mlp_params(m, m->ffn) + h * m->experts;
	if (m->shared_ffn > 0)
		p += mlp_params(m, m->shared_ffn) + h;
	return p;
}

static int64_t block_params(const zb_model *m)
{
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m);
	int64_t attn = h * q /* q */ + 2 * h * kv /* k, v */ + q * h /* out */;
	if (has_bias(m, ZB_BIAS_QKV))
		attn += q + 2 * kv;
	if (has_bias(m, ZB_BIAS_OUT))
		attn += h;
	int64_t mlp = m->experts > 0 ? moe_params(m) : mlp_params(m, m->ffn);
	int64_t norms = ((m->norms & ZB_NORM_SANDWICH) ? 4 : 2) * norm_params(m);
	if (m->norms & ZB_NORM_QK)
		norms += 2 * norm_of(m, zb_model_head_dim(m));
	return attn + mlp + norms;
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
	int64_t norm = (m->norms & ZB_NORM_NO_FINAL) ? 0 : norm_params(m);
	return norm + (m->tied_embeddings ? 0 : (int64_t)m->vocab * e);
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

int64_t zb_model_mlp_width(const zb_model *m)
{
	if (m->experts == 0)
		return m->ffn;
	return (int64_t)m->experts_active * m->ffn + m->shared_ffn;
}

int64_t zb_model_fc1_out(const zb_model *m)
{
	int64_t up = (m->gated_mlp ? 2 : 1) * zb_model_mlp_width(m);
	if (m->experts > 0)
		up += m->experts + (m->shared_ffn > 0 ? 1 : 0);
	return up;
}

int64_t zb_model_matmul_params(const zb_model *m)
{
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m);
	int64_t e = m->embed_proj > 0 ? m->embed_proj : m->hidden;
	/* fc1_out x h + h x mlp_width: (gated ? 3 : 2) x h x f for a dense MLP */
	int64_t mlp = (zb_model_fc1_out(m) + zb_model_mlp_width(m)) * h;
	int64_t per_block = 2 * h * q + 2 * h * kv + mlp;
	/* The LM head multiply always happens, tied or not. */
	return (int64_t)m->layers * per_block + (int64_t)m->vocab * e;
}

double zb_model_flops_per_token(const zb_model *m, int seq)
{
	/* 2 FLOPs per multiply-add, x3 for forward + two backward GEMMs. Attention:
	 * scores and context are 2 * seq * q width MACs each per token and layer. */
	double dense = 6.0 * (double)zb_model_matmul_params(m);
	double attn = 12.0 * m->layers * (double)zb_model_q_dim(m) * seq;
	return dense + attn;
}
