/*
 * gemm_cuda.c - exec/gemm.h over cuBLASLt, with cuBLAS as the fallback.
 *
 * A plan is everything cuBLASLt needs for one shape: the operation descriptor
 * (fp32 compute and scale, transposes), the three matrix layouts (types, sizes,
 * leading dimensions, batch count and strides) and the algorithm its heuristic
 * picked under our workspace limit and the pointers' alignment. Building one costs
 * tens of microseconds (the heuristic query), so plans are kept in a small array
 * and found by comparing keys; a training step uses a few dozen shapes. When the
 * heuristic returns nothing (an odd layout), the plan says so and the call goes to
 * cublasGemmStridedBatchedEx with the same types, which accepts any layout.
 */
#include "exec/gemm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "exec/cuda_check.h"

/* Everything that decides descriptors and algorithm. Plain integers only and
 * zeroed before filling, so two keys compare with memcmp. */
typedef struct gemm_key {
	int32_t dtype, c_f32, transa, transb;
	int32_t m, n, k, batch;
	int64_t lda, ldb, ldc;
	int64_t stride_a, stride_b, stride_c;
	int32_t beta_nonzero;
	uint32_t align_a, align_b, align_c; /* bytes, a power of two <= 256 */
} gemm_key;

typedef struct gemm_plan {
	gemm_key key;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	int use_gemm_ex; /* cuBLASLt had no algorithm: cublasGemmStridedBatchedEx */
} gemm_plan;

struct zb_gemm {
	cublasLtHandle_t lt;
	cublasHandle_t blas;
	void *workspace;
	size_t workspace_bytes;
	gemm_plan *plans;
	int nplans, cap;
	int fallbacks;
};

void zb_gemm_op_init(zb_gemm_op *op, zb_dtype dtype, int transa, int transb, int m, int n, int k)
{
	memset(op, 0, sizeof *op);
	op->dtype = dtype;
	op->transa = transa;
	op->transb = transb;
	op->m = m;
	op->n = n;
	op->k = k;
	op->batch = 1;
	op->alpha = 1.0f;
	op->beta = 0.0f;
}

zb_status zb_gemm_create(zb_gemm **out, zb_error *err)
{
	zb_status st = ZB_OK;
	zb_gemm *g = zb_xcalloc(1, sizeof *g);
	*out = NULL;
	ZB_CUBLAS_GOTO(st, err, cublasLtCreate(&g->lt), fail);
	ZB_CUBLAS_GOTO(st, err, cublasCreate(&g->blas), fail);
	g->workspace_bytes = ZB_GEMM_WORKSPACE_BYTES;
	ZB_CUDA_MALLOC_GOTO(st, err, &g->workspace, g->workspace_bytes, fail);
	ZB_CUBLAS_GOTO(st, err, cublasSetWorkspace(g->blas, g->workspace, g->workspace_bytes),
		       fail);
	*out = g;
	return ZB_OK;
fail:
	zb_gemm_destroy(g, NULL);
	return st;
}

static void plan_release(gemm_plan *p, zb_status *st, zb_error *err)
{
	cublasStatus_t s[4] = {
		p->la ? cublasLtMatrixLayoutDestroy(p->la) : CUBLAS_STATUS_SUCCESS,
		p->lb ? cublasLtMatrixLayoutDestroy(p->lb) : CUBLAS_STATUS_SUCCESS,
		p->lc ? cublasLtMatrixLayoutDestroy(p->lc) : CUBLAS_STATUS_SUCCESS,
		p->desc ? cublasLtMatmulDescDestroy(p->desc) : CUBLAS_STATUS_SUCCESS,
	};
	for (int i = 0; i < 4; i++)
		if (s[i] != CUBLAS_STATUS_SUCCESS && *st == ZB_OK)
			*st = zb_cublas_fail_at(err, s[i], "cublasLt descriptor destroy", __FILE__,
						__LINE__);
	memset(p, 0, sizeof *p);
}

zb_status zb_gemm_destroy(zb_gemm *g, zb_error *err)
{
	zb_status st = ZB_OK;
	if (!g)
		return ZB_OK;
	for (int i = 0; i < g->nplans; i++)
		plan_release(&g->plans[i], &st, err);
	free(g->plans);
	if (g->blas) {
		cublasStatus_t s = cublasDestroy(g->blas);
		if (s != CUBLAS_STATUS_SUCCESS && st == ZB_OK)
			st = zb_cublas_fail_at(err, s, "cublasDestroy(g->blas)", __FILE__, __LINE__);
	}
	if (g->lt) {
		cublasStatus_t s = cublasLtDestroy(g->lt);
		if (s != CUBLAS_STATUS_SUCCESS && st == ZB_OK)
			st = zb_cublas_fail_at(err, s, "cublasLtDestroy(g->lt)", __FILE__, __LINE__);
	}
	if (g->workspace) {
		cudaError_t e = cudaFree(g->workspace);
		if (e != cudaSuccess && st == ZB_OK)
			st = zb_cuda_fail_at(err, e, "cudaFree(g->workspace)", __FILE__, __LINE__);
	}
	free(g);
	return st;
}

int zb_gemm_plans(const zb_gemm *g)
{
	return g ? g->nplans : 0;
}

int zb_gemm_fallbacks(const zb_gemm *g)
{
	return g ? g->fallbacks : 0;
}

/* Largest power of two <= 256 dividing every address a batched operand starts at. */
static uint32_t alignment_of(const void *p, int64_t stride_bytes, int batch)
{
	uintptr_t a = (uintptr_t)p;
	if (batch > 1)
		a |= (uintptr_t)stride_bytes;
	uint32_t al = 256;
	while (al > 1 && (a & (al - 1)))
		al >>= 1;
	return al;
}

static zb_status check_op(const zb_gemm_op *op, zb_error *err)
{
	if (op->dtype != ZB_BF16 && op->dtype != ZB_FP16)
		return zb_fail(err, ZB_E_INPUT, "gemm: unknown dtype %d", (int)op->dtype);
	if (op->m < 1 || op->n < 1 || op->k < 1 || op->batch < 1)
		return zb_fail(err, ZB_E_INPUT, "gemm: invalid shape m %d n %d k %d batch %d",
			       op->m, op->n, op->k, op->batch);
	int64_t ra = op->transa ? op->k : op->m, rb = op->transb ? op->n : op->k;
	if (op->lda && op->lda < ra)
		return zb_fail(err, ZB_E_INPUT, "gemm: invalid lda %lld (want >= %lld)",
			       (long long)op->lda, (long long)ra);
	if (op->ldb && op->ldb < rb)
		return zb_fail(err, ZB_E_INPUT, "gemm: invalid ldb %lld (want >= %lld)",
			       (long long)op->ldb, (long long)rb);
	if (op->ldc && op->ldc < op->m)
		return zb_fail(err, ZB_E_INPUT, "gemm: invalid ldc %lld (want >= %d)",
			       (long long)op->ldc, op->m);
	if (op->batch > 1) {
		int64_t ldc = op->ldc ? op->ldc : op->m;
		if (op->stride_a < 0 || op->stride_b < 0 || op->stride_c < ldc * op->n)
			return zb_fail(err, ZB_E_INPUT,
				       "gemm: invalid batch strides a %lld b %lld c %lld (c must be "
				       ">= ldc * n = %lld)",
				       (long long)op->stride_a, (long long)op->stride_b,
				       (long long)op->stride_c, (long long)(ldc * op->n));
	}
	return ZB_OK;
}

static void make_key(gemm_key *key, const zb_gemm_op *op, const void *A, const void *B,
		     const void *C)
{
	int64_t es = 2, esc = op->c_f32 ? 4 : 2;
	memset(key, 0, sizeof *key);
	key->dtype = op->dtype;
	key->c_f32 = !!op->c_f32;
	key->transa = !!op->transa;
	key->transb = !!op->transb;
	key->m = op->m;
	key->n = op->n;
	key->k = op->k;
	key->batch = op->batch;
	key->lda = op->lda ? op->lda : (op->transa ? op->k : op->m);
	key->ldb = op->ldb ? op->ldb : (op->transb ? op->n : op->k);
	key->ldc = op->ldc ? op->ldc : op->m;
	if (op->batch > 1) {
		key->stride_a = op->stride_a;
		key->stride_b = op->stride_b;
		key->stride_c = op->stride_c;
	}
	key->beta_nonzero = op->beta != 0.0f;
	key->align_a = alignment_of(A, key->stride_a * es, op->batch);
	key->align_b = alignment_of(B, key->stride_b * es, op->batch);
	key->align_c = alignment_of(C, key->stride_c * esc, op->batch);
}

static zb_status layout_create(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows,
			       uint64_t cols, int64_t ld, int batch, int64_t stride, zb_error *err)
{
	ZB_CUBLAS_TRY(err, cublasLtMatrixLayoutCreate(l, type, rows, cols, ld));
	if (batch > 1) {
		int32_t b = batch;
		ZB_CUBLAS_TRY(err, cublasLtMatrixLayoutSetAttribute(
					   *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
		ZB_CUBLAS_TRY(err, cublasLtMatrixLayoutSetAttribute(
					   *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
					   sizeof stride));
	}
	return ZB_OK;
}

static zb_status plan_build(zb_gemm *g, gemm_plan *p, zb_error *err)
{
	const gemm_key *k = &p->key;
	cudaDataType_t ab = k->dtype == ZB_FP16 ? CUDA_R_16F : CUDA_R_16BF;
	cudaDataType_t ct = k->c_f32 ? CUDA_R_32F : ab;
	cublasOperation_t ta = k->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t tb = k->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
	zb_status st;

	ZB_CUBLAS_TRY(err, cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	ZB_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA,
							   &ta, sizeof ta));
	ZB_CUBLAS_TRY(err, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB,
							   &tb, sizeof tb));
	st = layout_create(&p->la, ab, k->transa ? k->k : k->m, k->transa ? k->m : k->k, k->lda,
			   k->batch, k->stride_a, err);
	if (st == ZB_OK)
		st = layout_create(&p->lb, ab, k->transb ? k->n : k->k, k->transb ? k->k : k->n,
				   k->ldb, k->batch, k->stride_b, err);
	if (st == ZB_OK)
		st = layout_create(&p->lc, ct, k->m, k->n, k->ldc, k->batch, k->stride_c, err);
	if (st != ZB_OK)
		return st;

	cublasLtMatmulPreference_t pref = NULL;
	ZB_CUBLAS_TRY(err, cublasLtMatmulPreferenceCreate(&pref));
	uint64_t ws = g->workspace_bytes;
	uint32_t al[4] = {k->align_a, k->align_b, k->align_c, k->align_c};
	cublasLtMatmulPreferenceAttributes_t which[4] = {
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
	ZB_CUBLAS_GOTO(st, err,
		       cublasLtMatmulPreferenceSetAttribute(
			       pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
		       out);
	for (int i = 0; i < 4; i++)
		ZB_CUBLAS_GOTO(st, err,
			       cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i],
								    sizeof al[i]),
			       out);

	cublasLtMatmulHeuristicResult_t res;
	int nres = 0;
	memset(&res, 0, sizeof res);
	cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(g->lt, p->desc, p->la, p->lb, p->lc,
							   p->lc, pref, 1, &res, &nres);
	if (hs == CUBLAS_STATUS_SUCCESS && nres > 0 && res.state == CUBLAS_STATUS_SUCCESS &&
	    res.workspaceSize <= g->workspace_bytes) {
		p->algo = res.algo;
	} else if (hs == CUBLAS_STATUS_SUCCESS || hs == CUBLAS_STATUS_NOT_SUPPORTED) {
		/* the fallback takes 32-bit leading dimensions */
		if (k->lda > INT_MAX || k->ldb > INT_MAX || k->ldc > INT_MAX) {
			st = zb_fail(err, ZB_E_CUDA,
				     "gemm: no cuBLASLt algorithm for m %d n %d k %d batch %d and "
				     "leading dimensions too large for cublasGemmStridedBatchedEx",
				     k->m, k->n, k->k, k->batch);
			goto out;
		}
		p->use_gemm_ex = 1;
		g->fallbacks++;
	} else {
		st = zb_cublas_fail_at(err, hs, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
	}
out:
	cublasLtMatmulPreferenceDestroy(pref);
	return st;
}

/* The plan for key: found, or built and added. */
static zb_status plan_get(zb_gemm *g, const gemm_key *key, gemm_plan **out, zb_error *err)
{
	for (int i = 0; i < g->nplans; i++) {
		if (!memcmp(&g->plans[i].key, key, sizeof *key)) {
			*out = &g->plans[i];
			return ZB_OK;
		}
	}
	if (g->nplans == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 32;
		g->plans = zb_xrealloc(g->plans, (size_t)g->cap * sizeof *g->plans);
	}
	gemm_plan *p = &g->plans[g->nplans];
	memset(p, 0, sizeof *p);
	p->key = *key;
	zb_status st = plan_build(g, p, err);
	if (st != ZB_OK) {
		zb_status ignored = ZB_OK;
		plan_release(p, &ignored, NULL);
		return st;
	}
	g->nplans++;
	*out = p;
	return ZB_OK;
}

zb_status zb_gemm_run(zb_gemm *g, const zb_gemm_op *op, const void *A, const void *B, void *C,
		      zb_stream stream, zb_error *err)
{
	if (!g || !op)
		return zb_fail(err, ZB_E_INPUT, "gemm: missing handle or operation");
	if (!A || !B || !C)
		return zb_fail(err, ZB_E_INPUT, "gemm: missing matrix (A %p, B %p, C %p)", A, B,
			       (void *)C);
	zb_status st = check_op(op, err);
	if (st != ZB_OK)
		return st;
	gemm_key key;
	make_key(&key, op, A, B, C);
	gemm_plan *p = NULL;
	st = plan_get(g, &key, &p, err);
	if (st != ZB_OK)
		return st;
	float alpha = op->alpha, beta = op->beta;
	if (!p->use_gemm_ex) {
		ZB_CUBLAS_TRY(err, cublasLtMatmul(g->lt, p->desc, &alpha, A, p->la, B, p->lb, &beta,
						  C, p->lc, C, p->lc, &p->algo, g->workspace,
						  g->workspace_bytes, stream));
		return ZB_OK;
	}
	cudaDataType_t ab = key.dtype == ZB_FP16 ? CUDA_R_16F : CUDA_R_16BF;
	ZB_CUBLAS_TRY(err, cublasSetStream(g->blas, stream));
	ZB_CUBLAS_TRY(err, cublasGemmStridedBatchedEx(
				   g->blas, key.transa ? CUBLAS_OP_T : CUBLAS_OP_N,
				   key.transb ? CUBLAS_OP_T : CUBLAS_OP_N, key.m, key.n, key.k,
				   &alpha, A, ab, (int)key.lda, key.stride_a, B, ab, (int)key.ldb,
				   key.stride_b, &beta, C, key.c_f32 ? CUDA_R_32F : ab, (int)key.ldc,
				   key.stride_c, key.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return ZB_OK;
}
