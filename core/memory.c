/*
 * memory.c - how many bytes of GPU memory and host memory one configuration
 * needs, term by term, and whether that fits the machine.
 *
 * Notation: P parameters (model.h's flat vector), r the Twin-Flow ratio (fraction
 * of P whose optimizer runs on the CPU; 0 for ZB_POLICY_NONE), w = 2 bytes for a
 * bf16/fp16 value, s sequence length, b micro-batch, h hidden, a heads, kv the
 * key/value width (kv_heads * head_dim), f the MLP inner size, V the vocabulary,
 * L layers, U the largest parameter unit (embedding, one block, or the head).
 *
 * Model states (sources: Rajbhandari et al., "ZeRO", SC'20, sec. 3.1: 2P + 2P + 12P
 * = 16P for mixed-precision Adam; Ren et al., "ZeRO-Offload", ATC'21, sec. 3-4;
 * DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
 * estimate_zero{2,3}_model_states_mem_needs, which tests/test_memory.c reproduces
 * and compares with):
 *
 *   GPU  params     wP                   16-bit working weights
 *                   (prefetch+1)*wU      with offload_param: only the fetch window
 *        grads      wP                   16-bit gradient buffer the backward writes
 *                   (1-r)wP + 2*w*G      with offload_param: GPU-updated part plus a
 *                                        double-buffered window G = max(U, bucket)
 *        optimizer  (1-r)*12P            fp32 master, m, v of the GPU-updated part
 *                   + 4P when gas > 1    fp32 gradient accumulator (see below)
 *   host optimizer  r*12P                fp32 master, m, v of the CPU-updated part
 *        grads      r*wP + 2*w*bucket    16-bit landing region + pinned staging
 *        params     r*wP                 16-bit copy the CPU Adam writes and sends up
 *                   wP                   with offload_param: all weights live here
 *
 * Where this differs from DeepSpeed's estimators, on purpose (the test checks each
 * difference is exactly the term named here):
 *  - no offload, gas == 1: 16P here, 20P in DeepSpeed's ZeRO-2 estimator, which also
 *    counts a 4P fp32 gradient copy (its optimizer casts the reduced 16-bit
 *    gradients to fp32 before Adam). zbench's fused Adam reads the 16-bit gradient
 *    directly (ZB_ADAM_BYTES_PER_PARAM, core/graph.h), so at gas == 1 there is no fp32
 *    gradient; the ZeRO paper's 16P is the figure. At gas > 1 zbench keeps an fp32
 *    accumulator and the figure is DeepSpeed's 20P exactly.
 *  - offload, r = 1: DeepSpeed's ZeRO-2 estimator puts only 2P on the GPU because
 *    its gradients pass through reduce buckets; zbench's schedule writes the whole
 *    16-bit gradient vector on the GPU and drains it in buckets (buckets index the
 *    one flat vector, model.h), so 2P more. On the host DeepSpeed counts
 *    16P = 4 master + 8 m,v + 4 fp32 grads and multiplies by a 1.5 fudge factor;
 *    here 16P = 12 + 2 (16-bit grads, which the CPU Adam reads as they are) + 2
 *    (16-bit parameter copy going up, DeepSpeed's param_buffer_of_bit16_for_cpu_
 *    offload_groups, which its estimator leaves out). No fudge factor: the
 *    headroom is the explicit 10% below.
 *  - offload_param: DeepSpeed's estimator counts 4 bytes (16-bit param + grad) of
 *    its largest nn.Module (one Linear or the embedding); zbench fetches whole
 *    units (a transformer block), prefetch_layers ahead, so the window is larger.
 *
 * Gradient accumulation (gas > 1): zbench's schedule accumulates on the GPU
 * (ZB_OP_GRAD_ACC) and offloads once per step. Summing many micro-batches in bf16
 * loses low bits (8-bit mantissa), so the accumulator is fp32, 4P, for every
 * parameter (the CPU-bound part too: it leaves the GPU only once per step), as in
 * Megatron-LM's main_grad buffer and DeepSpeed's 4P "grads_32bit". It is counted
 * in gpu_optimizer, as memory.h says. With offload_param this still holds all P on
 * the GPU; a schedule that accumulated on the host instead would not need it.
 *
 * Activations of one micro-batch (micro-batches of one step run one after the
 * other, so only one is alive): Korthikanti et al., "Reducing Activation
 * Recomputation in Large Transformer Models", MLSys 2023 (arXiv 2205.05198), sec.
 * 4.1: per layer sbh(34 + 5as/h) bytes with 16-bit activations and 1-byte dropout
 * masks, no recompute. layer_bytes() below is that sum term by term, with K and V
 * kv wide (grouped-query attention) and the MLP f wide (gated: two f-wide inputs to
 * SwiGLU), less the paper's dropout terms: zbench's schedule has no dropout, so
 * there are no masks (2sbh + as^2 b) and P V reads the softmax output itself (no
 * dropout output, 2as^2 b). For a GPT shape (kv = h, f = 4h, not gated) it is
 * exactly sbh(34 + 5as/h) - sbh(2 + 3as/h) = sbh(32 + 2as/h). Counting the dropout
 * terms rejected the 2.5B GPT at micro-batch 4 on the H200, which the executor ran.
 *   ckpt none: L * layer + head inputs
 *   ckpt gpu : L * 2sbh (each block's input, sec. 5 "full recomputation") + one
 *              recomputed layer + head inputs
 *   ckpt cpu : the L * 2sbh checkpoints move to host memory; the GPU keeps two in
 *              flight (one going down in forward / coming up ahead of the layer in
 *              backward, one in use) + one recomputed layer + head inputs
 * head inputs: the final norm's input and the LM head's input, 2sbh each (not
 * checkpointed, as in Megatron's full recompute, which checkpoints blocks only).
 *
 * Workspace (transient, counted at the forward/backward turn, where saved
 * activations also peak): the logits sbV in 16-bit plus an fp32 copy for the
 * softmax cross-entropy (2 + 4 bytes per logit; the fp32 buffer is reused for the
 * gradient); cuBLAS's workspace, 32 MiB (cuBLAS docs, "cublasSetWorkspace":
 * 32 MiB recommended on Hopper); and the activation gradients of the layer in
 * backward: the residual-stream gradient in and out (2 * 2sbh) and the pair of
 * its largest intermediate gradients (2 * max(2as^2 b for softmax backward,
 * the MLP's 2sbf, doubled when gated)).
 *
 * Hugging Face's loss (zb_memory_hf_loss_bytes, for a framework running the user's
 * transformers model; T = s*b tokens): ForCausalLM's forward returns bf16 logits
 * (2TV, kept in the output the training loop holds, `outputs = engine(**batch);
 * engine.backward(outputs.loss)`), and loss/loss_utils.py ForCausalLMLoss does
 * logits.float() (4TV) and cross_entropy, whose log_softmax output (4TV, fp32) is
 * saved for backward with the int64 targets (8T); the upcast copy is freed when the
 * loss returns (forward peak 10TV). The peak is in backward, at log_softmax's
 * gradient: the saved output, nll_loss's gradient coming in (4TV, fp32) and the one
 * going out (4TV, fp32), besides the bf16 logits: 14TV + 8T. The cast back to bf16
 * (2TV) comes after the two fp32 gradients are gone. Gemma-2's tanh soft-capping
 * (logits / c, tanh, * c before the loss) keeps tanh's output (2TV) until its
 * backward: 16TV + 8T. A loop that drops the output before backward (Hugging Face's
 * Trainer keeps only the loss) holds 2TV less; its number is not measured here.
 *
 * Fits: gpu_bytes <= 0.95 * device memory. The 5% stands for the CUDA context
 * (about 0.5 GiB on Hopper with cuBLAS loaded), the caching allocator's
 * fragmentation and NCCL/cuBLAS handles, none of which zbench counts term by term.
 * host_bytes <= 0.90 * host memory: the OS, the zbench process itself and the
 * page cache keep the rest; pinned pages cannot be swapped, so the host figure
 * must fit physical memory. With pageable copies the host regions are ordinary
 * memory (the driver stages through its own pinned buffers): still counted in
 * host_bytes, and the pinned staging term is dropped.
 */
#include <stdio.h>

#include "core/memory.h"
#include "core/model.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define CUBLAS_WORKSPACE_BYTES (32.0 * 1024.0 * 1024.0)
#define GPU_USABLE 0.95  /* fraction of device memory zbench may plan for */
#define HOST_USABLE 0.90 /* fraction of host memory zbench may plan for */

static double maxd(double a, double b) { return a > b ? a : b; }

/* Largest parameter unit (embedding, a block, or head): the ZeRO-3 fetch granule.
 * A tied LM head multiplies by the embedding, and the embedding is unit 0, so the
 * maximum over units covers its fetch too. */
static double largest_unit(const zb_model *m)
{
	int64_t u = 0;
	for (int i = 0; i < zb_model_units(m); i++) {
		int64_t p = zb_model_unit_params(m, i);
		if (p > u)
			u = p;
	}
	return (double)u;
}

/* Saved activations of one transformer block in bytes, no recompute: Korthikanti
 * et al. sec. 4.1, generalized to GQA and the MLP width (see the file comment). */
static double layer_bytes(const zb_model *m, double s, double b)
{
	double h = m->hidden, a = m->heads, f = (double)zb_model_mlp_width(m);
	double q = (double)zb_model_q_dim(m), kv = (double)zb_model_kv_dim(m);
	double sb = s * b;
	double norms = 2 * sb * h + 2 * sb * h;    /* both norms keep their input: 4sbh */
	double attn = 2 * sb * h                   /* QKV GEMM input */
		    + 2 * sb * q + 2 * sb * kv     /* Q and K for QK^T (4sbh with MHA) */
		    + 2 * a * s * s * b            /* softmax output, also the input of P V */
		    + 2 * sb * kv                  /* V */
		    + 2 * sb * q;                  /* output projection input */
	double mlp = 2 * sb * h                    /* FC1 input */
		   + 2 * sb * f * (m->gated_mlp ? 2 : 1) /* GeLU input (8sbh at f=4h), or gate+up */
		   + 2 * sb * f;                   /* FC2 input */
	return norms + attn + mlp;
}

double zb_memory_hf_loss_bytes(const zb_model *m, double tokens)
{
	double T = tokens, V = m->vocab;
	switch (m->loss) {
	case ZB_LOSS_HF: return T * V * (2 + 4 + 4 + 4) + 8 * T;
	case ZB_LOSS_HF_SOFTCAP: return T * V * (2 + 2 + 4 + 4 + 4) + 8 * T;
	default: return 0;
	}
}

static void format_reason(const zb_config *c, zb_memory *o, int gpu_ok, int host_ok)
{
	char g[128] = "", h[128] = "";
	if (!gpu_ok)
		snprintf(g, sizeof g, "gpu needs %.1f GiB of %.1f GiB (%s, %.1f usable)",
			 o->gpu_bytes / GIB, c->hw.gpu.mem_bytes / GIB, c->hw.gpu.name,
			 GPU_USABLE * c->hw.gpu.mem_bytes / GIB);
	if (!host_ok)
		snprintf(h, sizeof h, "host needs %.1f GiB of %.1f GiB (%s, %.1f usable)",
			 o->host_bytes * (c->policy.gpus > 1 ? c->policy.gpus : 1) / GIB, c->hw.cpu.mem_bytes / GIB,
			 c->hw.cpu.name,
			 HOST_USABLE * c->hw.cpu.mem_bytes / GIB);
	snprintf(o->reason, sizeof o->reason, "%s%s%s", g, (!gpu_ok && !host_ok) ? "; " : "", h);
}

void zb_memory_estimate(const zb_config *c, zb_memory *out)
{
	const zb_model *m = &c->model;
	const zb_policy *p = &c->policy;
	zb_memory o = {0};
	const double w = 2.0; /* bf16 and fp16 alike */
	double P = (double)zb_model_params(m);
	double U = largest_unit(m);
	int offloading = p->kind != ZB_POLICY_NONE;
	double r = offloading ? p->ratio : 0.0;
	if (r < 0)
		r = 0;
	if (r > 1)
		r = 1;
	double bucket = p->bucket_params > 0 ? (double)p->bucket_params : 0.0;
	if (bucket > P)
		bucket = P; /* a bucket never holds more than the model */
	int prefetch = p->prefetch_layers >= 1 ? p->prefetch_layers : 1;
	int gas = p->gas >= 1 ? p->gas : 1;
	double s = p->seq > 0 ? p->seq : 0, b = p->micro_batch > 0 ? p->micro_batch : 0;
	double h = m->hidden, V = m->vocab, L = m->layers;

	/* --- model states on the GPU --- */
	if (p->offload_param) {
		/* ZeRO-3 (DeepSpeed stage3 offload_param): the unit in use plus
		 * prefetch_layers units being fetched ahead of it. Small persistent
		 * parameters (DeepSpeed's param_persistence_threshold) are ignored. */
		o.gpu_params = (prefetch + 1) * w * U;
		/* The GPU-updated part's gradients stay for the GPU Adam; the rest is
		 * written unit by unit into a window drained in buckets, double
		 * buffered so one unit's backward overlaps the previous one's D2H. */
		double window = maxd(U, bucket);
		if (window > P)
			window = P;
		o.gpu_grads = (1 - r) * w * P + 2 * w * window;
	} else {
		o.gpu_params = w * P; /* 16-bit working weights (ZeRO paper: 2P) */
		o.gpu_grads = w * P;  /* 16-bit gradients (ZeRO paper: 2P) */
	}
	/* fp32 master (4) + Adam m (4) + v (4) of the GPU-updated part (ZeRO paper:
	 * K = 12), plus the fp32 accumulator when several micro-batches add up. */
	o.gpu_optimizer = (1 - r) * 12.0 * P + (gas > 1 ? 4.0 * P : 0.0);

	/* --- activations of one micro-batch --- */
	double ckpt_in = 2 * s * b * h;      /* one block's 16-bit input */
	double layer = layer_bytes(m, s, b); /* one block, everything saved */
	if (p->attention == ZB_ATTN_FLASH) /* fused: fp32 lse instead of the probabilities (O is
					      already counted, as the projection's input) */
		layer += 4.0 * m->heads * s * b - 2.0 * m->heads * s * s * b;
	double head_in = 2 * ckpt_in;        /* final norm input + LM head input */
	switch (p->ckpt) {
	case ZB_CKPT_GPU:
		o.gpu_activations = L * ckpt_in + layer + head_in;
		break;
	case ZB_CKPT_CPU:
		o.gpu_activations = 2 * ckpt_in + layer + head_in;
		o.host_activations = L * ckpt_in;
		break;
	default:
		o.gpu_activations = L * layer + head_in;
		break;
	}

	/* --- workspace --- */
	double logits = s * b * V * (2 + 4);
	double a = m->heads, f = (double)zb_model_mlp_width(m);
	double inter = maxd(2 * a * s * s * b, 2 * s * b * f * (m->gated_mlp ? 2 : 1));
	double bwd = 2 * ckpt_in + 2 * inter;
	o.gpu_workspace = CUBLAS_WORKSPACE_BYTES + logits + bwd;

	/* --- host --- */
	if (offloading) {
		o.host_optimizer = r * 12.0 * P;
		o.host_grads = r * w * P;
		/* Double-buffered pinned staging, one bucket each way in flight; with
		 * pageable copies the driver stages through its own buffers. */
		if (!p->pageable && r > 0)
			o.host_grads += 2 * w * bucket;
		o.host_params = r * w * P;
	}
	if (p->offload_param)
		o.host_params = w * P; /* every weight lives on the host and is fetched */

	/* --- several ranks (graph.h): one rank's share; the node's ranks share the host --- */
	int R = p->gpus * p->nodes > 1 ? p->gpus * p->nodes : 1;
	int node_ranks = p->gpus > 1 ? p->gpus : 1;
	if (R > 1) {
		/* ZeRO-1/2: optimizer states partitioned; the 16-bit gradient buffer stays
		 * whole (buckets are reduce-scattered out of it). ZeRO-3: the 16-bit weights
		 * too, gathered per unit into a window like offload_param's. */
		o.gpu_optimizer = (1 - r) * 12.0 * P / R + (gas > 1 ? 4.0 * P : 0.0);
		if (p->zero_stage == 3 && !p->offload_param)
			o.gpu_params = w * P / R + (prefetch + 1) * w * U;
		o.host_optimizer /= R;
		o.host_grads /= R;
		o.host_params /= R;
	}

	o.gpu_bytes = o.gpu_params + o.gpu_grads + o.gpu_optimizer + o.gpu_activations +
		      o.gpu_workspace;
	o.host_bytes = o.host_optimizer + o.host_grads + o.host_params + o.host_activations;

	int gpu_ok = o.gpu_bytes <= GPU_USABLE * c->hw.gpu.mem_bytes;
	int host_ok = o.host_bytes * node_ranks <= HOST_USABLE * c->hw.cpu.mem_bytes;
	o.fits = gpu_ok && host_ok;
	format_reason(c, &o, gpu_ok, host_ok);
	*out = o;
}
