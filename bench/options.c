/* options.c - configuration options shared by predict, sweep and run; see options.h. */
#include "bench/options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/hwfile.h"
#include "sim/limits.h"
#include "sim/presets.h"

typedef enum { AX_NAME, AX_INT, AX_REAL, AX_COUNT_KIND } axis_kind;

static const struct {
	const char *flag;  /* without the dashes */
	axis_kind kind;
	const char *help;
} axes[ZB_AX_COUNT] = {
	[ZB_AX_HW] = { "hw", AX_NAME, "machine preset or hardware JSON file (default h200-machine)" },
	[ZB_AX_PCIE] = { "pcie", AX_NAME, "host link: gen3 | gen4 | gen5 | gen6 | nvlink-c2c" },
	[ZB_AX_GPU] = { "gpu", AX_NAME, "GPU preset (v100, a100-40g, a100-80g, h100, h200, b200, gh200)" },
	[ZB_AX_CPU] = { "cpu", AX_NAME, "host CPU preset" },
	[ZB_AX_CORES] = { "cores", AX_INT, "CPU cores (overrides the CPU preset)" },
	[ZB_AX_GPUS_PER_LINK] = { "gpus-per-link", AX_INT, "GPUs sharing one host link" },
	[ZB_AX_MODEL] = { "model", AX_NAME, "model preset (default gpt2-large)" },
	[ZB_AX_MODEL_FILE] = { "model-file", AX_NAME, "model JSON file" },
	[ZB_AX_LAYERS] = { "layers", AX_INT, "transformer blocks" },
	[ZB_AX_HIDDEN] = { "hidden", AX_INT, "hidden size" },
	[ZB_AX_HEADS] = { "heads", AX_INT, "attention heads" },
	[ZB_AX_KV_HEADS] = { "kv-heads", AX_INT, "key/value heads (grouped-query attention)" },
	[ZB_AX_FFN] = { "ffn", AX_INT, "MLP inner size" },
	[ZB_AX_VOCAB] = { "vocab", AX_INT, "vocabulary size" },
	[ZB_AX_POLICY] = { "policy", AX_NAME, "none | offload | overlap | dpu (default overlap)" },
	[ZB_AX_RATIO] = { "ratio", AX_REAL, "Twin-Flow: fraction of the optimizer on the CPU (default 1)" },
	[ZB_AX_PREFETCH] = { "prefetch", AX_INT, "layers fetched ahead with --offload-param (default 2)" },
	[ZB_AX_CKPT] = { "ckpt", AX_NAME, "activation checkpointing: none | gpu | cpu" },
	[ZB_AX_GAS] = { "gas", AX_INT, "gradient accumulation steps (default 1)" },
	[ZB_AX_MICRO_BATCH] = { "micro-batch", AX_INT, "sequences per micro-batch (default 8)" },
	[ZB_AX_SEQ] = { "seq", AX_INT, "sequence length (default 1024)" },
	[ZB_AX_DTYPE] = { "dtype", AX_NAME, "bf16 | fp16 (default bf16)" },
	[ZB_AX_BUCKET] = { "bucket", AX_INT, "gradient bucket size in parameters, e.g. 25M (default)" },
	[ZB_AX_THREADS] = { "threads", AX_INT, "CPU optimizer threads (default: all cores)" },
	[ZB_AX_STEPS] = { "steps", AX_INT, "optimizer steps to schedule (default 6; the first 2 fill the pipeline)" },
};

const char *zb_axis_flag(zb_axis a)
{
	static char buf[ZB_AX_COUNT][32];
	if (!buf[a][0])
		snprintf(buf[a], sizeof buf[a], "--%s", axes[a].flag);
	return buf[a];
}

int zb_options_table(struct option *out, int cap, const struct option *extra)
{
	static const struct option common[] = {
		{ "offload-param", no_argument, NULL, ZB_OPT_OFFLOAD_PARAM },
		{ "pageable", no_argument, NULL, ZB_OPT_PAGEABLE },
		{ "bf16", no_argument, NULL, ZB_OPT_AXIS_BASE + 500 },
		{ "fp16", no_argument, NULL, ZB_OPT_AXIS_BASE + 501 },
		{ "db", required_argument, NULL, ZB_OPT_DB },
		{ "no-db", no_argument, NULL, ZB_OPT_NO_DB },
		{ "json", no_argument, NULL, ZB_OPT_JSON },
		{ "csv", no_argument, NULL, ZB_OPT_CSV },
		{ "quiet", no_argument, NULL, ZB_OPT_QUIET },
		{ "timeline", no_argument, NULL, ZB_OPT_TIMELINE },
		{ "plot", required_argument, NULL, ZB_OPT_PLOT },
		{ "ds-config", required_argument, NULL, ZB_OPT_DS_CONFIG },
		{ "hf-config", required_argument, NULL, ZB_OPT_HF_CONFIG },
		{ "help", no_argument, NULL, ZB_OPT_HELP },
	};
	int n = 0;
	for (int a = 0; a < ZB_AX_COUNT && n < cap - 1; a++)
		out[n++] = (struct option){ axes[a].flag, required_argument, NULL, ZB_OPT_AXIS_BASE + a };
	for (size_t i = 0; i < sizeof common / sizeof common[0] && n < cap - 1; i++)
		out[n++] = common[i];
	for (const struct option *e = extra; e && e->name && n < cap - 1; e++)
		out[n++] = *e;
	out[n] = (struct option){ 0 };
	return n;
}

int zb_options_take(zb_options *o, int opt, const char *arg, zb_error *err)
{
	if (opt >= ZB_OPT_AXIS_BASE && opt < ZB_OPT_AXIS_BASE + ZB_AX_COUNT) {
		if (!arg || !*arg) {
			zb_fail(err, ZB_E_INPUT, "empty value for %s", zb_axis_flag(opt - ZB_OPT_AXIS_BASE));
			return -1;
		}
		o->axis[opt - ZB_OPT_AXIS_BASE] = arg;
		return 1;
	}
	switch (opt) {
	case ZB_OPT_AXIS_BASE + 500: o->axis[ZB_AX_DTYPE] = "bf16"; return 1;
	case ZB_OPT_AXIS_BASE + 501: o->axis[ZB_AX_DTYPE] = "fp16"; return 1;
	case ZB_OPT_OFFLOAD_PARAM: o->offload_param = 1; return 1;
	case ZB_OPT_PAGEABLE: o->pageable = 1; return 1;
	case ZB_OPT_DB: o->db = arg; return 1;
	case ZB_OPT_NO_DB: o->no_db = 1; return 1;
	case ZB_OPT_JSON: o->json = 1; return 1;
	case ZB_OPT_CSV: o->csv = 1; return 1;
	case ZB_OPT_QUIET: o->quiet = 1; return 1;
	case ZB_OPT_TIMELINE: o->timeline = 1; return 1;
	case ZB_OPT_PLOT: o->plot = arg; return 1;
	case ZB_OPT_DS_CONFIG:
		if (zb_ds_load(arg, &o->ds, err))
			return -1;
		o->have_ds = 1;
		if (o->ds.nignored)
			fprintf(stderr, "zbench: warning: %s: %d key%s not modelled, ignored: %s\n", arg,
				o->ds.nignored, o->ds.nignored == 1 ? "" : "s", o->ds.ignored);
		return 1;
	case ZB_OPT_HF_CONFIG:
		if (zb_hf_load(arg, &o->hf, err))
			return -1;
		o->have_hf = 1;
		return 1;
	}
	return 0;
}

int zb_options_parse(int argc, char **argv, const struct option *extra, zb_option_fn fn, void *ctx,
		     void (*usage)(FILE *), zb_options *o, int *exit_code)
{
	struct option table[96];
	zb_error err = { 0 };
	int opt;
	zb_options_table(table, 96, extra);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			*exit_code = 0;
			return 0;
		}
		int took = zb_options_take(o, opt, optarg, &err);
		if (!took && fn)
			took = fn(ctx, opt, optarg, &err);
		if (took < 0) {
			fprintf(stderr, "zbench: %s\n", err.msg);
			*exit_code = zb_exit_code(err.status);
			return 0;
		}
		if (!took) {
			usage(stderr);
			*exit_code = 2;
			return 0;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		*exit_code = 2;
		return 0;
	}
	return 1;
}

void zb_options_usage(FILE *f)
{
	fprintf(f, "configuration:\n");
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		char left[48];
		snprintf(left, sizeof left, "--%s <%s>", axes[a].flag,
			 axes[a].kind == AX_NAME ? "name" : axes[a].kind == AX_INT ? "n" : "x");
		fprintf(f, "  %-26s %s\n", left, axes[a].help);
	}
	fprintf(f, "  %-26s %s\n", "--offload-param", "ZeRO-3: parameters live on the host, fetched per layer");
	fprintf(f, "  %-26s %s\n", "--pageable", "copy from pageable instead of pinned host memory");
	fprintf(f, "  %-26s %s\n", "--bf16 | --fp16", "compute precision (same as --dtype)");
	fprintf(f, "  %-26s %s\n", "--ds-config <file>", "DeepSpeed JSON config: batch, precision, ZeRO offload policy");
	fprintf(f, "  %-26s %s\n", "--hf-config <file>", "Hugging Face config.json: the model shape");
	fprintf(f, "  %-26s %s\n", "", "(flags given explicitly override both files)");
	fprintf(f, "output:\n");
	fprintf(f, "  %-26s %s\n", "--db <path>", "results database (default " "results/zbench.db" ")");
	fprintf(f, "  %-26s %s\n", "--no-db", "do not store results");
	fprintf(f, "  %-26s %s\n", "--json | --csv", "machine-readable output");
}

/* ---- number parsing ------------------------------------------------------ */

static int parse_int(const char *s, zb_axis a, long long *out, zb_error *err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	double mult = 1;
	if (end != s && a == ZB_AX_BUCKET) {
		if (*end == 'K' || *end == 'k')
			mult = 1e3, end++;
		else if (*end == 'M' || *end == 'm')
			mult = 1e6, end++;
		else if (*end == 'G' || *end == 'g')
			mult = 1e9, end++;
	}
	v *= mult;
	if (end == s || *end || errno || !isfinite(v) || v != floor(v) || fabs(v) > 9e15) {
		zb_fail(err, ZB_E_INPUT, "invalid value '%s' for %s (expected an integer)", s, zb_axis_flag(a));
		return -1;
	}
	if (v <= 0) {
		zb_fail(err, ZB_E_INPUT, "%s %s must be positive", zb_axis_flag(a), s);
		return -1;
	}
	*out = (long long)v;
	return 0;
}

static int parse_real(const char *s, zb_axis a, double *out, zb_error *err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v)) {
		zb_fail(err, ZB_E_INPUT, "invalid value '%s' for %s (expected a number)", s, zb_axis_flag(a));
		return -1;
	}
	*out = v;
	return 0;
}

int zb_axis_values(const char *raw, zb_axis a, char ***vals, char **storage, zb_error *err)
{
	*vals = NULL;
	*storage = NULL;
	/* a numeric range lo:hi:step */
	if (axes[a].kind != AX_NAME && strchr(raw, ':')) {
		double lo, hi, step;
		char buf[3][64];
		if (sscanf(raw, "%63[^:]:%63[^:]:%63s", buf[0], buf[1], buf[2]) != 3 ||
		    parse_real(buf[0], a, &lo, err) || parse_real(buf[1], a, &hi, err) ||
		    parse_real(buf[2], a, &step, err)) {
			zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (expected lo:hi:step)", raw, zb_axis_flag(a));
			return -1;
		}
		if (step <= 0 || hi < lo || (hi - lo) / step > 10000) {
			zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (need lo <= hi, step > 0, at most 10000 values)",
				raw, zb_axis_flag(a));
			return -1;
		}
		int n = (int)floor((hi - lo) / step + 1e-9) + 1;
		*storage = zb_xmalloc((size_t)n * 32);
		*vals = zb_xmalloc((size_t)n * sizeof **vals);
		for (int i = 0; i < n; i++) {
			double v = lo + i * step;
			if (fabs(v) < 1e-12)
				v = 0;
			(*vals)[i] = *storage + (size_t)i * 32;
			snprintf((*vals)[i], 32, "%.10g", v);
		}
		return n;
	}
	size_t len = strlen(raw);
	*storage = zb_xmalloc(len + 1);
	memcpy(*storage, raw, len + 1);
	int n = 1;
	for (const char *c = raw; *c; c++)
		n += *c == ',';
	*vals = zb_xmalloc((size_t)n * sizeof **vals);
	int i = 0;
	for (char *tok = strtok(*storage, ","); tok; tok = strtok(NULL, ","))
		(*vals)[i++] = tok;
	if (i != n || i == 0) {
		/* the caller frees *vals and *storage on every path: leave nothing behind */
		free(*vals);
		free(*storage);
		*vals = NULL;
		*storage = NULL;
		zb_fail(err, ZB_E_INPUT, "empty item in list '%s' for %s", raw, zb_axis_flag(a));
		return -1;
	}
	return n;
}

/* ---- where settings came from ---------------------------------------------- */

static const char *const source_names[ZB_SRC_COUNT] = {
	[ZB_SRC_DEFAULT] = "default", [ZB_SRC_FLAG] = "flag", [ZB_SRC_DS] = "ds-config", [ZB_SRC_HF] = "hf-config",
};

static const char *const setting_names[ZB_SET_COUNT] = {
	[ZB_SET_HW] = "hw", [ZB_SET_PCIE] = "pcie", [ZB_SET_GPU] = "gpu", [ZB_SET_CPU] = "cpu",
	[ZB_SET_CORES] = "cores", [ZB_SET_MODEL] = "model", [ZB_SET_LAYERS] = "layers",
	[ZB_SET_HIDDEN] = "hidden", [ZB_SET_HEADS] = "heads", [ZB_SET_KV_HEADS] = "kv_heads",
	[ZB_SET_FFN] = "ffn", [ZB_SET_VOCAB] = "vocab", [ZB_SET_TIED] = "tied_embeddings",
	[ZB_SET_POLICY] = "policy", [ZB_SET_RATIO] = "ratio", [ZB_SET_OFFLOAD_PARAM] = "offload_param",
	[ZB_SET_PREFETCH] = "prefetch_layers", [ZB_SET_CKPT] = "ckpt", [ZB_SET_MICRO_BATCH] = "micro_batch",
	[ZB_SET_GAS] = "gas", [ZB_SET_SEQ] = "seq", [ZB_SET_DTYPE] = "dtype", [ZB_SET_PAGEABLE] = "pageable",
	[ZB_SET_BUCKET] = "bucket_params", [ZB_SET_THREADS] = "cpu_threads", [ZB_SET_STEPS] = "steps",
};

const char *zb_source_name(zb_source s)
{
	return (int)s >= 0 && s < ZB_SRC_COUNT ? source_names[s] : "?";
}

const char *zb_setting_name(zb_setting s)
{
	return (int)s >= 0 && s < ZB_SET_COUNT ? setting_names[s] : "?";
}

static void mark(zb_sources *s, zb_setting k, zb_source from, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mark(zb_sources *s, zb_setting k, zb_source from, const char *fmt, ...)
{
	char buf[sizeof s->detail[0]];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	s->from[k] = from;
	memcpy(s->detail[k], buf, sizeof buf);
}

/* A flag given for setting k: say so, and what it overrides from a file. */
static void mark_flag(zb_sources *s, zb_setting k, zb_axis a, const char *val)
{
	char prev[sizeof s->detail[0]] = "";
	if (s->from[k] == ZB_SRC_DS || s->from[k] == ZB_SRC_HF)
		snprintf(prev, sizeof prev, " (overrides %s: %.200s)", zb_source_name(s->from[k]), s->detail[k]);
	mark(s, k, ZB_SRC_FLAG, "%s %s%s", zb_axis_flag(a), val, prev);
}

/* Append text to a setting's detail. */
static void note(zb_sources *s, zb_setting k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(zb_sources *s, zb_setting k, const char *fmt, ...)
{
	size_t len = strlen(s->detail[k]);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->detail[k] + len, sizeof s->detail[k] - len, fmt, ap);
	va_end(ap);
}

/* ---- building a configuration ---------------------------------------------- */

static int is_file(const char *s)
{
	struct stat st;
	return strchr(s, '/') || strstr(s, ".json") ? 1 : stat(s, &st) == 0 && S_ISREG(st.st_mode);
}

/* The largest value an integer flag takes (limits.h), so that a huge value is
 * refused by name before anything is computed from it. */
static long long axis_limit(zb_axis a)
{
	switch (a) {
	case ZB_AX_CORES: case ZB_AX_THREADS: return ZB_MAX_CORES;
	case ZB_AX_GPUS_PER_LINK: return ZB_MAX_GPUS_PER_LINK;
	case ZB_AX_LAYERS: return ZB_MAX_LAYERS;
	case ZB_AX_HIDDEN: return ZB_MAX_HIDDEN;
	case ZB_AX_HEADS: case ZB_AX_KV_HEADS: return ZB_MAX_HEADS;
	case ZB_AX_FFN: return ZB_MAX_FFN;
	case ZB_AX_VOCAB: return ZB_MAX_VOCAB;
	case ZB_AX_PREFETCH: return ZB_MAX_PREFETCH;
	case ZB_AX_GAS: return ZB_MAX_GAS;
	case ZB_AX_MICRO_BATCH: return ZB_MAX_MICRO_BATCH;
	case ZB_AX_SEQ: return ZB_MAX_SEQ;
	case ZB_AX_STEPS: return ZB_MAX_STEPS;
	case ZB_AX_BUCKET: return ZB_MAX_BUCKET;
	default: return 2147483647LL;
	}
}

#define INT_AXIS(ax, field)                                                  \
	do {                                                                 \
		if (v[ax]) {                                                 \
			long long x;                                         \
			if (parse_int(v[ax], ax, &x, err))                   \
				return ZB_E_INPUT;                           \
			if (x > axis_limit(ax))                              \
				return zb_fail(err, ZB_E_INPUT, "%s %s exceeds the limit %lld", zb_axis_flag(ax), v[ax], axis_limit(ax)); \
			field = (int)x;                                      \
		}                                                            \
	} while (0)

/* The settings a flag sets directly, for marking. */
static const struct {
	zb_axis axis;
	zb_setting setting;
} flag_settings[] = {
	{ ZB_AX_LAYERS, ZB_SET_LAYERS }, { ZB_AX_HIDDEN, ZB_SET_HIDDEN }, { ZB_AX_HEADS, ZB_SET_HEADS },
	{ ZB_AX_KV_HEADS, ZB_SET_KV_HEADS }, { ZB_AX_FFN, ZB_SET_FFN }, { ZB_AX_VOCAB, ZB_SET_VOCAB },
	{ ZB_AX_POLICY, ZB_SET_POLICY }, { ZB_AX_RATIO, ZB_SET_RATIO }, { ZB_AX_PREFETCH, ZB_SET_PREFETCH },
	{ ZB_AX_CKPT, ZB_SET_CKPT }, { ZB_AX_GAS, ZB_SET_GAS }, { ZB_AX_MICRO_BATCH, ZB_SET_MICRO_BATCH },
	{ ZB_AX_SEQ, ZB_SET_SEQ }, { ZB_AX_DTYPE, ZB_SET_DTYPE }, { ZB_AX_BUCKET, ZB_SET_BUCKET },
	{ ZB_AX_THREADS, ZB_SET_THREADS }, { ZB_AX_STEPS, ZB_SET_STEPS },
};

/* The DeepSpeed plan's fields and the settings they are. */
static const zb_setting ds_settings[ZB_DSF_COUNT] = {
	[ZB_DSF_KIND] = ZB_SET_POLICY, [ZB_DSF_RATIO] = ZB_SET_RATIO,
	[ZB_DSF_OFFLOAD_PARAM] = ZB_SET_OFFLOAD_PARAM, [ZB_DSF_PREFETCH] = ZB_SET_PREFETCH,
	[ZB_DSF_CKPT] = ZB_SET_CKPT, [ZB_DSF_MICRO_BATCH] = ZB_SET_MICRO_BATCH, [ZB_DSF_GAS] = ZB_SET_GAS,
	[ZB_DSF_DTYPE] = ZB_SET_DTYPE, [ZB_DSF_PAGEABLE] = ZB_SET_PAGEABLE, [ZB_DSF_BUCKET] = ZB_SET_BUCKET,
};

static void ds_copy(zb_policy *p, const zb_policy *from, zb_ds_field f)
{
	switch (f) {
	case ZB_DSF_KIND: p->kind = from->kind; break;
	case ZB_DSF_RATIO: p->ratio = from->ratio; break;
	case ZB_DSF_OFFLOAD_PARAM: p->offload_param = from->offload_param; break;
	case ZB_DSF_PREFETCH: p->prefetch_layers = from->prefetch_layers; break;
	case ZB_DSF_CKPT: p->ckpt = from->ckpt; break;
	case ZB_DSF_MICRO_BATCH: p->micro_batch = from->micro_batch; break;
	case ZB_DSF_GAS: p->gas = from->gas; break;
	case ZB_DSF_DTYPE: p->dtype = from->dtype; break;
	case ZB_DSF_PAGEABLE: p->pageable = from->pageable; break;
	case ZB_DSF_BUCKET: p->bucket_params = from->bucket_params; break;
	case ZB_DSF_COUNT: break;
	}
}

zb_status zb_options_config(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
			    zb_error *err)
{
	return zb_options_config_src(v, o, c, NULL, err);
}

zb_status zb_options_config_src(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
				zb_sources *src, zb_error *err)
{
	zb_status st;
	zb_sources local;
	zb_sources *s = src ? src : &local;
	memset(s, 0, sizeof *s);
	memset(c, 0, sizeof *c);
	int have_ds = o && o->have_ds, have_hf = o && o->have_hf;

	/* hardware: machine, then overrides */
	if (v[ZB_AX_HW] && is_file(v[ZB_AX_HW]))
		st = zb_hw_load(v[ZB_AX_HW], &c->hw, err);
	else if (v[ZB_AX_HW])
		st = zb_preset_hw(v[ZB_AX_HW], &c->hw, err);
	else
		zb_preset_default_hw(&c->hw), st = ZB_OK;
	if (st)
		return st;
	zb_source hw_from = v[ZB_AX_HW] ? ZB_SRC_FLAG : ZB_SRC_DEFAULT;
	if (v[ZB_AX_HW])
		mark(s, ZB_SET_HW, ZB_SRC_FLAG, "--hw %s", v[ZB_AX_HW]);
	else
		mark(s, ZB_SET_HW, ZB_SRC_DEFAULT, "the H200 machine this project measures on");
	mark(s, ZB_SET_PCIE, hw_from, "of machine %s", c->hw.name);
	mark(s, ZB_SET_GPU, hw_from, "of machine %s", c->hw.name);
	mark(s, ZB_SET_CPU, hw_from, "of machine %s", c->hw.name);
	mark(s, ZB_SET_CORES, hw_from, "of cpu %s", c->hw.cpu.name);
	if (v[ZB_AX_GPU]) {
		if ((st = zb_preset_gpu(v[ZB_AX_GPU], &c->hw.gpu, err)))
			return st;
		mark(s, ZB_SET_GPU, ZB_SRC_FLAG, "--gpu %s", v[ZB_AX_GPU]);
		if (c->hw.gpu.builtin_link[0] && !v[ZB_AX_PCIE]) {
			if ((st = zb_preset_link(c->hw.gpu.builtin_link, &c->hw.link, err)))
				return st;
			mark(s, ZB_SET_PCIE, ZB_SRC_FLAG, "the link of --gpu %s", v[ZB_AX_GPU]);
		}
	}
	if (v[ZB_AX_PCIE]) {
		if ((st = zb_preset_link(v[ZB_AX_PCIE], &c->hw.link, err)))
			return st;
		mark(s, ZB_SET_PCIE, ZB_SRC_FLAG, "--pcie %s", v[ZB_AX_PCIE]);
	}
	if (v[ZB_AX_CPU]) {
		if ((st = zb_preset_cpu(v[ZB_AX_CPU], &c->hw.cpu, err)))
			return st;
		mark(s, ZB_SET_CPU, ZB_SRC_FLAG, "--cpu %s", v[ZB_AX_CPU]);
		mark(s, ZB_SET_CORES, ZB_SRC_FLAG, "of --cpu %s", v[ZB_AX_CPU]);
	}
	INT_AXIS(ZB_AX_CORES, c->hw.cpu.cores);
	if (v[ZB_AX_CORES])
		mark(s, ZB_SET_CORES, ZB_SRC_FLAG, "--cores %s", v[ZB_AX_CORES]);
	INT_AXIS(ZB_AX_GPUS_PER_LINK, c->hw.gpus_per_link);

	/* model: preset, file or Hugging Face config, then shape overrides */
	if (v[ZB_AX_MODEL] && v[ZB_AX_MODEL_FILE])
		return zb_fail(err, ZB_E_INPUT, "--model '%s' and --model-file '%s' both given (choose one)",
			       v[ZB_AX_MODEL], v[ZB_AX_MODEL_FILE]);
	if (have_hf && (v[ZB_AX_MODEL] || v[ZB_AX_MODEL_FILE]))
		return zb_fail(err, ZB_E_INPUT, "--hf-config '%s' and %s '%s' both given (choose one)", o->hf.path,
			       v[ZB_AX_MODEL] ? "--model" : "--model-file",
			       v[ZB_AX_MODEL] ? v[ZB_AX_MODEL] : v[ZB_AX_MODEL_FILE]);
	if (have_hf)
		c->model = o->hf.model, st = ZB_OK;
	else if (v[ZB_AX_MODEL_FILE])
		st = zb_model_load(v[ZB_AX_MODEL_FILE], &c->model, err);
	else if (v[ZB_AX_MODEL])
		st = zb_preset_model(v[ZB_AX_MODEL], &c->model, err);
	else
		zb_preset_default_model(&c->model), st = ZB_OK;
	if (st)
		return st;
	static const zb_setting shape[] = { ZB_SET_LAYERS, ZB_SET_HIDDEN, ZB_SET_HEADS, ZB_SET_KV_HEADS,
					    ZB_SET_FFN, ZB_SET_VOCAB, ZB_SET_TIED };
	static const zb_hf_field hf_field[] = { ZB_HF_LAYERS, ZB_HF_HIDDEN, ZB_HF_HEADS, ZB_HF_KV_HEADS,
						ZB_HF_FFN, ZB_HF_VOCAB, ZB_HF_TIED };
	if (have_hf) {
		s->hf = 1;
		snprintf(s->hf_path, sizeof s->hf_path, "%s", o->hf.path);
		snprintf(s->hf_model_type, sizeof s->hf_model_type, "%s", o->hf.model_type);
		snprintf(s->hf_notes, sizeof s->hf_notes, "%s", o->hf.notes);
		s->hf_max_positions = o->hf.max_positions;
		mark(s, ZB_SET_MODEL, ZB_SRC_HF, "%s (model_type %s)", o->hf.path, o->hf.model_type);
		for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
			mark(s, shape[i], ZB_SRC_HF, "%s", o->hf.key[hf_field[i]] ? o->hf.key[hf_field[i]] : "");
	} else {
		zb_source from = v[ZB_AX_MODEL] || v[ZB_AX_MODEL_FILE] ? ZB_SRC_FLAG : ZB_SRC_DEFAULT;
		if (v[ZB_AX_MODEL_FILE])
			mark(s, ZB_SET_MODEL, from, "--model-file %s", v[ZB_AX_MODEL_FILE]);
		else if (v[ZB_AX_MODEL])
			mark(s, ZB_SET_MODEL, from, "--model %s", v[ZB_AX_MODEL]);
		else
			mark(s, ZB_SET_MODEL, from, "zbench's reference model");
		for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
			mark(s, shape[i], from, "of %s %s", v[ZB_AX_MODEL_FILE] ? "model file" : "preset",
			     v[ZB_AX_MODEL_FILE] ? v[ZB_AX_MODEL_FILE] : c->model.name);
	}
	int custom = 0;
	for (int a = ZB_AX_LAYERS; a <= ZB_AX_VOCAB; a++)
		custom |= v[a] != NULL;
	int heads_before = c->model.heads, kv_before = c->model.kv_heads;
	INT_AXIS(ZB_AX_LAYERS, c->model.layers);
	INT_AXIS(ZB_AX_HIDDEN, c->model.hidden);
	INT_AXIS(ZB_AX_HEADS, c->model.heads);
	INT_AXIS(ZB_AX_KV_HEADS, c->model.kv_heads);
	INT_AXIS(ZB_AX_FFN, c->model.ffn);
	INT_AXIS(ZB_AX_VOCAB, c->model.vocab);
	for (int a = ZB_AX_LAYERS; a <= ZB_AX_VOCAB; a++)
		if (v[a])
			mark_flag(s, shape[a - ZB_AX_LAYERS], (zb_axis)a, v[a]);
	if (v[ZB_AX_HEADS] && !v[ZB_AX_KV_HEADS] && kv_before == heads_before) {
		c->model.kv_heads = c->model.heads; /* multi-head stays multi-head */
		mark(s, ZB_SET_KV_HEADS, ZB_SRC_FLAG, "= --heads (multi-head stays multi-head)");
	}
	if (v[ZB_AX_HIDDEN] && !v[ZB_AX_FFN]) {
		c->model.ffn = 4 * c->model.hidden;
		mark(s, ZB_SET_FFN, ZB_SRC_FLAG, "4 x --hidden");
	}
	if (custom)
		snprintf(c->model.name, sizeof c->model.name, "custom");

	/* policy: defaults, then the DeepSpeed config for this model, then flags */
	zb_policy_defaults(&c->policy);
	static const zb_setting policy_settings[] = { ZB_SET_POLICY, ZB_SET_RATIO, ZB_SET_OFFLOAD_PARAM,
						      ZB_SET_PREFETCH, ZB_SET_CKPT, ZB_SET_MICRO_BATCH,
						      ZB_SET_GAS, ZB_SET_SEQ, ZB_SET_DTYPE, ZB_SET_PAGEABLE,
						      ZB_SET_BUCKET, ZB_SET_THREADS, ZB_SET_STEPS };
	for (size_t i = 0; i < sizeof policy_settings / sizeof policy_settings[0]; i++)
		mark(s, policy_settings[i], ZB_SRC_DEFAULT, "zbench's default");
	mark(s, ZB_SET_THREADS, ZB_SRC_DEFAULT, "all cores");
	if (have_ds) {
		/* "auto" batch values are the Trainer's arguments: here the flags or defaults */
		zb_ds_batch b = { c->policy.micro_batch, c->policy.gas, v[ZB_AX_MICRO_BATCH] != NULL,
				  v[ZB_AX_GAS] != NULL };
		INT_AXIS(ZB_AX_MICRO_BATCH, b.micro);
		INT_AXIS(ZB_AX_GAS, b.gas);
		if ((st = zb_ds_plan_make(&o->ds, &c->model, &b, &s->plan, err)))
			return st;
		s->ds = 1;
		s->ds_ignored = o->ds.nignored;
		snprintf(s->ds_path, sizeof s->ds_path, "%s", o->ds.path);
		for (int f = 0; f < ZB_DSF_COUNT; f++) {
			if (!s->plan.set[f])
				continue;
			ds_copy(&c->policy, &s->plan.policy, (zb_ds_field)f);
			mark(s, ds_settings[f], ZB_SRC_DS, "%s", s->plan.why[f]);
		}
	}
	if (v[ZB_AX_POLICY] && (st = zb_policy_parse(v[ZB_AX_POLICY], &c->policy.kind, err)))
		return st;
	if (v[ZB_AX_RATIO] && parse_real(v[ZB_AX_RATIO], ZB_AX_RATIO, &c->policy.ratio, err))
		return ZB_E_INPUT;
	if (v[ZB_AX_CKPT] && (st = zb_ckpt_parse(v[ZB_AX_CKPT], &c->policy.ckpt, err)))
		return st;
	if (v[ZB_AX_DTYPE] && (st = zb_dtype_parse(v[ZB_AX_DTYPE], &c->policy.dtype, err)))
		return st;
	INT_AXIS(ZB_AX_PREFETCH, c->policy.prefetch_layers);
	INT_AXIS(ZB_AX_GAS, c->policy.gas);
	INT_AXIS(ZB_AX_MICRO_BATCH, c->policy.micro_batch);
	INT_AXIS(ZB_AX_SEQ, c->policy.seq);
	INT_AXIS(ZB_AX_THREADS, c->policy.cpu_threads);
	if (v[ZB_AX_BUCKET]) {
		long long x;
		if (parse_int(v[ZB_AX_BUCKET], ZB_AX_BUCKET, &x, err))
			return ZB_E_INPUT;
		if (x > ZB_MAX_BUCKET)
			return zb_fail(err, ZB_E_INPUT, "--bucket %s exceeds the limit %lld", v[ZB_AX_BUCKET], ZB_MAX_BUCKET);
		c->policy.bucket_params = x;
	}
	c->steps = 6;
	INT_AXIS(ZB_AX_STEPS, c->steps);
	for (size_t i = 0; i < sizeof flag_settings / sizeof flag_settings[0]; i++)
		if (v[flag_settings[i].axis] && flag_settings[i].axis >= ZB_AX_POLICY)
			mark_flag(s, flag_settings[i].setting, flag_settings[i].axis, v[flag_settings[i].axis]);
	if (o && o->offload_param) {
		c->policy.offload_param = 1;
		mark(s, ZB_SET_OFFLOAD_PARAM, ZB_SRC_FLAG, "--offload-param");
	}
	if (o && o->pageable) {
		c->policy.pageable = 1;
		mark(s, ZB_SET_PAGEABLE, ZB_SRC_FLAG, "--pageable");
	}
	if (have_ds) {
		/* what "auto" in the file meant, beside the flag or default that supplied it */
		for (int f = 0; f < ZB_DSF_COUNT; f++)
			if (!s->plan.set[f] && s->plan.why[f][0])
				note(s, ds_settings[f], " (%s: %s)", o->ds.path, s->plan.why[f]);
		/* ZeRO-3 places Twin-Flow work by whole sub-groups: the ratio that runs */
		if (s->plan.stage == 3 && s->plan.offload_optimizer && c->policy.kind != ZB_POLICY_NONE &&
		    c->policy.ratio >= 0 && c->policy.ratio <= 1) {
			double asked = c->policy.ratio;
			zb_ds_twinflow_split(&c->model, s->plan.sub_group_size, asked, &s->split);
			s->twinflow = 1;
			s->ratio_asked = asked;
			c->policy.ratio = s->split.ratio;
			if (asked > 0 && asked < 1)
				note(s, ZB_SET_RATIO, "; ZeRO-3 runs whole sub-groups: %d of %d (sub_group_size %lld) on the CPU, "
						      "%g asked, %.4f effective",
				     s->split.cpu_sub_groups, s->split.sub_groups, (long long)s->plan.sub_group_size, asked,
				     s->split.ratio);
		}
	}
	/* rotary models have no position table, but a length they were built for */
	if (have_hf && c->model.max_seq == 0 && o->hf.max_positions > 0 && c->policy.seq > o->hf.max_positions)
		return zb_fail(err, ZB_E_INPUT, "seq %d exceeds max_position_embeddings %d of %s", c->policy.seq,
			       o->hf.max_positions, o->hf.path);
	return zb_config_validate(c, err);
}

zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err)
{
	return zb_options_single_src(o, out, NULL, err);
}

zb_status zb_options_single_src(const zb_options *o, zb_config *out, zb_sources *src, zb_error *err)
{
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		const char *s = o->axis[a];
		if (!s)
			continue;
		if (strchr(s, ',') || (axes[a].kind != AX_NAME && strchr(s, ':')))
			return zb_fail(err, ZB_E_INPUT,
				       "%s takes one value here (got '%s'); lists and ranges are for zbench sweep",
				       zb_axis_flag(a), s);
	}
	return zb_options_config_src(o->axis, o, out, src, err);
}

char *zb_command_line(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 3;
	char *s = zb_xmalloc(len), *p = s;
	*p = 0;
	for (int i = 0; i < argc; i++) {
		int quote = strchr(argv[i], ' ') != NULL;
		p += sprintf(p, "%s%s%s%s", i ? " " : "", quote ? "'" : "", argv[i], quote ? "'" : "");
	}
	return s;
}
