/*
 * cmd_analyze.c - zbench analyze: a stored trace (zbench trace, zbench import, or
 * zbench run --trace) cut into training steps and measured per step in zbench's
 * resource terms (profiler/analyze.h), printed like zbench predict's resource
 * table with a measured column, stored in trace_steps; --json for machines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "report/analysis.h"
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
				return ZB_EXIT_INPUT;
		} else if (!strcmp(a, "--cpu-threshold") && more) {
			char *end;
			ao.cpu_threshold = strtod(argv[++i], &end);
			if (*end || !(ao.cpu_threshold > 0 && ao.cpu_threshold <= 4096)) {
				fprintf(stderr, "zbench: invalid --cpu-threshold '%s' (expected cores, > 0)\n", argv[i]);
				return ZB_EXIT_INPUT;
			}
		} else if (!strcmp(a, "latest")) {
			run = 0; /* the newest trace, as without <run> (export accepts it too) */
		} else if (a[0] != '-' && !run) {
			if (parse_pos(a, "run", &run))
				return ZB_EXIT_INPUT;
		} else {
			fprintf(stderr, "zbench: unknown or incomplete option '%s' for analyze\n", a);
			usage(stderr);
			return ZB_EXIT_INPUT;
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
	if (!st && !(st = zb_store_add_trace_steps(s, cfg, &a, &err)))
		fprintf(stderr, "zbench: stored %zu step%s of configuration %" PRId64 " (trace_steps) in %s\n", a.nsteps,
			a.nsteps == 1 ? "" : "s", cfg, db);
	if (!st) {
		if (json) {
			json_t *j = zb_analysis_json(&a, cfg);
			zb_json_print(stdout, j);
			json_decref(j);
		} else {
			printf("# trace: configuration %" PRId64 " in %s: %zu GPU operations, %zu NVTX ranges, %zu CPU samples\n",
			       cfg, db, in.nops, in.nranges, in.ncpu);
			zb_analysis_print(stdout, &a);
			if (list)
				zb_analysis_steps_print(stdout, &a);
		}
	}
	zb_analysis_free(&a);
	zb_trace_input_free(&in);
	zb_store_close(s);
	return st ? zb_report_error(&err) : 0;
}
