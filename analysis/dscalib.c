/* dscalib.c - predict measured DeepSpeed runs, fit the framework profile; see dscalib.h. */
#include "analysis/dscalib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dsprofile.h"
#include "analysis/fit.h"
#include "sim/predict.h"

zb_status zb_ds_eval_row(const zb_ds_measured *m, int i, const zb_config *base, zb_ds_eval *out,
			 zb_error *err)
{
	zb_config c;
	zb_status st = zb_ds_row_config(&m->rows[i], m->path, base, &c, err);
	if (st)
		return st;
	zb_prediction p;
	if ((st = zb_predict(&p, &c, err)))
		return st;
	memset(out, 0, sizeof *out);
	out->gpu_B = p.mem.gpu_bytes;
	out->host_B = p.mem.host_bytes;
	out->fits = p.mem.fits;
	out->step_s = p.simulated ? p.res.step_time_s : 0;
	out->gpu_busy_s = p.simulated ? p.res.busy_s[ZB_RES_GPU] : 0;
	zb_prediction_free(&p);
	return ZB_OK;
}

typedef struct fitctx {
	const zb_ds_measured *m;
	zb_config base;
	double x0[ZB_DS_NPARAM];
	int evals;
} fitctx;

static void apply(fitctx *f, const double *x)
{
	for (int i = 0; i < ZB_DS_NPARAM; i++)
		*zb_ds_param_ptr(&f->base.hw.ds, i) = exp(x[i]);
}

static int residuals(const double *x, double *r, void *ctx)
{
	fitctx *f = ctx;
	apply(f, x);
	f->evals++;
	int k = f->m->n; /* the GPU busy residuals follow the step times */
	for (int i = 0; i < f->m->n; i++) {
		zb_ds_eval e;
		zb_error err;
		if (zb_ds_eval_row(f->m, i, &f->base, &e, &err) || e.step_s <= 0)
			return -1;
		r[i] = log(e.step_s / f->m->rows[i].step_s);
		if (f->m->rows[i].gpu_busy_s > 0) /* one more residual per row that measured it */
			r[k++] = e.gpu_busy_s > 0 ? log(e.gpu_busy_s / f->m->rows[i].gpu_busy_s) : 0;
	}
	for (int j = 0; j < ZB_DS_NPARAM; j++)
		r[k + j] = ZB_DS_PRIOR * (x[j] - f->x0[j]);
	return 0;
}

static void summarize(const double *r, int n, double *rms, double *max)
{
	double s = 0, mx = 0;
	for (int i = 0; i < n; i++) {
		s += r[i] * r[i];
		double e = fabs(exp(r[i]) - 1);
		if (e > mx)
			mx = e;
	}
	*rms = sqrt(s / n);
	*max = mx;
}

zb_status zb_ds_calibrate(const zb_ds_measured *m, const zb_config *base, zb_ds_profile *out,
			  zb_ds_fit_report *rep, zb_error *err)
{
	fitctx f;
	memset(&f, 0, sizeof f);
	f.m = m;
	f.base = *base;
	f.base.steps = 4;
	zb_ds_profile scratch;
	f.base.hw.ds = *zb_ds_profile_of(&base->hw.ds, &scratch);
	double x[ZB_DS_NPARAM], lo[ZB_DS_NPARAM], hi[ZB_DS_NPARAM];
	for (int i = 0; i < ZB_DS_NPARAM; i++) {
		const zb_ds_param_info *in = zb_ds_param(i);
		double v = zb_ds_param_get(&f.base.hw.ds, i);
		double l = in->lo > 0 ? in->lo : 1e-7; /* a log needs a floor above 0 */
		x[i] = f.x0[i] = log(v > l ? v : l);
		lo[i] = log(l);
		hi[i] = log(in->hi);
		if (in->held) /* measured directly: not a degree of freedom of the fit */
			lo[i] = hi[i] = x[i];
	}
	int nr = m->n + ZB_DS_NPARAM;
	for (int i = 0; i < m->n; i++)
		nr += m->rows[i].gpu_busy_s > 0;
	double *r = zb_xmalloc(sizeof(double) * (size_t)nr), cost;
	zb_status st = ZB_OK;
	if (residuals(x, r, &f)) {
		st = zb_fail(err, ZB_E_INPUT, "%s: a measured configuration cannot be predicted with the starting "
					      "profile (it does not fit in memory)", m->path);
		goto out;
	}
	summarize(r, m->n, &rep->rms_before, &rep->max_before);
	if ((st = zb_fit_lsq(residuals, &f, ZB_DS_NPARAM, nr, x, lo, hi, 40, &cost, err)))
		goto out;
	residuals(x, r, &f);
	summarize(r, m->n, &rep->rms_after, &rep->max_after);
	rep->evaluations = f.evals;
	apply(&f, x);
	*out = f.base.hw.ds;
	out->set = 1;
out:
	free(r);
	return st;
}

void zb_ds_errors_of(const zb_ds_measured *m, const zb_ds_eval *e, zb_ds_errors *out)
{
	memset(out, 0, sizeof *out);
	out->worst_row = -1;
	for (int i = 0; i < m->n; i++) {
		if (!(e[i].step_s > 0) || !(m->rows[i].step_s > 0))
			continue;
		double x = fabs(e[i].step_s / m->rows[i].step_s - 1);
		out->mape += x;
		out->n++;
		if (x > out->worst)
			out->worst = x, out->worst_row = i;
	}
	if (out->n > 0)
		out->mape /= out->n;
}
