/* attention.c - eager and flash attention tasks, the emulated link; see attention.h. */
#include "core/attention.h"

#include <math.h>
#include <string.h>

#include "core/model.h"

const char *zb_attention_name(zb_attention a)
{
	static const char *n[] = { "eager", "flash" };
	return a < ZB_ATTN_COUNT ? n[a] : "?";
}

zb_status zb_attention_parse(const char *s, zb_attention *out, zb_error *err)
{
	for (int a = 0; a < ZB_ATTN_COUNT; a++)
		if (s && strcmp(s, zb_attention_name((zb_attention)a)) == 0) {
			*out = (zb_attention)a;
			return ZB_OK;
		}
	return zb_fail(err, ZB_E_INPUT, "--attention '%s': expected flash or eager", s ? s : "");
}

int zb_attention_flash_ok(const zb_model *m)
{
	int d = zb_model_head_dim(m);
	return m->heads > 0 && m->kv_heads > 0 && m->heads % m->kv_heads == 0 && m->hidden == d * m->heads &&
	       (d == 32 || d == 64 || d == 80 || d == 96 || d == 128);
}

double zb_flash_pass_flops(const zb_config *c, int pass)
{
	double s = c->policy.seq, pairs = s * (s + 1) / 2; /* causal */
	double bhd = (double)c->policy.micro_batch * c->model.heads * zb_model_head_dim(&c->model);
	return (pass == ZB_PASS_BWD_DATA ? 10.0 : 4.0) * bhd * pairs;
}

zb_task zb_flash_task(const zb_config *c, int pass, int step, int micro, int unit)
{
	zb_task t;
	memset(&t, 0, sizeof t);
	const zb_model *m = &c->model;
	int64_t T = (int64_t)c->policy.micro_batch * c->policy.seq;
	int64_t h = m->hidden, kv = zb_model_kv_dim(m);
	double e = 2.0; /* bf16 or fp16 */
	t.kind = ZB_TASK_GEMM;
	t.resource = ZB_RES_GPU;
	t.op = ZB_OP_ATTN;
	t.pass = (uint8_t)pass;
	t.step = step;
	t.micro = micro;
	t.unit = unit;
	t.bucket = -1;
	t.param_offset = -1;
	t.m = c->policy.seq;
	t.n = c->policy.seq;
	t.k = zb_model_head_dim(m);
	t.batch = c->policy.micro_batch * m->heads;
	t.flops = zb_flash_pass_flops(c, pass);
	double qkv = (double)T * (h + 2 * kv) * e, o = (double)T * h * e, lse = (double)T * m->heads * 4;
	if (pass == ZB_PASS_BWD_DATA) /* reads Q K V O dO lse, writes dQ dK dV; dQ in fp32 twice */
		t.bytes = 2 * qkv + 2 * o + lse + 2.0 * T * h * 4;
	else
		t.bytes = qkv + o + lse;
	return t;
}

double zb_flash_efficiency(const zb_gpu *gpu)
{
	return gpu->flash_efficiency > 0 && gpu->flash_efficiency <= 1 ? gpu->flash_efficiency : ZB_FLASH_EFFICIENCY;
}

zb_status zb_link_rate_apply(zb_config *c, double Bps, zb_error *err)
{
	if (!(Bps > 0) || !isfinite(Bps))
		return zb_fail(err, ZB_E_INPUT, "--link-rate %g: expected a rate in GB/s > 0", Bps / 1e9);
	if (c->policy.pageable)
		return zb_fail(err, ZB_E_INPUT, "--link-rate %g: paces pinned copies only, not with --pageable",
			       Bps / 1e9);
	zb_link *l = &c->hw.link;
	c->policy.link_rate_Bps = Bps;
	/* both directions at once: the native link's duplex rate, unless the cap is lower */
	double h2d_duplex = l->h2d_Bps * l->duplex_h2d, d2h_duplex = l->d2h_Bps * l->duplex_d2h;
	if (Bps < l->h2d_Bps)
		l->h2d_Bps = Bps;
	if (Bps < l->d2h_Bps)
		l->d2h_Bps = Bps;
	l->duplex_h2d = h2d_duplex >= l->h2d_Bps ? 1.0 : h2d_duplex / l->h2d_Bps;
	l->duplex_d2h = d2h_duplex >= l->d2h_Bps ? 1.0 : d2h_duplex / l->d2h_Bps;
	return ZB_OK;
}
