/*
 * dsorder.h - DeepSpeed's order of configurations, as far as its own measurements tell it.
 *
 * The same configuration measured in several sessions (several --measured files) is one
 * configuration with its steps pooled; a pair of configurations is "separated" when the
 * rank-sum test on their pooled steps says they differ (two-sided p < ZB_DS_ORDER_ALPHA).
 * Why: on the H200 machine DeepSpeed's s2-off-ovl ran 99 ms faster than s2-off in one session
 * (data/deepspeed-h200-table.tsv) and 103 ms slower in another
 * (data/deepspeed-h200-table-sessions.jsonl); neither order is a fact about DeepSpeed, and
 * a model cannot be held to it. Pairs the measurements do separate must come out in the
 * same order from the model.
 */
#ifndef ZB_DSORDER_H
#define ZB_DSORDER_H

#include <stdio.h>

#include "analysis/dscalib.h"
#include "inputs/dsmeasured.h"

#define ZB_DS_ORDER_ALPHA 0.05
#define ZB_DS_POOL_ROWS 16

typedef struct zb_ds_pooled {
	int row[ZB_DS_POOL_ROWS]; /* the rows (sessions) of this configuration */
	int nrows;
	double steps_s[ZB_DS_POOL_ROWS * ZB_DS_MAX_STEPS]; /* pooled steps; a row without
	                                                      steps gives its median */
	int nsteps;
	double measured_s;  /* median of the pooled steps */
	double predicted_s; /* the first row's prediction (every row is the same configuration) */
	int fits;
} zb_ds_pooled;

/* Group m's rows into configurations (same name, model, seq, micro-batch, sub-group size;
 * a row that leaves one out has base's) with their predictions e; returns the number of
 * configurations written to out (at most m->n). */
int zb_ds_pool(const zb_ds_measured *m, const zb_ds_eval *e, const zb_config *base, zb_ds_pooled *out);

typedef struct zb_ds_order {
	int pairs;     /* pairs of configurations that both fit */
	int separated; /* of them, separated by the measured steps */
	int in_order;  /* of those, ordered the same by the predictions */
} zb_ds_order;

/* Check the predictions' order; list (to `list`, may be NULL) the separated pairs out of
 * order and the pairs the measurements do not separate, with their p-values. */
void zb_ds_order_check(const zb_ds_measured *m, const zb_ds_pooled *c, int n, zb_ds_order *o, FILE *list);

#endif
