/* kfit.c - fitting the executor profile to measured tasks; see kfit.h. */
#include "analysis/kfit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kfit_adam.h"
#include "analysis/kfit_comm.h"
#include "analysis/kfit_pageable.h"
#include "analysis/kfit_starved.h"
#include "sim/kernels.h"
#include "sim/predict.h"

/* ---- overlap of a measured task with other resources ----------------------------- */

/* Fraction of [s, e] during which resource r of x was busy: a binary search for the
 * first interval ending after s, then the intervals until e. */
double zb_kfit_overlap(const zb_kfit_item *x, int r, double s, double e)
{
	if (!(e > s))
		return 0;
	const double *v = x->ivl[r];
	int lo = 0, hi = x->nivl[r];
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (v[2 * mid + 1] <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	double cov = 0;
	for (int i = lo; i < x->nivl[r] && v[2 * i] < e; i++) {
		double a = v[2 * i] > s ? v[2 * i] : s, b = v[2 * i + 1] < e ? v[2 * i + 1] : e;
		if (b > a)
			cov += b - a;
	}
	return cov / (e - s);
}

/* ---- samples ------------------------------------------------------------------- */

enum { NGEMM = ZB_GEMM_GROUPS, NKERN = ZB_KERN_CLASSES, CL_ADAM = NGEMM + NKERN,
       NCLASS = CL_ADAM + 1 };

typedef struct sample {
	const zb_task *t;
	const zb_config *c;
	int cls;
	double d;     /* measured seconds */
	double x;     /* unit-factor seconds */
	double n;     /* kernels launched (kernels.h zb_exec_launches) */
} sample;

static int gpu_class(const zb_task *t)
{
	int g = zb_exec_gemm_group(t);
	if (g >= 0)
		return g;
	if (t->kind == ZB_TASK_GPU_ADAM)
		return CL_ADAM;
	return NGEMM + zb_exec_kernel_class(t);
}

/* Steady-state tasks of the used items on resource set mask, measured > 0. */
static int in_window(const zb_kfit_set *s, const zb_kfit_item *x, size_t i)
{
	return x->g.tasks[i].step >= s->warmup && x->mend[i] > x->mstart[i] && isfinite(x->mend[i]);
}

/* ---- GPU ------------------------------------------------------------------------- */

/* Factors a[cls] (seconds per unit second) and launch L minimizing
 * sum (L n + a x - d)^2 / d, n the task's launches, exactly: for a given L each
 * a_c = A_c - L B_c (weighted least squares within its class), which leaves a quadratic
 * in L. */
static void fit_gpu_classes(sample *sm, int n, double a[NCLASS], double *L, double *obj)
{
	double sxx[NCLASS] = { 0 }, sxd[NCLASS] = { 0 }, sx[NCLASS] = { 0 }, A[NCLASS], B[NCLASS];
	for (int i = 0; i < n; i++) {
		double w = 1 / sm[i].d;
		sxx[sm[i].cls] += w * sm[i].x * sm[i].x;
		sxd[sm[i].cls] += w * sm[i].x * sm[i].d;
		sx[sm[i].cls] += w * sm[i].x * sm[i].n;
	}
	for (int c = 0; c < NCLASS; c++) {
		int fixed = c == ZB_GEMM_DENSE; /* the GPU's own curve (see fit_gpu) */
		A[c] = sxx[c] > 0 && !fixed ? sxd[c] / sxx[c] : 1;
		B[c] = sxx[c] > 0 && !fixed ? sx[c] / sxx[c] : 0;
	}
	double num = 0, den = 0;
	for (int i = 0; i < n; i++) {
		double w = 1 / sm[i].d, u = sm[i].n - B[sm[i].cls] * sm[i].x, v = A[sm[i].cls] * sm[i].x - sm[i].d;
		num -= w * u * v;
		den += w * u * u;
	}
	*L = den > 0 ? num / den : 0;
	if (*L < 0)
		*L = 0;
	if (*L > 50e-6)
		*L = 50e-6;
	for (int c = 0; c < NCLASS; c++)
		a[c] = A[c] - *L * B[c];
	double o = 0;
	for (int i = 0; i < n; i++) {
		double r = *L * sm[i].n + a[sm[i].cls] * sm[i].x - sm[i].d;
		o += r * r / sm[i].d;
	}
	*obj = o;
}

static double rms_rel(const sample *sm, int n, const double a[NCLASS], double L)
{
	double s2 = 0, w = 0;
	for (int i = 0; i < n; i++) {
		double r = (L * sm[i].n + a[sm[i].cls] * sm[i].x) / sm[i].d - 1;
		s2 += sm[i].d * r * r; /* time-weighted */
		w += sm[i].d;
	}
	return w > 0 ? sqrt(s2 / w) : NAN;
}

static void set_x(sample *sm, int n, double h)
{
	for (int i = 0; i < n; i++)
		sm[i].x = zb_exec_unit_s(sm[i].t, sm[i].c, h);
}

static int collect_gpu(const zb_kfit_set *s, const unsigned char *use, zb_config *cfgs, sample **out)
{
	int n = 0, cap = 0;
	sample *sm = NULL;
	for (int k = 0; k < s->n; k++) {
		if (use && !use[k])
			continue;
		const zb_kfit_item *x = &s->it[k];
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *t = &x->g.tasks[i];
			if ((t->resource != ZB_RES_GPU && t->resource != ZB_RES_GPU_OPT) || !in_window(s, x, i))
				continue;
			if (t->kind == ZB_TASK_COLLECTIVE || t->kind == ZB_TASK_HOST)
				continue;
			int other = t->resource == ZB_RES_GPU ? ZB_RES_GPU_OPT : ZB_RES_GPU;
			if (zb_kfit_overlap(x, other, x->mstart[i], x->mend[i]) > 0.1) /* time-shared: not alone */
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				sm = zb_xrealloc(sm, (size_t)cap * sizeof *sm);
			}
			sm[n++] = (sample){ t, &cfgs[k], gpu_class(t), x->mend[i] - x->mstart[i], 0,
					    zb_exec_launches(t, &cfgs[k]) };
		}
	}
	*out = sm;
	return n;
}

int zb_kfit_adam_all_cores(const zb_kfit_item *x, const zb_hw *hw)
{
	int ranks = x->c.policy.gpus > 1 ? x->c.policy.gpus : 1;
	return zb_config_cpu_threads(&x->c) * ranks >= hw->cpu.cores && x->c.policy.kind != ZB_POLICY_NONE &&
	       x->c.policy.ratio > 0;
}

/* Rates while both GPU streams run: the tasks the other stream overlapped most of
 * their time (> 90%), measured against their fitted alone time; from the items whose
 * Adam leaves a core free where there are such (with every core taken the compute
 * stream also waits for its issuing thread: starved, fitted apart, kfit_starved.h). */
static void fit_shares(const zb_kfit_set *s, const unsigned char *use, zb_config *cfgs, zb_hw *hw)
{
	int some_free = 0;
	for (int k = 0; k < s->n; k++)
		some_free |= (!use || use[k]) && !zb_kfit_adam_all_cores(&s->it[k], hw) && s->it[k].nivl[ZB_RES_GPU_OPT] > 0;
	double meas[2] = { 0 }, alone[2] = { 0 };
	const zb_exec_profile *p = &hw->gpu.exec;
	for (int k = 0; k < s->n; k++) {
		if ((use && !use[k]) || (some_free && zb_kfit_adam_all_cores(&s->it[k], hw)))
			continue;
		const zb_kfit_item *x = &s->it[k];
		zb_config c = cfgs[k];
		c.hw.gpu.exec = *p;
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *t = &x->g.tasks[i];
			int r = t->resource == ZB_RES_GPU ? 0 : t->resource == ZB_RES_GPU_OPT ? 1 : -1;
			if (r < 0 || !in_window(s, x, i) || t->kind == ZB_TASK_HOST || t->kind == ZB_TASK_COLLECTIVE ||
			    zb_kfit_overlap(x, r ? ZB_RES_GPU : ZB_RES_GPU_OPT, x->mstart[i], x->mend[i]) < 0.9)
				continue;
			double fixed, work;
			zb_exec_gpu_flow(t, &c, p, &fixed, &work);
			meas[r] += x->mend[i] - x->mstart[i] - fixed;
			alone[r] += work;
		}
	}
	if (meas[0] > 0 && alone[0] > 0)
		hw->gpu.exec.shared_gpu = alone[0] / meas[0] > 1 ? 1 : alone[0] / meas[0];
	if (meas[1] > 0 && alone[1] > 0)
		hw->gpu.exec.shared_opt = alone[1] / meas[1] > 1 ? 1 : alone[1] / meas[1];
}

static void fit_gpu(const zb_kfit_set *s, const unsigned char *use, zb_config *cfgs, zb_hw *hw,
		    zb_kfit_stats *st)
{
	sample *sm;
	int n = collect_gpu(s, use, cfgs, &sm);
	st->gpu_samples = n;
	if (n < 10) {
		free(sm);
		return;
	}
	double a[NCLASS], L, obj; /* on the GPU's own GEMM curve (gpu.gemm_half_dim) */
	set_x(sm, n, hw->gpu.gemm_half_dim);
	fit_gpu_classes(sm, n, a, &L, &obj);
	int seen[NCLASS] = { 0 };
	for (int i = 0; i < n; i++)
		seen[sm[i].cls]++;
	zb_exec_profile *p = &hw->gpu.exec;
	p->launch_s = L;
	for (int c = 0; c < NCLASS; c++) {
		if (c == ZB_GEMM_DENSE) { /* dense GEMMs run at the GPU's own curve (bf16_flops,
					   * gemm_half_dim: cuBLAS's shapes alone), 0.99-1.015 when fitted */
			p->gemm[ZB_GEMM_DENSE] = 1;
			continue;
		}
		if (seen[c] < 3 || !(a[c] > 0.1))
			continue;
		double f = 1 / a[c];
		if (f > 10)
			f = 10;
		if (c < NGEMM)
			p->gemm[c] = f;
		else if (c == CL_ADAM)
			p->gpu_adam = f;
		else
			p->kernel[c - NGEMM] = f;
	}
	st->gpu_rms = rms_rel(sm, n, a, L);
	free(sm);
	fit_shares(s, use, cfgs, hw);
}

/* ---- CPU Adam ---------------------------------------------------------------------- */

/* Solve the 3x3 system A z = b by Gaussian elimination; 0 on success. */
static int solve3(double A[3][3], double b[3], double z[3])
{
	for (int i = 0; i < 3; i++) {
		int piv = i;
		for (int r = i + 1; r < 3; r++)
			if (fabs(A[r][i]) > fabs(A[piv][i]))
				piv = r;
		if (fabs(A[piv][i]) < 1e-300)
			return -1;
		for (int c = 0; c < 3; c++) {
			double tmp = A[i][c];
			A[i][c] = A[piv][c];
			A[piv][c] = tmp;
		}
		double tb = b[i];
		b[i] = b[piv];
		b[piv] = tb;
		for (int r = i + 1; r < 3; r++) {
			double f = A[r][i] / A[i][i];
			for (int c = i; c < 3; c++)
				A[r][c] -= f * A[i][c];
			b[r] -= f * b[i];
		}
	}
	for (int i = 2; i >= 0; i--) {
		double v = b[i];
		for (int c = i + 1; c < 3; c++)
			v -= A[i][c] * z[c];
		z[i] = v / A[i][i];
	}
	return 0;
}

/* Copies of either direction during [s, e], as a fraction of it (up to 2). */
static double copy_overlap(const zb_kfit_item *x, double s, double e)
{
	return zb_kfit_overlap(x, ZB_RES_H2D, s, e) + zb_kfit_overlap(x, ZB_RES_D2H, s, e);
}

/* A CPU Adam task of the window that no copy overlaps (< 10%): Adam alone. */
static int cpu_alone(const zb_kfit_set *s, const zb_kfit_item *x, size_t i)
{
	return x->g.tasks[i].kind == ZB_TASK_CPU_ADAM && in_window(s, x, i) && !x->c.policy.pageable &&
	       copy_overlap(x, x->mstart[i], x->mend[i]) < 0.1;
}

/* Task i's measured duration as if Adam had run alone: where its threads hold every core,
 * the part of it GPU compute overlapped ran at kernels.h zb_exec_adam_launch's rate (a core
 * to the launches), so over a fraction f of its time it did the work of T (1 - L f) alone. */
static double cpu_alone_s(const zb_kfit_item *x, size_t i, const zb_hw *hw)
{
	double d = x->mend[i] - x->mstart[i];
	if (!zb_kfit_adam_all_cores(x, hw) || hw->cpu.cores < 2)
		return d;
	int ranks = x->c.policy.gpus > 1 ? x->c.policy.gpus : 1;
	double L = (double)ranks / hw->cpu.cores;
	return d * (1 - L * zb_kfit_overlap(x, ZB_RES_GPU, x->mstart[i], x->mend[i]));
}

/* Host DRAM shared by Adam and DMA (resources.c): for each Adam task that copies
 * overlap most of the time, the budget its slowdown implies, f x (Adam's alone
 * demand + the overlapping copies' demand); the time-weighted mean. */
/* Whether configuration k takes part in the DRAM fits (chosen by use, pinned copies at
 * the native link: 1, else 0) and its Adam rate alone on hw in *ra; -1 when the
 * profile gives no rate (nothing can be fitted). */
static int dram_item(const zb_kfit_set *s, const unsigned char *use, int k, const zb_hw *hw, double *ra)
{
	const zb_kfit_item *x = &s->it[k];
	if ((use && !use[k]) || x->c.policy.pageable || x->c.policy.link_rate_Bps > 0)
		return 0;
	zb_config c = x->c;
	c.hw = *hw;
	*ra = zb_exec_adam_Pps(&c, &hw->gpu.exec, zb_config_cpu_threads(&c), 1);
	return *ra > 0 ? 1 : -1;
}

static void fit_dram(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw)
{
	double sum = 0, w = 0, floor_Bps = 0;
	zb_exec_profile *p = &hw->gpu.exec;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		double ra;
		int in = dram_item(s, use, k, hw, &ra);
		if (in < 0)
			return;
		if (!in)
			continue;
		if (ra * ZB_ADAM_BYTES_PER_PARAM > floor_Bps)
			floor_Bps = ra * ZB_ADAM_BYTES_PER_PARAM;
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *tk = &x->g.tasks[i];
			if (tk->kind != ZB_TASK_CPU_ADAM || !in_window(s, x, i))
				continue;
			double s0 = x->mstart[i], e0 = x->mend[i], d = e0 - s0;
			double oh = zb_kfit_overlap(x, ZB_RES_H2D, s0, e0), od = zb_kfit_overlap(x, ZB_RES_D2H, s0, e0);
			if (oh + od < 0.5)
				continue;
			double alone = p->adam_task_s + tk->params / ra, f = alone / d;
			double both = oh > 0.5 && od > 0.5;
			double demand = ra * ZB_ADAM_BYTES_PER_PARAM +
					oh * hw->link.h2d_Bps * (both ? hw->link.duplex_h2d : 1) +
					od * hw->link.d2h_Bps * (both ? hw->link.duplex_d2h : 1);
			sum += d * (f < 1 ? f * demand : demand);
			w += d;
		}
	}
	if (w > 0) {
		double b = sum / w;
		hw->cpu.dram_Bps = b > floor_Bps ? b : floor_Bps; /* Adam alone is never capped by it */
	}
}

/* Bytes per second the copies of x moved during [s, e] (each copy's bytes spread
 * evenly over its measured interval). */
double zb_kfit_busy_cost(zb_kfit_busy_fit *q)
{
	double sum = 0;
	q->n = 0;
	for (int k = 0; k < q->s->n && !q->st; k++) {
		const zb_kfit_item *x = &q->s->it[k];
		if ((q->use && !q->use[k]) || (x->g.ranks < 2 && !q->single) || !(x->meas_busy_s[q->resource] > 0))
			continue;
		double b = zb_kfit_predicted_busy(q->s, k, &q->hw, q->resource, &q->st, q->err);
		if (!(b > 0))
			continue;
		double e = log(b / x->meas_busy_s[q->resource]);
		sum += e * e;
		q->n++;
	}
	return q->st || !q->n ? INFINITY : sum / q->n;
}

void zb_kfit_golden(double (*cost)(void *q, double v), void *q, const zb_status *st, double a, double b,
		    int iters, double *best, double *cbest)
{
	const double g = (sqrt(5) - 1) / 2;
	double x1 = b - g * (b - a), x2 = a + g * (b - a);
	double f1 = cost(q, x1), f2 = cost(q, x2);
	for (int i = 0; i < iters && !*st; i++) {
		if (f1 < *cbest)
			*best = x1, *cbest = f1;
		if (f2 < *cbest)
			*best = x2, *cbest = f2;
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
			f1 = cost(q, x1);
		} else {
			a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
			f2 = cost(q, x2);
		}
	}
}

double zb_kfit_copy_Bps(const zb_kfit_item *x, double s, double e)
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

/* The queue model of host DRAM (kernels.h zb_exec_dram): the budget from the Adam
 * tasks copies overlap (> 50%) and slow (< 0.95 of Adam alone): Adam's traffic plus
 * the copies' during the task, time-weighted; then h2d_queue from the H2D copies Adam
 * overlaps (> 90%), each solved for k at its utilization. 0: too few samples. */
static int fit_dram_queue(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw)
{
	double sum = 0, w = 0, floor_Bps = 0, ks = 0, kw = 0;
	zb_exec_profile *p = &hw->gpu.exec;
	const zb_link *l = &hw->link;
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k < s->n; k++) {
			const zb_kfit_item *x = &s->it[k];
			double ra;
			int in = dram_item(s, use, k, hw, &ra);
			if (in < 0)
				return 0;
			if (!in)
				continue;
			double A = ra * ZB_ADAM_BYTES_PER_PARAM, B = hw->cpu.dram_Bps;
			if (A > floor_Bps)
				floor_Bps = A;
			for (size_t i = 0; i < x->g.ntasks; i++) {
				const zb_task *t = &x->g.tasks[i];
				double s0 = x->mstart[i], e0 = x->mend[i], d = e0 - s0;
				if (!in_window(s, x, i))
					continue;
				if (pass == 0 && t->kind == ZB_TASK_CPU_ADAM) {
					double oc = copy_overlap(x, s0, e0), got = t->params / (d - p->adam_task_s);
					if (oc < 0.5 || !(got > 0) || got > 0.95 * ra)
						continue;
					sum += d * (got * ZB_ADAM_BYTES_PER_PARAM + zb_kfit_copy_Bps(x, s0, e0));
					w += d;
				} else if (pass == 1 && t->kind == ZB_TASK_COPY && t->resource == ZB_RES_H2D &&
					   t->bytes >= (1 << 20) && zb_kfit_overlap(x, ZB_RES_CPU, s0, e0) > 0.9) {
					double od = zb_kfit_overlap(x, ZB_RES_D2H, s0, e0);
					if (od > 0.1 && od < 0.9)
						continue;
					int dup = od >= 0.9;
					double hm = t->bytes / (d - l->copy_latency_s), h0 = l->h2d_Bps * (dup ? l->duplex_h2d : 1);
					double dd = dup ? l->d2h_Bps * l->duplex_d2h : 0, left = B - dd - hm;
					double u = ((A < left ? A : left > 0 ? left : 0) + dd) / B;
					if (!(hm > 0) || !(u > 0.05))
						continue;
					if (u > 0.95)
						u = 0.95;
					double ki = hm < h0 ? (h0 / hm - 1) * (1 - u) / u : 0;
					ks += d * ki;
					kw += d;
				}
			}
		}
		if (pass == 0 && w > 0) /* the budget, before the second pass uses it */
			hw->cpu.dram_Bps = sum / w > floor_Bps ? sum / w : floor_Bps;
	}
	if (!(w > 0) || !(kw > 0))
		return 0;
	p->h2d_queue = ks / kw > 10 ? 10 : ks / kw;
	return 1;
}

/* duration = L + P/t u + P v over the CPU Adam tasks; weights 1/d. */
static void fit_cpu(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_stats *st)
{
	double A[3][3] = { { 0 } }, b[3] = { 0 };
	int n = 0, threads_seen[1024] = { 0 }, distinct = 0;
	for (int k = 0; k < s->n; k++) {
		if (use && !use[k])
			continue;
		const zb_kfit_item *x = &s->it[k];
		double t = zb_config_cpu_threads(&x->c);
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *tk = &x->g.tasks[i];
			if (!cpu_alone(s, x, i))
				continue;
			double d = cpu_alone_s(x, i, hw), f[3] = { 1, tk->params / t, (double)tk->params };
			for (int r = 0; r < 3; r++) {
				for (int c = 0; c < 3; c++)
					A[r][c] += f[r] * f[c] / d;
				b[r] += f[r] * d / d;
			}
			n++;
			if ((int)t < 1024 && !threads_seen[(int)t]++)
				distinct++;
		}
	}
	st->cpu_samples = n;
	double z[3];
	if (n < 5 || distinct < 2 || solve3(A, b, z) || !(z[1] > 0) || !(z[2] > 0))
		return; /* one thread count cannot separate compute from memory */
	const zb_cpu *cpu = &hw->cpu;
	double mem = (cpu->adam_Bps > 0 ? cpu->adam_Bps : cpu->dram_Bps) / ZB_ADAM_BYTES_PER_PARAM;
	hw->gpu.exec.adam_thread = 1 / (z[1] * cpu->adam_params_per_core);
	hw->gpu.exec.adam_mem = 1 / (z[2] * mem);
	hw->gpu.exec.adam_task_s = z[0] > 0 ? z[0] : 0;
	/* rms over the same samples */
	double s2 = 0, w = 0;
	for (int k = 0; k < s->n; k++) {
		if (use && !use[k])
			continue;
		const zb_kfit_item *x = &s->it[k];
		double t = zb_config_cpu_threads(&x->c);
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *tk = &x->g.tasks[i];
			if (!cpu_alone(s, x, i))
				continue;
			double d = cpu_alone_s(x, i, hw);
			double r = (z[0] + tk->params / t * z[1] + tk->params * z[2]) / d - 1;
			s2 += d * r * r;
			w += d;
		}
	}
	st->cpu_rms = w > 0 ? sqrt(s2 / w) : NAN;
}

/* ---- copies ------------------------------------------------------------------------ */

double zb_kfit_copy_rate(const zb_kfit_set *s, const unsigned char *use, int r, int pageable, double lo, double hi,
			 double lat, int *count)
{
	double bytes = 0, secs = 0;
	*count = 0;
	for (int k = 0; k < s->n; k++) {
		const zb_kfit_item *x = &s->it[k];
		if ((use && !use[k]) || x->c.policy.link_rate_Bps > 0 || x->c.policy.pageable != pageable)
			continue;
		int other = r == ZB_RES_H2D ? ZB_RES_D2H : ZB_RES_H2D;
		for (size_t i = 0; i < x->g.ntasks; i++) {
			const zb_task *t = &x->g.tasks[i];
			if (t->resource != r || t->kind != ZB_TASK_COPY || !in_window(s, x, i) || t->bytes < (1 << 20))
				continue;
			double ov = zb_kfit_overlap(x, other, x->mstart[i], x->mend[i]);
			if (ov < lo || ov > hi || zb_kfit_overlap(x, ZB_RES_CPU, x->mstart[i], x->mend[i]) > 0.1)
				continue;
			bytes += t->bytes;
			secs += x->mend[i] - x->mstart[i] - lat;
			(*count)++;
		}
	}
	return *count >= 3 && secs > 0 ? bytes / secs : 0;
}

static void fit_copies(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw, zb_kfit_stats *st)
{
	zb_link *l = &hw->link;
	double lat = l->copy_latency_s;
	int n1, n2, n3, n4;
	double h = zb_kfit_copy_rate(s, use, ZB_RES_H2D, 0, 0, 0.1, lat, &n1);
	double d = zb_kfit_copy_rate(s, use, ZB_RES_D2H, 0, 0, 0.1, lat, &n2);
	double hb = zb_kfit_copy_rate(s, use, ZB_RES_H2D, 0, 0.9, 1.01, lat, &n3);
	double db = zb_kfit_copy_rate(s, use, ZB_RES_D2H, 0, 0.9, 1.01, lat, &n4);
	if (h > 0)
		l->h2d_Bps = h;
	if (d > 0)
		l->d2h_Bps = d;
	if (hb > 0 && h > 0)
		l->duplex_h2d = hb / h > 1 ? 1 : hb / h;
	if (db > 0 && d > 0)
		l->duplex_d2h = db / d > 1 ? 1 : db / d;
	st->copy_samples = n1 + n2 + n3 + n4; /* the pageable ones: zb_kfit_pageable_fit */
}

/* ---- by simulation ---------------------------------------------------------------- */

/* The GPU's rate while Adam holds every core (execprofile.h starved): from the tasks of one
 * rank (kfit_starved.h); with several ranks from the step times (the ranks' losses differ
 * and the most starved sets the step). */
static zb_status fit_starved(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, zb_hw *hw,
			     zb_error *err)
{
	int n, ranks = 0;
	for (int k = 0; k < s->n; k++)
		ranks |= (!use || use[k]) && s->it[k].g.ranks > 1 && zb_kfit_adam_all_cores(&s->it[k], hw);
	if (ranks) {
		zb_kfit_starved_stats ss;
		return zb_kfit_starved_steps(s, use, hw, &ss, err);
	}
	double r = zb_kfit_starved_rate(s, use, cfgs, hw, &n);
	if (r > 0) /* else the base's */
		hw->gpu.exec.starved = r;
	return ZB_OK;
}

/* ---- fit and predict ------------------------------------------------------------------ */

zb_status zb_kfit_fit(const zb_kfit_set *s, const unsigned char *use, const zb_hw *base, zb_hw *out,
		      zb_kfit_stats *stats, zb_error *err)
{
	memset(stats, 0, sizeof *stats);
	zb_hw hw = *base;
	if (base->gpu.exec.set != 1) /* from neutral factors, not a preset's (itself a fit): what is
					 * not measured keeps the plain model, and a half-out check is
					 * out of sample */
		zb_exec_profile_neutral(&hw.gpu.exec);
	hw.gpu.exec.set = 1;
	/* the unit times of the GPU samples read the configuration's GPU and dtype */
	zb_config *cfgs = zb_xcalloc((size_t)s->n, sizeof *cfgs);
	zb_status st = ZB_OK;
	for (int k = 0; k < s->n && !st; k++)
		st = zb_kfit_config(&s->it[k], &hw, &cfgs[k], err);
	if (!st) {
		fit_gpu(s, use, cfgs, &hw, stats);
		fit_cpu(s, use, &hw, stats);
		fit_copies(s, use, &hw, stats);
		zb_hw before = hw;
		if (!fit_dram_queue(s, use, &hw)) { /* the proportional share where the queue cannot be fitted */
			hw = before;
			hw.gpu.exec.h2d_queue = 0;
			fit_dram(s, use, &hw);
		} else {
			int na;
			double ac = zb_kfit_adam_copy(s, use, &hw, &na);
			if (ac > 0) /* else the base's */
				hw.gpu.exec.adam_copy = ac;
		}
		int np; /* the pageable copies alone, and their queue beside Adam (kfit_pageable.h) */
		zb_kfit_pageable_fit(s, use, &hw, &np);
		stats->copy_samples += np;
		st = fit_starved(s, use, cfgs, &hw, err);
		zb_kfit_comm_stats cs; /* several ranks: the collectives' factors on what was fitted */
		if (!st)
			st = zb_kfit_comm(s, use, &hw, &cs, err);
		if (!st)
			st = zb_hw_validate(&hw, err);
		if (!st)
			st = zb_exec_profile_validate(&hw.gpu.exec, err);
	}
	free(cfgs);
	if (!st)
		*out = hw;
	return st;
}

zb_status zb_kfit_predict(const zb_kfit_set *s, const zb_hw *hw, zb_kfit_pred *out, zb_error *err)
{
	for (int k = 0; k < s->n; k++) {
		zb_kfit_pred *o = &out[k];
		o->step_s = NAN;
		for (int r = 0; r < ZB_RES_COUNT; r++)
			o->busy_s[r] = NAN;
		zb_config c;
		zb_prediction p;
		zb_status st = zb_kfit_config(&s->it[k], hw, &c, err);
		if (st)
			return st;
		if ((st = zb_predict(&p, &c, err)))
			return st;
		if (p.simulated) {
			o->step_s = zb_step_time_window(&p.graph, p.res.end, s->warmup);
			zb_busy_window(&p.graph, p.res.start, p.res.end, s->warmup, o->busy_s);
		}
		zb_prediction_free(&p);
	}
	return ZB_OK;
}
