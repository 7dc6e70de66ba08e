/* gpu_entry_cuda.c - bench/'s table of entry points in libzbench_gpu.so (gpu_entry.h). */
#include "bench/gpu_entry.h"

static const zb_bench_gpu_entry entry = {
	.abi = ZB_BENCH_GPU_ABI,
	.size = sizeof(zb_bench_gpu_entry),
	.calibrate_gpu = zb_calibrate_gpu,
	.bench_gpu_cases = zb_bench_gpu_cases,
};

const zb_bench_gpu_entry *zb_bench_gpu_entry_points(void) { return &entry; }
