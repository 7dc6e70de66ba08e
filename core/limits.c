/* limits.c - input ranges and the schedule's size before it is built; see limits.h. */
#include "core/limits.h"

#include <math.h>
#include <stddef.h>

#include "common/checked.h"
#include "core/model.h"

/* ---- hardware: per-field ranges ------------------------------------------ */

/* A hardware number and the range that keeps every derived time finite: the
 * slowest rate divides the largest byte or FLOP count (~1e20) to < 1e17 s, the
 * largest latency times the largest task count stays < 1e8 s. A zero lower bound
 * is inclusive (a latency may be 0); otherwise the bounds are inclusive too. */
typedef struct hw_range {
	const char *key;
	size_t off;
	double lo, hi;
} hw_range;

#define HWR(part, field, lo, hi) { #part "." #field, offsetof(zb_hw, part.field), lo, hi }

static const hw_range hw_ranges[] = {
	HWR(link, h2d_Bps, 1e3, 1e18),
	HWR(link, d2h_Bps, 1e3, 1e18),
	HWR(link, copy_latency_s, 0, 10),
	HWR(link, pageable_h2d_Bps, 1e3, 1e18),
	HWR(link, pageable_d2h_Bps, 1e3, 1e18),
	HWR(gpu, mem_bytes, 1e6, 1e16),
	HWR(gpu, bf16_flops, 1e6, 1e21),
	HWR(gpu, fp16_flops, 1e6, 1e21),
	HWR(gpu, hbm_Bps, 1e3, 1e18),
	HWR(gpu, gemm_half_dim, 0, 1e6),
	HWR(gpu, kernel_latency_s, 0, 10),
	HWR(gpu, l2_bytes, 0, 1e12),
	HWR(cpu, adam_params_per_core, 1, 1e16),
	HWR(cpu, dram_Bps, 1e3, 1e18),
	HWR(cpu, mem_bytes, 1e6, 1e18),
	HWR(cpu, task_latency_s, 0, 10),
};

zb_status zb_limits_hw(const zb_hw *hw, zb_error *err)
{
	for (size_t i = 0; i < sizeof hw_ranges / sizeof hw_ranges[0]; i++) {
		const hw_range *r = &hw_ranges[i];
		double v = *(const double *)((const char *)hw + r->off);
		if (!(v >= r->lo && v <= r->hi))
			return zb_fail(err, ZB_E_INPUT, "%s %g out of range (must be in [%g, %g])", r->key, v, r->lo,
				       r->hi);
	}
	/* adam_Bps: 0 means "the DRAM budget", else a rate like the others */
	double a = hw->cpu.adam_Bps;
	if (!(a == 0 || (a >= 1e3 && a <= 1e18)))
		return zb_fail(err, ZB_E_INPUT, "cpu.adam_Bps %g out of range (must be 0 or in [1000, 1e+18])", a);
	if (hw->cpu.cores > ZB_MAX_CORES)
		return zb_fail(err, ZB_E_INPUT, "cpu.cores %d exceeds the limit %d", hw->cpu.cores, ZB_MAX_CORES);
	if (hw->gpus_per_link > ZB_MAX_GPUS_PER_LINK)
		return zb_fail(err, ZB_E_INPUT, "gpus_per_link %d exceeds the limit %d", hw->gpus_per_link,
			       ZB_MAX_GPUS_PER_LINK);
	if (hw->gpus_per_cpu > ZB_MAX_GPUS_PER_LINK)
		return zb_fail(err, ZB_E_INPUT, "gpus_per_cpu %d exceeds the limit %d", hw->gpus_per_cpu,
			       ZB_MAX_GPUS_PER_LINK);
	return ZB_OK;
}

/* ---- model and policy ------------------------------------------------------ */

#define MAX_CHECK(val, lim, name)                                                                  \
	do {                                                                                       \
		if ((long long)(val) > (long long)(lim))                                           \
			return zb_fail(err, ZB_E_INPUT, name " %lld exceeds the limit %lld", (long long)(val), \
				       (long long)(lim));                                          \
	} while (0)

zb_status zb_limits_model(const zb_model *m, zb_error *err)
{
	MAX_CHECK(m->layers, ZB_MAX_LAYERS, "layers");
	MAX_CHECK(m->hidden, ZB_MAX_HIDDEN, "hidden");
	MAX_CHECK(m->heads, ZB_MAX_HEADS, "heads");
	MAX_CHECK(m->kv_heads, ZB_MAX_HEADS, "kv_heads");
	MAX_CHECK(m->ffn, ZB_MAX_FFN, "ffn");
	MAX_CHECK(m->vocab, ZB_MAX_VOCAB, "vocab");
	MAX_CHECK(m->max_seq, ZB_MAX_POSITIONS, "max_seq");
	MAX_CHECK(m->embed_proj, ZB_MAX_HIDDEN, "embed_proj");
	MAX_CHECK(m->head_dim, ZB_MAX_HIDDEN, "head_dim");
	MAX_CHECK(m->experts, ZB_MAX_EXPERTS, "experts");
	MAX_CHECK(m->shared_ffn, ZB_MAX_FFN, "shared_ffn");
	double experts = (double)m->layers * m->experts * 3.0 * m->hidden * m->ffn;
	if (experts > ZB_MAX_EXPERT_PARAMS)
		return zb_fail(err, ZB_E_INPUT, "experts %d x layers %d x 3 x hidden %d x ffn %d = %.3g parameters "
			       "exceeds the limit %.0e", m->experts, m->layers, m->hidden, m->ffn, experts,
			       ZB_MAX_EXPERT_PARAMS);
	return ZB_OK;
}

zb_status zb_limits_policy(const zb_policy *p, const zb_model *m, zb_error *err)
{
	MAX_CHECK(p->micro_batch, ZB_MAX_MICRO_BATCH, "micro-batch");
	MAX_CHECK(p->seq, ZB_MAX_SEQ, "seq");
	MAX_CHECK(p->gas, ZB_MAX_GAS, "gas");
	MAX_CHECK(p->prefetch_layers, ZB_MAX_PREFETCH, "prefetch-layers");
	MAX_CHECK(p->bucket_params, ZB_MAX_BUCKET, "bucket");
	MAX_CHECK(p->cpu_threads, ZB_MAX_CORES, "cpu-threads");
	MAX_CHECK(p->gpus, ZB_MAX_GPUS_PER_NODE, "gpus");
	MAX_CHECK(p->nodes, ZB_MAX_NODES, "nodes");
	int64_t tokens = (int64_t)p->micro_batch * p->seq; /* both <= 2^24: no overflow */
	if (tokens > INT32_MAX)
		return zb_fail(err, ZB_E_INPUT, "micro-batch x seq = %lld tokens exceeds the limit %d",
			       (long long)tokens, INT32_MAX);
	/* attention GEMMs are batched over micro-batch x heads (an int32 count) */
	if (m && (int64_t)p->micro_batch * m->heads > INT32_MAX)
		return zb_fail(err, ZB_E_INPUT, "micro-batch x heads = %lld exceeds the limit %d",
			       (long long)p->micro_batch * m->heads, INT32_MAX);
	return ZB_OK;
}

/* ---- the schedule's size --------------------------------------------------- */

int64_t zb_limits_buckets(const zb_config *c)
{
	int64_t P = zb_model_params(&c->model), size = c->policy.bucket_params;
	double r = c->policy.kind == ZB_POLICY_NONE ? 0.0 : c->policy.ratio;
	int64_t cpu = (int64_t)llround(r * (double)P), gpu = P - cpu;
	return (cpu + size - 1) / size + (gpu + size - 1) / size;
}

/* Tasks per unit and micro-batch, at most (graph.c): forward 12 compute + fetch +
 * activation copy; backward 18 compute + 12 recompute + fetch + activation copy +
 * gradient accumulation = 47. Per bucket and step: gradient down, Adam, parameters
 * up (3), plus one delayed upload per bucket after the last step (dpu). */
#define TASKS_PER_UNIT 47
#define TASKS_PER_BUCKET 3

/* Several ranks (ranks.c): per bucket and step a reduce-scatter, and below ZeRO-3
 * an all-gather of the updated shard (dpu: also of the previous step's); ZeRO-3
 * gathers each unit's parameters before its forward and its backward instead. */
static int64_t zbench_tasks(const zb_config *c)
{
	const zb_policy *p = &c->policy;
	int ranks = p->gpus * p->nodes > 1, zero3 = ranks && (p->zero_stage == 3 || p->offload_param);
	int gathers = !ranks || zero3 ? 0 : p->kind == ZB_POLICY_DPU ? 2 : 1;
	int64_t units = zb_model_units(&c->model), nb = zb_limits_buckets(c), per_step, total;
	if (zb_mul3_64(units, TASKS_PER_UNIT + 2 * zero3, c->policy.gas, &per_step) ||
	    zb_add64(per_step, nb * (TASKS_PER_BUCKET + ranks + gathers), &per_step) ||
	    zb_mul64(per_step, c->steps, &total) ||
	    zb_add64(total, nb, &total))
		return INT64_MAX;
	return total;
}

/* DeepSpeed's schedule (schedules/deepspeed.c), at most, from the same shape.
 * The stage as zb_ds_stage chooses it: the file's, else 3 with parameter offload
 * or a Twin-Flow ratio, else 2. Optimizer groups: one below stage 3; ZeRO-3
 * sub-groups close at >= sub_group_size parameters over whole tensors, so there are
 * at most P / size + 1 of them and at most one per tensor (<= 18 a unit). */
static int ds_stage(const zb_policy *p)
{
	if (p->zero_stage > 0)
		return p->zero_stage;
	return p->offload_param || (p->kind != ZB_POLICY_NONE && p->ratio < 1.0) ? 3 : 2;
}

static int64_t ds_groups(const zb_config *c)
{
	if (ds_stage(&c->policy) < 3)
		return 1;
	int64_t sg = c->policy.sub_group_size > 0 ? c->policy.sub_group_size : 1000000000;
	int64_t by_size = zb_model_params(&c->model) / sg + 1, by_tensor = 18 * (int64_t)zb_model_units(&c->model);
	return by_size < by_tensor ? by_size : by_tensor;
}

/* Parameter tensors of one block, at most (schedules/ds_trace.c builds them): its
 * norms (two, Gemma-2's sandwich two more, Qwen3's q/k norms two more), the four
 * attention projections, the MLP's three (a mixture of experts: the router, two fused
 * expert tensors, a shared expert's three and its gate), each with its bias where the
 * model has biases. */
static int64_t block_tensors(const zb_model *m)
{
	int norms = 2 + 2 * ((m->norms & ZB_NORM_SANDWICH) != 0) + 2 * ((m->norms & ZB_NORM_QK) != 0);
	int linears = 4 + (m->experts > 0 ? 3 + 3 * (m->shared_ffn > 0) + 1 : 3);
	int biased = m->bias || m->linear_bias;
	return (int64_t)(norms + linears) * (1 + biased);
}

/* Per unit and micro-batch: each pass's hooks, fetch and all-gather (stage 3,
 * parameter offload, several ranks); a block's forward 10 tasks and backward 14
 * (eager attention, the profile's flash off: 2 and 4 more; rotary models: one
 * more each), its recompute with checkpointing, the activation copies of CPU
 * checkpointing, and the gradients' 4 (accumulation up, cast, copy down, hooks; 6
 * on several ranks: a bucket's reduction and casts). Per micro-batch the step's
 * Python; per group and step at most 7 (Python, unscale, Adam, cast and the copies
 * up); per step 2. */
static int64_t ds_tasks(const zb_config *c)
{
	const zb_policy *p = &c->policy;
	int ranks = p->gpus * p->nodes > 1;
	int pre = (ds_stage(p) == 3) + (p->offload_param != 0) + ranks;
	int eager = c->hw.ds.set && !c->hw.ds.flash, rotary = c->model.max_seq == 0;
	int fwd = 10 + 2 * eager + rotary, bwd = 14 + 4 * eager + rotary;
	int cpu_ckpt = p->ckpt == ZB_CKPT_CPU, recompute = p->ckpt != ZB_CKPT_NONE ? fwd : 0;
	int64_t per_unit = (pre + fwd + cpu_ckpt) + (pre + cpu_ckpt + recompute + bwd + (ranks ? 6 : 4));
	/* ZeRO-3 on one rank goes module by module (schedules/ds_trace.h): per unit a hook task
	 * between every two segments, with offload_param a gather, a wait and a copy per
	 * parameter, per gradient its hook, its bucket copy and its partition's up to 7 tasks,
	 * so the bound grows with the block's tensors (fuzz_ds_tasks checks it: built
	 * schedules reach ~0.82 of it, biased blocks and one-tensor buckets included) */
	if (ds_stage(p) == 3 && !ranks) {
		int64_t t = block_tensors(&c->model);
		per_unit = 80 + (11 + 6 * (p->offload_param != 0) + 3 * (p->ckpt != ZB_CKPT_NONE)) * t + 2 * cpu_ckpt;
	}
	/* ZeRO-1/2 offload accumulating on one rank: each micro-step's copies down and up, the
	 * add, the hooks (schedules/deepspeed.c stage2_accumulate) */
	else if (!ranks && p->kind != ZB_POLICY_NONE && p->gas > 1)
		per_unit += 6;
	int64_t per_micro, per_step, total;
	if (zb_mul64(per_unit, zb_model_units(&c->model), &per_micro) || zb_add64(per_micro, 1, &per_micro) ||
	    zb_mul64(per_micro, p->gas, &per_step) || zb_add64(per_step, 7 * ds_groups(c) + 2, &per_step) ||
	    zb_mul64(per_step, c->steps, &total))
		return INT64_MAX;
	return total;
}

int64_t zb_limits_tasks(const zb_config *c)
{
	return c->framework == ZB_FW_DEEPSPEED ? ds_tasks(c) : zbench_tasks(c);
}

zb_status zb_limits_schedule(const zb_config *c, zb_error *err)
{
	if (c->steps > ZB_MAX_STEPS)
		return zb_fail(err, ZB_E_INPUT, "steps %d exceeds the limit %d", c->steps, ZB_MAX_STEPS);
	int64_t n = zb_limits_tasks(c);
	if (n <= ZB_MAX_TASKS)
		return ZB_OK;
	int ds = c->framework == ZB_FW_DEEPSPEED;
	int64_t groups = ds ? ds_groups(c) : zb_limits_buckets(c);
	return zb_fail(err, ZB_E_INPUT,
		       "schedule too large: ~%lld tasks (%d steps x %d micro-batches x %d units, %lld %s%s) exceeds "
		       "the limit %lld; lower --steps, --gas or --layers%s",
		       (long long)n, c->steps, c->policy.gas, zb_model_units(&c->model), (long long)groups,
		       ds ? "optimizer group" : "bucket", groups == 1 ? "" : "s", ZB_MAX_TASKS,
		       !ds ? ", or raise --bucket" : groups > 1 ? ", or raise --sub-group" : "");
}
