/*
 * host_pool.c - pinned host blocks kept between configurations; see host_pool.h.
 *
 * The pool is a list of the blocks it handed out or holds idle (a run has six
 * host buffers per rank, so the list stays short and a linear scan is fine).
 * The allocator is never called with the mutex held: pinning 12 GB takes ~3 s,
 * and the other rank's get must not wait for it. Blocks to free are unlinked
 * under the mutex into a private list and freed after it is released.
 */
#include "exec/host_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct block {
	void *p;
	size_t bytes;
	int idle;
	struct block *next;
} block;

static int sys_alloc(void **p, size_t bytes)
{
	*p = malloc(bytes ? bytes : 1);
	return *p ? 0 : ENOMEM;
}

static void sys_free(void *p) { free(p); }

static struct {
	pthread_mutex_t mu;
	int on;
	zb_host_alloc_fn alloc;
	zb_host_free_fn free;
	block *list;       /* handed out (idle == 0) and idle blocks */
	double idle_bytes;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER, .alloc = sys_alloc, .free = sys_free };

/* Under the mutex: unlink the idle blocks smaller than `below` (SIZE_MAX: all of
 * them) and return them as a list for release(). */
static block *take_idle(size_t below)
{
	block *taken = NULL;
	for (block **b = &pool.list; *b;) {
		block *x = *b;
		if (x->idle && (below == SIZE_MAX || x->bytes < below)) {
			*b = x->next;
			pool.idle_bytes -= (double)x->bytes;
			x->next = taken;
			taken = x;
		} else
			b = &x->next;
	}
	return taken;
}

/* Outside the mutex: free the blocks of a take_idle() list with `fr`; how many. */
static int release(block *taken, zb_host_free_fn fr)
{
	int n = 0;
	while (taken) {
		block *next = taken->next;
		fr(taken->p);
		free(taken);
		taken = next;
		n++;
	}
	return n;
}

void zb_host_pool_set_allocator(zb_host_alloc_fn alloc, zb_host_free_fn fr)
{
	pthread_mutex_lock(&pool.mu);
	zb_host_free_fn old = pool.free;
	block *taken = take_idle(SIZE_MAX);
	pool.alloc = alloc ? alloc : sys_alloc;
	pool.free = fr ? fr : sys_free;
	pthread_mutex_unlock(&pool.mu);
	release(taken, old);
}

void zb_host_pool_enable(int on)
{
	pthread_mutex_lock(&pool.mu);
	pool.on = on != 0;
	block *taken = on ? NULL : take_idle(SIZE_MAX);
	zb_host_free_fn fr = pool.free;
	pthread_mutex_unlock(&pool.mu);
	release(taken, fr);
}

/* A new block handed out: remembered so that put can keep it. Without memory for
 * the record the block is simply not pooled (put frees it as unknown). */
static void track(void *p, size_t bytes)
{
	block *b = malloc(sizeof *b);
	if (!b)
		return;
	*b = (block){ .p = p, .bytes = bytes };
	pthread_mutex_lock(&pool.mu);
	b->next = pool.list;
	pool.list = b;
	pthread_mutex_unlock(&pool.mu);
}

int zb_host_pool_get(void **p, size_t bytes)
{
	pthread_mutex_lock(&pool.mu);
	zb_host_alloc_fn alloc = pool.alloc;
	zb_host_free_fn fr = pool.free;
	if (!pool.on) {
		pthread_mutex_unlock(&pool.mu);
		return alloc(p, bytes);
	}
	block *best = NULL;
	for (block *b = pool.list; b; b = b->next)
		if (b->idle && b->bytes >= bytes && b->bytes - bytes <= bytes && (!best || b->bytes < best->bytes))
			best = b;
	if (best) {
		best->idle = 0;
		pool.idle_bytes -= (double)best->bytes;
		*p = best->p;
		pthread_mutex_unlock(&pool.mu);
		return 0;
	}
	/* A miss. The idle blocks smaller than this request cannot serve it; kept, they
	 * would hold pinned memory that this block and the host's CPU side need, and
	 * over a sweep of growing configurations the pool would keep one set of buffers
	 * per size it passed. So they go before the allocation. */
	block *small = take_idle(bytes);
	pthread_mutex_unlock(&pool.mu);
	release(small, fr);
	int rc = alloc(p, bytes);
	if (rc) {
		/* out of (pinnable) memory: what the pool holds idle is what is missing */
		pthread_mutex_lock(&pool.mu);
		block *all = take_idle(SIZE_MAX);
		pthread_mutex_unlock(&pool.mu);
		if (release(all, fr))
			rc = alloc(p, bytes);
	}
	if (!rc)
		track(*p, bytes);
	return rc;
}

void zb_host_pool_put(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&pool.mu);
	zb_host_free_fn fr = pool.free;
	block **b = &pool.list;
	while (*b && (*b)->p != p)
		b = &(*b)->next;
	block *x = *b;
	if (x && x->idle) { /* put twice: freeing it would free a block the pool may hand out */
		pthread_mutex_unlock(&pool.mu);
		return;
	}
	if (x && pool.on) {
		x->idle = 1;
		pool.idle_bytes += (double)x->bytes;
		pthread_mutex_unlock(&pool.mu);
		return;
	}
	if (x) /* handed out while the pool was on, back after it was turned off */
		*b = x->next;
	pthread_mutex_unlock(&pool.mu);
	free(x);
	fr(p);
}

void zb_host_pool_drain(void)
{
	pthread_mutex_lock(&pool.mu);
	block *taken = take_idle(SIZE_MAX);
	zb_host_free_fn fr = pool.free;
	pthread_mutex_unlock(&pool.mu);
	release(taken, fr);
}

double zb_host_pool_idle_bytes(void)
{
	pthread_mutex_lock(&pool.mu);
	double n = pool.idle_bytes;
	pthread_mutex_unlock(&pool.mu);
	return n;
}
