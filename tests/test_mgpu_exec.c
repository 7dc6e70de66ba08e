/*
 * test_mgpu_exec.c - the executor's side of several GPUs that needs no
 * GPU: the NCCL loader's one-line error when the library is missing (and that it
 * turns NVLink multicast off), the shard and padding arithmetic of exec/shard.h
 * over many sizes, the nccl-tests bus factors and the ring fit of
 * exec/nccl_bench.h, and the flag errors of `zbench run --gpus`.
 */
#include "tests/harness.h"

#include <unistd.h>

#include "core/graph.h"
#include "exec/nccl_bench.h"
#include "exec/nccl_dl.h"
#include "exec/shard.h"
#include "inputs/presets.h"
#include "peers/peer.h"
#include "results/merge.h"
#include "results/store.h"
#include "results/store_ranks.h"

static const char *zbench;
static char tmpdir[256];

static void test_nccl_missing(void **state)
{
	(void)state;
	setenv("ZB_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
	unsetenv("NCCL_NVLS_ENABLE");
	zb_error err = { 0 };
	assert_int_equal(zb_nccl_load(&err), ZB_E_NOGPU);
	assert_true(strncmp(err.msg, "NCCL not found: ", 16) == 0);
	assert_contains(err.msg, "/nonexistent/libnccl.so.2");
	assert_contains(err.msg, "set LD_LIBRARY_PATH");
	assert_null(strchr(err.msg, '\n'));
	/* asked again: the same answer (loaded once per process) */
	zb_error again = { 0 };
	assert_int_equal(zb_nccl_load(&again), ZB_E_NOGPU);
	assert_string_equal(again.msg, err.msg);
	assert_int_equal(zb_nccl_version(), 0);
	/* multicast off before NCCL could read its environment */
	assert_non_null(getenv("NCCL_NVLS_ENABLE"));
	assert_string_equal(getenv("NCCL_NVLS_ENABLE"), "0");
}

/* Hand-checked cases, then every (params, ranks) of a grid: the shards tile the
 * range in rank order, each has at most S elements, only the tail ones are short. */
static void test_shards(void **state)
{
	(void)state;
	int64_t off, n;
	zb_shard_range(100, 10, 4, 0, &off, &n); /* S = 3 */
	assert_true(off == 100 && n == 3);
	zb_shard_range(100, 10, 4, 3, &off, &n);
	assert_true(off == 109 && n == 1);
	zb_shard_range(100, 5, 4, 2, &off, &n); /* S = 2: [104, 105) */
	assert_true(off == 104 && n == 1);
	zb_shard_range(100, 5, 4, 3, &off, &n); /* empty, at the range's end */
	assert_true(off == 105 && n == 0);
	zb_shard_range(7, 9, 1, 0, &off, &n); /* one rank: the whole range */
	assert_true(off == 7 && n == 9);
	for (int64_t P = 0; P < 300; P += 7)
		for (int R = 1; R <= 9; R++) {
			int64_t S = zb_shard_params(P, R), next = 50;
			for (int r = 0; r < R; r++) {
				zb_shard_range(50, P, R, r, &off, &n);
				assert_true(off == next);
				assert_true(n >= 0 && n <= S);
				next = off + n;
			}
			assert_true(next == 50 + P);
			zb_collective_layout l = zb_collective_layout_of(P, R);
			assert_true(l.shard == S && l.padded == S * R && l.padded >= P);
			assert_true(l.padded - P < R);   /* the room exec_allocate leaves past the vector */
			assert_int_equal(l.staged, l.padded != P);
		}
	zb_collective_layout l = zb_collective_layout_of(1001, 2);
	assert_true(l.shard == 501 && l.padded == 1002 && l.staged);
	l = zb_collective_layout_of(1000, 2);
	assert_true(l.shard == 500 && !l.staged);
}

/* The fit recovers the bus bandwidth and per-step latency of times made by the ring
 * model itself, with 1% noise; bus factors are nccl-tests'. */
static void test_nccl_fit(void **state)
{
	(void)state;
	assert_close(zb_nccl_bus_factor(ZB_OP_ALL_REDUCE, 8), 1.75, 1e-12);
	assert_close(zb_nccl_bus_factor(ZB_OP_REDUCE_SCATTER, 8), 0.875, 1e-12);
	assert_close(zb_nccl_bus_factor(ZB_OP_ALL_GATHER, 2), 0.5, 1e-12);
	assert_int_equal(zb_nccl_ring_steps(ZB_OP_ALL_REDUCE, 4), 6);
	assert_int_equal(zb_nccl_ring_steps(ZB_OP_ALL_GATHER, 4), 3);
	const double bus = 360e9, lat = 6e-6;
	zb_nccl_point p[20];
	int n = 0;
	for (double s = 65536; s <= 1 << 30; s *= 4)
		for (int op = 0; op < 2; op++) {
			int o = op ? ZB_OP_ALL_GATHER : ZB_OP_REDUCE_SCATTER;
			double t = s * zb_nccl_bus_factor(o, 2) / bus + zb_nccl_ring_steps(o, 2) * lat;
			p[n] = (zb_nccl_point){ .op = o, .bytes = s, .time_s = t * (n % 2 ? 1.01 : 0.99) };
			n++;
		}
	double b, l, rms;
	zb_error err = { 0 };
	assert_int_equal(zb_nccl_fit(p, n, 2, &b, &l, &rms, &err), ZB_OK);
	assert_close(b, bus, 0.02);
	assert_close(l, lat, 0.05);
	assert_true(rms < 0.02);
	assert_int_equal(zb_nccl_fit(p, 1, 2, &b, &l, &rms, &err), ZB_E_INPUT);
	assert_contains(err.msg, "two or more");
}

/* The DeepSpeed harness gets --world-size with several GPUs (it starts one process
 * per GPU itself); several nodes and plain PyTorch on several GPUs are refused. */
static void test_peer_world_size(void **state)
{
	(void)state;
	zb_config c;
	zb_error err = { 0 };
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw("h200-x2", &c.hw, &err), ZB_OK);
	assert_int_equal(zb_preset_model("gpt-2.5b", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.gpus = 2;
	zb_peer_cmd cmd = { .python = "python3", .harness = "peers/ds_step.py", .ds_config = "peers/configs/s2-off.json",
			    .steps = 8, .timeout_s = 60 };
	char **argv = NULL;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	int found = 0;
	for (char **a = argv; *a; a++)
		if (!strcmp(*a, "--world-size") && a[1] && !strcmp(a[1], "2"))
			found = 1;
	assert_true(found);
	zb_peer_argv_free(argv);
	c.policy.nodes = 2;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "--nodes 2");
	c.policy.nodes = 1;
	cmd.ds_config = NULL;
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_E_INPUT);
	assert_contains(err.msg, "plain PyTorch runs one GPU");
	c.policy.gpus = 1; /* one GPU: the command line of before */
	assert_int_equal(zb_peer_argv(&cmd, &c, &argv, &err), ZB_OK);
	for (char **a = argv; *a; a++)
		assert_string_not_equal(*a, "--world-size");
	zb_peer_argv_free(argv);
}

/* Every rank's summary and timeline in ranks and rank_events (tasks not run get no
 * row), and zbench merge carries them with the configuration ids remapped. */
static void test_store_ranks(void **state)
{
	(void)state;
	char a[400], b[400];
	snprintf(a, sizeof a, "%s/ranks-a.db", tmpdir);
	snprintf(b, sizeof b, "%s/ranks-b.db", tmpdir);
	zb_error err = { 0 };
	zb_config c;
	memset(&c, 0, sizeof c);
	assert_int_equal(zb_preset_hw("h200-x2", &c.hw, &err), ZB_OK);
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	zb_policy_defaults(&c.policy);
	c.policy.gpus = 2;
	c.steps = 1;
	zb_graph g;
	memset(&g, 0, sizeof g);
	g.ntasks = 3;
	double s0[] = { 0, 1e-3, -1 }, e0[] = { 1e-3, 2e-3, -1 }, s1[] = { 0, 1.5e-3, 3e-3 }, e1[] = { 1e-3, 3e-3, 4e-3 };
	zb_rank_row rows[2] = {
		{ .rank = 0, .device = "NVIDIA H200", .cpu_threads = 16, .step_time_s = 2e-3, .start = s0, .end = e0 },
		{ .rank = 1, .device = "NVIDIA H200", .cpu_threads = 16, .t0_offset_ns = 1234, .step_time_s = 4e-3,
		  .slowest = 1, .start = s1, .end = e1 },
	};
	rows[1].busy_s[ZB_RES_COMM] = 5e-4;
	const char *paths[] = { a, b };
	for (int i = 0; i < 2; i++) {
		zb_store *s = NULL;
		int64_t run_id, config_id;
		zb_run_info info = { .kind = "run", .command = "zbench run --gpus 2" };
		assert_int_equal(zb_store_open(&s, paths[i], 1000, &err), ZB_OK);
		assert_int_equal(zb_store_add_run(s, &info, &run_id, &err), ZB_OK);
		assert_int_equal(zb_store_add_config(s, run_id, &c, NULL, &config_id, &err), ZB_OK);
		if (zb_store_add_ranks(s, config_id, &g, rows, 2, &err))
			fail_msg("%s", err.msg);
		int64_t n = 0;
		assert_int_equal(zb_store_count(s, "ranks", &n, &err), ZB_OK);
		assert_int_equal(n, 2);
		assert_int_equal(zb_store_count(s, "rank_events", &n, &err), ZB_OK);
		assert_int_equal(n, 5); /* rank 0's third task did not run */
		assert_int_equal(zb_store_finish_run(s, run_id, "ok", &err), ZB_OK); /* merge takes finished runs */
		if (i == 1) { /* the first database merged into the second */
			assert_int_equal(zb_store_merge(s, paths, 1, NULL, &err), ZB_OK);
			assert_int_equal(zb_store_count(s, "rank_events", &n, &err), ZB_OK);
			assert_int_equal(n, 10);
			assert_int_equal(zb_store_count(s, "ranks", &n, &err), ZB_OK);
			assert_int_equal(n, 4);
		}
		zb_store_close(s);
	}
}

static zb_test_result run(const char *args) { return zb_test_run(zbench, tmpdir, args); }

static void test_run_flags(void **state)
{
	(void)state;
	static const struct {
		const char *args, *want;
	} cases[] = {
		{ "run --hw h200-x2 --gpus 2 --check --no-db", "--check runs one GPU, not --gpus 2" },
		{ "run --hw h200-x2 --gpus 2 --trace --no-db", "--trace runs one GPU, not --gpus 2" },
		{ "run --hw dgx-h100 --gpus 8 --nodes 2 --no-db", "--nodes 2: run executes on the GPUs of this node" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		zb_test_result r = run(cases[i].args);
		assert_int_equal(r.rc, 2);
		assert_contains(r.err, cases[i].want);
		assert_null(strchr(strchr(r.err, '\n') ? strchr(r.err, '\n') + 1 : "", '\n')); /* one line */
		zb_test_result_free(&r);
	}
	/* the NCCL case of bench is listed, waived here */
	zb_test_result r = run("bench --list --filter nccl");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "nccl");
	assert_contains(r.out, "waived");
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
		cmocka_unit_test(test_nccl_missing),
		cmocka_unit_test(test_shards),
		cmocka_unit_test(test_nccl_fit),
		cmocka_unit_test(test_run_flags),
		cmocka_unit_test(test_peer_world_size),
		cmocka_unit_test(test_store_ranks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
