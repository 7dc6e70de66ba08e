/*
 * dsprofile.h - the DeepSpeed framework profile: the costs of DeepSpeed's schedule
 * that first principles (FLOPs, bytes, link and DRAM rates of the hardware profile)
 * cannot give, each with where its default comes from.
 *
 * The profile travels inside the hardware profile (zb_hw.ds, the "deepspeed"
 * object of a --hw JSON file) because it describes DeepSpeed on one machine: the
 * same Python on a faster host has cheaper hooks. `zbench calibrate --deepspeed
 * --measured FILE.tsv` fits it (dscalib.h); a machine without a fitted profile
 * uses zb_ds_profile_defaults(), measured on the H200 machine
 * (data/deepspeed-h200-table.tsv, DeepSpeed 0.19.8, PyTorch 2.11).
 *
 * The schedule that uses these numbers is schedule_deepspeed.h.
 */
#ifndef ZB_DSPROFILE_H
#define ZB_DSPROFILE_H

#include "common/error.h"

typedef struct zb_ds_profile {
	int set;              /* 0: not given, the schedule uses zb_ds_profile_defaults() */
	double gpu_eff;       /* DeepSpeed's forward/backward kernels (PyTorch eager + SDPA) as a
	                         fraction of zbench's GEMM/kernel model (0, 1.5] */
	double step_s;        /* Python per optimizer step: engine bookkeeping, zero_grad, launch */
	double hook_s;        /* ZeRO-3: host time of one module's pre+post hooks in one pass
	                         (fetch/all-gather bookkeeping, release) */
	double grad_hook_s;   /* ZeRO-1/2 offload: host time per parameter tensor in backward
	                         (per-tensor norm, fp32 copy launch, synchronisation) */
	double cpu_adam_rel;  /* DeepSpeedCPUAdam's rate / the CPU model's Adam rate */
	double pageable_h2d_Bps; /* fp32 -> 16-bit copy_ into a GPU tensor: driver-staged H2D */
	double cast_Bps;      /* CPU fp32 -> bf16 conversion, bytes read + written per second */
	double fresh_Bps;     /* first touch of a fresh pageable buffer (page faults), B/s */
	double torch_adam_Bpp;/* HBM bytes per parameter of torch's multi-tensor AdamW step */
	double subgroup_s;    /* ZeRO-3: host time of one sub-group's step outside the optimizer
	                         (prepare, unflatten into the module's parameters, release) */
	double unscale_Bps;   /* host: unscale_and_clip_grads' in-place multiply of the fp32 gradient
	                         partition (4 B read + 4 B written per parameter), B/s; also the rate
	                         of fp16's inf/nan check of the host gradient partition */
	double fetch_s;       /* ZeRO-3 offload_param: host time per parameter gathered from host
	                         memory (the .to() copy issued, its handle, event and wait bookkeeping) */
	double z3_grad_s;     /* ZeRO-3: host time of one parameter's gradient hook (IPG bucket,
	                         partition_grads' copies issued) */
	double flush_s;       /* ZeRO-3: host time of one IPG bucket's reduction outside its
	                         per-parameter work (streams, events, average) */
	double acc_hook_s;    /* ZeRO-1/2 offload with gas > 1: host time per tensor and micro-step of
	                         async_accumulate_grad_in_cpu_via_gpu (the copies up, the add, the
	                         copy down issued) */
	double overflow_Bps;  /* fp16, ZeRO-3 offload: has_overflow's isinf/isnan + any() over the
	                         16-bit host gradient buffer, counted 8 B/param, B/s */
	double release_s;     /* ZeRO-3: host time per parameter released (__release_param: partition) */
	double z3_part_s;     /* ZeRO-3: host time per parameter of a reduced bucket in partition_grads
	                         (its copies to or from the gradient partition issued), boundary aside */
	double z3_offload_s;  /* ZeRO-3 offload_optimizer, boundary: host time per parameter of
	                         _offload_grad_partition_at_boundary (norm, fp32 copy issued) */
	double z2_hook_s;     /* ZeRO-1/2: host time of one gradient's hook outside its bucket's
	                         reduction (reduce_independent_p_g_buckets_and_remove_grads) */
	double z2_flush_s;    /* ZeRO-1/2: host time of one IPG bucket reduced (reduce_ipg_grads,
	                         average_tensor), the per-tensor copies in it aside */
	/* The three below are read off the phase times of Hugging Face runs (what no counter
	 * holds, per module call) and apply to transformers' module trees only: ds_step.py's own
	 * modules (the 2.5 B table) have none measured, and that table's fit carries them. */
	double py_fwd_s;      /* eager PyTorch: host time of one module's forward call outside any
	                         DeepSpeed path (the model's Python, its kernel launches); also per
	                         module of a recompute */
	double py_bwd_s;      /* eager PyTorch: host time per module of the backward outside DeepSpeed's
	                         hooks (autograd's nodes, their launches) */
	double wrap_s;        /* ZeRO-3: host time per module and pass outside the coordinator: torch's
	                         dispatch of the module's four hooks and the two autograd Functions
	                         parameter_offload.py wraps its inputs and outputs in (applied in the
	                         forward, run in the backward) */
	int flash;            /* attention by SDPA flash (no s x s score tensors) */
} zb_ds_profile;

/* Number of fitted parameters and their names/descriptions (for calibrate, tests,
 * and the JSON file: field names are the keys). */
enum { ZB_DS_NPARAM = 24 };

typedef struct zb_ds_param_info {
	const char *key;      /* JSON key, as the struct field */
	const char *unit;     /* "s", "B/s", "" */
	double lo, hi;        /* range accepted from files and by the fit */
	const char *source;   /* where the default comes from */
	int held;             /* 1: a profiled phase measures it directly, so calibrate keeps
	                         the default instead of fitting it to step times */
	int not_measured;     /* 1: no measurement yet; the default is a starting value (source
	                         says which), held until peers/ds_fetch_bench.py or a trace's gap
	                         count gives one, and written as "not measured" in JSON files */
} zb_ds_param_info;

const zb_ds_param_info *zb_ds_param(int i);
double *zb_ds_param_ptr(zb_ds_profile *p, int i);
double zb_ds_param_get(const zb_ds_profile *p, int i);

void zb_ds_profile_defaults(zb_ds_profile *p);
/* The profile a configuration runs with: hw's when set, else the defaults. */
const zb_ds_profile *zb_ds_profile_of(const zb_ds_profile *maybe, zb_ds_profile *scratch);
zb_status zb_ds_profile_validate(const zb_ds_profile *p, zb_error *err);

/* JSON (jansson json_t *, kept opaque here so this header needs no jansson):
 * read the "deepspeed" object of a hardware file, unknown keys and bad values are
 * errors naming path and key; missing keys keep their defaults. Its "source" object
 * (key -> text, each key a profile key) says where values come from: read and
 * checked, not kept; written for the values that are not measured. */
zb_status zb_ds_profile_from_json(const void *obj, const char *path, zb_ds_profile *out, zb_error *err);
void *zb_ds_profile_to_json(const zb_ds_profile *p); /* a new json_t * reference */

#endif
