/* kfit_pageable.c - the DRAM queue of pageable uploads; see kfit_pageable.h. */
#include "analysis/kfit_pageable.h"

#include <math.h>

#include "core/config.h"
#include "sim/kernels.h"

/* Solve rate = h0 / (1 + k u / (1 - u)) for k (0 when the copy kept its rate). */
static double k_at(double h0, double measured, double u)
{
	return measured < h0 ? (h0 / measured - 1) * (1 - u) / u : 0;
}

double zb_kfit_pageable_queue(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *copies)
{
	const zb_link *l = &hw->link;
	double B = hw->cpu.dram_Bps, ks = 0, kw = 0;
	*copies = 0;
	if (!(B > 0) || !(l->pageable_h2d_Bps > 0))
		return 0;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || !x->c.policy.pageable || x->c.policy.link_rate_Bps > 0)
			continue;
		zb_config c = x->c;
		c.hw = *hw;
		double A = zb_exec_adam_Pps(&c, &hw->gpu.exec, zb_config_cpu_threads(&c), 1) * ZB_ADAM_BYTES_PER_PARAM;
		if (!(A > 0))
			continue;
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *t = &x->g.tasks[i];
			double s0 = x->mstart[i], e0 = x->mend[i], d = e0 - s0;
			double f = t->kind == ZB_TASK_COPY ? zb_kfit_overlap(x, ZB_RES_CPU, s0, e0) : 0;
			if (t->kind != ZB_TASK_COPY || t->resource != ZB_RES_H2D || t->bytes < (1 << 20) ||
			    t->step < s->warmup || !(d > l->copy_latency_s) || !isfinite(e0) || f <= 0.5)
				continue;
			if (f > 1)
				f = 1;
			double od = zb_kfit_overlap(x, ZB_RES_D2H, s0, e0);
			if (od > 0.1 && od < 0.9)
				continue;
			int dup = od >= 0.9;
			double h0 = l->pageable_h2d_Bps * (dup ? l->duplex_h2d : 1);
			/* the rate beside Adam, from the copy's mean rate over its time, the part
			 * (1 - f) without Adam at the lone rate */
			double hm = (t->bytes / (d - l->copy_latency_s) - h0 * (1 - f)) / f;
			if (!(hm > 0))
				continue;
			double dd = dup ? l->pageable_d2h_Bps * l->duplex_d2h : 0;
			double left = B - 3 * (dd + hm); /* the staging memcpy reads and writes too */
			double u = ((A < left ? A : left > 0 ? left : 0) + dd) / B;
			if (!(u > 0.05))
				continue;
			if (u > 0.95)
				u = 0.95;
			ks += f * d * k_at(h0, hm, u);
			kw += f * d;
			(*copies)++;
		}
	}
	if (*copies < 3 || !(kw > 0))
		return 0;
	return ks / kw > 10 ? 10 : ks / kw;
}

int zb_kfit_pageable_fit(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, int *copies)
{
	zb_link *l = &hw->link;
	int nh, nd, nq;
	double h = zb_kfit_copy_rate(s, use, ZB_RES_H2D, 1, 0, 1.01, l->copy_latency_s, &nh);
	double d = zb_kfit_copy_rate(s, use, ZB_RES_D2H, 1, 0, 1.01, l->copy_latency_s, &nd);
	if (h > 0)
		l->pageable_h2d_Bps = h;
	if (d > 0)
		l->pageable_d2h_Bps = d;
	double k = hw->gpu.exec.h2d_queue > 0 ? zb_kfit_pageable_queue(s, use, hw, &nq) : 0; /* else unused */
	if (k > 0)
		hw->gpu.exec.pageable_queue = k;
	*copies = (h > 0 ? nh : 0) + (d > 0 ? nd : 0) + (k > 0 ? nq : 0);
	return h > 0 || d > 0 || k > 0;
}
