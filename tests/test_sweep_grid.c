/*
 * test_sweep_grid.c - sim/sweep.h without the command: the grid of a sweep's axes
 * (hardware fastest, 'none' once whatever the ratios), its shards, and the rows
 * handed back in the grid's order on any number of threads, each with the text the
 * caller's formatter made on the worker's thread.
 */
#include "tests/harness.h"

#include "sim/predict.h"
#include "sim/sweep.h"

typedef struct seen {
	int n;
	char label[64][96];
	int formatted;
} seen;

static zb_status collect(void *ctx, const zb_sweep_row *row, zb_error *err)
{
	seen *s = ctx;
	assert_true(s->n < 64);
	snprintf(s->label[s->n++], sizeof s->label[0], "%s %s %.2f", row->cfg.hw.link.name,
		 zb_policy_name(row->cfg.policy.kind), row->cfg.policy.kind == ZB_POLICY_NONE ? 0 : row->cfg.policy.ratio);
	if (row->pred_json) {
		char want[64];
		snprintf(want, sizeof want, "step %.9g", row->res.step_time_s);
		assert_string_equal(row->pred_json, want);
		s->formatted++;
	}
	return ZB_OK;
}

static char *step_text(const zb_sweep_row *row)
{
	char *t = malloc(64);
	snprintf(t, 64, "step %.9g", row->res.step_time_s);
	return t;
}

static void inputs(zb_config_inputs *in)
{
	memset(in, 0, sizeof *in);
	in->value[ZB_AX_PCIE] = "gen3,gen4";
	in->value[ZB_AX_POLICY] = "dpu,none";
	in->value[ZB_AX_RATIO] = "0:1:0.5";
	in->value[ZB_AX_MODEL] = "gpt2";
	in->value[ZB_AX_STEPS] = "2";
}

static void run(const zb_sweep_grid *g, long long rows, int jobs, seen *s)
{
	zb_error err = { 0 };
	zb_sweep_opts so = { .jobs = jobs, .pred_json = step_text };
	long long done;
	memset(s, 0, sizeof *s);
	assert_int_equal(zb_sweep_run(g, rows, &so, collect, s, NULL, &done, &err), ZB_OK);
	assert_int_equal(done, rows);
	assert_int_equal(s->n, rows);
	assert_int_equal(s->formatted, rows);
}

static void test_grid_order_threads(void **state)
{
	(void)state;
	zb_config_inputs in;
	inputs(&in);
	zb_error err = { 0 };
	zb_sweep_grid g;
	assert_int_equal(zb_sweep_grid_init(&g, &in, 0, 0, 0, &err), ZB_OK);
	assert_int_equal(g.total, 2 * 2 * 3);
	assert_int_equal(g.hw_rows, 2);
	long long rows;
	zb_config first;
	assert_int_equal(zb_sweep_check(&g, &rows, &first, NULL, &err), ZB_OK);
	assert_int_equal(rows, 2 * 3 + 2); /* dpu at three ratios, none once, each on two links */
	seen one, many;
	run(&g, rows, 1, &one);
	/* the hardware varies fastest: the same schedule on both links, one after the other */
	assert_string_equal(one.label[0], "gen3 dpu 0.00");
	assert_string_equal(one.label[1], "gen4 dpu 0.00");
	assert_string_equal(one.label[2], "gen3 dpu 0.50");
	run(&g, rows, 3, &many);
	for (int i = 0; i < one.n; i++)
		assert_string_equal(one.label[i], many.label[i]);
	zb_sweep_grid_free(&g);
}

static void test_shards(void **state)
{
	(void)state;
	zb_config_inputs in;
	inputs(&in);
	zb_error err = { 0 };
	zb_sweep_grid all, a, b;
	assert_int_equal(zb_sweep_grid_init(&all, &in, 0, 0, 0, &err), ZB_OK);
	assert_int_equal(zb_sweep_grid_init(&a, &in, 1, 2, 0, &err), ZB_OK);
	assert_int_equal(zb_sweep_grid_init(&b, &in, 2, 2, 0, &err), ZB_OK);
	long long n, na, nb;
	assert_int_equal(zb_sweep_check(&all, &n, NULL, NULL, &err), ZB_OK);
	assert_int_equal(zb_sweep_check(&a, &na, NULL, NULL, &err), ZB_OK);
	assert_int_equal(zb_sweep_check(&b, &nb, NULL, NULL, &err), ZB_OK);
	seen sall, sa, sb;
	run(&all, n, 2, &sall);
	run(&a, na, 2, &sa);
	run(&b, nb, 2, &sb);
	assert_int_equal(sa.n + sb.n, sall.n); /* the shards, concatenated, are the sweep */
	for (int i = 0; i < sall.n; i++)
		assert_string_equal(sall.label[i], i < sa.n ? sa.label[i] : sb.label[i - sa.n]);
	zb_sweep_grid_free(&all);
	zb_sweep_grid_free(&a);
	zb_sweep_grid_free(&b);
}

static void test_refusals(void **state)
{
	(void)state;
	zb_config_inputs in;
	inputs(&in);
	zb_error err = { 0 };
	zb_sweep_grid g;
	in.value[ZB_AX_RATIO] = "0:1:0.0000001";
	assert_int_equal(zb_sweep_grid_init(&g, &in, 0, 0, 0, &err), ZB_E_INPUT);
	assert_contains(err.msg, "invalid range '0:1:0.0000001' for --ratio");
	inputs(&in);
	in.value[ZB_AX_PCIE] = "gen3,gen7";
	assert_int_equal(zb_sweep_grid_init(&g, &in, 0, 0, 0, &err), ZB_OK);
	long long rows;
	assert_int_equal(zb_sweep_check(&g, &rows, NULL, NULL, &err), ZB_E_INPUT); /* before anything runs */
	assert_contains(err.msg, "unknown pcie generation 'gen7'");
	zb_sweep_grid_free(&g);
}

/* DeepSpeed at long gas: a sweep's rows (zbench's schedule with DeepSpeed's beside it,
 * and DeepSpeed's with zbench's) take predict.h's shortcut, as predict does: the same
 * figures as zb_predict, to the bit. */
typedef struct longgas {
	int n;
	double step[8], alt[8];
	int alt_state[8];
} longgas;

static zb_status keep_steps(void *ctx, const zb_sweep_row *row, zb_error *err)
{
	longgas *l = ctx;
	assert_true(l->n < 8);
	l->step[l->n] = row->res.step_time_s;
	l->alt[l->n] = row->alt_res.step_time_s;
	l->alt_state[l->n++] = row->alt_state;
	return ZB_OK;
}

static double predicted(const char *framework)
{
	zb_config_inputs in;
	memset(&in, 0, sizeof in);
	in.value[ZB_AX_MODEL] = "gpt2";
	in.value[ZB_AX_POLICY] = "overlap";
	in.value[ZB_AX_RATIO] = "1";
	in.value[ZB_AX_GAS] = "32";
	in.value[ZB_AX_FRAMEWORK] = framework;
	zb_error err = { 0 };
	zb_config c;
	assert_int_equal(zb_config_resolve(&in, &c, NULL, &err), ZB_OK);
	zb_prediction p;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.simulated);
	double t = p.res.step_time_s;
	zb_prediction_free(&p);
	return t;
}

static void test_long_gas_rows(void **state)
{
	(void)state;
	double zb = predicted("zbench"), ds = predicted("deepspeed");
	const char *fw[] = { "zbench", "deepspeed" };
	for (int i = 0; i < 2; i++) {
		zb_config_inputs in;
		memset(&in, 0, sizeof in);
		in.value[ZB_AX_MODEL] = "gpt2";
		in.value[ZB_AX_POLICY] = "overlap";
		in.value[ZB_AX_RATIO] = "1";
		in.value[ZB_AX_GAS] = "32";
		in.value[ZB_AX_FRAMEWORK] = fw[i];
		zb_error err = { 0 };
		zb_sweep_grid g;
		assert_int_equal(zb_sweep_grid_init(&g, &in, 0, 0, 0, &err), ZB_OK);
		long long rows;
		zb_config first;
		assert_int_equal(zb_sweep_check(&g, &rows, &first, NULL, &err), ZB_OK);
		assert_int_equal(rows, 1);
		zb_sweep_opts so = { .jobs = 1, .both = 1 };
		longgas l = { 0 };
		long long done;
		assert_int_equal(zb_sweep_run(&g, rows, &so, keep_steps, &l, NULL, &done, &err), ZB_OK);
		assert_int_equal(l.n, 1);
		assert_int_equal(l.alt_state[0], 1);
		assert_true(l.step[0] == (i ? ds : zb));
		assert_true(l.alt[0] == (i ? zb : ds));
		zb_sweep_grid_free(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grid_order_threads),
		cmocka_unit_test(test_shards),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_long_gas_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
