/*
 * import.h - `zbench import FILE`: a trace another tool wrote, in the formats people
 * have, stored as a run of kind "import" in the Nsight Systems export tables that
 * `analyze`, `compare --predict` and `export` read (foreign.h):
 *
 *   an Nsight Systems SQLite export   (nsys export --type sqlite): nsys_import.c
 *   a PyTorch profiler / Kineto trace (Chrome-trace JSON, .json or .json.gz, as
 *                                      torch.profiler's export_chrome_trace writes
 *                                      it): kineto_import.c, read by profiler/kineto.h
 *
 * The format comes from the file's first bytes (SQLite's header; gzip's magic or
 * JSON), not its name; an .nsys-rep (or .qdrep) report is recognised by its name and
 * refused with the exact nsys command that exports it. Anything else is refused in
 * one line that lists the formats accepted. Each import is all or nothing.
 */
#ifndef ZB_IMPORT_H
#define ZB_IMPORT_H

#include <stdint.h>

#include "common/error.h"
#include "profiler/kineto.h"
#include "results/store.h"

typedef enum zb_import_format {
	ZB_IMPORT_NSYS_SQLITE,
	ZB_IMPORT_KINETO,
	ZB_IMPORT_FORMAT_COUNT
} zb_import_format;

/* "Nsight Systems SQLite export", "PyTorch profiler trace (Kineto)" */
const char *zb_import_format_name(zb_import_format f);

/* The format of path; ZB_E_INPUT naming the file and what to do otherwise. */
zb_status zb_import_detect(const char *path, zb_import_format *f, zb_error *err);

typedef struct zb_import_result {
	zb_import_format format;
	int64_t run_id, config_id;
	int64_t left_out;          /* an Nsight export: rows left out (times not integers, or end < start) */
	zb_kineto_counts kineto;   /* a Kineto trace: what was read and left out */
} zb_import_result;

/* Detect and import path (run row from info). */
zb_status zb_store_import(zb_store *s, const char *path, const zb_run_info *info, zb_import_result *r,
			  zb_error *err);

/* A Kineto trace, plain or gzip (the reader of zb_store_import). */
zb_status zb_store_import_kineto(zb_store *s, const char *path, const zb_run_info *info, int64_t *run_id,
				 int64_t *config_id, zb_kineto_counts *counts, zb_error *err);

#endif
