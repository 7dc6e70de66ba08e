/* resources.c - task timing and contention models; see resources.h. */
#include "sim/resources.h"

#include <math.h>

#include "core/attention.h"
#include "sim/collective.h"
#include "sim/hostpass.h"
#include "sim/kernels.h"
#include "sim/numa.h"
#include "schedules/deepspeed.h"

double zb_gemm_efficiency(const zb_gpu *gpu, double m, double n, double k)
{
	double h = gpu->gemm_half_dim;
	return (m / (m + h)) * (n / (n + h)) * (k / (k + h));
}

double zb_gemm_tiles(double m, double n, double batch)
{
	if (m <= 0 || n <= 0)
		return 0;
	return ceil(m / 128.0) * ceil(n / 256.0) * (batch > 1 ? batch : 1);
}

int zb_gemm_fills(const zb_gpu *gpu, double tiles)
{
	return gpu->sms > 0 && tiles >= gpu->sms;
}

double zb_gemm_waves(const zb_gpu *gpu, double m, double n, double batch)
{
	if (gpu->sms <= 0 || m <= 0 || n <= 0)
		return 1;
	double tiles = zb_gemm_tiles(m, n, batch);
	return tiles / (ceil(tiles / gpu->sms) * gpu->sms);
}

static double copy_Bps(const zb_config *c, int resource)
{
	const zb_link *l = &c->hw.link;
	int pageable = c->policy.pageable;
	double bw = resource == ZB_RES_H2D ? (pageable ? l->pageable_h2d_Bps : l->h2d_Bps)
					   : (pageable ? l->pageable_d2h_Bps : l->d2h_Bps);
	return bw / zb_link_sharers(c);
}

/* GPUs dividing one host link: gpus_per_link is the topology (GPUs behind one PCIe
 * switch uplink: 2 on a DGX); the ranks of this run fill the switches, so at most
 * policy.gpus of them share one. One GPU has its link to itself: the GPUs behind a switch
 * that the run does not use are not sharing it (`--gpus N` says how many it uses). */
int zb_link_sharers(const zb_config *c)
{
	int per = c->hw.gpus_per_link > 0 ? c->hw.gpus_per_link : 1;
	int g = c->policy.gpus > 1 ? c->policy.gpus : 1;
	return g < per ? g : per;
}

double zb_cpu_adam_Bps(const zb_config *c)
{
	const zb_cpu *cpu = &c->hw.cpu;
	double share = zb_numa_share(c); /* 1 / gpus_per_cpu on a one-socket host */
	double cores = zb_config_cpu_threads(c);
	/* linear in cores until Adam's own memory ceiling, then flat: measured on the
	 * H200 machine, 1 thread 0.71 Gparam/s, 8 threads 3.7, 16 threads 4.1-4.4 */
	double compute = cores * cpu->adam_params_per_core * ZB_ADAM_BYTES_PER_PARAM;
	double ceiling = (cpu->adam_Bps > 0 ? cpu->adam_Bps : cpu->dram_Bps) * share;
	double dram = cpu->dram_Bps * share;
	double r = compute < ceiling ? compute : ceiling;
	zb_exec_profile scratch; /* zbench's executor: its fitted thread curve (kernels.h) */
	double h = zb_exec_adam_Pps(c, zb_exec_profile_for(c, &scratch), cores, share);
	if (h > 0)
		r = h * ZB_ADAM_BYTES_PER_PARAM;
	return zb_numa_cap(c, r < dram ? r : dram);
}

/* The framework profile, when the schedule is DeepSpeed's (NULL otherwise). */
static const zb_ds_profile *ds_profile(const zb_config *c, zb_ds_profile *scratch)
{
	return c->framework == ZB_FW_DEEPSPEED ? zb_ds_profile_of(&c->hw.ds, scratch) : NULL;
}

void zb_task_flow(const zb_task *t, const zb_config *c, double *fixed_s, double *work)
{
	const zb_gpu *gpu = &c->hw.gpu;
	zb_ds_profile scratch;
	const zb_ds_profile *ds = ds_profile(c, &scratch);
	if (t->kind == ZB_TASK_HOST) { /* framework host work: a duration */
		*fixed_s = zb_host_pass_s(t, c, zb_ds_host_task_s(t, c)); /* ranks share DRAM (hostpass.h) */
		*work = 0;
		return;
	}
	zb_exec_profile escratch;
	const zb_exec_profile *ep = zb_exec_profile_for(c, &escratch);
	if (ep && (t->resource == ZB_RES_GPU || t->resource == ZB_RES_GPU_OPT)) {
		zb_exec_gpu_flow(t, c, ep, fixed_s, work); /* per kernel class (kernels.h) */
		return;
	}
	switch (t->resource) {
	case ZB_RES_GPU: {
		double s = t->bytes / gpu->hbm_Bps;
		if (t->kind == ZB_TASK_GEMM) {
			double peak = zb_config_gpu_flops(c);
			double eff = t->op == ZB_OP_ATTN ? zb_flash_efficiency(gpu)
							 : zb_gemm_efficiency(gpu, t->m, t->n, t->k);
			double compute = t->flops / (peak * eff);
			s = compute > s ? compute : s; /* bounded by arithmetic or by memory */
		}
		if (ds && t->op <= ZB_OP_LOSS) /* the framework's own forward/backward kernels */
			s /= ds->gpu_eff;
		/* DeepSpeed's GEMMs: the shape term gpu_eff (one factor, fitted on one
		 * shape) cannot carry; zbench's own GEMMs keep the calibrated half-dimension,
		 * fitted to its GEMM suite with this quantization inside */
		if (ds && t->kind == ZB_TASK_GEMM)
			s /= zb_gemm_waves(gpu, t->m, t->n, t->batch);
		*fixed_s = gpu->kernel_latency_s;
		*work = s;
		return;
	}
	case ZB_RES_GPU_OPT:
		*fixed_s = gpu->kernel_latency_s;
		*work = t->bytes / gpu->hbm_Bps;
		return;
	case ZB_RES_D2H:
	case ZB_RES_H2D:
		*fixed_s = c->hw.link.copy_latency_s;
		*work = t->bytes;
		return;
	case ZB_RES_CPU:
		*fixed_s = ep && ep->adam_task_s > 0 ? ep->adam_task_s : c->hw.cpu.task_latency_s;
		*work = t->bytes;
		return;
	case ZB_RES_COMM: {
		/* ring steps' latency as the fixed part (the same for every collective of a
		 * run: the engine keeps one fixed cost per resource), bus bytes as the work;
		 * an all-reduce's second pass of steps is added as the bytes it would move
		 * in that time, so it alone takes exactly collective.h's time */
		double lat = zb_collective_step_latency_s(c);
		int n = zb_ranks(c);
		*fixed_s = (n - 1) * lat;
		*work = zb_collective_bus_bytes(c, t->op, t->bytes);
		if (t->op == ZB_OP_ALL_REDUCE)
			*work += (n - 1) * lat * zb_collective_bus_Bps(c);
		return;
	}
	}
	*fixed_s = 0;
	*work = 0;
}

void zb_resource_rates(const zb_config *c, const zb_task *const active[ZB_RES_COUNT],
		       double rate[ZB_RES_COUNT])
{
	const zb_link *l = &c->hw.link;
	/* GPU compute and GPU Adam time-share the SMs */
	double share = active[ZB_RES_GPU] && active[ZB_RES_GPU_OPT] ? 0.5 : 1.0;
	rate[ZB_RES_GPU] = share;
	rate[ZB_RES_GPU_OPT] = share;
	zb_exec_shares(c, active, rate); /* zbench's executor: the measured shares (kernels.h) */
	rate[ZB_RES_GPU] *= zb_exec_starved(c, active); /* its launches wait for a core (kernels.h) */

	/* PCIe: duplex slowdown when both directions are busy */
	int both = active[ZB_RES_H2D] && active[ZB_RES_D2H];
	rate[ZB_RES_H2D] = copy_Bps(c, ZB_RES_H2D) * (both ? l->duplex_h2d : 1.0);
	rate[ZB_RES_D2H] = copy_Bps(c, ZB_RES_D2H) * (both ? l->duplex_d2h : 1.0);
	rate[ZB_RES_CPU] = zb_cpu_adam_Bps(c) * zb_exec_adam_launch(c, active); /* a core to the launches */
	/* collectives: NVLink/network, slowed by the rank's own kernels beside them (kernels.h) */
	rate[ZB_RES_COMM] = zb_collective_bus_Bps(c) * zb_exec_comm_share(c, active); /* NCCL shares the SMs */
	zb_ds_profile scratch;
	const zb_ds_profile *ds = ds_profile(c, &scratch);
	if (ds) {
		rate[ZB_RES_CPU] *= ds->cpu_adam_rel;
		if (active[ZB_RES_H2D] && active[ZB_RES_H2D]->op == ZB_OP_PARAM_UP_PAGEABLE)
			rate[ZB_RES_H2D] = ds->pageable_h2d_Bps / zb_link_sharers(c);
	}
	/* only Adam draws on DRAM at its rate; framework host tasks are durations */
	int adam = active[ZB_RES_CPU] && active[ZB_RES_CPU]->kind == ZB_TASK_CPU_ADAM;

	if (zb_exec_dram(c, adam, active, rate)) /* zbench's executor: as measured (kernels.h) */
		return;
	/* Host DRAM: Adam and DMA share it. A pageable copy also costs the driver's
	 * staging memcpy (a read and a write) on top of the DMA. */
	double budget = c->hw.cpu.dram_Bps * zb_numa_share(c);
	double dma_factor = c->policy.pageable ? 3.0 : 1.0;
	double demand = 0;
	if (adam)
		demand += rate[ZB_RES_CPU];
	if (active[ZB_RES_H2D])
		demand += rate[ZB_RES_H2D] * dma_factor;
	if (active[ZB_RES_D2H])
		demand += rate[ZB_RES_D2H] * dma_factor;
	if (demand > budget) {
		double f = budget / demand;
		rate[ZB_RES_CPU] *= f;
		rate[ZB_RES_H2D] *= f;
		rate[ZB_RES_D2H] *= f;
	}
}

double zb_task_alone_s(const zb_task *t, const zb_config *c)
{
	const zb_task *active[ZB_RES_COUNT] = { 0 };
	double rate[ZB_RES_COUNT], fixed, work;
	active[t->resource] = t;
	zb_resource_rates(c, active, rate);
	zb_task_flow(t, c, &fixed, &work);
	return fixed + (work > 0 ? work / rate[t->resource] : 0);
}
