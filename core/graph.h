/*
 * graph.h - the schedule: a task graph for N training steps of (model, hardware,
 * policy). It is the one source of truth of zbench: the simulator (engine.h)
 * predicts when each task starts and ends, the executor (exec/) runs each task on
 * the real resource, and both timelines join on the task id.
 *
 * Tasks are stored in a valid execution order: every dependency of task i has an
 * id smaller than i, and tasks of one resource appear in the order that resource
 * runs them (a CUDA stream, a copy stream, the CPU pool's queue). The simulator and
 * the executor both rely on this order; zb_graph_check() verifies it.
 *
 * Work is described physically (FLOPs, bytes, parameters, GEMM shape) so that any
 * hardware model can time it; no durations are stored here.
 */
#ifndef ZB_GRAPH_H
#define ZB_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

typedef enum zb_resource {
	ZB_RES_GPU,      /* GPU compute stream: GEMMs and elementwise kernels */
	ZB_RES_D2H,      /* PCIe device-to-host copy channel */
	ZB_RES_H2D,      /* PCIe host-to-device copy channel */
	ZB_RES_CPU,      /* the CPU thread pool (optimizer) */
	ZB_RES_GPU_OPT,  /* GPU optimizer stream (Adam for the GPU-resident fraction) */
	ZB_RES_COMM,     /* collectives between data-parallel ranks (an NCCL stream): NVLink /
	                    NVSwitch within a node, the network between nodes */
	ZB_RES_COUNT
} zb_resource;

typedef enum zb_task_kind {
	ZB_TASK_GEMM,       /* cuBLAS GEMM or batched GEMM: m, n, k, batch */
	ZB_TASK_KERNEL,     /* memory-bound elementwise kernel: bytes of HBM traffic */
	ZB_TASK_COPY,       /* host<->device copy: bytes; direction from the resource */
	ZB_TASK_CPU_ADAM,   /* fused Adam on host: params, bytes of DRAM traffic */
	ZB_TASK_GPU_ADAM,   /* fused Adam on device: params, bytes of HBM traffic */
	ZB_TASK_HOST,       /* framework host work (hooks, Python, casts): timed by the
	                       framework profile from op, params (a count) and bytes */
	ZB_TASK_COLLECTIVE, /* NCCL collective over all ranks on ZB_RES_COMM (see "Several
	                       GPUs" below) */
	ZB_TASK_KIND_COUNT
} zb_task_kind;

/* What a task computes or moves, so the executor can pick its buffers and kernel. */
typedef enum zb_op {
	ZB_OP_EMBED,        /* token (+ position) embedding lookup */
	ZB_OP_NORM1,        /* pre-attention LayerNorm / RMSNorm */
	ZB_OP_QKV,          /* fused Q, K, V projection */
	ZB_OP_SCORES,       /* Q K^T, batched over micro-batch x heads */
	ZB_OP_SOFTMAX,      /* causal softmax of the scores */
	ZB_OP_CONTEXT,      /* P V, batched over micro-batch x heads */
	ZB_OP_PROJ,         /* attention output projection */
	ZB_OP_RESID,        /* residual add */
	ZB_OP_NORM2,        /* pre-MLP norm */
	ZB_OP_FC1,          /* MLP up (and gate, for gated MLPs, fused as one GEMM) */
	ZB_OP_ACT,          /* GeLU or SwiGLU */
	ZB_OP_FC2,          /* MLP down */
	ZB_OP_NORMF,        /* final norm */
	ZB_OP_LMHEAD,       /* logits = h W_vocab^T */
	ZB_OP_LOSS,         /* softmax cross-entropy over the vocabulary */
	ZB_OP_GRAD_ACC,     /* add a micro-batch's gradients into the accumulator */
	ZB_OP_GRAD_DOWN,    /* gradient bucket D2H */
	ZB_OP_PARAM_UP,     /* updated bf16/fp16 parameters H2D */
	ZB_OP_PARAM_FETCH,  /* ZeRO-3: a layer's parameters fetched H2D before use */
	ZB_OP_ACT_DOWN,     /* activation checkpoint saved to host */
	ZB_OP_ACT_UP,       /* activation checkpoint brought back for backward */
	ZB_OP_ADAM,         /* optimizer update of one bucket */
	/* framework schedules (schedule_deepspeed.h) */
	ZB_OP_GRAD_COPY,    /* gradient copies/casts into partition buffers (D2D or D2H) */
	ZB_OP_CAST,         /* fp32 -> 16-bit parameter cast (GPU kernel or host) */
	ZB_OP_FRESH_PAGES,  /* host: first touch of a fresh pageable buffer */
	ZB_OP_HOOK,         /* host: ZeRO-3 module hooks, params = modules */
	ZB_OP_GRAD_HOOK,    /* host: per-tensor gradient hooks, params = tensors */
	ZB_OP_PYTHON,       /* host: Python work of one optimizer step */
	ZB_OP_PARAM_UP_PAGEABLE, /* updated 16-bit parameters H2D through a pageable temporary */
	ZB_OP_ATTN,         /* fused attention (flash), one task per pass */
	/* collectives between data-parallel ranks (ZB_TASK_COLLECTIVE) */
	ZB_OP_REDUCE_SCATTER, /* a bucket's 16-bit gradients summed, each rank keeps its shard */
	ZB_OP_ALL_GATHER,   /* each rank's updated 16-bit shard sent to every rank */
	ZB_OP_ALL_REDUCE,   /* a range summed on every rank */
	ZB_OP_UNSCALE,      /* fp32 gradient partition times 1/loss scale (host task or GPU kernel) */
	/* DeepSpeed's ZeRO-3 module by module (schedules/ds_trace.h) */
	ZB_OP_MOD_HOOK,     /* host: module hooks, params = hook calls (a pre or a post hook each) */
	ZB_OP_FETCH,        /* host: parameters fetched from host memory, params = parameters */
	ZB_OP_FLUSH,        /* host: gradient buckets reduced and partitioned, params = buckets */
	ZB_OP_ACC_HOOK,     /* host: ZeRO-1/2 gradient hooks of a non-boundary micro-step, params = tensors */
	ZB_OP_OVERFLOW,     /* fp16: inf/nan check of the gradient partition (host pass, bytes) */
	ZB_OP_GRAD_NORM,    /* gradient norms for clipping, per parameter (GPU kernel) */
	ZB_OP_RELEASE,      /* host: ZeRO-3 parameters released (partitioned again), params = parameters */
	ZB_OP_PARTITION,    /* host: ZeRO-3 gradients partitioned (partition_grads), params = parameters */
	ZB_OP_GRAD_OFFLOAD, /* host: ZeRO-3 boundary offload of gradient partitions, params = parameters */
	ZB_OP_BUCKET_HOOK,  /* host: ZeRO-1/2 gradients added to the IPG bucket, params = tensors */
	ZB_OP_BUCKET_FLUSH, /* host: ZeRO-1/2 IPG buckets reduced, params = buckets */
	ZB_OP_MODULE_PY,    /* host: eager PyTorch's Python of module calls (forward, recompute, backward),
	                       params = module calls */
	ZB_OP_COUNT
} zb_op;

typedef enum zb_pass {
	ZB_PASS_FWD,        /* forward */
	ZB_PASS_RECOMPUTE,  /* forward recomputed in backward (activation checkpointing) */
	ZB_PASS_BWD_DATA,   /* backward: gradient with respect to the input */
	ZB_PASS_BWD_WEIGHT, /* backward: gradient with respect to the weights */
	ZB_PASS_OPT,        /* optimizer and parameter movement */
	ZB_PASS_COUNT
} zb_pass;

typedef struct zb_task {
	uint32_t id;
	uint8_t kind;       /* zb_task_kind */
	uint8_t resource;   /* zb_resource */
	uint8_t op;         /* zb_op */
	uint8_t pass;       /* zb_pass */
	int32_t step;       /* optimizer step, 0-based */
	int32_t micro;      /* micro-batch within the step (-1 for optimizer work) */
	int32_t unit;       /* parameter unit (model.h): 0 embed, 1..L blocks, L+1 head; -1 none */
	int32_t bucket;     /* gradient bucket index, -1 when not bucket work */
	double flops;       /* floating-point operations (GEMMs; 0 for others) */
	double bytes;       /* bytes moved: copy size, or memory traffic of a kernel/Adam */
	int64_t params;     /* parameters updated or carried */
	int64_t param_offset; /* first parameter in the flat vector (copies, Adam), else -1 */
	int32_t m, n, k, batch; /* GEMM C[m x n] += A[m x k] B[k x n], batch matrices */
	uint32_t dep_begin; /* this task's dependencies: graph->deps[dep_begin .. +dep_count] */
	uint32_t dep_count;
} zb_task;

/* A gradient bucket: a contiguous range of the flat parameter vector whose
 * gradients travel and are updated together, on the CPU or on the GPU. */
typedef struct zb_bucket {
	int64_t param_offset;
	int64_t params;
	int on_cpu;          /* optimizer of this bucket runs on the CPU */
	int first_unit;      /* lowest unit with parameters in the bucket */
	int last_unit;       /* highest unit with parameters in the bucket */
} zb_bucket;

/*
 * Several GPUs (policy.gpus x policy.nodes = R ranks, data parallel): every rank runs
 * the same graph in lockstep (the collectives synchronise them), so the graph holds
 * one rank's work, and g->ranks says how many run it.
 *   - Each bucket is partitioned across ranks: rank r owns the shard
 *     [param_offset + r*S, param_offset + (r+1)*S) clipped to the bucket, with
 *     S = zb_shard_params(bucket params, R) (the last shard may be shorter or empty).
 *   - Per-rank optimizer work of a bucket (GRAD_DOWN, ADAM, PARAM_UP) carries
 *     params = S and param_offset = the bucket's offset: rank r works on its own
 *     shard (offset + r*S, clipped); the executor does that arithmetic.
 *   - A collective (ZB_TASK_COLLECTIVE on ZB_RES_COMM) carries the whole range:
 *     param_offset and params of the bucket (or layer), bytes = params x 16-bit size,
 *     and bucket (or -1). The executor pads the range to R*S elements so that NCCL's
 *     equal counts hold (reduce-scatter and all-gather of S elements per rank).
 * With R = 1 no collective is emitted and every rank-aware field reads as before.
 * What the schedules emit (schedules/ranks.c, schedules/deepspeed.c):
 *   - zbench ZeRO-1/2: per bucket and step one REDUCE_SCATTER (ZeRO-1: ALL_REDUCE) once
 *     its gradients are ready, then per-rank GRAD_DOWN/ADAM/PARAM_UP (or GPU ADAM) on
 *     the shard, then one ALL_GATHER of the bucket after the step's backward;
 *   - zbench ZeRO-3 (policy.zero_stage 3, or offload_param with R > 1): no gather after
 *     the update; before each forward and backward of a unit an ALL_GATHER with
 *     bucket -1 over the unit's range (zb_model_unit_offset/params); with
 *     offload_param the PARAM_FETCH before it carries params = the shard of the
 *     unit's CPU part, param_offset = that part's start;
 *   - DeepSpeed's schedule is rank 0's work (not executed): ALL_REDUCE of its IPG
 *     buckets (bucket -1, their range), per-unit copies of rank 0's partition
 *     (bucket -1), one ALL_GATHER of the flat group (bucket 0) after the step.
 * tokens_per_step and model_flops_per_step stay one rank's: the job's throughput is
 * tokens/s x ranks.
 */
static inline int64_t zb_shard_params(int64_t params, int ranks)
{
	return ranks > 1 ? (params + ranks - 1) / ranks : params;
}

typedef struct zb_graph {
	zb_task *tasks;
	size_t ntasks, cap_tasks;
	uint32_t *deps;
	size_t ndeps, cap_deps;
	zb_bucket *buckets;
	int nbuckets;
	int steps;
	int ranks;                 /* data-parallel ranks running this graph (>= 1) */
	int64_t params;            /* model parameters */
	int64_t cpu_params;        /* parameters whose optimizer runs on the CPU */
	double tokens_per_step;    /* micro_batch * seq * gas */
	double model_flops_per_step; /* model FLOPs (no recompute), for TFLOP/s */
	int grad_bytes_per_param;  /* 2 for bf16/fp16 */
	/* per step and resource totals, for checks and lower bounds */
	double copy_bytes[ZB_RES_COUNT]; /* bytes per step on D2H and H2D */
	int micro_simulated;       /* > 0: the graph holds this many of each step's gas micro-steps
	                              and the prediction adds the rest as the steady micro-step's
	                              time (sim/predict.h); 0: all of them */
} zb_graph;

/* Build the schedule of cfg->steps steps for cfg->framework (schedules/framework.h has
 * the table of builders). Validates cfg first. */
zb_status zb_graph_build(zb_graph *g, const zb_config *cfg, zb_error *err);
/* zbench's own schedule: what the executor runs. */
zb_status zb_graph_build_zbench(zb_graph *g, const zb_config *cfg, zb_error *err);
void zb_graph_free(zb_graph *g);
/* A task of this kind on this resource, everything else zero (no bucket, no
 * parameter offset): what the schedule builders fill in. */
zb_task zb_task_blank(int kind, int resource, int op, int pass, int step, int micro, int unit);
/* Add id (NONE = UINT32_MAX: nothing) to the dependencies deps[0 .. *ndeps) of the task
 * about to be appended. Every resource runs its tasks one at a time in id order, so
 * finishing a task implies every earlier task of its resource has finished: keeping
 * only the latest dependency per resource says the same with at most ZB_RES_COUNT
 * edges per task. */
void zb_graph_add_dep(const zb_graph *g, uint32_t *deps, int *ndeps, uint32_t id);
/* Append t with those dependencies (growing the arrays), count its PCIe bytes, and
 * return its id; *ndeps is reset to 0 for the next task. */
uint32_t zb_graph_append(zb_graph *g, zb_task t, const uint32_t *deps, int *ndeps);
/* The checks zb_graph_build makes before building: whether cfg can be scheduled
 * (a sweep checks every configuration first, and builds graphs only for those
 * that fit in memory). */
zb_status zb_graph_validate(const zb_config *cfg, zb_error *err);

/* Verify the invariants: dependencies point backwards (so no cycles), ids are
 * dense, buckets tile the parameter vector, every parameter is updated exactly
 * once per step, every offloaded gradient crosses PCIe once per step. */
zb_status zb_graph_check(const zb_graph *g, zb_error *err);

static inline const uint32_t *zb_task_deps(const zb_graph *g, const zb_task *t)
{
	return g->deps + t->dep_begin;
}

const char *zb_resource_name(zb_resource r);   /* "gpu", "pcie_d2h", ... */
const char *zb_task_kind_name(zb_task_kind k); /* "gemm", "kernel", ... */
const char *zb_op_name(zb_op op);              /* "qkv", "grad_down", ... */
const char *zb_pass_name(zb_pass p);           /* "fwd", "bwd_data", ... */

/* Bytes of Adam state traffic per parameter: reads the 16-bit gradient (2) and the
 * fp32 master, m, v (12); writes fp32 master, m, v (12) and a 16-bit copy (2). */
#define ZB_ADAM_BYTES_PER_PARAM 28.0

#endif
