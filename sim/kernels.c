/* kernels.c - the executor profile's task timing; see kernels.h. */
#include "sim/kernels.h"

#include "core/attention.h"
#include "sim/numa.h"
#include "sim/resources.h"

#include <math.h>

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

int zb_exec_kernel_class(const zb_task *t)
{
	int bwd = zb_exec_pass(t) != 0;
	switch (t->op) {
	case ZB_OP_SOFTMAX: return bwd ? ZB_KERN_SOFTMAX_BWD : ZB_KERN_SOFTMAX_FWD;
	case ZB_OP_EMBED: return bwd ? ZB_KERN_EMBED_BWD : ZB_KERN_EMBED_FWD;
	case ZB_OP_LOSS: return ZB_KERN_LOSS;
	default: return ZB_KERN_STREAM;
	}
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

int zb_exec_launches(const zb_task *t, const zb_config *c)
{
	int bias = c->model.bias != 0, bwd = zb_exec_pass(t) != 0;
	if (t->kind == ZB_TASK_GEMM)
		return t->op == ZB_OP_ATTN && bwd ? 4 : 1; /* flash backward: zero dQ, dot, kernel, cast */
	if (t->kind != ZB_TASK_KERNEL)
		return 1;
	switch (t->op) {
	case ZB_OP_NORM1:
	case ZB_OP_NORM2:
	case ZB_OP_NORMF: /* backward: zero the weight gradients, their kernel, dx, a cast of each */
		return bwd ? 4 + bias : 1;
	case ZB_OP_LOSS: /* cross-entropy, then the mean of the losses */
		return 2;
	case ZB_OP_EMBED: /* backward: zero wte's gradient unless the tied head wrote it */
		return bwd && !c->model.tied_embeddings ? 2 : 1;
	case ZB_OP_GRAD_ACC: /* the last micro-batch also casts the sum and zeroes it */
		return t->micro == c->policy.gas - 1 ? 3 : 1;
	default:
		return 1;
	}
}

void zb_exec_gpu_flow(const zb_task *t, const zb_config *c, const zb_exec_profile *p, double *fixed_s,
		      double *work)
{
	double s = zb_exec_unit_s(t, c, c->hw.gpu.gemm_half_dim), f = 1;
	int g = zb_exec_gemm_group(t);
	if (g >= 0)
		f = p->gemm[g];
	else if (t->kind == ZB_TASK_GPU_ADAM)
		f = p->gpu_adam;
	else
		f = p->kernel[zb_exec_kernel_class(t)];
	double launch = p->launch_s > 0 ? p->launch_s : c->hw.gpu.kernel_latency_s;
	/* the engine keeps one fixed cost per resource (the first launch); a task's further
	 * launches are seconds of its work, with a profile (the plain model: one a task) */
	*fixed_s = launch;
	*work = (f > 0 ? s / f : s) + (p->set ? zb_exec_launches(t, c) - 1 : 0) * launch;
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

/* Whether zbench's executor runs CPU Adam with a thread on every core of the node: the ranks
 * of a node run their Adam at once (they move in lockstep), each on its threads. */
static int adam_on_every_core(const zb_config *c)
{
	int ranks = c->policy.gpus > 1 ? c->policy.gpus : 1;
	return c->framework == ZB_FW_ZBENCH && zb_config_cpu_threads(c) * ranks >= c->hw.cpu.cores;
}

static int adam_running(const zb_task *const active[ZB_RES_COUNT])
{
	return active[ZB_RES_CPU] && active[ZB_RES_CPU]->kind == ZB_TASK_CPU_ADAM;
}

double zb_exec_starved(const zb_config *c, const zb_task *const active[ZB_RES_COUNT])
{
	if (!adam_on_every_core(c) || !adam_running(active))
		return 1;
	const zb_exec_profile *p = zb_exec_profile_of(&c->hw.gpu.exec, NULL);
	return p->starved > 0 && p->starved < 1 ? p->starved : 1;
}

double zb_exec_adam_launch(const zb_config *c, const zb_task *const active[ZB_RES_COUNT])
{
	if (!adam_on_every_core(c) || !active[ZB_RES_GPU] || !adam_running(active) || c->hw.cpu.cores < 2 ||
	    !zb_exec_profile_of(&c->hw.gpu.exec, NULL)->set) /* the executor's: with its profile */
		return 1;
	/* each rank's launch thread takes one core of the node's from Adam's pinned pool */
	int ranks = c->policy.gpus > 1 ? c->policy.gpus : 1;
	double lost = (double)ranks / c->hw.cpu.cores;
	return lost < 1 ? 1 - lost : 1;
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

/* The H2D rate at DRAM utilization u of the others (Adam and D2H). */
static double h2d_queued(double h0, double k, double u)
{
	if (u > 0.95) /* the queue's wait grows without bound; the measured floor is ~0.55 x */
		u = 0.95;
	return h0 / (1 + k * u / (1 - u));
}

int zb_exec_dram(const zb_config *c, int adam, const zb_task *const active[ZB_RES_COUNT], double rate[ZB_RES_COUNT])
{
	if (c->framework != ZB_FW_ZBENCH)
		return 0;
	const zb_exec_profile *p = zb_exec_profile_of(&c->hw.gpu.exec, NULL);
	if (!(p->h2d_queue > 0))
		return 0;
	/* a pageable copy also costs the driver's staging memcpy, a read and a write, on
	 * top of the DMA (as resources.c); measured there: pageable D2H 12.6 GB/s with and
	 * without Adam, pageable H2D 7.2 alone and 4.0-4.9 under Adam on 8 threads */
	double x = c->policy.pageable ? 3 : 1, B = c->hw.cpu.dram_Bps * zb_numa_share(c);
	double d = active[ZB_RES_D2H] ? rate[ZB_RES_D2H] : 0, a = adam ? rate[ZB_RES_CPU] : 0;
	double h0 = active[ZB_RES_H2D] ? rate[ZB_RES_H2D] : 0, h = h0;
	/* a pageable upload's staging memcpy queues longer than DMA reads (execprofile.h) */
	double k = c->policy.pageable && p->pageable_queue > 0 ? p->pageable_queue : p->h2d_queue;
	if (h0 > 0 && !(c->policy.link_rate_Bps > 0)) {
		/* h and Adam's share depend on each other: a damped fixed point (the map's
		 * slope is k u' / ... < 1 at every measured point; 40 halvings reach 1e-12) */
		for (int i = 0; i < 60; i++) {
			double left = B - x * (d + h), got = a < left ? a : left > 0 ? left : 0;
			double hn = h2d_queued(h0, k, (got + d) / B);
			if (fabs(hn - h) <= 1e-9 * h0)
				break;
			h = 0.5 * (h + hn);
		}
	}
	if (x * (d + h) > B) { /* the copies alone exceed the budget: they share it */
		double f = B / (x * (d + h));
		d *= f;
		h *= f;
	}
	if (active[ZB_RES_D2H])
		rate[ZB_RES_D2H] = d;
	if (active[ZB_RES_H2D])
		rate[ZB_RES_H2D] = h;
	if (adam && p->adam_copy > 0) { /* Adam's loads wait in the same queue (execprofile.h adam_copy);
					 * by the copies' own bytes, pageable ones too: beside 10-20 GB/s of
					 * pageable copies Adam (8 threads) slowed 4 / 11 / 6 % in fid runs
					 * C / B / v4, as beside pinned ones, not 3x that */
		rate[ZB_RES_CPU] = a / (1 + p->adam_copy * (d + h) / B);
	} else if (adam) {
		double left = B - x * (d + h), floor = 0.05 * a; /* never stalled outright */
		rate[ZB_RES_CPU] = a < left ? a : left > floor ? left : floor;
	}
	return 1;
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
