/* calibrate_gpu_nocuda.c - the GPU measurements of a build without nvcc: refused. */
#include "bench/calibrate.h"

zb_status zb_calibrate_gpu(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err)
{
	(void)plan;
	(void)out;
	(void)log;
	return zb_fail(err, ZB_E_NOCUDA, "built without CUDA (zbench calibrate --cpu-only measures the CPU alone)");
}
