/*
 * test_engine.c - the discrete-event engine and resource models on tiny hand-made
 * graphs whose timelines can be worked out on paper.
 *
 * The hardware is made of round numbers: 10 GB/s each PCIe direction, half of it
 * each while both run, 1 us per copy; 1 TB/s of HBM and no kernel latency; 2 cores
 * at 1 Gparam/s of Adam each (56 GB/s of Adam traffic at 28 B/param), no dispatch
 * cost; host DRAM unlimited unless a test says otherwise.
 */
#include "tests/harness.h"

#include <stdarg.h>

#include "sim/engine.h"
#include "core/graph.h"
#include "core/model.h"
#include "inputs/presets.h"
#include "sim/resources.h"

#define REL 1e-12 /* the engine's arithmetic is a handful of double operations */

#define LAT 1e-6     /* copy latency */
#define PCIE 10e9    /* B/s each way */
#define HBM 1e12     /* B/s */
#define ADAM_BPS 56e9 /* 2 cores x 1e9 params/s x 28 B */

static void hand_config(zb_config *c, double dram_Bps)
{
	memset(c, 0, sizeof *c);
	zb_link *l = &c->hw.link;
	snprintf(l->name, sizeof l->name, "test-link");
	l->h2d_Bps = PCIE;
	l->d2h_Bps = PCIE;
	l->duplex_h2d = 0.5;
	l->duplex_d2h = 0.5;
	l->copy_latency_s = LAT;
	l->pageable_h2d_Bps = PCIE / 2;
	l->pageable_d2h_Bps = PCIE / 2;
	zb_gpu *g = &c->hw.gpu;
	snprintf(g->name, sizeof g->name, "test-gpu");
	g->mem_bytes = 80e9;
	g->bf16_flops = 1e15;
	g->fp16_flops = 1e15;
	g->hbm_Bps = HBM;
	g->gemm_half_dim = 0; /* every shape at the peak rate */
	g->kernel_latency_s = 0;
	zb_cpu *cpu = &c->hw.cpu;
	snprintf(cpu->name, sizeof cpu->name, "test-cpu");
	cpu->cores = 2;
	cpu->adam_params_per_core = 1e9;
	cpu->dram_Bps = dram_Bps;
	cpu->mem_bytes = 1e12;
	cpu->task_latency_s = 0;
	c->hw.gpus_per_link = 1;
	c->hw.gpus_per_cpu = 1;
	zb_preset_default_model(&c->model);
	zb_policy_defaults(&c->policy);
	c->steps = 1;
}

/* ---- a hand-made graph --------------------------------------------------- */

static void tg_init(zb_graph *g, size_t cap)
{
	memset(g, 0, sizeof *g);
	g->tasks = calloc(cap, sizeof *g->tasks);
	g->cap_tasks = cap;
	g->deps = calloc(cap * ZB_RES_COUNT + 1, sizeof *g->deps);
	g->cap_deps = cap * ZB_RES_COUNT + 1;
	g->steps = 1;
	assert_non_null(g->tasks);
	assert_non_null(g->deps);
}

static void tg_free(zb_graph *g)
{
	free(g->tasks);
	free(g->deps);
	memset(g, 0, sizeof *g);
}

static zb_task_kind kind_of(zb_resource r)
{
	switch (r) {
	case ZB_RES_GPU: return ZB_TASK_KERNEL;
	case ZB_RES_D2H:
	case ZB_RES_H2D: return ZB_TASK_COPY;
	case ZB_RES_CPU: return ZB_TASK_CPU_ADAM;
	case ZB_RES_GPU_OPT: return ZB_TASK_GPU_ADAM;
	default: return ZB_TASK_KERNEL;
	}
}

/* Add a task on resource r with `bytes` of work and ndeps dependencies (ids). */
static uint32_t tg_add(zb_graph *g, zb_resource r, double bytes, int ndeps, ...)
{
	assert_true(g->ntasks < g->cap_tasks);
	zb_task *t = &g->tasks[g->ntasks];
	memset(t, 0, sizeof *t);
	t->id = (uint32_t)g->ntasks;
	t->kind = (uint8_t)kind_of(r);
	t->resource = (uint8_t)r;
	t->op = ZB_OP_ADAM;
	t->pass = ZB_PASS_OPT;
	t->step = 0;
	t->micro = -1;
	t->unit = -1;
	t->bucket = -1;
	t->bytes = bytes;
	t->params = r == ZB_RES_CPU || r == ZB_RES_GPU_OPT ? (int64_t)(bytes / ZB_ADAM_BYTES_PER_PARAM) : 0;
	t->param_offset = -1;
	t->dep_begin = (uint32_t)g->ndeps;
	t->dep_count = (uint32_t)ndeps;
	va_list ap;
	va_start(ap, ndeps);
	for (int i = 0; i < ndeps; i++) {
		assert_true(g->ndeps < g->cap_deps);
		g->deps[g->ndeps++] = va_arg(ap, uint32_t);
	}
	va_end(ap);
	return (uint32_t)g->ntasks++;
}

/* A GEMM on the GPU: C[m x n] += A[m x k] B[k x n]. */
static uint32_t tg_gemm(zb_graph *g, int m, int n, int k)
{
	uint32_t id = tg_add(g, ZB_RES_GPU, 0, 0);
	zb_task *t = &g->tasks[id];
	t->kind = ZB_TASK_GEMM;
	t->op = ZB_OP_FC1;
	t->pass = ZB_PASS_FWD;
	t->micro = 0;
	t->m = m;
	t->n = n;
	t->k = k;
	t->batch = 1;
	t->flops = 2.0 * m * n * k;
	return id;
}

static void run(const zb_graph *g, const zb_config *c, zb_sim_result *r)
{
	zb_error err = { 0 };
	zb_status st = zb_simulate(g, c, r, &err);
	if (st)
		print_error("zb_simulate: %s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	assert_int_equal(r->ntasks, g->ntasks);
}

/* ---- single resources ----------------------------------------------------- */

static void test_single_copy(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	tg_add(&g, ZB_RES_D2H, 1e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_true(r.start[0] == 0.0);
	assert_close(r.end[0], LAT + 1e9 / PCIE, REL);
	assert_close(r.total_s, LAT + 0.1, REL);
	assert_int_equal(r.events, 1);
	/* one step, nothing else running: busy = alone = the copy's time */
	assert_close(r.busy_s[ZB_RES_D2H], LAT + 0.1, REL);
	assert_close(r.work_s[ZB_RES_D2H], LAT + 0.1, REL);
	assert_close(r.lower_bound_s, LAT + 0.1, REL);
	assert_int_equal(r.bound_resource, ZB_RES_D2H);
	assert_int_equal(r.bottleneck, ZB_RES_D2H);
	assert_true(r.busy_s[ZB_RES_H2D] == 0 && r.busy_s[ZB_RES_CPU] == 0);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* A copy of a few bytes costs its latency: t = latency + bytes / bandwidth. */
static void test_small_copy_is_latency_bound(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	tg_add(&g, ZB_RES_H2D, 4096, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[0], LAT + 4096 / PCIE, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* Two copies in one direction run one after the other (one copy stream). */
static void test_same_direction_serializes(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	tg_add(&g, ZB_RES_H2D, 1e9, 0);
	tg_add(&g, ZB_RES_H2D, 2e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[0], LAT + 0.1, REL);
	assert_close(r.start[1], LAT + 0.1, REL);
	assert_close(r.end[1], 2 * LAT + 0.3, REL);
	assert_int_equal(r.events, 2);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* D2H 1 GB and H2D 0.5 GB start together. Both run at 0.5 x 10 GB/s after their
 * 1 us latency: H2D ends at 1 us + 0.5e9/5e9 = 1 us + 0.1 s. By then D2H has moved
 * 0.5 GB; the other 0.5 GB goes at the full 10 GB/s: 0.05 s more. */
static void test_duplex_opposite_directions(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	tg_add(&g, ZB_RES_D2H, 1e9, 0);
	tg_add(&g, ZB_RES_H2D, 0.5e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_true(r.start[0] == 0.0 && r.start[1] == 0.0);
	assert_close(r.end[1], LAT + 0.1, REL);
	assert_close(r.end[0], LAT + 0.15, REL);
	assert_close(r.total_s, LAT + 0.15, REL);
	/* events: two completions (D2H's rescheduled when its rate doubled) plus
	 * D2H's superseded first event, skipped on the way out */
	assert_int_equal(r.events, 3);
	/* alone, each would have taken latency + bytes / 10 GB/s */
	assert_close(r.work_s[ZB_RES_D2H], LAT + 0.1, REL);
	assert_close(r.work_s[ZB_RES_H2D], LAT + 0.05, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* The same with the H2D copy starting later (after a GPU task of 0.02 s): D2H
 * runs alone at 10 GB/s for 0.02 s - 1 us of work (0.2 GB - 10 kB), then both run
 * at 5 GB/s. H2D (0.1 GB) ends at 0.02 + 1 us + 0.02 = 0.04 s + 1 us; D2H has then
 * moved 0.2 GB - 1e4 + 5e9 x 0.02 s = 0.3 GB - 1e4 B and finishes the rest at
 * 10 GB/s. */
static void test_duplex_late_start(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t k = tg_add(&g, ZB_RES_GPU, 0.02 * HBM, 0);
	uint32_t down = tg_add(&g, ZB_RES_D2H, 1e9, 0);
	uint32_t up = tg_add(&g, ZB_RES_H2D, 0.1e9, 1, k);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[k], 0.02, REL);
	assert_close(r.start[up], 0.02, REL);
	assert_close(r.end[up], 0.04 + LAT, REL);
	double moved = (0.02 - LAT) * PCIE + (0.02 + LAT) * PCIE / 2;
	double want = 0.04 + LAT + (1e9 - moved) / PCIE;
	assert_close(r.end[down], want, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* ---- dependencies ----------------------------------------------------------- */

/* GPU kernel -> D2H -> CPU Adam -> H2D, each waiting for the previous: the sum. */
static void test_chain_across_resources(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 8);
	uint32_t a = tg_add(&g, ZB_RES_GPU, 1e9, 0);                 /* 1 ms at 1 TB/s */
	uint32_t b = tg_add(&g, ZB_RES_D2H, 1e8, 1, a);              /* 1 us + 10 ms */
	uint32_t cpu = tg_add(&g, ZB_RES_CPU, 1e8 * 28.0, 1, b);     /* 2.8 GB at 56 GB/s: 50 ms */
	uint32_t d = tg_add(&g, ZB_RES_H2D, 1e8, 1, cpu);            /* 1 us + 10 ms */
	zb_sim_result r;
	run(&g, &c, &r);
	double ta = 1e9 / HBM, tb = LAT + 1e8 / PCIE, tc = 2.8e9 / ADAM_BPS, td = LAT + 1e8 / PCIE;
	assert_close(tc, 0.05, REL);
	assert_close(r.end[a], ta, REL);
	assert_close(r.start[b], ta, REL);
	assert_close(r.end[b], ta + tb, REL);
	assert_close(r.start[cpu], ta + tb, REL);
	assert_close(r.end[cpu], ta + tb + tc, REL);
	assert_close(r.start[d], ta + tb + tc, REL);
	assert_close(r.end[d], ta + tb + tc + td, REL);
	assert_close(r.total_s, ta + tb + tc + td, REL);
	assert_int_equal(r.events, 4); /* one per task, no rate ever changes */
	/* a single step: the step ends with its last GPU task */
	assert_close(r.step_time_s, ta, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* Independent tasks on different resources overlap: the makespan is the longest. */
static void test_independent_tasks_overlap(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 8);
	tg_add(&g, ZB_RES_GPU, 0.2 * HBM, 0);      /* 0.2 s */
	tg_add(&g, ZB_RES_D2H, 1e9, 0);            /* 0.1 s + 1 us */
	tg_add(&g, ZB_RES_CPU, 0.5 * ADAM_BPS, 0); /* 0.5 s */
	tg_add(&g, ZB_RES_GPU_OPT, 0, 0);          /* nothing to do */
	zb_sim_result r;
	run(&g, &c, &r);
	for (size_t i = 0; i < g.ntasks; i++)
		assert_true(r.start[i] == 0.0);
	assert_close(r.end[0], 0.2, REL);
	assert_close(r.end[1], LAT + 0.1, REL);
	assert_close(r.end[2], 0.5, REL);
	assert_true(r.end[3] == 0.0);
	assert_close(r.total_s, 0.5, REL);
	assert_int_equal(r.bottleneck, ZB_RES_CPU);
	assert_int_equal(r.bound_resource, ZB_RES_CPU);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* A GPU GEMM with 2 TFLOP at 1 PFLOP/s and every dimension at full efficiency:
 * 2 ms; then it is memory- not compute-bound when its bytes say so. */
static void test_gemm_time(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t a = tg_gemm(&g, 10000, 10000, 10000);          /* 2e12 FLOPs: 2 ms */
	uint32_t b = tg_gemm(&g, 10, 10, 10);
	g.tasks[b].bytes = 3e9;                                  /* 3 ms of HBM */
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[a], 2e-3, REL);
	assert_close(r.end[b] - r.start[b], 3e-3, REL);
	/* with a finite half-dimension the rate falls by d/(d+h) per dimension */
	c.hw.gpu.gemm_half_dim = 10000;
	zb_sim_result r2;
	run(&g, &c, &r2);
	assert_close(r2.end[a], 2e-3 * 8, REL);
	zb_sim_result_free(&r);
	zb_sim_result_free(&r2);
	tg_free(&g);
}

/* ---- host DRAM contention ------------------------------------------------------ */

/* DRAM 60 GB/s. CPU Adam of 28 GB alone: 56 GB/s (compute-bound): 0.5 s. With a
 * 1 GB D2H copy at the same time the demand is 56 + 10 = 66 GB/s, so both run at
 * 60/66 = 10/11 of their rates: the copy ends at t1 = 1 us + 1e9 / (10e9 x 10/11)
 * = 1 us + 0.11 s. The Adam has then done 56e9 x 10/11 x t1 bytes and does the rest
 * at 56 GB/s: it ends at t1 + 0.5 - (10/11) t1 = 0.5 + t1 / 11. */
static void test_dram_contention(void **state)
{
	zb_config c;
	hand_config(&c, 60e9);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t adam = tg_add(&g, ZB_RES_CPU, 28e9, 0);
	zb_sim_result alone;
	run(&g, &c, &alone);
	assert_close(alone.end[adam], 0.5, REL);

	uint32_t copy = tg_add(&g, ZB_RES_D2H, 1e9, 0);
	zb_sim_result both;
	run(&g, &c, &both);
	double t1 = LAT + 0.11;
	assert_close(both.end[copy], t1, REL);
	assert_close(both.end[adam], 0.5 + t1 / 11, REL);
	/* alone-times do not see the contention */
	assert_close(both.work_s[ZB_RES_CPU], 0.5, REL);
	assert_close(both.work_s[ZB_RES_D2H], LAT + 0.1, REL);
	assert_close(both.lower_bound_s, 0.5, REL);

	/* With DRAM above the sum (66 GB/s) nothing slows down. */
	hand_config(&c, 66e9);
	zb_sim_result roomy;
	run(&g, &c, &roomy);
	assert_close(roomy.end[copy], LAT + 0.1, REL);
	assert_close(roomy.end[adam], 0.5, REL);

	/* DRAM below Adam's own compute rate: Adam alone is memory-bound. */
	hand_config(&c, 40e9);
	tg_free(&g);
	tg_init(&g, 4);
	adam = tg_add(&g, ZB_RES_CPU, 28e9, 0);
	zb_sim_result slow;
	run(&g, &c, &slow);
	assert_close(slow.end[adam], 28e9 / 40e9, REL);

	zb_sim_result_free(&alone);
	zb_sim_result_free(&both);
	zb_sim_result_free(&roomy);
	zb_sim_result_free(&slow);
	tg_free(&g);
}

/* Both copy directions and the Adam at once, DRAM 60 GB/s: demand 56 + 5 + 5 = 66
 * GB/s (each copy at its duplex half), all scaled by 60/66 = 10/11. The copies are
 * 0.3 GB each: they end together at t1 = 1 us + 0.3e9 / (5e9 x 10/11) = 1 us +
 * 0.066 s; the Adam (28 GB) then finishes alone at 56 GB/s: 0.5 + t1 / 11. */
static void test_dram_three_way(void **state)
{
	zb_config c;
	hand_config(&c, 60e9);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t adam = tg_add(&g, ZB_RES_CPU, 28e9, 0);
	uint32_t down = tg_add(&g, ZB_RES_D2H, 0.3e9, 0);
	uint32_t up = tg_add(&g, ZB_RES_H2D, 0.3e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	double t1 = LAT + 0.066;
	assert_close(r.end[down], t1, REL);
	assert_close(r.end[up], t1, REL);
	assert_close(r.end[adam], 0.5 + t1 / 11, REL);
	zb_sim_result_free(&r);

	/* DRAM 36 GB/s, below Adam's compute rate: Adam's demand is what it would draw
	 * alone (36 GB/s), so the three share 36 / (36 + 5 + 5) of their rates, and Adam
	 * finishes at 36 GB/s once the copies are gone. */
	hand_config(&c, 36e9);
	assert_close(zb_cpu_adam_Bps(&c), 36e9, REL);
	run(&g, &c, &r);
	double f = 36.0 / 46.0;
	double tc = LAT + 0.3e9 / (5e9 * f);
	double done = 36e9 * f * tc;
	assert_close(r.end[down], tc, REL);
	assert_close(r.end[up], tc, REL);
	assert_close(r.end[adam], tc + (28e9 - done) / 36e9, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* ---- GPU time sharing ----------------------------------------------------------- */

/* A 1 ms kernel and a 0.5 ms GPU Adam start together and each runs at half rate:
 * the Adam ends at 1 ms (0.5 ms of work at rate 1/2), the kernel has then done
 * 0.5 ms of its 1 ms and finishes alone at 1.5 ms. */
static void test_gpu_compute_and_gpu_adam_share(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t k = tg_add(&g, ZB_RES_GPU, 1e9, 0);
	uint32_t opt = tg_add(&g, ZB_RES_GPU_OPT, 0.5e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[opt], 1e-3, REL);
	assert_close(r.end[k], 1.5e-3, REL);
	assert_close(r.work_s[ZB_RES_GPU], 1e-3, REL);
	assert_close(r.work_s[ZB_RES_GPU_OPT], 0.5e-3, REL);
	assert_close(r.busy_s[ZB_RES_GPU], 1.5e-3, REL);
	assert_close(r.busy_s[ZB_RES_GPU_OPT], 1e-3, REL);
	assert_int_equal(r.events, 3); /* as for the two copies */
	/* GPU work does not touch PCIe or DRAM: a copy beside them is unaffected */
	hand_config(&c, 1e9);
	uint32_t cp = tg_add(&g, ZB_RES_H2D, 1e6, 0);
	zb_sim_result r2;
	run(&g, &c, &r2);
	assert_close(r2.end[k], 1.5e-3, REL);
	/* but DRAM at 1 GB/s does slow the copy: 1 us + 1e6 / 1e9 */
	assert_close(r2.end[cp], LAT + 1e-3, REL);
	zb_sim_result_free(&r);
	zb_sim_result_free(&r2);
	tg_free(&g);
}

/* With kernel latency, the latency part is not shared: a 10 us launch cost on each,
 * then the same sharing. Kernel: 10 us + 1 ms, Adam: 10 us + 0.5 ms, both started
 * at 0. Both are in the latency phase until 10 us; their rates are 1/2 from the
 * start (both flows are active), so Adam ends at 10 us + 1 ms and the kernel at
 * 10 us + 1.5 ms. */
static void test_gpu_sharing_with_latency(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	c.hw.gpu.kernel_latency_s = 1e-5;
	zb_graph g;
	tg_init(&g, 4);
	uint32_t k = tg_add(&g, ZB_RES_GPU, 1e9, 0);
	uint32_t opt = tg_add(&g, ZB_RES_GPU_OPT, 0.5e9, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.end[opt], 1e-5 + 1e-3, REL);
	assert_close(r.end[k], 1e-5 + 1.5e-3, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* ---- ordering and determinism ------------------------------------------------------ */

/* Tasks of one resource run in id order: B (no dependencies) waits behind A, which
 * waits for a 0.1 s GPU task, although B was ready at time 0. */
static void test_fifo_on_one_resource(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t k = tg_add(&g, ZB_RES_GPU, 0.1 * HBM, 0);
	uint32_t a = tg_add(&g, ZB_RES_D2H, 1e8, 1, k);
	uint32_t b = tg_add(&g, ZB_RES_D2H, 1e8, 0);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.start[a], 0.1, REL);
	assert_close(r.end[a], 0.1 + LAT + 0.01, REL);
	assert_true(r.start[b] == r.end[a]);
	assert_close(r.end[b], 0.1 + 2 * (LAT + 0.01), REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* A task that depends on two others starts when the later one ends. */
static void test_join_waits_for_all(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 4);
	uint32_t k = tg_add(&g, ZB_RES_GPU, 0.03 * HBM, 0);   /* 0.03 s */
	uint32_t d = tg_add(&g, ZB_RES_D2H, 0.5e9, 0);        /* 1 us + 0.05 s */
	uint32_t j = tg_add(&g, ZB_RES_CPU, 0.01 * ADAM_BPS, 2, k, d);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_close(r.start[j], LAT + 0.05, REL);
	assert_close(r.end[j], LAT + 0.06, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

static void test_deterministic(void **state)
{
	/* a real schedule: gpt2 with overlap at ratio 0.5, DRAM tight enough for
	 * contention, so that rates change often */
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_error err = { 0 };
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.5;
	c.policy.micro_batch = 2;
	c.policy.seq = 512;
	c.policy.bucket_params = 5000000;
	c.steps = 3;
	zb_graph g;
	assert_int_equal(zb_graph_build(&g, &c, &err), ZB_OK);
	zb_sim_result r1, r2;
	run(&g, &c, &r1);
	run(&g, &c, &r2);
	assert_true(r1.events > g.ntasks); /* rate changes did happen */
	assert_int_equal(r1.events, r2.events);
	assert_memory_equal(r1.start, r2.start, g.ntasks * sizeof *r1.start);
	assert_memory_equal(r1.end, r2.end, g.ntasks * sizeof *r1.end);
	assert_memory_equal(&r1.step_time_s, &r2.step_time_s, sizeof r1.step_time_s);
	/* every task ran, after its dependencies, in id order on its resource */
	double last_end[ZB_RES_COUNT] = { 0 };
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		assert_true(r1.end[i] >= r1.start[i]);
		const uint32_t *d = zb_task_deps(&g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			assert_true(r1.start[i] >= r1.end[d[j]]);
		assert_true(r1.start[i] >= last_end[t->resource]);
		last_end[t->resource] = r1.end[i];
	}
	zb_sim_result_free(&r1);
	zb_sim_result_free(&r2);
	zb_graph_free(&g);
}

/* Events: at least one per task; every extra one is a rescheduled or superseded
 * completion. */
static void test_events_counted(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 16);
	for (int i = 0; i < 5; i++)
		tg_add(&g, ZB_RES_GPU, 1e6, i ? 1 : 0, (uint32_t)(i - 1));
	zb_sim_result r;
	run(&g, &c, &r);
	assert_int_equal(r.events, 5);
	assert_close(r.total_s, 5e-6, REL);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* An empty graph simulates to nothing. */
static void test_empty_graph(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	zb_graph g;
	tg_init(&g, 1);
	zb_sim_result r;
	run(&g, &c, &r);
	assert_int_equal(r.events, 0);
	assert_true(r.total_s == 0 && r.step_time_s == 0);
	zb_sim_result_free(&r);
	tg_free(&g);
}

/* Steady-state step time over several steps: each step is one 1 ms kernel, so the
 * step time is 1 ms whatever the warm-up window. */
static void test_steady_step_time(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	for (int steps = 1; steps <= 6; steps++) {
		zb_graph g;
		tg_init(&g, 8);
		g.steps = steps;
		g.tokens_per_step = 1000;
		g.model_flops_per_step = 1e12;
		for (int s = 0; s < steps; s++) {
			uint32_t id = tg_add(&g, ZB_RES_GPU, 1e9, s ? 1 : 0, (uint32_t)(s - 1));
			g.tasks[id].step = s;
		}
		zb_sim_result r;
		run(&g, &c, &r);
		assert_close(r.step_time_s, 1e-3, 1e-9);
		assert_close(r.tokens_per_s, 1000 / 1e-3, 1e-9);
		assert_close(r.tflops_per_gpu, 1e12 / 1e-3 / 1e12, 1e-9);
		assert_close(r.busy_s[ZB_RES_GPU], 1e-3, 1e-9);
		assert_close(zb_steady_step_time(&g, r.end), r.step_time_s, 0);
		zb_sim_result_free(&r);
		tg_free(&g);
	}
}

/* The step time is the pace of the slowest resource, not just the GPU's: each step
 * is a 1 ms kernel and a 2 ms CPU Adam after it, and nothing holds the GPU back, so
 * over a short run the GPU finishes a step every 1 ms while the CPU, which sets
 * the pace any longer run can keep, needs 2 ms per step. */
static void test_step_time_is_slowest_pace(void **state)
{
	zb_config c;
	hand_config(&c, 1e15);
	for (int steps = 4; steps <= 8; steps++) {
		zb_graph g;
		tg_init(&g, 16);
		g.steps = steps;
		for (int s = 0; s < steps; s++) {
			uint32_t k = tg_add(&g, ZB_RES_GPU, 1e9, 0);
			uint32_t a = tg_add(&g, ZB_RES_CPU, 2e-3 * ADAM_BPS, 1, k);
			g.tasks[k].step = g.tasks[a].step = s;
		}
		zb_sim_result r;
		run(&g, &c, &r);
		assert_close(r.step_time_s, 2e-3, 1e-9);
		assert_close(r.lower_bound_s, 2e-3, 1e-9);
		assert_int_equal(r.bound_resource, ZB_RES_CPU);
		assert_true(r.step_time_s >= r.lower_bound_s * (1 - 1e-9));
		zb_sim_result_free(&r);
		tg_free(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_copy),
		cmocka_unit_test(test_small_copy_is_latency_bound),
		cmocka_unit_test(test_same_direction_serializes),
		cmocka_unit_test(test_duplex_opposite_directions),
		cmocka_unit_test(test_duplex_late_start),
		cmocka_unit_test(test_chain_across_resources),
		cmocka_unit_test(test_independent_tasks_overlap),
		cmocka_unit_test(test_gemm_time),
		cmocka_unit_test(test_dram_contention),
		cmocka_unit_test(test_dram_three_way),
		cmocka_unit_test(test_gpu_compute_and_gpu_adam_share),
		cmocka_unit_test(test_gpu_sharing_with_latency),
		cmocka_unit_test(test_fifo_on_one_resource),
		cmocka_unit_test(test_join_waits_for_all),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_events_counted),
		cmocka_unit_test(test_empty_graph),
		cmocka_unit_test(test_steady_step_time),
		cmocka_unit_test(test_step_time_is_slowest_pace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
