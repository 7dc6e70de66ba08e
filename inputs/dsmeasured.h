/*
 * dsmeasured.h - measured DeepSpeed runs as a TSV table, the input of
 * `zbench calibrate --deepspeed --measured FILE` and of the accuracy test.
 *
 * Format (data/deepspeed-h200-table.tsv): '#' lines are comments; the table
 * starts at a header line whose first column is "config" and that has the columns
 *   config  zero  step_ms  gpu_peak_GiB  host_rss_GiB
 * in any order, optionally also model, seq, micro_batch, sub_group_size (values
 * for the whole row; missing ones come from the command line) and gpu_busy_ms (the
 * step's GPU kernel busy time, "-" where not measured; calibrate fits to it too). A model is a preset
 * name or a .json file: a Hugging Face config.json or a zbench model file (a
 * relative path is tried as given, then beside the table). The table ends at a
 * blank line, a comment line or the end of the file (a second table below it, like
 * the profiled breakdown of the shared file, is not read).
 *
 * The zero column says in words what DeepSpeed ran, e.g. "stage 3,
 * offload_optimizer cpu ratio 0.5 (Twin-Flow)": words read are "stage N",
 * "offload_optimizer cpu", "ratio X", "overlap_comm true|false", "offload_param
 * cpu"; without offload_optimizer the optimizer is on the GPU. overlap_comm
 * defaults as DeepSpeed's: true for stage 3, false below.
 */
#ifndef ZB_DSMEASURED_H
#define ZB_DSMEASURED_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

/* Steps of one run kept for the rank test of DeepSpeed's order (analysis/dsorder.h). A
 * table's steps_ms column lists every step; the first warmup_steps (column, default 3:
 * ds_step.py's) are left out. */
#define ZB_DS_MAX_STEPS 64
#define ZB_DS_DEFAULT_WARMUP 3

typedef struct zb_ds_row {
	char name[64];
	char zero[192];
	double step_s;           /* measured median step time */
	double gpu_peak_B;       /* torch.cuda.max_memory_allocated (0: not given) */
	double host_rss_B;       /* peak RSS (0: not given) */
	double gpu_busy_s;       /* GPU kernel busy time of one step (the union of its kernel
	                            intervals, profiled or traced; 0: not given) */
	char model[64];          /* "" : from the command line */
	int seq, micro_batch;    /* 0 : from the command line */
	int64_t sub_group_size;  /* 0 : from the command line */
	double steps_s[ZB_DS_MAX_STEPS]; /* the steps after the warm-up, in order (the samples
	                                    step_s is the median of); nsteps 0: not given */
	int nsteps;
	int line;                /* line in the file, for messages */
	int have_shape;          /* shape is the row's model (JSON lines, dsmeasured_jsonl.h) */
	zb_model shape;
} zb_ds_row;

typedef struct zb_ds_measured {
	char path[256];
	zb_ds_row *rows;
	int n;
} zb_ds_measured;

zb_status zb_ds_measured_load(const char *path, zb_ds_measured *out, zb_error *err);

/* Every file's rows in one table (several sessions of the same configurations, or other
 * shapes). With more than one file, a row of a table without a model column gets
 * base_model as its shape (JSON lines carry their own), so rows of one model compare. */
zb_status zb_ds_measured_load_many(const char *const *paths, int n, const zb_model *base_model,
				   zb_ds_measured *out, zb_error *err);

/* A model by preset name or .json file (Hugging Face config.json, else a zbench
 * model file); a relative file not found as given is looked for in dir_of's
 * directory (dir_of may be NULL). */
zb_status zb_ds_model_named(const char *name, const char *dir_of, zb_model *out, zb_error *err);
void zb_ds_measured_free(zb_ds_measured *m);

/* The configuration of a row: base (hardware, model, batch, framework profile, from
 * the command line) with the row's model/seq/micro-batch/sub-group and its zero
 * column applied; framework deepspeed; a Twin-Flow ratio quantized to whole
 * sub-groups as DeepSpeed does. */
zb_status zb_ds_row_config(const zb_ds_row *r, const char *path, const zb_config *base, zb_config *out,
			   zb_error *err);

#endif
