/*
 * cpu_adam_bench.c - the fused CPU Adam and a STREAM-like triad, measured on one
 * thread pool. See cpu_adam_bench.h for the method.
 */
#include "exec/cpu_adam_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <immintrin.h>

#include "common/stats.h"

#define VERIFY_SLICE 4096 /* elements saved at each end of the Adam arrays */

/* ---- memory ------------------------------------------------------------------ */

/* MemAvailable from /proc/meminfo, else physical memory; bytes. */
static double available_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	double kb = -1;
	while (f && fgets(line, sizeof line, f)) {
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	if (kb > 0)
		return kb * 1024.0;
	return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

static zb_status check_fit(const char *what, double bytes, zb_error *err)
{
	double avail = available_bytes();
	if (bytes > 0.9 * avail)
		return zb_fail(err, ZB_E_NOFIT, "%s needs %.2f GiB of memory, %.2f GiB available", what,
			       bytes / 1073741824.0, avail / 1073741824.0);
	return ZB_OK;
}

/* Fresh anonymous pages, huge pages asked for (a 4 KiB page per 4 KiB of a multi-GB
 * stream would add TLB misses that training code with huge pages does not have). */
static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE); /* advice only: fine if refused */
	return p;
}

static void unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

/* Deterministic value in [-1, 1) for index i (never all zeros). */
static float noise(uint64_t i, uint64_t seed)
{
	uint64_t z = i * 0x9e3779b97f4a7c15ull + seed;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 40) / 8388608.0 - 1.0);
}

/* Median, min and max of n timings (common/stats.h). */
static void summarize(const double *t, int n, double *median, double *min, double *max)
{
	*median = zb_median(t, n);
	*min = zb_min(t, n);
	*max = zb_max(t, n);
}

/* ---- Adam ---------------------------------------------------------------------- */

typedef struct adam_arrays {
	zb_adam_buffers b;
	uint16_t *grad; /* the same as b.grad, writable */
} adam_arrays;

/* First touch: each worker writes the pages it is given, with realistic magnitudes
 * (weights ~0.02, gradients ~1e-2, moments of a run in progress). */
static void adam_fill(void *ctx, int64_t lo, int64_t hi, int worker)
{
	adam_arrays *a = ctx;
	for (int64_t i = lo; i < hi; i++) {
		a->grad[i] = zb_f32_to_bf16(0.01f * noise((uint64_t)i, 1));
		a->b.master[i] = 0.02f * noise((uint64_t)i, 2);
		a->b.m[i] = 0.001f * noise((uint64_t)i, 3);
		a->b.v[i] = 1e-5f * (1.5f + noise((uint64_t)i, 4));
		a->b.param16[i] = 0;
	}
}

/* A copy of elements [at, at + n) of the five arrays. */
typedef struct slice {
	int64_t at, n;
	uint16_t grad[VERIFY_SLICE], p16[VERIFY_SLICE];
	float w[VERIFY_SLICE], m[VERIFY_SLICE], v[VERIFY_SLICE];
} slice;

static void slice_save(slice *s, const adam_arrays *a, int64_t at, int64_t n)
{
	s->at = at, s->n = n;
	memcpy(s->grad, a->grad + at, (size_t)n * 2);
	memcpy(s->p16, a->b.param16 + at, (size_t)n * 2);
	memcpy(s->w, a->b.master + at, (size_t)n * 4);
	memcpy(s->m, a->b.m + at, (size_t)n * 4);
	memcpy(s->v, a->b.v + at, (size_t)n * 4);
}

/* Replay steps 1..steps on the saved slice with the scalar kernel and compare bits;
 * -1 when equal, else the first differing index. */
static int64_t slice_check(slice *s, const adam_arrays *a, zb_adam_params p, int steps)
{
	zb_adam_buffers b = {s->grad, s->w, s->m, s->v, s->p16};
	p.isa = ZB_ADAM_ISA_SCALAR;
	for (int t = 1; t <= steps; t++) {
		p.step = t;
		if (zb_cpu_adam_step(NULL, &p, &b, s->n, NULL) != ZB_OK)
			return s->at;
	}
	for (int64_t i = 0; i < s->n; i++) {
		int64_t j = s->at + i;
		if (memcmp(&s->w[i], &a->b.master[j], 4) || memcmp(&s->m[i], &a->b.m[j], 4) ||
		    memcmp(&s->v[i], &a->b.v[j], 4) || s->p16[i] != a->b.param16[j])
			return j;
	}
	return -1;
}

zb_status zb_bench_cpu_adam_on(zb_pool *pool, int64_t params, int repeats, zb_adam_isa isa,
			       zb_cpu_adam_bench *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	if (params <= 0)
		params = ZB_BENCH_ADAM_PARAMS;
	if (repeats <= 0)
		repeats = ZB_BENCH_REPEATS;
	zb_adam_isa ran;
	zb_status st = zb_adam_isa_resolve(isa, &ran, err);
	if (st != ZB_OK)
		return st;
	const size_t n2 = (size_t)params * 2, n4 = (size_t)params * 4;
	if ((st = check_fit("cpu adam bench", 2.0 * n2 + 3.0 * n4, err)) != ZB_OK)
		return st;

	adam_arrays a = {0};
	a.grad = map(n2);
	a.b.grad = a.grad;
	a.b.param16 = map(n2);
	a.b.master = map(n4);
	a.b.m = map(n4);
	a.b.v = map(n4);
	double *times = calloc((size_t)repeats, sizeof *times);
	slice *head = malloc(sizeof *head), *tail = malloc(sizeof *tail);
	if (!a.grad || !a.b.param16 || !a.b.master || !a.b.m || !a.b.v || !times || !head || !tail) {
		st = zb_fail(err, ZB_E_NOMEM, "cannot map %.2f GiB for the cpu adam bench",
			     (2.0 * n2 + 3.0 * n4) / 1073741824.0);
		goto done;
	}
	zb_pool_run(pool, adam_fill, &a, params, 0);
	int64_t sn = params < VERIFY_SLICE ? params : VERIFY_SLICE;
	slice_save(head, &a, 0, sn);
	slice_save(tail, &a, params - sn, sn);

	zb_adam_params p = zb_adam_defaults();
	p.isa = ran;
	int steps = 0;
	for (int r = 0; r < ZB_BENCH_WARMUP + repeats; r++) {
		p.step = ++steps;
		int64_t t0 = zb_now_ns();
		if ((st = zb_cpu_adam_step(pool, &p, &a.b, params, err)) != ZB_OK)
			goto done;
		int64_t t1 = zb_now_ns();
		if (r >= ZB_BENCH_WARMUP)
			times[r - ZB_BENCH_WARMUP] = (double)(t1 - t0) * 1e-9;
	}
	int64_t bad = slice_check(head, &a, p, steps);
	if (bad < 0)
		bad = slice_check(tail, &a, p, steps);
	if (bad >= 0) {
		st = zb_fail(err, ZB_E_INTERNAL,
			     "cpu adam bench: %s result differs from the scalar path at parameter %lld",
			     zb_adam_isa_name(ran), (long long)bad);
		goto done;
	}

	out->params = params;
	out->threads = zb_pool_threads(pool);
	out->pinned = zb_pool_pinned(pool);
	out->repeats = repeats;
	out->isa = ran;
	out->bytes_per_param = 28.0;
	summarize(times, repeats, &out->median_s, &out->min_s, &out->max_s);
	out->gparams_per_s = (double)params / out->median_s * 1e-9;
	out->dram_GBps = out->bytes_per_param * (double)params / out->median_s * 1e-9;
done:
	unmap(a.grad, n2);
	unmap(a.b.param16, n2);
	unmap(a.b.master, n4);
	unmap(a.b.m, n4);
	unmap(a.b.v, n4);
	free(times);
	free(head);
	free(tail);
	return st;
}

zb_status zb_bench_cpu_adam(int64_t params, int threads, int repeats, zb_cpu_adam_bench *out,
			    zb_error *err)
{
	zb_pool *pool;
	zb_status st = zb_pool_create(threads, &pool, err);
	if (st != ZB_OK)
		return st;
	st = zb_bench_cpu_adam_on(pool, params, repeats, ZB_ADAM_ISA_AUTO, out, err);
	zb_pool_destroy(pool);
	return st;
}

/* ---- triad ---------------------------------------------------------------------- */

typedef struct triad_ctx {
	float *a;
	const float *b, *c;
	float s;
	void (*fn)(float *a, const float *b, const float *c, float s, int64_t lo, int64_t hi);
} triad_ctx;

/* Multiply and add kept apart (no fma), so every path computes fl(b + fl(s c)). */
static void triad_scalar(float *a, const float *b, const float *c, float s, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++)
		a[i] = b[i] + s * c[i];
}

__attribute__((target("avx2"))) static void triad_avx2(float *a, const float *b, const float *c,
							float s, int64_t lo, int64_t hi)
{
	const __m256 vs = _mm256_set1_ps(s);
	int64_t i = lo;
	for (; i + 8 <= hi; i += 8)
		_mm256_storeu_ps(a + i, _mm256_add_ps(_mm256_loadu_ps(b + i),
						      _mm256_mul_ps(vs, _mm256_loadu_ps(c + i))));
	triad_scalar(a, b, c, s, i, hi);
}

__attribute__((target("avx512f"))) static void triad_avx512(float *a, const float *b,
							     const float *c, float s, int64_t lo,
							     int64_t hi)
{
	const __m512 vs = _mm512_set1_ps(s);
	int64_t i = lo;
	for (; i + 16 <= hi; i += 16)
		_mm512_storeu_ps(a + i, _mm512_add_ps(_mm512_loadu_ps(b + i),
						      _mm512_mul_ps(vs, _mm512_loadu_ps(c + i))));
	triad_scalar(a, b, c, s, i, hi);
}

static void triad_chunk(void *ctx, int64_t lo, int64_t hi, int worker)
{
	triad_ctx *t = ctx;
	t->fn(t->a, t->b, t->c, t->s, lo, hi);
}

static void triad_fill(void *ctx, int64_t lo, int64_t hi, int worker)
{
	triad_ctx *t = ctx;
	float *b = (float *)t->b, *c = (float *)t->c;
	for (int64_t i = lo; i < hi; i++) {
		t->a[i] = 0;
		b[i] = 1.0f + noise((uint64_t)i, 5);
		c[i] = noise((uint64_t)i, 6);
	}
}

zb_status zb_bench_triad_on(zb_pool *pool, int64_t elems, int repeats, zb_triad_bench *out,
			    zb_error *err)
{
	memset(out, 0, sizeof *out);
	if (elems <= 0)
		elems = ZB_BENCH_TRIAD_ELEMS;
	if (repeats <= 0)
		repeats = ZB_BENCH_REPEATS;
	const size_t bytes = (size_t)elems * 4;
	zb_status st = check_fit("triad bench", 3.0 * (double)bytes, err);
	if (st != ZB_OK)
		return st;
	zb_adam_isa best = zb_adam_isa_best();
	triad_ctx t = {
		.a = map(bytes),
		.b = map(bytes),
		.c = map(bytes),
		.s = 3.0f,
		.fn = best == ZB_ADAM_ISA_AVX512 ? triad_avx512
		      : best == ZB_ADAM_ISA_AVX2 ? triad_avx2
						 : triad_scalar,
	};
	double *times = calloc((size_t)repeats, sizeof *times);
	if (!t.a || !t.b || !t.c || !times) {
		st = zb_fail(err, ZB_E_NOMEM, "cannot map %.2f GiB for the triad bench",
			     3.0 * (double)bytes / 1073741824.0);
		goto done;
	}
	zb_pool_run(pool, triad_fill, &t, elems, 0);
	for (int r = 0; r < ZB_BENCH_WARMUP + repeats; r++) {
		int64_t t0 = zb_now_ns();
		zb_pool_run(pool, triad_chunk, &t, elems, 0);
		int64_t t1 = zb_now_ns();
		if (r >= ZB_BENCH_WARMUP)
			times[r - ZB_BENCH_WARMUP] = (double)(t1 - t0) * 1e-9;
	}
	/* a sample of 4096 elements, spread over the whole array */
	for (int64_t k = 0; k < 4096; k++) {
		int64_t i = (int64_t)((double)k / 4096.0 * (double)elems);
		float want = t.b[i] + t.s * t.c[i];
		if (!(fabsf(t.a[i] - want) <= 1.2e-7f * fabsf(want))) {
			st = zb_fail(err, ZB_E_INTERNAL,
				     "triad bench: a[%lld] = %.9g, want %.9g", (long long)i, t.a[i], want);
			goto done;
		}
	}
	out->elems = elems;
	out->threads = zb_pool_threads(pool);
	out->pinned = zb_pool_pinned(pool);
	out->repeats = repeats;
	out->bytes_per_elem = 12.0;
	summarize(times, repeats, &out->median_s, &out->min_s, &out->max_s);
	out->GBps = out->bytes_per_elem * (double)elems / out->median_s * 1e-9;
done:
	unmap(t.a, bytes);
	unmap((void *)t.b, bytes);
	unmap((void *)t.c, bytes);
	free(times);
	return st;
}

zb_status zb_bench_triad(int64_t elems, int threads, int repeats, zb_triad_bench *out,
			 zb_error *err)
{
	zb_pool *pool;
	zb_status st = zb_pool_create(threads, &pool, err);
	if (st != ZB_OK)
		return st;
	st = zb_bench_triad_on(pool, elems, repeats, out, err);
	zb_pool_destroy(pool);
	return st;
}
