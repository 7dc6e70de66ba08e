/* nccl_bench_nocuda.c - the NCCL benchmark of a build without nvcc: it says so. */
#include "exec/nccl_bench.h"

#include <string.h>

int zb_nccl_gpus(void) { return 0; }

zb_status zb_nccl_bench(int ranks, const int *ops, int nops, const double *sizes, int nsizes, int iters,
			zb_nccl_point *out, zb_error *err)
{
	return zb_fail(err, ZB_E_NOCUDA, "built without CUDA (nvcc was not found at build time)");
}

zb_status zb_nccl_calibrate(int quick, zb_nccl_fabric *out, FILE *log, zb_error *err)
{
	memset(out, 0, sizeof *out);
	return zb_fail(err, ZB_E_NOCUDA, "built without CUDA (nvcc was not found at build time)");
}
