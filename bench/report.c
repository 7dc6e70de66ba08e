/* report.c - prediction output for people and machines; see report.h. */
#include "bench/report.h"

#include <string.h>

#include "sim/model.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

void zb_config_label(const zb_config *c, char *buf, size_t n)
{
	const zb_policy *p = &c->policy;
	snprintf(buf, n, "%s on %s (%s, %s, %d cores): %s ratio %.2f, micro-batch %d, seq %d, gas %d%s%s%s",
		 c->model.name, c->hw.name, c->hw.link.name, c->hw.gpu.name, c->hw.cpu.cores,
		 zb_policy_name(p->kind), p->kind == ZB_POLICY_NONE ? 0.0 : p->ratio, p->micro_batch, p->seq,
		 p->gas, p->offload_param ? ", offload-param" : "", p->ckpt != ZB_CKPT_NONE ? ", ckpt " : "",
		 p->ckpt != ZB_CKPT_NONE ? zb_ckpt_name(p->ckpt) : "");
}

void zb_print_header(FILE *f, const char *command, const zb_config *c)
{
	char label[512];
	zb_config_label(c, label, sizeof label);
	fprintf(f, "# zbench %s%s%s %s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, command);
	fprintf(f, "# %s\n", label);
	fprintf(f, "# model: %d layers, hidden %d, %d heads (%d kv), ffn %d, vocab %d: %.3f B parameters\n",
		c->model.layers, c->model.hidden, c->model.heads, c->model.kv_heads, c->model.ffn,
		c->model.vocab, zb_model_params(&c->model) / 1e9);
	fprintf(f, "# link %s: %.1f/%.1f GB/s h2d/d2h; gpu %s: %.0f TFLOP/s %s, %.0f GB/s; cpu %s: %d threads, %.0f GB/s DRAM\n",
		c->hw.link.name, c->hw.link.h2d_Bps / 1e9, c->hw.link.d2h_Bps / 1e9, c->hw.gpu.name,
		zb_config_gpu_flops(c) / 1e12, zb_dtype_name(c->policy.dtype), c->hw.gpu.hbm_Bps / 1e9,
		c->hw.cpu.name, zb_config_cpu_threads(c), c->hw.cpu.dram_Bps / 1e9);
}

void zb_memory_print(FILE *f, const zb_memory *m)
{
	fprintf(f, "memory          %10s %10s\n", "gpu", "host");
	fprintf(f, "                %10s %10s\n", "GiB", "GiB");
	fprintf(f, "  parameters    %10.2f %10.2f\n", m->gpu_params / GiB, m->host_params / GiB);
	fprintf(f, "  gradients     %10.2f %10.2f\n", m->gpu_grads / GiB, m->host_grads / GiB);
	fprintf(f, "  optimizer     %10.2f %10.2f\n", m->gpu_optimizer / GiB, m->host_optimizer / GiB);
	fprintf(f, "  activations   %10.2f %10.2f\n", m->gpu_activations / GiB, m->host_activations / GiB);
	fprintf(f, "  workspace     %10.2f %10s\n", m->gpu_workspace / GiB, "-");
	fprintf(f, "  total         %10.2f %10.2f   %s%s\n", m->gpu_bytes / GiB, m->host_bytes / GiB,
		m->fits ? "fits" : "DOES NOT FIT: ", m->fits ? "" : m->reason);
}

void zb_prediction_print(FILE *f, const zb_config *c, const zb_graph *g, const zb_sim_result *r,
			 const zb_memory *mem)
{
	zb_memory_print(f, mem);
	if (!r) {
		fprintf(f, "# not simulated: the configuration does not fit (%s)\n", mem->reason);
		return;
	}
	fprintf(f, "\n%-10s %12s %12s %8s %14s\n", "resource", "busy", "alone", "util", "bytes");
	fprintf(f, "%-10s %12s %12s %8s %14s\n", "", "ms/step", "ms/step", "%", "GB/step");
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		double bytes = res == ZB_RES_D2H || res == ZB_RES_H2D ? g->copy_bytes[res] / 1e9 : 0;
		char b[32] = "-";
		if (bytes > 0)
			snprintf(b, sizeof b, "%.3f", bytes);
		fprintf(f, "%-10s %12.2f %12.2f %8.1f %14s\n", zb_resource_name(res), r->busy_s[res] * 1e3,
			r->work_s[res] * 1e3, r->step_time_s > 0 ? 100 * r->busy_s[res] / r->step_time_s : 0, b);
	}
	fprintf(f, "\nstep time      %10.2f ms\n", r->step_time_s * 1e3);
	fprintf(f, "lower bound    %10.2f ms  (%s alone; step is %.2fx the bound)\n", r->lower_bound_s * 1e3,
		zb_resource_name(r->bound_resource),
		r->lower_bound_s > 0 ? r->step_time_s / r->lower_bound_s : 0);
	fprintf(f, "throughput     %10.0f tokens/s, %.1f TFLOP/s per GPU (model FLOPs)\n", r->tokens_per_s,
		r->tflops_per_gpu);
	fprintf(f, "bottleneck     %10s     (busiest resource)\n", zb_resource_name(r->bottleneck));
	fprintf(f, "# %zu tasks over %d steps, %llu events\n", g->ntasks, g->steps,
		(unsigned long long)r->events);
}

static json_t *per_resource(const double v[ZB_RES_COUNT])
{
	json_t *o = json_object();
	for (int res = 0; res < ZB_RES_COUNT; res++)
		json_object_set_new(o, zb_resource_name(res), json_real(v[res]));
	return o;
}

json_t *zb_prediction_json(const zb_config *c, const zb_graph *g, const zb_sim_result *r,
			   const zb_memory *mem)
{
	json_t *j = json_object();
	json_object_set_new(j, "model", json_string(c->model.name));
	json_object_set_new(j, "hw", json_string(c->hw.name));
	json_object_set_new(j, "pcie", json_string(c->hw.link.name));
	json_object_set_new(j, "gpu", json_string(c->hw.gpu.name));
	json_object_set_new(j, "cpu", json_string(c->hw.cpu.name));
	json_object_set_new(j, "cores", json_integer(c->hw.cpu.cores));
	json_object_set_new(j, "policy", json_string(zb_policy_name(c->policy.kind)));
	json_object_set_new(j, "ratio", json_real(c->policy.kind == ZB_POLICY_NONE ? 0.0 : c->policy.ratio));
	json_object_set_new(j, "micro_batch", json_integer(c->policy.micro_batch));
	json_object_set_new(j, "seq", json_integer(c->policy.seq));
	json_object_set_new(j, "gas", json_integer(c->policy.gas));
	json_object_set_new(j, "params", json_integer(zb_model_params(&c->model)));
	json_t *memj = json_object();
	json_object_set_new(memj, "gpu_bytes", json_real(mem->gpu_bytes));
	json_object_set_new(memj, "host_bytes", json_real(mem->host_bytes));
	json_object_set_new(memj, "fits", json_boolean(mem->fits));
	json_object_set_new(memj, "reason", json_string(mem->reason));
	json_object_set_new(j, "memory", memj);
	json_t *pb = json_object();
	json_object_set_new(pb, "h2d", json_real(g ? g->copy_bytes[ZB_RES_H2D] : 0));
	json_object_set_new(pb, "d2h", json_real(g ? g->copy_bytes[ZB_RES_D2H] : 0));
	json_object_set_new(j, "pcie_bytes", pb);
	if (!r) {
		json_object_set_new(j, "step_time_s", json_null());
		return j;
	}
	json_object_set_new(j, "step_time_s", json_real(r->step_time_s));
	json_object_set_new(j, "tokens_per_s", json_real(r->tokens_per_s));
	json_object_set_new(j, "tflops_per_gpu", json_real(r->tflops_per_gpu));
	json_object_set_new(j, "bottleneck", json_string(zb_resource_name(r->bottleneck)));
	json_object_set_new(j, "lower_bound_s", json_real(r->lower_bound_s));
	json_object_set_new(j, "bound_resource", json_string(zb_resource_name(r->bound_resource)));
	json_object_set_new(j, "busy_s", per_resource(r->busy_s));
	json_object_set_new(j, "work_s", per_resource(r->work_s));
	json_object_set_new(j, "tasks", json_integer((json_int_t)g->ntasks));
	json_object_set_new(j, "events", json_integer((json_int_t)r->events));
	return j;
}

void zb_timeline_print(FILE *f, const zb_graph *g, const double *start, const double *end)
{
	fprintf(f, "%8s %5s %5s %5s %6s %-9s %-11s %-10s %-10s %12s %12s\n", "task", "step", "micro",
		"unit", "bucket", "resource", "op", "pass", "kind", "start", "end");
	fprintf(f, "%8s %5s %5s %5s %6s %-9s %-11s %-10s %-10s %12s %12s\n", "", "", "", "", "", "", "", "",
		"", "ms", "ms");
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		fprintf(f, "%8u %5d %5d %5d %6d %-9s %-11s %-10s %-10s %12.4f %12.4f\n", t->id, t->step, t->micro,
			t->unit, t->bucket, zb_resource_name(t->resource), zb_op_name(t->op), zb_pass_name(t->pass),
			zb_task_kind_name(t->kind), start[i] * 1e3, end[i] * 1e3);
	}
}

int zb_json_print(FILE *f, json_t *j)
{
	int rc = json_dumpf(j, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	fputc('\n', f);
	return rc;
}
