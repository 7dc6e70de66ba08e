/* report_html.c - `zbench report`: a stored sweep as one HTML file; see report_html.h. */
#include "publish/report_html.h"

#include <errno.h>
#include <stdarg.h>
#include <strings.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/version.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "plots/plot.h"
#include "report/report.h"
#include "report/sweep_table.h"
#include "results/query.h"
#include "sim/predict.h"
#include "sim/resources.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

/* ---- escaping ----------------------------------------------------------------- */

/* Text into HTML: every character that could open markup or end an attribute. */
static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
}

static void escf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(FILE *f, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	esc(f, buf);
}

/* ---- the rows, predicted again ------------------------------------------------- */

typedef struct rep {
	zb_store *store;
	const zb_report_request *req;
	zb_report_info *info;
	zb_error *err;
	double tokens;
	int n;
	zb_sweep_row *rows;
	zb_config *cfgs;
	double *stored_tps;         /* NAN: no stored prediction */
	char kind[32], started[64], version[64], commit[64], command[2048];
	int *best, nbest;           /* each machine's best row */
} rep;

/* The configuration under the other framework's schedule (what DeepSpeed gets, what the
 * hardware allows): the stored one with the framework turned over. */
static void other_schedule(zb_sweep_row *r)
{
	zb_config c = r->cfg;
	c.framework = c.framework == ZB_FW_DEEPSPEED ? ZB_FW_ZBENCH : ZB_FW_DEEPSPEED;
	if (c.framework == ZB_FW_ZBENCH && c.policy.gpus * c.policy.nodes <= 1)
		c.policy.zero_stage = 0;
	r->alt_cfg = c;
	zb_sweep_row_predict_alt(r);
}

static zb_status predict_row(const zb_config *c, zb_sweep_row *r, zb_error *err)
{
	memset(r, 0, sizeof *r);
	zb_prediction p;
	zb_status st = zb_predict(&p, c, err);
	if (st)
		return st;
	r->cfg = *c;
	r->mem = p.mem;
	r->simulated = p.simulated;
	if (p.simulated) {
		r->res = p.res;
		r->res.start = r->res.end = NULL;
		r->head = p.graph;
		r->head.tasks = NULL;
		r->head.deps = NULL;
		r->head.buckets = NULL;
	}
	zb_prediction_free(&p);
	other_schedule(r);
	return ZB_OK;
}

static void copy_text(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static zb_status load_run(rep *R)
{
	zb_rows *q;
	zb_status st;
	int rc;
	int64_t run = R->req->run_id;
	if (!run) {
		if ((st = zb_rows_open(R->store, ZB_Q_LATEST_SWEEP_RUN_PREDICTED, &q, R->err)))
			return st;
		if ((rc = zb_rows_next(q)) > 0)
			run = zb_rows_int(q, 0, 0);
		if ((st = zb_rows_close(q, rc, "find the latest sweep", R->err)))
			return st;
		if (!run)
			return zb_fail(R->err, ZB_E_INPUT, "no stored sweep in %s (run zbench sweep first, or give --run)",
				       zb_store_path(R->store));
	}
	R->info->run_id = run;
	if ((st = zb_rows_open(R->store, ZB_Q_RUN_INFO, &q, R->err)))
		return st;
	zb_rows_bind_int(q, 1, run);
	int found = 0;
	if ((rc = zb_rows_next(q)) > 0) {
		found = 1;
		copy_text(R->kind, sizeof R->kind, zb_rows_text(q, 0));
		copy_text(R->started, sizeof R->started, zb_rows_text(q, 1));
		copy_text(R->version, sizeof R->version, zb_rows_text(q, 2));
		copy_text(R->commit, sizeof R->commit, zb_rows_text(q, 3));
		copy_text(R->command, sizeof R->command, zb_rows_text(q, 4));
	}
	if ((st = zb_rows_close(q, rc, "read the run", R->err)))
		return st;
	if (!found)
		return zb_fail(R->err, ZB_E_INPUT, "no run %lld in %s", (long long)run, zb_store_path(R->store));
	return ZB_OK;
}

static zb_status load_rows(rep *R)
{
	zb_rows *q;
	zb_status st = zb_rows_open(R->store, ZB_Q_CONFIG_ROWS_OF_RUN, &q, R->err);
	if (st)
		return st;
	zb_rows_bind_int(q, 1, R->info->run_id);
	int rc, cap = 0;
	while ((rc = zb_rows_next(q)) > 0) {
		if (R->n == ZB_REPORT_MAX_ROWS) {
			zb_rows_close(q, 0, "read the configurations", R->err);
			return zb_fail(R->err, ZB_E_INPUT, "run %lld has more than %d configurations: a report shows at most "
				       "that many (sweep a smaller grid)", (long long)R->info->run_id, ZB_REPORT_MAX_ROWS);
		}
		if (R->n == cap) {
			cap = cap ? 2 * cap : 64;
			R->cfgs = zb_xrealloc(R->cfgs, (size_t)cap * sizeof *R->cfgs);
			R->stored_tps = zb_xrealloc(R->stored_tps, (size_t)cap * sizeof *R->stored_tps);
		}
		zb_error e;
		if (zb_config_from_json(zb_rows_text(q, 26), &R->cfgs[R->n], &e)) {
			zb_rows_close(q, 0, "read the configurations", R->err);
			return zb_fail(R->err, ZB_E_INPUT, "configuration %lld of run %lld: %s", (long long)zb_rows_int(q, 0, 0),
				       (long long)R->info->run_id, e.msg);
		}
		R->stored_tps[R->n] = zb_rows_int(q, 20, 0) ? zb_rows_real(q, 22, NAN) : NAN;
		R->n++;
	}
	if ((st = zb_rows_close(q, rc, "read the configurations", R->err)))
		return st;
	if (!R->n)
		return zb_fail(R->err, ZB_E_INPUT, "run %lld has no configurations", (long long)R->info->run_id);
	R->rows = zb_xcalloc((size_t)R->n, sizeof *R->rows);
	for (int i = 0; i < R->n; i++) {
		if ((st = predict_row(&R->cfgs[i], &R->rows[i], R->err)))
			return st;
		double a = R->stored_tps[i], b = R->rows[i].simulated ? R->rows[i].res.tokens_per_s : NAN;
		if ((isnan(a) != isnan(b)) || (!isnan(a) && fabs(a - b) > 1e-3 * fabs(a)))
			R->info->differ++;
	}
	R->info->rows = R->n;
	return ZB_OK;
}

/* ---- machines and what would remove their bottleneck ----------------------------- */

/* One machine and one workload (a model at a sequence length): a ranking compares
 * machines on the same work. */
static int same_machine_work(const zb_config *x, const zb_config *y)
{
	const zb_hw *a = &x->hw, *b = &y->hw;
	if (strcmp(x->model.name, y->model.name) || x->model.layers != y->model.layers ||
	    x->model.hidden != y->model.hidden || x->policy.seq != y->policy.seq)
		return 0;
	return !strcmp(a->name, b->name) && !strcmp(a->link.name, b->link.name) && !strcmp(a->gpu.name, b->gpu.name) &&
	       !strcmp(a->cpu.name, b->cpu.name) && a->cpu.cores == b->cpu.cores && a->cpu.mem_bytes == b->cpu.mem_bytes &&
	       a->cpu.dram_Bps == b->cpu.dram_Bps && a->price_per_hour == b->price_per_hour;
}

/* Ranked within each workload (the first row's model first), then by the key. */
static int work_order(const rep *R, int i)
{
	for (int k = 0; k < R->n; k++)
		if (!strcmp(R->rows[k].cfg.model.name, R->rows[i].cfg.model.name) &&
		    R->rows[k].cfg.policy.seq == R->rows[i].cfg.policy.seq)
			return k;
	return i;
}

static double rank_key(const rep *R, int i)
{
	zb_row_cost k;
	zb_sweep_row_cost(&R->rows[i], R->tokens, &k);
	return k.tokens_per_dollar >= 0 ? k.tokens_per_dollar : R->rows[i].res.tokens_per_s;
}

static int priced(const rep *R)
{
	for (int i = 0; i < R->n; i++)
		if (R->rows[i].cfg.hw.price_per_hour > 0)
			return 1;
	return 0;
}

static const rep *sort_rep; /* qsort has no context argument */
static int by_rank(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;
	int wi = work_order(sort_rep, i), wj = work_order(sort_rep, j);
	if (wi != wj)
		return wi - wj;
	double x = rank_key(sort_rep, i), y = rank_key(sort_rep, j);
	return x < y ? 1 : x > y ? -1 : 0;
}

static void find_machines(rep *R)
{
	R->best = zb_xcalloc((size_t)R->n, sizeof *R->best);
	for (int i = 0; i < R->n; i++) {
		const zb_sweep_row *r = &R->rows[i];
		if (!r->simulated)
			continue;
		int m;
		for (m = 0; m < R->nbest && !same_machine_work(&R->rows[R->best[m]].cfg, &r->cfg); m++)
			;
		if (m == R->nbest)
			R->best[R->nbest++] = i;
		else if (r->res.tokens_per_s > R->rows[R->best[m]].res.tokens_per_s)
			R->best[m] = i;
	}
	sort_rep = R;
	qsort(R->best, (size_t)R->nbest, sizeof *R->best, by_rank);
	R->info->machines = R->nbest;
}

/* The lever of a bottleneck: what doubles that resource on the machine. */
static const char *lever(int res, zb_config *c)
{
	switch (res) {
	case ZB_RES_CPU:
		c->hw.cpu.dram_Bps *= 2, c->hw.cpu.adam_Bps *= 2, c->hw.cpu.cores *= 2;
		return "a CPU with twice the memory bandwidth and cores";
	case ZB_RES_H2D:
	case ZB_RES_D2H:
		c->hw.link.h2d_Bps *= 2, c->hw.link.d2h_Bps *= 2;
		c->hw.link.pageable_h2d_Bps *= 2, c->hw.link.pageable_d2h_Bps *= 2;
		return "a host link of twice the rate (the next PCIe generation)";
	case ZB_RES_GPU:
	case ZB_RES_GPU_OPT:
		c->hw.gpu.bf16_flops *= 2, c->hw.gpu.fp16_flops *= 2, c->hw.gpu.hbm_Bps *= 2;
		return "a GPU with twice the compute and memory bandwidth";
	case ZB_RES_COMM:
		c->hw.fabric.intra_bus_Bps *= 2, c->hw.fabric.inter_bus_Bps *= 2;
		return "a fabric of twice the bandwidth between the GPUs";
	default:
		return NULL;
	}
}

/* "a CPU with twice ...: 7021 tokens/s (+32%), then bound by gpu", simulated. */
static void remedy(const zb_sweep_row *r, char *buf, size_t n)
{
	zb_config c = r->cfg;
	const char *what = lever(r->res.bottleneck, &c);
	zb_prediction p;
	zb_error e;
	if (!what || zb_predict(&p, &c, &e) || !p.simulated) {
		snprintf(buf, n, "%s", what ? what : "-");
		if (what)
			zb_prediction_free(&p);
		return;
	}
	snprintf(buf, n, "%s: %.0f tokens/s (%+.0f%%), then bound by %s", what, p.res.tokens_per_s,
		 100 * (p.res.tokens_per_s / r->res.tokens_per_s - 1), zb_resource_name(p.res.bottleneck));
	zb_prediction_free(&p);
}

/* ---- the page ---------------------------------------------------------------------- */

static const char *style =
	"body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#1a1a1a;padding:0 16px}"
	"h1{font-size:24px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}"
	"table{border-collapse:collapse;font-size:12px;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 6px;"
	"text-align:right;white-space:nowrap}th{background:#f2f2f2}td.t,th.t{text-align:left}"
	".meta{color:#555;font-size:12px}.note{background:#fff7e0;padding:6px 10px;border-left:3px solid #e0a000}"
	"figure{margin:16px 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}"
	".scroll{overflow-x:auto}";

static void head(FILE *f, const rep *R)
{
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	escf(f, "zbench report: sweep run %lld", (long long)R->info->run_id);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	escf(f, "Which machine? zbench's answer for sweep run %lld", (long long)R->info->run_id);
	fprintf(f, "</h1>\n<p class=\"meta\" id=\"provenance\">Report by zbench ");
	escf(f, "%s%s%s", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
	fprintf(f, ", command <code>");
	esc(f, R->req->command_line);
	fprintf(f, "</code>.<br>Sweep run ");
	escf(f, "%lld (%s, started %s, stored by zbench %s %s), command ", (long long)R->info->run_id, R->kind,
	     R->started, R->version, R->commit);
	fprintf(f, "<code>");
	esc(f, R->command);
	fprintf(f, "</code>.<br>Every row is predicted again from its stored configuration by this build");
	if (R->info->differ)
		escf(f, "; %d rows differ from the stored predictions (another zbench stored them): this report shows "
			"this build's", R->info->differ);
	fprintf(f, ".</p>\n");
}

static void cell(FILE *f, const char *cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cell(FILE *f, const char *cls, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(f, cls ? "<td class=\"%s\">" : "<td>", cls);
	esc(f, buf);
	fputs("</td>", f);
}

/* A number, or "-" when it is missing (< 0). */
static void num_cell(FILE *f, const char *fmt, double x)
{
	if (x >= 0)
		cell(f, NULL, fmt, x);
	else
		cell(f, NULL, "%s", "-");
}

static void answer(FILE *f, const rep *R)
{
	int money = priced(R);
	fprintf(f, "<h2 id=\"answer\">The answer: each machine's best configuration for each model, ranked by %s</h2>\n",
		money ? "tokens per dollar" : "tokens/s (no price given: --price or --prices)");
	if (R->nbest) {
		char lab[512];
		const zb_sweep_row *b = &R->rows[R->best[0]];
		zb_row_cost k;
		zb_sweep_row_cost(b, R->tokens, &k);
		zb_config_label(&b->cfg, lab, sizeof lab);
		fprintf(f, "<p id=\"verdict\">");
		escf(f, "First: %s, %s, %s (%d cores): %.0f tokens/s with %s's schedule", b->cfg.hw.gpu.name,
		     b->cfg.hw.link.name, b->cfg.hw.cpu.name, b->cfg.hw.cpu.cores, b->res.tokens_per_s,
		     zb_framework_name(b->cfg.framework));
		if (k.deepspeed_tps >= 0 && k.zbench_tps >= 0)
			escf(f, ". DeepSpeed gets %.0f tokens/s on this box; the hardware allows %.0f (zbench's schedule)",
			     k.deepspeed_tps, k.zbench_tps);
		if (k.train_cost >= 0)
			escf(f, ". %.3g tokens: %.0f hours, %.0f at %.2f per machine-hour", R->tokens, k.train_hours, k.train_cost,
			     b->cfg.hw.price_per_hour);
		fprintf(f, ". (");
		esc(f, lab);
		fprintf(f, ")</p>\n");
	}
	fprintf(f, "<div class=\"scroll\"><table id=\"ranking\">\n<tr><th>#</th><th class=\"t\">gpu</th><th class=\"t\">link</th>"
		   "<th class=\"t\">cpu</th><th>cores</th><th class=\"t\">model</th><th class=\"t\">best settings</th><th>tokens/s</th>"
		   "<th>DeepSpeed tokens/s</th><th>zbench tokens/s</th><th>price/h</th><th>M tokens per $</th>"
		   "<th>train hours</th><th>train cost</th><th class=\"t\">bottleneck</th><th class=\"t\">what would remove it "
		   "(simulated)</th><th>GPU / host memory GiB</th><th class=\"t\">profile</th></tr>\n");
	for (int m = 0, place = 0; m < R->nbest; m++) {
		const zb_sweep_row *r = &R->rows[R->best[m]];
		const zb_config *c = &r->cfg;
		place = m && work_order(R, R->best[m]) == work_order(R, R->best[m - 1]) ? place + 1 : 1;
		zb_row_cost k;
		zb_sweep_row_cost(r, R->tokens, &k);
		char rem[512], prof[160];
		remedy(r, rem, sizeof rem);
		zb_config_profile(c, prof, sizeof prof);
		fprintf(f, "<tr>");
		cell(f, NULL, "%d", place);
		cell(f, "t", "%s", c->hw.gpu.name);
		cell(f, "t", "%s", c->hw.link.name);
		cell(f, "t", "%s%s", c->hw.cpu.name, c->hw.cpu.hypothetical ? " (hypothetical)" : "");
		cell(f, NULL, "%d", c->hw.cpu.cores);
		cell(f, "t", "%s", c->model.name);
		cell(f, "t", "%s %s ratio %.2f, mb %d, gas %d, seq %d, ckpt %s", zb_framework_name(c->framework),
		     zb_policy_name(c->policy.kind), c->policy.kind == ZB_POLICY_NONE ? 0 : c->policy.ratio, c->policy.micro_batch,
		     c->policy.gas, c->policy.seq, zb_ckpt_name(c->policy.ckpt));
		cell(f, NULL, "%.0f", r->res.tokens_per_s);
		num_cell(f, "%.0f", k.deepspeed_tps);
		num_cell(f, "%.0f", k.zbench_tps);
		num_cell(f, "%.2f", c->hw.price_per_hour > 0 ? c->hw.price_per_hour : -1);
		num_cell(f, "%.3f", k.tokens_per_dollar >= 0 ? k.tokens_per_dollar / 1e6 : -1);
		num_cell(f, "%.1f", k.train_hours);
		num_cell(f, "%.0f", k.train_cost);
		cell(f, "t", "%s (bound %.1f ms of a %.1f ms step)", zb_resource_name(r->res.bottleneck),
		     r->res.lower_bound_s * 1e3, r->res.step_time_s * 1e3);
		cell(f, "t", "%s", rem);
		cell(f, NULL, "%.1f of %.1f / %.1f of %.0f", r->mem.gpu_bytes / GiB, c->hw.gpu.mem_bytes / GiB,
		     r->mem.host_bytes / GiB, c->hw.cpu.mem_bytes / GiB);
		cell(f, "t", "%s", prof);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</table></div>\n");
}

/* ---- plots ---------------------------------------------------------------------------- */

/* An SVG file's <svg ...>...</svg>, without its XML prolog and doctype. */
static char *svg_body(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *text = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&text, &n);
	char buf[8192];
	size_t k;
	while ((k = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, k, m);
	fclose(f);
	fclose(m);
	char *s = text ? strstr(text, "<svg") : NULL;
	if (!s) {
		free(text);
		return NULL;
	}
	char *body = strdup(s);
	free(text);
	return body;
}

static void plots(FILE *f, rep *R)
{
	static const struct { zb_plot_kind kind; const char *id, *caption; } kinds[] = {
		{ ZB_PLOT_HARDWARE, "plot-hardware", "Speedup by hardware: each machine at its fastest settings, against the slowest" },
		{ ZB_PLOT_RATIO, "plot-throughput", "Throughput of every configuration" },
		{ ZB_PLOT_MEMORY, "plot-memory", "GPU and host memory per setting, with every part's usable capacity" },
	};
	fprintf(f, "<h2 id=\"plots\">Plots</h2>\n");
	char dir[] = "/tmp/zbench-report-XXXXXX";
	if (!mkdtemp(dir)) {
		escf(f, "plots not drawn: cannot make a scratch directory (%s)", strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		char out[64];
		snprintf(out, sizeof out, "%s/%s.svg", dir, kinds[i].id);
		zb_plot_request pr = { .kind = kinds[i].kind, .run_id = R->info->run_id, .output = out };
		zb_plot_info pi;
		zb_error e = { 0 };
		char *svg = NULL;
		if (!zb_plot_make(R->store, &pr, &pi, &e))
			svg = svg_body(out);
		unlink(out);
		fprintf(f, "<figure id=\"%s\">\n", kinds[i].id);
		if (svg) {
			fputs(svg, f); /* gnuplot's own output, from data files: no user text in its script */
			R->info->plots++;
		} else {
			fprintf(f, "<p class=\"note\">");
			escf(f, "not drawn: %s", e.msg[0] ? e.msg : "gnuplot wrote no SVG");
			fprintf(f, "</p>");
		}
		fprintf(f, "\n<figcaption>");
		esc(f, kinds[i].caption);
		fprintf(f, "</figcaption>\n</figure>\n");
		free(svg);
	}
	rmdir(dir);
}

/* ---- every row, memory, sources -------------------------------------------------------- */

/* One CSV record (RFC 4180, report/csv.h) as table cells; *p moves past it. */
static void csv_record_cells(FILE *f, const char **p, const char *tag)
{
	const char *s = *p;
	for (;;) {
		fprintf(f, "<%s>", tag);
		if (*s == '"') {
			for (s++; *s; s++) {
				if (*s == '"' && s[1] == '"')
					fputc('"', f), s++;
				else if (*s == '"')
					break;
				else
					esc(f, (char[2]){ *s, 0 });
			}
			if (*s == '"')
				s++;
		} else {
			for (; *s && *s != ',' && *s != '\r' && *s != '\n'; s++)
				esc(f, (char[2]){ *s, 0 });
		}
		fprintf(f, "</%s>", tag);
		if (*s != ',')
			break;
		s++;
	}
	while (*s == '\r' || *s == '\n')
		s++;
	*p = s;
}

static void all_rows(FILE *f, const rep *R)
{
	zb_sweep_table t;
	zb_sweep_table_init(&t, NULL, 1, 0, R->tokens);
	zb_sweep_table_vary(&t, R->cfgs, R->n);
	char *text = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&text, &n);
	zb_sweep_table_head(m, &t);
	for (int i = 0; i < R->n; i++)
		zb_sweep_table_row(m, &t, &R->rows[i]);
	fclose(m);
	escf(f, "%d configurations, every axis the sweep varied; the same columns as zbench sweep --csv", R->n);
	fprintf(f, "</p>\n<div class=\"scroll\"><table id=\"rows\">\n");
	const char *p = text;
	for (int line = 0; p && *p; line++) {
		fprintf(f, "<tr>");
		csv_record_cells(f, &p, line ? "td" : "th");
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</table></div>\n");
	free(text);
}

static void memory(FILE *f, const rep *R)
{
	fprintf(f, "<h2 id=\"memory\">Memory: what fits</h2>\n<ul id=\"nofit\">\n");
	int k = 0;
	for (int i = 0; i < R->n; i++) {
		const zb_sweep_row *r = &R->rows[i];
		if (r->mem.fits)
			continue;
		char lab[512];
		zb_config_label(&r->cfg, lab, sizeof lab);
		fprintf(f, "<li>");
		escf(f, "%s: does not fit: %s", lab, r->mem.reason);
		fprintf(f, "</li>\n");
		k++;
	}
	if (!k)
		fprintf(f, "<li>every configuration fits in GPU and host memory</li>\n");
	fprintf(f, "</ul>\n<h2 id=\"all\">Every configuration</h2>\n<p>");
	all_rows(f, R);
}

/* A part once, with its figures and where they come from. */
static void source_row(FILE *f, const char *family, const char *name, const char *figures, const char *seen[],
		       int *nseen)
{
	char key[160];
	snprintf(key, sizeof key, "%s/%s", family, name);
	for (int i = 0; i < *nseen; i++)
		if (!strcmp(seen[i], key))
			return;
	if (*nseen >= 256)
		return;
	seen[(*nseen)++] = strdup(key);
	const char *src = zb_preset_source(family, name);
	fprintf(f, "<tr>");
	cell(f, "t", "%s", family);
	cell(f, "t", "%s", name);
	cell(f, "t", "%s", figures);
	cell(f, "t", "%s", src ? src : "not a preset: a hardware file's figures (--hw), or a preset with flags over it");
	fprintf(f, "</tr>\n");
}

static void sources(FILE *f, const rep *R)
{
	fprintf(f, "<h2 id=\"sources\">Where every figure comes from</h2>\n<p>The figures each prediction used "
		   "(after any flag such as --cores or --dram-bw) and the source of the part's preset "
		   "(inputs/presets.c has every source in full; docs/hardware.md the CPU law).</p>\n"
		   "<div class=\"scroll\"><table id=\"sources-table\">\n<tr><th class=\"t\">part</th><th class=\"t\">name</th>"
		   "<th class=\"t\">figures used</th><th class=\"t\">source</th></tr>\n");
	const char *seen[256];
	int nseen = 0;
	char fig[512];
	for (int i = 0; i < R->n; i++) {
		const zb_hw *h = &R->cfgs[i].hw;
		snprintf(fig, sizeof fig, "%.1f / %.1f GB/s pinned h2d / d2h, duplex %.2f / %.2f, %.0f us a copy",
			 h->link.h2d_Bps / 1e9, h->link.d2h_Bps / 1e9, h->link.duplex_h2d, h->link.duplex_d2h,
			 h->link.copy_latency_s * 1e6);
		source_row(f, "pcie", h->link.name, fig, seen, &nseen);
		snprintf(fig, sizeof fig, "%.0f TFLOP/s bf16, %.2f TB/s HBM, %.1f GiB", h->gpu.bf16_flops / 1e12,
			 h->gpu.hbm_Bps / 1e12, h->gpu.mem_bytes / GiB);
		source_row(f, "gpu", h->gpu.name, fig, seen, &nseen);
		double cap = h->cpu.adam_Bps > 0 ? h->cpu.adam_Bps : h->cpu.dram_Bps;
		snprintf(fig, sizeof fig, "%d cores%s, Adam %.2f Gparam/s a core and at most %.2f, DRAM %.0f GB/s, %.0f GiB",
			 h->cpu.cores, h->cpu.hypothetical ? " (hypothetical)" : "", h->cpu.adam_params_per_core / 1e9,
			 cap / 28 / 1e9, h->cpu.dram_Bps / 1e9, h->cpu.mem_bytes / GiB);
		char cname[ZB_NAME_MAX + 16];
		snprintf(cname, sizeof cname, "%s", h->cpu.name);
		source_row(f, "cpu", cname, fig, seen, &nseen);
	}
	fprintf(f, "</table></div>\n<h2 id=\"profiles\">Profiles</h2>\n<ul>\n");
	const char *pseen[64];
	int np = 0;
	for (int i = 0; i < R->n && np < 64; i++) {
		char prof[160];
		zb_config_profile(&R->cfgs[i], prof, sizeof prof);
		int dup = 0;
		for (int k = 0; k < np && !dup; k++)
			dup = !strcmp(pseen[k], prof);
		if (dup)
			continue;
		pseen[np++] = strdup(prof);
		fprintf(f, "<li><code>");
		esc(f, prof);
		fprintf(f, "</code>: ");
		esc(f, !strcmp(prof, "first-principles") ? "zbench's schedule on the presets alone (no calibrated overlay)"
		       : !strcmp(prof, "deepspeed-defaults") ? "DeepSpeed's schedule with its default framework costs, the "
							       "same for every machine (core/dsprofile.c)"
							     : "a calibrated profile of the hardware file named (--hw)");
		fprintf(f, "</li>\n");
	}
	fprintf(f, "</ul>\n");
	for (int i = 0; i < nseen; i++)
		free((char *)seen[i]);
	for (int i = 0; i < np; i++)
		free((char *)pseen[i]);
}

/* ---- the file --------------------------------------------------------------------------- */

static zb_status write_page(rep *R, FILE *f)
{
	head(f, R);
	answer(f, R);
	plots(f, R);
	memory(f, R);
	sources(f, R);
	fprintf(f, "</body>\n</html>\n");
	return ferror(f) ? zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", R->req->output, strerror(errno)) : ZB_OK;
}

/* Beside the target, then renamed: a failed report leaves nothing under its name. */
static zb_status write_file(rep *R)
{
	const char *out = R->req->output;
	size_t n = strlen(out) + 16;
	char *tmp = zb_xmalloc(n);
	snprintf(tmp, n, "%s.tmpXXXXXX", out);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		zb_status st = zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
		free(tmp);
		return st;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask)) { /* mkstemp's 0600: the report is for sharing */
		close(fd);
		unlink(tmp);
		free(tmp);
		return zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
	}
	FILE *f = fdopen(fd, "w");
	zb_status st = f ? write_page(R, f) : zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
	if (f && (fflush(f) || fsync(fileno(f))) && !st)
		st = zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
	if (f ? fclose(f) : close(fd))
		if (!st)
			st = zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
	if (!st && rename(tmp, out))
		st = zb_fail(R->err, ZB_E_INPUT, "cannot write %s: %s", out, strerror(errno));
	if (st)
		unlink(tmp);
	free(tmp);
	return st;
}

zb_status zb_report_html(zb_store *s, const zb_report_request *req, zb_report_info *info, zb_error *err)
{
	memset(info, 0, sizeof *info);
	rep R = { .store = s, .req = req, .info = info, .err = err, .tokens = req->tokens > 0 ? req->tokens : 1e10 };
	const char *dot = strrchr(req->output, '.');
	if (!dot || (strcasecmp(dot, ".html") && strcasecmp(dot, ".htm")))
		return zb_fail(err, ZB_E_INPUT, "report output '%s' must end in .html", req->output);
	zb_status st = load_run(&R);
	if (!st)
		st = load_rows(&R);
	if (!st) {
		find_machines(&R);
		st = write_file(&R);
	}
	free(R.rows);
	free(R.cfgs);
	free(R.stored_tps);
	free(R.best);
	return st;
}
