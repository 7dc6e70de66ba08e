/*
 * test_least_sure.c - which configuration validate --extra-s measures again
 * (validate/suite.h zb_suite_least_sure): the least sure mean among those with two rounds
 * or more, fewer than the most, whose extra round fits the time left.
 */
#include "tests/harness.h"

#include <math.h>

#include "validate/suite.h"

static void test_pick(void **state)
{
	(void)state;
	double se[] = { 0.5, 4.0, 2.5, NAN, 9.0, 3.0 };
	int nround[] = { 2, 2, 3, 2, 1, 2 };
	double est[] = { 2, 2, 2, 2, 2, 10 };
	/* 4 has one round (no spread yet), 3 no standard error: the largest of the rest */
	assert_int_equal(zb_suite_least_sure(se, nround, est, 6, 1.0, 8, 100), 1);
	/* 1 at the most rounds: the next */
	nround[1] = 8;
	assert_int_equal(zb_suite_least_sure(se, nround, est, 6, 1.0, 8, 100), 5);
	/* 5's round does not fit the time left */
	assert_int_equal(zb_suite_least_sure(se, nround, est, 6, 1.0, 8, 5), 2);
	/* every mean sure enough, or nothing fits: none */
	assert_int_equal(zb_suite_least_sure(se, nround, est, 6, 3.5, 8, 100), -1);
	assert_int_equal(zb_suite_least_sure(se, nround, est, 6, 1.0, 8, 1), -1);
	/* ties: the first */
	double tie[] = { 2, 2 };
	int two[] = { 2, 2 };
	assert_int_equal(zb_suite_least_sure(tie, two, est, 2, 1.0, 8, 100), 0);
	/* left out (nround 0) */
	two[0] = 0;
	assert_int_equal(zb_suite_least_sure(tie, two, est, 2, 1.0, 8, 100), 1);
	assert_int_equal(zb_suite_least_sure(tie, two, est, 0, 1.0, 8, 100), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
