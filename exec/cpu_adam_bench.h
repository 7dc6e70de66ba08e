/*
 * cpu_adam_bench.h - how fast this host runs the fused CPU Adam, and how much DRAM
 * bandwidth a plain triad gets from the same threads: the two numbers the
 * simulator's CPU model needs (zb_cpu.adam_params_per_core, zb_cpu.dram_Bps) and
 * the reason the first is what it is (Adam is memory-bound: compare its achieved
 * GB/s with the triad's).
 *
 * Method (nvbandwidth's habits): arrays are mapped fresh (transparent huge pages
 * requested) and first touched in parallel by the pool that will run the kernel, so
 * pages are placed and faulted before timing; then warm-up runs, then `repeats`
 * timed runs, each timed from the call to its return (wake-up of the pool
 * included, as the executor will pay it); the median is reported, with min and max.
 * The data that moved is verified afterwards: Adam against the scalar path replayed
 * on slices saved before the first step (bitwise), the triad on a sample (1 ulp).
 *
 * Bytes counted are the ones the algorithm must move, not what the hardware moves:
 * Adam 28 B/param (ZB_ADAM_BYTES_PER_PARAM: bf16 grad 2, master 4+4, m 4+4, v 4+4,
 * 16-bit copy 2), triad 12 B/element (STREAM's convention: b and c read, a written).
 * With ordinary stores the CPU also reads each written line first (read for
 * ownership), so the true DRAM traffic is 30 and 16 bytes; the figures stay
 * comparable to STREAM's and to the model's 28.
 *
 * Size matters: the arrays must be much larger than the last-level cache or the
 * figures are cache bandwidth. The H200 machine has 300 MiB of L3: there 16 Mi params
 * (256 MiB of arrays) gave 6.4 Gparam/s on 16 threads, 256 Mi params 4.4. Hence the
 * 256 Mi default.
 *
 * Measured on the H200 machine (16 cores, AVX-512, 256 Mi, median of 5), Gparam/s
 * for 1/2/4/8/16 threads: 0.69/1.31/2.11/3.18/4.41 (123 GB/s at 16); triad
 * 11/22/39/58/98 GB/s. PyTorch's fused CPU AdamW there: 3.8-3.9 (fp32 grads).
 */
#ifndef ZB_CPU_ADAM_BENCH_H
#define ZB_CPU_ADAM_BENCH_H

#include <stdint.h>

#include "common/error.h"
#include "exec/cpu_adam.h"
#include "exec/threadpool.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZB_BENCH_ADAM_PARAMS (256LL << 20) /* 256 Mi params: 4 GiB of arrays, 7.5 GB moved */
#define ZB_BENCH_TRIAD_ELEMS (256LL << 20) /* 256 Mi floats per array: 3 GiB */
#define ZB_BENCH_REPEATS 5
#define ZB_BENCH_WARMUP 2

typedef struct zb_cpu_adam_bench {
	int64_t params;
	int threads;            /* pool workers */
	int pinned;             /* of which pinned to a core */
	int repeats;            /* timed runs */
	zb_adam_isa isa;        /* the kernel that ran */
	double bytes_per_param; /* 28 */
	double median_s, min_s, max_s; /* one step over all params */
	double gparams_per_s;   /* params / median_s / 1e9 */
	double dram_GBps;       /* bytes_per_param * params / median_s / 1e9 */
} zb_cpu_adam_bench;

typedef struct zb_triad_bench {
	int64_t elems;
	int threads, pinned, repeats;
	double bytes_per_elem; /* 12 */
	double median_s, min_s, max_s;
	double GBps;           /* bytes_per_elem * elems / median_s / 1e9 */
} zb_triad_bench;

/* Adam steps over `params` bf16/fp32 parameters (<= 0: ZB_BENCH_ADAM_PARAMS) on a
 * pool of `threads` workers (<= 0: every allowed CPU), `repeats` timed runs (<= 0:
 * ZB_BENCH_REPEATS), kernel chosen as a step's isa AUTO is (ZB_ADAM_ISA honoured).
 * ZB_E_NOFIT when the arrays (16 B/param) do not fit in available memory. */
zb_status zb_bench_cpu_adam(int64_t params, int threads, int repeats, zb_cpu_adam_bench *out,
			    zb_error *err);

/* The same on a pool the caller owns, with the kernel named. */
zb_status zb_bench_cpu_adam_on(zb_pool *pool, int64_t params, int repeats, zb_adam_isa isa,
			       zb_cpu_adam_bench *out, zb_error *err);

/* a[i] = b[i] + s * c[i] over three fp32 arrays of `elems` (<= 0:
 * ZB_BENCH_TRIAD_ELEMS), otherwise as zb_bench_cpu_adam. */
zb_status zb_bench_triad(int64_t elems, int threads, int repeats, zb_triad_bench *out,
			 zb_error *err);

zb_status zb_bench_triad_on(zb_pool *pool, int64_t elems, int repeats, zb_triad_bench *out,
			    zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
