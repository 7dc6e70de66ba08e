/*
 * test_host_pool.c - the pinned host-block pool (exec/host_pool.h) over a
 * malloc-based fake allocator that counts its calls and the bytes it has out, and
 * fails past a cap (pinnable memory running out): off is a passthrough; on, blocks
 * come back for requests they fit (the smallest, never one over twice the
 * request), smaller idle blocks go on a miss, a failed allocation frees the idle
 * blocks and is tried again, drain and idle_bytes, unknown pointers, and two
 * threads at once with every block accounted for at the end.
 */
#include "tests/harness.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/host_pool.h"

/* ---- the fake allocator ------------------------------------------------------------ */

#define FAKE_FAIL 2       /* its error code (cudaErrorMemoryAllocation's value) */
#define HEADER 16         /* the block's size lives in front of it */

static struct {
	pthread_mutex_t mu;
	int allocs, frees, failures; /* calls that succeeded, frees, calls that failed */
	size_t live, cap;            /* bytes out; cap 0: no limit */
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int fake_alloc(void **p, size_t bytes)
{
	pthread_mutex_lock(&fake.mu);
	if (fake.cap && fake.live + bytes > fake.cap) {
		fake.failures++;
		pthread_mutex_unlock(&fake.mu);
		return FAKE_FAIL;
	}
	fake.allocs++;
	fake.live += bytes;
	pthread_mutex_unlock(&fake.mu);
	char *b = malloc(HEADER + bytes);
	assert_non_null(b);
	memcpy(b, &bytes, sizeof bytes);
	*p = b + HEADER;
	return 0;
}

static void fake_free(void *p)
{
	char *b = (char *)p - HEADER;
	size_t bytes;
	memcpy(&bytes, b, sizeof bytes);
	free(b);
	pthread_mutex_lock(&fake.mu);
	fake.frees++;
	fake.live -= bytes;
	pthread_mutex_unlock(&fake.mu);
}

/* A fresh pool and counters (turning it off frees what a failed test left idle). */
static int setup(void **state)
{
	(void)state;
	zb_host_pool_set_allocator(fake_alloc, fake_free);
	zb_host_pool_enable(0);
	pthread_mutex_lock(&fake.mu);
	fake.allocs = fake.frees = fake.failures = 0;
	fake.live = fake.cap = 0;
	pthread_mutex_unlock(&fake.mu);
	return 0;
}

/* The test put back every block: after a drain nothing is out or idle. */
static void assert_balanced(void)
{
	zb_host_pool_drain();
	assert_int_equal(fake.frees, fake.allocs);
	assert_int_equal(fake.live, 0);
	assert_true(zb_host_pool_idle_bytes() == 0);
}

static void *get(size_t bytes)
{
	void *p = NULL;
	assert_int_equal(zb_host_pool_get(&p, bytes), 0);
	assert_non_null(p);
	return p;
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_off_passthrough(void **state)
{
	(void)state;
	void *a = get(100), *b = get(100);
	assert_int_equal(fake.allocs, 2);
	zb_host_pool_put(a);
	assert_int_equal(fake.frees, 1); /* freed at once, not kept */
	assert_true(zb_host_pool_idle_bytes() == 0);
	void *c = get(100);
	assert_int_equal(fake.allocs, 3);
	zb_host_pool_put(b);
	zb_host_pool_put(c);
	assert_int_equal(fake.frees, 3);
	assert_balanced();
}

static void test_reuse_same_size(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *a = get(1000);
	zb_host_pool_put(a);
	assert_int_equal(fake.frees, 0);
	assert_true(zb_host_pool_idle_bytes() == 1000);
	void *b = get(1000);
	assert_ptr_equal(b, a);
	assert_int_equal(fake.allocs, 1);
	assert_true(zb_host_pool_idle_bytes() == 0);
	zb_host_pool_put(b);
	assert_balanced();
}

static void test_smallest_fitting(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *b300 = get(300), *b150 = get(150), *b120 = get(120);
	zb_host_pool_put(b300);
	zb_host_pool_put(b150);
	zb_host_pool_put(b120);
	assert_true(zb_host_pool_idle_bytes() == 570);
	void *x = get(100);
	assert_ptr_equal(x, b120);
	void *y = get(100);
	assert_ptr_equal(y, b150);
	assert_int_equal(fake.allocs, 3);
	assert_true(zb_host_pool_idle_bytes() == 300);
	zb_host_pool_put(x);
	zb_host_pool_put(y);
	assert_balanced();
}

static void test_over_twice_unused(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *big = get(201), *exact = get(200);
	zb_host_pool_put(big);
	zb_host_pool_put(exact);
	void *x = get(100); /* 200 is exactly twice: it fits */
	assert_ptr_equal(x, exact);
	void *y = get(100); /* 201 is over twice: a new block, 201 stays idle */
	assert_ptr_not_equal(y, big);
	assert_int_equal(fake.allocs, 3);
	assert_int_equal(fake.frees, 0);
	assert_true(zb_host_pool_idle_bytes() == 201);
	zb_host_pool_put(x);
	zb_host_pool_put(y);
	assert_balanced();
}

static void test_smaller_freed_on_miss(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *a = get(50), *b = get(80), *c = get(500), *d = get(90);
	zb_host_pool_put(a);
	zb_host_pool_put(b);
	zb_host_pool_put(c);
	assert_true(zb_host_pool_idle_bytes() == 630);
	void *x = get(100); /* nothing fits: 50 and 80 are freed, 500 (over twice) stays */
	assert_int_equal(fake.allocs, 5);
	assert_int_equal(fake.frees, 2);
	assert_int_equal(fake.live, 500 + 90 + 100);
	assert_true(zb_host_pool_idle_bytes() == 500);
	void *y = get(60); /* a miss again: 500 is over twice, the handed-out 90 is not touched */
	assert_int_equal(fake.frees, 2);
	zb_host_pool_put(x);
	zb_host_pool_put(y);
	zb_host_pool_put(d);
	assert_balanced();
}

static void test_failure_releases_and_retries(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	fake.cap = 1000;
	void *a = get(400), *b = get(500);
	zb_host_pool_put(a);
	zb_host_pool_put(b);
	/* 150: neither idle block fits (both over twice) nor is smaller; 900 + 150 > cap */
	void *x = get(150);
	assert_int_equal(fake.failures, 1);
	assert_int_equal(fake.frees, 2);
	assert_int_equal(fake.allocs, 3);
	assert_true(zb_host_pool_idle_bytes() == 0);
	/* nothing idle to give back: the allocator's code, and no second try */
	void *y = NULL;
	assert_int_equal(zb_host_pool_get(&y, 900), FAKE_FAIL);
	assert_int_equal(fake.failures, 2);
	zb_host_pool_put(x);
	assert_balanced();
}

static void test_drain_and_idle_bytes(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *a = get(100), *b = get(300), *c = get(700);
	zb_host_pool_put(a);
	zb_host_pool_put(b);
	assert_true(zb_host_pool_idle_bytes() == 400);
	zb_host_pool_put(b); /* twice: ignored, not freed, not counted again */
	assert_true(zb_host_pool_idle_bytes() == 400);
	assert_int_equal(fake.frees, 0);
	zb_host_pool_drain();
	assert_int_equal(fake.frees, 2);
	assert_true(zb_host_pool_idle_bytes() == 0);
	zb_host_pool_put(c); /* handed out before the drain: kept now */
	assert_int_equal(fake.frees, 2);
	assert_true(zb_host_pool_idle_bytes() == 700);
	zb_host_pool_put(NULL);
	assert_balanced();
}

static void test_unknown_pointer_freed(void **state)
{
	(void)state;
	void *raw = NULL;
	assert_int_equal(fake_alloc(&raw, 64), 0);
	zb_host_pool_enable(1);
	zb_host_pool_put(raw);
	assert_int_equal(fake.frees, 1);
	assert_true(zb_host_pool_idle_bytes() == 0);
	zb_host_pool_enable(0);
	void *off = get(32); /* got while off, put while on: unknown too */
	zb_host_pool_enable(1);
	zb_host_pool_put(off);
	assert_int_equal(fake.frees, 2);
	assert_true(zb_host_pool_idle_bytes() == 0);
	void *on = get(32); /* known: kept */
	zb_host_pool_put(on);
	assert_int_equal(fake.frees, 2);
	assert_true(zb_host_pool_idle_bytes() == 32);
	assert_balanced();
}

static void test_disable_frees(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	void *a = get(100), *b = get(200);
	zb_host_pool_put(a);
	zb_host_pool_enable(0); /* the idle one goes now, the handed-out one when it is put */
	assert_int_equal(fake.frees, 1);
	assert_true(zb_host_pool_idle_bytes() == 0);
	zb_host_pool_put(b);
	assert_int_equal(fake.frees, 2);
	assert_int_equal(fake.live, 0);
	assert_balanced();
}

/* ---- two threads ------------------------------------------------------------------- */

#define ROUNDS 200000

typedef struct worker {
	unsigned seed;
	int tag, got, clobbered, failed;
} worker;

/* Gets and puts of a few sizes; each block's ends get the thread's tag, checked
 * before it goes back, so a block handed to both threads at once shows. */
static void *work(void *arg)
{
	worker *w = arg;
	static const size_t sizes[] = { 64, 100, 128, 200, 256, 1000 };
	void *held[3] = { 0 };
	size_t held_bytes[3] = { 0 };
	for (int i = 0; i < ROUNDS; i++) {
		int k = (int)(rand_r(&w->seed) % 3);
		if (held[k]) {
			unsigned char *c = held[k];
			w->clobbered += c[0] != w->tag || c[held_bytes[k] - 1] != w->tag;
			zb_host_pool_put(held[k]);
			held[k] = NULL;
			continue;
		}
		size_t bytes = sizes[rand_r(&w->seed) % (sizeof sizes / sizeof sizes[0])];
		if (zb_host_pool_get(&held[k], bytes)) {
			held[k] = NULL;
			w->failed++;
			continue;
		}
		unsigned char *c = held[k];
		c[0] = c[bytes - 1] = (unsigned char)w->tag;
		held_bytes[k] = bytes;
		w->got++;
		if (i % 9973 == 0)
			zb_host_pool_drain();
	}
	for (int k = 0; k < 3; k++)
		zb_host_pool_put(held[k]);
	return NULL;
}

static void test_two_threads(void **state)
{
	(void)state;
	zb_host_pool_enable(1);
	fake.cap = 3000; /* tight: some gets fail over to releasing the idle blocks */
	worker w[2] = { { .seed = 1, .tag = 0xa5 }, { .seed = 2, .tag = 0x5a } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w[i].clobbered, 0);
		assert_true(w[i].got > ROUNDS / 4);
	}
	/* every block the fake handed out is idle now (none lost, none freed twice) */
	assert_true(zb_host_pool_idle_bytes() == (double)fake.live);
	assert_true(fake.allocs < w[0].got + w[1].got); /* and blocks were reused */
	assert_balanced();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_off_passthrough, setup),
		cmocka_unit_test_setup(test_reuse_same_size, setup),
		cmocka_unit_test_setup(test_smallest_fitting, setup),
		cmocka_unit_test_setup(test_over_twice_unused, setup),
		cmocka_unit_test_setup(test_smaller_freed_on_miss, setup),
		cmocka_unit_test_setup(test_failure_releases_and_retries, setup),
		cmocka_unit_test_setup(test_drain_and_idle_bytes, setup),
		cmocka_unit_test_setup(test_unknown_pointer_freed, setup),
		cmocka_unit_test_setup(test_disable_frees, setup),
		cmocka_unit_test_setup(test_two_threads, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
