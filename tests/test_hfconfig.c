/*
 * test_hfconfig.c - Hugging Face config.json files as model shapes: gpt2-large, a
 * Llama-2-7B-like and a Mistral-7B-like (grouped-query attention) config and OPT-350m
 * (word_embed_proj_dim) give their published parameter counts within 1% (in fact
 * exactly or within a few thousand parameters); defaults for absent keys; and every
 * kind of bad file is one ZB_E_INPUT line naming the file and the key.
 *
 * Fixtures live in tests/data (ZB_TEST_DATA overrides the directory); variants are
 * written to a temporary directory.
 */
#include "tests/harness.h"

#include "common/error.h"
#include "inputs/hfconfig.h"
#include "core/model.h"
#include "inputs/presets.h"

static char dir[64];

static int setup(void **state)
{
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

static const char *data(const char *name)
{
	static char buf[512];
	const char *d = getenv("ZB_TEST_DATA");
	snprintf(buf, sizeof buf, "%s/%s", d && *d ? d : "tests/data", name);
	return buf;
}

static const char *tmp(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

static zb_hf_config load_ok(const char *path)
{
	zb_hf_config hf;
	zb_error e = { 0 };
	zb_status st = zb_hf_load(path, &hf, &e);
	if (st != ZB_OK)
		print_error("loading %s: %s\n", path, e.msg);
	assert_int_equal(st, ZB_OK);
	return hf;
}

/* Published size: |zbench - published| / published, printed, within rel. */
static void assert_params(const zb_model *m, int64_t published, double rel)
{
	int64_t got = zb_model_params(m);
	printf("# %s: %lld parameters, published %lld (%+.4f%%)\n", m->name, (long long)got,
	       (long long)published, 100.0 * (double)(got - published) / (double)published);
	assert_close(got, published, rel);
}

static void test_gpt2_large(void **state)
{
	zb_hf_config hf = load_ok(data("hf-gpt2-large.json"));
	const zb_model *m = &hf.model;
	assert_string_equal(m->name, "gpt2-large");
	assert_string_equal(hf.model_type, "gpt2");
	assert_int_equal(m->layers, 36);
	assert_int_equal(m->hidden, 1280);
	assert_int_equal(m->heads, 20);
	assert_int_equal(m->kv_heads, 20);
	assert_int_equal(m->ffn, 5120); /* n_inner null: 4 x n_embd */
	assert_int_equal(m->vocab, 50257);
	assert_int_equal(m->max_seq, 1024);
	assert_int_equal(hf.max_positions, 1024);
	assert_int_equal(m->gated_mlp, 0);
	assert_int_equal(m->bias, 1);
	assert_int_equal(m->tied_embeddings, 1);
	assert_contains(hf.key[ZB_HF_FFN], "n_inner");
	/* gpt2-large: 774,030,080 (HF GPT2LMHeadModel, tied head counted once) */
	assert_params(m, 774030080LL, 0.01);
	assert_int_equal(zb_model_params(m), 774030080LL);
	zb_model preset;
	assert_int_equal(zb_preset_model("gpt2-large", &preset, NULL), ZB_OK);
	assert_int_equal(zb_model_params(m), zb_model_params(&preset));
	assert_string_equal(hf.notes, "");
}

static void test_llama2_7b(void **state)
{
	zb_hf_config hf = load_ok(data("hf-llama2-7b.json"));
	const zb_model *m = &hf.model;
	assert_string_equal(m->name, "Llama-2-7b-hf");
	assert_int_equal(m->layers, 32);
	assert_int_equal(m->hidden, 4096);
	assert_int_equal(m->kv_heads, 32);
	assert_int_equal(m->ffn, 11008);
	assert_int_equal(m->gated_mlp, 1);
	assert_int_equal(m->bias, 0);
	assert_int_equal(m->tied_embeddings, 0);
	assert_int_equal(m->max_seq, 0); /* rotary: no position table */
	assert_int_equal(hf.max_positions, 4096);
	/* Llama-2-7b: 6,738,415,616 */
	assert_params(m, 6738415616LL, 0.01);
	assert_int_equal(zb_model_params(m), 6738415616LL);
	zb_model preset;
	assert_int_equal(zb_preset_model("llama2-7b", &preset, NULL), ZB_OK);
	assert_int_equal(zb_model_params(m), zb_model_params(&preset));
}

static void test_mistral_7b_gqa(void **state)
{
	zb_hf_config hf = load_ok(data("hf-mistral-7b.json"));
	const zb_model *m = &hf.model;
	assert_string_equal(hf.model_type, "mistral");
	assert_int_equal(m->heads, 32);
	assert_int_equal(m->kv_heads, 8);
	assert_int_equal(zb_model_kv_dim(m), 1024);
	assert_int_equal(m->ffn, 14336);
	assert_int_equal(hf.max_positions, 32768);
	assert_string_equal(hf.key[ZB_HF_KV_HEADS], "num_key_value_heads");
	/* Mistral-7B-v0.1: 7,241,732,096 */
	assert_params(m, 7241732096LL, 0.01);
	assert_int_equal(zb_model_params(m), 7241732096LL);
	/* GQA shrinks k and v: 2 x 4096 x (4096 - 1024) per layer fewer than MHA */
	zb_model mha = *m;
	mha.kv_heads = 32;
	assert_int_equal(zb_model_params(&mha) - zb_model_params(m), 32LL * 2 * 4096 * 3072);
}

static void test_opt_350m(void **state)
{
	zb_hf_config hf = load_ok(data("hf-opt-350m.json"));
	const zb_model *m = &hf.model;
	assert_int_equal(m->embed_proj, 512);
	assert_int_equal(m->ffn, 4096);
	assert_int_equal(m->max_seq, 2048);
	assert_int_equal(m->tied_embeddings, 1);
	assert_contains(hf.notes, "do_layer_norm_before");
	/* facebook/opt-350m: 331,196,416 */
	assert_params(m, 331196416LL, 0.01);
}

static void test_defaults_and_inference(void **state)
{
	/* no model_type: the keys tell the family; no num_key_value_heads: multi-head */
	zb_test_write_file(tmp("config.json"),
			   "{\"hidden_size\": 2048, \"intermediate_size\": 5504, \"num_attention_heads\": 16,"
			   " \"num_hidden_layers\": 24, \"vocab_size\": 32000}");
	zb_hf_config hf = load_ok(tmp("config.json"));
	assert_string_equal(hf.model_type, "llama");
	assert_int_equal(hf.model.kv_heads, 16);
	assert_int_equal(hf.max_positions, 0);
	assert_contains(hf.key[ZB_HF_KV_HEADS], "absent");
	/* named after the directory holding config.json */
	assert_string_equal(hf.model.name, dir + 5 /* "/tmp/" */);

	/* GPT-2 with n_inner given, untied, integral reals */
	zb_test_write_file(tmp("g.json"), "{\"n_layer\": 12.0, \"n_embd\": 768, \"n_head\": 12, \"n_inner\": 2048,"
					  " \"vocab_size\": 50257, \"n_positions\": 1024,"
					  " \"tie_word_embeddings\": false}");
	hf = load_ok(tmp("g.json"));
	assert_string_equal(hf.model_type, "gpt2");
	assert_string_equal(hf.model.name, "g");
	assert_int_equal(hf.model.layers, 12);
	assert_int_equal(hf.model.ffn, 2048);
	assert_int_equal(hf.model.tied_embeddings, 0);

	/* Qwen2-0.5B shape: 14 heads, 2 kv heads, tied; published 494,032,768 includes
	 * its q/k/v biases (24 x 1152), which zbench leaves out */
	zb_test_write_file(tmp("q.json"),
			   "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"intermediate_size\": 4864,"
			   " \"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"num_hidden_layers\": 24,"
			   " \"vocab_size\": 151936, \"max_position_embeddings\": 32768,"
			   " \"tie_word_embeddings\": true, \"_name_or_path\": \"Qwen/Qwen2-0.5B\"}");
	hf = load_ok(tmp("q.json"));
	assert_string_equal(hf.model.name, "Qwen2-0.5B");
	assert_int_equal(hf.model.tied_embeddings, 1);
	assert_contains(hf.notes, "q/k/v biases");
	assert_params(&hf.model, 494032768LL, 0.01);
	assert_int_equal(zb_model_params(&hf.model) + 24 * (896 + 2 * 128), 494032768LL);
}

/* Load text (or path when text is NULL) and expect one ZB_E_INPUT line holding the
 * needles. */
static void expect_error(const char *text, const char *path, const char *n1, const char *n2)
{
	if (text) {
		path = tmp("bad.json");
		zb_test_write_file(path, text);
	}
	zb_hf_config hf;
	zb_error e = { 0 };
	zb_status st = zb_hf_load(path, &hf, &e);
	if (st != ZB_E_INPUT)
		print_error("loading %s: status %d, message '%s'\n", text ? text : path, st, e.msg);
	assert_int_equal(st, ZB_E_INPUT);
	assert_null(strchr(e.msg, '\n'));
	const char *base = strrchr(path, '/');
	assert_contains(e.msg, base ? base + 1 : path);
	if (n1)
		assert_contains(e.msg, n1);
	if (n2)
		assert_contains(e.msg, n2);
}

static void test_errors(void **state)
{
	expect_error("{\"model_type\": \"llama\", \"hidden_size\": 4096,", NULL, "malformed JSON", "line");
	expect_error("[1, 2]", NULL, "top level", NULL);
	expect_error(NULL, "/nonexistent/config.json", "cannot open", NULL);
	expect_error("{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32,"
		     " \"num_hidden_layers\": 32, \"vocab_size\": 32000}",
		     NULL, "missing required key", "intermediate_size");
	expect_error("{\"model_type\": \"gpt2\", \"n_layer\": \"36\", \"n_embd\": 1280, \"n_head\": 20,"
		     " \"vocab_size\": 50257, \"n_positions\": 1024}",
		     NULL, "'n_layer'", "\"36\"");
	expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 36, \"n_embd\": 1280, \"n_head\": 20,"
		     " \"vocab_size\": 50257, \"n_positions\": 1024, \"n_inner\": -5}",
		     NULL, "'n_inner'", "-5");
	expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 36, \"n_embd\": 1280, \"n_head\": 20,"
		     " \"vocab_size\": 50257, \"n_positions\": 1024, \"tie_word_embeddings\": \"yes\"}",
		     NULL, "'tie_word_embeddings'", "true or false");
	expect_error("{\"model_type\": \"mamba\", \"hidden_size\": 768}", NULL, "unsupported model_type 'mamba'",
		     "known: gpt2");
	expect_error("{\"vocab_size\": 100}", NULL, "cannot tell the model family", NULL);
	expect_error(NULL, data("hf-moe.json"), "'num_local_experts'", "mixture-of-experts");
	/* head_dim other than hidden / heads (Qwen3-0.6B: 1024 / 16 = 64, head_dim 128) */
	expect_error("{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"intermediate_size\": 3072,"
		     " \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128,"
		     " \"num_hidden_layers\": 28, \"vocab_size\": 151936}",
		     NULL, "'head_dim' 128", "64");
	/* contradictory shapes, caught by the model's own validation */
	expect_error("{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 11008,"
		     " \"num_attention_heads\": 30, \"num_hidden_layers\": 32, \"vocab_size\": 32000}",
		     NULL, "heads 30", "hidden 4096");
	expect_error("{\"model_type\": \"mistral\", \"hidden_size\": 4096, \"intermediate_size\": 14336,"
		     " \"num_attention_heads\": 32, \"num_key_value_heads\": 5, \"num_hidden_layers\": 32,"
		     " \"vocab_size\": 32000}",
		     NULL, "kv_heads 5", "heads 32");
	expect_error("{\"model_type\": \"gpt2\", \"model_type\": \"opt\"}", NULL, "malformed JSON", "duplicate");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpt2_large),
		cmocka_unit_test(test_llama2_7b),
		cmocka_unit_test(test_mistral_7b_gqa),
		cmocka_unit_test(test_opt_350m),
		cmocka_unit_test(test_defaults_and_inference),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
