/* kfit_adam.c - adam_mem from the CPU Adam of runs on several ranks; see kfit_adam.h. */
#include "analysis/kfit_adam.h"

#include <math.h>


typedef struct ctx {
	const zb_kfit_set *s;
	const unsigned char *use;
	zb_hw hw;
	zb_error *err;
	zb_status st;
	int n;
} ctx;

static int counts(const zb_kfit_item *x) { return x->g.ranks > 1 && x->meas_busy_s[ZB_RES_CPU] > 0; }

static double cpu_busy(ctx *q, int k)
{
	return zb_kfit_predicted_busy(q->s, k, &q->hw, ZB_RES_CPU, &q->st, q->err);
}

static double cost_at(ctx *q, double v)
{
	q->hw.gpu.exec.adam_mem = v;
	double sum = 0;
	q->n = 0;
	for (int k = 0; k < q->s->n && !q->st; k++) {
		const zb_kfit_item *x = &q->s->it[k];
		if ((q->use && !q->use[k]) || !counts(x))
			continue;
		double b = cpu_busy(q, k);
		if (!(b > 0))
			continue;
		double e = log(b / x->meas_busy_s[ZB_RES_CPU]);
		sum += e * e;
		q->n++;
	}
	return q->st || !q->n ? INFINITY : sum / q->n;
}

zb_status zb_kfit_adam_mem(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_adam_stats *stats,
			   zb_error *err)
{
	ctx q = { .s = s, .use = use, .hw = *hw, .err = err };
	*stats = (zb_kfit_adam_stats){ 0 };
	stats->rms = NAN;
	double v0 = hw->gpu.exec.adam_mem;
	if (!(v0 > 0) || !(hw->gpu.exec.adam_thread > 0)) /* the CPU model, not the curve: nothing to scale */
		return ZB_OK;
	double c0 = cost_at(&q, v0);
	if (q.st || !isfinite(c0))
		return q.st;
	const double g = (sqrt(5) - 1) / 2;
	double a = 0.3 * v0, b = 1.5 * v0, x1 = b - g * (b - a), x2 = a + g * (b - a);
	double f1 = cost_at(&q, x1), f2 = cost_at(&q, x2), best = v0, cbest = c0;
	for (int i = 0; i < 30 && !q.st; i++) {
		if (f1 < cbest)
			best = x1, cbest = f1;
		if (f2 < cbest)
			best = x2, cbest = f2;
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
			f1 = cost_at(&q, x1);
		} else {
			a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
			f2 = cost_at(&q, x2);
		}
	}
	if (q.st)
		return q.st;
	stats->rms = sqrt(cost_at(&q, best));
	stats->n = q.n;
	if (!q.st)
		hw->gpu.exec.adam_mem = best;
	return q.st;
}
