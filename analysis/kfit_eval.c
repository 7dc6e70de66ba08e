/* kfit_eval.c - errors, speedups and order of predicted against measured; see kfit_eval.h. */
#include "analysis/kfit_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/stats.h"

int zb_kfit_same_shape(const zb_config *a, const zb_config *b)
{
	const zb_policy *p = &a->policy, *q = &b->policy;
	return !strcmp(a->model.name, b->model.name) && a->model.layers == b->model.layers &&
	       a->model.kv_heads == b->model.kv_heads && p->micro_batch == q->micro_batch && p->seq == q->seq &&
	       p->gas == q->gas && p->ckpt == q->ckpt && p->offload_param == q->offload_param &&
	       p->pageable == q->pageable && p->cpu_threads == q->cpu_threads && p->attention == q->attention &&
	       p->link_rate_Bps == q->link_rate_Bps;
}

int zb_kfit_same_config(const zb_config *a, const zb_config *b)
{
	const zb_policy *p = &a->policy, *q = &b->policy;
	return zb_kfit_same_shape(a, b) && p->kind == q->kind && p->ratio == q->ratio && p->gpus == q->gpus &&
	       p->nodes == q->nodes && p->zero_stage == q->zero_stage;
}

int zb_kfit_points(const zb_kfit_set *s, int *point)
{
	int n = 0;
	for (int i = 0; i < s->n; i++) {
		int j = 0;
		while (j < i && !(s->it[j].run_id == s->it[i].run_id && zb_kfit_same_config(&s->it[j].c, &s->it[i].c)))
			j++;
		point[i] = j < i ? point[j] : n++;
	}
	return n;
}

/* One configuration as evaluated: the mean of its measurements in one run. */
typedef struct point {
	const zb_config *c;
	int64_t run_id;
	int item;     /* its first item */
	int n;
	double meas, pred, meas_busy[ZB_RES_COUNT], pred_busy[ZB_RES_COUNT];
	double meas_se; /* the mean's standard error over its rounds (0: one round) */
	double noise;   /* relative: meas_se / meas, or with one round its steps' */
} point;

/* The points of s: items of one configuration in one run (validate --rounds) merged,
 * their rounds averaged as validate does (zb_rounds_mean: the same weights, unless a
 * round's steps varied by more than the host repeats itself), so an order that runs the
 * rounds forward then backward cancels a steady drift of the host. Items that cannot be
 * simulated are left out. */
static int merge_points(const zb_kfit_set *s, const zb_kfit_pred *p, point *pt)
{
	int n = 0;
	int *of = zb_xmalloc(sizeof(int) * (size_t)(s->n ? s->n : 1)); /* item's point, -1: none */
	for (int i = 0; i < s->n; i++) {
		const zb_kfit_item *x = &s->it[i];
		of[i] = -1;
		if (!isfinite(p[i].step_s))
			continue;
		int k = 0;
		while (k < n && !(pt[k].run_id == x->run_id && zb_kfit_same_config(pt[k].c, &x->c)))
			k++;
		if (k == n)
			pt[n++] = (point){ .c = &x->c, .run_id = x->run_id, .item = i };
		pt[k].n++;
		of[i] = k;
	}
	double *m = zb_xmalloc(sizeof(double) * (size_t)(s->n ? s->n : 1) * 3), *se = m + s->n, *w = se + s->n;
	int *idx = zb_xmalloc(sizeof(int) * (size_t)(s->n ? s->n : 1));
	for (int k = 0; k < n; k++) {
		point *q = &pt[k];
		int c = 0;
		for (int i = q->item; i < s->n && c < q->n; i++)
			if (of[i] == k) {
				idx[c] = i;
				m[c] = s->it[i].meas_step_s;
				se[c++] = s->it[i].meas_se_s;
			}
		zb_spread r = zb_rounds_mean(m, se, c, ZB_ROUND_SE_FLOOR, w);
		q->meas = r.mean;
		q->meas_se = c > 1 && isfinite(r.se) ? r.se : 0;
		q->noise = c > 1 ? q->meas_se / q->meas : s->it[idx[0]].meas_se_s / s->it[idx[0]].meas_step_s;
		for (int j = 0; j < c; j++) {
			const zb_kfit_item *x = &s->it[idx[j]];
			q->pred += w[j] * p[idx[j]].step_s;
			for (int res = 0; res < ZB_RES_COUNT; res++) {
				q->meas_busy[res] += w[j] * x->meas_busy_s[res];
				q->pred_busy[res] += w[j] * p[idx[j]].busy_s[res];
			}
		}
	}
	free(idx);
	free(m);
	free(of);
	return n;
}

static void speedups(const point *pt, int n, zb_kfit_summary *m)
{
	m->speed_worst = 0;
	for (int i = 0; i < n; i++) {
		int ref = -1; /* the group's slowest measured member */
		for (int j = 0; j < n; j++)
			if (zb_kfit_same_shape(pt[i].c, pt[j].c) && (ref < 0 || pt[j].meas > pt[ref].meas))
				ref = j;
		if (ref < 0 || ref == i)
			continue;
		double ps = pt[ref].pred / pt[i].pred, ms = pt[ref].meas / pt[i].meas;
		double e = fabs(ps / ms - 1);
		double rse = hypot(pt[ref].meas_se / pt[ref].meas, pt[i].meas_se / pt[i].meas); /* of ms, relative */
		m->nspeed++;
		m->speed_ok += e <= 0.05;
		m->speed_miss_sure += e > 0.05 + 2 * rse;
		if (e > m->speed_worst)
			m->speed_worst = e;
	}
}

void zb_kfit_summarize(const zb_kfit_set *s, const zb_kfit_pred *p, zb_kfit_summary *m)
{
	memset(m, 0, sizeof *m);
	m->noise_worst_item = -1;
	point *pt = zb_xcalloc((size_t)(s->n ? s->n : 1), sizeof *pt);
	int n = merge_points(s, p, pt);
	double sum = 0, bsum[ZB_RES_COUNT] = { 0 };
	int bn[ZB_RES_COUNT] = { 0 };
	for (int i = 0; i < n; i++) {
		const point *x = &pt[i];
		double e = fabs(x->pred / x->meas - 1);
		sum += e;
		m->n++;
		m->merged += x->n - 1;
		m->within3 += e <= 0.03;
		m->within8 += e <= 0.08;
		if (e > m->worst)
			m->worst = e;
		if (x->noise > ZB_KFIT_JUDGE_NOISE) /* NaN (not known): judged */
			m->noisy++;
		else if (e > m->worst_sure)
			m->worst_sure = e;
		if (x->meas_se / x->meas > m->noise_worst) {
			m->noise_worst = x->meas_se / x->meas;
			m->noise_worst_item = x->item;
		}
		for (int r = 0; r < ZB_RES_COUNT; r++)
			if (x->meas_busy[r] > 1e-3 * x->meas && isfinite(x->pred_busy[r])) {
				bsum[r] += fabs(x->pred_busy[r] / x->meas_busy[r] - 1);
				bn[r]++;
			}
		for (int j = 0; j < i; j++) {
			const point *y = &pt[j];
			if (fabs(x->meas / y->meas - 1) <= 0.03)
				continue;
			int swap = (x->meas > y->meas) != (x->pred > y->pred);
			m->order_pairs++;
			m->order_swaps += swap;
			if (fabs(x->meas - y->meas) > 2 * hypot(x->meas_se, y->meas_se)) {
				m->order_pairs_sure++;
				m->order_swaps_sure += swap;
			}
		}
	}
	m->mape = m->n ? sum / m->n : NAN;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		m->busy_mape[r] = bn[r] ? bsum[r] / bn[r] : NAN;
	speedups(pt, n, m);
	free(pt);
}
