/*
 * cmd_compare_trace.c - zbench compare <run> --predict <configuration flags>: a
 * trace of another program (zbench trace, zbench import) against zbench's
 * prediction of the configuration it runs, resource by resource, with the error of
 * each ((predicted - measured) / measured).
 *
 * Measured: the medians of zbench analyze (profiler/analyze.h). Predicted: zbench
 * predict of the flags after --predict (the same flags as predict, --ds-config and
 * --hf-config included). Stored as a run of kind "compare-trace": the
 * configuration with its prediction and predicted timeline, the measured step
 * times of the trace (steps, source 'measured'), and the comparison as JSON in
 * META_DATA_EXPORT (ZB_TRACE_COMPARE); so `zbench plot accuracy` draws it, and
 * `zbench plot timeline` its predicted side.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "report/report.h"
#include "cli/session.h"
#include "profiler/analyze.h"
#include "results/foreign.h"
#include "results/store.h"
#include "sim/predict.h"

int cmd_compare_trace(int argc, char **argv);

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench compare [<run>] [--config <id>] [--step-range <name>] [--no-nvtx]\n"
		   "                     [--cpu-threshold <cores>] [--json] [--db <path>] --predict <options>\n\n"
		   "A stored trace of another program (zbench trace, zbench import; <run> default: the newest)\n"
		   "against zbench's prediction of the configuration given after --predict (predict's options,\n"
		   "--ds-config and --hf-config included): step time, GPU busy, H2D and D2H busy and bytes,\n"
		   "CPU optimizer time, with the error of each. Stored as a run of kind 'compare-trace'.\n\n");
	zb_options_usage(f);
}

typedef struct row {
	const char *key, *name, *unit;
	double pred, meas, scale;
} row;

static double rel_err(double p, double m) { return m > 0 ? (p - m) / m : NAN; }

static int fill_rows(row *r, const zb_sim_result *res, const zb_graph *g, const zb_step_stats *m)
{
	int n = 0;
	r[n++] = (row){ "step_s", "step time", "ms", res->step_time_s, m->step_s, 1e3 };
	r[n++] = (row){ "gpu_busy_s", "gpu busy", "ms", res->busy_s[ZB_RES_GPU] + res->busy_s[ZB_RES_GPU_OPT], m->compute_s, 1e3 };
	r[n++] = (row){ "h2d_busy_s", "h2d busy", "ms", res->busy_s[ZB_RES_H2D], m->h2d_s, 1e3 };
	r[n++] = (row){ "d2h_busy_s", "d2h busy", "ms", res->busy_s[ZB_RES_D2H], m->d2h_s, 1e3 };
	r[n++] = (row){ "cpu_optimizer_s", "cpu optimizer", "ms", res->busy_s[ZB_RES_CPU], m->cpu_opt_s, 1e3 };
	r[n++] = (row){ "h2d_bytes", "h2d bytes", "GB", g->copy_bytes[ZB_RES_H2D], m->h2d_bytes, 1e-9 };
	r[n++] = (row){ "d2h_bytes", "d2h bytes", "GB", g->copy_bytes[ZB_RES_D2H], m->d2h_bytes, 1e-9 };
	return n;
}

static json_t *rows_json(const row *r, int n, const zb_analysis *a, int64_t trace_cfg)
{
	json_t *o = json_object();
	for (int i = 0; i < n; i++) {
		double e = rel_err(r[i].pred, r[i].meas);
		json_object_set_new(o, r[i].key, json_pack("{s:f, s:f, s:o}", "predicted", r[i].pred, "measured", r[i].meas,
							     "error", isfinite(e) ? json_real(e) : json_null()));
	}
	return json_pack("{s:I, s:s, s:I, s:o}", "trace_config", (json_int_t)trace_cfg, "steps_found_by", a->found_by,
			 "steps", (json_int_t)a->nsteps, "resources", o);
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
				return 2;
			}
		} else if ((!strcmp(a, "--config") && more) || a[0] != '-') {
			const char *v = a[0] != '-' ? a : argv[++i];
			long long x = strtoll(v, &end, 10);
			if (*end || x < 1) {
				fprintf(stderr, "zbench: invalid %s '%s' (expected a positive integer)\n",
					a[0] != '-' ? "run" : "--config", v);
				return 2;
			}
			*(a[0] != '-' ? run : cfg) = x;
		} else {
			fprintf(stderr, "zbench: unknown or incomplete option '%s' for compare --predict\n", a);
			return 2;
		}
	}
	return 0;
}

/* The trace's analysis (measured side). */
static zb_status measure(const char *db, int64_t run, int64_t *cfg, const zb_analyze_options *ao, zb_analysis *a,
			 zb_error *err)
{
	zb_store *s;
	zb_status st = zb_store_open(&s, db, 5000, err);
	if (st)
		return st;
	zb_trace_input in = { 0 };
	if (!*cfg)
		st = zb_store_trace_config(s, run, cfg, err);
	if (!st)
		st = zb_store_load_trace_input(s, *cfg, &in, err);
	if (!st)
		st = zb_analyze(&in, ao, a, err);
	zb_trace_input_free(&in);
	zb_store_close(s);
	return st;
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

int cmd_compare_trace(int argc, char **argv)
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
			usage(stdout);
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
	int ok = zb_options_parse(argc2, argv2, NULL, usage, &o, &rc);
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
	if (measure(db, run, &cfg, &ao, &a, &err))
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
		return 2;
	}
	row r[8];
	int n = fill_rows(r, &p.res, &p.graph, &a.median);
	json_t *cmp = rows_json(r, n, &a, cfg);
	int64_t config_id = 0;
	zb_status st = store_compare(&o, &c, &p, &a, cmp, argc, argv, &config_id, &err);
	if (!st) {
		if (o.json) {
			json_object_set_new(cmp, "config_id", json_integer(config_id));
			zb_json_print(stdout, cmp);
		} else {
			zb_print_header(stdout, "compare", &c);
			printf("# measured: trace configuration %" PRId64 ", %zu steps found by %s (medians)\n", cfg, a.nsteps,
			       a.found_by);
			printf("\n%-14s %12s %12s %9s\n", "resource", "predicted", "measured", "error");
			for (int i = 0; i < n; i++) {
				double e = rel_err(r[i].pred, r[i].meas);
				char es[16] = "-";
				if (isfinite(e))
					snprintf(es, sizeof es, "%+.1f%%", 100 * e);
				printf("%-14s %9.3f %-2s %9.3f %-2s %9s\n", r[i].name, r[i].pred * r[i].scale, r[i].unit,
				       r[i].meas * r[i].scale, r[i].unit, es);
			}
			printf("# gpu busy predicted = compute + GPU optimizer streams; measured = every kernel, memset"
			       " and device copy\n# stored as configuration %" PRId64 " (zbench plot accuracy)\n",
			       config_id);
		}
	}
	json_decref(cmp);
	zb_prediction_free(&p);
	zb_analysis_free(&a);
	return st ? zb_report_error(&err) : 0;
}
