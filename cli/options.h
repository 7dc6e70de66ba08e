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

#include <stdio.h>

#include "cli/flags.h"
#include "common/error.h"
#include "config/resolve.h"
#include "core/config.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"

typedef struct zb_options {
	const char *axis[ZB_AX_COUNT]; /* raw value as given, NULL when not given */
	int offload_param;
	int pageable;
	int hypothetical_cpu;          /* --hypothetical-cpu */
	int have_prices;               /* --prices FILE given and read */
	zb_price_table prices;
	const char *db;                /* --db PATH (NULL: default) */
	int no_db;                     /* --no-db */
	int json, csv, quiet, timeline;
	const char *plot;              /* --plot FILE (sweep) */
	int have_ds, have_hf;          /* --ds-config / --hf-config given and read */
	zb_ds_config ds;               /* the DeepSpeed config, read when the flag is taken */
	zb_hf_config hf;               /* the Hugging Face config.json, likewise */
} zb_options;

/* The option table (cli/flags.h) of the axes and common options into out (cap
 * entries), writing into o, followed by a command's own (extra, may be NULL);
 * zero-terminated. --ds-config and --hf-config read their file when parsed, so a
 * bad file fails before any work; keys of a DeepSpeed config that zbench does not
 * model are listed in one "zbench: warning:" line on stderr. Returns the count. */
int zb_options_table(zb_flag *out, int cap, zb_options *o, const zb_flag *extra);

/* Parse a command's argv with that table: no positional arguments. Returns 1 to go
 * on; 0 when the command must exit now with *exit_code: 0 after --help printed
 * usage to stdout, 2 after a one-line error (or the usage on stderr for an unknown
 * option). */
int zb_options_parse(int argc, char **argv, const zb_flag *extra, void (*usage)(FILE *), zb_options *o,
		     int *exit_code);

/* Read a DeepSpeed config into o, as --ds-config does (a warning line for keys
 * zbench does not model). */
zb_status zb_options_load_ds(zb_options *o, const char *path, zb_error *err);

/* The usage lines of the common options. */
void zb_options_usage(FILE *f);

/* The inputs of zb_config_resolve (config/resolve.h) as o holds them: every axis
 * as given (a list or range for a sweep), the files and switches; in points into o. */
void zb_options_inputs(const zb_options *o, zb_config_inputs *in);

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
