/*
 * plot_timeline.c - the timeline plot: one step of a configuration, GPU compute, GPU Adam,
 * PCIe D2H and H2D and the CPU Adam pool, predicted above measured.
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the timeline of one step --------------------------------------------------- */

/* Resources top to bottom, with their row titles. */
static const struct {
	const char *name;  /* tasks.resource */
	const char *title;
} lanes_of[] = {
	{ "gpu", "GPU compute" },
	{ "gpu_opt", "GPU Adam" },
	{ "pcie_d2h", "PCIe D2H" },
	{ "pcie_h2d", "PCIe H2D" },
	{ "cpu", "CPU Adam" },
};
#define NRES ((int)(sizeof lanes_of / sizeof lanes_of[0]))

/* Colour classes of tasks. */
/* drawn in this order: short kernels first, so GEMMs drawn after them stay visible
 * where a kernel narrower than a pixel would otherwise paint over its neighbours */
enum { K_KERNEL, K_GEMM, K_GRAD_DOWN, K_PARAM_UP, K_ACT_COPY, K_OTHER_COPY, K_CPU_ADAM, K_GPU_ADAM, K_COUNT };
static const struct {
	const char *title;
	const char *color;
} klass[K_COUNT] = {
	[K_GEMM] = { "GEMM", "#4e79a7" },
	[K_KERNEL] = { "other GPU kernels", "#a0cbe8" },
	[K_GRAD_DOWN] = { "gradients to host", "#f28e2b" },
	[K_PARAM_UP] = { "parameters to GPU", "#59a14f" },
	[K_ACT_COPY] = { "activation checkpoints", "#b07aa1" },
	[K_OTHER_COPY] = { "other copies", "#9c755f" },
	[K_CPU_ADAM] = { "CPU Adam", "#e15759" },
	[K_GPU_ADAM] = { "GPU Adam", "#76b7b2" },
};

static int task_class(const char *kind, const char *op)
{
	if (!strcmp(kind, "gemm"))
		return K_GEMM;
	if (!strcmp(kind, "kernel"))
		return K_KERNEL;
	if (!strcmp(kind, "cpu_adam"))
		return K_CPU_ADAM;
	if (!strcmp(kind, "gpu_adam"))
		return K_GPU_ADAM;
	if (!strcmp(op, "grad_down"))
		return K_GRAD_DOWN;
	if (!strcmp(op, "param_up") || !strcmp(op, "param_fetch"))
		return K_PARAM_UP;
	if (!strcmp(op, "act_down") || !strcmp(op, "act_up"))
		return K_ACT_COPY;
	return K_OTHER_COPY;
}

typedef struct bar {
	double s, e;  /* ms from the step's first task */
	int res, klass, lane;
} bar;

#define MAX_LANES 8
#define TIMELINE_BINS 1100 /* about the plot area's width in pixels */

/* Events of one source and step, with lanes assigned per resource (greedy: the
 * first lane free at the task's start). */
static zb_status load_bars(plot_ctx *c, int64_t id, const char *source, int64_t step, bar **out, int *nout,
			   int lanes[NRES], double *span_ms)
{
	zb_rows *q;
	zb_status st = plot_rows_open(c, ZB_Q_STEP_BARS, id, &q);
	if (st)
		return st;
	zb_rows_bind_text(q, 2, source);
	zb_rows_bind_int(q, 3, step);
	bar *b = NULL;
	int n = 0, cap = 0, rc;
	int64_t t0 = 0, tend = 0;
	double lane_end[NRES][MAX_LANES];
	for (int r = 0; r < NRES; r++) {
		lanes[r] = 0;
		for (int l = 0; l < MAX_LANES; l++)
			lane_end[r][l] = -INFINITY;
	}
	while ((rc = zb_rows_next(q)) > 0) {
		const char *res = zb_rows_text(q, 0);
		int ri = -1;
		for (int r = 0; r < NRES && res; r++)
			if (!strcmp(res, lanes_of[r].name))
				ri = r;
		if (ri < 0)
			continue;
		int64_t s = zb_rows_int(q, 3, 0), e = zb_rows_int(q, 4, 0);
		if (n == 0)
			t0 = s;
		if (e > tend || n == 0)
			tend = e;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			b = zb_xrealloc(b, (size_t)cap * sizeof *b);
		}
		bar *x = &b[n++];
		x->s = (double)(s - t0) * 1e-6;
		x->e = (double)(e - t0) * 1e-6;
		x->res = ri;
		const char *kind = zb_rows_text(q, 1);
		const char *op = zb_rows_text(q, 2);
		x->klass = task_class(kind ? kind : "", op ? op : "");
		int l = 0;
		while (l < MAX_LANES - 1 && lane_end[ri][l] > x->s)
			l++;
		x->lane = l;
		lane_end[ri][l] = fmax(lane_end[ri][l], x->e);
		if (l + 1 > lanes[ri])
			lanes[ri] = l + 1;
	}
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(b);
		return st;
	}
	*out = b;
	*nout = n;
	*span_ms = n ? (double)(tend - t0) * 1e-6 : 0;
	return ZB_OK;
}

static const char *const sources[2] = { "predicted", "measured" };

/* One timeline plot: the step drawn, its tasks as bars per source, the rows. */
typedef struct timeline {
	int64_t id, step;
	rowset rs;
	bar *bars[2];
	int nbars[2], lanes[2][NRES];
	double span[2], steptime[2];
	int rowof[2][NRES][MAX_LANES];
	char ylabels[2 * NRES * MAX_LANES][96];
	int nrows, nseps;
	double seps[NRES];
	int used[K_COUNT];
	double xend;
	char path[PATH_MAX + 32];
} timeline;

/* --config, the newest configuration with events of --run, or the newest with events. */
static zb_status choose_config(plot_ctx *c, int64_t *id)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	int found;
	*id = r->config_id;
	if (*id)
		return plot_check_config(c, *id);
	if (r->run_id) {
		if ((st = plot_check_run(c, r->run_id)) ||
		    (st = plot_query_int(c, ZB_Q_RUN_LATEST_CONFIG_EVENTS, r->run_id, id, &found)))
			return st;
		if (!found)
			return zb_fail(c->err, ZB_E_INPUT,
				       "run %lld has no timeline events (zbench predict --timeline or zbench run store them)",
				       (long long)r->run_id);
		return ZB_OK;
	}
	if ((st = plot_query_int(c, ZB_Q_LATEST_CONFIG_EVENTS, 0, id, &found)))
		return st;
	if (!found)
		return zb_fail(c->err, ZB_E_INPUT,
			       "no timeline events in database '%s' (zbench predict --timeline or zbench run store them)",
			       c->dbpath);
	return ZB_OK;
}

/* The middle step among those with events. */
static zb_status middle_step(plot_ctx *c, int64_t id, int64_t *step)
{
	zb_rows *q;
	zb_status st;
	if ((st = plot_rows_open(c, ZB_Q_STEPS_WITH_EVENTS, id, &q)))
		return st;
	int64_t steps[4096];
	int nsteps = 0, rc;
	while ((rc = zb_rows_next(q)) > 0)
		if (nsteps < 4096)
			steps[nsteps++] = zb_rows_int(q, 0, 0);
	if ((st = zb_rows_close(q, rc, NULL, c->err)))
		return st;
	if (nsteps == 0)
		return zb_fail(c->err, ZB_E_INPUT,
			       "config %lld has no timeline events with tasks (zbench predict --timeline or zbench run store them)",
			       (long long)id);
	*step = steps[nsteps / 2];
	return ZB_OK;
}

/* The configuration row, both sources' bars of the step, and the step times. */
static zb_status load(plot_ctx *c, timeline *t)
{
	zb_status st;
	if ((st = plot_load_rows(c, ZB_Q_CONFIG_ROW, t->id, &t->rs)))
		return st;
	t->steptime[0] = t->steptime[1] = NAN;
	for (int s = 0; s < 2; s++)
		if ((st = load_bars(c, t->id, sources[s], t->step, &t->bars[s], &t->nbars[s], t->lanes[s], &t->span[s])))
			return st;
	if (t->rs.n && t->rs.r[0].has_pred)
		t->steptime[0] = t->rs.r[0].step_time_s;
	if (t->nbars[1] && (st = plot_measured_step_s(c, t->id, &t->steptime[1])))
		return st;
	return ZB_OK;
}

/* Rows, top to bottom: per resource, predicted lanes then measured lanes. */
static void layout_rows(timeline *t)
{
	const rowset *rs = &t->rs;
	int threads = rs->n ? (int)(rs->r[0].num[A_THREADS] > 0 ? rs->r[0].num[A_THREADS] : rs->r[0].num[A_CORES]) : 0;
	for (int res = 0; res < NRES; res++) {
		if (res > 0)
			t->seps[t->nseps++] = t->nrows;
		for (int s = 0; s < 2; s++) {
			if (!t->nbars[s])
				continue;
			int nl = t->lanes[s][res] ? t->lanes[s][res] : 1;
			for (int l = 0; l < nl; l++) {
				char *y = t->ylabels[t->nrows];
				t->rowof[s][res][l] = t->nrows;
				char title[64];
				if (res == NRES - 1 && threads > 0)
					snprintf(title, sizeof title, "CPU Adam (%d threads)", threads);
				else
					snprintf(title, sizeof title, "%s", lanes_of[res].title);
				snprintf(y, sizeof t->ylabels[0], "%s%s%s%s", title,
					 t->nbars[0] && t->nbars[1] ? (s ? " · measured" : " · predicted") : "",
					 nl > 1 ? " #" : "", "");
				if (nl > 1)
					snprintf(y + strlen(y), sizeof t->ylabels[0] - strlen(y), "%d", l + 1);
				t->nrows++;
			}
		}
	}
}

/* Resample each row at about the plot's pixel width: a bin takes the class busiest
 * in it, and runs of bins of one class become one box. Drawn one box a task, a
 * thousand sub-pixel kernels and GEMMs antialias into a pale smear that hides which
 * class dominates; resampled, the picture is what a reader would see zoomed in, and
 * the SVG stays small. A task shorter than a bin still paints the bin where it
 * starts. Returns busy[row][bin][class] (caller frees). */
static double *resample(const timeline *t, double bw)
{
	double *busy = zb_xcalloc((size_t)t->nrows * TIMELINE_BINS * K_COUNT, sizeof *busy);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < t->nbars[s]; i++) {
			const bar *b = &t->bars[s][i];
			double *rowbins = busy + (size_t)t->rowof[s][b->res][b->lane] * TIMELINE_BINS * K_COUNT;
			int b0 = (int)(b->s / bw), b1 = (int)(b->e / bw);
			if (b0 >= TIMELINE_BINS)
				b0 = TIMELINE_BINS - 1;
			if (b1 >= TIMELINE_BINS)
				b1 = TIMELINE_BINS - 1;
			if (b->e <= b->s) {
				rowbins[b0 * K_COUNT + b->klass] += 1e-9;
				continue;
			}
			for (int k = b0; k <= b1; k++) {
				double lo = fmax(b->s, k * bw), hi = fmin(b->e, (k + 1) * bw);
				rowbins[k * K_COUNT + b->klass] += hi > lo ? hi - lo : 1e-9;
			}
		}
	return busy;
}

/* The runs of bins where class k is the busiest, one box each, for row rr. */
static int write_runs(FILE *f, const double *rowbins, int k, int y, double bw)
{
	int run = -1, n = 0;
	for (int b = 0; b <= TIMELINE_BINS; b++) {
		int mine = 0;
		if (b < TIMELINE_BINS) {
			int arg = -1;
			double m = 0;
			for (int kk = 0; kk < K_COUNT; kk++)
				if (rowbins[b * K_COUNT + kk] > m) {
					m = rowbins[b * K_COUNT + kk];
					arg = kk;
				}
			mine = arg == k;
		}
		if (mine && run < 0)
			run = b;
		if (!mine && run >= 0) {
			double x0 = run * bw, x1 = b * bw;
			fprintf(f, "%.6f %d %.6f 0.38\n", 0.5 * (x0 + x1), y, 0.5 * (x1 - x0));
			n++;
			run = -1;
		}
	}
	return n;
}

static zb_status write_data(plot_ctx *c, timeline *t)
{
	FILE *f = plot_data_open(c, "timeline.dat", t->path, sizeof t->path);
	if (!f)
		return c->err->status;
	t->xend = fmax(t->span[0], t->span[1]);
	if (!(t->xend > 0))
		t->xend = 1e-3;
	double bw = t->xend / TIMELINE_BINS;
	double *busy = resample(t, bw);
	fprintf(f, "# config %lld step %lld: x_center_ms y half_width_ms half_height, resampled to %d bins of"
		   " %.4g ms a row; one block per task class\n",
		(long long)t->id, (long long)t->step, TIMELINE_BINS, bw);
	for (int k = 0; k < K_COUNT; k++) {
		fprintf(f, "# %s\n", klass[k].title);
		for (int rr = 0; rr < t->nrows; rr++)
			t->used[k] += write_runs(f, busy + (size_t)rr * TIMELINE_BINS * K_COUNT, k, t->nrows - 1 - rr, bw);
		if (!t->used[k])
			fprintf(f, "NaN NaN NaN NaN\n");
		fprintf(f, "\n\n");
	}
	free(busy);
	return plot_data_close(c, f, t->path);
}

static void write_script(plot_ctx *c, const timeline *t)
{
	char title[200], sub[1024], desc[512];
	int nrows = t->nrows;
	snprintf(title, sizeof title, "Timeline of step %lld of config %lld", (long long)t->step, (long long)t->id);
	if (t->rs.n)
		plot_constants_label(&t->rs.r[0], 0, desc, sizeof desc);
	else
		desc[0] = 0;
	size_t len = (size_t)snprintf(sub, sizeof sub, "%s", desc);
	for (int s = 0; s < 2 && len < sizeof sub; s++)
		if (t->nbars[s])
			len += (size_t)snprintf(sub + len, sizeof sub - len,
						"%s%s: step time %.2f ms, this step's tasks span %.2f ms",
						len ? (s == 0 || !t->nbars[0] ? "\n" : " · ") : "", sources[s],
						t->steptime[s] * 1e3, t->span[s]);
	int height = 230 + 38 * nrows;
	if (height < 520)
		height = 520;
	plot_begin(c, 1500, height, title, sub);
	plot_gp(c, "set lmargin 36\nset rmargin 4\nset bmargin at screen %.5f\n", 100.0 / height);
	plot_gp(c, "set key at screen 0.5, screen %.5f center bottom horizontal\n", 12.0 / height);
	plot_gp(c, "set xlabel %s\n", plot_gq(c, "time from the step's first task (ms)"));
	plot_gp(c, "set yrange [-0.7:%d.7]\n", nrows - 1);
	plot_gp(c, "set xrange [0:%.6g]\n", t->xend * 1.01);
	plot_gp(c, "set grid xtics noytics\n");
	plot_gp(c, "set ytics (");
	for (int i = 0; i < nrows; i++)
		plot_gp(c, "%s%s %d", i ? ", " : "", plot_gq(c, t->ylabels[i]), nrows - 1 - i);
	plot_gp(c, ") nomirror scale 0\n");
	for (int i = 0; i < t->nseps; i++)
		plot_gp(c, "set arrow from graph 0, first %.1f to graph 1, first %.1f nohead lc rgb '#bbbbbb' lw 1\n",
			nrows - t->seps[i] - 0.5, nrows - t->seps[i] - 0.5);
	plot_gp(c, "set style fill solid 1.0 noborder\n");
	plot_gp(c, "plot ");
	int first = 1;
	for (int k = 0; k < K_COUNT; k++) {
		if (!t->used[k])
			continue;
		plot_gp(c, "%s%s index %d using 1:2:3:4 with boxxyerror lc rgb '%s' title %s", first ? "" : ", \\\n  ",
			plot_gq(c, t->path), k, klass[k].color, plot_gq(c, klass[k].title));
		first = 0;
	}
	plot_gp(c, "\n");
}

zb_status plot_timeline(plot_ctx *c)
{
	timeline *t = zb_xcalloc(1, sizeof *t);
	zb_status st;
	if ((st = choose_config(c, &t->id)) || (st = middle_step(c, t->id, &t->step))) {
		free(t);
		return st;
	}
	c->info->config_id = t->id;
	if (!(st = load(c, t))) {
		layout_rows(t);
		if (!(st = write_data(c, t))) {
			write_script(c, t);
			st = plot_render(c);
		}
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "config %lld, step %lld: %d predicted and %d measured tasks",
			 (long long)t->id, (long long)t->step, t->nbars[0], t->nbars[1]);
	free(t->bars[0]);
	free(t->bars[1]);
	plot_rowset_free(&t->rs);
	free(t);
	return st;
}
