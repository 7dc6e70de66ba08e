/* numa.c - a GPU's share of a multi-socket host; see numa.h. */
#include "sim/numa.h"

static int sockets(const zb_config *c)
{
	return c->hw.cpu.sockets > 1 ? c->hw.cpu.sockets : 1;
}

double zb_numa_share(const zb_config *c)
{
	int gpc = c->hw.gpus_per_cpu > 0 ? c->hw.gpus_per_cpu : 1;
	int s = sockets(c);
	return 1.0 / (gpc > s ? gpc : s);
}

double zb_numa_remote_fraction(const zb_config *c)
{
	int s = sockets(c);
	int gpc = c->hw.gpus_per_cpu > 0 ? c->hw.gpus_per_cpu : 1;
	if (s == 1 || gpc >= s)
		return 0; /* each rank's cores sit on its own node */
	int per_socket = c->hw.cpu.cores / s;
	int t = zb_config_cpu_threads(c);
	if (per_socket < 1 || t <= per_socket)
		return 0;
	return (double)(t - per_socket) / t;
}

double zb_numa_cap(const zb_config *c, double rate_Bps)
{
	double r = zb_numa_remote_fraction(c);
	double link = c->hw.cpu.xsocket_Bps;
	if (r <= 0 || link <= 0)
		return rate_Bps;
	double cap = link / r; /* r x rate crosses the link */
	return rate_Bps < cap ? rate_Bps : cap;
}
