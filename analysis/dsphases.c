/* dsphases.c - phases of a simulated step; see dsphases.h. */
#include "analysis/dsphases.h"

#include <string.h>

/* The end of step s's last task of any kind (optimizer and copies included, unlike
 * the engine's step boundaries, which end at the step's last GPU kernel). */
static double step_end(const zb_graph *g, const double *end, int s)
{
	double e = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		if (g->tasks[i].step == s && end[i] > e)
			e = end[i];
	return e;
}

void zb_ds_phases_of(const zb_graph *g, const zb_sim_result *r, zb_ds_phases *out)
{
	memset(out, 0, sizeof *out);
	if (g->steps < 1 || !r->end || r->ntasks < g->ntasks)
		return;
	int s = g->steps - 1;
	double t0 = s > 0 ? step_end(g, r->end, s - 1) : 0, t3 = step_end(g, r->end, s);
	double fwd = t0, bwd = t0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step != s)
			continue;
		double e = r->end[i];
		if (t->pass == ZB_PASS_FWD && e > fwd)
			fwd = e;
		else if ((t->pass == ZB_PASS_BWD_DATA || t->pass == ZB_PASS_BWD_WEIGHT || t->pass == ZB_PASS_RECOMPUTE) &&
			 e > bwd)
			bwd = e;
	}
	if (fwd > t3)
		fwd = t3;
	if (bwd < fwd)
		bwd = fwd;
	if (bwd > t3)
		bwd = t3;
	out->fwd_s = fwd - t0;
	out->bwd_s = bwd - fwd;
	out->opt_s = t3 - bwd;
}
