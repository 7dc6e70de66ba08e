/*
 * schedule.c - builds the schedule (task graph) of N training steps (zb_graph_build,
 * core/graph.h); the optimizer work goes where the schedule family says (builder.h).
 *
 * Layout of one step, in id order:
 *   for each micro-batch: forward (embed, blocks 0..L-1, head, loss), then backward
 *   (head, blocks L-1..0, embed); with ZeRO-3 parameter offload the per-layer
 *   fetches are interleaved ahead of use, with CPU checkpointing the activation
 *   copies are interleaved where they happen.
 *   optimizer work per gradient bucket, emitted where its gradients become ready
 *   (overlap, dpu) or after the whole backward (none, offload).
 *
 * Buckets cut the flat parameter vector from its top (the head, whose gradients
 * are ready first) downwards. With Twin-Flow ratio r the top r*P parameters have
 * their optimizer on the CPU: those gradients are ready earliest, so the slower
 * CPU flow gets the head start, and the GPU updates the bottom layers, whose
 * gradients arrive last, quickly at the end of backward. A bucket never straddles
 * the CPU/GPU split, so the split is exact to the parameter.
 *
 * Hazards the executor would otherwise race on are explicit dependencies:
 *   - a unit's GPU gradients are not overwritten (next step's backward) before
 *     their D2H copy read them;
 *   - with dpu, updated parameters of step s go up only after step s+1's last use
 *     of the old ones (its backward of the bucket's lowest unit), and step s+1's
 *     forward runs on the parameters of step s-1;
 *   - the host gradient buffer of a bucket is not overwritten before its CPU Adam
 *     of the previous step has read it;
 *   - with dpu, the host 16-bit parameters of a bucket are not overwritten by its
 *     CPU Adam of step s+1 before the delayed upload of step s has read them.
 */
#include "schedules/builder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/attention.h"

/* ---- growing arrays ---------------------------------------------------- */

/* Add a dependency of the task about to be emitted (zb_graph_add_dep). */
void sched_dep(builder *b, uint32_t id) { zb_graph_add_dep(b->g, b->deps, &b->ndeps, id); }

static uint32_t emit(builder *b, zb_task t)
{
	uint32_t id = zb_graph_append(b->g, t, b->deps, &b->ndeps);
	if (t.resource == ZB_RES_GPU)
		b->last_gpu = id;
	return id;
}

/* ---- compute tasks ------------------------------------------------------ */

typedef struct ctx {
	int step, micro, pass;
} ctx;

static uint32_t gemm(builder *b, ctx x, int op, int unit, int64_t m, int64_t n, int64_t k,
		     int64_t batch)
{
	zb_task t = zb_task_blank(ZB_TASK_GEMM, ZB_RES_GPU, op, x.pass, x.step, x.micro, unit);
	t.m = (int32_t)m;
	t.n = (int32_t)n;
	t.k = (int32_t)k;
	t.batch = (int32_t)batch;
	t.flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
	t.bytes = (double)b->grad_bytes * (double)batch * ((double)m * k + (double)k * n + (double)m * n);
	return emit(b, t);
}

static uint32_t kernel(builder *b, ctx x, int op, int unit, double bytes)
{
	zb_task t = zb_task_blank(ZB_TASK_KERNEL, ZB_RES_GPU, op, x.pass, x.step, x.micro, unit);
	t.bytes = bytes;
	return emit(b, t);
}

/* Forward GEMM of a linear layer y[out x T] = W[out x in] x[in x T], or its two
 * backward GEMMs: dx[in x T] = W^T dy, dW[out x in] += dy x^T. */
/* The first write of a unit's gradients in a step must wait until the previous
 * step's copy of them has left for the host (see the file comment). */
static void guard_grad_write(builder *b, ctx x, int unit)
{
	if (x.micro != 0 || b->first_grad_write[unit] != NONE)
		return;
	for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++)
		sched_dep(b, b->down_prev[bk]);
	b->first_grad_write[unit] = 1;
}

/* Forward GEMM of a linear layer y[out x T] = W[out x in] x[in x T], or its two
 * backward GEMMs: dx[in x T] = W^T dy, dW[out x in] += dy x^T. */
static uint32_t linear(builder *b, ctx x, int op, int unit, int64_t out, int64_t in)
{
	int64_t T = b->tokens;
	if (x.pass == ZB_PASS_FWD || x.pass == ZB_PASS_RECOMPUTE)
		return gemm(b, x, op, unit, out, T, in, 1);
	ctx d = x, w = x;
	d.pass = ZB_PASS_BWD_DATA;
	w.pass = ZB_PASS_BWD_WEIGHT;
	gemm(b, d, op, unit, in, T, out, 1);
	/* a tied LM head's weight gradient lands in the embedding (unit 0) */
	guard_grad_write(b, x, op == ZB_OP_LMHEAD && b->m->tied_embeddings ? 0 : unit);
	return gemm(b, w, op, unit, out, in, T, 1);
}

static double act_bytes(const builder *b, int64_t width) { return (double)b->tokens * width * b->grad_bytes; }

/* ---- HBM bytes of the memory-bound kernels -------------------------------------
 * What zbench's executor's kernels (exec/kernels.cu, embed_loss.cu) read from and write
 * to device memory, so that a kernel's time is bytes / (its fraction of hbm_Bps): a row
 * re-read inside one kernel (norms, softmax, cross-entropy) comes from L1/L2 and counts
 * once; the residual add's second operand is the output of the task just before it (a
 * GEMM's or a norm's backward), read from L2 when it fits (gpu.l2_bytes). */

/* residual add, out = a + b: a and out from and to HBM, b from L2 when it fits */
static double resid_bytes(const builder *b)
{
	double x = act_bytes(b, b->m->hidden), l2 = b->c->hw.gpu.l2_bytes;
	return l2 > 0 && x <= l2 ? 2 * x : 3 * x;
}

/* LayerNorm / RMSNorm: forward reads x, writes y and the row statistics (8 B a row);
 * backward: the weight gradients read dout and x (norm_param_grad), the input gradient
 * reads them again and writes dx, the statistics twice */
static double norm_bytes(const builder *b, int bwd)
{
	double x = act_bytes(b, b->m->hidden), T = (double)b->tokens;
	return bwd ? 5 * x + 16 * T : 2 * x + 8 * T;
}

/* causal softmax over the scores in place: the valid part of each row, (s + 1) / 2 of s
 * on average, is read (forward) or read twice (probabilities and their gradient), every
 * element written */
static double softmax_bytes(const builder *b, double scores, int bwd)
{
	double s = b->p->seq, valid = (s + 1) / (2 * s);
	return scores * ((bwd ? 2 : 1) * valid + 1);
}

/* GeLU: forward reads h, writes a; backward reads dout and h, writes dh. SwiGLU: the gate
 * and up halves (2 f) in, f out; backward reads both halves and dout, writes both halves */
static double act_kernel_bytes(const builder *b, int bwd)
{
	int64_t f = zb_model_mlp_width(b->m);
	if (b->m->gated_mlp)
		return act_bytes(b, (bwd ? 5 : 3) * f);
	return act_bytes(b, (bwd ? 3 : 2) * f);
}

/* embedding: forward gathers T rows of wte (and of wpe, which stay in L2: one table's
 * worth), writes x, reads the token ids; backward reads dout and adds into wte's rows
 * (a read and a write of each, atomics) and wpe's, after zeroing wte's gradient unless a
 * tied head's weight gradient already wrote it */
static double embed_bytes(const builder *b, int bwd)
{
	const zb_model *m = b->m;
	double x = act_bytes(b, m->hidden), T = (double)b->tokens;
	double wpe = m->max_seq > 0 ? (double)b->p->seq * m->hidden * b->grad_bytes : 0;
	if (!bwd)
		return 2 * x + 4 * T + wpe;
	double zero = m->tied_embeddings ? 0 : (double)zb_model_unit_params(m, 0) * b->grad_bytes;
	return 3 * x + 4 * T + 2 * wpe + zero;
}

/* fp32 accumulation of n 16-bit gradients: acc read and written, the gradient read; the
 * last micro-batch then casts the sum to 16 bits (reads acc, writes the gradient) and
 * zeroes acc */
static double grad_acc_bytes(const builder *b, double n, int last)
{
	double g = b->grad_bytes;
	return n * (g + 8) + (last ? n * (4 + g + 4) : 0);
}

static void block_forward(builder *b, ctx x, int unit)
{
	const zb_model *m = b->m;
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m), f = zb_model_mlp_width(m), s = b->p->seq;
	int64_t bh = (int64_t)b->p->micro_batch * m->heads, d = zb_model_head_dim(m);
	double scores = (double)bh * s * s * b->grad_bytes;
	kernel(b, x, ZB_OP_NORM1, unit, norm_bytes(b, 0));
	linear(b, x, ZB_OP_QKV, unit, q + 2 * kv, h);
	if (b->p->attention == ZB_ATTN_FLASH) {
		emit(b, zb_flash_task(b->c, x.pass, x.step, x.micro, unit));
	} else {
		gemm(b, x, ZB_OP_SCORES, unit, s, s, d, bh);        /* S = K^T Q per head */
		kernel(b, x, ZB_OP_SOFTMAX, unit, softmax_bytes(b, scores, 0));
		gemm(b, x, ZB_OP_CONTEXT, unit, d, s, s, bh);       /* O = V P per head */
	}
	linear(b, x, ZB_OP_PROJ, unit, h, q);
	kernel(b, x, ZB_OP_RESID, unit, resid_bytes(b));
	kernel(b, x, ZB_OP_NORM2, unit, norm_bytes(b, 0));
	linear(b, x, ZB_OP_FC1, unit, zb_model_fc1_out(m), h); /* with experts: routed, and the router */
	kernel(b, x, ZB_OP_ACT, unit, act_kernel_bytes(b, 0));
	linear(b, x, ZB_OP_FC2, unit, h, f);
	kernel(b, x, ZB_OP_RESID, unit, resid_bytes(b));
}

static void block_backward(builder *b, ctx x, int unit)
{
	const zb_model *m = b->m;
	int64_t h = m->hidden, q = zb_model_q_dim(m), kv = zb_model_kv_dim(m), f = zb_model_mlp_width(m), s = b->p->seq;
	int64_t bh = (int64_t)b->p->micro_batch * m->heads, d = zb_model_head_dim(m);
	double scores = (double)bh * s * s * b->grad_bytes;
	x.pass = ZB_PASS_BWD_DATA;
	kernel(b, x, ZB_OP_RESID, unit, resid_bytes(b));
	linear(b, x, ZB_OP_FC2, unit, h, f);
	kernel(b, x, ZB_OP_ACT, unit, act_kernel_bytes(b, 1));
	linear(b, x, ZB_OP_FC1, unit, zb_model_fc1_out(m), h); /* with experts: routed, and the router */
	kernel(b, x, ZB_OP_NORM2, unit, norm_bytes(b, 1));
	kernel(b, x, ZB_OP_RESID, unit, resid_bytes(b));
	linear(b, x, ZB_OP_PROJ, unit, h, q);
	if (b->p->attention == ZB_ATTN_FLASH) {
		emit(b, zb_flash_task(b->c, x.pass, x.step, x.micro, unit));
	} else {
		gemm(b, x, ZB_OP_CONTEXT, unit, s, s, d, bh);       /* dP = V^T dO */
		gemm(b, x, ZB_OP_CONTEXT, unit, d, s, s, bh);       /* dV = dO P^T */
		kernel(b, x, ZB_OP_SOFTMAX, unit, softmax_bytes(b, scores, 1));
		gemm(b, x, ZB_OP_SCORES, unit, d, s, s, bh);        /* dQ = K dS */
		gemm(b, x, ZB_OP_SCORES, unit, d, s, s, bh);        /* dK = Q dS^T */
	}
	linear(b, x, ZB_OP_QKV, unit, q + 2 * kv, h);
	kernel(b, x, ZB_OP_NORM1, unit, norm_bytes(b, 1));
}

/* ---- parameter and activation movement --------------------------------- */

/* Parameters of a unit whose optimizer (and so, with ZeRO-3 offload, whose
 * 16-bit copy) lives on the host. */
static int64_t unit_cpu_params(const builder *b, int unit)
{
	int64_t lo = zb_model_unit_offset(b->m, unit), hi = lo + zb_model_unit_params(b->m, unit);
	int64_t split = b->g->params - b->g->cpu_params;
	if (hi <= split)
		return 0;
	return hi - (lo > split ? lo : split);
}

/* ZeRO-3: fetch a unit's offloaded parameters before the pass that uses them.
 * At most prefetch_layers fetches run ahead of compute: the fetch of the unit
 * `window` positions ahead waits for the unit `window` behind to finish. */
static void fetch_param(builder *b, ctx x, int unit, uint32_t window_dep)
{
	int64_t n = unit_cpu_params(b, unit);
	b->fetch[unit] = NONE;
	if (!b->p->offload_param || n == 0)
		return;
	zb_task t = zb_task_blank(ZB_TASK_COPY, ZB_RES_H2D, ZB_OP_PARAM_FETCH, ZB_PASS_OPT, x.step, x.micro, unit);
	t.pass = (uint8_t)x.pass;
	t.params = sched_shard(b, n); /* several ranks: each fetches its shard, then all gather */
	t.param_offset = zb_model_unit_offset(b->m, unit) + zb_model_unit_params(b->m, unit) - n;
	t.bytes = (double)t.params * b->grad_bytes;
	sched_dep(b, window_dep);
	/* The host copy of the parameters must be the one the previous step's CPU
	 * Adam wrote. */
	for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++)
		if (b->g->buckets[bk].on_cpu)
			sched_dep(b, x.step > 0 ? b->adam_prev[bk] : NONE);
	b->fetch[unit] = emit(b, t);
}

static uint32_t act_copy(builder *b, ctx x, int unit, int to_host, uint32_t after, uint32_t after2)
{
	zb_task t = zb_task_blank(ZB_TASK_COPY, to_host ? ZB_RES_D2H : ZB_RES_H2D,
			  to_host ? ZB_OP_ACT_DOWN : ZB_OP_ACT_UP, x.pass, x.step, x.micro, unit);
	t.bytes = act_bytes(b, b->m->hidden);
	sched_dep(b, after);
	sched_dep(b, after2);
	return emit(b, t);
}

/* Forward dependency of a unit's first compute task in step s: its parameters
 * must be current. */
static void params_current(builder *b, int step, int unit)
{
	for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++) {
		const zb_bucket *bu = &b->g->buckets[bk];
		if (bu->on_cpu && b->p->offload_param)
			continue; /* fetched per layer, the fetch carries the dependency */
		if (bu->on_cpu && b->p->kind == ZB_POLICY_DPU)
			sched_dep(b, b->update_prev2[bk]); /* delayed: parameters of step s-2's update */
		else
			sched_dep(b, b->update_prev[bk]);
	}
	(void)step;
}

/* ---- optimizer tasks of a bucket, for the families ------------------------------ */

uint32_t sched_bucket_copy(builder *b, int step, int bk, int op, int resource)
{
	const zb_bucket *bu = &b->g->buckets[bk];
	zb_task t = zb_task_blank(ZB_TASK_COPY, resource, op, ZB_PASS_OPT, step, -1, bu->first_unit);
	t.bucket = bk;
	t.params = sched_shard(b, bu->params); /* this rank's shard (graph.h) */
	t.param_offset = bu->param_offset;
	t.bytes = (double)t.params * b->grad_bytes;
	return emit(b, t);
}

uint32_t sched_bucket_adam(builder *b, int step, int bk)
{
	const zb_bucket *bu = &b->g->buckets[bk];
	int cpu = bu->on_cpu;
	zb_task t = zb_task_blank(cpu ? ZB_TASK_CPU_ADAM : ZB_TASK_GPU_ADAM, cpu ? ZB_RES_CPU : ZB_RES_GPU_OPT,
			  ZB_OP_ADAM, ZB_PASS_OPT, step, -1, bu->first_unit);
	t.bucket = bk;
	t.params = sched_shard(b, bu->params);
	t.param_offset = bu->param_offset;
	t.bytes = (double)t.params * ZB_ADAM_BYTES_PER_PARAM;
	return emit(b, t);
}

/* ---- one step ------------------------------------------------------------ */

static void micro_batch(builder *b, int step, int micro)
{
	const zb_model *m = b->m;
	const zb_policy *p = b->p;
	int L = m->layers, U = b->units, last = micro == p->gas - 1;
	int64_t h = m->hidden, T = b->tokens, V = m->vocab;
	int64_t e = m->embed_proj > 0 ? m->embed_proj : h;
	int recompute = p->ckpt != ZB_CKPT_NONE, window = p->prefetch_layers;
	ctx f = { step, micro, ZB_PASS_FWD };

	/* forward */
	for (int u = 0; u < U; u++) {
		fetch_param(b, f, u, (int64_t)u - window - 1 >= 0 ? b->fwd_done[u - window - 1] : NONE);
		sched_ranks_gather_unit(b, step, micro, ZB_PASS_FWD, u,
					(int64_t)u - window - 1 >= 0 ? b->fwd_done[u - window - 1] : NONE);
		if (u >= 1 && u <= L && p->ckpt == ZB_CKPT_CPU) /* the block's input goes to the host */
			b->act_down[u] = act_copy(b, f, u, 1, b->last_gpu, NONE);
		if (micro == 0 && step > 0)
			params_current(b, step, u);
		sched_dep(b, b->fetch[u]);
		if (u == 0) {
			kernel(b, f, ZB_OP_EMBED, u, embed_bytes(b, 0));
		} else if (u <= L) {
			block_forward(b, f, u);
		} else {
			kernel(b, f, ZB_OP_NORMF, u, norm_bytes(b, 0));
			gemm(b, f, ZB_OP_LMHEAD, u, V, T, e, 1);
			/* cross-entropy: the logits read (their second pass from L2) and
			 * their gradient written in place, a loss per row */
			kernel(b, f, ZB_OP_LOSS, u, 2.0 * T * V * b->grad_bytes + 8.0 * T);
		}
		b->fwd_done[u] = b->last_gpu;
	}

	/* backward, top down */
	ctx bw = { step, micro, ZB_PASS_BWD_DATA };
	for (int u = U - 1; u >= 0; u--) {
		fetch_param(b, bw, u, (int64_t)u + window + 1 < U ? b->bwd_done[u + window + 1] : NONE);
		sched_ranks_gather_unit(b, step, micro, ZB_PASS_BWD_DATA, u,
					(int64_t)u + window + 1 < U ? b->bwd_done[u + window + 1] : NONE);
		uint32_t act_up = NONE;
		if (u >= 1 && u <= L && p->ckpt == ZB_CKPT_CPU)
			/* bring the checkpoint back; two buffers: the one of the unit two
			 * above must be free */
			act_up = act_copy(b, bw, u, 0, b->act_down[u], u + 2 <= L ? b->bwd_done[u + 2] : NONE);
		sched_dep(b, b->fetch[u]);
		sched_dep(b, act_up);
		if (u == U - 1) {
			linear(b, bw, ZB_OP_LMHEAD, u, V, e);
			guard_grad_write(b, bw, u);
			kernel(b, bw, ZB_OP_NORMF, u, norm_bytes(b, 1));
		} else if (u >= 1) {
			if (recompute) {
				ctx r = { step, micro, ZB_PASS_RECOMPUTE };
				block_forward(b, r, u);
			}
			block_backward(b, bw, u);
		} else {
			/* embedding backward: scatter-add of the input gradient */
			guard_grad_write(b, bw, 0);
			kernel(b, bw, ZB_OP_EMBED, u, embed_bytes(b, 1));
		}
		b->bwd_done[u] = b->last_gpu;
		if (p->gas > 1) {
			/* fp32 accumulation of this micro-batch's gradients; the last one
			 * also writes the 16-bit gradient that is sent or applied */
			double n = (double)zb_model_unit_params(m, u);
			kernel(b, bw, ZB_OP_GRAD_ACC, u, grad_acc_bytes(b, n, last));
		}
		b->grad_ready[u] = b->last_gpu;
		if (last)
			sched_ranks_grad_ready(b, step, u);
		if (last && b->family->grad_ready)
			b->family->grad_ready(b, step, u);
	}
	b->bwd_end = b->last_gpu;
}

static void rotate(uint32_t **cur, uint32_t **prev, int n)
{
	uint32_t *t = *prev;
	*prev = *cur;
	*cur = t;
	for (int i = 0; i < n; i++)
		(*cur)[i] = NONE;
}

/* ---- buckets -------------------------------------------------------------- */

static int unit_of(const zb_model *m, int64_t param)
{
	int lo = 0, hi = zb_model_units(m) - 1;
	while (lo < hi) { /* last unit whose offset <= param */
		int mid = (lo + hi + 1) / 2;
		if (zb_model_unit_offset(m, mid) <= param)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void cut_buckets(zb_graph *g, const zb_model *m, int64_t lo, int64_t hi, int64_t size,
			int on_cpu)
{
	for (int64_t top = hi; top > lo;) {
		int64_t start = top - size > lo ? top - size : lo;
		zb_bucket *bu = &g->buckets[g->nbuckets++];
		bu->param_offset = start;
		bu->params = top - start;
		bu->on_cpu = on_cpu;
		bu->first_unit = unit_of(m, start);
		bu->last_unit = unit_of(m, top - 1);
		top = start;
	}
}

static void make_buckets(zb_graph *g, const zb_config *c)
{
	const zb_policy *p = &c->policy;
	int64_t P = g->params, size = p->bucket_params;
	double r = p->kind == ZB_POLICY_NONE ? 0.0 : p->ratio;
	g->cpu_params = (int64_t)llround(r * (double)P);
	int64_t split = P - g->cpu_params;
	int64_t most = (g->cpu_params + size - 1) / size + (split + size - 1) / size + 2;
	g->buckets = zb_xcalloc((size_t)most, sizeof *g->buckets);
	g->nbuckets = 0;
	cut_buckets(g, &c->model, split, P, size, 1); /* CPU part: the top, ready first */
	cut_buckets(g, &c->model, 0, split, size, 0);
}

/* ---- entry point ---------------------------------------------------------- */

zb_status zb_graph_validate(const zb_config *cfg, zb_error *err)
{
	zb_status st = zb_config_validate(cfg, err);
	if (st)
		return st;
	if (cfg->steps < 1)
		return zb_fail(err, ZB_E_INPUT, "steps %d must be at least 1", cfg->steps);
	if (cfg->policy.offload_param && cfg->policy.kind == ZB_POLICY_DPU)
		return zb_fail(err, ZB_E_INPUT,
			       "policy 'dpu' cannot be combined with --offload-param (DeepSpeed runs delayed "
			       "parameter update with ZeRO stage 1/2 only)");
	if (cfg->policy.offload_param && cfg->policy.kind == ZB_POLICY_NONE)
		return zb_fail(err, ZB_E_INPUT,
			       "--offload-param needs an offload policy (offload, overlap), not 'none'");
	if ((st = zb_limits_schedule(cfg, err)))
		return st;
	return ZB_OK;
}

zb_status zb_graph_build_zbench(zb_graph *g, const zb_config *cfg, zb_error *err)
{
	memset(g, 0, sizeof *g);
	zb_status st = zb_graph_validate(cfg, err);
	if (st)
		return st;

	builder b = { 0 };
	b.g = g;
	b.c = cfg;
	b.m = &cfg->model;
	b.p = &cfg->policy;
	b.units = zb_model_units(b.m);
	b.tokens = (int64_t)b.p->micro_batch * b.p->seq;
	b.grad_bytes = 2;
	b.last_gpu = b.bwd_end = NONE;
	b.family = sched_family_for(cfg);

	g->steps = cfg->steps;
	g->params = zb_model_params(b.m);
	g->grad_bytes_per_param = b.grad_bytes;
	g->tokens_per_step = (double)b.tokens * b.p->gas;
	g->model_flops_per_step = zb_model_flops_per_token(b.m, b.p->seq) * g->tokens_per_step;
	make_buckets(g, cfg);
	sched_ranks_init(&b);

	int U = b.units, NB = g->nbuckets;
	uint32_t *mem = zb_xmalloc(sizeof(uint32_t) * (size_t)(6 * U + 7 * NB));
	uint32_t *q = mem;
	b.grad_ready = q, q += U;
	b.first_grad_write = q, q += U;
	b.fwd_done = q, q += U;
	b.bwd_done = q, q += U;
	b.fetch = q, q += U;
	b.act_down = q, q += U;
	b.update_cur = q, q += NB;
	b.update_prev = q, q += NB;
	b.update_prev2 = q, q += NB;
	b.down_cur = q, q += NB;
	b.down_prev = q, q += NB;
	b.adam_cur = q, q += NB;
	b.adam_prev = q, q += NB;
	for (uint32_t *i = mem; i < q; i++)
		*i = NONE;
	b.pending_up = zb_xcalloc((size_t)NB, sizeof(int));
	b.unit_bucket_lo = zb_xmalloc(sizeof(int) * (size_t)U);
	b.unit_bucket_hi = zb_xmalloc(sizeof(int) * (size_t)U);
	for (int u = 0; u < U; u++) {
		int64_t lo = zb_model_unit_offset(b.m, u), hi = lo + zb_model_unit_params(b.m, u);
		b.unit_bucket_lo[u] = NB;
		b.unit_bucket_hi[u] = -1;
		for (int bk = 0; bk < NB; bk++) {
			const zb_bucket *bu = &g->buckets[bk];
			if (bu->param_offset < hi && bu->param_offset + bu->params > lo) {
				if (bk < b.unit_bucket_lo[u])
					b.unit_bucket_lo[u] = bk;
				b.unit_bucket_hi[u] = bk;
			}
		}
	}

	for (int s = 0; s < cfg->steps; s++) {
		for (int u = 0; u < U; u++)
			b.first_grad_write[u] = NONE;
		for (int mb = 0; mb < b.p->gas; mb++)
			micro_batch(&b, s, mb);
		if (b.family->backward_done)
			b.family->backward_done(&b, s);
		sched_ranks_gather_due(&b, s);
		/* dpu: buckets whose delayed upload was not emitted during this step's
		 * backward (none are left, every bucket has a lowest unit) */
		memcpy(b.update_prev2, b.update_prev, sizeof(uint32_t) * (size_t)NB);
		rotate(&b.update_cur, &b.update_prev, NB);
		rotate(&b.down_cur, &b.down_prev, NB);
		rotate(&b.adam_cur, &b.adam_prev, NB);
	}
	if (b.family->finish)
		b.family->finish(&b);
	sched_ranks_gather_due(&b, cfg->steps - 1);
	sched_ranks_free(&b);

	free(mem);
	free(b.pending_up);
	free(b.unit_bucket_lo);
	free(b.unit_bucket_hi);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		g->copy_bytes[r] /= cfg->steps;
	return ZB_OK;
}
