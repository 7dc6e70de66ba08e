/*
 * validation.h - `zbench validate`: every configuration of a suite (suite.h) through
 * the executor and the simulator, each round stored with both timelines, and the
 * verdict: each configuration's step-time error (with the standard error of its
 * measured mean), the MAPE (target <= 3 %, worst <= 8 %), the speedup of each
 * Twin-Flow ratio over plain offload (within 5 %), the order of the configurations
 * by step time, and the busy-time error of each resource.
 *
 * Every configuration's cost is estimated before it starts; one that would take the
 * run past the budget is skipped and listed. With rounds, the suite runs forward,
 * then backward, ...; with extra seconds, the least sure means get further rounds
 * (validation.c says how and why). The tables go to the stream given to the plan,
 * row by row as the configurations run; a configuration that fails on the GPU is
 * one line on the log stream and the suite goes on.
 *
 *     zb_validate_opts o = ZB_VALIDATE_OPTS_INIT;   then the command line's values
 *     zb_validate_defaults(&o, &err);
 *     zb_validation *v;
 *     zb_validation_plan(&o, stdout, stderr, &v, &err);
 *     zb_validation_header(v, stdout);
 *     zb_validation_run(v, command_line, &stop_flag, &res, &err);
 *     zb_validation_free(v);
 */
#ifndef ZB_VALIDATION_H
#define ZB_VALIDATION_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>

#include "common/error.h"
#include "results/store.h"
#include "validate/suite.h"

#define ZB_VALIDATE_REPEAT_MAX 10
#define ZB_VALIDATE_ROUNDS_MAX 8  /* rounds and extra rounds of one configuration */

typedef struct zb_validate_opts {
	const char *hw;      /* the simulator side's hardware (NULL: h200-machine) */
	const char *suite;   /* suite name (suite.h) */
	const char *db;      /* the database */
	int no_db;           /* store nothing */
	int json;            /* the report as JSON; the header on the log stream, no tables */
	int limit;           /* the first that many configurations (0: all) */
	int budget;          /* seconds: skip configurations past this estimate */
	/* -1: not given, the suite's or validate's default (zb_validate_defaults) */
	int warmup, steps;   /* warm-up steps, measured steps (the least with measure_s) */
	double measure_s;    /* > 0: about that many seconds of measured steps each */
	int max_steps;       /* with measure_s, at most that many (0: 64, never below steps) */
	int repeat;          /* the first that many executed configurations again at the end */
	int rounds;          /* every configuration measured in that many rounds */
	double extra_s;      /* after the rounds, seconds of extra rounds for the least sure */
} zb_validate_opts;

#define ZB_VALIDATE_OPTS_INIT                                                                           \
	{ .suite = "full", .db = ZB_STORE_DEFAULT_PATH, .budget = 480, .warmup = -1, .steps = -1,        \
	  .measure_s = -1, .repeat = -1, .rounds = -1, .extra_s = -1 }

/* What the options left unset (-1): the suite's measurement where it has one
 * (zb_suite_measure), else 2 warm-up + 3 measured steps; max_steps below steps is
 * ZB_E_INPUT. An unknown suite keeps validate's defaults; the plan names it. */
zb_status zb_validate_defaults(zb_validate_opts *o, zb_error *err);

typedef struct zb_validation zb_validation;

/* Every configuration built and predicted: fits, predicted step, measured steps,
 * estimated cost. Tables go to out, failures of single configurations to log. */
zb_status zb_validation_plan(const zb_validate_opts *o, FILE *out, FILE *log, zb_validation **v, zb_error *err);
void zb_validation_free(zb_validation *v);

/* "# zbench ... validate: suite ..." and the expected time, to f. */
void zb_validation_header(const zb_validation *v, FILE *f);
/* The suite with each estimate, nothing run (--list): a table on out, or the JSON
 * document (the caller owns it). */
void zb_validation_list(const zb_validation *v);
json_t *zb_validation_plan_json(const zb_validation *v);

typedef struct zb_validation_result {
	int failed;  /* configurations that failed on the GPU (the others went on) */
	int met;     /* every target met (MAPE, worst, speedups where there are any) */
} zb_validation_result;

/* Run the suite (the GPU must be there: zb_exec_available) under a run row with
 * `command`, stopping after the configuration running when *stop is set, and report
 * on out (text or JSON). A store failure stops the suite and is returned. */
zb_status zb_validation_run(zb_validation *v, const char *command, volatile sig_atomic_t *stop,
			    zb_validation_result *res, zb_error *err);

#endif
