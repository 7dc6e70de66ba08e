/*
 * options.h - the configuration options shared by predict, sweep and run.
 *
 * Every option that describes a configuration is an "axis": predict and run take
 * one value per axis, sweep takes a list ("gen3,gen4") or a range ("0:1:0.25") and
 * runs the cartesian product. Options are parsed into raw strings first, then
 * zb_options_config() builds one zb_config from one value per axis, applying them
 * in a fixed order (machine, then link/gpu/cpu overrides, then model, then shape
 * overrides, then policy) so the result does not depend on flag order.
 */
#ifndef ZB_OPTIONS_H
#define ZB_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "common/error.h"
#include "sim/config.h"

typedef enum zb_axis {
	ZB_AX_HW, ZB_AX_PCIE, ZB_AX_GPU, ZB_AX_CPU, ZB_AX_CORES, ZB_AX_GPUS_PER_LINK,
	ZB_AX_MODEL, ZB_AX_MODEL_FILE, ZB_AX_LAYERS, ZB_AX_HIDDEN, ZB_AX_HEADS, ZB_AX_KV_HEADS,
	ZB_AX_FFN, ZB_AX_VOCAB,
	ZB_AX_POLICY, ZB_AX_RATIO, ZB_AX_PREFETCH, ZB_AX_CKPT, ZB_AX_GAS, ZB_AX_MICRO_BATCH,
	ZB_AX_SEQ, ZB_AX_DTYPE, ZB_AX_BUCKET, ZB_AX_THREADS, ZB_AX_STEPS,
	ZB_AX_COUNT
} zb_axis;

typedef struct zb_options {
	const char *axis[ZB_AX_COUNT]; /* raw value as given, NULL when not given */
	int offload_param;
	int pageable;
	const char *db;                /* --db PATH (NULL: default) */
	int no_db;                     /* --no-db */
	int json, csv, quiet, timeline;
	const char *plot;              /* --plot FILE (sweep) */
} zb_options;

/* getopt_long table entries for the axis and common options; a command appends
 * its own. Option ids are >= 1000 for axes, so they never clash with short
 * options. */
#define ZB_OPT_AXIS_BASE 1000
#define ZB_OPT_OFFLOAD_PARAM 1100
#define ZB_OPT_PAGEABLE 1101
#define ZB_OPT_DB 1102
#define ZB_OPT_NO_DB 1103
#define ZB_OPT_JSON 1104
#define ZB_OPT_CSV 1105
#define ZB_OPT_QUIET 1106
#define ZB_OPT_TIMELINE 1107
#define ZB_OPT_PLOT 1108
#define ZB_OPT_HELP 'h'

/* Fill out (size cap) with the common long options followed by extra (terminated
 * by a zero entry). Returns the number written. */
int zb_options_table(struct option *out, int cap, const struct option *extra);

/* Handle one getopt_long result; returns 1 if it was a common option, 0 if not,
 * or -1 with err filled for a bad value. */
int zb_options_take(zb_options *o, int opt, const char *arg, zb_error *err);

/* The usage lines of the common options. */
void zb_options_usage(FILE *f);

const char *zb_axis_flag(zb_axis a); /* "--pcie" */

/* The values of an axis: a comma list, or for numeric axes a range lo:hi:step.
 * Returns the count (>= 1) and fills vals with pointers into a buffer the caller
 * frees (*storage). Bad range: -1 with err. */
int zb_axis_values(const char *raw, zb_axis a, char ***vals, char **storage, zb_error *err);

/* Build one configuration from one value per axis (NULL: default). */
zb_status zb_options_config(const char *const value[ZB_AX_COUNT], const zb_options *o,
			    zb_config *out, zb_error *err);

/* For predict/run: every axis must have a single value. */
zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err);

/* The command line as one string (for the database). Caller frees. */
char *zb_command_line(int argc, char **argv);

#endif
