/*
 * ranks.h - what a prediction of several data-parallel ranks adds to the
 * report: the job's throughput over all ranks, one rank's share of the
 * host (threads, DRAM, host link), and the node's totals of what its ranks share
 * (cores, DRAM bandwidth, PCIe switch uplinks), so the reader sees which shared
 * resource of the node becomes the bottleneck as GPUs are added.
 */
#ifndef ZB_REPORT_RANKS_H
#define ZB_REPORT_RANKS_H

#include <jansson.h>
#include <stdio.h>

#include "core/config.h"
#include "core/graph.h"
#include "sim/engine.h"

/* Per-rank and per-node figures of a prediction (g->ranks > 1); reads only the
 * graph's scalars, so a sweep row's head will do. */
typedef struct zb_rank_usage {
	int ranks, gpus, nodes;
	double job_tokens_per_s;    /* tokens/s over all ranks */
	int threads;                /* CPU optimizer threads of one rank */
	int node_threads;           /* ... of the node's ranks together */
	double rank_dram_Bps;       /* host memory bandwidth one rank may draw (its share) */
	double rank_dram_used_Bps;  /* one rank's host memory traffic per step: Adam + DMA */
	double node_dram_Bps;       /* the node's host memory bandwidth */
	double node_dram_used_Bps;  /* the node's ranks' traffic together */
	int link_sharers;           /* ranks behind one host link (PCIe switch uplink) */
	double link_used_Bps;       /* traffic on one uplink: its ranks' copies, both ways */
	double comm_busy_s;         /* collectives' busy time per step of one rank */
	double comm_busbw_Bps;      /* the ring's bus bandwidth (sim/collective.h) */
} zb_rank_usage;

void zb_rank_usage_of(const zb_config *c, const zb_graph *g, const zb_sim_result *r, zb_rank_usage *u);
void zb_ranks_print(FILE *f, const zb_config *c, const zb_graph *g, const zb_sim_result *r);
json_t *zb_ranks_json(const zb_config *c, const zb_graph *g, const zb_sim_result *r);

/* zbench sweep with --gpus or --nodes: extra columns per row (the ranks, the job's
 * throughput, one rank's busy time per resource, the node's DRAM traffic). */
void zb_ranks_sweep_head(FILE *f, int csv, int units_row);
void zb_ranks_sweep_row(FILE *f, int csv, const zb_config *c, const zb_graph *head, const zb_sim_result *r);

#endif
