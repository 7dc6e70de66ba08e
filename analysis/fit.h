/*
 * fit.h - fitting the simulator's hardware parameters (config.h) to measurements:
 * the arithmetic of `zbench calibrate`, kept pure (numbers in, numbers out) so the
 * tests can feed it synthetic measurements and check that it recovers what made
 * them.
 *
 * Each fit matches one formula of the resource models (resources.h):
 *   copy           t = copy_latency_s + bytes / Bps            (PCIe, each direction;
 *                                                              also device copies:
 *                                                              kernel_latency_s, hbm_Bps)
 *   both at once   Bps_both = duplex * Bps_alone               (duplex_h2d, duplex_d2h)
 *   pageable       t = copy_latency_s + bytes / pageable_Bps   (latency kept from pinned)
 *   GEMM           t = kernel_latency_s + flops / (peak * eff),
 *                  eff = m/(m+h) * n/(n+h) * k/(k+h)           (bf16_flops, gemm_half_dim)
 *   CPU Adam       rate(threads) = threads * adam_params_per_core while DRAM allows;
 *                  Adam and DMA share dram_Bps
 *
 * Errors are relative: a fit minimises the squared relative error of the time
 * (equivalently, of the rate), so a 4 KB copy weighs as much as a 1 GB one and the
 * latency is determined by the small sizes, the bandwidth by the large ones. With
 * plain squared seconds the large sizes would decide everything and the latency
 * would be noise.
 */
#ifndef ZB_FIT_H
#define ZB_FIT_H

#include "common/error.h"

/* t = latency_s + bytes / Bps, fitted to n (bytes, seconds) points. */
typedef struct zb_copy_fit {
	double latency_s;  /* >= 0: a negative intercept is clamped to 0 and the slope refitted */
	double Bps;
	double rms_rel_err;  /* sqrt(mean(((model - t) / t)^2)) over the points */
	double max_rel_err;  /* max |model - t| / t */
} zb_copy_fit;

/* Weighted least squares of t = a + b x with weights 1 / t^2. Needs n >= 2 points
 * with at least two distinct sizes, all bytes > 0 and t > 0 (ZB_E_INPUT otherwise,
 * naming the bad point). */
zb_status zb_fit_copy(const double *bytes, const double *t, int n, zb_copy_fit *out, zb_error *err);

/* The bandwidth alone, with the latency given (pageable copies keep the pinned
 * latency, as the model applies one latency to both). Same weighting. */
zb_status zb_fit_copy_bw(const double *bytes, const double *t, int n, double latency_s,
			 zb_copy_fit *out, zb_error *err);

/* Fraction of the one-way bandwidth kept while the other direction also runs:
 * both_Bps / alone_Bps, clamped to (0, 1] (the model's range: a duplex run that
 * came out faster than the lone one is noise, not a gain). */
double zb_fit_duplex(double alone_Bps, double both_Bps);

/* One GEMM measurement: C[m x n] += A[m x k] B[k x n] (batch of them), its FLOPs and
 * its measured time; weight: how much this shape matters (its share of the step's
 * GEMM time; 0 is treated as 1). */
typedef struct zb_gemm_sample {
	double m, n, k, batch;
	double flops;
	double time_s;
	double weight;
} zb_gemm_sample;

typedef struct zb_gemm_fit {
	double peak_flops;     /* bf16_flops */
	double half_dim;       /* gemm_half_dim */
	double rms_rel_err;    /* weighted, over the samples */
	double max_rel_err;
} zb_gemm_fit;

/* Fit peak and half-dimension by weighted least squares on log time, after taking
 * latency_s (the kernel's fixed cost) off each time. For a given half-dimension the
 * best peak is closed-form (a weighted mean of logs), so the search is over the
 * half-dimension alone: a log-spaced grid over [0, max_half] then golden-section
 * refinement around the best grid point. Needs n >= 2 samples, not all of one shape
 * (else the half-dimension is not identifiable: ZB_E_INPUT). */
zb_status zb_fit_gemm(const zb_gemm_sample *s, int n, double latency_s, double max_half,
		      zb_gemm_fit *out, zb_error *err);

/* Time of one GEMM under a fit (the model's formula, compute-bound side). */
double zb_gemm_model_s(const zb_gemm_fit *f, double latency_s, double m, double n, double k,
		       double flops);

/* CPU: Adam rates measured over thread counts, and the two flows measured together. */
typedef struct zb_cpu_samples {
	int n;                    /* thread counts measured */
	const int *threads;
	const double *adam_params_per_s; /* Adam alone at each count */
	/* Adam and PCIe DMA both ways at the same time (0 when not measured) */
	double together_adam_params_per_s;
	double together_copy_Bps;   /* H2D + D2H bytes/s while Adam ran */
	double triad_Bps;           /* triad at the top thread count, 12 B/element counted (0: none) */
} zb_cpu_samples;

typedef struct zb_cpu_fit {
	int cores;                  /* the top thread count measured */
	double adam_params_per_core;
	double adam_Bps;            /* Adam's own ceiling: the fastest rate measured x 28 B */
	double dram_Bps;
	const char *dram_source;    /* "adam+copies", "triad (16 B/element)", "adam alone" */
	double rms_rel_err;         /* of min(t * per_core * 28, adam_Bps, dram) / 28 over the thread counts */
	double max_rel_err;
} zb_cpu_fit;

/* adam_params_per_core = the best rate per thread measured (in practice one
 * thread's); adam_Bps = the fastest rate measured x 28 B, where Adam's cores
 * saturate the memory controller. The model, min(t x per_core, adam_Bps / 28), is
 * exact at both ends; max_rel_err says how far it is in between.
 * dram_Bps, first that applies:
 *   - Adam and copies together: 28 B x their Adam rate + their copy bytes/s, the
 *     bandwidth both flows draw when they fight (the model divides dram_Bps between
 *     them in proportion to demand, so the sum is the budget);
 *   - the triad at full threads with 16 bytes per element (12 counted by STREAM plus
 *     the read-for-ownership of the written line: what DRAM really moves);
 *   - Adam alone at full threads x 28 B (a lower bound).
 * The result is never below Adam alone's 28 B x rate (the model caps Adam by it). */
zb_status zb_fit_cpu(const zb_cpu_samples *s, zb_cpu_fit *out, zb_error *err);

/* General nonlinear least squares (Levenberg-Marquardt, forward-difference
 * Jacobian): minimise sum r_i(x)^2 over x in [lo, hi] (each bound clamps). fn fills
 * r[0 .. nr) for x and returns 0, or non-zero when x cannot be evaluated (the step
 * is then rejected). Used where a model has no closed form, e.g. the DeepSpeed
 * framework profile fitted through whole simulations (dscalib.h). On return x is
 * the best point found and *cost its sum of squares. */
typedef int (*zb_residual_fn)(const double *x, double *r, void *ctx);
zb_status zb_fit_lsq(zb_residual_fn fn, void *ctx, int nx, int nr, double *x, const double *lo,
		     const double *hi, int max_iter, double *cost, zb_error *err);

#endif
