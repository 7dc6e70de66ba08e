/*
 * bench_cpu.c - host benchmarks: the fused SIMD CPU Adam and a STREAM-like triad
 * on the same threads, in the same run (issue target on the H200 machine: >= 4.0
 * Gparam/s for 256M parameters on 16 cores, DRAM traffic within 10% of the
 * triad's), with the scaling over 1, 2, 4, 8, 16 threads.
 */
#include <stdio.h>
#include <unistd.h>

#include "bench/cases.h"
#include "exec/cpu_adam.h"
#include "exec/cpu_adam_bench.h"

static int64_t size_of(const zb_bench_args *a, int64_t dflt)
{
	if (a->size > 0)
		return (int64_t)a->size;
	return a->quick ? (16LL << 20) : dflt;
}

static int max_threads(const zb_bench_args *a)
{
	if (a->threads > 0)
		return a->threads;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* Adam and triad at 1, 2, 4, ... up to all threads, each on a fresh pool. */
static zb_status run_cpu_adam(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	int top = max_threads(a);
	int64_t n = size_of(a, ZB_BENCH_ADAM_PARAMS);
	json_t *rows = json_array();
	fprintf(out, "%-12s %7s %10s %-7s %10s %10s %10s %8s\n", "cpu-adam", "threads", "params", "isa",
		"Gparam/s", "adam GB/s", "triad GB/s", "adam/triad");
	fprintf(out, "%-12s %7s %10s %-7s %10s %10s %10s %8s\n", "", "", "M", "", "median", "28 B/param",
		"12 B/elem", "%");
	zb_status st = ZB_OK;
	for (int t = 1;; t *= 2) {
		int threads = t < top ? t : top;
		zb_cpu_adam_bench ab;
		zb_triad_bench tb;
		if ((st = zb_bench_cpu_adam(n, threads, a->repeats, &ab, err)) ||
		    (st = zb_bench_triad(n, threads, a->repeats, &tb, err)))
			break;
		fprintf(out, "%-12s %7d %10.0f %-7s %10.3f %10.1f %10.1f %8.1f\n", "", threads, n / 1e6,
			zb_adam_isa_name(ab.isa), ab.gparams_per_s, ab.dram_GBps, tb.GBps,
			100 * ab.dram_GBps / tb.GBps);
		json_array_append_new(rows, json_pack("{s:i, s:I, s:s, s:f, s:f, s:f, s:i}", "threads", threads,
						      "params", (json_int_t)n, "isa", zb_adam_isa_name(ab.isa),
						      "gparams_per_s", ab.gparams_per_s, "adam_GBps", ab.dram_GBps,
						      "triad_GBps", tb.GBps, "pinned", ab.pinned));
		if (threads == top)
			break;
	}
	json_object_set_new(res, "scaling", rows);
	return st;
}

const zb_bench_case zb_bench_cpu_cases[] = {
	{ "cpu-adam", "cpu", "fused SIMD Adam and triad on 1..N threads (Gparam/s, GB/s)", NULL, run_cpu_adam },
	{ 0 },
};
