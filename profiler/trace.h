/*
 * trace.h - what really happened on the GPU, as CUPTI's activity API reports it,
 * held in plain C records that the results store writes into the tables of the
 * Nsight Systems SQLite export (results/store.h).
 *
 * A session:
 *
 *   zb_trace *t = zb_trace_create();
 *   if (zb_trace_start(t, &err))          CUPTI missing, no GPU, or another profiler
 *       ... run untraced ...              (nsys, ncu) holds it: err says which
 *   zb_execute(...)                       with zb_exec_options.trace set: every GPU
 *                                         task's API calls are tagged with its id
 *   zb_trace_stop(t, &err);               flush, count dropped records, disable
 *   zb_trace_resolve(t, graph, start, end, t0_ns);   records -> schedule task ids
 *   zb_store_add_trace(store, config_id, t, spans, t0_ns, &err);
 *   zb_trace_free(t);
 *
 * Recorded kinds: concurrent kernels, memcpy, memset, runtime and driver API calls
 * (for correlation and for the launch count), synchronization, CUPTI overhead, and
 * external correlation (the task tags). Only one session can be active in a process
 * (CUPTI is process-wide).
 *
 * Clock. Every timestamp is nanoseconds of CLOCK_MONOTONIC, the clock of
 * zb_now_ns() (exec/threadpool.h) and of the CPU spans (spans.h). zb_trace_start
 * registers zb_now_ns() with cuptiActivityRegisterTimestampCallback before it
 * enables any activity kind, so CUPTI itself stamps API records with that clock and
 * converts GPU timestamps (kernels, copies) to it by its own linear interpolation.
 * If the registration fails (an older CUPTI), the offset cuptiGetTimestamp() -
 * zb_now_ns() is measured (the narrowest of 64 bracketing reads) and subtracted
 * from every record instead; clock_method says which was used.
 *
 * Task tags. The executor calls zb_trace_push_task(id) before it issues a task's
 * work and zb_trace_pop_task() after (cuptiActivityPushExternalCorrelationId, kind
 * CUSTOM0, external id = task id + 1). CUPTI then emits one external-correlation
 * record per API call made meanwhile on that thread, which maps the call's
 * correlation id to the task; kernels, copies and memsets carry the correlation id
 * of the API call that launched them. A GPU record without a tag but on one of the
 * executor's streams (zb_trace_name_stream) is mapped by time instead: to the task
 * of that stream whose executor interval (CUDA events) contains its midpoint.
 *
 * Launch count. While active, a CUPTI callback counts successful kernel launch
 * calls (runtime launches, and driver launches made outside any runtime launch,
 * e.g. by cuBLASLt), independently of the activity buffers: every launch must
 * show up as one kernel record, and dropped records show up as a shortfall.
 */
#ifndef ZB_TRACE_H
#define ZB_TRACE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "core/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZB_TRACE_NO_TASK (-1)

/* nsys ENUM_NSYS_EVENT_CLASS ids of API records */
#define ZB_TRACE_CLASS_RUNTIME 0
#define ZB_TRACE_CLASS_DRIVER 1

/* External correlation kind used for task tags (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0). */
#define ZB_TRACE_EXT_KIND 3

typedef struct zb_tr_kernel {
	int64_t start, end;              /* ns, CLOCK_MONOTONIC */
	uint32_t device, context, stream, correlation;
	int32_t grid[3], block[3];
	int32_t static_smem, dynamic_smem;
	uint32_t local_per_thread, shared_executed;
	uint64_t local_total;
	int64_t grid_id;
	uint16_t registers;
	uint8_t launch_type, cache_config;
	uint32_t cluster[3];
	uint32_t mangled, demangled, short_name; /* string ids (zb_trace_string) */
	int32_t task;                    /* schedule task id or ZB_TRACE_NO_TASK */
} zb_tr_kernel;

typedef struct zb_tr_memcpy {
	int64_t start, end;
	uint64_t bytes;
	uint32_t device, context, stream, correlation;
	uint8_t copy_kind;               /* CUpti_ActivityMemcpyKind = nsys ENUM_CUDA_MEMCPY_OPER */
	uint8_t src_kind, dst_kind;      /* CUpti_ActivityMemoryKind = nsys ENUM_CUDA_MEM_KIND */
	uint8_t flags;
	int32_t task;
} zb_tr_memcpy;

typedef struct zb_tr_memset {
	int64_t start, end;
	uint64_t bytes;
	uint32_t device, context, stream, correlation, value;
	uint16_t mem_kind;
	int32_t task;
} zb_tr_memset;

typedef struct zb_tr_api {
	int64_t start, end;
	uint32_t process, thread, correlation, cbid, ret;
	uint8_t cls;                     /* ZB_TRACE_CLASS_RUNTIME or _DRIVER */
	uint32_t name;                   /* string id: "cudaLaunchKernel_v7000" */
	int32_t task;
} zb_tr_api;

typedef struct zb_tr_sync {
	int64_t start, end;
	uint32_t type;                   /* CUpti_ActivitySynchronizationType = ENUM_CUPTI_SYNC_TYPE */
	uint32_t context, stream, event, correlation;
	uint64_t sync_id;
	int32_t task;
} zb_tr_sync;

typedef struct zb_tr_overhead {
	int64_t start, end;
	uint32_t kind;                   /* CUpti_ActivityOverheadKind */
	uint32_t process, thread;        /* when the object is a thread, else 0 */
	uint32_t correlation;
} zb_tr_overhead;

/* An NVTX range or mark of the traced program (CUPTI_ACTIVITY_KIND_MARKER: the
 * program's NVTX calls reach CUPTI when NVTX_INJECTION64_PATH names libcupti). A
 * range's start and end records are paired by their marker id; a mark has
 * end == start. */
typedef struct zb_tr_nvtx {
	int64_t start, end;
	uint32_t process, thread;        /* of the start (push) record */
	uint32_t text, domain;           /* string ids ("" for the default domain) */
	uint32_t id;                     /* CUPTI's marker id */
	uint8_t event_type;              /* nsys ENUM_NSYS_EVENT_TYPE: 34 mark, 59 push/pop, 60 start/end */
	uint8_t kind;                    /* zb_nvtx_kind: the NVTX_EVENTS zbKind it is stored with */
} zb_tr_nvtx;

/* What a range of a foreign trace is (NVTX_EVENTS.zbKind): the program's own ranges
 * (NVTX, record_function, ProfilerStep#N; what zbench analyze cuts steps by), and
 * the other CPU ranges of an imported PyTorch profiler trace, kept but not read as
 * the program's: its operators, the GPU-side copies of its annotations, Python frames. */
typedef enum zb_nvtx_kind {
	ZB_NVTX_PROGRAM,       /* "program" */
	ZB_NVTX_CPU_OP,        /* "cpu_op" */
	ZB_NVTX_GPU_ANNOTATION,/* "gpu_annotation" */
	ZB_NVTX_PYTHON,        /* "python" */
	ZB_NVTX_KIND_COUNT
} zb_nvtx_kind;
const char *zb_nvtx_kind_name(zb_nvtx_kind k);

/* nsys NVTX event types */
#define ZB_NVTX_MARK 34
#define ZB_NVTX_PUSHPOP 59
#define ZB_NVTX_STARTEND 60

typedef struct zb_tr_extcorr {
	uint32_t correlation;
	uint32_t kind;
	uint64_t external;
} zb_tr_extcorr;

/* A stream the executor named: CUPTI stream id -> schedule resource. */
typedef struct zb_tr_stream {
	uint32_t device, context, stream;
	int resource;                    /* zb_resource */
	char name[32];
} zb_tr_stream;

typedef struct zb_tr_gpu {
	int valid;
	char name[128], uuid[48], bus[32];
	int64_t total_memory, l2_cache, memory_bandwidth, clock_hz;
	int sm_count, cc_major, cc_minor;
} zb_tr_gpu;

#define ZB_TRACE_VEC(type, name) \
	type *name;              \
	size_t n##name, cap_##name

typedef struct zb_trace {
	ZB_TRACE_VEC(zb_tr_kernel, kernels);
	ZB_TRACE_VEC(zb_tr_memcpy, memcpys);
	ZB_TRACE_VEC(zb_tr_memset, memsets);
	ZB_TRACE_VEC(zb_tr_api, apis);
	ZB_TRACE_VEC(zb_tr_sync, syncs);
	ZB_TRACE_VEC(zb_tr_overhead, overheads);
	ZB_TRACE_VEC(zb_tr_extcorr, extcorrs);
	ZB_TRACE_VEC(zb_tr_nvtx, nvtxs);     /* closed ranges and marks */
	ZB_TRACE_VEC(zb_tr_nvtx, nvtx_open); /* ranges whose end has not arrived yet */
	zb_tr_stream streams[16];
	int nstreams;
	zb_tr_gpu gpu;

	/* interned strings: ids 0..nstrings-1 */
	char **strings;
	size_t nstrings, cap_strings;
	uint32_t *hash;                  /* open addressing, id + 1, 0 = empty */
	size_t hash_cap;

	uint32_t pid;
	const char *clock_method;        /* "timestamp-callback", "offset", or "none" */
	int64_t clock_offset_ns;         /* subtracted from CUPTI timestamps (offset method) */
	int64_t clock_residual_ns;       /* cuptiGetTimestamp() - zb_now_ns() at stop */

	/* counters */
	uint64_t dropped;                /* records CUPTI dropped (cuptiActivityGetNumDroppedRecords) */
	uint64_t launches;               /* kernel launch calls counted by the callback */
	uint64_t buffers, buffer_failures, parse_errors, unknown_records, untimed_records;
	uint32_t kinds_refused;          /* optional activity kinds (sync, overhead, marker) or settings CUPTI refused */
	uint32_t kinds;                  /* what was asked for (trace_kinds.h ZB_TK_*) */
	uint64_t parse_ns;               /* time the buffer callbacks took to convert records (collector's cost) */
	uint32_t cupti_tid;              /* CUPTI's worker thread (delivered a buffer outside the final flush; 0: none) */
	uint64_t nvtx_unmatched;         /* NVTX range ends without a start */
	uint64_t mapped_tag, mapped_time, unmapped; /* GPU records by how they found their task */
	int64_t started_ns, stopped_ns;

	/* conversion caches of cupti_cuda.c: demangled and short-name ids (+ 1, 0 = not
	 * yet known) per mangled-name id; API name ids (+ 1) per class and callback id */
	uint32_t *dem_cache, *short_cache;
	size_t cap_cache;
	uint32_t api_names[2][1024];

	pthread_mutex_t mu;              /* held while a CUPTI buffer is appended */
} zb_trace;

zb_trace *zb_trace_create(void);
void zb_trace_free(zb_trace *t); /* NULL is fine */

/* Append a record (a copy). The task field is kept as given. */
void zb_trace_add_kernel(zb_trace *t, const zb_tr_kernel *r);
void zb_trace_add_memcpy(zb_trace *t, const zb_tr_memcpy *r);
void zb_trace_add_memset(zb_trace *t, const zb_tr_memset *r);
void zb_trace_add_api(zb_trace *t, const zb_tr_api *r);
void zb_trace_add_sync(zb_trace *t, const zb_tr_sync *r);
void zb_trace_add_overhead(zb_trace *t, const zb_tr_overhead *r);
void zb_trace_add_extcorr(zb_trace *t, const zb_tr_extcorr *r);
void zb_trace_add_stream(zb_trace *t, const zb_tr_stream *s);
void zb_trace_add_nvtx(zb_trace *t, const zb_tr_nvtx *r);
/* The two halves of an NVTX range: begin keeps r open (r->end ignored); end closes
 * the open range with that id (returns 0 when none is open: counted in
 * nvtx_unmatched). A range still open at stop stays out of nvtxs. */
void zb_trace_nvtx_begin(zb_trace *t, const zb_tr_nvtx *r);
int zb_trace_nvtx_end(zb_trace *t, uint32_t id, int64_t end, uint32_t thread);

/* Intern a string (NULL -> ""), returning its id; zb_trace_string reverses it. */
uint32_t zb_trace_intern(zb_trace *t, const char *s);
const char *zb_trace_string(const zb_trace *t, uint32_t id);

/* The base name of a demangled C++ function name, as nsys's shortName: no return
 * type, scope, template arguments or parameter list ("void ns::adam<float, 4>(float*)"
 * -> "adam"). Writes at most n bytes (always terminated). */
void zb_trace_short_name(const char *demangled, char *out, size_t n);

/* Map every record to its schedule task (see the header comment): tags first, then
 * time on the executor's streams. start/end: the executor's per-task intervals in
 * seconds from time zero t0_ns (NULL: tags only). Counts go to mapped_tag,
 * mapped_time and unmapped (GPU records only). */
void zb_trace_resolve(zb_trace *t, const zb_graph *g, const double *start, const double *end, int64_t t0_ns);

/* Summary figures of a trace, for the run's report and the tests. */
typedef struct zb_trace_summary {
	size_t kernels, memcpys, memsets, apis, syncs, overheads;
	double h2d_bytes, d2h_bytes, other_copy_bytes; /* tagged with a task (task >= 0) */
	double kernel_ns;                              /* sum of kernel durations */
	size_t tasks_seen;                             /* distinct tasks with a GPU record */
} zb_trace_summary;
void zb_trace_summarize(const zb_trace *t, zb_trace_summary *s);

/* Fill a trace with a plausible synthetic workload: per "task" one runtime launch, one
 * driver call, a kernel or a copy, and now and then a memset and a sync; for tests
 * and the insert benchmark. Records are tagged with tasks 0..ntasks-1. */
void zb_trace_fill_synthetic(zb_trace *t, size_t ntasks, int64_t t0_ns);

/* ---- CUPTI (profiler/cupti_cuda.c; a build without CUDA says so) ---------------- */

/* Which kinds the next zb_trace_start records and whether it counts launches: a
 * set of trace_kinds.h bits (default ZB_TK_ALL, as zbench's own sessions want;
 * `zbench trace` asks for ZB_TK_TRACE_DEFAULT unless --kinds/--api/--nvtx all say
 * more). Kernels, copies and memsets are required when asked for: a CUPTI that
 * refuses one fails the start; sync, overhead and markers are optional. */
void zb_trace_set_kinds(unsigned kinds);

/* Start the process's tracing session into t. Fails (ZB_E_NOCUDA, ZB_E_NOGPU,
 * ZB_E_CUDA) with one line naming the reason when CUPTI cannot trace here; nothing
 * stays enabled then. */
zb_status zb_trace_start(zb_trace *t, zb_error *err);
/* Flush every buffer, read the dropped count, disable, fill t->gpu. NULL or an
 * inactive trace is fine. */
zb_status zb_trace_stop(zb_trace *t, zb_error *err);
int zb_trace_active(void);
/* zb_trace_stop for a process zbench did not write (the injection library,
 * inject/inject.c): no CUDA runtime calls (no device synchronize, no GPU info),
 * since the program's runtime may be gone at exit or never have been used. */
zb_status zb_trace_stop_foreign(zb_trace *t, zb_error *err);

/* Tag the calling thread's CUDA calls with a task until the matching pop (no-ops
 * when no session is active). */
void zb_trace_push_task(uint32_t task);
void zb_trace_pop_task(void);

/* Record that stream (a cudaStream_t) carries resource `resource` (zb_resource). */
void zb_trace_name_stream(void *cuda_stream, int resource, const char *name);

/* Convert one CUPTI activity record (a CUpti_Activity *) into t: the function the
 * buffer-completed callback calls for every record, exposed for tests that feed it
 * synthetic records. Unknown kinds are counted, not stored. */
void zb_trace_add_cupti_record(zb_trace *t, const void *record);

#ifdef __cplusplus
}
#endif

#endif
