/*
 * resolve.h - from inputs (flags as strings, a DeepSpeed config, a Hugging Face
 * config.json) to one zb_config, and where each setting came from.
 *
 * This is the library call behind predict, sweep, run and the validation suite, so
 * anything that is not the CLI (a sweep worker, a tuner, a library user) resolves a
 * configuration the same way:
 *
 *     zb_config_inputs in = { 0 };
 *     in.value[ZB_AX_MODEL] = "llama2-7b";
 *     in.value[ZB_AX_POLICY] = "dpu";
 *     zb_config c;
 *     zb_sources src;
 *     if (zb_config_resolve(&in, &c, &src, &err)) ...
 *
 * Every input that describes a configuration is an "axis" with one value here (a
 * sweep expands lists and ranges first, zb_axis_values). The parts are applied in a
 * fixed order so the result does not depend on flag order and explicit flags
 * override the files: hardware (machine, then link/gpu/cpu overrides,
 * config/hardware.c), model (preset, --model-file or the Hugging Face config, then
 * shape overrides, config/model.c), policy (defaults, the DeepSpeed config resolved
 * for the final model, then policy flags, config/policy.c).
 */
#ifndef ZB_RESOLVE_H
#define ZB_RESOLVE_H

#include "common/error.h"
#include "core/config.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"
#include "inputs/prices.h"

typedef enum zb_axis {
	ZB_AX_HW, ZB_AX_PCIE, ZB_AX_GPU, ZB_AX_CPU, ZB_AX_CORES, ZB_AX_GPUS_PER_LINK, ZB_AX_GPUS_PER_CPU,
	ZB_AX_MODEL, ZB_AX_MODEL_FILE, ZB_AX_LAYERS, ZB_AX_HIDDEN, ZB_AX_HEADS, ZB_AX_KV_HEADS,
	ZB_AX_FFN, ZB_AX_VOCAB,
	ZB_AX_POLICY, ZB_AX_RATIO, ZB_AX_PREFETCH, ZB_AX_CKPT, ZB_AX_GAS, ZB_AX_MICRO_BATCH,
	ZB_AX_SEQ, ZB_AX_DTYPE, ZB_AX_BUCKET, ZB_AX_THREADS, ZB_AX_STEPS,
	ZB_AX_FRAMEWORK, ZB_AX_ZERO_STAGE, ZB_AX_SUB_GROUP,
	ZB_AX_ATTENTION, ZB_AX_LINK_RATE,
	ZB_AX_GPUS, ZB_AX_NODES,      /* data-parallel ranks: GPUs per node, nodes */
	ZB_AX_HOST_MEM, ZB_AX_DRAM_BW, ZB_AX_CPU_ADAM, /* the host's memory, its bandwidth, one core's Adam */
	ZB_AX_PRICE,                  /* what one machine-hour costs */
	ZB_AX_COUNT
} zb_axis;

/* What kind of value an axis takes: a name, a positive integer, a real number. */
typedef enum zb_axis_kind { ZB_AXK_NAME, ZB_AXK_INT, ZB_AXK_REAL } zb_axis_kind;

const char *zb_axis_flag(zb_axis a);     /* "--pcie" */
const char *zb_axis_name(zb_axis a);     /* "pcie" */
const char *zb_axis_help(zb_axis a);     /* one line for usage */
zb_axis_kind zb_axis_kind_of(zb_axis a);

/* The values of an axis: a comma list, or for numeric axes a range lo:hi:step.
 * Returns the count (>= 1) and fills vals with pointers into a buffer the caller
 * frees (*storage). Bad range: -1 with err. */
int zb_axis_values(const char *raw, zb_axis a, char ***vals, char **storage, zb_error *err);

/* Where a setting of the configuration came from. Explicit flags override the
 * files; a DeepSpeed config decides the policy fields it covers, a Hugging Face
 * config the model shape; everything else is zbench's default. */
typedef enum zb_source { ZB_SRC_DEFAULT, ZB_SRC_FLAG, ZB_SRC_DS, ZB_SRC_HF, ZB_SRC_COUNT } zb_source;

typedef enum zb_setting {
	ZB_SET_HW, ZB_SET_PCIE, ZB_SET_GPU, ZB_SET_CPU, ZB_SET_CORES,
	ZB_SET_MODEL, ZB_SET_LAYERS, ZB_SET_HIDDEN, ZB_SET_HEADS, ZB_SET_KV_HEADS, ZB_SET_FFN,
	ZB_SET_VOCAB, ZB_SET_TIED,
	ZB_SET_POLICY, ZB_SET_RATIO, ZB_SET_OFFLOAD_PARAM, ZB_SET_PREFETCH, ZB_SET_CKPT,
	ZB_SET_MICRO_BATCH, ZB_SET_GAS, ZB_SET_SEQ, ZB_SET_DTYPE, ZB_SET_PAGEABLE, ZB_SET_BUCKET,
	ZB_SET_THREADS, ZB_SET_STEPS,
	ZB_SET_FRAMEWORK, ZB_SET_ZERO_STAGE, ZB_SET_SUB_GROUP,
	ZB_SET_COUNT
} zb_setting;

typedef struct zb_sources {
	zb_source from[ZB_SET_COUNT];
	char detail[ZB_SET_COUNT][256]; /* the flag, file key or preset, and how */
	int ds, hf;                     /* a DeepSpeed / Hugging Face file was applied */
	char ds_path[256], hf_path[256];
	int ds_ignored;                 /* keys of the DeepSpeed file not modelled */
	char ds_note[256];              /* what zbench assumes where the file alone does not say ("" if
					 * nothing): activation_checkpointing with a Hugging Face model */
	zb_ds_plan plan;                /* the DeepSpeed file resolved (when ds) */
	int twinflow;                   /* the ratio was quantized to ZeRO-3 sub-groups */
	zb_ds_twinflow split;           /* ... like this */
	double ratio_asked;             /* the ratio before quantizing */
	char hf_model_type[32];
	int hf_max_positions;
	char hf_notes[320];
	int no_detail;                  /* nobody reads this one's text: detail[] is not composed (a
					 * sweep resolves every row with sources nobody prints) */
} zb_sources;

const char *zb_source_name(zb_source s);   /* "flag", "ds-config", "hf-config", "default" */
const char *zb_setting_name(zb_setting s); /* "micro_batch", as in --json */

/* The inputs of one configuration. */
typedef struct zb_config_inputs {
	const char *value[ZB_AX_COUNT]; /* one value per axis as given; NULL: not given */
	int offload_param;              /* --offload-param */
	int pageable;                   /* --pageable */
	int hypothetical_cpu;           /* --hypothetical-cpu: --cores may exceed the part's cores */
	const struct zb_price_table *prices; /* --prices FILE already read (NULL: none) */
	const zb_ds_config *ds;         /* a DeepSpeed config already read (NULL: none) */
	const zb_hf_config *hf;         /* a Hugging Face config.json already read (NULL: none) */
} zb_config_inputs;

/* Build one configuration and check it (zb_config_validate). src (may be NULL) gets
 * where each setting came from. Bad input: ZB_E_INPUT with err naming the flag or
 * file and the value. */
zb_status zb_config_resolve(const zb_config_inputs *in, zb_config *out, zb_sources *src, zb_error *err);

/* For a single configuration (predict, run): every axis has one value, no list or
 * range; else ZB_E_INPUT naming the flag and the value. */
zb_status zb_config_single(const zb_config_inputs *in, zb_error *err);

#endif
