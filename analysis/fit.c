/* fit.c - least-squares fits of the hardware model to measurements; see fit.h. */
#include "analysis/fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h" /* ZB_ADAM_BYTES_PER_PARAM */

static zb_status check_points(const double *bytes, const double *t, int n, zb_error *err)
{
	if (n < 1)
		return zb_fail(err, ZB_E_INPUT, "no measurements to fit");
	for (int i = 0; i < n; i++)
		if (!(bytes[i] > 0) || !(t[i] > 0) || !isfinite(bytes[i]) || !isfinite(t[i]))
			return zb_fail(err, ZB_E_INPUT, "bad measurement %d to fit: %g bytes in %g s", i, bytes[i],
				       t[i]);
	return ZB_OK;
}

static void copy_errors(const double *bytes, const double *t, int n, zb_copy_fit *f)
{
	double ss = 0, mx = 0;
	for (int i = 0; i < n; i++) {
		double model = f->latency_s + bytes[i] / f->Bps;
		double e = fabs(model - t[i]) / t[i];
		ss += e * e;
		if (e > mx)
			mx = e;
	}
	f->rms_rel_err = sqrt(ss / n);
	f->max_rel_err = mx;
}

/* Slope through a fixed intercept: minimise sum w (a + b x - t)^2 over b. */
static double slope_given(const double *x, const double *t, int n, double xs, double a)
{
	double num = 0, den = 0;
	for (int i = 0; i < n; i++) {
		double w = 1 / (t[i] * t[i]), xi = x[i] / xs;
		num += w * xi * (t[i] - a);
		den += w * xi * xi;
	}
	return num / den / xs;
}

zb_status zb_fit_copy(const double *bytes, const double *t, int n, zb_copy_fit *out, zb_error *err)
{
	zb_status st = check_points(bytes, t, n, err);
	if (st)
		return st;
	double xmin = bytes[0], xmax = bytes[0];
	for (int i = 1; i < n; i++) {
		xmin = bytes[i] < xmin ? bytes[i] : xmin;
		xmax = bytes[i] > xmax ? bytes[i] : xmax;
	}
	if (n < 2 || xmin == xmax)
		return zb_fail(err, ZB_E_INPUT, "need copies of at least two sizes to fit latency and bandwidth (got %d "
						"point%s of %g bytes)",
			       n, n == 1 ? "" : "s", xmin);
	/* sizes scaled to [0, 1] so the normal equations stay well conditioned (bytes
	 * reach 1e9, weights 1/t^2 reach 1e11) */
	double S = 0, Sx = 0, Sxx = 0, St = 0, Sxt = 0;
	for (int i = 0; i < n; i++) {
		double w = 1 / (t[i] * t[i]), x = bytes[i] / xmax;
		S += w;
		Sx += w * x;
		Sxx += w * x * x;
		St += w * t[i];
		Sxt += w * x * t[i];
	}
	double det = S * Sxx - Sx * Sx;
	double a = (Sxx * St - Sx * Sxt) / det;
	double b = (S * Sxt - Sx * St) / det / xmax;
	if (!(a >= 0)) { /* a negative fixed cost means nothing physical: refit through 0 */
		a = 0;
		b = slope_given(bytes, t, n, xmax, 0);
	}
	if (!(b > 0) || !isfinite(b))
		return zb_fail(err, ZB_E_INPUT, "copy times do not grow with size (fitted slope %g s/byte)", b);
	out->latency_s = a;
	out->Bps = 1 / b;
	copy_errors(bytes, t, n, out);
	return ZB_OK;
}

zb_status zb_fit_copy_bw(const double *bytes, const double *t, int n, double latency_s, zb_copy_fit *out,
			 zb_error *err)
{
	zb_status st = check_points(bytes, t, n, err);
	if (st)
		return st;
	double xmax = 0;
	for (int i = 0; i < n; i++)
		xmax = bytes[i] > xmax ? bytes[i] : xmax;
	double b = slope_given(bytes, t, n, xmax, latency_s);
	if (!(b > 0) || !isfinite(b))
		return zb_fail(err, ZB_E_INPUT, "copy times are not above the latency %g s (fitted slope %g s/byte)",
			       latency_s, b);
	out->latency_s = latency_s;
	out->Bps = 1 / b;
	copy_errors(bytes, t, n, out);
	return ZB_OK;
}

double zb_fit_duplex(double alone_Bps, double both_Bps)
{
	if (!(alone_Bps > 0) || !(both_Bps > 0))
		return 1;
	double f = both_Bps / alone_Bps;
	return f > 1 ? 1 : f;
}

/* ---- GEMM ------------------------------------------------------------------------ */

static double log_eff(double m, double n, double k, double h)
{
	return log(m / (m + h)) + log(n / (n + h)) + log(k / (k + h));
}

/* For half-dimension h: the best log peak and the weighted squared log error. */
static double gemm_cost(const zb_gemm_sample *s, int n, double latency_s, double h, double *log_peak)
{
	double sw = 0, swr = 0;
	for (int i = 0; i < n; i++) {
		double w = s[i].weight > 0 ? s[i].weight : 1;
		double r = log(s[i].flops) - log_eff(s[i].m, s[i].n, s[i].k, h) - log(s[i].time_s - latency_s);
		sw += w;
		swr += w * r;
	}
	double lp = swr / sw, cost = 0;
	for (int i = 0; i < n; i++) {
		double w = s[i].weight > 0 ? s[i].weight : 1;
		double r = log(s[i].flops) - log_eff(s[i].m, s[i].n, s[i].k, h) - log(s[i].time_s - latency_s);
		cost += w * (r - lp) * (r - lp);
	}
	*log_peak = lp;
	return cost / sw;
}

double zb_gemm_model_s(const zb_gemm_fit *f, double latency_s, double m, double n, double k, double flops)
{
	return latency_s + flops / (f->peak_flops * exp(log_eff(m, n, k, f->half_dim)));
}

zb_status zb_fit_gemm(const zb_gemm_sample *s, int n, double latency_s, double max_half, zb_gemm_fit *out,
		      zb_error *err)
{
	if (n < 2)
		return zb_fail(err, ZB_E_INPUT, "need GEMMs of at least two shapes to fit peak and half-dimension (got %d)",
			       n);
	int distinct = 0;
	for (int i = 0; i < n; i++) {
		const zb_gemm_sample *a = &s[i];
		if (!(a->m >= 1 && a->n >= 1 && a->k >= 1 && a->flops > 0 && a->time_s > latency_s) ||
		    !isfinite(a->time_s))
			return zb_fail(err, ZB_E_INPUT,
				       "bad GEMM measurement %d: %gx%gx%g, %g FLOP in %g s (latency %g s)", i, a->m,
				       a->n, a->k, a->flops, a->time_s, latency_s);
		distinct |= a->m != s[0].m || a->n != s[0].n || a->k != s[0].k;
	}
	if (!distinct)
		return zb_fail(err, ZB_E_INPUT, "every GEMM measured has the shape %gx%gx%g: the half-dimension "
						"cannot be fitted",
			       s[0].m, s[0].n, s[0].k);
	if (!(max_half > 0))
		max_half = 4096;
	/* grid: 0 and log-spaced points from max_half * 1e-4 to max_half */
	enum { GRID = 400 };
	double best_h = 0, lp, best = gemm_cost(s, n, latency_s, 0, &lp);
	double prev_h = 0, next_h = max_half * 1e-4;
	double hs[GRID + 1];
	hs[0] = 0;
	for (int j = 1; j <= GRID; j++)
		hs[j] = max_half * pow(10, -4 + 4.0 * (j - 1) / (GRID - 1));
	for (int j = 1; j <= GRID; j++) {
		double c = gemm_cost(s, n, latency_s, hs[j], &lp);
		if (c < best) {
			best = c;
			best_h = hs[j];
			prev_h = hs[j - 1];
			next_h = j < GRID ? hs[j + 1] : hs[j];
		}
	}
	/* golden-section search on [prev_h, next_h] around the best grid point */
	double lo = prev_h, hi = next_h, g = (sqrt(5) - 1) / 2;
	double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
	double f1 = gemm_cost(s, n, latency_s, x1, &lp), f2 = gemm_cost(s, n, latency_s, x2, &lp);
	for (int it = 0; it < 200 && hi - lo > 1e-12 * (hi > 1 ? hi : 1); it++) {
		if (f1 < f2) {
			hi = x2;
			x2 = x1;
			f2 = f1;
			x1 = hi - g * (hi - lo);
			f1 = gemm_cost(s, n, latency_s, x1, &lp);
		} else {
			lo = x1;
			x1 = x2;
			f1 = f2;
			x2 = lo + g * (hi - lo);
			f2 = gemm_cost(s, n, latency_s, x2, &lp);
		}
	}
	double h = (lo + hi) / 2;
	if (gemm_cost(s, n, latency_s, h, &lp) > best)
		h = best_h;
	gemm_cost(s, n, latency_s, h, &lp);
	out->half_dim = h;
	out->peak_flops = exp(lp);
	double sw = 0, ss = 0, mx = 0;
	for (int i = 0; i < n; i++) {
		double w = s[i].weight > 0 ? s[i].weight : 1;
		double model = zb_gemm_model_s(out, latency_s, s[i].m, s[i].n, s[i].k, s[i].flops);
		double e = fabs(model - s[i].time_s) / s[i].time_s;
		sw += w;
		ss += w * e * e;
		mx = e > mx ? e : mx;
	}
	out->rms_rel_err = sqrt(ss / sw);
	out->max_rel_err = mx;
	return ZB_OK;
}

/* ---- CPU --------------------------------------------------------------------------- */

zb_status zb_fit_cpu(const zb_cpu_samples *s, zb_cpu_fit *out, zb_error *err)
{
	if (s->n < 1 || !s->threads || !s->adam_params_per_s)
		return zb_fail(err, ZB_E_INPUT, "no CPU Adam measurements to fit");
	int top = 0;
	for (int i = 0; i < s->n; i++) {
		if (s->threads[i] < 1 || !(s->adam_params_per_s[i] > 0))
			return zb_fail(err, ZB_E_INPUT, "bad CPU Adam measurement %d: %d threads, %g params/s", i,
				       s->threads[i], s->adam_params_per_s[i]);
		if (s->threads[i] > s->threads[top])
			top = i;
	}
	const double B = ZB_ADAM_BYTES_PER_PARAM;
	out->cores = s->threads[top];
	double best = 0, fastest = 0;
	for (int i = 0; i < s->n; i++) {
		double per = s->adam_params_per_s[i] / s->threads[i];
		best = per > best ? per : best;
		fastest = s->adam_params_per_s[i] > fastest ? s->adam_params_per_s[i] : fastest;
	}
	out->adam_params_per_core = best;
	out->adam_Bps = fastest * B;
	double alone = out->adam_Bps;
	if (s->together_adam_params_per_s > 0 && s->together_copy_Bps > 0) {
		out->dram_Bps = s->together_adam_params_per_s * B + s->together_copy_Bps;
		out->dram_source = "adam+copies";
	} else if (s->triad_Bps > 0) {
		out->dram_Bps = s->triad_Bps * 16.0 / 12.0;
		out->dram_source = "triad (16 B/element)";
	} else {
		out->dram_Bps = alone;
		out->dram_source = "adam alone";
	}
	if (out->dram_Bps < alone)
		out->dram_Bps = alone;
	double ss = 0, mx = 0;
	for (int i = 0; i < s->n; i++) {
		double model = s->threads[i] * out->adam_params_per_core * B;
		model = model < out->adam_Bps ? model : out->adam_Bps;
		model = (model < out->dram_Bps ? model : out->dram_Bps) / B;
		double e = fabs(model - s->adam_params_per_s[i]) / s->adam_params_per_s[i];
		ss += e * e;
		mx = e > mx ? e : mx;
	}
	out->rms_rel_err = sqrt(ss / s->n);
	out->max_rel_err = mx;
	return ZB_OK;
}

/* ---- general least squares ------------------------------------------------------- */

static double sumsq(const double *r, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += r[i] * r[i];
	return s;
}

/* Solve the nx x nx system A d = b in place by Gaussian elimination with partial
 * pivoting; returns -1 when singular. */
static int solve(double *A, double *b, int n)
{
	for (int c = 0; c < n; c++) {
		int piv = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(A[r * n + c]) > fabs(A[piv * n + c]))
				piv = r;
		if (fabs(A[piv * n + c]) < 1e-300)
			return -1;
		for (int k = 0; k < n; k++) {
			double t = A[c * n + k];
			A[c * n + k] = A[piv * n + k];
			A[piv * n + k] = t;
		}
		double t = b[c];
		b[c] = b[piv];
		b[piv] = t;
		for (int r = c + 1; r < n; r++) {
			double f = A[r * n + c] / A[c * n + c];
			for (int k = c; k < n; k++)
				A[r * n + k] -= f * A[c * n + k];
			b[r] -= f * b[c];
		}
	}
	for (int c = n - 1; c >= 0; c--) {
		double s = b[c];
		for (int k = c + 1; k < n; k++)
			s -= A[c * n + k] * b[k];
		b[c] = s / A[c * n + c];
	}
	return 0;
}

static void clamp_x(double *x, const double *lo, const double *hi, int n)
{
	for (int i = 0; i < n; i++)
		x[i] = x[i] < lo[i] ? lo[i] : x[i] > hi[i] ? hi[i] : x[i];
}

zb_status zb_fit_lsq(zb_residual_fn fn, void *ctx, int nx, int nr, double *x, const double *lo,
		     const double *hi, int max_iter, double *cost, zb_error *err)
{
	double *r = zb_xmalloc(sizeof(double) * (size_t)nr), *rt = zb_xmalloc(sizeof(double) * (size_t)nr);
	double *J = zb_xmalloc(sizeof(double) * (size_t)(nr * nx));
	double *A = zb_xmalloc(sizeof(double) * (size_t)(nx * nx)), *g = zb_xmalloc(sizeof(double) * (size_t)nx);
	double *xt = zb_xmalloc(sizeof(double) * (size_t)nx);
	zb_status st = ZB_OK;
	clamp_x(x, lo, hi, nx);
	if (fn(x, r, ctx)) {
		st = zb_fail(err, ZB_E_INPUT, "least squares: the starting point cannot be evaluated");
		goto out;
	}
	double c = sumsq(r, nr), lambda = 1e-2;
	for (int it = 0; it < max_iter; it++) {
		/* Jacobian by forward differences, stepping inward at a bound */
		for (int j = 0; j < nx; j++) {
			memcpy(xt, x, sizeof(double) * (size_t)nx);
			double h = 1e-4 * (fabs(x[j]) > 1 ? fabs(x[j]) : 1);
			if (xt[j] + h > hi[j])
				h = -h;
			xt[j] += h;
			if (fn(xt, rt, ctx))
				for (int i = 0; i < nr; i++)
					rt[i] = r[i];
			for (int i = 0; i < nr; i++)
				J[i * nx + j] = (rt[i] - r[i]) / h;
		}
		int improved = 0;
		for (int tries = 0; tries < 10 && !improved; tries++) {
			for (int a = 0; a < nx; a++) {
				g[a] = 0;
				for (int i = 0; i < nr; i++)
					g[a] -= J[i * nx + a] * r[i];
				for (int b = 0; b < nx; b++) {
					double s = 0;
					for (int i = 0; i < nr; i++)
						s += J[i * nx + a] * J[i * nx + b];
					A[a * nx + b] = s + (a == b ? lambda * (s + 1e-12) : 0);
				}
			}
			if (solve(A, g, nx)) {
				lambda *= 10;
				continue;
			}
			for (int a = 0; a < nx; a++)
				xt[a] = x[a] + g[a];
			clamp_x(xt, lo, hi, nx);
			if (!fn(xt, rt, ctx) && sumsq(rt, nr) < c) {
				memcpy(x, xt, sizeof(double) * (size_t)nx);
				memcpy(r, rt, sizeof(double) * (size_t)nr);
				double cn = sumsq(r, nr);
				improved = c - cn > 1e-12 * c ? 1 : 2;
				c = cn;
				lambda = lambda / 3 > 1e-9 ? lambda / 3 : 1e-9;
			} else {
				lambda *= 10;
			}
		}
		if (improved != 1)
			break;
	}
	*cost = c;
out:
	free(r);
	free(rt);
	free(J);
	free(A);
	free(g);
	free(xt);
	return st;
}
