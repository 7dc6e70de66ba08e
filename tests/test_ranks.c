/*
 * test_ranks.c - several data-parallel ranks: the ring collective model
 * against hand-computed times, the shard invariants of zbench's schedule over its
 * option space, one rank unchanged, the simulated busy time of the collectives
 * against the formula, the DGX presets and their fabric, and bad flags.
 */
#include "tests/harness.h"

#include <unistd.h>

#include "core/config.h"
#include "core/graph.h"
#include "core/model.h"
#include "inputs/fabric.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "sim/collective.h"
#include "sim/engine.h"

static const char *zbench;
static char tmpdir[256];

static zb_config dgx(const char *machine, int gpus, int nodes)
{
	zb_config c;
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw(machine, &c.hw, NULL), ZB_OK);
	zb_preset_default_model(&c.model);
	zb_policy_defaults(&c.policy);
	c.policy.gpus = gpus;
	c.policy.nodes = nodes;
	c.steps = 4;
	return c;
}

/* Hand-computed from nccl-tests' busbw definition (sim/collective.h) and the
 * fabric presets' figures (inputs/fabric.c). */
static void test_collective_times(void **state)
{
	(void)state;
	zb_config c = dgx("dgx-h100", 8, 1); /* 370 GB/s busbw, 5.7 us per ring step */
	double S = 1e8;
	/* reduce-scatter / all-gather: 7/8 x 1e8 / 370e9 + 7 x 5.7e-6 */
	assert_close(zb_collective_s(&c, ZB_OP_REDUCE_SCATTER, S), 2.364864865e-4 + 3.99e-5, 1e-9);
	assert_close(zb_collective_s(&c, ZB_OP_ALL_GATHER, S), 2.364864865e-4 + 3.99e-5, 1e-9);
	/* all-reduce: twice the bytes and the steps */
	assert_close(zb_collective_s(&c, ZB_OP_ALL_REDUCE, S), 4.72972973e-4 + 7.98e-5, 1e-9);
	/* two ranks: half the buffer crosses */
	c.policy.gpus = 2;
	assert_close(zb_collective_s(&c, ZB_OP_REDUCE_SCATTER, S), 0.5e8 / 370e9 + 5.7e-6, 1e-9);
	/* two nodes of 8: the ring runs at the slower of NVLink (370) and the node's
	 * network shared by its 8 GPUs (8 x 48 / 8 = 48 GB/s), latency the network's */
	c = dgx("dgx-h100", 8, 2);
	assert_close(zb_collective_bus_Bps(&c), 48e9, 1e-12);
	assert_close(zb_collective_s(&c, ZB_OP_REDUCE_SCATTER, S), 15.0 / 16 * S / 48e9 + 15 * 6.6e-6, 1e-9);
	/* A100: 230 GB/s within the node (NVIDIA/nccl-tests#149) */
	c = dgx("dgx-a100", 4, 1);
	assert_close(zb_collective_s(&c, ZB_OP_ALL_GATHER, S), 0.75 * S / 230e9 + 3 * 5.7e-6, 1e-9);
	/* one rank: nothing to move */
	c.policy.gpus = 1;
	assert_close(zb_collective_s(&c, ZB_OP_ALL_GATHER, S), 0, 1e-12);
}

static void base(zb_config *c, const char *model, int gpus)
{
	*c = dgx("dgx-h100", gpus, 1);
	if (strcmp(model, "tiny-gpt") == 0) {
		zb_model m = { .name = "tiny-gpt", .layers = 4, .hidden = 256, .heads = 4, .kv_heads = 4, .ffn = 1024,
			       .vocab = 1000, .max_seq = 256, .gated_mlp = 0, .bias = 1, .tied_embeddings = 1 };
		c->model = m;
		c->policy.micro_batch = 2;
		c->policy.seq = 128;
		c->policy.bucket_params = 150001; /* odd: shards of unequal length, buckets straddle units */
	} else {
		zb_model m = { .name = "tiny-llama", .layers = 3, .hidden = 256, .heads = 8, .kv_heads = 2, .ffn = 688,
			       .vocab = 1000, .max_seq = 0, .gated_mlp = 1, .bias = 0, .tied_embeddings = 0 };
		c->model = m;
		c->policy.micro_batch = 1;
		c->policy.seq = 64;
		c->policy.bucket_params = 123457;
	}
}

/* The shard rule of graph.h: the R shards of every bucket tile it exactly; each
 * parameter is updated by exactly one rank; each bucket is reduce-scattered once a
 * step, and (ZeRO-1/2) all-gathered once a step; ZeRO-3 gathers every unit before
 * each forward and backward. */
static void check_ranks(const zb_graph *g, const zb_config *c, int zero3)
{
	int R = g->ranks;
	assert_int_equal(R, c->policy.gpus * c->policy.nodes);
	for (int bk = 0; bk < g->nbuckets; bk++) {
		const zb_bucket *bu = &g->buckets[bk];
		int64_t S = zb_shard_params(bu->params, R), covered = 0;
		for (int r = 0; r < R; r++) {
			int64_t lo = bu->param_offset + (int64_t)r * S, hi = lo + S;
			int64_t end = bu->param_offset + bu->params;
			if (hi > end)
				hi = end;
			if (hi > lo)
				covered += hi - lo;
		}
		assert_int_equal(covered, bu->params);
	}
	int U = zb_model_units(&c->model);
	for (int s = 0; s < g->steps; s++) {
		int64_t rs = 0, ag_bucket = 0, ag_unit = 0, adam = 0;
		for (size_t i = 0; i < g->ntasks; i++) {
			const zb_task *t = &g->tasks[i];
			if (t->step != s)
				continue;
			if (t->op == ZB_OP_ADAM) {
				int64_t per_rank = zb_shard_params(g->buckets[t->bucket].params, R);
				assert_int_equal(t->params, per_rank);
				adam += g->buckets[t->bucket].params;
			}
			if (t->resource != ZB_RES_COMM)
				continue;
			assert_int_equal(t->kind, ZB_TASK_COLLECTIVE);
			assert_close(t->bytes, 2.0 * (double)t->params, 0);
			if (t->op == ZB_OP_REDUCE_SCATTER || t->op == ZB_OP_ALL_REDUCE)
				rs += t->params;
			else if (t->bucket >= 0)
				ag_bucket += t->params;
			else
				ag_unit += t->params;
		}
		assert_int_equal(adam, g->params);
		assert_int_equal(rs, g->params);
		if (zero3) {
			assert_int_equal(ag_bucket, 0);
			/* every unit twice per micro-batch (forward and backward) */
			int64_t want = 0;
			for (int u = 0; u < U; u++)
				want += 2 * zb_model_unit_params(&c->model, u);
			assert_int_equal(ag_unit, want * c->policy.gas);
		} else {
			assert_int_equal(ag_unit, 0);
			/* dpu: step s gathers step s-1's update (the last step's come at the end) */
			if (c->policy.kind != ZB_POLICY_DPU)
				assert_int_equal(ag_bucket, g->params);
		}
	}
}

static void test_graph_invariants(void **state)
{
	(void)state;
	static const char *const models[] = { "tiny-gpt", "tiny-llama" };
	static const int ranks[] = { 2, 3, 8 };
	static const double ratios[] = { 0, 0.5, 1 };
	int built = 0;
	for (int mi = 0; mi < 2; mi++)
		for (int ri = 0; ri < 3; ri++)
			for (int k = 0; k < ZB_POLICY_COUNT; k++)
				for (int q = 0; q < 3; q++)
					for (int gas = 1; gas <= 2; gas++)
						for (int z = 0; z < 4; z++) { /* stage 2, stage 3, offload_param, stage 1 */
							zb_config c;
							base(&c, models[mi], ranks[ri]);
							c.policy.kind = (zb_policy_kind)k;
							c.policy.ratio = ratios[q];
							c.policy.gas = gas;
							c.policy.zero_stage = z == 1 ? 3 : z == 3 ? 1 : 0;
							c.policy.offload_param = z == 2;
							if (z == 2 && (k == ZB_POLICY_NONE || k == ZB_POLICY_DPU))
								continue;
							zb_graph g;
							zb_error err = { 0 };
							zb_status st = zb_graph_build(&g, &c, &err);
							if (st)
								print_error("build: %s\n", err.msg);
							assert_int_equal(st, ZB_OK);
							st = zb_graph_check(&g, &err);
							if (st)
								print_error("check (%s, R %d, %s, r %g, gas %d, z %d): %s\n",
									    models[mi], ranks[ri], zb_policy_name(c.policy.kind),
									    ratios[q], gas, z, err.msg);
							assert_int_equal(st, ZB_OK);
							check_ranks(&g, &c, z == 1 || z == 2);
							zb_sim_result r;
							assert_int_equal(zb_simulate(&g, &c, &r, &err), ZB_OK);
							zb_sim_result_free(&r);
							zb_graph_free(&g);
							built++;
						}
	assert_true(built > 300);
}

/* DeepSpeed's schedule with world size: stages 2 and 3, every policy it takes. */
static void test_deepspeed_ranks(void **state)
{
	(void)state;
	int built = 0;
	for (int mi = 0; mi < 2; mi++)
		for (int R = 2; R <= 8; R *= 2)
			for (int stage = 2; stage <= 3; stage++)
				for (int k = 0; k < ZB_POLICY_DPU; k++)
					for (int op = 0; op < 2; op++) {
						zb_config c;
						base(&c, mi ? "tiny-llama" : "tiny-gpt", R);
						c.framework = ZB_FW_DEEPSPEED;
						c.policy.zero_stage = stage;
						c.policy.kind = (zb_policy_kind)k;
						c.policy.offload_param = op;
						c.policy.gas = 1 + op;
						if (op && (stage != 3 || k == ZB_POLICY_NONE))
							continue;
						zb_graph g;
						zb_error err = { 0 };
						zb_status st = zb_graph_build(&g, &c, &err);
						if (st)
							print_error("build: %s\n", err.msg);
						assert_int_equal(st, ZB_OK);
						st = zb_graph_check(&g, &err);
						if (st)
							print_error("check (R %d stage %d %s op %d): %s\n", R, stage,
								    zb_policy_name(c.policy.kind), op, err.msg);
						assert_int_equal(st, ZB_OK);
						assert_int_equal(g.ranks, R);
						int ar = 0, ag = 0, rs = 0;
						for (size_t i = 0; i < g.ntasks; i++) {
							const zb_task *t = &g.tasks[i];
							ar += t->op == ZB_OP_ALL_REDUCE;
							ag += t->op == ZB_OP_ALL_GATHER;
							rs += t->op == ZB_OP_REDUCE_SCATTER;
						}
						if (stage == 2) { /* all-reduced buckets, one all-gather a step */
							assert_true(ar > 0);
							assert_int_equal(rs, 0);
							assert_int_equal(ag, c.steps);
						} else { /* reduce-scattered buckets, every unit gathered twice */
							assert_int_equal(ar, 0);
							assert_true(rs > 0);
							assert_int_equal(ag, 2 * zb_model_units(&c.model) * c.policy.gas * c.steps);
						}
						zb_sim_result r;
						assert_int_equal(zb_simulate(&g, &c, &r, &err), ZB_OK);
						assert_true(r.busy_s[ZB_RES_COMM] > 0);
						zb_sim_result_free(&r);
						zb_graph_free(&g);
						built++;
					}
	assert_true(built >= 30);
}

/* One rank: no collective, ranks 1, and the same graph whatever the fabric says. */
static void test_one_rank_unchanged(void **state)
{
	(void)state;
	for (int k = 0; k < ZB_POLICY_COUNT; k++) {
		zb_config a, b;
		base(&a, "tiny-gpt", 1);
		a.policy.kind = (zb_policy_kind)k;
		a.policy.ratio = 0.5;
		b = a;
		memset(&b.hw.fabric, 0, sizeof b.hw.fabric); /* a machine without a fabric */
		zb_graph ga, gb;
		assert_int_equal(zb_graph_build(&ga, &a, NULL), ZB_OK);
		assert_int_equal(zb_graph_build(&gb, &b, NULL), ZB_OK);
		assert_int_equal(ga.ranks, 1);
		assert_int_equal(ga.ntasks, gb.ntasks);
		assert_int_equal(ga.ndeps, gb.ndeps);
		assert_memory_equal(ga.tasks, gb.tasks, ga.ntasks * sizeof *ga.tasks);
		for (size_t i = 0; i < ga.ntasks; i++)
			assert_int_not_equal(ga.tasks[i].resource, ZB_RES_COMM);
		zb_sim_result ra, rb;
		assert_int_equal(zb_simulate(&ga, &a, &ra, NULL), ZB_OK);
		assert_int_equal(zb_simulate(&gb, &b, &rb, NULL), ZB_OK);
		assert_true(ra.step_time_s == rb.step_time_s);
		assert_true(ra.busy_s[ZB_RES_COMM] == 0);
		zb_sim_result_free(&ra);
		zb_sim_result_free(&rb);
		zb_graph_free(&ga);
		zb_graph_free(&gb);
	}
}

/* Two ranks: without the executor profile's comm factors the collectives share
 * nothing, so their busy time per step is the sum of the formula over one step's
 * collectives. */
static void test_two_rank_comm_busy(void **state)
{
	(void)state;
	zb_config c = dgx("h200-x2", 2, 1);
	c.steps = 6;
	c.hw.gpu.exec.comm_gpu = c.hw.gpu.exec.comm_opt = 0;
	zb_graph g;
	assert_int_equal(zb_graph_build(&g, &c, NULL), ZB_OK);
	double want = 0;
	int n = 0;
	for (size_t i = 0; i < g.ntasks; i++)
		if (g.tasks[i].resource == ZB_RES_COMM && g.tasks[i].step == 3) {
			want += zb_collective_s(&c, g.tasks[i].op, g.tasks[i].bytes);
			n++;
		}
	/* gpt2-large, 25M-parameter buckets: 31 buckets, a reduce-scatter and an all-gather each */
	assert_int_equal(n, 62);
	/* by hand: 774,030,080 parameters x 2 B x 2 collectives x 1/2 / 370 GB/s + 62 x 5.7 us */
	double P = (double)zb_model_params(&c.model);
	assert_close(want, 2.0 * P * 2 * 0.5 / 370e9 + 62 * 5.7e-6, 1e-9);
	zb_sim_result r;
	assert_int_equal(zb_simulate(&g, &c, &r, NULL), ZB_OK);
	assert_close(r.work_s[ZB_RES_COMM], want, 1e-9);
	assert_close(r.busy_s[ZB_RES_COMM], want, 0.02); /* the window's edges cut a little */
	zb_sim_result_free(&r);
	zb_graph_free(&g);
}

/* With them (execprofile.h comm_gpu, comm_opt: NCCL's kernels beside the rank's own),
 * every collective takes longer, by at most 1 / the smaller factor. */
static void test_two_rank_comm_slowed(void **state)
{
	(void)state;
	zb_config c = dgx("h200-x2", 2, 1), plain;
	c.steps = 6;
	plain = c;
	plain.hw.gpu.exec.comm_gpu = plain.hw.gpu.exec.comm_opt = 0;
	assert_true(c.hw.gpu.exec.comm_gpu > 0 && c.hw.gpu.exec.comm_gpu < 1);
	zb_graph g;
	assert_int_equal(zb_graph_build(&g, &c, NULL), ZB_OK);
	zb_sim_result a, b;
	assert_int_equal(zb_simulate(&g, &plain, &a, NULL), ZB_OK);
	assert_int_equal(zb_simulate(&g, &c, &b, NULL), ZB_OK);
	double lo = c.hw.gpu.exec.comm_opt < c.hw.gpu.exec.comm_gpu ? c.hw.gpu.exec.comm_opt : c.hw.gpu.exec.comm_gpu;
	assert_true(b.busy_s[ZB_RES_COMM] > 1.05 * a.busy_s[ZB_RES_COMM]);
	assert_true(b.busy_s[ZB_RES_COMM] <= a.busy_s[ZB_RES_COMM] / lo * 1.001);
	assert_true(b.step_time_s >= a.step_time_s);
	zb_sim_result_free(&a);
	zb_sim_result_free(&b);
	zb_graph_free(&g);
}

static void test_presets_fabric(void **state)
{
	(void)state;
	zb_hw hw;
	assert_int_equal(zb_preset_hw("dgx-a100", &hw, NULL), ZB_OK);
	assert_close(hw.fabric.intra_bus_Bps, 230e9, 0);
	assert_close(hw.fabric.inter_bus_Bps, 192e9, 0);
	assert_int_equal(hw.gpus_per_link, 2);
	assert_int_equal(hw.cpu.sockets, 2);
	assert_int_equal(zb_preset_hw("dgx-h100", &hw, NULL), ZB_OK);
	assert_close(hw.fabric.intra_bus_Bps, 370e9, 0);
	assert_close(hw.fabric.inter_bus_Bps, 384e9, 0);
	assert_int_equal(zb_preset_hw("h200-x2", &hw, NULL), ZB_OK);
	assert_close(hw.fabric.intra_bus_Bps, 370e9, 0);
	assert_int_equal(hw.cpu.cores, 32);
	assert_int_equal(zb_preset_hw("h200-machine", &hw, NULL), ZB_OK);
	assert_true(hw.fabric.intra_bus_Bps == 0);
	for (int i = 0; i < zb_fabric_count(); i++) {
		zb_fabric f;
		assert_int_equal(zb_preset_fabric(zb_fabric_name(i), &f, NULL), ZB_OK);
		assert_true(f.intra_bus_Bps > 0);
	}
	zb_error e = { 0 };
	zb_fabric f;
	assert_int_equal(zb_preset_fabric("nvlink9", &f, &e), ZB_E_INPUT);
	assert_contains(e.msg, "unknown fabric 'nvlink9'");
}

/* Ranks share the node: threads and the DRAM share follow the larger of --gpus and
 * gpus_per_cpu; two ranks behind a DGX PCIe switch halve its uplink. */
static void test_host_shares(void **state)
{
	(void)state;
	zb_config c = dgx("dgx-h100", 1, 1);
	c.hw.gpus_per_cpu = 1;
	assert_int_equal(zb_config_cpu_threads(&c), 112);
	c.policy.gpus = 4;
	assert_int_equal(zb_config_cpu_threads(&c), 28);
	c.hw.gpus_per_cpu = 8;
	assert_int_equal(zb_config_cpu_threads(&c), 14);
}

static zb_test_result run(const char *args) { return zb_test_run(zbench, tmpdir, args); }

static void test_sweep_dgx(void **state)
{
	(void)state;
	zb_test_result r = run("sweep --hw dgx-h100 --gpus 8 --ratio 0:1:0.5 --no-db");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "job_tok/s");
	assert_contains(r.out, "comm");
	assert_contains(r.out, "node_dram");
	int rows = 0;
	for (const char *p = r.out; (p = strstr(p, "\ngpt2-large ")); p++)
		rows++;
	assert_int_equal(rows, 3);
	zb_test_result_free(&r);
	r = run("sweep --hw dgx-a100,dgx-h100 --gpus 1,2,8 --nodes 1,2 --policy overlap --ratio 1 --no-db --csv");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "gpus,nodes,job_tokens_per_s"); /* snake_case, the unit in the name */
	zb_test_result_free(&r);
	r = run("predict --hw dgx-h100 --gpus 8 --no-db");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "ranks                   8");
	assert_contains(r.out, "comm ");
	zb_test_result_free(&r);
	/* one GPU: the table it always had, no comm row */
	r = run("predict --hw dgx-h100 --no-db");
	assert_int_equal(r.rc, 0);
	assert_null(strstr(r.out, "\ncomm "));
	assert_null(strstr(r.out, "ranks "));
	zb_test_result_free(&r);
}

static void test_bad_flags(void **state)
{
	(void)state;
	static const struct {
		const char *args, *want;
	} cases[] = {
		{ "predict --gpus 0 --no-db", "--gpus 0 must be positive" },
		{ "predict --gpus two --no-db", "invalid value 'two' for --gpus" },
		{ "predict --nodes -1 --no-db", "--nodes -1 must be positive" },
		{ "predict --gpus 4096 --no-db", "--gpus 4096 exceeds the limit" },
		{ "predict --gpus 2 --no-db", "--gpus 2: machine 'h200-machine' has no fabric" },
		{ "predict --hw h200-x2 --gpus 2 --nodes 2 --no-db", "--nodes 2: machine 'h200-x2' has no network" },
		{ "sweep --hw dgx-h100 --gpus 1,0 --no-db", "--gpus 0 must be positive" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		zb_test_result r = run(cases[i].args);
		if (r.rc != 2)
			print_error("%s: exit %d, stderr %s\n", cases[i].args, r.rc, r.err);
		assert_int_equal(r.rc, 2);
		assert_contains(r.err, cases[i].want);
		assert_null(strchr(strchr(r.err, '\n') ? strchr(r.err, '\n') + 1 : "", '\n')); /* one line */
		zb_test_result_free(&r);
	}
}

static void test_hwfile_fabric(void **state)
{
	(void)state;
	char path[400], args[600];
	/* a saved machine (calibrate's output) keeps its fabric exactly; one without none */
	zb_hw hw, back;
	snprintf(path, sizeof path, "%s/saved.json", tmpdir);
	assert_int_equal(zb_preset_hw("dgx-h100", &hw, NULL), ZB_OK);
	assert_int_equal(zb_hw_save(path, &hw, NULL), ZB_OK);
	assert_int_equal(zb_hw_load(path, &back, NULL), ZB_OK);
	assert_memory_equal(&hw.fabric, &back.fabric, sizeof hw.fabric);
	assert_int_equal(zb_preset_hw("h200-machine", &hw, NULL), ZB_OK);
	assert_int_equal(zb_hw_save(path, &hw, NULL), ZB_OK);
	char *text = zb_test_slurp(path, NULL);
	assert_null(strstr(text, "fabric"));
	free(text);
	snprintf(path, sizeof path, "%s/fab.json", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"preset\": \"h200-machine\", \"fabric\": {\"preset\": \"nvlink-h200\", \"intra_bus_Bps\": 3e11}}\n");
	fclose(f);
	snprintf(args, sizeof args, "predict --hw %s --gpus 2 --json --no-db", path);
	zb_test_result r = run(args);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "\"comm_busbw_Bps\": 3e11");
	zb_test_result_free(&r);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"preset\": \"h200-machine\", \"fabric\": {\"intra_bus_Bps\": -1}}\n");
	fclose(f);
	snprintf(args, sizeof args, "predict --hw %s --no-db", path);
	r = run(args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "fabric.intra_bus_Bps");
	zb_test_result_free(&r);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"preset\": \"h200-machine\", \"fabric\": \"nvlink9\"}\n");
	fclose(f);
	r = run(args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "unknown fabric 'nvlink9'");
	zb_test_result_free(&r);
}

/* zbench plot scaling over a strong-scaling sweep: a PNG, and a one-line error for a
 * sweep without several GPU counts. */
static void test_plot_scaling(void **state)
{
	(void)state;
	char args[900], png[400];
	snprintf(args, sizeof args,
		 "sweep --hw dgx-h100 --gpus-per-cpu 1 --cores 32 --gpus 1,2,4 --gas 4,2,1 --model gpt2 --micro-batch 1 --seq 256 "
		 "--policy overlap --ratio 1 --steps 4 --db %s/s.db",
		 tmpdir);
	zb_test_result r = run(args);
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		print_message("skipped: gnuplot not installed\n");
	} else {
		snprintf(png, sizeof png, "%s/scaling.png", tmpdir);
		snprintf(args, sizeof args, "plot scaling --db %s/s.db -o %s", tmpdir, png);
		r = run(args);
		assert_int_equal(r.rc, 0);
		assert_contains(r.out, "fixed global batch");
		assert_int_equal(access(png, F_OK), 0);
		zb_test_result_free(&r);
	}
	snprintf(args, sizeof args, "sweep --ratio 0,1 --policy overlap --model gpt2 --steps 4 --db %s/t.db", tmpdir);
	r = run(args);
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	snprintf(args, sizeof args, "plot scaling --db %s/t.db -o %s/x.png", tmpdir, tmpdir);
	r = run(args);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "needs a sweep over --gpus");
	zb_test_result_free(&r);
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
		cmocka_unit_test(test_collective_times),   cmocka_unit_test(test_graph_invariants),
		cmocka_unit_test(test_one_rank_unchanged), cmocka_unit_test(test_two_rank_comm_busy),
		cmocka_unit_test(test_presets_fabric),     cmocka_unit_test(test_host_shares),
		cmocka_unit_test(test_sweep_dgx),          cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_hwfile_fabric),      cmocka_unit_test(test_deepspeed_ranks),
		cmocka_unit_test(test_plot_scaling),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
