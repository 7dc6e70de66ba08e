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

zb_status plot_hardware(plot_ctx *c)
{
	int64_t run;
	zb_status st = plot_sweep_run(c, &run);
	if (st)
		return st;
	rowset rs;
	if ((st = plot_load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, &rs)))
		return st;
	c->info->run_id = run;
	int first = -1, nfit = 0;
	for (int i = 0; i < rs.n; i++)
		if (plot_row_plotted(&rs.r[i])) {
			if (first < 0)
				first = i;
			nfit++;
		}
	if (first < 0) {
		plot_rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)run);
	}
	unsigned vary = plot_varying_mask(&rs, plot_row_plotted);
	/* one workload: the first plotted row's model and sequence length */
	const row *w = &rs.r[first];
	int other_workloads = (vary & ((1u << A_MODEL) | (1u << A_SEQ))) != 0;
	unsigned xkey = (1u << A_LINK) | (vary & ((1u << A_HW) | (1u << A_GPU)));
	unsigned bkey = (1u << A_CORES) | (vary & (1u << A_CPU));
	unsigned tuned = vary & ~(xkey | bkey | (1u << A_MODEL) | (1u << A_SEQ));

	strlist xs = { 0 }, bs = { 0 };
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!plot_row_plotted(r) || strcmp(r->val[A_MODEL], w->val[A_MODEL]) || strcmp(r->val[A_SEQ], w->val[A_SEQ]))
			continue;
		plot_row_label(r, xkey, " ", label, sizeof label);
		plot_sl_intern(&xs, label);
		plot_row_label(r, bkey, ", ", label, sizeof label);
		plot_sl_intern(&bs, label);
	}
	/* bars in ascending core count */
	int nb = bs.n, nx = xs.n;
	double *best = zb_xmalloc((size_t)(nx * nb) * sizeof *best);
	int *arg = zb_xmalloc((size_t)(nx * nb) * sizeof *arg);
	double *bcores = zb_xmalloc((size_t)nb * sizeof *bcores);
	int *border = zb_xmalloc((size_t)nb * sizeof *border);
	for (int i = 0; i < nx * nb; i++) {
		best[i] = NAN;
		arg[i] = -1;
	}
	for (int b = 0; b < nb; b++)
		bcores[b] = -1;
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!plot_row_plotted(r) || strcmp(r->val[A_MODEL], w->val[A_MODEL]) || strcmp(r->val[A_SEQ], w->val[A_SEQ]))
			continue;
		plot_row_label(r, xkey, " ", label, sizeof label);
		int xi = plot_sl_find(&xs, label);
		plot_row_label(r, bkey, ", ", label, sizeof label);
		int bi = plot_sl_find(&bs, label);
		bcores[bi] = r->num[A_CORES];
		double *cell = &best[xi * nb + bi];
		if (isnan(*cell) || r->tokens_per_s > *cell) {
			*cell = r->tokens_per_s;
			arg[xi * nb + bi] = i;
		}
	}
	for (int b = 0; b < nb; b++)
		border[b] = b;
	for (int i = 1; i < nb; i++) /* insertion sort by cores, stable */
		for (int j = i; j > 0 && bcores[border[j - 1]] > bcores[border[j]]; j--) {
			int t = border[j];
			border[j] = border[j - 1];
			border[j - 1] = t;
		}
	double base = NAN;
	int base_cell = -1;
	for (int i = 0; i < nx * nb; i++)
		if (!isnan(best[i]) && (isnan(base) || best[i] < base)) {
			base = best[i];
			base_cell = i;
		}

	char path[PATH_MAX + 32];
	FILE *f = plot_data_open(c, "hardware.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	double width = 0.8 / nb;
	fprintf(f, "# run %lld: x position, speedup, tokens/s; one block per core count\n", (long long)run);
	double ymax = 1.0;
	for (int bb = 0; bb < nb; bb++) {
		int b = border[bb];
		fprintf(f, "# %s\n", bs.s[b]);
		for (int xi = 0; xi < nx; xi++) {
			double v = best[xi * nb + b];
			double pos = xi + (bb - (nb - 1) / 2.0) * width;
			if (isnan(v))
				fprintf(f, "%.6g NaN NaN \"\" \"\"\n", pos);
			else {
				char lab[512];
				const row *r = &rs.r[arg[xi * nb + b]];
				int show_ratio = (tuned & (1u << A_RATIO)) && strcmp(r->val[A_POLICY], "none");
				int show_pol = (tuned & (1u << A_POLICY)) != 0;
				snprintf(lab, sizeof lab, "%s%s%s", show_pol ? r->val[A_POLICY] : "",
					 show_pol && show_ratio ? ", " : "", show_ratio ? r->val[A_RATIO] : "");
				fprintf(f, "%.6g %.9g %.9g \"%.2f×\" \"%s\"\n", pos, v / base, v, v / base, lab);
				ymax = fmax(ymax, v / base);
			}
		}
		fprintf(f, "\n\n");
	}
	if ((st = plot_data_close(c, f, path)))
		goto out;

	char consts[512], sub[1200], num[32], tunedl[256] = "";
	unsigned cvary = vary | xkey | bkey;
	plot_constants_label(w, cvary & ~((1u << A_MODEL) | (1u << A_SEQ)), consts, sizeof consts);
	for (int a = 0, k = 0; a < A_COUNT; a++)
		if (tuned & (1u << a)) {
			const char *nm = a == A_RATIO ? "ratio" : a == A_MB ? "micro-batch" : plot_attrs[a].col;
			snprintf(tunedl + strlen(tunedl), sizeof tunedl - strlen(tunedl), "%s%s", k++ ? ", " : "", nm);
		}
	const row *br = &rs.r[arg[base_cell]];
	char basel[256];
	plot_row_label(br, xkey | bkey, ", ", basel, sizeof basel);
	snprintf(sub, sizeof sub, "%s%s · run %lld · 1.00× = %s tokens/s (%s)%s%s%s", consts,
		 other_workloads ? " (first workload of the run)" : "", (long long)run, plot_thousands(base, num, sizeof num),
		 basel, tunedl[0] ? "\neach bar: the fastest " : "", tunedl, tunedl[0] ? " of the run for that hardware" : "");

	plot_begin(c, 1200, 750, "Speedup by hardware: PCIe generation and CPU cores", sub);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, "host link (PCIe generation)"));
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "speedup over the slowest hardware (×)"));
	plot_gp(c, "set yrange [0:%.6g]\n", ymax * 1.18);
	plot_gp(c, "set xrange [-0.6:%.6g]\n", nx - 0.4);
	plot_gp(c, "set grid noxtics\n");
	plot_gp(c, "set xtics (");
	for (int i = 0; i < nx; i++)
		plot_gp(c, "%s%s %d", i ? ", " : "", plot_gq(c, xs.s[i]), i);
	plot_gp(c, ")\n");
	plot_gp(c, "set boxwidth %.6g absolute\nset style fill solid 0.85 border lc rgb '#333333'\n", width * 0.92);
	plot_gp(c, "set key outside right top vertical title %s\n", plot_gq(c, "CPU cores"));
	plot_gp(c, "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'\n");
	plot_gp(c, "plot ");
	for (int bb = 0; bb < nb; bb++)
		plot_gp(c, "%s%s index %d using 1:2 with boxes lc rgb '%s' title %s", bb ? ", \\\n  " : "", plot_gq(c, path), bb,
		   plot_palette[bb % NPALETTE], plot_gq(c, bs.s[border[bb]]));
	/* the speedup above each bar, the settings that won written up inside it */
	for (int bb = 0; bb < nb; bb++)
		plot_gp(c, ", \\\n  %s index %d using 1:2:4 with labels offset 0,0.8 font ',10' notitle", plot_gq(c, path), bb);
	for (int bb = 0; bb < nb; bb++)
		plot_gp(c, ", \\\n  %s index %d using 1:2:5 with labels rotate by 90 right offset 0,-0.6 font ',9'"
		      " textcolor rgb '#1a1a1a' notitle",
		   plot_gq(c, path), bb);
	plot_gp(c, "\n");
	if ((st = plot_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "run %lld: %d links x %d core counts from %d configurations",
		 (long long)run, nx, nb, nfit);
out:
	free(best);
	free(arg);
	free(bcores);
	free(border);
	plot_sl_free(&xs);
	plot_sl_free(&bs);
	plot_rowset_free(&rs);
	return st;
}
