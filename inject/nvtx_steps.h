/*
 * nvtx_steps.h - `zbench trace --nvtx steps` (the default): libzbench_inject.so as
 * the program's NVTX injection (NVTX_INJECTION64_PATH names it; NVTX calls
 * InitializeInjectionNvtx2 at the program's first NVTX call) keeping only the
 * ranges and marks whose name holds the step text (ZB_TRACE_STEP_MATCH, default
 * "step", case-insensitive).
 *
 * Why not CUPTI's NVTX: with NVTX_INJECTION64_PATH = libcupti and the MARKER
 * activity kind on, every push and pop becomes an activity record (name copied,
 * ids, timestamps): ~2 us a range measured on the H200 with DeepSpeed ZeRO-3,
 * whose instrument_w_nvtx wraps every stage-3 hook (170 000 ranges in a 1 s step,
 * +58 % step time). Here a call whose name does not match costs a substring test
 * and a thread-local depth counter; only a match takes a clock read, a malloc
 * and a mutex (once or a few times a step). Ranges are kept per thread as a
 * stack of 64 levels (push/pop), start/end ranges in a shared list.
 *
 * A kept range that is outermost among the kept ones on its thread is a step:
 * each appends a byte to <ZB_TRACE_SPOOL>/<pid>.steps (zbench trace --steps N
 * watches it), and with ZB_TRACE_STOP_STEPS = N the N-th one ends the session
 * and writes the spool file (zb_inject_finish) before the byte is written, so the
 * SIGINT zbench then sends cannot lose the trace.
 */
#ifndef ZB_NVTX_STEPS_H
#define ZB_NVTX_STEPS_H

#include "profiler/trace.h"

/* Move the kept ranges into t (event types push/pop, start/end, mark; this
 * process's pid) and keep no more from now on. */
void zb_nvtx_steps_take(zb_trace *t);
/* Ranges kept so far (a process without CUDA still writes them). */
size_t zb_nvtx_steps_count(void);

/* Provided by inject.c: stop the CUPTI session (if any), add the kept ranges and
 * write this process's spool file; only once, only in the process that started. */
void zb_inject_finish(void);
/* Provided by inject.c: the exit handler, registered once per process. */
void zb_inject_at_exit(void);

#endif
