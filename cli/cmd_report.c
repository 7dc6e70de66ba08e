/*
 * cmd_report.c - zbench report: a stored sweep as one self-contained HTML file a buyer
 * can hand on (publish/report_html.h): the ranking, the plots inlined as SVG, every
 * configuration, memory, the source of every preset figure, the version and commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "plots/plot.h"
#include "publish/report_html.h"
#include "results/store.h"

static void usage(FILE *f, const zb_flag *flags)
{
	fprintf(f, "usage: zbench report [--db <path>] [--run <id>] [--tokens <n>] -o <file.html>\n\n"
		   "One self-contained HTML file from a stored sweep (default: the latest): each machine's best\n"
		   "configuration ranked by tokens per dollar (by tokens/s when unpriced), DeepSpeed's and zbench's\n"
		   "schedule side by side, the bottleneck and what would remove it, the plots, every configuration,\n"
		   "what does not fit, the source of every preset figure, the zbench version and command lines.\n\n");
	zb_flags_usage(f, flags);
}

static const zb_flag *usage_flags;
static void usage_cb(FILE *f) { usage(f, usage_flags); }

int cmd_report(int argc, char **argv)
{
	zb_error err = { 0 };
	zb_report_request req = { .tokens = 1e10 };
	const char *db = ZB_STORE_DEFAULT_PATH;
	const zb_flag flags[] = {
		{ .name = "output", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &req.output, .arg = "<file>",
		  .help = "the report: FILE.html" },
		ZB_STRING("db", &db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
		ZB_ID("run", &req.run_id, "<id>", "the sweep run (default: the latest sweep)"),
		ZB_REAL("tokens", &req.tokens, 1, 1e18, "<n>", "the training run the cost columns price (default 1e10)"),
		{ 0 },
	};
	usage_flags = flags;
	int rc;
	if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage_cb, &rc))
		return rc;
	if (!req.output) {
		fprintf(stderr, "zbench: report needs -o <file.html>\n");
		return 2;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (zbench sweep creates it; --db <path> for another)\n", db);
		return 2;
	}
	if (zb_plot_check("report-check.svg", &err)) /* gnuplot draws the plots */
		return zb_report_error(&err);
	char *cmd = zb_command_line(argc, argv);
	char full[4096];
	snprintf(full, sizeof full, "zbench %s", cmd);
	free(cmd);
	req.command_line = full;
	zb_store *s;
	if (zb_store_open_readonly(&s, db, 2000, &err))
		return zb_report_error(&err);
	zb_report_info info;
	zb_status st = zb_report_html(s, &req, &info, &err);
	zb_store_close(s);
	if (st)
		return zb_report_error(&err);
	printf("report: run %lld, %d configurations, %d machines, %d plots -> %s\n", (long long)info.run_id, info.rows,
	       info.machines, info.plots, req.output);
	if (info.differ)
		printf("report: %d rows predicted differently by this build than when stored (shown: this build's)\n",
		       info.differ);
	return 0;
}
