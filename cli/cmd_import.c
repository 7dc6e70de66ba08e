/*
 * cmd_import.c - zbench import: a trace another tool wrote (an Nsight Systems SQLite
 * export, a PyTorch profiler / Kineto Chrome trace) into the results database as a
 * run of kind "import" (results/import.h), for zbench analyze and compare --predict.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/version.h"
#include "cli/options.h"
#include "results/import.h"
#include "results/store.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench import <file> [--db <path>]\n\n"
		   "Load a trace into the database (default " ZB_STORE_DEFAULT_PATH ") as a run of kind 'import',\n"
		   "then: zbench analyze <run>. Accepted, told apart by their first bytes:\n"
		   "  an Nsight Systems SQLite export (nsys export --type sqlite -o X.sqlite X.nsys-rep):\n"
		   "      kernels, copies, memsets, CUDA API calls, synchronization and NVTX events\n"
		   "  a PyTorch profiler / Kineto Chrome trace (torch.profiler's export_chrome_trace,\n"
		   "      .json or .json.gz): kernels, copies with their bytes, memsets, CUDA calls,\n"
		   "      CPU operators, annotations and ProfilerStep#N ranges\n");
}

static void print_kineto(const char *file, const zb_import_result *r, const char *db)
{
	const zb_kineto_counts *n = &r->kineto;
	printf("imported %s (%s): %zu kernels, %zu memcpys (%.3f GB host to device, %.3f GB device to host), "
	       "%zu memsets, %zu CUDA API calls, %zu CPU operators, %zu annotations (%zu ProfilerStep#N)",
	       file, zb_import_format_name(r->format), n->kernels, n->memcpys, n->h2d_bytes / 1e9, n->d2h_bytes / 1e9,
	       n->memsets, n->apis, n->cpu_ops, n->annotations, n->profiler_steps);
	if (n->bad_times)
		printf("; %zu events with no usable time left out", n->bad_times);
	printf(" as run %" PRId64 " (configuration %" PRId64 ") in %s\n", r->run_id, r->config_id, db);
}

int cmd_import(int argc, char **argv)
{
	const char *db = ZB_STORE_DEFAULT_PATH, *file = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			db = argv[++i];
		} else if (argv[i][0] != '-' && !file) {
			file = argv[i];
		} else {
			fprintf(stderr, "zbench: unknown or incomplete option '%s' for import\n", argv[i]);
			usage(stderr);
			return ZB_EXIT_INPUT;
		}
	}
	if (!file) {
		fprintf(stderr, "zbench: import needs a trace: zbench import <file> (an nsys SQLite export or a PyTorch "
				"profiler trace)\n");
		return ZB_EXIT_INPUT;
	}
	zb_error err = { 0 };
	zb_import_format fmt;
	if (zb_import_detect(file, &fmt, &err)) /* before the database is touched */
		return zb_report_error(&err);
	zb_store *s;
	if (zb_store_open(&s, db, 5000, &err))
		return zb_report_error(&err);
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = "import", .command = cmd, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	zb_import_result r;
	zb_status st = zb_store_import(s, file, &info, &r, &err);
	free(cmd);
	zb_store_close(s);
	if (st)
		return zb_report_error(&err);
	if (r.format == ZB_IMPORT_KINETO)
		print_kineto(file, &r, db);
	else
		printf("imported %s as run %" PRId64 " (configuration %" PRId64 ") in %s\n", file, r.run_id, r.config_id, db);
	if (r.left_out)
		printf("# %" PRId64 " rows left out: their times are not integers or end before they start\n", r.left_out);
	return 0;
}
