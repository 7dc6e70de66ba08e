/*
 * test_validation.c - validate/validation.h without a GPU: the options a suite
 * decides (zb_validate_defaults), the plan (every configuration built, predicted and
 * estimated: the list and its JSON), and what is refused. The run itself needs the
 * GPU (tests/gpu/test_validate.c).
 */
#include "tests/harness.h"

#include <jansson.h>

#include "validate/validation.h"

static void test_defaults(void **state)
{
	(void)state;
	zb_error err = { 0 };
	zb_validate_opts o = ZB_VALIDATE_OPTS_INIT;
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK); /* full: validate's own */
	assert_int_equal(o.warmup, 2);
	assert_int_equal(o.steps, 3);
	assert_int_equal(o.rounds, 1);
	assert_int_equal(o.repeat, 0);
	assert_int_equal(o.max_steps, 64);
	assert_true(o.measure_s == 0 && o.extra_s == 0);

	o = (zb_validate_opts)ZB_VALIDATE_OPTS_INIT;
	o.suite = "fid"; /* the suite's measurement */
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK);
	assert_int_equal(o.warmup, 4);
	assert_int_equal(o.steps, 8);
	assert_int_equal(o.max_steps, 48);
	assert_int_equal(o.rounds, 2);
	assert_close(o.measure_s, 3, 0);
	assert_close(o.extra_s, 120, 0);

	o = (zb_validate_opts)ZB_VALIDATE_OPTS_INIT;
	o.suite = "fid";
	o.rounds = 1; /* what is given stands */
	o.steps = 5;
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK);
	assert_int_equal(o.rounds, 1);
	assert_int_equal(o.steps, 5);

	o = (zb_validate_opts)ZB_VALIDATE_OPTS_INIT;
	o.steps = 5;
	o.max_steps = 2;
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_E_INPUT);
	assert_string_equal(err.msg, "--max-steps 2 is below --steps 5");
}

/* The plan of the quick suite: its four configurations fit, each with a predicted
 * step and a cost; the list names them, the JSON has the same. */
static void test_plan_quick(void **state)
{
	(void)state;
	zb_error err = { 0 };
	zb_validate_opts o = ZB_VALIDATE_OPTS_INIT;
	o.suite = "quick";
	o.no_db = 1;
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK);
	char *text = NULL, *head = NULL;
	size_t n = 0, hn = 0;
	FILE *out = open_memstream(&text, &n), *hf = open_memstream(&head, &hn);
	zb_validation *v;
	assert_int_equal(zb_validation_plan(&o, out, stderr, &v, &err), ZB_OK);
	zb_validation_header(v, hf);
	zb_validation_list(v);
	json_t *j = zb_validation_plan_json(v);
	zb_validation_free(v);
	fclose(out);
	fclose(hf);
	assert_contains(head, "validate: suite quick (4 of 4 configurations), hw h200-machine (default), 2 warm-up + 3 "
			      "measured steps");
	assert_contains(text, "gpt2-medium/offload/r1/t8/mb2/s512/gas1");
	assert_contains(text, "speedup group 1 (reference)");
	assert_string_equal(json_string_value(json_object_get(j, "suite")), "quick");
	json_t *cfgs = json_object_get(j, "configs");
	assert_int_equal(json_array_size(cfgs), 4);
	double expected = 0;
	size_t i;
	json_t *c;
	json_array_foreach(cfgs, i, c)
	{
		assert_true(json_is_true(json_object_get(c, "fits")));
		assert_true(json_is_false(json_object_get(c, "executed")));
		assert_true(json_real_value(json_object_get(c, "predicted_step_s")) > 0);
		assert_true(json_is_null(json_object_get(c, "measured_step_s")));
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 3);
		double est = json_real_value(json_object_get(c, "estimate_s"));
		assert_true(est > 0);
		expected += est;
		assert_non_null(strstr(text, json_string_value(json_object_get(c, "key"))));
	}
	/* one round, no repeats, no extra time: the total is the configurations' */
	assert_close(json_real_value(json_object_get(j, "expected_s")), expected, 1e-9);
	json_decref(j);
	free(text);
	free(head);
}

static void test_refused(void **state)
{
	(void)state;
	zb_error err = { 0 };
	zb_validate_opts o = ZB_VALIDATE_OPTS_INIT;
	o.suite = "nosuch";
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK); /* the plan names it */
	zb_validation *v = (zb_validation *)&o; /* any value but NULL: the plan must clear it */
	assert_int_equal(zb_validation_plan(&o, stdout, stderr, &v, &err), ZB_E_INPUT);
	assert_null(v);
	assert_string_equal(err.msg, "unknown suite 'nosuch' (known: full, quick, fid, link, anchor, or a suite file: no "
				     "file 'nosuch')");
	o = (zb_validate_opts)ZB_VALIDATE_OPTS_INIT;
	o.suite = "quick";
	o.hw = "nosuch-machine";
	assert_int_equal(zb_validate_defaults(&o, &err), ZB_OK);
	assert_int_equal(zb_validation_plan(&o, stdout, stderr, &v, &err), ZB_E_INPUT);
	assert_contains(err.msg, "nosuch-machine");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_plan_quick),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
