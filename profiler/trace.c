/*
 * trace.c - the trace container of trace.h: growable record arrays, the string
 * pool, the mapping of records to schedule tasks, summaries and a synthetic
 * workload. Plain C, no CUDA: the CUPTI side (cupti_cuda.c) only appends.
 */
#include "profiler/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zb_trace *zb_trace_create(void)
{
	zb_trace *t = zb_xcalloc(1, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
	t->pid = (uint32_t)getpid();
	t->clock_method = "none";
	zb_trace_intern(t, ""); /* id 0: the empty string */
	return t;
}

void zb_trace_free(zb_trace *t)
{
	if (!t)
		return;
	free(t->kernels);
	free(t->memcpys);
	free(t->memsets);
	free(t->apis);
	free(t->syncs);
	free(t->overheads);
	free(t->extcorrs);
	free(t->nvtxs);
	free(t->nvtx_open);
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->hash);
	free(t->dem_cache);
	free(t->short_cache);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* Append *r to vector v (count n, capacity cap), doubling the capacity as needed. */
#define VEC_PUSH(v, n, cap, r)                                               \
	do {                                                                 \
		if ((n) == (cap)) {                                          \
			(cap) = (cap) ? 2 * (cap) : 1024;                    \
			(v) = zb_xrealloc((v), (cap) * sizeof *(v));         \
		}                                                            \
		(v)[(n)++] = *(r);                                           \
	} while (0)

void zb_trace_add_kernel(zb_trace *t, const zb_tr_kernel *r) { VEC_PUSH(t->kernels, t->nkernels, t->cap_kernels, r); }
void zb_trace_add_memcpy(zb_trace *t, const zb_tr_memcpy *r) { VEC_PUSH(t->memcpys, t->nmemcpys, t->cap_memcpys, r); }
void zb_trace_add_memset(zb_trace *t, const zb_tr_memset *r) { VEC_PUSH(t->memsets, t->nmemsets, t->cap_memsets, r); }
void zb_trace_add_api(zb_trace *t, const zb_tr_api *r) { VEC_PUSH(t->apis, t->napis, t->cap_apis, r); }
void zb_trace_add_sync(zb_trace *t, const zb_tr_sync *r) { VEC_PUSH(t->syncs, t->nsyncs, t->cap_syncs, r); }
void zb_trace_add_overhead(zb_trace *t, const zb_tr_overhead *r)
{
	VEC_PUSH(t->overheads, t->noverheads, t->cap_overheads, r);
}
void zb_trace_add_extcorr(zb_trace *t, const zb_tr_extcorr *r)
{
	VEC_PUSH(t->extcorrs, t->nextcorrs, t->cap_extcorrs, r);
}

void zb_trace_add_nvtx(zb_trace *t, const zb_tr_nvtx *r) { VEC_PUSH(t->nvtxs, t->nnvtxs, t->cap_nvtxs, r); }

void zb_trace_nvtx_begin(zb_trace *t, const zb_tr_nvtx *r)
{
	VEC_PUSH(t->nvtx_open, t->nnvtx_open, t->cap_nvtx_open, r);
}

int zb_trace_nvtx_end(zb_trace *t, uint32_t id, int64_t end, uint32_t thread)
{
	/* from the back: push/pop ranges close in LIFO order, so the match is near it */
	for (size_t i = t->nnvtx_open; i-- > 0;) {
		if (t->nvtx_open[i].id != id)
			continue;
		zb_tr_nvtx r = t->nvtx_open[i];
		r.end = end < r.start ? r.start : end;
		if (r.event_type != ZB_NVTX_MARK)
			r.event_type = thread == r.thread ? ZB_NVTX_PUSHPOP : ZB_NVTX_STARTEND;
		memmove(&t->nvtx_open[i], &t->nvtx_open[i + 1], (t->nnvtx_open - i - 1) * sizeof r);
		t->nnvtx_open--;
		zb_trace_add_nvtx(t, &r);
		return 1;
	}
	t->nvtx_unmatched++;
	return 0;
}

void zb_trace_add_stream(zb_trace *t, const zb_tr_stream *s)
{
	for (int i = 0; i < t->nstreams; i++)
		if (t->streams[i].stream == s->stream && t->streams[i].context == s->context) {
			t->streams[i] = *s;
			return;
		}
	if (t->nstreams < (int)(sizeof t->streams / sizeof t->streams[0]))
		t->streams[t->nstreams++] = *s;
}

/* ---- strings -------------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void rehash(zb_trace *t, size_t cap)
{
	free(t->hash);
	t->hash = zb_xcalloc(cap, sizeof *t->hash);
	t->hash_cap = cap;
	for (size_t id = 0; id < t->nstrings; id++) {
		size_t k = hash_str(t->strings[id]) & (cap - 1);
		while (t->hash[k])
			k = (k + 1) & (cap - 1);
		t->hash[k] = (uint32_t)id + 1;
	}
}

const char *zb_nvtx_kind_name(zb_nvtx_kind k)
{
	static const char *const names[ZB_NVTX_KIND_COUNT] = { "program", "cpu_op", "gpu_annotation", "python" };
	return (unsigned)k < ZB_NVTX_KIND_COUNT ? names[k] : "program";
}

uint32_t zb_trace_intern(zb_trace *t, const char *s)
{
	if (!s)
		s = "";
	if (2 * (t->nstrings + 1) > t->hash_cap)
		rehash(t, t->hash_cap ? 2 * t->hash_cap : 256);
	size_t k = hash_str(s) & (t->hash_cap - 1);
	while (t->hash[k]) {
		uint32_t id = t->hash[k] - 1;
		if (!strcmp(t->strings[id], s))
			return id;
		k = (k + 1) & (t->hash_cap - 1);
	}
	if (t->nstrings == t->cap_strings) {
		t->cap_strings = t->cap_strings ? 2 * t->cap_strings : 256;
		t->strings = zb_xrealloc(t->strings, t->cap_strings * sizeof *t->strings);
	}
	size_t len = strlen(s);
	char *copy = zb_xmalloc(len + 1);
	memcpy(copy, s, len + 1);
	uint32_t id = (uint32_t)t->nstrings;
	t->strings[t->nstrings++] = copy;
	t->hash[k] = id + 1;
	return id;
}

const char *zb_trace_string(const zb_trace *t, uint32_t id)
{
	return id < t->nstrings ? t->strings[id] : "";
}

void zb_trace_short_name(const char *s, char *out, size_t n)
{
	if (n == 0)
		return;
	out[0] = 0;
	if (!s)
		return;
	size_t end = strlen(s);
	/* trailing qualifiers of a member function: " const", " volatile", " &" */
	for (;;) {
		while (end > 0 && s[end - 1] == ' ')
			end--;
		if (end >= 6 && !strncmp(s + end - 6, " const", 6))
			end -= 6;
		else if (end >= 9 && !strncmp(s + end - 9, " volatile", 9))
			end -= 9;
		else
			break;
	}
	/* the parameter list: the parenthesis matching the last ')' */
	if (end > 0 && s[end - 1] == ')') {
		int depth = 0;
		size_t i = end;
		while (i > 0) {
			char c = s[--i];
			if (c == ')')
				depth++;
			else if (c == '(' && --depth == 0)
				break;
		}
		if (depth == 0 && i > 0)
			end = i;
	}
	/* template arguments: the '<' matching a last '>' (not of operator>, operator>>) */
	while (end > 0 && s[end - 1] == ' ')
		end--;
	if (end > 0 && s[end - 1] == '>' && !(end >= 9 && !strncmp(s + end - 9, "operator>", 9)) &&
	    !(end >= 10 && !strncmp(s + end - 10, "operator>>", 10))) {
		int depth = 0;
		size_t i = end;
		while (i > 0) {
			char c = s[--i];
			if (c == '>')
				depth++;
			else if (c == '<' && --depth == 0)
				break;
		}
		if (depth == 0 && i > 0)
			end = i;
	}
	/* the last component: after the last "::" or space outside <> and () */
	size_t begin = end;
	int depth = 0;
	while (begin > 0) {
		char c = s[begin - 1];
		if (c == '>' || c == ')')
			depth++;
		else if ((c == '<' || c == '(') && depth > 0)
			depth--;
		else if (depth == 0 && (c == ':' || c == ' '))
			break;
		begin--;
	}
	size_t len = end - begin;
	if (len == 0) { /* nothing sensible: keep the whole name */
		begin = 0;
		len = strlen(s);
	}
	if (len >= n)
		len = n - 1;
	memcpy(out, s + begin, len);
	out[len] = 0;
}

/* ---- mapping records to tasks ---------------------------------------------------- */

typedef struct corr_map {
	uint32_t *key; /* correlation id + 1; 0 = empty */
	int32_t *val;
	size_t cap;
} corr_map;

static void map_init(corr_map *m, size_t n)
{
	m->cap = 64;
	while (m->cap < 2 * n + 2)
		m->cap *= 2;
	m->key = zb_xcalloc(m->cap, sizeof *m->key);
	m->val = zb_xcalloc(m->cap, sizeof *m->val);
}

static size_t map_slot(const corr_map *m, uint32_t corr)
{
	size_t k = ((uint64_t)corr * 0x9e3779b97f4a7c15ull >> 20) & (m->cap - 1);
	while (m->key[k] && m->key[k] != corr + 1)
		k = (k + 1) & (m->cap - 1);
	return k;
}

static int32_t map_get(const corr_map *m, uint32_t corr)
{
	size_t k = map_slot(m, corr);
	return m->key[k] ? m->val[k] : ZB_TRACE_NO_TASK;
}

static void map_free(corr_map *m)
{
	free(m->key);
	free(m->val);
}

/* Tasks of one resource with their executor intervals (ns), in id order: each
 * resource runs its tasks in id order, so the intervals are sorted by start. */
typedef struct res_tasks {
	int64_t *start, *end;
	int32_t *id;
	size_t n;
} res_tasks;

/* The task of rt whose interval contains mid, or whose interval is nearest to it
 * within slack; ZB_TRACE_NO_TASK when none is. */
static int32_t find_by_time(const res_tasks *rt, int64_t mid, int64_t slack)
{
	if (rt->n == 0)
		return ZB_TRACE_NO_TASK;
	size_t lo = 0, hi = rt->n; /* first task starting after mid */
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (rt->start[m] <= mid)
			lo = m + 1;
		else
			hi = m;
	}
	int32_t best = ZB_TRACE_NO_TASK;
	int64_t best_d = slack + 1;
	for (size_t c = lo > 0 ? lo - 1 : 0; c <= lo && c < rt->n; c++) {
		int64_t d = mid < rt->start[c] ? rt->start[c] - mid : mid > rt->end[c] ? mid - rt->end[c] : 0;
		if (d < best_d) {
			best_d = d;
			best = rt->id[c];
		}
	}
	return best;
}

static int stream_resource(const zb_trace *t, uint32_t context, uint32_t stream)
{
	for (int i = 0; i < t->nstreams; i++)
		if (t->streams[i].stream == stream && (t->streams[i].context == 0 || t->streams[i].context == context))
			return t->streams[i].resource; /* context 0: any (one GPU, one context) */
	return -1;
}

typedef struct resolver {
	zb_trace *t;
	corr_map map;
	res_tasks rt[ZB_RES_COUNT];
	int64_t window_lo, window_hi; /* the run: time zero .. last task end */
	int timed;
} resolver;

/* The task of a GPU record: by tag, else by time on an executor stream. */
static int32_t resolve_gpu(resolver *rv, uint32_t corr, uint32_t context, uint32_t stream, int64_t start, int64_t end)
{
	zb_trace *t = rv->t;
	int32_t task = map_get(&rv->map, corr);
	if (task != ZB_TRACE_NO_TASK) {
		t->mapped_tag++;
		return task;
	}
	int res = stream_resource(t, context, stream);
	int64_t mid = start + (end - start) / 2;
	if (res < 0 || !rv->timed || mid < rv->window_lo || mid > rv->window_hi)
		return ZB_TRACE_NO_TASK; /* setup work, or not the executor's stream */
	task = find_by_time(&rv->rt[res], mid, 5000);
	if (task != ZB_TRACE_NO_TASK)
		t->mapped_time++;
	else
		t->unmapped++;
	return task;
}

void zb_trace_resolve(zb_trace *t, const zb_graph *g, const double *start, const double *end, int64_t t0_ns)
{
	resolver rv;
	memset(&rv, 0, sizeof rv);
	rv.t = t;
	t->mapped_tag = t->mapped_time = t->unmapped = 0;
	map_init(&rv.map, t->nextcorrs);
	for (size_t i = 0; i < t->nextcorrs; i++) {
		const zb_tr_extcorr *e = &t->extcorrs[i];
		if (e->kind != ZB_TRACE_EXT_KIND || e->external == 0)
			continue;
		uint64_t task = e->external - 1;
		if (g && task >= g->ntasks)
			continue;
		size_t k = map_slot(&rv.map, e->correlation);
		rv.map.key[k] = e->correlation + 1;
		rv.map.val[k] = (int32_t)task;
	}
	if (g && start && end) {
		rv.timed = 1;
		rv.window_lo = t0_ns;
		rv.window_hi = t0_ns;
		for (int r = 0; r < ZB_RES_COUNT; r++) {
			rv.rt[r].start = zb_xmalloc(g->ntasks * sizeof(int64_t));
			rv.rt[r].end = zb_xmalloc(g->ntasks * sizeof(int64_t));
			rv.rt[r].id = zb_xmalloc(g->ntasks * sizeof(int32_t));
		}
		for (size_t i = 0; i < g->ntasks; i++) {
			const zb_task *tk = &g->tasks[i];
			if (!(start[tk->id] >= 0) || !(end[tk->id] >= start[tk->id]))
				continue; /* not run */
			res_tasks *rt = &rv.rt[tk->resource];
			rt->start[rt->n] = t0_ns + (int64_t)(start[tk->id] * 1e9);
			rt->end[rt->n] = t0_ns + (int64_t)(end[tk->id] * 1e9);
			rt->id[rt->n] = (int32_t)tk->id;
			if (rt->end[rt->n] > rv.window_hi)
				rv.window_hi = rt->end[rt->n];
			rt->n++;
		}
	}
	for (size_t i = 0; i < t->nkernels; i++) {
		zb_tr_kernel *k = &t->kernels[i];
		k->task = resolve_gpu(&rv, k->correlation, k->context, k->stream, k->start, k->end);
	}
	for (size_t i = 0; i < t->nmemcpys; i++) {
		zb_tr_memcpy *c = &t->memcpys[i];
		c->task = resolve_gpu(&rv, c->correlation, c->context, c->stream, c->start, c->end);
	}
	for (size_t i = 0; i < t->nmemsets; i++) {
		zb_tr_memset *c = &t->memsets[i];
		c->task = resolve_gpu(&rv, c->correlation, c->context, c->stream, c->start, c->end);
	}
	for (size_t i = 0; i < t->napis; i++)
		t->apis[i].task = map_get(&rv.map, t->apis[i].correlation);
	for (size_t i = 0; i < t->nsyncs; i++)
		t->syncs[i].task = map_get(&rv.map, t->syncs[i].correlation);
	map_free(&rv.map);
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		free(rv.rt[r].start);
		free(rv.rt[r].end);
		free(rv.rt[r].id);
	}
}

void zb_trace_summarize(const zb_trace *t, zb_trace_summary *s)
{
	memset(s, 0, sizeof *s);
	s->kernels = t->nkernels;
	s->memcpys = t->nmemcpys;
	s->memsets = t->nmemsets;
	s->apis = t->napis;
	s->syncs = t->nsyncs;
	s->overheads = t->noverheads;
	int32_t maxtask = -1;
	for (size_t i = 0; i < t->nkernels; i++) {
		s->kernel_ns += (double)(t->kernels[i].end - t->kernels[i].start);
		if (t->kernels[i].task > maxtask)
			maxtask = t->kernels[i].task;
	}
	for (size_t i = 0; i < t->nmemcpys; i++) {
		const zb_tr_memcpy *c = &t->memcpys[i];
		if (c->task > maxtask)
			maxtask = c->task;
		if (c->task < 0)
			continue;
		if (c->copy_kind == 1)
			s->h2d_bytes += (double)c->bytes;
		else if (c->copy_kind == 2)
			s->d2h_bytes += (double)c->bytes;
		else
			s->other_copy_bytes += (double)c->bytes;
	}
	for (size_t i = 0; i < t->nmemsets; i++)
		if (t->memsets[i].task > maxtask)
			maxtask = t->memsets[i].task;
	if (maxtask < 0)
		return;
	unsigned char *seen = zb_xcalloc((size_t)maxtask + 1, 1);
	for (size_t i = 0; i < t->nkernels; i++)
		if (t->kernels[i].task >= 0)
			seen[t->kernels[i].task] = 1;
	for (size_t i = 0; i < t->nmemcpys; i++)
		if (t->memcpys[i].task >= 0)
			seen[t->memcpys[i].task] = 1;
	for (size_t i = 0; i < t->nmemsets; i++)
		if (t->memsets[i].task >= 0)
			seen[t->memsets[i].task] = 1;
	for (int32_t i = 0; i <= maxtask; i++)
		s->tasks_seen += seen[i];
	free(seen);
}

void zb_trace_fill_synthetic(zb_trace *t, size_t ntasks, int64_t t0_ns)
{
	static const char *const kernels[][2] = {
		{ "_Z11adam_kernelIfLi4EEvPfS0_i", "void adam_kernel<float, 4>(float*, float*, int)" },
		{ "_Z13layernorm_fwdP13__nv_bfloat16PKS_i", "layernorm_fwd(__nv_bfloat16*, const __nv_bfloat16*, int)" },
		{ "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
		  "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas" },
		{ "_ZN7cutlass7KernelIN4gemm6KernelEEEvNT_6ParamsE", "void cutlass::Kernel<gemm::Kernel>(gemm::Kernel::Params)" },
	};
	uint32_t ids[4][3];
	for (int i = 0; i < 4; i++) {
		char sn[128];
		zb_trace_short_name(kernels[i][1], sn, sizeof sn);
		ids[i][0] = zb_trace_intern(t, kernels[i][0]);
		ids[i][1] = zb_trace_intern(t, kernels[i][1]);
		ids[i][2] = zb_trace_intern(t, sn);
	}
	uint32_t launch = zb_trace_intern(t, "cudaLaunchKernel_v7000");
	uint32_t memcpy_name = zb_trace_intern(t, "cudaMemcpyAsync_v3020");
	uint32_t drv = zb_trace_intern(t, "cuLaunchKernel");
	for (size_t i = 0; i < ntasks; i++) {
		int64_t base = t0_ns + (int64_t)i * 10000;
		uint32_t corr = (uint32_t)(2 * i + 1);
		int copy = i % 4 == 1 || i % 4 == 2;
		zb_tr_api a = { .start = base, .end = base + 2000, .process = t->pid, .thread = t->pid + 1 + i % 3,
				.correlation = corr, .cbid = copy ? 41 : 211, .cls = ZB_TRACE_CLASS_RUNTIME,
				.name = copy ? memcpy_name : launch, .task = (int32_t)i };
		zb_trace_add_api(t, &a);
		zb_tr_api d = a;
		d.correlation = corr + 1;
		d.cls = ZB_TRACE_CLASS_DRIVER;
		d.cbid = 307;
		d.name = drv;
		d.start += 500;
		d.end -= 500;
		zb_trace_add_api(t, &d);
		zb_tr_extcorr e = { corr, ZB_TRACE_EXT_KIND, i + 1 };
		zb_trace_add_extcorr(t, &e);
		e.correlation = corr + 1;
		zb_trace_add_extcorr(t, &e);
		if (copy) {
			zb_tr_memcpy c = { .start = base + 3000, .end = base + 9000, .bytes = 1 << 20, .stream = 14 + i % 4,
					   .context = 1, .correlation = corr, .copy_kind = i % 4 == 1 ? 1 : 2,
					   .src_kind = i % 4 == 1 ? 2 : 3, .dst_kind = i % 4 == 1 ? 3 : 2, .task = (int32_t)i };
			zb_trace_add_memcpy(t, &c);
		} else {
			const uint32_t *n = ids[i % 4];
			zb_tr_kernel k = { .start = base + 3000, .end = base + 9000, .context = 1, .stream = 13,
					   .correlation = corr, .grid = { 132, 1, 1 }, .block = { 256, 1, 1 },
					   .registers = 64, .static_smem = 1024, .grid_id = (int64_t)i,
					   .mangled = n[0], .demangled = n[1], .short_name = n[2], .task = (int32_t)i };
			zb_trace_add_kernel(t, &k);
		}
		if (i % 16 == 3) {
			zb_tr_memset m = { .start = base + 2500, .end = base + 2900, .bytes = 4096, .context = 1,
					   .stream = 13, .correlation = corr, .task = (int32_t)i, .mem_kind = 3 };
			zb_trace_add_memset(t, &m);
		}
		if (i % 32 == 5) {
			zb_tr_sync s = { .start = base + 100, .end = base + 9500, .type = 1, .context = 1,
					 .stream = 13, .event = (uint32_t)i, .correlation = corr, .task = (int32_t)i };
			zb_trace_add_sync(t, &s);
		}
	}
}
