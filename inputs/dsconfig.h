/*
 * dsconfig.h - a DeepSpeed JSON config as a zbench policy (`--ds-config FILE`).
 *
 * Two steps, because "auto" values and sub-groups depend on the model, which the
 * command line may still change after the file is read:
 *
 *   zb_ds_load()  reads and checks the file alone: types, ranges, keys zbench
 *                 maps, keys it accepts without effect, and the list of keys it
 *                 does not model (for one warning line).
 *   zb_ds_plan()  given the final model and what "auto" means for the batch
 *                 (zbench's --micro-batch / --gas or their defaults), resolves the
 *                 file the way DeepSpeed and its Hugging Face integration would and
 *                 says, per policy field, whether the file decides it and why.
 *
 * Mapping (README "DeepSpeed and Hugging Face configs" has the table):
 *   offload_optimizer.device none/absent             -> policy none (any stage)
 *   offload_optimizer.device cpu, overlap_comm false -> offload
 *   offload_optimizer.device cpu, overlap_comm true  -> overlap
 *       (overlap_comm absent: DeepSpeed's default, true for stage 3 only)
 *   offload_optimizer.ratio                          -> Twin-Flow ratio, then
 *       quantized to whole ZeRO-3 sub-groups (zb_ds_twinflow)
 *   offload_param.device cpu                         -> offload-param
 *   stage3_prefetch_bucket_size (elements)           -> prefetch layers:
 *       ceil(elements / parameters of one transformer block), at least 1; and
 *       with stage3_param_persistence_threshold, stage3_max_live_parameters and
 *       stage3_max_reuse_distance, ZeRO-3's coordinator (schedules/ds_trace.h)
 *   pin_memory false (DeepSpeed's default)           -> pageable copies
 *   reduce_bucket_size                               -> gradient bucket
 *   activation_checkpointing present / cpu_checkpointing true -> ckpt gpu / cpu
 *   fp16.enabled / bf16.enabled                      -> dtype
 *   train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps
 *       -> micro-batch and gas, derived as DeepSpeed derives them (world size 1)
 * DeepSpeed has no delayed-parameter-update key (its DPU code was never merged:
 * deepspeedai/DeepSpeed#1260), so policy dpu stays a zbench flag.
 */
#ifndef ZB_DSCONFIG_H
#define ZB_DSCONFIG_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

/* The keys zbench reads. Paths as in the file, "zero_optimization.stage". */
typedef enum zb_ds_key {
	ZB_DSK_TRAIN_BATCH, ZB_DSK_MICRO_BATCH, ZB_DSK_GAS,
	ZB_DSK_STAGE, ZB_DSK_OPT_DEVICE, ZB_DSK_OPT_PIN, ZB_DSK_RATIO,
	ZB_DSK_PARAM_DEVICE, ZB_DSK_PARAM_PIN,
	ZB_DSK_OVERLAP, ZB_DSK_CONTIGUOUS, ZB_DSK_REDUCE_BUCKET, ZB_DSK_PREFETCH_BUCKET,
	ZB_DSK_PERSISTENCE, ZB_DSK_SUB_GROUP, ZB_DSK_MAX_LIVE, ZB_DSK_MAX_REUSE,
	ZB_DSK_FP16, ZB_DSK_LOSS_SCALE, ZB_DSK_INITIAL_SCALE_POWER, ZB_DSK_LOSS_SCALE_WINDOW,
	ZB_DSK_HYSTERESIS, ZB_DSK_MIN_LOSS_SCALE,
	ZB_DSK_BF16,
	ZB_DSK_ACT_CKPT, ZB_DSK_PARTITION_ACT, ZB_DSK_CPU_CKPT,
	ZB_DSK_OPTIMIZER,
	ZB_DSK_COUNT
} zb_ds_key;

typedef enum zb_ds_state { ZB_DS_ABSENT, ZB_DS_AUTO, ZB_DS_SET } zb_ds_state;

/* One value as the file gave it. Numbers and booleans in num (booleans 0/1),
 * strings (devices, optimizer type) in str. ZB_DSK_ACT_CKPT is "the block is
 * present". */
typedef struct zb_ds_val {
	zb_ds_state state;
	double num;
	char str[24];
} zb_ds_val;

typedef struct zb_ds_config {
	char path[256];
	zb_ds_val v[ZB_DSK_COUNT];
	char ignored[640];        /* keys not modelled, "a.b, c" (cut with ", ..."), "" if none */
	int nignored;
} zb_ds_config;

/* "zero_optimization.offload_optimizer.ratio" */
const char *zb_ds_key_path(zb_ds_key k);

zb_status zb_ds_load(const char *path, zb_ds_config *out, zb_error *err);

/* The policy fields a DeepSpeed config can decide. */
typedef enum zb_ds_field {
	ZB_DSF_KIND, ZB_DSF_RATIO, ZB_DSF_OFFLOAD_PARAM, ZB_DSF_PREFETCH, ZB_DSF_CKPT,
	ZB_DSF_MICRO_BATCH, ZB_DSF_GAS, ZB_DSF_DTYPE, ZB_DSF_PAGEABLE, ZB_DSF_BUCKET,
	ZB_DSF_COUNT
} zb_ds_field;

typedef struct zb_ds_plan {
	int set[ZB_DSF_COUNT];       /* the file decides this field */
	char why[ZB_DSF_COUNT][192]; /* the keys that decided it and how */
	zb_policy policy;            /* the values of the fields set (others: defaults) */
	int stage;
	int offload_optimizer;       /* optimizer states and Adam on the CPU */
	int64_t train_batch;         /* train_batch_size as DeepSpeed derives it */
	int64_t sub_group_size;      /* resolved (DeepSpeed default 1e9) */
	int64_t prefetch_elements;   /* resolved stage3_prefetch_bucket_size */
	int64_t persistence_threshold;
	int64_t persistent_params;   /* parameters in tensors at most the threshold */
	int64_t max_live, max_reuse; /* stage3_max_live_parameters, stage3_max_reuse_distance */
	char precision[320];         /* "fp16, dynamic loss scaling (initial 2^16, window 1000, ...): ..." */
	char batch[224];             /* "train_batch_size 32 = 4 x 8 x 1 GPU", "" without batch keys */
} zb_ds_plan;

/* The batch zbench has without the file: --micro-batch / --gas or their defaults.
 * It is what "auto" means (as the HF Trainer fills "auto" from its arguments); a
 * value given explicitly (*_given) also replaces the file's key before the missing
 * one is derived, and when the file gives all three, its train_batch_size gives
 * way to the flags. */
typedef struct zb_ds_batch {
	int micro, gas;
	int micro_given, gas_given;
} zb_ds_batch;

/* Resolve ds for model m and batch b. Errors name the key: values DeepSpeed would
 * reject (offload with stage 0, parameter offload below stage 3, a ratio < 1 below
 * stage 3, a batch that does not divide, fp16 and bf16 both on) and ones zbench
 * cannot model (nvme, fp32, non-Adam optimizers, parameter offload without
 * optimizer offload). */
zb_status zb_ds_plan_make(const zb_ds_config *ds, const zb_model *m, const zb_ds_batch *b,
			  zb_ds_plan *out, zb_error *err);

/* Twin-Flow in ZeRO-3: parameters are grouped, in model order, into sub-groups that
 * close once they hold >= sub_group_size elements (whole tensors; the last may be
 * smaller), and sub-group i runs on the CPU when i >= int((1 - ratio) * n)
 * (deepspeed/runtime/zero/stage3.py, _create_fp16_sub_groups and
 * _create_fp32_partitions). The CPU therefore gets the top of the model, as in
 * zbench's split, but only whole sub-groups of it. One parameter group is assumed
 * (a second weight-decay group would add its own sub-groups at the end). */
typedef struct zb_ds_twinflow {
	int sub_groups;
	int cpu_sub_groups;
	int64_t params;
	int64_t cpu_params;
	double ratio;                /* cpu_params / params: the effective ratio */
} zb_ds_twinflow;

void zb_ds_twinflow_split(const zb_model *m, int64_t sub_group_size, double ratio,
			  zb_ds_twinflow *out);

/* Parameter tensors of the model in Hugging Face order (embeddings, then per block
 * norms, q, k, v, o, MLP matrices and biases, then the final norm and LM head).
 * Calls fn(size, ctx) for each; the sizes add up to zb_model_params(m). */
void zb_ds_tensors(const zb_model *m, void (*fn)(int64_t size, void *ctx), void *ctx);

/* DeepSpeed's ZeRO-3 prefetch window in blocks: stage3_prefetch_bucket_size elements
 * (DeepSpeed's default ZB_DS_PREFETCH_DEFAULT) counted in blocks of m, rounded up, at least 1. */
#define ZB_DS_PREFETCH_DEFAULT 50000000
int zb_ds_prefetch_layers(const zb_model *m, int64_t elements);

#endif
