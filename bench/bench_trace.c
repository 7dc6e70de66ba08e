/*
 * bench_trace.c - benchmark cases of the profiler, each with its target:
 *   trace-insert    a synthetic trace of ~1.3 M rows (kernels, copies, memsets, API
 *                   calls, syncs, CPU spans) into a fresh database: rows/s of
 *                   zb_store_add_trace plus the commit (target >= 1 M rows/s)
 *   trace-overhead  the 2.5B GPT step (dpu, ratio 0.25, micro-batch 4, seq 2048)
 *                   executed untraced and traced in alternation: step time of each
 *                   (median), the overhead (target <= 2%), records per step, dropped
 *                   records, kernels against launches, and the insert rate of that
 *                   real trace
 * One file for both builds: without CUDA the executor and zb_trace_start say so
 * and trace-overhead is waived.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/cases.h"
#include "exec/executor.h"
#include "exec/threadpool.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "results/store.h"
#include "sim/engine.h"
#include "sim/predict.h"
#include "inputs/presets.h"

/* Rows a stored trace takes (the bulk tables; the few metadata rows aside). */
static double trace_rows(const zb_trace *t, const zb_spans *sp)
{
	return (double)(t->nkernels + t->nmemcpys + t->nmemsets + t->napis + t->nsyncs + t->noverheads +
			zb_spans_total(sp));
}

/* Store t and sp under configuration 1 of a fresh database in /tmp; seconds taken
 * by zb_store_add_trace and the commit. */
static zb_status time_insert(const zb_trace *t, const zb_spans *sp, const zb_graph *g, int64_t origin, double *secs,
			     zb_error *err)
{
	char dir[] = "/tmp/zbench-trace-XXXXXX";
	if (!mkdtemp(dir))
		return zb_fail(err, ZB_E_INTERNAL, "cannot create a temporary directory");
	char path[64];
	snprintf(path, sizeof path, "%s/trace.db", dir);
	zb_store *s = NULL;
	zb_status st = zb_store_open(&s, path, 1000, err);
	if (!st) {
		double t0 = zb_wall_s();
		if (!(st = zb_store_begin(s, err)) && !(st = zb_store_add_trace(s, 1, g, t, sp, origin, err)))
			st = zb_store_commit(s, err);
		*secs = zb_wall_s() - t0;
		if (st)
			zb_store_rollback(s);
		zb_store_close(s);
	}
	static const char *const suffix[] = { "", "-wal", "-shm" };
	for (int i = 0; i < 3; i++) {
		char f[80];
		snprintf(f, sizeof f, "%s%s", path, suffix[i]);
		unlink(f);
	}
	rmdir(dir);
	return st;
}

static zb_status run_insert(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	size_t ntasks = a->size > 0 ? (size_t)a->size : a->quick ? 20000 : 400000;
	zb_trace *t = zb_trace_create();
	zb_trace_fill_synthetic(t, ntasks, 1000000);
	zb_spans *sp = zb_spans_create();
	zb_span_buf *b = zb_spans_thread(sp, "zb-disp-cpu");
	for (size_t i = 0; i < ntasks / 4; i++)
		zb_span_add(b, i % 2 ? ZB_SPAN_TASK : ZB_SPAN_WAIT, (int32_t)i, i % 2 ? -1 : (int32_t)i + 1,
			    1000000 + (int64_t)i * 40000, 1000000 + (int64_t)i * 40000 + 30000);
	int reps = a->repeats > 0 ? a->repeats : 3;
	double *v = zb_xmalloc((size_t)reps * sizeof *v);
	zb_status st = ZB_OK;
	for (int r = 0; r < reps && !st; r++)
		st = time_insert(t, sp, NULL, 0, &v[r], err);
	if (!st) {
		double rows = trace_rows(t, sp), med = zb_median(v, reps);
		fprintf(out, "%-14s %10.0f rows %8.3f s %8.2f M rows/s (median of %d, incl. commit)\n", "trace-insert",
			rows, med, rows / med / 1e6, reps);
		json_object_set_new(res, "rows", json_real(rows));
		json_object_set_new(res, "seconds", json_real(med));
		json_object_set_new(res, "rows_per_s", json_real(rows / med));
	}
	free(v);
	zb_spans_free(sp);
	zb_trace_free(t);
	return st;
}

static const char *no_gpu(void)
{
	static zb_error err;
	return zb_exec_available(&err) ? NULL : err.msg;
}

static zb_status run_overhead(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_status st = zb_preset_model(a->quick ? "gpt2" : "gpt-2.5b", &c.model, err);
	if (st)
		return st;
	zb_policy_defaults(&c.policy);
	if ((st = zb_policy_parse("dpu", &c.policy.kind, err)))
		return st;
	c.policy.ratio = 0.25;
	c.policy.micro_batch = a->quick ? 2 : 4;
	c.policy.seq = a->quick ? 512 : 2048;
	const int warm = 2;
	c.steps = warm + 4;
	zb_prediction p;
	if ((st = zb_predict(&p, &c, err)))
		return st;
	int pairs = a->repeats > 0 ? a->repeats : 3;
	double *off = zb_xcalloc((size_t)pairs, sizeof *off), *on = zb_xcalloc((size_t)pairs, sizeof *on);
	double records = 0, dropped = 0, kernels = 0, launches = 0, rows = 0, insert_s = 0, unmapped = 0;
	fprintf(out, "%-14s %-6s %10s %10s %10s %8s %8s %10s\n", "trace-overhead", "pair", "off", "on", "overhead",
		"dropped", "kernels", "launched");
	fprintf(out, "%-14s %-6s %10s %10s %10s %8s %8s %10s\n", "", "", "ms/step", "ms/step", "%", "", "", "");
	for (int i = 0; i < pairs && !st; i++) {
		for (int traced = 0; traced < 2 && !st; traced++) {
			zb_trace *t = NULL;
			zb_spans *sp = NULL;
			if (traced) {
				t = zb_trace_create();
				if ((st = zb_trace_start(t, err))) {
					zb_trace_free(t);
					break;
				}
				sp = zb_spans_create();
			}
			zb_exec_options eo = { .quiet = 1, .seed = 42, .trace = traced, .spans = sp };
			zb_exec_result r;
			st = zb_execute(&p.graph, &c, &eo, &r, err);
			zb_error terr = { 0 };
			if (t && zb_trace_stop(t, &terr) && !st)
				st = zb_fail(err, terr.status, "%s", terr.msg);
			if (!st) {
				double step = zb_step_time_window(&p.graph, r.end, warm);
				(traced ? on : off)[i] = step;
				if (t) {
					zb_trace_resolve(t, &p.graph, r.start, r.end, r.t0_ns);
					records += trace_rows(t, sp) / c.steps / pairs;
					dropped += (double)t->dropped;
					kernels += (double)t->nkernels / pairs;
					launches += (double)t->launches / pairs;
					unmapped += (double)t->unmapped;
					double secs = 0;
					if (i == 0 && !(st = time_insert(t, sp, &p.graph, r.t0_ns, &secs, err))) {
						rows = trace_rows(t, sp);
						insert_s = secs;
					}
				}
				zb_exec_result_free(&r);
			}
			zb_trace_free(t);
			zb_spans_free(sp);
		}
		if (!st)
			fprintf(out, "%-14s %-6d %10.2f %10.2f %10.2f\n", "", i, off[i] * 1e3, on[i] * 1e3,
				100 * (on[i] / off[i] - 1));
	}
	if (!st) {
		double moff = zb_median(off, pairs), mon = zb_median(on, pairs);
		double over = 100 * (mon / moff - 1);
		fprintf(out, "%-14s %-6s %10.2f %10.2f %10.2f %8.0f %8.0f %10.0f  (%s, %d pairs)\n", "", "median",
			moff * 1e3, mon * 1e3, over, dropped, kernels, launches, c.model.name, pairs);
		fprintf(out, "%-14s %.0f records a step, %.0f GPU records unmapped; insert of one run's trace: %.0f rows in"
			     " %.3f s, %.2f M rows/s\n",
			"", records, unmapped, rows, insert_s, insert_s > 0 ? rows / insert_s / 1e6 : 0);
		json_object_set_new(res, "model", json_string(c.model.name));
		json_object_set_new(res, "step_off_s", json_real(moff));
		json_object_set_new(res, "step_on_s", json_real(mon));
		json_object_set_new(res, "overhead_pct", json_real(over));
		json_object_set_new(res, "records_per_step", json_real(records));
		json_object_set_new(res, "dropped", json_real(dropped));
		json_object_set_new(res, "kernels", json_real(kernels));
		json_object_set_new(res, "launches", json_real(launches));
		json_object_set_new(res, "unmapped", json_real(unmapped));
		json_object_set_new(res, "insert_rows", json_real(rows));
		json_object_set_new(res, "insert_rows_per_s", json_real(insert_s > 0 ? rows / insert_s : 0));
	}
	free(off);
	free(on);
	zb_prediction_free(&p);
	return st;
}

const zb_bench_case zb_bench_trace_cases[] = {
	{ "trace-insert", "cpu", "a synthetic trace of ~1.3M rows into SQLite (nsys tables), rows/s", NULL, run_insert },
	{ "trace-overhead", "gpu", "2.5B dpu 0.25 step untraced vs traced (CUPTI + CPU spans), overhead %", no_gpu,
	  run_overhead },
	{ 0 },
};
