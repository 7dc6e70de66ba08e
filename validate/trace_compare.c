/*
 * trace_compare.c - zbench compare <run> --predict <configuration flags>
 * (trace_compare.h): a trace of another program (zbench trace, zbench import)
 * against zbench's prediction of the configuration it runs, resource by resource,
 * with the error of each ((predicted - measured) / measured).
 *
 * Measured: the medians of zbench analyze (profiler/analyze.h). Predicted: zbench
 * predict of the flags after --predict (the same flags as predict, --ds-config and
 * --hf-config included). Stored as a run of kind "compare-trace": the
 * configuration with its prediction and predicted timeline, the measured step
 * times of the trace (steps, source 'measured'), and the comparison as JSON in
 * META_DATA_EXPORT (ZB_TRACE_COMPARE); so `zbench plot accuracy` draws it, and
 * `zbench plot timeline` its predicted side.
 */
#include "validate/trace_compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/report.h"
#include "results/foreign.h"

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

zb_status zb_trace_compare_measure(const char *db, int64_t run, int64_t *cfg, const zb_analyze_options *ao,
				  zb_analysis *a, zb_error *err)
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

json_t *zb_trace_compare_json(const zb_prediction *p, const zb_analysis *a, int64_t trace_cfg)
{
	row r[8];
	int n = fill_rows(r, &p->res, &p->graph, &a->median);
	return rows_json(r, n, a, trace_cfg);
}

void zb_trace_compare_print(FILE *out, const zb_config *c, const zb_prediction *p, const zb_analysis *a,
			    int64_t trace_cfg, int64_t config_id)
{
	row r[8];
	int n = fill_rows(r, &p->res, &p->graph, &a->median);
	zb_print_header(out, "compare", c);
	fprintf(out, "# measured: trace configuration %" PRId64 ", %zu steps found by %s (medians)\n", trace_cfg, a->nsteps,
		a->found_by);
	fprintf(out, "\n%-14s %12s %12s %9s\n", "resource", "predicted", "measured", "error");
	for (int i = 0; i < n; i++) {
		double e = rel_err(r[i].pred, r[i].meas);
		char es[16] = "-";
		if (isfinite(e))
			snprintf(es, sizeof es, "%+.1f%%", 100 * e);
		fprintf(out, "%-14s %9.3f %-2s %9.3f %-2s %9s\n", r[i].name, r[i].pred * r[i].scale, r[i].unit,
			r[i].meas * r[i].scale, r[i].unit, es);
	}
	fprintf(out, "# gpu busy predicted = compute + GPU optimizer streams; measured = every kernel, memset"
		     " and device copy\n# stored as configuration %" PRId64 " (zbench plot accuracy)\n",
		config_id);
}
