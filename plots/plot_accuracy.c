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

zb_status plot_accuracy(plot_ctx *c)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	rowset rs;
	if (r->config_id) {
		if ((st = plot_check_config(c, r->config_id)) || (st = plot_load_rows(c, ZB_Q_CONFIG_ROW, r->config_id, &rs)))
			return st;
		c->info->config_id = r->config_id;
	} else if (r->run_id) {
		if ((st = plot_check_run(c, r->run_id)) || (st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, r->run_id, &rs)))
			return st;
		c->info->run_id = r->run_id;
	} else {
		if ((st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_MEASURED, 0, &rs)))
			return st;
	}
	double *meas = zb_xmalloc((size_t)(rs.n ? rs.n : 1) * sizeof *meas);
	int n = 0;
	for (int i = 0; i < rs.n; i++) {
		meas[i] = NAN;
		if (!(rs.r[i].has_pred && rs.r[i].step_time_s > 0))
			continue;
		if ((st = plot_measured_step_s(c, rs.r[i].id, &meas[i]))) {
			free(meas);
			plot_rowset_free(&rs);
			return st;
		}
		n += meas[i] > 0;
	}
	if (n == 0) {
		char scope[64] = "";
		if (r->config_id)
			snprintf(scope, sizeof scope, "config %lld in ", (long long)r->config_id);
		else if (r->run_id)
			snprintf(scope, sizeof scope, "run %lld in ", (long long)r->run_id);
		free(meas);
		plot_rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT,
			       "no configuration with both a prediction and measured steps in %sdatabase '%s'"
			       " (zbench run measures one on a GPU)",
			       scope, c->dbpath);
	}

	/* series by policy; errors and the range */
	strlist pol = { 0 };
	double lo = INFINITY, hi = 0, sum = 0, worst = -1;
	int worst_i = -1, outside = 0;
	for (int i = 0; i < rs.n; i++) {
		if (!(meas[i] > 0))
			continue;
		plot_sl_intern(&pol, rs.r[i].val[A_POLICY]);
		double p = rs.r[i].step_time_s, m = meas[i];
		double e = fabs(p - m) / m;
		sum += e;
		if (e > worst) {
			worst = e;
			worst_i = i;
		}
		outside += e > 0.05;
		lo = fmin(lo, fmin(p, m) * 1e3); /* ms */
		hi = fmax(hi, fmax(p, m) * 1e3);
	}
	int logscale = hi / lo > 20;
	double plo = logscale ? lo / 1.5 : fmax(0, lo - 0.15 * (hi - lo) - 0.1 * lo);
	double phi = logscale ? hi * 1.5 : hi + 0.15 * (hi - lo) + 0.1 * hi;

	char path[PATH_MAX + 32];
	FILE *f = plot_data_open(c, "accuracy.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	fprintf(f, "# predicted_ms measured_ms config_id error_pct; one block per policy\n");
	for (int s = 0; s < pol.n; s++) {
		fprintf(f, "# %s\n", pol.s[s]);
		for (int i = 0; i < rs.n; i++)
			if (meas[i] > 0 && !strcmp(rs.r[i].val[A_POLICY], pol.s[s]))
				fprintf(f, "%.9g %.9g %lld %.4g\n", rs.r[i].step_time_s * 1e3, meas[i] * 1e3,
					(long long)rs.r[i].id, 100 * (rs.r[i].step_time_s - meas[i]) / meas[i]);
		fprintf(f, "\n\n");
	}
	/* the configurations outside the band, labelled by id */
	fprintf(f, "# outside +-5%%\n");
	int nlab = 0;
	for (int i = 0; i < rs.n; i++)
		if (meas[i] > 0 && fabs(rs.r[i].step_time_s - meas[i]) / meas[i] > 0.05) {
			fprintf(f, "%.9g %.9g \"config %lld: %+.1f%%\"\n", rs.r[i].step_time_s * 1e3, meas[i] * 1e3,
				(long long)rs.r[i].id, 100 * (rs.r[i].step_time_s - meas[i]) / meas[i]);
			nlab++;
		}
	if (!nlab)
		fprintf(f, "NaN NaN \"\"\n");
	if ((st = plot_data_close(c, f, path)))
		goto out;

	char sub[512];
	snprintf(sub, sizeof sub,
		 "%d configuration%s · mean |error| %.1f%% · worst %.1f%% (config %lld) · %d outside ±5%%\n"
		 "error = (predicted - measured) / measured; measured: median steady-state step (after the first two)",
		 n, n == 1 ? "" : "s", 100 * sum / n, 100 * worst, (long long)rs.r[worst_i].id, outside);
	plot_begin(c, 950, 900, "Predicted against measured step time", sub);
	plot_gp(c, "set size ratio -1\n");
	if (logscale)
		plot_gp(c, "set logscale xy\n");
	plot_gp(c, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", plo, phi, plo, phi);
	plot_gp(c, "set samples 200\n");
	plot_gp(c, "set xlabel %s\nset ylabel %s\n", plot_gq(c, "predicted step time (ms)"), plot_gq(c, "measured step time (ms)"));
	plot_gp(c, "set key inside top left vertical reverse Left\n");
	plot_gp(c, "plot '+' using 1:(0.95*$1):(1.05*$1) with filledcurves fc rgb '#d6e6f4' fs solid 1.0 noborder"
	      " title %s, \\\n",
	   plot_gq(c, "±5% band"));
	plot_gp(c, "  x with lines lw 1.5 dt 2 lc rgb '#333333' title %s", plot_gq(c, "y = x (exact prediction)"));
	for (int s = 0; s < pol.n; s++)
		plot_gp(c, ", \\\n  %s index %d using 1:2 with points pt %d ps 1.6 lc rgb '%s' title %s", plot_gq(c, path), s,
		   plot_point_types[s % NPOINTS], plot_palette[s % NPALETTE], plot_gq(c, pol.s[s]));
	plot_gp(c, ", \\\n  %s index %d using 1:2:3 with labels left offset 1,0.6 font ',9' textcolor rgb '#aa2222' notitle\n",
	   plot_gq(c, path), pol.n);
	if ((st = plot_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what,
		 "%d configuration%s, mean |error| %.1f%%, worst %.1f%%", n, n == 1 ? "" : "s", 100 * sum / n,
		 100 * worst);
out:
	plot_sl_free(&pol);
	free(meas);
	plot_rowset_free(&rs);
	return st;
}
