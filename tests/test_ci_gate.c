/*
 * test_ci_gate.c - zbench as a CI gate, the way docs/ci.md and docs/ci-example.yml run
 * it without a GPU: a suite file of three of the user's own configurations (one a
 * DeepSpeed + Hugging Face config pair beside it), a baseline saved to a file to
 * commit, and regress --sim judging a change with a JUnit report:
 *   - no change: exit 0, three passing test cases;
 *   - a planted slowdown: exit 1, every test case failing with old, new and the
 *     tolerance in its message;
 *   - a change of the training stack (the DeepSpeed config's micro-batch): exit 1, only
 *     that configuration's test case failing;
 *   - a baseline of a newer format, another hardware profile, a JUnit file that cannot
 *     be written: exit 2, one line, nothing written.
 */
#include "tests/harness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <jansson.h>

#include "report/junit.h"

static char dir[64];
static const char *zbench;

static int setup(void **state) { return zb_test_cli_setup(&zbench, dir, sizeof dir); }

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
	static char p[6][256];
	static int k;
	char *s = p[k++ % 6];
	snprintf(s, sizeof p[0], "%s/%s", dir, name);
	return s;
}

static zb_test_result zb(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static zb_test_result zb(const char *fmt, ...)
{
	char args[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return zb_test_run(zbench, dir, args);
}

static int count_of(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The DeepSpeed config of the pair, with a micro-batch of its own. */
static void write_ds(int micro_batch)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "{\"train_micro_batch_size_per_gpu\": %d, \"gradient_accumulation_steps\": 1,\n"
		 " \"fp16\": {\"enabled\": true},\n"
		 " \"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true},\n"
		 "   \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}}}\n",
		 micro_batch);
	zb_test_write_file(at("ci/ds-zero3.json"), text);
}

static void write_suite(void)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "mkdir -p %s/ci && cp tests/data/hf-llama3.2-1b.json %s/ci/", dir, dir);
	assert_int_equal(system(cmd), 0);
	write_ds(2);
	zb_test_write_file(at("ci/suite.txt"),
			   "# the configurations this repository trains\n"
			   "--name llama7b-twinflow --model llama2-7b --layers 8 --policy dpu --ratio 0.5 --micro-batch 2\n"
			   "--name gpt2xl-offload --model gpt2-xl --policy overlap --micro-batch 4 --seq 1024\n"
			   "--name llama1b-zero3 --hf-config hf-llama3.2-1b.json --ds-config ds-zero3.json --seq 512\n");
}

/* The JUnit document's counts. */
static void junit_counts(const char *path, int tests, int failures, int skipped)
{
	char *x = zb_test_slurp(path, NULL);
	char want[128];
	snprintf(want, sizeof want, "<testsuite name=");
	assert_contains(x, want);
	snprintf(want, sizeof want, "tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\"", tests, failures, skipped);
	assert_contains(x, want);
	assert_int_equal(count_of(x, "<testcase "), tests);
	assert_int_equal(count_of(x, "<failure "), failures);
	free(x);
}

static int leftovers(const char *sub)
{
	DIR *d = opendir(at(sub));
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_gate(void **state)
{
	write_suite();
	/* the baseline to commit, no database */
	zb_test_result r = zb("baseline save main --sim --suite %s -o %s --no-db", at("ci/suite.txt"), at("ci/baseline.json"));
	if (r.rc)
		print_error("%s%s", r.out, r.err);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "wrote baseline 'main' to");
	assert_null(strstr(r.out, "saved baseline")); /* nothing in a database */
	zb_test_result_free(&r);
	json_t *b = json_load_file(at("ci/baseline.json"), 0, NULL);
	assert_non_null(b);
	assert_int_equal(json_integer_value(json_object_get(b, "version")), 1);
	assert_int_equal(json_array_size(json_object_get(b, "configs")), 3);
	assert_true(json_is_object(json_object_get(json_object_get(b, "hardware"), "profile")));
	json_t *c2 = json_array_get(json_object_get(b, "configs"), 2);
	assert_string_equal(json_string_value(json_object_get(c2, "key")), "llama1b-zero3");
	assert_contains(json_string_value(json_object_get(c2, "spec")), "/ci/ds-zero3.json");
	json_decref(b);

	/* no change: passes */
	mkdir(at("out"), 0755);
	r = zb("regress --baseline %s --sim --junit %s", at("ci/baseline.json"), at("out/junit.xml"));
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "0 of 3 configurations regressed");
	zb_test_result_free(&r);
	junit_counts(at("out/junit.xml"), 3, 0, 0);

	/* a planted slowdown: every case fails, saying old, new and the tolerance */
	r = zb("regress --baseline %s --sim --plant-slowdown 0.05 --junit %s", at("ci/baseline.json"), at("out/junit.xml"));
	assert_int_equal(r.rc, 1);
	zb_test_result_free(&r);
	junit_counts(at("out/junit.xml"), 3, 3, 0);
	char *x = zb_test_slurp(at("out/junit.xml"), NULL);
	assert_contains(x, "name=\"llama7b-twinflow\"");
	assert_contains(x, "tokens/s (-4.76 %), beyond the tolerance of 3.0 %");
	assert_contains(x, " -&gt; ");
	free(x);
	assert_int_equal(leftovers("out"), 0);

	/* a change of the training stack: the DeepSpeed config's micro-batch halves; only
	 * that configuration's case fails */
	write_ds(1);
	r = zb("regress --baseline %s --sim --junit %s", at("ci/baseline.json"), at("out/junit.xml"));
	assert_int_equal(r.rc, 1);
	assert_contains(r.out, "1 of 3 configurations regressed");
	zb_test_result_free(&r);
	junit_counts(at("out/junit.xml"), 3, 1, 0);
	x = zb_test_slurp(at("out/junit.xml"), NULL);
	const char *fail = strstr(x, "<failure ");
	const char *pair = strstr(x, "name=\"llama1b-zero3\"");
	assert_non_null(pair);
	assert_true(fail > pair); /* the failure is that case's */
	free(x);
	write_ds(2);

	/* the database form of the same baseline: regress by tag reads the suite file again */
	r = zb("baseline save main --sim --suite %s --db %s", at("ci/suite.txt"), at("ci.db"));
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "stored run 1, configurations 1-3");
	zb_test_result_free(&r);
	r = zb("regress --baseline main --sim --db %s", at("ci.db"));
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "0 of 3 configurations regressed");
	zb_test_result_free(&r);

	/* validate takes the same file (--list: the plan, no GPU needed) */
	r = zb("validate --suite %s --list --no-db", at("ci/suite.txt"));
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "(3 of 3 configurations)");
	assert_contains(r.out, "llama1b-zero3");
	zb_test_result_free(&r);

	/* rerun the suite as it is now, with a fourth configuration: not judged */
	FILE *f = fopen(at("ci/suite.txt"), "a");
	fputs("--name new-one --model gpt2 --policy none\n", f);
	fclose(f);
	r = zb("regress --baseline %s --sim --suite %s --junit %s", at("ci/baseline.json"), at("ci/suite.txt"),
	       at("out/junit.xml"));
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	junit_counts(at("out/junit.xml"), 4, 0, 1);
}

static void test_refused(void **state)
{
	/* a baseline from a newer zbench */
	char *text = zb_test_slurp(at("ci/baseline.json"), NULL);
	char *v = strstr(text, "\"version\": 1");
	assert_non_null(v);
	v[11] = '7';
	zb_test_write_file(at("ci/newer.json"), text);
	free(text);
	zb_test_result r = zb("regress --baseline %s --sim --junit %s", at("ci/newer.json"), at("out/never.xml"));
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "format version 7, newer than this zbench reads (1)");
	assert_int_equal(count_of(r.err, "\n"), 1);
	assert_int_equal(access(at("out/never.xml"), F_OK), -1);
	zb_test_result_free(&r);
	/* another hardware profile */
	r = zb("regress --baseline %s --sim --hw dgx-a100", at("ci/baseline.json"));
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "holds hardware profile 'h200-machine', not --hw 'dgx-a100'");
	zb_test_result_free(&r);
	/* the same profile named again passes */
	r = zb("regress --baseline %s --sim --hw h200-machine", at("ci/baseline.json"));
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	/* a JUnit file that cannot be written: refused before the work */
	r = zb("regress --baseline %s --sim --junit %s", at("ci/baseline.json"), at("nodir/j.xml"));
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "nodir/j.xml");
	assert_string_equal(r.out, "");
	zb_test_result_free(&r);
	/* not a baseline; a suite file with a typo names its line */
	zb_test_write_file(at("ci/other.json"), "{\"format\": \"something\"}");
	r = zb("regress --baseline %s --sim", at("ci/other.json"));
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "is not a zbench baseline file");
	zb_test_result_free(&r);
	zb_test_write_file(at("ci/typo.txt"), "--model gpt2\n\n--modle gpt2\n");
	r = zb("baseline save t --sim --suite %s -o %s --no-db", at("ci/typo.txt"), at("ci/t.json"));
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "typo.txt:3: unknown flag '--modle'");
	assert_int_equal(access(at("ci/t.json"), F_OK), -1);
	zb_test_result_free(&r);
	r = zb("baseline save t --sim --no-db");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "needs -o");
	zb_test_result_free(&r);
}

/* Names and messages are XML text: markup characters escaped, control characters XML
 * cannot hold replaced. */
static void test_junit_text(void **state)
{
	zb_junit_case c[2] = { { .name = "a<b>&\"c'", .outcome = ZB_JUNIT_FAILED }, { .name = "ok", .time_s = 1.5 } };
	snprintf(c[0].message, sizeof c[0].message, "1 -> 2 \x01 done");
	const char *const props[][2] = { { "k", "v&w" } };
	zb_junit_suite s = { .name = "s", .classname = "zbench.t", .properties = props, .nproperties = 1, .cases = c, .n = 2 };
	zb_error err = { 0 };
	assert_int_equal(zb_junit_write(at("j.xml"), &s, &err), ZB_OK);
	char *x = zb_test_slurp(at("j.xml"), NULL);
	assert_contains(x, "name=\"a&lt;b&gt;&amp;&quot;c&apos;\"");
	assert_contains(x, "message=\"1 -&gt; 2 ? done\"");
	assert_contains(x, "value=\"v&amp;w\"");
	assert_contains(x, "tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\"");
	assert_contains(x, "<testcase classname=\"zbench.t\" name=\"ok\" time=\"1.500\"/>");
	free(x);
	assert_int_equal(zb_junit_write(at("missing/j.xml"), &s, &err), ZB_E_INPUT);
	assert_contains(err.msg, "missing/j.xml");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_junit_text),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
