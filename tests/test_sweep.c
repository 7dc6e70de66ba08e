/*
 * test_sweep.c - `zbench sweep` at scale and `zbench merge`, through the binary:
 * the same rows, in the same order, stored the same whatever -j; eight shards
 * merged equal one unsharded sweep (every column of configs and predictions, REALs
 * to the bit); a merge refuses duplicates and itself; Ctrl-C keeps the rows so
 * far; oversized sweeps and empty ranges are refused.
 *
 * The binary is $ZBENCH (set by tests/run.sh), default build/zbench.
 */
#include "tests/harness.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static const char *zbench;

#define GRID "--ratio 0:1:0.25 --pcie gen3,gen5 --cores 4,16 --policy none,overlap,dpu --gpu h100,h200 --steps 4"

/* Run zbench with args; stdout to out_path (when given); returns the exit code. */
static int run(const char *args, const char *out_path)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s/stderr </dev/null", zbench, args, out_path ? out_path : "/dev/null",
		 tmpdir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static char *path(const char *name)
{
	static char buf[8][600];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 600, "%s/%s", tmpdir, name);
	return p;
}

/* Every configuration with its prediction, ids and the run left out, REALs as
 * hexadecimal floats (so equal text means equal bits), in id order. */
static char *dump(const char *db)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(h, "SELECT c.*, p.* FROM configs c JOIN predictions p"
					       " ON p.config_id = c.id ORDER BY c.id", -1, &q, NULL),
			 SQLITE_OK);
	size_t cap = 1 << 16, len = 0;
	char *s = malloc(cap);
	s[0] = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(q); i++) {
			const char *name = sqlite3_column_name(q, i);
			if (!strcmp(name, "id") || !strcmp(name, "run_id") || !strcmp(name, "config_id"))
				continue;
			char v[64];
			const char *t = v;
			switch (sqlite3_column_type(q, i)) {
			case SQLITE_NULL: t = "NULL"; break;
			case SQLITE_INTEGER: snprintf(v, sizeof v, "%lld", (long long)sqlite3_column_int64(q, i)); break;
			case SQLITE_FLOAT: snprintf(v, sizeof v, "%a", sqlite3_column_double(q, i)); break;
			default: t = (const char *)sqlite3_column_text(q, i);
			}
			size_t n = strlen(t) + 2;
			if (len + n + 1 > cap) {
				cap = 2 * (len + n + 1);
				s = realloc(s, cap);
			}
			len += (size_t)snprintf(s + len, cap - len, "%s|", t);
		}
		s[len++] = '\n';
		s[len] = 0;
	}
	sqlite3_finalize(q);
	sqlite3_close(h);
	return s;
}

static long long query(const char *db, const char *sql)
{
	sqlite3 *h;
	long long n = -1;
	sqlite3_stmt *q;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			n = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(h);
	return n;
}

static void same_text(const char *a, const char *b, const char *what)
{
	if (strcmp(a, b)) {
		size_t i = 0;
		while (a[i] && a[i] == b[i])
			i++;
		print_error("%s differ at byte %zu:\n%.200s\n---\n%.200s\n", what, i, a + i, b + i);
		fail();
	}
}

static void test_jobs_same_rows(void **state)
{
	const char *fmts[] = { "", "--csv", "--json" };
	for (int f = 0; f < 3; f++) {
		char args[1200];
		char *want = NULL;
		for (int j = 1; j <= 3; j++) {
			char db[600], out[600];
			snprintf(db, sizeof db, "%s/j%d-%d.db", tmpdir, j, f);
			snprintf(out, sizeof out, "%s/j%d-%d.out", tmpdir, j, f);
			snprintf(args, sizeof args, "sweep " GRID " %s -j %d --db %s", fmts[f], j, db);
			assert_int_equal(run(args, out), 0);
			char *text = zb_test_slurp(out, NULL);
			char *rows = dump(db);
			assert_true(strlen(rows) > 0);
			char *both = malloc(strlen(text) + strlen(rows) + 1);
			strcpy(both, text);
			strcat(both, rows);
			if (!want)
				want = both;
			else {
				same_text(both, want, "output and stored rows with -j 1 and -j N");
				free(both);
			}
			free(text);
			free(rows);
		}
		free(want);
	}
}

static void test_shards_merged_equal_one_sweep(void **state)
{
	char args[2000];
	snprintf(args, sizeof args, "sweep " GRID " --csv --db %s", path("whole.db"));
	assert_int_equal(run(args, NULL), 0);
	int len = snprintf(args, sizeof args, "merge %s", path("merged.db"));
	for (int k = 1; k <= 8; k++) {
		char name[32], one[1200];
		snprintf(name, sizeof name, "shard%d.db", k);
		snprintf(one, sizeof one, "sweep " GRID " --shard %d/8 -j 2 --db %s", k, path(name));
		assert_int_equal(run(one, NULL), 0);
		len += snprintf(args + len, sizeof args - (size_t)len, " %s", path(name));
	}
	assert_int_equal(run(args, NULL), 0);
	char *whole = dump(path("whole.db")), *merged = dump(path("merged.db"));
	same_text(merged, whole, "8 shards merged and one sweep");
	assert_int_equal(query(path("merged.db"), "SELECT count(*) FROM runs"), 8);
	free(whole);
	free(merged);

	/* the same shard again, the output itself, a missing file: refused, nothing changes */
	long long before = query(path("merged.db"), "SELECT count(*) FROM configs");
	snprintf(args, sizeof args, "merge %s %s", path("merged.db"), path("shard3.db"));
	assert_int_equal(run(args, NULL), 2);
	char *err = zb_test_slurp(path("stderr"), NULL);
	assert_contains(err, "already in");
	free(err);
	snprintf(args, sizeof args, "merge %s %s %s", path("merged.db"), path("whole.db"), path("merged.db"));
	assert_int_equal(run(args, NULL), 2);
	snprintf(args, sizeof args, "merge %s %s", path("merged.db"), path("missing.db"));
	assert_int_equal(run(args, NULL), 2);
	assert_int_equal(query(path("merged.db"), "SELECT count(*) FROM configs"), before);
}

static void test_refused_sizes(void **state)
{
	char args[1200];
	/* 10001 x 1001 configurations: refused with its size, nothing stored */
	snprintf(args, sizeof args, "sweep --ratio 0:1:0.0001 --micro-batch 1:1001:1 --db %s", path("big.db"));
	assert_int_equal(run(args, NULL), 2);
	char *err = zb_test_slurp(path("stderr"), NULL);
	assert_contains(err, "10011001 configurations");
	assert_contains(err, "--yes");
	free(err);
	struct stat st;
	assert_int_not_equal(stat(path("big.db"), &st), 0);
	const char *empty[] = { "--ratio 0:1:0", "--ratio 1:0:0.1", "--shard 0/4", "--shard 5/4", "-j 0" };
	for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
		snprintf(args, sizeof args, "sweep %s --db %s", empty[i], path("big.db"));
		assert_int_equal(run(args, NULL), 2);
		assert_int_not_equal(stat(path("big.db"), &st), 0);
	}
}

/* A configuration that does not fit is reported and stored without a schedule
 * (no graph is built for it: its PCIe bytes are NULL); the others are simulated. */
static void test_does_not_fit_without_graph(void **state)
{
	char args[1200];
	snprintf(args, sizeof args, "sweep --model llama2-70b --policy none,offload --gpu h100,h200 --steps 4 --csv --db %s",
		 path("fit.db"));
	assert_int_equal(run(args, path("fit.csv")), 0);
	char *out = zb_test_slurp(path("fit.csv"), NULL);
	assert_contains(out, ",no,"); /* fits no, and why: */
	assert_contains(out, "\"gpu needs ");
	free(out);
	assert_int_equal(query(path("fit.db"), "SELECT count(*) FROM predictions"), 4);
	long long nofit = query(path("fit.db"), "SELECT count(*) FROM predictions WHERE fits = 0");
	assert_true(nofit > 0);
	assert_int_equal(query(path("fit.db"), "SELECT count(*) FROM predictions WHERE fits = 0 AND pcie_h2d_bytes IS NULL"
					       " AND step_time_s IS NULL AND fit_reason IS NOT NULL"),
			 nofit);
}

/* Ctrl-C: the sweep stops, exit 130, the run is marked interrupted and the rows
 * printed so far are stored. */
static void test_interrupt_keeps_rows(void **state)
{
	char out[600], db[600];
	snprintf(out, sizeof out, "%s/int.out", tmpdir);
	snprintf(db, sizeof db, "%s/int.db", tmpdir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(out, "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(99);
		execl(zbench, zbench, "sweep", "--ratio", "0:1:0.001", "--pcie", "gen3,gen4,gen5,gen6", "--cores",
		      "4,8,16,32,64", "--hypothetical-cpu", "--policy", "offload,overlap,dpu", "-j", "1", "--csv", "--db", db, (char *)NULL);
		_exit(98);
	}
	/* wait until rows come out (stdout to a file is written in blocks) */
	struct stat st;
	for (int i = 0; i < 600 && (stat(out, &st) != 0 || st.st_size < 20000); i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGINT);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 130);
	long long configs = query(db, "SELECT count(*) FROM configs");
	assert_true(configs > 0);
	assert_true(configs < 60060);
	assert_int_equal(query(db, "SELECT count(*) FROM predictions"), configs);
	assert_int_equal(query(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
	printf("# interrupted after %lld configurations\n", configs);
}

static int setup(void **state)
{
	(void)state;
	return zb_test_cli_setup(&zbench, tmpdir, sizeof tmpdir);
}

static int teardown(void **state)
{
	(void)state;
	return zb_test_cli_teardown(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_same_rows),
		cmocka_unit_test(test_shards_merged_equal_one_sweep),
		cmocka_unit_test(test_refused_sizes),
		cmocka_unit_test(test_does_not_fit_without_graph),
		cmocka_unit_test(test_interrupt_keeps_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
