/*
 * dsmeasured_jsonl.h - measured DeepSpeed runs as the harness's JSON lines
 * (peers/ds_step.py, one object per line), read into the rows of dsmeasured.h so
 * `zbench calibrate --deepspeed --measured FILE.jsonl` fits over several shapes.
 *
 * Each line says what it ran: the model's shape (family gpt|llama, layers, hidden,
 * heads, kv_heads, ffn, vocab, tied_head), seq, micro_batch, and ds_config, the
 * DeepSpeed JSON it ran (read again for stage, offload, ratio, overlap_comm,
 * offload_param, sub_group_size; a relative path is tried as given, then from the
 * directory above the JSONL's). The model of a row is that shape (gpt: biases and
 * learned positions of length seq; llama: SwiGLU, no biases, rotary), named like
 * the preset of the same shape when there is one.
 */
#ifndef ZB_DSMEASURED_JSONL_H
#define ZB_DSMEASURED_JSONL_H

#include "common/error.h"
#include "inputs/dsmeasured.h"

/* 1 when path's first non-blank character is '{' (a JSON-lines file). */
int zb_ds_measured_is_jsonl(const char *path);
zb_status zb_ds_measured_load_jsonl(const char *path, zb_ds_measured *out, zb_error *err);

#endif
