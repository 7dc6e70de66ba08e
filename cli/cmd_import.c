/*
 * cmd_import.c - zbench import: an Nsight Systems SQLite export into the results
 * database as a run of kind "import" (results/foreign.h), for zbench analyze.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/version.h"
#include "cli/options.h"
#include "results/foreign.h"
#include "results/store.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench import <file.sqlite> [--db <path>]\n\n"
		   "Load an Nsight Systems SQLite export (nsys export --type sqlite) into the database\n"
		   "(default " ZB_STORE_DEFAULT_PATH "): kernels, copies, memsets, CUDA API calls,\n"
		   "synchronization and NVTX events, as a run of kind 'import'. Then: zbench analyze <run>.\n");
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
			return 2;
		}
	}
	if (!file) {
		fprintf(stderr, "zbench: import needs an nsys SQLite export: zbench import <file.sqlite>\n");
		return 2;
	}
	zb_store *s;
	zb_error err = { 0 };
	if (zb_store_open(&s, db, 5000, &err))
		return zb_report_error(&err);
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = "import", .command = cmd, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	int64_t run = 0, cfg = 0, left_out = 0;
	zb_status st = zb_store_import_nsys(s, file, &info, &run, &cfg, &left_out, &err);
	free(cmd);
	zb_store_close(s);
	if (st)
		return zb_report_error(&err);
	printf("imported %s as run %" PRId64 " (configuration %" PRId64 ") in %s\n", file, run, cfg, db);
	if (left_out)
		printf("# %" PRId64 " rows left out: their times are not integers or end before they start\n", left_out);
	return 0;
}
