/* run_json.c - `zbench run --json`; see run_json.h. */
#include "report/run_json.h"

#include <string.h>

#include "report/report.h"
#include "core/attention.h"
#include "profiler/spans.h"

/* keys of zb_prediction_json that are predictions, not configuration */
static const char *const predicted_keys[] = { "step_time_s", "tokens_per_s", "tflops_per_gpu", "bottleneck",
					      "lower_bound_s", "bound_resource", "busy_s", "work_s", "memory",
					      "pcie_bytes", "tasks", "events" };

static double rel(double pred, double meas) { return meas > 0 ? (pred - meas) / meas : 0; }

static int is_attention(int op) { return op == ZB_OP_ATTN || op == ZB_OP_SCORES || op == ZB_OP_CONTEXT || op == ZB_OP_SOFTMAX; }

static json_t *attention_json(const zb_prediction *p, const zb_exec_result *r, int warm)
{
	const zb_graph *g = &p->graph;
	double pred = 0, meas = 0, flops = 0;
	int steps = r->steps_done - warm, tasks = 0;
	for (size_t i = 0; i < g->ntasks && i < r->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (!is_attention(t->op) || t->step < warm || t->step >= r->steps_done || r->start[i] < 0)
			continue;
		pred += p->res.end[i] - p->res.start[i];
		meas += r->end[i] - r->start[i];
		flops += t->flops;
		tasks++;
	}
	json_t *j = json_object();
	if (steps < 1 || tasks == 0)
		return j;
	json_object_set_new(j, "tasks_per_step", json_integer(tasks / steps));
	json_object_set_new(j, "flops_per_step", json_real(flops / steps));
	json_object_set_new(j, "predicted_s_per_step", json_real(pred / steps));
	json_object_set_new(j, "measured_s_per_step", json_real(meas / steps));
	json_object_set_new(j, "measured_tflops", meas > 0 ? json_real(flops / meas / 1e12) : json_null());
	json_object_set_new(j, "predicted_tflops", pred > 0 ? json_real(flops / pred / 1e12) : json_null());
	return j;
}

json_t *zb_run_json(const zb_config *c, const zb_prediction *p, double predicted_step_s,
		    const zb_exec_result *r, json_t *measured, int warm)
{
	json_t *j = zb_prediction_json(c, &p->graph, &p->res, &p->mem);
	json_t *pred = json_object();
	for (size_t i = 0; i < sizeof predicted_keys / sizeof predicted_keys[0]; i++) {
		json_t *v = json_object_get(j, predicted_keys[i]);
		if (v) {
			json_object_set(pred, predicted_keys[i], v);
			json_object_del(j, predicted_keys[i]);
		}
	}
	/* the step over the same window the executor measured (after warm-up) */
	json_object_set_new(pred, "step_time_s", json_real(predicted_step_s));
	json_object_set_new(pred, "schedule_step_time_s", json_real(p->res.step_time_s));
	json_object_set_new(j, "attention", json_string(zb_attention_name(c->policy.attention)));
	json_object_set_new(j, "link_rate_Bps", c->policy.link_rate_Bps > 0 ? json_real(c->policy.link_rate_Bps)
									     : json_null());
	if (c->policy.link_rate_Bps > 0) {
		json_t *link = json_object();
		static const int dirs[2] = { ZB_RES_D2H, ZB_RES_H2D };
		for (int i = 0; i < 2; i++) {
			int res = dirs[i];
			json_t *d = json_object();
			json_object_set_new(d, "native_Bps", json_real(r->link_native_Bps[res == ZB_RES_H2D]));
			/* bytes per step over busy time per step: pacing gaps and latency included */
			double busy = r->busy_s[res], bytes = p->graph.copy_bytes[res];
			json_object_set_new(d, "achieved_Bps", busy > 0 ? json_real(bytes / busy) : json_null());
			json_object_set_new(link, zb_resource_name(res), d);
		}
		json_object_set_new(measured, "link", link);
	}
	json_object_set_new(j, "predicted", pred);
	json_object_set_new(j, "measured", measured);
	json_t *err = json_object(), *busy = json_object();
	json_object_set_new(err, "step_time", json_real(rel(predicted_step_s, r->step_time_s)));
	for (int res = 0; res < ZB_RES_COUNT; res++)
		if (r->busy_s[res] > 0)
			json_object_set_new(busy, zb_resource_name(res), json_real(rel(p->res.busy_s[res], r->busy_s[res])));
	json_object_set_new(err, "busy", busy);
	json_object_set_new(j, "error", err);
	json_object_set_new(j, "attention_tasks", attention_json(p, r, warm));
	return j;
}

json_t *zb_run_measured_json(const zb_exec_result *r)
{
	json_t *j = json_object();
	json_object_set_new(j, "step_time_s", json_real(r->step_time_s));
	json_object_set_new(j, "tokens_per_s", json_real(r->tokens_per_s));
	json_object_set_new(j, "tflops_per_gpu", json_real(r->tflops_per_gpu));
	json_t *busy = json_object();
	for (int res = 0; res < ZB_RES_COUNT; res++)
		json_object_set_new(busy, zb_resource_name(res), json_real(r->busy_s[res]));
	json_object_set_new(j, "busy_s", busy);
	json_t *steps = json_array();
	for (int i = 0; i < r->steps_done; i++)
		json_array_append_new(steps, json_real(r->step_s[i]));
	json_object_set_new(j, "steps_s", steps);
	json_object_set_new(j, "device", json_string(r->device));
	json_object_set_new(j, "cpu_threads", json_integer(r->cpu_threads));
	json_object_set_new(j, "adam_isa", json_string(r->adam_isa ? r->adam_isa : ""));
	json_object_set_new(j, "interrupted", json_boolean(r->interrupted));
	return j;
}

json_t *zb_run_trace_json(const zb_trace *t, const zb_spans *spans)
{
	zb_trace_summary s;
	zb_trace_summarize(t, &s);
	json_t *j = json_object();
	json_object_set_new(j, "kernels", json_integer((json_int_t)s.kernels));
	json_object_set_new(j, "kernel_launches", json_integer((json_int_t)t->launches));
	json_object_set_new(j, "memcpys", json_integer((json_int_t)s.memcpys));
	json_object_set_new(j, "memsets", json_integer((json_int_t)s.memsets));
	json_object_set_new(j, "api_calls", json_integer((json_int_t)s.apis));
	json_object_set_new(j, "syncs", json_integer((json_int_t)s.syncs));
	json_object_set_new(j, "cpu_spans", json_integer((json_int_t)zb_spans_total(spans)));
	json_object_set_new(j, "h2d_bytes", json_real(s.h2d_bytes));
	json_object_set_new(j, "d2h_bytes", json_real(s.d2h_bytes));
	json_object_set_new(j, "tasks_with_gpu_records", json_integer((json_int_t)s.tasks_seen));
	json_object_set_new(j, "mapped_by_tag", json_integer((json_int_t)t->mapped_tag));
	json_object_set_new(j, "mapped_by_time", json_integer((json_int_t)t->mapped_time));
	json_object_set_new(j, "unmapped", json_integer((json_int_t)t->unmapped));
	json_object_set_new(j, "dropped", json_integer((json_int_t)t->dropped));
	json_object_set_new(j, "clock", json_string(t->clock_method));
	return j;
}
