/* kernels.c - the executor profile's task timing; see kernels.h. */
#include "sim/kernels.h"

#include "sim/attention.h"
#include "sim/resources.h"

const zb_exec_profile *zb_exec_profile_for(const zb_config *c, zb_exec_profile *scratch)
{
	return c->framework == ZB_FW_ZBENCH ? zb_exec_profile_of(&c->hw.gpu.exec, scratch) : NULL;
}

static int aligned8(int32_t d) { return d % 8 == 0; }

int zb_exec_gemm_group(const zb_task *t)
{
	if (t->kind != ZB_TASK_GEMM)
		return -1;
	if (t->op == ZB_OP_ATTN)
		return ZB_GEMM_FLASH;
	if (!aligned8(t->m) || !aligned8(t->n) || !aligned8(t->k))
		return ZB_GEMM_UNALIGNED;
	return t->batch > 1 ? ZB_GEMM_BATCHED : ZB_GEMM_DENSE;
}

int zb_exec_pass(const zb_task *t)
{
	return t->pass == ZB_PASS_BWD_DATA ? 1 : t->pass == ZB_PASS_BWD_WEIGHT ? 2 : 0;
}

double zb_exec_unit_s(const zb_task *t, const zb_config *c, double half_dim)
{
	const zb_gpu *gpu = &c->hw.gpu;
	double mem = t->bytes / gpu->hbm_Bps;
	if (t->kind == ZB_TASK_GEMM) { /* bounded by arithmetic or by memory, as resources.c */
		double peak = zb_config_gpu_flops(c), compute;
		if (t->op == ZB_OP_ATTN) {
			compute = t->flops / (peak * zb_flash_efficiency(gpu));
		} else {
			double h = half_dim; /* zb_gemm_efficiency's curve with this half dimension */
			double eff = (t->m / (t->m + h)) * (t->n / (t->n + h)) * (t->k / (t->k + h));
			compute = t->flops / (peak * eff);
		}
		return compute > mem ? compute : mem;
	}
	return mem;
}

void zb_exec_gpu_flow(const zb_task *t, const zb_config *c, const zb_exec_profile *p, double *fixed_s,
		      double *work)
{
	double h = p->gemm_half_dim > 0 ? p->gemm_half_dim : c->hw.gpu.gemm_half_dim;
	double s = zb_exec_unit_s(t, c, h), f = 1;
	int g = zb_exec_gemm_group(t);
	if (g >= 0)
		f = p->gemm[g][zb_exec_pass(t)];
	else if (t->kind == ZB_TASK_GPU_ADAM)
		f = p->gpu_adam;
	else if (t->op < ZB_EXEC_KOPS)
		f = p->kernel[t->op][zb_exec_pass(t) ? 1 : 0];
	*fixed_s = p->launch_s > 0 ? p->launch_s : c->hw.gpu.kernel_latency_s;
	*work = f > 0 ? s / f : s;
}

double zb_exec_adam_Pps(const zb_config *c, const zb_exec_profile *p, double threads, double share)
{
	if (!p || !(p->adam_thread > 0) || !(p->adam_mem > 0))
		return 0;
	const zb_cpu *cpu = &c->hw.cpu;
	double mem = (cpu->adam_Bps > 0 ? cpu->adam_Bps : cpu->dram_Bps) / ZB_ADAM_BYTES_PER_PARAM;
	double per_param = 1 / (threads * p->adam_thread * cpu->adam_params_per_core) + 1 / (p->adam_mem * mem * share);
	return 1 / per_param;
}

double zb_exec_starved(const zb_config *c, const zb_task *const active[ZB_RES_COUNT])
{
	/* the ranks of a node run their Adam at once (they move in lockstep), each on its threads */
	int ranks = c->policy.gpus > 1 ? c->policy.gpus : 1;
	if (c->framework != ZB_FW_ZBENCH || !active[ZB_RES_CPU] || active[ZB_RES_CPU]->kind != ZB_TASK_CPU_ADAM ||
	    zb_config_cpu_threads(c) * ranks < c->hw.cpu.cores)
		return 1;
	zb_exec_profile scratch;
	const zb_exec_profile *p = zb_exec_profile_of(&c->hw.gpu.exec, &scratch);
	return p->starved > 0 && p->starved < 1 ? p->starved : 1;
}

void zb_exec_shares(const zb_config *c, const zb_task *const active[ZB_RES_COUNT], double rate[ZB_RES_COUNT])
{
	if (c->framework != ZB_FW_ZBENCH || !active[ZB_RES_GPU] || !active[ZB_RES_GPU_OPT])
		return;
	const zb_exec_profile *p = zb_exec_profile_of(&c->hw.gpu.exec, NULL);
	if (p->shared_gpu > 0)
		rate[ZB_RES_GPU] = p->shared_gpu;
	if (p->shared_opt > 0)
		rate[ZB_RES_GPU_OPT] = p->shared_opt;
}

double zb_exec_comm_share(const zb_config *c, const zb_task *const active[ZB_RES_COUNT])
{
	if (c->framework != ZB_FW_ZBENCH || !active[ZB_RES_COMM] || (!active[ZB_RES_GPU] && !active[ZB_RES_GPU_OPT]))
		return 1;
	const zb_exec_profile *p = zb_exec_profile_of(&c->hw.gpu.exec, NULL);
	double f = 1;
	if (active[ZB_RES_GPU] && p->comm_gpu > 0 && p->comm_gpu < f)
		f = p->comm_gpu;
	if (active[ZB_RES_GPU_OPT] && p->comm_opt > 0 && p->comm_opt < f)
		f = p->comm_opt;
	return f;
}
