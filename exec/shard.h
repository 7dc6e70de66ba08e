/*
 * shard.h - which part of a bucket each data-parallel rank works on, and how a
 * collective's range is padded for NCCL (the rule of core/graph.h, "Several GPUs").
 * Plain arithmetic, tested without a GPU (tests/test_shard.c).
 */
#ifndef ZB_SHARD_H
#define ZB_SHARD_H

#include <stdint.h>

/* Rank `rank` of `ranks` owns [*off, *off + *n) of the range [begin, begin + params):
 * begin + rank*S clipped to the range, S = zb_shard_params(params, ranks); the last
 * shards may be shorter or empty (*n = 0, *off = the range's end). */
void zb_shard_range(int64_t begin, int64_t params, int ranks, int rank, int64_t *off, int64_t *n);

/* A reduce-scatter or all-gather over [begin, begin + params) with `ranks` ranks:
 * NCCL moves `shard` elements per rank, `padded` = ranks * shard in all. When
 * padded > params the last rank's slot reaches `padded - params` elements past the
 * range (into the next bucket, or past the vector's end): the executor stages
 * such a collective through a scratch buffer (zb_collective_layout.staged) so the
 * elements past the range are neither overwritten nor counted twice. */
typedef struct zb_collective_layout {
	int64_t shard;   /* elements per rank (NCCL's recvcount / sendcount) */
	int64_t padded;  /* ranks * shard */
	int staged;      /* padded > params: go through a scratch buffer */
} zb_collective_layout;

zb_collective_layout zb_collective_layout_of(int64_t params, int ranks);

#endif
