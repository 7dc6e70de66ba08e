/*
 * bench_flash_cuda.c - `zbench bench --filter flash`: the fused attention kernels
 * (exec/flash_attn.h) forward and backward on the 2.5B model's attention shape
 * (micro-batch 4, seq 2048, 32 heads of 80, causal) and on a head-dim-128 GQA shape
 * (Llama-style, 32 heads, 8 kv heads). TFLOP/s count the FLOPs the kernels execute
 * (causal pairs only; backward 2.5x forward), median of the timed runs.
 */
#include <math.h>

#include "bench/cases.h"
#include "exec/flash_attn.h"

zb_status zb_bench_run_flash(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	static const int shapes[][4] = { { 4, 32, 32, 80 }, { 2, 32, 8, 128 } }; /* batch, heads, kv, d */
	json_t *rows = json_array();
	for (int i = 0; i < 2; i++) {
		zb_flash_shape sh = { shapes[i][0], a->quick ? 256 : 2048, shapes[i][1], shapes[i][2], shapes[i][3], 1,
				      1.0f / sqrtf((float)shapes[i][3]) };
		double f = 0, b = 0;
		zb_status st = zb_bench_flash(&sh, a->repeats > 0 ? a->repeats : 10, &f, &b, err);
		if (st) {
			json_decref(rows);
			return st;
		}
		double both = f > 0 && b > 0 ? 3.5 / (1.0 / f + 2.5 / b) : 0;
		fprintf(out, "%-12s b%d s%d h%d kv%d d%d causal: fwd %6.1f  bwd %6.1f  fwd+bwd %6.1f TFLOP/s\n",
			i ? "" : "flash", sh.batch, sh.seq, sh.heads, sh.kv_heads, sh.head_dim, f, b, both);
		json_array_append_new(rows, json_pack("{s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "batch", sh.batch, "seq",
						      sh.seq, "heads", sh.heads, "kv_heads", sh.kv_heads, "head_dim",
						      sh.head_dim, "fwd_tflops", f, "bwd_tflops", b, "fwd_bwd_tflops", both));
	}
	json_object_set_new(res, "shapes", rows);
	return ZB_OK;
}
