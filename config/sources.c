/* sources.c - where each setting came from: names and the marks the resolve steps make. */
#include "config/parts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	[ZB_SET_FRAMEWORK] = "framework", [ZB_SET_ZERO_STAGE] = "zero_stage", [ZB_SET_SUB_GROUP] = "sub_group_size",
};

const char *zb_source_name(zb_source s)
{
	return (int)s >= 0 && s < ZB_SRC_COUNT ? source_names[s] : "?";
}

const char *zb_setting_name(zb_setting s)
{
	return (int)s >= 0 && s < ZB_SET_COUNT ? setting_names[s] : "?";
}

void zb_src_mark(zb_sources *s, zb_setting k, zb_source from, const char *fmt, ...)
{
	char buf[sizeof s->detail[0]];
	va_list ap;
	if (s->no_detail) {
		s->from[k] = from;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	s->from[k] = from;
	memcpy(s->detail[k], buf, sizeof buf);
}

/* A flag given for setting k: say so, and what it overrides from a file. */
void zb_src_mark_flag(zb_sources *s, zb_setting k, zb_axis a, const char *val)
{
	char prev[sizeof s->detail[0]] = "";
	if (s->no_detail) {
		s->from[k] = ZB_SRC_FLAG;
		return;
	}
	if (s->from[k] == ZB_SRC_DS || s->from[k] == ZB_SRC_HF)
		snprintf(prev, sizeof prev, " (overrides %s: %.200s)", zb_source_name(s->from[k]), s->detail[k]);
	zb_src_mark(s, k, ZB_SRC_FLAG, "%s %s%s", zb_axis_flag(a), val, prev);
}

/* Append text to a setting's detail. */
void zb_src_note(zb_sources *s, zb_setting k, const char *fmt, ...)
{
	if (s->no_detail)
		return;
	size_t len = strlen(s->detail[k]);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->detail[k] + len, sizeof s->detail[k] - len, fmt, ap);
	va_end(ap);
}
