/*
 * options.h - the configuration options shared by predict, sweep and run.
 *
 * Every option that describes a configuration is an "axis": predict and run take
 * one value per axis, sweep takes a list ("gen3,gen4") or a range ("0:1:0.25") and
 * runs the cartesian product. Options are parsed into raw strings first, then
 * zb_options_config() builds one zb_config from one value per axis with
 * zb_config_resolve (config/resolve.h), which applies them in a fixed order so the
 * result does not depend on flag order and explicit flags override the files.
 */
#ifndef ZB_OPTIONS_H
#define ZB_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "common/error.h"
#include "config/resolve.h"
#include "core/config.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"

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

/* Build one configuration from one value per axis (NULL: default) and the files
 * and switches in o, through zb_config_resolve (config/resolve.h). src (may be
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
