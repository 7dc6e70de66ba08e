/*
 * test_foreign.c - tracing programs zbench did not write, without a GPU:
 *   - NVTX marker records (synthetic CUpti_ActivityMarker2) through the collector's
 *     record parser, the path the injection library's buffers take;
 *   - spool files: a trace written and read back field for field; foreign and
 *     truncated files refused;
 *   - step detection: the period of token sequences (warm-up, a step of repeated
 *     layers, noise), NVTX step ranges (digits ignored), the pattern fallback;
 *   - the analysis arithmetic: compute only + copy only + overlap + idle = step for
 *     random traces; the CPU optimizer from /proc samples of worker threads;
 *   - import of tests/data/nsys-small.sql (built into an .sqlite here) and its
 *     analysis to the figures the fixture states; non-exports refused;
 *   - a trace with program NVTX ranges and CPU samples stored and read back;
 *   - the /proc parsers and the sampler on this process;
 *   - zbench trace: the exit code passes through, SIGINT reaches the program and
 *     the run is kept, bad invocations exit 2 (needs build/libzbench_inject.so).
 */
#include "tests/harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef ZB_HAVE_CUDA
#include <cupti.h>
#endif

#include "profiler/analyze.h"
#include "profiler/procsample.h"
#include "profiler/spool.h"
#include "profiler/trace.h"
#include "results/foreign.h"
#include "results/store.h"

static char tmpdir[128];

#define OK(call)                                                                 \
	do {                                                                     \
		zb_error err_ = { 0 };                                           \
		zb_status s_ = (call);                                           \
		if (s_ != ZB_OK)                                                 \
			fail_msg("%s: %s (line %d)", #call, err_.msg, __LINE__); \
	} while (0)

static const char *tmp(const char *name)
{
	static char buf[4][256];
	static int next;
	char *b = buf[next++ % 4];
	snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
	return b;
}

/* ---- NVTX records through the parser ------------------------------------------- */

#ifdef ZB_HAVE_CUDA
static void marker(zb_trace *t, uint32_t flags, uint64_t ts, uint32_t id, uint32_t tid, const char *name)
{
	CUpti_ActivityMarker2 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = (CUpti_ActivityFlag)flags;
	m.timestamp = ts;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = 4242;
	m.objectId.pt.threadId = tid;
	m.name = name;
	m.domain = NULL;
	zb_trace_add_cupti_record(t, &m);
}
#endif

static void test_marker_records(void **state)
{
	(void)state;
#ifndef ZB_HAVE_CUDA
	skip();
#else
	zb_trace *t = zb_trace_create();
	t->clock_offset_ns = 100;
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_START, 1100, 1, 7, "train_step 0");
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_START, 1200, 2, 7, "forward");        /* nested push */
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 1300, 3, 7, "mark!");
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_END, 1400, 2, 7, NULL);
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_START, 1500, 4, 7, "async");
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_END, 1600, 4, 9, NULL);              /* ended on another thread */
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_END, 2100, 1, 7, NULL);
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_END, 2200, 99, 7, NULL);             /* never started */
	marker(t, CUPTI_ACTIVITY_FLAG_MARKER_START, 2300, 5, 7, "left open");
	assert_int_equal(t->nnvtxs, 4);
	assert_int_equal(t->nnvtx_open, 1);
	assert_int_equal(t->nvtx_unmatched, 1);
	const zb_tr_nvtx *mark = &t->nvtxs[0], *fwd = &t->nvtxs[1], *async = &t->nvtxs[2], *step = &t->nvtxs[3];
	assert_string_equal(zb_trace_string(t, mark->text), "mark!");
	assert_int_equal(mark->event_type, ZB_NVTX_MARK);
	assert_int_equal(mark->start, 1200);
	assert_int_equal(mark->end, 1200);
	assert_string_equal(zb_trace_string(t, fwd->text), "forward");
	assert_int_equal(fwd->start, 1100);
	assert_int_equal(fwd->end, 1300);
	assert_int_equal(fwd->event_type, ZB_NVTX_PUSHPOP);
	assert_int_equal(async->event_type, ZB_NVTX_STARTEND);
	assert_string_equal(zb_trace_string(t, step->text), "train_step 0");
	assert_int_equal(step->start, 1000);
	assert_int_equal(step->end, 2000);
	assert_int_equal(step->process, 4242);
	assert_int_equal(step->thread, 7);
	zb_trace_free(t);
#endif
}

/* ---- spool files --------------------------------------------------------------- */

static void test_spool_roundtrip(void **state)
{
	(void)state;
	zb_trace *t = zb_trace_create();
	zb_trace_fill_synthetic(t, 300, 1000000);
	zb_tr_nvtx n = { .start = 5, .end = 50, .process = t->pid, .thread = 3, .text = zb_trace_intern(t, "step 1"),
			 .id = 1, .event_type = ZB_NVTX_PUSHPOP };
	zb_trace_add_nvtx(t, &n);
	t->dropped = 3, t->launches = 150, t->clock_method = "timestamp-callback", t->started_ns = 77;
	t->nvtx_unmatched = 2;
	t->kinds = 0x1f, t->parse_ns = 123456789, t->cupti_tid = 4242;
	zb_trace_nvtx_begin(t, &n); /* left open: counts as unmatched in the file */
	const char *path = tmp("1.zbt");
	OK(zb_spool_write(t, path, &err_));
	zb_trace *r;
	OK(zb_spool_read(path, &r, &err_));
	assert_int_equal(r->nkernels, t->nkernels);
	assert_int_equal(r->nmemcpys, t->nmemcpys);
	assert_int_equal(r->nmemsets, t->nmemsets);
	assert_int_equal(r->napis, t->napis);
	assert_int_equal(r->nsyncs, t->nsyncs);
	assert_int_equal(r->nnvtxs, 1);
	assert_int_equal(r->nstrings, t->nstrings);
	assert_memory_equal(r->kernels, t->kernels, t->nkernels * sizeof *t->kernels);
	assert_memory_equal(r->memcpys, t->memcpys, t->nmemcpys * sizeof *t->memcpys);
	assert_memory_equal(r->apis, t->apis, t->napis * sizeof *t->apis);
	for (size_t i = 0; i < t->nstrings; i++)
		assert_string_equal(zb_trace_string(r, (uint32_t)i), zb_trace_string(t, (uint32_t)i));
	assert_string_equal(zb_trace_string(r, r->nvtxs[0].text), "step 1");
	assert_int_equal(r->dropped, 3);
	assert_int_equal(r->launches, 150);
	assert_int_equal(r->pid, t->pid);
	assert_int_equal(r->nvtx_unmatched, 3);
	assert_int_equal(r->started_ns, 77);
	assert_int_equal(r->kinds, 0x1f);
	assert_int_equal(r->parse_ns, 123456789);
	assert_int_equal(r->cupti_tid, 4242);
	assert_string_equal(r->clock_method, "timestamp-callback");
	assert_int_equal(access(tmp("1.zbt.tmp"), F_OK), -1); /* renamed into place */
	zb_trace_free(r);

	/* truncated: every prefix shorter than the file is refused */
	size_t len;
	char *bytes = zb_test_slurp(path, &len);
	for (size_t cut = 0; cut < len; cut += len / 7 + 1) {
		FILE *f = fopen(tmp("cut.zbt"), "wb");
		fwrite(bytes, 1, cut, f);
		fclose(f);
		zb_error err = { 0 };
		assert_int_equal(zb_spool_read(tmp("cut.zbt"), &r, &err), ZB_E_INPUT);
		assert_null(r);
		assert_contains(err.msg, "cut.zbt");
	}
	free(bytes);
	FILE *f = fopen(tmp("other.zbt"), "wb");
	fputs("SQLite format 3\n and more bytes than a header needs ................................", f);
	fclose(f);
	zb_error err = { 0 };
	assert_int_equal(zb_spool_read(tmp("other.zbt"), &r, &err), ZB_E_INPUT);
	assert_contains(err.msg, "not a zbench spool file");
	assert_int_equal(zb_spool_read(tmp("missing.zbt"), &r, &err), ZB_E_INPUT);
	assert_contains(err.msg, "missing.zbt");
	zb_trace_free(t);
}

/* ---- step detection -------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* A training step of a model of `layers` identical layers: embedding, the layers'
 * forward kernels, the loss, their backward kernels, the optimizer. */
static size_t step_tokens(int32_t *out, int layers)
{
	size_t n = 0;
	out[n++] = 100; /* embedding */
	for (int l = 0; l < layers; l++)
		out[n++] = 1, out[n++] = 2, out[n++] = 3;
	out[n++] = 101; /* loss */
	for (int l = 0; l < layers; l++)
		out[n++] = 4, out[n++] = 5, out[n++] = 6;
	out[n++] = 102; /* optimizer */
	return n;
}

static void test_sequence_period(void **state)
{
	(void)state;
	int32_t seq[4096];
	double match;
	/* a warm-up, then a plain repeat of 5 */
	size_t n = 0;
	seq[n++] = 900, seq[n++] = 901, seq[n++] = 902;
	for (int k = 0; k < 20; k++)
		for (int j = 0; j < 5; j++)
			seq[n++] = 10 + j;
	assert_int_equal(zb_sequence_period(seq, n, &match), 5);
	assert_true(match > 0.95);
	/* 24 layers: the layer repeat (3 kernels) must not win over the step */
	n = 0;
	for (int k = 0; k < 8; k++)
		n += step_tokens(seq + n, 24); /* 1 + 72 + 1 + 72 + 1 = 147 a step */
	assert_int_equal(zb_sequence_period(seq, n, &match), 147);
	assert_true(match > 0.99);
	/* noise: one kernel of each step replaced at random */
	for (int k = 1; k < 8; k++)
		seq[k * 147 + next_rand() % 147] = 7000 + k;
	assert_int_equal(zb_sequence_period(seq, n, &match), 147);
	/* no repeat at all */
	for (size_t i = 0; i < 500; i++)
		seq[i] = (int32_t)i;
	assert_int_equal(zb_sequence_period(seq, 500, &match), 0);
	assert_int_equal(zb_sequence_period(seq, 3, &match), 0);
	char norm[64];
	zb_nvtx_normalize("train_step 12 of 300", norm, sizeof norm);
	assert_string_equal(norm, "train_step # of #");
}

/* ---- analysis -------------------------------------------------------------------- */

typedef struct builder {
	zb_trace_input in;
	size_t cap_ops, cap_r, cap_c, cap_n;
} builder;

static void op(builder *b, int64_t s, int64_t e, int kind, int64_t bytes, int32_t name)
{
	if (b->in.nops == b->cap_ops)
		b->cap_ops = b->cap_ops ? 2 * b->cap_ops : 64, b->in.ops = realloc(b->in.ops, b->cap_ops * sizeof *b->in.ops);
	b->in.ops[b->in.nops++] = (zb_gpu_op){ s, e, bytes, name, (uint8_t)kind, 0 };
}

static int32_t name(builder *b, const char *s)
{
	for (size_t i = 0; i < b->in.nnames; i++) /* interned, as the store's reader does */
		if (!strcmp(b->in.names[i], s))
			return (int32_t)i;
	if (b->in.nnames == b->cap_n)
		b->cap_n = b->cap_n ? 2 * b->cap_n : 16, b->in.names = realloc(b->in.names, b->cap_n * sizeof(char *));
	b->in.names[b->in.nnames] = strdup(s);
	return (int32_t)b->in.nnames++;
}

static void range(builder *b, int64_t s, int64_t e, int32_t nm)
{
	if (b->in.nranges == b->cap_r)
		b->cap_r = b->cap_r ? 2 * b->cap_r : 16, b->in.ranges = realloc(b->in.ranges, b->cap_r * sizeof *b->in.ranges);
	b->in.ranges[b->in.nranges++] = (zb_range){ s, e, nm, 1 };
}

static void slice(builder *b, int64_t s, int64_t e, int64_t cpu, uint32_t pid, uint32_t tid)
{
	if (b->in.ncpu == b->cap_c)
		b->cap_c = b->cap_c ? 2 * b->cap_c : 64, b->in.cpu = realloc(b->in.cpu, b->cap_c * sizeof *b->in.cpu);
	b->in.cpu[b->in.ncpu++] = (zb_cpu_slice){ s, e, cpu, pid, tid };
}

static void builder_free(builder *b)
{
	for (size_t i = 0; i < b->in.nnames; i++)
		free(b->in.names[i]);
	free(b->in.names);
	free(b->in.ops);
	free(b->in.ranges);
	free(b->in.cpu);
}

/* random overlapping kernels and copies: the parts of every step add up to it */
static void test_parts_add_up(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		builder b = { 0 };
		int32_t st = name(&b, "step #"), k = name(&b, "k");
		int64_t t = 0;
		int steps = 3 + round % 4;
		double bytes_in = 0;
		for (int s = 0; s < steps; s++) {
			int64_t len = 1000000 + next_rand() % 1000000;
			range(&b, t, t + len - next_rand() % 1000, st);
			for (int i = 0; i < 40; i++) {
				int64_t a = t + next_rand() % len, d = 1 + next_rand() % (len / 5);
				int kind = next_rand() % ZB_GOP_KIND_COUNT;
				int64_t by = kind == ZB_GOP_H2D ? 1000 + next_rand() % 1000 : 0;
				if (s < steps - 1 || a + d < t + len)
					bytes_in += (double)by;
				op(&b, a, a + d, kind, by, k);
			}
			t += len;
		}
		zb_analysis a;
		zb_analyze_options o = { 0 };
		OK(zb_analyze(&b.in, &o, &a, &err_));
		assert_string_equal(a.method, "nvtx");
		double bytes = 0;
		for (size_t i = 0; i < a.nsteps; i++) {
			const zb_step_stats *x = &a.steps[i];
			assert_close(x->compute_only_s + x->copy_only_s + x->overlap_s + x->idle_s, x->step_s, 1e-12);
			assert_true(x->compute_s <= x->step_s + 1e-12 && x->copy_s <= x->step_s + 1e-12);
			assert_true(x->h2d_s <= x->copy_s + 1e-12 && x->idle_s >= -1e-12);
			assert_close(x->compute_s, x->compute_only_s + x->overlap_s, 1e-9);
			bytes += x->h2d_bytes;
		}
		(void)bytes_in;
		assert_true(bytes > 0);
		zb_analysis_free(&a);
		builder_free(&b);
	}
}

/* A ZeRO-Offload-like step without NVTX: 16 parameter uploads, 40 kernels, 16
 * gradient copies overlapping the last kernels in an order that varies between
 * steps (two streams), then 3 ms of GPU idle while the CPU optimizer runs. The
 * pattern still finds the steps, cut at the first upload. */
static void test_pattern_jitter(void **state)
{
	(void)state;
	builder b = { 0 };
	int32_t kn[40];
	for (int i = 0; i < 40; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "k%d", i % 13);
		kn[i] = name(&b, nm);
	}
	const int64_t us = 1000;
	for (int s = 0; s < 12; s++) {
		int64_t B = s * 10000 * us, t = B;
		for (int i = 0; i < 16; i++, t += 60 * us)
			op(&b, t, t + 60 * us, ZB_GOP_H2D, 1 << 20, -1);
		for (int i = 0; i < 40; i++, t += 150 * us)
			op(&b, t, t + 150 * us, ZB_GOP_KERNEL, 0, kn[i]);
		/* gradient copies start among the last 16 kernels, jittered by up to 200 us:
		 * their order among the kernels changes from step to step */
		for (int i = 0; i < 16; i++) {
			int64_t c = t - 16 * 150 * us + i * 150 * us + 10 * us + (int64_t)(next_rand() % 200) * us;
			op(&b, c, c + 100 * us, ZB_GOP_D2H, 1 << 20, -1);
		}
	}
	zb_analysis a;
	zb_analyze_options o = { 0 };
	OK(zb_analyze(&b.in, &o, &a, &err_));
	print_message("found by %s: %zu steps\n", a.found_by, a.nsteps);
	assert_string_equal(a.method, "pattern");
	assert_int_equal(a.nsteps, 11);
	assert_close(a.median.step_s, 0.010, 1e-9);
	assert_close(a.median.h2d_bytes, 16 << 20, 1e-12);
	assert_close(a.median.d2h_bytes, 16 << 20, 1e-12);
	assert_close(a.median.compute_s, 0.006, 1e-9);
	/* idle: 10 - 0.96 - 6 = 3.04 ms, less what the last gradient copies run past the kernels */
	assert_true(a.median.idle_s > 0.00287 && a.median.idle_s <= 0.00304 + 1e-12);
	for (size_t i = 0; i < a.nsteps; i++)
		assert_int_equal(a.steps[i].start % (10000 * us), 0); /* cut at the first upload */
	zb_analysis_free(&a);
	builder_free(&b);
}

/* Figures by hand: step 10 ms; kernel [1, 5] and [6, 7]; H2D [0, 2] 40 MB; D2H
 * [4.5, 6.5] 20 MB; CPU Adam on 4 worker threads in [7, 9.5]; the main thread
 * always busy. compute 5, h2d 2, d2h 2, overlap [1, 2] + [4.5, 5] + [6, 6.5] = 2,
 * busy [0, 7], idle 3, of which [7, 9.5] = 2.5 while the optimizer runs. */
static void test_step_by_hand(void **state)
{
	(void)state;
	builder b = { 0 };
	int32_t k = name(&b, "gemm");
	const int64_t ms = 1000000;
	for (int s = 0; s < 4; s++) {
		int64_t B = s * 10 * ms;
		op(&b, B + 0, B + 2 * ms, ZB_GOP_H2D, 40000000, -1);
		op(&b, B + 1 * ms, B + 5 * ms, ZB_GOP_KERNEL, 0, k);
		op(&b, B + 9 * ms / 2, B + 13 * ms / 2, ZB_GOP_D2H, 20000000, -1);
		op(&b, B + 6 * ms, B + 7 * ms, ZB_GOP_KERNEL, 0, k);
		for (int64_t x = 0; x < 10; x++) /* 1 ms samples */
			slice(&b, B + x * ms, B + (x + 1) * ms, ms, 50, 50);
		for (uint32_t th = 51; th <= 54; th++) {
			slice(&b, B + 7 * ms, B + 19 * ms / 2, 5 * ms / 2, 50, th);
			slice(&b, B + 19 * ms / 2, B + 10 * ms, ms / 10, 50, th); /* a trickle: below 2 cores */
		}
	}
	zb_analysis a;
	zb_analyze_options o = { 0 };
	OK(zb_analyze(&b.in, &o, &a, &err_));
	assert_string_equal(a.method, "pattern");
	assert_int_equal(a.period, 4);
	assert_int_equal(a.nsteps, 3);
	const zb_step_stats *m = &a.median;
	assert_close(m->step_s, 0.010, 1e-9);
	assert_close(m->compute_s, 0.005, 1e-9);
	assert_close(m->h2d_s, 0.002, 1e-9);
	assert_close(m->d2h_s, 0.002, 1e-9);
	assert_close(m->overlap_s, 0.002, 1e-9);
	assert_close(m->idle_s, 0.003, 1e-9);
	assert_close(m->cpu_opt_s, 0.0025, 1e-9);
	assert_close(m->idle_cpu_s, 0.0025, 1e-9);
	assert_close(m->h2d_bytes, 40e6, 1e-12);
	assert_close(m->cpu_core_s, 0.010 + 4 * 0.0026, 1e-9);
	assert_close(m->idle_gaps, 1, 1e-12); /* [7, 10] */
	assert_close(m->max_gap_s, 0.003, 1e-9);
	zb_analysis_free(&a);
	/* a higher threshold than the workers reach: no optimizer time */
	o.cpu_threshold = 5;
	OK(zb_analyze(&b.in, &o, &a, &err_));
	assert_close(a.median.cpu_opt_s, 0, 1e-12);
	zb_analysis_free(&a);
	/* a step range that does not exist is an error naming it */
	o.step_range = "no such range";
	zb_error err = { 0 };
	assert_int_equal(zb_analyze(&b.in, &o, &a, &err), ZB_E_INPUT);
	assert_contains(err.msg, "no such range");
	builder_free(&b);
	builder e = { 0 };
	assert_int_equal(zb_analyze(&e.in, &o, &a, &err), ZB_E_INPUT);
	assert_contains(err.msg, "no GPU operation");
}

/* Two streams as in a Twin-Flow stage-3 step: kernels on one, uploads and
 * gradient copies on another, the records arriving unsorted and interleaved
 * (per-stream buffers, several processes). Per 10 ms step: kernels [1, 2] [3, 4]
 * [5, 6] [7, 8]; H2D [1.5, 3.5]; D2H [5.5, 7.5]: overlap 4 x 0.5 = 2 ms, busy
 * [1, 4] + [5, 8] = 6 ms, idle 4 ms, whatever the order of the records. */
static void test_overlap_unsorted(void **state)
{
	(void)state;
	builder b = { 0 };
	int32_t st = name(&b, "step #"), k = name(&b, "gemm");
	const int64_t us = 1000, ms = 1000 * us;
	for (int s = 0; s < 5; s++) {
		int64_t B = s * 10 * ms;
		range(&b, B, B + 10 * ms, st);
		for (int i = 0; i < 4; i++)
			op(&b, B + (1 + 2 * i) * ms, B + (2 + 2 * i) * ms, ZB_GOP_KERNEL, 0, k);
		op(&b, B + 1500 * us, B + 3500 * us, ZB_GOP_H2D, 8 << 20, -1);
		op(&b, B + 5500 * us, B + 7500 * us, ZB_GOP_D2H, 4 << 20, -1);
	}
	for (size_t i = b.in.nops - 1; i > 0; i--) { /* shuffle: no order at all */
		size_t j = next_rand() % (i + 1);
		zb_gpu_op x = b.in.ops[i];
		b.in.ops[i] = b.in.ops[j], b.in.ops[j] = x;
	}
	zb_range r0 = b.in.ranges[0];
	b.in.ranges[0] = b.in.ranges[3], b.in.ranges[3] = r0;
	zb_analysis a;
	zb_analyze_options o = { 0 };
	OK(zb_analyze(&b.in, &o, &a, &err_));
	assert_string_equal(a.method, "nvtx");
	assert_int_equal(a.nsteps, 5);
	for (size_t i = 0; i < a.nsteps; i++) {
		const zb_step_stats *x = &a.steps[i];
		assert_close(x->compute_s, 0.004, 1e-9);
		assert_close(x->copy_s, 0.004, 1e-9);
		assert_close(x->overlap_s, 0.002, 1e-9);
		assert_close(x->compute_only_s, 0.002, 1e-9);
		assert_close(x->copy_only_s, 0.002, 1e-9);
		assert_close(x->idle_s, 0.004, 1e-9);
		assert_close(x->h2d_bytes, 8 << 20, 1e-12);
	}
	zb_analysis_free(&a);
	builder_free(&b);
}

/* ---- import of the nsys fixture --------------------------------------------------- */

static const char *fixture_sqlite(void)
{
	const char *out = tmp("nsys-small.sqlite");
	if (access(out, F_OK) == 0)
		return out;
	const char *d = getenv("ZB_TEST_DATA");
	char path[512];
	snprintf(path, sizeof path, "%s/nsys-small.sql", d && *d ? d : "tests/data");
	char *sql = zb_test_slurp(path, NULL);
	assert_true(strlen(sql) > 1000);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(out, &db), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("fixture SQL: %s", msg);
	sqlite3_close(db);
	free(sql);
	return out;
}

static int64_t count(zb_store *s, const char *sql)
{
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(zb_store_db(s), sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static void test_import_fixture(void **state)
{
	(void)state;
	const char *file = fixture_sqlite();
	zb_store *s;
	OK(zb_store_open(&s, tmp("import.db"), 1000, &err_));
	zb_run_info info = { .kind = "import", .command = "test", .version = "t" };
	int64_t run, cfg;
	OK(zb_store_import_nsys(s, file, &info, &run, &cfg, NULL, &err_));
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 13);
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"), 8);
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET"), 4);
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), 25);
	assert_int_equal(count(s, "SELECT count(*) FROM NVTX_EVENTS"), 8);
	/* strings renumbered: names arrive intact */
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName"
				  " WHERE s.value = 'sgemm_128x128_nn'"), 8);
	assert_int_equal(count(s, "SELECT count(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId"
				  " WHERE s.value = 'cpu_adam'"), 4);
	assert_int_equal(count(s, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"
				  " WHERE s.value = 'cudaMemcpyAsync_v3020'"), 8);
	int64_t found;
	OK(zb_store_trace_config(s, run, &found, &err_));
	assert_int_equal(found, cfg);

	zb_trace_input in;
	OK(zb_store_load_trace_input(s, cfg, &in, &err_));
	assert_int_equal(in.nops, 25);
	assert_int_equal(in.nranges, 8);
	zb_analysis a;
	zb_analyze_options o = { 0 };
	OK(zb_analyze(&in, &o, &a, &err_));
	assert_string_equal(a.method, "nvtx");
	assert_int_equal(a.nsteps, 4); /* the ranges fill 95 % of their periods: the last is a step */
	const zb_step_stats *m = &a.median;
	assert_close(m->step_s, 0.010, 1e-9);
	assert_close(m->compute_s, 0.0061, 1e-9);
	assert_close(m->h2d_s, 0.001, 1e-9);
	assert_close(m->d2h_s, 0.002, 1e-9);
	assert_close(m->overlap_s, 0.001, 1e-9);
	assert_close(m->idle_s, 0.0019, 1e-9);
	assert_close(m->idle_cpu_s, 0.0013, 1e-9);
	assert_close(m->h2d_bytes / m->h2d_s, 50e9, 1e-9);
	assert_close(m->pageable_bytes, 20e6, 1e-12);
	assert_close(a.steps[3].step_s, 0.0095, 1e-9);
	OK(zb_store_add_trace_steps(s, cfg, &a, &err_));
	assert_int_equal(count(s, "SELECT count(*) FROM trace_steps"), 4);
	zb_analysis_free(&a);
	o.no_nvtx = 1; /* the same steps from the pattern, cut at the H2D copy */
	OK(zb_analyze(&in, &o, &a, &err_));
	assert_string_equal(a.method, "pattern");
	assert_int_equal(a.period, 6);
	assert_int_equal(a.nsteps, 3);
	assert_close(a.median.idle_s, 0.0019, 1e-9);
	zb_analysis_free(&a);
	zb_trace_input_free(&in);

	/* not an export; not a database; missing: refused, nothing written */
	int64_t runs = count(s, "SELECT count(*) FROM runs");
	zb_error err = { 0 };
	sqlite3 *other;
	assert_int_equal(sqlite3_open(tmp("other.sqlite"), &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	assert_int_equal(zb_store_import_nsys(s, tmp("other.sqlite"), &info, &run, &cfg, NULL, &err), ZB_E_INPUT);
	assert_contains(err.msg, "not an Nsight Systems SQLite export");
	FILE *f = fopen(tmp("text.sqlite"), "w");
	fputs("just text, long enough to not be an empty database file ......................................", f);
	fclose(f);
	assert_int_equal(zb_store_import_nsys(s, tmp("text.sqlite"), &info, &run, &cfg, NULL, &err), ZB_E_INPUT);
	assert_contains(err.msg, "text.sqlite");
	assert_int_equal(zb_store_import_nsys(s, tmp("none.sqlite"), &info, &run, &cfg, NULL, &err), ZB_E_INPUT);
	assert_contains(err.msg, "none.sqlite");
	assert_int_equal(access(tmp("none.sqlite"), F_OK), -1);
	assert_int_equal(count(s, "SELECT count(*) FROM runs"), runs);
	zb_store_close(s);
}

/* ---- a traced program's records stored and read back --------------------------------- */

static void test_store_foreign(void **state)
{
	(void)state;
	zb_store *s;
	OK(zb_store_open(&s, tmp("foreign.db"), 1000, &err_));
	zb_run_info info = { .kind = "trace", .command = "test", .version = "t" };
	int64_t run, cfg;
	OK(zb_store_add_run(s, &info, &run, &err_));
	OK(zb_store_add_foreign_config(s, run, "python3 train.py", "{\"foreign\":\"trace\"}", &cfg, &err_));
	zb_trace *t = zb_trace_create();
	t->pid = 777;
	zb_trace_fill_synthetic(t, 64, 5000000);
	zb_tr_nvtx n = { .start = 5000000, .end = 5300000, .process = 777, .thread = 778,
			 .text = zb_trace_intern(t, "train_step"), .event_type = ZB_NVTX_PUSHPOP };
	zb_trace_add_nvtx(t, &n);
	n.start = 5300000, n.end = 5600000;
	zb_trace_add_nvtx(t, &n);
	n.event_type = ZB_NVTX_MARK;
	zb_trace_add_nvtx(t, &n);
	OK(zb_store_add_trace(s, cfg, NULL, t, NULL, 1000000, &err_));
	zb_proc_sampler ps = { 0 };
	zb_cpu_sample cs[2] = { { 1000000, 2000000, 900000, 777, 778 }, { 1000000, 2000000, 100, 777, 779 } };
	zb_cpu_thread th[2] = { { 777, 778, "python3", 0, 0, 0 }, { 777, 779, "adam_worker", 0, 0, 0 } };
	ps.samples = cs, ps.nsamples = 2, ps.threads = th, ps.nthreads = 2;
	OK(zb_store_add_cpu_samples(s, cfg, &ps, 1000000, &err_));
	assert_int_equal(count(s, "SELECT count(*) FROM NVTX_EVENTS WHERE zbKind = 'program' AND eventType = 59"), 2);
	assert_int_equal(count(s, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34 AND end IS NULL"), 1);
	assert_int_equal(count(s, "SELECT min(start) FROM NVTX_EVENTS"), 4000000);
	assert_int_equal(count(s, "SELECT globalTid FROM NVTX_EVENTS LIMIT 1"), (777LL << 24) | 778);
	assert_int_equal(count(s, "SELECT count(*) FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId"
				  " WHERE s.value = 'adam_worker'"), 1);
	assert_int_equal(count(s, "SELECT sum(cpuNs) FROM ZB_THREAD_CPU"), 900100);
	assert_int_equal(count(s, "SELECT min(start) FROM ZB_THREAD_CPU"), 0);
	zb_trace_input in;
	OK(zb_store_load_trace_input(s, cfg, &in, &err_));
	assert_int_equal(in.nops, t->nkernels + t->nmemcpys + t->nmemsets);
	assert_int_equal(in.nranges, 2); /* ranges only, not the mark */
	assert_int_equal(in.ncpu, 2);
	assert_int_equal(in.cpu[1].pid, 777);
	assert_int_equal(in.cpu[1].tid, 779);
	zb_trace_input_free(&in);
	int64_t found;
	OK(zb_store_trace_config(s, 0, &found, &err_));
	assert_int_equal(found, cfg);
	zb_error err = { 0 };
	assert_int_equal(zb_store_trace_config(s, run + 5, &found, &err), ZB_E_INPUT);
	assert_contains(err.msg, "has no trace");
	zb_trace_free(t);
	zb_store_close(s);
}

/* ---- /proc ------------------------------------------------------------------------- */

static volatile int spin_go, spin_done, spin_stop;

/* Waits for go, then spins until this thread has used 30 ms of CPU (its own
 * clock, so a loaded machine only makes it take longer). */
static void *spin(void *p)
{
	(void)p;
	while (!spin_go)
		usleep(1000);
	struct timespec ts;
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	while ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec < 30000000);
	spin_done = 1;
	while (!spin_stop) /* alive at the next tick */
		usleep(1000);
	return NULL;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void test_procsample(void **state)
{
	(void)state;
	pid_t pp;
	int64_t v;
	assert_true(zb_proc_parse_ppid("1234 (odd) name (x)) S 77 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0", &pp));
	assert_int_equal(pp, 77);
	assert_true(zb_proc_parse_stat_ticks("1234 (a b) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0", &v));
	assert_int_equal(v, 300);
	assert_true(zb_proc_parse_starttime("4996 (ba) sh) S 4976 4996 4996 0 -1 4194560 43137 8951056 0 1048 15 27 7767 2413"
					    " 20 0 1 0 19682 5451776 1006", &v));
	assert_int_equal(v, 19682);
	assert_false(zb_proc_parse_ppid("garbage", &pp));
	assert_true(zb_proc_parse_schedstat("123456789 555 12\n", &v));
	assert_int_equal(v, 123456789);
	assert_false(zb_proc_parse_schedstat("x", &v));

	zb_proc_sampler *s = zb_proc_sampler_create(getpid());
	pthread_t th;
	spin_go = spin_done = spin_stop = 0;
	pthread_create(&th, NULL, spin, NULL);
	usleep(10000);
	zb_proc_sampler_tick(s, mono_ns(), 1); /* first sight of the spinner, idle */
	spin_go = 1;
	while (!spin_done)
		usleep(2000);
	zb_proc_sampler_tick(s, mono_ns(), 0);
	spin_stop = 1;
	pthread_join(th, NULL);
	/* a thread born between two ticks: its CPU so far, from the last tick on */
	int64_t before = mono_ns();
	zb_proc_sampler_tick(s, before, 0);
	size_t seen = s->nsamples;
	spin_done = spin_stop = 0;
	pthread_create(&th, NULL, spin, NULL);
	while (!spin_done)
		usleep(2000);
	zb_proc_sampler_tick(s, mono_ns(), 0);
	spin_stop = 1;
	pthread_join(th, NULL);
	int64_t born = 0;
	for (size_t i = seen; i < s->nsamples; i++)
		if (s->samples[i].cpu_ns > born)
			born = s->samples[i].cpu_ns, assert_true(s->samples[i].start >= before);
	print_message("thread born between ticks: %.1f ms of CPU\n", born / 1e6);
	assert_true(born > 28000000 && born < 40000000);
	int64_t best = 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		const zb_cpu_sample *x = &s->samples[i];
		assert_true(x->cpu_ns <= x->end - x->start);
		assert_int_equal(x->pid, getpid());
		if (x->cpu_ns > best)
			best = x->cpu_ns;
	}
	/* the spinner's 30 ms (its start-up before the first tick aside) */
	print_message("spinner: %.1f ms of CPU between two ticks, %zu threads seen\n", best / 1e6, s->nthreads);
	assert_true(best > 28000000 && best < 40000000);
	assert_true(s->nthreads >= 2);
	zb_proc_sampler_free(s);
}

/* ---- zbench trace ----------------------------------------------------------------- */

static const char *zbench_bin(void)
{
	const char *z = getenv("ZBENCH");
	return z && *z ? z : "build/zbench";
}

/* whether the injection library is beside the binary (a build with nvcc) */
static int have_inject(void)
{
	char path[512];
	snprintf(path, sizeof path, "%s", zbench_bin());
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "libzbench_inject.so");
	return access(path, R_OK) == 0;
}

static int sh(const char *cmd)
{
	print_message("$ %s\n", cmd);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The injection library alone, in a child process: it loads, exports only its
 * entry point, and InitializeInjection leaves either a spool file (CUPTI could
 * trace: a GPU machine) or a one-line .err naming why not (here), and points
 * NVTX_INJECTION64_PATH at the libcupti it uses. */
static void test_inject_library(void **state)
{
	(void)state;
	if (!have_inject())
		skip();
	char lib[512], spool[256];
	snprintf(lib, sizeof lib, "%s", zbench_bin());
	char *slash = strrchr(lib, '/');
	snprintf(slash ? slash + 1 : lib, sizeof lib - (size_t)(slash ? slash + 1 - lib : 0), "libzbench_inject.so");
	snprintf(spool, sizeof spool, "%s", tmp("spool"));
	assert_int_equal(mkdir(spool, 0700), 0);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("ZB_TRACE_SPOOL", spool, 1);
		unsetenv("NVTX_INJECTION64_PATH");
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			_exit(10);
		if (dlsym(h, "zb_trace_start") || dlsym(h, "zb_now_ns"))
			_exit(11); /* zbench's own symbols stay inside */
		int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
		if (!init || init() != 1)
			_exit(12);
		const char *nvtx = getenv("NVTX_INJECTION64_PATH");
		_exit(nvtx && strstr(nvtx, "libcupti") ? 0 : 13); /* _exit: no atexit, so the .err case only */
	}
	int st = 0;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[400];
	snprintf(path, sizeof path, "%s/%d.err", spool, (int)pid);
	char *msg = zb_test_slurp(path, NULL);
	print_message("injection without a usable GPU: %s", msg[0] ? msg : "(no .err: CUPTI started)\n");
	if (msg[0])
		assert_contains(msg, "CUPTI cannot trace here");
	free(msg);
}

static void test_trace_cli(void **state)
{
	(void)state;
	char cmd[1024];
	char db[256];
	snprintf(db, sizeof db, "%s", tmp("trace.db"));
	snprintf(cmd, sizeof cmd, "%s trace --db %s 2>/dev/null", zbench_bin(), db);
	assert_int_equal(sh(cmd), 2); /* no command */
	snprintf(cmd, sizeof cmd, "%s trace --sample-ms 0 --db %s -- true 2>/dev/null", zbench_bin(), db);
	assert_int_equal(sh(cmd), 2);
	snprintf(cmd, sizeof cmd, "ZB_INJECT_LIB=%s %s trace --db %s -- true 2>%s", tmp("nope.so"), zbench_bin(), db,
		 tmp("err.txt"));
	assert_int_equal(sh(cmd), 2);
	char *msg = zb_test_slurp(tmp("err.txt"), NULL);
	assert_contains(msg, "nope.so");
	free(msg);
	if (!have_inject()) {
		print_message("skipped the traced runs: no libzbench_inject.so (built without nvcc)\n");
		return;
	}
	/* the exit code passes through; the program's CPU time is sampled */
	snprintf(cmd, sizeof cmd,
		 "%s trace --db %s -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7' 2>%s",
		 zbench_bin(), db, tmp("err.txt"));
	assert_int_equal(sh(cmd), 7);
	msg = zb_test_slurp(tmp("err.txt"), NULL);
	assert_contains(msg, "zbench trace: stored run 1, configuration 1 in "); /* what it stored, ids first */
	assert_contains(msg, "dropped records: 0");
	free(msg);
	snprintf(cmd, sizeof cmd, "%s trace --db %s -- /nonexistent/program 2>/dev/null", zbench_bin(), db);
	assert_int_equal(sh(cmd), 127);

	/* SIGINT to zbench alone reaches the program; the run is kept */
	pid_t pid = fork();
	if (pid == 0) {
		execl(zbench_bin(), zbench_bin(), "trace", "--db", db, "--", "sleep", "20", (char *)NULL);
		_exit(99);
	}
	usleep(500000);
	kill(pid, SIGINT);
	int st = 0;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 128 + SIGINT);
	zb_store *s;
	OK(zb_store_open(&s, db, 1000, &err_));
	assert_int_equal(count(s, "SELECT count(*) FROM runs WHERE kind = 'trace'"), 3);
	assert_int_equal(count(s, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
	assert_int_equal(count(s, "SELECT count(*) FROM runs WHERE status = 'exit 7'"), 1);
	assert_int_equal(count(s, "SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'ZB_TRACE_EXIT_CODE' AND value = '7'"), 1);
	assert_true(count(s, "SELECT count(*) FROM ZB_THREAD_CPU WHERE zbConfigId = 1") > 0);
	zb_store_close(s);
	/* analyze of a trace without GPU records says so */
	snprintf(cmd, sizeof cmd, "%s analyze 1 --db %s 2>%s", zbench_bin(), db, tmp("err.txt"));
	assert_int_equal(sh(cmd), 2);
	msg = zb_test_slurp(tmp("err.txt"), NULL);
	assert_contains(msg, "run 1 has no trace");
	free(msg);
}

static void test_import_analyze_cli(void **state)
{
	(void)state;
	char file[256];
	snprintf(file, sizeof file, "%s", fixture_sqlite());
	char cmd[1024];
	char db[256];
	snprintf(db, sizeof db, "%s", tmp("cli.db"));
	snprintf(cmd, sizeof cmd, "%s import %s --db %s >%s 2>&1", zbench_bin(), file, db, tmp("out.txt"));
	assert_int_equal(sh(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s analyze --steps --db %s >%s 2>&1", zbench_bin(), db, tmp("out.txt"));
	assert_int_equal(sh(cmd), 0);
	char *out = zb_test_slurp(tmp("out.txt"), NULL);
	assert_contains(out, "4 steps found by nvtx range 'train_step'");
	assert_contains(out, "step time           10.00 ms");
	free(out);
	snprintf(cmd, sizeof cmd, "%s analyze latest --db %s >%s 2>&1", zbench_bin(), db, tmp("out.txt"));
	assert_int_equal(sh(cmd), 0); /* latest: the newest trace, as export takes it */
	snprintf(cmd, sizeof cmd, "%s analyze 1 --json --no-nvtx --db %s >%s 2>&1", zbench_bin(), db, tmp("out.txt"));
	assert_int_equal(sh(cmd), 0);
	out = zb_test_slurp(tmp("out.txt"), NULL);
	assert_contains(out, "\"method\": \"pattern\"");
	assert_contains(out, "\"nsteps\": 3");
	free(out);
	/* against a prediction: stored with the measured steps, so plot accuracy finds it */
	snprintf(cmd, sizeof cmd, "%s compare 1 --json --db %s --predict --model gpt2 --policy offload >%s 2>&1",
		 zbench_bin(), db, tmp("out.txt"));
	assert_int_equal(sh(cmd), 0);
	out = zb_test_slurp(tmp("out.txt"), NULL);
	assert_contains(out, "\"cpu_optimizer_s\"");
	assert_contains(out, "\"measured\": 0.0061");
	free(out);
	zb_store *s;
	OK(zb_store_open(&s, db, 1000, &err_));
	assert_int_equal(count(s, "SELECT count(*) FROM runs WHERE kind = 'compare-trace'"), 1);
	assert_int_equal(count(s, "SELECT count(*) FROM steps s JOIN configs c ON c.id = s.config_id JOIN runs r"
				  " ON r.id = c.run_id WHERE r.kind = 'compare-trace' AND s.source = 'measured'"), 4);
	assert_int_equal(count(s, "SELECT count(*) FROM predictions p JOIN configs c ON c.id = p.config_id JOIN runs r"
				  " ON r.id = c.run_id WHERE r.kind = 'compare-trace' AND p.step_time_s > 0"), 1);
	assert_int_equal(count(s, "SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'ZB_TRACE_COMPARE'"), 1);
	zb_store_close(s);
	snprintf(cmd, sizeof cmd, "%s compare 1 --db %s --predict --model nonesuch 2>%s", zbench_bin(), db, tmp("err.txt"));
	assert_int_equal(sh(cmd), 2);
	out = zb_test_slurp(tmp("err.txt"), NULL);
	assert_contains(out, "nonesuch");
	free(out);
	snprintf(cmd, sizeof cmd, "%s import %s/none.sqlite --db %s 2>%s", zbench_bin(), tmpdir, db, tmp("err.txt"));
	assert_int_equal(sh(cmd), 2);
	snprintf(cmd, sizeof cmd, "%s analyze 9 --db %s 2>%s", zbench_bin(), db, tmp("err.txt"));
	assert_int_equal(sh(cmd), 2);
	out = zb_test_slurp(tmp("err.txt"), NULL);
	assert_contains(out, "run 9 has no trace");
	free(out);
}

int main(void)
{
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_records),
		cmocka_unit_test(test_spool_roundtrip),
		cmocka_unit_test(test_sequence_period),
		cmocka_unit_test(test_parts_add_up),
		cmocka_unit_test(test_step_by_hand),
		cmocka_unit_test(test_pattern_jitter),
		cmocka_unit_test(test_overlap_unsorted),
		cmocka_unit_test(test_import_fixture),
		cmocka_unit_test(test_store_foreign),
		cmocka_unit_test(test_procsample),
		cmocka_unit_test(test_inject_library),
		cmocka_unit_test(test_trace_cli),
		cmocka_unit_test(test_import_analyze_cli),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return rc;
}
