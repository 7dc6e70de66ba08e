/* predict.c - memory check, schedule, simulation; see predict.h. */
#include "sim/predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "schedules/framework.h"

/* A configuration that does not fit is never simulated, so its schedule is not
 * built either (a model of 10 000 layers would take seconds and gigabytes only to
 * be refused): the graph holds the summary figures, no tasks. */
static void graph_summary(zb_graph *g, const zb_config *c)
{
	memset(g, 0, sizeof *g);
	g->steps = c->steps;
	g->params = zb_model_params(&c->model);
	double r = c->policy.kind == ZB_POLICY_NONE ? 0.0 : c->policy.ratio;
	g->cpu_params = (int64_t)llround(r * (double)g->params);
	g->grad_bytes_per_param = 2;
	g->tokens_per_step = (double)c->policy.micro_batch * c->policy.seq * c->policy.gas;
	g->model_flops_per_step = zb_model_flops_per_token(&c->model, c->policy.seq) * g->tokens_per_step;
}

/* Every figure a prediction reports must be a number: a NaN or inf here is a bug
 * or an input the range checks missed, never data. */
static zb_status check_finite(const zb_sim_result *r, zb_error *err)
{
	const double v[] = { r->total_s, r->step_time_s, r->tokens_per_s, r->tflops_per_gpu, r->lower_bound_s };
	const char *name[] = { "total time", "step time", "tokens/s", "TFLOP/s", "lower bound" };
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (!isfinite(v[i]))
			return zb_fail(err, ZB_E_INTERNAL, "the simulation gave a %s of %g (not a number): not reported",
				       name[i], v[i]);
	for (int res = 0; res < ZB_RES_COUNT; res++)
		if (!isfinite(r->busy_s[res]) || !isfinite(r->work_s[res]))
			return zb_fail(err, ZB_E_INTERNAL, "the simulation gave %s busy %g s, alone %g s: not reported",
				       zb_resource_name(res), r->busy_s[res], r->work_s[res]);
	return ZB_OK;
}

static zb_status predict(zb_prediction *p, const zb_config *c, int even_if_too_big, zb_error *err)
{
	memset(p, 0, sizeof *p);
	p->cfg = *c;
	zb_status st = zb_config_validate(c, err);
	if (st)
		return st;
	zb_framework_memory(c, &p->mem);
	if (!p->mem.fits && !even_if_too_big) {
		graph_summary(&p->graph, c);
		return ZB_OK;
	}
	if ((st = zb_graph_build(&p->graph, c, err)))
		return st;
	if ((st = zb_simulate(&p->graph, c, &p->res, err))) {
		zb_graph_free(&p->graph);
		return st;
	}
	if ((st = check_finite(&p->res, err))) {
		zb_sim_result_free(&p->res);
		zb_graph_free(&p->graph);
		return st;
	}
	p->simulated = 1;
	return ZB_OK;
}

zb_status zb_predict(zb_prediction *p, const zb_config *c, zb_error *err)
{
	return predict(p, c, 0, err);
}

zb_status zb_predict_even_if_too_big(zb_prediction *p, const zb_config *c, zb_error *err)
{
	return predict(p, c, 1, err);
}

zb_status zb_predict_warmup(const zb_config *c, int *warmup, int *settle, zb_error *err)
{
	zb_config long_run = *c;
	if (long_run.steps < ZB_SETTLE_STEPS)
		long_run.steps = ZB_SETTLE_STEPS;
	zb_prediction p;
	zb_status st = zb_predict(&p, &long_run, err);
	if (st)
		return st;
	*settle = p.simulated ? zb_settle_step(&p.graph, p.res.end, ZB_SETTLE_TOL) : 0;
	*warmup = *settle - 1 > 2 ? *settle - 1 : 2;
	zb_prediction_free(&p);
	return ZB_OK;
}

void zb_prediction_free(zb_prediction *p)
{
	if (p->simulated)
		zb_sim_result_free(&p->res);
	zb_graph_free(&p->graph);
	p->simulated = 0;
}

void zb_prediction_drop_schedule(zb_prediction *p)
{
	free(p->graph.tasks);
	free(p->graph.deps);
	p->graph.tasks = NULL;
	p->graph.deps = NULL;
	p->graph.cap_tasks = p->graph.cap_deps = 0;
	if (p->simulated)
		zb_sim_result_free(&p->res);
}
