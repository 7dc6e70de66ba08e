/*
 * plot_accuracy.c - the accuracy plot: predicted against measured step time, y = x and a
 * +-5% band.
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- predicted against measured ----------------------------------------------- */

/* One accuracy plot: configurations with a prediction and a measured step time. */
typedef struct acc_plot {
	rowset rs;
	double *meas; /* measured step of each row (NAN: none) */
	int n;        /* rows with both */
	strlist pol;  /* one series per policy */
	double lo, hi, sum, worst;
	int worst_i, outside;
	char path[PATH_MAX + 32];
} acc_plot;

/* --config, --run, or every configuration with measured steps or events. */
static zb_status load(plot_ctx *c, acc_plot *a)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	if (r->config_id) {
		if ((st = plot_check_config(c, r->config_id)) || (st = plot_load_rows(c, ZB_Q_CONFIG_ROW, r->config_id, &a->rs)))
			return st;
		c->info->config_id = r->config_id;
	} else if (r->run_id) {
		if ((st = plot_check_run(c, r->run_id)) ||
		    (st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, r->run_id, &a->rs)))
			return st;
		c->info->run_id = r->run_id;
	} else if ((st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_MEASURED, 0, &a->rs))) {
		return st;
	}
	a->meas = zb_xmalloc((size_t)(a->rs.n ? a->rs.n : 1) * sizeof *a->meas);
	for (int i = 0; i < a->rs.n; i++) {
		a->meas[i] = NAN;
		if (!(a->rs.r[i].has_pred && a->rs.r[i].step_time_s > 0))
			continue;
		if ((st = plot_measured_step_s(c, a->rs.r[i].id, &a->meas[i])))
			return st;
		a->n += a->meas[i] > 0;
	}
	if (a->n == 0) {
		char scope[64] = "";
		if (r->config_id)
			snprintf(scope, sizeof scope, "config %lld in ", (long long)r->config_id);
		else if (r->run_id)
			snprintf(scope, sizeof scope, "run %lld in ", (long long)r->run_id);
		return zb_fail(c->err, ZB_E_INPUT,
			       "no configuration with both a prediction and measured steps in %sdatabase '%s'"
			       " (zbench run measures one on a GPU)",
			       scope, c->dbpath);
	}
	return ZB_OK;
}

/* Series by policy; errors and the range. */
static void errors(acc_plot *a)
{
	a->lo = INFINITY;
	a->hi = a->sum = 0;
	a->worst = -1;
	a->worst_i = -1;
	for (int i = 0; i < a->rs.n; i++) {
		if (!(a->meas[i] > 0))
			continue;
		plot_sl_intern(&a->pol, a->rs.r[i].val[A_POLICY]);
		double p = a->rs.r[i].step_time_s, m = a->meas[i];
		double e = fabs(p - m) / m;
		a->sum += e;
		if (e > a->worst) {
			a->worst = e;
			a->worst_i = i;
		}
		a->outside += e > 0.05;
		a->lo = fmin(a->lo, fmin(p, m) * 1e3); /* ms */
		a->hi = fmax(a->hi, fmax(p, m) * 1e3);
	}
}

static zb_status write_data(plot_ctx *c, acc_plot *a)
{
	const rowset *rs = &a->rs;
	const double *meas = a->meas;
	char line[512];
	FILE *f = plot_data_open(c, "accuracy.dat", a->path, sizeof a->path);
	if (!f)
		return c->err->status;
	fprintf(f, "# predicted_ms measured_ms config_id error_pct; one block per policy\n");
	for (int s = 0; s < a->pol.n; s++) {
		fprintf(f, "# %s\n", plot_data_text(a->pol.s[s], line, sizeof line));
		for (int i = 0; i < rs->n; i++)
			if (meas[i] > 0 && !strcmp(rs->r[i].val[A_POLICY], a->pol.s[s]))
				fprintf(f, "%.9g %.9g %lld %.4g\n", rs->r[i].step_time_s * 1e3, meas[i] * 1e3,
					(long long)rs->r[i].id, 100 * (rs->r[i].step_time_s - meas[i]) / meas[i]);
		fprintf(f, "\n\n");
	}
	/* the configurations outside the band, labelled by id */
	fprintf(f, "# outside +-5%%\n");
	int nlab = 0;
	for (int i = 0; i < rs->n; i++)
		if (meas[i] > 0 && fabs(rs->r[i].step_time_s - meas[i]) / meas[i] > 0.05) {
			fprintf(f, "%.9g %.9g \"config %lld: %+.1f%%\"\n", rs->r[i].step_time_s * 1e3, meas[i] * 1e3,
				(long long)rs->r[i].id, 100 * (rs->r[i].step_time_s - meas[i]) / meas[i]);
			nlab++;
		}
	if (!nlab)
		fprintf(f, "NaN NaN \"\"\n");
	return plot_data_close(c, f, a->path);
}

static void write_script(plot_ctx *c, const acc_plot *a)
{
	int n = a->n;
	int logscale = a->hi / a->lo > 20;
	double plo = logscale ? a->lo / 1.5 : fmax(0, a->lo - 0.15 * (a->hi - a->lo) - 0.1 * a->lo);
	double phi = logscale ? a->hi * 1.5 : a->hi + 0.15 * (a->hi - a->lo) + 0.1 * a->hi;
	char sub[512];
	snprintf(sub, sizeof sub,
		 "%d configuration%s · mean |error| %.1f%% · worst %.1f%% (config %lld) · %d outside ±5%%\n"
		 "error = (predicted - measured) / measured; measured: median steady-state step (after the first two)",
		 n, n == 1 ? "" : "s", 100 * a->sum / n, 100 * a->worst, (long long)a->rs.r[a->worst_i].id, a->outside);
	plot_begin(c, 950, 900, "Predicted against measured step time", sub);
	plot_gp(c, "set size ratio -1\n");
	if (logscale)
		plot_gp(c, "set logscale xy\n");
	plot_gp(c, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", plo, phi, plo, phi);
	plot_gp(c, "set samples 200\n");
	plot_gp(c, "set xlabel %s\nset ylabel %s\n", plot_gq(c, "predicted step time (ms)"),
		plot_gq(c, "measured step time (ms)"));
	plot_gp(c, "set key inside top left vertical reverse Left\n");
	plot_gp(c, "plot '+' using 1:(0.95*$1):(1.05*$1) with filledcurves fc rgb '#d6e6f4' fs solid 1.0 noborder"
		   " title %s, \\\n",
		plot_gq(c, "±5% band"));
	plot_gp(c, "  x with lines lw 1.5 dt 2 lc rgb '#333333' title %s", plot_gq(c, "y = x (exact prediction)"));
	for (int s = 0; s < a->pol.n; s++)
		plot_gp(c, ", \\\n  %s index %d using 1:2 with points pt %d ps 1.6 lc rgb '%s' title %s",
			plot_gq(c, a->path), s, plot_point_types[s % NPOINTS], plot_palette[s % NPALETTE],
			plot_gq(c, a->pol.s[s]));
	plot_gp(c, ", \\\n  %s index %d using 1:2:3 with labels left offset 1,0.6 font ',9' textcolor rgb '#aa2222' notitle\n",
		plot_gq(c, a->path), a->pol.n);
}

zb_status plot_accuracy(plot_ctx *c)
{
	acc_plot a;
	memset(&a, 0, sizeof a);
	zb_status st = load(c, &a);
	if (!st) {
		errors(&a);
		if (!(st = write_data(c, &a))) {
			write_script(c, &a);
			st = plot_render(c);
		}
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "%d configuration%s, mean |error| %.1f%%, worst %.1f%%", a.n,
			 a.n == 1 ? "" : "s", 100 * a.sum / a.n, 100 * a.worst);
	plot_sl_free(&a.pol);
	free(a.meas);
	plot_rowset_free(&a.rs);
	return st;
}
