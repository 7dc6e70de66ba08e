/*
 * builder.h - private to schedules/: the state of a schedule being built, the task
 * emitters every schedule family uses, and the families themselves.
 *
 * zb_graph_build (declared in core/graph.h, defined in schedule.c) lays out the
 * model's compute of every micro-batch and step, which all policies share, and asks
 * the configuration's schedule family (families.c: policy -> family) where
 * the optimizer work of each gradient bucket goes:
 *   - serial.c: after the whole backward, one phase at a time (none, offload);
 *   - overlapped.c: each bucket as soon as its gradients are ready, parameters up
 *     when updated or, with dpu, during the next step's backward (overlap, dpu).
 * A new family (another framework's schedule, several GPUs) is a file with a
 * sched_family and a line in the table.
 */
#ifndef ZB_SCHED_BUILDER_H
#define ZB_SCHED_BUILDER_H

#include <stdint.h>

#include "core/graph.h"
#include "core/model.h"

#define NONE UINT32_MAX

typedef struct builder {
	zb_graph *g;
	const zb_config *c;
	const zb_model *m;
	const zb_policy *p;
	int units;
	int64_t tokens;          /* tokens per micro-batch */
	int grad_bytes;          /* bytes per 16-bit value */
	uint32_t deps[ZB_RES_COUNT]; /* dependencies of the task being emitted */
	int ndeps;
	/* per unit, this step / micro */
	uint32_t *grad_ready;    /* [units] last task writing the unit's gradients */
	uint32_t *first_grad_write; /* [units] first backward task writing them, this step */
	uint32_t *fwd_done;      /* [units] last forward task of the unit, this micro */
	uint32_t *bwd_done;      /* [units] last backward task of the unit, this micro */
	uint32_t *fetch;         /* [units] parameter fetch for this micro's pass, NONE if none */
	uint32_t *act_down;      /* [units] activation checkpoint copy, this micro */
	/* per bucket, by step parity */
	uint32_t *update_cur, *update_prev, *update_prev2; /* task making bucket params current on GPU */
	uint32_t *down_cur, *down_prev;     /* GRAD_DOWN task */
	uint32_t *adam_cur, *adam_prev;     /* CPU Adam task */
	int *pending_up;         /* dpu: bucket whose PARAM_UP of the previous step is due */
	int *unit_bucket_lo, *unit_bucket_hi; /* buckets overlapping a unit: [lo, hi] */
	uint32_t last_gpu;       /* last GPU compute task emitted */
	uint32_t bwd_end;        /* last backward task of the step */
	const struct sched_family *family; /* where the optimizer work goes (families.c) */
	/* several ranks (ranks.c; all NONE / 0 with one rank) */
	int ranks;               /* data-parallel ranks (graph.h "Several GPUs") */
	int zero3;               /* parameters partitioned too: gathered per layer before use */
	uint32_t *rs_cur;        /* [buckets] this step's reduce-scatter of the bucket */
	uint8_t *gather_due;     /* [buckets] GATHER_CUR / GATHER_PREV: an update awaits its all-gather */
} builder;

/* Add a dependency of the task about to be emitted (NONE: none). */
void sched_dep(builder *b, uint32_t id);
/* A bucket's copy (GRAD_DOWN on D2H, PARAM_UP on H2D) and its Adam (on the CPU or
 * the GPU, by the bucket's side of the Twin-Flow split), after the dependencies
 * added so far. */
uint32_t sched_bucket_copy(builder *b, int step, int bk, int op, int resource);
uint32_t sched_bucket_adam(builder *b, int step, int bk);

/* Several ranks (ranks.c): nothing is emitted with one rank, so the graph of one
 * GPU is unchanged. ZeRO-1/2: a bucket's gradients are reduce-scattered as soon as
 * they are ready (rs_cur, which the families wait for before a bucket's optimizer
 * work); each rank moves and updates its shard (the copies and Adam carry params =
 * shard); updated 16-bit shards are all-gathered after the step's backward, in
 * bucket order (one NCCL stream runs in order: an all-gather emitted while later
 * buckets are still to be reduce-scattered would hold them behind a CPU update).
 * ZeRO-3: no all-gather after the update; each unit's parameters are gathered
 * before its forward and its backward. */
#define GATHER_CUR 1   /* update_cur[bk] is an update that needs its all-gather */
#define GATHER_PREV 2  /* update_prev[bk] (dpu's delayed upload) */
void sched_ranks_init(builder *b);
void sched_ranks_free(builder *b);
/* the last micro-batch's backward finished unit: reduce-scatter its ready buckets */
void sched_ranks_grad_ready(builder *b, int step, int unit);
/* mark an update of bucket bk as awaiting its all-gather (no-op with one rank or ZeRO-3) */
void sched_ranks_updated(builder *b, int bk, int which);
/* emit the all-gathers awaited, in bucket order */
void sched_ranks_gather_due(builder *b, int step);
/* ZeRO-3: gather unit's parameters before a pass; replaces b->fetch[unit] */
void sched_ranks_gather_unit(builder *b, int step, int micro, int pass, int unit, uint32_t window_dep);
/* Parameters of one rank's shard of n (n itself with one rank). */
int64_t sched_shard(const builder *b, int64_t n);

/* Where the optimizer work goes; a NULL hook does nothing. */
typedef struct sched_family {
	const char *name;
	/* the last micro-batch's backward has finished writing unit's gradients */
	void (*grad_ready)(builder *b, int step, int unit);
	/* step's backward (all micro-batches) is done */
	void (*backward_done)(builder *b, int step);
	/* after the last step */
	void (*finish)(builder *b);
} sched_family;

extern const sched_family sched_serial;     /* serial.c */
extern const sched_family sched_overlapped; /* overlapped.c */

/* The family of a configuration (families.c). */
const sched_family *sched_family_for(const zb_config *c);

#endif
