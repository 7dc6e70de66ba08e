/* kfit_starved.c - the GPU's rate while Adam holds every core (from tasks, or from the steps of
 * several ranks) and its wait beside Adam on fewer cores; see kfit_starved.h. */
#include "analysis/kfit_starved.h"

#include <math.h>

#include "sim/engine.h"
#include "sim/kernels.h"
#include "sim/predict.h"


/* GPU compute task i of x (resource GPU, in the steady steps, measured): its ready time,
 * the end of the stream's previous task (*prev_end, which this moves on) and of its
 * dependencies; NaN when it has none or does not qualify. */
static double ready_time(const zb_kfit_set *s, const zb_kfit_item *x, size_t i, double *prev_end)
{
	const zb_task *t = &x->g.tasks[i];
	double ready = *prev_end;
	*prev_end = x->mend[i];
	if (t->step < s->warmup || !(x->mend[i] > x->mstart[i]) || !isfinite(ready) || t->kind == ZB_TASK_COLLECTIVE ||
	    t->kind == ZB_TASK_HOST)
		return NAN;
	const uint32_t *deps = zb_task_deps(&x->g, t);
	for (uint32_t j = 0; j < t->dep_count; j++)
		if (x->mend[deps[j]] > ready)
			ready = x->mend[deps[j]];
	return ready;
}

/* Item x's sums: work (unit rate) and wall time less the launch, of its qualifying tasks. */
static int item_sums(const zb_kfit_set *s, const zb_kfit_item *x, const zb_config *cfg, const zb_exec_profile *p,
		     double *work, double *wall)
{
	const zb_graph *g = &x->g;
	double prev_end = NAN;
	int n = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->resource != ZB_RES_GPU)
			continue;
		double e = x->mend[i], ready = ready_time(s, x, i, &prev_end);
		if (!(e > ready) || zb_kfit_overlap(x, ZB_RES_CPU, ready, e) < 0.5) /* NaN ready: skipped */
			continue;
		double fixed, w, f = zb_kfit_overlap(x, ZB_RES_GPU_OPT, ready, e);
		zb_exec_gpu_flow(t, cfg, p, &fixed, &w);
		if (!(e - ready > fixed) || !(w > 0))
			continue;
		/* the part GPU Adam ran beside it at the SM share (shared_gpu, fitted where
		 * no starvation is): starved multiplies that share in the simulator */
		if (f > 0 && p->shared_gpu > 0)
			w *= 1 - f + f / p->shared_gpu;
		*work += w;
		*wall += e - ready - fixed;
		n++;
	}
	return n;
}

double zb_kfit_starved_rate(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw,
			    int *tasks)
{
	double work = 0, wall = 0;
	int n = 0;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || !zb_kfit_adam_all_cores(x, hw))
			continue;
		zb_config c = cfgs[k];
		c.hw.gpu.exec = hw->gpu.exec;
		n += item_sums(s, x, &c, &hw->gpu.exec, &work, &wall);
	}
	*tasks = n;
	if (n < 100 || !(wall > 0))
		return 0;
	double r = work / wall;
	return r > 1 ? 1 : r;
}

/* ---- several ranks: from the steps ------------------------------------------------ */

static int step_item(const zb_kfit_item *x, const zb_hw *hw)
{
	return x->g.ranks > 1 && zb_kfit_adam_all_cores(x, hw) && x->meas_step_s > 0;
}

typedef struct steps_ctx {
	const zb_kfit_set *s;
	const unsigned char *use;
	zb_hw hw;
	zb_error *err;
	zb_status st;
	int n;
} steps_ctx;

static double steps_cost(void *arg, double v)
{
	steps_ctx *q = arg;
	q->hw.gpu.exec.starved = v;
	double sum = 0;
	q->n = 0;
	for (int k = 0; k < q->s->n && !q->st; k++) {
		const zb_kfit_item *x = &q->s->it[k];
		if ((q->use && !q->use[k]) || !step_item(x, &q->hw))
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

zb_status zb_kfit_starved_steps(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw,
				zb_kfit_starved_stats *stats, zb_error *err)
{
	steps_ctx q = { .s = s, .use = use, .hw = *hw, .err = err };
	*stats = (zb_kfit_starved_stats){ .rms = NAN };
	const double step = 0.025;
	double best = 1, cbest = INFINITY;
	for (int i = 0; i <= 28 && !q.st; i++) { /* 1 down to 0.3 */
		double c = steps_cost(&q, 1 - i * step);
		if (c < cbest)
			cbest = c, best = 1 - i * step;
	}
	if (q.st || !isfinite(cbest))
		return q.st;
	zb_kfit_golden(steps_cost, &q, &q.st, best - step, fmin(1, best + step), 12, &best, &cbest);
	if (q.st)
		return q.st;
	stats->rms = sqrt(steps_cost(&q, best));
	stats->n = q.n;
	if (!q.st)
		hw->gpu.exec.starved = best;
	return q.st;
}
