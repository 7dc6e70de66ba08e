/*
 * test_plot.c - `zbench plot` and `zbench sweep --plot` as a user runs them, on a
 * small database built in a temporary directory: a sweep (3 PCIe generations x 5
 * ratios x 2 core counts), one `predict --timeline`, and synthetic measured rows
 * written with the sqlite3 API (steps for six sweep configurations, measured events
 * for the timeline configuration) so accuracy and timeline have something to draw
 * without a GPU.
 *
 * Every kind must give a non-empty PNG (checked by its 8-byte signature) and SVG
 * (starts with <?xml or <svg, ends with </svg>), leave no FILE.tmp, and print one
 * line. Bad inputs exit 2 with one line on stderr naming the bad value and leave
 * no image. The tests that need gnuplot skip, saying so, when it is not installed
 * (scripts/deps.sh installs gnuplot-nox, so CI runs them).
 *
 * The binary is $ZBENCH (set by tests/run.sh), default build/zbench.
 */
#include "tests/harness.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static char db[512];
static const char *zbench;
static int have_gnuplot;
static long long timeline_config; /* the predict --timeline configuration */
static long long sweep_run;       /* the sweep's run id */

typedef struct result {
	int rc;
	char *out, *err;
} result;

/* Run zbench with args (shell syntax) and an optional environment prefix. */
static result run_env(const char *env, const char *args)
{
	char out[600], err[600], cmd[4096];
	snprintf(out, sizeof out, "%s/stdout", tmpdir);
	snprintf(err, sizeof err, "%s/stderr", tmpdir);
	snprintf(cmd, sizeof cmd, "%s %s %s >%s 2>%s </dev/null", env ? env : "", zbench, args, out, err);
	int st = system(cmd);
	result r;
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	r.out = zb_test_slurp(out, NULL);
	r.err = zb_test_slurp(err, NULL);
	return r;
}

static result run(const char *args)
{
	return run_env(NULL, args);
}

static void result_free(result *r)
{
	free(r->out);
	free(r->err);
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void exec_sql(sqlite3 *h, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		print_error("sql failed: %s\n%s\n", msg ? msg : "?", sql);
		sqlite3_free(msg);
		fail();
	}
}

static long long query_int(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *q;
	long long v = -1;
	if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static int run_ok(const char *args)
{
	result r = run(args);
	int ok = r.rc == 0;
	if (!ok)
		print_error("zbench %s: exit %d: %s", args, r.rc, r.err);
	result_free(&r);
	return ok;
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
	have_gnuplot = system("command -v gnuplot >/dev/null 2>&1") == 0;
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	snprintf(db, sizeof db, "%s/zb.db", tmpdir);

	char args[4096];
	snprintf(args, sizeof args, "sweep --pcie gen3,gen4,gen5 --ratio 0:1:0.25 --policy dpu --cores 8,16 --db %s",
		 db);
	if (!run_ok(args))
		return -1;
	snprintf(args, sizeof args, "predict --timeline --steps 6 --db %s", db);
	if (!run_ok(args))
		return -1;

	/* synthetic measurements: what `zbench run` would store on a GPU */
	sqlite3 *h;
	if (sqlite3_open(db, &h) != SQLITE_OK)
		return -1;
	sweep_run = query_int(h, "SELECT max(id) FROM runs WHERE kind = 'sweep'");
	timeline_config = query_int(h, "SELECT max(config_id) FROM events WHERE source = 'predicted'");
	if (sweep_run <= 0 || timeline_config <= 0) {
		print_error("no sweep run (%lld) or timeline config (%lld)\n", sweep_run, timeline_config);
		sqlite3_close(h);
		return -1;
	}
	char sql[1024];
	/* measured events: the predicted ones 3% slower, on another clock origin */
	snprintf(sql, sizeof sql,
		 "INSERT INTO events(config_id, source, task_id, start_ns, end_ns)"
		 " SELECT config_id, 'measured', task_id, 5000000 + start_ns * 103 / 100, 5000000 + end_ns * 103 / 100"
		 " FROM events WHERE config_id = %lld AND source = 'predicted'",
		 timeline_config);
	exec_sql(h, sql);
	/* measured steps of six sweep configurations: predicted * (1 + f), f from -6% to +6% */
	for (int id = 1; id <= 6; id++)
		for (int step = 0; step < 6; step++) {
			snprintf(sql, sizeof sql,
				 "INSERT INTO steps(config_id, source, step, time_s) SELECT config_id, 'measured', %d,"
				 " step_time_s * (1 + %d * 0.03) * (CASE WHEN %d < 2 THEN 1.5 ELSE 1 END)"
				 " FROM predictions WHERE config_id = %d",
				 step, (id % 5) - 2, step, id);
			exec_sql(h, sql);
		}
	sqlite3_close(h);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

#define NEED_GNUPLOT()                                                                              \
	do {                                                                                        \
		if (!have_gnuplot) {                                                                \
			print_message("skipped: gnuplot not installed (scripts/deps.sh installs gnuplot-nox)\n"); \
			skip();                                                                     \
			return;                                                                     \
		}                                                                                   \
	} while (0)

/* The file is a whole PNG or SVG image, and no FILE.tmp is left beside it. */
static void assert_image(const char *path)
{
	size_t n;
	char *s = zb_test_slurp(path, &n);
	const char *dot = strrchr(path, '.');
	if (n < 200) {
		print_error("%s: %zu bytes, want a non-empty image\n", path, n);
		free(s);
		fail();
	}
	if (!strcmp(dot, ".png")) {
		static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
		if (memcmp(s, sig, 8) != 0) {
			print_error("%s: no PNG signature\n", path);
			free(s);
			fail();
		}
	} else {
		const char *p = s;
		while (*p == ' ' || *p == '\n')
			p++;
		if ((strncmp(p, "<?xml", 5) && strncmp(p, "<svg", 4)) || !strstr(s, "</svg>")) {
			print_error("%s: not a whole SVG document (starts '%.20s')\n", path, p);
			free(s);
			fail();
		}
	}
	free(s);
	char tmp[700];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (exists(tmp)) {
		print_error("%s left behind\n", tmp);
		fail();
	}
}

static void plot_kind(const char *kind, const char *extra)
{
	static const char *const exts[] = { "png", "svg" };
	for (int e = 0; e < 2; e++) {
		char out[600], args[4096];
		snprintf(out, sizeof out, "%s/%s%s.%s", tmpdir, kind, extra[0] ? "-opt" : "", exts[e]);
		snprintf(args, sizeof args, "plot %s %s --db %s -o %s", kind, extra, db, out);
		result r = run(args);
		if (r.rc != 0 || count_lines(r.out) != 1)
			print_error("zbench %s: exit %d\nstdout: %s\nstderr: %s", args, r.rc, r.out, r.err);
		assert_int_equal(r.rc, 0);
		assert_int_equal(count_lines(r.out), 1);
		assert_non_null(strstr(r.out, out));
		assert_image(out);
		result_free(&r);
	}
}

/* ---- every kind, PNG and SVG ----------------------------------------------------- */

static void test_ratio(void **state)
{
	NEED_GNUPLOT();
	plot_kind("ratio", "");
	/* the sweep: 30 configurations, one line per PCIe generation and core count */
	result r;
	char args[4096];
	snprintf(args, sizeof args, "plot ratio --db %s -o %s/r.png", db, tmpdir);
	r = run(args);
	assert_int_equal(r.rc, 0);
	if (!strstr(r.out, "30 configurations in 6 lines"))
		print_error("stdout: %s", r.out);
	assert_non_null(strstr(r.out, "30 configurations in 6 lines"));
	result_free(&r);
}

static void test_hardware(void **state)
{
	NEED_GNUPLOT();
	plot_kind("hardware", "");
	char extra[64];
	snprintf(extra, sizeof extra, "--run %lld", sweep_run);
	plot_kind("hardware", extra);
}

static void test_accuracy(void **state)
{
	NEED_GNUPLOT();
	plot_kind("accuracy", "");
	/* six configurations with measured steps and one with measured events only;
	 * the worst is config 5, measured 6% faster: |p - m| / m = 0.06 / 0.94 = 6.4% */
	char args[4096];
	snprintf(args, sizeof args, "plot accuracy --db %s -o %s/a.png", db, tmpdir);
	result r = run(args);
	assert_int_equal(r.rc, 0);
	if (!strstr(r.out, "7 configurations") || !strstr(r.out, "worst 6.4%"))
		print_error("stdout: %s", r.out);
	assert_non_null(strstr(r.out, "7 configurations"));
	assert_non_null(strstr(r.out, "worst 6.4%"));
	result_free(&r);
}

static void test_timeline(void **state)
{
	NEED_GNUPLOT();
	plot_kind("timeline", "");
	char extra[64];
	snprintf(extra, sizeof extra, "--config %lld", timeline_config);
	plot_kind("timeline", extra);
	/* the middle of six steps, predicted and measured */
	char args[4096];
	snprintf(args, sizeof args, "plot timeline --db %s -o %s/t.png", db, tmpdir);
	result r = run(args);
	assert_int_equal(r.rc, 0);
	if (!strstr(r.out, "step 3:") || !strstr(r.out, "measured tasks") || strstr(r.out, " 0 measured"))
		print_error("stdout: %s", r.out);
	assert_non_null(strstr(r.out, "step 3:"));
	assert_null(strstr(r.out, " 0 measured"));
	result_free(&r);
}

static void test_memory(void **state)
{
	NEED_GNUPLOT();
	plot_kind("memory", "");
	char extra[64];
	snprintf(extra, sizeof extra, "--config %lld", timeline_config);
	plot_kind("memory", extra);

	/* stored totals that the recomputed terms do not add up to (a database of
	 * another zbench version): drawn as totals, and said so */
	char other[600], args[4096];
	snprintf(other, sizeof other, "%s/other.db", tmpdir);
	snprintf(args, sizeof args, "sweep --pcie gen4 --policy dpu --ratio 0,1 --db %s", other);
	assert_true(run_ok(args));
	sqlite3 *h;
	assert_int_equal(sqlite3_open(other, &h), SQLITE_OK);
	exec_sql(h, "UPDATE predictions SET gpu_bytes = gpu_bytes * 1.1 WHERE config_id = 1");
	sqlite3_close(h);
	snprintf(args, sizeof args, "plot memory --db %s -o %s/other.png", other, tmpdir);
	result r = run(args);
	if (r.rc != 0 || !strstr(r.out, "2 memory settings (some without a term breakdown)"))
		print_error("exit %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "2 memory settings (some without a term breakdown)"));
	result_free(&r);
	snprintf(args, sizeof args, "%s/other.png", tmpdir);
	assert_image(args);
}

/* --data keeps the generated script and data for editing */
static void test_keep_data(void **state)
{
	NEED_GNUPLOT();
	char args[4096], dir[600], path[700];
	snprintf(dir, sizeof dir, "%s/kept", tmpdir);
	snprintf(args, sizeof args, "plot ratio --db %s -o %s/kept.svg --data %s", db, tmpdir, dir);
	result r = run(args);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, dir));
	result_free(&r);
	snprintf(path, sizeof path, "%s/plot.gp", dir);
	assert_true(exists(path));
	snprintf(path, sizeof path, "%s/throughput.dat", dir);
	assert_true(exists(path));
}

static void test_sweep_plot(void **state)
{
	NEED_GNUPLOT();
	char args[4096], out[600];
	snprintf(out, sizeof out, "%s/sweep.svg", tmpdir);
	snprintf(args, sizeof args, "sweep --pcie gen4,gen5 --ratio 0:1:0.5 --policy overlap --db %s --plot %s", db,
		 out);
	result r = run(args);
	if (r.rc != 0 || !strstr(r.out, "# plot: "))
		print_error("exit %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "# plot: "));
	assert_image(out);
	result_free(&r);
	/* no ratio axis: throughput against cores instead */
	snprintf(out, sizeof out, "%s/sweep-cores.png", tmpdir);
	snprintf(args, sizeof args, "sweep --cores 8,16 --policy dpu --ratio 0.5 --db %s --plot %s --csv", db, out);
	r = run(args);
	assert_int_equal(r.rc, 0);
	assert_null(strstr(r.out, "# plot")); /* --csv output stays CSV */
	assert_image(out);
	result_free(&r);
}

/* ---- bad inputs: exit 2, one line naming the value, no image -------------------- */

static void expect_bad(const char *env, const char *args, const char *needle, const char *no_file)
{
	result r = run_env(env, args);
	if (r.rc != 2 || count_lines(r.err) != 1 || (needle && !strstr(r.err, needle)))
		print_error("zbench %s: exit %d, want 2 and one line with '%s'\nstderr: %s", args, r.rc,
			    needle ? needle : "", r.err);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	if (needle)
		assert_non_null(strstr(r.err, needle));
	assert_string_equal(r.out, "");
	if (no_file && exists(no_file)) {
		print_error("%s written by a failed plot\n", no_file);
		fail();
	}
	result_free(&r);
}

static void test_bad_inputs(void **state)
{
	char args[4096], out[600], missing[600];
	snprintf(out, sizeof out, "%s/bad.png", tmpdir);
	snprintf(missing, sizeof missing, "%s/nope.db", tmpdir);

	snprintf(args, sizeof args, "plot frobnicate --db %s -o %s", db, out);
	expect_bad(NULL, args, "frobnicate", out);
	expect_bad(NULL, "plot", "missing plot kind", NULL);
	snprintf(args, sizeof args, "plot ratio --db %s -o %s extra", db, out);
	expect_bad(NULL, args, "extra", out);
	snprintf(args, sizeof args, "plot ratio --db %s -o %s/bad.pdf", db, tmpdir);
	expect_bad(NULL, args, "bad.pdf", NULL);
	snprintf(args, sizeof args, "plot ratio --db %s", db);
	expect_bad(NULL, args, "-o", NULL);
	snprintf(args, sizeof args, "plot ratio --db %s --run abc -o %s", db, out);
	expect_bad(NULL, args, "abc", out);
	snprintf(args, sizeof args, "plot ratio --db %s --run 1 --config 1 -o %s", db, out);
	expect_bad(NULL, args, "--config", out);
	/* a missing database is reported and not created */
	snprintf(args, sizeof args, "plot ratio --db %s -o %s", missing, out);
	expect_bad(NULL, args, missing, out);
	assert_false(exists(missing));
	/* gnuplot missing: the one line says what to install */
	snprintf(args, sizeof args, "plot ratio --db %s -o %s", db, out);
	expect_bad("ZB_GNUPLOT=/nonexistent/gnuplot", args, "apt-get install gnuplot-nox", out);
	snprintf(args, sizeof args, "sweep --db %s --plot %s", db, out);
	expect_bad("ZB_GNUPLOT=/nonexistent/gnuplot", args, "gnuplot-nox", out);
	snprintf(args, sizeof args, "sweep --no-db --plot %s", out);
	expect_bad(NULL, args, "--no-db", out);
}

static void test_bad_inputs_with_gnuplot(void **state)
{
	NEED_GNUPLOT();
	char args[4096], out[600];
	snprintf(out, sizeof out, "%s/bad.png", tmpdir);
	snprintf(args, sizeof args, "plot ratio --db %s --run 999 -o %s", db, out);
	expect_bad(NULL, args, "no run 999", out);
	snprintf(args, sizeof args, "plot timeline --db %s --config 999 -o %s", db, out);
	expect_bad(NULL, args, "no config 999", out);
	snprintf(args, sizeof args, "plot ratio --db %s -o /proc/forbidden/x.png", db);
	expect_bad(NULL, args, "/proc/forbidden/x.png", NULL);
	char dir[600];
	snprintf(dir, sizeof dir, "%s/dir.png", tmpdir);
	assert_true(mkdir(dir, 0755) == 0 || exists(dir));
	snprintf(args, sizeof args, "plot ratio --db %s -o %s", db, dir);
	expect_bad(NULL, args, "directory", NULL);
	snprintf(args, sizeof args, "sweep --db %s --plot /proc/forbidden/x.svg", db);
	expect_bad(NULL, args, "/proc/forbidden/x.svg", NULL);

	/* a database without measurements: accuracy says so; timeline needs events */
	char fresh[600];
	snprintf(fresh, sizeof fresh, "%s/fresh.db", tmpdir);
	snprintf(args, sizeof args, "sweep --pcie gen4 --policy dpu --ratio 0.5 --db %s", fresh);
	assert_true(run_ok(args));
	snprintf(args, sizeof args, "plot accuracy --db %s -o %s", fresh, out);
	expect_bad(NULL, args, "measured", out);
	snprintf(args, sizeof args, "plot timeline --db %s -o %s", fresh, out);
	expect_bad(NULL, args, "timeline events", out);
	/* the hardware plot of a run that is not a sweep works; of no sweep at all, it says so */
	char pred[600];
	snprintf(pred, sizeof pred, "%s/pred.db", tmpdir);
	snprintf(args, sizeof args, "predict --db %s", pred);
	assert_true(run_ok(args));
	snprintf(args, sizeof args, "plot hardware --db %s -o %s", pred, out);
	expect_bad(NULL, args, "no sweep run", out);
}

/* gnuplot that fails: exit 1, its failure reported, no image under the name */
static void test_gnuplot_failure(void **state)
{
	char args[4096], out[600], env[700];
	snprintf(out, sizeof out, "%s/fail.png", tmpdir);
	snprintf(args, sizeof args, "plot ratio --db %s -o %s", db, out);
	snprintf(env, sizeof env, "TMPDIR=%s ZB_GNUPLOT=/bin/false", tmpdir);
	result r = run_env(env, args);
	if (r.rc != 5 || count_lines(r.err) != 1 || !strstr(r.err, "gnuplot failed"))
		print_error("exit %d\nstderr: %s", r.rc, r.err);
	assert_int_equal(r.rc, 5); /* a program zbench runs failed (common/error.h zb_exit) */
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "gnuplot failed"));
	assert_false(exists(out));
	result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ratio),
		cmocka_unit_test(test_hardware),
		cmocka_unit_test(test_accuracy),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_keep_data),
		cmocka_unit_test(test_sweep_plot),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_bad_inputs_with_gnuplot),
		cmocka_unit_test(test_gnuplot_failure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
