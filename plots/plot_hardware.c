/*
 * plot_hardware.c - the hardware plot: speedup by PCIe generation and CPU cores, each at its
 * fastest policy and ratio, relative to the slowest.
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the hardware-purchase view ------------------------------------------------ */

/* One hardware plot: x = link (and machine, GPU), a bar per core count, each cell
 * the fastest configuration of that hardware. */
typedef struct hw_plot {
	int64_t run;
	rowset rs;
	int first, nfit, other_workloads;
	unsigned vary, xkey, bkey, tuned;
	strlist xs, bs;
	int nx, nb;
	double *best, *bcores, base, width, ymax;
	int *arg, *border, base_cell;
	char path[PATH_MAX + 32];
} hw_plot;

static zb_status load(plot_ctx *c, hw_plot *p)
{
	zb_status st = plot_sweep_run(c, &p->run);
	if (st || (st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, p->run, &p->rs)))
		return st;
	c->info->run_id = p->run;
	p->first = -1;
	for (int i = 0; i < p->rs.n; i++)
		if (plot_row_plotted(&p->rs.r[i])) {
			if (p->first < 0)
				p->first = i;
			p->nfit++;
		}
	if (p->first < 0)
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)p->run);
	p->vary = plot_varying_mask(&p->rs, plot_row_plotted);
	p->other_workloads = (p->vary & ((1u << A_MODEL) | (1u << A_SEQ))) != 0;
	p->xkey = (1u << A_LINK) | (p->vary & ((1u << A_HW) | (1u << A_GPU)));
	p->bkey = (1u << A_CORES) | (p->vary & (1u << A_CPU));
	p->tuned = p->vary & ~(p->xkey | p->bkey | (1u << A_MODEL) | (1u << A_SEQ));
	return ZB_OK;
}

/* One workload: the first plotted row's model and sequence length. */
static int in_workload(const hw_plot *p, const row *r)
{
	const row *w = &p->rs.r[p->first];
	return plot_row_plotted(r) && !strcmp(r->val[A_MODEL], w->val[A_MODEL]) && !strcmp(r->val[A_SEQ], w->val[A_SEQ]);
}

/* "h100 gen4" before "h100 gen5" before "h200 gen4": byte order, digits as numbers. */
static int natural_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	while (*x && *y) {
		if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
			char *ex, *ey;
			double u = strtod(x, &ex), v = strtod(y, &ey);
			if (u != v)
				return u < v ? -1 : 1;
			x = ex, y = ey;
			continue;
		}
		if (*x != *y)
			return (unsigned char)*x - (unsigned char)*y;
		x++, y++;
	}
	return (unsigned char)*x - (unsigned char)*y;
}

static void sort_labels(strlist *l)
{
	qsort(l->s, (size_t)l->n, sizeof *l->s, natural_cmp);
}

/* The fastest row of each (x, bar) cell; bars in ascending core count; the slowest
 * cell is 1.00x. */
static void fill_cells(hw_plot *p)
{
	char label[512];
	for (int i = 0; i < p->rs.n; i++) {
		row *r = &p->rs.r[i];
		if (!in_workload(p, r))
			continue;
		plot_row_label(r, p->xkey, " ", label, sizeof label);
		plot_sl_intern(&p->xs, label);
		plot_row_label(r, p->bkey, ", ", label, sizeof label);
		plot_sl_intern(&p->bs, label);
	}
	sort_labels(&p->xs); /* groups in a stable order (link, then GPU), not the order rows came in */
	int nb = p->nb = p->bs.n, nx = p->nx = p->xs.n;
	p->best = zb_xmalloc((size_t)(nx * nb) * sizeof *p->best);
	p->arg = zb_xmalloc((size_t)(nx * nb) * sizeof *p->arg);
	p->bcores = zb_xmalloc((size_t)nb * sizeof *p->bcores);
	p->border = zb_xmalloc((size_t)nb * sizeof *p->border);
	for (int i = 0; i < nx * nb; i++) {
		p->best[i] = NAN;
		p->arg[i] = -1;
	}
	for (int b = 0; b < nb; b++)
		p->bcores[b] = -1;
	for (int i = 0; i < p->rs.n; i++) {
		row *r = &p->rs.r[i];
		if (!in_workload(p, r))
			continue;
		plot_row_label(r, p->xkey, " ", label, sizeof label);
		int xi = plot_sl_find(&p->xs, label);
		plot_row_label(r, p->bkey, ", ", label, sizeof label);
		int bi = plot_sl_find(&p->bs, label);
		p->bcores[bi] = r->num[A_CORES];
		double *cell = &p->best[xi * nb + bi];
		if (isnan(*cell) || r->tokens_per_s > *cell) {
			*cell = r->tokens_per_s;
			p->arg[xi * nb + bi] = i;
		}
	}
	for (int b = 0; b < nb; b++)
		p->border[b] = b;
	for (int i = 1; i < nb; i++) /* insertion sort by cores, stable */
		for (int j = i; j > 0 && p->bcores[p->border[j - 1]] > p->bcores[p->border[j]]; j--) {
			int t = p->border[j];
			p->border[j] = p->border[j - 1];
			p->border[j - 1] = t;
		}
	p->base = NAN;
	p->base_cell = -1;
	for (int i = 0; i < nx * nb; i++)
		if (!isnan(p->best[i]) && (isnan(p->base) || p->best[i] < p->base)) {
			p->base = p->best[i];
			p->base_cell = i;
		}
}

static zb_status write_data(plot_ctx *c, hw_plot *p)
{
	char line[512];
	FILE *f = plot_data_open(c, "hardware.dat", p->path, sizeof p->path);
	if (!f)
		return c->err->status;
	int nb = p->nb;
	p->width = 0.8 / nb;
	fprintf(f, "# run %lld: x position, speedup, tokens/s; one block per core count\n", (long long)p->run);
	p->ymax = 1.0;
	for (int bb = 0; bb < nb; bb++) {
		int b = p->border[bb];
		fprintf(f, "# %s\n", plot_data_text(p->bs.s[b], line, sizeof line));
		for (int xi = 0; xi < p->nx; xi++) {
			double v = p->best[xi * nb + b];
			double pos = xi + (bb - (nb - 1) / 2.0) * p->width;
			if (isnan(v)) {
				fprintf(f, "%.6g NaN NaN \"\" \"\"\n", pos);
				continue;
			}
			char lab[512];
			const row *r = &p->rs.r[p->arg[xi * nb + b]];
			int show_ratio = (p->tuned & (1u << A_RATIO)) && strcmp(r->val[A_POLICY], "none");
			int show_pol = (p->tuned & (1u << A_POLICY)) != 0;
			snprintf(lab, sizeof lab, "%s%s%s", show_pol ? r->val[A_POLICY] : "", show_pol && show_ratio ? ", " : "",
				 show_ratio ? r->val[A_RATIO] : "");
			fprintf(f, "%.6g %.9g %.9g \"%.2f×\" \"%s\"\n", pos, v / p->base, v, v / p->base,
				plot_data_text(lab, line, sizeof line));
			p->ymax = fmax(p->ymax, v / p->base);
		}
		fprintf(f, "\n\n");
	}
	return plot_data_close(c, f, p->path);
}

static void subtitle(const hw_plot *p, char *sub, size_t n)
{
	char consts[512], num[32], tunedl[256] = "", basel[256];
	unsigned cvary = p->vary | p->xkey | p->bkey;
	plot_constants_label(&p->rs.r[p->first], cvary & ~((1u << A_MODEL) | (1u << A_SEQ)), consts, sizeof consts);
	for (int a = 0, k = 0; a < A_COUNT; a++)
		if (p->tuned & (1u << a)) {
			const char *nm = a == A_RATIO ? "ratio" : a == A_MB ? "micro-batch" : plot_attrs[a].col;
			snprintf(tunedl + strlen(tunedl), sizeof tunedl - strlen(tunedl), "%s%s", k++ ? ", " : "", nm);
		}
	const row *br = &p->rs.r[p->arg[p->base_cell]];
	plot_row_label(br, p->xkey | p->bkey, ", ", basel, sizeof basel);
	snprintf(sub, n, "%s%s · run %lld · 1.00× = %s tokens/s (%s)%s%s%s", consts,
		 p->other_workloads ? " (first workload of the run)" : "", (long long)p->run,
		 plot_thousands(p->base, num, sizeof num), basel, tunedl[0] ? "\neach bar: the fastest " : "", tunedl,
		 tunedl[0] ? " of the run for that hardware" : "");
}

static void write_script(plot_ctx *c, const hw_plot *p)
{
	char sub[1200];
	subtitle(p, sub, sizeof sub);
	plot_begin(c, 1200, 750, "Speedup by hardware: PCIe generation and CPU cores", sub);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, "host link (PCIe generation)"));
	/* differences of a few percent (1.00-1.18x) vanish on an axis from 0: below 2x the axis
	 * starts just under 1, and says so */
	double ymin = 0;
	if (p->ymax < 2) {
		ymin = floor((1 - 0.5 * (p->ymax - 1) - 0.02) * 20) / 20;
		ymin = ymin < 0 ? 0 : ymin;
	}
	char ylab[96];
	snprintf(ylab, sizeof ylab, "speedup over the slowest hardware (×)%s", ymin > 0 ? ", axis not from 0" : "");
	plot_gp(c, "set ylabel %s\n", plot_gq(c, ylab));
	plot_gp(c, "set yrange [%.6g:%.6g]\n", ymin, ymin + (p->ymax - ymin) * 1.18);
	plot_gp(c, "set xrange [-0.6:%.6g]\n", p->nx - 0.4);
	plot_gp(c, "set grid noxtics\n");
	plot_gp(c, "set xtics (");
	for (int i = 0; i < p->nx; i++)
		plot_gp(c, "%s%s %d", i ? ", " : "", plot_gq(c, p->xs.s[i]), i);
	plot_gp(c, ")\n");
	plot_gp(c, "set boxwidth %.6g absolute\nset style fill solid 0.85 border lc rgb '#333333'\n", p->width * 0.92);
	plot_gp(c, "set key outside right top vertical title %s\n", plot_gq(c, "CPU cores"));
	plot_gp(c, "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'\n");
	plot_gp(c, "plot ");
	for (int bb = 0; bb < p->nb; bb++)
		plot_gp(c, "%s%s index %d using 1:2 with boxes lc rgb '%s' title %s", bb ? ", \\\n  " : "",
			plot_gq(c, p->path), bb, plot_palette[bb % NPALETTE], plot_gq(c, p->bs.s[p->border[bb]]));
	/* the speedup above each bar, the settings that won written up inside it */
	for (int bb = 0; bb < p->nb; bb++)
		plot_gp(c, ", \\\n  %s index %d using 1:2:4 with labels offset 0,0.8 font ',10' notitle",
			plot_gq(c, p->path), bb);
	for (int bb = 0; bb < p->nb; bb++)
		plot_gp(c, ", \\\n  %s index %d using 1:2:5 with labels rotate by 90 right offset 0,-0.6 font ',9'"
			   " textcolor rgb '#1a1a1a' notitle",
			plot_gq(c, p->path), bb);
	plot_gp(c, "\n");
}

zb_status plot_hardware(plot_ctx *c)
{
	hw_plot p;
	memset(&p, 0, sizeof p);
	zb_status st = load(c, &p);
	if (!st) {
		fill_cells(&p);
		if (!(st = write_data(c, &p))) {
			write_script(c, &p);
			st = plot_render(c);
		}
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "run %lld: %d links x %d core counts from %d configurations",
			 (long long)p.run, p.nx, p.nb, p.nfit);
	free(p.best);
	free(p.arg);
	free(p.bcores);
	free(p.border);
	plot_sl_free(&p.xs);
	plot_sl_free(&p.bs);
	plot_rowset_free(&p.rs);
	return st;
}
