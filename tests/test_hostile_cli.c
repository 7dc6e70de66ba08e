/*
 * test_hostile_cli.c - zbench as an attacker or a batch system drives it: names
 * and paths that carry gnuplot commands, symlinks planted where zbench writes,
 * oversized schemas, schedules too large to build, SIGTERM in a sweep, non-finite
 * measured numbers, out-of-range stages and ranges, garbage trace timestamps,
 * CSV cells with separators, and shards still being written. Each case runs the
 * real binary ($ZBENCH, as tests/run.sh sets it) in a temporary directory, as
 * a user would, and checks the one-line refusal or the correct result, and that
 * nothing was executed or written outside the output asked for.
 */
#include "tests/harness.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/plot_script.h"

#include "core/graph.h"
#include "core/limits.h"
#include "core/dsprofile.h"
#include "inputs/presets.h"
#include "schedules/framework.h"

static char dir[256];
static const char *zbench;
static int have_gnuplot;

typedef struct res {
	int rc;
	char *out, *err;
} res;

/* `zbench args` (shell syntax, printf-formatted) in dir. */
static res zb(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static res zb(const char *fmt, ...)
{
	char args[8192], cmd[9000];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' %s >stdout 2>stderr </dev/null", dir, zbench, args);
	int st = system(cmd);
	res r;
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	char p[600];
	snprintf(p, sizeof p, "%s/stdout", dir);
	r.out = zb_test_slurp(p, NULL);
	snprintf(p, sizeof p, "%s/stderr", dir);
	r.err = zb_test_slurp(p, NULL);
	return r;
}

static void res_free(res *r)
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

static const char *at(const char *name)
{
	static char p[4][700];
	static int k;
	char *b = p[k++ % 4];
	snprintf(b, sizeof p[0], "%s/%s", dir, name);
	return b;
}

static int exists(const char *name)
{
	struct stat st;
	return lstat(at(name), &st) == 0;
}

static void put(const char *name, const char *text) { zb_test_write_file(at(name), text); }

static char *get(const char *name) { return zb_test_slurp(at(name), NULL); }

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char c[8192], cmd[9000];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c, sizeof c, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "cd '%s' && { %s ; }", dir, c);
	if (system(cmd) != 0) {
		print_error("failed: %s\n", c);
		fail();
	}
}

static void expect_ok(res r, const char *what)
{
	if (r.rc != 0)
		print_error("%s: exit %d\nstderr: %s\n", what, r.rc, r.err);
	assert_int_equal(r.rc, 0);
	res_free(&r);
}

/* exit 2 (or want), one line on stderr containing needle */
static void expect_refused(res r, int want, const char *needle)
{
	if (r.rc != want || count_lines(r.err) != 1 || !strstr(r.err, needle))
		print_error("exit %d (want %d), stderr (want one line with '%s'):\n%s\n", r.rc, want, needle, r.err);
	assert_int_equal(r.rc, want);
	assert_int_equal(count_lines(r.err), 1);
	assert_contains(r.err, needle);
	res_free(&r);
}

#define NEED_GNUPLOT()                                                                                      \
	do {                                                                                                \
		if (!have_gnuplot) {                                                                        \
			print_message("skipped: gnuplot not installed (scripts/deps.sh installs gnuplot-nox)\n"); \
			skip();                                                                             \
			return;                                                                             \
		}                                                                                           \
	} while (0)

static const char *const model_json =
	"{\"name\":\"%s\",\"layers\":2,\"hidden\":64,\"heads\":2,\"ffn\":256,\"vocab\":100,\"max_seq\":1024,"
	"\"gated_mlp\":0,\"bias\":1,\"tied_embeddings\":1}";

static void put_model(const char *file, const char *name)
{
	char text[1024];
	snprintf(text, sizeof text, model_json, name);
	put(file, text);
}

/* ---- gnuplot: no text of an input runs ----------------------------------------- */

/* The reproducer: a model named m`touch pwned` through plot and sweep
 * --plot, and the output path, --data folder and database path carrying commands
 * too; none of the files the commands would create appears. */
static void test_gnuplot_runs_no_input(void **state)
{
	NEED_GNUPLOT();
	char name[600];
	snprintf(name, sizeof name, "m`touch %s`", at("pwned-model"));
	put_model("m.json", name);
	expect_ok(zb("sweep --db inj.db --model-file m.json --ratio 0,1 --policy overlap"), "sweep");
	expect_ok(zb("plot ratio --db inj.db -o inj.png"), "plot");
	expect_ok(zb("plot ratio --db inj.db -o 'o`touch pwned-out`.svg' --data 'd`touch pwned-data`\"dir'"),
		  "plot -o --data");
	sh("cp inj.db \"$(printf 'nl\\n!touch pwned-db\\n.db')\"");
	expect_ok(zb("plot memory --db \"$(printf 'nl\\n!touch pwned-db\\n.db')\" -o mem.svg"), "plot --db");
	expect_ok(zb("sweep --db sw.db --model-file m.json --ratio 0,1 --policy overlap --plot 's`touch pwned-sweep`.png'"),
		  "sweep --plot");
	static const char *const never[] = { "pwned-model", "pwned-out", "pwned-data", "pwned-db", "pwned-sweep" };
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		if (exists(never[i])) {
			print_error("%s was created: an input ran as a gnuplot command\n", never[i]);
			fail();
		}
	assert_true(exists("inj.png") && exists("o`touch pwned-out`.svg") && exists("mem.svg") &&
		    exists("s`touch pwned-sweep`.png"));
}

/* Names with control characters are refused where they are read, in one line. */
static void test_names_with_control_characters(void **state)
{
	put_model("nl.json", "a\\nb");
	expect_refused(zb("predict --model-file nl.json --no-db"), 2, "control character");
	put("hw-esc.json", "{\"preset\": \"h200-machine\", \"name\": \"h\\u001b[31m\"}");
	expect_refused(zb("predict --hw ./hw-esc.json --no-db"), 2, "hardware name");
	put("gpu-esc.json", "{\"preset\": \"h200-machine\", \"gpu\": {\"preset\": \"h200\", \"name\": \"g\\r\"}}");
	expect_refused(zb("predict --hw ./gpu-esc.json --no-db"), 2, "gpu name");
	put("hf.json", "{\"_name_or_path\": \"org/x\\ny\", \"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64,"
		       " \"n_head\": 2, \"vocab_size\": 100, \"n_positions\": 1024}");
	expect_refused(zb("predict --hf-config hf.json --no-db"), 2, "model name 'x\\x0ay'");
	/* a model file without a name is named after its file */
	sh("printf '{\"layers\":2,\"hidden\":64,\"heads\":2,\"ffn\":256,\"vocab\":100,\"max_seq\":1024,"
	   "\"gated_mlp\":0,\"bias\":1,\"tied_embeddings\":1}' > \"$(printf 'f\\tx.json')\"");
	expect_refused(zb("predict --model-file \"$(printf 'f\\tx.json')\" --no-db"), 2, "control character");
}

/* Scripts drawn from a database whose names hold every character gnuplot treats
 * specially and from its twin (the same names with those bytes replaced): the
 * same text outside quoted strings, the same number of lines in each data file. */
static void test_script_has_no_input_outside_quotes(void **state)
{
	NEED_GNUPLOT();
	expect_ok(zb("sweep --db base.db --pcie gen4,gen5 --ratio 0:1:0.5 --cores 8,16 --policy overlap"), "sweep");
	static const char hostile[] = "a'b\"c`touch q`d\\e@f$g\nh'' ;!system(\"x\")\r#i'\n";
	char twin[sizeof hostile];
	plot_script_twin(hostile, twin, sizeof twin);
	const char *names[2] = { hostile, twin };
	static const char *const kinds[] = { "ratio", "hardware", "memory" };
	for (int w = 0; w < 2; w++) {
		char db[64], path[700];
		snprintf(db, sizeof db, "names-%d.db", w);
		sh("cp base.db %s", db);
		snprintf(path, sizeof path, "%s/%s", dir, db);
		sqlite3 *h;
		sqlite3_stmt *st;
		assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(h, "UPDATE configs SET model = ?1, hw = ?1 || 'h', gpu = ?1 || 'g'",
						    -1, &st, NULL),
				 SQLITE_OK);
		sqlite3_bind_text(st, 1, names[w], -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(st), SQLITE_DONE);
		sqlite3_finalize(st);
		sqlite3_close(h);
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
			expect_ok(zb("plot %s --db %s -o %s-%d.svg --data kept-%s-%d", kinds[k], db, kinds[k], w, kinds[k],
				     w),
				  kinds[k]);
	}
	static const char *const data[] = { "throughput.dat", "hardware.dat", "memory.dat" };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		char *bare[2], why[200], name[128];
		for (int w = 0; w < 2; w++) {
			snprintf(name, sizeof name, "kept-%s-%d/plot.gp", kinds[k], w);
			char *script = get(name);
			bare[w] = plot_script_bare(script, why, sizeof why);
			if (!bare[w])
				print_error("plot %s, %s names: %s\n%s\n", kinds[k], w ? "twin" : "hostile", why, script);
			assert_non_null(bare[w]);
			free(script);
			assert_null(strstr(bare[w], "touch"));
		}
		if (strcmp(bare[0], bare[1]))
			print_error("plot %s: the script outside quoted strings depends on the names\n%s\n----\n%s\n",
				    kinds[k], bare[0], bare[1]);
		assert_string_equal(bare[0], bare[1]);
		free(bare[0]);
		free(bare[1]);
		snprintf(name, sizeof name, "kept-%s-0/%s", kinds[k], data[k]);
		char *d0 = get(name);
		snprintf(name, sizeof name, "kept-%s-1/%s", kinds[k], data[k]);
		char *d1 = get(name);
		assert_int_equal(count_lines(d0), count_lines(d1));
		free(d0);
		free(d1);
	}
}

/* ---- symlinks planted where zbench writes ------------------------------------- */

/* keep is intact and name is no longer a symlink to it */
static void expect_unharmed(const char *victim, const char *link)
{
	char *v = get(victim);
	if (strcmp(v, "keep\n"))
		print_error("%s was written through the symlink %s: now '%.40s'\n", victim, link, v);
	assert_string_equal(v, "keep\n");
	free(v);
}

static void plant(const char *victim, const char *link)
{
	sh("echo keep > '%s' && ln -sfn '%s' '%s'", victim, victim, link);
}

static void test_symlinks_are_not_followed(void **state)
{
	expect_ok(zb("sweep --db s.db --pcie gen4,gen5 --ratio 0,1 --policy overlap --timeline"), "sweep");
	/* export FILE.tmp */
	plant("v-export", "exp.csv.tmp");
	expect_ok(zb("export 1 --db s.db --format csv -o exp.csv"), "export");
	expect_unharmed("v-export", "exp.csv.tmp");
	char *csv = get("exp.csv");
	assert_contains(csv, "predicted");
	free(csv);
	/* a profile written with OUT.tmp (zb_hw_save), and calibrate's OUT.probe */
	plant("v-probe", "cal.json.probe");
	plant("v-cal", "cal.json.tmp");
	expect_ok(zb("calibrate --cpu-only --quick --out cal.json --db cal.db"), "calibrate --cpu-only");
	expect_unharmed("v-probe", "cal.json.probe");
	expect_unharmed("v-cal", "cal.json.tmp");
	if (have_gnuplot) {
		/* plot OUT.tmp, and --data DIR's plot.gp and data file */
		plant("v-plot", "out.png.tmp");
		sh("mkdir -p kd");
		plant("v-gp", "kd/plot.gp");
		plant("v-dat", "kd/throughput.dat");
		plant("v-log", "kd/gnuplot.log");
		expect_ok(zb("plot ratio --db s.db -o out.png --data kd"), "plot");
		expect_unharmed("v-plot", "out.png.tmp");
		expect_unharmed("v-gp", "kd/plot.gp");
		expect_unharmed("v-dat", "kd/throughput.dat");
		expect_unharmed("v-log", "kd/gnuplot.log");
		char *gp = get("kd/plot.gp");
		assert_contains(gp, "throughput.dat");
		free(gp);
	}
	/* no temporary left behind */
	sh("! ls -a . kd 2>/dev/null | grep -q '\\.tmp\\.'");
}

/* ---- merge: column lists of any length ------------------------------------------ */

static void sql_at(const char *name, const char *text)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open(at(name), &h), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(h, text, NULL, NULL, &msg) != SQLITE_OK) {
		print_error("%s: %.200s: %s\n", name, text, msg);
		fail();
	}
	sqlite3_close(h);
}

static long long count_rows(const char *name, const char *table)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	long long n = -1;
	char q[200];
	snprintf(q, sizeof q, "SELECT count(*) FROM %s", table);
	if (sqlite3_open_v2(at(name), &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, q, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return n;
}

/* An output whose runs table has a column with a 2 MB name (and one with a quote
 * and 1 500 bytes, which used to overrun the stack silently): one line, exit 2,
 * the output as it was. */
static void test_merge_long_column_names(void **state)
{
	expect_ok(zb("sweep --db shard.db --ratio 0,1 --policy overlap"), "sweep");
	static const size_t lens[] = { 2u << 20, 1500 };
	for (size_t k = 0; k < 2; k++) {
		char db[32];
		snprintf(db, sizeof db, "wide-%zu.db", k);
		expect_ok(zb("predict --db %s", db), "predict");
		char *alter = malloc(lens[k] + 64), *p = alter;
		p += sprintf(p, "ALTER TABLE runs ADD COLUMN \"q\"\"");
		memset(p, 'x', lens[k]);
		p += lens[k];
		strcpy(p, "\" TEXT");
		sql_at(db, alter);
		free(alter);
		res r = zb("merge %s shard.db", db);
		if (strlen(r.err) > 600)
			r.err[600] = 0;
		expect_refused(r, 2, "no such column");
		assert_int_equal(count_rows(db, "runs"), 1);
	}
}

/* ---- the schedule's size, every framework ----------------------------------------- */

/* zb_limits_tasks bounds what the builders emit, and not loosely (so the limit
 * refuses only schedules that are large), over every model preset, ZeRO stage,
 * offload, Twin-Flow ratio, checkpointing, parameter offload and rank count the
 * builder accepts: DeepSpeed's schedule, and zbench's on two ranks (one rank:
 * test_hostile.c). */
static void test_task_estimate_bounds_every_schedule(void **state)
{
	zb_hw one, two;
	zb_error err = { 0 };
	zb_preset_default_hw(&one);
	assert_int_equal(zb_preset_hw("h200-x2", &two, &err), ZB_OK);
	for (int fw = 0; fw < 2; fw++) {
		double worst = 0;
		int built = 0;
		for (int mi = 0; mi < zb_preset_count("model"); mi++)
			for (int v = 0; v < 4 * 4 * 2 * 3 * 2 * 2 * 2; v++) {
				int stage = v % 4, kind = v / 4 % 4, half = v / 16 % 2, ck = v / 32 % 3, op = v / 96 % 2;
				int ranks = fw == ZB_FW_ZBENCH || v / 192 % 2;
				if (fw == ZB_FW_ZBENCH && v / 192 % 2)
					continue; /* the same as another (zbench: always two ranks) */
				zb_config c;
				memset(&c, 0, sizeof c);
				c.hw = ranks ? two : one;
				assert_int_equal(zb_preset_model(zb_preset_name("model", mi), &c.model, &err), ZB_OK);
				zb_policy_defaults(&c.policy);
				c.framework = fw;
				c.policy.kind = (zb_policy_kind)kind;
				c.policy.zero_stage = stage;
				c.policy.ratio = half ? 0.5 : 1.0;
				c.policy.ckpt = (zb_ckpt)ck;
				c.policy.offload_param = op;
				c.policy.gpus = ranks ? 2 : 1;
				c.policy.gas = 2;
				c.policy.seq = 512;
				c.policy.sub_group_size = 20000000;
				c.policy.bucket_params = v / 384 % 2 ? 25000000 : 2000000; /* many small buckets too */
				if (fw == ZB_FW_DEEPSPEED && v / 384 % 2) { /* a profile with eager attention */
					zb_ds_profile_defaults(&c.hw.ds);
					c.hw.ds.set = 1;
					c.hw.ds.flash = 0;
				}
				c.steps = 2;
				zb_graph g;
				if (zb_graph_build(&g, &c, &err) != ZB_OK)
					continue; /* a combination the framework refuses */
				int64_t est = zb_limits_tasks(&c);
				if (est < (int64_t)g.ntasks)
					print_error("%s framework %d stage %d kind %d ratio %g ckpt %d oparam %d gpus %d:"
						    " estimate %lld < %u tasks\n",
						    c.model.name, fw, stage, kind, c.policy.ratio, ck, op, c.policy.gpus,
						    (long long)est, (unsigned)g.ntasks);
				assert_true(est >= (int64_t)g.ntasks);
				double ratio = (double)est / (double)g.ntasks;
				worst = ratio > worst ? ratio : worst;
				built++;
				zb_graph_free(&g);
			}
		print_message("# %d %s schedules: task estimate / tasks built at most %.2f\n", built,
			      fw ? "DeepSpeed" : "two-rank zbench", worst);
		assert_true(built > 100);
		assert_true(worst < 3.0);
	}
}

/* Every command that builds a schedule refuses one too large in one line, at once
 * (predict --framework deepspeed --gas 16384 used to allocate 10 GB and abort). */
static void test_schedule_limit_everywhere(void **state)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_refused(zb("sweep --framework deepspeed --gas 512 --no-db"), 2, "schedule too large");
	/* predict (and tune, through it) simulate DeepSpeed's steady micro-step once and add the
	 * rest (sim/predict.h): a long accumulation is affordable, and says so */
	for (int i = 0; i < 2; i++) {
		res r = zb(i ? "predict --framework deepspeed --gas 16384 --no-db" : "predict --framework deepspeed --gas 4096 --no-db");
		assert_int_equal(r.rc, 0);
		assert_contains(r.out, "micro-steps of each step simulated");
		res_free(&r);
	}
	put("ds.json", "{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 4,"
		       " \"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}}}");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	print_message("# a refusal and two long accumulations in %.2f s\n", s);
	assert_true(s < (getenv("ZB_SAN") ? 60.0 : 10.0));
	/* tune predicts each candidate the same way (at gas 4096 its ~1000 candidates take minutes) */
	expect_ok(zb("tune --ds-config ds.json --model gpt2 --gas 64"), "tune gas 64");
	/* a realistic long accumulation still predicts */
	expect_ok(zb("predict --framework deepspeed --gas 64 --no-db"), "gas 64");
}

/* ---- signals a batch system sends ------------------------------------------------ */

/* A sweep sent sig while it prints rows (a real child process, stdout to a file):
 * it stops after the current row, stores every row it printed with the run marked
 * interrupted, says so in one line, and exits 128 + sig. */
static void sweep_stopped_by(int sig, const char *name)
{
	char out[64], err[64], db[64];
	snprintf(out, sizeof out, "sig-%d.csv", sig);
	snprintf(err, sizeof err, "sig-%d.err", sig);
	snprintf(db, sizeof db, "sig-%d.db", sig);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (chdir(dir) || !freopen(out, "w", stdout) || !freopen(err, "w", stderr))
			_exit(99);
		execl(zbench, zbench, "sweep", "--ratio", "0:1:0.001", "--pcie", "gen3,gen4,gen5,gen6", "--cores",
		      "4,8,16,32,64", "--hypothetical-cpu", "--policy", "offload,overlap,dpu", "-j", "1", "--csv", "--db", db, (char *)NULL);
		_exit(98);
	}
	struct stat st;
	for (int i = 0; i < 600 && (stat(at(out), &st) != 0 || st.st_size < 20000); i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, sig);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	char *e = get(err), *o = get(out);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + sig)
		print_error("%s: status %d (want exit %d), stderr: %s\n", name, status, 128 + sig, e);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + sig);
	assert_int_equal(count_lines(e), 1);
	assert_contains(e, name);
	assert_contains(e, "stored");
	long long printed = count_lines(o) - 1; /* the CSV header */
	assert_true(printed > 0 && printed < 60060);
	assert_int_equal(count_rows(db, "configs"), printed);
	assert_int_equal(count_rows(db, "predictions"), printed);
	assert_int_equal(count_rows(db, "runs WHERE status = 'interrupted'"), 1);
	print_message("# %s after %lld rows: all stored\n", name, printed);
	free(e);
	free(o);
}

static void test_sweep_sigterm_and_sighup(void **state)
{
	sweep_stopped_by(SIGTERM, "SIGTERM");
	sweep_stopped_by(SIGHUP, "SIGHUP");
}

/* ---- measured files: plain decimals only --------------------------------------- */

#define TSV_HEAD "config\tzero\tstep_ms\tsteps_ms\tgpu_peak_GiB\thost_rss_GiB\tgpu_busy_ms\n"

/* A measured table whose row has `value` in column `col` (the others as measured). */
static void put_table(const char *name, const char *col, const char *value)
{
	static const char *const cols[] = { "step_ms", "steps_ms", "gpu_peak_GiB", "host_rss_GiB", "gpu_busy_ms" };
	static const char *const good[] = { "1570", "5348,1537,1478,1595,1570", "30.0", "61.7", "328" };
	char row[1024];
	int n = snprintf(row, sizeof row, TSV_HEAD "s2-off\tstage 2, offload_optimizer cpu, overlap_comm false");
	for (int i = 0; i < 5; i++)
		n += snprintf(row + n, sizeof row - (size_t)n, "\t%s", strcmp(cols[i], col) ? good[i] : value);
	snprintf(row + n, sizeof row - (size_t)n, "\n");
	put(name, row);
}

/* calibrate --deepspeed --measured and validate --deepspeed --from refuse a table
 * with nan, inf, hex or an overflowing number in any numeric column, naming file,
 * line, column and value, and write no profile. */
static void test_measured_numbers(void **state)
{
	const char *calib = "calibrate --deepspeed --measured m.tsv --model gpt-2.5b --seq 2048 --micro-batch 4 "
			    "--out prof.json";
	put_table("m.tsv", "", "");
	expect_ok(zb("%s", calib), "a good table");
	assert_true(exists("prof.json"));
	sh("rm prof.json");
	static const struct { const char *col, *value, *shown; } bad[] = {
		{ "step_ms", "nan", "bad step_ms 'nan'" },
		{ "step_ms", "inf", "bad step_ms 'inf'" },
		{ "step_ms", "-inf", "bad step_ms '-inf'" },
		{ "step_ms", "1e308", "bad step_ms '1e308'" },
		{ "step_ms", "1e400", "bad step_ms '1e400'" },
		{ "step_ms", "0x10", "bad step_ms '0x10'" },
		{ "step_ms", "12ms", "bad step_ms '12ms'" },
		{ "gpu_peak_GiB", "1e300", "bad gpu_peak_GiB '1e300'" },
		{ "host_rss_GiB", "NaN", "bad host_rss_GiB 'NaN'" },
		{ "gpu_busy_ms", "0x1p8", "bad gpu_busy_ms '0x1p8'" },
		{ "steps_ms", "5348,nan,1478", "bad steps_ms" },
		{ "steps_ms", "5348,infinity", "bad steps_ms" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put_table("m.tsv", bad[i].col, bad[i].value);
		char want[128];
		snprintf(want, sizeof want, "m.tsv:2: %s", bad[i].shown);
		expect_refused(zb("%s", calib), 2, want);
		assert_false(exists("prof.json"));
	}
	/* the harness's JSON lines */
	put("ds.json", "{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}}}");
	static const char *const line =
		"{\"config\": \"a\", \"ds_config\": \"ds.json\", \"step_ms\": %s, \"gpu_peak_GiB\": %s, \"family\": \"gpt\","
		" \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"vocab\": 100, \"seq\": %s}\n";
	static const char *const jbad[][3] = { { "1e308", "1", "64" }, { "100", "1e300", "64" }, { "100", "1", "1e12" },
					       { "100", "1", "64.5" } };
	for (size_t i = 0; i < sizeof jbad / sizeof jbad[0]; i++) {
		char text[600];
		snprintf(text, sizeof text, line, jbad[i][0], jbad[i][1], jbad[i][2]);
		put("m.jsonl", text);
		expect_refused(zb("calibrate --deepspeed --measured m.jsonl --out prof.json"), 2, "m.jsonl:1: bad ");
		assert_false(exists("prof.json"));
	}
	/* the peer table of validate --deepspeed --from */
	put_table("m.tsv", "steps_ms", "5348,1e308");
	expect_refused(zb("validate --deepspeed --from m.tsv --no-db"), 2, "m.tsv:2: steps_ms");
	put_table("m.tsv", "step_ms", "0x600");
	expect_refused(zb("validate --deepspeed --from m.tsv --no-db"), 2, "m.tsv:2: step_ms '0x600'");
}

/* validate --published=FILE refuses a case whose numbers are not plain decimals,
 * instead of printing it as not predicted and exiting 0. */
static void test_published_numbers(void **state)
{
	static const char *const head = "id\tgen\tgpus\thw\tgpu\tshape\tpolicy\tratio\toparam\tckpt\tdtype\tmb\tgas\tseq\t"
					"threads\tgpc\tmetric\tvalue\tcheck\tsource\tsetup\n";
	static const char *const row = "c1\tv100\t%s\tdgx-2\t-\tlayers=28,hidden=2048,heads=16\toffload\t%s\t0\tgpu\tfp16\t"
				       "%s\t64\t1024\t-\t1\ttflops\t%s\ttext\tsrc\tsetup\n";
	static const char *const cases[][5] = {
		{ "1", "nan", "8", "30", "bad ratio 'nan'" },   { "1", "inf", "8", "30", "bad ratio 'inf'" },
		{ "1", "1", "0x8", "30", "bad mb '0x8'" },       { "1", "1", "8", "1e308", "bad value '1e308'" },
		{ "1", "1", "8", "nan", "bad value 'nan'" },     { "nan", "1", "8", "30", "bad gpus 'nan'" },
	};
	char text[2048];
	snprintf(text, sizeof text, "%s", head);
	snprintf(text + strlen(text), sizeof text - strlen(text), row, "1", "1", "8", "30");
	put("pub.tsv", text);
	expect_ok(zb("validate --published=pub.tsv"), "a good case");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "%s", head);
		snprintf(text + strlen(text), sizeof text - strlen(text), row, cases[i][0], cases[i][1], cases[i][2],
			 cases[i][3]);
		put("pub.tsv", text);
		char want[128];
		snprintf(want, sizeof want, "pub.tsv:2: %s", cases[i][4]);
		expect_refused(zb("validate --published=pub.tsv"), 2, want);
	}
}

/* ---- ZeRO stages and ranges ---------------------------------------------------- */

/* --zero-stage outside 1..3 is refused by name, with one rank or two, any framework;
 * so is a stage outside 0..3 in a configuration built in code. */
static void test_zero_stage_range(void **state)
{
	static const char *const bad[] = { "9", "16", "2147483647", "4294967298", "4" };
	static const char *const extra[] = { "", "--gpus 2 --hw h200-x2", "--framework deepspeed",
					     "--framework deepspeed --gpus 2 --hw h200-x2" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		for (size_t j = 0; j < sizeof extra / sizeof extra[0]; j++) {
			char want[64];
			snprintf(want, sizeof want, "--zero-stage %s", bad[i]);
			expect_refused(zb("predict --zero-stage %s %s --no-db", bad[i], extra[j]), 2, want);
		}
	expect_refused(zb("sweep --zero-stage 1:9:1 --no-db"), 2, "--zero-stage 4");
	expect_ok(zb("predict --zero-stage 3 --gpus 2 --hw h200-x2 --no-db"), "stage 3 on two GPUs");
	zb_config c;
	zb_error err;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.steps = 2;
	c.policy.zero_stage = 9;
	assert_int_equal(zb_config_validate(&c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "zero-stage 9");
}

static long long query_ll(const char *name, const char *q)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	long long n = -1;
	if (sqlite3_open_v2(at(name), &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, q, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return n;
}

/* Integer ranges expand in integers: nothing rounds 12345678901 to 10 digits. */
static void test_integer_ranges(void **state)
{
	expect_ok(zb("sweep --model gpt2 --policy overlap --bucket 12345678901:12345678901:1 --db rb.db"), "bucket");
	assert_int_equal(query_ll("rb.db", "SELECT bucket_params FROM configs"), 12345678901LL);
	expect_ok(zb("sweep --model gpt2 --policy overlap --bucket 10M:30M:10M --db rm.db"), "bucket M");
	assert_int_equal(query_ll("rm.db", "SELECT sum(bucket_params) FROM configs"), 60000000LL);
	res r = zb("sweep --model gpt2 --framework deepspeed --zero-stage 3 --ratio 0.5 --policy overlap"
		   " --sub-group 12345678901:12345678903:2 --no-db --csv");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, ",12345678901,"); /* the sub_group column, followed by the prediction's */
	assert_contains(r.out, ",12345678903,");
	res_free(&r);
	expect_refused(zb("sweep --gas 1:4:1.5 --no-db"), 2, "invalid range '1:4:1.5'");
	/* reals keep their short form */
	r = zb("sweep --model gpt2 --policy overlap --ratio 0:1:0.1 --no-db --csv");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, ",0.3,");
	res_free(&r);
}

/* ---- import: timestamps and file names ----------------------------------------------- */

/* The nsys fixture (tests/data/nsys-small.sql) as an export named name, with extra SQL. */
static void put_export(const char *name, const char *extra)
{
	char *sql = zb_test_slurp("tests/data/nsys-small.sql", NULL);
	assert_true(strlen(sql) > 1000);
	unlink(at(name));
	sqlite3 *h;
	assert_int_equal(sqlite3_open_v2(at(name), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK || (extra && sqlite3_exec(h, extra, NULL, NULL, &msg)))
		fail_msg("fixture SQL: %s", msg);
	sqlite3_close(h);
	free(sql);
}

/* The "gpu" line of zbench analyze's table for the newest import in db. */
static char *gpu_line(const char *db)
{
	res r = zb("analyze --db %s", db);
	if (r.rc != 0)
		print_error("analyze: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	char *l = strstr(r.out, "\ngpu ");
	assert_non_null(l);
	char *line = strndup(l + 1, strcspn(l + 1, "\n"));
	res_free(&r);
	return line;
}

/* Rows whose end is before their start, or whose times are text, a blob or a real,
 * are left out and counted; analyze then measures the trace as if they were not
 * there (not 0.10 ms of GPU a step for a trace with 6.10). */
static void test_import_bad_times(void **state)
{
	static const char *const rows =
		"(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 3 OFFSET 5)";
	char sql[800];
	snprintf(sql, sizeof sql,
		 "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5000000 WHERE rowid = (SELECT min(rowid) FROM %s);"
		 "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = (SELECT max(rowid) FROM %s);"
		 "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = x'00ff' WHERE rowid = (SELECT min(rowid) FROM"
		 " CUPTI_ACTIVITY_KIND_MEMCPY);"
		 "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET end = end + 0.5 WHERE rowid = (SELECT min(rowid) FROM"
		 " CUPTI_ACTIVITY_KIND_MEMSET);",
		 rows, rows);
	put_export("bad.sqlite", sql);
	res r = zb("import bad.sqlite --db imp.db");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "4 rows left out");
	res_free(&r);
	/* the same trace with those rows deleted */
	char del[1200];
	snprintf(del, sizeof del, "%s DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE NOT (typeof(start) = 'integer' AND"
		 " end >= start); DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE typeof(end) != 'integer';"
		 " DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE typeof(end) != 'integer';", sql);
	put_export("clean.sqlite", del);
	expect_ok(zb("import clean.sqlite --db clean.db"), "import clean");
	char *got = gpu_line("imp.db"), *want = gpu_line("clean.db");
	print_message("# analyze with bad rows: %s\n#            rows deleted: %s\n", got, want);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(count_rows("imp.db", "CUPTI_ACTIVITY_KIND_KERNEL WHERE end < start"), 0);
}

/* '?', '#' and '%' in an export's name are part of the name, not URI syntax. */
static void test_import_plain_names(void **state)
{
	static const char *const names[] = { "a?b.sqlite", "c#d.sqlite", "e%41f.sqlite", "file:g?mode=rwc.sqlite" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		put_export(names[i], NULL);
		expect_ok(zb("import '%s' --db names-%zu.db", names[i], i), names[i]);
		char db[32];
		snprintf(db, sizeof db, "names-%zu.db", i);
		assert_int_equal(count_rows(db, "CUPTI_ACTIVITY_KIND_KERNEL"), 13);
	}
	static const char *const never[] = { "a", "c", "e", "eAf.sqlite", "g" };
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		if (exists(never[i])) {
			print_error("import created '%s': the name was read as a URI\n", never[i]);
			fail();
		}
	expect_refused(zb("import 'missing?x.sqlite' --db names-0.db"), 2, "missing?x.sqlite");
}

/* ---- CSV cells ------------------------------------------------------------------ */

/* The fields of one RFC 4180 record starting at *p (advanced past it and its
 * newline), each malloc'd into f[]; returns their count. */
static int csv_record(const char **p, char **f, int cap)
{
	int n = 0;
	const char *s = *p;
	for (;;) {
		char *cell = malloc(strlen(s) + 1);
		size_t j = 0;
		if (*s == '"') {
			for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
				if (*s == '"')
					s++;
				cell[j++] = *s;
			}
			if (*s == '"')
				s++;
		} else {
			while (*s && *s != ',' && *s != '\n')
				cell[j++] = *s++;
		}
		cell[j] = 0;
		if (n < cap)
			f[n++] = cell;
		else
			free(cell);
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '\n')
		s++;
	*p = s;
	return n;
}

static void csv_free(char **f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i]);
}

/* A model and a GPU named with a comma, quotes and a newline: sweep --csv keeps
 * every row as many cells as its header, the names whole; ordinary values are
 * written as they always were. */
static void test_csv_cells(void **state)
{
	res r = zb("sweep --model gpt2 --policy overlap --ratio 0,1 --no-db --csv");
	assert_int_equal(r.rc, 0);
	/* snake_case headers with the unit in the name, every axis a column (report/sweep_table.h) */
	static const char want[] = "model,pcie,gpu,cpu,cores,policy,ratio,micro_batch,gas,seq,ckpt,dtype,framework,zero,"
				   "sub_group,step_ms,tokens_per_s,tflops_per_gpu,bottleneck,bound_ms,zbench_tokens_per_s,"
				   "deepspeed_tokens_per_s,gpu_mem_gib,gpu_cap_gib,host_mem_gib,host_cap_gib,fits,price_per_hour,"
				   "tokens_per_dollar,train_hours,train_cost,profile,hypothetical_cpu,reason\n"
				   "gpt2,gen5,h200,h200-machine,16,overlap,0,8,1,1024,none,bf16,zbench,,,";
	assert_true(strncmp(r.out, want, strlen(want)) == 0);
	res_free(&r);
	put_model("comma.json", "a,\\\"b\\\",c");
	put("gpu.json", "{\"preset\": \"h200-machine\", \"gpu\": {\"preset\": \"h200\", \"name\": \"h200, \\\"sxm\\\"\"}}");
	static const char *const extra[] = { "", "--gpus 1,2 --hw h200-x2" };
	for (int e = 0; e < 2; e++) {
		r = zb("sweep --model-file comma.json %s --policy overlap --ratio 0,1 --no-db --csv",
		       e ? extra[e] : "--hw ./gpu.json");
		if (r.rc != 0)
			print_error("%s\n", r.err);
		assert_int_equal(r.rc, 0);
		const char *p = r.out;
		char *f[64];
		int head = csv_record(&p, f, 64);
		csv_free(f, head);
		int rows = 0;
		while (*p) {
			int n = csv_record(&p, f, 64);
			assert_int_equal(n, head);
			assert_string_equal(f[0], "a,\"b\",c");
			if (!e)
				assert_string_equal(f[2], "h200, \"sxm\"");
			csv_free(f, n);
			rows++;
		}
		assert_int_equal(rows, e ? 4 : 2);
		res_free(&r);
	}
	/* export: a task name is one cell whatever it holds */
	expect_ok(zb("sweep --db ex.db --model-file comma.json --steps 3 --timeline --pcie gen4 --policy overlap"), "sweep");
	expect_ok(zb("export 1 --db ex.db --format csv -o ex.csv"), "export");
	char *csv = get("ex.csv");
	const char *p = csv;
	char *f[32];
	int head = csv_record(&p, f, 32), rows = 0;
	csv_free(f, head);
	while (*p) {
		int n = csv_record(&p, f, 32);
		assert_int_equal(n, head);
		csv_free(f, n);
		rows++;
	}
	assert_true(rows > 100);
	free(csv);
	/* '#' header lines stay single lines: no file name with a control character is read */
	sh("cp comma.json \"$(printf 'nl\\nm.json')\"");
	expect_refused(zb("sweep --model-file \"$(printf 'nl\\nm.json')\" --no-db"), 2, "file name 'nl\\x0am.json'");
}

/* ---- merge: read-only shards, no half-made output, shards still written ----------- */

/* zbench run as another user (nobody) when this test runs as root, so a folder
 * mode 0555 is really read-only; 0 when that user cannot run it. */
static int as_nobody(const char *args, int *rc)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd '%s' && rm -f nobody.out nobody.err && exec '%s' %s >nobody.out 2>nobody.err </dev/null",
		 dir, zbench, args);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	assert_true(waitpid(pid, &st, 0) == pid);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return *rc != 126 && *rc != 127;
}

static void test_merge_read_only_shard(void **state)
{
	expect_ok(zb("sweep --ratio 0,1 --policy overlap --db ro-shard.db"), "sweep");
	sh("mkdir -p rodir && cp ro-shard.db rodir/s.db && chmod 555 rodir && chmod 777 .");
	int rc;
	if (geteuid() == 0 && !as_nobody("version", &rc)) {
		sh("chmod 755 rodir");
		print_message("# skipped: running as root and user nobody cannot run %s\n", zbench);
		skip();
		return;
	}
	assert_true(as_nobody("merge ro-out.db rodir/s.db", &rc));
	char *err = get("nobody.err");
	if (rc != 0)
		print_error("merge of a shard in a read-only folder: exit %d, %s\n", rc, err);
	free(err);
	sh("chmod 755 rodir");
	assert_int_equal(rc, 0);
	assert_int_equal(count_rows("ro-out.db", "configs"), 2);
	sh("test ! -e rodir/s.db-wal && test ! -e rodir/s.db-shm");
}

/* no file 'name' and no temporary of it */
static void expect_no_output(const char *name)
{
	if (exists(name))
		print_error("'%s' left behind by a merge that failed\n", name);
	assert_false(exists(name));
	sh("! ls -a | grep -q '^%s\\.tmp\\.'", name);
}

static void test_merge_refuses_without_leftovers(void **state)
{
	expect_ok(zb("sweep --ratio 0,1 --policy overlap --db good.db"), "sweep");
	put("junk.db", "not a database at all, but long enough to be read as one by a careless reader\n");
	expect_refused(zb("merge new1.db good.db junk.db"), 2, "junk.db");
	expect_no_output("new1.db");
	expect_refused(zb("merge new2.db good.db missing.db"), 2, "missing.db");
	expect_no_output("new2.db");
	/* a shard with no runs, and one whose run is still 'running' */
	expect_ok(zb("predict --db empty.db"), "predict");
	sql_at("empty.db", "DELETE FROM predictions; DELETE FROM configs; DELETE FROM runs");
	expect_refused(zb("merge new3.db empty.db"), 2, "has no runs");
	expect_no_output("new3.db");
	sh("cp good.db running.db");
	sql_at("running.db", "UPDATE runs SET status = 'running'");
	expect_refused(zb("merge new4.db good.db running.db"), 2, "still running");
	expect_no_output("new4.db");
	/* an existing output is left as it was */
	expect_ok(zb("predict --db kept.db"), "predict");
	expect_refused(zb("merge kept.db good.db junk.db"), 2, "junk.db");
	assert_int_equal(count_rows("kept.db", "runs"), 1);
}

/* A sweep still writing its shard (a real child process): merging it is refused in
 * one line instead of merging 0 runs with exit 0. */
static void test_merge_refuses_a_shard_being_written(void **state)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (chdir(dir) || !freopen("live.csv", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(99);
		execl(zbench, zbench, "sweep", "--ratio", "0:1:0.001", "--pcie", "gen3,gen4,gen5,gen6", "--cores",
		      "4,8,16,32,64", "--hypothetical-cpu", "--policy", "offload,overlap,dpu", "-j", "1", "--csv", "--db", "live.db", (char *)NULL);
		_exit(98);
	}
	struct stat st;
	for (int i = 0; i < 600 && (stat(at("live.csv"), &st) != 0 || st.st_size < 20000); i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	res r = zb("merge live-out.db live.db");
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	expect_refused(r, 2, "still being written");
	expect_no_output("live-out.db");
}

int main(void)
{
	if (zb_test_cli_setup(&zbench, dir, sizeof dir))
		return 1;
	if (zbench[0] != '/') {
		static char abs[1024];
		if (!getcwd(abs, sizeof abs - strlen(zbench) - 2))
			return 1;
		strcat(abs, "/");
		strcat(abs, zbench);
		zbench = abs;
	}
	have_gnuplot = system("command -v gnuplot >/dev/null 2>&1") == 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gnuplot_runs_no_input),
		cmocka_unit_test(test_names_with_control_characters),
		cmocka_unit_test(test_script_has_no_input_outside_quotes),
		cmocka_unit_test(test_symlinks_are_not_followed),
		cmocka_unit_test(test_merge_long_column_names),
		cmocka_unit_test(test_task_estimate_bounds_every_schedule),
		cmocka_unit_test(test_schedule_limit_everywhere),
		cmocka_unit_test(test_sweep_sigterm_and_sighup),
		cmocka_unit_test(test_measured_numbers),
		cmocka_unit_test(test_published_numbers),
		cmocka_unit_test(test_zero_stage_range),
		cmocka_unit_test(test_integer_ranges),
		cmocka_unit_test(test_import_bad_times),
		cmocka_unit_test(test_import_plain_names),
		cmocka_unit_test(test_csv_cells),
		cmocka_unit_test(test_merge_read_only_shard),
		cmocka_unit_test(test_merge_refuses_without_leftovers),
		cmocka_unit_test(test_merge_refuses_a_shard_being_written),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	zb_test_cli_teardown(dir);
	return rc;
}
