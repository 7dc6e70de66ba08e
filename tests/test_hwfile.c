/*
 * test_hwfile.c - hardware and model JSON files: every preset survives a save/load
 * round trip exactly; preset-name and preset-base forms; and every kind of bad file
 * gives ZB_E_INPUT with one line naming the file, the key and the value.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <unistd.h>

#include "common/error.h"
#include "core/config.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

static char dir[64];

static int setup(void **state)
{
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

static const char *path_of(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Load text as hw.json and expect ZB_E_INPUT whose message contains each needle. */
static void expect_hw_error(const char *text, const char *n1, const char *n2)
{
	const char *p = path_of("hw.json");
	zb_test_write_file(p, text);
	zb_hw hw;
	zb_error e = {0};
	zb_status st = zb_hw_load(p, &hw, &e);
	if (st != ZB_E_INPUT)
		print_error("loading %s: status %d, message '%s'\n", text, st, e.msg);
	assert_int_equal(st, ZB_E_INPUT);
	assert_contains(e.msg, "hw.json");
	if (n1)
		assert_contains(e.msg, n1);
	if (n2)
		assert_contains(e.msg, n2);
	assert_null(strchr(e.msg, '\n'));
}

static void expect_model_error(const char *text, const char *n1, const char *n2)
{
	const char *p = path_of("model.json");
	zb_test_write_file(p, text);
	zb_model m;
	zb_error e = {0};
	zb_status st = zb_model_load(p, &m, &e);
	if (st != ZB_E_INPUT)
		print_error("loading %s: status %d, message '%s'\n", text, st, e.msg);
	assert_int_equal(st, ZB_E_INPUT);
	assert_contains(e.msg, "model.json");
	if (n1)
		assert_contains(e.msg, n1);
	if (n2)
		assert_contains(e.msg, n2);
}

static void assert_link_equal(const zb_link *a, const zb_link *b)
{
	assert_string_equal(a->name, b->name);
	assert_true(a->h2d_Bps == b->h2d_Bps && a->d2h_Bps == b->d2h_Bps);
	assert_true(a->duplex_h2d == b->duplex_h2d && a->duplex_d2h == b->duplex_d2h);
	assert_true(a->copy_latency_s == b->copy_latency_s);
	assert_true(a->pageable_h2d_Bps == b->pageable_h2d_Bps);
	assert_true(a->pageable_d2h_Bps == b->pageable_d2h_Bps);
}

static void assert_gpu_equal(const zb_gpu *a, const zb_gpu *b)
{
	assert_string_equal(a->name, b->name);
	assert_true(a->mem_bytes == b->mem_bytes);
	assert_true(a->bf16_flops == b->bf16_flops && a->fp16_flops == b->fp16_flops);
	assert_true(a->hbm_Bps == b->hbm_Bps);
	assert_true(a->gemm_half_dim == b->gemm_half_dim);
	assert_true(a->kernel_latency_s == b->kernel_latency_s);
	assert_int_equal(a->sms, b->sms);
	assert_string_equal(a->builtin_link, b->builtin_link);
}

static void assert_cpu_equal(const zb_cpu *a, const zb_cpu *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->cores, b->cores);
	assert_true(a->adam_params_per_core == b->adam_params_per_core);
	assert_true(a->dram_Bps == b->dram_Bps && a->mem_bytes == b->mem_bytes);
	assert_true(a->task_latency_s == b->task_latency_s);
}

static void assert_hw_equal(const zb_hw *a, const zb_hw *b)
{
	assert_string_equal(a->name, b->name);
	assert_link_equal(&a->link, &b->link);
	assert_gpu_equal(&a->gpu, &b->gpu);
	assert_cpu_equal(&a->cpu, &b->cpu);
	assert_int_equal(a->gpus_per_link, b->gpus_per_link);
	assert_int_equal(a->gpus_per_cpu, b->gpus_per_cpu);
}

static void assert_model_equal(const zb_model *a, const zb_model *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->layers, b->layers);
	assert_int_equal(a->hidden, b->hidden);
	assert_int_equal(a->heads, b->heads);
	assert_int_equal(a->kv_heads, b->kv_heads);
	assert_int_equal(a->ffn, b->ffn);
	assert_int_equal(a->vocab, b->vocab);
	assert_int_equal(a->max_seq, b->max_seq);
	assert_int_equal(a->gated_mlp, b->gated_mlp);
	assert_int_equal(a->bias, b->bias);
	assert_int_equal(a->tied_embeddings, b->tied_embeddings);
	assert_int_equal(a->embed_proj, b->embed_proj);
}

/* ---- round trips ----------------------------------------------------------- */

static void test_hw_round_trip_every_preset(void **state)
{
	const char *p = path_of("rt-hw.json");
	for (int i = 0; i < zb_preset_count("hw"); i++) {
		zb_hw hw, back;
		zb_error e;
		assert_int_equal(zb_preset_hw(zb_preset_name("hw", i), &hw, NULL), ZB_OK);
		assert_int_equal(zb_hw_save(p, &hw, &e), ZB_OK);
		if (zb_hw_load(p, &back, &e) != ZB_OK)
			print_error("%s: %s\n", hw.name, e.msg);
		assert_hw_equal(&hw, &back);
	}
	/* The temporary file is gone after the rename. */
	char tmp[300];
	snprintf(tmp, sizeof tmp, "%s.tmp", p);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_hw_round_trip_is_exact_and_readable(void **state)
{
	const char *p = path_of("odd.json");
	zb_hw hw, back;
	zb_error e;
	zb_preset_default_hw(&hw);
	hw.link.h2d_Bps = 1e11 / 3.0;       /* needs 17 digits */
	hw.cpu.task_latency_s = 0.1 + 0.2;  /* 0.30000000000000004 */
	hw.gpu.kernel_latency_s = 0;        /* zero is allowed */
	assert_int_equal(zb_hw_save(p, &hw, &e), ZB_OK);
	assert_int_equal(zb_hw_load(p, &back, &e), ZB_OK);
	assert_hw_equal(&hw, &back);

	/* Preset figures stay short: "0.87", not "0.86999999999999999". */
	zb_preset_default_hw(&hw);
	assert_int_equal(zb_hw_save(p, &hw, &e), ZB_OK);
	char *text = read_all(p);
	assert_contains(text, "\"duplex_h2d\": 0.87,");
	assert_contains(text, "\n  \"link\": {\n    \"name\": \"gen5\"");
	assert_null(strstr(text, "9999"));
	free(text);
}

static void test_model_round_trip_every_preset(void **state)
{
	const char *p = path_of("rt-model.json");
	for (int i = 0; i < zb_preset_count("model"); i++) {
		zb_model m, back;
		zb_error e;
		assert_int_equal(zb_preset_model(zb_preset_name("model", i), &m, NULL), ZB_OK);
		assert_int_equal(zb_model_save(p, &m, &e), ZB_OK);
		if (zb_model_load(p, &back, &e) != ZB_OK)
			print_error("%s: %s\n", m.name, e.msg);
		assert_model_equal(&m, &back);
	}
}

static void test_save_failure(void **state)
{
	zb_hw hw;
	zb_error e;
	zb_preset_default_hw(&hw);
	zb_status st = zb_hw_save("/nonexistent-zbench-dir/hw.json", &hw, &e);
	assert_int_equal(st, ZB_E_INPUT);
	assert_contains(e.msg, "/nonexistent-zbench-dir/hw.json"); /* the file asked for, not its temporary */
}

/* ---- accepted forms -------------------------------------------------------- */

static void test_preset_name_form(void **state)
{
	const char *p = path_of("names.json");
	zb_test_write_file(p, "{\"name\": \"box\", \"link\": \"gen5\", \"gpu\": \"h200\", "
			      "\"cpu\": \"h200-machine\"}");
	zb_hw hw, ref;
	zb_error e;
	assert_int_equal(zb_hw_load(p, &hw, &e), ZB_OK);
	zb_preset_default_hw(&ref);
	snprintf(ref.name, sizeof ref.name, "box");
	assert_hw_equal(&hw, &ref);
}

static void test_preset_base_with_overrides(void **state)
{
	const char *p = path_of("base.json");
	zb_test_write_file(p, "{\"link\": {\"preset\": \"gen5\", \"duplex_h2d\": 0.5},\n"
			      " \"gpu\": {\"preset\": \"h200\", \"hbm_Bps\": 4.5e12, \"name\": \"h200b\"},\n"
			      " \"cpu\": \"h200-machine\", \"gpus_per_cpu\": 2}");
	zb_hw hw, ref;
	zb_error e;
	assert_int_equal(zb_hw_load(p, &hw, &e), ZB_OK);
	zb_preset_default_hw(&ref);
	assert_true(hw.link.duplex_h2d == 0.5);
	assert_true(hw.link.duplex_d2h == ref.link.duplex_d2h);
	assert_true(hw.gpu.hbm_Bps == 4.5e12);
	assert_true(hw.gpu.bf16_flops == ref.gpu.bf16_flops);
	assert_string_equal(hw.gpu.name, "h200b");
	assert_int_equal(hw.gpus_per_cpu, 2);
	assert_int_equal(hw.gpus_per_link, 1);
	assert_string_equal(hw.name, "base"); /* from the file name */

	/* A whole machine as the base, one field changed. */
	zb_test_write_file(p, "{\"preset\": \"dgx-a100\", \"cpu\": {\"cores\": 64}}");
	assert_int_equal(zb_hw_load(p, &hw, &e), ZB_OK);
	assert_int_equal(zb_preset_hw("dgx-a100", &ref, NULL), ZB_OK);
	assert_int_equal(hw.cpu.cores, 64);
	assert_true(hw.cpu.dram_Bps == ref.cpu.dram_Bps);
	assert_link_equal(&hw.link, &ref.link);
	assert_int_equal(hw.gpus_per_cpu, 8);
	assert_string_equal(hw.name, "dgx-a100");

	/* No link: the GPU's own (GH200: NVLink-C2C). */
	zb_test_write_file(p, "{\"gpu\": \"gh200\", \"cpu\": \"gh200\"}");
	assert_int_equal(zb_hw_load(p, &hw, &e), ZB_OK);
	assert_string_equal(hw.link.name, "nvlink-c2c");
}

static void test_full_object_form(void **state)
{
	const char *p = path_of("full.json");
	zb_test_write_file(p,
		"{\"link\": {\"h2d_Bps\": 25e9, \"d2h_Bps\": 25e9, \"duplex_h2d\": 0.48,"
		" \"duplex_d2h\": 0.96, \"copy_latency_s\": 4e-6, \"pageable_h2d_Bps\": 6e9,"
		" \"pageable_d2h_Bps\": 10e9},"
		" \"gpu\": {\"name\": \"mine\", \"mem_bytes\": 85899345920, \"bf16_flops\": 2.5e14,"
		" \"fp16_flops\": 2.5e14, \"hbm_Bps\": 1.8e12, \"gemm_half_dim\": 64,"
		" \"kernel_latency_s\": 4e-6},"
		" \"cpu\": {\"cores\": 64, \"adam_params_per_core\": 1.5e8, \"dram_Bps\": 3e11,"
		" \"mem_bytes\": 1e12, \"task_latency_s\": 5e-6}}");
	zb_hw hw;
	zb_error e;
	zb_status st = zb_hw_load(p, &hw, &e);
	if (st != ZB_OK)
		print_error("%s\n", e.msg);
	assert_int_equal(st, ZB_OK);
	assert_true(hw.gpu.mem_bytes == 85899345920.0); /* an integer where a real is expected */
	assert_true(hw.link.duplex_h2d == 0.48);
	assert_int_equal(hw.cpu.cores, 64);
	assert_string_equal(hw.gpu.name, "mine");
	assert_string_equal(hw.gpu.builtin_link, "");
}

static void test_model_forms(void **state)
{
	const char *p = path_of("m.json");
	zb_model m, ref;
	zb_error e;
	zb_test_write_file(p, "{\"layers\": 36, \"hidden\": 1280, \"heads\": 20, \"ffn\": 5120,"
			      " \"vocab\": 50257, \"max_seq\": 1024, \"gated_mlp\": false,"
			      " \"bias\": true, \"tied_embeddings\": 1}");
	assert_int_equal(zb_model_load(p, &m, &e), ZB_OK);
	zb_preset_default_model(&ref);
	snprintf(ref.name, sizeof ref.name, "m"); /* named after the file */
	assert_model_equal(&m, &ref);             /* kv_heads defaulted to heads */

	zb_test_write_file(p, "{\"preset\": \"llama2-7b\", \"layers\": 16}");
	assert_int_equal(zb_model_load(p, &m, &e), ZB_OK);
	assert_int_equal(m.layers, 16);
	assert_int_equal(m.ffn, 11008);
	assert_string_equal(m.name, "llama2-7b");
}

/* ---- errors ---------------------------------------------------------------- */

static void test_malformed_json(void **state)
{
	expect_hw_error("{\"link\": \"gen5\",\n  \"gpu\": }", "malformed JSON at line 2", NULL);
	expect_hw_error("", "malformed JSON", NULL);
	expect_hw_error("{\"link\": \"gen5\", \"link\": \"gen4\"}", "malformed JSON", "link");
	expect_hw_error("[1, 2]", "top level must be an object", "array");
	expect_model_error("{\"layers\": 3,", "malformed JSON at line 1", NULL);

	zb_hw hw;
	zb_error e;
	assert_int_equal(zb_hw_load(path_of("does-not-exist.json"), &hw, &e), ZB_E_INPUT);
	assert_contains(e.msg, "cannot open");
	assert_contains(e.msg, "does-not-exist.json");
}

static void test_wrong_types(void **state)
{
	expect_hw_error("{\"link\": \"gen5\", \"cpu\": \"h200-machine\","
			" \"gpu\": {\"preset\": \"h200\", \"hbm_Bps\": \"fast\"}}",
			"hw.json: key 'gpu.hbm_Bps' must be a positive number (got \"fast\")", NULL);
	expect_hw_error("{\"preset\": \"h200-machine\", \"link\": {\"duplex_h2d\": 1.5}}",
			"key 'link.duplex_h2d' must be a number in (0, 1] (got 1.5)", NULL);
	expect_hw_error("{\"preset\": \"h200-machine\", \"link\": {\"h2d_Bps\": -5}}",
			"key 'link.h2d_Bps'", "(got -5)");
	expect_hw_error("{\"preset\": \"h200-machine\", \"cpu\": {\"cores\": 2.5}}",
			"key 'cpu.cores' must be a positive integer", "2.5");
	expect_hw_error("{\"preset\": \"h200-machine\", \"gpus_per_cpu\": 0}", "key 'gpus_per_cpu'",
			"(got 0)");
	expect_hw_error("{\"preset\": \"h200-machine\", \"link\": 5}",
			"key 'link' must be a preset name or an object", "(got 5)");
	expect_hw_error("{\"preset\": \"h200-machine\", \"gpu\": {\"name\": 7}}", "key 'gpu.name'",
			NULL);
	expect_hw_error("{\"preset\": 3}", "key 'preset'", "(got 3)");
	expect_model_error("{\"preset\": \"gpt2\", \"bias\": 2}", "key 'bias'", "(got 2)");
	expect_model_error("{\"preset\": \"gpt2\", \"layers\": \"many\"}", "key 'layers'",
			   "\"many\"");
}

static void test_missing_fields(void **state)
{
	expect_hw_error("{\"link\": \"gen5\", \"cpu\": \"h200-machine\","
			" \"gpu\": {\"mem_bytes\": 1e11, \"bf16_flops\": 1e15, \"fp16_flops\": 1e15,"
			" \"gemm_half_dim\": 64, \"kernel_latency_s\": 4e-6}}",
			"missing required key 'gpu.hbm_Bps'", NULL);
	expect_hw_error("{\"link\": \"gen5\", \"gpu\": \"h200\"}", "missing required key 'cpu'",
			NULL);
	expect_hw_error("{\"gpu\": \"h200\", \"cpu\": \"h200-machine\"}",
			"missing required key 'link'", NULL);
	expect_model_error("{\"layers\": 36, \"hidden\": 1280, \"heads\": 20, \"ffn\": 5120,"
			   " \"vocab\": 50257, \"max_seq\": 1024, \"gated_mlp\": false,"
			   " \"tied_embeddings\": true}",
			   "missing required key 'bias'", NULL);
}

static void test_unknown_keys_and_names(void **state)
{
	expect_hw_error("{\"preset\": \"h200-machine\", \"gpu\": {\"hbm\": 4e12}}",
			"hw.json: unknown key 'gpu.hbm'", NULL);
	expect_hw_error("{\"preset\": \"h200-machine\", \"gpus\": 2}", "unknown key 'gpus'", NULL);
	expect_model_error("{\"preset\": \"gpt2\", \"n_layer\": 12}", "unknown key 'n_layer'", NULL);
	expect_hw_error("{\"link\": \"gen7\", \"gpu\": \"h200\", \"cpu\": \"h200-machine\"}",
			"key 'link'", "unknown pcie generation 'gen7'");
	expect_hw_error("{\"link\": {\"preset\": \"gen7\"}, \"gpu\": \"h200\", \"cpu\": \"h200-machine\"}",
			"key 'link.preset'", "'gen7'");
	expect_hw_error("{\"preset\": \"dgx-9\"}", "key 'preset'", "unknown machine 'dgx-9'");
	expect_model_error("{\"preset\": \"gpt5\"}", "key 'preset'", "unknown model 'gpt5'");
}

static void test_validation_after_load(void **state)
{
	/* Every field is fine alone; together they are not. */
	expect_model_error("{\"preset\": \"gpt2-large\", \"heads\": 7}", "heads 7", "hidden 1280");
	expect_model_error("{\"preset\": \"llama2-70b\", \"kv_heads\": 3}", "kv_heads 3", NULL);
}

/* ---- config JSON ----------------------------------------------------------- */

static void test_config_to_json(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_preset_default_model(&c.model);
	zb_policy_defaults(&c.policy);
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.75;
	c.policy.ckpt = ZB_CKPT_CPU;
	c.steps = 5;
	char *text = zb_config_to_json(&c);
	assert_non_null(text);
	assert_null(strchr(text, '\n')); /* compact */

	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	assert_non_null(root);
	json_t *pol = json_object_get(root, "policy");
	assert_string_equal(json_string_value(json_object_get(pol, "kind")), "dpu");
	assert_string_equal(json_string_value(json_object_get(pol, "ckpt")), "cpu");
	assert_string_equal(json_string_value(json_object_get(pol, "dtype")), "bf16");
	assert_true(json_number_value(json_object_get(pol, "ratio")) == 0.75);
	assert_int_equal(json_integer_value(json_object_get(pol, "micro_batch")), 8);
	assert_int_equal(json_integer_value(json_object_get(pol, "bucket_params")), 25000000);
	assert_int_equal(json_integer_value(json_object_get(root, "steps")), 5);
	json_t *hw = json_object_get(root, "hw");
	assert_string_equal(json_string_value(json_object_get(json_object_get(hw, "gpu"), "name")),
			    "h200");
	assert_true(json_number_value(json_object_get(json_object_get(hw, "link"), "h2d_Bps")) ==
		    c.hw.link.h2d_Bps);
	json_t *model = json_object_get(root, "model");
	assert_int_equal(json_integer_value(json_object_get(model, "layers")), 36);
	assert_true(json_is_true(json_object_get(model, "tied_embeddings")));
	json_decref(root);

	/* The hw and model objects are in file form: saved as files, they load back. */
	root = json_loads(text, 0, &je);
	const char *hp = path_of("from-config.json");
	assert_int_equal(json_dump_file(json_object_get(root, "hw"), hp, JSON_REAL_PRECISION(17)), 0);
	zb_hw back;
	zb_error e;
	assert_int_equal(zb_hw_load(hp, &back, &e), ZB_OK);
	assert_hw_equal(&back, &c.hw);
	json_decref(root);
	free(text);
}

/* The fields of the Hugging Face families (head_dim, linear_bias, norms, experts,
 * experts_active, shared_ffn, loss) are written only when set, so a dense model's
 * JSON is as before, and a mixture of experts reads back the same. */
static void test_model_json_new_fields(void **state)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	zb_preset_default_model(&c.model);
	zb_policy_defaults(&c.policy);
	c.steps = 1;
	char *text = zb_config_to_json(&c);
	assert_null(strstr(text, "experts"));
	assert_null(strstr(text, "head_dim"));
	assert_null(strstr(text, "\"loss\""));
	free(text);
	zb_model m = { .name = "moe", .layers = 2, .hidden = 512, .heads = 8, .kv_heads = 4, .ffn = 256, .vocab = 2048,
		       .gated_mlp = 1, .head_dim = 96, .linear_bias = ZB_BIAS_QKV, .norms = ZB_NORM_QK, .experts = 6,
		       .experts_active = 2, .shared_ffn = 768, .loss = ZB_LOSS_HF };
	c.model = m;
	text = zb_config_to_json(&c);
	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	assert_non_null(root);
	zb_model back;
	zb_error e = { 0 };
	zb_status st = zb_model_from_json(json_object_get(root, "model"), "moe.json", &back, &e);
	if (st)
		print_error("%s\n", e.msg);
	assert_int_equal(st, ZB_OK);
	assert_memory_equal(&back, &m, sizeof m);
	json_decref(root);
	free(text);
	expect_model_error("{\"preset\": \"llama2-7b\", \"experts\": 4, \"experts_active\": 5}", "experts_active 5",
			   NULL);
	expect_model_error("{\"preset\": \"llama2-7b\", \"experts\": -1}", "experts", "non-negative");
	expect_model_error("{\"preset\": \"llama2-7b\", \"norms\": 9}", "norms 9", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hw_round_trip_every_preset),
		cmocka_unit_test(test_hw_round_trip_is_exact_and_readable),
		cmocka_unit_test(test_model_round_trip_every_preset),
		cmocka_unit_test(test_save_failure),
		cmocka_unit_test(test_preset_name_form),
		cmocka_unit_test(test_preset_base_with_overrides),
		cmocka_unit_test(test_full_object_form),
		cmocka_unit_test(test_model_forms),
		cmocka_unit_test(test_malformed_json),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_missing_fields),
		cmocka_unit_test(test_unknown_keys_and_names),
		cmocka_unit_test(test_validation_after_load),
		cmocka_unit_test(test_config_to_json),
		cmocka_unit_test(test_model_json_new_fields),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
