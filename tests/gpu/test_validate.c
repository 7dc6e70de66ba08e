/*
 * test_validate.c (GPU) - calibrate, validate, compare and regress end to end on a
 * real GPU, small: the shared copy timing moves the right bytes at a plausible
 * rate; `calibrate --quick` writes a profile that loads, with every fitted figure
 * in a physical range, and its database row; `validate --suite quick --limit 2`
 * with that profile executes both configurations and stores timelines that
 * `compare` reads; a measured baseline passes regress and a planted slowdown
 * fails it. About a minute on the H200 machine.
 * Without a GPU it prints "skipped: no GPU" and skips (ZB_REQUIRE_GPU=1 fails).
 */
#include "tests/harness.h"

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stats.h"
#include "exec/copy_bench.h"
#include "exec/executor.h"
#include "inputs/hwfile.h"

static int g_have_gpu, g_require;
static char g_why[512];
static char dir[64], db[128], prof[128];
static const char *zbench;

#define NEED_GPU()                                                                   \
	do {                                                                         \
		if (!g_have_gpu) {                                                   \
			if (g_require)                                               \
				fail_msg("no GPU and ZB_REQUIRE_GPU=1: %s", g_why);  \
			skip();                                                      \
		}                                                                    \
	} while (0)

/* Run zbench; stdout in *out (caller frees), stderr shown on failure. */
static int run(char **out, const char *fmt, ...)
{
	char args[1024], cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "%s %s >%s/out 2>%s/err </dev/null", zbench, args, dir, dir);
	int st = system(cmd);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	char path[128];
	snprintf(path, sizeof path, "%s/out", dir);
	if (out)
		*out = zb_test_slurp(path, NULL);
	if (rc > 1) {
		snprintf(path, sizeof path, "%s/err", dir);
		char *e = zb_test_slurp(path, NULL);
		print_message("`zbench %s` exited %d: %s\n", args, rc, e);
		free(e);
	}
	return rc;
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

static void test_copy_bench(void **state)
{
	NEED_GPU();
	for (int pinned = 1; pinned >= 0; pinned--) {
		zb_copy_bench *b;
		zb_error err = { 0 };
		assert_int_equal(zb_copy_bench_open(16u << 20, pinned, &b, &err), ZB_OK);
		double t[2];
		assert_int_equal(zb_copy_bench_time(b, 8u << 20, ZB_COPY_BOTH, 3, t, &err), ZB_OK);
		assert_int_equal(zb_copy_bench_verify(b, 8u << 20, ZB_COPY_BOTH, &err), ZB_OK);
		/* more than 1 GB/s each way on any PCIe x16 link, pinned or not */
		assert_true(t[0] > 0 && (8u << 20) / t[0] > 1e9);
		assert_true(t[1] > 0 && (8u << 20) / t[1] > 1e9);
		assert_int_equal(zb_copy_bench_time(b, 4096, ZB_COPY_H2D, 5, t, &err), ZB_OK);
		assert_true(t[0] > 0 && t[1] == 0);
		assert_int_equal(zb_copy_bench_load(b, 1u << 20, ZB_COPY_BOTH, &err), ZB_OK);
		assert_int_equal(zb_copy_bench_time(b, 32u << 20, ZB_COPY_H2D, 1, t, &err), ZB_E_INPUT);
		zb_copy_bench_close(b);
	}
}

static void test_calibrate(void **state)
{
	NEED_GPU();
	char *out;
	assert_int_equal(run(&out, "calibrate --quick --out %s --db %s", prof, db), 0);
	print_message("%s", out);
	free(out);
	zb_hw hw;
	zb_error err = { 0 };
	assert_int_equal(zb_hw_load(prof, &hw, &err), ZB_OK);
	assert_true(hw.link.h2d_Bps > 1e9 && hw.link.h2d_Bps < 1e12);
	assert_true(hw.link.d2h_Bps > 1e9 && hw.link.d2h_Bps < 1e12);
	assert_true(hw.link.copy_latency_s >= 0 && hw.link.copy_latency_s < 1e-3);
	assert_true(hw.link.duplex_h2d > 0.2 && hw.link.duplex_h2d <= 1);
	assert_true(hw.link.pageable_h2d_Bps > 1e8);
	assert_true(hw.gpu.bf16_flops > 1e13 && hw.gpu.bf16_flops < 1e16);
	assert_true(hw.gpu.hbm_Bps > 1e11 && hw.gpu.hbm_Bps < 1e14);
	assert_true(hw.gpu.kernel_latency_s < 1e-3);
	assert_true(hw.cpu.adam_params_per_core > 1e7);
	assert_true(hw.cpu.dram_Bps > 1e9);
	assert_int_equal(count("SELECT count(*) FROM hw_profiles"), 1);
}

static void test_validate_and_compare(void **state)
{
	NEED_GPU();
	char *out;
	int rc = run(&out, "validate --suite quick --limit 2 --repeat 1 --json --hw %s --db %s",
		     access(prof, R_OK) ? "h200-machine" : prof, db);
	assert_int_equal(rc, 0);
	json_t *j = json_loads(out, 0, NULL);
	if (!j)
		print_error("not JSON: %s\n", out);
	free(out);
	assert_non_null(j);
	json_t *sum = json_object_get(j, "summary");
	assert_int_equal(json_integer_value(json_object_get(sum, "executed")), 2);
	assert_true(json_number_value(json_object_get(sum, "noise_median_pct")) > 0);
	assert_true(json_is_integer(json_object_get(sum, "within_noise")));
	for (size_t i = 0; i < 2; i++) {
		json_t *c = json_array_get(json_object_get(j, "configs"), i);
		assert_true(json_is_true(json_object_get(c, "executed")));
		assert_true(json_number_value(json_object_get(c, "measured_step_s")) > 0);
		/* 2 warm-up + 3 measured steps: the standard error over the last two step times */
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 3);
		assert_true(json_number_value(json_object_get(c, "measured_se_s")) > 0);
		print_message("%s: predicted %.2f ms, measured %.2f ms\n", json_string_value(json_object_get(c, "key")),
			      1e3 * json_number_value(json_object_get(c, "predicted_step_s")),
			      1e3 * json_number_value(json_object_get(c, "measured_step_s")));
	}
	/* --repeat 1: the first configuration measured again at the end, within 50 % of before */
	json_t *rep = json_object_get(j, "repeats");
	assert_int_equal(json_array_size(rep), 1);
	json_t *r0 = json_array_get(rep, 0);
	assert_string_equal(json_string_value(json_object_get(r0, "key")),
			    json_string_value(json_object_get(json_array_get(json_object_get(j, "configs"), 0), "key")));
	assert_true(json_number_value(json_object_get(r0, "again_step_s")) > 0);
	assert_true(fabs(json_number_value(json_object_get(r0, "change"))) < 0.5);
	long long run_id = json_integer_value(json_object_get(j, "run_id"));
	json_decref(j);
	assert_true(run_id > 0);
	assert_int_equal(run(&out, "compare %lld --json --db %s", run_id, db), 0);
	j = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "configs")), 2);
	json_decref(j);
}

/* The mean validate gives the rounds rs of one configuration (JSON): zb_rounds_mean of
 * their measured steps and standard errors. */
static double rounds_mean(json_t *rs)
{
	double m[8], se[8];
	int n = (int)json_array_size(rs);
	assert_true(n >= 1 && n <= 8);
	for (int k = 0; k < n; k++) {
		json_t *r = json_array_get(rs, k);
		m[k] = json_number_value(json_object_get(r, "measured_step_s"));
		json_t *e = json_object_get(r, "measured_se_s");
		se[k] = json_is_number(e) ? json_number_value(e) : NAN;
	}
	return zb_rounds_mean(m, se, n, ZB_ROUND_SE_FLOOR, NULL).mean;
}

/* --rounds 2: each configuration measured twice (forward, then backward), each round
 * stored as a configuration of the run; its measurement the mean of the two, its change
 * between them reported; calibrate --from-db counts the two rounds as one configuration. */
static void test_validate_rounds(void **state)
{
	NEED_GPU();
	char *out;
	assert_int_equal(run(&out, "validate --suite quick --limit 2 --rounds 2 --steps 6 --json --hw h200-machine --db %s",
			     db), 0);
	json_t *j = json_loads(out, 0, NULL);
	if (!j)
		print_error("not JSON: %s\n", out);
	free(out);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "rounds")), 2);
	json_t *sum = json_object_get(j, "summary");
	assert_int_equal(json_integer_value(json_object_get(sum, "executed")), 2);
	assert_true(json_number_value(json_object_get(sum, "round_change_median_pct")) >= 0);
	assert_true(json_is_integer(json_object_get(j, "speedup_misses_beyond_noise")));
	assert_true(json_is_integer(json_object_get(json_object_get(j, "order"), "swapped_beyond_noise")));
	for (size_t i = 0; i < 2; i++) {
		json_t *c = json_array_get(json_object_get(j, "configs"), i), *rs = json_object_get(c, "rounds");
		assert_int_equal(json_integer_value(json_object_get(c, "steps")), 3); /* 6 in two rounds */
		assert_int_equal(json_array_size(rs), 2);
		double a = json_number_value(json_object_get(json_array_get(rs, 0), "measured_step_s"));
		double b = json_number_value(json_object_get(json_array_get(rs, 1), "measured_step_s"));
		assert_true(a > 0 && b > 0);
		/* the rounds weighed by their precision (zb_rounds_mean), between them */
		assert_close(json_number_value(json_object_get(c, "measured_step_s")), rounds_mean(rs), 1e-9);
		double m = json_number_value(json_object_get(c, "measured_step_s"));
		assert_true(m >= fmin(a, b) * (1 - 1e-12) && m <= fmax(a, b) * (1 + 1e-12));
		assert_true(json_integer_value(json_object_get(json_array_get(rs, 0), "config_id")) !=
			    json_integer_value(json_object_get(json_array_get(rs, 1), "config_id")));
		print_message("%s: rounds %.2f and %.2f ms\n", json_string_value(json_object_get(c, "key")), 1e3 * a,
			      1e3 * b);
	}
	long long run_id = json_integer_value(json_object_get(j, "run_id"));
	json_decref(j);
	char sql[96];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM configs WHERE run_id = %lld", run_id);
	assert_int_equal(count(sql), 4);
	assert_int_equal(run(&out, "calibrate --from-db %s --run %lld --warmup 2 --eval h200-machine --json", db, run_id),
			 0);
	j = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "eval"), "configs")), 2);
	json_decref(j);
}

/* --extra-s: after the two rounds, extra rounds go to the least sure configurations, each
 * stored and counted in its mean; never more than the most rounds, and only within the
 * extra time (a round of these takes well under a second). */
static void test_validate_extra(void **state)
{
	NEED_GPU();
	char *out;
	assert_int_equal(run(&out, "validate --suite quick --limit 2 --rounds 2 --steps 6 --extra-s 4 --json "
				   "--hw h200-machine --db %s",
			     db),
			 0);
	json_t *j = json_loads(out, 0, NULL);
	if (!j)
		print_error("not JSON: %s\n", out);
	free(out);
	assert_non_null(j);
	assert_true(json_number_value(json_object_get(j, "extra_s")) == 4);
	int extra = (int)json_integer_value(json_object_get(j, "extra_rounds")), more = 0;
	for (size_t i = 0; i < 2; i++) {
		json_t *c = json_array_get(json_object_get(j, "configs"), i), *rs = json_object_get(c, "rounds");
		int n = (int)json_array_size(rs);
		assert_true(n >= 2 && n <= 8);
		more += n - 2;
		double mean = rounds_mean(rs);
		assert_close(json_number_value(json_object_get(c, "measured_step_s")), mean, 1e-9);
		print_message("%s: %d rounds, mean %.2f ms +- %.2f %%\n", json_string_value(json_object_get(c, "key")), n,
			      1e3 * mean, 100 * json_number_value(json_object_get(c, "measured_se_s")) / mean);
	}
	assert_int_equal(more, extra);
	long long run_id = json_integer_value(json_object_get(j, "run_id"));
	json_decref(j);
	char sql[96];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM configs WHERE run_id = %lld", run_id);
	assert_int_equal(count(sql), 4 + extra);
}

static void test_regress_measured(void **state)
{
	NEED_GPU();
	assert_int_equal(run(NULL, "baseline save gpu --limit 1 --repeats 2 --db %s", db), 0);
	/* a loose tolerance: two repeats of a short run are noisy, the test is the exit code */
	assert_int_equal(run(NULL, "regress --baseline gpu --repeats 2 --tolerance 0.25 --db %s", db), 0);
	assert_int_equal(run(NULL, "regress --baseline gpu --repeats 2 --tolerance 0.25 --plant-slowdown 0.6 --db %s", db),
			 1);
}

int main(void)
{
	zb_error err = { 0 };
	g_require = getenv("ZB_REQUIRE_GPU") && !strcmp(getenv("ZB_REQUIRE_GPU"), "1");
	g_have_gpu = zb_exec_available(&err);
	snprintf(g_why, sizeof g_why, "%s", err.msg);
	if (!g_have_gpu)
		printf("skipped: no GPU (%s)\n", g_why);
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	zb_test_tmpdir(dir, sizeof dir);
	snprintf(db, sizeof db, "%s/zb.db", dir);
	snprintf(prof, sizeof prof, "%s/hw.json", dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_bench),
		cmocka_unit_test(test_calibrate),
		cmocka_unit_test(test_validate_and_compare),
		cmocka_unit_test(test_validate_rounds),
		cmocka_unit_test(test_validate_extra),
		cmocka_unit_test(test_regress_measured),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
