/*
 * threadpool.c - pinned worker threads, a parallel-for over chunks taken from a
 * shared atomic counter, sleeping (not spinning) between runs. See threadpool.h.
 */
#include "exec/threadpool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZB_POOL_MAX_THREADS 4096
#define ZB_POOL_MAX_CPUS 8192 /* CPU numbers the affinity mask can name */
#define ZB_POOL_MIN_CHUNK 4096

typedef struct worker_arg {
	struct zb_pool *pool;
	int index;
} worker_arg;

struct zb_pool {
	int threads;
	pthread_t *tids;
	worker_arg *args;
	int *cpus; /* pinned CPU per worker, -1 if unpinned */
	int pinned;
	char pin_note[200];

	pthread_mutex_t run_lock; /* one run at a time */
	pthread_mutex_t lock;     /* guards everything below except next */
	pthread_cond_t wake;      /* workers: a new generation (or stop) */
	pthread_cond_t done;      /* caller: active reached 0 */
	uint64_t generation;
	int stop;
	int active;

	zb_pool_fn fn;
	void *ctx;
	int64_t n;
	int64_t chunk;
	/* First item of the next chunk to take. Its own cache line: every worker hits it
	 * once per chunk, and nothing else should bounce with it. */
	_Alignas(64) _Atomic int64_t next;
	_Alignas(64) zb_pool_span *spans;
};

static void *worker_main(void *p)
{
	worker_arg *arg = p;
	zb_pool *pool = arg->pool;
	const int w = arg->index;
	uint64_t seen = 0;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->stop && pool->generation == seen)
			pthread_cond_wait(&pool->wake, &pool->lock);
		if (pool->stop)
			break;
		seen = pool->generation;
		zb_pool_fn fn = pool->fn;
		void *ctx = pool->ctx;
		const int64_t n = pool->n, chunk = pool->chunk;
		pthread_mutex_unlock(&pool->lock);

		zb_pool_span span = {.start_ns = zb_now_ns()};
		for (;;) {
			int64_t b = atomic_fetch_add_explicit(&pool->next, chunk, memory_order_relaxed);
			if (b >= n)
				break;
			int64_t e = b + chunk < n ? b + chunk : n;
			fn(ctx, b, e, w);
			span.items += e - b;
			span.chunks++;
		}
		span.end_ns = span.chunks ? zb_now_ns() : span.start_ns;
		pool->spans[w] = span;

		/* The mutex orders the chunks' writes before the caller's return. */
		pthread_mutex_lock(&pool->lock);
		if (--pool->active == 0)
			pthread_cond_signal(&pool->done);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* First CPU listed in cpuN/topology/thread_siblings_list, or -1 if unreadable. */
static int first_sibling(int cpu)
{
	char path[96];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int first = -1;
	if (fscanf(f, "%d", &first) != 1)
		first = -1;
	fclose(f);
	return first;
}

/* The allowed CPUs, first hardware thread of each core first, then the others.
 * Returns how many (0 if the mask could not be read); *primaries: how many firsts. */
static int allowed_cpus(int **out, int *primaries)
{
	size_t setsize = CPU_ALLOC_SIZE(ZB_POOL_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(ZB_POOL_MAX_CPUS);
	*out = NULL;
	if (!set)
		return 0;
	CPU_ZERO_S(setsize, set);
	if (sched_getaffinity(0, setsize, set) != 0) {
		CPU_FREE(set);
		return 0;
	}
	int count = CPU_COUNT_S(setsize, set);
	int *order = zb_xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
	int k = 0;
	*primaries = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int c = 0; c < ZB_POOL_MAX_CPUS && k < count; c++) {
			if (!CPU_ISSET_S(c, setsize, set))
				continue;
			int first = first_sibling(c);
			int primary = first < 0 || first == c || !CPU_ISSET_S(first, setsize, set);
			if (primary == (pass == 0))
				order[k++] = c;
		}
		if (pass == 0)
			*primaries = k;
	}
	CPU_FREE(set);
	*out = order;
	return k;
}

/* Keep the first reason pinning went wrong. */
__attribute__((format(printf, 2, 3))) static void note_pin(zb_pool *pool, const char *fmt, ...)
{
	if (pool->pin_note[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pool->pin_note, sizeof pool->pin_note, fmt, ap);
	va_end(ap);
}

/* Keep slice `slice` of `slices` of the ordered CPUs: a contiguous share of the
 * first hardware threads, then the same share of the others (their siblings on
 * most machines). Returns how many are left in order[]. */
static int take_slice(int *order, int ncpu, int primaries, int slice, int slices)
{
	int k = 0, others = ncpu - primaries;
	for (int i = primaries * slice / slices; i < primaries * (slice + 1) / slices; i++)
		order[k++] = order[i];
	for (int i = others * slice / slices; i < others * (slice + 1) / slices; i++)
		order[k++] = order[primaries + i];
	return k;
}

zb_status zb_pool_create(int threads, zb_pool **out, zb_error *err)
{
	return zb_pool_create_slice(threads, 0, 1, out, err);
}

zb_status zb_pool_create_slice(int threads, int slice, int slices, zb_pool **out, zb_error *err)
{
	*out = NULL;
	int *order = NULL, primaries = 0;
	int ncpu = allowed_cpus(&order, &primaries);
	if (slices < 1 || slice < 0 || slice >= slices) {
		free(order);
		return zb_fail(err, ZB_E_INPUT, "cpu slice %d of %d out of range", slice, slices);
	}
	if (slices > 1 && ncpu > 0)
		ncpu = take_slice(order, ncpu, primaries, slice, slices);
	if (threads <= 0)
		threads = ncpu > 0 ? ncpu : 1;
	if (threads > ZB_POOL_MAX_THREADS) {
		free(order);
		return zb_fail(err, ZB_E_INPUT, "thread count %d out of range (1..%d)", threads,
			       ZB_POOL_MAX_THREADS);
	}

	zb_pool *pool = aligned_alloc(64, (sizeof *pool + 63) / 64 * 64);
	if (!pool) {
		free(order);
		return zb_fail(err, ZB_E_NOMEM, "cannot allocate a thread pool");
	}
	memset(pool, 0, sizeof *pool);
	pool->threads = threads;
	pool->tids = zb_xcalloc((size_t)threads, sizeof *pool->tids);
	pool->args = zb_xcalloc((size_t)threads, sizeof *pool->args);
	pool->cpus = zb_xcalloc((size_t)threads, sizeof *pool->cpus);
	pool->spans = zb_xcalloc((size_t)threads, sizeof *pool->spans);
	pthread_mutex_init(&pool->run_lock, NULL);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_cond_init(&pool->done, NULL);
	atomic_init(&pool->next, 0);
	if (ncpu == 0)
		note_pin(pool, "cannot read the allowed cpu set: workers run unpinned");
	else if (threads > ncpu)
		note_pin(pool, "%d workers on %d allowed cpus: some share a cpu", threads, ncpu);

	for (int i = 0; i < threads; i++) {
		pool->args[i] = (worker_arg){pool, i};
		pool->cpus[i] = -1;
		int rc = EINVAL;
		if (ncpu > 0) {
			/* Pin before the thread starts, so that everything it touches first is
			 * placed from its own core. */
			int cpu = order[i % ncpu];
			size_t setsize = CPU_ALLOC_SIZE(ZB_POOL_MAX_CPUS);
			cpu_set_t *set = CPU_ALLOC(ZB_POOL_MAX_CPUS);
			pthread_attr_t attr;
			if (set && pthread_attr_init(&attr) == 0) {
				CPU_ZERO_S(setsize, set);
				CPU_SET_S(cpu, setsize, set);
				rc = pthread_attr_setaffinity_np(&attr, setsize, set);
				if (rc == 0)
					rc = pthread_create(&pool->tids[i], &attr, worker_main, &pool->args[i]);
				pthread_attr_destroy(&attr);
			}
			CPU_FREE(set);
			if (rc == 0) {
				pool->cpus[i] = cpu;
				pool->pinned++;
			} else {
				note_pin(pool, "cannot pin worker %d to cpu %d (%s): running unpinned", i, cpu,
					 strerror(rc));
			}
		}
		if (rc != 0)
			rc = pthread_create(&pool->tids[i], NULL, worker_main, &pool->args[i]);
		if (rc != 0) {
			pool->threads = i; /* join the ones that started */
			zb_pool_destroy(pool);
			free(order);
			return zb_fail(err, ZB_E_NOMEM, "cannot start pool worker %d of %d: %s", i,
				       threads, strerror(rc));
		}
		char name[32];
		snprintf(name, sizeof name, "zb-pool-%d", i);
		name[15] = 0; /* the kernel keeps 15 characters */
		pthread_setname_np(pool->tids[i], name);
	}
	free(order);
	*out = pool;
	return ZB_OK;
}

void zb_pool_destroy(zb_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stop = 1;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->threads; i++)
		pthread_join(pool->tids[i], NULL);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->run_lock);
	free(pool->spans);
	free(pool->cpus);
	free(pool->args);
	free(pool->tids);
	free(pool);
}

int zb_pool_threads(const zb_pool *pool)
{
	return pool->threads;
}

int zb_pool_cpu(const zb_pool *pool, int worker)
{
	return worker >= 0 && worker < pool->threads ? pool->cpus[worker] : -1;
}

int zb_pool_pinned(const zb_pool *pool)
{
	return pool->pinned;
}

const char *zb_pool_pin_note(const zb_pool *pool)
{
	return pool->pin_note;
}

const zb_pool_span *zb_pool_spans(const zb_pool *pool)
{
	return pool->spans;
}

static int64_t round_up(int64_t x, int64_t a)
{
	return (x + a - 1) / a * a;
}

int64_t zb_pool_auto_chunk(const zb_pool *pool, int64_t n_items)
{
	const int64_t pieces = (int64_t)ZB_POOL_CHUNKS_PER_WORKER * pool->threads;
	int64_t per = (n_items + pieces - 1) / pieces;
	per = round_up(per, ZB_POOL_ALIGN);
	return per < ZB_POOL_MIN_CHUNK ? ZB_POOL_MIN_CHUNK : per;
}

void zb_pool_run(zb_pool *pool, zb_pool_fn fn, void *ctx, int64_t n_items, int64_t chunk)
{
	if (n_items <= 0)
		return;
	chunk = chunk <= 0 ? zb_pool_auto_chunk(pool, n_items) : round_up(chunk, ZB_POOL_ALIGN);
	pthread_mutex_lock(&pool->run_lock);
	pthread_mutex_lock(&pool->lock);
	pool->fn = fn;
	pool->ctx = ctx;
	pool->n = n_items;
	pool->chunk = chunk;
	atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
	pool->active = pool->threads;
	pool->generation++;
	pthread_cond_broadcast(&pool->wake);
	while (pool->active > 0)
		pthread_cond_wait(&pool->done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->run_lock);
}
