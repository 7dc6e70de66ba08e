/* compare.c - timeline summaries and predicted-vs-measured errors; see compare.h.
 *
 * Cost: one sort of 2 x tasks interval ends (the sweep), one pass for the classes,
 * and a walk of the critical path that visits each task at most once: O(T log T).
 */
#include "analysis/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"

zb_task_class zb_task_class_of(const zb_task *t)
{
	switch (t->resource) {
	case ZB_RES_D2H: return ZB_CLASS_D2H;
	case ZB_RES_H2D: return ZB_CLASS_H2D;
	case ZB_RES_CPU: return ZB_CLASS_CPU_ADAM;
	case ZB_RES_GPU_OPT: return ZB_CLASS_GPU_ADAM;
	default: return t->kind == ZB_TASK_GEMM ? ZB_CLASS_GEMM : ZB_CLASS_KERNEL;
	}
}

const char *zb_task_class_name(zb_task_class c)
{
	static const char *const n[ZB_CLASS_COUNT] = { "gemm", "kernel", "copy_d2h", "copy_h2d", "cpu_adam", "gpu_adam" };
	return c >= 0 && c < ZB_CLASS_COUNT ? n[c] : "?";
}

int zb_default_warm(int steps) { return steps >= 4 ? 2 : steps - 2 > 0 ? steps - 2 : 0; }

static int ran(const double *start, const double *end, size_t i)
{
	return isfinite(start[i]) && isfinite(end[i]) && start[i] >= 0 && end[i] >= start[i];
}

double zb_rel_err(double pred, double meas)
{
	if (!isfinite(pred) || !isfinite(meas) || !(meas > 0))
		return NAN;
	return (pred - meas) / meas;
}

double zb_mape(const double *pred, const double *meas, int n, int *used)
{
	double s = 0;
	int k = 0;
	for (int i = 0; i < n; i++) {
		double e = zb_rel_err(pred[i], meas[i]);
		if (isnan(e))
			continue;
		s += fabs(e);
		k++;
	}
	if (used)
		*used = k;
	return k ? s / k : NAN;
}

double zb_max_abs_err(const double *pred, const double *meas, int n)
{
	double m = NAN;
	for (int i = 0; i < n; i++) {
		double e = fabs(zb_rel_err(pred[i], meas[i]));
		if (!isnan(e) && (isnan(m) || e > m))
			m = e;
	}
	return m;
}

/* ---- one timeline ------------------------------------------------------------------ */

typedef struct edge {
	double t;
	int res;
	int delta; /* +1 start, -1 end */
} edge;

static int cmp_edge(const void *a, const void *b)
{
	const edge *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Busy, union, overlap and hidden time inside [lo, hi] (totals, not per step). */
static void sweep(const zb_graph *g, const double *start, const double *end, double lo, double hi,
		  zb_timeline_stats *o)
{
	edge *e = zb_xmalloc((2 * g->ntasks + 1) * sizeof *e);
	size_t n = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		if (!ran(start, end, i))
			continue;
		double a = start[i] > lo ? start[i] : lo, b = end[i] < hi ? end[i] : hi;
		if (b <= a)
			continue;
		e[n++] = (edge){ a, g->tasks[i].resource, +1 };
		e[n++] = (edge){ b, g->tasks[i].resource, -1 };
	}
	qsort(e, n, sizeof *e, cmp_edge);
	int active[ZB_RES_COUNT] = { 0 };
	for (size_t i = 0; i < n;) {
		double t = e[i].t;
		while (i < n && e[i].t == t) {
			active[e[i].res] += e[i].delta;
			i++;
		}
		if (i == n)
			break;
		double dt = e[i].t - t;
		int any = 0, others = 0, gpu = active[ZB_RES_GPU] > 0;
		for (int r = 0; r < ZB_RES_COUNT; r++) {
			if (active[r] <= 0)
				continue;
			any = 1;
			o->busy_s[r] += dt;
			if (r != ZB_RES_GPU) {
				others = 1;
				if (gpu)
					o->hidden_s[r] += dt;
			}
		}
		if (gpu && others)
			o->hidden_s[ZB_RES_GPU] += dt;
		if (any)
			o->union_s += dt;
	}
	free(e);
}

/* The critical path back from task `last`, charged inside [lo, hi] (totals). */
static void critical_path(const zb_graph *g, const double *start, const double *end, size_t last, double lo,
			  double hi, zb_timeline_stats *o)
{
	/* the task before each one on its resource */
	int64_t *prev = zb_xmalloc(g->ntasks * sizeof *prev);
	int64_t tail[ZB_RES_COUNT];
	for (int r = 0; r < ZB_RES_COUNT; r++)
		tail[r] = -1;
	for (size_t i = 0; i < g->ntasks; i++) {
		prev[i] = tail[g->tasks[i].resource];
		tail[g->tasks[i].resource] = (int64_t)i;
	}
	int64_t cur = (int64_t)last;
	while (cur >= 0) {
		const zb_task *t = &g->tasks[cur];
		int64_t p = -1;
		double pe = -INFINITY;
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			if (ran(start, end, d[j]) && end[d[j]] > pe)
				pe = end[d[j]], p = d[j];
		if (prev[cur] >= 0 && ran(start, end, (size_t)prev[cur]) && end[prev[cur]] > pe)
			pe = end[prev[cur]], p = prev[cur];
		double a = start[cur] > pe ? start[cur] : pe;
		double ca = a > lo ? a : lo, cb = end[cur] < hi ? end[cur] : hi;
		if (cb > ca)
			o->crit_s[t->resource] += cb - ca;
		if (end[cur] > lo)
			o->crit_tasks++;
		/* the gap between the predecessor's end and this task's start */
		double ga = pe > lo ? pe : lo, gb = start[cur] < hi ? start[cur] : hi;
		if (gb > ga)
			o->crit_wait_s += gb - ga;
		if (p < 0 || pe <= lo)
			break;
		cur = p;
	}
	free(prev);
}

zb_status zb_timeline_stats_compute(const zb_graph *g, const double *start, const double *end, int warm,
				    zb_timeline_stats *o, zb_error *err)
{
	memset(o, 0, sizeof *o);
	int N = g->steps;
	for (size_t i = 0; i < g->ntasks; i++)
		o->tasks_run += ran(start, end, i);
	if (N < 1 || o->tasks_run == 0)
		return zb_fail(err, ZB_E_INPUT, "no task of the timeline ran (%zu tasks, %d steps)", g->ntasks, N);
	int w = warm < 0 ? zb_default_warm(N) : warm;
	if (w > N - 2)
		w = N - 2;
	if (w < 0)
		w = 0;
	o->warm = w;
	double lo = 0, hi = 0;
	if (N > 1) {
		double *b = zb_xmalloc((size_t)N * sizeof *b);
		zb_step_boundaries(g, end, b);
		lo = b[w];
		hi = b[N - 1];
		free(b);
		o->window_steps = N - 1 - w;
	} else {
		for (size_t i = 0; i < g->ntasks; i++)
			if (ran(start, end, i) && end[i] > hi)
				hi = end[i];
		o->window_steps = 1;
	}
	o->window_lo_s = lo;
	o->window_hi_s = hi;
	o->step_time_s = zb_step_time_window(g, end, w);
	double per = o->window_steps;

	sweep(g, start, end, lo, hi, o);

	/* the end of the last step: its last GPU compute task */
	int64_t last = -1;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->resource == ZB_RES_GPU && t->step == N - 1 && ran(start, end, i) && (last < 0 || end[i] > end[last]))
			last = (int64_t)i;
	}
	if (last >= 0)
		critical_path(g, start, end, (size_t)last, lo, hi, o);

	/* classes: steps after the warm-up, as many as the window holds */
	int first = N > 1 ? w + 1 : 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step < first || t->step >= N || !ran(start, end, i))
			continue;
		zb_task_class c = zb_task_class_of(t);
		o->class_s[c] += end[i] - start[i];
		o->class_n[c]++;
	}

	double busy_other = 0, hidden_other = 0, busy_sum = 0;
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		busy_sum += o->busy_s[r];
		if (r != ZB_RES_GPU) {
			busy_other += o->busy_s[r];
			hidden_other += o->hidden_s[r];
		}
	}
	o->overlap_s = busy_sum - o->union_s;
	o->hidden_frac = busy_other > 0 ? hidden_other / busy_other : 0;
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		o->busy_s[r] /= per;
		o->hidden_s[r] /= per;
		o->crit_s[r] /= per;
	}
	o->union_s /= per;
	o->overlap_s /= per;
	o->crit_wait_s /= per;
	for (int c = 0; c < ZB_CLASS_COUNT; c++)
		o->class_s[c] /= per;
	return ZB_OK;
}

/* ---- both ------------------------------------------------------------------------------ */

static void crit_shares(const zb_timeline_stats *s, double share[ZB_RES_COUNT])
{
	double tot = s->crit_wait_s;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		tot += s->crit_s[r];
	for (int r = 0; r < ZB_RES_COUNT; r++)
		share[r] = tot > 0 ? s->crit_s[r] / tot : 0;
}

zb_status zb_compare_timelines(const zb_graph *g, const double *ps, const double *pe, const double *ms,
			       const double *me, int warm, zb_comparison *o, zb_error *err)
{
	memset(o, 0, sizeof *o);
	zb_status st = zb_timeline_stats_compute(g, ps, pe, warm, &o->pred, err);
	if (!st)
		st = zb_timeline_stats_compute(g, ms, me, warm, &o->meas, err);
	if (st)
		return st;
	o->step_err = zb_rel_err(o->pred.step_time_s, o->meas.step_time_s);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		o->busy_err[r] = zb_rel_err(o->pred.busy_s[r], o->meas.busy_s[r]);
	for (int c = 0; c < ZB_CLASS_COUNT; c++)
		o->class_err[c] = zb_rel_err(o->pred.class_s[c], o->meas.class_s[c]);
	o->hidden_frac_diff = o->pred.hidden_frac - o->meas.hidden_frac;
	double sp[ZB_RES_COUNT], sm[ZB_RES_COUNT];
	crit_shares(&o->pred, sp);
	crit_shares(&o->meas, sm);
	for (int r = 0; r < ZB_RES_COUNT; r++)
		o->crit_share_diff[r] = sp[r] - sm[r];

	/* task by task, same steps as the class totals (the measured warm-up decides) */
	int N = g->steps, first = N > 1 ? o->meas.warm + 1 : 0;
	double sum[ZB_CLASS_COUNT] = { 0 };
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step < first || t->step >= N || !ran(ps, pe, i) || !ran(ms, me, i))
			continue;
		double e = zb_rel_err(pe[i] - ps[i], me[i] - ms[i]);
		if (isnan(e))
			continue;
		zb_task_class c = zb_task_class_of(t);
		sum[c] += fabs(e);
		o->class_tasks[c]++;
	}
	for (int c = 0; c < ZB_CLASS_COUNT; c++)
		o->class_task_mape[c] = o->class_tasks[c] ? sum[c] / o->class_tasks[c] : NAN;
	return ZB_OK;
}
