/*
 * test_exit_codes.c - the exit codes of zbench (common/error.h zb_exit): the one table
 * from error status to code covers every status once; docs/ci.md lists exactly the
 * codes the code can give; and each code happens, from a real command: 0 a prediction,
 * 1 a planted regression, 2 a bad flag value, 3 a run without a GPU, 4 a configuration
 * that does not fit, 5 a plot whose gnuplot fails, 130 a sweep stopped by SIGINT.
 */
#include "tests/harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "common/error.h"
#include "exec/executor.h"

static char dir[64];
static const char *zbench;

static int setup(void **state) { return zb_test_cli_setup(&zbench, dir, sizeof dir); }

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int code_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int code_of(const char *fmt, ...)
{
	char args[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	zb_test_result r = zb_test_run(zbench, dir, args);
	int rc = r.rc;
	print_message("zbench %s -> %d%s%s", args, rc, r.err[0] ? ": " : "\n", r.err);
	zb_test_result_free(&r);
	return rc;
}

/* Every status has one row; the codes are those zb_exit names. */
static void test_table(void **state)
{
	int n;
	const zb_exit_row *t = zb_exit_codes(&n);
	assert_int_equal(n, ZB_E_INTERNAL + 1);
	for (int s = ZB_OK; s <= ZB_E_INTERNAL; s++) {
		int rows = 0;
		for (int i = 0; i < n; i++)
			rows += t[i].status == (zb_status)s;
		assert_int_equal(rows, 1);
		assert_true(t[s].meaning && t[s].meaning[0]);
	}
	assert_int_equal(zb_exit_code(ZB_OK), 0);
	assert_int_equal(zb_exit_code(ZB_E_INPUT), 2);
	assert_int_equal(zb_exit_code(ZB_E_STORE), 2);
	assert_int_equal(zb_exit_code(ZB_E_NOCUDA), 3);
	assert_int_equal(zb_exit_code(ZB_E_NOGPU), 3);
	assert_int_equal(zb_exit_code(ZB_E_CUDA), 3);
	assert_int_equal(zb_exit_code(ZB_E_NOFIT), 4);
	assert_int_equal(zb_exit_code(ZB_E_NOMEM), 4);
	assert_int_equal(zb_exit_code(ZB_E_INTERNAL), 5);
	assert_int_equal(zb_exit_code(ZB_E_INTERRUPTED), 130);
}

/* docs/ci.md's table: the codes of the status table and 1 (a verdict), nothing else. */
static void test_documented(void **state)
{
	char *doc = zb_test_slurp("docs/ci.md", NULL);
	char *sec = strstr(doc, "## Exit codes");
	assert_non_null(sec);
	char *end = strstr(sec + 3, "\n## ");
	if (end)
		*end = 0;
	int documented[256] = { 0 }, ndoc = 0;
	for (char *line = strstr(sec, "\n| "); line; line = strstr(line + 1, "\n| ")) {
		char *e;
		long c = strtol(line + 3, &e, 10);
		if (e != line + 3 && *e == ' ' && c >= 0 && c < 256)
			documented[c]++, ndoc++;
	}
	int want[256] = { 0 }, nwant = 0, n;
	const zb_exit_row *t = zb_exit_codes(&n);
	want[ZB_EXIT_VERDICT] = 1;
	for (int i = 0; i < n; i++)
		want[t[i].code] = 1;
	for (int c = 0; c < 256; c++) {
		if (want[c] != (documented[c] == 1))
			print_error("exit code %d: %s in the table, documented %d times\n", c, want[c] ? "" : "not",
				    documented[c]);
		assert_int_equal(want[c], documented[c] == 1);
		nwant += want[c];
	}
	assert_int_equal(ndoc, nwant);
	free(doc);
}

static void test_each_code(void **state)
{
	char db[200], base[200];
	snprintf(db, sizeof db, "%s/codes.db", dir);
	snprintf(base, sizeof base, "%s/base.json", dir);
	assert_int_equal(code_of("predict --model gpt2 --no-db"), ZB_EXIT_OK);
	assert_int_equal(code_of("baseline save b --sim --limit 1 -o %s --no-db", base), ZB_EXIT_OK);
	assert_int_equal(code_of("regress --baseline %s --sim --plant-slowdown 0.1", base), ZB_EXIT_VERDICT);
	assert_int_equal(code_of("predict --pcie gen7 --no-db"), ZB_EXIT_INPUT);
	assert_int_equal(code_of("regress --baseline %s/missing.json --sim", dir), ZB_EXIT_INPUT);
	zb_error e = { 0 };
	if (!zb_exec_available(&e))
		assert_int_equal(code_of("run --model gpt2 --steps 2 --no-db"), ZB_EXIT_GPU);
	else
		print_message("a GPU is here: exit 3 (no GPU) not made\n");
	assert_int_equal(code_of("predict --model llama2-70b --policy none --no-db"), ZB_EXIT_NOFIT);
	assert_int_equal(code_of("sweep --model gpt2 --ratio 0:1:0.5 --db %s", db), ZB_EXIT_OK);
	char env[300], args[1400];
	snprintf(env, sizeof env, "ZB_GNUPLOT=/bin/false TMPDIR=%s", dir);
	snprintf(args, sizeof args, "%s %s plot ratio --db %s -o %s/x.png >/dev/null 2>&1", env, zbench, db, dir);
	int st = system(args);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), ZB_EXIT_INTERNAL);
}

/* A long sweep stopped by SIGINT once rows come out. */
static void test_interrupted(void **state)
{
	char out[200], db[200];
	snprintf(out, sizeof out, "%s/int.csv", dir);
	snprintf(db, sizeof db, "%s/int.db", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(out, "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(99);
		execl(zbench, zbench, "sweep", "--ratio", "0:1:0.001", "--pcie", "gen3,gen4,gen5", "--policy",
		      "offload,dpu", "-j", "1", "--csv", "--db", db, (char *)NULL);
		_exit(98);
	}
	struct stat sb;
	for (int i = 0; i < 600 && (stat(out, &sb) != 0 || sb.st_size < 8000); i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGINT);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), ZB_EXIT_INTERRUPTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_documented),
		cmocka_unit_test(test_each_code),
		cmocka_unit_test(test_interrupted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
