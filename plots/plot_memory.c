/*
 * plot_memory.c - the memory plot: GPU and host memory per policy setting, stacked by term
 * (recomputed from the stored configuration, drawn only when the terms add up).
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/memory.h"
#include "inputs/presets.h"

/* ---- memory per policy --------------------------------------------------------- */

/* Rebuild the model and policy of a stored configuration and estimate its memory
 * term by term. 0 when the terms' totals equal the stored ones. */
static int memory_terms(const row *r, zb_memory *m, double *gpu_cap, double *host_cap)
{
	*gpu_cap = *host_cap = NAN;
	if (!r->json)
		return -1;
	json_t *root = json_loads(r->json, 0, NULL);
	if (!root)
		return -1;
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	json_t *hw = json_object_get(root, "hw");
	json_t *g = json_object_get(json_object_get(hw, "gpu"), "mem_bytes");
	json_t *h = json_object_get(json_object_get(hw, "cpu"), "mem_bytes");
	if (json_is_number(g))
		*gpu_cap = c.hw.gpu.mem_bytes = json_number_value(g);
	if (json_is_number(h))
		*host_cap = c.hw.cpu.mem_bytes = json_number_value(h);
	json_t *mo = json_object_get(root, "model");
	int bad = !json_is_object(mo);
	zb_model *md = &c.model;
	static const struct {
		const char *key;
		size_t off;
		int flag;
		int required;
	} mf[] = {
		{ "layers", offsetof(zb_model, layers), 0, 1 },
		{ "hidden", offsetof(zb_model, hidden), 0, 1 },
		{ "heads", offsetof(zb_model, heads), 0, 1 },
		{ "kv_heads", offsetof(zb_model, kv_heads), 0, 0 },
		{ "ffn", offsetof(zb_model, ffn), 0, 1 },
		{ "vocab", offsetof(zb_model, vocab), 0, 1 },
		{ "max_seq", offsetof(zb_model, max_seq), 0, 0 },
		{ "gated_mlp", offsetof(zb_model, gated_mlp), 1, 1 },
		{ "bias", offsetof(zb_model, bias), 1, 1 },
		{ "tied_embeddings", offsetof(zb_model, tied_embeddings), 1, 1 },
		{ "embed_proj", offsetof(zb_model, embed_proj), 0, 0 },
		{ "head_dim", offsetof(zb_model, head_dim), 0, 0 },
		{ "linear_bias", offsetof(zb_model, linear_bias), 0, 0 },
		{ "norms", offsetof(zb_model, norms), 0, 0 },
		{ "experts", offsetof(zb_model, experts), 0, 0 },
		{ "experts_active", offsetof(zb_model, experts_active), 0, 0 },
		{ "shared_ffn", offsetof(zb_model, shared_ffn), 0, 0 },
		{ "loss", offsetof(zb_model, loss), 0, 0 },
	};
	for (size_t i = 0; !bad && i < sizeof mf / sizeof mf[0]; i++) {
		json_t *v = json_object_get(mo, mf[i].key);
		int *dst = (int *)((char *)md + mf[i].off);
		if (!v) {
			bad = mf[i].required;
			continue;
		}
		if (mf[i].flag)
			*dst = json_is_true(v);
		else if (json_is_integer(v))
			*dst = (int)json_integer_value(v);
		else
			bad = 1;
	}
	if (!bad && md->kv_heads == 0)
		md->kv_heads = md->heads;
	json_decref(root);
	if (bad || zb_model_validate(md, NULL))
		return -1;

	zb_policy *p = &c.policy;
	zb_policy_defaults(p);
	if (zb_policy_parse(r->val[A_POLICY], &p->kind, NULL) || zb_ckpt_parse(r->val[A_CKPT] + 5, &p->ckpt, NULL) ||
	    zb_dtype_parse(r->val[A_DTYPE], &p->dtype, NULL))
		return -1;
	p->ratio = r->num[A_RATIO];
	p->offload_param = r->num[A_OFFLOAD_PARAM] != 0;
	p->prefetch_layers = (int)r->num[A_PREFETCH];
	p->gas = (int)r->num[A_GAS];
	p->micro_batch = (int)r->num[A_MB];
	p->seq = (int)r->num[A_SEQ];
	p->pageable = r->num[A_PAGEABLE] != 0;
	p->bucket_params = (int64_t)r->num[A_BUCKET];
	p->cpu_threads = (int)r->num[A_THREADS];
	c.steps = 1;
	zb_memory_estimate(&c, m);
	if (!(fabs(m->gpu_bytes - r->gpu_bytes) <= 1e-6 * fmax(1, r->gpu_bytes)) ||
	    !(fabs(m->host_bytes - r->host_bytes) <= 1e-6 * fmax(1, r->host_bytes)))
		return -1;
	return 0;
}

#define MAX_MEMORY_BARS 24

static int row_has_memory(const row *r)
{
	return r->has_pred && r->gpu_bytes > 0;
}

/* What one memory plot draws: the rows, one bar per distinct memory setting. */
#define MAX_CAPS 8

typedef struct membars {
	rowset rs;
	int64_t run;
	unsigned vary, shown;
	strlist keys;  /* distinct memory settings, in order */
	int *pick;     /* the row of each */
	int nb, fallback, cap_same;
	double gcap, hcap, gmax, hmax;
	char path[PATH_MAX + 32];
	/* every capacity of the run, one line each in its panel: a sweep over three GPUs has
	 * three GPU capacities (the bars are per memory setting, whatever the GPU) */
	int ncap[2];
	char capname[2][MAX_CAPS][ZB_NAME_MAX];
	double cap[2][MAX_CAPS];
	char cappath[PATH_MAX + 32];
} membars;

/* The rows: --config, --run, the latest sweep, else the latest run with predictions. */
static zb_status load(plot_ctx *c, membars *mb)
{
	const zb_plot_request *req = c->req;
	zb_status st;
	int found;
	mb->run = req->run_id;
	if (req->config_id) {
		if ((st = plot_check_config(c, req->config_id)) ||
		    (st = plot_load_rows_json(c, ZB_Q_CONFIG_ROW, req->config_id, 1, &mb->rs)))
			return st;
		c->info->config_id = req->config_id;
		return ZB_OK;
	}
	if (mb->run) {
		if ((st = plot_check_run(c, mb->run)))
			return st;
	} else {
		/* the latest sweep (many policies), else the latest run with predictions */
		if ((st = plot_query_int(c, ZB_Q_LATEST_SWEEP_RUN_PREDICTED, 0, &mb->run, &found)))
			return st;
		if (!found && (st = plot_query_int(c, ZB_Q_LATEST_RUN_PREDICTED, 0, &mb->run, &found)))
			return st;
		if (!found)
			return zb_fail(c->err, ZB_E_INPUT,
				       "no predictions in database '%s' (run zbench predict or sweep, or give --run)",
				       c->dbpath);
	}
	if ((st = plot_load_rows_json(c, ZB_Q_CONFIG_ROWS_OF_RUN, mb->run, 1, &mb->rs)))
		return st;
	c->info->run_id = mb->run;
	return ZB_OK;
}

/* One bar per distinct memory setting (hardware and link do not change memory). */
static const unsigned memkey = (1u << A_MODEL) | (1u << A_POLICY) | (1u << A_RATIO) | (1u << A_OFFLOAD_PARAM) |
			       (1u << A_PREFETCH) | (1u << A_CKPT) | (1u << A_GAS) | (1u << A_MB) | (1u << A_SEQ) |
			       (1u << A_DTYPE) | (1u << A_PAGEABLE) | (1u << A_BUCKET);

static zb_status pick_bars(plot_ctx *c, membars *mb)
{
	const zb_plot_request *req = c->req;
	rowset *rs = &mb->rs;
	mb->vary = plot_varying_mask(rs, row_has_memory);
	mb->shown = mb->vary & memkey;
	if (!mb->shown)
		mb->shown = (1u << A_POLICY) | (1u << A_RATIO);
	if (!(mb->shown & (1u << A_OFFLOAD_PARAM)) && (mb->vary & (1u << A_PREFETCH)) == 0)
		mb->shown &= ~(1u << A_PREFETCH);
	mb->pick = zb_xmalloc((size_t)(rs->n ? rs->n : 1) * sizeof *mb->pick);
	char label[512];
	for (int i = 0; i < rs->n; i++) {
		if (!row_has_memory(&rs->r[i]))
			continue;
		plot_row_label(&rs->r[i], memkey, "|", label, sizeof label);
		int before = mb->keys.n;
		int k = plot_sl_intern(&mb->keys, label);
		if (mb->keys.n > before)
			mb->pick[k] = i;
	}
	if (mb->keys.n == 0) {
		if (req->config_id)
			return zb_fail(c->err, ZB_E_INPUT, "config %lld has no prediction with a memory estimate",
				       (long long)req->config_id);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no prediction with a memory estimate",
			       (long long)mb->run);
	}
	/* past about 24 bars the labels no longer fit: draw the first ones and say so */
	mb->nb = mb->keys.n < MAX_MEMORY_BARS ? mb->keys.n : MAX_MEMORY_BARS;
	return ZB_OK;
}

/* One line of memory.dat: cumulative sums, top term first, so drawing the columns
 * in order stacks them; the stored totals where the terms do not add up. */
static void write_bar(FILE *f, membars *mb, int b)
{
	const row *r = &mb->rs.r[mb->pick[b]];
	zb_memory m;
	double gc, hc;
	int ok = memory_terms(r, &m, &gc, &hc) == 0;
	if (b == 0) {
		mb->gcap = gc;
		mb->hcap = hc;
	} else if (!(gc == mb->gcap) || !(hc == mb->hcap)) {
		mb->cap_same = 0;
	}
	double g[5] = { 0 }, h[4] = { 0 }, gt = NAN, ht = NAN;
	if (ok) {
		double gv[5] = { m.gpu_params, m.gpu_grads, m.gpu_optimizer, m.gpu_activations, m.gpu_workspace };
		double hv[4] = { m.host_optimizer, m.host_grads, m.host_params, m.host_activations };
		double acc = 0;
		for (int k = 0; k < 5; k++)
			g[k] = (acc += gv[k]) / GIB;
		acc = 0;
		for (int k = 0; k < 4; k++)
			h[k] = (acc += hv[k]) / GIB;
	} else {
		mb->fallback++;
		gt = r->gpu_bytes / GIB;
		ht = r->host_bytes / GIB;
	}
	fprintf(f, "%d", b);
	for (int k = 0; k < 5; k++)
		fprintf(f, " %.6f", ok ? g[k] : NAN);
	fprintf(f, " %.6f", gt);
	for (int k = 0; k < 4; k++)
		fprintf(f, " %.6f", ok ? h[k] : NAN);
	fprintf(f, " %.6f\n", ht);
	mb->gmax = fmax(mb->gmax, r->gpu_bytes / GIB);
	mb->hmax = fmax(mb->hmax, r->host_bytes / GIB);
}

/* A capacity (panel 0 GPU, 1 host) of a part, once per name and size. */
static void add_cap(membars *mb, int panel, const char *name, double bytes)
{
	if (!(bytes > 0))
		return;
	for (int i = 0; i < mb->ncap[panel]; i++)
		if (mb->cap[panel][i] == bytes && !strcmp(mb->capname[panel][i], name))
			return;
	if (mb->ncap[panel] == MAX_CAPS)
		return;
	int i = mb->ncap[panel]++;
	snprintf(mb->capname[panel][i], ZB_NAME_MAX, "%s", name);
	mb->cap[panel][i] = bytes;
}

/* caps.dat: one block per capacity line, its title the block's first row (gnuplot's
 * columnheader), so no name of a part is written into the script. */
static zb_status write_caps(plot_ctx *c, membars *mb)
{
	for (int i = 0; i < mb->rs.n; i++) {
		const row *r = &mb->rs.r[i];
		zb_memory m;
		double gc, hc;
		if (!row_has_memory(r))
			continue;
		memory_terms(r, &m, &gc, &hc);
		add_cap(mb, 0, r->val[A_GPU], gc);
		add_cap(mb, 1, r->val[A_CPU], hc);
	}
	FILE *f = plot_data_open(c, "caps.dat", mb->cappath, sizeof mb->cappath);
	if (!f)
		return c->err->status;
	static const double usable[2] = { 0.95, 0.9 };
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < mb->ncap[p]; i++) {
			char name[ZB_NAME_MAX];
			snprintf(name, sizeof name, "%s", mb->capname[p][i]);
			for (char *q = name; *q; q++)
				if (*q == '"' || *q == '\\' || *q == '\n')
					*q = '\'';
			double u = usable[p] * mb->cap[p][i] / GIB;
			fprintf(f, "x y \"%s: usable %.1f GiB of %.1f\"\n%.6g %.6g\n%.6g %.6g\n\n\n", name, u,
				mb->cap[p][i] / GIB, -0.6, u, mb->nb - 0.4, u);
		}
	return plot_data_close(c, f, mb->cappath);
}

static zb_status write_data(plot_ctx *c, membars *mb)
{
	mb->gcap = mb->hcap = NAN;
	mb->cap_same = 1;
	FILE *f = plot_data_open(c, "memory.dat", mb->path, sizeof mb->path);
	if (!f)
		return c->err->status;
	fprintf(f, "# x gpu: params +grads +optimizer +activations +workspace total_only;"
		   " host: optimizer +grads +params +activations total_only (GiB)\n");
	for (int b = 0; b < mb->nb; b++)
		write_bar(f, mb, b);
	zb_status st = plot_data_close(c, f, mb->path);
	return st ? st : write_caps(c, mb);
}

static void subtitle(plot_ctx *c, const membars *mb, char *sub, size_t n)
{
	const zb_plot_request *req = c->req;
	char consts[512];
	const row *r0 = &mb->rs.r[mb->pick[0]];
	int nb = mb->nb;
	plot_constants_label(r0, mb->vary | (1u << A_LINK) | (1u << A_CORES) | (1u << A_THREADS), consts,
			     sizeof consts);
	if (req->config_id)
		snprintf(sub, n, "%s · config %lld", consts, (long long)req->config_id);
	else
		snprintf(sub, n, "%s · run %lld: %d memory setting%s", consts, (long long)mb->run, nb, nb == 1 ? "" : "s");
	if (mb->keys.n > nb)
		snprintf(sub + strlen(sub), n - strlen(sub), " (the first %d of %d; --config for one)", nb, mb->keys.n);
	if (mb->fallback)
		snprintf(sub + strlen(sub), n - strlen(sub), " · %d without a term breakdown (stored totals)",
			 mb->fallback);
	if (mb->ncap[0] + mb->ncap[1])
		snprintf(sub + strlen(sub), n - strlen(sub),
			 "\ndashed: each part's usable capacity (95%% of a GPU's memory, 90%% of the host's for pinned buffers)");
}

/* One of the two panels: its stacked terms (columns first_col.. of memory.dat), the
 * usable capacity as a dashed line when it is in view. */
typedef struct panel {
	const char *title, *margins, *what;
	int nterms, first_col, total_col;
	const char *const *terms, *const *colors;
	double max, cap, usable; /* GiB shown at most, capacity (bytes), usable fraction of it */
	int at_least_1;          /* an empty panel still gets a 0..1 axis (host) */
} panel;

static void draw_panel(plot_ctx *c, const membars *mb, const panel *p)
{
	double top = p->max * 1.4; /* room for the key above the bars */
	if (top <= 0 && p->at_least_1)
		top = 1;
	/* each capacity in view is a dashed line titled in the key (caps.dat), so the titles of
	 * several GPUs never overlap each other or the bars */
	int pi = p->first_col == 2 ? 0 : 1, first_cap = pi ? mb->ncap[0] : 0, shown[MAX_CAPS] = { 0 };
	for (int i = 0; i < mb->ncap[pi]; i++) {
		double u = p->usable * mb->cap[pi][i] / GIB;
		shown[i] = 1; /* every part of the run: the comparison is the point */
		top = fmax(top, u * 1.25);
	}
	plot_gp(c, "set title %s font ',12'\n", plot_gq(c, p->title));
	plot_gp(c, "%s", p->margins);
	plot_gp(c, "set yrange [0:%.6g]\n", top);
	plot_gp(c, "plot ");
	for (int k = p->nterms - 1; k >= 0; k--)
		plot_gp(c, "%s%s using 1:%d with boxes lc rgb '%s' title %s", k == p->nterms - 1 ? "" : ", \\\n  ",
			plot_gq(c, mb->path), k + p->first_col, p->colors[k], plot_gq(c, p->terms[k]));
	if (mb->fallback)
		plot_gp(c, ", \\\n  %s using 1:%d with boxes lc rgb '#888888' title %s", plot_gq(c, mb->path),
			p->total_col, plot_gq(c, "total (no breakdown stored)"));
	static const char *const capcol[] = { "#aa2222", "#222288", "#228822", "#886622" };
	for (int i = 0; i < mb->ncap[pi]; i++)
		if (shown[i])
			plot_gp(c, ", \\\n  %s index %d using 1:2 with lines dt 2 lw 2 lc rgb '%s' title columnheader(3)",
				plot_gq(c, mb->cappath), first_cap + i, capcol[i % 4]);
}

static void write_script(plot_ctx *c, const membars *mb)
{
	static const char *const gterms[] = { "parameters (16-bit)", "gradients (16-bit)", "optimizer states (fp32)",
					      "activations", "workspace" };
	static const char *const hterms[] = { "optimizer states (fp32)", "gradients (16-bit)", "parameters (16-bit)",
					      "activation checkpoints" };
	static const char *const gcol[] = { "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#bab0ac" };
	static const char *const hcol[] = { "#e15759", "#f28e2b", "#4e79a7", "#b07aa1" };
	char sub[1024], label[512];
	int nb = mb->nb;
	subtitle(c, mb, sub, sizeof sub);
	plot_begin(c, 1500, 800, "Memory per policy setting", sub);
	plot_gp(c, "set multiplot\n");
	plot_gp(c, "set tmargin at screen %.5f\n", 1 - 165.0 / 800);
	plot_gp(c, "set bmargin %d\n", nb > 8 ? 10 : 6);
	plot_gp(c, "set style fill solid 0.9 border lc rgb '#333333'\nset boxwidth 0.6 absolute\n");
	plot_gp(c, "set xrange [-0.6:%.1f]\nset grid noxtics\n", nb - 0.4);
	plot_gp(c, "set xtics (");
	for (int b = 0; b < nb; b++) {
		/* many bars: one rotated line each; few: stacked words under the bar */
		plot_row_label(&mb->rs.r[mb->pick[b]], mb->shown, nb > 8 ? ", " : "\n", label, sizeof label);
		plot_gp(c, "%s%s %d", b ? ", " : "", plot_gq(c, label), b);
	}
	plot_gp(c, ")%s\n", nb > 8 ? " rotate by -40 left font ',10'" : "");
	plot_gp(c, "set key inside top right vertical reverse Left\n");
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "GiB"));
	panel gpu = { "GPU memory", "set lmargin at screen 0.06\nset rmargin at screen 0.49\n", "GPU", 5, 2, 7,
		      gterms, gcol, mb->gmax, mb->gcap, 0.95, 0 };
	draw_panel(c, mb, &gpu);
	plot_gp(c, "\n");
	plot_gp(c, "unset label 101\nunset label 102\n");
	panel host = { "host memory (pinned)", "set lmargin at screen 0.55\nset rmargin at screen 0.95\n", "host", 4, 8,
		       12, hterms, hcol, mb->hmax, mb->hcap, 0.9, 1 };
	draw_panel(c, mb, &host);
	plot_gp(c, "\nunset multiplot\n");
}

zb_status plot_memory(plot_ctx *c)
{
	membars mb;
	memset(&mb, 0, sizeof mb);
	zb_status st = load(c, &mb);
	if (st)
		return st;
	if (!(st = pick_bars(c, &mb)) && !(st = write_data(c, &mb))) {
		write_script(c, &mb);
		st = plot_render(c);
	}
	if (!st)
		snprintf(c->info->what, sizeof c->info->what, "%d memory setting%s%s", mb.nb, mb.nb == 1 ? "" : "s",
			 mb.fallback ? " (some without a term breakdown)" : "");
	free(mb.pick);
	plot_sl_free(&mb.keys);
	plot_rowset_free(&mb.rs);
	return st;
}
