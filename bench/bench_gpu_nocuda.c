/* bench_gpu_nocuda.c - the GPU benchmark cases of a build without nvcc: listed, waived. */
#include "bench/cases.h"

static const char *built_without_cuda(void) { return "built without CUDA"; }

const zb_bench_case zb_bench_gpu_cases[] = {
	{ "gpu-adam", "gpu", "fused GPU Adam, Gparam/s (1G parameters)", built_without_cuda, NULL },
	{ "gemm", "gpu", "bf16 cuBLASLt GEMMs of the 2.5B model's shapes, TFLOP/s", built_without_cuda, NULL },
	{ "pcie", "gpu", "pinned copies 4 KB..1 GB each way and both at once; pageable", built_without_cuda, NULL },
	{ "e2e", "gpu", "2.5B GPT step under each policy: measured, predicted, lower bound", built_without_cuda, NULL },
	{ "nccl", "gpu", "NCCL all-reduce/reduce-scatter/all-gather on all GPUs: busbw, latency, ring fit",
	  built_without_cuda, NULL },
	{ 0 },
};
