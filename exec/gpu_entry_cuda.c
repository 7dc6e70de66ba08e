/* gpu_entry_cuda.c - libzbench_gpu.so's table of entry points (gpu_entry.h). */
#include "exec/gpu_entry.h"

static const zb_gpu_entry entry = {
	.abi = ZB_GPU_ABI,
	.size = sizeof(zb_gpu_entry),
	.exec_available = zb_exec_available,
	.execute = zb_execute,
	.exec_result_free = zb_exec_result_free,
	.trace_start = zb_trace_start,
	.trace_stop = zb_trace_stop,
	.execute_ranks = zb_execute_ranks,
	.nccl_gpus = zb_nccl_gpus,
	.nccl_calibrate = zb_nccl_calibrate,
};

const zb_gpu_entry *zb_gpu_entry_points(void) { return &entry; }
