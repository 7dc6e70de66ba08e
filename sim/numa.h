/*
 * numa.h - the share of a multi-socket host that one GPU's CPU optimizer gets.
 *
 * Every DGX has two sockets. zb_cpu gives cores, Adam's memory ceiling (adam_Bps) and
 * the DRAM budget (dram_Bps) as totals over cpu.sockets NUMA nodes, each node holding
 * an equal part. A run's optimizer state lives on one node: DeepSpeed's pinned buffers
 * are first touched by the rank's main thread, bound (--bind_cores_to_rank) to the
 * GPU's local socket. So:
 *   - gpus_per_cpu >= sockets (a full DGX: 8 or 16 ranks): each rank has its cores on
 *     its own node and a 1/gpus_per_cpu share of the host's memory bandwidth;
 *   - gpus_per_cpu < sockets (one GPU given the whole host): the state sits on one node,
 *     so memory bandwidth is that node's (1/sockets of the host), whatever the number of
 *     threads; threads beyond the local socket's cores reach it over the inter-socket
 *     link, which caps what they move (xsocket_Bps).
 * With one socket every function reduces to the single-node model of resources.c.
 */
#ifndef ZB_NUMA_H
#define ZB_NUMA_H

#include "sim/config.h"

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
