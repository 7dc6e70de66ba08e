/* collective.c - ring collectives on the fabric; see collective.h. */
#include "sim/collective.h"

#include "core/graph.h"

int zb_ranks(const zb_config *c)
{
	int r = c->policy.gpus * c->policy.nodes;
	return r > 1 ? r : 1;
}

double zb_collective_bus_Bps(const zb_config *c)
{
	const zb_fabric *f = &c->hw.fabric;
	double bw = f->intra_bus_Bps;
	if (c->policy.nodes > 1) {
		int g = c->policy.gpus > 1 ? c->policy.gpus : 1;
		double net = f->inter_bus_Bps / g; /* the node's network, shared by its GPUs' rings */
		if (c->policy.gpus <= 1 || net < bw)
			bw = net;
	}
	return bw;
}

double zb_collective_step_latency_s(const zb_config *c)
{
	const zb_fabric *f = &c->hw.fabric;
	double lat = c->policy.gpus > 1 ? f->intra_latency_s : 0;
	if (c->policy.nodes > 1 && f->inter_latency_s > lat)
		lat = f->inter_latency_s;
	return lat;
}

double zb_collective_bus_bytes(const zb_config *c, int op, double bytes)
{
	int n = zb_ranks(c);
	double f = (double)(n - 1) / n;
	return (op == ZB_OP_ALL_REDUCE ? 2 * f : f) * bytes;
}

int zb_collective_steps(const zb_config *c, int op)
{
	int n = zb_ranks(c);
	return op == ZB_OP_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

double zb_collective_s(const zb_config *c, int op, double bytes)
{
	double bw = zb_collective_bus_Bps(c);
	double t = zb_collective_steps(c, op) * zb_collective_step_latency_s(c);
	return bw > 0 ? t + zb_collective_bus_bytes(c, op, bytes) / bw : t;
}
