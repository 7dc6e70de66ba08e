/*
 * cmd_analyze.c - zbench analyze: a stored trace (zbench trace, zbench import, or
 * zbench run --trace) cut into training steps and measured per step in zbench's
 * resource terms (profiler/analyze.h), printed like zbench predict's resource
 * table with a measured column, stored in trace_steps; --json for machines.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "report/report.h"
#include "profiler/analyze.h"
#include "results/foreign.h"
#include "results/store.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench analyze [<run> | latest] [--config <id>] [--step-range <name>] [--no-nvtx]\n"
		   "                     [--cpu-threshold <cores>] [--steps] [--json] [--db <path>]\n\n"
		   "Cut a stored trace into training steps (NVTX ranges named like a step, else the repeating\n"
		   "pattern of kernels and copies) and report per step: GPU compute busy, H2D and D2H busy,\n"
		   "bytes and GB/s, copy/compute overlap, GPU idle and how much of it waited for the CPU\n"
		   "optimizer, CPU optimizer time and CPU time. <run>: a run id or latest (default: the newest\n"
		   "trace).\n"
		   "--steps lists every step; the summary is the median of the steps after the first.\n");
}

static int parse_pos(const char *s, const char *what, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v < 1) {
		fprintf(stderr, "zbench: invalid %s '%s' (expected a positive integer)\n", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

static double gbps(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0; }

void zb_analysis_print(FILE *f, const zb_analysis *a);

void zb_analysis_print(FILE *f, const zb_analysis *a)
{
	const zb_step_stats *m = &a->median;
	double st = m->step_s > 0 ? m->step_s : 1;
	fprintf(f, "\n%-10s %12s %8s %14s %10s\n", "resource", "measured", "util", "bytes", "achieved");
	fprintf(f, "%-10s %12s %8s %14s %10s\n", "", "ms/step", "%", "GB/step", "GB/s");
	fprintf(f, "%-10s %12.2f %8.1f %14s %10s\n", "gpu", m->compute_s * 1e3, 100 * m->compute_s / st, "-", "-");
	fprintf(f, "%-10s %12.2f %8.1f %14.3f %10.1f\n", "d2h", m->d2h_s * 1e3, 100 * m->d2h_s / st, m->d2h_bytes / 1e9,
		gbps(m->d2h_bytes, m->d2h_s));
	fprintf(f, "%-10s %12.2f %8.1f %14.3f %10.1f\n", "h2d", m->h2d_s * 1e3, 100 * m->h2d_s / st, m->h2d_bytes / 1e9,
		gbps(m->h2d_bytes, m->h2d_s));
	fprintf(f, "%-10s %12.2f %8.1f %14s %10s   (CPU optimizer active)\n", "cpu", m->cpu_opt_s * 1e3,
		100 * m->cpu_opt_s / st, "-", "-");
	fprintf(f, "%-10s %12s %8s %14s %10s   (GPU optimizer kernels count as gpu)\n", "gpu_opt", "-", "-", "-", "-");
	fprintf(f, "\nstep time      %10.2f ms\n", m->step_s * 1e3);
	fprintf(f, "  compute only %10.2f ms\n", m->compute_only_s * 1e3);
	fprintf(f, "  copy only    %10.2f ms\n", m->copy_only_s * 1e3);
	fprintf(f, "  overlap      %10.2f ms  (copies while kernels run)\n", m->overlap_s * 1e3);
	fprintf(f, "  gpu idle     %10.2f ms  (%.2f ms of it while the CPU optimizer runs; %.0f gaps >= 0.1 ms,"
		   " the longest %.2f ms)\n",
		m->idle_s * 1e3, m->idle_cpu_s * 1e3, m->idle_gaps, m->max_gap_s * 1e3);
	fprintf(f, "cpu time       %10.2f core-s/step (every thread of the traced processes)\n", m->cpu_core_s);
	if (m->pageable_bytes > 0)
		fprintf(f, "pageable       %10.3f GB/step of the copies are from or to pageable memory\n",
			m->pageable_bytes / 1e9);
	fprintf(f, "# %zu steps found by %s; medians of steps %zu..%zu\n", a->nsteps, a->found_by, a->first_steady + 1,
		a->nsteps);
	fprintf(f, "# CPU optimizer from %s\n", a->cpu_opt_from);
}

static void print_steps(FILE *f, const zb_analysis *a)
{
	fprintf(f, "\n%5s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s\n", "step", "start", "time", "compute", "h2d",
		"d2h", "overlap", "idle", "cpu-opt", "parts-sum", "kernels");
	fprintf(f, "%5s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s\n", "", "ms", "ms", "ms", "ms", "ms", "ms", "ms",
		"ms", "ms", "");
	for (size_t i = 0; i < a->nsteps; i++) {
		const zb_step_stats *s = &a->steps[i];
		double sum = s->compute_only_s + s->copy_only_s + s->overlap_s + s->idle_s;
		fprintf(f, "%5zu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8.0f\n", i + 1,
			(double)s->start * 1e-6, s->step_s * 1e3, s->compute_s * 1e3, s->h2d_s * 1e3, s->d2h_s * 1e3,
			s->overlap_s * 1e3, s->idle_s * 1e3, s->cpu_opt_s * 1e3, sum * 1e3, s->kernels);
	}
}

static json_t *step_json(const zb_step_stats *s)
{
	json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
			 "step_s", s->step_s, "compute_s", s->compute_s, "h2d_s", s->h2d_s, "d2h_s", s->d2h_s,
			 "copy_s", s->copy_s, "compute_only_s", s->compute_only_s, "copy_only_s", s->copy_only_s,
			 "overlap_s", s->overlap_s, "idle_s", s->idle_s, "idle_cpu_s", s->idle_cpu_s, "cpu_opt_s",
			 s->cpu_opt_s, "cpu_core_s", s->cpu_core_s, "h2d_bytes", s->h2d_bytes, "d2h_bytes", s->d2h_bytes,
			 "h2d_GBps", gbps(s->h2d_bytes, s->h2d_s), "d2h_GBps", gbps(s->d2h_bytes, s->d2h_s), "start_ns",
			 (json_int_t)s->start, "end_ns", (json_int_t)s->end);
	json_object_set_new(j, "kernels", json_real(s->kernels));
	json_object_set_new(j, "copies", json_real(s->copies));
	json_object_set_new(j, "pageable_bytes", json_real(s->pageable_bytes));
	json_object_set_new(j, "idle_gaps", json_real(s->idle_gaps));
	json_object_set_new(j, "max_gap_s", json_real(s->max_gap_s));
	return j;
}

static json_t *analysis_json(const zb_analysis *a, int64_t cfg)
{
	json_t *steps = json_array();
	for (size_t i = 0; i < a->nsteps; i++)
		json_array_append_new(steps, step_json(&a->steps[i]));
	return json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "config_id", (json_int_t)cfg, "method",
			 a->method, "found_by", a->found_by, "cpu_optimizer_from", a->cpu_opt_from, "period_ops", (json_int_t)a->period, "nsteps", (json_int_t)a->nsteps,
			 "first_steady", (json_int_t)a->first_steady, "median", step_json(&a->median), "steps", steps);
}

int cmd_analyze(int argc, char **argv)
{
	const char *db = ZB_STORE_DEFAULT_PATH;
	int64_t run = 0, cfg = 0;
	int json = 0, list = 0;
	zb_analyze_options ao = { 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--steps")) {
			list = 1;
		} else if (!strcmp(a, "--no-nvtx")) {
			ao.no_nvtx = 1;
		} else if (!strcmp(a, "--db") && more) {
			db = argv[++i];
		} else if (!strcmp(a, "--step-range") && more) {
			ao.step_range = argv[++i];
		} else if (!strcmp(a, "--config") && more) {
			if (parse_pos(argv[++i], "--config", &cfg))
				return 2;
		} else if (!strcmp(a, "--cpu-threshold") && more) {
			char *end;
			ao.cpu_threshold = strtod(argv[++i], &end);
			if (*end || !(ao.cpu_threshold > 0 && ao.cpu_threshold <= 4096)) {
				fprintf(stderr, "zbench: invalid --cpu-threshold '%s' (expected cores, > 0)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "latest")) {
			run = 0; /* the newest trace, as without <run> (export accepts it too) */
		} else if (a[0] != '-' && !run) {
			if (parse_pos(a, "run", &run))
				return 2;
		} else {
			fprintf(stderr, "zbench: unknown or incomplete option '%s' for analyze\n", a);
			usage(stderr);
			return 2;
		}
	}
	zb_store *s;
	zb_error err = { 0 };
	zb_status st = zb_store_open(&s, db, 5000, &err);
	if (st)
		return zb_report_error(&err);
	if (!cfg)
		st = zb_store_trace_config(s, run, &cfg, &err);
	zb_trace_input in = { 0 };
	zb_analysis a = { 0 };
	if (!st)
		st = zb_store_load_trace_input(s, cfg, &in, &err);
	if (!st)
		st = zb_analyze(&in, &ao, &a, &err);
	if (!st)
		st = zb_store_add_trace_steps(s, cfg, &a, &err);
	if (!st) {
		if (json) {
			json_t *j = analysis_json(&a, cfg);
			zb_json_print(stdout, j);
			json_decref(j);
		} else {
			printf("# trace: configuration %" PRId64 " in %s: %zu GPU operations, %zu NVTX ranges, %zu CPU samples\n",
			       cfg, db, in.nops, in.nranges, in.ncpu);
			zb_analysis_print(stdout, &a);
			if (list)
				print_steps(stdout, &a);
		}
	}
	zb_analysis_free(&a);
	zb_trace_input_free(&in);
	zb_store_close(s);
	return st ? zb_report_error(&err) : 0;
}
