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
} builder;

/* Add a dependency of the task about to be emitted (NONE: none). */
void sched_dep(builder *b, uint32_t id);
/* A bucket's copy (GRAD_DOWN on D2H, PARAM_UP on H2D) and its Adam (on the CPU or
 * the GPU, by the bucket's side of the Twin-Flow split), after the dependencies
 * added so far. */
uint32_t sched_bucket_copy(builder *b, int step, int bk, int op, int resource);
uint32_t sched_bucket_adam(builder *b, int step, int bk);

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
