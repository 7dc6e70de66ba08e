/*
 * nccl_fit.c - bus factors and the fit of the ring model (nccl_bench.h). Plain C,
 * tested without a GPU.
 */
#include "exec/nccl_bench.h"

#include <math.h>

#include "core/graph.h"

double zb_nccl_bus_factor(int op, int ranks)
{
	double f = ranks > 1 ? (double)(ranks - 1) / ranks : 0;
	return op == ZB_OP_ALL_REDUCE ? 2 * f : f;
}

int zb_nccl_ring_steps(int op, int ranks)
{
	int s = ranks > 1 ? ranks - 1 : 0;
	return op == ZB_OP_ALL_REDUCE ? 2 * s : s;
}

zb_status zb_nccl_fit(const zb_nccl_point *p, int n, int ranks, double *bus_Bps, double *latency_s,
		      double *rms_rel, zb_error *err)
{
	/* rows (x/t, y/t) . (1/bus, latency) = 1, x = bus bytes, y = ring steps */
	double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
	int used = 0;
	for (int i = 0; i < n; i++) {
		if (!(p[i].time_s > 0))
			continue;
		double x = p[i].bytes * zb_nccl_bus_factor(p[i].op, ranks) / p[i].time_s;
		double y = zb_nccl_ring_steps(p[i].op, ranks) / p[i].time_s;
		a11 += x * x, a12 += x * y, a22 += y * y, b1 += x, b2 += y;
		used++;
	}
	double det = a11 * a22 - a12 * a12;
	if (used < 2 || !(fabs(det) > 0))
		return zb_fail(err, ZB_E_INPUT, "fitting the fabric needs two or more distinct timed sizes (%d given)", used);
	double u = (b1 * a22 - b2 * a12) / det, lat = (a11 * b2 - a12 * b1) / det;
	if (!(u > 0) || !(lat >= 0))
		return zb_fail(err, ZB_E_INPUT, "the fabric fit is not physical (1/bus %g s/B, latency %g s)", u, lat);
	double ss = 0;
	for (int i = 0; i < n; i++) {
		if (!(p[i].time_s > 0))
			continue;
		double model = p[i].bytes * zb_nccl_bus_factor(p[i].op, ranks) * u +
			       zb_nccl_ring_steps(p[i].op, ranks) * lat;
		ss += pow(model / p[i].time_s - 1, 2);
	}
	*bus_Bps = 1 / u;
	*latency_s = lat;
	*rms_rel = sqrt(ss / used);
	return ZB_OK;
}
