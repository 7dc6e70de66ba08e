/* options.c - configuration options shared by predict, sweep and run; see options.h. */
#include "bench/options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/hwfile.h"
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
	}
	return 0;
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
		free(*vals);
		free(*storage);
		zb_fail(err, ZB_E_INPUT, "empty item in list '%s' for %s", raw, zb_axis_flag(a));
		return -1;
	}
	return n;
}

/* ---- building a configuration ---------------------------------------------- */

static int is_file(const char *s)
{
	struct stat st;
	return strchr(s, '/') || strstr(s, ".json") ? 1 : stat(s, &st) == 0 && S_ISREG(st.st_mode);
}

#define INT_AXIS(ax, field)                                                  \
	do {                                                                 \
		if (v[ax]) {                                                 \
			long long x;                                         \
			if (parse_int(v[ax], ax, &x, err))                   \
				return ZB_E_INPUT;                           \
			if (x > 2147483647LL)                                \
				return zb_fail(err, ZB_E_INPUT, "%s %s is too large", zb_axis_flag(ax), v[ax]); \
			field = (int)x;                                      \
		}                                                            \
	} while (0)

zb_status zb_options_config(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
			    zb_error *err)
{
	zb_status st;
	memset(c, 0, sizeof *c);

	/* hardware: machine, then overrides */
	if (v[ZB_AX_HW] && is_file(v[ZB_AX_HW]))
		st = zb_hw_load(v[ZB_AX_HW], &c->hw, err);
	else if (v[ZB_AX_HW])
		st = zb_preset_hw(v[ZB_AX_HW], &c->hw, err);
	else
		zb_preset_default_hw(&c->hw), st = ZB_OK;
	if (st)
		return st;
	if (v[ZB_AX_GPU]) {
		if ((st = zb_preset_gpu(v[ZB_AX_GPU], &c->hw.gpu, err)))
			return st;
		if (c->hw.gpu.builtin_link[0] && !v[ZB_AX_PCIE] &&
		    (st = zb_preset_link(c->hw.gpu.builtin_link, &c->hw.link, err)))
			return st;
	}
	if (v[ZB_AX_PCIE] && (st = zb_preset_link(v[ZB_AX_PCIE], &c->hw.link, err)))
		return st;
	if (v[ZB_AX_CPU] && (st = zb_preset_cpu(v[ZB_AX_CPU], &c->hw.cpu, err)))
		return st;
	INT_AXIS(ZB_AX_CORES, c->hw.cpu.cores);
	INT_AXIS(ZB_AX_GPUS_PER_LINK, c->hw.gpus_per_link);

	/* model: preset or file, then shape overrides */
	if (v[ZB_AX_MODEL] && v[ZB_AX_MODEL_FILE])
		return zb_fail(err, ZB_E_INPUT, "--model '%s' and --model-file '%s' both given (choose one)",
			       v[ZB_AX_MODEL], v[ZB_AX_MODEL_FILE]);
	if (v[ZB_AX_MODEL_FILE])
		st = zb_model_load(v[ZB_AX_MODEL_FILE], &c->model, err);
	else if (v[ZB_AX_MODEL])
		st = zb_preset_model(v[ZB_AX_MODEL], &c->model, err);
	else
		zb_preset_default_model(&c->model), st = ZB_OK;
	if (st)
		return st;
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
	if (v[ZB_AX_HEADS] && !v[ZB_AX_KV_HEADS] && kv_before == heads_before)
		c->model.kv_heads = c->model.heads; /* multi-head stays multi-head */
	if (v[ZB_AX_HIDDEN] && !v[ZB_AX_FFN])
		c->model.ffn = 4 * c->model.hidden;
	if (custom)
		snprintf(c->model.name, sizeof c->model.name, "custom");

	/* policy */
	zb_policy_defaults(&c->policy);
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
		c->policy.bucket_params = x;
	}
	c->policy.offload_param = o ? o->offload_param : 0;
	c->policy.pageable = o ? o->pageable : 0;
	c->steps = 6;
	INT_AXIS(ZB_AX_STEPS, c->steps);
	return zb_config_validate(c, err);
}

zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err)
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
	return zb_options_config(o->axis, o, out, err);
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
