/*
 * sweep_table.h - the rows of `zbench sweep` for people (fixed-width columns with a
 * units row) and for machines (CSV through report/csv.h: snake_case headers with the
 * unit in the name, RFC 4180 quoting, empty for a missing value), from one table of
 * columns, so the two cannot drift.
 *
 * Columns: the configuration (model, pcie, gpu, cpu, cores, policy, ratio, micro_batch,
 * gas, seq, ckpt, dtype, framework, zero, sub_group, then every other axis the sweep
 * varies), the prediction (step, tokens/s, TFLOP/s, bottleneck, bound), both schedules'
 * throughput (zbench's, what the hardware allows; DeepSpeed's, what its users get), the
 * memory needed against the memory there is on the GPU and the host, the cost (price per
 * machine-hour, tokens per dollar, hours and cost to train on --tokens), the profile,
 * whether the CPU is hypothetical, and why a row does not fit. A sweep with several ranks
 * appends the rank columns of report/ranks.h.
 */
#ifndef ZB_SWEEP_TABLE_H
#define ZB_SWEEP_TABLE_H

#include <stdio.h>

#include "sim/sweep.h"

typedef struct zb_sweep_table {
	int csv;
	int ranks;                 /* the rank columns follow */
	int extra[ZB_AX_COUNT];    /* varied axes that are not a column of their own */
	int n_extra;
	double tokens;             /* --tokens: the training run the cost columns price */
} zb_sweep_table;

/* The columns of a sweep of grid g (the axes it varies). */
void zb_sweep_table_init(zb_sweep_table *t, const zb_sweep_grid *g, int csv, int ranks, double tokens);
/* The same for rows read back (no grid): an extra column for each axis whose value
 * differs among the n configurations. */
void zb_sweep_table_vary(zb_sweep_table *t, const zb_config *rows, int n);
/* The header (table: names and units rows; CSV: one line). */
void zb_sweep_table_head(FILE *f, const zb_sweep_table *t);
/* One row. */
void zb_sweep_table_row(FILE *f, const zb_sweep_table *t, const zb_sweep_row *r);

/* The row's figures a buyer compares: tokens/s of each framework's schedule (< 0: not
 * simulated), tokens per dollar and the hours and cost of training on `tokens` (< 0:
 * unknown, e.g. not priced). */
typedef struct zb_row_cost {
	double zbench_tps, deepspeed_tps;
	double tokens_per_dollar, train_hours, train_cost;
} zb_row_cost;
void zb_sweep_row_cost(const zb_sweep_row *r, double tokens, zb_row_cost *out);

/* For people, after one prediction: "# DeepSpeed gets X tokens/s on this box; the hardware
 * allows Y" and, when priced, the cost line. */
void zb_sweep_row_summary(FILE *f, const zb_sweep_row *r, double tokens);

/* The same figures as JSON members of j (a row's prediction object). */
void zb_sweep_row_json(void *j, const zb_sweep_row *r, double tokens);

#endif
