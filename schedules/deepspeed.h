/*
 * schedule_deepspeed.h - DeepSpeed's ZeRO engine (0.19) as a task graph, and its
 * memory as DeepSpeed allocates it: the "deepspeed" row of framework.h.
 *
 * What one step does, per configuration (sources: deepspeed/runtime/zero/
 * stage_1_and_2.py, stage3.py, partitioned_param_coordinator.py, ops/adam/
 * cpu_adam.py; bytes per parameter measured with torch.profiler on the H200
 * machine, data/deepspeed-h200-table.tsv):
 *
 *   every step     Python work of the engine (profile step_s) on the host thread
 *                  before the forward; forward and backward kernels at the
 *                  profile's GPU efficiency, attention by SDPA flash (or eager).
 *   ZeRO-3         per module and pass, the fetch/release hooks on the host thread
 *                  (hook_s x modules) ahead of the module's kernels.
 *   offload_param  each unit's 16-bit parameters fetched H2D (2 B/param, pinned)
 *                  before its forward and again before its backward.
 *   stage 1/2 + offload_optimizer
 *                  backward: per tensor the gradient hook (grad_hook_s: norm,
 *                  overflow check), the bf16 -> fp32 cast on the GPU and a 4 B/param
 *                  D2H copy into the pinned fp32 gradient partition; with
 *                  overlap_comm false the copy is on the compute stream.
 *                  step: the host fp32 gradients times 1/scale (unscale_and_clip_grads,
 *                  always), DeepSpeedCPUAdam over the whole partition after backward,
 *                  fp32 -> bf16 into a pinned buffer on the host, one 2 B/param H2D.
 *   stage 3 + offload_optimizer
 *                  backward: 4 B/param fp32 gradients D2H for the CPU sub-groups,
 *                  2 B/param bf16 D2H for all (profiled), fp32 gradient partitions
 *                  on the GPU for the GPU (Twin-Flow) sub-groups; the copies hold the
 *                  compute stream (profiled backward = compute + copies).
 *                  step: sub-groups in model order, one at a time: GPU sub-groups by
 *                  torch Adam on the GPU (launched, not waited for), CPU sub-groups
 *                  CPU Adam, then fp32 -> bf16 into a fresh pageable temporary
 *                  (cast + first-touch page faults) and a pageable 2 B/param H2D that
 *                  blocks the host; with offload_param the cast goes to the pinned
 *                  host partition and nothing goes up. Then 2 B/param pinned H2D
 *                  for all parameters (profiled).
 *   no offload     torch AdamW (multi-tensor) on the GPU, fp32 gradient partitions
 *                  (stage 1/2: 6 B/param of device copies, stage 3: 2 B/param plus
 *                  the per-sub-group fp32 flatten at the step), fp32 -> bf16 cast.
 *
 * Stage 1 is modelled as stage 2 (one GPU: the same buffers, no reduce-scatter).
 */
#ifndef ZB_SCHEDULE_DEEPSPEED_H
#define ZB_SCHEDULE_DEEPSPEED_H

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"
#include "core/memory.h"

zb_status zb_ds_graph_build(zb_graph *g, const zb_config *c, zb_error *err);
void zb_ds_memory_estimate(const zb_config *c, zb_memory *out);

/* The ZeRO stage c runs: policy.zero_stage, or when 0: 3 with parameter offload or a
 * Twin-Flow ratio below 1, else 2. */
int zb_ds_stage(const zb_config *c);
/* ZeRO-3 sub-group size in parameters (policy.sub_group_size, default 1e9). */
int64_t zb_ds_sub_group(const zb_config *c);

/* ZeRO-3's coordinator settings of c (ds_trace.h): the policy's, DeepSpeed's defaults
 * where it has none (stage3_prefetch_bucket_size 5e7, stage3_param_persistence_threshold
 * 1e5, stage3_max_live_parameters and stage3_max_reuse_distance 1e9). */
struct zb_ds_trace_opts;
void zb_ds_trace_opts_of(const zb_config *c, struct zb_ds_trace_opts *o);

/* Host seconds of a ZB_TASK_HOST task under c's DeepSpeed profile (resources.c). */
double zb_ds_host_task_s(const zb_task *t, const zb_config *c);

/* Number of modules (with hooks) and parameter tensors of a unit (model.h units),
 * for the per-module and per-tensor costs. */
int zb_ds_unit_modules(const zb_model *m, int unit);
int zb_ds_unit_tensors(const zb_model *m, int unit);

#endif
