/*
 * bench_sim.c - simulator benchmarks: engine events per second on one core, and
 * the time of the default sweep grid (issue target: >= 5 M events/s, and
 * `zbench sweep --pcie gen4` under one second on the 2-core development machine).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cases.h"
#include "sim/predict.h"
#include "inputs/presets.h"

/* CPU time of the calling thread: what a run costs when other processes share the cores. */
static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void base_config(zb_config *c, const char *model, const char *policy, double ratio, int steps)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_preset_model(model, &c->model, &err);
	zb_policy_defaults(&c->policy);
	zb_policy_parse(policy, &c->policy.kind, &err);
	c->policy.ratio = ratio;
	c->steps = steps;
}

/* Engine alone (graph built once, outside the timing), on a graph large enough
 * that the run takes tens of milliseconds: llama2-7b, dpu, ratio 0.5, small
 * buckets so the copy channels contend. Timed two ways: as a sweep runs it (the
 * graph's index and a scratch built once, reused by every simulation; no memo),
 * which is the events/s figure, and cold through zb_simulate (index, scratch and
 * per-task work built inside the timing). */
static zb_status run_engine(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	zb_config c;
	base_config(&c, "llama2-7b", "dpu", 0.5, a->quick ? 4 : 24);
	c.policy.bucket_params = 5000000;
	c.policy.micro_batch = 1;
	c.policy.gas = 2;
	zb_graph g;
	zb_status st = zb_graph_build(&g, &c, err);
	if (st)
		return st;
	int reps = a->repeats > 0 ? a->repeats : 7;
	double *t = zb_xmalloc((size_t)reps * sizeof *t), *cold = zb_xmalloc((size_t)reps * sizeof *cold);
	double *cpu = zb_xmalloc((size_t)reps * sizeof *cpu);
	uint64_t events = 0;
	zb_sim_index *ix = zb_sim_index_new(&g);
	zb_sim_scratch *w = zb_sim_scratch_new();
	/* the warm runs one after another, as a sweep's simulations of one graph run
	 * (a cold run in between, with its fresh allocations, evicts the scratch from
	 * the caches: 15-20% slower warm runs, which no sweep sees) */
	for (int i = 0; i < reps && !st; i++) {
		zb_sim_result r;
		double t0 = zb_wall_s(), c0 = thread_cpu_s();
		if ((st = zb_simulate_indexed(ix, w, &c, &r, err)))
			break;
		t[i] = zb_wall_s() - t0;
		cpu[i] = thread_cpu_s() - c0;
		events = r.events;
	}
	for (int i = 0; i < reps && !st; i++) {
		zb_sim_result r;
		double t0 = zb_wall_s();
		if ((st = zb_simulate(&g, &c, &r, err)))
			break;
		cold[i] = zb_wall_s() - t0;
		zb_sim_result_free(&r);
	}
	if (!st) {
		double med = zb_median(t, reps), med_cold = zb_median(cold, reps), med_cpu = zb_median(cpu, reps);
		fprintf(out, "%-12s %10zu tasks %10llu events %9.2f ms %8.2f M events/s (median of %d; CPU time"
			" %.2f ms, %.2f M events per CPU-second; cold zb_simulate %.2f ms, %.2f M events/s)\n",
			"sim-engine", g.ntasks, (unsigned long long)events, med * 1e3, events / med / 1e6, reps,
			med_cpu * 1e3, events / med_cpu / 1e6, med_cold * 1e3, events / med_cold / 1e6);
		json_object_set_new(res, "cpu_seconds", json_real(med_cpu));
		json_object_set_new(res, "tasks", json_integer((json_int_t)g.ntasks));
		json_object_set_new(res, "events", json_integer((json_int_t)events));
		json_object_set_new(res, "seconds", json_real(med));
		json_object_set_new(res, "events_per_s", json_real(events / med));
		json_object_set_new(res, "cold_seconds", json_real(med_cold));
		json_object_set_new(res, "cold_events_per_s", json_real(events / med_cold));
	}
	zb_sim_scratch_free(w);
	zb_sim_index_free(ix);
	free(t);
	free(cold);
	free(cpu);
	zb_graph_free(&g);
	return st;
}

/* The default sweep grid (what `zbench sweep --pcie gen4` predicts), schedule and
 * simulation included, database and printing excluded. */
static zb_status run_sweep(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	static const char *policies[] = { "none", "offload", "overlap", "dpu" };
	int reps = a->repeats > 0 ? a->repeats : 5;
	double *t = zb_xmalloc((size_t)reps * sizeof *t);
	int n = 0;
	zb_status st = ZB_OK;
	for (int i = 0; i < reps && !st; i++) {
		double t0 = zb_wall_s();
		n = 0;
		for (int p = 0; p < 4 && !st; p++) {
			for (int r = 0; r <= 4 && !st; r++) {
				if (p == 0 && r > 0)
					continue;
				zb_config c;
				base_config(&c, "gpt2-large", policies[p], r * 0.25, 6);
				zb_preset_link("gen4", &c.hw.link, err);
				zb_prediction pr;
				if ((st = zb_predict(&pr, &c, err)))
					break;
				zb_prediction_free(&pr);
				n++;
			}
		}
		t[i] = zb_wall_s() - t0;
	}
	if (!st) {
		double med = zb_median(t, reps);
		fprintf(out, "%-12s %10d configs %9.2f ms %8.1f configs/s (median of %d)\n", "sim-sweep", n,
			med * 1e3, n / med, reps);
		json_object_set_new(res, "configs", json_integer(n));
		json_object_set_new(res, "seconds", json_real(med));
		json_object_set_new(res, "configs_per_s", json_real(n / med));
	}
	free(t);
	return st;
}

const zb_bench_case zb_bench_sim_cases[] = {
	{ "sim-engine", "sim", "discrete-event engine: events per second on one core", NULL, run_engine },
	{ "sim-sweep", "sim", "default sweep grid on gen4: configurations per second", NULL, run_sweep },
	{ 0 },
};
