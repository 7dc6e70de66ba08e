/*
 * trace_kinds.h - what a tracing session records: a set of CUPTI activity kinds
 * (and the launch counter), as bits, and its text form for `zbench trace --kinds`.
 *
 * What each kind costs the traced program (the reason `zbench trace` does not
 * record everything by default): runtime and driver API records are one record
 * per CUDA call, and a Python training loop makes ~10^5 of them a step (PyTorch's
 * cudaGetDevice, event queries, stream queries), each timestamped and buffered on
 * the calling thread; the launch counter is a CUPTI callback on the enter and exit
 * of every kernel launch, runtime and driver (four a launch); kernel, copy and
 * memset records are one per GPU operation, a few thousand a step; sync records
 * one per synchronizing call or query that completed, overhead records a few.
 * `zbench analyze` reads kernels, copies, memsets,
 * NVTX ranges and the /proc CPU samples only: API records and the launch count are
 * for a reader who wants them (correlation, the kernel-count cross-check).
 *
 * Text: a comma-separated list of names (kernel, memcpy, memset, sync, overhead,
 * runtime, driver, launches; api = runtime + driver; default; all; none). A list
 * whose first item has no sign is the set itself ("kernel,memcpy"); items with a
 * sign change the default ("+api,-sync").
 */
#ifndef ZB_TRACE_KINDS_H
#define ZB_TRACE_KINDS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	ZB_TK_KERNEL = 1u << 0,   /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL */
	ZB_TK_MEMCPY = 1u << 1,
	ZB_TK_MEMSET = 1u << 2,
	ZB_TK_SYNC = 1u << 3,     /* completed syncs only (cuptiActivityEnableAllSyncRecords(0)) */
	ZB_TK_OVERHEAD = 1u << 4, /* CUPTI's own overhead (buffer flushes, instrumentation) */
	ZB_TK_RUNTIME = 1u << 5,
	ZB_TK_DRIVER = 1u << 6,
	ZB_TK_LAUNCHES = 1u << 7, /* the kernel-launch counter (callbacks), trace.h */
	ZB_TK_MARKER = 1u << 8,   /* NVTX through CUPTI's markers (zbench trace --nvtx all) */
};
#define ZB_TK_API (ZB_TK_RUNTIME | ZB_TK_DRIVER)
/* zbench's own sessions (zbench run --trace): everything */
#define ZB_TK_ALL 0x1ffu
/* zbench trace: what analyze reads, and CUPTI's account of its own overhead. Sync
 * records are out: analyze does not read them, and CUPTI must intercept every
 * synchronizing call and query (event and stream queries too) to make them. */
#define ZB_TK_TRACE_DEFAULT (ZB_TK_KERNEL | ZB_TK_MEMCPY | ZB_TK_MEMSET | ZB_TK_OVERHEAD)

/* Parse text (see above; markers are not a name: --nvtx decides them) into *kinds.
 * 0 on success; -1 with a one-line message in err (the item that is wrong). */
int zb_trace_kinds_parse(const char *text, unsigned *kinds, char *err, size_t n);

/* The names of the set, comma-separated ("kernel,memcpy,memset"; "none"). */
void zb_trace_kinds_format(unsigned kinds, char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
