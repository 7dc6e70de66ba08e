/*
 * cmd_plot.c - zbench plot KIND: draw one plot of the results database through
 * gnuplot (plots/plot.h), as a PNG or an SVG chosen by the output's extension.
 *
 * Everything that can be checked without the database is checked first (kind,
 * options, format, gnuplot present, output writable), so a bad command line fails
 * in milliseconds with one line and exit 2. The database must exist: plotting never
 * creates an empty one.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/commands.h"
#include "plots/plot.h"
#include "results/store.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench plot <kind> [--db <path>] [--run <id> | --config <id>] -o <file.png | file.svg>\n"
		   "                  [--data <dir>]\n\n"
		   "Draw a plot of the results database with gnuplot; PNG or SVG by the output's extension.\n\n"
		   "kinds:\n");
	for (int k = 0; k < ZB_PLOT_KIND_COUNT; k++)
		fprintf(f, "  %-10s %s\n", zb_plot_kind_name((zb_plot_kind)k), zb_plot_kind_summary((zb_plot_kind)k));
	fprintf(f, "\noptions:\n");
	fprintf(f, "  %-26s %s\n", "-o, --output <file>", "the image: .png (pngcairo) or .svg");
	fprintf(f, "  %-26s %s\n", "--db <path>", "results database (default " ZB_STORE_DEFAULT_PATH ")");
	fprintf(f, "  %-26s %s\n", "--run <id>", "the run to draw (ratio, hardware: default the latest sweep;");
	fprintf(f, "  %-26s %s\n", "", "memory: the latest run with predictions; accuracy, timeline: only this run)");
	fprintf(f, "  %-26s %s\n", "--config <id>", "one configuration (timeline: default the latest with events)");
	fprintf(f, "  %-26s %s\n", "--data <dir>", "keep the gnuplot script and data files in <dir>");
}

static int parse_id(const char *flag, const char *arg, int64_t *out)
{
	char *end;
	long long v = strtoll(arg, &end, 10);
	if (!*arg || *end || v <= 0) {
		fprintf(stderr, "zbench: %s takes a positive id, not '%s'\n", flag, arg);
		return -1;
	}
	*out = v;
	return 0;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option table[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "run", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "data", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	zb_plot_request req = { 0 };
	const char *db = ZB_STORE_DEFAULT_PATH;
	zb_error err = { 0 };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:h", table, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return 0;
		case 'd': db = optarg; break;
		case 'o': req.output = optarg; break;
		case 'k': req.keep_dir = optarg; break;
		case 'r':
			if (parse_id("--run", optarg, &req.run_id))
				return 2;
			break;
		case 'c':
			if (parse_id("--config", optarg, &req.config_id))
				return 2;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "zbench: missing plot kind (known: ratio, hardware, accuracy, timeline, memory)\n");
		return 2;
	}
	if (zb_plot_kind_parse(argv[optind], &req.kind, &err))
		return zb_report_error(&err);
	if (optind + 1 < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (req.run_id && req.config_id) {
		fprintf(stderr, "zbench: --run and --config exclude each other (got run %lld and config %lld)\n",
			(long long)req.run_id, (long long)req.config_id);
		return 2;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (zbench sweep or predict creates it; --db <path> for another)\n",
			db);
		return 2;
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
