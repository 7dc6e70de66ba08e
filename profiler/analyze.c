/*
 * analyze.c - steps and per-step resource use of a foreign trace (analyze.h).
 */
#include "profiler/analyze.h"

#include "common/stats.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ivl {
	int64_t s, e;
} ivl;

typedef struct ivls {
	ivl *v;
	size_t n, cap;
} ivls;

static void iv_push(ivls *a, int64_t s, int64_t e)
{
	if (e <= s)
		return;
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->v = zb_xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = (ivl){ s, e };
}

static int cmp_ivl(const void *x, const void *y)
{
	const ivl *a = x, *b = y;
	return a->s < b->s ? -1 : a->s > b->s ? 1 : (a->e > b->e) - (a->e < b->e);
}

/* Sort and merge in place: disjoint, ascending. */
static void iv_merge(ivls *a)
{
	if (a->n < 2)
		return;
	qsort(a->v, a->n, sizeof *a->v, cmp_ivl);
	size_t k = 0;
	for (size_t i = 1; i < a->n; i++) {
		if (a->v[i].s <= a->v[k].e) {
			if (a->v[i].e > a->v[k].e)
				a->v[k].e = a->v[i].e;
		} else {
			a->v[++k] = a->v[i];
		}
	}
	a->n = k + 1;
}

static int64_t iv_len(const ivls *a)
{
	int64_t t = 0;
	for (size_t i = 0; i < a->n; i++)
		t += a->v[i].e - a->v[i].s;
	return t;
}

/* |A ∩ B| of two merged lists */
static int64_t iv_inter(const ivls *a, const ivls *b)
{
	int64_t t = 0;
	size_t i = 0, j = 0;
	while (i < a->n && j < b->n) {
		int64_t s = a->v[i].s > b->v[j].s ? a->v[i].s : b->v[j].s;
		int64_t e = a->v[i].e < b->v[j].e ? a->v[i].e : b->v[j].e;
		if (e > s)
			t += e - s;
		if (a->v[i].e < b->v[j].e)
			i++;
		else
			j++;
	}
	return t;
}

/* the merged list clipped to [s, e) */
static void iv_clip(const ivls *a, int64_t s, int64_t e, ivls *out)
{
	out->n = 0;
	size_t lo = 0, hi = a->n;
	while (lo < hi) { /* first interval ending after s */
		size_t m = (lo + hi) / 2;
		if (a->v[m].e <= s)
			lo = m + 1;
		else
			hi = m;
	}
	for (size_t i = lo; i < a->n && a->v[i].s < e; i++)
		iv_push(out, a->v[i].s < s ? s : a->v[i].s, a->v[i].e > e ? e : a->v[i].e);
}

double zb_union_s(const int64_t *start, const int64_t *end, size_t n)
{
	ivls a = { 0 };
	for (size_t i = 0; i < n; i++)
		iv_push(&a, start[i], end[i]);
	iv_merge(&a);
	double t = (double)iv_len(&a) * 1e-9;
	free(a.v);
	return t;
}

/* ---- names ----------------------------------------------------------------------- */

void zb_nvtx_normalize(const char *s, char *out, size_t n)
{
	size_t k = 0;
	if (n == 0)
		return;
	for (; s && *s && k + 1 < n; s++) {
		if (isdigit((unsigned char)*s)) {
			out[k++] = '#';
			while (isdigit((unsigned char)s[1]))
				s++;
		} else {
			out[k++] = *s;
		}
	}
	out[k] = 0;
}

static int contains_ci(const char *s, const char *needle)
{
	size_t m = strlen(needle);
	for (; *s; s++)
		if (!strncasecmp(s, needle, m))
			return 1;
	return 0;
}

/* ---- the period of a token sequence ------------------------------------------------ */

typedef struct tok_ix {
	int32_t tok;
	uint32_t ix;
} tok_ix;

static int cmp_tok_ix(const void *x, const void *y)
{
	const tok_ix *a = x, *b = y;
	if (a->tok != b->tok)
		return a->tok < b->tok ? -1 : 1;
	return (a->ix > b->ix) - (a->ix < b->ix);
}

typedef struct gapc {
	size_t gap, count;
} gapc;

static int cmp_gap(const void *x, const void *y)
{
	const size_t *a = x, *b = y;
	return (*a > *b) - (*a < *b);
}

static int cmp_gapc_count(const void *x, const void *y)
{
	const gapc *a = x, *b = y;
	return (a->count < b->count) - (a->count > b->count);
}

static double match_at(const int32_t *seq, size_t n, size_t p)
{
	size_t m = 0;
	for (size_t i = 0; i + p < n; i++)
		m += seq[i] == seq[i + p];
	return (double)m / (double)(n - p);
}

/* Candidate lags: spacings (1 to 4 occurrences apart) of tokens that occur at
 * least twice, the 256 most frequent. */
static size_t candidate_lags(const int32_t *seq, size_t n, size_t **out)
{
	tok_ix *ti = zb_xmalloc(n * sizeof *ti);
	for (size_t i = 0; i < n; i++)
		ti[i] = (tok_ix){ seq[i], (uint32_t)i };
	qsort(ti, n, sizeof *ti, cmp_tok_ix);
	size_t *gaps = NULL, ng = 0, capg = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 1; k <= 4 && i + k < n && ti[i + k].tok == ti[i].tok; k++) {
			size_t g = ti[i + k].ix - ti[i].ix;
			if (g < 2 || g > n / 2)
				continue;
			if (ng == capg) {
				capg = capg ? 2 * capg : 1024;
				gaps = zb_xrealloc(gaps, capg * sizeof *gaps);
			}
			gaps[ng++] = g;
		}
	free(ti);
	if (ng)
		qsort(gaps, ng, sizeof *gaps, cmp_gap);
	gapc *gc = zb_xmalloc((ng ? ng : 1) * sizeof *gc);
	size_t nc = 0;
	for (size_t i = 0; i < ng; i++) {
		if (nc && gc[nc - 1].gap == gaps[i])
			gc[nc - 1].count++;
		else
			gc[nc++] = (gapc){ gaps[i], 1 };
	}
	free(gaps);
	qsort(gc, nc, sizeof *gc, cmp_gapc_count);
	if (nc > 256)
		nc = 256;
	*out = zb_xmalloc((nc ? nc : 1) * sizeof **out);
	for (size_t i = 0; i < nc; i++)
		(*out)[i] = gc[i].gap;
	free(gc);
	return nc;
}

size_t zb_sequence_period(const int32_t *seq, size_t n, double *match)
{
	*match = 0;
	if (n < 4)
		return 0;
	size_t *lag;
	size_t nl = candidate_lags(seq, n, &lag);
	double *m = zb_xmalloc((nl ? nl : 1) * sizeof *m);
	double best = 0;
	for (size_t i = 0; i < nl; i++) {
		m[i] = match_at(seq, n, lag[i]);
		if (m[i] > best)
			best = m[i];
	}
	/* the smallest lag as good as the best: multiples of the period match as well,
	 * and a repeating layer inside the step matches a little worse (its copies
	 * break at the forward/backward boundary, the step's do not) */
	size_t p = 0;
	for (size_t i = 0; i < nl; i++)
		if (m[i] >= 0.5 && m[i] >= best - 0.005 && (p == 0 || lag[i] < p)) {
			p = lag[i];
			*match = m[i];
		}
	free(lag);
	free(m);
	return p;
}

/* ---- step boundaries ----------------------------------------------------------------- */

typedef struct cuts {
	int64_t *t;   /* step i is [t[i], t[i+1]) */
	size_t n;     /* boundaries (steps = n - 1) */
} cuts;

static void cut_push(cuts *c, int64_t t) { c->t = zb_xrealloc(c->t, (c->n + 1) * sizeof *c->t), c->t[c->n++] = t; }

typedef struct range_ref {
	const zb_range *r;
	char norm[128];
} range_ref;

static int cmp_range_name(const void *x, const void *y)
{
	const range_ref *a = x, *b = y;
	int c = strcmp(a->norm, b->norm);
	return c ? c : (a->r->start > b->r->start) - (a->r->start < b->r->start);
}

/* A range name that marks training steps: it holds "step", and it is not the
 * optimizer's own step (PyTorch's "Optimizer.step#Adam.step", DeepSpeed's CPU Adam),
 * which runs once or more inside each training step. */
static int names_step(const char *norm)
{
	return contains_ci(norm, "step") && !contains_ci(norm, "optim") && !contains_ci(norm, "adam");
}

/* One step from the one range of a step name (a profile of a single ProfilerStep#N,
 * or one "train_step" annotation): from its start to its end or, when later, the end
 * of the last GPU operation that started within it (the work it launched). */
static int step_from_one_range(const zb_trace_input *in, const range_ref *rr, size_t i, cuts *c, zb_analysis *out)
{
	const zb_range *r = rr[i].r;
	int64_t end = r->end;
	for (size_t k = 0; k < in->nops && in->ops[k].start < r->end; k++)
		if (in->ops[k].start >= r->start && in->ops[k].end > end)
			end = in->ops[k].end;
	if (end <= r->start)
		return 0;
	cut_push(c, r->start);
	cut_push(c, end);
	snprintf(out->found_by, sizeof out->found_by, "nvtx range '%s' (1 occurrence, to the end of the GPU work it launched)",
		 rr[i].norm);
	snprintf(out->method, sizeof out->method, "nvtx");
	return 1;
}

/* Steps from NVTX ranges; 0 when no range name qualifies. */
static int steps_from_nvtx(const zb_trace_input *in, const zb_analyze_options *opt, cuts *c, zb_analysis *out)
{
	if (in->nranges < 1)
		return 0;
	range_ref *rr = zb_xmalloc(in->nranges * sizeof *rr);
	for (size_t i = 0; i < in->nranges; i++) {
		rr[i].r = &in->ranges[i];
		const char *nm = in->ranges[i].name >= 0 && (size_t)in->ranges[i].name < in->nnames
					 ? in->names[in->ranges[i].name] : "";
		zb_nvtx_normalize(nm, rr[i].norm, sizeof rr[i].norm);
	}
	qsort(rr, in->nranges, sizeof *rr, cmp_range_name);
	char want[128] = "";
	if (opt && opt->step_range)
		zb_nvtx_normalize(opt->step_range, want, sizeof want);
	size_t best = 0, best_n = 0, one = 0;
	double best_total = -1, one_total = -1;
	for (size_t i = 0; i < in->nranges;) {
		size_t j = i;
		double total = 0;
		while (j < in->nranges && !strcmp(rr[j].norm, rr[i].norm))
			total += (double)(rr[j].r->end - rr[j].r->start), j++;
		int ok = want[0] ? !strcmp(rr[i].norm, want) : names_step(rr[i].norm);
		if (ok && j - i >= 2 && total > best_total) {
			best = i, best_n = j - i, best_total = total;
		}
		if (ok && j - i == 1 && total > one_total)
			one = i, one_total = total;
		i = j;
	}
	if (best_n < 2) {
		int found = one_total >= 0 && step_from_one_range(in, rr, one, c, out);
		free(rr);
		return found;
	}
	/* outermost occurrences only (a range nested in the previous one is skipped) */
	int64_t last_end = INT64_MIN, last_start = 0;
	double fill = 0;
	size_t kept = 0;
	for (size_t i = best; i < best + best_n; i++) {
		const zb_range *r = rr[i].r;
		if (r->start < last_end)
			continue;
		if (kept)
			fill += (double)(last_end - last_start) / (double)(r->start - last_start > 0 ? r->start - last_start : 1);
		cut_push(c, r->start);
		last_start = r->start, last_end = r->end;
		kept++;
	}
	if (kept >= 2 && fill / (double)(kept - 1) >= 0.9)
		cut_push(c, last_end); /* the ranges fill their periods: the last one is a step */
	snprintf(out->found_by, sizeof out->found_by, "nvtx range '%s' (%zu occurrences)", rr[best].norm, kept);
	snprintf(out->method, sizeof out->method, "nvtx");
	free(rr);
	return c->n >= 2;
}

/* idle time before each op: its start minus the latest end of the ops before it */
static int64_t *idle_before(const zb_trace_input *in)
{
	int64_t *g = zb_xmalloc(in->nops * sizeof *g);
	int64_t hi = INT64_MIN;
	for (size_t i = 0; i < in->nops; i++) {
		g[i] = hi == INT64_MIN || in->ops[i].start < hi ? 0 : in->ops[i].start - hi;
		if (in->ops[i].end > hi)
			hi = in->ops[i].end;
	}
	return g;
}

static int32_t op_token(const zb_gpu_op *o) { return o->kind == ZB_GOP_KERNEL ? o->name : -2 - (int32_t)o->kind; }

/* A token occurring once per period, about p apart, after the longest idle on
 * average (*mean_gap); 0 when there is none. */
static int find_anchor(const int32_t *seq, size_t n, size_t p, const int64_t *gap, int32_t *anchor, double *mean_gap)
{
	int have = 0;
	*mean_gap = -1;
	for (size_t ph = 0; ph < p && ph < n; ph++) {
		int32_t tok = seq[ph];
		size_t cnt = 0, spaced = 0, prev = 0;
		double g = 0;
		for (size_t i = 0; i < n; i++)
			if (seq[i] == tok) {
				if (cnt && i - prev + p / 50 + 1 >= p && i - prev <= p + p / 50 + 1)
					spaced++; /* about p apart: concurrent streams may swap a few neighbours */
				prev = i, cnt++, g += (double)gap[i];
			}
		double expect = (double)n / (double)p;
		if (fabs((double)cnt - expect) > 1 + 0.2 * expect || spaced + 1 < (cnt + 1) / 2)
			continue;
		if (g / (double)cnt > *mean_gap)
			*mean_gap = g / (double)cnt, *anchor = tok, have = 1;
	}
	return have;
}

/* The position in the period with the longest idle before it on average, assuming
 * an exact period (*mean_gap). */
static size_t best_phase(size_t n, size_t p, const int64_t *gap, double *mean_gap)
{
	size_t phase = 0;
	*mean_gap = -1;
	for (size_t ph = 0; ph < p && ph < n; ph++) {
		double g = 0;
		size_t k = 0;
		for (size_t i = ph; i < n; i += p)
			g += (double)gap[i], k++;
		if (g / (double)k > *mean_gap)
			*mean_gap = g / (double)k, phase = ph;
	}
	return phase;
}

static size_t dist(size_t a, size_t b) { return a > b ? a - b : b - a; }

/* Cuts from the phase on, each next one the longest idle within a quarter period
 * of one period later, so an inserted operation does not shift every later cut. */
static void cut_by_phase(const zb_trace_input *in, size_t p, size_t phase, const int64_t *gap, cuts *c)
{
	size_t n = in->nops;
	for (size_t i = phase; i < n;) {
		cut_push(c, in->ops[i].start);
		size_t next = i + p;
		if (next >= n)
			break; /* the trace ends within this step */
		size_t lo = next > p / 4 ? next - p / 4 : 0, hi = next + p / 4 < n ? next + p / 4 : n - 1, best = next;
		for (size_t j = lo; j <= hi; j++)
			if (gap[j] > gap[best] || (gap[j] == gap[best] && dist(j, next) < dist(best, next)))
				best = j;
		if (best <= i)
			break;
		i = best;
	}
}

/* Whether the steps a pattern cut are alike, as the steps of a training loop are:
 * after the first (a warm-up may be slower), none longer than three times their
 * median. A pattern that repeats inside a step (a layer's kernels, in a trace of one
 * or two steps) cuts a long last piece where the optimizer runs; it is refused and
 * found_by says why (the whole trace is then one step). */
static int steps_alike(const cuts *c, zb_analysis *out)
{
	size_t n = c->n - 1, from = n >= 3 ? 1 : 0;
	double *d = zb_xmalloc((n ? n : 1) * sizeof *d);
	size_t k = 0;
	double longest = 0;
	for (size_t i = from; i < n; i++) {
		d[k] = (double)(c->t[i + 1] - c->t[i]);
		longest = d[k] > longest ? d[k] : longest;
		k++;
	}
	double med = k ? zb_median(d, (int)k) : 0;
	free(d);
	if (!(longest > 3 * med))
		return 1;
	snprintf(out->found_by, sizeof out->found_by,
		 "whole trace (no step range; the pattern of %zu GPU operations cuts unequal steps, %.2f ms against a "
		 "median of %.2f ms: it repeats within a step)",
		 out->period, longest / 1e6, med / 1e6);
	return 0;
}

/* Steps from the repeating pattern of GPU operations; 0 when there is none. */
static int steps_from_pattern(const zb_trace_input *in, cuts *c, zb_analysis *out)
{
	size_t n = in->nops;
	int32_t *seq = zb_xmalloc((n ? n : 1) * sizeof *seq);
	for (size_t i = 0; i < n; i++)
		seq[i] = op_token(&in->ops[i]);
	double match;
	size_t p = zb_sequence_period(seq, n, &match);
	if (p == 0 || n / p < 2) {
		free(seq);
		return 0;
	}
	int64_t *gap = idle_before(in);
	int32_t anchor = 0;
	double anchor_gap, phase_gap;
	int have = find_anchor(seq, n, p, gap, &anchor, &anchor_gap);
	size_t phase = best_phase(n, p, gap, &phase_gap);
	if (have && anchor_gap >= 0.5 * phase_gap) {
		for (size_t i = 0; i < n; i++)
			if (seq[i] == anchor)
				cut_push(c, in->ops[i].start);
	} else { /* e.g. a step that starts with many uploads: no once-per-period token there */
		cut_by_phase(in, p, phase, gap, c);
	}
	snprintf(out->found_by, sizeof out->found_by,
		 "pattern of %zu GPU operations (sequence matches itself at that lag: %.1f %%)", p, 100 * match);
	snprintf(out->method, sizeof out->method, "pattern");
	out->period = p;
	free(gap);
	free(seq);
	if (c->n >= 2 && !steps_alike(c, out))
		return 0;
	return c->n >= 2;
}

/* ---- the CPU optimizer ------------------------------------------------------------ */

typedef struct rate_ev {
	int64_t t;
	double d; /* change of the busy-core count */
} rate_ev;

static int cmp_ev(const void *x, const void *y)
{
	const rate_ev *a = x, *b = y;
	return (a->t > b->t) - (a->t < b->t);
}

/* Where the CPU optimizer runs: where the worker threads' busy cores reach the
 * threshold (the /proc samples: they see the optimizer's threads themselves),
 * else, in a trace without samples (an nsys import), NVTX ranges naming it. */
static void cpu_opt_intervals(const zb_trace_input *in, double threshold, ivls *out, const char **from)
{
	*from = "none (no CPU samples, no NVTX range naming adam or optim)";
	if (in->ncpu == 0) {
		for (size_t i = 0; i < in->nranges; i++) {
			const zb_range *r = &in->ranges[i];
			const char *nm = r->name >= 0 && (size_t)r->name < in->nnames ? in->names[r->name] : "";
			if (contains_ci(nm, "adam") || contains_ci(nm, "optim")) {
				iv_push(out, r->start, r->end);
				*from = "NVTX ranges naming adam or optim";
			}
		}
		iv_merge(out);
		return;
	}
	*from = "CPU samples: threads other than the main ones busy on >= threshold cores";
	rate_ev *ev = zb_xmalloc((2 * in->ncpu + 1) * sizeof *ev);
	size_t ne = 0;
	for (size_t i = 0; i < in->ncpu; i++) {
		const zb_cpu_slice *c = &in->cpu[i];
		if (c->tid == c->pid || c->end <= c->start)
			continue; /* main threads drive the GPU; not the optimizer's pool */
		double r = (double)c->cpu_ns / (double)(c->end - c->start);
		ev[ne++] = (rate_ev){ c->start, r };
		ev[ne++] = (rate_ev){ c->end, -r };
	}
	qsort(ev, ne, sizeof *ev, cmp_ev);
	double cores = 0;
	int64_t open_at = 0;
	int on = 0;
	for (size_t i = 0; i < ne;) {
		int64_t t = ev[i].t;
		while (i < ne && ev[i].t == t)
			cores += ev[i++].d;
		if (!on && cores >= threshold - 1e-9)
			on = 1, open_at = t;
		else if (on && cores < threshold - 1e-9)
			on = 0, iv_push(out, open_at, t);
	}
	free(ev);
	iv_merge(out);
}

/* ---- per step ------------------------------------------------------------------- */

typedef struct classes {
	ivls compute, h2d, d2h, copy, busy;
} classes;

static void measure_step(const zb_trace_input *in, const ivls *all[5], const ivls *opt, int64_t s, int64_t e,
			 size_t *lo, zb_step_stats *st, ivls *tmp)
{
	memset(st, 0, sizeof *st);
	st->start = s, st->end = e;
	st->step_s = (double)(e - s) * 1e-9;
	int64_t len[5];
	ivls clipped[5] = { 0 };
	for (int k = 0; k < 5; k++) {
		iv_clip(all[k], s, e, &clipped[k]);
		len[k] = iv_len(&clipped[k]);
	}
	int64_t overlap = len[0] + len[3] - len[4]; /* |C ∩ Y| = |C| + |Y| - |C ∪ Y| */
	st->compute_s = (double)len[0] * 1e-9;
	st->h2d_s = (double)len[1] * 1e-9;
	st->d2h_s = (double)len[2] * 1e-9;
	st->copy_s = (double)len[3] * 1e-9;
	st->overlap_s = (double)overlap * 1e-9;
	st->compute_only_s = (double)(len[0] - overlap) * 1e-9;
	st->copy_only_s = (double)(len[3] - overlap) * 1e-9;
	st->idle_s = (double)((e - s) - len[4]) * 1e-9;
	/* idle stretches: before the first busy interval, between them, after the last */
	int64_t prev = s;
	for (size_t i = 0; i <= clipped[4].n; i++) {
		int64_t next = i < clipped[4].n ? clipped[4].v[i].s : e, g = next - prev;
		if (g >= 100000)
			st->idle_gaps++;
		if ((double)g * 1e-9 > st->max_gap_s)
			st->max_gap_s = (double)g * 1e-9;
		if (i < clipped[4].n)
			prev = clipped[4].v[i].e;
	}
	iv_clip(opt, s, e, tmp);
	int64_t ol = iv_len(tmp);
	st->cpu_opt_s = (double)ol * 1e-9;
	st->idle_cpu_s = (double)(ol - iv_inter(tmp, &clipped[4])) * 1e-9;
	for (int k = 0; k < 5; k++)
		free(clipped[k].v);
	/* counts and bytes: operations starting in the step */
	while (*lo < in->nops && in->ops[*lo].start < s)
		(*lo)++;
	for (size_t i = *lo; i < in->nops && in->ops[i].start < e; i++) {
		const zb_gpu_op *o = &in->ops[i];
		if (o->kind == ZB_GOP_KERNEL)
			st->kernels++;
		else if (o->kind != ZB_GOP_MEMSET)
			st->copies++;
		if (o->kind == ZB_GOP_H2D)
			st->h2d_bytes += (double)o->bytes;
		if (o->kind == ZB_GOP_D2H)
			st->d2h_bytes += (double)o->bytes;
		if (o->pageable && (o->kind == ZB_GOP_H2D || o->kind == ZB_GOP_D2H))
			st->pageable_bytes += (double)o->bytes;
	}
	for (size_t i = 0; i < in->ncpu; i++) { /* CPU time, prorated to the step */
		const zb_cpu_slice *c = &in->cpu[i];
		int64_t a = c->start > s ? c->start : s, b = c->end < e ? c->end : e;
		if (b > a && c->end > c->start)
			st->cpu_core_s += (double)c->cpu_ns * 1e-9 * (double)(b - a) / (double)(c->end - c->start);
	}
}

static int cmp_op(const void *x, const void *y)
{
	const zb_gpu_op *a = x, *b = y;
	return (a->start > b->start) - (a->start < b->start);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static void medians(zb_analysis *a)
{
	size_t from = a->first_steady, n = a->nsteps - from;
	size_t nf = sizeof(zb_step_stats) / sizeof(double);
	double *v = zb_xmalloc(n * sizeof *v);
	memset(&a->median, 0, sizeof a->median);
	for (size_t f = 1; f < nf; f++) { /* field 0 holds start and end */
		if (f * sizeof(double) < offsetof(zb_step_stats, step_s))
			continue;
		for (size_t i = 0; i < n; i++)
			v[i] = ((const double *)&a->steps[from + i])[f];
		qsort(v, n, sizeof *v, cmp_double);
		((double *)&a->median)[f] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
}

zb_status zb_analyze(zb_trace_input *in, const zb_analyze_options *opt, zb_analysis *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	if (in->nops == 0)
		return zb_fail(err, ZB_E_INPUT, "the trace has no GPU operation (no kernel, copy or memset record)");
	qsort(in->ops, in->nops, sizeof *in->ops, cmp_op);
	cuts c = { 0 };
	if (!(opt && opt->no_nvtx) && steps_from_nvtx(in, opt, &c, out)) {
	} else {
		if (opt && opt->step_range) {
			free(c.t);
			return zb_fail(err, ZB_E_INPUT, "no NVTX range named '%s' occurs twice in the trace", opt->step_range);
		}
		c.n = 0;
		if (!steps_from_pattern(in, &c, out)) {
			c.n = 0;
			int64_t lo = in->ops[0].start, hi = in->ops[0].end;
			for (size_t i = 0; i < in->nops; i++)
				hi = in->ops[i].end > hi ? in->ops[i].end : hi;
			cut_push(&c, lo);
			cut_push(&c, hi);
			if (strcmp(out->method, "pattern")) /* else steps_alike said why */
				snprintf(out->found_by, sizeof out->found_by, "whole trace (no repeating NVTX range or pattern)");
			snprintf(out->method, sizeof out->method, "whole");
			out->period = 0;
		}
	}
	ivls all[5] = { 0 }, opt_iv = { 0 }, tmp = { 0 };
	for (size_t i = 0; i < in->nops; i++) {
		const zb_gpu_op *o = &in->ops[i];
		int k = o->kind == ZB_GOP_H2D ? 1 : o->kind == ZB_GOP_D2H ? 2 : o->kind == ZB_GOP_OTHER_COPY ? 3 : 0;
		iv_push(&all[k], o->start, o->end);
		if (k == 1 || k == 2)
			iv_push(&all[3], o->start, o->end);
		iv_push(&all[4], o->start, o->end);
	}
	for (int k = 0; k < 5; k++)
		iv_merge(&all[k]);
	cpu_opt_intervals(in, opt && opt->cpu_threshold > 0 ? opt->cpu_threshold : 2.0, &opt_iv, &out->cpu_opt_from);
	out->nsteps = c.n - 1;
	out->steps = zb_xcalloc(out->nsteps, sizeof *out->steps);
	const ivls *allp[5] = { &all[0], &all[1], &all[2], &all[3], &all[4] };
	size_t lo = 0;
	for (size_t i = 0; i < out->nsteps; i++)
		measure_step(in, allp, &opt_iv, c.t[i], c.t[i + 1], &lo, &out->steps[i], &tmp);
	out->first_steady = out->nsteps >= 3 ? 1 : 0;
	medians(out);
	for (int k = 0; k < 5; k++)
		free(all[k].v);
	free(opt_iv.v);
	free(tmp.v);
	free(c.t);
	return ZB_OK;
}

void zb_analysis_free(zb_analysis *a)
{
	if (!a)
		return;
	free(a->steps);
	a->steps = NULL;
	a->nsteps = 0;
}
