/*
 * test_kernels.c - the executor's CUDA kernels (exec/kernels.h), GPU Adam
 * (exec/gpu_adam.h), cuBLASLt GEMMs (exec/gemm.h) and the check macros
 * (exec/cuda_check.h), each against a CPU reference on random data.
 *
 * Tolerances (relative error of the norm, ||got - ref|| / ||ref||, references in
 * double from the same bf16 inputs):
 *   - bf16 outputs: 1e-2 (one bf16 rounding is <= 2^-9 = 2e-3 per element);
 *   - fp32 outputs (norm statistics, weight gradients, losses): 1e-5 to 1e-4;
 *   - exact where the kernel does one fp32 operation and one rounding (fills,
 *     residual, casts, gradient accumulation, embedding lookup);
 *   - GPU Adam: bitwise equal (master, m, v, 16-bit copy) to a scalar C copy of
 *     cpu_adam.h's fp32 sequence and to zb_cpu_adam_step itself, the 16-bit
 *     parameters equal to the rounding of the GPU's own master weights, and the fp32
 *     master within 1e-6 of a double-precision Adam after 10 steps.
 * Every output buffer is poisoned with NaN (0xff bytes) before the kernel runs, and
 * every output is checked to be finite.
 *
 * Without a GPU (cudaGetDeviceCount fails or finds none) the program prints
 * "skipped: no GPU" and every test is skipped; with ZB_REQUIRE_GPU=1 (make
 * test-gpu) every test fails instead.
 */
#include "tests/harness.h"

#include <cuda_runtime_api.h>

#include "exec/cuda_check.h"
#include "exec/gemm.h"
#include "exec/gpu_adam.h"
#include "exec/kernels.h"

static int g_gpu;
static int g_require;
static char g_why[256];

#define NEED_GPU()                                                                       \
	do {                                                                             \
		if (!g_gpu) {                                                            \
			if (g_require)                                                   \
				fail_msg("no GPU and ZB_REQUIRE_GPU=1: %s", g_why);      \
			skip();                                                          \
			return;                                                          \
		}                                                                        \
	} while (0)

#define CK(call)                                                                         \
	do {                                                                             \
		zb_error e_;                                                             \
		memset(&e_, 0, sizeof e_);                                               \
		zb_status s_ = (call);                                                   \
		if (s_ != ZB_OK)                                                         \
			fail_msg("%s: status %d: %s", #call, (int)s_, e_.msg);           \
	} while (0)
/* CK's calls name their error argument e_ */

#define CU(call)                                                                         \
	do {                                                                             \
		cudaError_t c_ = (call);                                                 \
		if (c_ != cudaSuccess)                                                   \
			fail_msg("%s: %s", #call, cudaGetErrorString(c_));               \
	} while (0)

/* ---- helpers ------------------------------------------------------------------------ */

static void *dalloc(size_t bytes)
{
	void *p = NULL;
	CU(cudaMalloc(&p, bytes ? bytes : 1));
	CU(cudaMemset(p, 0xff, bytes ? bytes : 1)); /* NaN in bf16 and fp32 */
	return p;
}

static void poison(void *d, size_t bytes)
{
	CU(cudaMemset(d, 0xff, bytes));
}

static void h2d(void *d, const void *h, size_t bytes)
{
	CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
}

static void d2h(void *h, const void *d, size_t bytes)
{
	CU(cudaDeviceSynchronize());
	CU(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

static void *hmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	assert_non_null(p);
	return p;
}

static float bf(uint16_t h)
{
	return zb_bf16_to_f32(h);
}

static uint16_t *host_bf16(size_t n, uint64_t seed, float lo, float hi)
{
	uint16_t *h = hmalloc(n * 2);
	for (size_t i = 0; i < n; i++)
		h[i] = zb_f32_to_bf16(zb_uniform_at(seed, i, lo, hi));
	return h;
}

static float *host_f32(size_t n, uint64_t seed, float lo, float hi)
{
	float *h = hmalloc(n * 4);
	for (size_t i = 0; i < n; i++)
		h[i] = zb_uniform_at(seed, i, lo, hi);
	return h;
}

static uint16_t *dev_bf16(const uint16_t *h, size_t n)
{
	uint16_t *d = dalloc(n * 2);
	h2d(d, h, n * 2);
	return d;
}

/* ||got - ref|| / ||ref|| over n values, every got finite; prints the error. */
static void expect_rel_(const char *what, const double *got, const double *ref, size_t n,
			double tol, const char *file, int line)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(got[i])) {
			print_error("%s: element %zu is %g (not finite)\n", what, i, got[i]);
			_fail(file, line);
		}
		num += (got[i] - ref[i]) * (got[i] - ref[i]);
		den += ref[i] * ref[i];
	}
	double rel = den > 0 ? sqrt(num / den) : sqrt(num);
	print_message("# %-40s rel err %.3g (tol %.0e)\n", what, rel, tol);
	if (!(rel <= tol)) {
		print_error("%s: relative error %.3g > %.3g\n", what, rel, tol);
		_fail(file, line);
	}
}
#define expect_rel(what, got, ref, n, tol) expect_rel_(what, got, ref, n, tol, __FILE__, __LINE__)

static double *bf16_to_d(const uint16_t *h, size_t n)
{
	double *d = hmalloc(n * sizeof *d);
	for (size_t i = 0; i < n; i++)
		d[i] = bf(h[i]);
	return d;
}

static double *f32_to_d(const float *h, size_t n)
{
	double *d = hmalloc(n * sizeof *d);
	for (size_t i = 0; i < n; i++)
		d[i] = h[i];
	return d;
}

/* Download n bf16 values and widen them to double. */
static double *get_bf16(const uint16_t *d, size_t n)
{
	uint16_t *h = hmalloc(n * 2);
	d2h(h, d, n * 2);
	double *r = bf16_to_d(h, n);
	free(h);
	return r;
}

static double *get_f32(const float *d, size_t n)
{
	float *h = hmalloc(n * 4);
	d2h(h, d, n * 4);
	double *r = f32_to_d(h, n);
	free(h);
	return r;
}

/* ---- fills ------------------------------------------------------------------------- */

static void test_fill(void **state)
{
	(void)state;
	NEED_GPU();
	size_t n = 100003;
	uint16_t *db = dalloc(n * 2), *hb = hmalloc(n * 2);
	float *df = dalloc(n * 4), *hf = hmalloc(n * 4);
	int32_t *dt = dalloc(n * 4), *ht = hmalloc(n * 4);
	CK(zb_fill_uniform_bf16(db, n, 42, -3.0f, 5.0f, NULL, &e_));
	CK(zb_fill_uniform_f32(df, n, 43, -1e-3f, 2e-3f, NULL, &e_));
	CK(zb_fill_tokens(dt, n, 44, 50257, NULL, &e_));
	d2h(hb, db, n * 2);
	d2h(hf, df, n * 4);
	d2h(ht, dt, n * 4);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t want = zb_f32_to_bf16(zb_uniform_at(42, i, -3.0f, 5.0f));
		if (hb[i] != want)
			fail_msg("bf16 fill element %zu: 0x%04x, host says 0x%04x", i, hb[i], want);
		float wf = zb_uniform_at(43, i, -1e-3f, 2e-3f);
		if (memcmp(&hf[i], &wf, 4))
			fail_msg("f32 fill element %zu: %.9g, host says %.9g", i, hf[i], wf);
		if (ht[i] != zb_token_at(44, i, 50257) || ht[i] < 0 || ht[i] >= 50257)
			fail_msg("token %zu: %d", i, ht[i]);
		assert_true(bf(hb[i]) >= -3.0f && bf(hb[i]) <= 5.0f);
		sum += bf(hb[i]);
	}
	print_message("# fill: mean %.4f (uniform [-3, 5) has 1)\n", sum / n);
	assert_true(fabs(sum / n - 1.0) < 0.05);
	cudaFree(db), cudaFree(df), cudaFree(dt);
	free(hb), free(hf), free(ht);
}

/* ---- norms ------------------------------------------------------------------------- */

static void norm_case(int rows, int cols, int rms, int inplace)
{
	size_t n = (size_t)rows * cols;
	float eps = 1e-5f;
	uint16_t *hx = host_bf16(n, 100 + cols, -2.0f, 3.0f);
	uint16_t *hg = host_bf16(cols, 200 + cols, 0.5f, 1.5f);
	uint16_t *hb = host_bf16(cols, 300 + cols, -0.5f, 0.5f);
	uint16_t *hd = host_bf16(n, 400 + cols, -1.0f, 1.0f);
	float *hdg0 = host_f32(cols, 500, -1.0f, 1.0f), *hdb0 = host_f32(cols, 501, -1.0f, 1.0f);
	uint16_t *x = dev_bf16(hx, n), *g = dev_bf16(hg, cols), *b = dev_bf16(hb, cols);
	uint16_t *dout = dev_bf16(hd, n);
	uint16_t *out = inplace ? dev_bf16(hx, n) : dalloc(n * 2), *dx = dalloc(n * 2);
	float *mean = dalloc(rows * 4), *rstd = dalloc(rows * 4);
	float *dg = dalloc(cols * 4), *db = dalloc(cols * 4);
	h2d(dg, hdg0, cols * 4);
	h2d(db, hdb0, cols * 4);

	if (rms)
		CK(zb_rmsnorm_fwd(out, rstd, inplace ? out : x, g, rows, cols, eps, NULL, &e_));
	else
		CK(zb_layernorm_fwd(out, mean, rstd, inplace ? out : x, g, b, rows, cols, eps,
				    NULL, &e_));
	if (rms)
		CK(zb_rmsnorm_bwd(dx, dg, dout, x, g, rstd, rows, cols, NULL, &e_));
	else
		CK(zb_layernorm_bwd(dx, dg, db, dout, x, g, mean, rstd, rows, cols, NULL, &e_));

	double *ro = hmalloc(n * 8), *rdx = hmalloc(n * 8), *rmu = hmalloc(rows * 8),
	       *rrs = hmalloc(rows * 8), *rdg = hmalloc(cols * 8), *rdb = hmalloc(cols * 8);
	for (int c = 0; c < cols; c++)
		rdg[c] = hdg0[c], rdb[c] = hdb0[c];
	for (int r = 0; r < rows; r++) {
		const uint16_t *xr = hx + (size_t)r * cols, *dr = hd + (size_t)r * cols;
		double mu = 0, var = 0;
		if (!rms) {
			for (int c = 0; c < cols; c++)
				mu += bf(xr[c]);
			mu /= cols;
		}
		for (int c = 0; c < cols; c++)
			var += (bf(xr[c]) - mu) * (bf(xr[c]) - mu);
		double rs = 1.0 / sqrt(var / cols + eps);
		rmu[r] = mu, rrs[r] = rs;
		double a = 0, bsum = 0;
		for (int c = 0; c < cols; c++) {
			double xh = (bf(xr[c]) - mu) * rs, dgc = bf(dr[c]) * bf(hg[c]);
			ro[(size_t)r * cols + c] = xh * bf(hg[c]) + (rms ? 0 : bf(hb[c]));
			a += dgc;
			bsum += dgc * xh;
			rdg[c] += bf(dr[c]) * xh;
			rdb[c] += bf(dr[c]);
		}
		a = rms ? 0 : a / cols;
		bsum /= cols;
		for (int c = 0; c < cols; c++) {
			double xh = (bf(xr[c]) - mu) * rs;
			rdx[(size_t)r * cols + c] = rs * (bf(dr[c]) * bf(hg[c]) - a - xh * bsum);
		}
	}
	char what[96];
	const char *nm = rms ? "rmsnorm" : "layernorm";
	double *got = get_bf16(out, n);
	snprintf(what, sizeof what, "%s fwd %dx%d%s", nm, rows, cols, inplace ? " in place" : "");
	expect_rel(what, got, ro, n, 1e-2);
	free(got);
	got = get_f32(rstd, rows);
	snprintf(what, sizeof what, "%s rstd %dx%d", nm, rows, cols);
	expect_rel(what, got, rrs, rows, 1e-5);
	free(got);
	if (!rms) {
		got = get_f32(mean, rows);
		/* the mean is near 0.5 here, so a relative check is meaningful */
		snprintf(what, sizeof what, "%s mean %dx%d", nm, rows, cols);
		expect_rel(what, got, rmu, rows, 1e-5);
		free(got);
	}
	got = get_bf16(dx, n);
	snprintf(what, sizeof what, "%s bwd dx %dx%d", nm, rows, cols);
	expect_rel(what, got, rdx, n, 1e-2);
	free(got);
	got = get_f32(dg, cols);
	snprintf(what, sizeof what, "%s bwd dgain (+=) %dx%d", nm, rows, cols);
	expect_rel(what, got, rdg, cols, 1e-5);
	free(got);
	if (!rms) {
		got = get_f32(db, cols);
		snprintf(what, sizeof what, "%s bwd dbias (+=) %dx%d", nm, rows, cols);
		expect_rel(what, got, rdb, cols, 1e-5);
		free(got);
	}
	cudaFree(x), cudaFree(g), cudaFree(b), cudaFree(dout), cudaFree(out), cudaFree(dx);
	cudaFree(mean), cudaFree(rstd), cudaFree(dg), cudaFree(db);
	free(hx), free(hg), free(hb), free(hd), free(hdg0), free(hdb0);
	free(ro), free(rdx), free(rmu), free(rrs), free(rdg), free(rdb);
}

static void test_layernorm(void **state)
{
	(void)state;
	NEED_GPU();
	norm_case(37, 768, 0, 0);  /* vector path */
	norm_case(300, 100, 0, 0); /* scalar path (100 % 8 != 0), several row chunks */
	norm_case(5, 1600, 0, 1);  /* out == x */
}

static void test_rmsnorm(void **state)
{
	(void)state;
	NEED_GPU();
	norm_case(37, 768, 1, 0);
	norm_case(300, 100, 1, 0);
	norm_case(5, 4096, 1, 1);
}

/* ---- activations ------------------------------------------------------------------- */

static double gelu_d(double x)
{
	double k0 = sqrt(2.0 / M_PI), u = k0 * (x + 0.044715 * x * x * x);
	return 0.5 * x * (1 + tanh(u));
}

static double gelu_grad_d(double x)
{
	double k0 = sqrt(2.0 / M_PI), u = k0 * (x + 0.044715 * x * x * x), t = tanh(u);
	return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k0 * (1 + 3 * 0.044715 * x * x);
}

static void test_gelu(void **state)
{
	(void)state;
	NEED_GPU();
	size_t n = 10007; /* a scalar tail after the vectors */
	uint16_t *hx = host_bf16(n, 7, -5.0f, 5.0f), *hd = host_bf16(n, 8, -1.0f, 1.0f);
	uint16_t *x = dev_bf16(hx, n), *d = dev_bf16(hd, n), *y = dalloc(n * 2), *dx = dalloc(n * 2);
	CK(zb_gelu_fwd(y, x, n, NULL, &e_));
	CK(zb_gelu_bwd(dx, d, x, n, NULL, &e_));
	double *ry = hmalloc(n * 8), *rdx = hmalloc(n * 8);
	for (size_t i = 0; i < n; i++) {
		ry[i] = gelu_d(bf(hx[i]));
		rdx[i] = bf(hd[i]) * gelu_grad_d(bf(hx[i]));
	}
	double *got = get_bf16(y, n);
	expect_rel("gelu fwd", got, ry, n, 1e-2);
	free(got);
	got = get_bf16(dx, n);
	expect_rel("gelu bwd", got, rdx, n, 1e-2);
	free(got);
	/* in place: dx over dout, out over x, on a misaligned start (scalar path) */
	CK(zb_gelu_bwd(d + 1, d + 1, x + 1, n - 1, NULL, &e_));
	got = get_bf16(d + 1, n - 1);
	expect_rel("gelu bwd in place, misaligned", got, rdx + 1, n - 1, 1e-2);
	free(got);
	CK(zb_gelu_fwd(x, x, n, NULL, &e_));
	got = get_bf16(x, n);
	expect_rel("gelu fwd in place", got, ry, n, 1e-2);
	free(got);
	cudaFree(x), cudaFree(d), cudaFree(y), cudaFree(dx);
	free(hx), free(hd), free(ry), free(rdx);
}

static void swiglu_case(int rows, int ffn)
{
	size_t n = (size_t)rows * ffn;
	uint16_t *hin = host_bf16(2 * n, 11 + ffn, -4.0f, 4.0f), *hd = host_bf16(n, 12, -1, 1);
	uint16_t *in = dev_bf16(hin, 2 * n), *d = dev_bf16(hd, n);
	uint16_t *out = dalloc(n * 2), *din = dalloc(2 * n * 2);
	CK(zb_swiglu_fwd(out, in, rows, ffn, NULL, &e_));
	CK(zb_swiglu_bwd(din, d, in, rows, ffn, NULL, &e_));
	double *ro = hmalloc(n * 8), *rdin = hmalloc(2 * n * 8);
	for (int r = 0; r < rows; r++) {
		for (int j = 0; j < ffn; j++) {
			double g = bf(hin[(size_t)r * 2 * ffn + j]);
			double u = bf(hin[(size_t)r * 2 * ffn + ffn + j]);
			double dd = bf(hd[(size_t)r * ffn + j]);
			double s = 1 / (1 + exp(-g));
			ro[(size_t)r * ffn + j] = g * s * u;
			rdin[(size_t)r * 2 * ffn + j] = dd * u * s * (1 + g * (1 - s));
			rdin[(size_t)r * 2 * ffn + ffn + j] = dd * g * s;
		}
	}
	char what[64];
	double *got = get_bf16(out, n);
	snprintf(what, sizeof what, "swiglu fwd %dx%d", rows, ffn);
	expect_rel(what, got, ro, n, 1e-2);
	free(got);
	got = get_bf16(din, 2 * n);
	snprintf(what, sizeof what, "swiglu bwd %dx%d", rows, ffn);
	expect_rel(what, got, rdin, 2 * n, 1e-2);
	free(got);
	cudaFree(in), cudaFree(d), cudaFree(out), cudaFree(din);
	free(hin), free(hd), free(ro), free(rdin);
}

static void test_swiglu(void **state)
{
	(void)state;
	NEED_GPU();
	swiglu_case(7, 256);
	swiglu_case(9, 100);
}

/* ---- softmax ----------------------------------------------------------------------- */

static void softmax_case(int bh, int s, int causal)
{
	size_t n = (size_t)bh * s * s;
	float scale = 1.0f / sqrtf(64.0f);
	uint16_t *hx = host_bf16(n, 21 + s, -30.0f, 30.0f), *hdp = host_bf16(n, 22, -1, 1);
	/* masked entries hold NaN: the kernel must never read them */
	if (causal)
		for (size_t row = 0; row < (size_t)bh * s; row++)
			for (int j = (int)(row % s) + 1; j < s; j++)
				hx[row * s + j] = 0x7fc0;
	uint16_t *sc = dev_bf16(hx, n), *dp = dev_bf16(hdp, n), *dx = dalloc(n * 2);
	CK(zb_softmax_fwd(sc, bh, s, scale, causal, NULL, &e_));
	uint16_t *hp = hmalloc(n * 2);
	d2h(hp, sc, n * 2);
	CK(zb_softmax_bwd(dx, dp, sc, bh, s, scale, causal, NULL, &e_));
	double *rp = hmalloc(n * 8), *rdx = hmalloc(n * 8), worst_sum = 0;
	for (size_t row = 0; row < (size_t)bh * s; row++) {
		int valid = causal ? (int)(row % s) + 1 : s;
		const uint16_t *x = hx + row * s;
		double m = -INFINITY, sum = 0, psum = 0, dot = 0;
		for (int j = 0; j < valid; j++)
			m = fmax(m, scale * (double)bf(x[j]));
		for (int j = 0; j < valid; j++)
			sum += exp(scale * (double)bf(x[j]) - m);
		for (int j = 0; j < s; j++) {
			size_t i = row * s + j;
			rp[i] = j < valid ? exp(scale * (double)bf(x[j]) - m) / sum : 0;
			psum += bf(hp[i]);
			if (j >= valid && hp[i] != 0)
				fail_msg("softmax row %zu: masked entry %d is 0x%04x, want 0", row, j,
					 hp[i]);
			if (j < valid)
				dot += bf(hp[i]) * (double)bf(hdp[i]);
		}
		for (int j = 0; j < s; j++) {
			size_t i = row * s + j;
			rdx[i] = j < valid ? scale * bf(hp[i]) * (bf(hdp[i]) - dot) : 0;
		}
		worst_sum = fmax(worst_sum, fabs(psum - 1));
	}
	char what[64];
	print_message("# softmax %dx%dx%d: worst |row sum - 1| = %.3g (tol 1e-2)\n", bh, s, s,
		      worst_sum);
	assert_true(worst_sum <= 1e-2);
	double *got = bf16_to_d(hp, n);
	snprintf(what, sizeof what, "softmax fwd %dx%dx%d%s", bh, s, s, causal ? " causal" : "");
	expect_rel(what, got, rp, n, 1e-2);
	free(got);
	got = get_bf16(dx, n);
	for (size_t row = 0; row < (size_t)bh * s && causal; row++)
		for (int j = (int)(row % s) + 1; j < s; j++)
			if (got[row * s + j] != 0)
				fail_msg("softmax bwd row %zu: masked entry %d is %g", row, j,
					 got[row * s + j]);
	snprintf(what, sizeof what, "softmax bwd %dx%dx%d%s", bh, s, s, causal ? " causal" : "");
	expect_rel(what, got, rdx, n, 1e-2);
	free(got);
	cudaFree(sc), cudaFree(dp), cudaFree(dx);
	free(hx), free(hdp), free(hp), free(rp), free(rdx);
}

static void test_softmax(void **state)
{
	(void)state;
	NEED_GPU();
	softmax_case(3, 64, 1);  /* vector path */
	softmax_case(2, 37, 1);  /* scalar path */
	softmax_case(2, 520, 1); /* rows longer than one vector sweep of a warp (256) */
	softmax_case(2, 64, 0);  /* not causal */
}

/* ---- residual, casts, gradient accumulation ----------------------------------------- */

static void test_residual_casts_acc(void **state)
{
	(void)state;
	NEED_GPU();
	size_t n = 100003;
	uint16_t *ha = host_bf16(n + 1, 31, -8, 8), *hb = host_bf16(n + 1, 32, -8, 8);
	float *hf = host_f32(n + 1, 33, -100, 100);
	uint16_t *a = dev_bf16(ha, n + 1), *b = dev_bf16(hb, n + 1), *out = dalloc((n + 1) * 2);
	uint16_t *h = hmalloc((n + 1) * 2);
	float *f = dalloc((n + 1) * 4), *hg = hmalloc((n + 1) * 4);
	for (int off = 0; off < 2; off++) { /* 0: vector path, 1: a and out misaligned */
		size_t m = n - off;
		poison(out, (n + 1) * 2);
		CK(zb_residual_add(out + off, a + off, b, m, NULL, &e_));
		d2h(h, out + off, m * 2);
		for (size_t i = 0; i < m; i++) {
			uint16_t want = zb_f32_to_bf16(bf(ha[i + off]) + bf(hb[i]));
			if (h[i] != want)
				fail_msg("residual (offset %d) element %zu: 0x%04x, want 0x%04x", off,
					 i, h[i], want);
		}
	}
	/* acc_fp32 += bf16, exactly one fp32 addition */
	h2d(f, hf, (n + 1) * 4);
	CK(zb_grad_acc_f32(f, a, n, NULL, &e_));
	d2h(hg, f, n * 4);
	for (size_t i = 0; i < n; i++) {
		float want = hf[i] + bf(ha[i]);
		if (memcmp(&hg[i], &want, 4))
			fail_msg("grad_acc_f32 element %zu: %.9g, want %.9g", i, hg[i], want);
	}
	/* bf16 += bf16 in place, rounded once */
	CK(zb_grad_acc_bf16(b, a, n, NULL, &e_));
	d2h(h, b, n * 2);
	for (size_t i = 0; i < n; i++) {
		uint16_t want = zb_f32_to_bf16(bf(hb[i]) + bf(ha[i]));
		if (h[i] != want)
			fail_msg("grad_acc_bf16 element %zu: 0x%04x, want 0x%04x", i, h[i], want);
	}
	/* casts */
	h2d(f, hf, (n + 1) * 4);
	poison(out, (n + 1) * 2);
	CK(zb_cast_f32_bf16(out, f, n, NULL, &e_));
	d2h(h, out, n * 2);
	for (size_t i = 0; i < n; i++)
		if (h[i] != zb_f32_to_bf16(hf[i]))
			fail_msg("cast f32->bf16 element %zu: 0x%04x, want 0x%04x", i, h[i],
				 zb_f32_to_bf16(hf[i]));
	poison(f, (n + 1) * 4);
	CK(zb_cast_bf16_f32(f + 1, a, n, NULL, &e_)); /* misaligned output */
	d2h(hg, f + 1, n * 4);
	for (size_t i = 0; i < n; i++)
		if (hg[i] != bf(ha[i]))
			fail_msg("cast bf16->f32 element %zu: %g, want %g", i, hg[i], bf(ha[i]));
	print_message("# residual, grad_acc f32/bf16, casts: bitwise equal to the host\n");
	cudaFree(a), cudaFree(b), cudaFree(out), cudaFree(f);
	free(ha), free(hb), free(hf), free(h), free(hg);
}

/* ---- embedding --------------------------------------------------------------------- */

static void embed_case(int rows, int seq, int cols, int vocab)
{
	size_t n = (size_t)rows * cols;
	int32_t *hid = hmalloc(rows * 4);
	for (int r = 0; r < rows; r++)
		hid[r] = zb_token_at(51, r, vocab);
	hid[1] = hid[0];  /* a repeat: the scatter-add must add both */
	hid[2] = -1;      /* invalid ids: zeros forward, skipped backward */
	hid[3] = vocab;
	uint16_t *hwte = host_bf16((size_t)vocab * cols, 52, -1, 1);
	uint16_t *hwpe = host_bf16((size_t)seq * cols, 53, -1, 1);
	uint16_t *hd = host_bf16(n, 54, -1, 1);
	float *hgw = host_f32((size_t)vocab * cols, 55, -1, 1), *hgp = host_f32((size_t)seq * cols, 56, -1, 1);
	int32_t *ids = dalloc(rows * 4);
	h2d(ids, hid, rows * 4);
	uint16_t *wte = dev_bf16(hwte, (size_t)vocab * cols), *wpe = dev_bf16(hwpe, (size_t)seq * cols);
	uint16_t *dout = dev_bf16(hd, n), *out = dalloc(n * 2);
	float *gw = dalloc((size_t)vocab * cols * 4), *gp = dalloc((size_t)seq * cols * 4);
	uint16_t *bgw = dev_bf16(hwte, (size_t)vocab * cols); /* bf16 grads start from wte's values */
	uint16_t *bgp = dev_bf16(hwpe, (size_t)seq * cols);
	h2d(gw, hgw, (size_t)vocab * cols * 4);
	h2d(gp, hgp, (size_t)seq * cols * 4);

	CK(zb_embed_fwd(out, ids, wte, wpe, rows, seq, cols, vocab, NULL, &e_));
	CK(zb_embed_bwd_f32(gw, gp, ids, dout, rows, seq, cols, vocab, NULL, &e_));
	CK(zb_embed_bwd_bf16(bgw, bgp, ids, dout, rows, seq, cols, vocab, NULL, &e_));

	uint16_t *h = hmalloc(n * 2);
	d2h(h, out, n * 2);
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			int id = hid[r];
			float t = id >= 0 && id < vocab ? bf(hwte[(size_t)id * cols + c]) : 0.0f;
			uint16_t want = zb_f32_to_bf16(t + bf(hwpe[(size_t)(r % seq) * cols + c]));
			if (h[(size_t)r * cols + c] != want)
				fail_msg("embed fwd [%d, %d]: 0x%04x, want 0x%04x", r, c,
					 h[(size_t)r * cols + c], want);
		}
	}
	size_t nw = (size_t)vocab * cols, np = (size_t)seq * cols;
	double *rw = f32_to_d(hgw, nw), *rp = f32_to_d(hgp, np);
	double *rbw = bf16_to_d(hwte, nw), *rbp = bf16_to_d(hwpe, np);
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			double d = bf(hd[(size_t)r * cols + c]);
			if (hid[r] >= 0 && hid[r] < vocab) {
				rw[(size_t)hid[r] * cols + c] += d;
				rbw[(size_t)hid[r] * cols + c] += d;
			}
			rp[(size_t)(r % seq) * cols + c] += d;
			rbp[(size_t)(r % seq) * cols + c] += d;
		}
	}
	char what[80];
	double *got = get_f32(gw, nw);
	snprintf(what, sizeof what, "embed bwd f32 dwte (%d cols)", cols);
	expect_rel(what, got, rw, nw, 1e-6);
	free(got);
	got = get_f32(gp, np);
	snprintf(what, sizeof what, "embed bwd f32 dwpe (%d cols)", cols);
	expect_rel(what, got, rp, np, 1e-6);
	free(got);
	got = get_bf16(bgw, nw);
	snprintf(what, sizeof what, "embed bwd bf16 dwte (%d cols)", cols);
	expect_rel(what, got, rbw, nw, 1e-2);
	free(got);
	got = get_bf16(bgp, np);
	snprintf(what, sizeof what, "embed bwd bf16 dwpe (%d cols)", cols);
	expect_rel(what, got, rbp, np, 1e-2);
	free(got);
	cudaFree(ids), cudaFree(wte), cudaFree(wpe), cudaFree(dout), cudaFree(out);
	cudaFree(gw), cudaFree(gp), cudaFree(bgw), cudaFree(bgp);
	free(hid), free(hwte), free(hwpe), free(hd), free(hgw), free(hgp), free(h);
	free(rw), free(rp), free(rbw), free(rbp);
}

static void test_embedding(void **state)
{
	(void)state;
	NEED_GPU();
	embed_case(40, 8, 64, 50);  /* vector path, bf16x2 atomics */
	embed_case(40, 8, 36, 50);  /* scalar path */
	embed_case(33, 16, 7, 11);  /* odd width: scalar bf16 atomics */
}

/* ---- cross-entropy ----------------------------------------------------------------- */

static void ce_case(int rows, int vocab, int inplace)
{
	size_t n = (size_t)rows * vocab;
	uint16_t *hx = host_bf16(n, 61 + vocab, -20, 20);
	/* one row of huge logits: the online max keeps it finite */
	for (int j = 0; j < vocab; j++)
		hx[(size_t)2 * vocab + j] = zb_f32_to_bf16(zb_uniform_at(62, j, -1e4f, 1e4f));
	int32_t *ht = hmalloc(rows * 4);
	for (int r = 0; r < rows; r++)
		ht[r] = zb_token_at(63, r, vocab);
	ht[1] = -1; /* ignored row */
	ht[3] = vocab - 1;
	int valid = rows - 1;
	float gscale = 1.0f / valid;
	uint16_t *x = dev_bf16(hx, n), *dl = inplace ? x : dalloc(n * 2);
	int32_t *t = dalloc(rows * 4);
	h2d(t, ht, rows * 4);
	float *losses = dalloc(rows * 4), *mean = dalloc(4);
	CK(zb_cross_entropy(dl, losses, mean, x, t, rows, vocab, gscale, NULL, &e_));

	double *rl = hmalloc(rows * 8), *rd = hmalloc(n * 8), rmean = 0;
	for (int r = 0; r < rows; r++) {
		const uint16_t *xr = hx + (size_t)r * vocab;
		double m = -INFINITY, s = 0;
		for (int j = 0; j < vocab; j++)
			m = fmax(m, bf(xr[j]));
		for (int j = 0; j < vocab; j++)
			s += exp(bf(xr[j]) - m);
		int tr = ht[r];
		int ok = tr >= 0 && tr < vocab;
		rl[r] = ok ? m + log(s) - bf(xr[tr]) : 0;
		rmean += rl[r];
		for (int j = 0; j < vocab; j++)
			rd[(size_t)r * vocab + j] =
				ok ? gscale * (exp(bf(xr[j]) - m) / s - (j == tr)) : 0;
	}
	rmean /= valid;
	char what[80];
	double *got = get_f32(losses, rows);
	snprintf(what, sizeof what, "cross-entropy losses %dx%d", rows, vocab);
	expect_rel(what, got, rl, rows, 1e-5);
	assert_true(got[1] == 0.0);
	free(got);
	got = get_f32(mean, 1);
	snprintf(what, sizeof what, "cross-entropy mean loss %dx%d", rows, vocab);
	expect_rel(what, got, &rmean, 1, 1e-5);
	free(got);
	got = get_bf16(dl, n);
	for (int j = 0; j < vocab; j++)
		if (got[(size_t)vocab + j] != 0)
			fail_msg("cross-entropy ignored row: dlogits[%d] = %g", j, got[vocab + j]);
	snprintf(what, sizeof what, "cross-entropy dlogits %dx%d%s", rows, vocab,
		 inplace ? " in place" : "");
	expect_rel(what, got, rd, n, 1e-2);
	free(got);
	cudaFree(x), cudaFree(t), cudaFree(losses), cudaFree(mean);
	if (!inplace)
		cudaFree(dl);
	free(hx), free(ht), free(rl), free(rd);
}

static void test_cross_entropy(void **state)
{
	(void)state;
	NEED_GPU();
	ce_case(9, 1000, 0);   /* vector path */
	ce_case(9, 1001, 1);   /* scalar path, in place */
	ce_case(4, 50304, 1);  /* GPT-2's padded vocabulary */
}

/* ---- GPU Adam ---------------------------------------------------------------------- */

/* The fp32 sequence of cpu_adam.h, written out in scalar C (ISO C: no contraction). */
static void adam_f32_ref(float *p, float *m, float *v, uint16_t *p16, const uint16_t *g16,
			 size_t n, const zb_gpu_adam_coeffs *c, zb_half gt, zb_half pt)
{
	for (size_t i = 0; i < n; i++) {
		float gh = gt == ZB_HALF_BF16 ? zb_bf16_to_f32(g16[i]) : zb_f16_to_f32(g16[i]);
		float g = gh * c->inv_scale;
		float t = c->c1 * g;
		m[i] = fmaf(c->b1, m[i], t);
		float gg = g * g;
		t = c->c2 * gg;
		v[i] = fmaf(c->b2, v[i], t);
		float vh = v[i] * c->ibc2;
		float d = sqrtf(vh) + c->eps;
		float u = m[i] / d;
		p[i] = fmaf(-c->step, u, fmaf(-c->decay, p[i], p[i]));
		p16[i] = pt == ZB_HALF_BF16 ? zb_f32_to_bf16(p[i]) : zb_f32_to_f16(p[i]);
	}
}

/* One Adam configuration: K steps on n parameters, the arrays starting off_p
 * elements into their allocations (off_g for the gradient). */
static void adam_case(size_t n, int off_p, int off_g, zb_half gt, zb_half pt, double gscale,
		      double wd)
{
	enum { K = 10 };
	size_t cap = n + 8;
	float *dp = dalloc(cap * 4), *dm = dalloc(cap * 4), *dv = dalloc(cap * 4);
	uint16_t *dq = dalloc(cap * 2), *dg = dalloc(cap * 2);
	float *p = host_f32(n, 71, -1, 1), *m = hmalloc(n * 4), *v = hmalloc(n * 4);
	uint16_t *q = hmalloc(n * 2), *g = hmalloc(n * 2);
	double *P = hmalloc(n * 8), *M = hmalloc(n * 8), *V = hmalloc(n * 8);
	/* the CPU's own fused Adam (exec/cpu_adam.c) on a copy */
	float *cp = host_f32(n, 71, -1, 1), *cm = hmalloc(n * 4), *cv = hmalloc(n * 4);
	uint16_t *cq = hmalloc(n * 2);
	for (size_t i = 0; i < n; i++) {
		m[i] = v[i] = cm[i] = cv[i] = 0.0f;
		P[i] = p[i], M[i] = V[i] = 0;
	}
	zb_adam_buffers cb = {g, cp, cm, cv, cq};
	h2d(dp + off_p, p, n * 4);
	h2d(dm + off_p, m, n * 4);
	h2d(dv + off_p, v, n * 4);
	zb_adam_params ap;
	memset(&ap, 0, sizeof ap);
	ap.lr = 1e-3, ap.beta1 = 0.9, ap.beta2 = 0.999, ap.eps = 1e-8, ap.weight_decay = wd;
	ap.grad_scale = gscale, ap.grad_type = gt, ap.param_type = pt;
	zb_adam_buffers b = {dg + off_g, dp + off_p, dm + off_p, dv + off_p, dq + off_p};
	for (int k = 1; k <= K; k++) {
		ap.step = k;
		/* gradients of either sign and several magnitudes, a few exact zeros */
		for (size_t i = 0; i < n; i++) {
			float x = zb_uniform_at(1000 + k, i, -1, 1);
			x *= i % 3 == 0 ? 1e-1f : i % 3 == 1 ? 1e-3f : 1e-5f;
			if (i % 97 == 0)
				x = 0;
			x *= (float)gscale;
			g[i] = gt == ZB_HALF_BF16 ? zb_f32_to_bf16(x) : zb_f32_to_f16(x);
		}
		h2d(dg + off_g, g, n * 2);
		poison(dq, cap * 2);
		CK(zb_gpu_adam_step(&ap, &b, (int64_t)n, NULL, &e_));
		zb_gpu_adam_coeffs c;
		CK(zb_gpu_adam_coeffs_make(&ap, &c, &e_));
		adam_f32_ref(p, m, v, q, g, n, &c, gt, pt);
		CK(zb_cpu_adam_step(NULL, &ap, &cb, (int64_t)n, &e_));
		double bc1 = 1 - pow(ap.beta1, k), bc2 = 1 - pow(ap.beta2, k);
		for (size_t i = 0; i < n; i++) {
			double gd = (gt == ZB_HALF_BF16 ? zb_bf16_to_f32(g[i]) : zb_f16_to_f32(g[i])) /
				    gscale;
			M[i] = ap.beta1 * M[i] + (1 - ap.beta1) * gd;
			V[i] = ap.beta2 * V[i] + (1 - ap.beta2) * gd * gd;
			P[i] = P[i] - ap.lr * wd * P[i] -
			       ap.lr * (M[i] / bc1) / (sqrt(V[i] / bc2) + ap.eps);
		}
	}
	float *gp = hmalloc(n * 4), *gm = hmalloc(n * 4), *gv = hmalloc(n * 4);
	uint16_t *gq = hmalloc(n * 2);
	d2h(gp, dp + off_p, n * 4);
	d2h(gm, dm + off_p, n * 4);
	d2h(gv, dv + off_p, n * 4);
	d2h(gq, dq + off_p, n * 2);
	size_t bad = 0, first = 0, cbad = 0;
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&gp[i], &cp[i], 4) || memcmp(&gm[i], &cm[i], 4) ||
		    memcmp(&gv[i], &cv[i], 4) || gq[i] != cq[i])
			cbad++;
		if (memcmp(&gp[i], &p[i], 4) || memcmp(&gm[i], &m[i], 4) ||
		    memcmp(&gv[i], &v[i], 4) || gq[i] != q[i]) {
			if (!bad++)
				first = i;
		}
		uint16_t want = pt == ZB_HALF_BF16 ? zb_f32_to_bf16(gp[i]) : zb_f32_to_f16(gp[i]);
		if (gq[i] != want)
			fail_msg("adam: param16[%zu] = 0x%04x, the rounding of master %.9g is 0x%04x",
				 i, gq[i], gp[i], want);
	}
	char what[128];
	zb_adam_isa isa = ZB_ADAM_ISA_SCALAR;
	CK(zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, &e_));
	snprintf(what, sizeof what,
		 "gpu adam n %zu off %d/%d %s/%s scale %g: %zu differ from C, %zu from cpu adam (%s)",
		 n, off_p, off_g, gt == ZB_HALF_BF16 ? "bf16" : "fp16",
		 pt == ZB_HALF_BF16 ? "bf16" : "fp16", gscale, bad, cbad, zb_adam_isa_name(isa));
	print_message("# %s\n", what);
	if (cbad)
		fail_msg("adam: %zu parameters differ between GPU and zb_cpu_adam_step", cbad);
	if (bad)
		fail_msg("adam: %zu parameters differ from the C sequence; first %zu: master %.9g vs "
			 "%.9g, m %.9g vs %.9g, v %.9g vs %.9g",
			 bad, first, gp[first], p[first], gm[first], m[first], gv[first], v[first]);
	double *gd = f32_to_d(gp, n);
	snprintf(what, sizeof what, "gpu adam master vs double after %d steps", K);
	expect_rel(what, gd, P, n, 1e-6);
	free(gd);
	gd = f32_to_d(gm, n);
	expect_rel("gpu adam m vs double", gd, M, n, 1e-5);
	free(gd);
	gd = f32_to_d(gv, n);
	expect_rel("gpu adam v vs double", gd, V, n, 1e-5);
	free(gd);
	cudaFree(dp), cudaFree(dm), cudaFree(dv), cudaFree(dq), cudaFree(dg);
	free(p), free(m), free(v), free(q), free(g), free(P), free(M), free(V);
	free(gp), free(gm), free(gv), free(gq), free(cp), free(cm), free(cv), free(cq);
}

static void test_gpu_adam(void **state)
{
	(void)state;
	NEED_GPU();
	adam_case(100003, 0, 0, ZB_HALF_BF16, ZB_HALF_BF16, 1.0, 0.01);    /* vectors + tail */
	adam_case(100003, 3, 3, ZB_HALF_BF16, ZB_HALF_BF16, 1.0, 0.0);     /* scalar head */
	adam_case(10007, 0, 1, ZB_HALF_BF16, ZB_HALF_BF16, 1.0, 0.01);     /* phases differ */
	adam_case(100003, 0, 0, ZB_HALF_FP16, ZB_HALF_FP16, 1024.0, 0.01); /* loss-scaled fp16 */
	adam_case(5, 0, 0, ZB_HALF_BF16, ZB_HALF_FP16, 1.0, 0.1);          /* tiny */
	zb_error e;
	zb_adam_params ap;
	memset(&ap, 0, sizeof ap);
	ap.lr = 1e-3, ap.beta1 = 0.9, ap.beta2 = 0.999, ap.grad_scale = 1, ap.step = 0;
	zb_gpu_adam_coeffs c;
	assert_int_equal(zb_gpu_adam_coeffs_make(&ap, &c, &e), ZB_E_INPUT);
	print_message("# rejected: %s\n", e.msg);
}

/* ---- GEMM -------------------------------------------------------------------------- */

static float half_to_f(uint16_t h, zb_dtype t)
{
	return t == ZB_FP16 ? zb_f16_to_f32(h) : zb_bf16_to_f32(h);
}

static uint16_t f_to_half(float f, zb_dtype t)
{
	return t == ZB_FP16 ? zb_f32_to_f16(f) : zb_f32_to_bf16(f);
}

static void gemm_case(zb_gemm *gm, zb_dtype dt, int c_f32, int ta, int tb, int m, int n, int k,
		      int batch, int pad, float alpha, float beta)
{
	zb_gemm_op op;
	zb_gemm_op_init(&op, dt, ta, tb, m, n, k);
	op.c_f32 = c_f32, op.batch = batch, op.alpha = alpha, op.beta = beta;
	int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
	op.lda = ra + pad, op.ldb = rb + pad, op.ldc = m + pad;
	op.stride_a = op.lda * ca + 8 * pad, op.stride_b = op.ldb * cb + 8 * pad;
	op.stride_c = op.ldc * n + 8 * pad;
	size_t na = (size_t)op.stride_a * batch, nb = (size_t)op.stride_b * batch;
	size_t nc = (size_t)op.stride_c * batch, esc = c_f32 ? 4 : 2;
	uint16_t *ha = hmalloc(na * 2), *hb = hmalloc(nb * 2), *hc16 = hmalloc(nc * 2);
	float *hc32 = hmalloc(nc * 4);
	for (size_t i = 0; i < na; i++)
		ha[i] = f_to_half(zb_uniform_at(81, i, -1, 1), dt);
	for (size_t i = 0; i < nb; i++)
		hb[i] = f_to_half(zb_uniform_at(82, i, -1, 1), dt);
	for (size_t i = 0; i < nc; i++) {
		hc32[i] = zb_uniform_at(83, i, -1, 1);
		hc16[i] = f_to_half(hc32[i], dt);
	}
	void *A = dalloc(na * 2), *B = dalloc(nb * 2), *C = dalloc(nc * esc);
	h2d(A, ha, na * 2);
	h2d(B, hb, nb * 2);
	if (beta != 0)
		h2d(C, c_f32 ? (void *)hc32 : (void *)hc16, nc * esc);
	CK(zb_gemm_run(gm, &op, A, B, C, NULL, &e_));

	size_t nout = (size_t)m * n * batch, o = 0;
	double *ref = hmalloc(nout * 8), *got = hmalloc(nout * 8);
	void *hout = hmalloc(nc * esc);
	d2h(hout, C, nc * esc);
	for (int bi = 0; bi < batch; bi++) {
		const uint16_t *a = ha + (size_t)bi * op.stride_a, *b = hb + (size_t)bi * op.stride_b;
		size_t cb0 = (size_t)bi * op.stride_c;
		for (int j = 0; j < n; j++) {
			for (int i = 0; i < m; i++, o++) {
				double s = 0;
				for (int l = 0; l < k; l++) {
					double av = half_to_f(ta ? a[i * op.lda + l] : a[l * op.lda + i], dt);
					double bv = half_to_f(tb ? b[l * op.ldb + j] : b[j * op.ldb + l], dt);
					s += av * bv;
				}
				size_t ci = cb0 + (size_t)j * op.ldc + i;
				double c0 = c_f32 ? hc32[ci] : half_to_f(hc16[ci], dt);
				ref[o] = alpha * s + (beta != 0 ? beta * c0 : 0);
				got[o] = c_f32 ? ((float *)hout)[ci] : half_to_f(((uint16_t *)hout)[ci], dt);
			}
		}
	}
	char what[128];
	snprintf(what, sizeof what, "gemm %s%s %c%c m %d n %d k %d batch %d pad %d b %g",
		 dt == ZB_FP16 ? "fp16" : "bf16", c_f32 ? "->f32" : "", ta ? 'T' : 'N',
		 tb ? 'T' : 'N', m, n, k, batch, pad, beta);
	expect_rel(what, got, ref, nout, c_f32 ? 1e-4 : 1e-2);
	cudaFree(A), cudaFree(B), cudaFree(C);
	free(ha), free(hb), free(hc16), free(hc32), free(ref), free(got), free(hout);
}

static void test_gemm(void **state)
{
	(void)state;
	NEED_GPU();
	zb_gemm *gm = NULL;
	CK(zb_gemm_create(&gm, &e_));
	gemm_case(gm, ZB_BF16, 0, 0, 0, 64, 48, 80, 1, 0, 1.0f, 0.0f);
	int plans = zb_gemm_plans(gm);
	gemm_case(gm, ZB_BF16, 0, 0, 0, 64, 48, 80, 1, 0, 1.0f, 0.0f);
	assert_int_equal(zb_gemm_plans(gm), plans); /* the repeat reused the plan */
	gemm_case(gm, ZB_BF16, 0, 1, 0, 128, 96, 64, 1, 0, 1.0f, 0.0f);
	gemm_case(gm, ZB_BF16, 0, 0, 1, 33, 17, 40, 1, 0, 1.0f, 0.0f);  /* odd sizes */
	gemm_case(gm, ZB_BF16, 0, 1, 1, 72, 56, 24, 1, 8, 2.0f, 0.0f);  /* padded lds */
	gemm_case(gm, ZB_BF16, 0, 0, 0, 32, 24, 40, 3, 8, 0.5f, 1.0f);  /* batched, accumulate */
	gemm_case(gm, ZB_BF16, 0, 1, 0, 64, 64, 64, 4, 0, 1.0f, 0.0f);  /* batched, packed */
	gemm_case(gm, ZB_FP16, 0, 1, 0, 96, 80, 128, 1, 0, 1.0f, 0.0f); /* fp16 */
	gemm_case(gm, ZB_BF16, 1, 0, 1, 64, 32, 256, 1, 0, 1.0f, 1.0f); /* fp32 C, += */
	gemm_case(gm, ZB_BF16, 0, 1, 0, 384, 256, 512, 1, 0, 1.0f, 0.0f); /* a layer-like shape */
	print_message("# gemm: %d plans, %d through cublasGemmStridedBatchedEx\n",
		      zb_gemm_plans(gm), zb_gemm_fallbacks(gm));
	zb_gemm_op op;
	zb_gemm_op_init(&op, ZB_BF16, 0, 0, 0, 4, 4);
	zb_error e;
	assert_int_equal(zb_gemm_run(gm, &op, gm, gm, gm, NULL, &e), ZB_E_INPUT);
	print_message("# rejected: %s\n", e.msg);
	CK(zb_gemm_destroy(gm, &e_));
}

/* ---- check macros and argument errors ---------------------------------------------- */

static zb_status huge_malloc(zb_error *err)
{
	void *p = NULL;
	ZB_CUDA_MALLOC(err, &p, (size_t)1 << 50);
	cudaFree(p);
	return ZB_OK;
}

static zb_status bad_memcpy(zb_error *err)
{
	char h[16];
	ZB_CUDA_TRY(err, cudaMemcpy(h, h, sizeof h, (enum cudaMemcpyKind)99));
	return ZB_OK;
}

static zb_status bad_cublas(zb_error *err)
{
	ZB_CUBLAS_TRY(err, CUBLAS_STATUS_INVALID_VALUE);
	return ZB_OK;
}

static void test_errors(void **state)
{
	(void)state;
	NEED_GPU();
	zb_error e;
	assert_int_equal(huge_malloc(&e), ZB_E_NOMEM);
	print_message("# %s\n", e.msg);
	assert_non_null(strstr(e.msg, "cuda out of memory allocating 1125899906842624 bytes"));
	assert_non_null(strstr(e.msg, "test_kernels.c:"));
	assert_int_equal(bad_memcpy(&e), ZB_E_CUDA);
	print_message("# %s\n", e.msg);
	assert_non_null(strstr(e.msg, "cudaMemcpy(h, h"));
	assert_non_null(strstr(e.msg, "cudaErrorInvalidMemcpyDirection"));
	assert_int_equal(bad_cublas(&e), ZB_E_CUDA);
	print_message("# %s\n", e.msg);
	assert_non_null(strstr(e.msg, "CUBLAS_STATUS_INVALID_VALUE"));
	/* the failures were cleared: the next call works */
	void *p = NULL;
	CU(cudaMalloc(&p, 16));
	CU(cudaFree(p));
	uint16_t *x = dalloc(64);
	assert_int_equal(zb_layernorm_fwd(x, NULL, NULL, x, x, NULL, 1, 0, 1e-5f, NULL, &e),
			 ZB_E_INPUT);
	print_message("# rejected: %s\n", e.msg);
	assert_int_equal(zb_softmax_fwd(x, 1, 8, NAN, 1, NULL, &e), ZB_E_INPUT);
	assert_int_equal(zb_fill_uniform_bf16(x, 8, 1, 2.0f, 1.0f, NULL, &e), ZB_E_INPUT);
	assert_int_equal(zb_cross_entropy(x, NULL, NULL, x, NULL, 1, 8, 1.0f, NULL, &e), ZB_E_INPUT);
	print_message("# rejected: %s\n", e.msg);
	/* zero sizes are no-ops */
	assert_int_equal(zb_gelu_fwd(NULL, NULL, 0, NULL, &e), ZB_OK);
	assert_int_equal(zb_layernorm_fwd(NULL, NULL, NULL, NULL, NULL, NULL, 0, 8, 1e-5f, NULL, &e),
			 ZB_OK);
	CU(cudaDeviceSynchronize());
	cudaFree(x);
}

/* ---- micro-benchmarks -------------------------------------------------------------- */

static void test_bench(void **state)
{
	(void)state;
	NEED_GPU();
	double r = 0;
	int64_t params = (int64_t)1 << 27; /* 134M parameters, 2 GiB of state: far beyond L2 */
	CK(zb_bench_gpu_adam(params, 10, &r, &e_));
	print_message("# bench gpu adam: %lld params, %.1f Gparam/s = %.0f GB/s at 28 B/param "
		      "(target >= 140 Gparam/s)%s\n",
		      (long long)params, r, r * 28.0 /* ZB_ADAM_BYTES_PER_PARAM */,
		      r >= 140 ? "" : "  BELOW TARGET");
	assert_true(r > 0);
	CK(zb_bench_copy((size_t)1 << 30, 10, &r, &e_));
	print_message("# bench copy kernel: 1 GiB, %.0f GB/s (read + write)\n", r);
	assert_true(r > 0);
	CK(zb_bench_gemm(8192, 8192, 8192, 5, &r, &e_));
	print_message("# bench gemm bf16 8192^3: %.0f TFLOP/s\n", r);
	assert_true(r > 0);
}

int main(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	const char *req = getenv("ZB_REQUIRE_GPU");
	g_require = req && strcmp(req, "1") == 0;
	if (e != cudaSuccess || count == 0) {
		snprintf(g_why, sizeof g_why, "%s",
			 e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
		printf("skipped: no GPU (%s)\n", g_why);
		fflush(stdout);
	} else {
		struct cudaDeviceProp prop;
		g_gpu = 1;
		if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
			printf("# device: %s, %d SMs, %.1f GiB\n", prop.name,
			       prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
		fflush(stdout);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_gelu),
		cmocka_unit_test(test_swiglu),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_residual_casts_acc),
		cmocka_unit_test(test_embedding),
		cmocka_unit_test(test_cross_entropy),
		cmocka_unit_test(test_gpu_adam),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_bench),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
