/* bench_gpu_nocuda.c - the GPU benchmark cases of a build without nvcc: listed, waived. */
#include "bench/cases.h"
#include "bench/gpu_cases.h"

static const char *built_without_cuda(void) { return "built without CUDA"; }

#define CASE(name, description, waived, run) { name, "gpu", description, built_without_cuda, NULL },
const zb_bench_case zb_bench_gpu_cases[] = {
	ZB_BENCH_GPU_CASES(CASE)
	{ 0 },
};
