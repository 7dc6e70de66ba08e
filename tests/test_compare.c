/*
 * test_compare.c - the arithmetic of predicted-vs-measured (analysis/compare.h) on
 * hand-made timelines whose every figure is computed by hand in the comments;
 * a simulated schedule compared with itself and with a stretched copy; and
 * `zbench compare` end to end on a database whose "measured" events are the
 * predicted ones slowed by 10%.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "common/stats.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "sim/predict.h"
#include "inputs/presets.h"

/* ---- a hand-made graph ------------------------------------------------------------ */

typedef struct tl {
	zb_graph g;
	double s[64], e[64];
} tl;

static uint32_t add(tl *x, int res, int kind, int step, double s, double e, int ndeps, ...)
{
	zb_graph *g = &x->g;
	if (!g->tasks) {
		g->tasks = calloc(64, sizeof *g->tasks);
		g->deps = calloc(256, sizeof *g->deps);
	}
	uint32_t id = (uint32_t)g->ntasks++;
	zb_task *t = &g->tasks[id];
	memset(t, 0, sizeof *t);
	t->id = id;
	t->resource = (uint8_t)res;
	t->kind = (uint8_t)kind;
	t->step = step;
	t->micro = -1;
	t->unit = t->bucket = -1;
	t->dep_begin = (uint32_t)g->ndeps;
	va_list ap;
	va_start(ap, ndeps);
	for (int i = 0; i < ndeps; i++)
		g->deps[g->ndeps++] = va_arg(ap, uint32_t);
	va_end(ap);
	t->dep_count = (uint32_t)ndeps;
	if (step + 1 > g->steps)
		g->steps = step + 1;
	x->s[id] = s;
	x->e[id] = e;
	return id;
}

static void tl_free(tl *x)
{
	free(x->g.tasks);
	free(x->g.deps);
}

/* One step:
 *   gpu      gemm [0,4]  kernel [4,6]
 *   d2h      [2,5]
 *   cpu      [5,9]   (after the d2h)
 *   h2d      [9,10]  (after the cpu)
 *   gpu_opt  [6,7]   (after the kernel)
 * Window [0, 10] (one step: up to the last end). */
static void one_step(tl *x)
{
	memset(x, 0, sizeof *x);
	uint32_t g0 = add(x, ZB_RES_GPU, ZB_TASK_GEMM, 0, 0, 4, 0);
	uint32_t g1 = add(x, ZB_RES_GPU, ZB_TASK_KERNEL, 0, 4, 6, 1, g0);
	uint32_t d = add(x, ZB_RES_D2H, ZB_TASK_COPY, 0, 2, 5, 0);
	uint32_t c = add(x, ZB_RES_CPU, ZB_TASK_CPU_ADAM, 0, 5, 9, 1, d);
	add(x, ZB_RES_H2D, ZB_TASK_COPY, 0, 9, 10, 1, c);
	add(x, ZB_RES_GPU_OPT, ZB_TASK_GPU_ADAM, 0, 6, 7, 1, g1);
}

static void test_one_step(void **state)
{
	tl x;
	one_step(&x);
	zb_timeline_stats s;
	zb_error err = { 0 };
	assert_int_equal(zb_timeline_stats_compute(&x.g, x.s, x.e, -1, &s, &err), ZB_OK);
	assert_int_equal(s.window_steps, 1);
	assert_close(s.window_hi_s, 10, 1e-15);
	assert_close(s.step_time_s, 6, 1e-15); /* the end of the last GPU compute task */
	assert_close(s.busy_s[ZB_RES_GPU], 6, 1e-15);
	assert_close(s.busy_s[ZB_RES_D2H], 3, 1e-15);
	assert_close(s.busy_s[ZB_RES_CPU], 4, 1e-15);
	assert_close(s.busy_s[ZB_RES_H2D], 1, 1e-15);
	assert_close(s.busy_s[ZB_RES_GPU_OPT], 1, 1e-15);
	assert_close(s.union_s, 10, 1e-15);   /* [0,6] gpu, [6,7] gpu_opt, [7,9] cpu, [9,10] h2d */
	assert_close(s.overlap_s, 5, 1e-15);  /* 15 busy - 10 union */
	assert_close(s.hidden_s[ZB_RES_D2H], 3, 1e-15); /* [2,5] all under the GPU */
	assert_close(s.hidden_s[ZB_RES_CPU], 1, 1e-15); /* [5,6] */
	assert_close(s.hidden_s[ZB_RES_H2D], 0, 1e-15);
	assert_close(s.hidden_s[ZB_RES_GPU_OPT], 0, 1e-15); /* starts when the GPU stops */
	assert_close(s.hidden_s[ZB_RES_GPU], 4, 1e-15);  /* [2,6]: the d2h, then the cpu */
	assert_close(s.hidden_frac, 4.0 / 9, 1e-15);      /* (3 + 1) of (3 + 4 + 1 + 1) */
	/* the path to the end of the GPU's last task: kernel after gemm */
	assert_close(s.crit_s[ZB_RES_GPU], 6, 1e-15);
	assert_close(s.crit_s[ZB_RES_CPU], 0, 1e-15);
	assert_close(s.crit_wait_s, 0, 1e-15);
	assert_int_equal(s.crit_tasks, 2);
	assert_close(s.class_s[ZB_CLASS_GEMM], 4, 1e-15);
	assert_close(s.class_s[ZB_CLASS_KERNEL], 2, 1e-15);
	assert_close(s.class_s[ZB_CLASS_D2H], 3, 1e-15);
	assert_close(s.class_s[ZB_CLASS_CPU_ADAM], 4, 1e-15);
	assert_close(s.class_s[ZB_CLASS_H2D], 1, 1e-15);
	assert_close(s.class_s[ZB_CLASS_GPU_ADAM], 1, 1e-15);
	assert_int_equal(s.tasks_run, 6);

	/* a task that did not run (start -1) or has no time (NaN) is left out */
	x.s[3] = -1;
	x.e[3] = -1;
	x.s[4] = NAN;
	assert_int_equal(zb_timeline_stats_compute(&x.g, x.s, x.e, -1, &s, &err), ZB_OK);
	assert_close(s.busy_s[ZB_RES_CPU], 0, 1e-15);
	assert_close(s.busy_s[ZB_RES_H2D], 0, 1e-15);
	assert_close(s.union_s, 7, 1e-15);
	assert_int_equal(s.tasks_run, 4);
	for (int i = 0; i < 6; i++)
		x.s[i] = x.e[i] = -1;
	assert_int_equal(zb_timeline_stats_compute(&x.g, x.s, x.e, -1, &s, &err), ZB_E_INPUT);
	tl_free(&x);
}

/* Four steps of period 12, step s at B = 12 s:
 *   gpu  G_s [B, B+6]     after C_{s-1} (the update of the step before)
 *   d2h  D_s [B+4, B+7]
 *   cpu  C_s [B+7, B+12]  after D_s
 * Boundaries (ends of G) 6, 18, 30, 42; warm 2: window [30, 42], one step. */
static void periodic(tl *x, double scale)
{
	memset(x, 0, sizeof *x);
	uint32_t c = UINT32_MAX;
	for (int s = 0; s < 4; s++) {
		double B = 12 * s;
		uint32_t gs = c == UINT32_MAX ? add(x, ZB_RES_GPU, ZB_TASK_GEMM, s, B, B + 6, 0)
					      : add(x, ZB_RES_GPU, ZB_TASK_GEMM, s, B, B + 6, 1, c);
		(void)gs;
		uint32_t d = add(x, ZB_RES_D2H, ZB_TASK_COPY, s, B + 4, B + 7, 0);
		c = add(x, ZB_RES_CPU, ZB_TASK_CPU_ADAM, s, B + 7, B + 12, 1, d);
	}
	for (size_t i = 0; i < x->g.ntasks; i++)
		x->s[i] *= scale, x->e[i] *= scale;
}

static void test_periodic(void **state)
{
	tl x;
	periodic(&x, 1);
	zb_timeline_stats s;
	assert_int_equal(zb_timeline_stats_compute(&x.g, x.s, x.e, -1, &s, NULL), ZB_OK);
	assert_int_equal(s.warm, 2);
	assert_int_equal(s.window_steps, 1);
	assert_close(s.window_lo_s, 30, 1e-15);
	assert_close(s.window_hi_s, 42, 1e-15);
	assert_close(s.step_time_s, 12, 1e-15);
	assert_close(s.busy_s[ZB_RES_GPU], 6, 1e-15);  /* G_3 */
	assert_close(s.busy_s[ZB_RES_D2H], 3, 1e-15);  /* [30,31] of D_2 and [40,42] of D_3 */
	assert_close(s.busy_s[ZB_RES_CPU], 5, 1e-15);  /* C_2 [31,36] */
	/* the same busy figures as the engine's own window */
	double busy[ZB_RES_COUNT];
	zb_busy_window(&x.g, x.s, x.e, 2, busy);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		assert_close(s.busy_s[r], busy[r], 1e-12);
	/* path back from G_3: G_3 waited for C_2, C_2 for D_2, D_2 reaches the window start */
	assert_close(s.crit_s[ZB_RES_GPU], 6, 1e-15);
	assert_close(s.crit_s[ZB_RES_CPU], 5, 1e-15);
	assert_close(s.crit_s[ZB_RES_D2H], 1, 1e-15);
	assert_close(s.crit_wait_s, 0, 1e-15);
	assert_int_equal(s.crit_tasks, 3);
	/* classes of step 3 only (warm 2: steps 3..3) */
	assert_close(s.class_s[ZB_CLASS_GEMM], 6, 1e-15);
	assert_close(s.class_s[ZB_CLASS_D2H], 3, 1e-15);
	assert_close(s.class_s[ZB_CLASS_CPU_ADAM], 5, 1e-15);
	/* hidden: D_3 [40,42] under G_3 [36,42]: 2 of the window's 3 + 5 non-GPU busy */
	assert_close(s.hidden_frac, 2.0 / 8, 1e-15);

	/* a gap on the path is charged to waiting: C_2 starts 1 late after D_2 */
	x.s[8] += 1; /* C_2 is task 3 * 2 + 2: [32, 36] */
	assert_int_equal(zb_timeline_stats_compute(&x.g, x.s, x.e, -1, &s, NULL), ZB_OK);
	assert_close(s.crit_s[ZB_RES_CPU], 4, 1e-15);
	assert_close(s.crit_wait_s, 1, 1e-15);
	double sum = s.crit_wait_s;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		sum += s.crit_s[r];
	assert_close(sum, s.step_time_s, 1e-12);
	tl_free(&x);
}

/* Measured = predicted slowed down 25% everywhere: every error is -20%, fractions
 * and shares do not move. */
static void test_uniform_slowdown(void **state)
{
	tl p, m;
	periodic(&p, 1);
	periodic(&m, 1.25);
	zb_comparison c;
	assert_int_equal(zb_compare_timelines(&p.g, p.s, p.e, m.s, m.e, -1, &c, NULL), ZB_OK);
	assert_close(c.step_err, -0.2, 1e-12);
	assert_close(c.busy_err[ZB_RES_GPU], -0.2, 1e-12);
	assert_close(c.busy_err[ZB_RES_CPU], -0.2, 1e-12);
	assert_true(isnan(c.busy_err[ZB_RES_H2D])); /* nothing measured: no error */
	assert_close(c.class_err[ZB_CLASS_GEMM], -0.2, 1e-12);
	assert_close(c.class_err[ZB_CLASS_CPU_ADAM], -0.2, 1e-12);
	assert_close(c.class_task_mape[ZB_CLASS_CPU_ADAM], 0.2, 1e-12);
	assert_int_equal(c.class_tasks[ZB_CLASS_CPU_ADAM], 1);
	assert_true(isnan(c.class_task_mape[ZB_CLASS_H2D]));
	assert_close(c.hidden_frac_diff, 0, 1e-12);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		assert_close(c.crit_share_diff[r], 0, 1e-12);
	tl_free(&p);
	tl_free(&m);
}

/* Only the CPU is slower than predicted: CPU tasks take 6 instead of 5, the GPU
 * waits for them, so the step grows by 1 (12 -> 13) and the critical path shifts
 * toward the CPU. */
static void test_cpu_slower(void **state)
{
	tl p, m;
	periodic(&p, 1);
	memset(&m, 0, sizeof m);
	uint32_t c = UINT32_MAX;
	for (int s = 0; s < 4; s++) {
		double B = 13 * s;
		if (c == UINT32_MAX)
			add(&m, ZB_RES_GPU, ZB_TASK_GEMM, s, B, B + 6, 0);
		else
			add(&m, ZB_RES_GPU, ZB_TASK_GEMM, s, B, B + 6, 1, c);
		uint32_t d = add(&m, ZB_RES_D2H, ZB_TASK_COPY, s, B + 4, B + 7, 0);
		c = add(&m, ZB_RES_CPU, ZB_TASK_CPU_ADAM, s, B + 7, B + 13, 1, d);
	}
	zb_comparison cmp;
	assert_int_equal(zb_compare_timelines(&p.g, p.s, p.e, m.s, m.e, -1, &cmp, NULL), ZB_OK);
	assert_close(cmp.meas.step_time_s, 13, 1e-12);
	assert_close(cmp.step_err, (12.0 - 13) / 13, 1e-12);
	assert_close(cmp.class_err[ZB_CLASS_CPU_ADAM], (5.0 - 6) / 6, 1e-12);
	assert_close(cmp.class_err[ZB_CLASS_GEMM], 0, 1e-12);
	assert_close(cmp.class_task_mape[ZB_CLASS_GEMM], 0, 1e-12);
	assert_close(cmp.class_task_mape[ZB_CLASS_CPU_ADAM], 1.0 / 6, 1e-12);
	/* measured window [32, 45]; path G_3 [39,45], C_2 [33,39], D_2 [30,33] of which
	 * [32,33] is inside: shares 6/13, 6/13, 1/13 (predicted 6/12, 5/12, 1/12) */
	assert_close(cmp.meas.crit_s[ZB_RES_CPU], 6, 1e-12);
	assert_close(cmp.crit_share_diff[ZB_RES_CPU], 5.0 / 12 - 6.0 / 13, 1e-12);
	assert_close(cmp.crit_share_diff[ZB_RES_GPU], 6.0 / 12 - 6.0 / 13, 1e-12);
	tl_free(&p);
	tl_free(&m);
}

/* Mean, sample sd and standard error, by hand: {1, 2, 3, 4} has mean 2.5, squared
 * deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, sd sqrt(5 / 3), se sd / 2; NaN skipped;
 * fewer than two values: no sd, no se. */
static void test_spread(void **state)
{
	(void)state;
	double v[] = { 1, NAN, 2, 3, 4 };
	zb_spread s = zb_spread_of(v, 5);
	assert_int_equal(s.n, 4);
	assert_close(s.mean, 2.5, 1e-15);
	assert_close(s.sd, sqrt(5.0 / 3), 1e-15);
	assert_close(s.se, sqrt(5.0 / 3) / 2, 1e-15);
	s = zb_spread_of(v, 1);
	assert_int_equal(s.n, 1);
	assert_close(s.mean, 1, 0);
	assert_true(isnan(s.sd) && isnan(s.se));
	s = zb_spread_of(v + 1, 1); /* only a NaN */
	assert_int_equal(s.n, 0);
	assert_true(isnan(s.mean) && isnan(s.sd) && isnan(s.se));
	s = zb_spread_of(NULL, 0);
	assert_true(isnan(s.mean) && isnan(s.se));
	/* a large mean and a small spread: no cancellation (one pass of sum of squares loses it) */
	double w[] = { 1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4 };
	assert_close(zb_spread_of(w, 4).sd, sqrt(5.0 / 3), 1e-12);
	double same[] = { 0.075, 0.075, 0.075 };
	assert_close(zb_spread_of(same, 3).se, 0, 0);
}

/* Rounds weighed by precision, by hand (zb_rounds_mean, floor 1 %):
 * - rounds within the floor weigh the same: the plain mean, and its old standard error
 *   (the larger of sqrt(sum se^2) / n and the rounds' spread);
 * - a 4-thread configuration measured on the H200 machine (stats.h): 282 and 321 ms (se 1.7,
 *   1.9 ms: under the floor of 1 % of their plain mean 352.67), and 455 ms with se 15:
 *   weights 1, 1, (3.5267 / 15)^2;
 * - NaN rounds left out; no floor and no errors: every round the same. */
static void test_rounds_mean(void **state)
{
	(void)state;
	double m[] = { 100, 104 }, se[] = { 0.5, 0.3 }, w[3];
	zb_spread s = zb_rounds_mean(m, se, 2, 0.01, w);
	assert_int_equal(s.n, 2);
	assert_close(s.mean, 102, 1e-12);
	assert_close(w[0], 0.5, 1e-15);
	assert_close(s.se, 2, 1e-12); /* the spread sqrt(ss / (n - 1) / n) = sqrt(8 / 2) */
	/* both above the floor: weights 16/25 and 9/25; their own errors give the mean
	 * sqrt((16/25 * 3)^2 + (9/25 * 4)^2) = 2.4, more than the spread (0.096) */
	double m2[] = { 100, 100.2 }, se2[] = { 3, 4 };
	s = zb_rounds_mean(m2, se2, 2, 0.01, NULL);
	assert_close(s.mean, 100.072, 1e-12);
	assert_close(s.se, 2.4, 1e-12);
	double l[] = { 282, 321, 455 }, lse[] = { 1.7, 1.9, 15 };
	s = zb_rounds_mean(l, lse, 3, 0.01, w);
	double f = 0.01 * (282 + 321 + 455) / 3.0, w3 = f * f / (15 * 15);
	assert_close(s.mean, (282 + 321 + 455 * w3) / (2 + w3), 1e-9);
	assert_true(s.mean < 310); /* the plain mean: 352.7 */
	assert_close(w[0] + w[1] + w[2], 1, 1e-15);
	assert_close(w[2], w3 / (2 + w3), 1e-12);
	double withnan[] = { 282, NAN, 321 }, nse[] = { 1, 50, 1 };
	s = zb_rounds_mean(withnan, nse, 3, 0.01, w);
	assert_int_equal(s.n, 2);
	assert_close(s.mean, 301.5, 1e-12);
	assert_close(w[1], 0, 0);
	s = zb_rounds_mean(l, NULL, 3, 0, w); /* nothing to weigh by */
	assert_close(s.mean, (282 + 321 + 455) / 3.0, 1e-12);
	assert_close(w[2], 1 / 3.0, 1e-15);
	assert_true(s.se > 0);
	s = zb_rounds_mean(l, lse, 1, 0.01, NULL); /* one round: its own */
	assert_close(s.mean, 282, 0);
	assert_close(s.se, 1.7, 1e-15);
	s = zb_rounds_mean(l + 1, NULL, 0, 0.01, NULL);
	assert_int_equal(s.n, 0);
	assert_true(isnan(s.mean) && isnan(s.se));
}

static void test_errors_and_medians(void **state)
{
	assert_close(zb_rel_err(1.1, 1.0), 0.1, 1e-12);
	assert_close(zb_rel_err(0.9, 1.0), -0.1, 1e-12);
	assert_true(isnan(zb_rel_err(1, 0)));
	assert_true(isnan(zb_rel_err(NAN, 1)));
	double p[] = { 1.1, 0.95, 2, 5 }, m[] = { 1, 1, 0, 4 };
	int used;
	assert_close(zb_mape(p, m, 4, &used), (0.1 + 0.05 + 0.25) / 3, 1e-12);
	assert_int_equal(used, 3);
	assert_close(zb_max_abs_err(p, m, 4), 0.25, 1e-12);
	assert_true(isnan(zb_mape(p, m + 2, 1, &used)));
	double v[] = { 3, NAN, 1, 2 };
	assert_close(zb_median(v, 4), 2, 1e-15);
	assert_close(zb_median(v, 3), 2, 1e-15); /* 3, 1 without the NaN: mean of the middle two */
	double w[] = { 4, 1, 3, 2 };
	assert_close(zb_median(w, 4), 2.5, 1e-15);
	/* rank-sum p-values, exact: counted over all C(10, 5) arrangements (by hand in Python) */
	double lo5[] = { 1, 2, 3, 4, 5 }, hi5[] = { 6, 7, 8, 9, 10 }, odd[] = { 1, 3, 5, 7, 9 };
	assert_close(zb_rank_sum_p(lo5, 5, hi5, 5), 2.0 / 252, 1e-12);
	assert_close(zb_rank_sum_p(hi5, 5, lo5, 5), 2.0 / 252, 1e-12);
	double ev[] = { 2, 4, 6, 8, 10 };
	assert_close(zb_rank_sum_p(odd, 5, ev, 5), 174.0 / 252, 1e-12);
	/* DeepSpeed's s3-tf50 against s3-off-param, steps 4-8 of data/deepspeed-h200-table.tsv: U 21 of 25 */
	double tf[] = { 1823, 1900, 1962, 2008, 2096 }, op[] = { 1624, 1819, 1829, 1886, 1938 };
	assert_close(zb_rank_sum_p(tf, 5, op, 5), 24.0 / 252, 1e-12);
	assert_close(zb_rank_sum_p(tf, 5, op, 0), 1, 0);
	/* above ZB_RANK_SUM_EXACT: normal approximation, z = (|U - mn/2| - 1/2) / sd, sd^2 =
	 * mn/12 ((N + 1) - sum(t^3 - t) / (N (N - 1))): 30..59 are on both sides, 30 ties of 2 */
	double big_a[60], big_b[60];
	for (int i = 0; i < 60; i++)
		big_a[i] = i, big_b[i] = i + 30;
	assert_close(zb_rank_sum_p(big_a, 60, big_b, 60) / 1.4065275903970681e-12, 1, 1e-9);
	assert_int_equal(zb_task_class_of(&(zb_task){ .resource = ZB_RES_GPU, .kind = ZB_TASK_KERNEL }),
			 ZB_CLASS_KERNEL);
	assert_string_equal(zb_task_class_name(ZB_CLASS_CPU_ADAM), "cpu_adam");
}

/* A real schedule: compared with itself every error is 0; with CPU Adam tasks 30%
 * longer in place (a measured timeline need not be self-consistent), only the CPU
 * figures move, by exactly that much. */
static void test_simulated_schedule(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	assert_int_equal(zb_preset_model("gpt2", &c.model, NULL), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.5;
	c.policy.micro_batch = 2;
	c.policy.seq = 512;
	c.steps = 5;
	zb_prediction p;
	zb_error err = { 0 };
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.simulated);
	zb_comparison cmp;
	assert_int_equal(zb_compare_timelines(&p.graph, p.res.start, p.res.end, p.res.start, p.res.end, 2, &cmp, &err),
			 ZB_OK);
	assert_close(cmp.step_err, 0, 1e-15);
	assert_close(cmp.pred.step_time_s, zb_step_time_window(&p.graph, p.res.end, 2), 1e-15);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		assert_true(isnan(cmp.busy_err[r]) || fabs(cmp.busy_err[r]) < 1e-15);
	double busy[ZB_RES_COUNT];
	zb_busy_window(&p.graph, p.res.start, p.res.end, 2, busy);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		assert_close(cmp.pred.busy_s[r], busy[r], 1e-9);
	/* every resource of dpu at ratio 0.5 on one GPU is busy (no collectives), and
	 * the path explains the step */
	for (int r = 0; r < ZB_RES_COUNT; r++)
		assert_true(r == ZB_RES_COMM ? cmp.pred.busy_s[r] == 0 : cmp.pred.busy_s[r] > 0);
	double sum = cmp.pred.crit_wait_s;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		sum += cmp.pred.crit_s[r];
	double b[5];
	zb_step_boundaries(&p.graph, p.res.end, b);
	assert_close(sum, (b[4] - b[2]) / 2, 1e-9);
	assert_true(cmp.pred.hidden_frac > 0 && cmp.pred.hidden_frac <= 1);

	double *ms = malloc(p.graph.ntasks * sizeof *ms), *me = malloc(p.graph.ntasks * sizeof *me);
	for (size_t i = 0; i < p.graph.ntasks; i++) {
		ms[i] = p.res.start[i];
		me[i] = p.res.end[i];
		if (p.graph.tasks[i].resource == ZB_RES_CPU)
			me[i] = ms[i] + 1.3 * (me[i] - ms[i]);
	}
	assert_int_equal(zb_compare_timelines(&p.graph, p.res.start, p.res.end, ms, me, 2, &cmp, &err), ZB_OK);
	assert_close(cmp.class_err[ZB_CLASS_CPU_ADAM], 1 / 1.3 - 1, 1e-9);
	assert_close(cmp.class_task_mape[ZB_CLASS_CPU_ADAM], 1 - 1 / 1.3, 1e-9);
	assert_close(cmp.class_err[ZB_CLASS_GEMM], 0, 1e-12);
	assert_close(cmp.class_err[ZB_CLASS_D2H], 0, 1e-12);
	free(ms);
	free(me);
	zb_prediction_free(&p);
}

/* ---- zbench compare -------------------------------------------------------------------- */

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_cli(void **state)
{
	const char *zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	char dir[64], db[128], cmd[1024], out[160], errf[160];
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(db, sizeof db, "%s/zb.db", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(errf, sizeof errf, "%s/err", dir);
	snprintf(cmd, sizeof cmd, "%s predict --model gpt2 --policy dpu --ratio 0.5 --micro-batch 2 --seq 512 --steps 5 "
				  "--timeline --db %s >/dev/null",
		 zbench, db);
	assert_int_equal(sh(cmd), 0);
	/* no measured events yet: compare says so (exit 2, one line) */
	snprintf(cmd, sizeof cmd, "%s compare 1 --db %s >%s 2>%s", zbench, db, out, errf);
	assert_int_equal(sh(cmd), 2);
	char *e = zb_test_slurp(errf, NULL);
	assert_non_null(strstr(e, "measured"));
	free(e);
	/* "measured": the prediction 10% slower */
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
				      "INSERT INTO events(config_id, source, task_id, start_ns, end_ns) "
				      "SELECT config_id, 'measured', task_id, start_ns * 11 / 10, end_ns * 11 / 10 "
				      "FROM events WHERE source = 'predicted'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(h);

	snprintf(cmd, sizeof cmd, "%s compare 1 --warmup 2 --json --db %s >%s 2>%s", zbench, db, out, errf);
	int rc = sh(cmd);
	char *o = zb_test_slurp(out, NULL);
	if (rc) {
		e = zb_test_slurp(errf, NULL);
		print_error("compare failed (%d): %s\n", rc, e);
		free(e);
	}
	assert_int_equal(rc, 0);
	json_error_t je;
	json_t *j = json_loads(o, 0, &je);
	if (!j)
		print_error("not JSON: %s\n", o);
	assert_non_null(j);
	json_t *cfg = json_array_get(json_object_get(j, "configs"), 0);
	assert_non_null(cfg);
	json_t *step = json_object_get(cfg, "step_time_s");
	assert_close(json_number_value(json_object_get(step, "error")), 1 / 1.1 - 1, 1e-4);
	json_t *cls = json_object_get(cfg, "classes");
	assert_close(json_number_value(json_object_get(json_object_get(cls, "gemm"), "error")), 1 / 1.1 - 1, 1e-4);
	json_t *busy = json_object_get(cfg, "busy_s");
	assert_close(json_number_value(json_object_get(json_object_get(busy, "cpu"), "error")), 1 / 1.1 - 1, 1e-4);
	assert_non_null(json_object_get(cfg, "critical_path"));
	assert_non_null(json_object_get(cfg, "overlap"));
	json_decref(j);
	free(o);

	/* the table for people: the default is the newest config with measured events */
	snprintf(cmd, sizeof cmd, "%s compare --db %s >%s 2>%s", zbench, db, out, errf);
	assert_int_equal(sh(cmd), 0);
	o = zb_test_slurp(out, NULL);
	assert_non_null(strstr(o, "step"));
	assert_non_null(strstr(o, "cpu_adam"));
	assert_non_null(strstr(o, "critical path"));
	assert_non_null(strstr(o, "-9.1"));
	free(o);

	/* bad input: unknown run, junk id */
	snprintf(cmd, sizeof cmd, "%s compare 99 --db %s >%s 2>%s", zbench, db, out, errf);
	assert_int_equal(sh(cmd), 2);
	snprintf(cmd, sizeof cmd, "%s compare x1 --db %s >%s 2>%s", zbench, db, out, errf);
	assert_int_equal(sh(cmd), 2);
	e = zb_test_slurp(errf, NULL);
	assert_non_null(strstr(e, "x1"));
	free(e);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	sh(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_step),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_uniform_slowdown),
		cmocka_unit_test(test_cpu_slower),
		cmocka_unit_test(test_errors_and_medians),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_rounds_mean),
		cmocka_unit_test(test_simulated_schedule),
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
