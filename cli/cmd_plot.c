/*
 * cmd_plot.c - zbench plot KIND: draw one plot of the results database through
 * gnuplot (plots/plot.h), as a PNG or an SVG chosen by the output's extension.
 *
 * Everything that can be checked without the database is checked first (kind,
 * options, format, gnuplot present, output writable), so a bad command line fails
 * in milliseconds with one line and exit 2. The database must exist: plotting never
 * creates an empty one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "plots/plot.h"
#include "results/store.h"

static zb_plot_request req;
static const char *db = ZB_STORE_DEFAULT_PATH;

static const zb_flag flags[] = {
	{ .name = "output", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &req.output, .arg = "<file>",
	  .help = "the image: .png (pngcairo) or .svg" },
	ZB_STRING("db", &db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	ZB_ID("run", &req.run_id, "<id>",
	      "the run to draw (ratio, hardware, scaling: default the latest sweep;\n"
	      "memory: the latest run with predictions; accuracy, timeline: only this run)"),
	ZB_ID("config", &req.config_id, "<id>", "one configuration (timeline: default the latest with events)"),
	ZB_STRING("data", &req.keep_dir, "<dir>", "keep the gnuplot script and data files in <dir>"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench plot <kind> [--db <path>] [--run <id> | --config <id>] -o <file.png | file.svg>\n"
		   "                  [--data <dir>]\n\n"
		   "Draw a plot of the results database with gnuplot; PNG or SVG by the output's extension.\n\n"
		   "kinds:\n");
	for (int k = 0; k < ZB_PLOT_KIND_COUNT; k++)
		fprintf(f, "  %-10s %s\n", zb_plot_kind_name((zb_plot_kind)k), zb_plot_kind_summary((zb_plot_kind)k));
	fprintf(f, "\noptions:\n");
	zb_flags_usage(f, flags);
}

int cmd_plot(int argc, char **argv)
{
	zb_error err = { 0 };
	const char *kind = NULL;
	int npos, rc;
	memset(&req, 0, sizeof req);
	db = ZB_STORE_DEFAULT_PATH;
	if (!zb_flags_parse(argc, argv, flags, &kind, 1, &npos, usage, &rc))
		return rc;
	if (!npos) {
		fprintf(stderr, "zbench: missing plot kind (known: ratio, hardware, accuracy, timeline, memory, scaling)\n");
		return ZB_EXIT_INPUT;
	}
	if (zb_plot_kind_parse(kind, &req.kind, &err))
		return zb_report_error(&err);
	if (req.run_id && req.config_id) {
		fprintf(stderr, "zbench: --run and --config exclude each other (got run %lld and config %lld)\n",
			(long long)req.run_id, (long long)req.config_id);
		return ZB_EXIT_INPUT;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (zbench sweep or predict creates it; --db <path> for another)\n",
			db);
		return ZB_EXIT_INPUT;
	}
	if (zb_plot_check(req.output, &err))
		return zb_report_error(&err);

	zb_store *s;
	if (zb_store_open_readonly(&s, db, 2000, &err))
		return zb_report_error(&err);
	zb_plot_info info;
	zb_status st = zb_plot_make(s, &req, &info, &err);
	zb_store_close(s);
	if (st)
		return zb_report_error(&err);
	printf("plot %s: %s -> %s\n", zb_plot_kind_name(req.kind), info.what, req.output);
	if (req.keep_dir)
		printf("# gnuplot script and data in %s\n", req.keep_dir);
	return 0;
}
