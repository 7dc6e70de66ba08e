/*
 * cpu_adam.h - the fused CPU Adam(W) of ZeRO-Offload, and a double-precision
 * reference to check it against.
 *
 * One pass over memory per parameter: read the 16-bit gradient (bf16, or fp16 with
 * a loss scale), the fp32 master weight and the fp32 moments m and v; write master,
 * m and v back in place and a 16-bit copy of the new master (the parameter the GPU
 * gets back). That is 28 bytes of DRAM traffic per parameter (ZB_ADAM_BYTES_PER_PARAM
 * in core/graph.h), and at ~1-2 flops per byte the kernel is memory-bound on every
 * CPU we know: the SIMD paths exist to keep up with DRAM, not to save arithmetic.
 *
 * The arithmetic, exactly (every line is one fp32 rounding; fma rounds once):
 *
 *   per call, in double, each rounded once to float:
 *     b1 = beta1, b2 = beta2, c1 = 1 - beta1, c2 = 1 - beta2,
 *     step = lr / (1 - beta1^t), ibc2 = 1 / (1 - beta2^t),
 *     decay = lr * weight_decay, eps = eps, inv_scale = 1 / grad_scale
 *   per parameter, in float:
 *     g  = half_to_float(grad) * inv_scale
 *     m  = fma(b1, m, c1 * g)
 *     v  = fma(b2, v, c2 * (g * g))
 *     d  = sqrt(v * ibc2) + eps
 *     p  = fma(-step, m / d, fma(-decay, p, p))     decoupled decay on the old p (AdamW)
 *     param16 = float_to_half(p)                     round to nearest even
 *
 * which is Adam with bias correction, m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t),
 * p -= lr * m_hat / (sqrt(v_hat) + eps) + lr * weight_decay * p. Division and square
 * root are the correctly rounded IEEE ones (no reciprocal estimates) and every path
 * (scalar C, AVX2+FMA+F16C, AVX-512) does the same operations in the same order, so
 * all paths give bitwise identical results for every input, NaN included; the
 * tests check it. (This needs the library built without -ffast-math, as the
 * Makefile does.) NaN or Inf in a gradient is not skipped: it reaches m, v, the
 * master weight and the 16-bit copy, where the caller's overflow check can see it.
 *
 * The SIMD paths write the 16-bit copy with streaming (non-temporal) stores, then
 * an sfence: it goes to DRAM, not to the cache, which is where the H2D copy that
 * follows reads it from anyway; this saves the read-for-ownership of every line
 * (measured +5-14% on the H200 machine, see cpu_adam.c). ZB_ADAM_NT=0 in the
 * environment (read once, at first use) turns them off.
 * Denormal fp32 values (below 1.2e-38) are flushed to zero while the kernel runs
 * (MXCSR FTZ and DAZ, restored after; every path alike, so they stay bitwise equal):
 * on x86 each denormal operand costs a microcode assist, and gradients near 1e-21 made
 * a step 12x slower. ZB_ADAM_DENORMALS=keep keeps IEEE gradual underflow.
 */
#ifndef ZB_CPU_ADAM_H
#define ZB_CPU_ADAM_H

#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "exec/threadpool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Encoding of a 16-bit buffer. */
typedef enum zb_half {
	ZB_HALF_BF16 = 0, /* bfloat16: the top half of an fp32 */
	ZB_HALF_FP16 = 1, /* IEEE binary16 */
} zb_half;

/* Which implementation runs the fused kernel. */
typedef enum zb_adam_isa {
	ZB_ADAM_ISA_AUTO = 0, /* ZB_ADAM_ISA from the environment if set, else the best */
	ZB_ADAM_ISA_SCALAR,   /* portable C */
	ZB_ADAM_ISA_AVX2,     /* AVX2 + FMA + F16C, 8 lanes */
	ZB_ADAM_ISA_AVX512,   /* AVX-512 F/BW/VL, 16 lanes, masked tails */
} zb_adam_isa;

typedef struct zb_adam_params {
	double lr;
	double beta1, beta2;  /* in [0, 1) */
	double eps;           /* >= 0, added after the square root */
	double weight_decay;  /* decoupled (AdamW); 0 for plain Adam */
	int64_t step;         /* t: 1 for the first update, bias corrections 1 - beta^t */
	double grad_scale;    /* loss scale the gradients carry (> 0); 1.0 for bf16 */
	zb_half grad_type;    /* encoding of zb_adam_buffers.grad */
	zb_half param_type;   /* encoding of zb_adam_buffers.param16 */
	zb_adam_isa isa;
} zb_adam_params;

/* n parameters each; the arrays must not overlap. Any alignment works; 64-byte
 * aligned arrays are fastest. */
typedef struct zb_adam_buffers {
	const uint16_t *grad; /* 16-bit gradients, read */
	float *master;        /* fp32 master weights, updated in place */
	float *m, *v;         /* fp32 first and second moments, updated in place */
	uint16_t *param16;    /* the new master rounded to 16 bits, written; NULL: skip */
} zb_adam_buffers;

/* PyTorch's AdamW defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01;
 * step 1, grad_scale 1, bf16 gradients and parameters, isa auto. */
zb_adam_params zb_adam_defaults(void);

/* One Adam step over parameters [0, n) of b, split across the pool's workers
 * (pool NULL: on the calling thread). Fails, touching nothing, on parameters out of
 * range, missing buffers, or an isa this CPU lacks. Results do not depend on the
 * pool, the thread count or the isa. */
zb_status zb_cpu_adam_step(zb_pool *pool, const zb_adam_params *p, const zb_adam_buffers *b,
			   int64_t n, zb_error *err);

/* The same step in double precision, for tests and the executor's precision checks.
 * grad holds the gradient values as stored (so still multiplied by grad_scale);
 * no rounding to float anywhere:
 *   g = grad / grad_scale; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g g
 *   p = p - lr wd p - (lr / (1 - beta1^t)) m / (sqrt(v / (1 - beta2^t)) + eps)
 * p->isa, p->grad_type and p->param_type are ignored. */
typedef struct zb_adam_ref_buffers {
	const double *grad;
	double *master, *m, *v;
} zb_adam_ref_buffers;

zb_status zb_adam_reference_step(const zb_adam_params *p, const zb_adam_ref_buffers *b, int64_t n,
				 zb_error *err);

/* "auto", "scalar", "avx2", "avx512". */
const char *zb_adam_isa_name(zb_adam_isa isa);

/* Parse a name zb_adam_isa_name() gives ("auto" included). */
zb_status zb_adam_isa_parse(const char *name, zb_adam_isa *out, zb_error *err);

/* Whether this CPU (and OS) can run isa; AUTO and SCALAR always can. */
int zb_adam_isa_supported(zb_adam_isa isa);

/* The fastest isa this CPU runs, ignoring the environment. */
zb_adam_isa zb_adam_isa_best(void);

/* The isa a step asking for `requested` runs: AUTO becomes ZB_ADAM_ISA from the
 * environment (scalar | avx2 | avx512) when set, else zb_adam_isa_best(). Fails on an
 * unknown name or an isa this CPU lacks. */
zb_status zb_adam_isa_resolve(zb_adam_isa requested, zb_adam_isa *out, zb_error *err);

/*
 * 16-bit conversions, the ones the kernels use, for callers that fill gradients or
 * check parameters. bf16 -> float is exact (a shift); float -> bf16 rounds to nearest
 * even and keeps NaN a (quiet) NaN; float -> fp16 rounds to nearest even, with
 * subnormals, overflow to Inf, and NaN kept quiet NaN, as F16C's vcvtps2ph does.
 */
static inline float zb_bf16_to_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, sizeof f);
	return f;
}

static inline uint16_t zb_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof x);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static inline float zb_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
	if (exp == 0x1f) {
		x = sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0); /* NaN: quiet */
	} else if (exp) {
		x = sign | ((exp + 112) << 23) | (man << 13);
	} else if (!man) {
		x = sign;
	} else { /* subnormal: man * 2^-24, normalized */
		uint32_t e = 113;
		while (!(man & 0x400)) {
			man <<= 1;
			e--;
		}
		x = sign | (e << 23) | ((man & 0x3ff) << 13);
	}
	float f;
	memcpy(&f, &x, sizeof f);
	return f;
}

static inline uint16_t zb_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof x);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u) /* NaN: quiet, top payload bits kept */
		return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
	if (ax >= 0x477ff000u) /* >= 65520 (halfway above 65504), and Inf */
		return (uint16_t)(sign | 0x7c00);
	if (ax >= 0x38800000u) /* normal: >= 2^-14 */
		return (uint16_t)(sign | ((ax + 0xfffu + ((ax >> 13) & 1) - (112u << 23)) >> 13));
	uint32_t e = ax >> 23;
	if (e < 102) /* < 2^-25 rounds to zero (2^-25 itself ties to the even zero) */
		return sign;
	uint32_t man = (ax & 0x7fffffu) | 0x800000u, shift = 126 - e;
	uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	return (uint16_t)(sign | q);
}

#ifdef __cplusplus
}
#endif

#endif
