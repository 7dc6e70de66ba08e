/*
 * cpu_adam.c - the fused Adam(W) kernel in three builds (scalar C, AVX2+FMA+F16C,
 * AVX-512) chosen at run time, its multi-threaded driver, and the double reference.
 *
 * The library is compiled for plain x86-64 (the binary must run anywhere), so the
 * SIMD kernels carry target attributes and are reached only after
 * __builtin_cpu_supports says the CPU has them. Each kernel is written once as an
 * always_inline body and instantiated for every (gradient type, parameter type,
 * 16-bit output or not) combination, so the inner loop carries no flag tests.
 *
 * Streaming (non-temporal) stores: only for the 16-bit copy, a buffer that is only
 * written. An ordinary store first reads the line (read for ownership), 2 extra
 * bytes per parameter, and leaves it dirty in cache to be written back later.
 * Measured on the H200 machine's 16-core Xeon (256 Mi params, median of 5, AVX-512,
 * on vs off back to back on one host, on two hosts): 1 thread 0.690 vs 0.606 Gparam/s
 * (+14%), 8 threads 3.18 vs 2.94 (+8%), 16 threads 4.41 vs 4.19 (+5%), and +11-13% on
 * the other host; the dev VM (1 thread, 16 Mi) +10%. Streaming is done a whole 64-byte
 * line per store (two vectors of 16 parameters): a half-line version was slower
 * than plain stores on the dev VM. master, m and v are read and written in place,
 * so their lines are in cache when written and streaming them would save nothing.
 * ZB_ADAM_NT=0 turns streaming off (to measure it).
 */
#include "exec/cpu_adam.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

/* Per-call constants (see cpu_adam.h for the formula). */
typedef struct adam_consts {
	float b1, b2, c1, c2, step, ibc2, eps, decay, inv_scale;
} adam_consts;

typedef void (*adam_kernel)(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, int64_t hi);

/* Whether the SIMD paths write the 16-bit copy with streaming stores (ZB_ADAM_NT,
 * read once with the CPU features; default on). */
static int stream_out = 1;

/* Whether the kernel runs with denormals flushed (MXCSR FTZ and DAZ; ZB_ADAM_DENORMALS=keep
 * turns it off, read once with the CPU features; default on). An fp32 operand or result
 * below 1.2e-38 costs a microcode assist per instruction on x86: a step over gradients
 * near 1e-21 (their squares denormal) ran at 16 ns a parameter against 1.3 (one thread,
 * dev machine), and the executor's synthetic gradients reach that range in
 * its runs with fused attention (CPU Adam 17.7 ms against 6.8 with eager attention,
 * same sizes: the fid suite on the H200). Values that small are underflow noise
 * for Adam; the flushed step is what a training run's speed is made of. */
static int flush_denormals = 1;
#define MXCSR_FTZ_DAZ 0x8040u

#define INLINE static inline __attribute__((always_inline))

/* ---- scalar --------------------------------------------------------------- */

INLINE void scalar_body(const adam_consts *kp, const zb_adam_buffers *bp, int64_t lo, int64_t hi,
			int gfp16, int pfp16, int out)
{
	const adam_consts lk = *kp, *k = &lk; /* locals: see avx512_body */
	const zb_adam_buffers lb = *bp, *b = &lb;
	for (int64_t i = lo; i < hi; i++) {
		float g = (gfp16 ? zb_f16_to_f32(b->grad[i]) : zb_bf16_to_f32(b->grad[i])) * k->inv_scale;
		float m = fmaf(k->b1, b->m[i], k->c1 * g);
		float v = fmaf(k->b2, b->v[i], k->c2 * (g * g));
		float d = sqrtf(v * k->ibc2) + k->eps;
		float p = b->master[i];
		p = fmaf(-k->step, m / d, fmaf(-k->decay, p, p));
		b->m[i] = m;
		b->v[i] = v;
		b->master[i] = p;
		if (out)
			b->param16[i] = pfp16 ? zb_f32_to_f16(p) : zb_f32_to_bf16(p);
	}
}

/* Instantiate body for the 8 combinations of flags as KERNEL_<name>_<g><p><o>. */
#define INSTANTIATE(attr, name, body)                                                           \
	attr static void name##_000(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 0, 0, 0); }                \
	attr static void name##_001(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 0, 0, 1); }                \
	attr static void name##_011(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 0, 1, 1); }                \
	attr static void name##_100(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 1, 0, 0); }                \
	attr static void name##_101(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 1, 0, 1); }                \
	attr static void name##_111(const adam_consts *k, const zb_adam_buffers *b, int64_t lo, \
				    int64_t hi) { body(k, b, lo, hi, 1, 1, 1); }                \
	static const adam_kernel name##_table[8] = {name##_000, name##_001, name##_000,          \
						     name##_011, name##_100, name##_101,         \
						     name##_100, name##_111};

/* Without output the parameter type does not matter: _010 is _000, _110 is _100. */
INSTANTIATE(, scalar, scalar_body)

/* ---- AVX2 + FMA + F16C: 8 lanes, scalar head and tail (same arithmetic) -- */

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

/* Parameters [i, i + 8): master, m and v stored; the 16-bit copy returned. */
AVX2_TARGET INLINE __m128i avx2_vec(const adam_consts *k, const zb_adam_buffers *b, int64_t i,
				    int gfp16, int pfp16)
{
	const __m256 b1 = _mm256_set1_ps(k->b1), b2 = _mm256_set1_ps(k->b2);
	const __m256 c1 = _mm256_set1_ps(k->c1), c2 = _mm256_set1_ps(k->c2);
	const __m256 step = _mm256_set1_ps(k->step), ibc2 = _mm256_set1_ps(k->ibc2);
	const __m256 eps = _mm256_set1_ps(k->eps), decay = _mm256_set1_ps(k->decay);
	const __m256 inv_scale = _mm256_set1_ps(k->inv_scale);

	__m128i gh = _mm_loadu_si128((const __m128i *)(b->grad + i));
	__m256 g = gfp16 ? _mm256_cvtph_ps(gh)
			 : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(gh), 16));
	g = _mm256_mul_ps(g, inv_scale);
	__m256 m = _mm256_fmadd_ps(b1, _mm256_loadu_ps(b->m + i), _mm256_mul_ps(c1, g));
	__m256 v = _mm256_fmadd_ps(b2, _mm256_loadu_ps(b->v + i),
				   _mm256_mul_ps(c2, _mm256_mul_ps(g, g)));
	__m256 d = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(v, ibc2)), eps);
	__m256 p = _mm256_loadu_ps(b->master + i);
	p = _mm256_fnmadd_ps(step, _mm256_div_ps(m, d), _mm256_fnmadd_ps(decay, p, p));
	_mm256_storeu_ps(b->m + i, m);
	_mm256_storeu_ps(b->v + i, v);
	_mm256_storeu_ps(b->master + i, p);
	if (pfp16)
		return _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT);
	__m256i x = _mm256_castps_si256(p);
	__m256i hi16 = _mm256_srli_epi32(x, 16);
	__m256i r = _mm256_add_epi32(x, _mm256_set1_epi32(0x7fff));
	r = _mm256_add_epi32(r, _mm256_and_si256(hi16, _mm256_set1_epi32(1)));
	r = _mm256_srli_epi32(r, 16);
	__m256i nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
	r = _mm256_blendv_epi8(r, _mm256_or_si256(hi16, _mm256_set1_epi32(0x40)), nan);
	return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

AVX2_TARGET INLINE void avx2_body(const adam_consts *kp, const zb_adam_buffers *bp, int64_t lo,
				  int64_t hi, int gfp16, int pfp16, int out)
{
	const adam_consts lk = *kp, *k = &lk; /* locals: see avx512_body */
	const zb_adam_buffers lb = *bp, *b = &lb;
	int64_t i = lo;
	if (out && stream_out && !((uintptr_t)b->param16 & 1)) {
		/* scalar up to a 32-byte boundary of param16, then 16 parameters (32 bytes
		 * of output) per streaming store */
		int64_t head = (int64_t)((32 - ((uintptr_t)(b->param16 + i) & 31)) & 31) / 2;
		if (head > hi - i)
			head = hi - i;
		scalar_body(k, b, i, i + head, gfp16, pfp16, 1);
		for (i += head; i + 16 <= hi; i += 16) {
			__m128i h0 = avx2_vec(k, b, i, gfp16, pfp16);
			__m128i h1 = avx2_vec(k, b, i + 8, gfp16, pfp16);
			_mm256_stream_si256((__m256i *)(b->param16 + i), _mm256_set_m128i(h1, h0));
		}
		_mm_sfence(); /* streaming stores visible before the pool reports done */
	}
	for (; i + 8 <= hi; i += 8) {
		__m128i h = avx2_vec(k, b, i, gfp16, pfp16);
		if (out)
			_mm_storeu_si128((__m128i *)(b->param16 + i), h);
	}
	if (i < hi)
		scalar_body(k, b, i, hi, gfp16, pfp16, out);
}

INSTANTIATE(AVX2_TARGET, avx2, avx2_body)

/* ---- AVX-512 F/BW/VL: 16 lanes, the tail masked ---------------------------- */

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

/* Parameters [i, i + 16) where mask is set: master, m and v stored; the 16-bit
 * copy returned. */
AVX512_TARGET INLINE __m256i avx512_vec(const adam_consts *k, const zb_adam_buffers *b, int64_t i,
					__mmask16 mask, int gfp16, int pfp16)
{
	const __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2);
	const __m512 c1 = _mm512_set1_ps(k->c1), c2 = _mm512_set1_ps(k->c2);
	const __m512 step = _mm512_set1_ps(k->step), ibc2 = _mm512_set1_ps(k->ibc2);
	const __m512 eps = _mm512_set1_ps(k->eps), decay = _mm512_set1_ps(k->decay);
	const __m512 inv_scale = _mm512_set1_ps(k->inv_scale);

	__m256i gh = _mm256_maskz_loadu_epi16(mask, b->grad + i);
	__m512 g = gfp16 ? _mm512_cvtph_ps(gh)
			 : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(gh), 16));
	g = _mm512_mul_ps(g, inv_scale);
	__m512 m = _mm512_fmadd_ps(b1, _mm512_maskz_loadu_ps(mask, b->m + i), _mm512_mul_ps(c1, g));
	__m512 v = _mm512_fmadd_ps(b2, _mm512_maskz_loadu_ps(mask, b->v + i),
				   _mm512_mul_ps(c2, _mm512_mul_ps(g, g)));
	__m512 d = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(v, ibc2)), eps);
	__m512 p = _mm512_maskz_loadu_ps(mask, b->master + i);
	p = _mm512_fnmadd_ps(step, _mm512_div_ps(m, d), _mm512_fnmadd_ps(decay, p, p));
	_mm512_mask_storeu_ps(b->m + i, mask, m);
	_mm512_mask_storeu_ps(b->v + i, mask, v);
	_mm512_mask_storeu_ps(b->master + i, mask, p);
	if (pfp16)
		return _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT);
	__m512i x = _mm512_castps_si512(p);
	__m512i hi16 = _mm512_srli_epi32(x, 16);
	__m512i r = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
	r = _mm512_add_epi32(r, _mm512_and_si512(hi16, _mm512_set1_epi32(1)));
	r = _mm512_srli_epi32(r, 16);
	__mmask16 nan = _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q);
	r = _mm512_mask_or_epi32(r, nan, hi16, _mm512_set1_epi32(0x40));
	return _mm512_cvtepi32_epi16(r);
}

static inline __mmask16 first_lanes(int64_t n)
{
	return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1);
}

AVX512_TARGET INLINE void avx512_body(const adam_consts *kp, const zb_adam_buffers *bp, int64_t lo,
				      int64_t hi, int gfp16, int pfp16, int out)
{
	/* Local copies: the stores through float * could alias *kp and *bp, which would
	 * make the compiler reload every pointer and constant each iteration. */
	const adam_consts lk = *kp, *k = &lk;
	const zb_adam_buffers lb = *bp, *b = &lb;
	int64_t i = lo;
	if (out && stream_out && !((uintptr_t)b->param16 & 1)) {
		/* masked up to a 64-byte boundary of param16, then 32 parameters (one
		 * whole line of output) per streaming store */
		int64_t head = (int64_t)((64 - ((uintptr_t)(b->param16 + i) & 63)) & 63) / 2;
		while (head > 0 && i < hi) {
			int64_t c = head < hi - i ? head : hi - i;
			c = c < 16 ? c : 16;
			__m256i h = avx512_vec(k, b, i, first_lanes(c), gfp16, pfp16);
			_mm256_mask_storeu_epi16(b->param16 + i, first_lanes(c), h);
			i += c, head -= c;
		}
		for (; i + 32 <= hi; i += 32) {
			__m256i h0 = avx512_vec(k, b, i, 0xffff, gfp16, pfp16);
			__m256i h1 = avx512_vec(k, b, i + 16, 0xffff, gfp16, pfp16);
			_mm512_stream_si512((void *)(b->param16 + i),
					    _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
		}
		_mm_sfence(); /* streaming stores visible before the pool reports done */
	}
	for (; i + 16 <= hi; i += 16) {
		__m256i h = avx512_vec(k, b, i, 0xffff, gfp16, pfp16);
		if (out)
			_mm256_storeu_si256((__m256i *)(b->param16 + i), h);
	}
	if (i < hi) {
		__mmask16 mask = first_lanes(hi - i);
		__m256i h = avx512_vec(k, b, i, mask, gfp16, pfp16);
		if (out)
			_mm256_mask_storeu_epi16(b->param16 + i, mask, h);
	}
}

INSTANTIATE(AVX512_TARGET, avx512, avx512_body)

/* ---- dispatch ------------------------------------------------------------- */

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int have_avx2, have_avx512;

static void detect(void)
{
	const char *nt = getenv("ZB_ADAM_NT");
	stream_out = !(nt && strcmp(nt, "0") == 0);
	const char *dn = getenv("ZB_ADAM_DENORMALS");
	flush_denormals = !(dn && strcmp(dn, "keep") == 0);
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		    __builtin_cpu_supports("f16c");
	have_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl");
}

static const char *const isa_names[] = {"auto", "scalar", "avx2", "avx512"};

const char *zb_adam_isa_name(zb_adam_isa isa)
{
	return (unsigned)isa < 4 ? isa_names[isa] : "unknown";
}

zb_status zb_adam_isa_parse(const char *name, zb_adam_isa *out, zb_error *err)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, isa_names[i]) == 0) {
			*out = (zb_adam_isa)i;
			return ZB_OK;
		}
	}
	return zb_fail(err, ZB_E_INPUT, "unknown adam isa '%s' (known: auto, scalar, avx2, avx512)",
		       name);
}

int zb_adam_isa_supported(zb_adam_isa isa)
{
	pthread_once(&detect_once, detect);
	switch (isa) {
	case ZB_ADAM_ISA_AUTO:
	case ZB_ADAM_ISA_SCALAR:
		return 1;
	case ZB_ADAM_ISA_AVX2:
		return have_avx2;
	case ZB_ADAM_ISA_AVX512:
		return have_avx512;
	}
	return 0;
}

zb_adam_isa zb_adam_isa_best(void)
{
	pthread_once(&detect_once, detect);
	return have_avx512 ? ZB_ADAM_ISA_AVX512 : have_avx2 ? ZB_ADAM_ISA_AVX2 : ZB_ADAM_ISA_SCALAR;
}

zb_status zb_adam_isa_resolve(zb_adam_isa requested, zb_adam_isa *out, zb_error *err)
{
	zb_adam_isa isa = requested;
	if (isa == ZB_ADAM_ISA_AUTO) {
		const char *env = getenv("ZB_ADAM_ISA");
		if (env && *env) {
			if (zb_adam_isa_parse(env, &isa, NULL) != ZB_OK)
				return zb_fail(err, ZB_E_INPUT,
					       "unknown ZB_ADAM_ISA '%s' (known: scalar, avx2, avx512)", env);
			if (!zb_adam_isa_supported(isa))
				return zb_fail(err, ZB_E_INPUT,
					       "ZB_ADAM_ISA=%s is not supported by this cpu (best: %s)", env,
					       zb_adam_isa_name(zb_adam_isa_best()));
		}
		if (isa == ZB_ADAM_ISA_AUTO)
			isa = zb_adam_isa_best();
	}
	if ((unsigned)isa > ZB_ADAM_ISA_AVX512)
		return zb_fail(err, ZB_E_INPUT, "unknown adam isa %d", (int)isa);
	if (!zb_adam_isa_supported(isa))
		return zb_fail(err, ZB_E_INPUT, "adam isa '%s' is not supported by this cpu (best: %s)",
			       zb_adam_isa_name(isa), zb_adam_isa_name(zb_adam_isa_best()));
	*out = isa;
	return ZB_OK;
}

/* ---- parameters ------------------------------------------------------------ */

zb_adam_params zb_adam_defaults(void)
{
	return (zb_adam_params){
		.lr = 1e-3,
		.beta1 = 0.9,
		.beta2 = 0.999,
		.eps = 1e-8,
		.weight_decay = 0.01,
		.step = 1,
		.grad_scale = 1.0,
		.grad_type = ZB_HALF_BF16,
		.param_type = ZB_HALF_BF16,
		.isa = ZB_ADAM_ISA_AUTO,
	};
}

static zb_status check_params(const zb_adam_params *p, int64_t n, zb_error *err)
{
	if (n < 0)
		return zb_fail(err, ZB_E_INPUT, "adam parameter count %lld is negative", (long long)n);
	if (!(p->lr >= 0 && isfinite(p->lr)))
		return zb_fail(err, ZB_E_INPUT, "adam lr %g out of range (finite, >= 0)", p->lr);
	if (!(p->beta1 >= 0 && p->beta1 < 1))
		return zb_fail(err, ZB_E_INPUT, "adam beta1 %g out of range [0, 1)", p->beta1);
	if (!(p->beta2 >= 0 && p->beta2 < 1))
		return zb_fail(err, ZB_E_INPUT, "adam beta2 %g out of range [0, 1)", p->beta2);
	if (!(p->eps >= 0 && isfinite(p->eps)))
		return zb_fail(err, ZB_E_INPUT, "adam eps %g out of range (finite, >= 0)", p->eps);
	if (!(p->weight_decay >= 0 && isfinite(p->weight_decay)))
		return zb_fail(err, ZB_E_INPUT, "adam weight decay %g out of range (finite, >= 0)",
			       p->weight_decay);
	if (p->step < 1)
		return zb_fail(err, ZB_E_INPUT, "adam step %lld out of range (>= 1)", (long long)p->step);
	if (!(p->grad_scale > 0 && isfinite(p->grad_scale)))
		return zb_fail(err, ZB_E_INPUT, "adam grad scale %g out of range (finite, > 0)",
			       p->grad_scale);
	if ((unsigned)p->grad_type > ZB_HALF_FP16 || (unsigned)p->param_type > ZB_HALF_FP16)
		return zb_fail(err, ZB_E_INPUT, "adam 16-bit type %d/%d unknown (bf16 0, fp16 1)",
			       (int)p->grad_type, (int)p->param_type);
	return ZB_OK;
}

static void bias_corrections(const zb_adam_params *p, double *bc1, double *bc2)
{
	*bc1 = 1.0 - pow(p->beta1, (double)p->step);
	*bc2 = 1.0 - pow(p->beta2, (double)p->step);
}

/* ---- the step -------------------------------------------------------------- */

typedef struct adam_job {
	adam_consts k;
	zb_adam_buffers b;
	adam_kernel fn;
} adam_job;

/* One range of the step on this thread, with the denormal mode set and restored. */
static void adam_range(const adam_job *job, int64_t lo, int64_t hi)
{
	unsigned csr = _mm_getcsr();
	if (flush_denormals)
		_mm_setcsr(csr | MXCSR_FTZ_DAZ);
	job->fn(&job->k, &job->b, lo, hi);
	if (flush_denormals)
		_mm_setcsr(csr);
}

static void adam_chunk(void *ctx, int64_t lo, int64_t hi, int worker)
{
	(void)worker;
	adam_range(ctx, lo, hi);
}

zb_status zb_cpu_adam_step(zb_pool *pool, const zb_adam_params *p, const zb_adam_buffers *b,
			   int64_t n, zb_error *err)
{
	zb_status st = check_params(p, n, err);
	if (st != ZB_OK)
		return st;
	zb_adam_isa isa;
	if ((st = zb_adam_isa_resolve(p->isa, &isa, err)) != ZB_OK)
		return st;
	if (n == 0)
		return ZB_OK;
	if (!b->grad || !b->master || !b->m || !b->v)
		return zb_fail(err, ZB_E_INPUT, "adam step over %lld parameters is missing a buffer",
			       (long long)n);

	double bc1, bc2;
	bias_corrections(p, &bc1, &bc2);
	adam_job job = {
		.k = {
			.b1 = (float)p->beta1,
			.b2 = (float)p->beta2,
			.c1 = (float)(1.0 - p->beta1),
			.c2 = (float)(1.0 - p->beta2),
			.step = (float)(p->lr / bc1),
			.ibc2 = (float)(1.0 / bc2),
			.eps = (float)p->eps,
			.decay = (float)(p->lr * p->weight_decay),
			.inv_scale = (float)(1.0 / p->grad_scale),
		},
		.b = *b,
	};
	int flags = (p->grad_type == ZB_HALF_FP16) * 4 + (p->param_type == ZB_HALF_FP16) * 2 +
		    (b->param16 != NULL);
	job.fn = isa == ZB_ADAM_ISA_AVX512 ? avx512_table[flags]
		 : isa == ZB_ADAM_ISA_AVX2 ? avx2_table[flags]
					   : scalar_table[flags];
	if (pool)
		zb_pool_run(pool, adam_chunk, &job, n, 0);
	else
		adam_range(&job, 0, n);
	return ZB_OK;
}

zb_status zb_adam_reference_step(const zb_adam_params *p, const zb_adam_ref_buffers *b, int64_t n,
				 zb_error *err)
{
	zb_status st = check_params(p, n, err);
	if (st != ZB_OK)
		return st;
	if (n > 0 && (!b->grad || !b->master || !b->m || !b->v))
		return zb_fail(err, ZB_E_INPUT,
			       "adam reference step over %lld parameters is missing a buffer",
			       (long long)n);
	double bc1, bc2;
	bias_corrections(p, &bc1, &bc2);
	const double lr = p->lr, b1 = p->beta1, b2 = p->beta2;
	for (int64_t i = 0; i < n; i++) {
		double g = b->grad[i] / p->grad_scale;
		double m = b1 * b->m[i] + (1.0 - b1) * g;
		double v = b2 * b->v[i] + (1.0 - b2) * g * g;
		double w = b->master[i];
		b->m[i] = m;
		b->v[i] = v;
		b->master[i] = w - lr * p->weight_decay * w - (lr / bc1) * m / (sqrt(v / bc2) + p->eps);
	}
	return ZB_OK;
}
