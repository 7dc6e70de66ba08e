/*
 * test_presets.c - the built-in presets load and validate, parameter counts match
 * the published sizes, unknown names say what is known, and config.c's defaults,
 * validation and names behave.
 */
#include "tests/harness.h"

#include "common/error.h"
#include "core/config.h"
#include "core/model.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

static const char *const families[] = {"pcie", "gpu", "cpu", "model", "hw"};

static void default_config(zb_config *c)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_preset_default_model(&c->model);
	zb_policy_defaults(&c->policy);
	c->steps = 3;
}

/* The message of a failed call must name the bad value. */
static void assert_input_error(zb_status st, const zb_error *e, const char *needle)
{
	assert_int_equal(st, ZB_E_INPUT);
	assert_int_equal(e->status, ZB_E_INPUT);
	if (!strstr(e->msg, needle)) {
		print_error("message '%s' does not contain '%s'\n", e->msg, needle);
		fail();
	}
}

/* ---- presets --------------------------------------------------------------- */

static void test_every_preset_loads_and_validates(void **state)
{
	zb_error e;
	zb_hw base;
	zb_preset_default_hw(&base);
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		int n = zb_preset_count(families[f]);
		assert_true(n > 0);
		for (int i = 0; i < n; i++) {
			const char *name = zb_preset_name(families[f], i);
			assert_non_null(name);
			zb_hw hw = base;
			zb_model m;
			zb_status st = ZB_E_INTERNAL;
			if (strcmp(families[f], "pcie") == 0)
				st = zb_preset_link(name, &hw.link, &e);
			else if (strcmp(families[f], "gpu") == 0)
				st = zb_preset_gpu(name, &hw.gpu, &e);
			else if (strcmp(families[f], "cpu") == 0)
				st = zb_preset_cpu(name, &hw.cpu, &e);
			else if (strcmp(families[f], "hw") == 0)
				st = zb_preset_hw(name, &hw, &e);
			if (strcmp(families[f], "model") == 0) {
				st = zb_preset_model(name, &m, &e);
				assert_int_equal(st, ZB_OK);
				assert_string_equal(m.name, name);
				st = zb_model_validate(&m, &e);
			} else {
				assert_int_equal(st, ZB_OK);
				st = zb_hw_validate(&hw, &e);
			}
			if (st != ZB_OK)
				print_error("%s preset %s: %s\n", families[f], name, e.msg);
			assert_int_equal(st, ZB_OK);
		}
	}
}

static void test_required_names_exist(void **state)
{
	static const char *const want[][12] = {
		{"gen3", "gen4", "gen5", "gen6", "nvlink-c2c"},
		{"v100", "a100-40g", "a100-80g", "h100", "h200", "b200", "gh200"},
		{"h200-machine", "dgx-2", "dgx-a100", "dgx-h100", "gh200"},
		{"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt-2.5b", "opt-1.3b", "opt-13b",
		 "opt-30b", "llama2-7b", "llama2-13b", "llama2-70b"},
		{"h200-machine", "dgx-2", "dgx-a100", "dgx-h100", "gh200"},
	};
	for (size_t f = 0; f < 5; f++) {
		for (int k = 0; k < 12 && want[f][k]; k++) {
			int found = 0;
			for (int i = 0; i < zb_preset_count(families[f]); i++)
				found |= strcmp(zb_preset_name(families[f], i), want[f][k]) == 0;
			if (!found)
				print_error("%s preset %s missing\n", families[f], want[f][k]);
			assert_true(found);
		}
	}
	assert_int_equal(zb_preset_count("link"), zb_preset_count("pcie"));
	assert_int_equal(zb_preset_count("nope"), 0);
	assert_int_equal(zb_preset_count(NULL), 0);
	assert_null(zb_preset_name("gpu", -1));
	assert_null(zb_preset_name("gpu", zb_preset_count("gpu")));
	assert_null(zb_preset_name("nope", 0));
}

/* Published sizes: GPT-2 (HF model cards), OPT paper Table 1 / HF, Llama 2 HF. */
static void test_param_counts_match_published(void **state)
{
	static const struct {
		const char *name;
		double params;
	} published[] = {
		{"gpt2", 124e6},          {"gpt2-medium", 355e6},   {"gpt2-large", 774e6},
		{"gpt2-xl", 1.558e9},     {"opt-1.3b", 1.316e9},    {"opt-13b", 12.85e9},
		{"opt-30b", 29.97e9},     {"llama2-7b", 6.738e9},   {"llama2-13b", 13.016e9},
		{"llama2-70b", 68.98e9},
	};
	for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
		zb_model m;
		assert_int_equal(zb_preset_model(published[i].name, &m, NULL), ZB_OK);
		print_message("# %-12s %14lld params, published %.4g\n", m.name,
			      (long long)zb_model_params(&m), published[i].params);
		assert_close(zb_model_params(&m), published[i].params, 0.01);
	}
}

/* Exact counts where the published figure is exact (Hugging Face num_parameters()). */
static void test_param_counts_exact(void **state)
{
	static const struct {
		const char *name;
		long long params;
	} exact[] = {
		{"gpt2", 124439808LL},          {"gpt2-medium", 354823168LL},
		{"gpt2-large", 774030080LL},    {"gpt2-xl", 1557611200LL},
		{"llama2-7b", 6738415616LL},    {"llama2-13b", 13015864320LL},
		{"llama2-70b", 68976648192LL},
	};
	for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
		zb_model m;
		assert_int_equal(zb_preset_model(exact[i].name, &m, NULL), ZB_OK);
		assert_int_equal(zb_model_params(&m), exact[i].params);
	}
	/* gpt-2.5b has no published count: by hand, GPT-2 blocks are 12h^2 + 13h. */
	zb_model m;
	assert_int_equal(zb_preset_model("gpt-2.5b", &m, NULL), ZB_OK);
	long long h = 2560;
	long long want = 50257 * h + 2048 * h + 32 * (12 * h * h + 13 * h) + 2 * h;
	assert_int_equal(zb_model_params(&m), want);
}

static void test_unknown_names(void **state)
{
	zb_error e;
	zb_link l;
	zb_gpu g;
	zb_cpu c;
	zb_model m;
	zb_hw hw;
	zb_status st = zb_preset_link("gen7", &l, &e);
	assert_input_error(st, &e, "gen7");
	assert_string_equal(e.msg,
			    "unknown pcie generation 'gen7' (known: gen3, gen4, gen5, gen6, nvlink-c2c)");
	assert_input_error(zb_preset_gpu("h300", &g, &e), &e, "'h300'");
	assert_input_error(zb_preset_gpu("h300", &g, &e), &e, "h200");
	assert_input_error(zb_preset_cpu("epyc", &c, &e), &e, "'epyc'");
	assert_input_error(zb_preset_model("gpt5", &m, &e), &e, "'gpt5'");
	assert_input_error(zb_preset_model("gpt5", &m, &e), &e, "llama2-70b");
	assert_input_error(zb_preset_hw("dgx-b200", &hw, &e), &e, "'dgx-b200'");
	/* Case-sensitive, and NULL is not a crash. */
	assert_input_error(zb_preset_link("GEN5", &l, &e), &e, "GEN5");
	assert_int_equal(zb_preset_link(NULL, &l, &e), ZB_E_INPUT);
	/* A NULL error pointer is allowed. */
	assert_int_equal(zb_preset_link("gen7", &l, NULL), ZB_E_INPUT);
}

static void test_defaults_and_measured_figures(void **state)
{
	zb_hw hw;
	zb_model m;
	zb_preset_default_hw(&hw);
	zb_preset_default_model(&m);
	assert_string_equal(hw.name, "h200-machine");
	assert_string_equal(hw.link.name, "gen5");
	assert_string_equal(hw.gpu.name, "h200");
	assert_string_equal(hw.cpu.name, "h200-machine");
	assert_string_equal(m.name, "gpt2-large");

	/* gen5 against the data file: 55.3 GB/s, ~48 GB/s each way at once, ~1 GB/s at 4 KB. */
	assert_close(hw.link.h2d_Bps, 55.3e9, 0.01);
	assert_close(hw.link.d2h_Bps, 55.3e9, 0.01);
	assert_close(hw.link.h2d_Bps * hw.link.duplex_h2d, 48e9, 0.03);
	double t4k = hw.link.copy_latency_s + 4096 / hw.link.h2d_Bps;
	assert_close(4096 / t4k, 1.0e9, 0.1);
	/* 16 MB: measured 54.55 GB/s. */
	double t16m = hw.link.copy_latency_s + 16777216 / hw.link.h2d_Bps;
	assert_close(16777216 / t16m, 54.55e9, 0.02);
	/* CPU Adam alone on 16 cores: 4.35-4.47 Gparam/s measured. */
	/* 16 cores of Adam alone: capped by its own memory ceiling at 4.4 Gparam/s */
	double alone = hw.cpu.cores * hw.cpu.adam_params_per_core;
	if (alone * 28 > hw.cpu.adam_Bps)
		alone = hw.cpu.adam_Bps / 28;
	assert_close(alone, 4.4e9, 0.02);
	assert_close(hw.gpu.hbm_Bps, 4.3e12, 0.01);
	/* bf16 GEMM: the gpt2-large MLP shape 8192x1280x5120 measured 777-789 TFLOP/s. */
	double eff = 1;
	const double dims[3] = {8192, 1280, 5120};
	for (int i = 0; i < 3; i++)
		eff *= dims[i] / (dims[i] + hw.gpu.gemm_half_dim);
	assert_close(hw.gpu.bf16_flops * eff, 783e12, 0.03);

	zb_gpu g;
	assert_int_equal(zb_preset_gpu("gh200", &g, NULL), ZB_OK);
	assert_string_equal(g.builtin_link, "nvlink-c2c");
	assert_int_equal(zb_preset_gpu("h200", &g, NULL), ZB_OK);
	assert_string_equal(g.builtin_link, "");
	assert_int_equal(zb_preset_hw("gh200", &hw, NULL), ZB_OK);
	assert_string_equal(hw.link.name, "nvlink-c2c");
	assert_int_equal(zb_preset_hw("dgx-2", &hw, NULL), ZB_OK);
	assert_int_equal(hw.gpus_per_cpu, 16);
	assert_int_equal(hw.gpus_per_link, 2); /* pairs behind one PCIe switch uplink; divides only with --gpus */
	assert_string_equal(hw.link.name, "gen3");
	assert_int_equal(zb_preset_hw("dgx-a100", &hw, NULL), ZB_OK);
	assert_true(hw.link.duplex_h2d < 0.5 && hw.link.duplex_d2h > 0.9);
}

static void test_presets_print(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	zb_presets_print(f);
	fclose(f);
	const char *want[] = {"# links", "# gpus", "# cpus", "# models", "# machines", "GB/s",
			      "nvlink-c2c", "h200-machine", "llama2-70b", "774.0"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		if (!strstr(buf, want[i]))
			print_error("listing lacks '%s'\n", want[i]);
		assert_non_null(strstr(buf, want[i]));
	}
	free(buf);
}

/* ---- config.c -------------------------------------------------------------- */

static void test_policy_defaults(void **state)
{
	zb_policy p;
	memset(&p, 0xff, sizeof p);
	zb_policy_defaults(&p);
	assert_int_equal(p.kind, ZB_POLICY_OVERLAP);
	assert_true(p.ratio == 1.0);
	assert_int_equal(p.offload_param, 0);
	assert_int_equal(p.prefetch_layers, 2);
	assert_int_equal(p.ckpt, ZB_CKPT_NONE);
	assert_int_equal(p.gas, 1);
	assert_int_equal(p.micro_batch, 8);
	assert_int_equal(p.seq, 1024);
	assert_int_equal(p.dtype, ZB_BF16);
	assert_int_equal(p.pageable, 0);
	assert_int_equal(p.bucket_params, 25000000);
	assert_int_equal(p.cpu_threads, 0);

	zb_config c;
	zb_error e;
	default_config(&c);
	assert_int_equal(zb_config_validate(&c, &e), ZB_OK);
}

static void test_validation_rejects(void **state)
{
	zb_config c;
	zb_error e;

	default_config(&c);
	c.policy.ratio = 1.5;
	assert_input_error(zb_config_validate(&c, &e), &e, "ratio 1.5");
	assert_string_equal(e.msg, "ratio 1.5 out of range (must be in [0, 1])");
	c.policy.ratio = -0.1;
	assert_input_error(zb_config_validate(&c, &e), &e, "ratio -0.1");
	c.policy.ratio = NAN;
	assert_input_error(zb_config_validate(&c, &e), &e, "ratio");
	c.policy.ratio = 0; /* the edges are allowed */
	assert_int_equal(zb_config_validate(&c, &e), ZB_OK);

	default_config(&c);
	c.policy.micro_batch = 0;
	assert_input_error(zb_config_validate(&c, &e), &e, "micro-batch 0");
	assert_string_equal(e.msg, "micro-batch 0 must be positive");

	default_config(&c);
	c.policy.seq = -1;
	assert_input_error(zb_policy_validate(&c.policy, &c.model, &e), &e, "seq -1");

	default_config(&c);
	c.policy.seq = 2048; /* gpt2-large has 1024 learned positions */
	assert_input_error(zb_config_validate(&c, &e), &e, "max_seq 1024");
	assert_int_equal(zb_preset_model("llama2-7b", &c.model, NULL), ZB_OK);
	c.policy.seq = 4096; /* rotary: no table to outgrow */
	assert_int_equal(zb_config_validate(&c, &e), ZB_OK);

	default_config(&c);
	c.policy.gas = 0;
	assert_input_error(zb_config_validate(&c, &e), &e, "gas 0");
	default_config(&c);
	c.policy.prefetch_layers = 0;
	assert_input_error(zb_config_validate(&c, &e), &e, "prefetch-layers 0");
	default_config(&c);
	c.policy.bucket_params = 0;
	assert_input_error(zb_config_validate(&c, &e), &e, "bucket 0");
	default_config(&c);
	c.policy.kind = (zb_policy_kind)17;
	assert_input_error(zb_config_validate(&c, &e), &e, "17");
	default_config(&c);
	c.policy.cpu_threads = 17;
	assert_input_error(zb_config_validate(&c, &e), &e, "cpu-threads 17");
	c.policy.cpu_threads = -1;
	assert_input_error(zb_config_validate(&c, &e), &e, "cpu-threads -1");
	default_config(&c);
	c.steps = 0;
	assert_input_error(zb_config_validate(&c, &e), &e, "steps 0");
}

static void test_model_validation(void **state)
{
	zb_model m;
	zb_error e;
	zb_preset_default_model(&m);
	m.heads = 7;
	assert_input_error(zb_model_validate(&m, &e), &e, "heads 7");
	assert_non_null(strstr(e.msg, "hidden 1280"));
	zb_preset_default_model(&m);
	m.kv_heads = 3;
	assert_input_error(zb_model_validate(&m, &e), &e, "kv_heads 3");
	zb_preset_default_model(&m);
	m.layers = 0;
	assert_input_error(zb_model_validate(&m, &e), &e, "layers 0");
	zb_preset_default_model(&m);
	m.max_seq = -5;
	assert_input_error(zb_model_validate(&m, &e), &e, "max_seq -5");
	zb_preset_default_model(&m);
	m.bias = 2;
	assert_input_error(zb_model_validate(&m, &e), &e, "bias 2");
}

static void test_hw_validation(void **state)
{
	zb_hw hw;
	zb_error e;
	zb_preset_default_hw(&hw);
	hw.link.duplex_h2d = 1.2;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "link.duplex_h2d 1.2");
	hw.link.duplex_h2d = 0;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "link.duplex_h2d 0");
	zb_preset_default_hw(&hw);
	hw.link.h2d_Bps = -1;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "link.h2d_Bps -1");
	zb_preset_default_hw(&hw);
	hw.gpu.hbm_Bps = NAN;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "gpu.hbm_Bps");
	zb_preset_default_hw(&hw);
	hw.cpu.cores = 0;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "cpu.cores 0");
	zb_preset_default_hw(&hw);
	hw.link.copy_latency_s = -1e-6;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "link.copy_latency_s");
	zb_preset_default_hw(&hw);
	hw.gpus_per_link = 0;
	assert_input_error(zb_hw_validate(&hw, &e), &e, "gpus_per_link 0");
	zb_preset_default_hw(&hw);
	hw.link.copy_latency_s = 0; /* zero latency is a valid idealisation */
	assert_int_equal(zb_hw_validate(&hw, &e), ZB_OK);
}

static void test_names_and_parsing(void **state)
{
	zb_error e;
	for (int k = 0; k < ZB_POLICY_COUNT; k++) {
		zb_policy_kind got;
		assert_int_equal(zb_policy_parse(zb_policy_name((zb_policy_kind)k), &got, &e), ZB_OK);
		assert_int_equal(got, k);
	}
	for (int k = 0; k < ZB_CKPT_COUNT; k++) {
		zb_ckpt got;
		assert_int_equal(zb_ckpt_parse(zb_ckpt_name((zb_ckpt)k), &got, &e), ZB_OK);
		assert_int_equal(got, k);
	}
	for (int k = 0; k < ZB_DTYPE_COUNT; k++) {
		zb_dtype got;
		assert_int_equal(zb_dtype_parse(zb_dtype_name((zb_dtype)k), &got, &e), ZB_OK);
		assert_int_equal(got, k);
	}
	assert_string_equal(zb_policy_name(ZB_POLICY_DPU), "dpu");
	assert_string_equal(zb_ckpt_name(ZB_CKPT_CPU), "cpu");
	assert_string_equal(zb_dtype_name(ZB_FP16), "fp16");
	assert_string_equal(zb_policy_name((zb_policy_kind)99), "unknown");

	zb_policy_kind k = ZB_POLICY_NONE;
	assert_input_error(zb_policy_parse("foo", &k, &e), &e, "foo");
	assert_string_equal(e.msg, "unknown policy 'foo' (known: none, offload, overlap, dpu)");
	assert_int_equal(k, ZB_POLICY_NONE); /* untouched on failure */
	zb_ckpt ck;
	assert_input_error(zb_ckpt_parse("disk", &ck, &e), &e, "'disk' (known: none, gpu, cpu)");
	zb_dtype dt;
	assert_input_error(zb_dtype_parse("fp8", &dt, &e), &e, "'fp8' (known: bf16, fp16)");
}

static void test_derived_figures(void **state)
{
	zb_config c;
	default_config(&c);
	assert_int_equal(zb_config_cpu_threads(&c), 16);
	c.policy.cpu_threads = 4;
	assert_int_equal(zb_config_cpu_threads(&c), 4);
	/* A DGX-2's 48 cores shared by 16 GPUs: 3 each. */
	assert_int_equal(zb_preset_hw("dgx-2", &c.hw, NULL), ZB_OK);
	c.policy.cpu_threads = 0;
	assert_int_equal(zb_config_cpu_threads(&c), 3);

	default_config(&c);
	assert_true(zb_config_gpu_flops(&c) == c.hw.gpu.bf16_flops);
	assert_int_equal(zb_preset_gpu("v100", &c.hw.gpu, NULL), ZB_OK);
	c.policy.dtype = ZB_FP16;
	assert_true(zb_config_gpu_flops(&c) == c.hw.gpu.fp16_flops);
	assert_true(c.hw.gpu.fp16_flops > 5 * c.hw.gpu.bf16_flops); /* no bf16 tensor cores */
}

/* One source for the H200 machine's executor profile: the built-in fit ("executor": "h200")
 * is exactly the "executor" object of hw/h200-machine-executor.json (built in by the
 * Makefile; a build whose copy did not read would leave the neutral profile), and no
 * preset carries it: the h200 GPU is first principles like every GPU. */
static void test_h200_profile_is_the_file(void **state)
{
	(void)state;
	zb_gpu g;
	zb_hw file;
	zb_error err;
	zb_exec_profile fit;
	assert_int_equal(zb_preset_gpu("h200", &g, &err), ZB_OK);
	assert_int_equal(g.exec.set, 0);
	assert_int_equal(zb_hw_load("hw/h200-machine-executor.json", &file, &err), ZB_OK);
	zb_exec_profile_h200(&fit);
	assert_int_equal(fit.set, 2);
	assert_int_equal(file.gpu.exec.set, 1);
	file.gpu.exec.set = 2;
	assert_memory_equal(&fit, &file.gpu.exec, sizeof fit);
	assert_true(fit.launch_s > 0 && fit.starved > 0); /* not the neutral profile */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_preset_loads_and_validates),
		cmocka_unit_test(test_h200_profile_is_the_file),
		cmocka_unit_test(test_required_names_exist),
		cmocka_unit_test(test_param_counts_match_published),
		cmocka_unit_test(test_param_counts_exact),
		cmocka_unit_test(test_unknown_names),
		cmocka_unit_test(test_defaults_and_measured_figures),
		cmocka_unit_test(test_presets_print),
		cmocka_unit_test(test_policy_defaults),
		cmocka_unit_test(test_validation_rejects),
		cmocka_unit_test(test_model_validation),
		cmocka_unit_test(test_hw_validation),
		cmocka_unit_test(test_names_and_parsing),
		cmocka_unit_test(test_derived_figures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
