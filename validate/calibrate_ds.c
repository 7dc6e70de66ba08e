/*
 * calibrate_ds.c - `zbench calibrate --deepspeed --measured FILE.tsv`: predict
 * measured DeepSpeed runs with the DeepSpeed schedule, fit the framework profile
 * (dsprofile.h) to their step times, print measured against predicted before and
 * after the fit, and save the hardware profile with the fitted "deepspeed" object.
 * Needs no GPU: the measurements are the input.
 */
#include "validate/calibrate_ds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dscalib.h"
#include "analysis/dsorder.h"
#include "inputs/dsmeasured.h"
#include "core/dsprofile.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static FILE *out; /* the report */

static double pct(double pred, double meas) { return meas > 0 ? 100.0 * (pred / meas - 1) : 0; }

/* Pairs of rows whose order the predictions keep (out of all pairs). */
static int pairs_in_order(const zb_ds_measured *m, const zb_ds_eval *e, int *total)
{
	int ok = 0;
	*total = 0;
	for (int i = 0; i < m->n; i++)
		for (int j = i + 1; j < m->n; j++) {
			(*total) += e[i].fits && e[j].fits;
			if (!e[i].fits || !e[j].fits)
				continue;
			double a = m->rows[i].step_s - m->rows[j].step_s, b = e[i].step_s - e[j].step_s;
			ok += (a > 0) == (b > 0);
		}
	return ok;
}

static void print_table(const zb_ds_measured *m, const zb_ds_eval *d, const zb_ds_eval *f)
{
	fprintf(out, "%-14s %9s %9s %7s %9s %7s %7s %7s %6s %7s %7s %6s\n", "config", "measured", "start", "err",
		f ? "fitted" : "-", "err", "gpu", "gpu", "err", "host", "host", "err");
	fprintf(out, "%-14s %9s %9s %7s %9s %7s %7s %7s %6s %7s %7s %6s\n", "", "ms", "ms", "%", "ms", "%", "GiB",
		"pred", "%", "GiB", "pred", "%");
	double sd = 0, sf = 0, md = 0, mf = 0;
	int nd = 0, nf = 0; /* rows predicted (that fit) */
	const zb_ds_eval *mem = f ? f : d;
	for (int i = 0; i < m->n; i++) {
		const zb_ds_row *r = &m->rows[i];
		double ed = pct(d[i].step_s, r->step_s), ef = f ? pct(f[i].step_s, r->step_s) : 0;
		if (d[i].fits) {
			sd += fabs(ed), nd++;
			md = fabs(ed) > md ? fabs(ed) : md;
		}
		if (f && f[i].fits) {
			sf += fabs(ef), nf++;
			mf = fabs(ef) > mf ? fabs(ef) : mf;
		}
		char fs[16] = "-", fe[16] = "-";
		if (f) {
			snprintf(fs, sizeof fs, "%.0f", f[i].step_s * 1e3);
			snprintf(fe, sizeof fe, "%+.1f", ef);
		}
		char ds[16] = "no fit", de[16] = "-";
		if (d[i].fits) {
			snprintf(ds, sizeof ds, "%.0f", d[i].step_s * 1e3);
			snprintf(de, sizeof de, "%+.1f", ed);
		}
		fprintf(out, "%-14s %9.0f %9s %7s %9s %7s %7.1f %7.1f %+6.1f %7.1f %7.1f %+6.1f\n", r->name,
			r->step_s * 1e3, ds, de, fs, fe, r->gpu_peak_B / GIB, mem[i].gpu_B / GIB,
			pct(mem[i].gpu_B, r->gpu_peak_B), r->host_rss_B / GIB, mem[i].host_B / GIB,
			pct(mem[i].host_B, r->host_rss_B));
	}
	int tot, okd = pairs_in_order(m, d, &tot);
	fprintf(out, "# step time MAPE: start profile %.1f%% (worst %.1f%%)", nd ? sd / nd : 0, md);
	if (f)
		fprintf(out, ", fitted %.1f%% (worst %.1f%%)", nf ? sf / nf : 0, mf);
	if (nd < m->n)
		fprintf(out, "; %d of %d configurations do not fit in the model's memory and are left out", m->n - nd, m->n);
	fprintf(out, "\n# ranked as DeepSpeed, row against row: start profile %d of %d pairs", okd, tot);
	if (f)
		fprintf(out, ", fitted %d of %d pairs", pairs_in_order(m, f, &tot), tot);
	fprintf(out, " (rows of one configuration from several sessions: see the pooled order below)\n");
}

/* Each configuration's sessions pooled (when a configuration comes in several rows) and
 * DeepSpeed's order where its own steps separate the pair (dsorder.h). */
static void print_pooled(const zb_ds_measured *m, const zb_ds_eval *e, const zb_config *base, const char *which)
{
	zb_ds_pooled *c = zb_xcalloc((size_t)m->n, sizeof *c);
	int n = zb_ds_pool(m, e, base, c);
	if (n < m->n) {
		fprintf(out, "\n# %s profile against each configuration's sessions pooled (the median of all their steps "
			"after warm-up)\n", which);
		fprintf(out, "%-14s %8s %6s %9s %9s %7s  %s\n", "config", "sessions", "steps", "measured", "predicted", "err",
			"session medians ms");
		double sum = 0, worst = 0;
		int used = 0;
		for (int k = 0; k < n; k++) {
			double x = pct(c[k].predicted_s, c[k].measured_s);
			if (c[k].fits) {
				sum += fabs(x), used++;
				worst = fabs(x) > worst ? fabs(x) : worst;
			}
			fprintf(out, "%-14s %8d %6d %9.0f %9.0f %+7.1f ", m->rows[c[k].row[0]].name, c[k].nrows, c[k].nsteps,
				c[k].measured_s * 1e3, c[k].predicted_s * 1e3, x);
			for (int r = 0; r < c[k].nrows; r++)
				fprintf(out, " %.0f", m->rows[c[k].row[r]].step_s * 1e3);
			fprintf(out, "\n");
		}
		fprintf(out, "# pooled step time MAPE %.1f%% (worst %.1f%%) over %d configurations\n", used ? sum / used : 0,
			worst, used);
	}
	zb_ds_order o;
	zb_ds_order_check(m, c, n, &o, out);
	fprintf(out, "# ranked as DeepSpeed where its steps separate the pair (rank-sum p < %.2f): %s profile %d of %d "
		"separated pairs; %d of %d pairs not separated\n", ZB_DS_ORDER_ALPHA, which, o.in_order, o.separated,
		o.pairs - o.separated, o.pairs);
	free(c);
}

static void print_profile(const zb_ds_profile *before, const zb_ds_profile *after)
{
	fprintf(out, "\n%-18s %12s %12s  %s\n", "parameter", "start", "fitted", "source of the start value");
	for (int i = 0; i < ZB_DS_NPARAM; i++) {
		const zb_ds_param_info *in = zb_ds_param(i);
		fprintf(out, "%-18s %12.4g %12.4g  %s\n", in->key, zb_ds_param_get(before, i), zb_ds_param_get(after, i),
			in->source);
	}
}

static int eval_all(const zb_ds_measured *m, const zb_config *base, zb_ds_eval *e, zb_error *err)
{
	for (int i = 0; i < m->n; i++)
		if (zb_ds_eval_row(m, i, base, &e[i], err))
			return -1;
	return 0;
}

/* Leave one out: fit without one configuration (every session of it), predict its rows
 * and their pooled steps. The honest out-of-sample error of the fit. */
static int cross_validate(const zb_ds_measured *m, const zb_config *base, zb_error *err)
{
	zb_ds_eval *none = zb_xcalloc((size_t)m->n, sizeof *none);
	zb_ds_pooled *c = zb_xcalloc((size_t)m->n, sizeof *c);
	int n = zb_ds_pool(m, none, base, c), rc = -1;
	fprintf(out, "\n# leave one out: fitted without each configuration (%d of them, every session), predicting it\n", n);
	fprintf(out, "%-14s %9s %9s %7s\n", "config", "measured", "predicted", "err");
	double sum = 0, worst = 0, psum = 0, pworst = 0;
	for (int k = 0; k < n; k++) {
		zb_ds_measured rest = *m;
		rest.rows = zb_xcalloc((size_t)m->n, sizeof *rest.rows);
		rest.n = 0;
		for (int j = 0; j < m->n; j++) {
			int mine = 0;
			for (int r = 0; r < c[k].nrows; r++)
				mine |= c[k].row[r] == j;
			if (!mine)
				rest.rows[rest.n++] = m->rows[j];
		}
		zb_ds_profile fitted;
		zb_ds_fit_report rep;
		zb_status st = zb_ds_calibrate(&rest, base, &fitted, &rep, err);
		free(rest.rows);
		if (st)
			goto out;
		zb_config fc = *base;
		fc.hw.ds = fitted;
		zb_ds_eval e;
		for (int r = 0; r < c[k].nrows; r++) {
			int i = c[k].row[r];
			if (zb_ds_eval_row(m, i, &fc, &e, err))
				goto out;
			double x = pct(e.step_s, m->rows[i].step_s);
			sum += fabs(x);
			worst = fabs(x) > worst ? fabs(x) : worst;
			fprintf(out, "%-14s %9.0f %9.0f %+7.1f\n", m->rows[i].name, m->rows[i].step_s * 1e3, e.step_s * 1e3, x);
		}
		double x = pct(e.step_s, c[k].measured_s);
		psum += fabs(x);
		pworst = fabs(x) > pworst ? fabs(x) : pworst;
		if (c[k].nrows > 1)
			fprintf(out, "%-14s %9.0f %9.0f %+7.1f  (sessions pooled)\n", m->rows[c[k].row[0]].name,
				c[k].measured_s * 1e3, e.step_s * 1e3, x);
	}
	fprintf(out, "# leave-one-out MAPE %.1f%% (worst %.1f%%) over %d rows", sum / m->n, worst, m->n);
	if (n < m->n)
		fprintf(out, "; %.1f%% (worst %.1f%%) over the %d configurations' pooled steps", psum / n, pworst, n);
	fprintf(out, "\n");
	rc = 0;
out:
	free(none);
	free(c);
	return rc;
}

/* The held-out runs predicted with the profile the fit gave (never fitted to them),
 * beside the fitted runs' errors. */
static int held_out(const zb_ds_measured *m, const zb_ds_eval *fe, const zb_ds_measured *h, const zb_config *fb,
		    zb_error *err)
{
	zb_ds_eval *e = zb_xcalloc((size_t)(h->n ? h->n : 1), sizeof *e);
	int rc = eval_all(h, fb, e, err);
	if (!rc) {
		fprintf(out, "\n# held out (never fitted): %d runs\n%-14s %9s %9s %7s  %s\n", h->n, "config", "measured",
			"predicted", "err", "model");
		for (int i = 0; i < h->n; i++)
			fprintf(out, "%-14s %9.0f %9.0f %+7.1f  %s\n", h->rows[i].name, h->rows[i].step_s * 1e3,
				e[i].step_s * 1e3, pct(e[i].step_s, h->rows[i].step_s),
				h->rows[i].have_shape ? h->rows[i].shape.name : h->rows[i].model);
		zb_ds_errors in, ho;
		zb_ds_errors_of(m, fe, &in);
		zb_ds_errors_of(h, e, &ho);
		fprintf(out, "# step time: in-sample MAPE %.1f%% (worst %.1f%%) over %d runs, held-out MAPE %.1f%% (worst "
			     "%.1f%%) over %d runs\n", 100 * in.mape, 100 * in.worst, in.n, 100 * ho.mape, 100 * ho.worst,
			ho.n);
	}
	free(e);
	return rc;
}

zb_status zb_calibrate_deepspeed(const zb_calibrate_ds_opts *opt, FILE *f, zb_error *err)
{
	out = f;
	zb_config base;
	memset(&base, 0, sizeof base);
	zb_status st;
	const char *hw_name = opt->hw, *model = opt->model;
	if (!hw_name)
		zb_preset_default_hw(&base.hw), st = ZB_OK;
	else if (strchr(hw_name, '/') || strstr(hw_name, ".json"))
		st = zb_hw_load(hw_name, &base.hw, err);
	else
		st = zb_preset_hw(hw_name, &base.hw, err);
	if (!st && model)
		st = zb_ds_model_named(model, NULL, &base.model, err);
	else if (!st)
		zb_preset_default_model(&base.model);
	zb_ds_measured m = { 0 }, h = { 0 };
	if (!st)
		st = zb_ds_measured_load_many(opt->files, opt->nfiles, &base.model, &m, err);
	if (!st && opt->nheld && (st = zb_ds_measured_load_many(opt->held, opt->nheld, &base.model, &h, err)))
		zb_ds_measured_free(&m);
	if (st)
		return st;
	zb_policy_defaults(&base.policy);
	base.framework = ZB_FW_DEEPSPEED;
	base.steps = 4;
	if (opt->seq)
		base.policy.seq = (int)opt->seq;
	if (opt->micro_batch)
		base.policy.micro_batch = (int)opt->micro_batch;
	if (opt->sub_group)
		base.policy.sub_group_size = opt->sub_group;

	zb_ds_eval *d = zb_xcalloc((size_t)m.n, sizeof *d), *fe = zb_xcalloc((size_t)m.n, sizeof *fe);
	zb_ds_profile start, scratch;
	start = *zb_ds_profile_of(&base.hw.ds, &scratch);
	fprintf(out, "# zbench calibrate --deepspeed: %d measured configurations from %s%s\n", m.n,
		opt->files[opt->nfiles - 1], opt->nfiles > 1 ? " and the other --measured files" : "");
	fprintf(out, "# hardware %s, model %s, seq %d, micro-batch %d; profile: %s\n", base.hw.name, base.model.name,
		base.policy.seq, base.policy.micro_batch, base.hw.ds.set ? "the hardware file's" : "defaults");
	st = eval_all(&m, &base, d, err) ? err->status : ZB_OK;
	if (!st && opt->no_fit) {
		print_table(&m, d, NULL);
		print_pooled(&m, d, &base, "start");
		if (opt->nheld && held_out(&m, d, &h, &base, err))
			st = err->status;
	} else if (!st) {
		zb_ds_profile fitted;
		zb_ds_fit_report rep;
		zb_config fb = base;
		if (!(st = zb_ds_calibrate(&m, &base, &fitted, &rep, err))) {
			fb.hw.ds = fitted;
			st = eval_all(&m, &fb, fe, err) ? err->status : ZB_OK;
		}
		if (!st) {
			print_table(&m, d, fe);
			print_pooled(&m, fe, &base, "fitted");
			print_profile(&start, &fitted);
			fprintf(out, "# fit: rms log error %.3f -> %.3f, %d simulations of the %d configurations\n",
				rep.rms_before, rep.rms_after, rep.evaluations, m.n);
			if (opt->cross_validate && cross_validate(&m, &base, err))
				st = err->status;
			if (!st && opt->nheld && held_out(&m, fe, &h, &fb, err))
				st = err->status;
		}
		if (!st && opt->out && !(st = zb_hw_save(opt->out, &fb.hw, err)))
			fprintf(out, "# wrote %s (the hardware profile with its deepspeed object)\n", opt->out);
	}
	free(d);
	free(fe);
	zb_ds_measured_free(&m);
	zb_ds_measured_free(&h);
	return st;
}
