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

/* Build and simulate c's schedule into g and r. */
static zb_status simulate(zb_graph *g, zb_sim_result *r, const zb_config *c, zb_error *err)
{
	zb_status st;
	if ((st = zb_graph_build(g, c, err)))
		return st;
	if ((st = zb_simulate(g, c, r, err))) {
		zb_graph_free(g);
		return st;
	}
	if ((st = check_finite(r, err))) {
		zb_sim_result_free(r);
		zb_graph_free(g);
	}
	return st;
}

/* x(k + 2) + n (x(k + 2) - x(k + 1)) */
static double ahead(double x1, double x2, double n) { return x2 + n * (x2 - x1); }

/* The steady micro-step's figures added to the k + 2 simulation (res[2], g2): gas -
 * k - 2 more of them. */
static void extend(zb_sim_result *r, const zb_sim_result res[3], zb_graph *g, const zb_graph *g1, int k,
		   const zb_config *c)
{
	double n = (double)(c->policy.gas - k - 2);
	*r = res[2];
	r->step_time_s = ahead(res[1].step_time_s, res[2].step_time_s, n);
	r->total_s = ahead(res[1].total_s, res[2].total_s, n);
	r->lower_bound_s = 0;
	for (int q = 0; q < ZB_RES_COUNT; q++) {
		r->busy_s[q] = ahead(res[1].busy_s[q], res[2].busy_s[q], n);
		r->work_s[q] = ahead(res[1].work_s[q], res[2].work_s[q], n);
		g->copy_bytes[q] = ahead(g1->copy_bytes[q], g->copy_bytes[q], n);
		if (r->work_s[q] > r->lower_bound_s)
			r->lower_bound_s = r->work_s[q], r->bound_resource = (zb_resource)q;
	}
	r->bottleneck = (zb_resource)0;
	for (int q = 1; q < ZB_RES_COUNT; q++)
		if (r->busy_s[q] > r->busy_s[r->bottleneck])
			r->bottleneck = (zb_resource)q;
	r->events = res[0].events + res[1].events + res[2].events;
	g->tokens_per_step = (double)c->policy.micro_batch * c->policy.seq * c->policy.gas;
	g->model_flops_per_step = zb_model_flops_per_token(&c->model, c->policy.seq) * g->tokens_per_step;
	r->tokens_per_s = r->step_time_s > 0 ? g->tokens_per_step / r->step_time_s : 0;
	r->tflops_per_gpu = r->step_time_s > 0 ? g->model_flops_per_step / r->step_time_s / 1e12 : 0;
	g->micro_simulated = k + 2;
}

/* The shortcut of predict.h for c: 1 in *done when it held (p's graph and result
 * set), 0 when the steady micro-step was not periodic below gas. */
static zb_status long_gas(zb_prediction *p, const zb_config *c, int *done, zb_error *err)
{
	*done = 0;
	for (int k = 3; k + 2 < c->policy.gas; k *= 2) {
		zb_graph g[3];
		zb_sim_result res[3];
		zb_status st = ZB_OK;
		int n = 0;
		for (; n < 3 && !st; n++) {
			zb_config ck = *c;
			ck.policy.gas = k + n;
			st = simulate(&g[n], &res[n], &ck, err);
		}
		if (!st) {
			double d1 = res[1].step_time_s - res[0].step_time_s, d2 = res[2].step_time_s - res[1].step_time_s;
			*done = fabs(d2 - d1) <= ZB_GAS_PERIODIC * res[2].step_time_s;
			if (*done) {
				extend(&p->res, res, &g[2], &g[1], k, c);
				p->graph = g[2];
			}
		}
		for (int i = 0; i < n - (st ? 1 : 0); i++) {
			if (*done && i == 2)
				continue; /* kept: the prediction's graph and timeline */
			zb_sim_result_free(&res[i]);
			zb_graph_free(&g[i]);
		}
		if (st || *done)
			return st;
	}
	return ZB_OK;
}

int zb_predict_shortcut(const zb_config *c)
{
	return c->framework == ZB_FW_DEEPSPEED && c->policy.gas > ZB_GAS_FULL && c->policy.gpus * c->policy.nodes <= 1;
}

static zb_status predict(zb_prediction *p, const zb_config *c, int even_if_too_big, int shortcut, zb_error *err)
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
	int done = 0;
	/* DeepSpeed's schedule on one rank: its micro-steps repeat (zbench's own and several
	 * ranks are simulated whole) */
	if (shortcut && zb_predict_shortcut(c) && (st = long_gas(p, c, &done, err)))
		return st;
	if (!done && (st = simulate(&p->graph, &p->res, c, err)))
		return st;
	p->simulated = 1;
	return ZB_OK;
}

zb_status zb_predict(zb_prediction *p, const zb_config *c, zb_error *err)
{
	return predict(p, c, 0, 1, err);
}

zb_status zb_predict_all_micro(zb_prediction *p, const zb_config *c, zb_error *err)
{
	return predict(p, c, 0, 0, err);
}

zb_status zb_predict_even_if_too_big(zb_prediction *p, const zb_config *c, zb_error *err)
{
	return predict(p, c, 1, 1, err);
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
