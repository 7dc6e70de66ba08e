/* kfit_eval.c - errors, speedups and order of predicted against measured; see kfit_eval.h. */
#include "analysis/kfit_eval.h"

#include <math.h>
#include <string.h>

int zb_kfit_same_shape(const zb_config *a, const zb_config *b)
{
	const zb_policy *p = &a->policy, *q = &b->policy;
	return !strcmp(a->model.name, b->model.name) && a->model.layers == b->model.layers &&
	       p->micro_batch == q->micro_batch && p->seq == q->seq && p->gas == q->gas && p->ckpt == q->ckpt &&
	       p->offload_param == q->offload_param && p->pageable == q->pageable && p->cpu_threads == q->cpu_threads &&
	       p->attention == q->attention && p->link_rate_Bps == q->link_rate_Bps;
}

static void speedups(const zb_kfit_set *s, const zb_kfit_pred *p, zb_kfit_summary *m)
{
	m->speed_worst = 0;
	for (int i = 0; i < s->n; i++) {
		if (!isfinite(p[i].step_s))
			continue;
		int ref = -1; /* the group's slowest measured member */
		for (int j = 0; j < s->n; j++)
			if (isfinite(p[j].step_s) && zb_kfit_same_shape(&s->it[i].c, &s->it[j].c) &&
			    (ref < 0 || s->it[j].meas_step_s > s->it[ref].meas_step_s))
				ref = j;
		if (ref < 0 || ref == i)
			continue;
		double ps = p[ref].step_s / p[i].step_s, ms = s->it[ref].meas_step_s / s->it[i].meas_step_s;
		double e = fabs(ps / ms - 1);
		m->nspeed++;
		m->speed_ok += e <= 0.05;
		if (e > m->speed_worst)
			m->speed_worst = e;
	}
}

void zb_kfit_summarize(const zb_kfit_set *s, const zb_kfit_pred *p, zb_kfit_summary *m)
{
	memset(m, 0, sizeof *m);
	double sum = 0, bsum[ZB_RES_COUNT] = { 0 };
	int bn[ZB_RES_COUNT] = { 0 };
	for (int i = 0; i < s->n; i++) {
		const zb_kfit_item *x = &s->it[i];
		if (!isfinite(p[i].step_s))
			continue;
		double e = fabs(p[i].step_s / x->meas_step_s - 1);
		sum += e;
		m->n++;
		m->within3 += e <= 0.03;
		m->within8 += e <= 0.08;
		if (e > m->worst)
			m->worst = e;
		for (int r = 0; r < ZB_RES_COUNT; r++)
			if (x->meas_busy_s[r] > 1e-3 * x->meas_step_s && isfinite(p[i].busy_s[r])) {
				bsum[r] += fabs(p[i].busy_s[r] / x->meas_busy_s[r] - 1);
				bn[r]++;
			}
		for (int j = 0; j < i; j++) {
			const zb_kfit_item *y = &s->it[j];
			if (!isfinite(p[j].step_s) || fabs(x->meas_step_s / y->meas_step_s - 1) <= 0.03)
				continue;
			m->order_pairs++;
			m->order_swaps += (x->meas_step_s > y->meas_step_s) != (p[i].step_s > p[j].step_s);
		}
	}
	m->mape = m->n ? sum / m->n : NAN;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		m->busy_mape[r] = bn[r] ? bsum[r] / bn[r] : NAN;
	speedups(s, p, m);
}
