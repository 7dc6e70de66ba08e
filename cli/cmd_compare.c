/*
 * cmd_compare.c - zbench compare: predicted against measured for one run from the
 * database: step time, each resource's busy time, how much the flows overlapped,
 * the critical path, per task class (GEMMs, kernels, copies, CPU Adam, GPU Adam),
 * with the error of each (analysis/compare.h does the arithmetic). --json for machines.
 * compare <run> --predict <options>: a trace of another program against a prediction
 * (validate/trace_compare.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/compare.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "cli/session.h"
#include "common/version.h"
#include "report/compare.h"
#include "report/report.h"
#include "results/foreign.h"
#include "results/store.h"
#include "results/timeline.h"
#include "validate/trace_compare.h"

static struct compare_opts {
	int64_t config_id;
	int warmup, json;
	const char *db;
} co;

static const zb_flag flags[] = {
	ZB_ID("config", &co.config_id, "<id>", "one configuration in detail"),
	ZB_INT("warmup", &co.warmup, 0, 1000, "<n>", "steps left out of the steady state"),
	ZB_SWITCH("json", &co.json, "every detail as JSON"),
	ZB_STRING("db", &co.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench compare [<run> | latest] [--config <id>] [--warmup <n>] [--json] [--db <path>]\n\n"
		   "Predicted against measured for a run stored by zbench run or zbench validate: step\n"
		   "time, busy time of each resource, overlap of the flows, critical path and each task\n"
		   "class, with the error of each ((predicted - measured) / measured). <run> is a run id\n"
		   "(runs.id); without it or with latest, the newest configuration with measured events. A run with\n"
		   "several configurations prints one line each (--config <id> for the detail; --json\n"
		   "gives every detail). --warmup: steps left out of the steady state (default: the\n"
		   "run's --warmup, else 2).\n"
		   "A trace of another program (zbench trace, zbench import) against a prediction:\n"
		   "zbench compare [<run>] --predict <predict's options> (zbench compare --predict --help).\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

static int parse_id(const char *s, const char *what, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v < 1) {
		fprintf(stderr, "zbench: invalid %s '%s' (expected a positive integer)\n", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- compare --predict: a foreign trace against a prediction ------------------------------ */

static void usage_predict(FILE *f)
{
	fprintf(f, "usage: zbench compare [<run> | latest] [--config <id>] [--step-range <name>] [--no-nvtx]\n"
		   "                     [--cpu-threshold <cores>] [--json] [--db <path>] --predict <options>\n\n"
		   "A stored trace of another program (zbench trace, zbench import; <run> default: the newest)\n"
		   "against zbench's prediction of the configuration given after --predict (predict's options,\n"
		   "--ds-config and --hf-config included): step time, GPU busy, H2D and D2H busy and bytes,\n"
		   "CPU optimizer time, with the error of each. Stored as a run of kind 'compare-trace'.\n\n");
	zb_options_usage(f);
}

/* argv up to "--predict": this command's own; after it: predict's options. */
static int own_args(int argc, char **argv, int64_t *run, int64_t *cfg, zb_analyze_options *ao, int *json,
		    const char **db)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		char *end;
		if (!strcmp(a, "--json")) {
			*json = 1;
		} else if (!strcmp(a, "--no-nvtx")) {
			ao->no_nvtx = 1;
		} else if (!strcmp(a, "--db") && more) {
			*db = argv[++i];
		} else if (!strcmp(a, "--step-range") && more) {
			ao->step_range = argv[++i];
		} else if (!strcmp(a, "--cpu-threshold") && more) {
			ao->cpu_threshold = strtod(argv[++i], &end);
			if (*end || !(ao->cpu_threshold > 0)) {
				fprintf(stderr, "zbench: invalid --cpu-threshold '%s' (expected cores, > 0)\n", argv[i]);
				return ZB_EXIT_INPUT;
			}
		} else if (!strcmp(a, "latest")) {
			*run = 0; /* the newest trace, as without <run> */
		} else if ((!strcmp(a, "--config") && more) || a[0] != '-') {
			const char *v = a[0] != '-' ? a : argv[++i];
			long long x = strtoll(v, &end, 10);
			if (*end || x < 1) {
				fprintf(stderr, "zbench: invalid %s '%s' (expected a positive integer)\n",
					a[0] != '-' ? "run" : "--config", v);
				return ZB_EXIT_INPUT;
			}
			*(a[0] != '-' ? run : cfg) = x;
		} else {
			fprintf(stderr, "zbench: unknown or incomplete option '%s' for compare --predict\n", a);
			return ZB_EXIT_INPUT;
		}
	}
	return 0;
}

static zb_status store_compare(zb_options *o, const zb_config *c, zb_prediction *p, const zb_analysis *a,
			       json_t *cmp, int argc, char **argv, int64_t *config_id, zb_error *err)
{
	zb_session s;
	zb_status st = zb_session_open(&s, o, "compare-trace", NULL, argc, argv, err);
	if (st)
		return st;
	st = zb_session_store_prediction(&s, c, &p->graph, p->simulated ? &p->res : NULL, &p->mem, 1, config_id, err);
	double *step_s = zb_xmalloc((a->nsteps ? a->nsteps : 1) * sizeof *step_s);
	for (size_t i = 0; i < a->nsteps; i++)
		step_s[i] = a->steps[i].step_s;
	if (!st && s.store)
		st = zb_store_add_steps(s.store, *config_id, "measured", (int)a->nsteps, step_s, err);
	free(step_s);
	char *text = json_dumps(cmp, JSON_COMPACT);
	if (!st && s.store)
		st = zb_store_add_trace_meta(s.store, *config_id, "ZB_TRACE_COMPARE", text, err);
	free(text);
	if (!st)
		st = zb_session_commit(&s, "ok", err);
	if (st)
		zb_session_abort(&s);
	return st;
}

/* compare <run> --predict <predict's options> */
static int compare_trace(int argc, char **argv)
{
	int k = 1;
	while (k < argc && strcmp(argv[k], "--predict"))
		k++;
	int64_t run = 0, cfg = 0;
	int json = 0, rc;
	const char *db = NULL;
	zb_analyze_options ao = { 0 };
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage_predict(stdout);
			return 0;
		}
	if ((rc = own_args(k, argv, &run, &cfg, &ao, &json, &db)))
		return rc;
	/* predict's options, as if given to predict */
	int argc2 = argc - k;
	char **argv2 = zb_xmalloc((size_t)(argc2 + 1) * sizeof *argv2);
	argv2[0] = argv[0];
	for (int i = 1; i < argc2; i++)
		argv2[i] = argv[k + i];
	argv2[argc2] = NULL;
	zb_options o = { 0 };
	zb_error err = { 0 };
	int ok = zb_options_parse(argc2, argv2, NULL, usage_predict, &o, &rc);
	free(argv2);
	if (!ok)
		return rc;
	if (json)
		o.json = 1;
	if (!o.db)
		o.db = db;
	if (!db)
		db = o.db ? o.db : ZB_STORE_DEFAULT_PATH;
	zb_config c;
	zb_sources src;
	if (zb_options_single_src(&o, &c, &src, &err))
		return zb_report_error(&err);
	zb_analysis a = { 0 };
	if (zb_trace_compare_measure(db, run, &cfg, &ao, &a, &err))
		return zb_report_error(&err);
	zb_prediction p;
	if (zb_predict(&p, &c, &err)) {
		zb_analysis_free(&a);
		return zb_report_error(&err);
	}
	if (!p.simulated) {
		fprintf(stderr, "zbench: the configuration to compare with does not fit: %s\n", p.mem.reason);
		zb_prediction_free(&p);
		zb_analysis_free(&a);
		return ZB_EXIT_INPUT;
	}
	json_t *cmp = zb_trace_compare_json(&p, &a, cfg);
	int64_t config_id = 0;
	zb_status st = store_compare(&o, &c, &p, &a, cmp, argc, argv, &config_id, &err);
	if (!st && o.json) {
		json_object_set_new(cmp, "config_id", json_integer(config_id));
		zb_json_print(stdout, cmp);
	} else if (!st) {
		zb_trace_compare_print(stdout, &c, &p, &a, cfg, config_id);
	}
	json_decref(cmp);
	zb_prediction_free(&p);
	zb_analysis_free(&a);
	return st ? zb_report_error(&err) : 0;
}

/* ---- compare: a stored run, predicted against measured -------------------------------------- */

int cmd_compare(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) /* a foreign trace against a prediction */
		if (!strcmp(argv[i], "--predict"))
			return compare_trace(argc, argv);
	co = (struct compare_opts){ .warmup = -1, .db = ZB_STORE_DEFAULT_PATH };
	const char *run = NULL;
	int npos, rc;
	if (!zb_flags_parse(argc, argv, flags, &run, 1, &npos, usage, &rc))
		return rc;
	int64_t config_id = co.config_id, run_id = 0;
	int json = co.json, warmup = co.warmup;
	const char *db = co.db;
	if (npos && strcmp(run, "latest") && parse_id(run, "run id", &run_id)) /* latest: as without <run> */
		return ZB_EXIT_INPUT;
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (run zbench run or validate first, or give --db)\n", db);
		return ZB_EXIT_INPUT;
	}
	zb_error err = { 0 };
	zb_store *s;
	if (zb_store_open_readonly(&s, db, 2000, &err))
		return zb_report_error(&err);

	int64_t *ids = NULL;
	int n = 0;
	zb_status st = ZB_OK;
	if (config_id) {
		zb_stored_config info;
		if (!(st = zb_store_config_info(s, config_id, &info, &err))) {
			if (run_id && info.run_id != run_id)
				st = zb_fail(&err, ZB_E_INPUT, "configuration %lld belongs to run %lld, not run %lld",
					     (long long)config_id, (long long)info.run_id, (long long)run_id);
			ids = zb_xmalloc(sizeof *ids);
			ids[n++] = config_id;
		}
	} else if (run_id) {
		if (!(st = zb_store_run_configs(s, run_id, "measured", &ids, &n, &err)) && n == 0)
			st = zb_fail(&err, ZB_E_INPUT, "run %lld in database '%s' has no measured events to compare"
						       " (only zbench run and validate measure)",
				     (long long)run_id, db);
	} else {
		int64_t latest;
		if (!(st = zb_store_latest_config(s, "measured", &latest, &err))) {
			ids = zb_xmalloc(sizeof *ids);
			ids[n++] = latest;
		}
	}
	if (st) {
		zb_store_close(s);
		free(ids);
		return zb_report_error(&err);
	}

	json_t *arr = json_array();
	int printed_header = 0;
	for (int i = 0; i < n && !st; i++) {
		zb_graph g;
		double *ps, *pe, *ms, *me;
		zb_stored_config info;
		if ((st = zb_store_load_timeline(s, ids[i], &g, &ps, &pe, &ms, &me, &info, &err)))
			break;
		zb_comparison c;
		int w = warmup >= 0 ? warmup : info.warmup >= 0 ? info.warmup : 2;
		if (info.measured == 0)
			st = zb_fail(&err, ZB_E_INPUT, "configuration %lld has no measured events to compare",
				     (long long)ids[i]);
		else if (info.predicted == 0)
			st = zb_fail(&err, ZB_E_INPUT, "configuration %lld has no predicted events to compare",
				     (long long)ids[i]);
		else
			st = zb_compare_timelines(&g, ps, pe, ms, me, w, &c, &err);
		if (!st) {
			if (json) {
				json_array_append_new(arr, zb_comparison_json(&info, &c));
			} else if (n == 1) {
				printf("# zbench %s%s%s compare, database %s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "",
				       ZB_GIT_COMMIT, db);
				zb_comparison_print(stdout, &info, &c);
			} else {
				if (!printed_header) {
					printf("# zbench %s%s%s compare, database %s, run %lld (%s, %s): %d configurations "
					       "(zbench compare --config <id> for the detail of one)\n",
					       ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, db,
					       (long long)info.run_id, info.run_kind, info.device, n);
					printf("%8s %10s %10s %8s %8s %8s  %s\n", "config", "predicted", "measured", "error",
					       "hidden", "hidden", "configuration");
					printf("%8s %10s %10s %8s %8s %8s  %s\n", "", "ms/step", "ms/step", "%", "pred %",
					       "meas %", "");
					printed_header = 1;
				}
				char label[256];
				zb_stored_config_label(&info, label, sizeof label);
				printf("%8lld %10.2f %10.2f %+8.1f %8.1f %8.1f  %s\n", (long long)info.config_id,
				       c.pred.step_time_s * 1e3, c.meas.step_time_s * 1e3, 100 * c.step_err,
				       100 * c.pred.hidden_frac, 100 * c.meas.hidden_frac, label);
			}
		}
		zb_graph_free(&g);
		free(ps);
		free(pe);
		free(ms);
		free(me);
	}
	zb_store_close(s);
	free(ids);
	if (st) {
		json_decref(arr);
		return zb_report_error(&err);
	}
	if (json) {
		json_t *root = json_object();
		json_object_set_new(root, "database", json_string(db));
		json_object_set_new(root, "configs", arr);
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		json_decref(arr);
	}
	return 0;
}
