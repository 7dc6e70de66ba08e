/*
 * regress.h - throughput regression tests against a stored baseline: a suite's
 * median step times stored under a tag, and the suite run again against them.
 *
 *   zb_baseline_save  runs a suite (suite.h) and stores each configuration's median
 *                     step time over the repeats under a tag (results/records.h)
 *   zb_baseline_list  the tags of a database
 *   zb_regress        reruns the baseline's configurations the way it was made and
 *                     counts those that lost more than the tolerance of their
 *                     throughput (the caller exits 1 on any)
 *
 * Measured (default) or simulated (sim: deterministic predictions, so a shift beyond
 * the tolerance either way is a model change and counts). regress.c says how the
 * hardware and the repeats are chosen. Reports go to out; with json the report is a
 * JSON document on out and the table for people on log.
 *
 * The suite is a built-in one or a suite file of the user's configurations
 * (suite_file.h). A baseline lives in the database under its tag, or in a file to
 * commit (baseline_file.h: save with out_file, regress with a tag that names a
 * file); regress judges on the baseline's hardware profile and refuses another one,
 * and with junit writes a JUnit report (one test case per configuration).
 */
#ifndef ZB_REGRESS_H
#define ZB_REGRESS_H

#include <stdio.h>

#include "common/error.h"

typedef struct zb_regress_opts {
	const char *tag;      /* the baseline: a tag of db, or a baseline file (zb_baseline_is_file) */
	const char *suite;    /* save: the suite (name or file); regress: NULL (the baseline's) or the
			       * suite to rerun, judged against the baseline's configurations of the same key */
	const char *out_file; /* save: also write the baseline to this file */
	int no_db;            /* save: store nothing in db (with out_file) */
	const char *junit;    /* regress: a JUnit XML report to this file */
	const char *hw;       /* hardware (save: NULL is h200-machine; regress: NULL is the baseline's) */
	const char *db;
	int sim;              /* the simulator alone, no GPU */
	int repeats;          /* runs of each configuration (0: save 3, 1 with sim; regress the baseline's) */
	int limit;            /* save: the first that many configurations (0: all) */
	int force;            /* save: replace an existing tag */
	int json;
	int warmup, steps;    /* save: of each run (regress takes the baseline's) */
	double tolerance;     /* regress: the largest throughput loss that passes */
	double plant;         /* regress: every new step time x (1 + plant), a planted regression */
	FILE *out, *log;
} zb_regress_opts;

/* Measure and store the baseline o->tag (a run of kind 'baseline' under `command`;
 * with out_file, the file too). */
zb_status zb_baseline_save(const zb_regress_opts *o, const char *command, zb_error *err);
/* The baselines of o->db, a table on o->out. */
zb_status zb_baseline_list(const zb_regress_opts *o, zb_error *err);

typedef struct zb_regress_result {
	int compared, regressions, improved, missing;
	int added;            /* configurations of the suite the baseline does not have (not judged) */
} zb_regress_result;

zb_status zb_regress(const zb_regress_opts *o, zb_regress_result *res, zb_error *err);

#endif
