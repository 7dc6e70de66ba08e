/*
 * kfit_eval.h - how well predicted step times match measured ones over a set of
 * configurations (kfit.h): MAPE, worst, busy-time MAPE per resource, the speedups
 * within groups of one shape (same model, batch, threads, link, attention, ...;
 * each member against the group's slowest measured member), and whether sorting by
 * predicted step time keeps the measured order (pairs whose measured times differ by
 * more than 3% and whose predicted order is the other way round are "swapped").
 * A configuration measured more than once in one run (validate --rounds) counts once,
 * with the mean of its measurements (zb_rounds_mean, as validate takes it), and the
 * spread of its rounds gives that mean a standard error (none with one round): a swap
 * or a speedup miss the measurement itself establishes (beyond two standard errors) is
 * counted apart from the others.
 */
#ifndef ZB_KFIT_EVAL_H
#define ZB_KFIT_EVAL_H

#include "analysis/kfit.h"

typedef struct zb_kfit_summary {
	int n, within3, within8;
	int merged;              /* items counted into another of the same configuration and run */
	double mape, worst;
	double busy_mape[ZB_RES_COUNT];
	int nspeed, speed_ok;
	double speed_worst;
	int order_pairs, order_swaps;
	int order_pairs_sure, order_swaps_sure; /* pairs apart by > 3 % and > 2 standard errors */
	int speed_miss_sure;     /* speedups off by > 5 % + 2 standard errors of the measured one */
	double noise_worst;      /* the largest standard error of a configuration's mean, relative (0: one round each) */
	int noise_worst_item;    /* an item of that configuration (-1: none) */
	int noisy;               /* configurations measured less surely than ZB_KFIT_JUDGE_NOISE */
	double worst_sure;       /* the worst error of the others */
} zb_kfit_summary;

/* A configuration whose measured mean is uncertain by more than this (relative standard
 * error: of its rounds' mean, or of its steps with one round) cannot show a model error
 * of the same size: the summary's worst_sure leaves it out (its error still counts in the
 * MAPE and worst). */
#define ZB_KFIT_JUDGE_NOISE 0.05

/* Summary of predictions p (one per item of s; NaN steps left out). */
void zb_kfit_summarize(const zb_kfit_set *s, const zb_kfit_pred *p, zb_kfit_summary *out);

/* Two configurations are of one speedup group: all but policy and ratio equal. */
int zb_kfit_same_shape(const zb_config *a, const zb_config *b);

/* Two configurations are the same one: of one shape, policy, ratio, ranks and ZeRO stage. */
int zb_kfit_same_config(const zb_config *a, const zb_config *b);

/* Which configuration of s each item is (point[i]: 0, 1, ... in order of first
 * appearance; the rounds of one configuration in one run share theirs), so that a
 * split of the configurations (half-out) never puts one round on each side. Returns
 * how many configurations. */
int zb_kfit_points(const zb_kfit_set *s, int *point);

#endif
