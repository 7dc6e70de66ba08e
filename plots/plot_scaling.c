/*
 * plot_scaling.c - the scaling plot: the job's throughput (tokens/s over all
 * data-parallel ranks) against GPUs per node, from a sweep over --gpus, one line per other
 * setting the sweep varied (cores, CPU, machine, policy, ...), each with a dashed
 * line of linear scaling from its fewest GPUs. Where the solid line falls below the
 * dashed one, something the node's GPUs share (CPU cores, DRAM, PCIe switches) or
 * the collectives bound the step.
 *
 * Two readings of "more GPUs": with a fixed per-GPU batch every rank computes as
 * much as before while the node's CPU updates the same model, so throughput scales
 * until the collectives or a shared link bind; with a fixed global batch (a sweep
 * whose --gpus and --gas lists keep gpus x gas x micro-batch constant, e.g. --gpus
 * 1,2,4,8 --gas 8,4,2,1) each rank computes less while the CPU's update stays the
 * same, and the shared CPU becomes the bottleneck. When some global batch occurs at
 * two or more GPU counts, the plot keeps only the rows of the most common one
 * (strong scaling); otherwise it draws every row (per-GPU batch fixed).
 *
 * The GPU count comes from each row's stored configuration (policy.gpus and
 * policy.nodes in config_json, absent for one GPU).
 */
#include "plots/parts.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spoint {
	double gpus, y;
	int series, row;
} spoint;

static int cmp_spoint(const void *a, const void *b)
{
	const spoint *p = a, *q = b;
	if (p->series != q->series)
		return p->series - q->series;
	return (p->gpus > q->gpus) - (p->gpus < q->gpus);
}

typedef struct scaling_plot {
	int64_t run;
	rowset rs;
	int *gpus, *nodes;   /* per row, from config_json */
	double *batch;       /* per row: global batch in sequences */
	double keep_batch;   /* strong scaling: the global batch kept; 0: every row */
	unsigned vary, key;
	strlist series;
	spoint *pts;
	int np;
	char path[PATH_MAX + 32];
} scaling_plot;

static int json_count(const json_t *pol, const char *key)
{
	const json_t *v = json_object_get(pol, key);
	return json_is_integer(v) && json_integer_value(v) >= 1 ? (int)json_integer_value(v) : 1;
}

static zb_status load(plot_ctx *c, scaling_plot *p)
{
	zb_status st = plot_sweep_run(c, &p->run);
	if (st || (st = plot_load_rows_json(c, ZB_Q_CONFIG_ROWS_OF_RUN, p->run, 1, &p->rs)))
		return st;
	c->info->run_id = p->run;
	int n = p->rs.n;
	p->gpus = zb_xcalloc((size_t)(n ? n : 1), sizeof *p->gpus);
	p->nodes = zb_xcalloc((size_t)(n ? n : 1), sizeof *p->nodes);
	p->batch = zb_xcalloc((size_t)(n ? n : 1), sizeof *p->batch);
	int plotted = 0, lo = 0, hi = 0;
	for (int i = 0; i < n; i++) {
		const row *r = &p->rs.r[i];
		json_t *root = r->json ? json_loads(r->json, 0, NULL) : NULL;
		json_t *pol = json_object_get(root, "policy");
		p->gpus[i] = json_count(pol, "gpus");
		p->nodes[i] = json_count(pol, "nodes");
		json_decref(root);
		p->batch[i] = (double)p->gpus[i] * p->nodes[i] * r->num[A_GAS] * r->num[A_MB];
		if (!plot_row_plotted(r))
			continue;
		if (!plotted++)
			lo = hi = p->gpus[i];
		lo = p->gpus[i] < lo ? p->gpus[i] : lo;
		hi = p->gpus[i] > hi ? p->gpus[i] : hi;
	}
	if (plotted == 0)
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)p->run);
	if (lo == hi)
		return zb_fail(c->err, ZB_E_INPUT,
			       "run %lld has one GPU count (%d): the scaling plot needs a sweep over --gpus, e.g. --gpus 1,2,4,8",
			       (long long)p->run, lo);
	return ZB_OK;
}

/* Strong scaling when some global batch occurs at two or more GPU counts: keep the
 * one that occurs at the most (ties: the larger batch). */
static void choose_batch(scaling_plot *p)
{
	int best = 0;
	for (int i = 0; i < p->rs.n; i++) {
		if (!plot_row_plotted(&p->rs.r[i]))
			continue;
		/* distinct GPU counts among the rows of this batch */
		int seen[64], ns = 0;
		for (int j = 0; j < p->rs.n && ns < 64; j++) {
			if (!plot_row_plotted(&p->rs.r[j]) || p->batch[j] != p->batch[i])
				continue;
			int dup = 0;
			for (int k = 0; k < ns; k++)
				dup |= seen[k] == p->gpus[j];
			if (!dup)
				seen[ns++] = p->gpus[j];
		}
		if (ns >= 2 && (ns > best || (ns == best && p->batch[i] > p->keep_batch))) {
			best = ns;
			p->keep_batch = p->batch[i];
		}
	}
}

static int kept(const scaling_plot *p, int i)
{
	return plot_row_plotted(&p->rs.r[i]) && (p->keep_batch == 0 || p->batch[i] == p->keep_batch);
}

static void collect(scaling_plot *p)
{
	/* lines: what varies among the kept rows, but gas and micro-batch (the batch
	 * split) */
	p->vary = 0;
	for (int a = 0; a < A_COUNT; a++) {
		const char *first = NULL;
		for (int i = 0; i < p->rs.n; i++) {
			if (!kept(p, i))
				continue;
			if (!first)
				first = p->rs.r[i].val[a];
			else if (strcmp(first, p->rs.r[i].val[a]))
				p->vary |= 1u << a;
		}
	}
	p->key = p->vary & ~((1u << A_GAS) | (1u << A_MB));
	p->pts = zb_xmalloc((size_t)(p->rs.n ? p->rs.n : 1) * sizeof *p->pts);
	char label[512];
	for (int i = 0; i < p->rs.n; i++) {
		if (!kept(p, i))
			continue;
		const row *r = &p->rs.r[i];
		spoint *pt = &p->pts[p->np++];
		plot_row_label(r, p->key, ", ", label, sizeof label);
		pt->series = plot_sl_intern(&p->series, label);
		pt->gpus = p->gpus[i];
		pt->y = r->tokens_per_s * p->gpus[i] * p->nodes[i]; /* the job's: every rank's tokens */
		pt->row = i;
	}
	qsort(p->pts, (size_t)p->np, sizeof *p->pts, cmp_spoint);
	/* one point per line and GPU count: the fastest */
	int k = 0;
	for (int i = 0; i < p->np; i++) {
		if (k && p->pts[k - 1].series == p->pts[i].series && p->pts[k - 1].gpus == p->pts[i].gpus) {
			if (p->pts[i].y > p->pts[k - 1].y)
				p->pts[k - 1] = p->pts[i];
			continue;
		}
		p->pts[k++] = p->pts[i];
	}
	p->np = k;
}

/* Per line: its points, then linear scaling from its first point. */
static zb_status write_data(plot_ctx *c, scaling_plot *p)
{
	char line[512];
	FILE *f = plot_data_open(c, "scaling.dat", p->path, sizeof p->path);
	if (!f)
		return c->err->status;
	fprintf(f, "# run %lld: x = GPUs per node, y = tokens/s of the job; per line: predicted, then linear\n",
		(long long)p->run);
	for (int s = 0, i = 0; s < p->series.n; s++) {
		int first = i;
		fprintf(f, "# %s\n", plot_data_text(p->series.s[s], line, sizeof line));
		for (; i < p->np && p->pts[i].series == s; i++)
			fprintf(f, "%.9g %.9g\n", p->pts[i].gpus, p->pts[i].y);
		fprintf(f, "\n\n# %s: linear from %g GPUs\n", plot_data_text(p->series.s[s], line, sizeof line),
			p->pts[first].gpus);
		for (int j = first; j < i; j++)
			fprintf(f, "%.9g %.9g\n", p->pts[j].gpus, p->pts[first].y * p->pts[j].gpus / p->pts[first].gpus);
		fprintf(f, "\n\n");
	}
	return plot_data_close(c, f, p->path);
}

static void write_script(plot_ctx *c, const scaling_plot *p)
{
	char consts[512], sub[1400];
	const row *r0 = NULL;
	for (int i = 0; i < p->rs.n && !r0; i++)
		if (kept(p, i))
			r0 = &p->rs.r[i];
	plot_constants_label(r0, p->vary | (1u << A_GAS) | (1u << A_MB), consts, sizeof consts);
	if (p->keep_batch > 0)
		snprintf(sub, sizeof sub,
			 "%s · run %lld\nfixed global batch of %.0f sequences (GPUs x gas x micro-batch): each GPU computes less, "
			 "the CPU updates the same model\ndashed: linear scaling from the fewest GPUs; below it, the node's shared "
			 "CPU/DRAM, its PCIe switches or the collectives bound the step",
			 consts, (long long)p->run, p->keep_batch);
	else
		snprintf(sub, sizeof sub,
			 "%s · run %lld\nfixed batch per GPU\ndashed: linear scaling from the fewest GPUs; below it, the node's "
			 "shared CPU/DRAM, its PCIe switches or the collectives bound the step",
			 consts, (long long)p->run);
	plot_begin(c, 1200, 750, "Throughput against GPUs per node", sub);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, "GPUs per node (data-parallel ranks)"));
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "job throughput (tokens/s, all ranks)"));
	double lo = p->pts[0].gpus, hi = p->pts[0].gpus;
	for (int i = 0; i < p->np; i++) {
		lo = fmin(lo, p->pts[i].gpus);
		hi = fmax(hi, p->pts[i].gpus);
	}
	plot_gp(c, "set yrange [0:*]\nset format y '%%.0f'\nset logscale x 2\nset xrange [%.9g:%.9g]\n", lo / 1.2, hi * 1.2);
	plot_gp(c, "set xtics (");
	for (int i = 0, k = 0; i < p->np; i++) { /* a tic at every GPU count drawn */
		int dup = 0;
		for (int j = 0; j < i; j++)
			dup |= p->pts[j].gpus == p->pts[i].gpus;
		if (!dup)
			plot_gp(c, "%s%g", k++ ? ", " : "", p->pts[i].gpus);
	}
	plot_gp(c, ")\n");
	plot_gp(c, "set key outside right top vertical reverse Left\n");
	plot_gp(c, "plot ");
	for (int s = 0; s < p->series.n; s++) {
		const char *title = p->series.s[s][0] ? p->series.s[s] : "predicted";
		char lin[600];
		snprintf(lin, sizeof lin, "%s: linear", title);
		plot_gp(c, "%s %s index %d using 1:2 with linespoints lw 2 pt %d ps 1.2 lc rgb '%s' title %s, \\\n"
			   "  %s index %d using 1:2 with lines lw 1 dt 2 lc rgb '%s' title %s",
			s ? ", \\\n  " : "", plot_gq(c, p->path), 2 * s, plot_point_types[s % NPOINTS],
			plot_palette[s % NPALETTE], plot_gq(c, title), plot_gq(c, p->path), 2 * s + 1,
			plot_palette[s % NPALETTE], plot_gq(c, lin));
	}
	plot_gp(c, "\n");
}

zb_status plot_scaling(plot_ctx *c)
{
	scaling_plot p;
	memset(&p, 0, sizeof p);
	zb_status st = load(c, &p);
	if (!st) {
		choose_batch(&p);
		collect(&p);
		if (!(st = write_data(c, &p))) {
			write_script(c, &p);
			st = plot_render(c);
		}
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "run %lld: %d points in %d line%s (%s)", (long long)p.run,
			 p.np, p.series.n, p.series.n == 1 ? "" : "s",
			 p.keep_batch > 0 ? "fixed global batch" : "fixed batch per GPU");
	free(p.gpus);
	free(p.nodes);
	free(p.batch);
	free(p.pts);
	plot_sl_free(&p.series);
	plot_rowset_free(&p.rs);
	return st;
}
