/* report.c - prediction output for people and machines; see report.h. */
#include "report/report.h"
#include "common/version.h"

#include "report/ranks.h"
#include "sim/collective.h"

#include <string.h>

#include "core/model.h"
#include "schedules/deepspeed.h"
#include "schedules/framework.h"
#include "sim/predict.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

void zb_config_label(const zb_config *c, char *buf, size_t n)
{
	const zb_policy *p = &c->policy;
	char fw[48] = "";
	if (c->framework == ZB_FW_DEEPSPEED)
		snprintf(fw, sizeof fw, ", deepspeed zero %d", zb_ds_stage(c));
	else if (p->gpus * p->nodes > 1 && (p->zero_stage == 3 || p->offload_param))
		snprintf(fw, sizeof fw, ", zero 3");
	char ranks[64] = ""; /* several GPUs only: one GPU's label as it always was */
	if (p->gpus * p->nodes > 1)
		snprintf(ranks, sizeof ranks, ", %d GPUs x %d node%s", p->gpus, p->nodes, p->nodes == 1 ? "" : "s");
	snprintf(buf, n, "%s on %s (%s, %s, %d cores%s): %s ratio %.2f, micro-batch %d, seq %d, gas %d%s%s%s%s",
		 c->model.name, c->hw.name, c->hw.link.name, c->hw.gpu.name, c->hw.cpu.cores, ranks,
		 zb_policy_name(p->kind), p->kind == ZB_POLICY_NONE ? 0.0 : p->ratio, p->micro_batch, p->seq,
		 p->gas, p->offload_param ? ", offload-param" : "", p->ckpt != ZB_CKPT_NONE ? ", ckpt " : "",
		 p->ckpt != ZB_CKPT_NONE ? zb_ckpt_name(p->ckpt) : "", fw);
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
	char profile[160];
	zb_config_profile(c, profile, sizeof profile);
	if (c->framework == ZB_FW_DEEPSPEED)
		fprintf(f, "# schedule: DeepSpeed's (ZeRO-%d offload as DeepSpeed 0.19 runs it: what its users get); "
			   "profile %s\n", zb_ds_stage(c), profile);
	else
		fprintf(f, "# schedule: ZBENCH'S OWN (the ideal its executor runs, not DeepSpeed's: --framework deepspeed "
			   "for that); profile %s\n", profile);
	if (c->hw.cpu.hypothetical)
		fprintf(f, "# cpu %s*: HYPOTHETICAL, %d cores, more than the part has (--hypothetical-cpu); its memory "
			   "channels as the part's\n", c->hw.cpu.name, c->hw.cpu.cores);
	if (c->policy.gpus * c->policy.nodes > 1)
		fprintf(f, "# fabric %s: %.0f GB/s NCCL busbw within a node, %.0f GB/s per node between nodes; ring busbw %.0f GB/s\n",
			c->hw.fabric.name[0] ? c->hw.fabric.name : "(unnamed)", c->hw.fabric.intra_bus_Bps / 1e9,
			c->hw.fabric.inter_bus_Bps / 1e9, zb_collective_bus_Bps(c) / 1e9);
	if (c->framework == ZB_FW_DEEPSPEED) {
		zb_ds_profile scratch;
		const zb_ds_profile *d = zb_ds_profile_of(&c->hw.ds, &scratch);
		fprintf(f, "# deepspeed profile (%s): gpu_eff %.3g, step %.3g ms, hook %.3g ms/module, grad hook %.3g "
			   "ms/tensor, sub-group %.3g ms, cpu adam x%.3g, pageable h2d %.1f GB/s, cast %.0f GB/s, "
			   "fresh pages %.1f GB/s, unscale %.0f GB/s, torch adam %.0f B/param, %s attention\n",
			c->hw.ds.set ? "the hardware file's" : "defaults", d->gpu_eff, d->step_s * 1e3, d->hook_s * 1e3,
			d->grad_hook_s * 1e3, d->subgroup_s * 1e3, d->cpu_adam_rel, d->pageable_h2d_Bps / 1e9,
			d->cast_Bps / 1e9, d->fresh_Bps / 1e9, d->unscale_Bps / 1e9, d->torch_adam_Bpp, d->flash ? "flash" : "eager");
	}
}

void zb_ds_ignored_print(FILE *f, const zb_ds_config *ds)
{
	if (ds->nignored)
		fprintf(f, "zbench: warning: %s: %d key%s not modelled, ignored: %s\n", ds->path, ds->nignored,
			ds->nignored == 1 ? "" : "s", ds->ignored);
}

/* ---- where the settings came from ----------------------------------------------- */

static void setting_value(const zb_config *c, zb_setting k, char *buf, size_t n)
{
	const zb_model *m = &c->model;
	const zb_policy *p = &c->policy;
	switch (k) {
	case ZB_SET_HW: snprintf(buf, n, "%s", c->hw.name); break;
	case ZB_SET_PCIE: snprintf(buf, n, "%s", c->hw.link.name); break;
	case ZB_SET_GPU: snprintf(buf, n, "%s", c->hw.gpu.name); break;
	case ZB_SET_CPU: snprintf(buf, n, "%s", c->hw.cpu.name); break;
	case ZB_SET_CORES: snprintf(buf, n, "%d", c->hw.cpu.cores); break;
	case ZB_SET_MODEL: snprintf(buf, n, "%s", m->name); break;
	case ZB_SET_LAYERS: snprintf(buf, n, "%d", m->layers); break;
	case ZB_SET_HIDDEN: snprintf(buf, n, "%d", m->hidden); break;
	case ZB_SET_HEADS: snprintf(buf, n, "%d", m->heads); break;
	case ZB_SET_KV_HEADS: snprintf(buf, n, "%d", m->kv_heads); break;
	case ZB_SET_FFN: snprintf(buf, n, "%d%s", m->ffn, m->gated_mlp ? " (gated)" : ""); break;
	case ZB_SET_VOCAB: snprintf(buf, n, "%d", m->vocab); break;
	case ZB_SET_TIED: snprintf(buf, n, "%s", m->tied_embeddings ? "yes" : "no"); break;
	case ZB_SET_POLICY: snprintf(buf, n, "%s", zb_policy_name(p->kind)); break;
	case ZB_SET_RATIO: snprintf(buf, n, "%.4g", p->ratio); break;
	case ZB_SET_OFFLOAD_PARAM: snprintf(buf, n, "%s", p->offload_param ? "yes" : "no"); break;
	case ZB_SET_PREFETCH: snprintf(buf, n, "%d", p->prefetch_layers); break;
	case ZB_SET_CKPT: snprintf(buf, n, "%s", zb_ckpt_name(p->ckpt)); break;
	case ZB_SET_MICRO_BATCH: snprintf(buf, n, "%d", p->micro_batch); break;
	case ZB_SET_GAS: snprintf(buf, n, "%d", p->gas); break;
	case ZB_SET_SEQ: snprintf(buf, n, "%d", p->seq); break;
	case ZB_SET_DTYPE: snprintf(buf, n, "%s", zb_dtype_name(p->dtype)); break;
	case ZB_SET_PAGEABLE: snprintf(buf, n, "%s", p->pageable ? "yes" : "no"); break;
	case ZB_SET_BUCKET: snprintf(buf, n, "%lld", (long long)p->bucket_params); break;
	case ZB_SET_THREADS: snprintf(buf, n, "%d", zb_config_cpu_threads(c)); break;
	case ZB_SET_STEPS: snprintf(buf, n, "%d", c->steps); break;
	case ZB_SET_FRAMEWORK: snprintf(buf, n, "%s", zb_framework_name(c->framework)); break;
	case ZB_SET_ZERO_STAGE: snprintf(buf, n, "%d", zb_ds_stage(c)); break;
	case ZB_SET_SUB_GROUP: snprintf(buf, n, "%lld", (long long)zb_ds_sub_group(c)); break;
	default: snprintf(buf, n, "?"); break;
	}
}

void zb_sources_print(FILE *f, const zb_config *c, const zb_sources *s, int files_only)
{
	if (files_only && !s->ds && !s->hf)
		return;
	fprintf(f, "# inputs%s (explicit flags override the files):\n", files_only ? " from the files" : "");
	fprintf(f, "#   %-16s %-16s %-10s %s\n", "setting", "value", "from", "how");
	for (int k = 0; k < ZB_SET_COUNT; k++) {
		if (files_only && s->from[k] != ZB_SRC_DS && s->from[k] != ZB_SRC_HF)
			continue;
		char val[64];
		setting_value(c, (zb_setting)k, val, sizeof val);
		fprintf(f, "#   %-16s %-16s %-10s %s\n", zb_setting_name((zb_setting)k), val, zb_source_name(s->from[k]),
			s->detail[k]);
	}
	if (s->ds) {
		const zb_ds_plan *p = &s->plan;
		fprintf(f, "# deepspeed %s: ZeRO stage %d, optimizer %s", s->ds_path, p->stage,
			p->offload_optimizer ? "offloaded to the CPU" : "on the GPU");
		if (p->batch[0])
			fprintf(f, ", %s", p->batch);
		if (p->precision[0])
			fprintf(f, ", %s", p->precision);
		if (s->twinflow && s->ratio_asked > 0 && s->ratio_asked < 1)
			fprintf(f, ", Twin-Flow %d of %d sub-groups on the CPU: ratio %.4f (asked %g)",
				s->split.cpu_sub_groups, s->split.sub_groups, s->split.ratio, s->ratio_asked);
		if (p->stage == 3)
			fprintf(f, ", %.3f%% of the parameters at most stage3_param_persistence_threshold %lld (kept on "
				   "the GPU, never fetched)",
				100.0 * (double)p->persistent_params / (double)zb_model_params(&c->model),
				(long long)p->persistence_threshold);
		if (s->ds_ignored)
			fprintf(f, ", %d key%s not modelled (see the warning)", s->ds_ignored, s->ds_ignored == 1 ? "" : "s");
		fprintf(f, "\n");
		if (s->ds_note[0])
			fprintf(f, "# deepspeed %s: %s\n", s->ds_path, s->ds_note);
	}
	if (s->hf) {
		fprintf(f, "# hugging face %s: model_type %s", s->hf_path, s->hf_model_type);
		if (s->hf_max_positions > 0)
			fprintf(f, ", sequences up to %d tokens", s->hf_max_positions);
		if (s->hf_notes[0])
			fprintf(f, "; %s", s->hf_notes);
		fprintf(f, "\n");
	}
}

void zb_sources_json(json_t *j, const zb_config *c, const zb_sources *s)
{
	json_t *src = json_object();
	for (int k = 0; k < ZB_SET_COUNT; k++) {
		json_t *e = json_object();
		json_object_set_new(e, "from", json_string(zb_source_name(s->from[k])));
		json_object_set_new(e, "detail", json_string(s->detail[k]));
		json_object_set_new(src, zb_setting_name((zb_setting)k), e);
	}
	json_object_set_new(j, "sources", src);
	if (s->ds) {
		const zb_ds_plan *p = &s->plan;
		json_t *d = json_object();
		json_object_set_new(d, "file", json_string(s->ds_path));
		json_object_set_new(d, "stage", json_integer(p->stage));
		json_object_set_new(d, "offload_optimizer", json_boolean(p->offload_optimizer));
		json_object_set_new(d, "train_batch_size", json_integer((json_int_t)p->train_batch));
		json_object_set_new(d, "precision", json_string(p->precision));
		json_object_set_new(d, "sub_group_size", json_integer((json_int_t)p->sub_group_size));
		json_object_set_new(d, "prefetch_bucket_elements", json_integer((json_int_t)p->prefetch_elements));
		json_object_set_new(d, "param_persistence_threshold", json_integer((json_int_t)p->persistence_threshold));
		json_object_set_new(d, "persistent_params", json_integer((json_int_t)p->persistent_params));
		json_object_set_new(d, "keys_not_modelled", json_integer(s->ds_ignored));
		if (s->twinflow) {
			json_t *t = json_object();
			json_object_set_new(t, "requested_ratio", json_real(s->ratio_asked));
			json_object_set_new(t, "effective_ratio", json_real(s->split.ratio));
			json_object_set_new(t, "sub_groups", json_integer(s->split.sub_groups));
			json_object_set_new(t, "cpu_sub_groups", json_integer(s->split.cpu_sub_groups));
			json_object_set_new(t, "cpu_params", json_integer((json_int_t)s->split.cpu_params));
			json_object_set_new(d, "twinflow", t);
		}
		json_object_set_new(j, "deepspeed", d);
	}
	if (s->hf) {
		json_t *h = json_object();
		json_object_set_new(h, "file", json_string(s->hf_path));
		json_object_set_new(h, "model_type", json_string(s->hf_model_type));
		json_object_set_new(h, "max_position_embeddings", json_integer(s->hf_max_positions));
		json_object_set_new(h, "notes", json_string(s->hf_notes));
		json_object_set_new(j, "hf_config", h);
	}
	(void)c;
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
	if (m->host_process > 0) /* framework schedules: the process and its model construction */
		fprintf(f, "  process       %10s %10.2f\n", "-", m->host_process / GiB);
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
		if (res == ZB_RES_COMM && g->ranks <= 1)
			continue; /* one GPU: no collectives (and the table it always had) */
		double bytes = res == ZB_RES_D2H || res == ZB_RES_H2D ? g->copy_bytes[res] / 1e9 : 0;
		if (res == ZB_RES_COMM) { /* the collectives' buffers per step (each rank sends (n-1)/n of them) */
			for (size_t i = 0; i < g->ntasks; i++)
				if (g->tasks[i].resource == ZB_RES_COMM)
					bytes += g->tasks[i].bytes;
			bytes /= 1e9 * (g->steps > 0 ? g->steps : 1);
		}
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
	if (g->ranks > 1)
		zb_ranks_print(f, c, g, r);
	fprintf(f, "# %zu tasks over %d steps, %llu events\n", g->ntasks, g->steps,
		(unsigned long long)r->events);
	if (g->micro_simulated > 0)
		fprintf(f, "# %d of the %d micro-steps of each step simulated; the other %d each add the steady "
			   "micro-step's time (periodic to %g of the step)\n",
			g->micro_simulated, c->policy.gas, c->policy.gas - g->micro_simulated, ZB_GAS_PERIODIC);
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
	json_object_set_new(j, "framework", json_string(zb_framework_name(c->framework)));
	json_object_set_new(j, "ratio", json_real(c->policy.kind == ZB_POLICY_NONE ? 0.0 : c->policy.ratio));
	json_object_set_new(j, "micro_batch", json_integer(c->policy.micro_batch));
	json_object_set_new(j, "seq", json_integer(c->policy.seq));
	json_object_set_new(j, "gas", json_integer(c->policy.gas));
	json_object_set_new(j, "ckpt", json_string(zb_ckpt_name(c->policy.ckpt)));
	json_object_set_new(j, "dtype", json_string(zb_dtype_name(c->policy.dtype)));
	if (c->framework == ZB_FW_DEEPSPEED) {
		json_object_set_new(j, "zero_stage", json_integer(zb_ds_stage(c)));
		json_object_set_new(j, "sub_group", json_integer((json_int_t)zb_ds_sub_group(c)));
	}
	char profile[160];
	zb_config_profile(c, profile, sizeof profile);
	json_object_set_new(j, "profile", json_string(profile));
	json_object_set_new(j, "hypothetical_cpu", json_boolean(c->hw.cpu.hypothetical));
	json_object_set_new(j, "params", json_integer(zb_model_params(&c->model)));
	json_t *memj = json_object();
	json_object_set_new(memj, "gpu_bytes", json_real(mem->gpu_bytes));
	json_object_set_new(memj, "gpu_capacity_bytes", json_real(c->hw.gpu.mem_bytes));
	json_object_set_new(memj, "host_bytes", json_real(mem->host_bytes));
	json_object_set_new(memj, "host_capacity_bytes", json_real(c->hw.cpu.mem_bytes));
	json_object_set_new(memj, "fits", json_boolean(mem->fits));
	json_object_set_new(memj, "reason", json_string(mem->reason));
	json_object_set_new(j, "memory", memj);
	json_t *pb = json_object();
	/* a configuration that does not fit has no schedule: its copies are unknown */
	json_object_set_new(pb, "h2d", g && g->ntasks ? json_real(g->copy_bytes[ZB_RES_H2D]) : json_null());
	json_object_set_new(pb, "d2h", g && g->ntasks ? json_real(g->copy_bytes[ZB_RES_D2H]) : json_null());
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
	if (g->micro_simulated > 0)
		json_object_set_new(j, "micro_steps_simulated", json_integer(g->micro_simulated));
	if (g->ranks > 1)
		json_object_set_new(j, "ranks", zb_ranks_json(c, g, r));
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
