/*
 * numa.h - the share of a multi-socket host that one GPU's CPU optimizer gets.
 *
 * Every DGX has two sockets. zb_cpu gives cores, Adam's memory ceiling (adam_Bps) and
 * the DRAM budget (dram_Bps) as totals over cpu.sockets NUMA nodes, each node holding
 * an equal part.
 *   - gpus_per_cpu >= sockets (a full DGX: 8 or 16 ranks, each bound to its own cores
 *     with --bind_cores_to_rank): each rank gets 1/gpus_per_cpu of the host's memory
 *     bandwidth and its traffic stays on its node;
 *   - gpus_per_cpu < sockets (one GPU given the whole host): the optimizer's threads
 *     fill one socket, then the next; its pages end up spread over the nodes its
 *     threads run on (first touch by those threads; the ZeRO-Offload paper's CPU-Adam
 *     on a DGX-2 moved ~127 GB/s, more than one Xeon 8168 socket's 128 GB/s DDR4 peak
 *     allows, so its pages were not on one node). It gets the bandwidth of the nodes
 *     it occupies, and the remote share of its traffic, (u-1)/u for u nodes, crosses
 *     the inter-socket link (UPI, xGMI), half each way, which caps it (xsocket_Bps).
 * With one socket every function reduces to the single-node model of resources.c.
 *
 * Several ranks per node (--gpus N): the node's host is shared by its ranks,
 * so "gpus_per_cpu" above reads max(gpus_per_cpu, N): each rank gets 1/N of the cores
 * (zb_config_cpu_threads) and of the memory bandwidth, on its own socket's node when
 * N >= sockets (ranks bound to cores of their GPU's socket, as DeepSpeed's
 * --bind_cores_to_rank does). A larger gpus_per_cpu (a preset's full machine) keeps
 * saying that other GPUs' jobs use the rest.
 */
#ifndef ZB_NUMA_H
#define ZB_NUMA_H

#include "core/config.h"

/* Fraction of the host's memory bandwidth (adam_Bps, dram_Bps) this GPU's optimizer
 * can draw: 1 / max(gpus_per_cpu, sockets). */
double zb_numa_share(const zb_config *c);

/* Fraction of the optimizer's threads that run on a socket other than the one holding
 * its state (0 when the threads fit on one socket or the host has one). */
double zb_numa_remote_fraction(const zb_config *c);

/* Adam's rate in B/s (28 B/param) capped by the inter-socket link: the remote threads'
 * share of the traffic must fit in xsocket_Bps. Returns rate unchanged without a cap. */
double zb_numa_cap(const zb_config *c, double rate_Bps);

#endif
