/*
 * prices.h - a price table the user edits (`--prices FILE`, data/prices.tsv an example):
 * what one hour of a GPU, a CPU, a link or a whole machine costs, each row with its
 * source and date, so a sweep can rank machines by tokens per unit of money and say
 * what a training run costs.
 *
 * Format: tab-separated, '#' comments, rows "kind name per_hour source date" with kind
 * gpu | cpu | pcie | hw. A machine-hour costs its hw row when the table has one for the
 * machine's name, else the sum of its parts: the gpu row x the node's GPUs, the cpu row,
 * the pcie row (a missing cpu or pcie row counts 0; a missing gpu row leaves the machine
 * not priced).
 */
#ifndef ZB_PRICES_H
#define ZB_PRICES_H

#include "common/error.h"
#include "core/config.h"

enum { ZB_PRICE_ROWS_MAX = 512 };

typedef struct zb_price_row {
	char kind[8];               /* "gpu", "cpu", "pcie", "hw" */
	char name[ZB_NAME_MAX];
	double per_hour;
} zb_price_row;

typedef struct zb_price_table {
	char path[256];
	int n;
	zb_price_row rows[ZB_PRICE_ROWS_MAX];
} zb_price_table;

/* Read a table; a malformed row is ZB_E_INPUT naming the file, the line and the field. */
zb_status zb_prices_load(const char *path, zb_price_table *t, zb_error *err);

/* The price of one machine-hour of hw with `gpus` GPUs per node under t; 0 when not priced. */
double zb_prices_machine(const zb_price_table *t, const zb_hw *hw, int gpus);

#endif
