/*
 * config.h - the three inputs of every zbench prediction and run:
 * the hardware (PCIe link, GPU, host CPU), the model shape, and the offload policy.
 *
 * These are plain value structs: presets (presets.h) and JSON files (hwfile.h)
 * fill them, the schedule builder (graph.h) and the simulator (engine.h) read
 * them, the executor runs what the schedule built from them says. Units are SI
 * throughout: bytes, seconds, bytes/s, FLOP/s, parameters/s.
 */
#ifndef ZB_CONFIG_H
#define ZB_CONFIG_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "core/dsprofile.h"
#include "core/execprofile.h"

#define ZB_NAME_MAX 64

/* One host<->GPU link (PCIe x16, or NVLink-C2C on Grace Hopper). */
typedef struct zb_link {
	char name[ZB_NAME_MAX];
	double h2d_Bps;          /* large pinned copy, host to device, alone */
	double d2h_Bps;          /* large pinned copy, device to host, alone */
	double duplex_h2d;       /* fraction of h2d_Bps kept while D2H also runs (0..1] */
	double duplex_d2h;       /* fraction of d2h_Bps kept while H2D also runs (0..1] */
	double copy_latency_s;   /* fixed cost of one copy: t = latency + bytes / bandwidth */
	double pageable_h2d_Bps; /* cudaMemcpy from pageable memory (staged by the driver) */
	double pageable_d2h_Bps;
} zb_link;

typedef struct zb_gpu {
	char name[ZB_NAME_MAX];
	double mem_bytes;        /* device memory */
	double bf16_flops;       /* achievable dense bf16 GEMM rate on large shapes */
	double fp16_flops;       /* achievable dense fp16 GEMM rate on large shapes */
	double hbm_Bps;          /* achievable device memory bandwidth (read + write) */
	double gemm_half_dim;    /* GEMM efficiency: each dim d scales the rate by d/(d+half) */
	double kernel_latency_s; /* launch plus tail of one kernel */
	int sms;                 /* streaming multiprocessors (0: unknown); GEMM output tiles
	                            run in waves of this many, zb_gemm_waves */
	double l2_bytes;         /* L2 cache: an operand the task just before wrote is read from
	                            it when it fits (schedule.c counts HBM bytes; 0: not known,
	                            every byte from HBM) */
	double flash_efficiency; /* fused attention's fraction of bf16_flops (0: the estimate
	                            ZB_FLASH_EFFICIENCY, core/attention.h) */
	char builtin_link[ZB_NAME_MAX]; /* non-empty: this GPU has its own CPU link preset
	                                   (gh200: "nvlink-c2c"), used unless --pcie is given */
	zb_exec_profile exec;    /* zbench's executor on this machine (execprofile.h; the
	                            "executor" object of a hardware file): here because the
	                            simulator's caches of task work are keyed by the GPU */
} zb_gpu;

typedef struct zb_cpu {
	char name[ZB_NAME_MAX];
	int cores;                   /* physical cores available to the optimizer */
	double adam_params_per_core; /* fused SIMD Adam rate of one core, params/s, DRAM not limiting */
	double adam_Bps;             /* Adam's own memory ceiling when it runs alone, B/s at 28 B/param
	                                (its cores saturate the memory controller before the
	                                DRAM budget shared with DMA is reached); <= 0: dram_Bps */
	double dram_Bps;             /* host memory bandwidth shared by Adam and PCIe DMA */
	double mem_bytes;            /* host memory (pinned allocations must fit) */
	double task_latency_s;       /* cost of dispatching one task to the thread pool */
	int sockets;                 /* NUMA nodes; cores, adam_Bps and dram_Bps are totals over
	                                all of them (0 or 1: one node); see numa.h */
	double xsocket_Bps;          /* inter-socket link (UPI, xGMI), one direction; 0: no limit */
	int hypothetical;            /* 1: not a CPU one can buy (more cores than the part has,
	                                --hypothetical-cpu or cpu.hypothetical): labelled in every output */
} zb_cpu;

/* How data-parallel ranks reach each other: NCCL's bus bandwidth
 * ("busbw" of nccl-tests: the per-GPU rate that makes ring collectives' times
 * comparable across rank counts) and the per-step latency, within a node (NVLink /
 * NVSwitch, or PCIe between GPUs) and between nodes (the network, per node). */
typedef struct zb_fabric {
	char name[ZB_NAME_MAX];      /* "nvswitch-h100", "pcie", ... */
	double intra_bus_Bps;        /* within a node, B/s of bus bandwidth per GPU */
	double intra_latency_s;      /* per ring step within a node */
	double inter_bus_Bps;        /* between nodes, B/s of bus bandwidth per node */
	double inter_latency_s;      /* per ring step between nodes */
} zb_fabric;

typedef struct zb_hw {
	char name[ZB_NAME_MAX];      /* "h200-machine", or the file it came from */
	zb_link link;
	zb_gpu gpu;
	zb_cpu cpu;
	zb_fabric fabric;            /* between ranks; unused with one GPU */
	int gpus_per_link;           /* GPUs whose copies share one host link (>= 1) */
	int gpus_per_cpu;            /* GPUs whose optimizers share this CPU's cores and DRAM */
	zb_ds_profile ds;            /* DeepSpeed's framework costs on this machine (dsprofile.h) */
	double price_per_hour;       /* what one machine-hour costs (any currency, the user's; 0: not
	                                priced): --price, a hardware file's price_per_hour, --prices */
} zb_hw;

/* A decoder-only transformer. GPT-2 / OPT blocks: LayerNorm, MHA, biases, GeLU MLP
 * with two matrices. Llama / Mistral: RMSNorm, grouped-query attention (kv_heads <
 * heads), no biases, SwiGLU MLP with three matrices, rotary positions. The fields
 * after embed_proj are 0 for all of those and describe the Hugging Face families
 * that differ (inputs/hfconfig.h): a head width of its own, biases on some linears
 * only, extra norms, a mixture of experts, and how the loss reads the logits. */

/* linear_bias: which linear layers carry biases when bias is 0 (bias 1: all of them
 * and the norms too). */
enum { ZB_BIAS_QKV = 1, ZB_BIAS_OUT = 2, ZB_BIAS_MLP = 4 };
/* norms: where the norms differ from two hidden-wide norms per block and a final norm. */
enum {
	ZB_NORM_SANDWICH = 1, /* two more per block, after attention and after the MLP (Gemma-2) */
	ZB_NORM_QK = 2,       /* one over head_dim on the queries and one on the keys (Qwen3) */
	ZB_NORM_NO_FINAL = 4, /* no norm before the LM head (OPT-350m, post-norm blocks) */
	ZB_NORM_ALL = 7
};
/* loss: what the loss does with the logits, which decides their memory (memory.h). */
typedef enum zb_loss {
	ZB_LOSS_OWN,         /* the framework's own loss kernel (zbench, the own-module harness) */
	ZB_LOSS_HF,          /* Hugging Face: bf16 logits, .float() upcast, cross_entropy */
	ZB_LOSS_HF_SOFTCAP,  /* the same after tanh soft-capping of the logits (Gemma-2) */
	ZB_LOSS_COUNT
} zb_loss;

typedef struct zb_model {
	char name[ZB_NAME_MAX];
	int layers;
	int hidden;
	int heads;
	int kv_heads;            /* == heads for multi-head attention */
	int ffn;                 /* MLP inner size */
	int vocab;
	int max_seq;             /* learned position table size (0 for rotary) */
	int gated_mlp;           /* SwiGLU: gate, up and down matrices */
	int bias;                /* linear layers and norms carry biases */
	int tied_embeddings;     /* LM head shares the token embedding */
	int embed_proj;          /* OPT-350m style word_embed_proj_dim (0: none) */
	int head_dim;            /* width of one attention head (0: hidden / heads) */
	int linear_bias;         /* ZB_BIAS_* bits, with bias 0 (Qwen2: q, k, v) */
	int norms;               /* ZB_NORM_* bits (0: two per block and a final one) */
	int experts;             /* mixture of experts: MLPs of width ffn per block, and a
	                            router (0: one dense MLP) */
	int experts_active;      /* experts each token is routed to (top-k) */
	int shared_ffn;          /* a shared expert of this width every token passes, with a
	                            sigmoid gate (Qwen2-MoE; 0: none) */
	int loss;                /* zb_loss */
	int modules;             /* zb_modules: whose nn.Module tree the model is (DeepSpeed's
	                            ZeRO-3 hooks fire per module: schedules/ds_trace.h) */
	int dropout;             /* its dropout modules run kernels in training (GPT-2's
	                            resid_pdrop > 0): DeepSpeed's schedule only */
} zb_model;

/* The module tree a model runs as: zbench's own harness (peers/ds_step.py builds
 * GPT and Llama blocks of its own) or Hugging Face transformers' classes of the
 * family (set from a config.json's model_type, inputs/hfconfig.h). */
typedef enum zb_modules {
	ZB_MODULES_OWN,      /* ds_step.py: GptBlock / LlamaBlock, fused QKV for GPT */
	ZB_MODULES_HF_GPT2,  /* GPT2LMHeadModel: Conv1D c_attn, dropouts, NewGELUActivation */
	ZB_MODULES_HF_OPT,   /* OPTForCausalLM: q/k/v/out_proj, fc1/fc2, ReLU module */
	ZB_MODULES_HF_LLAMA, /* LlamaForCausalLM and its kin (mistral, qwen2, qwen3, gemma2, mixtral,
	                        qwen2_moe) */
	ZB_MODULES_HF_NEOX,  /* GPTNeoXForCausalLM: fused query_key_value, GeLU module, dropouts */
	ZB_MODULES_HF_PHI3,  /* Phi3ForCausalLM: fused qkv_proj and gate_up_proj, dropouts */
	ZB_MODULES_COUNT
} zb_modules;

typedef enum zb_policy_kind {
	ZB_POLICY_NONE,     /* everything on the GPU, no offload */
	ZB_POLICY_OFFLOAD,  /* ZeRO-Offload: all grads down after backward, CPU Adam, params up */
	ZB_POLICY_OVERLAP,  /* buckets go down during backward, updated as they land, up when ready */
	ZB_POLICY_DPU,      /* overlap + delayed parameter update */
	ZB_POLICY_COUNT
} zb_policy_kind;

typedef enum zb_ckpt { ZB_CKPT_NONE, ZB_CKPT_GPU, ZB_CKPT_CPU, ZB_CKPT_COUNT } zb_ckpt;
typedef enum zb_dtype { ZB_BF16, ZB_FP16, ZB_DTYPE_COUNT } zb_dtype;
/* Attention: batched GEMMs and a softmax kernel over stored score matrices (eager),
 * or one fused kernel per pass (flash, exec/flash_attn.h); see core/attention.h. */
typedef enum zb_attention { ZB_ATTN_EAGER, ZB_ATTN_FLASH, ZB_ATTN_COUNT } zb_attention;

typedef struct zb_policy {
	zb_policy_kind kind;
	double ratio;            /* Twin-Flow: fraction of parameters whose optimizer runs on
	                            the CPU; 1 = full offload; ignored for ZB_POLICY_NONE */
	int offload_param;       /* ZeRO-3 parameter offload: weights fetched per layer */
	int prefetch_layers;     /* how many layers ahead parameter fetches may run (>= 1) */
	zb_ckpt ckpt;            /* activation checkpointing */
	int gas;                 /* gradient accumulation steps per optimizer step */
	int micro_batch;         /* sequences per micro-batch */
	int seq;                 /* tokens per sequence */
	zb_dtype dtype;          /* compute precision; master weights are always fp32 */
	int pageable;            /* copies from pageable instead of pinned host memory */
	int64_t bucket_params;   /* gradient bucket size, parameters */
	int cpu_threads;         /* optimizer threads (0: all cores of the CPU) */
	/* framework deepspeed only (schedule_deepspeed.h) */
	int zero_stage;          /* 1, 2 or 3; 0: 3 with offload_param or ratio < 1, else 2 */
	int64_t sub_group_size;  /* ZeRO-3 sub-group, parameters; 0: DeepSpeed's default,
	                            ZB_DS_SUB_GROUP_DEFAULT */
	/* ZeRO-3's parameter coordinator (schedules/ds_trace.h), in elements; 0: DeepSpeed's
	 * default, < 0: an explicit 0 */
	int64_t prefetch_bucket; /* stage3_prefetch_bucket_size (default 5e7) */
	int64_t persist_threshold; /* stage3_param_persistence_threshold (default 1e5) */
	int64_t max_live;        /* stage3_max_live_parameters (default 1e9) */
	int64_t max_reuse;       /* stage3_max_reuse_distance (default 1e9) */
	zb_attention attention;  /* eager (default of the policy) or flash */
	double link_rate_Bps;    /* --link-rate: pinned copies paced to this rate (0: native);
	                            the link's rates are capped to it (core/attention.h) */
	int gpus;                /* data-parallel GPUs (ranks) per node, >= 1 */
	int nodes;               /* nodes, >= 1; ranks = gpus * nodes (core/graph.h) */
} zb_policy;

/* Whose schedule the task graph describes (schedules/framework.h builds it): zbench's
 * own executor or DeepSpeed's ZeRO engine. */
typedef enum zb_framework { ZB_FW_ZBENCH, ZB_FW_DEEPSPEED, ZB_FW_COUNT } zb_framework;

/* DeepSpeed's zero_optimization.sub_group_size when a config does not give one. */
#define ZB_DS_SUB_GROUP_DEFAULT 1000000000

/* Everything one prediction or run needs. */
typedef struct zb_config {
	zb_hw hw;
	int framework;           /* zb_framework */
	zb_model model;
	zb_policy policy;
	int steps;               /* optimizer steps to schedule */
} zb_config;

/* Defaults: gpt2-large on the H200 machine, overlap, ratio 1, micro-batch 8, seq 1024. */
void zb_policy_defaults(zb_policy *p);

/* Check values a user could have got wrong: one line naming the field and value. */
zb_status zb_hw_validate(const zb_hw *hw, zb_error *err);
zb_status zb_model_validate(const zb_model *m, zb_error *err);
zb_status zb_policy_validate(const zb_policy *p, const zb_model *m, zb_error *err);
zb_status zb_config_validate(const zb_config *c, zb_error *err);

/* Names used on the command line, in JSON files and in the database. */
const char *zb_policy_name(zb_policy_kind k);
const char *zb_ckpt_name(zb_ckpt c);
const char *zb_dtype_name(zb_dtype d);
zb_status zb_policy_parse(const char *s, zb_policy_kind *out, zb_error *err);
zb_status zb_ckpt_parse(const char *s, zb_ckpt *out, zb_error *err);
zb_status zb_dtype_parse(const char *s, zb_dtype *out, zb_error *err);
const char *zb_framework_name(int fw); /* "zbench", "deepspeed", "?" */
/* "deepspeed" -> ZB_FW_DEEPSPEED; unknown: ZB_E_INPUT naming the known ones. */
zb_status zb_framework_parse(const char *s, int *out, zb_error *err);

/* Which calibrated profile a prediction uses, for every row and report: "first-principles"
 * (zbench's schedule on presets alone), "executor:<hw name>" (zbench's schedule with the
 * executor profile of a --hw file), "deepspeed-defaults" (DeepSpeed's schedule with its
 * default framework costs, the same for every machine) or "deepspeed:<hw name>" (a --hw
 * file's fitted DeepSpeed profile). */
void zb_config_profile(const zb_config *c, char *buf, size_t n);

/* Threads the CPU optimizer uses under this config. */
int zb_config_cpu_threads(const zb_config *c);
/* Achievable compute rate for the config's dtype. */
double zb_config_gpu_flops(const zb_config *c);

#ifdef __cplusplus
}
#endif

#endif
