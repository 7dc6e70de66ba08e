/*
 * test_regress.c - zbench baseline save / regress as CI uses them, on the
 * simulator (no GPU): equal results exit 0; a planted slowdown beyond the
 * tolerance (--plant-slowdown) exits 1 and says which configurations moved; one
 * within the tolerance exits 0; bad tags, mismatched modes and another hardware
 * profile than the baseline's exit 2 with one line; no GPU exits 3. Also the suites themselves: the full
 * suite spans every policy, Twin-Flow ratio, thread count and size validate is judged on, and
 * its estimate fits the time budget.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "validate/suite.h"
#include "exec/executor.h"
#include "core/model.h"
#include "sim/engine.h"

static char dir[64], db[128];
static const char *zbench;

typedef struct result {
	int rc;
	char *out, *err;
} result;

static result run(const char *fmt, ...)
{
	char args[1024], cmd[2048], out[160], err[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(out, sizeof out, "%s/stdout", dir);
	snprintf(err, sizeof err, "%s/stderr", dir);
	snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s </dev/null", zbench, args, out, err);
	int st = system(cmd);
	result r = { WIFEXITED(st) ? WEXITSTATUS(st) : 128, zb_test_slurp(out, NULL), zb_test_slurp(err, NULL) };
	return r;
}

static void result_free(result *r)
{
	free(r->out);
	free(r->err);
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static long long count(const char *sql)
{
	sqlite3 *h;
	long long n = -1;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW)
				n = sqlite3_column_int64(q, 0);
			sqlite3_finalize(q);
		}
	}
	sqlite3_close(h);
	return n;
}

static int setup(void **state)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(db, sizeof db, "%s/zb.db", dir);
	result r = run("baseline save base --sim --db %s", db);
	if (r.rc)
		print_error("baseline save failed (%d): %s%s\n", r.rc, r.out, r.err);
	int rc = r.rc;
	result_free(&r);
	return rc ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_saved(void **state)
{
	const zb_suite *q;
	assert_int_equal(zb_suite_find("quick", &q, NULL), ZB_OK);
	assert_int_equal(count("SELECT count(*) FROM baselines WHERE tag = 'base' AND source = 'predicted'"), 1);
	assert_int_equal(count("SELECT count(*) FROM baseline_results"), q->n);
	assert_int_equal(count("SELECT count(*) FROM baseline_results WHERE step_time_s > 0 AND tokens_per_s > 0"), q->n);
	/* the inputs as ordinary rows of the run that made it */
	assert_int_equal(count("SELECT count(*) FROM runs WHERE kind = 'baseline' AND status = 'ok'"), 1);
	assert_int_equal(count("SELECT count(*) FROM configs c JOIN runs r ON r.id = c.run_id WHERE r.kind = 'baseline'"),
			 q->n);
	assert_int_equal(count("SELECT count(*) FROM predictions"), q->n);
	result r = run("baseline list --db %s", db);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "base"));
	assert_non_null(strstr(r.out, "predicted"));
	result_free(&r);
}

static void test_equal_passes(void **state)
{
	result r = run("regress --baseline base --sim --db %s", db);
	if (r.rc)
		print_error("%s%s", r.out, r.err);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "0 of 4 configurations regressed"));
	assert_null(strstr(r.out, "REGRESSION"));
	result_free(&r);
	/* regress writes nothing */
	assert_int_equal(count("SELECT count(*) FROM runs"), 1);
}

static void test_planted_slowdown_fails(void **state)
{
	result r = run("regress --baseline base --sim --plant-slowdown 0.10 --db %s", db);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.out, "REGRESSION"));
	assert_non_null(strstr(r.out, "-9.09")); /* throughput x 1/1.1 */
	assert_non_null(strstr(r.out, "4 of 4 configurations regressed"));
	result_free(&r);
	/* within the tolerance: passes; the same with a tighter tolerance: fails */
	r = run("regress --baseline base --sim --plant-slowdown 0.02 --db %s", db);
	assert_int_equal(r.rc, 0);
	result_free(&r);
	r = run("regress --baseline base --sim --plant-slowdown 0.02 --tolerance 0.01 --db %s", db);
	assert_int_equal(r.rc, 1);
	result_free(&r);
	/* with --sim a shift up is a model change too */
	r = run("regress --baseline base --sim --plant-slowdown -0.10 --db %s", db);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.out, "shifted up"));
	result_free(&r);
}

/* Another hardware profile than the baseline's is refused (exit 2, one line naming
 * both and where they differ): a baseline judges a change of the code on one machine;
 * slower hardware is not a regression of the code. The baseline's own hardware named
 * explicitly passes; the regression itself is what --plant-slowdown plants. */
static void test_other_hardware_refused(void **state)
{
	result r = run("regress --baseline base --sim --hw dgx-a100 --json --db %s", db);
	assert_int_equal(r.rc, 2);
	assert_int_equal(lines(r.err), 1);
	assert_non_null(strstr(r.err, "'h200-machine'"));
	assert_non_null(strstr(r.err, "'dgx-a100'"));
	assert_non_null(strstr(r.err, "differ at"));
	assert_string_equal(r.out, "");
	result_free(&r);
	r = run("regress --baseline base --sim --hw h200-machine --db %s", db);
	assert_int_equal(r.rc, 0);
	result_free(&r);
}

static void test_bad_inputs(void **state)
{
	static const char *const cases[][2] = {
		{ "regress --baseline nope --sim", "nope" },
		{ "regress --sim", "--baseline" },
		{ "regress --baseline base --sim --tolerance 2", "2" },
		{ "regress --baseline base --sim --tolerance x", "x" },
		{ "regress --baseline base", "predicted" }, /* a simulator baseline judged on the GPU */
		{ "baseline save base --sim", "already exists" },
		{ "baseline save t2 --sim --suite huge", "huge" },
		{ "baseline save --sim", "tag" },
		{ "baseline frob", "frob" },
		{ "baseline save t3 --sim --hw gen9box", "gen9box" },
	};
	long long runs = count("SELECT count(*) FROM runs");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		result r = run("%s --db %s", cases[i][0], db);
		if (r.rc != 2 || lines(r.err) != 1 || !strstr(r.err, cases[i][1]))
			print_error("`%s`: exit %d, stderr: %s\n", cases[i][0], r.rc, r.err);
		assert_int_equal(r.rc, 2);
		assert_int_equal(lines(r.err), 1);
		assert_non_null(strstr(r.err, cases[i][1]));
		result_free(&r);
	}
	assert_int_equal(count("SELECT count(*) FROM runs"), runs);
	/* --force replaces a tag */
	result r = run("baseline save base --sim --force --db %s", db);
	assert_int_equal(r.rc, 0);
	result_free(&r);
	assert_int_equal(count("SELECT count(*) FROM baselines"), 1);
	assert_int_equal(count("SELECT count(*) FROM baseline_results"), 4);
}

/* Without a GPU, measured baselines and validate are refused, not faked. */
static void test_needs_gpu(void **state)
{
	zb_error e = { 0 };
	if (zb_exec_available(&e))
		skip();
	long long runs = count("SELECT count(*) FROM runs");
	result r = run("baseline save gpu1 --db %s", db);
	assert_int_equal(r.rc, 3); /* no GPU: exit 3 (common/error.h zb_exit) */
	assert_int_equal(lines(r.err), 1);
	result_free(&r);
	r = run("validate --suite quick --db %s", db);
	assert_int_equal(r.rc, 3);
	result_free(&r);
	assert_int_equal(count("SELECT count(*) FROM runs"), runs);
}

/* ---- the suites ----------------------------------------------------------------------- */

/* Suite link runs on half the cores and on all of them, whatever the host: on the
 * 16-core single H200 preset that is 8 and 16 threads, on the 32-core 2x H200 one 16 and 32. */
static void test_link_suite_threads(void **state)
{
	(void)state;
	const zb_suite *s;
	assert_int_equal(zb_suite_find("link", &s, NULL), ZB_OK);
	static const struct { const char *hw; int half; } hosts[] = { { "h200-machine", 8 }, { "h200-x2", 16 } };
	for (size_t h = 0; h < sizeof hosts / sizeof hosts[0]; h++) {
		int halves = 0, alls = 0;
		for (int i = 0; i < s->n; i++) {
			zb_config c;
			zb_error err = { 0 };
			if (zb_suite_config(&s->entries[i], hosts[h].hw, 2, 4, &c, &err))
				print_error("%s: %s\n", hosts[h].hw, err.msg), fail();
			if (s->entries[i].threads == ZB_SUITE_HALF_CORES) {
				assert_int_equal(c.policy.cpu_threads, hosts[h].half);
				halves++;
			} else {
				assert_int_equal(s->entries[i].threads, 0);
				alls++;
			}
		}
		assert_true(halves >= 4 && alls >= 4);
	}
	char key[128];
	zb_suite_key(&s->entries[0], key, sizeof key);
	assert_non_null(strstr(key, "/thalf/"));
}

static void test_full_suite_span(void **state)
{
	const zb_suite *s;
	assert_int_equal(zb_suite_find("full", &s, NULL), ZB_OK);
	assert_true(s->n >= 30);
	int policies[ZB_POLICY_COUNT] = { 0 }, ratio0 = 0, ratio1 = 0, mid = 0, tmin = 99, tmax = 0, mbs = 0, gas = 0;
	double pmin = 1e30, pmax = 0, est = 0;
	unsigned mbmask = 0;
	for (int i = 0; i < s->n; i++) {
		const zb_suite_entry *e = &s->entries[i];
		char key[128], other[128];
		zb_suite_key(e, key, sizeof key);
		for (int j = 0; j < i; j++) {
			zb_suite_key(&s->entries[j], other, sizeof other);
			if (!strcmp(key, other))
				print_error("duplicate key %s\n", key), fail();
		}
		zb_config c;
		zb_error err = { 0 };
		if (zb_suite_config(e, NULL, 2, 3, &c, &err))
			print_error("%s: %s\n", key, err.msg), fail();
		zb_prediction p;
		assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
		if (!p.mem.fits)
			print_error("%s does not fit: %s\n", key, p.mem.reason), fail();
		est += zb_suite_estimate_s(&c, &p);
		zb_prediction_free(&p);
		policies[c.policy.kind]++;
		if (c.policy.kind != ZB_POLICY_NONE) {
			ratio0 += c.policy.ratio == 0;
			ratio1 += c.policy.ratio == 1;
			mid += c.policy.ratio > 0 && c.policy.ratio < 1;
		}
		tmin = e->threads < tmin ? e->threads : tmin;
		tmax = e->threads > tmax ? e->threads : tmax;
		double params = (double)zb_model_params(&c.model);
		pmin = params < pmin ? params : pmin;
		pmax = params > pmax ? params : pmax;
		mbmask |= 1u << e->micro_batch;
		gas += e->gas > 1;
	}
	for (int k = 0; k < ZB_POLICY_COUNT; k++)
		assert_true(policies[k] > 0);
	assert_true(ratio0 > 0 && ratio1 > 0 && mid >= 5);
	assert_int_equal(tmin, 2);
	assert_int_equal(tmax, 16);
	assert_true(pmin < 0.4e9 && pmin > 0.3e9);
	assert_true(pmax > 5.5e9 && pmax < 6.5e9);
	for (unsigned m = mbmask; m; m &= m - 1)
		mbs++;
	assert_true(mbs >= 3);
	assert_true(gas >= 3);
	/* the whole suite must fit one command on the GPU machine (10 minutes): ~8 minutes */
	print_message("full suite: %d configurations, estimated %.0f s on the H200 machine\n", s->n, est);
	assert_true(est < 8 * 60);
}

static void test_validate_list(void **state)
{
	result r = run("validate --list");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "expected time"));
	assert_non_null(strstr(r.out, "llama-6b"));
	assert_non_null(strstr(r.out, "reference"));
	assert_true(lines(r.out) >= 30 + 4);
	result_free(&r);
	r = run("validate --list --suite quick --limit 2");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "2 of 4"));
	result_free(&r);
	r = run("validate --suite nope");
	assert_int_equal(r.rc, 2);
	result_free(&r);
}

/* ---- validate --measure-s ------------------------------------------------------------------ */

/* `validate --list --json` of suite fid with extra flags: the parsed plan (caller decrefs). */
static json_t *fid_plan(const char *flags)
{
	result r = run("validate --list --json --suite fid %s", flags);
	if (r.rc != 0)
		print_error("validate --list --json --suite fid %s: exit %d: %s\n", flags, r.rc, r.err), fail();
	json_error_t je;
	json_t *root = json_loads(r.out, 0, &je);
	if (!root)
		print_error("not JSON (%s): %.200s\n", je.text, r.out), fail();
	result_free(&r);
	return root;
}

/* Each configuration's measured steps follow from its predicted step: ceil(S / step)
 * within --steps .. --max-steps; a fast configuration gets more than a slow one. */
static void test_validate_measure_s(void **state)
{
	(void)state;
	json_t *root = fid_plan("--steps 3 --measure-s 1.5 --max-steps 40 --rounds 1");
	assert_int_equal(json_integer_value(json_object_get(root, "max_steps")), 40);
	json_t *cs = json_object_get(root, "configs"), *c;
	size_t i;
	assert_int_equal(json_array_size(cs), 44);
	double fast = 1e9, slow = 0;
	int fast_steps = 0, slow_steps = 0, at_min = 0, at_max = 0, between = 0;
	json_array_foreach(cs, i, c) {
		double pred = json_real_value(json_object_get(c, "predicted_step_s"));
		int steps = (int)json_integer_value(json_object_get(c, "steps"));
		assert_non_null(json_object_get(c, "measured_se_s")); /* null: nothing measured */
		assert_true(json_is_null(json_object_get(c, "measured_se_s")));
		int want = (int)ceil(1.5 / pred);
		want = want < 3 ? 3 : want > 40 ? 40 : want;
		/* pred comes from the run with `steps` steps, the count from the one with 3:
		 * the two predictions of the steady step agree within a few percent */
		if (abs(steps - want) > 1 + want / 20)
			print_error("%s: %d steps, want %d (predicted %.2f ms)\n",
				    json_string_value(json_object_get(c, "key")), steps, want, pred * 1e3), fail();
		at_min += steps == 3;
		at_max += steps == 40;
		between += steps > 3 && steps < 40;
		if (pred < fast)
			fast = pred, fast_steps = steps;
		if (pred > slow)
			slow = pred, slow_steps = steps;
	}
	print_message("measure-s 1.5: fastest %.1f ms -> %d steps, slowest %.1f ms -> %d steps; %d at --steps, %d at "
		      "--max-steps\n", fast * 1e3, fast_steps, slow * 1e3, slow_steps, at_min, at_max);
	assert_true(fast_steps > slow_steps);
	assert_true(at_min >= 1);  /* gpt2-large with 2 threads: ~0.6 s a step, 1.5 s is 3 steps */
	assert_true(at_max >= 1);  /* llama's 4 layers without offload: ~24 ms, 1.5 s is > 40 steps */
	assert_true(between >= 10);
	double est_long = json_real_value(json_object_get(root, "expected_s"));
	json_decref(root);
	/* off: every configuration --steps, and the estimate is the shorter one */
	root = fid_plan("--steps 3 --measure-s 0 --rounds 1");
	json_array_foreach(json_object_get(root, "configs"), i, c)
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 3);
	assert_true(json_real_value(json_object_get(root, "expected_s")) < est_long);
	json_decref(root);
	/* --max-steps clamps everything; --steps alone when S is short */
	root = fid_plan("--measure-s 100 --max-steps 12 --steps 5 --rounds 1");
	json_array_foreach(json_object_get(root, "configs"), i, c)
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 12);
	json_decref(root);
	root = fid_plan("--measure-s 0.001 --steps 4 --rounds 1");
	json_array_foreach(json_object_get(root, "configs"), i, c)
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 4);
	json_decref(root);
	/* fid's two rounds share the steps, at least 3 each (a round's spread) */
	root = fid_plan("--measure-s 0.001 --steps 4");
	json_array_foreach(json_object_get(root, "configs"), i, c)
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 3);
	json_decref(root);
	root = fid_plan("--measure-s 0.001 --steps 10");
	json_array_foreach(json_object_get(root, "configs"), i, c)
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 5);
	json_decref(root);
	/* the text: the header says how the steps are chosen, the table has a steps column */
	result r = run("validate --list --suite quick --measure-s 1.5 --max-steps 30");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "measured steps: 3, or 1.5 s of steps (at most 30)");
	assert_contains(r.out, " steps ");
	result_free(&r);
	r = run("validate --list --suite quick");
	assert_contains(r.out, "2 warm-up + 3 measured steps");
	result_free(&r);
}

/* Suite fid's own measurement when the command line says nothing (suite.h
 * zb_suite_measure: 4 warm-up, >= 8 and ~3 s, <= 48 measured steps, in two rounds
 * that share the steps); a flag given wins over it, the others stay the suite's. */
static void test_validate_suite_measure(void **state)
{
	(void)state;
	json_t *root = fid_plan("");
	assert_int_equal(json_integer_value(json_object_get(root, "warmup")), 4);
	assert_int_equal(json_integer_value(json_object_get(root, "steps")), 8);
	assert_true(json_real_value(json_object_get(root, "measure_s")) == 3);
	assert_int_equal(json_integer_value(json_object_get(root, "max_steps")), 48);
	assert_int_equal(json_integer_value(json_object_get(root, "repeat")), 0);
	assert_int_equal(json_integer_value(json_object_get(root, "rounds")), 2);
	assert_true(json_real_value(json_object_get(root, "extra_s")) == 120);
	double two_rounds = json_real_value(json_object_get(root, "expected_s")) - 120, each = 0;
	json_t *c;
	size_t i;
	int more = 0;
	json_array_foreach(json_object_get(root, "configs"), i, c) {
		int steps = (int)json_integer_value(json_object_get(c, "steps")); /* each round's */
		assert_true(steps >= 4 && steps <= 24);
		more += steps > 4;
		double first = json_real_value(json_object_get(c, "estimate_s"));
		double again = json_real_value(json_object_get(c, "estimate_again_s"));
		assert_true(again > 0 && again <= first); /* the pool keeps what the first round pinned */
		each += first + again;
	}
	assert_true(more >= 10);
	assert_close(two_rounds, each, 1e-6); /* every configuration estimated twice, and the extra time */
	json_decref(root);
	root = fid_plan("--extra-s 0");
	assert_true(json_real_value(json_object_get(root, "extra_s")) == 0);
	assert_close(json_real_value(json_object_get(root, "expected_s")), two_rounds, 1e-6);
	json_decref(root);
	/* --rounds 1: all the steps in one round */
	root = fid_plan("--rounds 1");
	assert_int_equal(json_integer_value(json_object_get(root, "rounds")), 1);
	json_array_foreach(json_object_get(root, "configs"), i, c) {
		int steps = (int)json_integer_value(json_object_get(c, "steps"));
		assert_true(steps >= 8 && steps <= 48);
	}
	assert_true(json_real_value(json_object_get(root, "expected_s")) < 0.8 * two_rounds);
	assert_true(json_real_value(json_object_get(root, "extra_s")) == 0); /* extra rounds need two */
	json_decref(root);
	/* --repeat 2: the first two configurations measured again at the end, in the estimate */
	root = fid_plan("--repeat 2 --rounds 1");
	double first_two = 0, with_repeats = json_real_value(json_object_get(root, "expected_s"));
	for (i = 0; i < 2; i++)
		first_two += json_real_value(json_object_get(json_array_get(json_object_get(root, "configs"), i), "estimate_again_s"));
	assert_true(first_two > 0);
	json_decref(root);
	root = fid_plan("--rounds 1");
	assert_close(with_repeats - json_real_value(json_object_get(root, "expected_s")), first_two, 1e-6);
	json_decref(root);
	root = fid_plan("--warmup 1");
	assert_int_equal(json_integer_value(json_object_get(root, "warmup")), 1);
	assert_true(json_real_value(json_object_get(root, "measure_s")) == 3);
	json_decref(root);
	root = fid_plan("--steps 60");
	assert_int_equal(json_integer_value(json_object_get(root, "steps")), 60);
	assert_int_equal(json_integer_value(json_object_get(root, "max_steps")), 64); /* the suite's 48 < 60 */
	json_decref(root);
}

/* Bad --measure-s / --max-steps: one line on stderr, exit 2. */
static void test_validate_measure_s_bad(void **state)
{
	(void)state;
	static const char *bad[] = { "--measure-s -1", "--measure-s abc", "--measure-s nan", "--max-steps 0",
				     "--max-steps 1001", "--max-steps 5 --steps 8", "--measure-s 2 --max-steps 2 --steps 3",
				     "--repeat 11", "--repeat -1", "--rounds 0", "--rounds 9", "--rounds x",
				     "--extra-s -1", "--extra-s x", "--extra-s 3601" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		result r = run("validate --list --suite quick %s", bad[i]);
		if (r.rc != 2 || lines(r.err) != 1)
			print_error("%s: exit %d, stderr '%s'\n", bad[i], r.rc, r.err), fail();
		result_free(&r);
	}
	result r = run("validate --list --suite quick --max-steps 5 --steps 8");
	assert_contains(r.err, "--max-steps 5 is below --steps 8");
	result_free(&r);
	/* --steps above the default --max-steps, --max-steps not given: fine */
	r = run("validate --list --suite quick --limit 1 --steps 80 --measure-s 1");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "(at most 80)");
	result_free(&r);
}

/* The steady window of the measured per-step times is the one zb_step_time_window
 * measures: on a prediction (GPU the pace: no offload), the mean of
 * zb_step_spread over the boundary differences is the predicted step. */
static void test_step_spread_window(void **state)
{
	(void)state;
	double t[] = { 9, 7, 1, 2, 3, 4 }; /* warm-up 1: steps 0 and 1 left out, {1, 2, 3, 4} */
	zb_spread s = zb_step_spread(t, 6, 1);
	assert_int_equal(s.n, 4);
	assert_close(s.mean, 2.5, 1e-15);
	assert_close(s.se, sqrt(5.0 / 3) / 2, 1e-15);
	s = zb_step_spread(t, 6, 10); /* warm-up clamped to steps - 2: the last step alone */
	assert_int_equal(s.n, 1);
	assert_true(isnan(s.se));
	s = zb_step_spread(t, 1, 0);
	assert_int_equal(s.n, 0);
	s = zb_step_spread(NULL, 0, 2);
	assert_int_equal(s.n, 0);
	const zb_suite *suite;
	assert_int_equal(zb_suite_find("quick", &suite, NULL), ZB_OK);
	for (int warm = 0; warm <= 3; warm++) {
		zb_config c;
		zb_error err = { 0 };
		assert_int_equal(zb_suite_config(&suite->entries[2], NULL, warm, 5, &c, &err), ZB_OK); /* policy none */
		zb_prediction p;
		assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
		int n = p.graph.steps;
		double *b = malloc((size_t)n * sizeof *b), *st = malloc((size_t)n * sizeof *st);
		zb_step_boundaries(&p.graph, p.res.end, b);
		for (int k = 0; k < n; k++)
			st[k] = b[k] - (k ? b[k - 1] : 0);
		s = zb_step_spread(st, n, warm);
		assert_int_equal(s.n, n - 1 - warm);
		assert_close(s.mean, zb_step_time_window(&p.graph, p.res.end, warm), 1e-9);
		free(b);
		free(st);
		zb_prediction_free(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_saved),
		cmocka_unit_test(test_equal_passes),
		cmocka_unit_test(test_planted_slowdown_fails),
		cmocka_unit_test(test_other_hardware_refused),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_needs_gpu),
		cmocka_unit_test(test_full_suite_span),
		cmocka_unit_test(test_link_suite_threads),
		cmocka_unit_test(test_validate_list),
		cmocka_unit_test(test_validate_measure_s),
		cmocka_unit_test(test_validate_suite_measure),
		cmocka_unit_test(test_validate_measure_s_bad),
		cmocka_unit_test(test_step_spread_window),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
