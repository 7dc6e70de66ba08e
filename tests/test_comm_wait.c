/*
 * test_comm_wait.c - execprofile.h comm_wait on hand-made graphs: a collective that
 * becomes ready while a GEMM with a tile per SM runs makes no progress until that
 * GEMM's last wave; one that becomes ready as the GEMM starts runs beside it; a GEMM
 * with fewer tiles than SMs, an unknown SM count, or comm_wait 0 change nothing.
 *
 * Round numbers: 1 PFLOP/s, every shape at peak, no launch cost; 100 GB/s of ring
 * busbw and no latency; 10 GB/s PCIe. GEMM 8192 x 10240 x 4096: 687 us, 64 x 40 =
 * 2560 output tiles, on 128 SMs 20 waves of 34.4 us.
 */
#include "tests/harness.h"

#include <stdarg.h>

#include "core/graph.h"
#include "core/model.h"
#include "inputs/presets.h"
#include "sim/engine.h"
#include "sim/resources.h"

#define REL 1e-9

static void config(zb_config *c, int sms, double wait)
{
	memset(c, 0, sizeof *c);
	zb_link *l = &c->hw.link;
	l->h2d_Bps = l->d2h_Bps = 10e9;
	l->duplex_h2d = l->duplex_d2h = 0.5;
	l->pageable_h2d_Bps = l->pageable_d2h_Bps = 5e9;
	zb_gpu *g = &c->hw.gpu;
	g->mem_bytes = 80e9;
	g->bf16_flops = g->fp16_flops = 1e15;
	g->hbm_Bps = 1e12;
	g->sms = sms;
	zb_exec_profile_neutral(&g->exec);
	g->exec.set = 1;
	g->exec.comm_wait = wait;
	zb_cpu *cpu = &c->hw.cpu;
	cpu->cores = 2;
	cpu->adam_params_per_core = 1e9;
	cpu->dram_Bps = 1e12;
	cpu->mem_bytes = 1e12;
	c->hw.gpus_per_link = c->hw.gpus_per_cpu = 1;
	c->hw.fabric.intra_bus_Bps = 100e9;
	zb_preset_default_model(&c->model);
	zb_policy_defaults(&c->policy);
	c->policy.gpus = 2;
	c->steps = 1;
}

static void tg_init(zb_graph *g)
{
	memset(g, 0, sizeof *g);
	g->tasks = calloc(8, sizeof *g->tasks);
	g->cap_tasks = 8;
	g->deps = calloc(16, sizeof *g->deps);
	g->cap_deps = 16;
	g->steps = 1;
	g->ranks = 2;
	assert_non_null(g->tasks);
	assert_non_null(g->deps);
}

static uint32_t tg_add(zb_graph *g, zb_resource r, zb_task_kind kind, double bytes, int ndeps, ...)
{
	zb_task *t = &g->tasks[g->ntasks];
	memset(t, 0, sizeof *t);
	t->id = (uint32_t)g->ntasks;
	t->kind = (uint8_t)kind;
	t->resource = (uint8_t)r;
	t->op = kind == ZB_TASK_COLLECTIVE ? ZB_OP_REDUCE_SCATTER : kind == ZB_TASK_COPY ? ZB_OP_GRAD_DOWN : ZB_OP_RESID;
	t->pass = ZB_PASS_BWD_DATA;
	t->micro = t->unit = t->bucket = -1;
	t->param_offset = -1;
	t->bytes = bytes;
	t->dep_begin = (uint32_t)g->ndeps;
	t->dep_count = (uint32_t)ndeps;
	va_list ap;
	va_start(ap, ndeps);
	for (int i = 0; i < ndeps; i++)
		g->deps[g->ndeps++] = va_arg(ap, uint32_t);
	va_end(ap);
	return (uint32_t)g->ntasks++;
}

static uint32_t tg_gemm(zb_graph *g, int m, int n, int k)
{
	uint32_t id = tg_add(g, ZB_RES_GPU, ZB_TASK_GEMM, 0, 0);
	zb_task *t = &g->tasks[id];
	t->op = ZB_OP_FC1;
	t->m = m, t->n = n, t->k = k, t->batch = 1;
	t->flops = 2.0 * m * n * k;
	return id;
}

/* A D2H copy of `copy` bytes and a GEMM start together; the collective (50 MB)
 * waits for the copy. Returns the collective's start and end. */
static void run(const zb_config *c, double copy, int m, double *start, double *end, double *gemm_end)
{
	zb_graph g;
	tg_init(&g);
	uint32_t d = tg_add(&g, ZB_RES_D2H, ZB_TASK_COPY, copy, 0);
	uint32_t k = tg_gemm(&g, m, 10240, 4096);
	uint32_t r = tg_add(&g, ZB_RES_COMM, ZB_TASK_COLLECTIVE, 50e6, 1, d);
	zb_sim_result res;
	zb_error err;
	assert_int_equal(zb_simulate(&g, c, &res, &err), ZB_OK);
	*start = res.start[r];
	*end = res.end[r];
	*gemm_end = res.end[k];
	zb_sim_result_free(&res);
	free(g.tasks);
	free(g.deps);
}

static void test_waits_for_last_wave(void **state)
{
	(void)state;
	zb_config off, on;
	config(&off, 128, 0);
	config(&on, 128, 1);
	double s0, e0, s1, e1, k0, k1;
	run(&off, 1e6, 8192, &s0, &e0, &k0); /* ready after 100 us, inside the 687 us GEMM */
	run(&on, 1e6, 8192, &s1, &e1, &k1);
	double gemm = 2.0 * 8192 * 10240 * 4096 / 1e15, wave = gemm / 20;
	assert_close(k0, gemm, REL);
	assert_close(k1, gemm, REL);
	assert_close(s1, s0, REL); /* it holds its stream from the start, as NCCL's kernel */
	assert_close(s0, 100e-6, 1e-3);
	assert_close(e1 - e0, gemm - wave - s0, REL); /* progress from the last wave on */
}

static void test_no_wait(void **state)
{
	(void)state;
	zb_config off, on, unknown;
	config(&off, 128, 0);
	config(&on, 128, 1);
	config(&unknown, 0, 1);
	double s0, e0, s1, e1, k;
	/* ready as the GEMM starts (no copy bytes: latency 0): beside it */
	run(&off, 0, 8192, &s0, &e0, &k);
	run(&on, 0, 8192, &s1, &e1, &k);
	assert_close(e1, e0, REL);
	/* 16 x 40 = 640 tiles on 1024 SMs: the GEMM leaves SMs free */
	config(&on, 1024, 1);
	run(&off, 1e6, 2048, &s0, &e0, &k);
	run(&on, 1e6, 2048, &s1, &e1, &k);
	assert_close(e1, e0, REL);
	/* the SM count unknown: no rule */
	run(&off, 1e6, 8192, &s0, &e0, &k);
	run(&unknown, 1e6, 8192, &s1, &e1, &k);
	assert_close(e1, e0, REL);
}

static void test_tiles(void **state)
{
	(void)state;
	zb_gpu g = { .sms = 132 };
	assert_close(zb_gemm_tiles(8192, 10240, 1), 64 * 40, 0);
	assert_close(zb_gemm_tiles(1024, 1024, 160), 8 * 4 * 160, 0);
	assert_true(zb_gemm_fills(&g, 132));
	assert_false(zb_gemm_fills(&g, 131));
	g.sms = 0;
	assert_false(zb_gemm_fills(&g, 1e6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_for_last_wave),
		cmocka_unit_test(test_no_wait),
		cmocka_unit_test(test_tiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
