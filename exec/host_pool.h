/*
 * host_pool.h - a process-wide pool of host blocks (the executor's pinned
 * buffers) kept between the configurations of one process.
 *
 * Why: `zbench validate` runs ~44 configurations in one process and each pinned
 * its host buffers (cudaMallocHost, ~4 GB/s: ~3 s for a 12 GB configuration) and
 * unpinned them at its end. The pool keeps them: the next configuration of the
 * same or a similar size gets them back at no cost, and the kernel does not churn
 * gigabytes of pages between configurations (a suspect in CPU Adam's drift during
 * a suite, 5-7 % between configurations minutes apart).
 *
 * Off by default: get and put go straight to the allocator (one `zbench run`).
 * A command that runs many configurations turns it on, and off at its end, which
 * gives the idle blocks back.
 *
 * Which block: the smallest idle block of at least the request and at most twice
 * it (a 12 GB block is not spent on a 1 GB request). A miss allocates; before it,
 * the idle blocks smaller than the request are freed (none could ever serve it).
 * When the allocator fails, every idle block is freed and the allocation tried once
 * more: the memory the pool holds is what is missing. Blocks larger than twice the
 * request stay idle until then (or until drain).
 *
 * The allocator is injected (plain C, no CUDA here, so it is testable without a
 * GPU): exec/buffers_cuda.c registers cudaMallocHost/cudaFreeHost wrappers. Until
 * one is set, malloc/free. Thread-safe (one mutex; the allocator runs outside it,
 * so two ranks pin at the same time). With unified addressing (every 64-bit CUDA
 * process) a pinned block serves every device, so a rank may get another rank's.
 */
#ifndef ZB_HOST_POOL_H
#define ZB_HOST_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 and *p set on success, else the allocator's own error code (a cudaError_t for
 * cudaMallocHost), which get passes back to its caller. */
typedef int (*zb_host_alloc_fn)(void **p, size_t bytes);
typedef void (*zb_host_free_fn)(void *p);

/* The allocator of every later block (NULL, NULL: malloc and free). The idle blocks
 * are freed with the previous one first; set it before any block is handed out. */
void zb_host_pool_set_allocator(zb_host_alloc_fn alloc, zb_host_free_fn free);

/* On: put keeps blocks for later gets. Off (the default): get and put go straight
 * to the allocator; turning it off frees the idle blocks, and a block handed out
 * while it was on is freed when it is put. */
void zb_host_pool_enable(int on);

/* A block of at least `bytes` in *p: an idle one that fits (pool on) or a new one.
 * Returns 0, or the allocator's error code (*p undefined). */
int zb_host_pool_get(void **p, size_t bytes);

/* Give back a block of zb_host_pool_get: idle (pool on) or freed (pool off). A
 * block the pool does not know is freed with the allocator's free; NULL is fine;
 * with the pool on, a block put twice is ignored the second time. */
void zb_host_pool_put(void *p);

/* Free every idle block (blocks handed out stay handed out). */
void zb_host_pool_drain(void);

/* Bytes of the idle blocks: memory a run may count as available, since a pinning
 * that fails frees them. */
double zb_host_pool_idle_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
