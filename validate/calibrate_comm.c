/* calibrate_comm.c - zbench calibrate --from-db --fit-comm; see calibrate_comm.h. */
#include "validate/calibrate_comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/kfit_adam.h"
#include "analysis/kfit_comm.h"
#include "analysis/kfit_eval.h"
#include "analysis/kfit_starved.h"
#include "report/report.h"
#include "inputs/hwfile.h"

enum { BASE, IN, HALF, LOO, NPRED };
static const char *const label[NPRED] = { "base", "in-sample", "half-out", "leave-one-out" };

static int adam; /* 1: --fit-adam (adam_mem), 2: --fit-starved (starved), 0: --fit-comm (comm_gpu, comm_opt) */
static FILE *out; /* the report */

/* The fit asked for on hw; *n: configurations used, *rms, *opt: comm_opt fitted. */
static zb_status fit(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, int *n, double *rms, int *opt,
		     zb_error *err)
{
	zb_status rc = ZB_OK;
	if (adam == 2) { /* fitted to the steps (kfit_starved.h); the tasks' reading is printed beside */
		zb_kfit_starved_stats st;
		rc = zb_kfit_starved_steps(s, use, hw, &st, err);
		*n = st.n, *rms = st.rms, *opt = 0;
		return rc;
	}
	if (adam) {
		zb_kfit_adam_stats st;
		rc = zb_kfit_adam_mem(s, use, hw, &st, err);
		*n = st.n, *rms = st.rms, *opt = 0;
	} else {
		zb_kfit_comm_stats st;
		rc = zb_kfit_comm(s, use, hw, &st, err);
		*n = st.n, *rms = st.rms, *opt = st.fit_opt;
	}
	return rc;
}

/* Fit on the items with use[i] set, predict all into out; the fitted factors to f. */
static zb_status fit_predict(const zb_kfit_set *s, const unsigned char *use, const zb_hw *base, zb_kfit_pred *out,
			     double f[2], zb_error *err)
{
	zb_hw hw = *base;
	int n, opt;
	double rms;
	zb_status rc = fit(s, use, &hw, &n, &rms, &opt, err);
	if (!rc)
		rc = zb_kfit_predict(s, &hw, out, err);
	f[0] = adam == 2 ? hw.gpu.exec.starved : adam ? hw.gpu.exec.adam_mem : hw.gpu.exec.comm_gpu;
	f[1] = adam == 2 ? hw.gpu.exec.starved : adam ? hw.gpu.exec.adam_mem : hw.gpu.exec.comm_opt;
	return rc;
}

/* Half-out (alternate configurations) and leave-one-out: each item predicted by a fit
 * without its configuration (the rounds of one are left out together, kfit_eval.h). */
static zb_status out_of_sample(const zb_kfit_set *s, const zb_hw *base, zb_kfit_pred *half, zb_kfit_pred *loo,
			       double range[2][2], zb_error *err)
{
	unsigned char *use = malloc((size_t)s->n);
	zb_kfit_pred *p = calloc((size_t)s->n, sizeof *p);
	int *point = malloc((size_t)(s->n ? s->n : 1) * sizeof *point);
	zb_status rc = !use || !p || !point ? zb_fail(err, ZB_E_INTERNAL, "out of memory") : ZB_OK;
	int npoints = point ? zb_kfit_points(s, point) : 0;
	for (int j = 0; j < 2; j++)
		range[j][0] = INFINITY, range[j][1] = -INFINITY;
	for (int h = 0; h < 2 + npoints && !rc; h++) {
		for (int i = 0; i < s->n; i++)
			use[i] = h < 2 ? (point[i] % 2) != h : point[i] != h - 2;
		double f[2];
		if ((rc = fit_predict(s, use, base, p, f, err)))
			break;
		for (int i = 0; i < s->n; i++)
			if (!use[i])
				(h < 2 ? half : loo)[i] = p[i];
		for (int j = 0; h >= 2 && j < 2; j++)
			range[j][0] = fmin(range[j][0], f[j]), range[j][1] = fmax(range[j][1], f[j]);
	}
	free(use);
	free(point);
	free(p);
	return rc;
}

static void print_rows(const zb_kfit_set *s, zb_kfit_pred *const pr[NPRED], int res)
{
	int comm = res == ZB_RES_COMM, cpu = res == ZB_RES_CPU || res == ZB_RES_GPU; /* a busy time */
	fprintf(out, "%3s  %-52s %9s", "#", "configuration", comm ? "transfer" : "measured");
	for (int k = 0; k < NPRED; k++)
		fprintf(out, " %9.9s %7s", label[k], "err");
	fprintf(out, "\n");
	for (int i = 0; i < s->n; i++) {
		const zb_kfit_item *x = &s->it[i];
		double m = comm || cpu ? x->meas_busy_s[res] : x->meas_step_s;
		if ((comm || cpu) && !(x->g.ranks > 1 && m > 0))
			continue;
		fprintf(out, "%3d  %-52s %9.2f", i + 1, x->key, m * 1e3);
		for (int k = 0; k < NPRED; k++) {
			double v = comm || cpu ? pr[k][i].busy_s[res] : pr[k][i].step_s;
			fprintf(out, " %9.2f %+7.1f", v * 1e3, 100 * (v / m - 1));
		}
		fprintf(out, "\n");
	}
}

/* The rate the stored timelines show (kfit_starved.h), for the report. */
static double tasks_rate(const zb_kfit_set *s, const zb_hw *base, int *tasks)
{
	zb_config *cfgs = zb_xcalloc((size_t)s->n, sizeof *cfgs);
	zb_status rc = ZB_OK;
	zb_error e;
	for (int k = 0; k < s->n && !rc; k++)
		rc = zb_kfit_config(&s->it[k], base, &cfgs[k], &e);
	double w = rc ? NAN : zb_kfit_starved_rate(s, NULL, cfgs, base, tasks);
	free(cfgs);
	return w;
}

zb_status zb_calibrate_comm(const zb_kfit_set *s, const zb_hw *base, const char *base_name, const char *path,
			    const char *name, int fit_adam, FILE *f, zb_error *err)
{
	adam = fit_adam;
	out = f;
	zb_kfit_pred *pr[NPRED];
	for (int k = 0; k < NPRED; k++)
		pr[k] = zb_xcalloc((size_t)s->n, sizeof *pr[k]);
	zb_hw fitted = *base;
	int n = 0, fit_opt = 0;
	double rms = NAN, range[2][2];
	zb_status rc = zb_kfit_predict(s, base, pr[BASE], err);
	if (!rc)
		rc = fit(s, NULL, &fitted, &n, &rms, &fit_opt, err);
	if (!rc && n == 0)
		rc = zb_fail(err, ZB_E_INPUT, "%s: no configuration with several ranks and measured %s",
			     adam == 2 ? "--fit-starved" : adam ? "--fit-adam" : "--fit-comm",
			     adam == 2 ? "CPU Adam on every core"
			     : adam ? "CPU Adam (and a CPU Adam curve in --base)" : "collectives");
	if (!rc)
		rc = zb_kfit_predict(s, &fitted, pr[IN], err);
	if (!rc)
		rc = out_of_sample(s, base, pr[HALF], pr[LOO], range, err);
	if (!rc) {
		snprintf(fitted.name, sizeof fitted.name, "%s", name ? name : base->name);
		fitted.gpu.exec.set = 1; /* a fit over a preset's profile is no longer the preset's (written in full) */
		rc = zb_hw_save(path, &fitted, err);
	}
	if (!rc && adam == 2) {
		int tasks = 0;
		double w = tasks_rate(s, base, &tasks);
		fprintf(out, "# zbench calibrate --fit-starved over %s: %d configurations with several ranks and Adam on every "
			"core; starved %.3f in-sample (rms log error of the step %.1f%%; base: starved %.3f); "
			"leave-one-out fits %.3f..%.3f; read from the %d tasks of the stored timelines instead: %.3f\n",
			base_name, n, fitted.gpu.exec.starved, 100 * rms, base->gpu.exec.starved, range[0][0], range[0][1],
			tasks, w);
	} else if (!rc && adam) {
		fprintf(out, "# zbench calibrate --fit-adam over %s: %d configurations with several ranks; adam_mem %.4f in-sample "
			"(base %.4f; rms log error of CPU busy %.1f%%); leave-one-out fits %.4f..%.4f\n",
			base_name, n, fitted.gpu.exec.adam_mem, base->gpu.exec.adam_mem, 100 * rms, range[0][0],
			range[0][1]);
	} else if (!rc) {
		fprintf(out, "# zbench calibrate --fit-comm over %s: %d configurations with collectives; in-sample comm_gpu %.3f "
			"comm_opt %.3f%s (rms log error %.1f%%); leave-one-out fits comm_gpu %.3f..%.3f comm_opt %.3f..%.3f\n",
			base_name, n, fitted.gpu.exec.comm_gpu, fitted.gpu.exec.comm_opt,
			fit_opt ? "" : " (kept: nothing runs beside GPU Adam)", 100 * rms, range[0][0], range[0][1],
			range[1][0], range[1][1]);
	}
	if (!rc) {
		fprintf(out, "# step time, ms\n");
		print_rows(s, pr, -1);
		fprintf(out, adam == 2 ? "# GPU busy time per step, ms\n"
			: adam   ? "# CPU busy time per step (the slowest rank's Adam), ms\n"
				: "# collectives' busy time per step (transfer), ms\n");
		print_rows(s, pr, adam == 2 ? ZB_RES_GPU : adam ? ZB_RES_CPU : ZB_RES_COMM);
		for (int k = 0; k < NPRED; k++) {
			zb_kfit_summary m;
			zb_kfit_summarize(s, pr[k], &m);
			fprintf(out, "%-14s step MAPE %6.2f%%  worst %6.2f%%  within 8%%: %d/%d  collectives' MAPE %5.1f%%  cpu busy "
				"MAPE %5.1f%%\n",
				label[k], 100 * m.mape, 100 * m.worst, m.within8, m.n, 100 * m.busy_mape[ZB_RES_COMM],
				100 * m.busy_mape[ZB_RES_CPU]);
		}
		fprintf(out, "# wrote %s\n", path);
	}
	for (int k = 0; k < NPRED; k++)
		free(pr[k]);
	return rc;
}
