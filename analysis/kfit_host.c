/* kfit_host.c - a profile's host scaled to another host's measurements; see kfit_host.h. */
#include "analysis/kfit_host.h"

#include <math.h>
#include <stdlib.h>

#include "analysis/kfit_eval.h"
#include "analysis/kfit_pageable.h"

void zb_kfit_host_apply(zb_hw *hw, double cpu, double mem)
{
	hw->cpu.adam_params_per_core *= cpu;
	hw->cpu.dram_Bps *= mem;
	hw->cpu.adam_Bps *= mem;
}

/* The step-time MAPE of s on base scaled by cpu x mem (NaN when nothing simulates). */
static zb_status mape_at(const zb_kfit_set *s, const zb_hw *base, double cpu, double mem, zb_kfit_pred *p,
			 double *mape, int *n, zb_error *err)
{
	zb_hw hw = *base;
	zb_kfit_host_apply(&hw, cpu, mem);
	zb_status st = zb_kfit_predict(s, &hw, p, err);
	if (st)
		return st;
	zb_kfit_summary m;
	zb_kfit_summarize(s, p, &m);
	*mape = m.n ? m.mape : NAN;
	*n = m.n;
	return ZB_OK;
}

/* The best point of the grid lo..hi by step on both scales, from *cpu, *mem (kept when
 * nothing beats them). */
static zb_status grid(const zb_kfit_set *s, const zb_hw *base, double lo_c, double lo_m, double hi_c, double hi_m,
		      double step, zb_kfit_pred *p, zb_kfit_host *h, zb_error *err)
{
	for (double c = lo_c; c <= hi_c + 1e-9; c += step)
		for (double m = lo_m; m <= hi_m + 1e-9; m += step) {
			double e;
			int n;
			zb_status st = mape_at(s, base, c, m, p, &e, &n, err);
			if (st)
				return st;
			if (e < h->mape - 1e-9) /* false for NaN */
				h->mape = e, h->cpu = c, h->mem = m;
		}
	return ZB_OK;
}

/* The items of s that keep(s, k, ctx) says, a view sharing s's items (free its it only). */
static zb_kfit_set view_of(const zb_kfit_set *s, int (*keep)(const zb_kfit_set *, int, const void *), const void *ctx)
{
	zb_kfit_set v = *s;
	v.it = zb_xcalloc((size_t)(s->n ? s->n : 1), sizeof *v.it);
	v.n = 0;
	for (int k = 0; k < s->n; k++)
		if (keep(s, k, ctx))
			v.it[v.n++] = s->it[k];
	return v;
}

static int pinned(const zb_kfit_set *s, int k, const void *ctx)
{
	(void)ctx;
	return !s->it[k].c.policy.pageable;
}

/* s without its pageable configurations (a view); *pageable gets how many were left out. */
static zb_kfit_set without_pageable(const zb_kfit_set *s, int *pageable)
{
	zb_kfit_set v = view_of(s, pinned, NULL);
	*pageable = s->n - v.n;
	return v;
}

zb_status zb_kfit_host_fit(const zb_kfit_set *s, const zb_hw *base, zb_hw *out, zb_kfit_host *h, zb_error *err)
{
	int pageable;
	zb_kfit_set core = without_pageable(s, &pageable);
	zb_kfit_pred *p = zb_xcalloc((size_t)(s->n ? s->n : 1), sizeof *p);
	*h = (zb_kfit_host){ .cpu = 1, .mem = 1 };
	zb_status st = mape_at(&core, base, 1, 1, p, &h->mape_before, &h->configs, err);
	if (!st && !(h->mape_before >= 0))
		st = zb_fail(err, ZB_E_INPUT, "no measured configuration of the run (pinned copies) simulates on the base");
	h->mape = h->mape_before;
	if (!st)
		st = grid(&core, base, 0.70, 0.70, 1.42, 1.42, 0.06, p, h, err);
	if (!st)
		st = grid(&core, base, h->cpu - 0.06, h->mem - 0.06, h->cpu + 0.06, h->mem + 0.06, 0.02, p, h, err);
	free(p);
	free(core.it);
	if (st)
		return st;
	*out = *base;
	zb_kfit_host_apply(out, h->cpu, h->mem);
	/* the pageable copies from their own tasks, on the moved host (its DRAM budget) */
	if (pageable && zb_kfit_pageable_fit(s, NULL, out, &h->pageable_copies))
		h->pageable = pageable;
	return ZB_OK;
}

/* Which half an item is in, for zb_kfit_host_half_out: by its configuration. */
typedef struct half_ctx {
	const int *point;
	int half;
} half_ctx;

static int in_half(const zb_kfit_set *s, int k, const void *ctx)
{
	(void)s;
	const half_ctx *h = ctx;
	return h->point[k] % 2 == h->half;
}

zb_status zb_kfit_host_half_out(const zb_kfit_set *s, const zb_hw *base, zb_kfit_pred *px, zb_error *err)
{
	int *point = zb_xmalloc(sizeof(int) * (size_t)(s->n ? s->n : 1));
	int npoints = zb_kfit_points(s, point); /* the rounds of a configuration stay on one side */
	zb_kfit_pred *p = zb_xcalloc((size_t)(s->n ? s->n : 1), sizeof *p);
	zb_status st = npoints < 4 ? zb_fail(err, ZB_E_INPUT, "half-out needs 4 configurations or more (%d)", npoints)
				   : ZB_OK;
	for (int half = 0; half < 2 && !st; half++) {
		half_ctx other = { point, !half };
		zb_kfit_set fit_on = view_of(s, in_half, &other);
		zb_hw moved;
		zb_kfit_host h;
		st = zb_kfit_host_fit(&fit_on, base, &moved, &h, err);
		free(fit_on.it);
		if (!st)
			st = zb_kfit_predict(s, &moved, p, err);
		for (int k = 0; k < s->n && !st; k++)
			if (point[k] % 2 == half)
				px[k] = p[k];
	}
	free(p);
	free(point);
	return st;
}
