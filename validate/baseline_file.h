/*
 * baseline_file.h - a baseline as a file to commit beside the code it gates
 * (`baseline save TAG -o baseline.json`, `regress --baseline baseline.json`): the
 * configurations, the hardware profile they were judged on and the figures, in one
 * JSON document written through jansson, so a CI needs no database.
 *
 *   {"format": "zbench-baseline", "version": 1, "tag": ..., "created_at": ...,
 *    "zbench": "0.1.0 abc1234", "suite": "ci/suite.txt", "source": "predicted" | "measured",
 *    "repeats": n, "warmup": n, "steps": n, "device": "NVIDIA H200" | null,
 *    "hardware": {"name": ..., "profile": {the hardware file zb_hw_load reads}},
 *    "configs": [{"key": ..., "spec": "--model ..." | null, "label": ..., "fits": true,
 *                 "step_time_s": x, "tokens_per_s": x, "samples_s": [x, ...]}]}
 *
 * fits false (step_time_s, tokens_per_s null): it did not fit. spec is the configuration's
 * flags (a suite file's), null for a built-in suite's
 * (regress finds those by the suite's name). A reader refuses a newer format
 * version, naming it, and anything that is not such a document in one line.
 */
#ifndef ZB_BASELINE_FILE_H
#define ZB_BASELINE_FILE_H

#include <stdio.h>

#include "common/error.h"
#include "results/records.h"

#define ZB_BASELINE_FORMAT "zbench-baseline"
#define ZB_BASELINE_FORMAT_VERSION 1

typedef struct zb_baseline_file {
	zb_baseline b;              /* tag, suite, source, repeats, warmup, steps, hw_json, created_at */
	char hw_name[128];
	char device[128];           /* "" when simulated */
	char zbench[128];           /* the version and commit that wrote it */
	zb_baseline_result *results;
	char **specs;               /* per result: its flags, NULL for a built-in suite's */
	int n;
} zb_baseline_file;

/* Whether a --baseline value names a file: it holds a '/' or ends in ".json" (any
 * other value is a tag of the database). */
int zb_baseline_is_file(const char *tag);

/* Write f to path (a temporary beside it, renamed when complete). A result that did
 * not fit has step_time_s NaN. */
zb_status zb_baseline_file_write(const char *path, const zb_baseline_file *f, zb_error *err);
/* The document alone, to out (the caller's temporary); path names it in errors. */
zb_status zb_baseline_file_dump(FILE *out, const char *path, const zb_baseline_file *f, zb_error *err);

/* Read path into *f (free with zb_baseline_file_free). */
zb_status zb_baseline_file_read(const char *path, zb_baseline_file *f, zb_error *err);
void zb_baseline_file_free(zb_baseline_file *f);

#endif
