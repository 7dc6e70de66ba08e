/* hostpass.c - host passes sharing the node's DRAM; see hostpass.h. */
#include "sim/hostpass.h"

#include "sim/numa.h"

double zb_host_pass_s(const zb_task *t, const zb_config *c, double alone_s)
{
	if (t->op != ZB_OP_UNSCALE && t->op != ZB_OP_CAST)
		return alone_s;
	if (!(c->policy.gpus > 1) || !(t->bytes > 0) || !(c->hw.cpu.dram_Bps > 0))
		return alone_s; /* one rank: the fitted rate is its own host's */
	double share = zb_numa_share(c);
	if (!(share < 1))
		return alone_s;
	double s = t->bytes / (c->hw.cpu.dram_Bps * share);
	return s > alone_s ? s : alone_s;
}
