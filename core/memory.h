/*
 * memory.h - GPU and pinned-host memory a configuration needs, and whether it fits.
 *
 * Counts follow DeepSpeed's accounting (ZeRO-Offload paper, DeepSpeed's
 * estimate_zero2_model_states_mem_needs / estimate_zero3_...): 16-bit parameters
 * and gradients on the GPU, fp32 master weights, momentum and variance (12 bytes
 * per parameter) split between host and GPU by the Twin-Flow ratio, activations by
 * checkpointing mode, and the pinned copy buffers.
 */
#ifndef ZB_MEMORY_H
#define ZB_MEMORY_H

#include "core/config.h"

typedef struct zb_memory {
	/* GPU */
	double gpu_params;      /* 16-bit parameters resident (or prefetch buffers with offload_param) */
	double gpu_grads;       /* 16-bit gradient buffer(s) */
	double gpu_optimizer;   /* fp32 master + m + v of the GPU-updated fraction (+ fp32 grad acc) */
	double gpu_activations; /* saved activations of one micro-batch at peak */
	double gpu_workspace;   /* transient: logits, attention scores, cuBLAS workspace */
	double gpu_bytes;       /* total */
	/* host (pinned) */
	double host_optimizer;  /* fp32 master + m + v of the CPU-updated fraction */
	double host_grads;      /* 16-bit gradients landing from the GPU */
	double host_params;     /* 16-bit parameter copy going up (all params with offload_param) */
	double host_activations;/* checkpoints offloaded to the host (ckpt cpu) */
	double host_process;    /* framework schedules: process base and model construction */
	double host_bytes;      /* total (several ranks: one rank's; the node holds gpus of them) */
	int fits;
	char reason[256];       /* why it does not fit: "gpu needs 95.2 GiB of 80.0 GiB" */
} zb_memory;

void zb_memory_estimate(const zb_config *c, zb_memory *out);

/* Peak bytes of the logits and the loss of one micro-batch of `tokens` tokens as
 * Hugging Face's causal-LM loss computes them (m->loss ZB_LOSS_HF or
 * ZB_LOSS_HF_SOFTCAP; memory.c says which tensors), 0 for ZB_LOSS_OWN: a framework
 * that runs the user's Hugging Face model (DeepSpeed) counts this instead of its own
 * loss kernel's workspace. */
double zb_memory_hf_loss_bytes(const zb_model *m, double tokens);

#endif
