/*
 * dstune.h - search the DeepSpeed knobs the DeepSpeed schedule models for the
 * fastest setting that fits (`zbench tune`).
 *
 * Knobs: ZeRO stage (2, 3), optimizer offload (none, cpu), Twin-Flow ratio as a
 * number of CPU sub-groups, sub_group_size, overlap_comm (matters for stage 1/2
 * offload), pin_memory, offload_param, activation checkpointing (none, gpu, cpu),
 * and micro-batch x gradient accumulation at the same global batch. Each candidate
 * is checked for memory first (zb_ds_memory_estimate) and simulated only if it fits;
 * candidates are ranked by step time (same global batch: same tokens per step).
 */
#ifndef ZB_DSTUNE_H
#define ZB_DSTUNE_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

typedef struct zb_ds_knobs {
	int stage;
	int offload;          /* optimizer on the CPU */
	double ratio;         /* effective Twin-Flow ratio (whole sub-groups) */
	double ratio_asked;   /* the offload_optimizer.ratio that gives it under DeepSpeed's rule */
	int64_t sub_group;    /* sub_group_size */
	int overlap;          /* overlap_comm */
	int pin;              /* pin_memory */
	int oparam;           /* offload_param */
	int ckpt;             /* zb_ckpt */
	int micro_batch, gas;
} zb_ds_knobs;

typedef struct zb_ds_candidate {
	zb_ds_knobs k;
	double step_s, tokens_per_s, gpu_B, host_B;
	int changed; /* knobs that differ from the input's: among equal step times, fewer first */
} zb_ds_candidate;

/* The knobs of a configuration, and a configuration with knobs applied. */
void zb_ds_knobs_of(const zb_config *c, zb_ds_knobs *k);
void zb_ds_knobs_apply(const zb_ds_knobs *k, zb_config *c);

/* Every candidate around base (framework deepspeed) that fits, fastest first, in a
 * malloc'd array (*n entries); *tried gets the number of settings looked at. */
zb_status zb_ds_tune(const zb_config *base, zb_ds_candidate **out, int *n, int *tried, zb_error *err);

/* Keep, in order, the candidates v[0..n) that keep the input's settings asked for:
 * the optimizer on the CPU with at least the input's share of it, the ZeRO stage,
 * the activation checkpointing. Returns how many are left. */
int zb_ds_tune_keep(zb_ds_candidate *v, int n, const zb_ds_knobs *in, int keep_offload, int keep_stage, int keep_ckpt);

/* The DeepSpeed config `in` with the knobs of k, every other key as it was, written
 * to out (through a temporary file beside it, then renamed). */
zb_status zb_ds_tuned_write(const char *in, const char *out, const zb_ds_knobs *k, zb_error *err);

#endif
