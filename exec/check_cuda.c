/*
 * check_cuda.c - the precision check of --check (exec_cuda.h): the fp32 master
 * weights against a double-precision Adam on the same synthetic gradients, and the
 * 16-bit parameters against the master rounded to nearest even.
 */
#include "exec/exec_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/kernels.h"

/* ---- precision check -------------------------------------------------------------- */

zb_status exec_precision_check(exec *x, zb_error *err)
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
			gbuf[j] = zb_bf16_to_f32(zb_f32_to_bf16(zb_uniform_at(exec_grad_seed(x, t), i, GRAD_LO, GRAD_HI)));
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
