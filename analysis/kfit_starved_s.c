/* kfit_starved_s.c - starved_s from the steps of runs on several ranks; see kfit_starved_s.h. */
#include "analysis/kfit_starved_s.h"

#include <math.h>

#include "sim/engine.h"
#include "sim/predict.h"

static int counts(const zb_kfit_item *x, const zb_hw *hw)
{
	return x->g.ranks > 1 && x->c.policy.kind != ZB_POLICY_NONE && x->c.policy.ratio > 0 &&
	       zb_config_cpu_threads(&x->c) * x->g.ranks >= hw->cpu.cores && x->meas_step_s > 0;
}

typedef struct ctx {
	const zb_kfit_set *s;
	const unsigned char *use;
	zb_hw hw;
	zb_error *err;
	zb_status st;
	int n;
} ctx;

static double cost_at(ctx *q, double v)
{
	q->hw.gpu.exec.starved_s = v;
	double sum = 0;
	q->n = 0;
	for (int k = 0; k < q->s->n && !q->st; k++) {
		const zb_kfit_item *x = &q->s->it[k];
		if ((q->use && !q->use[k]) || !counts(x, &q->hw))
			continue;
		zb_config c;
		zb_prediction p;
		if ((q->st = zb_kfit_config(x, &q->hw, &c, q->err)) || (q->st = zb_predict(&p, &c, q->err)))
			break;
		double step = p.simulated ? zb_step_time_window(&p.graph, p.res.end, q->s->warmup) : NAN;
		zb_prediction_free(&p);
		if (!(step > 0))
			continue;
		double e = log(step / x->meas_step_s);
		sum += e * e;
		q->n++;
	}
	return q->st || !q->n ? INFINITY : sum / q->n;
}

static double cost_cb(void *q, double v) { return cost_at(q, v); }

zb_status zb_kfit_starved_s_steps(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw,
				  zb_kfit_starved_s_stats *stats, zb_error *err)
{
	ctx q = { .s = s, .use = use, .hw = *hw, .err = err };
	*stats = (zb_kfit_starved_s_stats){ .rms = NAN };
	const double step = 2.5e-6;
	double best = 0, cbest = INFINITY;
	for (int i = 0; i <= 40 && !q.st; i++) {
		double c = cost_at(&q, i * step);
		if (c < cbest)
			cbest = c, best = i * step;
	}
	if (q.st || !isfinite(cbest))
		return q.st;
	zb_kfit_golden(cost_cb, &q, &q.st, fmax(0, best - step), best + step, 12, &best, &cbest);
	if (q.st)
		return q.st;
	stats->rms = sqrt(cost_at(&q, best));
	stats->n = q.n;
	if (!q.st)
		hw->gpu.exec.starved_s = best;
	return q.st;
}
