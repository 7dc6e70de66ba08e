/*
 * cmd_calibrate.c - zbench calibrate: measure this machine and fit a hardware profile
 * (validate/calibrate_hw.h); --from-db: the executor profile from a validate run's
 * measured tasks (validate/calibrate_db.h); --deepspeed: DeepSpeed's profile from
 * measured DeepSpeed runs (validate/calibrate_ds.h).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "cli/session.h"
#include "report/report.h"
#include "validate/calibrate_db.h"
#include "validate/calibrate_ds.h"
#include "validate/calibrate_hw.h"

/* ---- calibrate --from-db ---------------------------------------------------------------- */

static zb_calibrate_db_opts o;

static const zb_flag db_flags[] = {
	ZB_STRING("from-db", &o.db, "<db>", "the validate database with measured tasks"),
	ZB_ID("run", &o.run, "<id>", "its run (default: the newest with measured tasks)"),
	ZB_SWITCH("all-runs", &o.all_runs, "every run's measured configurations (e.g. one `zbench run` each)"),
	ZB_INT("warmup", &o.warmup, 0, 100, "<n>", "warm-up steps the run left out (default 2)"),
	ZB_STRING("base", &o.base, "<machine|file>", "values not fitted (default h200-machine)"),
	ZB_STRING("out", &o.out, "<file>", "the profile to write (default results/hw-executor.json)"),
	ZB_STRING("name", &o.name, "<name>", "the profile's machine name (default executor-fit)"),
	ZB_STRING("eval", &o.eval, "<machine|file>", "evaluate this profile on the run, fit nothing"),
	ZB_STRING("holdout", &o.holdout, "<rule>", "also fit without the configurations the rule holds out and judge on them: "
		  "model:NAME, policy:NAME, threads:N, paced, pageable, comma-separated (a bare NAME: model:NAME)"),
	ZB_STRING("judge-db", &o.judge_db, "<db>", "with --holdout, also judge on this database's configurations (its newest measured run) the fit never saw"),
	ZB_SWITCH("fit-comm", &o.fit_comm, "fit only comm_gpu and comm_opt over --base (several ranks), with half-out and leave-one-out"),
	ZB_SWITCH("fit-adam", &o.fit_adam, "fit only CPU Adam's adam_mem over --base (several ranks), with half-out and leave-one-out"),
	ZB_SWITCH("fit-starved", &o.fit_starved, "fit only starved, the GPU's rate beside Adam on every core, from the steps, with half-out and leave-one-out"),
	ZB_SWITCH("fit-host", &o.fit_host, "fit only this host's CPU and memory scales over --base (a profile fitted on another machine), e.g. on `validate --suite anchor`"),
	ZB_SWITCH("json", &o.json, "results as JSON"),
	ZB_SWITCH("quiet", &o.quiet, "no per-configuration rows"),
	ZB_SWITCH("busy", &o.busy, "also each configuration's busy time per resource: measured, base, fitted or eval"),
	{ 0 },
};

static void usage_db(FILE *f)
{
	fprintf(f, "usage: zbench calibrate --from-db <db> [--run <id> | --all-runs] [--warmup <n>] [--base <machine|file>]\n"
		   "                        [--out <file>] [--eval <machine|file>] [--holdout <rule> [--judge-db <db>]]\n"
		   "                        [--fit-comm | --fit-adam | --fit-host]\n"
		   "                        [--json] [--quiet] [--busy]\n\n"
		   "Fit the executor profile (per kernel class: GEMM groups, kinds of memory-bound kernel,\n"
		   "GPU Adam, launch; CPU Adam against threads; pinned and pageable copies) to the tasks\n"
		   "a zbench validate run measured, write it over --base, and report the step-time error\n"
		   "of every configuration re-simulated: base, fitted (in-sample), and fitted on half of\n"
		   "the configurations predicting the other half; --holdout: fitted without the configurations a\n"
		   "rule holds out (models, policies, regimes), judged on them and on --judge-db's\n"
		   "configurations the fit never saw (held out), by model and by policy.\n\noptions:\n");
	zb_flags_usage(f, db_flags);
}

static int calibrate_from_db(int argc, char **argv)
{
	memset(&o, 0, sizeof o);
	o.warmup = 2;
	o.out = "results/hw-executor.json";
	int rc;
	if (!zb_flags_parse(argc, argv, db_flags, NULL, 0, NULL, usage_db, &rc))
		return rc;
	zb_error err = { 0 };
	return zb_calibrate_from_db(&o, stdout, &err) ? zb_report_error(&err) : 0;
}

/* ---- calibrate --deepspeed ---------------------------------------------------------------- */

static void usage_ds(FILE *f)
{
	fprintf(f,
		"usage: zbench calibrate --deepspeed --measured <file.tsv> [--hw <machine|file>] [--model <name>]\n"
		"                        [--seq <n>] [--micro-batch <n>] [--sub-group <n>] [--out <file>] [--no-fit]\n"
		"                        [--cross-validate] [--held-out <file>]\n"
		"\n"
		"Fit the DeepSpeed framework profile (hook, Python, GPU efficiency, CPU Adam, cast and copy\n"
		"costs) to measured DeepSpeed step times and save it with the hardware profile.\n"
		"  --measured <file>   table of measured runs (data/deepspeed-h200-table.tsv's format)\n"
		"                      or the harness's JSON lines; repeat to fit several files together\n"
		"  --hw <name|file>    hardware the runs were measured on (default h200-machine); its\n"
		"                      deepspeed profile, if any, is the starting point\n"
		"  --model, --seq, --micro-batch, --sub-group   for rows that do not give them (a model is a\n"
		"                      preset or a .json file: Hugging Face config.json or zbench model file)\n"
		"  --out <file>        write the hardware profile with the fitted deepspeed object\n"
		"  --no-fit            only predict the rows with the given profile\n"
		"  --cross-validate    also fit without each row in turn and predict it (leave one out)\n"
		"  --held-out <file>   runs the fit never sees (another family or regime), predicted with\n"
		"                      the fitted profile: in-sample and held-out errors side by side\n");
}

/* Long-valued options: parse a positive integer (1e8 and 100M style too). */
static int pos_int(const char *s, const char *flag, long long *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && (*end == 'M' || *end == 'G' || *end == 'K'))
		v *= *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : 1e9, end++;
	if (end == s || *end || v < 1 || v > 1e15 || v != floor(v)) {
		fprintf(stderr, "zbench: invalid value '%s' for %s (expected a positive integer)\n", s, flag);
		return -1;
	}
	*out = (long long)v;
	return 0;
}

static int calibrate_deepspeed(int argc, char **argv)
{
	static const struct option table[] = {
		{ "deepspeed", no_argument, NULL, 'D' },     { "measured", required_argument, NULL, 'M' },
		{ "hw", required_argument, NULL, 'w' },      { "model", required_argument, NULL, 'm' },
		{ "seq", required_argument, NULL, 's' },     { "micro-batch", required_argument, NULL, 'B' },
		{ "sub-group", required_argument, NULL, 'g' }, { "out", required_argument, NULL, 'o' },
		{ "no-fit", no_argument, NULL, 'n' },        { "help", no_argument, NULL, 'h' },
		{ "cross-validate", no_argument, NULL, 'x' }, { "held-out", required_argument, NULL, 'H' },
		{ 0 },
	};
	const char *measured = NULL, *files[8], *held[8], *hw_name = NULL, *model = NULL, *out = NULL;
	int nfiles = 0, nheld = 0;
	long long seq = 0, mb = 0, sg = 0;
	int no_fit = 0, loo = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "ho:", table, NULL)) != -1) {
		switch (opt) {
		case 'D': break;
		case 'M':
			if (nfiles == 8) {
				fprintf(stderr, "zbench: --measured: at most 8 files\n");
				return ZB_EXIT_INPUT;
			}
			measured = files[nfiles++] = optarg;
			break;
		case 'w': hw_name = optarg; break;
		case 'm': model = optarg; break;
		case 'o': out = optarg; break;
		case 'n': no_fit = 1; break;
		case 'x': loo = 1; break;
		case 'H':
			if (nheld == 8) {
				fprintf(stderr, "zbench: --held-out: at most 8 files\n");
				return ZB_EXIT_INPUT;
			}
			held[nheld++] = optarg;
			break;
		case 's': if (pos_int(optarg, "--seq", &seq)) return ZB_EXIT_INPUT; break;
		case 'B': if (pos_int(optarg, "--micro-batch", &mb)) return ZB_EXIT_INPUT; break;
		case 'g': if (pos_int(optarg, "--sub-group", &sg)) return ZB_EXIT_INPUT; break;
		case 'h': usage_ds(stdout); return 0;
		default: usage_ds(stderr); return ZB_EXIT_INPUT;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		return ZB_EXIT_INPUT;
	}
	if (!measured) {
		fprintf(stderr, "zbench: calibrate --deepspeed needs --measured FILE.tsv\n");
		return ZB_EXIT_INPUT;
	}
	zb_calibrate_ds_opts o = { .nfiles = nfiles, .hw = hw_name, .model = model, .seq = seq, .micro_batch = mb,
				   .sub_group = sg, .out = out, .no_fit = no_fit, .cross_validate = loo };
	memcpy(o.files, files, (size_t)nfiles * sizeof *files);
	memcpy(o.held, held, (size_t)nheld * sizeof *held);
	o.nheld = nheld;
	zb_error err = { 0 };
	return zb_calibrate_deepspeed(&o, stdout, &err) ? zb_report_error(&err) : 0; /* a bad table: exit 2, nothing written */
}

/* ---- calibrate ------------------------------------------------------------------------------ */

#define DEFAULT_OUT "results/hw-calibrated.json"

static void usage_text(FILE *f)
{
	fprintf(f, "usage: zbench calibrate [--out <file>] [--name <name>] [--base <machine|file>] [--quick]\n"
		   "                        [--cpu-only] [--threads <n>] [--model <name>[,<name>...]]\n"
		   "                        [--micro-batch <n>] [--seq <n>] [--json] [--db <path> | --no-db]\n\n"
		   "Measure this machine (copies 4 KB..1 GB pinned and pageable, each way and both at once;\n"
		   "device memory; the GEMM shapes of the models; CPU Adam over thread counts, alone and\n"
		   "with copies running; GPU Adam) and fit the simulator's hardware model to it. Writes\n"
		   "a hardware profile that --hw accepts (default " DEFAULT_OUT ") and a\n"
		   "database row. --base: the machine whose values stand where nothing is measured\n"
		   "(default h200-machine). --model: GEMM shapes of these presets (default: the models\n"
		   "and shapes of zbench validate's full suite). --cpu-only: the CPU alone (no GPU\n"
		   "needed; DRAM bandwidth then from the triad). --quick: small sizes, for tests.\n"
		   "With 2 GPUs or more: NCCL reduce-scatter and all-gather on all of them, fitted to the\n"
		   "ring model (fabric.intra_bus_Bps, fabric.intra_latency_s; exec/nccl_bench.h).\n");
}

static zb_calibrate_opts cal; /* the flags write into it */
static const char *cal_db;
static int cal_no_db, cal_json;

static const zb_flag flags[] = {
	ZB_STRING("out", &cal.out_path, "<file>", "the profile to write (default " DEFAULT_OUT ")"),
	ZB_STRING("name", &cal.name, "<name>", "the profile's machine name (default calibrated)"),
	ZB_STRING("base", &cal.base_name, "<machine|file>", "values where nothing is measured (default h200-machine)"),
	ZB_SWITCH("quick", &cal.quick, "small sizes, for tests"),
	ZB_SWITCH("cpu-only", &cal.cpu_only, "the CPU alone, no GPU needed"),
	ZB_INT("threads", &cal.threads, 1, 1 << 20, "<n>", "CPU threads (default: all)"),
	ZB_STRING("model", &cal.models, "<names>", "GEMM shapes of these presets (a comma list)"),
	ZB_INT("micro-batch", &cal.mb, 1, 1 << 20, "<n>", "micro-batch of those shapes"),
	ZB_INT("seq", &cal.seq, 1, 1 << 20, "<n>", "sequence length of those shapes"),
	ZB_SWITCH("json", &cal_json, "results as JSON"),
	ZB_STRING("db", &cal_db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	ZB_SWITCH("no-db", &cal_no_db, "do not store results"),
	{ 0 },
};

static void usage(FILE *f)
{
	usage_text(f);
	fprintf(f, "\noptions:\n");
	zb_flags_usage(f, flags);
}

/* The profile as written and the measurements, into hw_profiles: one run of its own. */
static zb_status store(zb_calibration *k, const char *mtext, int argc, char **argv, int64_t *run_id, zb_error *err)
{
	zb_options so = { .db = cal_db, .no_db = cal_no_db };
	zb_session s;
	zb_status st;
	if ((st = zb_session_open(&s, &so, "calibrate", zb_calibration_device(k), argc, argv, err)) ||
	    (s.store && (st = zb_calibration_store(k, s.store, s.run_id, mtext, err))) ||
	    (st = zb_session_commit(&s, "ok", err)))
		zb_session_abort(&s);
	*run_id = st ? 0 : s.run_id;
	return st;
}

int cmd_calibrate(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) /* fitting DeepSpeed's profile to measured runs */
		if (strcmp(argv[i], "--deepspeed") == 0)
			return calibrate_deepspeed(argc, argv);
		else if (strcmp(argv[i], "--from-db") == 0 || strncmp(argv[i], "--from-db=", 10) == 0)
			return calibrate_from_db(argc, argv); /* the executor profile from a validate run */
	cal = (zb_calibrate_opts){ .out_path = DEFAULT_OUT };
	cal_db = NULL;
	cal_no_db = cal_json = 0;
	int rc;
	if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage, &rc))
		return rc;
	zb_error err = { 0 };
	zb_calibration *k;
	if (zb_calibration_run(&cal, stderr, &k, &err))
		return zb_report_error(&err);
	json_t *m = zb_calibration_measurements(k);
	char *mtext = json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(17));
	int64_t run_id = 0;
	zb_status st = store(k, mtext, argc, argv, &run_id, &err);
	free(mtext);
	if (st) {
		json_decref(m);
		zb_calibration_free(k);
		return zb_report_error(&err);
	}
	if (cal_json) {
		json_t *root = zb_calibration_json(k, m); /* takes m */
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		zb_calibration_text(k, run_id, stdout);
		json_decref(m);
	}
	zb_calibration_free(k);
	return 0;
}
