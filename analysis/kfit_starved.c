/* kfit_starved.c - the GPU's rate while Adam holds every core, from tasks; see kfit_starved.h. */
#include "analysis/kfit_starved.h"

#include <math.h>

#include "sim/kernels.h"


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

double zb_kfit_starved_wait(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw,
			    int *tasks)
{
	double work = 0, wall = 0;
	int n = 0;
	zb_exec_profile p = hw->gpu.exec;
	p.starved_s = 0; /* the work alone: the wait is what the tasks measure beyond it */
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || !zb_kfit_adam_all_cores(x, hw))
			continue;
		zb_config c = cfgs[k];
		c.hw.gpu.exec = p;
		n += item_sums(s, x, &c, &p, &work, &wall);
	}
	*tasks = n;
	if (n < 100 || !(wall > work))
		return 0;
	return (wall - work) / n;
}

/* Item x's GPU compute tasks in the window: the sums and count of their waits from ready
 * to start, beside CPU Adam (b[1], n[1]) and beside nothing on the CPU (b[0], n[0]). */
static void item_waits(const zb_kfit_set *s, const zb_kfit_item *x, double b[2], int n[2])
{
	const zb_graph *g = &x->g;
	double prev_end = NAN;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->resource != ZB_RES_GPU)
			continue;
		double a = x->mstart[i], e = x->mend[i], ready = ready_time(s, x, i, &prev_end);
		if (isnan(ready))
			continue;
		double w = a - ready, cpu = zb_kfit_overlap(x, ZB_RES_CPU, ready < a ? ready : a, e);
		if (!(w >= 0) || w > 1e-3 || (cpu > 0 && cpu <= 0.5))
			continue;
		int k = cpu > 0.5;
		b[k] += w;
		n[k]++;
	}
}

/* Whether item k of s shows adam_gap_s: used, one rank, unpaced, Adam on fewer cores. */
static int gap_item(const zb_kfit_set *s, const unsigned char *use, int k, const zb_hw *hw)
{
	const zb_kfit_item *x = &s->it[k];
	const zb_policy *p = &x->c.policy;
	return (!use || use[k]) && p->gpus * p->nodes <= 1 && !(p->link_rate_Bps > 0) && !zb_kfit_adam_all_cores(x, hw);
}

double zb_kfit_adam_gap(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *tasks)
{
	double b0 = 0, num = 0, den = 0;
	int n0 = 0, n1 = 0;
	for (int k = 0; k < s->n; k++) /* the wait without Adam, which the launch and class fits hold */
		if (gap_item(s, use, k, hw)) {
			double b[2] = { 0 };
			int n[2] = { 0 };
			item_waits(s, &s->it[k], b, n);
			b0 += b[0], n0 += n[0];
		}
	for (int k = 0; k < s->n && n0 > 0; k++) {
		if (!gap_item(s, use, k, hw))
			continue;
		double b[2] = { 0 };
		int n[2] = { 0 };
		item_waits(s, &s->it[k], b, n);
		if (n[1] < 20)
			continue;
		double share = (double)zb_config_cpu_threads(&s->it[k].c) / (hw->cpu.cores > 0 ? hw->cpu.cores : 1);
		num += n[1] * share * (b[1] / n[1] - b0 / n0);
		den += n[1] * share * share;
		n1 += n[1];
	}
	*tasks = n1;
	if (n1 < 100 || n0 < 100 || !(den > 0))
		return 0;
	return num > 0 ? num / den : 0;
}

double zb_kfit_paced_gpu(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw)
{
	double work[3] = { 0 }, time[3] = { 0 };
	int n[3] = { 0 };
	const zb_exec_profile *p = &hw->gpu.exec;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || !(x->c.policy.link_rate_Bps > 0) || zb_kfit_adam_all_cores(x, hw))
			continue;
		zb_config c = cfgs[k];
		c.hw.gpu.exec = *p;
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *t = &x->g.tasks[i];
			double a = x->mstart[i], e = x->mend[i];
			if (t->resource != ZB_RES_GPU || t->step < s->warmup || !(e > a) || t->kind == ZB_TASK_COLLECTIVE ||
			    t->kind == ZB_TASK_HOST || zb_kfit_overlap(x, ZB_RES_GPU_OPT, a, e) > 0.1)
				continue;
			double od = zb_kfit_overlap(x, ZB_RES_D2H, a, e), oh = zb_kfit_overlap(x, ZB_RES_H2D, a, e);
			if ((od > 0.01 && od < 0.9) || (oh > 0.01 && oh < 0.9))
				continue;
			double fixed, w;
			zb_exec_gpu_flow(t, &c, p, &fixed, &w);
			if (!(e - a > fixed) || !(w > 0))
				continue;
			int m = (od >= 0.9) + (oh >= 0.9);
			work[m] += w;
			time[m] += e - a - fixed;
			n[m]++;
		}
	}
	if (n[0] < 50 || n[1] + n[2] < 50)
		return 0;
	double r0 = work[0] / time[0], num = 0, den = 0;
	for (int m = 1; m <= 2; m++)
		if (n[m] > 0) {
			num += time[m] * m * log(work[m] / time[m] / r0);
			den += time[m] * m * m;
		}
	double g = exp(num / den);
	return g < 1 ? g : 1;
}
