/*
 * merge.h - combine zbench databases: the shards of a sweep run as a batch job
 * array (`zbench sweep --shard K/N --db shard-K.db`), or any databases, into one.
 *
 * Copies runs, configs, predictions, tasks, task_deps, events and steps. Ids are
 * remapped (each input's runs and configurations get ids after the output's
 * largest), so rows keep their order and their links. A run already in the output
 * (same kind, start time, host and command line) is refused, so merging a shard
 * twice fails instead of doubling its rows. Inputs are opened read-only (in a
 * read-only folder too) and must be zbench databases of this schema version with
 * at least one run; inputs with rows merge does not copy (traces of `zbench run
 * --trace`, calibration profiles, baselines) are refused rather than merged in
 * part, and so is a shard still being written (a run with status 'running', or a
 * write-ahead log that is not empty). All inputs go in one transaction: on any
 * error the output is left as it was.
 */
#ifndef ZB_MERGE_H
#define ZB_MERGE_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

typedef struct zb_merge_counts {
	int64_t runs, configs, predictions, tasks, events;
} zb_merge_counts;

/* Merge inputs[0 .. n) into out (opened with zb_store_open, no transaction open).
 * per_input (may be NULL) gets each input's counts. */
zb_status zb_store_merge(zb_store *out, const char *const *inputs, int n, zb_merge_counts *per_input,
			 zb_error *err);

/* The same into the database at out_path: an existing one in one transaction (left
 * as it was on any error); a new one built in a temporary beside it and renamed
 * into place when all inputs are in, so a refused input leaves no file. */
zb_status zb_store_merge_into(const char *out_path, const char *const *inputs, int n, zb_merge_counts *per_input,
			      zb_error *err);

#endif
