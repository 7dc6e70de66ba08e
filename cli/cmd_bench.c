/*
 * cmd_bench.c - zbench bench: run the registered benchmark cases (cases.h),
 * print a table with '#' header lines, and optionally --json. A case that cannot
 * run here is listed as waived with the reason, not silently skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bench/cases.h"
#include "common/version.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "report/report.h"

static const zb_bench_case *const groups[] = { zb_bench_sim_cases, zb_bench_sweep_cases, zb_bench_cpu_cases, zb_bench_gpu_cases,
						zb_bench_trace_cases };

static zb_bench_args a;
static const char *filter;
static int list, json;

static const zb_flag flags[] = {
	ZB_STRING("filter", &filter, "<prefix>", "cases whose name or group starts with <prefix>"),
	ZB_SWITCH("list", &list, "list the cases, run nothing"),
	ZB_INT("repeats", &a.repeats, 0, 1000000, "<n>", "timed repetitions, the median reported (0: the case's)"),
	ZB_INT("threads", &a.threads, 0, 4096, "<n>", "CPU threads of CPU cases (0: all)"),
	ZB_REAL("size", &a.size, 0, 1e15, "<n>", "problem size (0: the case's default)"),
	ZB_SWITCH("quick", &a.quick, "smaller sizes, for tests"),
	ZB_SWITCH("json", &json, "results as JSON on stdout"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench bench [--filter <prefix>] [--list] [--repeats <n>] [--threads <n>]\n"
		   "                    [--size <n>] [--quick] [--json]\n\n"
		   "Run benchmark cases whose name or group starts with the filter (default: all).\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

int cmd_bench(int argc, char **argv)
{
	memset(&a, 0, sizeof a);
	filter = "";
	list = json = 0;
	int rc;
	if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage, &rc))
		return rc;
	struct utsname u;
	uname(&u);
	FILE *out = json ? stderr : stdout;
	fprintf(out, "# zbench %s%s%s bench on %s (%s), filter '%s'\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "",
		ZB_GIT_COMMIT, u.nodename, u.machine, filter);
	json_t *all = json_object();
	int matched = 0, failed = 0;
	for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
		for (const zb_bench_case *c = groups[gi]; c->name; c++) {
			if (strncmp(c->name, filter, strlen(filter)) && strncmp(c->group, filter, strlen(filter)))
				continue;
			matched++;
			const char *why = c->waived ? c->waived() : NULL;
			if (list) {
				printf("%-14s %-4s %s", c->name, c->group, c->description);
				if (why)
					printf(" (waived: %s)", why);
				printf("\n");
				continue;
			}
			if (why) {
				fprintf(out, "%-12s waived: %s\n", c->name, why);
				json_object_set_new(all, c->name, json_pack("{s:s}", "waived", why));
				continue;
			}
			json_t *res = json_object();
			zb_error err = { 0 };
			if (c->run(&a, out, res, &err)) {
				fprintf(stderr, "zbench: bench %s failed: %s\n", c->name, err.msg);
				json_object_set_new(res, "error", json_string(err.msg));
				failed++;
			}
			json_object_set_new(all, c->name, res);
		}
	}
	if (!matched) {
		fprintf(stderr, "zbench: no benchmark case matches '%s' (zbench bench --list)\n", filter);
		json_decref(all);
		return ZB_EXIT_INPUT;
	}
	if (json)
		zb_json_print(stdout, all);
	json_decref(all);
	return failed ? ZB_EXIT_VERDICT : 0;
}
