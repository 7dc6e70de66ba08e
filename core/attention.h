/*
 * attention.h - the two ways a step computes attention, and the emulated link.
 *
 * Eager: S = Q K^T and O = P V as batched GEMMs over stored score matrices plus a
 * softmax kernel (graph.c's original tasks). Flash: one fused task per pass
 * (exec/flash_attn.h): the FLOPs the fused kernels execute (causal: only allowed
 * (query, key) pairs; backward recomputes S, so 5 products instead of 4) at a
 * fitted fraction of the GPU's bf16 rate, and only Q, K, V, O (and their gradients)
 * crossing HBM: no S or P matrices.
 *
 * --link-rate: the executor paces its pinned copies to a rate below the link's own
 * (exec/pacing.h), so the simulator caps the link's rates to the same value.
 */
#ifndef ZB_ATTENTION_H
#define ZB_ATTENTION_H

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"

/* Fraction of zb_gpu.bf16_flops the fused kernels reach, used when the GPU has no
 * fitted value (zb_gpu.flash_efficiency, "flash_efficiency" in a hardware file).
 * Measured on the H200 (BENCHMARKS.md, scripts/suites/flash.suite), the mma.sync
 * kernels of exec/flash_mma.cu: the attention tasks of a 2.5B step (head dim 80,
 * micro-batch 4, seq 2048, `zbench run --attention flash`) ran at 144.4 TFLOP/s, 0.170
 * of 850 (`zbench bench --filter flash`, fused fwd+bwd alone: 153.9; head dim 128 with
 * GQA 32/8: 124.1, 0.146). The older wmma kernels (ZB_FLASH_IMPL=wmma) reach 0.050. */
#define ZB_FLASH_EFFICIENCY 0.170

const char *zb_attention_name(zb_attention a); /* "eager", "flash" */
zb_status zb_attention_parse(const char *s, zb_attention *out, zb_error *err);

/* Whether the fused kernels take this model's heads: head dim 32, 64, 80, 96 or
 * 128 and kv_heads dividing heads. */
int zb_attention_flash_ok(const zb_model *m);

/* The fused task of one pass (FWD, RECOMPUTE or BWD_DATA) of one block, ready to
 * emit: kind GEMM on the GPU stream, op ZB_OP_ATTN, m = n = seq, k = head dim,
 * batch = micro-batch x heads. */
zb_task zb_flash_task(const zb_config *c, int pass, int step, int micro, int unit);

/* FLOPs the fused kernels execute for one pass. */
double zb_flash_pass_flops(const zb_config *c, int pass);

double zb_flash_efficiency(const zb_gpu *gpu);

/* --link-rate: rate in bytes/s (> 0, finite; not with pageable copies). Sets
 * policy.link_rate_Bps and caps the link's pinned rates to it; the duplex factors
 * are adjusted so that a direction never runs slower than the cap allows when the
 * link itself would still have headroom. */
zb_status zb_link_rate_apply(zb_config *c, double Bps, zb_error *err);

#endif
