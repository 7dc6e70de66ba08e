/*
 * overlapped.c - the overlapped schedule family (policies overlap and dpu): a
 * bucket's optimizer work starts as soon as its lowest unit's gradients are ready,
 * during the backward. On the GPU side of the Twin-Flow split that is a GPU Adam;
 * on the CPU side the gradients go down, the CPU Adam runs, and the parameters go
 * up when updated (overlap) or during the next step's backward, after its last use
 * of the old ones (dpu, delayed parameter update). With ZeRO-3 parameter offload
 * the parameters stay on the host and are fetched per layer instead.
 */
#include "schedules/builder.h"

/* Overlapping policies: a bucket's optimizer work starts as soon as its lowest
 * unit's gradients are ready (`ready`). */
static void bucket_overlapped(builder *b, int step, int bk, uint32_t ready)
{
	const zb_bucket *bu = &b->g->buckets[bk];
	if (!bu->on_cpu) {
		sched_dep(b, ready);
		sched_dep(b, b->rs_cur[bk]); /* several ranks: this rank's shard reduced */
		b->update_cur[bk] = sched_bucket_adam(b, step, bk);
		sched_ranks_updated(b, bk, GATHER_CUR);
		return;
	}
	sched_dep(b, ready);
	sched_dep(b, b->rs_cur[bk]);
	sched_dep(b, b->adam_prev[bk]); /* host gradient buffer free */
	b->down_cur[bk] = sched_bucket_copy(b, step, bk, ZB_OP_GRAD_DOWN, ZB_RES_D2H);
	sched_dep(b, b->down_cur[bk]);
	if (b->p->kind == ZB_POLICY_DPU && !b->p->offload_param)
		sched_dep(b, b->update_prev[bk]); /* host 16-bit copy read by the previous step's upload */
	b->adam_cur[bk] = sched_bucket_adam(b, step, bk);
	if (b->p->offload_param) {
		b->update_cur[bk] = b->adam_cur[bk];
	} else if (b->p->kind == ZB_POLICY_DPU) {
		b->pending_up[bk] = 1; /* goes up during the next step's backward */
	} else {
		sched_dep(b, b->adam_cur[bk]);
		b->update_cur[bk] = sched_bucket_copy(b, step, bk, ZB_OP_PARAM_UP, ZB_RES_H2D);
		sched_ranks_updated(b, bk, GATHER_CUR);
	}
}

/* dpu: step s-1's updated parameters of bucket bk go up now that step s has
 * finished using the old ones (`last_use`). */
static void bucket_delayed_up(builder *b, int step_of_update, int bk, uint32_t last_use)
{
	sched_dep(b, b->adam_prev[bk]);
	sched_dep(b, last_use);
	b->update_prev[bk] = sched_bucket_copy(b, step_of_update, bk, ZB_OP_PARAM_UP, ZB_RES_H2D);
	b->pending_up[bk] = 0;
	sched_ranks_updated(b, bk, GATHER_PREV);
}

/* The last micro-batch's backward has finished writing unit's gradients. */
static void grad_ready(builder *b, int step, int unit)
{
	zb_graph *g = b->g;
	/* Buckets whose lowest unit is this one have all their gradients now. */
	for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++) {
		if (g->buckets[bk].first_unit != unit)
			continue;
		if (b->p->kind == ZB_POLICY_DPU && b->pending_up[bk] && g->buckets[bk].on_cpu)
			bucket_delayed_up(b, step - 1, bk, b->grad_ready[unit]);
		bucket_overlapped(b, step, bk, b->grad_ready[unit]);
	}
}

/* dpu: the last step's parameters still have to go up */
static void finish(builder *b)
{
	for (int bk = 0; bk < b->g->nbuckets; bk++)
		if (b->pending_up[bk])
			bucket_delayed_up(b, b->c->steps - 1, bk, NONE);
}

const sched_family sched_overlapped = { "overlapped", grad_ready, NULL, finish };
