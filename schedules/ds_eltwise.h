/*
 * ds_eltwise.h - HBM bytes of the elementwise kernels PyTorch eager runs in one
 * transformer block of the models DeepSpeed trains (the peers/ds_step.py models,
 * written as Hugging Face's GPT-2 and Llama are): per token, per pass.
 *
 * zbench's own schedule counts one read and one write of each activation; eager
 * PyTorch does more, and how much more depends on the model family, so a single
 * efficiency factor fitted on one GPT shape cannot carry it to a Llama shape:
 *   - RMSNorm (Llama family: gated MLP) computes in fp32: x.float(), pow, mean,
 *     rsqrt, multiply, cast back, times the weight (7 kernels over fp32 tensors);
 *     LayerNorm (GPT) is one fused kernel each way, plus the weight/bias gradient
 *     reduction in backward.
 *   - Rotary positions (no learned position table): q and k each go through neg,
 *     cat, two multiplies and an add, forward and backward.
 *   - SwiGLU: silu(gate) and the product with up are two kernels (GeLU: one).
 *   - Layout copies: the attention output's transpose(1, 2).reshape copies, and
 *     in backward the q/k/v gradients are made contiguous (and, with a fused QKV
 *     linear, concatenated by split's backward); linear biases add one gradient
 *     reduction over the tokens each.
 * Sizes in bytes per token (bf16 activations, fp32 where the model upcasts).
 */
#ifndef ZB_DS_ELTWISE_H
#define ZB_DS_ELTWISE_H

#include "core/config.h"

double zb_ds_norm_bytes(const zb_model *m, int backward);   /* one norm */
double zb_ds_rotary_bytes(const zb_model *m, int backward); /* q and k of one block, 0 without rotary */
double zb_ds_act_bytes(const zb_model *m, int backward);    /* the MLP's activation */
double zb_ds_layout_bytes(const zb_model *m, int backward); /* layout copies and bias gradients */
/* Saved for backward beyond one bf16 copy of each block input the memory model
 * counts: the fp32 norm input, the pre-rotary q and k and the rotated halves,
 * SwiGLU's product. */
double zb_ds_extra_saved_bytes(const zb_model *m);

#endif
