/*
 * executor_cuda.c - runs a schedule on the GPU, its copy engines and the CPU; see
 * executor.h for the model of execution.
 *
 * Memory (allocated once, checked against free memory first):
 *   device  params16[P], grads16[P] (the flat vectors the buckets index), fp32
 *           master/m/v of the GPU-updated share [0, split), an fp32 gradient
 *           accumulator with gas > 1, activation scratch sized by the largest task
 *   host    16-bit gradients, fp32 master/m/v and 16-bit parameters of the CPU share
 *           [split, P) (pinned unless --pageable), activation checkpoints (ckpt cpu)
 * Weights are real slices of params16 (each unit laid out as in unit_layout());
 * activations flow through scratch buffers reused by every layer: the shapes and
 * the bytes moved are the model's, the forward values are not a trained network's.
 * Bias additions are not executed (their parameters are updated like the others).
 *
 * Precision check (--check): every gradient the optimizer reads is replaced, right
 * before it is read, by a fixed pseudo-random value of (step, parameter index);
 * afterwards the fp32 master weights are compared with a double-precision Adam run
 * on the same gradients at a sample of indices, and the 16-bit parameters with the
 * master weights rounded to nearest even.
 */
#include "exec/executor.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/cpu_adam.h"
#include "exec/cuda_check.h"
#include "exec/flash_attn.h"
#include "exec/pacing.h"
#include "exec/gemm.h"
#include "exec/gpu_adam.h"
#include "exec/kernels.h"
#include "exec/threadpool.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "sim/attention.h"
#include "sim/engine.h"
#include "sim/model.h"

enum { T_PENDING = 0, T_ISSUED, T_DONE, T_SKIPPED };

#define CHECK_SAMPLES 1000000
#define GRAD_LO -1e-2f
#define GRAD_HI 1e-2f

typedef struct exec exec;

typedef struct dispatcher {
	exec *x;
	int resource;
	cudaStream_t stream;
	zb_gemm *gemm;       /* GPU compute only */
	zb_pacer *pacer;     /* copy streams under --link-rate, else NULL */
	pthread_t thread;
	zb_error err;
	zb_status status;
} dispatcher;

struct exec {
	const zb_graph *g;
	const zb_config *c;
	const zb_exec_options *o;
	zb_exec_result *r;
	int64_t P, split, T, h, kv, f, F, V, s, d, bh;

	/* device */
	uint16_t *params16, *grads16;
	float *gmaster, *gm, *gv, *acc;
	int32_t *tokens;
	uint16_t *X, *N, *Y, *QKV, *S, *O, *H, *H2, *logits, *dX, *dY, *dH, *dS, *Xsave;
	float *mean, *rstd, *losses, *loss_mean, *dgain, *dbias;
	int flash;                      /* fused attention: lse and workspace, no S/dS matrices */
	float *lse;
	void *fa_ws;
	int64_t nS;                     /* elements of S and dS (1 with flash) */
	/* host */
	uint16_t *hgrad, *hparam16, *hact;
	float *hmaster, *hm, *hv;
	int pinned;

	zb_pool *pool;
	zb_adam_params adam;
	zb_gpu_adam_coeffs *coeffs; /* per step */

	/* task state and timing */
	volatile int *state;
	cudaEvent_t *ev_start, *ev_end; /* per task (GPU-side resources) */
	int64_t *host_start, *host_end; /* CPU tasks, ns */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_step;                  /* first step not started (INT32_MAX: run all) */
	int gpu_step;                   /* step of the last GPU compute task dispatched */
	int failed;
	int64_t t0_ns;
	cudaEvent_t ref;
	int64_t ref_ns;
};

/* ---- small helpers ------------------------------------------------------------ */

static int is_gpu_side(int res) { return res != ZB_RES_CPU; }

static void set_state(exec *x, uint32_t id, int st)
{
	pthread_mutex_lock(&x->mu);
	x->state[id] = st;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* Wait until dependency `dep` was issued (GPU side) or done (CPU); returns its
 * state, T_SKIPPED when it will never run or the run failed. */
static int wait_dep(exec *x, uint32_t dep)
{
	int need = is_gpu_side(x->g->tasks[dep].resource) ? T_ISSUED : T_DONE;
	pthread_mutex_lock(&x->mu);
	while (x->state[dep] < need && !x->failed)
		pthread_cond_wait(&x->cv, &x->mu);
	int st = x->failed ? T_SKIPPED : x->state[dep];
	pthread_mutex_unlock(&x->mu);
	return st;
}

static void fail_run(exec *x)
{
	pthread_mutex_lock(&x->mu);
	x->failed = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* Offsets of a unit's tensors inside its slice of the flat parameter vector;
 * the sizes add up to zb_model_unit_params(). */
typedef struct unit_layout {
	int64_t qkv_w, qkv_b, proj_w, proj_b, fc1_w, fc1_b, fc2_w, fc2_b, n1_g, n1_b, n2_g, n2_b;
	int64_t nf_g, nf_b, lm_w;       /* head */
	int64_t wte, wpe;               /* embeddings */
} unit_layout;

static unit_layout layout_of(const exec *x, int unit)
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
	unit_layout l = layout_of(x, t->unit);
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

static zb_status run_gemm(dispatcher *dp, const zb_task *t)
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

static zb_status run_kernel(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	const zb_model *m = &x->c->model;
	unit_layout l = layout_of(x, t->unit);
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
static uint64_t grad_seed(const exec *x, int step) { return x->o->seed * 1000003ull + (uint64_t)step * 7919ull; }

static zb_status synth_grads(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	uint64_t seed = grad_seed(x, t->step) + (uint64_t)t->param_offset * 0x9e3779b97f4a7c15ull;
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

static zb_status run_copy(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	zb_error *e = &dp->err;
	size_t bytes = (size_t)t->bytes;
	switch (t->op) {
	case ZB_OP_GRAD_DOWN:
		if (x->o->check) {
			zb_status st = synth_grads(dp, t);
			if (st)
				return st;
		}
		return copy_async(dp, x->hgrad + (t->param_offset - x->split), x->grads16 + t->param_offset, bytes,
				  cudaMemcpyDeviceToHost);
	case ZB_OP_PARAM_UP:
	case ZB_OP_PARAM_FETCH:
		return copy_async(dp, x->params16 + t->param_offset, x->hparam16 + (t->param_offset - x->split), bytes,
				  cudaMemcpyHostToDevice);
	case ZB_OP_ACT_DOWN:
		return copy_async(dp, x->hact + (size_t)(t->unit - 1) * x->T * x->h, x->X, bytes, cudaMemcpyDeviceToHost);
	case ZB_OP_ACT_UP:
		return copy_async(dp, x->Xsave, x->hact + (size_t)(t->unit - 1) * x->T * x->h, bytes, cudaMemcpyHostToDevice);
	default:
		return zb_fail(e, ZB_E_INTERNAL, "task %u: no copy for op %s", t->id, zb_op_name(t->op));
	}
}

static zb_status run_gpu_adam(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	if (x->o->check) {
		zb_status st = synth_grads(dp, t);
		if (st)
			return st;
	}
	int64_t o = t->param_offset;
	zb_adam_buffers b = { x->grads16 + o, x->gmaster + o, x->gm + o, x->gv + o, x->params16 + o };
	return zb_gpu_adam_step_coeffs(&x->coeffs[t->step], x->adam.grad_type, x->adam.param_type, &b, t->params,
				       dp->stream, &dp->err);
}

static zb_status run_cpu_adam(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	int64_t o = t->param_offset - x->split;
	zb_adam_params p = x->adam;
	p.step = t->step + 1;
	zb_adam_buffers b = { x->hgrad + o, x->hmaster + o, x->hm + o, x->hv + o, x->hparam16 + o };
	return zb_cpu_adam_step(x->pool, &p, &b, t->params, &dp->err);
}

/* ---- dispatchers ------------------------------------------------------------------ */

/* Tracing: a host wait of task for dep that began at w0 becomes a span when it
 * lasted over 1 us (shorter ones are the cost of looking); returns now. */
static int64_t note_wait(zb_span_buf *sb, uint32_t task, uint32_t dep, int64_t w0)
{
	int64_t w1 = zb_now_ns();
	if (w1 - w0 > 1000)
		zb_span_add(sb, ZB_SPAN_WAIT, (int32_t)task, (int32_t)dep, w0, w1);
	return w1;
}

/* Tracing: a CPU task's span and each pool worker's share of it (zb_pool_spans of
 * the run that just ended), the workers on virtual threads. */
static void note_cpu_task(exec *x, zb_span_buf *sb, zb_span_buf **wk, const zb_task *t)
{
	zb_span_add(sb, ZB_SPAN_TASK, (int32_t)t->id, -1, x->host_start[t->id], x->host_end[t->id]);
	const zb_pool_span *ps = zb_pool_spans(x->pool);
	for (int i = 0; i < zb_pool_threads(x->pool); i++) {
		if (ps[i].items == 0 || ps[i].start_ns < x->host_start[t->id])
			continue; /* idle in this run, or the spans of an earlier run (an empty task) */
		if (!wk[i]) {
			char name[48];
			snprintf(name, sizeof name, "zb-pool-%d (cpu %d)", i, zb_pool_cpu(x->pool, i));
			wk[i] = zb_spans_virtual(x->o->spans, name, i);
		}
		zb_span_add(wk[i], ZB_SPAN_WORKER, (int32_t)t->id, -1, ps[i].start_ns, ps[i].end_ns);
	}
}

static int should_skip(exec *x, const zb_task *t)
{
	pthread_mutex_lock(&x->mu);
	if (t->resource == ZB_RES_GPU) {
		int first_of_step = t->step != x->gpu_step;
		x->gpu_step = t->step;
		/* the compute stream notices a stop request first; the step it is in
		 * is finished, no later step starts */
		if (x->o->stop && *x->o->stop && x->stop_step == INT32_MAX)
			x->stop_step = first_of_step ? t->step : t->step + 1;
	}
	int skip = t->step >= x->stop_step || x->failed;
	pthread_mutex_unlock(&x->mu);
	return skip;
}

static void *dispatch(void *arg)
{
	dispatcher *dp = arg;
	exec *x = dp->x;
	const zb_graph *g = x->g;
	zb_status st = ZB_OK;
	if (cudaSetDevice(0) != cudaSuccess) {
		dp->status = zb_fail(&dp->err, ZB_E_CUDA, "cudaSetDevice failed in dispatcher");
		fail_run(x);
		return NULL;
	}
	/* tracing: this thread's span buffer, the pool workers' (CPU), the task tag */
	zb_span_buf *sb = NULL, **wk = NULL;
	int tagged = 0;
	if (x->o->spans) {
		char name[32];
		snprintf(name, sizeof name, "zb-disp-%s", zb_resource_name(dp->resource));
		sb = zb_spans_thread(x->o->spans, name);
		if (dp->resource == ZB_RES_CPU)
			wk = zb_xcalloc((size_t)zb_pool_threads(x->pool), sizeof *wk);
	}
	for (size_t i = 0; i < g->ntasks && !st; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->resource != dp->resource)
			continue;
		if (tagged) { /* the previous task's calls are over */
			zb_trace_pop_task();
			tagged = 0;
		}
		if (x->o->trace) {
			zb_trace_push_task(t->id);
			tagged = 1;
		}
		int skip = should_skip(x, t);
		const uint32_t *deps = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count && !skip; j++) {
			uint32_t d = deps[j];
			int64_t w0 = sb ? zb_now_ns() : 0;
			if (wait_dep(x, d) == T_SKIPPED) {
				skip = 1;
				break;
			}
			if (sb)
				w0 = note_wait(sb, t->id, d, w0);
			int dres = g->tasks[d].resource;
			if (dres == dp->resource)
				continue; /* same stream or same thread: already ordered */
			if (dp->resource == ZB_RES_CPU) {
				if (is_gpu_side(dres) && cudaEventSynchronize(x->ev_end[d]) != cudaSuccess)
					st = zb_fail(&dp->err, ZB_E_CUDA, "waiting for task %u failed", d);
				if (sb)
					note_wait(sb, t->id, d, w0);
			} else if (is_gpu_side(dres)) {
				if (cudaStreamWaitEvent(dp->stream, x->ev_end[d], 0) != cudaSuccess)
					st = zb_fail(&dp->err, ZB_E_CUDA, "cudaStreamWaitEvent for task %u failed", d);
			} /* a CPU dependency of a GPU task: wait_dep already waited for it */
		}
		if (st)
			break;
		if (skip) {
			set_state(x, t->id, T_SKIPPED);
			continue;
		}
		if (dp->resource == ZB_RES_CPU) {
			x->host_start[t->id] = zb_now_ns();
			st = run_cpu_adam(dp, t);
			x->host_end[t->id] = zb_now_ns();
			if (!st && sb)
				note_cpu_task(x, sb, wk, t);
			if (!st)
				set_state(x, t->id, T_DONE);
			continue;
		}
		int64_t issue0 = sb ? zb_now_ns() : 0;
		if (cudaEventRecord(x->ev_start[t->id], dp->stream) != cudaSuccess) {
			st = zb_fail(&dp->err, ZB_E_CUDA, "cudaEventRecord failed for task %u", t->id);
			break;
		}
		switch (t->kind) {
		case ZB_TASK_GEMM: st = run_gemm(dp, t); break;
		case ZB_TASK_KERNEL: st = run_kernel(dp, t); break;
		case ZB_TASK_COPY: st = run_copy(dp, t); break;
		case ZB_TASK_GPU_ADAM: st = run_gpu_adam(dp, t); break;
		default: st = zb_fail(&dp->err, ZB_E_INTERNAL, "task %u: unknown kind %d", t->id, t->kind);
		}
		if (!st && cudaEventRecord(x->ev_end[t->id], dp->stream) != cudaSuccess)
			st = zb_fail(&dp->err, ZB_E_CUDA, "cudaEventRecord failed for task %u", t->id);
		if (!st)
			set_state(x, t->id, T_ISSUED);
		if (!st && sb)
			zb_span_add(sb, ZB_SPAN_ISSUE, (int32_t)t->id, -1, issue0, zb_now_ns());
	}
	if (tagged)
		zb_trace_pop_task();
	free(wk);
	if (!st && is_gpu_side(dp->resource) && cudaStreamSynchronize(dp->stream) != cudaSuccess)
		st = zb_fail(&dp->err, ZB_E_CUDA, "%s stream failed: %s", zb_resource_name(dp->resource),
			     cudaGetErrorString(cudaGetLastError()));
	dp->status = st;
	if (st)
		fail_run(x);
	return NULL;
}

/* ---- setup ----------------------------------------------------------------------- */

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Bytes the executor will allocate on the device and pin on the host. */
static void plan_bytes(const exec *x, double *dev, double *host)
{
	double P = (double)x->P, G = (double)x->split, C = P - G, T = (double)x->T, h = (double)x->h;
	double qkv = T * (h + 2 * x->kv), S = (double)x->nS, HH = T * x->F;
	*dev = 2 * P + 2 * P + 12 * G + (x->c->policy.gas > 1 ? 4 * P : 0) + 4 * T /* tokens */ +
	       2 * (5 * T * h /* X N Y O Xsave */ + 2 * qkv + 2 * S + 3 * HH + T * x->V + 2 * T * h) +
	       4 * (4 * T + 2 * h) + ZB_GEMM_WORKSPACE_BYTES +
	       (x->flash ? 4.0 * x->bh * x->s /* lse */ + 4.0 * (x->d + 1) * x->bh * x->s /* workspace */ : 0);
	*host = 16 * C + (x->c->policy.ckpt == ZB_CKPT_CPU ? 2 * T * h * x->c->model.layers : 0);
}

static double host_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	double kb = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

static zb_status host_alloc(exec *x, void **p, size_t bytes, zb_error *err)
{
	if (x->pinned) {
		cudaError_t e = cudaMallocHost(p, bytes ? bytes : 1);
		if (e != cudaSuccess)
			return zb_fail(err, ZB_E_NOMEM, "cannot pin %.2f GiB of host memory: %s", bytes / 1073741824.0,
				       cudaGetErrorString(e));
		return ZB_OK;
	}
	*p = aligned_alloc(64, ((bytes ? bytes : 1) + 63) / 64 * 64);
	return *p ? ZB_OK : zb_fail(err, ZB_E_NOMEM, "cannot allocate %.2f GiB of host memory", bytes / 1073741824.0);
}

static void host_free(exec *x, void *p)
{
	if (!p)
		return;
	if (x->pinned)
		cudaFreeHost(p);
	else
		free(p);
}

#define DEV(ptr, count, type) ZB_CUDA_MALLOC(err, (void **)&x->ptr, (size_t)(count) * sizeof(type))

static zb_status allocate(exec *x, zb_error *err)
{
	size_t Th = (size_t)(x->T * x->h), qkv = (size_t)(x->T * (x->h + 2 * x->kv));
	size_t S = (size_t)x->nS, HH = (size_t)(x->T * x->F);
	if (x->flash) {
		zb_flash_shape sh = { (int)x->c->policy.micro_batch, (int)x->s, x->c->model.heads, x->c->model.kv_heads,
				      (int)x->d, 1, 1.0f };
		DEV(lse, x->bh * x->s, float);
		DEV(fa_ws, zb_flash_bwd_workspace(&sh), char);
	}
	DEV(params16, x->P, uint16_t);
	DEV(grads16, x->P, uint16_t);
	if (x->split > 0) {
		DEV(gmaster, x->split, float);
		DEV(gm, x->split, float);
		DEV(gv, x->split, float);
	}
	if (x->c->policy.gas > 1)
		DEV(acc, x->P, float);
	DEV(tokens, x->T, int32_t);
	DEV(X, Th, uint16_t);
	DEV(N, Th, uint16_t);
	DEV(Y, max_sz(Th, qkv), uint16_t);
	DEV(O, Th, uint16_t);
	DEV(Xsave, Th, uint16_t);
	DEV(QKV, qkv + Th, uint16_t);
	DEV(S, S, uint16_t);
	DEV(dS, S, uint16_t);
	DEV(H, HH, uint16_t);
	DEV(H2, HH, uint16_t);
	DEV(dH, HH, uint16_t);
	DEV(logits, (size_t)(x->T * x->V), uint16_t);
	DEV(dX, max_sz(Th, HH), uint16_t);
	DEV(dY, max_sz(max_sz(Th, qkv), HH), uint16_t);
	DEV(mean, x->T, float);
	DEV(rstd, x->T, float);
	DEV(losses, x->T, float);
	DEV(loss_mean, 1, float);
	DEV(dgain, 2 * x->h, float);
	x->dbias = x->dgain + x->h;
	int64_t C = x->P - x->split;
	zb_status st;
	if ((st = host_alloc(x, (void **)&x->hgrad, (size_t)C * 2, err)) ||
	    (st = host_alloc(x, (void **)&x->hparam16, (size_t)C * 2, err)) ||
	    (st = host_alloc(x, (void **)&x->hmaster, (size_t)C * 4, err)) ||
	    (st = host_alloc(x, (void **)&x->hm, (size_t)C * 4, err)) ||
	    (st = host_alloc(x, (void **)&x->hv, (size_t)C * 4, err)))
		return st;
	if (x->c->policy.ckpt == ZB_CKPT_CPU &&
	    (st = host_alloc(x, (void **)&x->hact, Th * 2 * (size_t)x->c->model.layers, err)))
		return st;
	return ZB_OK;
}

static void release(exec *x)
{
	void *dev[] = { x->params16, x->grads16, x->gmaster, x->gm, x->gv, x->acc, x->tokens, x->X, x->N, x->Y,
			x->O, x->Xsave, x->QKV, x->S, x->dS, x->H, x->H2, x->dH, x->logits, x->dX, x->dY, x->mean,
			x->rstd, x->losses, x->loss_mean, x->dgain, x->lse, x->fa_ws };
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		if (dev[i])
			cudaFree(dev[i]);
	host_free(x, x->hgrad);
	host_free(x, x->hparam16);
	host_free(x, x->hmaster);
	host_free(x, x->hm);
	host_free(x, x->hv);
	host_free(x, x->hact);
}

/* Random, finite initial values: parameters small, activations unit-scale; the
 * fp32 master weights start equal to the 16-bit parameters, m and v at zero. */
static zb_status initialize(exec *x, cudaStream_t s, zb_error *err)
{
	zb_status st;
	size_t Th = (size_t)(x->T * x->h);
	if ((st = zb_fill_uniform_bf16(x->params16, (size_t)x->P, x->o->seed, -0.02f, 0.02f, s, err)) ||
	    (st = zb_fill_uniform_bf16(x->grads16, (size_t)x->P, x->o->seed + 1, -1e-3f, 1e-3f, s, err)) ||
	    (st = zb_fill_tokens(x->tokens, (size_t)x->T, x->o->seed + 2, (int)x->V, s, err)) ||
	    (st = zb_fill_uniform_bf16(x->X, Th, x->o->seed + 3, -1.0f, 1.0f, s, err)) ||
	    (st = zb_fill_uniform_bf16(x->Xsave, Th, x->o->seed + 4, -1.0f, 1.0f, s, err)))
		return st;
	uint16_t *bufs[] = { x->N, x->Y, x->O, x->QKV, x->H, x->H2, x->dH, x->dX, x->dY, x->S, x->dS, x->logits };
	size_t Y = (size_t)(x->T * (x->h + 2 * x->kv)), HH = (size_t)(x->T * x->F);
	size_t sizes[] = { Th, max_sz(Th, Y), Th, Y + Th, HH, HH, HH, max_sz(Th, HH), max_sz(max_sz(Th, Y), HH),
			   (size_t)x->nS, (size_t)x->nS, (size_t)(x->T * x->V) };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if ((st = zb_fill_uniform_bf16(bufs[i], sizes[i], x->o->seed + 10 + i, -0.5f, 0.5f, s, err)))
			return st;
	if (x->split > 0) {
		if ((st = zb_cast_bf16_f32(x->gmaster, x->params16, (size_t)x->split, s, err)))
			return st;
		ZB_CUDA_TRY(err, cudaMemsetAsync(x->gm, 0, (size_t)x->split * 4, s));
		ZB_CUDA_TRY(err, cudaMemsetAsync(x->gv, 0, (size_t)x->split * 4, s));
	}
	if (x->acc)
		ZB_CUDA_TRY(err, cudaMemsetAsync(x->acc, 0, (size_t)x->P * 4, s));
	int64_t C = x->P - x->split;
	if (C > 0)
		ZB_CUDA_TRY(err, cudaMemcpyAsync(x->hparam16, x->params16 + x->split, (size_t)C * 2,
						 cudaMemcpyDeviceToHost, s));
	ZB_CUDA_TRY(err, cudaStreamSynchronize(s));
	for (int64_t i = 0; i < C; i++) {
		x->hmaster[i] = zb_bf16_to_f32(x->hparam16[i]);
		x->hm[i] = 0;
		x->hv[i] = 0;
		x->hgrad[i] = 0;
	}
	return ZB_OK;
}

/* ---- precision check -------------------------------------------------------------- */

static zb_status precision_check(exec *x, zb_error *err)
{
	zb_exec_result *r = x->r;
	int steps = x->r->steps_done;
	int64_t stride = x->P / CHECK_SAMPLES > 0 ? x->P / CHECK_SAMPLES : 1;
	int64_t n = (x->P + stride - 1) / stride;
	double *ref = zb_xmalloc((size_t)n * 4 * sizeof(double));
	double *m = ref + n, *v = m + n, *gbuf = v + n;
	uint16_t *init = zb_xmalloc((size_t)n * 2);
	float *got = zb_xmalloc((size_t)n * sizeof(float));
	uint16_t *p16 = zb_xmalloc((size_t)n * 2);
	zb_status st = ZB_OK;
	/* initial values: the fill is a pure function of (seed, index) */
	for (int64_t j = 0; j < n; j++) {
		int64_t i = j * stride;
		float u = zb_uniform_at(x->o->seed, (uint64_t)i, -0.02f, 0.02f);
		init[j] = zb_f32_to_bf16(u);
		ref[j] = zb_bf16_to_f32(init[j]);
		m[j] = v[j] = 0;
	}
	zb_adam_params p = x->adam;
	for (int t = 0; t < steps && !st; t++) {
		for (int64_t j = 0; j < n; j++) {
			uint64_t i = (uint64_t)(j * stride);
			gbuf[j] = zb_bf16_to_f32(zb_f32_to_bf16(zb_uniform_at(grad_seed(x, t), i, GRAD_LO, GRAD_HI)));
		}
		p.step = t + 1;
		zb_adam_ref_buffers b = { gbuf, ref, m, v };
		st = zb_adam_reference_step(&p, &b, n, err);
	}
	/* what the run computed at the same indices: one strided copy per array
	 * (cudaMemcpy2D with a pitch of `stride` elements), not one call per index */
	int64_t ng = x->split > 0 ? (x->split + stride - 1) / stride : 0; /* samples below the split */
	if (ng > n)
		ng = n;
	if (!st && ng > 0 &&
	    (cudaMemcpy2D(got, sizeof(float), x->gmaster, (size_t)stride * sizeof(float), sizeof(float), (size_t)ng,
			  cudaMemcpyDeviceToHost) != cudaSuccess))
		st = zb_fail(err, ZB_E_CUDA, "reading back the GPU master weights failed");
	if (!st && !x->c->policy.offload_param &&
	    cudaMemcpy2D(p16, 2, x->params16, (size_t)stride * 2, 2, (size_t)n, cudaMemcpyDeviceToHost) != cudaSuccess)
		st = zb_fail(err, ZB_E_CUDA, "reading back the 16-bit parameters failed");
	for (int64_t j = ng; j < n && !st; j++) {
		int64_t i = j * stride;
		got[j] = x->hmaster[i - x->split];
		/* with parameter offload the GPU holds fetched copies; the host copy is the
		 * one the optimizer wrote */
		if (x->c->policy.offload_param)
			p16[j] = x->hparam16[i - x->split];
	}
	if (!st && x->c->policy.offload_param && ng > 0 &&
	    cudaMemcpy2D(p16, 2, x->params16, (size_t)stride * 2, 2, (size_t)ng, cudaMemcpyDeviceToHost) != cudaSuccess)
		st = zb_fail(err, ZB_E_CUDA, "reading back the 16-bit parameters failed");
	double num = 0, den = 0, maxrel = 0;
	int64_t mismatch = 0;
	int nan = 0;
	for (int64_t j = 0; j < n && !st; j++) {
		double d = (double)got[j] - ref[j];
		if (isnan(got[j]))
			nan = 1;
		num += d * d;
		den += ref[j] * ref[j];
		double rel = fabs(d) / (fabs(ref[j]) + 1e-12);
		if (rel > maxrel)
			maxrel = rel;
		if (p16[j] != zb_f32_to_bf16(got[j]))
			mismatch++;
	}
	r->master_rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
	r->master_max_rel_err = maxrel;
	r->param16_mismatches = mismatch;
	r->nan_found = nan;
	free(ref);
	free(init);
	free(got);
	free(p16);
	return st;
}

/* ---- entry points ------------------------------------------------------------------- */

int zb_exec_available(zb_error *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		zb_fail(err, ZB_E_NOGPU, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 0;
	}
	return 1;
}

static void *progress(void *arg);

zb_status zb_execute(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
		     zb_error *err)
{
	memset(r, 0, sizeof *r);
	if (!zb_exec_available(err))
		return ZB_E_NOGPU;
	exec xs;
	exec *x = &xs;
	memset(x, 0, sizeof *x);
	x->g = g, x->c = c, x->o = o, x->r = r;
	const zb_model *m = &c->model;
	x->P = g->params;
	x->split = g->params - g->cpu_params;
	x->T = (int64_t)c->policy.micro_batch * c->policy.seq;
	x->h = m->hidden, x->kv = zb_model_kv_dim(m), x->f = m->ffn, x->F = (m->gated_mlp ? 2 : 1) * m->ffn;
	x->V = m->vocab, x->s = c->policy.seq, x->d = zb_model_head_dim(m);
	x->bh = (int64_t)c->policy.micro_batch * m->heads;
	x->flash = c->policy.attention == ZB_ATTN_FLASH;
	x->nS = x->flash ? 1 : x->bh * x->s * x->s;
	if (x->flash && !zb_attention_flash_ok(m))
		return zb_fail(err, ZB_E_INPUT, "--attention flash: head dim %d not supported by the fused kernels",
			       (int)x->d);
	x->pinned = !c->policy.pageable;
	x->stop_step = INT32_MAX;
	x->gpu_step = -1;
	if (m->embed_proj > 0 && m->embed_proj != m->hidden)
		return zb_fail(err, ZB_E_INPUT, "the executor does not run models with embed_proj (%d)", m->embed_proj);

	zb_status st = ZB_OK;
	/* host waits sleep instead of spinning on a core Adam needs; too late once a
	 * context exists (cudaErrorSetOnActiveProcess), which only costs that */
	cudaError_t fe = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
	if (fe != cudaSuccess && fe != cudaErrorSetOnActiveProcess)
		return zb_fail(err, ZB_E_CUDA, "cudaSetDeviceFlags failed: %s", cudaGetErrorString(fe));
	cudaGetLastError();
	ZB_CUDA_TRY(err, cudaSetDevice(0));
	struct cudaDeviceProp prop;
	ZB_CUDA_TRY(err, cudaGetDeviceProperties(&prop, 0));
	snprintf(r->device, sizeof r->device, "%.127s", prop.name);

	/* refuse what does not fit, with the figures, before allocating */
	size_t free_b = 0, total_b = 0;
	ZB_CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
	double need_dev, need_host;
	plan_bytes(x, &need_dev, &need_host);
	if (need_dev > 0.97 * (double)free_b)
		return zb_fail(err, ZB_E_NOFIT, "the run needs %.2f GiB of GPU memory, %.2f GiB are free on %s",
			       need_dev / 1073741824.0, free_b / 1073741824.0, r->device);
	double avail = host_available();
	if (avail > 0 && need_host > 0.9 * avail)
		return zb_fail(err, ZB_E_NOFIT, "the run needs %.2f GiB of host memory, %.2f GiB are available",
			       need_host / 1073741824.0, avail / 1073741824.0);

	r->ntasks = g->ntasks;
	r->start = zb_xmalloc(g->ntasks * sizeof *r->start);
	r->end = zb_xmalloc(g->ntasks * sizeof *r->end);
	r->step_s = zb_xcalloc((size_t)g->steps, sizeof *r->step_s);
	x->state = zb_xcalloc(g->ntasks, sizeof *x->state);
	x->ev_start = zb_xcalloc(g->ntasks, sizeof *x->ev_start);
	x->ev_end = zb_xcalloc(g->ntasks, sizeof *x->ev_end);
	x->host_start = zb_xcalloc(g->ntasks, sizeof *x->host_start);
	x->host_end = zb_xcalloc(g->ntasks, sizeof *x->host_end);
	x->coeffs = zb_xcalloc((size_t)g->steps, sizeof *x->coeffs);
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	dispatcher dps[ZB_RES_COUNT];
	memset(dps, 0, sizeof dps);
	int started = 0;
	pthread_t prog;
	int prog_started = 0;

	x->adam = zb_adam_defaults();
	x->adam.grad_type = x->adam.param_type = c->policy.dtype == ZB_FP16 ? ZB_HALF_FP16 : ZB_HALF_BF16;
	for (int s = 0; s < g->steps && !st; s++) {
		zb_adam_params p = x->adam;
		p.step = s + 1;
		st = zb_gpu_adam_coeffs_make(&p, &x->coeffs[s], err);
	}
	if (st)
		goto out;
	for (size_t i = 0; i < g->ntasks && !st; i++) {
		r->start[i] = r->end[i] = -1;
		if (is_gpu_side(g->tasks[i].resource)) {
			if (cudaEventCreate(&x->ev_start[i]) != cudaSuccess || cudaEventCreate(&x->ev_end[i]) != cudaSuccess)
				st = zb_fail(err, ZB_E_CUDA, "cudaEventCreate failed for task %zu", i);
		}
	}
	if (st || (st = allocate(x, err)))
		goto out;
	if ((st = zb_pool_create(zb_config_cpu_threads(c), &x->pool, err)))
		goto out;
	r->cpu_threads = zb_pool_threads(x->pool);
	zb_adam_isa isa;
	if ((st = zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, err)))
		goto out;
	r->adam_isa = zb_adam_isa_name(isa);

	for (int res = 0; res < ZB_RES_COUNT; res++) {
		dps[res].x = x;
		dps[res].resource = res;
		if (is_gpu_side(res))
			ZB_CUDA_GOTO(st, err, cudaStreamCreateWithFlags(&dps[res].stream, cudaStreamNonBlocking), out);
		if (o->trace && dps[res].stream)
			zb_trace_name_stream(dps[res].stream, res, zb_resource_name(res));
		if ((res == ZB_RES_H2D || res == ZB_RES_D2H) && c->policy.link_rate_Bps > 0 && x->pinned) {
			if ((st = zb_pacer_create(&dps[res].pacer, c->policy.link_rate_Bps, res == ZB_RES_H2D,
						  dps[res].stream, err)))
				goto out;
			r->link_native_Bps[res == ZB_RES_H2D] = zb_pacer_native_Bps(dps[res].pacer);
		}
	}
	if ((st = zb_gemm_create(&dps[ZB_RES_GPU].gemm, err)) ||
	    (st = initialize(x, dps[ZB_RES_GPU].stream, err)))
		goto out;

	/* time zero: a reference event on the idle compute stream, placed on the
	 * host clock by polling (a blocking sync would add its wake-up latency): of
	 * several tries keep the one whose [record, observed] window is narrowest and
	 * take its middle, so GPU and CPU times agree to a few microseconds */
	int64_t best = INT64_MAX;
	for (int i = 0; i < 20; i++) {
		cudaEvent_t e;
		ZB_CUDA_GOTO(st, err, cudaEventCreate(&e), out);
		int64_t a = zb_now_ns();
		if (cudaEventRecord(e, dps[ZB_RES_GPU].stream) != cudaSuccess) {
			cudaEventDestroy(e);
			st = zb_fail(err, ZB_E_CUDA, "cudaEventRecord of the reference event failed");
			goto out;
		}
		cudaError_t q;
		while ((q = cudaEventQuery(e)) == cudaErrorNotReady)
			;
		int64_t b = zb_now_ns();
		if (q != cudaSuccess) {
			cudaEventDestroy(e);
			st = zb_fail(err, ZB_E_CUDA, "cudaEventQuery failed: %s", cudaGetErrorString(q));
			goto out;
		}
		if (b - a < best) {
			best = b - a;
			if (x->ref)
				cudaEventDestroy(x->ref);
			x->ref = e;
			x->ref_ns = a + (b - a) / 2;
		} else {
			cudaEventDestroy(e);
		}
	}
	x->t0_ns = x->ref_ns;
	r->t0_ns = x->t0_ns;
	if (!o->quiet && pthread_create(&prog, NULL, progress, x) == 0)
		prog_started = 1;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (pthread_create(&dps[res].thread, NULL, dispatch, &dps[res]) != 0) {
			st = zb_fail(err, ZB_E_INTERNAL, "cannot start the %s dispatcher", zb_resource_name(res));
			fail_run(x);
			break;
		}
		started++;
	}
	for (int res = 0; res < started; res++)
		pthread_join(dps[res].thread, NULL);
	r->wall_s = (zb_now_ns() - x->t0_ns) * 1e-9;
	pthread_mutex_lock(&x->mu);
	x->failed |= 2; /* tells the progress thread to end */
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	if (prog_started)
		pthread_join(prog, NULL);
	for (int res = 0; res < started && !st; res++)
		if (dps[res].status) {
			*err = dps[res].err;
			st = dps[res].status;
		}
	if (st)
		goto out;

	/* the timeline on one clock */
	for (size_t i = 0; i < g->ntasks; i++) {
		if (x->state[i] == T_SKIPPED || x->state[i] == T_PENDING)
			continue;
		if (g->tasks[i].resource == ZB_RES_CPU) {
			r->start[i] = (x->host_start[i] - x->t0_ns) * 1e-9;
			r->end[i] = (x->host_end[i] - x->t0_ns) * 1e-9;
		} else {
			float a = 0, b = 0;
			if (cudaEventElapsedTime(&a, x->ref, x->ev_start[i]) != cudaSuccess ||
			    cudaEventElapsedTime(&b, x->ref, x->ev_end[i]) != cudaSuccess) {
				st = zb_fail(err, ZB_E_CUDA, "reading the timing of task %zu failed", i);
				goto out;
			}
			r->start[i] = a * 1e-3;
			r->end[i] = b * 1e-3;
		}
	}
	r->steps_done = x->stop_step < g->steps ? x->stop_step : g->steps;
	r->interrupted = x->stop_step < g->steps;
	double *bound = zb_xmalloc((size_t)g->steps * sizeof *bound);
	zb_step_boundaries(g, r->end, bound);
	for (int s = 0; s < r->steps_done; s++)
		r->step_s[s] = bound[s] - (s ? bound[s - 1] : 0);
	free(bound);
	if (r->steps_done >= 1) {
		zb_graph sub = *g; /* the steps that ran */
		sub.steps = r->steps_done;
		r->step_time_s = zb_steady_step_time(&sub, r->end);
		zb_busy_window(&sub, r->start, r->end, -1, r->busy_s);
		r->tokens_per_s = r->step_time_s > 0 ? g->tokens_per_step / r->step_time_s : 0;
		r->tflops_per_gpu = r->step_time_s > 0 ? g->model_flops_per_step / r->step_time_s / 1e12 : 0;
	}
	if (o->check && !r->interrupted)
		st = precision_check(x, err);

out:
	if (st && prog_started == 0 && started == 0) {
		/* nothing ran */
	}
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (dps[res].gemm)
			zb_gemm_destroy(dps[res].gemm, NULL);
		zb_pacer_destroy(dps[res].pacer);
		if (dps[res].stream)
			cudaStreamDestroy(dps[res].stream);
	}
	if (x->ref)
		cudaEventDestroy(x->ref);
	for (size_t i = 0; i < g->ntasks; i++) {
		if (x->ev_start && x->ev_start[i])
			cudaEventDestroy(x->ev_start[i]);
		if (x->ev_end && x->ev_end[i])
			cudaEventDestroy(x->ev_end[i]);
	}
	zb_pool_destroy(x->pool);
	release(x);
	free((void *)x->state);
	free(x->ev_start);
	free(x->ev_end);
	free(x->host_start);
	free(x->host_end);
	free(x->coeffs);
	pthread_mutex_destroy(&x->mu);
	pthread_cond_destroy(&x->cv);
	if (st)
		zb_exec_result_free(r);
	return st;
}

/* A progress line on stderr once the run has lasted a second. */
static void *progress(void *arg)
{
	exec *x = arg;
	const zb_graph *g = x->g;
	int printed = 0;
	for (;;) {
		usleep(200000);
		pthread_mutex_lock(&x->mu);
		int end = x->failed;
		pthread_mutex_unlock(&x->mu);
		if (end)
			break;
		double t = (zb_now_ns() - x->t0_ns) * 1e-9;
		if (t < 1.0)
			continue;
		size_t done = 0;
		for (size_t i = 0; i < g->ntasks; i++)
			done += x->state[i] != T_PENDING;
		fprintf(stderr, "\rzbench run: %5.1f s, %zu/%zu tasks issued (%.0f%%)   ", t, done, g->ntasks,
			100.0 * done / g->ntasks);
		printed = 1;
	}
	if (printed)
		fprintf(stderr, "\n");
	return NULL;
}

void zb_exec_result_free(zb_exec_result *r)
{
	free(r->start);
	free(r->end);
	free(r->step_s);
	r->start = r->end = r->step_s = NULL;
}
