/*
 * test_dsconfig.c - DeepSpeed configs as zbench policies.
 *
 * Fixtures (tests/data, written for these tests): a ZeRO-3 config offloading
 * parameters and optimizer to pinned memory with overlap, "auto" buckets and fp16
 * dynamic loss scaling (the Hugging Face docs' ZeRO-3 example); the same with
 * activation checkpointing to the CPU, gradient accumulation and a sub-group size;
 * a Twin-Flow config with a ratio; a ZeRO-2 offload config; malformed and
 * contradictory ones. Checked: the mapping onto the policy, "auto" resolved from the
 * model as the Hugging Face integration does, batch sizes derived as DeepSpeed
 * derives them, the Twin-Flow ratio quantized to whole ZeRO-3 sub-groups (by hand on
 * a small model), the list of keys not modelled, and one-line errors naming the key;
 * then the flags through zbench predict, sweep and run ($ZBENCH): where each setting
 * came from, flags over files, one warning line, bad files exit 2 with one line.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sys/wait.h>

#include "common/error.h"
#include "inputs/dsconfig.h"
#include "core/model.h"
#include "inputs/presets.h"

static char dir[64];

static int setup(void **state)
{
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

/* A fixture's path; four buffers in turn, so two can go into one format. */
static const char *data(const char *name)
{
	static char buf[4][256];
	static int next;
	char *b = buf[next++ % 4];
	const char *d = getenv("ZB_TEST_DATA");
	snprintf(b, sizeof buf[0], "%s/%s", d && *d ? d : "tests/data", name);
	return b;
}

static const char *tmp(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

static zb_ds_config load_ok(const char *path)
{
	zb_ds_config ds;
	zb_error e = { 0 };
	zb_status st = zb_ds_load(path, &ds, &e);
	if (st != ZB_OK)
		print_error("loading %s: %s\n", path, e.msg);
	assert_int_equal(st, ZB_OK);
	return ds;
}

static zb_ds_config load_text(const char *text)
{
	zb_test_write_file(tmp("ds.json"), text);
	return load_ok(tmp("ds.json"));
}

static zb_model preset(const char *name)
{
	zb_model m;
	assert_int_equal(zb_preset_model(name, &m, NULL), ZB_OK);
	return m;
}

static zb_ds_plan plan_ok(const zb_ds_config *ds, const zb_model *m, int micro, int gas)
{
	zb_ds_plan p;
	zb_error e = { 0 };
	zb_ds_batch b = { micro, gas, 0, 0 };
	zb_status st = zb_ds_plan_make(ds, m, &b, &p, &e);
	if (st != ZB_OK)
		print_error("plan of %s: %s\n", ds->path, e.msg);
	assert_int_equal(st, ZB_OK);
	return p;
}

/* ---- the fixtures ---------------------------------------------------------------- */

static void test_zero3_offload_auto(void **state)
{
	zb_ds_config ds = load_ok(data("ds-zero3-offload.json"));
	assert_int_equal(ds.v[ZB_DSK_REDUCE_BUCKET].state, ZB_DS_AUTO);
	assert_int_equal(ds.v[ZB_DSK_MICRO_BATCH].state, ZB_DS_AUTO);
	assert_int_equal(ds.v[ZB_DSK_STAGE].state, ZB_DS_SET);
	/* one ZeRO-3 key zbench does not model (the live and reuse limits are ZeRO-3's
	 * coordinator, schedules/ds_trace.h); scheduler, optimizer params and logging are
	 * accepted without a word */
	assert_int_equal(ds.nignored, 1);
	assert_int_equal(ds.v[ZB_DSK_MAX_LIVE].state, ZB_DS_SET);
	assert_int_equal(ds.v[ZB_DSK_MAX_REUSE].state, ZB_DS_SET);
	assert_contains(ds.ignored, "zero_optimization.stage3_gather_16bit_weights_on_model_save");
	assert_contains(ds.ignored, "zero_optimization.stage3_gather_16bit_weights_on_model_save");
	assert_null(strstr(ds.ignored, "scheduler"));
	assert_null(strstr(ds.ignored, "optimizer"));

	zb_model m = preset("gpt2-large");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.stage, 3);
	assert_true(p.set[ZB_DSF_KIND]);
	assert_int_equal(p.policy.kind, ZB_POLICY_OVERLAP);
	assert_contains(p.why[ZB_DSF_KIND], "overlap_comm true");
	assert_close(p.policy.ratio, 1.0, 0);
	assert_int_equal(p.policy.offload_param, 1);
	assert_int_equal(p.policy.pageable, 0); /* pinned both ways */
	assert_true(p.set[ZB_DSF_PAGEABLE]);
	/* "auto" from the model, as transformers' trainer_config_finalize does */
	assert_int_equal(p.policy.bucket_params, 1280 * 1280);
	assert_contains(p.why[ZB_DSF_BUCKET], "hidden^2");
	assert_int_equal(p.prefetch_elements, 1474560); /* int(0.9 x 1280^2) */
	assert_int_equal(p.persistence_threshold, 12800);
	assert_int_equal(p.sub_group_size, 1000000000);
	/* 1.47M elements ahead is a fraction of one 19.7M-parameter block (12 h^2 + 13 h): 1 layer */
	assert_int_equal(zb_model_unit_params(&m, 1), 19677440);
	assert_int_equal(p.policy.prefetch_layers, 1);
	/* norms and biases stay on the GPU: a small, non-zero share */
	assert_true(p.persistent_params > 0 && p.persistent_params < zb_model_params(&m) / 100);
	/* fp16 with dynamic loss scaling */
	assert_int_equal(p.policy.dtype, ZB_FP16);
	assert_contains(p.precision, "dynamic loss scaling");
	assert_contains(p.precision, "2^16");
	/* batch "auto": zbench's values, so not decided by the file */
	assert_false(p.set[ZB_DSF_MICRO_BATCH]);
	assert_false(p.set[ZB_DSF_GAS]);
	assert_contains(p.why[ZB_DSF_MICRO_BATCH], "\"auto\"");
	assert_int_equal(p.train_batch, 8);
	assert_false(p.set[ZB_DSF_CKPT]);

	/* the same file on Llama-2-7B: hidden 4096 */
	zb_model l = preset("llama2-7b");
	p = plan_ok(&ds, &l, 2, 4);
	assert_int_equal(p.policy.bucket_params, 4096 * 4096);
	assert_int_equal(p.prefetch_elements, 15099494);
	assert_int_equal(p.persistence_threshold, 40960);
	assert_int_equal(p.train_batch, 8);
}

static void test_zero3_ckpt_gas_subgroups(void **state)
{
	zb_ds_config ds = load_ok(data("ds-zero3-offload-ckpt.json"));
	zb_model m = preset("gpt2-large");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	assert_true(p.set[ZB_DSF_MICRO_BATCH] && p.set[ZB_DSF_GAS]);
	assert_int_equal(p.policy.micro_batch, 4);
	assert_int_equal(p.policy.gas, 8);
	assert_int_equal(p.train_batch, 32);
	assert_true(p.set[ZB_DSF_CKPT]);
	assert_int_equal(p.policy.ckpt, ZB_CKPT_CPU);
	assert_contains(p.why[ZB_DSF_CKPT], "cpu_checkpointing");
	assert_contains(p.why[ZB_DSF_CKPT], "partition_activations");
	assert_int_equal(p.sub_group_size, 100000000);
	assert_contains(p.precision, "2^12");
	assert_contains(p.precision, "window 500");
	/* activation_checkpointing keys without an effect here are reported */
	assert_contains(ds.ignored, "activation_checkpointing.contiguous_memory_optimization");
	assert_null(strstr(ds.ignored, "cpu_checkpointing"));

	/* full offload is not changed by sub-groups */
	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&m, p.sub_group_size, 1.0, &tf);
	assert_int_equal(tf.cpu_sub_groups, tf.sub_groups);
	assert_close(tf.ratio, 1.0, 0);
	/* gpt2-large in sub-groups of >= 1e8 elements: 7 full ones and a remainder */
	assert_int_equal(tf.sub_groups, 8);
	assert_int_equal(tf.params, zb_model_params(&m));
}

static void test_twinflow_fixture(void **state)
{
	zb_ds_config ds = load_ok(data("ds-twinflow.json"));
	zb_model m = preset("gpt2-large");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.kind, ZB_POLICY_OVERLAP);
	assert_close(p.policy.ratio, 0.3, 0); /* requested; quantized by zb_ds_twinflow_split */
	assert_int_equal(p.policy.offload_param, 0);
	assert_int_equal(p.policy.dtype, ZB_BF16);
	assert_int_equal(p.policy.bucket_params, 50000000);
	assert_int_equal(ds.nignored, 0);

	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&m, p.sub_group_size, p.policy.ratio, &tf);
	/* 8 sub-groups: int((1 - 0.3) x 8) = 5, so sub-groups 5..7 on the CPU */
	assert_int_equal(tf.sub_groups, 8);
	assert_int_equal(tf.cpu_sub_groups, 3);
	printf("# gpt2-large, sub_group_size 1e8, ratio 0.3: %d of %d sub-groups on the CPU, effective %.4f\n",
	       tf.cpu_sub_groups, tf.sub_groups, tf.ratio);
	/* within one sub-group (at most 1e8 + one tensor) of the request */
	assert_true(fabs(tf.ratio - 0.3) <= (1e8 + 64.4e6) / (double)tf.params);
	assert_close(tf.ratio, (double)tf.cpu_params / (double)tf.params, 1e-15);

	/* DeepSpeed's default sub_group_size (1e9) is larger than gpt2-large: one
	 * sub-group, and any ratio above 0 runs the whole optimizer on the CPU */
	zb_ds_twinflow_split(&m, 1000000000, 0.3, &tf);
	assert_int_equal(tf.sub_groups, 1);
	assert_int_equal(tf.cpu_sub_groups, 1);
	assert_close(tf.ratio, 1.0, 0);
	zb_ds_twinflow_split(&m, 1000000000, 0.0, &tf);
	assert_int_equal(tf.cpu_sub_groups, 0);
	assert_close(tf.ratio, 0.0, 0);
}

/* A model small enough to group by hand: embeddings 10 x 4 = 40; each block
 * norm 4, q 16, k 16, v 16, o 16, norm 4, fc1 32, fc2 32 (136); final norm 4.
 * Sub-groups of >= 100: [40 4 16 16 16 16] = 108, [4 32 32 | 4 16 16] = 104,
 * [16 16 4 32 32] = 100, [4] = 4: n = 4, 316 parameters. */
static void test_twinflow_by_hand(void **state)
{
	zb_model m = { .name = "tiny", .layers = 2, .hidden = 4, .heads = 1, .kv_heads = 1, .ffn = 8,
		       .vocab = 10, .max_seq = 0, .gated_mlp = 0, .bias = 0, .tied_embeddings = 1 };
	assert_int_equal(zb_model_params(&m), 316);
	static const struct {
		double ratio;
		int cpu_groups;
		int64_t cpu_params;
	} cases[] = {
		{ 1.0, 4, 316 },
		{ 0.75, 3, 208 }, /* int(0.25 x 4) = 1 */
		{ 0.5, 2, 104 },  /* int(0.5 x 4) = 2 */
		{ 0.3, 2, 104 },  /* int(0.7 x 4) = int(2.8) = 2 */
		{ 0.1, 1, 4 },    /* int(0.9 x 4) = 3: only the head's norm */
		{ 0.0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		zb_ds_twinflow tf;
		zb_ds_twinflow_split(&m, 100, cases[i].ratio, &tf);
		assert_int_equal(tf.sub_groups, 4);
		assert_int_equal(tf.params, 316);
		if (tf.cpu_sub_groups != cases[i].cpu_groups || tf.cpu_params != cases[i].cpu_params)
			print_error("ratio %g: %d groups, %lld params; want %d, %lld\n", cases[i].ratio,
				    tf.cpu_sub_groups, (long long)tf.cpu_params, cases[i].cpu_groups,
				    (long long)cases[i].cpu_params);
		assert_int_equal(tf.cpu_sub_groups, cases[i].cpu_groups);
		assert_int_equal(tf.cpu_params, cases[i].cpu_params);
	}
	/* sub_group_size 0: every tensor its own sub-group (18 + 1 + 1 + ... ) */
	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&m, 0, 1.0, &tf);
	assert_int_equal(tf.sub_groups, 1 + 2 * 8 + 1);
}

/* The tensor list adds up to the model for every preset shape (GQA, gated,
 * untied, OPT-style) and has the layout's tensor count. */
static void sum_tensor(int64_t size, void *ctx)
{
	int64_t *s = ctx;
	s[0] += size;
	s[1]++;
}

static void test_tensors_add_up(void **state)
{
	for (int i = 0; i < zb_preset_count("model"); i++) {
		zb_model m = preset(zb_preset_name("model", i));
		int64_t s[2] = { 0, 0 };
		zb_ds_tensors(&m, sum_tensor, s);
		if (s[0] != zb_model_params(&m))
			print_error("%s: tensors add up to %lld, model %lld\n", m.name, (long long)s[0],
				    (long long)zb_model_params(&m));
		assert_int_equal(s[0], zb_model_params(&m));
	}
	zb_model l = preset("llama2-7b");
	int64_t s[2] = { 0, 0 };
	zb_ds_tensors(&l, sum_tensor, s);
	assert_int_equal(s[1], 1 + 32 * 9 + 2); /* embed; 2 norms + q k v o + gate up down; norm, head */
}

static void test_zero2_offload_defaults(void **state)
{
	zb_ds_config ds = load_ok(data("ds-zero2-offload.json"));
	zb_model m = preset("gpt2-large");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	/* overlap_comm absent: DeepSpeed's default is false below stage 3 */
	assert_int_equal(p.policy.kind, ZB_POLICY_OFFLOAD);
	assert_contains(p.why[ZB_DSF_KIND], "default");
	/* pin_memory absent: DeepSpeed's default false, pageable copies */
	assert_int_equal(p.policy.pageable, 1);
	assert_contains(p.why[ZB_DSF_PAGEABLE], "absent");
	/* train_batch_size 16 / micro 4: gas 4 */
	assert_int_equal(p.policy.micro_batch, 4);
	assert_int_equal(p.policy.gas, 4);
	assert_contains(p.why[ZB_DSF_GAS], "derived");
	assert_int_equal(p.policy.bucket_params, 200000000);
	/* bf16 "auto": left to zbench */
	assert_false(p.set[ZB_DSF_DTYPE]);
	assert_int_equal(ds.nignored, 3);
	assert_contains(ds.ignored, "zero_optimization.allgather_bucket_size");
}

/* ---- inline variants ------------------------------------------------------------- */

static void test_batch_rules(void **state)
{
	zb_model m = preset("gpt2");
	static const struct {
		const char *json;
		int micro_auto, gas_auto;
		int micro, gas;
		long long train;
		int set;
	} cases[] = {
		{ "{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": 4}", 8, 1, 4, 8, 32, 1 },
		{ "{\"train_batch_size\": 32, \"gradient_accumulation_steps\": 4}", 8, 1, 8, 4, 32, 1 },
		{ "{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2}", 8, 1, 4, 2, 8, 1 },
		{ "{\"train_batch_size\": 16}", 8, 1, 16, 1, 16, 1 },
		{ "{\"train_micro_batch_size_per_gpu\": 3}", 8, 5, 3, 1, 3, 1 },
		{ "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": 2,"
		  " \"gradient_accumulation_steps\": \"auto\"}", 8, 3, 2, 3, 6, 1 },
		{ "{\"train_batch_size\": 24, \"train_micro_batch_size_per_gpu\": \"auto\"}", 6, 1, 6, 4, 24, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		zb_ds_config ds = load_text(cases[i].json);
		zb_ds_plan p = plan_ok(&ds, &m, cases[i].micro_auto, cases[i].gas_auto);
		if (p.policy.micro_batch != cases[i].micro || p.policy.gas != cases[i].gas ||
		    p.train_batch != cases[i].train)
			print_error("%s: micro %d gas %d train %lld\n", cases[i].json, p.policy.micro_batch,
				    p.policy.gas, (long long)p.train_batch);
		assert_int_equal(p.policy.micro_batch, cases[i].micro);
		assert_int_equal(p.policy.gas, cases[i].gas);
		assert_int_equal(p.train_batch, cases[i].train);
		assert_int_equal(p.set[ZB_DSF_MICRO_BATCH], cases[i].set);
	}
	/* flags given explicitly replace the file's key before the missing one is derived */
	zb_ds_config z2 = load_ok(data("ds-zero2-offload.json")); /* train 16, micro 4 */
	zb_ds_batch fb = { 2, 1, 1, 0 };
	zb_ds_plan q;
	zb_error e = { 0 };
	assert_int_equal(zb_ds_plan_make(&z2, &m, &fb, &q, &e), ZB_OK);
	assert_int_equal(q.policy.gas, 8); /* 16 / --micro-batch 2 */
	assert_true(q.set[ZB_DSF_GAS]);
	assert_contains(q.why[ZB_DSF_GAS], "--micro-batch 2");
	assert_true(q.set[ZB_DSF_MICRO_BATCH]); /* the file had one, the flag overrides it */
	assert_int_equal(q.train_batch, 16);
	fb.micro = 3; /* 16 is no multiple of 3: DeepSpeed would stop */
	assert_int_equal(zb_ds_plan_make(&z2, &m, &fb, &q, &e), ZB_E_INPUT);
	assert_contains(e.msg, "not a multiple of --micro-batch 3");
	/* all three in the file: its train_batch_size gives way to the flag */
	zb_ds_config z3 = load_ok(data("ds-zero3-offload-ckpt.json")); /* 32 = 4 x 8 */
	fb.micro = 2;
	assert_int_equal(zb_ds_plan_make(&z3, &m, &fb, &q, &e), ZB_OK);
	assert_int_equal(q.policy.gas, 8);
	assert_int_equal(q.train_batch, 16);
	assert_contains(q.batch, "gives way");

	/* no batch key at all: zbench's values, nothing decided */
	zb_ds_config ds = load_text("{\"zero_optimization\": {\"stage\": 1}}");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	assert_false(p.set[ZB_DSF_MICRO_BATCH] || p.set[ZB_DSF_GAS]);
	assert_string_equal(p.batch, "");
	fb.micro = 4;
	assert_int_equal(zb_ds_plan_make(&ds, &m, &fb, &q, &e), ZB_OK);
	assert_false(q.set[ZB_DSF_MICRO_BATCH] || q.set[ZB_DSF_GAS]);
	assert_int_equal(p.policy.kind, ZB_POLICY_NONE);
	assert_false(p.set[ZB_DSF_RATIO]);
}

static void test_mapping_variants(void **state)
{
	zb_model m = preset("gpt2-large");
	zb_ds_config ds = load_text("{\"zero_optimization\": {\"stage\": 2, \"overlap_comm\": true,"
				    " \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}}}");
	zb_ds_plan p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.kind, ZB_POLICY_OVERLAP);
	assert_int_equal(p.policy.pageable, 0);
	assert_contains(p.why[ZB_DSF_BUCKET], "5e8");
	assert_int_equal(p.policy.bucket_params, 500000000);

	/* stage 3 without overlap_comm: DeepSpeed turns it on */
	ds = load_text("{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": \"auto\","
		       " \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true},"
		       " \"offload_param\": {\"device\": \"cpu\"}, \"stage3_prefetch_bucket_size\": 5e7}}");
	p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.kind, ZB_POLICY_OVERLAP);
	/* parameters pageable although the optimizer is pinned: one zbench setting */
	assert_int_equal(p.policy.pageable, 1);
	assert_contains(p.why[ZB_DSF_PAGEABLE], "offload_param.pin_memory absent");
	/* 5e7 elements / 19677440 per block = 2.54: 3 layers */
	assert_int_equal(p.policy.prefetch_layers, 3);

	/* overlap_comm false at stage 3: offload */
	ds = load_text("{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": false,"
		       " \"offload_optimizer\": {\"device\": \"cpu\"}}}");
	p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.kind, ZB_POLICY_OFFLOAD);
	assert_int_equal(p.policy.offload_param, 0);

	/* offload_optimizer device none: no offload */
	ds = load_text("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"none\"}}}");
	p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.kind, ZB_POLICY_NONE);
	assert_false(p.set[ZB_DSF_PAGEABLE]);

	/* activation checkpointing on the GPU; fp16 with a static scale */
	ds = load_text("{\"activation_checkpointing\": {\"partition_activations\": false},"
		       " \"fp16\": {\"enabled\": true, \"loss_scale\": 128}}");
	p = plan_ok(&ds, &m, 8, 1);
	assert_int_equal(p.policy.ckpt, ZB_CKPT_GPU);
	assert_contains(p.precision, "static loss scale 128");

	/* fp16 "auto": zbench's --dtype decides */
	ds = load_text("{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": false}}");
	p = plan_ok(&ds, &m, 8, 1);
	assert_false(p.set[ZB_DSF_DTYPE]);
	assert_contains(p.why[ZB_DSF_DTYPE], "auto");

	/* optimizer type in any case */
	ds = load_text("{\"optimizer\": {\"type\": \"ADAMW\"}}");
	plan_ok(&ds, &m, 8, 1);
}

static void test_ignored_keys(void **state)
{
	zb_ds_config ds = load_text("{\"comms_logger\": {\"enabled\": true}, \"flops_profiler\": {\"enabled\": false},"
				    " \"zero_optimization\": {\"stage\": 1, \"round_robin_gradients\": true,"
				    " \"offload_optimizer\": {\"device\": \"none\", \"buffer_count\": 4}},"
				    " \"scheduler\": {\"type\": \"WarmupLR\"}, \"gradient_clipping\": 1.0,"
				    " \"fp16\": {\"enabled\": false, \"auto_cast\": false, \"consecutive_hysteresis\": false},"
				    " \"bf16\": {\"enabled\": true}}");
	assert_int_equal(ds.nignored, 4);
	assert_string_equal(ds.ignored, "comms_logger, flops_profiler, zero_optimization.round_robin_gradients, "
					"zero_optimization.offload_optimizer.buffer_count");

	/* a long list is cut, the count stays right */
	char text[8192] = "{";
	for (int i = 0; i < 100; i++)
		snprintf(text + strlen(text), sizeof text - strlen(text), "%s\"unknown_key_number_%d\": 1",
			 i ? ", " : "", i);
	strcat(text, "}");
	ds = load_text(text);
	assert_int_equal(ds.nignored, 100);
	assert_true(strlen(ds.ignored) < sizeof ds.ignored);
	assert_contains(ds.ignored, ", ...");
}

/* ---- errors -------------------------------------------------------------------- */

/* Load (and plan, on gpt2-large) path or text; expect one ZB_E_INPUT line naming
 * the file and holding the needles. */
static void expect_error(const char *text, const char *path, const char *n1, const char *n2)
{
	if (text) {
		path = tmp("bad.json");
		zb_test_write_file(path, text);
	}
	zb_ds_config ds;
	zb_error e = { 0 };
	zb_status st = zb_ds_load(path, &ds, &e);
	if (st == ZB_OK) {
		zb_model m = preset("gpt2-large");
		zb_ds_plan p;
		zb_ds_batch b = { 8, 1, 0, 0 };
		st = zb_ds_plan_make(&ds, &m, &b, &p, &e);
	}
	if (st != ZB_E_INPUT)
		print_error("%s: status %d, message '%s'\n", text ? text : path, st, e.msg);
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
	/* the fixtures */
	expect_error(NULL, data("ds-malformed.json"), "malformed JSON", "line 5");
	expect_error(NULL, data("ds-bad-offload-stage0.json"), "zero_optimization.offload_optimizer", "stage is 0");
	expect_error(NULL, data("ds-bad-ratio.json"), "zero_optimization.offload_optimizer.ratio", "1.5");
	expect_error(NULL, data("ds-bad-batch.json"), "'train_batch_size' 30", "4 x gradient_accumulation_steps 8");
	expect_error(NULL, data("ds-bad-precision.json"), "fp16.enabled", "bf16.enabled");
	expect_error(NULL, data("ds-bad-partial-stage2.json"), "offload_optimizer.ratio' 0.5", "stage 3");
	expect_error(NULL, "/nonexistent/ds.json", "cannot open", NULL);

	/* values DeepSpeed would reject */
	expect_error("{\"zero_optimization\": {\"stage\": 4}}", NULL, "zero_optimization.stage", "0, 1, 2 or 3");
	expect_error("{\"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"},"
		     " \"offload_optimizer\": {\"device\": \"cpu\"}}}",
		     NULL, "zero_optimization.offload_param", "stage is 2");
	expect_error("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"gpu\"}}}", NULL,
		     "offload_optimizer.device", "none, cpu, nvme");
	expect_error("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": -0.1}}}",
		     NULL, "ratio", "-0.1");
	expect_error("{\"train_batch_size\": 30, \"train_micro_batch_size_per_gpu\": 4}", NULL, "'train_batch_size' 30",
		     "multiple of train_micro_batch_size_per_gpu 4");
	expect_error("{\"train_batch_size\": 2, \"train_micro_batch_size_per_gpu\": 4}", NULL, "'train_batch_size' 2",
		     NULL);
	expect_error("{\"train_batch_size\": 30, \"gradient_accumulation_steps\": 4}", NULL, "'train_batch_size' 30",
		     "gradient_accumulation_steps 4");
	expect_error("{\"train_micro_batch_size_per_gpu\": 0}", NULL, "train_micro_batch_size_per_gpu", "positive");
	expect_error("{\"gradient_accumulation_steps\": 4}", NULL, "gradient_accumulation_steps",
		     "train_micro_batch_size_per_gpu");
	expect_error("{\"train_micro_batch_size_per_gpu\": 2.5}", NULL, "train_micro_batch_size_per_gpu", "2.5");
	expect_error("{\"zero_optimization\": {\"overlap_comm\": \"yes\"}}", NULL, "overlap_comm", "\"yes\"");
	expect_error("{\"zero_optimization\": true}", NULL, "'zero_optimization'", "an object");
	expect_error("{\"fp16\": {\"enabled\": true, \"loss_scale\": -1}}", NULL, "fp16.loss_scale", "-1");
	expect_error("{\"train_batch_size\": 8, \"train_batch_size\": 16}", NULL, "malformed JSON", "duplicate");
	expect_error("[]", NULL, "top level", NULL);

	/* values zbench cannot model */
	expect_error("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"nvme\"}}}", NULL,
		     "offload_optimizer.device", "nvme");
	expect_error("{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cpu\"}}}", NULL,
		     "offload_param", "without offload_optimizer");
	expect_error("{\"optimizer\": {\"type\": \"Lamb\"}}", NULL, "optimizer.type", "Lamb");
	expect_error("{\"fp16\": {\"enabled\": false}}", NULL, "fp16.enabled", "fp32");
	expect_error("{\"zero_optimization\": {\"reduce_bucket_size\": 0}}", NULL, "reduce_bucket_size", "0");
}

/* ---- through the command ------------------------------------------------------- */

/* The flags as a user gives them to predict, sweep and run ($ZBENCH, default
 * build/zbench; --no-db throughout). */

typedef struct result {
	int rc;
	char *out, *err;
} result;

static result zbench(const char *args)
{
	const char *bin = getenv("ZBENCH");
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s %s --no-db >%s/out 2>%s/err </dev/null", bin && *bin ? bin : "build/zbench", args,
		 dir, dir);
	int st = system(cmd);
	result r = { WIFEXITED(st) ? WEXITSTATUS(st) : 128, NULL, NULL };
	r.out = zb_test_slurp(tmp("out"), NULL);
	r.err = zb_test_slurp(tmp("err"), NULL);
	return r;
}

static void result_free(result *r)
{
	free(r->out);
	free(r->err);
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static json_t *json_of(const result *r)
{
	json_error_t je;
	json_t *j = json_loads(r->out, 0, &je);
	if (!j)
		print_error("stdout is not JSON (%s): %s\nstderr: %s\n", je.text, r->out, r->err);
	assert_non_null(j);
	return j;
}

static const char *from(json_t *j, const char *setting)
{
	json_t *e = json_object_get(json_object_get(j, "sources"), setting);
	const char *s = json_string_value(json_object_get(e, "from"));
	assert_non_null(s);
	return s;
}

/* activation_checkpointing with a Hugging Face model: the section configures
 * deepspeed.checkpointing, which transformers' models do not call (they checkpoint
 * through gradient_checkpointing_enable()): zbench assumes none and says so in one line
 * and in the setting's source; --ckpt chooses. */
static void test_hf_ckpt_section(void **state)
{
	char args[2048];
	snprintf(args, sizeof args, "predict --steps 2 --ds-config %s --hf-config %s --seq 256",
		 data("ds-zero3-offload-ckpt.json"), data("hf-opt-350m.json"));
	result r = zbench(args);
	if (r.rc != 0)
		print_error("stderr: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "gradient_checkpointing_enable()");
	assert_contains(r.out, "no checkpointing assumed (--ckpt gpu");
	assert_contains(r.out, "#   ckpt             none             ds-config");
	result_free(&r);
	snprintf(args, sizeof args, "predict --json --steps 2 --ds-config %s --hf-config %s --seq 256 --ckpt gpu",
		 data("ds-zero3-offload-ckpt.json"), data("hf-opt-350m.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "\"ckpt\"");
	assert_contains(r.out, "--ckpt gpu");
	result_free(&r);
	/* zbench's own model (not Hugging Face's): the section is DeepSpeed's checkpointing */
	snprintf(args, sizeof args, "predict --steps 2 --ds-config %s --model gpt2-large --seq 256",
		 data("ds-zero3-offload-ckpt.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 0);
	assert_true(strstr(r.out, "gradient_checkpointing_enable()") == NULL);
	assert_contains(r.out, "#   ckpt             cpu              ds-config");
	result_free(&r);
}

static void test_cli_predict(void **state)
{
	char args[2048];
	/* zbench's schedule: DeepSpeed's own needs more host memory than this machine
	 * has for 7 B parameters with offload_param (24 B/param) */
	snprintf(args, sizeof args, "predict --json --steps 3 --framework zbench --ds-config %s --hf-config %s",
		 data("ds-zero3-offload.json"), data("hf-llama2-7b.json"));
	result r = zbench(args);
	if (r.rc != 0)
		print_error("stderr: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	/* one warning line: the keys not modelled */
	assert_int_equal(lines(r.err), 1);
	assert_contains(r.err, "warning");
	assert_contains(r.err, "stage3_gather_16bit_weights_on_model_save");
	json_t *j = json_of(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "params")), 6738415616LL);
	assert_string_equal(json_string_value(json_object_get(j, "policy")), "overlap");
	assert_string_equal(from(j, "policy"), "ds-config");
	assert_string_equal(from(j, "offload_param"), "ds-config");
	assert_string_equal(from(j, "bucket_params"), "ds-config");
	assert_string_equal(from(j, "dtype"), "ds-config");
	assert_string_equal(from(j, "layers"), "hf-config");
	assert_string_equal(from(j, "kv_heads"), "hf-config");
	assert_string_equal(from(j, "micro_batch"), "default"); /* "auto" */
	assert_string_equal(from(j, "seq"), "default");
	json_t *ds = json_object_get(j, "deepspeed");
	assert_int_equal(json_integer_value(json_object_get(ds, "stage")), 3);
	assert_int_equal(json_integer_value(json_object_get(ds, "keys_not_modelled")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "hf_config"), "model_type")), "llama");
	json_decref(j);
	free(r.out), free(r.err);

	/* explicit flags override the file; the rest of the file still applies */
	snprintf(args, sizeof args, "predict --json --steps 3 --ds-config %s --micro-batch 2 --model gpt2-large",
		 data("ds-zero3-offload-ckpt.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 0);
	j = json_of(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "micro_batch")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "gas")), 8);
	assert_string_equal(from(j, "micro_batch"), "flag");
	assert_string_equal(from(j, "gas"), "ds-config");
	assert_string_equal(from(j, "ckpt"), "ds-config");
	assert_contains(json_string_value(json_object_get(json_object_get(json_object_get(j, "sources"), "micro_batch"),
							  "detail")),
			"overrides ds-config");
	json_decref(j);
	free(r.out), free(r.err);

	/* people's output: the inputs block and the two files */
	snprintf(args, sizeof args, "predict --steps 3 --ds-config %s --hf-config %s", data("ds-zero2-offload.json"),
		 data("hf-gpt2-large.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "# inputs");
	assert_contains(r.out, "hf-config  n_layer");
	assert_contains(r.out, "ds-config  stage 2, offload_optimizer.device cpu");
	assert_contains(r.out, "# deepspeed ");
	assert_contains(r.out, "# hugging face ");
	free(r.out), free(r.err);
}

static void test_cli_sweep_and_run(void **state)
{
	/* sweep: ratios quantized to sub-groups: 0.4 and 0.5 both put sub-groups 4..7 of 8
	 * on the CPU (int(0.6 x 8) = int(4.8) = 4, int(0.5 x 8) = 4) */
	char args[2048];
	snprintf(args, sizeof args, "sweep --csv --steps 3 --ds-config %s --ratio 0.4,0.5", data("ds-twinflow.json"));
	result r = zbench(args);
	if (r.rc != 0)
		print_error("stderr: %s\n", r.err);
	assert_int_equal(r.rc, 0);
	assert_int_equal(lines(r.out), 3);
	char *row1 = strchr(r.out, '\n') + 1, *row2 = strchr(row1, '\n') + 1;
	/* model,pcie,gpu,cpu,cores,policy,ratio */
	char r1[32], r2[32];
	assert_int_equal(sscanf(row1, "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],overlap,%31[^,]", r1), 1);
	assert_int_equal(sscanf(row2, "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],overlap,%31[^,]", r2), 1);
	assert_string_equal(r1, r2);
	zb_model m = preset("gpt2-large");
	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&m, 100000000, 0.4, &tf);
	assert_int_equal(tf.cpu_sub_groups, 4);
	assert_close(atof(r1), tf.ratio, 1e-3);
	free(r.out), free(r.err);

	/* sweep --hf-config: the model from the file in every row */
	snprintf(args, sizeof args, "sweep --csv --steps 3 --hf-config %s --policy overlap --pcie gen4,gen5",
		 data("hf-gpt2-large.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 0);
	assert_int_equal(lines(r.out), 3);
	free(r.out), free(r.err);

	/* run takes both flags and checks them before looking for a GPU */
	snprintf(args, sizeof args, "run --ds-config %s --hf-config %s", data("ds-bad-batch.json"),
		 data("hf-gpt2-large.json"));
	r = zbench(args);
	assert_int_equal(r.rc, 2);
	assert_int_equal(lines(r.err), 1);
	assert_contains(r.err, "train_batch_size");
	free(r.out), free(r.err);
}

static void test_cli_errors(void **state)
{
	static const struct {
		const char *fmt, *file, *n1, *n2;
	} cases[] = {
		{ "predict --ds-config %s", "ds-malformed.json", "malformed JSON", "ds-malformed.json" },
		{ "predict --ds-config %s", "ds-bad-offload-stage0.json", "offload_optimizer", "stage" },
		{ "sweep --ds-config %s", "ds-bad-ratio.json", "ratio", "1.5" },
		{ "predict --ds-config %s", "ds-bad-precision.json", "fp16.enabled", "bf16.enabled" },
		{ "predict --hf-config %s --model gpt2", "hf-llama2-7b.json", "--model", "choose one" },
		{ "predict --hf-config %s --seq 8192", "hf-llama2-7b.json", "seq 8192", "max_position_embeddings 4096" },
		{ "predict --hf-config %s --seq 2048", "hf-gpt2-large.json", "seq 2048", "max_seq 1024" },
		{ "sweep --hf-config %s", "hf-moe.json", "num_local_experts", NULL },
		{ "predict --hf-config %s", "nonexistent.json", "cannot open", NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char args[2048];
		snprintf(args, sizeof args, cases[i].fmt, data(cases[i].file));
		result r = zbench(args);
		if (r.rc != 2 || lines(r.err) != 1 || r.out[0])
			print_error("zbench %s: rc %d, stderr '%s', stdout '%.200s'\n", args, r.rc, r.err, r.out);
		assert_int_equal(r.rc, 2);
		assert_int_equal(lines(r.err), 1);
		assert_string_equal(r.out, "");
		assert_contains(r.err, cases[i].n1);
		if (cases[i].n2)
			assert_contains(r.err, cases[i].n2);
		free(r.out), free(r.err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero3_offload_auto),
		cmocka_unit_test(test_zero3_ckpt_gas_subgroups),
		cmocka_unit_test(test_twinflow_fixture),
		cmocka_unit_test(test_twinflow_by_hand),
		cmocka_unit_test(test_tensors_add_up),
		cmocka_unit_test(test_zero2_offload_defaults),
		cmocka_unit_test(test_batch_rules),
		cmocka_unit_test(test_mapping_variants),
		cmocka_unit_test(test_ignored_keys),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hf_ckpt_section),
		cmocka_unit_test(test_cli_predict),
		cmocka_unit_test(test_cli_sweep_and_run),
		cmocka_unit_test(test_cli_errors),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
