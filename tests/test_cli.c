/*
 * test_cli.c - the zbench command as a user runs it: `predict --json` output has
 * every documented field; `sweep --pcie gen4 --csv` prints and stores 16 rows; every
 * bad input exits 2 with one line on stderr naming the bad value, prints nothing
 * on stdout and writes no rows; a newer database is left untouched and a locked
 * one is reported as locked.
 *
 * The binary is $ZBENCH (set by tests/run.sh), default build/zbench; every
 * command writes into a database in a temporary directory.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static char db[512];
static const char *zbench;

typedef zb_test_result result;

/* Run zbench with args (shell syntax), capturing stdout, stderr and the exit code. */
static result run(const char *args) { return zb_test_run(zbench, tmpdir, args); }

static void result_free(result *r) { zb_test_result_free(r); }

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* rows of a table, -1 when the database or table does not exist */
static long long rows(const char *path, const char *table)
{
	sqlite3 *h;
	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(h);
		return -1;
	}
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	sqlite3_stmt *q;
	long long n = -1;
	if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			n = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(h);
	return n;
}

typedef struct counts {
	long long runs, configs, predictions;
} counts;

static counts db_counts(const char *path)
{
	counts c = { rows(path, "runs"), rows(path, "configs"), rows(path, "predictions") };
	return c;
}

static void assert_same_counts(counts a, counts b, const char *what)
{
	if (a.runs != b.runs || a.configs != b.configs || a.predictions != b.predictions) {
		print_error("%s: rows changed: runs %lld -> %lld, configs %lld -> %lld, predictions %lld -> %lld\n",
			    what, a.runs, b.runs, a.configs, b.configs, a.predictions, b.predictions);
		fail();
	}
}

static int setup(void **state)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	if (access(zbench, X_OK) != 0) {
		print_error("zbench binary '%s' not found (set ZBENCH)\n", zbench);
		return -1;
	}
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	snprintf(db, sizeof db, "%s/zb.db", tmpdir);
	/* one prediction first, so that the database and its tables exist */
	char args[700];
	snprintf(args, sizeof args, "predict --steps 4 --db %s", db);
	result r = run(args);
	int ok = r.rc == 0;
	if (!ok)
		print_error("initial predict failed (%d): %s\n", r.rc, r.err);
	result_free(&r);
	return ok ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- predict --json ------------------------------------------------------------ */

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v)) {
		print_error("key '%s' missing or not a number\n", key);
		fail();
	}
	return json_number_value(v);
}

static json_t *obj(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_object(v)) {
		print_error("key '%s' missing or not an object\n", key);
		fail();
	}
	return v;
}

static void test_predict_json(void **state)
{
	counts before = db_counts(db);
	char args[700];
	snprintf(args, sizeof args, "predict --json --steps 4 --policy dpu --ratio 0.5 --db %s", db);
	result r = run(args);
	if (r.rc != 0)
		print_error("stderr: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	json_error_t je;
	json_t *j = json_loads(r.out, 0, &je);
	if (!j)
		print_error("stdout is not JSON (line %d: %s):\n%s\n", je.line, je.text, r.out);
	assert_non_null(j);
	assert_true(json_is_object(j));

	double step = num(j, "step_time_s"), tps = num(j, "tokens_per_s"), tfl = num(j, "tflops_per_gpu");
	double lb = num(j, "lower_bound_s");
	assert_true(step > 0 && tps > 0 && tfl > 0 && lb > 0);
	assert_true(step >= lb * (1 - 1e-9));
	/* tokens per step: the defaults, micro-batch 8 x seq 1024 x gas 1 */
	assert_close(tps * step, num(j, "micro_batch") * num(j, "seq") * num(j, "gas"), 1e-9);
	assert_close(tps * step, 8 * 1024, 1e-9);

	json_t *bn = json_object_get(j, "bottleneck");
	assert_true(json_is_string(bn));
	static const char *const resources[] = { "gpu", "pcie_h2d", "pcie_d2h", "cpu", "gpu_opt" };
	int known = 0;
	json_t *busy = obj(j, "busy_s");
	for (size_t i = 0; i < 5; i++) {
		known |= strcmp(json_string_value(bn), resources[i]) == 0;
		double b = num(busy, resources[i]);
		assert_true(b >= 0 && b <= step * (1 + 1e-9));
	}
	assert_true(known);
	/* dpu at ratio 0.5: both flows busy */
	assert_true(num(busy, "gpu") > 0 && num(busy, "cpu") > 0 && num(busy, "gpu_opt") > 0);

	json_t *pb = obj(j, "pcie_bytes");
	double params = num(j, "params");
	/* half the gradients down and the same parameters up, 2 bytes each (llround split) */
	assert_close(num(pb, "h2d"), 2 * llround(0.5 * params), 1e-12);
	assert_close(num(pb, "d2h"), 2 * llround(0.5 * params), 1e-12);

	json_t *mem = obj(j, "memory");
	assert_true(num(mem, "gpu_bytes") > 0);
	assert_true(num(mem, "host_bytes") > 0);
	assert_true(json_is_true(json_object_get(mem, "fits")));
	json_t *ev = json_object_get(j, "events");
	assert_true(json_is_integer(ev));
	assert_true(json_integer_value(ev) >= json_integer_value(json_object_get(j, "tasks")));
	json_decref(j);

	/* one more run, configuration and prediction in the database */
	counts after = db_counts(db);
	assert_int_equal(after.runs, before.runs + 1);
	assert_int_equal(after.configs, before.configs + 1);
	assert_int_equal(after.predictions, before.predictions + 1);
	result_free(&r);
}

/* A configuration that does not fit is reported (exit 4: common/error.h zb_exit; JSON
 * with fits false and step_time_s null), not simulated. */
static void test_predict_does_not_fit(void **state)
{
	char args[700];
	snprintf(args, sizeof args, "predict --json --model llama2-70b --policy none --gpu h100 --steps 4 --db %s",
		 db);
	result r = run(args);
	assert_int_equal(r.rc, 4);
	json_t *j = json_loads(r.out, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_false(json_object_get(obj(j, "memory"), "fits")));
	assert_true(json_is_null(json_object_get(j, "step_time_s")));
	assert_non_null(strstr(r.err, "does not fit"));
	json_decref(j);
	result_free(&r);
}

/* ---- sweep ------------------------------------------------------------------------ */

static void test_sweep_csv(void **state)
{
	counts before = db_counts(db);
	char args[700];
	snprintf(args, sizeof args, "sweep --pcie gen4 --csv --steps 4 --db %s", db);
	result r = run(args);
	if (r.rc != 0)
		print_error("stderr: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	assert_int_equal(count_lines(r.out), 17); /* header + none + 3 policies x 5 ratios */
	char *save = NULL, *line = strtok_r(r.out, "\n", &save);
	assert_non_null(line);
	assert_non_null(strstr(line, "policy"));
	assert_non_null(strstr(line, "ratio"));
	int ncols = 1;
	for (const char *c = line; *c; c++)
		ncols += *c == ',';
	int n = 0, policies[4] = { 0 };
	while ((line = strtok_r(NULL, "\n", &save))) {
		int cols = 1;
		for (const char *c = line; *c; c++)
			cols += *c == ',';
		assert_int_equal(cols, ncols);
		assert_non_null(strstr(line, "gen4"));
		/* the policy is the sixth field (ckpt "none" is a field too) */
		const char *pol = line;
		for (int k = 0; k < 5; k++)
			pol = strchr(pol, ',') + 1;
		policies[0] += !strncmp(pol, "none,", 5);
		policies[1] += !strncmp(pol, "offload,", 8);
		policies[2] += !strncmp(pol, "overlap,", 8);
		policies[3] += !strncmp(pol, "dpu,", 4);
		n++;
	}
	assert_int_equal(n, 16);
	assert_int_equal(policies[0], 1);
	assert_int_equal(policies[1], 5);
	assert_int_equal(policies[2], 5);
	assert_int_equal(policies[3], 5);
	counts after = db_counts(db);
	assert_int_equal(after.runs, before.runs + 1);
	assert_int_equal(after.configs, before.configs + 16);
	assert_int_equal(after.predictions, before.predictions + 16);
	result_free(&r);
}

/* ---- bad inputs ------------------------------------------------------------------- */

/* The command exits 2 with one line on stderr containing every needle, prints
 * nothing on stdout, and the database rows do not change. */
static void expect_rejected(const char *args, const char *const needles[])
{
	counts before = db_counts(db);
	result r = run(args);
	if (r.rc != 2 || count_lines(r.err) != 1 || r.out[0])
		print_error("`zbench %s`: exit %d, stderr:\n%s---\nstdout:\n%s---\n", args, r.rc, r.err, r.out);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_string_equal(r.out, "");
	for (const char *const *n = needles; *n; n++)
		if (!strstr(r.err, *n)) {
			print_error("`zbench %s`: stderr '%s' does not name '%s'\n", args, r.err, *n);
			fail();
		}
	assert_same_counts(before, db_counts(db), args);
	result_free(&r);
}

#define REJECT(fmt, ...)                                                                  \
	do {                                                                              \
		char a_[1200];                                                            \
		snprintf(a_, sizeof a_, fmt " --db %s", db);                              \
		expect_rejected(a_, (const char *const[]){ __VA_ARGS__, NULL });          \
	} while (0)

static void test_bad_values(void **state)
{
	REJECT("predict --pcie gen7", "gen7");
	REJECT("sweep --pcie gen4,gen7", "gen7");
	REJECT("predict --model nope", "nope");
	REJECT("predict --ratio 1.5", "1.5");
	REJECT("sweep --ratio 0.5,1.5", "1.5");
	REJECT("predict --micro-batch 0", "micro-batch", "0");
	REJECT("predict --micro-batch -3", "micro-batch", "-3");
	REJECT("predict --seq abc", "seq", "abc");
	REJECT("sweep --ratio 0:1:0", "0:1:0");
	REJECT("sweep --ratio 1:0:0.1", "1:0:0.1");
	REJECT("predict --ratio 0:1:0.5", "0:1:0.5", "sweep");
	REJECT("predict --pcie gen3,gen4", "gen3,gen4", "sweep");
	REJECT("predict --policy dpu --offload-param", "dpu");
}

static void test_bad_hardware_files(void **state)
{
	REJECT("predict --hw /nonexistent.json", "/nonexistent.json");
	char path[600];
	snprintf(path, sizeof path, "%s/broken.json", tmpdir);
	zb_test_write_file(path, "{ \"link\": { \"h2d_Bps\": 1e10, }\n");
	char args[1300];
	snprintf(args, sizeof args, "predict --hw %s --db %s", path, db);
	expect_rejected(args, (const char *const[]){ path, "JSON", NULL });
}

static void test_unwritable_database(void **state)
{
	result r = run("predict --steps 4 --db /proc/forbidden/x.db");
	if (r.rc != 2 || count_lines(r.err) != 1)
		print_error("exit %d, stderr:\n%s", r.rc, r.err);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "/proc/forbidden/x.db"));
	assert_string_equal(r.out, "");
	result_free(&r);
}

static void test_newer_schema_untouched(void **state)
{
	char path[600];
	snprintf(path, sizeof path, "%s/newer.db", tmpdir);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "CREATE TABLE future (x); INSERT INTO future VALUES (42); "
					 "PRAGMA user_version = 99;",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(h);
	char *before = zb_test_slurp(path, NULL);
	struct stat st0, st1;
	assert_int_equal(stat(path, &st0), 0);

	char args[700];
	snprintf(args, sizeof args, "predict --steps 4 --db %s", path);
	result r = run(args);
	if (r.rc != 2 || count_lines(r.err) != 1)
		print_error("exit %d, stderr:\n%s", r.rc, r.err);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "99"));
	assert_string_equal(r.out, "");

	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(st0.st_size, st1.st_size);
	char *after = zb_test_slurp(path, NULL);
	assert_memory_equal(before, after, (size_t)st0.st_size);
	/* and still at version 99 with its data */
	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 99);
	sqlite3_finalize(q);
	sqlite3_close(h);
	assert_int_equal(rows(path, "runs"), -1);
	free(before);
	free(after);
	result_free(&r);
}

static void test_locked_database(void **state)
{
	counts before = db_counts(db);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	char args[700];
	snprintf(args, sizeof args, "predict --steps 4 --db %s", db);
	setenv("ZBENCH_DB_WAIT_S", "1", 1); /* writers wait 10 minutes by default */
	result r = run(args);
	unsetenv("ZBENCH_DB_WAIT_S");
	assert_int_equal(sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	if (r.rc != 2 || count_lines(r.err) != 1 || !strstr(r.err, "locked"))
		print_error("exit %d, stderr:\n%s", r.rc, r.err);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "locked"));
	/* the prediction was computed: it is printed, and the error says it was not stored */
	assert_non_null(strstr(r.err, "NOT stored"));
	assert_non_null(strstr(r.out, "step time"));
	assert_same_counts(before, db_counts(db), "locked");
	result_free(&r);
}

/* ---- other commands ------------------------------------------------------------------ */

static void test_list_presets(void **state)
{
	result r = run("list presets");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "gen4"));
	assert_non_null(strstr(r.out, "gpt2-large"));
	assert_non_null(strstr(r.out, "h200-machine"));
	result_free(&r);
}

static void test_unknown_command(void **state)
{
	counts before = db_counts(db);
	result r = run("frobnicate");
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "frobnicate"));
	assert_string_equal(r.out, "");
	result_free(&r);
	r = run("");
	assert_int_equal(r.rc, 2);
	result_free(&r);
	assert_same_counts(before, db_counts(db), "unknown command");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predict_json),
		cmocka_unit_test(test_predict_does_not_fit),
		cmocka_unit_test(test_sweep_csv),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_bad_hardware_files),
		cmocka_unit_test(test_unwritable_database),
		cmocka_unit_test(test_newer_schema_untouched),
		cmocka_unit_test(test_locked_database),
		cmocka_unit_test(test_list_presets),
		cmocka_unit_test(test_unknown_command),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
