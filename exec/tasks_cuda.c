/*
 * tasks_cuda.c - one task of the schedule on the GPU or the CPU pool (exec_cuda.h):
 * a GEMM with the layer's shape (cuBLASLt), a memory-bound kernel, a pinned or
 * pageable copy, a GPU or CPU Adam over a bucket. Weights are real slices of
 * params16, laid out per unit by exec_layout_of.
 */
#include "exec/exec_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/flash_attn.h"
#include "exec/kernels.h"

unit_layout exec_layout_of(const exec *x, int unit)
{
	const zb_model *m = &x->c->model;
	unit_layout l;
	memset(&l, -1, sizeof l);
	int64_t o = zb_model_unit_offset(m, unit), h = x->h, bias = m->bias;
	if (unit == 0) {
		l.wte = o;
		l.wpe = m->max_seq > 0 ? o + x->V * h : -1;
	} else if (unit <= m->layers) {
		int64_t qkv = h + 2 * x->kv;
		l.qkv_w = o, o += qkv * h;
		if (bias) l.qkv_b = o, o += qkv;
		l.proj_w = o, o += h * h;
		if (bias) l.proj_b = o, o += h;
		l.fc1_w = o, o += x->F * h;
		if (bias) l.fc1_b = o, o += x->F;
		l.fc2_w = o, o += h * x->f;
		if (bias) l.fc2_b = o, o += h;
		l.n1_g = o, o += h;
		if (bias) l.n1_b = o, o += h;
		l.n2_g = o, o += h;
		if (bias) l.n2_b = o, o += h;
	} else {
		l.nf_g = o, o += h;
		if (bias) l.nf_b = o, o += h;
		l.lm_w = m->tied_embeddings ? zb_model_unit_offset(m, 0) : o;
	}
	return l;
}


/* ---- GPU compute ----------------------------------------------------------------- */

/* The linear layer of an op in a block: weight offset and (out, in). */
static void linear_of(const exec *x, const zb_task *t, int64_t *w, int64_t *out, int64_t *in)
{
	unit_layout l = exec_layout_of(x, t->unit);
	switch (t->op) {
	case ZB_OP_QKV: *w = l.qkv_w, *out = x->h + 2 * x->kv, *in = x->h; return;
	case ZB_OP_PROJ: *w = l.proj_w, *out = x->h, *in = x->h; return;
	case ZB_OP_FC1: *w = l.fc1_w, *out = x->F, *in = x->h; return;
	case ZB_OP_FC2: *w = l.fc2_w, *out = x->h, *in = x->f; return;
	default: *w = l.lm_w, *out = x->V, *in = x->h; return;
	}
}

/* Fused attention on the packed QKV scratch [T, h + 2 kv]: forward writes O and
 * lse; backward reads dO from dX (the projection's input gradient) and writes dQ, dK,
 * dV packed into dY, which the QKV backward GEMMs read. */
static zb_status run_flash(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	const zb_model *m = &x->c->model;
	zb_flash_shape sh = { (int)x->c->policy.micro_batch, (int)x->s, m->heads, m->kv_heads, (int)x->d, 1,
			      1.0f / sqrtf((float)x->d) };
	int64_t ld = x->h + 2 * x->kv;
	const uint16_t *q = x->QKV, *k = x->QKV + x->h, *v = x->QKV + x->h + x->kv;
	if (t->pass == ZB_PASS_FWD || t->pass == ZB_PASS_RECOMPUTE)
		return zb_flash_fwd(&sh, q, ld, k, ld, v, ld, x->O, x->h, x->lse, dp->stream, &dp->err);
	return zb_flash_bwd(&sh, q, ld, k, ld, v, ld, x->O, x->h, x->dX, x->h, x->lse, x->dY, ld, x->dY + x->h, ld,
			    x->dY + x->h + x->kv, ld, x->fa_ws, dp->stream, &dp->err);
}

zb_status exec_run_gemm(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	zb_gemm_op op;
	zb_dtype dt = x->c->policy.dtype;
	int tied = t->op == ZB_OP_LMHEAD && x->c->model.tied_embeddings;
	if (t->op == ZB_OP_ATTN)
		return run_flash(dp, t);
	if (t->op == ZB_OP_SCORES || t->op == ZB_OP_CONTEXT) {
		/* attention: batched over micro-batch x heads, operands in scratch */
		zb_gemm_op_init(&op, dt, 0, 0, t->m, t->n, t->k);
		op.batch = t->batch;
		op.stride_a = (int64_t)t->m * t->k;
		op.stride_b = (int64_t)t->k * t->n;
		op.stride_c = (int64_t)t->m * t->n;
		/* A (s x d or d x s per head) always fits the QKV scratch; B contracts
		 * over the sequence (the probabilities) or over the head dimension; C is
		 * a score matrix or a head output. No operand aliases another. */
		int fwd = t->pass == ZB_PASS_FWD || t->pass == ZB_PASS_RECOMPUTE;
		int scores_out = t->m == x->s && t->n == x->s;
		const uint16_t *A = x->QKV;
		const uint16_t *B = t->k == x->s ? x->S : fwd ? x->QKV + x->T * x->h : x->O;
		uint16_t *C = scores_out ? (fwd ? x->S : x->dS) : (fwd ? x->O : x->dY);
		return zb_gemm_run(dp->gemm, &op, A, B, C, dp->stream, &dp->err);
	}
	int64_t w, out, in;
	linear_of(x, t, &w, &out, &in);
	const uint16_t *W = x->params16 + w;
	int64_t lw = tied ? in : out; /* a tied head reuses wte, stored [V, h] row-major */
	switch (t->pass) {
	case ZB_PASS_FWD:
	case ZB_PASS_RECOMPUTE: {
		/* Y[out x T] = W X */
		zb_gemm_op_init(&op, dt, tied, 0, (int)out, (int)x->T, (int)in);
		op.lda = lw;
		const uint16_t *B = t->op == ZB_OP_FC2 ? x->H2 : t->op == ZB_OP_PROJ ? x->O : x->N;
		uint16_t *C = t->op == ZB_OP_QKV ? x->QKV : t->op == ZB_OP_FC1 ? x->H :
			      t->op == ZB_OP_LMHEAD ? x->logits : x->Y;
		return zb_gemm_run(dp->gemm, &op, W, B, C, dp->stream, &dp->err);
	}
	case ZB_PASS_BWD_DATA: {
		/* dX[in x T] = W^T dY */
		zb_gemm_op_init(&op, dt, !tied, 0, (int)in, (int)x->T, (int)out);
		op.lda = lw;
		const uint16_t *B = t->op == ZB_OP_LMHEAD ? x->logits : t->op == ZB_OP_FC1 ? x->dH : x->dY;
		uint16_t *C = t->op == ZB_OP_FC2 ? x->H2 /* dH2, read by ACT backward */ : x->dX;
		return zb_gemm_run(dp->gemm, &op, W, B, C, dp->stream, &dp->err);
	}
	default: {
		/* dW[out x in] = dY X^T, into the unit's gradient slice; a tied head
		 * writes the transposed product into wte's layout (same work) */
		const uint16_t *dY = t->op == ZB_OP_LMHEAD ? x->logits : t->op == ZB_OP_FC1 ? x->dH : x->dY;
		const uint16_t *X = t->op == ZB_OP_FC2 ? x->H2 : t->op == ZB_OP_PROJ ? x->O : x->N;
		if (tied) {
			zb_gemm_op_init(&op, dt, 0, 1, (int)in, (int)out, (int)x->T);
			return zb_gemm_run(dp->gemm, &op, X, dY, x->grads16 + w, dp->stream, &dp->err);
		}
		zb_gemm_op_init(&op, dt, 0, 1, (int)out, (int)in, (int)x->T);
		return zb_gemm_run(dp->gemm, &op, dY, X, x->grads16 + w, dp->stream, &dp->err);
	}
	}
}

static zb_status norm_fwd(dispatcher *dp, int64_t g_off, int64_t b_off, const uint16_t *in, uint16_t *out)
{
	exec *x = dp->x;
	if (x->c->model.bias)
		return zb_layernorm_fwd(out, x->mean, x->rstd, in, x->params16 + g_off,
					b_off >= 0 ? x->params16 + b_off : NULL, (int)x->T, (int)x->h, 1e-5f,
					dp->stream, &dp->err);
	return zb_rmsnorm_fwd(out, x->rstd, in, x->params16 + g_off, (int)x->T, (int)x->h, 1e-5f, dp->stream,
			      &dp->err);
}

/* Norm backward: input gradient in dX, gain (and bias) gradients cast into grads16. */
static zb_status norm_bwd(dispatcher *dp, int64_t g_off, int64_t b_off)
{
	exec *x = dp->x;
	zb_status st;
	int h = (int)x->h;
	ZB_CUDA_TRY(&dp->err, cudaMemsetAsync(x->dgain, 0, 2 * sizeof(float) * h, dp->stream));
	if (x->c->model.bias)
		st = zb_layernorm_bwd(x->dX, x->dgain, b_off >= 0 ? x->dbias : NULL, x->dY, x->X,
				      x->params16 + g_off, x->mean, x->rstd, (int)x->T, h, dp->stream, &dp->err);
	else
		st = zb_rmsnorm_bwd(x->dX, x->dgain, x->dY, x->X, x->params16 + g_off, x->rstd, (int)x->T, h,
				    dp->stream, &dp->err);
	if (!st)
		st = zb_cast_f32_bf16(x->grads16 + g_off, x->dgain, (size_t)h, dp->stream, &dp->err);
	if (!st && b_off >= 0)
		st = zb_cast_f32_bf16(x->grads16 + b_off, x->dbias, (size_t)h, dp->stream, &dp->err);
	return st;
}

zb_status exec_run_kernel(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	const zb_model *m = &x->c->model;
	unit_layout l = exec_layout_of(x, t->unit);
	int fwd = t->pass == ZB_PASS_FWD || t->pass == ZB_PASS_RECOMPUTE;
	size_t Th = (size_t)(x->T * x->h);
	float scale = 1.0f / sqrtf((float)x->d);
	zb_error *e = &dp->err;
	cudaStream_t s = dp->stream;
	switch (t->op) {
	case ZB_OP_EMBED:
		if (fwd)
			return zb_embed_fwd(x->X, x->tokens, x->params16 + l.wte, l.wpe >= 0 ? x->params16 + l.wpe : NULL,
					    (int)x->T, (int)x->s, (int)x->h, (int)x->V, s, e);
		if (!m->tied_embeddings) /* a tied head's weight gradient already fills wte's slice */
			ZB_CUDA_TRY(e, cudaMemsetAsync(x->grads16 + l.wte, 0, (size_t)zb_model_unit_params(m, 0) * 2, s));
		return zb_embed_bwd_bf16(x->grads16 + l.wte, l.wpe >= 0 ? x->grads16 + l.wpe : NULL, x->tokens, x->dX,
					 (int)x->T, (int)x->s, (int)x->h, (int)x->V, s, e);
	case ZB_OP_NORM1:
	case ZB_OP_NORM2:
	case ZB_OP_NORMF: {
		int64_t g = t->op == ZB_OP_NORM1 ? l.n1_g : t->op == ZB_OP_NORM2 ? l.n2_g : l.nf_g;
		int64_t b = t->op == ZB_OP_NORM1 ? l.n1_b : t->op == ZB_OP_NORM2 ? l.n2_b : l.nf_b;
		return fwd ? norm_fwd(dp, g, b, x->X, x->N) : norm_bwd(dp, g, b);
	}
	case ZB_OP_SOFTMAX:
		return fwd ? zb_softmax_fwd(x->S, (int)x->bh, (int)x->s, scale, 1, s, e)
			   : zb_softmax_bwd(x->dS, x->dS, x->S, (int)x->bh, (int)x->s, scale, 1, s, e);
	case ZB_OP_RESID:
		return fwd ? zb_residual_add(x->X, x->X, x->Y, Th, s, e) : zb_residual_add(x->dY, x->dY, x->dX, Th, s, e);
	case ZB_OP_ACT:
		if (m->gated_mlp)
			return fwd ? zb_swiglu_fwd(x->H2, x->H, (int)x->T, (int)x->f, s, e)
				   : zb_swiglu_bwd(x->dH, x->H2, x->H, (int)x->T, (int)x->f, s, e);
		return fwd ? zb_gelu_fwd(x->H2, x->H, (size_t)(x->T * x->f), s, e)
			   : zb_gelu_bwd(x->dH, x->H2, x->H, (size_t)(x->T * x->f), s, e);
	case ZB_OP_LOSS:
		return zb_cross_entropy(x->logits, x->losses, x->loss_mean, x->logits, x->tokens, (int)x->T, (int)x->V,
					1.0f / (float)(x->T * x->c->policy.gas), s, e);
	case ZB_OP_GRAD_ACC: {
		int64_t off = zb_model_unit_offset(m, t->unit), n = zb_model_unit_params(m, t->unit);
		zb_status st = zb_grad_acc_f32(x->acc + off, x->grads16 + off, (size_t)n, s, e);
		if (!st && t->micro == x->c->policy.gas - 1) {
			/* last micro-batch: the sum becomes the gradient that is sent or applied */
			st = zb_cast_f32_bf16(x->grads16 + off, x->acc + off, (size_t)n, s, e);
			if (!st)
				ZB_CUDA_TRY(e, cudaMemsetAsync(x->acc + off, 0, (size_t)n * sizeof(float), s));
		}
		return st;
	}
	default:
		return zb_fail(e, ZB_E_INTERNAL, "task %u: no kernel for op %s", t->id, zb_op_name(t->op));
	}
}

/* ---- copies and optimizers ------------------------------------------------------- */

/* Check mode: the gradient of parameter i at step t is fixed by (seed, t, i). */

static zb_status synth_grads(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	uint64_t seed = exec_grad_seed(x, t->step) + (uint64_t)t->param_offset * 0x9e3779b97f4a7c15ull;
	return zb_fill_uniform_bf16(x->grads16 + t->param_offset, (size_t)t->params, seed, GRAD_LO, GRAD_HI,
				    dp->stream, &dp->err);
}

/* A copy on the dispatcher's stream, paced under --link-rate (exec/pacing.h). */
static zb_status copy_async(dispatcher *dp, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
	if (dp->pacer)
		return zb_pacer_copy(dp->pacer, dst, src, bytes, dp->stream, &dp->err);
	ZB_CUDA_TRY(&dp->err, cudaMemcpyAsync(dst, src, bytes, kind, dp->stream));
	return ZB_OK;
}

zb_status exec_run_copy(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	zb_error *e = &dp->err;
	size_t bytes = (size_t)t->bytes;
	int64_t o, n; /* this rank's part (exec_task_range: the task's own with one rank) */
	exec_task_range(x, t, &o, &n);
	if (x->nranks > 1)
		bytes = (size_t)n * 2;
	switch (t->op) {
	case ZB_OP_GRAD_DOWN:
		if (x->o->check) {
			zb_status st = synth_grads(dp, t);
			if (st)
				return st;
		}
		return copy_async(dp, x->hgrad + (o - x->split), x->grads16 + o, bytes, cudaMemcpyDeviceToHost);
	case ZB_OP_PARAM_UP:
	case ZB_OP_PARAM_FETCH:
		return copy_async(dp, x->params16 + o, x->hparam16 + (o - x->split), bytes, cudaMemcpyHostToDevice);
	case ZB_OP_ACT_DOWN:
		return copy_async(dp, x->hact + (size_t)(t->unit - 1) * x->T * x->h, x->X, bytes, cudaMemcpyDeviceToHost);
	case ZB_OP_ACT_UP:
		return copy_async(dp, x->Xsave, x->hact + (size_t)(t->unit - 1) * x->T * x->h, bytes, cudaMemcpyHostToDevice);
	default:
		return zb_fail(e, ZB_E_INTERNAL, "task %u: no copy for op %s", t->id, zb_op_name(t->op));
	}
}

zb_status exec_run_gpu_adam(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	if (x->o->check) {
		zb_status st = synth_grads(dp, t);
		if (st)
			return st;
	}
	int64_t o, n;
	exec_task_range(x, t, &o, &n);
	zb_adam_buffers b = { x->grads16 + o, x->gmaster + o, x->gm + o, x->gv + o, x->params16 + o };
	return zb_gpu_adam_step_coeffs(&x->coeffs[t->step], x->adam.grad_type, x->adam.param_type, &b, n,
				       dp->stream, &dp->err);
}

zb_status exec_run_cpu_adam(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	int64_t o, n;
	exec_task_range(x, t, &o, &n);
	o -= x->split;
	zb_adam_params p = x->adam;
	p.step = t->step + 1;
	zb_adam_buffers b = { x->hgrad + o, x->hmaster + o, x->hm + o, x->hv + o, x->hparam16 + o };
	return zb_cpu_adam_step(x->pool, &p, &b, n, &dp->err);
}
