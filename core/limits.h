/*
 * limits.h - the largest inputs zbench accepts, and the size of a schedule before
 * it is built.
 *
 * Every field of the three inputs has a range wide enough for any real machine or
 * model (with headroom) and narrow enough that the 64-bit size arithmetic of the
 * model and schedule cannot overflow and no time computed from the hardware can
 * become inf or NaN. A value outside its range is one line naming the field, the
 * value and the range. The schedule's task count is computed from the shape alone
 * (no allocation) and refused above ZB_MAX_TASKS, so a typo like --steps 100000
 * fails at once with the numbers instead of growing until the allocator aborts.
 */
#ifndef ZB_LIMITS_H
#define ZB_LIMITS_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

/* Model shape (largest dense models today: ~200 layers, hidden 25k, vocab 256k). */
#define ZB_MAX_LAYERS 10000
#define ZB_MAX_HIDDEN 1048576
#define ZB_MAX_HEADS 65536
#define ZB_MAX_FFN 4194304
#define ZB_MAX_VOCAB 16777216
#define ZB_MAX_POSITIONS 16777216
/* Mixture of experts: experts per block, and all experts' parameters together (the
 * dense limits above keep a model below ~2e17 parameters; so must the experts). */
#define ZB_MAX_EXPERTS 4096
#define ZB_MAX_EXPERT_PARAMS 1e17
/* Policy. micro_batch * seq (tokens of a micro-batch) must also fit a GEMM
 * dimension (int32). */
#define ZB_MAX_MICRO_BATCH 65536
#define ZB_MAX_SEQ 16777216
#define ZB_MAX_GAS 65536
#define ZB_MAX_STEPS 10000
#define ZB_MAX_PREFETCH 100000
#define ZB_MAX_BUCKET 1000000000000LL
/* Hardware counts. */
#define ZB_MAX_CORES 65536
#define ZB_MAX_GPUS_PER_LINK 1024
#define ZB_MAX_GPUS_PER_NODE 1024 /* data-parallel ranks of one node */
#define ZB_MAX_NODES 65536
/* Schedule: ~80 B per task plus dependencies and the simulator's per-task state:
 * 2 million tasks stay below ~500 MB; the largest preset configuration with gas 8
 * has ~200 000. */
#define ZB_MAX_TASKS 2000000LL

/* Range checks of each input (called by the zb_*_validate functions of config.h). */
zb_status zb_limits_hw(const zb_hw *hw, zb_error *err);
zb_status zb_limits_model(const zb_model *m, zb_error *err);
zb_status zb_limits_policy(const zb_policy *p, const zb_model *m, zb_error *err); /* m may be NULL */

/* Gradient buckets of a configuration (validated), computed without building them. */
int64_t zb_limits_buckets(const zb_config *c);

/* An upper bound of the schedule's task count (>= what zb_graph_build emits), for
 * the configuration's framework: zbench's schedule or DeepSpeed's. */
int64_t zb_limits_tasks(const zb_config *c);

/* ZB_E_INPUT naming the count and what to lower when the schedule would exceed
 * ZB_MAX_TASKS. */
zb_status zb_limits_schedule(const zb_config *c, zb_error *err);

#endif
