/*
 * cmd_merge.c - zbench merge OUT.db IN.db...: combine databases (the shards of a
 * sweep run as a batch job array) into OUT, created when missing; see
 * results/merge.h for what is copied and what is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "results/merge.h"
#include "results/store.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench merge <out.db> <in.db>...\n\n"
		   "Copy the runs, configurations, predictions, tasks, events and steps of each input into\n"
		   "out.db (created when missing) with new ids, in one transaction. A run already in out.db\n"
		   "is refused, and so are inputs with traces, calibration profiles or baselines. For\n"
		   "the shards of `zbench sweep --shard K/N`: give them in K order to keep the sweep's order.\n");
}

int cmd_merge(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3) {
		usage(stderr);
		return ZB_EXIT_INPUT;
	}
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-') {
			fprintf(stderr, "zbench: merge takes no options (got '%s')\n", argv[i]);
			return ZB_EXIT_INPUT;
		}
	zb_error err = { 0 };
	int n = argc - 2;
	zb_merge_counts *counts = calloc((size_t)n, sizeof *counts);
	if (!counts) {
		fprintf(stderr, "zbench: out of memory\n");
		return zb_exit_code(ZB_E_NOMEM);
	}
	int rc = 0;
	if (zb_store_merge_into(argv[1], (const char *const *)argv + 2, n, counts, &err)) {
		rc = zb_report_error(&err);
	} else {
		zb_merge_counts sum = { 0 };
		printf("# %-30s %6s %10s %12s %10s %12s\n", "merged into", "runs", "configs", "predictions", "tasks",
		       "events");
		for (int i = 0; i < n; i++) {
			printf("  %-30s %6lld %10lld %12lld %10lld %12lld\n", argv[i + 2], (long long)counts[i].runs,
			       (long long)counts[i].configs, (long long)counts[i].predictions,
			       (long long)counts[i].tasks, (long long)counts[i].events);
			sum.runs += counts[i].runs;
			sum.configs += counts[i].configs;
			sum.predictions += counts[i].predictions;
			sum.tasks += counts[i].tasks;
			sum.events += counts[i].events;
		}
		printf("# %-30s %6lld %10lld %12lld %10lld %12lld\n", argv[1], (long long)sum.runs,
		       (long long)sum.configs, (long long)sum.predictions, (long long)sum.tasks, (long long)sum.events);
	}
	free(counts);
	return rc;
}
