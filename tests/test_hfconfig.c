/*
 * test_hfconfig.c - Hugging Face config.json files as model shapes: every file in
 * tests/data gives exactly the parameter count transformers' num_parameters() gives
 * (tests/data/hf-params.tsv, made by peers/hf_params.py), for each family (gpt2,
 * opt, llama, mistral, qwen2, qwen3, gpt_neox, phi3, gemma2, mixtral, qwen2_moe),
 * tied and untied, one real size each; the fields each family sets, the routed
 * widths and FLOPs of the mixture-of-experts families; transformers' defaults for
 * absent keys; and every kind of bad file is one ZB_E_INPUT line naming the file
 * and the key.
 *
 * Fixtures live in tests/data (ZB_TEST_DATA overrides the directory); variants are
 * written to a temporary directory.
 */
#include "tests/harness.h"

#include <dirent.h>

#include "common/error.h"
#include "inputs/dsconfig.h"
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
	assert_int_equal(m->max_seq, 2050); /* OPT's position table keeps 2 rows ahead */
	assert_int_equal(hf.max_positions, 2048);
	assert_int_equal(m->tied_embeddings, 1);
	assert_int_equal(m->norms, ZB_NORM_NO_FINAL); /* do_layer_norm_before false */
	assert_string_equal(hf.notes, "");
	/* facebook/opt-350m: 331,196,416 */
	assert_params(m, 331196416LL, 0.01);
	assert_int_equal(zb_model_params(m), 331196416LL);
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

	/* Qwen2-0.5B shape: 14 heads, 2 kv heads, tied; published 494,032,768 with its
	 * q/k/v biases (24 x 1152) */
	zb_test_write_file(tmp("q.json"),
			   "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"intermediate_size\": 4864,"
			   " \"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"num_hidden_layers\": 24,"
			   " \"vocab_size\": 151936, \"max_position_embeddings\": 32768,"
			   " \"tie_word_embeddings\": true, \"_name_or_path\": \"Qwen/Qwen2-0.5B\"}");
	hf = load_ok(tmp("q.json"));
	assert_string_equal(hf.model.name, "Qwen2-0.5B");
	assert_int_equal(hf.model.tied_embeddings, 1);
	assert_int_equal(hf.model.linear_bias, ZB_BIAS_QKV);
	assert_string_equal(hf.notes, "");
	assert_params(&hf.model, 494032768LL, 0.01);
	assert_int_equal(zb_model_params(&hf.model), 494032768LL);
	zb_model nobias = hf.model;
	nobias.linear_bias = 0;
	assert_int_equal(zb_model_params(&hf.model) - zb_model_params(&nobias), 24 * (896 + 2 * 128));
}

/* ---- transformers' own counts ------------------------------------------------ */

typedef struct tensors {
	int64_t sum, largest;
	int n;
} tensors;

static void add_tensor(int64_t size, void *ctx)
{
	tensors *t = ctx;
	t->sum += size;
	t->largest = size > t->largest ? size : t->largest;
	t->n++;
}

/* Every row of tests/data/hf-params.tsv (peers/hf_params.py: transformers'
 * num_parameters() of the file built on the meta device) against zbench's count of
 * the same file: the total, one decoder layer and what lies outside the layers, all
 * exactly. Every hf-*.json in tests/data is in the table, except hf-moe.json (an
 * error case). */
static void test_transformers_counts(void **state)
{
	FILE *f = fopen(data("hf-params.tsv"), "r");
	assert_non_null(f);
	char line[4096], seen[64][96];
	int rows = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || strncmp(line, "file\t", 5) == 0)
			continue;
		char file[96], type[32];
		long long total, layer0, outside;
		int layers;
		assert_int_equal(sscanf(line, "%95s %31s %lld %d %lld %lld", file, type, &total, &layers, &layer0,
					&outside),
				 6);
		zb_hf_config hf = load_ok(data(file));
		const zb_model *m = &hf.model;
		int64_t got = zb_model_params(m), block = zb_model_unit_params(m, 1);
		printf("# %-28s %-10s zbench %13lld transformers %13lld (%+lld)\n", file, type, (long long)got, total,
		       (long long)got - total);
		assert_string_equal(hf.model_type, type);
		assert_int_equal(m->layers, layers);
		assert_int_equal(block, layer0);
		assert_int_equal(got - (int64_t)m->layers * block, outside);
		assert_int_equal(got, total);
		/* DeepSpeed's view of the same model, tensor by tensor (dsconfig.h) */
		tensors t = { 0, 0, 0 };
		zb_ds_tensors(m, add_tensor, &t);
		assert_int_equal(t.sum, total);
		if (m->experts > 0) /* the experts' gate_up_proj, one 3-D tensor, is the largest */
			assert_int_equal(t.largest, (int64_t)m->experts * 2 * m->ffn * m->hidden);
		assert_true(rows < 64);
		snprintf(seen[rows++], sizeof seen[0], "%s", file);
	}
	fclose(f);
	assert_true(rows >= 24);
	const char *d = getenv("ZB_TEST_DATA");
	DIR *dir = opendir(d && *d ? d : "tests/data");
	assert_non_null(dir);
	struct dirent *e;
	while ((e = readdir(dir))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "hf-", 3) || n < 5 || strcmp(e->d_name + n - 5, ".json") ||
		    !strcmp(e->d_name, "hf-moe.json"))
			continue;
		int found = 0;
		for (int i = 0; i < rows; i++)
			found |= !strcmp(seen[i], e->d_name);
		if (!found)
			print_error("%s is not in hf-params.tsv: run peers/hf_params.py (its header)\n", e->d_name);
		assert_true(found);
	}
	closedir(dir);
}

/* ---- the new families, field by field ------------------------------------------ */

static void test_gpt_neox(void **state)
{
	zb_hf_config hf = load_ok(data("hf-pythia-1.4b.json"));
	const zb_model *m = &hf.model;
	assert_string_equal(m->name, "pythia-1.4b");
	assert_int_equal(m->bias, 1);      /* LayerNorm, fused q/k/v and MLP with biases */
	assert_int_equal(m->gated_mlp, 0);
	assert_int_equal(m->max_seq, 0);   /* rotary (on rotary_pct of each head) */
	assert_int_equal(m->tied_embeddings, 0); /* embed_out */
	assert_int_equal(m->ffn, 8192);
	assert_int_equal(m->kv_heads, 16);
	assert_int_equal(hf.max_positions, 2048);
	assert_int_equal(m->loss, ZB_LOSS_HF);
	/* a block: 4h^2 + 4h (attention) + 2hf + f + h (MLP) + 4h (two LayerNorms) */
	int64_t h = 2048, f = 8192;
	assert_int_equal(zb_model_unit_params(m, 1), 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h);
}

static void test_phi3(void **state)
{
	/* fused qkv_proj and gate_up_proj: Llama's parameters and FLOPs */
	zb_hf_config hf = load_ok(data("hf-phi3-mini.json"));
	const zb_model *m = &hf.model;
	assert_int_equal(m->gated_mlp, 1);
	assert_int_equal(m->bias, 0);
	assert_int_equal(m->linear_bias, 0);
	assert_int_equal(m->head_dim, 0);
	assert_int_equal(m->tied_embeddings, 0);
	/* Phi-3-mini: 3,821,079,552 */
	assert_int_equal(zb_model_params(m), 3821079552LL);
	hf = load_ok(data("hf-phi3-gqa-tied.json"));
	assert_int_equal(hf.model.kv_heads, 4);
	assert_int_equal(hf.model.tied_embeddings, 1);
}

static void test_gemma2(void **state)
{
	zb_hf_config hf = load_ok(data("hf-gemma2-9b.json"));
	const zb_model *m = &hf.model;
	assert_int_equal(m->head_dim, 256); /* 16 x 256 = 4096 wide queries on hidden 3584 */
	assert_int_equal(zb_model_q_dim(m), 4096);
	assert_int_equal(zb_model_kv_dim(m), 2048);
	assert_int_equal(m->norms, ZB_NORM_SANDWICH);
	assert_int_equal(m->tied_embeddings, 1);
	assert_int_equal(m->loss, ZB_LOSS_HF_SOFTCAP);
	assert_contains(hf.notes, "sliding-window");
	/* Gemma-2-9B: 9,241,705,984; the two extra norms per layer: 42 x 2 x 3584 */
	assert_int_equal(zb_model_params(m), 9241705984LL);
	zb_model two = *m;
	two.norms = 0;
	assert_int_equal(zb_model_params(m) - zb_model_params(&two), 42LL * 2 * 3584);
	/* attention FLOPs follow the query width, not hidden */
	double a = zb_model_flops_per_token(m, 1024) - 6.0 * (double)zb_model_matmul_params(m);
	assert_true(a == 12.0 * 42 * 4096 * 1024);
	hf = load_ok(data("hf-gemma2-untied.json"));
	assert_int_equal(hf.model.tied_embeddings, 0);
	assert_int_equal(hf.model.loss, ZB_LOSS_HF); /* final_logit_softcapping null */
	assert_int_equal(hf.model.head_dim, 64);     /* not 512 / 4 */
}

static void test_mixtral(void **state)
{
	zb_hf_config hf = load_ok(data("hf-mixtral-8x7b.json"));
	const zb_model *m = &hf.model;
	assert_int_equal(m->experts, 8);
	assert_int_equal(m->experts_active, 2);
	assert_int_equal(m->ffn, 14336);
	assert_int_equal(m->shared_ffn, 0);
	/* Mixtral-8x7B: 46,702,792,704 parameters, every expert counted */
	assert_int_equal(zb_model_params(m), 46702792704LL);
	/* a token computes through 2 experts and the router */
	int64_t h = 4096, f = 14336, kv = 1024, L = 32, V = 32000;
	assert_int_equal(zb_model_mlp_width(m), 2 * f);
	assert_int_equal(zb_model_fc1_out(m), 2 * 2 * f + 8);
	int64_t active = L * (2 * h * h + 2 * h * kv + 2 * 3 * h * f + h * 8) + V * h;
	assert_int_equal(zb_model_matmul_params(m), active);
	printf("# Mixtral-8x7B: %.2f B parameters, %.2f B multiplied per token\n", zb_model_params(m) / 1e9,
	       active / 1e9);
	hf = load_ok(data("hf-mixtral-tied.json"));
	assert_int_equal(hf.model.experts_active, 1);
	assert_int_equal(hf.model.tied_embeddings, 1);
}

static void test_qwen2_moe(void **state)
{
	zb_hf_config hf = load_ok(data("hf-qwen1.5-moe-a2.7b.json"));
	const zb_model *m = &hf.model;
	assert_int_equal(m->experts, 60);
	assert_int_equal(m->experts_active, 4);
	assert_int_equal(m->ffn, 1408);        /* moe_intermediate_size: one expert */
	assert_int_equal(m->shared_ffn, 5632); /* shared_expert_intermediate_size */
	assert_int_equal(m->linear_bias, ZB_BIAS_QKV);
	assert_int_equal(m->tied_embeddings, 0);
	/* Qwen1.5-MoE-A2.7B: 14.3 B in all */
	assert_int_equal(zb_model_params(m), 14315784192LL);
	/* routed: 4 experts and the shared one; the router's 60 logits and the shared gate */
	int64_t h = 2048, L = 24, V = 151936;
	assert_int_equal(zb_model_mlp_width(m), 4 * 1408 + 5632);
	assert_int_equal(zb_model_fc1_out(m), 2 * (4 * 1408 + 5632) + 60 + 1);
	int64_t active = L * (4 * h * h + 3 * h * (4 * 1408 + 5632) + h * 61) + V * h;
	assert_int_equal(zb_model_matmul_params(m), active);
	/* "A2.7B": the activated parameters, embeddings included */
	printf("# Qwen1.5-MoE-A2.7B: %.2f B activated with the embedding\n", (active + V * h) / 1e9);
	assert_close(active + V * h, 2.7e9, 0.03);
	hf = load_ok(data("hf-qwen2-moe-tied.json"));
	assert_int_equal(hf.model.linear_bias, 0); /* qkv_bias false */
	assert_int_equal(hf.model.tied_embeddings, 1);
}

static void test_qwen3_and_defaults(void **state)
{
	zb_hf_config hf = load_ok(data("hf-qwen3-0.6b.json"));
	assert_int_equal(hf.model.head_dim, 128);
	assert_int_equal(hf.model.norms, ZB_NORM_QK);
	assert_int_equal(zb_model_params(&hf.model), 596049920LL);
	/* absent keys take transformers' class defaults, family by family */
	zb_test_write_file(tmp("d.json"), "{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"intermediate_size\": 3072,"
					  " \"num_attention_heads\": 32, \"num_hidden_layers\": 2, \"vocab_size\": 1000}");
	hf = load_ok(tmp("d.json"));
	assert_int_equal(hf.model.head_dim, 128); /* Qwen3Config.head_dim = 128 */
	assert_int_equal(hf.model.kv_heads, 32);  /* num_key_value_heads = 32 */
	assert_contains(hf.key[ZB_HF_KV_HEADS], "transformers' default");
	zb_test_write_file(tmp("d.json"), "{\"model_type\": \"mistral\", \"hidden_size\": 1024, \"intermediate_size\": 3072,"
					  " \"num_attention_heads\": 16, \"num_hidden_layers\": 2, \"vocab_size\": 1000}");
	hf = load_ok(tmp("d.json"));
	assert_int_equal(hf.model.kv_heads, 8); /* MistralConfig.num_key_value_heads = 8 */
	zb_test_write_file(tmp("d.json"), "{\"model_type\": \"mistral\", \"hidden_size\": 1024, \"intermediate_size\": 3072,"
					  " \"num_attention_heads\": 16, \"num_key_value_heads\": null,"
					  " \"num_hidden_layers\": 2, \"vocab_size\": 1000}");
	hf = load_ok(tmp("d.json"));
	assert_int_equal(hf.model.kv_heads, 16); /* None: = num_attention_heads */
	zb_test_write_file(tmp("d.json"), "{\"model_type\": \"gemma2\", \"hidden_size\": 2304, \"intermediate_size\": 9216,"
					  " \"num_attention_heads\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 1000}");
	hf = load_ok(tmp("d.json"));
	assert_int_equal(hf.model.head_dim, 256);
	assert_int_equal(hf.model.kv_heads, 4);
	assert_int_equal(hf.model.tied_embeddings, 1);
	assert_int_equal(hf.model.loss, ZB_LOSS_HF_SOFTCAP); /* final_logit_softcapping absent: 30 */
	/* the dense families keep their numbers whatever the new fields say by default */
	hf = load_ok(data("hf-llama2-7b.json"));
	assert_int_equal(hf.model.head_dim, 0);
	assert_int_equal(hf.model.norms, 0);
	assert_int_equal(hf.model.experts, 0);
	assert_int_equal(hf.model.loss, ZB_LOSS_HF);
	hf = load_ok(data("hf-llama-bias.json")); /* attention_bias and mlp_bias */
	assert_int_equal(hf.model.linear_bias, ZB_BIAS_QKV | ZB_BIAS_OUT | ZB_BIAS_MLP);
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
	/* MoE families: layers of two kinds, more experts per token than experts */
	expect_error("{\"model_type\": \"qwen2_moe\", \"hidden_size\": 512, \"intermediate_size\": 1024,"
		     " \"moe_intermediate_size\": 256, \"shared_expert_intermediate_size\": 512,"
		     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"num_attention_heads\": 8,"
		     " \"num_hidden_layers\": 4, \"vocab_size\": 1000, \"decoder_sparse_step\": 2}",
		     NULL, "'decoder_sparse_step'", "dense and mixture-of-experts layers");
	expect_error("{\"model_type\": \"qwen2_moe\", \"hidden_size\": 512, \"intermediate_size\": 1024,"
		     " \"moe_intermediate_size\": 256, \"shared_expert_intermediate_size\": 512,"
		     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"num_attention_heads\": 8,"
		     " \"num_hidden_layers\": 4, \"vocab_size\": 1000, \"mlp_only_layers\": [0]}",
		     NULL, "'mlp_only_layers'", "dense and mixture-of-experts layers");
	expect_error("{\"model_type\": \"mixtral\", \"hidden_size\": 512, \"intermediate_size\": 1024,"
		     " \"num_local_experts\": 4, \"num_experts_per_tok\": 5, \"num_attention_heads\": 8,"
		     " \"num_hidden_layers\": 4, \"vocab_size\": 1000}",
		     NULL, "'num_experts_per_tok' 5", "num_local_experts 4");
	expect_error("{\"model_type\": \"mixtral\", \"hidden_size\": 512, \"intermediate_size\": 1024,"
		     " \"num_experts_per_tok\": 2, \"num_attention_heads\": 8,"
		     " \"num_hidden_layers\": 4, \"vocab_size\": 1000}",
		     NULL, "missing required key", "num_local_experts");
	/* parameter layouts zbench does not represent: refused, not approximated */
	expect_error("{\"model_type\": \"gpt_neox\", \"hidden_size\": 512, \"intermediate_size\": 2048,"
		     " \"num_attention_heads\": 8, \"num_hidden_layers\": 4, \"vocab_size\": 1000,"
		     " \"attention_bias\": false}",
		     NULL, "'attention_bias' false", "not modelled");
	expect_error("{\"model_type\": \"opt\", \"hidden_size\": 768, \"ffn_dim\": 3072, \"num_attention_heads\": 12,"
		     " \"num_hidden_layers\": 12, \"vocab_size\": 50272, \"max_position_embeddings\": 2048,"
		     " \"enable_bias\": false}",
		     NULL, "'enable_bias' false", "not modelled");
	expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 2,"
		     " \"vocab_size\": 100, \"n_positions\": 64, \"add_cross_attention\": true}",
		     NULL, "'add_cross_attention'", "cross-attention");
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
		cmocka_unit_test(test_transformers_counts),
		cmocka_unit_test(test_gpt_neox),
		cmocka_unit_test(test_phi3),
		cmocka_unit_test(test_gemma2),
		cmocka_unit_test(test_mixtral),
		cmocka_unit_test(test_qwen2_moe),
		cmocka_unit_test(test_qwen3_and_defaults),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
