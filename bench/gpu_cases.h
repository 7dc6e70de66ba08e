/*
 * gpu_cases.h - the list of GPU benchmark cases, in one place: the CUDA build's
 * table (bench_gpu_cuda.c, which runs them), the table of a build without nvcc
 * (bench_gpu_nocuda.c, which waives them) and the one build/zbench lists without
 * loading the CUDA libraries (bench/gpu_load_shim.c, which forwards to the first).
 *
 *   X(name, description, waiver of bench_gpu_cuda.c (NULL: runs when a GPU is there),
 *     run function of bench_gpu_cuda.c)
 */
#ifndef ZB_GPU_CASES_H
#define ZB_GPU_CASES_H

#define ZB_BENCH_GPU_CASES(X)                                                                                \
	X("gpu-adam", "fused GPU Adam, Gparam/s (1G parameters)", no_gpu, run_gpu_adam)                      \
	X("gemm", "bf16 cuBLASLt GEMMs of the 2.5B model's shapes, TFLOP/s", no_gpu, run_gemm)               \
	X("pcie", "pinned copies 4 KB..1 GB each way and both at once; pageable", no_gpu, run_pcie)          \
	X("flash", "fused attention fwd/bwd, 2.5B shape (d 80) and d 128 GQA, TFLOP/s", no_gpu,              \
	  zb_bench_run_flash)                                                                                \
	X("e2e", "2.5B GPT step under each policy: measured, predicted, lower bound", no_gpu, run_e2e)      \
	X("nccl", "NCCL all-reduce/reduce-scatter/all-gather on all GPUs: busbw, latency, ring fit",         \
	  zb_bench_nccl_waived, zb_bench_run_nccl)

#endif
