/*
 * suite_file.h - a suite of the user's own configurations, read from a file:
 * `baseline save --suite FILE`, `regress --suite FILE`, `validate --suite FILE`.
 *
 * Two forms, told apart by the first character that is not blank:
 *   text  one configuration per line in zbench's configuration flags (those of
 *         predict: --model llama2-7b --policy dpu --ratio 0.5, --ds-config ds.json
 *         --hf-config config.json, --offload-param, --fp16, ...); '#' starts a
 *         comment; blank lines are skipped; quotes ('...' or "...") hold a value
 *         with blanks. `--name <label>` names the configuration.
 *   JSON  a list of objects, one per configuration: the same flags as keys without
 *         their dashes ("model": "llama2-7b", "ratio": 0.5, "offload-param": true,
 *         "ds-config": "ds.json", "name": "..."); '_' may stand for '-'.
 * A configuration's key (how a baseline finds it again, the test case of a JUnit
 * report) is its name, else its flags written out in one line. Relative paths
 * (--ds-config, --hf-config, --model-file) are relative to the suite file's folder
 * and are written in the flags as they are opened.
 *
 * A line describes one configuration and nothing the command decides: lists and
 * ranges ("gen3,gen4"), --hw (one hardware profile per suite: the command's --hw)
 * and --steps (the command's) are refused. Every error is one line that names the
 * file, the line and the problem: "ci/suite.txt:3: unknown flag '--modle'".
 * Everything is checked when the file is read except what needs the hardware
 * (zb_suite_config resolves each configuration; its errors carry the same place).
 */
#ifndef ZB_SUITE_FILE_H
#define ZB_SUITE_FILE_H

#include "common/error.h"
#include "validate/suite.h"

/* The size of a key (zb_baseline_result.key). */
#define ZB_SUITE_KEY_MAX 128

/* Read a suite file into *out (free with zb_suite_close). */
zb_status zb_suite_file_load(const char *path, zb_suite **out, zb_error *err);

/* A suite from configurations given as flags lines (a baseline file's "spec" of
 * each configuration), their keys beside them; paths are taken as written.
 * `origin` names where they came from in errors ("baseline.json"). */
zb_status zb_suite_from_specs(const char *origin, const char *const *keys, const char *const *specs, int n,
			      zb_suite **out, zb_error *err);

/* The flags line of an entry of a file suite (NULL for a built-in entry). */
const char *zb_suite_entry_spec(const zb_suite_entry *e);

/* For suite.c: a file entry's key, and its configuration (zb_suite_config). */
const char *zb_suite_user_key(const zb_suite_user *u);
zb_status zb_suite_user_config(const zb_suite_user *u, const char *hw, int warmup, int steps, zb_config *out,
			       zb_error *err);

/* For zb_suite_close: free what a file suite holds. */
void zb_suite_file_free(zb_suite *s);

#endif
