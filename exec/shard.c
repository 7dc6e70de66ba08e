/*
 * shard.c - shard ranges and collective padding (shard.h).
 */
#include "exec/shard.h"

#include "core/graph.h"

void zb_shard_range(int64_t begin, int64_t params, int ranks, int rank, int64_t *off, int64_t *n)
{
	int64_t S = zb_shard_params(params, ranks > 0 ? ranks : 1);
	int64_t lo = (int64_t)rank * S, hi = lo + S;
	if (lo > params)
		lo = params;
	if (hi > params)
		hi = params;
	*off = begin + lo;
	*n = hi - lo;
}

zb_collective_layout zb_collective_layout_of(int64_t params, int ranks)
{
	zb_collective_layout l;
	if (ranks < 1)
		ranks = 1;
	l.shard = zb_shard_params(params, ranks);
	l.padded = l.shard * ranks;
	l.staged = l.padded > params;
	return l;
}
