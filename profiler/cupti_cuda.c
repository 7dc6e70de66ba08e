/*
 * cupti_cuda.c - the CUPTI side of trace.h: one process-wide tracing session.
 *
 * Buffers: CUPTI asks for empty buffers (buffer_requested, 8 MiB each, malloc'd)
 * and hands back full ones (buffer_completed) from its own worker thread, from the
 * thread that calls cuptiActivityFlushAll, or from several threads at once. A
 * completed buffer is parsed while holding the trace's mutex, so records of one
 * buffer land together and appends never race; the parse is the only work done
 * there (a few hundred ns a record) and the buffer is freed right after. A buffer
 * that cannot be allocated is counted (buffer_failures): CUPTI then drops records,
 * and cuptiActivityGetNumDroppedRecords reports how many.
 *
 * The sink is an atomic pointer read by the callbacks; zb_trace_stop clears it and
 * waits until no callback is still inside a buffer, so the trace can be freed.
 *
 * Kinds: the set of trace_kinds.h (zb_trace_set_kinds; zbench's own sessions: all).
 *
 * Launch count (ZB_TK_LAUNCHES): a CUPTI callback subscription on the launch functions only (runtime:
 * cudaLaunch*, __cudaLaunchKernel; driver: cuLaunch*). Runtime launches count on
 * their successful exit; driver launches count only outside any runtime launch on
 * the same thread (a runtime launch may reach the driver's launch internally), so
 * a kernel launched by cuBLASLt straight through the driver counts once too.
 */
#include "profiler/trace.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "profiler/trace_kinds.h"

/* libstdc++'s demangler (the CUDA build links -lstdc++). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define BUF_SIZE ((size_t)8 << 20)
#define BUF_ALIGN 8

static const struct {
	CUpti_ActivityKind kind;
	unsigned bit; /* trace_kinds.h; 0: always */
} kinds[] = {
	{ CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, 0 }, /* first: tags must precede the API records */
	{ CUPTI_ACTIVITY_KIND_RUNTIME, ZB_TK_RUNTIME },
	{ CUPTI_ACTIVITY_KIND_DRIVER, ZB_TK_DRIVER },
	{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, ZB_TK_KERNEL },
	{ CUPTI_ACTIVITY_KIND_MEMCPY, ZB_TK_MEMCPY },
	{ CUPTI_ACTIVITY_KIND_MEMSET, ZB_TK_MEMSET },
	{ CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, ZB_TK_SYNC }, /* from here on optional: a CUPTI that */
	{ CUPTI_ACTIVITY_KIND_OVERHEAD, ZB_TK_OVERHEAD },    /* refuses them traces without them */
	{ CUPTI_ACTIVITY_KIND_MARKER, ZB_TK_MARKER },        /* NVTX (only with NVTX_INJECTION64_PATH) */
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define NREQUIRED 6

static unsigned want = ZB_TK_ALL; /* zb_trace_set_kinds */

void zb_trace_set_kinds(unsigned k)
{
	want = k;
}

/* Left out by zb_trace_set_kinds: neither enabled nor disabled. */
static int unwanted(size_t i)
{
	return kinds[i].bit && !(want & kinds[i].bit);
}

static const CUpti_CallbackId runtime_launches[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};
static const CUpti_CallbackId driver_launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

static struct {
	pthread_mutex_t mu;          /* start / stop */
	zb_trace *owner;             /* the session's trace, under mu */
	_Atomic(zb_trace *) sink;    /* where completed buffers go */
	atomic_int active;           /* tags and launch counting on */
	atomic_int in_callback;      /* buffer callbacks running now */
	atomic_ullong launches, buffers, buffer_failures, lost_buffers;
	atomic_uint worker_tid;      /* the thread that delivered the last buffer outside a flush */
	atomic_int flushing;         /* stop_session's flushes: their buffers come on its thread */
	CUpti_SubscriberHandle sub;
	int subscribed;
	int callbacks_registered;
} G = { .mu = PTHREAD_MUTEX_INITIALIZER };

static _Thread_local int rt_depth;   /* runtime launches in progress on this thread */
static _Thread_local int tag_depth;  /* task tags pushed by this thread */

static const char *cupti_str(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static zb_status cupti_fail(zb_error *err, CUptiResult r, const char *call)
{
	zb_status st = r == CUPTI_ERROR_NOT_INITIALIZED || r == CUPTI_ERROR_INVALID_DEVICE ? ZB_E_NOGPU : ZB_E_CUDA;
	const char *why = "";
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		why = " (another profiler such as nsys or ncu holds CUPTI)";
	else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
		why = " (profiling needs privileges here)";
	else if (r == CUPTI_ERROR_NOT_INITIALIZED)
		why = " (no usable CUDA driver or GPU)";
	return zb_fail(err, st, "CUPTI cannot trace here: %s failed: %s%s", call, cupti_str(r), why);
}

static uint64_t CUPTIAPI now_cb(void) { return (uint64_t)zb_now_ns(); }

/* ---- records -------------------------------------------------------------------- */

static int64_t ts(const zb_trace *t, uint64_t v) { return (int64_t)v - t->clock_offset_ns; }

/* mangled, demangled and short-name ids of a kernel name (cached per mangled id) */
static void kernel_names(zb_trace *t, const char *name, zb_tr_kernel *k)
{
	uint32_t m = zb_trace_intern(t, name ? name : "");
	k->mangled = m;
	if (m >= t->cap_cache) {
		size_t cap = t->cap_cache ? t->cap_cache : 256;
		while (cap <= m)
			cap *= 2;
		t->dem_cache = zb_xrealloc(t->dem_cache, cap * sizeof *t->dem_cache);
		t->short_cache = zb_xrealloc(t->short_cache, cap * sizeof *t->short_cache);
		memset(t->dem_cache + t->cap_cache, 0, (cap - t->cap_cache) * sizeof *t->dem_cache);
		memset(t->short_cache + t->cap_cache, 0, (cap - t->cap_cache) * sizeof *t->short_cache);
		t->cap_cache = cap;
	}
	if (!t->dem_cache[m]) {
		int status = -1;
		char *dem = name && name[0] == '_' && name[1] == 'Z' ? __cxa_demangle(name, NULL, NULL, &status) : NULL;
		const char *d = status == 0 && dem ? dem : zb_trace_string(t, m);
		char sn[512];
		zb_trace_short_name(d, sn, sizeof sn);
		uint32_t did = zb_trace_intern(t, d);
		free(dem);
		t->dem_cache[m] = did + 1;
		t->short_cache[m] = zb_trace_intern(t, sn) + 1;
	}
	k->demangled = t->dem_cache[m] - 1;
	k->short_name = t->short_cache[m] - 1;
}

static uint32_t api_name(zb_trace *t, int cls, uint32_t cbid)
{
	if (cbid < 1024 && t->api_names[cls][cbid])
		return t->api_names[cls][cbid] - 1;
	const char *name = NULL;
	CUpti_CallbackDomain dom = cls == ZB_TRACE_CLASS_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
	char buf[64];
	if (cuptiGetCallbackName(dom, cbid, &name) != CUPTI_SUCCESS || !name) {
		snprintf(buf, sizeof buf, "%s_cbid_%u", cls == ZB_TRACE_CLASS_RUNTIME ? "runtime" : "driver", cbid);
		name = buf;
	}
	uint32_t id = zb_trace_intern(t, name);
	if (cbid < 1024)
		t->api_names[cls][cbid] = id + 1;
	return id;
}

void zb_trace_add_cupti_record(zb_trace *t, const void *record)
{
	const CUpti_Activity *rec = record;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = record;
		if (k->start == 0 && k->end == 0) {
			t->untimed_records++;
			return;
		}
		zb_tr_kernel r = {
			.start = ts(t, k->start), .end = ts(t, k->end), .device = k->deviceId, .context = k->contextId,
			.stream = k->streamId, .correlation = k->correlationId,
			.grid = { k->gridX, k->gridY, k->gridZ }, .block = { k->blockX, k->blockY, k->blockZ },
			.static_smem = k->staticSharedMemory, .dynamic_smem = k->dynamicSharedMemory,
			.local_per_thread = k->localMemoryPerThread, .shared_executed = k->sharedMemoryExecuted,
			.local_total = k->localMemoryTotal_v2 ? k->localMemoryTotal_v2 : k->localMemoryTotal,
			.grid_id = k->gridId, .registers = k->registersPerThread, .launch_type = k->launchType,
			.cache_config = k->cacheConfig.both, .cluster = { k->clusterX, k->clusterY, k->clusterZ },
			.task = ZB_TRACE_NO_TASK,
		};
		kernel_names(t, k->name, &r);
		zb_trace_add_kernel(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *c = record;
		if (c->start == 0 && c->end == 0) {
			t->untimed_records++;
			return;
		}
		zb_tr_memcpy r = { .start = ts(t, c->start), .end = ts(t, c->end), .bytes = c->bytes,
				   .device = c->deviceId, .context = c->contextId, .stream = c->streamId,
				   .correlation = c->correlationId, .copy_kind = c->copyKind, .src_kind = c->srcKind,
				   .dst_kind = c->dstKind, .flags = c->flags, .task = ZB_TRACE_NO_TASK };
		zb_trace_add_memcpy(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *c = record;
		if (c->start == 0 && c->end == 0) {
			t->untimed_records++;
			return;
		}
		zb_tr_memset r = { .start = ts(t, c->start), .end = ts(t, c->end), .bytes = c->bytes,
				   .device = c->deviceId, .context = c->contextId, .stream = c->streamId,
				   .correlation = c->correlationId, .value = c->value, .mem_kind = c->memoryKind,
				   .task = ZB_TRACE_NO_TASK };
		zb_trace_add_memset(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = record;
		int cls = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? ZB_TRACE_CLASS_RUNTIME : ZB_TRACE_CLASS_DRIVER;
		zb_tr_api r = { .start = ts(t, a->start), .end = ts(t, a->end), .process = a->processId,
				.thread = a->threadId, .correlation = a->correlationId, .cbid = a->cbid,
				.ret = a->returnValue, .cls = (uint8_t)cls, .name = api_name(t, cls, a->cbid),
				.task = ZB_TRACE_NO_TASK };
		zb_trace_add_api(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = record;
		zb_tr_sync r = { .start = ts(t, s->start), .end = ts(t, s->end), .type = s->type,
				 .context = s->contextId, .stream = s->streamId, .event = s->cudaEventId,
				 .correlation = s->correlationId, .sync_id = s->cudaEventSyncId, .task = ZB_TRACE_NO_TASK };
		zb_trace_add_sync(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = record;
		zb_tr_overhead r = { .start = ts(t, o->start), .end = ts(t, o->end), .kind = o->overheadKind,
				     .correlation = o->correlationId };
		if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
			r.process = o->objectId.pt.processId;
			r.thread = o->objectId.pt.threadId;
		}
		zb_trace_add_overhead(t, &r);
		return;
	}
	case CUPTI_ACTIVITY_KIND_MARKER: {
		const CUpti_ActivityMarker2 *m = record;
		uint32_t pid = 0, tid = 0;
		if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
			pid = m->objectId.pt.processId;
			tid = m->objectId.pt.threadId;
		}
		if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
			(void)zb_trace_nvtx_end(t, m->id, ts(t, m->timestamp), tid);
			return;
		}
		zb_tr_nvtx r = { .start = ts(t, m->timestamp), .end = ts(t, m->timestamp), .process = pid, .thread = tid,
				 .text = zb_trace_intern(t, m->name), .domain = zb_trace_intern(t, m->domain), .id = m->id,
				 .event_type = ZB_NVTX_PUSHPOP };
		if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
			zb_trace_nvtx_begin(t, &r);
		} else {
			r.event_type = ZB_NVTX_MARK;
			zb_trace_add_nvtx(t, &r);
		}
		return;
	}
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
		const CUpti_ActivityExternalCorrelation *e = record;
		zb_tr_extcorr r = { .correlation = e->correlationId, .kind = e->externalKind, .external = e->externalId };
		zb_trace_add_extcorr(t, &r);
		return;
	}
	default:
		t->unknown_records++;
		return;
	}
}

/* ---- buffers -------------------------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0; /* as many as fit */
	*buffer = aligned_alloc(BUF_ALIGN, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0;
	if (!*buffer)
		atomic_fetch_add(&G.buffer_failures, 1);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)ctx, (void)stream, (void)size;
	atomic_fetch_add(&G.in_callback, 1);
	zb_trace *t = atomic_load(&G.sink);
	if (!t) {
		if (valid > 0)
			atomic_fetch_add(&G.lost_buffers, 1);
	} else if (valid > 0) {
		atomic_fetch_add(&G.buffers, 1);
		if (!atomic_load(&G.flushing))
			atomic_store(&G.worker_tid, (unsigned)syscall(SYS_gettid));
		int64_t t0 = zb_now_ns();
		pthread_mutex_lock(&t->mu);
		CUpti_Activity *rec = NULL;
		for (;;) {
			CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
			if (r == CUPTI_SUCCESS) {
				zb_trace_add_cupti_record(t, rec);
				continue;
			}
			if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
				t->parse_errors++;
			break;
		}
		t->parse_ns += (uint64_t)(zb_now_ns() - t0); /* the collector's own cost, lock wait included */
		pthread_mutex_unlock(&t->mu);
	}
	free(buffer);
	atomic_fetch_sub(&G.in_callback, 1);
}

/* ---- launch counting ---------------------------------------------------------- */

static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata, (void)cbid;
	const CUpti_CallbackData *cd = data;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (cd->callbackSite == CUPTI_API_ENTER) {
			rt_depth++;
			return;
		}
		if (rt_depth > 0)
			rt_depth--;
		if (rt_depth == 0 && atomic_load_explicit(&G.active, memory_order_relaxed) && cd->functionReturnValue &&
		    *(const cudaError_t *)cd->functionReturnValue == cudaSuccess)
			atomic_fetch_add(&G.launches, 1);
	} else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		if (cd->callbackSite == CUPTI_API_EXIT && rt_depth == 0 &&
		    atomic_load_explicit(&G.active, memory_order_relaxed) && cd->functionReturnValue &&
		    *(const CUresult *)cd->functionReturnValue == CUDA_SUCCESS)
			atomic_fetch_add(&G.launches, 1);
	}
}

/* ---- clock --------------------------------------------------------------------- */

/* cuptiGetTimestamp() - zb_now_ns(), from the narrowest of 64 bracketing reads;
 * 0 with *ok = 0 when CUPTI cannot give a timestamp. */
static int64_t cupti_offset(int *ok)
{
	int64_t best = INT64_MAX, off = 0;
	*ok = 0;
	for (int i = 0; i < 64; i++) {
		uint64_t c = 0;
		int64_t a = zb_now_ns();
		CUptiResult r = cuptiGetTimestamp(&c);
		int64_t b = zb_now_ns();
		if (r != CUPTI_SUCCESS)
			return 0;
		if (b - a < best) {
			best = b - a;
			off = (int64_t)c - (a + (b - a) / 2);
			*ok = 1;
		}
	}
	return off;
}

/* ---- session ------------------------------------------------------------------- */

static void disable_all(void)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (!unwanted(i))
			(void)cuptiActivityDisable(kinds[i].kind);
}

static void unsubscribe(void)
{
	if (G.subscribed) {
		(void)cuptiUnsubscribe(G.sub);
		G.subscribed = 0;
	}
}

zb_status zb_trace_start(zb_trace *t, zb_error *err)
{
	pthread_mutex_lock(&G.mu);
	if (G.owner) {
		pthread_mutex_unlock(&G.mu);
		return zb_fail(err, ZB_E_INTERNAL, "a trace session is already active in this process");
	}
	zb_status st = ZB_OK;
	CUptiResult r;
	size_t nenabled = 0;
	atomic_store(&G.launches, 0);
	atomic_store(&G.buffers, 0);
	atomic_store(&G.buffer_failures, 0);
	atomic_store(&G.lost_buffers, 0);
	atomic_store(&G.worker_tid, 0);
	atomic_store(&G.flushing, 0);

	/* the launch counter: also the first call to find out whether CUPTI is free
	 * (subscribed even when launches are not counted: then no callback is on) */
	r = cuptiSubscribe(&G.sub, on_launch, NULL);
	if (r != CUPTI_SUCCESS) {
		st = cupti_fail(err, r, "cuptiSubscribe");
		goto fail;
	}
	G.subscribed = 1;
	/* the two launch functions everything uses must be counted; an old or exotic
	 * one this CUPTI does not know is only skipped */
	size_t nrt = want & ZB_TK_LAUNCHES ? sizeof runtime_launches / sizeof runtime_launches[0] : 0;
	size_t ndrv = want & ZB_TK_LAUNCHES ? sizeof driver_launches / sizeof driver_launches[0] : 0;
	for (size_t i = 0; i < nrt && !st; i++)
		if ((r = cuptiEnableCallback(1, G.sub, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_launches[i])) != CUPTI_SUCCESS &&
		    runtime_launches[i] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
			st = cupti_fail(err, r, "cuptiEnableCallback (cudaLaunchKernel)");
	for (size_t i = 0; i < ndrv && !st; i++)
		if ((r = cuptiEnableCallback(1, G.sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_launches[i])) != CUPTI_SUCCESS &&
		    driver_launches[i] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
			st = cupti_fail(err, r, "cuptiEnableCallback (cuLaunchKernel)");
	if (st)
		goto fail;

	/* the clock: before any kind is enabled (see trace.h) */
	t->clock_offset_ns = 0;
	if (cuptiActivityRegisterTimestampCallback(now_cb) == CUPTI_SUCCESS) {
		t->clock_method = "timestamp-callback";
	} else {
		int ok;
		t->clock_offset_ns = cupti_offset(&ok);
		t->clock_method = ok ? "offset" : "none";
	}

	if (!G.callbacks_registered) {
		r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
		if (r != CUPTI_SUCCESS) {
			st = cupti_fail(err, r, "cuptiActivityRegisterCallbacks");
			goto fail;
		}
		G.callbacks_registered = 1;
	}
	atomic_store(&G.sink, t);
	G.owner = t;
	/* sync records of event and stream queries only where the work had completed:
	 * PyTorch's allocators poll cudaEventQuery, one record a poll otherwise */
	if ((want & ZB_TK_SYNC) && cuptiActivityEnableAllSyncRecords(0) != CUPTI_SUCCESS)
		t->kinds_refused++; /* noted; every query is recorded then */
	for (; nenabled < NKINDS; nenabled++) {
		if (unwanted(nenabled))
			continue;
		r = cuptiActivityEnable(kinds[nenabled].kind);
		if (r != CUPTI_SUCCESS && nenabled >= NREQUIRED) {
			t->kinds_refused++; /* noted; the session goes on */
			continue;
		}
		if (r != CUPTI_SUCCESS) {
			char call[64];
			snprintf(call, sizeof call, "cuptiActivityEnable(kind %d)", (int)kinds[nenabled].kind);
			st = cupti_fail(err, r, call);
			goto fail;
		}
	}
	t->kinds = want;
	t->started_ns = zb_now_ns();
	atomic_store(&G.active, 1);
	pthread_mutex_unlock(&G.mu);
	return ZB_OK;
fail:
	if (nenabled > 0) {
		disable_all();
		(void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	atomic_store(&G.sink, NULL);
	while (atomic_load(&G.in_callback) > 0)
		;
	G.owner = NULL;
	unsubscribe();
	pthread_mutex_unlock(&G.mu);
	return st;
}

static void gpu_info(zb_tr_gpu *g)
{
	int dev = 0;
	struct cudaDeviceProp p;
	memset(g, 0, sizeof *g);
	if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return;
	}
	g->valid = 1;
	snprintf(g->name, sizeof g->name, "%.127s", p.name);
	const unsigned char *u = (const unsigned char *)p.uuid.bytes;
	snprintf(g->uuid, sizeof g->uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	snprintf(g->bus, sizeof g->bus, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
	g->total_memory = (int64_t)p.totalGlobalMem;
	g->l2_cache = p.l2CacheSize;
	g->sm_count = p.multiProcessorCount;
	g->cc_major = p.major;
	g->cc_minor = p.minor;
	int clk = 0, mclk = 0, width = 0;
	if (cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev) == cudaSuccess)
		g->clock_hz = (int64_t)clk * 1000;
	if (cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
	    cudaDeviceGetAttribute(&width, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess)
		g->memory_bandwidth = (int64_t)mclk * 1000 * 2 * (width / 8); /* DDR: two transfers a clock, B/s */
	(void)cudaGetLastError();
}

/* use_runtime: the session is zbench's own (a device synchronize first, GPU info
 * after); 0 in a foreign process (zb_trace_stop_foreign). */
static zb_status stop_session(zb_trace *t, zb_error *err, int use_runtime)
{
	if (!t)
		return ZB_OK;
	pthread_mutex_lock(&G.mu);
	if (G.owner != t) {
		pthread_mutex_unlock(&G.mu);
		return ZB_OK;
	}
	zb_status st = ZB_OK;
	atomic_store(&G.active, 0);
	/* records of work still running would arrive without an end */
	if (use_runtime && cudaDeviceSynchronize() != cudaSuccess)
		(void)cudaGetLastError();
	t->stopped_ns = zb_now_ns();
	atomic_store(&G.flushing, 1);
	CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS)
		st = cupti_fail(err, r, "cuptiActivityFlushAll");
	size_t dropped = 0;
	r = cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
	if (r != CUPTI_SUCCESS && !st)
		st = cupti_fail(err, r, "cuptiActivityGetNumDroppedRecords");
	t->dropped += dropped;
	for (size_t i = 0; i < NKINDS; i++) {
		if (unwanted(i))
			continue;
		r = cuptiActivityDisable(kinds[i].kind);
		if (r != CUPTI_SUCCESS && !st && i < NREQUIRED) /* an optional kind may never have been on */
			st = cupti_fail(err, r, "cuptiActivityDisable");
	}
	/* whatever was produced until the kinds went off */
	r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS && !st)
		st = cupti_fail(err, r, "cuptiActivityFlushAll");
	dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
		t->dropped += dropped;
	unsubscribe();
	atomic_store(&G.sink, NULL);
	while (atomic_load(&G.in_callback) > 0)
		; /* a callback that read the sink before it was cleared */
	int ok;
	int64_t off = cupti_offset(&ok);
	t->clock_residual_ns = ok ? off - t->clock_offset_ns : 0;
	t->launches = atomic_load(&G.launches);
	t->buffers = atomic_load(&G.buffers);
	t->buffer_failures = atomic_load(&G.buffer_failures);
	t->cupti_tid = atomic_load(&G.worker_tid);
	/* a full buffer that arrived after the sink was cleared is records lost */
	t->parse_errors += atomic_load(&G.lost_buffers);
	if (use_runtime)
		gpu_info(&t->gpu);
	G.owner = NULL;
	pthread_mutex_unlock(&G.mu);
	return st;
}

zb_status zb_trace_stop(zb_trace *t, zb_error *err) { return stop_session(t, err, 1); }
zb_status zb_trace_stop_foreign(zb_trace *t, zb_error *err) { return stop_session(t, err, 0); }

int zb_trace_active(void) { return atomic_load_explicit(&G.active, memory_order_relaxed); }

void zb_trace_push_task(uint32_t task)
{
	if (!atomic_load_explicit(&G.active, memory_order_relaxed))
		return;
	if (cuptiActivityPushExternalCorrelationId((CUpti_ExternalCorrelationKind)ZB_TRACE_EXT_KIND,
						   (uint64_t)task + 1) == CUPTI_SUCCESS)
		tag_depth++;
}

void zb_trace_pop_task(void)
{
	if (tag_depth <= 0)
		return;
	uint64_t last = 0;
	(void)cuptiActivityPopExternalCorrelationId((CUpti_ExternalCorrelationKind)ZB_TRACE_EXT_KIND, &last);
	tag_depth--;
}

void zb_trace_name_stream(void *cuda_stream, int resource, const char *name)
{
	pthread_mutex_lock(&G.mu);
	zb_trace *t = G.owner;
	uint32_t id = 0;
	if (t && cuptiGetStreamIdEx(NULL, (CUstream)cuda_stream, 0, &id) == CUPTI_SUCCESS) {
		uint32_t dev = 0;
		(void)cuptiGetDeviceId(NULL, &dev);
		zb_tr_stream s = { .device = dev, .context = 0, .stream = id, .resource = resource };
		snprintf(s.name, sizeof s.name, "%s", name ? name : "");
		pthread_mutex_lock(&t->mu);
		zb_trace_add_stream(t, &s);
		pthread_mutex_unlock(&t->mu);
	}
	pthread_mutex_unlock(&G.mu);
}
