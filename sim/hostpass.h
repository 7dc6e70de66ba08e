/*
 * hostpass.h - a framework's memory-bound host passes when the ranks of a node share
 * its DRAM.
 *
 * DeepSpeed's optimizer step streams each rank's fp32 partition through host memory
 * besides its CPU Adam: unscale_and_clip_grads (4 B read + 4 B written per parameter)
 * and the fp32 -> bf16 cast (4 + 2 B). Their rates (dsprofile.h unscale_Bps, cast_Bps)
 * are fitted on one GPU, where one process has the host's DRAM to itself. The ranks of a
 * node reach their optimizer step together (the step ends with a collective), so with R
 * ranks on one host each pass gets at most its rank's share of the DRAM, as CPU Adam
 * does (numa.h zb_numa_share). Measured on the 2-H200 host: the optimizer phase of
 * DeepSpeed ZeRO-2 offload took 870-1021 ms per rank on 2 GPUs for half the parameters
 * that one GPU updated in ~813 ms (BENCHMARKS.md, DeepSpeed on "Two GPUs").
 */
#ifndef ZB_HOSTPASS_H
#define ZB_HOSTPASS_H

#include "core/config.h"
#include "core/graph.h"

/* The duration of host task t, given its duration `alone_s` with the host to itself:
 * for the memory-bound passes of several ranks on one host, at least its bytes over the
 * rank's share of cpu.dram_Bps; every other task (and one rank) unchanged. */
double zb_host_pass_s(const zb_task *t, const zb_config *c, double alone_s);

#endif
