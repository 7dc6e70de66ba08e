/*
 * cmd_run.c - zbench run: execute a configuration's schedule on the GPU (exec/),
 * simulate the very same graph, and store both timelines so every measured task
 * sits beside its prediction. Options are predict's, plus --steps/--warmup.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/commands.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/run_json.h"
#include "bench/session.h"
#include "exec/executor.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "sim/attention.h"
#include "sim/predict.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench run [options] [--warmup <n>] [--check] [--trace] [--quiet] [--json]\n\n"
		   "Execute the schedule of one configuration on the GPU: cuBLAS GEMMs with the model's\n"
		   "shapes, pinned PCIe copies, SIMD CPU Adam on pinned threads, GPU Adam. --steps counts\n"
		   "the measured steps (default 4), --warmup the steps run before them (default 2).\n"
		   "--check replaces gradients by fixed synthetic ones and verifies the fp32 master\n"
		   "weights against a double-precision Adam (1e-6 relative). Ctrl-C stops after the\n"
		   "current step and stores what ran. --trace records the run with CUPTI (kernels,\n"
		   "copies, memsets, API calls, synchronization) and CPU spans, and stores the trace in\n"
		   "the Nsight-Systems-export tables of the database (zbench export <config-id>).\n\n");
	zb_options_usage(f);
}

static json_t *measured_json(const zb_exec_result *r)
{
	json_t *j = json_object();
	json_object_set_new(j, "step_time_s", json_real(r->step_time_s));
	json_object_set_new(j, "tokens_per_s", json_real(r->tokens_per_s));
	json_object_set_new(j, "tflops_per_gpu", json_real(r->tflops_per_gpu));
	json_t *busy = json_object();
	for (int res = 0; res < ZB_RES_COUNT; res++)
		json_object_set_new(busy, zb_resource_name(res), json_real(r->busy_s[res]));
	json_object_set_new(j, "busy_s", busy);
	json_t *steps = json_array();
	for (int i = 0; i < r->steps_done; i++)
		json_array_append_new(steps, json_real(r->step_s[i]));
	json_object_set_new(j, "steps_s", steps);
	json_object_set_new(j, "device", json_string(r->device));
	json_object_set_new(j, "cpu_threads", json_integer(r->cpu_threads));
	json_object_set_new(j, "adam_isa", json_string(r->adam_isa ? r->adam_isa : ""));
	json_object_set_new(j, "interrupted", json_boolean(r->interrupted));
	return j;
}

static json_t *trace_json(const zb_trace *t, const zb_spans *spans)
{
	zb_trace_summary s;
	zb_trace_summarize(t, &s);
	json_t *j = json_object();
	json_object_set_new(j, "kernels", json_integer((json_int_t)s.kernels));
	json_object_set_new(j, "kernel_launches", json_integer((json_int_t)t->launches));
	json_object_set_new(j, "memcpys", json_integer((json_int_t)s.memcpys));
	json_object_set_new(j, "memsets", json_integer((json_int_t)s.memsets));
	json_object_set_new(j, "api_calls", json_integer((json_int_t)s.apis));
	json_object_set_new(j, "syncs", json_integer((json_int_t)s.syncs));
	json_object_set_new(j, "cpu_spans", json_integer((json_int_t)zb_spans_total(spans)));
	json_object_set_new(j, "h2d_bytes", json_real(s.h2d_bytes));
	json_object_set_new(j, "d2h_bytes", json_real(s.d2h_bytes));
	json_object_set_new(j, "tasks_with_gpu_records", json_integer((json_int_t)s.tasks_seen));
	json_object_set_new(j, "mapped_by_tag", json_integer((json_int_t)t->mapped_tag));
	json_object_set_new(j, "mapped_by_time", json_integer((json_int_t)t->mapped_time));
	json_object_set_new(j, "unmapped", json_integer((json_int_t)t->unmapped));
	json_object_set_new(j, "dropped", json_integer((json_int_t)t->dropped));
	json_object_set_new(j, "clock", json_string(t->clock_method));
	return j;
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

/* run's own flags */
typedef struct run_flags {
	int warmup, check, trace;
} run_flags;

static int take_run_flag(void *ctx, int opt, const char *arg, zb_error *err)
{
	run_flags *f = ctx;
	char *end;
	long v;
	switch (opt) {
	case 'w':
		v = strtol(arg, &end, 10);
		if (*end || end == arg || v < 0 || v > 1000) {
			zb_fail(err, ZB_E_INPUT, "invalid value '%s' for --warmup (expected 0..1000)", arg);
			return -1;
		}
		f->warmup = (int)v;
		return 1;
	case 'c': f->check = 1; return 1;
	case 'T': f->trace = 1; return 1;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "warmup", required_argument, NULL, 'w' },
		{ "check", no_argument, NULL, 'c' },
		{ "trace", no_argument, NULL, 'T' },
		{ 0 },
	};
	zb_options o = { 0 };
	zb_error err = { 0 };
	run_flags fl = { .warmup = 2 };
	int rc;
	if (!zb_options_parse(argc, argv, extra, take_run_flag, &fl, usage, &o, &rc))
		return rc;
	int warmup = fl.warmup, check = fl.check, trace = fl.trace;
	zb_config c;
	zb_sources src;
	if (zb_options_single_src(&o, &c, &src, &err))
		return zb_report_error(&err);
	if (!o.axis[ZB_AX_STEPS])
		c.steps = 4;
	if (!o.axis[ZB_AX_ATTENTION] && zb_attention_flash_ok(&c.model))
		c.policy.attention = ZB_ATTN_FLASH; /* what frameworks run; --attention eager for the GEMM path */
	int measured_steps = c.steps;
	c.steps = warmup + measured_steps;
	if (!zb_exec_available(&err))
		return zb_report_error(&err);

	zb_prediction p;
	if (zb_predict(&p, &c, &err))
		return zb_report_error(&err);
	if (!p.mem.fits) {
		zb_fail(&err, ZB_E_NOFIT, "configuration does not fit: %s", p.mem.reason);
		zb_prediction_free(&p);
		return zb_report_error(&err);
	}
	double predicted_step = zb_step_time_window(&p.graph, p.res.end, warmup);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* tracing starts before the executor makes its first CUDA call; when CUPTI
	 * cannot trace here the run goes on untraced and says so once */
	zb_trace *tr = NULL;
	zb_spans *spans = NULL;
	if (trace) {
		zb_error terr = { 0 };
		tr = zb_trace_create();
		if (zb_trace_start(tr, &terr)) {
			fprintf(stderr, "zbench: running untraced: %s\n", terr.msg);
			zb_trace_free(tr);
			tr = NULL;
		} else {
			spans = zb_spans_create();
		}
	}
	zb_exec_options eo = { .quiet = o.quiet || o.json, .check = check, .seed = 1234, .stop = &stop_requested,
			       .trace = tr != NULL, .spans = spans };
	zb_exec_result r;
	zb_status st = zb_execute(&p.graph, &c, &eo, &r, &err);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (tr) {
		zb_error terr = { 0 };
		if (zb_trace_stop(tr, &terr) && !st)
			fprintf(stderr, "zbench: the trace may be incomplete: %s\n", terr.msg);
		if (!st)
			zb_trace_resolve(tr, &p.graph, r.start, r.end, r.t0_ns);
	}
	if (st) {
		zb_trace_free(tr);
		zb_spans_free(spans);
		zb_prediction_free(&p);
		return zb_report_error(&err);
	}
	if (r.steps_done > warmup)
		r.step_time_s = zb_step_time_window(&p.graph, r.end, warmup);

	/* store: configuration, prediction, tasks, both timelines, measured steps */
	zb_session s;
	int64_t config_id;
	if (zb_session_open(&s, &o, "run", r.device, argc, argv, &err) ||
	    zb_session_store_prediction(&s, &c, &p.graph, &p.res, &p.mem, 1, &config_id, &err) ||
	    (s.store && zb_store_add_events(s.store, config_id, "measured", &p.graph, r.start, r.end, &err)) ||
	    (s.store && zb_store_add_steps(s.store, config_id, "measured", r.steps_done, r.step_s, &err)) ||
	    (s.store && tr && zb_store_add_trace(s.store, config_id, &p.graph, tr, spans, r.t0_ns, &err)) ||
	    zb_session_commit(&s, r.interrupted ? "interrupted" : "ok", &err)) {
		zb_session_abort(&s);
		zb_trace_free(tr);
		zb_spans_free(spans);
		zb_exec_result_free(&r);
		zb_prediction_free(&p);
		return zb_report_error(&err);
	}

	rc = 0;
	if (check && (r.master_rel_err > 1e-6 || r.param16_mismatches || r.nan_found)) {
		fprintf(stderr, "zbench: precision check failed: master weights differ from the double reference by "
				"%.3g (relative, limit 1e-6), %lld 16-bit parameters not the rounded master, nan %s\n",
			r.master_rel_err, (long long)r.param16_mismatches, r.nan_found ? "found" : "none");
		rc = 1;
	}
	if (o.json) {
		json_t *j = zb_run_json(&c, &p, predicted_step, &r, measured_json(&r), warmup);
		zb_sources_json(j, &c, &src);
		json_object_set_new(j, "config_id", json_integer(config_id));
		if (check) {
			json_object_set_new(j, "master_rel_err", json_real(r.master_rel_err));
			json_object_set_new(j, "param16_mismatches", json_integer(r.param16_mismatches));
		}
		if (tr)
			json_object_set_new(j, "trace", trace_json(tr, spans));
		zb_json_print(stdout, j);
		json_decref(j);
	} else {
		zb_print_header(stdout, "run", &c);
		zb_sources_print(stdout, &c, &src, 0);
		printf("# device %s, %d CPU threads (%s Adam), %d warm-up + %d measured steps%s\n", r.device,
		       r.cpu_threads, r.adam_isa ? r.adam_isa : "?", warmup, measured_steps,
		       r.interrupted ? " (interrupted)" : "");
		printf("# attention %s", zb_attention_name(c.policy.attention));
		if (c.policy.link_rate_Bps > 0)
			printf(", link paced to %.2f GB/s (native measured: d2h %.2f, h2d %.2f GB/s)", c.policy.link_rate_Bps / 1e9,
			       r.link_native_Bps[0] / 1e9, r.link_native_Bps[1] / 1e9);
		printf("\n");
		printf("%-10s %12s %12s %8s\n", "resource", "predicted", "measured", "error");
		printf("%-10s %12s %12s %8s\n", "", "ms/step", "ms/step", "%");
		for (int res = 0; res < ZB_RES_COUNT; res++)
			printf("%-10s %12.2f %12.2f %8.1f\n", zb_resource_name(res), p.res.busy_s[res] * 1e3,
			       r.busy_s[res] * 1e3,
			       r.busy_s[res] > 0 ? 100 * (p.res.busy_s[res] - r.busy_s[res]) / r.busy_s[res] : 0);
		printf("%-10s %12.2f %12.2f %8.1f\n", "step", predicted_step * 1e3, r.step_time_s * 1e3,
		       r.step_time_s > 0 ? 100 * (predicted_step - r.step_time_s) / r.step_time_s : 0);
		printf("throughput %10.0f tokens/s, %.1f TFLOP/s (model FLOPs); lower bound %.2f ms (%s)\n",
		       r.tokens_per_s, r.tflops_per_gpu, p.res.lower_bound_s * 1e3,
		       zb_resource_name(p.res.bound_resource));
		if (check)
			printf("precision: master vs double reference %.3g relative (max %.3g), %lld param16 "
			       "mismatches: %s\n",
			       r.master_rel_err, r.master_max_rel_err, (long long)r.param16_mismatches,
			       rc ? "FAILED" : "ok");
	}
	if (tr && !o.json)
		print_trace(tr, spans, &p.graph, s.store ? config_id : 0);
	zb_trace_free(tr);
	zb_spans_free(spans);
	zb_exec_result_free(&r);
	zb_prediction_free(&p);
	return rc;
}
