/*
 * test_fidelity.c - the pieces of the executor's fidelity that need no GPU: the paced copy's chunk
 * and release plan (exec/pacing.h), the flash and eager attention schedules and
 * their simulation (core/attention.h), and --link-rate capping the simulated link.
 */
#include "tests/harness.h"

#include "exec/pacing.h"
#include "core/attention.h"
#include "sim/kernels.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "core/model.h"
#include "sim/predict.h"
#include "inputs/presets.h"
#include "sim/resources.h"

/* ---- pacing plan ------------------------------------------------------------------ */

/* Chunks tile the copy, releases never decrease, chunk k ends at (bytes up to k) / R
 * when it runs at the native rate, and the whole copy takes bytes / R. */
static void check_plan(size_t bytes, double rate, double native, size_t chunk)
{
	zb_pace_plan p;
	zb_error e;
	assert_int_equal(zb_pace_plan_make(bytes, rate, native, chunk, &p, &e), ZB_OK);
	size_t sum = 0;
	double prev = 0;
	for (int64_t k = 0; k < p.chunks; k++) {
		size_t n = zb_pace_chunk_size(&p, k);
		assert_true(n > 0 || bytes == 0);
		assert_true(n <= p.chunk_bytes);
		sum += n;
		double r = zb_pace_release_s(&p, k);
		assert_true(r >= prev - 1e-15);
		assert_true(r >= 0);
		prev = r;
		if (p.paced) /* chunk k ends on the slow link's schedule */
			assert_close(r + (double)n / native, (double)sum / rate, 1e-12);
	}
	assert_int_equal(sum, bytes);
	assert_int_equal(zb_pace_chunk_size(&p, p.chunks), 0);
	if (bytes > 0) {
		double want = (double)bytes / (rate < native ? rate : native);
		assert_close(zb_pace_end_s(&p), want, 1e-12);
		/* the achieved rate of the whole copy is the asked one */
		assert_close((double)bytes / zb_pace_end_s(&p), rate < native ? rate : native, 1e-12);
	}
}

static void test_pace_plan(void **state)
{
	(void)state;
	/* gen4-like 25 GB/s on a 53 GB/s link, a 50 MB gradient bucket in 4 MiB chunks */
	check_plan(50000000, 25e9, 53e9, ZB_PACE_CHUNK_BYTES);
	/* gen3 12 GB/s; a copy smaller than one chunk; an exact multiple of the chunk */
	check_plan(1000000, 12e9, 53e9, ZB_PACE_CHUNK_BYTES);
	check_plan((size_t)8 * ZB_PACE_CHUNK_BYTES, 12e9, 53e9, ZB_PACE_CHUNK_BYTES);
	check_plan(1, 1e9, 53e9, ZB_PACE_CHUNK_BYTES);
	/* rate at or above native: one plain copy */
	zb_pace_plan p;
	zb_error e;
	assert_int_equal(zb_pace_plan_make(50000000, 60e9, 53e9, ZB_PACE_CHUNK_BYTES, &p, &e), ZB_OK);
	assert_int_equal(p.paced, 0);
	assert_int_equal(p.chunks, 1);
	assert_close(zb_pace_release_s(&p, 0), 0, 0);
	check_plan(50000000, 60e9, 53e9, ZB_PACE_CHUNK_BYTES);
	/* figures by hand: 8 MiB at 4 GiB/s... R = 2^32 B/s, N = 2^33 B/s, chunks of 4 MiB:
	 * chunk 0 released at 4 MiB / R - 4 MiB / N = 1/1024 - 1/2048 s, chunk 1 at
	 * 8 MiB / R - 4 MiB / N = 2/1024 - 1/2048 s; the copy ends at 2/1024 s */
	assert_int_equal(zb_pace_plan_make((size_t)8 << 20, 4294967296.0, 8589934592.0, (size_t)4 << 20, &p, &e), ZB_OK);
	assert_int_equal(p.chunks, 2);
	assert_close(zb_pace_release_s(&p, 0), 1.0 / 2048, 1e-15);
	assert_close(zb_pace_release_s(&p, 1), 3.0 / 2048, 1e-15);
	assert_close(zb_pace_end_s(&p), 2.0 / 1024, 1e-15);
	/* bad numbers name the value */
	assert_int_equal(zb_pace_plan_make(10, 0, 53e9, 4096, &p, &e), ZB_E_INPUT);
	assert_contains(e.msg, "rate 0");
	assert_int_equal(zb_pace_plan_make(10, 1e9, -1, 4096, &p, &e), ZB_E_INPUT);
	assert_contains(e.msg, "native rate -1");
	assert_int_equal(zb_pace_plan_make(10, 1e9, 1e10, 0, &p, &e), ZB_E_INPUT);
	assert_contains(e.msg, "chunk size 0");
}

/* ---- attention ------------------------------------------------------------------- */

static void config_of(zb_config *c, const char *model, int attention)
{
	zb_error e;
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_exec_profile_h200(&c->hw.gpu.exec); /* the executor's fit, named (a preset carries none) */
	zb_policy_defaults(&c->policy);
	assert_int_equal(zb_preset_model(model, &c->model, &e), ZB_OK);
	c->policy.kind = ZB_POLICY_NONE;
	c->policy.micro_batch = 4;
	c->policy.seq = 2048;
	c->policy.attention = attention;
	c->steps = 4;
}

static void count_ops(const zb_graph *g, int counts[ZB_OP_COUNT])
{
	memset(counts, 0, sizeof(int) * ZB_OP_COUNT);
	for (size_t i = 0; i < g->ntasks; i++)
		counts[g->tasks[i].op]++;
}

static void test_flash_schedule(void **state)
{
	(void)state;
	zb_config c;
	zb_graph g;
	zb_error e;
	int n[ZB_OP_COUNT];
	config_of(&c, "gpt-2.5b", ZB_ATTN_FLASH);
	assert_true(zb_attention_flash_ok(&c.model)); /* head dim 80 */
	memset(&g, 0, sizeof g);
	assert_int_equal(zb_graph_build(&g, &c, &e), ZB_OK);
	assert_int_equal(zb_graph_check(&g, &e), ZB_OK);
	count_ops(&g, n);
	/* one fused task per block and pass; no score GEMMs, no softmax */
	assert_int_equal(n[ZB_OP_ATTN], 2 * c.model.layers * c.steps);
	assert_int_equal(n[ZB_OP_SCORES] + n[ZB_OP_CONTEXT] + n[ZB_OP_SOFTMAX], 0);
	double s = 2048, pairs = s * (s + 1) / 2, bhd = 4.0 * 32 * 80;
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		if (t->op != ZB_OP_ATTN)
			continue;
		assert_int_equal(t->kind, ZB_TASK_GEMM);
		assert_int_equal(t->resource, ZB_RES_GPU);
		assert_close(t->flops, (t->pass == ZB_PASS_BWD_DATA ? 10 : 4) * bhd * pairs, 1e-12);
		/* no S or P matrix in HBM: traffic is a few times Q, K, V, O */
		assert_true(t->bytes < 8.0 * 4 * 2048 * 3 * 2560 * 2);
		/* timed as attention FLOPs at the fused efficiency (or bounded by memory) */
		double want = t->flops / (zb_config_gpu_flops(&c) * zb_flash_efficiency(&c.hw.gpu));
		double mem = t->bytes / c.hw.gpu.hbm_Bps;
		/* the executor profile's launch and fused-attention factor (execprofile.h) */
		const zb_exec_profile *ep = zb_exec_profile_of(&c.hw.gpu.exec, NULL);
		double lat = ep->launch_s > 0 ? ep->launch_s : c.hw.gpu.kernel_latency_s;
		lat *= zb_exec_launches(t, &c); /* the first the fixed cost, the others work (kernels.h) */
		double f = ep->gemm[ZB_GEMM_FLASH];
		assert_close(zb_task_alone_s(t, &c), lat + (want > mem ? want : mem) / f, 1e-9);
	}
	zb_graph_free(&g);

	/* eager keeps the original tasks; at the measured fused efficiency (0.170, the
	 * mma.sync kernels) flash predicts a faster GPU than eager, as the H200 measured
	 * (324 vs 362 ms a step); the older wmma kernels (0.050) were slower than eager */
	zb_config ce;
	config_of(&ce, "gpt-2.5b", ZB_ATTN_EAGER);
	memset(&g, 0, sizeof g);
	assert_int_equal(zb_graph_build(&g, &ce, &e), ZB_OK);
	count_ops(&g, n);
	assert_int_equal(n[ZB_OP_ATTN], 0);
	assert_int_equal(n[ZB_OP_SOFTMAX], 2 * ce.model.layers * ce.steps);
	zb_graph_free(&g);
	zb_prediction pf, pe;
	assert_int_equal(zb_predict(&pf, &c, &e), ZB_OK);
	assert_int_equal(zb_predict(&pe, &ce, &e), ZB_OK);
	assert_true(pf.res.step_time_s > 0 && pe.res.step_time_s > 0);
	assert_true(pf.res.busy_s[ZB_RES_GPU] < pe.res.busy_s[ZB_RES_GPU]);
	c.hw.gpu.flash_efficiency = 0.050;
	zb_prediction_free(&pf);
	assert_int_equal(zb_predict(&pf, &c, &e), ZB_OK);
	assert_true(pf.res.busy_s[ZB_RES_GPU] > pe.res.busy_s[ZB_RES_GPU]);
	zb_prediction_free(&pf);
	zb_prediction_free(&pe);
}

static void test_attention_names(void **state)
{
	(void)state;
	zb_attention a;
	zb_error e;
	assert_int_equal(zb_attention_parse("flash", &a, &e), ZB_OK);
	assert_int_equal(a, ZB_ATTN_FLASH);
	assert_int_equal(zb_attention_parse("eager", &a, &e), ZB_OK);
	assert_int_equal(a, ZB_ATTN_EAGER);
	assert_int_equal(zb_attention_parse("sdpa", &a, &e), ZB_E_INPUT);
	assert_contains(e.msg, "'sdpa'");
	zb_model m = { .hidden = 1000, .heads = 10, .kv_heads = 10 };
	assert_false(zb_attention_flash_ok(&m)); /* head dim 100 */
	m.hidden = 4096, m.heads = 32, m.kv_heads = 8;
	assert_true(zb_attention_flash_ok(&m)); /* 128, GQA */
	m.kv_heads = 5;
	assert_false(zb_attention_flash_ok(&m));
	assert_string_equal(zb_op_name(ZB_OP_ATTN), "attn");
}

/* ---- --link-rate ----------------------------------------------------------------- */

static void test_link_rate(void **state)
{
	(void)state;
	zb_config c;
	zb_error e;
	config_of(&c, "gpt2-large", ZB_ATTN_EAGER);
	c.policy.kind = ZB_POLICY_OVERLAP;
	c.policy.seq = 1024;
	zb_link native = c.hw.link;
	assert_int_equal(zb_link_rate_apply(&c, 12e9, &e), ZB_OK);
	assert_close(c.policy.link_rate_Bps, 12e9, 0);
	assert_close(c.hw.link.h2d_Bps, 12e9, 0);
	assert_close(c.hw.link.d2h_Bps, 12e9, 0);
	/* far below the native duplex rate: both directions at once keep the cap */
	if (native.h2d_Bps * native.duplex_h2d >= 12e9)
		assert_close(c.hw.link.duplex_h2d, 1.0, 0);
	/* a cap above the link changes nothing but the record */
	config_of(&c, "gpt2-large", ZB_ATTN_EAGER);
	assert_int_equal(zb_link_rate_apply(&c, 1e12, &e), ZB_OK);
	assert_close(c.hw.link.h2d_Bps, native.h2d_Bps, 0);
	assert_close(c.hw.link.duplex_d2h, native.duplex_d2h, 1e-12);
	/* a slower link predicts a copy-bound offload step no faster */
	zb_config slow, fast;
	config_of(&fast, "gpt2-large", ZB_ATTN_EAGER);
	fast.policy.kind = ZB_POLICY_OFFLOAD;
	fast.policy.seq = 1024;
	slow = fast;
	assert_int_equal(zb_link_rate_apply(&slow, 4e9, &e), ZB_OK);
	zb_prediction ps, pf;
	assert_int_equal(zb_predict(&ps, &slow, &e), ZB_OK);
	assert_int_equal(zb_predict(&pf, &fast, &e), ZB_OK);
	assert_true(ps.res.busy_s[ZB_RES_D2H] > pf.res.busy_s[ZB_RES_D2H]);
	assert_true(ps.res.step_time_s >= pf.res.step_time_s);
	zb_prediction_free(&ps);
	zb_prediction_free(&pf);
	/* refusals */
	assert_int_equal(zb_link_rate_apply(&c, 0, &e), ZB_E_INPUT);
	assert_contains(e.msg, "--link-rate 0");
	c.policy.pageable = 1;
	assert_int_equal(zb_link_rate_apply(&c, 10e9, &e), ZB_E_INPUT);
	assert_contains(e.msg, "--pageable");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pace_plan),
		cmocka_unit_test(test_flash_schedule),
		cmocka_unit_test(test_attention_names),
		cmocka_unit_test(test_link_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
