/* predict.c - memory check, schedule, simulation; see predict.h. */
#include "sim/predict.h"

#include <string.h>

#include "schedules/framework.h"

zb_status zb_predict(zb_prediction *p, const zb_config *c, zb_error *err)
{
	memset(p, 0, sizeof *p);
	p->cfg = *c;
	zb_status st = zb_graph_build(&p->graph, c, err);
	if (st)
		return st;
	zb_framework_memory(c, &p->mem);
	if (!p->mem.fits)
		return ZB_OK;
	if ((st = zb_simulate(&p->graph, c, &p->res, err))) {
		zb_graph_free(&p->graph);
		return st;
	}
	p->simulated = 1;
	return ZB_OK;
}

void zb_prediction_free(zb_prediction *p)
{
	if (p->simulated)
		zb_sim_result_free(&p->res);
	zb_graph_free(&p->graph);
	p->simulated = 0;
}
