/*
 * cmd_export.c - zbench export: one stored configuration's timelines as Perfetto
 * JSON or CSV (report/export.h writes them).
 */
#include <stdio.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "report/export.h"

static const char *format, *path, *dbpath;

static const zb_flag flags[] = {
	{ .name = "format", .short_name = 'f', .kind = ZB_FLAG_STRING, .dest = &format, .arg = "<format>",
	  .help = "perfetto (default) or csv" },
	{ .name = "output", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &path, .arg = "<file>",
	  .help = "the file to write (through a fresh temporary beside it, then renamed)" },
	ZB_STRING("db", &dbpath, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench export <config-id> | latest [--format perfetto | csv] -o <file> [--db <path>]\n\n"
		   "Write a stored configuration's predicted and measured timelines to <file>:\n"
		   "perfetto (default) is Chrome Trace Event JSON for the Perfetto UI or chrome://tracing,\n"
		   "one track per resource (predicted) and per CUDA stream and CPU thread (measured,\n"
		   "from zbench run --trace); csv is one row per interval for spreadsheets.\n"
		   "<config-id> is the configuration id the storing command printed (latest: the newest\n"
		   "configuration with a timeline: run, validate, predict --timeline, trace or import).\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

int cmd_export(int argc, char **argv)
{
	format = "perfetto";
	path = NULL;
	dbpath = ZB_STORE_DEFAULT_PATH;
	const char *run = NULL;
	int npos, rc;
	if (!zb_flags_parse(argc, argv, flags, &run, 1, &npos, usage, &rc))
		return rc;
	if (!npos) {
		fprintf(stderr, "zbench: export needs a configuration id (zbench export --help)\n");
		return ZB_EXIT_INPUT;
	}
	zb_error err = { 0 };
	zb_export_format fmt;
	if (zb_export_format_parse(format, &fmt, &err))
		return zb_report_error(&err);
	if (!path || !*path) {
		fprintf(stderr, "zbench: export needs an output file (-o <file>)\n");
		return ZB_EXIT_INPUT;
	}
	if (access(dbpath, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (zbench run stores into it; --db <path>)\n", dbpath);
		return ZB_EXIT_INPUT;
	}
	zb_store *s;
	if (zb_store_open_readonly(&s, dbpath, 2000, &err))
		return zb_report_error(&err);
	zb_export_result res;
	zb_status st = zb_export(s, run, fmt, path, &res, &err);
	zb_store_close(s);
	if (st)
		return zb_report_error(&err);
	printf("wrote %lld intervals of configuration %lld to %s", (long long)res.rows, (long long)res.config_id, path);
	if (res.overlaps)
		printf(" (%lld partly overlapping others of their track, on overlap tracks)", (long long)res.overlaps);
	printf("\n");
	return 0;
}
