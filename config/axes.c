/*
 * axes.c - the inputs of a configuration: each axis's flag, kind and help, number
 * parsing with errors that name the flag, and list/range expansion (resolve.h).
 */
#include "config/parts.h"

#include "core/limits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *flag;  /* without the dashes */
	zb_axis_kind kind;
	const char *help;
} axes[ZB_AX_COUNT] = {
	[ZB_AX_HW] = { "hw", ZB_AXK_NAME, "machine preset or hardware JSON file (default h200-machine)" },
	[ZB_AX_PCIE] = { "pcie", ZB_AXK_NAME, "host link: gen3 | gen4 | gen5 | gen6 | nvlink-c2c" },
	[ZB_AX_GPU] = { "gpu", ZB_AXK_NAME, "GPU preset (v100, a100-40g, a100-80g, h100, h200, b200, gh200)" },
	[ZB_AX_CPU] = { "cpu", ZB_AXK_NAME, "host CPU preset" },
	[ZB_AX_CORES] = { "cores", ZB_AXK_INT, "CPU cores, at most the CPU's (more: --hypothetical-cpu)" },
	[ZB_AX_GPUS_PER_LINK] = { "gpus-per-link", ZB_AXK_INT, "GPUs behind one host link (PCIe switch uplink); --gpus ranks fill them" },
	[ZB_AX_GPUS_PER_CPU] = { "gpus-per-cpu", ZB_AXK_INT, "GPUs sharing the host's cores and DRAM (1: this run has the whole host)" },
	[ZB_AX_MODEL] = { "model", ZB_AXK_NAME, "model preset (default gpt2-large)" },
	[ZB_AX_MODEL_FILE] = { "model-file", ZB_AXK_NAME, "model JSON file" },
	[ZB_AX_LAYERS] = { "layers", ZB_AXK_INT, "transformer blocks" },
	[ZB_AX_HIDDEN] = { "hidden", ZB_AXK_INT, "hidden size" },
	[ZB_AX_HEADS] = { "heads", ZB_AXK_INT, "attention heads" },
	[ZB_AX_KV_HEADS] = { "kv-heads", ZB_AXK_INT, "key/value heads (grouped-query attention)" },
	[ZB_AX_FFN] = { "ffn", ZB_AXK_INT, "MLP inner size" },
	[ZB_AX_VOCAB] = { "vocab", ZB_AXK_INT, "vocabulary size" },
	[ZB_AX_POLICY] = { "policy", ZB_AXK_NAME, "none | offload | overlap | dpu (default overlap; sweep without --policy or --ratio: all four at ratios 0:1:0.25)" },
	[ZB_AX_RATIO] = { "ratio", ZB_AXK_REAL, "Twin-Flow: fraction of the optimizer on the CPU (default 1)" },
	[ZB_AX_PREFETCH] = { "prefetch", ZB_AXK_INT, "layers fetched ahead with --offload-param (default 2)" },
	[ZB_AX_CKPT] = { "ckpt", ZB_AXK_NAME, "activation checkpointing: none | gpu | cpu" },
	[ZB_AX_GAS] = { "gas", ZB_AXK_INT, "gradient accumulation steps (default 1)" },
	[ZB_AX_MICRO_BATCH] = { "micro-batch", ZB_AXK_INT, "sequences per micro-batch (default 8)" },
	[ZB_AX_SEQ] = { "seq", ZB_AXK_INT, "sequence length (default 1024)" },
	[ZB_AX_DTYPE] = { "dtype", ZB_AXK_NAME, "bf16 | fp16 (default bf16)" },
	[ZB_AX_BUCKET] = { "bucket", ZB_AXK_INT, "gradient bucket size in parameters, e.g. 25M (default)" },
	[ZB_AX_THREADS] = { "threads", ZB_AXK_INT, "CPU optimizer threads (default: all cores)" },
	[ZB_AX_STEPS] = { "steps", ZB_AXK_INT, "optimizer steps to schedule (default 6; the first 2 fill the pipeline)" },
	[ZB_AX_FRAMEWORK] = { "framework", ZB_AXK_NAME, "whose schedule: zbench | deepspeed (default zbench; deepspeed with --ds-config)" },
	[ZB_AX_ZERO_STAGE] = { "zero-stage", ZB_AXK_INT, "ZeRO stage 1 | 2 | 3; deepspeed: default the file's, else 3 with offload-param or ratio < 1, else 2; zbench with --gpus: 3 gathers parameters per layer" },
	[ZB_AX_ATTENTION] = { "attention", ZB_AXK_NAME, "eager (default): batched GEMMs and a stored softmax | flash: the fused FlashAttention-2 kernels (faster on the H200)" },
	[ZB_AX_LINK_RATE] = { "link-rate", ZB_AXK_REAL, "emulated host link, GB/s each way: run paces its pinned copies" },
	[ZB_AX_SUB_GROUP] = { "sub-group", ZB_AXK_INT, "deepspeed: ZeRO-3 sub_group_size in parameters (default: the file's, else 1e9)" },
	[ZB_AX_GPUS] = { "gpus", ZB_AXK_INT, "data-parallel GPUs per node (default 1); they share the node's CPU, DRAM and PCIe switches" },
	[ZB_AX_NODES] = { "nodes", ZB_AXK_INT, "nodes of --gpus GPUs each, joined by the hardware's network (default 1)" },
	[ZB_AX_HOST_MEM] = { "host-mem", ZB_AXK_REAL, "host memory, GiB (default: the CPU preset's)" },
	[ZB_AX_DRAM_BW] = { "dram-bw", ZB_AXK_REAL, "host memory bandwidth, GB/s; Adam's memory ceiling scales with it" },
	[ZB_AX_CPU_ADAM] = { "cpu-adam", ZB_AXK_REAL, "CPU Adam rate of one core, Gparam/s (rate = min(cores x this, memory / 28 B))" },
	[ZB_AX_PRICE] = { "price", ZB_AXK_REAL, "price of one machine-hour (any currency): tokens per unit and the cost to train" },
};

const char *zb_axis_flag(zb_axis a)
{
	static char buf[ZB_AX_COUNT][32];
	if (!buf[a][0])
		snprintf(buf[a], sizeof buf[a], "--%s", axes[a].flag);
	return buf[a];
}

const char *zb_axis_name(zb_axis a) { return axes[a].flag; }
const char *zb_axis_help(zb_axis a) { return axes[a].help; }
zb_axis_kind zb_axis_kind_of(zb_axis a) { return axes[a].kind; }

/* ---- number parsing ------------------------------------------------------ */

int zb_axis_parse_int(const char *s, zb_axis a, long long *out, zb_error *err)
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

int zb_axis_parse_real(const char *s, zb_axis a, double *out, zb_error *err)
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

/* The largest value an integer flag takes (core/limits.h), so that a huge value is
 * refused by name before anything is computed from it. */
static long long axis_limit(zb_axis a)
{
	switch (a) {
	case ZB_AX_CORES: case ZB_AX_THREADS: return ZB_MAX_CORES;
	case ZB_AX_GPUS_PER_LINK: case ZB_AX_GPUS_PER_CPU: return ZB_MAX_GPUS_PER_LINK;
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
	case ZB_AX_GPUS: return ZB_MAX_GPUS_PER_NODE;
	case ZB_AX_NODES: return ZB_MAX_NODES;
	case ZB_AX_ZERO_STAGE: return 3; /* ZeRO stages 1, 2, 3 */
	default: return 2147483647LL;
	}
}

int zb_axis_int_field(const char *const v[ZB_AX_COUNT], zb_axis a, int *field, zb_error *err)
{
	long long x;
	if (!v[a])
		return 0;
	if (zb_axis_parse_int(v[a], a, &x, err))
		return -1;
	if (x > axis_limit(a)) {
		zb_fail(err, ZB_E_INPUT, "%s %s exceeds the limit %lld", zb_axis_flag(a), v[a], axis_limit(a));
		return -1;
	}
	*field = (int)x;
	return 0;
}

/* ---- lists and ranges ------------------------------------------------------ */

static int range_refused(const char *raw, zb_axis a, zb_error *err)
{
	zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (need lo <= hi, step > 0, at most 10000 values)", raw,
		zb_axis_flag(a));
	return -1;
}

/* n values written by fmt into *storage, 32 bytes each. */
static void range_storage(int n, char ***vals, char **storage)
{
	*storage = zb_xmalloc((size_t)n * 32);
	*vals = zb_xmalloc((size_t)n * sizeof **vals);
	for (int i = 0; i < n; i++)
		(*vals)[i] = *storage + (size_t)i * 32;
}

/* An integer axis's range in integers: 12345678901:12345678901:1 is 12345678901, not
 * the 10 significant digits a real's range keeps. */
static int int_range(const char *raw, zb_axis a, char buf[3][64], char ***vals, char **storage, zb_error *err)
{
	long long lo, hi, step;
	if (zb_axis_parse_int(buf[0], a, &lo, err) || zb_axis_parse_int(buf[1], a, &hi, err) ||
	    zb_axis_parse_int(buf[2], a, &step, err)) {
		zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (expected lo:hi:step, integers)", raw, zb_axis_flag(a));
		return -1;
	}
	if (hi < lo || (hi - lo) / step >= 10000)
		return range_refused(raw, a, err);
	int n = (int)((hi - lo) / step) + 1;
	range_storage(n, vals, storage);
	for (int i = 0; i < n; i++)
		snprintf((*vals)[i], 32, "%lld", lo + (long long)i * step);
	return n;
}

static int real_range(const char *raw, zb_axis a, char buf[3][64], char ***vals, char **storage, zb_error *err)
{
	double lo, hi, step;
	if (zb_axis_parse_real(buf[0], a, &lo, err) || zb_axis_parse_real(buf[1], a, &hi, err) ||
	    zb_axis_parse_real(buf[2], a, &step, err)) {
		zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (expected lo:hi:step)", raw, zb_axis_flag(a));
		return -1;
	}
	if (step <= 0 || hi < lo || (hi - lo) / step > 10000)
		return range_refused(raw, a, err);
	int n = (int)floor((hi - lo) / step + 1e-9) + 1;
	range_storage(n, vals, storage);
	for (int i = 0; i < n; i++) {
		double v = lo + i * step;
		if (fabs(v) < 1e-12)
			v = 0;
		snprintf((*vals)[i], 32, "%.10g", v); /* 0.30000000000000004 as 0.3 */
	}
	return n;
}

int zb_axis_values(const char *raw, zb_axis a, char ***vals, char **storage, zb_error *err)
{
	*vals = NULL;
	*storage = NULL;
	/* a numeric range lo:hi:step */
	if (axes[a].kind != ZB_AXK_NAME && strchr(raw, ':')) {
		char buf[3][64];
		if (sscanf(raw, "%63[^:]:%63[^:]:%63s", buf[0], buf[1], buf[2]) != 3) {
			zb_fail(err, ZB_E_INPUT, "invalid range '%s' for %s (expected lo:hi:step)", raw, zb_axis_flag(a));
			return -1;
		}
		return axes[a].kind == ZB_AXK_INT ? int_range(raw, a, buf, vals, storage, err)
						  : real_range(raw, a, buf, vals, storage, err);
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
