/*
 * engine.c - the discrete-event loop; see engine.h.
 *
 * Each resource runs its tasks one at a time in id order (a CUDA stream, a copy
 * stream, the CPU pool's queue): a task starts when it is at the head of its
 * resource's queue, the resource is idle, and all its dependencies have finished.
 * A running task is a flow (resources.h). The only event is a flow finishing;
 * whenever the set of running flows changes, every flow's rate is recomputed and
 * the flows whose rate changed get a new completion event. Old events are left in
 * the heap and skipped by their version number, which is cheaper than deleting
 * from the middle of a heap.
 *
 * Cost: O(E log E) for E events, with at most ZB_RES_COUNT flows running at once.
 */
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/event_queue.h"
#include "sim/resources.h"
#include "sim/summary.h"

#define NONE UINT32_MAX

typedef struct flow {
	uint32_t task;     /* NONE when the resource is idle */
	double fixed_left; /* seconds of fixed cost still to go */
	double work_left;  /* work still to drain */
	double rate;       /* work per second now */
	double t_last;     /* time fixed_left / work_left were last brought up to date */
	uint32_t version;
} flow;

typedef struct sim {
	const zb_graph *g;
	const zb_config *c;
	zb_sim_result *r;
	uint32_t *waiting;     /* unfinished dependencies per task */
	uint32_t *succ_begin;  /* CSR of dependents */
	uint32_t *succ;
	uint32_t *order[ZB_RES_COUNT]; /* task ids of each resource, in id order */
	size_t count[ZB_RES_COUNT], head[ZB_RES_COUNT];
	flow flows[ZB_RES_COUNT];
	zb_event_queue q;
	double now;
} sim;

static void advance(flow *f, double now)
{
	double dt = now - f->t_last;
	if (dt > 0) {
		if (f->fixed_left >= dt) {
			f->fixed_left -= dt;
		} else {
			f->work_left -= (dt - f->fixed_left) * f->rate;
			f->fixed_left = 0;
			if (f->work_left < 0)
				f->work_left = 0;
		}
	}
	f->t_last = now;
}

/* Start every task that can start now; returns whether any did. */
static int start_ready(sim *s)
{
	int started = 0;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		flow *f = &s->flows[res];
		if (f->task != NONE || s->head[res] == s->count[res])
			continue;
		uint32_t id = s->order[res][s->head[res]];
		if (s->waiting[id])
			continue;
		zb_task_flow(&s->g->tasks[id], s->c, &f->fixed_left, &f->work_left);
		f->task = id;
		f->rate = -1; /* forces a completion event below */
		f->t_last = s->now;
		s->r->start[id] = s->now;
		started = 1;
	}
	return started;
}

/* Recompute rates and (re)schedule the completion of flows whose rate changed. */
static void reschedule(sim *s)
{
	const zb_task *active[ZB_RES_COUNT];
	double rate[ZB_RES_COUNT];
	for (int res = 0; res < ZB_RES_COUNT; res++)
		active[res] = s->flows[res].task == NONE ? NULL : &s->g->tasks[s->flows[res].task];
	zb_resource_rates(s->c, active, rate);
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		flow *f = &s->flows[res];
		if (f->task == NONE || f->rate == rate[res])
			continue;
		f->rate = rate[res];
		f->version++;
		double done = s->now + f->fixed_left + (f->work_left > 0 ? f->work_left / f->rate : 0);
		zb_eq_push(&s->q, done, f->task, f->version);
	}
}

static void finish(sim *s, int res)
{
	flow *f = &s->flows[res];
	uint32_t id = f->task;
	s->r->end[id] = s->now;
	f->task = NONE;
	s->head[res]++;
	for (uint32_t i = s->succ_begin[id]; i < s->succ_begin[id + 1]; i++)
		s->waiting[s->succ[i]]--;
}

static void build_index(sim *s)
{
	const zb_graph *g = s->g;
	size_t n = g->ntasks;
	s->waiting = zb_xmalloc(n * sizeof *s->waiting);
	s->succ_begin = zb_xcalloc(n + 1, sizeof *s->succ_begin);
	s->succ = zb_xmalloc((g->ndeps ? g->ndeps : 1) * sizeof *s->succ);
	for (size_t i = 0; i < n; i++) {
		const zb_task *t = &g->tasks[i];
		s->waiting[i] = t->dep_count;
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			s->succ_begin[d[j] + 1]++;
		s->count[t->resource]++;
	}
	for (size_t i = 0; i < n; i++)
		s->succ_begin[i + 1] += s->succ_begin[i];
	uint32_t *fill = zb_xmalloc((n + 1) * sizeof *fill);
	memcpy(fill, s->succ_begin, (n + 1) * sizeof *fill);
	for (size_t i = 0; i < n; i++) {
		const zb_task *t = &g->tasks[i];
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			s->succ[fill[d[j]]++] = (uint32_t)i;
	}
	free(fill);
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		s->order[res] = zb_xmalloc((s->count[res] ? s->count[res] : 1) * sizeof(uint32_t));
		s->count[res] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		int res = g->tasks[i].resource;
		s->order[res][s->count[res]++] = (uint32_t)i;
	}
}

/* Step s ends when its last GPU compute task ends: every step's boundary is then
 * the same kind of point, including the last one (a delayed parameter upload of
 * the last step has no next step to wait for, so ending steps at their last task
 * would make the last step look short). The first steps fill the pipeline (dpu
 * lets the GPU run up to two steps ahead of the CPU), so the steady state is
 * measured from the end of step `warm` to the end of the last step.
 *
 * GPU boundaries alone are not enough: with dpu and a CPU slower than the GPU, the
 * GPU spends the first steps using up its slack (the CPU falls further behind
 * each step until step s+2 has to wait for step s's update), and a short run
 * would report the GPU's pace, which cannot be sustained (gpt2-large, gen4, dpu,
 * ratio 0.6: 95 ms per step over 6 steps although the CPU's work alone is 106 ms
 * per step; the steady state is 108 ms). So the step time is the slowest pace of
 * any resource, each measured between the ends of its last tasks of two steps.
 * The other resources are measured one step earlier, up to the end of step N-2:
 * the last step's optimizer work is not steady (the final delayed uploads have
 * no next step to wait for and contend with the last CPU updates). Measured that
 * way against the pace of steps 50..99 of a 100-step run, over gpt2-large and
 * gpt2-xl x gen3..gen6 x every policy x ratios 0..1 x gas 1, 2, a 6-step run is
 * within 0.3% (the GPU alone: up to 12% fast, 7 of 304 below the busiest
 * resource's work). */
static int warm_steps(int steps) { return steps >= 4 ? 2 : steps - 2 > 0 ? steps - 2 : 0; }

static double *step_ends(const zb_graph *g, const double *end)
{
	double *b = zb_xcalloc((size_t)g->steps, sizeof *b);
	for (size_t i = 0; i < g->ntasks; i++) {
		int s = g->tasks[i].step;
		if (g->tasks[i].resource == ZB_RES_GPU && s >= 0 && s < g->steps && end[i] > b[s])
			b[s] = end[i];
	}
	return b;
}

void zb_step_boundaries(const zb_graph *g, const double *end, double *out)
{
	double *b = step_ends(g, end);
	memcpy(out, b, (size_t)g->steps * sizeof *out);
	free(b);
}

double zb_step_time_window(const zb_graph *g, const double *end, int warm)
{
	if (g->steps < 1 || g->ntasks == 0)
		return 0;
	if (warm > g->steps - 2)
		warm = g->steps - 2;
	if (warm < 0)
		warm = 0;
	double *b = step_ends(g, end);
	double step = g->steps == 1 ? b[0] : (b[g->steps - 1] - b[warm]) / (g->steps - 1 - warm);
	free(b);
	/* the other resources' pace from step `first` to step N-2 (see above) */
	int last = g->steps - 2, first = warm < last - 1 ? warm : last - 1;
	if (first < 0)
		return step;
	double lo[ZB_RES_COUNT], hi[ZB_RES_COUNT];
	for (int res = 0; res < ZB_RES_COUNT; res++)
		lo[res] = hi[res] = -1;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step == first && end[i] > lo[t->resource])
			lo[t->resource] = end[i];
		if (t->step == last && end[i] > hi[t->resource])
			hi[t->resource] = end[i];
	}
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (res == ZB_RES_GPU || lo[res] < 0 || hi[res] < 0)
			continue; /* no task of this resource in one of the two steps (or not run) */
		double pace = (hi[res] - lo[res]) / (last - first);
		if (pace > step)
			step = pace;
	}
	return step;
}

double zb_steady_step_time(const zb_graph *g, const double *end)
{
	return zb_step_time_window(g, end, warm_steps(g->steps));
}

void zb_busy_window(const zb_graph *g, const double *start, const double *end, int warm,
		    double busy[ZB_RES_COUNT])
{
	int N = g->steps;
	double lo = 0, hi = 0;
	int per = 1;
	for (int res = 0; res < ZB_RES_COUNT; res++)
		busy[res] = 0;
	if (N > 1) {
		double *b = step_ends(g, end);
		int w = warm < 0 ? warm_steps(N) : warm > N - 2 ? N - 2 : warm;
		lo = b[w];
		hi = b[N - 1];
		per = N - 1 - w;
		free(b);
	} else {
		for (size_t i = 0; i < g->ntasks; i++)
			if (end[i] > hi)
				hi = end[i];
	}
	for (size_t i = 0; i < g->ntasks; i++) {
		if (start[i] < 0)
			continue; /* not run */
		double a = start[i] > lo ? start[i] : lo;
		double e = end[i] < hi ? end[i] : hi;
		if (e > a)
			busy[g->tasks[i].resource] += (e - a) / per;
	}
}

static void summarize(sim *s)
{
	const zb_graph *g = s->g;
	zb_sim_result *r = s->r;
	int N = g->steps;
	zb_step_summary sum;
	zb_step_summarize(g, r->start, r->end, &sum);
	r->step_time_s = sum.step_time_s;
	r->tokens_per_s = sum.tokens_per_s;
	r->tflops_per_gpu = sum.tflops_per_gpu;
	memcpy(r->busy_s, sum.busy_s, sizeof r->busy_s);
	/* each task's time alone: the contention-free rate of its resource is the
	 * same for every task, so compute it once per resource */
	double alone_rate[ZB_RES_COUNT];
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		const zb_task *active[ZB_RES_COUNT] = { 0 };
		double rate[ZB_RES_COUNT];
		zb_task probe = { .resource = (uint8_t)res };
		active[res] = &probe;
		zb_resource_rates(s->c, active, rate);
		alone_rate[res] = rate[res];
	}
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		double fixed, work;
		zb_task_flow(t, s->c, &fixed, &work);
		r->work_s[t->resource] += (fixed + (work > 0 ? work / alone_rate[t->resource] : 0)) / N;
	}
	r->lower_bound_s = 0;
	r->bottleneck = ZB_RES_GPU;
	r->bound_resource = ZB_RES_GPU;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (r->work_s[res] > r->lower_bound_s) {
			r->lower_bound_s = r->work_s[res];
			r->bound_resource = (zb_resource)res;
		}
		if (r->busy_s[res] > r->busy_s[r->bottleneck])
			r->bottleneck = (zb_resource)res;
	}
}

zb_status zb_simulate(const zb_graph *g, const zb_config *c, zb_sim_result *r, zb_error *err)
{
	memset(r, 0, sizeof *r);
	r->ntasks = g->ntasks;
	r->start = zb_xcalloc(g->ntasks, sizeof *r->start);
	r->end = zb_xcalloc(g->ntasks, sizeof *r->end);

	sim s;
	memset(&s, 0, sizeof s);
	s.g = g;
	s.c = c;
	s.r = r;
	build_index(&s);
	for (int res = 0; res < ZB_RES_COUNT; res++)
		s.flows[res].task = NONE;
	zb_eq_init(&s.q, 64);

	size_t done = 0;
	if (start_ready(&s))
		reschedule(&s);
	while (zb_eq_size(&s.q)) {
		zb_event e = zb_eq_pop(&s.q);
		r->events++;
		int res = g->tasks[e.task].resource;
		flow *f = &s.flows[res];
		if (f->task != e.task || f->version != e.version)
			continue; /* superseded by a rate change */
		s.now = e.time;
		for (int i = 0; i < ZB_RES_COUNT; i++)
			if (s.flows[i].task != NONE)
				advance(&s.flows[i], s.now);
		finish(&s, res);
		done++;
		start_ready(&s);
		reschedule(&s);
	}
	r->total_s = s.now;

	zb_status st = ZB_OK;
	if (done != g->ntasks)
		st = zb_fail(err, ZB_E_INTERNAL, "simulation stalled after %zu of %zu tasks", done, g->ntasks);
	else
		summarize(&s);

	zb_eq_free(&s.q);
	free(s.waiting);
	free(s.succ_begin);
	free(s.succ);
	for (int res = 0; res < ZB_RES_COUNT; res++)
		free(s.order[res]);
	if (st)
		zb_sim_result_free(r);
	return st;
}

void zb_sim_result_free(zb_sim_result *r)
{
	free(r->start);
	free(r->end);
	r->start = r->end = NULL;
}
