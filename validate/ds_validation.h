/*
 * ds_validation.h - `zbench validate --deepspeed`: real DeepSpeed against zbench's
 * prediction of the same configuration. Each configuration (a DeepSpeed JSON of
 * the config directory, or a row of a file of earlier measurements) is predicted
 * as `zbench predict --ds-config FILE <model flags>` predicts it, measured by the
 * harness (peers/peer.h) or taken from the file, stored (configs, predictions,
 * peer_runs), and tabled on out: step time, GPU peak and host memory, measured
 * against predicted, with the MAPE of each. A configuration that fails is one line
 * on log and the others go on.
 */
#ifndef ZB_DS_VALIDATION_H
#define ZB_DS_VALIDATION_H

#include <stdio.h>

#include "common/error.h"
#include "config/resolve.h"

typedef struct zb_ds_validate_opts {
	const char *configs;    /* names, "a,b" (NULL: the rows of from, else every JSON of config_dir) */
	const char *config_dir; /* <name>.json files */
	const char *python, *harness;
	const char *from;       /* earlier measurements (TSV or harness result lines; NULL: measure) */
	const char *log_dir;    /* a log per harness run (NULL: none) */
	int timeout_s, steps;   /* of each harness run */
	const zb_config_inputs *in; /* the model and batch flags; no DeepSpeed file (each item has its own) */
	const char *db;         /* the database */
	int no_db, json;
	FILE *out, *log;        /* the table (or JSON); warnings and failed configurations */
} zb_ds_validate_opts;

typedef struct zb_ds_validate_result {
	int configs;  /* configurations validated (0: the run did not begin) */
	int failed;   /* of those, failed */
} zb_ds_validate_result;

/* Validate every configuration under a run row with `command`, until *stop is set
 * (the rest: "interrupted"). Bad input fails before anything runs; a store failure
 * stops the run (res->configs > 0: the rows so far stand). */
zb_status zb_ds_validate(const zb_ds_validate_opts *o, const char *command, volatile const int *stop,
			 zb_ds_validate_result *res, zb_error *err);

#endif
