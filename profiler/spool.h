/*
 * spool.h - a trace (trace.h) as a file: how each traced process of `zbench trace`
 * hands its records to the zbench process that writes the database.
 *
 * The injection library (inject/inject.c) collects in memory, like zbench's own
 * sessions, and at the process's exit writes one spool file <dir>/<pid>.zbt
 * (written as <pid>.zbt.tmp and renamed, so a file that exists is complete). The
 * format is this build's in-memory layout: a header (magic, format version, the
 * sizes of the record structs, so a file of another build is refused rather than
 * misread), the counters, each record array raw, then the string pool. Both sides
 * are the same zbench build (the library lies beside the binary).
 */
#ifndef ZB_SPOOL_H
#define ZB_SPOOL_H

#include "common/error.h"
#include "profiler/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZB_SPOOL_SUFFIX ".zbt"

/* Write t to path (atomically: path.tmp, then rename). Not thread-safe with
 * writers of t: call after zb_trace_stop. */
zb_status zb_spool_write(const zb_trace *t, const char *path, zb_error *err);

/* Read a spool file into a new trace (*out, free with zb_trace_free). A truncated
 * or foreign file is ZB_E_INPUT naming the file and what is wrong. */
zb_status zb_spool_read(const char *path, zb_trace **out, zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
