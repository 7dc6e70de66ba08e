/*
 * schedule_deepspeed.c - DeepSpeed's ZeRO step as a task graph; see
 * schedule_deepspeed.h for what each configuration does and where that comes from.
 *
 * Resources keep the meaning they have in zbench's schedule, with one difference
 * that is the point of this file: ZB_RES_CPU is DeepSpeed's one Python thread. Its
 * hooks, its Python work, CPU Adam and the host casts run one after the other in id
 * order, and a GPU task that the thread has not launched yet (the next module's
 * kernels while a hook or a blocking copy runs) depends on the thread's last task.
 * GPU Adam for Twin-Flow sub-groups runs on the compute stream (DeepSpeed launches
 * it on the default stream), not on ZB_RES_GPU_OPT.
 *
 * Buckets are the optimizer's groups: ZeRO-3 sub-groups (top of the model first,
 * as in graph.c: bucket 0 is the highest), one group for stages 1/2.
 */
#include "schedules/deepspeed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputs/dsconfig.h"
#include "core/dsprofile.h"
#include "schedules/ds_eltwise.h"
#include "schedules/ds_trace.h"
#include "core/model.h"

#define NONE UINT32_MAX
#define GIB (1024.0 * 1024.0 * 1024.0)

int zb_ds_stage(const zb_config *c)
{
	const zb_policy *p = &c->policy;
	if (p->zero_stage > 0)
		return p->zero_stage;
	return p->offload_param || (p->kind != ZB_POLICY_NONE && p->ratio < 1.0) ? 3 : 2;
}

int64_t zb_ds_sub_group(const zb_config *c)
{
	return c->policy.sub_group_size > 0 ? c->policy.sub_group_size : 1000000000;
}

/* A coordinator setting: 0 is DeepSpeed's default, < 0 an explicit 0 (core/config.h). */
static int64_t or_default(int64_t v, int64_t def) { return v > 0 ? v : v < 0 ? 0 : def; }

void zb_ds_trace_opts_of(const zb_config *c, zb_ds_trace_opts *o)
{
	const zb_policy *p = &c->policy;
	o->prefetch_bucket = or_default(p->prefetch_bucket, 50000000);
	o->persist_threshold = or_default(p->persist_threshold, 100000);
	o->max_live = or_default(p->max_live, 1000000000);
	o->max_reuse = or_default(p->max_reuse, 1000000000);
	o->reduce_bucket = p->bucket_params > 0 ? p->bucket_params : 500000000;
	o->recompute = p->ckpt != ZB_CKPT_NONE;
}

/* Modules whose hooks fire and parameter tensors, per unit, of the module tree the
 * model runs as (ds_trace.h): what the per-module and per-tensor costs count. */
static void unit_counts(const zb_model *m, int *mods, int *tens)
{
	zb_ds_trace_opts o = { 100000, 50000000, 1000000000, 1000000000, 500000000, 0 };
	zb_ds_trace t;
	zb_error e;
	int U = zb_model_units(m);
	memset(mods, 0, sizeof *mods * (size_t)U);
	memset(tens, 0, sizeof *tens * (size_t)U);
	if (zb_ds_trace_build(m, &o, &t, &e))
		return;
	for (int i = 0; i < t.nmod; i++)
		mods[t.mod[i].unit]++;
	for (int k = 0; k < t.nt; k++)
		tens[t.t[k].unit]++;
	zb_ds_trace_free(&t);
}

int zb_ds_unit_modules(const zb_model *m, int unit)
{
	int U = zb_model_units(m), *c = zb_xcalloc((size_t)(2 * U), sizeof *c);
	unit_counts(m, c, c + U);
	int n = unit >= 0 && unit < U ? c[unit] : 0;
	free(c);
	return n;
}

int zb_ds_unit_tensors(const zb_model *m, int unit)
{
	int U = zb_model_units(m), *c = zb_xcalloc((size_t)(2 * U), sizeof *c);
	unit_counts(m, c, c + U);
	int n = unit >= 0 && unit < U ? c[U + unit] : 0;
	free(c);
	return n;
}

double zb_ds_host_task_s(const zb_task *t, const zb_config *c)
{
	zb_ds_profile scratch;
	const zb_ds_profile *f = zb_ds_profile_of(&c->hw.ds, &scratch);
	switch (t->op) {
	case ZB_OP_HOOK: return (double)t->params * f->hook_s;
	case ZB_OP_MOD_HOOK: return (double)t->params * 0.5 * f->hook_s; /* a pre or a post hook */
	case ZB_OP_FETCH: return (double)t->params * f->fetch_s;
	case ZB_OP_FLUSH: return (double)t->params * f->flush_s;
	case ZB_OP_ACC_HOOK: return (double)t->params * f->acc_hook_s;
	case ZB_OP_GRAD_HOOK: return (double)t->params * (zb_ds_stage(c) == 3 ? f->z3_grad_s : f->grad_hook_s);
	case ZB_OP_RELEASE: return (double)t->params * f->release_s;
	case ZB_OP_PARTITION: return (double)t->params * f->z3_part_s;
	case ZB_OP_GRAD_OFFLOAD: return (double)t->params * f->z3_offload_s;
	case ZB_OP_BUCKET_HOOK: return (double)t->params * f->z2_hook_s;
	case ZB_OP_BUCKET_FLUSH: return (double)t->params * f->z2_flush_s;
	case ZB_OP_MODULE_PY: /* transformers' modules only (dsprofile.h); ZeRO-3's wrappers ride on each */
		return (double)t->params * ((t->pass == ZB_PASS_BWD_DATA ? f->py_bwd_s : f->py_fwd_s) +
					    (zb_ds_stage(c) == 3 ? f->wrap_s : 0));
	case ZB_OP_OVERFLOW: return t->bytes / f->overflow_Bps;
	case ZB_OP_PYTHON: return t->bucket >= 0 ? f->subgroup_s : f->step_s; /* a sub-group's or the step's */
	case ZB_OP_CAST: return t->bytes / f->cast_Bps;
	case ZB_OP_FRESH_PAGES: return t->bytes / f->fresh_Bps;
	case ZB_OP_UNSCALE: return t->bytes / f->unscale_Bps;
	default: return 0;
	}
}

/* ---- emitting ----------------------------------------------------------- */

typedef struct dsb {
	zb_graph *g;
	const zb_config *c;
	const zb_model *m;
	const zb_policy *p;
	zb_ds_profile fs;
	const zb_ds_profile *f;
	int units, stage, offload, oparam, overlap;
	int64_t tokens;
	int64_t split;               /* parameters below this run their optimizer on the GPU */
	uint32_t deps[ZB_RES_COUNT + 4];
	int ndeps;
	uint32_t last[ZB_RES_COUNT]; /* last task emitted per resource */
	uint32_t step_end_gpu, step_end_h2d; /* tasks the next step's forward waits for */
	uint32_t *fwd_done, *bwd_done, *fetch;
	uint32_t copy_hold;          /* a copy the compute stream waits for, NONE if none */
	/* several ranks (see "World size" below) */
	int ranks;
	int64_t part_hi;             /* stages 1/2: each rank's partition size (rank r: [r, r+1) x part_hi) */
	int64_t ipg_lo, ipg_n;       /* the gradient bucket being filled: [ipg_lo, +ipg_n) */
	int ipg_unit;                /* its lowest unit so far */
	/* ZeRO-3 on one rank, module by module (ds_trace.h) */
	int z3;
	zb_ds_trace tr;
	uint32_t gather_last;        /* the last copy on the gather stream */
	uint32_t gather_hold;        /* the gather copy the compute stream waits for (wait_stream) */
	uint32_t *flush_done;        /* per bucket of the backward: its last task */
	uint32_t rs_last;            /* the last task on the reduction stream (its order) */
	int *umods, *utens;          /* per unit: modules whose hooks fire, parameter tensors */
	int *uflush;                 /* ZeRO-1/2, one rank: per unit, the IPG buckets its gradients fill */
} dsb;

static void dep(dsb *b, uint32_t id) { zb_graph_add_dep(b->g, b->deps, &b->ndeps, id); }

static uint32_t emit(dsb *b, zb_task t)
{
	uint32_t id = zb_graph_append(b->g, t, b->deps, &b->ndeps);
	b->last[t.resource] = id;
	return id;
}

typedef struct ctx {
	int step, micro, pass;
} ctx;

/* A GPU task waits for the host thread that launches it and, when a copy holds
 * the compute stream, for that copy. */
static void gpu_deps(dsb *b)
{
	dep(b, b->last[ZB_RES_CPU]);
	dep(b, b->copy_hold);
	dep(b, b->gather_hold);
}

static uint32_t gemm(dsb *b, ctx x, int op, int unit, int64_t m, int64_t n, int64_t k, int64_t batch,
		     double flops)
{
	zb_task t = zb_task_blank(ZB_TASK_GEMM, ZB_RES_GPU, op, x.pass, x.step, x.micro, unit);
	t.m = (int32_t)m;
	t.n = (int32_t)n;
	t.k = (int32_t)k;
	t.batch = (int32_t)batch;
	t.flops = flops > 0 ? flops : 2.0 * (double)m * n * k * batch;
	t.bytes = 2.0 * batch * ((double)m * k + (double)k * n + (double)m * n);
	gpu_deps(b);
	return emit(b, t);
}

static uint32_t kernel(dsb *b, ctx x, int op, int unit, double bytes)
{
	zb_task t = zb_task_blank(ZB_TASK_KERNEL, ZB_RES_GPU, op, x.pass, x.step, x.micro, unit);
	t.bytes = bytes;
	gpu_deps(b);
	return emit(b, t);
}

/* A kernel of ZeRO-3's reduction stream. It is modelled on the compute stream's queue:
 * measured, the reduction's copies and kernels do not overlap the backward's
 * compute (the profiled ZeRO-3 offload backward is its kernel time plus its D2H time:
 * s3-off 555 ms against ~230 + 289, s3-tf50 457 against ~230 + 188,
 * data/deepspeed-h200-table.tsv), although stage3.py makes only the reduction
 * stream wait for the compute stream; which wait couples them is not known. */
static uint32_t rkernel(dsb *b, ctx x, int op, int unit, double bytes)
{
	return kernel(b, x, op, unit, bytes);
}

static uint32_t host(dsb *b, ctx x, int op, int unit, int64_t count, double bytes)
{
	zb_task t = zb_task_blank(ZB_TASK_HOST, ZB_RES_CPU, op, x.pass, x.step, x.micro, unit);
	t.params = count;
	t.bytes = bytes;
	return emit(b, t);
}

static uint32_t copy(dsb *b, ctx x, int res, int op, int unit, int64_t params, int64_t offset,
		     double bytes)
{
	zb_task t = zb_task_blank(ZB_TASK_COPY, res, op, x.pass, x.step, x.micro, unit);
	t.params = params;
	t.param_offset = offset;
	t.bytes = bytes;
	return emit(b, t);
}

static uint32_t collective(dsb *b, ctx x, int op, int unit, int bucket, int64_t offset, int64_t params)
{
	zb_task t = zb_task_blank(ZB_TASK_COLLECTIVE, ZB_RES_COMM, op, x.pass, x.step, x.micro, unit);
	t.bucket = bucket;
	t.param_offset = offset;
	t.params = params;
	t.bytes = 2.0 * (double)params;
	return emit(b, t);
}

static int64_t shard(const dsb *b, int64_t n) { return zb_shard_params(n, b->ranks); }

static void linear(dsb *b, ctx x, int op, int unit, int64_t out, int64_t in)
{
	int64_t T = b->tokens;
	if (x.pass == ZB_PASS_FWD || x.pass == ZB_PASS_RECOMPUTE) {
		gemm(b, x, op, unit, out, T, in, 1, 0);
		return;
	}
	ctx w = x;
	w.pass = ZB_PASS_BWD_WEIGHT;
	gemm(b, x, op, unit, in, T, out, 1, 0);
	gemm(b, w, op, unit, out, in, T, 1, 0);
}

static double act(const dsb *b, int64_t width) { return 2.0 * (double)b->tokens * width; }

/* Attention core of one block. SDPA flash with a causal mask computes half the
 * score tiles; its backward recomputes the scores (2.5 x the forward's work). */
static void attention(dsb *b, ctx x, int unit, int backward)
{
	const zb_model *m = b->m;
	int64_t s = b->p->seq, bh = (int64_t)b->p->micro_batch * m->heads, d = zb_model_head_dim(m);
	double full = 4.0 * (double)bh * s * s * d; /* QK^T and PV */
	if (b->f->flash) {
		gemm(b, x, ZB_OP_SCORES, unit, s, s, d, bh, (backward ? 2.5 : 1.0) * 0.5 * full);
		return;
	}
	double scores = 2.0 * (double)bh * s * s;
	if (!backward) {
		gemm(b, x, ZB_OP_SCORES, unit, s, s, d, bh, 0);
		kernel(b, x, ZB_OP_SOFTMAX, unit, 3 * scores); /* mask, softmax, saved probs */
		gemm(b, x, ZB_OP_CONTEXT, unit, d, s, s, bh, 0);
	} else {
		gemm(b, x, ZB_OP_CONTEXT, unit, s, s, d, bh, 0);
		gemm(b, x, ZB_OP_CONTEXT, unit, d, s, s, bh, 0);
		kernel(b, x, ZB_OP_SOFTMAX, unit, 3 * scores);
		gemm(b, x, ZB_OP_SCORES, unit, d, s, s, bh, 0);
		gemm(b, x, ZB_OP_SCORES, unit, d, s, s, bh, 0);
	}
}

/* The GPU work of one segment (ds_trace.h) of unit `unit`: a block's norms, linears,
 * attention and residuals, the embedding, the final norm, the head and the loss. */
static void segment(dsb *b, ctx x, int unit, int seg)
{
	const zb_model *m = b->m;
	int backward = x.pass == ZB_PASS_BWD_DATA;
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m), f = zb_model_mlp_width(m);
	int64_t V = m->vocab, T = b->tokens, e = m->embed_proj > 0 ? m->embed_proj : h;
	int64_t up = zb_model_fc1_out(m); /* with experts: the routed ones and the router (model.h) */
	double k = backward ? 1.5 : 1.0; /* elementwise backward reads one more tensor */
	double Td = (double)T;
	/* eager PyTorch's elementwise kernels by model family (ds_eltwise.h); the
	 * rotary and layout copies ride on the norm and residual tasks around them */
	switch (seg) {
	case ZB_DSS_EMBED: kernel(b, x, ZB_OP_EMBED, unit, 2 * act(b, h) + (backward ? 2.0 * V * e : 0)); break;
	case ZB_DSS_NORM1: kernel(b, x, ZB_OP_NORM1, unit, Td * zb_ds_norm_bytes(m, backward)); break;
	case ZB_DSS_QKV: linear(b, x, ZB_OP_QKV, unit, q + 2 * kv, h); break;
	case ZB_DSS_ROTARY:
		if (zb_ds_rotary_bytes(m, backward) > 0)
			kernel(b, x, ZB_OP_ACT, unit, Td * zb_ds_rotary_bytes(m, backward));
		break;
	case ZB_DSS_ATTN: attention(b, x, unit, backward); break;
	case ZB_DSS_PROJ: linear(b, x, ZB_OP_PROJ, unit, h, q); break;
	case ZB_DSS_RESID1:
		kernel(b, x, ZB_OP_RESID, unit, k * 3 * act(b, h) + Td * zb_ds_layout_bytes(m, backward));
		break;
	case ZB_DSS_NORM2: kernel(b, x, ZB_OP_NORM2, unit, Td * zb_ds_norm_bytes(m, backward)); break;
	case ZB_DSS_FC1: linear(b, x, ZB_OP_FC1, unit, up, h); break;
	case ZB_DSS_ACT: kernel(b, x, ZB_OP_ACT, unit, Td * zb_ds_act_bytes(m, backward)); break;
	case ZB_DSS_FC2: linear(b, x, ZB_OP_FC2, unit, h, f); break;
	case ZB_DSS_RESID2: kernel(b, x, ZB_OP_RESID, unit, k * 3 * act(b, h)); break;
	case ZB_DSS_NORMF: kernel(b, x, ZB_OP_NORMF, unit, 2 * act(b, h)); break;
	case ZB_DSS_HEAD: linear(b, x, ZB_OP_LMHEAD, unit, V, e); break;
	case ZB_DSS_DROPOUT: /* native_dropout: x in, y and the mask out; backward: dy, mask in, dx out */
		kernel(b, x, ZB_OP_RESID, unit, 5.0 * Td * h);
		break;
	case ZB_DSS_LOSS: /* logits upcast to fp32, log-softmax, loss and its gradient */
		kernel(b, x, ZB_OP_LOSS, unit, Td * V * (backward ? 10 : 8));
		break;
	default: break;
	}
}

static void block(dsb *b, ctx x, int unit, int backward)
{
	static const int8_t order[] = { ZB_DSS_NORM1, ZB_DSS_QKV,   ZB_DSS_ROTARY, ZB_DSS_ATTN,
					ZB_DSS_PROJ,  ZB_DSS_RESID1, ZB_DSS_NORM2, ZB_DSS_FC1,
					ZB_DSS_ACT,   ZB_DSS_FC2,   ZB_DSS_RESID2 };
	(void)backward; /* x.pass says it */
	for (size_t i = 0; i < sizeof order; i++)
		segment(b, x, unit, order[i]);
}

/* Eager PyTorch's host time of the unit's module calls in this pass (ZeRO-3's come with
 * its module trace). The thread dispatches a unit's operations one after the other while
 * the GPU runs the first ones: its kernels wait for the thread's earlier work, the next
 * unit's for this. */
static void module_py(dsb *b, ctx x, int u)
{
	if (!b->z3 && b->umods[u] > 0 && b->m->modules != ZB_MODULES_OWN)
		host(b, x, ZB_OP_MODULE_PY, u, b->umods[u], 0);
}

static void unit_compute(dsb *b, ctx x, int u, int backward)
{
	int L = b->m->layers;
	if (u == 0) {
		segment(b, x, u, ZB_DSS_EMBED);
	} else if (u <= L) {
		if (backward && b->p->ckpt != ZB_CKPT_NONE) {
			ctx r = x;
			r.pass = ZB_PASS_RECOMPUTE;
			block(b, r, u, 0);
			module_py(b, r, u);
		}
		block(b, x, u, backward);
	} else {
		segment(b, x, u, ZB_DSS_NORMF);
		segment(b, x, u, ZB_DSS_HEAD);
		segment(b, x, u, ZB_DSS_LOSS);
	}
	module_py(b, x, u);
}

/* ---- per unit: hooks, fetches, gradients --------------------------------- */

static int64_t unit_lo(const dsb *b, int u) { return zb_model_unit_offset(b->m, u); }
static int64_t unit_n(const dsb *b, int u) { return zb_model_unit_params(b->m, u); }

/* ZeRO-3: the module hooks of unit u for this pass; with offload_param the fetch
 * they start. window: the unit whose compute must end before this fetch, NONE if
 * none: prefetch_layers units back, the current unit counted (DeepSpeed's
 * stage3_prefetch_bucket_size counts the elements fetched ahead of use including
 * the module about to run, so the default 5e7 is less than one block of a 2.5 B
 * model: the next block's weights come while the current one computes, at most). */
static void pre_unit(dsb *b, ctx x, int u, uint32_t window)
{
	b->fetch[u] = NONE;
	if (b->stage < 3)
		return;
	host(b, x, ZB_OP_HOOK, u, b->umods[u], 0);
	if (b->oparam) {
		int64_t n = shard(b, unit_n(b, u)); /* several ranks: this rank's partition */
		dep(b, b->last[ZB_RES_CPU]);
		dep(b, window);
		b->fetch[u] = copy(b, x, ZB_RES_H2D, ZB_OP_PARAM_FETCH, u, n, unit_lo(b, u), 2.0 * (double)n);
	}
	if (b->ranks > 1) { /* the partitions gathered (stage3 fetch_sub_module's all-gather) */
		dep(b, b->last[ZB_RES_CPU]);
		dep(b, window);
		dep(b, b->fetch[u]);
		dep(b, b->step_end_gpu);
		b->fetch[u] = collective(b, x, ZB_OP_ALL_GATHER, u, -1, unit_lo(b, u), unit_n(b, u));
	}
}

/* ---- World size ------------------------------------------------------
 * DeepSpeed 0.19 (runtime/zero/stage_1_and_2.py), stages 1/2 on R ranks: gradients
 * are copied into an IPG bucket of reduce_bucket_size elements as autograd produces
 * them (reduce_independent_p_g_buckets_and_remove_grads); a full bucket is reduced
 * by average_tensor, which with use_multi_rank_bucket_allreduce (the default, True)
 * all-reduces the whole bucket in the 16-bit communication dtype
 * (allreduce_and_scatter -> allreduce_bucket) on the reduction stream (overlap_comm)
 * or the compute stream; then each rank copies the part of the bucket in its own
 * partition of the flat group (copy_grads_in_partition: fp32, down to the host with
 * cpu_offload). step() runs the optimizer on the rank's partition and
 * all_gather_dp_groups gathers the updated 16-bit parameters. Partitions are
 * contiguous slices of the flat group, rank 0 the bottom: its gradients are ready
 * last, so its copies overlap the least. The graph is rank 0's work (the ranks wait
 * for each other at the collectives); its optimizer tasks carry the shard.
 * Stage 3 (stage3.py) partitions every parameter across ranks: each unit is
 * all-gathered before use (its partition fetched from the host first with
 * offload_param), gradients are reduce-scattered per bucket, and every rank owns
 * 1/R of each unit, sub-group and copy. */
/* Rank 0's part of [lo, lo + n) (stages 1/2). */
static int64_t part_of(const dsb *b, int64_t lo, int64_t n)
{
	int64_t hi = lo + n < b->part_hi ? lo + n : b->part_hi;
	return hi > lo ? hi - lo : 0;
}

/* The largest part of [lo, lo + n) any rank owns (stages 1/2): the ranks meet at
 * every bucket's all-reduce, so the copies after one bucket's reduction delay the
 * next one by the slowest rank's. On 2 H200s (s2-off, 2.5B, overlap_comm off) rank 1
 * owns the top half, whose gradients come first, and copies them while rank 0 only
 * computes; rank 0 waits for it at the next all-reduce, then rank 1 for rank 0 in
 * the bottom half: rank 0's backward took 580 ms against 549 on one GPU, where its
 * own copies alone would have halved the copy time. */
static int64_t part_slowest(const dsb *b, int64_t lo, int64_t n)
{
	int64_t most = 0, S = b->part_hi;
	for (int r = 0; r < b->ranks && S > 0; r++) {
		int64_t a = lo > r * S ? lo : r * S, e = lo + n < (r + 1) * S ? lo + n : (r + 1) * S;
		if (e - a > most)
			most = e - a;
	}
	return most;
}


/* Stages 1/2 with offload at gas > 1, after the first micro-step: the host
 * accumulator of a partition (accumulated_grads_in_cpu, the model's dtype) comes up
 * before the add (async_accumulate_grad_in_cpu_via_gpu). NONE when nothing moves. */
static uint32_t accumulate_up(dsb *b, ctx o, int u, int64_t n, int64_t offset)
{
	if (o.micro == 0 || n == 0)
		return NONE;
	dep(b, b->last[ZB_RES_GPU]);
	return copy(b, o, ZB_RES_H2D, ZB_OP_GRAD_COPY, u, n, offset, 2.0 * n);
}
/* Reduce the filled bucket and copy the slowest rank's part of it (stages 1/2), or
 * reduce-scatter it and send this rank's shard of its CPU part down (stage 3). */
static void ipg_flush(dsb *b, ctx o, int last_micro)
{
	if (b->ipg_n == 0)
		return;
	int64_t lo = b->ipg_lo, n = b->ipg_n;
	int u = b->ipg_unit;
	b->ipg_n = 0;
	dep(b, b->last[ZB_RES_GPU]);
	int op = b->stage < 3 ? ZB_OP_ALL_REDUCE : ZB_OP_REDUCE_SCATTER;
	uint32_t red = collective(b, o, op, u, -1, lo, n);
	if (!b->overlap) /* no overlap_comm: on the compute stream, which waits for it */
		b->copy_hold = red;
	int64_t mine = b->stage < 3 ? part_of(b, lo, n) : 0, slow = b->stage < 3 ? part_slowest(b, lo, n) : 0;
	if (b->stage == 3) { /* the CPU sub-groups' part of the bucket, this rank's shard */
		int64_t cpu_lo = lo > b->split ? lo : b->split;
		mine = slow = b->offload && lo + n > cpu_lo ? shard(b, lo + n - cpu_lo) : 0;
		lo = cpu_lo;
	}
	if (slow == 0)
		return;
	dep(b, red);
	if (b->offload && b->stage < 3 && o.micro > 0) {
		/* each rank accumulates its partition through the host as one rank does
		 * (copy_grads_in_partition -> async_accumulate_grad_in_cpu_via_gpu at gas > 1):
		 * the accumulator comes up before the add, the slowest rank's part setting the
		 * pace of the next reduction (accumulate_up) */
		uint32_t up = accumulate_up(b, o, u, slow, lo);
		dep(b, up);
	}
	uint32_t cast = kernel(b, o, ZB_OP_GRAD_COPY, u, 6.0 * slow); /* the partition to fp32 */
	if (!b->offload)
		return;
	uint32_t down = NONE;
	if (mine > 0) {
		dep(b, cast);
		down = copy(b, o, ZB_RES_D2H, last_micro ? ZB_OP_GRAD_DOWN : ZB_OP_GRAD_COPY, u, mine, lo, 4.0 * mine);
	}
	if (slow > mine) { /* a peer's larger copy, which the next all-reduce waits for */
		dep(b, cast);
		down = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_COPY, u, slow - mine, lo, 4.0 * (slow - mine));
	}
	if (!b->overlap)
		b->copy_hold = down;
}

/* Unit u's gradients go into the IPG bucket (after its backward), which is reduced
 * when the next unit would overflow it, and at the end of the backward (u == 0). */
static void grads_of_unit_ranks(dsb *b, ctx x, int u, int last_micro)
{
	int64_t n = unit_n(b, u), lo = unit_lo(b, u);
	ctx o = x;
	o.pass = ZB_PASS_BWD_WEIGHT;
	b->copy_hold = NONE;
	if (b->ipg_n > 0 && b->ipg_n + n > b->p->bucket_params)
		ipg_flush(b, o, last_micro);
	uint32_t into = kernel(b, o, ZB_OP_GRAD_COPY, u, 4.0 * n + (x.micro > 0 ? 12.0 * n : 0)); /* into the bucket */
	if (b->stage < 3) {
		/* the hooks run when autograd reaches the unit, as with one rank: their checks
		 * wait for its kernels (before, nothing ordered them after the backward, and
		 * the simulated hooks ran during the forward) */
		dep(b, into);
		host(b, o, ZB_OP_GRAD_HOOK, u, b->utens[u], 0);
	}
	b->ipg_lo = lo; /* units arrive top down: the bucket grows downwards */
	b->ipg_n += n;
	b->ipg_unit = u;
	if (u == 0)
		ipg_flush(b, o, last_micro);
}

/* ZeRO-1/2 on one rank, every micro-step: each gradient's hook adds it to the IPG
 * bucket (reduce_independent_p_g_buckets_and_remove_grads), and a bucket that would
 * overflow reduce_bucket_size is reduced first (reduce_ipg_grads, average_tensor): a
 * count from the backward's tensor order (ds_trace.h's buckets), host work on the thread
 * that launches the next unit's backward. */
static void bucket_hooks(dsb *b, ctx x, int u)
{
	ctx o = x;
	o.pass = ZB_PASS_BWD_WEIGHT;
	host(b, o, ZB_OP_BUCKET_HOOK, u, b->utens[u], 0);
	if (b->uflush[u] > 0)
		host(b, o, ZB_OP_BUCKET_FLUSH, u, b->uflush[u], 0);
}

/* ZeRO-1/2 offload with gas > 1 (stage_1_and_2.py copy_grads_in_partition,
 * async_accumulate_grad_in_cpu_via_gpu): at every micro-step each tensor's gradient
 * goes down into a pinned host buffer of the model's dtype, after the first one
 * brought back up and added on the GPU first; the boundary then does what gas 1 does
 * (norm, overflow check, fp32 copy down) on the accumulated gradient. */
static void stage2_accumulate(dsb *b, ctx o, int u, int64_t n, int64_t lo, int last_micro)
{
	uint32_t gpu_done = b->last[ZB_RES_GPU];
	kernel(b, o, ZB_OP_GRAD_COPY, u, 4.0 * n); /* into the IPG bucket */
	/* each tensor's accumulate first waits for the copies the previous one recorded
	 * (_wait_for_offload_copies: an event synchronize, cpu_offload's gradient safety),
	 * then issues its own */
	dep(b, b->last[ZB_RES_D2H]);
	uint32_t issued = host(b, o, ZB_OP_ACC_HOOK, u, b->utens[u], 0);
	if (o.micro > 0) {
		dep(b, b->last[ZB_RES_GPU]);
		dep(b, issued);
		uint32_t up = copy(b, o, ZB_RES_H2D, ZB_OP_GRAD_COPY, u, n, lo, 2.0 * n);
		if (!b->overlap)
			b->copy_hold = up;
		kernel(b, o, ZB_OP_GRAD_ACC, u, 6.0 * n);
	}
	dep(b, b->last[ZB_RES_GPU]);
	dep(b, issued);
	uint32_t down = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_COPY, u, n, lo, 2.0 * n);
	b->copy_hold = b->overlap ? NONE : down;
	if (!last_micro)
		return;
	uint32_t cast = kernel(b, o, ZB_OP_GRAD_COPY, u, 6.0 * n); /* to fp32 */
	dep(b, cast);
	down = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_DOWN, u, n, lo, 4.0 * n);
	dep(b, gpu_done);
	if (!b->overlap)
		b->copy_hold = down;
	dep(b, down); /* the per-tensor overflow check's synchronization, as at gas 1 */
	host(b, o, ZB_OP_GRAD_HOOK, u, b->utens[u], 0);
}

static void grads_of_unit(dsb *b, ctx x, int u, int last_micro)
{
	if (b->ranks > 1) {
		grads_of_unit_ranks(b, x, u, last_micro);
		return;
	}
	int64_t n = unit_n(b, u), lo = unit_lo(b, u);
	ctx o = x;
	o.pass = ZB_PASS_BWD_WEIGHT;
	b->copy_hold = NONE;
	if (!b->offload) {
		/* stage 1/2: bucket copy and fp32 partition (6 B/param moved);
		 * stage 3: partitioned bf16 gradient (2 B/param) */
		kernel(b, o, ZB_OP_GRAD_COPY, u, (b->stage < 3 ? 12.0 : 4.0) * n);
		return;
	}
	if (b->p->gas > 1) {
		stage2_accumulate(b, o, u, n, lo, last_micro);
		return;
	}
	uint32_t gpu_done = b->last[ZB_RES_GPU];
	/* bucket copy (2 B) and the bf16 -> fp32 cast (2 B in, 4 B out) */
	uint32_t cast = kernel(b, o, ZB_OP_GRAD_COPY, u, 10.0 * n);
	dep(b, cast);
	uint32_t down = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_DOWN, u, n, lo, 4.0 * n);
	/* the hooks run when autograd reaches the unit (their norm and overflow
	 * checks wait for its kernels) and hold the thread that launches the next
	 * unit; without overlap_comm the copy is on the compute stream and holds
	 * the next unit's kernels too */
	dep(b, gpu_done);
	if (!b->overlap)
		b->copy_hold = down;
	/* and the copies and hooks of the flush are one serial chain, with or
	 * without overlap_comm: each tensor's overflow check (`if
	 * _has_inf_or_nan(grad)`, a device scalar made a Python bool) synchronizes
	 * the stream that holds the previous tensor's copy, the reduction stream
	 * with overlap_comm (stage_1_and_2.py reduce_ipg_grads, 0.19.8); measured
	 * per tensor by ds_step.py --step-split (data/deepspeed-h200-split.jsonl): ~0.23 ms + the previous tensor's bytes at 55 GB/s.
	 * overlap_comm only frees the compute stream from the copies: measured on
	 * the 2.5 B shape it gained 99 ms in one session (data/deepspeed-h200-table.tsv) and lost
	 * 103 in the other (data/deepspeed-h200-table-sessions.jsonl). */
	dep(b, down);
	host(b, o, ZB_OP_GRAD_HOOK, u, b->utens[u], 0);
}

/* ---- ZeRO-3 on one rank, module by module (ds_trace.h) ---------------------------
 * Each item of the trace becomes host work on the Python thread (hook calls, the
 * per-parameter fetch path, gradient hooks, bucket reductions, each at its unit
 * cost), copies, or the segment's kernels. The host blocks where DeepSpeed
 * synchronizes: at a fetch whose parameters are in flight (the whole gather stream),
 * three bucket reductions back, and at the end of the backward. Every kernel after
 * a pre-hook waits for the gather stream as it stood (wait_stream), so a module's
 * kernels never start before its parameters have landed. */

/* The hook calls pending (calls[0]), the parameters their post-hooks released
 * (calls[1]) and the module calls they belong to (calls[2]: one a pre-hook), as host work. */
static void z3_hooks(dsb *b, ctx x, int u, int *calls)
{
	if (calls[2] > 0 && b->m->modules != ZB_MODULES_OWN)
		host(b, x, ZB_OP_MODULE_PY, u, calls[2], 0);
	if (calls[0] > 0)
		host(b, x, ZB_OP_MOD_HOOK, u, calls[0], 0);
	if (calls[1] > 0)
		host(b, x, ZB_OP_RELEASE, u, calls[1], 0);
	calls[0] = calls[1] = calls[2] = 0;
}

/* A host marker: the thread goes on once `id` is done (a synchronize). */
static void z3_wait(dsb *b, ctx x, int u, uint32_t id)
{
	if (id == NONE)
		return;
	dep(b, id);
	host(b, x, ZB_OP_HOOK, u, 0, 0);
}

/* n parameters gathered from host memory, one pinned copy each (offload_param). */
static void z3_gather(dsb *b, ctx x, int u, const int32_t *tensors, int n)
{
	if (n == 0)
		return;
	uint32_t issued = host(b, x, ZB_OP_FETCH, u, n, 0);
	for (int i = 0; i < n; i++) {
		const zb_ds_tensor *t = &b->tr.t[tensors[i]];
		dep(b, issued);
		b->gather_last = copy(b, x, ZB_RES_H2D, ZB_OP_PARAM_FETCH, u, t->numel, t->offset, 2.0 * (double)t->numel);
	}
}

/* The part of a tensor whose optimizer runs on the CPU. */
static int64_t z3_cpu_elems(const dsb *b, const zb_ds_tensor *t)
{
	int64_t lo = t->offset > b->split ? t->offset : b->split, hi = t->offset + t->numel;
	return b->offload && hi > lo ? hi - lo : 0;
}

/* One gradient of a reduced bucket (partition_grads). With offload_optimizer the
 * gradient partitions live in a pinned host buffer of the model's dtype: the first
 * micro-step copies each down and back up (the boundary's source), later ones bring
 * it up, add and send it down; the boundary takes its norm, casts it to fp32 and
 * copies it into the optimizer's fp32 gradient (down for the CPU sub-groups, on the
 * GPU for Twin-Flow's). Returns its last task. */
static uint32_t z3_partition(dsb *b, ctx o, int u, const zb_ds_tensor *t)
{
	int last = o.micro == b->p->gas - 1;
	double E = (double)t->numel;
	host(b, o, ZB_OP_PARTITION, u, 1, 0);
	dep(b, b->last[ZB_RES_CPU]);
	dep(b, b->last[ZB_RES_GPU]); /* the reduction stream waited for the compute stream */
	dep(b, b->rs_last);
	if (!b->offload) /* the partition buffer on the GPU: copy, or add */
		return b->rs_last = rkernel(b, o, ZB_OP_GRAD_COPY, u, (o.micro == 0 ? 4.0 : 6.0) * E);
	uint32_t id;
	if (o.micro == 0) {
		id = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_COPY, u, t->numel, t->offset, 2.0 * E);
		dep(b, id);
		copy(b, o, ZB_RES_H2D, ZB_OP_GRAD_COPY, u, t->numel, t->offset, 2.0 * E);
	} else {
		id = copy(b, o, ZB_RES_H2D, ZB_OP_GRAD_COPY, u, t->numel, t->offset, 2.0 * E);
		dep(b, id);
		uint32_t add = rkernel(b, o, ZB_OP_GRAD_ACC, u, 6.0 * E);
		dep(b, add);
		id = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_COPY, u, t->numel, t->offset, 2.0 * E);
	}
	if (!last)
		return b->rs_last = id;
	int64_t c = z3_cpu_elems(b, t);
	host(b, o, ZB_OP_GRAD_OFFLOAD, u, 1, 0); /* _offload_grad_partition_at_boundary */
	dep(b, b->last[ZB_RES_CPU]);
	dep(b, id);
	id = rkernel(b, o, ZB_OP_GRAD_NORM, u, 10.0 * E); /* _constant_buffered_norm2: .to(fp32).norm(2) */
	dep(b, id);
	id = rkernel(b, o, ZB_OP_GRAD_COPY, u, 6.0 * E + 8.0 * (E - (double)c)); /* to fp32 (GPU groups: copied) */
	if (c > 0) {
		dep(b, id);
		id = copy(b, o, ZB_RES_D2H, ZB_OP_GRAD_DOWN, u, c, t->offset + t->numel - c, 4.0 * (double)c);
	}
	return b->rs_last = id;
}

/* Bucket k reduced and partitioned (stage3.py __reduce_and_partition_ipg_grads) on
 * the reduction stream; the host first waits for the bucket three reductions back
 * (param_reduce_events: at most 2 in flight). */
static void z3_flush(dsb *b, ctx x, int k)
{
	const zb_ds_flush *fl = &b->tr.flush[k];
	ctx o = x;
	o.pass = ZB_PASS_BWD_WEIGHT;
	host(b, o, ZB_OP_FLUSH, fl->unit, 1, 0);
	if (k >= 3)
		z3_wait(b, o, fl->unit, b->flush_done[k - 3]);
	uint32_t id = NONE;
	for (int i = fl->first; i < fl->first + fl->n; i++)
		id = z3_partition(b, o, fl->unit, &b->tr.t[b->tr.flush_tensors[i]]);
	b->flush_done[k] = id;
	b->copy_hold = id; /* measured: the compute stream does not run beside them (rkernel) */
}

/* A parameter's gradient hook: a bucket reduced first if it overflows, the hook's
 * host work, the copy into the bucket buffer. */
static void z3_grad(dsb *b, ctx x, const zb_ds_item *it)
{
	if (it->flush >= 0)
		z3_flush(b, x, it->flush);
	ctx o = x;
	o.pass = ZB_PASS_BWD_WEIGHT;
	host(b, o, ZB_OP_GRAD_HOOK, it->unit, 1, 0);
	if (it->contiguous) { /* after the compute stream (wait_stream), before the next reduction */
		dep(b, b->last[ZB_RES_GPU]);
		dep(b, b->rs_last);
		b->rs_last = rkernel(b, o, ZB_OP_GRAD_COPY, it->unit, 4.0 * (double)b->tr.t[it->tensor].numel);
	}
}

static void z3_pre(dsb *b, ctx x, const zb_ds_item *it, int *calls)
{
	calls[0]++;
	calls[2]++;
	const int32_t *g = b->tr.gathered + it->gath;
	if (it->demand > 0 || it->wait || it->prefetch > 0)
		z3_hooks(b, x, it->unit, calls);
	if (!b->oparam) { /* the partitions on the GPU (one rank: whole): the gathers' Python, no copy */
		if (it->demand + it->prefetch > 0)
			host(b, x, ZB_OP_FETCH, it->unit, it->demand + it->prefetch, 0);
		return;
	}
	z3_gather(b, x, it->unit, g, it->demand);
	if (it->wait) /* the handle's wait synchronizes the gather stream */
		z3_wait(b, x, it->unit, b->gather_last);
	b->gather_hold = b->gather_last;
	z3_gather(b, x, it->unit, g + it->demand, it->prefetch);
}

/* Items [lo, hi) of the trace, in ctx x's step and micro-step. */
static void z3_items(dsb *b, ctx x, int lo, int hi)
{
	int calls[3] = { 0, 0, 0 };
	for (int i = lo; i < hi; i++) {
		const zb_ds_item *it = &b->tr.it[i];
		ctx y = x;
		y.pass = it->pass;
		switch (it->kind) {
		case ZB_DSI_PRE: z3_pre(b, y, it, calls); break;
		case ZB_DSI_POST:
			calls[0]++;
			calls[1] += it->released;
			break;
		case ZB_DSI_SEG:
			z3_hooks(b, y, it->unit, calls);
			segment(b, y, it->unit, it->seg);
			break;
		case ZB_DSI_GRAD:
			z3_hooks(b, y, it->unit, calls);
			z3_grad(b, y, it);
			break;
		}
	}
	ctx y = x;
	y.pass = hi > lo ? b->tr.it[hi - 1].pass : x.pass;
	z3_hooks(b, y, hi > lo ? b->tr.it[hi - 1].unit : 0, calls);
}

static void z3_micro(dsb *b, int step, int micro)
{
	int U = b->units, L = b->m->layers, cpu_ckpt = b->p->ckpt == ZB_CKPT_CPU;
	ctx f = { step, micro, ZB_PASS_FWD };
	if (micro == 0) {
		/* Python of the step; the previous step is over (the harness syncs) */
		dep(b, b->step_end_gpu);
		dep(b, b->step_end_h2d);
		host(b, f, ZB_OP_PYTHON, -1, 1, 0);
	}
	for (int u = 0; u < U; u++) {
		z3_items(b, f, b->tr.fwd_at[u], b->tr.fwd_at[u + 1]);
		b->fwd_done[u] = b->last[ZB_RES_GPU];
		b->copy_hold = NONE;
		if (cpu_ckpt && u >= 1 && u <= L) { /* the block's input to the host, synchronously */
			dep(b, b->fwd_done[u]);
			b->copy_hold = copy(b, f, ZB_RES_D2H, ZB_OP_ACT_DOWN, u, 0, -1, act(b, b->m->hidden));
		}
	}
	b->copy_hold = NONE;
	ctx bw = { step, micro, ZB_PASS_BWD_DATA };
	for (int u = U - 1; u >= 0; u--) {
		if (cpu_ckpt && u >= 1 && u <= L) {
			dep(b, b->last[ZB_RES_GPU]); /* brought back when recompute needs it */
			b->copy_hold = copy(b, bw, ZB_RES_H2D, ZB_OP_ACT_UP, u, 0, -1, act(b, b->m->hidden));
		}
		z3_items(b, bw, b->tr.bwd_at[u], b->tr.bwd_at[u] + b->tr.bwd_n[u]);
		b->bwd_done[u] = b->last[ZB_RES_GPU];
	}
	/* independent_gradient_partition_epilogue: the last bucket, then the host waits
	 * for every reduction (reduce_and_partition_stream.synchronize) */
	int k = b->tr.nflush - 1;
	z3_flush(b, bw, k);
	z3_wait(b, bw, 0, b->flush_done[k]);
	b->copy_hold = NONE;
}

static void micro_batch(dsb *b, int step, int micro)
{
	if (b->z3) {
		z3_micro(b, step, micro);
		return;
	}
	int U = b->units, w = b->p->prefetch_layers >= 1 ? b->p->prefetch_layers : 1;
	int last = micro == b->p->gas - 1;
	ctx f = { step, micro, ZB_PASS_FWD };
	if (micro == 0) {
		/* Python of the step; the previous step is over (the harness syncs) */
		dep(b, b->step_end_gpu);
		dep(b, b->step_end_h2d);
		host(b, f, ZB_OP_PYTHON, -1, 1, 0);
	}
	int cpu_ckpt = b->p->ckpt == ZB_CKPT_CPU;
	for (int u = 0; u < U; u++) {
		pre_unit(b, f, u, u - w >= 0 ? b->fwd_done[u - w] : NONE);
		dep(b, b->fetch[u]);
		unit_compute(b, f, u, 0);
		b->fwd_done[u] = b->last[ZB_RES_GPU];
		b->copy_hold = NONE;
		if (cpu_ckpt && u >= 1 && u <= b->m->layers) {
			/* cpu_checkpointing: the block's input goes to the host with a
			 * synchronous copy (the next block waits for it) */
			dep(b, b->fwd_done[u]);
			b->copy_hold = copy(b, f, ZB_RES_D2H, ZB_OP_ACT_DOWN, u, 0, -1, act(b, b->m->hidden));
		}
	}
	b->copy_hold = NONE;
	ctx bw = { step, micro, ZB_PASS_BWD_DATA };
	for (int u = U - 1; u >= 0; u--) {
		pre_unit(b, bw, u, u + w < U ? b->bwd_done[u + w] : NONE);
		dep(b, b->fetch[u]);
		if (cpu_ckpt && u >= 1 && u <= b->m->layers) {
			dep(b, b->last[ZB_RES_GPU]); /* brought back when recompute needs it */
			b->copy_hold = copy(b, bw, ZB_RES_H2D, ZB_OP_ACT_UP, u, 0, -1, act(b, b->m->hidden));
		}
		unit_compute(b, bw, u, 1);
		b->bwd_done[u] = b->last[ZB_RES_GPU];
		if (b->ranks == 1)
			bucket_hooks(b, bw, u);
		if (b->offload || last)
			grads_of_unit(b, bw, u, last);
	}
	b->copy_hold = NONE;
}

/* ---- the optimizer step --------------------------------------------------- */

static void gpu_adam(dsb *b, int step, int bk)
{
	const zb_bucket *bu = &b->g->buckets[bk];
	ctx o = { step, -1, ZB_PASS_OPT };
	if (b->stage == 3 && !b->offload) /* _prepare_fp32_grad_for_sub_group: flatten + fp32 */
		kernel(b, o, ZB_OP_GRAD_COPY, bu->first_unit, 6.0 * shard(b, bu->params));
	/* unscale_and_clip_grads: the fp32 gradient partition times 1/scale, in place */
	kernel(b, o, ZB_OP_UNSCALE, bu->first_unit, 8.0 * shard(b, bu->params));
	zb_task t = zb_task_blank(ZB_TASK_KERNEL, ZB_RES_GPU, ZB_OP_ADAM, ZB_PASS_OPT, step, -1, bu->first_unit);
	t.bucket = bk;
	t.params = shard(b, bu->params); /* this rank's partition of the group (graph.h) */
	t.param_offset = bu->param_offset;
	t.bytes = b->f->torch_adam_Bpp * (double)t.params;
	gpu_deps(b);
	emit(b, t);
	kernel(b, o, ZB_OP_CAST, bu->first_unit, 6.0 * t.params);
}

static void cpu_group(dsb *b, int step, int bk, uint32_t grads_down)
{
	const zb_bucket *bu = &b->g->buckets[bk];
	ctx o = { step, -1, ZB_PASS_OPT };
	double n = (double)shard(b, bu->params); /* this rank's partition of the group */
	dep(b, grads_down);
	/* unscale_and_clip_grads multiplies the host fp32 gradient partition by
	 * 1/combined_scale before the optimizer, unconditionally (also at loss scale 1
	 * without clipping: stage_1_and_2.py step(), stage3.py per sub-group); one
	 * streaming pass, 4 B read + 4 B written per parameter */
	host(b, o, ZB_OP_UNSCALE, bu->first_unit, 0, 8.0 * n);
	zb_task t = zb_task_blank(ZB_TASK_CPU_ADAM, ZB_RES_CPU, ZB_OP_ADAM, ZB_PASS_OPT, step, -1, bu->first_unit);
	t.bucket = bk;
	t.params = (int64_t)n;
	t.param_offset = bu->param_offset;
	t.bytes = n * ZB_ADAM_BYTES_PER_PARAM;
	emit(b, t);
	host(b, o, ZB_OP_CAST, bu->first_unit, 0, 6.0 * n); /* fp32 -> bf16 on the host */
	if (b->stage < 3) {
		/* into the pinned bf16 buffer, then one non-blocking copy up */
		dep(b, b->last[ZB_RES_CPU]);
		b->step_end_h2d = copy(b, o, ZB_RES_H2D, ZB_OP_PARAM_UP, bu->first_unit, (int64_t)n,
				       bu->param_offset, 2.0 * n);
		return;
	}
	if (b->oparam)
		return; /* the host partition is the parameter: nothing goes up */
	/* copy_ of a CPU fp32 tensor into a GPU bf16 one: a fresh pageable
	 * temporary, then a pageable H2D the thread waits for */
	host(b, o, ZB_OP_FRESH_PAGES, bu->first_unit, 0, 2.0 * n);
	dep(b, b->last[ZB_RES_CPU]);
	uint32_t up = copy(b, o, ZB_RES_H2D, ZB_OP_PARAM_UP_PAGEABLE, bu->first_unit, (int64_t)n,
			   bu->param_offset, 2.0 * n);
	dep(b, up);
	/* a blocking copy: the thread goes on when it is done (a zero-cost marker
	 * that orders the thread after the copy) */
	host(b, o, ZB_OP_HOOK, bu->first_unit, 0, 0);
}

static void optimizer_step(dsb *b, int step)
{
	zb_graph *g = b->g;
	uint32_t grads_down = b->last[ZB_RES_D2H];
	if (b->p->dtype == ZB_FP16 && b->stage == 3) {
		/* fp16's overflow check (stage3.py has_overflow): isinf and isnan of the whole
		 * 16-bit gradient partition buffer, each then any() over its bool copy:
		 * 2 x (2 B read + 1 B written + 1 B read) per parameter, on the host with
		 * offload_optimizer (the buffer is there), else on the GPU */
		ctx o = { step, -1, ZB_PASS_OPT };
		double bytes = 8.0 * (double)shard(b, g->params);
		dep(b, grads_down);
		if (b->offload)
			host(b, o, ZB_OP_OVERFLOW, 0, 0, bytes);
		else
			kernel(b, o, ZB_OP_OVERFLOW, 0, bytes);
	}
	/* sub-groups in model order: the bottom (GPU, Twin-Flow) first */
	for (int bk = g->nbuckets - 1; bk >= 0; bk--) {
		if (b->stage == 3) { /* the sub-group's Python around its optimizer step */
			ctx o = { step, -1, ZB_PASS_OPT };
			zb_task t = zb_task_blank(ZB_TASK_HOST, ZB_RES_CPU, ZB_OP_PYTHON, ZB_PASS_OPT, step, -1,
					  g->buckets[bk].first_unit);
			t.bucket = bk;
			dep(b, grads_down);
			emit(b, t);
			(void)o;
		}
		if (g->buckets[bk].on_cpu)
			cpu_group(b, step, bk, grads_down);
		else
			gpu_adam(b, step, bk);
	}
	b->step_end_gpu = b->last[ZB_RES_GPU];
	if (b->stage == 3 && b->offload && !b->oparam && !b->z3) {
		/* the profiled 2 B/param pinned H2D of stage 3 offload, after the groups (one
		 * rank: partition_grads' copies back up, in the backward's buckets) */
		ctx o = { step, -1, ZB_PASS_OPT };
		dep(b, b->last[ZB_RES_CPU]);
		b->step_end_h2d = copy(b, o, ZB_RES_H2D, ZB_OP_PARAM_UP, b->units - 1, 0, 0,
				       2.0 * (double)shard(b, g->params));
	}
	if (b->ranks > 1 && b->stage < 3) {
		/* all_gather_dp_groups: the updated 16-bit partitions to every rank */
		ctx o = { step, -1, ZB_PASS_OPT };
		dep(b, b->step_end_gpu);
		dep(b, b->step_end_h2d);
		dep(b, b->last[ZB_RES_CPU]);
		b->step_end_gpu = collective(b, o, ZB_OP_ALL_GATHER, g->buckets[0].first_unit, 0,
					     g->buckets[0].param_offset, g->buckets[0].params);
	}
}

/* ---- groups ----------------------------------------------------------------- */

typedef struct grouping {
	int64_t sg, acc, in_group, *bounds;
	int n, cap;
} grouping;

static void close_groups(int64_t size, void *ctx)
{
	grouping *gr = ctx;
	gr->acc += size;
	gr->in_group += size;
	if (gr->in_group < gr->sg)
		return;
	if (gr->n == gr->cap) {
		gr->cap = gr->cap ? 2 * gr->cap : 64;
		gr->bounds = zb_xrealloc(gr->bounds, sizeof(int64_t) * (size_t)gr->cap);
	}
	gr->bounds[gr->n++] = gr->acc; /* end offset of a sub-group */
	gr->in_group = 0;
}

/* ZeRO-3 sub-groups in model order (whole tensors, closing at >= sub_group_size);
 * the CPU ones are the top, chosen so their share is nearest to the ratio (a ratio
 * from --ds-config is already one DeepSpeed's rule gives). Stages 1/2: one group. */
static void make_groups(dsb *b)
{
	zb_graph *g = b->g;
	int64_t P = g->params;
	int64_t *ends;
	int n;
	if (b->stage == 3) {
		grouping gr = { 0 };
		gr.sg = zb_ds_sub_group(b->c);
		zb_ds_tensors(b->m, close_groups, &gr);
		if (gr.n == 0 || gr.bounds[gr.n - 1] != P) {
			if (gr.n == gr.cap)
				gr.bounds = zb_xrealloc(gr.bounds, sizeof(int64_t) * (size_t)(gr.cap = gr.n + 1));
			gr.bounds[gr.n++] = P;
		}
		ends = gr.bounds;
		n = gr.n;
	} else {
		ends = zb_xmalloc(sizeof(int64_t));
		ends[0] = P;
		n = 1;
	}
	/* first CPU group k: the CPU share sum(k..n-1) nearest to ratio * P */
	double want = b->offload ? b->p->ratio * (double)P : 0;
	int k = n;
	double best = want;
	for (int i = 0; i < n; i++) {
		double cpu = (double)(P - (i ? ends[i - 1] : 0));
		if (fabs(cpu - want) < best - 0.5) {
			best = fabs(cpu - want);
			k = i;
		}
	}
	if (!b->offload)
		k = n;
	g->buckets = zb_xcalloc((size_t)n, sizeof *g->buckets);
	g->nbuckets = n;
	for (int i = 0; i < n; i++) {
		zb_bucket *bu = &g->buckets[n - 1 - i]; /* bucket 0 = top */
		bu->param_offset = i ? ends[i - 1] : 0;
		bu->params = ends[i] - bu->param_offset;
		bu->on_cpu = i >= k;
	}
	b->split = k < n ? (k ? ends[k - 1] : 0) : P;
	g->cpu_params = P - b->split;
	for (int bk = 0; bk < n; bk++) {
		zb_bucket *bu = &g->buckets[bk];
		bu->first_unit = bu->last_unit = 0;
		for (int u = 0; u < b->units; u++) {
			int64_t lo = unit_lo(b, u);
			if (lo <= bu->param_offset)
				bu->first_unit = u;
			if (lo < bu->param_offset + bu->params)
				bu->last_unit = u;
		}
	}
	free(ends);
}

/* ---- entry point -------------------------------------------------------------- */

static zb_status check(const zb_config *c, int stage, zb_error *err)
{
	const zb_policy *p = &c->policy;
	if (c->steps < 1)
		return zb_fail(err, ZB_E_INPUT, "steps %d must be at least 1", c->steps);
	if (stage < 1 || stage > 3)
		return zb_fail(err, ZB_E_INPUT, "zero stage %d is not one DeepSpeed offloads with (1, 2, 3)", stage);
	if (p->kind == ZB_POLICY_DPU)
		return zb_fail(err, ZB_E_INPUT,
			       "policy 'dpu' has no DeepSpeed counterpart (its delayed parameter update was never "
			       "merged); use --framework zbench");
	if (p->offload_param && stage != 3)
		return zb_fail(err, ZB_E_INPUT, "offload_param needs zero stage 3, not %d", stage);
	if (p->offload_param && p->kind == ZB_POLICY_NONE)
		return zb_fail(err, ZB_E_INPUT, "offload_param needs offload_optimizer (policy offload or overlap)");
	if (p->kind != ZB_POLICY_NONE && p->ratio < 1.0 && stage != 3)
		return zb_fail(err, ZB_E_INPUT, "a Twin-Flow ratio %g needs zero stage 3, not %d", p->ratio, stage);
	if (c->policy.sub_group_size < 0)
		return zb_fail(err, ZB_E_INPUT, "sub_group_size %lld must not be negative",
			       (long long)c->policy.sub_group_size);
	return ZB_OK;
}

zb_status zb_ds_graph_build(zb_graph *g, const zb_config *c, zb_error *err)
{
	memset(g, 0, sizeof *g);
	zb_status st = zb_config_validate(c, err);
	if (st)
		return st;
	dsb b;
	memset(&b, 0, sizeof b);
	b.stage = zb_ds_stage(c);
	if ((st = check(c, b.stage, err)))
		return st;
	b.f = zb_ds_profile_of(&c->hw.ds, &b.fs);
	if ((st = zb_ds_profile_validate(b.f, err)))
		return st;
	b.g = g;
	b.c = c;
	b.m = &c->model;
	b.p = &c->policy;
	b.units = zb_model_units(b.m);
	b.tokens = (int64_t)b.p->micro_batch * b.p->seq;
	b.offload = b.p->kind != ZB_POLICY_NONE;
	b.oparam = b.p->offload_param;
	b.overlap = b.p->kind == ZB_POLICY_OVERLAP;
	b.step_end_gpu = b.step_end_h2d = b.copy_hold = NONE;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		b.last[r] = NONE;

	g->steps = c->steps;
	b.ranks = c->policy.gpus * c->policy.nodes > 1 ? c->policy.gpus * c->policy.nodes : 1;
	g->ranks = b.ranks;
	g->params = zb_model_params(b.m);
	b.part_hi = zb_shard_params(g->params, b.ranks);
	g->grad_bytes_per_param = 2;
	g->tokens_per_step = (double)b.tokens * b.p->gas;
	g->model_flops_per_step = zb_model_flops_per_token(b.m, b.p->seq) * g->tokens_per_step;
	make_groups(&b);
	b.gather_last = b.gather_hold = b.rs_last = NONE;
	b.umods = zb_xcalloc((size_t)(2 * b.units), sizeof *b.umods);
	b.utens = b.umods + b.units;
	unit_counts(b.m, b.umods, b.utens);
	b.z3 = b.stage == 3 && b.ranks == 1;
	b.uflush = zb_xcalloc((size_t)b.units, sizeof *b.uflush);
	if (b.ranks == 1) { /* the module trace: ZeRO-3's items, the IPG buckets of every stage */
		zb_ds_trace_opts o;
		zb_ds_trace_opts_of(c, &o);
		if ((st = zb_ds_trace_build(b.m, &o, &b.tr, err))) {
			free(b.umods);
			free(b.uflush);
			zb_graph_free(g);
			return st;
		}
		for (int k = 0; k < b.tr.nflush; k++)
			b.uflush[b.tr.flush[k].unit]++;
	}
	if (b.z3) {
		b.flush_done = zb_xmalloc(sizeof *b.flush_done * (size_t)(b.tr.nflush + 1));
		for (int k = 0; k <= b.tr.nflush; k++)
			b.flush_done[k] = NONE;
	}

	int U = b.units;
	uint32_t *mem = zb_xmalloc(sizeof(uint32_t) * (size_t)(3 * U));
	b.fwd_done = mem;
	b.bwd_done = mem + U;
	b.fetch = mem + 2 * U;
	for (int i = 0; i < 3 * U; i++)
		mem[i] = NONE;
	for (int s = 0; s < c->steps; s++) {
		for (int mb = 0; mb < b.p->gas; mb++)
			micro_batch(&b, s, mb);
		optimizer_step(&b, s);
	}
	free(mem);
	free(b.umods);
	free(b.uflush);
	if (b.z3)
		free(b.flush_done);
	if (b.ranks == 1)
		zb_ds_trace_free(&b.tr);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		g->copy_bytes[r] /= c->steps;
	return ZB_OK;
}

/* ---- memory ------------------------------------------------------------------- */

/* Saved activations of one block under SDPA flash, in hidden-sized bf16 tensors per
 * token: norm inputs and outputs (4), q, k, v (1 + 2 kv/h), the attention output and
 * its projection input (2), the MLP input, up output and activation output
 * (1 + 2 ffn/h, gated: + ffn/h). Eager attention adds the scores and probabilities. */
static double block_saved(const zb_config *c, const zb_ds_profile *f)
{
	const zb_model *m = &c->model;
	double h = m->hidden, q = (double)zb_model_q_dim(m), kv = (double)zb_model_kv_dim(m), fi = (double)zb_model_mlp_width(m);
	double T = (double)c->policy.micro_batch * c->policy.seq, s = c->policy.seq;
	double w = 4 * h + (q + 2 * kv) + 2 * q + h + (m->gated_mlp ? 3 : 2) * fi;
	double bytes = 2.0 * T * w + T * zb_ds_extra_saved_bytes(m);
	if (!f->flash)
		bytes += 2.0 * 2.0 * c->policy.micro_batch * (double)m->heads * s * s;
	return bytes;
}

void zb_ds_memory_estimate(const zb_config *c, zb_memory *out)
{
	zb_memory o;
	memset(&o, 0, sizeof o);
	zb_ds_profile fs;
	const zb_ds_profile *f = zb_ds_profile_of(&c->hw.ds, &fs);
	const zb_model *m = &c->model;
	const zb_policy *p = &c->policy;
	int stage = zb_ds_stage(c), offload = p->kind != ZB_POLICY_NONE;
	double P = (double)zb_model_params(m);
	double T = (double)p->micro_batch * p->seq, L = m->layers;
	/* the share of the parameters whose optimizer is on the GPU */
	zb_graph g;
	double gpu_share = offload ? 1.0 - p->ratio : 1.0;
	zb_error e;
	zb_config cc = *c;
	cc.steps = 1;
	if (offload && p->ratio < 1 && zb_ds_graph_build(&g, &cc, &e) == ZB_OK) {
		gpu_share = 1.0 - (double)g.cpu_params / P; /* whole sub-groups */
		zb_graph_free(&g);
	}

	/* GPU: 16-bit parameters (ZeRO-3 with offload_param: the most that are on the GPU at
	 * once in the coordinator's replay, ds_trace.h: the persistent ones, the fetched and
	 * prefetched ones, those kept for reuse), optimizer states of the GPU share (fp32
	 * master, m, v: 12 B; with offload the GPU sub-groups also keep fp32 gradient
	 * partitions: 16 B), stage 3 keeps bf16 gradient partitions without offload, and its
	 * contiguous IPG bucket (stage3.py _setup_for_real_optimizer: reduce_bucket_size
	 * elements of the model's dtype). */
	o.gpu_params = 2.0 * P;
	if (p->offload_param && stage == 3) {
		zb_ds_trace_opts to;
		zb_ds_trace tr;
		zb_error te;
		zb_ds_trace_opts_of(c, &to);
		if (zb_ds_trace_build(m, &to, &tr, &te) == ZB_OK) {
			o.gpu_params = 2.0 * tr.count.max_live_elems;
			zb_ds_trace_free(&tr);
		}
	}
	o.gpu_grads = stage == 3 && !offload ? 2.0 * P : 0;
	if (stage == 3) {
		zb_ds_trace_opts to;
		zb_ds_trace_opts_of(c, &to);
		o.gpu_workspace += 2.0 * fmin((double)to.reduce_bucket, P);
	}
	o.gpu_optimizer = gpu_share * (offload ? 16.0 : 12.0) * P;
	if (p->gas > 1)
		o.gpu_grads += offload ? 0 : 4.0 * P; /* fp32 accumulation */
	double layer = block_saved(c, f), ckpt_in = 2.0 * T * m->hidden;
	o.gpu_activations = p->ckpt == ZB_CKPT_NONE ? L * layer
			    : p->ckpt == ZB_CKPT_GPU ? L * ckpt_in + layer : 2 * ckpt_in + layer;
	o.host_activations = p->ckpt == ZB_CKPT_CPU ? L * ckpt_in : 0;
	/* logits in bf16, their fp32 upcast and its gradient: what cross-entropy holds
	 * (a Hugging Face model: its own loss's tensors, memory.h) */
	o.gpu_workspace += (m->loss ? zb_memory_hf_loss_bytes(m, T) : T * m->vocab * (2.0 + 4.0 + 4.0)) +
			   2.0 * T * m->hidden * 2;

	/* Host: pinned fp32 master, m, v and gradient of the CPU share (16 B:
	 * stage_1_and_2.py single_partition_of_fp32_groups and its .grad, Adam's
	 * state). bf16 buffers: stage 1/2 offload 4 B, the pinned cast target
	 * param_buffer_of_bit16_for_cpu_offload_groups (2 B) and 2 B more that the
	 * measured RSS of s2-off asks for and the source does not name; stage 3 offload
	 * 2 B (grad_partitions_flat_buffer: the pinned gradient partitions, model dtype);
	 * offload_param 4 B more (the pinned param_groups_fp16_flat_cpu_memory, 2 B, and
	 * the per-parameter pinned partitions zero.Init made, 2 B: freed when moved into
	 * the flat buffer, but PyTorch's caching host allocator keeps freed pinned blocks;
	 * the 2 B match s3-off-param's RSS). Stages 1/2 with gas > 1: the pinned
	 * accumulation buffers, model dtype, 2 B (accumulated_grads_in_cpu). fp16 with
	 * ZeRO-3 offload: has_overflow's bool copy of the host gradient buffer, 1 B.
	 * The process: CUDA context and libraries, ~0.9 GiB (s2-none's RSS minus its
	 * fp32 model), and the model as the measurement harness builds it (stages 1/2:
	 * fp32 on the host, 4 B; stage 3 under zero.Init: bf16, 2 B; the peak RSS of
	 * s2-none and s3-none). All of it is checked against the measured RSS
	 * (tests/test_deepspeed_schedule.c), not fitted. */
	double cpu_share = offload ? 1.0 - gpu_share : 0;
	o.host_optimizer = cpu_share * 12.0 * P;
	o.host_grads = cpu_share * 4.0 * P;
	if (offload && stage < 3 && p->gas > 1)
		o.host_grads += 2.0 * P;
	if (offload)
		o.host_params = stage < 3 ? 4.0 * P : 2.0 * P + (p->offload_param ? 4.0 * P : 0);
	o.host_process = 0.9 * GIB + (stage < 3 ? 4.0 : 2.0) * P;
	if (offload && stage == 3 && p->dtype == ZB_FP16)
		o.host_process += P;
	/* World size R: optimizer states, fp32 gradients and the host's 16-bit buffers
	 * are partitioned (each rank holds 1/R); ZeRO-3 partitions the 16-bit weights
	 * and gradients too. Not checked against a measurement (none with R > 1 yet). */
	int R = p->gpus * p->nodes > 1 ? p->gpus * p->nodes : 1;
	if (R > 1) {
		o.gpu_optimizer /= R;
		o.host_optimizer /= R;
		o.host_grads /= R;
		o.host_params /= R;
		if (stage == 3) {
			o.gpu_grads /= R;
			if (!p->offload_param)
				o.gpu_params /= R;
		}
	}
	o.gpu_bytes = o.gpu_params + o.gpu_grads + o.gpu_optimizer + o.gpu_activations + o.gpu_workspace;
	o.host_bytes = o.host_optimizer + o.host_grads + o.host_params + o.host_activations + o.host_process;
	int node_ranks = p->gpus > 1 ? p->gpus : 1; /* the node's ranks share its host memory */
	/* Headroom: PyTorch's caching allocator reserves more than it hands out (the
	 * measured max_memory_reserved exceeds max_memory_allocated by 3.4..27.7 GiB,
	 * median ~5 GiB), and the host keeps the OS and page cache: 90 % of each. */
	int gpu_ok = o.gpu_bytes <= 0.90 * c->hw.gpu.mem_bytes;
	int host_ok = o.host_bytes * node_ranks <= 0.90 * c->hw.cpu.mem_bytes;
	o.fits = gpu_ok && host_ok;
	if (!gpu_ok)
		snprintf(o.reason, sizeof o.reason, "gpu needs %.1f GiB of %.1f GiB (%s, DeepSpeed, %.1f usable)",
			 o.gpu_bytes / GIB, c->hw.gpu.mem_bytes / GIB, c->hw.gpu.name, 0.9 * c->hw.gpu.mem_bytes / GIB);
	else if (!host_ok)
		snprintf(o.reason, sizeof o.reason, "host needs %.1f GiB of %.1f GiB (%s, DeepSpeed, %.1f usable)",
			 o.host_bytes * node_ranks / GIB, c->hw.cpu.mem_bytes / GIB, c->hw.cpu.name,
			 0.9 * c->hw.cpu.mem_bytes / GIB);
	*out = o;
}
