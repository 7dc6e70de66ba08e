/*
 * export.h - one stored configuration's timelines as a file other tools open
 * (zbench export): Perfetto's JSON or CSV.
 *
 *   perfetto  Chrome Trace Event JSON (the Perfetto UI and chrome://tracing open
 *             it): process 1 "predicted" with one track per resource of the
 *             schedule; process 2 "measured" with one track per CUDA stream
 *             (kernels, copies, memsets from CUPTI) and one per CPU thread (CPU
 *             spans and CUDA API calls) when the run was traced (zbench run
 *             --trace), else one track per resource from the executor's own
 *             timing. Times in microseconds as the format wants (ns precision),
 *             shifted so the earliest event is at 0; otherData.time_zero_us says
 *             where the run's time zero landed. An interval that overlaps the open
 *             one of its track only partly goes to an overlap track of its own.
 *   csv       one row per interval: source, track, task, kind, name, start_ns,
 *             end_ns, duration_ns, bytes (times from time zero).
 *
 * The file is written to FILE.tmp and renamed when complete, so a failure leaves
 * no partial file behind (a device or pipe, /dev/stdout, is written in place).
 */
#ifndef ZB_EXPORT_H
#define ZB_EXPORT_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

typedef enum zb_export_format { ZB_EXPORT_PERFETTO, ZB_EXPORT_CSV } zb_export_format;

/* "perfetto" (or "json"), "csv"; else ZB_E_INPUT naming the known ones. */
zb_status zb_export_format_parse(const char *s, zb_export_format *out, zb_error *err);

typedef struct zb_export_result {
	int64_t config_id;   /* the configuration written */
	int64_t rows;        /* intervals */
	int64_t overlaps;    /* of those, on overlap tracks (perfetto) */
} zb_export_result;

/* Write configuration `which` of s (its id, or "latest": the newest configuration
 * with a timeline of any kind: events, predicted or measured, or trace records) to path. Unknown or empty configuration: ZB_E_INPUT. */
zb_status zb_export(zb_store *s, const char *which, zb_export_format fmt, const char *path, zb_export_result *res,
		    zb_error *err);

#endif
