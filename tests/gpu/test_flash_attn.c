/*
 * test_flash_attn.c - fused attention (exec/flash_attn.h) against a double-precision
 * CPU reference computed from the same bf16 inputs: forward output O and lse, and
 * the backward's dQ, dK, dV.
 *
 * Inputs: random, never zero (Q, K, V uniform in [-2, 2], so scores are large enough
 * for the softmax to be far from uniform; dO uniform in [-1, 1]); Q, K, V are slices
 * of one packed [T, (heads + 2 kv_heads) * d] buffer as in the executor, dQ, dK, dV
 * slices of another. Output buffers start as NaN (0xff bytes).
 *
 * Tolerance, per tensor: max |got - ref| / max |ref| <= 2e-2 (bf16 inputs to the
 * tensor-core products of P and dS, fp32 accumulation, one bf16 rounding at the
 * store); lse within 1e-3 absolute. Cases: causal and not, GQA (kv_heads < heads),
 * head dims 64, 80, 128 and 32, seq not a multiple of the 64-row tile, a row stride
 * that is not a multiple of 8 (the scalar load path). The benchmark case prints
 * forward and backward TFLOP/s on the gpt-2.5b attention shape (seq 2048, 32 heads,
 * head dim 80, micro-batch 4).
 *
 * The kernels are those ZB_FLASH_IMPL selects (mma, the default, or wmma): run the
 * program once per implementation. ZB_FLASH_TEST_NO_BENCH=1 skips the benchmark
 * case (for compute-sanitizer runs).
 *
 * Without a GPU: "skipped: no GPU" (ZB_REQUIRE_GPU=1: fail).
 */
#include "tests/harness.h"

#include <cuda_runtime_api.h>

#include "exec/cpu_adam.h"
#include "exec/flash_attn.h"
#include "exec/kernels.h"

static int g_gpu, g_require;
static char g_why[256];

#define NEED_GPU()                                                                  \
	do {                                                                        \
		if (!g_gpu) {                                                       \
			if (g_require)                                              \
				fail_msg("no GPU and ZB_REQUIRE_GPU=1: %s", g_why); \
			skip();                                                     \
			return;                                                     \
		}                                                                   \
	} while (0)

#define CU(call)                                                                    \
	do {                                                                        \
		cudaError_t c_ = (call);                                            \
		if (c_ != cudaSuccess)                                              \
			fail_msg("%s: %s", #call, cudaGetErrorString(c_));          \
	} while (0)

#define CK(call)                                                                    \
	do {                                                                        \
		zb_error e_;                                                        \
		memset(&e_, 0, sizeof e_);                                          \
		zb_status s_ = (call);                                              \
		if (s_ != ZB_OK)                                                    \
			fail_msg("%s: status %d: %s", #call, (int)s_, e_.msg);      \
	} while (0)

#define TOL 2e-2

typedef struct fa_case {
	int batch, seq, heads, kv, d, causal, pad; /* pad: extra elements per packed row */
} fa_case;

static float bf(uint16_t h) { return zb_bf16_to_f32(h); }

static const char *impl_name(void)
{
	const char *e = getenv("ZB_FLASH_IMPL");
	return e && *e ? e : "mma";
}

/* Reference forward and backward for one (sequence, head): index helpers over the
 * packed row-major buffers. */
typedef struct ref_ctx {
	const fa_case *c;
	int64_t ld;
	const uint16_t *qkv, *dout;
	double *o, *lse, *dq, *dk, *dv; /* dq [T, heads*d]; dk, dv [T, kv*d]; o like dq */
} ref_ctx;

static double qv(const ref_ctx *r, int b, int t, int h, int i)
{
	return bf(r->qkv[((int64_t)b * r->c->seq + t) * r->ld + (int64_t)h * r->c->d + i]);
}
static double kvv(const ref_ctx *r, int b, int t, int hk, int i, int which)
{
	const fa_case *c = r->c;
	int64_t col = (int64_t)c->heads * c->d + (int64_t)which * c->kv * c->d + (int64_t)hk * c->d + i;
	return bf(r->qkv[((int64_t)b * c->seq + t) * r->ld + col]);
}

static void ref_head(ref_ctx *r, int b, int h, double *p, double *dp)
{
	const fa_case *c = r->c;
	int S = c->seq, D = c->d, hk = h / (c->heads / c->kv);
	double scale = 1.0 / sqrt((double)D);
	int64_t ho = (int64_t)c->heads * D, ko = (int64_t)c->kv * D;
	for (int i = 0; i < S; i++) {
		int n = c->causal ? i + 1 : S;
		double mx = -INFINITY, sum = 0, dsum = 0;
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int e = 0; e < D; e++)
				s += qv(r, b, i, h, e) * kvv(r, b, j, hk, e, 0);
			p[j] = s * scale;
			mx = p[j] > mx ? p[j] : mx;
		}
		for (int j = 0; j < n; j++)
			sum += (p[j] = exp(p[j] - mx));
		int64_t row = (int64_t)b * S + i;
		r->lse[((int64_t)b * c->heads + h) * S + i] = mx + log(sum);
		for (int j = 0; j < n; j++) {
			p[j] /= sum;
			double t = 0;
			for (int e = 0; e < D; e++)
				t += bf(r->dout[row * ho + (int64_t)h * D + e]) * kvv(r, b, j, hk, e, 1);
			dp[j] = t;
			dsum += p[j] * t;
		}
		for (int e = 0; e < D; e++) {
			double o = 0;
			for (int j = 0; j < n; j++)
				o += p[j] * kvv(r, b, j, hk, e, 1);
			r->o[row * ho + (int64_t)h * D + e] = o;
		}
		for (int j = 0; j < n; j++) {
			double ds = p[j] * (dp[j] - dsum) * scale;
			int64_t jr = (int64_t)b * S + j;
			for (int e = 0; e < D; e++) {
				r->dq[row * ho + (int64_t)h * D + e] += ds * kvv(r, b, j, hk, e, 0);
				r->dk[jr * ko + (int64_t)hk * D + e] += ds * qv(r, b, i, h, e);
				r->dv[jr * ko + (int64_t)hk * D + e] += p[j] * bf(r->dout[row * ho + (int64_t)h * D + e]);
			}
		}
	}
}

/* max |got - ref| / max |ref| over n values; got from a strided bf16 buffer. Above
 * the tolerance, the worst element is printed (token row, column, got, want) so a
 * single run on the GPU machine says where a kernel goes wrong. */
static double rel_err(const char *what, const uint16_t *got, int64_t ld, int64_t col0, const double *ref,
		      int64_t rows, int64_t cols)
{
	double emax = 0, rmax = 0, gw = 0, ww = 0;
	int64_t wt = -1, we = -1, nonfinite = 0;
	for (int64_t t = 0; t < rows; t++)
		for (int64_t e = 0; e < cols; e++) {
			double g = bf(got[t * ld + col0 + e]), w = ref[t * cols + e];
			if (!isfinite(g)) {
				if (!nonfinite++)
					wt = t, we = e, gw = g, ww = w;
				continue;
			}
			if (fabs(g - w) > emax && !nonfinite)
				emax = fabs(g - w), wt = t, we = e, gw = g, ww = w;
			rmax = fabs(w) > rmax ? fabs(w) : rmax;
		}
	double r = nonfinite ? INFINITY : rmax > 0 ? emax / rmax : emax;
	if (r > TOL)
		print_message("#   %s: worst at token %lld col %lld: got %g want %g (max |ref| %g, %lld non-finite)\n",
			      what, (long long)wt, (long long)we, gw, ww, rmax, (long long)nonfinite);
	return r;
}

/* Runs one case and prints its errors; returns whether they are within tolerance
 * (the caller asserts after all its cases, so one run reports every case). */
static int run_case(const fa_case *c)
{
	int64_t T = (int64_t)c->batch * c->seq, ho = (int64_t)c->heads * c->d, ko = (int64_t)c->kv * c->d;
	int64_t ld = ho + 2 * ko + c->pad;
	size_t nq = (size_t)(T * ld), no = (size_t)(T * ho);
	uint16_t *hqkv = malloc(nq * 2), *hdo = malloc(no * 2), *ho_ = malloc(no * 2), *hg = malloc(nq * 2);
	float *hlse = malloc((size_t)(T * c->heads) * 4);
	for (size_t i = 0; i < nq; i++)
		hqkv[i] = zb_f32_to_bf16(zb_uniform_at(7, i, -2.f, 2.f));
	for (size_t i = 0; i < no; i++)
		hdo[i] = zb_f32_to_bf16(zb_uniform_at(8, i, -1.f, 1.f));
	uint16_t *dqkv, *ddo, *dout, *dg;
	float *dlse;
	void *ws;
	zb_flash_shape sh = { c->batch, c->seq, c->heads, c->kv, c->d, c->causal, 1.0f / sqrtf((float)c->d) };
	CU(cudaMalloc((void **)&dqkv, nq * 2));
	CU(cudaMalloc((void **)&dg, nq * 2));
	CU(cudaMalloc((void **)&ddo, no * 2));
	CU(cudaMalloc((void **)&dout, no * 2));
	CU(cudaMalloc((void **)&dlse, (size_t)(T * c->heads) * 4));
	CU(cudaMalloc(&ws, zb_flash_bwd_workspace(&sh)));
	CU(cudaMemset(dout, 0xff, no * 2));
	CU(cudaMemset(dg, 0xff, nq * 2));
	CU(cudaMemset(dlse, 0xff, (size_t)(T * c->heads) * 4));
	CU(cudaMemcpy(dqkv, hqkv, nq * 2, cudaMemcpyHostToDevice));
	CU(cudaMemcpy(ddo, hdo, no * 2, cudaMemcpyHostToDevice));
	CK(zb_flash_fwd(&sh, dqkv, ld, dqkv + ho, ld, dqkv + ho + ko, ld, dout, ho, dlse, NULL, &e_));
	CK(zb_flash_bwd(&sh, dqkv, ld, dqkv + ho, ld, dqkv + ho + ko, ld, dout, ho, ddo, ho, dlse, dg, ld, dg + ho,
			ld, dg + ho + ko, ld, ws, NULL, &e_));
	CU(cudaDeviceSynchronize());
	CU(cudaMemcpy(ho_, dout, no * 2, cudaMemcpyDeviceToHost));
	CU(cudaMemcpy(hg, dg, nq * 2, cudaMemcpyDeviceToHost));
	CU(cudaMemcpy(hlse, dlse, (size_t)(T * c->heads) * 4, cudaMemcpyDeviceToHost));

	ref_ctx r = { c, ld, hqkv, hdo, calloc(no, 8), calloc((size_t)(T * c->heads), 8), calloc(no, 8),
		      calloc((size_t)(T * ko), 8), calloc((size_t)(T * ko), 8) };
	double *p = malloc((size_t)c->seq * 8), *dp = malloc((size_t)c->seq * 8);
	for (int b = 0; b < c->batch; b++)
		for (int h = 0; h < c->heads; h++)
			ref_head(&r, b, h, p, dp);
	double eo = rel_err("O", ho_, ho, 0, r.o, T, ho);
	double eq = rel_err("dQ", hg, ld, 0, r.dq, T, ho);
	double ek = rel_err("dK", hg, ld, ho, r.dk, T, ko);
	double ev = rel_err("dV", hg, ld, ho + ko, r.dv, T, ko);
	double el = 0;
	for (int64_t i = 0; i < T * c->heads; i++) {
		double d = fabs((double)hlse[i] - r.lse[i]);
		el = isfinite(d) ? (d > el ? d : el) : INFINITY;
	}
	print_message("# flash %s b%d s%d h%d kv%d d%d %s pad%d: max rel err O %.2e dQ %.2e dK %.2e dV %.2e, "
		      "lse abs %.2e (tolerance %.0e, lse 1e-3)\n",
		      impl_name(), c->batch, c->seq, c->heads, c->kv, c->d, c->causal ? "causal" : "full", c->pad, eo, eq,
		      ek, ev,
		      el, TOL);
	int ok = eo <= TOL && eq <= TOL && ek <= TOL && ev <= TOL && el <= 1e-3;
	free(hqkv), free(hdo), free(ho_), free(hg), free(hlse), free(p), free(dp);
	free(r.o), free(r.lse), free(r.dq), free(r.dk), free(r.dv);
	cudaFree(dqkv), cudaFree(dg), cudaFree(ddo), cudaFree(dout), cudaFree(dlse), cudaFree(ws);
	return ok;
}

static void test_causal_gqa(void **state)
{
	(void)state;
	NEED_GPU();
	int ok = 1;
	fa_case c1 = { 2, 200, 4, 2, 64, 1, 0 };
	ok &= run_case(&c1);
	fa_case c2 = { 1, 130, 8, 2, 128, 1, 0 };
	ok &= run_case(&c2);
	assert_true(ok);
}

static void test_full_and_dims(void **state)
{
	(void)state;
	NEED_GPU();
	int ok = 1;
	fa_case c1 = { 2, 150, 3, 3, 80, 0, 0 };
	ok &= run_case(&c1);
	fa_case c2 = { 1, 190, 4, 4, 80, 1, 0 };
	ok &= run_case(&c2);
	fa_case c3 = { 2, 70, 2, 1, 32, 1, 0 };
	ok &= run_case(&c3);
	fa_case c4 = { 1, 64, 2, 2, 96, 0, 0 };
	ok &= run_case(&c4);
	fa_case c5 = { 2, 128, 4, 4, 64, 1, 0 }; /* whole tiles only */
	ok &= run_case(&c5);
	assert_true(ok);
}

/* Several key and query tiles per CTA (the double buffers cycle), the 32-row query
 * tiles of the head-dim-128 backward without the causal mask, GQA 4:1 */
static void test_many_tiles(void **state)
{
	(void)state;
	NEED_GPU();
	int ok = 1;
	fa_case c1 = { 1, 333, 4, 1, 128, 0, 0 };
	ok &= run_case(&c1);
	fa_case c2 = { 2, 257, 2, 2, 80, 1, 0 };
	ok &= run_case(&c2);
	fa_case c3 = { 1, 200, 2, 1, 96, 1, 8 }; /* padded, still 16-byte rows */
	ok &= run_case(&c3);
	assert_true(ok);
}

static void test_scalar_path(void **state)
{
	(void)state;
	NEED_GPU();
	int ok = 1;
	fa_case c = { 1, 100, 2, 1, 64, 1, 3 }; /* row stride not a multiple of 8 */
	ok &= run_case(&c);
	assert_true(ok);
}

static void test_errors(void **state)
{
	(void)state;
	zb_error e;
	zb_flash_shape sh = { 1, 64, 6, 4, 64, 1, 0.125f };
	assert_int_equal(zb_flash_check(&sh, &e), ZB_E_INPUT);
	assert_contains(e.msg, "kv_heads 4");
	sh.kv_heads = 2;
	sh.head_dim = 72;
	assert_int_equal(zb_flash_check(&sh, &e), ZB_E_INPUT);
	assert_contains(e.msg, "head dim 72");
	sh.head_dim = 64;
	sh.seq = 0;
	assert_int_equal(zb_flash_check(&sh, &e), ZB_E_INPUT);
	assert_contains(e.msg, "seq 0");
	sh.seq = 2048;
	assert_int_equal(zb_flash_check(&sh, &e), ZB_OK);
	assert_close(zb_flash_fwd_flops(&sh), 4.0 * 6 * 64 * 2048.0 * 2049 / 2, 1e-12);
	assert_close(zb_flash_bwd_flops(&sh), 2.5 * zb_flash_fwd_flops(&sh), 1e-12);
	/* an unknown implementation is refused before anything is queued (no GPU needed;
	 * the pointers are never dereferenced) */
	const char *saved = getenv("ZB_FLASH_IMPL");
	char keep[64];
	snprintf(keep, sizeof keep, "%s", saved ? saved : "");
	setenv("ZB_FLASH_IMPL", "cutlass", 1);
	const uint16_t *p = (const uint16_t *)(uintptr_t)256;
	assert_int_equal(zb_flash_fwd(&sh, p, 6 * 64, p, 2 * 64, p, 2 * 64, (uint16_t *)p, 6 * 64, (float *)p, NULL, &e),
			 ZB_E_INPUT);
	assert_contains(e.msg, "ZB_FLASH_IMPL 'cutlass'");
	if (saved)
		setenv("ZB_FLASH_IMPL", keep, 1);
	else
		unsetenv("ZB_FLASH_IMPL");
}

static void test_bench(void **state)
{
	(void)state;
	const char *nb = getenv("ZB_FLASH_TEST_NO_BENCH");
	if (nb && strcmp(nb, "1") == 0) {
		skip();
		return;
	}
	NEED_GPU();
	/* gpt-2.5b: hidden 2560, 32 heads of 80; seq 2048, micro-batch 4 */
	zb_flash_shape sh = { 4, 2048, 32, 32, 80, 1, 1.0f / sqrtf(80.f) };
	double f = 0, b = 0;
	CK(zb_bench_flash(&sh, 10, &f, &b, &e_));
	print_message("# bench flash %s gpt-2.5b b4 s2048 h32 d80 causal: fwd %.0f TFLOP/s, bwd %.0f TFLOP/s, "
		      "fwd+bwd %.0f TFLOP/s (executed FLOPs: 4 and 10 x b h d pairs)\n",
		      impl_name(), f, b, (f > 0 && b > 0) ? 3.5 / (1.0 / f + 2.5 / b) : 0);
	sh.head_dim = 128, sh.heads = 16, sh.kv_heads = 16;
	CK(zb_bench_flash(&sh, 10, &f, &b, &e_));
	print_message("# bench flash %s b4 s2048 h16 d128 causal: fwd %.0f TFLOP/s, bwd %.0f TFLOP/s\n", impl_name(), f,
		      b);
	assert_true(f > 0 && b > 0);
}

int main(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	const char *req = getenv("ZB_REQUIRE_GPU");
	g_require = req && strcmp(req, "1") == 0;
	if (e != cudaSuccess || count == 0) {
		snprintf(g_why, sizeof g_why, "%s", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
		printf("skipped: no GPU (%s)\n", g_why);
		fflush(stdout);
	} else {
		g_gpu = 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),       cmocka_unit_test(test_causal_gqa),
		cmocka_unit_test(test_full_and_dims), cmocka_unit_test(test_many_tiles),
		cmocka_unit_test(test_scalar_path),
		cmocka_unit_test(test_bench),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
