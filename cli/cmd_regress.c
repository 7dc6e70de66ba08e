/*
 * cmd_regress.c - zbench baseline save | list and zbench regress: throughput
 * regression tests against a stored baseline (validate/regress.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "results/records.h"
#include "validate/regress.h"

/* The options of both commands, parsed into one struct (defaults set by each). */
static zb_regress_opts co;

static const zb_flag save_flags[] = {
	ZB_STRING("suite", &co.suite, "<name|file>", "a built-in suite (default quick) or a suite file"),
	ZB_SWITCH("sim", &co.sim, "simulator only, no GPU"),
	ZB_INT("repeats", &co.repeats, 1, ZB_BASELINE_MAX_SAMPLES, "<n>", "repeats of each configuration"),
	ZB_STRING("hw", &co.hw, "<machine|file>", "hardware (default h200-machine)"),
	ZB_INT("limit", &co.limit, 1, 1000, "<n>", "the first <n> configurations only"),
	ZB_SWITCH("force", &co.force, "replace an existing tag"),
	{ .name = "output", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &co.out_file, .arg = "<file>",
	  .help = "also write the baseline to <file> (JSON, to commit)" },
	ZB_SWITCH("no-db", &co.no_db, "with -o: the file only, nothing in the database"),
	ZB_SWITCH("json", &co.json, NULL),
	ZB_STRING("db", &co.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static const zb_flag regress_flags[] = {
	ZB_STRING("baseline", &co.tag, "<tag|file>", "the baseline to rerun: a tag of the database, or a baseline\n"
		  "file (a path: holds a '/' or ends in .json)"),
	ZB_STRING("suite", &co.suite, "<name|file>", "run this suite now (default: the baseline's configurations)"),
	ZB_STRING("junit", &co.junit, "<file>", "a JUnit XML report: one test case per configuration"),
	ZB_REAL("tolerance", &co.tolerance, 0, 1, "<x>", "largest throughput loss that passes (default 0.03)"),
	ZB_INT("repeats", &co.repeats, 1, ZB_BASELINE_MAX_SAMPLES, "<n>", "repeats of each configuration"),
	ZB_SWITCH("sim", &co.sim, "simulator only, no GPU"),
	ZB_STRING("hw", &co.hw, "<machine|file>", "hardware (default: the baseline's; another profile is refused)"),
	ZB_REAL("plant-slowdown", &co.plant, -0.99, 100, "<x>", "multiply every new step time by 1 + <x>"),
	ZB_SWITCH("json", &co.json, "results as JSON"),
	ZB_STRING("db", &co.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static void usage_baseline(FILE *f)
{
	fprintf(f, "usage: zbench baseline save <tag> [--suite <name | file>] [--sim] [--repeats <n>]\n"
		   "                            [--hw <machine|file>] [--limit <n>] [--force] [-o <file>]\n"
		   "                            [--no-db] [--db <path>]\n"
		   "       zbench baseline list [--db <path>]\n\n"
		   "Run a suite (default quick; or a suite file of your own configurations, one per line\n"
		   "in zbench's flags, docs/ci.md) and store each configuration's median step time over the\n"
		   "repeats (default 3 measured, 1 with --sim) under <tag>, for zbench regress. --sim:\n"
		   "simulator only, no GPU. --force replaces an existing tag. -o <file>: also a baseline\n"
		   "file to commit (the configurations, the hardware profile and the figures).\n\n"
		   "options of save:\n");
	zb_flags_usage(f, save_flags);
}

static void usage_regress(FILE *f)
{
	fprintf(f, "usage: zbench regress --baseline <tag | file> [--suite <name | file>] [--tolerance <x>]\n"
		   "                      [--repeats <n>] [--sim] [--hw <machine|file>] [--junit <file>]\n"
		   "                      [--plant-slowdown <x>] [--json] [--db <path>]\n\n"
		   "Rerun the configurations of a baseline the way it was made and compare medians over\n"
		   "the repeats: exit 1 when a configuration's throughput fell by more than the tolerance\n"
		   "(default 0.03; with --sim any shift beyond it, up or down, fails: predictions are\n"
		   "deterministic), 0 otherwise; 2 bad input, 3 no GPU or a GPU error (docs/ci.md). The\n"
		   "baseline's hardware profile is used; --hw naming another is refused. --plant-slowdown\n"
		   "<x> multiplies every new step time by 1 + x (a planted regression, to test regress).\n\n"
		   "options:\n");
	zb_flags_usage(f, regress_flags);
}

int cmd_baseline(int argc, char **argv)
{
	co = (zb_regress_opts){ .suite = "quick", .db = ZB_STORE_DEFAULT_PATH, .warmup = 2, .steps = 3,
				.out = stdout, .log = stderr };
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage_baseline(argc < 2 ? stderr : stdout);
		return argc < 2 ? ZB_EXIT_INPUT : 0;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "save") && strcmp(sub, "list")) {
		fprintf(stderr, "zbench: unknown baseline command '%s' (known: save, list)\n", sub);
		return ZB_EXIT_INPUT;
	}
	const char *tag = NULL;
	int npos, rc;
	int list = !strcmp(sub, "list");
	if (!zb_flags_parse(argc - 1, argv + 1, save_flags, &tag, list ? 0 : 1, &npos, usage_baseline, &rc))
		return rc;
	zb_error err = { 0 };
	if (list)
		return zb_baseline_list(&co, &err) ? zb_report_error(&err) : 0;
	if (!npos) {
		fprintf(stderr, "zbench: baseline save needs a tag (zbench baseline save <tag>)\n");
		return ZB_EXIT_INPUT;
	}
	co.tag = tag;
	char *command = zb_command_line(argc, argv);
	zb_status st = zb_baseline_save(&co, command, &err);
	free(command);
	return st ? zb_report_error(&err) : 0;
}


int cmd_regress(int argc, char **argv)
{
	co = (zb_regress_opts){ .db = ZB_STORE_DEFAULT_PATH, .tolerance = 0.03, .warmup = 2, .steps = 3, .out = stdout,
				.log = stderr };
	int rc;
	if (!zb_flags_parse(argc, argv, regress_flags, NULL, 0, NULL, usage_regress, &rc))
		return rc;
	if (!co.tag) {
		fprintf(stderr, "zbench: regress needs --baseline <tag | file> (zbench baseline save <tag> makes one)\n");
		return ZB_EXIT_INPUT;
	}
	zb_error err = { 0 };
	zb_regress_result res;
	if (zb_regress(&co, &res, &err))
		return zb_report_error(&err);
	return res.regressions ? ZB_EXIT_VERDICT : 0;
}
