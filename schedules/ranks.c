/*
 * ranks.c - the collectives of zbench's schedule with several data-parallel ranks
 * (builder.h, "Several ranks"; the contract is core/graph.h, "Several GPUs").
 *
 * ZeRO-1/2 as DeepSpeed's stage_1_and_2.py and PyTorch's ZeRO do it with buckets:
 * each bucket's 16-bit gradients are reduce-scattered (ZeRO-1: all-reduced, every
 * rank keeping whole gradients) as soon as the last
 * micro-batch's backward has written them, overlapping the rest of the backward;
 * each rank then offloads and updates only its shard, so the GRAD_DOWN, ADAM and
 * PARAM_UP tasks of a bucket carry params = its shard; the updated shards are
 * all-gathered. ZeRO-3 partitions the parameters too: they are gathered per unit
 * before its forward and before its backward, and never after the update.
 *
 * One rank: nothing here emits a task, and every array stays NONE, so the families'
 * extra dependencies on rs_cur are no-ops (zb_graph_add_dep ignores NONE).
 */
#include "schedules/builder.h"

#include <stdlib.h>

#include "core/model.h"

void sched_ranks_init(builder *b)
{
	const zb_policy *p = b->p;
	int NB = b->g->nbuckets;
	b->ranks = p->gpus * p->nodes;
	if (b->ranks < 1)
		b->ranks = 1;
	b->zero3 = b->ranks > 1 && (p->zero_stage == 3 || p->offload_param);
	b->rs_cur = zb_xmalloc(sizeof(uint32_t) * (size_t)(NB ? NB : 1));
	b->gather_due = zb_xcalloc((size_t)(NB ? NB : 1), 1);
	for (int i = 0; i < NB; i++)
		b->rs_cur[i] = NONE;
	b->g->ranks = b->ranks;
}

void sched_ranks_free(builder *b)
{
	free(b->rs_cur);
	free(b->gather_due);
}

int64_t sched_shard(const builder *b, int64_t n) { return zb_shard_params(n, b->ranks); }

static uint32_t collective(builder *b, int op, int pass, int step, int micro, int unit, int bucket,
			   int64_t offset, int64_t params)
{
	zb_task t = zb_task_blank(ZB_TASK_COLLECTIVE, ZB_RES_COMM, op, pass, step, micro, unit);
	t.bucket = bucket;
	t.param_offset = offset;
	t.params = params;
	t.bytes = (double)params * b->grad_bytes;
	return zb_graph_append(b->g, t, b->deps, &b->ndeps);
}

void sched_ranks_grad_ready(builder *b, int step, int unit)
{
	if (b->ranks <= 1)
		return;
	for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++) {
		const zb_bucket *bu = &b->g->buckets[bk];
		if (bu->first_unit != unit)
			continue; /* its lowest unit's gradients are not written yet */
		sched_dep(b, b->grad_ready[unit]);
		/* ZeRO-1 (--zero-stage 1) keeps whole gradients: all-reduced, as DDP does */
		int op = b->p->zero_stage == 1 ? ZB_OP_ALL_REDUCE : ZB_OP_REDUCE_SCATTER;
		b->rs_cur[bk] = collective(b, op, ZB_PASS_OPT, step, -1, bu->first_unit, bk, bu->param_offset,
					   bu->params);
	}
}

void sched_ranks_updated(builder *b, int bk, int which)
{
	if (b->ranks > 1 && !b->zero3)
		b->gather_due[bk] |= (uint8_t)which;
}

void sched_ranks_gather_due(builder *b, int step)
{
	for (int bk = 0; bk < b->g->nbuckets; bk++) {
		const zb_bucket *bu = &b->g->buckets[bk];
		for (int which = GATHER_PREV; which >= GATHER_CUR; which--) {
			if (!(b->gather_due[bk] & which))
				continue;
			uint32_t *slot = which == GATHER_CUR ? &b->update_cur[bk] : &b->update_prev[bk];
			sched_dep(b, *slot);
			/* the step whose update is gathered: dpu's delayed upload is the previous one */
			int s = which == GATHER_CUR ? step : b->g->tasks[*slot].step;
			*slot = collective(b, ZB_OP_ALL_GATHER, ZB_PASS_OPT, s, -1, bu->first_unit, bk,
					   bu->param_offset, bu->params);
		}
		b->gather_due[bk] = 0;
	}
}

void sched_ranks_gather_unit(builder *b, int step, int micro, int pass, int unit, uint32_t window_dep)
{
	int64_t n = zb_model_unit_params(b->m, unit);
	if (!b->zero3 || n == 0)
		return;
	sched_dep(b, window_dep);
	sched_dep(b, b->fetch[unit]);
	if (pass == ZB_PASS_FWD && micro == 0 && step > 0) { /* the shards must be updated */
		for (int bk = b->unit_bucket_lo[unit]; bk <= b->unit_bucket_hi[unit]; bk++) {
			const zb_bucket *bu = &b->g->buckets[bk];
			if (bu->on_cpu && b->p->offload_param)
				continue; /* the fetch carries it */
			/* dpu: the forward runs on step s-2's update (schedule.c, params_current) */
			sched_dep(b, bu->on_cpu && b->p->kind == ZB_POLICY_DPU ? b->update_prev2[bk]
									      : b->update_prev[bk]);
		}
	}
	b->fetch[unit] = collective(b, ZB_OP_ALL_GATHER, pass, step, micro, unit, -1,
				    zb_model_unit_offset(b->m, unit), n);
}
