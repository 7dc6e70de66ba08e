/* kfit_adam.c - adam_mem from the CPU Adam of runs on several ranks; see kfit_adam.h. */
#include "analysis/kfit_adam.h"

#include <math.h>
#include <stdlib.h>

#include "sim/kernels.h"


typedef struct ctx {
	const zb_kfit_set *s;
	const unsigned char *use;
	zb_hw hw;
	zb_error *err;
	zb_status st;
	int n;
} ctx;

static int counts(const zb_kfit_item *x) { return x->g.ranks > 1 && x->meas_busy_s[ZB_RES_CPU] > 0; }

static double cpu_busy(ctx *q, int k)
{
	return zb_kfit_predicted_busy(q->s, k, &q->hw, ZB_RES_CPU, &q->st, q->err);
}

static double cost_at(ctx *q, double v)
{
	q->hw.gpu.exec.adam_mem = v;
	double sum = 0;
	q->n = 0;
	for (int k = 0; k < q->s->n && !q->st; k++) {
		const zb_kfit_item *x = &q->s->it[k];
		if ((q->use && !q->use[k]) || !counts(x))
			continue;
		double b = cpu_busy(q, k);
		if (!(b > 0))
			continue;
		double e = log(b / x->meas_busy_s[ZB_RES_CPU]);
		sum += e * e;
		q->n++;
	}
	return q->st || !q->n ? INFINITY : sum / q->n;
}

zb_status zb_kfit_adam_mem(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_adam_stats *stats,
			   zb_error *err)
{
	ctx q = { .s = s, .use = use, .hw = *hw, .err = err };
	*stats = (zb_kfit_adam_stats){ 0 };
	stats->rms = NAN;
	double v0 = hw->gpu.exec.adam_mem;
	if (!(v0 > 0) || !(hw->gpu.exec.adam_thread > 0)) /* the CPU model, not the curve: nothing to scale */
		return ZB_OK;
	double c0 = cost_at(&q, v0);
	if (q.st || !isfinite(c0))
		return q.st;
	const double g = (sqrt(5) - 1) / 2;
	double a = 0.3 * v0, b = 1.5 * v0, x1 = b - g * (b - a), x2 = a + g * (b - a);
	double f1 = cost_at(&q, x1), f2 = cost_at(&q, x2), best = v0, cbest = c0;
	for (int i = 0; i < 30 && !q.st; i++) {
		if (f1 < cbest)
			best = x1, cbest = f1;
		if (f2 < cbest)
			best = x2, cbest = f2;
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
			f1 = cost_at(&q, x1);
		} else {
			a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
			f2 = cost_at(&q, x2);
		}
	}
	if (q.st)
		return q.st;
	stats->rms = sqrt(cost_at(&q, best));
	stats->n = q.n;
	if (!q.st)
		hw->gpu.exec.adam_mem = best;
	return q.st;
}

/* Bytes per second the copies of x moved during [s, e], each copy's bytes spread
 * evenly over its measured interval. */
static double copies_Bps(const zb_kfit_item *x, double s, double e)
{
	double b = 0;
	for (size_t i = 0; i < x->g.ntasks; i++) {
		const zb_task *t = &x->g.tasks[i];
		if (t->kind != ZB_TASK_COPY || !(x->mend[i] > s) || !(x->mstart[i] < e) || !(x->mend[i] > x->mstart[i]))
			continue;
		double a = x->mstart[i] > s ? x->mstart[i] : s, z = x->mend[i] < e ? x->mend[i] : e;
		b += t->bytes * (z - a) / (x->mend[i] - x->mstart[i]);
	}
	return b / (e - s);
}

static int adam_sample(const zb_kfit_set *s, const zb_kfit_item *x, size_t i)
{
	return x->g.tasks[i].kind == ZB_TASK_CPU_ADAM && x->g.tasks[i].step >= s->warmup &&
	       x->mend[i] > x->mstart[i] && isfinite(x->mend[i]);
}

/* The samples of the fit: per Adam task its duration d, its work alone w (params / the
 * rate alone) and its pieces: seconds each with a constant copy rate c / dram_Bps. */
typedef struct piece { double len, c; } piece;
typedef struct sample { double d, w; int first, n; } sample;
typedef struct samples { sample *s; piece *p; int ns, np, cs, cp; } samples;

static void add_piece(samples *q, double len, double c)
{
	if (q->np == q->cp)
		q->p = zb_xrealloc(q->p, (size_t)(q->cp = q->cp ? 2 * q->cp : 256) * sizeof *q->p);
	q->p[q->np++] = (piece){ len, c };
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Task i of x ([s0, e0]) cut where a copy starts or ends; each piece's copy rate is the
 * sum of the copies running (bytes over their measured interval). */
static void add_pieces(samples *q, const zb_kfit_item *x, double s0, double e0, double B)
{
	int nc = 2;
	double *cut = zb_xmalloc((2 * x->g.ntasks + 2) * sizeof *cut);
	cut[0] = s0, cut[1] = e0;
	for (size_t j = 0; j < x->g.ntasks; j++)
		if (x->g.tasks[j].kind == ZB_TASK_COPY && x->mend[j] > s0 && x->mstart[j] < e0) {
			if (x->mstart[j] > s0)
				cut[nc++] = x->mstart[j];
			if (x->mend[j] < e0)
				cut[nc++] = x->mend[j];
		}
	qsort(cut, (size_t)nc, sizeof *cut, by_value);
	for (int k = 0; k + 1 < nc; k++)
		if (cut[k + 1] > cut[k])
			add_piece(q, cut[k + 1] - cut[k], copies_Bps(x, cut[k], cut[k + 1]) / B);
	free(cut);
}

/* One configuration's samples: its Adam alone (params/s of compute time) from its tasks
 * with < 2 GB/s of copies beside them, the profile's rate when fewer than 3. */
static void adam_copy_item(const zb_kfit_set *s, const zb_kfit_item *x, const zb_hw *hw, samples *q)
{
	const double alone_Bps = 2e9, L = hw->gpu.exec.adam_task_s, B = hw->cpu.dram_Bps;
	double p = 0, t = 0;
	int na = 0;
	for (size_t i = 0; i < x->g.ntasks; i++)
		if (adam_sample(s, x, i) && copies_Bps(x, x->mstart[i], x->mend[i]) < alone_Bps) {
			p += x->g.tasks[i].params;
			t += x->mend[i] - x->mstart[i] - L;
			na++;
		}
	double ra = p / t;
	if (na < 3 || !(t > 0)) { /* too few alone: the profile's rate */
		zb_config c = x->c;
		c.hw = *hw;
		ra = zb_exec_adam_Pps(&c, &hw->gpu.exec, zb_config_cpu_threads(&c), 1);
		if (!(ra > 0))
			return;
	}
	for (size_t i = 0; i < x->g.ntasks; i++) {
		double s0 = x->mstart[i], e0 = x->mend[i], d = e0 - s0;
		if (!adam_sample(s, x, i) || !(d > L) || copies_Bps(x, s0, e0) < alone_Bps)
			continue;
		if (q->ns == q->cs)
			q->s = zb_xrealloc(q->s, (size_t)(q->cs = q->cs ? 2 * q->cs : 64) * sizeof *q->s);
		sample *sm = &q->s[q->ns++];
		sm->d = d;
		sm->w = x->g.tasks[i].params / ra;
		sm->first = q->np;
		add_pieces(q, x, s0 + L, e0, B); /* the fixed cost first, at no rate */
		sm->n = q->np - sm->first;
	}
}

/* Sum over the samples of d (work alone under k / work alone - 1)^2, the work under k
 * being the pieces' seconds times the rate each leaves: 1 / (1 + k c). */
static double cost(const samples *q, double k)
{
	double sum = 0;
	for (int i = 0; i < q->ns; i++) {
		const sample *sm = &q->s[i];
		double w = 0;
		for (int j = sm->first; j < sm->first + sm->n; j++)
			w += q->p[j].len / (1 + k * q->p[j].c);
		double r = w / sm->w - 1;
		sum += sm->d * r * r;
	}
	return sum;
}

double zb_kfit_adam_copy(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *n)
{
	samples q = { 0 };
	*n = 0;
	if (!(hw->cpu.dram_Bps > 0))
		return 0;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || x->c.policy.pageable || x->c.policy.link_rate_Bps > 0)
			continue;
		adam_copy_item(s, x, hw, &q);
	}
	*n = q.ns;
	double best = 0;
	if (q.ns >= 20) { /* golden section on [0, 10] (the cost is smooth and has one minimum) */
		const double g = (sqrt(5) - 1) / 2;
		double a = 0, b = 10, x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = cost(&q, x1), f2 = cost(&q, x2);
		for (int i = 0; i < 50; i++) {
			if (f1 <= f2) {
				b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
				f1 = cost(&q, x1);
			} else {
				a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
				f2 = cost(&q, x2);
			}
		}
		best = 0.5 * (a + b);
	}
	free(q.s);
	free(q.p);
	return best;
}
