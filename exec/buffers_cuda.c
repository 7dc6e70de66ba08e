/*
 * buffers_cuda.c - the memory of one run (exec_cuda.h): what it needs (checked
 * against free memory before anything is allocated), device and host allocation
 * (pinned unless --pageable), release, and the initial values.
 */
#include "exec/exec_cuda.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/flash_attn.h"
#include "exec/host_pool.h"
#include "exec/kernels.h"

/* ---- setup ----------------------------------------------------------------------- */


/* Bytes the executor will allocate on the device and pin on the host. */
void exec_plan_bytes(const exec *x, double *dev, double *host)
{
	double P = (double)x->P, G = (double)x->split, C = P - G, T = (double)x->T, h = (double)x->h;
	double qkv = T * (h + 2 * x->kv), S = (double)x->nS, HH = T * x->F;
	*dev = 2 * P + 2 * P + 12 * G + (x->c->policy.gas > 1 ? 4 * P : 0) + 4 * T /* tokens */ +
	       2 * (5 * T * h /* X N Y O Xsave */ + 2 * qkv + 2 * S + 3 * HH + T * x->V + 2 * T * h) +
	       4 * (4 * T + 2 * h) + ZB_GEMM_WORKSPACE_BYTES +
	       (x->flash ? 4.0 * x->bh * x->s /* lse */ + 4.0 * (x->d + 1) * x->bh * x->s /* workspace */ : 0);
	*host = 16 * C + (x->c->policy.ckpt == ZB_CKPT_CPU ? 2 * T * h * x->c->model.layers : 0);
}

double exec_host_available(void)
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

/* The pool's allocator (host_pool.h): its error code is the cudaError_t. A failed
 * pinning is cleared (cudaGetLastError) because the pool may retry it and succeed,
 * and a later, unrelated check must not report it. */
static int pin(void **p, size_t bytes)
{
	cudaError_t e = cudaMallocHost(p, bytes);
	if (e != cudaSuccess)
		(void)cudaGetLastError();
	return (int)e;
}

static void unpin(void *p) { cudaFreeHost(p); }

static pthread_once_t pin_once = PTHREAD_ONCE_INIT;
static void register_pin(void) { zb_host_pool_set_allocator(pin, unpin); }

/* Pinned buffers come from the pool (kept between the configurations of
 * `zbench validate`, straight from cudaMallocHost otherwise); pageable ones do not. */
static zb_status host_alloc(exec *x, void **p, size_t bytes, zb_error *err)
{
	if (x->pinned) {
		pthread_once(&pin_once, register_pin);
		cudaError_t e = (cudaError_t)zb_host_pool_get(p, bytes ? bytes : 1);
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
		zb_host_pool_put(p);
	else
		free(p);
}

#define DEV(ptr, count, type) ZB_CUDA_MALLOC(err, (void **)&x->ptr, (size_t)(count) * sizeof(type))

zb_status exec_allocate(exec *x, zb_error *err)
{
	size_t Th = (size_t)(x->T * x->h), qkv = (size_t)(x->T * (x->h + 2 * x->kv));
	size_t S = (size_t)x->nS, HH = (size_t)(x->T * x->F);
	if (x->flash) {
		zb_flash_shape sh = { (int)x->c->policy.micro_batch, (int)x->s, x->c->model.heads, x->c->model.kv_heads,
				      (int)x->d, 1, 1.0f };
		DEV(lse, x->bh * x->s, float);
		DEV(fa_ws, zb_flash_bwd_workspace(&sh), char);
	}
	/* with several ranks, a collective's padded range reaches up to nranks - 1
	 * elements past the vector (exec/shard.h): room for it */
	DEV(params16, x->P + x->nranks, uint16_t);
	DEV(grads16, x->P + x->nranks, uint16_t);
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

void exec_release(exec *x)
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
zb_status exec_initialize(exec *x, cudaStream_t s, zb_error *err)
{
	zb_status st;
	size_t Th = (size_t)(x->T * x->h);
	if (x->nranks > 1) { /* the room past the vector (exec_allocate) */
		ZB_CUDA_TRY(err, cudaMemsetAsync(x->params16 + x->P, 0, (size_t)x->nranks * 2, s));
		ZB_CUDA_TRY(err, cudaMemsetAsync(x->grads16 + x->P, 0, (size_t)x->nranks * 2, s));
	}
	if ((st = zb_fill_uniform_bf16(x->params16, (size_t)x->P, x->o->seed, -0.02f, 0.02f, s, err)) ||
	    (st = zb_fill_uniform_bf16(x->grads16, (size_t)x->P, x->o->seed + 1, -1e-3f, 1e-3f, s, err)) ||
	    (st = zb_fill_tokens(x->tokens, (size_t)x->T, x->o->seed + 2 + 7919ull * (uint64_t)x->rank, (int)x->V, s,
				 err)) || /* each data-parallel rank its own batch */
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
