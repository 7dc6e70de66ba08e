/*
 * records.h - the tables `zbench calibrate`, `baseline save` and `regress` add
 * beside the store's schema (store.h):
 *
 *   hw_profiles(id, run_id -> runs, name, path, hw_json, measurements_json)
 *       one calibrated hardware profile: the JSON `--hw` reads (hw_json, the same
 *       text as the file) and every measurement and fit behind it
 *   baselines(id, tag unique, run_id -> runs, suite, source 'predicted' |
 *       'measured', repeats, warmup, steps, hw_json, created_at)
 *       a named set of results regress compares against; the rows of the run that
 *       made it (runs.kind = 'baseline', configs, predictions) hold the inputs
 *   baseline_results(baseline_id -> baselines, key, config_id -> configs, label,
 *       step_time_s, tokens_per_s, samples)
 *       one suite configuration: the median step time over the repeats and every
 *       repeat's value (samples, a JSON array of seconds)
 *
 * Why separate tables and not columns of runs: a tag must be unique and findable,
 * and a profile is a document. The tables are schema version 4 of the store
 * (results/store.c migrations) and cascade from runs like everything else. Writes
 * join the caller's transaction (zb_store_begin .. zb_store_commit).
 */
#ifndef ZB_RECORDS_H
#define ZB_RECORDS_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

zb_status zb_hw_profile_add(zb_store *s, int64_t run_id, const char *name, const char *path, const char *hw_json,
			    const char *measurements_json, int64_t *id, zb_error *err);

typedef struct zb_baseline {
	int64_t id, run_id;
	char tag[128];
	char suite[256];    /* a built-in suite's name, or the suite file's path */
	char source[16];   /* "predicted" (zbench baseline save --sim) or "measured" */
	int repeats, warmup, steps;
	char *hw_json;     /* malloc'd; NULL when not recorded */
	char created_at[40];
} zb_baseline;

typedef struct zb_baseline_result {
	char key[128];
	char label[256];
	int64_t config_id;     /* 0 when none */
	double step_time_s;    /* median over the repeats */
	double tokens_per_s;
	int nsamples;
	double samples[32];    /* step time of each repeat */
} zb_baseline_result;

#define ZB_BASELINE_MAX_SAMPLES 32

/* Insert a baseline (its id in b->id). ZB_E_INPUT when the tag exists. */
zb_status zb_baseline_add(zb_store *s, zb_baseline *b, zb_error *err);
zb_status zb_baseline_add_result(zb_store *s, int64_t baseline_id, const zb_baseline_result *r, zb_error *err);
/* Look a tag up; ZB_E_INPUT naming the known tags when it is not there. Free
 * b->hw_json with zb_baseline_clear. */
zb_status zb_baseline_find(zb_store *s, const char *tag, zb_baseline *b, zb_error *err);
/* Remove a tag (its results go with it; the run that made it stays). */
zb_status zb_baseline_delete(zb_store *s, const char *tag, zb_error *err);
/* The results of a baseline, ordered by key; *out malloc'd. */
zb_status zb_baseline_results(zb_store *s, int64_t baseline_id, zb_baseline_result **out, int *n, zb_error *err);
void zb_baseline_clear(zb_baseline *b);

#endif
