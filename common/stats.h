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

/* The spread of a run's measured per-step times step_s[0 .. steps_done-1] (the time
 * between consecutive step boundaries; step_s[0] from time zero) over the window
 * zb_step_time_window measures: from the end of step `warmup` (clamped to
 * steps_done - 2, at least 0) to the end of the last, i.e. step_s[w+1 .. steps_done-1]. */
zb_spread zb_step_spread(const double *step_s, int steps_done, int warmup);
/* Whether that window is steady: the mean of its second half over the mean of its first,
 * less 1 (an odd middle step in neither); NaN with fewer than 4 steps in the window. A
 * queue that grew step by step would show here; a converged run gives the host's noise. */
double zb_step_drift(const double *step_s, int steps_done, int warmup);

/* One measurement repeated in n rounds (validate --rounds): round k's mean m[k] (NaN:
 * left out) and its standard error se[k] over its own steps (NaN or se NULL: not known).
 * The mean weighs each round by its precision, 1 / max(se[k], floor)^2 with floor =
 * floor_rel times the rounds' plain mean: a round whose steps varied a lot was measured
 * while the host was disturbed, and says less about the configuration (on the H200 machine
 * a 4-thread configuration's rounds were 282 and 321 ms with their steps within 0.6 %, then
 * five rounds of 455-589 ms with steps varying by 3-10 % while a neighbour on the host took
 * the cores).
 * The floor keeps a steady round from outweighing the others, since no round is surer
 * than the host repeats itself (ZB_ROUND_SE_FLOOR): rounds within it weigh the same,
 * which is the plain mean. A round with neither a positive floor nor an error makes every
 * round weigh the same. The standard error (.se) is the larger of the one the rounds' own
 * give the weighted mean and their weighted spread (one round: its own); .sd is NaN. w
 * (NULL: not wanted) gets the weights, summing to 1, to average other quantities alike. */
zb_spread zb_rounds_mean(const double *m, const double *se, int n, double floor_rel, double *w);

/* The floor of a round's relative standard error in zb_rounds_mean: the median change of
 * a configuration between its first and last round was 0.9-1.0 % in four fid suites on the
 * H200 machine. */
#define ZB_ROUND_SE_FLOOR 0.01

#ifdef __cplusplus
}
#endif

#endif
