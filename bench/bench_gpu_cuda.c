/*
 * bench_gpu_cuda.c - GPU benchmarks (issue targets on the H200 machine):
 *   gpu-adam  fused GPU Adam on 1G parameters, >= 140 Gparam/s
 *   gemm      bf16 GEMMs of the 2.5B model's layer shapes and square references
 *   pcie      pinned copies 4 KB .. 1 GB each way alone and both at once (>= 95% of
 *             55.3 GB/s one way from 16 MB up), pageable 1 GB
 *   e2e       the 2.5B GPT (32 layers, hidden 2560, 32 heads, seq 2048, micro-batch 4)
 *             executed under none, offload, overlap, dpu and Twin-Flow ratios, beside
 *             the prediction and the lower bound
 * Copies are timed like nvbandwidth (exec/copy_bench.h, shared with zbench calibrate):
 * warm-up, CUDA events around each copy on its stream, median of several trials, the
 * moved data verified at sampled positions.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cases.h"
#include "bench/gpu_cases.h"
#include "exec/copy_bench.h"
#include "exec/cuda_check.h"
#include "exec/executor.h"
#include "exec/kernels.h"
#include "sim/predict.h"
#include "inputs/presets.h"

static const char *no_gpu(void)
{
	static zb_error err;
	return zb_exec_available(&err) ? NULL : err.msg;
}

static zb_status run_gpu_adam(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	int64_t n = a->size > 0 ? (int64_t)a->size : a->quick ? (16LL << 20) : 1000000000LL;
	double rate;
	zb_status st = zb_bench_gpu_adam(n, a->repeats > 0 ? a->repeats : 10, &rate, err);
	if (st)
		return st;
	fprintf(out, "%-12s %10.0f M params %8.1f Gparam/s %8.0f GB/s (28 B/param)\n", "gpu-adam", n / 1e6, rate,
		rate * 28);
	json_object_set_new(res, "params", json_integer(n));
	json_object_set_new(res, "gparams_per_s", json_real(rate));
	json_object_set_new(res, "GBps", json_real(rate * 28));
	return ZB_OK;
}

static zb_status run_gemm(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	/* m x n x k with n = tokens (8192 = micro-batch 4 x seq 2048) for the 2.5B layers */
	static const int shapes[][3] = { { 8192, 8192, 8192 }, { 4096, 4096, 4096 }, { 7680, 8192, 2560 },
					 { 2560, 8192, 2560 }, { 10240, 8192, 2560 }, { 2560, 8192, 10240 },
					 { 2560, 8192, 7680 }, { 2560, 2560, 8192 } };
	int nshapes = a->quick ? 2 : (int)(sizeof shapes / sizeof shapes[0]);
	json_t *rows = json_array();
	for (int i = 0; i < nshapes; i++) {
		double tf;
		int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
		if (a->quick)
			m /= 8, n /= 8, k /= 8;
		zb_status st = zb_bench_gemm(m, n, k, a->repeats > 0 ? a->repeats : 20, &tf, err);
		if (st) {
			json_decref(rows);
			return st;
		}
		fprintf(out, "%-12s %6d x %6d x %6d %8.1f TFLOP/s\n", i ? "" : "gemm", m, n, k, tf);
		json_array_append_new(rows, json_pack("{s:i, s:i, s:i, s:f}", "m", m, "n", n, "k", k, "tflops", tf));
	}
	json_object_set_new(res, "shapes", rows);
	return ZB_OK;
}

/* ---- PCIe copies ---------------------------------------------------------------- */

static zb_status run_pcie(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	size_t top = a->quick ? (64u << 20) : (1u << 30);
	zb_copy_bench *b;
	zb_status st = zb_copy_bench_open(top, 1, &b, err);
	if (st)
		return st;
	fprintf(out, "%-12s %12s %10s %10s %10s %10s\n", "pcie", "bytes", "h2d", "d2h", "both:h2d", "both:d2h");
	fprintf(out, "%-12s %12s %10s %10s %10s %10s\n", "", "", "GB/s", "GB/s", "GB/s", "GB/s");
	json_t *rows = json_array();
	for (size_t sz = 4096; sz <= top && !st; sz *= 4) { /* 4 KB, 16 KB, ... 1 GB */
		int reps = a->repeats > 0 ? a->repeats : sz <= (1u << 20) ? 200 : sz <= (64u << 20) ? 20 : 5;
		double h[2], d[2], both[2];
		if ((st = zb_copy_bench_time(b, sz, ZB_COPY_H2D, reps, h, err)) ||
		    (st = zb_copy_bench_time(b, sz, ZB_COPY_D2H, reps, d, err)) ||
		    (st = zb_copy_bench_time(b, sz, ZB_COPY_BOTH, reps, both, err)) ||
		    (st = zb_copy_bench_verify(b, sz, ZB_COPY_BOTH, err)))
			break;
		double g[4] = { sz / h[0] / 1e9, sz / d[1] / 1e9, sz / both[0] / 1e9, sz / both[1] / 1e9 };
		fprintf(out, "%-12s %12zu %10.2f %10.2f %10.2f %10.2f\n", "", sz, g[0], g[1], g[2], g[3]);
		json_array_append_new(rows, json_pack("{s:I, s:f, s:f, s:f, s:f}", "bytes", (json_int_t)sz, "h2d_GBps",
						      g[0], "d2h_GBps", g[1], "both_h2d_GBps", g[2], "both_d2h_GBps", g[3]));
	}
	json_object_set_new(res, "pinned", rows);
	zb_copy_bench_close(b);
	/* pageable: the driver stages through its own pinned buffers (one trial) */
	if (!st && !(st = zb_copy_bench_open(top, 0, &b, err))) {
		double h[2], d[2];
		if (!(st = zb_copy_bench_time(b, top, ZB_COPY_H2D, 1, h, err)) &&
		    !(st = zb_copy_bench_time(b, top, ZB_COPY_D2H, 1, d, err)) &&
		    !(st = zb_copy_bench_verify(b, top, ZB_COPY_BOTH, err))) {
			fprintf(out, "%-12s %12zu %10.2f %10.2f   (pageable, host clock, one trial)\n", "", top,
				top / h[0] / 1e9, top / d[1] / 1e9);
			json_object_set_new(res, "pageable_h2d_GBps", json_real(top / h[0] / 1e9));
			json_object_set_new(res, "pageable_d2h_GBps", json_real(top / d[1] / 1e9));
		}
		zb_copy_bench_close(b);
	}
	return st;
}

/* ---- end to end ------------------------------------------------------------------ */

static zb_status run_e2e(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	static const struct {
		const char *policy;
		double ratio;
	} cases[] = { { "none", 0 },   { "offload", 1 }, { "overlap", 1 }, { "dpu", 1 },  { "dpu", 0.25 },
		      { "dpu", 0.125 }, { "dpu", 0.0625 }, { "overlap", 0.125 } };
	int n = a->quick ? 2 : (int)(sizeof cases / sizeof cases[0]);
	json_t *rows = json_array();
	fprintf(out, "%-12s %-8s %6s %10s %10s %10s %8s %8s %-10s\n", "e2e", "policy", "ratio", "measured", "predicted",
		"bound", "TFLOP/s", "vs bound", "bound by");
	fprintf(out, "%-12s %-8s %6s %10s %10s %10s %8s %8s %-10s\n", "", "", "", "ms/step", "ms/step", "ms/step", "", "%",
		"");
	zb_status st = ZB_OK;
	for (int i = 0; i < n && !st; i++) {
		zb_config c;
		memset(&c, 0, sizeof c);
		zb_preset_default_hw(&c.hw);
		if ((st = zb_preset_model(a->quick ? "gpt2" : "gpt-2.5b", &c.model, err)))
			break;
		zb_policy_defaults(&c.policy);
		zb_policy_parse(cases[i].policy, &c.policy.kind, err);
		c.policy.ratio = cases[i].ratio;
		c.policy.micro_batch = a->quick ? 2 : 4;
		c.policy.seq = a->quick ? 512 : 2048;
		c.steps = 6;
		zb_prediction p;
		if ((st = zb_predict(&p, &c, err)))
			break;
		zb_exec_options eo = { .quiet = 1, .seed = 42 };
		zb_exec_result r;
		st = zb_execute(&p.graph, &c, &eo, &r, err);
		if (!st) {
			double over = 100 * (r.step_time_s / p.res.lower_bound_s - 1);
			fprintf(out, "%-12s %-8s %6.3f %10.2f %10.2f %10.2f %8.1f %8.1f %-10s\n", "", cases[i].policy,
				cases[i].ratio, r.step_time_s * 1e3, p.res.step_time_s * 1e3, p.res.lower_bound_s * 1e3,
				r.tflops_per_gpu, over, zb_resource_name(p.res.bound_resource));
			json_array_append_new(rows, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
							      "policy", cases[i].policy, "ratio", cases[i].ratio,
							      "measured_s", r.step_time_s, "predicted_s", p.res.step_time_s,
							      "lower_bound_s", p.res.lower_bound_s, "tflops", r.tflops_per_gpu,
							      "busy_gpu_s", r.busy_s[ZB_RES_GPU], "busy_cpu_s",
							      r.busy_s[ZB_RES_CPU], "busy_d2h_s", r.busy_s[ZB_RES_D2H],
							      "busy_h2d_s", r.busy_s[ZB_RES_H2D], "busy_gpu_opt_s",
							      r.busy_s[ZB_RES_GPU_OPT]));
			zb_exec_result_free(&r);
		}
		zb_prediction_free(&p);
	}
	json_object_set_new(res, "runs", rows);
	return st;
}

#define CASE(name, description, waived, run) { name, "gpu", description, waived, run },
const zb_bench_case zb_bench_gpu_cases[] = {
	ZB_BENCH_GPU_CASES(CASE)
	{ 0 },
};
