/*
 * collective.h - the time of an NCCL collective between data-parallel ranks (the
 * ZB_RES_COMM resource), from the hardware's fabric (core/config.h, zb_fabric).
 *
 * Ring algorithm, in nccl-tests' terms (NVIDIA/nccl-tests, doc/PERFORMANCE.md): for
 * S bytes (the whole buffer: a bucket's 16-bit values) on n ranks, algbw = S / t and
 * the bus bandwidth busbw = algbw x (n-1)/n for ReduceScatter and AllGather,
 * algbw x 2(n-1)/n for AllReduce; busbw is what a ring reaches per rank whatever n,
 * and what a fabric preset gives. So
 *     reduce-scatter, all-gather: t = (n-1)/n x S / busbw + (n-1) x latency
 *     all-reduce:                 t = 2(n-1)/n x S / busbw + 2(n-1) x latency
 * (the ring has n-1 steps per phase, and all-reduce is a reduce-scatter then an
 * all-gather).
 * Several nodes: one ring through all n = gpus x nodes ranks (NCCL's rings cross
 * each node once per NIC); every step moves data over both kinds of hop at once, so
 * the ring runs at the slower of the two: busbw = min(intra_bus_Bps, inter_bus_Bps /
 * gpus) (the node's network bandwidth is shared by its GPUs' rings) and the latency
 * of a step is the larger of the two. NCCL's tree and NVLS (NVLink SHARP) algorithms
 * are not modelled.
 *
 * Not modelled: NVLink collectives run as kernels on a few SMs and read and write
 * HBM, so they slow concurrent compute a little; no source that gives the size of
 * that slowdown was found, so GPU compute keeps its rate while a collective runs.
 * Inter-node traffic crosses the PCIe switch that also carries host copies (GPUDirect
 * RDMA); that sharing is not modelled either.
 */
#ifndef ZB_COLLECTIVE_H
#define ZB_COLLECTIVE_H

#include "core/config.h"

/* Ranks of the configuration: policy.gpus x policy.nodes (>= 1). */
int zb_ranks(const zb_config *c);

/* Bus bandwidth of the ring (B/s) and the latency of one ring step (s). */
double zb_collective_bus_Bps(const zb_config *c);
double zb_collective_step_latency_s(const zb_config *c);

/* Bus bytes of a collective of op (zb_op: reduce-scatter, all-gather, all-reduce)
 * over `bytes`: bytes x (n-1)/n, twice that for all-reduce. */
double zb_collective_bus_bytes(const zb_config *c, int op, double bytes);

/* Ring steps of op: n-1, 2(n-1) for all-reduce. */
int zb_collective_steps(const zb_config *c, int op);

/* Time of one collective running alone: bus bytes / busbw + steps x latency. */
double zb_collective_s(const zb_config *c, int op, double bytes);

#endif
