/*
 * cmd_bench.c - zbench bench: run the registered benchmark cases (cases.h),
 * print a table with '#' header lines, and optionally --json. A case that cannot
 * run here is listed as waived with the reason, not silently skipped.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bench/cases.h"
#include "bench/commands.h"
#include "bench/report.h"

static const zb_bench_case *const groups[] = { zb_bench_sim_cases, zb_bench_sweep_cases, zb_bench_cpu_cases, zb_bench_gpu_cases,
						zb_bench_trace_cases };

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench bench [--filter <prefix>] [--list] [--repeats <n>] [--threads <n>]\n"
		   "                    [--size <n>] [--quick] [--json]\n\n"
		   "Run benchmark cases whose name or group starts with the filter (default: all).\n");
}

int cmd_bench(int argc, char **argv)
{
	static const struct option table[] = {
		{ "filter", required_argument, NULL, 'f' }, { "list", no_argument, NULL, 'l' },
		{ "repeats", required_argument, NULL, 'r' }, { "threads", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },   { "quick", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },         { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	zb_bench_args a = { 0 };
	const char *filter = "";
	int list = 0, json = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		char *end = NULL;
		switch (opt) {
		case 'f': filter = optarg; break;
		case 'l': list = 1; break;
		case 'q': a.quick = 1; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		case 'r': a.repeats = (int)strtol(optarg, &end, 10); break;
		case 't': a.threads = (int)strtol(optarg, &end, 10); break;
		case 's': a.size = strtod(optarg, &end); break;
		default: usage(stderr); return 2;
		}
		if (end && (*end || end == optarg || a.repeats < 0 || a.threads < 0 || a.size < 0)) {
			fprintf(stderr, "zbench: invalid value '%s' for --%s\n", optarg,
				opt == 'r' ? "repeats" : opt == 't' ? "threads" : "size");
			return 2;
		}
	}
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
		return 2;
	}
	if (json)
		zb_json_print(stdout, all);
	json_decref(all);
	return failed ? 1 : 0;
}
