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

zb_status plot_ratio(plot_ctx *c)
{
	int64_t run;
	zb_status st = plot_sweep_run(c, &run);
	if (st)
		return st;
	rowset rs;
	if ((st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, &rs)))
		return st;
	c->info->run_id = run;
	int nplot = 0, nofit = 0;
	for (int i = 0; i < rs.n; i++) {
		nplot += plot_row_plotted(&rs.r[i]);
		nofit += rs.r[i].has_pred && !rs.r[i].fits;
	}
	if (rs.n == 0) {
		plot_rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configurations to plot", (long long)run);
	}
	if (nplot == 0) {
		plot_rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)run);
	}

	unsigned vary = plot_varying_mask(&rs, plot_row_plotted);
	int x = A_RATIO;
	for (size_t i = 0; i < sizeof x_candidates / sizeof x_candidates[0]; i++)
		if (vary & (1u << x_candidates[i])) {
			x = x_candidates[i];
			break;
		}
	unsigned key = vary & ~(1u << x);
	/* more lines than a reader can tell apart: keep the hardware axes (else the link
	 * alone) as lines and draw the fastest of the other settings at each x */
	unsigned collapsed = 0;
	if (count_series(&rs, key) > MAX_LINES) {
		unsigned hw = key & ((1u << A_LINK) | (1u << A_HW) | (1u << A_GPU) | (1u << A_CPU) | (1u << A_CORES));
		unsigned k2 = count_series(&rs, hw) <= MAX_LINES ? hw : key & (1u << A_LINK);
		collapsed = key & ~k2;
		key = k2;
	}
	/* colour by PCIe generation when it varies, line style by the rest */
	int primary = (key & (1u << A_LINK)) ? A_LINK : -1;
	unsigned rest = primary >= 0 ? key & ~(1u << primary) : key;

	strlist series = { 0 }, prim = { 0 }, rests = { 0 }, cats = { 0 };
	point *pts = zb_xmalloc((size_t)nplot * sizeof *pts);
	int np = 0, best = -1;
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!plot_row_plotted(r))
			continue;
		plot_row_label(r, key, ", ", label, sizeof label);
		pts[np].series = plot_sl_intern(&series, label);
		if (primary >= 0)
			plot_sl_intern(&prim, r->val[primary]);
		plot_row_label(r, rest, ", ", label, sizeof label);
		if (!(x == A_RATIO && !strcmp(r->val[A_POLICY], "none")))
			plot_sl_intern(&rests, label); /* line styles for the offloading lines */
		pts[np].x = plot_attrs[x].numeric ? r->num[x] : (double)plot_sl_intern(&cats, r->val[x]);
		pts[np].y = r->tokens_per_s;
		pts[np].row = i;
		if (best < 0 || r->tokens_per_s > pts[best].y)
			best = np;
		np++;
	}
	double bx = pts[best].x, by = pts[best].y;
	const row *brow = &rs.r[pts[best].row];
	qsort(pts, (size_t)np, sizeof *pts, cmp_point);
	int kept = 0; /* one point per line and x: the fastest (more than one only when collapsed) */
	for (int i = 0; i < np; i++) {
		if (kept > 0 && pts[kept - 1].series == pts[i].series && pts[kept - 1].x == pts[i].x) {
			if (pts[i].y > pts[kept - 1].y)
				pts[kept - 1] = pts[i];
			continue;
		}
		pts[kept++] = pts[i];
	}
	np = kept;
	double xmin = pts[0].x, xmax = pts[0].x;
	for (int i = 0; i < np; i++) {
		xmin = fmin(xmin, pts[i].x);
		xmax = fmax(xmax, pts[i].x);
	}

	char path[PATH_MAX + 32];
	FILE *f = plot_data_open(c, "throughput.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	fprintf(f, "# run %lld: x = %s, y = tokens/s; one block per line\n", (long long)run, plot_attrs[x].col);
	int *flat = zb_xcalloc((size_t)series.n, sizeof *flat); /* a 'none' series: one value for any ratio */
	for (int s = 0, i = 0; s < series.n; s++) {
		fprintf(f, "# %s\n", series.s[s]);
		int first = i, count = 0;
		for (; i < np && pts[i].series == s; i++, count++)
			fprintf(f, "%.9g %.9g\n", pts[i].x, pts[i].y);
		if (x == A_RATIO && count == 1 && !strcmp(rs.r[pts[first].row].val[A_POLICY], "none") &&
		    xmax > xmin) {
			fprintf(f, "%.9g %.9g\n", pts[first].x == xmin ? xmax : xmin, pts[first].y);
			flat[s] = 1;
		}
		fprintf(f, "\n\n");
	}
	fprintf(f, "# fastest\n%.9g %.9g\n", bx, by);
	if ((st = plot_data_close(c, f, path))) {
		free(flat);
		goto out;
	}

	char consts[512], sub[1024], bestl[512], num[32], bestv[600];
	plot_constants_label(brow, vary, consts, sizeof consts);
	snprintf(sub, sizeof sub, "%s · run %lld: %d configurations", consts, (long long)run, nplot);
	if (nofit)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), ", %d more did not fit in memory", nofit);
	plot_row_label(brow, vary, ", ", bestl, sizeof bestl);
	snprintf(bestv, sizeof bestv, "\nfastest (circled): %s tokens/s%s%s%s", plot_thousands(by, num, sizeof num),
		 bestl[0] ? ", " : "", bestl, "");
	snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s", bestv);
	if (collapsed) {
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "\neach line: the fastest");
		for (int a = 0, k = 0; a < A_COUNT; a++)
			if (collapsed & (1u << a))
				snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s %s", k++ ? "," : "",
					 plot_attrs[a].col);
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " at each point");
	}

	char title[200];
	if (x == A_RATIO)
		snprintf(title, sizeof title, "Throughput against Twin-Flow ratio");
	else
		snprintf(title, sizeof title, "Throughput against %s", plot_attrs[x].axis);
	plot_begin(c, 1200, 750, title, sub);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, plot_attrs[x].axis));
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "throughput (tokens/s)"));
	plot_gp(c, "set yrange [0:*]\nset format y '%%.0f'\n");
	plot_gp(c, "set offsets 0, 0, graph 0.08, 0\n");
	double pad = xmax > xmin ? 0.04 * (xmax - xmin) : 0.5;
	plot_gp(c, "set xrange [%.9g:%.9g]\n", xmin - pad, xmax + pad);
	if (!plot_attrs[x].numeric) {
		plot_gp(c, "set xtics (");
		for (int i = 0; i < cats.n; i++)
			plot_gp(c, "%s%s %d", i ? ", " : "", plot_gq(c, cats.s[i]), i);
		plot_gp(c, ")\n");
	} else if (x == A_RATIO) {
		plot_gp(c, "set xtics 0.1\nset format x '%%.2g'\n");
	}
	int outside = series.n > 8;
	/* throughput falls with the ratio once the CPU bounds it, so the bottom left is
	 * free; on other axes it often rises from there, so the key goes outside */
	plot_gp(c, "set key %s reverse Left\n",
	   outside || x != A_RATIO ? "outside right top vertical" : "inside bottom left vertical");
	plot_gp(c, "plot ");
	for (int s = 0; s < series.n; s++) {
		int ci = s, di = 0;
		/* find this series' primary and rest indices from its label's row */
		for (int i = 0; i < np; i++)
			if (pts[i].series == s) {
				const row *r = &rs.r[pts[i].row];
				plot_row_label(r, rest, ", ", label, sizeof label);
				di = plot_sl_find(&rests, label);
				if (di < 0)
					di = 0;
				ci = primary >= 0 ? plot_sl_find(&prim, r->val[primary]) : s;
				break;
			}
		const char *title = series.s[s][0] ? series.s[s] : "predicted";
		/* dash types 1 solid, 2 dashed, 4 dash-dot, 5 dash-dot-dot; 3 (dotted) marks
		 * the no-offload baseline */
		static const int dts[] = { 1, 2, 4, 5 };
		if (flat[s]) {
			char t[600];
			snprintf(t, sizeof t, "%s (no offload: any ratio)", title);
			plot_gp(c, "%s %s index %d using 1:2 with lines lw 2 dt 3 lc rgb '%s' title %s", s ? ", \\\n  " : "",
			   plot_gq(c, path), s, plot_palette[ci % NPALETTE], plot_gq(c, t));
		} else {
			plot_gp(c, "%s %s index %d using 1:2 with linespoints lw 2 dt %d pt %d ps 1.2 lc rgb '%s' title %s",
			   s ? ", \\\n  " : "", plot_gq(c, path), s, dts[di % 4], plot_point_types[di % NPOINTS],
			   plot_palette[ci % NPALETTE], plot_gq(c, title));
		}
	}
	plot_gp(c, ", \\\n   %s index %d using 1:2 with points pt 6 ps 3.5 lw 2 lc rgb '#222222' notitle\n", plot_gq(c, path),
	   series.n);
	free(flat);
	if ((st = plot_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "run %lld: %d configurations in %d line%s", (long long)run,
		 nplot, series.n, series.n == 1 ? "" : "s");
out:
	free(pts);
	plot_sl_free(&series);
	plot_sl_free(&prim);
	plot_sl_free(&rests);
	plot_sl_free(&cats);
	plot_rowset_free(&rs);
	return st;
}
