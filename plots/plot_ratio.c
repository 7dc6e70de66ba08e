/*
 * plot_ratio.c - the ratio plot: tokens/s against the Twin-Flow ratio (or the first axis a
 * sweep varied), one line per PCIe generation and per other varied axis.
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- throughput against the ratio (or another axis) ---------------------------- */

#define MAX_LINES 12

/* Lines a key would give: distinct labels of its attributes among plotted rows. */
static int count_series(const rowset *rs, unsigned key)
{
	strlist l = { 0 };
	char label[512];
	for (int i = 0; i < rs->n; i++)
		if (plot_row_plotted(&rs->r[i])) {
			plot_row_label(&rs->r[i], key, ", ", label, sizeof label);
			plot_sl_intern(&l, label);
		}
	int n = l.n;
	plot_sl_free(&l);
	return n;
}

/* x axes in order of preference when the ratio does not vary */
static const int x_candidates[] = { A_RATIO, A_CORES, A_THREADS, A_MB, A_SEQ, A_GAS, A_BUCKET, A_PREFETCH,
				    A_LINK, A_MODEL, A_POLICY, A_GPU, A_HW, A_CPU, A_CKPT, A_DTYPE,
				    A_OFFLOAD_PARAM, A_PAGEABLE };

typedef struct point {
	double x, y;
	int series;
	int row;
} point;

static int cmp_point(const void *a, const void *b)
{
	const point *p = a, *q = b;
	if (p->series != q->series)
		return p->series - q->series;
	return (p->x > q->x) - (p->x < q->x);
}

/* One throughput plot: the rows, the x axis, the lines and their points. */
typedef struct ratio_plot {
	int64_t run;
	rowset rs;
	int nplot, nofit;
	unsigned vary, key, collapsed, rest;
	int x, primary;
	strlist series, prim, rests, cats;
	point *pts;
	int np, *flat;
	double bx, by, xmin, xmax;
	const row *brow;
	char path[PATH_MAX + 32];
} ratio_plot;

static zb_status load(plot_ctx *c, ratio_plot *p)
{
	zb_status st = plot_sweep_run(c, &p->run);
	if (st || (st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, p->run, &p->rs)))
		return st;
	c->info->run_id = p->run;
	for (int i = 0; i < p->rs.n; i++) {
		p->nplot += plot_row_plotted(&p->rs.r[i]);
		p->nofit += p->rs.r[i].has_pred && !p->rs.r[i].fits;
	}
	if (p->rs.n == 0)
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configurations to plot", (long long)p->run);
	if (p->nplot == 0)
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)p->run);
	return ZB_OK;
}

/* The x axis (the ratio, else the first axis the sweep varied) and what makes a line. */
static void choose_axes(ratio_plot *p)
{
	p->vary = plot_varying_mask(&p->rs, plot_row_plotted);
	p->x = A_RATIO;
	for (size_t i = 0; i < sizeof x_candidates / sizeof x_candidates[0]; i++)
		if (p->vary & (1u << x_candidates[i])) {
			p->x = x_candidates[i];
			break;
		}
	p->key = p->vary & ~(1u << p->x);
	/* more lines than a reader can tell apart: keep the hardware axes (else the link
	 * alone) as lines and draw the fastest of the other settings at each x */
	if (count_series(&p->rs, p->key) > MAX_LINES) {
		unsigned hw = p->key & ((1u << A_LINK) | (1u << A_HW) | (1u << A_GPU) | (1u << A_CPU) | (1u << A_CORES));
		unsigned k2 = count_series(&p->rs, hw) <= MAX_LINES ? hw : p->key & (1u << A_LINK);
		p->collapsed = p->key & ~k2;
		p->key = k2;
	}
	/* colour by PCIe generation when it varies, line style by the rest */
	p->primary = (p->key & (1u << A_LINK)) ? A_LINK : -1;
	p->rest = p->primary >= 0 ? p->key & ~(1u << p->primary) : p->key;
}

/* One point per plotted row, then one per line and x: the fastest (more than one
 * only when lines were collapsed). */
static void collect_points(ratio_plot *p)
{
	char label[512];
	int best = -1, x = p->x;
	p->pts = zb_xmalloc((size_t)p->nplot * sizeof *p->pts);
	for (int i = 0; i < p->rs.n; i++) {
		row *r = &p->rs.r[i];
		if (!plot_row_plotted(r))
			continue;
		point *pt = &p->pts[p->np];
		plot_row_label(r, p->key, ", ", label, sizeof label);
		pt->series = plot_sl_intern(&p->series, label);
		if (p->primary >= 0)
			plot_sl_intern(&p->prim, r->val[p->primary]);
		plot_row_label(r, p->rest, ", ", label, sizeof label);
		if (!(x == A_RATIO && !strcmp(r->val[A_POLICY], "none")))
			plot_sl_intern(&p->rests, label); /* line styles for the offloading lines */
		pt->x = plot_attrs[x].numeric ? r->num[x] : (double)plot_sl_intern(&p->cats, r->val[x]);
		pt->y = r->tokens_per_s;
		pt->row = i;
		if (best < 0 || r->tokens_per_s > p->pts[best].y)
			best = p->np;
		p->np++;
	}
	p->bx = p->pts[best].x;
	p->by = p->pts[best].y;
	p->brow = &p->rs.r[p->pts[best].row];
	qsort(p->pts, (size_t)p->np, sizeof *p->pts, cmp_point);
	int kept = 0;
	for (int i = 0; i < p->np; i++) {
		if (kept > 0 && p->pts[kept - 1].series == p->pts[i].series && p->pts[kept - 1].x == p->pts[i].x) {
			if (p->pts[i].y > p->pts[kept - 1].y)
				p->pts[kept - 1] = p->pts[i];
			continue;
		}
		p->pts[kept++] = p->pts[i];
	}
	p->np = kept;
	p->xmin = p->xmax = p->pts[0].x;
	for (int i = 0; i < p->np; i++) {
		p->xmin = fmin(p->xmin, p->pts[i].x);
		p->xmax = fmax(p->xmax, p->pts[i].x);
	}
}

static zb_status write_data(plot_ctx *c, ratio_plot *p)
{
	char line[512];
	FILE *f = plot_data_open(c, "throughput.dat", p->path, sizeof p->path);
	if (!f)
		return c->err->status;
	fprintf(f, "# run %lld: x = %s, y = tokens/s; one block per line\n", (long long)p->run, plot_attrs[p->x].col);
	p->flat = zb_xcalloc((size_t)p->series.n, sizeof *p->flat); /* a 'none' series: one value for any ratio */
	for (int s = 0, i = 0; s < p->series.n; s++) {
		fprintf(f, "# %s\n", plot_data_text(p->series.s[s], line, sizeof line));
		int first = i, count = 0;
		for (; i < p->np && p->pts[i].series == s; i++, count++)
			fprintf(f, "%.9g %.9g\n", p->pts[i].x, p->pts[i].y);
		if (p->x == A_RATIO && count == 1 && !strcmp(p->rs.r[p->pts[first].row].val[A_POLICY], "none") &&
		    p->xmax > p->xmin) {
			fprintf(f, "%.9g %.9g\n", p->pts[first].x == p->xmin ? p->xmax : p->xmin, p->pts[first].y);
			p->flat[s] = 1;
		}
		fprintf(f, "\n\n");
	}
	fprintf(f, "# fastest\n%.9g %.9g\n", p->bx, p->by);
	return plot_data_close(c, f, p->path);
}

static void subtitle(const ratio_plot *p, char *sub, size_t n)
{
	char consts[512], bestl[512], num[32], bestv[600];
	plot_constants_label(p->brow, p->vary, consts, sizeof consts);
	snprintf(sub, n, "%s · run %lld: %d configurations", consts, (long long)p->run, p->nplot);
	if (p->nofit)
		snprintf(sub + strlen(sub), n - strlen(sub), ", %d more did not fit in memory", p->nofit);
	plot_row_label(p->brow, p->vary, ", ", bestl, sizeof bestl);
	snprintf(bestv, sizeof bestv, "\nfastest (circled): %s tokens/s%s%s%s", plot_thousands(p->by, num, sizeof num),
		 bestl[0] ? ", " : "", bestl, "");
	snprintf(sub + strlen(sub), n - strlen(sub), "%s", bestv);
	if (p->collapsed) {
		snprintf(sub + strlen(sub), n - strlen(sub), "\neach line: the fastest");
		for (int a = 0, k = 0; a < A_COUNT; a++)
			if (p->collapsed & (1u << a))
				snprintf(sub + strlen(sub), n - strlen(sub), "%s %s", k++ ? "," : "", plot_attrs[a].col);
		snprintf(sub + strlen(sub), n - strlen(sub), " at each point");
	}
}

/* The plot command of line s: colour by its primary value, dash and point by the rest. */
static void plot_line(plot_ctx *c, const ratio_plot *p, int s)
{
	char label[512];
	int ci = s, di = 0;
	/* find this series' primary and rest indices from its label's row */
	for (int i = 0; i < p->np; i++)
		if (p->pts[i].series == s) {
			const row *r = &p->rs.r[p->pts[i].row];
			plot_row_label(r, p->rest, ", ", label, sizeof label);
			di = plot_sl_find(&p->rests, label);
			if (di < 0)
				di = 0;
			ci = p->primary >= 0 ? plot_sl_find(&p->prim, r->val[p->primary]) : s;
			break;
		}
	const char *title = p->series.s[s][0] ? p->series.s[s] : "predicted";
	/* dash types 1 solid, 2 dashed, 4 dash-dot, 5 dash-dot-dot; 3 (dotted) marks
	 * the no-offload baseline */
	static const int dts[] = { 1, 2, 4, 5 };
	if (p->flat[s]) {
		char t[600];
		snprintf(t, sizeof t, "%s (no offload: any ratio)", title);
		plot_gp(c, "%s %s index %d using 1:2 with lines lw 2 dt 3 lc rgb '%s' title %s", s ? ", \\\n  " : "",
			plot_gq(c, p->path), s, plot_palette[ci % NPALETTE], plot_gq(c, t));
	} else {
		plot_gp(c, "%s %s index %d using 1:2 with linespoints lw 2 dt %d pt %d ps 1.2 lc rgb '%s' title %s",
			s ? ", \\\n  " : "", plot_gq(c, p->path), s, dts[di % 4], plot_point_types[di % NPOINTS],
			plot_palette[ci % NPALETTE], plot_gq(c, title));
	}
}

static void write_script(plot_ctx *c, const ratio_plot *p)
{
	char sub[1024], title[200];
	int x = p->x;
	subtitle(p, sub, sizeof sub);
	if (x == A_RATIO)
		snprintf(title, sizeof title, "Throughput against Twin-Flow ratio");
	else
		snprintf(title, sizeof title, "Throughput against %s", plot_attrs[x].axis);
	plot_begin(c, 1200, 750, title, sub);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, plot_attrs[x].axis));
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "throughput (tokens/s)"));
	plot_gp(c, "set yrange [0:*]\nset format y '%%.0f'\n");
	plot_gp(c, "set offsets 0, 0, graph 0.08, 0\n");
	double pad = p->xmax > p->xmin ? 0.04 * (p->xmax - p->xmin) : 0.5;
	plot_gp(c, "set xrange [%.9g:%.9g]\n", p->xmin - pad, p->xmax + pad);
	if (!plot_attrs[x].numeric) {
		plot_gp(c, "set xtics (");
		for (int i = 0; i < p->cats.n; i++)
			plot_gp(c, "%s%s %d", i ? ", " : "", plot_gq(c, p->cats.s[i]), i);
		plot_gp(c, ")\n");
	} else if (x == A_RATIO) {
		plot_gp(c, "set xtics 0.1\nset format x '%%.2g'\n");
	} else { /* a tick at each value swept (cores 16, 32, 64), not gnuplot's round spacing */
		plot_gp(c, "set xtics (");
		for (int i = 0, k = 0; i < p->np; i++) {
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = p->pts[j].x == p->pts[i].x;
			if (!seen)
				plot_gp(c, "%s%.9g", k++ ? ", " : "", p->pts[i].x);
		}
		plot_gp(c, ")\n");
	}
	int outside = p->series.n > 8;
	/* throughput falls with the ratio once the CPU bounds it, so the bottom left is
	 * free; on other axes it often rises from there, so the key goes outside */
	plot_gp(c, "set key %s reverse Left\n",
		outside || x != A_RATIO ? "outside right top vertical" : "inside bottom left vertical");
	plot_gp(c, "plot ");
	for (int s = 0; s < p->series.n; s++)
		plot_line(c, p, s);
	plot_gp(c, ", \\\n   %s index %d using 1:2 with points pt 6 ps 3.5 lw 2 lc rgb '#222222' notitle\n",
		plot_gq(c, p->path), p->series.n);
}

zb_status plot_ratio(plot_ctx *c)
{
	ratio_plot p;
	memset(&p, 0, sizeof p);
	zb_status st = load(c, &p);
	if (!st) {
		choose_axes(&p);
		collect_points(&p);
		if (!(st = write_data(c, &p))) {
			write_script(c, &p);
			st = plot_render(c);
		}
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "run %lld: %d configurations in %d line%s",
			 (long long)p.run, p.nplot, p.series.n, p.series.n == 1 ? "" : "s");
	free(p.flat);
	free(p.pts);
	plot_sl_free(&p.series);
	plot_sl_free(&p.prim);
	plot_sl_free(&p.rests);
	plot_sl_free(&p.cats);
	plot_rowset_free(&p.rs);
	return st;
}
