/*
 * test_event_queue.c - the simulator's event heap: events come out in time order,
 * equal times in insertion order (so a simulation is deterministic), a long random
 * mix of pushes and pops agrees with a sorted reference, and the heap grows past
 * its initial capacity without losing anything.
 */
#include "tests/harness.h"

#include "sim/event_queue.h"

static void test_pops_in_time_order(void **state)
{
	zb_event_queue q;
	zb_eq_init(&q, 4);
	static const double times[] = { 5.0, 1.0, 3.0, 0.5, 4.0, 2.0, 0.0, 6.5 };
	size_t n = sizeof times / sizeof times[0];
	for (size_t i = 0; i < n; i++)
		zb_eq_push(&q, times[i], (uint32_t)i, 0);
	assert_int_equal(zb_eq_size(&q), n);
	assert_non_null(zb_eq_peek(&q));
	assert_true(zb_eq_peek(&q)->time == 0.0);
	double last = -1;
	for (size_t i = 0; i < n; i++) {
		const zb_event *top = zb_eq_peek(&q);
		double peeked = top->time;
		zb_event e = zb_eq_pop(&q);
		assert_true(e.time == peeked);
		assert_true(e.time >= last);
		assert_true(times[e.task] == e.time); /* the payload travels with its time */
		last = e.time;
	}
	assert_int_equal(zb_eq_size(&q), 0);
	assert_null(zb_eq_peek(&q));
	zb_eq_free(&q);
}

static void test_ties_in_insertion_order(void **state)
{
	zb_event_queue q;
	zb_eq_init(&q, 2);
	/* interleave two groups of equal times so that heap reshuffles happen */
	for (uint32_t i = 0; i < 50; i++) {
		zb_eq_push(&q, 2.0, i, i);
		zb_eq_push(&q, 1.0, 100 + i, i);
	}
	for (uint32_t i = 0; i < 50; i++) {
		zb_event e = zb_eq_pop(&q);
		assert_true(e.time == 1.0);
		assert_int_equal(e.task, 100 + i);
		assert_int_equal(e.version, i);
	}
	uint64_t last_seq = 0;
	for (uint32_t i = 0; i < 50; i++) {
		zb_event e = zb_eq_pop(&q);
		assert_true(e.time == 2.0);
		assert_int_equal(e.task, i);
		if (i)
			assert_true(e.seq > last_seq);
		last_seq = e.seq;
	}
	assert_int_equal(zb_eq_size(&q), 0);
	zb_eq_free(&q);
}

/* Sequence numbers keep increasing after pops, so a tie with an event pushed later
 * still goes to the earlier one. */
static void test_ties_across_pops(void **state)
{
	zb_event_queue q;
	zb_eq_init(&q, 0);
	zb_eq_push(&q, 1.0, 1, 0);
	zb_eq_push(&q, 0.5, 2, 0);
	assert_int_equal(zb_eq_pop(&q).task, 2);
	zb_eq_push(&q, 1.0, 3, 0);
	zb_eq_push(&q, 1.0, 4, 0);
	assert_int_equal(zb_eq_pop(&q).task, 1);
	assert_int_equal(zb_eq_pop(&q).task, 3);
	assert_int_equal(zb_eq_pop(&q).task, 4);
	zb_eq_free(&q);
}

/* ---- random mix against a sorted reference ------------------------------- */

typedef struct ref_event {
	double time;
	uint64_t seq;
	uint32_t task;
} ref_event;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
	/* xorshift64*: deterministic across platforms */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* Pop the reference's smallest (time, seq) by linear search. */
static ref_event ref_pop(ref_event *r, size_t *n)
{
	size_t best = 0;
	for (size_t i = 1; i < *n; i++)
		if (r[i].time < r[best].time || (r[i].time == r[best].time && r[i].seq < r[best].seq))
			best = i;
	ref_event e = r[best];
	r[best] = r[--*n];
	return e;
}

static void test_random_against_reference(void **state)
{
	enum { OPS = 20000, MAXN = OPS };
	ref_event *ref = malloc(MAXN * sizeof *ref);
	assert_non_null(ref);
	size_t nref = 0;
	uint64_t seq = 0;
	zb_event_queue q;
	zb_eq_init(&q, 8);
	double now = 0;
	for (int op = 0; op < OPS; op++) {
		int push = nref == 0 || rng() % 100 < 55;
		if (push) {
			/* times on a coarse grid so that ties are frequent; never in the past,
			 * like the simulator's events */
			double t = now + (double)(rng() % 16) * 0.25;
			uint32_t task = (uint32_t)(rng() & 0xffffff);
			zb_eq_push(&q, t, task, (uint32_t)op);
			ref[nref++] = (ref_event){ t, seq++, task };
		} else {
			zb_event got = zb_eq_pop(&q);
			ref_event want = ref_pop(ref, &nref);
			assert_true(got.time == want.time);
			assert_int_equal(got.task, want.task);
			assert_int_equal(got.seq, want.seq);
			now = got.time;
		}
		assert_int_equal(zb_eq_size(&q), nref);
	}
	while (nref) {
		zb_event got = zb_eq_pop(&q);
		ref_event want = ref_pop(ref, &nref);
		assert_true(got.time == want.time);
		assert_int_equal(got.task, want.task);
	}
	assert_int_equal(zb_eq_size(&q), 0);
	zb_eq_free(&q);
	free(ref);
}

static void test_growth_beyond_capacity(void **state)
{
	zb_event_queue q;
	zb_eq_init(&q, 1);
	enum { N = 10000 };
	/* descending times: every push sifts to the root */
	for (uint32_t i = 0; i < N; i++)
		zb_eq_push(&q, (double)(N - i), i, i);
	assert_int_equal(zb_eq_size(&q), N);
	assert_true(q.cap >= N);
	for (uint32_t i = 0; i < N; i++) {
		zb_event e = zb_eq_pop(&q);
		assert_true(e.time == (double)(i + 1));
		assert_int_equal(e.task, N - 1 - i);
		assert_int_equal(e.version, N - 1 - i);
	}
	assert_int_equal(zb_eq_size(&q), 0);
	/* reusable after being emptied */
	zb_eq_push(&q, 3.0, 7, 1);
	assert_int_equal(zb_eq_pop(&q).task, 7);
	zb_eq_free(&q);
	assert_null(q.heap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pops_in_time_order),
		cmocka_unit_test(test_ties_in_insertion_order),
		cmocka_unit_test(test_ties_across_pops),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_growth_beyond_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
