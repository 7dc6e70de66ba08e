/* kfit_adam.c - adam_mem from the CPU Adam of runs on several ranks, adam_copy from the
 * Adam tasks copies overlap; see kfit_adam.h. */
#include "analysis/kfit_adam.h"

#include <math.h>
#include <stdlib.h>

#include "common/error.h"
#include "sim/kernels.h"


typedef zb_kfit_busy_fit ctx;

static double cost_at(ctx *q, double v)
{
	q->hw.gpu.exec.adam_mem = v;
	return zb_kfit_busy_cost(q);
}

static double cost_cb(void *q, double v) { return cost_at(q, v); }

zb_status zb_kfit_adam_mem(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_adam_stats *stats,
			   zb_error *err)
{
	ctx q = { .s = s, .use = use, .hw = *hw, .resource = ZB_RES_CPU, .err = err };
	*stats = (zb_kfit_adam_stats){ 0 };
	stats->rms = NAN;
	double v0 = hw->gpu.exec.adam_mem;
	if (!(v0 > 0) || !(hw->gpu.exec.adam_thread > 0)) /* the CPU model, not the curve: nothing to scale */
		return ZB_OK;
	double c0 = cost_at(&q, v0);
	if (q.st || !isfinite(c0))
		return q.st;
	double best = v0, cbest = c0;
	zb_kfit_golden(cost_cb, &q, &q.st, 0.3 * v0, 1.5 * v0, 30, &best, &cbest);
	if (q.st)
		return q.st;
	stats->rms = sqrt(cost_at(&q, best));
	stats->n = q.n;
	if (!q.st)
		hw->gpu.exec.adam_mem = best;
	return q.st;
}


static int adam_sample(const zb_kfit_set *s, const zb_kfit_item *x, size_t i)
{
	return x->g.tasks[i].kind == ZB_TASK_CPU_ADAM && x->g.tasks[i].step >= s->warmup &&
	       x->mend[i] > x->mstart[i] && isfinite(x->mend[i]);
}

/* One configuration's sums: d slowdown c and d c^2 over its Adam tasks with copies beside
 * them, the slowdown against its Adam alone (params/s of compute time) from its tasks with
 * < 2 GB/s of copies beside them, the profile's rate when fewer than 3. */
static void adam_copy_item(const zb_kfit_set *s, const zb_kfit_item *x, const zb_hw *hw, double sums[2], int *n)
{
	const double alone_Bps = 2e9, L = hw->gpu.exec.adam_task_s, B = hw->cpu.dram_Bps;
	double p = 0, t = 0;
	int na = 0;
	for (size_t i = 0; i < x->g.ntasks; i++)
		if (adam_sample(s, x, i) && zb_kfit_copy_Bps(x, x->mstart[i], x->mend[i]) < alone_Bps) {
			p += x->g.tasks[i].params;
			t += x->mend[i] - x->mstart[i] - L;
			na++;
		}
	double ra = p / t;
	if (na < 3 || !(t > 0)) { /* too few alone: the profile's rate */
		zb_config c = x->c;
		c.hw = *hw;
		ra = zb_exec_adam_Pps(&c, &hw->gpu.exec, zb_config_cpu_threads(&c), 1);
		if (!(ra > 0))
			return;
	}
	for (size_t i = 0; i < x->g.ntasks; i++) {
		double s0 = x->mstart[i], e0 = x->mend[i], d = e0 - s0, c = zb_kfit_copy_Bps(x, s0, e0);
		if (!adam_sample(s, x, i) || !(d > L) || c < alone_Bps)
			continue;
		double slow = ra * (d - L) / x->g.tasks[i].params - 1;
		sums[0] += d * slow * c / B;
		sums[1] += d * (c / B) * (c / B);
		(*n)++;
	}
}


double zb_kfit_adam_copy(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *n)
{
	*n = 0;
	if (!(hw->cpu.dram_Bps > 0))
		return 0;
	/* Configurations whose Adam leaves a core free first: on every core a task's slowdown
	 * against its configuration's Adam alone mixes in the core lost to the launches (the GPU runs beside
	 * some of either kind of task), which the slope then takes for less of the copies' (a
	 * timeline simulated with 0.6 and a tenth of the cores lost gave 0.39). All of them where those
	 * leave too few tasks. */
	for (int pass = 0; pass < 2 && *n < 20; pass++) {
		double sums[2] = { 0, 0 };
		*n = 0;
		for (int k = 0; k < s->n; k++) {
			const zb_kfit_item *x = &s->it[k];
			if ((use && !use[k]) || x->c.policy.pageable || x->c.policy.link_rate_Bps > 0 ||
			    (pass == 0 && zb_kfit_adam_all_cores(x, hw)))
				continue;
			adam_copy_item(s, x, hw, sums, n);
		}
		if (*n >= 20 && sums[1] > 0) {
			double k = sums[0] / sums[1];
			return k > 0 ? (k < 10 ? k : 10) : 0;
		}
	}
	return 0;
}
