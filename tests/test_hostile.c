/*
 * test_hostile.c - zbench under hostile input and hostile conditions: every
 * reproducer of the hostile-input reviews exits 2 with one line naming the value and
 * the limit (or 0 with a correct result) within a time and memory budget; extreme
 * hardware values never reach a result as NaN or inf; damaged databases are
 * refused; concurrent writers all store their rows; output errors are exit codes.
 *
 * The binary is $ZBENCH (tests/run.sh sets it). The memory budget is on top of
 * `zbench version`'s own peak; under the sanitizer build (ZB_SAN=1) the time and
 * memory budgets are five times larger.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/graph.h"
#include "core/limits.h"
#include "core/memory.h"
#include "core/model.h"
#include "inputs/presets.h"

static char tmpdir[256];
static const char *zbench;
static double time_budget_s = 1.0;   /* "within 1 s and 100 MB" per hostile value */
static uid_t run_uid;                /* nonzero: run zbench as this user (from root) */
static long rss_budget_kb = 100 * 1024;

typedef struct result {
	int rc;
	char *out, *err;
	double wall_s;
	long rss_kb; /* peak resident set of the command (the shell's children) */
} result;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Run `zbench args` (shell syntax) in tmpdir, capturing stdout, stderr, the exit
 * code, the wall time and the peak memory (wait4's rusage of the shell, whose
 * ru_maxrss covers its largest child). */
static result run_to(const char *args, const char *out)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd %s && exec %s %s >%s 2>stderr </dev/null", tmpdir, zbench, args, out);
	char old[600];
	snprintf(old, sizeof old, "%s/stdout", tmpdir); /* (maybe another user's) */
	unlink(old);
	snprintf(old, sizeof old, "%s/stderr", tmpdir);
	unlink(old);
	double t0 = now_s();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (run_uid && (setgid(run_uid) != 0 || setuid(run_uid) != 0))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	assert_true(wait4(pid, &st, 0, &ru) == pid);
	result r;
	r.wall_s = now_s() - t0;
	r.rss_kb = ru.ru_maxrss;
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	char path[512];
	snprintf(path, sizeof path, "%s/stdout", tmpdir);
	r.out = zb_test_slurp(path, NULL);
	snprintf(path, sizeof path, "%s/stderr", tmpdir);
	r.err = zb_test_slurp(path, NULL);
	return r;
}

static result run(const char *args) { return run_to(args, "stdout"); }

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

/* exit `code` (2 refused, 4 does not fit: common/error.h zb_exit), one line on stderr
 * containing each needle (NULL-terminated), nothing on stdout unless allow_out (a
 * configuration that does not fit still prints its memory table), within the budgets */
static void expect_exit(const char *args, int code, int allow_out, const char *const *needles)
{
	result r = run(args);
	if (r.rc != code || count_lines(r.err) != 1 || (r.out[0] && !allow_out) || r.wall_s > time_budget_s || r.rss_kb > rss_budget_kb) {
		print_error("zbench %s: exit %d, %.2f s, %ld KB, stderr: %s, stdout: %.200s\n", args, r.rc, r.wall_s,
			    r.rss_kb, r.err, r.out);
		fail();
	}
	for (const char *const *n = needles; *n; n++)
		assert_contains(r.err, *n);
	result_free(&r);
}

#define REFUSED(args, ...) expect_exit(args, 2, 0, (const char *const[]){ __VA_ARGS__, NULL })
#define NOFIT(args) expect_exit(args, 4, 1, (const char *const[]){ "does not fit", NULL })

static void write_tmp(const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	zb_test_write_file(path, text);
}

/* ---- the hostile-input reproducers ----------------------------------------- */

static void test_memory_safety_reproducers(void **state)
{
	/* double free of an empty list item */
	REFUSED("sweep --ratio 0.5, --no-db", "empty item", "'0.5,'");
	REFUSED("sweep --ratio ,0.5 --no-db", "empty item");
	REFUSED("sweep --pcie gen4,,gen5 --no-db", "empty item");
	/* int overflow of the prefetch window */
	REFUSED("predict --offload-param --prefetch 2147483647 --no-db", "--prefetch 2147483647", "limit 100000");
	/* calloc size overflow: one bucket per parameter */
	REFUSED("predict --bucket 1 --no-db", "schedule too large", "limit 2000000");
	REFUSED("predict --bucket 1000 --no-db", "schedule too large", "--bucket");
}

static void test_runaway_memory_reproducers(void **state)
{
	REFUSED("predict --steps 100000 --no-db", "--steps 100000", "limit 10000");
	REFUSED("predict --gas 1000000 --no-db", "--gas 1000000", "limit 65536");
	REFUSED("predict --ffn 2147483647 --no-db", "--ffn 2147483647", "limit 4194304");
	REFUSED("predict --hidden 2147483647 --no-db", "--hidden 2147483647", "limit 1048576");
	REFUSED("predict --layers 100000 --no-db", "--layers 100000", "limit 10000");
	REFUSED("predict --model llama2-7b --micro-batch 65536 --seq 65536 --no-db", "tokens", "limit");
	/* within the limits but far too large: the memory check comes before the
	 * schedule, so these say "does not fit" at once */
	NOFIT("predict --hidden 1000000 --no-db");
	NOFIT("predict --layers 10000 --no-db");
	/* a sweep streams: each row's schedule and timeline are released once the row is
	 * printed (and stored), so its memory is one schedule's (and the other framework's
	 * beside it) per thread, --timeline or not: one thread, so the budget holds on any
	 * number of cores */
	static const char *const sweeps[] = {
		"sweep --timeline --model gpt2 --gas 16 --steps 30 --ratio 0:1:0.01 --no-db --csv -j 1", /* 404 x 300k tasks */
		"sweep --model gpt2 --gas 16 --steps 30 --ratio 0:1:0.05 --no-db --csv -j 1",
	};
	for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
		result r = run(sweeps[i]);
		if (r.rc != 0 || r.rss_kb > rss_budget_kb) {
			print_error("%s: exit %d, %ld KB (budget %ld), %s\n", sweeps[i], r.rc, r.rss_kb, rss_budget_kb, r.err);
			fail();
		}
		result_free(&r);
	}
	/* within the limits and fitting, but a schedule of too many tasks */
	REFUSED("predict --model gpt2 --gas 4096 --steps 100 --no-db", "schedule too large", "tasks");
}

static void test_hostile_files(void **state)
{
	write_tmp("hf-embd.json", "{\"model_type\": \"gpt2\", \"n_layer\": 36, \"n_embd\": 1280000000, \"n_head\": 20,"
				  " \"n_inner\": null, \"vocab_size\": 50257, \"n_positions\": 1024}");
	REFUSED("predict --hf-config hf-embd.json --no-db", "hf-embd.json", "'n_embd' 1280000000", "limit");
	write_tmp("hf-ffn.json", "{\"model_type\": \"llama\", \"num_hidden_layers\": 32, \"hidden_size\": 4096,"
				 " \"intermediate_size\": 2147483647, \"num_attention_heads\": 32,"
				 " \"vocab_size\": 32000, \"max_position_embeddings\": 4096}");
	REFUSED("predict --hf-config hf-ffn.json --no-db", "'intermediate_size' 2147483647", "limit");
	write_tmp("model-big.json", "{\"layers\": 16000000, \"hidden\": 1280, \"heads\": 20, \"ffn\": 5120,"
				    " \"vocab\": 50257, \"max_seq\": 1024, \"gated_mlp\": 0, \"bias\": 1,"
				    " \"tied_embeddings\": 1}");
	REFUSED("predict --model-file model-big.json --no-db", "model-big.json", "layers 16000000", "limit");
	write_tmp("ds-batch.json", "{\"train_micro_batch_size_per_gpu\": 4000000000000,"
				   " \"gradient_accumulation_steps\": 4000000000000}");
	REFUSED("predict --ds-config ds-batch.json --no-db", "train_micro_batch_size_per_gpu", "limit");
	write_tmp("ds-tb.json", "{\"train_batch_size\": 9000000000000000, \"gradient_accumulation_steps\": 3}");
	REFUSED("predict --ds-config ds-tb.json --no-db", "train_batch_size", "limit");
}

/* ---- hardware values: no NaN or inf reaches a result -------------------------- */

/* Every numeric field of a hardware file set to each extreme value: exit 2 with
 * one line, or exit 0 with a finite positive step time in --json. */
static void test_extreme_hardware_values(void **state)
{
	static const char *const parts[] = { "link", "gpu", "cpu" };
	static const double vals[] = { 1e308, 5e-324, 1e-300, 1e-9, 1e300, 1e-5, 1e20, 0.5, 0 };
	json_error_t je;
	char base_path[512];
	snprintf(base_path, sizeof base_path, "%s/base-hw.json", tmpdir);
	result r = run("list presets"); /* any command, to know the binary runs */
	result_free(&r);
	const char *base_text =
		"{\"name\": \"x\", \"link\": {\"name\": \"l\", \"h2d_Bps\": 5.3e10, \"d2h_Bps\": 5.5e10,"
		" \"duplex_h2d\": 0.92, \"duplex_d2h\": 0.93, \"copy_latency_s\": 4e-6, \"pageable_h2d_Bps\": 9e9,"
		" \"pageable_d2h_Bps\": 1e10}, \"gpu\": {\"name\": \"g\", \"mem_bytes\": 1.5e11, \"bf16_flops\": 7.5e14,"
		" \"fp16_flops\": 7.5e14, \"hbm_Bps\": 4e12, \"gemm_half_dim\": 143, \"kernel_latency_s\": 6e-6},"
		" \"cpu\": {\"name\": \"c\", \"cores\": 16, \"adam_params_per_core\": 7e8, \"dram_Bps\": 1.6e11,"
		" \"mem_bytes\": 1.35e11, \"task_latency_s\": 8e-5, \"adam_Bps\": 1.2e11},"
		" \"gpus_per_link\": 1, \"gpus_per_cpu\": 1}";
	json_t *base = json_loads(base_text, 0, &je);
	assert_non_null(base);
	int cases = 0, simulated = 0;
	for (size_t p = 0; p < 3; p++) {
		const char *key;
		json_t *v;
		json_object_foreach(json_object_get(base, parts[p]), key, v) {
			if (!json_is_number(v))
				continue;
			for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
				json_t *d = json_deep_copy(base);
				json_object_set_new(json_object_get(d, parts[p]), key, json_real(vals[i]));
				char path[512];
				snprintf(path, sizeof path, "%s/hw.json", tmpdir);
				assert_int_equal(json_dump_file(d, path, 0), 0);
				json_decref(d);
				r = run("predict --hw ./hw.json --model gpt2 --steps 3 --no-db --json");
				cases++;
				int ok = 0;
				if (r.rc == 2)
					ok = count_lines(r.err) == 1 && !r.out[0];
				else if (r.rc == 0) {
					json_t *j = json_loads(r.out, 0, &je);
					json_t *st = j ? json_object_get(j, "step_time_s") : NULL;
					ok = st && json_is_real(st) && isfinite(json_real_value(st)) && json_real_value(st) > 0;
					json_decref(j);
					simulated++;
				}
				if (!ok) {
					print_error("%s.%s = %g: exit %d, stderr %s, stdout %.300s\n", parts[p], key, vals[i],
						    r.rc, r.err, r.out);
					fail();
				}
				result_free(&r);
			}
		}
	}
	json_decref(base);
	print_message("# %d extreme hardware values: %d simulated with a finite step time, %d refused\n", cases,
		      simulated, cases - simulated);
	assert_true(cases >= 150);
}

/* ---- the schedule's size estimate -------------------------------------------- */

/* zb_limits_tasks is an upper bound of what zb_graph_build emits, and a tight one
 * (so the limit refuses only schedules that really are large), for every model
 * preset and every policy, checkpointing mode and parameter offload. */
static void test_task_estimate_bounds_the_schedule(void **state)
{
	double worst = 0;
	for (int mi = 0; mi < zb_preset_count("model"); mi++) {
		for (int kind = 0; kind < ZB_POLICY_COUNT; kind++) {
			for (int ck = 0; ck < ZB_CKPT_COUNT; ck++) {
				for (int op = 0; op < 2; op++) {
					zb_config c;
					zb_error err = { 0 };
					memset(&c, 0, sizeof c);
					zb_preset_default_hw(&c.hw);
					assert_int_equal(zb_preset_model(zb_preset_name("model", mi), &c.model, &err), ZB_OK);
					zb_policy_defaults(&c.policy);
					c.policy.kind = (zb_policy_kind)kind;
					c.policy.ckpt = (zb_ckpt)ck;
					c.policy.ratio = 0.5;
					c.policy.gas = 2;
					c.policy.seq = 512;
					c.policy.offload_param = op && kind != ZB_POLICY_NONE && kind != ZB_POLICY_DPU;
					c.steps = 3;
					zb_graph g;
					assert_int_equal(zb_graph_build(&g, &c, &err), ZB_OK);
					int64_t est = zb_limits_tasks(&c);
					assert_true(est >= (int64_t)g.ntasks);
					assert_int_equal(zb_limits_buckets(&c), g.nbuckets);
					double ratio = (double)est / (double)g.ntasks;
					worst = ratio > worst ? ratio : worst;
					assert_true(ratio < 3.0);
					zb_graph_free(&g);
				}
			}
		}
	}
	print_message("# task estimate / tasks built: at most %.2f\n", worst);
}

/* The largest model the limits admit: every size computed from it stays in
 * int64 (under the sanitizer build a signed overflow would abort here), and
 * validation refuses one step beyond each limit, naming the field. */
static void test_largest_model_sizes(void **state)
{
	zb_model m = { .name = "max", .layers = ZB_MAX_LAYERS, .hidden = ZB_MAX_HIDDEN, .heads = 1024,
		       .kv_heads = 1024, .ffn = ZB_MAX_FFN, .vocab = ZB_MAX_VOCAB, .max_seq = ZB_MAX_POSITIONS,
		       .gated_mlp = 1, .bias = 1, .tied_embeddings = 0, .embed_proj = ZB_MAX_HIDDEN / 2 };
	zb_error err;
	assert_int_equal(zb_model_validate(&m, &err), ZB_OK);
	int64_t p = zb_model_params(&m);
	double h = m.hidden, f = m.ffn;
	double approx = (double)m.layers * (4 * h * h + 3 * h * f); /* the matrices alone */
	assert_true(p > 0 && (double)p >= approx && (double)p < 1.1 * approx + 1e15);
	assert_true(isfinite(zb_model_flops_per_token(&m, ZB_MAX_SEQ)));
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	c.model = m;
	zb_policy_defaults(&c.policy);
	c.policy.micro_batch = 1;
	c.policy.seq = 4096;
	c.steps = ZB_MAX_STEPS;
	assert_true(zb_limits_tasks(&c) > ZB_MAX_TASKS);
	assert_int_equal(zb_limits_schedule(&c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "schedule too large");
	zb_memory mem;
	zb_memory_estimate(&c, &mem);
	assert_false(mem.fits);
	/* one past each limit */
	struct {
		int *field;
		int limit;
		const char *name;
	} past[] = { { &m.layers, ZB_MAX_LAYERS, "layers" }, { &m.hidden, ZB_MAX_HIDDEN, "hidden" },
		     { &m.ffn, ZB_MAX_FFN, "ffn" }, { &m.vocab, ZB_MAX_VOCAB, "vocab" } };
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		zb_model bad = m;
		*(int *)((char *)&bad + ((char *)past[i].field - (char *)&m)) = past[i].limit + 1;
		if (past[i].field == &m.hidden)
			bad.heads = bad.kv_heads = 1;
		assert_int_equal(zb_model_validate(&bad, &err), ZB_E_INPUT);
		assert_contains(err.msg, past[i].name);
		assert_contains(err.msg, "exceeds the limit");
	}
}

/* ---- databases ------------------------------------------------------------------ */

static void sql(const char *path, const char *text)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(h, text, NULL, NULL, &msg) != SQLITE_OK) {
		print_error("%s: %s\n", text, msg);
		fail();
	}
	sqlite3_close(h);
}

static void test_negative_user_version(void **state)
{
	result r = run("predict --model gpt2 --steps 3 --db neg.db");
	assert_int_equal(r.rc, 0);
	result_free(&r);
	char path[512];
	snprintf(path, sizeof path, "%s/neg.db", tmpdir);
	sql(path, "PRAGMA user_version = -1");
	REFUSED("predict --model gpt2 --steps 3 --db neg.db", "neg.db", "schema version -1");
	REFUSED("export latest --db neg.db --format csv -o out.csv", "schema version -1");
}

/* The database keeps its bytes when a command refuses it. */
static char *file_bytes(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return zb_test_slurp(path, len);
}

static void test_damaged_database(void **state)
{
	result r = run("sweep --model gpt2 --steps 3 --timeline --db dmg.db --csv");
	assert_int_equal(r.rc, 0);
	result_free(&r);
	char path[512];
	snprintf(path, sizeof path, "%s/dmg.db", tmpdir);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 64 * 4096);
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	long pages[] = { 5, st.st_size / 4096 / 2, st.st_size / 4096 - 3 };
	for (int i = 0; i < 3; i++) { /* garbage inside b-tree pages, headers intact */
		char junk[500];
		for (size_t j = 0; j < sizeof junk; j++)
			junk[j] = (char)(j * 37 + i * 11 + 1);
		fseek(f, pages[i] * 4096 + 100, SEEK_SET);
		fwrite(junk, 1, sizeof junk, f);
	}
	fclose(f);
	size_t n0, n1;
	char *before = file_bytes("dmg.db", &n0);
	REFUSED("predict --model gpt2 --steps 3 --db dmg.db", "dmg.db", "damaged", "quick_check");
	REFUSED("sweep --model gpt2 --steps 3 --pcie gen4,gen5 --db dmg.db", "damaged");
	char *after = file_bytes("dmg.db", &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
}

static void test_output_errors(void **state)
{
	static const char *const cmds[] = { "predict --model gpt2 --steps 3 --no-db",
					    "predict --model gpt2 --steps 3 --no-db --json",
					    "sweep --model gpt2 --steps 3 --no-db --csv", "list presets" };
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		result r = run_to(cmds[i], "/dev/full");
		if (r.rc == 0 || !strstr(r.err, "cannot write the output")) {
			print_error("zbench %s >/dev/full: exit %d, stderr %s\n", cmds[i], r.rc, r.err);
			fail();
		}
		result_free(&r);
	}
}

static long long count_rows(const char *name, const char *table)
{
	char path[512], q[128];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	snprintf(q, sizeof q, "SELECT count(*) FROM %s", table);
	sqlite3 *h;
	sqlite3_stmt *st;
	long long n = -1;
	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, q, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return n;
}

/* 8 sweeps with --timeline on one database at once, while another connection
 * holds the write lock for 3 s (longer than the 2 s writers used to wait): every
 * sweep exits 0 and every row is stored. */
#define NSWEEPS 8
#define SWEEP_ARGS "sweep --model gpt2 --steps 3 --timeline --ratio 0:1:0.25 --pcie gen4,gen5 --csv --db conc.db"
#define SWEEP_ROWS 10
static void test_concurrent_sweeps(void **state)
{
	result r = run("predict --model gpt2 --steps 3 --db conc.db"); /* create the file */
	assert_int_equal(r.rc, 0);
	result_free(&r);
	char path[512];
	snprintf(path, sizeof path, "%s/conc.db", tmpdir);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	pid_t pids[NSWEEPS];
	for (int i = 0; i < NSWEEPS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char cmd[2048];
			snprintf(cmd, sizeof cmd, "cd %s && exec %s " SWEEP_ARGS " >conc-%d.out 2>conc-%d.err", tmpdir,
				 zbench, i, i);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
	}
	sleep(3);
	assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	for (int i = 0; i < NSWEEPS; i++) {
		int st;
		assert_true(waitpid(pids[i], &st, 0) == pids[i]);
		char name[64];
		snprintf(name, sizeof name, "conc-%d.err", i);
		char *err = file_bytes(name, NULL);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			print_error("sweep %d: status %d, stderr %s\n", i, st, err);
			fail();
		}
		free(err);
	}
	assert_int_equal(count_rows("conc.db", "runs"), 1 + NSWEEPS);
	assert_int_equal(count_rows("conc.db", "predictions"), 1 + NSWEEPS * SWEEP_ROWS);
	/* every sweep's timelines are there */
	assert_int_equal(count_rows("conc.db", "(SELECT DISTINCT config_id FROM tasks)"), NSWEEPS * SWEEP_ROWS);
}

/* A writer that gives up (here after 1 s) still prints what it computed, and the
 * error says it was not stored. */
static void test_unstored_result_printed(void **state)
{
	result r = run("predict --model gpt2 --steps 3 --db lock.db");
	assert_int_equal(r.rc, 0);
	result_free(&r);
	char path[512];
	snprintf(path, sizeof path, "%s/lock.db", tmpdir);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	setenv("ZBENCH_DB_WAIT_S", "1", 1);
	r = run("sweep --model gpt2 --steps 3 --pcie gen4,gen5 --csv --db lock.db");
	unsetenv("ZBENCH_DB_WAIT_S");
	assert_int_equal(sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(r.rc, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_contains(r.err, "NOT stored");
	assert_contains(r.err, "locked");
	assert_true(count_lines(r.out) >= 1 + 10); /* the header and every row */
	result_free(&r);
	assert_int_equal(count_rows("lock.db", "predictions"), 1);
}

/* plot and export only read: they work in a directory the user cannot write;
 * writing there says "permission denied". As root, the commands run as nobody. */
static void test_readonly_directory(void **state)
{
	result r = run("mkdir ro 2>/dev/null; true"); /* (a harmless zbench error) */
	result_free(&r);
	char dir[512];
	snprintf(dir, sizeof dir, "%s/ro", tmpdir);
	mkdir(dir, 0755);
	r = run("sweep --model gpt2 --steps 3 --timeline --pcie gen4,gen5 --ratio 0:1:0.5 --csv --db ro/z.db");
	assert_int_equal(r.rc, 0);
	result_free(&r);
	if (geteuid() == 0) {
		run_uid = 65534; /* nobody: reads the 0644 file, cannot write the directory */
		assert_int_equal(chmod(tmpdir, 0777), 0);
		pid_t pid = fork(); /* can nobody run zbench at all (a checkout under /root)? */
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(setgid(run_uid) == 0 && setuid(run_uid) == 0 && access(zbench, X_OK) == 0 ? 0 : 1);
		int st;
		assert_true(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			run_uid = 0;
			chmod(tmpdir, 0700);
			print_message("# skipped: running as root and user nobody cannot run %s\n", zbench);
			skip();
		}
	} else {
		assert_int_equal(chmod(dir, 0555), 0);
	}
	r = run("export 1 --db ro/z.db --format csv -o exp.csv");
	int export_rc = r.rc;
	char *export_err = strdup(r.err);
	result_free(&r);
	char *csv = file_bytes("exp.csv", NULL);
	assert_contains(csv, "predicted"); /* rows of the stored timeline */
	free(csv);
	r = run("plot ratio --db ro/z.db -o plot.svg");
	int plot_rc = r.rc;
	char *plot_err = strdup(r.err);
	result_free(&r);
	result w = run("predict --model gpt2 --steps 3 --db ro/z.db");
	result c = run("predict --model gpt2 --steps 3 --db ro/new.db");
	run_uid = 0;
	chmod(dir, 0755);
	chmod(tmpdir, 0700);
	if (plot_rc != 0 || strstr(plot_err, "readonly") || export_rc != 0)
		print_error("plot: exit %d, %s; export: exit %d, %s\n", plot_rc, plot_err, export_rc, export_err);
	assert_int_equal(plot_rc, 0);
	assert_int_equal(export_rc, 0);
	free(plot_err);
	free(export_err);
	assert_int_equal(w.rc, 2);
	assert_contains(w.err, "permission denied");
	assert_int_equal(c.rc, 2);
	assert_contains(c.err, "permission denied");
	assert_contains(c.err, "create");
	assert_string_equal(c.out, "");
	result_free(&w);
	result_free(&c);
}

int main(void)
{
	zbench = getenv("ZBENCH");
	if (!zbench || !*zbench)
		zbench = "build/zbench";
	char abs[1024];
	if (zbench[0] != '/' && getcwd(abs, sizeof abs - strlen(zbench) - 2)) {
		strcat(abs, "/");
		strcat(abs, zbench);
		zbench = strdup(abs);
	}
	if (access(zbench, X_OK) != 0) {
		fprintf(stderr, "zbench binary '%s' not found (set ZBENCH)\n", zbench);
		return 1;
	}
	const char *san = getenv("ZB_SAN");
	if (san && strcmp(san, "1") == 0) {
		time_budget_s *= 5;
		rss_budget_kb *= 5;
	}
	zb_test_tmpdir(tmpdir, sizeof tmpdir);
	/* The budget is on top of what zbench takes to start: linked with CUDA, its
	 * libraries alone are ~220 MB resident; without, ~3 MB. */
	result base = run("version");
	if (base.rc != 0) {
		fprintf(stderr, "'%s version' failed: %s\n", zbench, base.err);
		return 1;
	}
	rss_budget_kb += base.rss_kb;
	result_free(&base);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_safety_reproducers),
		cmocka_unit_test(test_runaway_memory_reproducers),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_extreme_hardware_values),
		cmocka_unit_test(test_task_estimate_bounds_the_schedule),
		cmocka_unit_test(test_largest_model_sizes),
		cmocka_unit_test(test_negative_user_version),
		cmocka_unit_test(test_damaged_database),
		cmocka_unit_test(test_output_errors),
		cmocka_unit_test(test_concurrent_sweeps),
		cmocka_unit_test(test_unstored_result_printed),
		cmocka_unit_test(test_readonly_directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
