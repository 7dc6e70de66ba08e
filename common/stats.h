/*
 * stats.h - the one median of zbench.
 *
 * NaN rule: NaN values are "not measured" and are left out; the median is that of
 * the values that remain, and NaN when none remain (n <= 0 or all NaN). An even
 * count takes the mean of the middle two. The input is never modified (a copy is
 * sorted), so callers may keep their arrays in measurement order.
 *
 * Used by benchmarks and calibration (timings), by analysis (errors over a suite)
 * and by plots (steady-state step times).
 */
#ifndef ZB_STATS_H
#define ZB_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

double zb_median(const double *v, int n);

/* Smallest and largest value, NaN skipped (NaN when none remain). */
double zb_min(const double *v, int n);
double zb_max(const double *v, int n);

#ifdef __cplusplus
}
#endif

#endif
