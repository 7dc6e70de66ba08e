/* ds_eltwise.c - bytes of PyTorch's elementwise kernels in a block; see ds_eltwise.h. */
#include "schedules/ds_eltwise.h"

#include "core/model.h"

/* RMSNorm in fp32 (the Llama family: every gated-MLP model Hugging Face ships) */
static int fp32_rmsnorm(const zb_model *m) { return m->gated_mlp; }
static int rotary(const zb_model *m) { return m->max_seq == 0; }

double zb_ds_norm_bytes(const zb_model *m, int backward)
{
	double h = m->hidden;
	if (!fp32_rmsnorm(m)) /* layer_norm: read x, write y; backward: dy, x -> dx, then dw/db */
		return backward ? 10 * h : 4 * h;
	/* forward: float (2+4), pow (4+4), mean (4), x*rsqrt (4+4), to bf16 (4+2), *w (2+2) */
	if (!backward)
		return 36 * h;
	/* backward: *w (2+2) and dw (2+2+4), to (2+4), *rsqrt (4+4) and its reduction
	 * (4+4+4), mean (4), pow (4+4+4), sum of the two paths (4+4+4), float (4+2) */
	return 76 * h;
}

double zb_ds_rotary_bytes(const zb_model *m, int backward)
{
	(void)backward; /* neg, cat, x*cos, (.)*sin, add: 10 passes of the tensor each way */
	if (!rotary(m))
		return 0;
	return 10 * 2.0 * ((double)zb_model_q_dim(m) + zb_model_kv_dim(m));
}

double zb_ds_act_bytes(const zb_model *m, int backward)
{
	double f = (double)zb_model_mlp_width(m); /* with experts: the routed ones */
	if (m->gated_mlp) /* silu (2+2), * up (2+2+2); backward: both products (6+6), silu (6) */
		return backward ? 18 * f : 10 * f;
	return backward ? 6 * f : 4 * f; /* gelu: (2+2); backward dy, x -> dx */
}

double zb_ds_layout_bytes(const zb_model *m, int backward)
{
	double h = m->hidden, qkv = (double)zb_model_q_dim(m) + 2.0 * zb_model_kv_dim(m), f = (double)zb_model_mlp_width(m);
	int fused = !(m->kv_heads < m->heads || m->gated_mlp); /* one QKV linear, split */
	if (!backward)
		return 4 * h; /* attention output: transpose(1, 2).reshape copy */
	double b = 4 * h + 4 * qkv + (fused ? 4 * qkv : 0);
	if (m->bias) /* grad of each bias: a reduction over the tokens of the output gradient */
		b += 2 * (qkv + h + (m->gated_mlp ? 2 : 1) * f + h);
	return b;
}

double zb_ds_extra_saved_bytes(const zb_model *m)
{
	double h = m->hidden, kv = (double)zb_model_kv_dim(m), e = 0;
	if (fp32_rmsnorm(m))
		e += 2 * 2 * h; /* two norms: fp32 input (4) instead of bf16 (2) */
	if (rotary(m))
		e += 4 * (h + kv); /* q, k before rotation and the cat halves, bf16 */
	if (m->gated_mlp)
		e += 2.0 * (double)zb_model_mlp_width(m); /* silu(gate) and up both saved by the product */
	return e;
}
