/* kfit_comm.c - comm_gpu and comm_opt from the runs' collectives; see kfit_comm.h. */
#include "analysis/kfit_comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef zb_kfit_busy_fit ctx;

static double cost(ctx *q) { return zb_kfit_busy_cost(q); }

static double cost_at(ctx *q, double *f, double v)
{
	*f = v;
	return cost(q);
}

/* Golden section on *f in [lo, hi]; keeps the best point seen. Returns 0 when the cost
 * does not depend on *f (the ends and the middle agree to 1e-12). */
static int golden(ctx *q, double *f, double lo, double hi)
{
	const double g = (sqrt(5) - 1) / 2;
	double keep = *f, c0 = cost_at(q, f, keep), clo = cost_at(q, f, lo), chi = cost_at(q, f, hi);
	if (fabs(clo - c0) <= 1e-12 * (c0 + 1e-30) && fabs(chi - c0) <= 1e-12 * (c0 + 1e-30)) {
		*f = keep;
		return 0;
	}
	double best = keep, cbest = c0;
	if (clo < cbest)
		best = lo, cbest = clo;
	if (chi < cbest)
		best = hi, cbest = chi;
	double a = lo, b = hi, x1 = b - g * (b - a), x2 = a + g * (b - a);
	double f1 = cost_at(q, f, x1), f2 = cost_at(q, f, x2);
	for (int i = 0; i < 24 && !q->st; i++) {
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
			f1 = cost_at(q, f, x1);
		} else {
			a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
			f2 = cost_at(q, f, x2);
		}
		if (f1 < cbest)
			best = x1, cbest = f1;
		if (f2 < cbest)
			best = x2, cbest = f2;
	}
	*f = best;
	return 1;
}

static double clamp(double v) { return v < 0.05 ? 0.05 : v > 1 ? 1 : v; }

static double cost2(ctx *q, const double v[2])
{
	q->hw.gpu.exec.comm_gpu = clamp(v[0]);
	q->hw.gpu.exec.comm_opt = clamp(v[1]);
	return cost(q);
}

/* Nelder-Mead on both factors from (*a, *b) (the two trade off where a collective runs
 * beside both streams, a valley that coordinate steps creep along): standard
 * coefficients, points clamped to [0.05, 1], until the simplex is below 1e-4. */
static void simplex(ctx *q, double *a, double *b)
{
	double x[3][2] = { { *a, *b }, { clamp(*a + 0.05), *b }, { *a, clamp(*b + 0.05) } }, f[3];
	for (int i = 0; i < 3; i++)
		f[i] = cost2(q, x[i]);
	for (int it = 0; it < 200 && !q->st; it++) {
		int lo = 0, hi = 0, mid;
		for (int i = 1; i < 3; i++) {
			lo = f[i] < f[lo] ? i : lo;
			hi = f[i] > f[hi] ? i : hi;
		}
		mid = 3 - lo - hi;
		if (lo == hi)
			mid = (lo + 1) % 3, hi = (lo + 2) % 3;
		if (fabs(x[hi][0] - x[lo][0]) + fabs(x[hi][1] - x[lo][1]) + fabs(x[mid][0] - x[lo][0]) +
			    fabs(x[mid][1] - x[lo][1]) < 1e-4)
			break;
		double c[2], r[2], e[2], k[2];
		for (int j = 0; j < 2; j++) {
			c[j] = (x[lo][j] + x[mid][j]) / 2;
			r[j] = clamp(c[j] + (c[j] - x[hi][j]));
		}
		double fr = cost2(q, r);
		if (fr < f[lo]) {
			for (int j = 0; j < 2; j++)
				e[j] = clamp(c[j] + 2 * (c[j] - x[hi][j]));
			double fe = cost2(q, e);
			memcpy(x[hi], fe < fr ? e : r, sizeof x[hi]);
			f[hi] = fe < fr ? fe : fr;
		} else if (fr < f[mid]) {
			memcpy(x[hi], r, sizeof x[hi]);
			f[hi] = fr;
		} else {
			for (int j = 0; j < 2; j++)
				k[j] = (c[j] + x[hi][j]) / 2;
			double fk = cost2(q, k);
			if (fk < f[hi]) {
				memcpy(x[hi], k, sizeof x[hi]);
				f[hi] = fk;
			} else { /* shrink towards the best */
				for (int i = 0; i < 3; i++) {
					if (i == lo)
						continue;
					for (int j = 0; j < 2; j++)
						x[i][j] = (x[i][j] + x[lo][j]) / 2;
					f[i] = cost2(q, x[i]);
				}
			}
		}
	}
	int best = f[1] < f[0] ? 1 : 0;
	best = f[2] < f[best] ? 2 : best;
	*a = clamp(x[best][0]);
	*b = clamp(x[best][1]);
}

zb_status zb_kfit_comm(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_comm_stats *stats,
		       zb_error *err)
{
	ctx q = { .s = s, .use = use, .hw = *hw, .resource = ZB_RES_COMM, .err = err };
	*stats = (zb_kfit_comm_stats){ 0 };
	stats->rms = NAN;
	zb_exec_profile *p = &q.hw.gpu.exec;
	if (!isfinite(cost(&q)) || q.st)
		return q.st;
	/* 0 means "1" in the profile: search from the value that is in force */
	if (!(p->comm_gpu > 0))
		p->comm_gpu = 1;
	if (!(p->comm_opt > 0))
		p->comm_opt = 1;
	/* one round of golden sections finds the start and which factors matter */
	stats->fit_gpu = golden(&q, &p->comm_gpu, 0.05, 1);
	stats->fit_opt = golden(&q, &p->comm_opt, 0.05, 1);
	if (stats->fit_gpu && stats->fit_opt && !q.st)
		simplex(&q, &p->comm_gpu, &p->comm_opt);
	else if (!q.st) /* one factor: a second golden section on it from its first result */
		stats->fit_gpu ? golden(&q, &p->comm_gpu, 0.05, 1) : golden(&q, &p->comm_opt, 0.05, 1);
	if (q.st)
		return q.st;
	stats->rms = sqrt(cost(&q));
	stats->n = q.n;
	if (q.st)
		return q.st;
	hw->gpu.exec.comm_gpu = stats->fit_gpu ? p->comm_gpu : hw->gpu.exec.comm_gpu;
	hw->gpu.exec.comm_opt = stats->fit_opt ? p->comm_opt : hw->gpu.exec.comm_opt;
	return ZB_OK;
}
