/* sweep_table.c - the sweep's rows as a table and as CSV; see sweep_table.h. */
#include "report/sweep_table.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "report/csv.h"
#include "report/ranks.h"
#include "schedules/deepspeed.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

typedef struct ctx {
	const zb_sweep_row *r;
	const zb_sweep_table *t;
	zb_row_cost cost;
	int csv;
} ctx;

typedef void (*get_fn)(const ctx *x, char *b, size_t n);

typedef struct col {
	const char *csv, *name, *unit; /* CSV header; the table's two header rows */
	int width, left;
	get_fn get;                    /* "" : missing (CSV empty, table "-") */
} col;

#define C(x) (&(x)->r->cfg)
#define SIM(x) ((x)->r->simulated)

static void num(char *b, size_t n, const char *fmt, double v) { snprintf(b, n, fmt, v); }

static void g_model(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", C(x)->model.name); }
static void g_pcie(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", C(x)->hw.link.name); }
static void g_gpu(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", C(x)->hw.gpu.name); }
static void g_cpu(const ctx *x, char *b, size_t n)
{
	/* the table marks a hypothetical CPU with '*'; the CSV has a column for it */
	snprintf(b, n, "%s%s", C(x)->hw.cpu.name, !x->csv && C(x)->hw.cpu.hypothetical ? "*" : "");
}
static void g_cores(const ctx *x, char *b, size_t n) { snprintf(b, n, "%d", C(x)->hw.cpu.cores); }
static void g_policy(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", zb_policy_name(C(x)->policy.kind)); }
static void g_ratio(const ctx *x, char *b, size_t n)
{
	double r = C(x)->policy.kind == ZB_POLICY_NONE ? 0.0 : C(x)->policy.ratio;
	num(b, n, x->csv ? "%.4g" : "%.2f", r);
}
static void g_mb(const ctx *x, char *b, size_t n) { snprintf(b, n, "%d", C(x)->policy.micro_batch); }
static void g_gas(const ctx *x, char *b, size_t n) { snprintf(b, n, "%d", C(x)->policy.gas); }
static void g_seq(const ctx *x, char *b, size_t n) { snprintf(b, n, "%d", C(x)->policy.seq); }
static void g_ckpt(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", zb_ckpt_name(C(x)->policy.ckpt)); }
static void g_dtype(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", zb_dtype_name(C(x)->policy.dtype)); }
static void g_fw(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", zb_framework_name(C(x)->framework)); }
static void g_zero(const ctx *x, char *b, size_t n)
{
	if (C(x)->framework == ZB_FW_DEEPSPEED)
		snprintf(b, n, "%d", zb_ds_stage(C(x)));
}
static void g_sub(const ctx *x, char *b, size_t n)
{
	if (C(x)->framework == ZB_FW_DEEPSPEED)
		snprintf(b, n, "%lld", (long long)zb_ds_sub_group(C(x)));
}
static void g_step(const ctx *x, char *b, size_t n)
{
	if (SIM(x))
		num(b, n, x->csv ? "%.6g" : "%.2f", x->r->res.step_time_s * 1e3);
}
static void g_tps(const ctx *x, char *b, size_t n)
{
	if (SIM(x))
		num(b, n, "%.0f", x->r->res.tokens_per_s);
}
static void g_tflops(const ctx *x, char *b, size_t n)
{
	if (SIM(x))
		num(b, n, x->csv ? "%.4g" : "%.1f", x->r->res.tflops_per_gpu);
}
static void g_bn(const ctx *x, char *b, size_t n)
{
	if (SIM(x))
		snprintf(b, n, "%s", zb_resource_name(x->r->res.bottleneck));
}
static void g_bound(const ctx *x, char *b, size_t n)
{
	if (SIM(x))
		num(b, n, x->csv ? "%.6g" : "%.2f", x->r->res.lower_bound_s * 1e3);
}
static void g_ztps(const ctx *x, char *b, size_t n)
{
	if (x->cost.zbench_tps >= 0)
		num(b, n, "%.0f", x->cost.zbench_tps);
}
static void g_dtps(const ctx *x, char *b, size_t n)
{
	if (x->cost.deepspeed_tps >= 0)
		num(b, n, "%.0f", x->cost.deepspeed_tps);
}
static void g_gmem(const ctx *x, char *b, size_t n) { num(b, n, x->csv ? "%.4g" : "%.1f", x->r->mem.gpu_bytes / GiB); }
static void g_gcap(const ctx *x, char *b, size_t n) { num(b, n, x->csv ? "%.5g" : "%.1f", C(x)->hw.gpu.mem_bytes / GiB); }
static void g_hmem(const ctx *x, char *b, size_t n) { num(b, n, x->csv ? "%.4g" : "%.1f", x->r->mem.host_bytes / GiB); }
static void g_hcap(const ctx *x, char *b, size_t n) { num(b, n, x->csv ? "%.5g" : "%.0f", C(x)->hw.cpu.mem_bytes / GiB); }
static void g_fits(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", x->r->mem.fits ? "yes" : "no"); }
static void g_price(const ctx *x, char *b, size_t n)
{
	if (C(x)->hw.price_per_hour > 0)
		num(b, n, x->csv ? "%.6g" : "%.2f", C(x)->hw.price_per_hour);
}
static void g_tpd(const ctx *x, char *b, size_t n)
{
	if (x->cost.tokens_per_dollar >= 0) /* the table in millions */
		num(b, n, x->csv ? "%.6g" : "%.3f", x->cost.tokens_per_dollar / (x->csv ? 1 : 1e6));
}
static void g_hours(const ctx *x, char *b, size_t n)
{
	if (x->cost.train_hours >= 0)
		num(b, n, x->csv ? "%.6g" : "%.1f", x->cost.train_hours);
}
static void g_tcost(const ctx *x, char *b, size_t n)
{
	if (x->cost.train_cost >= 0)
		num(b, n, x->csv ? "%.6g" : "%.0f", x->cost.train_cost);
}
static void g_profile(const ctx *x, char *b, size_t n) { zb_config_profile(C(x), b, n); }
static void g_hyp(const ctx *x, char *b, size_t n) { snprintf(b, n, "%s", C(x)->hw.cpu.hypothetical ? "yes" : "no"); }
static void g_reason(const ctx *x, char *b, size_t n)
{
	if (!x->r->mem.fits)
		snprintf(b, n, "%s", x->r->mem.reason);
}

/* Before the extra axes: the configuration's own columns. */
static const col conf_cols[] = {
	{ "model", "model", "", 12, 1, g_model },
	{ "pcie", "pcie", "", 10, 1, g_pcie },
	{ "gpu", "gpu", "", 9, 1, g_gpu },
	{ "cpu", "cpu", "", 15, 1, g_cpu },
	{ "cores", "cores", "", 5, 0, g_cores },
	{ "policy", "policy", "", 8, 1, g_policy },
	{ "ratio", "ratio", "", 5, 0, g_ratio },
	{ "micro_batch", "mb", "", 4, 0, g_mb },
	{ "gas", "gas", "", 4, 0, g_gas },
	{ "seq", "seq", "", 5, 0, g_seq },
	{ "ckpt", "ckpt", "", 4, 1, g_ckpt },
	{ "dtype", "dtype", "", 5, 1, g_dtype },
	{ "framework", "framework", "", 9, 1, g_fw },
	{ "zero", "zero", "", 4, 0, g_zero },
	{ "sub_group", "sub_group", "", 10, 0, g_sub },
};
/* After them: the prediction, the other schedule, memory, cost, profile; reason last. */
static const col result_cols[] = {
	{ "step_ms", "step", "ms", 10, 0, g_step },
	{ "tokens_per_s", "tokens/s", "1/s", 9, 0, g_tps },
	{ "tflops_per_gpu", "TFLOP/s", "per GPU", 8, 0, g_tflops },
	{ "bottleneck", "bottleneck", "", 10, 1, g_bn },
	{ "bound_ms", "bound", "ms", 10, 0, g_bound },
	{ "zbench_tokens_per_s", "zbench", "tokens/s", 9, 0, g_ztps },
	{ "deepspeed_tokens_per_s", "deepspeed", "tokens/s", 9, 0, g_dtps },
	{ "gpu_mem_gib", "gpu_mem", "GiB", 7, 0, g_gmem },
	{ "gpu_cap_gib", "gpu_cap", "GiB", 7, 0, g_gcap },
	{ "host_mem_gib", "host_mem", "GiB", 8, 0, g_hmem },
	{ "host_cap_gib", "host_cap", "GiB", 8, 0, g_hcap },
	{ "fits", "fits", "", 4, 1, g_fits },
	{ "price_per_hour", "price", "per hour", 8, 0, g_price },
	{ "tokens_per_dollar", "Mtokens", "per $", 8, 0, g_tpd },
	{ "train_hours", "train", "hours", 8, 0, g_hours },
	{ "train_cost", "train", "cost", 9, 0, g_tcost },
	{ "profile", "profile", "", 24, 1, g_profile },
	{ "hypothetical_cpu", NULL, NULL, 0, 0, g_hyp }, /* CSV only: the table's cpu* */
};
static const col reason_col = { "reason", "reason", "", 0, 1, g_reason };

#define NC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Axes with a column above (or none needed: the model file names the model). */
static int has_column(int a)
{
	switch (a) {
	case ZB_AX_PCIE: case ZB_AX_GPU: case ZB_AX_CPU: case ZB_AX_CORES: case ZB_AX_MODEL: case ZB_AX_MODEL_FILE:
	case ZB_AX_POLICY: case ZB_AX_RATIO: case ZB_AX_CKPT: case ZB_AX_GAS: case ZB_AX_MICRO_BATCH:
	case ZB_AX_SEQ: case ZB_AX_DTYPE: case ZB_AX_FRAMEWORK: case ZB_AX_ZERO_STAGE: case ZB_AX_SUB_GROUP:
	case ZB_AX_HOST_MEM: case ZB_AX_PRICE: case ZB_AX_GPUS: case ZB_AX_NODES:
		return 1;
	default:
		return 0;
	}
}

void zb_sweep_table_init(zb_sweep_table *t, const zb_sweep_grid *g, int csv, int ranks, double tokens)
{
	memset(t, 0, sizeof *t);
	t->csv = csv;
	t->ranks = ranks;
	t->tokens = tokens > 0 ? tokens : 1e10;
	for (int a = 0; g && a < ZB_AX_COUNT; a++)
		if (g->n[a] > 1 && !has_column(a))
			t->extra[t->n_extra++] = a;
}

/* An extra axis's value in the row's configuration, and its CSV name with the unit. */
static void extra_value(const zb_config *c, int a, char *b, size_t n)
{
	const zb_policy *p = &c->policy;
	const zb_model *m = &c->model;
	switch (a) {
	case ZB_AX_HW: snprintf(b, n, "%s", c->hw.name); break;
	case ZB_AX_GPUS_PER_LINK: snprintf(b, n, "%d", c->hw.gpus_per_link); break;
	case ZB_AX_GPUS_PER_CPU: snprintf(b, n, "%d", c->hw.gpus_per_cpu); break;
	case ZB_AX_LAYERS: snprintf(b, n, "%d", m->layers); break;
	case ZB_AX_HIDDEN: snprintf(b, n, "%d", m->hidden); break;
	case ZB_AX_HEADS: snprintf(b, n, "%d", m->heads); break;
	case ZB_AX_KV_HEADS: snprintf(b, n, "%d", m->kv_heads); break;
	case ZB_AX_FFN: snprintf(b, n, "%d", m->ffn); break;
	case ZB_AX_VOCAB: snprintf(b, n, "%d", m->vocab); break;
	case ZB_AX_PREFETCH: snprintf(b, n, "%d", p->prefetch_layers); break;
	case ZB_AX_BUCKET: snprintf(b, n, "%lld", (long long)p->bucket_params); break;
	case ZB_AX_THREADS: snprintf(b, n, "%d", zb_config_cpu_threads(c)); break;
	case ZB_AX_STEPS: snprintf(b, n, "%d", c->steps); break;
	case ZB_AX_ATTENTION: snprintf(b, n, "%s", p->attention == ZB_ATTN_FLASH ? "flash" : "eager"); break;
	case ZB_AX_LINK_RATE: snprintf(b, n, "%.6g", p->link_rate_Bps / 1e9); break;
	case ZB_AX_DRAM_BW: snprintf(b, n, "%.6g", c->hw.cpu.dram_Bps / 1e9); break;
	case ZB_AX_CPU_ADAM: snprintf(b, n, "%.6g", c->hw.cpu.adam_params_per_core / 1e9); break;
	default: b[0] = 0;
	}
}

static const char *extra_csv_name(int a)
{
	switch (a) {
	case ZB_AX_BUCKET: return "bucket_params";
	case ZB_AX_LINK_RATE: return "link_rate_gbps";
	case ZB_AX_DRAM_BW: return "dram_gbps";
	case ZB_AX_CPU_ADAM: return "cpu_adam_gparams_per_s";
	case ZB_AX_THREADS: return "threads";
	case ZB_AX_PREFETCH: return "prefetch_layers";
	default: return NULL;
	}
}

void zb_sweep_table_vary(zb_sweep_table *t, const zb_config *rows, int n)
{
	t->n_extra = 0;
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		if (has_column(a))
			continue;
		char first[96], v[96];
		extra_value(&rows[0], a, first, sizeof first);
		for (int i = 1; i < n && first[0]; i++) {
			extra_value(&rows[i], a, v, sizeof v);
			if (strcmp(v, first)) {
				t->extra[t->n_extra++] = a;
				break;
			}
		}
	}
}

/* "gpus-per-link" as "gpus_per_link". */
static void snake(const char *s, char *b, size_t n)
{
	snprintf(b, n, "%s", s);
	for (char *c = b; *c; c++)
		if (*c == '-')
			*c = '_';
}

/* One cell; the table shows a missing value as "-" (a header cell as blank: hdr). */
static void cell_h(FILE *f, const col *k, const char *v, int first, int csv, int hdr)
{
	if (csv) {
		zb_csv_put(f, v, first);
		return;
	}
	const char *s = v && *v ? v : hdr ? "" : "-";
	if (!k->width)
		fprintf(f, "%s%s", first ? "" : " ", s);
	else
		fprintf(f, k->left ? "%s%-*s" : "%s%*s", first ? "" : " ", k->width, s);
}

static void cell(FILE *f, const col *k, const char *v, int first, int csv) { cell_h(f, k, v, first, csv, 0); }

static void head_row(FILE *f, const zb_sweep_table *t, int units)
{
	int first = 1;
	char name[64];
	for (int i = 0; i < NC(conf_cols); i++, first = 0)
		cell_h(f, &conf_cols[i], t->csv ? conf_cols[i].csv : units ? conf_cols[i].unit : conf_cols[i].name, first,
		       t->csv, 1);
	for (int e = 0; e < t->n_extra; e++) {
		const char *cn = extra_csv_name(t->extra[e]);
		snake(cn ? cn : zb_axis_name((zb_axis)t->extra[e]), name, sizeof name);
		col k = { .width = 10 };
		cell_h(f, &k, t->csv ? name : units ? "" : zb_axis_name((zb_axis)t->extra[e]), 0, t->csv, 1);
	}
	for (int i = 0; i < NC(result_cols); i++) {
		const col *k = &result_cols[i];
		if (!k->name && !t->csv)
			continue;
		cell_h(f, k, t->csv ? k->csv : units ? k->unit : k->name, 0, t->csv, 1);
	}
	if (t->ranks) /* the rank columns before the reason, which runs to the end of a line */
		zb_ranks_sweep_head(f, t->csv, units);
	cell_h(f, &reason_col, t->csv ? reason_col.csv : units ? "" : reason_col.name, 0, t->csv, 1);
	if (t->csv)
		zb_csv_end(f);
	else
		fputc('\n', f);
}

void zb_sweep_table_head(FILE *f, const zb_sweep_table *t)
{
	head_row(f, t, 0);
	if (!t->csv)
		head_row(f, t, 1);
}

void zb_sweep_table_row(FILE *f, const zb_sweep_table *t, const zb_sweep_row *r)
{
	ctx x = { .r = r, .t = t, .csv = t->csv };
	zb_sweep_row_cost(r, t->tokens, &x.cost);
	char v[320];
	int first = 1;
	for (int i = 0; i < NC(conf_cols); i++, first = 0) {
		v[0] = 0;
		conf_cols[i].get(&x, v, sizeof v);
		cell(f, &conf_cols[i], v, first, t->csv);
	}
	for (int e = 0; e < t->n_extra; e++) {
		col k = { .width = 10 };
		extra_value(&r->cfg, t->extra[e], v, sizeof v);
		cell(f, &k, v, 0, t->csv);
	}
	for (int i = 0; i < NC(result_cols); i++) {
		const col *k = &result_cols[i];
		if (!k->name && !t->csv)
			continue;
		v[0] = 0;
		k->get(&x, v, sizeof v);
		cell(f, k, v, 0, t->csv);
	}
	if (t->ranks)
		zb_ranks_sweep_row(f, t->csv, &r->cfg, r->simulated ? &r->head : NULL, r->simulated ? &r->res : NULL);
	v[0] = 0;
	g_reason(&x, v, sizeof v);
	cell(f, &reason_col, v, 0, t->csv);
	if (t->csv)
		zb_csv_end(f);
	else
		fputc('\n', f);
}

void zb_sweep_row_cost(const zb_sweep_row *r, double tokens, zb_row_cost *o)
{
	o->zbench_tps = o->deepspeed_tps = -1;
	o->tokens_per_dollar = o->train_hours = o->train_cost = -1;
	if (r->simulated) {
		if (r->cfg.framework == ZB_FW_DEEPSPEED)
			o->deepspeed_tps = r->res.tokens_per_s;
		else
			o->zbench_tps = r->res.tokens_per_s;
	}
	if (r->alt_state == 1) {
		if (r->alt_cfg.framework == ZB_FW_DEEPSPEED)
			o->deepspeed_tps = r->alt_res.tokens_per_s;
		else
			o->zbench_tps = r->alt_res.tokens_per_s;
	}
	if (!r->simulated || !(r->res.tokens_per_s > 0))
		return;
	o->train_hours = tokens / r->res.tokens_per_s / 3600;
	double price = r->cfg.hw.price_per_hour;
	if (price > 0) {
		o->tokens_per_dollar = r->res.tokens_per_s * 3600 / price;
		o->train_cost = o->train_hours * price;
	}
}

static json_t *maybe(double x) { return x >= 0 ? json_real(x) : json_null(); }

void zb_sweep_row_json(void *jv, const zb_sweep_row *r, double tokens)
{
	json_t *j = jv;
	zb_row_cost k;
	zb_sweep_row_cost(r, tokens, &k);
	json_object_set_new(j, "zbench_tokens_per_s", maybe(k.zbench_tps));
	json_object_set_new(j, "deepspeed_tokens_per_s", maybe(k.deepspeed_tps));
	json_object_set_new(j, "price_per_hour", r->cfg.hw.price_per_hour > 0 ? json_real(r->cfg.hw.price_per_hour)
									       : json_null());
	json_object_set_new(j, "tokens_per_dollar", maybe(k.tokens_per_dollar));
	json_object_set_new(j, "train_tokens", json_real(tokens));
	json_object_set_new(j, "train_hours", maybe(k.train_hours));
	json_object_set_new(j, "train_cost", maybe(k.train_cost));
}

void zb_sweep_row_summary(FILE *f, const zb_sweep_row *r, double tokens)
{
	zb_row_cost k;
	zb_sweep_row_cost(r, tokens, &k);
	if (k.deepspeed_tps >= 0 && k.zbench_tps >= 0)
		fprintf(f, "# DeepSpeed gets %.0f tokens/s on this box; the hardware allows %.0f (zbench's schedule, x%.2f)\n",
			k.deepspeed_tps, k.zbench_tps, k.zbench_tps / k.deepspeed_tps);
	else if (r->alt_state == 2)
		fprintf(f, "# %s's schedule of this configuration does not fit: %s\n",
			zb_framework_name(r->alt_cfg.framework), r->alt_mem.reason);
	else if (r->alt_state == 3)
		fprintf(f, "# %s's schedule cannot run this configuration (its policy)\n",
			r->cfg.framework == ZB_FW_DEEPSPEED ? "zbench" : "deepspeed");
	if (k.train_hours >= 0)
		fprintf(f, "# %.3g tokens: %.1f hours", tokens, k.train_hours);
	if (k.train_cost >= 0)
		fprintf(f, ", %.0f at %.2f per machine-hour (%.3f M tokens per dollar)", k.train_cost, r->cfg.hw.price_per_hour,
			k.tokens_per_dollar / 1e6);
	if (k.train_hours >= 0)
		fputc('\n', f);
}
