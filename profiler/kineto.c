/*
 * kineto.c - PyTorch profiler (Kineto) Chrome-trace JSON as a zbench trace; see
 * kineto.h. The document is read whole through jansson, then walked twice: once for
 * the earliest timestamp (the time zero), once converting each event into the
 * records of trace.h.
 */
#include "profiler/kineto.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#define MAX_NS 9007199254740992.0 /* 2^53: past it a double holds no nanosecond */

int zb_kineto_sniff(const unsigned char *head, size_t n)
{
	if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')
			continue;
		return head[i] == '{' || head[i] == '[';
	}
	return 0;
}

/* ---- small readers of an event ------------------------------------------------------- */

/* A string member, "" when it is not one. */
static const char *text_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static int number(json_t *v, double *out)
{
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return isfinite(*out);
}

static int64_t int_arg(json_t *args, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(args, key);
	double d;
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	return number(v, &d) && fabs(d) < 9e18 ? (int64_t)d : dflt;
}

/* A pid or tid: an integer, or the digits of a string ("stream 7"); 0 otherwise. */
static uint32_t id_of(json_t *v)
{
	if (json_is_integer(v))
		return (uint32_t)json_integer_value(v);
	const char *s = json_string_value(v);
	while (s && *s && (*s < '0' || *s > '9'))
		s++;
	return s && *s ? (uint32_t)strtoul(s, NULL, 10) : 0;
}

static void triple(json_t *args, const char *key, int32_t out[3])
{
	json_t *a = json_object_get(args, key);
	for (size_t i = 0; i < 3; i++) {
		json_t *x = json_array_get(a, i);
		out[i] = json_is_integer(x) ? (int32_t)json_integer_value(x) : 1;
	}
}

/* "Pageable", "Pinned", "Device", ... as nsys's ENUM_CUDA_MEM_KIND. */
static uint8_t mem_kind(const char *s, size_t n)
{
	static const char *const kinds[] = { "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed",
					     "Device Static", "Managed Static" };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		if (strlen(kinds[k]) == n && !strncmp(s, kinds[k], n))
			return (uint8_t)k;
	return 0;
}

/* "Memcpy HtoD (Pinned -> Device)": direction and memory kinds. */
static void copy_kinds(const char *name, zb_tr_memcpy *m)
{
	static const struct { const char *tag; uint8_t kind; } dirs[] = {
		{ "HtoD", 1 }, { "DtoH", 2 }, { "DtoD", 8 }, { "HtoH", 9 }, { "PtoP", 10 }, { "HtoA", 3 },
		{ "AtoH", 4 }, { "AtoA", 5 }, { "AtoD", 6 }, { "DtoA", 7 },
	};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (strstr(name, dirs[i].tag)) {
			m->copy_kind = dirs[i].kind;
			break;
		}
	const char *open = strchr(name, '('), *arrow = strstr(name, " -> "), *close = strrchr(name, ')');
	if (open && arrow && close && open < arrow && arrow < close) {
		m->src_kind = mem_kind(open + 1, (size_t)(arrow - open - 1));
		m->dst_kind = mem_kind(arrow + 4, (size_t)(close - arrow - 4));
	}
}

/* ---- the walk ------------------------------------------------------------------------- */

typedef struct walk {
	zb_kineto_trace *k;
	zb_trace *t;
	double origin_us;
	uint32_t cpu_pids[16];
	int ncpu_pids;
} walk;

static void note_cpu_pid(walk *w, uint32_t pid)
{
	for (int i = 0; i < w->ncpu_pids; i++)
		if (w->cpu_pids[i] == pid)
			return;
	if (w->ncpu_pids < 16)
		w->cpu_pids[w->ncpu_pids++] = pid;
}

/* ts and dur in ns from the origin; 0 when they are not times. */
static int times(walk *w, json_t *e, int64_t *start, int64_t *end)
{
	double ts, dur = 0;
	if (!number(json_object_get(e, "ts"), &ts) || (json_object_get(e, "dur") && !number(json_object_get(e, "dur"), &dur)))
		return 0;
	double s = (ts - w->origin_us) * 1000.0, d = dur * 1000.0;
	if (!(s >= 0 && d >= 0 && s + d < MAX_NS))
		return 0;
	*start = llround(s);
	*end = *start + llround(d);
	return 1;
}

static void add_kernel(walk *w, const char *name, json_t *e, json_t *args, int64_t s, int64_t x)
{
	char shortn[256];
	zb_trace_short_name(name, shortn, sizeof shortn);
	zb_tr_kernel r = { .start = s, .end = x, .task = ZB_TRACE_NO_TASK };
	r.device = (uint32_t)int_arg(args, "device", id_of(json_object_get(e, "pid")));
	r.context = (uint32_t)int_arg(args, "context", 0);
	r.stream = (uint32_t)int_arg(args, "stream", id_of(json_object_get(e, "tid")));
	r.correlation = (uint32_t)int_arg(args, "correlation", 0);
	triple(args, "grid", r.grid);
	triple(args, "block", r.block);
	r.registers = (uint16_t)int_arg(args, "registers per thread", 0);
	r.static_smem = (int32_t)int_arg(args, "shared memory", 0);
	r.demangled = r.mangled = zb_trace_intern(w->t, name);
	r.short_name = zb_trace_intern(w->t, shortn);
	zb_trace_add_kernel(w->t, &r);
	w->k->n.kernels++;
}

static void add_copy(walk *w, const char *name, json_t *e, json_t *args, int64_t s, int64_t x, int memset)
{
	uint32_t dev = (uint32_t)int_arg(args, "device", id_of(json_object_get(e, "pid")));
	uint32_t ctx = (uint32_t)int_arg(args, "context", 0), corr = (uint32_t)int_arg(args, "correlation", 0);
	uint32_t stream = (uint32_t)int_arg(args, "stream", id_of(json_object_get(e, "tid")));
	int64_t bytes = int_arg(args, "bytes", 0);
	if (bytes < 0)
		bytes = 0;
	if (memset) {
		const char *open = strchr(name, '('), *close = strrchr(name, ')');
		zb_tr_memset r = { .start = s, .end = x, .bytes = (uint64_t)bytes, .device = dev, .context = ctx,
				   .stream = stream, .correlation = corr, .task = ZB_TRACE_NO_TASK };
		if (open && close && close > open)
			r.mem_kind = mem_kind(open + 1, (size_t)(close - open - 1));
		zb_trace_add_memset(w->t, &r);
		w->k->n.memsets++;
		return;
	}
	zb_tr_memcpy r = { .start = s, .end = x, .bytes = (uint64_t)bytes, .device = dev, .context = ctx,
			   .stream = stream, .correlation = corr, .task = ZB_TRACE_NO_TASK };
	copy_kinds(name, &r);
	zb_trace_add_memcpy(w->t, &r);
	w->k->n.memcpys++;
	if (r.copy_kind == 1)
		w->k->n.h2d_bytes += (double)bytes;
	else if (r.copy_kind == 2)
		w->k->n.d2h_bytes += (double)bytes;
}

static void add_api(walk *w, const char *name, json_t *e, json_t *args, int64_t s, int64_t x, int driver)
{
	zb_tr_api r = { .start = s, .end = x, .cls = driver ? ZB_TRACE_CLASS_DRIVER : ZB_TRACE_CLASS_RUNTIME,
			.task = ZB_TRACE_NO_TASK };
	r.process = id_of(json_object_get(e, "pid"));
	r.thread = id_of(json_object_get(e, "tid"));
	r.correlation = (uint32_t)int_arg(args, "correlation", 0);
	r.cbid = (uint32_t)int_arg(args, "cbid", 0);
	r.name = zb_trace_intern(w->t, name);
	note_cpu_pid(w, r.process);
	zb_trace_add_api(w->t, &r);
	w->k->n.apis++;
}

static void add_range(walk *w, const char *name, json_t *e, int64_t s, int64_t x, zb_nvtx_kind kind)
{
	zb_tr_nvtx r = { .start = s, .end = x, .event_type = ZB_NVTX_PUSHPOP, .kind = (uint8_t)kind };
	r.process = id_of(json_object_get(e, "pid"));
	r.thread = id_of(json_object_get(e, "tid"));
	r.text = zb_trace_intern(w->t, name);
	zb_trace_add_nvtx(w->t, &r);
	zb_kineto_counts *n = &w->k->n;
	if (kind == ZB_NVTX_PROGRAM) {
		n->annotations++;
		n->profiler_steps += !strncmp(name, "ProfilerStep#", 13);
		note_cpu_pid(w, r.process);
	} else {
		*(kind == ZB_NVTX_CPU_OP ? &n->cpu_ops : kind == ZB_NVTX_PYTHON ? &n->python : &n->gpu_annotations) += 1;
	}
}

/* One complete ("X") event. */
static void complete_event(walk *w, json_t *e)
{
	const char *cat = json_string_value(json_object_get(e, "cat"));
	const char *name = json_string_value(json_object_get(e, "name"));
	json_t *args = json_object_get(e, "args");
	int64_t s, x;
	if (!cat || !name) {
		w->k->n.other++;
		return;
	}
	int step = !strncmp(name, "ProfilerStep#", 13) && (!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation"));
	int known = step || !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset") ||
		    !strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") || !strcmp(cat, "user_annotation") ||
		    !strcmp(cat, "cpu_op") || !strcmp(cat, "gpu_user_annotation") || !strcmp(cat, "python_function");
	if (!known) {
		w->k->n.other++;
		return;
	}
	if (!times(w, e, &s, &x)) {
		w->k->n.bad_times++;
		return;
	}
	if (step || !strcmp(cat, "user_annotation"))
		add_range(w, name, e, s, x, ZB_NVTX_PROGRAM);
	else if (!strcmp(cat, "kernel"))
		add_kernel(w, name, e, args, s, x);
	else if (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset"))
		add_copy(w, name, e, args, s, x, !strcmp(cat, "gpu_memset"));
	else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver"))
		add_api(w, name, e, args, s, x, !strcmp(cat, "cuda_driver"));
	else
		add_range(w, name, e, s, x,
			  !strcmp(cat, "cpu_op") ? ZB_NVTX_CPU_OP : !strcmp(cat, "python_function") ? ZB_NVTX_PYTHON
												 : ZB_NVTX_GPU_ANNOTATION);
}

/* A thread's name ("M" thread_name); the last one of a thread wins. */
static void thread_name(walk *w, json_t *e)
{
	const char *nm = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
	if (!nm || !json_is_integer(json_object_get(e, "pid")) || !json_is_integer(json_object_get(e, "tid")))
		return;
	zb_kineto_trace *k = w->k;
	uint32_t pid = id_of(json_object_get(e, "pid")), tid = id_of(json_object_get(e, "tid"));
	for (size_t i = 0; i < k->nthreads; i++)
		if (k->threads[i].pid == pid && k->threads[i].tid == tid) {
			k->threads[i].name = zb_trace_intern(w->t, nm);
			return;
		}
	k->threads = zb_xrealloc(k->threads, (k->nthreads + 1) * sizeof *k->threads);
	k->threads[k->nthreads++] = (zb_kineto_thread){ pid, tid, zb_trace_intern(w->t, nm) };
}

/* Thread names of the processes that ran CPU work (not the GPUs' stream tracks). */
static void keep_cpu_threads(walk *w)
{
	zb_kineto_trace *k = w->k;
	size_t kept = 0;
	for (size_t i = 0; i < k->nthreads; i++) {
		int cpu = 0;
		for (int j = 0; j < w->ncpu_pids; j++)
			cpu |= k->threads[i].pid == w->cpu_pids[j];
		if (cpu)
			k->threads[kept++] = k->threads[i];
	}
	k->nthreads = kept;
	k->n.threads = kept;
}

static void device_properties(walk *w, json_t *root)
{
	json_t *d = json_array_get(json_object_get(root, "deviceProperties"), 0);
	const char *nm = json_string_value(json_object_get(d, "name"));
	if (!nm)
		return;
	zb_tr_gpu *g = &w->t->gpu;
	g->valid = 1;
	snprintf(g->name, sizeof g->name, "%s", nm);
	g->total_memory = int_arg(d, "totalGlobalMem", 0);
	g->sm_count = (int)int_arg(d, "numSms", 0);
	g->cc_major = (int)int_arg(d, "computeMajor", 0);
	g->cc_minor = (int)int_arg(d, "computeMinor", 0);
}

/* The earliest ts of a complete event read: the time zero. */
static double origin(json_t *events)
{
	double lo = INFINITY, ts;
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e)
		if (json_is_object(e) && number(json_object_get(e, "ts"), &ts) && ts >= 0 && ts < lo &&
		    !strcmp(text_of(e, "ph"), "X"))
			lo = ts;
	return isfinite(lo) ? lo : 0;
}

static void walk_events(walk *w, json_t *events)
{
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const char *ph = text_of(e, "ph");
		if (!strcmp(ph, "X"))
			complete_event(w, e);
		else if (!strcmp(ph, "M") && !strcmp(text_of(e, "name"), "thread_name"))
			thread_name(w, e);
		else
			w->k->n.other++;
	}
}

zb_status zb_kineto_parse(const char *text, size_t len, const char *name, zb_kineto_trace *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root)
		return zb_fail(err, ZB_E_INPUT, "'%s' is not a PyTorch profiler trace: not JSON (line %d: %s)", name, je.line,
			       je.text);
	json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
	if (!json_is_array(events)) {
		json_decref(root);
		return zb_fail(err, ZB_E_INPUT, "'%s' is JSON but not a Chrome trace (no \"traceEvents\" list)", name);
	}
	walk w = { .k = out, .t = zb_trace_create() };
	out->t = w.t;
	w.t->clock_method = "kineto";
	w.origin_us = origin(events);
	out->origin_ns = llround(w.origin_us * 1000.0);
	walk_events(&w, events);
	keep_cpu_threads(&w);
	w.t->pid = w.ncpu_pids ? w.cpu_pids[0] : 0; /* the process of the first CPU record */
	if (json_is_object(root))
		device_properties(&w, root);
	json_decref(root);
	const zb_kineto_counts *n = &out->n;
	if (!n->kernels && !n->memcpys && !n->memsets && !n->apis && !n->annotations && !n->cpu_ops) {
		zb_kineto_free(out);
		return zb_fail(err, ZB_E_INPUT,
			       "'%s' holds no event zbench reads (kernel, gpu_memcpy, gpu_memset, cuda_runtime, cpu_op or "
			       "user_annotation)",
			       name);
	}
	return ZB_OK;
}

/* The whole file, through zlib (which reads a plain file as it is). */
static zb_status slurp(const char *path, char **text, size_t *len, zb_error *err)
{
	gzFile f = gzopen(path, "rb");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot read '%s': %s", path, strerror(errno ? errno : ENOENT));
	gzbuffer(f, 1 << 18);
	size_t n = 0, cap = 1 << 20;
	char *buf = zb_xmalloc(cap);
	int got;
	while ((got = gzread(f, buf + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n))) > 0) {
		n += (size_t)got;
		if (n > ZB_KINETO_MAX_BYTES)
			break;
		if (n == cap)
			buf = zb_xrealloc(buf, cap *= 2);
	}
	int e;
	const char *msg = got < 0 ? gzerror(f, &e) : NULL;
	zb_status st = ZB_OK;
	if (got < 0)
		st = zb_fail(err, ZB_E_INPUT, "cannot read '%s': %s", path, msg && *msg ? msg : "read error");
	else if (n > ZB_KINETO_MAX_BYTES)
		st = zb_fail(err, ZB_E_INPUT, "'%s' is larger than %zu GiB uncompressed: profile fewer steps", path,
			     ZB_KINETO_MAX_BYTES >> 30);
	gzclose(f);
	if (st) {
		free(buf);
		return st;
	}
	*text = buf;
	*len = n;
	return ZB_OK;
}

zb_status zb_kineto_read(const char *path, zb_kineto_trace *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	char *text = NULL;
	size_t len = 0;
	zb_status st = slurp(path, &text, &len, err);
	if (!st)
		st = zb_kineto_parse(text, len, path, out, err);
	free(text);
	return st;
}

void zb_kineto_free(zb_kineto_trace *k)
{
	zb_trace_free(k->t);
	free(k->threads);
	memset(k, 0, sizeof *k);
}
