/*
 * bench_nccl_cuda.c - `zbench bench nccl`: all-reduce, reduce-scatter and all-gather
 * on every GPU present, 1 KB .. 1 GB (x4 steps; --quick up to 1 MB): time, algbw and
 * busbw as nccl-tests defines them (exec/nccl_bench.h), and the ring model fitted
 * to reduce-scatter and all-gather (what `zbench calibrate` writes as the fabric).
 */
#include <stdlib.h>

#include "bench/cases.h"
#include "core/graph.h"
#include "exec/nccl_bench.h"

const char *zb_bench_nccl_waived(void)
{
	static char why[64];
	int n = zb_nccl_gpus();
	if (n >= 2)
		return NULL;
	snprintf(why, sizeof why, "needs 2 GPUs (%d present)", n);
	return why;
}

zb_status zb_bench_run_nccl(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	const int ops[] = { ZB_OP_ALL_REDUCE, ZB_OP_REDUCE_SCATTER, ZB_OP_ALL_GATHER };
	double sizes[16];
	int ns = 0;
	for (double s = 1024; s <= (a->quick ? 1.0 : 1024.0) * (1 << 20); s *= 4)
		sizes[ns++] = s;
	int R = zb_nccl_gpus();
	zb_nccl_point *p = zb_xcalloc((size_t)(3 * ns), sizeof *p);
	zb_status st = zb_nccl_bench(R, ops, 3, sizes, ns, a->repeats > 0 ? a->repeats : 20, p, err);
	if (st) {
		free(p);
		return st;
	}
	fprintf(out, "%-12s %-15s %12s %12s %12s %12s   (%d GPUs, bf16, in place)\n", "nccl", "op", "bytes", "time us",
		"algbw GB/s", "busbw GB/s", R);
	json_t *rows = json_array();
	for (int i = 0; i < 3 * ns; i++) {
		fprintf(out, "%-12s %-15s %12.0f %12.2f %12.2f %12.2f\n", "", zb_op_name(p[i].op), p[i].bytes,
			p[i].time_s * 1e6, p[i].algbw_Bps / 1e9, p[i].busbw_Bps / 1e9);
		json_array_append_new(rows, json_pack("{s:s, s:f, s:f, s:f, s:f}", "op", zb_op_name(p[i].op), "bytes",
						      p[i].bytes, "time_s", p[i].time_s, "algbw_Bps", p[i].algbw_Bps,
						      "busbw_Bps", p[i].busbw_Bps));
	}
	json_object_set_new(res, "gpus", json_integer(R));
	json_object_set_new(res, "points", rows);
	double bus, lat, rms;
	zb_error ferr = { 0 };
	/* the ring model over reduce-scatter and all-gather (the last 2 x ns points) */
	if (!zb_nccl_fit(p + ns, 2 * ns, R, &bus, &lat, &rms, &ferr)) {
		fprintf(out, "%-12s fit (reduce-scatter, all-gather): busbw %.1f GB/s, latency %.2f us per ring step, "
			     "rms %.1f%%\n", "", bus / 1e9, lat * 1e6, rms * 100);
		json_object_set_new(res, "fit", json_pack("{s:f, s:f, s:f}", "bus_Bps", bus, "latency_s", lat, "rms_rel",
							  rms));
	} else {
		fprintf(out, "%-12s fit failed: %s\n", "", ferr.msg);
	}
	free(p);
	return ZB_OK;
}
