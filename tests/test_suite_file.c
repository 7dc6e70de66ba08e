/*
 * test_suite_file.c - suites of the user's own configurations (validate/suite_file.h):
 * the text and JSON forms read into the same configurations as predict's flags
 * would give, keys, relative paths, DeepSpeed + Hugging Face pairs, and every
 * refusal as one line naming the file and the line.
 */
#include "tests/harness.h"

#include "config/resolve.h"
#include "validate/suite.h"
#include "validate/suite_file.h"

static char dir[64];

static const char *write_file(const char *name, const char *text)
{
	static char path[4][160];
	static int k;
	char *p = path[k++ % 4];
	snprintf(p, sizeof path[0], "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static int setup(void **state)
{
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The configuration predict would build from the same flags. */
static void resolve_flags(const char *model, const char *policy, const char *ratio, const char *mb, zb_config *c)
{
	zb_config_inputs in = { 0 };
	in.value[ZB_AX_MODEL] = model;
	in.value[ZB_AX_POLICY] = policy;
	in.value[ZB_AX_RATIO] = ratio;
	in.value[ZB_AX_MICRO_BATCH] = mb;
	in.value[ZB_AX_STEPS] = "5";
	zb_error err = { 0 };
	assert_int_equal(zb_config_resolve(&in, c, NULL, &err), ZB_OK);
}

static void test_text_form(void **state)
{
	const char *p = write_file("s.txt", "# ours\n"
					    "\n"
					    "--name small --model gpt2 --policy dpu --ratio 0.5 --micro-batch 4\n"
					    "  --model gpt2-xl --policy=overlap --micro-batch 2   # a comment\n"
					    "--model gpt2-medium --fp16 --offload-param --name 'with blanks'\n");
	zb_suite *s;
	zb_error err = { 0 };
	assert_int_equal(zb_suite_file_load(p, &s, &err), ZB_OK);
	assert_int_equal(s->n, 3);
	char key[128];
	zb_suite_key(&s->entries[0], key, sizeof key);
	assert_string_equal(key, "small");
	zb_suite_key(&s->entries[1], key, sizeof key);
	assert_string_equal(key, "--model gpt2-xl --policy overlap --micro-batch 2");
	zb_suite_key(&s->entries[2], key, sizeof key);
	assert_string_equal(key, "with blanks");
	assert_string_equal(zb_suite_entry_spec(&s->entries[2]), "--model gpt2-medium --fp16 --offload-param");
	/* the same configuration as predict's flags give */
	zb_config got, want;
	assert_int_equal(zb_suite_config(&s->entries[0], NULL, 2, 3, &got, &err), ZB_OK);
	resolve_flags("gpt2", "dpu", "0.5", "4", &want);
	assert_int_equal(got.model.layers, want.model.layers);
	assert_int_equal(got.policy.micro_batch, 4);
	assert_close(got.policy.ratio, 0.5, 0);
	assert_int_equal(got.steps, 5);
	assert_int_equal(zb_suite_config(&s->entries[2], NULL, 1, 1, &got, &err), ZB_OK);
	assert_int_equal(got.policy.offload_param, 1);
	zb_suite_close(s);
}

static void test_json_form(void **state)
{
	const char *p = write_file("s.json", "[\n"
					     "  {\"name\": \"a\", \"model\": \"gpt2\", \"ratio\": 0.25, \"micro_batch\": 2},\n"
					     "  {\"model\": \"gpt2-medium\", \"offload-param\": true, \"pageable\": false}\n"
					     "]\n");
	zb_suite *s;
	zb_error err = { 0 };
	assert_int_equal(zb_suite_file_load(p, &s, &err), ZB_OK);
	assert_int_equal(s->n, 2);
	char key[128];
	zb_suite_key(&s->entries[1], key, sizeof key);
	assert_string_equal(key, "--model gpt2-medium --offload-param");
	zb_config c;
	assert_int_equal(zb_suite_config(&s->entries[0], NULL, 2, 3, &c, &err), ZB_OK);
	assert_close(c.policy.ratio, 0.25, 0);
	assert_int_equal(c.policy.micro_batch, 2);
	zb_suite_close(s);
}

/* A DeepSpeed + Hugging Face pair beside the suite file, named relative to it. */
static void test_pair_relative(void **state)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "mkdir -p %s/ci && cp tests/data/ds-zero3-offload.json tests/data/hf-llama3.2-1b.json %s/ci/",
		 dir, dir);
	assert_int_equal(system(cmd), 0);
	const char *p = write_file("ci/suite.txt", "--name pair --hf-config hf-llama3.2-1b.json"
						   " --ds-config ds-zero3-offload.json --seq 512\n");
	zb_suite *s;
	zb_error err = { 0 };
	assert_int_equal(zb_suite_file_load(p, &s, &err), ZB_OK);
	char want[256];
	snprintf(want, sizeof want, "--hf-config %s/ci/hf-llama3.2-1b.json --ds-config %s/ci/ds-zero3-offload.json --seq 512",
		 dir, dir);
	assert_string_equal(zb_suite_entry_spec(&s->entries[0]), want);
	zb_config c;
	assert_int_equal(zb_suite_config(&s->entries[0], NULL, 2, 3, &c, &err), ZB_OK);
	assert_int_equal(c.model.layers, 16); /* Llama-3.2-1B */
	assert_int_equal(c.policy.offload_param, 1); /* the DeepSpeed config's ZeRO-3 parameter offload */
	zb_suite_close(s);
	/* the spec, read back as a baseline file gives it, is the same configuration */
	const char *keys[] = { "pair" }, *specs[] = { want };
	assert_int_equal(zb_suite_from_specs("b.json", keys, specs, 1, &s, &err), ZB_OK);
	zb_config c2;
	assert_int_equal(zb_suite_config(&s->entries[0], NULL, 2, 3, &c2, &err), ZB_OK);
	assert_int_equal(c2.model.layers, c.model.layers);
	assert_int_equal(c2.policy.offload_param, 1);
	zb_suite_close(s);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "--model gpt2\n--modle gpt2\n", ":2: unknown flag '--modle'" },
		{ "--model gpt2 --hw dgx-a100\n", ":1: --hw belongs on the command line" },
		{ "--model gpt2 --steps 9\n", ":1: --steps belongs on the command line" },
		{ "\n\n--pcie gen3,gen4\n", ":3: " },
		{ "--ratio 0:1:0.5\n", "a line is one configuration" },
		{ "--model gpt2 --model gpt2-xl\n", "--model given twice" },
		{ "--model gpt2\n--model gpt2\n", ":2: configuration '--model gpt2' is already at" },
		{ "--name x --model gpt2\n--name x --model gpt2-xl\n", ":2: configuration 'x'" },
		{ "--model 'gpt2\n", ":1: a quote (') is not closed" },
		{ "model gpt2\n", "unexpected 'model'" },
		{ "--ratio\n", "--ratio needs a value" },
		{ "--offload-param=1\n", "takes no value" },
		{ "--ds-config nope.json\n", ":1: " },
		{ "# nothing\n\n", "holds no configuration" },
		{ "--name a\n", "" },
		{ "--model gpt2 --bf16 --fp16\n", "precision is given twice" },
		{ "[{\"model\": \"gpt2\"},\n {\"modle\": 1}]\n", ":2: unknown flag '--modle'" },
		{ "[{\"model\": [1]}]\n", "must be a string, a number or true/false" },
		{ "[{\"model\": \"gpt2\"}, 3]\n", "configuration 2 is not an object" },
		{ "{\"model\": \"gpt2\"}\n", "a JSON suite is a list" },
		{ "[{\"model\": \"gpt2\",}]\n", ":1: " },
		{ "[{\"model\": \"gpt2\", \"model\": \"x\"}]\n", "duplicate" },
		{ "[{\"pageable\": 1}]\n", "is a switch" },
		{ "[{\"ratio\": true}]\n", "takes a value" },
		{ "--model gpt2\x01\n", "control character" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *p = write_file("bad.txt", cases[i].text);
		zb_suite *s = NULL;
		zb_error err = { 0 };
		zb_status st = zb_suite_file_load(p, &s, &err);
		if (!cases[i].want[0]) { /* a named configuration of the defaults is fine */
			assert_int_equal(st, ZB_OK);
			zb_suite_close(s);
			continue;
		}
		if (st != ZB_E_INPUT || !strstr(err.msg, cases[i].want) || strchr(err.msg, '\n'))
			print_error("case %zu: status %d, '%s'\n", i, st, err.msg);
		assert_int_equal(st, ZB_E_INPUT);
		assert_contains(err.msg, cases[i].want);
		assert_contains(err.msg, p); /* the file named */
		assert_null(strchr(err.msg, '\n'));
	}
	/* a value the resolution refuses names the line too */
	const char *p = write_file("bad.txt", "--model gpt2\n--model nope-13b\n");
	zb_suite *s;
	zb_error err = { 0 };
	assert_int_equal(zb_suite_file_load(p, &s, &err), ZB_OK);
	zb_config c;
	assert_int_equal(zb_suite_config(&s->entries[1], NULL, 2, 3, &c, &err), ZB_E_INPUT);
	assert_contains(err.msg, "bad.txt:2: ");
	assert_contains(err.msg, "nope-13b");
	zb_suite_close(s);
}

/* --suite takes a built-in name or a path; neither names both in one line. */
static void test_open(void **state)
{
	const zb_suite *s;
	zb_error err = { 0 };
	assert_int_equal(zb_suite_open("quick", &s, &err), ZB_OK);
	assert_int_equal(s->from_file, 0);
	zb_suite_close(s);
	assert_int_equal(zb_suite_open("/nonexistent/suite.txt", &s, &err), ZB_E_INPUT);
	assert_contains(err.msg, "known: full, quick");
	assert_contains(err.msg, "/nonexistent/suite.txt");
	const char *p = write_file("ok.txt", "--model gpt2\n");
	assert_int_equal(zb_suite_open(p, &s, &err), ZB_OK);
	assert_int_equal(s->from_file, 1);
	assert_int_equal(s->n, 1);
	zb_suite_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_form),
		cmocka_unit_test(test_json_form),
		cmocka_unit_test(test_pair_relative),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
