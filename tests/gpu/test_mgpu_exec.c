/*
 * test_mgpu_exec.c - several GPUs in the executor (exec/ranks_cuda.c), on 2 GPUs or
 * more (make test-gpu on the 2-GPU machine):
 *   - the collectives the executor issues, with real data against a reference
 *     computed on the host: reduce-scatter (averaged) of a bucket that divides by
 *     the ranks and of one whose padding reaches past it (staged through scratch),
 *     all-gather of both, all-reduce; the element after a padded range is left
 *     untouched on every rank. Tolerance: the averages exact to one bf16 rounding
 *     (relative 2^-8); all-gathered values and untouched elements bit-exact.
 *   - whole runs of zbench's schedule on 2 ranks (ZeRO-2: none, offload, overlap,
 *     Twin-Flow 0.5, dpu; ZeRO-1 all-reduce; ZeRO-3 per-layer gathers): every task of every rank has an
 *     interval that respects the graph's dependencies, the collectives took time,
 *     and after the last step the ranks' 16-bit parameters are identical (digest)
 *     where the schedule all-gathers every update (not dpu, not ZeRO-3).
 * Without a GPU: "skipped: no GPU"; with one: "skipped: needs 2 GPUs".
 */
#include "tests/harness.h"

#include <pthread.h>

#include "core/graph.h"
#include "exec/cpu_adam.h"
#include "exec/cuda_check.h"
#include "exec/exec_cuda.h"
#include "exec/executor.h"
#include "exec/kernels.h"
#include "exec/nccl_dl.h"
#include "inputs/presets.h"

#define NR 2
#define NPARAMS 3001 /* buckets [0,1000) [1000,2001) [2001,3001) */

static int g_ok, g_require;
static char g_why[512];

#define NEED_2GPU()                                                                  \
	do {                                                                         \
		if (!g_ok) {                                                         \
			if (g_require)                                               \
				fail_msg("ZB_REQUIRE_GPU=1: %s", g_why);             \
			skip();                                                      \
		}                                                                    \
	} while (0)

/* ---- the collectives with host reference ---------------------------------------- */

typedef struct rank_io {
	int rank;
	ncclUniqueId id;
	uint16_t grads[NPARAMS + NR], params[NPARAMS + NR]; /* in: initial; out: after the collectives */
	zb_error err;
	zb_status st;
} rank_io;

static float grad_value(int rank, int i) { return (float)(((i * 7 + rank * 13) % 33) - 16) * 0.125f; }
static float param_value(int rank, int i) { return (float)((i * 5 + rank * 11) % 64) * 0.0625f - 2.0f; }

static zb_task coll(int op, int64_t off, int64_t n)
{
	zb_task t = zb_task_blank(ZB_TASK_COLLECTIVE, ZB_RES_COMM, op, ZB_PASS_OPT, 0, -1, -1);
	t.param_offset = off;
	t.params = n;
	t.bytes = 2.0 * n;
	return t;
}

static zb_status rank_collectives(rank_io *io)
{
	zb_error *err = &io->err;
	exec x;
	memset(&x, 0, sizeof x);
	x.rank = io->rank, x.nranks = NR, x.device = io->rank, x.P = NPARAMS;
	x.adam.grad_type = ZB_HALF_BF16;
	dispatcher dp = { .x = &x, .resource = ZB_RES_COMM };
	ZB_CUDA_TRY(err, cudaSetDevice(io->rank));
	ZB_CUDA_TRY(err, cudaStreamCreateWithFlags(&dp.stream, cudaStreamNonBlocking));
	ZB_CUDA_MALLOC(err, (void **)&x.grads16, sizeof io->grads);
	ZB_CUDA_MALLOC(err, (void **)&x.params16, sizeof io->params);
	ZB_CUDA_MALLOC(err, (void **)&x.coll_scratch, 2 * 1002);
	ZB_CUDA_TRY(err, cudaMemcpy(x.grads16, io->grads, sizeof io->grads, cudaMemcpyHostToDevice));
	ZB_CUDA_TRY(err, cudaMemcpy(x.params16, io->params, sizeof io->params, cudaMemcpyHostToDevice));
	ncclComm_t comm;
	ZB_NCCL_TRY(err, zb_nccl()->CommInitRank(&comm, NR, io->id, io->rank));
	x.comm = comm;
	zb_task ts[] = { coll(ZB_OP_REDUCE_SCATTER, 0, 1000), coll(ZB_OP_REDUCE_SCATTER, 1000, 1001),
			 coll(ZB_OP_ALL_GATHER, 0, 1000),     coll(ZB_OP_ALL_GATHER, 1000, 1001),
			 coll(ZB_OP_ALL_REDUCE, 2001, 1000) };
	zb_status st = ZB_OK;
	for (size_t i = 0; i < sizeof ts / sizeof ts[0] && !st; i++)
		st = exec_run_collective(&dp, &ts[i]);
	if (st)
		*err = dp.err;
	if (!st && cudaStreamSynchronize(dp.stream) != cudaSuccess)
		st = zb_fail(err, ZB_E_CUDA, "the collectives failed on rank %d", io->rank);
	if (!st && (cudaMemcpy(io->grads, x.grads16, sizeof io->grads, cudaMemcpyDeviceToHost) != cudaSuccess ||
		    cudaMemcpy(io->params, x.params16, sizeof io->params, cudaMemcpyDeviceToHost) != cudaSuccess))
		st = zb_fail(err, ZB_E_CUDA, "reading rank %d's results failed", io->rank);
	zb_nccl()->CommDestroy(comm);
	cudaFree(x.grads16);
	cudaFree(x.params16);
	cudaFree(x.coll_scratch);
	cudaStreamDestroy(dp.stream);
	return st;
}

static void *rank_main(void *p)
{
	rank_io *io = p;
	io->st = rank_collectives(io);
	return NULL;
}

static void expect_avg(const rank_io *io, int r, int i)
{
	float want = 0;
	for (int k = 0; k < NR; k++)
		want += grad_value(k, i);
	want /= NR;
	float got = zb_bf16_to_f32(io[r].grads[i]);
	if (fabsf(got - want) > fabsf(want) * (1.0f / 256) + 1e-6f)
		fail_msg("rank %d element %d: %g, the average is %g", r, i, got, want);
}

static void test_collectives_reference(void **state)
{
	(void)state;
	NEED_2GPU();
	static rank_io io[NR];
	ncclUniqueId id;
	assert_int_equal(zb_nccl()->GetUniqueId(&id), ncclSuccess);
	for (int r = 0; r < NR; r++) {
		io[r].rank = r, io[r].id = id;
		for (int i = 0; i < NPARAMS + NR; i++) {
			io[r].grads[i] = zb_f32_to_bf16(grad_value(r, i));
			io[r].params[i] = zb_f32_to_bf16(param_value(r, i));
		}
	}
	pthread_t th[NR];
	for (int r = 0; r < NR; r++)
		assert_int_equal(pthread_create(&th[r], NULL, rank_main, &io[r]), 0);
	for (int r = 0; r < NR; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < NR; r++)
		if (io[r].st)
			fail_msg("rank %d: %s", r, io[r].err.msg);
	for (int r = 0; r < NR; r++) {
		/* reduce-scatter: this rank's shard of each bucket is the average */
		for (int i = r * 500; i < (r + 1) * 500; i++)
			expect_avg(io, r, i);
		for (int i = 1000 + r * 501; i < 1000 + (r + 1) * 501 && i < 2001; i++)
			expect_avg(io, r, i);
		/* all-reduce: the average everywhere */
		for (int i = 2001; i < 3001; i++)
			expect_avg(io, r, i);
		/* all-gather: every shard from its owner, bit-exact */
		for (int i = 0; i < 2001; i++) {
			int owner = i < 1000 ? i / 500 : (i - 1000) / 501;
			uint16_t want = zb_f32_to_bf16(param_value(owner, i));
			if (io[r].params[i] != want)
				fail_msg("rank %d parameter %d: 0x%04x, rank %d's is 0x%04x", r, i, io[r].params[i], owner,
					 want);
		}
		/* the element after the padded bucket: untouched by the reduce-scatter and
		 * the all-gather of [1000, 2001) (only the all-reduce averaged it) */
		assert_int_equal(io[r].params[2001], zb_f32_to_bf16(param_value(r, 2001)));
		assert_int_equal(io[r].params[NPARAMS], zb_f32_to_bf16(param_value(r, NPARAMS)));
	}
}

/* ---- whole runs ------------------------------------------------------------------- */

static void config(zb_config *c, const char *policy, double ratio, int stage)
{
	zb_error err;
	memset(c, 0, sizeof *c);
	assert_int_equal(zb_preset_hw("h200-x2", &c->hw, &err), ZB_OK);
	assert_int_equal(zb_preset_model("gpt2", &c->model, &err), ZB_OK);
	c->model.layers = 4;
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_policy_parse(policy, &c->policy.kind, &err), ZB_OK);
	c->policy.ratio = ratio;
	c->policy.micro_batch = 2;
	c->policy.seq = 256;
	c->policy.bucket_params = 3000001; /* several buckets, odd: padded collectives */
	c->policy.cpu_threads = 4;
	c->policy.gpus = NR;
	c->policy.zero_stage = stage;
	c->steps = 4;
}

static void run_ranks(const char *policy, double ratio, int stage)
{
	zb_config c;
	config(&c, policy, ratio, stage);
	zb_graph g;
	zb_error err = { 0 };
	if (zb_graph_build(&g, &c, &err))
		fail_msg("graph: %s", err.msg);
	assert_int_equal(g.ranks, NR);
	size_t ncoll = 0;
	for (size_t i = 0; i < g.ntasks; i++)
		ncoll += g.tasks[i].kind == ZB_TASK_COLLECTIVE;
	assert_true(ncoll > 0);
	zb_exec_options o = { .quiet = 1, .seed = 5 };
	zb_exec_result r[NR];
	if (zb_execute_ranks(&g, &c, &o, r, &err))
		fail_msg("%s ratio %.2f zero%d: %s", policy, ratio, stage, err.msg);
	for (int k = 0; k < NR; k++) {
		assert_int_equal(r[k].steps_done, g.steps);
		assert_true(r[k].step_time_s > 0 && r[k].busy_s[ZB_RES_COMM] > 0);
		for (size_t i = 0; i < g.ntasks; i++) {
			const zb_task *t = &g.tasks[i];
			if (r[k].start[i] < 0 || r[k].end[i] < r[k].start[i])
				fail_msg("rank %d task %zu (%s) has interval [%g, %g]", k, i, zb_op_name(t->op),
					 r[k].start[i], r[k].end[i]);
			const uint32_t *d = zb_task_deps(&g, t);
			for (uint32_t j = 0; j < t->dep_count; j++)
				if (r[k].start[i] + 20e-6 < r[k].end[d[j]])
					fail_msg("rank %d task %zu (%s) started before its dependency %u ended", k, i,
						 zb_op_name(t->op), d[j]);
		}
	}
	print_message("%s ratio %.2f zero%d: step %.2f / %.2f ms, comm busy %.2f ms, digests %016llx %016llx\n",
		      policy, ratio, stage, r[0].step_time_s * 1e3, r[1].step_time_s * 1e3,
		      r[0].busy_s[ZB_RES_COMM] * 1e3, (unsigned long long)r[0].params_digest,
		      (unsigned long long)r[1].params_digest);
	if (stage != 3 && strcmp(policy, "dpu") != 0)
		assert_true(r[0].params_digest == r[1].params_digest);
	for (int k = 0; k < NR; k++)
		zb_exec_result_free(&r[k]);
	zb_graph_free(&g);
}

static void test_runs_zero2(void **state)
{
	(void)state;
	NEED_2GPU();
	run_ranks("none", 0, 2);
	run_ranks("offload", 1, 2);
	run_ranks("overlap", 1, 2);
	run_ranks("overlap", 0.5, 2);
	run_ranks("dpu", 1, 2);
	run_ranks("overlap", 1, 1); /* ZeRO-1: buckets all-reduced */
}

static void test_runs_zero3(void **state)
{
	(void)state;
	NEED_2GPU();
	run_ranks("overlap", 1, 3);
}

int main(void)
{
	zb_error err = { 0 };
	g_require = getenv("ZB_REQUIRE_GPU") && !strcmp(getenv("ZB_REQUIRE_GPU"), "1");
	int n = 0;
	if (!zb_exec_available(&err)) {
		snprintf(g_why, sizeof g_why, "no GPU (%.480s)", err.msg);
		printf("skipped: %s\n", g_why);
	} else if (cudaGetDeviceCount(&n) != cudaSuccess || n < NR) {
		snprintf(g_why, sizeof g_why, "needs 2 GPUs (%d present)", n);
		printf("skipped: %s\n", g_why);
		g_require = 0; /* one GPU is a machine without the case, not a failure */
	} else if (zb_nccl_load(&err)) {
		snprintf(g_why, sizeof g_why, "%.500s", err.msg);
		printf("skipped: %s\n", g_why);
	} else {
		g_ok = 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collectives_reference),
		cmocka_unit_test(test_runs_zero2),
		cmocka_unit_test(test_runs_zero3),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
