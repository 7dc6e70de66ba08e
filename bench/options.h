/*
 * options.h - the configuration options shared by predict, sweep and run.
 *
 * Every option that describes a configuration is an "axis": predict and run take
 * one value per axis, sweep takes a list ("gen3,gen4") or a range ("0:1:0.25") and
 * runs the cartesian product. Options are parsed into raw strings first, then
 * zb_options_config() builds one zb_config from one value per axis, applying them
 * in a fixed order (machine, then link/gpu/cpu overrides, then model: preset,
 * --model-file or --hf-config, then shape overrides, then policy: defaults, then
 * --ds-config resolved for the final model, then policy flags) so the result does
 * not depend on flag order and explicit flags override the files.
 */
#ifndef ZB_OPTIONS_H
#define ZB_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "common/error.h"
#include "sim/config.h"
#include "sim/dsconfig.h"
#include "sim/hfconfig.h"

typedef enum zb_axis {
	ZB_AX_HW, ZB_AX_PCIE, ZB_AX_GPU, ZB_AX_CPU, ZB_AX_CORES, ZB_AX_GPUS_PER_LINK, ZB_AX_GPUS_PER_CPU,
	ZB_AX_MODEL, ZB_AX_MODEL_FILE, ZB_AX_LAYERS, ZB_AX_HIDDEN, ZB_AX_HEADS, ZB_AX_KV_HEADS,
	ZB_AX_FFN, ZB_AX_VOCAB,
	ZB_AX_POLICY, ZB_AX_RATIO, ZB_AX_PREFETCH, ZB_AX_CKPT, ZB_AX_GAS, ZB_AX_MICRO_BATCH,
	ZB_AX_SEQ, ZB_AX_DTYPE, ZB_AX_BUCKET, ZB_AX_THREADS, ZB_AX_STEPS,
	ZB_AX_ATTENTION, ZB_AX_LINK_RATE,
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
	int have_ds, have_hf;          /* --ds-config / --hf-config given and read */
	zb_ds_config ds;               /* the DeepSpeed config, read when the flag is taken */
	zb_hf_config hf;               /* the Hugging Face config.json, likewise */
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
#define ZB_OPT_DS_CONFIG 1109
#define ZB_OPT_HF_CONFIG 1110
#define ZB_OPT_HELP 'h'

/* Fill out (size cap) with the common long options followed by extra (terminated
 * by a zero entry). Returns the number written. */
int zb_options_table(struct option *out, int cap, const struct option *extra);

/* Handle one getopt_long result; returns 1 if it was a common option, 0 if not,
 * or -1 with err filled for a bad value. --ds-config and --hf-config read their file
 * here, so a bad file fails before any work; keys of a DeepSpeed config that zbench
 * does not model are listed in one "zbench: warning:" line on stderr. */
int zb_options_take(zb_options *o, int opt, const char *arg, zb_error *err);

/* A command's own options: called for each getopt_long result that is not a
 * common option. Returns 1 when it took the option, 0 when it does not know it,
 * -1 with err filled for a bad value. */
typedef int (*zb_option_fn)(void *ctx, int opt, const char *arg, zb_error *err);

/* Parse a command's argv: the common options, `extra` (may be NULL) handled by fn,
 * no positional arguments. Returns 1 to go on; 0 when the command must exit now
 * with *exit_code: 0 after --help printed usage to stdout, 2 after a one-line
 * error (or the usage on stderr for an unknown option). */
int zb_options_parse(int argc, char **argv, const struct option *extra, zb_option_fn fn, void *ctx,
		     void (*usage)(FILE *), zb_options *o, int *exit_code);

/* The usage lines of the common options. */
void zb_options_usage(FILE *f);

const char *zb_axis_flag(zb_axis a); /* "--pcie" */

/* The values of an axis: a comma list, or for numeric axes a range lo:hi:step.
 * Returns the count (>= 1) and fills vals with pointers into a buffer the caller
 * frees (*storage). Bad range: -1 with err. */
int zb_axis_values(const char *raw, zb_axis a, char ***vals, char **storage, zb_error *err);

/* Where a setting of the configuration came from. Explicit flags override the
 * files; a DeepSpeed config decides the policy fields it covers, a Hugging Face
 * config the model shape; everything else is zbench's default. */
typedef enum zb_source { ZB_SRC_DEFAULT, ZB_SRC_FLAG, ZB_SRC_DS, ZB_SRC_HF, ZB_SRC_COUNT } zb_source;

typedef enum zb_setting {
	ZB_SET_HW, ZB_SET_PCIE, ZB_SET_GPU, ZB_SET_CPU, ZB_SET_CORES,
	ZB_SET_MODEL, ZB_SET_LAYERS, ZB_SET_HIDDEN, ZB_SET_HEADS, ZB_SET_KV_HEADS, ZB_SET_FFN,
	ZB_SET_VOCAB, ZB_SET_TIED,
	ZB_SET_POLICY, ZB_SET_RATIO, ZB_SET_OFFLOAD_PARAM, ZB_SET_PREFETCH, ZB_SET_CKPT,
	ZB_SET_MICRO_BATCH, ZB_SET_GAS, ZB_SET_SEQ, ZB_SET_DTYPE, ZB_SET_PAGEABLE, ZB_SET_BUCKET,
	ZB_SET_THREADS, ZB_SET_STEPS,
	ZB_SET_COUNT
} zb_setting;

typedef struct zb_sources {
	zb_source from[ZB_SET_COUNT];
	char detail[ZB_SET_COUNT][256]; /* the flag, file key or preset, and how */
	int ds, hf;                     /* a DeepSpeed / Hugging Face file was applied */
	char ds_path[256], hf_path[256];
	int ds_ignored;                 /* keys of the DeepSpeed file not modelled */
	zb_ds_plan plan;                /* the DeepSpeed file resolved (when ds) */
	int twinflow;                   /* the ratio was quantized to ZeRO-3 sub-groups */
	zb_ds_twinflow split;           /* ... like this */
	double ratio_asked;             /* the ratio before quantizing */
	char hf_model_type[32];
	int hf_max_positions;
	char hf_notes[320];
} zb_sources;

const char *zb_source_name(zb_source s);   /* "flag", "ds-config", "hf-config", "default" */
const char *zb_setting_name(zb_setting s); /* "micro_batch", as in --json */

/* Build one configuration from one value per axis (NULL: default). src (may be
 * NULL) gets where each setting came from. */
zb_status zb_options_config(const char *const value[ZB_AX_COUNT], const zb_options *o,
			    zb_config *out, zb_error *err);
zb_status zb_options_config_src(const char *const value[ZB_AX_COUNT], const zb_options *o,
				zb_config *out, zb_sources *src, zb_error *err);

/* For predict/run: every axis must have a single value. */
zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err);
zb_status zb_options_single_src(const zb_options *o, zb_config *out, zb_sources *src, zb_error *err);

/* The command line as one string (for the database). Caller frees. */
char *zb_command_line(int argc, char **argv);

#endif
