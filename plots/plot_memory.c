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

zb_status plot_memory(plot_ctx *c)
{
	const zb_plot_request *req = c->req;
	zb_status st;
	int64_t run = req->run_id;
	rowset rs;
	int found;
	if (req->config_id) {
		if ((st = plot_check_config(c, req->config_id)) ||
		    (st = plot_load_rows_json(c, ZB_Q_CONFIG_ROW, req->config_id, 1, &rs)))
			return st;
		c->info->config_id = req->config_id;
	} else {
		if (run) {
			if ((st = plot_check_run(c, run)))
				return st;
		} else {
			/* the latest sweep (many policies), else the latest run with predictions */
			if ((st = plot_query_int(c, ZB_Q_LATEST_SWEEP_RUN_PREDICTED, 0, &run, &found)))
				return st;
			if (!found && (st = plot_query_int(c, ZB_Q_LATEST_RUN_PREDICTED, 0, &run, &found)))
				return st;
			if (!found)
				return zb_fail(c->err, ZB_E_INPUT,
					       "no predictions in database '%s' (run zbench predict or sweep, or give --run)",
					       c->dbpath);
		}
		if ((st = plot_load_rows_json(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, 1, &rs)))
			return st;
		c->info->run_id = run;
	}
	/* one bar per distinct memory setting (hardware and link do not change memory) */
	unsigned memkey = (1u << A_MODEL) | (1u << A_POLICY) | (1u << A_RATIO) | (1u << A_OFFLOAD_PARAM) |
			  (1u << A_PREFETCH) | (1u << A_CKPT) | (1u << A_GAS) | (1u << A_MB) | (1u << A_SEQ) |
			  (1u << A_DTYPE) | (1u << A_PAGEABLE) | (1u << A_BUCKET);
	unsigned vary = plot_varying_mask(&rs, row_has_memory);
	unsigned shown = vary & memkey;
	if (!shown)
		shown = (1u << A_POLICY) | (1u << A_RATIO);
	if (!(shown & (1u << A_OFFLOAD_PARAM)) && (vary & (1u << A_PREFETCH)) == 0)
		shown &= ~(1u << A_PREFETCH);
	strlist keys = { 0 };
	int *pick = zb_xmalloc((size_t)(rs.n ? rs.n : 1) * sizeof *pick);
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		if (!row_has_memory(&rs.r[i]))
			continue;
		plot_row_label(&rs.r[i], memkey, "|", label, sizeof label);
		int before = keys.n;
		int k = plot_sl_intern(&keys, label);
		if (keys.n > before)
			pick[k] = i;
	}
	if (keys.n == 0) {
		free(pick);
		plot_rowset_free(&rs);
		if (req->config_id)
			return zb_fail(c->err, ZB_E_INPUT, "config %lld has no prediction with a memory estimate",
				       (long long)req->config_id);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no prediction with a memory estimate", (long long)run);
	}

	/* past about 24 bars the labels no longer fit: draw the first ones and say so */
	int nb = keys.n < MAX_MEMORY_BARS ? keys.n : MAX_MEMORY_BARS, fallback = 0;
	double gcap = NAN, hcap = NAN, gmax = 0, hmax = 0;
	int cap_same = 1;
	char path[PATH_MAX + 32];
	FILE *f = plot_data_open(c, "memory.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	/* cumulative sums, top term first, so drawing the columns in order stacks them */
	fprintf(f, "# x gpu: params +grads +optimizer +activations +workspace total_only;"
		   " host: optimizer +grads +params +activations total_only (GiB)\n");
	for (int b = 0; b < nb; b++) {
		const row *r = &rs.r[pick[b]];
		zb_memory m;
		double gc, hc;
		int ok = memory_terms(r, &m, &gc, &hc) == 0;
		if (b == 0) {
			gcap = gc;
			hcap = hc;
		} else if (!(gc == gcap) || !(hc == hcap)) {
			cap_same = 0;
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
			fallback++;
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
		gmax = fmax(gmax, r->gpu_bytes / GIB);
		hmax = fmax(hmax, r->host_bytes / GIB);
	}
	if ((st = plot_data_close(c, f, path)))
		goto out;

	char consts[512], sub[1024];
	const row *r0 = &rs.r[pick[0]];
	plot_constants_label(r0, vary | (1u << A_LINK) | (1u << A_CORES) | (1u << A_THREADS), consts, sizeof consts);
	if (req->config_id)
		snprintf(sub, sizeof sub, "%s · config %lld", consts, (long long)req->config_id);
	else
		snprintf(sub, sizeof sub, "%s · run %lld: %d memory setting%s", consts, (long long)run, nb,
			 nb == 1 ? "" : "s");
	if (keys.n > nb)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " (the first %d of %d; --config for one)", nb,
			 keys.n);
	if (fallback)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " · %d without a term breakdown (stored totals)",
			 fallback);
	if (cap_same && gcap > 0 && hcap > 0)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub),
			 "\ncapacity: GPU %s %.1f GiB (%.1f usable), host %.1f GiB (%.1f usable for pinned buffers)",
			 r0->val[A_GPU], gcap / GIB, 0.95 * gcap / GIB, hcap / GIB, 0.9 * hcap / GIB);

	plot_begin(c, 1500, 800, "Memory per policy setting", sub);
	plot_gp(c, "set multiplot\n");
	plot_gp(c, "set tmargin at screen %.5f\n", 1 - 165.0 / 800);
	plot_gp(c, "set bmargin %d\n", nb > 8 ? 10 : 6);
	plot_gp(c, "set style fill solid 0.9 border lc rgb '#333333'\nset boxwidth 0.6 absolute\n");
	plot_gp(c, "set xrange [-0.6:%.1f]\nset grid noxtics\n", nb - 0.4);
	plot_gp(c, "set xtics (");
	for (int b = 0; b < nb; b++) {
		/* many bars: one rotated line each; few: stacked words under the bar */
		plot_row_label(&rs.r[pick[b]], shown, nb > 8 ? ", " : "\n", label, sizeof label);
		plot_gp(c, "%s%s %d", b ? ", " : "", plot_gq(c, label), b);
	}
	plot_gp(c, ")%s\n", nb > 8 ? " rotate by -40 left font ',10'" : "");
	plot_gp(c, "set key inside top right vertical reverse Left\n");
	plot_gp(c, "set ylabel %s\n", plot_gq(c, "GiB"));

	static const char *const gterms[] = { "parameters (16-bit)", "gradients (16-bit)", "optimizer states (fp32)",
					      "activations", "workspace" };
	static const char *const hterms[] = { "optimizer states (fp32)", "gradients (16-bit)", "parameters (16-bit)",
					      "activation checkpoints" };
	static const char *const gcol[] = { "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#bab0ac" };
	static const char *const hcol[] = { "#e15759", "#f28e2b", "#4e79a7", "#b07aa1" };

	/* GPU panel */
	double gtop = gmax * 1.4; /* room for the key above the bars */
	int gcap_show = cap_same && gcap > 0 && 0.95 * gcap / GIB < 3 * gmax;
	if (gcap_show)
		gtop = fmax(gtop, 0.95 * gcap / GIB * 1.12);
	plot_gp(c, "set title %s font ',12'\n", plot_gq(c, "GPU memory"));
	plot_gp(c, "set lmargin at screen 0.06\nset rmargin at screen 0.49\n");
	plot_gp(c, "set yrange [0:%.6g]\n", gtop);
	if (gcap_show) {
		char l[160];
		snprintf(l, sizeof l, "usable GPU memory %.1f GiB (95%% of %.1f)", 0.95 * gcap / GIB, gcap / GIB);
		plot_gp(c, "set arrow 1 from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 2 lc rgb '#aa2222'\n",
		   0.95 * gcap / GIB, 0.95 * gcap / GIB);
		plot_gp(c, "set label 2 %s at graph 0.02, first %.6g offset 0,0.7 font ',9' textcolor rgb '#aa2222'\n",
		   plot_gq(c, l), 0.95 * gcap / GIB);
	}
	plot_gp(c, "plot ");
	for (int k = 4; k >= 0; k--)
		plot_gp(c, "%s%s using 1:%d with boxes lc rgb '%s' title %s", k == 4 ? "" : ", \\\n  ", plot_gq(c, path), k + 2,
		   gcol[k], plot_gq(c, gterms[k]));
	if (fallback)
		plot_gp(c, ", \\\n  %s using 1:7 with boxes lc rgb '#888888' title %s", plot_gq(c, path),
		   plot_gq(c, "total (no breakdown stored)"));
	plot_gp(c, "\n");
	plot_gp(c, "unset arrow 1\nunset label 2\nunset label 101\nunset label 102\n");

	/* host panel */
	double htop = hmax * 1.4;
	if (htop <= 0)
		htop = 1;
	int hcap_show = cap_same && hcap > 0 && 0.9 * hcap / GIB < 3 * hmax;
	if (hcap_show)
		htop = fmax(htop, 0.9 * hcap / GIB * 1.12);
	plot_gp(c, "set title %s font ',12'\n", plot_gq(c, "host memory (pinned)"));
	plot_gp(c, "set lmargin at screen 0.55\nset rmargin at screen 0.95\n");
	plot_gp(c, "set yrange [0:%.6g]\n", htop);
	if (hcap_show) {
		char l[160];
		snprintf(l, sizeof l, "usable host memory %.1f GiB (90%% of %.1f)", 0.9 * hcap / GIB, hcap / GIB);
		plot_gp(c, "set arrow 1 from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 2 lc rgb '#aa2222'\n",
		   0.9 * hcap / GIB, 0.9 * hcap / GIB);
		plot_gp(c, "set label 2 %s at graph 0.02, first %.6g offset 0,0.7 font ',9' textcolor rgb '#aa2222'\n",
		   plot_gq(c, l), 0.9 * hcap / GIB);
	}
	plot_gp(c, "plot ");
	for (int k = 3; k >= 0; k--)
		plot_gp(c, "%s%s using 1:%d with boxes lc rgb '%s' title %s", k == 3 ? "" : ", \\\n  ", plot_gq(c, path), k + 8,
		   hcol[k], plot_gq(c, hterms[k]));
	if (fallback)
		plot_gp(c, ", \\\n  %s using 1:12 with boxes lc rgb '#888888' title %s", plot_gq(c, path),
		   plot_gq(c, "total (no breakdown stored)"));
	plot_gp(c, "\nunset multiplot\n");
	if ((st = plot_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "%d memory setting%s%s", nb, nb == 1 ? "" : "s",
		 fallback ? " (some without a term breakdown)" : "");
out:
	free(pick);
	plot_sl_free(&keys);
	plot_rowset_free(&rs);
	return st;
}
