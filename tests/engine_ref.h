/*
 * engine_ref.h - the event loop as it was before the tabulated engine (a binary
 * heap with stale events, rates recomputed from the resource models at every
 * change, per-task work computed when a task starts): kept in the tests as the
 * reference the engine must reproduce bit for bit (tests/test_engine_identity.c).
 * Included by that one test program only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/event_queue.h"
#include "sim/resources.h"

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


static void summarize(sim *s)
{
	const zb_graph *g = s->g;
	zb_sim_result *r = s->r;
	int N = g->steps;
	r->step_time_s = zb_steady_step_time(g, r->end);
	r->tokens_per_s = r->step_time_s > 0 ? g->tokens_per_step / r->step_time_s : 0;
	r->tflops_per_gpu = r->step_time_s > 0 ? g->model_flops_per_step / r->step_time_s / 1e12 : 0;

	zb_busy_window(g, r->start, r->end, -1, r->busy_s);
	/* each task's time alone: the contention-free rate of its resource for that
	 * task (the CPU's rate depends on whether it runs Adam, H2D's on pageable) */
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		const zb_task *active[ZB_RES_COUNT] = { 0 };
		double rate[ZB_RES_COUNT], fixed, work;
		active[t->resource] = t;
		zb_resource_rates(s->c, active, rate);
		zb_task_flow(t, s->c, &fixed, &work);
		r->work_s[t->resource] += (fixed + (work > 0 ? work / rate[t->resource] : 0)) / N;
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

static zb_status ref_simulate(const zb_graph *g, const zb_config *c, zb_sim_result *r, zb_error *err)
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

