/*
 * main.c - the zbench command: a table from subcommand names to cmd_<name>()
 * functions (git's git.c), each in its own file with its own usage text.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/error.h"
#include "common/version.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "predict", cmd_predict, "predict one configuration's training step" },
	{ "sweep", cmd_sweep, "predict a grid of configurations (lists and ranges on any axis)" },
	{ "merge", cmd_merge, "combine databases (the shards of a sweep) into one: zbench merge OUT IN..." },
	{ "run", cmd_run, "execute a configuration's schedule on the GPU and measure it" },
	{ "trace", cmd_trace, "run any command with zbench's CUPTI collector injected: zbench trace -- CMD" },
	{ "import", cmd_import, "load a trace: an Nsight Systems SQLite export or a PyTorch profiler (Kineto) JSON" },
	{ "analyze", cmd_analyze, "a trace's steps and per-step GPU, copy and CPU optimizer time" },
	{ "export", cmd_export, "write a stored run's timelines as Perfetto (Chrome trace) JSON or CSV" },
	{ "plot", cmd_plot, "draw a plot of the results database (gnuplot: PNG or SVG)" },
	{ "report", cmd_report, "a stored sweep as one self-contained HTML report for a buyer" },
	{ "tune", cmd_tune, "the fastest DeepSpeed settings for a model on this machine; writes the tuned config" },
	{ "calibrate", cmd_calibrate, "measure this machine and fit a hardware profile (--hw FILE)" },
	{ "compare", cmd_compare, "predicted against measured for a stored run, with the error of each part" },
	{ "validate", cmd_validate, "run a suite on the GPU and the simulator: each error, MAPE, speedups" },
	{ "baseline", cmd_baseline, "store a suite's results under a tag or in a file: zbench baseline save TAG [-o FILE]" },
	{ "regress", cmd_regress, "rerun a baseline's suite; exit 1 when throughput fell beyond a tolerance (--junit)" },
	{ "bench", cmd_bench, "run the benchmark cases (simulator speed, CPU/GPU kernels)" },
	{ "list", cmd_list, "list presets: zbench list presets" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench <command> [options]   (zbench <command> --help for its options)\n\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nzbench %s%s%s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
}

/* Output that did not reach its destination (disk full, a closed pipe with
 * SIGPIPE ignored, /dev/full) is a failure, not a success with a short table. */
static int finish_output(int rc)
{
	int e = fflush(stdout) != 0 ? errno : 0;
	if (e || ferror(stdout)) {
		fprintf(stderr, "zbench: cannot write the output: %s\n", strerror(e ? e : EIO));
		return rc ? rc : ZB_EXIT_INPUT;
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return ZB_EXIT_INPUT;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		usage(stdout);
		return finish_output(0);
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("zbench %s%s%s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
		return finish_output(0);
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(name, commands[i].name))
			return finish_output(commands[i].fn(argc - 1, argv + 1));
	fprintf(stderr, "zbench: unknown command '%s' (known:", name);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(stderr, "%s %s", i ? "," : "", commands[i].name);
	fprintf(stderr, ")\n");
	return ZB_EXIT_INPUT;
}
