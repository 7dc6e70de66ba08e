/*
 * serial.c - the serial schedule family (policies none and offload): the optimizer
 * runs after the whole backward, one phase at a time: GPU Adam of the GPU-side
 * buckets, then every CPU-side bucket's gradients down, their CPU Adam, their
 * parameters up (ZeRO-Offload without overlap: the sum of its parts).
 */
#include "schedules/builder.h"

/* none and offload: the optimizer runs after the whole backward, one phase at a
 * time (ZeRO-Offload without overlap: the sum of its parts). */
static void optimizer_serial(builder *b, int step)
{
	zb_graph *g = b->g;
	uint32_t last_down = NONE, last_adam = NONE;
	for (int bk = 0; bk < g->nbuckets; bk++) {
		if (!g->buckets[bk].on_cpu) {
			sched_dep(b, b->bwd_end);
			sched_dep(b, b->rs_cur[bk]); /* several ranks: this rank's shard reduced */
			b->update_cur[bk] = sched_bucket_adam(b, step, bk);
			sched_ranks_updated(b, bk, GATHER_CUR);
		}
	}
	for (int bk = 0; bk < g->nbuckets; bk++) {
		if (!g->buckets[bk].on_cpu)
			continue;
		sched_dep(b, b->bwd_end);
		sched_dep(b, b->rs_cur[bk]);
		sched_dep(b, b->adam_prev[bk]);
		last_down = b->down_cur[bk] = sched_bucket_copy(b, step, bk, ZB_OP_GRAD_DOWN, ZB_RES_D2H);
	}
	for (int bk = 0; bk < g->nbuckets; bk++) {
		if (!g->buckets[bk].on_cpu)
			continue;
		sched_dep(b, last_down);
		last_adam = b->adam_cur[bk] = sched_bucket_adam(b, step, bk);
	}
	for (int bk = 0; bk < g->nbuckets; bk++) {
		if (!g->buckets[bk].on_cpu)
			continue;
		if (b->p->offload_param) {
			b->update_cur[bk] = b->adam_cur[bk];
			continue;
		}
		sched_dep(b, last_adam);
		b->update_cur[bk] = sched_bucket_copy(b, step, bk, ZB_OP_PARAM_UP, ZB_RES_H2D);
		sched_ranks_updated(b, bk, GATHER_CUR);
	}
}

const sched_family sched_serial = { "serial", NULL, optimizer_serial, NULL };
