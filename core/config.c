/*
 * config.c - defaults, validation and names of the three inputs in config.h.
 *
 * Validation is where a user's typo becomes one readable line: every check names
 * the field first and the value second ("micro-batch 0 must be positive"). The
 * checks are deliberately written as !(x > 0) rather than x <= 0 so that NaN, which
 * a JSON file cannot hold but a computed calibration can, is rejected too.
 */
#include "core/config.h"

#include "common/text.h"
#include "core/limits.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void zb_policy_defaults(zb_policy *p)
{
	memset(p, 0, sizeof *p);
	p->kind = ZB_POLICY_OVERLAP;
	p->ratio = 1.0;
	p->offload_param = 0;
	p->prefetch_layers = 2;
	p->ckpt = ZB_CKPT_NONE;
	p->gas = 1;
	p->micro_batch = 8;
	p->seq = 1024;
	p->dtype = ZB_BF16;
	p->pageable = 0;
	/* DeepSpeed's default reduce_bucket_size (5e8) is for multi-GPU reductions; its
	 * ZeRO-Offload examples use 2e8..5e7. 25M parameters is 50 MB of bf16 gradients:
	 * ~1 ms on gen5, far above the ~4 us per-copy latency, and still ~30 buckets for
	 * gpt2-large so the copies overlap backward. */
	p->bucket_params = 25000000;
	p->cpu_threads = 0;
	p->gpus = 1;
	p->nodes = 1;
}

/* ---- checks ---------------------------------------------------------------- */

static int positive(double x) { return x > 0 && isfinite(x); }
static int nonnegative(double x) { return x >= 0 && isfinite(x); }
static int fraction(double x) { return x > 0 && x <= 1; } /* (0, 1] */

#define CHECK_POS(cond_ok, what, fmt, val)                                                   \
	do {                                                                                 \
		if (!(cond_ok))                                                              \
			return zb_fail(err, ZB_E_INPUT, what " " fmt " must be positive", val); \
	} while (0)

#define CHECK_NONNEG(cond_ok, what, fmt, val)                                               \
	do {                                                                                \
		if (!(cond_ok))                                                             \
			return zb_fail(err, ZB_E_INPUT, what " " fmt " must not be negative", \
				       val);                                                \
	} while (0)

#define CHECK_FRAC(x, what)                                                                   \
	do {                                                                                  \
		if (!fraction(x))                                                             \
			return zb_fail(err, ZB_E_INPUT, what " %g out of range (must be in (0, 1])", \
				       x);                                                    \
	} while (0)

#define CHECK_FLAG(x, what)                                                                \
	do {                                                                               \
		if ((x) != 0 && (x) != 1)                                                  \
			return zb_fail(err, ZB_E_INPUT, what " %d must be 0 or 1", (x)); \
	} while (0)

static zb_status link_validate(const zb_link *l, zb_error *err)
{
	CHECK_POS(positive(l->h2d_Bps), "link.h2d_Bps", "%g", l->h2d_Bps);
	CHECK_POS(positive(l->d2h_Bps), "link.d2h_Bps", "%g", l->d2h_Bps);
	CHECK_FRAC(l->duplex_h2d, "link.duplex_h2d");
	CHECK_FRAC(l->duplex_d2h, "link.duplex_d2h");
	CHECK_NONNEG(nonnegative(l->copy_latency_s), "link.copy_latency_s", "%g", l->copy_latency_s);
	CHECK_POS(positive(l->pageable_h2d_Bps), "link.pageable_h2d_Bps", "%g", l->pageable_h2d_Bps);
	CHECK_POS(positive(l->pageable_d2h_Bps), "link.pageable_d2h_Bps", "%g", l->pageable_d2h_Bps);
	return ZB_OK;
}

static zb_status gpu_validate(const zb_gpu *g, zb_error *err)
{
	CHECK_POS(positive(g->mem_bytes), "gpu.mem_bytes", "%g", g->mem_bytes);
	CHECK_POS(positive(g->bf16_flops), "gpu.bf16_flops", "%g", g->bf16_flops);
	CHECK_POS(positive(g->fp16_flops), "gpu.fp16_flops", "%g", g->fp16_flops);
	CHECK_POS(positive(g->hbm_Bps), "gpu.hbm_Bps", "%g", g->hbm_Bps);
	CHECK_NONNEG(nonnegative(g->gemm_half_dim), "gpu.gemm_half_dim", "%g", g->gemm_half_dim);
	CHECK_NONNEG(nonnegative(g->kernel_latency_s), "gpu.kernel_latency_s", "%g",
		     g->kernel_latency_s);
	return ZB_OK;
}

static zb_status cpu_validate(const zb_cpu *c, zb_error *err)
{
	CHECK_POS(c->cores > 0, "cpu.cores", "%d", c->cores);
	CHECK_POS(positive(c->adam_params_per_core), "cpu.adam_params_per_core", "%g",
		  c->adam_params_per_core);
	CHECK_POS(positive(c->dram_Bps), "cpu.dram_Bps", "%g", c->dram_Bps);
	CHECK_POS(c->adam_Bps >= 0 && !isnan(c->adam_Bps), "cpu.adam_Bps", "%g", c->adam_Bps);
	CHECK_POS(positive(c->mem_bytes), "cpu.mem_bytes", "%g", c->mem_bytes);
	CHECK_NONNEG(nonnegative(c->task_latency_s), "cpu.task_latency_s", "%g", c->task_latency_s);
	if (c->sockets < 0 || c->sockets > c->cores)
		return zb_fail(err, ZB_E_INPUT, "cpu.sockets %d must be 0..cores (%d)", c->sockets,
			       c->cores);
	CHECK_NONNEG(nonnegative(c->xsocket_Bps), "cpu.xsocket_Bps", "%g", c->xsocket_Bps);
	return ZB_OK;
}

zb_status zb_hw_validate(const zb_hw *hw, zb_error *err)
{
	zb_status st;
	/* names reach tables, CSV cells, plot labels: one line each */
	if ((st = zb_text_check_name("hardware name", hw->name, err)) ||
	    (st = zb_text_check_name("link name", hw->link.name, err)) ||
	    (st = zb_text_check_name("gpu name", hw->gpu.name, err)) ||
	    (st = zb_text_check_name("cpu name", hw->cpu.name, err)) ||
	    (st = zb_text_check_name("fabric name", hw->fabric.name, err)))
		return st;
	if ((st = link_validate(&hw->link, err)) != ZB_OK)
		return st;
	if ((st = gpu_validate(&hw->gpu, err)) != ZB_OK)
		return st;
	if ((st = cpu_validate(&hw->cpu, err)) != ZB_OK)
		return st;
	CHECK_POS(hw->gpus_per_link > 0, "gpus_per_link", "%d", hw->gpus_per_link);
	CHECK_POS(hw->gpus_per_cpu > 0, "gpus_per_cpu", "%d", hw->gpus_per_cpu);
	const zb_fabric *f = &hw->fabric; /* 0: none (one GPU needs none) */
	CHECK_NONNEG(nonnegative(f->intra_bus_Bps), "fabric.intra_bus_Bps", "%g", f->intra_bus_Bps);
	CHECK_NONNEG(nonnegative(f->intra_latency_s), "fabric.intra_latency_s", "%g", f->intra_latency_s);
	CHECK_NONNEG(nonnegative(f->inter_bus_Bps), "fabric.inter_bus_Bps", "%g", f->inter_bus_Bps);
	CHECK_NONNEG(nonnegative(f->inter_latency_s), "fabric.inter_latency_s", "%g", f->inter_latency_s);
	CHECK_NONNEG(nonnegative(hw->price_per_hour), "price_per_hour", "%g", hw->price_per_hour);
	return zb_limits_hw(hw, err);
}

zb_status zb_model_validate(const zb_model *m, zb_error *err)
{
	zb_status st = zb_text_check_name("model name", m->name, err);
	if (st)
		return st;
	CHECK_POS(m->layers > 0, "layers", "%d", m->layers);
	CHECK_POS(m->hidden > 0, "hidden", "%d", m->hidden);
	CHECK_POS(m->heads > 0, "heads", "%d", m->heads);
	CHECK_POS(m->kv_heads > 0, "kv_heads", "%d", m->kv_heads);
	CHECK_POS(m->ffn > 0, "ffn", "%d", m->ffn);
	CHECK_POS(m->vocab > 0, "vocab", "%d", m->vocab);
	CHECK_NONNEG(m->max_seq >= 0, "max_seq", "%d", m->max_seq);
	CHECK_NONNEG(m->embed_proj >= 0, "embed_proj", "%d", m->embed_proj);
	CHECK_FLAG(m->gated_mlp, "gated_mlp");
	CHECK_FLAG(m->bias, "bias");
	CHECK_FLAG(m->tied_embeddings, "tied_embeddings");
	CHECK_FLAG(m->dropout, "dropout");
	if (m->modules < 0 || m->modules >= ZB_MODULES_COUNT)
		return zb_fail(err, ZB_E_INPUT, "modules %d unknown", m->modules);
	CHECK_NONNEG(m->head_dim >= 0, "head_dim", "%d", m->head_dim);
	CHECK_NONNEG(m->experts >= 0, "experts", "%d", m->experts);
	CHECK_NONNEG(m->shared_ffn >= 0, "shared_ffn", "%d", m->shared_ffn);
	if (m->linear_bias < 0 || m->linear_bias > (ZB_BIAS_QKV | ZB_BIAS_OUT | ZB_BIAS_MLP))
		return zb_fail(err, ZB_E_INPUT, "linear_bias %d out of range (bits: 1 qkv, 2 out, 4 mlp)",
			       m->linear_bias);
	if (m->norms < 0 || m->norms > ZB_NORM_ALL)
		return zb_fail(err, ZB_E_INPUT, "norms %d out of range (bits: 1 sandwich, 2 qk, 4 no final)",
			       m->norms);
	if (m->loss < 0 || m->loss >= ZB_LOSS_COUNT)
		return zb_fail(err, ZB_E_INPUT, "loss %d unknown", m->loss);
	if (m->experts > 0 ? m->experts_active < 1 || m->experts_active > m->experts : m->experts_active != 0)
		return zb_fail(err, ZB_E_INPUT, "experts_active %d must be in [1, experts %d]%s", m->experts_active,
			       m->experts, m->experts > 0 ? "" : " (0 without experts)");
	if (m->shared_ffn > 0 && m->experts == 0)
		return zb_fail(err, ZB_E_INPUT, "shared_ffn %d needs experts (a shared expert of a mixture)",
			       m->shared_ffn);
	if (m->head_dim == 0 && m->hidden % m->heads != 0)
		return zb_fail(err, ZB_E_INPUT, "heads %d do not divide hidden %d", m->heads,
			       m->hidden);
	if (m->heads % m->kv_heads != 0)
		return zb_fail(err, ZB_E_INPUT, "kv_heads %d do not divide heads %d", m->kv_heads,
			       m->heads);
	return zb_limits_model(m, err);
}

zb_status zb_policy_validate(const zb_policy *p, const zb_model *m, zb_error *err)
{
	if ((int)p->kind < 0 || p->kind >= ZB_POLICY_COUNT)
		return zb_fail(err, ZB_E_INPUT, "policy kind %d unknown", (int)p->kind);
	if ((int)p->ckpt < 0 || p->ckpt >= ZB_CKPT_COUNT)
		return zb_fail(err, ZB_E_INPUT, "checkpointing mode %d unknown", (int)p->ckpt);
	if ((int)p->dtype < 0 || p->dtype >= ZB_DTYPE_COUNT)
		return zb_fail(err, ZB_E_INPUT, "dtype %d unknown", (int)p->dtype);
	/* Checked even for ZB_POLICY_NONE, which ignores it: a bad value is still a typo. */
	if (!(p->ratio >= 0 && p->ratio <= 1))
		return zb_fail(err, ZB_E_INPUT, "ratio %g out of range (must be in [0, 1])",
			       p->ratio);
	CHECK_FLAG(p->offload_param, "offload-param");
	CHECK_FLAG(p->pageable, "pageable");
	CHECK_POS(p->prefetch_layers > 0, "prefetch-layers", "%d", p->prefetch_layers);
	CHECK_POS(p->gas > 0, "gas", "%d", p->gas);
	CHECK_POS(p->micro_batch > 0, "micro-batch", "%d", p->micro_batch);
	CHECK_POS(p->seq > 0, "seq", "%d", p->seq);
	CHECK_POS(p->bucket_params > 0, "bucket", "%lld", (long long)p->bucket_params);
	CHECK_NONNEG(p->cpu_threads >= 0, "cpu-threads", "%d", p->cpu_threads);
	CHECK_POS(p->gpus > 0, "gpus", "%d", p->gpus);
	CHECK_POS(p->nodes > 0, "nodes", "%d", p->nodes);
	if (p->zero_stage < 0 || p->zero_stage > 3) /* 0: the framework's default */
		return zb_fail(err, ZB_E_INPUT, "zero-stage %d out of range (ZeRO stages 1, 2, 3)", p->zero_stage);
	/* Learned position tables have max_seq rows; rotary models (max_seq 0) have no limit. */
	if (m && m->max_seq > 0 && p->seq > m->max_seq)
		return zb_fail(err, ZB_E_INPUT,
			       "seq %d exceeds max_seq %d of %s (learned positions)", p->seq,
			       m->max_seq, m->name[0] ? m->name : "the model");
	return zb_limits_policy(p, m, err);
}

zb_status zb_config_validate(const zb_config *c, zb_error *err)
{
	zb_status st;
	if ((st = zb_hw_validate(&c->hw, err)) != ZB_OK)
		return st;
	if ((st = zb_model_validate(&c->model, err)) != ZB_OK)
		return st;
	if ((st = zb_policy_validate(&c->policy, &c->model, err)) != ZB_OK)
		return st;
	CHECK_POS(c->steps > 0, "steps", "%d", c->steps);
	if (c->steps > ZB_MAX_STEPS)
		return zb_fail(err, ZB_E_INPUT, "steps %d exceeds the limit %d", c->steps, ZB_MAX_STEPS);
	if (c->policy.cpu_threads > c->hw.cpu.cores)
		return zb_fail(err, ZB_E_INPUT, "cpu-threads %d exceed the %d cores of %s",
			       c->policy.cpu_threads, c->hw.cpu.cores,
			       c->hw.cpu.name[0] ? c->hw.cpu.name : "the cpu");
	/* several ranks must have something to talk over (sim/collective.h) */
	if (c->policy.gpus > 1 && !(c->hw.fabric.intra_bus_Bps > 0))
		return zb_fail(err, ZB_E_INPUT,
			       "--gpus %d: machine '%s' has no fabric between its GPUs (machine presets with one: "
			       "dgx-2, dgx-a100, dgx-h100, h200-x2; or \"fabric\" in a --hw file)",
			       c->policy.gpus, c->hw.name);
	if (c->policy.nodes > 1 && !(c->hw.fabric.inter_bus_Bps > 0))
		return zb_fail(err, ZB_E_INPUT,
			       "--nodes %d: machine '%s' has no network between nodes (fabric.inter_bus_Bps; "
			       "machine presets with one: dgx-a100, dgx-h100)",
			       c->policy.nodes, c->hw.name);
	return ZB_OK;
}

/* ---- names ----------------------------------------------------------------- */

static const char *const policy_names[ZB_POLICY_COUNT] = {
	[ZB_POLICY_NONE] = "none",
	[ZB_POLICY_OFFLOAD] = "offload",
	[ZB_POLICY_OVERLAP] = "overlap",
	[ZB_POLICY_DPU] = "dpu",
};
static const char *const ckpt_names[ZB_CKPT_COUNT] = {
	[ZB_CKPT_NONE] = "none",
	[ZB_CKPT_GPU] = "gpu",
	[ZB_CKPT_CPU] = "cpu",
};
static const char *const dtype_names[ZB_DTYPE_COUNT] = {
	[ZB_BF16] = "bf16",
	[ZB_FP16] = "fp16",
};
static const char *const framework_names[ZB_FW_COUNT] = {
	[ZB_FW_ZBENCH] = "zbench",
	[ZB_FW_DEEPSPEED] = "deepspeed",
};

const char *zb_policy_name(zb_policy_kind k)
{
	return ((int)k >= 0 && k < ZB_POLICY_COUNT) ? policy_names[k] : "unknown";
}

const char *zb_ckpt_name(zb_ckpt c)
{
	return ((int)c >= 0 && c < ZB_CKPT_COUNT) ? ckpt_names[c] : "unknown";
}

const char *zb_dtype_name(zb_dtype d)
{
	return ((int)d >= 0 && d < ZB_DTYPE_COUNT) ? dtype_names[d] : "unknown";
}

const char *zb_framework_name(int fw)
{
	return fw >= 0 && fw < ZB_FW_COUNT ? framework_names[fw] : "?";
}

/* Find s in names[0..n); on a miss, the error lists every known name. */
static zb_status parse_name(const char *s, const char *const *names, int n, const char *what,
			    int *out, zb_error *err)
{
	for (int i = 0; i < n; i++) {
		if (s && strcmp(s, names[i]) == 0) {
			*out = i;
			return ZB_OK;
		}
	}
	char known[256] = "";
	size_t len = 0;
	for (int i = 0; i < n && len < sizeof known; i++)
		len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
					names[i]);
	return zb_fail(err, ZB_E_INPUT, "unknown %s '%s' (known: %s)", what, s ? s : "", known);
}

zb_status zb_policy_parse(const char *s, zb_policy_kind *out, zb_error *err)
{
	int i;
	zb_status st = parse_name(s, policy_names, ZB_POLICY_COUNT, "policy", &i, err);
	if (st == ZB_OK)
		*out = (zb_policy_kind)i;
	return st;
}

zb_status zb_ckpt_parse(const char *s, zb_ckpt *out, zb_error *err)
{
	int i;
	zb_status st = parse_name(s, ckpt_names, ZB_CKPT_COUNT, "checkpointing mode", &i, err);
	if (st == ZB_OK)
		*out = (zb_ckpt)i;
	return st;
}

zb_status zb_dtype_parse(const char *s, zb_dtype *out, zb_error *err)
{
	int i;
	zb_status st = parse_name(s, dtype_names, ZB_DTYPE_COUNT, "dtype", &i, err);
	if (st == ZB_OK)
		*out = (zb_dtype)i;
	return st;
}

zb_status zb_framework_parse(const char *s, int *out, zb_error *err)
{
	return parse_name(s, framework_names, ZB_FW_COUNT, "framework", out, err);
}

/* ---- derived figures ------------------------------------------------------- */

/* An explicit --cpu-threads wins. Otherwise each GPU's optimizer gets its share of
 * the cores: on a DGX-2 (48 cores, gpus_per_cpu 16) that is 3 threads per GPU, the
 * way DeepSpeed's --bind_cores_to_rank splits them. With gpus_per_cpu 1 (the H200
 * machine, GH200) it is every core. */
int zb_config_cpu_threads(const zb_config *c)
{
	if (c->policy.cpu_threads > 0)
		return c->policy.cpu_threads;
	/* the ranks of a node share it too (sim/numa.h): the larger count divides */
	int gpc = c->policy.gpus > c->hw.gpus_per_cpu ? c->policy.gpus : c->hw.gpus_per_cpu;
	int share = gpc > 1 ? c->hw.cpu.cores / gpc : c->hw.cpu.cores;
	return share > 0 ? share : 1;
}

double zb_config_gpu_flops(const zb_config *c)
{
	return c->policy.dtype == ZB_FP16 ? c->hw.gpu.fp16_flops : c->hw.gpu.bf16_flops;
}

void zb_config_profile(const zb_config *c, char *buf, size_t n)
{
	if (c->framework == ZB_FW_DEEPSPEED)
		snprintf(buf, n, c->hw.ds.set ? "deepspeed:%s" : "deepspeed-defaults", c->hw.name);
	else
		snprintf(buf, n, c->hw.gpu.exec.set ? "executor:%s" : "first-principles", c->hw.name);
}
