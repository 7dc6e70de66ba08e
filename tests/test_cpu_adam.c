/*
 * test_cpu_adam.c - the fused CPU Adam against the double reference, its SIMD
 * paths against its scalar path, its 16-bit conversions against independent
 * roundings (and F16C), and the thread pool that runs it.
 *
 * Tolerances asserted, and why:
 *  - fp32 vs double reference after K = 10 steps (lr 1e-3, weights ~N(0, 0.02),
 *    gradients ~N(0, 1e-2) rounded to bf16 or fp16, the reference fed the same
 *    16-bit values): master weights both ||x - ref|| / ||ref|| <= 1e-6 and, per
 *    element, |x - ref| <= 1e-6 |ref| + 1e-6 K lr (= 1e-6 |ref| + 1e-8). The floor is
 *    there because fp32 computes each update (at most ~lr in size) with a relative
 *    error of a few 1e-7, partly systematic (lr / bc1 and 1 - beta2 rounded to
 *    float), so after K steps a weight near zero can be off by ~K lr 2e-7 = 2e-9:
 *    a floor of 1e-9 fails (measured 1.85e-9 on a weight of -1.6e-4), 1e-6 of the
 *    total update K lr does not. m and v: norm only (<= 1e-6): m is a sum of gradients of both
 *    signs, and where they cancel its elementwise relative error is large while the
 *    absolute one is not. The measured differences are printed.
 *  - SIMD paths vs scalar path: bitwise equal (master, m, v, 16-bit copy), for every
 *    size, type combination and alignment tried; the kernel does the same correctly
 *    rounded fp32 operations in the same order on every path.
 *  - Multi-threaded vs single-threaded: bitwise equal.
 *  - The 16-bit copy: bitwise equal to round-to-nearest-even of the fp32 master, checked
 *    with an independent rounding written here (nearest of the two neighbours).
 *  - Hand-computed single steps: double reference within 1e-14, fp32 within 1e-6.
 */
#include "tests/harness.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include <immintrin.h>

#include "exec/cpu_adam.h"
#include "exec/cpu_adam_bench.h"
#include "exec/threadpool.h"

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng_u64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_normal(double sigma)
{
	double u1 = ((double)(rng_u64() >> 11) + 0.5) / 9007199254740992.0;
	double u2 = (double)(rng_u64() >> 11) / 9007199254740992.0;
	return sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static uint16_t to_half(zb_half t, float f)
{
	return t == ZB_HALF_FP16 ? zb_f32_to_f16(f) : zb_f32_to_bf16(f);
}

static float from_half(zb_half t, uint16_t h)
{
	return t == ZB_HALF_FP16 ? zb_f16_to_f32(h) : zb_bf16_to_f32(h);
}

/* One optimizer state of n parameters. */
typedef struct state {
	int64_t n;
	uint16_t *grad, *p16;
	float *w, *m, *v;
} state;

static void st_init(state *s, int64_t n)
{
	size_t k = (size_t)(n > 0 ? n : 1);
	s->n = n;
	s->grad = calloc(k, 2);
	s->p16 = calloc(k, 2);
	s->w = calloc(k, 4);
	s->m = calloc(k, 4);
	s->v = calloc(k, 4);
	assert_non_null(s->grad);
	assert_non_null(s->p16);
	assert_non_null(s->w);
	assert_non_null(s->m);
	assert_non_null(s->v);
}

static void st_free(state *s)
{
	free(s->grad);
	free(s->p16);
	free(s->w);
	free(s->m);
	free(s->v);
}

/* Weights ~N(0, 0.02), moments of a few earlier steps (m ~N(0, 1e-3), v ~ g^2
 * scale), gradients ~N(0, 1e-2) times the loss scale. */
static void st_fill(state *s, uint64_t seed, zb_half gtype, double scale, int fresh_moments)
{
	rng_state = seed;
	for (int64_t i = 0; i < s->n; i++) {
		s->w[i] = (float)rng_normal(0.02);
		s->m[i] = fresh_moments ? 0.0f : (float)rng_normal(1e-3);
		s->v[i] = fresh_moments ? 0.0f : (float)(1e-5 * fabs(rng_normal(1.0)));
		s->grad[i] = to_half(gtype, (float)(rng_normal(1e-2) * scale));
		s->p16[i] = 0x5555;
	}
}

static void st_copy(state *d, const state *s)
{
	size_t n = (size_t)s->n;
	memcpy(d->grad, s->grad, n * 2);
	memcpy(d->p16, s->p16, n * 2);
	memcpy(d->w, s->w, n * 4);
	memcpy(d->m, s->m, n * 4);
	memcpy(d->v, s->v, n * 4);
}

static zb_adam_buffers st_buffers(const state *s, int out)
{
	return (zb_adam_buffers){s->grad, s->w, s->m, s->v, out ? s->p16 : NULL};
}

/* Index of the first element where a and b differ in any array's bits, or -1. */
static int64_t st_first_diff(const state *a, const state *b)
{
	for (int64_t i = 0; i < a->n; i++) {
		if (memcmp(&a->w[i], &b->w[i], 4) || memcmp(&a->m[i], &b->m[i], 4) ||
		    memcmp(&a->v[i], &b->v[i], 4) || a->p16[i] != b->p16[i])
			return i;
	}
	return -1;
}

static void assert_same_state(const state *got, const state *want, const char *what)
{
	int64_t i = st_first_diff(got, want);
	if (i >= 0) {
		print_error("%s: differs at %lld of %lld: w %a vs %a, m %a vs %a, v %a vs %a, "
			    "p16 %04x vs %04x\n",
			    what, (long long)i, (long long)got->n, got->w[i], want->w[i], got->m[i],
			    want->m[i], got->v[i], want->v[i], got->p16[i], want->p16[i]);
		fail();
	}
}

static void step_ok(zb_pool *pool, const zb_adam_params *p, const state *s, int out)
{
	zb_error err = {0};
	zb_adam_buffers b = st_buffers(s, out);
	zb_status st = zb_cpu_adam_step(pool, p, &b, s->n, &err);
	if (st != ZB_OK) {
		print_error("zb_cpu_adam_step: %s\n", err.msg);
		fail();
	}
}

static const zb_adam_isa all_isas[] = {ZB_ADAM_ISA_SCALAR, ZB_ADAM_ISA_AVX2, ZB_ADAM_ISA_AVX512};
#define N_ISAS 3

static int isa_available(zb_adam_isa isa)
{
	if (zb_adam_isa_supported(isa))
		return 1;
	print_message("# isa %s not supported by this cpu: not tested\n", zb_adam_isa_name(isa));
	return 0;
}

/* ---- 16-bit conversions ------------------------------------------------------ */

static int64_t bits_of(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	return x;
}

/* Round to nearest even by choosing the nearer of the two bf16 neighbours; the
 * neighbour above the largest finite value is 2^128 (so it rounds to Inf). */
static uint16_t bf16_independent(float f)
{
	uint32_t x = (uint32_t)bits_of(f);
	uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1);
	double dl = zb_bf16_to_f32(lo);
	double dh = (hi & 0x7fff) == 0x7f80 ? copysign(ldexp(1.0, 128), f) : zb_bf16_to_f32(hi);
	double el = fabs((double)f - dl), eh = fabs(dh - (double)f);
	if (el < eh)
		return lo;
	if (eh < el)
		return hi;
	return (lo & 1) ? hi : lo;
}

static void test_bf16_conversions(void **state_)
{
	/* exact and round-trip */
	for (uint32_t h = 0; h < 65536; h++) {
		float f = zb_bf16_to_f32((uint16_t)h);
		assert_int_equal(bits_of(f), (int64_t)h << 16);
		if (!isnan(f))
			assert_int_equal(zb_f32_to_bf16(f), h);
	}
	/* hand cases: ties to even, carry into the exponent, overflow, NaN */
	struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{0x3f808000, 0x3f80}, {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81},
		{0x3f7fffff, 0x3f80}, {0x7f7fffff, 0x7f80}, {0x7f7f7fff, 0x7f7f},
		{0xff7fffff, 0xff80}, {0x7f800000, 0x7f80}, {0x00000001, 0x0000},
		{0x80008000, 0x8000}, {0x00018000, 0x0002}, {0x7f800001, 0x7fc0},
		{0xffc00000, 0xffc0}, {0x7fffffff, 0x7fff},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		float f;
		memcpy(&f, &cases[i].in, 4);
		if (zb_f32_to_bf16(f) != cases[i].out) {
			print_error("bf16(%08x) = %04x, want %04x\n", cases[i].in, zb_f32_to_bf16(f),
				    cases[i].out);
			fail();
		}
	}
	/* random bit patterns against the independent rounding */
	rng_state = 7;
	for (int i = 0; i < 2000000; i++) {
		uint32_t x = (uint32_t)rng_u64();
		float f;
		memcpy(&f, &x, 4);
		uint16_t got = zb_f32_to_bf16(f);
		if (isnan(f)) {
			assert_true(isnan(zb_bf16_to_f32(got)));
			assert_int_equal(got & 0x8000, (x >> 16) & 0x8000);
			continue;
		}
		if (got != bf16_independent(f)) {
			print_error("bf16(%08x) = %04x, independent rounding %04x\n", x, got,
				    bf16_independent(f));
			fail();
		}
	}
}

__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float f)
{
	return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("f16c"))) static float hw_f16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* The scalar fp16 conversions must agree bit for bit with F16C, which the SIMD
 * kernels use. */
static void test_fp16_conversions(void **state_)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("f16c")) {
		skip();
		return;
	}
	for (uint32_t h = 0; h < 65536; h++) {
		float s = zb_f16_to_f32((uint16_t)h), w = hw_f16_to_f32((uint16_t)h);
		if (bits_of(s) != bits_of(w)) {
			print_error("f16 %04x -> %08llx, f16c gives %08llx\n", h,
				    (unsigned long long)bits_of(s), (unsigned long long)bits_of(w));
			fail();
		}
	}
	/* every 251st float; every 5th of those that become fp16 subnormals (the
	 * rounding there shifts by a varying amount); every float around the overflow
	 * threshold, the largest finite floats and the NaN boundary */
	uint64_t checked = 0;
	for (uint64_t x = 0; x <= 0xffffffffull; x += 251) {
		uint32_t xs[3] = {(uint32_t)x, 0, 0};
		int k = 1;
		if ((x & 0x7fffffff) >= 0x32ff0000 && (x & 0x7fffffff) < 0x38900000)
			k = 0; /* covered more densely below */
		for (int j = 0; j < k; j++) {
			float f;
			memcpy(&f, &xs[j], 4);
			uint16_t s = zb_f32_to_f16(f), w = hw_f32_to_f16(f);
			if (s != w) {
				print_error("f16(%08x) = %04x, f16c gives %04x\n", xs[j], s, w);
				fail();
			}
			checked++;
		}
	}
	uint32_t ranges[][3] = {{0x32ff0000, 0x38900000, 5}, {0x477f0000, 0x47810000, 1},
				{0x7f7f0000, 0x7f800100, 1}, {0x7fbfff00, 0x7fc00100, 1}};
	for (int r = 0; r < 4; r++) {
		for (uint32_t x = ranges[r][0]; x < ranges[r][1]; x += ranges[r][2]) {
			for (int sgn = 0; sgn < 2; sgn++) {
				uint32_t xx = x | (sgn ? 0x80000000u : 0);
				float f;
				memcpy(&f, &xx, 4);
				uint16_t s = zb_f32_to_f16(f), w = hw_f32_to_f16(f);
				if (s != w) {
					print_error("f16(%08x) = %04x, f16c gives %04x\n", xx, s, w);
					fail();
				}
				checked++;
			}
		}
	}
	print_message("# fp16 conversions: %llu floats checked against f16c\n",
		      (unsigned long long)checked);
}

/* ---- hand-computed steps --------------------------------------------------- */

/* One parameter; returns the fp32 result after one step on isa. */
static void one_step(zb_adam_isa isa, const zb_adam_params *p0, uint16_t g, float *w, float *m,
		     float *v, uint16_t *out)
{
	zb_adam_params p = *p0;
	p.isa = isa;
	zb_adam_buffers b = {&g, w, m, v, out};
	zb_error err = {0};
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, 1, &err), ZB_OK);
}

static void test_hand_steps(void **state_)
{
	/* A: first step, t = 1: m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25,
	 * p = 1 - 0.1 * 0.01 * 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.89900000199999996 */
	zb_adam_params a = zb_adam_defaults();
	a.lr = 0.1, a.beta1 = 0.9, a.beta2 = 0.999, a.eps = 1e-8, a.weight_decay = 0.01, a.step = 1;
	const double a_p = 0.89900000199999996, a_m = 0.05, a_v = 0.00025;
	/* B: t = 3 with earlier moments: m = 0.9 * 0.2 + 0.1 * -0.25 = 0.155,
	 * v = 0.99 * 0.01 + 0.01 * 0.0625 = 0.010525, bc1 = 0.271, bc2 = 0.029701,
	 * p = -0.5 - 0.01 * 0.1 * -0.5 - (0.01 / 0.271) * 0.155 / (sqrt(0.010525 / 0.029701) + 1e-6)
	 *   = -0.50910807006414978 (40-digit decimal arithmetic) */
	zb_adam_params bp = zb_adam_defaults();
	bp.lr = 0.01, bp.beta1 = 0.9, bp.beta2 = 0.99, bp.eps = 1e-6, bp.weight_decay = 0.1,
	bp.step = 3;
	const double b_p = -0.50910807006414978, b_m = 0.155, b_v = 0.010525;

	/* double reference */
	double g = 0.5, w = 1.0, m = 0, v = 0;
	zb_adam_ref_buffers rb = {&g, &w, &m, &v};
	zb_error err = {0};
	assert_int_equal(zb_adam_reference_step(&a, &rb, 1, &err), ZB_OK);
	assert_close(w, a_p, 1e-14);
	assert_close(m, a_m, 1e-14);
	assert_close(v, a_v, 1e-14);
	g = -0.25, w = -0.5, m = 0.2, v = 0.01;
	assert_int_equal(zb_adam_reference_step(&bp, &rb, 1, &err), ZB_OK);
	assert_close(w, b_p, 1e-14);
	assert_close(m, b_m, 1e-14);
	assert_close(v, b_v, 1e-14);
	/* the loss scale divides: fp16-sized gradient 4.0 with scale 8 is 0.5 */
	zb_adam_params as = a;
	as.grad_scale = 8.0;
	g = 4.0, w = 1.0, m = 0, v = 0;
	assert_int_equal(zb_adam_reference_step(&as, &rb, 1, &err), ZB_OK);
	assert_close(w, a_p, 1e-14);

	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		float fw = 1.0f, fm = 0, fv = 0;
		uint16_t out;
		one_step(all_isas[k], &a, 0x3f00 /* bf16 0.5 */, &fw, &fm, &fv, &out);
		assert_close(fw, a_p, 1e-6);
		assert_close(fm, a_m, 1e-6);
		assert_close(fv, a_v, 1e-6);
		assert_int_equal(out, zb_f32_to_bf16(fw));
		assert_int_equal(out, 0x3f66); /* 0.8990000 in bf16: 0.8984375 */

		fw = -0.5f, fm = 0.2f, fv = 0.01f;
		one_step(all_isas[k], &bp, 0xbe80 /* bf16 -0.25 */, &fw, &fm, &fv, &out);
		assert_close(fw, b_p, 1e-6);
		assert_close(fm, b_m, 1e-6);
		assert_close(fv, b_v, 1e-6);

		/* fp16 gradient 4.0 (0x4400) with loss scale 8, fp16 output */
		zb_adam_params h = as;
		h.grad_type = ZB_HALF_FP16, h.param_type = ZB_HALF_FP16;
		fw = 1.0f, fm = 0, fv = 0;
		one_step(all_isas[k], &h, 0x4400, &fw, &fm, &fv, &out);
		assert_close(fw, a_p, 1e-6);
		assert_int_equal(out, zb_f32_to_f16(fw));
		assert_int_equal(out, 0x3b31); /* 0.899 in fp16: 0.89892578125 */
	}
}

/* ---- K steps against the double reference ----------------------------------- */

static void run_vs_reference(zb_adam_isa isa, zb_half type, double scale)
{
	const int64_t n = 100003;
	const int K = 10;
	state s;
	st_init(&s, n);
	st_fill(&s, 42, type, scale, 1);
	double *rg = calloc((size_t)n, 8), *rw = calloc((size_t)n, 8);
	double *rm = calloc((size_t)n, 8), *rv = calloc((size_t)n, 8);
	assert_true(rg && rw && rm && rv);
	float *w0 = malloc((size_t)n * 4);
	assert_non_null(w0);
	for (int64_t i = 0; i < n; i++)
		rw[i] = w0[i] = s.w[i], rm[i] = s.m[i], rv[i] = s.v[i];

	zb_adam_params p = zb_adam_defaults();
	p.isa = isa, p.grad_type = type, p.param_type = type, p.grad_scale = scale;
	zb_adam_ref_buffers rb = {rg, rw, rm, rv};
	rng_state = 1234;
	for (int k = 1; k <= K; k++) {
		p.step = k;
		for (int64_t i = 0; i < n; i++) {
			s.grad[i] = to_half(type, (float)(rng_normal(1e-2) * scale));
			rg[i] = from_half(type, s.grad[i]);
		}
		step_ok(NULL, &p, &s, 1);
		zb_error err = {0};
		assert_int_equal(zb_adam_reference_step(&p, &rb, n, &err), ZB_OK);
	}

	double dw2 = 0, w2 = 0, dm2 = 0, m2 = 0, dv2 = 0, v2 = 0, worst = 0, moved2 = 0, maxabs = 0;
	const double floor_abs = 1e-6 * K * p.lr;
	int64_t bad = -1;
	for (int64_t i = 0; i < n; i++) {
		double dw = s.w[i] - rw[i];
		dw2 += dw * dw, w2 += rw[i] * rw[i];
		moved2 += (rw[i] - w0[i]) * (rw[i] - w0[i]);
		dm2 += (s.m[i] - rm[i]) * (s.m[i] - rm[i]), m2 += rm[i] * rm[i];
		dv2 += (s.v[i] - rv[i]) * (s.v[i] - rv[i]), v2 += rv[i] * rv[i];
		double lim = 1e-6 * fabs(rw[i]) + floor_abs;
		maxabs = fabs(dw) > maxabs ? fabs(dw) : maxabs;
		if (fabs(dw) / lim > worst)
			worst = fabs(dw) / lim, bad = i;
		if (s.p16[i] != to_half(type, s.w[i]) ||
		    (type == ZB_HALF_BF16 && s.p16[i] != bf16_independent(s.w[i]))) {
			print_error("%s: 16-bit copy %04x of %a at %lld is not its rounding %04x\n",
				    zb_adam_isa_name(isa), s.p16[i], s.w[i], (long long)i,
				    to_half(type, s.w[i]));
			fail();
		}
	}
	double rel_w = sqrt(dw2 / w2), rel_m = sqrt(dm2 / m2), rel_v = sqrt(dv2 / v2);
	print_message("# %s %s scale %g, %d steps (weights moved %.2g of their norm): "
		      "|dw|/|w| %.2e, |dm|/|m| %.2e, |dv|/|v| %.2e, max |dw| %.2e, worst element "
		      "at %.2f of its limit 1e-6|ref| + %.0e\n",
		      zb_adam_isa_name(isa), type == ZB_HALF_FP16 ? "fp16" : "bf16", scale, K,
		      sqrt(moved2 / w2), rel_w, rel_m, rel_v, maxabs, worst, floor_abs);
	assert_true(rel_w <= 1e-6);
	assert_true(rel_m <= 1e-6);
	assert_true(rel_v <= 1e-6);
	if (worst > 1.0) {
		print_error("element %lld: %.9g vs reference %.12g\n", (long long)bad, s.w[bad], rw[bad]);
		fail();
	}
	free(rg), free(rw), free(rm), free(rv), free(w0);
	st_free(&s);
}

static void test_vs_reference(void **state_)
{
	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		run_vs_reference(all_isas[k], ZB_HALF_BF16, 1.0);
		run_vs_reference(all_isas[k], ZB_HALF_FP16, 1024.0);
	}
}

/* ---- SIMD == scalar, bit for bit ------------------------------------------- */

static void test_isa_bitwise(void **state_)
{
	const int64_t sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 1000, 4097, 65599};
	const int n_sizes = sizeof sizes / sizeof sizes[0];
	for (int si = 0; si < n_sizes; si++) {
		for (int combo = 0; combo < 8; combo++) {
			zb_half gt = (combo & 4) ? ZB_HALF_FP16 : ZB_HALF_BF16;
			zb_half pt = (combo & 2) ? ZB_HALF_FP16 : ZB_HALF_BF16;
			int out = combo & 1;
			int misalign = si % 3; /* 0, 1 or 2 elements off the allocation */
			int64_t n = sizes[si];
			state base, ref, got;
			st_init(&base, n + 2), st_init(&ref, n + 2), st_init(&got, n + 2);
			st_fill(&base, 100 + (uint64_t)si * 8 + (uint64_t)combo, gt,
				gt == ZB_HALF_FP16 ? 256.0 : 1.0, 0);
			zb_adam_params p = zb_adam_defaults();
			p.grad_type = gt, p.param_type = pt, p.grad_scale = gt == ZB_HALF_FP16 ? 256.0 : 1.0;
			p.step = 7;
			/* views shifted by misalign elements */
			state rv = {n, ref.grad + misalign, ref.p16 + misalign, ref.w + misalign,
				    ref.m + misalign, ref.v + misalign};
			state gv = {n, got.grad + misalign, got.p16 + misalign, got.w + misalign,
				    got.m + misalign, got.v + misalign};
			st_copy(&ref, &base);
			p.isa = ZB_ADAM_ISA_SCALAR;
			step_ok(NULL, &p, &rv, out);
			for (int k = 1; k < N_ISAS; k++) {
				if (!zb_adam_isa_supported(all_isas[k]))
					continue;
				st_copy(&got, &base);
				p.isa = all_isas[k];
				step_ok(NULL, &p, &gv, out);
				char what[128];
				snprintf(what, sizeof what, "%s vs scalar, n %lld, grad %s, param %s, out %d",
					 zb_adam_isa_name(all_isas[k]), (long long)n,
					 gt == ZB_HALF_FP16 ? "fp16" : "bf16",
					 pt == ZB_HALF_FP16 ? "fp16" : "bf16", out);
				assert_same_state(&got, &ref, what); /* whole allocation: nothing outside touched */
			}
			/* also: the elements outside [0, n) are untouched */
			for (int64_t i = 0; i < misalign; i++)
				assert_int_equal(ref.p16[i], base.p16[i]);
			st_free(&base), st_free(&ref), st_free(&got);
		}
	}
}

/* ---- loss scale, NaN, bad input --------------------------------------------- */

/* A power-of-two loss scale is exact: scaled gradients with grad_scale S give the
 * same bits as unscaled ones with grad_scale 1. */
static void test_grad_scale(void **state_)
{
	const int64_t n = 1001;
	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		for (int t = 0; t < 2; t++) {
			zb_half type = t ? ZB_HALF_FP16 : ZB_HALF_BF16;
			double S = t ? 1024.0 : 4096.0;
			state a, b;
			st_init(&a, n), st_init(&b, n);
			st_fill(&a, 9, type, 1.0, 0);
			st_copy(&b, &a);
			for (int64_t i = 0; i < n; i++)
				b.grad[i] = to_half(type, from_half(type, a.grad[i]) * (float)S);
			zb_adam_params p = zb_adam_defaults();
			p.isa = all_isas[k], p.grad_type = type, p.param_type = type, p.step = 2;
			step_ok(NULL, &p, &a, 1);
			p.grad_scale = S;
			step_ok(NULL, &p, &b, 1);
			for (int64_t i = 0; i < n; i++) /* the gradients differ by design */
				b.grad[i] = a.grad[i];
			assert_same_state(&b, &a, "loss-scaled vs unscaled");
			st_free(&a), st_free(&b);
		}
	}
}

static void test_nan_propagates(void **state_)
{
	/* poison in the head, the streamed middle and the tail of the SIMD paths */
	const int64_t n = 101;
	const int64_t nan_at[] = {3, 20, 35, 70, 99};
	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		for (int t = 0; t < 2; t++) {
			zb_half type = t ? ZB_HALF_FP16 : ZB_HALF_BF16;
			state a, b;
			st_init(&a, n), st_init(&b, n);
			st_fill(&a, 5, type, 1.0, 0);
			st_copy(&b, &a);
			for (int j = 0; j < 5; j++)
				b.grad[nan_at[j]] = type == ZB_HALF_FP16 ? 0x7e00 : 0x7fc0;
			b.grad[10] = type == ZB_HALF_FP16 ? 0x7c00 : 0x7f80; /* +Inf */
			zb_adam_params p = zb_adam_defaults();
			p.isa = all_isas[k], p.grad_type = type, p.param_type = type;
			step_ok(NULL, &p, &a, 1);
			step_ok(NULL, &p, &b, 1);
			for (int64_t i = 0; i < n; i++) {
				int poisoned = i == 10;
				for (int j = 0; j < 5; j++)
					poisoned |= i == nan_at[j];
				if (poisoned) {
					assert_true(isnan(b.w[i]));
					assert_true(isnan(from_half(type, b.p16[i])));
					if (i != 10) { /* Inf makes m = Inf and v = Inf, then Inf/Inf */
						assert_true(isnan(b.m[i]));
						assert_true(isnan(b.v[i]));
					} else {
						assert_true(isinf(b.m[i]) && isinf(b.v[i]));
					}
				} else {
					assert_memory_equal(&b.w[i], &a.w[i], 4);
					assert_memory_equal(&b.m[i], &a.m[i], 4);
					assert_memory_equal(&b.v[i], &a.v[i], 4);
					assert_int_equal(b.p16[i], a.p16[i]);
				}
			}
			st_free(&a), st_free(&b);
		}
	}
}

/* Gradients near 1e-21 make c2 g^2 denormal (~1e-45): the kernel flushes it to zero
 * (MXCSR FTZ/DAZ, cpu_adam.c) on every path alike, so v stays 0 while m and the weight
 * move as the reference says (the flushed term is 1e-45 against eps 1e-8). The speed
 * this buys (16 -> 1.3 ns a parameter) is a benchmark's business, not a test's. */
static void test_denormals_flushed(void **state_)
{
	(void)state_;
	const int64_t n = 67;
	float ref_w[67];
	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		state a;
		st_init(&a, n);
		st_fill(&a, 9, ZB_HALF_BF16, 1.0, 1);
		for (int64_t i = 0; i < n; i++)
			a.grad[i] = to_half(ZB_HALF_BF16, (i & 1 ? 1e-21f : -3e-21f) * (1 + 0.01f * (float)i));
		zb_adam_params p = zb_adam_defaults();
		p.isa = all_isas[k];
		float w0[67];
		memcpy(w0, a.w, sizeof w0);
		step_ok(NULL, &p, &a, 1);
		for (int64_t i = 0; i < n; i++) {
			double g = from_half(ZB_HALF_BF16, a.grad[i]);
			double m = (1 - p.beta1) * g, v = (1 - p.beta2) * g * g;
			double upd = p.lr * (m / (1 - p.beta1)) / (sqrt(v / (1 - p.beta2)) + p.eps);
			double want = w0[i] - p.lr * p.weight_decay * w0[i] - upd;
			assert_true(a.v[i] == 0.0f);
			assert_true(fabs(a.m[i] - m) <= 1e-6 * fabs(m));
			assert_true(fabs(a.w[i] - want) <= 1e-6 * fabs(want) + 1e-9);
			if (k == 0)
				ref_w[i] = a.w[i];
			else
				assert_memory_equal(&a.w[i], &ref_w[i], 4);
		}
		st_free(&a);
	}
}

static void test_bad_input(void **state_)
{
	state s;
	st_init(&s, 16);
	st_fill(&s, 1, ZB_HALF_BF16, 1.0, 0);
	zb_adam_buffers b = st_buffers(&s, 1);
	zb_error err = {0};
	zb_adam_params p = zb_adam_defaults();
	p.beta1 = 1.0;
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, 16, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "beta1"));
	p = zb_adam_defaults();
	p.step = 0;
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, 16, &err), ZB_E_INPUT);
	p = zb_adam_defaults();
	p.grad_scale = 0;
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, 16, &err), ZB_E_INPUT);
	assert_int_equal(zb_adam_reference_step(&p, &(zb_adam_ref_buffers){0}, 0, &err), ZB_E_INPUT);
	p = zb_adam_defaults();
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, -1, &err), ZB_E_INPUT);
	zb_adam_buffers nob = b;
	nob.m = NULL;
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &nob, 16, &err), ZB_E_INPUT);
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &nob, 0, &err), ZB_OK); /* n = 0: nothing to do */

	/* the environment picks the isa of an AUTO step */
	zb_adam_isa isa;
	setenv("ZB_ADAM_ISA", "bogus", 1);
	assert_int_equal(zb_cpu_adam_step(NULL, &p, &b, 16, &err), ZB_E_INPUT);
	assert_non_null(strstr(err.msg, "ZB_ADAM_ISA"));
	setenv("ZB_ADAM_ISA", "scalar", 1);
	assert_int_equal(zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, &err), ZB_OK);
	assert_int_equal(isa, ZB_ADAM_ISA_SCALAR);
	assert_int_equal(zb_adam_isa_resolve(ZB_ADAM_ISA_AVX2, &isa, &err),
			 zb_adam_isa_supported(ZB_ADAM_ISA_AVX2) ? ZB_OK : ZB_E_INPUT);
	unsetenv("ZB_ADAM_ISA");
	assert_int_equal(zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, &err), ZB_OK);
	assert_int_equal(isa, zb_adam_isa_best());
	print_message("# best isa on this cpu: %s\n", zb_adam_isa_name(zb_adam_isa_best()));
	assert_int_equal(zb_adam_isa_parse("avx512", &isa, &err), ZB_OK);
	assert_int_equal(isa, ZB_ADAM_ISA_AVX512);
	assert_int_equal(zb_adam_isa_parse("sse", &isa, &err), ZB_E_INPUT);
	st_free(&s);
}

/* ---- thread pool ------------------------------------------------------------- */

typedef struct cover_ctx {
	atomic_int *count;
	int64_t n;
	int threads;
	atomic_int bad_bounds, bad_worker;
} cover_ctx;

static void cover_fn(void *p, int64_t lo, int64_t hi, int worker)
{
	cover_ctx *c = p;
	if (lo < 0 || hi > c->n || lo >= hi || lo % ZB_POOL_ALIGN || (hi != c->n && hi % ZB_POOL_ALIGN))
		atomic_fetch_add(&c->bad_bounds, 1);
	if (worker < 0 || worker >= c->threads)
		atomic_fetch_add(&c->bad_worker, 1);
	for (int64_t i = lo; i < hi && i >= 0 && i < c->n; i++)
		atomic_fetch_add_explicit(&c->count[i], 1, memory_order_relaxed);
}

static void test_pool_covers_once(void **state_)
{
	const int64_t ns[] = {0, 1, 63, 64, 65, 127, 1000, 4096, 4097, 100000, (1 << 20) + 3};
	const int threads[] = {1, 2, 3, 4, 7};
	const int64_t chunks[] = {0, 1, 64, 100, 1000, 1 << 16};
	int combos = 0;
	for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
		zb_pool *pool;
		zb_error err = {0};
		assert_int_equal(zb_pool_create(threads[ti], &pool, &err), ZB_OK);
		assert_int_equal(zb_pool_threads(pool), threads[ti]);
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
				int64_t n = ns[ni];
				cover_ctx c = {.n = n, .threads = threads[ti]};
				c.count = calloc((size_t)(n > 0 ? n : 1), sizeof *c.count);
				assert_non_null(c.count);
				zb_pool_run(pool, cover_fn, &c, n, chunks[ci]);
				int64_t items = 0;
				for (int w = 0; w < threads[ti]; w++)
					items += zb_pool_spans(pool)[w].items;
				for (int64_t i = 0; i < n; i++) {
					if (atomic_load(&c.count[i]) != 1) {
						print_error("n %lld, %d threads, chunk %lld: item %lld done %d times\n",
							    (long long)n, threads[ti], (long long)chunks[ci],
							    (long long)i, atomic_load(&c.count[i]));
						fail();
					}
				}
				assert_int_equal(atomic_load(&c.bad_bounds), 0);
				assert_int_equal(atomic_load(&c.bad_worker), 0);
				if (n > 0)
					assert_int_equal(items, n);
				free(c.count);
				combos++;
			}
		}
		zb_pool_destroy(pool);
	}
	print_message("# pool: %d (n, threads, chunk) combinations each covered exactly once\n", combos);
}

static void test_pool_pinning(void **state_)
{
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
	int ncpu = CPU_COUNT(&allowed);
	zb_pool *pool;
	zb_error err = {0};
	assert_int_equal(zb_pool_create(0, &pool, &err), ZB_OK);
	assert_int_equal(zb_pool_threads(pool), ncpu);
	int pinned = 0;
	for (int w = 0; w < zb_pool_threads(pool); w++) {
		int cpu = zb_pool_cpu(pool, w);
		if (cpu < 0)
			continue;
		pinned++;
		assert_true(CPU_ISSET(cpu, &allowed));
		for (int u = 0; u < w; u++) /* one worker per cpu when they fit */
			assert_int_not_equal(zb_pool_cpu(pool, u), cpu);
	}
	assert_int_equal(pinned, zb_pool_pinned(pool));
	print_message("# pool: %d of %d workers pinned%s%s\n", pinned, zb_pool_threads(pool),
		      zb_pool_pin_note(pool)[0] ? ": " : "", zb_pool_pin_note(pool));
	zb_pool_destroy(pool);
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void noop_fn(void *p, int64_t lo, int64_t hi, int worker)
{
}

/* Idle workers must sleep: 4 of them idle for 200 ms may use far less than a core. */
static void test_pool_idle_sleeps(void **state_)
{
	zb_pool *pool;
	zb_error err = {0};
	assert_int_equal(zb_pool_create(4, &pool, &err), ZB_OK);
	zb_pool_run(pool, noop_fn, NULL, 1 << 20, 64);
	double c0 = cpu_seconds();
	struct timespec nap = {0, 200 * 1000 * 1000};
	nanosleep(&nap, NULL);
	double used = cpu_seconds() - c0;
	print_message("# pool: 4 idle workers used %.2f ms of cpu in 200 ms\n", used * 1e3);
	assert_true(used < 0.02);
	zb_pool_destroy(pool);
}

/* ---- threads do not change results -------------------------------------------- */

static void test_multithread_bitwise(void **state_)
{
	const int64_t n = (1 << 20) + 77;
	state base, ref, got;
	st_init(&base, n), st_init(&ref, n), st_init(&got, n);
	st_fill(&base, 77, ZB_HALF_BF16, 1.0, 0);
	const int threads[] = {1, 2, 3, 4};
	for (int k = 0; k < N_ISAS; k++) {
		if (!isa_available(all_isas[k]))
			continue;
		zb_adam_params p = zb_adam_defaults();
		p.isa = all_isas[k], p.step = 5;
		st_copy(&ref, &base);
		step_ok(NULL, &p, &ref, 1);
		for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
			zb_pool *pool;
			zb_error err = {0};
			assert_int_equal(zb_pool_create(threads[ti], &pool, &err), ZB_OK);
			st_copy(&got, &base);
			step_ok(pool, &p, &got, 1);
			char what[96];
			snprintf(what, sizeof what, "%s on %d threads vs 1", zb_adam_isa_name(all_isas[k]),
				 threads[ti]);
			assert_same_state(&got, &ref, what);
			zb_pool_destroy(pool);
		}
	}
	st_free(&base), st_free(&ref), st_free(&got);
}

/* ---- bench functions, small ----------------------------------------------------- */

/* The bench runs, verifies what it moved (it fails otherwise), and reports numbers
 * that hang together; sizes far beyond memory are refused, not attempted. */
static void test_bench_smoke(void **state_)
{
	zb_cpu_adam_bench b;
	zb_triad_bench t;
	zb_error err = {0};
	if (zb_bench_cpu_adam((1 << 20) + 5, 2, 3, &b, &err) != ZB_OK) {
		print_error("zb_bench_cpu_adam: %s\n", err.msg);
		fail();
	}
	assert_int_equal(b.params, (1 << 20) + 5);
	assert_int_equal(b.threads, 2);
	assert_true(b.min_s > 0 && b.min_s <= b.median_s && b.median_s <= b.max_s);
	assert_close(b.dram_GBps, 28.0 * b.gparams_per_s, 1e-12);
	zb_adam_isa isa;
	assert_int_equal(zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, &err), ZB_OK);
	assert_int_equal(b.isa, isa);
	print_message("# bench: adam %s 1M params on 2 threads: %.3f Gparam/s, %.1f GB/s\n",
		      zb_adam_isa_name(b.isa), b.gparams_per_s, b.dram_GBps);
	if (zb_bench_triad((1 << 20) + 5, 2, 3, &t, &err) != ZB_OK) {
		print_error("zb_bench_triad: %s\n", err.msg);
		fail();
	}
	assert_true(t.GBps > 0);
	assert_close(t.GBps, 12.0 * (double)t.elems / t.median_s * 1e-9, 1e-12);
	print_message("# bench: triad 1M floats on 2 threads: %.1f GB/s\n", t.GBps);
	assert_int_equal(zb_bench_cpu_adam(1LL << 40, 1, 1, &b, &err), ZB_E_NOFIT);
	assert_int_equal(zb_bench_triad(1LL << 40, 1, 1, &t, &err), ZB_E_NOFIT);
	print_message("# bench: %s\n", err.msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_conversions),
		cmocka_unit_test(test_fp16_conversions),
		cmocka_unit_test(test_hand_steps),
		cmocka_unit_test(test_vs_reference),
		cmocka_unit_test(test_isa_bitwise),
		cmocka_unit_test(test_denormals_flushed),
		cmocka_unit_test(test_grad_scale),
		cmocka_unit_test(test_nan_propagates),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_pool_covers_once),
		cmocka_unit_test(test_pool_pinning),
		cmocka_unit_test(test_pool_idle_sleeps),
		cmocka_unit_test(test_multithread_bitwise),
		cmocka_unit_test(test_bench_smoke),
	};
	return cmocka_run_group_tests_name("cpu_adam", tests, NULL, NULL);
}
