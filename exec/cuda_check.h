/*
 * cuda_check.h - check macros for the CUDA runtime and cuBLAS / cuBLASLt that turn
 * a failed call into a zb_status and a one-line zb_error naming the call, the
 * library's own error string and file:line (llm.c's cudaCheck, but returning up
 * the stack the way nccl-tests does instead of exiting).
 *
 *   ZB_CUDA_TRY(err, cudaMemcpy(...));            returns from the enclosing function
 *   ZB_CUDA_GOTO(st, err, cudaMemcpy(...), out);  sets st and jumps to a cleanup label
 *   ZB_CUDA_MALLOC(err, &p, bytes);               cudaMalloc; out of memory -> ZB_E_NOMEM
 *   ZB_CUDA_LAUNCHED(err, "layernorm_fwd");       after a <<<>>> launch: bad configuration
 *   ZB_CUBLAS_TRY(err, cublasLtMatmul(...));      cuBLAS and cuBLASLt (one status type)
 *
 * Messages read "cudaMemcpy(d, h, n, k) failed: invalid argument (cudaErrorInvalidValue)
 * at exec/gemm_cuda.c:120". Out of device memory (cudaErrorMemoryAllocation,
 * CUBLAS_STATUS_ALLOC_FAILED) maps to ZB_E_NOMEM, anything else to ZB_E_CUDA.
 *
 * Only for files built with nvcc present (*.cu, *_cuda.c, tests/gpu/); the header is
 * plain C and C++ and needs -I<cuda>/include. A failed runtime call is cleared with
 * cudaGetLastError() so that the next, unrelated check does not report it again; a
 * sticky error (a kernel fault) cannot be cleared and every later call reports it.
 */
#ifndef ZB_CUDA_CHECK_H
#define ZB_CUDA_CHECK_H

#include <stddef.h>

#include <cuda_runtime_api.h>
#include <cublas_api.h>

#ifdef __cplusplus
extern "C" { /* zb_fail and friends are C functions, also seen from .cu files */
#endif
#include "common/error.h"
#ifdef __cplusplus
}
#endif

/* Long call texts are cut so that the error string and file:line always fit. */
#define ZB_CHECK_CALL_CHARS 200

static inline zb_status zb_cuda_fail_at(zb_error *err, cudaError_t e, const char *call,
					const char *file, int line)
{
	zb_status st = e == cudaErrorMemoryAllocation ? ZB_E_NOMEM : ZB_E_CUDA;
	(void)cudaGetLastError(); /* clear a non-sticky error; see the header comment */
	if (st == ZB_E_NOMEM)
		return zb_fail(err, st, "cuda out of memory in %.*s at %s:%d", ZB_CHECK_CALL_CHARS,
			       call, file, line);
	return zb_fail(err, st, "%.*s failed: %s (%s) at %s:%d", ZB_CHECK_CALL_CHARS, call,
		       cudaGetErrorString(e), cudaGetErrorName(e), file, line);
}

static inline zb_status zb_cublas_fail_at(zb_error *err, cublasStatus_t s, const char *call,
					  const char *file, int line)
{
	zb_status st = s == CUBLAS_STATUS_ALLOC_FAILED ? ZB_E_NOMEM : ZB_E_CUDA;
	return zb_fail(err, st, "%.*s failed: %s (%s) at %s:%d", ZB_CHECK_CALL_CHARS, call,
		       cublasGetStatusString(s), cublasGetStatusName(s), file, line);
}

/* cudaMalloc that says how much it wanted and how much was free. */
static inline zb_status zb_cuda_malloc_at(zb_error *err, void **p, size_t bytes, const char *file,
					  int line)
{
	size_t free_b = 0, total_b = 0;
	cudaError_t e = cudaMalloc(p, bytes);
	if (e == cudaSuccess)
		return ZB_OK;
	*p = NULL;
	if (e != cudaErrorMemoryAllocation)
		return zb_cuda_fail_at(err, e, "cudaMalloc", file, line);
	(void)cudaGetLastError();
	if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
		(void)cudaGetLastError();
		return zb_fail(err, ZB_E_NOMEM, "cuda out of memory allocating %zu bytes at %s:%d",
			       bytes, file, line);
	}
	return zb_fail(err, ZB_E_NOMEM,
		       "cuda out of memory allocating %zu bytes (%.2f GiB free of %.2f GiB) at %s:%d",
		       bytes, free_b / 1073741824.0, total_b / 1073741824.0, file, line);
}

/* After a kernel launch: reports a bad launch configuration or an earlier sticky
 * fault under the kernel's name. Asynchronous faults surface at the next sync. */
static inline zb_status zb_cuda_launched_at(zb_error *err, const char *kernel, const char *file,
					    int line)
{
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess)
		return ZB_OK;
	return zb_fail(err, ZB_E_CUDA, "kernel launch %s failed: %s (%s) at %s:%d", kernel,
		       cudaGetErrorString(e), cudaGetErrorName(e), file, line);
}

#define ZB_CUDA_TRY(err, call)                                                          \
	do {                                                                            \
		cudaError_t zb_ce_ = (call);                                            \
		if (zb_ce_ != cudaSuccess)                                              \
			return zb_cuda_fail_at((err), zb_ce_, #call, __FILE__, __LINE__); \
	} while (0)

#define ZB_CUDA_GOTO(st, err, call, label)                                              \
	do {                                                                            \
		cudaError_t zb_ce_ = (call);                                            \
		if (zb_ce_ != cudaSuccess) {                                            \
			(st) = zb_cuda_fail_at((err), zb_ce_, #call, __FILE__, __LINE__); \
			goto label;                                                     \
		}                                                                       \
	} while (0)

#define ZB_CUBLAS_TRY(err, call)                                                          \
	do {                                                                              \
		cublasStatus_t zb_bs_ = (call);                                           \
		if (zb_bs_ != CUBLAS_STATUS_SUCCESS)                                      \
			return zb_cublas_fail_at((err), zb_bs_, #call, __FILE__, __LINE__); \
	} while (0)

#define ZB_CUBLAS_GOTO(st, err, call, label)                                              \
	do {                                                                              \
		cublasStatus_t zb_bs_ = (call);                                           \
		if (zb_bs_ != CUBLAS_STATUS_SUCCESS) {                                    \
			(st) = zb_cublas_fail_at((err), zb_bs_, #call, __FILE__, __LINE__); \
			goto label;                                                       \
		}                                                                         \
	} while (0)

/* ptr: address of any pointer variable (void ** is taken through a cast). */
#define ZB_CUDA_MALLOC(err, ptr, bytes)                                                   \
	do {                                                                              \
		zb_status zb_ms_ =                                                        \
			zb_cuda_malloc_at((err), (void **)(ptr), (bytes), __FILE__, __LINE__); \
		if (zb_ms_ != ZB_OK)                                                      \
			return zb_ms_;                                                    \
	} while (0)

#define ZB_CUDA_MALLOC_GOTO(st, err, ptr, bytes, label)                                   \
	do {                                                                              \
		(st) = zb_cuda_malloc_at((err), (void **)(ptr), (bytes), __FILE__, __LINE__); \
		if ((st) != ZB_OK)                                                        \
			goto label;                                                       \
	} while (0)

#define ZB_CUDA_LAUNCHED(err, kernel)                                                     \
	do {                                                                              \
		zb_status zb_ls_ = zb_cuda_launched_at((err), (kernel), __FILE__, __LINE__); \
		if (zb_ls_ != ZB_OK)                                                      \
			return zb_ls_;                                                    \
	} while (0)

#endif
