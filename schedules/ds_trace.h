/*
 * ds_trace.h - DeepSpeed ZeRO-3 on one GPU, module by module: the modules whose hooks
 * fire in one micro-step, the parameters each fetches and releases, the gradients
 * each hands to the reduction bucket. Everything here is a count derived from the
 * model and the configuration; schedules/deepspeed.c gives each count its unit cost.
 *
 * What DeepSpeed 0.19 does (runtime/zero/parameter_offload.py,
 * partitioned_param_coordinator.py, partition_parameters.py, stage3.py):
 *   - Every nn.Module gets a pre- and a post-forward hook and, through autograd
 *     functions on its outputs and inputs, a pre- and a post-backward hook. Each
 *     pre-hook calls fetch_sub_module for the module's own parameters (not its
 *     children's), each post-hook release_sub_module.
 *   - fetch: the module's parameters that are not on the GPU are gathered; with
 *     world size 1 that is one `.to(device, non_blocking=True)` per parameter from
 *     its (pinned, with offload_param) host partition, on the gather stream. Each
 *     waited handle synchronizes that stream (NoGatherCoalescedHandle.wait: the host
 *     blocks until every copy issued on it has landed), and the compute stream waits
 *     for it. Then, once the first forward+backward has been recorded (the trace is
 *     complete), parameters ahead in the trace are prefetched, up to
 *     min(stage3_max_live_parameters - elements available, stage3_prefetch_bucket_size)
 *     elements, skipping those already on the GPU.
 *   - release: a parameter is partitioned again (freed on the GPU) unless it is
 *     persistent (at most stage3_param_persistence_threshold elements: kept on the
 *     GPU, never fetched), still in use by another module, marked by the prefetcher
 *     for a later use, or used again within stage3_max_reuse_distance elements of
 *     the trace.
 *   - backward: each parameter's gradient hook adds its gradient to the IPG bucket
 *     (copied into the contiguous bucket buffer when it fits); when the next
 *     gradient would overflow reduce_bucket_size the bucket is reduced and its
 *     gradients partitioned (partition_grads), and at the end of the backward the
 *     rest; the host waits for the bucket three reductions back (param_reduce_events,
 *     at most 2 in flight) and, at the end, for all of them.
 *
 * The trace is the steady micro-step: trace complete, every non-persistent
 * parameter released at the end of the previous backward. With gradient
 * checkpointing each block's forward runs again in the backward (its hooks fire and
 * fetch again) before the block's backward.
 */
#ifndef ZB_DS_TRACE_H
#define ZB_DS_TRACE_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"

/* The GPU work of a module, as schedules/deepspeed.c emits it (one or a few tasks
 * each). ZB_DSS_NONE: a module that launches kernels whose work rides on another
 * segment's tasks (Llama's k_proj and v_proj: one fused GEMM task in the
 * schedule), counted as its own stretch of GPU work. */
typedef enum zb_ds_seg {
	ZB_DSS_NONE = -1,
	ZB_DSS_EMBED, ZB_DSS_NORM1, ZB_DSS_QKV, ZB_DSS_ROTARY, ZB_DSS_ATTN, ZB_DSS_PROJ, ZB_DSS_RESID1,
	ZB_DSS_NORM2, ZB_DSS_FC1, ZB_DSS_ACT, ZB_DSS_FC2, ZB_DSS_RESID2, ZB_DSS_NORMF, ZB_DSS_HEAD,
	ZB_DSS_LOSS, ZB_DSS_DROPOUT,
	ZB_DSS_COUNT
} zb_ds_seg;

typedef enum zb_ds_item_kind {
	ZB_DSI_PRE,   /* a module's pre-hook (forward or backward): fetch */
	ZB_DSI_POST,  /* its post-hook: release */
	ZB_DSI_SEG,   /* GPU work */
	ZB_DSI_GRAD   /* a parameter's gradient hook (backward) */
} zb_ds_item_kind;

typedef struct zb_ds_item {
	uint8_t kind;            /* zb_ds_item_kind */
	uint8_t pass;            /* ZB_PASS_FWD, ZB_PASS_RECOMPUTE or ZB_PASS_BWD_DATA */
	int16_t seg;             /* SEG: zb_ds_seg */
	int32_t unit;            /* parameter unit (model.h) the item belongs to */
	int32_t module;          /* PRE, POST */
	int32_t tensor;          /* GRAD */
	/* PRE: the coordinator in a complete trace */
	int32_t demand;          /* parameters of this module gathered here (not yet on the GPU) */
	int32_t prefetch;        /* parameters ahead in the trace gathered here */
	int32_t gath;            /* their tensors: gathered[gath .. + demand + prefetch), demand first */
	double demand_elems, prefetch_elems;
	uint8_t wait;            /* the host synchronizes the gather stream (a parameter in flight) */
	/* POST */
	int32_t released;        /* parameters freed on the GPU */
	/* GRAD */
	int32_t flush;           /* >= 0: the bucket reduced before this gradient joins it */
	uint8_t contiguous;      /* copied into the bucket buffer (fits beside what is there) */
} zb_ds_item;

typedef struct zb_ds_tensor {
	int64_t numel;
	int64_t offset;          /* in the flat parameter vector (model.h: units in order) */
	int32_t unit, module;    /* the module that owns it (a tied head shares the embedding's) */
	uint8_t persist;         /* at most stage3_param_persistence_threshold elements */
} zb_ds_tensor;

typedef struct zb_ds_module {
	int32_t unit;            /* where its pre-hook is (top-level modules: unit 0) */
	int32_t ref, nref;       /* its own parameters: refs[ref .. ref + nref) */
	uint8_t compute;         /* launches kernels of its own between its hooks */
	const char *name;        /* transformers' (or ds_step.py's) attribute name */
} zb_ds_module;

/* A bucket reduced: the gradients in it, in the order they joined. */
typedef struct zb_ds_flush {
	int32_t first, n;        /* flush_tensors[first .. first + n) */
	double elems;
	int32_t unit;            /* the unit whose backward reduces it */
} zb_ds_flush;

typedef struct zb_ds_trace_opts {
	int64_t persist_threshold, prefetch_bucket, max_live, max_reuse, reduce_bucket;
	int recompute;           /* gradient checkpointing: blocks run forward again in backward */
} zb_ds_trace_opts;

typedef struct zb_ds_trace_counts {
	int modules;             /* modules whose hooks fire in one pass */
	int tensors, persistent; /* parameter tensors; those kept on the GPU */
	double persistent_elems;
	int hooks[2];            /* hook calls (pre + post), [0] forward, [1] backward (and recompute) */
	int fetched[2];          /* parameters gathered (copied from the host with offload_param) */
	double fetched_elems[2];
	int waits[2];            /* synchronizations of the gather stream */
	int gathers[2];          /* all_gather calls (a demand fetch or a prefetch) */
	int grads, contiguous, flushes;
	int stretches[2];        /* stretches of GPU work between two stretches of host work */
	double max_live_elems;   /* parameter elements on the GPU at once, at most (persistent included) */
} zb_ds_trace_counts;

typedef struct zb_ds_trace {
	int units;
	zb_ds_tensor *t;
	int nt;
	zb_ds_module *mod;
	int nmod;
	int32_t *refs;
	int nrefs;
	zb_ds_item *it;          /* forward items, then backward items (units top down) */
	int nit, nfwd;
	int *fwd_at, *bwd_at;    /* per unit u: its items [fwd_at[u], fwd_at[u + 1]) and
	                            [bwd_at[u], bwd_at[u] + bwd_n[u]) */
	int *bwd_n;
	zb_ds_flush *flush;      /* the buckets of one backward, in order (the last: the epilogue's) */
	int nflush;
	int32_t *flush_tensors;
	int32_t *gathered;       /* the tensors each PRE item gathers */
	int ngathered;
	zb_ds_trace_counts count;
} zb_ds_trace;

/* The trace of model m's steady micro-step under o. */
zb_status zb_ds_trace_build(const zb_model *m, const zb_ds_trace_opts *o, zb_ds_trace *out, zb_error *err);
void zb_ds_trace_free(zb_ds_trace *t);

/* Stretches of GPU work separated by host work in one micro-step (forward and
 * backward): the GPU's idle gaps when the host is the slower of the two, each
 * stretch preceded by one. */
static inline int zb_ds_trace_stretches(const zb_ds_trace *t)
{
	return t->count.stretches[0] + t->count.stretches[1];
}

#endif
