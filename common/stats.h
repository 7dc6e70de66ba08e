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
 *
 * zb_rank_sum_p tells whether two sets of measured step times differ by more than their
 * own spread: "is A faster than B" is only a fact about a machine when the steps say so.
 * zb_spread says how well a mean of measured step times is known (its standard error).
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

/* Two-sided p-value of the Wilcoxon-Mann-Whitney rank-sum test that a and b come from
 * one distribution (NaN skipped): U counts the pairs with a > b, a tie as one half. Exact
 * null distribution (no ties) up to ZB_RANK_SUM_EXACT values per side, the normal
 * approximation with tie correction above. 1 when a side is empty. */
#define ZB_RANK_SUM_EXACT 50
double zb_rank_sum_p(const double *a, int na, const double *b, int nb);

/* Mean, sample standard deviation (n - 1 in the denominator) and standard error of
 * the mean (sd / sqrt(n)) of v, NaN skipped; n counts the values used. mean is NaN
 * when none remain, sd and se when fewer than two do. */
typedef struct zb_spread {
	int n;
	double mean, sd, se;
} zb_spread;
zb_spread zb_spread_of(const double *v, int n);

#ifdef __cplusplus
}
#endif

#endif
