/* stats.c - median, min, max, spread and the rank-sum test with the NaN rule of stats.h. */
#include "common/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double zb_median(const double *v, int n)
{
	double *c = zb_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *c);
	int k = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			c[k++] = v[i];
	double m = NAN;
	if (k) {
		qsort(c, (size_t)k, sizeof *c, cmp_double);
		m = k % 2 ? c[k / 2] : 0.5 * (c[k / 2 - 1] + c[k / 2]);
	}
	free(c);
	return m;
}

double zb_min(const double *v, int n)
{
	double m = NAN;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]) && (isnan(m) || v[i] < m))
			m = v[i];
	return m;
}

double zb_max(const double *v, int n)
{
	double m = NAN;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]) && (isnan(m) || v[i] > m))
			m = v[i];
	return m;
}

zb_spread zb_spread_of(const double *v, int n)
{
	zb_spread s = { 0, NAN, NAN, NAN };
	double sum = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i])) {
			sum += v[i];
			s.n++;
		}
	if (s.n == 0)
		return s;
	s.mean = sum / s.n;
	if (s.n < 2)
		return s;
	double ss = 0; /* two passes: no cancellation when the spread is small beside the mean */
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			ss += (v[i] - s.mean) * (v[i] - s.mean);
	s.sd = sqrt(ss / (s.n - 1));
	s.se = s.sd / sqrt(s.n);
	return s;
}

zb_spread zb_step_spread(const double *step_s, int steps_done, int warmup)
{
	int w = warmup > steps_done - 2 ? steps_done - 2 : warmup; /* zb_step_time_window's clamp */
	if (w < 0)
		w = 0;
	int n = steps_done - 1 - w;
	return n > 0 ? zb_spread_of(step_s + w + 1, n) : zb_spread_of(step_s, 0);
}

double zb_step_drift(const double *step_s, int steps_done, int warmup)
{
	int w = warmup > steps_done - 2 ? steps_done - 2 : warmup;
	if (w < 0)
		w = 0;
	int n = steps_done - 1 - w, h = n / 2;
	if (n < 4)
		return NAN;
	zb_spread a = zb_spread_of(step_s + w + 1, h), b = zb_spread_of(step_s + steps_done - h, h);
	return b.mean / a.mean - 1;
}

/* Round k's weight in zb_rounds_mean before they are made to sum to 1: 1 / e^2 with e
 * its own error, at least floor; 1 each when some round has neither; 0 when left out. */
static double round_weight(const double *m, const double *se, int k, double floor, int equal)
{
	if (isnan(m[k]))
		return 0;
	if (equal)
		return 1;
	double e = se && isfinite(se[k]) && se[k] > floor ? se[k] : floor;
	return 1 / (e * e);
}

zb_spread zb_rounds_mean(const double *m, const double *se, int n, double floor_rel, double *w)
{
	zb_spread s = zb_spread_of(m, n); /* the plain mean: the floor's scale */
	s.sd = s.se = NAN;
	double floor = floor_rel * fabs(s.mean);
	int equal = 0; /* a round with no error to weigh it by */
	for (int k = 0; k < n; k++)
		if (!isnan(m[k]) && !(floor > 0) && !(se && se[k] > 0 && isfinite(se[k])))
			equal = 1;
	double sw = 0, sum = 0;
	for (int k = 0; k < n; k++) {
		double wk = round_weight(m, se, k, floor, equal);
		sw += wk;
		sum += wk > 0 ? wk * m[k] : 0;
	}
	if (w)
		for (int k = 0; k < n; k++)
			w[k] = s.n ? round_weight(m, se, k, floor, equal) / sw : 0;
	if (s.n == 0)
		return s;
	s.mean = sum / sw;
	double own2 = 0, spread2 = 0; /* the mean's variance from the rounds' own errors; their spread */
	for (int k = 0; k < n; k++) {
		double wk = round_weight(m, se, k, floor, equal) / sw;
		if (wk == 0)
			continue;
		double e = se ? se[k] : NAN;
		own2 += wk * wk * e * e; /* NaN when a round's own is not known */
		spread2 += wk * (m[k] - s.mean) * (m[k] - s.mean);
	}
	if (s.n == 1)
		s.se = sqrt(own2);
	else {
		double own = sqrt(own2), spread = sqrt(spread2 / (s.n - 1));
		s.se = isfinite(own) && own > spread ? own : spread;
	}
	return s;
}

/* The null distribution of U for m and n values: cnt[u] arrangements of the m + n
 * ranks giving U = u, by the recurrence f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u)
 * (the largest value is an a, beating all n b's, or a b), one layer of m at a time. */
static double *u_counts(int m, int n)
{
	int U = m * n + 1;
	double *prev = zb_xcalloc((size_t)(n + 1) * (size_t)U, sizeof *prev);
	double *cur = zb_xcalloc((size_t)(n + 1) * (size_t)U, sizeof *cur);
	for (int j = 0; j <= n; j++)
		prev[(size_t)j * U] = 1; /* m = 0: one arrangement, U = 0 */
	for (int i = 1; i <= m; i++) {
		for (int j = 0; j <= n; j++)
			for (int u = 0; u < U; u++) {
				double v = u >= j ? prev[(size_t)j * U + (u - j)] : 0;
				if (j > 0)
					v += cur[(size_t)(j - 1) * U + u];
				cur[(size_t)j * U + u] = v;
			}
		double *t = prev;
		prev = cur;
		cur = t;
	}
	double *out = zb_xmalloc((size_t)U * sizeof *out);
	for (int u = 0; u < U; u++)
		out[u] = prev[(size_t)n * U + u];
	free(prev);
	free(cur);
	return out;
}

static int finite_copy(const double *v, int n, double *out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			out[k++] = v[i];
	return k;
}

double zb_rank_sum_p(const double *a, int na, const double *b, int nb)
{
	double *x = zb_xmalloc((size_t)(na > 0 ? na : 1) * sizeof *x);
	double *y = zb_xmalloc((size_t)(nb > 0 ? nb : 1) * sizeof *y);
	int m = finite_copy(a, na, x), n = finite_copy(b, nb, y);
	double p = 1;
	if (m == 0 || n == 0)
		goto out;
	double u = 0, ties = 0; /* ties: the tie correction's sum of t^3 - t over tied groups */
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			u += x[i] > y[j] ? 1 : x[i] == y[j] ? 0.5 : 0;
	if (m <= ZB_RANK_SUM_EXACT && n <= ZB_RANK_SUM_EXACT) {
		double *c = u_counts(m, n), total = 0, lo = 0, hi = 0;
		for (int k = 0; k <= m * n; k++) {
			total += c[k];
			lo += k <= floor(u) ? c[k] : 0;
			hi += k >= ceil(u) ? c[k] : 0;
		}
		free(c);
		p = 2 * (lo < hi ? lo : hi) / total;
	} else {
		double *all = zb_xmalloc((size_t)(m + n) * sizeof *all);
		memcpy(all, x, (size_t)m * sizeof *all);
		memcpy(all + m, y, (size_t)n * sizeof *all);
		qsort(all, (size_t)(m + n), sizeof *all, cmp_double);
		for (int i = 0; i < m + n;) {
			int j = i;
			while (j < m + n && all[j] == all[i])
				j++;
			double t = j - i;
			ties += t * t * t - t;
			i = j;
		}
		free(all);
		double N = m + n, mu = m * (double)n / 2;
		double var = m * (double)n / 12 * ((N + 1) - ties / (N * (N - 1)));
		double z = var > 0 ? (fabs(u - mu) - 0.5) / sqrt(var) : 0;
		p = z > 0 ? erfc(z / sqrt(2)) : 1;
	}
	if (p > 1)
		p = 1;
out:
	free(x);
	free(y);
	return p;
}
