/*
 * kernels.h - the executor's CUDA kernels behind plain C functions: the elementwise
 * and row-wise work of a transformer training step (norms, activations, softmax,
 * residual, embedding, loss, gradient accumulation), random fills for buffers that
 * must not hold zeros, and the micro-benchmarks `zbench bench` runs on a GPU.
 * GPU Adam has its own header, exec/gpu_adam.h; GEMMs are in exec/gemm.h.
 *
 * Conventions, for every function below:
 *   - 16-bit data is bf16 (uint16_t here, __nv_bfloat16 in the kernels) unless the
 *     name says f32; arithmetic and every reduction run in fp32, results are rounded
 *     to bf16 to nearest even once, at the store.
 *   - Matrices are row-major [rows, cols]; sizes are element counts.
 *   - All pointers are device pointers; the work is queued on `stream` (NULL: the
 *     legacy default stream) and the function returns without waiting. The return
 *     value reports bad arguments (ZB_E_INPUT, nothing queued) and launch failures
 *     (ZB_E_CUDA); a fault inside a kernel surfaces at the caller's next sync.
 *   - Any alignment works. Rows whose pointers are 16-byte aligned and whose length is
 *     a multiple of 8 take the vector path (16-byte loads and stores), others a scalar
 *     path with the same results.
 *   - Outputs may alias inputs only where a function says so.
 *   - "+=" outputs accumulate: zero them (cudaMemsetAsync) before the first use.
 *     Those accumulated with atomics (norm weight gradients, embedding gradients)
 *     are not bitwise reproducible from run to run (the order of fp32 additions
 *     varies); everything else is.
 *
 * The header needs no CUDA headers: zb_stream is the type cudaStream_t names, so a
 * cudaStream_t is passed as is. Without nvcc none of this is built.
 */
#ifndef ZB_KERNELS_H
#define ZB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/error.h"

#ifndef ZB_STREAM_DEFINED
#define ZB_STREAM_DEFINED
struct CUstream_st;
typedef struct CUstream_st *zb_stream; /* == cudaStream_t */
#endif

#if defined(__CUDACC__)
#define ZB_HOST_DEVICE __host__ __device__
#else
#define ZB_HOST_DEVICE
#endif

/* ---- random fills --------------------------------------------------------------- */

/* The value element i of a fill with this seed gets, before rounding to the buffer's
 * type: lo + (hi - lo) * u, u = the top 24 bits of splitmix64(seed + (i + 1) * golden)
 * times 2^-24, so u is in [0, 1) and every value is finite. The same function runs
 * on the host and in the kernel (each operation rounded once, no fma), so a test can
 * recompute any element bit for bit. */
static inline ZB_HOST_DEVICE uint64_t zb_splitmix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline ZB_HOST_DEVICE float zb_uniform_at(uint64_t seed, uint64_t i, float lo, float hi)
{
	uint64_t z = zb_splitmix64(seed + (i + 1) * 0x9e3779b97f4a7c15ull);
	float u = (float)(z >> 40) * (1.0f / 16777216.0f); /* exact */
#if defined(__CUDA_ARCH__)
	return __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), u));
#else
	float w = hi - lo;
	float s = w * u;
	return lo + s;
#endif
}

/* Token id i of zb_fill_tokens: splitmix64 of the same counter, modulo vocab. */
static inline ZB_HOST_DEVICE int32_t zb_token_at(uint64_t seed, uint64_t i, int vocab)
{
	return (int32_t)(zb_splitmix64(seed + (i + 1) * 0x9e3779b97f4a7c15ull) % (uint64_t)vocab);
}

/* x[i] = bf16(zb_uniform_at(seed, i, lo, hi)) (rounding may reach hi). */
zb_status zb_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed, float lo, float hi,
			       zb_stream stream, zb_error *err);
/* x[i] = zb_uniform_at(seed, i, lo, hi). */
zb_status zb_fill_uniform_f32(float *x, size_t n, uint64_t seed, float lo, float hi,
			      zb_stream stream, zb_error *err);
/* ids[i] = zb_token_at(seed, i, vocab), in [0, vocab). */
zb_status zb_fill_tokens(int32_t *ids, size_t n, uint64_t seed, int vocab, zb_stream stream,
			 zb_error *err);

/* ---- norms ----------------------------------------------------------------------- */

/* LayerNorm over each row of x [rows, cols]:
 *   out = (x - mean) * rstd * gain + bias,  rstd = 1 / sqrt(var + eps)  (biased var)
 * mean and rstd [rows] (fp32) are saved for the backward pass; either may be NULL
 * when no backward follows. bias may be NULL (no bias). out may alias x. */
zb_status zb_layernorm_fwd(uint16_t *out, float *mean, float *rstd, const uint16_t *x,
			   const uint16_t *gain, const uint16_t *bias, int rows, int cols, float eps,
			   zb_stream stream, zb_error *err);

/* LayerNorm backward, with xhat = (x - mean) * rstd from the forward's mean and rstd:
 *   dx     = rstd * (dout*gain - mean_c(dout*gain) - xhat * mean_c(dout*gain*xhat))
 *   dgain += sum_rows(dout * xhat)    dbias += sum_rows(dout)      (fp32 [cols])
 * dgain or dbias may be NULL (not wanted). dx may alias dout. */
zb_status zb_layernorm_bwd(uint16_t *dx, float *dgain, float *dbias, const uint16_t *dout,
			   const uint16_t *x, const uint16_t *gain, const float *mean,
			   const float *rstd, int rows, int cols, zb_stream stream, zb_error *err);

/* RMSNorm: out = x * rstd * gain, rstd = 1 / sqrt(mean_c(x^2) + eps); rstd may be
 * NULL. out may alias x. */
zb_status zb_rmsnorm_fwd(uint16_t *out, float *rstd, const uint16_t *x, const uint16_t *gain,
			 int rows, int cols, float eps, zb_stream stream, zb_error *err);

/* RMSNorm backward, xhat = x * rstd:
 *   dx = rstd * (dout*gain - xhat * mean_c(dout*gain*xhat));  dgain += sum_rows(dout*xhat)
 * dgain may be NULL. dx may alias dout. */
zb_status zb_rmsnorm_bwd(uint16_t *dx, float *dgain, const uint16_t *dout, const uint16_t *x,
			 const uint16_t *gain, const float *rstd, int rows, int cols,
			 zb_stream stream, zb_error *err);

/* ---- activations ----------------------------------------------------------------- */

/* GeLU, tanh approximation: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * n elements; out may alias x. */
zb_status zb_gelu_fwd(uint16_t *out, const uint16_t *x, size_t n, zb_stream stream,
		      zb_error *err);
/* dx = dout * gelu'(x); dx may alias dout. */
zb_status zb_gelu_bwd(uint16_t *dx, const uint16_t *dout, const uint16_t *x, size_t n,
		      zb_stream stream, zb_error *err);

/* SwiGLU: in [rows, 2*ffn] holds gate | up per row; out [rows, ffn]:
 *   out = silu(gate) * up,  silu(g) = g / (1 + exp(-g)).  No aliasing. */
zb_status zb_swiglu_fwd(uint16_t *out, const uint16_t *in, int rows, int ffn, zb_stream stream,
			zb_error *err);
/* din [rows, 2*ffn]: dgate = dout * up * silu'(gate), dup = dout * silu(gate). No aliasing. */
zb_status zb_swiglu_bwd(uint16_t *din, const uint16_t *dout, const uint16_t *in, int rows,
			int ffn, zb_stream stream, zb_error *err);

/* ---- attention softmax ----------------------------------------------------------- */

/* In place over scores [bh, s, s] (bh = micro-batch x heads; row i of a matrix is
 * query position i): p = softmax(scale * x) over the allowed keys, j <= i when
 * causal, all j otherwise; masked entries are written 0 and never read, so they may
 * hold anything (NaN included) before the call. Max-subtracted, fp32 exp and sums. */
zb_status zb_softmax_fwd(uint16_t *scores, int bh, int s, float scale, int causal,
			 zb_stream stream, zb_error *err);
/* dx = scale * p * (dp - sum_j p_j dp_j) over the allowed keys, 0 where masked.
 * p is the forward's output; dx may alias dp. */
zb_status zb_softmax_bwd(uint16_t *dx, const uint16_t *dp, const uint16_t *p, int bh, int s,
			 float scale, int causal, zb_stream stream, zb_error *err);

/* ---- residual, casts, gradient accumulation -------------------------------------- */

/* out = a + b over n elements (16-byte vector loads); out may alias a or b. */
zb_status zb_residual_add(uint16_t *out, const uint16_t *a, const uint16_t *b, size_t n,
			  zb_stream stream, zb_error *err);
/* acc += g in fp32 (acc fp32, g bf16). */
zb_status zb_grad_acc_f32(float *acc, const uint16_t *g, size_t n, zb_stream stream,
			  zb_error *err);
/* acc = bf16(acc + g): one rounding per accumulation. */
zb_status zb_grad_acc_bf16(uint16_t *acc, const uint16_t *g, size_t n, zb_stream stream,
			   zb_error *err);
/* out = bf16(in) (round to nearest even) and out = f32(in) (exact). */
zb_status zb_cast_f32_bf16(uint16_t *out, const float *in, size_t n, zb_stream stream,
			   zb_error *err);
zb_status zb_cast_bf16_f32(float *out, const uint16_t *in, size_t n, zb_stream stream,
			   zb_error *err);

/* ---- embedding ------------------------------------------------------------------- */

/* out[r, :] = wte[ids[r], :] (+ wpe[r % seq, :] when wpe is not NULL), out [rows, cols],
 * wte [vocab, cols], wpe [seq, cols]. An id outside [0, vocab) gives a row of zeros
 * (plus the position row). */
zb_status zb_embed_fwd(uint16_t *out, const int32_t *ids, const uint16_t *wte,
		       const uint16_t *wpe, int rows, int seq, int cols, int vocab,
		       zb_stream stream, zb_error *err);
/* dwte[ids[r], :] += dout[r, :] and dwpe[r % seq, :] += dout[r, :] (dwpe may be NULL),
 * scatter-added with atomics; ids outside [0, vocab) are skipped. The bf16 variant
 * rounds after every addition (bf16 atomics), so it is coarser than the f32 one. */
zb_status zb_embed_bwd_f32(float *dwte, float *dwpe, const int32_t *ids, const uint16_t *dout,
			   int rows, int seq, int cols, int vocab, zb_stream stream, zb_error *err);
zb_status zb_embed_bwd_bf16(uint16_t *dwte, uint16_t *dwpe, const int32_t *ids,
			    const uint16_t *dout, int rows, int seq, int cols, int vocab,
			    zb_stream stream, zb_error *err);

/* ---- loss ------------------------------------------------------------------------ */

/* Softmax cross-entropy over logits [rows, vocab] with targets [rows], numerically
 * stable (online max and sum in fp32, one read pass and one write pass per row):
 *   losses[r] = log(sum_j exp(x_rj)) - x_r,target                      (fp32 [rows])
 *   *loss_mean = mean of losses over rows with a valid target          (fp32, device)
 *   dlogits[r, j] = grad_scale * (softmax(x_r)_j - [j == target])      (bf16)
 * A target outside [0, vocab) (-1 for padding) marks the row ignored: loss 0,
 * dlogits 0, left out of the mean. grad_scale is typically 1 / (valid rows * gas).
 * dlogits may alias logits (written in place) or be NULL (loss only); loss_mean
 * may be NULL. losses is required (it is the scratch of the mean). */
zb_status zb_cross_entropy(uint16_t *dlogits, float *losses, float *loss_mean,
			   const uint16_t *logits, const int32_t *targets, int rows, int vocab,
			   float grad_scale, zb_stream stream, zb_error *err);

/* ---- bandwidth ------------------------------------------------------------------- */

/* dst = src, bytes bytes, by a 16-byte-vector grid-stride kernel (any alignment,
 * no overlap): a reference point for memory-bound kernels next to cudaMemcpyAsync. */
zb_status zb_copy_kernel(void *dst, const void *src, size_t bytes, zb_stream stream,
			 zb_error *err);

/* ---- micro-benchmarks (for `zbench bench`) --------------------------------------- */

/* Each allocates its buffers on the current device, fills them with random data,
 * warms up with 3 untimed runs, times `repeats` runs one by one with CUDA events on a
 * private stream, reports the median, frees everything and returns. */

/* GPU Adam (exec/gpu_adam.h, bf16 gradients and parameters) over `params`
 * parameters: Gparam/s (1e9 parameters per second); memory traffic is
 * ZB_ADAM_BYTES_PER_PARAM (28) bytes per parameter. Needs 16 bytes of device memory
 * per parameter; use more than ~10M parameters so the data does not fit in L2. */
zb_status zb_bench_gpu_adam(int64_t params, int repeats, double *gparam_per_s, zb_error *err);

/* One bf16 GEMM, C[m x n] = A[m x k] B[k x n] (column-major, no transposes, fp32
 * accumulation, exec/gemm.h): TFLOP/s counted as 2 m n k per run. */
zb_status zb_bench_gemm(int m, int n, int k, int repeats, double *tflops, zb_error *err);

/* Device-to-device copy with zb_copy_kernel: GB/s counted as 2 x bytes (read + write). */
zb_status zb_bench_copy(size_t bytes, int repeats, double *gbytes_per_s, zb_error *err);

#ifdef __cplusplus
}
#endif

#endif
