/*
 * calibrate_ds.c - `zbench calibrate --deepspeed --measured FILE.tsv`: predict
 * measured DeepSpeed runs with the DeepSpeed schedule, fit the framework profile
 * (dsprofile.h) to their step times, print measured against predicted before and
 * after the fit, and save the hardware profile with the fitted "deepspeed" object.
 * Needs no GPU: the measurements are the input.
 */
#include "cli/calibrate_ds.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dscalib.h"
#include "analysis/dsorder.h"
#include "inputs/dsmeasured.h"
#include "inputs/dsprofile.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zbench calibrate --deepspeed --measured <file.tsv> [--hw <machine|file>] [--model <name>]\n"
		"                        [--seq <n>] [--micro-batch <n>] [--sub-group <n>] [--out <file>] [--no-fit]\n"
		"                        [--cross-validate]\n"
		"\n"
		"Fit the DeepSpeed framework profile (hook, Python, GPU efficiency, CPU Adam, cast and copy\n"
		"costs) to measured DeepSpeed step times and save it with the hardware profile.\n"
		"  --measured <file>   table of measured runs (data/deepspeed-h200-2026-11-30.tsv's format)\n"
		"                      or the harness's JSON lines; repeat to fit several files together\n"
		"  --hw <name|file>    hardware the runs were measured on (default h200-machine); its\n"
		"                      deepspeed profile, if any, is the starting point\n"
		"  --model, --seq, --micro-batch, --sub-group   for rows that do not give them (a model is a\n"
		"                      preset or a .json file: Hugging Face config.json or zbench model file)\n"
		"  --out <file>        write the hardware profile with the fitted deepspeed object\n"
		"  --no-fit            only predict the rows with the given profile\n"
		"  --cross-validate    also fit without each row in turn and predict it (leave one out)\n");
}

/* Long-valued options: parse a positive integer (1e8 and 100M style too). */
static int pos_int(const char *s, const char *flag, long long *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && (*end == 'M' || *end == 'G' || *end == 'K'))
		v *= *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : 1e9, end++;
	if (end == s || *end || v < 1 || v > 1e15 || v != floor(v)) {
		fprintf(stderr, "zbench: invalid value '%s' for %s (expected a positive integer)\n", s, flag);
		return -1;
	}
	*out = (long long)v;
	return 0;
}

static double pct(double pred, double meas) { return meas > 0 ? 100.0 * (pred / meas - 1) : 0; }

/* Pairs of rows whose order the predictions keep (out of all pairs). */
static int pairs_in_order(const zb_ds_measured *m, const zb_ds_eval *e, int *total)
{
	int ok = 0;
	*total = 0;
	for (int i = 0; i < m->n; i++)
		for (int j = i + 1; j < m->n; j++) {
			(*total) += e[i].fits && e[j].fits;
			if (!e[i].fits || !e[j].fits)
				continue;
			double a = m->rows[i].step_s - m->rows[j].step_s, b = e[i].step_s - e[j].step_s;
			ok += (a > 0) == (b > 0);
		}
	return ok;
}

static void print_table(const zb_ds_measured *m, const zb_ds_eval *d, const zb_ds_eval *f)
{
	printf("%-14s %9s %9s %7s %9s %7s %7s %7s %6s %7s %7s %6s\n", "config", "measured", "start", "err",
	       f ? "fitted" : "-", "err", "gpu", "gpu", "err", "host", "host", "err");
	printf("%-14s %9s %9s %7s %9s %7s %7s %7s %6s %7s %7s %6s\n", "", "ms", "ms", "%", "ms", "%", "GiB",
	       "pred", "%", "GiB", "pred", "%");
	double sd = 0, sf = 0, md = 0, mf = 0;
	int nd = 0, nf = 0; /* rows predicted (that fit) */
	const zb_ds_eval *mem = f ? f : d;
	for (int i = 0; i < m->n; i++) {
		const zb_ds_row *r = &m->rows[i];
		double ed = pct(d[i].step_s, r->step_s), ef = f ? pct(f[i].step_s, r->step_s) : 0;
		if (d[i].fits) {
			sd += fabs(ed), nd++;
			md = fabs(ed) > md ? fabs(ed) : md;
		}
		if (f && f[i].fits) {
			sf += fabs(ef), nf++;
			mf = fabs(ef) > mf ? fabs(ef) : mf;
		}
		char fs[16] = "-", fe[16] = "-";
		if (f) {
			snprintf(fs, sizeof fs, "%.0f", f[i].step_s * 1e3);
			snprintf(fe, sizeof fe, "%+.1f", ef);
		}
		char ds[16] = "no fit", de[16] = "-";
		if (d[i].fits) {
			snprintf(ds, sizeof ds, "%.0f", d[i].step_s * 1e3);
			snprintf(de, sizeof de, "%+.1f", ed);
		}
		printf("%-14s %9.0f %9s %7s %9s %7s %7.1f %7.1f %+6.1f %7.1f %7.1f %+6.1f\n", r->name,
		       r->step_s * 1e3, ds, de, fs, fe, r->gpu_peak_B / GIB, mem[i].gpu_B / GIB,
		       pct(mem[i].gpu_B, r->gpu_peak_B), r->host_rss_B / GIB, mem[i].host_B / GIB,
		       pct(mem[i].host_B, r->host_rss_B));
	}
	int tot, okd = pairs_in_order(m, d, &tot);
	printf("# step time MAPE: start profile %.1f%% (worst %.1f%%)", nd ? sd / nd : 0, md);
	if (f)
		printf(", fitted %.1f%% (worst %.1f%%)", nf ? sf / nf : 0, mf);
	if (nd < m->n)
		printf("; %d of %d configurations do not fit in the model's memory and are left out", m->n - nd, m->n);
	printf("\n# ranked as DeepSpeed, row against row: start profile %d of %d pairs", okd, tot);
	if (f)
		printf(", fitted %d of %d pairs", pairs_in_order(m, f, &tot), tot);
	printf(" (rows of one configuration from several sessions: see the pooled order below)\n");
}

/* Each configuration's sessions pooled (when a configuration comes in several rows) and
 * DeepSpeed's order where its own steps separate the pair (dsorder.h). */
static void print_pooled(const zb_ds_measured *m, const zb_ds_eval *e, const zb_config *base, const char *which)
{
	zb_ds_pooled *c = zb_xcalloc((size_t)m->n, sizeof *c);
	int n = zb_ds_pool(m, e, base, c);
	if (n < m->n) {
		printf("\n# %s profile against each configuration's sessions pooled (the median of all their steps "
		       "after warm-up)\n", which);
		printf("%-14s %8s %6s %9s %9s %7s  %s\n", "config", "sessions", "steps", "measured", "predicted", "err",
		       "session medians ms");
		double sum = 0, worst = 0;
		int used = 0;
		for (int k = 0; k < n; k++) {
			double x = pct(c[k].predicted_s, c[k].measured_s);
			if (c[k].fits) {
				sum += fabs(x), used++;
				worst = fabs(x) > worst ? fabs(x) : worst;
			}
			printf("%-14s %8d %6d %9.0f %9.0f %+7.1f ", m->rows[c[k].row[0]].name, c[k].nrows, c[k].nsteps,
			       c[k].measured_s * 1e3, c[k].predicted_s * 1e3, x);
			for (int r = 0; r < c[k].nrows; r++)
				printf(" %.0f", m->rows[c[k].row[r]].step_s * 1e3);
			printf("\n");
		}
		printf("# pooled step time MAPE %.1f%% (worst %.1f%%) over %d configurations\n", used ? sum / used : 0,
		       worst, used);
	}
	zb_ds_order o;
	zb_ds_order_check(m, c, n, &o, stdout);
	printf("# ranked as DeepSpeed where its steps separate the pair (rank-sum p < %.2f): %s profile %d of %d "
	       "separated pairs; %d of %d pairs not separated\n", ZB_DS_ORDER_ALPHA, which, o.in_order, o.separated,
	       o.pairs - o.separated, o.pairs);
	free(c);
}

static void print_profile(const zb_ds_profile *before, const zb_ds_profile *after)
{
	printf("\n%-18s %12s %12s  %s\n", "parameter", "start", "fitted", "source of the start value");
	for (int i = 0; i < ZB_DS_NPARAM; i++) {
		const zb_ds_param_info *in = zb_ds_param(i);
		printf("%-18s %12.4g %12.4g  %s\n", in->key, zb_ds_param_get(before, i), zb_ds_param_get(after, i),
		       in->source);
	}
}

static int eval_all(const zb_ds_measured *m, const zb_config *base, zb_ds_eval *e, zb_error *err)
{
	for (int i = 0; i < m->n; i++)
		if (zb_ds_eval_row(m, i, base, &e[i], err))
			return -1;
	return 0;
}

/* Leave one out: fit without one configuration (every session of it), predict its rows
 * and their pooled steps. The honest out-of-sample error of the fit. */
static int cross_validate(const zb_ds_measured *m, const zb_config *base, zb_error *err)
{
	zb_ds_eval *none = zb_xcalloc((size_t)m->n, sizeof *none);
	zb_ds_pooled *c = zb_xcalloc((size_t)m->n, sizeof *c);
	int n = zb_ds_pool(m, none, base, c), rc = -1;
	printf("\n# leave one out: fitted without each configuration (%d of them, every session), predicting it\n", n);
	printf("%-14s %9s %9s %7s\n", "config", "measured", "predicted", "err");
	double sum = 0, worst = 0, psum = 0, pworst = 0;
	for (int k = 0; k < n; k++) {
		zb_ds_measured rest = *m;
		rest.rows = zb_xcalloc((size_t)m->n, sizeof *rest.rows);
		rest.n = 0;
		for (int j = 0; j < m->n; j++) {
			int mine = 0;
			for (int r = 0; r < c[k].nrows; r++)
				mine |= c[k].row[r] == j;
			if (!mine)
				rest.rows[rest.n++] = m->rows[j];
		}
		zb_ds_profile fitted;
		zb_ds_fit_report rep;
		zb_status st = zb_ds_calibrate(&rest, base, &fitted, &rep, err);
		free(rest.rows);
		if (st)
			goto out;
		zb_config fc = *base;
		fc.hw.ds = fitted;
		zb_ds_eval e;
		for (int r = 0; r < c[k].nrows; r++) {
			int i = c[k].row[r];
			if (zb_ds_eval_row(m, i, &fc, &e, err))
				goto out;
			double x = pct(e.step_s, m->rows[i].step_s);
			sum += fabs(x);
			worst = fabs(x) > worst ? fabs(x) : worst;
			printf("%-14s %9.0f %9.0f %+7.1f\n", m->rows[i].name, m->rows[i].step_s * 1e3, e.step_s * 1e3, x);
		}
		double x = pct(e.step_s, c[k].measured_s);
		psum += fabs(x);
		pworst = fabs(x) > pworst ? fabs(x) : pworst;
		if (c[k].nrows > 1)
			printf("%-14s %9.0f %9.0f %+7.1f  (sessions pooled)\n", m->rows[c[k].row[0]].name,
			       c[k].measured_s * 1e3, e.step_s * 1e3, x);
	}
	printf("# leave-one-out MAPE %.1f%% (worst %.1f%%) over %d rows", sum / m->n, worst, m->n);
	if (n < m->n)
		printf("; %.1f%% (worst %.1f%%) over the %d configurations' pooled steps", psum / n, pworst, n);
	printf("\n");
	rc = 0;
out:
	free(none);
	free(c);
	return rc;
}

int zb_calibrate_deepspeed(int argc, char **argv)
{
	static const struct option table[] = {
		{ "deepspeed", no_argument, NULL, 'D' },     { "measured", required_argument, NULL, 'M' },
		{ "hw", required_argument, NULL, 'w' },      { "model", required_argument, NULL, 'm' },
		{ "seq", required_argument, NULL, 's' },     { "micro-batch", required_argument, NULL, 'B' },
		{ "sub-group", required_argument, NULL, 'g' }, { "out", required_argument, NULL, 'o' },
		{ "no-fit", no_argument, NULL, 'n' },        { "help", no_argument, NULL, 'h' },
		{ "cross-validate", no_argument, NULL, 'x' },
		{ 0 },
	};
	const char *measured = NULL, *files[8], *hw_name = NULL, *model = NULL, *out = NULL;
	int nfiles = 0;
	long long seq = 0, mb = 0, sg = 0;
	int no_fit = 0, loo = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "ho:", table, NULL)) != -1) {
		switch (opt) {
		case 'D': break;
		case 'M':
			if (nfiles == 8) {
				fprintf(stderr, "zbench: --measured: at most 8 files\n");
				return 2;
			}
			measured = files[nfiles++] = optarg;
			break;
		case 'w': hw_name = optarg; break;
		case 'm': model = optarg; break;
		case 'o': out = optarg; break;
		case 'n': no_fit = 1; break;
		case 'x': loo = 1; break;
		case 's': if (pos_int(optarg, "--seq", &seq)) return 2; break;
		case 'B': if (pos_int(optarg, "--micro-batch", &mb)) return 2; break;
		case 'g': if (pos_int(optarg, "--sub-group", &sg)) return 2; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!measured) {
		fprintf(stderr, "zbench: calibrate --deepspeed needs --measured FILE.tsv\n");
		return 2;
	}
	zb_error err = { 0 };
	zb_config base;
	memset(&base, 0, sizeof base);
	zb_status st;
	if (!hw_name)
		zb_preset_default_hw(&base.hw), st = ZB_OK;
	else if (strchr(hw_name, '/') || strstr(hw_name, ".json"))
		st = zb_hw_load(hw_name, &base.hw, &err);
	else
		st = zb_preset_hw(hw_name, &base.hw, &err);
	if (!st && model)
		st = zb_ds_model_named(model, NULL, &base.model, &err);
	else if (!st)
		zb_preset_default_model(&base.model);
	zb_ds_measured m = { 0 };
	if (!st)
		st = zb_ds_measured_load_many(files, nfiles, &base.model, &m, &err);
	if (st)
		return zb_report_error(&err); /* a bad table: exit 2, nothing written */
	zb_policy_defaults(&base.policy);
	base.framework = ZB_FW_DEEPSPEED;
	base.steps = 4;
	if (seq) base.policy.seq = (int)seq;
	if (mb) base.policy.micro_batch = (int)mb;
	if (sg) base.policy.sub_group_size = sg;

	zb_ds_eval *d = zb_xcalloc((size_t)m.n, sizeof *d), *f = zb_xcalloc((size_t)m.n, sizeof *f);
	int rc = 1;
	zb_ds_profile start, scratch;
	start = *zb_ds_profile_of(&base.hw.ds, &scratch);
	printf("# zbench calibrate --deepspeed: %d measured configurations from %s%s\n", m.n, measured,
	       nfiles > 1 ? " and the other --measured files" : "");
	printf("# hardware %s, model %s, seq %d, micro-batch %d; profile: %s\n", base.hw.name, base.model.name,
	       base.policy.seq, base.policy.micro_batch, base.hw.ds.set ? "the hardware file's" : "defaults");
	if (eval_all(&m, &base, d, &err))
		goto fail;
	if (no_fit) {
		print_table(&m, d, NULL);
		print_pooled(&m, d, &base, "start");
		rc = 0;
		goto done;
	}
	zb_ds_profile fitted;
	zb_ds_fit_report rep;
	if ((st = zb_ds_calibrate(&m, &base, &fitted, &rep, &err)))
		goto fail;
	zb_config fb = base;
	fb.hw.ds = fitted;
	if (eval_all(&m, &fb, f, &err))
		goto fail;
	print_table(&m, d, f);
	print_pooled(&m, f, &base, "fitted");
	print_profile(&start, &fitted);
	printf("# fit: rms log error %.3f -> %.3f, %d simulations of the %d configurations\n", rep.rms_before,
	       rep.rms_after, rep.evaluations, m.n);
	if (loo && cross_validate(&m, &base, &err))
		goto fail;
	if (out) {
		if ((st = zb_hw_save(out, &fb.hw, &err)))
			goto fail;
		printf("# wrote %s (the hardware profile with its deepspeed object)\n", out);
	}
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "zbench: %s\n", err.msg);
done:
	free(d);
	free(f);
	zb_ds_measured_free(&m);
	return rc;
}
