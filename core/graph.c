/*
 * graph.c - what every layer does with a built schedule (graph.h): free it, check
 * its invariants, name its resources, kinds, ops and passes. Building one is
 * schedules/ (zb_graph_build).
 */
#include "core/graph.h"

#include <stdlib.h>
#include <string.h>

void zb_graph_free(zb_graph *g)
{
	free(g->tasks);
	free(g->deps);
	free(g->buckets);
	memset(g, 0, sizeof *g);
}

/* Several ranks (graph.h): a bucket's per-rank tasks carry its shard S at its offset,
 * so that the shards [off + r*S, off + (r+1)*S) of ranks 0..R-1, clipped to the bucket,
 * tile it exactly once (R*S >= the bucket by zb_shard_params); a collective carries the
 * whole bucket (or unit); when a schedule reduces buckets (reduce-scatter, or ZeRO-1's
 * all-reduce), each bucket's gradients are reduced exactly once per step. */
static zb_status check_shards(const zb_graph *g, zb_error *err)
{
	if (g->ranks < 1)
		return zb_fail(err, ZB_E_INTERNAL, "graph has %d ranks", g->ranks);
	if (g->ranks == 1) {
		for (size_t i = 0; i < g->ntasks; i++)
			if (g->tasks[i].resource == ZB_RES_COMM)
				return zb_fail(err, ZB_E_INTERNAL, "task %zu is a collective in a one-rank graph", i);
		return ZB_OK;
	}
	int R = g->ranks;
	int *rs = zb_xcalloc((size_t)(g->nbuckets ? g->nbuckets : 1) * (size_t)(g->steps > 0 ? g->steps : 1), sizeof *rs);
	zb_status st = ZB_OK;
	for (size_t i = 0; i < g->ntasks && !st; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->bucket < 0 || t->bucket >= g->nbuckets)
			continue;
		const zb_bucket *bu = &g->buckets[t->bucket];
		int64_t S = zb_shard_params(bu->params, R);
		if (t->resource == ZB_RES_COMM) {
			if (t->param_offset != bu->param_offset || t->params != bu->params)
				st = zb_fail(err, ZB_E_INTERNAL, "collective %zu covers [%lld, +%lld), its bucket %d [%lld, +%lld)", i,
					     (long long)t->param_offset, (long long)t->params, t->bucket,
					     (long long)bu->param_offset, (long long)bu->params);
			else if ((t->op == ZB_OP_REDUCE_SCATTER || t->op == ZB_OP_ALL_REDUCE) && t->step >= 0 &&
				 t->step < g->steps)
				rs[(size_t)t->step * (size_t)g->nbuckets + (size_t)t->bucket]++;
			continue;
		}
		if ((t->op == ZB_OP_ADAM || t->op == ZB_OP_GRAD_DOWN || t->op == ZB_OP_PARAM_UP) &&
		    (t->params != S || t->param_offset != bu->param_offset))
			st = zb_fail(err, ZB_E_INTERNAL, "task %zu (%s) carries %lld parameters at %lld, bucket %d's shard is %lld at %lld",
				     i, zb_op_name(t->op), (long long)t->params, (long long)t->param_offset, t->bucket, (long long)S,
				     (long long)bu->param_offset);
	}
	int any = 0; /* zbench's schedule reduces buckets; DeepSpeed's reduces its own IPG buckets */
	for (size_t i = 0; i < (size_t)g->nbuckets * (size_t)(g->steps > 0 ? g->steps : 1); i++)
		any |= rs[i] != 0;
	for (int s = 0; s < g->steps && !st && any; s++)
		for (int bk = 0; bk < g->nbuckets && !st; bk++)
			if (rs[(size_t)s * (size_t)g->nbuckets + (size_t)bk] != 1)
				st = zb_fail(err, ZB_E_INTERNAL, "bucket %d is reduced %d times in step %d", bk,
					     rs[(size_t)s * (size_t)g->nbuckets + (size_t)bk], s);
	free(rs);
	return st;
}

zb_status zb_graph_check(const zb_graph *g, zb_error *err)
{
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->id != i)
			return zb_fail(err, ZB_E_INTERNAL, "task %zu has id %u", i, t->id);
		if (t->resource >= ZB_RES_COUNT || t->kind >= ZB_TASK_KIND_COUNT)
			return zb_fail(err, ZB_E_INTERNAL, "task %zu has a bad kind or resource", i);
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			if (d[j] >= t->id)
				return zb_fail(err, ZB_E_INTERNAL,
					       "task %u depends on later task %u (a cycle is possible)", t->id, d[j]);
	}
	/* buckets tile [0, params) */
	int64_t covered = 0, cpu = 0;
	for (int bk = 0; bk < g->nbuckets; bk++) {
		covered += g->buckets[bk].params;
		if (g->buckets[bk].on_cpu)
			cpu += g->buckets[bk].params;
		if (bk > 0 && g->buckets[bk].param_offset + g->buckets[bk].params !=
				      g->buckets[bk - 1].param_offset)
			return zb_fail(err, ZB_E_INTERNAL, "bucket %d does not abut bucket %d", bk, bk - 1);
	}
	if (covered != g->params || cpu != g->cpu_params)
		return zb_fail(err, ZB_E_INTERNAL, "buckets cover %lld parameters (%lld on cpu), model has %lld",
			       (long long)covered, (long long)cpu, (long long)g->params);
	zb_status st = check_shards(g, err);
	if (st)
		return st;
	/* every parameter updated exactly once per step; every CPU-updated gradient
	 * crosses PCIe down once per step (with several ranks: across the ranks, each
	 * bucket task covering the R shards of its bucket) */
	for (int s = 0; s < g->steps; s++) {
		int64_t updated = 0, down = 0, down_unbucketed = 0;
		for (size_t i = 0; i < g->ntasks; i++) {
			const zb_task *t = &g->tasks[i];
			if (t->step != s)
				continue;
			int64_t n = g->ranks > 1 && t->bucket >= 0 ? g->buckets[t->bucket].params : t->params;
			if (t->op == ZB_OP_ADAM)
				updated += n;
			if (t->op == ZB_OP_GRAD_DOWN)
				down += n;
			if (t->op == ZB_OP_GRAD_DOWN && t->bucket < 0)
				down_unbucketed += n;
		}
		/* a framework's per-unit copies (no bucket) carry the modelled rank's part:
		 * together, one rank's shard of the offloaded parameters */
		if (g->ranks > 1 && down_unbucketed > 0 && down == down_unbucketed) {
			int64_t lo = g->cpu_params / g->ranks, hi = zb_shard_params(g->cpu_params, g->ranks);
			/* each copy's share rounds up: at most one parameter per copy over */
			if (down < lo || down > hi + 65536)
				return zb_fail(err, ZB_E_INTERNAL, "step %d sends %lld gradients down, one rank's shard of %lld is %lld",
					       s, (long long)down, (long long)g->cpu_params, (long long)hi);
			down = g->cpu_params;
		}
		if (updated != g->params)
			return zb_fail(err, ZB_E_INTERNAL, "step %d updates %lld of %lld parameters", s,
				       (long long)updated, (long long)g->params);
		if (down != g->cpu_params)
			return zb_fail(err, ZB_E_INTERNAL, "step %d sends %lld gradients down, %lld are offloaded",
				       s, (long long)down, (long long)g->cpu_params);
	}
	return ZB_OK;
}

/* ---- names ------------------------------------------------------------------ */

const char *zb_resource_name(zb_resource r)
{
	static const char *n[] = { "gpu", "pcie_d2h", "pcie_h2d", "cpu", "gpu_opt", "comm" };
	_Static_assert(sizeof n / sizeof n[0] == ZB_RES_COUNT, "resource names");
	return r < ZB_RES_COUNT ? n[r] : "?";
}

const char *zb_task_kind_name(zb_task_kind k)
{
	static const char *n[] = { "gemm", "kernel", "copy", "cpu_adam", "gpu_adam", "host", "collective" };
	_Static_assert(sizeof n / sizeof n[0] == ZB_TASK_KIND_COUNT, "kind names");
	return k < ZB_TASK_KIND_COUNT ? n[k] : "?";
}

const char *zb_op_name(zb_op op)
{
	static const char *n[] = { "embed",   "norm1",      "qkv",       "scores",  "softmax",
				   "context", "proj",       "resid",     "norm2",   "fc1",
				   "act",     "fc2",        "normf",     "lmhead",  "loss",
				   "grad_acc", "grad_down", "param_up",  "param_fetch", "act_down",
				   "act_up",  "adam",
				   "grad_copy", "cast", "fresh_pages", "hook", "grad_hook", "python",
				   "param_up_pageable", "attn",
				   "reduce_scatter", "all_gather", "all_reduce", "unscale",
				   "module_hook", "fetch", "flush", "acc_hook", "overflow", "grad_norm",
				   "release", "partition", "grad_offload", "bucket_hook", "bucket_flush",
				   "module_py" };
	_Static_assert(sizeof n / sizeof n[0] == ZB_OP_COUNT, "op names");
	return op < ZB_OP_COUNT ? n[op] : "?";
}

const char *zb_pass_name(zb_pass p)
{
	static const char *n[] = { "fwd", "recompute", "bwd_data", "bwd_weight", "opt" };
	return p < ZB_PASS_COUNT ? n[p] : "?";
}

zb_task zb_task_blank(int kind, int resource, int op, int pass, int step, int micro, int unit)
{
	zb_task t;
	memset(&t, 0, sizeof t);
	t.kind = (uint8_t)kind;
	t.resource = (uint8_t)resource;
	t.op = (uint8_t)op;
	t.pass = (uint8_t)pass;
	t.step = step;
	t.micro = micro;
	t.unit = unit;
	t.bucket = -1;
	t.param_offset = -1;
	return t;
}

void zb_graph_add_dep(const zb_graph *g, uint32_t *deps, int *ndeps, uint32_t id)
{
	if (id == UINT32_MAX)
		return;
	int r = g->tasks[id].resource;
	for (int i = 0; i < *ndeps; i++) {
		if (g->tasks[deps[i]].resource == r) {
			if (id > deps[i])
				deps[i] = id;
			return;
		}
	}
	deps[(*ndeps)++] = id;
}

uint32_t zb_graph_append(zb_graph *g, zb_task t, const uint32_t *deps, int *ndeps)
{
	if (g->ntasks == g->cap_tasks) {
		g->cap_tasks = g->cap_tasks ? 2 * g->cap_tasks : 1024;
		g->tasks = zb_xrealloc(g->tasks, g->cap_tasks * sizeof *g->tasks);
	}
	while (g->ndeps + (size_t)*ndeps > g->cap_deps) {
		g->cap_deps = g->cap_deps ? 2 * g->cap_deps : 4096;
		g->deps = zb_xrealloc(g->deps, g->cap_deps * sizeof *g->deps);
	}
	t.id = (uint32_t)g->ntasks;
	t.dep_begin = (uint32_t)g->ndeps;
	t.dep_count = (uint32_t)*ndeps;
	if (*ndeps) /* g->deps is still NULL before the first dependency */
		memcpy(g->deps + g->ndeps, deps, (size_t)*ndeps * sizeof *deps);
	g->ndeps += (size_t)*ndeps;
	*ndeps = 0;
	g->tasks[g->ntasks++] = t;
	if (t.resource == ZB_RES_D2H || t.resource == ZB_RES_H2D)
		g->copy_bytes[t.resource] += t.bytes;
	return t.id;
}
