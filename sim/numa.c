/* numa.c - a GPU's share of a multi-socket host; see numa.h. */
#include "sim/numa.h"

static int sockets(const zb_config *c)
{
	return c->hw.cpu.sockets > 1 ? c->hw.cpu.sockets : 1;
}

/* The ranks of a node share its host: gpus_per_cpu, or the run's GPUs
 * per node when more. */
static int gpus_per_cpu(const zb_config *c)
{
	int g = c->hw.gpus_per_cpu > 0 ? c->hw.gpus_per_cpu : 1;
	return c->policy.gpus > g ? c->policy.gpus : g;
}

/* Sockets the optimizer's threads occupy, filled one socket after another. */
static int used_sockets(const zb_config *c)
{
	int s = sockets(c);
	int per_socket = c->hw.cpu.cores / s;
	int t = zb_config_cpu_threads(c);
	if (per_socket < 1)
		return s;
	int u = (t + per_socket - 1) / per_socket;
	return u < 1 ? 1 : (u > s ? s : u);
}

double zb_numa_share(const zb_config *c)
{
	int s = sockets(c), gpc = gpus_per_cpu(c);
	if (gpc >= s)
		return 1.0 / gpc; /* each rank on its own node's share */
	double share = (double)used_sockets(c) / s;
	return share < 1.0 / gpc ? share : 1.0 / gpc;
}

double zb_numa_remote_fraction(const zb_config *c)
{
	if (sockets(c) == 1 || gpus_per_cpu(c) >= sockets(c))
		return 0;
	int u = used_sockets(c);
	return (double)(u - 1) / u; /* pages spread over u nodes */
}

double zb_numa_cap(const zb_config *c, double rate_Bps)
{
	double r = zb_numa_remote_fraction(c);
	double link = c->hw.cpu.xsocket_Bps;
	if (r <= 0 || link <= 0)
		return rate_Bps;
	double cap = 2 * link / r; /* r x rate crosses, half each way */
	return rate_Bps < cap ? rate_Bps : cap;
}
