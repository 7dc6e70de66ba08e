/* stats.c - median, min and max with the NaN rule of stats.h. */
#include "common/stats.h"

#include <math.h>
#include <stdlib.h>

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
