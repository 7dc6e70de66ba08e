/*
 * store_ranks.h - every rank of a run on several GPUs (exec/ranks_cuda.c) in the
 * tables of schema version 8 (results/schema.c): one ranks row per rank and its
 * timeline in rank_events. The 'measured' events and steps (store.h) hold the
 * slowest rank's, written by the caller as for one GPU.
 */
#ifndef ZB_STORE_RANKS_H
#define ZB_STORE_RANKS_H

#include <stdint.h>

#include "common/error.h"
#include "core/graph.h"
#include "results/store.h"

typedef struct zb_rank_row {
	int rank;
	const char *device;
	int cpu_threads;
	int64_t t0_offset_ns;          /* this rank's time zero after rank 0's */
	double step_time_s;
	int slowest;                   /* the rank whose timeline is 'measured' */
	double busy_s[ZB_RES_COUNT];
	const double *start, *end;     /* per task id, seconds from this rank's zero; < 0: not run */
} zb_rank_row;

/* All rows or none (a savepoint inside the caller's transaction). */
zb_status zb_store_add_ranks(zb_store *s, int64_t config_id, const zb_graph *g, const zb_rank_row *rows, int n,
			     zb_error *err);

#endif
