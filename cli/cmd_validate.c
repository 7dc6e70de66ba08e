/*
 * cmd_validate.c - zbench validate: a suite on the GPU and through the simulator
 * (validate/validation.h), --published: the published measurements predicted from
 * the presets (validate/published.h), --deepspeed: real DeepSpeed against its
 * prediction (validate/ds_validation.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "cli/stop.h"
#include "exec/executor.h"
#include "peers/peer.h"
#include "report/report.h"
#include "validate/ds_validation.h"
#include "validate/published.h"
#include "validate/validation.h"

/* the command line: the validation's options, and the command's own */
static zb_validate_opts vo;
static const char *check;
static int list, strict, record;

#define REPEAT_MAX ZB_VALIDATE_REPEAT_MAX
#define ROUNDS_MAX ZB_VALIDATE_ROUNDS_MAX

static const zb_flag flags[] = {
	ZB_STRING("hw", &vo.hw, "<machine|file>", "hardware of the simulator side (default h200-machine)"),
	ZB_STRING("suite", &vo.suite, "<name|file>", "full | quick | fid | link | anchor (default full), or a suite file"),
	ZB_INT("limit", &vo.limit, 1, 1000, "<n>", "the first <n> configurations only"),
	ZB_INT("warmup", &vo.warmup, 0, 100, "<n>", "warm-up steps (default 2; the suite's)"),
	ZB_INT("steps", &vo.steps, 2, 100, "<n>", "measured steps (default 3; the least with --measure-s; the suite's)"),
	ZB_REAL("measure-s", &vo.measure_s, 0, 3600, "<seconds>",
		"about <seconds> of measured steps per configuration: ceil(<seconds> /\n"
		"predicted step) within --steps .. --max-steps (default 0: --steps each;\n"
		"the suite's: fid 3)"),
	ZB_INT("max-steps", &vo.max_steps, 2, 1000, "<n>",
	       "with --measure-s: at most <n> measured steps (default 64; the suite's: fid 48)"),
	ZB_INT("repeat", &vo.repeat, 0, REPEAT_MAX, "<n>",
	       "measure the first <n> executed configurations again at the end, not\n"
	       "stored: how far the host moved during the suite (default 0; fid 2)"),
	ZB_INT("rounds", &vo.rounds, 1, ROUNDS_MAX, "<n>",
	       "measure every configuration in <n> rounds, the suite forward, then\n"
	       "backward, ...; the mean of the rounds cancels a steady drift of the host\n"
	       "(default 1; fid 2)"),
	ZB_REAL("extra-s", &vo.extra_s, 0, 3600, "<seconds>",
		"with --rounds >= 2: then up to <seconds> of extra rounds, one at a\n"
		"time, each for the configuration whose mean is least sure (standard\n"
		"error >= 1 % of it); its mean counts every round (default 0; fid 120)"),
	ZB_INT("budget", &vo.budget, 1, 86400, "<seconds>", "skip configurations past this estimate (default 480)"),
	ZB_SWITCH("list", &list, "print the suite with estimated times, run nothing"),
	ZB_SWITCH("strict", &strict, "exit 1 when a target is missed"),
	ZB_SWITCH("json", &vo.json, "results as JSON"),
	ZB_STRING("db", &vo.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	ZB_SWITCH("no-db", &vo.no_db, "do not store results"),
	ZB_STRING("check", &check, "<errors.tsv>", "with --published: exit 1 when a case is worse than recorded"),
	ZB_SWITCH("record", &record, "with --published: print the record of the errors"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench validate [--hw <machine|file>] [--suite <name | file>] [--limit <n>]\n"
		   "                       [--warmup <n>] [--steps <n>] [--measure-s <seconds>] [--max-steps <n>]\n"
		   "                       [--rounds <n>] [--extra-s <seconds>] [--repeat <n>] [--budget <seconds>]\n"
		   "                       [--list]\n"
		   "                       [--strict] [--json] [--db <path> | --no-db]\n"
		   "       zbench validate --published[=<file>] [--check <errors.tsv>] [--record]\n\n"
		   "Run every configuration of a suite on the GPU and through the simulator (with --hw,\n"
		   "e.g. the profile zbench calibrate wrote), store both timelines, and report each\n"
		   "step-time error, the mean absolute percentage error (target <= 3%%, worst <= 8%%) and\n"
		   "the predicted against measured speedup of each Twin-Flow ratio over plain offload\n"
		   "(target within 5%%). --list prints the suite with estimated times and runs nothing.\n"
		   "Defaults: suite full, 2 warm-up + 3 measured steps (suite fid: 4 warm-up, at least 8\n"
		   "and about 3 s of measured steps, at most 48), budget 480 s (configurations whose\n"
		   "estimate would exceed it are skipped). --strict: exit 1 when a target is missed.\n"
		   "--measure-s gives each configuration a measured time instead of a step count; the\n"
		   "table's \"±\" is the standard error of each measured mean (%% of it). --repeat <n>\n"
		   "measures the first <n> configurations again at the end (the host's drift); --rounds\n"
		   "<n> measures every configuration <n> times, the suite forward then backward, and\n"
		   "takes the mean (fid: 2 rounds); --extra-s <seconds> then measures the least sure\n"
		   "configurations again, one round at a time (fid: 120 s).\n"
		   "zbench validate --deepspeed [...] measures real DeepSpeed instead (--deepspeed --help).\n"
		   "--published: predict the published offload measurements of <file> (default\n"
		   "data/published-offload.tsv) from the presets, no GPU: each error and the single-GPU\n"
		   "MAPE; --check exits 1 when a case is worse than recorded, --record prints the record.\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

/* --published[=<file>] takes an optional value, which the flag table does not: it is
 * taken out of argv here and the rest parsed as usual. */
static const char *take_published(int *argc, char **argv)
{
	const char *file = NULL;
	int n = 0;
	for (int i = 0; i < *argc; i++) {
		if (i > 0 && !strcmp(argv[i], "--published"))
			file = "data/published-offload.tsv";
		else if (i > 0 && !strncmp(argv[i], "--published=", 12))
			file = argv[i] + 12;
		else
			argv[n++] = argv[i];
	}
	*argc = n;
	return file;
}

int cmd_validate(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--deepspeed"))
			return cmd_validate_deepspeed(argc, argv); /* real DeepSpeed instead of the executor */
	vo = (zb_validate_opts)ZB_VALIDATE_OPTS_INIT; /* -1: not given (zb_validate_defaults) */
	check = NULL;
	list = strict = record = 0;
	const char *published = take_published(&argc, argv);
	int rc;
	if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage, &rc))
		return rc;
	zb_error err = { 0 };
	if (zb_validate_defaults(&vo, &err))
		return zb_report_error(&err);
	if (published) {
		int worse;
		if (zb_published_run(published, check, record, stdout, &worse, &err))
			return zb_report_error(&err);
		return worse;
	}
	if (check || record) {
		fprintf(stderr, "zbench: %s needs --published\n", check ? "--check" : "--record");
		return ZB_EXIT_INPUT;
	}
	zb_validation *v;
	if (zb_validation_plan(&vo, stdout, stderr, &v, &err))
		return zb_report_error(&err);
	zb_validation_header(v, vo.json ? stderr : stdout);
	if (list) {
		if (vo.json) {
			json_t *root = zb_validation_plan_json(v);
			zb_json_print(stdout, root);
			json_decref(root);
		} else
			zb_validation_list(v);
		zb_validation_free(v);
		return 0;
	}
	zb_validation_result res;
	char *command = zb_command_line(argc, argv);
	zb_status st = zb_exec_available(&err) ? ZB_OK : err.status;
	if (!st) {
		zb_stop_catch();
		st = zb_validation_run(v, command, &zb_stop_requested, &res, &err);
		zb_stop_release();
	}
	free(command);
	zb_validation_free(v);
	if (st)
		return zb_report_error(&err);
	if (res.failed) {
		fprintf(stderr, "zbench: %d configuration%s failed on the GPU\n", res.failed, res.failed == 1 ? "" : "s");
		return ZB_EXIT_GPU;
	}
	return strict && !res.met ? ZB_EXIT_VERDICT : 0;
}

/* ---- validate --deepspeed --------------------------------------------------------------- */

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage_deepspeed(FILE *f)
{
	fprintf(f, "usage: zbench validate --deepspeed [--configs <a,b,...>] [--config-dir <dir>]\n"
		   "                       [--from <file>] [--python <path>] [--harness <path>]\n"
		   "                       [--timeout <s>] [--ds-steps <n>] [--log-dir <dir>] [options]\n\n"
		   "Measure real DeepSpeed on each configuration (one peers/ds_step.py process each), or take\n"
		   "the measurements from --from: a TSV like data/deepspeed-h200-table.tsv, or harness\n"
		   "result lines, one per line (the ds-results.jsonl of scripts/gpu-suite.sh deepspeed). Predict\n"
		   "the same with zbench (the model and batch flags below, the configuration's DeepSpeed JSON),\n"
		   "store both and print step time, GPU peak and host memory, measured against predicted,\n"
		   "with MAPEs.\n"
		   "With --hf-config the harness builds that Hugging Face model with transformers (the\n"
		   "precision and activation checkpointing of the configuration as HF gradient checkpointing,\n"
		   "DeepSpeed's fetch and gradient paths counted); otherwise its own modules of the family.\n"
		   "Configurations are names of <dir>/<name>.json (default dir peers/configs, default all of\n"
		   "them; 'torch' is plain PyTorch with fused AdamW, predicted as policy none). Defaults:\n"
		   "python3, peers/ds_step.py, timeout 600 s, 8 steps (median of the last 5).\n\n");
	zb_options_usage(f);
}


int cmd_validate_deepspeed(int argc, char **argv)
{
	zb_ds_validate_opts f = { .config_dir = "peers/configs", .python = "python3", .harness = "peers/ds_step.py",
				  .timeout_s = 600, .steps = 8, .out = stdout, .log = stderr };
	int deepspeed = 0;
	const zb_flag extra[] = {
		ZB_SWITCH("deepspeed", &deepspeed, NULL),
		ZB_STRING("configs", &f.configs, "<a,b,...>", NULL),
		ZB_STRING("config-dir", &f.config_dir, "<dir>", NULL),
		ZB_STRING("python", &f.python, "<path>", NULL),
		ZB_STRING("harness", &f.harness, "<file>", NULL),
		ZB_STRING("from", &f.from, "<file>", NULL),
		ZB_STRING("log-dir", &f.log_dir, "<dir>", NULL),
		ZB_INT("timeout", &f.timeout_s, 1, 86400, "<s>", NULL),
		ZB_INT("ds-steps", &f.steps, 4, ZB_PEER_MAX_STEPS, "<n>", NULL),
		{ 0 },
	};
	zb_options o = { 0 };
	zb_error err = { 0 };
	int rc;
	if (!zb_options_parse(argc, argv, extra, usage_deepspeed, &o, &rc))
		return rc;
	if (!deepspeed)
		zb_fail(&err, ZB_E_INPUT, "validate: --deepspeed expected");
	else if (o.have_ds)
		zb_fail(&err, ZB_E_INPUT, "--ds-config: validate --deepspeed runs the files of --config-dir "
					  "(name them with --configs)");
	if (err.status)
		return zb_report_error(&err);
	zb_config_inputs in;
	zb_options_inputs(&o, &in);
	f.in = &in;
	f.db = o.db ? o.db : ZB_STORE_DEFAULT_PATH;
	f.no_db = o.no_db;
	f.json = o.json;
	char *command = zb_command_line(argc, argv);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	zb_ds_validate_result res;
	zb_status st = zb_ds_validate(&f, command, &stop_requested, &res, &err);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	free(command);
	if (st && !res.configs)
		return zb_report_error(&err);
	if (st) /* storing failed: the configurations so far are stored */
		fprintf(stderr, "zbench: %s\n", err.msg);
	if (res.failed)
		fprintf(stderr, "zbench: %d of %d configuration%s failed\n", res.failed, res.configs,
			res.configs == 1 ? "" : "s");
	return st ? zb_exit_code(st) : res.failed ? ZB_EXIT_VERDICT : 0;
}
