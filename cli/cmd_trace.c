/*
 * cmd_trace.c - zbench trace [options] -- <command>: any command with zbench's CUPTI
 * collector injected, stored as a run of kind 'trace' (validate/trace_run.h). The
 * command's exit status is zbench's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "profiler/trace_kinds.h"
#include "results/store.h"
#include "validate/trace_run.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench trace [--db <path>] [--sample-ms <ms>] [--kinds <list>] [--api]\n"
		   "                   [--nvtx all|steps|none] [--step-match <text>] [--steps <n>] [--keep-spool]\n"
		   "                   -- <command> [args...]\n\n"
		   "Run <command> with zbench's CUPTI collector injected into every CUDA process it starts,\n"
		   "sample each thread's CPU time from /proc every --sample-ms (default 10), and store it as\n"
		   "a run of kind 'trace' in the database (default " ZB_STORE_DEFAULT_PATH ").\n"
		   "Then: zbench analyze <run>. The command's exit status is zbench's.\n"
		   "--kinds: what is recorded, default kernel,memcpy,memset,overhead (what analyze reads,\n"
		   "and CUPTI's own overhead); also sync (completed synchronizations), runtime, driver\n"
		   "(api: both; one record per CUDA call, the costly part), launches (count kernel\n"
		   "launches against kernel records). A list with signs changes the default:\n"
		   "--kinds +api,-memset. --api is --kinds +api.\n"
		   "--nvtx steps (default): only NVTX ranges and marks whose name holds --step-match (default\n"
		   "'step', any case), by zbench's own NVTX handler; all: every range, through CUPTI (costs\n"
		   "~2 us a range); none: NVTX left alone. --steps <n>: after the n-th step range ends, the\n"
		   "trace is written and the command gets SIGINT (zbench then exits 0).\n");
}

static int api; /* --api: ZB_TK_API, added after all options */

static int bad_value(const char *opt, const char *v, const char *expected)
{
	fprintf(stderr, "zbench: invalid %s '%s' (expected %s)\n", opt, v, expected);
	return ZB_EXIT_INPUT;
}

/* One option at argv[*i] (its value consumed); -1 to go on, else the exit code. */
static int parse_opt(int argc, char **argv, int *i, zb_trace_run_opts *o)
{
	const char *a = argv[*i];
	int more = *i + 1 < argc;
	char *end;
	if (!strcmp(a, "--keep-spool")) {
		o->keep = 1;
	} else if (!strcmp(a, "--api")) {
		api = 1;
	} else if (!strcmp(a, "--kinds") && more) {
		char msg[300];
		if (zb_trace_kinds_parse(argv[++*i], &o->kinds, msg, sizeof msg)) {
			fprintf(stderr, "zbench: %s\n", msg);
			return ZB_EXIT_INPUT;
		}
	} else if (!strcmp(a, "--db") && more) {
		o->db = argv[++*i];
	} else if (!strcmp(a, "--nvtx") && more) {
		o->nvtx = argv[++*i];
		if (strcmp(o->nvtx, "all") && strcmp(o->nvtx, "steps") && strcmp(o->nvtx, "none"))
			return bad_value("--nvtx", o->nvtx, "all, steps or none");
	} else if (!strcmp(a, "--step-match") && more) {
		o->step_match = argv[++*i];
		if (!o->step_match[0] || strlen(o->step_match) > 63)
			return bad_value("--step-match", o->step_match, "1 to 63 characters");
	} else if (!strcmp(a, "--steps") && more) {
		o->stop_steps = strtol(argv[++*i], &end, 10);
		if (*end || end == argv[*i] || o->stop_steps < 1 || o->stop_steps > 1000000)
			return bad_value("--steps", argv[*i], "1 to 1000000");
	} else if (!strcmp(a, "--sample-ms") && more) {
		o->sample_ms = strtod(argv[++*i], &end);
		if (*end || !(o->sample_ms >= 1 && o->sample_ms <= 10000))
			return bad_value("--sample-ms", argv[*i], "1 to 10000");
	} else {
		fprintf(stderr, "zbench: unknown or incomplete option '%s' for trace\n", a);
		usage(stderr);
		return ZB_EXIT_INPUT;
	}
	return -1;
}

/* Options up to the command: returns -1 to go on (*cmd = its index), else the
 * exit code. */
static int parse_args(int argc, char **argv, zb_trace_run_opts *o, int *cmd)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (a[0] != '-')
			break; /* the command, without "--" */
		int rc = parse_opt(argc, argv, &i, o);
		if (rc >= 0)
			return rc;
	}
	if (i >= argc) {
		fprintf(stderr, "zbench: trace needs a command to run: zbench trace [options] -- <command> [args...]\n");
		return ZB_EXIT_INPUT;
	}
	if (api)
		o->kinds |= ZB_TK_API;
	if (o->stop_steps && strcmp(o->nvtx, "steps")) {
		fprintf(stderr, "zbench: --steps counts the step ranges that --nvtx steps keeps, not with --nvtx %s\n",
			o->nvtx);
		return ZB_EXIT_INPUT;
	}
	*cmd = i;
	return -1;
}

int cmd_trace(int argc, char **argv)
{
	zb_trace_run_opts o = { .db = ZB_STORE_DEFAULT_PATH, .nvtx = "steps", .step_match = "step", .sample_ms = 10,
				.kinds = ZB_TK_TRACE_DEFAULT, .log = stderr };
	api = 0;
	int i = 0, rc = parse_args(argc, argv, &o, &i);
	if (rc >= 0)
		return rc;
	int n = 0;
	while (argv[i + n])
		n++;
	char *command = zb_command_line(argc, argv), *traced = zb_command_line(n, argv + i);
	zb_trace_run_result r;
	zb_error err = { 0 };
	zb_status st = zb_trace_run(argv + i, &o, command, traced, &r, &err);
	free(command);
	free(traced);
	if (st && !r.ran)
		return zb_report_error(&err);
	if (st) {
		fprintf(stderr, "zbench: %s\n", err.msg);
		fprintf(stderr, "zbench trace: the records stay in %s\n", r.spool);
	}
	if (st && (r.exit_code == 0 || r.stopped))
		return zb_exit_code(st);
	return r.stopped ? 0 : r.exit_code; /* the stop was asked for */
}
