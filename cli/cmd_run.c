/*
 * cmd_run.c - zbench run: execute a configuration's schedule on the GPU (exec/),
 * simulate the very same graph, and store both timelines so every measured task
 * sits beside its prediction. Options are predict's, plus --steps/--warmup.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/stop.h"
#include "report/report.h"
#include "report/run_json.h"
#include "cli/session.h"
#include "common/stats.h"
#include "exec/executor.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "results/store_ranks.h"
#include "core/attention.h"
#include "sim/predict.h"


static void usage(FILE *f)
{
	fprintf(f, "usage: zbench run [options] [--warmup <n>] [--check] [--trace] [--quiet] [--json]\n\n"
		   "Execute the schedule of one configuration on the GPU: cuBLAS GEMMs with the model's\n"
		   "shapes, pinned PCIe copies, SIMD CPU Adam on pinned threads, GPU Adam. --steps counts\n"
		   "the measured steps (default 4), --warmup the steps run before them (default: until the\n"
		   "prediction is steady, at least 2: dpu lets the GPU run two steps ahead of the CPU).\n"
		   "--check replaces gradients by fixed synthetic ones and verifies the fp32 master\n"
		   "weights against a double-precision Adam (1e-6 relative). Ctrl-C stops after the\n"
		   "current step and stores what ran. --trace records the run with CUPTI (kernels,\n"
		   "copies, memsets, API calls, synchronization) and CPU spans, and stores the trace in\n"
		   "the Nsight-Systems-export tables of the database (zbench export <config-id>).\n"
		   "--gpus N runs N data-parallel ranks on GPUs 0..N-1, one thread each, NCCL (loaded at\n"
		   "run time: libnccl.so.2 on LD_LIBRARY_PATH, or ZB_NCCL_LIBRARY) for the collectives;\n"
		   "the step time is the slowest rank's, every rank's timeline is stored (table ranks,\n"
		   "rank_events). Not with --check or --trace.\n\n");
	zb_options_usage(f);
}

/* One summary line of the trace and where it went. */
static void print_trace(const zb_trace *t, const zb_spans *spans, const zb_graph *g, int64_t config_id)
{
	zb_trace_summary s;
	zb_trace_summarize(t, &s);
	size_t gpu_tasks = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		gpu_tasks += g->tasks[i].resource != ZB_RES_CPU;
	printf("trace: %zu kernels (%llu launched), %zu copies (%.3f GB h2d, %.3f GB d2h), %zu memsets, %zu API calls,"
	       " %zu CPU spans; %zu of %zu GPU tasks have records; %llu records dropped; clock %s\n",
	       s.kernels, (unsigned long long)t->launches, s.memcpys, s.h2d_bytes / 1e9, s.d2h_bytes / 1e9, s.memsets,
	       s.apis, zb_spans_total(spans), s.tasks_seen, gpu_tasks, (unsigned long long)t->dropped, t->clock_method);
	if (config_id > 0)
		printf("trace stored as configuration %lld: zbench export %lld --format perfetto -o trace.json\n",
		       (long long)config_id, (long long)config_id);
}

/* One run: the configuration, its prediction, what the executor measured. */
typedef struct run {
	zb_options o;
	int warmup, check, trace;
	int settle;              /* the step the prediction is steady from (zb_predict_warmup) */
	zb_config c;
	zb_sources src;
	int measured_steps;
	zb_prediction p;
	double predicted_step;
	zb_trace *tr;
	zb_spans *spans;
	zb_exec_result r;
	int64_t config_id, stored;
	/* several GPUs (graph.ranks > 1): every rank's result; r is the slowest's */
	int nranks, slowest;
	zb_exec_result *rr;
} run;

/* The configuration (4 measured steps unless --steps, after the warm-up ones) and
 * its prediction; it must fit. */
static zb_status plan(run *x, zb_error *err)
{
	zb_status st;
	if ((st = zb_options_single_src(&x->o, &x->c, &x->src, err)))
		return st;
	/* the executor runs zbench's own schedule: a --ds-config gives the policy here */
	if (x->c.framework != ZB_FW_ZBENCH) {
		if (x->o.axis[ZB_AX_FRAMEWORK])
			return zb_fail(err, ZB_E_INPUT, "run executes zbench's own schedule, not framework '%s' (predict and "
							"sweep model it; validate --deepspeed runs DeepSpeed)",
				       x->o.axis[ZB_AX_FRAMEWORK]);
		x->c.framework = ZB_FW_ZBENCH;
	}
	/* several GPUs: one node, the plain run (exec/ranks_cuda.c) */
	if (x->c.policy.nodes > 1)
		return zb_fail(err, ZB_E_INPUT, "--nodes %d: run executes on the GPUs of this node only (predict and sweep "
						"model several nodes)", x->c.policy.nodes);
	if (x->c.policy.gpus > 1 && (x->check || x->trace))
		return zb_fail(err, ZB_E_INPUT, "--%s runs one GPU, not --gpus %d", x->check ? "check" : "trace",
			       x->c.policy.gpus);
	if (!x->o.axis[ZB_AX_STEPS])
		x->c.steps = 4;
	/* the steady state: warm-up until the prediction settles, unless --warmup says */
	int w;
	if ((st = zb_predict_warmup(&x->c, &w, &x->settle, err)))
		return st;
	if (x->warmup < 0)
		x->warmup = w;
	x->measured_steps = x->c.steps;
	x->c.steps = x->warmup + x->measured_steps;
	if (!zb_exec_available(err))
		return err->status;
	if ((st = zb_predict(&x->p, &x->c, err)))
		return st;
	if (!x->p.mem.fits) {
		zb_fail(err, ZB_E_NOFIT, "configuration does not fit: %s", x->p.mem.reason);
		zb_prediction_free(&x->p);
		return ZB_E_NOFIT;
	}
	x->predicted_step = zb_step_time_window(&x->p.graph, x->p.res.end, x->warmup);
	return ZB_OK;
}

/* Tracing starts before the executor makes its first CUDA call; when CUPTI cannot
 * trace here the run goes on untraced and says so once. */
static void start_trace(run *x)
{
	zb_error terr = { 0 };
	if (!x->trace)
		return;
	x->tr = zb_trace_create();
	if (zb_trace_start(x->tr, &terr)) {
		fprintf(stderr, "zbench: running untraced: %s\n", terr.msg);
		zb_trace_free(x->tr);
		x->tr = NULL;
	} else {
		x->spans = zb_spans_create();
	}
}

/* The schedule on the GPU (Ctrl-C stops after the current step), then the trace
 * stopped and mapped to tasks. */
/* Several GPUs: every rank runs the graph (exec/ranks_cuda.c); the step time is
 * the slowest rank's, and x->r becomes that rank's result. */
static zb_status execute_ranks(run *x, zb_error *err)
{
	int R = x->p.graph.ranks;
	zb_exec_options eo = { .quiet = x->o.quiet || x->o.json, .seed = 1234 };
	x->rr = zb_xcalloc((size_t)R, sizeof *x->rr);
	zb_status st = zb_execute_ranks(&x->p.graph, &x->c, &eo, x->rr, err);
	if (st) {
		free(x->rr);
		x->rr = NULL;
		return st;
	}
	x->nranks = R;
	for (int i = 0; i < R; i++) {
		zb_exec_result *r = &x->rr[i];
		if (r->steps_done > x->warmup)
			r->step_time_s = zb_step_time_window(&x->p.graph, r->end, x->warmup);
		if (r->step_time_s > x->rr[x->slowest].step_time_s)
			x->slowest = i;
	}
	x->r = x->rr[x->slowest]; /* a view: rr owns the timelines */
	return ZB_OK;
}

static zb_status execute(run *x, zb_error *err)
{
	if (x->p.graph.ranks > 1)
		return execute_ranks(x, err);
	zb_stop_catch();
	start_trace(x);
	zb_exec_options eo = { .quiet = x->o.quiet || x->o.json, .check = x->check, .seed = 1234,
			       .stop = &zb_stop_requested, .trace = x->tr != NULL, .spans = x->spans };
	zb_status st = zb_execute(&x->p.graph, &x->c, &eo, &x->r, err);
	zb_stop_release();
	if (x->tr) {
		zb_error terr = { 0 };
		if (zb_trace_stop(x->tr, &terr) && !st)
			fprintf(stderr, "zbench: the trace may be incomplete: %s\n", terr.msg);
		if (!st)
			zb_trace_resolve(x->tr, &x->p.graph, x->r.start, x->r.end, x->r.t0_ns);
	}
	if (st)
		return st;
	if (x->r.steps_done > x->warmup)
		x->r.step_time_s = zb_step_time_window(&x->p.graph, x->r.end, x->warmup);
	return ZB_OK;
}

/* Every rank's summary and timeline (results/store_ranks.h). */
static zb_status store_ranks(const run *x, zb_store *store, zb_error *err)
{
	zb_rank_row *rows = zb_xcalloc((size_t)x->nranks, sizeof *rows);
	for (int i = 0; i < x->nranks; i++) {
		const zb_exec_result *r = &x->rr[i];
		rows[i] = (zb_rank_row){ .rank = i, .device = r->device, .cpu_threads = r->cpu_threads,
					 .t0_offset_ns = r->t0_ns - x->rr[0].t0_ns, .step_time_s = r->step_time_s,
					 .slowest = i == x->slowest, .start = r->start, .end = r->end };
		memcpy(rows[i].busy_s, r->busy_s, sizeof rows[i].busy_s);
	}
	zb_status st = zb_store_add_ranks(store, x->config_id, &x->p.graph, rows, x->nranks, err);
	free(rows);
	return st;
}

/* The result(s) of the executor. */
static void free_results(run *x)
{
	if (!x->rr) {
		zb_exec_result_free(&x->r);
		return;
	}
	for (int i = 0; i < x->nranks; i++)
		zb_exec_result_free(&x->rr[i]);
	free(x->rr);
	x->rr = NULL;
}

/* Configuration, prediction, tasks, both timelines, measured steps and the trace,
 * in one transaction. */
static zb_status store(run *x, int argc, char **argv, zb_error *err)
{
	zb_session s;
	const zb_exec_result *r = &x->r;
	zb_status st;
	if ((st = zb_session_open(&s, &x->o, "run", r->device, argc, argv, err)) ||
	    (st = zb_session_store_prediction(&s, &x->c, &x->p.graph, &x->p.res, &x->p.mem, 1, &x->config_id, err)) ||
	    (s.store && (st = zb_store_add_events(s.store, x->config_id, "measured", &x->p.graph, r->start, r->end, err))) ||
	    (s.store && (st = zb_store_add_steps(s.store, x->config_id, "measured", r->steps_done, r->step_s, err))) ||
	    (s.store && x->tr &&
	     (st = zb_store_add_trace(s.store, x->config_id, &x->p.graph, x->tr, x->spans, r->t0_ns, err))) ||
	    (s.store && x->nranks > 1 && (st = store_ranks(x, s.store, err))) ||
	    (st = zb_session_commit(&s, r->interrupted ? "interrupted" : "ok", err))) {
		zb_session_abort(&s);
		return st;
	}
	x->stored = s.store != NULL;
	return ZB_OK;
}

/* --check: the fp32 master weights against a double-precision Adam. 1 when off. */
static int precision_failed(const run *x)
{
	const zb_exec_result *r = &x->r;
	if (!x->check || !(r->master_rel_err > 1e-6 || r->param16_mismatches || r->nan_found))
		return 0;
	fprintf(stderr, "zbench: precision check failed: master weights differ from the double reference by "
			"%.3g (relative, limit 1e-6), %lld 16-bit parameters not the rounded master, nan %s\n",
		r->master_rel_err, (long long)r->param16_mismatches, r->nan_found ? "found" : "none");
	return ZB_EXIT_VERDICT;
}

/* Several GPUs: each rank's measured summary; "slowest" is the rank reported. */
static json_t *ranks_json(const run *x)
{
	json_t *a = json_array();
	for (int i = 0; i < x->nranks; i++) {
		json_t *j = zb_run_measured_json(&x->rr[i]);
		json_object_set_new(j, "rank", json_integer(i));
		json_object_set_new(j, "slowest", json_boolean(i == x->slowest));
		char hex[24];
		snprintf(hex, sizeof hex, "%016llx", (unsigned long long)x->rr[i].params_digest);
		json_object_set_new(j, "params_digest", json_string(hex));
		json_array_append_new(a, j);
	}
	return a;
}

static void print_ranks(const run *x)
{
	for (int i = 0; i < x->nranks; i++) {
		const zb_exec_result *r = &x->rr[i];
		printf("# rank %d: %s, %d CPU threads, step %.2f ms, comm busy %.2f ms/step, parameters %016llx%s\n", i,
		       r->device, r->cpu_threads, r->step_time_s * 1e3, r->busy_s[ZB_RES_COMM] * 1e3,
		       (unsigned long long)r->params_digest, i == x->slowest ? " (slowest: the step time)" : "");
	}
}

static void report_json(const run *x)
{
	const zb_exec_result *r = &x->r;
	json_t *j = zb_run_json(&x->c, &x->p, x->predicted_step, r, zb_run_measured_json(r), x->warmup);
	zb_sources_json(j, &x->c, &x->src);
	json_object_set_new(j, "config_id", json_integer(x->config_id));
	double drift = zb_step_drift(r->step_s, r->steps_done, x->warmup);
	json_object_set_new(j, "steady", json_pack("{s:i, s:i, s:o}", "predicted_settle_step", x->settle, "warmup",
						   x->warmup, "measured_drift", isnan(drift) ? json_null() : json_real(drift)));
	if (x->check) {
		json_object_set_new(j, "master_rel_err", json_real(r->master_rel_err));
		json_object_set_new(j, "param16_mismatches", json_integer(r->param16_mismatches));
	}
	if (x->tr)
		json_object_set_new(j, "trace", zb_run_trace_json(x->tr, x->spans));
	if (x->nranks > 1)
		json_object_set_new(j, "ranks", ranks_json(x));
	zb_json_print(stdout, j);
	json_decref(j);
}

static void report_text(const run *x, int failed)
{
	const zb_exec_result *r = &x->r;
	const zb_sim_result *pr = &x->p.res;
	zb_print_header(stdout, "run", &x->c);
	zb_sources_print(stdout, &x->c, &x->src, 0);
	printf("# device %s, %d CPU threads (%s Adam), %d warm-up + %d measured steps%s\n", r->device, r->cpu_threads,
	       r->adam_isa ? r->adam_isa : "?", x->warmup, x->measured_steps, r->interrupted ? " (interrupted)" : "");
	double drift = zb_step_drift(r->step_s, r->steps_done, x->warmup);
	printf("# steady state: the prediction settles at step %d%s; measured steps after %d: second half %+.1f %% on the "
	       "first%s\n", x->settle, x->warmup + 1 < x->settle ? " (after the warm-up: --warmup is short)" : "",
	       x->warmup, 100 * drift, isnan(drift) ? " (too few steps to tell)" : fabs(drift) > 0.05 ? ": NOT steady" : "");
	if (x->nranks > 1)
		print_ranks(x);
	printf("# attention %s", zb_attention_name(x->c.policy.attention));
	if (x->c.policy.link_rate_Bps > 0)
		printf(", link paced to %.2f GB/s (native measured: d2h %.2f, h2d %.2f GB/s)", x->c.policy.link_rate_Bps / 1e9,
		       r->link_native_Bps[0] / 1e9, r->link_native_Bps[1] / 1e9);
	printf("\n");
	printf("%-10s %12s %12s %8s\n", "resource", "predicted", "measured", "error");
	printf("%-10s %12s %12s %8s\n", "", "ms/step", "ms/step", "%");
	for (int res = 0; res < ZB_RES_COUNT; res++)
		printf("%-10s %12.2f %12.2f %8.1f\n", zb_resource_name(res), pr->busy_s[res] * 1e3, r->busy_s[res] * 1e3,
		       r->busy_s[res] > 0 ? 100 * (pr->busy_s[res] - r->busy_s[res]) / r->busy_s[res] : 0);
	printf("%-10s %12.2f %12.2f %8.1f\n", "step", x->predicted_step * 1e3, r->step_time_s * 1e3,
	       r->step_time_s > 0 ? 100 * (x->predicted_step - r->step_time_s) / r->step_time_s : 0);
	printf("throughput %10.0f tokens/s, %.1f TFLOP/s (model FLOPs); lower bound %.2f ms (%s)\n", r->tokens_per_s,
	       r->tflops_per_gpu, pr->lower_bound_s * 1e3, zb_resource_name(pr->bound_resource));
	if (x->check)
		printf("precision: master vs double reference %.3g relative (max %.3g), %lld param16 mismatches: %s\n",
		       r->master_rel_err, r->master_max_rel_err, (long long)r->param16_mismatches, failed ? "FAILED" : "ok");
	if (x->tr)
		print_trace(x->tr, x->spans, &x->p.graph, x->stored ? x->config_id : 0);
}

int cmd_run(int argc, char **argv)
{
	run *x = zb_xcalloc(1, sizeof *x);
	x->warmup = -1; /* zb_predict_warmup's, unless given */
	const zb_flag extra[] = {
		ZB_INT("warmup", &x->warmup, 0, 1000, "<n>", NULL),
		ZB_SWITCH("check", &x->check, NULL),
		ZB_SWITCH("trace", &x->trace, NULL),
		{ 0 },
	};
	zb_error err = { 0 };
	int rc;
	if (!zb_options_parse(argc, argv, extra, usage, &x->o, &rc)) {
		free(x);
		return rc;
	}
	if (plan(x, &err)) {
		free(x);
		return zb_report_error(&err);
	}
	zb_status st = execute(x, &err);
	if (!st && (st = store(x, argc, argv, &err)))
		free_results(x);
	if (st) {
		rc = zb_report_error(&err);
	} else {
		rc = precision_failed(x);
		if (x->o.json)
			report_json(x);
		else
			report_text(x, rc);
		free_results(x);
	}
	zb_trace_free(x->tr);
	zb_spans_free(x->spans);
	zb_prediction_free(&x->p);
	free(x);
	return rc;
}
